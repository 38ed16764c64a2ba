/* ONNX import: HannWindow, HammingWindow and BlackmanWindow, folded at
 * import (onnx_import_impl.h).
 *
 * Contract: called by the folder (onnx_fold.c) for a window node whose
 * size (input 0, an integer scalar) is known at import; binds its
 * output, a 1-D tensor of `size` values w[n], as a known value:
 *   Hann      sin^2(pi n / N)
 *   Hamming   25/46 - 21/46 cos(2 pi n / N)
 *   Blackman  0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)
 * where N = size with periodic = 1 (the default), size - 1 with
 * periodic = 0 (the symmetric window), computed in double and stored in
 * output_datatype (default float; integer types truncate, as a cast
 * does).  ONNX's test data were computed partly in float: they differ
 * from these by float rounding (about 1e-4 relative), within ONNX's
 * tolerances.  A size computed at run time keeps
 * the node opaque (the folder names the input); a size below 1 or above
 * what the import computes, or an output type fuselab does not decode,
 * is an error. */
#include "onnx_import_impl.h"

#include <math.h>
#include <string.h>

/* The longest window made at import (as the folder's other values). */
#define MAX_WINDOW ((int64_t)1 << 22)

enum window { HANN, HAMMING, BLACKMAN };

static int window_kind(const char *op_type)
{
	static const char *const names[] = {
		"HannWindow", "HammingWindow", "BlackmanWindow",
	};

	for (int k = 0; k < 3; k++)
		if (!strcmp(op_type, names[k]))
			return k;
	return -1;
}

bool fl_onnx_is_window(const char *op_type)
{
	return window_kind(op_type) >= 0;
}

/* w[n] for window `kind` over period n_1. */
static double window_value(int kind, int64_t n, double n_1)
{
	double x = 2 * M_PI * (double)n / n_1;

	switch (kind) {
	case HANN: {
		double s = sin(M_PI * (double)n / n_1);

		return s * s;
	}
	case HAMMING:
		return 25.0 / 46.0 - (1 - 25.0 / 46.0) * cos(x);
	default:
		return 0.42 - 0.5 * cos(x) + 0.08 * cos(2 * x);
	}
}

/* The size input: one integer, 1 up to MAX_WINDOW. */
static int window_size(fl_onnx_ctx *c, int64_t *size, fl_error *err)
{
	const fl_onnx_values *v = fl_onnx_input_known(c, 0);

	if (!v || !v->i || v->n != 1) {
		fl_error_set(err, "input 0: size must be one integer");
		return -1;
	}
	*size = v->i[0];
	if (*size < 1 || *size > MAX_WINDOW) {
		fl_error_set(err, "size %lld: fuselab makes windows of 1 up to "
			     "%lld values", (long long)*size,
			     (long long)MAX_WINDOW);
		return -1;
	}
	return 0;
}

int fl_onnx_fold_window(fl_onnx_ctx *c, fl_onnx_values **out, fl_error *err)
{
	int kind = window_kind(c->node->op_type);
	int dtype = (int)fl_onnx_attr_int(c, "output_datatype",
					  ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
	bool periodic = fl_onnx_attr_int(c, "periodic", 1) != 0;
	int64_t size;
	fl_shape s;

	if (!fl_onnx_dtype_supported(dtype) ||
	    dtype == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL) {
		fl_error_set(err, "output_datatype %s is not supported",
			     fl_onnx_dtype_name(dtype));
		return -1;
	}
	if (window_size(c, &size, err) < 0)
		return -1;
	s = fl_shape_make(1, &size);
	*out = fl_onnx_values_new(&s, dtype, err);
	if (!*out)
		return -1;
	for (int64_t n = 0; n < size; n++) {
		double w = window_value(kind, n, (double)(periodic ? size
								   : size - 1));

		(*out)->f[n] = (float)w;
		if ((*out)->i) {	/* an integer type: truncated */
			(*out)->i[n] = isfinite(w) ? (int64_t)w : 0;
			(*out)->f[n] = (float)(*out)->i[n];
		}
	}
	return 0;
}
