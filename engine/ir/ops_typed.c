/* Reference evaluation on typed buffers (docs/types.md).
 *
 * The op library's float implementations (ops_prim.c) see f32 buffers
 * only.  fl_op_eval sends every op that reads or writes a bool or
 * integer buffer here instead.  Integral values are held exactly as
 * int64_t (fl_buf.ints) and wrapped to their type after each op, so a
 * 64-bit token id or an int32 sum that overflows comes out as C's
 * fixed-width arithmetic computes it; integer division truncates toward
 * zero (C and ONNX), dividing by zero gives 0 (generated code does the
 * same, rather than trap); mod is Python's remainder, fmod C's, shifts
 * by the width or more give 0.
 *
 * Three families:
 *   - elementwise ops (cast, comparisons, logic, where, integer
 *     arithmetic) compute each element from its broadcast operands;
 *   - reductions combine in int64 and wrap the result;
 *   - data movement (transpose, reshape, slice, concat, pad,
 *     broadcast_to, gather, copy) never computes on values, so their
 *     float implementation runs once per 16-bit plane of the values,
 *     each plane exact in a float (stored plus one, so that pad's
 *     inserted zeros stand out and get the pad value).
 *
 * f16 and bf16 buffers hold floats (fl_buf.data) like f32's: every op
 * computes on them in f32 and fl_op_eval rounds what it stores in one
 * to nearest even (fl_dtype_round), as generated code's stores do. */
#include <stdio.h>
#include <stdlib.h>

#include "ops_impl.h"

#define PLANE_BITS 16
#define N_PLANES (64 / PLANE_BITS)

static bool buf_is_typed(const fl_buf *b)
{
	return fl_dtype_is_int(b->dtype);
}

/* A 16-bit float output's values rounded to its type (the store). */
static void round_half(fl_buf *b)
{
	int64_t n = fl_shape_numel(&b->shape);

	if (!fl_dtype_is_half(b->dtype) || !b->data)
		return;
	for (int64_t i = 0; i < n; i++)
		b->data[i] = fl_dtype_round(b->dtype, b->data[i]);
}

void fl_op_eval(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	bool typed = buf_is_typed(&out[0]);

	for (int k = 0; k < op->n_in; k++)
		typed = typed || buf_is_typed(&in[k]);
	if (typed)
		fl_eval_typed(op, in, out);
	else
		fl_op_info_of(op->kind)->eval(op, in, out);
	for (int k = 0; k < op->n_out; k++)
		round_half(&out[k]);
}

static double get_f(const fl_buf *b, int64_t i)
{
	return !buf_is_typed(b) ? b->data[i]
				: fl_dtype_to_double(b->dtype, b->ints[i]);
}

static int64_t get_i(const fl_buf *b, int64_t i)
{
	return !buf_is_typed(b) ? fl_dtype_from_float(FL_I64, b->data[i])
				: b->ints[i];
}

static bool get_b(const fl_buf *b, int64_t i)
{
	return !buf_is_typed(b) ? b->data[i] != 0 : b->ints[i] != 0;
}

/* Two's complement arithmetic without C's undefined signed overflow. */
static int64_t wrap_add(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int64_t wrap_mul(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a * (uint64_t)b);
}

static int64_t int_div(fl_dtype dt, int64_t a, int64_t b)
{
	if (b == 0)
		return 0;
	if (dt == FL_U64)
		return (int64_t)((uint64_t)a / (uint64_t)b);
	if (b == -1)
		return wrap_mul(a, -1);
	return a / b;
}

static int compare(const fl_buf *a, int64_t i, const fl_buf *b, int64_t j)
{
	if (!buf_is_typed(a) || !buf_is_typed(b)) {
		double x = get_f(a, i), y = get_f(b, j);

		return x < y ? -1 : x > y ? 1 : x == y ? 0 : 2;	/* 2: NaN */
	}
	return fl_dtype_compare(a->dtype, a->ints[i], b->ints[j]);
}

static int64_t compare_op(fl_op_kind k, int c)
{
	switch (k) {
	case FL_OP_EQUAL: return c == 0;
	case FL_OP_LESS: return c == -1;
	case FL_OP_LESS_EQUAL: return c == -1 || c == 0;
	case FL_OP_GREATER: return c == 1;
	default: return c == 1 || c == 0;	/* greater_equal */
	}
}

/* C's remainder (a's sign); Python's (b's sign) when `python`.  x % 0
 * and x % -1 give 0 (the latter would trap on INT64_MIN). */
static int64_t int_mod(fl_dtype dt, int64_t a, int64_t b, bool python)
{
	int64_t r;

	if (b == 0)
		return 0;
	if (dt == FL_U64)
		return (int64_t)((uint64_t)a % (uint64_t)b);
	if (b == -1)
		return 0;
	r = a % b;
	return python && r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

/* a shifted by b bits in dt (unsigned); by the width or more: 0. */
static int64_t int_shift(fl_dtype dt, int64_t a, int64_t b, bool left)
{
	uint64_t n = (uint64_t)b;

	if (n >= (uint64_t)(8 * fl_dtype_size(dt)))
		return 0;
	return (int64_t)(left ? (uint64_t)a << n : (uint64_t)a >> n);
}

static int sign_of(fl_dtype dt, int64_t v)
{
	return fl_dtype_compare(dt, v, 0);
}

/* NaN and infinity by the float's bits, as the generated code tests
 * them (fl_isnan_bits, fl_isinf_bits): a comparison such as x != x is
 * folded away by a compiler told that no NaN occurs. */
static uint32_t float_bits(float x)
{
	union { float f; uint32_t u; } v = {.f = x};

	return v.u;
}

static bool is_nan_bits(float x)
{
	return (float_bits(x) & 0x7fffffffu) > 0x7f800000u;
}

/* is_inf's attributes: which infinities count (both by default). */
static void is_inf_signs(const fl_op *op, bool *pos, bool *neg)
{
	fl_attr_bool(&op->attrs, "positive", true, pos, NULL);
	fl_attr_bool(&op->attrs, "negative", true, neg, NULL);
}

static bool is_inf_bits(const fl_op *op, float x)
{
	bool pos, neg;

	is_inf_signs(op, &pos, &neg);
	return (pos && float_bits(x) == 0x7f800000u) ||
	       (neg && float_bits(x) == 0xff800000u);
}

int fl_infer_is_inf(const fl_op *op, const fl_shape *in, fl_shape *out,
		    fl_error *err)
{
	bool b;

	if (fl_attr_bool(&op->attrs, "positive", true, &b, err) < 0 ||
	    fl_attr_bool(&op->attrs, "negative", true, &b, err) < 0)
		return -1;
	return fl_infer_unary(op, in, out, err);
}

fl_op_c fl_c_is_inf(const fl_op *op, char *buf, size_t n)
{
	bool pos, neg;

	is_inf_signs(op, &pos, &neg);
	snprintf(buf, n, "fl_isinf_bits($0, %d, %d)", pos, neg);
	return (fl_op_c){.compute = buf};
}

/* Element of an integral result from the operands' elements off[k]. */
static int64_t int_element(const fl_op *op, const fl_buf *in,
			   const int64_t *off, fl_dtype to)
{
	fl_dtype dt = in[0].dtype;	/* arithmetic: one dtype in and out */
	int64_t a, b;

	switch (op->kind) {
	case FL_OP_CAST:
		return !buf_is_typed(&in[0])
			? fl_dtype_from_float(to, in[0].data[off[0]])
			: in[0].ints[off[0]];
	case FL_OP_NOT: return !get_b(&in[0], off[0]);
	case FL_OP_IS_NAN: return is_nan_bits((float)get_f(&in[0], off[0]));
	case FL_OP_IS_INF: return is_inf_bits(op, (float)get_f(&in[0], off[0]));
	case FL_OP_AND: return get_b(&in[0], off[0]) && get_b(&in[1], off[1]);
	case FL_OP_OR: return get_b(&in[0], off[0]) || get_b(&in[1], off[1]);
	case FL_OP_XOR: return get_b(&in[0], off[0]) != get_b(&in[1], off[1]);
	case FL_OP_EQUAL: case FL_OP_LESS: case FL_OP_LESS_EQUAL:
	case FL_OP_GREATER: case FL_OP_GREATER_EQUAL:
		return compare_op(op->kind,
				  compare(&in[0], off[0], &in[1], off[1]));
	case FL_OP_WHERE:
		return get_i(&in[get_b(&in[0], off[0]) ? 1 : 2],
			     off[get_b(&in[0], off[0]) ? 1 : 2]);
	default:
		break;
	}
	a = get_i(&in[0], off[0]);
	b = op->n_in > 1 ? get_i(&in[1], off[1]) : 0;
	switch (op->kind) {
	case FL_OP_NEG: return wrap_mul(a, -1);
	case FL_OP_ABS: return sign_of(dt, a) < 0 ? wrap_mul(a, -1) : a;
	case FL_OP_RELU: return sign_of(dt, a) > 0 ? a : 0;
	case FL_OP_SQUARE: return wrap_mul(a, a);
	case FL_OP_ADD: return wrap_add(a, b);
	case FL_OP_SUB: return wrap_add(a, wrap_mul(b, -1));
	case FL_OP_MUL: return wrap_mul(a, b);
	case FL_OP_DIV: return int_div(dt, a, b);
	case FL_OP_MOD: return int_mod(dt, a, b, true);
	case FL_OP_FMOD: return int_mod(dt, a, b, false);
	case FL_OP_SHIFT_LEFT: return int_shift(dt, a, b, true);
	case FL_OP_SHIFT_RIGHT: return int_shift(dt, a, b, false);
	case FL_OP_MAX: return fl_dtype_compare(dt, a, b) > 0 ? a : b;
	case FL_OP_MIN: return fl_dtype_compare(dt, a, b) < 0 ? a : b;
	default: return a;	/* copy */
	}
}

/* Element of a float result (cast from an integer, where with float
 * branches); fl_op_eval rounds a 16-bit one. */
static float float_element(const fl_op *op, const fl_buf *in,
			   const int64_t *off)
{
	if (op->kind == FL_OP_WHERE)
		return (float)get_f(&in[get_b(&in[0], off[0]) ? 1 : 2],
				    off[get_b(&in[0], off[0]) ? 1 : 2]);
	return (float)get_f(&in[0], off[0]);
}

static void eval_elementwise(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	int64_t idx[FL_MAX_RANK] = {0}, off[8] = {0}, i = 0;

	do {
		for (int k = 0; k < op->n_in && k < 8; k++)
			off[k] = fl_broadcast_offset(&in[k].shape, &out->shape,
						     idx);
		if (!buf_is_typed(out))
			out->data[i] = float_element(op, in, off);
		else
			out->ints[i] = fl_dtype_wrap(
				out->dtype, int_element(op, in, off, out->dtype));
		i++;
	} while (fl_index_next(&out->shape, idx));
}

/* Sum, max or min over the dims where the output has extent 1 (the
 * reduced axes are kept with extent 1). */
static void eval_reduce(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	int64_t n = fl_shape_numel(&out->shape), idx[FL_MAX_RANK] = {0};
	int64_t i = 0;
	fl_dtype dt = in->dtype;

	for (int64_t j = 0; j < n; j++)
		out->ints[j] = op->kind == FL_OP_REDUCE_SUM ? 0
			       : op->kind == FL_OP_REDUCE_MAX ? fl_dtype_min(dt)
							       : fl_dtype_max(dt);
	do {
		int64_t o = fl_broadcast_offset(&out->shape, &in->shape, idx);
		int64_t v = in->ints[i++], *acc = &out->ints[o];
		int c = fl_dtype_compare(dt, v, *acc);

		if (op->kind == FL_OP_REDUCE_SUM)
			*acc = wrap_add(*acc, v);
		else if (op->kind == FL_OP_REDUCE_MAX ? c > 0 : c < 0)
			*acc = v;
	} while (fl_index_next(&in->shape, idx));
	for (int64_t j = 0; j < n; j++)
		out->ints[j] = fl_dtype_wrap(out->dtype, out->ints[j]);
}

/* The float views of op's inputs for plane p: typed values as their
 * p-th 16-bit plane plus one; gather's indices as floats (clamped by
 * gather anyway); f32 inputs as they are.  Returns -1 out of memory. */
static int plane_inputs(const fl_op *op, const fl_buf *in, int p,
			fl_buf *fin)
{
	/* all set first: free_plane_inputs frees the typed ones' views */
	for (int k = 0; k < op->n_in; k++)
		fin[k] = (fl_buf){.shape = in[k].shape,
				  .data = buf_is_typed(&in[k]) ? NULL
							     : in[k].data};
	for (int k = 0; k < op->n_in; k++) {
		int64_t n = fl_shape_numel(&in[k].shape);

		if (!buf_is_typed(&in[k]))
			continue;
		fin[k].data = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
		if (!fin[k].data)
			return -1;
		for (int64_t i = 0; i < n; i++) {
			uint64_t u = (uint64_t)in[k].ints[i];

			fin[k].data[i] = op->kind == FL_OP_GATHER && k == 1
				? (float)get_f(&in[k], i)
				: (float)((u >> (PLANE_BITS * p)) & 0xffff) + 1;
		}
	}
	return 0;
}

static void free_plane_inputs(const fl_op *op, const fl_buf *in, fl_buf *fin)
{
	for (int k = 0; k < op->n_in; k++)
		if (buf_is_typed(&in[k]))
			free(fin[k].data);
}

/* Pad's own value goes where its float implementation inserted 0. */
static int64_t pad_value(const fl_op *op, fl_dtype dt)
{
	double v = 0;

	if (op->kind == FL_OP_PAD)
		fl_attr_float(&op->attrs, "value", 0, &v, NULL);
	return fl_dtype_from_float(dt, v);
}

static void eval_moving(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	const fl_op_info *info = fl_op_info_of(op->kind);
	int64_t n = fl_shape_numel(&out->shape), fill = pad_value(op, out->dtype);
	fl_buf fin[64], fout = {.shape = out->shape};
	fl_op flat = *op;
	int planes = !buf_is_typed(out) ? 1 : N_PLANES;

	if (op->n_in > 64 || fl_attrs_copy(&flat.attrs, &op->attrs) < 0)
		return;
	if (op->kind == FL_OP_PAD)
		fl_attrs_set_number(&flat.attrs, "value", 0);
	fout.data = !buf_is_typed(out) ? out->data
		    : malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
	for (int64_t i = 0; out->ints && i < n; i++)
		out->ints[i] = 0;
	for (int p = 0; fout.data && p < planes; p++) {
		if (plane_inputs(op, in, p, fin) == 0) {
			info->eval(&flat, fin, &fout);
			for (int64_t i = 0; out->ints && i < n; i++)
				out->ints[i] = fout.data[i] == 0 ? fill
					: (int64_t)((uint64_t)out->ints[i] |
						    (uint64_t)(fout.data[i] - 1)
							<< (PLANE_BITS * p));
		}
		free_plane_inputs(op, in, fin);
	}
	if (fout.data != out->data)
		free(fout.data);
	fl_attrs_free(&flat.attrs);
}

static bool moves_data(const fl_op *op)
{
	switch (op->kind) {
	case FL_OP_TRANSPOSE: case FL_OP_RESHAPE: case FL_OP_CONCAT:
	case FL_OP_SLICE: case FL_OP_PAD: case FL_OP_BROADCAST_TO:
	case FL_OP_GATHER: case FL_OP_CUSTOM:
		return true;
	default:
		return false;
	}
}

void fl_eval_typed(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	/* ops_index.c reads typed buffers itself */
	if (op->kind == FL_OP_GATHER_ELEMENTS ||
	    op->kind == FL_OP_SCATTER_ELEMENTS)
		fl_op_info_of(op->kind)->eval(op, in, out);
	else if (moves_data(op))
		eval_moving(op, in, out);
	else if (fl_op_info_of(op->kind)->cls == FL_CLASS_REDUCE)
		eval_reduce(op, in, out);
	else
		eval_elementwise(op, in, out);
}
