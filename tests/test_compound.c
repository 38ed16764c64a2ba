/* Compound ops: each op's own reference implementation against values
 * worked out by hand, inference errors, and the expansion into primitives.
 *
 * The expansion tests load a small graph holding the compound op, run the
 * interpreter on it (which evaluates the compound op with its own
 * reference) and on fl_graph_expand_compounds() of it (which evaluates the
 * primitives), and compare every tensor the source graph computes.  They
 * also check what the expansion promises: only primitive ops, provenance
 * naming the compound op, unique names.  Graph JSON is written with single
 * quotes for legibility and converted before loading. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "interp.h"
#include "ops.h"
#include "test_util.h"

#define I64(...) ((const int64_t[]){__VA_ARGS__})
#define F32(...) ((const float[]){__VA_ARGS__})
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define SH(...) fl_shape_make(COUNT(I64(__VA_ARGS__)), I64(__VA_ARGS__))

/* ------------------------------------------------------------------ */
/* Direct reference implementations                                    */

static fl_buf buf(fl_shape s, const float *data)
{
	fl_buf b = {.shape = s, .data = (float *)data};

	return b;
}

static fl_op make_op(fl_op_kind kind, int n_in)
{
	fl_op op;

	memset(&op, 0, sizeof op);
	op.name = (char *)"op";
	op.kind = kind;
	op.n_in = n_in;
	op.n_out = 1;
	return op;
}

static void set_num(fl_op *op, const char *key, double v)
{
	assert_int_equal(fl_attrs_set_number(&op->attrs, key, v), 0);
}

/* Infers op's output shape from in[], checks it is `shape`, evaluates and
 * compares with want (atol = rtol = 1e-6). */
static void check_eval(const fl_op *op, const fl_buf *in, fl_shape shape,
		       const float *want)
{
	const fl_op_info *info = fl_op_info_of(op->kind);
	fl_shape in_shapes[8], out_shape;
	fl_error err = {""};
	fl_buf out;
	int64_t n;
	char g[128], w[128];

	for (int k = 0; k < op->n_in; k++)
		in_shapes[k] = in[k].shape;
	memset(&out_shape, 0, sizeof out_shape);
	if (info->infer(op, in_shapes, &out_shape, &err) < 0)
		fail_msg("%s: inference failed: %s", info->name, err.msg);
	if (!fl_shape_equal(&out_shape, &shape))
		fail_msg("shape %s, want %s",
			 fl_shape_format(&out_shape, g, sizeof g),
			 fl_shape_format(&shape, w, sizeof w));
	n = fl_shape_numel(&out_shape);
	out.shape = out_shape;
	out.data = malloc((size_t)n * sizeof(float));
	assert_non_null(out.data);
	for (int64_t i = 0; i < n; i++)
		out.data[i] = NAN;	/* every element must be written */
	info->eval(op, in, &out);
	t_assert_close(out.data, want, n, 1e-6, 1e-6);
	free(out.data);
}


static void test_softmax_ref(void **state)
{
	fl_op op = make_op(FL_OP_SOFTMAX, 1);
	fl_buf in = buf(SH(2, 3), F32(1, 2, 3, 0, 0, 0));

	(void)state;
	check_eval(&op, &in, SH(2, 3),
		   F32(0.0900305732f, 0.244728471f, 0.665240956f,
		       1 / 3.0f, 1 / 3.0f, 1 / 3.0f));
	/* Over axis 0: columns (1, 3) and (2, 4). */
	set_num(&op, "axis", 0);
	in = buf(SH(2, 2), F32(1, 2, 3, 4));
	check_eval(&op, &in, SH(2, 2),
		   F32(0.119202922f, 0.119202922f, 0.880797078f,
		       0.880797078f));
	fl_attrs_free(&op.attrs);
}

static void test_log_softmax_ref(void **state)
{
	fl_op op = make_op(FL_OP_LOG_SOFTMAX, 1);
	fl_buf in = buf(SH(3), F32(1, 2, 3));

	(void)state;
	check_eval(&op, &in, SH(3),
		   F32(-2.40760596f, -1.40760596f, -0.407605964f));
	/* Large inputs stay finite (the max is subtracted first). */
	in = buf(SH(2), F32(1000, 1000));
	check_eval(&op, &in, SH(2), F32(-0.693147181f, -0.693147181f));
}

static void test_layernorm_ref(void **state)
{
	fl_op op = make_op(FL_OP_LAYERNORM, 1);
	fl_buf in[3] = {buf(SH(1, 4), F32(1, 2, 3, 4)),
			buf(SH(4), F32(1, 2, 1, 1)),
			buf(SH(4), F32(0, 0, 1, 0))};

	(void)state;
	/* mean 2.5, variance 1.25, eps 1e-5 */
	check_eval(&op, in, SH(1, 4),
		   F32(-1.34163542f, -0.447211807f, 0.447211807f,
		       1.34163542f));
	op.n_in = 3;
	check_eval(&op, in, SH(1, 4),
		   F32(-1.34163542f, -0.894423613f, 1.447211807f,
		       1.34163542f));
	/* axis 0 of [2,2] normalises over both dims; eps from attrs. */
	op.n_in = 1;
	set_num(&op, "axis", 0);
	set_num(&op, "eps", 1e-3);
	in[0] = buf(SH(2, 2), F32(1, 2, 3, 4));
	check_eval(&op, in, SH(2, 2),
		   F32(-1.34110445f, -0.447034817f, 0.447034817f,
		       1.34110445f));
	fl_attrs_free(&op.attrs);
}

static void test_rmsnorm_ref(void **state)
{
	fl_op op = make_op(FL_OP_RMSNORM, 1);
	fl_buf in[2] = {buf(SH(2, 2), F32(3, 4, 1, 1)),
			buf(SH(2), F32(2, 0.5f))};

	(void)state;
	/* rows: mean square 12.5 and 1, eps 1e-6 */
	check_eval(&op, in, SH(2, 2),
		   F32(0.848528103f, 1.131370805f, 0.999999500f,
		       0.999999500f));
	op.n_in = 2;
	check_eval(&op, in, SH(2, 2),
		   F32(1.697056207f, 0.565685402f, 1.999999000f,
		       0.499999750f));
}

static void test_batchnorm_ref(void **state)
{
	fl_op op = make_op(FL_OP_BATCHNORM, 5);
	fl_buf in[5] = {buf(SH(1, 2, 1, 2), F32(1, 2, 3, 4)),
			buf(SH(2, 1, 1), F32(1, 3)),
			buf(SH(2, 1, 1), F32(4, 0.25f)),
			buf(SH(2, 1, 1), F32(1, 2)),
			buf(SH(2, 1, 1), F32(0, 1))};

	(void)state;
	set_num(&op, "eps", 0);
	/* channel 0: (x-1)/2; channel 1: (x-3)/0.5*2+1 */
	check_eval(&op, in, SH(1, 2, 1, 2), F32(0, 0.5f, 1, 5));
	op.n_in = 3;
	check_eval(&op, in, SH(1, 2, 1, 2), F32(0, 0.5f, 0, 2));
	fl_attrs_free(&op.attrs);
}

static void test_gelu_ref(void **state)
{
	fl_op op = make_op(FL_OP_GELU, 1);
	fl_buf in = buf(SH(4), F32(-1, 0, 1, 2));

	(void)state;
	check_eval(&op, &in, SH(4),
		   F32(-0.158655254f, 0, 0.841344746f, 1.954499736f));
	assert_int_equal(fl_attrs_set_string(&op.attrs, "approx", "tanh"), 0);
	check_eval(&op, &in, SH(4),
		   F32(-0.158808009f, 0, 0.841191991f, 1.954597694f));
	fl_attrs_free(&op.attrs);
	assert_int_equal(fl_attrs_set_string(&op.attrs, "approximate", "tanh"), 0);
	check_eval(&op, &in, SH(4),
		   F32(-0.158808009f, 0, 0.841191991f, 1.954597694f));
	fl_attrs_free(&op.attrs);
}

static void test_silu_ref(void **state)
{
	fl_op op = make_op(FL_OP_SILU, 1);
	fl_buf in = buf(SH(3), F32(-1, 0, 1));

	(void)state;
	check_eval(&op, &in, SH(3), F32(-0.268941421f, 0, 0.731058579f));
}

static void test_leaky_relu_ref(void **state)
{
	fl_op op = make_op(FL_OP_LEAKY_RELU, 1);
	fl_buf in = buf(SH(3), F32(-2, 0, 3));

	(void)state;
	check_eval(&op, &in, SH(3), F32(-0.02f, 0, 3));
	set_num(&op, "alpha", 0.5);
	check_eval(&op, &in, SH(3), F32(-1, 0, 3));
	fl_attrs_free(&op.attrs);
}

static void test_onnx_activations_ref(void **state)
{
	fl_op hs = make_op(FL_OP_HARD_SIGMOID, 1), sw = make_op(FL_OP_HARD_SWISH, 1);
	fl_op elu = make_op(FL_OP_ELU, 1);
	fl_buf in = buf(SH(4), F32(-4, -1, 0, 1));

	(void)state;
	check_eval(&hs, &in, SH(4), F32(0, 0.3f, 0.5f, 0.7f));
	set_num(&hs, "alpha", 0.5);
	set_num(&hs, "beta", 0.25);
	check_eval(&hs, &in, SH(4), F32(0, 0, 0.25f, 0.75f));
	check_eval(&sw, &in, SH(4), F32(0, -1.0f / 3, 0, 2.0f / 3));
	check_eval(&elu, &in, SH(4), F32(-0.981684361f, -0.632120559f, 0, 1));
	set_num(&elu, "alpha", 2);
	check_eval(&elu, &in, SH(4), F32(-1.963368722f, -1.264241118f, 0, 1));
	fl_attrs_free(&hs.attrs);
	fl_attrs_free(&elu.attrs);
}

static void test_quantize_ref(void **state)
{
	fl_op op = make_op(FL_OP_QUANTIZE, 1);
	fl_buf in = buf(SH(2), F32(0.1f, -1));

	(void)state;
	/* default scale 1/127: 0.1 -> 13/127 */
	check_eval(&op, &in, SH(2), F32(0.102362205f, -1));
	/* x/0.5 = 0.6, 1.52, -2.52, 0.5 (a tie: to even, 0), 1.5 (to 2) */
	set_num(&op, "scale", 0.5);
	in = buf(SH(5), F32(0.3f, 0.76f, -1.26f, 0.25f, 0.75f));
	check_eval(&op, &in, SH(5), F32(0.5f, 1, -1.5f, 0, 1));
	fl_attrs_free(&op.attrs);
}

static void test_bias_add_ref(void **state)
{
	fl_op op = make_op(FL_OP_BIAS_ADD, 2);
	fl_buf in[2] = {buf(SH(2, 2), F32(1, 2, 3, 4)),
			buf(SH(2), F32(10, 20))};

	(void)state;
	check_eval(&op, in, SH(2, 2), F32(11, 22, 13, 24));
	in[1] = buf(SH(2, 1), F32(10, 20));
	check_eval(&op, in, SH(2, 2), F32(11, 12, 23, 24));
}

static void test_dense_ref(void **state)
{
	fl_op op = make_op(FL_OP_DENSE, 2);
	fl_buf in[3] = {buf(SH(1, 2), F32(1, 2)),
			buf(SH(2, 2), F32(1, 2, 3, 4)),
			buf(SH(2), F32(1, -1))};

	(void)state;
	check_eval(&op, in, SH(1, 2), F32(7, 10));
	op.n_in = 3;
	check_eval(&op, in, SH(1, 2), F32(8, 9));
	assert_int_equal(fl_attrs_set_bool(&op.attrs, "transpose_b", true), 0);
	check_eval(&op, in, SH(1, 2), F32(6, 10));
	/* batched x, shared w: [2,1,2] x [2,2] -> [2,1,2] */
	in[0] = buf(SH(2, 1, 2), F32(1, 2, 0, 1));
	check_eval(&op, in, SH(2, 1, 2), F32(6, 10, 3, 3));
	fl_attrs_free(&op.attrs);
}

static void test_reduce_mean_ref(void **state)
{
	fl_op op = make_op(FL_OP_REDUCE_MEAN, 1);
	fl_buf in = buf(SH(2, 2), F32(1, 2, 3, 5));

	(void)state;
	check_eval(&op, &in, SH(1, 1), F32(2.75f));
	assert_int_equal(fl_attrs_set_ints(&op.attrs, "axes", I64(-1), 1), 0);
	check_eval(&op, &in, SH(2, 1), F32(1.5f, 4));
	assert_int_equal(fl_attrs_set_ints(&op.attrs, "axes", I64(0), 1), 0);
	check_eval(&op, &in, SH(1, 2), F32(2, 3.5f));
	fl_attrs_free(&op.attrs);
}

static void test_variance_ref(void **state)
{
	fl_op op = make_op(FL_OP_VARIANCE, 1);
	fl_buf in = buf(SH(2, 2), F32(1, 2, 3, 5));

	(void)state;
	/* population: deviations 1.75, 0.75, 0.25, 2.25 -> 8.75 / 4 */
	check_eval(&op, &in, SH(1, 1), F32(2.1875f));
	assert_int_equal(fl_attrs_set_ints(&op.attrs, "axes", I64(1), 1), 0);
	check_eval(&op, &in, SH(2, 1), F32(0.25f, 1));
	fl_attrs_free(&op.attrs);
}

static void test_attention_ref(void **state)
{
	fl_op op = make_op(FL_OP_ATTENTION, 3);
	fl_buf in[3] = {buf(SH(1, 1), F32(1)), buf(SH(2, 1), F32(1, 2)),
			buf(SH(2, 1), F32(10, 20))};

	(void)state;
	/* scores [1, 2] (scale 1/sqrt(1)); softmax [0.269, 0.731] */
	check_eval(&op, in, SH(1, 1), F32(17.3105858f));
	/* D = 2: scores [1, 0] / sqrt(2) */
	in[0] = buf(SH(1, 2), F32(1, 0));
	in[1] = buf(SH(2, 2), F32(1, 0, 0, 1));
	in[2] = buf(SH(2, 2), F32(1, 2, 3, 4));
	check_eval(&op, in, SH(1, 2), F32(1.66047690f, 2.66047690f));
	/* scale 0: a plain average of v's rows */
	set_num(&op, "scale", 0);
	check_eval(&op, in, SH(1, 2), F32(2, 3));
	/* batched q, shared k and v: each batch row on its own */
	in[0] = buf(SH(2, 1, 2), F32(1, 0, 0, 0));
	check_eval(&op, in, SH(2, 1, 2), F32(2, 3, 2, 3));
	fl_attrs_free(&op.attrs);
}

typedef struct infer_case {
	fl_op_kind kind;
	int n_in;
	const char *key;	/* one numeric attribute, or NULL */
	double value;
	fl_shape in[3];
	const char *expect;
} infer_case;

static void test_infer_errors(void **state)
{
	const infer_case cases[] = {
		{FL_OP_SOFTMAX, 1, "axis", 2, {SH(4, 5)},
		 "attrs.axis: axis 2 is out of range for rank 2"},
		{FL_OP_LOG_SOFTMAX, 1, NULL, 0, {fl_shape_scalar()},
		 "attrs.axis: axis -1 is out of range for rank 0"},
		{FL_OP_LAYERNORM, 2, NULL, 0, {SH(4, 768), SH(5)},
		 "in[1]: gamma shape [5] does not broadcast to [4,768]"},
		{FL_OP_LAYERNORM, 3, NULL, 0, {SH(4, 8), SH(8), SH(2, 4, 8)},
		 "in[2]: beta shape [2,4,8] does not broadcast to [4,8]"},
		{FL_OP_LAYERNORM, 1, "eps", -1, {SH(4, 8)},
		 "attrs.eps: must be >= 0, got -1"},
		{FL_OP_RMSNORM, 1, NULL, 0, {fl_shape_scalar()},
		 "in[0]: x needs rank >= 1, got shape []"},
		{FL_OP_BATCHNORM, 3, NULL, 0, {SH(2, 3, 4, 4), SH(3), SH(3, 1, 1)},
		 "in[1]: mean shape [3] does not broadcast to [2,3,4,4]"},
		{FL_OP_LEAKY_RELU, 1, "alpha", INFINITY, {SH(3)},
		 "attrs.alpha: expected a number"},
		{FL_OP_QUANTIZE, 1, "scale", 0, {SH(3)},
		 "attrs.scale: must be > 0, got 0"},
		{FL_OP_BIAS_ADD, 2, NULL, 0, {SH(4, 6), SH(4)},
		 "in[1]: b shape [4] does not broadcast to [4,6]"},
		{FL_OP_DENSE, 2, NULL, 0, {SH(4), SH(4, 5)},
		 "in[0]: x needs rank >= 2, got shape [4]"},
		{FL_OP_DENSE, 2, NULL, 0, {SH(3, 4), SH(5, 6)},
		 "in[1]: w shape [5,6] has K (second-last dim) 5, expected 4"},
		{FL_OP_DENSE, 3, NULL, 0, {SH(3, 4), SH(4, 6), SH(3)},
		 "in[2]: b shape [3] does not broadcast to [3,6]"},
		{FL_OP_DENSE, 2, NULL, 0, {SH(2, 3, 4), SH(3, 4, 6)},
		 "in[1]: batch dims of w: shapes [2] and [3] do not broadcast "
		 "(dim 0: 2 vs 3)"},
		{FL_OP_ATTENTION, 3, NULL, 0, {SH(4, 8), SH(6, 7), SH(6, 3)},
		 "in[1]: k shape [6,7] has D (last dim) 7, expected 8"},
		{FL_OP_ATTENTION, 3, NULL, 0, {SH(4, 8), SH(6, 8), SH(5, 3)},
		 "in[2]: v shape [5,3] has T (second-last dim) 5, expected 6"},
		{FL_OP_ATTENTION, 3, NULL, 0, {SH(8), SH(6, 8), SH(6, 3)},
		 "in[0]: q needs rank >= 2, got shape [8]"},
	};

	(void)state;
	for (int i = 0; i < COUNT(cases); i++) {
		fl_op op = make_op(cases[i].kind, cases[i].n_in);

		if (cases[i].key)
			set_num(&op, cases[i].key, cases[i].value);
		t_infer_fails(&op, cases[i].in, cases[i].expect);
		fl_attrs_free(&op.attrs);
	}
}

static void test_axes_and_approx_errors(void **state)
{
	fl_op op = make_op(FL_OP_VARIANCE, 1);
	fl_op gelu = make_op(FL_OP_GELU, 1);
	fl_shape in = SH(2, 3);

	(void)state;
	assert_int_equal(fl_attrs_set_ints(&op.attrs, "axes", I64(1, -1), 2), 0);
	t_infer_fails(&op, &in, "attrs.axes[1]: axis 1 given twice");
	assert_int_equal(fl_attrs_set_ints(&op.attrs, "axes", I64(2), 1), 0);
	t_infer_fails(&op, &in,
			  "attrs.axes[0]: axis 2 is out of range for rank 2");
	assert_int_equal(fl_attrs_set_ints(&op.attrs, "axes", I64(0), 0), 0);
	t_infer_fails(&op, &in, "attrs.axes: empty list (leave it out to "
			  "reduce every axis)");
	fl_attrs_free(&op.attrs);
	assert_int_equal(fl_attrs_set_string(&gelu.attrs, "approximate", "fast"), 0);
	t_infer_fails(&gelu, &in,
			  "attrs.approximate: expected \"none\" or \"tanh\" "
			  "(\"erf\" = \"none\"), got \"fast\"");
	fl_attrs_free(&gelu.attrs);
}

/* ------------------------------------------------------------------ */
/* Expansion                                                           */

/* JSON text written with ' for " (malloc'd). */
static char *dq(const char *s)
{
	char *r = strdup(s);

	assert_non_null(r);
	for (char *p = r; *p; p++)
		if (*p == '\'')
			*p = '"';
	return r;
}

static fl_graph *expand(const fl_graph *g)
{
	fl_error err = {""};
	fl_graph *e = fl_graph_expand_compounds(g, &err);

	if (!e)
		fail_msg("expansion failed: %s", err.msg);
	return e;
}

static void assert_only_primitives(const fl_graph *e)
{
	for (int i = 0; i < e->n_ops; i++)
		if (fl_op_is_compound(e->ops[i].kind))
			fail_msg("op \"%s\" is still a %s", e->ops[i].name,
				 fl_op_kind_name(e->ops[i].kind));
}

/* Every op of e is either a copied primitive of g or stems from a compound
 * op of g and says so; every compound op of g produced at least one op,
 * named "<op>.<step>". */
static void assert_provenance(const fl_graph *g, const fl_graph *e)
{
	for (int i = 0; i < e->n_ops; i++) {
		const fl_op *op = &e->ops[i];
		int src = fl_graph_find_op(g, op->prov.origin);

		assert_true(src >= 0);
		assert_null(op->prov.rewrite);
		if (!op->prov.compound) {
			assert_false(fl_op_is_compound(g->ops[src].kind));
			assert_string_equal(op->name, g->ops[src].name);
			continue;
		}
		assert_string_equal(op->prov.compound,
				    fl_op_kind_name(g->ops[src].kind));
		assert_true(strncmp(op->name, g->ops[src].name,
				    strlen(g->ops[src].name)) == 0);
		assert_int_equal(op->name[strlen(g->ops[src].name)], '.');
	}
	for (int i = 0; i < g->n_ops; i++) {
		int n = 0;

		for (int k = 0; k < e->n_ops; k++)
			n += strcmp(e->ops[k].prov.origin, g->ops[i].name) == 0;
		assert_true(n >= 1);
	}
}

static void assert_unique_names(const fl_graph *e)
{
	for (int i = 0; i < e->n_ops; i++)
		for (int k = i + 1; k < e->n_ops; k++)
			assert_string_not_equal(e->ops[i].name, e->ops[k].name);
	for (int i = 0; i < e->n_tensors; i++)
		for (int k = i + 1; k < e->n_tensors; k++)
			assert_string_not_equal(e->tensors[i].name,
						e->tensors[k].name);
}

/* Tensors of g keep their index, name, role and shape in e. */
static void assert_same_tensors(const fl_graph *g, const fl_graph *e)
{
	assert_true(e->n_tensors >= g->n_tensors);
	for (int t = 0; t < g->n_tensors; t++) {
		assert_string_equal(e->tensors[t].name, g->tensors[t].name);
		assert_int_equal(e->tensors[t].role, g->tensors[t].role);
		assert_true(fl_shape_equal(&e->tensors[t].shape,
					   &g->tensors[t].shape));
	}
}

/* Runs g and e and compares every tensor g computes. */
static void assert_same_values(const fl_graph *g, const fl_graph *e)
{
	fl_error err = {""};
	fl_values *vg = fl_interp_run(g, NULL, &err);
	fl_values *ve = fl_interp_run(e, NULL, &err);

	assert_non_null(vg);
	assert_non_null(ve);
	for (int t = 0; t < g->n_tensors; t++) {
		if (!vg->bufs[t].data)
			continue;
		assert_non_null(ve->bufs[t].data);
		t_assert_close(ve->bufs[t].data, vg->bufs[t].data,
			       fl_shape_numel(&g->tensors[t].shape), 1e-6, 1e-5);
	}
	fl_values_free(vg);
	fl_values_free(ve);
}

/* All the checks above on one graph; returns the number of ops of the
 * expansion. */
static int check_expansion(const char *single_quoted)
{
	fl_graph *g = t_load_q(single_quoted), *e = expand(g);
	int n_ops = e->n_ops, n_src = g->n_ops;

	assert_only_primitives(e);
	assert_provenance(g, e);
	assert_unique_names(e);
	assert_same_tensors(g, e);
	assert_same_values(g, e);
	assert_int_equal(g->n_ops, n_src);	/* the source is untouched */
	fl_graph_free(e);
	fl_graph_free(g);
	return n_ops;
}

#define HEAD "{'format':'fuselab-graph/1','name':'t','tensors':{"
#define IN(n, s) "'" n "':{'shape':" s ",'role':'input'},"
#define PARAM(n, s) "'" n "':{'shape':" s ",'role':'param'},"
#define OUT(n, s) "'" n "':{'shape':" s ",'role':'output'}"
#define OPS "},'ops':["
#define TAIL "]}"
/* A graph x -> op -> y with extra tensors `more` declared before y. */
#define ONE(xs, more, ys, op) \
	HEAD IN("x", xs) more OUT("y", ys) OPS op TAIL

static void test_softmax_expands(void **state)
{
	fl_graph *g, *e;
	static const char *const steps[] = {"sm.max", "sm.sub", "sm.exp",
					    "sm.sum", "sm.div"};
	static const fl_op_kind kinds[] = {FL_OP_REDUCE_MAX, FL_OP_SUB,
					   FL_OP_EXP, FL_OP_REDUCE_SUM,
					   FL_OP_DIV};

	(void)state;
	assert_int_equal(check_expansion(ONE("[3,5]", "", "[3,5]",
		"{'name':'sm','op':'softmax','in':['x'],'out':'y'}")), 5);
	check_expansion(ONE("[4,3]", "", "[4,3]",
		"{'name':'sm','op':'softmax','in':['x'],'out':'y',"
		"'attrs':{'axis':0}}"));
	check_expansion(ONE("[2,3,4]", "", "[2,3,4]",
		"{'name':'sm','op':'softmax','in':['x'],'out':'y',"
		"'attrs':{'axis':-2}}"));
	/* The exact shape of the expansion. */
	g = t_load_q(ONE("[3,5]", "", "[3,5]",
		     "{'name':'sm','op':'softmax','in':['x'],'out':'y'}"));
	e = expand(g);
	for (int i = 0; i < 5; i++) {
		assert_string_equal(e->ops[i].name, steps[i]);
		assert_int_equal(e->ops[i].kind, kinds[i]);
		assert_string_equal(e->ops[i].prov.origin, "sm");
		assert_string_equal(e->ops[i].prov.compound, "softmax");
	}
	assert_int_equal(e->ops[4].out[0], fl_graph_find_tensor(e, "y"));
	assert_int_equal(fl_graph_find_tensor(e, "sm.div"), -1);
	assert_int_equal(e->tensors[e->ops[0].out[0]].shape.dim[1], 1);
	fl_graph_free(e);
	fl_graph_free(g);
}

static void test_log_softmax_expands(void **state)
{
	(void)state;
	check_expansion(ONE("[3,6]", "", "[3,6]",
		"{'name':'ls','op':'log_softmax','in':['x'],'out':'y'}"));
	check_expansion(ONE("[4,3]", "", "[4,3]",
		"{'name':'ls','op':'log_softmax','in':['x'],'out':'y',"
		"'attrs':{'axis':0}}"));
}

static void test_layernorm_expands(void **state)
{
	(void)state;
	check_expansion(ONE("[4,8]", PARAM("g", "[8]") PARAM("b", "[8]"),
		"[4,8]",
		"{'name':'ln','op':'layernorm','in':['x','g','b'],'out':'y'}"));
	check_expansion(ONE("[4,8]", "", "[4,8]",
		"{'name':'ln','op':'layernorm','in':['x'],'out':'y'}"));
	check_expansion(ONE("[2,3,4]", PARAM("g", "[3,4]"), "[2,3,4]",
		"{'name':'ln','op':'layernorm','in':['x','g'],'out':'y',"
		"'attrs':{'axis':1,'eps':0.001}}"));
	check_expansion(ONE("[2,3,4]", PARAM("g", "[3,1]") PARAM("b", "[4]"),
		"[2,3,4]",
		"{'name':'ln','op':'layernorm','in':['x','g','b'],'out':'y',"
		"'attrs':{'axis':-2}}"));
}

static void test_rmsnorm_expands(void **state)
{
	(void)state;
	check_expansion(ONE("[3,8]", PARAM("g", "[8]"), "[3,8]",
		"{'name':'rn','op':'rmsnorm','in':['x','g'],'out':'y'}"));
	check_expansion(ONE("[2,2,5]", "", "[2,2,5]",
		"{'name':'rn','op':'rmsnorm','in':['x'],'out':'y',"
		"'attrs':{'eps':0.001}}"));
}

#define BN_PARAMS \
	PARAM("m", "[3,1,1]") \
	"'v':{'shape':[3,1,1],'role':'const','data':[0.5,1.0,2.0]}," \
	PARAM("g", "[3,1,1]") PARAM("b", "[3,1,1]")

static void test_batchnorm_expands(void **state)
{
	(void)state;
	check_expansion(ONE("[2,3,4,4]", BN_PARAMS, "[2,3,4,4]",
		"{'name':'bn','op':'batchnorm','in':['x','m','v','g','b'],"
		"'out':'y'}"));
	check_expansion(ONE("[2,3,4,4]", BN_PARAMS, "[2,3,4,4]",
		"{'name':'bn','op':'batchnorm','in':['x','m','v'],'out':'y',"
		"'attrs':{'eps':0.01}}"));
}

static void test_gelu_expands(void **state)
{
	(void)state;
	check_expansion(ONE("[4,16]", "", "[4,16]",
		"{'name':'ge','op':'gelu','in':['x'],'out':'y'}"));
	check_expansion(ONE("[4,16]", "", "[4,16]",
		"{'name':'ge','op':'gelu','in':['x'],'out':'y',"
		"'attrs':{'approx':'tanh'}}"));
	check_expansion(ONE("[4,16]", "", "[4,16]",
		"{'name':'ge','op':'gelu','in':['x'],'out':'y',"
		"'attrs':{'approximate':'tanh'}}"));
}

static void test_silu_expands(void **state)
{
	(void)state;
	assert_int_equal(check_expansion(ONE("[5,7]", "", "[5,7]",
		"{'name':'si','op':'silu','in':['x'],'out':'y'}")), 2);
}

static void test_leaky_relu_expands(void **state)
{
	(void)state;
	check_expansion(ONE("[5,7]", "", "[5,7]",
		"{'name':'lr','op':'leaky_relu','in':['x'],'out':'y'}"));
	check_expansion(ONE("[5,7]", "", "[5,7]",
		"{'name':'lr','op':'leaky_relu','in':['x'],'out':'y',"
		"'attrs':{'alpha':0.2}}"));
}

static void test_onnx_activations_expand(void **state)
{
	(void)state;
	check_expansion(ONE("[5,7]", "", "[5,7]",
		"{'name':'h','op':'hard_sigmoid','in':['x'],'out':'y',"
		"'attrs':{'alpha':0.3,'beta':0.4}}"));
	check_expansion(ONE("[5,7]", "", "[5,7]",
		"{'name':'h','op':'hard_swish','in':['x'],'out':'y'}"));
	check_expansion(ONE("[5,7]", "", "[5,7]",
		"{'name':'e','op':'elu','in':['x'],'out':'y',"
		"'attrs':{'alpha':-0.5}}"));
}

static void test_quantize_expands(void **state)
{
	(void)state;
	check_expansion(ONE("[8,8]", "", "[8,8]",
		"{'name':'q','op':'quantize','in':['x'],'out':'y'}"));
	check_expansion(ONE("[8,8]", "", "[8,8]",
		"{'name':'q','op':'quantize','in':['x'],'out':'y',"
		"'attrs':{'scale':0.25}}"));
}

static void test_bias_add_expands(void **state)
{
	(void)state;
	assert_int_equal(check_expansion(ONE("[4,6]", PARAM("b", "[6]"),
		"[4,6]",
		"{'name':'ba','op':'bias_add','in':['x','b'],'out':'y'}")), 1);
	check_expansion(ONE("[2,3,4]", PARAM("b", "[3,1]"), "[2,3,4]",
		"{'name':'ba','op':'bias_add','in':['x','b'],'out':'y'}"));
}

static void test_dense_expands(void **state)
{
	(void)state;
	assert_int_equal(check_expansion(ONE("[3,4]",
		PARAM("w", "[4,5]") PARAM("b", "[5]"), "[3,5]",
		"{'name':'fc','op':'dense','in':['x','w','b'],'out':'y'}")), 2);
	assert_int_equal(check_expansion(ONE("[3,4]", PARAM("w", "[4,5]"),
		"[3,5]",
		"{'name':'fc','op':'dense','in':['x','w'],'out':'y'}")), 1);
	check_expansion(ONE("[3,4]", PARAM("w", "[5,4]") PARAM("b", "[5]"),
		"[3,5]",
		"{'name':'fc','op':'dense','in':['x','w','b'],'out':'y',"
		"'attrs':{'transpose_b':true}}"));
	check_expansion(ONE("[2,3,4]", PARAM("w", "[4,5]") PARAM("b", "[5]"),
		"[2,3,5]",
		"{'name':'fc','op':'dense','in':['x','w','b'],'out':'y'}"));
	check_expansion(ONE("[2,3,4]", PARAM("w", "[2,5,4]"), "[2,3,5]",
		"{'name':'fc','op':'dense','in':['x','w'],'out':'y',"
		"'attrs':{'transpose_b':true}}"));
}

static void test_reduce_mean_expands(void **state)
{
	(void)state;
	check_expansion(ONE("[3,4,5]", "", "[3,1,5]",
		"{'name':'rm','op':'reduce_mean','in':['x'],'out':'y',"
		"'attrs':{'axes':[1]}}"));
	check_expansion(ONE("[3,4,5]", "", "[1,1,1]",
		"{'name':'rm','op':'reduce_mean','in':['x'],'out':'y'}"));
	check_expansion(ONE("[3,4,5]", "", "[1,4,1]",
		"{'name':'rm','op':'reduce_mean','in':['x'],'out':'y',"
		"'attrs':{'axes':[-1,0]}}"));
}

static void test_variance_expands(void **state)
{
	(void)state;
	check_expansion(ONE("[3,4,5]", "", "[1,4,1]",
		"{'name':'va','op':'variance','in':['x'],'out':'y',"
		"'attrs':{'axes':[0,2]}}"));
	check_expansion(ONE("[6,5]", "", "[1,1]",
		"{'name':'va','op':'variance','in':['x'],'out':'y'}"));
}

#define ATT(qs, ks, vs, ys, attrs) \
	HEAD IN("q", qs) IN("k", ks) IN("v", vs) OUT("y", ys) OPS \
	"{'name':'at','op':'attention','in':['q','k','v'],'out':'y'" attrs \
	"}" TAIL

static void test_attention_expands(void **state)
{
	(void)state;
	assert_int_equal(check_expansion(ATT("[4,8]", "[6,8]", "[6,3]",
					     "[4,3]", "")), 8);
	check_expansion(ATT("[2,3,4,8]", "[2,3,5,8]", "[2,3,5,6]", "[2,3,4,6]",
			    ""));
	check_expansion(ATT("[4,8]", "[6,8]", "[6,3]", "[4,3]",
			    ",'attrs':{'scale':0.5}"));
	/* k and v shared by every batch row of q */
	check_expansion(ATT("[2,4,8]", "[5,8]", "[5,3]", "[2,4,3]", ""));
}

/* Two softmaxes and a layernorm around user primitives. */
#define MIXED HEAD IN("x", "[3,5]") PARAM("g", "[5]") OUT("y", "[3,5]") OPS \
	"{'name':'sm1','op':'softmax','in':['x'],'out':'h1'},"		\
	"{'name':'r','op':'relu','in':['h1'],'out':'h2'},"		\
	"{'name':'sm2','op':'softmax','in':['h2'],'out':'h3'},"		\
	"{'name':'ln','op':'layernorm','in':['h3','g'],'out':'h4'},"	\
	"{'name':'ad','op':'add','in':['h4','x'],'out':'y'}" TAIL

/* The mixed graph: every compound opened, names unique, values equal. */
static void test_mixed_graph_expands(void **state)
{
	fl_graph *g, *e;
	const char *json = MIXED;

	(void)state;
	assert_int_equal(check_expansion(json), 5 + 1 + 5 + 10 + 1);
	g = t_load_q(json);
	e = expand(g);
	assert_true(fl_graph_find_op(e, "sm1.max") >= 0);
	assert_true(fl_graph_find_op(e, "sm2.max") >= 0);
	/* the expansion of sm1 comes before r, r before sm2 */
	assert_true(fl_graph_find_op(e, "sm1.div") <
		    fl_graph_find_op(e, "r"));
	assert_true(fl_graph_find_op(e, "r") < fl_graph_find_op(e, "sm2.max"));
	fl_graph_free(e);
	fl_graph_free(g);
}

/* fl_graph_open_compounds as the open pass uses it: a decision per
 * compound op (here: only the first two), a hook per opening with the
 * primitives it produced, and the map from each new op to its source op. */
struct open_record {
	int asked, opened, first_n[4];
	char first_name[4][32];
};

static bool open_first_two(void *user, const fl_graph *src, int i)
{
	struct open_record *r = user;

	(void)src;
	(void)i;
	return r->asked++ < 2;
}

static int record_opening(void *user, const fl_graph *src, int i,
			  const fl_graph *dst, int first, int n, fl_error *err)
{
	struct open_record *r = user;

	(void)err;
	assert_true(fl_op_is_compound(src->ops[i].kind));
	r->first_n[r->opened] = n;
	snprintf(r->first_name[r->opened], sizeof r->first_name[0], "%s",
		 dst->ops[first].name);
	r->opened++;
	return 0;
}

static void test_open_compounds_decides_each(void **state)
{
	const char *json = MIXED;
	struct open_record rec = {0};
	const fl_open_hooks hooks = {open_first_two, record_opening, &rec};
	fl_graph *g, *e;
	fl_error err = {""};
	int *src = NULL, kept = -1, ln;

	(void)state;
	g = t_load_q(json);
	e = fl_graph_open_compounds(g, &hooks, &src, &kept, &err);
	if (!e)
		fail_msg("%s", err.msg);
	assert_int_equal(rec.asked, 3);
	assert_int_equal(rec.opened, 2);
	assert_int_equal(kept, 1);
	assert_int_equal(rec.first_n[0], 5);
	assert_string_equal(rec.first_name[0], "sm1.max");
	assert_string_equal(rec.first_name[1], "sm2.max");
	/* source order: sm1's 5 primitives, r, sm2's 5, ln kept, ad */
	assert_int_equal(e->n_ops, 5 + 1 + 5 + 1 + 1);
	ln = fl_graph_find_op(e, "ln");
	assert_int_equal(ln, 11);
	assert_int_equal(e->ops[ln].kind, FL_OP_LAYERNORM);
	for (int k = 0; k < e->n_ops; k++) {
		static const int want[] = {0, 0, 0, 0, 0, 1, 2, 2, 2, 2, 2, 3, 4};

		assert_int_equal(src[k], want[k]);
		assert_int_equal(e->tensors[e->ops[k].out[0]].producer, k);
	}
	free(src);
	/* opening the rest afterwards gives the graph that opens everything */
	{
		fl_graph *all = expand(g), *rest;

		rest = fl_graph_open_compounds(e, NULL, NULL, &kept, &err);
		assert_non_null(rest);
		assert_int_equal(kept, 0);
		assert_int_equal(rest->n_ops, all->n_ops);
		for (int k = 0; k < all->n_ops; k++)
			assert_string_equal(rest->ops[k].name, all->ops[k].name);
		fl_graph_free(rest);
		fl_graph_free(all);
	}
	fl_graph_free(e);
	fl_graph_free(g);
}

/* Names an expansion wants may be taken by the user's tensors or by user
 * ops later in the file: they get numeric suffixes. */
static void test_expansion_names_avoid_user_names(void **state)
{
	const char *json = HEAD IN("x", "[3,4]") IN("sm.sum", "[3,4]")
		OUT("y", "[3,4]") OPS
		"{'name':'sm','op':'softmax','in':['x'],'out':'h'},"
		"{'name':'sm.exp','op':'add','in':['h','sm.sum'],'out':'y'}"
		TAIL;
	fl_graph *g, *e;
	int user;

	(void)state;
	check_expansion(json);
	g = t_load_q(json);
	e = expand(g);
	user = fl_graph_find_op(e, "sm.exp");
	assert_true(user >= 0);
	assert_int_equal(e->ops[user].kind, FL_OP_ADD);
	assert_null(e->ops[user].prov.compound);
	assert_true(fl_graph_find_op(e, "sm.exp.2") >= 0);
	assert_true(fl_graph_find_op(e, "sm.sum.2") >= 0);
	assert_int_equal(fl_graph_find_tensor(e, "sm.sum"),
			 fl_graph_find_tensor(g, "sm.sum"));
	fl_graph_free(e);
	fl_graph_free(g);
}

/* An op that was already rewritten keeps its user origin when opened. */
static void test_expansion_keeps_origin(void **state)
{
	fl_graph *g = t_load_q(ONE("[3,5]", "", "[3,5]",
			       "{'name':'s','op':'silu','in':['x'],'out':'y'}"));
	fl_graph *e;

	(void)state;
	assert_int_equal(fl_op_set_provenance(&g->ops[0], "block.act", NULL,
					      "cse"), 0);
	e = expand(g);
	for (int i = 0; i < e->n_ops; i++) {
		assert_string_equal(e->ops[i].prov.origin, "block.act");
		assert_string_equal(e->ops[i].prov.compound, "silu");
		assert_null(e->ops[i].prov.rewrite);
	}
	fl_graph_free(e);
	fl_graph_free(g);
}

static void test_expansion_without_compounds(void **state)
{
	fl_graph *g = t_load_q(ONE("[3,5]", "", "[3,5]",
			       "{'name':'r','op':'relu','in':['x'],'out':'y'}"));
	fl_graph *e = expand(g);

	(void)state;
	assert_int_equal(e->n_ops, 1);
	assert_int_equal(e->n_tensors, g->n_tensors);
	assert_string_equal(e->ops[0].name, "r");
	assert_null(e->ops[0].prov.compound);
	fl_graph_free(e);
	fl_graph_free(g);
}

/* A compound op that no longer infers (attrs changed after loading)
 * makes the expansion fail with a message naming it; nothing leaks. */
static void test_expansion_errors(void **state)
{
	fl_graph *g = t_load_q(ONE("[3,5]", "", "[3,5]",
			       "{'name':'r','op':'relu','in':['x'],'out':'h'},"
			       "{'name':'sm','op':'softmax','in':['h'],'out':'y'}"));
	fl_error err = {""};

	(void)state;
	assert_int_equal(fl_attrs_set_number(&g->ops[1].attrs, "axis", 5), 0);
	assert_null(fl_graph_expand_compounds(g, &err));
	assert_string_equal(err.msg, "ops[1] (softmax \"sm\"): attrs.axis: "
			    "axis 5 is out of range for rank 2");
	assert_int_equal(fl_attrs_set_number(&g->ops[1].attrs, "axis", 1), 0);
	assert_int_equal(fl_attrs_set_string(&g->ops[1].attrs, "axes", "x"), 0);
	assert_null(fl_graph_expand_compounds(g, &err));
	assert_string_equal(err.msg, "ops[1] (softmax \"sm\"): attrs.axes: "
			    "unknown attribute");
	fl_graph_free(g);
}

static void test_loader_reports_compound_errors(void **state)
{
	char *a = dq(ONE("[4,8]", PARAM("g", "[5]"), "[4,8]",
			 "{'name':'ln','op':'layernorm','in':['x','g'],"
			 "'out':'y'}"));
	char *b = dq(ONE("[4,8]", "", "[4,8]",
			 "{'name':'ge','op':'gelu','in':['x'],'out':'y',"
			 "'attrs':{'approx':'fast'}}"));

	(void)state;
	t_load_fails(a, "in[1]: gamma shape [5] does not broadcast to [4,8]");
	t_load_fails(b, "attrs.approx: expected \"none\" or \"tanh\"");
	free(a);
	free(b);
}

FL_SUITE(compound,
	 cmocka_unit_test(test_softmax_ref),
	 cmocka_unit_test(test_log_softmax_ref),
	 cmocka_unit_test(test_layernorm_ref),
	 cmocka_unit_test(test_rmsnorm_ref),
	 cmocka_unit_test(test_batchnorm_ref),
	 cmocka_unit_test(test_gelu_ref),
	 cmocka_unit_test(test_silu_ref),
	 cmocka_unit_test(test_leaky_relu_ref),
	 cmocka_unit_test(test_onnx_activations_ref),
	 cmocka_unit_test(test_quantize_ref),
	 cmocka_unit_test(test_bias_add_ref),
	 cmocka_unit_test(test_dense_ref),
	 cmocka_unit_test(test_reduce_mean_ref),
	 cmocka_unit_test(test_variance_ref),
	 cmocka_unit_test(test_attention_ref),
	 cmocka_unit_test(test_infer_errors),
	 cmocka_unit_test(test_axes_and_approx_errors),
	 cmocka_unit_test(test_softmax_expands),
	 cmocka_unit_test(test_log_softmax_expands),
	 cmocka_unit_test(test_layernorm_expands),
	 cmocka_unit_test(test_rmsnorm_expands),
	 cmocka_unit_test(test_batchnorm_expands),
	 cmocka_unit_test(test_gelu_expands),
	 cmocka_unit_test(test_silu_expands),
	 cmocka_unit_test(test_leaky_relu_expands),
	 cmocka_unit_test(test_onnx_activations_expand),
	 cmocka_unit_test(test_quantize_expands),
	 cmocka_unit_test(test_bias_add_expands),
	 cmocka_unit_test(test_dense_expands),
	 cmocka_unit_test(test_reduce_mean_expands),
	 cmocka_unit_test(test_variance_expands),
	 cmocka_unit_test(test_attention_expands),
	 cmocka_unit_test(test_mixed_graph_expands),
	 cmocka_unit_test(test_open_compounds_decides_each),
	 cmocka_unit_test(test_expansion_names_avoid_user_names),
	 cmocka_unit_test(test_expansion_keeps_origin),
	 cmocka_unit_test(test_expansion_without_compounds),
	 cmocka_unit_test(test_expansion_errors),
	 cmocka_unit_test(test_loader_reports_compound_errors));
