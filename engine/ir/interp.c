/* The reference interpreter (see interp.h).  Deliberately simple: every
 * tensor gets its own buffer, ops run one after another in the graph's
 * topological order through the op library's reference implementations,
 * and nothing is freed until the caller is done with the values (later
 * stages compare intermediate tensors too). */
#include "interp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "clock.h"
#include "rng.h"

void fl_interp_opts_default(fl_interp_opts *o)
{
	o->seed = FL_INTERP_DEFAULT_SEED;
	o->max_bytes = FL_INTERP_DEFAULT_MAX_BYTES;
	o->feeds = NULL;
	o->n_feeds = 0;
}

void fl_values_free(fl_values *v)
{
	if (!v)
		return;
	for (int i = 0; i < v->n; i++) {
		free(v->bufs[i].data);
		free(v->bufs[i].ints);
	}
	free(v->bufs);
	free(v->op_seconds);
	free(v);
}

/* Smallest extent that tensor t indexes as a gather (gather_elements,
 * scatter_elements) index, or 0 when none reads it as indices. */
static int64_t gather_extent(const fl_graph *g, int t)
{
	int64_t extent = 0;

	for (int i = 0; i < g->n_ops; i++) {
		const fl_op *op = &g->ops[i];
		const fl_shape *data;
		int64_t axis;
		int ax;

		if ((op->kind != FL_OP_GATHER &&
		     op->kind != FL_OP_GATHER_ELEMENTS &&
		     op->kind != FL_OP_SCATTER_ELEMENTS) ||
		    op->n_in < 2 || op->in[1] != t)
			continue;
		data = &g->tensors[op->in[0]].shape;
		if (fl_attr_int(&op->attrs, "axis", 0, &axis, NULL) < 0)
			continue;
		ax = fl_axis_normalize(axis, data->rank);
		if (ax < 0)
			continue;
		if (extent == 0 || data->dim[ax] < extent)
			extent = data->dim[ax];
	}
	return extent;
}

/* Deterministic integers for a typed input: indices in [0, extent) for
 * a gather's, 0/1 for bool, small values of both signs otherwise (the
 * type wraps them: u8 sees large ones too). */
static void fill_ints(const fl_tensor *x, int64_t extent, fl_rng *r,
		      fl_buf *buf)
{
	int64_t n = fl_shape_numel(&x->shape);

	for (int64_t i = 0; i < n; i++) {
		int64_t v = extent > 0 ? fl_rng_below(r, extent)
			    : x->dtype == FL_BOOL ? fl_rng_below(r, 2)
						  : fl_rng_below(r, 201) - 100;

		buf->ints[i] = fl_dtype_wrap(x->dtype, v);
	}
}

void fl_interp_fill_input(const fl_graph *g, int t, uint64_t seed,
			  fl_buf *buf)
{
	const fl_tensor *x = &g->tensors[t];
	int64_t n = fl_shape_numel(&x->shape), extent;
	fl_rng r = fl_rng_seed(seed, x->name);

	if (x->role == FL_ROLE_CONST) {
		for (int64_t i = 0; i < n; i++)
			if (buf->ints)
				buf->ints[i] = x->ints[x->n_data == 1 ? 0 : i];
			else
				buf->data[i] = x->data[x->n_data == 1 ? 0 : i];
		return;
	}
	extent = gather_extent(g, t);
	if (buf->ints) {
		fill_ints(x, extent, &r, buf);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		buf->data[i] = fl_dtype_round(x->dtype, extent > 0
			? (float)fl_rng_below(&r, extent) : fl_rng_uniform(&r));
}

int64_t fl_interp_bytes_needed(const fl_graph *g)
{
	int64_t total = 0;

	for (int t = 0; t < g->n_tensors; t++) {
		int64_t n = fl_shape_numel(&g->tensors[t].shape);

		if (n < 0 || n > INT64_MAX / 8 || total > INT64_MAX - 8 * n)
			return -1;
		total += (fl_dtype_is_int(g->tensors[t].dtype) ? 8 : 4) * n;
	}
	return total;
}

static int alloc_buf(const fl_graph *g, int t, fl_buf *b)
{
	int64_t n = fl_shape_numel(&g->tensors[t].shape);

	size_t cnt = (size_t)(n > 0 ? n : 1);

	*b = (fl_buf){.shape = g->tensors[t].shape,
		      .dtype = g->tensors[t].dtype};
	if (fl_dtype_is_int(b->dtype))
		b->ints = malloc(cnt * sizeof *b->ints);
	else
		b->data = malloc(cnt * sizeof *b->data);
	return b->data || b->ints ? 0 : -1;
}

/* Sizes in bytes and as people read them: a 1 MiB limit must not
 * read "0.0 GiB". */
static void limit_message(int64_t need, int64_t limit, fl_error *err)
{
	char a[32], b[32];

	fl_error_set(err, "the graph's tensors need %lld bytes (%s), more "
		     "than the interpreter's limit of %lld bytes (%s, "
		     "--max-memory)", (long long)need,
		     fl_format_bytes(need, a, sizeof a), (long long)limit,
		     fl_format_bytes(limit, b, sizeof b));
}

static int check_budget(const fl_graph *g, const fl_interp_opts *o,
			fl_error *err)
{
	int64_t need = fl_interp_bytes_needed(g);

	if (need < 0 || need > o->max_bytes) {
		if (need < 0)
			fl_error_set(err, "the graph's tensors need more memory "
				     "than a 64-bit count can express");
		else
			limit_message(need, o->max_bytes, err);
		return -1;
	}
	return 0;
}

static const fl_feed *feed_of(const fl_interp_opts *o, const char *name)
{
	for (int k = 0; k < o->n_feeds; k++)
		if (strcmp(o->feeds[k].name, name) == 0)
			return &o->feeds[k];
	return NULL;
}

/* The values input-like tensor t starts with: its feed, else the
 * deterministic generator's (consts: the file's). */
static int fill_start_value(const fl_graph *g, int t, const fl_interp_opts *o,
			    fl_buf *b, fl_error *err)
{
	const fl_tensor *x = &g->tensors[t];
	const fl_feed *f = x->role == FL_ROLE_CONST ? NULL
						     : feed_of(o, x->name);
	char want[128], got[128];

	if (!f) {
		fl_interp_fill_input(g, t, o->seed, b);
		return 0;
	}
	if (!fl_shape_equal(&f->buf.shape, &x->shape)) {
		fl_error_set(err, "input \"%s\": given values of shape %s where "
			     "the graph's tensor is %s",
			     fl_error_name(x->name),
			     fl_shape_format(&f->buf.shape, got, sizeof got),
			     fl_shape_format(&x->shape, want, sizeof want));
		return -1;
	}
	if (f->buf.dtype != x->dtype) {
		fl_error_set(err, "input \"%s\": given %s values where the "
			     "graph's tensor is %s", fl_error_name(x->name),
			     fl_dtype_name(f->buf.dtype),
			     fl_dtype_name(x->dtype));
		return -1;
	}
	if (b->ints)
		memcpy(b->ints, f->buf.ints,
		       (size_t)fl_shape_numel(&x->shape) * sizeof *b->ints);
	else
		for (int64_t i = 0; i < fl_shape_numel(&x->shape); i++)
			b->data[i] = fl_dtype_round(x->dtype, f->buf.data[i]);
	return 0;
}

/* Runs op i: gathers its input buffers, allocates outputs, evaluates. */
static int run_op(const fl_graph *g, int i, fl_values *v, fl_error *err)
{
	const fl_op *op = &g->ops[i];
	fl_buf in[64], out[8];
	double t0 = fl_now();

	for (int k = 0; k < op->n_in && k < 64; k++)
		in[k] = v->bufs[op->in[k]];
	for (int k = 0; k < op->n_out && k < 8; k++) {
		if (alloc_buf(g, op->out[k], &v->bufs[op->out[k]]) < 0) {
			fl_error_set(err, "out of memory running op \"%s\"",
				     op->name);
			return -1;
		}
		out[k] = v->bufs[op->out[k]];
	}
	fl_op_eval(op, in, out);
	v->op_seconds[i] = fl_now() - t0;
	return 0;
}

fl_values *fl_interp_run(const fl_graph *g, const fl_interp_opts *o,
			 fl_error *err)
{
	fl_interp_opts dflt;
	fl_values *v;

	if (!o) {
		fl_interp_opts_default(&dflt);
		o = &dflt;
	}
	if (fl_graph_check_computable(g, "interpret", err) < 0 ||
	    check_budget(g, o, err) < 0)
		return NULL;
	v = calloc(1, sizeof *v);
	if (!v)
		goto oom;
	v->n = g->n_tensors;
	v->n_ops = g->n_ops;
	v->bufs = calloc((size_t)g->n_tensors + 1, sizeof *v->bufs);
	v->op_seconds = calloc((size_t)g->n_ops + 1, sizeof *v->op_seconds);
	if (!v->bufs || !v->op_seconds)
		goto oom;
	for (int t = 0; t < g->n_tensors; t++) {
		const fl_tensor *x = &g->tensors[t];

		if (x->producer >= 0 || x->role == FL_ROLE_TEMP ||
		    x->role == FL_ROLE_OUTPUT)
			continue;
		if (alloc_buf(g, t, &v->bufs[t]) < 0)
			goto oom;
		if (fill_start_value(g, t, o, &v->bufs[t], err) < 0) {
			fl_values_free(v);
			return NULL;
		}
	}
	for (int i = 0; i < g->n_ops; i++)
		if (run_op(g, i, v, err) < 0) {
			fl_values_free(v);
			return NULL;
		}
	return v;
oom:
	fl_error_set(err, "out of memory in the interpreter");
	fl_values_free(v);
	return NULL;
}

/* The checksum of exact values: their sums and the hash of their
 * 64-bit forms. */
static fl_checksum int_checksum(const fl_buf *b, int64_t n, fl_checksum c)
{
	for (int64_t i = 0; i < n; i++) {
		uint64_t bits = (uint64_t)b->ints[i];

		for (int k = 0; k < 8; k++) {
			c.hash ^= (bits >> (8 * k)) & 0xff;
			c.hash *= 1099511628211ull;
		}
		c.sum += (double)b->ints[i];
		c.abs_sum += fabs((double)b->ints[i]);
	}
	return c;
}

fl_checksum fl_buf_checksum(const fl_buf *b)
{
	fl_checksum c;
	int64_t n = fl_shape_numel(&b->shape);

	memset(&c, 0, sizeof c);
	c.hash = 1469598103934665603ull;
	if (b->ints)
		return int_checksum(b, n, c);
	for (int64_t i = 0; i < n; i++) {
		float f = b->data[i];
		uint32_t bits;

		memcpy(&bits, &f, sizeof bits);
		for (int k = 0; k < 4; k++) {
			c.hash ^= (bits >> (8 * k)) & 0xff;
			c.hash *= 1099511628211ull;
		}
		if (isnan(f)) {
			c.n_nan++;
			continue;
		}
		c.sum += f;
		c.abs_sum += fabs(f);
	}
	return c;
}
