/* ONNX import: the mappings of issue 29 ("Models users bring"), float
 * operators of the default domain that fuselab has no op of its own for,
 * built from the op library's primitives and compound ops (and Mod and
 * BitShift, which take integers too).
 *
 * Contract: as onnx_ops.c's mappings (onnx_import_impl.h): each one turns
 * the node being imported into ops emitted through fl_onnx_emit, reading
 * the inputs that must be known at import (k of Trilu, axis of CumSum)
 * with fl_onnx_input_ints, and binds the node's output 0.  Bad attributes
 * are errors naming the attribute.  fl_onnx_mapping (onnx_ops.c) falls
 * back on fl_onnx_mapping_more for an op type it does not know.
 *
 * Masks and index tables computed at import (Trilu's triangle, CumSum's
 * and Hardmax's summing matrix) become const tensors, so that every op
 * emitted is one the fusion engine models: a triangle is a `where`, a
 * prefix sum a `matmul` by a 0/1 matrix. */
#include "onnx_import_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT 0		/* emit into the node's output 0 */
#define TMP (-1)	/* emit into a new intermediate */

/* The largest summing matrix (CumSum, Hardmax) made at import: n*n
 * floats; a longer axis is refused rather than made into a huge
 * constant. */
#define MAX_SUM_EXTENT 4096

static const fl_shape *shape_of(const fl_onnx_ctx *c, int t)
{
	return &c->g->tensors[t].shape;
}

int fl_onnx_const_tensor(fl_onnx_ctx *c, const char *what, const fl_shape *s,
			 const float *data, fl_error *err)
{
	int64_t n = fl_shape_numel(s);
	char hint[300], name[320];
	int t;

	snprintf(hint, sizeof hint, "%s.%s", c->origin, what);
	snprintf(name, sizeof name, "%s", hint);
	for (int k = 2; fl_graph_find_tensor(c->g, name) >= 0; k++)
		snprintf(name, sizeof name, "%s.%d", hint, k);
	t = fl_graph_add_tensor(c->g, name, s, FL_ROLE_CONST, err);
	if (t < 0)
		return -1;
	c->g->tensors[t].data = malloc((size_t)(n > 0 ? n : 1) * sizeof *data);
	if (!c->g->tensors[t].data)
		return fl_onnx_oom(err);
	memcpy(c->g->tensors[t].data, data, (size_t)n * sizeof *data);
	c->g->tensors[t].n_data = n;
	return t;
}

/* x (op) a scalar constant v; after a failed step (x < 0) only -1. */
static int with_scalar(fl_onnx_ctx *c, fl_op_kind kind, int x, float v,
		       int out, fl_error *err)
{
	int s;

	if (x < 0 || (s = fl_onnx_scalar(c, v, err)) < 0)
		return -1;
	return fl_onnx_emit2(c, kind, x, s, out, err);
}

/* a scalar constant v (op) x */
static int scalar_with(fl_onnx_ctx *c, fl_op_kind kind, float v, int x,
		       int out, fl_error *err)
{
	int s;

	if (x < 0 || (s = fl_onnx_scalar(c, v, err)) < 0)
		return -1;
	return fl_onnx_emit2(c, kind, s, x, out, err);
}

/* Chainable forms of fl_onnx_emit1/2: -1 when an input failed. */
static int un(fl_onnx_ctx *c, fl_op_kind kind, int x, int out, fl_error *err)
{
	return x < 0 ? -1 : fl_onnx_emit1(c, kind, x, out, err);
}

static int bin(fl_onnx_ctx *c, fl_op_kind kind, int a, int b, int out,
	       fl_error *err)
{
	return a < 0 || b < 0 ? -1 : fl_onnx_emit2(c, kind, a, b, out, err);
}

static int where(fl_onnx_ctx *c, int cond, int a, int b, int out,
		 fl_error *err)
{
	int in[3] = {cond, a, b};
	fl_tensor *tb;

	if (cond < 0 || a < 0 || b < 0)
		return -1;
	/* a constant branch (the 0 of Trilu) takes the data's type */
	tb = &c->g->tensors[b];
	if (tb->role == FL_ROLE_CONST && tb->dtype != c->g->tensors[a].dtype &&
	    fl_tensor_convert_const(tb, c->g->tensors[a].dtype, err) < 0)
		return -1;
	return fl_onnx_emit(c, FL_OP_WHERE, in, 3, NULL, out, err);
}

static int done(int t)
{
	return t < 0 ? -1 : 0;
}

/* --- elementwise --- */

/* Mod: fmod=1 is C's fmodf (a's sign), fmod=0 Python's % (b's sign). */
static int map_mod(fl_onnx_ctx *c, fl_error *err)
{
	int64_t fmod_attr = fl_onnx_attr_int(c, "fmod", 0);
	int a = fl_onnx_data(c, 0, err), b;

	if (a < 0 || (b = fl_onnx_data(c, 1, err)) < 0)
		return -1;
	if (fmod_attr != 0 && fmod_attr != 1) {
		fl_error_set(err, "attribute fmod: %lld (0 or 1)",
			     (long long)fmod_attr);
		return -1;
	}
	return done(fl_onnx_emit2(c, fmod_attr ? FL_OP_FMOD : FL_OP_MOD, a, b,
				  OUT, err));
}

/* BitShift: direction "LEFT" or "RIGHT", on unsigned integers (the op's
 * dtype inference refuses the others, as ONNX's type constraint). */
static int map_bit_shift(fl_onnx_ctx *c, fl_error *err)
{
	char buf[16];
	const char *dir = fl_onnx_attr_string(c, "direction", "", buf,
					      sizeof buf);
	int a = fl_onnx_data(c, 0, err), b;

	if (a < 0 || (b = fl_onnx_data(c, 1, err)) < 0)
		return -1;
	if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0) {
		fl_error_set(err, "attribute direction: \"%s\" (LEFT or RIGHT)",
			     dir);
		return -1;
	}
	return done(fl_onnx_emit2(c, strcmp(dir, "LEFT") == 0
				  ? FL_OP_SHIFT_LEFT : FL_OP_SHIFT_RIGHT, a, b,
				  OUT, err));
}

/* ThresholdedRelu: x > alpha ? x : 0.  relu(x - alpha) is nonzero
 * exactly where x > alpha (two different floats never subtract to 0),
 * and where() selects on nonzero. */
static int map_thresholded_relu(fl_onnx_ctx *c, fl_error *err)
{
	float alpha = fl_onnx_attr_float(c, "alpha", 1.0f);
	int x = fl_onnx_data(c, 0, err), above;

	if (x < 0)
		return -1;
	above = un(c, FL_OP_RELU, with_scalar(c, FL_OP_SUB, x, alpha, TMP, err),
		   TMP, err);
	return done(where(c, above, x, fl_onnx_scalar(c, 0, err), OUT, err));
}

/* Shrink: x < -lambd ? x + bias : x > lambd ? x - bias : 0, with the
 * comparisons as in ThresholdedRelu. */
static int map_shrink(fl_onnx_ctx *c, fl_error *err)
{
	float bias = fl_onnx_attr_float(c, "bias", 0.0f);
	float lambd = fl_onnx_attr_float(c, "lambd", 0.5f);
	int x = fl_onnx_data(c, 0, err), above, below, low, high;

	if (x < 0)
		return -1;
	if (lambd < 0) {
		fl_error_set(err, "attribute lambd: %g (must be >= 0)",
			     (double)lambd);
		return -1;
	}
	above = with_scalar(c, FL_OP_SUB, x, lambd, TMP, err);
	above = un(c, FL_OP_RELU, above, TMP, err);
	below = scalar_with(c, FL_OP_SUB, -lambd, x, TMP, err);
	below = un(c, FL_OP_RELU, below, TMP, err);
	low = where(c, below, with_scalar(c, FL_OP_ADD, x, bias, TMP, err),
		    fl_onnx_scalar(c, 0, err), TMP, err);
	high = with_scalar(c, FL_OP_SUB, x, bias, TMP, err);
	return done(where(c, above, high, low, OUT, err));
}

/* Celu: max(0, x) + min(0, alpha (e^(x/alpha) - 1)) = alpha elu(x/alpha). */
static int map_celu(fl_onnx_ctx *c, fl_error *err)
{
	float alpha = fl_onnx_attr_float(c, "alpha", 1.0f);
	int x = fl_onnx_data(c, 0, err), e;

	if (x < 0)
		return -1;
	if (!(alpha != 0) || !isfinite(alpha)) {
		fl_error_set(err, "attribute alpha: %g (must be finite and "
			     "nonzero)", (double)alpha);
		return -1;
	}
	e = un(c, FL_OP_ELU, with_scalar(c, FL_OP_DIV, x, alpha, TMP, err), TMP,
	       err);
	return done(with_scalar(c, FL_OP_MUL, e, alpha, OUT, err));
}

/* --- data movement: DepthToSpace, SpaceToDepth --- */

/* x reshaped to `to`, transposed by perm, reshaped to `last` (the
 * node's output). */
static int reshape_transpose_reshape(fl_onnx_ctx *c, int x, const fl_shape *to,
				     const int64_t *perm,
				     const fl_shape *last, fl_error *err)
{
	int t = fl_onnx_reshape(c, x, to, TMP, err);

	if (t >= 0)
		t = fl_onnx_emit_ints(c, FL_OP_TRANSPOSE, t, "perm", perm, to->rank,
			      TMP, err);
	return t < 0 ? -1 : done(fl_onnx_reshape(c, t, last, OUT, err));
}

/* x's shape, which must be NCHW, and "blocksize" (>= 1). */
static int block_args(fl_onnx_ctx *c, int x, int64_t *nchw, int64_t *b,
		      fl_error *err)
{
	const fl_shape *s = shape_of(c, x);

	if (s->rank != 4) {
		fl_error_set(err, "input 0: rank %d (NCHW, rank 4, is "
			     "supported)", s->rank);
		return -1;
	}
	memcpy(nchw, s->dim, 4 * sizeof *nchw);
	*b = fl_onnx_attr_int(c, "blocksize", 0);
	if (*b < 1 || *b > MAX_SUM_EXTENT) {	/* b * b stays small */
		fl_error_set(err, "attribute blocksize: %lld (1 to %d)",
			     (long long)*b, MAX_SUM_EXTENT);
		return -1;
	}
	return 0;
}

/* DepthToSpace: the channels' blocks become b x b spatial blocks; DCR
 * (default) takes the block index outermost in the channel, CRD
 * innermost. */
static int map_depth_to_space(fl_onnx_ctx *c, fl_error *err)
{
	static const int64_t dcr[6] = {0, 3, 4, 1, 5, 2};
	static const int64_t crd[6] = {0, 1, 4, 2, 5, 3};
	char buf[8];
	const char *mode;
	int64_t d[4], b;
	int x = fl_onnx_data(c, 0, err);
	bool is_crd;

	if (x < 0 || block_args(c, x, d, &b, err) < 0)
		return -1;
	mode = fl_onnx_attr_string(c, "mode", "DCR", buf, sizeof buf);
	is_crd = !strcmp(mode, "CRD");
	if (!is_crd && strcmp(mode, "DCR")) {
		fl_error_set(err, "attribute mode: \"%s\" (DCR or CRD)", mode);
		return -1;
	}
	if (d[1] % (b * b)) {
		fl_error_set(err, "input 0: %lld channels, not a multiple of "
			     "blocksize^2 = %lld", (long long)d[1],
			     (long long)(b * b));
		return -1;
	}
	{
		int64_t cb = d[1] / (b * b);
		fl_shape to = is_crd ? fl_shape_make(6, (int64_t[]){
					d[0], cb, b, b, d[2], d[3]})
				     : fl_shape_make(6, (int64_t[]){
					d[0], b, b, cb, d[2], d[3]});
		fl_shape last = fl_shape_make(4, (int64_t[]){
					d[0], cb, d[2] * b, d[3] * b});

		return reshape_transpose_reshape(c, x, &to, is_crd ? crd : dcr,
						 &last, err);
	}
}

/* SpaceToDepth: DepthToSpace's DCR inverse. */
static int map_space_to_depth(fl_onnx_ctx *c, fl_error *err)
{
	static const int64_t perm[6] = {0, 3, 5, 1, 2, 4};
	int64_t d[4], b;
	int x = fl_onnx_data(c, 0, err);

	if (x < 0 || block_args(c, x, d, &b, err) < 0)
		return -1;
	if (d[2] % b || d[3] % b) {
		fl_error_set(err, "input 0: spatial dims %lldx%lld are not "
			     "multiples of blocksize %lld", (long long)d[2],
			     (long long)d[3], (long long)b);
		return -1;
	}
	{
		fl_shape to = fl_shape_make(6, (int64_t[]){
			d[0], d[1], d[2] / b, b, d[3] / b, b});
		fl_shape last = fl_shape_make(4, (int64_t[]){
			d[0], d[1] * b * b, d[2] / b, d[3] / b});

		return reshape_transpose_reshape(c, x, &to, perm, &last, err);
	}
}

/* --- Trilu --- */

/* Trilu(x[, k]): the upper (j - i >= k) or lower (j - i <= k) triangle
 * of the last two dims, the rest 0: where(mask, x, 0) with the mask a
 * const [N, M]. */
static int map_trilu(fl_onnx_ctx *c, fl_error *err)
{
	int64_t upper = fl_onnx_attr_int(c, "upper", 1), k = 0;
	int x = fl_onnx_data(c, 0, err), n_k = 0, mask;
	const fl_shape *s;
	fl_shape ms;
	float *m;

	if (x < 0)
		return -1;
	if (fl_onnx_has_input(c, 1) &&
	    fl_onnx_input_ints(c, 1, &k, 1, &n_k, err) < 0)
		return -1;
	s = shape_of(c, x);
	if (s->rank < 2) {
		fl_error_set(err, "input 0: rank %d (at least 2)", s->rank);
		return -1;
	}
	ms = fl_shape_make(2, &s->dim[s->rank - 2]);
	if (fl_shape_numel(&ms) > (int64_t)MAX_SUM_EXTENT * MAX_SUM_EXTENT) {
		fl_error_set(err, "input 0: a %lldx%lld matrix is more than "
			     "the mask fuselab makes at import",
			     (long long)ms.dim[0], (long long)ms.dim[1]);
		return -1;
	}
	m = malloc((size_t)fl_shape_numel(&ms) * sizeof *m);
	if (!m)
		return fl_onnx_oom(err);
	for (int64_t i = 0; i < ms.dim[0]; i++)
		for (int64_t j = 0; j < ms.dim[1]; j++)
			m[i * ms.dim[1] + j] =
				upper ? j - i >= k : j - i <= k;
	mask = fl_onnx_const_tensor(c, "mask", &ms, m, err);
	free(m);
	return done(where(c, mask, x, fl_onnx_scalar(c, 0, err), OUT, err));
}

/* --- prefix sums: CumSum, Hardmax --- */

/* A const [n, n] matrix S with (S v)[j] = the sum of v[i] over the i
 * that output j takes: i <= j (i < j exclusive), or i >= j (i > j)
 * reversed. */
static int summing_matrix(fl_onnx_ctx *c, int64_t n, bool exclusive,
			  bool reverse, fl_error *err)
{
	fl_shape s = fl_shape_make(2, (int64_t[]){n, n});
	float *m;
	int t;

	if (n > MAX_SUM_EXTENT) {
		fl_error_set(err, "an axis of %lld elements (fuselab sums up "
			     "to %d at once)", (long long)n, MAX_SUM_EXTENT);
		return -1;
	}
	m = malloc((size_t)(n * n) * sizeof *m);
	if (!m)
		return fl_onnx_oom(err);
	for (int64_t j = 0; j < n; j++)
		for (int64_t i = 0; i < n; i++) {
			int64_t d = reverse ? i - j : j - i;

			m[j * n + i] = exclusive ? d > 0 : d >= 0;
		}
	t = fl_onnx_const_tensor(c, "sum", &s, m, err);
	free(m);
	return t;
}

/* Prefix sums of x along axis: x as [P, n, Q] (the dims before, at and
 * after the axis), S [n, n] times it (matmul broadcasts S over P), and
 * back to x's shape.  A sum of 0/1 multiples: exact as sums go, but an
 * infinite element makes every output of its row NaN (0 * inf). */
static int prefix_sums(fl_onnx_ctx *c, int x, int axis, bool exclusive,
		       bool reverse, int out, fl_error *err)
{
	fl_shape s = *shape_of(c, x), s3;
	int64_t p = 1, q = 1;
	int sum, t;

	for (int d = 0; d < s.rank; d++)
		if (d < axis)
			p *= s.dim[d];
		else if (d > axis)
			q *= s.dim[d];
	s3 = fl_shape_make(3, (int64_t[]){p, s.dim[axis], q});
	sum = summing_matrix(c, s.dim[axis], exclusive, reverse, err);
	if (sum < 0 || (t = fl_onnx_reshape(c, x, &s3, TMP, err)) < 0 ||
	    (t = fl_onnx_emit2(c, FL_OP_MATMUL, sum, t, TMP, err)) < 0)
		return -1;
	return fl_onnx_reshape(c, t, &s, out, err);
}

/* The axis in [0, rank), or an error naming `what`. */
static int checked_axis(int64_t a, int rank, const char *what, fl_error *err)
{
	int axis = fl_axis_normalize(a, rank);

	if (axis < 0)
		fl_error_set(err, "%s: axis %lld is out of range for rank %d",
			     what, (long long)a, rank);
	return axis;
}

/* CumSum(x, axis): axis known at import; "exclusive", "reverse". */
static int map_cumsum(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), n = 0, axis;
	int64_t a;

	if (x < 0 || fl_onnx_input_ints(c, 1, &a, 1, &n, err) < 0)
		return -1;
	if (n != 1) {
		fl_error_set(err, "input 1: axis must be one value, got %d", n);
		return -1;
	}
	if ((axis = checked_axis(a, shape_of(c, x)->rank, "input 1",
				 err)) < 0)
		return -1;
	return done(prefix_sums(c, x, axis, fl_onnx_attr_int(c, "exclusive", 0),
				fl_onnx_attr_int(c, "reverse", 0), OUT, err));
}

/* Hardmax: 1 at the first maximum along the axis, else 0.  At opset 13
 * the axis (default -1) is one dim; before it (default 1) x counts as
 * the 2-D [dims before axis, dims from it].  The maxima are where
 * max - x is 0 (1 - sign(max - x) is 1 there, 0 elsewhere); of those the
 * first is the one whose running count of maxima is 1. */
static int map_hardmax(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), axis, is_max, count, first;
	fl_shape s;
	bool flat = c->opset < 13;

	if (x < 0)
		return -1;
	s = *shape_of(c, x);
	axis = checked_axis(fl_onnx_attr_int(c, "axis", flat ? 1 : -1), s.rank,
			    "attribute axis", err);
	if (axis < 0)
		return -1;
	if (flat) {
		int64_t rows = 1, cols = 1;

		fl_shape s2;

		for (int d = 0; d < s.rank; d++)
			*(d < axis ? &rows : &cols) *= s.dim[d];
		s2 = fl_shape_make(2, (int64_t[]){rows, cols});
		if ((x = fl_onnx_reshape(c, x, &s2, TMP, err)) < 0)
			return -1;
		axis = 1;
	}
	{
		int64_t ax = axis;
		int m = fl_onnx_emit_ints(c, FL_OP_REDUCE_MAX, x, "axes", &ax, 1, TMP,
				  err);

		is_max = scalar_with(c, FL_OP_SUB, 1, un(c, FL_OP_SIGN,
				     bin(c, FL_OP_SUB, m, x, TMP, err), TMP,
				     err), TMP, err);
	}
	count = is_max < 0 ? -1
			   : prefix_sums(c, is_max, axis, false, false, TMP,
					 err);
	first = scalar_with(c, FL_OP_SUB, 1, un(c, FL_OP_SIGN, with_scalar(
			c, FL_OP_SUB, count, 1, TMP, err), TMP, err), TMP, err);
	if (!flat)
		return done(bin(c, FL_OP_MUL, is_max, first, OUT, err));
	if ((first = bin(c, FL_OP_MUL, is_max, first, TMP, err)) < 0)
		return -1;
	return done(fl_onnx_reshape(c, first, &s, OUT, err));
}

/* --- constants from shapes: EyeLike --- */

/* EyeLike(x): a 2-D constant of x's shape, 1 on the diagonal k, of the
 * element type "dtype" (default x's). */
static int map_eye_like(fl_onnx_ctx *c, fl_error *err)
{
	int64_t k = fl_onnx_attr_int(c, "k", 0);
	int64_t dtype = fl_onnx_attr_int(c, "dtype", FL_DT_FLOAT);
	fl_onnx_binding *b = fl_onnx_input(c, 0, err);
	fl_shape s;
	float *m;
	int t;

	if (!b || fl_onnx_input_dims(c, 0, &s, err) < 0)
		return -1;
	if (!fl_onnx_attr(c, "dtype"))
		dtype = b->dtype;
	if (fl_onnx_to_dtype((int)dtype) < 0) {
		fl_error_set(err, "attribute dtype: element type %s is not "
			     "supported (fuselab's element types: float, bool, "
			     "int8, uint8, int32, int64)",
			     fl_onnx_dtype_name((int)dtype));
		return -1;
	}
	if (s.rank != 2) {
		fl_error_set(err, "input 0: rank %d (EyeLike is 2-D)", s.rank);
		return -1;
	}
	if (fl_shape_numel(&s) > (int64_t)MAX_SUM_EXTENT * MAX_SUM_EXTENT) {
		fl_error_set(err, "input 0: a %lldx%lld matrix is more than "
			     "fuselab makes at import", (long long)s.dim[0],
			     (long long)s.dim[1]);
		return -1;
	}
	m = calloc((size_t)fl_shape_numel(&s), sizeof *m);
	if (!m)
		return fl_onnx_oom(err);
	/* a diagonal outside the matrix leaves it 0 (and i + k in range) */
	for (int64_t i = 0; k > -s.dim[0] && k < s.dim[1] && i < s.dim[0]; i++)
		if (i + k >= 0 && i + k < s.dim[1])
			m[i * s.dim[1] + i + k] = 1;
	t = fl_onnx_const_tensor(c, "eye", &s, m, err);
	free(m);
	/* an integer or bool identity holds its 0s and 1s exactly */
	if (t >= 0 && fl_tensor_convert_const(&c->g->tensors[t], (fl_dtype)
			fl_onnx_to_dtype((int)dtype), err) < 0)
		return -1;
	return done(un(c, FL_OP_COPY, t, OUT, err));
}

/* --- normalisations: MeanVarianceNormalization, LRN --- */

/* (x - mean) / (sqrt(variance) + 1e-9) over "axes" (default [0, 2, 3]),
 * ONNX's own definition. */
static int map_mvn(fl_onnx_ctx *c, fl_error *err)
{
	int64_t axes[FL_MAX_RANK] = {0, 2, 3};
	int n = 3, x = fl_onnx_data(c, 0, err), mean, var, den;

	if (x < 0 || fl_onnx_attr_ints(c, "axes", axes, FL_MAX_RANK, &n,
				       err) < 0)
		return -1;
	if (n < 0) {
		n = 3;
		axes[0] = 0, axes[1] = 2, axes[2] = 3;
	}
	mean = fl_onnx_emit_ints(c, FL_OP_REDUCE_MEAN, x, "axes", axes, n, TMP, err);
	var = mean < 0 ? -1 : fl_onnx_emit_ints(c, FL_OP_VARIANCE, x, "axes", axes, n,
					TMP, err);
	den = with_scalar(c, FL_OP_ADD, un(c, FL_OP_SQRT, var, TMP, err), 1e-9f,
			  TMP, err);
	return done(bin(c, FL_OP_DIV, bin(c, FL_OP_SUB, x, mean, TMP, err), den,
			 OUT, err));
}

/* LRN: x / (bias + alpha/size * sum of x^2 over the channel window
 * [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta.  The window sum
 * is the squares padded with zeros along the channels and added up over
 * `size` shifted slices. */
static int map_lrn(fl_onnx_ctx *c, fl_error *err)
{
	int64_t size = fl_onnx_attr_int(c, "size", 0);
	float alpha = fl_onnx_attr_float(c, "alpha", 1e-4f);
	float beta = fl_onnx_attr_float(c, "beta", 0.75f);
	float bias = fl_onnx_attr_float(c, "bias", 1.0f);
	int x = fl_onnx_data(c, 0, err), sq, padded, sum = -1, base;
	int64_t pads[2 * FL_MAX_RANK] = {0}, starts[FL_MAX_RANK] = {0};
	fl_shape s;

	if (x < 0)
		return -1;
	s = *shape_of(c, x);
	if (size < 1 || size > 64) {
		fl_error_set(err, "attribute size: %lld (1 to 64 are "
			     "supported)", (long long)size);
		return -1;
	}
	if (s.rank < 2) {
		fl_error_set(err, "input 0: rank %d (at least 2: N, C, ...)",
			     s.rank);
		return -1;
	}
	pads[1] = (size - 1) / 2;
	pads[s.rank + 1] = size / 2;	/* ceil((size - 1) / 2) */
	sq = un(c, FL_OP_SQUARE, x, TMP, err);
	padded = sq < 0 ? -1 : fl_onnx_emit_ints(c, FL_OP_PAD, sq, "pads", pads,
					 2 * s.rank, TMP, err);
	for (int64_t k = 0; padded >= 0 && k < size; k++) {
		fl_attrs a = {0};
		int64_t ends[FL_MAX_RANK];
		int part;

		memcpy(ends, s.dim, sizeof ends);
		starts[1] = k;
		ends[1] = k + s.dim[1];
		if (fl_attrs_set_ints(&a, "starts", starts, s.rank) < 0 ||
		    fl_attrs_set_ints(&a, "ends", ends, s.rank) < 0) {
			fl_attrs_free(&a);
			return fl_onnx_oom(err);
		}
		part = fl_onnx_emit_attrs(c, FL_OP_SLICE, &padded, 1, &a, TMP, err);
		sum = k == 0 ? part : bin(c, FL_OP_ADD, sum, part, TMP, err);
		if (sum < 0)
			return -1;
	}
	base = with_scalar(c, FL_OP_ADD, with_scalar(c, FL_OP_MUL, sum,
			   alpha / (float)size, TMP, err), bias, TMP, err);
	return done(bin(c, FL_OP_DIV, x, with_scalar(c, FL_OP_POW, base, beta,
						     TMP, err), OUT, err));
}

/* --- the table --- */

static const struct {
	const char *op_type;
	fl_onnx_map_fn map;
} mappings[] = {
	{"Mod", map_mod}, {"BitShift", map_bit_shift},
	{"ThresholdedRelu", map_thresholded_relu},
	{"Shrink", map_shrink}, {"Celu", map_celu},
	{"DepthToSpace", map_depth_to_space},
	{"SpaceToDepth", map_space_to_depth}, {"Trilu", map_trilu},
	{"CumSum", map_cumsum}, {"Hardmax", map_hardmax},
	{"EyeLike", map_eye_like}, {"MeanVarianceNormalization", map_mvn},
	{"LRN", map_lrn}, {"Resize", fl_onnx_map_resize},
	{"Upsample", fl_onnx_map_resize},
	{"ConvTranspose", fl_onnx_map_conv_transpose},
	{"GatherND", fl_onnx_map_gather_nd},
};

fl_onnx_map_fn fl_onnx_mapping_more(const char *op_type)
{
	for (size_t k = 0; k < sizeof mappings / sizeof mappings[0]; k++)
		if (!strcmp(mappings[k].op_type, op_type))
			return mappings[k].map;
	fl_onnx_map_fn m = fl_onnx_mapping_indexed(op_type);

	if (!m)
		m = fl_onnx_quant_mapping(op_type);
	return m ? m : fl_onnx_mapping_index(op_type);
}
