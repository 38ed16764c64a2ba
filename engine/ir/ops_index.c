/* Indexing by indices computed at run time, element by element:
 * gather_elements and scatter_elements (ops.h has their attributes).
 *
 * Contract.  Both take an index tensor idx of the data's rank whose dims
 * are no larger than the data's (the axis excepted), and pair element j
 * of idx with the data element j that has its axis coordinate replaced
 * by idx[j].  An index is read as an integer (an integral float is
 * floored first; NaN reads 0), a negative one counts from the end (ONNX),
 * and what is still outside [0, extent) is clamped into it: a bad index
 * never reads or writes outside the tensor.  fl_index_resolve is that
 * rule, and the C and CUDA printers write the same (print_c.c).
 *
 *   gather_elements(x, idx)       out (idx's shape) [j] = x[j / idx[j]]
 *   scatter_elements(x, idx, upd) out = x; then for each j of upd in
 *                                 row-major order out[j / idx[j]] =
 *                                 upd[j] (reduction none: the last write
 *                                 of a duplicate index wins) or
 *                                 out[..] (+ * max min) upd[j]
 *
 * The reference implementations below work on f32 and typed buffers
 * alike (fl_buf: floats in data, other dtypes exactly in ints), so
 * fl_eval_typed hands these ops straight back here. */
#include <math.h>
#include <string.h>

#include "ops_impl.h"

int64_t fl_index_resolve(double v, int64_t extent)
{
	double f = floor(v);

	if (f != f)
		return 0;
	if (f < 0)
		f += (double)extent;
	if (!(f >= 0.0))
		return 0;
	if (f >= (double)(extent - 1))
		return extent - 1;
	return (int64_t)f;
}

/* The integer index element i of idx stands for (before resolving). */
static int64_t index_at(const fl_buf *idx, int64_t i, int64_t extent)
{
	if (fl_dtype_is_int(idx->dtype)) {
		int64_t v = idx->ints[i];

		if (v < 0)
			v += extent;
		return v < 0 ? 0 : v >= extent ? extent - 1 : v;
	}
	return fl_index_resolve(idx->data[i], extent);
}

static int shape_check(const fl_shape *s, int k, fl_error *err)
{
	if (s->rank < 1 || s->rank > FL_MAX_RANK) {
		fl_error_set(err, "in[%d]: rank %d outside 1..%d", k, s->rank,
			     FL_MAX_RANK);
		return -1;
	}
	for (int d = 0; d < s->rank; d++)
		if (s->dim[d] < 1) {
			fl_error_set(err, "in[%d]: dim %d is %lld, must be >= 1",
				     k, d, (long long)s->dim[d]);
			return -1;
		}
	if (fl_shape_numel(s) < 0) {
		fl_error_set(err, "in[%d]: too many elements", k);
		return -1;
	}
	return 0;
}

int fl_index_axis(const fl_op *op, int rank, int *axis, fl_error *err)
{
	int64_t a;

	if (fl_attr_int(&op->attrs, "axis", 0, &a, err) < 0)
		return -1;
	*axis = fl_axis_normalize(a, rank);
	if (*axis < 0) {
		fl_error_set(err, "attrs.axis: axis %lld out of range for rank %d",
			     (long long)a, rank);
		return -1;
	}
	return 0;
}

/* idx (input k) fits data x along every dim but the axis. */
static int index_fits(const fl_shape *x, const fl_shape *idx, int k,
		      int axis, fl_error *err)
{
	if (idx->rank != x->rank) {
		fl_error_set(err, "in[%d]: rank %d, the data's is %d", k,
			     idx->rank, x->rank);
		return -1;
	}
	for (int d = 0; d < x->rank; d++)
		if (d != axis && idx->dim[d] > x->dim[d]) {
			fl_error_set(err, "in[%d]: dim %d is %lld, larger than "
				     "the data's %lld", k, d,
				     (long long)idx->dim[d], (long long)x->dim[d]);
			return -1;
		}
	return 0;
}

int fl_infer_gather_elements(const fl_op *op, const fl_shape *in,
			     fl_shape *out, fl_error *err)
{
	int axis;

	if (shape_check(&in[0], 0, err) < 0 || shape_check(&in[1], 1, err) < 0 ||
	    fl_index_axis(op, in[0].rank, &axis, err) < 0 ||
	    index_fits(&in[0], &in[1], 1, axis, err) < 0)
		return -1;
	out[0] = in[1];
	return 0;
}

static const char *const reductions[] = {"none", "add", "mul", "max", "min"};

int fl_scatter_reduction(const fl_op *op, fl_scatter_red *r, fl_error *err)
{
	const char *s;

	if (fl_attr_string(&op->attrs, "reduction", "none", &s, err) < 0)
		return -1;
	for (int i = 0; i < (int)(sizeof reductions / sizeof *reductions); i++)
		if (strcmp(s, reductions[i]) == 0) {
			*r = (fl_scatter_red)i;
			return 0;
		}
	fl_error_set(err, "attrs.reduction: \"%s\" is not none, add, mul, max "
		     "or min", s);
	return -1;
}

int fl_infer_scatter_elements(const fl_op *op, const fl_shape *in,
			      fl_shape *out, fl_error *err)
{
	int axis;
	fl_scatter_red r;

	for (int k = 0; k < 3; k++)
		if (shape_check(&in[k], k, err) < 0)
			return -1;
	if (fl_index_axis(op, in[0].rank, &axis, err) < 0 ||
	    fl_scatter_reduction(op, &r, err) < 0 ||
	    index_fits(&in[0], &in[1], 1, axis, err) < 0)
		return -1;
	if (!fl_shape_equal(&in[1], &in[2])) {
		fl_error_set(err, "in[2]: the updates must have the indices' "
			     "shape");
		return -1;
	}
	out[0] = in[0];
	return 0;
}

/* The offset in data x of element i of idx (at coordinates c), its axis
 * coordinate replaced by index v. */
static int64_t data_offset(const fl_shape *x, const int64_t *c, int axis,
			   int64_t v)
{
	int64_t off = 0;

	for (int d = 0; d < x->rank; d++)
		off = off * x->dim[d] + (d == axis ? v : c[d]);
	return off;
}

void fl_eval_gather_elements(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	const fl_shape *xs = &in[0].shape;
	int64_t c[FL_MAX_RANK] = {0}, i = 0;
	int axis;

	fl_index_axis(op, xs->rank, &axis, NULL);
	do {
		int64_t o = data_offset(xs, c, axis,
					index_at(&in[1], i, xs->dim[axis]));

		if (fl_dtype_is_int(out[0].dtype))
			out[0].ints[i] = in[0].ints[o];
		else
			out[0].data[i] = in[0].data[o];
		i++;
	} while (fl_index_next(&in[1].shape, c));
}

static double combine_f(fl_scatter_red r, double o, double u)
{
	switch (r) {
	case FL_SCATTER_ADD: return o + u;
	case FL_SCATTER_MUL: return o * u;
	case FL_SCATTER_MAX: return fmax(o, u);
	case FL_SCATTER_MIN: return fmin(o, u);
	default: return u;
	}
}

/* Integer combinations wrap as two's complement (the type then wraps
 * them to its range, fl_dtype_wrap). */
static int64_t combine_i(fl_scatter_red r, int64_t o, int64_t u)
{
	switch (r) {
	case FL_SCATTER_ADD: return (int64_t)((uint64_t)o + (uint64_t)u);
	case FL_SCATTER_MUL: return (int64_t)((uint64_t)o * (uint64_t)u);
	case FL_SCATTER_MAX: return o > u ? o : u;
	case FL_SCATTER_MIN: return o < u ? o : u;
	default: return u;
	}
}

void fl_eval_scatter_elements(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	const fl_shape *xs = &in[0].shape;
	int64_t c[FL_MAX_RANK] = {0}, i = 0, n = fl_shape_numel(xs);
	bool ints = fl_dtype_is_int(out[0].dtype);
	fl_scatter_red r = FL_SCATTER_NONE;
	int axis;

	fl_index_axis(op, xs->rank, &axis, NULL);
	fl_scatter_reduction(op, &r, NULL);
	if (ints)
		memcpy(out[0].ints, in[0].ints, (size_t)n * sizeof(int64_t));
	else
		memcpy(out[0].data, in[0].data, (size_t)n * sizeof(float));
	do {
		int64_t o = data_offset(xs, c, axis,
					index_at(&in[1], i, xs->dim[axis]));

		if (ints)
			out[0].ints[o] = fl_dtype_wrap(out[0].dtype,
				combine_i(r, out[0].ints[o], in[2].ints[i]));
		else
			out[0].data[o] = (float)combine_f(r, out[0].data[o],
							  in[2].data[i]);
		i++;
	} while (fl_index_next(&in[1].shape, c));
}
