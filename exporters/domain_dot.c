/* The iteration-domain picture of a statement (see domain_dot.h).
 *
 * Every node carries its position (pos "x,y!" in points: pinned) and
 * the graph is laid out by neato, which leaves pinned nodes where they
 * are, only moved together to the origin (overlap is kept by default: a tile's box
 * overlaps its neighbour's over the recomputed halo on purpose).  The
 * "nop2" engine would do the same but, in Graphviz 2.43, leaks a node
 * array per layout (found by the sanitizer pass).  The tile grid is one
 * dashed, unfilled, fixed-size box node
 * per tile (created before the points, so they are drawn on top) rather
 * than edges: with no edges there is nothing to route.  Rows go down
 * as in the domain view: the window's first row is at the top. */
#include "domain_dot.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <gvc.h>

#include "domain_points.h"
#include "output.h"

#define STEP 18.0		/* points between neighbouring points */
#define PT 72			/* points an inch */
#define PT_IN 0.16		/* a point's diameter, inches */
#define TICK_EVERY 8		/* axis numbers every this many points */
#define LEGEND_IN 4.5		/* width of a legend line's text, inches */
#define LEGEND_IN_TEXT "4.5"

/* Eight colours, an even number: neighbouring tiles never share one
 * (fl_domain_tile_colour). */
static const char *const palette[] = {
	"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
	"#76b7b2", "#edc948", "#b07aa1", "#9c755f",
};
#define N_PALETTE (int)(sizeof palette / sizeof palette[0])

/* One Graphviz context for the process, never freed: each gvContext
 * leaks its plugin configuration in Graphviz 2.43, and loading the
 * plugins costs milliseconds.  Not shared with the other users of gvc,
 * which keep their own. */
static GVC_t *domain_gvc;

/* Graphviz reports problems through this; the exporter's caller learns
 * of them from the return values, and a library must not print. */
static int swallow(char *msg)
{
	(void)msg;
	return 0;
}

static GVC_t *gvc_get(void)
{
	if (!domain_gvc) {
		agseterr(AGMAX);
		agseterrf(swallow);
		domain_gvc = gvContext();
	}
	return domain_gvc;
}

/* What the picture shows. */
typedef struct pic {
	const fl_session *s;
	const fl_kernel *k;
	int kernel;
	const fl_domain *d;
	int stmt;
	const fl_domain_stmt *st;
	int dim_x, dim_y;
	long fixed[FL_DOMAIN_MAXD];
	bool cut_x, cut_y;	/* the window is smaller than the domain */
	const fl_domain_window *win;
	Agraph_t *g;
} pic;

/* ---- the arguments ------------------------------------------------ */

static const fl_kernel *kernel_find(const fl_session *s, int kernel,
				    fl_error *err)
{
	const fl_program *p = fl_engine_program(s);

	if (!p) {
		fl_error_set(err, "no kernels yet: layer 1 has not run");
		return NULL;
	}
	if (kernel < 0 || kernel >= p->n_kernels) {
		fl_error_set(err, "no kernel %d: the program has %d (0 to %d)",
			     kernel, p->n_kernels, p->n_kernels - 1);
		return NULL;
	}
	return &p->kernels[kernel];
}

static int stmt_find(pic *p, const char *statement, fl_error *err)
{
	char names[512];

	p->stmt = statement ? fl_domain_find(p->d, statement) : 0;
	if (p->stmt < 0) {
		fl_domain_names(p->d, names, sizeof names);
		fl_error_set(err, "no statement \"%s\" in kernel %d; statements: "
			     "%s", fl_error_name(statement), p->kernel, names);
		return -1;
	}
	p->st = fl_domain_stmt_at(p->d, p->stmt);
	return 0;
}

static bool dim_ok(const fl_domain_stmt *st, int d)
{
	return d >= 0 && d < st->n_dims;
}

/* The shown dimensions: -1 for both picks the two innermost. */
static int dims_pick(pic *p, int dim_x, int dim_y, fl_error *err)
{
	int n = p->st->n_dims;

	if (dim_x < 0 && dim_y < 0) {
		dim_x = n - 1;
		dim_y = n - 2;
	}
	if ((n >= 1 && !dim_ok(p->st, dim_x)) ||
	    (n >= 2 && !dim_ok(p->st, dim_y)) || (n < 2 && dim_y >= 0) ||
	    (dim_x >= 0 && dim_x == dim_y)) {
		fl_error_set(err, "dimensions i%d (columns) and i%d (rows): "
			     "statement %s has %d (i0 to i%d), and two "
			     "distinct ones are shown", dim_x, dim_y,
			     p->st->name, n, n - 1);
		return -1;
	}
	p->dim_x = n >= 1 ? dim_x : -1;
	p->dim_y = n >= 2 ? dim_y : -1;
	return 0;
}

static long lower(const fl_domain_stmt *st, int d)
{
	return st->lo[d] == LONG_MIN ? 0 : st->lo[d];
}

/* The values of the dimensions not shown: given in order, or their
 * lower bounds. */
static int fixed_pick(pic *p, const long *fixed, int n_fixed, fl_error *err)
{
	const fl_domain_stmt *st = p->st;
	int want = st->n_dims - (p->dim_x >= 0) - (p->dim_y >= 0), j = 0;

	if (n_fixed != 0 && n_fixed != want) {
		fl_error_set(err, "%d fixed values for statement %s: it has %d "
			     "dimensions not shown (or give none: their lower "
			     "bounds)", n_fixed, st->name, want);
		return -1;
	}
	for (int d = 0; d < st->n_dims; d++) {
		if (d == p->dim_x || d == p->dim_y)
			continue;
		p->fixed[d] = n_fixed ? fixed[j++] : lower(st, d);
		if (p->fixed[d] < lower(st, d) ||
		    (st->hi[d] != LONG_MAX && p->fixed[d] > st->hi[d])) {
			fl_error_set(err, "fixed value i%d=%ld is outside "
				     "statement %s's domain (i%d from %ld to "
				     "%ld)", d, p->fixed[d], st->name, d,
				     lower(st, d), st->hi[d]);
			return -1;
		}
	}
	return 0;
}

/* The window along d: from the lower bound, at most FL_DOMAIN_DOT_MAX
 * points; *cut when the domain is longer. */
static int span(const fl_domain_stmt *st, int d, long *from, bool *cut)
{
	long extent;

	*from = d >= 0 ? lower(st, d) : 0;
	*cut = false;
	if (d < 0)
		return 1;
	if (st->lo[d] == LONG_MIN || st->hi[d] == LONG_MAX) {
		*cut = true;
		return FL_DOMAIN_DOT_MAX;
	}
	extent = st->hi[d] - st->lo[d] + 1;
	*cut = extent > FL_DOMAIN_DOT_MAX;
	return *cut ? FL_DOMAIN_DOT_MAX : extent < 1 ? 1 : (int)extent;
}

static fl_domain_window *window_make(pic *p, fl_error *err)
{
	long x0, y0;
	int w = span(p->st, p->dim_x, &x0, &p->cut_x);
	int h = span(p->st, p->dim_y, &y0, &p->cut_y);

	return fl_domain_window_new(p->d, p->k, p->stmt, p->dim_x, p->dim_y,
				    p->fixed, x0, y0, w, h, err);
}

/* ---- the graph ------------------------------------------------------ */

/* Pins n at (x, y) points: neato reads pinned positions in inches (the
 * .dot it writes holds points, as `neato -n2` reads them). */
static void set_pos(Agnode_t *n, double x, double y)
{
	char buf[64];

	snprintf(buf, sizeof buf, "%.4f,%.4f!", x / PT, y / PT);
	agset(n, "pos", buf);
}

/* Position of window column x, row y (rows go down). */
static double px(long x)
{
	return (double)x * STEP;
}

static double py(const pic *p, long y)
{
	return (double)(p->win->h - 1 - y) * STEP;
}

static void defaults(Agraph_t *g)
{
	agattr(g, AGRAPH, "labelloc", "t");
	agattr(g, AGRAPH, "fontsize", "14");
	agattr(g, AGNODE, "pos", "");
	/* A space, not "": the .dot writer drops empty labels, and neato
	 * would then label the points with their names. */
	agattr(g, AGNODE, "label", " ");
	agattr(g, AGNODE, "shape", "circle");
	agattr(g, AGNODE, "fixedsize", "true");
	agattr(g, AGNODE, "width", "0.16");
	agattr(g, AGNODE, "height", "0.16");
	agattr(g, AGNODE, "style", "filled");
	agattr(g, AGNODE, "fillcolor", (char *)palette[0]);
	agattr(g, AGNODE, "color", "#333333");
	agattr(g, AGNODE, "penwidth", "0.5");
	agattr(g, AGNODE, "fontsize", "4");
	agattr(g, AGNODE, "tooltip", "");
}

static const char *op_name(const pic *p)
{
	const fl_graph *g = fl_engine_graph(p->s);
	int op = -1;

	sscanf(p->st->name, "S%d_", &op);
	return g && op >= 0 && op < g->n_ops ? g->ops[op].name : "?";
}

/* "i3 0..63" for the window along d, with "of lo..hi" when cut. */
static int range_text(char *buf, size_t n, const pic *p, int d, long from,
		      int len, bool cut)
{
	const fl_domain_stmt *st = p->st;

	if (d < 0)
		return 0;
	if (!cut)
		return snprintf(buf, n, "i%d %ld..%ld", d, from, from + len - 1);
	return snprintf(buf, n, "i%d %ld..%ld of %ld..%ld", d, from,
			from + len - 1, st->lo[d], st->hi[d]);
}

static void title(pic *p)
{
	const fl_domain_window *w = p->win;
	char buf[1024], r[2][160] = {"", ""};
	int n;

	range_text(r[0], sizeof r[0], p, p->dim_x, w->x0, w->w, p->cut_x);
	range_text(r[1], sizeof r[1], p, p->dim_y, w->y0, w->h, p->cut_y);
	n = snprintf(buf, sizeof buf, "kernel %d (%s): statement %s of op %s"
		     "\\ncolumns %s, rows %s", p->kernel, p->k->name,
		     p->st->name, op_name(p), r[0][0] ? r[0] : "-",
		     r[1][0] ? r[1] : "-");
	for (int d = 0, first = 1; d < p->st->n_dims; d++) {
		if (d == p->dim_x || d == p->dim_y ||
		    n + 40 > (int)sizeof buf)
			continue;
		n += snprintf(buf + n, sizeof buf - (size_t)n, "%si%d=%ld",
			      first ? "; fixed " : " ", d, p->fixed[d]);
		first = 0;
	}
	if ((p->cut_x || p->cut_y) && n + 80 < (int)sizeof buf)
		snprintf(buf + n, sizeof buf - (size_t)n, "\\n(cut to the first "
			 "%d x %d points: at most %d per dimension)", w->w,
			 w->h, FL_DOMAIN_DOT_MAX);
	agattr(p->g, AGRAPH, "label", buf);
}

static const char *tile_colour_of(const fl_domain_point *pt)
{
	return palette[fl_domain_tile_colour(pt) % N_PALETTE];
}

static void tile_text(char *buf, size_t n, int n_tile, const int *coord)
{
	size_t used = (size_t)snprintf(buf, n, "tile (");

	for (int i = 0; i < n_tile && used + 16 < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%d",
					 i ? "," : "", coord[i]);
	snprintf(buf + used, n - used, ")");
}

/* One dashed box per tile around its points in the window. */
static void tiles(pic *p)
{
	const fl_domain_window *w = p->win;

	for (int i = 0; i < w->n_tiles; i++) {
		const fl_domain_tile *t = &w->tiles[i];
		fl_domain_point col = {.n_tiles = 1, .n_tile = t->n_tile};
		long x_lo = p->dim_x >= 0 ? t->x_lo - w->x0 : 0;
		long x_hi = p->dim_x >= 0 ? t->x_hi - w->x0 : 0;
		long y_lo = p->dim_y >= 0 ? t->y_lo - w->y0 : 0;
		long y_hi = p->dim_y >= 0 ? t->y_hi - w->y0 : 0;
		char name[32], buf[256];
		Agnode_t *n;

		memcpy(col.tile, t->coord, sizeof col.tile);
		snprintf(name, sizeof name, "tile%d", i);
		n = agnode(p->g, name, 1);
		agset(n, "shape", "box");
		agset(n, "style", "dashed");
		agset(n, "penwidth", "1.5");
		agset(n, "color", (char *)tile_colour_of(&col));
		snprintf(buf, sizeof buf, "%.2f", (x_hi - x_lo + 1) * STEP / PT);
		agset(n, "width", buf);
		snprintf(buf, sizeof buf, "%.2f", (y_hi - y_lo + 1) * STEP / PT);
		agset(n, "height", buf);
		set_pos(n, (px(x_lo) + px(x_hi)) / 2,
			(py(p, y_lo) + py(p, y_hi)) / 2);
		tile_text(buf, sizeof buf, t->n_tile, t->coord);
		agset(n, "tooltip", buf);
	}
}

/* "S0_0[0, 0, 3, 32]: tile (0,0,1)" for a point's tooltip. */
static void point_text(char *buf, size_t n, const pic *p,
		       const fl_domain_point *pt, const long *inst)
{
	char tile[160];
	size_t used = (size_t)snprintf(buf, n, "%s[", p->st->name);

	for (int d = 0; d < p->st->n_dims && used + 24 < n; d++)
		used += (size_t)snprintf(buf + used, n - used, "%s%ld",
					 d ? ", " : "", inst[d]);
	tile_text(tile, sizeof tile, pt->n_tile, pt->tile);
	if (!pt->n_tiles)
		snprintf(buf + used, n - used, "]: untiled");
	else if (pt->n_tiles > 1)
		snprintf(buf + used, n - used, "]: computed by %d tiles (first "
			 "%s): overlap, recomputed", pt->n_tiles, tile);
	else
		snprintf(buf + used, n - used, "]: %s", tile);
}

static void point_node(pic *p, long x, long y)
{
	const fl_domain_window *w = p->win;
	const fl_domain_point *pt = &w->pts[y * w->w + x];
	long inst[FL_DOMAIN_MAXD];
	char name[64], buf[512];
	Agnode_t *n;

	memcpy(inst, p->fixed, sizeof inst);
	if (p->dim_x >= 0)
		inst[p->dim_x] = w->x0 + x;
	if (p->dim_y >= 0)
		inst[p->dim_y] = w->y0 + y;
	snprintf(name, sizeof name, "p_%ld_%ld", w->x0 + x, w->y0 + y);
	n = agnode(p->g, name, 1);
	set_pos(n, px(x), py(p, y));
	agset(n, "fillcolor", (char *)tile_colour_of(pt));
	if (pt->n_tiles > 1) {
		agset(n, "shape", "diamond");
		agset(n, "penwidth", "2.5");
		agset(n, "color", "black");
		agset(n, "width", "0.22");
		agset(n, "height", "0.22");
	}
	point_text(buf, sizeof buf, p, pt, inst);
	agset(n, "tooltip", buf);
}

static void points(pic *p)
{
	for (long y = 0; y < p->win->h; y++)
		for (long x = 0; x < p->win->w; x++)
			if (p->win->pts[y * p->win->w + x].in)
				point_node(p, x, y);
}

static Agnode_t *text_node(pic *p, const char *name, const char *label,
			   double x, double y)
{
	Agnode_t *n = agnode(p->g, (char *)name, 1);

	agset(n, "shape", "plaintext");
	agset(n, "style", "");
	agset(n, "fixedsize", "false");
	agset(n, "label", (char *)label);
	agset(n, "fontsize", "9");
	set_pos(n, x, y);
	return n;
}

/* Coordinates along the top (columns) and the left (rows). */
static void axes(pic *p)
{
	const fl_domain_window *w = p->win;
	char name[32], label[32];

	for (long x = 0; p->dim_x >= 0 && x < w->w; x += TICK_EVERY) {
		snprintf(name, sizeof name, "col_%ld", w->x0 + x);
		snprintf(label, sizeof label, "%ld", w->x0 + x);
		text_node(p, name, label, px(x), py(p, -1));
	}
	for (long y = 0; p->dim_y >= 0 && y < w->h; y += TICK_EVERY) {
		snprintf(name, sizeof name, "row_%ld", w->y0 + y);
		snprintf(label, sizeof label, "%ld", w->y0 + y);
		text_node(p, name, label, px(-2), py(p, y));
	}
}

/* Text left-aligned from just right of a legend marker: a plain text
 * node is centred on its position, so it is made LEGEND_IN wide, its
 * left edge placed there, and its line ended with \\l (left-justified). */
static void legend_text(pic *p, const char *name, const char *text, double y)
{
	char label[128];
	Agnode_t *n;

	snprintf(label, sizeof label, "%s\\l", text);
	n = text_node(p, name, label, STEP + LEGEND_IN * PT / 2, y);
	agset(n, "fixedsize", "true");
	agset(n, "width", LEGEND_IN_TEXT);
	agset(n, "height", "0.2");
}

/* Three lines under the points: a circle, a diamond, a dashed box. */
static void legend(pic *p)
{
	static const char *const what[] = {
		"a point (instance), coloured by its tile",
		"computed by 2+ tiles: overlap recomputed by extension nodes",
		"a tile's points in the window",
	};
	Agnode_t *n;

	for (int i = 0; i < 3; i++) {
		double y = py(p, p->win->h + 1 + i);
		char name[32];

		snprintf(name, sizeof name, "legend%d", i);
		n = agnode(p->g, name, 1);
		set_pos(n, 0, y);
		if (i == 1) {
			agset(n, "shape", "diamond");
			agset(n, "penwidth", "2.5");
			agset(n, "color", "black");
			agset(n, "width", "0.22");
			agset(n, "height", "0.22");
		} else if (i == 2) {
			agset(n, "shape", "box");
			agset(n, "style", "dashed");
			agset(n, "color", (char *)palette[1]);
			agset(n, "penwidth", "1.5");
			agset(n, "width", "0.3");
			agset(n, "height", "0.2");
		}
		snprintf(name, sizeof name, "legend%d_text", i);
		legend_text(p, name, what[i], y);
	}
}

static Agraph_t *graph_build(pic *p)
{
	p->g = agopen("domain", Agundirected, NULL);
	if (!p->g)
		return NULL;
	defaults(p->g);
	title(p);
	tiles(p);
	points(p);
	axes(p);
	legend(p);
	return p->g;
}

/* ---- output --------------------------------------------------------- */

static const char *format_pick(const char *file, const char *format,
			       fl_error *err)
{
	const char *dot = strrchr(file, '.');

	if (!format)
		format = dot && strchr(dot, '/') == NULL ? dot + 1 : "dot";
	if (!strcmp(format, "dot") || !strcmp(format, "svg") ||
	    !strcmp(format, "png"))
		return format;
	fl_error_set(err, "%s: format \"%s\": dot, svg or png", file,
		     fl_error_name(format));
	return NULL;
}

/* Lays g out with positions kept, renders it in format, writes file. */
static int render(Agraph_t *g, const char *file, const char *format,
		  fl_error *err)
{
	GVC_t *gvc = gvc_get();
	char *data = NULL;
	unsigned int len = 0;
	int r;

	if (!gvc || gvLayout(gvc, g, "neato") != 0) {
		fl_error_set(err, "%s: Graphviz could not lay the picture out%s%s",
			     file, aglasterr() ? ": " : "",
			     aglasterr() ? aglasterr() : "");
		return -1;
	}
	r = gvRenderData(gvc, g, format, &data, &len);
	gvFreeLayout(gvc, g);
	if (r != 0 || !data) {
		gvFreeRenderData(data);
		fl_error_set(err, "%s: Graphviz could not render %s", file,
			     format);
		return -1;
	}
	r = fl_out_write_file(file, data, len, err);
	gvFreeRenderData(data);
	return r;
}

/* Resolves the arguments into p (its model and window owned by the
 * caller's d and win). */
static int pic_prepare(pic *p, const char *statement, int dim_x, int dim_y,
		       const long *fixed, int n_fixed, fl_error *err)
{
	if (stmt_find(p, statement, err) < 0 ||
	    dims_pick(p, dim_x, dim_y, err) < 0 ||
	    fixed_pick(p, fixed, n_fixed, err) < 0)
		return -1;
	return 0;
}

int fl_export_domain(const fl_session *s, int kernel, const char *statement,
		     int dim_x, int dim_y, const long *fixed, int n_fixed,
		     const char *file, const char *format, fl_error *err)
{
	pic p = {.s = s, .kernel = kernel};
	fl_domain *d = NULL;
	fl_domain_window *win = NULL;
	int r = -1;

	format = format_pick(file, format, err);
	if (!format || !(p.k = kernel_find(s, kernel, err)))
		return -1;
	p.d = d = fl_domain_new(p.k, err);
	if (!d)
		return -1;
	if (pic_prepare(&p, statement, dim_x, dim_y, fixed, n_fixed, err) == 0)
		p.win = win = window_make(&p, err);
	if (win && !graph_build(&p))
		fl_error_set(err, "out of memory");
	else if (win)
		r = render(p.g, file, format, err);
	if (p.g)
		agclose(p.g);
	fl_domain_window_free(win);
	fl_domain_free(d);
	return r;
}
