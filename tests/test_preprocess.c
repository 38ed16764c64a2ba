/* The preprocess pass: each rewrite (simplify, CSE, fold, DCE) happens where
 * it should, is refused where it would be wrong, keeps the graph valid and
 * its outputs equal, and stepping decision by decision gives the same log
 * as running straight through.  Graphs are written with ' for " and hold
 * primitive ops only (later passes open compound ops). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "interp.h"
#include "passes_impl.h"
#include "test_util.h"

/* ---- helpers -------------------------------------------------------- */

#define GRAPH(tensors, ops)                                                  \
	"{'format':'fuselab-graph/1','name':'t','tensors':{" tensors          \
	"},'ops':[" ops "]}"
#define OP1(name, kind, a, out)                                              \
	"{'name':'" name "','op':'" kind "','in':['" a "'],'out':'" out "'}"
#define OP2(name, kind, a, b, out)                                           \
	"{'name':'" name "','op':'" kind "','in':['" a "','" b "'],'out':'"   \
	out "'}"
#define OPA(name, kind, a, out, attrs)                                       \
	"{'name':'" name "','op':'" kind "','in':['" a "'],'out':'" out       \
	"','attrs':{" attrs "}}"

static fl_session *run(const fl_graph *g, bool preprocess)
{
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *s;

	fl_engine_opts_default(&o);
	o.preprocess = preprocess;
	s = fl_engine_open(g, &o, &err);
	if (!s)
		fail_msg("open: %s", err.msg);
	if (fl_engine_run(s, &err) < 0)
		fail_msg("run: %s", err.msg);
	return s;
}

/* The i-th preprocess event of kind k (k < 0: any kind), or NULL. */
static const fl_event *pre_event(const fl_session *s, int k, int i)
{
	const fl_event_log *log = fl_engine_events(s);

	for (int e = 0; e < fl_event_log_count(log); e++) {
		const fl_event *ev = fl_event_log_get(log, e);

		if (ev->pass == FL_PASS_PREPROCESS &&
		    (k < 0 || ev->kind == (fl_event_kind)k) && i-- == 0)
			return ev;
	}
	return NULL;
}

static int pre_count(const fl_session *s, int k)
{
	int n = 0;

	while (pre_event(s, k, n))
		n++;
	return n;
}

/* Asserts event e names exactly ops a (and b when not NULL). */
static void assert_names(const fl_event *e, const char *a, const char *b)
{
	assert_non_null(e);
	assert_int_equal(e->n_ops, b ? 2 : 1);
	assert_string_equal(e->ops[0], a);
	if (b)
		assert_string_equal(e->ops[1], b);
}

static bool has_op(const fl_session *s, const char *name)
{
	return fl_graph_find_op(fl_engine_graph(s), name) >= 0;
}

/* Tensor name read by input k of op `name` in the rewritten graph. */
static const char *input_of(const fl_session *s, const char *name, int k)
{
	const fl_graph *g = fl_engine_graph(s);
	int i = fl_graph_find_op(g, name);

	assert_true(i >= 0);
	assert_true(k < g->ops[i].n_in);
	return g->tensors[g->ops[i].in[k]].name;
}

/* g is a valid graph: links, order and shapes survive re-validation. */
static void assert_valid(const fl_graph *g)
{
	fl_graph *c = fl_graph_copy(g);
	fl_error err = {""};

	assert_non_null(c);
	for (int i = 0; i < g->n_ops; i++)
		for (int k = 0; k < g->ops[i].n_out; k++)
			assert_int_equal(g->tensors[g->ops[i].out[k]].producer, i);
	for (int i = 0; i < g->n_ops; i++)
		for (int k = 0; k < g->ops[i].n_in; k++)
			assert_true(g->tensors[g->ops[i].in[k]].producer < i);
	if (fl_graph_validate(c, &err) < 0)
		fail_msg("rewritten graph is not valid: %s", err.msg);
	fl_graph_free(c);
}

/* Both graphs compute the same outputs (matched by tensor name). */
static void assert_same_outputs(const fl_graph *a, const fl_graph *b)
{
	fl_values *va = fl_interp_run(a, NULL, NULL);
	fl_values *vb = fl_interp_run(b, NULL, NULL);
	int *out, n = fl_graph_outputs(a, &out);

	assert_non_null(va);
	assert_non_null(vb);
	assert_true(n > 0);
	for (int k = 0; k < n; k++) {
		const fl_tensor *t = &a->tensors[out[k]];
		int tb = fl_graph_find_tensor(b, t->name);

		assert_true(tb >= 0);
		assert_non_null(vb->bufs[tb].data);
		t_assert_close(vb->bufs[tb].data, va->bufs[out[k]].data,
			       fl_shape_numel(&t->shape), 1e-6, 1e-5);
	}
	free(out);
	fl_values_free(va);
	fl_values_free(vb);
}

/* Runs g, checks the result is valid and computes what g does. */
static fl_session *run_checked(const fl_graph *g)
{
	fl_session *s = run(g, true);

	assert_valid(fl_engine_graph(s));
	assert_same_outputs(g, fl_engine_graph(s));
	return s;
}

/* ---- algebraic simplification --------------------------------------- */

#define SIMP_TENSORS                                                         \
	"'x':{'shape':[2,3],'role':'input'},"                                \
	"'one':{'shape':[],'role':'const','value':1},"                       \
	"'zero':{'shape':[],'role':'const','value':0},"                      \
	"'two':{'shape':[],'role':'const','value':2},"                       \
	"'ones':{'shape':[3],'role':'const','data':[1,1,1]},"                \
	"'mixed':{'shape':[3],'role':'const','data':[1,1,2]},"               \
	"'big':{'shape':[4,2,3],'role':'const','value':1},"                  \
	"'y':{'shape':%s,'role':'output'}"

/* relu(x) -> h, then s = <op>(a, b), then y = exp(s) (or y = s). */
static fl_graph *simp_graph(const char *op, const char *a, const char *b,
			    bool s_is_output)
{
	char text[2048];

	bool big = strcmp(a, "big") == 0 || strcmp(b, "big") == 0;

	snprintf(text, sizeof text,
		 GRAPH(SIMP_TENSORS, OP1("r", "relu", "x", "h") ","
		       "{'name':'s','op':'%s','in':['%s','%s'],'out':'%s'}%s"),
		 big ? "[4,2,3]" : "[2,3]", op, a, b, s_is_output ? "y" : "s",
		 s_is_output ? "" : "," OP1("e", "exp", "s", "y"));
	return t_load_q(text);
}

static void test_pre_simplify_identities(void **state)
{
	static const struct {
		const char *op, *a, *b, *rule;
	} cases[] = {
		{"mul", "h", "one", "x*1 = x"},
		{"mul", "one", "h", "1*x = x"},
		{"mul", "h", "ones", "x*1 = x"},	/* broadcasts, same shape */
		{"add", "h", "zero", "x+0 = x"},
		{"add", "zero", "h", "0+x = x"},
		{"sub", "h", "zero", "x-0 = x"},
		{"div", "h", "one", "x/1 = x"},
		{"pow", "h", "one", "pow(x,1) = x"},
	};

	(void)state;
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		fl_graph *g = simp_graph(cases[c].op, cases[c].a, cases[c].b,
					 false);
		fl_session *s = run_checked(g);
		const fl_event *e = pre_event(s, FL_EV_SIMPLIFIED, 0);
		const fl_graph *r = fl_engine_graph(s);

		assert_names(e, "s", NULL);
		if (!strstr(e->reason, cases[c].rule) ||
		    !strstr(e->reason, "read h"))
			fail_msg("case %zu: reason \"%s\"", c, e->reason);
		assert_int_equal(pre_count(s, -1), 1);
		assert_false(has_op(s, "s"));
		assert_string_equal(input_of(s, "e", 0), "h");
		assert_string_equal(
			r->ops[fl_graph_find_op(r, "e")].prov.rewrite,
			"simplify");
		fl_engine_close(s);
		fl_graph_free(g);
	}
}

static void test_pre_simplify_refused(void **state)
{
	static const struct {
		const char *op, *a, *b;
	} cases[] = {
		{"mul", "h", "two"},	/* not the identity */
		{"mul", "h", "mixed"},	/* not all ones */
		{"mul", "h", "big"},	/* broadcasting enlarges x */
		{"add", "h", "one"},
		{"sub", "zero", "h"},	/* 0-x is -x */
		{"div", "one", "h"},	/* 1/x */
		{"pow", "one", "h"},	/* 1^x */
		{"mul", "h", "x"},	/* x is no const */
	};

	(void)state;
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		fl_graph *g = simp_graph(cases[c].op, cases[c].a, cases[c].b,
					 false);
		fl_session *s = run_checked(g);

		if (pre_count(s, -1) != 0)
			fail_msg("case %zu: %s", c, pre_event(s, -1, 0)->reason);
		assert_true(has_op(s, "s"));
		fl_engine_close(s);
		fl_graph_free(g);
	}
}

/* y = h*1 with y a graph output: the op must keep writing y. */
static void test_pre_simplify_keeps_output_writer(void **state)
{
	fl_graph *g = simp_graph("mul", "h", "one", true);
	fl_session *s = run_checked(g);

	(void)state;
	assert_int_equal(pre_count(s, -1), 0);
	assert_true(has_op(s, "s"));
	fl_engine_close(s);
	fl_graph_free(g);
}

#define PERM_TENSORS                                                         \
	"'x':{'shape':[2,3,4],'role':'input'},"                              \
	"'y':{'shape':[2,3,4],'role':'output'},"                             \
	"'z':{'shape':[4,3,2],'role':'output'}"

/* neg(neg(x)) and two transposes that cancel: both pairs go, the inner
 * ops then die; a third transpose pair that does not cancel stays. */
static void test_pre_simplify_pairs(void **state)
{
	fl_graph *g = t_load_q(GRAPH(PERM_TENSORS,
		OP1("n1", "neg", "x", "a") "," OP1("n2", "neg", "a", "b") ","
		OPA("t1", "transpose", "b", "c", "'perm':[1,2,0]") ","
		OPA("t2", "transpose", "c", "d", "'perm':[2,0,1]") ","
		OPA("t0", "transpose", "d", "e", "'perm':[0,1,2]") ","
		OP1("ex", "exp", "e", "y") ","
		OPA("u1", "transpose", "x", "f", "'perm':[2,0,1]") ","
		OPA("u2", "transpose", "f", "k", "'perm':[0,2,1]") ","
		OP1("th", "tanh", "k", "z")));
	fl_session *s = run_checked(g);

	(void)state;
	assert_names(pre_event(s, FL_EV_SIMPLIFIED, 0), "n2", "n1");
	assert_names(pre_event(s, FL_EV_SIMPLIFIED, 1), "t2", "t1");
	assert_names(pre_event(s, FL_EV_SIMPLIFIED, 2), "t0", NULL);
	assert_non_null(strstr(pre_event(s, FL_EV_SIMPLIFIED, 0)->reason,
			       "neg(neg(x)) = x"));
	assert_non_null(strstr(pre_event(s, FL_EV_SIMPLIFIED, 1)->reason,
			       "cancel"));
	assert_int_equal(pre_count(s, FL_EV_SIMPLIFIED), 3);
	/* reverse order: t1 first, then n1 */
	assert_names(pre_event(s, FL_EV_ELIMINATED, 0), "t1", NULL);
	assert_names(pre_event(s, FL_EV_ELIMINATED, 1), "n1", NULL);
	assert_int_equal(pre_count(s, -1), 5);
	assert_string_equal(input_of(s, "ex", 0), "x");
	assert_true(has_op(s, "u1") && has_op(s, "u2"));
	assert_int_equal(fl_engine_graph(s)->n_ops, 4);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* ---- common-subexpression elimination ------------------------------- */

#define XW "'x':{'shape':[2,3],'role':'input'},"                           \
	   "'w':{'shape':[2,3],'role':'param'}"
#define S23 "[2,3]"
#define OUT(name, shape) ",'" name "':{'shape':" shape ",'role':'output'}"

static void test_pre_cse(void **state)
{
	fl_graph *g = t_load_q(GRAPH(XW OUT("y1", S23) OUT("y2", S23)
				   OUT("y3", S23) OUT("y4", S23),
		OP1("a1", "exp", "x", "a") "," OP1("a2", "exp", "x", "b") ","
		OP2("ya", "add", "a", "b", "y1") ","
		OP2("p1", "add", "x", "w", "p") ","
		OP2("p2", "add", "w", "x", "q") ","	/* swapped: same */
		OP2("yp", "mul", "p", "q", "y2") ","
		OP2("s1", "sub", "x", "w", "s") ","
		OP2("s2", "sub", "w", "x", "t") ","	/* not commutative */
		OP2("ys", "mul", "s", "t", "y3") ","
		OPA("r1", "reduce_sum", "x", "r", "'axes':[1]") ","
		OPA("r2", "reduce_sum", "x", "rr", "'axes':[1]") ","
		OPA("r3", "reduce_sum", "x", "rc", "'axes':[0]") ","
		OP2("m1", "mul", "r", "rr", "m") ","
		OP2("yr", "add", "m", "rc", "y4")));
	fl_session *s = run_checked(g);
	const fl_graph *r = fl_engine_graph(s);

	(void)state;
	assert_names(pre_event(s, FL_EV_CSE, 0), "a2", "a1");
	assert_names(pre_event(s, FL_EV_CSE, 1), "p2", "p1");
	assert_names(pre_event(s, FL_EV_CSE, 2), "r2", "r1");
	assert_non_null(strstr(pre_event(s, FL_EV_CSE, 0)->reason, "read a"));
	assert_int_equal(pre_count(s, -1), 3);
	assert_false(has_op(s, "a2") || has_op(s, "p2") || has_op(s, "r2"));
	assert_true(has_op(s, "s2") && has_op(s, "r3"));
	assert_string_equal(input_of(s, "ya", 1), "a");
	assert_string_equal(input_of(s, "yp", 1), "p");
	assert_string_equal(input_of(s, "m1", 1), "r");
	assert_string_equal(r->ops[fl_graph_find_op(r, "ya")].prov.rewrite,
			    "cse");
	fl_engine_close(s);
	fl_graph_free(g);
}

/* Duplicates whose readers become duplicates: the chain collapses in one
 * sweep, in op order. */
static void test_pre_cse_cascade(void **state)
{
	fl_graph *g = t_load_q(GRAPH(XW OUT("y1", S23),
		OP1("a1", "exp", "x", "a") "," OP1("a2", "exp", "x", "b") ","
		OP1("b1", "tanh", "a", "c") "," OP1("b2", "tanh", "b", "d") ","
		OP2("c1", "max", "c", "w", "e") ","
		OP2("c2", "max", "w", "d", "f") ","
		OP2("y", "add", "e", "f", "y1")));
	fl_session *s = run_checked(g);

	(void)state;
	assert_names(pre_event(s, FL_EV_CSE, 0), "a2", "a1");
	assert_names(pre_event(s, FL_EV_CSE, 1), "b2", "b1");
	assert_names(pre_event(s, FL_EV_CSE, 2), "c2", "c1");
	assert_int_equal(pre_count(s, -1), 3);
	assert_string_equal(input_of(s, "y", 0), "e");
	assert_string_equal(input_of(s, "y", 1), "e");
	assert_int_equal(fl_engine_graph(s)->n_ops, 4);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* Ops writing graph outputs are never removed; a later duplicate that
 * writes a temporary reads the output instead. */
static void test_pre_cse_keeps_output_writers(void **state)
{
	fl_graph *g = t_load_q(GRAPH(XW OUT("y1", S23) OUT("y2", S23) OUT("y3", S23),
		OP1("o1", "relu", "x", "y1") "," OP1("o2", "relu", "x", "y2") ","
		OP1("t", "relu", "x", "h") "," OP1("e", "exp", "h", "y3")));
	fl_session *s = run_checked(g);

	(void)state;
	assert_names(pre_event(s, FL_EV_CSE, 0), "t", "o1");
	assert_int_equal(pre_count(s, -1), 1);
	assert_true(has_op(s, "o1") && has_op(s, "o2"));
	assert_string_equal(input_of(s, "e", 0), "y1");
	fl_engine_close(s);
	fl_graph_free(g);
}

/* Compound ops are compared like any other (before partition opens them);
 * one reading only consts is folded by its reference implementation. */
static void test_pre_cse_and_fold_compound(void **state)
{
	fl_graph *g = t_load_q(GRAPH(XW OUT("y1", S23) OUT("y2", S23)
			",'c':{'shape':[2,3],'role':'const','data':[1,2,3,4,5,6]}",
		OPA("s1", "softmax", "x", "a", "'axis':-1") ","
		OPA("s2", "softmax", "x", "b", "'axis':-1") ","
		OPA("s3", "softmax", "x", "c0", "'axis':0") ","
		OP2("p", "add", "a", "b", "h") ","
		OP2("q", "add", "h", "c0", "y1") ","
		OP1("sc", "softmax", "c", "k") ","
		OP2("r", "mul", "x", "k", "y2")));
	fl_session *s = run_checked(g);

	(void)state;
	assert_names(pre_event(s, FL_EV_CSE, 0), "s2", "s1");
	assert_names(pre_event(s, FL_EV_FOLDED, 0), "sc", NULL);
	assert_int_equal(pre_count(s, -1), 2);
	assert_string_equal(input_of(s, "p", 1), "a");
	fl_engine_close(s);
	fl_graph_free(g);
}

/* ---- constant folding ----------------------------------------------- */

#define FOLD_TENSORS                                                         \
	"'x':{'shape':[2,3],'role':'input'},"                                \
	"'xb':{'shape':[300,300],'role':'input'},"                           \
	"'c':{'shape':[2,3],'role':'const','data':[[1,2,3],[4,5,6]]},"       \
	"'two':{'shape':[],'role':'const','value':2},"                       \
	"'one':{'shape':[],'role':'const','value':1}"

static void test_pre_fold(void **state)
{
	fl_graph *g = t_load_q(GRAPH(FOLD_TENSORS OUT("y", S23),
		OP2("m", "mul", "c", "two", "f") ","	/* splat expanded */
		OP1("ex", "exp", "f", "k") ","		/* chain */
		OP2("a", "add", "x", "k", "y")));
	fl_session *s = run_checked(g);
	const fl_graph *r = fl_engine_graph(s);
	const fl_tensor *k = &r->tensors[fl_graph_find_tensor(r, "k")];

	(void)state;
	assert_names(pre_event(s, FL_EV_FOLDED, 0), "m", NULL);
	assert_names(pre_event(s, FL_EV_FOLDED, 1), "ex", NULL);
	assert_non_null(strstr(pre_event(s, FL_EV_FOLDED, 1)->reason,
			       "k [2,3] is a constant"));
	assert_int_equal(pre_count(s, -1), 2);
	assert_false(has_op(s, "m") || has_op(s, "ex"));
	assert_int_equal(k->role, FL_ROLE_CONST);
	assert_int_equal(k->producer, -1);
	assert_int_equal(k->n_data, 6);
	for (int i = 0; i < 6; i++)
		assert_true(fabsf(k->data[i] - expf(2.0f * (float)(i + 1))) <=
			    1e-5f * k->data[i]);
	assert_int_equal(r->n_ops, 1);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* Too large an output, an op writing a graph output, a custom op and an
 * op reading a non-const: none is folded. */
static void test_pre_fold_refused(void **state)
{
	fl_graph *g = t_load_q(GRAPH(FOLD_TENSORS OUT("y", "[300,300]")
				   OUT("y2", S23) OUT("y3", S23) OUT("y4", S23),
		OPA("b", "broadcast_to", "two", "bt", "'shape':[300,300]") ","
		OP2("ab", "add", "xb", "bt", "y") ","
		OP2("o", "mul", "c", "two", "y2") ","
		OPA("cu", "custom", "c", "cc", "'fn':'cumsum'") ","
		OP2("ac", "add", "x", "cc", "y3") ","
		OP2("nx", "mul", "x", "two", "y4")));
	fl_session *s = run_checked(g);

	(void)state;
	if (pre_count(s, -1) != 0)
		fail_msg("unexpected: %s", pre_event(s, -1, 0)->reason);
	assert_true(has_op(s, "b") && has_op(s, "o") && has_op(s, "cu"));
	fl_engine_close(s);
	fl_graph_free(g);
}

/* A folded constant that turns out to be 1 enables x*1 = x. */
static void test_pre_fold_then_simplify(void **state)
{
	fl_graph *g = t_load_q(GRAPH(FOLD_TENSORS OUT("y", S23),
		OP2("d", "sub", "two", "one", "u") ","
		OP2("m", "mul", "x", "u", "h") ","
		OP1("e", "exp", "h", "y")));
	fl_session *s = run_checked(g);

	(void)state;
	assert_names(pre_event(s, -1, 0), "d", NULL);
	assert_int_equal(pre_event(s, -1, 0)->kind, FL_EV_FOLDED);
	assert_names(pre_event(s, -1, 1), "m", NULL);
	assert_int_equal(pre_event(s, -1, 1)->kind, FL_EV_SIMPLIFIED);
	assert_int_equal(pre_count(s, -1), 2);
	assert_string_equal(input_of(s, "e", 0), "x");
	fl_engine_close(s);
	fl_graph_free(g);
}

/* ---- dead-code elimination ------------------------------------------ */

static void test_pre_dce(void **state)
{
	fl_graph *g = t_load_q(GRAPH(XW OUT("y1", S23) OUT("y2", S23),
		OP1("d1", "exp", "x", "a") "," OP1("d2", "relu", "a", "b") ","
		OP2("d3", "add", "b", "w", "c") ","
		OP1("k", "tanh", "x", "y1") ","
		OP1("k2", "tanh", "y1", "y2")));
	fl_session *s = run_checked(g);

	(void)state;
	assert_names(pre_event(s, FL_EV_ELIMINATED, 0), "d3", NULL);
	assert_names(pre_event(s, FL_EV_ELIMINATED, 1), "d2", NULL);
	assert_names(pre_event(s, FL_EV_ELIMINATED, 2), "d1", NULL);
	assert_non_null(strstr(pre_event(s, FL_EV_ELIMINATED, 0)->reason,
			       "nothing reads c"));
	assert_int_equal(pre_count(s, -1), 3);
	assert_true(has_op(s, "k") && has_op(s, "k2"));
	assert_int_equal(fl_engine_graph(s)->n_ops, 2);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* With preprocess off the pass makes no decision. */
static void test_pre_off(void **state)
{
	fl_graph *g = simp_graph("mul", "h", "one", false);
	fl_session *s = run(g, false);

	(void)state;
	assert_int_equal(pre_count(s, -1), 0);
	assert_true(has_op(s, "s"));
	fl_engine_close(s);
	fl_graph_free(g);
}

/* ---- stepping ------------------------------------------------------- */

/* Every rewrite kind, several times. */
#define MIX GRAPH(FOLD_TENSORS OUT("y", S23) OUT("y2", S23),              \
	OP2("d", "sub", "two", "one", "u") ","                               \
	OP2("m", "mul", "x", "u", "h") ","                                   \
	OP1("e1", "exp", "h", "a") "," OP1("e2", "exp", "x", "b") ","        \
	OP1("n1", "neg", "a", "na") "," OP1("n2", "neg", "na", "nb") ","     \
	OP2("p", "add", "nb", "b", "y") ","                                  \
	OP1("dead1", "tanh", "b", "t1") "," OP1("dead2", "relu", "t1", "t2") \
	"," OP2("cm", "mul", "c", "c", "cc") ","                              \
	OP2("q", "add", "x", "cc", "y2"))

static void test_pre_step_equals_run(void **state)
{
	fl_graph *g = t_load_q(MIX);
	fl_session *a = run_checked(g), *b;
	fl_engine_opts o;
	fl_error err = {""};
	int n = 0, total;

	(void)state;
	assert_int_equal(pre_count(a, FL_EV_FOLDED), 2);
	assert_int_equal(pre_count(a, FL_EV_SIMPLIFIED), 2);
	assert_int_equal(pre_count(a, FL_EV_CSE), 1);
	assert_int_equal(pre_count(a, FL_EV_ELIMINATED), 3);
	fl_engine_opts_default(&o);
	b = fl_engine_open(g, &o, &err);
	assert_non_null(b);
	while (!fl_engine_done(b)) {
		int k = fl_engine_step(b, &err);

		if (k < 0)
			fail_msg("step: %s", err.msg);
		assert_int_equal(k, ++n);
		/* paused mid-pass, the graph is still valid and equivalent */
		if (fl_engine_current_pass(b) == FL_PASS_PREPROCESS) {
			assert_valid(fl_engine_graph(b));
			assert_same_outputs(g, fl_engine_graph(b));
		}
	}
	total = fl_event_log_count(fl_engine_events(a));
	assert_int_equal(n, total);
	assert_true(fl_event_log_equal(fl_engine_events(a),
				       fl_engine_events(b)));
	fl_engine_close(a);
	fl_engine_close(b);
	fl_graph_free(g);
}

/* ---- scale ---------------------------------------------------------- */

static void put_tensor(fl_graph *g, int t, fl_role role)
{
	char name[32];
	int64_t dim = 4;

	snprintf(name, sizeof name, "t%d", t);
	g->tensors[t].name = strdup(name);
	assert_non_null(g->tensors[t].name);
	g->tensors[t].shape = fl_shape_make(1, &dim);
	g->tensors[t].shape_known = true;
	g->tensors[t].role = role;
	g->tensors[t].producer = -1;
}

static void put_op(fl_graph *g, int i, fl_op_kind kind, int a, int b, int out)
{
	char name[32];
	fl_op *op = &g->ops[i];

	snprintf(name, sizeof name, "op%d", i);
	op->name = strdup(name);
	op->prov.origin = strdup(name);
	op->kind = kind;
	op->n_in = b >= 0 ? 2 : 1;
	op->in = malloc(2 * sizeof *op->in);
	op->n_out = 1;
	op->out = malloc(sizeof *op->out);
	assert_true(op->name && op->prov.origin && op->in && op->out);
	op->in[0] = a;
	op->in[1] = b;
	op->out[0] = out;
}

/* n blocks of: a = tanh(prev), b = tanh(prev) (a duplicate), c = a + b,
 * prev = c * one (an identity) - 4n ops, 2n - 1 rewrites (the last mul
 * writes the output).  Built by hand, as
 * the name lookups of fl_graph_add_op are linear. */
static fl_graph *big_graph(int n)
{
	fl_graph *g = fl_graph_new("big");
	int nt = 2 + 4 * n, no = 4 * n, prev = 0, t = 2;
	fl_error err = {""};

	assert_non_null(g);
	g->tensors = calloc((size_t)nt, sizeof *g->tensors);
	g->ops = calloc((size_t)no, sizeof *g->ops);
	assert_true(g->tensors && g->ops);
	g->n_tensors = g->cap_tensors = nt;
	g->n_ops = g->cap_ops = no;
	put_tensor(g, 0, FL_ROLE_INPUT);
	put_tensor(g, 1, FL_ROLE_CONST);
	g->tensors[1].shape = fl_shape_scalar();
	g->tensors[1].data = malloc(sizeof(float));
	assert_non_null(g->tensors[1].data);
	g->tensors[1].data[0] = 1.0f;
	g->tensors[1].n_data = 1;
	for (int k = 0; k < n; k++, t += 4) {
		for (int j = 0; j < 4; j++)
			put_tensor(g, t + j, k == n - 1 && j == 3
						     ? FL_ROLE_OUTPUT
						     : FL_ROLE_TEMP);
		put_op(g, 4 * k, FL_OP_TANH, prev, -1, t);
		put_op(g, 4 * k + 1, FL_OP_TANH, prev, -1, t + 1);
		put_op(g, 4 * k + 2, FL_OP_ADD, t, t + 1, t + 2);
		put_op(g, 4 * k + 3, FL_OP_MUL, t + 2, 1, t + 3);
		prev = t + 3;
	}
	if (fl_graph_validate(g, &err) < 0)
		fail_msg("big graph: %s", err.msg);
	return g;
}

/* 100k ops with 50k rewrites: the pass stays near linear. */
static void test_pre_scales(void **state)
{
	enum { N = 25000 };
	fl_graph *g = big_graph(N), *orig = fl_graph_copy(g);
	fl_engine_opts o;
	fl_error err = {""};
	fl_state st;
	double t0;
	int rc;

	(void)state;
	assert_non_null(orig);
	fl_engine_opts_default(&o);
	memset(&st, 0, sizeof st);
	st.graph = g;
	st.log = fl_event_log_new();
	st.opts = &o;
	st.pass = FL_PASS_PREPROCESS;
	st.budget = -1;
	st.t0 = t0 = fl_now();
	rc = fl_pass_preprocess(&st, &err);
	if (rc != FL_PASS_DONE)
		fail_msg("preprocess: %s", err.msg);
	if (fl_now() - t0 > 10.0)
		fail_msg("preprocess took %.1f s on %d ops", fl_now() - t0,
			 4 * N);
	assert_int_equal(fl_event_log_count(st.log), 2 * N - 1);
	assert_int_equal(g->n_ops, 2 * N + 1);
	assert_valid(g);
	assert_same_outputs(orig, g);
	fl_event_log_free(st.log);
	fl_graph_free(g);
	fl_graph_free(orig);
}

FL_SUITE(preprocess,
	 cmocka_unit_test(test_pre_simplify_identities),
	 cmocka_unit_test(test_pre_simplify_refused),
	 cmocka_unit_test(test_pre_simplify_keeps_output_writer),
	 cmocka_unit_test(test_pre_simplify_pairs),
	 cmocka_unit_test(test_pre_cse),
	 cmocka_unit_test(test_pre_cse_cascade),
	 cmocka_unit_test(test_pre_cse_keeps_output_writers),
	 cmocka_unit_test(test_pre_cse_and_fold_compound),
	 cmocka_unit_test(test_pre_fold),
	 cmocka_unit_test(test_pre_fold_refused),
	 cmocka_unit_test(test_pre_fold_then_simplify),
	 cmocka_unit_test(test_pre_dce),
	 cmocka_unit_test(test_pre_off),
	 cmocka_unit_test(test_pre_step_equals_run),
	 cmocka_unit_test(test_pre_scales));
