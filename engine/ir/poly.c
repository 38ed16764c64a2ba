/* The polyhedral description of every primitive op (DESIGN 1.2 step 3,
 * 1.3 step 1; ISL_GUIDE 1).
 *
 * Each op becomes a short list of statements "S<op>_<k>" over the concrete
 * extents of the validated graph.  Domains are boxes; accesses are
 * quasi-affine functions (isl_multi_aff) of the statement iterators i0,
 * i1, ..., each intersected with its statement's domain.  They are built
 * with isl's constructors rather than parsed from text: parsing costs
 * 20-80 us per object, building 2-5 us, and partition describes every op.
 * The comments show each access in isl notation.
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
 *   gather_elements                      likewise, over idx's space
 *   scatter_elements                     COPY of the data, then SCATTER
 *                                        over idx's space: a may-write
 *                                        (and, with a reduction, a
 *                                        may-read) of the whole axis of
 *                                        the output (main -1).  The
 *                                        SCATTER instances that may hit
 *                                        one element differ only in the
 *                                        axis coordinate, so layer 1's
 *                                        dependences chain them along it
 *                                        in order: that loop is never
 *                                        parallel, the others are
 *
 * Ownership: every isl object made here ends up owned by the fl_poly_op
 * (freed by fl_poly_op_free); helpers say what they take and give.  isl
 * propagates NULL through its constructors (consuming every __isl_take
 * argument), so builders check once, at the end of each object. */
#include "poly.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/val.h>

#define MAX_ITERS (FL_MAX_RANK + 3)	/* conv2d: out rank 4 + c, r, s */

/* Everything one description needs while it is being built. */
typedef struct builder {
	isl_ctx *ctx;
	const fl_graph *g;
	const fl_op *op;
	fl_poly_op *p;
	fl_error *err;
} builder;

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

/* Reports that isl could not build `what` (out of memory, or a bug). */
static int report_isl_failure(builder *b, const char *what)
{
	const char *msg = isl_ctx_last_error_msg(b->ctx);

	fl_error_set(b->err, "op \"%s\": isl could not build the %s%s%s",
		     b->op->name, what, msg ? ": " : "", msg ? msg : "");
	return -1;
}

static isl_val *val(isl_ctx *ctx, int64_t v)
{
	return isl_val_int_from_si(ctx, (long)v);
}

/* The space of a named n-dimensional tuple.  __isl_give. */
static isl_space *tuple_space(isl_ctx *ctx, const char *name, int n)
{
	isl_space *sp = isl_space_set_alloc(ctx, 0, (unsigned)n);

	return isl_space_set_tuple_name(sp, isl_dim_set, name);
}

/* { name[i0..] : 0 <= i_j < ext[j] }.  __isl_give. */
static isl_set *box(isl_ctx *ctx, const char *name, int n, const int64_t *ext)
{
	isl_set *s = isl_set_universe(tuple_space(ctx, name, n));

	for (int j = 0; j < n; j++) {
		s = isl_set_lower_bound_si(s, isl_dim_set, (unsigned)j, 0);
		s = isl_set_upper_bound_val(s, isl_dim_set, (unsigned)j,
					    val(ctx, ext[j] - 1));
	}
	return s;
}

/* Appends a statement over the box 0 <= i_j < ext[j]; returns it or NULL. */
static fl_poly_stmt *add_stmt(builder *b, fl_stmt_role role, int input,
			      int n_iter, const int64_t *ext)
{
	fl_poly_stmt *s = &b->p->stmts[b->p->n_stmts];
	char name[64];

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
	s->domain = box(b->ctx, name, n_iter, ext);
	if (!s->domain) {
		report_isl_failure(b, "domain");
		return NULL;
	}
	return s;
}

/* a + mul * i_j.  __isl_give. */
static isl_aff *add_term(__isl_take isl_aff *a, int j, int64_t mul)
{
	isl_ctx *ctx = isl_aff_get_ctx(a);

	return isl_aff_add_coefficient_val(a, isl_dim_in, j, val(ctx, mul));
}

/* The subscript mul * i_j + cst on the statement's domain (j < 0: just
 * the constant).  __isl_give. */
static isl_aff *sub(const fl_poly_stmt *s, int j, int64_t mul, int64_t cst)
{
	isl_ctx *ctx = isl_set_get_ctx(s->domain);
	isl_aff *a = isl_aff_zero_on_domain_space(isl_set_get_space(s->domain));

	if (j >= 0)
		a = add_term(a, j, mul);
	if (cst)
		a = isl_aff_add_constant_val(a, val(ctx, cst));
	return a;
}

/* The plain subscript i_j.  __isl_give. */
static isl_aff *iter(const fl_poly_stmt *s, int j)
{
	return sub(s, j, 1, 0);
}

/* Subscripts i<off>, ..., i<off+n-1> into subs. */
static void iters(const fl_poly_stmt *s, int off, int n, isl_aff **subs)
{
	for (int j = 0; j < n; j++)
		subs[j] = iter(s, off + j);
}

/* { S[i..] -> T<tensor>[subs] } restricted to the statement's domain;
 * takes subs[0..n-1].  __isl_give. */
static isl_map *make_access(const fl_poly_stmt *s, int tensor,
			    __isl_take isl_aff **subs, int n)
{
	isl_ctx *ctx = isl_set_get_ctx(s->domain);
	char arr[32];
	isl_space *sp;
	isl_multi_aff *ma;

	fl_poly_array_name(tensor, arr, sizeof arr);
	sp = isl_space_map_from_domain_and_range(
		isl_set_get_space(s->domain), tuple_space(ctx, arr, n));
	ma = isl_multi_aff_zero(sp);
	for (int j = 0; j < n; j++)
		ma = isl_multi_aff_set_aff(ma, j, subs[j]);
	return isl_map_intersect_domain(isl_map_from_multi_aff(ma),
					isl_set_copy(s->domain));
}

/* Sets the statement's write of the op output at subs (taken). */
static int set_write(builder *b, fl_poly_stmt *s, __isl_take isl_aff **subs)
{
	s->write = make_access(s, b->op->out[0], subs, out_shape(b)->rank);
	return s->write ? 0 : report_isl_failure(b, "write access");
}

/* Adds the read `m` (taken) of op input `input` (-1: the op's own output);
 * exact false marks a may-read. */
static int add_read_map(builder *b, fl_poly_stmt *s, int input,
			__isl_take isl_map *m, bool exact)
{
	fl_poly_read *grown;

	if (!m)
		return report_isl_failure(b, "read access");
	grown = realloc(s->reads, (size_t)(s->n_reads + 1) * sizeof *grown);
	if (!grown) {
		isl_map_free(m);
		fl_error_set(b->err, "out of memory");
		return -1;
	}
	s->reads = grown;
	s->reads[s->n_reads++] = (fl_poly_read){input, m, exact};
	return 0;
}

/* Adds an exact read of input `input` (-1: the output) at subs (taken). */
static int add_read(builder *b, fl_poly_stmt *s, int input,
		    __isl_take isl_aff **subs)
{
	int tensor = input < 0 ? b->op->out[0] : b->op->in[input];
	int rank = b->g->tensors[tensor].shape.rank;

	return add_read_map(b, s, input, make_access(s, tensor, subs, rank),
			    true);
}

/* Subscripts of a tensor of shape `from` read at the broadcast index
 * i<off>..i<off+n_to-1> (numpy rule: right-aligned, extent 1 reads 0,
 * missing leading dims dropped); n_to is the rank broadcast to. */
static void broadcast_subs(const fl_poly_stmt *s, const fl_shape *from,
			   int off, int n_to, isl_aff **subs)
{
	int shift = n_to - from->rank;

	for (int j = 0; j < from->rank; j++)
		subs[j] = from->dim[j] == 1 ? sub(s, -1, 0, 0)
					    : iter(s, off + j + shift);
}

/* ---- per-op builders ---------------------------------------------- */

/* Unary, binary, where, broadcast_to:
 * { S[i] -> out[i] }, { S[i] -> in_k[bcast_k(i)] }. */
static int build_elementwise(builder *b)
{
	const fl_shape *so = out_shape(b);
	fl_poly_stmt *s = add_stmt(b, FL_STMT_COMPUTE, -1, so->rank, so->dim);
	isl_aff *subs[MAX_ITERS];

	if (!s)
		return -1;
	b->p->main_stmt = 0;
	for (int k = 0; k < b->op->n_in; k++) {
		broadcast_subs(s, in_shape(b, k), 0, so->rank, subs);
		if (add_read(b, s, k, subs) < 0)
			return -1;
	}
	iters(s, 0, so->rank, subs);
	return set_write(b, s, subs);
}

/* An INIT statement over the whole output: { S[i] -> out[i] }. */
static int add_init(builder *b)
{
	const fl_shape *so = out_shape(b);
	fl_poly_stmt *s = add_stmt(b, FL_STMT_INIT, -1, so->rank, so->dim);
	isl_aff *subs[MAX_ITERS];

	if (!s)
		return -1;
	iters(s, 0, so->rank, subs);
	return set_write(b, s, subs);
}

/* Reduction: INIT, then UPDATE { S[i] -> in[i] }, { S[i] -> out[r(i)] }
 * read and written, where r keeps the dims of extent > 1 in the output
 * and puts 0 in the reduced ones (extent 1). */
static int build_reduce(builder *b)
{
	const fl_shape *si = in_shape(b, 0), *so = out_shape(b);
	isl_aff *subs[MAX_ITERS];
	fl_poly_stmt *s;

	if (si->rank != so->rank) {
		fl_error_set(b->err, "op \"%s\": reduction changes the rank",
			     b->op->name);
		return -1;
	}
	if (add_init(b) < 0 ||
	    !(s = add_stmt(b, FL_STMT_UPDATE, -1, si->rank, si->dim)))
		return -1;
	b->p->main_stmt = 1;
	iters(s, 0, si->rank, subs);
	if (add_read(b, s, 0, subs) < 0)
		return -1;
	broadcast_subs(s, so, 0, so->rank, subs);
	if (add_read(b, s, -1, subs) < 0)
		return -1;
	broadcast_subs(s, so, 0, so->rank, subs);
	return set_write(b, s, subs);
}

/* An UPDATE statement over ext[0..n-1] whose first out-rank iterators
 * index the output, which it reads and writes; returns it or NULL. */
static fl_poly_stmt *add_update(builder *b, int n, const int64_t *ext)
{
	int rank = out_shape(b)->rank;
	fl_poly_stmt *s = add_stmt(b, FL_STMT_UPDATE, -1, n, ext);
	isl_aff *subs[MAX_ITERS];

	if (!s)
		return NULL;
	b->p->main_stmt = b->p->n_stmts - 1;
	iters(s, 0, rank, subs);
	if (add_read(b, s, -1, subs) < 0)
		return NULL;
	iters(s, 0, rank, subs);
	return set_write(b, s, subs) < 0 ? NULL : s;
}

/* Matmul operand subscripts: broadcast batch dims, then the two matrix
 * iterators row, col in stored order (swapped when transposed). */
static void matmul_subs(const fl_poly_stmt *s, const fl_shape *sx, int nb,
			int row, int col, bool transposed, isl_aff **subs)
{
	fl_shape batch = *sx;

	batch.rank = sx->rank - 2;
	broadcast_subs(s, &batch, 0, nb, subs);
	subs[batch.rank] = iter(s, transposed ? col : row);
	subs[batch.rank + 1] = iter(s, transposed ? row : col);
}

/* { S[b.., i, j, k] -> A[b'.., i, k] }, { .. -> B[b''.., k, j] },
 * { .. -> C[b.., i, j] } over [b.., i, j, k]. */
static int build_matmul(builder *b)
{
	const fl_shape *sa = in_shape(b, 0), *so = out_shape(b);
	int nb = so->rank - 2;
	int64_t ext[MAX_ITERS];
	isl_aff *subs[MAX_ITERS];
	const fl_attrs *at = &b->op->attrs;
	bool ta, tb;
	fl_poly_stmt *s;

	if (fl_attr_bool(at, "transpose_a", false, &ta, b->err) < 0 ||
	    fl_attr_bool(at, "transpose_b", false, &tb, b->err) < 0)
		return -1;
	memcpy(ext, so->dim, (size_t)so->rank * sizeof *ext);
	ext[so->rank] = sa->dim[sa->rank - (ta ? 2 : 1)];
	if (add_init(b) < 0 || !(s = add_update(b, so->rank + 1, ext)))
		return -1;
	matmul_subs(s, sa, nb, nb, nb + 2, ta, subs);
	if (add_read(b, s, 0, subs) < 0)
		return -1;
	matmul_subs(s, in_shape(b, 1), nb, nb + 2, nb + 1, tb, subs);
	return add_read(b, s, 1, subs);
}

/* Reads an integer pair attribute (default dflt when absent; dflt NULL
 * when it is required). */
static int attr_pair(builder *b, const char *key, const int64_t *dflt,
		     int64_t *v)
{
	int got;

	if (fl_attr_ints(&b->op->attrs, key, v, 2, &got, b->err) < 0)
		return -1;
	if (got < 0 && dflt) {
		v[0] = dflt[0];
		v[1] = dflt[1];
		return 0;
	}
	if (got != 2) {
		fl_error_set(b->err, "op \"%s\": attrs.%s: expected 2 values",
			     b->op->name, key);
		return -1;
	}
	return 0;
}

/* The input channel of grouped conv: Cg * floor(k / Kg) + c, with k = i1
 * and c = i4 (just c when there is one group).  __isl_give. */
static isl_aff *conv_channel(const fl_poly_stmt *s, int64_t groups,
			     const fl_shape *sw)
{
	isl_ctx *ctx = isl_set_get_ctx(s->domain);
	isl_aff *g;

	if (groups <= 1)
		return iter(s, 4);
	g = isl_aff_scale_down_val(iter(s, 1), val(ctx, sw->dim[0] / groups));
	g = isl_aff_scale_val(isl_aff_floor(g), val(ctx, sw->dim[1]));
	return add_term(g, 4, 1);
}

/* Over [n,k,h,w,c,r,s]: { S -> x[n, ch(k,c), sh*h + dh*r, sw*w + dw*s] },
 * { S -> w[k, c, r, s] }, { S -> out[n, k, h, w] }. */
static int build_conv2d(builder *b)
{
	const fl_shape *sw = in_shape(b, 1), *so = out_shape(b);
	static const int64_t ones[2] = {1, 1};
	int64_t st[2], dil[2], groups, ext[7];
	isl_aff *subs[MAX_ITERS];
	fl_poly_stmt *s;

	if (attr_pair(b, "stride", ones, st) < 0 ||
	    attr_pair(b, "dilation", ones, dil) < 0 ||
	    fl_attr_int(&b->op->attrs, "groups", 1, &groups, b->err) < 0)
		return -1;
	memcpy(ext, so->dim, 4 * sizeof *ext);
	memcpy(ext + 4, sw->dim + 1, 3 * sizeof *ext);
	if (add_init(b) < 0 || !(s = add_update(b, 7, ext)))
		return -1;
	subs[0] = iter(s, 0);
	subs[1] = conv_channel(s, groups, sw);
	subs[2] = add_term(sub(s, 2, st[0], 0), 5, dil[0]);
	subs[3] = add_term(sub(s, 3, st[1], 0), 6, dil[1]);
	if (add_read(b, s, 0, subs) < 0)
		return -1;
	subs[0] = iter(s, 1);
	iters(s, 4, 3, subs + 1);
	return add_read(b, s, 1, subs);
}

/* Over [n,c,h,w,r,s]: { S -> x[n, c, sh*h + dh*r, sw*w + dw*s] } and the
 * output; avg pooling adds FINALIZE { S[i] -> out[i] } read and written. */
static int build_pool2d(builder *b)
{
	const fl_shape *so = out_shape(b);
	static const int64_t ones[2] = {1, 1};
	int64_t kern[2], st[2], dil[2], ext[6];
	isl_aff *subs[MAX_ITERS];
	const char *mode;
	fl_poly_stmt *s;

	if (attr_pair(b, "kernel", NULL, kern) < 0 ||
	    attr_pair(b, "stride", kern, st) < 0 ||
	    attr_pair(b, "dilation", ones, dil) < 0 ||
	    fl_attr_string(&b->op->attrs, "mode", "max", &mode, b->err) < 0)
		return -1;
	memcpy(ext, so->dim, 4 * sizeof *ext);
	memcpy(ext + 4, kern, 2 * sizeof *ext);
	if (add_init(b) < 0 || !(s = add_update(b, 6, ext)))
		return -1;
	iters(s, 0, 2, subs);
	subs[2] = add_term(sub(s, 2, st[0], 0), 4, dil[0]);
	subs[3] = add_term(sub(s, 3, st[1], 0), 5, dil[1]);
	if (add_read(b, s, 0, subs) < 0)
		return -1;
	if (strcmp(mode, "avg") != 0)
		return 0;
	if (!(s = add_stmt(b, FL_STMT_FINALIZE, -1, so->rank, so->dim)))
		return -1;
	iters(s, 0, 4, subs);
	if (add_read(b, s, -1, subs) < 0)
		return -1;
	iters(s, 0, 4, subs);
	return set_write(b, s, subs);
}

/* A COMPUTE statement over the output space { S[i] -> out[i] }; returns
 * it or NULL. */
static fl_poly_stmt *add_compute(builder *b)
{
	const fl_shape *so = out_shape(b);
	fl_poly_stmt *s = add_stmt(b, FL_STMT_COMPUTE, -1, so->rank, so->dim);
	isl_aff *subs[MAX_ITERS];

	if (!s)
		return NULL;
	b->p->main_stmt = 0;
	iters(s, 0, so->rank, subs);
	return set_write(b, s, subs) < 0 ? NULL : s;
}

/* Whether perm[0..n-1] is a permutation of 0..rank-1. */
static bool is_permutation(const int64_t *perm, int n, int rank)
{
	bool seen[FL_MAX_RANK] = {false};

	if (n != rank)
		return false;
	for (int d = 0; d < n; d++) {
		if (perm[d] < 0 || perm[d] >= rank || seen[perm[d]])
			return false;
		seen[perm[d]] = true;
	}
	return true;
}

/* { S[i] -> x[j] } with j[perm[d]] = i[d]. */
static int build_transpose(builder *b)
{
	int rank = in_shape(b, 0)->rank, n;
	int64_t perm[FL_MAX_RANK];
	isl_aff *subs[MAX_ITERS];
	fl_poly_stmt *s;

	if (fl_attr_ints(&b->op->attrs, "perm", perm, FL_MAX_RANK, &n,
			 b->err) < 0)
		return -1;
	if (!is_permutation(perm, n, rank)) {
		fl_error_set(b->err, "op \"%s\": attrs.perm: not a permutation "
			     "of 0..%d", b->op->name, rank - 1);
		return -1;
	}
	if (!(s = add_compute(b)))
		return -1;
	for (int d = 0; d < rank; d++)
		subs[perm[d]] = iter(s, d);
	return add_read(b, s, 0, subs);
}

/* { name[i..] -> [L] } with L the row-major linear index of i over
 * shape sh, on the space of `space` (taken).  __isl_give. */
static isl_map *linear_index(__isl_take isl_space *space, const fl_shape *sh)
{
	isl_ctx *ctx = isl_space_get_ctx(space);
	int64_t strides[FL_MAX_RANK];
	isl_aff *l = isl_aff_zero_on_domain_space(space);

	fl_shape_strides(sh, strides);
	for (int j = 0; j < sh->rank; j++)
		l = isl_aff_add_coefficient_val(l, isl_dim_in, j,
						val(ctx, strides[j]));
	return isl_map_from_aff(l);
}

/* { S[i] -> x[a] : L_x(a) = L_out(i) and a in x's box }: the same element
 * in row-major order.  Written as an equality of linear indices rather
 * than with floor/mod subscripts, which isl handles several times faster. */
static int build_reshape(builder *b)
{
	const fl_shape *si = in_shape(b, 0);
	fl_poly_stmt *s = add_compute(b);
	char arr[32];
	isl_map *to_l, *from_l;

	if (!s)
		return -1;
	fl_poly_array_name(b->op->in[0], arr, sizeof arr);
	to_l = linear_index(isl_set_get_space(s->domain), out_shape(b));
	from_l = linear_index(tuple_space(b->ctx, arr, si->rank), si);
	from_l = isl_map_intersect_domain(from_l,
					  box(b->ctx, arr, si->rank, si->dim));
	to_l = isl_map_apply_range(to_l, isl_map_reverse(from_l));
	return add_read_map(b, s, 0,
			    isl_map_intersect_domain(to_l,
						     isl_set_copy(s->domain)),
			    true);
}

/* { S[i] -> x[start + step * i] } per dim; starts are normalised as in
 * shape inference (negative counts from the end). */
static int build_slice(builder *b)
{
	const fl_shape *si = in_shape(b, 0);
	int64_t starts[FL_MAX_RANK], steps[FL_MAX_RANK];
	isl_aff *subs[MAX_ITERS];
	int ns, nt;
	fl_poly_stmt *s;

	if (fl_attr_ints(&b->op->attrs, "starts", starts, FL_MAX_RANK, &ns,
			 b->err) < 0 ||
	    fl_attr_ints(&b->op->attrs, "steps", steps, FL_MAX_RANK, &nt,
			 b->err) < 0 || !(s = add_compute(b)))
		return -1;
	for (int j = 0; j < si->rank; j++) {
		int64_t st = j < ns ? starts[j] : 0;

		if (st < 0)
			st += si->dim[j];
		subs[j] = sub(s, j, j < nt ? steps[j] : 1, st);
	}
	return add_read(b, s, 0, subs);
}

/* A COPY of input k over its own space:
 * { S[i] -> in_k[i] }, { S[i] -> out[i + off] }. */
static int add_copy(builder *b, int k, const int64_t *off)
{
	const fl_shape *si = in_shape(b, k);
	fl_poly_stmt *s = add_stmt(b, FL_STMT_COPY, k, si->rank, si->dim);
	isl_aff *subs[MAX_ITERS];

	if (!s)
		return -1;
	iters(s, 0, si->rank, subs);
	if (add_read(b, s, k, subs) < 0)
		return -1;
	for (int j = 0; j < si->rank; j++)
		subs[j] = sub(s, j, 1, off[j]);
	return set_write(b, s, subs);
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

/* FILL { S[i] -> out[i] } everywhere, then COPY x to out[i + lead]. */
static int build_pad(builder *b)
{
	const fl_shape *so = out_shape(b);
	int rank = so->rank, n;
	int64_t pads[2 * FL_MAX_RANK];
	isl_aff *subs[MAX_ITERS];
	fl_poly_stmt *s;

	if (fl_attr_ints(&b->op->attrs, "pads", pads, 2 * FL_MAX_RANK, &n,
			 b->err) < 0)
		return -1;
	if (n != 2 * rank) {
		fl_error_set(b->err, "op \"%s\": attrs.pads: expected %d "
			     "values", b->op->name, 2 * rank);
		return -1;
	}
	if (!(s = add_stmt(b, FL_STMT_FILL, -1, rank, so->dim)))
		return -1;
	iters(s, 0, rank, subs);
	if (set_write(b, s, subs) < 0)
		return -1;
	return add_copy(b, 0, pads);
}

/* The whole axis of tensor `tensor` (rank n) around statement s's
 * iterators: { S[i] -> T[i<off>.., t, ..] : 0 <= t < ext } with the
 * iterators from off on for the dims before the axis, from off + skip
 * on for those after it (skip: how many iterators the axis stands for
 * in s).  The access of a data-dependent index.  __isl_give. */
static isl_map *axis_region(builder *b, const fl_poly_stmt *s, int tensor,
			    int n, int axis, int skip, int64_t ext)
{
	isl_aff *subs[MAX_ITERS];
	char arr[32];
	isl_map *m;

	iters(s, 0, axis, subs);
	iters(s, axis + skip, n - 1 - axis, subs + axis);
	m = make_access(s, tensor, subs, n - 1);
	m = isl_map_insert_dims(m, isl_dim_out, (unsigned)axis, 1);
	m = isl_map_lower_bound_si(m, isl_dim_out, (unsigned)axis, 0);
	m = isl_map_upper_bound_val(m, isl_dim_out, (unsigned)axis,
				    val(b->ctx, ext - 1));
	return isl_map_set_tuple_name(m, isl_dim_out,
				      fl_poly_array_name(tensor, arr,
							 sizeof arr));
}

/* The may-read of gather's data: { S[i] -> x[i0.., t, ..] : 0 <= t < X },
 * the whole axis, since the index is data.  __isl_give. */
static isl_map *gather_data_read(builder *b, const fl_poly_stmt *s, int axis)
{
	const fl_shape *sx = in_shape(b, 0);

	return axis_region(b, s, b->op->in[0], sx->rank, axis,
			   in_shape(b, 1)->rank, sx->dim[axis]);
}

/* COMPUTE with a may-read of the data and an exact read
 * { S[i] -> idx[i_axis..] } of the index tensor. */
static int build_gather(builder *b)
{
	int rq = in_shape(b, 1)->rank, axis;
	isl_aff *subs[MAX_ITERS];
	fl_poly_stmt *s;
	int64_t a;

	if (fl_attr_int(&b->op->attrs, "axis", 0, &a, b->err) < 0)
		return -1;
	axis = fl_axis_normalize(a, in_shape(b, 0)->rank);
	if (axis < 0) {
		fl_error_set(b->err, "op \"%s\": attrs.axis: out of range",
			     b->op->name);
		return -1;
	}
	if (!(s = add_compute(b)) ||
	    add_read_map(b, s, 0, gather_data_read(b, s, axis), false) < 0)
		return -1;
	iters(s, axis, rq, subs);
	return add_read(b, s, 1, subs);
}

/* gather_elements: COMPUTE over idx's space (the output's) with the
 * may-read { S[i] -> x[i.., t, ..] } of the data's axis and the exact
 * read { S[i] -> idx[i] }. */
static int build_gather_elements(builder *b)
{
	const fl_shape *sx = in_shape(b, 0);
	isl_aff *subs[MAX_ITERS];
	fl_poly_stmt *s;
	int axis;

	if (fl_index_axis(b->op, sx->rank, &axis, b->err) < 0 ||
	    !(s = add_compute(b)) ||
	    add_read_map(b, s, 0, axis_region(b, s, b->op->in[0], sx->rank,
					      axis, 1, sx->dim[axis]),
			 false) < 0)
		return -1;
	iters(s, 0, sx->rank, subs);
	return add_read(b, s, 1, subs);
}

/* scatter_elements: COPY { S0[i] -> x[i] } into { S0[i] -> out[i] },
 * then SCATTER over idx's space reading idx[j] and upd[j] exactly, and
 * with a reduction the output's axis (a may-read), writing it (a
 * may-write { S1[j] -> out[j.., t, ..] }). */
static int build_scatter_elements(builder *b)
{
	const fl_shape *so = out_shape(b), *sq = in_shape(b, 1);
	static const int64_t zero[FL_MAX_RANK];
	isl_aff *subs[MAX_ITERS];
	fl_scatter_red red;
	fl_poly_stmt *s;
	int axis, out = b->op->out[0];

	if (fl_index_axis(b->op, so->rank, &axis, b->err) < 0 ||
	    fl_scatter_reduction(b->op, &red, b->err) < 0 ||
	    add_copy(b, 0, zero) < 0 ||
	    !(s = add_stmt(b, FL_STMT_SCATTER, -1, sq->rank, sq->dim)))
		return -1;
	for (int k = 1; k <= 2; k++) {
		iters(s, 0, sq->rank, subs);
		if (add_read(b, s, k, subs) < 0)
			return -1;
	}
	if (red != FL_SCATTER_NONE &&
	    add_read_map(b, s, -1, axis_region(b, s, out, so->rank, axis, 1,
					       so->dim[axis]), false) < 0)
		return -1;
	s->write = axis_region(b, s, out, so->rank, axis, 1, so->dim[axis]);
	return s->write ? 0 : report_isl_failure(b, "write access");
}

/* ---- entry points ------------------------------------------------- */

/* The builder for op kind k, or an error for ops with no description. */
static int build(builder *b)
{
	const fl_op_info *info = fl_op_info_of(b->op->kind);

	if (info->cls == FL_CLASS_COMPOUND) {
		fl_error_set(b->err, "op \"%s\": compound ops have no "
			     "polyhedral description (open them first)",
			     b->op->name);
		return -1;
	}
	switch (b->op->kind) {
	case FL_OP_REDUCE_SUM: case FL_OP_REDUCE_MAX: case FL_OP_REDUCE_MIN:
	case FL_OP_REDUCE_PROD:
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
	case FL_OP_GATHER_ELEMENTS: return build_gather_elements(b);
	case FL_OP_SCATTER_ELEMENTS: return build_scatter_elements(b);
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
	builder b = {ctx, g, NULL, NULL, err};

	isl_ctx_reset_error(ctx);	/* so that a failure reports its own */
	if (op < 0 || op >= g->n_ops || !fl_op_info_of(g->ops[op].kind)) {
		fl_error_set(err, "op %d: no such op", op);
		return NULL;
	}
	b.op = &g->ops[op];
	b.p = calloc(1, sizeof *b.p);
	if (b.p)	/* at most one statement per input, or three */
		b.p->stmts = calloc((size_t)b.op->n_in + 3, sizeof *b.p->stmts);
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

static isl_stat add_anon_range(__isl_take isl_map *m, void *user)
{
	isl_union_map **acc = user;

	m = isl_map_reset_tuple_id(m, isl_dim_out);
	*acc = isl_union_map_add_map(*acc, m);
	return *acc ? isl_stat_ok : isl_stat_error;
}

__isl_give isl_union_map *fl_poly_anon_range(__isl_take isl_union_map *u)
{
	isl_union_map *r = isl_union_map_empty(isl_union_map_get_space(u));

	if (isl_union_map_foreach_map(u, &add_anon_range, &r) < 0)
		r = isl_union_map_free(r);
	isl_union_map_free(u);
	return r;
}
