/* The graph writer (exporters/graph_json.h), the random graph generator
 * (engine/ir/random_graph.h) and `fuselab gen`.
 *
 * The writer round-trips: load(write(g)) has the same tensors (names,
 * shapes, roles, const values), the same ops (names, kinds, operands,
 * attributes) and the same interpreter outputs, bit for bit, for every
 * sample and for random graphs.  The generator is deterministic, its
 * graphs valid, small, finite under the interpreter, and together they
 * hold every kind of structure it promises. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph_json.h"
#include "interp.h"
#include "loader.h"
#include "random_graph.h"
#include "test_util.h"

static char *to_json(const fl_graph *g)
{
	fl_error err = {""};
	char *text = fl_graph_to_json(g, &err);

	if (!text)
		fail_msg("%s: %s", g->name, err.msg);
	return text;
}

static void assert_same_attrs(const fl_op *a, const fl_op *b)
{
	assert_int_equal(a->attrs.n, b->attrs.n);
	for (int i = 0; i < a->attrs.n; i++) {
		const fl_attr *x = &a->attrs.items[i];
		const fl_attr *y = fl_attrs_find(&b->attrs, x->key);

		if (!y)
			fail_msg("%s: attrs.%s lost", a->name, x->key);
		assert_int_equal(x->kind, y->kind);
		assert_true(x->num == y->num);
		if (x->kind == FL_ATTR_STRING)
			assert_string_equal(x->str, y->str);
		assert_int_equal(x->n, y->n);
		for (int k = 0; k < x->n; k++)
			assert_true(x->list[k] == y->list[k]);
	}
}

static void assert_same_tensor(const fl_tensor *a, const fl_tensor *b)
{
	assert_string_equal(a->name, b->name);
	if (!fl_shape_equal(&a->shape, &b->shape))
		fail_msg("tensor %s: shape changed", a->name);
	assert_int_equal(a->role, b->role);
	assert_int_equal(a->n_data, b->n_data);
	if (a->n_data)
		assert_memory_equal(a->data, b->data,
				    (size_t)a->n_data * sizeof(float));
}

static void assert_same_ops(const fl_graph *a, const fl_graph *b)
{
	assert_int_equal(a->n_ops, b->n_ops);
	for (int i = 0; i < a->n_ops; i++) {
		const fl_op *x = &a->ops[i], *y = &b->ops[i];

		assert_string_equal(x->name, y->name);
		assert_int_equal(x->kind, y->kind);
		assert_int_equal(x->n_in, y->n_in);
		assert_int_equal(x->n_out, y->n_out);
		for (int k = 0; k < x->n_in; k++)
			assert_string_equal(a->tensors[x->in[k]].name,
					    b->tensors[y->in[k]].name);
		for (int k = 0; k < x->n_out; k++)
			assert_string_equal(a->tensors[x->out[k]].name,
					    b->tensors[y->out[k]].name);
		assert_same_attrs(x, y);
	}
}

/* The interpreter's outputs of a and b agree bit for bit. */
static void assert_same_outputs(const fl_graph *a, const fl_graph *b)
{
	fl_interp_opts o;
	fl_error err = {""};
	fl_values *va, *vb;
	int *out, n;

	fl_interp_opts_default(&o);
	va = fl_interp_run(a, &o, &err);
	vb = va ? fl_interp_run(b, &o, &err) : NULL;
	if (!va || !vb)
		fail_msg("%s: interpreter: %s", a->name, err.msg);
	n = fl_graph_outputs(a, &out);
	assert_true(n >= 1);
	for (int i = 0; i < n; i++) {
		const fl_buf *x = &va->bufs[out[i]], *y = &vb->bufs[out[i]];

		assert_non_null(x->data);
		assert_non_null(y->data);
		if (memcmp(x->data, y->data, (size_t)fl_shape_numel(&x->shape) *
			   sizeof(float)))
			fail_msg("%s: output %s differs after the round trip",
				 a->name, a->tensors[out[i]].name);
	}
	free(out);
	fl_values_free(va);
	fl_values_free(vb);
}

/* Writes g, loads the text, compares; the interpreter too when
 * `interpret`.  Returns the text's length. */
static size_t round_trip(const fl_graph *g, bool interpret)
{
	char *text = to_json(g);
	size_t len = strlen(text);
	fl_error err = {""};
	fl_graph *back = fl_load_graph_string(text, len, g->name, &err);

	if (!back)
		fail_msg("%s: the written graph does not load: %s", g->name,
			 err.msg);
	assert_int_equal(g->n_tensors, back->n_tensors);
	for (int t = 0; t < g->n_tensors; t++)
		assert_same_tensor(&g->tensors[t], &back->tensors[t]);
	assert_same_ops(g, back);
	if (g->doc)
		assert_string_equal(g->doc, back->doc);
	if (interpret)
		assert_same_outputs(g, back);
	fl_graph_free(back);
	free(text);
	return len;
}

/* Samples the interpreter runs here: computable ones of at most `limit`
 * bytes (the largest are left to test_every_sample_verifies). */
static bool interpretable(const fl_graph *g, int64_t limit)
{
	fl_error err = {""};
	int64_t bytes = fl_interp_bytes_needed(g);

	return bytes >= 0 && bytes <= limit &&
	       fl_graph_check_computable(g, "interpret", &err) == 0;
}

static void test_graph_json_roundtrip_samples(void **state)
{
	char (*names)[64] = calloc(256, 64);
	int n = t_sample_names(names, 256), interpreted = 0;
	int64_t limit = (int64_t)(T_SANITIZED ? 4 : 10) << 20;

	(void)state;
	assert_true(n > 10);
	for (int i = 0; i < n; i++) {
		fl_graph *g = t_load_sample(names[i]);
		bool interp = interpretable(g, limit);

		round_trip(g, interp);
		interpreted += interp;
		fl_graph_free(g);
	}
	assert_true(interpreted >= (T_SANITIZED ? 1 : 5));
	free(names);
}

static void test_graph_json_roundtrip_random(void **state)
{
	int last = T_SANITIZED ? 4 : 24;

	(void)state;
	for (int seed = 1; seed <= last; seed++) {
		fl_graph *g = t_random_graph((uint64_t)seed, 30);

		round_trip(g, true);
		fl_graph_free(g);
	}
}

/* What the format cannot say is an error, not a file that does not
 * load: a const that is not a finite number. */
static void test_graph_json_refuses_nan(void **state)
{
	fl_graph *g = t_load_q("{'format':'fuselab-graph/1','tensors':{"
			       "'x':{'shape':[2],'role':'input'},"
			       "'c':{'shape':[2],'role':'const','data':[1,2]},"
			       "'y':{'shape':[2],'role':'output'}},'ops':["
			       "{'name':'a','op':'add','in':['x','c'],"
			       "'out':'y'}]}");
	fl_error err = {""};

	(void)state;
	g->tensors[fl_graph_find_tensor(g, "c")].data[1] = NAN;
	assert_null(fl_graph_to_json(g, &err));
	t_assert_contains(err.msg, "tensors.c: value 1 is not a finite number");
	fl_graph_free(g);
}

static void test_random_graph_deterministic(void **state)
{
	fl_graph *a = t_random_graph(7, 20), *b = t_random_graph(7, 20);
	fl_graph *c = t_random_graph(8, 20);
	char *ta = to_json(a), *tb = to_json(b), *tc = to_json(c);

	(void)state;
	assert_string_equal(ta, tb);
	assert_string_not_equal(ta, tc);
	free(ta);
	free(tb);
	free(tc);
	fl_graph_free(a);
	fl_graph_free(b);
	fl_graph_free(c);
}

static void test_random_graph_bad_opts(void **state)
{
	fl_random_graph_opts o = {.n_ops = 0, .seed = 1};
	fl_error err = {""};

	(void)state;
	assert_null(fl_random_graph(&o, &err));
	assert_string_equal(err.msg, "random graph: 0 ops: expected 1 to 1000");
	o.n_ops = FL_RANDOM_GRAPH_MAX_OPS + 1;
	assert_null(fl_random_graph(&o, &err));
	t_assert_contains(err.msg, "1001 ops");
}

/* Many seeds, small and large graphs: every one is made (a generator
 * that grows a tensor past the size limit is an error; seed 72 of 10 ops
 * once did, in gather). */
static void test_random_graph_many_seeds(void **state)
{
	static const struct {
		int n_ops, n_seeds;
	} sizes[] = {{10, 400}, {40, 100}, {200, 5}};

	(void)state;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		for (int seed = 1; seed <= sizes[i].n_seeds; seed++)
			fl_graph_free(t_random_graph((uint64_t)seed,
						   sizes[i].n_ops));
}

/* What the generated graphs hold, tallied over many seeds. */
typedef struct tally {
	int kinds[FL_OP_COUNT];
	int batched_matmul;	/* a matmul with a rank-3 result */
	int broadcasts;		/* binary ops, operands of two shapes */
	int shared;		/* graphs with a value read by 2+ ops */
	int multi_output;	/* graphs with 2+ outputs */
	bool extent_seen[18];
} tally;

static void tally_graph(const fl_graph *g, tally *t)
{
	bool shared = false;
	int *out, n_out = fl_graph_outputs(g, &out);

	free(out);
	t->multi_output += n_out >= 2;
	for (int i = 0; i < g->n_ops; i++) {
		const fl_op *op = &g->ops[i];
		const fl_shape *r = &g->tensors[op->out[0]].shape;

		t->kinds[op->kind]++;
		t->batched_matmul += op->kind == FL_OP_MATMUL && r->rank == 3;
		t->broadcasts += fl_op_info_of(op->kind)->cls ==
				 FL_CLASS_BINARY &&
				 !fl_shape_equal(&g->tensors[op->in[0]].shape,
						 &g->tensors[op->in[1]].shape);
	}
	for (int i = 0; i < g->n_tensors; i++) {
		const fl_shape *s = &g->tensors[i].shape;

		shared = shared || fl_graph_count_uses(g, i) >= 2;
		assert_true(fl_shape_numel(s) <= FL_RANDOM_GRAPH_MAX_NUMEL);
		for (int d = 0; d < s->rank; d++)
			if (s->dim[d] < 18)
				t->extent_seen[s->dim[d]] = true;
	}
	t->shared += shared;
}

/* Every output of g is finite under the interpreter: the generator's
 * taming works. */
static void assert_finite_outputs(const fl_graph *g)
{
	fl_interp_opts o;
	fl_error err = {""};
	fl_values *v;
	int *out, n;

	fl_interp_opts_default(&o);
	v = fl_interp_run(g, &o, &err);
	if (!v)
		fail_msg("%s: %s", g->name, err.msg);
	n = fl_graph_outputs(g, &out);
	for (int i = 0; i < n; i++) {
		fl_checksum c = fl_buf_checksum(&v->bufs[out[i]]);

		if (c.n_nan || !isfinite(c.abs_sum))
			fail_msg("%s: output %s is not finite", g->name,
				 g->tensors[out[i]].name);
	}
	free(out);
	fl_values_free(v);
}

static void test_random_graph_mix(void **state)
{
	static const fl_op_kind wanted[] = {
		FL_OP_ADD, FL_OP_MUL, FL_OP_WHERE, FL_OP_EXP, FL_OP_LOG,
		FL_OP_REDUCE_SUM, FL_OP_REDUCE_MAX, FL_OP_REDUCE_MIN,
		FL_OP_REDUCE_MEAN, FL_OP_MATMUL, FL_OP_CONV2D, FL_OP_POOL2D,
		FL_OP_TRANSPOSE, FL_OP_RESHAPE, FL_OP_CONCAT, FL_OP_SLICE,
		FL_OP_PAD, FL_OP_GATHER, FL_OP_BROADCAST_TO, FL_OP_SOFTMAX,
		FL_OP_LAYERNORM, FL_OP_GELU, FL_OP_DENSE, FL_OP_ATTENTION,
	};
	static const int odd[] = {1, 3, 5, 7, 13, 17};
	const int n_graphs = 40, n_ops = 30;
	tally t;

	(void)state;
	memset(&t, 0, sizeof t);
	for (int seed = 1; seed <= n_graphs; seed++) {
		fl_graph *g = t_random_graph((uint64_t)seed, n_ops);
		fl_graph_summary s;

		assert_true(g->n_ops >= n_ops && g->n_ops < n_ops + 8);
		fl_graph_summarize(g, &s);
		assert_true(s.total_bytes > 0 && s.total_bytes < 1 << 20);
		tally_graph(g, &t);
		if (seed <= (T_SANITIZED ? 3 : 20))
			assert_finite_outputs(g);
		fl_graph_free(g);
	}
	for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
		if (t.kinds[wanted[i]] == 0)
			fail_msg("no %s in %d random graphs",
				 fl_op_kind_name(wanted[i]), n_graphs);
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++)
		if (!t.extent_seen[odd[i]])
			fail_msg("no extent %d in %d random graphs", odd[i],
				 n_graphs);
	assert_true(t.batched_matmul > 0);
	assert_true(t.broadcasts > 0);
	assert_true(t.shared >= n_graphs / 2);
	assert_true(t.multi_output >= n_graphs / 2);
}

/* fuselab gen: the graph on standard output, the same in -o FILE, and
 * the usage errors (exit status 2, nothing written). */
static void test_gen_cli(void **state)
{
	fl_graph *g = t_random_graph(9, 6);
	char *want = to_json(g), *out = NULL, dir[512], args[1200], *file;

	(void)state;
	assert_int_equal(t_fuselab("gen --ops 6 --seed 9", &out), 0);
	assert_int_equal(strlen(out), strlen(want) + 1);
	assert_memory_equal(out, want, strlen(want));
	free(out);
	t_make_dir(dir, sizeof dir);
	snprintf(args, sizeof args, "gen --ops=6 --seed=9 -o %s/g.json", dir);
	assert_int_equal(t_fuselab(args, &out), 0);
	assert_string_equal(out, "");
	free(out);
	snprintf(args, sizeof args, "%s/g.json", dir);
	file = t_read_file(args, NULL);
	assert_memory_equal(file, want, strlen(want));
	free(file);
	/* one file: no temporary left behind */
	assert_int_equal(t_count_entries(dir), 1);
	snprintf(args, sizeof args, "gen -o %s/missing/g.json", dir);
	assert_int_equal(t_fuselab(args, &out), 2);
	t_assert_contains(out, "fuselab gen: ");
	t_assert_contains(out, "missing/g.json");
	free(out);
	assert_int_equal(t_count_entries(dir), 1);
	t_remove_dir(dir);
	free(want);
	fl_graph_free(g);
}

static void test_gen_cli_errors(void **state)
{
	static const struct {
		const char *args, *expect;
	} cases[] = {
		{"gen --ops 0", "fuselab gen: --ops: expected an integer from "
				"1 to 1000, got \"0\""},
		{"gen --ops 12x", "--ops: expected an integer"},
		{"gen --ops", "--ops needs a value"},
		{"gen --seed -4", "--seed: expected a non-negative integer"},
		{"gen --seed 99999999999999999999999", "below 2^64"},
		{"gen --bogus", "unknown option or argument \"--bogus\""},
		{"gen extra.json", "unknown option or argument \"extra.json\""},
	};
	char *out = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		assert_int_equal(t_fuselab(cases[i].args, &out), 2);
		t_assert_contains(out, cases[i].expect);
		free(out);
	}
	assert_int_equal(t_fuselab("gen --help", &out), 0);
	t_assert_contains(out, "usage: fuselab gen [--ops N] [--seed S]");
	free(out);
}

FL_SUITE(graph_json,
	 cmocka_unit_test(test_graph_json_roundtrip_samples),
	 cmocka_unit_test(test_graph_json_roundtrip_random),
	 cmocka_unit_test(test_graph_json_refuses_nan),
	 cmocka_unit_test(test_random_graph_deterministic),
	 cmocka_unit_test(test_random_graph_bad_opts),
	 cmocka_unit_test(test_random_graph_many_seeds),
	 cmocka_unit_test(test_random_graph_mix),
	 cmocka_unit_test(test_gen_cli),
	 cmocka_unit_test(test_gen_cli_errors));
