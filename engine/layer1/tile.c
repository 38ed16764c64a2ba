/* Tile, then fuse (MICRO 2020 Alg. 1-3; ISL_GUIDE 5, 6, 8).
 *
 * The scheduler (maximize coincidence) keeps producers that cannot share
 * a parallel band with their consumers in their own top-level loop nests.
 * We tile the outermost band of the live-out nest on its leading
 * coincident members (scale_tile_loops = shift_point_loops = 0: tile
 * coordinates are tile indices, point loops run over the original
 * iterators).  Then, for each producer op outside the tiles, from the last
 * to the first: the elements of its tensor that a tile reads (the tile's
 * upwards-exposed data, by the tiled statements and by the producers
 * already recomputed there) are mapped back to the instances writing them
 * (MICRO 2020 eq. 4-6); the producer is recomputed inside each tile
 * through an extension node grafted before the point band, as renamed
 * statements S<op>_<k>_r0[t.., i..] (tile coordinates first, each with a
 * band over its own iterators, in program order), and its original
 * instances are removed from the domain (ISL_GUIDE 6, steps 5, 7a, 8).
 *
 * A producer is not fused when
 *   - a consumer of it stays outside the tiles (its values are needed in
 *     full anyway: recomputing them would be silent redundant work);
 *   - its own nest has fewer parallel loops than the tiles (m > n);
 *   - its per-tile footprint has no fixed-size box (no tile-local buffer);
 *   - the tiles together compute more than max_recompute times the
 *     instances needed (the overlap of neighbouring tiles).
 *
 * Tile sizes come from the machine (tile_sizes.c: enough tiles for every
 * thread, whole rows for memory-bound kernels, micro-kernel tiles for
 * contractions); a member the footprint of some producer does not depend
 * on (a conv's output channels), among all but the two innermost, stays
 * whole, so that the producer is not recomputed once per tile along it.
 * opts->tile gives sizes for the innermost opts->n_tile tiled members.
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
#include <isl/options.h>
#include <isl/schedule_node.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include "events.h"
#include "layer1_impl.h"
#include "machine.h"

/* Everything one tile-then-fuse run works with. */
typedef struct tiler {
	const fl_l1_model *m;
	const fl_layer1_opts *o;
	fl_l1_tiling *t;
	isl_ctx *ctx;
	isl_schedule *sched;		/* the scheduler's tree */
	int lo;				/* live-out top-level child, -1: none */
	int n_children;
	isl_union_set **children;	/* top-level filters */
	isl_union_set *lo_dom;		/* instances of the live-out nest */
	int n_members, m_tiled;		/* band members, tiled members */
	int64_t extent[FL_MAX_RANK], lower[FL_MAX_RANK];
	isl_set *points;		/* band points of the nest */
	fl_l1_sizes sizes;		/* what tile_sizes.c chose */
	isl_union_map *band_map;	/* lo instance -> band point */
	isl_union_map *t2c;		/* tile -> instances run in it */
	isl_union_set *fused_dom;	/* original instances now recomputed */
	isl_map **t2s;			/* per statement: tile -> instances,
					   when fused */
	bool *member_whole;		/* per member: kept whole by default */
	bool producers;			/* some producer could be fused */
	fl_error *err;
} tiler;

/* ---- small helpers ------------------------------------------------------- */

void fl_l1_free_sets(isl_union_set **sets, int n)
{
	for (int i = 0; i < n; i++)
		isl_union_set_free(sets[i]);
	free(sets);
}

int fl_l1_top_children(__isl_keep isl_schedule *s, isl_union_set ***filters)
{
	isl_schedule_node *n = isl_schedule_node_child(isl_schedule_get_root(s), 0);
	enum isl_schedule_node_type type = isl_schedule_node_get_type(n);
	isl_size k = 0;

	*filters = NULL;
	if (type == isl_schedule_node_sequence || type == isl_schedule_node_set)
		k = isl_schedule_node_n_children(n);
	if (!n || k < 0 ||
	    (k > 0 && !(*filters = calloc((size_t)k, sizeof **filters)))) {
		isl_schedule_node_free(n);
		return -1;
	}
	for (int i = 0; i < k; i++) {
		isl_schedule_node *c = isl_schedule_node_get_child(n, i);

		(*filters)[i] = isl_schedule_node_filter_get_filter(c);
		isl_schedule_node_free(c);
	}
	isl_schedule_node_free(n);
	return k;
}

/* ---- bounded counting ---------------------------------------------------------
 *
 * isl_set_count_val enumerates the set row by row (every dimension but the
 * innermost), which never finishes on the sets of a [1e8, 1e8] tensor.
 * Counting therefore goes: a set equal to its bounding box counts as the
 * product of its extents (closed form, a few LPs whatever the size); any
 * other set is handed to isl only when its bounding box has at most
 * COUNT_ROWS_MAX rows; otherwise the count is "too big" and the caller
 * decides (the tile count keeps the bounding box's volume as an upper
 * bound, the recomputation factor is measured on a window of tiles). */
#define COUNT_ROWS_MAX 100000.0
#define COUNT_TOO_BIG (-2.0)
#define COUNT_WINDOW 16	/* tiles per dim when measuring recomputation */

/* The bounding box of s (kept): per dim [lo, hi] into lo/hi (at most
 * FL_MAX_RANK * 4 dims); its volume into *vol and its rows (the volume
 * over the innermost extent) into *rows.  0 when bounded and not empty,
 * 1 when empty, -1 when unbounded or isl fails. */
static int bounding_box(__isl_keep isl_set *s, int n, double *lo, double *hi,
			double *vol, double *rows)
{
	*vol = 1;
	*rows = 1;
	for (int d = 0; d < n; d++) {
		isl_val *a = isl_set_dim_min_val(isl_set_copy(s), d);
		isl_val *b = isl_set_dim_max_val(isl_set_copy(s), d);
		int rc = !a || !b ? -1 :
			 isl_val_is_int(a) != isl_bool_true ||
			 isl_val_is_int(b) != isl_bool_true ? -1 : 0;

		if (rc == -1 && a && b && (isl_val_is_neginfty(b) == isl_bool_true ||
					   isl_val_is_infty(a) == isl_bool_true))
			rc = 1;	/* empty */
		if (rc == 0) {
			lo[d] = isl_val_get_d(a);
			hi[d] = isl_val_get_d(b);
		}
		isl_val_free(a);
		isl_val_free(b);
		if (rc != 0)
			return rc;
		*vol *= hi[d] - lo[d] + 1;
		if (d < n - 1)
			*rows *= hi[d] - lo[d] + 1;
	}
	return 0;
}

/* Whether s (kept) is its bounding box [lo, hi]. */
static bool is_its_box(__isl_keep isl_set *s, int n, const double *lo,
		       const double *hi)
{
	isl_set *box = isl_set_universe(isl_set_get_space(s));
	bool eq;

	for (int d = 0; d < n; d++) {
		box = isl_set_lower_bound_val(box, isl_dim_set, (unsigned)d,
			isl_val_int_from_si(isl_set_get_ctx(s), (long)lo[d]));
		box = isl_set_upper_bound_val(box, isl_dim_set, (unsigned)d,
			isl_val_int_from_si(isl_set_get_ctx(s), (long)hi[d]));
	}
	eq = isl_set_is_equal(s, box) == isl_bool_true;
	isl_set_free(box);
	return eq;
}

/* Points of s (taken): exact, COUNT_TOO_BIG (bounding volume in *bound
 * when not NULL), or -1 when isl fails or s is unbounded. */
static double count_bounded(__isl_take isl_set *s, double *bound)
{
	isl_size n = isl_set_dim(s, isl_dim_set);
	double lo[64], hi[64], vol, rows, x = -1;
	int rc;

	if (bound)
		*bound = -1;
	if (n < 0 || n > 64 || isl_set_dim(s, isl_dim_param) != 0) {
		isl_set_free(s);
		return -1;
	}
	rc = bounding_box(s, n, lo, hi, &vol, &rows);
	if (rc == 1) {
		x = 0;
	} else if (rc == 0 && is_its_box(s, n, lo, hi)) {
		x = vol;
	} else if (rc == 0 && rows <= COUNT_ROWS_MAX) {
		isl_val *v = isl_set_count_val(s);	/* __isl_keep */

		x = v ? isl_val_get_d(v) : -1;
		isl_val_free(v);
	} else if (rc == 0) {
		x = COUNT_TOO_BIG;
		if (bound)
			*bound = vol;
	}
	isl_set_free(s);
	return x;
}

static isl_stat add_count(__isl_take isl_set *set, void *user)
{
	double *sum = user, bound, v = count_bounded(set, &bound);

	if (v == COUNT_TOO_BIG)
		v = bound;	/* an upper bound: the set's bounding box */
	if (v < 0)
		return isl_stat_error;
	*sum += v;
	return isl_stat_ok;
}

/* Number of points of us (kept); -1 on failure.  Closed form for boxes;
 * a huge set that is not a box counts as its bounding box. */
static double count_points(__isl_keep isl_union_set *us)
{
	double sum = 0;

	if (isl_union_set_foreach_set(us, add_count, &sum) < 0)
		return -1;
	return sum;
}

static bool is_empty(__isl_keep isl_union_set *s)
{
	return isl_union_set_is_empty(s) == isl_bool_true;
}

static bool is_empty_map(__isl_keep isl_union_map *m)
{
	return isl_union_map_is_empty(m) == isl_bool_true;
}

/* Instances of the statements of op `op` (model op index i).
 * __isl_give. */
static isl_union_set *op_domain(const fl_l1_model *m, int op)
{
	isl_union_set *d = isl_union_set_empty(isl_union_set_get_space(m->domain));

	for (int i = 0; i < m->n_stmts; i++)
		if (m->stmts[i].op == op)
			d = isl_union_set_add_set(d,
				isl_set_copy(m->stmts[i].poly->domain));
	return d;
}

static const char *op_name(const tiler *T, int op)
{
	return T->m->g->ops[op].name;
}

/* The node right under top-level child `child` of s (-1: under the
 * root), normally the nest's outermost band.  __isl_give. */
static isl_schedule_node *nest_top(__isl_keep isl_schedule *s, int child)
{
	isl_schedule_node *n = isl_schedule_node_child(isl_schedule_get_root(s), 0);

	if (child >= 0)
		n = isl_schedule_node_child(isl_schedule_node_child(n, child), 0);
	return n;
}

/* Parallel loops of top-level child `child`: the leading coincident
 * members of its outermost band, 0 when it has none. */
static int nest_parallelism(__isl_keep isl_schedule *s, int child)
{
	isl_schedule_node *n = nest_top(s, child);
	int k = 0;

	if (isl_schedule_node_get_type(n) == isl_schedule_node_band)
		k = fl_band_leading_coincident(n);
	isl_schedule_node_free(n);
	return k;
}

/* ---- steps ----------------------------------------------------------------- */

/* Appends a step with a snapshot of s and inst2tile (both kept). */
static int add_step(tiler *T, int kind, int op, bool done,
		    __isl_keep isl_schedule *s,
		    __isl_keep isl_union_pw_multi_aff *i2t, const char *reason)
{
	fl_l1_tiling *t = T->t;
	fl_l1_step *grown = realloc(t->steps, (size_t)(t->n_steps + 1) *
					      sizeof *grown);

	if (!grown) {
		fl_error_set(T->err, "out of memory");
		return -1;
	}
	t->steps = grown;
	grown = &t->steps[t->n_steps++];
	grown->kind = kind;
	grown->op = op;
	grown->done = done;
	snprintf(grown->reason, sizeof grown->reason, "%s", reason);
	grown->schedule = isl_schedule_copy(s);
	grown->inst2tile = isl_union_pw_multi_aff_copy(i2t);
	return 0;
}

void fl_l1_tiling_clear(fl_l1_tiling *t)
{
	for (int i = 0; i < t->n_steps; i++) {
		isl_schedule_free(t->steps[i].schedule);
		isl_union_pw_multi_aff_free(t->steps[i].inst2tile);
	}
	free(t->steps);
	for (int i = 0; i < t->n_fused; i++)
		isl_fixed_box_free(t->fused[i].box);
	free(t->fused);
	isl_schedule_free(t->tiled);
	isl_schedule_free(t->final);
	isl_union_pw_multi_aff_free(t->inst2tile);
	isl_union_set_free(t->tiled_dom);
	memset(t, 0, sizeof *t);
}

static void tiler_clear(tiler *T)
{
	isl_schedule_free(T->sched);
	if (T->children)
		fl_l1_free_sets(T->children, T->n_children);
	isl_union_set_free(T->lo_dom);
	isl_union_map_free(T->band_map);
	isl_set_free(T->points);
	isl_union_map_free(T->t2c);
	isl_union_set_free(T->fused_dom);
	if (T->t2s)
		for (int i = 0; i < T->m->n_stmts; i++)
			isl_map_free(T->t2s[i]);
	free(T->t2s);
	free(T->member_whole);
}

static int isl_fail(tiler *T, const char *what)
{
	const char *msg = isl_ctx_last_error_msg(T->ctx);

	fl_error_set(T->err, "layer 1: isl failed while %s%s%s", what,
		     msg ? ": " : "", msg ? msg : "");
	return -1;
}

/* ---- the live-out band ----------------------------------------------------- */

/* Lower bounds and extents of the first n dims of set (kept) into lower
 * and ext. */
static int set_extents(__isl_keep isl_set *set, int n, int64_t *lower,
		       int64_t *ext)
{
	for (int d = 0; d < n; d++) {
		isl_val *lo = isl_set_dim_min_val(isl_set_copy(set), d);
		isl_val *hi = isl_set_dim_max_val(isl_set_copy(set), d);
		bool ok = lo && hi && isl_val_is_int(lo) && isl_val_is_int(hi);

		lower[d] = ok ? isl_val_get_num_si(lo) : 0;
		ext[d] = ok ? isl_val_get_num_si(hi) - isl_val_get_num_si(lo) + 1
			 : 1;
		isl_val_free(lo);
		isl_val_free(hi);
	}
	return 0;
}

/* Reads the live-out nest's outermost band: members, leading parallel
 * members, their extents.  0: tileable; 1: not (why says so); -1: error. */
static int inspect_band(tiler *T, char *why, size_t n)
{
	isl_schedule_node *b = nest_top(T->sched, T->lo);
	isl_union_set *pts;

	if (!b)
		return isl_fail(T, "walking the schedule");
	if (isl_schedule_node_get_type(b) != isl_schedule_node_band) {
		snprintf(why, n, "not tiled: the live-out statements share no "
			 "loop band");
		isl_schedule_node_free(b);
		return 1;
	}
	T->n_members = isl_schedule_node_band_n_member(b);
	T->m_tiled = fl_band_leading_coincident(b);
	if (T->m_tiled > FL_MAX_RANK)
		T->m_tiled = FL_MAX_RANK;
	T->band_map = isl_union_map_from_multi_union_pw_aff(
		isl_schedule_node_band_get_partial_schedule(b));
	isl_schedule_node_free(b);
	T->band_map = isl_union_map_intersect_domain(T->band_map,
		isl_union_set_copy(T->lo_dom));
	if (T->m_tiled == 0) {
		snprintf(why, n, "not tiled: the outer band of the live-out "
			 "nest (%d member%s) has no parallel member",
			 T->n_members, T->n_members == 1 ? "" : "s");
		return 1;
	}
	pts = isl_union_set_apply(isl_union_set_copy(T->lo_dom),
				  isl_union_map_copy(T->band_map));
	T->points = pts ? isl_set_from_union_set(pts) : NULL;
	if (!T->points)
		return isl_fail(T, "reading the band");
	return set_extents(T->points, T->m_tiled, T->lower, T->extent);
}

/* { [b] -> [b'] : b and b' equal except in member d } over n members.
 * __isl_give. */
static isl_union_map *vary_member(isl_ctx *ctx, int n, int d)
{
	isl_space *sp = isl_space_set_alloc(ctx, 0, (unsigned)n);
	isl_map *m = isl_map_universe(isl_space_map_from_set(sp));

	for (int j = 0; j < n; j++)
		if (j != d)
			m = isl_map_equate(m, isl_dim_in, j, isl_dim_out, j);
	return isl_union_map_from_map(m);
}

/* Whether b2p (band point -> producer instances, kept) is the same for
 * every value of member d. */
static bool independent_of(const tiler *T, __isl_keep isl_union_map *b2p,
			   int d)
{
	isl_union_map *moved = isl_union_map_apply_range(
		vary_member(T->ctx, T->n_members, d), isl_union_map_copy(b2p));
	isl_bool sub;

	moved = isl_union_map_intersect_domain(moved,
		isl_union_map_domain(isl_union_map_copy(b2p)));
	sub = isl_union_map_is_subset(moved, b2p);
	isl_union_map_free(moved);
	return sub == isl_bool_true;
}

/* The fewest parallel loops among the top-level nests holding dom. */
static int parallelism_of(const tiler *T, __isl_keep isl_union_set *dom)
{
	int n = 1 << 20;

	for (int i = 0; i < T->n_children; i++) {
		isl_union_set *x = isl_union_set_intersect(
			isl_union_set_copy(T->children[i]),
			isl_union_set_copy(dom));
		int k;

		if (!is_empty(x)) {
			k = nest_parallelism(T->sched, i);
			n = k < n ? k : n;
		}
		isl_union_set_free(x);
	}
	return n == 1 << 20 ? 0 : n;
}

/* Marks the outer tiled members that the footprint of some direct
 * producer op (outside the nest, read by it) does not depend on. */
static int find_whole_members(tiler *T)
{
	const fl_l1_model *m = T->m;
	isl_union_map *b2i = isl_union_map_reverse(
		isl_union_map_copy(T->band_map));

	T->member_whole = calloc(FL_MAX_RANK, sizeof *T->member_whole);
	if (!T->member_whole || !b2i) {
		isl_union_map_free(b2i);
		return -1;
	}
	for (int i = 0; i < m->n_ops; i++) {
		isl_union_set *dom = op_domain(m, m->ops[i]);
		isl_union_map *raw, *b2p;

		/* a producer that cannot fuse (m > n) must not cost
		 * parallelism */
		if (parallelism_of(T, dom) < T->m_tiled) {
			isl_union_set_free(dom);
			continue;
		}
		raw = isl_union_map_intersect_domain(
			isl_union_map_copy(m->raw), dom);
		raw = isl_union_map_subtract_domain(raw,
			isl_union_set_copy(T->lo_dom));
		raw = isl_union_map_intersect_range(raw,
			isl_union_set_copy(T->lo_dom));
		b2p = isl_union_map_apply_range(isl_union_map_copy(b2i),
						isl_union_map_reverse(raw));
		T->producers |= !is_empty_map(b2p);
		if (!is_empty_map(b2p))
			for (int d = 0; d + 2 < T->m_tiled; d++)
				T->member_whole[d] |= independent_of(T, b2p, d);
		isl_union_map_free(b2p);
	}
	isl_union_map_free(b2i);
	return 0;
}

/* Tile sizes from the machine (tile_sizes.c), or --tile. */
static int choose_sizes(tiler *T)
{
	fl_l1_band b = {T->m, T->lo_dom, T->band_map, T->points, T->n_members,
			T->m_tiled, {0}, {0}, T->member_whole, T->producers};
	fl_l1_tiling *t = T->t;

	memcpy(b.lower, T->lower, sizeof b.lower);
	memcpy(b.extent, T->extent, sizeof b.extent);
	if (fl_l1_choose_sizes(&b, T->o, &T->sizes, T->err) < 0)
		return -1;
	memcpy(t->tile, T->sizes.tile, sizeof t->tile);
	t->n_tile = T->m_tiled;
	t->kind = T->sizes.kind;
	t->tile_m = T->sizes.tile_m;
	t->tile_n = T->sizes.tile_n;
	t->bytes = T->sizes.bytes;
	return 0;
}

/* ---- tiling ---------------------------------------------------------------- */

/* Tiles the live-out band (split after the tiled members first) with
 * scale_tile_loops = shift_point_loops = 0, so tile coordinates are tile
 * indices and point loops run over the original iterators.  Sets the
 * tiled schedule, inst2tile and the tiled instances. */
static int tile_band(tiler *T)
{
	fl_l1_tiling *t = T->t;
	isl_schedule_node *b = nest_top(T->sched, T->lo);
	int scale = isl_options_get_tile_scale_tile_loops(T->ctx);
	int shift = isl_options_get_tile_shift_point_loops(T->ctx);
	isl_val_list *sizes = isl_val_list_alloc(T->ctx, T->m_tiled);

	if (T->n_members > T->m_tiled)
		b = isl_schedule_node_band_split(b, T->m_tiled);
	for (int d = 0; d < T->m_tiled; d++)
		sizes = isl_val_list_add(sizes,
			isl_val_int_from_si(T->ctx, (long)t->tile[d]));
	isl_options_set_tile_scale_tile_loops(T->ctx, 0);
	isl_options_set_tile_shift_point_loops(T->ctx, 0);
	b = isl_schedule_node_band_tile(b, isl_multi_val_from_val_list(
		isl_schedule_node_band_get_space(b), sizes));
	isl_options_set_tile_scale_tile_loops(T->ctx, scale);
	isl_options_set_tile_shift_point_loops(T->ctx, shift);
	b = isl_schedule_node_child(b, 0);
	t->inst2tile = isl_schedule_node_get_prefix_schedule_union_pw_multi_aff(b);
	t->tiled_dom = isl_schedule_node_get_domain(b);
	t->tiled = isl_schedule_node_get_schedule(b);
	isl_schedule_node_free(b);
	if (!t->inst2tile || !t->tiled_dom || !t->tiled)
		return isl_fail(T, "tiling");
	return 0;
}

/* "a x b x c" of n sizes into buf. */
const char *fl_l1_dims_text(const int64_t *v, int n, char *buf, size_t len)
{
	int at = 0;

	buf[0] = '\0';
	for (int d = 0; d < n && at >= 0 && (size_t)at < len; d++)
		at += snprintf(buf + at, len - (size_t)at, "%s%lld",
			       d ? " x " : "", (long long)v[d]);
	return buf;
}

/* The last op with a live-out statement: what the tiling event names. */
static int main_liveout_op(const fl_l1_model *m)
{
	int op = m->ops[m->n_ops - 1];

	for (int i = 0; i < m->n_stmts; i++)
		if (m->stmts[i].live_out)
			op = m->stmts[i].op;
	return op;
}

/* The tiling decision's text: the sizes, the tiles for the threads, why
 * (tile_sizes.c), and the members kept whole for the producers. */
static void tiled_reason(tiler *T, double n_tiles, char *buf, size_t n)
{
	const fl_layer1_opts *o = T->o;
	const struct fl_machine *mach = o->machine ? o->machine
						   : fl_machine_get();
	char sizes[96], whole[48] = "";
	int at = 0;

	for (int d = 0; d + 2 < T->m_tiled; d++)
		if (T->member_whole[d] && T->t->tile[d] == T->extent[d] &&
		    T->extent[d] > 1 && T->sizes.kind != FL_TILE_USER &&
		    at >= 0 && (size_t)at < sizeof whole)
			at += snprintf(whole + at, sizeof whole - (size_t)at,
				       "%s%d", at ? ", " : "; member ", d);
	/* an op name long enough to cut the text costs its tail only */
	if (snprintf(buf, n, "tiled %s (%d of %d band members "
		 "parallel) by %s: %.0f tile%s for %d thread%s; %s%s%s",
		 op_name(T, main_liveout_op(T->m)), T->m_tiled, T->n_members,
		 fl_l1_dims_text(T->t->tile, T->m_tiled, sizes, sizeof sizes),
		 n_tiles, n_tiles == 1 ? "" : "s", mach->cores,
		 mach->cores == 1 ? "" : "s", T->sizes.why, whole,
		 at ? " kept whole for its producers" : "") >= (int)n && n > 4)
		memcpy(buf + n - 4, "...", 4);
}

/* Number of tiles: points of the tile space the instances reach. */
static double count_tiles(const fl_l1_tiling *t)
{
	isl_union_set *tiles = isl_union_set_apply(
		isl_union_set_copy(t->tiled_dom),
		isl_union_map_from_union_pw_multi_aff(
			isl_union_pw_multi_aff_copy(t->inst2tile)));
	double n = count_points(tiles);

	isl_union_set_free(tiles);
	return n;
}

/* ---- fusion ---------------------------------------------------------------- */

/* One producer op considered for fusion into the tiles. */
typedef struct candidate {
	int op;
	isl_union_set *dom;	/* its instances */
	isl_union_map *t2p;	/* tile -> its instances each tile needs */
	isl_fixed_box *box;	/* tile -> footprint box of its tensor */
	double factor;		/* recomputation */
	char why[224];
} candidate;

static void candidate_clear(candidate *c)
{
	isl_union_set_free(c->dom);
	isl_union_map_free(c->t2p);
	isl_fixed_box_free(c->box);
}

/* The op owning the first instance set of us (kept), -1 if none. */
static isl_stat first_set(__isl_take isl_set *set, void *user)
{
	const char **name = user;

	if (!*name)
		*name = isl_set_get_tuple_name(set);
	isl_set_free(set);
	return isl_stat_ok;
}

static const char *some_op_of(const tiler *T, __isl_keep isl_union_set *us)
{
	const char *name = NULL;
	const fl_l1_stmt *s;

	isl_union_set_foreach_set(us, first_set, &name);
	s = name ? fl_l1_model_stmt_of(T->m, name) : NULL;
	return s ? op_name(T, s->op) : "?";
}

/* Whether every consumer of c's instances inside the kernel runs in the
 * tiles (or is itself recomputed there); else names one in c->why. */
static int consumers_inside(tiler *T, candidate *c, bool *any)
{
	isl_union_map *raw = isl_union_map_intersect_domain(
		isl_union_map_copy(T->m->raw), isl_union_set_copy(c->dom));
	isl_union_set *sinks = isl_union_set_subtract(isl_union_map_range(raw),
		isl_union_set_copy(c->dom));
	isl_union_set *out;
	bool ok;

	*any = !is_empty(sinks);
	out = isl_union_set_subtract(isl_union_set_copy(sinks),
		isl_union_set_union(isl_union_set_copy(T->t->tiled_dom),
				    isl_union_set_copy(T->fused_dom)));
	isl_union_set_free(sinks);
	if (!out)
		return isl_fail(T, "finding consumers");
	ok = is_empty(out);
	if (!ok)
		snprintf(c->why, sizeof c->why, "not fused: %s reads it outside "
			 "the tiles, so its values are needed whole",
			 some_op_of(T, out));
	isl_union_set_free(out);
	return ok;
}

/* The fixed-size box hull of the range of u (taken, one map: domain
 * space -> one array); -1 when isl fails. */
int fl_l1_box_of(__isl_take isl_union_map *u, isl_fixed_box **box)
{
	isl_map *m = isl_map_from_union_map(u);

	*box = m ? isl_map_get_range_simple_fixed_box_hull(m) : NULL;
	isl_map_free(m);
	return *box ? 0 : -1;
}

static int box_of(tiler *T, __isl_take isl_union_map *u, isl_fixed_box **box)
{
	return fl_l1_box_of(u, box) == 0 ? 0
	       : isl_fail(T, "computing a footprint box");
}

/* tile -> c's instances each tile needs: the upwards-exposed elements of
 * c's tensor read in the tile (by the tiled statements and the producers
 * already recomputed there), back to the instances writing them; and the
 * per-tile footprint box of the tensor. */
static int needed_instances(tiler *T, candidate *c)
{
	isl_union_map *w = isl_union_map_intersect_domain(
		isl_union_map_copy(T->m->writes), isl_union_set_copy(c->dom));
	isl_union_set *arr = isl_union_set_universe(
		isl_union_map_range(isl_union_map_copy(w)));
	isl_union_map *e = isl_union_map_apply_range(
		isl_union_map_copy(T->t2c),
		isl_union_map_intersect_range(isl_union_map_copy(T->m->reads),
					      arr));
	isl_union_map *fp;

	c->t2p = isl_union_map_apply_range(isl_union_map_copy(e),
		isl_union_map_reverse(isl_union_map_copy(w)));
	fp = isl_union_map_union(e, isl_union_map_apply_range(
		isl_union_map_copy(c->t2p), w));
	if (!fp || !c->t2p) {
		isl_union_map_free(fp);
		return isl_fail(T, "computing the upwards-exposed data");
	}
	return box_of(T, fp, &c->box);
}

/* "34 x 34" of a box's sizes into buf. */
static const char *box_text(__isl_keep isl_fixed_box *box, char *buf,
			    size_t n)
{
	isl_multi_val *mv = isl_fixed_box_get_size(box);
	isl_size k = isl_multi_val_size(mv);
	int64_t v[FL_MAX_RANK];

	for (int d = 0; d < k && d < FL_MAX_RANK; d++) {
		isl_val *x = isl_multi_val_get_at(mv, d);

		v[d] = isl_val_get_num_si(x);
		isl_val_free(x);
	}
	isl_multi_val_free(mv);
	return fl_l1_dims_text(v, k < 0 ? 0 : k < FL_MAX_RANK ? k : FL_MAX_RANK,
			 buf, n);
}

/* s projected on the dims in `keep` (a bit set over its n dims).
 * __isl_give. */
static isl_set *project_on(__isl_keep isl_set *s, int n, uint64_t keep)
{
	isl_set *p = isl_set_copy(s);

	for (int d = n - 1; d >= 0; d--)
		if (!(keep >> d & 1))
			p = isl_set_project_out(p, isl_dim_set, (unsigned)d, 1);
	return p;
}

/* p (over the dims in `keep`) extended back to all n dims, the others
 * unconstrained.  Takes p.  __isl_give. */
static isl_set *extend_to(__isl_take isl_set *p, int n, uint64_t keep)
{
	for (int d = 0; d < n; d++)
		if (!(keep >> d & 1))
			p = isl_set_insert_dims(p, isl_dim_set, (unsigned)d, 1);
	return p;
}

/* Whether dims a < b of s are related: the projection on {a, b} is not
 * the product of the projections on each. */
static bool related(__isl_keep isl_set *s, int n, int a, int b)
{
	isl_set *both = project_on(s, n, (1ull << a) | (1ull << b));
	isl_set *prod = isl_set_flat_product(
		isl_set_project_out(isl_set_copy(both), isl_dim_set, 1, 1),
		isl_set_project_out(isl_set_copy(both), isl_dim_set, 0, 1));
	bool rel = isl_set_is_equal(both, prod) != isl_bool_true;

	isl_set_free(both);
	isl_set_free(prod);
	return rel;
}

static int find_root(int *up, int x)
{
	while (up[x] != x)
		x = up[x] = up[up[x]];
	return x;
}

/* Components of the dims of s (n_t tile dims, then instance dims) under
 * pairwise relation, as bit sets; returns their number. */
static int components(__isl_keep isl_set *s, int n, int n_t, uint64_t *comp)
{
	int up[64], k = 0;

	for (int d = 0; d < n; d++)
		up[d] = d;
	for (int a = 0; a < n; a++)
		for (int b = a > n_t ? a + 1 : n_t; b < n; b++)
			if (b != a && find_root(up, a) != find_root(up, b) &&
			    related(s, n, a, b))
				up[find_root(up, a)] = find_root(up, b);
	for (int d = 0; d < n; d++)
		if (find_root(up, d) == d) {
			comp[k] = 0;
			for (int e = 0; e < n; e++)
				if (find_root(up, e) == d)
					comp[k] |= 1ull << e;
			k++;
		}
	return k;
}

/* Points of s (taken): exact, COUNT_TOO_BIG or -1 (count_bounded). */
static double count_set(__isl_take isl_set *s)
{
	return count_bounded(s, NULL);
}

/* Counts the (tile, instance) pairs and the instances of s (flat, n_t
 * tile dims first) as products over independent groups of dims; 1 when
 * s is not such a product. */
static int count_by_parts(__isl_keep isl_set *s, int n, int n_t, double *c)
{
	uint64_t comp[64], inst = ((1ull << n) - 1) & ~((1ull << n_t) - 1);
	int k = components(s, n, n_t, comp);
	isl_set *rebuilt = isl_set_universe(isl_set_get_space(s));
	double pairs = 1, range = 1;
	bool same, too_big = false, failed = false;

	for (int i = 0; i < k; i++) {
		isl_set *part = project_on(s, n, comp[i]);

		double x = count_set(isl_set_copy(part));
		double y = comp[i] & inst ?
			   count_set(project_on(s, n, comp[i] & inst)) : 1;

		too_big |= x == COUNT_TOO_BIG || y == COUNT_TOO_BIG;
		failed |= (x < 0 && x != COUNT_TOO_BIG) ||
			  (y < 0 && y != COUNT_TOO_BIG);
		pairs *= x;
		range *= y;
		rebuilt = isl_set_intersect(rebuilt, extend_to(part, n, comp[i]));
	}
	same = isl_set_is_equal(rebuilt, s) == isl_bool_true;
	isl_set_free(rebuilt);
	if (same && too_big && !failed)
		return 2;
	if (!same || failed || too_big)
		return 1;
	c[0] += pairs;
	c[1] += range;
	return 0;
}

/* Adds to c[0] the (tile, instance) pairs of map m (taken) and to c[1]
 * its instances.  isl counts by scanning rows, which costs seconds on the
 * footprint of a big prologue, so independent groups of dims (a tile
 * dim and the instance dim it selects) are counted apart when the
 * relation is their product. */
static isl_stat count_pairs(__isl_take isl_map *m, void *user)
{
	double *c = user;
	int n_t = isl_map_dim(m, isl_dim_in), n = n_t + isl_map_dim(m, isl_dim_out);
	isl_set *range = isl_map_range(isl_map_copy(m));
	isl_set *flat = isl_set_flatten(isl_map_wrap(m));
	double p, r;
	int rc = n <= 62 ? count_by_parts(flat, n, n_t, c) : 1;

	if (rc == 2) {
		c[2] = 1;
		rc = 0;
	}

	if (rc == 1) {
		p = count_set(isl_set_copy(flat));
		r = count_set(isl_set_copy(range));
		c[0] += p;
		c[1] += r;
		rc = p == COUNT_TOO_BIG || r == COUNT_TOO_BIG ? 2 :
		     p < 0 || r < 0 ? -1 : 0;
	}
	if (rc == 2)
		c[2] = 1;	/* too big to count: the caller windows */
	isl_set_free(flat);
	isl_set_free(range);
	return rc == 0 ? isl_stat_ok : isl_stat_error;
}

/* Adds m (taken) to the union map *user with its tile dims (the domain)
 * limited to the COUNT_WINDOW smallest values of each. */
static isl_stat window_tiles(__isl_take isl_map *m, void *user)
{
	isl_union_map **w = user;
	isl_size n = isl_map_dim(m, isl_dim_in);
	isl_set *dom = isl_map_domain(isl_map_copy(m));

	for (int d = 0; d < n; d++) {
		isl_val *lo = isl_set_dim_min_val(isl_set_copy(dom), d);

		if (lo && isl_val_is_int(lo) == isl_bool_true)
			m = isl_map_upper_bound_val(m, isl_dim_in, (unsigned)d,
				isl_val_add_ui(lo, COUNT_WINDOW - 1));
		else
			isl_val_free(lo);
	}
	isl_set_free(dom);
	*w = isl_union_map_union(*w, isl_union_map_from_map(m));
	return *w ? isl_stat_ok : isl_stat_error;
}

/* The recomputation factor: instances computed by all tiles together
 * over instances needed at all. */
static double recompute_factor(__isl_keep isl_union_map *t2p)
{
	double c[3] = {0, 0, 0};
	isl_union_map *w;

	if (isl_union_map_foreach_map(t2p, count_pairs, c) < 0)
		return -1;
	if (c[2] == 0)
		return c[1] > 0 ? c[0] / c[1] : -1;
	/* too many tiles to count: measure on the first COUNT_WINDOW tiles
	 * of each tile dim (the factor of a translation-invariant tiling;
	 * the halo at the window's edge makes it a slight underestimate) */
	w = isl_union_map_empty(isl_union_map_get_space(t2p));
	if (isl_union_map_foreach_map(t2p, window_tiles, &w) < 0) {
		isl_union_map_free(w);
		return -1;
	}
	c[0] = c[1] = c[2] = 0;
	if (isl_union_map_foreach_map(w, count_pairs, c) < 0 || c[2] != 0 ||
	    c[1] <= 0) {
		isl_union_map_free(w);
		return -1;
	}
	isl_union_map_free(w);
	return c[0] / c[1];
}

/* "S3_0_r0, S3_1_r0": the recomputed statements of op `op`. */
static const char *copy_names(const tiler *T, int op, char *buf, size_t n)
{
	int at = 0;

	buf[0] = '\0';
	for (int i = 0; i < T->m->n_stmts && at >= 0 && (size_t)at < n; i++)
		if (T->m->stmts[i].op == op)
			at += snprintf(buf + at, n - (size_t)at, "%s%s_r0",
				       at ? ", " : "", T->m->stmts[i].name);
	return buf;
}

/* Decides one producer op (file comment).  1: fuse, 0: refused (c->why),
 * 2: not a candidate (part of the tiled nest, or no consumer), -1. */
static int try_fuse(tiler *T, candidate *c)
{
	const char *p = op_name(T, c->op);
	isl_union_set *in;
	bool inside, any;
	char box[64], names[64];
	int n_par, rc;

	c->dom = op_domain(T->m, c->op);
	in = isl_union_set_intersect(isl_union_set_copy(c->dom),
				     isl_union_set_copy(T->t->tiled_dom));
	inside = !is_empty(in);
	isl_union_set_free(in);
	if (inside)
		return 2;
	rc = consumers_inside(T, c, &any);
	if (rc <= 0 || !any)
		return rc < 0 ? -1 : any ? 0 : 2;
	n_par = parallelism_of(T, c->dom);
	if (T->m_tiled > n_par) {
		snprintf(c->why, sizeof c->why, "not fused: parallelism: its "
			 "loop nest has %d parallel loop%s, the tiles %d (m > n)",
			 n_par, n_par == 1 ? "" : "s", T->m_tiled);
		return 0;
	}
	if (needed_instances(T, c) < 0)
		return -1;
	if (isl_fixed_box_is_valid(c->box) != isl_bool_true) {
		snprintf(c->why, sizeof c->why, "not fused: its per-tile "
			 "footprint has no fixed-size box for a tile-local buffer");
		return 0;
	}
	c->factor = recompute_factor(c->t2p);
	if (c->factor < 0)
		return isl_fail(T, "counting recomputed instances");
	if (c->factor > T->o->max_recompute) {
		snprintf(c->why, sizeof c->why, "not fused: recompute %.2fx > "
			 "%.2fx (neighbouring tiles need the same %s instances)",
			 c->factor, T->o->max_recompute, p);
		return 0;
	}
	snprintf(c->why, sizeof c->why, "fused %s into the tiles through an "
		 "extension node (recomputed as %s): per-tile footprint %s, "
		 "recompute %.2fx <= %.2fx", p, copy_names(T, c->op, names,
		 sizeof names), box_text(c->box, box, sizeof box), c->factor,
		 T->o->max_recompute);
	return 1;
}

/* ---- the extension --------------------------------------------------------- */

/* [t] -> S<op>_<k>_r0[t.., i..] from t2s = [t] -> S[i] (taken). */
static isl_map *renamed_ext(__isl_take isl_map *t2s, const fl_l1_stmt *s)
{
	char name[64];
	isl_map *m = isl_map_reverse(isl_map_domain_map(t2s));

	snprintf(name, sizeof name, "%s_r0", s->name);
	m = isl_map_flatten_range(m);
	return isl_map_set_tuple_name(m, isl_dim_out, name);
}

/* The projection S_r[t.., i..] -> [i..] (keep_tail) or -> [t..] over
 * the space of the recomputed statement's instances (taken).
 * __isl_give. */
static isl_multi_aff *project(__isl_take isl_space *set, int m_tiled,
			      bool keep_tail)
{
	isl_size n = isl_space_dim(set, isl_dim_set);
	isl_multi_aff *ma = isl_multi_aff_identity(isl_space_map_from_set(set));

	if (keep_tail)
		ma = isl_multi_aff_drop_dims(ma, isl_dim_out, 0,
					     (unsigned)m_tiled);
	else
		ma = isl_multi_aff_drop_dims(ma, isl_dim_out, (unsigned)m_tiled,
					     (unsigned)(n - m_tiled));
	return isl_multi_aff_reset_tuple_id(ma, isl_dim_out);
}

/* Pairs of instances of st that touch the same element of its output,
 * one of them writing it (the write against itself and against st's
 * reads of that output).  __isl_give. */
static isl_map *self_conflicts(const fl_poly_stmt *st)
{
	isl_map *w = isl_map_intersect_domain(isl_map_copy(st->write),
					      isl_set_copy(st->domain));
	isl_map *all = isl_map_copy(w);

	for (int r = 0; r < st->n_reads; r++)
		if (st->reads[r].input < 0)
			all = isl_map_union(all, isl_map_intersect_domain(
				isl_map_copy(st->reads[r].access),
				isl_set_copy(st->domain)));
	return isl_map_apply_range(w, isl_map_reverse(all));
}

/* Marks the members of the recompute band at g (one statement's
 * original iterators) coincident where no two instances in conflict
 * (self_conflicts) differ: the recomputation of an elementwise op is
 * parallel in all of them, a reduction's in its kept dimensions, so the
 * backends may share those loops out among threads.  __isl_give. */
static isl_schedule_node *mark_recompute_coincident(
	__isl_take isl_schedule_node *g, const fl_poly_stmt *st)
{
	isl_map *conf = self_conflicts(st);
	isl_size n = isl_schedule_node_band_n_member(g);

	for (int j = 0; conf && j < n; j++) {
		isl_map *eq = isl_map_universe(isl_map_get_space(conf));
		isl_bool ok;

		eq = isl_map_equate(eq, isl_dim_in, j, isl_dim_out, j);
		ok = isl_map_is_subset(conf, eq);
		isl_map_free(eq);
		if (ok == isl_bool_true)
			g = isl_schedule_node_band_member_set_coincident(g, j, 1);
	}
	isl_map_free(conf);
	return g;
}

/* Inserts, at leaf `g`, the band of one recomputed statement (its
 * original iterators) and returns to the node above it. */
static isl_schedule_node *insert_recompute_band(
	__isl_take isl_schedule_node *g, __isl_keep isl_map *ext, int m_tiled,
	const fl_poly_stmt *st)
{
	isl_space *sp = isl_space_range(isl_map_get_space(ext));
	isl_size n = isl_space_dim(sp, isl_dim_set);
	isl_multi_aff *ma;

	if (n <= m_tiled) {
		isl_space_free(sp);
		return isl_schedule_node_parent(g);
	}
	ma = project(sp, m_tiled, true);
	g = isl_schedule_node_insert_partial_schedule(g,
		isl_multi_union_pw_aff_from_union_pw_multi_aff(
			isl_union_pw_multi_aff_from_multi_aff(ma)));
	g = mark_recompute_coincident(g, st);
	return isl_schedule_node_parent(g);
}

/* The extension subtree: [t] -> every recomputed instance, then a
 * sequence of the recomputed statements in program order, each with its
 * own band.  exts[0..n-1] are kept.  __isl_give. */
static isl_schedule_node *extension_tree(isl_map **exts,
					  const fl_poly_stmt **sts, int n,
					  int m_tiled)
{
	isl_union_map *all = isl_union_map_from_map(isl_map_copy(exts[0]));
	isl_union_set_list *filters = isl_union_set_list_alloc(
		isl_map_get_ctx(exts[0]), n);
	isl_schedule_node *g;

	for (int i = 0; i < n; i++) {
		if (i)
			all = isl_union_map_add_map(all, isl_map_copy(exts[i]));
		filters = isl_union_set_list_add(filters,
			isl_union_set_from_set(isl_set_universe(
				isl_space_range(isl_map_get_space(exts[i])))));
	}
	g = isl_schedule_node_child(isl_schedule_node_from_extension(all), 0);
	if (n == 1) {
		isl_union_set_list_free(filters);
		return insert_recompute_band(g, exts[0], m_tiled, sts[0]);
	}
	g = isl_schedule_node_insert_sequence(g, filters);
	for (int i = 0; i < n; i++) {
		g = isl_schedule_node_child(isl_schedule_node_child(g, i), 0);
		g = isl_schedule_node_parent(
			insert_recompute_band(g, exts[i], m_tiled, sts[i]));
	}
	return isl_schedule_node_parent(g);
}

/* inst2tile of the recomputed statements: S_r[t.., i..] -> [t..], added
 * to i2t (taken).  __isl_give. */
static isl_union_pw_multi_aff *add_recompute_tiles(
	__isl_take isl_union_pw_multi_aff *i2t, isl_map **exts, int n,
	int m_tiled)
{
	for (int i = 0; i < n; i++) {
		isl_space *sp = isl_space_range(isl_map_get_space(exts[i]));

		i2t = isl_union_pw_multi_aff_add_pw_multi_aff(i2t,
			isl_pw_multi_aff_from_multi_aff(project(sp, m_tiled,
								 false)));
	}
	return i2t;
}

/* The tiled schedule with every producer fused so far recomputed in the
 * tiles and its original instances removed (ISL_GUIDE 6, steps 5, 7a);
 * *i2t gets the matching inst2tile.  __isl_give. */
static isl_schedule *extended(tiler *T, isl_union_pw_multi_aff **i2t)
{
	const fl_l1_model *m = T->m;
	isl_map **exts = calloc((size_t)m->n_stmts + 1, sizeof *exts);
	const fl_poly_stmt **sts = calloc((size_t)m->n_stmts + 1, sizeof *sts);
	isl_schedule_node *point, *g;
	isl_schedule *s;
	int n = 0;

	if (!exts || !sts) {
		free(exts);
		free(sts);
		return NULL;
	}
	for (int i = 0; i < m->n_stmts; i++)
		if (T->t2s[i]) {
			sts[n] = m->stmts[i].poly;
			exts[n++] = renamed_ext(isl_map_copy(T->t2s[i]),
						&m->stmts[i]);
		}
	point = isl_schedule_node_child(nest_top(T->t->tiled, T->lo), 0);
	g = extension_tree(exts, sts, n, T->m_tiled);
	free(sts);
	point = isl_schedule_node_graft_before(point, g);
	s = isl_schedule_node_get_schedule(point);
	isl_schedule_node_free(point);
	s = isl_schedule_intersect_domain(s, isl_union_set_subtract(
		isl_union_set_copy(m->domain), isl_union_set_copy(T->fused_dom)));
	*i2t = add_recompute_tiles(isl_union_pw_multi_aff_copy(T->t->inst2tile),
				   exts, n, T->m_tiled);
	for (int i = 0; i < n; i++)
		isl_map_free(exts[i]);
	free(exts);
	return s;
}

/* Extracts the per-statement maps of c->t2p into T->t2s. */
static isl_stat keep_t2s(__isl_take isl_map *map, void *user)
{
	tiler *T = user;
	int i = fl_l1_model_find(T->m, isl_map_get_tuple_name(map, isl_dim_out));

	if (i < 0 || T->t2s[i]) {
		isl_map_free(map);
		return i < 0 ? isl_stat_error : isl_stat_ok;
	}
	T->t2s[i] = map;
	return isl_stat_ok;
}

/* Records candidate c as fused: its per-statement extension maps, its
 * instances in the tiles, and the fused entry of the result. */
static int record_fused(tiler *T, candidate *c)
{
	fl_l1_tiling *t = T->t;
	fl_l1_fused *grown = realloc(t->fused, (size_t)(t->n_fused + 1) *
					       sizeof *grown);

	if (!grown) {
		fl_error_set(T->err, "out of memory");
		return -1;
	}
	t->fused = grown;
	t->fused[t->n_fused++] = (fl_l1_fused){c->op, T->m->g->ops[c->op].out[0],
					       c->box, c->factor};
	c->box = NULL;
	if (isl_union_map_foreach_map(c->t2p, keep_t2s, T) < 0)
		return isl_fail(T, "splitting the extension");
	T->t2c = isl_union_map_union(T->t2c, isl_union_map_copy(c->t2p));
	T->fused_dom = isl_union_set_union(T->fused_dom,
					   isl_union_set_copy(c->dom));
	return T->t2c && T->fused_dom ? 0 : isl_fail(T, "recording a fusion");
}

/* ---- the whole run ----------------------------------------------------------- */

/* No tiling: one refused step, the schedule as it is. */
static int untiled_step(tiler *T, const char *why)
{
	T->t->final = isl_schedule_copy(T->sched);
	return add_step(T, FL_EV_TILED, main_liveout_op(T->m), false, T->sched,
			NULL, why);
}

/* One fusion decision per producer op, from the last to the first, each
 * with a snapshot of the tree after it. */
static int fuse_producers(tiler *T)
{
	fl_l1_tiling *t = T->t;
	isl_schedule *cur = isl_schedule_copy(t->tiled);
	isl_union_pw_multi_aff *i2t = isl_union_pw_multi_aff_copy(t->inst2tile);
	int rc = 0;

	for (int i = T->m->n_ops - 1; i >= 0 && rc >= 0; i--) {
		candidate c = {T->m->ops[i], NULL, NULL, NULL, 0, ""};

		rc = try_fuse(T, &c);
		if (rc == 1 && (rc = record_fused(T, &c)) == 0) {
			isl_schedule_free(cur);
			isl_union_pw_multi_aff_free(i2t);
			cur = extended(T, &i2t);
			rc = cur && i2t ? 1 : isl_fail(T, "grafting an extension");
		}
		if (rc == 0 || rc == 1)
			rc = add_step(T, FL_EV_EXTENDED, c.op, rc == 1, cur, i2t,
				      c.why);
		candidate_clear(&c);
	}
	t->final = cur;
	isl_union_pw_multi_aff_free(t->inst2tile);
	t->inst2tile = i2t;
	return rc < 0 ? -1 : 0;
}

/* Tiles the live-out nest and fuses the producers (T set up). */
static int tile_and_fuse(tiler *T)
{
	char why[240];
	int rc = inspect_band(T, why, sizeof why);

	if (rc != 0)
		return rc < 0 ? -1 : untiled_step(T, why);
	if (find_whole_members(T) < 0) {
		fl_error_set(T->err, "out of memory");
		return -1;
	}
	if (choose_sizes(T) < 0 || tile_band(T) < 0)
		return -1;
	T->t->n_tiles = count_tiles(T->t);
	tiled_reason(T, T->t->n_tiles, why, sizeof why);
	if (add_step(T, FL_EV_TILED, main_liveout_op(T->m), true, T->t->tiled,
		     T->t->inst2tile, why) < 0)
		return -1;
	T->t2c = isl_union_map_reverse(isl_union_map_from_union_pw_multi_aff(
		isl_union_pw_multi_aff_copy(T->t->inst2tile)));
	T->fused_dom = isl_union_set_empty(isl_union_set_get_space(T->m->domain));
	T->t2s = calloc((size_t)T->m->n_stmts + 1, sizeof *T->t2s);
	if (!T->t2s) {
		fl_error_set(T->err, "out of memory");
		return -1;
	}
	return fuse_producers(T);
}

int fl_l1_tile(const fl_l1_model *m, __isl_take isl_schedule *sched,
	       int liveout_child, const char *untiled,
	       const fl_layer1_opts *o, fl_l1_tiling *t, fl_error *err)
{
	tiler T;
	int rc;

	memset(t, 0, sizeof *t);
	memset(&T, 0, sizeof T);
	T.m = m;
	T.o = o;
	T.t = t;
	T.ctx = m->ctx;
	T.sched = sched;
	T.lo = liveout_child;
	T.err = err;
	if (untiled) {
		rc = untiled_step(&T, untiled);
	} else {
		T.n_children = fl_l1_top_children(sched, &T.children);
		T.lo_dom = isl_schedule_get_domain(sched);
		if (T.lo >= 0)	/* filters are often universe sets */
			T.lo_dom = isl_union_set_intersect(T.lo_dom,
				isl_union_set_copy(T.children[T.lo]));
		rc = T.n_children < 0 || !T.lo_dom
		     ? isl_fail(&T, "reading the schedule") : tile_and_fuse(&T);
	}
	if (T.n_children < 0)
		T.n_children = 0;
	tiler_clear(&T);
	if (rc < 0)
		fl_l1_tiling_clear(t);
	return rc;
}
