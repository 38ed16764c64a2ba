/* ONNX import of predicates and index operators: IsNaN, IsInf, CastLike,
 * OneHot, Compress, TopK and ReverseSequence, built from the op
 * library's primitives so that every strategy fuses and compiles them.
 *
 * Contract: as onnx_ops.c's mappings (onnx_import_impl.h): each one turns
 * the node being imported into ops emitted through fl_onnx_emit and binds
 * the node's outputs (TopK: both, when read).  Bad attributes or inputs
 * are errors naming them; a form fuselab's static shapes cannot hold is
 * refused through fl_onnx_cannot_model and the node stays opaque.
 * fl_onnx_mapping_more (onnx_ops_more.c) falls back on
 * fl_onnx_mapping_index.
 *
 * How each is built:
 *   IsNaN, IsInf   the is_nan and is_inf primitives (bit tests, correct
 *                  whatever the compiler's floating-point flags);
 *   CastLike       cast to the element type of its second input;
 *   OneHot         where(equal(indices', arange(depth)), on, off) with
 *                  the indices' negative entries wrapped by depth and
 *                  on/off sliced out of `values` (any of the three may
 *                  be computed at run time; depth, when it is, is the
 *                  extent the model declares for the output's axis);
 *   Compress       a gather by the kept positions, when the condition is
 *                  known at import (else opaque: the output's extent
 *                  would depend on run-time values);
 *   TopK           a rank by counting: element i's rank along the axis
 *                  is the number of elements before it in the order
 *                  (greater, or equal at a lower index, for largest);
 *                  output r sums where(rank == r) over the axis, for the
 *                  values and for the int64 indices.  k known at import,
 *                  or the extent the model declares for the output;
 *   ReverseSequence  a gather of rows: x as [T*B, rest], each (t, b)'s
 *                  source row computed from sequence_lens (known at
 *                  import or at run time) by integer arithmetic. */
#include "onnx_import_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT 0		/* emit into the node's output 0 */
#define TMP (-1)	/* emit into a new intermediate */

/* The longest axis TopK ranks (n * n comparisons per row). */
#define MAX_TOPK_EXTENT 4096
/* The largest depth OneHot compares with (indices compare as floats). */
#define MAX_ONE_HOT_DEPTH (1 << 24)

static const fl_shape *shape_of(const fl_onnx_ctx *c, int t)
{
	return &c->g->tensors[t].shape;
}

static fl_dtype dtype_of(const fl_onnx_ctx *c, int t)
{
	return c->g->tensors[t].dtype;
}

static int done(int t)
{
	return t < 0 ? -1 : 0;
}

/* Chainable emits: -1 at once when an input failed. */
static int bin(fl_onnx_ctx *c, fl_op_kind kind, int a, int b, int out,
	       fl_error *err)
{
	return a < 0 || b < 0 ? -1 : fl_onnx_emit2(c, kind, a, b, out, err);
}

static int where(fl_onnx_ctx *c, int cond, int a, int b, int out,
		 fl_error *err)
{
	int in[3] = {cond, a, b};

	if (cond < 0 || a < 0 || b < 0)
		return -1;
	return fl_onnx_emit(c, FL_OP_WHERE, in, 3, NULL, out, err);
}

static int reshape(fl_onnx_ctx *c, int x, const fl_shape *s, int out,
		   fl_error *err)
{
	return x < 0 ? -1 : fl_onnx_reshape(c, x, s, out, err);
}

static int cast(fl_onnx_ctx *c, int x, fl_dtype dt, int out, fl_error *err)
{
	fl_attrs a = {0};

	if (x < 0)
		return -1;
	if (dtype_of(c, x) == dt && out == TMP)
		return x;
	if (fl_attrs_set_string(&a, "dtype", fl_dtype_name(dt)) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_CAST, &x, 1, &a, out, err);
}

/* A const tensor of shape s, values v (numel(s) floats, exact in the
 * type) converted to dt. */
static int typed_const(fl_onnx_ctx *c, const char *what, const fl_shape *s,
		       const float *v, fl_dtype dt, fl_error *err)
{
	int t = fl_onnx_const_tensor(c, what, s, v, err);

	if (t < 0)
		return -1;
	if (dt != FL_F32 &&
	    fl_tensor_convert_const(&c->g->tensors[t], dt, err) < 0)
		return -1;
	return t;
}

/* A rank-0 constant v of type dt. */
static int typed_scalar(fl_onnx_ctx *c, float v, fl_dtype dt, fl_error *err)
{
	fl_shape s = {.rank = 0};

	return typed_const(c, "const", &s, &v, dt, err);
}

/* 0, 1, ..., n-1 of type dt laid along dim `axis` of a rank-`rank`
 * shape whose other extents are 1 (a broadcastable arange). */
static int arange_along(fl_onnx_ctx *c, const char *what, int64_t n,
			int axis, int rank, fl_dtype dt, fl_error *err)
{
	fl_shape s = {.rank = rank};
	float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
	int t;

	if (!v)
		return fl_onnx_oom(err);
	for (int d = 0; d < rank; d++)
		s.dim[d] = d == axis ? n : 1;
	for (int64_t i = 0; i < n; i++)
		v[i] = (float)i;
	t = typed_const(c, what, &s, v, dt, err);
	free(v);
	return t;
}

/* s with a dim of extent 1 inserted before dim `at`. */
static fl_shape insert_one(const fl_shape *s, int at)
{
	fl_shape r = {.rank = s->rank + 1};

	for (int d = 0, k = 0; d < r.rank; d++)
		r.dim[d] = d == at ? 1 : s->dim[k++];
	return r;
}

/* An axis attribute in [-rank, rank) normalised, or -1 with err set. */
static int norm_axis(int64_t axis, int rank, const char *what, fl_error *err)
{
	if (axis < -rank || axis >= rank) {
		fl_error_set(err, "attribute %s: %lld outside [-%d, %d)", what,
			     (long long)axis, rank, rank);
		return -1;
	}
	return (int)(axis < 0 ? axis + rank : axis);
}

/* An extent the node needs as a value: input k's single integral value
 * when known at import, else dim `dim` of the shape the model declares
 * for output `o` (static shapes: the model promises that extent).  0
 * with *n set, or -1 (cannot model, or err). */
static int extent_of(fl_onnx_ctx *c, int k, int o, int dim, int rank,
		     int64_t *n, fl_error *err)
{
	const fl_onnx_values *v = fl_onnx_input_known(c, k);
	const Onnx__ValueInfoProto *vi;
	bool dynamic = false;
	fl_shape s;

	if (v) {
		if (v->n != 1) {
			fl_error_set(err, "input %d: %lld values (one "
				     "expected)", k, (long long)v->n);
			return -1;
		}
		*n = v->i ? v->i[0] : (int64_t)v->f[0];
		return 0;
	}
	vi = o < (int)c->node->n_output
		? fl_onnx_declared_value(c->graph, c->node->output[o]) : NULL;
	if (!vi || fl_onnx_declared_shape(vi, &s, &dynamic, err) < 0 ||
	    dynamic || s.rank != rank || dim >= s.rank || s.dim[dim] < 0)
		/* as fl_onnx_input_ints says it */
		return fl_onnx_cannot_model(c, err, "input %d computed at run "
					    "time", k);
	*n = s.dim[dim];
	return 0;
}

static bool output_wanted(const fl_onnx_ctx *c, int o)
{
	return o < (int)c->node->n_output && c->node->output[o][0];
}

/* --- predicates and casts --- */

/* IsNaN: is_nan.  IsInf: is_inf with detect_positive/detect_negative. */
static int map_is_nan_inf(fl_onnx_ctx *c, fl_error *err)
{
	bool inf = !strcmp(c->node->op_type, "IsInf");
	int x = fl_onnx_data(c, 0, err);
	fl_attrs a = {0};

	if (x < 0)
		return -1;
	if (!inf)
		return done(fl_onnx_emit1(c, FL_OP_IS_NAN, x, OUT, err));
	if (fl_attrs_set_bool(&a, "positive", fl_onnx_attr_int(
				c, "detect_positive", 1) != 0) < 0 ||
	    fl_attrs_set_bool(&a, "negative", fl_onnx_attr_int(
				c, "detect_negative", 1) != 0) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return done(fl_onnx_emit_attrs(c, FL_OP_IS_INF, &x, 1, &a, OUT, err));
}

/* CastLike(x, like): Cast to like's element type. */
static int map_cast_like(fl_onnx_ctx *c, fl_error *err)
{
	fl_onnx_binding *like = fl_onnx_input(c, 1, err);

	if (!like)
		return -1;
	return fl_onnx_cast_node(c, like->dtype, err);
}

/* --- OneHot --- */

/* on (values[1]) and off (values[0]) as [1] tensors. */
static int one_hot_value(fl_onnx_ctx *c, int values, int64_t at,
			 fl_error *err)
{
	int64_t start = at, end = at + 1;
	fl_attrs a = {0};

	if (fl_attrs_set_ints(&a, "starts", &start, 1) < 0 ||
	    fl_attrs_set_ints(&a, "ends", &end, 1) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_SLICE, &values, 1, &a, TMP, err);
}

/* indices as floats with the negative ones wrapped: idx < 0 ? idx +
 * depth : idx (out-of-range ones then match no position) */
static int one_hot_indices(fl_onnx_ctx *c, int idx, int64_t depth,
			   fl_error *err)
{
	int zero = typed_scalar(c, 0, FL_F32, err);
	int d = zero < 0 ? -1 : typed_scalar(c, (float)depth, FL_F32, err);

	idx = cast(c, idx, FL_F32, TMP, err);
	return where(c, bin(c, FL_OP_LESS, idx, zero, TMP, err),
		     bin(c, FL_OP_ADD, idx, d, TMP, err), idx, TMP, err);
}

static int map_one_hot(fl_onnx_ctx *c, fl_error *err)
{
	int idx = fl_onnx_data_any(c, 0, err), values, hot, on, off;
	int64_t depth;
	fl_shape is;
	int axis;

	if (idx < 0 || (values = fl_onnx_data_any(c, 2, err)) < 0)
		return -1;
	is = *shape_of(c, idx);
	if (dtype_of(c, idx) == FL_BOOL) {
		fl_error_set(err, "input 0: indices must be numbers, not bool");
		return -1;
	}
	if (is.rank + 1 > FL_MAX_RANK) {
		fl_error_set(err, "input 0: rank %d (at most %d)", is.rank,
			     FL_MAX_RANK - 1);
		return -1;
	}
	if ((axis = norm_axis(fl_onnx_attr_int(c, "axis", -1), is.rank + 1,
			      "axis", err)) < 0 ||
	    extent_of(c, 1, 0, axis, is.rank + 1, &depth, err) < 0)
		return -1;
	if (depth < 1 || depth > MAX_ONE_HOT_DEPTH) {
		fl_error_set(err, "input 1: depth %lld (1 to %d)",
			     (long long)depth, MAX_ONE_HOT_DEPTH);
		return -1;
	}
	if (fl_shape_numel(shape_of(c, values)) != 2) {
		fl_error_set(err, "input 2: values must hold 2 elements "
			     "(off, on)");
		return -1;
	}
	{
		fl_shape flat = fl_shape_make(1, (int64_t[]){2});
		fl_shape col = insert_one(&is, axis);

		values = reshape(c, values, &flat, TMP, err);
		idx = reshape(c, one_hot_indices(c, idx, depth, err), &col,
			      TMP, err);
	}
	hot = bin(c, FL_OP_EQUAL, idx, idx < 0 ? -1 : arange_along(
			c, "positions", depth, axis, is.rank + 1, FL_F32, err),
		  TMP, err);
	off = values < 0 ? -1 : one_hot_value(c, values, 0, err);
	on = off < 0 ? -1 : one_hot_value(c, values, 1, err);
	return done(where(c, hot, on, off, OUT, err));
}

/* --- Compress --- */

/* The kept positions of the known condition (at most extent of them);
 * *m how many. */
static int64_t *kept_positions(const fl_onnx_values *cond, int64_t extent,
			       int64_t *m, fl_error *err)
{
	int64_t n = cond->n < extent ? cond->n : extent;
	int64_t *pos = malloc((size_t)(n > 0 ? n : 1) * sizeof *pos);

	*m = 0;
	if (!pos) {
		fl_onnx_oom(err);
		return NULL;
	}
	for (int64_t i = 0; i < n; i++)
		if (cond->i ? cond->i[i] != 0 : cond->f[i] != 0)
			pos[(*m)++] = i;
	return pos;
}

static int map_compress(fl_onnx_ctx *c, fl_error *err)
{
	const fl_onnx_values *cond = fl_onnx_input_known(c, 1);
	const Onnx__AttributeProto *axis_attr = fl_onnx_attr(c, "axis");
	int x = fl_onnx_data_any(c, 0, err), axis = 0, ind, in[2];
	int64_t m, *pos;
	fl_attrs a = {0};
	fl_shape s;

	if (x < 0)
		return -1;
	if (!cond)
		return fl_onnx_cannot_model(c, err, "condition computed at run "
					    "time (the output's extent "
					    "depends on it)");
	if (cond->shape.rank != 1) {
		fl_error_set(err, "input 1: condition must be 1-D");
		return -1;
	}
	s = *shape_of(c, x);
	if (!axis_attr) {	/* the flattened input */
		s = fl_shape_make(1, (int64_t[]){fl_shape_numel(&s)});
		x = reshape(c, x, &s, TMP, err);
	} else if ((axis = norm_axis(fl_onnx_attr_int(c, "axis", 0), s.rank,
				     "axis", err)) < 0) {
		return -1;
	}
	if (x < 0 || !(pos = kept_positions(cond, s.dim[axis], &m, err)))
		return -1;
	if (m == 0) {
		free(pos);
		return fl_onnx_cannot_model(c, err, "a condition that keeps "
					    "nothing (an empty output)");
	}
	{
		fl_shape ps = fl_shape_make(1, &m);
		float *v = malloc((size_t)m * sizeof *v);

		for (int64_t i = 0; v && i < m; i++)
			v[i] = (float)pos[i];
		free(pos);
		if (!v)
			return fl_onnx_oom(err);
		ind = typed_const(c, "kept", &ps, v, FL_I64, err);
		free(v);
	}
	if (ind < 0)
		return -1;
	in[0] = x;
	in[1] = ind;
	if (fl_attrs_set_number(&a, "axis", axis) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return done(fl_onnx_emit_attrs(c, FL_OP_GATHER, in, 2, &a, OUT, err));
}

/* --- TopK --- */

/* Whether element j (dim a+1) comes before element i (dim a) in TopK's
 * order: strictly larger (smaller) or equal at a lower index.  A bool
 * [.., n, n, ..] tensor. */
static int topk_beats(fl_onnx_ctx *c, int xi, int xj, int a, int64_t n,
		      bool largest, fl_error *err)
{
	int rank = shape_of(c, xi)->rank;
	fl_shape ms = {.rank = rank};
	float *lower = calloc((size_t)(n * n), sizeof *lower);
	int mask, tie;

	if (!lower)
		return fl_onnx_oom(err);
	for (int d = 0; d < rank; d++)
		ms.dim[d] = d == a || d == a + 1 ? n : 1;
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < i; j++)
			lower[i * n + j] = 1;
	mask = typed_const(c, "lower", &ms, lower, FL_BOOL, err);
	free(lower);
	tie = bin(c, FL_OP_AND, bin(c, FL_OP_EQUAL, xj, xi, TMP, err), mask,
		  TMP, err);
	return bin(c, FL_OP_OR, bin(c, largest ? FL_OP_GREATER : FL_OP_LESS,
				    xj, xi, TMP, err), tie, TMP, err);
}

/* Output r of TopK from the selection sel [.., n, k, ..]: the sum over
 * dim a of where(sel, v, 0), reshaped to the output's shape. */
static int topk_pick(fl_onnx_ctx *c, int sel, int v, int a,
		     const fl_shape *os, int out, fl_error *err)
{
	int zero = v < 0 ? -1 : typed_scalar(c, 0, dtype_of(c, v), err);
	int64_t axes[1] = {a};
	int picked = where(c, sel, v, zero, TMP, err);

	picked = picked < 0 ? -1 : fl_onnx_emit_ints(c, FL_OP_REDUCE_SUM,
						    picked, "axes", axes, 1,
						    TMP, err);
	return reshape(c, picked, os, out, err);
}

static int map_top_k(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data_any(c, 0, err), a, xi, xj, count, sel;
	bool largest = fl_onnx_attr_int(c, "largest", 1) != 0;
	int64_t k, n, axes[1];
	fl_shape s, os;

	if (x < 0)
		return -1;
	s = *shape_of(c, x);
	if (dtype_of(c, x) == FL_BOOL) {
		fl_error_set(err, "input 0: TopK takes numbers, not bool");
		return -1;
	}
	if (s.rank < 1 || s.rank + 1 > FL_MAX_RANK) {
		fl_error_set(err, "input 0: rank %d (1 to %d)", s.rank,
			     FL_MAX_RANK - 1);
		return -1;
	}
	if ((a = norm_axis(fl_onnx_attr_int(c, "axis", -1), s.rank, "axis",
			   err)) < 0 ||
	    extent_of(c, 1, 0, a, s.rank, &k, err) < 0)
		return -1;
	n = s.dim[a];
	if (k < 1 || k > n) {
		fl_error_set(err, "input 1: k = %lld outside [1, %lld]",
			     (long long)k, (long long)n);
		return -1;
	}
	if (n > MAX_TOPK_EXTENT)
		return fl_onnx_cannot_model(c, err, "an axis of %lld elements "
					    "(TopK ranks up to %d)",
					    (long long)n, MAX_TOPK_EXTENT);
	/* element i along dim a, element j along dim a + 1 */
	{
		fl_shape si = insert_one(&s, a + 1), sj = insert_one(&s, a);

		xi = reshape(c, x, &si, TMP, err);
		xj = reshape(c, x, &sj, TMP, err);
	}
	count = cast(c, topk_beats(c, xi, xj, a, n, largest, err), FL_F32,
		     TMP, err);
	axes[0] = a + 1;
	count = count < 0 ? -1 : fl_onnx_emit_ints(c, FL_OP_REDUCE_SUM, count,
						   "axes", axes, 1, TMP, err);
	sel = bin(c, FL_OP_EQUAL, count, count < 0 ? -1 : arange_along(
			c, "ranks", k, a + 1, s.rank + 1, FL_F32, err),
		  TMP, err);
	os = s;
	os.dim[a] = k;
	if (topk_pick(c, sel, xi, a, &os, OUT, err) < 0)
		return -1;
	if (!output_wanted(c, 1))
		return 0;
	return done(topk_pick(c, sel, arange_along(c, "positions", n, a,
						   s.rank + 1, FL_I64, err),
			      a, &os, 1, err));
}

/* --- ReverseSequence --- */

/* Row of x [d0 * d1, rest] that output row (p0, p1) reads, as an int64
 * [d0, d1] tensor: time t < len_b ? len_b - 1 - t : t, with
 * (t, b) = (p0, p1) when time_axis is 0, else (p1, p0). */
static int reversed_rows(fl_onnx_ctx *c, int lens, const fl_shape *s,
			 int time_axis, fl_error *err)
{
	int batch_axis = 1 - time_axis;
	int64_t stride[2] = {s->dim[1], 1};
	fl_shape ls = {.rank = 2, .dim = {1, 1}};
	int t, b, one, src, row;

	ls.dim[batch_axis] = s->dim[batch_axis];
	t = arange_along(c, "time", s->dim[time_axis], time_axis, 2, FL_I64,
			 err);
	b = t < 0 ? -1 : arange_along(c, "batch", s->dim[batch_axis],
				      batch_axis, 2, FL_I64, err);
	lens = reshape(c, cast(c, lens, FL_I64, TMP, err), &ls, TMP, err);
	one = b < 0 ? -1 : typed_scalar(c, 1, FL_I64, err);
	src = where(c, bin(c, FL_OP_LESS, t, lens, TMP, err),
		    bin(c, FL_OP_SUB, bin(c, FL_OP_SUB, lens, one, TMP, err),
			t, TMP, err), t, TMP, err);
	/* row = src * stride[time_axis] + b * stride[batch_axis] */
	row = bin(c, FL_OP_MUL, src, src < 0 ? -1 : typed_scalar(
			c, (float)stride[time_axis], FL_I64, err), TMP, err);
	return bin(c, FL_OP_ADD, row, bin(c, FL_OP_MUL, b, row < 0 ? -1 :
			typed_scalar(c, (float)stride[batch_axis], FL_I64,
				     err), TMP, err), TMP, err);
}

static int map_reverse_sequence(fl_onnx_ctx *c, fl_error *err)
{
	int64_t time_axis = fl_onnx_attr_int(c, "time_axis", 0);
	int64_t batch_axis = fl_onnx_attr_int(c, "batch_axis", 1), rest;
	int x = fl_onnx_data_any(c, 0, err), lens, rows, in[2];
	fl_shape s, flat, fr;
	fl_attrs a = {0};

	if (x < 0 || (lens = fl_onnx_data_any(c, 1, err)) < 0)
		return -1;
	s = *shape_of(c, x);
	if ((time_axis != 0 && time_axis != 1) || batch_axis != 1 - time_axis) {
		fl_error_set(err, "attributes time_axis %lld, batch_axis %lld "
			     "(0 and 1, or 1 and 0)", (long long)time_axis,
			     (long long)batch_axis);
		return -1;
	}
	if (s.rank < 2) {
		fl_error_set(err, "input 0: rank %d (at least 2)", s.rank);
		return -1;
	}
	if (fl_shape_numel(shape_of(c, lens)) != s.dim[batch_axis] ||
	    dtype_of(c, lens) == FL_BOOL) {
		fl_error_set(err, "input 1: sequence_lens must hold %lld "
			     "integers", (long long)s.dim[batch_axis]);
		return -1;
	}
	rest = 1;
	for (int d = 2; d < s.rank; d++)
		rest *= s.dim[d];
	flat = fl_shape_make(2, (int64_t[]){s.dim[0] * s.dim[1], rest});
	fr = fl_shape_make(1, (int64_t[]){s.dim[0] * s.dim[1]});
	rows = reshape(c, reversed_rows(c, lens, &s, (int)time_axis, err), &fr,
		       TMP, err);
	in[0] = reshape(c, x, &flat, TMP, err);
	in[1] = rows;
	if (in[0] < 0 || rows < 0)
		return -1;
	if (fl_attrs_set_number(&a, "axis", 0) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return done(reshape(c, fl_onnx_emit_attrs(c, FL_OP_GATHER, in, 2, &a,
						  TMP, err), &s, OUT, err));
}

/* --- the table --- */

static const struct {
	const char *op_type;
	fl_onnx_map_fn map;
} mappings[] = {
	{"IsNaN", map_is_nan_inf}, {"IsInf", map_is_nan_inf},
	{"CastLike", map_cast_like}, {"OneHot", map_one_hot},
	{"Compress", map_compress}, {"TopK", map_top_k},
	{"ReverseSequence", map_reverse_sequence},
};

fl_onnx_map_fn fl_onnx_mapping_index(const char *op_type)
{
	for (size_t k = 0; k < sizeof mappings / sizeof mappings[0]; k++)
		if (!strcmp(mappings[k].op_type, op_type))
			return mappings[k].map;
	return fl_onnx_mapping_linalg(op_type);
}
