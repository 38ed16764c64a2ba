/* Snapshots share the graph's constants (ir/tensor_values.c): an engine
 * session once copied every constant at every pass boundary, so ViT-B/16
 * (330 MB of weights) held one copy per snapshot.  These tests fail if a
 * copy of a graph, a snapshot or a replay from one copies constants
 * again: the values' pointers must be the same everywhere, and the bytes
 * the snapshots own must stay below one constant's size.
 * A 256x256 matmul through codegen: quick. */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#include "engine.h"
#include "graph.h"

#define N 256			/* the constants are N x N floats */
#define BIG_BYTES ((int64_t)N * N * (int64_t)sizeof(float))

/* y = relu(x @ (w + b)): w and b are N x N constants, and w + b is
 * folded by the preprocess pass into a third one (a constant a pass
 * makes, shared from the next snapshot on). */
#define TEXT                                                                 \
	"{'format':'fuselab-graph/1','name':'share','tensors':{"              \
	"'x':{'shape':[32,256],'role':'input'},"                              \
	"'w':{'shape':[256,256],'role':'const','value':0.5},"                 \
	"'b':{'shape':[256,256],'role':'const','value':0.25},"                \
	"'y':{'shape':[32,256],'role':'output'}},'ops':["                     \
	"{'name':'wb','op':'add','in':['w','b'],'out':'sum'},"                \
	"{'name':'mm','op':'matmul','in':['x','sum'],'out':'m'},"             \
	"{'name':'act','op':'relu','in':['m'],'out':'y'}]}"

/* Gives const tensor `name` of g N x N distinct values of its own. */
static void fill_const(fl_graph *g, const char *name, float scale)
{
	fl_tensor *t = &g->tensors[fl_graph_find_tensor(g, name)];
	float *v = malloc((size_t)N * N * sizeof *v);

	assert_non_null(v);
	for (int i = 0; i < N * N; i++)
		v[i] = scale * (float)(i % 97);
	fl_tensor_drop_values(t);
	t->data = v;
	t->n_data = (int64_t)N * N;
}

static fl_graph *big_const_graph(void)
{
	fl_graph *g = t_load_q(TEXT);

	fill_const(g, "w", 0.01f);
	fill_const(g, "b", -0.02f);
	return g;
}

static const float *values_of(const fl_graph *g, const char *name)
{
	int t = fl_graph_find_tensor(g, name);

	assert_true(t >= 0);
	return g->tensors[t].data;
}

/* A copy of a graph whose values are shared points at the same values,
 * which outlive the original; a copy of an unshared graph copies. */
static void test_snapshot_share_graph_copy(void **state)
{
	fl_graph *g = big_const_graph(), *deep, *c;
	fl_error err = {""};
	float first;

	(void)state;
	deep = fl_graph_copy(g);
	assert_non_null(deep);
	assert_ptr_not_equal(values_of(deep, "w"), values_of(g, "w"));
	assert_int_equal(fl_graph_owned_value_bytes(deep), 2 * BIG_BYTES);
	assert_int_equal(fl_graph_share_values(g, &err), 0);
	assert_int_equal(fl_graph_owned_value_bytes(g), 0);
	c = fl_graph_copy(g);
	assert_non_null(c);
	assert_ptr_equal(values_of(c, "w"), values_of(g, "w"));
	assert_ptr_equal(values_of(c, "b"), values_of(g, "b"));
	first = values_of(g, "w")[1];
	fl_graph_free(g);	/* c keeps the values alive */
	assert_true(values_of(c, "w")[1] == first);
	/* replacing shared values leaves the other holders' alone */
	fill_const(deep, "w", 2.0f);
	fl_graph_free(deep);
	fl_graph_free(c);
}

/* A session over the graph, through codegen and back: the snapshots own
 * none of the big constants, and every state the session replays (from
 * a snapshot) reads the very values the first one did. */
static void test_snapshot_share_session(void **state)
{
	fl_graph *g = big_const_graph();
	fl_engine_opts o;
	fl_engine_stats es;
	fl_error err = {""};
	fl_session *s;
	const float *w, *sum = NULL;
	int total;

	(void)state;
	fl_engine_opts_default(&o);
	o.stop_after = FL_PASS_CODEGEN;
	s = fl_engine_open(g, &o, &err);
	if (!s)
		fail_msg("open: %s", err.msg);
	w = values_of(fl_engine_graph(s), "w");
	total = fl_engine_run(s, &err);
	if (total < 0)
		fail_msg("run: %s", err.msg);
	fl_engine_get_stats(s, &es);
	assert_true(es.snapshots >= 5);
	assert_true(es.snapshot_value_bytes < BIG_BYTES / 4);
	assert_ptr_equal(values_of(fl_engine_graph(s), "w"), w);
	sum = values_of(fl_engine_graph(s), "sum");	/* folded */
	assert_non_null(sum);
	for (int k = total; k >= 0; k -= total / 7 + 1) {
		const fl_graph *at;

		assert_int_equal(fl_engine_goto(s, k, &err), k);
		at = fl_engine_graph(s);
		assert_ptr_equal(values_of(at, "w"), w);
		assert_true(fl_tensor_values_shared(
			&at->tensors[fl_graph_find_tensor(at, "w")]));
		if (values_of(at, "sum"))
			assert_ptr_equal(values_of(at, "sum"), sum);
	}
	assert_int_equal(fl_engine_run(s, &err), total);
	fl_engine_get_stats(s, &es);
	assert_true(es.snapshot_value_bytes < BIG_BYTES / 4);
	fl_engine_close(s);
	fl_graph_free(g);	/* the session's values were its own copies */
}

FL_SUITE(snapshot_share,
	 cmocka_unit_test(test_snapshot_share_graph_copy),
	 cmocka_unit_test(test_snapshot_share_session));
