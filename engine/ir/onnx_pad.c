/* ONNX import of Pad's border modes, reflect and edge (onnx_import_impl.h).
 *
 * Contract: fl_onnx_pad_border pads x (a graph tensor) by pads (ONNX
 * order: every leading pad, then every trailing pad, all >= 0) one axis
 * at a time, as a compound of slices and a concat, and writes the result
 * into the node's output 0:
 *   edge     the first (last) element along the axis, broadcast over
 *            the pad;
 *   reflect  the elements mirrored about the first (last) one, which is
 *            not repeated: [1, 2, 3] padded by 2 on the left is
 *            [3, 2, 1, 2, 3]; a pad must be smaller than the extent
 *            (as ONNX requires), and a pad longer than 64 cannot be
 *            modelled (one slice per element).
 * Errors name the problem only. */
#include <string.h>

#include "onnx_import_impl.h"

#define TMP (-1)
#define MAX_REFLECT 64

/* x[..., from:from+len, ...] along axis d. */
static int slice_axis(fl_onnx_ctx *c, int x, int d, int64_t from,
		      int64_t len, fl_error *err)
{
	const fl_shape *s = &c->g->tensors[x].shape;
	int64_t starts[FL_MAX_RANK] = {0}, ends[FL_MAX_RANK];
	fl_attrs a = {0};
	int y;

	for (int k = 0; k < s->rank; k++)
		ends[k] = s->dim[k];
	starts[d] = from;
	ends[d] = from + len;
	if (fl_attrs_set_ints(&a, "starts", starts, s->rank) < 0 ||
	    fl_attrs_set_ints(&a, "ends", ends, s->rank) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	y = fl_onnx_emit(c, FL_OP_SLICE, &x, 1, &a, TMP, err);
	fl_attrs_free(&a);
	return y;
}

/* The edge element at index `at` along d, repeated n times. */
static int edge_part(fl_onnx_ctx *c, int x, int d, int64_t at, int64_t n,
		     fl_error *err)
{
	int y = slice_axis(c, x, d, at, 1, err);
	fl_shape s;
	fl_attrs a = {0};

	if (y < 0 || n == 1)
		return y;
	s = c->g->tensors[y].shape;
	s.dim[d] = n;
	if (fl_attrs_set_ints(&a, "shape", s.dim, s.rank) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	y = fl_onnx_emit(c, FL_OP_BROADCAST_TO, &y, 1, &a, TMP, err);
	fl_attrs_free(&a);
	return y;
}

/* The parts of one side's pad, in order, appended to parts[*n]. */
static int side_parts(fl_onnx_ctx *c, int x, int d, int64_t pad, bool leading,
		      bool reflect, int *parts, int *n, fl_error *err)
{
	int64_t ext = c->g->tensors[x].shape.dim[d];

	if (!pad)
		return 0;
	if (!reflect) {
		parts[*n] = edge_part(c, x, d, leading ? 0 : ext - 1, pad, err);
		return parts[(*n)++] < 0 ? -1 : 0;
	}
	for (int64_t i = 1; i <= pad; i++) {
		/* leading: x[pad], ..., x[1]; trailing: x[ext-2], ... */
		int64_t at = leading ? pad + 1 - i : ext - 1 - i;

		if ((parts[(*n)++] = slice_axis(c, x, d, at, 1, err)) < 0)
			return -1;
	}
	return 0;
}

static int pad_axis(fl_onnx_ctx *c, int x, int d, int64_t before,
		    int64_t after, bool reflect, fl_error *err)
{
	int parts[2 * MAX_REFLECT + 1], n = 0;
	fl_attrs a = {0};
	int y;

	if (side_parts(c, x, d, before, true, reflect, parts, &n, err) < 0)
		return -1;
	parts[n++] = x;
	if (side_parts(c, x, d, after, false, reflect, parts, &n, err) < 0)
		return -1;
	if (fl_attrs_set_number(&a, "axis", d) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	y = fl_onnx_emit(c, FL_OP_CONCAT, parts, n, &a, TMP, err);
	fl_attrs_free(&a);
	return y;
}

int fl_onnx_pad_border(fl_onnx_ctx *c, int x, const int64_t *pads, int rank,
		       bool reflect, fl_error *err)
{
	for (int d = 0; d < rank; d++) {
		int64_t ext = c->g->tensors[x].shape.dim[d];
		int64_t before = pads[d], after = pads[rank + d];

		if (reflect && (before >= ext || after >= ext)) {
			fl_error_set(err, "reflect padding of %lld and %lld on "
				     "axis %d of extent %lld: a pad must be "
				     "smaller than the extent",
				     (long long)before, (long long)after, d,
				     (long long)ext);
			return -1;
		}
		if (reflect && (before > MAX_REFLECT || after > MAX_REFLECT))
			return fl_onnx_cannot_model(c, err, "mode reflect "
						    "with a pad over %d",
						    MAX_REFLECT);
	}
	for (int d = 0; d < rank; d++)
		if ((pads[d] || pads[rank + d]) &&
		    (x = pad_axis(c, x, d, pads[d], pads[rank + d], reflect,
				  err)) < 0)
			return -1;
	return fl_onnx_emit1(c, FL_OP_COPY, x, 0, err) < 0 ? -1 : 0;
}
