/* Polyhedral descriptions (engine/poly.c) and the E/B/R/O classification
 * computed from them (engine/classify.c).
 *
 * Graphs are written with single quotes for readability and loaded after
 * swapping them for double quotes.  Each graph holds one op "o" writing
 * "y"; tensors are declared in index order, so x is T0, the second input
 * T1 and so on.  isl objects are compared by meaning (isl_*_is_equal),
 * never by text; the last test runs the statements point by point and
 * compares with the reference implementations.  Every test makes its
 * own isl_ctx with on_error=abort, so a leaked isl object (which makes
 * isl_ctx_free complain) or any isl error ends the run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <isl/ctx.h>
#include <isl/map.h>
#include <isl/options.h>
#include <isl/point.h>
#include <isl/set.h>
#include <isl/val.h>

#include "classify.h"
#include "poly.h"
#include "test_util.h"

#define GRAPH(tensors, op) \
	"{'format':'fuselab-graph/1','name':'t','tensors':{" tensors \
	"},'ops':[" op "]}"
#define IN(name, shape) "'" name "':{'shape':" shape ",'role':'input'}"
#define SCALAR(name) "'" name "':{'shape':[],'role':'const','value':2}"
#define OP(kind, ins, attrs) \
	"{'name':'o','op':'" kind "','in':" ins ",'out':'y','attrs':{" \
	attrs "}}"

static isl_ctx *new_ctx(void)
{
	isl_ctx *ctx = isl_ctx_alloc();

	assert_non_null(ctx);
	isl_options_set_on_error(ctx, ISL_ON_ERROR_ABORT);
	return ctx;
}

/* ---- classification ------------------------------------------------ */

typedef struct class_case {
	const char *what;
	const char *graph;
	fl_op_type type;
	const char *reason;	/* substring of the reason, or NULL */
} class_case;

static void check_case(const class_case *c)
{
	fl_graph *g = t_load_q(c->graph);
	isl_ctx *ctx = new_ctx();
	fl_classification cl;
	fl_error err = {""};

	if (fl_classify_op(ctx, g, 0, &cl, &err) < 0)
		fail_msg("%s: %s", c->what, err.msg);
	if (cl.type != c->type)
		fail_msg("%s: got %s (%s), want %s", c->what,
			 fl_op_type_name(cl.type), cl.reason,
			 fl_op_type_name(c->type));
	if (c->reason && !strstr(cl.reason, c->reason))
		fail_msg("%s: reason \"%s\" lacks \"%s\"", c->what, cl.reason,
			 c->reason);
	fl_graph_free(g);
	isl_ctx_free(ctx);
}

static void check_cases(const class_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++)
		check_case(&cases[i]);
}

#define CHECK_CASES(t) check_cases(t, sizeof t / sizeof t[0])

static void test_classify_elementwise(void **state)
{
	static const class_case cases[] = {
		{"add", GRAPH(IN("x", "[4,8]") "," IN("z", "[4,8]"),
			      OP("add", "['x','z']", "")),
		 FL_TYPE_E, "every input maps one-to-one onto the output"},
		{"exp", GRAPH(IN("x", "[4,8]"), OP("exp", "['x']", "")),
		 FL_TYPE_E, NULL},
		{"mul by a rank-0 const",
		 GRAPH(IN("x", "[4,8]") "," SCALAR("s"),
		       OP("mul", "['x','s']", "")), FL_TYPE_E, NULL},
		{"add of [1,8] and [1,8]: extent 1 everywhere, no broadcast",
		 GRAPH(IN("x", "[1,8]") "," IN("z", "[1,8]"),
		       OP("add", "['x','z']", "")), FL_TYPE_E, NULL},
		{"reshape that only adds a leading unit dim (a relabelling)",
		 GRAPH(IN("x", "[8]"),
		       OP("reshape", "['x']", "'shape':[1,8]")), FL_TYPE_E,
		 NULL},
		{"reduce over an axis of extent 1 is a copy",
		 GRAPH(IN("x", "[4,1]"),
		       OP("reduce_sum", "['x']", "'axes':[1]")), FL_TYPE_E,
		 NULL},
	};

	(void)state;
	CHECK_CASES(cases);
}

static void test_classify_broadcast(void **state)
{
	static const class_case cases[] = {
		{"add of a bias [768] onto [128,768]",
		 GRAPH(IN("x", "[128,768]") "," IN("b", "[768]"),
		       OP("add", "['x','b']", "")), FL_TYPE_B,
		 "in[1] -> out dim 0 (extent 128): not indexed by the input, "
		 "injective (broadcast)"},
		{"broadcast_to [1,8] -> [4,8]",
		 GRAPH(IN("x", "[1,8]"),
		       OP("broadcast_to", "['x']", "'shape':[4,8]")),
		 FL_TYPE_B,
		 "in[0] dim 0 (extent 1) -> out dim 0 (extent 4): injective "
		 "(broadcast)"},
		{"where with broadcasting",
		 GRAPH(IN("c", "[4,1]") "," IN("a", "[4,8]") "," IN("b", "[8]"),
		       OP("where", "['c','a','b']", "")), FL_TYPE_B,
		 "in[0] dim 1 (extent 1) -> out dim 1 (extent 8)"},
		{"broadcast_to of a one-element tensor",
		 GRAPH(IN("x", "[1]"),
		       OP("broadcast_to", "['x']", "'shape':[8]")), FL_TYPE_B,
		 "in[0] dim 0 (extent 1) -> out dim 0 (extent 8)"},
		{"matmul with K = 1 is an outer product",
		 GRAPH(IN("x", "[4,1]") "," IN("w", "[1,8]"),
		       OP("matmul", "['x','w']", "")), FL_TYPE_B, NULL},
	};

	(void)state;
	CHECK_CASES(cases);
}

static void test_classify_reduction(void **state)
{
	static const class_case cases[] = {
		{"reduce_sum over the last axis",
		 GRAPH(IN("x", "[4,8]"),
		       OP("reduce_sum", "['x']", "'axes':[-1]")), FL_TYPE_R,
		 "in[0] dim 1 (extent 8) reduced: it indexes no output dim "
		 "(surjective)"},
		{"reduce_max over axes 2 and 4 of a rank-5 tensor",
		 GRAPH(IN("x", "[2,3,4,5,6]"),
		       OP("reduce_max", "['x']", "'axes':[2,4]")), FL_TYPE_R,
		 "in[0] dim 2 (extent 4) reduced"},
		{"reduce_min over everything",
		 GRAPH(IN("x", "[4,8]"), OP("reduce_min", "['x']", "")),
		 FL_TYPE_R, "in[0] dim 0"},
		{"global max pooling",
		 GRAPH(IN("x", "[1,2,4,4]"),
		       OP("pool2d", "['x']", "'kernel':[4,4]")), FL_TYPE_R,
		 NULL},
	};

	(void)state;
	CHECK_CASES(cases);
}

static void test_classify_opaque(void **state)
{
	static const class_case cases[] = {
		{"transpose", GRAPH(IN("x", "[4,8]"),
				    OP("transpose", "['x']", "'perm':[1,0]")),
		 FL_TYPE_O, "one-to-one but not aligned"},
		{"matmul", GRAPH(IN("x", "[4,8]") "," IN("w", "[8,16]"),
				 OP("matmul", "['x','w']", "")),
		 FL_TYPE_O,
		 "in[0] -> out: neither single-valued nor injective"},
		{"batched matmul, transposed b, broadcast batch",
		 GRAPH(IN("x", "[3,4,8]") "," IN("w", "[16,8]"),
		       OP("matmul", "['x','w']", "'transpose_b':true")),
		 FL_TYPE_O, NULL},
		{"conv2d", GRAPH(IN("x", "[1,3,8,8]") "," IN("w", "[4,3,3,3]"),
				 OP("conv2d", "['x','w']", "")),
		 FL_TYPE_O, "neither single-valued nor injective"},
		{"2x2 stride-2 max pool",
		 GRAPH(IN("x", "[1,2,8,8]"),
		       OP("pool2d", "['x']", "'kernel':[2,2]")), FL_TYPE_O,
		 "in[0] dim 2 -> out dim 2 (extent 4): many-to-one window"},
		{"reshape", GRAPH(IN("x", "[128,768]"),
				  OP("reshape", "['x']",
				     "'shape':[128,12,64]")),
		 FL_TYPE_O, NULL},
		{"concat", GRAPH(IN("x", "[4,3]") "," IN("z", "[4,5]"),
				 OP("concat", "['x','z']", "'axis':1")),
		 FL_TYPE_O, "in[0] dim 1 (extent 3) -> out dim 1 (extent 8): "
		 "one-to-one but the extents differ"},
		{"slice", GRAPH(IN("x", "[8,8]"),
				OP("slice", "['x']",
				   "'starts':[2,0],'ends':[6,8]")),
		 FL_TYPE_O, "shifted or strided"},
		{"slice of one row", GRAPH(IN("x", "[8,8]"),
					   OP("slice", "['x']",
					      "'starts':[3,0],'ends':[4,8]")),
		 FL_TYPE_O, "only one index is read"},
		{"concat of one-element tensors",
		 GRAPH(IN("x", "[1]") "," IN("z", "[1]"),
		       OP("concat", "['x','z']", "")), FL_TYPE_O,
		 "a placement"},
		{"pad", GRAPH(IN("x", "[4,4]"),
			      OP("pad", "['x']", "'pads':[1,1,1,1]")),
		 FL_TYPE_O, NULL},
		{"gather", GRAPH(IN("x", "[10,8]") "," IN("i", "[3]"),
				 OP("gather", "['x','i']", "")),
		 FL_TYPE_O, "in[0]: data-dependent read"},
	};

	(void)state;
	CHECK_CASES(cases);
}

static void expect_error(const char *graph, const char *msg)
{
	fl_graph *g = t_load_q(graph);
	isl_ctx *ctx = new_ctx();
	fl_classification cl;
	fl_error err = {""};

	assert_int_equal(fl_classify_op(ctx, g, 0, &cl, &err), -1);
	if (!strstr(err.msg, msg))
		fail_msg("error \"%s\" lacks \"%s\"", err.msg, msg);
	assert_null(fl_poly_describe(ctx, g, 0, &err));
	fl_graph_free(g);
	isl_ctx_free(ctx);
}

static void test_classify_not_modelled(void **state)
{
	(void)state;
	expect_error(GRAPH(IN("x", "[4,8]"), OP("softmax", "['x']", "")),
		     "op \"o\": compound ops have no polyhedral description "
		     "(open them first)");
	expect_error(GRAPH(IN("x", "[4,8]"), OP("custom", "['x']", "")),
		     "op \"o\": custom op cannot be modelled");
}

static void test_classify_names(void **state)
{
	char buf[16];

	(void)state;
	assert_string_equal(fl_op_type_name(FL_TYPE_R), "R");
	assert_string_equal(fl_op_type_long_name(FL_TYPE_O), "opaque");
	assert_string_equal(fl_dim_rel_name(FL_REL_INJECTIVE), "injective");
	assert_string_equal(fl_poly_array_name(12, buf, sizeof buf), "T12");
}

/* ---- polyhedral descriptions -------------------------------------- */

static void assert_set_is(__isl_keep isl_set *got, const char *want)
{
	isl_set *w = isl_set_read_from_str(isl_set_get_ctx(got), want);
	isl_bool eq = isl_set_is_equal(got, w);

	if (eq != isl_bool_true) {
		char *s = isl_set_to_str(got);

		isl_set_free(w);
		fail_msg("got %s, want %s", s, want);
	}
	isl_set_free(w);
}

static void assert_map_is(__isl_keep isl_map *got, const char *want)
{
	isl_map *w = isl_map_read_from_str(isl_map_get_ctx(got), want);
	isl_bool eq = isl_map_is_equal(got, w);

	if (eq != isl_bool_true) {
		char *s = isl_map_to_str(got);

		isl_map_free(w);
		fail_msg("got %s, want %s", s, want);
	}
	isl_map_free(w);
}

/* The read of op input `input` in statement s (the only one). */
static const fl_poly_read *read_of(const fl_poly_stmt *s, int input)
{
	for (int r = 0; r < s->n_reads; r++)
		if (s->reads[r].input == input)
			return &s->reads[r];
	fail_msg("statement %s has no read of input %d", s->name, input);
	return NULL;
}

/* Describes op 0 of graph text, checking the statement count (unless
 * n_stmts is -1). */
static fl_poly_op *describe(isl_ctx *ctx, fl_graph **g, const char *graph,
			    int n_stmts)
{
	fl_error err = {""};
	fl_poly_op *p;

	*g = t_load_q(graph);
	p = fl_poly_describe(ctx, *g, 0, &err);
	if (!p)
		fail_msg("%s", err.msg);
	if (n_stmts >= 0)
		assert_int_equal(p->n_stmts, n_stmts);
	return p;
}

static void test_poly_broadcast_add(void **state)
{
	isl_ctx *ctx = new_ctx();
	fl_graph *g;
	fl_poly_op *p = describe(ctx, &g,
		GRAPH(IN("x", "[128,768]") "," IN("b", "[768]"),
		      OP("add", "['x','b']", "")), 1);
	const fl_poly_stmt *s = &p->stmts[0];

	(void)state;
	assert_int_equal(p->main_stmt, 0);
	assert_string_equal(s->name, "S0_0");
	assert_int_equal(s->role, FL_STMT_COMPUTE);
	assert_int_equal(s->n_reads, 2);
	assert_set_is(s->domain,
		      "{ S0_0[i, j] : 0 <= i < 128 and 0 <= j < 768 }");
	assert_map_is(s->write, "{ S0_0[i, j] -> T2[i, j] : 0 <= i < 128 and "
		      "0 <= j < 768 }");
	assert_map_is(read_of(s, 1)->access, "{ S0_0[i, j] -> T1[j] : "
		      "0 <= i < 128 and 0 <= j < 768 }");
	assert_true(read_of(s, 1)->exact);
	fl_poly_op_free(p);
	fl_graph_free(g);
	isl_ctx_free(ctx);
}

static void test_poly_scalar_read(void **state)
{
	isl_ctx *ctx = new_ctx();
	fl_graph *g;
	fl_poly_op *p = describe(ctx, &g,
		GRAPH(IN("x", "[4]") "," SCALAR("s"),
		      OP("mul", "['x','s']", "")), 1);

	(void)state;
	assert_map_is(read_of(&p->stmts[0], 1)->access,
		      "{ S0_0[i] -> T1[] : 0 <= i < 4 }");
	fl_poly_op_free(p);
	fl_graph_free(g);
	isl_ctx_free(ctx);
}

static void test_poly_reduce(void **state)
{
	isl_ctx *ctx = new_ctx();
	fl_graph *g;
	fl_poly_op *p = describe(ctx, &g,
		GRAPH(IN("x", "[4,8]"),
		      OP("reduce_sum", "['x']", "'axes':[1]")), 2);
	const fl_poly_stmt *upd = &p->stmts[1];

	(void)state;
	assert_int_equal(p->stmts[0].role, FL_STMT_INIT);
	assert_int_equal(p->stmts[0].n_reads, 0);
	assert_set_is(p->stmts[0].domain, "{ S0_0[i, 0] : 0 <= i < 4 }");
	assert_int_equal(upd->role, FL_STMT_UPDATE);
	assert_int_equal(p->main_stmt, 1);
	assert_set_is(upd->domain,
		      "{ S0_1[i, k] : 0 <= i < 4 and 0 <= k < 8 }");
	assert_map_is(read_of(upd, -1)->access, "{ S0_1[i, k] -> T1[i, 0] : "
		      "0 <= i < 4 and 0 <= k < 8 }");
	assert_map_is(upd->write, "{ S0_1[i, k] -> T1[i, 0] : 0 <= i < 4 and "
		      "0 <= k < 8 }");
	fl_poly_op_free(p);
	fl_graph_free(g);
	isl_ctx_free(ctx);
}

static void test_poly_matmul(void **state)
{
	isl_ctx *ctx = new_ctx();
	fl_graph *g;
	fl_poly_op *p = describe(ctx, &g,
		GRAPH(IN("x", "[3,4,8]") "," IN("w", "[16,8]"),
		      OP("matmul", "['x','w']", "'transpose_b':true")), 2);
	const fl_poly_stmt *upd = &p->stmts[1];
	const char *box = "0 <= b < 3 and 0 <= i < 4 and 0 <= j < 16 and "
			  "0 <= k < 8";
	char want[256];

	(void)state;
	assert_int_equal(p->main_stmt, 1);
	assert_set_is(p->stmts[0].domain, "{ S0_0[b, i, j] : 0 <= b < 3 and "
		      "0 <= i < 4 and 0 <= j < 16 }");
	snprintf(want, sizeof want, "{ S0_1[b, i, j, k] : %s }", box);
	assert_set_is(upd->domain, want);
	snprintf(want, sizeof want, "{ S0_1[b, i, j, k] -> T0[b, i, k] : %s }",
		 box);
	assert_map_is(read_of(upd, 0)->access, want);
	snprintf(want, sizeof want, "{ S0_1[b, i, j, k] -> T1[j, k] : %s }",
		 box);
	assert_map_is(read_of(upd, 1)->access, want);
	snprintf(want, sizeof want, "{ S0_1[b, i, j, k] -> T2[b, i, j] : %s }",
		 box);
	assert_map_is(read_of(upd, -1)->access, want);
	fl_poly_op_free(p);
	fl_graph_free(g);
	isl_ctx_free(ctx);
}

static void test_poly_avg_pool(void **state)
{
	isl_ctx *ctx = new_ctx();
	fl_graph *g;
	fl_poly_op *p = describe(ctx, &g,
		GRAPH(IN("x", "[1,2,8,8]"),
		      OP("pool2d", "['x']", "'kernel':[2,2],'mode':'avg'")), 3);
	isl_map *flow;

	(void)state;
	assert_int_equal(p->stmts[0].role, FL_STMT_INIT);
	assert_int_equal(p->stmts[1].role, FL_STMT_UPDATE);
	assert_int_equal(p->stmts[2].role, FL_STMT_FINALIZE);
	assert_int_equal(p->main_stmt, 1);
	assert_map_is(read_of(&p->stmts[1], 0)->access,
		      "{ S0_1[n, c, h, w, r, s] -> T0[n, c, 2h + r, 2w + s] : "
		      "n = 0 and 0 <= c < 2 and 0 <= h < 4 and 0 <= w < 4 and "
		      "0 <= r < 2 and 0 <= s < 2 }");
	assert_map_is(read_of(&p->stmts[2], -1)->access,
		      "{ S0_2[0, c, h, w] -> T1[0, c, h, w] : 0 <= c < 2 and "
		      "0 <= h < 4 and 0 <= w < 4 }");
	flow = fl_poly_dataflow(p, 0);
	assert_map_is(flow, "{ T0[0, c, x, y] -> T1[0, c, floor(x/2), "
		      "floor(y/2)] : 0 <= c < 2 and 0 <= x < 8 and "
		      "0 <= y < 8 }");
	isl_map_free(flow);
	assert_null(fl_poly_dataflow(p, 1));
	fl_poly_op_free(p);
	fl_graph_free(g);
	isl_ctx_free(ctx);
}

static void test_poly_grouped_conv(void **state)
{
	isl_ctx *ctx = new_ctx();
	fl_graph *g;
	fl_poly_op *p = describe(ctx, &g,
		GRAPH(IN("x", "[1,4,9,9]") "," IN("w", "[6,2,3,3]"),
		      OP("conv2d", "['x','w']",
			 "'groups':2,'stride':[2,2],'dilation':[1,2]")), 2);

	(void)state;
	/* out [1,6,4,3]; output channel k reads input channels of group
	 * k/3, i.e. 2*(k/3) + c */
	assert_map_is(read_of(&p->stmts[1], 0)->access,
		      "{ S0_1[n, k, h, w, c, r, s] -> T0[n, 2*floor(k/3) + c, "
		      "2h + r, 2w + 2s] : n = 0 and 0 <= k < 6 and 0 <= h < 4 "
		      "and 0 <= w < 3 and 0 <= c < 2 and 0 <= r < 3 and "
		      "0 <= s < 3 }");
	fl_poly_op_free(p);
	fl_graph_free(g);
	isl_ctx_free(ctx);
}

static void test_poly_concat_pad(void **state)
{
	isl_ctx *ctx = new_ctx();
	fl_graph *g, *h;
	fl_poly_op *p = describe(ctx, &g,
		GRAPH(IN("x", "[4,3]") "," IN("z", "[4,5]"),
		      OP("concat", "['x','z']", "'axis':-1")), 2);
	fl_poly_op *q = describe(ctx, &h,
		GRAPH(IN("x", "[4,4]"),
		      OP("pad", "['x']", "'pads':[1,0,2,3]")), 2);

	(void)state;
	assert_int_equal(p->main_stmt, -1);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(p->stmts[k].role, FL_STMT_COPY);
		assert_int_equal(p->stmts[k].input, k);
	}
	assert_map_is(p->stmts[1].write, "{ S0_1[i, j] -> T2[i, 3 + j] : "
		      "0 <= i < 4 and 0 <= j < 5 }");
	assert_int_equal(q->main_stmt, -1);
	assert_int_equal(q->stmts[0].role, FL_STMT_FILL);
	assert_int_equal(q->stmts[0].n_reads, 0);
	assert_set_is(q->stmts[0].domain, "{ S0_0[i, j] : 0 <= i < 7 and "
		      "0 <= j < 7 }");
	assert_int_equal(q->stmts[1].role, FL_STMT_COPY);
	assert_map_is(q->stmts[1].write, "{ S0_1[i, j] -> T1[1 + i, j] : "
		      "0 <= i < 4 and 0 <= j < 4 }");
	fl_poly_op_free(p);
	fl_poly_op_free(q);
	fl_graph_free(g);
	fl_graph_free(h);
	isl_ctx_free(ctx);
}

static void test_poly_reshape_gather(void **state)
{
	isl_ctx *ctx = new_ctx();
	fl_graph *g, *h;
	fl_poly_op *p = describe(ctx, &g,
		GRAPH(IN("x", "[4,6]"),
		      OP("reshape", "['x']", "'shape':[2,3,4]")), 1);
	fl_poly_op *q = describe(ctx, &h,
		GRAPH(IN("x", "[10,8]") "," IN("i", "[2,3]"),
		      OP("gather", "['x','i']", "")), 1);
	isl_map *flow = fl_poly_dataflow(p, 0);

	(void)state;
	assert_map_is(flow, "{ T0[a, b] -> T1[c, d, e] : 6a + b = 12c + 4d + e "
		      "and 0 <= a < 4 and 0 <= b < 6 and 0 <= c < 2 and "
		      "0 <= d < 3 and 0 <= e < 4 }");
	assert_true(isl_map_is_bijective(flow) == isl_bool_true);
	isl_map_free(flow);
	assert_false(read_of(&q->stmts[0], 0)->exact);
	assert_map_is(read_of(&q->stmts[0], 0)->access,
		      "{ S0_0[i, j, k] -> T0[t, k] : 0 <= i < 2 and 0 <= j < 3 "
		      "and 0 <= k < 8 and 0 <= t < 10 }");
	assert_true(read_of(&q->stmts[0], 1)->exact);
	assert_map_is(read_of(&q->stmts[0], 1)->access,
		      "{ S0_0[i, j, k] -> T1[i, j] : 0 <= i < 2 and 0 <= j < 3 "
		      "and 0 <= k < 8 }");
	fl_poly_op_free(p);
	fl_poly_op_free(q);
	fl_graph_free(g);
	fl_graph_free(h);
	isl_ctx_free(ctx);
}

/* ---- the description computes what the reference computes --------- */

/* Executing the statements of one op, point by point. */
typedef struct poly_run {
	const fl_graph *g;
	const fl_op *op;
	const fl_poly_stmt *s;
	float **data;		/* per tensor index */
} poly_run;

static int read_tensor(const fl_op *op, int input)
{
	return input < 0 ? op->out[0] : op->in[input];
}

/* Row-major offset of the element of `tensor` that the function acc
 * reaches from pt. */
static int64_t element_at(const fl_graph *g, int tensor,
			  __isl_keep isl_map *acc, __isl_keep isl_point *pt)
{
	isl_set *img = isl_set_apply(isl_set_from_point(isl_point_copy(pt)),
				     isl_map_copy(acc));
	isl_point *q = isl_set_sample_point(img);
	const fl_shape *sh = &g->tensors[tensor].shape;
	int64_t st[FL_MAX_RANK], off = 0;

	fl_shape_strides(sh, st);
	for (int j = 0; j < sh->rank; j++) {
		isl_val *v = isl_point_get_coordinate_val(q, isl_dim_set, j);

		off += isl_val_get_num_si(v) * st[j];
		isl_val_free(v);
	}
	isl_point_free(q);
	return off;
}

static bool is_max_pool(const fl_op *op)
{
	const char *mode = "max";

	if (op->kind == FL_OP_POOL2D)
		fl_attr_string(&op->attrs, "mode", "max", &mode, NULL);
	return op->kind == FL_OP_REDUCE_MAX ||
	       (op->kind == FL_OP_POOL2D && strcmp(mode, "max") == 0);
}

/* The value a statement stores, from its reads v[input] (v[3]: the
 * output's own value). */
static double stmt_value(const poly_run *r, const double *v)
{
	fl_op_kind k = r->op->kind;
	int64_t kern[2] = {1, 1};
	double pad = 0;
	int n;

	switch (r->s->role) {
	case FL_STMT_FILL:
		fl_attr_float(&r->op->attrs, "value", 0, &pad, NULL);
		return pad;
	case FL_STMT_COPY:
		return v[r->s->input];
	case FL_STMT_INIT:
		return is_max_pool(r->op) ? -INFINITY : 0;
	case FL_STMT_FINALIZE:
		fl_attr_ints(&r->op->attrs, "kernel", kern, 2, &n, NULL);
		return v[3] / (double)(kern[0] * kern[1]);
	case FL_STMT_UPDATE:
		if (k == FL_OP_MATMUL || k == FL_OP_CONV2D)
			return v[3] + v[0] * v[1];
		return is_max_pool(r->op) ? fmax(v[3], v[0]) : v[3] + v[0];
	case FL_STMT_COMPUTE:
	case FL_STMT_SCATTER:	/* no op run here has one */
		break;
	}
	if (k == FL_OP_ADD)
		return v[0] + v[1];
	if (k == FL_OP_WHERE)
		return v[0] != 0 ? v[1] : v[2];
	return v[0];	/* data movement */
}

static isl_stat run_point(__isl_take isl_point *pt, void *user)
{
	const poly_run *r = user;
	const fl_poly_stmt *s = r->s;
	double v[4] = {0, 0, 0, 0};
	int out = r->op->out[0];

	for (int i = 0; i < s->n_reads; i++) {
		int t = read_tensor(r->op, s->reads[i].input);

		v[s->reads[i].input < 0 ? 3 : s->reads[i].input] =
			r->data[t][element_at(r->g, t, s->reads[i].access, pt)];
	}
	r->data[out][element_at(r->g, out, s->write, pt)] =
		(float)stmt_value(r, v);
	isl_point_free(pt);
	return isl_stat_ok;
}

/* Runs op 0 of the graph text through its description and through the
 * reference implementation, on small integer data, and compares. */
static void check_semantics(const char *graph)
{
	isl_ctx *ctx = new_ctx();
	fl_graph *g;
	fl_poly_op *p = describe(ctx, &g, graph, -1);
	const fl_op *op = &g->ops[0];
	float *data[8] = {NULL};
	fl_buf in[4], out;
	poly_run r = {g, op, NULL, data};

	for (int k = 0; k < op->n_in; k++) {
		in[k].shape = g->tensors[op->in[k]].shape;
		in[k].data = data[op->in[k]] =
			malloc((size_t)fl_shape_numel(&in[k].shape) *
			       sizeof(float));
		for (int64_t i = 0; i < fl_shape_numel(&in[k].shape); i++)
			in[k].data[i] = (float)((i * 7 + k * 3) % 11 - 5);
	}
	out.shape = g->tensors[op->out[0]].shape;
	out.data = malloc((size_t)fl_shape_numel(&out.shape) * sizeof(float));
	data[op->out[0]] = calloc((size_t)fl_shape_numel(&out.shape),
				  sizeof(float));
	for (int i = 0; i < p->n_stmts; i++) {
		r.s = &p->stmts[i];
		assert_int_equal(isl_set_foreach_point(r.s->domain, run_point,
						       &r), isl_stat_ok);
	}
	fl_op_info_of(op->kind)->eval(op, in, &out);
	t_assert_close(data[op->out[0]], out.data, fl_shape_numel(&out.shape),
		       1e-5, 1e-5);
	for (int t = 0; t < 8; t++)
		free(data[t]);
	free(out.data);
	fl_poly_op_free(p);
	fl_graph_free(g);
	isl_ctx_free(ctx);
}

static void test_poly_semantics(void **state)
{
	static const char *const graphs[] = {
		GRAPH(IN("a", "[2,1,4]") "," IN("b", "[3,1]"),
		      OP("add", "['a','b']", "")),
		GRAPH(IN("c", "[4,1]") "," IN("a", "[4,5]") "," IN("b", "[5]"),
		      OP("where", "['c','a','b']", "")),
		GRAPH(IN("x", "[3,4,5]"),
		      OP("reduce_sum", "['x']", "'axes':[0,2]")),
		GRAPH(IN("x", "[3,4,5]"),
		      OP("reduce_max", "['x']", "'axes':[1]")),
		GRAPH(IN("a", "[2,3,4]") "," IN("b", "[5,4]"),
		      OP("matmul", "['a','b']", "'transpose_b':true")),
		GRAPH(IN("a", "[4,3]") "," IN("b", "[2,4,5]"),
		      OP("matmul", "['a','b']", "'transpose_a':true")),
		GRAPH(IN("x", "[1,4,9,9]") "," IN("w", "[6,2,3,3]"),
		      OP("conv2d", "['x','w']",
			 "'groups':2,'stride':[2,1],'dilation':[1,2]")),
		GRAPH(IN("x", "[1,2,7,7]"),
		      OP("pool2d", "['x']", "'kernel':[3,3],'stride':[2,2]")),
		GRAPH(IN("x", "[1,2,6,6]"),
		      OP("pool2d", "['x']", "'kernel':[2,3],'mode':'avg'")),
		GRAPH(IN("x", "[2,3,4]"),
		      OP("transpose", "['x']", "'perm':[2,0,1]")),
		GRAPH(IN("x", "[4,6]"),
		      OP("reshape", "['x']", "'shape':[2,-1,4]")),
		GRAPH(IN("x", "[7,8]"),
		      OP("slice", "['x']",
			 "'starts':[1,-5],'ends':[7,8],'steps':[2,3]")),
		GRAPH(IN("x", "[2,3]") "," IN("y1", "[2,2]") ","
		      IN("z", "[2,1]"),
		      OP("concat", "['x','y1','z']", "'axis':1")),
		GRAPH(IN("x", "[2,3]"),
		      OP("pad", "['x']", "'pads':[1,0,1,2],'value':0.5")),
		GRAPH(IN("x", "[3,1]"),
		      OP("broadcast_to", "['x']", "'shape':[2,3,4]")),
	};

	(void)state;
	for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++)
		check_semantics(graphs[i]);
}

FL_SUITE(classify,
	 cmocka_unit_test(test_classify_elementwise),
	 cmocka_unit_test(test_classify_broadcast),
	 cmocka_unit_test(test_classify_reduction),
	 cmocka_unit_test(test_classify_opaque),
	 cmocka_unit_test(test_classify_not_modelled),
	 cmocka_unit_test(test_classify_names),
	 cmocka_unit_test(test_poly_broadcast_add),
	 cmocka_unit_test(test_poly_scalar_read),
	 cmocka_unit_test(test_poly_reduce),
	 cmocka_unit_test(test_poly_matmul),
	 cmocka_unit_test(test_poly_avg_pool),
	 cmocka_unit_test(test_poly_grouped_conv),
	 cmocka_unit_test(test_poly_concat_pad),
	 cmocka_unit_test(test_poly_reshape_gather),
	 cmocka_unit_test(test_poly_semantics));
