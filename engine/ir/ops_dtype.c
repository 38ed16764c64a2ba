/* Dtype inference (fl_op_infer_dtype in ops.h; docs/types.md): the
 * element type of each op's output from its inputs' types, run by
 * fl_graph_infer_op beside shape inference.  The rules sort ops into a
 * few families; an op no family names computes in f32 only, so an op
 * added to the library later is safe (it refuses integers) until its
 * author says otherwise here.
 *
 * f16 and bf16 are storage types: cast, data movement (gather and an
 * unreduced scatter included) and where's branches take them as they
 * are; every op that computes on values refuses them, and the ONNX
 * importer casts a half-precision node's inputs to f32 and its results
 * back (onnx_half.c), which is where arithmetic in f32 comes from. */
#include "ops_impl.h"

static int refuse(const fl_op *op, int k, const fl_dtype *in, const char *why,
		  fl_error *err)
{
	fl_error_set(err, "in[%d]: %s %s, got a %s tensor", k,
		     fl_op_kind_name(op->kind), why, fl_dtype_name(in[k]));
	return -1;
}

/* All inputs from `first` on share one dtype, returned in *dt. */
static int common_dtype(const fl_op *op, const fl_dtype *in, int first,
			fl_dtype *dt, fl_error *err)
{
	*dt = op->n_in > first ? in[first] : FL_F32;
	for (int k = first + 1; k < op->n_in; k++)
		if (in[k] != *dt) {
			fl_error_set(err, "in[%d]: %s needs inputs of one dtype, "
				     "got %s and %s (cast one of them)", k,
				     fl_op_kind_name(op->kind),
				     fl_dtype_name(*dt), fl_dtype_name(in[k]));
			return -1;
		}
	return 0;
}

static int cast_dtype(const fl_op *op, fl_dtype *out, fl_error *err)
{
	const char *name;
	int dt;

	if (fl_attr_string(&op->attrs, "dtype", "f32", &name, err) < 0)
		return -1;
	dt = fl_dtype_parse(name);
	if (dt < 0) {
		fl_error_set(err, "attrs.dtype: unknown dtype \"%s\"", name);
		return -1;
	}
	*out = (fl_dtype)dt;
	return 0;
}

static int all_bool(const fl_op *op, const fl_dtype *in, fl_error *err)
{
	for (int k = 0; k < op->n_in; k++)
		if (in[k] != FL_BOOL)
			return refuse(op, k, in, "takes bool inputs", err);
	return 0;
}

/* Ops that compute on integers as on floats (not on bool); mod and fmod
 * take the integer remainder exactly (ops_typed.c). */
static bool integer_arithmetic(fl_op_kind k)
{
	switch (k) {
	case FL_OP_NEG: case FL_OP_ABS: case FL_OP_RELU: case FL_OP_SQUARE:
	case FL_OP_ADD: case FL_OP_SUB: case FL_OP_MUL: case FL_OP_DIV:
	case FL_OP_MAX: case FL_OP_MIN: case FL_OP_MOD: case FL_OP_FMOD:
	case FL_OP_REDUCE_SUM:
	case FL_OP_REDUCE_MAX: case FL_OP_REDUCE_MIN:
		return true;
	default:
		return false;
	}
}

/* Ops that only move values: any dtype, out = in. */
static bool moves_values(const fl_op *op)
{
	switch (op->kind) {
	case FL_OP_COPY: case FL_OP_TRANSPOSE: case FL_OP_RESHAPE:
	case FL_OP_CONCAT: case FL_OP_SLICE: case FL_OP_PAD:
	case FL_OP_BROADCAST_TO:
		return true;
	case FL_OP_CUSTOM:
		return fl_custom_fn_of(op) == FL_CUSTOM_COPY;
	default:
		return false;
	}
}

/* Inputs from `first` on hold no 16-bit float: the op computes. */
static int no_half(const fl_op *op, const fl_dtype *in, int first,
		   fl_error *err)
{
	for (int k = first; k < op->n_in; k++)
		if (fl_dtype_is_half(in[k]))
			return refuse(op, k, in, "computes in f32 (f16 and "
				      "bf16 are storage types: cast the input "
				      "to f32 first)", err);
	return 0;
}

static int float_only(const fl_op *op, const fl_dtype *in, fl_dtype *out,
		      fl_error *err)
{
	if (no_half(op, in, 0, err) < 0)
		return -1;
	for (int k = 0; k < op->n_in; k++)
		if (in[k] != FL_F32)
			return refuse(op, k, in, "computes in f32 (cast the "
				      "input to f32 first)", err);
	for (int k = 0; k < op->n_out; k++)
		out[k] = FL_F32;
	return 0;
}

/* scatter_elements: integer (or integral float) indices, updates of the
 * data's type; a reduction other than none computes on numbers. */
static int scatter_dtype(const fl_op *op, const fl_dtype *in, fl_dtype *out,
			 fl_error *err)
{
	fl_scatter_red r = FL_SCATTER_NONE;

	if (op->n_in < 3)
		return float_only(op, in, out, err);
	if (in[1] == FL_BOOL || fl_dtype_is_half(in[1]))
		return refuse(op, 1, in, "takes integer indices", err);
	if (in[2] != in[0]) {
		fl_error_set(err, "in[2]: scatter_elements needs updates of the "
			     "data's dtype %s, got %s", fl_dtype_name(in[0]),
			     fl_dtype_name(in[2]));
		return -1;
	}
	if (fl_scatter_reduction(op, &r, err) < 0)
		return -1;
	if (r != FL_SCATTER_NONE && no_half(op, in, 0, err) < 0)
		return -1;
	if (r != FL_SCATTER_NONE && in[0] == FL_BOOL)
		return refuse(op, 0, in, "combines numbers with a reduction "
			      "(cast bool to an integer type first)", err);
	out[0] = in[0];
	return 0;
}

int fl_op_infer_dtype(const fl_op *op, const fl_dtype *in, fl_dtype *out,
		      fl_error *err)
{
	switch (op->kind) {
	case FL_OP_CAST:
		return cast_dtype(op, out, err);
	case FL_OP_EQUAL: case FL_OP_LESS: case FL_OP_LESS_EQUAL:
	case FL_OP_GREATER: case FL_OP_GREATER_EQUAL:
		out[0] = FL_BOOL;
		if (no_half(op, in, 0, err) < 0)
			return -1;
		return common_dtype(op, in, 0, &(fl_dtype){FL_F32}, err);
	case FL_OP_AND: case FL_OP_OR: case FL_OP_XOR: case FL_OP_NOT:
		out[0] = FL_BOOL;
		return all_bool(op, in, err);
	case FL_OP_IS_NAN: case FL_OP_IS_INF:
		if (no_half(op, in, 0, err) < 0)
			return -1;
		if (in[0] != FL_F32)
			return refuse(op, 0, in, "tests floats (an integer is "
				      "never NaN or infinite)", err);
		out[0] = FL_BOOL;
		return 0;
	case FL_OP_WHERE:
		/* a condition is tested as its C value: not a half's bits */
		if (fl_dtype_is_half(in[0]))
			return refuse(op, 0, in, "takes a condition of bool, "
				      "an integer type or f32", err);
		return common_dtype(op, in, 1, out, err);
	case FL_OP_CUSTOM:
		/* an opaque op is never computed: it takes anything, and
		 * its output has the "dtype" it declares (the type the
		 * model gives it; f32 by default) */
		if (fl_custom_fn_of(op) == FL_CUSTOM_OPAQUE)
			return cast_dtype(op, out, err);
		break;
	case FL_OP_SHIFT_LEFT: case FL_OP_SHIFT_RIGHT:
		/* ONNX's BitShift is defined on unsigned types only: C's
		 * shifts of negative values are not portable */
		if (common_dtype(op, in, 0, out, err) < 0)
			return -1;
		if (!fl_dtype_is_int(out[0]) || out[0] == FL_BOOL ||
		    !fl_dtype_is_unsigned(out[0]))
			return refuse(op, 0, in, "takes unsigned integers "
				      "(u8, u16, u32, u64)", err);
		return 0;
	case FL_OP_GATHER: case FL_OP_GATHER_ELEMENTS:
		if (op->n_in > 1 &&
		    (in[1] == FL_BOOL || fl_dtype_is_half(in[1])))
			return refuse(op, 1, in, "takes integer indices", err);
		out[0] = in[0];
		return 0;
	case FL_OP_SCATTER_ELEMENTS:
		return scatter_dtype(op, in, out, err);
	default:
		break;
	}
	if (moves_values(op))
		return common_dtype(op, in, 0, out, err);
	if (!integer_arithmetic(op->kind))
		return float_only(op, in, out, err);
	if (no_half(op, in, 0, err) < 0 ||
	    common_dtype(op, in, 0, out, err) < 0)
		return -1;
	if (out[0] == FL_BOOL)
		return refuse(op, 0, in, "computes on numbers (cast bool to "
			      "an integer type first)", err);
	return 0;
}
