/* Memory placement of a kernel's tensors (DESIGN 1.3 step 5): global
 * (inputs, outputs, anything read outside the kernel), tile-local (a
 * producer recomputed in each tile: a per-tile buffer sized by the
 * footprint box isl computes), or register (producer and consumer at the
 * same schedule point, one element per point).  Each tensor's reason
 * becomes the text of its "placed" event.
 *
 * The capacity of a tile's local memory (fl_layer1_opts.local_budget,
 * --local-budget) is not checked here but by the C backend
 * (engine/backend/prepare.c, fl_cg_fit_budget): only it knows which of
 * these placements it really allocates, and how big -- register
 * placements it prints as scalars take nothing, some tile-local ones it
 * must keep global anyway -- and its demotions are "placed" events of
 * the codegen pass.
 *
 * Ownership follows isl; every helper says what it takes and gives. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/fixed_box.h>
#include <isl/id.h>
#include <isl/ilp.h>
#include <isl/map.h>
#include <isl/schedule_node.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include "layer1_impl.h"

/* Whether s is empty (a failure counts as not empty).  __isl_keep. */
static bool is_empty(__isl_keep isl_union_set *s)
{
	return isl_union_set_is_empty(s) == isl_bool_true;
}

/* ---- placement --------------------------------------------------------------- */

/* What placement looks at for one kernel. */
typedef struct placer {
	const fl_l1_model *m;
	const fl_l1_tiling *t;
	isl_ctx *ctx;
	isl_schedule *s;	/* tiled (before extensions) or untiled tree */
	fl_error *err;
	int n_seen;		/* bands whose parallelism is known */
	isl_schedule_node *seen[32];
	bool seen_par[32];
	/* the prefix schedule below each band met so far, over every
	 * statement: computed once per band and kernel and reused for every
	 * tensor (rebuilding it per tensor and level made placement
	 * quadratic in the kernel's size) */
	int n_pre, cap_pre;
	isl_schedule_node **pre_node;	/* the band */
	isl_union_map **pre;		/* instance -> prefix below it */
} placer;

/* Whether band node b has a leading coincident member taking more than
 * one value for a fixed outer schedule: a real parallel loop, which is
 * where a backend puts its pragma (ISL_GUIDE 7). */
static bool band_runs_parallel(__isl_keep isl_schedule_node *b)
{
	int k = fl_band_leading_coincident(b);
	isl_union_set *dom = isl_schedule_node_get_domain(b);
	isl_union_map *pre = isl_schedule_node_get_prefix_schedule_union_map(b);
	isl_union_map *band = isl_union_map_from_multi_union_pw_aff(
		isl_schedule_node_band_get_partial_schedule(b));
	isl_map *pv;
	bool par = false;

	pre = isl_union_map_intersect_domain(pre, isl_union_set_copy(dom));
	band = isl_union_map_intersect_domain(band, dom);
	pv = isl_map_from_union_map(isl_union_map_apply_range(
		isl_union_map_reverse(pre), band));
	for (int d = 0; d < k && pv && !par; d++) {
		isl_pw_aff *ext = isl_pw_aff_sub(isl_map_dim_max(isl_map_copy(pv), d),
						 isl_map_dim_min(isl_map_copy(pv), d));
		isl_val *v = isl_pw_aff_max_val(ext);

		par = v && isl_val_is_pos(v) == isl_bool_true;
		isl_val_free(v);
	}
	isl_map_free(pv);
	return par;
}

/* Index of the only child of sequence/set `n` whose filter meets a, or
 * -1 when a meets several (or none). */
static int only_child_meeting(__isl_keep isl_schedule_node *n,
			      __isl_keep isl_union_set *a)
{
	isl_size k = isl_schedule_node_n_children(n);
	int which = -1, hits = 0;

	for (int i = 0; i < k; i++) {
		isl_schedule_node *c = isl_schedule_node_get_child(n, i);
		isl_union_set *x = isl_union_set_intersect(
			isl_schedule_node_filter_get_filter(c),
			isl_union_set_copy(a));

		if (!is_empty(x)) {
			hits++;
			which = i;
		}
		isl_union_set_free(x);
		isl_schedule_node_free(c);
	}
	return hits == 1 ? which : -1;
}

/* band_runs_parallel, remembered per band for the whole kernel. */
static bool runs_parallel(placer *P, __isl_keep isl_schedule_node *b)
{
	bool par;

	for (int i = 0; i < P->n_seen; i++)
		if (isl_schedule_node_is_equal(P->seen[i], b) == isl_bool_true)
			return P->seen_par[i];
	par = band_runs_parallel(b);
	if (P->n_seen < 32) {
		P->seen[P->n_seen] = isl_schedule_node_copy(b);
		P->seen_par[P->n_seen++] = par;
	}
	return par;
}

/* The prefix schedule (instance -> prefix) of the points just below
 * band b, over every statement, remembered per band for the whole kernel.
 * __isl_give (a copy); NULL when isl fails or out of memory. */
static isl_union_map *prefix_below(placer *P, __isl_keep isl_schedule_node *b)
{
	isl_schedule_node *below;
	isl_union_map *pre;

	for (int i = 0; i < P->n_pre; i++)
		if (isl_schedule_node_is_equal(P->pre_node[i], b) == isl_bool_true)
			return isl_union_map_copy(P->pre[i]);
	below = isl_schedule_node_get_child(b, 0);
	pre = isl_schedule_node_get_prefix_schedule_union_map(below);
	isl_schedule_node_free(below);
	if (!pre)
		return NULL;
	if (P->n_pre == P->cap_pre) {
		int cap = P->cap_pre ? 2 * P->cap_pre : 16;
		isl_schedule_node **nn = realloc(P->pre_node,
						 (size_t)cap * sizeof *nn);
		isl_union_map **pp = nn ? realloc(P->pre, (size_t)cap *
						  sizeof *pp) : NULL;

		if (nn)
			P->pre_node = nn;
		if (!pp)
			return pre;	/* not remembered: still correct */
		P->pre = pp;
		P->cap_pre = cap;
	}
	P->pre_node[P->n_pre] = isl_schedule_node_copy(b);
	P->pre[P->n_pre++] = isl_union_map_copy(pre);
	return pre;
}

/* The bands on the path from the root of s to the deepest node above
 * every instance of a, outermost first, into path (copies); returns
 * their number. */
static int bands_above(__isl_keep isl_schedule *s, __isl_keep isl_union_set *a,
		       isl_schedule_node **path, int max)
{
	isl_schedule_node *n = isl_schedule_get_root(s);
	int k = 0;

	while (n) {
		enum isl_schedule_node_type type = isl_schedule_node_get_type(n);
		int which = 0;

		if (type == isl_schedule_node_leaf)
			break;
		if (type == isl_schedule_node_sequence ||
		    type == isl_schedule_node_set) {
			which = only_child_meeting(n, a);
			if (which < 0)
				break;
		} else if (isl_schedule_node_n_children(n) != 1) {
			break;
		}
		if (type == isl_schedule_node_band && k < max)
			path[k++] = isl_schedule_node_copy(n);
		n = isl_schedule_node_child(n, which);
	}
	isl_schedule_node_free(n);
	return k;
}

/* Whether every delta of d (taken) is zero. */
static bool all_zero(__isl_take isl_union_set *d)
{
	isl_union_set *zero;
	isl_set *z;
	isl_size n;
	bool ok;

	if (is_empty(d)) {
		isl_union_set_free(d);
		return true;
	}
	z = isl_set_from_union_set(isl_union_set_universe(
		isl_union_set_copy(d)));
	n = isl_set_dim(z, isl_dim_set);
	for (int i = 0; i < n; i++)
		z = isl_set_fix_si(z, isl_dim_set, (unsigned)i, 0);
	zero = isl_union_set_from_set(z);
	ok = isl_union_set_is_subset(d, zero) == isl_bool_true;
	isl_union_set_free(d);
	isl_union_set_free(zero);
	return ok;
}

/* Whether every size of box is 1. */
static bool unit_box(__isl_keep isl_fixed_box *box)
{
	isl_multi_val *mv;
	isl_size n;
	bool ok = isl_fixed_box_is_valid(box) == isl_bool_true;

	if (!ok)
		return false;
	mv = isl_fixed_box_get_size(box);
	n = isl_multi_val_size(mv);
	for (int d = 0; d < n && ok; d++) {
		isl_val *v = isl_multi_val_get_at(mv, d);

		ok = isl_val_is_one(v) == isl_bool_true;
		isl_val_free(v);
	}
	isl_multi_val_free(mv);
	return ok && n >= 0;
}

/* The accesses of one point of the schedule prefix at `level` (taken,
 * instance -> prefix): 1 when one element, with each value read at the
 * point that wrote it; 0 when one element but a value crosses points; -1
 * when a point touches several elements. */
static int one_element_per_point(__isl_take isl_union_map *pre,
				 __isl_keep isl_union_map *acc,
				 __isl_keep isl_union_map *raw)
{
	isl_fixed_box *box = NULL;
	int rc = -1;

	if (fl_l1_box_of(isl_union_map_apply_range(
		    isl_union_map_reverse(isl_union_map_copy(pre)),
		    isl_union_map_copy(acc)), &box) == 0 && unit_box(box))
		rc = all_zero(isl_union_map_deltas(isl_union_map_apply_range(
			isl_union_map_apply_domain(isl_union_map_copy(raw),
						   isl_union_map_copy(pre)),
			isl_union_map_copy(pre))));
	isl_fixed_box_free(box);
	isl_union_map_free(pre);
	return rc;
}

/* Register placement: below some band enclosing every access of the
 * tensor, one point of the schedule prefix touches a single element and
 * each value is read at the point that wrote it (an accumulator across a
 * conv's inner loops qualifies); and a real parallel loop encloses that
 * level, so a scalar private to each thread is correct.  Levels are tried
 * from the deepest up: coarser points touch more elements. */
static bool is_register(placer *P, __isl_keep isl_union_set *a,
			__isl_keep isl_union_map *acc,
			__isl_keep isl_union_map *raw)
{
	isl_schedule_node *path[32];
	int n = bands_above(P->s, a, path, 32), found = -1, rc = 0;
	bool par = false;

	for (int L = n - 1; L >= 0 && found < 0 && rc >= 0; L--) {
		rc = one_element_per_point(isl_union_map_intersect_domain(
			prefix_below(P, path[L]), isl_union_set_copy(a)),
			acc, raw);
		if (rc == 1)
			found = L;
	}
	for (int L = 0; L <= found && !par; L++)
		par = runs_parallel(P, path[L]);
	for (int i = 0; i < n; i++)
		isl_schedule_node_free(path[i]);
	return par;
}

/* The fused entry of tensor `tensor`, or NULL. */
static const fl_l1_fused *fused_of(const fl_l1_tiling *t, int tensor)
{
	for (int i = 0; i < t->n_fused; i++)
		if (t->fused[i].tensor == tensor)
			return &t->fused[i];
	return NULL;
}

/* Copies box sizes into kt->box (rank entries). */
static void box_sizes(__isl_keep isl_fixed_box *box, fl_kernel_tensor *kt)
{
	isl_multi_val *mv = isl_fixed_box_get_size(box);

	for (int d = 0; d < kt->rank; d++) {
		isl_val *v = isl_multi_val_get_at(mv, d);

		kt->box[d] = v ? isl_val_get_num_si(v) : 0;
		isl_val_free(v);
	}
	isl_multi_val_free(mv);
}

/* Bytes of tensor t in its element type, INT64_MAX when that does not
 * fit (huge extents). */
static int64_t tensor_bytes(const fl_graph *g, int t)
{
	int64_t n = fl_shape_numel(&g->tensors[t].shape);
	int64_t size = fl_dtype_size(g->tensors[t].dtype);

	return n < 0 || n > INT64_MAX / size ? INT64_MAX : size * n;
}

/* Why tensor t lives in main memory because of its role or of another
 * kernel; false when it is an intermediate of this kernel only. */
static bool global_reason(const placer *P, int t, char *why, size_t n)
{
	const fl_graph *g = P->m->g;
	const fl_tensor *x = &g->tensors[t];
	bool mine = false;

	for (int i = 0; i < P->m->n_ops; i++)
		mine |= P->m->ops[i] == x->producer;
	switch (x->role) {
	case FL_ROLE_INPUT: snprintf(why, n, "graph input"); return true;
	case FL_ROLE_PARAM: snprintf(why, n, "parameter"); return true;
	case FL_ROLE_CONST: snprintf(why, n, "constant"); return true;
	case FL_ROLE_OUTPUT: snprintf(why, n, "graph output"); return true;
	default: break;
	}
	if (!mine) {
		snprintf(why, n, "produced by %s in another kernel",
			 x->producer >= 0 ? g->ops[x->producer].name : "?");
		return true;
	}
	if (P->m->leaves[t]) {
		snprintf(why, n, "also read by another kernel");
		return true;
	}
	return false;
}

/* Accesses of tensor t's array by the kernel's statements.  __isl_give. */
static isl_union_map *tensor_accesses(const fl_l1_model *m, int t)
{
	char arr[32];
	isl_union_map *acc = isl_union_map_union(
		isl_union_map_copy(m->reads), isl_union_map_copy(m->writes));
	isl_space *sp = isl_space_set_alloc(m->ctx, 0,
		(unsigned)m->g->tensors[t].shape.rank);

	sp = isl_space_set_tuple_name(sp, isl_dim_set,
				      fl_poly_array_name(t, arr, sizeof arr));
	return isl_union_map_intersect_range(acc,
		isl_union_set_from_set(isl_set_universe(sp)));
}

/* Places an intermediate of this kernel that was not fused. */
static int place_local(placer *P, fl_kernel_tensor *kt)
{
	const fl_l1_tiling *t = P->t;
	isl_union_map *acc = tensor_accesses(P->m, kt->tensor);
	isl_union_set *a = isl_union_map_domain(isl_union_map_copy(acc));
	isl_union_set *writers = isl_union_map_domain(isl_union_map_intersect(
		isl_union_map_copy(acc), isl_union_map_copy(P->m->writes)));
	isl_union_map *raw = isl_union_map_intersect_range(
		isl_union_map_intersect_domain(isl_union_map_copy(P->m->raw),
					       writers),
		isl_union_set_copy(a));
	bool in_tiles = t->tiled_dom &&
			isl_union_set_is_subset(a, t->tiled_dom) == isl_bool_true;
	char dims[64];

	kt->place = FL_PLACE_GLOBAL;
	if ((in_tiles || !t->tiled_dom) && is_register(P, a, acc, raw)) {
		kt->place = FL_PLACE_REGISTER;
		for (int d = 0; d < kt->rank; d++)
			kt->box[d] = 1;
		snprintf(kt->why, sizeof kt->why, "produced and consumed at "
			 "the same loop point: one scalar per thread");
	} else if (in_tiles) {
		isl_union_map *i2t = isl_union_map_intersect_domain(
			isl_union_map_from_union_pw_multi_aff(
				isl_union_pw_multi_aff_copy(t->inst2tile)),
			isl_union_set_copy(a));

		if (fl_l1_box_of(isl_union_map_apply_range(
			    isl_union_map_reverse(i2t), isl_union_map_copy(acc)),
			    &kt->box_isl) == 0 &&
		    isl_fixed_box_is_valid(kt->box_isl) == isl_bool_true) {
			kt->place = FL_PLACE_TILE_LOCAL;
			box_sizes(kt->box_isl, kt);
			snprintf(kt->why, sizeof kt->why, "produced and consumed "
				 "inside each tile: tile-local buffer of %s floats",
				 fl_l1_dims_text(kt->box, kt->rank, dims, sizeof dims));
		} else {
			kt->box_isl = isl_fixed_box_free(kt->box_isl);
			snprintf(kt->why, sizeof kt->why, "stays in main memory: "
				 "its per-tile footprint has no fixed-size box");
		}
	} else {
		snprintf(kt->why, sizeof kt->why, "stays in main memory: %s",
			 t->tiled_dom ? "it is produced outside the tiles "
					"(not fused)"
				      : "the kernel is not tiled");
	}
	isl_union_map_free(acc);
	isl_union_set_free(a);
	isl_union_map_free(raw);
	return 0;
}

/* Places tensor t (kt zeroed, tensor and flags set by the caller). */
static int place_one(placer *P, fl_kernel_tensor *kt)
{
	const fl_l1_fused *f = fused_of(P->t, kt->tensor);
	char dims[64];

	kt->rank = P->m->g->tensors[kt->tensor].shape.rank;
	if (global_reason(P, kt->tensor, kt->why, sizeof kt->why)) {
		kt->place = FL_PLACE_GLOBAL;
		return 0;
	}
	if (f) {
		kt->place = FL_PLACE_TILE_LOCAL;
		kt->box_isl = isl_fixed_box_copy(f->box);
		box_sizes(f->box, kt);
		snprintf(kt->why, sizeof kt->why, "recomputed in each tile: "
			 "tile-local buffer of %s floats, recompute %.2fx",
			 fl_l1_dims_text(kt->box, kt->rank, dims, sizeof dims),
			 f->factor);
	} else if (place_local(P, kt) < 0) {
		return -1;
	}
	if (kt->place != FL_PLACE_GLOBAL)
		kt->bytes_kept = tensor_bytes(P->m->g, kt->tensor);
	return 0;
}

/* Adds tensor t to the list (once), with its read/written flags. */
static void note_tensor(fl_kernel_tensor *list, int *n, int t, bool write)
{
	int i = 0;

	while (i < *n && list[i].tensor != t)
		i++;
	if (i == *n) {
		memset(&list[i], 0, sizeof list[i]);
		list[i].tensor = t;
		(*n)++;
	}
	if (write)
		list[i].written = true;
	else
		list[i].read = true;
}

/* Every tensor the kernel's ops read or write, in op order, once. */
static fl_kernel_tensor *kernel_tensors(const fl_l1_model *m, int *n)
{
	fl_kernel_tensor *list;
	int cap = 0;

	for (int i = 0; i < m->n_ops; i++)
		cap += m->g->ops[m->ops[i]].n_in + 1;
	list = calloc((size_t)cap + 1, sizeof *list);
	*n = 0;
	for (int i = 0; list && i < m->n_ops; i++) {
		const fl_op *op = &m->g->ops[m->ops[i]];

		for (int k = 0; k < op->n_in; k++)
			note_tensor(list, n, op->in[k], false);
		note_tensor(list, n, op->out[0], true);
	}
	return list;
}

int fl_l1_place(const fl_l1_model *m, const fl_l1_tiling *t,
		fl_kernel_tensor **out, int *n_out, fl_error *err)
{
	placer P;
	fl_kernel_tensor *list;
	int n, rc = 0;

	memset(&P, 0, sizeof P);
	P.m = m;
	P.t = t;
	P.ctx = m->ctx;
	P.s = t->tiled ? t->tiled : t->final;
	P.err = err;
	list = kernel_tensors(m, &n);
	if (!list) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int i = 0; i < n && rc == 0; i++)
		rc = place_one(&P, &list[i]);
	for (int i = 0; i < P.n_seen; i++)
		isl_schedule_node_free(P.seen[i]);
	for (int i = 0; i < P.n_pre; i++) {
		isl_schedule_node_free(P.pre_node[i]);
		isl_union_map_free(P.pre[i]);
	}
	free(P.pre_node);
	free(P.pre);
	if (rc < 0) {
		for (int j = 0; j < n; j++)
			isl_fixed_box_free(list[j].box_isl);
		free(list);
		return -1;
	}
	*out = list;
	*n_out = n;
	return 0;
}
