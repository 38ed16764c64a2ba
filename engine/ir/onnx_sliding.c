/* ONNX import: the sliding windows Conv, MaxPool, AveragePool and the
 * global pools (onnx_import_impl.h).
 *
 * Contract: maps Conv, MaxPool and AveragePool over 1, 2 or 3 spatial
 * dims (strides, dilations, pads, auto_pad, group, ceil_mode,
 * count_include_pad, storage_order) and GlobalAveragePool/GlobalMaxPool
 * onto the library's 2-D primitives conv2d and pool2d, which take no
 * padding: the window's pads are a `pad` before them (0 for Conv and
 * AveragePool, -FLT_MAX for MaxPool).
 *
 *   1-D   lifted to 2-D over a unit height ([N,C,L] -> [N,C,1,L]) and
 *         back.
 *   3-D   pooling is separable (the max or mean over a box is the max or
 *         mean over depth of those over height x width): pool2d over
 *         [N, C*D, H, W], then pool2d along depth over [N, C, D, Ho*Wo].
 *         Convolution stacks the T depth taps into channels (im2col
 *         along depth): x [N,C,D,H,W] as [N,G,C/G,D,H,W], T strided
 *         depth slices concatenated within each group into
 *         [N,G,T*C/G,Do,H,W], moved to [N*Do, G*T*C/G, H, W]; weights
 *         [K,C/G,T,R,S] as [K,T*C/G,R,S]; one grouped conv2d, whose
 *         [N*Do,K,Ho,Wo] goes back to [N,K,Do,Ho,Wo].  The input is
 *         copied T times, the contraction is one op.
 *   ceil_mode 1   the last window may start past the floor's last one
 *         (ONNX's rule: it must start inside the input or its left pad):
 *         extra end padding that no window counts.  With
 *         count_include_pad 1 an average would have to count the
 *         explicit pads but not that extension: not modelled.
 *   AveragePool with pads and count_include_pad 0: the window sum over
 *         the window count of a zero-padded ones tensor.
 *   MaxPool's Indices (output 1, int64, 1-D and 2-D): per window tap, a
 *         strided slice of the padded input equal to the maximum picks
 *         that tap's input position; the smallest row-major position
 *         over the taps is the first maximum in scan order, as ONNX
 *         takes it; storage_order 1 turns it column-major; then each
 *         (n, c) plane's offset is added.  3-D Indices are not modelled.
 *
 * Forms fuselab cannot model go through fl_onnx_cannot_model (the node
 * stays opaque, saying why); malformed attributes are errors. */
#include "onnx_import_impl.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT 0		/* emit into the node's output 0 */
#define TMP (-1)	/* emit into a new intermediate */
#define MAX_SP 3	/* spatial dims modelled */
#define MAX_INDEX_TAPS 64	/* window taps MaxPool's Indices unroll */

typedef struct window {
	int nsp;			/* spatial dims: 1, 2 or 3 */
	int64_t kernel[MAX_SP], stride[MAX_SP], dilation[MAX_SP];
	int64_t pad_begin[MAX_SP], pad_end[MAX_SP];
	int64_t ceil_pad[MAX_SP];	/* end padding ceil_mode adds */
} window;

static const fl_shape *shape_of(const fl_onnx_ctx *c, int t)
{
	return &c->g->tensors[t].shape;
}

static fl_shape shape_n(int rank, const int64_t *dims)
{
	return fl_shape_make(rank, dims);
}

/* --- attributes --- */

static int read_spatial(fl_onnx_ctx *c, const char *name, int nsp,
			int64_t dflt, int64_t *v, fl_error *err)
{
	int64_t tmp[2 * MAX_SP];
	int n;

	if (fl_onnx_attr_ints(c, name, tmp, 2 * MAX_SP, &n, err) < 0)
		return -1;
	if (n >= 0 && n != nsp) {
		fl_error_set(err, "attribute %s: %d values for %d spatial dims",
			     name, n, nsp);
		return -1;
	}
	for (int d = 0; d < nsp; d++) {
		v[d] = n < 0 ? dflt : tmp[d];
		if (v[d] < (dflt == 0 ? 0 : 1)) {
			fl_error_set(err, "attribute %s: %lld", name,
				     (long long)v[d]);
			return -1;
		}
	}
	return 0;
}

/* Pads from "pads" or "auto_pad" (SAME_UPPER, SAME_LOWER, VALID). */
static int window_pads(fl_onnx_ctx *c, const fl_shape *x, window *w,
		       fl_error *err)
{
	char buf[16];
	const char *ap = fl_onnx_attr_string(c, "auto_pad", "NOTSET", buf,
					     sizeof buf);
	int64_t pads[4 * MAX_SP];
	int n;

	if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
		for (int d = 0; d < w->nsp; d++) {
			int64_t in = x->dim[2 + d];
			int64_t out = (in + w->stride[d] - 1) / w->stride[d];
			int64_t need = (out - 1) * w->stride[d] +
				       (w->kernel[d] - 1) * w->dilation[d] + 1 -
				       in;

			need = need > 0 ? need : 0;
			w->pad_begin[d] = ap[5] == 'U' ? need / 2
						       : need - need / 2;
			w->pad_end[d] = need - w->pad_begin[d];
		}
		return 0;
	}
	if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID")) {
		return fl_onnx_cannot_model(c, err, "auto_pad %s",
					    fl_error_name(ap));
	}
	if (fl_onnx_attr_ints(c, "pads", pads, 4 * MAX_SP, &n, err) < 0)
		return -1;
	if (n >= 0 && n != 2 * w->nsp) {
		fl_error_set(err, "attribute pads: %d values for %d spatial "
			     "dims", n, w->nsp);
		return -1;
	}
	for (int d = 0; d < w->nsp; d++) {
		w->pad_begin[d] = n < 0 || !strcmp(ap, "VALID") ? 0 : pads[d];
		w->pad_end[d] = n < 0 || !strcmp(ap, "VALID") ? 0
							     : pads[w->nsp + d];
		if (w->pad_begin[d] < 0 || w->pad_end[d] < 0) {
			return fl_onnx_cannot_model(c, err, "negative pads");
		}
	}
	return 0;
}

static int read_window(fl_onnx_ctx *c, const fl_shape *x,
		       const int64_t *kernel, window *w, fl_error *err)
{
	memset(w, 0, sizeof *w);
	w->nsp = x->rank - 2;
	if (w->nsp < 1 || w->nsp > MAX_SP) {
		return fl_onnx_cannot_model(c, err, "%d spatial dims",
					    x->rank - 2);
	}
	for (int d = 0; d < w->nsp; d++)
		w->kernel[d] = kernel[d];
	if (read_spatial(c, "strides", w->nsp, 1, w->stride, err) < 0 ||
	    read_spatial(c, "dilations", w->nsp, 1, w->dilation, err) < 0)
		return -1;
	return window_pads(c, x, w, err);
}

/* ceil_mode 1: the output extent rounds up, except that the last window
 * must start inside the input or its left pad; the extra end padding
 * that takes goes to w->ceil_pad (and into pad_end). */
static void ceil_mode_pads(const fl_shape *x, window *w)
{
	for (int d = 0; d < w->nsp; d++) {
		int64_t in = x->dim[2 + d], s = w->stride[d];
		int64_t span = (w->kernel[d] - 1) * w->dilation[d] + 1;
		int64_t total = in + w->pad_begin[d] + w->pad_end[d];
		int64_t out, extra;

		if (total < span)
			continue;	/* conv/pool inference names it */
		out = (total - span + s - 1) / s + 1;
		if ((out - 1) * s >= in + w->pad_begin[d])
			out--;
		extra = (out - 1) * s + span - total;
		if (extra > 0) {
			w->ceil_pad[d] = extra;
			w->pad_end[d] += extra;
		}
	}
}

static bool has_pads(const window *w)
{
	for (int d = 0; d < w->nsp; d++)
		if (w->pad_begin[d] || w->pad_end[d])
			return true;
	return false;
}

static bool has_ceil_pads(const window *w)
{
	for (int d = 0; d < w->nsp; d++)
		if (w->ceil_pad[d])
			return true;
	return false;
}

/* --- shapes: 1-D lifted to 2-D --- */

/* A 1-D window becomes a 2-D one over a unit height: x [N,C,L] is
 * reshaped to [N,C,1,L], and w's parameters get a leading unit dim. */
static int lift_2d(fl_onnx_ctx *c, int x, window *w, fl_error *err)
{
	fl_shape s = *shape_of(c, x);

	if (w->nsp != 1)
		return x;
	w->kernel[1] = w->kernel[0], w->kernel[0] = 1;
	w->stride[1] = w->stride[0], w->stride[0] = 1;
	w->dilation[1] = w->dilation[0], w->dilation[0] = 1;
	w->pad_begin[1] = w->pad_begin[0], w->pad_begin[0] = 0;
	w->pad_end[1] = w->pad_end[0], w->pad_end[0] = 0;
	w->ceil_pad[1] = w->ceil_pad[0], w->ceil_pad[0] = 0;
	w->nsp = 2;
	s.rank = 4;
	s.dim[3] = s.dim[2];
	s.dim[2] = 1;
	return fl_onnx_reshape(c, x, &s, TMP, err);
}

/* Back to the node's rank for a 1-D window: [N,K,1,L] -> [N,K,L]. */
static int drop_unit_height(fl_onnx_ctx *c, int y, int out, fl_error *err)
{
	fl_shape s = *shape_of(c, y);

	s.rank = 3;
	s.dim[2] = s.dim[3];
	return fl_onnx_reshape(c, y, &s, out, err);
}

/* x padded by the window's pads (value v), or x when there are none. */
static int pad_window(fl_onnx_ctx *c, int x, const window *w, double v,
		      fl_error *err)
{
	int rank = shape_of(c, x)->rank;
	int64_t pads[2 * FL_MAX_RANK] = {0};
	bool any = false;
	fl_attrs a = {0};

	for (int d = 0; d < w->nsp; d++) {
		pads[2 + d] = w->pad_begin[d];
		pads[rank + 2 + d] = w->pad_end[d];
		any |= pads[2 + d] || pads[rank + 2 + d];
	}
	if (!any)
		return x;
	if (fl_attrs_set_ints(&a, "pads", pads, 2 * rank) < 0 ||
	    fl_attrs_set_number(&a, "value", v) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_PAD, &x, 1, &a, TMP, err);
}

static int transpose(fl_onnx_ctx *c, int x, const int64_t *perm, int out,
		     fl_error *err)
{
	return fl_onnx_emit_ints(c, FL_OP_TRANSPOSE, x, "perm", perm,
				 shape_of(c, x)->rank, out, err);
}

/* --- pooling --- */

/* One pool2d over the last two dims of the rank-4 x. */
static int pool_2d(fl_onnx_ctx *c, int x, const int64_t *kernel,
		   const int64_t *stride, const int64_t *dilation, bool avg,
		   int out, fl_error *err)
{
	fl_attrs a = {0};

	if (fl_attrs_set_ints(&a, "kernel", kernel, 2) < 0 ||
	    fl_attrs_set_ints(&a, "stride", stride, 2) < 0 ||
	    ((dilation[0] != 1 || dilation[1] != 1) &&
	     fl_attrs_set_ints(&a, "dilation", dilation, 2) < 0) ||
	    fl_attrs_set_string(&a, "mode", avg ? "avg" : "max") < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_POOL2D, &x, 1, &a, out, err);
}

/* The separable 3-D pool of the padded x [N,C,D,H,W] (the contract). */
static int pool_3d(fl_onnx_ctx *c, int x, const window *w, bool avg,
		   int out, fl_error *err)
{
	const fl_shape xs = *shape_of(c, x);
	int64_t n = xs.dim[0], ch = xs.dim[1], dd = xs.dim[2];
	fl_shape s = shape_n(4, (int64_t[]){n, ch * dd, xs.dim[3], xs.dim[4]});
	int64_t ho, wo, d_out;
	int y;

	if ((y = fl_onnx_reshape(c, x, &s, TMP, err)) < 0 ||
	    (y = pool_2d(c, y, w->kernel + 1, w->stride + 1, w->dilation + 1,
			 avg, TMP, err)) < 0)
		return -1;
	ho = shape_of(c, y)->dim[2];
	wo = shape_of(c, y)->dim[3];
	s = shape_n(4, (int64_t[]){n, ch, dd, ho * wo});
	if ((y = fl_onnx_reshape(c, y, &s, TMP, err)) < 0 ||
	    (y = pool_2d(c, y, (int64_t[]){w->kernel[0], 1},
			 (int64_t[]){w->stride[0], 1},
			 (int64_t[]){w->dilation[0], 1}, avg, TMP, err)) < 0)
		return -1;
	d_out = shape_of(c, y)->dim[2];
	s = shape_n(5, (int64_t[]){n, ch, d_out, ho, wo});
	return fl_onnx_reshape(c, y, &s, out, err);
}

/* The pool of the padded x over w's 2 or 3 spatial dims. */
static int pool_nd(fl_onnx_ctx *c, int x, const window *w, bool avg,
		   int out, fl_error *err)
{
	if (w->nsp == 3)
		return pool_3d(c, x, w, avg, out, err);
	return pool_2d(c, x, w->kernel, w->stride, w->dilation, avg, out,
		       err);
}

/* The mean over the valid elements of each window (count_include_pad
 * 0): the window mean of the zero-padded x over the window mean of a
 * zero-padded tensor of ones. */
static int avg_valid_only(fl_onnx_ctx *c, int x, const window *w, int out,
			  fl_error *err)
{
	fl_shape s = *shape_of(c, x);
	char name[300];
	int ones, sum, cnt;

	s.dim[0] = s.dim[1] = 1;
	snprintf(name, sizeof name, "%s.ones", c->origin);
	ones = fl_graph_add_scalar(c->g, name, 1.0f, err);
	if (ones < 0)
		return -1;
	c->g->tensors[ones].shape = s;	/* one value splatted over s */
	if ((sum = pad_window(c, x, w, 0.0, err)) < 0 ||
	    (sum = pool_nd(c, sum, w, true, TMP, err)) < 0 ||
	    (cnt = pad_window(c, ones, w, 0.0, err)) < 0 ||
	    (cnt = pool_nd(c, cnt, w, true, TMP, err)) < 0)
		return -1;
	return fl_onnx_emit2(c, FL_OP_DIV, sum, cnt, out, err);
}

/* An i64 const of shape s, value f(i) at flat position i. */
static int int64_const(fl_onnx_ctx *c, const char *what, const fl_shape *s,
		       int64_t (*f)(int64_t i, const int64_t *arg),
		       const int64_t *arg, fl_error *err)
{
	char base[300], name[300];
	int64_t n = fl_shape_numel(s);
	fl_tensor *t;
	int k;

	snprintf(base, sizeof base, "%s.%s", c->origin, what);
	fl_onnx_unique_name(c, name, sizeof name, base, true);
	k = fl_graph_add_tensor(c->g, name, s, FL_ROLE_CONST, err);
	if (k < 0)
		return -1;
	t = &c->g->tensors[k];
	t->dtype = FL_I64;
	t->n_data = n;
	t->ints = malloc((size_t)n * sizeof *t->ints);
	if (!t->ints)
		return fl_onnx_oom(err);
	for (int64_t i = 0; i < n; i++)
		t->ints[i] = f(i, arg);
	return k;
}

static int64_t identity_of(int64_t i, const int64_t *arg)
{
	(void)arg;
	return i;
}

static int64_t times_arg(int64_t i, const int64_t *arg)
{
	return i * arg[0];
}

/* An i64 scalar constant v. */
static int int64_scalar(fl_onnx_ctx *c, int64_t v, fl_error *err)
{
	int t = fl_onnx_scalar(c, (float)v, err);

	if (t < 0 || fl_tensor_convert_const(&c->g->tensors[t], FL_I64,
					     err) < 0)
		return -1;
	c->g->tensors[t].ints[0] = v;	/* exact beyond float's 2^24 */
	return t;
}

/* i64 x op scalar v. */
static int int64_op(fl_onnx_ctx *c, fl_op_kind kind, int x, int64_t v,
		    fl_error *err)
{
	int s = int64_scalar(c, v, err);

	return s < 0 ? -1 : fl_onnx_emit2(c, kind, x, s, TMP, err);
}

/* Tap (r, q) of every window of the padded rank-4 x: the strided slice
 * of x whose [.., i, j] is that tap of output position (i, j). */
static int window_tap(fl_onnx_ctx *c, int x, const window *w,
		      const fl_shape *ys, int64_t r, int64_t q, fl_error *err)
{
	const fl_shape *xs = shape_of(c, x);
	int64_t starts[4] = {0, 0, r * w->dilation[0], q * w->dilation[1]};
	int64_t ends[4] = {xs->dim[0], xs->dim[1], 0, 0};
	int64_t steps[4] = {1, 1, w->stride[0], w->stride[1]};
	fl_attrs a = {0};

	for (int d = 2; d < 4; d++)
		ends[d] = starts[d] + (ys->dim[d] - 1) * steps[d] + 1;
	if (fl_attrs_set_ints(&a, "starts", starts, 4) < 0 ||
	    fl_attrs_set_ints(&a, "ends", ends, 4) < 0 ||
	    fl_attrs_set_ints(&a, "steps", steps, 4) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_SLICE, &x, 1, &a, TMP, err);
}

/* MaxPool's Indices (the contract) into output 1: xp the padded,
 * lifted input [N,C,Hp,Wp], y its pool, in [N,C,H,W] the unpadded
 * input's shape. */
static int max_indices(fl_onnx_ctx *c, int xp, int y, const window *w,
		       const fl_shape *in, bool column_major, int out,
		       fl_error *err)
{
	const fl_shape ys = *shape_of(c, y);
	int64_t h = in->dim[2], wd = in->dim[3], plane = h * wd;
	fl_shape s = shape_n(4, (int64_t[]){1, 1, h, wd});
	int pos, best = -1, big;

	if (w->kernel[0] * w->kernel[1] > MAX_INDEX_TAPS) {
		return fl_onnx_cannot_model(c, err, "Indices over a window "
					    "of more than %d taps",
					    MAX_INDEX_TAPS);
	}
	if ((pos = int64_const(c, "position", &s, identity_of, NULL,
			       err)) < 0 ||
	    (pos = pad_window(c, pos, w, 0.0, err)) < 0 ||
	    (big = int64_scalar(c, plane, err)) < 0)
		return -1;
	for (int64_t r = 0; r < w->kernel[0]; r++)
		for (int64_t q = 0; q < w->kernel[1]; q++) {
			int in3[3], cand;

			if ((in3[0] = window_tap(c, xp, w, &ys, r, q,
						 err)) < 0 ||
			    (in3[0] = fl_onnx_emit2(c, FL_OP_EQUAL, in3[0], y,
						    TMP, err)) < 0 ||
			    (in3[1] = window_tap(c, pos, w, &ys, r, q,
						 err)) < 0)
				return -1;
			in3[2] = big;
			cand = fl_onnx_emit(c, FL_OP_WHERE, in3, 3, NULL, TMP,
					    err);
			if (cand < 0 ||
			    (best >= 0 && (cand = fl_onnx_emit2(c, FL_OP_MIN,
						best, cand, TMP, err)) < 0))
				return -1;
			best = cand;
		}
	if (column_major) {	/* row i, column j: i + j * H */
		int row = int64_op(c, FL_OP_DIV, best, wd, err), col;

		if (row < 0 || (col = int64_op(c, FL_OP_MUL, row, wd, err)) < 0 ||
		    (col = fl_onnx_emit2(c, FL_OP_SUB, best, col, TMP,
					 err)) < 0 ||
		    (col = int64_op(c, FL_OP_MUL, col, h, err)) < 0 ||
		    (best = fl_onnx_emit2(c, FL_OP_ADD, row, col, TMP,
					  err)) < 0)
			return -1;
	}
	s = shape_n(4, (int64_t[]){in->dim[0], in->dim[1], 1, 1});
	if ((pos = int64_const(c, "plane", &s, times_arg, &plane, err)) < 0)
		return -1;
	return fl_onnx_emit2(c, FL_OP_ADD, best, pos, out, err);
}

/* Output k of the node when the model names it and something reads
 * it. */
static bool output_read(const fl_onnx_ctx *c, int k)
{
	return (size_t)k < c->node->n_output && c->node->output[k] &&
	       c->node->output[k][0] &&
	       fl_onnx_output_read(c, c->node->output[k]);
}

/* The window's forms fuselab does not model, before anything is
 * emitted. */
static int pool_refusals(fl_onnx_ctx *c, const window *w, bool avg,
			 bool indices, fl_error *err)
{
	if (avg && has_ceil_pads(w) &&
	    fl_onnx_attr_int(c, "count_include_pad", 0)) {
		return fl_onnx_cannot_model(c, err, "ceil_mode 1 with "
					    "count_include_pad 1");
	}
	if (indices && w->nsp == 3)
		return fl_onnx_cannot_model(c, err, "Indices of a 3-D MaxPool");
	return 0;
}

int fl_onnx_map_pool(fl_onnx_ctx *c, fl_error *err)
{
	bool avg = !strcmp(c->node->op_type, "AveragePool");
	bool indices = !avg && output_read(c, 1);
	int x = fl_onnx_data(c, 0, err), y, xp, z, n, nsp, out;
	int64_t kernel[2 * MAX_SP];
	fl_shape in, in4;
	window w;

	if (x < 0 ||
	    fl_onnx_attr_ints(c, "kernel_shape", kernel, 2 * MAX_SP, &n,
			      err) < 0)
		return -1;
	in = *shape_of(c, x);
	if (n != in.rank - 2) {
		fl_error_set(err, "attribute kernel_shape: needs one value per "
			     "spatial dim");
		return -1;
	}
	if (read_window(c, &in, kernel, &w, err) < 0)
		return -1;
	if (fl_onnx_attr_int(c, "ceil_mode", 0))
		ceil_mode_pads(&in, &w);
	if (pool_refusals(c, &w, avg, indices, err) < 0)
		return -1;
	nsp = w.nsp;
	out = nsp == 1 ? TMP : OUT;
	if ((x = lift_2d(c, x, &w, err)) < 0)
		return -1;
	in4 = *shape_of(c, x);
	/* (ceil_mode's extension with count_include_pad 1 was refused) */
	if (avg && has_pads(&w) &&
	    !fl_onnx_attr_int(c, "count_include_pad", 0)) {
		y = avg_valid_only(c, x, &w, out, err);
	} else {
		xp = pad_window(c, x, &w, avg ? 0.0 : -FLT_MAX, err);
		y = xp < 0 ? -1 : pool_nd(c, xp, &w, avg, out, err);
		if (y >= 0 && indices &&
		    (z = max_indices(c, xp, y, &w, &in4,
				     fl_onnx_attr_int(c, "storage_order", 0),
				     nsp == 1 ? TMP : 1, err)) < 0)
			return -1;
		if (y >= 0 && indices && nsp == 1 &&
		    drop_unit_height(c, z, 1, err) < 0)
			return -1;
	}
	if (y < 0)
		return -1;
	return nsp == 1 && drop_unit_height(c, y, OUT, err) < 0 ? -1 : 0;
}

/* GlobalAveragePool, GlobalMaxPool: a reduction over the spatial dims,
 * which fuselab keeps as extent 1 like ONNX does. */
int fl_onnx_map_global_pool(fl_onnx_ctx *c, fl_error *err)
{
	bool avg = !strcmp(c->node->op_type, "GlobalAveragePool");
	int x = fl_onnx_data(c, 0, err);
	int64_t axes[FL_MAX_RANK];
	int n = 0;

	if (x < 0)
		return -1;
	for (int d = 2; d < shape_of(c, x)->rank; d++)
		axes[n++] = d;
	return fl_onnx_emit_ints(c, avg ? FL_OP_REDUCE_MEAN : FL_OP_REDUCE_MAX,
				 x, "axes", axes, n, OUT, err) < 0 ? -1 : 0;
}

/* --- convolution --- */

static int conv_2d(fl_onnx_ctx *c, int x, int wt, const int64_t *stride,
		   const int64_t *dilation, int64_t groups, int out,
		   fl_error *err)
{
	int in[2] = {x, wt};
	fl_attrs a = {0};

	if (fl_attrs_set_ints(&a, "stride", stride, 2) < 0 ||
	    fl_attrs_set_ints(&a, "dilation", dilation, 2) < 0 ||
	    fl_attrs_set_number(&a, "groups", (double)groups) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_CONV2D, in, 2, &a, out, err);
}

/* Depth tap t of the padded x seen as [N,G,C/G,Dp,H,W]: the Do depth
 * positions tap t reads, [N,G,C/G,Do,H,W]. */
static int depth_tap(fl_onnx_ctx *c, int x, const window *w, int64_t t,
		     int64_t d_out, fl_error *err)
{
	const fl_shape *xs = shape_of(c, x);
	int64_t starts[6] = {0}, ends[6], steps[6] = {1, 1, 1, 1, 1, 1};
	fl_attrs a = {0};

	for (int d = 0; d < 6; d++)
		ends[d] = xs->dim[d];
	starts[3] = t * w->dilation[0];
	steps[3] = w->stride[0];
	ends[3] = starts[3] + (d_out - 1) * steps[3] + 1;
	if (fl_attrs_set_ints(&a, "starts", starts, 6) < 0 ||
	    fl_attrs_set_ints(&a, "ends", ends, 6) < 0 ||
	    fl_attrs_set_ints(&a, "steps", steps, 6) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_SLICE, &x, 1, &a, TMP, err);
}

/* The depth taps of the padded x [N,C,Dp,H,W] stacked into channels:
 * [N*Do, G*T*C/G, H, W] (the contract). */
static int stack_depth_taps(fl_onnx_ctx *c, int x, const window *w,
			    int64_t groups, int64_t d_out, fl_error *err)
{
	const fl_shape xs = *shape_of(c, x);
	int64_t n = xs.dim[0], cg = xs.dim[1] / groups, t = w->kernel[0];
	fl_shape s = shape_n(6, (int64_t[]){n, groups, cg, xs.dim[2],
					    xs.dim[3], xs.dim[4]});
	int taps[64], y;
	fl_attrs a = {0};

	if ((x = fl_onnx_reshape(c, x, &s, TMP, err)) < 0)
		return -1;
	for (int64_t k = 0; k < t; k++)
		if ((taps[k] = depth_tap(c, x, w, k, d_out, err)) < 0)
			return -1;
	y = taps[0];
	if (t > 1) {
		if (fl_attrs_set_number(&a, "axis", 2) < 0) {
			fl_attrs_free(&a);
			return fl_onnx_oom(err);
		}
		y = fl_onnx_emit_attrs(c, FL_OP_CONCAT, taps, (int)t, &a, TMP,
				       err);
	}
	if (y < 0 || (y = transpose(c, y, (int64_t[]){0, 3, 1, 2, 4, 5}, TMP,
				    err)) < 0)
		return -1;
	s = shape_n(4, (int64_t[]){n * d_out, groups * t * cg, xs.dim[3],
				   xs.dim[4]});
	return fl_onnx_reshape(c, y, &s, TMP, err);
}

/* The 3-D convolution of the padded x with weights wt [K,C/G,T,R,S]
 * (the contract), [N,K,Do,Ho,Wo] into out. */
static int conv_3d(fl_onnx_ctx *c, int x, int wt, const window *w,
		   int64_t groups, int out, fl_error *err)
{
	const fl_shape xs = *shape_of(c, x), ws = *shape_of(c, wt);
	int64_t span = (w->kernel[0] - 1) * w->dilation[0] + 1, d_out;
	fl_shape s;
	int y;

	if (w->kernel[0] > 64) {
		return fl_onnx_cannot_model(c, err, "a 3-D kernel %lld deep",
					    (long long)w->kernel[0]);
	}
	if (groups < 1 || xs.dim[1] % groups || xs.dim[2] < span) {
		fl_error_set(err, "input 0: %s", groups < 1 || xs.dim[1] % groups
			     ? "the group does not divide the channels"
			     : "the kernel is deeper than the input");
		return -1;
	}
	d_out = (xs.dim[2] - span) / w->stride[0] + 1;
	s = shape_n(4, (int64_t[]){ws.dim[0], ws.dim[2] * ws.dim[1],
				   ws.dim[3], ws.dim[4]});
	if ((x = stack_depth_taps(c, x, w, groups, d_out, err)) < 0 ||
	    (wt = transpose(c, wt, (int64_t[]){0, 2, 1, 3, 4}, TMP,
			    err)) < 0 ||
	    (wt = fl_onnx_reshape(c, wt, &s, TMP, err)) < 0 ||
	    (y = conv_2d(c, x, wt, w->stride + 1, w->dilation + 1, groups,
			 TMP, err)) < 0)
		return -1;
	s = shape_n(5, (int64_t[]){xs.dim[0], d_out, ws.dim[0],
				   shape_of(c, y)->dim[2],
				   shape_of(c, y)->dim[3]});
	if ((y = fl_onnx_reshape(c, y, &s, TMP, err)) < 0)
		return -1;
	return transpose(c, y, (int64_t[]){0, 2, 1, 3, 4}, out, err);
}

/* Conv's bias b [K] as [K,1,..] (rank - 1 dims) added to y. */
static int conv_bias(fl_onnx_ctx *c, int y, int b, int out, fl_error *err)
{
	fl_shape s = {0};

	s.rank = shape_of(c, y)->rank - 1;
	s.dim[0] = fl_shape_numel(shape_of(c, b));
	for (int d = 1; d < s.rank; d++)
		s.dim[d] = 1;
	if ((b = fl_onnx_reshape(c, b, &s, TMP, err)) < 0)
		return -1;
	return fl_onnx_emit2(c, FL_OP_ADD, y, b, out, err);
}

int fl_onnx_emit_conv(fl_onnx_ctx *c, int x, int wt, int b, int out,
		      fl_error *err)
{
	int64_t groups = fl_onnx_attr_int(c, "group", 1), kernel[MAX_SP];
	bool bias = b >= 0;
	fl_shape ws, s;
	window w;
	int y, nsp;

	if (x < 0 || wt < 0)
		return -1;
	ws = *shape_of(c, wt);
	if (ws.rank != shape_of(c, x)->rank) {
		fl_error_set(err, "input 1: weights of rank %d for an input of "
			     "rank %d", ws.rank, shape_of(c, x)->rank);
		return -1;
	}
	if (read_window(c, shape_of(c, x), ws.dim + 2, &w, err) < 0 ||
	    read_spatial(c, "kernel_shape", w.nsp, 1, kernel, err) < 0)
		return -1;
	nsp = w.nsp;
	if (nsp == 1) {
		s = shape_n(4, (int64_t[]){ws.dim[0], ws.dim[1], 1, ws.dim[2]});
		if ((wt = fl_onnx_reshape(c, wt, &s, TMP, err)) < 0)
			return -1;
	}
	if ((x = lift_2d(c, x, &w, err)) < 0 ||
	    (x = pad_window(c, x, &w, 0.0, err)) < 0)
		return -1;
	if (nsp == 3)
		y = conv_3d(c, x, wt, &w, groups, bias ? TMP : out, err);
	else
		y = conv_2d(c, x, wt, w.stride, w.dilation, groups,
			    nsp == 2 && !bias ? out : TMP, err);
	if (y < 0 || (bias && (y = conv_bias(c, y, b, nsp == 1 ? TMP : out,
					     err)) < 0))
		return -1;
	return nsp == 1 ? drop_unit_height(c, y, out, err) : y;
}

int fl_onnx_map_conv(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), w = x < 0 ? -1 : fl_onnx_data(c, 1, err);
	int b = -1;

	if (w >= 0 && fl_onnx_has_input(c, 2) && (b = fl_onnx_data(c, 2, err)) < 0)
		return -1;
	return fl_onnx_emit_conv(c, x, w, b, OUT, err) < 0 ? -1 : 0;
}
