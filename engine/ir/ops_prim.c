/* Primitive ops: shape inference and reference implementations.
 *
 * Every primitive op of the table in ops.c has two functions here:
 * fl_infer_<op> checks the input shapes and attributes (conventions at the
 * top of ops.h) and computes the output shape, reporting a problem as one
 * line relative to the op ("in[1]: ...", "attrs.perm: ...", "out: ...");
 * fl_eval_<op> is the reference implementation the interpreter runs and
 * that generated kernels are checked against.  The implementations aim to
 * be obviously correct rather than fast: plain loops over row-major f32
 * buffers, accumulation in double (sums, matmul, conv, average pooling),
 * one rounding to float per stored value.  Elementwise functions are
 * evaluated in double with libm and rounded once; max/min follow C's
 * fmax/fmin (a NaN operand yields the other operand).
 *
 * Index arithmetic that follows a shape (broadcasting, transposition,
 * slicing, padding, batching, reduction) goes through one small "walker"
 * that visits a shape row by row and keeps, for up to three operands, the
 * offset of the current row and the stride along it; callers loop over
 * the row themselves, so no per-element index decomposition is needed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_impl.h"

/* ------------------------------------------------------------------ */
/* Common checks                                                       */

/* Every input shape has a valid rank, positive extents and a countable
 * number of elements. */
static int check_inputs(const fl_op *op, const fl_shape *in, fl_error *err)
{
	for (int k = 0; k < op->n_in; k++) {
		if (in[k].rank < 0 || in[k].rank > FL_MAX_RANK) {
			fl_error_set(err, "in[%d]: rank %d outside 0..%d", k,
				     in[k].rank, FL_MAX_RANK);
			return -1;
		}
		for (int d = 0; d < in[k].rank; d++)
			if (in[k].dim[d] < 1) {
				fl_error_set(err,
					     "in[%d]: dim %d is %lld, must be >= 1",
					     k, d, (long long)in[k].dim[d]);
				return -1;
			}
		if (fl_shape_numel(&in[k]) < 0) {
			fl_error_set(err, "in[%d]: too many elements", k);
			return -1;
		}
	}
	return 0;
}

/* The inferred output must have a countable number of elements. */
static int check_output(const fl_shape *out, fl_error *err)
{
	if (out->rank > FL_MAX_RANK) {
		fl_error_set(err, "out: rank %d exceeds the maximum of %d",
			     out->rank, FL_MAX_RANK);
		return -1;
	}
	if (fl_shape_numel(out) < 0) {
		fl_error_set(err, "out: output has too many elements");
		return -1;
	}
	return 0;
}

/* a + b for non-negative extents; -1 when it does not fit int64. */
static int64_t add_extents(int64_t a, int64_t b)
{
	return a > INT64_MAX - b ? -1 : a + b;
}

/* Reads a pair attribute such as "stride" [sh, sw], every value >= 1.
 * Returns 1 when present, 0 when absent (v untouched), -1 on error. */
static int attr_pair(const fl_op *op, const char *key, int64_t *v,
		     fl_error *err)
{
	int64_t tmp[FL_MAX_RANK];
	int n, rc = fl_attr_ints(&op->attrs, key, tmp, FL_MAX_RANK, &n, err);

	if (rc <= 0)
		return rc;
	if (n != 2) {
		fl_error_set(err, "attrs.%s: expected 2 values, got %d", key, n);
		return -1;
	}
	for (int i = 0; i < 2; i++)
		if (tmp[i] < 1) {
			fl_error_set(err, "attrs.%s[%d]: must be >= 1, got %lld",
				     key, i, (long long)tmp[i]);
			return -1;
		}
	v[0] = tmp[0];
	v[1] = tmp[1];
	return 1;
}

/* Extent covered by a window of k taps spaced d apart: d*(k-1)+1, or -1
 * when that does not fit int64. */
static int64_t window_extent(int64_t k, int64_t d)
{
	if (k > 1 && d > (INT64_MAX - 1) / (k - 1))
		return -1;
	return d * (k - 1) + 1;
}

/* ------------------------------------------------------------------ */
/* The walker                                                          */

#define WALK_MAX_OPS 3

/* Visits a shape in row-major order one row (run along the last dim) at a
 * time.  For each operand k it knows the strides of every dim
 * (stride[k][d], in elements, 0 for a broadcast dim) and an origin; at
 * each row, row[k] is the offset of the row's first element and step[k]
 * the stride along the row.  A rank-0 shape is one row of length 1. */
typedef struct walk {
	int rank;
	int64_t dim[FL_MAX_RANK];
	int n;
	int64_t stride[WALK_MAX_OPS][FL_MAX_RANK];
	int64_t origin[WALK_MAX_OPS];
	int64_t idx[FL_MAX_RANK];
	int64_t row[WALK_MAX_OPS];
	int64_t step[WALK_MAX_OPS];
	int64_t len;
} walk;

static void walk_init(walk *w, const fl_shape *s, int n)
{
	memset(w, 0, sizeof *w);
	w->rank = s->rank;
	for (int d = 0; d < s->rank; d++)
		w->dim[d] = s->dim[d];
	w->n = n;
	w->len = s->rank ? s->dim[s->rank - 1] : 1;
}

/* Operand k reads a tensor of shape `from` that broadcasts to the walked
 * shape (numpy rule). */
static void walk_set_bcast(walk *w, int k, const fl_shape *from)
{
	int64_t st = 1;

	for (int d = 0; d < w->rank; d++)
		w->stride[k][d] = 0;
	for (int i = from->rank - 1; i >= 0; i--) {
		int d = w->rank - from->rank + i;

		w->stride[k][d] = from->dim[i] == 1 ? 0 : st;
		st *= from->dim[i];
	}
}

/* Operand k is a dense row-major tensor of the walked shape itself. */
static void walk_set_dense(walk *w, int k)
{
	int64_t st = 1;

	for (int d = w->rank - 1; d >= 0; d--) {
		w->stride[k][d] = st;
		st *= w->dim[d];
	}
}

/* Resets the walk to its first row. */
static void walk_start(walk *w)
{
	memset(w->idx, 0, sizeof w->idx);
	for (int k = 0; k < w->n; k++) {
		w->row[k] = w->origin[k];
		w->step[k] = w->rank ? w->stride[k][w->rank - 1] : 0;
	}
}

/* Moves to the next row; false after the last one. */
static bool walk_next(walk *w)
{
	for (int d = w->rank - 2; d >= 0; d--) {
		w->idx[d]++;
		for (int k = 0; k < w->n; k++)
			w->row[k] += w->stride[k][d];
		if (w->idx[d] < w->dim[d])
			return true;
		for (int k = 0; k < w->n; k++)
			w->row[k] -= w->stride[k][d] * w->dim[d];
		w->idx[d] = 0;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* Unary elementwise                                                   */

int fl_infer_unary(const fl_op *op, const fl_shape *in, fl_shape *out,
		   fl_error *err)
{
	if (check_inputs(op, in, err) < 0)
		return -1;
	if (op->kind == FL_OP_CAST) {
		const char *dtype;

		if (fl_attr_string(&op->attrs, "dtype", "f32", &dtype, err) < 0)
			return -1;
		if (fl_dtype_parse(dtype) < 0) {
			fl_error_set(err,
				     "attrs.dtype: unknown dtype \"%s\" (f32, "
				     "bool, i8, u8, i16, u16, i32, u32, i64, u64, "
				     "f16 or bf16)", dtype);
			return -1;
		}
	}
	out[0] = in[0];
	return check_output(&out[0], err);
}

static double unary_scalar(fl_op_kind kind, double x)
{
	switch (kind) {
	case FL_OP_NEG: return -x;
	case FL_OP_ABS: return fabs(x);
	case FL_OP_EXP: return exp(x);
	case FL_OP_LOG: return log(x);
	case FL_OP_SQRT: return sqrt(x);
	case FL_OP_RSQRT: return 1.0 / sqrt(x);
	case FL_OP_RECIP: return 1.0 / x;
	case FL_OP_TANH: return tanh(x);
	case FL_OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
	case FL_OP_RELU: return x > 0 ? x : 0.0;
	case FL_OP_ERF: return erf(x);
	case FL_OP_SQUARE: return x * x;
	case FL_OP_ROUND: return nearbyint(x);
	/* the float functions, as the generated code calls them */
	case FL_OP_SIN: return sinf((float)x);
	case FL_OP_COS: return cosf((float)x);
	case FL_OP_TAN: return tanf((float)x);
	case FL_OP_ASIN: return asinf((float)x);
	case FL_OP_ACOS: return acosf((float)x);
	case FL_OP_ATAN: return atanf((float)x);
	case FL_OP_SINH: return sinhf((float)x);
	case FL_OP_COSH: return coshf((float)x);
	case FL_OP_ASINH: return asinhf((float)x);
	case FL_OP_ACOSH: return acoshf((float)x);
	case FL_OP_ATANH: return atanhf((float)x);
	case FL_OP_FLOOR: return floor(x);
	case FL_OP_CEIL: return ceil(x);
	case FL_OP_SIGN: return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
	default: return x;	/* copy, cast */
	}
}

void fl_eval_unary(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	int64_t n = fl_shape_numel(&out[0].shape);

	for (int64_t i = 0; i < n; i++)
		out[0].data[i] = (float)unary_scalar(op->kind, in[0].data[i]);
}

/* ------------------------------------------------------------------ */
/* Binary elementwise and where (numpy broadcasting)                   */

int fl_infer_binary(const fl_op *op, const fl_shape *in, fl_shape *out,
		    fl_error *err)
{
	if (check_inputs(op, in, err) < 0)
		return -1;
	if (fl_shape_broadcast(&in[0], &in[1], &out[0], err) < 0) {
		fl_error_prefix(err, "in[1]");
		return -1;
	}
	return check_output(&out[0], err);
}

static double binary_scalar(fl_op_kind kind, double a, double b)
{
	switch (kind) {
	case FL_OP_ADD: return a + b;
	case FL_OP_SUB: return a - b;
	case FL_OP_MUL: return a * b;
	case FL_OP_DIV: return a / b;
	case FL_OP_MAX: return fmax(a, b);
	case FL_OP_MIN: return fmin(a, b);
	case FL_OP_POW: return pow(a, b);
	case FL_OP_FMOD: return fmod(a, b);
	case FL_OP_MOD: {
		double r = fmod(a, b);

		return r != 0 && (r < 0) != (b < 0) ? r + b : r;
	}
	default: return a;
	}
}

/* A walk over out's shape with every input broadcast into it. */
static void walk_broadcast(walk *w, const fl_buf *in, int n_in,
			   const fl_buf *out)
{
	walk_init(w, &out->shape, n_in);
	for (int k = 0; k < n_in; k++)
		walk_set_bcast(w, k, &in[k].shape);
	walk_start(w);
}

void fl_eval_binary(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	float *o = out[0].data;
	walk w;

	walk_broadcast(&w, in, 2, &out[0]);
	do {
		const float *a = in[0].data + w.row[0];
		const float *b = in[1].data + w.row[1];

		for (int64_t j = 0; j < w.len; j++)
			o[j] = (float)binary_scalar(op->kind, a[j * w.step[0]],
						    b[j * w.step[1]]);
		o += w.len;
	} while (walk_next(&w));
}

int fl_infer_where(const fl_op *op, const fl_shape *in, fl_shape *out,
		   fl_error *err)
{
	fl_shape ca;

	if (check_inputs(op, in, err) < 0)
		return -1;
	if (fl_shape_broadcast(&in[0], &in[1], &ca, err) < 0) {
		fl_error_prefix(err, "in[1]");
		return -1;
	}
	if (fl_shape_broadcast(&ca, &in[2], &out[0], err) < 0) {
		fl_error_prefix(err, "in[2]");
		return -1;
	}
	return check_output(&out[0], err);
}

void fl_eval_where(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	float *o = out[0].data;
	walk w;

	(void)op;
	walk_broadcast(&w, in, 3, &out[0]);
	do {
		const float *c = in[0].data + w.row[0];
		const float *a = in[1].data + w.row[1];
		const float *b = in[2].data + w.row[2];

		for (int64_t j = 0; j < w.len; j++)
			o[j] = c[j * w.step[0]] != 0 ? a[j * w.step[1]]
						     : b[j * w.step[2]];
		o += w.len;
	} while (walk_next(&w));
}

/* ------------------------------------------------------------------ */
/* Reductions                                                          */

/* Fills reduced[0..rank-1] from attrs.axes (default: every axis). */
static int reduce_axes(const fl_op *op, int rank, bool *reduced,
		       fl_error *err)
{
	int64_t axes[FL_MAX_RANK];
	int n;

	if (fl_attr_ints(&op->attrs, "axes", axes, FL_MAX_RANK, &n, err) < 0)
		return -1;
	for (int d = 0; d < rank; d++)
		reduced[d] = n < 0;
	if (n == 0) {
		fl_error_set(err, "attrs.axes: empty list (leave it out to "
			     "reduce every axis)");
		return -1;
	}
	for (int i = 0; i < n; i++) {
		int a = fl_axis_normalize(axes[i], rank);

		if (a < 0) {
			fl_error_set(err,
				     "attrs.axes[%d]: axis %lld out of range "
				     "for rank %d", i, (long long)axes[i], rank);
			return -1;
		}
		if (reduced[a]) {
			fl_error_set(err, "attrs.axes[%d]: axis %d given twice",
				     i, a);
			return -1;
		}
		reduced[a] = true;
	}
	return 0;
}

int fl_infer_reduce(const fl_op *op, const fl_shape *in, fl_shape *out,
		    fl_error *err)
{
	bool reduced[FL_MAX_RANK];

	if (check_inputs(op, in, err) < 0 ||
	    reduce_axes(op, in[0].rank, reduced, err) < 0)
		return -1;
	out[0] = in[0];
	for (int d = 0; d < in[0].rank; d++)
		if (reduced[d])
			out[0].dim[d] = 1;
	return check_output(&out[0], err);
}

static double reduce_identity(fl_op_kind kind)
{
	if (kind == FL_OP_REDUCE_MAX)
		return -INFINITY;
	if (kind == FL_OP_REDUCE_MIN)
		return INFINITY;
	if (kind == FL_OP_REDUCE_PROD)
		return 1.0;
	return 0.0;
}

static double reduce_combine(fl_op_kind kind, double acc, double x)
{
	if (kind == FL_OP_REDUCE_MAX)
		return fmax(acc, x);
	if (kind == FL_OP_REDUCE_MIN)
		return fmin(acc, x);
	if (kind == FL_OP_REDUCE_PROD)
		return acc * x;
	return acc + x;
}

/* Combines the elements of the reduced sub-box walked by `box` (whose
 * origin is set by the caller), in row-major order. */
static double reduce_box(fl_op_kind kind, const float *x, walk *box)
{
	double acc = reduce_identity(kind);

	walk_start(box);
	do {
		const float *r = x + box->row[0];

		for (int64_t j = 0; j < box->len; j++)
			acc = reduce_combine(kind, acc, r[j * box->step[0]]);
	} while (walk_next(box));
	return acc;
}

/* For every output element (kept dims), walks the reduced dims of the
 * input: `outer` walks the output shape with the input's strides, `box`
 * walks the input shape with kept dims shrunk to 1. */
void fl_eval_reduce(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	fl_shape box_shape = in[0].shape;
	float *o = out[0].data;
	walk outer, box, dense;

	walk_init(&dense, &in[0].shape, 1);
	walk_set_dense(&dense, 0);
	for (int d = 0; d < box_shape.rank; d++)
		if (out[0].shape.dim[d] != 1 || in[0].shape.dim[d] == 1)
			box_shape.dim[d] = 1;
	walk_init(&outer, &out[0].shape, 1);
	walk_init(&box, &box_shape, 1);
	memcpy(outer.stride[0], dense.stride[0], sizeof dense.stride[0]);
	memcpy(box.stride[0], dense.stride[0], sizeof dense.stride[0]);
	walk_start(&outer);
	do {
		for (int64_t j = 0; j < outer.len; j++) {
			box.origin[0] = outer.row[0] + j * outer.step[0];
			o[j] = (float)reduce_box(op->kind, in[0].data, &box);
		}
		o += outer.len;
	} while (walk_next(&outer));
}

/* ------------------------------------------------------------------ */
/* matmul                                                              */

/* Dims of one operand after its optional transpose: rows x cols. */
static void matmul_dims(const fl_shape *s, bool trans, int64_t *rows,
			int64_t *cols)
{
	int64_t r = s->dim[s->rank - 2], c = s->dim[s->rank - 1];

	*rows = trans ? c : r;
	*cols = trans ? r : c;
}

static fl_shape batch_shape(const fl_shape *s)
{
	return fl_shape_make(s->rank - 2, s->dim);
}

static int matmul_flags(const fl_op *op, bool *ta, bool *tb, fl_error *err)
{
	if (fl_attr_bool(&op->attrs, "transpose_a", false, ta, err) < 0 ||
	    fl_attr_bool(&op->attrs, "transpose_b", false, tb, err) < 0)
		return -1;
	return 0;
}

int fl_infer_matmul(const fl_op *op, const fl_shape *in, fl_shape *out,
		    fl_error *err)
{
	int64_t m, ka, kb, n;
	fl_shape ba, bb, batch;
	bool ta, tb;

	if (check_inputs(op, in, err) < 0 || matmul_flags(op, &ta, &tb, err) < 0)
		return -1;
	for (int k = 0; k < 2; k++)
		if (in[k].rank < 2) {
			fl_error_set(err, "in[%d]: matmul needs rank >= 2, got %d",
				     k, in[k].rank);
			return -1;
		}
	matmul_dims(&in[0], ta, &m, &ka);
	matmul_dims(&in[1], tb, &kb, &n);
	if (ka != kb) {
		fl_error_set(err, "in[1]: matmul inner dims differ (K=%lld vs %lld)",
			     (long long)ka, (long long)kb);
		return -1;
	}
	ba = batch_shape(&in[0]);
	bb = batch_shape(&in[1]);
	if (fl_shape_broadcast(&ba, &bb, &batch, err) < 0) {
		fl_error_prefix(err, "in[1]: batch dims");
		return -1;
	}
	out[0] = batch;
	out[0].rank = batch.rank + 2;
	out[0].dim[batch.rank] = m;
	out[0].dim[batch.rank + 1] = n;
	return check_output(&out[0], err);
}

/* One matrix product c[m x n] = a * b, where element (i, k) of a is at
 * a[i*ai + k*ak] and element (k, j) of b at b[k*bk + j*bj].  Columns are
 * done in blocks so that the inner loop runs along b's rows; each output
 * still sums over k in increasing order, in double. */
typedef struct mm_geom {
	int64_t m, n, k;
	int64_t ai, ak, bk, bj;
} mm_geom;

#define MM_BLOCK 64

/* acc[0..MM_BLOCK) += av * br[0..MM_BLOCK): a fixed trip count over
 * contiguous floats, which the compiler vectorises even at -O2.  Each
 * element gets the same multiply and add as in the scalar loop (no
 * contraction into fused multiply-adds under -std=c11), so the values
 * do not change. */
static void mm_axpy_block(double *acc, double av, const float *br)
{
	for (int j = 0; j < MM_BLOCK; j++)
		acc[j] += av * br[j];
}

/* acc[0..nb) += av * br[j * bj] for j < nb. */
static void mm_axpy(double *acc, double av, const float *br, int64_t nb,
		    int64_t bj)
{
	if (nb == MM_BLOCK && bj == 1) {
		mm_axpy_block(acc, av, br);
		return;
	}
	for (int64_t j = 0; j < nb; j++)
		acc[j] += av * br[j * bj];
}

static void matmul_rows(const mm_geom *g, const float *a, const float *b,
			float *c)
{
	double acc[MM_BLOCK];

	for (int64_t i = 0; i < g->m; i++)
		for (int64_t j0 = 0; j0 < g->n; j0 += MM_BLOCK) {
			int64_t nb = g->n - j0 < MM_BLOCK ? g->n - j0 : MM_BLOCK;

			for (int64_t j = 0; j < nb; j++)
				acc[j] = 0.0;
			for (int64_t k = 0; k < g->k; k++)
				mm_axpy(acc, a[i * g->ai + k * g->ak],
					b + k * g->bk + j0 * g->bj, nb, g->bj);
			for (int64_t j = 0; j < nb; j++)
				c[i * g->n + j0 + j] = (float)acc[j];
		}
}

/* With b transposed (columns apart in memory) it is first copied into
 * row order, so that the inner loop reads contiguous floats: the same
 * products summed in the same order.  Without memory for the copy it
 * runs on b as it is. */
static void matmul_one(const mm_geom *g, const float *a, const float *b,
		       float *c)
{
	mm_geom rows = *g;
	float *bt;

	if (g->bj == 1 || !(bt = malloc((size_t)(g->k * g->n) * sizeof *bt))) {
		matmul_rows(g, a, b, c);
		return;
	}
	for (int64_t k = 0; k < g->k; k++)
		for (int64_t j = 0; j < g->n; j++)
			bt[k * g->n + j] = b[k * g->bk + j * g->bj];
	rows.bk = g->n;
	rows.bj = 1;
	matmul_rows(&rows, a, bt, c);
	free(bt);
}

void fl_eval_matmul(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	const fl_shape *sa = &in[0].shape, *sb = &in[1].shape;
	fl_shape ba = batch_shape(sa), bb = batch_shape(sb);
	fl_shape batch = batch_shape(&out[0].shape);
	bool ta = false, tb = false;
	int64_t ra = sa->dim[sa->rank - 2], ca = sa->dim[sa->rank - 1];
	int64_t rb = sb->dim[sb->rank - 2], cb = sb->dim[sb->rank - 1];
	mm_geom g;
	float *c = out[0].data;
	walk w;

	matmul_flags(op, &ta, &tb, NULL);
	matmul_dims(sa, ta, &g.m, &g.k);
	matmul_dims(sb, tb, &g.k, &g.n);
	g.ai = ta ? 1 : ca;
	g.ak = ta ? ca : 1;
	g.bk = tb ? 1 : cb;
	g.bj = tb ? cb : 1;
	walk_init(&w, &batch, 2);
	walk_set_bcast(&w, 0, &ba);
	walk_set_bcast(&w, 1, &bb);
	walk_start(&w);
	do {
		for (int64_t t = 0; t < w.len; t++) {
			const float *a = in[0].data +
				(w.row[0] + t * w.step[0]) * ra * ca;
			const float *b = in[1].data +
				(w.row[1] + t * w.step[1]) * rb * cb;

			matmul_one(&g, a, b, c);
			c += g.m * g.n;
		}
	} while (walk_next(&w));
}

/* ------------------------------------------------------------------ */
/* conv2d and pool2d (NCHW, no padding; both may be dilated)           */

/* Output extent of a window of `taps` taps, dilation d, stride s over an
 * input extent x; -1 when the window does not fit. */
static int64_t window_out(int64_t x, int64_t taps, int64_t d, int64_t s)
{
	int64_t ext = window_extent(taps, d);

	if (ext < 0 || ext > x)
		return -1;
	return (x - ext) / s + 1;
}

static int check_nchw(const fl_shape *s, int k, const char *layout,
		      fl_error *err)
{
	if (s->rank != 4) {
		fl_error_set(err, "in[%d]: expected rank 4 (%s), got rank %d", k,
			     layout, s->rank);
		return -1;
	}
	return 0;
}

typedef struct conv_params {
	int64_t stride[2], dilation[2], groups;
} conv_params;

static int conv_attrs(const fl_op *op, conv_params *p, fl_error *err)
{
	p->stride[0] = p->stride[1] = 1;
	p->dilation[0] = p->dilation[1] = 1;
	if (attr_pair(op, "stride", p->stride, err) < 0 ||
	    attr_pair(op, "dilation", p->dilation, err) < 0 ||
	    fl_attr_int(&op->attrs, "groups", 1, &p->groups, err) < 0)
		return -1;
	if (p->groups < 1) {
		fl_error_set(err, "attrs.groups: must be >= 1, got %lld",
			     (long long)p->groups);
		return -1;
	}
	return 0;
}

/* Channel counts: x [N,C,H,W], w [K,C/groups,R,S]. */
static int conv_check_channels(const fl_shape *x, const fl_shape *w,
			       int64_t groups, fl_error *err)
{
	int64_t c = x->dim[1], k = w->dim[0];

	if (c % groups != 0) {
		fl_error_set(err, "attrs.groups: %lld does not divide the %lld "
			     "input channels", (long long)groups, (long long)c);
		return -1;
	}
	if (k % groups != 0) {
		fl_error_set(err, "attrs.groups: %lld does not divide the %lld "
			     "output channels", (long long)groups, (long long)k);
		return -1;
	}
	if (w->dim[1] != c / groups) {
		fl_error_set(err, "in[1]: weights have %lld input channels per "
			     "group, expected %lld (C=%lld, groups=%lld)",
			     (long long)w->dim[1], (long long)(c / groups),
			     (long long)c, (long long)groups);
		return -1;
	}
	return 0;
}

/* Output height and width of a sliding window, or an error naming the
 * window (and its dilation when there is one) and the input when it does
 * not fit. */
static int window_hw(const fl_shape *x, const int64_t *taps,
		     const int64_t *dil, const int64_t *stride, int64_t *hw,
		     const char *who, fl_error *err)
{
	char dilated[64] = "";

	for (int i = 0; i < 2; i++) {
		hw[i] = window_out(x->dim[2 + i], taps[i], dil[i], stride[i]);
		if (hw[i] >= 0)
			continue;
		if (dil[0] != 1 || dil[1] != 1)
			snprintf(dilated, sizeof dilated, " (dilation %lldx%lld)",
				 (long long)dil[0], (long long)dil[1]);
		fl_error_set(err, "%s: window %lldx%lld%s is larger than the "
			     "input %lldx%lld", who, (long long)taps[0],
			     (long long)taps[1], dilated, (long long)x->dim[2],
			     (long long)x->dim[3]);
		return -1;
	}
	return 0;
}

int fl_infer_conv2d(const fl_op *op, const fl_shape *in, fl_shape *out,
		    fl_error *err)
{
	conv_params p;
	int64_t hw[2];

	if (check_inputs(op, in, err) < 0 ||
	    check_nchw(&in[0], 0, "NCHW", err) < 0 ||
	    check_nchw(&in[1], 1, "KCRS", err) < 0 || conv_attrs(op, &p, err) < 0 ||
	    conv_check_channels(&in[0], &in[1], p.groups, err) < 0 ||
	    window_hw(&in[0], &in[1].dim[2], p.dilation, p.stride, hw, "in[1]",
		      err) < 0)
		return -1;
	out[0] = in[0];
	out[0].dim[1] = in[1].dim[0];
	out[0].dim[2] = hw[0];
	out[0].dim[3] = hw[1];
	return check_output(&out[0], err);
}

/* One output element of conv2d: image n, output channel k, position
 * (p, q).  xs, ws are the row-major strides of x and w. */
static double conv_point(const fl_buf *x, const fl_buf *w,
			 const conv_params *cp, const int64_t *xs,
			 const int64_t *ws, int64_t n, int64_t k, int64_t p,
			 int64_t q)
{
	int64_t cg = w->shape.dim[1], kg = w->shape.dim[0] / cp->groups;
	int64_t c0 = (k / kg) * cg;
	double acc = 0.0;

	for (int64_t c = 0; c < cg; c++)
		for (int64_t r = 0; r < w->shape.dim[2]; r++)
			for (int64_t s = 0; s < w->shape.dim[3]; s++) {
				int64_t h = p * cp->stride[0] + r * cp->dilation[0];
				int64_t v = q * cp->stride[1] + s * cp->dilation[1];

				acc += (double)x->data[n * xs[0] + (c0 + c) * xs[1] +
						       h * xs[2] + v] *
				       w->data[k * ws[0] + c * ws[1] + r * ws[2] + s];
			}
	return acc;
}

/* Output row (n, k, h) of conv2d into o[0..wo), acc a scratch row of wo
 * doubles.  Each element sums the same products over c, r, s in the same
 * order as conv_point; doing the row at once takes the index arithmetic
 * and the weight out of the innermost loop. */
static void conv_row(const fl_buf *x, const fl_buf *w, const conv_params *cp,
		     const int64_t *xs, const int64_t *ws, const int64_t *nkh,
		     int64_t wo, double *acc, float *o)
{
	int64_t cg = w->shape.dim[1], kg = w->shape.dim[0] / cp->groups;
	int64_t c0 = (nkh[1] / kg) * cg, step = cp->stride[1];

	for (int64_t v = 0; v < wo; v++)
		acc[v] = 0.0;
	for (int64_t c = 0; c < cg; c++)
		for (int64_t r = 0; r < w->shape.dim[2]; r++) {
			int64_t h = nkh[2] * cp->stride[0] +
				    r * cp->dilation[0];
			const float *xr = x->data + nkh[0] * xs[0] +
					  (c0 + c) * xs[1] + h * xs[2];
			const float *wr = w->data + nkh[1] * ws[0] + c * ws[1] +
					  r * ws[2];

			for (int64_t s = 0; s < w->shape.dim[3]; s++) {
				const float *xv = xr + s * cp->dilation[1];
				double wv = wr[s];

				for (int64_t v = 0; v < wo; v++)
					acc[v] += (double)xv[v * step] * wv;
			}
		}
	for (int64_t v = 0; v < wo; v++)
		o[v] = (float)acc[v];
}

/* Row by row (conv_row); point by point when there is no memory for the
 * scratch row. */
void fl_eval_conv2d(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	const fl_shape *os = &out[0].shape;
	int64_t xs[4], ws[4];
	conv_params p;
	float *o = out[0].data;
	double *acc = malloc((size_t)(os->dim[3] ? os->dim[3] : 1) *
			     sizeof *acc);

	conv_attrs(op, &p, NULL);
	fl_shape_strides(&in[0].shape, xs);
	fl_shape_strides(&in[1].shape, ws);
	if (acc) {
		for (int64_t n = 0; n < os->dim[0]; n++)
			for (int64_t k = 0; k < os->dim[1]; k++)
				for (int64_t h = 0; h < os->dim[2]; h++) {
					conv_row(&in[0], &in[1], &p, xs, ws,
						 (const int64_t[]){n, k, h},
						 os->dim[3], acc, o);
					o += os->dim[3];
				}
		free(acc);
		return;
	}
	for (int64_t n = 0; n < os->dim[0]; n++)
		for (int64_t k = 0; k < os->dim[1]; k++)
			for (int64_t h = 0; h < os->dim[2]; h++)
				for (int64_t v = 0; v < os->dim[3]; v++)
					*o++ = (float)conv_point(&in[0], &in[1], &p,
								 xs, ws, n, k, h, v);
}

typedef struct pool_params {
	bool avg;
	int64_t kernel[2], stride[2], dilation[2];
} pool_params;

static int pool_attrs(const fl_op *op, pool_params *p, fl_error *err)
{
	const char *mode;
	int rc;

	if (fl_attr_string(&op->attrs, "mode", "max", &mode, err) < 0)
		return -1;
	if (strcmp(mode, "max") != 0 && strcmp(mode, "avg") != 0) {
		fl_error_set(err, "attrs.mode: expected \"max\" or \"avg\", "
			     "got \"%s\"", mode);
		return -1;
	}
	p->avg = strcmp(mode, "avg") == 0;
	rc = attr_pair(op, "kernel", p->kernel, err);
	if (rc < 0)
		return -1;
	if (rc == 0) {
		fl_error_set(err, "attrs.kernel: required");
		return -1;
	}
	p->stride[0] = p->kernel[0];
	p->stride[1] = p->kernel[1];
	p->dilation[0] = p->dilation[1] = 1;
	return attr_pair(op, "stride", p->stride, err) < 0 ||
	       attr_pair(op, "dilation", p->dilation, err) < 0 ? -1 : 0;
}

int fl_infer_pool2d(const fl_op *op, const fl_shape *in, fl_shape *out,
		    fl_error *err)
{
	pool_params p;
	int64_t hw[2];

	if (check_inputs(op, in, err) < 0 ||
	    check_nchw(&in[0], 0, "NCHW", err) < 0 || pool_attrs(op, &p, err) < 0 ||
	    window_hw(&in[0], p.kernel, p.dilation, p.stride, hw,
		      "attrs.kernel", err) < 0)
		return -1;
	out[0] = in[0];
	out[0].dim[2] = hw[0];
	out[0].dim[3] = hw[1];
	return check_output(&out[0], err);
}

/* One pooling window whose top-left input element is at x, its taps
 * p->dilation apart. */
static double pool_window(const float *x, int64_t row_stride,
			  const pool_params *p)
{
	double acc = p->avg ? 0.0 : -INFINITY;

	for (int64_t r = 0; r < p->kernel[0]; r++)
		for (int64_t s = 0; s < p->kernel[1]; s++) {
			double v = x[r * p->dilation[0] * row_stride +
				     s * p->dilation[1]];

			acc = p->avg ? acc + v : fmax(acc, v);
		}
	return p->avg ? acc / (double)(p->kernel[0] * p->kernel[1]) : acc;
}

void fl_eval_pool2d(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	const fl_shape *xs = &in[0].shape, *os = &out[0].shape;
	int64_t planes = xs->dim[0] * xs->dim[1];
	int64_t plane = xs->dim[2] * xs->dim[3];
	pool_params p;
	float *o = out[0].data;

	pool_attrs(op, &p, NULL);
	for (int64_t c = 0; c < planes; c++)
		for (int64_t h = 0; h < os->dim[2]; h++)
			for (int64_t v = 0; v < os->dim[3]; v++) {
				const float *x = in[0].data + c * plane +
						 h * p.stride[0] * xs->dim[3] +
						 v * p.stride[1];

				*o++ = (float)pool_window(x, xs->dim[3], &p);
			}
}

/* The C backend's statements: max pooling keeps the running maximum,
 * average pooling sums and then divides by the window. */
fl_op_c fl_c_pool2d(const fl_op *op, char *buf, size_t n)
{
	pool_params p;

	pool_attrs(op, &p, NULL);
	if (!p.avg)
		return (fl_op_c){.init = "-INFINITY",
				 .update = "fl_fmaxf($o, $0)"};
	snprintf(buf, n, "$o / %lld.0f",
		 (long long)(p.kernel[0] * p.kernel[1]));
	return (fl_op_c){.init = "0.0f", .update = "$o + $0", .finalize = buf};
}

/* ------------------------------------------------------------------ */
/* Data movement: transpose, reshape, concat, slice, pad, gather,      */
/* broadcast_to                                                        */

/* Copies the elements walked by operand 0 of w, row by row, densely
 * into o. */
static void walk_copy_out(walk *w, const float *x, float *o)
{
	walk_start(w);
	do {
		const float *r = x + w->row[0];

		for (int64_t j = 0; j < w->len; j++)
			o[j] = r[j * w->step[0]];
		o += w->len;
	} while (walk_next(w));
}

static int read_perm(const fl_op *op, int rank, int64_t *perm, fl_error *err)
{
	bool seen[FL_MAX_RANK] = {false};
	int n;
	int rc = fl_attr_ints(&op->attrs, "perm", perm, FL_MAX_RANK, &n, err);

	if (rc < 0)
		return -1;
	if (rc == 0) {
		fl_error_set(err, "attrs.perm: required");
		return -1;
	}
	if (n != rank) {
		fl_error_set(err, "attrs.perm: %d values for rank %d", n, rank);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]]) {
			fl_error_set(err, "attrs.perm: not a permutation of 0..%d",
				     rank - 1);
			return -1;
		}
		seen[perm[i]] = true;
	}
	return 0;
}

int fl_infer_transpose(const fl_op *op, const fl_shape *in, fl_shape *out,
		       fl_error *err)
{
	int64_t perm[FL_MAX_RANK];

	if (check_inputs(op, in, err) < 0 ||
	    read_perm(op, in[0].rank, perm, err) < 0)
		return -1;
	out[0] = in[0];
	for (int d = 0; d < in[0].rank; d++)
		out[0].dim[d] = in[0].dim[perm[d]];
	return check_output(&out[0], err);
}

/* out dim d is input dim perm[d]: walk out's shape with the input's
 * strides permuted. */
void fl_eval_transpose(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	int64_t perm[FL_MAX_RANK], st[FL_MAX_RANK];
	walk w;

	read_perm(op, in[0].shape.rank, perm, NULL);
	fl_shape_strides(&in[0].shape, st);
	walk_init(&w, &out[0].shape, 1);
	for (int d = 0; d < w.rank; d++)
		w.stride[0][d] = st[perm[d]];
	walk_copy_out(&w, in[0].data, out[0].data);
}

/* Reads attrs.shape (entries >= 1, at most one -1) into dims; *n its
 * length, *hole the index of the -1 or -1, *known the product of the
 * other entries (-1 on overflow). */
static int reshape_attr(const fl_op *op, int64_t *dims, int *n, int *hole,
			int64_t *known, fl_error *err)
{
	int rc = fl_attr_ints(&op->attrs, "shape", dims, FL_MAX_RANK, n, err);

	if (rc <= 0) {
		if (rc == 0)
			fl_error_set(err, "attrs.shape: required");
		return -1;
	}
	*hole = -1;
	*known = 1;
	for (int i = 0; i < *n; i++) {
		if (dims[i] == -1 && *hole >= 0) {
			fl_error_set(err, "attrs.shape[%d]: only one entry may "
				     "be -1", i);
			return -1;
		}
		if (dims[i] == -1) {
			*hole = i;
			continue;
		}
		if (dims[i] < 1) {
			fl_error_set(err, "attrs.shape[%d]: must be >= 1 or -1, "
				     "got %lld", i, (long long)dims[i]);
			return -1;
		}
		if (*known >= 0)
			*known = *known > INT64_MAX / dims[i] ? -1
							       : *known * dims[i];
	}
	return 0;
}

int fl_infer_reshape(const fl_op *op, const fl_shape *in, fl_shape *out,
		     fl_error *err)
{
	int64_t dims[FL_MAX_RANK], known, total;
	int n, hole;
	char sa[128], sb[128];
	fl_shape want;

	if (check_inputs(op, in, err) < 0 ||
	    reshape_attr(op, dims, &n, &hole, &known, err) < 0)
		return -1;
	total = fl_shape_numel(&in[0]);
	want = fl_shape_make(n, dims);
	fl_shape_format(&want, sa, sizeof sa);
	fl_shape_format(&in[0], sb, sizeof sb);
	if (hole >= 0 && (known < 0 || total % known != 0)) {
		fl_error_set(err, "attrs.shape: %s does not fit the %lld "
			     "elements of %s", sa, (long long)total, sb);
		return -1;
	}
	if (hole < 0 && known != total) {
		fl_error_set(err, "attrs.shape: %s does not have the %lld "
			     "elements of %s", sa, (long long)total, sb);
		return -1;
	}
	if (hole >= 0)
		dims[hole] = total / known;
	out[0] = fl_shape_make(n, dims);
	return check_output(&out[0], err);
}

void fl_eval_reshape(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	(void)op;
	memcpy(out[0].data, in[0].data,
	       (size_t)fl_shape_numel(&out[0].shape) * sizeof(float));
}

/* The "axis" attribute (default 0) of concat and gather, normalised. */
static int axis_attr(const fl_op *op, int rank, int *axis, fl_error *err)
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

int fl_infer_concat(const fl_op *op, const fl_shape *in, fl_shape *out,
		    fl_error *err)
{
	int axis;

	if (check_inputs(op, in, err) < 0 ||
	    axis_attr(op, in[0].rank, &axis, err) < 0)
		return -1;
	out[0] = in[0];
	for (int k = 1; k < op->n_in; k++) {
		if (in[k].rank != in[0].rank) {
			fl_error_set(err, "in[%d]: rank %d, but in[0] has rank %d",
				     k, in[k].rank, in[0].rank);
			return -1;
		}
		for (int d = 0; d < in[0].rank; d++)
			if (d != axis && in[k].dim[d] != in[0].dim[d]) {
				fl_error_set(err, "in[%d]: dim %d is %lld, but in[0] "
					     "has %lld", k, d,
					     (long long)in[k].dim[d],
					     (long long)in[0].dim[d]);
				return -1;
			}
		out[0].dim[axis] = add_extents(out[0].dim[axis], in[k].dim[axis]);
		if (out[0].dim[axis] < 0) {
			fl_error_set(err, "out: output has too many elements");
			return -1;
		}
	}
	return check_output(&out[0], err);
}

/* Product of dims [from, to) of s. */
static int64_t dims_product(const fl_shape *s, int from, int to)
{
	int64_t p = 1;

	for (int d = from; d < to; d++)
		p *= s->dim[d];
	return p;
}

/* Viewing every tensor as [outer, extent along axis * inner], the output
 * row o is the inputs' rows o one after the other. */
void fl_eval_concat(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	int axis;
	int64_t outer, inner;
	float *o = out[0].data;

	axis_attr(op, out[0].shape.rank, &axis, NULL);
	outer = dims_product(&out[0].shape, 0, axis);
	inner = dims_product(&out[0].shape, axis + 1, out[0].shape.rank);
	for (int64_t r = 0; r < outer; r++)
		for (int k = 0; k < op->n_in; k++) {
			int64_t len = in[k].shape.dim[axis] * inner;

			memcpy(o, in[k].data + r * len, (size_t)len * sizeof(float));
			o += len;
		}
}

typedef struct slice_box {
	int64_t start[FL_MAX_RANK], step[FL_MAX_RANK], count[FL_MAX_RANK];
} slice_box;

/* Reads one of the per-dim lists of slice ("starts", "ends", "steps"). */
static int slice_list(const fl_op *op, const char *key, int rank,
		      int64_t *v, fl_error *err)
{
	int n, rc = fl_attr_ints(&op->attrs, key, v, FL_MAX_RANK, &n, err);

	if (rc < 0)
		return -1;
	if (rc == 0) {
		if (strcmp(key, "steps") != 0) {
			fl_error_set(err, "attrs.%s: required", key);
			return -1;
		}
		for (int d = 0; d < rank; d++)
			v[d] = 1;
		return 0;
	}
	if (n != rank) {
		fl_error_set(err, "attrs.%s: %d values for rank %d", key, n, rank);
		return -1;
	}
	return 0;
}

/* One dim: start in [0, x) after normalisation, end clamped into [0, x],
 * at least one element. */
static int slice_dim(int d, int64_t x, int64_t s, int64_t e, int64_t step,
		     slice_box *b, fl_error *err)
{
	int64_t s0 = s < 0 ? s + x : s;

	if (step < 1) {
		fl_error_set(err, "attrs.steps[%d]: must be >= 1, got %lld", d,
			     (long long)step);
		return -1;
	}
	if (s0 < 0 || s0 >= x) {
		fl_error_set(err, "attrs.starts[%d]: %lld out of range for "
			     "extent %lld", d, (long long)s, (long long)x);
		return -1;
	}
	if (e < 0)
		e = e + x < 0 ? 0 : e + x;
	if (e > x)
		e = x;
	if (e <= s0) {
		fl_error_set(err, "attrs.ends[%d]: empty slice (start %lld, "
			     "end %lld)", d, (long long)s0, (long long)e);
		return -1;
	}
	b->start[d] = s0;
	b->step[d] = step;
	b->count[d] = (e - s0 - 1) / step + 1;
	return 0;
}

static int slice_resolve(const fl_op *op, const fl_shape *x, slice_box *b,
			 fl_error *err)
{
	int64_t s[FL_MAX_RANK], e[FL_MAX_RANK], st[FL_MAX_RANK];

	if (slice_list(op, "starts", x->rank, s, err) < 0 ||
	    slice_list(op, "ends", x->rank, e, err) < 0 ||
	    slice_list(op, "steps", x->rank, st, err) < 0)
		return -1;
	for (int d = 0; d < x->rank; d++)
		if (slice_dim(d, x->dim[d], s[d], e[d], st[d], b, err) < 0)
			return -1;
	return 0;
}

int fl_infer_slice(const fl_op *op, const fl_shape *in, fl_shape *out,
		   fl_error *err)
{
	slice_box b;

	if (check_inputs(op, in, err) < 0 || slice_resolve(op, &in[0], &b, err) < 0)
		return -1;
	out[0] = fl_shape_make(in[0].rank, b.count);
	return check_output(&out[0], err);
}

void fl_eval_slice(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	int64_t st[FL_MAX_RANK];
	slice_box b;
	walk w;

	slice_resolve(op, &in[0].shape, &b, NULL);
	fl_shape_strides(&in[0].shape, st);
	walk_init(&w, &out[0].shape, 1);
	for (int d = 0; d < w.rank; d++) {
		w.stride[0][d] = st[d] * b.step[d];
		w.origin[0] += st[d] * b.start[d];
	}
	walk_copy_out(&w, in[0].data, out[0].data);
}

/* pads[0..rank-1] leading, pads[rank..2*rank-1] trailing; value. */
static int pad_attrs(const fl_op *op, int rank, int64_t *pads, double *value,
		     fl_error *err)
{
	int n, rc = fl_attr_ints(&op->attrs, "pads", pads, 2 * FL_MAX_RANK, &n,
				 err);

	if (rc < 0)
		return -1;
	if (rc == 0) {
		fl_error_set(err, "attrs.pads: required");
		return -1;
	}
	if (n != 2 * rank) {
		fl_error_set(err, "attrs.pads: %d values, expected %d (2 x rank %d)",
			     n, 2 * rank, rank);
		return -1;
	}
	for (int i = 0; i < n; i++)
		if (pads[i] < 0) {
			fl_error_set(err, "attrs.pads[%d]: must be >= 0, got %lld",
				     i, (long long)pads[i]);
			return -1;
		}
	return fl_attr_float(&op->attrs, "value", 0.0, value, err) < 0 ? -1 : 0;
}

int fl_infer_pad(const fl_op *op, const fl_shape *in, fl_shape *out,
		 fl_error *err)
{
	int64_t pads[2 * FL_MAX_RANK];
	double value;
	int rank = in[0].rank;

	if (check_inputs(op, in, err) < 0 ||
	    pad_attrs(op, rank, pads, &value, err) < 0)
		return -1;
	out[0] = in[0];
	for (int d = 0; d < rank; d++) {
		int64_t e = add_extents(in[0].dim[d], pads[d]);

		e = e < 0 ? -1 : add_extents(e, pads[rank + d]);
		if (e < 0) {
			fl_error_set(err, "out: output has too many elements");
			return -1;
		}
		out[0].dim[d] = e;
	}
	return check_output(&out[0], err);
}

/* v as a C float literal ("0.5f", "-INFINITY", "NAN") into buf. */
static const char *float_literal(double v, char *buf, size_t n)
{
	if (isnan(v))
		return "NAN";
	if (isinf(v))
		return v > 0 ? "INFINITY" : "-INFINITY";
	snprintf(buf, n - 3, "%.9g", (double)(float)v);
	if (!strpbrk(buf, ".e"))
		strcat(buf, ".0");
	strcat(buf, "f");
	return buf;
}

/* The C backend's statements: the border is filled with the value (the
 * copy of the input needs no template). */
fl_op_c fl_c_pad(const fl_op *op, char *buf, size_t n)
{
	double v = 0.0;

	fl_attr_float(&op->attrs, "value", 0.0, &v, NULL);
	return (fl_op_c){.fill = float_literal(v, buf, n)};
}

/* Fills the output with the pad value, then walks the input shape
 * writing each row into its place inside the output. */
void fl_eval_pad(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	int64_t pads[2 * FL_MAX_RANK], n = fl_shape_numel(&out[0].shape);
	double value = 0.0;
	walk w;

	pad_attrs(op, in[0].shape.rank, pads, &value, NULL);
	for (int64_t i = 0; i < n; i++)
		out[0].data[i] = (float)value;
	walk_init(&w, &in[0].shape, 2);
	walk_set_dense(&w, 0);
	fl_shape_strides(&out[0].shape, w.stride[1]);
	for (int d = 0; d < w.rank; d++)
		w.origin[1] += pads[d] * w.stride[1][d];
	walk_start(&w);
	do {
		const float *x = in[0].data + w.row[0];
		float *o = out[0].data + w.row[1];

		memcpy(o, x, (size_t)w.len * sizeof(float));
	} while (walk_next(&w));
}

int fl_infer_gather(const fl_op *op, const fl_shape *in, fl_shape *out,
		    fl_error *err)
{
	const fl_shape *x = &in[0], *idx = &in[1];
	int axis, rank;

	if (check_inputs(op, in, err) < 0 ||
	    axis_attr(op, x->rank, &axis, err) < 0)
		return -1;
	rank = x->rank - 1 + idx->rank;
	if (rank > FL_MAX_RANK) {
		fl_error_set(err, "out: rank %d exceeds the maximum of %d", rank,
			     FL_MAX_RANK);
		return -1;
	}
	out[0].rank = rank;
	for (int d = 0; d < axis; d++)
		out[0].dim[d] = x->dim[d];
	for (int d = 0; d < idx->rank; d++)
		out[0].dim[axis + d] = idx->dim[d];
	for (int d = axis + 1; d < x->rank; d++)
		out[0].dim[idx->rank + d - 1] = x->dim[d];
	return check_output(&out[0], err);
}

/* floor(v) clamped into [0, extent); NaN reads index 0. */
static int64_t gather_index(float v, int64_t extent)
{
	double f = floor((double)v);

	if (!(f >= 0.0))
		return 0;
	if (f >= (double)(extent - 1))
		return extent - 1;
	return (int64_t)f;
}

/* Viewing x as [outer, extent, inner]: output block (o, t) is x's
 * [o, index t, :]. */
void fl_eval_gather(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	const fl_shape *xs = &in[0].shape;
	int axis;
	int64_t outer, inner, extent, n_idx = fl_shape_numel(&in[1].shape);
	float *o = out[0].data;

	axis_attr(op, xs->rank, &axis, NULL);
	outer = dims_product(xs, 0, axis);
	inner = dims_product(xs, axis + 1, xs->rank);
	extent = xs->dim[axis];
	for (int64_t r = 0; r < outer; r++)
		for (int64_t t = 0; t < n_idx; t++) {
			int64_t j = gather_index(in[1].data[t], extent);

			memcpy(o, in[0].data + (r * extent + j) * inner,
			       (size_t)inner * sizeof(float));
			o += inner;
		}
}

int fl_infer_broadcast_to(const fl_op *op, const fl_shape *in, fl_shape *out,
			  fl_error *err)
{
	int64_t dims[FL_MAX_RANK];
	int n, rc;
	fl_shape to;
	char sa[128], sb[128];

	if (check_inputs(op, in, err) < 0)
		return -1;
	rc = fl_attr_ints(&op->attrs, "shape", dims, FL_MAX_RANK, &n, err);
	if (rc <= 0) {
		if (rc == 0)
			fl_error_set(err, "attrs.shape: required");
		return -1;
	}
	for (int i = 0; i < n; i++)
		if (dims[i] < 1) {
			fl_error_set(err, "attrs.shape[%d]: must be >= 1, got %lld",
				     i, (long long)dims[i]);
			return -1;
		}
	to = fl_shape_make(n, dims);
	if (!fl_shape_broadcasts_to(&in[0], &to)) {
		fl_error_set(err, "attrs.shape: %s does not broadcast to %s",
			     fl_shape_format(&in[0], sa, sizeof sa),
			     fl_shape_format(&to, sb, sizeof sb));
		return -1;
	}
	out[0] = to;
	return check_output(&out[0], err);
}

void fl_eval_broadcast_to(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	walk w;

	(void)op;
	walk_init(&w, &out[0].shape, 1);
	walk_set_bcast(&w, 0, &in[0].shape);
	walk_copy_out(&w, in[0].data, out[0].data);
}

/* ------------------------------------------------------------------ */
/* custom: an op the engine cannot model                               */

/* What a custom op computes: "fn" is "cumsum" (the default) or "copy",
 * which the interpreter and the backends implement (so the engine's
 * handling of fusion walls can be run and checked), or "opaque": an
 * operator fuselab knows nothing of but its output shape ("shape"),
 * kept so that a model using one still loads, partitions and shows. */
static int custom_fn(const fl_op *op, fl_custom_fn *fn, fl_error *err)
{
	const char *name;

	if (fl_attr_string(&op->attrs, "fn", "cumsum", &name, err) < 0)
		return -1;
	if (strcmp(name, "cumsum") == 0)
		*fn = FL_CUSTOM_CUMSUM;
	else if (strcmp(name, "copy") == 0)
		*fn = FL_CUSTOM_COPY;
	else if (strcmp(name, "opaque") == 0)
		*fn = FL_CUSTOM_OPAQUE;
	else {
		fl_error_set(err, "attrs.fn: unknown function \"%s\" (expected "
			     "\"cumsum\", \"copy\" or \"opaque\")", name);
		return -1;
	}
	return 0;
}

fl_custom_fn fl_custom_fn_of(const fl_op *op)
{
	fl_custom_fn fn = FL_CUSTOM_CUMSUM;

	if (op->kind != FL_OP_CUSTOM || custom_fn(op, &fn, NULL) < 0)
		return FL_CUSTOM_NONE;
	return fn;
}

bool fl_op_computable(const fl_op *op)
{
	return fl_custom_fn_of(op) != FL_CUSTOM_OPAQUE;
}

/* An opaque op's output is its "shape" attribute. */
static int opaque_shape(const fl_op *op, fl_shape *out, fl_error *err)
{
	int64_t dims[FL_MAX_RANK];
	int n, rc = fl_attr_ints(&op->attrs, "shape", dims, FL_MAX_RANK, &n,
				 err);

	if (rc <= 0) {
		if (rc == 0)
			fl_error_set(err, "attrs.shape: required for fn "
				     "\"opaque\" (the output's shape)");
		return -1;
	}
	for (int i = 0; i < n; i++)
		if (dims[i] < 1) {
			fl_error_set(err, "attrs.shape[%d]: must be >= 1, got "
				     "%lld", i, (long long)dims[i]);
			return -1;
		}
	*out = fl_shape_make(n, dims);
	return check_output(out, err);
}

int fl_infer_custom(const fl_op *op, const fl_shape *in, fl_shape *out,
		    fl_error *err)
{
	fl_custom_fn fn;

	if (check_inputs(op, in, err) < 0 || custom_fn(op, &fn, err) < 0)
		return -1;
	if (fn == FL_CUSTOM_OPAQUE)
		return opaque_shape(op, &out[0], err);
	if (op->n_in != 1) {
		fl_error_set(err, "fn \"%s\" takes one input, not %d",
			     fn == FL_CUSTOM_COPY ? "copy" : "cumsum",
			     op->n_in);
		return -1;
	}
	out[0] = in[0];
	return check_output(&out[0], err);
}

/* cumsum: inclusive prefix sums along the last axis, in double.  Never
 * called on an opaque op (fl_op_computable); the interpreter refuses
 * those first, but the output is still defined: zeros. */
void fl_eval_custom(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	int64_t n = fl_shape_numel(&out[0].shape);
	const fl_shape *s = &out[0].shape;
	int64_t len = s->rank ? s->dim[s->rank - 1] : 1;
	fl_custom_fn fn = fl_custom_fn_of(op);

	if (fn == FL_CUSTOM_OPAQUE || fn == FL_CUSTOM_NONE) {
		memset(out[0].data, 0, (size_t)n * sizeof(float));
		return;
	}
	if (fn == FL_CUSTOM_COPY) {
		memcpy(out[0].data, in[0].data, (size_t)n * sizeof(float));
		return;
	}
	for (int64_t r = 0; r < n; r += len) {
		double acc = 0.0;

		for (int64_t j = 0; j < len; j++) {
			acc += in[0].data[r + j];
			out[0].data[r + j] = (float)acc;
		}
	}
}
