/* ONNX import: Resize and Upsample as gathers and weighted sums
 * (onnx_import_impl.h, issue 29).
 *
 * Contract: fl_onnx_map_resize maps the node being imported (Resize at
 * opsets 10 to 18, Upsample before 10) whose scales or sizes are known
 * at import, in the modes nearest (every nearest_mode), linear and cubic
 * (cubic_coeff_a, exclude_outside) and the coordinate transformations
 * half_pixel, pytorch_half_pixel, align_corners, asymmetric and
 * tf_half_pixel_for_nn, on any rank.  Each resized axis is sampled
 * separately: output index o of axis d reads taps t of the input at
 * indices idx_t[o] (clamped into the axis, as ONNX's reference pads the
 * edges) with weights w_t[o], all computed here in double as ONNX's
 * reference does, so the graph gets gather(x, idx_t, axis d) times w_t,
 * added up over the taps (one tap of weight 1 for nearest: a gather).
 * Forms it does not compute (tf_crop_and_resize, half_pixel_symmetric,
 * antialias, a keep_aspect_ratio_policy other than stretch) keep the
 * node an opaque custom op, as an unknown operator is.  Bad attributes
 * are errors naming them. */
#include "onnx_import_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TMP (-1)
#define MAX_TAPS 4
/* The longest resized axis: its index and weight tables are made at
 * import. */
#define MAX_EXTENT ((int64_t)1 << 24)

enum resize_mode { NEAREST, LINEAR, CUBIC };
enum coord_mode {
	HALF_PIXEL, PYTORCH_HALF_PIXEL, ALIGN_CORNERS, ASYMMETRIC,
	TF_HALF_PIXEL_FOR_NN,
};
enum nearest_mode { ROUND_PREFER_FLOOR, ROUND_PREFER_CEIL, FLOOR, CEIL };

typedef struct resize_form {
	enum resize_mode mode;
	enum coord_mode coord;
	enum nearest_mode nearest;
	double cubic_a;
	bool exclude_outside;
} resize_form;

/* One axis' sampling: n taps, idx[t][o] and w[t][o] per output index. */
typedef struct axis_taps {
	int n;
	float *idx[MAX_TAPS], *w[MAX_TAPS];
	bool nearest;		/* one tap of weight 1 */
} axis_taps;

/* Index of s in names (NULL-ended), or -1. */
static int pick(const char *s, const char *const *names)
{
	for (int k = 0; names[k]; k++)
		if (!strcmp(s, names[k]))
			return k;
	return -1;
}

/* The node's form; 0 when supported, 1 when it is one fuselab keeps
 * opaque, -1 on a bad attribute. */
static int read_form(fl_onnx_ctx *c, resize_form *f, fl_error *err)
{
	static const char *const modes[] = {"nearest", "linear", "cubic", NULL};
	static const char *const coords[] = {
		"half_pixel", "pytorch_half_pixel", "align_corners",
		"asymmetric", "tf_half_pixel_for_nn", NULL};
	static const char *const nearests[] = {
		"round_prefer_floor", "round_prefer_ceil", "floor", "ceil",
		NULL};
	bool upsample = !strcmp(c->node->op_type, "Upsample");
	char b1[32], b2[32], b3[32];
	const char *mode = fl_onnx_attr_string(c, "mode", "nearest", b1,
					       sizeof b1);
	const char *coord = fl_onnx_attr_string(
		c, "coordinate_transformation_mode",
		upsample || c->opset < 11 ? "asymmetric" : "half_pixel", b2,
		sizeof b2);
	const char *nearest = fl_onnx_attr_string(
		c, "nearest_mode", upsample || c->opset < 11
		? "floor" : "round_prefer_floor", b3, sizeof b3);
	int m = pick(!strcmp(mode, "bilinear") ? "linear" : mode, modes);
	int co = pick(coord, coords), ne = pick(nearest, nearests);
	char policy[32];

	if (m < 0) {
		fl_error_set(err, "attribute mode: \"%s\" (nearest, linear "
			     "or cubic)", mode);
		return -1;
	}
	if (ne < 0) {
		fl_error_set(err, "attribute nearest_mode: \"%s\"", nearest);
		return -1;
	}
	if (co < 0 && strcmp(coord, "tf_crop_and_resize") &&
	    strcmp(coord, "half_pixel_symmetric")) {
		fl_error_set(err, "attribute coordinate_transformation_mode: "
			     "\"%s\"", coord);
		return -1;
	}
	if (co < 0 || fl_onnx_attr_int(c, "antialias", 0) ||
	    strcmp(fl_onnx_attr_string(c, "keep_aspect_ratio_policy",
				       "stretch", policy, sizeof policy),
		   "stretch"))
		return 1;
	f->mode = (enum resize_mode)m;
	f->coord = (enum coord_mode)co;
	f->nearest = (enum nearest_mode)ne;
	f->cubic_a = fl_onnx_attr_float(c, "cubic_coeff_a", -0.75f);
	f->exclude_outside = fl_onnx_attr_int(c, "exclude_outside", 0) != 0;
	return 0;
}

/* The scales input of the node (or Upsample-7's attribute) as floats,
 * *n of them; *n 0 when there are none (absent or empty). */
static int read_scales(fl_onnx_ctx *c, float *scales, int max, int *n,
		       fl_error *err)
{
	bool upsample = !strcmp(c->node->op_type, "Upsample");
	int at = !upsample && c->opset >= 11 ? 2 : 1;
	const Onnx__AttributeProto *a = fl_onnx_attr(c, "scales");
	const fl_onnx_values *v;

	*n = 0;
	if (upsample && a) {
		if (a->n_floats > (size_t)max) {
			fl_error_set(err, "attribute scales: too many values");
			return -1;
		}
		*n = (int)a->n_floats;
		memcpy(scales, a->floats, a->n_floats * sizeof *scales);
		return 0;
	}
	if (!fl_onnx_has_input(c, at))
		return 0;
	if (!(v = fl_onnx_input_known(c, at))) {
		fl_onnx_want_known(c, at);
		fl_error_set(err, "input %d: the scales must be known at "
			     "import (a constant, or computed from shapes "
			     "only)", at);
		return -1;
	}
	if (v->n > max) {
		fl_error_set(err, "input %d: %lld scales for rank %d", at,
			     (long long)v->n, max);
		return -1;
	}
	*n = (int)v->n;
	memcpy(scales, v->f, (size_t)v->n * sizeof *scales);
	return 0;
}

/* Output extents and scales per dim of the node's input shape `in`. */
static int read_targets(fl_onnx_ctx *c, const fl_shape *in, fl_shape *out,
			double *scale, fl_error *err)
{
	int64_t axes[FL_MAX_RANK], sizes[FL_MAX_RANK];
	float scales[FL_MAX_RANK];
	int n_axes, n_scales, n_sizes = 0;
	bool upsample = !strcmp(c->node->op_type, "Upsample");

	if (fl_onnx_attr_ints(c, "axes", axes, FL_MAX_RANK, &n_axes, err) < 0 ||
	    read_scales(c, scales, FL_MAX_RANK, &n_scales, err) < 0)
		return -1;
	if (n_axes < 0) {
		n_axes = in->rank;
		for (int d = 0; d < in->rank; d++)
			axes[d] = d;
	}
	for (int k = 0; k < n_axes; k++)
		if ((axes[k] = fl_axis_normalize(axes[k], in->rank)) < 0) {
			fl_error_set(err, "attribute axes: axis out of range "
				     "for rank %d", in->rank);
			return -1;
		}
	if (!upsample && c->opset >= 11 && fl_onnx_has_input(c, 3) &&
	    fl_onnx_input_ints(c, 3, sizes, FL_MAX_RANK, &n_sizes, err) < 0)
		return -1;
	if ((n_sizes > 0) == (n_scales > 0)) {
		fl_error_set(err, "needs either scales or sizes (%s)",
			     n_sizes > 0 ? "both given" : "neither given");
		return -1;
	}
	if ((n_sizes > 0 ? n_sizes : n_scales) != n_axes) {
		fl_error_set(err, "%d %s for %d axes", n_sizes > 0 ? n_sizes
			     : n_scales, n_sizes > 0 ? "sizes" : "scales",
			     n_axes);
		return -1;
	}
	*out = *in;
	for (int d = 0; d < in->rank; d++)
		scale[d] = 1;
	for (int k = 0; k < n_axes; k++) {
		int d = (int)axes[k];
		/* the extent as a double first: a huge scale must not
		 * overflow the conversion */
		double n = n_sizes > 0 ? (double)sizes[k]
				       : (double)in->dim[d] * scales[k];

		scale[d] = n_sizes > 0 ? n / (double)in->dim[d] : scales[k];
		if (!(scale[d] > 0) || !(n >= 1) || n > (double)MAX_EXTENT) {
			fl_error_set(err, "axis %d: scale %g gives %g elements "
				     "(1 to %lld are supported)", d, scale[d],
				     n, (long long)MAX_EXTENT);
			return -1;
		}
		out->dim[d] = (int64_t)n;
	}
	return 0;
}

/* The input coordinate output index o maps to (ONNX's reference: the
 * output width is scale * input width, not the rounded extent). */
static double source_coord(const resize_form *f, double o, double scale,
			   int64_t in_len)
{
	double out_width = scale * (double)in_len;

	switch (f->coord) {
	case ALIGN_CORNERS:
		return out_width == 1 ? 0 : o * (double)(in_len - 1) /
					    (out_width - 1);
	case ASYMMETRIC:
		return o / scale;
	case PYTORCH_HALF_PIXEL:
		return out_width == 1 ? -0.5 : (o + 0.5) / scale - 0.5;
	case TF_HALF_PIXEL_FOR_NN:
		return (o + 0.5) / scale;
	case HALF_PIXEL:
	default:
		return (o + 0.5) / scale - 0.5;
	}
}

static int64_t clamp_index(int64_t i, int64_t len)
{
	return i < 0 ? 0 : i >= len ? len - 1 : i;
}

/* ONNX's cubic convolution weights of the four taps around a point at
 * `ratio` (in (0, 1]) past the second tap. */
static void cubic_weights(double r, double a, double *w)
{
	double s = 1 - r;

	w[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
	w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
	w[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
	w[3] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
}

/* The taps of output index o: *n indices (unclamped) and weights.  As
 * the reference, a point on an input index counts as ratio 1 past the
 * index before it. */
static void point_taps(const resize_form *f, double x, int64_t *idx,
		       double *w, int *n)
{
	double fl = floor(x);
	bool on_index = x == fl;
	int64_t base = on_index ? (int64_t)fl - 1 : (int64_t)fl;
	double r = on_index ? 1 : x - fl;

	switch (f->mode) {
	case NEAREST: {
		bool up = on_index ||
			  f->nearest == CEIL ||
			  (f->nearest == ROUND_PREFER_FLOOR && r > 0.5) ||
			  (f->nearest == ROUND_PREFER_CEIL && r >= 0.5);

		*n = 1;
		idx[0] = up ? base + 1 : base;
		w[0] = 1;
		return;
	}
	case LINEAR:
		*n = 2;
		idx[0] = base;
		idx[1] = base + 1;
		w[0] = 1 - r;
		w[1] = r;
		return;
	case CUBIC:
	default:
		*n = 4;
		for (int t = 0; t < 4; t++)
			idx[t] = base - 1 + t;
		cubic_weights(r, f->cubic_a, w);
		return;
	}
}

/* exclude_outside: taps outside the input get weight 0, the others are
 * scaled to sum to 1. */
static void exclude_outside(const int64_t *idx, double *w, int n,
			    int64_t len)
{
	double sum = 0;

	for (int t = 0; t < n; t++) {
		if (idx[t] < 0 || idx[t] >= len)
			w[t] = 0;
		sum += w[t];
	}
	for (int t = 0; sum != 0 && t < n; t++)
		w[t] /= sum;
}

static void taps_free(axis_taps *a)
{
	for (int t = 0; t < MAX_TAPS; t++) {
		free(a->idx[t]);
		free(a->w[t]);
		a->idx[t] = a->w[t] = NULL;
	}
}

/* The taps of an axis from in_len to out_len elements; false when out
 * of memory. */
static bool axis_sampling(const resize_form *f, int64_t in_len,
			  int64_t out_len, double scale, axis_taps *a)
{
	memset(a, 0, sizeof *a);
	for (int64_t o = 0; o < out_len; o++) {
		int64_t idx[MAX_TAPS];
		double w[MAX_TAPS];

		point_taps(f, source_coord(f, (double)o, scale, in_len), idx,
			   w, &a->n);
		if (f->mode == CUBIC && f->exclude_outside)
			exclude_outside(idx, w, a->n, in_len);
		for (int t = 0; t < a->n; t++) {
			if (o == 0 &&
			    (!(a->idx[t] = malloc(out_len * sizeof(float))) ||
			     !(a->w[t] = malloc(out_len * sizeof(float))))) {
				taps_free(a);
				return false;
			}
			a->idx[t][o] = (float)clamp_index(idx[t], in_len);
			a->w[t][o] = (float)w[t];
		}
	}
	return true;
}

/* Whether the sampling reads element o for output o, with weight 1. */
static bool is_identity(const axis_taps *a, int64_t in_len, int64_t out_len)
{
	if (in_len != out_len)
		return false;
	for (int64_t o = 0; o < out_len; o++) {
		double own = 0;

		for (int t = 0; t < a->n; t++)
			if (a->idx[t][o] == (float)o)
				own += a->w[t][o];
			else if (a->w[t][o] != 0)
				return false;
		if (own != 1)
			return false;
	}
	return true;
}

/* x resampled along axis d by a: the sum over taps of gather(x, idx_t)
 * * w_t (a nearest tap of weight 1 is the gather alone). */
static int resample_axis(fl_onnx_ctx *c, int x, int d, int64_t out_len,
			 const axis_taps *a, fl_error *err)
{
	const fl_shape *xs = &c->g->tensors[x].shape;
	fl_shape is = fl_shape_make(1, &out_len), ws = is;
	int sum = -1;

	for (int k = d + 1; k < xs->rank; k++)
		ws.dim[ws.rank++] = 1;
	for (int t = 0; t < a->n; t++) {
		fl_attrs at = {0};
		int in[2], g, w;

		if ((in[1] = fl_onnx_const_tensor(c, "index", &is, a->idx[t],
						  err)) < 0)
			return -1;
		in[0] = x;
		if (fl_attrs_set_number(&at, "axis", d) < 0) {
			fl_attrs_free(&at);
			fl_error_set(err, "out of memory");
			return -1;
		}
		g = fl_onnx_emit(c, FL_OP_GATHER, in, 2, &at, TMP, err);
		fl_attrs_free(&at);
		if (g < 0)
			return -1;
		if (a->nearest)
			return g;
		if ((w = fl_onnx_const_tensor(c, "weight", &ws, a->w[t],
					      err)) < 0 ||
		    (g = fl_onnx_emit2(c, FL_OP_MUL, g, w, TMP, err)) < 0 ||
		    (sum = t == 0 ? g : fl_onnx_emit2(c, FL_OP_ADD, sum, g,
							TMP, err)) < 0)
			return -1;
	}
	return sum;
}

int fl_onnx_map_resize(fl_onnx_ctx *c, fl_error *err)
{
	resize_form f;
	fl_shape in, out;
	double scale[FL_MAX_RANK];
	int x, form = read_form(c, &f, err);

	if (form < 0)
		return -1;
	if (form > 0)
		return fl_onnx_import_custom(c, err);
	if ((x = fl_onnx_data(c, 0, err)) < 0)
		return -1;
	in = c->g->tensors[x].shape;
	if (read_targets(c, &in, &out, scale, err) < 0)
		return -1;
	for (int d = 0; d < in.rank; d++) {
		axis_taps a;
		int y;

		if (!axis_sampling(&f, in.dim[d], out.dim[d], scale[d], &a)) {
			fl_error_set(err, "out of memory");
			return -1;
		}
		a.nearest = f.mode == NEAREST;
		y = is_identity(&a, in.dim[d], out.dim[d]) ? x
			: resample_axis(c, x, d, out.dim[d], &a, err);
		taps_free(&a);
		if (y < 0)
			return -1;
		x = y;
	}
	return fl_onnx_emit1(c, FL_OP_COPY, x, 0, err) < 0 ? -1 : 0;
}
