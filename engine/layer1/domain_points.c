/* The iteration-domain model of a kernel's statements (see
 * domain_points.h): statements, their extent, and windows of their
 * points with tiles and overlap.  Reads the kernel only. */
#include "domain_points.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/ilp.h>
#include <isl/local_space.h>
#include <isl/map.h>
#include <isl/schedule_node.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

struct fl_domain {
	int n_stmts, cap;
	fl_domain_stmt *stmts;
	isl_set **sets;		/* per statement, owned */
	isl_union_set *copies;	/* instances the extension nodes add */
	const fl_kernel *k;	/* while building only */
};

/* ---- the statements ---------------------------------------------- */

/* The bound of dimension pos of set (min or max), LONG_MIN/LONG_MAX when
 * it has none or it does not fit. */
static long dim_bound(__isl_keep isl_set *set, int pos, bool max)
{
	isl_local_space *ls = isl_local_space_from_space(isl_set_get_space(set));
	isl_aff *x = isl_aff_var_on_domain(ls, isl_dim_set, pos);
	isl_val *v = max ? isl_set_max_val(set, x) : isl_set_min_val(set, x);
	long r = max ? LONG_MAX : LONG_MIN;

	if (v && isl_val_is_int(v) == isl_bool_true)
		r = isl_val_get_num_si(v);
	isl_val_free(v);
	isl_aff_free(x);
	return r;
}

/* The position of "S<op>_<k>"'s op in kernel->ops, and k. */
static void stmt_order(const fl_kernel *k, fl_domain_stmt *s)
{
	int op = -1, sk = 0;

	sscanf(s->name, "S%d_%d", &op, &sk);
	s->op_pos = k->n_ops;
	s->k = sk;
	for (int i = 0; i < k->n_ops; i++)
		if (k->ops[i] == op)
			s->op_pos = i;
}

static int grow(fl_domain *d)
{
	int cap = d->cap ? 2 * d->cap : 8;
	fl_domain_stmt *s = realloc(d->stmts, (size_t)cap * sizeof *s);
	isl_set **sets;

	if (!s)
		return -1;
	d->stmts = s;
	sets = realloc(d->sets, (size_t)cap * sizeof *sets);
	if (!sets)
		return -1;
	d->sets = sets;
	d->cap = cap;
	return 0;
}

static isl_stat add_stmt(__isl_take isl_set *set, void *user)
{
	fl_domain *d = user;
	const char *name = isl_set_get_tuple_name(set);
	isl_size n = isl_set_dim(set, isl_dim_set);
	fl_domain_stmt *s;

	if (!name || n < 0 || n > FL_DOMAIN_MAXD) {
		isl_set_free(set);
		return isl_stat_ok;
	}
	if (d->n_stmts == d->cap && grow(d) < 0) {
		isl_set_free(set);
		return isl_stat_error;
	}
	s = &d->stmts[d->n_stmts];
	memset(s, 0, sizeof *s);
	snprintf(s->name, sizeof s->name, "%s", name);
	s->n_dims = n;
	for (int i = 0; i < n; i++) {
		s->lo[i] = dim_bound(set, i, false);
		s->hi[i] = dim_bound(set, i, true);
	}
	stmt_order(d->k, s);
	d->sets[d->n_stmts++] = set;
	return isl_stat_ok;
}

/* Program order of statements i and j. */
static int stmt_before(const fl_domain_stmt *x, const fl_domain_stmt *y)
{
	if (x->op_pos != y->op_pos)
		return x->op_pos < y->op_pos ? -1 : 1;
	return x->k < y->k ? -1 : x->k > y->k;
}

/* Sorts statements and their sets together (insertion: a kernel has a
 * few dozen statements at most). */
static void sort_stmts(fl_domain *d)
{
	for (int i = 1; i < d->n_stmts; i++)
		for (int j = i; j > 0 &&
		     stmt_before(&d->stmts[j - 1], &d->stmts[j]) > 0; j--) {
			fl_domain_stmt t = d->stmts[j];
			isl_set *ts = d->sets[j];

			d->stmts[j] = d->stmts[j - 1];
			d->sets[j] = d->sets[j - 1];
			d->stmts[j - 1] = t;
			d->sets[j - 1] = ts;
		}
}

/* Adds the range of every extension map below node to *copies. */
static void find_copies(__isl_keep isl_schedule_node *node,
			isl_union_set **copies)
{
	isl_size n = isl_schedule_node_n_children(node);

	if (isl_schedule_node_get_type(node) == isl_schedule_node_extension)
		*copies = isl_union_set_union(*copies, isl_union_map_range(
			isl_schedule_node_extension_get_extension(node)));
	for (int i = 0; i < n; i++) {
		isl_schedule_node *c = isl_schedule_node_get_child(node, i);

		find_copies(c, copies);
		isl_schedule_node_free(c);
	}
}

fl_domain *fl_domain_new(const fl_kernel *k, fl_error *err)
{
	fl_domain *d = calloc(1, sizeof *d);
	isl_schedule_node *root;

	if (!d) {
		fl_error_set(err, "out of memory");
		return NULL;
	}
	if (!k->domain || !k->schedule) {
		fl_error_set(err, "kernel %d has no polyhedral model (a custom "
			     "op's hand-written loop nest)", k->id);
		return fl_domain_free(d), NULL;
	}
	d->k = k;
	if (isl_union_set_foreach_set(k->domain, add_stmt, d) < 0) {
		fl_error_set(err, "out of memory");
		return fl_domain_free(d), NULL;
	}
	if (d->n_stmts == 0) {
		fl_error_set(err, "kernel %d has no statements", k->id);
		return fl_domain_free(d), NULL;
	}
	d->k = NULL;
	sort_stmts(d);
	d->copies = isl_union_set_empty(isl_union_set_get_space(k->domain));
	root = isl_schedule_get_root(k->schedule);
	if (root)
		find_copies(root, &d->copies);
	isl_schedule_node_free(root);
	return d;
}

void fl_domain_free(fl_domain *d)
{
	if (!d)
		return;
	for (int i = 0; i < d->n_stmts; i++)
		isl_set_free(d->sets[i]);
	free(d->sets);
	free(d->stmts);
	isl_union_set_free(d->copies);
	free(d);
}

int fl_domain_n_stmts(const fl_domain *d)
{
	return d->n_stmts;
}

const fl_domain_stmt *fl_domain_stmt_at(const fl_domain *d, int i)
{
	return i >= 0 && i < d->n_stmts ? &d->stmts[i] : NULL;
}

int fl_domain_find(const fl_domain *d, const char *name)
{
	for (int i = 0; i < d->n_stmts; i++)
		if (!strcmp(d->stmts[i].name, name))
			return i;
	return -1;
}

__isl_keep isl_set *fl_domain_stmt_set(const fl_domain *d, int i)
{
	return i >= 0 && i < d->n_stmts ? d->sets[i] : NULL;
}

void fl_domain_names(const fl_domain *d, char *buf, size_t n)
{
	size_t used = 0;

	if (n)
		buf[0] = '\0';
	for (int i = 0; i < d->n_stmts && used + 1 < n; i++) {
		int r = snprintf(buf + used, n - used, "%s%s", i ? " " : "",
				 d->stmts[i].name);

		used += r > 0 ? (size_t)r : 0;
	}
}

bool fl_domain_is_copy_of(const char *copy, const char *base)
{
	size_t n = strlen(base);

	return !strncmp(copy, base, n) && copy[n] == '_' && copy[n + 1] == 'r';
}

/* ---- windows ------------------------------------------------------ */

int fl_domain_point_coords(__isl_keep isl_point *pt, int n, long *v)
{
	for (int i = 0; i < n; i++) {
		isl_val *x = isl_point_get_coordinate_val(pt, isl_dim_set, i);

		if (!x)
			return -1;
		v[i] = isl_val_get_num_si(x);
		isl_val_free(x);
	}
	return 0;
}

int fl_domain_tile_colour(const fl_domain_point *p)
{
	long k = 0;

	if (!p->n_tiles)
		return 0;
	for (int i = 0; i < p->n_tile; i++)
		k += (long)p->tile[i] * (2 * (p->n_tile - 1 - i) + 1);
	return (int)(k < 0 ? -k : k);
}

/* set (whose dimensions off.. are the statement's) with the dimensions
 * not shown fixed at their chosen values. */
static __isl_give isl_set *fix_others(const fl_domain_window *win, int n,
				      __isl_take isl_set *set, int off)
{
	for (int d = 0; d < n; d++)
		if (d != win->dim_x && d != win->dim_y)
			set = isl_set_fix_si(set, isl_dim_set, off + d,
					     (int)win->fixed[d]);
	return set;
}

static __isl_give isl_set *bound_dim(__isl_take isl_set *set, int pos,
				     long lo, long hi)
{
	set = isl_set_lower_bound_si(set, isl_dim_set, pos, (int)lo);
	return isl_set_upper_bound_si(set, isl_dim_set, pos, (int)hi);
}

__isl_give isl_set *fl_domain_window_cut(const fl_domain_window *win,
					 __isl_take isl_set *set, int off)
{
	isl_size n = isl_set_dim(set, isl_dim_set);

	if (n < off)
		return isl_set_free(set);
	set = fix_others(win, n - off, set, off);
	if (win->dim_y >= 0)
		set = bound_dim(set, off + win->dim_y, win->y0,
				win->y0 + win->h - 1);
	if (win->dim_x >= 0)
		set = bound_dim(set, off + win->dim_x, win->x0,
				win->x0 + win->w - 1);
	return set;
}

fl_domain_point *fl_domain_window_at(const fl_domain_window *win,
				     const long *inst)
{
	long y = win->dim_y >= 0 ? inst[win->dim_y] - win->y0 : 0;
	long x = win->dim_x >= 0 ? inst[win->dim_x] - win->x0 : 0;

	if (y < 0 || y >= win->h || x < 0 || x >= win->w)
		return NULL;
	return &win->pts[y * win->w + x];
}

static int tile_cmp(const int *a, const int *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

/* What to do to each point of a region: mark it an instance, or add a
 * tile to it. */
typedef struct region_op {
	fl_domain_window *win;
	int n;			/* statement dimensions */
	bool add_tile;
	int n_tile;
	int tile[FL_DOMAIN_MAXD];
} region_op;

static void region_cell(fl_domain_point *p, const region_op *op)
{
	if (!op->add_tile) {
		p->in = true;
		return;
	}
	if (!p->in)
		return;
	if (!p->n_tiles || tile_cmp(op->tile, p->tile, op->n_tile) < 0)
		memcpy(p->tile, op->tile, sizeof op->tile);
	p->n_tile = op->n_tile;
	p->n_tiles++;
}

static isl_stat region_point(__isl_take isl_point *pt, void *user)
{
	const region_op *op = user;
	long v[FL_DOMAIN_MAXD];
	fl_domain_point *p;

	if (fl_domain_point_coords(pt, op->n, v) == 0 &&
	    (p = fl_domain_window_at(op->win, v)))
		region_cell(p, op);
	isl_point_free(pt);
	return isl_stat_ok;
}

/* Bounds of region r along d into lo, hi (d < 0: the single value 0);
 * false when unbounded. */
static bool region_bounds(__isl_keep isl_set *r, int d, long *lo, long *hi)
{
	if (d < 0) {
		*lo = *hi = 0;
		return true;
	}
	*lo = dim_bound(r, d, false);
	*hi = dim_bound(r, d, true);
	return *lo != LONG_MIN && *hi != LONG_MAX;
}

/* Is r (inside the window) the whole box [ylo, yhi] x [xlo, xhi]? */
static bool region_is_box(const region_op *op, __isl_keep isl_set *r,
			  const long *b)
{
	const fl_domain_window *win = op->win;
	isl_set *box = fix_others(win, op->n,
				  isl_set_universe(isl_set_get_space(r)), 0);
	bool rect;

	if (win->dim_y >= 0)
		box = bound_dim(box, win->dim_y, b[0], b[1]);
	if (win->dim_x >= 0)
		box = bound_dim(box, win->dim_x, b[2], b[3]);
	rect = isl_set_is_equal(r, box) == isl_bool_true;
	isl_set_free(box);
	return rect;
}

/* Applies op to the points of r, a set of the statement's instances
 * inside the window (taken); its bounding box (y lo, hi, x lo, hi) into
 * b.  A region that is a rectangle - the common case: a domain, a tile -
 * is filled from its bounds; any other is enumerated point by point
 * (bounded by the window).  False when r is empty. */
static bool region_apply(const region_op *op, __isl_take isl_set *r, long *b)
{
	fl_domain_window *win = op->win;
	bool bounded;

	if (!r || isl_set_is_empty(r) != isl_bool_false) {
		isl_set_free(r);
		return false;
	}
	bounded = region_bounds(r, win->dim_y, &b[0], &b[1]) &&
		  region_bounds(r, win->dim_x, &b[2], &b[3]);
	if (!bounded || !region_is_box(op, r, b)) {
		isl_set_foreach_point(r, region_point, (void *)op);
		isl_set_free(r);
		return bounded;
	}
	isl_set_free(r);
	for (long y = b[0]; y <= b[1]; y++)
		for (long x = b[2]; x <= b[3]; x++) {
			long wy = win->dim_y >= 0 ? y - win->y0 : 0;
			long wx = win->dim_x >= 0 ? x - win->x0 : 0;

			region_cell(&win->pts[wy * win->w + wx], op);
		}
	return true;
}

/* A tile with instances in the window: kept with its box. */
static int tile_add(fl_domain_window *win, const region_op *op, const long *b)
{
	fl_domain_tile *t = realloc(win->tiles, (size_t)(win->n_tiles + 1) *
						sizeof *t);

	if (!t)
		return -1;
	win->tiles = t;
	t = &win->tiles[win->n_tiles++];
	memset(t, 0, sizeof *t);
	t->n_tile = op->n_tile;
	memcpy(t->coord, op->tile, sizeof t->coord);
	t->y_lo = b[0];
	t->y_hi = b[1];
	t->x_lo = b[2];
	t->x_hi = b[3];
	return 0;
}

/* The tiles (points of the domain of tile2inst) and the instances in
 * each. */
typedef struct tile_walk {
	region_op op;
	isl_map *tile2inst;	/* tile -> instances in the window */
	int failed;
} tile_walk;

static isl_stat tile_region(__isl_take isl_point *pt, void *user)
{
	tile_walk *t = user;
	long v[FL_DOMAIN_MAXD], b[4];

	if (fl_domain_point_coords(pt, t->op.n_tile, v) == 0) {
		isl_set *one = isl_set_from_point(isl_point_copy(pt));

		for (int i = 0; i < t->op.n_tile; i++)
			t->op.tile[i] = (int)v[i];
		if (region_apply(&t->op, isl_set_apply(one,
				 isl_map_copy(t->tile2inst)), b) &&
		    tile_add(t->op.win, &t->op, b) < 0)
			t->failed = -1;
	}
	isl_point_free(pt);
	return t->failed < 0 ? isl_stat_error : isl_stat_ok;
}

/* Adds the tiles of map tile2inst (tile -> window instances, taken) to
 * the points, one region per tile. */
static int tiles_apply(fl_domain_window *win, int n,
		       __isl_take isl_map *tile2inst)
{
	tile_walk t = {{win, n, true, 0, {0}}, tile2inst, 0};
	isl_size nt = isl_map_dim(tile2inst, isl_dim_in);
	isl_set *tiles;

	if (nt < 0 || nt > FL_DOMAIN_MAXD) {
		isl_map_free(tile2inst);
		return 0;
	}
	t.op.n_tile = nt;
	tiles = isl_map_domain(isl_map_copy(tile2inst));
	isl_set_foreach_point(tiles, tile_region, &t);
	isl_set_free(tiles);
	isl_map_free(tile2inst);
	return t.failed;
}

typedef struct copy_walk {
	const fl_domain *d;
	fl_domain_window *win;
	int failed;
} copy_walk;

/* A copy [tile, instance] of the window's statement: its tiles. */
static isl_stat copy_tiles(__isl_take isl_set *set, void *user)
{
	copy_walk *c = user;
	const fl_domain_stmt *s = &c->d->stmts[c->win->stmt];
	const char *name = isl_set_get_tuple_name(set);
	isl_size n = isl_set_dim(set, isl_dim_set);

	if (!name || !fl_domain_is_copy_of(name, s->name) || n < s->n_dims ||
	    n - s->n_dims > FL_DOMAIN_MAXD) {
		isl_set_free(set);
		return isl_stat_ok;
	}
	c->win->copied = true;
	set = fl_domain_window_cut(c->win, set, n - s->n_dims);
	/* [] -> S_r[t, i] becomes [t] -> S_r[i]. */
	if (tiles_apply(c->win, s->n_dims, isl_map_move_dims(
			isl_map_from_range(set), isl_dim_in, 0, isl_dim_out,
			0, n - s->n_dims)) < 0)
		c->failed = -1;
	return c->failed < 0 ? isl_stat_error : isl_stat_ok;
}

/* The tiles of a tiled statement's window instances: inst2tile cut to
 * the window, reversed. */
static isl_stat tiled_piece(__isl_take isl_map *m, void *user)
{
	copy_walk *c = user;
	isl_size n = isl_map_dim(m, isl_dim_in);

	if (tiles_apply(c->win, n, isl_map_reverse(m)) < 0)
		c->failed = -1;
	return c->failed < 0 ? isl_stat_error : isl_stat_ok;
}

static void tiled_tiles(copy_walk *c, const fl_kernel *k)
{
	isl_union_map *m;

	if (!k->inst2tile)
		return;
	m = isl_union_map_from_union_pw_multi_aff(
		isl_union_pw_multi_aff_copy(k->inst2tile));
	m = isl_union_map_intersect_domain(m, isl_union_set_from_set(
		fl_domain_window_cut(c->win, isl_set_copy(
			c->d->sets[c->win->stmt]), 0)));
	isl_union_map_foreach_map(m, tiled_piece, c);
	isl_union_map_free(m);
}

static int tile_sort_cmp(const void *a, const void *b)
{
	const fl_domain_tile *x = a, *y = b;

	if (x->n_tile != y->n_tile)
		return x->n_tile < y->n_tile ? -1 : 1;
	return tile_cmp(x->coord, y->coord, x->n_tile);
}

/* Sorts the tiles, merges those found twice (a tile with two copies of
 * the statement: boxes joined), numbers the points' first tiles, counts
 * instances and overlap. */
static void tiles_finish(fl_domain_window *win)
{
	int m = 0;

	if (win->n_tiles)
		qsort(win->tiles, (size_t)win->n_tiles, sizeof *win->tiles,
		      tile_sort_cmp);
	for (int i = 0; i < win->n_tiles; i++) {
		fl_domain_tile *t = &win->tiles[i];
		fl_domain_tile *u = m ? &win->tiles[m - 1] : NULL;

		if (u && !tile_sort_cmp(t, u)) {
			u->x_lo = t->x_lo < u->x_lo ? t->x_lo : u->x_lo;
			u->y_lo = t->y_lo < u->y_lo ? t->y_lo : u->y_lo;
			u->x_hi = t->x_hi > u->x_hi ? t->x_hi : u->x_hi;
			u->y_hi = t->y_hi > u->y_hi ? t->y_hi : u->y_hi;
		} else {
			win->tiles[m++] = *t;
		}
	}
	win->n_tiles = m;
	for (long i = 0; i < (long)win->w * win->h; i++) {
		fl_domain_point *p = &win->pts[i];
		fl_domain_tile key = {.n_tile = p->n_tile};
		fl_domain_tile *t;

		win->n_in += p->in;
		win->n_overlap += p->in && p->n_tiles > 1;
		p->tile_id = -1;
		if (!p->in || !p->n_tiles)
			continue;
		memcpy(key.coord, p->tile, sizeof key.coord);
		t = bsearch(&key, win->tiles, (size_t)m, sizeof *t,
			    tile_sort_cmp);
		p->tile_id = t ? (int)(t - win->tiles) : -1;
	}
}

/* Checks the window's arguments against statement s. */
static int window_check(const fl_domain_stmt *s, int dim_x, int dim_y,
			int w, int h, fl_error *err)
{
	if (dim_x < -1 || dim_x >= s->n_dims || dim_y < -1 ||
	    dim_y >= s->n_dims || (dim_x >= 0 && dim_x == dim_y)) {
		fl_error_set(err, "dimensions %d and %d: %s has %d dimensions "
			     "(0 to %d), two distinct ones are shown", dim_x,
			     dim_y, s->name, s->n_dims, s->n_dims - 1);
		return -1;
	}
	if (w < 1 || h < 1 || (long)w * h > 1L << 24) {
		fl_error_set(err, "window %d x %d: from 1 x 1 to 16M points",
			     w, h);
		return -1;
	}
	return 0;
}

fl_domain_window *fl_domain_window_new(const fl_domain *d,
				       const fl_kernel *k, int stmt,
				       int dim_x, int dim_y, const long *fixed,
				       long x0, long y0, int w, int h,
				       fl_error *err)
{
	const fl_domain_stmt *s = fl_domain_stmt_at(d, stmt);
	fl_domain_window *win;
	region_op in;
	copy_walk c;
	long b[4];

	if (!s) {
		fl_error_set(err, "no statement %d (the kernel has %d)", stmt,
			     d->n_stmts);
		return NULL;
	}
	if (window_check(s, dim_x, dim_y, w, h, err) < 0)
		return NULL;
	win = calloc(1, sizeof *win);
	if (win)
		win->pts = calloc((size_t)w * (size_t)h, sizeof *win->pts);
	if (!win || !win->pts) {
		fl_domain_window_free(win);
		fl_error_set(err, "out of memory");
		return NULL;
	}
	*win = (fl_domain_window){.stmt = stmt, .dim_x = dim_x, .dim_y = dim_y,
				  .x0 = x0, .y0 = y0, .w = w, .h = h,
				  .pts = win->pts};
	for (int i = 0; fixed && i < s->n_dims; i++)
		win->fixed[i] = fixed[i];
	in = (region_op){win, s->n_dims, false, 0, {0}};
	region_apply(&in, fl_domain_window_cut(win, isl_set_copy(d->sets[stmt]),
					       0), b);
	/* A producer fused by an extension runs as its copies only. */
	c = (copy_walk){d, win, 0};
	isl_union_set_foreach_set(d->copies, copy_tiles, &c);
	if (!win->copied && !c.failed)
		tiled_tiles(&c, k);
	if (c.failed) {
		fl_domain_window_free(win);
		fl_error_set(err, "out of memory");
		return NULL;
	}
	tiles_finish(win);
	return win;
}

void fl_domain_window_free(fl_domain_window *win)
{
	if (!win)
		return;
	free(win->pts);
	free(win->tiles);
	free(win);
}
