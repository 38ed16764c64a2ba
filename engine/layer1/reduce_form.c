/* Canonical reduction forms (DESIGN 1.3 step 4; APOLLO 4.1 after
 * PANAMERA): the schedule of a kernel whose nest ends in a reduction is
 * rewritten so that its loop nest has one of three shapes, the ones layer
 * 2 compares (R8) and the code generators map to hardware:
 *
 *   all-reduce  nothing kept: the update's dims form one band, in memory
 *               order, the outer ones flattened into one member when
 *               there are more than two (the innermost, contiguous one
 *               stays a member of its own, for vectors), under an
 *               "all-reduce" mark (the C backend runs the band as
 *               per-thread partial reductions combined at the end);
 *               init before it, the kernel's other statements on the
 *               (one-point) kept space after it;
 *   x-reduce    a dim is reduced outside the innermost kept one (a column
 *               sum): an outer band over the kept dims outside every
 *               reduced one and the first kept dim inside them split
 *               into one chunk per thread, then a sequence of the init
 *               (band: kept inner dims), the reduced nest (band: reduced
 *               dims, then the kept inner dims, innermost and coincident:
 *               a row of partial sums updated across the kept dim) and
 *               the statements on the kept space (band: kept inner dims);
 *   y-reduce    the innermost dim is reduced (a row reduction): the
 *               scheduler's tree is already canonical when the update's
 *               innermost schedule dimension is the innermost reduced
 *               dim; it is checked, nothing moves.
 *
 * The form itself comes from the shapes (layer1.c, reduce_form_of); here
 * it becomes a tree.  The rewrite applies to a kernel with one reduction
 * whose other statements all run either on the update's domain (the
 * elementwise producers feeding it) or on the init's (the kept space:
 * consumers of the reduced value); anything else keeps the scheduler's
 * tree and says why.  The rewritten tree is used only when every
 * dependence of the kernel (the model's validity: flow, anti and output)
 * goes forward in it, checked with isl on the schedule map.
 *
 * Needs: the model m and the scheduler's (or original) tree.  Gives: the
 * canonical tree or a copy of the given one, and the event text. */
#include <stdio.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/id.h>
#include <isl/map.h>
#include <isl/schedule_node.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include "layer1_impl.h"
#include "machine.h"

/* Where each statement of the kernel goes in the canonical tree. */
enum rf_place { RF_INIT, RF_NEST, RF_KEPT };

/* The dims of the reduction's input, as the canonical form orders them. */
typedef struct rf_dims {
	int rank;
	int n_out, out[FL_MAX_RANK];	/* kept, outside every reduced dim */
	int n_red, red[FL_MAX_RANK];	/* reduced */
	int n_in, in[FL_MAX_RANK];	/* kept, inside a reduced dim */
	int64_t ext[FL_MAX_RANK];
} rf_dims;

static bool is_reduce_op(fl_op_kind k)
{
	return k == FL_OP_REDUCE_SUM || k == FL_OP_REDUCE_MAX ||
	       k == FL_OP_REDUCE_MIN || k == FL_OP_REDUCE_PROD;
}

/* The last reduction op of m (its member index) and how many there are. */
static int last_reduction(const fl_l1_model *m, int *count)
{
	int last = -1;

	*count = 0;
	for (int i = 0; i < m->n_ops; i++)
		if (is_reduce_op(m->g->ops[m->ops[i]].kind)) {
			last = i;
			(*count)++;
		}
	return last;
}

/* Splits the input dims of reduction op `op`: a dim is reduced when the
 * output keeps it with extent 1 and the input has more. */
static void split_dims(const fl_graph *g, int op, rf_dims *d)
{
	const fl_shape *in = &g->tensors[g->ops[op].in[0]].shape;
	const fl_shape *out = &g->tensors[g->ops[op].out[0]].shape;

	memset(d, 0, sizeof *d);
	d->rank = in->rank;
	for (int i = 0; i < in->rank; i++) {
		d->ext[i] = in->dim[i];
		if (out->dim[i] == 1 && in->dim[i] > 1)
			d->red[d->n_red++] = i;
		else if (d->n_red == 0)
			d->out[d->n_out++] = i;
		else
			d->in[d->n_in++] = i;
	}
}

/* The statement of role `role` of m's member op `member` (a reduction:
 * its init or its update), or NULL. */
static const fl_poly_stmt *red_stmt(const fl_l1_model *m, int member,
				    fl_stmt_role role)
{
	const fl_poly_op *po = m->poly[member];

	for (int k = 0; k < po->n_stmts; k++)
		if (po->stmts[k].role == role)
			return &po->stmts[k];
	return NULL;
}

/* Whether statement domains a and b (kept) are the same set of points,
 * whatever their names. */
static bool same_points(__isl_keep isl_set *a, __isl_keep isl_set *b)
{
	isl_set *x = isl_set_reset_tuple_id(isl_set_copy(a));
	isl_set *y = isl_set_reset_tuple_id(isl_set_copy(b));
	bool eq = isl_set_is_equal(x, y) == isl_bool_true;

	isl_set_free(x);
	isl_set_free(y);
	return eq;
}

/* Places every statement of m (into place[]); false with why when one
 * runs neither on the nest nor on the kept space. */
static bool place_stmts(const fl_l1_model *m, const fl_poly_stmt *init,
			const fl_poly_stmt *upd, enum rf_place *place,
			char *why, size_t n)
{
	for (int s = 0; s < m->n_stmts; s++) {
		const fl_poly_stmt *ps = m->stmts[s].poly;

		if (ps == init)
			place[s] = RF_INIT;
		else if (same_points(ps->domain, upd->domain))
			place[s] = RF_NEST;
		else if (same_points(ps->domain, init->domain))
			place[s] = RF_KEPT;
		else {
			snprintf(why, n, "left as scheduled: %s runs neither "
				 "on the reduced nest nor on the kept space",
				 ps->name);
			return false;
		}
	}
	return true;
}

/* The function from the domain of `space` (taken, a set space) to the
 * dims dims[0..n-1], the last one divided (floor) by `split` when split
 * is above 1. */
static __isl_give isl_multi_aff *pick_dims(__isl_take isl_space *space,
					   const int *dims, int n,
					   int64_t split)
{
	isl_space *ms = isl_space_add_dims(isl_space_from_domain(
		isl_space_copy(space)), isl_dim_out, (unsigned)n);
	isl_multi_aff *ma = isl_multi_aff_zero(ms);
	isl_local_space *ls = isl_local_space_from_space(space);

	for (int i = 0; i < n; i++) {
		isl_aff *a = isl_aff_var_on_domain(isl_local_space_copy(ls),
						   isl_dim_set,
						   (unsigned)dims[i]);

		if (i == n - 1 && split > 1)
			a = isl_aff_floor(isl_aff_scale_down_ui(a,
							(unsigned)split));
		ma = isl_multi_aff_set_aff(ma, i, a);
	}
	isl_local_space_free(ls);
	return ma;
}

/* The function from the domain of `space` (taken) to two values: dims
 * dims[0..n-2] flattened into one row-major index (extents ext[]), and
 * dim dims[n-1] -- PANAMERA's flattening of an all-reduce, which keeps
 * the innermost (contiguous, vectorised) dim on its own. */
static __isl_give isl_multi_aff *flatten_dims(__isl_take isl_space *space,
					      const int *dims, int n,
					      const int64_t *ext)
{
	isl_space *ms = isl_space_add_dims(isl_space_from_domain(
		isl_space_copy(space)), isl_dim_out, 2);
	isl_multi_aff *ma = isl_multi_aff_zero(ms);
	isl_local_space *ls = isl_local_space_from_space(space);
	isl_aff *flat = isl_aff_zero_on_domain(isl_local_space_copy(ls));

	for (int i = 0; i < n - 1; i++) {
		flat = isl_aff_scale_val(flat, isl_val_int_from_si(
			isl_aff_get_ctx(flat), (long)ext[dims[i]]));
		flat = isl_aff_add(flat, isl_aff_var_on_domain(
			isl_local_space_copy(ls), isl_dim_set,
			(unsigned)dims[i]));
	}
	ma = isl_multi_aff_set_aff(ma, 0, flat);
	ma = isl_multi_aff_set_aff(ma, 1, isl_aff_var_on_domain(ls,
		isl_dim_set, (unsigned)dims[n - 1]));
	return ma;
}

/* The band of the statements of m placed in `which` (a mask over
 * enum rf_place) on dims[0..n-1] (the last split by `split`), or, with
 * flat_ext (the input's extents) and three dims or more, on the outer
 * ones flattened and the innermost one. */
static __isl_give isl_multi_union_pw_aff *band_of(const fl_l1_model *m,
	const enum rf_place *place, unsigned which, const int *dims, int n,
	int64_t split, const int64_t *flat_ext)
{
	isl_union_pw_multi_aff *u = isl_union_pw_multi_aff_empty(
		isl_space_params_alloc(m->ctx, 0));

	for (int s = 0; s < m->n_stmts; s++) {
		isl_set *dom = m->stmts[s].poly->domain;
		isl_multi_aff *ma;

		if (!(which & (1u << place[s])))
			continue;
		ma = flat_ext && n >= 3 ?
		     flatten_dims(isl_set_get_space(dom), dims, n, flat_ext) :
		     pick_dims(isl_set_get_space(dom), dims, n, split);
		u = isl_union_pw_multi_aff_add_pw_multi_aff(u,
			isl_pw_multi_aff_from_multi_aff(ma));
	}
	return isl_multi_union_pw_aff_from_union_pw_multi_aff(u);
}

/* The filter of the statements placed in `which`. */
static __isl_give isl_union_set *filter_of(const fl_l1_model *m,
					   const enum rf_place *place,
					   unsigned which)
{
	isl_union_set *u = isl_union_set_empty(
		isl_space_params_alloc(m->ctx, 0));

	for (int s = 0; s < m->n_stmts; s++)
		if (which & (1u << place[s]))
			u = isl_union_set_add_set(u,
				isl_set_universe(isl_set_get_space(
					m->stmts[s].poly->domain)));
	return u;
}

/* Inserts band mupa (taken) at node (a leaf or any node, taken), its
 * members from `coinc` on coincident, permutable; returns the band. */
static __isl_give isl_schedule_node *put_band(
	__isl_take isl_schedule_node *node,
	__isl_take isl_multi_union_pw_aff *mupa, int coinc)
{
	isl_size n = isl_multi_union_pw_aff_size(mupa);

	node = isl_schedule_node_insert_partial_schedule(node, mupa);
	node = isl_schedule_node_band_set_permutable(node, 1);
	for (int i = coinc; i < n; i++)
		node = isl_schedule_node_band_member_set_coincident(node, i, 1);
	return node;
}

/* At a band's leaf (node, taken): the statements of m placed in `which`
 * in program order, one filter each, when there are several (a producer
 * and the update at the same point of the band).  Returns the node at
 * the same place. */
static __isl_give isl_schedule_node *order_stmts(const fl_l1_model *m,
	__isl_take isl_schedule_node *node, const enum rf_place *place,
	enum rf_place which)
{
	isl_union_set_list *fl = isl_union_set_list_alloc(m->ctx, 2);
	int n = 0;

	for (int s = 0; s < m->n_stmts; s++)
		if (place[s] == which) {
			isl_set *dom = m->stmts[s].poly->domain;

			fl = isl_union_set_list_add(fl, isl_union_set_from_set(
				isl_set_universe(isl_set_get_space(dom))));
			n++;
		}
	if (n < 2) {
		isl_union_set_list_free(fl);
		return node;
	}
	return isl_schedule_node_insert_sequence(node, fl);
}

/* One child of the sequence at `node` (taken), holding the statements
 * placed in `which`: it gets band mupa (taken), its statements in
 * program order under it, all under an "all-reduce" mark when `mark`;
 * returns the sequence node. */
static __isl_give isl_schedule_node *fill_child(const fl_l1_model *m,
	__isl_take isl_schedule_node *node, int i, const enum rf_place *place,
	enum rf_place which, __isl_take isl_multi_union_pw_aff *mupa,
	int coinc, bool mark)
{
	node = isl_schedule_node_child(isl_schedule_node_child(node, i), 0);
	node = order_stmts(m, node, place, which);
	if (mupa)
		node = put_band(node, mupa, coinc);
	if (mark)
		node = isl_schedule_node_insert_mark(node,
			isl_id_alloc(isl_schedule_node_get_ctx(node),
				     FL_ALL_REDUCE_MARK, NULL));
	while (node && isl_schedule_node_get_type(node) !=
		       isl_schedule_node_sequence)
		node = isl_schedule_node_parent(node);
	return node;
}

/* The chunk of the first inner kept dim each thread takes in an x-reduce:
 * one chunk per core, a multiple of 16 floats (whole vectors), unless the
 * outer kept dims alone give every core work. */
static int64_t thread_chunk(const rf_dims *d, const fl_layer1_opts *o)
{
	const fl_machine *mach = o->machine ? o->machine : fl_machine_get();
	int64_t outer = 1, ext = d->ext[d->in[0]], cores = mach->cores;
	int64_t c;

	for (int i = 0; i < d->n_out; i++)
		outer *= d->ext[d->out[i]];
	if (cores <= 1 || outer >= 4 * cores)
		return ext;
	c = (ext + cores - 1) / cores;
	return (c + 15) / 16 * 16;
}

/* The canonical tree of an all-reduce or x-reduce (file comment). */
static __isl_give isl_schedule *canonical_tree(const fl_l1_model *m,
	const enum rf_place *place, const rf_dims *d, bool all,
	int64_t chunk)
{
	unsigned init = 1u << RF_INIT, nest = 1u << RF_NEST,
		 kept = 1u << RF_KEPT, every = init | nest | kept;
	int nest_dims[FL_MAX_RANK], outer_dims[FL_MAX_RANK], n_outer = 0;
	int64_t split = 1;
	isl_union_set_list *fl = isl_union_set_list_alloc(m->ctx, 3);
	isl_union_set *kept_set = filter_of(m, place, kept);
	bool has_kept = isl_union_set_is_empty(kept_set) == isl_bool_false;
	isl_schedule_node *node;
	isl_schedule *s;

	memcpy(nest_dims, d->red, (size_t)d->n_red * sizeof *nest_dims);
	memcpy(nest_dims + d->n_red, d->in,
	       (size_t)d->n_in * sizeof *nest_dims);
	memcpy(outer_dims, d->out, (size_t)d->n_out * sizeof *outer_dims);
	n_outer = d->n_out;
	if (!all && chunk < d->ext[d->in[0]]) {
		outer_dims[n_outer++] = d->in[0];
		split = chunk;
	}
	fl = isl_union_set_list_add(fl, filter_of(m, place, init));
	fl = isl_union_set_list_add(fl, filter_of(m, place, nest));
	if (has_kept)
		fl = isl_union_set_list_add(fl, kept_set);
	else
		isl_union_set_free(kept_set);
	s = isl_schedule_from_domain(isl_union_set_copy(m->domain));
	node = isl_schedule_node_child(isl_schedule_get_root(s), 0);
	isl_schedule_free(s);
	if (!all && n_outer > 0) {
		node = put_band(node, band_of(m, place, every, outer_dims,
					      n_outer, split, NULL), 0);
		node = isl_schedule_node_child(node, 0);
	}
	node = isl_schedule_node_insert_sequence(node, fl);
	if (all) {
		node = fill_child(m, node, 1, place, RF_NEST,
				  band_of(m, place, nest, nest_dims, d->n_red,
					  1, d->ext), d->n_red, true);
		if (has_kept)
			node = fill_child(m, node, 2, place, RF_KEPT, NULL,
					  0, false);
	} else {
		node = fill_child(m, node, 0, place, RF_INIT,
				  band_of(m, place, init, d->in, d->n_in, 1,
					  NULL), 0, false);
		node = fill_child(m, node, 1, place, RF_NEST,
				  band_of(m, place, nest, nest_dims,
					  d->n_red + d->n_in, 1, NULL),
				  d->n_red, false);
		if (has_kept)
			node = fill_child(m, node, 2, place, RF_KEPT,
					  band_of(m, place, kept, d->in,
						  d->n_in, 1, NULL), 0, false);
	}
	s = isl_schedule_node_get_schedule(node);
	isl_schedule_node_free(node);
	return s;
}

/* Whether every dependence of m goes forward in schedule s (keep): each
 * pair of the validity relation is ordered lexicographically earlier to
 * later by the schedule map. */
static bool respects_dependences(const fl_l1_model *m,
				 __isl_keep isl_schedule *s)
{
	isl_union_map *map = isl_schedule_get_map(s);
	isl_union_map *before = isl_union_map_lex_lt_union_map(
		isl_union_map_copy(map), map);
	isl_bool ok = isl_union_map_is_subset(m->validity, before);

	isl_union_map_free(before);
	return ok == isl_bool_true;
}

/* The innermost dimension of schedule map `map` (keep) that is not fixed
 * to one value (the positions of sequence children are), or -1. */
static int innermost_loop(__isl_keep isl_map *map)
{
	isl_size n = isl_map_dim(map, isl_dim_out);

	for (int i = n - 1; i >= 0; i--) {
		isl_val *v = isl_map_plain_get_val_if_fixed(map, isl_dim_out,
							    (unsigned)i);
		bool fixed = v && isl_val_is_nan(v) == isl_bool_false;

		isl_val_free(v);
		if (!fixed)
			return i;
	}
	return -1;
}

/* Whether the innermost loop of s (keep) runs the innermost input dim of
 * the update statement `upd`: a row reduction canonical as scheduled. */
static bool reduced_innermost(__isl_keep isl_schedule *s,
			      const fl_poly_stmt *upd)
{
	isl_union_map *um = isl_union_map_intersect_domain(
		isl_schedule_get_map(s),
		isl_union_set_from_set(isl_set_copy(upd->domain)));
	isl_map *map = isl_map_from_union_map(um);
	isl_size n_in = isl_map_dim(map, isl_dim_in);
	int pos = map ? innermost_loop(map) : -1;
	isl_map *eq;
	bool ok;

	if (n_in <= 0 || pos < 0) {
		isl_map_free(map);
		return false;
	}
	eq = isl_map_equate(isl_map_copy(map), isl_dim_in, n_in - 1,
			    isl_dim_out, pos);
	ok = isl_map_is_subset(map, eq) == isl_bool_true;
	isl_map_free(map);
	isl_map_free(eq);
	return ok;
}

/* "i0, i2" for dims[0..n-1] into buf. */
static const char *dim_names(const int *dims, int n, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%si%d",
				       i ? ", " : "", dims[i]);
	return buf;
}

/* What the rewrite moved, into out->why. */
static void describe(const fl_l1_model *m, const enum rf_place *place,
		     const rf_dims *d, bool all, int64_t chunk,
		     fl_l1_rform *out)
{
	char red[112], in[64], outer[64], threads[96];
	int n_nest = 0, n_kept = 0;

	for (int s = 0; s < m->n_stmts; s++) {
		n_nest += place[s] == RF_NEST;
		n_kept += place[s] == RF_KEPT;
	}
	dim_names(d->red, d->n_red, red, sizeof red);
	if (all && d->n_red >= 3) {	/* "(i0, i1) flattened, i2" */
		char outer_red[64];

		dim_names(d->red, d->n_red - 1, outer_red, sizeof outer_red);
		snprintf(red, sizeof red, "(%s) flattened, i%d", outer_red,
			 d->red[d->n_red - 1]);
	}
	dim_names(d->in, d->n_in, in, sizeof in);
	dim_names(d->out, d->n_out, outer, sizeof outer);
	if (!all && chunk < d->ext[d->in[0]])
		snprintf(threads, sizeof threads, "threads take %lld of i%d",
			 (long long)chunk, d->in[0]);
	else if (!all && d->n_out > 0)
		snprintf(threads, sizeof threads, "threads share %s", outer);
	else if (!all)
		snprintf(threads, sizeof threads, "one thread: i%d is one "
			 "vector's work", d->in[0]);
	if (all)
		snprintf(out->why, sizeof out->why, "one reduction band over "
			 "%s under an %s mark (per-thread partials combined at "
			 "the end); nest: %d statement%s; init before, %d "
			 "after; dependences hold", red, FL_ALL_REDUCE_MARK,
			 n_nest, n_nest == 1 ? "" : "s", n_kept);
	else
		snprintf(out->why, sizeof out->why, "moved reduced %s "
			 "outside kept %s (innermost, vectorised: a row of "
			 "partials); nest: %d statement%s; init before, %d "
			 "after; %s; dependences hold", red, in, n_nest,
			 n_nest == 1 ? "" : "s", n_kept, threads);
}

/* The checks before a rewrite: one reduction, a form that moves, every
 * statement placed.  false with out->why when the tree stays. */
static bool rewritable(const fl_l1_model *m, __isl_keep isl_schedule *s,
		       int member, int count, const rf_dims *d,
		       enum rf_place *place, fl_l1_rform *out)
{
	const fl_poly_stmt *init = red_stmt(m, member, FL_STMT_INIT);
	const fl_poly_stmt *upd = red_stmt(m, member, FL_STMT_UPDATE);

	if (!init || !upd) {
		snprintf(out->why, sizeof out->why, "left as scheduled: the "
			 "reduction has no init and update statements");
		return false;
	}
	if (out->form == FL_REDUCE_Y) {
		snprintf(out->why, sizeof out->why, reduced_innermost(s, upd) ?
			 "canonical as scheduled: the reduced dim runs "
			 "innermost; nothing moved" : "left as scheduled: "
			 "the reduced dim does not run innermost");
		return false;
	}
	if (count > 1) {
		snprintf(out->why, sizeof out->why, "left as scheduled: %d "
			 "reductions in one nest", count);
		return false;
	}
	if (out->form == FL_REDUCE_X && d->n_in == 0) {
		snprintf(out->why, sizeof out->why, "left as scheduled: no "
			 "kept dim inside the reduced ones");
		return false;
	}
	return place_stmts(m, init, upd, place, out->why, sizeof out->why);
}

__isl_give isl_schedule *fl_l1_reduce_canonical(const fl_l1_model *m,
	__isl_take isl_schedule *sched, fl_reduce_form form,
	const fl_layer1_opts *o, fl_l1_rform *out)
{
	enum rf_place place[m->n_stmts + 1];
	int count, member = last_reduction(m, &count);
	bool all = form == FL_REDUCE_ALL;
	isl_schedule *canon;
	int64_t chunk;
	rf_dims d;

	memset(out, 0, sizeof *out);
	out->form = form;
	if (form == FL_REDUCE_NONE || member < 0 || !sched)
		return sched;
	split_dims(m->g, m->ops[member], &d);
	if (!rewritable(m, sched, member, count, &d, place, out))
		return sched;
	chunk = all ? 0 : thread_chunk(&d, o);
	canon = canonical_tree(m, place, &d, all, chunk);
	if (!canon) {
		snprintf(out->why, sizeof out->why, "left as scheduled: isl "
			 "could not build the canonical tree");
		return sched;
	}
	if (!respects_dependences(m, canon)) {
		isl_schedule_free(canon);
		snprintf(out->why, sizeof out->why, "left as scheduled: the "
			 "canonical order would break a dependence of the "
			 "kernel");
		return sched;
	}
	isl_schedule_free(sched);
	describe(m, place, &d, all, chunk, out);
	out->moved = true;
	return canon;
}

__isl_give isl_union_pw_multi_aff *fl_l1_reduce_tiles(
	__isl_keep isl_schedule *canon)
{
	isl_schedule_node *node = isl_schedule_node_child(
		isl_schedule_get_root(canon), 0);
	isl_union_pw_multi_aff *i2t = NULL;

	if (node && isl_schedule_node_get_type(node) ==
		    isl_schedule_node_band)
		i2t = isl_union_pw_multi_aff_from_multi_union_pw_aff(
			isl_schedule_node_band_get_partial_schedule(node));
	isl_schedule_node_free(node);
	return i2t;
}
