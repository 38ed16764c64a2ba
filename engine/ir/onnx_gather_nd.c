/* ONNX import of GatherND whose indices are known at import (the
 * constant indices PyTorch's exporter writes into every transformer's
 * attention mask), built from fuselab's typed data movement ops, so it
 * works on float, integer and bool data alike.
 *
 * GatherND(data [d_0..d_{r-1}], indices [i_0..i_{q-2}, k], batch_dims b)
 * reads, for each index tuple, the slice data[batch..., tuple...] of
 * shape [d_{b+k}..d_{r-1}]; the output is [i_0..i_{q-2}, d_{b+k}..].
 * Here: data reshaped to [B * P, R] (B the batch dims' product, P the
 * indexed dims', R the rest's), each tuple turned at import into one
 * row number, batch * P + the tuple's row-major offset (negative
 * components count from the end), an int64 constant of M = i_0 * ... *
 * i_{q-2} rows; `gather` along axis 0 gives [M, R], reshaped to the
 * output's shape.
 *
 * Indices known only at run time: not modelled (fl_onnx_cannot_model),
 * the node stays an opaque custom op.  An index out of range, or
 * indices whose shape does not fit the data's, is an error. */
#include "onnx_import_impl.h"

#include <stdio.h>
#include <stdlib.h>

/* An int64 const tensor [n] holding rows (taken over). */
static int rows_tensor(fl_onnx_ctx *c, int64_t *rows, int64_t n,
		       fl_error *err)
{
	char base[300], name[300];
	fl_shape s = fl_shape_make(1, &n);
	fl_tensor *t;
	int k;

	snprintf(base, sizeof base, "%s.rows", c->origin);
	fl_onnx_unique_name(c, name, sizeof name, base, true);
	k = fl_graph_add_tensor(c->g, name, &s, FL_ROLE_CONST, err);
	if (k < 0) {
		free(rows);
		return -1;
	}
	t = &c->g->tensors[k];
	t->dtype = FL_I64;
	t->n_data = n;
	t->ints = rows;
	return k;
}

/* The row of data [B * P, R] that index tuple idx (k components) of
 * batch entry `batch` reads, batch * P + the tuple's offset (Horner's
 * rule from batch); -1 with err set when a component is out of
 * range. */
static int64_t tuple_row(const fl_shape *ds, int b, int k, int64_t batch,
			 const int64_t *idx, fl_error *err)
{
	int64_t row = batch;

	for (int j = 0; j < k; j++) {
		int64_t ext = ds->dim[b + j], v = idx[j];

		if (v < -ext || v >= ext) {
			fl_error_set(err, "index %lld outside [-%lld, %lld) "
				     "for data dim %d", (long long)v,
				     (long long)ext, (long long)ext, b + j);
			return -1;
		}
		row = row * ext + (v < 0 ? v + ext : v);
	}
	return row;
}

int fl_onnx_map_gather_nd(fl_onnx_ctx *c, fl_error *err)
{
	const fl_onnx_values *iv;
	int64_t b = fl_onnx_attr_int(c, "batch_dims", 0), k, m = 1, rest = 1;
	int64_t *rows;
	fl_shape ds, is, flat, out;
	int x, ind, g, in[2];
	fl_attrs a = {0};

	if ((x = fl_onnx_data(c, 0, err)) < 0)
		return -1;
	ds = c->g->tensors[x].shape;
	iv = fl_onnx_input_known(c, 1);
	if (!iv) {
		fl_onnx_want_known(c, 1);
		return fl_onnx_cannot_model(c, err, "indices computed at run "
					    "time");
	}
	if (!iv->i) {
		fl_error_set(err, "input 1: indices must be integers");
		return -1;
	}
	is = iv->shape;
	if (is.rank < 1) {
		fl_error_set(err, "input 1: indices must have rank >= 1");
		return -1;
	}
	k = is.dim[is.rank - 1];
	if (b < 0 || b >= is.rank || b >= ds.rank) {
		fl_error_set(err, "attribute batch_dims: %lld (0 up to the "
			     "smaller rank less 1)", (long long)b);
		return -1;
	}
	if (k < 1 || b + k > ds.rank) {
		fl_error_set(err, "input 1: index tuples of %lld components "
			     "for data of rank %d and %lld batch dims",
			     (long long)k, ds.rank, (long long)b);
		return -1;
	}
	for (int d = 0; d < b; d++)
		if (is.dim[d] != ds.dim[d]) {
			fl_error_set(err, "input 1: batch dim %d is %lld, the "
				     "data's %lld", d, (long long)is.dim[d],
				     (long long)ds.dim[d]);
			return -1;
		}
	out.rank = is.rank - 1 + ds.rank - (int)(b + k);
	if (out.rank > FL_MAX_RANK) {
		fl_error_set(err, "output rank %d exceeds %d", out.rank,
			     FL_MAX_RANK);
		return -1;
	}
	for (int d = 0; d < is.rank - 1; d++) {
		out.dim[d] = is.dim[d];
		m *= is.dim[d];
	}
	for (int d = (int)(b + k); d < ds.rank; d++) {
		out.dim[is.rank - 1 + d - (int)(b + k)] = ds.dim[d];
		rest *= ds.dim[d];
	}
	/* M index tuples; each batch entry owns m / B consecutive ones */
	rows = malloc((size_t)(m > 0 ? m : 1) * sizeof *rows);
	if (!rows)
		return fl_onnx_oom(err);
	{
		int64_t n_batch = 1, tuples_per_batch;

		for (int d = 0; d < b; d++)
			n_batch *= ds.dim[d];
		tuples_per_batch = m / n_batch;
		for (int64_t t = 0; t < m; t++) {
			int64_t batch = t / tuples_per_batch;

			rows[t] = tuple_row(&ds, (int)b, (int)k, batch,
					    iv->i + t * k, err);
			if (rows[t] < 0) {
				free(rows);
				return -1;
			}
		}
	}
	flat = fl_shape_make(2, (int64_t[]){ds.rank ? fl_shape_numel(&ds) /
					    rest : 1, rest});
	if ((ind = rows_tensor(c, rows, m, err)) < 0 ||
	    (in[0] = fl_onnx_reshape(c, x, &flat, -1, err)) < 0)
		return -1;
	in[1] = ind;
	if (fl_attrs_set_number(&a, "axis", 0) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	g = fl_onnx_emit(c, FL_OP_GATHER, in, 2, &a, -1, err);
	fl_attrs_free(&a);
	if (g < 0)
		return -1;
	return fl_onnx_reshape(c, g, &out, 0, err) < 0 ? -1 : 0;
}
