/* Contractions (matmul, batched matmul, conv2d) as register-blocked
 * micro-kernels in the C backend (DESIGN 1.6; issue: compute-bound code).
 *
 * Three steps, each called by the backend at its place:
 *
 *   1. fl_cg_split_contractions (on the kernel's schedule, before the AST
 *      is built): the band right below the tile band that holds a
 *      contraction's init and update statements is split by a sequence
 *      into the contraction itself, first, and the rest of the band (the
 *      fused epilogue: bias, GELU, residual, ... reading the finished
 *      tile), and the contraction's copy gets an isl mark "fl_contract".
 *      Moving the whole contraction of a tile before its epilogue is legal
 *      when nothing else in the band writes what the contraction reads;
 *      otherwise the band is left alone.
 *   2. fl_cg_contract_plan (while the AST is built, at that mark): the
 *      loops under the mark must be a chain of unit-stride for loops down
 *      to the update statement, with bounds that depend on the tile loops
 *      only (a box per tile), and the update's accesses affine in them.
 *      From the accesses, as functions of the schedule dimensions, come
 *      flat strides per loop for C, and for the two operands; one output
 *      loop becomes the micro-kernel's rows (the operand X that does not
 *      vary along the columns is broadcast), another its columns (the
 *      operand Y loaded as vectors), the loops C does not depend on are
 *      the reduction, any other output loop is looped around.  The plan
 *      hangs on the mark's for loop.
 *   2b. fl_cg_plan_epilogues (once the loops are decided): where the
 *      contraction's loop is followed in its block by the nest of its
 *      fused epilogue -- the same output points, bound for bound, every
 *      loop coincident (no dependence between points), elementwise
 *      statements that read the contraction's result only at the point
 *      the update writes -- the epilogue's statements join the plan and
 *      the nest prints nothing.  Anything else stays a loop nest over
 *      the finished tile, and the kernel's comment says why.
 *   3. fl_cg_print_contract (printing that loop): the tile's lower corner
 *      and extents, pointers to the corner elements, and calls of
 *      fl_contract_tile from the runtime (runtime/contract_rt.c: packing,
 *      K blocking, AVX-512/AVX2/plain C micro-kernel), which the unit
 *      includes once.  The init statement is subsumed: the first reduction
 *      block stores rather than adds.  With an epilogue, the kernel runs
 *      the last reduction block itself: fl_ctile_open adds up the earlier
 *      blocks in C, fl_ctile_block gives each finished register block
 *      (6 rows of 2 vectors) in a 64-byte-aligned staging block fl_r,
 *      and an "omp simd" loop over the block's points runs the epilogue's
 *      statements on it, reading the contraction's result from fl_r.
 *      Only what the epilogue writes is stored; the contraction's result
 *      too only when another statement reads it.
 *
 * A contraction that does not fit (a guarded update, bounds depending on
 * each other, non-affine accesses, no pair of loops where one operand is
 * constant along each) prints as before, from the AST.  The sums are
 * taken in float with FMA, in another order than the interpreter's double
 * sums: within the runner's tolerance, which scales with the tensor.
 *
 * Ownership follows isl; every helper says what it takes and gives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/ast.h>
#include <isl/id.h>
#include <isl/ilp.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include "codegen_impl.h"

#define FL_CONTRACT_MARK "fl_contract"
#define MAX_CHAIN 12
#define MAX_RED 3
#define MAX_EPI 64

/* What the mark remembers: the contraction op (index in the kernel). */
typedef struct mark_info {
	int kop;
} mark_info;

/* One loop of the chain from the mark down to the update. */
typedef struct chain_loop {
	int depth;		/* schedule dimension (iterator c<depth>) */
	char *lo, *hi;		/* bounds as C expressions (isl's) */
	long cs, xs, ys;	/* flat strides of C, X and Y along it */
} chain_loop;

struct fl_cg_contract {
	const fl_cg_stmt *upd;
	int x_read, y_read;	/* indices into upd->ps->reads */
	int n;
	chain_loop loop[MAX_CHAIN];
	int row, col;		/* chain indices of the micro-kernel's rows,
				   columns */
	int n_red, red[MAX_RED];
	int n_outer, outer[MAX_CHAIN];
	int inner;		/* chain index of the outer loop the runtime
				   runs itself (X constant along it, so X is
				   packed once for all of it), or -1 */
	/* The fused epilogue applied to each register block before it is
	 * stored (fl_cg_plan_epilogues): its statements in order, run per
	 * point of the block; n_epi == 0: none (it runs as loops over the
	 * finished tile, if there is one). */
	int n_epi;
	const fl_cg_stmt *epi[MAX_EPI];
	const fl_cg_loop *epi_inner;	/* its innermost loop: the register
					   scalars declared there are
					   declared per point */
	bool store_c;		/* the finished tile is stored in C too:
				   another statement reads it */
};

/* ---- 1. the schedule ------------------------------------------------- */

static bool is_contraction(const fl_op *op)
{
	return op->kind == FL_OP_MATMUL || op->kind == FL_OP_CONV2D;
}

/* The statement of poly op po with role r, or -1. */
static int stmt_with_role(const fl_poly_op *po, fl_stmt_role r)
{
	for (int s = 0; s < po->n_stmts; s++)
		if (po->stmts[s].role == r)
			return s;
	return -1;
}

/* The universe of statement s's space.  __isl_give. */
static isl_union_set *stmt_universe(const fl_poly_stmt *s)
{
	return isl_union_set_from_set(isl_set_universe(
		isl_set_get_space(s->domain)));
}

static bool is_named_mark(__isl_keep isl_schedule_node *node,
			  const char *name)
{
	isl_id *id = isl_schedule_node_mark_get_id(node);
	bool yes = id && strcmp(isl_id_get_name(id), name) == 0;

	isl_id_free(id);
	return yes;
}

/* Whether any instance of us is a statement writing tensor t (statements
 * named S<op>_<k>, recomputed copies S<op>_<k>_r<n> alike). */
typedef struct writes_ctx {
	const fl_graph *g;
	int t[2];
	bool found;
} writes_ctx;

static isl_stat check_writer(__isl_take isl_set *set, void *user)
{
	writes_ctx *w = user;
	const char *name = isl_set_get_tuple_name(set);
	int op = -1;

	if (name && sscanf(name, "S%d_", &op) == 1 && op >= 0 &&
	    op < w->g->n_ops &&
	    (w->g->ops[op].out[0] == w->t[0] || w->g->ops[op].out[0] == w->t[1]))
		w->found = true;
	isl_set_free(set);
	return isl_stat_ok;
}

/* Whether u (taken) and upd have an element in common. */
static bool meets_upd(__isl_take isl_union_set *u,
		      __isl_keep isl_union_set *upd)
{
	bool meets;

	u = isl_union_set_intersect(u, isl_union_set_copy(upd));
	meets = isl_union_set_is_empty(u) == isl_bool_false;
	isl_union_set_free(u);
	return meets;
}

/* The statements a band schedules (universe sets): the domain of its
 * partial schedule.  Not isl_schedule_node_get_domain, which below an
 * extension node (a prologue grafted by tile-then-fuse) leaves out the
 * statements that were there before the extension. */
static __isl_give isl_union_set *band_statements(
	__isl_keep isl_schedule_node *band)
{
	isl_multi_union_pw_aff *ps = isl_schedule_node_band_get_partial_schedule(band);

	return isl_union_set_universe(isl_multi_union_pw_aff_domain(ps));
}

/* The band at schedule depth `depth` or deeper that schedules upd, the
 * first met walking down from node (taken); NULL when none.  Filters not
 * meeting upd are not entered. */
static __isl_give isl_schedule_node *find_band(
	__isl_take isl_schedule_node *node, __isl_keep isl_union_set *upd,
	int depth)
{
	enum isl_schedule_node_type type = isl_schedule_node_get_type(node);
	isl_size n;

	if (type == isl_schedule_node_filter &&
	    !meets_upd(isl_schedule_node_filter_get_filter(node), upd))
		return isl_schedule_node_free(node);
	if (type == isl_schedule_node_band &&
	    isl_schedule_node_get_schedule_depth(node) >= depth)
		return meets_upd(band_statements(node), upd) ? node
			: isl_schedule_node_free(node);
	if (isl_schedule_node_get_type(node) == isl_schedule_node_mark &&
	    is_named_mark(node, FL_CONTRACT_MARK))
		return isl_schedule_node_free(node);	/* done already */
	n = isl_schedule_node_n_children(node);
	for (int i = 0; i < n; i++) {
		isl_schedule_node *c = find_band(
			isl_schedule_node_get_child(node, i), upd, depth);

		if (c) {
			isl_schedule_node_free(node);
			return c;
		}
	}
	return isl_schedule_node_free(node);
}

/* Marks (and splits off) the contraction of kernel op kop in s (taken). */
static __isl_give isl_schedule *split_one(fl_cg_kernel *cg,
					  __isl_take isl_schedule *s, int kop)
{
	const fl_poly_op *po = cg->poly[kop];
	const fl_op *op = &cg->g->ops[cg->k->ops[kop]];
	int si = stmt_with_role(po, FL_STMT_INIT);
	int su = stmt_with_role(po, FL_STMT_UPDATE);
	isl_union_set *upd, *mine, *dom, *rest;
	isl_schedule_node *band;
	writes_ctx w = {cg->g, {op->in[0], op->in[1]}, false};
	mark_info *mi;
	isl_id *id;

	if (si < 0 || su < 0)
		return s;
	upd = stmt_universe(&po->stmts[su]);
	band = find_band(isl_schedule_node_child(isl_schedule_get_root(s), 0),
			 upd, cg->tile_end);
	mine = isl_union_set_union(upd, stmt_universe(&po->stmts[si]));
	if (!band) {
		isl_union_set_free(mine);
		return s;
	}
	dom = band_statements(band);
	rest = isl_union_set_subtract(isl_union_set_copy(dom),
				      isl_union_set_copy(mine));
	mine = isl_union_set_intersect(mine, dom);
	isl_union_set_foreach_set(rest, &check_writer, &w);
	mi = malloc(sizeof *mi);
	if (w.found || !mi || !rest || !mine) {
		free(mi);
		isl_union_set_free(rest);
		isl_union_set_free(mine);
		isl_schedule_node_free(band);
		return s;
	}
	mi->kop = kop;
	if (isl_union_set_is_empty(rest) == isl_bool_false) {
		isl_union_set_list *parts = isl_union_set_list_alloc(cg->ctx, 2);

		parts = isl_union_set_list_add(parts, mine);
		parts = isl_union_set_list_add(parts, rest);
		band = isl_schedule_node_insert_sequence(band, parts);
		band = isl_schedule_node_child(isl_schedule_node_child(band, 0), 0);
	} else {
		isl_union_set_free(mine);
		isl_union_set_free(rest);
	}
	id = isl_id_alloc(cg->ctx, FL_CONTRACT_MARK, mi);
	id = isl_id_set_free_user(id, &free);
	band = isl_schedule_node_insert_mark(band, id);
	isl_schedule_free(s);
	s = isl_schedule_node_get_schedule(band);
	isl_schedule_node_free(band);
	return s;
}

__isl_give isl_schedule *fl_cg_split_contractions(fl_cg_kernel *cg,
						  __isl_take isl_schedule *s)
{
	cg->n_contract_notes = 0;	/* a new attempt */
	for (int i = 0; i < cg->k->n_ops && s; i++)
		if (is_contraction(&cg->g->ops[cg->k->ops[i]]))
			s = split_one(cg, s, i);
	return s;
}

bool fl_cg_is_contract_mark(__isl_keep isl_id *id)
{
	return id && strcmp(isl_id_get_name(id), FL_CONTRACT_MARK) == 0;
}

/* ---- 2. the plan ------------------------------------------------------- */

void fl_cg_contract_free(fl_cg_contract *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n; i++) {
		free(c->loop[i].lo);
		free(c->loop[i].hi);
	}
	free(c);
}

typedef struct find_upd {
	const fl_op *op;
	fl_cg_stmt *upd;
	int n_other;		/* statements neither the op's init nor
				   update */
} find_upd;

static isl_bool visit_user(__isl_keep isl_ast_node *node, void *user)
{
	find_upd *f = user;
	fl_cg_stmt *st;

	if (isl_ast_node_get_type(node) != isl_ast_node_user)
		return isl_bool_true;
	st = fl_cg_stmt_of(node);
	if (st && st->op == f->op && st->ps->role == FL_STMT_UPDATE)
		f->upd = st;
	else if (!st || st->op != f->op || st->ps->role != FL_STMT_INIT)
		f->n_other++;
	return isl_bool_true;
}

/* The statements under node: the op's update (NULL if none), and how many
 * others than its init and update. */
static find_upd scan(__isl_keep isl_ast_node *node, const fl_op *op)
{
	find_upd f = {op, NULL, 0};

	isl_ast_node_foreach_descendant_top_down(node, &visit_user, &f);
	return f;
}

/* An expression as C text (malloc'd), or NULL.  __isl_take e. */
static char *expr_text(__isl_take isl_ast_expr *e)
{
	char *s = e ? isl_ast_expr_to_C_str(e) : NULL;

	isl_ast_expr_free(e);
	return s;
}

/* The bounds of for node `node` (record l) into cl: unit stride, "c <= hi"
 * or "c < hi" conditions only.  False when it does not fit. */
static bool loop_bounds(chain_loop *cl, const fl_cg_loop *l,
			__isl_keep isl_ast_node *node)
{
	isl_ast_expr *cond, *inc;
	isl_val *one;
	bool unit;

	memset(cl, 0, sizeof *cl);
	cl->depth = l->depth;
	cl->lo = expr_text(isl_ast_node_for_get_init(node));
	if (isl_ast_node_for_is_degenerate(node) == isl_bool_true) {
		cl->hi = cl->lo ? strdup(cl->lo) : NULL;
		return cl->lo && cl->hi;
	}
	inc = isl_ast_node_for_get_inc(node);
	one = isl_ast_expr_get_val(inc);
	unit = one && isl_val_is_one(one) == isl_bool_true;
	isl_val_free(one);
	isl_ast_expr_free(inc);
	cond = isl_ast_node_for_get_cond(node);
	if (unit && cond && isl_ast_expr_get_type(cond) == isl_ast_expr_op &&
	    isl_ast_expr_op_get_n_arg(cond) == 2) {
		enum isl_ast_expr_op_type t = isl_ast_expr_op_get_type(cond);
		char *hi = expr_text(isl_ast_expr_op_get_arg(cond, 1));

		if (t == isl_ast_expr_op_le)
			cl->hi = hi;
		else if (t == isl_ast_expr_op_lt && hi) {
			size_t n = strlen(hi) + 8;

			cl->hi = malloc(n);
			if (cl->hi)
				snprintf(cl->hi, n, "(%s) - 1", hi);
			free(hi);
		} else {
			free(hi);
		}
	}
	isl_ast_expr_free(cond);
	return cl->lo && cl->hi;
}

/* Adds for node `node` to the chain.  False when it does not fit. */
static bool add_loop(fl_cg_contract *c, __isl_keep isl_ast_node *node)
{
	fl_cg_loop *l = fl_cg_loop_of(node);

	if (!l || l->depth < 0 || c->n == MAX_CHAIN)
		return false;
	return loop_bounds(&c->loop[c->n++], l, node);
}

/* Walks from node down to the update: every for node joins the chain; a
 * block may hold the op's init beside the part leading on; anything else
 * (an if around the update, other statements) does not fit. */
static bool collect_chain(fl_cg_contract *c, __isl_keep isl_ast_node *node,
			  const fl_op *op)
{
	enum isl_ast_node_type t = isl_ast_node_get_type(node);
	find_upd f = scan(node, op);

	if (!f.upd || f.n_other)
		return false;
	if (t == isl_ast_node_user) {
		c->upd = f.upd;
		return true;
	}
	if (t == isl_ast_node_for) {
		isl_ast_node *body = isl_ast_node_for_get_body(node);
		bool ok = add_loop(c, node) && collect_chain(c, body, op);

		isl_ast_node_free(body);
		return ok;
	}
	if (t == isl_ast_node_block) {
		isl_ast_node_list *list = isl_ast_node_block_get_children(node);
		isl_size n = isl_ast_node_list_n_ast_node(list);
		int on = -1;
		bool ok = true;

		for (int i = 0; i < n && ok; i++) {
			isl_ast_node *ch = isl_ast_node_list_get_at(list, i);

			if (scan(ch, op).upd) {
				ok = on < 0;
				on = i;
			}
			isl_ast_node_free(ch);
		}
		if (ok && on >= 0) {
			isl_ast_node *ch = isl_ast_node_list_get_at(list, on);

			ok = collect_chain(c, ch, op);
			isl_ast_node_free(ch);
		}
		isl_ast_node_list_free(list);
		return ok && on >= 0;
	}
	return false;
}

/* Whether C text s names iterator c<depth> (a whole word). */
static bool mentions(const char *s, int depth)
{
	char name[16];
	size_t n;

	snprintf(name, sizeof name, "c%d", depth);
	n = strlen(name);
	for (const char *p = strstr(s, name); p; p = strstr(p + 1, name)) {
		bool start = p == s || !(p[-1] == '_' || (p[-1] >= 'a' &&
			p[-1] <= 'z') || (p[-1] >= 'A' && p[-1] <= 'Z') ||
			(p[-1] >= '0' && p[-1] <= '9'));
		char e = p[n];

		if (start && !(e == '_' || (e >= '0' && e <= '9') ||
			       (e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')))
			return true;
	}
	return false;
}

/* Whether every bound of the chain is free of the chain's iterators (the
 * tile's points form a box). */
static bool bounds_are_a_box(const fl_cg_contract *c)
{
	for (int i = 0; i < c->n; i++)
		for (int j = 0; j < c->n; j++)
			if (mentions(c->loop[i].lo, c->loop[j].depth) ||
			    mentions(c->loop[i].hi, c->loop[j].depth))
				return false;
	return true;
}

/* Row-major element strides of tensor t as this kernel stores it (a
 * tile-local box or the whole tensor); its rank, or -1. */
static int array_strides(const fl_cg_kernel *cg, int t, long *stride)
{
	const fl_cg_array *a = &cg->arr[t];
	const fl_shape *sh = &cg->g->tensors[t].shape;
	int rank = a->local ? a->rank : sh->rank;
	long s = 1;

	for (int d = rank - 1; d >= 0; d--) {
		stride[d] = s;
		s *= (long)(a->local ? a->size[d] : sh->dim[d]);
	}
	return rank;
}

/* Whether expression e (keep) names identifier `name`. */
static bool names_id(__isl_keep isl_ast_expr *e, const char *name)
{
	enum isl_ast_expr_type t = isl_ast_expr_get_type(e);
	bool yes = false;

	if (t == isl_ast_expr_id) {
		isl_id *id = isl_ast_expr_get_id(e);

		yes = id && strcmp(isl_id_get_name(id), name) == 0;
		isl_id_free(id);
	} else if (t == isl_ast_expr_op) {
		isl_size n = isl_ast_expr_op_get_n_arg(e);

		for (int i = 0; i < n && !yes; i++) {
			isl_ast_expr *a = isl_ast_expr_op_get_arg(e, i);

			yes = names_id(a, name);
			isl_ast_expr_free(a);
		}
	}
	return yes;
}

/* The coefficient of iterator `name` in index expression e (keep), which
 * must be affine in it (other iterators may appear anyhow: they are fixed
 * within the tile); false when it is not. */
static bool coefficient(__isl_keep isl_ast_expr *e, const char *name, long *c)
{
	enum isl_ast_expr_op_type op;
	isl_ast_expr *a, *b;
	long ca = 0, cb = 0;
	bool ok;

	*c = 0;
	if (!names_id(e, name))
		return true;
	if (isl_ast_expr_get_type(e) == isl_ast_expr_id) {
		*c = 1;
		return true;
	}
	op = isl_ast_expr_op_get_type(e);
	if (op == isl_ast_expr_op_minus) {
		a = isl_ast_expr_op_get_arg(e, 0);
		ok = coefficient(a, name, &ca);
		isl_ast_expr_free(a);
		*c = -ca;
		return ok;
	}
	if (op != isl_ast_expr_op_add && op != isl_ast_expr_op_sub &&
	    op != isl_ast_expr_op_mul)
		return false;
	a = isl_ast_expr_op_get_arg(e, 0);
	b = isl_ast_expr_op_get_arg(e, 1);
	ok = coefficient(a, name, &ca) && coefficient(b, name, &cb);
	if (ok && op == isl_ast_expr_op_add)
		*c = ca + cb;
	else if (ok && op == isl_ast_expr_op_sub)
		*c = ca - cb;
	else if (ok) {		/* a product: one factor must be a number */
		isl_ast_expr *k = isl_ast_expr_get_type(a) == isl_ast_expr_int ?
				  a : isl_ast_expr_get_type(b) == isl_ast_expr_int ?
				  b : NULL;
		isl_val *v = k ? isl_ast_expr_get_val(k) : NULL;

		ok = v && isl_val_is_int(v) == isl_bool_true;
		if (ok)
			*c = isl_val_get_num_si(v) * (k == a ? cb : ca);
		isl_val_free(v);
	}
	isl_ast_expr_free(a);
	isl_ast_expr_free(b);
	return ok;
}

/* The flat stride along iterator c<depth> of access expression acc (keep:
 * T<t>[i0][i1]..., as the statement prints it) into *s; false when an
 * index is not affine in it. */
static bool flat_stride(const fl_cg_kernel *cg, __isl_keep isl_ast_expr *acc,
			int t, int depth, long *s)
{
	long stride[FL_MAX_RANK];
	int rank = array_strides(cg, t, stride);
	isl_size n = acc ? isl_ast_expr_op_get_n_arg(acc) : -1;
	char name[16];
	bool ok = n >= 1 && rank >= 0 && (n - 1 == rank || (rank == 0 && n == 2));

	snprintf(name, sizeof name, "c%d", depth);
	*s = 0;
	for (int k = 1; ok && k < n; k++) {
		isl_ast_expr *ix = isl_ast_expr_op_get_arg(acc, k);
		long c = 0;

		ok = coefficient(ix, name, &c);
		*s += c * (rank ? stride[k - 1] : 0);
		isl_ast_expr_free(ix);
	}
	return ok;
}

/* The update's reads of the op's inputs 0 and 1 (X and Y before the
 * choice of roles); false when not both are there and exact. */
static bool operand_reads(const fl_cg_stmt *u, int *r0, int *r1)
{
	*r0 = *r1 = -1;
	for (int r = 0; r < u->ps->n_reads; r++) {
		if (!u->ps->reads[r].exact || !u->reads[r])
			continue;
		if (u->ps->reads[r].input == 0)
			*r0 = r;
		else if (u->ps->reads[r].input == 1)
			*r1 = r;
	}
	return *r0 >= 0 && *r1 >= 0;
}

/* The strides of every chain loop, with s0/s1 those of the op's inputs
 * 0 and 1 (into xs/ys); false when some access is not affine. */
static bool chain_strides(const fl_cg_kernel *cg, fl_cg_contract *c)
{
	const fl_cg_stmt *u = c->upd;
	int tx = fl_cg_read_tensor(u->op, &u->ps->reads[c->x_read]);
	int ty = fl_cg_read_tensor(u->op, &u->ps->reads[c->y_read]);

	for (int i = 0; i < c->n; i++) {
		chain_loop *l = &c->loop[i];

		if (!flat_stride(cg, u->write, u->op->out[0], l->depth, &l->cs) ||
		    !flat_stride(cg, u->reads[c->x_read], tx, l->depth, &l->xs) ||
		    !flat_stride(cg, u->reads[c->y_read], ty, l->depth, &l->ys))
			return false;
	}
	return true;
}

/* How well rows r and columns j suit the micro-kernel with X the operand
 * constant along j and Y constant along r; -1 when they do not.  Best:
 * C and Y contiguous along the columns (vector stores and loads). */
static int pair_score(long r_cs, long r_xs, long r_ys, long j_cs, long j_xs,
		      long j_ys)
{
	if (!r_cs || !j_cs || r_ys || j_xs || !r_xs || !j_ys)
		return -1;
	return (j_cs == 1) * 4 + (j_ys == 1) * 2;
}

/* Chooses rows, columns and which operand is X (broadcast along the
 * columns) and which Y (loaded along them), exchanging the two when that
 * fits better; false when no pair of loops fits. */
static bool choose_roles(fl_cg_contract *c)
{
	int best = -1;
	bool swap_best = false;

	for (int swap = 0; swap < 2; swap++)
		for (int a = 0; a < c->n; a++)
			for (int b = 0; b < c->n; b++) {
				const chain_loop *r = &c->loop[a], *j = &c->loop[b];
				int s = a == b ? -1 : swap ?
					pair_score(r->cs, r->ys, r->xs, j->cs,
						   j->ys, j->xs) :
					pair_score(r->cs, r->xs, r->ys, j->cs,
						   j->xs, j->ys);

				if (s > best) {
					best = s;
					c->row = a;
					c->col = b;
					swap_best = swap;
				}
			}
	if (best >= 0 && swap_best) {
		int t = c->x_read;

		c->x_read = c->y_read;
		c->y_read = t;
		for (int i = 0; i < c->n; i++) {
			long v = c->loop[i].xs;

			c->loop[i].xs = c->loop[i].ys;
			c->loop[i].ys = v;
		}
	}
	return best >= 0;
}

/* The reduction loops (C constant along them) and the outer ones. */
static bool split_loops(fl_cg_contract *c)
{
	c->n_red = c->n_outer = 0;
	for (int i = 0; i < c->n; i++) {
		if (i == c->row || i == c->col)
			continue;
		if (c->loop[i].cs == 0) {
			if (c->n_red == MAX_RED)
				return false;
			c->red[c->n_red++] = i;
		} else {
			c->outer[c->n_outer++] = i;
		}
	}
	/* the innermost outer loop along which X stays put runs inside the
	   runtime: a conv's output rows, whose weights are then packed once
	   per reduction block rather than once per row */
	c->inner = -1;
	for (int k = c->n_outer - 1; k >= 0 && c->inner < 0; k--)
		if (c->loop[c->outer[k]].xs == 0) {
			c->inner = c->outer[k];
			for (int m = k; m + 1 < c->n_outer; m++)
				c->outer[m] = c->outer[m + 1];
			c->n_outer--;
		}
	return true;
}

/* The chain's loops along which C varies. */
static int output_loops(const fl_cg_contract *c)
{
	int n = 0;

	for (int i = 0; i < c->n; i++)
		n += c->loop[i].cs != 0;
	return n;
}

/* Why contraction c does not fit the micro-kernel, or NULL when it does
 * (its plan then complete). */
static const char *misfit(fl_cg_kernel *cg, fl_cg_contract *c,
			  __isl_keep isl_ast_node *child, const fl_op *op)
{
	if (!collect_chain(c, child, op))
		return "its loops are not a plain nest down to the update";
	if (!bounds_are_a_box(c))
		return "its loop bounds depend on each other";
	if (!operand_reads(c->upd, &c->x_read, &c->y_read))
		return "an operand is not read exactly";
	if (!chain_strides(cg, c))
		return "an access is not affine in the tile's loops";
	if (!choose_roles(c))
		return output_loops(c) < 2 ?
		       "one output loop only (a matrix-vector product)" :
		       op->kind == FL_OP_CONV2D ?
		       "its output channels are not a loop of the tile, and "
		       "the input varies along every other output loop" :
		       "no two output loops along which one operand each "
		       "stays constant";
	if (!split_loops(c))
		return "more than three reduction loops";
	if (c->n_outer > 4)
		return "more than four other output loops";
	return NULL;
}

/* The kernel comment's next line about op, its "op <k> <kind>: " prefix
 * written (*left: the room after it); NULL when the lines are used up. */
static char *note_line(fl_cg_kernel *cg, const fl_op *op, size_t *left)
{
	char *n;
	int k;

	if (cg->n_contract_notes == FL_CG_MAX_CONTRACT_NOTES)
		return NULL;
	n = cg->contract_note[cg->n_contract_notes++];
	k = snprintf(n, sizeof cg->contract_note[0], "op %d %s: ",
		     (int)(op - cg->g->ops), fl_op_kind_name(op->kind));
	*left = sizeof cg->contract_note[0] - (size_t)k;
	return n + k;
}

/* Records what became of the contraction of op for the kernel's comment. */
static void note(fl_cg_kernel *cg, const fl_op *op, const fl_cg_contract *c,
		 const char *why)
{
	size_t left;
	char *n = note_line(cg, op, &left);

	if (!n)
		return;
	if (why)
		snprintf(n, left, "loop nest, not the micro-kernel: %s", why);
	else
		snprintf(n, left, "micro-kernel, rows c%d x columns c%d, %d "
			 "reduction loop%s", c->loop[c->row].depth,
			 c->loop[c->col].depth, c->n_red,
			 c->n_red == 1 ? "" : "s");
}

void fl_cg_contract_plan(fl_cg_kernel *cg, __isl_keep isl_id *mark,
			 __isl_keep isl_ast_node *child)
{
	const mark_info *mi = isl_id_get_user(mark);
	fl_cg_loop *l;
	fl_cg_contract *c;
	const fl_op *op;
	const char *why;

	if (!mi)
		return;
	op = &cg->g->ops[cg->k->ops[mi->kop]];
	if (!child || isl_ast_node_get_type(child) != isl_ast_node_for ||
	    !(l = fl_cg_loop_of(child)) || l->contract) {
		note(cg, op, NULL, "the tile holds one point of it");
		return;
	}
	c = calloc(1, sizeof *c);
	if (!c)
		return;
	why = misfit(cg, c, child, op);
	note(cg, op, c, why);
	if (why)
		fl_cg_contract_free(c);
	else
		l->contract = c;
}

/* ---- 2b. the epilogue on the register block ---------------------------- */

/* An epilogue's loop nest, from its outermost for node down to its
 * statements. */
typedef struct epi_nest {
	int n;
	chain_loop loop[MAX_CHAIN];
	fl_cg_loop *rec[MAX_CHAIN];
	int n_stmts;
	const fl_cg_stmt *stmt[MAX_EPI];
} epi_nest;

static void epi_nest_clear(epi_nest *e)
{
	for (int i = 0; i < e->n; i++) {
		free(e->loop[i].lo);
		free(e->loop[i].hi);
	}
}

/* Adds the statements of node (keep) to the nest's: a user node, or a
 * block of them (blocks nested as isl prints a sequence in a sequence). */
static const char *add_stmts(epi_nest *e, __isl_keep isl_ast_node *node)
{
	const fl_cg_stmt *st;
	const char *why = NULL;

	if (isl_ast_node_get_type(node) == isl_ast_node_block) {
		isl_ast_node_list *list = isl_ast_node_block_get_children(node);
		isl_size n = isl_ast_node_list_n_ast_node(list);

		for (int i = 0; i < n && !why; i++) {
			isl_ast_node *ch = isl_ast_node_list_get_at(list, i);

			why = add_stmts(e, ch);
			isl_ast_node_free(ch);
		}
		isl_ast_node_list_free(list);
		return n < 0 ? "its body is not a list of statements" : why;
	}
	st = isl_ast_node_get_type(node) == isl_ast_node_user ?
	     fl_cg_stmt_of(node) : NULL;
	if (!st)
		return "its body is not a list of statements";
	if (e->n_stmts == MAX_EPI)
		return "more statements than the block form takes";
	e->stmt[e->n_stmts++] = st;
	return NULL;
}

/* The loops of the nest at node (keep) and the statements of its body, or
 * why the nest is not a plain one whose points are independent. */
static const char *epi_walk(epi_nest *e, __isl_keep isl_ast_node *node)
{
	fl_cg_loop *l;
	isl_ast_node *body;
	const char *why = NULL;

	if (isl_ast_node_get_type(node) != isl_ast_node_for)
		return add_stmts(e, node);
	l = fl_cg_loop_of(node);
	if (!l || l->depth < 0 || e->n == MAX_CHAIN)
		return "its loops are not a plain nest";
	if (!l->coincident)
		return "its loops carry a dependence";
	if (l->pragma || l->acc || l->acc_simd || l->split || l->stream ||
	    l->contract)
		return "its loops are printed in a form of their own";
	e->rec[e->n] = l;
	if (!loop_bounds(&e->loop[e->n++], l, node))
		return "its loops are not a plain nest";
	body = isl_ast_node_for_get_body(node);
	why = epi_walk(e, body);
	isl_ast_node_free(body);
	return why;
}

/* Whether the nest runs over the contraction's output points: its loops
 * are the chain's loops along which C varies, bound for bound. */
static bool same_points(const fl_cg_contract *c, const epi_nest *e)
{
	int n_out = 0;

	for (int i = 0; i < c->n; i++) {
		const chain_loop *cl = &c->loop[i];
		bool found = false;

		if (!cl->cs)
			continue;
		n_out++;
		for (int j = 0; j < e->n && !found; j++)
			found = e->loop[j].depth == cl->depth &&
				strcmp(e->loop[j].lo, cl->lo) == 0 &&
				strcmp(e->loop[j].hi, cl->hi) == 0;
		if (!found)
			return false;
	}
	return n_out == e->n;
}

/* Why the nest's statements cannot run point by point on the finished
 * block, or NULL: each is elementwise, none writes what the contraction
 * reads or writes, and each reads the contraction's result, if at all, at
 * the point the update writes. */
static const char *epi_stmts_misfit(const fl_cg_contract *c,
				    const epi_nest *e)
{
	const fl_op *op = c->upd->op;

	for (int i = 0; i < e->n_stmts; i++) {
		const fl_cg_stmt *st = e->stmt[i];
		int w = st->op->out[0];

		if (st->ps->role != FL_STMT_COMPUTE)
			return "a statement is not elementwise";
		if (w == op->out[0] || w == op->in[0] || w == op->in[1])
			return "it writes what the contraction reads or writes";
		for (int r = 0; r < st->ps->n_reads; r++) {
			if (!st->reads[r])
				return "a statement may read what it does not "
				       "name";
			if (fl_cg_read_tensor(st->op, &st->ps->reads[r]) ==
			    op->out[0] &&
			    isl_ast_expr_is_equal(st->reads[r], c->upd->write) !=
			    isl_bool_true)
				return "it reads the contraction's result at "
				       "another point";
		}
	}
	return NULL;
}

/* Whether some loop of the nest declares a tile-local array (a register
 * scalar in the innermost loop aside: it is declared per point). */
static bool declares_arrays(const fl_cg_kernel *cg, const epi_nest *e)
{
	for (int t = 0; t < cg->g->n_tensors; t++)
		for (int i = 0; i < e->n; i++)
			if (fl_cg_declared_in(&cg->arr[t], e->rec[i]) &&
			    !(cg->arr[t].reg && i == e->n - 1))
				return true;
	return false;
}

/* Whether a statement other than the contraction's and the epilogue's
 * accesses the contraction's result, or it lives beyond the tile: then
 * the finished block is stored in C too. */
static bool result_read_elsewhere(const fl_cg_kernel *cg,
				  const fl_cg_contract *c, const epi_nest *e)
{
	int t = c->upd->op->out[0];

	if (!cg->arr[t].local)
		return true;
	for (const fl_cg_stmt *st = cg->stmts; st; st = st->next) {
		bool mine = st->op == c->upd->op;

		for (int i = 0; i < e->n_stmts && !mine; i++)
			mine = e->stmt[i] == st;
		if (!mine && fl_cg_stmt_accesses(st, t))
			return true;
	}
	return false;
}

/* Records in the kernel's comment what became of the epilogue. */
static void epi_note(fl_cg_kernel *cg, const fl_cg_contract *c,
		     const char *why)
{
	size_t left;
	char *n = note_line(cg, c->upd->op, &left);

	if (!n)
		return;
	if (why)
		snprintf(n, left, "epilogue over the finished tile, not on the "
			 "register block: %s", why);
	else
		snprintf(n, left, "epilogue (%d statement%s) on each register "
			 "block before it is stored; the finished tile %s",
			 c->n_epi, c->n_epi == 1 ? "" : "s", c->store_c ?
			 "is stored too (read elsewhere)" : "is never stored");
}

/* When for node b (keep), the node after the contraction's loop a (keep)
 * in a block, is an epilogue that fits, moves its statements into the
 * contraction's plan and marks b absorbed. */
static void try_absorb(fl_cg_kernel *cg, __isl_keep isl_ast_node *a,
		       __isl_keep isl_ast_node *b)
{
	fl_cg_loop *la = fl_cg_loop_of(a), *lb = fl_cg_loop_of(b);
	fl_cg_contract *c = la ? la->contract : NULL;
	epi_nest e = {0};
	const char *why;

	if (!c || la->pragma || !lb ||
	    isl_ast_node_get_type(b) != isl_ast_node_for)
		return;
	why = epi_walk(&e, b);
	if (!why && !same_points(c, &e))
		why = "its loops are not the contraction's output loops";
	if (!why)
		why = epi_stmts_misfit(c, &e);
	if (!why && declares_arrays(cg, &e))
		why = "its loops declare tile-local arrays";
	if (!why) {
		c->n_epi = e.n_stmts;
		memcpy(c->epi, e.stmt, sizeof e.stmt[0] * (size_t)e.n_stmts);
		c->epi_inner = e.rec[e.n - 1];
		c->store_c = result_read_elsewhere(cg, c, &e);
		lb->absorbed = true;
	}
	epi_note(cg, c, why);
	epi_nest_clear(&e);
}

static isl_bool absorb_in_block(__isl_keep isl_ast_node *node, void *user)
{
	isl_ast_node_list *list;
	isl_size n;

	if (isl_ast_node_get_type(node) != isl_ast_node_block)
		return isl_bool_true;
	list = isl_ast_node_block_get_children(node);
	n = isl_ast_node_list_n_ast_node(list);
	for (int i = 0; i + 1 < n; i++) {
		isl_ast_node *a = isl_ast_node_list_get_at(list, i);
		isl_ast_node *b = isl_ast_node_list_get_at(list, i + 1);

		if (isl_ast_node_get_type(a) == isl_ast_node_for)
			try_absorb(user, a, b);
		isl_ast_node_free(a);
		isl_ast_node_free(b);
	}
	isl_ast_node_list_free(list);
	return isl_bool_true;
}

void fl_cg_plan_epilogues(fl_cg_kernel *cg, __isl_keep isl_ast_node *ast)
{
	if (cg->cuda || !ast)
		return;
	isl_ast_node_foreach_descendant_top_down(ast, &absorb_in_block, cg);
}

/* ---- 3. printing --------------------------------------------------- */

static __isl_give isl_printer *text(__isl_take isl_printer *p, const char *s)
{
	p = isl_printer_start_line(p);
	p = isl_printer_print_str(p, s);
	return isl_printer_end_line(p);
}

/* "&<access>" of expression e (keep) of tensor t, as the statement prints
 * it. */
static __isl_give isl_printer *address(__isl_take isl_printer *p,
				       const fl_cg_kernel *cg,
				       __isl_keep isl_ast_expr *e, int t)
{
	p = isl_printer_print_str(p, "&");
	return fl_cg_print_access(p, cg, e, t);
}

/* "base + fl_o0 * s0 + ..." over the outer loops, for strides of field. */
static void offset_text(const fl_cg_contract *c, const char *base,
			int which, char *buf, size_t n)
{
	int at = snprintf(buf, n, "%s", base);

	for (int k = 0; k < c->n_outer && at >= 0 && (size_t)at < n; k++) {
		const chain_loop *l = &c->loop[c->outer[k]];
		long s = which == 0 ? l->cs : which == 1 ? l->xs : l->ys;

		if (s)
			at += snprintf(buf + at, n - (size_t)at,
				       " + fl_o%d * %ldL", k, s);
	}
}

/* The tile's corner and extents per chain loop, the pointers to the
 * corner elements and the reduction's extents and strides. */
static __isl_give isl_printer *print_tile_head(__isl_take isl_printer *p,
					       const fl_cg_kernel *cg,
					       const fl_cg_contract *c)
{
	const fl_cg_stmt *u = c->upd;
	char buf[1024], rn[160], rx[160], ry[160];
	int tx = fl_cg_read_tensor(u->op, &u->ps->reads[c->x_read]);
	int ty = fl_cg_read_tensor(u->op, &u->ps->reads[c->y_read]);
	int a, b, d;

	for (int i = 0; i < c->n; i++) {
		const chain_loop *l = &c->loop[i];

		snprintf(buf, sizeof buf, "const long c%d = %s, fl_n%d = (%s) - "
			 "c%d + 1;", l->depth, l->lo, l->depth, l->hi, l->depth);
		p = text(p, buf);
	}
	p = isl_printer_start_line(p);
	p = isl_printer_print_str(p, "float *const fl_c = ");
	p = address(p, cg, u->write, u->op->out[0]);
	p = isl_printer_print_str(p, ";");
	p = isl_printer_end_line(p);
	p = isl_printer_start_line(p);
	p = isl_printer_print_str(p, "const float *const fl_x = ");
	p = address(p, cg, u->reads[c->x_read], tx);
	p = isl_printer_print_str(p, ";");
	p = isl_printer_end_line(p);
	p = isl_printer_start_line(p);
	p = isl_printer_print_str(p, "const float *const fl_y = ");
	p = address(p, cg, u->reads[c->y_read], ty);
	p = isl_printer_print_str(p, ";");
	p = isl_printer_end_line(p);
	a = snprintf(rn, sizeof rn, "const long fl_rn[3] = {");
	b = snprintf(rx, sizeof rx, "fl_rx[3] = {");
	d = snprintf(ry, sizeof ry, "fl_ry[3] = {");
	for (int k = 0; k < MAX_RED; k++) {
		const chain_loop *l = k < c->n_red ? &c->loop[c->red[k]] : NULL;
		char n_k[24];

		if (l)
			snprintf(n_k, sizeof n_k, "fl_n%d", l->depth);
		a += snprintf(rn + a, sizeof rn - (size_t)a, "%s%s",
			      k ? ", " : "", l ? n_k : "1");
		b += snprintf(rx + b, sizeof rx - (size_t)b, "%s%ldL",
			      k ? ", " : "", l ? l->xs : 0L);
		d += snprintf(ry + d, sizeof ry - (size_t)d, "%s%ldL",
			      k ? ", " : "", l ? l->ys : 0L);
	}
	snprintf(buf, sizeof buf, "%s}, %s}, %s};", rn, rx, ry);
	return text(p, buf);
}

/* The arguments of fl_contract_tile and fl_ctile_open after the tile
 * pointer (none for the former). */
static void tile_args(const fl_cg_contract *c, char *buf, size_t n)
{
	const chain_loop *row = &c->loop[c->row], *col = &c->loop[c->col];
	const chain_loop *in = c->inner >= 0 ? &c->loop[c->inner] : NULL;
	char off[3][256], n_in[24] = "1";

	offset_text(c, "fl_c", 0, off[0], sizeof off[0]);
	offset_text(c, "fl_x", 1, off[1], sizeof off[1]);
	offset_text(c, "fl_y", 2, off[2], sizeof off[2]);
	if (in)
		snprintf(n_in, sizeof n_in, "fl_n%d", in->depth);
	snprintf(buf, n, "fl_n%d, fl_n%d, %s, %s, %ldL, %ldL, %ldL, %s, %ldL, "
		 "%s, %ldL, %ldL, fl_rn, fl_rx, fl_ry", row->depth, col->depth,
		 n_in, off[0], row->cs, col->cs, in ? in->cs : 0L, off[1],
		 row->xs, off[2], col->ys, in ? in->ys : 0L);
}

/* "const long fl_p<d> = c<d> + <where in the tile>" for every output
 * loop of the chain: the point of the block that iteration (fl_m, fl_v)
 * of block (fl_ib, fl_jb) of outer step fl_in stands for. */
static void point_text(const fl_cg_contract *c, char *buf, size_t n)
{
	int at = snprintf(buf, n, "const long");
	int k = 0;

	for (int i = 0; i < c->n && at >= 0 && (size_t)at < n; i++) {
		const chain_loop *l = &c->loop[i];
		char where[40] = "0";	/* every output loop is one of these */

		if (!l->cs)
			continue;
		if (i == c->row)
			snprintf(where, sizeof where, "fl_ib * FL_MR + fl_m");
		else if (i == c->col)
			snprintf(where, sizeof where, "fl_jb * FL_NR + fl_v");
		else if (i == c->inner)
			snprintf(where, sizeof where, "fl_in");
		else
			for (int o = 0; o < c->n_outer; o++)
				if (c->outer[o] == i)
					snprintf(where, sizeof where, "fl_o%d", o);
		at += snprintf(buf + at, n - (size_t)at, "%s fl_p%d = c%d + %s",
			       k++ ? "," : "", l->depth, l->depth, where);
	}
	if (at >= 0 && (size_t)at < n)
		snprintf(buf + at, n - (size_t)at, ";");
}

/* "const long c<d> = fl_p<d>, ...;": the iterators the epilogue's
 * statements name, at the point. */
static void iterators_text(const fl_cg_contract *c, char *buf, size_t n)
{
	int at = snprintf(buf, n, "const long");
	int k = 0;

	for (int i = 0; i < c->n && at >= 0 && (size_t)at < n; i++)
		if (c->loop[i].cs)
			at += snprintf(buf + at, n - (size_t)at, "%s c%d = fl_p%d",
				       k++ ? "," : "", c->loop[i].depth,
				       c->loop[i].depth);
	if (at >= 0 && (size_t)at < n)
		snprintf(buf + at, n - (size_t)at, ";");
}

/* The epilogue's statements at one point, the contraction's result read
 * from the block. */
static __isl_give isl_printer *print_epilogue_point(__isl_take isl_printer *p,
						    fl_cg_kernel *cg,
						    const fl_cg_contract *c)
{
	char buf[512];

	point_text(c, buf, sizeof buf);
	p = text(p, buf);
	p = text(p, "{");
	p = isl_printer_indent(p, 2);
	iterators_text(c, buf, sizeof buf);
	p = text(p, buf);
	p = fl_cg_print_locals(p, cg, c->epi_inner);
	cg->block_t = c->upd->op->out[0];
	for (int i = 0; i < c->n_epi; i++) {
		p = isl_printer_start_line(p);
		p = fl_cg_print_stmt(p, cg, c->epi[i]);
		p = isl_printer_end_line(p);
	}
	cg->block_t = -1;
	p = isl_printer_indent(p, -2);
	return text(p, "}");
}

/* The tile with its epilogue on each register block: the runtime adds up
 * every reduction block but the last in C; the kernel takes the last one
 * block by block (fl_ctile_block), runs the epilogue's statements on the
 * block's points and stores only what they write. */
static __isl_give isl_printer *print_tile_with_epilogue(
	__isl_take isl_printer *p, fl_cg_kernel *cg, const fl_cg_contract *c)
{
	char args[1024], buf[1200];

	tile_args(c, args, sizeof args);
	p = text(p, "fl_ctile fl_t;");
	snprintf(buf, sizeof buf, "if (fl_ctile_open(&fl_t, %s))", args);
	p = text(p, buf);
	p = isl_printer_indent(p, 2);
	p = text(p, "for (long fl_in = 0; fl_in < fl_t.NO; fl_in++) {");
	p = isl_printer_indent(p, 2);
	p = text(p, "fl_ctile_pack(&fl_t, fl_in);");
	p = text(p, "for (long fl_jb = 0; fl_jb < fl_t.nb; fl_jb++)");
	p = text(p, "  for (long fl_ib = 0; fl_ib < fl_t.mb; fl_ib++) {");
	p = isl_printer_indent(p, 4);
	p = text(p, "float fl_r[FL_MR * FL_NR] __attribute__((aligned(64)));");
	p = text(p, "const int fl_mi = fl_ctile_rows(&fl_t, fl_ib), "
		 "fl_nj = fl_ctile_cols(&fl_t, fl_jb);");
	snprintf(buf, sizeof buf, "fl_ctile_block(&fl_t, fl_in, fl_ib, fl_jb, "
		 "fl_r, %d);", c->store_c);
	p = text(p, buf);
	p = text(p, "for (int fl_m = 0; fl_m < fl_mi; fl_m++) {");
	p = isl_printer_indent(p, 2);
	p = text(p, "#pragma omp simd");
	p = text(p, "for (int fl_v = 0; fl_v < fl_nj; fl_v++) {");
	p = isl_printer_indent(p, 2);
	p = print_epilogue_point(p, cg, c);
	p = isl_printer_indent(p, -2);
	p = text(p, "}");
	p = isl_printer_indent(p, -2);
	p = text(p, "}");
	p = isl_printer_indent(p, -4);
	p = text(p, "  }");
	p = isl_printer_indent(p, -2);
	p = text(p, "}");
	return isl_printer_indent(p, -2);
}

__isl_give isl_printer *fl_cg_print_contract(__isl_take isl_printer *p,
					     fl_cg_kernel *cg,
					     const fl_cg_contract *c)
{
	const fl_cg_stmt *u = c->upd;
	const chain_loop *row = &c->loop[c->row], *col = &c->loop[c->col];
	char buf[1200], args[1024];

	p = text(p, "{");
	p = isl_printer_indent(p, 2);
	snprintf(buf, sizeof buf, "/* %s: the tile's %s by a register-blocked "
		 "micro-kernel (rows c%d, columns c%d, %d reduction loop%s)%s */",
		 u->name, fl_op_kind_name(u->op->kind), row->depth, col->depth,
		 c->n_red, c->n_red == 1 ? "" : "s", c->n_epi ?
		 ", its epilogue applied to each register block before it is "
		 "stored" : "");
	p = text(p, buf);
	p = print_tile_head(p, cg, c);
	for (int k = 0; k < c->n_outer; k++) {
		snprintf(buf, sizeof buf, "for (long fl_o%d = 0; fl_o%d < fl_n%d; "
			 "fl_o%d++)%s", k, k, c->loop[c->outer[k]].depth, k,
			 c->n_epi && k + 1 == c->n_outer ? " {" : "");
		p = text(p, buf);
		p = isl_printer_indent(p, 2);
	}
	if (c->n_epi) {
		p = print_tile_with_epilogue(p, cg, c);
	} else {
		tile_args(c, args, sizeof args);
		snprintf(buf, sizeof buf, "fl_contract_tile(%s);", args);
		p = text(p, buf);
	}
	p = isl_printer_indent(p, -2 * c->n_outer);
	if (c->n_epi && c->n_outer)
		p = text(p, "}");
	p = isl_printer_indent(p, -2);
	return text(p, "}");
}

const char *fl_cg_contract_runtime(void)
{
	return fl_contract_rt_text;
}
