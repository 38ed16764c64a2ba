/* ONNX import: the quantized operators (docs/types.md), built at import
 * from the op library's primitives.
 *
 * Contract: as the other mapping files (onnx_import_impl.h): each mapping
 * turns the node being imported into ops emitted through fl_onnx_emit and
 * binds the node's outputs; scales and zero points may be graph inputs
 * (ONNX's tests feed them) or initializers.  A form fuselab cannot model
 * exactly (block quantization, a reduction too long for exact float
 * accumulation, an element type it has not) leaves the node opaque
 * through fl_onnx_cannot_model, never a wrong result.
 *
 * The pieces:
 *   - quantize: round(x / scale) (round half to even, ONNX's rounding),
 *     plus the zero point, clipped to the integer type's range, cast;
 *   - dequantize: (cast(x) - cast(zero point)) * scale, in f32;
 *   - a per-axis scale or zero point (1-D along `axis`) is reshaped to
 *     [C,1,...,1] so that it broadcasts along that axis;
 *   - the integer matmul and conv subtract the zero points in f32 and
 *     run fuselab's float matmul/conv2d: the 8-bit operands differ from
 *     their zero points by at most 255, so every partial sum of a
 *     reduction of n terms is an integer below n * 255^2 in magnitude,
 *     exact in a float while that stays within 2^24 (n <= 258), in
 *     whatever order the generated code adds.  A longer matmul is split
 *     into slices of 256 along K whose exact float products are cast to
 *     int32 and summed in int32; a longer conv stays opaque. */
#include "onnx_import_impl.h"

#include <stdio.h>
#include <string.h>

#define OUT 0		/* emit into the node's output 0 */
#define TMP (-1)	/* emit into a new intermediate */

/* The longest reduction of 8-bit differences a float sums exactly:
 * 258 * 255^2 < 2^24. */
#define EXACT_TERMS 258
/* The slice of K one exact float matmul takes when K is longer. */
#define K_SLICE 256

static const fl_shape *shape_of(const fl_onnx_ctx *c, int t)
{
	return &c->g->tensors[t].shape;
}

static fl_dtype dtype_of(const fl_onnx_ctx *c, int t)
{
	return c->g->tensors[t].dtype;
}

static int cast_to(fl_onnx_ctx *c, int x, fl_dtype dt, int out,
		   fl_error *err)
{
	fl_attrs a = {0};

	if (x < 0)
		return -1;
	if (dtype_of(c, x) == dt && out == TMP)
		return x;
	if (fl_attrs_set_string(&a, "dtype", fl_dtype_name(dt)) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_CAST, &x, 1, &a, out, err);
}

/* Op `kind` of t and the f32 scalar v; -1 when t is -1. */
static int with_scalar(fl_onnx_ctx *c, fl_op_kind kind, int t, float v,
		       int out, fl_error *err)
{
	int s;

	if (t < 0 || (s = fl_onnx_scalar(c, v, err)) < 0)
		return -1;
	return fl_onnx_emit2(c, kind, t, s, out, err);
}

static int bin(fl_onnx_ctx *c, fl_op_kind kind, int a, int b, int out,
	       fl_error *err)
{
	if (a < 0 || b < 0)
		return -1;
	return fl_onnx_emit2(c, kind, a, b, out, err);
}

/* The optional input k as a tensor; -2 when absent (-1 is an error). */
#define ABSENT (-2)

static int optional_data(fl_onnx_ctx *c, int k, fl_error *err)
{
	if (!fl_onnx_has_input(c, k))
		return ABSENT;
	return fl_onnx_data(c, k, err);
}

/* True for the integer types ONNX quantizes to that fuselab has. */
static bool quant_type(fl_dtype dt)
{
	return fl_dtype_is_int(dt) && dt != FL_BOOL;
}

/* A scale or zero point p (1-D of extent x's dim `axis`, or one value)
 * made to broadcast along axis of x: [C] -> [C,1,...,1].  One value
 * stays as it is. */
static int along_axis(fl_onnx_ctx *c, int p, const fl_shape *xs, int axis,
		      fl_error *err)
{
	const fl_shape *ps;
	fl_shape s;

	if (p < 0)
		return p;
	ps = shape_of(c, p);
	if (fl_shape_numel(ps) == 1)
		return p;
	if (ps->rank != 1 || axis < 0 || axis >= xs->rank ||
	    ps->dim[0] != xs->dim[axis]) {
		fl_error_set(err, "a per-axis scale or zero point of %lld "
			     "values along axis %d of a rank-%d input (it "
			     "needs one value or one per element of that axis)",
			     (long long)fl_shape_numel(ps), axis, xs->rank);
		return -1;
	}
	s.rank = xs->rank - axis;
	s.dim[0] = ps->dim[0];
	for (int d = 1; d < s.rank; d++)
		s.dim[d] = 1;
	return fl_onnx_reshape(c, p, &s, TMP, err);
}

/* The node's `axis` attribute normalised against rank. */
static int node_axis(fl_onnx_ctx *c, int rank)
{
	int64_t axis = fl_onnx_attr_int(c, "axis", 1);

	return (int)(axis < 0 ? axis + rank : axis);
}

/* clip(round(v) + zp, type's range) cast to dt into out; zp an f32
 * tensor or -2 (none).  v is f32. */
static int saturate(fl_onnx_ctx *c, int v, int zp, fl_dtype dt, int out,
		    fl_error *err)
{
	int y = fl_onnx_emit1(c, FL_OP_ROUND, v, TMP, err);

	if (y >= 0 && zp != ABSENT)
		y = bin(c, FL_OP_ADD, y, zp, TMP, err);
	y = with_scalar(c, FL_OP_MAX, y,
			(float)fl_dtype_to_double(dt, fl_dtype_min(dt)), TMP, err);
	y = with_scalar(c, FL_OP_MIN, y,
			(float)fl_dtype_to_double(dt, fl_dtype_max(dt)), TMP, err);
	return cast_to(c, y, dt, out, err);
}

/* The zero point zp (-2: none) as f32 along axis of an input of shape xs. */
static int zero_point_f32(fl_onnx_ctx *c, int zp, const fl_shape *xs,
			  int axis, fl_error *err)
{
	if (zp == ABSENT)
		return ABSENT;
	return along_axis(c, cast_to(c, zp, FL_F32, TMP, err), xs, axis, err);
}

static bool block_quantized(fl_onnx_ctx *c)
{
	return fl_onnx_attr_int(c, "block_size", 0) != 0;
}

/* QuantizeLinear(x, y_scale, y_zero_point): the zero point's type, uint8
 * without one (or output_dtype's). */
static int map_quantize_linear(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), s, zp, axis, out_onnx;
	fl_shape xs;
	fl_dtype dt = FL_U8;

	if (x < 0 || (s = fl_onnx_data(c, 1, err)) < 0 ||
	    (zp = optional_data(c, 2, err)) == -1)
		return -1;
	if (block_quantized(c))
		return fl_onnx_cannot_model(c, err, "block_size");
	out_onnx = (int)fl_onnx_attr_int(c, "output_dtype", 0);
	if (zp != ABSENT)
		dt = dtype_of(c, zp);
	else if (out_onnx != 0 && fl_onnx_to_dtype(out_onnx) >= 0)
		dt = (fl_dtype)fl_onnx_to_dtype(out_onnx);
	else if (out_onnx != 0)
		return fl_onnx_cannot_model(c, err, "output_dtype %s",
					    fl_onnx_dtype_name(out_onnx));
	if (!quant_type(dt))
		return fl_onnx_cannot_model(c, err, "to %s", fl_dtype_name(dt));
	xs = *shape_of(c, x);
	axis = node_axis(c, xs.rank);
	x = cast_to(c, x, FL_F32, TMP, err);
	s = along_axis(c, s, &xs, axis, err);
	zp = zero_point_f32(c, zp, &xs, axis, err);
	if (zp == -1)
		return -1;
	return saturate(c, bin(c, FL_OP_DIV, x, s, TMP, err), zp, dt, OUT,
			err) < 0 ? -1 : 0;
}

/* DequantizeLinear(x, x_scale, x_zero_point) = (x - zp) * scale. */
static int map_dequantize_linear(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), s, zp, axis;
	fl_shape xs;

	if (x < 0 || (s = fl_onnx_data(c, 1, err)) < 0 ||
	    (zp = optional_data(c, 2, err)) == -1)
		return -1;
	if (block_quantized(c))
		return fl_onnx_cannot_model(c, err, "block_size");
	xs = *shape_of(c, x);
	axis = node_axis(c, xs.rank);
	x = cast_to(c, x, FL_F32, TMP, err);
	s = along_axis(c, s, &xs, axis, err);
	zp = zero_point_f32(c, zp, &xs, axis, err);
	if (zp == -1)
		return -1;
	if (zp != ABSENT)
		x = bin(c, FL_OP_SUB, x, zp, TMP, err);
	return bin(c, FL_OP_MUL, x, s, OUT, err) < 0 ? -1 : 0;
}

/* Over all of x: op `kind` (reduce_min/max), kept as [1,...,1]. */
static int reduce_all(fl_onnx_ctx *c, fl_op_kind kind, int x, fl_error *err)
{
	int64_t axes[FL_MAX_RANK];
	int rank = shape_of(c, x)->rank;

	for (int d = 0; d < rank; d++)
		axes[d] = d;
	return fl_onnx_emit_ints(c, kind, x, "axes", axes, rank, TMP, err);
}

/* DynamicQuantizeLinear(x) -> y (uint8), y_scale, y_zero_point:
 * the range [min(x, 0), max(x, 0)] over 255 steps (scale 1/255 when it
 * is empty: where(max == min) picks 1 as ONNX does), the zero point
 * round(clip(-min / scale, 0, 255)), y quantized by both. */
static int map_dynamic_quantize_linear(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), lo, hi, range, same, one, s, zp;
	fl_shape scalar = fl_shape_make(0, NULL);
	int in[3];

	if (x < 0)
		return -1;
	if (dtype_of(c, x) != FL_F32)
		return fl_onnx_cannot_model(c, err, "on %s",
					    fl_dtype_name(dtype_of(c, x)));
	lo = with_scalar(c, FL_OP_MIN, reduce_all(c, FL_OP_REDUCE_MIN, x, err),
			 0, TMP, err);
	hi = with_scalar(c, FL_OP_MAX, reduce_all(c, FL_OP_REDUCE_MAX, x, err),
			 0, TMP, err);
	range = bin(c, FL_OP_SUB, hi, lo, TMP, err);
	same = bin(c, FL_OP_EQUAL, hi, lo, TMP, err);
	if (same < 0 || (one = fl_onnx_scalar(c, 1, err)) < 0)
		return -1;
	in[0] = same;
	in[1] = one;
	in[2] = range;
	range = fl_onnx_emit(c, FL_OP_WHERE, in, 3, NULL, TMP, err);
	s = with_scalar(c, FL_OP_DIV, range, 255, TMP, err);
	/* zp = round(clip(0 - lo / s, 0, 255)) */
	zp = bin(c, FL_OP_DIV, lo, s, TMP, err);
	zp = with_scalar(c, FL_OP_MUL, zp, -1, TMP, err);
	zp = with_scalar(c, FL_OP_MAX, zp, 0, TMP, err);
	zp = with_scalar(c, FL_OP_MIN, zp, 255, TMP, err);
	zp = fl_onnx_emit1(c, FL_OP_ROUND, zp, TMP, err);
	if (saturate(c, bin(c, FL_OP_DIV, x, s, TMP, err), zp, FL_U8, OUT,
		     err) < 0 ||
	    fl_onnx_reshape(c, s, &scalar, 1, err) < 0 ||
	    cast_to(c, fl_onnx_reshape(c, zp, &scalar, TMP, err), FL_U8, 2,
		    err) < 0)
		return -1;
	return 0;
}

/* x - zp in f32 (zp -2: x as f32); zp along axis of x. */
static int minus_zero_point(fl_onnx_ctx *c, int x, int zp, int axis,
			    fl_error *err)
{
	fl_shape xs;

	if (x < 0 || zp == -1)
		return -1;
	xs = *shape_of(c, x);
	if (!quant_type(dtype_of(c, x)) || fl_dtype_size(dtype_of(c, x)) != 1)
		return fl_onnx_cannot_model(c, err, "a %s operand (8-bit "
					    "integers only)",
					    fl_dtype_name(dtype_of(c, x)));
	x = cast_to(c, x, FL_F32, TMP, err);
	if (zp == ABSENT)
		return x;
	return bin(c, FL_OP_SUB, x, zero_point_f32(c, zp, &xs, axis, err),
		   TMP, err);
}

/* Slice [k0, k1) of dim d of x. */
static int slice_dim(fl_onnx_ctx *c, int x, int d, int64_t k0, int64_t k1,
		     fl_error *err)
{
	const fl_shape *s = shape_of(c, x);
	int64_t starts[FL_MAX_RANK], ends[FL_MAX_RANK], steps[FL_MAX_RANK];
	fl_attrs a = {0};

	for (int k = 0; k < s->rank; k++) {
		starts[k] = k == d ? k0 : 0;
		ends[k] = k == d ? k1 : s->dim[k];
		steps[k] = 1;
	}
	if (fl_attrs_set_ints(&a, "starts", starts, s->rank) < 0 ||
	    fl_attrs_set_ints(&a, "ends", ends, s->rank) < 0 ||
	    fl_attrs_set_ints(&a, "steps", steps, s->rank) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_SLICE, &x, 1, &a, TMP, err);
}

/* The exact integer product of the f32 differences a and b as an i32
 * tensor into out: one float matmul while K is short enough, else the
 * int32 sum of the products of slices of K_SLICE. */
static int exact_matmul_i32(fl_onnx_ctx *c, int a, int b, int out,
			    fl_error *err)
{
	const fl_shape *sa, *sb;
	int64_t k;
	int acc = -1;

	if (a < 0 || b < 0)
		return -1;
	sa = shape_of(c, a);
	sb = shape_of(c, b);
	k = sa->dim[sa->rank - 1];
	if (k <= EXACT_TERMS)
		return cast_to(c, fl_onnx_emit_matmul(c, a, b, TMP, err),
			       FL_I32, out, err);
	for (int64_t k0 = 0; k0 < k; k0 += K_SLICE) {
		int64_t k1 = k0 + K_SLICE < k ? k0 + K_SLICE : k;
		int p = fl_onnx_emit_matmul(c,
			slice_dim(c, a, sa->rank - 1, k0, k1, err),
			slice_dim(c, b, sb->rank == 1 ? 0 : sb->rank - 2, k0,
				  k1, err), TMP, err);
		bool last = k1 == k;

		p = cast_to(c, p, FL_I32, acc < 0 && last ? out : TMP, err);
		acc = acc < 0 ? p : bin(c, FL_OP_ADD, acc, p,
					last ? out : TMP, err);
		if (acc < 0)
			return -1;
		sa = shape_of(c, a);	/* the graph's arrays may move */
		sb = shape_of(c, b);
	}
	return acc;
}

/* The f32 differences of MatMulInteger/QLinearMatMul's operands: a's
 * zero point per row (axis -2 when 1-D of M values), b's per column. */
static int matmul_operands(fl_onnx_ctx *c, int a, int azp, int b, int bzp,
			   int *fa, int *fb, fl_error *err)
{
	int ra, rb;

	if (a < 0 || b < 0 || azp == -1 || bzp == -1)
		return -1;
	ra = shape_of(c, a)->rank;
	rb = shape_of(c, b)->rank;
	*fa = minus_zero_point(c, a, azp, ra >= 2 ? ra - 2 : 0, err);
	*fb = minus_zero_point(c, b, bzp, rb - 1, err);
	return *fa < 0 || *fb < 0 ? -1 : 0;
}

/* MatMulInteger(A, B, a_zero_point, b_zero_point) -> int32. */
static int map_matmul_integer(fl_onnx_ctx *c, fl_error *err)
{
	int fa, fb;

	if (matmul_operands(c, fl_onnx_data(c, 0, err), optional_data(c, 2, err),
			    fl_onnx_data(c, 1, err), optional_data(c, 3, err),
			    &fa, &fb, err) < 0)
		return -1;
	return exact_matmul_i32(c, fa, fb, OUT, err) < 0 ? -1 : 0;
}

/* The conv of the f32 differences x - xzp and w - wzp (w's zero point
 * per output channel), exact in f32; -1 after fl_onnx_cannot_model when
 * a window sums more terms than a float adds exactly. */
static int exact_conv(fl_onnx_ctx *c, int x, int xzp, int w, int wzp, int b,
		      int out, fl_error *err)
{
	const fl_shape *ws;
	int64_t terms = 1;
	int fx, fw;

	if (x < 0 || w < 0 || xzp == -1 || wzp == -1)
		return -1;
	ws = shape_of(c, w);
	for (int d = 1; d < ws->rank; d++)
		terms *= ws->dim[d];
	if (terms > EXACT_TERMS) {
		fl_onnx_cannot_model(c, err, "%lld terms per output, more than "
				     "a float sums exactly", (long long)terms);
		return -1;
	}
	fx = minus_zero_point(c, x, xzp, 1, err);
	fw = minus_zero_point(c, w, wzp, 0, err);
	if (fx < 0 || fw < 0)
		return -1;
	return fl_onnx_emit_conv(c, fx, fw, b, out, err);
}

/* ConvInteger(x, w, x_zero_point, w_zero_point) -> int32. */
static int map_conv_integer(fl_onnx_ctx *c, fl_error *err)
{
	int y = exact_conv(c, fl_onnx_data(c, 0, err), optional_data(c, 2, err),
			   fl_onnx_data(c, 1, err), optional_data(c, 3, err),
			   -1, TMP, err);

	if (y < 0)
		return -1;
	return cast_to(c, y, FL_I32, OUT, err) < 0 ? -1 : 0;
}

/* y = saturate(round(acc * a_scale * b_scale / y_scale) + y_zp) in the
 * zero point's type (the input's without one); a_scale per row along
 * a_axis of the accumulator, b_scale per column (matmul) or per output
 * channel (conv: b_axis 1). */
static int requantize(fl_onnx_ctx *c, int acc, int as, int bs, int ys,
		      int yzp, fl_dtype dt, int a_axis, int b_axis,
		      fl_error *err)
{
	fl_shape s;
	int m;

	if (acc < 0 || as < 0 || bs < 0 || ys < 0 || yzp == -1)
		return -1;
	s = *shape_of(c, acc);
	as = along_axis(c, as, &s, a_axis, err);
	bs = along_axis(c, bs, &s, b_axis, err);
	m = bin(c, FL_OP_DIV, bin(c, FL_OP_MUL, as, bs, TMP, err), ys, TMP,
		err);
	if (yzp != ABSENT)
		yzp = cast_to(c, yzp, FL_F32, TMP, err);
	if (yzp == -1)
		return -1;
	return saturate(c, bin(c, FL_OP_MUL, acc, m, TMP, err), yzp, dt, OUT,
			err);
}

/* The type QLinear* output: y_zero_point's, else the input's. */
static fl_dtype qlinear_type(const fl_onnx_ctx *c, int yzp, int x)
{
	return yzp >= 0 ? dtype_of(c, yzp) : dtype_of(c, x);
}

/* QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp). */
static int map_qlinear_matmul(fl_onnx_ctx *c, fl_error *err)
{
	int a = fl_onnx_data(c, 0, err), b = fl_onnx_data(c, 3, err);
	int yzp = optional_data(c, 7, err), fa, fb, acc, rank;

	if (a < 0 || b < 0 ||
	    matmul_operands(c, a, optional_data(c, 2, err), b,
			    optional_data(c, 5, err), &fa, &fb, err) < 0)
		return -1;
	acc = cast_to(c, exact_matmul_i32(c, fa, fb, TMP, err), FL_F32, TMP,
		      err);
	if (acc < 0)
		return -1;
	rank = shape_of(c, acc)->rank;
	return requantize(c, acc, fl_onnx_data(c, 1, err),
			  fl_onnx_data(c, 4, err), fl_onnx_data(c, 6, err),
			  yzp, qlinear_type(c, yzp, a),
			  rank >= 2 ? rank - 2 : 0, rank - 1, err) < 0 ? -1 : 0;
}

/* QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B):
 * the int32 bias B is added to the exact accumulator before scaling. */
static int map_qlinear_conv(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), yzp = optional_data(c, 7, err);
	int b = optional_data(c, 8, err), acc;

	if (x < 0 || b == -1)
		return -1;
	if (b != ABSENT)
		b = cast_to(c, b, FL_F32, TMP, err);
	acc = exact_conv(c, x, optional_data(c, 2, err), fl_onnx_data(c, 3, err),
			 optional_data(c, 5, err), b == ABSENT ? -1 : b, TMP,
			 err);
	if (acc < 0)
		return -1;
	return requantize(c, acc, fl_onnx_data(c, 1, err),
			  fl_onnx_data(c, 4, err), fl_onnx_data(c, 6, err),
			  yzp, qlinear_type(c, yzp, x), 1, 1, err) < 0 ? -1 : 0;
}

static const struct {
	const char *op_type;
	fl_onnx_map_fn map;
} mappings[] = {
	{"QuantizeLinear", map_quantize_linear},
	{"DequantizeLinear", map_dequantize_linear},
	{"DynamicQuantizeLinear", map_dynamic_quantize_linear},
	{"MatMulInteger", map_matmul_integer},
	{"ConvInteger", map_conv_integer},
	{"QLinearMatMul", map_qlinear_matmul},
	{"QLinearConv", map_qlinear_conv},
};

fl_onnx_map_fn fl_onnx_quant_mapping(const char *op_type)
{
	for (size_t k = 0; k < sizeof mappings / sizeof mappings[0]; k++)
		if (!strcmp(mappings[k].op_type, op_type))
			return mappings[k].map;
	return NULL;
}
