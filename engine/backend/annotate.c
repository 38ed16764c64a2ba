/* The isl AST of one kernel, annotated for the C printer (DESIGN 1.6;
 * ISL_GUIDE 7, 8).
 *
 * Needs: a kernel prepared by prepare.c for this attempt (descriptions,
 * arrays, tile band).  Gives: the AST of its schedule with the private
 * marks dropped, where
 *  - every user node carries an fl_cg_stmt: at_each_domain recovers the
 *    statement (the op and which of its poly statements, "S<op>_<k>" or
 *    a recomputed copy "S<op>_<k>_r<n>" whose instance starts with the
 *    tile coordinates) and turns every exact access of it into an
 *    isl_ast_expr through the build's schedule
 *    (isl_ast_build_access_from_pw_multi_aff), localised into its box for
 *    a tile-local tensor; gather, gather_elements and reshape also get
 *    the original iterators, and a scatter's statement gets them
 *    instead of its write (a may-write, not a function).  Isl's default calls S(c0, c1) are never printed;
 *  - every for node carries an fl_cg_loop: its schedule depth, whether it
 *    runs a coincident band member, and whether it is parallel -- after
 *    the AST under an FL_CG_PAR_MARK is built, the for loop directly under
 *    it is flagged when its iterator (c<depth>) belongs to the band's
 *    leading coincident members; nothing else is, so a flag can never
 *    slide onto an inner loop such as a recomputation when the marked band
 *    has a single iteration and makes no loop (ISL_GUIDE 7).
 *
 * Once the AST stands, fl_cg_decide_loops settles what the printer writes
 * for each loop: "#pragma omp parallel for" on the outermost parallel
 * loop only -- with collapse(k) over the coincident tile loops nested in
 * it when it alone has fewer iterations than four per core (below) --
 * "#pragma omp simd" on innermost coincident loops, and scalar
 * accumulators for reductions into one element per innermost loop.  The
 * outer loop of a band under layer 1's FL_ALL_REDUCE_MARK (a kernel in
 * canonical all-reduce form) takes those accumulators across the threads
 * instead: "#pragma omp parallel for reduction(...)" on it, "omp simd
 * reduction(...)" on the innermost loop inside it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/ast.h>
#include <isl/ast_build.h>
#include <isl/id.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_map.h>

#include "codegen_impl.h"
#include "machine.h"

/* ---- access expressions (at_each_domain) --------------------------- */

static int parse_stmt_name(const char *name, int *op, int *k)
{
	int n = 0, r;

	if (sscanf(name, "S%d_%d%n", op, k, &n) == 2 && name[n] == '\0')
		return 0;
	n = 0;
	if (sscanf(name, "S%d_%d_r%d%n", op, k, &r, &n) == 3 &&
	    name[n] == '\0')
		return 0;
	return -1;
}

static const fl_poly_op *poly_of(const fl_cg_kernel *cg, int op)
{
	for (int i = 0; i < cg->k->n_ops; i++)
		if (cg->poly[i] && cg->poly[i]->op == op)
			return cg->poly[i];
	return NULL;
}



/* What every access of one statement instance needs. */
typedef struct stmt_ctx {
	isl_ast_build *build;
	isl_multi_aff *proj;	/* instance -> original statement */
	isl_pw_multi_aff *iter;	/* schedule -> instance */
	isl_set *dom;		/* executed instances */
} stmt_ctx;

/* The AST expression of access `acc` (keep; statement -> T<t>). */
static __isl_give isl_ast_expr *access_expr(fl_cg_kernel *cg,
					    const stmt_ctx *sc,
					    __isl_keep isl_map *acc, int t,
					    isl_pw_multi_aff **sched)
{
	isl_pw_multi_aff *pma = isl_pw_multi_aff_from_map(isl_map_copy(acc));

	pma = isl_pw_multi_aff_pullback_multi_aff(pma,
						  isl_multi_aff_copy(sc->proj));
	if (cg->arr[t].local)
		pma = fl_cg_localize(cg, t, pma, sc->dom);
	pma = isl_pw_multi_aff_pullback_pw_multi_aff(pma,
		isl_pw_multi_aff_copy(sc->iter));
	cg->arr[t].used = true;
	*sched = isl_pw_multi_aff_copy(pma);
	return isl_ast_build_access_from_pw_multi_aff(sc->build, pma);
}

/* Fills the statement's expressions; false on an isl failure. */
static bool stmt_exprs(fl_cg_kernel *cg, fl_cg_stmt *st,
		       const stmt_ctx *sc)
{
	const fl_poly_stmt *ps = st->ps;

	if (ps->role == FL_STMT_SCATTER) {
		/* a may-write: the printer writes the element from the
		 * original iterators and the index (print_c.c) */
		cg->arr[st->op->out[0]].used = true;
	} else {
		st->write = access_expr(cg, sc, ps->write, st->op->out[0],
					&st->wsched);
		if (!st->write)
			return false;
	}
	for (int r = 0; r < ps->n_reads; r++) {
		int t = fl_cg_read_tensor(st->op, &ps->reads[r]);

		if (!ps->reads[r].exact) {
			cg->arr[t].used = true;
			continue;
		}
		st->reads[r] = access_expr(cg, sc, ps->reads[r].access, t,
					   &st->rsched[r]);
		if (!st->reads[r])
			return false;
	}
	if (st->op->kind == FL_OP_GATHER || st->op->kind == FL_OP_RESHAPE ||
	    st->op->kind == FL_OP_GATHER_ELEMENTS ||
	    ps->role == FL_STMT_SCATTER) {
		isl_pw_multi_aff *id = isl_pw_multi_aff_from_multi_aff(
			isl_multi_aff_copy(sc->proj));

		id = isl_pw_multi_aff_pullback_pw_multi_aff(id,
			isl_pw_multi_aff_copy(sc->iter));
		st->iters = isl_ast_build_access_from_pw_multi_aff(sc->build,
								   id);
		return st->iters != NULL;
	}
	return true;
}

static void stmt_free(fl_cg_stmt *st)
{
	isl_ast_expr_free(st->write);
	isl_ast_expr_free(st->iters);
	isl_pw_multi_aff_free(st->wsched);
	isl_space_free(st->sspace);
	if (st->reads)
		for (int r = 0; r < st->ps->n_reads; r++)
			isl_ast_expr_free(st->reads[r]);
	if (st->rsched)
		for (int r = 0; r < st->ps->n_reads; r++)
			isl_pw_multi_aff_free(st->rsched[r]);
	free(st->reads);
	free(st->rsched);
	free(st);
}

/* The statement called by user node `node`, with its poly description;
 * NULL (and the kernel failed) when it is not one of the kernel's. */
static fl_cg_stmt *stmt_lookup(fl_cg_kernel *cg,
			       __isl_keep isl_ast_node *node)
{
	isl_ast_expr *call = isl_ast_node_user_get_expr(node);
	isl_ast_expr *fn = isl_ast_expr_op_get_arg(call, 0);
	isl_id *id = isl_ast_expr_get_id(fn);
	const char *name = isl_id_get_name(id);
	const fl_poly_op *po;
	int op = -1, k = -1;
	fl_cg_stmt *st = NULL;

	if (name && parse_stmt_name(name, &op, &k) == 0 &&
	    (po = poly_of(cg, op)) && k >= 0 && k < po->n_stmts) {
		st = calloc(1, sizeof *st);
		if (st) {
			st->acc = -1;
			st->reads = calloc((size_t)po->stmts[k].n_reads + 1,
					   sizeof *st->reads);
			st->rsched = calloc((size_t)po->stmts[k].n_reads + 1,
					    sizeof *st->rsched);
		}
		if (st && st->reads && st->rsched) {
			snprintf(st->name, sizeof st->name, "%s", name);
			st->op = &cg->g->ops[op];
			st->ps = &po->stmts[k];
		} else if (st) {
			free(st->reads);
			free(st->rsched);
			free(st);
			st = NULL;
		}
	}
	if (!st)
		fl_cg_fail(cg, name ? "statement of an op outside the kernel, "
			"or out of memory" : "unnamed statement");
	isl_id_free(id);
	isl_ast_expr_free(fn);
	isl_ast_expr_free(call);
	return st;
}

/* Builds the statement-context of the user node from the build's
 * schedule; false on failure. */
static bool stmt_context(fl_cg_stmt *st, isl_ast_build *build,
			 stmt_ctx *sc)
{
	isl_map *sched = isl_map_from_union_map(isl_ast_build_get_schedule(build));
	isl_space *inst = isl_space_domain(isl_map_get_space(sched));
	isl_size n_inst = isl_space_dim(inst, isl_dim_set);
	int n_extra = n_inst - isl_set_dim(st->ps->domain, isl_dim_set);

	sc->build = build;
	isl_space_free(st->sspace);
	st->sspace = isl_ast_build_get_schedule_space(build);
	sc->dom = isl_map_domain(isl_map_copy(sched));
	sc->iter = isl_pw_multi_aff_from_map(isl_map_reverse(sched));
	if (n_inst < 0 || n_extra < 0 || !sc->dom || !sc->iter ||
	    !st->sspace) {
		isl_space_free(inst);
		return false;
	}
	sc->proj = isl_multi_aff_project_out_map(inst, isl_dim_set, 0,
						 (unsigned)n_extra);
	sc->proj = isl_multi_aff_set_tuple_id(sc->proj, isl_dim_out,
		isl_set_get_tuple_id(st->ps->domain));
	return sc->proj != NULL;
}

static __isl_give isl_ast_node *at_domain(__isl_take isl_ast_node *node,
					  __isl_keep isl_ast_build *build,
					  void *user)
{
	fl_cg_kernel *cg = user;
	stmt_ctx sc = {NULL, NULL, NULL, NULL};
	fl_cg_stmt *st = stmt_lookup(cg, node);
	bool ok;

	if (!st)
		return node;
	st->loop = cg->cur;
	st->next = cg->stmts;
	cg->stmts = st;
	ok = stmt_context(st, build, &sc) && stmt_exprs(cg, st, &sc);
	isl_multi_aff_free(sc.proj);
	isl_pw_multi_aff_free(sc.iter);
	isl_set_free(sc.dom);
	if (!ok) {
		fl_cg_fail(cg, "could not build the access expressions of a "
			"statement");
		return node;
	}
	return isl_ast_node_set_annotation(node,
					   isl_id_alloc(cg->ctx, "fl_stmt", st));
}

/* ---- loops and marks ------------------------------------------------ */

/* Every for node gets a fl_cg_loop; while its body is built, statements see
 * it as their innermost loop (isl calls before_each_for, builds the
 * body, then calls after_each_for). */
static __isl_give isl_id *before_for(__isl_keep isl_ast_build *build,
				     void *user)
{
	fl_cg_kernel *cg = user;
	fl_cg_loop *l = calloc(1, sizeof *l);

	(void)build;
	if (!l) {
		fl_cg_fail(cg, "out of memory");
		return isl_id_alloc(cg->ctx, "fl_loop", NULL);
	}
	l->depth = -1;
	l->parent = cg->cur;
	l->next = cg->loops;
	cg->loops = l;
	cg->cur = l;
	return isl_id_alloc(cg->ctx, "fl_loop", l);
}

fl_cg_loop *fl_cg_loop_of(__isl_keep isl_ast_node *node)
{
	isl_id *id = isl_ast_node_get_annotation(node);
	fl_cg_loop *l = id ? isl_id_get_user(id) : NULL;

	isl_id_free(id);
	return l;
}

fl_cg_stmt *fl_cg_stmt_of(__isl_keep isl_ast_node *node)
{
	isl_id *id = isl_ast_node_get_annotation(node);
	fl_cg_stmt *st = id ? isl_id_get_user(id) : NULL;

	isl_id_free(id);
	return st;
}

/* Schedule depth of a for node from its iterator name "c<depth>". */
static int iterator_depth(__isl_keep isl_ast_node *node)
{
	isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
	isl_id *id = isl_ast_expr_get_id(it);
	const char *name = id ? isl_id_get_name(id) : NULL;
	int d = -1, n = 0;

	if (!name || sscanf(name, "c%d%n", &d, &n) != 1 || name[n])
		d = -1;
	isl_id_free(id);
	isl_ast_expr_free(it);
	return d;
}

static __isl_give isl_ast_node *after_for(__isl_take isl_ast_node *node,
					  __isl_keep isl_ast_build *build,
					  void *user)
{
	fl_cg_kernel *cg = user;
	fl_cg_loop *l = fl_cg_loop_of(node);

	(void)build;
	if (l) {
		l->depth = iterator_depth(node);
		cg->cur = l->parent;
	}
	return node;
}

/* The loop directly under a mark's child (through ifs without else),
 * when it is a real (not degenerate) for loop; NULL otherwise. */
static fl_cg_loop *loop_under_mark(__isl_keep isl_ast_node *child)
{
	isl_ast_node *n = isl_ast_node_copy(child);
	fl_cg_loop *l = NULL;

	while (n && isl_ast_node_get_type(n) == isl_ast_node_if &&
	       isl_ast_node_if_has_else_node(n) == isl_bool_false) {
		isl_ast_node *then = isl_ast_node_if_get_then_node(n);

		isl_ast_node_free(n);
		n = then;
	}
	if (n && isl_ast_node_get_type(n) == isl_ast_node_for &&
	    isl_ast_node_for_is_degenerate(n) == isl_bool_false)
		l = fl_cg_loop_of(n);
	isl_ast_node_free(n);
	return l;
}

/* Flags the loop directly under an "fl_par" mark when it runs one of the
 * band's coincident members. */
static void flag_parallel(__isl_keep isl_ast_node *child,
			  const fl_cg_par_mark *pi)
{
	fl_cg_loop *l = loop_under_mark(child);

	if (l && l->depth >= pi->depth && l->depth < pi->depth + pi->ncoinc)
		l->parallel = true;
}

/* Flags the loop directly under layer 1's FL_ALL_REDUCE_MARK: the outer
 * loop of an all-reduce band. */
static void flag_all_reduce(__isl_keep isl_ast_node *child)
{
	fl_cg_loop *l = loop_under_mark(child);

	if (l)
		l->all_reduce = true;
}

/* Flags the for loops under an "fl_band" mark that run one of its
 * coincident members (loops of inner bands have larger depths). */
static isl_bool flag_coincident(__isl_keep isl_ast_node *node, void *user)
{
	const fl_cg_band_mark *bi = user;
	fl_cg_loop *l;
	int m;

	if (isl_ast_node_get_type(node) != isl_ast_node_for)
		return isl_bool_true;
	l = fl_cg_loop_of(node);
	m = l ? l->depth - bi->depth : -1;
	if (m >= 0 && m < bi->n && bi->coincident[m])
		l->coincident = true;
	return isl_bool_true;
}

/* Every mark is dropped from the AST (its subtree stays); "fl_par" marks
 * flag their loop first, "fl_band" marks the coincident loops. */
static __isl_give isl_ast_node *after_mark(__isl_take isl_ast_node *node,
					   __isl_keep isl_ast_build *build,
					   void *user)
{
	isl_id *id = isl_ast_node_mark_get_id(node);
	isl_ast_node *child = isl_ast_node_mark_get_node(node);

	(void)build;
	if (fl_cg_is_contract_mark(id))
		fl_cg_contract_plan(user, id, child);
	if (id && strcmp(isl_id_get_name(id), FL_CG_PAR_MARK) == 0 &&
	    isl_id_get_user(id))
		flag_parallel(child, isl_id_get_user(id));
	if (id && strcmp(isl_id_get_name(id), FL_CG_BAND_MARK) == 0 &&
	    isl_id_get_user(id))
		isl_ast_node_foreach_descendant_top_down(child,
			&flag_coincident, isl_id_get_user(id));
	if (id && strcmp(isl_id_get_name(id), FL_ALL_REDUCE_MARK) == 0)
		flag_all_reduce(child);
	isl_id_free(id);
	isl_ast_node_free(node);
	return child;
}

/* ---- scalar accumulators for reductions ----------------------------- */

const char *fl_cg_acc_kind(fl_op_kind kind)
{
	switch (kind) {
	case FL_OP_REDUCE_SUM:
	case FL_OP_MATMUL:	/* sums of products */
	case FL_OP_CONV2D: return "+";
	case FL_OP_REDUCE_MAX: return "max";
	case FL_OP_REDUCE_MIN: return "min";
	case FL_OP_REDUCE_PROD: return "*";
	default: return NULL;
	}
}

/* An innermost loop whose body updates one element of a reduction (sum,
 * max or min) in every
 * iteration (the element does not depend on the loop's iterator) keeps
 * the sum in a scalar fl_acc<k> instead:
 *   { float fl_acc0 = T9[c1][0];
 *     #pragma omp simd reduction(+:fl_acc0)
 *     for (..) { ..; fl_acc0 = fl_acc0 + T8[..][c2]; }
 *     T9[c1][0] = fl_acc0; }
 * so gcc may vectorise the loop (a float sum into memory it may not
 * reassociate).  max and min do the same with reduction(max:) and
 * reduction(min:) around the op's NaN-skipping update, which the printer
 * writes fl_acc0 = x > fl_acc0 ? x : fl_acc0 (fl_fmaxf(fl_acc0, x) for an
 * accumulator that is never NaN): a NaN x leaves it as it was, so no lane's
 * accumulator ever becomes NaN (it starts at the identity -INFINITY, or
 * at the element a previous run of the same chain left), and OpenMP's
 * final max of the lanes sees no NaN either -- the interpreter's
 * fmax/fmin rule (a NaN input is skipped; all NaN gives the identity)
 * holds while the body is plain selects that gcc vectorises.  The init
 * of the same element, when the body runs it in
 * the loop's first iteration only, moves out as the scalar's initial
 * value. */
#define ACC_MAX_STMTS 64

/* The statements of an innermost loop's body and the plan made for it. */
typedef struct acc_body {
	int n;
	fl_cg_stmt *st[ACC_MAX_STMTS];
	bool guarded[ACC_MAX_STMTS];	/* under an if in the body */
	fl_cg_acc plan;
} acc_body;

/* Collects a statement of the body: a user node, or one under an if
 * without else; false for anything else. */
static bool acc_collect(acc_body *b, __isl_keep isl_ast_node *node,
			bool guarded)
{
	isl_ast_node *then;
	bool ok;

	if (isl_ast_node_get_type(node) == isl_ast_node_if) {
		if (isl_ast_node_if_has_else_node(node) != isl_bool_false)
			return false;
		then = isl_ast_node_if_get_then_node(node);
		ok = then && acc_collect(b, then, true);
		isl_ast_node_free(then);
		return ok;
	}
	if (isl_ast_node_get_type(node) != isl_ast_node_user ||
	    b->n >= ACC_MAX_STMTS)
		return false;
	b->st[b->n] = fl_cg_stmt_of(node);
	b->guarded[b->n] = guarded;
	return b->st[b->n++] != NULL;
}

static bool acc_collect_body(acc_body *b, __isl_keep isl_ast_node *body)
{
	isl_ast_node_list *list;
	isl_size n;
	bool ok = true;

	if (isl_ast_node_get_type(body) != isl_ast_node_block)
		return acc_collect(b, body, false);
	list = isl_ast_node_block_get_children(body);
	n = isl_ast_node_list_n_ast_node(list);
	if (n < 0)
		ok = false;
	for (int i = 0; ok && i < n; i++) {
		isl_ast_node *c = isl_ast_node_list_get_at(list, i);

		ok = c && acc_collect(b, c, false);
		isl_ast_node_free(c);
	}
	isl_ast_node_list_free(list);
	return ok;
}

static isl_stat single_piece(__isl_take isl_set *set,
			     __isl_take isl_multi_aff *ma, void *user)
{
	isl_multi_aff **out = user;

	isl_set_free(set);
	isl_multi_aff_free(*out);
	*out = ma;
	return isl_stat_ok;
}

/* The one affine function of schedule -> element (keep), or NULL. */
static __isl_give isl_multi_aff *sole_function(
	__isl_keep isl_pw_multi_aff *pma)
{
	isl_pw_multi_aff *c;
	isl_multi_aff *ma = NULL;

	if (!pma)
		return NULL;
	c = isl_pw_multi_aff_coalesce(isl_pw_multi_aff_copy(pma));
	if (isl_pw_multi_aff_n_piece(c) == 1)
		isl_pw_multi_aff_foreach_piece(c, &single_piece, &ma);
	isl_pw_multi_aff_free(c);
	return ma;
}

/* The position of loop c<depth> among the dimensions of st's schedule
 * (the domain of wsched and rsched), or -1 when it is not one of them. */
static int sched_pos(const fl_cg_stmt *st, int depth)
{
	char name[16];

	snprintf(name, sizeof name, "c%d", depth);
	return st->sspace ? isl_space_find_dim_by_name(st->sspace,
						       isl_dim_set, name) : -1;
}

/* Whether the element accessed does not involve schedule dimension d. */
static bool invariant_in(__isl_keep isl_pw_multi_aff *pma, int d)
{
	isl_multi_aff *ma = sole_function(pma);
	isl_size n = isl_multi_aff_dim(ma, isl_dim_in);
	bool inv = ma && n > d &&
		   isl_multi_aff_involves_dims(ma, isl_dim_in, (unsigned)d,
					       1) == isl_bool_false;

	isl_multi_aff_free(ma);
	return inv;
}

/* Whether the element st reads as op input `input` stays the same
 * through the innermost loop around st (softmax's divisor, one per row,
 * in the loop over the row), so that work on it alone may leave the loop. */
bool fl_cg_read_invariant(const fl_cg_stmt *st, int input)
{
	int d;

	if (!st->loop || st->loop->depth < 0)
		return false;
	d = sched_pos(st, st->loop->depth);
	if (d < 0)
		return false;
	for (int r = 0; r < st->ps->n_reads; r++)
		if (st->ps->reads[r].input == input)
			return st->rsched[r] && invariant_in(st->rsched[r], d);
	return false;
}

/* Schedule dimensions 0..d -> element, ids reset. */
static __isl_give isl_map *sched_access(__isl_keep isl_pw_multi_aff *pma,
					int d)
{
	isl_map *m = isl_map_from_pw_multi_aff(isl_pw_multi_aff_copy(pma));
	isl_size n = isl_map_dim(m, isl_dim_in);

	if (n < 0 || n <= d)
		return isl_map_free(m);
	m = isl_map_project_out(m, isl_dim_in, (unsigned)d + 1,
				(unsigned)(n - d - 1));
	m = isl_map_reset_tuple_id(m, isl_dim_in);
	return isl_map_reset_tuple_id(m, isl_dim_out);
}

/* The executed schedule points of pma's domain on dimensions 0..d. */
static __isl_give isl_set *points_to(__isl_keep isl_pw_multi_aff *pma,
				     int d)
{
	return isl_map_domain(sched_access(pma, d));
}

/* Whether init runs exactly in the first iteration of loop `depth` of
 * each run of upd, and writes the same element. */
static bool init_hoists(const fl_cg_stmt *init, const fl_cg_stmt *upd,
			int depth)
{
	isl_multi_aff *fi = sole_function(init->wsched);
	isl_multi_aff *fu = sole_function(upd->wsched);
	int d = sched_pos(upd, depth);
	isl_set *pi, *pu;
	isl_map *m;
	bool ok;

	ok = fi && fu && d >= 0 && sched_pos(init, depth) == d &&
	     isl_multi_aff_plain_is_equal(fi, fu) == isl_bool_true;
	isl_multi_aff_free(fi);
	isl_multi_aff_free(fu);
	if (!ok)
		return false;
	pi = points_to(init->wsched, d);
	pu = points_to(upd->wsched, d);
	m = isl_map_from_domain(pu);
	m = isl_map_move_dims(m, isl_dim_out, 0, isl_dim_in, (unsigned)d, 1);
	m = isl_map_lexmin(m);
	pu = isl_set_flatten(isl_map_wrap(m));
	ok = pi && pu && isl_set_is_equal(pi, pu) == isl_bool_true;
	isl_set_free(pi);
	isl_set_free(pu);
	return ok;
}

bool fl_cg_stmt_accesses(const fl_cg_stmt *st, int t)
{
	if (st->op->out[0] == t)
		return true;
	for (int r = 0; r < st->ps->n_reads; r++)
		if (fl_cg_read_tensor(st->op, &st->ps->reads[r]) == t)
			return true;
	return false;
}

/* The pairs of schedule points (dimensions 0..d) at which accesses w
 * and a reach the same element within one run of loop d (the loops
 * around it at the same values). */
static __isl_give isl_map *same_element_in_run(
	__isl_keep isl_pw_multi_aff *w, __isl_keep isl_pw_multi_aff *a, int d)
{
	isl_map *r = isl_map_apply_range(sched_access(w, d),
					 isl_map_reverse(sched_access(a, d)));

	for (int k = 0; k < d; k++)
		r = isl_map_equate(r, isl_dim_in, k, isl_dim_out, k);
	return r;
}

/* Whether access a (schedule -> element of u's tensor) never reaches
 * the element update u accumulates into in the same run of loop `depth`
 * (the loops around it at the same values): the rows behind it in a
 * pipelined kernel (pipeline_rows.c), where softmax's exp reads the
 * maximum of the row before while the maximum of this row accumulates. */
static bool apart(const fl_cg_stmt *u, __isl_keep isl_pw_multi_aff *a,
		  int d)
{
	isl_map *r;
	isl_bool empty;

	if (!a)
		return false;
	r = same_element_in_run(u->wsched, a, d);
	empty = isl_map_is_empty(r);
	isl_map_free(r);
	return empty == isl_bool_true;
}

/* Whether every access of statement s to u's tensor is apart from u's
 * element (s and u in the same loops). */
static bool other_elements(const fl_cg_stmt *u, const fl_cg_stmt *s,
			   int depth)
{
	int t = u->op->out[0], d = sched_pos(u, depth);

	if (d < 0 || sched_pos(s, depth) != d)
		return false;
	if (s->op->out[0] == t && !apart(u, s->wsched, d))
		return false;
	for (int r = 0; r < s->ps->n_reads; r++)
		if (fl_cg_read_tensor(s->op, &s->ps->reads[r]) == t &&
		    !apart(u, s->rsched[r], d))
			return false;
	return true;
}

/* Whether the update (a sum whose element is invariant in loop d) can
 * use an accumulator: no other statement of the body touches its
 * element, except its own init hoisted out of the loop (into *init);
 * others may touch other elements of its tensor (other_elements). */
static bool acc_candidate(const acc_body *b, int i, int d, fl_cg_stmt **init)
{
	fl_cg_stmt *u = b->st[i];
	int t = u->op->out[0];

	*init = NULL;
	if (!fl_cg_acc_kind(u->op->kind) || u->ps->role != FL_STMT_UPDATE ||
	    b->guarded[i] || !u->wsched || sched_pos(u, d) < 0 ||
	    !invariant_in(u->wsched, sched_pos(u, d)))
		return false;
	for (int r = 0; r < u->ps->n_reads; r++)
		if (u->ps->reads[r].input >= 0 &&
		    fl_cg_read_tensor(u->op, &u->ps->reads[r]) == t)
			return false;
	for (int j = 0; j < b->n; j++) {
		fl_cg_stmt *s = b->st[j];

		if (j == i || !fl_cg_stmt_accesses(s, t) ||
		    other_elements(u, s, d))
			continue;
		if (*init || j > i || s->op != u->op ||
		    s->ps->role != FL_STMT_INIT || !s->wsched ||
		    !init_hoists(s, u, d))
			return false;
		*init = s;
	}
	return true;
}

/* Whether write w and access a (schedule -> element) meet in different
 * iterations of loop d within one iteration of the loops around it. */
static bool carried(__isl_keep isl_pw_multi_aff *w,
		    __isl_keep isl_pw_multi_aff *a, int d)
{
	isl_map *r = same_element_in_run(w, a, d), *lt, *gt;
	isl_bool empty;

	lt = isl_map_order_lt(isl_map_copy(r), isl_dim_in, d, isl_dim_out, d);
	gt = isl_map_order_gt(r, isl_dim_in, d, isl_dim_out, d);
	r = isl_map_union(lt, gt);
	empty = isl_map_is_empty(r);
	isl_map_free(r);
	return empty != isl_bool_true;
}

static bool acc_taken(const acc_body *b, const fl_cg_stmt *st)
{
	for (int k = 0; k < b->plan.n; k++)
		if (b->plan.upd[k] == st || b->plan.init[k] == st)
			return true;
	return false;
}

/* Whether, with the accumulated sums kept in scalars, no dependence is
 * carried by loop `depth` among the body's remaining accesses. */
static bool no_carried(const acc_body *b, int depth)
{
	for (int i = 0; i < b->n; i++) {
		const fl_cg_stmt *w = b->st[i];
		int t = w->op->out[0], d = sched_pos(w, depth);

		if (acc_taken(b, w))
			continue;
		if (!w->wsched || d < 0)
			return false;
		for (int j = 0; j < b->n; j++) {
			const fl_cg_stmt *s = b->st[j];

			if (acc_taken(b, s) || !fl_cg_stmt_accesses(s, t))
				continue;
			if (sched_pos(s, depth) != d)
				return false;	/* not the same loops */
			if (s->op->out[0] == t &&
			    (!s->wsched || carried(w->wsched, s->wsched, d)))
				return false;
			for (int r = 0; r < s->ps->n_reads; r++)
				if (fl_cg_read_tensor(s->op,
						      &s->ps->reads[r]) == t &&
				    (!s->rsched[r] ||
				     carried(w->wsched, s->rsched[r], d)))
					return false;
		}
	}
	for (int i = 0; i < b->n; i++)	/* may-reads: unknown elements */
		for (int r = 0; r < b->st[i]->ps->n_reads; r++)
			if (!b->st[i]->rsched[r])
				return false;
	return true;
}

/* Fills b->plan for the innermost loop (depth d) with body `body`; the
 * number of accumulators. */
static int plan_accumulators(acc_body *b, __isl_keep isl_ast_node *body,
			     int d)
{
	b->n = b->plan.n = 0;
	if (d < 0 || !acc_collect_body(b, body))
		return 0;
	for (int i = 0; i < b->n && b->plan.n < FL_CG_ACC_MAX; i++) {
		fl_cg_stmt *init;

		if (!acc_candidate(b, i, d, &init))
			continue;
		b->plan.upd[b->plan.n] = b->st[i];
		b->plan.init[b->plan.n++] = init;
	}
	if (b->plan.n && !no_carried(b, d))
		b->plan.n = 0;
	return b->plan.n;
}

/* ---- what the printer does with each loop ----------------------------- */

/* OpenMP needs "iterator relop bound": isl's default for loops have it,
 * but check rather than emit a pragma the compiler rejects. */
bool fl_cg_canonical_cond(__isl_keep isl_ast_node *node)
{
	isl_ast_expr *cond = isl_ast_node_for_get_cond(node);
	isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
	isl_ast_expr *lhs = NULL;
	bool ok = false;

	if (isl_ast_expr_get_type(cond) == isl_ast_expr_op) {
		enum isl_ast_expr_op_type t = isl_ast_expr_op_get_type(cond);

		if (t == isl_ast_expr_op_le || t == isl_ast_expr_op_lt) {
			lhs = isl_ast_expr_op_get_arg(cond, 0);
			ok = isl_ast_expr_is_equal(lhs, it) == isl_bool_true;
		}
	}
	isl_ast_expr_free(lhs);
	isl_ast_expr_free(it);
	isl_ast_expr_free(cond);
	return ok;
}

static isl_bool find_for(__isl_keep isl_ast_node *node, void *user)
{
	if (isl_ast_node_get_type(node) != isl_ast_node_for)
		return isl_bool_true;
	*(bool *)user = true;
	return isl_bool_error;	/* found: stop */
}

/* Whether the body of for node `node` has no loop of its own. */
static bool innermost(__isl_keep isl_ast_node *node)
{
	isl_ast_node *body = isl_ast_node_for_get_body(node);
	bool inner = false;

	isl_ast_node_foreach_descendant_top_down(body, &find_for, &inner);
	isl_ast_node_free(body);
	return !inner;
}

static void decide_node(fl_cg_kernel *cg, __isl_keep isl_ast_node *node,
			bool in_parallel);

/* ---- collapse ----------------------------------------------------------- */

/* The trip count of for node `node` (keep) when its bounds are integer
 * constants and its step 1 -- a rectangular loop, as OpenMP's collapse
 * needs before 5.0 (gcc 10 and older reject an inner bound that depends
 * on an outer iterator); -1 otherwise. */
static long const_trip_count(__isl_keep isl_ast_node *node)
{
	isl_ast_expr *init = isl_ast_node_for_get_init(node);
	isl_ast_expr *cond = isl_ast_node_for_get_cond(node);
	isl_ast_expr *inc = isl_ast_node_for_get_inc(node);
	isl_ast_expr *hi = NULL;
	isl_val *lo_v = NULL, *hi_v = NULL, *inc_v = NULL;
	long n = -1;

	if (isl_ast_expr_get_type(cond) == isl_ast_expr_op &&
	    isl_ast_expr_op_get_n_arg(cond) == 2)
		hi = isl_ast_expr_op_get_arg(cond, 1);
	if (hi && isl_ast_expr_get_type(init) == isl_ast_expr_int &&
	    isl_ast_expr_get_type(hi) == isl_ast_expr_int &&
	    isl_ast_expr_get_type(inc) == isl_ast_expr_int) {
		lo_v = isl_ast_expr_get_val(init);
		hi_v = isl_ast_expr_get_val(hi);
		inc_v = isl_ast_expr_get_val(inc);
		if (isl_val_is_one(inc_v) == isl_bool_true)
			n = isl_val_get_num_si(hi_v) - isl_val_get_num_si(lo_v) +
			    (isl_ast_expr_op_get_type(cond) ==
			     isl_ast_expr_op_le);
	}
	isl_val_free(lo_v);
	isl_val_free(hi_v);
	isl_val_free(inc_v);
	isl_ast_expr_free(hi);
	isl_ast_expr_free(init);
	isl_ast_expr_free(cond);
	isl_ast_expr_free(inc);
	return n;
}

/* Whether some tile-local array or scalar is declared in l's body: a
 * declaration between two loops breaks the perfect nest collapse needs. */
static bool declares_locals(const fl_cg_kernel *cg, const fl_cg_loop *l)
{
	for (int t = 0; t < cg->g->n_tensors; t++)
		if (fl_cg_declared_in(&cg->arr[t], l))
			return true;
	return false;
}

static bool innermost(__isl_keep isl_ast_node *node);

/* When the parallel loop `node` (its record l) has fewer iterations than
 * four per core, its pragma also shares out the tile loops nested right
 * in it -- collapse(k) -- while they are coincident (no dependence
 * between any two of the collapsed iterations: the outer loop's members
 * are independent, and so are the inner one's for a fixed outer
 * iteration), rectangular, perfectly nested (the body is the next loop,
 * nothing declared between) and not innermost (an innermost loop keeps
 * its own simd or accumulators, which may not sit inside a collapsed
 * nest).  MICRO Fig. 1's 2 x 2 tiles, for one, become 4 chunks instead
 * of 2. */
static void plan_collapse(const fl_cg_kernel *cg, __isl_keep isl_ast_node *node,
			  fl_cg_loop *l)
{
	long total = const_trip_count(node), want = 4L * fl_machine_get()->cores;
	isl_ast_node *cur = isl_ast_node_copy(node);

	l->collapse = 1;
	while (total > 0 && total < want) {
		isl_ast_node *body = isl_ast_node_for_get_body(cur);
		fl_cg_loop *in = isl_ast_node_get_type(body) ==
				 isl_ast_node_for ? fl_cg_loop_of(body) : NULL;
		long n = in ? const_trip_count(body) : -1;

		if (!in || n <= 0 || !in->coincident || in->depth < 0 ||
		    in->depth >= cg->tile_end || declares_locals(cg,
		    fl_cg_loop_of(cur)) || innermost(body) ||
		    isl_ast_node_for_is_degenerate(body) != isl_bool_false) {
			isl_ast_node_free(body);
			break;
		}
		isl_ast_node_free(cur);
		cur = body;
		total *= n;
		l->collapse++;
	}
	isl_ast_node_free(cur);
}

/* Loop l keeps the sums of plan in scalars: its statements know their
 * accumulator. */
static void keep_plan(fl_cg_loop *l, const fl_cg_acc *plan)
{
	l->acc = malloc(sizeof *l->acc);
	if (!l->acc)
		return;		/* plain code is correct too */
	*l->acc = *plan;
	for (int k = 0; k < plan->n; k++) {
		plan->upd[k]->acc = k;
		if (plan->init[k])
			plan->init[k]->acc = k;
	}
}

/* Whether every accumulated update of plan writes an element that does
 * not move with loop `depth` either, and none has an init in the body:
 * the accumulators may then live across that loop too. */
static bool plan_invariant_in(const fl_cg_acc *plan, int depth)
{
	for (int k = 0; k < plan->n; k++) {
		const fl_cg_stmt *u = plan->upd[k];
		int d = sched_pos(u, depth);

		if (plan->init[k] || d < 0 || !invariant_in(u->wsched, d))
			return false;
	}
	return plan->n > 0;
}

/* The outer loop of an all-reduce band (l, node; not inside a parallel
 * loop): its accumulators go across the threads -- each thread sums its
 * iterations into a private copy and OpenMP combines the copies at the
 * end (reduction(+:), or max/min over partials that the NaN-skipping
 * update keeps free of NaN) -- either on the loop itself when it is
 * innermost, or over the one innermost loop it holds, which then keeps
 * "omp simd reduction" on the same accumulators.  true when planned. */
static bool plan_all_reduce(__isl_keep isl_ast_node *node, fl_cg_loop *l,
			    bool inner)
{
	isl_ast_node *body = isl_ast_node_for_get_body(node);
	isl_ast_node *in_body = NULL;
	fl_cg_loop *in = NULL;
	acc_body b;
	bool ok;

	if (inner) {
		ok = plan_accumulators(&b, body, l->depth) > 0;
	} else {
		in = isl_ast_node_get_type(body) == isl_ast_node_for ?
		     fl_cg_loop_of(body) : NULL;
		ok = in && innermost(body) && fl_cg_canonical_cond(body) &&
		     isl_ast_node_for_is_degenerate(body) == isl_bool_false;
		in_body = ok ? isl_ast_node_for_get_body(body) : NULL;
		ok = ok && plan_accumulators(&b, in_body, in->depth) > 0 &&
		     plan_invariant_in(&b.plan, l->depth) &&
		     no_carried(&b, l->depth);
	}
	isl_ast_node_free(in_body);
	isl_ast_node_free(body);
	if (!ok)
		return false;
	keep_plan(l, &b.plan);
	if (!l->acc)
		return false;
	l->acc_team = true;
	if (in)
		in->acc_simd = l->acc;
	return true;
}

/* ---- streamed stores ---------------------------------------------------- */

/* Whether tensor t is worth writing around the caches: an output of the
 * program that no op reads (nothing of this program would find it in a
 * cache), kept in main memory by this kernel, larger than the private
 * caches of all cores together (it would leave them before anyone read
 * it), with rows of whole 64-byte lines. */
static bool streamable_tensor(const fl_cg_kernel *cg, int t)
{
	const fl_graph *g = cg->g;
	const fl_tensor *x = &g->tensors[t];
	const fl_machine *m = fl_machine_get();
	int64_t n = fl_shape_numel(&x->shape);

	if (x->role != FL_ROLE_OUTPUT || cg->arr[t].local || cg->arr[t].reg ||
	    x->shape.rank < 1 ||
	    x->shape.dim[x->shape.rank - 1] % FL_STREAM_FLOATS != 0 ||
	    n * (int64_t)sizeof(float) < m->l2 * m->cores)
		return false;
	for (int o = 0; o < g->n_ops; o++)
		for (int i = 0; i < g->ops[o].n_in; i++)
			if (g->ops[o].in[i] == t)
				return false;
	return true;
}

/* Whether st writes consecutive elements in consecutive iterations of
 * loop c<depth>: the innermost index of its write is that iterator plus
 * terms of outer loops, and no other index involves it -- so a block of
 * iterations writes a block of the row. */
static bool writes_row_along(const fl_cg_stmt *st, int depth)
{
	int d = sched_pos(st, depth);
	isl_multi_aff *ma = d >= 0 ? sole_function(st->wsched) : NULL;
	isl_size n = ma ? isl_multi_aff_dim(ma, isl_dim_out) : -1;
	bool ok = n >= 1;

	for (int i = 0; ok && i < n; i++) {
		isl_aff *a = isl_multi_aff_get_at(ma, i);

		if (i < n - 1) {
			ok = isl_aff_involves_dims(a, isl_dim_in, (unsigned)d,
						   1) == isl_bool_false;
		} else {
			isl_val *c = isl_aff_get_coefficient_val(a, isl_dim_in,
								 d);

			ok = isl_val_is_one(c) == isl_bool_true;
			isl_val_free(c);
		}
		isl_aff_free(a);
	}
	isl_multi_aff_free(ma);
	return ok;
}

/* The statements directly in body (keep), at most max, into st; -1 when
 * something else is there (an if, a loop): a staged block must be
 * written whole in every iteration. */
static int direct_stmts(__isl_keep isl_ast_node *body, fl_cg_stmt **st,
			int max)
{
	isl_ast_node_list *list;
	isl_size n;
	int k = 0;

	if (isl_ast_node_get_type(body) == isl_ast_node_user) {
		st[0] = fl_cg_stmt_of(body);
		return st[0] ? 1 : -1;
	}
	if (isl_ast_node_get_type(body) != isl_ast_node_block)
		return -1;
	list = isl_ast_node_block_get_children(body);
	n = isl_ast_node_list_n_ast_node(list);
	for (int i = 0; i < n && k >= 0; i++) {
		isl_ast_node *c = isl_ast_node_list_get_at(list, i);

		if (isl_ast_node_get_type(c) != isl_ast_node_user || k == max ||
		    !(st[k] = fl_cg_stmt_of(c)))
			k = -1;
		else
			k++;
		isl_ast_node_free(c);
	}
	isl_ast_node_list_free(list);
	return k;
}

/* Whether for node `node` runs from 0 in steps of 1 over whole blocks. */
static bool whole_blocks(__isl_keep isl_ast_node *node)
{
	isl_ast_expr *init = isl_ast_node_for_get_init(node);
	isl_val *v = isl_ast_expr_get_type(init) == isl_ast_expr_int ?
		     isl_ast_expr_get_val(init) : NULL;
	long n = const_trip_count(node);
	bool ok = v && isl_val_is_zero(v) == isl_bool_true && n > 0 &&
		  n % FL_STREAM_FLOATS == 0;

	isl_val_free(v);
	isl_ast_expr_free(init);
	return ok;
}

/* The simd loop `node`, without accumulators, streams the one statement
 * that writes a streamable tensor along it, when no other statement of
 * the loop touches that tensor.  Why: a kernel that writes its output
 * with ordinary stores first reads every line of it from memory (write
 * allocate) and pushes the lines it needs out of the caches; measured on
 * layernorm (24 MiB, one AVX-512 core) 2.6 -> 1.7 ms. */
static void plan_stream(const fl_cg_kernel *cg, __isl_keep isl_ast_node *node,
			fl_cg_loop *l)
{
	isl_ast_node *body = isl_ast_node_for_get_body(node);
	fl_cg_stmt *st[32];
	int n = direct_stmts(body, st, 32);

	isl_ast_node_free(body);
	if (!whole_blocks(node))
		return;
	for (int i = 0; i < n && !l->stream; i++) {
		int t = st[i]->op->out[0], touching = 0;

		if (st[i]->acc >= 0 || !streamable_tensor(cg, t) ||
		    !writes_row_along(st[i], l->depth))
			continue;
		for (int j = 0; j < n; j++)
			touching += fl_cg_stmt_accesses(st[j], t);
		if (touching == 1) {
			l->stream = st[i];
			l->stream_trips = const_trip_count(node);
		}
	}
	/* one fence per thread of the enclosing parallel loop, not one per
	   streamed loop: each waits until the streamed lines have gone, and
	   per row that cost layernorm 20%.  That loop prints as a team
	   (print_c.c) unless it has accumulators: then each streamed loop
	   fences itself. */
	for (fl_cg_loop *up = l->parent; l->stream && up; up = up->parent)
		if (up->pragma) {
			up->stream_fence = !up->acc;
			l->stream_fence = !up->acc;	/* fenced above */
			break;
		}
}

/* Decides for node (keep), a for node inside `in_parallel` loops with a
 * pragma or not: the pragma on the outermost parallel loop, "omp simd" on
 * an innermost coincident one, accumulators for an innermost one
 * without a pragma, and streamed stores for a simd loop without them. */
static void decide_for(fl_cg_kernel *cg, __isl_keep isl_ast_node *node,
		       bool in_parallel)
{
	fl_cg_loop *l = fl_cg_loop_of(node);
	bool loop = isl_ast_node_for_is_degenerate(node) == isl_bool_false &&
		    fl_cg_canonical_cond(node);
	bool inner = loop && innermost(node);
	isl_ast_node *body = isl_ast_node_for_get_body(node);
	acc_body b;

	if (l && l->all_reduce && loop && !in_parallel &&
	    plan_all_reduce(node, l, inner)) {
		l->simd = inner;
		in_parallel = true;
	} else if (l) {
		l->pragma = l->parallel && loop && !in_parallel;
		l->simd = l->coincident && inner;
		if (!l->pragma && inner && !l->acc_simd &&
		    plan_accumulators(&b, body, l->depth))
			keep_plan(l, &b.plan);
		if (l->simd && !l->pragma && !l->acc && !l->acc_simd &&
		    !cg->cuda)
			plan_stream(cg, node, l);
		if (l->pragma && !inner)
			plan_collapse(cg, node, l);
		in_parallel = in_parallel || l->pragma;
	}
	decide_node(cg, body, in_parallel);
	isl_ast_node_free(body);
}

/* Walks the AST as the printer will: into if branches, block children
 * and the bodies of loops. */
static void decide_node(fl_cg_kernel *cg, __isl_keep isl_ast_node *node,
			bool in_parallel)
{
	isl_ast_node_list *list;
	isl_ast_node *c;
	isl_size n;

	switch (isl_ast_node_get_type(node)) {
	case isl_ast_node_for:
		decide_for(cg, node, in_parallel);
		break;
	case isl_ast_node_if:
		c = isl_ast_node_if_get_then_node(node);
		decide_node(cg, c, in_parallel);
		isl_ast_node_free(c);
		if (isl_ast_node_if_has_else_node(node) != isl_bool_true)
			break;
		c = isl_ast_node_if_get_else_node(node);
		decide_node(cg, c, in_parallel);
		isl_ast_node_free(c);
		break;
	case isl_ast_node_block:
		list = isl_ast_node_block_get_children(node);
		n = isl_ast_node_list_n_ast_node(list);
		for (int i = 0; i < n; i++) {
			c = isl_ast_node_list_get_at(list, i);
			decide_node(cg, c, in_parallel);
			isl_ast_node_free(c);
		}
		isl_ast_node_list_free(list);
		break;
	case isl_ast_node_mark:	/* none left after the build */
		c = isl_ast_node_mark_get_node(node);
		decide_node(cg, c, in_parallel);
		isl_ast_node_free(c);
		break;
	default:
		break;
	}
}

void fl_cg_decide_loops(fl_cg_kernel *cg, __isl_keep isl_ast_node *ast)
{
	decide_node(cg, ast, false);
}

/* ---- the AST ------------------------------------------------------------ */

isl_ast_node *fl_cg_build_ast(fl_cg_kernel *cg)
{
	isl_ast_build *b = isl_ast_build_alloc(cg->ctx);
	isl_schedule *piped = fl_cg_pipeline_rows(cg,
		isl_schedule_copy(cg->k->schedule));
	isl_schedule *s = fl_cg_split_contractions(cg,
		fl_cg_prepare_schedule(piped));
	isl_ast_node *ast;

	isl_schedule_free(piped);
	b = isl_ast_build_set_at_each_domain(b, &at_domain, cg);
	b = isl_ast_build_set_before_each_for(b, &before_for, cg);
	b = isl_ast_build_set_after_each_for(b, &after_for, cg);
	b = isl_ast_build_set_after_each_mark(b, &after_mark, cg);
	ast = isl_ast_build_node_from_schedule(b, s);
	isl_ast_build_free(b);
	if (!ast)
		fl_cg_fail(cg, "isl could not build the AST");
	return ast;
}

void fl_cg_annotations_free(fl_cg_kernel *cg)
{
	while (cg->stmts) {
		fl_cg_stmt *n = cg->stmts->next;

		stmt_free(cg->stmts);
		cg->stmts = n;
	}
	while (cg->loops) {
		fl_cg_loop *n = cg->loops->next;

		free(cg->loops->acc);
		fl_cg_contract_free(cg->loops->contract);
		fl_cg_split_free(cg->loops->split);
		free(cg->loops);
		cg->loops = n;
	}
	cg->cur = NULL;
}
