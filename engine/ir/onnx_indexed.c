/* ONNX import of indexing by indices computed at run time: GatherElements,
 * ScatterElements, Scatter (its deprecated name), ScatterND, and GatherND
 * whose indices are not known at import (onnx_gather_nd.c maps known
 * ones and hands the rest here).
 *
 * Contract.  GatherElements and ScatterElements/Scatter are fuselab's
 * gather_elements and scatter_elements (ops.h; "axis", and "reduction"
 * none|add|mul|max|min), on any element type.  The ND forms become
 * those two over the data viewed as [B, P, R] (GatherND: the batch dims'
 * product B, the indexed dims' P, the rest's R) or [P, R] (ScatterND):
 * each index tuple (k components, a negative one counting from the end)
 * turns in the graph into its row-major row number among the P --
 * where(idx < 0, idx + dims, idx) * strides, summed over the tuple --
 * broadcast over the R elements of its slice.  Index semantics are
 * fuselab's: an index still out of range after counting from the end is
 * clamped (ONNX calls it an error), so a bad index never reads or writes
 * outside a tensor.  With reduction none, duplicate indices leave the
 * last update in row-major order (ONNX leaves it undefined; its
 * reference does the same).  Bad shapes or attributes are errors that
 * name the problem; nothing here is opaque. */
#include "onnx_import_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT 0		/* emit into the node's output 0 */
#define TMP (-1)	/* emit into a new intermediate */

static const fl_shape *shape_of(const fl_onnx_ctx *c, int t)
{
	return &c->g->tensors[t].shape;
}

/* An int64 const tensor [n] holding v[0..n-1] (copied), named after the
 * node and `what`. */
static int i64_const(fl_onnx_ctx *c, const char *what, const int64_t *v,
		     int64_t n, fl_error *err)
{
	char base[300], name[300];
	fl_shape s = fl_shape_make(1, &n);
	int64_t *data = malloc((size_t)n * sizeof *data);
	int k;

	if (!data)
		return fl_onnx_oom(err);
	memcpy(data, v, (size_t)n * sizeof *data);
	snprintf(base, sizeof base, "%s.%s", c->origin, what);
	fl_onnx_unique_name(c, name, sizeof name, base, true);
	k = fl_graph_add_tensor(c->g, name, &s, FL_ROLE_CONST, err);
	if (k < 0) {
		free(data);
		return -1;
	}
	c->g->tensors[k].dtype = FL_I64;
	c->g->tensors[k].n_data = n;
	c->g->tensors[k].ints = data;
	return k;
}

/* The node's "reduction" (default none), checked; into r. */
static int reduction_attr(fl_onnx_ctx *c, char *r, size_t n, fl_error *err)
{
	static const char *const known[] = {"none", "add", "mul", "max", "min"};

	const char *v = fl_onnx_attr_string(c, "reduction", "none", r, n);

	if (v != r)	/* the default */
		snprintf(r, n, "%s", v);
	for (size_t k = 0; k < sizeof known / sizeof *known; k++)
		if (!strcmp(r, known[k]))
			return 0;
	fl_error_set(err, "attribute reduction: \"%s\" (none, add, mul, max "
		     "or min)", r);
	return -1;
}

/* op (gather_elements or scatter_elements) over in[0..n-1] along axis,
 * with the reduction when given, into out. */
static int emit_indexed(fl_onnx_ctx *c, fl_op_kind kind, const int *in,
			int n, int axis, const char *reduction, int out,
			fl_error *err)
{
	fl_attrs a = {0};

	if (fl_attrs_set_number(&a, "axis", axis) < 0 ||
	    (reduction && fl_attrs_set_string(&a, "reduction", reduction) < 0)) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, kind, in, n, &a, out, err);
}

/* The node's "axis" for data x, normalised. */
static int axis_attr(fl_onnx_ctx *c, int x, int *axis, fl_error *err)
{
	int64_t a = fl_onnx_attr_int(c, "axis", 0);

	*axis = fl_axis_normalize(a, shape_of(c, x)->rank);
	if (*axis < 0) {
		fl_error_set(err, "attribute axis: %lld out of range for rank "
			     "%d", (long long)a, shape_of(c, x)->rank);
		return -1;
	}
	return 0;
}

static int map_gather_elements(fl_onnx_ctx *c, fl_error *err)
{
	int in[2], axis;

	if ((in[0] = fl_onnx_data(c, 0, err)) < 0 ||
	    (in[1] = fl_onnx_data_any(c, 1, err)) < 0 ||
	    axis_attr(c, in[0], &axis, err) < 0)
		return -1;
	return emit_indexed(c, FL_OP_GATHER_ELEMENTS, in, 2, axis, NULL, OUT,
			    err) < 0 ? -1 : 0;
}

/* ScatterElements and Scatter (which has no reduction). */
static int map_scatter_elements(fl_onnx_ctx *c, fl_error *err)
{
	int in[3], axis;
	char red[16];

	if ((in[0] = fl_onnx_data(c, 0, err)) < 0 ||
	    (in[1] = fl_onnx_data_any(c, 1, err)) < 0 ||
	    (in[2] = fl_onnx_data(c, 2, err)) < 0 ||
	    axis_attr(c, in[0], &axis, err) < 0 ||
	    reduction_attr(c, red, sizeof red, err) < 0)
		return -1;
	return emit_indexed(c, FL_OP_SCATTER_ELEMENTS, in, 3, axis, red, OUT,
			    err) < 0 ? -1 : 0;
}

/* The row numbers of index tuples idx [.., k] (int64) among the dims
 * ds->dim[first..first+k-1]: [.., 1], each tuple's row-major offset
 * with negative components counted from the end. */
static int tuple_rows(fl_onnx_ctx *c, int idx, const fl_shape *ds, int first,
		      int k, fl_error *err)
{
	int64_t dims[FL_MAX_RANK], strides[FL_MAX_RANK], zero = 0, st = 1;
	int in[3], axis = shape_of(c, idx)->rank - 1, t;

	for (int j = k - 1; j >= 0; j--) {
		dims[j] = ds->dim[first + j];
		strides[j] = st;
		st *= dims[j];
	}
	in[2] = idx;
	if ((t = i64_const(c, "zero", &zero, 1, err)) < 0 ||
	    (in[0] = fl_onnx_emit2(c, FL_OP_LESS, idx, t, TMP, err)) < 0 ||
	    (t = i64_const(c, "dims", dims, k, err)) < 0 ||
	    (in[1] = fl_onnx_emit2(c, FL_OP_ADD, idx, t, TMP, err)) < 0 ||
	    (in[2] = fl_onnx_emit(c, FL_OP_WHERE, in, 3, NULL, TMP, err)) < 0 ||
	    (t = i64_const(c, "strides", strides, k, err)) < 0 ||
	    (t = fl_onnx_emit2(c, FL_OP_MUL, in[2], t, TMP, err)) < 0)
		return -1;
	return fl_onnx_emit_ints(c, FL_OP_REDUCE_SUM, t, "axes",
				 (int64_t[]){axis}, 1, TMP, err);
}

/* Index input k as an int64 tensor of rank >= 1 whose last dim, the
 * tuple length, is in [1, room]; into *idx and *k_len. */
static int index_tuples(fl_onnx_ctx *c, int k, int room, int *idx,
			int *k_len, fl_error *err)
{
	const fl_shape *is;
	fl_attrs a = {0};
	int t = fl_onnx_data_any(c, k, err);

	if (t < 0)
		return -1;
	if (!fl_dtype_is_int(c->g->tensors[t].dtype) ||
	    c->g->tensors[t].dtype == FL_BOOL) {
		fl_error_set(err, "input %d: indices must be integers", k);
		return -1;
	}
	is = shape_of(c, t);
	if (is->rank < 1 || is->dim[is->rank - 1] < 1 ||
	    is->dim[is->rank - 1] > room) {
		fl_error_set(err, "input %d: index tuples of %lld components "
			     "for %d indexable dims", k, is->rank
			     ? (long long)is->dim[is->rank - 1] : 0LL, room);
		return -1;
	}
	*k_len = (int)is->dim[is->rank - 1];
	if (c->g->tensors[t].dtype != FL_I64) {
		if (fl_attrs_set_string(&a, "dtype", "i64") < 0) {
			fl_attrs_free(&a);
			return fl_onnx_oom(err);
		}
		t = fl_onnx_emit_attrs(c, FL_OP_CAST, &t, 1, &a, TMP, err);
	}
	*idx = t;
	return t < 0 ? -1 : 0;
}

static int64_t dims_product(const fl_shape *s, int from, int to)
{
	int64_t n = 1;

	for (int d = from; d < to; d++)
		n *= s->dim[d];
	return n;
}

/* row numbers [.., 1] broadcast to [n, r] as an index for axis 0 or 1 of
 * a [.., n, r] view: reshaped to `lead` then broadcast to `to`. */
static int spread_rows(fl_onnx_ctx *c, int rows, const fl_shape *lead,
		       const fl_shape *to, fl_error *err)
{
	int t = fl_onnx_reshape(c, rows, lead, TMP, err);

	return fl_onnx_emit_ints(c, FL_OP_BROADCAST_TO, t, "shape", to->dim,
				 to->rank, TMP, err);
}

int fl_onnx_map_gather_nd_dynamic(fl_onnx_ctx *c, fl_error *err)
{
	int64_t b = fl_onnx_attr_int(c, "batch_dims", 0), nb, p, r, m;
	int x, idx, k, rows, in[2];
	fl_shape ds, is, out, view, lead, wide;

	if ((x = fl_onnx_data(c, 0, err)) < 0)
		return -1;
	ds = *shape_of(c, x);
	if (b < 0 || b >= ds.rank) {
		fl_error_set(err, "attribute batch_dims: %lld (0 up to the "
			     "data's rank less 1)", (long long)b);
		return -1;
	}
	if (index_tuples(c, 1, ds.rank - (int)b, &idx, &k, err) < 0)
		return -1;
	is = *shape_of(c, idx);
	if (b >= is.rank) {
		fl_error_set(err, "attribute batch_dims: %lld for indices of "
			     "rank %d", (long long)b, is.rank);
		return -1;
	}
	for (int d = 0; d < b; d++)
		if (is.dim[d] != ds.dim[d]) {
			fl_error_set(err, "input 1: batch dim %d is %lld, the "
				     "data's %lld", d, (long long)is.dim[d],
				     (long long)ds.dim[d]);
			return -1;
		}
	out.rank = is.rank - 1 + ds.rank - (int)b - k;
	if (out.rank > FL_MAX_RANK || out.rank < 1) {
		fl_error_set(err, "output rank %d outside 1..%d", out.rank,
			     FL_MAX_RANK);
		return -1;
	}
	memcpy(out.dim, is.dim, (size_t)(is.rank - 1) * sizeof *out.dim);
	memcpy(out.dim + is.rank - 1, ds.dim + b + k,
	       (size_t)(ds.rank - b - k) * sizeof *out.dim);
	nb = dims_product(&ds, 0, (int)b);
	p = dims_product(&ds, (int)b, (int)b + k);
	r = dims_product(&ds, (int)b + k, ds.rank);
	m = dims_product(&is, (int)b, is.rank - 1);
	view = fl_shape_make(3, (int64_t[]){nb, p, r});
	lead = fl_shape_make(3, (int64_t[]){nb, m, 1});
	wide = fl_shape_make(3, (int64_t[]){nb, m, r});
	rows = tuple_rows(c, idx, &ds, (int)b, k, err);
	in[0] = fl_onnx_reshape(c, x, &view, TMP, err);
	if (rows < 0 || in[0] < 0)
		return -1;
	in[1] = spread_rows(c, rows, &lead, &wide, err);
	if (in[1] < 0 ||
	    (x = emit_indexed(c, FL_OP_GATHER_ELEMENTS, in, 2, 1, NULL, TMP,
			      err)) < 0)
		return -1;
	return fl_onnx_reshape(c, x, &out, OUT, err) < 0 ? -1 : 0;
}

static int map_scatter_nd(fl_onnx_ctx *c, fl_error *err)
{
	int x, idx, upd, k, rows, in[3];
	int64_t p, r, q;
	fl_shape ds, is, us, view, uview, lead;
	char red[16];

	if ((x = fl_onnx_data(c, 0, err)) < 0 ||
	    (upd = fl_onnx_data(c, 2, err)) < 0 ||
	    reduction_attr(c, red, sizeof red, err) < 0)
		return -1;
	ds = *shape_of(c, x);
	if (index_tuples(c, 1, ds.rank, &idx, &k, err) < 0)
		return -1;
	is = *shape_of(c, idx);
	us = *shape_of(c, upd);
	p = dims_product(&ds, 0, k);
	r = dims_product(&ds, k, ds.rank);
	q = dims_product(&is, 0, is.rank - 1);
	if (us.rank != is.rank - 1 + ds.rank - k ||
	    fl_shape_numel(&us) != q * r) {
		fl_error_set(err, "input 2: updates must have the shape "
			     "indices[:-1] + data[%d:]", k);
		return -1;
	}
	view = fl_shape_make(2, (int64_t[]){p, r});
	uview = fl_shape_make(2, (int64_t[]){q, r});
	lead = fl_shape_make(2, (int64_t[]){q, 1});
	rows = tuple_rows(c, idx, &ds, 0, k, err);
	in[0] = fl_onnx_reshape(c, x, &view, TMP, err);
	in[2] = fl_onnx_reshape(c, upd, &uview, TMP, err);
	if (rows < 0 || in[0] < 0 || in[2] < 0)
		return -1;
	in[1] = spread_rows(c, rows, &lead, &uview, err);
	if (in[1] < 0 ||
	    (x = emit_indexed(c, FL_OP_SCATTER_ELEMENTS, in, 3, 0, red, TMP,
			      err)) < 0)
		return -1;
	return fl_onnx_reshape(c, x, &ds, OUT, err) < 0 ? -1 : 0;
}

static const struct {
	const char *op_type;
	fl_onnx_map_fn map;
} mappings[] = {
	{"GatherElements", map_gather_elements},
	{"ScatterElements", map_scatter_elements},
	{"Scatter", map_scatter_elements},
	{"ScatterND", map_scatter_nd},
};

fl_onnx_map_fn fl_onnx_mapping_indexed(const char *op_type)
{
	for (size_t k = 0; k < sizeof mappings / sizeof mappings[0]; k++)
		if (!strcmp(mappings[k].op_type, op_type))
			return mappings[k].map;
	return NULL;
}
