/* The polyhedral description of every primitive op (DESIGN 1.2 step 3,
 * 1.3 step 1; ISL_GUIDE 1).
 *
 * Each op becomes a short list of statements "S<op>_<k>" over the concrete
 * extents of the validated graph.  Domains and accesses are written as isl
 * text (readable, and what a user sees when the TUI prints them) and parsed
 * with isl; every access is intersected with its statement's domain.
 * Iterators are named i0, i1, ... in every statement; the index
 * expressions below are built over those names.
 *
 *   unary, binary, where, broadcast_to   COMPUTE over the output space;
 *                                        inputs read with numpy broadcasting
 *   reduce_sum/max/min                   INIT over the output space, UPDATE
 *                                        over the input space (main)
 *   matmul, conv2d, pool2d               INIT, UPDATE over the loop nest
 *                                        (main), avg pool also FINALIZE
 *   transpose, reshape, slice            COMPUTE over the output space
 *   concat                               one COPY per input (main -1)
 *   pad                                  FILL of the whole output, then a
 *                                        COPY of the input into the
 *                                        interior (main -1: neither
 *                                        statement alone is the op's flow)
 *   gather                               COMPUTE with a may-read of the
 *                                        whole gathered axis of the data
 *
 * Ownership: every isl object made here ends up owned by the fl_poly_op
 * (freed by fl_poly_op_free); helpers say what they take and give. */
#include "poly.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/map.h>
#include <isl/set.h>

#define TEXT_MAX 4096
#define MAX_ITERS (FL_MAX_RANK + 3)	/* conv2d: out rank 4 + c, r, s */

/* A bounded text buffer for generated isl strings; `full` records
 * truncation so that it is reported instead of parsed. */
typedef struct text {
	char s[TEXT_MAX];
	size_t n;
	bool full;
} text;

/* Everything one description needs while it is being built. */
typedef struct builder {
	isl_ctx *ctx;
	const fl_graph *g;
	const fl_op *op;
	fl_poly_op *p;
	int cap;
	fl_error *err;
} builder;

static void text_add(text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void text_add(text *t, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (t->full)
		return;
	va_start(ap, fmt);
	k = vsnprintf(t->s + t->n, TEXT_MAX - t->n, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= TEXT_MAX - t->n)
		t->full = true;
	else
		t->n += (size_t)k;
}

static void text_init(text *t)
{
	t->s[0] = '\0';
	t->n = 0;
	t->full = false;
}

/* Appends ", " before every item but the first of a list. */
static void text_sep(text *t, int j)
{
	if (j > 0)
		text_add(t, ", ");
}

const char *fl_poly_array_name(int t, char *buf, size_t n)
{
	snprintf(buf, n, "T%d", t);
	return buf;
}

static const fl_shape *in_shape(const builder *b, int k)
{
	return &b->g->tensors[b->op->in[k]].shape;
}

static const fl_shape *out_shape(const builder *b)
{
	return &b->g->tensors[b->op->out[0]].shape;
}

/* ---- statements and accesses -------------------------------------- */

static void stmt_clear(fl_poly_stmt *s)
{
	for (int r = 0; r < s->n_reads; r++)
		isl_map_free(s->reads[r].access);
	free(s->reads);
	isl_set_free(s->domain);
	isl_map_free(s->write);
	free(s->name);
}

void fl_poly_op_free(fl_poly_op *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n_stmts; i++)
		stmt_clear(&p->stmts[i]);
	free(p->stmts);
	free(p);
}

/* Reports an isl parse failure of generated text (a bug, not user input). */
static void isl_failed(builder *b, const char *what, const text *t)
{
	const char *msg = isl_ctx_last_error_msg(b->ctx);

	fl_error_set(b->err, "op \"%s\": isl could not build the %s \"%s\"%s%s",
		     b->op->name, what, t->s, msg ? ": " : "", msg ? msg : "");
}

/* "S3_1[i0, i1, i2]" into t. */
static void text_tuple(text *t, const fl_poly_stmt *s, int n_iter)
{
	text_add(t, "%s[", s->name);
	for (int j = 0; j < n_iter; j++) {
		text_sep(t, j);
		text_add(t, "i%d", j);
	}
	text_add(t, "]");
}

/* Appends a statement over the box 0 <= i_j < ext[j]; returns it or NULL. */
static fl_poly_stmt *add_stmt(builder *b, fl_stmt_role role, int input,
			      int n_iter, const int64_t *ext)
{
	fl_poly_stmt *s = &b->p->stmts[b->p->n_stmts];
	char name[64];
	text t;

	snprintf(name, sizeof name, "S%d_%d", b->p->op, b->p->n_stmts);
	memset(s, 0, sizeof *s);
	s->name = strdup(name);
	if (!s->name) {
		fl_error_set(b->err, "out of memory");
		return NULL;
	}
	b->p->n_stmts++;
	s->role = role;
	s->input = input;
	text_init(&t);
	text_add(&t, "{ ");
	text_tuple(&t, s, n_iter);
	for (int j = 0; j < n_iter; j++)
		text_add(&t, "%s0 <= i%d < %" PRId64, j ? " and " : " : ", j,
			 ext[j]);
	text_add(&t, " }");
	s->domain = t.full ? NULL : isl_set_read_from_str(b->ctx, t.s);
	if (!s->domain) {
		isl_failed(b, "domain", &t);
		return NULL;
	}
	return s;
}

/* Parses "{ S[i..] -> T<tensor>[idx] : cond }" and restricts it to the
 * statement's domain.  __isl_give, NULL on error (reported). */
static isl_map *make_access(builder *b, const fl_poly_stmt *s, int tensor,
			    const char *idx, const char *cond)
{
	isl_size n_iter = isl_set_dim(s->domain, isl_dim_set);
	char arr[32];
	isl_map *m;
	text t;

	text_init(&t);
	text_add(&t, "{ ");
	text_tuple(&t, s, n_iter);
	text_add(&t, " -> %s[%s]",
		 fl_poly_array_name(tensor, arr, sizeof arr), idx);
	if (cond && *cond)
		text_add(&t, " : %s", cond);
	text_add(&t, " }");
	m = t.full ? NULL : isl_map_read_from_str(b->ctx, t.s);
	if (!m) {
		isl_failed(b, "access", &t);
		return NULL;
	}
	return isl_map_intersect_domain(m, isl_set_copy(s->domain));
}

static int set_write(builder *b, fl_poly_stmt *s, const char *idx)
{
	s->write = make_access(b, s, b->op->out[0], idx, NULL);
	return s->write ? 0 : -1;
}

/* Adds a read of op input `input` (-1: the op's own output) at idx under
 * cond; exact false marks a may-read. */
static int add_read(builder *b, fl_poly_stmt *s, int input, const char *idx,
		    const char *cond, bool exact)
{
	int tensor = input < 0 ? b->op->out[0] : b->op->in[input];
	fl_poly_read *r;
	fl_poly_read *grown;

	grown = realloc(s->reads, (size_t)(s->n_reads + 1) * sizeof *grown);
	if (!grown) {
		fl_error_set(b->err, "out of memory");
		return -1;
	}
	s->reads = grown;
	r = &s->reads[s->n_reads];
	r->input = input;
	r->exact = exact;
	r->access = make_access(b, s, tensor, idx, cond);
	if (!r->access)
		return -1;
	s->n_reads++;
	return 0;
}

/* "i<off>, i<off+1>, ..." for n iterators into t. */
static void text_iters(text *t, int off, int n)
{
	for (int j = 0; j < n; j++) {
		text_sep(t, j);
		text_add(t, "i%d", off + j);
	}
}

/* Index of a tensor of shape `from` read at the broadcast index
 * i<off>..i<off+n_to-1> (numpy rule: right-aligned, extent 1 reads 0,
 * missing leading dims dropped); n_to is the rank broadcast to. */
static void text_broadcast_idx(text *t, const fl_shape *from, int off,
			       int n_to)
{
	for (int j = 0; j < from->rank; j++) {
		text_sep(t, j);
		if (from->dim[j] == 1)
			text_add(t, "0");
		else
			text_add(t, "i%d", off + j + n_to - from->rank);
	}
}

/* ---- per-op builders ---------------------------------------------- */

/* Unary, binary, where, broadcast_to: out[i] = f(in_k[bcast(i)]...). */
static int build_elementwise(builder *b)
{
	const fl_shape *so = out_shape(b);
	fl_poly_stmt *s = add_stmt(b, FL_STMT_COMPUTE, -1, so->rank, so->dim);
	text idx;

	if (!s)
		return -1;
	b->p->main_stmt = 0;
	for (int k = 0; k < b->op->n_in; k++) {
		text_init(&idx);
		text_broadcast_idx(&idx, in_shape(b, k), 0, so->rank);
		if (add_read(b, s, k, idx.s, NULL, true) < 0)
			return -1;
	}
	text_init(&idx);
	text_iters(&idx, 0, so->rank);
	return set_write(b, s, idx.s);
}

/* The output index of a reduction for the input index i: kept dims
 * follow i, reduced dims (extent 1 in the output) are 0. */
static void text_reduced_idx(text *t, const fl_shape *so)
{
	for (int j = 0; j < so->rank; j++) {
		text_sep(t, j);
		if (so->dim[j] == 1)
			text_add(t, "0");
		else
			text_add(t, "i%d", j);
	}
}

/* INIT out[o] = identity; UPDATE out[r(i)] = out[r(i)] (+) in[i]. */
static int build_reduce(builder *b)
{
	const fl_shape *si = in_shape(b, 0), *so = out_shape(b);
	fl_poly_stmt *s;
	text idx;

	if (si->rank != so->rank) {
		fl_error_set(b->err, "op \"%s\": reduction changes the rank",
			     b->op->name);
		return -1;
	}
	s = add_stmt(b, FL_STMT_INIT, -1, so->rank, so->dim);
	text_init(&idx);
	text_iters(&idx, 0, so->rank);
	if (!s || set_write(b, s, idx.s) < 0)
		return -1;
	s = add_stmt(b, FL_STMT_UPDATE, -1, si->rank, si->dim);
	if (!s)
		return -1;
	b->p->main_stmt = 1;
	text_init(&idx);
	text_iters(&idx, 0, si->rank);
	if (add_read(b, s, 0, idx.s, NULL, true) < 0)
		return -1;
	text_init(&idx);
	text_reduced_idx(&idx, so);
	if (add_read(b, s, -1, idx.s, NULL, true) < 0)
		return -1;
	return set_write(b, s, idx.s);
}

/* An INIT statement over the whole output (reductions, matmul, conv,
 * pooling): out[i] = identity. */
static int add_init(builder *b)
{
	const fl_shape *so = out_shape(b);
	fl_poly_stmt *s = add_stmt(b, FL_STMT_INIT, -1, so->rank, so->dim);
	text idx;

	if (!s)
		return -1;
	text_init(&idx);
	text_iters(&idx, 0, so->rank);
	return set_write(b, s, idx.s);
}

/* An UPDATE statement over ext[0..n-1] whose first out-rank iterators
 * index the output, which it reads and writes; returns it or NULL. */
static fl_poly_stmt *add_update(builder *b, int n, const int64_t *ext)
{
	const fl_shape *so = out_shape(b);
	fl_poly_stmt *s = add_stmt(b, FL_STMT_UPDATE, -1, n, ext);
	text idx;

	if (!s)
		return NULL;
	b->p->main_stmt = b->p->n_stmts - 1;
	text_init(&idx);
	text_iters(&idx, 0, so->rank);
	if (add_read(b, s, -1, idx.s, NULL, true) < 0 ||
	    set_write(b, s, idx.s) < 0)
		return NULL;
	return s;
}

/* Matmul operand index: broadcast batch dims, then the two matrix
 * iterators in stored order (swapped when transposed). */
static void text_matmul_idx(text *t, const fl_shape *sx, int nb, int row,
			    int col, bool transposed)
{
	fl_shape batch = *sx;

	batch.rank = sx->rank - 2;
	text_broadcast_idx(t, &batch, 0, nb);
	text_sep(t, batch.rank);
	if (transposed)
		text_add(t, "i%d, i%d", col, row);
	else
		text_add(t, "i%d, i%d", row, col);
}

/* C[b.., i, j] += A[b.., i, k] * B[b.., k, j] over [b.., i, j, k]. */
static int build_matmul(builder *b)
{
	const fl_shape *sa = in_shape(b, 0), *sb = in_shape(b, 1);
	const fl_shape *so = out_shape(b);
	int nb = so->rank - 2;
	int64_t ext[MAX_ITERS];
	bool ta, tb;
	fl_poly_stmt *s;
	text idx;

	if (fl_attr_bool(&b->op->attrs, "transpose_a", false, &ta, b->err) < 0 ||
	    fl_attr_bool(&b->op->attrs, "transpose_b", false, &tb, b->err) < 0)
		return -1;
	memcpy(ext, so->dim, (size_t)so->rank * sizeof *ext);
	ext[so->rank] = sa->dim[sa->rank - (ta ? 2 : 1)];
	if (add_init(b) < 0 || !(s = add_update(b, so->rank + 1, ext)))
		return -1;
	text_init(&idx);
	text_matmul_idx(&idx, sa, nb, nb, nb + 2, ta);
	if (add_read(b, s, 0, idx.s, NULL, true) < 0)
		return -1;
	text_init(&idx);
	text_matmul_idx(&idx, sb, nb, nb + 2, nb + 1, tb);
	return add_read(b, s, 1, idx.s, NULL, true);
}

/* Reads an integer list attribute of exactly n values (default dflt when
 * absent, dflt may be NULL when the attribute is required). */
static int attr_pair(builder *b, const char *key, const int64_t *dflt,
		     int64_t *v, int n)
{
	int got;

	if (fl_attr_ints(&b->op->attrs, key, v, n, &got, b->err) < 0)
		return -1;
	if (got < 0 && dflt) {
		memcpy(v, dflt, (size_t)n * sizeof *v);
		return 0;
	}
	if (got != n) {
		fl_error_set(b->err, "op \"%s\": attrs.%s: expected %d values",
			     b->op->name, key, n);
		return -1;
	}
	return 0;
}

/* out[n,k,h,w] += x[n, g*C/G + c, sh*h + dh*r, sw*w + dw*s] * w[k,c,r,s]
 * over [n,k,h,w,c,r,s], g = k / (K/G). */
static int build_conv2d(builder *b)
{
	const fl_shape *sw = in_shape(b, 1), *so = out_shape(b);
	static const int64_t ones[2] = {1, 1};
	int64_t st[2], dil[2], groups, ext[7];
	fl_poly_stmt *s;
	text idx;

	if (attr_pair(b, "stride", ones, st, 2) < 0 ||
	    attr_pair(b, "dilation", ones, dil, 2) < 0 ||
	    fl_attr_int(&b->op->attrs, "groups", 1, &groups, b->err) < 0)
		return -1;
	memcpy(ext, so->dim, 4 * sizeof *ext);
	memcpy(ext + 4, sw->dim + 1, 3 * sizeof *ext);
	if (add_init(b) < 0 || !(s = add_update(b, 7, ext)))
		return -1;
	text_init(&idx);
	text_add(&idx, "i0, ");
	if (groups > 1)
		text_add(&idx, "%" PRId64 "*floor(i1/%" PRId64 ") + ",
			 sw->dim[1], sw->dim[0] / groups);
	text_add(&idx, "i4, %" PRId64 "*i2 + %" PRId64 "*i5, %" PRId64
		 "*i3 + %" PRId64 "*i6", st[0], dil[0], st[1], dil[1]);
	if (add_read(b, s, 0, idx.s, NULL, true) < 0)
		return -1;
	return add_read(b, s, 1, "i1, i4, i5, i6", NULL, true);
}

/* INIT, UPDATE out[n,c,h,w] (+)= x[n, c, sh*h + r, sw*w + s] over
 * [n,c,h,w,r,s]; avg pooling then FINALIZE out[..] = out[..] / (kh*kw). */
static int build_pool2d(builder *b)
{
	const fl_shape *so = out_shape(b);
	int64_t kern[2], st[2], ext[6];
	const char *mode;
	fl_poly_stmt *s;
	text idx;

	if (attr_pair(b, "kernel", NULL, kern, 2) < 0 ||
	    attr_pair(b, "stride", kern, st, 2) < 0 ||
	    fl_attr_string(&b->op->attrs, "mode", "max", &mode, b->err) < 0)
		return -1;
	memcpy(ext, so->dim, 4 * sizeof *ext);
	memcpy(ext + 4, kern, 2 * sizeof *ext);
	if (add_init(b) < 0 || !(s = add_update(b, 6, ext)))
		return -1;
	text_init(&idx);
	text_add(&idx, "i0, i1, %" PRId64 "*i2 + i4, %" PRId64 "*i3 + i5",
		 st[0], st[1]);
	if (add_read(b, s, 0, idx.s, NULL, true) < 0)
		return -1;
	if (strcmp(mode, "avg") != 0)
		return 0;
	s = add_stmt(b, FL_STMT_FINALIZE, -1, so->rank, so->dim);
	if (!s || add_read(b, s, -1, "i0, i1, i2, i3", NULL, true) < 0)
		return -1;
	return set_write(b, s, "i0, i1, i2, i3");
}

/* One COMPUTE statement over the output space reading input 0 at idx
 * under cond (exact). */
static int build_gather_like(builder *b, const char *idx, const char *cond)
{
	const fl_shape *so = out_shape(b);
	fl_poly_stmt *s = add_stmt(b, FL_STMT_COMPUTE, -1, so->rank, so->dim);
	text w;

	if (!s)
		return -1;
	b->p->main_stmt = 0;
	text_init(&w);
	text_iters(&w, 0, so->rank);
	if (add_read(b, s, 0, idx, cond, true) < 0)
		return -1;
	return set_write(b, s, w.s);
}

/* out[i] = x[j] with j[perm[d]] = i[d]. */
static int build_transpose(builder *b)
{
	int rank = in_shape(b, 0)->rank, src[FL_MAX_RANK];
	int64_t perm[FL_MAX_RANK];
	int n;
	text idx;

	if (fl_attr_ints(&b->op->attrs, "perm", perm, FL_MAX_RANK, &n,
			 b->err) < 0)
		return -1;
	if (n != rank) {
		fl_error_set(b->err, "op \"%s\": attrs.perm: expected %d values",
			     b->op->name, rank);
		return -1;
	}
	for (int d = 0; d < rank; d++) {
		if (perm[d] < 0 || perm[d] >= rank) {
			fl_error_set(b->err, "op \"%s\": attrs.perm: %" PRId64
				     " out of range", b->op->name, perm[d]);
			return -1;
		}
		src[perm[d]] = d;
	}
	text_init(&idx);
	for (int j = 0; j < rank; j++) {
		text_sep(&idx, j);
		text_add(&idx, "i%d", src[j]);
	}
	return build_gather_like(b, idx.s, NULL);
}

/* "s0*v0 + s1*v1 + ..." (row-major linear index of variables v) into t;
 * "0" for rank 0. */
static void text_linear(text *t, const fl_shape *s, char v)
{
	int64_t strides[FL_MAX_RANK];

	fl_shape_strides(s, strides);
	if (s->rank == 0)
		text_add(t, "0");
	for (int j = 0; j < s->rank; j++)
		text_add(t, "%s%" PRId64 "*%c%d", j ? " + " : "", strides[j],
			 v, j);
}

/* out[i] = x[a] where linear(a) = linear(i): quasi-affine through the
 * existential quotients that isl introduces. */
static int build_reshape(builder *b)
{
	const fl_shape *si = in_shape(b, 0), *so = out_shape(b);
	text idx, cond;

	text_init(&idx);
	text_init(&cond);
	for (int j = 0; j < si->rank; j++) {
		text_sep(&idx, j);
		text_add(&idx, "a%d", j);
		text_add(&cond, "0 <= a%d < %" PRId64 " and ", j, si->dim[j]);
	}
	text_linear(&cond, si, 'a');
	text_add(&cond, " = ");
	text_linear(&cond, so, 'i');
	return build_gather_like(b, idx.s, cond.s);
}

/* A slice start counted from the end when negative, clamped to the
 * extent (the same rule as shape inference). */
static int64_t slice_start(int64_t v, int64_t extent)
{
	if (v < 0)
		v += extent;
	if (v < 0)
		v = 0;
	if (v > extent - 1)
		v = extent - 1;
	return v;
}

/* out[i] = x[start + step * i] per dim. */
static int build_slice(builder *b)
{
	const fl_shape *si = in_shape(b, 0);
	int64_t starts[FL_MAX_RANK], steps[FL_MAX_RANK];
	int ns, nt;
	text idx;

	if (fl_attr_ints(&b->op->attrs, "starts", starts, FL_MAX_RANK, &ns,
			 b->err) < 0 ||
	    fl_attr_ints(&b->op->attrs, "steps", steps, FL_MAX_RANK, &nt,
			 b->err) < 0)
		return -1;
	text_init(&idx);
	for (int j = 0; j < si->rank; j++) {
		int64_t st = j < ns ? slice_start(starts[j], si->dim[j]) : 0;
		int64_t sp = j < nt ? steps[j] : 1;

		text_sep(&idx, j);
		text_add(&idx, "%" PRId64 " + %" PRId64 "*i%d", st, sp, j);
	}
	return build_gather_like(b, idx.s, NULL);
}

/* A COPY of input k (over its own space) into the output at offset
 * off[d] per dim. */
static int add_copy(builder *b, int k, const int64_t *off)
{
	const fl_shape *si = in_shape(b, k);
	fl_poly_stmt *s = add_stmt(b, FL_STMT_COPY, k, si->rank, si->dim);
	text idx;

	if (!s)
		return -1;
	text_init(&idx);
	text_iters(&idx, 0, si->rank);
	if (add_read(b, s, k, idx.s, NULL, true) < 0)
		return -1;
	text_init(&idx);
	for (int j = 0; j < si->rank; j++) {
		text_sep(&idx, j);
		if (off[j])
			text_add(&idx, "i%d + %" PRId64, j, off[j]);
		else
			text_add(&idx, "i%d", j);
	}
	return set_write(b, s, idx.s);
}

/* COPY k writes input k at the running offset along the axis. */
static int build_concat(builder *b)
{
	int rank = out_shape(b)->rank, axis;
	int64_t a, off[FL_MAX_RANK] = {0};

	if (fl_attr_int(&b->op->attrs, "axis", 0, &a, b->err) < 0)
		return -1;
	axis = fl_axis_normalize(a, rank);
	if (axis < 0) {
		fl_error_set(b->err, "op \"%s\": attrs.axis: out of range",
			     b->op->name);
		return -1;
	}
	for (int k = 0; k < b->op->n_in; k++) {
		if (add_copy(b, k, off) < 0)
			return -1;
		off[axis] += in_shape(b, k)->dim[axis];
	}
	return 0;
}

/* FILL out[i] = value everywhere, then COPY x into the interior. */
static int build_pad(builder *b)
{
	const fl_shape *so = out_shape(b);
	int rank = so->rank, n;
	int64_t pads[2 * FL_MAX_RANK];
	fl_poly_stmt *s;
	text idx;

	if (fl_attr_ints(&b->op->attrs, "pads", pads, 2 * FL_MAX_RANK, &n,
			 b->err) < 0)
		return -1;
	if (n != 2 * rank) {
		fl_error_set(b->err, "op \"%s\": attrs.pads: expected %d values",
			     b->op->name, 2 * rank);
		return -1;
	}
	s = add_stmt(b, FL_STMT_FILL, -1, rank, so->dim);
	text_init(&idx);
	text_iters(&idx, 0, rank);
	if (!s || set_write(b, s, idx.s) < 0)
		return -1;
	return add_copy(b, 0, pads);
}

/* out[i] = x[.., idx[i_a..], ..]: a may-read of the whole axis of x and an
 * exact read of the index tensor. */
static int build_gather(builder *b)
{
	const fl_shape *sx = in_shape(b, 0), *sq = in_shape(b, 1);
	const fl_shape *so = out_shape(b);
	int64_t a;
	int axis;
	fl_poly_stmt *s;
	text idx, cond;

	if (fl_attr_int(&b->op->attrs, "axis", 0, &a, b->err) < 0)
		return -1;
	axis = fl_axis_normalize(a, sx->rank);
	if (axis < 0) {
		fl_error_set(b->err, "op \"%s\": attrs.axis: out of range",
			     b->op->name);
		return -1;
	}
	s = add_stmt(b, FL_STMT_COMPUTE, -1, so->rank, so->dim);
	if (!s)
		return -1;
	b->p->main_stmt = 0;
	text_init(&idx);
	text_iters(&idx, 0, axis);
	text_sep(&idx, axis);
	text_add(&idx, "t");
	for (int j = axis + 1; j < sx->rank; j++)
		text_add(&idx, ", i%d", j - 1 + sq->rank);
	text_init(&cond);
	text_add(&cond, "0 <= t < %" PRId64, sx->dim[axis]);
	if (add_read(b, s, 0, idx.s, cond.s, false) < 0)
		return -1;
	text_init(&idx);
	text_iters(&idx, axis, sq->rank);
	if (add_read(b, s, 1, idx.s, NULL, true) < 0)
		return -1;
	text_init(&idx);
	text_iters(&idx, 0, so->rank);
	return set_write(b, s, idx.s);
}

/* ---- entry points ------------------------------------------------- */

/* The builder for op kind k, or an error for ops with no description. */
static int build(builder *b)
{
	const fl_op_info *info = fl_op_info_of(b->op->kind);

	if (info->cls == FL_CLASS_COMPOUND) {
		fl_error_set(b->err, "op \"%s\": compound ops have no polyhedral "
			     "description (open them first)", b->op->name);
		return -1;
	}
	switch (b->op->kind) {
	case FL_OP_REDUCE_SUM: case FL_OP_REDUCE_MAX: case FL_OP_REDUCE_MIN:
		return build_reduce(b);
	case FL_OP_MATMUL: return build_matmul(b);
	case FL_OP_CONV2D: return build_conv2d(b);
	case FL_OP_POOL2D: return build_pool2d(b);
	case FL_OP_TRANSPOSE: return build_transpose(b);
	case FL_OP_RESHAPE: return build_reshape(b);
	case FL_OP_CONCAT: return build_concat(b);
	case FL_OP_SLICE: return build_slice(b);
	case FL_OP_PAD: return build_pad(b);
	case FL_OP_GATHER: return build_gather(b);
	case FL_OP_CUSTOM:
		fl_error_set(b->err, "op \"%s\": custom op cannot be modelled",
			     b->op->name);
		return -1;
	case FL_OP_BROADCAST_TO: return build_elementwise(b);
	default:
		break;
	}
	if (info->cls == FL_CLASS_UNARY || info->cls == FL_CLASS_BINARY)
		return build_elementwise(b);	/* includes where */
	fl_error_set(b->err, "op \"%s\": %s has no polyhedral description",
		     b->op->name, info->name);
	return -1;
}

fl_poly_op *fl_poly_describe(isl_ctx *ctx, const fl_graph *g, int op,
			     fl_error *err)
{
	builder b = {ctx, g, NULL, NULL, 0, err};

	if (op < 0 || op >= g->n_ops || !fl_op_info_of(g->ops[op].kind)) {
		fl_error_set(err, "op %d: no such op", op);
		return NULL;
	}
	b.op = &g->ops[op];
	b.cap = b.op->n_in + 3;
	b.p = calloc(1, sizeof *b.p);
	if (b.p)
		b.p->stmts = calloc((size_t)b.cap, sizeof *b.p->stmts);
	if (!b.p || !b.p->stmts) {
		fl_poly_op_free(b.p);
		fl_error_set(err, "out of memory");
		return NULL;
	}
	b.p->op = op;
	b.p->main_stmt = -1;
	if (build(&b) < 0) {
		fl_poly_op_free(b.p);
		return NULL;
	}
	return b.p;
}

/* reverse(read) . write of one read: T_in -> T_out.  __isl_give. */
static isl_map *read_flow(const fl_poly_stmt *s, const fl_poly_read *r)
{
	return isl_map_apply_range(isl_map_reverse(isl_map_copy(r->access)),
				   isl_map_copy(s->write));
}

isl_map *fl_poly_dataflow(const fl_poly_op *p, int k)
{
	isl_map *f = NULL;

	for (int i = 0; i < p->n_stmts; i++) {
		const fl_poly_stmt *s = &p->stmts[i];

		for (int r = 0; r < s->n_reads; r++) {
			isl_map *m;

			if (s->reads[r].input != k)
				continue;
			m = read_flow(s, &s->reads[r]);
			f = f ? isl_map_union(f, m) : m;
		}
	}
	return f ? isl_map_coalesce(f) : NULL;
}
