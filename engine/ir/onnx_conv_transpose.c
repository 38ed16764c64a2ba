/* ONNX import: ConvTranspose as a convolution (onnx_import_impl.h,
 * issue 29: the PaddleOCR detector's upsampling head).
 *
 * Contract: fl_onnx_map_conv_transpose maps a 1-D or 2-D ConvTranspose
 * (strides, dilations, pads, auto_pad, group, output_padding,
 * output_shape, an optional bias) to ops of the library; weights may be
 * constants or computed.  A transposed convolution is the convolution of
 * the input spread out by the stride (s - 1 zeros between elements),
 * padded by dilation * (kernel - 1) less the transposed convolution's
 * own pads on each side (a negative amount crops), with the kernel
 * flipped in space and its two channel dims swapped within each group:
 *
 *   spread:  x [N,C,H,W] -> [N,C,H,1,W,1] -> pad to [N,C,H,s,W,s]
 *            -> [N,C,H*s,W*s] (the last s-1 rows and columns are zeros,
 *            counted in the right padding)
 *   kernel:  w [C, M/g, R, S] -> [g, C/g, M/g, R, S] -> swap 1, 2
 *            -> [M, C/g, R, S] -> reversed along R and S (gathers)
 *   conv2d with the dilation and group, stride 1; bias [M] added.
 *
 * Output extents follow ONNX: stride * (in - 1) + output_padding +
 * (kernel - 1) * dilation + 1 - pads, or output_shape with the pads it
 * implies.  3-D and larger are refused with an error naming the rank. */
#include "onnx_import_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT 0
#define TMP (-1)

/* The largest stride and dilation, and pads' magnitude, taken: the
 * extents computed from them then fit in 64 bits whatever the model
 * says (they are checked against fuselab's limits when the ops are
 * inferred). */
#define MAX_FACTOR ((int64_t)1 << 20)
#define MAX_PAD ((int64_t)1 << 40)

/* The spatial parameters of one (1-D or 2-D) transposed convolution,
 * for two spatial dims (1-D is lifted to height 1). */
typedef struct tconv {
	int nsp;		/* spatial dims of the node: 1 or 2 */
	int64_t in[2], kernel[2], stride[2], dilation[2];
	int64_t pad_lo[2], pad_hi[2], out_pad[2], out[2];
	int64_t group;
} tconv;

static const fl_shape *shape_of(const fl_onnx_ctx *c, int t)
{
	return &c->g->tensors[t].shape;
}

/* An int list attribute of nsp values (default dflt each); *given
 * whether the node had it. */
static int spatial_attr(fl_onnx_ctx *c, const char *name, int nsp,
			int64_t dflt, int64_t *v, bool *given, fl_error *err)
{
	int64_t buf[4];
	int n;

	if (fl_onnx_attr_ints(c, name, buf, 4, &n, err) < 0)
		return -1;
	if (given)
		*given = n >= 0;
	for (int d = 0; d < nsp; d++)
		v[d] = n < 0 ? dflt : buf[d];
	if (n >= 0 && n != nsp) {
		fl_error_set(err, "attribute %s: %d values for %d spatial dims",
			     name, n, nsp);
		return -1;
	}
	return 0;
}

/* The pads attribute (begins then ends), or the pads auto_pad or
 * output_shape imply; then the output extents. */
static int read_pads(fl_onnx_ctx *c, tconv *t, fl_error *err)
{
	char buf[16];
	const char *auto_pad = fl_onnx_attr_string(c, "auto_pad", "NOTSET",
						   buf, sizeof buf);
	bool upper = !strcmp(auto_pad, "SAME_UPPER"), has_shape;
	int64_t pads[4], shape[2];
	int n;

	if (strcmp(auto_pad, "NOTSET") && strcmp(auto_pad, "VALID") &&
	    !upper && strcmp(auto_pad, "SAME_LOWER")) {
		fl_error_set(err, "attribute auto_pad: \"%s\"", auto_pad);
		return -1;
	}
	if (spatial_attr(c, "output_shape", t->nsp, 0, shape, &has_shape,
			 err) < 0 ||
	    fl_onnx_attr_ints(c, "pads", pads, 4, &n, err) < 0)
		return -1;
	if (n >= 0 && n != 2 * t->nsp) {
		fl_error_set(err, "attribute pads: %d values for %d spatial "
			     "dims", n, t->nsp);
		return -1;
	}
	for (int k = 0; k < t->nsp; k++)
		if ((n >= 0 && (pads[k] > MAX_PAD || pads[k] < -MAX_PAD ||
				pads[t->nsp + k] > MAX_PAD ||
				pads[t->nsp + k] < -MAX_PAD)) ||
		    (has_shape && (shape[k] < 1 || shape[k] > MAX_PAD))) {
			fl_error_set(err, "attribute %s: a value out of range",
				     has_shape ? "output_shape" : "pads");
			return -1;
		}
	for (int d = 0; d < t->nsp; d++) {
		int64_t full = t->stride[d] * (t->in[d] - 1) + t->out_pad[d] +
			       (t->kernel[d] - 1) * t->dilation[d] + 1;
		bool same = upper || !strcmp(auto_pad, "SAME_LOWER");

		if (has_shape || same) {
			int64_t want = has_shape ? shape[d]
						 : t->in[d] * t->stride[d];
			int64_t total = full - want;
			/* halved rounding down, as ONNX's reference does (an
			 * output_shape above the full extent makes it < 0) */
			int64_t half = total >= 0 ? total / 2
						  : -((1 - total) / 2);

			t->pad_lo[d] = upper ? half : total - half;
			t->pad_hi[d] = total - t->pad_lo[d];
		} else {
			t->pad_lo[d] = n < 0 || !strcmp(auto_pad, "VALID")
				       ? 0 : pads[d];
			t->pad_hi[d] = n < 0 || !strcmp(auto_pad, "VALID")
				       ? 0 : pads[t->nsp + d];
		}
		t->out[d] = full - t->pad_lo[d] - t->pad_hi[d];
		if (t->out[d] < 1) {
			fl_error_set(err, "spatial dim %d: the output would "
				     "have %lld elements", d,
				     (long long)t->out[d]);
			return -1;
		}
	}
	return 0;
}

static int read_params(fl_onnx_ctx *c, const fl_shape *xs, const fl_shape *ws,
		       tconv *t, fl_error *err)
{
	bool given;

	memset(t, 0, sizeof *t);
	t->nsp = xs->rank - 2;
	if (t->nsp < 1 || t->nsp > 2 || ws->rank != xs->rank) {
		fl_error_set(err, "input 0: rank %d, weights rank %d: not "
			     "supported (1-D and 2-D transposed convolutions "
			     "are)", xs->rank, ws->rank);
		return -1;
	}
	t->group = fl_onnx_attr_int(c, "group", 1);
	if (t->group < 1 || ws->dim[0] != xs->dim[1] ||
	    xs->dim[1] % t->group) {
		fl_error_set(err, "input 1: weights [%lld, ...] for %lld "
			     "channels in %lld groups", (long long)ws->dim[0],
			     (long long)xs->dim[1], (long long)t->group);
		return -1;
	}
	if (spatial_attr(c, "kernel_shape", t->nsp, 0, t->kernel, &given,
			 err) < 0 ||
	    spatial_attr(c, "strides", t->nsp, 1, t->stride, NULL, err) < 0 ||
	    spatial_attr(c, "dilations", t->nsp, 1, t->dilation, NULL,
			 err) < 0 ||
	    spatial_attr(c, "output_padding", t->nsp, 0, t->out_pad, NULL,
			 err) < 0)
		return -1;
	for (int d = 0; d < t->nsp; d++) {
		t->in[d] = xs->dim[2 + d];
		if (!given)
			t->kernel[d] = ws->dim[2 + d];
		if (t->kernel[d] != ws->dim[2 + d] || t->stride[d] < 1 ||
		    t->stride[d] > MAX_FACTOR || t->dilation[d] < 1 ||
		    t->dilation[d] > MAX_FACTOR || t->out_pad[d] < 0 ||
		    (t->out_pad[d] >= t->stride[d] &&
		     t->out_pad[d] >= t->dilation[d])) {
			fl_error_set(err, "spatial dim %d: kernel %lld "
				     "(weights %lld), stride %lld, dilation "
				     "%lld, output_padding %lld", d,
				     (long long)t->kernel[d],
				     (long long)ws->dim[2 + d],
				     (long long)t->stride[d],
				     (long long)t->dilation[d],
				     (long long)t->out_pad[d]);
			return -1;
		}
	}
	return 0;
}

/* A 1-D t as a 2-D one of height 1: its dim moves to the width. */
static void lift_1d(tconv *t)
{
	int64_t *v[] = {t->in, t->kernel, t->stride, t->dilation, t->pad_lo,
			t->pad_hi, t->out_pad, t->out};
	static const int64_t height[] = {1, 1, 1, 1, 0, 0, 0, 1};

	for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
		v[k][1] = v[k][0];
		v[k][0] = height[k];
	}
}

static int reshape(fl_onnx_ctx *c, int x, int rank, const int64_t *dims,
		   fl_error *err)
{
	fl_shape s = fl_shape_make(rank, dims);

	return x < 0 ? -1 : fl_onnx_reshape(c, x, &s, TMP, err);
}

/* x [N,C,H,W] padded by lo[d] before and hi[d] after along H and W (d 0,
 * 1); negative amounts crop. */
static int pad_or_crop(fl_onnx_ctx *c, int x, const int64_t *lo,
		       const int64_t *hi, fl_error *err)
{
	const fl_shape *s;
	int64_t pads[8] = {0}, starts[4] = {0}, ends[4];
	bool crop = false, pad = false;

	if (x < 0)
		return -1;
	s = shape_of(c, x);
	memcpy(ends, s->dim, sizeof ends);
	for (int d = 0; d < 2; d++) {
		starts[2 + d] = lo[d] < 0 ? -lo[d] : 0;
		ends[2 + d] = s->dim[2 + d] + (hi[d] < 0 ? hi[d] : 0);
		pads[2 + d] = lo[d] > 0 ? lo[d] : 0;
		pads[6 + d] = hi[d] > 0 ? hi[d] : 0;
		crop |= lo[d] < 0 || hi[d] < 0;
		pad |= lo[d] > 0 || hi[d] > 0;
	}
	if (crop) {
		fl_attrs a = {0};

		if (fl_attrs_set_ints(&a, "starts", starts, 4) < 0 ||
		    fl_attrs_set_ints(&a, "ends", ends, 4) < 0) {
			fl_attrs_free(&a);
			return fl_onnx_oom(err);
		}
		x = fl_onnx_emit(c, FL_OP_SLICE, &x, 1, &a, TMP, err);
		fl_attrs_free(&a);
	}
	return pad ? fl_onnx_emit_ints(c, FL_OP_PAD, x, "pads", pads, 8, TMP,
				       err)
		   : x;
}

/* x [N,C,H,W] with s-1 zeros after each element along H and W, and
 * padded for the convolution (the trailing zeros of the spread count in
 * its right padding). */
static int spread_and_pad(fl_onnx_ctx *c, int x, const tconv *t,
			  fl_error *err)
{
	const fl_shape *s = shape_of(c, x);
	int64_t n = s->dim[0], ch = s->dim[1], lo[2], hi[2];

	if (t->stride[0] > 1 || t->stride[1] > 1) {
		int64_t pads[12] = {0};

		pads[6 + 3] = t->stride[0] - 1;
		pads[6 + 5] = t->stride[1] - 1;
		x = reshape(c, x, 6, (int64_t[]){n, ch, t->in[0], 1, t->in[1],
						 1}, err);
		x = fl_onnx_emit_ints(c, FL_OP_PAD, x, "pads", pads, 12, TMP, err);
		x = reshape(c, x, 4, (int64_t[]){n, ch,
			    t->in[0] * t->stride[0], t->in[1] * t->stride[1]},
			    err);
	}
	for (int d = 0; d < 2; d++) {
		int64_t reach = t->dilation[d] * (t->kernel[d] - 1);

		lo[d] = reach - t->pad_lo[d];
		hi[d] = reach - t->pad_hi[d] + t->out_pad[d] -
			(t->stride[d] - 1);
	}
	return pad_or_crop(c, x, lo, hi, err);
}

/* The index list n-1, ..., 0 as a const tensor. */
static int reversed_index(fl_onnx_ctx *c, int64_t n, fl_error *err)
{
	fl_shape s = fl_shape_make(1, &n);
	float *v = malloc((size_t)n * sizeof *v);
	int t;

	if (!v)
		return fl_onnx_oom(err);
	for (int64_t i = 0; i < n; i++)
		v[i] = (float)(n - 1 - i);
	t = fl_onnx_const_tensor(c, "flip", &s, v, err);
	free(v);
	return t;
}

static int gather_axis(fl_onnx_ctx *c, int x, int idx, int axis,
		       fl_error *err)
{
	fl_attrs a = {0};
	int in[2] = {x, idx}, t;

	if (x < 0 || idx < 0)
		return -1;
	if (fl_attrs_set_number(&a, "axis", axis) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	t = fl_onnx_emit(c, FL_OP_GATHER, in, 2, &a, TMP, err);
	fl_attrs_free(&a);
	return t;
}

/* w [C, M/g, R, S] as conv2d's [M, C/g, R, S], flipped in R and S. */
static int conv_kernel(fl_onnx_ctx *c, int w, const tconv *t, fl_error *err)
{
	const fl_shape *s = shape_of(c, w);
	int64_t g = t->group, cg = s->dim[0] / g, mg = s->dim[1];
	int64_t r = t->kernel[0], k = t->kernel[1];
	static const int64_t swap[5] = {0, 2, 1, 3, 4};

	w = reshape(c, w, 5, (int64_t[]){g, cg, mg, r, k}, err);
	w = fl_onnx_emit_ints(c, FL_OP_TRANSPOSE, w, "perm", swap, 5, TMP, err);
	w = reshape(c, w, 4, (int64_t[]){g * mg, cg, r, k}, err);
	if (r > 1)
		w = gather_axis(c, w, reversed_index(c, r, err), 2, err);
	if (k > 1)
		w = gather_axis(c, w, reversed_index(c, k, err), 3, err);
	return w;
}

int fl_onnx_map_conv_transpose(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), w, y, in[2];
	fl_shape xs, ws;
	fl_attrs a = {0};
	int64_t m;
	tconv t;

	if (x < 0 || (w = fl_onnx_data(c, 1, err)) < 0)
		return -1;
	xs = *shape_of(c, x);
	ws = *shape_of(c, w);
	if (read_params(c, &xs, &ws, &t, err) < 0 || read_pads(c, &t, err) < 0)
		return -1;
	m = ws.dim[1] * t.group;
	if (t.nsp == 1) {
		lift_1d(&t);
		x = reshape(c, x, 4, (int64_t[]){xs.dim[0], xs.dim[1], 1,
						 xs.dim[2]}, err);
		w = reshape(c, w, 4, (int64_t[]){ws.dim[0], ws.dim[1], 1,
						 ws.dim[2]}, err);
	}
	in[0] = x < 0 ? -1 : spread_and_pad(c, x, &t, err);
	in[1] = w < 0 ? -1 : conv_kernel(c, w, &t, err);
	if (in[0] < 0 || in[1] < 0)
		return -1;
	if (fl_attrs_set_ints(&a, "dilation", t.dilation, 2) < 0 ||
	    fl_attrs_set_number(&a, "groups", (double)t.group) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	y = fl_onnx_emit(c, FL_OP_CONV2D, in, 2, &a, TMP, err);
	fl_attrs_free(&a);
	if (y >= 0 && fl_onnx_has_input(c, 2)) {
		int b = fl_onnx_data(c, 2, err);

		b = reshape(c, b, 3, (int64_t[]){m, 1, 1}, err);
		y = b < 0 ? -1 : fl_onnx_emit2(c, FL_OP_ADD, y, b, TMP, err);
	}
	if (y < 0)
		return -1;
	xs.dim[1] = m;
	for (int d = 0; d < t.nsp; d++)
		xs.dim[2 + d] = t.out[2 - t.nsp + d];
	return fl_onnx_reshape(c, y, &xs, OUT, err) < 0 ? -1 : 0;
}
