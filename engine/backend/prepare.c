/* Preparation of one kernel for the C backend (DESIGN 1.6; ISL_GUIDE 7):
 * everything decided about the kernel apart from the AST itself.
 *
 * Needs: a kernel of a program whose ops are primitive and described by
 * poly.c, with a schedule and, for tile-local or register tensors, the
 * tile coordinates of its instances (inst2tile) and layer 1's footprint
 * boxes.  Gives: the ops' descriptions; the schedule with private marks
 * for the AST build (FL_CG_PAR_MARK over every band whose loops may get
 * "#pragma omp parallel for" -- the bands layer 1 marked "parallel", or,
 * in a kernel without such marks, every band with a coincident first
 * member -- and FL_CG_BAND_MARK over every band, recording its coincident
 * members); the schedule depth below the tile band; per tensor whether
 * the kernel writes it and whether it tries to be tile-local, with its
 * box and box origin per tile (a register-placed tensor without a box
 * from layer 1 gets the box of its own accesses per tile).
 *
 * Legality: a tensor stays tile-local only while every access to it has
 * tile coordinates and falls inside its box (fl_cg_localize, called while
 * the AST is built) and all its accesses lie under one innermost tile
 * loop, whose body then declares it (its scope, fixed once the AST is
 * built); the data of gather and gather_elements and the output of
 * scatter_elements are accessed by a data-dependent index and always
 * stay global.  A tensor that breaks a rule is kept in global memory --
 * always correct -- by the next attempt, and the kernel's comment says
 * why; the printer drives the attempts until none is needed.  So is the
 * largest tile-local tensor while a tile's arrays together exceed the
 * budget (fl_cg_fit_budget).  A register placement becomes a scalar
 * when the settled AST shows one writer whose value every read takes at
 * the same schedule point, all in one loop body (settle_scalars). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/fixed_box.h>
#include <isl/id.h>
#include <isl/map.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include "codegen_impl.h"

/* ---- failures ---------------------------------------------------- */

void fl_cg_fail(fl_cg_kernel *cg, const char *what)
{
	const char *msg = isl_ctx_last_error_msg(cg->ctx);

	if (!cg->failed)
		fl_error_set(cg->err, "kernel %s: %s%s%s", cg->k->name, what,
			     msg ? ": " : "", msg ? msg : "");
	cg->failed = true;
}

/* The next attempt keeps t in global memory. */
void fl_cg_array_fail(fl_cg_kernel *cg, int t, const char *why)
{
	if (!cg->arr[t].failed)
		snprintf(cg->why[t], sizeof cg->why[t], "%s", why);
	cg->arr[t].failed = true;
}

/* ---- schedule preparation: parallel marks -------------------------- */

static bool is_mark_named(__isl_keep isl_schedule_node *node,
			  const char *name)
{
	isl_id *id;
	bool yes;

	if (isl_schedule_node_get_type(node) != isl_schedule_node_mark)
		return false;
	id = isl_schedule_node_mark_get_id(node);
	yes = id && strcmp(isl_id_get_name(id), name) == 0;
	isl_id_free(id);
	return yes;
}

static isl_bool find_parallel_mark(__isl_keep isl_schedule_node *node,
				   void *user)
{
	if (is_mark_named(node, "parallel")) {
		*(bool *)user = true;
		return isl_bool_error;	/* found: stop the walk */
	}
	return isl_bool_true;
}

/* Wraps `band` (taken, pointing at a band) in an "fl_par" mark when it
 * has coincident leading members; returns the node at the same place. */
static __isl_give isl_schedule_node *wrap_parallel(
	__isl_take isl_schedule_node *band)
{
	fl_cg_par_mark *pi;
	isl_id *id;
	int k = fl_band_leading_coincident(band);

	if (k == 0)
		return band;
	pi = malloc(sizeof *pi);
	if (!pi)
		return isl_schedule_node_free(band);
	pi->depth = isl_schedule_node_get_schedule_depth(band);
	pi->ncoinc = k;
	id = isl_id_alloc(isl_schedule_node_get_ctx(band), FL_CG_PAR_MARK, pi);
	id = isl_id_set_free_user(id, &free);
	return isl_schedule_node_insert_mark(band, id);
}

/* Wraps `band` (taken) in an "fl_band" mark recording its coincident
 * members; returns the node at the same place. */
static __isl_give isl_schedule_node *wrap_band(
	__isl_take isl_schedule_node *band)
{
	isl_size n = isl_schedule_node_band_n_member(band);
	fl_cg_band_mark *bi;
	isl_id *id;

	if (n <= 0 || n > FL_CG_BAND_MAX_MEMBERS)
		return band;
	bi = calloc(1, sizeof *bi);
	if (!bi)
		return isl_schedule_node_free(band);
	bi->depth = isl_schedule_node_get_schedule_depth(band);
	bi->n = n;
	for (int i = 0; i < n; i++)
		bi->coincident[i] =
			isl_schedule_node_band_member_get_coincident(band, i) ==
			isl_bool_true;
	id = isl_id_alloc(isl_schedule_node_get_ctx(band), FL_CG_BAND_MARK, bi);
	id = isl_id_set_free_user(id, &free);
	return isl_schedule_node_insert_mark(band, id);
}

/* Bottom-up rewrite: with layer-1 marks, each "parallel" mark is replaced
 * by an "fl_par" mark over the same band; without them, every band with a
 * coincident first member gets one. */
static __isl_give isl_schedule_node *prepare_node(
	__isl_take isl_schedule_node *node, void *user)
{
	bool use_marks = *(bool *)user;
	enum isl_schedule_node_type type = isl_schedule_node_get_type(node);

	if (use_marks && is_mark_named(node, "parallel")) {
		isl_schedule_node *child = isl_schedule_node_get_child(node, 0);
		bool band = isl_schedule_node_get_type(child) ==
			    isl_schedule_node_band;

		isl_schedule_node_free(child);
		if (!band)
			return node;
		node = isl_schedule_node_delete(node);
		return wrap_parallel(node);
	}
	if (!use_marks && type == isl_schedule_node_band)
		return wrap_parallel(node);
	return node;
}

/* Second pass: every band gets an "fl_band" mark right above it (under
 * its "fl_par" mark, if any). */
static __isl_give isl_schedule_node *mark_band(
	__isl_take isl_schedule_node *node, void *user)
{
	(void)user;
	if (isl_schedule_node_get_type(node) == isl_schedule_node_band)
		return wrap_band(node);
	return node;
}

__isl_give isl_schedule *fl_cg_prepare_schedule(__isl_keep isl_schedule *s)
{
	bool use_marks = false;
	isl_schedule *r;

	isl_schedule_foreach_schedule_node_top_down(s, &find_parallel_mark,
						    &use_marks);
	r = isl_schedule_map_schedule_node_bottom_up(isl_schedule_copy(s),
						     &prepare_node, &use_marks);
	return isl_schedule_map_schedule_node_bottom_up(r, &mark_band, NULL);
}

/* ---- the tile band ------------------------------------------------- */

typedef struct tile_search {
	const fl_kernel *k;
	int end;		/* -1 until found */
} tile_search;

/* A band is the tile band when the schedule up to and including it is in
 * one-to-one correspondence with the tile coordinates (inst2tile) of the
 * statements below it, whatever the tiling's scaling. */
static isl_bool find_tile_band(__isl_keep isl_schedule_node *node,
			       void *user)
{
	tile_search *ts = user;
	isl_schedule_node *child;
	isl_union_map *prefix, *i2t, *r;
	isl_bool sv, inj, empty;

	if (ts->end >= 0)
		return isl_bool_false;
	if (isl_schedule_node_get_type(node) != isl_schedule_node_band)
		return isl_bool_true;
	child = isl_schedule_node_get_child(node, 0);
	prefix = isl_schedule_node_get_prefix_schedule_union_map(child);
	i2t = isl_union_map_from_union_pw_multi_aff(
		isl_union_pw_multi_aff_copy(ts->k->inst2tile));
	i2t = isl_union_map_intersect_domain(i2t,
					     isl_schedule_node_get_domain(child));
	isl_schedule_node_free(child);
	r = isl_union_map_apply_range(isl_union_map_reverse(prefix),
				      fl_poly_anon_range(i2t));
	empty = isl_union_map_is_empty(r);
	sv = isl_union_map_is_single_valued(r);
	inj = isl_union_map_is_injective(r);
	isl_union_map_free(r);
	if (empty == isl_bool_false && sv == isl_bool_true &&
	    inj == isl_bool_true) {
		ts->end = isl_schedule_node_get_schedule_depth(node) +
			  isl_schedule_node_band_n_member(node);
		return isl_bool_false;
	}
	return isl_bool_true;
}

static isl_stat first_n_out(__isl_take isl_pw_multi_aff *pma, void *user)
{
	*(int *)user = isl_pw_multi_aff_dim(pma, isl_dim_out);
	isl_pw_multi_aff_free(pma);
	return isl_stat_error;	/* one is enough */
}

/* Schedule depth just below the tile band; when no band matches, the
 * tile band is taken to be the outermost one. */
static int tile_band_end(const fl_kernel *k)
{
	tile_search ts = {k, -1};
	int n_t = -1;

	if (!k->inst2tile)
		return -1;
	isl_schedule_foreach_schedule_node_top_down(k->schedule,
						    &find_tile_band, &ts);
	if (ts.end >= 0)
		return ts.end;
	isl_union_pw_multi_aff_foreach_pw_multi_aff(k->inst2tile,
						    &first_n_out, &n_t);
	return n_t;
}

/* ---- placement of this attempt ------------------------------------- */

int fl_cg_read_tensor(const fl_op *op, const fl_poly_read *r)
{
	return r->input < 0 ? op->out[0] : op->in[r->input];
}

/* Every exact access of the kernel's own statements to tensor t, as
 * instance -> T<t>.  __isl_give. */
static isl_union_map *accesses_to(const fl_cg_kernel *cg, int t)
{
	isl_union_map *acc = isl_union_map_empty(isl_space_params_alloc(cg->ctx,
									0));

	for (int i = 0; i < cg->k->n_ops; i++) {
		const fl_op *op = &cg->g->ops[cg->k->ops[i]];

		for (int s = 0; cg->poly[i] && s < cg->poly[i]->n_stmts; s++) {
			const fl_poly_stmt *ps = &cg->poly[i]->stmts[s];

			if (op->out[0] == t)
				acc = isl_union_map_add_map(acc,
					isl_map_copy(ps->write));
			for (int r = 0; r < ps->n_reads; r++)
				if (ps->reads[r].exact &&
				    fl_cg_read_tensor(op, &ps->reads[r]) == t)
					acc = isl_union_map_add_map(acc,
						isl_map_copy(ps->reads[r].access));
		}
	}
	return acc;
}

/* The per-tile box of tensor t over the statements of the schedule's
 * domain, for a tensor layer 1 kept off main memory without giving a
 * box (register placement: producer and consumer at the same point, so
 * the tile's own accesses are all there is).  NULL when there is none. */
static __isl_give isl_fixed_box *own_box(const fl_cg_kernel *cg, int t)
{
	isl_union_map *acc, *i2t, *tile2t;
	isl_fixed_box *box = NULL;
	isl_map *m;

	acc = isl_union_map_intersect_domain(accesses_to(cg, t),
		isl_schedule_get_domain(cg->k->schedule));
	i2t = fl_poly_anon_range(isl_union_map_from_union_pw_multi_aff(
		isl_union_pw_multi_aff_copy(cg->k->inst2tile)));
	tile2t = isl_union_map_apply_range(isl_union_map_reverse(i2t), acc);
	if (isl_union_map_n_map(tile2t) == 1) {
		m = isl_map_from_union_map(tile2t);
		box = isl_map_get_range_simple_fixed_box_hull(m);
		isl_map_free(m);
	} else {
		isl_union_map_free(tile2t);
	}
	return box;
}

/* Makes tensor t tile-local from box (keep): offset over the tile space
 * with its tuple id dropped, and the sizes. */
static void use_box(fl_cg_kernel *cg, int t, __isl_keep isl_fixed_box *box)
{
	fl_cg_array *a = &cg->arr[t];
	const fl_shape *sh = &cg->g->tensors[t].shape;
	isl_multi_val *size = isl_fixed_box_get_size(box);

	if (isl_multi_val_dim(size, isl_dim_set) != sh->rank) {
		isl_multi_val_free(size);
		snprintf(cg->why[t], sizeof cg->why[t], "footprint box rank "
			 "differs from the tensor's");
		return;
	}
	for (int d = 0; d < sh->rank; d++) {
		isl_val *v = isl_multi_val_get_at(size, d);

		a->size[d] = isl_val_get_num_si(v);
		isl_val_free(v);
	}
	isl_multi_val_free(size);
	a->rank = sh->rank;
	a->offset = isl_fixed_box_get_offset(box);
	a->offset = isl_multi_aff_reset_tuple_id(a->offset, isl_dim_in);
	a->local = a->offset != NULL;
}

/* Makes tensor t tile-local from its box (layer 1's, or for a register
 * placement one computed here), or leaves it global with the reason. */
static void setup_local(fl_cg_kernel *cg, int t, const fl_kernel_tensor *kt)
{
	isl_fixed_box *box;

	if (!cg->k->inst2tile) {
		snprintf(cg->why[t], sizeof cg->why[t], "%s placement in a "
			 "kernel without tile coordinates (inst2tile)",
			 fl_placement_name(kt->place));
		return;
	}
	cg->arr[t].want_reg = kt->place == FL_PLACE_REGISTER;
	if (kt->box_isl && isl_fixed_box_is_valid(kt->box_isl) == isl_bool_true) {
		use_box(cg, t, kt->box_isl);
		return;
	}
	box = own_box(cg, t);
	if (box && isl_fixed_box_is_valid(box) == isl_bool_true)
		use_box(cg, t, box);
	else
		snprintf(cg->why[t], sizeof cg->why[t], "%s placement without "
			 "a fixed footprint box", fl_placement_name(kt->place));
	isl_fixed_box_free(box);
}

/* Which tensors are written, and which can be tile-local this time. */
static void setup_arrays(fl_cg_kernel *cg)
{
	const fl_kernel *k = cg->k;

	for (int i = 0; i < k->n_ops; i++) {
		const fl_op *op = &cg->g->ops[k->ops[i]];

		cg->arr[op->out[0]].written = true;
		/* data read or written by a data-dependent index is not
		 * affine: it stays in the global array the index points in */
		if (op->kind == FL_OP_GATHER ||
		    op->kind == FL_OP_GATHER_ELEMENTS)
			cg->force_global[op->in[0]] = true;
		if (op->kind == FL_OP_SCATTER_ELEMENTS)
			cg->force_global[op->out[0]] = true;
	}
	for (int i = 0; i < k->n_tensors; i++) {
		const fl_kernel_tensor *kt = &k->tensors[i];
		int t = kt->tensor;

		if (t < 0 || t >= cg->g->n_tensors || kt->place == FL_PLACE_GLOBAL)
			continue;
		if (cg->g->tensors[t].dtype != FL_F32) {
			/* locals, registers and scratch are float arrays */
			snprintf(cg->why[t], sizeof cg->why[t], "%s tensors stay "
				 "in main memory",
				 fl_dtype_name(cg->g->tensors[t].dtype));
			continue;
		}
		if (cg->force_global[t]) {
			if (!cg->why[t][0])
				snprintf(cg->why[t], sizeof cg->why[t], "read "
					 "or written by a data-dependent index");
			continue;
		}
		setup_local(cg, t, kt);
	}
}

/* Instance (space inst, taken) -> tile coordinates, from inst2tile;
 * NULL when the statement has none. */
static __isl_give isl_pw_multi_aff *tile_of(const fl_cg_kernel *cg,
					    __isl_take isl_space *inst)
{
	isl_union_map *um;
	isl_bool empty;

	um = isl_union_map_from_union_pw_multi_aff(
		isl_union_pw_multi_aff_copy(cg->k->inst2tile));
	um = isl_union_map_intersect_domain(um,
		isl_union_set_from_set(isl_set_universe(inst)));
	empty = isl_union_map_is_empty(um);
	if (empty != isl_bool_false) {
		isl_union_map_free(um);
		return NULL;
	}
	return isl_pw_multi_aff_from_map(isl_map_from_union_map(um));
}

/* Whether every instance of dom (keep) has a local index inside the
 * box. */
static bool inside_box(const fl_cg_array *a, __isl_keep isl_set *dom,
		       __isl_keep isl_pw_multi_aff *local)
{
	isl_set *img, *box, *defined;
	isl_bool ok;

	defined = isl_pw_multi_aff_domain(isl_pw_multi_aff_copy(local));
	ok = isl_set_is_subset(dom, defined);
	isl_set_free(defined);
	if (ok != isl_bool_true)
		return false;
	img = isl_set_apply(isl_set_copy(dom),
			    isl_map_from_pw_multi_aff(
				    isl_pw_multi_aff_copy(local)));
	box = isl_set_universe(isl_set_get_space(img));
	for (int d = 0; d < a->rank; d++) {
		box = isl_set_lower_bound_si(box, isl_dim_set, (unsigned)d, 0);
		box = isl_set_upper_bound_si(box, isl_dim_set, (unsigned)d,
					     (int)(a->size[d] - 1));
	}
	ok = isl_set_is_subset(img, box);
	isl_set_free(img);
	isl_set_free(box);
	return ok == isl_bool_true;
}

/* access (instance -> T) minus the box origin of the instance's tile. */
__isl_give isl_pw_multi_aff *fl_cg_localize(fl_cg_kernel *cg, int t,
					    __isl_take isl_pw_multi_aff *pma,
					    __isl_keep isl_set *dom)
{
	fl_cg_array *a = &cg->arr[t];
	isl_pw_multi_aff *tile = tile_of(cg, isl_set_get_space(dom));
	isl_pw_multi_aff *off, *local;
	isl_id *arr_id;

	if (!tile) {
		fl_cg_array_fail(cg, t, "a statement accessing it has no "
				 "tile coordinates");
		return pma;
	}
	if (isl_pw_multi_aff_dim(tile, isl_dim_out) !=
	    isl_multi_aff_dim(a->offset, isl_dim_in)) {
		isl_pw_multi_aff_free(tile);
		fl_cg_array_fail(cg, t, "footprint box and inst2tile "
				 "disagree on the tile space");
		return pma;
	}
	tile = isl_pw_multi_aff_reset_tuple_id(tile, isl_dim_out);
	off = isl_pw_multi_aff_from_multi_aff(isl_multi_aff_copy(a->offset));
	off = isl_pw_multi_aff_pullback_pw_multi_aff(off, tile);
	arr_id = isl_pw_multi_aff_get_tuple_id(pma, isl_dim_out);
	off = isl_pw_multi_aff_set_tuple_id(off, isl_dim_out, arr_id);
	local = isl_pw_multi_aff_sub(isl_pw_multi_aff_copy(pma), off);
	if (!local || !inside_box(a, dom, local)) {
		isl_pw_multi_aff_free(local);
		fl_cg_array_fail(cg, t, "an access falls outside its "
				 "footprint box");
		return pma;
	}
	isl_pw_multi_aff_free(pma);
	if (a->rotate > 0) {	/* row r in row r % rotate */
		isl_pw_aff *row = isl_pw_multi_aff_get_pw_aff(local,
							      a->rotate_dim);

		row = isl_pw_aff_mod_val(row, isl_val_int_from_si(cg->ctx,
								  a->rotate));
		local = isl_pw_multi_aff_set_pw_aff(local, a->rotate_dim, row);
	}
	return local;
}

/* ---- scopes of tile-local arrays ------------------------------------ */

/* The innermost loop of the tile band (or an enclosing one) around l. */
static fl_cg_loop *tile_scope(fl_cg_loop *l, int tile_end)
{
	for (; l; l = l->parent)
		if (l->depth >= 0 && l->depth < tile_end)
			return l;
	return NULL;
}

static void scope_access(fl_cg_kernel *cg, const fl_cg_stmt *st, int t)
{
	fl_cg_array *a = &cg->arr[t];
	fl_cg_loop *s = tile_scope(st->loop, cg->tile_end);

	if (!a->local)
		return;
	if (!a->scoped) {
		a->scoped = true;
		a->scope = s;
	} else if (a->scope != s) {
		fl_cg_array_fail(cg, t, "its accesses lie under different "
				 "tile loops");
	}
}

/* Every tile-local array gets the loop whose body declares it. */
static void resolve_scopes(fl_cg_kernel *cg)
{
	for (const fl_cg_stmt *st = cg->stmts; st; st = st->next) {
		scope_access(cg, st, st->op->out[0]);
		for (int r = 0; r < st->ps->n_reads; r++)
			scope_access(cg, st, fl_cg_read_tensor(st->op,
							&st->ps->reads[r]));
	}
}

/* ---- register placement as scalars ----------------------------------- */

/* Schedule point -> element of an access (keep), tuple ids dropped so
 * that accesses of different statements compare. */
static __isl_give isl_map *point_access(__isl_keep isl_pw_multi_aff *pma)
{
	isl_map *m = isl_map_from_pw_multi_aff(isl_pw_multi_aff_copy(pma));

	m = isl_map_reset_tuple_id(m, isl_dim_in);
	return isl_map_reset_tuple_id(m, isl_dim_out);
}

/* Whether read access r (keep) reads, at every schedule point where it
 * runs, the element write access w (keep) writes at that same point. */
static bool reads_same_point(__isl_keep isl_pw_multi_aff *w,
			     __isl_keep isl_pw_multi_aff *r)
{
	isl_map *mw = point_access(w), *mr = point_access(r);
	isl_bool sub = isl_map_is_subset(mr, mw);

	isl_map_free(mw);
	isl_map_free(mr);
	return sub == isl_bool_true;
}

/* The write of t in loop l: its one occurrence there (with a schedule),
 * or NULL when there is none or more than one. */
static const fl_cg_stmt *write_in(const fl_cg_kernel *cg, int t,
				  const fl_cg_loop *l)
{
	const fl_cg_stmt *w = NULL;

	for (const fl_cg_stmt *st = cg->stmts; st; st = st->next) {
		if (st->loop != l || st->op->out[0] != t)
			continue;
		if (w || !st->wsched)
			return NULL;
		w = st;
	}
	return w;
}

/* Whether every read of t in loop l runs at a schedule point where w
 * runs and reads the element w wrote there. */
static bool reads_follow(const fl_cg_kernel *cg, int t, const fl_cg_loop *l,
			 const fl_cg_stmt *w)
{
	for (const fl_cg_stmt *st = cg->stmts; st; st = st->next) {
		if (st->loop != l)
			continue;
		for (int r = 0; r < st->ps->n_reads; r++) {
			if (fl_cg_read_tensor(st->op, &st->ps->reads[r]) != t)
				continue;
			if (st == w || !st->rsched[r] ||
			    !reads_same_point(w->wsched, st->rsched[r]))
				return false;
		}
	}
	return true;
}

/* The loops whose bodies can each declare a scalar replacing t, into
 * a->scalar_loop: every access of t lies in one of them, each holds one
 * occurrence of t's one writing statement (which does not read t: no
 * reduction), and every read there runs at a schedule point where that
 * write runs and reads the element it wrote -- so the write comes first
 * in the loop body (the schedule keeps the dependence) and the value
 * never crosses iterations.  Usually one innermost loop; a pipelined row
 * loop (pipeline_rows.c) prints as several, its first and last rows
 * separated, each with its own copy of the statements.  A NULL loop is
 * a kernel without loops around them.  false when some rule fails. */
static bool scalar_loops(const fl_cg_kernel *cg, int t, fl_cg_array *a)
{
	const fl_cg_stmt *writer = NULL;

	a->n_scalar_loops = 0;
	for (const fl_cg_stmt *st = cg->stmts; st; st = st->next) {
		bool seen = false;

		if (!fl_cg_stmt_accesses(st, t))
			continue;
		if (st->op->out[0] == t) {
			if (writer && writer->ps != st->ps)
				return false;
			writer = st;
		}
		for (int i = 0; i < a->n_scalar_loops; i++)
			seen |= a->scalar_loop[i] == st->loop;
		if (seen)
			continue;
		if (a->n_scalar_loops == FL_CG_SCALAR_LOOPS ||
		    (!st->loop && a->n_scalar_loops > 0))
			return false;
		a->scalar_loop[a->n_scalar_loops++] = st->loop;
	}
	if (!writer)
		return false;
	for (int i = 0; i < a->n_scalar_loops; i++) {
		const fl_cg_loop *l = a->scalar_loop[i];
		const fl_cg_stmt *w = write_in(cg, t, l);

		if (!w || !reads_follow(cg, t, l, w))
			return false;
	}
	return true;
}

/* Layer 1's register placements that hold as scalars become scalars; the
 * others stay per-tile arrays (correct, only bigger). */
static void settle_scalars(fl_cg_kernel *cg)
{
	for (int t = 0; t < cg->g->n_tensors; t++) {
		fl_cg_array *a = &cg->arr[t];

		if (a->local && a->used && a->want_reg &&
		    scalar_loops(cg, t, a)) {
			a->reg = true;
			a->scope = a->scalar_loop[0];
		} else {
			a->n_scalar_loops = 0;
		}
	}
}

bool fl_cg_declared_in(const fl_cg_array *a, const fl_cg_loop *l)
{
	if (!a->local || !a->used)
		return false;
	if (!a->reg)
		return a->scope == l;
	for (int i = 0; i < a->n_scalar_loops; i++)
		if (a->scalar_loop[i] == l)
			return true;
	return false;
}

/* ---- the capacity of a tile's local memory ----------------------------- */

/* Why here rather than in layer 1's placement (engine/layer1/place.c):
 * the budget bounds what the generated code allocates per tile, and only
 * the backend knows that -- which tile-local tensors stayed local after
 * its own legality checks, which register placements became scalars
 * (no space at all), and the box each remaining array really has (a
 * register placement the backend could not make a scalar gets its own
 * box here, of which layer 1 knew nothing).  A check in layer 1 would
 * count arrays that are never allocated and miss some that are.  Each
 * demotion reaches the event log as a "placed" decision of the codegen
 * pass (codegen_pass.c), like the backend's other demotions. */

static int64_t array_bytes(const fl_cg_array *a)
{
	int64_t n = 4;

	for (int d = 0; d < a->rank; d++) {
		int64_t e = fl_cg_extent(a, d);

		n = e > 0 && n <= INT64_MAX / e ? n * e : INT64_MAX;
	}
	return n;
}

/* "1.1 MiB" style, for the reasons. */
static const char *size_text(int64_t b, char *buf, size_t n)
{
	if (b >= (int64_t)1 << 20)
		snprintf(buf, n, "%.1f MiB", (double)b / (1 << 20));
	else if (b >= 1024)
		snprintf(buf, n, "%.1f KiB", (double)b / 1024);
	else
		snprintf(buf, n, "%lld B", (long long)b);
	return buf;
}

static bool counts_in_tile(const fl_cg_array *a)
{
	return a->local && a->used && !a->reg;
}

bool fl_cg_fit_budget(fl_cg_kernel *cg)
{
	int64_t need = 0, left;
	bool moved = false;
	char a[32], b[32], c[32];

	for (int t = 0; t < cg->g->n_tensors; t++)
		if (counts_in_tile(&cg->arr[t]))
			need = array_bytes(&cg->arr[t]) > INT64_MAX - need ?
			       INT64_MAX : need + array_bytes(&cg->arr[t]);
	left = need;
	while (left > cg->budget) {
		int big = -1;

		for (int t = 0; t < cg->g->n_tensors; t++)
			if (counts_in_tile(&cg->arr[t]) && !cg->force_global[t] &&
			    (big < 0 || array_bytes(&cg->arr[t]) >
					array_bytes(&cg->arr[big])))
				big = t;
		if (big < 0)
			break;
		cg->force_global[big] = true;
		snprintf(cg->why[big], sizeof cg->why[big], "the tile-local "
			 "buffers of one tile need %lld bytes (%s), over the "
			 "budget of %lld bytes (%s); this one, the largest left, "
			 "takes %s", (long long)need,
			 size_text(need, a, sizeof a), (long long)cg->budget,
			 size_text(cg->budget, b, sizeof b),
			 size_text(array_bytes(&cg->arr[big]), c, sizeof c));
		left -= array_bytes(&cg->arr[big]);
		moved = true;
	}
	return !moved;
}

/* ---- attempts -------------------------------------------------------- */

/* Forgets the previous attempt: its AST records and array decisions. */
static void reset_attempt(fl_cg_kernel *cg)
{
	cg->uses_bounds = false;
	cg->stream_t = -1;
	cg->block_t = -1;
	cg->stream_note[0] = '\0';
	fl_cg_annotations_free(cg);
	for (int t = 0; cg->arr && t < cg->g->n_tensors; t++) {
		isl_multi_aff_free(cg->arr[t].offset);
		memset(&cg->arr[t], 0, sizeof cg->arr[t]);
	}
}

void fl_cg_begin_attempt(fl_cg_kernel *cg)
{
	reset_attempt(cg);
	setup_arrays(cg);
}

/* CUDA: a tile-local array with no loop to declare it in would live at
 * function scope, across the kernel's launches, which share no on-chip
 * memory; it stays global. */
static void need_declaring_loops(fl_cg_kernel *cg)
{
	for (int t = 0; t < cg->g->n_tensors; t++) {
		const fl_cg_array *a = &cg->arr[t];

		if (a->local && a->used && !a->failed && !a->scope)
			fl_cg_array_fail(cg, t, "CUDA: no loop of the kernel "
					 "declares it, and a function-scope "
					 "array cannot outlive one launch");
	}
}

bool fl_cg_settle_placement(fl_cg_kernel *cg)
{
	bool settled = true;

	if (!cg->failed)
		resolve_scopes(cg);
	if (!cg->failed && cg->cuda)
		need_declaring_loops(cg);
	for (int t = 0; t < cg->g->n_tensors; t++)
		if (cg->arr[t].failed) {
			cg->force_global[t] = true;
			settled = false;
		}
	if (settled && !cg->failed)
		settle_scalars(cg);
	return settled;
}

/* ---- one kernel ------------------------------------------------------ */

void fl_cg_clear(fl_cg_kernel *cg)
{
	reset_attempt(cg);
	for (int i = 0; cg->poly && i < cg->k->n_ops; i++)
		fl_poly_op_free(cg->poly[i]);
	free(cg->poly);
	free(cg->arr);
	free(cg->force_global);
	free(cg->why);
	free(cg->range);
}

int fl_cg_init(fl_cg_kernel *cg, const fl_program *p, const fl_kernel *k,
	       fl_error *err)
{
	memset(cg, 0, sizeof *cg);
	cg->ctx = p->ctx;
	cg->g = p->graph;
	cg->k = k;
	cg->err = err;
	cg->stream_t = -1;
	cg->block_t = -1;
	isl_ctx_reset_error(p->ctx);	/* so a failure reports its own */
	cg->poly = calloc((size_t)k->n_ops + 1, sizeof *cg->poly);
	cg->arr = calloc((size_t)p->graph->n_tensors + 1, sizeof *cg->arr);
	cg->force_global = calloc((size_t)p->graph->n_tensors + 1, sizeof(bool));
	cg->why = calloc((size_t)p->graph->n_tensors + 1, sizeof *cg->why);
	cg->range = fl_value_ranges(p->graph);
	if (!cg->poly || !cg->arr || !cg->force_global || !cg->why ||
	    !cg->range) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int i = 0; i < k->n_ops; i++) {
		cg->poly[i] = fl_poly_describe(p->ctx, p->graph, k->ops[i], err);
		if (!cg->poly[i]) {
			fl_error_prefix(err, "kernel %s", k->name);
			return -1;
		}
	}
	cg->tile_end = tile_band_end(k);
	return 0;
}
