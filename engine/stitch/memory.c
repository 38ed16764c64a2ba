/* Layer 2: memory stitching (DESIGN 1.4; APOLLO 4.2, Algorithm 2).
 *
 * Needs: st->program (layer 1's kernels, in execution order), st->part
 * (the micro-graph type of each kernel), the rule table's layer-2 rules
 * (R7: R -> E or B, R8: R -> R with the same canonical reduction form).
 * Changes: st->program, only under strategies apollo-l2 and apollo (which
 * adds layer 3); under any other
 * strategy the pass makes no decision.
 *
 * Greedy, as Algorithm 2: scan the producer -> consumer pairs of kernels
 * (a consumer reads a tensor the producer writes) in program order; the
 * first pair that passes every condition is stitched, and the scan starts
 * again over the new program, until a scan stitches nothing.  The
 * conditions, in order, each failure one `rejected` event with its
 * numbers:
 *   rule       a layer-2 rule matches the kernels' types (pairs no rule
 *              matches are no candidates and make no event); R8 also
 *              needs the same canonical reduction form;
 *   cycle      no other kernel lies on a path from producer to consumer;
 *   tiling     both kernels tiled, without extension nodes (recomputed
 *              producers are tied to the kernel's own tile band);
 *   loop dims  the same tiled loops: the members that split the domain
 *              into more than one tile, with the same extents;
 *   tile sizes the same sizes; two memory-bound kernels (whose sizes are
 *              each a share of L2, not a register blocking) take the
 *              smaller, which fits both;
 *   mapping    the same members parallel (the threads take tiles);
 *   tiles      isl check: with the common tile band, every dependence
 *              among the statements of both kernels stays inside one tile
 *              (so the band stays parallel and, per tile, the producer's
 *              part may run before the consumer's).
 * A stitched pair is one `merged` event (rule R7 or R8), then one
 * `placed` event per tensor on the stitched edge: tile-local when nothing
 * outside the new kernel reads it and its per-tile footprint (the box isl
 * computes through the tile band) fits the capacity (--stitch-capacity,
 * default the per-core L2; with the CUDA target a block's shared memory,
 * FL_CUDA_SHARED_DEFAULT), else global.
 *
 * The stitched kernel's schedule tree: domain -> the common tile band ->
 * sequence [filter producer -> its tree below its own tile band, filter
 * consumer -> likewise]; a kernel whose tile band is not its outermost
 * band (several top-level nests) keeps its whole tree under the filter.
 * Its tile coordinates (inst2tile) are the common band's.  The stitched
 * kernel takes the consumer's place in the program; kernels between the
 * two that depend on the producer move after it (there is no cycle, so
 * none of them feeds the consumer).  Kernels are renumbered after every
 * stitch, so names in earlier events are the names at that time.
 *
 * Nothing is memoised: the isl work per pair is a few operations on the
 * kernels' access relations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/fixed_box.h>
#include <isl/id.h>
#include <isl/ilp.h>
#include <isl/local_space.h>
#include <isl/map.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include "layer1_impl.h"
#include "passes_impl.h"
#include "stitch.h"

/* The tiling of a kernel as layer 2 compares it: the members of its tile
 * band that split the loops into more than one tile. */
typedef struct l2_tiling {
	int n;
	int dim[FL_MAX_RANK];		/* tile band member (= loop dim) */
	int64_t extent[FL_MAX_RANK];	/* of that loop */
	int64_t size[FL_MAX_RANK];
	bool parallel[FL_MAX_RANK];
} l2_tiling;

/* A pair that was rejected, so that a later scan does not log it again:
 * kernels are named by their first op and op count, which only change
 * when a kernel is stitched. */
typedef struct l2_seen {
	int p_op, p_n, c_op, c_n;
} l2_seen;

typedef struct l2_pass {
	fl_state *st;
	fl_error *err;
	int64_t capacity;
	fl_op_type *type;		/* per kernel */
	int n_seen, cap_seen;
	l2_seen *seen;
	char why[FL_EVENT_REASON];	/* the failed condition */
} l2_pass;

/* ---- kernel relations ---------------------------------------------------- */

static bool kernel_writes(const fl_kernel *k, int t)
{
	for (int i = 0; i < k->n_tensors; i++)
		if (k->tensors[i].tensor == t && k->tensors[i].written)
			return true;
	return false;
}

static bool kernel_reads(const fl_kernel *k, int t)
{
	for (int i = 0; i < k->n_tensors; i++)
		if (k->tensors[i].tensor == t && k->tensors[i].read)
			return true;
	return false;
}

/* Whether kernel c reads a tensor kernel p writes. */
static bool feeds(const fl_kernel *p, const fl_kernel *c)
{
	for (int i = 0; i < p->n_tensors; i++) {
		const fl_kernel_tensor *kt = &p->tensors[i];

		if (kt->written && kernel_reads(c, kt->tensor))
			return true;
	}
	return false;
}

/* Whether kernel `to` depends on kernel `from` through kernels strictly
 * between them in the program (execution order is topological); the first
 * kernel on such a path goes into *via. */
static bool path_between(const fl_program *prog, int from, int to, int *via)
{
	int n = prog->n_kernels;
	bool *reach = calloc((size_t)n + 1, sizeof *reach);
	bool found = false;

	if (!reach)
		return true;	/* refusing is always safe */
	reach[from] = true;
	for (int x = from + 1; x < to; x++)
		for (int y = from; y < x && !reach[x]; y++)
			reach[x] = reach[y] && feeds(&prog->kernels[y],
						     &prog->kernels[x]);
	for (int x = from + 1; x < to && !found; x++)
		if (reach[x] && feeds(&prog->kernels[x], &prog->kernels[to])) {
			*via = x;
			found = true;
		}
	free(reach);
	return found;
}

/* ---- the conditions ------------------------------------------------------ */

static const fl_rule *layer2_rule(const l2_pass *l2, int p, int c)
{
	const fl_rule_table *t = &l2->st->opts->rules;

	if ((int)l2->type[p] < 0 || (int)l2->type[c] < 0)
		return NULL;
	for (int i = 0; i < t->n; i++) {
		const fl_rule *r = &t->rules[i];

		if (r->enabled && r->stage == FL_STAGE_LAYER2 &&
		    (r->producer & (1u << l2->type[p])) &&
		    (r->consumer & (1u << l2->type[c])))
			return r;
	}
	return NULL;
}

static isl_bool find_extension(__isl_keep isl_schedule_node *node, void *user)
{
	if (isl_schedule_node_get_type(node) == isl_schedule_node_extension) {
		*(bool *)user = true;
		return isl_bool_error;	/* stop */
	}
	return isl_bool_true;
}

static bool has_extension(const fl_kernel *k)
{
	bool found = false;

	isl_schedule_foreach_schedule_node_top_down(k->schedule,
						    &find_extension, &found);
	return found;
}

/* The outermost band of k's tree reached through marks only, or NULL. */
static __isl_give isl_schedule_node *top_band(__isl_keep isl_schedule *s)
{
	isl_schedule_node *n = isl_schedule_get_root(s);

	n = isl_schedule_node_child(n, 0);
	while (n && isl_schedule_node_get_type(n) == isl_schedule_node_mark)
		n = isl_schedule_node_child(n, 0);
	if (n && isl_schedule_node_get_type(n) == isl_schedule_node_band)
		return n;
	isl_schedule_node_free(n);
	return NULL;
}

static isl_stat dim_max(__isl_take isl_set *set, void *user)
{
	int64_t *ext = user;	/* ext[0]: the dim asked, ext[1]: the max */
	isl_val *v = NULL;

	if (ext[0] < isl_set_dim(set, isl_dim_set))
		v = isl_set_dim_max_val(isl_set_copy(set), (int)ext[0]);
	if (v && isl_val_is_int(v) && isl_val_get_num_si(v) + 1 > ext[1])
		ext[1] = isl_val_get_num_si(v) + 1;
	isl_val_free(v);
	isl_set_free(set);
	return isl_stat_ok;
}

/* Extent of loop dim d over the tiled statements of k. */
static int64_t loop_extent(const fl_kernel *k, int d)
{
	int64_t ext[2] = {d, 0};
	isl_union_set *dom = isl_union_pw_multi_aff_domain(
		isl_union_pw_multi_aff_copy(k->inst2tile));

	/* inst2tile is defined on whole statement spaces */
	dom = isl_union_set_intersect(dom, isl_union_set_copy(k->domain));

	isl_union_set_foreach_set(dom, &dim_max, ext);
	isl_union_set_free(dom);
	return ext[1];
}

/* Whether band node `band` is k's tile band: its partial schedule is k's
 * instance -> tile map on the band's instances. */
static bool is_tile_band(const fl_kernel *k, __isl_keep isl_schedule_node *band)
{
	isl_union_map *own, *i2t;
	isl_bool eq;

	own = isl_schedule_node_band_get_partial_schedule_union_map(band);
	own = isl_union_map_intersect_domain(own,
		isl_schedule_node_get_domain(band));
	i2t = isl_union_map_from_union_pw_multi_aff(
		isl_union_pw_multi_aff_copy(k->inst2tile));
	i2t = isl_union_map_intersect_domain(i2t,
		isl_schedule_node_get_domain(band));
	own = fl_poly_anon_range(own);
	i2t = fl_poly_anon_range(i2t);
	eq = isl_union_map_is_equal(own, i2t);
	isl_union_map_free(own);
	isl_union_map_free(i2t);
	return eq == isl_bool_true;
}

typedef struct band_search {
	const fl_kernel *k;
	isl_schedule_node *found;
} band_search;

static isl_bool find_tile_band(__isl_keep isl_schedule_node *node,
			       void *user)
{
	band_search *bs = user;

	if (bs->found)
		return isl_bool_false;
	if (isl_schedule_node_get_type(node) == isl_schedule_node_band &&
	    is_tile_band(bs->k, node)) {
		bs->found = isl_schedule_node_copy(node);
		return isl_bool_false;
	}
	return isl_bool_true;
}

/* The number of leading parallel members of k's tile band, wherever it
 * is in the tree (0 when none is found). */
static int tile_band_parallel(const fl_kernel *k)
{
	band_search bs = {k, NULL};
	int n;

	isl_schedule_foreach_schedule_node_top_down(k->schedule,
						    &find_tile_band, &bs);
	n = bs.found ? fl_band_leading_coincident(bs.found) : 0;
	isl_schedule_node_free(bs.found);
	return n;
}

/* k's tiling as layer 2 compares it; -1 with the reason in l2->why when
 * k cannot be stitched at all. */
static int kernel_tiling(l2_pass *l2, const fl_kernel *k, l2_tiling *t)
{
	int ncoinc;

	memset(t, 0, sizeof *t);
	if (!k->n_tile || !k->inst2tile || !k->schedule) {
		snprintf(l2->why, sizeof l2->why, "%s is not tiled", k->name);
		return -1;
	}
	if (has_extension(k)) {
		snprintf(l2->why, sizeof l2->why, "%s holds recomputed "
			 "producers (an extension node), tied to its own tiles",
			 k->name);
		return -1;
	}
	ncoinc = tile_band_parallel(k);
	for (int m = 0; m < k->n_tile && m < FL_MAX_RANK; m++) {
		int64_t ext = loop_extent(k, m);

		if (k->tile[m] <= 0 || k->tile[m] >= ext)
			continue;	/* one tile: no split */
		t->dim[t->n] = m;
		t->extent[t->n] = ext;
		t->size[t->n] = k->tile[m];
		t->parallel[t->n++] = m < ncoinc;
	}
	if (!t->n) {
		snprintf(l2->why, sizeof l2->why, "%s runs as one tile",
			 k->name);
		return -1;
	}
	return 0;
}

/* "4096 x 1024" from n numbers into buf. */
static const char *dims_text(const int64_t *v, int n, char *buf, size_t len)
{
	int at = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && at >= 0 && (size_t)at < len; i++)
		at += snprintf(buf + at, len - (size_t)at, "%s%lld",
			       i ? " x " : "", (long long)v[i]);
	return buf;
}

/* Compares the tilings of producer p and consumer c; the common one into
 * *out.  false with the reason in l2->why. */
static bool same_tiling(l2_pass *l2, const fl_kernel *p,
			const fl_kernel *c, const l2_tiling *tp,
			const l2_tiling *tc, l2_tiling *out)
{
	bool memory = p->tile_kind == FL_TILE_MEMORY &&
		      c->tile_kind == FL_TILE_MEMORY;
	char a[64], b[64];

	*out = *tp;
	if (tp->n != tc->n || memcmp(tp->dim, tc->dim, sizeof tp->dim) ||
	    memcmp(tp->extent, tc->extent, sizeof tp->extent)) {
		snprintf(l2->why, sizeof l2->why, "loop dimensions differ: "
			 "%s tiles %d loops [%s], %s %d [%s]", p->name, tp->n,
			 dims_text(tp->extent, tp->n, a, sizeof a), c->name,
			 tc->n, dims_text(tc->extent, tc->n, b, sizeof b));
		return false;
	}
	for (int i = 0; i < tp->n; i++) {
		if (tp->size[i] != tc->size[i] && !memory) {
			snprintf(l2->why, sizeof l2->why, "tile sizes differ: "
				 "%s %s (%s), %s %s (%s)", p->name,
				 dims_text(tp->size, tp->n, a, sizeof a),
				 fl_tile_kind_name(p->tile_kind), c->name,
				 dims_text(tc->size, tc->n, b, sizeof b),
				 fl_tile_kind_name(c->tile_kind));
			return false;
		}
		if (tc->size[i] < out->size[i])
			out->size[i] = tc->size[i];
		if (tp->parallel[i] != tc->parallel[i]) {
			snprintf(l2->why, sizeof l2->why, "hardware mapping "
				 "differs: tiled loop %d is %s in %s, %s in %s",
				 tp->dim[i], tp->parallel[i] ? "parallel" :
				 "serial", p->name, tc->parallel[i] ?
				 "parallel" : "serial", c->name);
			return false;
		}
	}
	return true;
}

/* ---- the common tile band ------------------------------------------------ */

typedef struct tile_map_build {
	const l2_tiling *t;
	isl_union_pw_multi_aff *map;
} tile_map_build;

/* Instances of `set` -> their tile coordinates floor(i_d / size). */
static isl_stat add_tile_of_set(__isl_take isl_set *set, void *user)
{
	tile_map_build *b = user;
	isl_space *sp = isl_set_get_space(set);
	isl_local_space *ls;
	isl_multi_aff *ma;

	for (int m = 0; m < b->t->n; m++)
		if (b->t->dim[m] >= isl_set_dim(set, isl_dim_set)) {
			isl_space_free(sp);
			isl_set_free(set);
			return isl_stat_error;
		}
	ls = isl_local_space_from_space(isl_space_copy(sp));
	sp = isl_space_map_from_domain_and_range(sp,
		isl_space_set_alloc(isl_set_get_ctx(set), 0, b->t->n));
	ma = isl_multi_aff_zero(sp);
	for (int m = 0; m < b->t->n; m++) {
		isl_aff *a = isl_aff_var_on_domain(isl_local_space_copy(ls),
						   isl_dim_set, b->t->dim[m]);

		a = isl_aff_scale_down_ui(a, (unsigned)b->t->size[m]);
		ma = isl_multi_aff_set_aff(ma, m, isl_aff_floor(a));
	}
	isl_local_space_free(ls);
	/* on the whole statement space, as layer 1's tile maps: the band
	 * prints as plain floor divisions */
	b->map = isl_union_pw_multi_aff_add_pw_multi_aff(b->map,
		isl_pw_multi_aff_from_multi_aff(ma));
	isl_set_free(set);
	return b->map ? isl_stat_ok : isl_stat_error;
}

/* Every instance of dom (keep) -> its tile under t; NULL when a statement
 * lacks a tiled loop. */
static __isl_give isl_union_pw_multi_aff *tile_map(
	__isl_keep isl_union_set *dom, const l2_tiling *t)
{
	tile_map_build b = {t, isl_union_pw_multi_aff_empty(
				       isl_union_set_get_space(dom))};

	if (isl_union_set_foreach_set(dom, &add_tile_of_set, &b) < 0)
		return isl_union_pw_multi_aff_free(b.map);
	return b.map;
}

/* Pairs of instances touching the same element, at least one writing. */
static __isl_give isl_union_map *conflicts(__isl_keep isl_union_map *reads,
					   __isl_keep isl_union_map *writes)
{
	isl_union_map *all = isl_union_map_union(isl_union_map_copy(reads),
						 isl_union_map_copy(writes));
	isl_union_map *d;

	d = isl_union_map_apply_range(isl_union_map_copy(writes),
				      isl_union_map_reverse(all));
	return isl_union_map_union(d, isl_union_map_apply_range(
		isl_union_map_copy(reads),
		isl_union_map_reverse(isl_union_map_copy(writes))));
}

/* Whether every conflict among the instances of reads/writes stays in one
 * tile of `tiles` (keep). */
static bool inside_tiles(__isl_keep isl_union_map *reads,
			 __isl_keep isl_union_map *writes,
			 __isl_keep isl_union_pw_multi_aff *tiles, int n)
{
	isl_union_map *m = isl_union_map_from_union_pw_multi_aff(
		isl_union_pw_multi_aff_copy(tiles));
	isl_union_map *d = conflicts(reads, writes);
	isl_set *zero = isl_set_universe(isl_space_set_alloc(
		isl_union_map_get_ctx(reads), 0, n));
	isl_union_set *delta, *origin;
	isl_bool ok;

	for (int i = 0; i < n; i++)
		zero = isl_set_fix_si(zero, isl_dim_set, i, 0);
	d = isl_union_map_apply_domain(d, isl_union_map_copy(m));
	d = isl_union_map_apply_range(d, m);
	delta = isl_union_map_deltas(d);
	origin = isl_union_set_from_set(zero);
	ok = isl_union_set_is_subset(delta, origin);
	isl_union_set_free(origin);
	isl_union_set_free(delta);
	return ok == isl_bool_true;
}

/* The accesses of both kernels, restricted to their domains. */
static __isl_give isl_union_map *both(__isl_keep isl_union_map *a,
				      __isl_keep isl_union_set *da,
				      __isl_keep isl_union_map *b,
				      __isl_keep isl_union_set *db)
{
	return isl_union_map_union(
		isl_union_map_intersect_domain(isl_union_map_copy(a),
					       isl_union_set_copy(da)),
		isl_union_map_intersect_domain(isl_union_map_copy(b),
					       isl_union_set_copy(db)));
}

/* ---- the stitched schedule ----------------------------------------------- */

static __isl_give isl_schedule_node *drop_mark(
	__isl_take isl_schedule_node *node, void *user)
{
	(void)user;
	if (isl_schedule_node_get_type(node) == isl_schedule_node_mark)
		return isl_schedule_node_delete(node);
	return node;
}

/* k's schedule for the stitched tree: marks dropped, and its tile band
 * too when that is its outermost band (the common band replaces it). */
static __isl_give isl_schedule *part_schedule(const fl_kernel *k)
{
	isl_schedule *s = isl_schedule_map_schedule_node_bottom_up(
		isl_schedule_copy(k->schedule), &drop_mark, NULL);
	isl_schedule_node *band = s ? top_band(s) : NULL;

	if (!band)
		return s;
	if (is_tile_band(k, band)) {
		isl_schedule_free(s);
		band = isl_schedule_node_delete(band);
		s = isl_schedule_node_get_schedule(band);
	}
	isl_schedule_node_free(band);
	return s;
}

/* domain -> common tile band (parallel members coincident) -> sequence
 * [producer part, consumer part], marked for the backend. */
static __isl_give isl_schedule *stitched_schedule(const fl_kernel *p,
	const fl_kernel *c, const l2_tiling *t,
	__isl_keep isl_union_pw_multi_aff *tiles)
{
	isl_schedule *s = isl_schedule_sequence(part_schedule(p),
						part_schedule(c));
	isl_schedule_node *n;

	s = isl_schedule_insert_partial_schedule(s,
		isl_multi_union_pw_aff_from_union_pw_multi_aff(
			isl_union_pw_multi_aff_copy(tiles)));
	if (!s)
		return NULL;
	n = isl_schedule_node_child(isl_schedule_get_root(s), 0);
	isl_schedule_free(s);
	n = isl_schedule_node_band_set_permutable(n, 1);
	for (int m = 0; m < t->n; m++)
		n = isl_schedule_node_band_member_set_coincident(n, m,
							t->parallel[m]);
	s = isl_schedule_node_get_schedule(n);
	isl_schedule_node_free(n);
	return fl_l1_mark_parallel(s);
}

/* ---- the stitched kernel ------------------------------------------------- */

static int add_tensor(fl_kernel *k, const fl_kernel_tensor *src)
{
	for (int i = 0; i < k->n_tensors; i++) {
		fl_kernel_tensor *kt = &k->tensors[i];

		if (kt->tensor != src->tensor)
			continue;
		kt->read |= src->read;
		kt->written |= src->written;
		return 0;
	}
	k->tensors[k->n_tensors] = *src;
	k->tensors[k->n_tensors++].box_isl = isl_fixed_box_copy(src->box_isl);
	return 0;
}

/* Whether tensor t is on the stitched edge: written by p, read by c. */
static bool on_edge(const fl_kernel *p, const fl_kernel *c, int t)
{
	return kernel_writes(p, t) && kernel_reads(c, t);
}

/* Tensors of both kernels, each once; the edge ones global until their
 * placement decision. */
static int merge_tensors(fl_kernel *k, const fl_kernel *p, const fl_kernel *c)
{
	k->tensors = calloc((size_t)(p->n_tensors + c->n_tensors) + 1,
			    sizeof *k->tensors);
	if (!k->tensors)
		return -1;
	for (int i = 0; i < p->n_tensors; i++)
		add_tensor(k, &p->tensors[i]);
	for (int i = 0; i < c->n_tensors; i++)
		add_tensor(k, &c->tensors[i]);
	for (int i = 0; i < k->n_tensors; i++) {
		fl_kernel_tensor *kt = &k->tensors[i];

		if (on_edge(p, c, kt->tensor)) {
			kt->place = FL_PLACE_GLOBAL;
			kt->why[0] = '\0';
		}
		/* a box over the old tile band no longer holds (rebox) */
		kt->box_isl = isl_fixed_box_free(kt->box_isl);
	}
	return 0;
}

static double tiles_count(const l2_tiling *t)
{
	double n = 1;

	for (int i = 0; i < t->n; i++)
		n *= (double)((t->extent[i] + t->size[i] - 1) / t->size[i]);
	return n;
}

static void set_tiling(fl_kernel *k, const fl_kernel *p, const fl_kernel *c,
		       const l2_tiling *t)
{
	char sz[64];

	memset(k->tile, 0, sizeof k->tile);
	for (int i = 0; i < t->n; i++)
		k->tile[i] = t->size[i];
	k->n_tile = t->n;
	k->tile_kind = p->tile_kind == c->tile_kind ? p->tile_kind
						    : FL_TILE_MEMORY;
	k->tile_m = k->tile_n = -1;
	k->tile_bytes = p->tile_bytes + c->tile_bytes;
	k->n_tiles = tiles_count(t);
	snprintf(k->tile_why, sizeof k->tile_why, "stitched (layer 2): "
		 "common tile band %s over %s and %s",
		 dims_text(t->size, t->n, sz, sizeof sz), p->name, c->name);
}

/* Per-tile footprint box of tensor t (array "T<t>" of `rank` dims) in
 * kernel k, through its tile map; NULL when isl gives none. */
static __isl_give isl_fixed_box *tile_box(const fl_kernel *k, int t, int rank)
{
	isl_union_map *acc = isl_union_map_union(
		isl_union_map_copy(k->reads), isl_union_map_copy(k->writes));
	isl_union_map *tile2t;
	isl_fixed_box *box = NULL;
	isl_space *sp;
	char name[32];

	snprintf(name, sizeof name, "T%d", t);
	sp = isl_space_set_alloc(isl_union_map_get_ctx(acc), 0,
				 (unsigned)rank);
	sp = isl_space_set_tuple_name(sp, isl_dim_set, name);
	acc = isl_union_map_intersect_domain(acc,
					     isl_union_set_copy(k->domain));
	acc = isl_union_map_intersect_range(acc,
		isl_union_set_from_set(isl_set_universe(sp)));
	tile2t = isl_union_map_apply_range(isl_union_map_reverse(
		isl_union_map_from_union_pw_multi_aff(
			isl_union_pw_multi_aff_copy(k->inst2tile))), acc);
	if (isl_union_map_n_map(tile2t) == 1) {
		isl_map *m = isl_map_from_union_map(tile2t);

		box = isl_map_get_range_simple_fixed_box_hull(m);
		isl_map_free(m);
	} else {
		isl_union_map_free(tile2t);
	}
	return box;
}

/* Tile-local tensors inside one part keep their place with a box over
 * the common tile band; one without a fixed box goes global. */
static void rebox(fl_kernel *k)
{
	for (int i = 0; i < k->n_tensors; i++) {
		fl_kernel_tensor *kt = &k->tensors[i];
		isl_fixed_box *box;
		isl_multi_val *size;

		if (kt->place != FL_PLACE_TILE_LOCAL)
			continue;
		box = tile_box(k, kt->tensor, kt->rank);
		if (!box || isl_fixed_box_is_valid(box) != isl_bool_true) {
			isl_fixed_box_free(box);
			kt->place = FL_PLACE_GLOBAL;
			snprintf(kt->why, sizeof kt->why, "no fixed per-tile "
				 "footprint box under the stitched tiles");
			continue;
		}
		size = isl_fixed_box_get_size(box);
		for (int d = 0; d < kt->rank; d++) {
			isl_val *v = isl_multi_val_get_at(size, d);

			kt->box[d] = isl_val_get_num_si(v);
			isl_val_free(v);
		}
		isl_multi_val_free(size);
		kt->box_isl = box;
	}
}

/* The kernel stitching p and c under tiling t and tile map `tiles`
 * (taken); -1 when out of memory or isl fails. */
static int stitch_kernel(fl_kernel *k, const fl_kernel *p, const fl_kernel *c,
			 const l2_tiling *t,
			 __isl_take isl_union_pw_multi_aff *tiles)
{
	memset(k, 0, sizeof *k);
	k->group = p->group;
	k->reduce_form = p->reduce_form;
	k->n_ops = p->n_ops + c->n_ops;
	k->ops = malloc((size_t)k->n_ops * sizeof *k->ops);
	if (!k->ops || merge_tensors(k, p, c) < 0) {
		isl_union_pw_multi_aff_free(tiles);
		return -1;
	}
	memcpy(k->ops, p->ops, (size_t)p->n_ops * sizeof *k->ops);
	memcpy(k->ops + p->n_ops, c->ops, (size_t)c->n_ops * sizeof *k->ops);
	k->domain = isl_union_set_union(isl_union_set_copy(p->domain),
					isl_union_set_copy(c->domain));
	k->reads = isl_union_map_union(isl_union_map_copy(p->reads),
				       isl_union_map_copy(c->reads));
	k->writes = isl_union_map_union(isl_union_map_copy(p->writes),
					isl_union_map_copy(c->writes));
	k->schedule = stitched_schedule(p, c, t, tiles);
	k->inst2tile = tiles;
	set_tiling(k, p, c, t);
	rebox(k);
	k->schedule_text = k->schedule ? fl_l1_schedule_text(k->schedule)
				       : NULL;
	k->tree = k->schedule ? fl_l1_tree(k->schedule) : NULL;
	return k->schedule_text && k->tree && k->domain ? 0 : -1;
}

/* ---- the program --------------------------------------------------------- */

/* Puts the kernels into `order` (a permutation of the program's, with
 * n entries) and renumbers them. */
static int reorder(fl_program *prog, const int *order, int n)
{
	fl_kernel *ks = calloc((size_t)n + 1, sizeof *ks);

	if (!ks)
		return -1;
	for (int i = 0; i < n; i++) {
		ks[i] = prog->kernels[order[i]];
		ks[i].id = i;
		snprintf(ks[i].name, sizeof ks[i].name, "fl_k%d", i);
	}
	memcpy(prog->kernels, ks, (size_t)n * sizeof *ks);
	prog->n_kernels = n;
	free(ks);
	return 0;
}

/* The program order after stitching kernel pi into ci (whose slot holds
 * the stitched kernel): kernels between them that depend on pi move
 * after it.  Writes n_kernels - 1 indices into order. */
static void stitched_order(const fl_program *prog, int pi, int ci,
			   int *order, bool *after)
{
	int n = 0;

	for (int x = pi + 1; x < ci; x++) {
		after[x] = feeds(&prog->kernels[pi], &prog->kernels[x]);
		for (int y = pi + 1; y < x && !after[x]; y++)
			after[x] = after[y] && feeds(&prog->kernels[y],
						     &prog->kernels[x]);
	}
	for (int x = 0; x < prog->n_kernels; x++) {
		if (x == pi || (x > pi && x < ci && after[x]))
			continue;
		order[n++] = x;
		if (x == ci)
			for (int y = pi + 1; y < ci; y++)
				if (after[y])
					order[n++] = y;
	}
}

/* Replaces kernels pi and ci by k (owned now), in the order above;
 * returns k's new index, or -1. */
static int program_stitch(l2_pass *l2, int pi, int ci, fl_kernel *k)
{
	fl_program *prog = l2->st->program;
	int n = prog->n_kernels;
	int *order = malloc((size_t)n * sizeof *order);
	bool *after = calloc((size_t)n + 1, sizeof *after);
	fl_op_type *type = malloc((size_t)n * sizeof *type);
	int rc = -1;

	if (order && after && type) {
		stitched_order(prog, pi, ci, order, after);
		fl_kernel_clear(&prog->kernels[pi]);
		fl_kernel_clear(&prog->kernels[ci]);
		prog->kernels[ci] = *k;
		memset(k, 0, sizeof *k);	/* the program owns it now */
		l2->type[ci] = FL_TYPE_R;	/* R7 and R8 give R */
		for (int i = 0; i < n - 1; i++)
			type[i] = l2->type[order[i]];
		memcpy(l2->type, type, (size_t)(n - 1) * sizeof *type);
		for (int i = 0; i < n - 1; i++)
			if (order[i] == ci)
				rc = i;
		if (reorder(prog, order, n - 1) < 0)
			rc = -1;
	}
	free(order);
	free(after);
	free(type);
	return rc;
}

/* ---- placement of the stitched edge -------------------------------------- */

/* Who else needs tensor t, for the reason it stays global; NULL when
 * nobody outside kernel ki does. */
static const char *needed_outside(const l2_pass *l2, int ki, int t,
				  char *buf, size_t n)
{
	const fl_program *prog = l2->st->program;

	if (l2->st->graph->tensors[t].role == FL_ROLE_OUTPUT)
		return "graph output";
	for (int i = 0; i < prog->n_kernels; i++)
		if (i != ki && kernel_reads(&prog->kernels[i], t)) {
			snprintf(buf, n, "also read by %s",
				 prog->kernels[i].name);
			return buf;
		}
	return NULL;
}

static int64_t tensor_elems(const fl_graph *g, int t)
{
	int64_t n = 1;

	for (int d = 0; d < g->tensors[t].shape.rank; d++)
		n *= g->tensors[t].shape.dim[d];
	return n;
}

/* Places tensor kt of the stitched edge in kernel ki (its tile-local box
 * is computed through the kernel's common tile band). */
static void place_edge(const l2_pass *l2, int ki, fl_kernel_tensor *kt)
{
	const fl_kernel *k = &l2->st->program->kernels[ki];
	const fl_graph *g = l2->st->graph;
	int64_t bytes = fl_dtype_size(g->tensors[kt->tensor].dtype);
	int64_t kib = l2->capacity / 1024;
	char buf[64], sz[96];
	const char *who = needed_outside(l2, ki, kt->tensor, buf, sizeof buf);
	isl_fixed_box *box;
	isl_multi_val *size;

	kt->place = FL_PLACE_GLOBAL;
	if (who) {
		snprintf(kt->why, sizeof kt->why, "stitched edge, stays in "
			 "main memory: %s", who);
		return;
	}
	box = tile_box(k, kt->tensor, g->tensors[kt->tensor].shape.rank);
	if (!box || isl_fixed_box_is_valid(box) != isl_bool_true) {
		isl_fixed_box_free(box);
		snprintf(kt->why, sizeof kt->why, "stitched edge, stays in "
			 "main memory: no fixed per-tile footprint box");
		return;
	}
	kt->rank = g->tensors[kt->tensor].shape.rank;
	size = isl_fixed_box_get_size(box);
	for (int d = 0; d < kt->rank; d++) {
		isl_val *v = isl_multi_val_get_at(size, d);

		kt->box[d] = isl_val_get_num_si(v);
		bytes *= kt->box[d];
		isl_val_free(v);
	}
	isl_multi_val_free(size);
	dims_text(kt->box, kt->rank, sz, sizeof sz);
	if (bytes > l2->capacity) {
		isl_fixed_box_free(box);
		snprintf(kt->why, sizeof kt->why, "stitched edge, stays in "
			 "main memory: per-tile footprint %.40s = %lld B > "
			 "capacity %lld KiB", sz, (long long)bytes,
			 (long long)kib);
		return;
	}
	kt->place = FL_PLACE_TILE_LOCAL;
	kt->box_isl = box;
	kt->bytes_kept = tensor_elems(g, kt->tensor) *
			 fl_dtype_size(g->tensors[kt->tensor].dtype);
	snprintf(kt->why, sizeof kt->why, "stitched edge: per-tile "
		 "footprint %.40s = %lld B <= capacity %lld KiB", sz,
		 (long long)bytes, (long long)kib);
}

/* One placed event per stitched-edge tensor of kernel ki. */
static int decide_edges(l2_pass *l2, int ki, const int *edge, int n_edge)
{
	fl_state *st = l2->st;
	fl_kernel *k = &st->program->kernels[ki];

	for (int e = 0; e < n_edge; e++)
		for (int i = 0; i < k->n_tensors; i++) {
			fl_kernel_tensor *kt = &k->tensors[i];
			int pr = st->graph->tensors[edge[e]].producer;
			const char *op = st->graph->ops[pr].name;

			if (kt->tensor != edge[e])
				continue;
			if (!fl_state_decide(st))
				return FL_PASS_PAUSED;
			place_edge(l2, ki, kt);
			fl_state_log(st, FL_EV_PLACED, "", &op, 1, k->group, -1,
				     "%s: %s %s: %s", k->name,
				     st->graph->tensors[kt->tensor].name,
				     fl_placement_name(kt->place), kt->why);
		}
	return FL_PASS_DONE;
}

/* ---- one pair ------------------------------------------------------------ */

static bool seen_before(const l2_pass *l2, const fl_kernel *p,
			const fl_kernel *c)
{
	for (int i = 0; i < l2->n_seen; i++) {
		const l2_seen *s = &l2->seen[i];

		if (s->p_op == p->ops[0] && s->p_n == p->n_ops &&
		    s->c_op == c->ops[0] && s->c_n == c->n_ops)
			return true;
	}
	return false;
}

static void remember(l2_pass *l2, const fl_kernel *p, const fl_kernel *c)
{
	if (l2->n_seen == l2->cap_seen) {
		int cap = 2 * l2->cap_seen + 16;
		l2_seen *s = realloc(l2->seen, (size_t)cap * sizeof *s);

		if (!s)
			return;	/* only costs a repeated event */
		l2->seen = s;
		l2->cap_seen = cap;
	}
	l2->seen[l2->n_seen++] = (l2_seen){p->ops[0], p->n_ops, c->ops[0],
					   c->n_ops};
}

/* Every condition of the pair (file comment); the common tiling and tile
 * map (*tiles, __isl_give) when they hold, else false with the reason in
 * l2->why. */
static bool check_pair(l2_pass *l2, int pi, int ci, l2_tiling *t,
		       isl_union_pw_multi_aff **tiles)
{
	const fl_kernel *p = &l2->st->program->kernels[pi];
	const fl_kernel *c = &l2->st->program->kernels[ci];
	isl_union_map *reads, *writes;
	isl_union_set *dom;
	l2_tiling tp, tc;
	char sz[64];
	bool ok;
	int via = -1;

	if (l2->type[ci] == FL_TYPE_R && p->reduce_form != c->reduce_form) {
		snprintf(l2->why, sizeof l2->why, "canonical reduction forms "
			 "differ: %s %s, %s %s", p->name,
			 fl_reduce_form_name(p->reduce_form), c->name,
			 fl_reduce_form_name(c->reduce_form));
		return false;
	}
	if (path_between(l2->st->program, pi, ci, &via)) {
		snprintf(l2->why, sizeof l2->why, "stitching would create a "
			 "cycle through %s", via < 0 ? "(out of memory: not "
			 "checked)" : l2->st->program->kernels[via].name);
		return false;
	}
	if (kernel_tiling(l2, p, &tp) < 0 || kernel_tiling(l2, c, &tc) < 0 ||
	    !same_tiling(l2, p, c, &tp, &tc, t))
		return false;
	dom = isl_union_set_union(isl_union_set_copy(p->domain),
				  isl_union_set_copy(c->domain));
	*tiles = tile_map(dom, t);
	reads = both(p->reads, p->domain, c->reads, c->domain);
	writes = both(p->writes, p->domain, c->writes, c->domain);
	ok = *tiles && inside_tiles(reads, writes, *tiles, t->n);
	isl_union_set_free(dom);
	isl_union_map_free(reads);
	isl_union_map_free(writes);
	if (!ok) {
		*tiles = isl_union_pw_multi_aff_free(*tiles);
		snprintf(l2->why, sizeof l2->why, "tiles do not line up: with "
			 "the common tile band %s a dependence between %s and "
			 "%s crosses tiles", dims_text(t->size, t->n, sz,
			 sizeof sz), p->name, c->name);
	}
	return ok;
}

/* The tensors on the edge from p to c, into edge[] (room for all of p's
 * tensors); returns their number. */
static int edge_tensors(const fl_kernel *p, const fl_kernel *c, int *edge)
{
	int n = 0;

	for (int i = 0; i < p->n_tensors; i++)
		if (on_edge(p, c, p->tensors[i].tensor))
			edge[n++] = p->tensors[i].tensor;
	return n;
}

/* The names of the ops of p and c, for an event. */
static const char **pair_names(const fl_state *st, const fl_kernel *p,
			       const fl_kernel *c, int *n)
{
	int *ops = malloc((size_t)(p->n_ops + c->n_ops) * sizeof *ops);
	const char **names;

	if (!ops)
		return NULL;
	memcpy(ops, p->ops, (size_t)p->n_ops * sizeof *ops);
	memcpy(ops + p->n_ops, c->ops, (size_t)c->n_ops * sizeof *ops);
	*n = p->n_ops + c->n_ops;
	names = fl_state_op_names(st, ops, *n);
	free(ops);
	return names;
}

/* Stitches p (pi) and c (ci) into one kernel and logs it; returns the
 * new kernel's index or -1. */
static int stitch(l2_pass *l2, const fl_rule *r, int pi, int ci,
		  const l2_tiling *t, __isl_take isl_union_pw_multi_aff *tiles,
		  const char **names, int n_names)
{
	fl_state *st = l2->st;
	const fl_kernel *p = &st->program->kernels[pi];
	const fl_kernel *c = &st->program->kernels[ci];
	char text[FL_EVENT_REASON], sz[64];
	fl_kernel k;
	int at;

	snprintf(text, sizeof text, "%s: %s -> %s stitched: same tiled "
		 "loops, tile band %s (%.0f tiles), same parallel loops, "
		 "every dependence inside a tile", r->id, p->name, c->name,
		 dims_text(t->size, t->n, sz, sizeof sz), tiles_count(t));
	if (stitch_kernel(&k, p, c, t, tiles) < 0) {
		fl_kernel_clear(&k);
		fl_error_set(l2->err, "layer 2: could not stitch %s and %s",
			     p->name, c->name);
		return -1;
	}
	at = program_stitch(l2, pi, ci, &k);
	if (at < 0) {
		fl_kernel_clear(&k);
		fl_error_set(l2->err, "out of memory");
		return -1;
	}
	fl_state_log(st, FL_EV_MERGED, r->id, names, n_names,
		     st->program->kernels[at].group, -1, "%s -> %s", text,
		     st->program->kernels[at].name);
	return at;
}

/* What trying a pair, or a scan, came to (the pass's own codes apart
 * from FL_PASS_PAUSED). */
enum { L2_NOTHING = 10, L2_STITCHED = 11 };

/* Tries the pair producer pi -> consumer ci: nothing when no layer-2 rule
 * matches or it was rejected before; else one rejected or merged event
 * (and the placements).  L2_STITCHED, L2_NOTHING, FL_PASS_PAUSED or
 * -1. */
static int try_pair(l2_pass *l2, int pi, int ci)
{
	fl_state *st = l2->st;
	const fl_kernel *p = &st->program->kernels[pi];
	const fl_kernel *c = &st->program->kernels[ci];
	const fl_rule *r = layer2_rule(l2, pi, ci);
	isl_union_pw_multi_aff *tiles = NULL;
	const char **names;
	int n_names = 0, n_edge, at, *edge;
	l2_tiling t;

	if (!r || seen_before(l2, p, c))
		return L2_NOTHING;
	if (!fl_state_decide(st))
		return FL_PASS_PAUSED;
	names = pair_names(st, p, c, &n_names);
	edge = malloc(((size_t)p->n_tensors + 1) * sizeof *edge);
	if (!names || !edge) {
		free(names);
		free(edge);
		fl_error_set(l2->err, "out of memory");
		return -1;
	}
	n_edge = edge_tensors(p, c, edge);
	if (!check_pair(l2, pi, ci, &t, &tiles)) {
		fl_state_log(st, FL_EV_REJECTED, r->id, names, n_names,
			     p->group, c->group, "%s: %s -> %s not stitched: "
			     "%s", r->id, p->name, c->name, l2->why);
		remember(l2, p, c);
		at = L2_NOTHING;
	} else {
		at = stitch(l2, r, pi, ci, &t, tiles, names, n_names);
		if (at >= 0)
			at = decide_edges(l2, at, edge, n_edge) ==
			     FL_PASS_PAUSED ? FL_PASS_PAUSED : L2_STITCHED;
	}
	free(names);
	free(edge);
	return at;
}

/* One scan over the producer -> consumer pairs in program order; the
 * first stitch ends it.  L2_STITCHED, L2_NOTHING, FL_PASS_PAUSED or
 * -1. */
static int scan(l2_pass *l2)
{
	const fl_program *prog = l2->st->program;

	for (int pi = 0; pi < prog->n_kernels; pi++)
		for (int ci = pi + 1; ci < prog->n_kernels; ci++) {
			int rc;

			if (!feeds(&prog->kernels[pi], &prog->kernels[ci]))
				continue;
			rc = try_pair(l2, pi, ci);
			if (rc != L2_NOTHING)
				return rc;
		}
	return L2_NOTHING;
}

int fl_pass_layer2(fl_state *st, fl_error *err)
{
	l2_pass l2 = {st, err, fl_stitch_capacity(st->opts), NULL, 0, 0, NULL,
		      ""};
	fl_program *prog = st->program;
	int rc;

	/* apollo is apollo-l2 and layer 3 */
	if ((st->opts->strategy != FL_STRATEGY_APOLLO_L2 &&
	     st->opts->strategy != FL_STRATEGY_APOLLO) || !prog)
		return FL_PASS_DONE;
	l2.type = malloc(((size_t)prog->n_kernels + 1) * sizeof *l2.type);
	if (!l2.type) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int i = 0; i < prog->n_kernels; i++) {
		int gid = prog->kernels[i].group;

		l2.type[i] = gid >= 0 && gid < st->part.n_groups ?
			     st->part.groups[gid].type : (fl_op_type)-1;
	}
	do
		rc = scan(&l2);
	while (rc == L2_STITCHED);
	free(l2.type);
	free(l2.seen);
	return rc == L2_NOTHING ? FL_PASS_DONE : rc;
}
