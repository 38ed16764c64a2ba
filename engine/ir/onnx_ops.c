/* ONNX import: the per-operator mapping table (onnx_import_impl.h).
 *
 * Contract: each mapping turns the node being imported (default domain,
 * opsets 7 to 18, attributes read as the node's opset defines them) into
 * ops of the op library, emitted through fl_onnx_emit so that they carry
 * the node's provenance and have their shapes inferred at once, and binds
 * the node's outputs (output 0; an optional extra output a mapping
 * does not compute is left unbound, and onnx_import.c makes a node whose
 * unbound output is read opaque as a whole).  The normalisations and
 * Dropout are mapped in onnx_norm.c, the convolutions and pools in
 * onnx_sliding.c.  Inputs that
 * must be known at import (shapes, axes, pads, ...) are read with
 * fl_onnx_input_ints; an op type missing here becomes a `custom` op in
 * onnx_import.c, and so does a node whose mapping finds a form it cannot
 * model (an attribute value: fl_onnx_cannot_model, before emitting).
 * Pad's reflect and edge modes are built in onnx_pad.c. */
#include "onnx_import_impl.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT 0		/* emit into the node's output 0 */
#define TMP (-1)	/* emit into a new intermediate */

static int emit_scalar_op(fl_onnx_ctx *c, fl_op_kind kind, int x, float v,
			  int out, fl_error *err)
{
	int s = fl_onnx_scalar(c, v, err);
	fl_dtype dt = c->g->tensors[x].dtype;

	/* the constant in x's type: ops take operands of one dtype */
	if (s < 0 || (dt != FL_F32 &&
		      fl_tensor_convert_const(&c->g->tensors[s], dt, err) < 0))
		return -1;
	return fl_onnx_emit2(c, kind, x, s, out, err);
}

static int tensor_rank(const fl_onnx_ctx *c, int t)
{
	return c->g->tensors[t].shape.rank;
}

static const fl_shape *shape_of(const fl_onnx_ctx *c, int t)
{
	return &c->g->tensors[t].shape;
}

/* --- elementwise --- */

static const struct {
	const char *op_type;
	fl_op_kind kind;
} unaries[] = {
	{"Neg", FL_OP_NEG}, {"Abs", FL_OP_ABS}, {"Sqrt", FL_OP_SQRT},
	{"Reciprocal", FL_OP_RECIP}, {"Exp", FL_OP_EXP}, {"Log", FL_OP_LOG},
	{"Tanh", FL_OP_TANH}, {"Sigmoid", FL_OP_SIGMOID}, {"Relu", FL_OP_RELU},
	{"Erf", FL_OP_ERF}, {"Identity", FL_OP_COPY},
	{"Round", FL_OP_ROUND},	/* both round half to even */
	{"Sin", FL_OP_SIN}, {"Cos", FL_OP_COS}, {"Tan", FL_OP_TAN},
	{"Asin", FL_OP_ASIN}, {"Acos", FL_OP_ACOS}, {"Atan", FL_OP_ATAN},
	{"Sinh", FL_OP_SINH}, {"Cosh", FL_OP_COSH}, {"Asinh", FL_OP_ASINH},
	{"Acosh", FL_OP_ACOSH}, {"Atanh", FL_OP_ATANH},
	{"Floor", FL_OP_FLOOR}, {"Ceil", FL_OP_CEIL}, {"Sign", FL_OP_SIGN},
	{"Not", FL_OP_NOT},
}, binaries[] = {
	{"Equal", FL_OP_EQUAL}, {"Less", FL_OP_LESS},
	{"LessOrEqual", FL_OP_LESS_EQUAL}, {"Greater", FL_OP_GREATER},
	{"GreaterOrEqual", FL_OP_GREATER_EQUAL}, {"And", FL_OP_AND},
	{"Or", FL_OP_OR}, {"Xor", FL_OP_XOR},
	{"Add", FL_OP_ADD}, {"Sub", FL_OP_SUB}, {"Mul", FL_OP_MUL},
	{"Div", FL_OP_DIV}, {"Pow", FL_OP_POW}, {"Max", FL_OP_MAX},
	{"Min", FL_OP_MIN}, {"Sum", FL_OP_ADD}, {"Mean", FL_OP_ADD},
};

static fl_op_kind kind_of(const char *t, bool unary)
{
	size_t n = unary ? sizeof unaries / sizeof unaries[0]
			 : sizeof binaries / sizeof binaries[0];

	for (size_t k = 0; k < n; k++)
		if (unary ? !strcmp(t, unaries[k].op_type)
			  : !strcmp(t, binaries[k].op_type))
			return unary ? unaries[k].kind : binaries[k].kind;
	return FL_OP_COUNT;
}

static int map_unary(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err);

	if (x < 0)
		return -1;
	return fl_onnx_emit1(c, kind_of(c->node->op_type, true), x, OUT,
			     err) < 0 ? -1 : 0;
}

/* Before opset 7, Add, Sub, Mul, Div and Pow broadcast only when
 * "broadcast" is 1, aligning b's dims with a's from "axis" (default: the
 * trailing dims, numpy's rule).  b gets trailing unit dims so that numpy
 * broadcasting aligns it the same way. */
static int legacy_broadcast(fl_onnx_ctx *c, int a, int b, fl_error *err)
{
	const fl_shape *sa = shape_of(c, a);
	fl_shape s = *shape_of(c, b);
	int axis;

	if (c->opset >= 7 || !fl_onnx_attr_int(c, "broadcast", 0) ||
	    !fl_onnx_attr(c, "axis"))
		return b;
	axis = fl_axis_normalize(fl_onnx_attr_int(c, "axis", 0), sa->rank);
	if (axis < 0 || axis + s.rank > sa->rank) {
		fl_error_set(err, "attribute axis: b does not fit a from "
			     "there");
		return -1;
	}
	while (axis + s.rank < sa->rank)
		s.dim[s.rank++] = 1;
	return fl_onnx_reshape(c, b, &s, TMP, err);
}

/* Binary ops, and the variadic Max, Min, Sum, Mean folded left. */
static int map_binary(fl_onnx_ctx *c, fl_error *err)
{
	fl_op_kind kind = kind_of(c->node->op_type, false);
	int n = fl_onnx_n_inputs(c), acc = fl_onnx_data(c, 0, err);
	bool mean = !strcmp(c->node->op_type, "Mean");

	if (acc < 0)
		return -1;
	if (n == 1)
		return fl_onnx_emit1(c, FL_OP_COPY, acc, OUT, err) < 0 ? -1 : 0;
	for (int k = 1; k < n; k++) {
		int b = fl_onnx_data(c, k, err);

		if (b < 0 || (n == 2 && (b = legacy_broadcast(c, acc, b,
							       err)) < 0))
			return -1;
		acc = fl_onnx_emit2(c, kind, acc, b,
				    k == n - 1 && !mean ? OUT : TMP, err);
		if (acc < 0)
			return -1;
	}
	if (mean && emit_scalar_op(c, FL_OP_DIV, acc, (float)n, OUT, err) < 0)
		return -1;
	return 0;
}

/* x cast to dtype dt (x itself when it has that type already). */
static int cast_to(fl_onnx_ctx *c, int x, fl_dtype dt, int out,
		   fl_error *err)
{
	fl_attrs a = {0};

	if (c->g->tensors[x].dtype == dt && out == TMP)
		return x;
	if (fl_attrs_set_string(&a, "dtype", fl_dtype_name(dt)) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_CAST, &x, 1, &a, out, err);
}

/* Pow, whose exponent may have another type than its base: computed in
 * f32, an integer base's result rounded and cast back to its type (the
 * powers ONNX's integer Pow gives stay exact up to 2^24). */
static int map_pow(fl_onnx_ctx *c, fl_error *err)
{
	int a = fl_onnx_data(c, 0, err), b = fl_onnx_data(c, 1, err), y;
	fl_dtype dt;

	if (a < 0 || b < 0 || (b = legacy_broadcast(c, a, b, err)) < 0)
		return -1;
	dt = c->g->tensors[a].dtype;
	if ((a = cast_to(c, a, FL_F32, TMP, err)) < 0 ||
	    (b = cast_to(c, b, FL_F32, TMP, err)) < 0)
		return -1;
	if (dt == FL_F32)
		return fl_onnx_emit2(c, FL_OP_POW, a, b, OUT, err) < 0 ? -1 : 0;
	if ((y = fl_onnx_emit2(c, FL_OP_POW, a, b, TMP, err)) < 0 ||
	    (y = fl_onnx_emit1(c, FL_OP_ROUND, y, TMP, err)) < 0)
		return -1;
	return cast_to(c, y, dt, OUT, err) < 0 ? -1 : 0;
}

static int map_where(fl_onnx_ctx *c, fl_error *err)
{
	int in[3] = {fl_onnx_data_any(c, 0, err), -1, -1};

	if (in[0] < 0 || (in[1] = fl_onnx_data(c, 1, err)) < 0 ||
	    (in[2] = fl_onnx_data(c, 2, err)) < 0)
		return -1;
	return fl_onnx_emit(c, FL_OP_WHERE, in, 3, NULL, OUT, err) < 0 ? -1 : 0;
}

static int map_leaky_relu(fl_onnx_ctx *c, fl_error *err)
{
	fl_attrs a = {0};
	int x = fl_onnx_data(c, 0, err);

	if (x < 0)
		return -1;
	if (fl_attrs_set_number(&a, "alpha",
				fl_onnx_attr_float(c, "alpha", 0.01f)) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_LEAKY_RELU, &x, 1, &a, OUT, err) < 0 ? -1
									 : 0;
}

/* Elu, HardSigmoid, HardSwish: the compound ops of the same names, with
 * ONNX's attributes and defaults. */
static int map_activation(fl_onnx_ctx *c, fl_error *err)
{
	const char *t = c->node->op_type;
	fl_op_kind kind = !strcmp(t, "Elu") ? FL_OP_ELU
			  : !strcmp(t, "HardSigmoid") ? FL_OP_HARD_SIGMOID
						      : FL_OP_HARD_SWISH;
	int x = fl_onnx_data(c, 0, err);
	fl_attrs a = {0};
	int rc = 0;

	if (x < 0)
		return -1;
	if (kind == FL_OP_ELU)
		rc = fl_attrs_set_number(&a, "alpha",
					 fl_onnx_attr_float(c, "alpha", 1.0f));
	else if (kind == FL_OP_HARD_SIGMOID)
		rc = fl_attrs_set_number(&a, "alpha",
					 fl_onnx_attr_float(c, "alpha", 0.2f)) |
		     fl_attrs_set_number(&a, "beta",
					 fl_onnx_attr_float(c, "beta", 0.5f));
	if (rc < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, kind, &x, 1, &a, OUT, err) < 0 ? -1 : 0;
}

/* Softplus log(1 + e^x), Softsign x / (1 + |x|), Mish x tanh(softplus x),
 * Selu gamma * elu(x, alpha): from primitives and the elu compound. */
static int map_soft_activation(fl_onnx_ctx *c, fl_error *err)
{
	const char *t = c->node->op_type;
	int x = fl_onnx_data(c, 0, err), y;
	fl_attrs a = {0};

	if (x < 0)
		return -1;
	if (!strcmp(t, "Selu")) {
		if (fl_attrs_set_number(&a, "alpha", fl_onnx_attr_float(
				c, "alpha", 1.67326319217681884765625f)) < 0) {
			fl_attrs_free(&a);
			return fl_onnx_oom(err);
		}
		if ((y = fl_onnx_emit_attrs(c, FL_OP_ELU, &x, 1, &a, TMP, err)) < 0)
			return -1;
		return emit_scalar_op(c, FL_OP_MUL, y, fl_onnx_attr_float(
				c, "gamma", 1.05070102214813232421875f), OUT,
				err) < 0 ? -1 : 0;
	}
	if (!strcmp(t, "Softsign")) {
		if ((y = fl_onnx_emit1(c, FL_OP_ABS, x, TMP, err)) < 0 ||
		    (y = emit_scalar_op(c, FL_OP_ADD, y, 1.0f, TMP, err)) < 0)
			return -1;
		return fl_onnx_emit2(c, FL_OP_DIV, x, y, OUT, err) < 0 ? -1 : 0;
	}
	/* softplus, stably: relu(x) + log(1 + e^-|x|) */
	if ((y = fl_onnx_emit1(c, FL_OP_ABS, x, TMP, err)) < 0 ||
	    (y = fl_onnx_emit1(c, FL_OP_NEG, y, TMP, err)) < 0 ||
	    (y = fl_onnx_emit1(c, FL_OP_EXP, y, TMP, err)) < 0 ||
	    (y = emit_scalar_op(c, FL_OP_ADD, y, 1.0f, TMP, err)) < 0 ||
	    (y = fl_onnx_emit1(c, FL_OP_LOG, y, TMP, err)) < 0)
		return -1;
	{
		int r = fl_onnx_emit1(c, FL_OP_RELU, x, TMP, err);
		bool mish = !strcmp(t, "Mish");

		if (r < 0 || (y = fl_onnx_emit2(c, FL_OP_ADD, r, y,
						mish ? TMP : OUT, err)) < 0)
			return -1;
		if (!mish)
			return 0;
	}
	if ((y = fl_onnx_emit1(c, FL_OP_TANH, y, TMP, err)) < 0)
		return -1;
	return fl_onnx_emit2(c, FL_OP_MUL, x, y, OUT, err) < 0 ? -1 : 0;
}

/* Before opset 7 a 1-D slope as long as x's channel dim (dim 1) is per
 * channel, as PyTorch's PReLU(num_parameters=C) exports it: [C] becomes
 * [C, 1, ...] for numpy's rule. */
static int legacy_channel_slope(fl_onnx_ctx *c, int x, int slope,
				fl_error *err)
{
	const fl_shape *sx = &c->g->tensors[x].shape;
	const fl_shape *ss = &c->g->tensors[slope].shape;
	fl_shape s;

	if (c->opset >= 7 || ss->rank != 1 || sx->rank < 3 ||
	    ss->dim[0] != sx->dim[1] || ss->dim[0] == 1)
		return slope;
	s.rank = sx->rank - 1;
	s.dim[0] = ss->dim[0];
	for (int d = 1; d < s.rank; d++)
		s.dim[d] = 1;
	return fl_onnx_reshape(c, slope, &s, TMP, err);
}

/* PRelu: relu(x) + slope * min(x, 0), slope broadcasting to x. */
static int map_prelu(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), slope, pos, neg;

	if (x < 0 || (slope = fl_onnx_data(c, 1, err)) < 0 ||
	    (slope = legacy_channel_slope(c, x, slope, err)) < 0 ||
	    (pos = fl_onnx_emit1(c, FL_OP_RELU, x, TMP, err)) < 0 ||
	    (neg = emit_scalar_op(c, FL_OP_MIN, x, 0.0f, TMP, err)) < 0 ||
	    (neg = fl_onnx_emit2(c, FL_OP_MUL, neg, slope, TMP, err)) < 0)
		return -1;
	return fl_onnx_emit2(c, FL_OP_ADD, pos, neg, OUT, err) < 0 ? -1 : 0;
}

/* Clip's bound `which` (1 min, 2 max): an attribute before opset 11, an
 * optional input from 11 on.  -1 when there is none. */
static int clip_bound(fl_onnx_ctx *c, int which, fl_error *err)
{
	const char *name = which == 1 ? "min" : "max";

	if (c->opset < 11)
		return fl_onnx_attr(c, name)
			? fl_onnx_scalar(c, fl_onnx_attr_float(c, name, 0), err)
			: -2;
	if (!fl_onnx_has_input(c, which))
		return -2;
	return fl_onnx_data(c, which, err);
}

static int map_clip(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), lo, hi;

	if (x < 0 || (lo = clip_bound(c, 1, err)) == -1 ||
	    (hi = clip_bound(c, 2, err)) == -1)
		return -1;
	if (lo < 0 && hi < 0)
		return fl_onnx_emit1(c, FL_OP_COPY, x, OUT, err) < 0 ? -1 : 0;
	if (lo >= 0 && (x = fl_onnx_emit2(c, FL_OP_MAX, x, lo,
					  hi >= 0 ? TMP : OUT, err)) < 0)
		return -1;
	if (hi >= 0 && fl_onnx_emit2(c, FL_OP_MIN, x, hi, OUT, err) < 0)
		return -1;
	return 0;
}

static int map_gelu(fl_onnx_ctx *c, fl_error *err)
{
	char buf[16];
	fl_attrs a = {0};
	int x = fl_onnx_data(c, 0, err);

	if (x < 0)
		return -1;
	if (fl_attrs_set_string(&a, "approximate",
				fl_onnx_attr_string(c, "approximate", "none",
						    buf, sizeof buf)) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_GELU, &x, 1, &a, OUT, err) < 0 ? -1 : 0;
}

/* Cast between fuselab's element types (docs/types.md): float (and
 * double) to float is a copy, anything else fuselab's cast (to float16
 * and bfloat16 rounding to nearest even); strings, complex numbers and
 * the 8-bit floats are refused. */
static int map_cast(fl_onnx_ctx *c, fl_error *err)
{
	return fl_onnx_cast_node(c, (int)fl_onnx_attr_int(c, "to", 0), err);
}

int fl_onnx_cast_node(fl_onnx_ctx *c, int to, fl_error *err)
{
	int dt = fl_onnx_to_dtype(to), x;
	fl_onnx_binding *b = fl_onnx_input(c, 0, err);
	fl_attrs a = {0};

	if (!b)
		return -1;
	if (dt < 0) {
		fl_error_set(err, "Cast to %s is not supported (fuselab's "
			     "element types: float, float16, bfloat16, bool "
			     "and the 8-, 16-, 32- and 64-bit integers)",
			     fl_onnx_dtype_name(to));
		return -1;
	}
	x = fl_onnx_data(c, 0, err);
	if (x < 0)
		return -1;
	if (c->g->tensors[x].dtype == (fl_dtype)dt)
		return fl_onnx_emit1(c, FL_OP_COPY, x, OUT, err) < 0 ? -1 : 0;
	if (fl_attrs_set_string(&a, "dtype", fl_dtype_name((fl_dtype)dt)) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_CAST, &x, 1, &a, OUT, err) < 0 ? -1 : 0;
}

/* --- matmul family --- */

int fl_onnx_emit_matmul(fl_onnx_ctx *c, int a, int b, int out, fl_error *err)
{
	fl_shape sa, sb, sy;
	int y;

	if (a < 0 || b < 0)
		return -1;
	sa = *shape_of(c, a);
	sb = *shape_of(c, b);
	if (sa.rank == 1 || sb.rank == 1) {
		/* numpy: a vector gets a unit dim, which the result drops */
		int64_t one = 1;
		fl_shape va = sa, vb = sb;

		if (sa.rank == 1)
			va = fl_shape_make(2, (int64_t[]){one, sa.dim[0]});
		if (sb.rank == 1)
			vb = fl_shape_make(2, (int64_t[]){sb.dim[0], one});
		if ((sa.rank == 1 && (a = fl_onnx_reshape(c, a, &va, TMP,
							   err)) < 0) ||
		    (sb.rank == 1 && (b = fl_onnx_reshape(c, b, &vb, TMP,
							   err)) < 0) ||
		    (y = fl_onnx_emit2(c, FL_OP_MATMUL, a, b, TMP, err)) < 0)
			return -1;
		sy = *shape_of(c, y);
		if (sb.rank == 1)
			sy.rank--;
		if (sa.rank == 1) {
			sy.dim[sy.rank - (sb.rank == 1 ? 1 : 2)] =
				sy.dim[sy.rank - (sb.rank == 1 ? 0 : 1)];
			sy.rank--;
		}
		return fl_onnx_reshape(c, y, &sy, out, err);
	}
	return fl_onnx_emit2(c, FL_OP_MATMUL, a, b, out, err);
}

static int map_matmul(fl_onnx_ctx *c, fl_error *err)
{
	int a = fl_onnx_data(c, 0, err), b = a < 0 ? -1 : fl_onnx_data(c, 1, err);

	return fl_onnx_emit_matmul(c, a, b, OUT, err) < 0 ? -1 : 0;
}

int fl_onnx_emit_trans_matmul(fl_onnx_ctx *c, const int *in, int out,
			      fl_error *err)
{
	fl_attrs a = {0};

	if (fl_attrs_set_bool(&a, "transpose_a",
			      fl_onnx_attr_int(c, "transA", 0) != 0) < 0 ||
	    fl_attrs_set_bool(&a, "transpose_b",
			      fl_onnx_attr_int(c, "transB", 0) != 0) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_MATMUL, in, 2, &a, out, err);
}

/* alpha * A' B' + beta * C. */
static int map_gemm(fl_onnx_ctx *c, fl_error *err)
{
	float alpha = fl_onnx_attr_float(c, "alpha", 1.0f);
	float beta = fl_onnx_attr_float(c, "beta", 1.0f);
	bool has_c = fl_onnx_has_input(c, 2);
	int in[2], y, bias;

	if ((in[0] = fl_onnx_data(c, 0, err)) < 0 ||
	    (in[1] = fl_onnx_data(c, 1, err)) < 0)
		return -1;
	y = fl_onnx_emit_trans_matmul(c, in, alpha == 1.0f && !has_c ? OUT : TMP,
				      err);
	if (y < 0)
		return -1;
	if (alpha != 1.0f &&
	    (y = emit_scalar_op(c, FL_OP_MUL, y, alpha, has_c ? TMP : OUT,
				err)) < 0)
		return -1;
	if (!has_c)
		return 0;
	if ((bias = fl_onnx_data(c, 2, err)) < 0 ||
	    (beta != 1.0f &&
	     (bias = emit_scalar_op(c, FL_OP_MUL, bias, beta, TMP, err)) < 0))
		return -1;
	return fl_onnx_emit2(c, FL_OP_ADD, y, bias, OUT, err) < 0 ? -1 : 0;
}

/* --- softmax --- */

/* Softmax, LogSoftmax.  From opset 13 along "axis" (default -1); before,
 * over the input coerced to 2-D at "axis" (default 1): every dim from
 * axis on is one row. */
static int map_softmax(fl_onnx_ctx *c, fl_error *err)
{
	fl_op_kind kind = !strcmp(c->node->op_type, "Softmax")
			  ? FL_OP_SOFTMAX : FL_OP_LOG_SOFTMAX;
	int x = fl_onnx_data(c, 0, err), axis, y;
	fl_shape s, rows;
	fl_attrs a = {0};

	if (x < 0)
		return -1;
	s = *shape_of(c, x);
	axis = fl_axis_normalize(fl_onnx_attr_int(c, "axis",
						  c->opset < 13 ? 1 : -1),
				 s.rank);
	if (axis < 0) {
		fl_error_set(err, "attribute axis: out of range");
		return -1;
	}
	if (c->opset >= 13 || axis == s.rank - 1) {
		if (fl_attrs_set_number(&a, "axis", axis) < 0) {
			fl_attrs_free(&a);
			return fl_onnx_oom(err);
		}
		return fl_onnx_emit_attrs(c, kind, &x, 1, &a, OUT, err) < 0 ? -1 : 0;
	}
	rows = fl_shape_make(2, (int64_t[]){1, 1});
	for (int d = 0; d < s.rank; d++)
		rows.dim[d >= axis] *= s.dim[d];
	if ((x = fl_onnx_reshape(c, x, &rows, TMP, err)) < 0 ||
	    (y = fl_onnx_emit1(c, kind, x, TMP, err)) < 0)
		return -1;
	return fl_onnx_reshape(c, y, &s, OUT, err) < 0 ? -1 : 0;
}

/* --- reductions --- */

/* The axes of a reduction: an attribute, or from opset 13 (ReduceSum)
 * or 18 (the others) an optional input.  *n = 0 means all axes, unless
 * noop_with_empty_axes asks for no reduction (*noop). */
static int reduce_axes(fl_onnx_ctx *c, int rank, int64_t *axes, int *n,
		       bool *noop, fl_error *err)
{
	bool sum = !strcmp(c->node->op_type, "ReduceSum");	/* 13, not 18 */
	bool as_input = c->opset >= (sum ? 13 : 18);

	*noop = false;
	if (!as_input) {
		if (fl_onnx_attr_ints(c, "axes", axes, FL_MAX_RANK, n, err) < 0)
			return -1;
	} else if (fl_onnx_has_input(c, 1)) {
		if (fl_onnx_input_ints(c, 1, axes, FL_MAX_RANK, n, err) < 0)
			return -1;
	} else {
		*n = -1;
	}
	if (*n <= 0) {
		*noop = as_input &&
			fl_onnx_attr_int(c, "noop_with_empty_axes", 0);
		*n = 0;
		for (int d = 0; d < rank; d++)
			axes[(*n)++] = d;
	}
	for (int k = 0; k < *n; k++)
		if ((axes[k] = fl_axis_normalize(axes[k], rank)) < 0) {
			fl_error_set(err, "axes: out of range");
			return -1;
		}
	return 0;
}

static int map_reduce(fl_onnx_ctx *c, fl_error *err)
{
	/* each: an elementwise op before, the reduction, one after */
	static const struct {
		const char *t;
		fl_op_kind pre, kind, post;
	} kinds[] = {
		{"ReduceSum", FL_OP_COUNT, FL_OP_REDUCE_SUM, FL_OP_COUNT},
		{"ReduceMean", FL_OP_COUNT, FL_OP_REDUCE_MEAN, FL_OP_COUNT},
		{"ReduceMax", FL_OP_COUNT, FL_OP_REDUCE_MAX, FL_OP_COUNT},
		{"ReduceMin", FL_OP_COUNT, FL_OP_REDUCE_MIN, FL_OP_COUNT},
		{"ReduceProd", FL_OP_COUNT, FL_OP_REDUCE_PROD, FL_OP_COUNT},
		{"ReduceSumSquare", FL_OP_SQUARE, FL_OP_REDUCE_SUM,
		 FL_OP_COUNT},
		{"ReduceL1", FL_OP_ABS, FL_OP_REDUCE_SUM, FL_OP_COUNT},
		{"ReduceL2", FL_OP_SQUARE, FL_OP_REDUCE_SUM, FL_OP_SQRT},
		{"ReduceLogSum", FL_OP_COUNT, FL_OP_REDUCE_SUM, FL_OP_LOG},
		{"ReduceLogSumExp", FL_OP_EXP, FL_OP_REDUCE_SUM, FL_OP_LOG},
	};
	int x = fl_onnx_data(c, 0, err), n, y, r = 0;
	bool keep = fl_onnx_attr_int(c, "keepdims", 1) != 0, noop, last;
	int64_t axes[FL_MAX_RANK];
	fl_shape s;

	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
		if (!strcmp(c->node->op_type, kinds[k].t))
			r = (int)k;
	if (x < 0 ||
	    reduce_axes(c, tensor_rank(c, x), axes, &n, &noop, err) < 0)
		return -1;
	if (noop)
		return fl_onnx_emit1(c, FL_OP_COPY, x, OUT, err) < 0 ? -1 : 0;
	if (kinds[r].pre != FL_OP_COUNT &&
	    (x = fl_onnx_emit1(c, kinds[r].pre, x, TMP, err)) < 0)
		return -1;
	last = keep && kinds[r].post == FL_OP_COUNT;
	y = fl_onnx_emit_ints(c, kinds[r].kind, x, "axes", axes, n, last ? OUT : TMP,
		      err);
	if (y >= 0 && kinds[r].post != FL_OP_COUNT)
		y = fl_onnx_emit1(c, kinds[r].post, y, keep ? OUT : TMP, err);
	if (y < 0 || keep)
		return y < 0 ? -1 : 0;
	/* keepdims 0: the reduced dims go */
	s = *shape_of(c, y);
	s.rank = 0;
	for (int d = 0; d < shape_of(c, y)->rank; d++) {
		bool reduced = false;

		for (int k = 0; k < n; k++)
			reduced |= axes[k] == d;
		if (!reduced)
			s.dim[s.rank++] = shape_of(c, y)->dim[d];
	}
	return fl_onnx_reshape(c, y, &s, OUT, err) < 0 ? -1 : 0;
}

/* --- shapes and data movement --- */

bool fl_onnx_is_reshape_family(const char *t)
{
	return !strcmp(t, "Reshape") || !strcmp(t, "Flatten") ||
	       !strcmp(t, "Squeeze") || !strcmp(t, "Unsqueeze") ||
	       !strcmp(t, "Identity");
}

static int reshape_target(fl_onnx_ctx *c, const fl_shape *in, fl_shape *out,
			  fl_error *err)
{
	bool allow_zero = fl_onnx_attr_int(c, "allowzero", 0) != 0;
	int64_t dims[FL_MAX_RANK], known = 1, total = fl_shape_numel(in);
	int n, infer = -1;

	if (c->opset < 5) {	/* Reshape-1: the shape is an attribute */
		if (fl_onnx_attr_ints(c, "shape", dims, FL_MAX_RANK, &n,
				      err) < 0)
			return -1;
		if (n < 0) {
			fl_error_set(err, "attribute shape: missing");
			return -1;
		}
	} else if (fl_onnx_input_ints(c, 1, dims, FL_MAX_RANK, &n, err) < 0) {
		return -1;
	}
	for (int d = 0; d < n; d++) {
		if (dims[d] == 0 && !allow_zero && d < in->rank)
			dims[d] = in->dim[d];
		if (dims[d] == -1 && infer < 0) {
			infer = d;
			continue;
		}
		if (dims[d] < 1) {
			fl_error_set(err, "shape[%d] is %lld", d,
				     (long long)dims[d]);
			return -1;
		}
		if (known > INT64_MAX / dims[d]) {
			fl_error_set(err, "shape [..., %lld, ...] has more "
				     "elements than a 64-bit count holds",
				     (long long)dims[d]);
			return -1;
		}
		known *= dims[d];
	}
	if (infer >= 0)
		dims[infer] = known > 0 && total % known == 0 ? total / known
							      : -1;
	*out = fl_shape_make(n, dims);
	if ((infer >= 0 && dims[infer] < 1) || fl_shape_numel(out) != total) {
		char a[128];

		fl_error_set(err, "cannot reshape %s to %d dims with %lld "
			     "elements", fl_shape_format(in, a, sizeof a), n,
			     (long long)fl_shape_numel(out));
		return -1;
	}
	return 0;
}

static int axes_of(fl_onnx_ctx *c, int64_t *axes, int *n, fl_error *err)
{
	if (c->opset < 13)
		return fl_onnx_attr_ints(c, "axes", axes, FL_MAX_RANK, n, err);
	*n = -1;
	if (!fl_onnx_has_input(c, 1))
		return 0;
	return fl_onnx_input_ints(c, 1, axes, FL_MAX_RANK, n, err);
}

static int squeeze_target(fl_onnx_ctx *c, const fl_shape *in, fl_shape *out,
			  fl_error *err)
{
	int64_t axes[FL_MAX_RANK];
	bool drop[FL_MAX_RANK] = {false};
	int n;

	if (axes_of(c, axes, &n, err) < 0)
		return -1;
	for (int d = 0; d < in->rank; d++)
		drop[d] = n < 0 && in->dim[d] == 1;
	for (int k = 0; k < n; k++) {
		int d = fl_axis_normalize(axes[k], in->rank);

		if (d < 0 || in->dim[d] != 1) {
			fl_error_set(err, "axes[%d]: not an axis of extent 1",
				     k);
			return -1;
		}
		drop[d] = true;
	}
	out->rank = 0;
	for (int d = 0; d < in->rank; d++)
		if (!drop[d])
			out->dim[out->rank++] = in->dim[d];
	return 0;
}

static int unsqueeze_target(fl_onnx_ctx *c, const fl_shape *in, fl_shape *out,
			    fl_error *err)
{
	int64_t axes[FL_MAX_RANK];
	bool unit[FL_MAX_RANK] = {false};
	int n, r, src = 0;

	if (axes_of(c, axes, &n, err) < 0)
		return -1;
	r = in->rank + (n > 0 ? n : 0);
	if (n <= 0 || r > FL_MAX_RANK) {
		fl_error_set(err, "axes: missing, or rank above %d",
			     FL_MAX_RANK);
		return -1;
	}
	for (int k = 0; k < n; k++) {
		int d = fl_axis_normalize(axes[k], r);

		if (d < 0 || unit[d]) {
			fl_error_set(err, "axes[%d]: out of range or repeated",
				     k);
			return -1;
		}
		unit[d] = true;
	}
	out->rank = r;
	for (int d = 0; d < r; d++)
		out->dim[d] = unit[d] ? 1 : in->dim[src++];
	return 0;
}

int fl_onnx_reshape_target(fl_onnx_ctx *c, const fl_shape *in, fl_shape *out,
			   fl_error *err)
{
	const char *t = c->node->op_type;

	if (!strcmp(t, "Reshape"))
		return reshape_target(c, in, out, err);
	if (!strcmp(t, "Squeeze"))
		return squeeze_target(c, in, out, err);
	if (!strcmp(t, "Unsqueeze"))
		return unsqueeze_target(c, in, out, err);
	if (!strcmp(t, "Flatten")) {
		int axis = (int)fl_onnx_attr_int(c, "axis", 1);

		if (axis < 0)
			axis += in->rank;
		if (axis < 0 || axis > in->rank) {
			fl_error_set(err, "attribute axis: out of range");
			return -1;
		}
		*out = fl_shape_make(2, (int64_t[]){1, 1});
		for (int d = 0; d < in->rank; d++)
			out->dim[d >= axis] *= in->dim[d];
		return 0;
	}
	*out = *in;
	return 0;
}

static int map_reshape_family(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err);
	fl_shape s;

	if (x < 0 || fl_onnx_reshape_target(c, shape_of(c, x), &s, err) < 0)
		return -1;
	return fl_onnx_reshape(c, x, &s, OUT, err) < 0 ? -1 : 0;
}

static int map_transpose(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), n;
	int64_t perm[FL_MAX_RANK];

	if (x < 0 || fl_onnx_attr_ints(c, "perm", perm, FL_MAX_RANK, &n,
				       err) < 0)
		return -1;
	if (n < 0)
		for (n = 0; n < tensor_rank(c, x); n++)
			perm[n] = tensor_rank(c, x) - 1 - n;
	return fl_onnx_emit_ints(c, FL_OP_TRANSPOSE, x, "perm", perm, n, OUT,
			 err) < 0 ? -1 : 0;
}

static int map_concat(fl_onnx_ctx *c, fl_error *err)
{
	int n = fl_onnx_n_inputs(c), *in = malloc((size_t)(n + 1) * sizeof *in);
	fl_attrs a = {0};
	int rc = -1;

	if (!in)
		return fl_onnx_oom(err);
	for (int k = 0; k < n; k++)
		if ((in[k] = fl_onnx_data(c, k, err)) < 0)
			goto out;
	if (fl_attrs_set_number(&a, "axis",
				(double)fl_onnx_attr_int(c, "axis", 0)) < 0) {
		fl_attrs_free(&a);
		fl_onnx_oom(err);
		goto out;
	}
	rc = fl_onnx_emit_attrs(c, FL_OP_CONCAT, in, n, &a, OUT, err) < 0 ? -1 : 0;
out:
	free(in);
	return rc;
}

/* Slice's parameters: attributes before opset 10, inputs from 10 on. */
static int slice_params(fl_onnx_ctx *c, int64_t *st, int64_t *en,
			int64_t *ax, int64_t *sp, int *n, fl_error *err)
{
	const int R = FL_MAX_RANK;
	int n_en, n_ax = -1, n_sp = -1;

	if (c->opset < 10) {
		if (fl_onnx_attr_ints(c, "starts", st, R, n, err) < 0 ||
		    fl_onnx_attr_ints(c, "ends", en, R, &n_en, err) < 0 ||
		    fl_onnx_attr_ints(c, "axes", ax, R, &n_ax, err) < 0)
			return -1;
	} else if (fl_onnx_input_ints(c, 1, st, R, n, err) < 0 ||
		   fl_onnx_input_ints(c, 2, en, R, &n_en, err) < 0 ||
		   (fl_onnx_has_input(c, 3) &&
		    fl_onnx_input_ints(c, 3, ax, R, &n_ax, err) < 0) ||
		   (fl_onnx_has_input(c, 4) &&
		    fl_onnx_input_ints(c, 4, sp, R, &n_sp, err) < 0)) {
		return -1;
	}
	if (*n < 0 || n_en != *n || (n_ax >= 0 && n_ax != *n) ||
	    (n_sp >= 0 && n_sp != *n)) {
		fl_error_set(err, "starts, ends, axes and steps must have the "
			     "same length");
		return -1;
	}
	for (int k = 0; k < *n; k++) {
		if (n_ax < 0)
			ax[k] = k;
		if (n_sp < 0)
			sp[k] = 1;
	}
	return 0;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

int fl_onnx_slice_box(fl_onnx_ctx *c, const fl_shape *in, int64_t *start,
		      int64_t *step, fl_shape *out, fl_error *err)
{
	int64_t st[FL_MAX_RANK], en[FL_MAX_RANK], ax[FL_MAX_RANK],
		sp[FL_MAX_RANK];
	int n;

	if (slice_params(c, st, en, ax, sp, &n, err) < 0)
		return -1;
	*out = *in;
	for (int d = 0; d < in->rank; d++)
		start[d] = 0, step[d] = 1;
	for (int k = 0; k < n; k++) {
		int d = fl_axis_normalize(ax[k], in->rank);
		int64_t dim, s, e;

		if (d < 0 || sp[k] == 0) {
			fl_error_set(err, "axes[%d] out of range or step 0", k);
			return -1;
		}
		dim = in->dim[d];
		s = st[k] < 0 ? st[k] + dim : st[k];
		e = en[k] < 0 && en[k] > INT64_MIN / 2 ? en[k] + dim : en[k];
		s = sp[k] > 0 ? clamp64(s, 0, dim) : clamp64(s, 0, dim - 1);
		e = sp[k] > 0 ? clamp64(e, 0, dim) : clamp64(e, -1, dim - 1);
		start[d] = s;
		step[d] = sp[k];
		if (sp[k] > 0)
			out->dim[d] = e > s ? (e - s + sp[k] - 1) / sp[k] : 0;
		else
			out->dim[d] = s > e ? (s - e - sp[k] - 1) / -sp[k] : 0;
	}
	return 0;
}

static int map_slice(fl_onnx_ctx *c, fl_error *err)
{
	int64_t start[FL_MAX_RANK], step[FL_MAX_RANK], end[FL_MAX_RANK];
	int x = fl_onnx_data(c, 0, err);
	fl_attrs a = {0};
	fl_shape s;

	if (x < 0 || fl_onnx_slice_box(c, shape_of(c, x), start, step, &s,
				       err) < 0)
		return -1;
	for (int d = 0; d < s.rank; d++) {
		if (s.dim[d] < 1 || step[d] < 1) {
			fl_error_set(err, "an empty slice or a negative step "
				     "(dim %d) is not supported", d);
			return -1;
		}
		end[d] = start[d] + (s.dim[d] - 1) * step[d] + 1;
	}
	if (fl_attrs_set_ints(&a, "starts", start, s.rank) < 0 ||
	    fl_attrs_set_ints(&a, "ends", end, s.rank) < 0 ||
	    fl_attrs_set_ints(&a, "steps", step, s.rank) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_SLICE, &x, 1, &a, OUT, err) < 0 ? -1 : 0;
}

/* Pad's pads: an attribute before opset 11, then an input; from opset
 * 18 an optional axes input says which dims the pads are for. */
static int pad_amounts(fl_onnx_ctx *c, int rank, int64_t *pads,
		       fl_error *err)
{
	int64_t given[2 * FL_MAX_RANK], axes[FL_MAX_RANK];
	int n, n_ax = -1;

	if (c->opset < 11) {
		if (fl_onnx_attr_ints(c, "pads", given, 2 * FL_MAX_RANK, &n,
				      err) < 0)
			return -1;
	} else if (fl_onnx_input_ints(c, 1, given, 2 * FL_MAX_RANK, &n,
				      err) < 0 ||
		   (fl_onnx_has_input(c, 3) &&
		    fl_onnx_input_ints(c, 3, axes, FL_MAX_RANK, &n_ax,
				       err) < 0)) {
		return -1;
	}
	if (n_ax < 0)
		for (n_ax = 0; n_ax < rank; n_ax++)
			axes[n_ax] = n_ax;
	if (n != 2 * n_ax) {
		fl_error_set(err, "pads: %d values for %d axes", n, n_ax);
		return -1;
	}
	memset(pads, 0, 2 * (size_t)rank * sizeof *pads);
	for (int k = 0; k < n_ax; k++) {
		int d = fl_axis_normalize(axes[k], rank);

		if (d < 0 || given[k] < 0 || given[n_ax + k] < 0) {
			fl_error_set(err, "pads: bad axis or negative pad");
			return -1;
		}
		pads[d] = given[k];
		pads[rank + d] = given[n_ax + k];
	}
	return 0;
}

static int map_pad(fl_onnx_ctx *c, fl_error *err)
{
	char buf[16];
	int x = fl_onnx_data(c, 0, err), r;
	int64_t pads[2 * FL_MAX_RANK];
	const fl_onnx_values *v;
	double value = fl_onnx_attr_float(c, "value", 0.0f);
	fl_attrs a = {0};
	const char *mode = fl_onnx_attr_string(c, "mode", "constant", buf,
					       sizeof buf);

	if (strcmp(mode, "constant") && strcmp(mode, "reflect") &&
	    strcmp(mode, "edge"))
		return fl_onnx_cannot_model(c, err, "mode %s",
					    fl_error_name(mode));
	if (x < 0)
		return -1;
	r = tensor_rank(c, x);
	if (pad_amounts(c, r, pads, err) < 0)
		return -1;
	if (strcmp(mode, "constant"))	/* onnx_pad.c */
		return fl_onnx_pad_border(c, x, pads, r,
					  !strcmp(mode, "reflect"), err);
	if (c->opset >= 11 && fl_onnx_has_input(c, 2)) {
		if (!(v = fl_onnx_input_known(c, 2)) || v->n != 1) {
			if (!v)
				fl_onnx_want_known(c, 2);
			fl_error_set(err, "constant_value must be a scalar "
				     "known at import");
			return -1;
		}
		value = v->f[0];
	}
	if (fl_attrs_set_ints(&a, "pads", pads, 2 * r) < 0 ||
	    fl_attrs_set_number(&a, "value", value) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_PAD, &x, 1, &a, OUT, err) < 0 ? -1 : 0;
}

/* Indices computed at run time: where(i < 0, i + extent, i).  A bool
 * condition, not a number's truth (relu(-i)): exported, the model's
 * Where needs a bool, and ONNX Runtime has no Relu of int64. */
static int wrap_negative(fl_onnx_ctx *c, int idx, int64_t ext, fl_error *err)
{
	int in[3];

	if ((in[0] = emit_scalar_op(c, FL_OP_LESS, idx, 0.0f, TMP, err)) < 0 ||
	    (in[1] = emit_scalar_op(c, FL_OP_ADD, idx, (float)ext, TMP,
				    err)) < 0)
		return -1;
	in[2] = idx;
	return fl_onnx_emit(c, FL_OP_WHERE, in, 3, NULL, TMP, err);
}

/* An i64 const [1,..,n,..,1] (n at dim ax of rank dims) holding 0..n-1:
 * each position's index along ax, broadcast over the others. */
static int iota_along(fl_onnx_ctx *c, int rank, int ax, int64_t n,
		      fl_error *err)
{
	char base[300], name[300];
	fl_shape s = {.rank = rank};
	fl_tensor *t;
	int k;

	for (int d = 0; d < rank; d++)
		s.dim[d] = d == ax ? n : 1;
	snprintf(base, sizeof base, "%s.iota", c->origin);
	fl_onnx_unique_name(c, name, sizeof name, base, true);
	k = fl_graph_add_tensor(c->g, name, &s, FL_ROLE_CONST, err);
	if (k < 0)
		return -1;
	t = &c->g->tensors[k];
	t->dtype = FL_I64;
	t->n_data = n;
	t->ints = malloc((size_t)n * sizeof *t->ints);
	if (!t->ints)
		return fl_onnx_oom(err);
	for (int64_t i = 0; i < n; i++)
		t->ints[i] = i;
	return k;
}

/* ArgMax, ArgMin as primitives on fuselab's types (docs/types.md): the
 * extreme m along the axis, e = (x == m), and the smallest index where e
 * holds -- reduce_min(where(e, iota, n)) -- or with select_last_index
 * the largest, reduce_max(where(e, iota, -1)); an int64 result, the
 * axis dropped unless keepdims. */
static int map_arg_extreme(fl_onnx_ctx *c, fl_error *err)
{
	bool max = !strcmp(c->node->op_type, "ArgMax");
	bool last = fl_onnx_attr_int(c, "select_last_index", 0) != 0;
	int x = fl_onnx_data(c, 0, err), in[3], ax, m, r;
	int64_t axes[1], n;
	fl_shape s;

	if (x < 0)
		return -1;
	s = *shape_of(c, x);
	ax = fl_axis_normalize(fl_onnx_attr_int(c, "axis", 0), s.rank);
	if (ax < 0) {
		fl_error_set(err, "attribute axis: out of range");
		return -1;
	}
	axes[0] = ax;
	n = s.dim[ax];
	if ((m = fl_onnx_emit_ints(c, max ? FL_OP_REDUCE_MAX : FL_OP_REDUCE_MIN, x,
			   "axes", axes, 1, TMP, err)) < 0 ||
	    (in[0] = fl_onnx_emit2(c, FL_OP_EQUAL, x, m, TMP, err)) < 0 ||
	    (in[1] = iota_along(c, s.rank, ax, n, err)) < 0 ||
	    (in[2] = fl_onnx_scalar(c, last ? -1.0f : (float)n, err)) < 0 ||
	    fl_tensor_convert_const(&c->g->tensors[in[2]], FL_I64, err) < 0 ||
	    (r = fl_onnx_emit(c, FL_OP_WHERE, in, 3, NULL, TMP, err)) < 0)
		return -1;
	if (fl_onnx_attr_int(c, "keepdims", 1))
		return fl_onnx_emit_ints(c, last ? FL_OP_REDUCE_MAX : FL_OP_REDUCE_MIN,
				 r, "axes", axes, 1, OUT, err) < 0 ? -1 : 0;
	if ((r = fl_onnx_emit_ints(c, last ? FL_OP_REDUCE_MAX : FL_OP_REDUCE_MIN, r,
			   "axes", axes, 1, TMP, err)) < 0)
		return -1;
	for (int d = ax; d + 1 < s.rank; d++)
		s.dim[d] = s.dim[d + 1];
	s.rank--;
	return fl_onnx_reshape(c, r, &s, OUT, err) < 0 ? -1 : 0;
}

/* Gather; known indices are made non-negative here, since fuselab's
 * gather clamps where ONNX counts from the end. */
static int map_gather(fl_onnx_ctx *c, fl_error *err)
{
	int in[2] = {fl_onnx_data(c, 0, err), -1};
	const fl_onnx_values *idx = fl_onnx_input_known(c, 1);
	int64_t axis = fl_onnx_attr_int(c, "axis", 0), ext;
	fl_attrs a = {0};
	int ax;

	if (in[0] < 0)
		return -1;
	ax = fl_axis_normalize(axis, tensor_rank(c, in[0]));
	if (ax < 0) {
		fl_error_set(err, "attribute axis: out of range");
		return -1;
	}
	if ((in[1] = fl_onnx_data_any(c, 1, err)) < 0)
		return -1;
	ext = shape_of(c, in[0])->dim[ax];
	if (!idx && (in[1] = wrap_negative(c, in[1], ext, err)) < 0)
		return -1;
	if (idx && idx->i) {
		fl_tensor *t = &c->g->tensors[in[1]];

		for (int64_t k = 0; k < t->n_data; k++) {
			if (idx->i[k] < -ext || idx->i[k] >= ext) {
				fl_error_set(err, "index %lld outside [-%lld, "
					     "%lld)", (long long)idx->i[k],
					     (long long)ext, (long long)ext);
				return -1;
			}
			if (t->ints)
				t->ints[k] = idx->i[k] < 0 ? idx->i[k] + ext
							   : idx->i[k];
			else
				t->data[k] = (float)(idx->i[k] < 0
						     ? idx->i[k] + ext
						     : idx->i[k]);
		}
	}
	if (fl_attrs_set_number(&a, "axis", ax) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_GATHER, in, 2, &a, OUT, err) < 0 ? -1 : 0;
}

/* Expand: numpy broadcasting both ways between x and the given shape. */
static int map_expand(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), n;
	int64_t dims[FL_MAX_RANK];
	fl_shape to, s;

	if (x < 0 || fl_onnx_input_ints(c, 1, dims, FL_MAX_RANK, &n, err) < 0)
		return -1;
	to = fl_shape_make(n, dims);
	if (fl_shape_broadcast(shape_of(c, x), &to, &s, err) < 0)
		return -1;
	if (fl_shape_equal(&s, shape_of(c, x)))
		return fl_onnx_emit1(c, FL_OP_COPY, x, OUT, err) < 0 ? -1 : 0;
	return fl_onnx_emit_ints(c, FL_OP_BROADCAST_TO, x, "shape", s.dim, s.rank, OUT,
			 err) < 0 ? -1 : 0;
}

/* Split: one slice per output, along "axis"; the sizes from "split"
 * (an attribute before opset 13, then an input) or equal parts. */
static int split_sizes(fl_onnx_ctx *c, int64_t ext, int64_t *sizes,
		       fl_error *err)
{
	int n_out = (int)c->node->n_output, n = -1;
	int64_t total = 0;

	if (n_out > 64 || n_out < 1) {
		fl_error_set(err, n_out ? "more than 64 outputs"
				       : "no outputs");
		return -1;
	}
	if (c->opset < 13 ? fl_onnx_attr_ints(c, "split", sizes, 64, &n,
					      err) < 0
	    : fl_onnx_has_input(c, 1) &&
	      fl_onnx_input_ints(c, 1, sizes, 64, &n, err) < 0)
		return -1;
	if (n < 0) {
		int64_t part = (ext + n_out - 1) / n_out;

		for (n = 0; n < n_out; n++)
			sizes[n] = n == n_out - 1 ? ext - part * (n_out - 1)
						  : part;
	}
	for (int k = 0; k < n; k++)
		total += sizes[k] >= 1 ? sizes[k] : ext + 1;
	if (n != n_out || total != ext) {
		fl_error_set(err, "split sizes do not cut extent %lld into %d "
			     "parts of at least 1", (long long)ext, n_out);
		return -1;
	}
	return 0;
}

static int map_split(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), axis;
	int64_t sizes[64], start[FL_MAX_RANK], end[FL_MAX_RANK], at = 0;
	fl_shape s;

	if (x < 0)
		return -1;
	s = *shape_of(c, x);
	axis = fl_axis_normalize(fl_onnx_attr_int(c, "axis", 0), s.rank);
	if (axis < 0) {
		fl_error_set(err, "attribute axis: out of range");
		return -1;
	}
	if (split_sizes(c, s.dim[axis], sizes, err) < 0)
		return -1;
	for (int d = 0; d < s.rank; d++)
		start[d] = 0, end[d] = s.dim[d];
	for (int k = 0; k < (int)c->node->n_output; k++) {
		fl_attrs a = {0};

		start[axis] = at;
		end[axis] = at += sizes[k];
		if (!*c->node->output[k])
			continue;
		if (fl_attrs_set_ints(&a, "starts", start, s.rank) < 0 ||
		    fl_attrs_set_ints(&a, "ends", end, s.rank) < 0) {
			fl_attrs_free(&a);
			return fl_onnx_oom(err);
		}
		if (fl_onnx_emit_attrs(c, FL_OP_SLICE, &x, 1, &a, k, err) < 0)
			return -1;
	}
	return 0;
}

/* Tile: each dim repeated; a dim of extent 1 broadcasts, others are
 * concatenated with themselves. */
static int map_tile(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), n, r;
	int64_t reps[FL_MAX_RANK];
	fl_shape s;

	if (x < 0 || fl_onnx_input_ints(c, 1, reps, FL_MAX_RANK, &n, err) < 0)
		return -1;
	r = tensor_rank(c, x);
	if (n != r) {
		fl_error_set(err, "repeats: %d values for rank %d", n, r);
		return -1;
	}
	for (int d = 0; d < r; d++) {
		int parts[64];
		fl_attrs a = {0};

		if (reps[d] < 1 || reps[d] > 64) {
			fl_error_set(err, "repeats[%d]: %lld (1 to 64 are "
				     "supported)", d, (long long)reps[d]);
			return -1;
		}
		if (reps[d] == 1)
			continue;
		s = *shape_of(c, x);
		if (s.dim[d] == 1) {
			s.dim[d] = reps[d];
			x = fl_onnx_emit_ints(c, FL_OP_BROADCAST_TO, x, "shape", s.dim,
				      s.rank, TMP, err);
		} else {
			for (int k = 0; k < reps[d]; k++)
				parts[k] = x;
			if (fl_attrs_set_number(&a, "axis", d) < 0) {
				fl_attrs_free(&a);
				return fl_onnx_oom(err);
			}
			x = fl_onnx_emit_attrs(c, FL_OP_CONCAT, parts, (int)reps[d], &a,
				       TMP, err);
		}
		if (x < 0)
			return -1;
	}
	return fl_onnx_emit1(c, FL_OP_COPY, x, OUT, err) < 0 ? -1 : 0;
}

/* --- the table --- */

static const struct {
	const char *op_type;
	fl_onnx_map_fn map;
} mappings[] = {
	{"Neg", map_unary}, {"Abs", map_unary}, {"Sqrt", map_unary},
	{"Reciprocal", map_unary}, {"Exp", map_unary}, {"Log", map_unary},
	{"Tanh", map_unary}, {"Sigmoid", map_unary}, {"Relu", map_unary},
	{"Erf", map_unary}, {"Identity", map_unary},
	{"Dropout", fl_onnx_map_dropout},
	{"Round", map_unary},
	{"Sin", map_unary}, {"Cos", map_unary}, {"Tan", map_unary},
	{"Asin", map_unary}, {"Acos", map_unary}, {"Atan", map_unary},
	{"Sinh", map_unary}, {"Cosh", map_unary}, {"Asinh", map_unary},
	{"Acosh", map_unary}, {"Atanh", map_unary}, {"Floor", map_unary},
	{"Ceil", map_unary}, {"Sign", map_unary},
	{"Not", map_unary},
	{"ArgMax", map_arg_extreme}, {"ArgMin", map_arg_extreme},
	{"Equal", map_binary}, {"Less", map_binary},
	{"LessOrEqual", map_binary}, {"Greater", map_binary},
	{"GreaterOrEqual", map_binary}, {"And", map_binary},
	{"Or", map_binary}, {"Xor", map_binary},
	{"Add", map_binary}, {"Sub", map_binary}, {"Mul", map_binary},
	{"Div", map_binary}, {"Pow", map_pow}, {"Max", map_binary},
	{"Min", map_binary}, {"Sum", map_binary}, {"Mean", map_binary},
	{"Where", map_where}, {"LeakyRelu", map_leaky_relu},
	{"Elu", map_activation}, {"HardSigmoid", map_activation},
	{"HardSwish", map_activation}, {"Clip", map_clip},
	{"Gelu", map_gelu}, {"Cast", map_cast},
	{"MatMul", map_matmul}, {"Gemm", map_gemm}, {"Conv", fl_onnx_map_conv},
	{"MaxPool", fl_onnx_map_pool}, {"AveragePool", fl_onnx_map_pool},
	{"GlobalAveragePool", fl_onnx_map_global_pool},
	{"GlobalMaxPool", fl_onnx_map_global_pool},
	{"BatchNormalization", fl_onnx_map_batchnorm},
	{"LayerNormalization", fl_onnx_map_layernorm},
	{"Softmax", map_softmax}, {"LogSoftmax", map_softmax},
	{"ReduceSum", map_reduce}, {"ReduceMean", map_reduce},
	{"ReduceMax", map_reduce}, {"ReduceMin", map_reduce},
	{"Reshape", map_reshape_family}, {"Flatten", map_reshape_family},
	{"Squeeze", map_reshape_family}, {"Unsqueeze", map_reshape_family},
	{"Transpose", map_transpose}, {"Concat", map_concat},
	{"Slice", map_slice}, {"Pad", map_pad}, {"Gather", map_gather},
	{"Expand", map_expand},
	{"Softplus", map_soft_activation}, {"Softsign", map_soft_activation},
	{"Mish", map_soft_activation}, {"Selu", map_soft_activation},
	{"PRelu", map_prelu}, {"InstanceNormalization",
	 fl_onnx_map_instancenorm},
	{"ReduceSumSquare", map_reduce}, {"ReduceL1", map_reduce},
	{"ReduceL2", map_reduce}, {"ReduceLogSum", map_reduce},
	{"ReduceLogSumExp", map_reduce}, {"Split", map_split},
	{"ReduceProd", map_reduce},
	{"Tile", map_tile},
	{"LSTM", fl_onnx_map_lstm}, {"GRU", fl_onnx_map_gru},
	{"RNN", fl_onnx_map_rnn},
	{"NegativeLogLikelihoodLoss", fl_onnx_map_nll_loss},
	{"SoftmaxCrossEntropyLoss", fl_onnx_map_softmax_cross_entropy},
};

fl_onnx_map_fn fl_onnx_mapping(const char *op_type)
{
	for (size_t k = 0; k < sizeof mappings / sizeof mappings[0]; k++)
		if (!strcmp(mappings[k].op_type, op_type))
			return mappings[k].map;
	return fl_onnx_mapping_more(op_type);
}
