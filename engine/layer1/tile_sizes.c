/* Tile sizes from the machine (issue 11, "Parallelism and tile sizes").
 *
 * Tile-then-fuse tiles the leading parallel members of the live-out band;
 * this file says by how much, from the machine's cores and caches
 * (engine/machine.h) and the kind of kernel:
 *
 *   - enough tiles for every thread: at least TILES_PER_THREAD x cores
 *     tiles where the extents allow (so that a thread that draws the
 *     slower tiles does not leave the others idle at the end), reached by
 *     shrinking the outer members first -- they cost the least locality;
 *     a member kept whole for its producers (tile.c, find_whole_members)
 *     is never cut, since the producers would then be recomputed once per
 *     piece;
 *   - memory-bound kernels (no matmul/conv update in the nest): the
 *     innermost member as wide as the row, so the vectorised inner loop
 *     and the vector expf/tanhf calls run long stretches, unless one row
 *     of every tensor the tile touches passes ROW_SHARE of the budget;
 *     then the next members grow until the tile touches MB_SHARE of it;
 *   - contraction kernels (a matmul or conv2d update in the nest): an
 *     output tile of TM x TN for a register-blocked micro-kernel with K
 *     inside, which packs a KC x TN panel of B and walks MR x NR register
 *     blocks (NR two vectors wide, MR 6 or 4): TN a multiple of NR up to
 *     256, TM a multiple of 6 or 4 up to 128 (BERT's 128 rows whole: each
 *     tile then packs B once for all of them); the A block (TM x KC), the
 *     B panel (KC x TN) and the C tile together within CB_SHARE of the
 *     budget; among the sizes that fit and give enough tiles, the most
 *     flops per element loaded (2 TM TN / (TM + TN)), padding counted
 *     (the backend collapses tile loops too short to share out).  KC is the
 *     contraction length cut so that a KC x NR sliver of B fills half the
 *     L1.  M is the member the operand that does not depend on N (a
 *     matmul's A, a conv's weights) varies with; N is the tiled member
 *     along which the output is contiguous (innermost first; the isl
 *     scheduler may put a conv's output width outermost).  A conv's output channels play M and its output width N;
 *     when a whole output row is narrower than the panel, several rows
 *     make one N tile (flattened output positions); when a producer may
 *     be recomputed in the tiles (a conv's prologue), rows and columns
 *     are blocked together and the halo the producer would recompute
 *     counts against a size, which must stay within max_recompute.
 *
 * A row reduction's reduced members sit below the tiled ones in the band
 * and run whole in every tile ("rows reduced whole"); only the members
 * above them are sized.
 *
 * The budget is fl_layer1_opts.local_budget, else the per-core L2.  The
 * bytes a memory-bound tile touches are measured with isl on the first
 * tile: the bounding box of every array the nest's statements access in
 * it (fused producers' own inputs are not counted: their outputs, which
 * the nest reads, stand for them).  --tile (o->tile) overrides the sizes
 * of the innermost o->n_tile members, as before.  Never prints; when
 * isl cannot measure a footprint, an estimate from the tile's points
 * stands in, so sizing never fails. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <isl/ilp.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include "layer1_impl.h"
#include "machine.h"

/* Tiles per thread: dynamic enough that uneven tiles (partial ones at the
 * edges, a busy core) even out, few enough that each tile is long. */
#define TILES_PER_THREAD 4
/* A memory-bound tile aims at a quarter of the budget: its data is
 * touched once, so residency buys nothing beyond the tile-local
 * intermediates and the hardware prefetch of the next rows; the rest of
 * L2 is left to those buffers, which the estimate does not fully count. */
#define MB_SHARE 4
/* One row (the innermost member whole) may take half the budget before it
 * is cut: past that, the row's tensors would evict each other. */
#define ROW_SHARE 2
/* Contraction panels within half the budget: the other half holds the
 * next panel being packed and the fused epilogue's operands. */
#define CB_SHARE 2
/* Memory-bound inner tiles are cut in multiples of a cache line of
 * floats (whole vectors for AVX2 and AVX-512). */
#define LINE_FLOATS 16
#define MAX_TN 256
#define ELEM_BYTES 4	/* every tensor is f32 */

static const int64_t tm_steps[] = {128, 96, 72, 64, 48, 32, 24, 16, 12, 8, 6, 4};

typedef struct sizer {
	const fl_l1_band *b;
	const fl_layer1_opts *o;
	const fl_machine *mach;
	int64_t budget;
	int want;
	fl_l1_sizes *out;
	fl_error *err;
} sizer;

/* ---- isl measurements ------------------------------------------------------ */

/* Bounding-box volume of s (taken); -1 when unbounded or isl fails. */
static double box_volume(__isl_take isl_set *s)
{
	isl_size n = isl_set_dim(s, isl_dim_set);
	double vol = 1;

	if (n < 0)
		vol = -1;
	if (isl_set_is_empty(s) == isl_bool_true)
		n = 0, vol = 0;
	for (int d = 0; d < n && vol > 0; d++) {
		isl_val *lo = isl_set_dim_min_val(isl_set_copy(s), d);
		isl_val *hi = isl_set_dim_max_val(isl_set_copy(s), d);

		if (lo && hi && isl_val_is_int(lo) == isl_bool_true &&
		    isl_val_is_int(hi) == isl_bool_true)
			vol *= isl_val_get_d(hi) - isl_val_get_d(lo) + 1;
		else
			vol = -1;
		isl_val_free(lo);
		isl_val_free(hi);
	}
	isl_set_free(s);
	return vol;
}

static isl_stat add_box(__isl_take isl_set *s, void *user)
{
	double *sum = user, v = box_volume(s);

	if (v < 0)
		return isl_stat_error;
	*sum += v;
	return isl_stat_ok;
}

/* The band points of the first tile of sizes sz (every band point whose
 * tiled members lie in [lower, lower + sz)).  __isl_give. */
static isl_union_set *tile_points(const fl_l1_band *b, const int64_t *sz)
{
	isl_set *box = isl_set_copy(b->points);
	isl_ctx *ctx = isl_set_get_ctx(box);

	for (int d = 0; d < b->m_tiled; d++) {
		box = isl_set_lower_bound_val(box, isl_dim_set, (unsigned)d,
			isl_val_int_from_si(ctx, (long)b->lower[d]));
		box = isl_set_upper_bound_val(box, isl_dim_set, (unsigned)d,
			isl_val_int_from_si(ctx, (long)(b->lower[d] + sz[d] - 1)));
	}
	return isl_union_set_from_set(box);
}

/* The instances of the first tile of sizes sz.  __isl_give. */
static isl_union_set *first_tile(const fl_l1_band *b, const int64_t *sz)
{
	return isl_union_set_apply(tile_points(b, sz),
		isl_union_map_reverse(isl_union_map_copy(b->band_map)));
}

/* Bounding-box elements of the operand b2e (band point -> element,
 * kept) the first tile of sizes sz reads; -1 when isl cannot tell. */
static double operand_box(const fl_l1_band *b, __isl_keep isl_union_map *b2e,
			  const int64_t *sz)
{
	isl_union_set *e = isl_union_set_apply(tile_points(b, sz),
					       isl_union_map_copy(b2e));
	double sum = 0;
	isl_stat ok = e ? isl_union_set_foreach_set(e, add_box, &sum)
			: isl_stat_error;

	isl_union_set_free(e);
	return ok == isl_stat_ok ? sum : -1;
}

/* Bytes the first tile of sizes sz touches: per array, the bounding box
 * of the elements the nest's instances in that tile read or write.  When
 * isl cannot bound an array (a gather's may-reads), three tensors of the
 * tile's points stand for the whole tile. */
static double tile_bytes(const sizer *S, const int64_t *sz)
{
	const fl_l1_band *b = S->b;
	isl_union_map *acc = isl_union_map_union(
		isl_union_map_copy(b->m->reads), isl_union_map_copy(b->m->writes));
	isl_union_set *arrays;
	double sum = 0, pts = 1;
	isl_stat ok;

	acc = isl_union_map_intersect_domain(acc, first_tile(b, sz));
	arrays = isl_union_map_range(acc);
	ok = arrays ? isl_union_set_foreach_set(arrays, add_box, &sum)
		    : isl_stat_error;
	isl_union_set_free(arrays);
	if (ok == isl_stat_ok)
		return sum * ELEM_BYTES;
	for (int d = 0; d < b->m_tiled; d++)
		pts *= (double)sz[d];
	return 3 * pts * ELEM_BYTES;
}

/* ---- shared steps ------------------------------------------------------------ */

static int64_t ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

static int64_t balanced(int64_t ext, int64_t t);

/* Tiles of the band's bounding box under sizes sz. */
static double box_tiles(const fl_l1_band *b, const int64_t *sz)
{
	double n = 1;

	for (int d = 0; d < b->m_tiled; d++)
		n *= (double)ceil_div(b->extent[d], sz[d]);
	return n;
}

/* Shrinks the members outermost first, none below min[d] and none kept
 * whole, until the band has S->want tiles or nothing is left to cut.
 * `line` members (the vectorised inner one of a memory-bound kernel)
 * stay multiples of LINE_FLOATS. */
static void shrink_for_threads(const sizer *S, int64_t *sz,
			       const int64_t *min, int line)
{
	const fl_l1_band *b = S->b;

	for (int d = 0; d < b->m_tiled; d++) {
		double tiles = box_tiles(b, sz), others, need;
		int64_t t;

		if (tiles >= S->want)
			return;
		if (b->whole[d] || sz[d] <= min[d])
			continue;
		others = tiles / (double)ceil_div(b->extent[d], sz[d]);
		need = ceil((double)S->want / others);
		t = balanced(b->extent[d],
			     (int64_t)ceil((double)b->extent[d] / need));
		if (d == line && t > LINE_FLOATS)
			t = (t + LINE_FLOATS - 1) / LINE_FLOATS * LINE_FLOATS;
		if (t < min[d])
			t = min[d];
		if (t < sz[d])
			sz[d] = t;
	}
}

/* "512 KiB L2" or "256 KiB budget" into buf. */
static const char *budget_text(const sizer *S, char *buf, size_t n)
{
	snprintf(buf, n, "%lld KiB %s", (long long)(S->budget >> 10),
		 S->o->local_budget > 0 ? "budget" : "L2");
	return buf;
}

/* "; fewer than W tiles: why" when the band has fewer than S->want tiles. */
static const char *shortfall(const sizer *S, const int64_t *sz, char *buf,
			     size_t n)
{
	const fl_l1_band *b = S->b;
	bool whole = false;

	buf[0] = '\0';
	if (box_tiles(b, sz) >= S->want)
		return buf;
	for (int d = 0; d < b->m_tiled; d++)
		whole |= b->whole[d] && b->extent[d] > 1;
	snprintf(buf, n, "; fewer than %d tiles: %s", S->want,
		 whole ? "members kept whole for the producers" :
		 "the band is too small");
	return buf;
}

/* ---- memory-bound kernels ------------------------------------------------------ */

/* t rounded so that the tiles along a member of extent ext are even:
 * ext / ceil(ext / t), so no last tile is a sliver. */
static int64_t balanced(int64_t ext, int64_t t)
{
	return t >= ext ? ext : ceil_div(ext, ceil_div(ext, t));
}

/* Memory-bound sizes (file comment).  When the band has members below
 * the tiled ones (a row reduction's), those run whole inside every tile
 * and are the row; else the innermost tiled member is. */
static void memory_sizes(sizer *S, int64_t *sz)
{
	const fl_l1_band *b = S->b;
	int in = b->m_tiled - 1, row = b->n_members == b->m_tiled ? in : -1;
	int64_t min[FL_MAX_RANK], target = S->budget / MB_SHARE,
		cap = S->budget / ROW_SHARE;
	char budget[40];
	double fp;
	bool cut = false;

	for (int d = 0; d < b->m_tiled; d++) {
		sz[d] = b->whole[d] || d == row ? b->extent[d] : 1;
		min[d] = 1;
	}
	/* the vectorised row is never cut below a line */
	if (row >= 0)
		min[row] = b->extent[row] < LINE_FLOATS ? b->extent[row]
							: LINE_FLOATS;
	fp = tile_bytes(S, sz);
	/* the whole row, unless it alone passes the row cap */
	while (row >= 0 && fp > cap && sz[row] > min[row]) {
		int64_t t = (int64_t)((double)sz[row] * (double)cap / fp);

		t = t / LINE_FLOATS * LINE_FLOATS;
		if (t >= sz[row])
			t = sz[row] / 2 / LINE_FLOATS * LINE_FLOATS;
		sz[row] = t < min[row] ? min[row] : t;
		fp = tile_bytes(S, sz);
		cut = true;
	}
	/* then the next members, inner to outer, up to the target */
	for (int d = row >= 0 ? row - 1 : in; d >= 0 && !cut; d--) {
		int64_t grow;

		if (b->whole[d])
			continue;
		grow = fp > 0 ? (int64_t)((double)target / fp) : b->extent[d];
		if (grow < 2)
			break;
		sz[d] = balanced(b->extent[d], grow);
		fp = tile_bytes(S, sz);
		while (fp > target && sz[d] > 1) {
			sz[d] = balanced(b->extent[d], (sz[d] + 1) / 2);
			fp = tile_bytes(S, sz);
		}
		if (sz[d] < b->extent[d])
			break;
	}
	shrink_for_threads(S, sz, min, row);
	S->out->kind = FL_TILE_MEMORY;
	S->out->bytes = (int64_t)tile_bytes(S, sz);
	snprintf(S->out->why, sizeof S->out->why, "memory-bound, %s: "
		 "%lld KiB a tile, aim 1/%d of %s",
		 row < 0 ? "rows reduced whole" :
		 sz[row] == b->extent[row] ? "whole rows" : "rows cut to fit L2",
		 (long long)(S->out->bytes >> 10), MB_SHARE,
		 budget_text(S, budget, sizeof budget));
}

/* ---- contraction kernels ------------------------------------------------------- */

/* Whether the band-point -> element relation b2e (kept) is the same for
 * every value of member d. */
static bool independent_of(const fl_l1_band *b, __isl_keep isl_union_map *b2e,
			   int d)
{
	isl_space *sp = isl_space_set_alloc(b->m->ctx, 0,
					    (unsigned)b->n_members);
	isl_map *vary = isl_map_universe(isl_space_map_from_set(sp));
	isl_union_map *moved;
	isl_bool sub;

	for (int j = 0; j < b->n_members; j++)
		if (j != d)
			vary = isl_map_equate(vary, isl_dim_in, j, isl_dim_out, j);
	moved = isl_union_map_apply_range(isl_union_map_from_map(vary),
					  isl_union_map_copy(b2e));
	moved = isl_union_map_intersect_domain(moved,
		isl_union_map_domain(isl_union_map_copy(b2e)));
	sub = isl_union_map_is_subset(moved, b2e);
	isl_union_map_free(moved);
	return sub == isl_bool_true;
}

/* The update statement of a matmul or conv2d in the nest, or NULL. */
static const fl_l1_stmt *contraction_stmt(const fl_l1_band *b)
{
	const fl_l1_model *m = b->m;

	for (int i = 0; i < m->n_stmts; i++) {
		const fl_l1_stmt *s = &m->stmts[i];
		fl_op_kind k = m->g->ops[s->op].kind;
		isl_union_set *in;
		bool inside;

		if (s->role != FL_STMT_UPDATE ||
		    (k != FL_OP_MATMUL && k != FL_OP_CONV2D))
			continue;
		in = isl_union_set_intersect(isl_union_set_copy(b->lo_dom),
			isl_union_set_from_set(isl_set_copy(s->poly->domain)));
		inside = isl_union_set_is_empty(in) == isl_bool_false;
		isl_union_set_free(in);
		if (inside)
			return s;
	}
	return NULL;
}

/* The member playing M: the innermost tiled member other than N that
 * the operand not depending on N (a matmul's A, a conv's weights)
 * depends on; -1 when no operand is so (N's the only tiled member).
 * *b2n gets the band point -> element map of the first operand that
 * depends on N (a matmul's B, a conv's input), or stays NULL. */
static int m_member(const fl_l1_band *b, const fl_l1_stmt *s, int n,
		    isl_union_map **b2n)
{
	isl_union_map *p2i = isl_union_map_reverse(isl_union_map_intersect_domain(
		isl_union_map_copy(b->band_map),
		isl_union_set_from_set(isl_set_copy(s->poly->domain))));
	int found = -1;

	for (int r = 0; r < s->poly->n_reads && found < 0; r++) {
		isl_union_map *b2e;

		if (s->poly->reads[r].input < 0)
			continue;	/* the accumulator */
		b2e = isl_union_map_apply_range(isl_union_map_copy(p2i),
			isl_union_map_from_map(isl_map_copy(
				s->poly->reads[r].access)));
		if (independent_of(b, b2e, n)) {
			for (int d = b->m_tiled - 1; d >= 0 && found < 0; d--)
				if (d != n && !independent_of(b, b2e, d))
					found = d;
		} else if (!*b2n) {
			*b2n = isl_union_map_copy(b2e);
		}
		isl_union_map_free(b2e);
	}
	isl_union_map_free(p2i);
	return found;
}

/* The tiled member along which the output is contiguous (its last index
 * moves), innermost first; -1 when none.  The isl scheduler may put a
 * conv's output width outermost in the band: N must still be the width,
 * so that the micro-kernel stores and loads its columns as vectors. */
static int contiguous_member(const fl_l1_band *b, const fl_l1_stmt *s)
{
	isl_union_map *p2i = isl_union_map_reverse(isl_union_map_intersect_domain(
		isl_union_map_copy(b->band_map),
		isl_union_set_from_set(isl_set_copy(s->poly->domain))));
	isl_map *w = isl_map_copy(s->poly->write);
	isl_size n_out = isl_map_dim(w, isl_dim_out);
	isl_union_map *b2l;
	int found = -1;

	if (n_out > 1)
		w = isl_map_project_out(w, isl_dim_out, 0, (unsigned)(n_out - 1));
	b2l = isl_union_map_apply_range(p2i, isl_union_map_from_map(w));
	for (int d = b->m_tiled - 1; d >= 0 && found < 0; d--)
		if (!independent_of(b, b2l, d))
			found = d;
	isl_union_map_free(b2l);
	return found;
}

/* The innermost tiled member other than m and n, not kept whole, that
 * the output varies along; -1 when none. */
static int rows_member(const fl_l1_band *b, const fl_l1_stmt *s, int m, int n)
{
	isl_union_map *b2w = isl_union_map_apply_range(
		isl_union_map_reverse(isl_union_map_intersect_domain(
			isl_union_map_copy(b->band_map),
			isl_union_set_from_set(isl_set_copy(s->poly->domain)))),
		isl_union_map_from_map(isl_map_copy(s->poly->write)));
	int found = -1;

	for (int d = b->m_tiled - 1; d >= 0 && found < 0; d--)
		if (d != m && d != n && !b->whole[d] &&
		    !independent_of(b, b2w, d))
			found = d;
	isl_union_map_free(b2w);
	return found;
}

/* The contraction length: update instances per output element. */
static double k_extent(const fl_l1_stmt *s)
{
	double all = box_volume(isl_set_copy(s->poly->domain));
	double out = box_volume(isl_map_range(isl_map_intersect_domain(
		isl_map_copy(s->poly->write), isl_set_copy(s->poly->domain))));

	return all > 0 && out > 0 ? all / out : 1;
}

/* One candidate output tile: TM x (TR rows of TN). */
typedef struct cand {
	int64_t tm, tn, tr;
	bool fits;
	double tiles, score, bytes, halo;
} cand;

/* How much more of the operand b2e (a conv's input) a tile of sizes sz
 * reads per output point along members rr and nn than the whole band
 * does: the overlap of neighbouring tiles (a stencil's halo), which a
 * producer recomputed in the tiles pays as its recomputation factor. */
static double halo(const fl_l1_band *b, __isl_keep isl_union_map *b2e,
		   const int64_t *sz, int rr, int nn)
{
	int64_t all[FL_MAX_RANK];
	double a, w, pa, pw;

	memcpy(all, sz, sizeof all);
	all[nn] = b->extent[nn];
	if (rr >= 0)
		all[rr] = b->extent[rr];
	a = operand_box(b, b2e, sz);
	w = operand_box(b, b2e, all);
	pa = (double)sz[nn] * (double)(rr >= 0 ? sz[rr] : 1);
	pw = (double)all[nn] * (double)(rr >= 0 ? all[rr] : 1);
	return a > 0 && w > 0 ? a / pa / (w / pw) : 1;
}

/* Whether a is the better candidate: fits the panels' share first, then
 * enough tiles (capped at want), then flops per element loaded with the
 * padding of partial tiles counted, then the wider N.  How the tiles are
 * shared out is the C backend's: isl drops a tile loop of one iteration,
 * and a parallel loop with too few iterations is collapsed with the
 * coincident tile loops below it. */
static bool better(const cand *a, const cand *b, int want)
{
	double ta = a->tiles < want ? a->tiles : want;
	double tb = b->tiles < want ? b->tiles : want;

	if (a->fits != b->fits)
		return a->fits;
	if (ta != tb)
		return ta > tb;
	if (a->score != b->score)
		return a->score > b->score;
	return a->tn * a->tr > b->tn * b->tr;
}

/* Sizes in steps: the extent itself when at most `max`, and the given
 * steps below it; at least the extent when it is below every step. */
static int steps_of(int64_t ext, int64_t max, const int64_t *steps, int n,
		    int64_t *out)
{
	int k = 0;

	if (ext <= max)
		out[k++] = ext;
	for (int i = 0; i < n; i++)
		if (steps[i] < ext && steps[i] <= max)
			out[k++] = steps[i];
	if (k == 0)
		out[k++] = ext;
	return k;
}

/* Evaluates tm x (tr x tn) with the other members at sz; with b2e (the
 * operand a fused producer would feed), the halo counts against it. */
static cand evaluate(const sizer *S, int64_t *sz, int mm, int nn, int rr,
		     int64_t tm, int64_t tn, int64_t tr, double kc,
		     __isl_keep isl_union_map *b2e)
{
	const fl_l1_band *b = S->b;
	double ne = (double)(tn * tr), pad = 1;
	cand c = {tm, tn, tr, false, 0, 0, 0, 1};

	if (mm >= 0)
		sz[mm] = tm;
	sz[nn] = tn;
	if (rr >= 0)
		sz[rr] = tr;
	c.tiles = box_tiles(b, sz);
	c.bytes = ELEM_BYTES * ((double)tm * kc + kc * ne + (double)tm * ne);
	c.fits = c.bytes <= (double)S->budget / CB_SHARE;
	pad *= mm >= 0 ? (double)b->extent[mm] /
			 (double)(ceil_div(b->extent[mm], tm) * tm) : 1;
	pad *= (double)b->extent[nn] / (double)(ceil_div(b->extent[nn], tn) * tn);
	if (rr >= 0)
		pad *= (double)b->extent[rr] /
		       (double)(ceil_div(b->extent[rr], tr) * tr);
	c.score = 2 * (double)tm * ne / ((double)tm + ne) * pad;
	if (b2e) {
		c.halo = halo(b, b2e, sz, rr, nn);
		c.fits &= c.halo <= S->o->max_recompute;
		c.score /= c.halo;
	}
	return c;
}

static void contraction_sizes(sizer *S, int64_t *sz, const fl_l1_stmt *s)
{
	const fl_l1_band *b = S->b;
	isl_union_map *b2n = NULL;
	int cn = contiguous_member(b, s);
	int nn = cn >= 0 ? cn : b->m_tiled - 1, mm = m_member(b, s, nn, &b2n);
	int rr = nn - 1 > mm && nn >= 1 && !b->whole[nn - 1] ? nn - 1 : -1;

	/* N moved out of the innermost place (a conv's width): the rows that
	   make up an N tile are the innermost other member the output
	   varies along (the conv's output rows) */
	if (nn != b->m_tiled - 1)
		rr = rows_member(b, s, mm, nn);
	/* a producer that may be recomputed in the tiles of a conv (rows
	 * and columns both tiled) pays for the halo: count it */
	isl_union_map *stencil = b->producers && rr >= 0 ? b2n : NULL;
	int nr = S->mach->vector_bits >= 256 ? 2 * S->mach->vector_bits / 32
		 : 16;
	double k = k_extent(s), kc = k;
	int64_t tms[16], tns[MAX_TN / 8 + 2], tn_steps[MAX_TN / 8 + 1], trs[8];
	int n_tm, n_tn, n_st = 0, n_tr = 0;
	cand best = {0, 0, 0, false, -1, -1, 0, 1};
	char budget[40];

	/* KC: the B panel's K x NR sliver fills half the L1 */
	if (kc > (double)S->mach->l1d / 2 / (nr * ELEM_BYTES))
		kc = (double)S->mach->l1d / 2 / (nr * ELEM_BYTES);
	for (int d = 0; d < b->m_tiled; d++)
		sz[d] = b->whole[d] ? b->extent[d] : 1;
	for (int64_t t = MAX_TN / nr * nr; t >= nr; t -= nr)
		tn_steps[n_st++] = t;
	if (mm >= 0 && b->whole[mm])
		tms[0] = b->extent[mm], n_tm = 1;
	else if (mm >= 0)
		n_tm = steps_of(b->extent[mm], tm_steps[0], tm_steps,
				(int)(sizeof tm_steps / sizeof *tm_steps), tms);
	else
		tms[0] = 1, n_tm = 1;
	n_tn = steps_of(b->extent[nn], MAX_TN, tn_steps, n_st, tns);
	for (int64_t r = 1; r <= 64 && n_tr < 8; r *= 2)
		if (r == 1 || (rr >= 0 && r <= b->extent[rr]))
			trs[n_tr++] = r;
	for (int i = 0; i < n_tm; i++)
		for (int j = 0; j < n_tn; j++)
			for (int r = 0; r < n_tr; r++) {
				cand c;

				/* several rows when one row is whole, or as
				 * blocks when a halo counts */
				if (trs[r] > 1 && ((!stencil &&
				    tns[j] < b->extent[nn]) ||
				    (double)(tns[j] * trs[r]) > MAX_TN))
					continue;
				c = evaluate(S, sz, mm, nn, rr, tms[i], tns[j],
					     trs[r], kc, stencil);
				if (best.score < 0 || better(&c, &best, S->want))
					best = c;
			}
	evaluate(S, sz, mm, nn, rr, best.tm, best.tn, best.tr, kc, NULL);
	isl_union_map_free(b2n);
	S->out->kind = FL_TILE_CONTRACTION;
	S->out->tile_m = mm;
	S->out->tile_n = nn;
	S->out->bytes = (int64_t)best.bytes;
	snprintf(S->out->why, sizeof S->out->why, "contraction (K %.0f, KC "
		 "%.0f): A %lld x KC + B KC x %lld + C = %lld KiB, within 1/%d "
		 "of %s", k, kc, (long long)best.tm,
		 (long long)(best.tn * best.tr),
		 (long long)(S->out->bytes >> 10), CB_SHARE,
		 budget_text(S, budget, sizeof budget));
}

/* ---- the choice ----------------------------------------------------------------- */

/* --tile: user sizes for the innermost o->n_tile members. */
static bool user_sizes(sizer *S, int64_t *sz)
{
	const fl_l1_band *b = S->b;
	const fl_layer1_opts *o = S->o;
	bool any = false;

	for (int d = 0; d < b->m_tiled; d++) {
		int j = d - (b->m_tiled - o->n_tile);

		if (o->n_tile > 0 && j >= 0 && j < o->n_tile && o->tile[j] > 0) {
			sz[d] = o->tile[j];
			any = true;
		}
	}
	return any;
}

int fl_l1_choose_sizes(const fl_l1_band *b, const fl_layer1_opts *o,
		       fl_l1_sizes *out, fl_error *err)
{
	sizer S = {b, o, o->machine ? o->machine : fl_machine_get(), 0, 0, out,
		   err};
	const fl_l1_stmt *con = contraction_stmt(b);
	int64_t *sz = out->tile;
	char few[96], budget[40];

	memset(out, 0, sizeof *out);
	out->tile_m = out->tile_n = -1;
	S.budget = o->local_budget > 0 ? o->local_budget : S.mach->l2;
	if (S.budget <= 0)
		S.budget = 512 * 1024;
	S.want = TILES_PER_THREAD * (S.mach->cores > 0 ? S.mach->cores : 1);
	out->want = S.want;
	if (con)
		contraction_sizes(&S, sz, con);
	else
		memory_sizes(&S, sz);
	if (user_sizes(&S, sz)) {
		for (int d = 0; d < b->m_tiled; d++)
			if (sz[d] > b->extent[d])
				sz[d] = b->extent[d] < 1 ? 1 : b->extent[d];
		out->kind = FL_TILE_USER;
		out->bytes = (int64_t)tile_bytes(&S, sz);
		snprintf(out->why, sizeof out->why, "sizes from --tile: "
			 "%lld KiB a tile, of %s",
			 (long long)(out->bytes >> 10),
			 budget_text(&S, budget, sizeof budget));
	}
	for (int d = 0; d < b->m_tiled; d++)
		if (sz[d] < 1)
			sz[d] = 1;
	out->tiles = box_tiles(b, sz);
	shortfall(&S, sz, few, sizeof few);
	if (few[0]) {
		size_t at = strlen(out->why);

		snprintf(out->why + at, sizeof out->why - at, "%s", few);
	}
	(void)err;
	return 0;
}
