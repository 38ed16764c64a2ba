/* ONNX import: folding at import time (onnx_import_impl.h).
 *
 * Contract: given the node being imported, when every input it has is a
 * value known at import (Shape and Size: when the input's shape is
 * known, which it always is) and its op type is one of the small
 * integer operators that exporters use to compute shapes (Shape, Gather,
 * Unsqueeze, Concat, Cast, Slice, arithmetic, ConstantOfShape, Range,
 * the windows of onnx_window.c, ...), and the inputs are integral (bool
 * included; Range and the makers of values take floats too), computes its
 * outputs and binds them as known values; the node adds no op.
 * Constant nodes always fold.  Integer arithmetic is exact (int64);
 * float values are computed in double and stored as float.
 * Anything else is left to the mapping (returns 0); an op that exists
 * at import only (ConstantOfShape, Range, the windows) whose inputs are
 * computed at run time records them as wanted (onnx_bind.c) and gives
 * the reason its node is opaque ("input 1 computed at run time"). */
#include "onnx_import_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*fold_fn)(fl_onnx_ctx *c, fl_onnx_values **out, fl_error *err);

/* The most elements a value made from shapes at import may have
 * (ConstantOfShape, Range, Expand, broadcasting): shape sub-graphs make
 * small values, and a model that claims a huge one must not keep the
 * import busy filling it. */
#define MAX_MADE_ELEMENTS ((int64_t)1 << 22)

/* fl_onnx_values_new for a value whose size comes from other values, not
 * from data in the file. */
static fl_onnx_values *made_values(const char *op, const fl_shape *s,
				   int dtype, fl_error *err)
{
	int64_t n = fl_shape_numel(s);

	if (n < 0 || n > MAX_MADE_ELEMENTS) {
		fl_error_set(err, "%s: a value of %lld elements, more than the "
			     "%lld fuselab computes at import", op,
			     (long long)n, (long long)MAX_MADE_ELEMENTS);
		return NULL;
	}
	return fl_onnx_values_new(s, dtype, err);
}

/* Element k of v as a double (exact for integers below 2^53). */
static double elem(const fl_onnx_values *v, int64_t k)
{
	return v->i ? (double)v->i[k] : (double)v->f[k];
}

/* x as an int64, truncated toward zero as ONNX's Cast does; a value
 * past the range (or NaN) saturates instead of being undefined
 * behaviour in C. */
static int64_t to_int64(double x)
{
	if (isnan(x))
		return 0;
	if (x >= 9223372036854775807.0)
		return INT64_MAX;
	if (x <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)x;
}

static void set_elem(fl_onnx_values *v, int64_t k, double x, int64_t xi,
		     bool exact)
{
	if (v->i) {
		v->i[k] = exact ? xi : to_int64(x);
		v->f[k] = (float)v->i[k];
	} else {
		v->f[k] = (float)x;
	}
}

static const fl_onnx_values *known(fl_onnx_ctx *c, int k)
{
	return fl_onnx_input_known(c, k);
}

/* A copy of v with a new shape of the same element count. */
static fl_onnx_values *reshaped(const fl_onnx_values *v, const fl_shape *s,
				fl_error *err)
{
	fl_onnx_values *r = fl_onnx_values_new(s, v->dtype, err);

	if (!r)
		return NULL;
	memcpy(r->f, v->f, (size_t)v->n * sizeof *r->f);
	if (r->i && v->i)
		memcpy(r->i, v->i, (size_t)v->n * sizeof *r->i);
	return r;
}

static int fold_constant(fl_onnx_ctx *c, fl_onnx_values **out, fl_error *err)
{
	const Onnx__AttributeProto *a;
	fl_shape s = fl_shape_scalar();
	fl_onnx_values *v;

	if ((a = fl_onnx_attr(c, "value")) && a->t) {
		v = calloc(1, sizeof *v);
		if (!v ||
		    fl_onnx_tensor_values(a->t, c->base_dir, v, err) < 0) {
			if (!v)
				fl_error_set(err, "out of memory");
			free(v);
			return -1;
		}
		*out = v;
		return 0;
	}
	if ((a = fl_onnx_attr(c, "value_float")) ||
	    (a = fl_onnx_attr(c, "value_int"))) {
		bool is_f = !strcmp(a->name, "value_float");

		v = fl_onnx_values_new(&s, is_f ? FL_DT_FLOAT : FL_DT_INT64,
				       err);
		if (!v)
			return -1;
		set_elem(v, 0, is_f ? a->f : (double)a->i, a->i, !is_f);
		*out = v;
		return 0;
	}
	if ((a = fl_onnx_attr(c, "value_floats")) ||
	    (a = fl_onnx_attr(c, "value_ints"))) {
		bool is_f = !strcmp(a->name, "value_floats");
		int64_t n = is_f ? (int64_t)a->n_floats : (int64_t)a->n_ints;

		s = fl_shape_make(1, &n);
		v = fl_onnx_values_new(&s, is_f ? FL_DT_FLOAT : FL_DT_INT64,
				       err);
		if (!v)
			return -1;
		for (int64_t k = 0; k < n; k++)
			set_elem(v, k, is_f ? a->floats[k] : (double)a->ints[k],
				 is_f ? 0 : a->ints[k], !is_f);
		*out = v;
		return 0;
	}
	fl_error_set(err, "Constant: no value, value_float(s) or value_int(s) "
		     "attribute (sparse and string constants are not "
		     "supported)");
	return -1;
}

static int fold_shape(fl_onnx_ctx *c, fl_onnx_values **out, fl_error *err)
{
	fl_shape in, s;
	int64_t start = fl_onnx_attr_int(c, "start", 0), end, n;

	if (fl_onnx_input_dims(c, 0, &in, err) < 0)
		return -1;
	end = fl_onnx_attr_int(c, "end", in.rank);
	if (start < 0)
		start += in.rank;
	if (end < 0)
		end += in.rank;
	start = start < 0 ? 0 : start > in.rank ? in.rank : start;
	end = end < start ? start : end > in.rank ? in.rank : end;
	n = end - start;
	s = fl_shape_make(1, &n);
	*out = fl_onnx_values_new(&s, FL_DT_INT64, err);
	if (!*out)
		return -1;
	for (int64_t k = 0; k < n; k++)
		set_elem(*out, k, 0, in.dim[start + k], true);
	return 0;
}

static int fold_size(fl_onnx_ctx *c, fl_onnx_values **out, fl_error *err)
{
	fl_shape in, s = fl_shape_scalar();

	if (fl_onnx_input_dims(c, 0, &in, err) < 0)
		return -1;
	*out = fl_onnx_values_new(&s, FL_DT_INT64, err);
	if (!*out)
		return -1;
	set_elem(*out, 0, 0, fl_shape_numel(&in), true);
	return 0;
}

static int fold_reshape_family(fl_onnx_ctx *c, fl_onnx_values **out,
			       fl_error *err)
{
	fl_shape s;

	if (fl_onnx_reshape_target(c, &known(c, 0)->shape, &s, err) < 0)
		return -1;
	*out = reshaped(known(c, 0), &s, err);
	return *out ? 0 : -1;
}

static int cast_target(fl_onnx_ctx *c, int *to, fl_error *err)
{
	*to = (int)fl_onnx_attr_int(c, "to", 0);
	if (!fl_onnx_dtype_supported(*to)) {
		fl_error_set(err, "Cast: to %s is not supported",
			     fl_onnx_dtype_name(*to));
		return -1;
	}
	return 0;
}

static int fold_cast(fl_onnx_ctx *c, fl_onnx_values **out, fl_error *err)
{
	const fl_onnx_values *x = known(c, 0);
	int to;

	if (cast_target(c, &to, err) < 0)
		return -1;
	*out = fl_onnx_values_new(&x->shape, to, err);
	if (!*out)
		return -1;
	for (int64_t k = 0; k < x->n; k++) {
		double v = elem(x, k);

		if (to == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL)
			v = v != 0;
		set_elem(*out, k, v, x->i ? x->i[k] : to_int64(v),
			 x->i != NULL);
	}
	return 0;
}

enum binop { B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN, B_EQ, B_LT, B_GT,
	     B_AND, B_OR, B_MOD, B_POW };

static const struct {
	const char *op_type;
	enum binop op;
} binops[] = {
	{"Add", B_ADD}, {"Sub", B_SUB}, {"Mul", B_MUL}, {"Div", B_DIV},
	{"Max", B_MAX}, {"Min", B_MIN}, {"Equal", B_EQ}, {"Less", B_LT},
	{"Greater", B_GT}, {"And", B_AND}, {"Or", B_OR}, {"Mod", B_MOD},
	{"Pow", B_POW},
};

static bool is_compare(enum binop op)
{
	return op == B_EQ || op == B_LT || op == B_GT || op == B_AND ||
	       op == B_OR;
}

/* Integer arithmetic as ONNX defines it on int64 (Div truncates, Mod has
 * the divisor's sign); *ok is cleared on division by zero. */
static int64_t int_binop(enum binop op, int64_t a, int64_t b, bool *ok)
{
	switch (op) {
	case B_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
	case B_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
	case B_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
	case B_MAX: return a > b ? a : b;
	case B_MIN: return a < b ? a : b;
	case B_POW: return to_int64(pow((double)a, (double)b));
	case B_DIV:
	case B_MOD:
		if (b == 0 || (a == INT64_MIN && b == -1)) {
			*ok = false;
			return 0;
		}
		if (op == B_DIV)
			return a / b;
		return a % b != 0 && (a % b < 0) != (b < 0) ? a % b + b
							    : a % b;
	default: return 0;
	}
}

static double float_binop(enum binop op, double a, double b)
{
	switch (op) {
	case B_ADD: return a + b;
	case B_SUB: return a - b;
	case B_MUL: return a * b;
	case B_DIV: return a / b;
	case B_MAX: return fmax(a, b);
	case B_MIN: return fmin(a, b);
	case B_EQ: return a == b;
	case B_LT: return a < b;
	case B_GT: return a > b;
	case B_AND: return a != 0 && b != 0;
	case B_OR: return a != 0 || b != 0;
	case B_MOD: return fmod(a, b);
	case B_POW: return pow(a, b);
	}
	return 0;
}

static int fold_binop(fl_onnx_ctx *c, enum binop op, fl_onnx_values **out,
		      fl_error *err)
{
	const fl_onnx_values *a = known(c, 0), *b = known(c, 1);
	bool exact;
	int64_t idx[FL_MAX_RANK] = {0};
	fl_shape s;
	int dtype;

	if (!a || !b) {		/* an empty input name */
		fl_error_set(err, "input %d is missing", a ? 1 : 0);
		return -1;
	}
	exact = a->i && b->i && !is_compare(op);
	dtype = is_compare(op) ? ONNX__TENSOR_PROTO__DATA_TYPE__BOOL : a->dtype;
	if (fl_shape_broadcast(&a->shape, &b->shape, &s, err) < 0)
		return -1;
	*out = made_values(c->node->op_type, &s, dtype, err);
	if (!*out)
		return -1;
	for (int64_t k = 0; k < (*out)->n; k++, fl_index_next(&s, idx)) {
		int64_t ka = fl_broadcast_offset(&a->shape, &s, idx);
		int64_t kb = fl_broadcast_offset(&b->shape, &s, idx);
		bool ok = true;
		int64_t xi = exact ? int_binop(op, a->i[ka], b->i[kb], &ok) : 0;

		if (!ok) {
			fl_error_set(err, "integer division by zero");
			return -1;
		}
		set_elem(*out, k, float_binop(op, elem(a, ka), elem(b, kb)), xi,
			 exact);
	}
	return 0;
}

static int fold_unary(fl_onnx_ctx *c, const char *t, fl_onnx_values **out,
		      fl_error *err)
{
	const fl_onnx_values *x = known(c, 0);

	*out = fl_onnx_values_new(&x->shape, x->dtype, err);
	if (!*out)
		return -1;
	for (int64_t k = 0; k < x->n; k++) {
		double v = elem(x, k);
		int64_t vi = x->i ? x->i[k] : 0;

		if (!strcmp(t, "Neg"))
			v = -v, vi = (int64_t)(0 - (uint64_t)vi);
		else if (!strcmp(t, "Abs"))
			v = fabs(v),
			vi = vi < 0 ? (int64_t)(0 - (uint64_t)vi) : vi;
		else if (!strcmp(t, "Not"))
			v = v == 0, vi = vi == 0;
		else if (!strcmp(t, "Floor"))
			v = floor(v);
		else if (!strcmp(t, "Ceil"))
			v = ceil(v);
		else if (!strcmp(t, "Sqrt"))
			v = sqrt(v);
		set_elem(*out, k, v, vi, x->i != NULL);
	}
	return 0;
}

static int fold_concat(fl_onnx_ctx *c, fl_onnx_values **out, fl_error *err)
{
	const fl_onnx_values *x0 = known(c, 0);
	int n = fl_onnx_n_inputs(c), axis;
	fl_shape s = x0->shape;
	int64_t outer = 1, k = 0;

	axis = fl_axis_normalize(fl_onnx_attr_int(c, "axis", 0), s.rank);
	if (axis < 0) {
		fl_error_set(err, "Concat: axis out of range");
		return -1;
	}
	s.dim[axis] = 0;
	for (int j = 0; j < n; j++) {
		const fl_onnx_values *x = known(c, j);

		if (!x) {	/* an empty name: Concat has no optional inputs */
			fl_error_set(err, "Concat: input %d is missing", j);
			return -1;
		}
		if (x->shape.rank != s.rank) {
			fl_error_set(err, "Concat: input %d has rank %d, not "
				     "%d", j, x->shape.rank, s.rank);
			return -1;
		}
		s.dim[axis] += x->shape.dim[axis];
	}
	for (int d = 0; d < axis; d++)
		outer *= s.dim[d];
	*out = fl_onnx_values_new(&s, x0->dtype, err);
	if (!*out)
		return -1;
	for (int64_t o = 0; o < outer; o++)
		for (int j = 0; j < n; j++) {
			const fl_onnx_values *x = known(c, j);
			int64_t len = outer ? x->n / outer : 0;

			for (int64_t e = 0; e < len; e++, k++)
				set_elem(*out, k, elem(x, o * len + e),
					 x->i ? x->i[o * len + e] : 0,
					 x->i && (*out)->i);
		}
	return 0;
}

static int fold_gather(fl_onnx_ctx *c, fl_onnx_values **out, fl_error *err)
{
	const fl_onnx_values *x = known(c, 0), *idx = known(c, 1);
	int axis = fl_axis_normalize(fl_onnx_attr_int(c, "axis", 0),
				     x->shape.rank);
	int64_t outer = 1, inner = 1, ext, k = 0;
	fl_shape s = {0};

	if (!idx || axis < 0 ||
	    x->shape.rank + idx->shape.rank - 1 > FL_MAX_RANK || !idx->i) {
		fl_error_set(err, "Gather: missing indices, bad axis, rank or "
			     "index type");
		return -1;
	}
	ext = x->shape.dim[axis];
	for (int d = 0; d < axis; d++)
		s.dim[s.rank++] = x->shape.dim[d], outer *= x->shape.dim[d];
	for (int d = 0; d < idx->shape.rank; d++)
		s.dim[s.rank++] = idx->shape.dim[d];
	for (int d = axis + 1; d < x->shape.rank; d++)
		s.dim[s.rank++] = x->shape.dim[d], inner *= x->shape.dim[d];
	*out = made_values("Gather", &s, x->dtype, err);
	if (!*out)
		return -1;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < idx->n; j++) {
			int64_t i = idx->i[j] < 0 ? idx->i[j] + ext : idx->i[j];

			if (i < 0 || i >= ext) {
				fl_error_set(err, "Gather: index %lld outside "
					     "[0, %lld)", (long long)idx->i[j],
					     (long long)ext);
				return -1;
			}
			for (int64_t e = 0; e < inner; e++, k++) {
				int64_t from = (o * ext + i) * inner + e;

				set_elem(*out, k, elem(x, from),
					 x->i ? x->i[from] : 0, x->i != NULL);
			}
		}
	return 0;
}

static int fold_slice(fl_onnx_ctx *c, fl_onnx_values **out, fl_error *err)
{
	const fl_onnx_values *x = known(c, 0);
	int64_t start[FL_MAX_RANK], step[FL_MAX_RANK], idx[FL_MAX_RANK] = {0};
	int64_t strides[FL_MAX_RANK];
	fl_shape s;

	if (fl_onnx_slice_box(c, &x->shape, start, step, &s, err) < 0)
		return -1;
	*out = fl_onnx_values_new(&s, x->dtype, err);
	if (!*out)
		return -1;
	fl_shape_strides(&x->shape, strides);
	for (int64_t k = 0; k < (*out)->n; k++, fl_index_next(&s, idx)) {
		int64_t from = 0;

		for (int d = 0; d < s.rank; d++)
			from += (start[d] + idx[d] * step[d]) * strides[d];
		set_elem(*out, k, elem(x, from), x->i ? x->i[from] : 0,
			 x->i != NULL);
	}
	return 0;
}

static int fold_constant_of_shape(fl_onnx_ctx *c, fl_onnx_values **out,
				  fl_error *err)
{
	const Onnx__AttributeProto *a = fl_onnx_attr(c, "value");
	fl_onnx_values fill = {0};
	int64_t dims[FL_MAX_RANK];
	fl_shape s;
	int n;

	if (fl_onnx_input_ints(c, 0, dims, FL_MAX_RANK, &n, err) < 0)
		return -1;
	s = fl_shape_make(n, dims);
	for (int d = 0; d < n; d++)
		if (dims[d] < 1) {
			fl_error_set(err, "ConstantOfShape: extent %lld",
				     (long long)dims[d]);
			return -1;
		}
	if (a && a->t && fl_onnx_tensor_values(a->t, c->base_dir, &fill,
					       err) < 0)
		return -1;
	*out = made_values("ConstantOfShape", &s, a && a->t ? fill.dtype
			   : ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, err);
	for (int64_t k = 0; *out && k < (*out)->n; k++)
		set_elem(*out, k, fill.n ? elem(&fill, 0) : 0,
			 fill.i && fill.n ? fill.i[0] : 0, fill.i != NULL);
	fl_onnx_values_free(&fill);
	return *out ? 0 : -1;
}

static int fold_range(fl_onnx_ctx *c, fl_onnx_values **out, fl_error *err)
{
	const fl_onnx_values *st = known(c, 0), *li = known(c, 1),
			     *de = known(c, 2);
	double start, delta, n;
	int64_t len;
	fl_shape s;

	if (!st || !li || !de) {
		fl_error_set(err, "Range: start, limit and delta are needed");
		return -1;
	}
	start = elem(st, 0);
	delta = elem(de, 0);
	n = ceil((elem(li, 0) - start) / delta);
	if (st->n != 1 || li->n != 1 || de->n != 1 || delta == 0 ||
	    !(n < (double)FL_ONNX_MAX_ELEMENTS)) {
		fl_error_set(err, "Range: start, limit, delta must be scalars, "
			     "delta non-zero, and the range not huge");
		return -1;
	}
	len = n > 0 ? (int64_t)n : 0;
	s = fl_shape_make(1, &len);
	*out = made_values("Range", &s, st->dtype, err);
	for (int64_t k = 0; *out && k < len; k++)
		set_elem(*out, k, start + (double)k * delta,
			 st->i && de->i ? st->i[0] + k * de->i[0] : 0,
			 st->i && de->i);
	return *out ? 0 : -1;
}

static int fold_expand(fl_onnx_ctx *c, fl_onnx_values **out, fl_error *err)
{
	const fl_onnx_values *x = known(c, 0);
	int64_t dims[FL_MAX_RANK], idx[FL_MAX_RANK] = {0};
	fl_shape to, s;
	int n;

	if (fl_onnx_input_ints(c, 1, dims, FL_MAX_RANK, &n, err) < 0)
		return -1;
	to = fl_shape_make(n, dims);
	if (fl_shape_broadcast(&x->shape, &to, &s, err) < 0)
		return -1;
	*out = made_values("Expand", &s, x->dtype, err);
	for (int64_t k = 0; *out && k < (*out)->n;
	     k++, fl_index_next(&s, idx)) {
		int64_t from = fl_broadcast_offset(&x->shape, &s, idx);

		set_elem(*out, k, elem(x, from), x->i ? x->i[from] : 0,
			 x->i != NULL);
	}
	return *out ? 0 : -1;
}

static int fold_where(fl_onnx_ctx *c, fl_onnx_values **out, fl_error *err)
{
	const fl_onnx_values *cond = known(c, 0), *a = known(c, 1),
			     *b = known(c, 2);
	int64_t idx[FL_MAX_RANK] = {0};
	fl_shape s;

	if (!cond || !a || !b) {
		fl_error_set(err, "Where: an input is missing");
		return -1;
	}
	if (fl_shape_broadcast(&cond->shape, &a->shape, &s, err) < 0 ||
	    fl_shape_broadcast(&s, &b->shape, &s, err) < 0)
		return -1;
	*out = made_values("Where", &s, a->dtype, err);
	for (int64_t k = 0; *out && k < (*out)->n;
	     k++, fl_index_next(&s, idx)) {
		bool pick = elem(cond, fl_broadcast_offset(&cond->shape, &s,
							   idx)) != 0;
		const fl_onnx_values *v = pick ? a : b;
		int64_t from = fl_broadcast_offset(&v->shape, &s, idx);

		set_elem(*out, k, elem(v, from), v->i ? v->i[from] : 0,
			 v->i != NULL);
	}
	return *out ? 0 : -1;
}

static int fold_by_type(fl_onnx_ctx *c, const char *t, fl_onnx_values **out,
			fl_error *err)
{
	for (size_t k = 0; k < sizeof binops / sizeof binops[0]; k++)
		if (!strcmp(t, binops[k].op_type))
			return fold_binop(c, binops[k].op, out, err);
	if (!strcmp(t, "Neg") || !strcmp(t, "Abs") || !strcmp(t, "Not") ||
	    !strcmp(t, "Floor") || !strcmp(t, "Ceil") || !strcmp(t, "Sqrt"))
		return fold_unary(c, t, out, err);
	if (fl_onnx_is_reshape_family(t))
		return fold_reshape_family(c, out, err);
	if (!strcmp(t, "Cast"))
		return fold_cast(c, out, err);
	if (!strcmp(t, "Concat"))
		return fold_concat(c, out, err);
	if (!strcmp(t, "Gather"))
		return fold_gather(c, out, err);
	if (!strcmp(t, "Slice"))
		return fold_slice(c, out, err);
	if (!strcmp(t, "ConstantOfShape"))
		return fold_constant_of_shape(c, out, err);
	if (!strcmp(t, "Range"))
		return fold_range(c, out, err);
	if (!strcmp(t, "Expand"))
		return fold_expand(c, out, err);
	if (!strcmp(t, "Where"))
		return fold_where(c, out, err);
	if (fl_onnx_is_window(t))
		return fl_onnx_fold_window(c, out, err);
	return 1;
}

/* Binary ops need both inputs, Where three, Range three. */
static bool enough_inputs(const fl_onnx_ctx *c, const char *t)
{
	int need = 1;

	for (size_t k = 0; k < sizeof binops / sizeof binops[0]; k++)
		if (!strcmp(t, binops[k].op_type))
			need = 2;
	if (!strcmp(t, "Where") || !strcmp(t, "Range"))
		need = 3;
	if (!strcmp(t, "Gather") || !strcmp(t, "Expand"))
		need = 2;
	return fl_onnx_n_inputs(c) >= need;
}

/* Every input known; and integral too, except for the ops that make
 * values (Cast, ConstantOfShape, Range): float arithmetic on weights is
 * left to the graph, where the initializers keep their data and the
 * preprocess folds what it wants. */
static bool all_inputs_known(fl_onnx_ctx *c, const char *t)
{
	bool makes = !strcmp(t, "Cast") || !strcmp(t, "ConstantOfShape") ||
		     !strcmp(t, "Range") || fl_onnx_is_window(t);

	for (int k = 0; k < fl_onnx_n_inputs(c); k++)
		if (fl_onnx_has_input(c, k) &&
		    (!known(c, k) || (!makes && !known(c, k)->i)))
			return false;
	return fl_onnx_n_inputs(c) > 0 && fl_onnx_has_input(c, 0);
}

/* The ops that exist at import only (no mapping makes them graph ops):
 * their values are known, or the node stays opaque. */
static bool import_only(const char *t)
{
	return !strcmp(t, "ConstantOfShape") || !strcmp(t, "Range") ||
	       fl_onnx_is_window(t);
}

/* An import-only node with inputs computed at run time: records that
 * they are wanted known (onnx_bind.c) and says why the node will be
 * opaque; 0, the node is left to the mapping. */
static int want_inputs(fl_onnx_ctx *c)
{
	for (int k = fl_onnx_n_inputs(c) - 1; k >= 0; k--)
		if (fl_onnx_has_input(c, k) && !known(c, k)) {
			fl_onnx_want_known(c, k);
			snprintf(c->reason, sizeof c->reason, "input %d "
				 "computed at run time", k);
		}
	return 0;
}

static int bind_result(fl_onnx_ctx *c, fl_onnx_values *v, fl_error *err)
{
	if (c->node->n_output < 1 || !*c->node->output[0]) {
		fl_onnx_values_delete(v);
		fl_error_set(err, "no output");
		return -1;
	}
	return fl_onnx_bind_known(c, c->node->output[0], v, err);
}

int fl_onnx_fold_node(fl_onnx_ctx *c, fl_error *err)
{
	const char *t = c->node->op_type;
	fl_onnx_values *v = NULL;
	int rc;

	if (!strcmp(t, "Constant"))
		rc = fold_constant(c, &v, err);
	else if (!strcmp(t, "Shape") || !strcmp(t, "Size"))
		rc = fl_onnx_input(c, 0, err) == NULL ? -1
		     : t[1] == 'h' ? fold_shape(c, &v, err)
				   : fold_size(c, &v, err);
	else if (!all_inputs_known(c, t) || !enough_inputs(c, t))
		return import_only(t) ? want_inputs(c) : 0;
	else
		rc = fold_by_type(c, t, &v, err);
	if (rc == 1)
		return 0;
	if (rc < 0) {
		fl_onnx_values_delete(v);
		return -1;
	}
	fl_onnx_values_round(v);	/* a 16-bit float result as stored */
	return bind_result(c, v, err) < 0 ? -1 : 1;
}
