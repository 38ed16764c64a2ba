/* The domain view (DESIGN 7), for teaching polyhedral fusion: one
 * statement's iteration domain drawn as points over two of its
 * dimensions, the others fixed, in a window the user pans.
 *
 *   - Points are coloured by tile.  A tiled statement's tile is
 *     kernel->inst2tile of the instance.  A producer fused by an
 *     extension node runs only as recomputed copies "S<op>_<k>_r<n>"
 *     whose tuples are the tile coordinates followed by the original
 *     instance: its tiles are those of the copies of the instance
 *     (found in the ranges of the tree's extension maps), and an
 *     instance with copies under two tiles or more is *overlapped*
 *     (recomputed), drawn with its own character in FL_LOOK_WARN.
 *     Untiled statements have one colour.  A line is drawn wherever two
 *     neighbouring points belong to different tiles.
 *   - The point under the cursor shows its flow dependences: isl's
 *     dataflow analysis (isl_union_access_info_compute_flow) over the
 *     kernel's reads and writes, with every write a must-source (writes
 *     are exact) and the original program order as the schedule (ops in
 *     the kernel's topological order, their statements in order, then
 *     their loops): flow dependences are what any legal schedule
 *     keeps, so the order the fused code runs in gives the same ones.
 *     Its sources and sinks are marked where they fall in the window and
 *     listed in a text line.
 *   - `y` numbers the visible points in execution order under the
 *     kernel's final schedule tree: the view composes the tree's band
 *     schedules and sequence positions itself (an extension node's
 *     instances get the outer bands' values through the extension map),
 *     because isl's own schedule maps refuse trees with extension nodes;
 *     a recomputed instance counts at its first execution.
 *
 * The statements, the window's points, their tiles and overlap are the
 * layer-1 stage's domain model (engine/layer1/domain_points.h, which the
 * domain exporter draws too); the view adds the order, the dependences
 * and the drawing.  Work is bounded by the window: isl intersects the
 * domain with the window's box before any point is enumerated, so a
 * 4096 x 1024 domain costs what the visible cells cost.  Per kernel
 * (the model, the schedule relation, the dependences), per window (its
 * cells) and per cursor (its dependences) the results are cached in the
 * state and recomputed only when what they depend on changes.  Reads the
 * session only.
 *
 * The caches hold isl objects of the session's isl_ctx, and so a
 * reference to it: they are dropped at the first render with another
 * session's kernel, or when the view is destroyed.  A session closed
 * while a view still holds its objects keeps its isl_ctx alive (isl
 * refuses to free a context still referenced) until then. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/flow.h>
#include <isl/ilp.h>
#include <isl/local_space.h>
#include <isl/map.h>
#include <isl/point.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include "domain_points.h"
#include "view.h"

#define MAXD FL_DOMAIN_MAXD
#define MAXV 32		/* schedule vector length kept */
#define MAX_LIST 3	/* sources / sinks named in the text line */
#define COUNT_CAP 1000	/* counting dependences stops here */

#define CH_OVERLAP 0x25C6	/* ◆ */
#define CH_SOURCE FL_CH_ARROW_L
#define CH_SINK FL_CH_ARROW_R

/* One statement of the kernel, as the view picks it with [ and ]. */
typedef fl_domain_stmt dom_stmt;

/* One cell of the window. */
typedef struct dom_cell {
	fl_domain_point p;	/* instance?, its tiles (the model's) */
	char dep;		/* 's' source, 'k' sink of the cursor */
	int n_v;		/* schedule vector (execution order) */
	long v[MAXV];
	int rank;		/* 1-based order in the window, 0: none */
} dom_cell;

typedef struct dom_state {
	/* Per kernel: built from the kernel of that index, with that
	 * schedule text, in that isl_ctx (a session of its own: another
	 * session's objects must never meet this one's). */
	int kernel;
	char *sched_text;
	isl_ctx *ctx;
	fl_domain *model;	/* statements, copies */
	int n_stmts;
	const dom_stmt *stmts;	/* the model's */
	isl_union_map *order;	/* instances (copies too) -> schedule
				   vector, NULL until `y` needs it */
	bool order_failed;
	isl_union_map *deps;	/* flow dependences, NULL until needed */
	bool deps_failed;
	/* The choice. */
	int stmt, pair, fixed_sel;
	int da, db;		/* row and column dimensions (-1: none) */
	long fixed[MAXD];
	long cy, cx;		/* cursor (values of da, db) */
	long oy, ox;		/* window origin */
	bool show_order;
	/* Per window. */
	bool win_valid;
	int win_stmt, win_da, win_db, win_rows, win_cols;
	long win_oy, win_ox, win_fixed[MAXD];
	bool win_order;
	fl_domain_window *win;	/* the model's window */
	dom_cell *cells;
	int rows, cols;		/* window size at the last render */
	int shown_rows;		/* rows drawn (separators take some) */
	/* Per cursor: its instance, whether it is one of the domain, its
	 * dependence sources and sinks and their text. */
	bool cur_valid;
	int cur_stmt;
	long cur_inst[MAXD];
	bool cur_in;
	isl_union_set *cur_src, *cur_sink;
	char cur_text[2][400];
} dom_state;

/* ---- the per-kernel cache ----------------------------------------- */

static void kernel_free(dom_state *st)
{
	fl_domain_window_free(st->win);
	fl_domain_free(st->model);
	free(st->sched_text);
	isl_union_map_free(st->order);
	isl_union_map_free(st->deps);
	st->win = NULL;
	st->model = NULL;
	st->stmts = NULL;
	st->sched_text = NULL;
	st->order = st->deps = NULL;
	st->cur_src = isl_union_set_free(st->cur_src);
	st->cur_sink = isl_union_set_free(st->cur_sink);
	st->n_stmts = 0;
	st->order_failed = st->deps_failed = false;
	st->win_valid = st->cur_valid = false;
}

static void *dom_create(void)
{
	dom_state *st = calloc(1, sizeof *st);

	if (st)
		st->kernel = -1;
	return st;
}

static void dom_destroy(void *p)
{
	dom_state *st = p;

	if (!st)
		return;
	kernel_free(st);
	free(st->cells);
	free(st);
}

/* Builds the per-kernel cache unless it is the one held. */
static int kernel_get(dom_state *st, const fl_kernel *k, int kernel)
{
	if (st->model && st->kernel == kernel && k->schedule_text &&
	    st->ctx == isl_union_set_get_ctx(k->domain) &&
	    st->sched_text && !strcmp(st->sched_text, k->schedule_text))
		return 0;
	kernel_free(st);
	st->kernel = kernel;
	st->ctx = isl_union_set_get_ctx(k->domain);
	st->stmt = 0;
	st->model = fl_domain_new(k, NULL);
	st->sched_text = strdup(k->schedule_text ? k->schedule_text : "");
	if (!st->model || !st->sched_text) {
		kernel_free(st);
		return -1;
	}
	st->n_stmts = fl_domain_n_stmts(st->model);
	st->stmts = fl_domain_stmt_at(st->model, 0);
	st->stmt = -1;		/* chosen afresh: stmt_choose */
	return 0;
}

/* ---- choosing what is shown ---------------------------------------- */

static int n_pairs(int n)
{
	return n >= 2 ? n * (n - 1) / 2 : 1;
}

/* Dimension pair number p of an n-dimensional statement; pair 0 is the
 * two innermost dimensions, then the other pairs from the outside. */
static void pair_dims(int n, int p, int *da, int *db)
{
	int i = 0;

	*da = n >= 2 ? n - 2 : -1;
	*db = n >= 1 ? n - 1 : -1;
	if (n < 2 || p == 0)
		return;
	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++) {
			if (a == n - 2 && b == n - 1)
				continue;
			if (++i == p) {
				*da = a;
				*db = b;
				return;
			}
		}
}

static long clampl(long v, long lo, long hi)
{
	if (lo != LONG_MIN && v < lo)
		v = lo;
	if (hi != LONG_MAX && v > hi)
		v = hi;
	return v;
}

/* Selects statement i: fixed dimensions at their lower bounds, the cursor
 * at the first point. */
static void stmt_choose(dom_state *st, int i)
{
	const dom_stmt *s;

	st->stmt = (i % st->n_stmts + st->n_stmts) % st->n_stmts;
	s = &st->stmts[st->stmt];
	st->pair = 0;
	st->fixed_sel = 0;
	pair_dims(s->n_dims, 0, &st->da, &st->db);
	for (int d = 0; d < s->n_dims; d++)
		st->fixed[d] = s->lo[d] == LONG_MIN ? 0 : s->lo[d];
	st->cy = st->da >= 0 ? st->fixed[st->da] : 0;
	st->cx = st->db >= 0 ? st->fixed[st->db] : 0;
	st->oy = st->cy;
	st->ox = st->cx;
	st->win_valid = st->cur_valid = false;
}

/* The dimensions that are fixed, in order; returns how many. */
static int fixed_dims(const dom_state *st, int *dims)
{
	int n = 0;

	for (int d = 0; d < st->stmts[st->stmt].n_dims; d++)
		if (d != st->da && d != st->db)
			dims[n++] = d;
	return n;
}

/* Keeps the cursor in the domain's bounds and inside the window. */
static void cursor_clamp(dom_state *st)
{
	const dom_stmt *s = &st->stmts[st->stmt];
	int rows = st->shown_rows > 0 ? st->shown_rows : 1;
	int cols = st->cols > 0 ? st->cols : 1;

	if (st->da >= 0)
		st->cy = clampl(st->cy, s->lo[st->da], s->hi[st->da]);
	else
		st->cy = 0;
	if (st->db >= 0)
		st->cx = clampl(st->cx, s->lo[st->db], s->hi[st->db]);
	else
		st->cx = 0;
	if (st->cy < st->oy)
		st->oy = st->cy;
	if (st->cy >= st->oy + rows)
		st->oy = st->cy - rows + 1;
	if (st->cx < st->ox)
		st->ox = st->cx;
	if (st->cx >= st->ox + cols)
		st->ox = st->cx - cols + 1;
}

/* ---- isl helpers ------------------------------------------------- */

/* The window cell of instance coordinates inst, NULL outside. */
static dom_cell *cell_of(dom_state *st, const long *inst)
{
	long y = st->da >= 0 ? inst[st->da] - st->oy : 0;
	long x = st->db >= 0 ? inst[st->db] - st->ox : 0;

	if (y < 0 || y >= st->rows || x < 0 || x >= st->cols)
		return NULL;
	return &st->cells[y * st->cols + x];
}

/* ---- execution order ------------------------------------------------ */

/* The schedule walk: instances reaching the node -> the vector of band
 * values and sequence positions above it (prefix), and the map from
 * isl's prefix schedule (outer band members only, what an extension map
 * starts from) to that vector (embed). */
static __isl_give isl_union_map *order_walk(__isl_keep isl_schedule_node *node,
					    __isl_take isl_union_map *prefix,
					    __isl_take isl_map *embed);

/* {[] -> [i]} or {[] -> []} (n = 0) in ctx. */
static __isl_give isl_map *const_map(isl_ctx *ctx, int n, int i)
{
	isl_space *sp = isl_space_alloc(ctx, 0, 0, n);
	isl_map *m = isl_map_universe(sp);

	if (n)
		m = isl_map_fix_si(m, isl_dim_out, 0, i);
	return m;
}

static __isl_give isl_union_map *order_children(
	__isl_keep isl_schedule_node *node, __isl_take isl_union_map *prefix,
	__isl_take isl_map *embed)
{
	bool seq = isl_schedule_node_get_type(node) ==
			   isl_schedule_node_sequence ||
		   isl_schedule_node_get_type(node) == isl_schedule_node_set;
	isl_size n = isl_schedule_node_n_children(node);
	isl_union_map *out = isl_union_map_empty(
		isl_union_map_get_space(prefix));

	for (int i = 0; i < n; i++) {
		isl_schedule_node *c = isl_schedule_node_get_child(node, i);
		isl_union_map *p = isl_union_map_copy(prefix);
		isl_map *e = isl_map_copy(embed);

		if (seq) {
			isl_union_set *f = isl_schedule_node_filter_get_filter(c);
			isl_map *k = const_map(isl_map_get_ctx(embed), 1, i);

			p = isl_union_map_flat_range_product(p,
				isl_union_map_from_domain_and_range(f,
					isl_union_set_from_set(isl_map_range(
						isl_map_copy(k)))));
			e = isl_map_flat_product(e, k);
		}
		out = isl_union_map_union(out, order_walk(c, p, e));
		isl_schedule_node_free(c);
	}
	isl_union_map_free(prefix);
	isl_map_free(embed);
	return out;
}

static __isl_give isl_union_map *order_walk(__isl_keep isl_schedule_node *node,
					    __isl_take isl_union_map *prefix,
					    __isl_take isl_map *embed)
{
	switch (isl_schedule_node_get_type(node)) {
	case isl_schedule_node_band: {
		isl_multi_union_pw_aff *b =
			isl_schedule_node_band_get_partial_schedule(node);
		isl_size n = isl_multi_union_pw_aff_size(b);
		isl_space *sp;

		if (n <= 0) {	/* no member: nothing to add */
			isl_multi_union_pw_aff_free(b);
			break;
		}
		sp = isl_space_set_alloc(isl_map_get_ctx(embed), 0, n);
		prefix = isl_union_map_flat_range_product(prefix,
			isl_union_map_from_multi_union_pw_aff(b));
		embed = isl_map_flat_product(embed, isl_map_identity(
			isl_space_map_from_set(sp)));
		break;
	}
	case isl_schedule_node_filter:
		prefix = isl_union_map_intersect_domain(prefix,
			isl_schedule_node_filter_get_filter(node));
		break;
	case isl_schedule_node_extension: {
		isl_union_map *x = isl_schedule_node_extension_get_extension(node);

		x = isl_union_map_apply_range(isl_union_map_reverse(x),
			isl_union_map_from_map(isl_map_copy(embed)));
		prefix = isl_union_map_union(prefix, x);
		break;
	}
	case isl_schedule_node_leaf:
		isl_map_free(embed);
		return prefix;
	default:
		break;
	}
	return order_children(node, prefix, embed);
}

/* The kernel's instances (copies too) -> their schedule vectors. */
static __isl_give isl_union_map *order_build(const fl_kernel *k)
{
	isl_schedule_node *root = isl_schedule_get_root(k->schedule);
	isl_ctx *ctx = isl_schedule_get_ctx(k->schedule);
	isl_union_set *dom;
	isl_union_map *prefix, *out;

	if (!root)
		return NULL;
	dom = isl_schedule_get_domain(k->schedule);
	prefix = isl_union_map_from_domain_and_range(dom,
		isl_union_set_from_set(isl_set_universe(
			isl_space_set_alloc(ctx, 0, 0))));
	out = order_walk(root, prefix, const_map(ctx, 0, 0));
	isl_schedule_node_free(root);
	return out;
}

/* Copies the schedule vector of a point [instance -> vector] into its
 * cell, keeping the earliest (a recomputed instance's first run). */
typedef struct order_pt {
	dom_state *st;
	int n_in, off;		/* tuple size, where the instance starts */
} order_pt;

static int vcmp(const long *a, int na, const long *b, int nb)
{
	for (int i = 0; i < na || i < nb; i++) {
		long x = i < na ? a[i] : 0, y = i < nb ? b[i] : 0;

		if (x != y)
			return x < y ? -1 : 1;
	}
	return 0;
}

static isl_stat add_order(__isl_take isl_point *pt, void *user)
{
	order_pt *o = user;
	isl_space *sp = isl_point_get_space(pt);
	isl_size n = isl_space_dim(sp, isl_dim_set);
	long v[MAXD + MAXV + MAXD];
	dom_cell *c;

	isl_space_free(sp);
	if (n > 0 && n - o->n_in <= MAXV && n <= (isl_size)(sizeof v /
							     sizeof v[0]) &&
	    fl_domain_point_coords(pt, n, v) == 0 &&
	    (c = cell_of(o->st, v + o->off)) && c->p.in) {
		int nv = n - o->n_in;

		if (!c->n_v || vcmp(v + o->n_in, nv, c->v, c->n_v) < 0) {
			memcpy(c->v, v + o->n_in, (size_t)nv * sizeof *v);
			c->n_v = nv;
		}
	}
	isl_point_free(pt);
	return isl_stat_ok;
}

static isl_stat order_piece(__isl_take isl_map *m, void *user)
{
	order_pt o = *(order_pt *)user;
	const dom_stmt *s = &o.st->stmts[o.st->stmt];
	const char *name = isl_map_get_tuple_name(m, isl_dim_in);
	isl_size n = isl_map_dim(m, isl_dim_in);
	isl_set *w;

	if (!name || n < s->n_dims || (strcmp(name, s->name) &&
				  !fl_domain_is_copy_of(name, s->name))) {
		isl_map_free(m);
		return isl_stat_ok;
	}
	o.n_in = n;
	o.off = n - s->n_dims;
	w = isl_map_domain(isl_map_copy(m));
	w = fl_domain_window_cut(o.st->win, w, o.off);
	m = isl_map_intersect_domain(m, w);
	w = isl_map_wrap(m);
	isl_set_foreach_point(w, add_order, &o);
	isl_set_free(w);
	return isl_stat_ok;
}

static dom_state *rank_st;	/* qsort's context (one UI thread) */

static int rank_cmp(const void *a, const void *b)
{
	const dom_cell *x = &rank_st->cells[*(const int *)a];
	const dom_cell *y = &rank_st->cells[*(const int *)b];

	return vcmp(x->v, x->n_v, y->v, y->n_v);
}

/* Numbers the window's points in execution order. */
static void order_window(dom_state *st, const fl_kernel *k)
{
	int n = st->rows * st->cols, m = 0, *idx;
	order_pt o = {st, 0, 0};

	if (!st->order && !st->order_failed) {
		st->order = order_build(k);
		st->order_failed = !st->order;
	}
	if (!st->order)
		return;
	isl_union_map_foreach_map(st->order, order_piece, &o);
	idx = malloc((size_t)n * sizeof *idx);
	if (!idx)
		return;
	for (int i = 0; i < n; i++)
		if (st->cells[i].p.in && st->cells[i].n_v)
			idx[m++] = i;
	rank_st = st;
	qsort(idx, (size_t)m, sizeof *idx, rank_cmp);
	for (int i = 0; i < m; i++)
		st->cells[idx[i]].rank = i + 1;
	free(idx);
}

/* Fills the cells of the window (rows x cols from the origin): which are
 * instances and their tiles (the model's window), their order when
 * shown. */
static int window_fill(dom_state *st, const fl_kernel *k)
{
	size_t n = (size_t)st->rows * (size_t)st->cols;
	dom_cell *cells = calloc(n ? n : 1, sizeof *cells);
	fl_domain_window *win;

	win = cells ? fl_domain_window_new(st->model, k, st->stmt, st->db,
					   st->da, st->fixed, st->ox, st->oy,
					   st->cols, st->rows, NULL) : NULL;
	if (!win) {
		free(cells);
		return -1;
	}
	fl_domain_window_free(st->win);
	st->win = win;
	free(st->cells);
	st->cells = cells;
	for (size_t i = 0; i < n; i++)
		cells[i].p = win->pts[i];
	if (st->show_order)
		order_window(st, k);
	return 0;
}

/* ---- dependences ------------------------------------------------- */

/* The original program order as a schedule map: ops in the kernel's
 * topological order, their statements in order, then their loops,
 * padded to one length. */
static __isl_give isl_union_map *program_order(const dom_state *st,
					       isl_ctx *ctx)
{
	size_t cap = 256, used = 0;
	char *text = malloc(cap);
	int maxn = 0;
	isl_union_map *m;

	for (int i = 0; i < st->n_stmts; i++)
		if (st->stmts[i].n_dims > maxn)
			maxn = st->stmts[i].n_dims;
	for (int i = 0; text && i < st->n_stmts; i++) {
		const dom_stmt *s = &st->stmts[i];
		size_t need = 64 + strlen(s->name) + 24 * (size_t)maxn;

		if (used + need >= cap) {
			char *grown = realloc(text, 2 * (used + need));

			if (!grown) {
				free(text);
				return NULL;
			}
			text = grown;
			cap = 2 * (used + need);
		}
		used += (size_t)snprintf(text + used, cap - used, "%s%s[",
					 i ? "; " : "{ ", s->name);
		for (int d = 0; d < s->n_dims; d++)
			used += (size_t)snprintf(text + used, cap - used,
						 "%si%d", d ? "," : "", d);
		used += (size_t)snprintf(text + used, cap - used, "] -> [%d,%d",
					 s->op_pos, s->k);
		for (int d = 0; d < maxn; d++)
			used += (size_t)snprintf(text + used, cap - used,
						 d < s->n_dims ? ",i%d" : ",0", d);
		used += (size_t)snprintf(text + used, cap - used, "]");
	}
	if (!text)
		return NULL;
	snprintf(text + used, cap - used, " }");
	m = isl_union_map_read_from_str(ctx, text);
	free(text);
	return m;
}

/* The kernel's flow dependences (cached); NULL when isl failed. */
static __isl_keep isl_union_map *deps_get(dom_state *st, const fl_kernel *k)
{
	isl_union_access_info *ai;
	isl_union_flow *flow;
	isl_union_map *order;

	if (st->deps || st->deps_failed)
		return st->deps;
	st->deps_failed = true;
	if (!k->reads || !k->writes)
		return NULL;
	order = program_order(st, isl_union_set_get_ctx(k->domain));
	if (!order)
		return NULL;
	ai = isl_union_access_info_from_sink(isl_union_map_copy(k->reads));
	ai = isl_union_access_info_set_must_source(ai,
		isl_union_map_copy(k->writes));
	ai = isl_union_access_info_set_schedule_map(ai, order);
	flow = isl_union_access_info_compute_flow(ai);
	st->deps = isl_union_flow_get_may_dependence(flow);
	isl_union_flow_free(flow);
	st->deps_failed = !st->deps;
	return st->deps;
}

typedef struct list_pt {
	char *buf;
	size_t n, used;
	int count, listed;
} list_pt;

static isl_stat list_point(__isl_take isl_point *pt, void *user)
{
	list_pt *l = user;

	if (l->listed < MAX_LIST) {
		char *t = isl_point_to_str(pt);
		/* isl writes a point as a set, "{ S1_0[0, 1] }". */
		const char *b = t && !strncmp(t, "{ ", 2) ? t + 2 : t;
		int len = b ? (int)strcspn(b, "}") : 0;

		while (len > 0 && b[len - 1] == ' ')
			len--;
		if (b && l->used + 1 < l->n)
			l->used += (size_t)snprintf(l->buf + l->used,
						    l->n - l->used, "%s%.*s",
						    l->listed ? ", " : "", len,
						    b);
		free(t);
		l->listed++;
	}
	isl_point_free(pt);
	if (++l->count >= COUNT_CAP)
		return isl_stat_error;	/* enough: stop counting */
	return isl_stat_ok;
}

static isl_stat list_set(__isl_take isl_set *set, void *user)
{
	list_pt *l = user;

	if (l->count < COUNT_CAP)
		isl_set_foreach_point(set, list_point, l);
	isl_set_free(set);
	return isl_stat_ok;
}

/* "sources (2): S2_0[...], S1_0[...]" into buf. */
static void list_text(const char *what, __isl_keep isl_union_set *u,
		      char *buf, size_t n)
{
	char items[320] = "";
	list_pt l = {items, sizeof items, 0, 0, 0};

	if (u)
		isl_union_set_foreach_set(u, list_set, &l);
	if (l.count == 0)
		snprintf(buf, n, "%s: none", what);
	else
		snprintf(buf, n, "%s (%s%d): %s%s", what,
			 l.count >= COUNT_CAP ? ">=" : "", l.count, items,
			 l.count > l.listed ? ", ..." : "");
}

/* The cursor's instance as a set of statement s (one point). */
static __isl_give isl_set *cursor_set(const dom_state *st)
{
	const dom_stmt *s = &st->stmts[st->stmt];
	isl_set *dom = fl_domain_stmt_set(st->model, st->stmt);
	isl_set *p = isl_set_universe(isl_set_get_space(dom));

	for (int d = 0; d < s->n_dims; d++)
		p = isl_set_fix_si(p, isl_dim_set, d,
				   (int)(d == st->da ? st->cy :
					 d == st->db ? st->cx : st->fixed[d]));
	return isl_set_intersect(p, isl_set_copy(dom));
}

/* Works out the cursor's dependences unless they are the ones held. */
static void cursor_update(dom_state *st, const fl_kernel *k)
{
	const dom_stmt *s = &st->stmts[st->stmt];
	long inst[MAXD];
	isl_union_map *deps;
	isl_union_set *pt;
	isl_set *p;

	for (int d = 0; d < s->n_dims; d++)
		inst[d] = d == st->da ? st->cy : d == st->db ? st->cx
							     : st->fixed[d];
	if (st->cur_valid && st->cur_stmt == st->stmt &&
	    !memcmp(inst, st->cur_inst, (size_t)s->n_dims * sizeof *inst))
		return;
	st->cur_valid = true;
	st->cur_stmt = st->stmt;
	memcpy(st->cur_inst, inst, sizeof inst);
	st->cur_src = isl_union_set_free(st->cur_src);
	st->cur_sink = isl_union_set_free(st->cur_sink);
	p = cursor_set(st);
	st->cur_in = isl_set_is_empty(p) == isl_bool_false;
	deps = st->cur_in ? deps_get(st, k) : NULL;
	if (!deps) {
		isl_set_free(p);
		snprintf(st->cur_text[0], sizeof st->cur_text[0], "%s",
			 !st->cur_in ? "the cursor is not an instance" :
			 "dependences: isl could not compute them");
		st->cur_text[1][0] = '\0';
		return;
	}
	pt = isl_union_set_from_set(p);
	st->cur_src = isl_union_map_domain(isl_union_map_intersect_range(
		isl_union_map_copy(deps), isl_union_set_copy(pt)));
	st->cur_sink = isl_union_map_range(isl_union_map_intersect_domain(
		isl_union_map_copy(deps), pt));
	list_text("sources", st->cur_src, st->cur_text[0],
		  sizeof st->cur_text[0]);
	list_text("sinks", st->cur_sink, st->cur_text[1],
		  sizeof st->cur_text[1]);
}

typedef struct dep_mark {
	dom_state *st;
	char mark;
} dep_mark;

static isl_stat mark_dep(__isl_take isl_point *pt, void *user)
{
	dep_mark *m = user;
	long v[MAXD];
	dom_cell *c;

	if (fl_domain_point_coords(pt, m->st->stmts[m->st->stmt].n_dims, v) == 0 &&
	    (c = cell_of(m->st, v)) && c->p.in)
		c->dep = m->mark;
	isl_point_free(pt);
	return isl_stat_ok;
}

/* Marks the cursor's sources and sinks that fall in the window. */
static void window_mark_deps(dom_state *st)
{
	isl_union_set *u[2] = {st->cur_src, st->cur_sink};

	for (int i = 0; i < st->rows * st->cols; i++)
		st->cells[i].dep = 0;
	for (int i = 0; i < 2; i++) {
		dep_mark m = {st, i ? 'k' : 's'};
		isl_set *set;

		if (!u[i])
			continue;
		set = isl_union_set_extract_set(u[i], isl_set_get_space(
			fl_domain_stmt_set(st->model, st->stmt)));
		set = fl_domain_window_cut(st->win, set, 0);
		isl_set_foreach_point(set, mark_dep, &m);
		isl_set_free(set);
	}
}

/* ---- drawing ------------------------------------------------------ */

/* Tiles coloured by the model's colour class, bounded by a line where
 * two neighbouring points have different first tiles. */
static bool tiles_differ(const dom_cell *a, const dom_cell *b)
{
	return a->p.in && b->p.in && a->p.n_tiles && b->p.n_tiles &&
	       a->p.tile_id != b->p.tile_id;
}

static const dom_cell *cell_at(const dom_state *st, int y, int x)
{
	return &st->cells[y * st->cols + x];
}

/* Draws cell (y, x) at screen (sx, sy), cw columns wide. */
static void draw_cell(fl_grid *g, const dom_state *st, int y, int x, int sx,
		      int sy, int cw)
{
	const dom_cell *c = cell_at(st, y, x);
	bool cursor = st->da >= 0 ? st->oy + y == st->cy : true;
	fl_look look;
	uint32_t ch;

	cursor = cursor && (st->db >= 0 ? st->ox + x == st->cx : true);
	if (!c->p.in) {
		if (cursor)
			fl_grid_put(g, sx + cw - 2, sy, FL_CH_DOT, FL_LOOK_CURSOR);
		return;
	}
	look = fl_look_group(c->p.n_tiles ? fl_domain_tile_colour(&c->p) : 0);
	ch = FL_CH_BULLET;
	if (c->p.n_tiles > 1) {
		ch = CH_OVERLAP;
		look = FL_LOOK_WARN;
	}
	if (c->dep) {
		ch = c->dep == 's' ? CH_SOURCE : CH_SINK;
		look = FL_LOOK_MARK;
	}
	if (cursor)
		look = FL_LOOK_CURSOR;
	if (st->show_order && c->rank)
		fl_grid_textf(g, sx, sy, cw - 1, look, "%*d", cw - 1,
			      c->rank % 10000);
	else
		fl_grid_put(g, sx + cw - 2, sy, ch, look);
}

/* Is there a tile boundary between data rows y and y + 1? */
static bool row_boundary(const dom_state *st, int y)
{
	if (y + 1 >= st->rows)
		return false;
	for (int x = 0; x < st->cols; x++)
		if (tiles_differ(cell_at(st, y, x), cell_at(st, y + 1, x)))
			return true;
	return false;
}

/* Draws the window's cells from screen row y0, at most h rows; returns
 * the data rows drawn. */
static int draw_cells(fl_grid *g, dom_state *st, int y0, int h, int lw,
		      int cw)
{
	int sy = y0, y = 0;

	for (; y < st->rows && sy < y0 + h; y++, sy++) {
		if (st->da >= 0)
			fl_grid_textf(g, 0, sy, lw, FL_LOOK_DIM, "%*ld", lw - 1,
				      st->oy + y);
		for (int x = 0; x < st->cols; x++) {
			int sx = lw + x * cw;

			draw_cell(g, st, y, x, sx, sy, cw);
			if (x + 1 < st->cols &&
			    tiles_differ(cell_at(st, y, x), cell_at(st, y, x + 1)))
				fl_grid_put(g, sx + cw - 1, sy, FL_CH_VLINE,
					    FL_LOOK_EDGE);
		}
		if (row_boundary(st, y) && sy + 1 < y0 + h) {
			sy++;
			for (int x = 0; x < st->cols; x++)
				if (tiles_differ(cell_at(st, y, x),
						 cell_at(st, y + 1, x)))
					fl_grid_fill(g, lw + x * cw, sy, cw, 1,
						     FL_CH_HLINE, FL_LOOK_EDGE);
		}
	}
	return y;
}

static const char *op_name(const fl_view_ctx *c, const dom_stmt *s)
{
	const fl_graph *g = fl_engine_graph(c->s);
	int op = -1;

	sscanf(s->name, "S%d_", &op);
	return g && op >= 0 && op < g->n_ops ? g->ops[op].name : "?";
}

/* "S0_0 1/6: rows i2 cols i3; fixed [i0=0] i1=0; op ..., kernel 0":
 * what the keys change first, so that narrow grids keep it. */
static void draw_title(fl_grid *g, const fl_view_ctx *c, const dom_state *st,
		       int kernel)
{
	const dom_stmt *s = &st->stmts[st->stmt];
	char buf[512];
	int fixed[MAXD], nf = fixed_dims(st, fixed), n;

	n = snprintf(buf, sizeof buf, "%s %d/%d:", s->name, st->stmt + 1,
		     st->n_stmts);
	if (st->da >= 0)
		n += snprintf(buf + n, sizeof buf - (size_t)n, " rows i%d",
			      st->da);
	if (st->db >= 0)
		n += snprintf(buf + n, sizeof buf - (size_t)n, " cols i%d",
			      st->db);
	for (int i = 0; i < nf && n + 40 < (int)sizeof buf; i++)
		n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%si%d=%ld%s",
			      i ? " " : "; fixed ",
			      i == st->fixed_sel ? "[" : "", fixed[i],
			      st->fixed[fixed[i]],
			      i == st->fixed_sel ? "]" : "");
	snprintf(buf + n, sizeof buf - (size_t)n, "; op %s, kernel %d",
		 op_name(c, s), kernel);
	fl_grid_text(g, 0, 0, g->w, buf, FL_LOOK_TITLE);
}

/* The cursor's instance, its tiles and (with y) its order. */
static void draw_cursor_line(fl_grid *g, int y, const dom_state *st)
{
	const dom_stmt *s = &st->stmts[st->stmt];
	const dom_cell *c = NULL;
	char buf[512], tile[128] = "";
	size_t used = 0;
	int n;

	if (st->cy - st->oy >= 0 && st->cy - st->oy < st->rows &&
	    st->cx - st->ox >= 0 && st->cx - st->ox < st->cols)
		c = cell_at(st, (int)(st->cy - st->oy), (int)(st->cx - st->ox));
	n = snprintf(buf, sizeof buf, "cursor %s[", s->name);
	for (int d = 0; d < s->n_dims && n + 24 < (int)sizeof buf; d++)
		n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%ld",
			      d ? ", " : "", st->cur_inst[d]);
	for (int i = 0; c && i < c->p.n_tile && used + 16 < sizeof tile; i++)
		used += (size_t)snprintf(tile + used, sizeof tile - used,
					 "%s%d", i ? "," : "", c->p.tile[i]);
	if (!c || !c->p.in)
		snprintf(buf + n, sizeof buf - (size_t)n, "]: not an instance");
	else if (!c->p.n_tiles)
		snprintf(buf + n, sizeof buf - (size_t)n, "]: untiled");
	else if (c->p.n_tiles > 1)
		snprintf(buf + n, sizeof buf - (size_t)n, "]: computed by %d "
			 "tiles (first (%s)): overlap, recomputed", c->p.n_tiles,
			 tile);
	else
		snprintf(buf + n, sizeof buf - (size_t)n, "]: tile (%s)", tile);
	if (c && c->p.in && st->show_order && c->rank) {
		n = (int)strlen(buf);
		snprintf(buf + n, sizeof buf - (size_t)n, "; runs %d%s in the "
			 "window", c->rank, c->rank == 1 ? "st" : c->rank == 2 ?
			 "nd" : c->rank == 3 ? "rd" : "th");
	}
	fl_grid_text(g, 0, y, g->w, buf, FL_LOOK_NORMAL);
}

static void draw_legend(fl_grid *g, int y)
{
	int x = 0;

	fl_grid_put(g, x, y, FL_CH_BULLET, fl_look_group(0));
	fl_grid_put(g, x + 1, y, FL_CH_BULLET, fl_look_group(1));
	x += 2 + fl_grid_text(g, x + 2, y, -1, " point (tile colour)  ",
			      FL_LOOK_DIM);
	fl_grid_put(g, x, y, CH_OVERLAP, FL_LOOK_WARN);
	x += 1 + fl_grid_text(g, x + 1, y, -1, " computed by 2+ tiles  ",
			      FL_LOOK_DIM);
	fl_grid_put(g, x, y, CH_SOURCE, FL_LOOK_MARK);
	fl_grid_put(g, x + 1, y, CH_SINK, FL_LOOK_MARK);
	x += 2 + fl_grid_text(g, x + 2, y, -1, " source/sink of the cursor  ",
			      FL_LOOK_DIM);
	fl_grid_put(g, x, y, FL_CH_VLINE, FL_LOOK_EDGE);
	fl_grid_put(g, x + 1, y, FL_CH_HLINE, FL_LOOK_EDGE);
	fl_grid_text(g, x + 2, y, -1, " tile boundary", FL_LOOK_DIM);
}

/* ---- render and keys --------------------------------------------- */

static const fl_kernel *current(const fl_view_ctx *c, fl_grid *g, int *kernel)
{
	const fl_program *p = fl_engine_program(c->s);
	char why[160];

	*kernel = fl_view_current_kernel(c);
	if (*kernel < 0 || !p) {
		snprintf(why, sizeof why, "no kernels yet: layer 1 has not "
			 "run (step %d/%d)", c->step, c->total);
		fl_view_empty(g, why);
		return NULL;
	}
	if (!p->kernels[*kernel].schedule || !p->kernels[*kernel].domain) {
		fl_view_empty(g, "this kernel has no polyhedral model (custom "
			      "op: a hand-written loop nest)");
		return NULL;
	}
	return &p->kernels[*kernel];
}

/* Is the window cached for the current choice and size? */
static bool window_current(const dom_state *st)
{
	return st->win_valid && st->win_stmt == st->stmt &&
	       st->win_da == st->da && st->win_db == st->db &&
	       st->win_rows == st->rows && st->win_cols == st->cols &&
	       st->win_oy == st->oy && st->win_ox == st->ox &&
	       st->win_order == st->show_order &&
	       !memcmp(st->win_fixed, st->fixed, sizeof st->fixed);
}

static int window_get(dom_state *st, const fl_kernel *k)
{
	if (window_current(st))
		return 0;
	if (window_fill(st, k) < 0) {
		st->win_valid = false;
		return -1;
	}
	st->win_valid = true;
	st->win_stmt = st->stmt;
	st->win_da = st->da;
	st->win_db = st->db;
	st->win_rows = st->rows;
	st->win_cols = st->cols;
	st->win_oy = st->oy;
	st->win_ox = st->ox;
	st->win_order = st->show_order;
	memcpy(st->win_fixed, st->fixed, sizeof st->fixed);
	st->cur_valid = false;	/* its marks are in the cells */
	return 0;
}

/* Window cells along dimension d: what fits (room), at most the extent
 * of the domain along d, at least 1. */
static int window_span(const dom_state *st, int d, int room)
{
	const dom_stmt *s = &st->stmts[st->stmt];
	long extent;

	if (d < 0 || room < 1)
		return 1;
	if (s->lo[d] == LONG_MIN || s->hi[d] == LONG_MAX)
		return room;
	extent = s->hi[d] - s->lo[d] + 1;
	return extent < room ? (int)extent : room;
}

static void dom_render(void *p, const fl_view_ctx *c, fl_grid *g)
{
	dom_state *st = p;
	const fl_kernel *k;
	int kernel, lw, cw, foot, area;

	k = current(c, g, &kernel);
	if (!k)
		return;
	if (kernel_get(st, k, kernel) < 0) {
		fl_view_empty(g, "this kernel has no statements to show");
		return;
	}
	if (st->stmt < 0 || st->stmt >= st->n_stmts)
		stmt_choose(st, 0);
	foot = g->h >= 8 ? 4 : g->h >= 4 ? 1 : 0;
	area = g->h - 1 - foot;
	lw = st->da >= 0 ? 6 : 0;
	cw = st->show_order ? 5 : 2;
	st->rows = window_span(st, st->da, area);
	st->cols = window_span(st, st->db, (g->w - lw) / cw);
	/* Separator rows may leave fewer data rows than the area: redo once
	 * with the origin moved so the cursor stays in sight. */
	for (int pass = 0; pass < 2; pass++) {
		st->shown_rows = st->shown_rows > 0 ? st->shown_rows : st->rows;
		cursor_clamp(st);
		if (window_get(st, k) < 0) {
			fl_view_empty(g, "out of memory");
			return;
		}
		cursor_update(st, k);
		window_mark_deps(st);
		fl_grid_clear(g);
		draw_title(g, c, st, kernel);
		st->shown_rows = area > 0 ? draw_cells(g, st, 1, area, lw, cw)
					  : 0;
		if (st->shown_rows < 1)
			st->shown_rows = 1;
		if (st->cy - st->oy < st->shown_rows)
			break;
	}
	if (foot >= 1)
		draw_cursor_line(g, g->h - foot, st);
	if (foot >= 4) {
		fl_grid_text(g, 0, g->h - 3, g->w, st->cur_text[0],
			     FL_LOOK_NORMAL);
		fl_grid_text(g, 0, g->h - 2, g->w, st->cur_text[1],
			     FL_LOOK_NORMAL);
		draw_legend(g, g->h - 1);
	}
}

/* Moves the cursor by (dy, dx) points. */
static void cursor_by(dom_state *st, long dy, long dx)
{
	st->cy += dy;
	st->cx += dx;
	cursor_clamp(st);
}

static void fixed_change(dom_state *st, int by)
{
	const dom_stmt *s = &st->stmts[st->stmt];
	int fixed[MAXD], nf = fixed_dims(st, fixed), d;

	if (nf == 0)
		return;
	d = fixed[st->fixed_sel % nf];
	st->fixed[d] = clampl(st->fixed[d] + by, s->lo[d], s->hi[d]);
}

/* Shows the next pair of dimensions; the leaving ones keep the cursor's
 * values as their fixed values. */
static void pair_next(dom_state *st)
{
	const dom_stmt *s = &st->stmts[st->stmt];

	if (st->da >= 0)
		st->fixed[st->da] = st->cy;
	if (st->db >= 0)
		st->fixed[st->db] = st->cx;
	st->pair = (st->pair + 1) % n_pairs(s->n_dims);
	pair_dims(s->n_dims, st->pair, &st->da, &st->db);
	st->cy = st->da >= 0 ? st->fixed[st->da] : 0;
	st->cx = st->db >= 0 ? st->fixed[st->db] : 0;
	st->fixed_sel = 0;
	cursor_clamp(st);
}

static int dom_key(void *p, const fl_view_ctx *c, int key,
		   fl_view_action *act)
{
	dom_state *st = p;
	int fixed[MAXD], nf;
	long page_y = st->shown_rows > 1 ? st->shown_rows : 1;
	long page_x = st->cols > 1 ? st->cols : 1;

	(void)c;
	act->kind = FL_VIEW_ACT_NONE;
	if (!st->stmts || st->stmt < 0)
		return 0;
	nf = fixed_dims(st, fixed);
	switch (key) {
	case FL_KEY_UP: case 'k': cursor_by(st, -1, 0); break;
	case FL_KEY_DOWN: case 'j': cursor_by(st, 1, 0); break;
	case FL_KEY_LEFT: case 'h': cursor_by(st, 0, -1); break;
	case FL_KEY_RIGHT: case 'l': cursor_by(st, 0, 1); break;
	case FL_KEY_PGUP: case 'K': cursor_by(st, -page_y, 0); break;
	case FL_KEY_PGDN: case 'J': cursor_by(st, page_y, 0); break;
	case 'H': cursor_by(st, 0, -page_x); break;
	case 'L': cursor_by(st, 0, page_x); break;
	case FL_KEY_HOME: cursor_by(st, LONG_MIN / 4, LONG_MIN / 4); break;
	case FL_KEY_END: cursor_by(st, LONG_MAX / 4, LONG_MAX / 4); break;
	case '[': stmt_choose(st, st->stmt - 1); break;
	case ']': stmt_choose(st, st->stmt + 1); break;
	case 'd': pair_next(st); break;
	case '{': st->fixed_sel = nf ? (st->fixed_sel + nf - 1) % nf : 0; break;
	case '}': st->fixed_sel = nf ? (st->fixed_sel + 1) % nf : 0; break;
	case '<': fixed_change(st, -1); break;
	case '>': fixed_change(st, 1); break;
	case 'y': st->show_order = !st->show_order; break;
	default: return 0;
	}
	return 1;
}

static const fl_view_key dom_keys[] = {
	{"arrows hjkl", "move the cursor point"},
	{"HJKL PgUp PgDn", "move by a window"},
	{"Home End", "first / last point"},
	{"[ ]", "previous / next statement"},
	{"d", "next pair of dimensions shown"},
	{"{ }", "which fixed dimension < > changes"},
	{"< >", "fixed dimension's value down / up"},
	{"y", "number points in execution order"},
	{NULL, NULL},
};

const fl_view_class fl_view_domain = {
	.name = "domain",
	.keys = dom_keys,
	.create = dom_create,
	.destroy = dom_destroy,
	.render = dom_render,
	.key = dom_key,
};
