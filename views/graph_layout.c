/* Graph layout through Graphviz (see graph_layout.h).
 *
 * dot works in points; a cell is CELL_W points wide and CELL_H high (a
 * terminal cell is about twice as high as wide), so boxes given in cells
 * come back at cell-sized positions.  Nodes are fixed-size boxes without
 * labels: the view draws the text itself, and Graphviz never needs a
 * font.  Edges have no arrowheads in dot, so their splines end on the
 * box borders; the canvas draws the arrowhead itself. */
#include "graph_layout.h"

#include <gvc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CELL_W 8.0		/* points per column */
#define CELL_H 16.0		/* points per row */
#define NODE_GAP 2		/* columns between neighbours in a rank */
#define BOUNDED_NODES 150	/* above this, dot's iterations are bounded */

struct fl_gl_engine {
	GVC_t *gvc;
};

/* One Graphviz context serves the process and is never freed: each
 * gvContext reads the plugin configuration into a buffer that
 * gvFreeContext does not free (Graphviz 2.43: a leak per context), and
 * loading the plugins costs milliseconds.  Drawing happens on one
 * thread, so creating it needs no lock. */
static GVC_t *shared_gvc;

/* Graphviz reports problems through this; the view has nowhere to print
 * them, and a failed layout shows as one. */
static int swallow(char *msg)
{
	(void)msg;
	return 0;
}

fl_gl_engine *fl_gl_engine_new(void)
{
	fl_gl_engine *e = calloc(1, sizeof *e);

	if (!e)
		return NULL;
	if (!shared_gvc) {
		agseterr(AGMAX);
		agseterrf(swallow);
		shared_gvc = gvContext();
	}
	e->gvc = shared_gvc;
	if (!e->gvc) {
		free(e);
		return NULL;
	}
	return e;
}

void fl_gl_engine_free(fl_gl_engine *e)
{
	free(e);
}

static int cmp_edge(const void *a, const void *b)
{
	const int *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return (x[1] > y[1]) - (x[1] < y[1]);
}

/* The edges of in, sorted, without duplicates, self loops or ends out of
 * range: what the layout and its hash see.  *n gets the count; NULL when
 * out of memory (or no edges: *n is 0 then). */
static int (*clean_edges(const fl_gl_input *in, int *n))[2]
{
	int (*e)[2] = NULL;
	int k = 0;

	*n = 0;
	if (in->n_edges <= 0)
		return NULL;
	e = malloc((size_t)in->n_edges * sizeof *e);
	if (!e)
		return NULL;
	for (int i = 0; i < in->n_edges; i++) {
		int a = in->edge[i][0], b = in->edge[i][1];

		if (a == b || a < 0 || b < 0 || a >= in->n_nodes ||
		    b >= in->n_nodes)
			continue;
		e[k][0] = a;
		e[k][1] = b;
		k++;
	}
	qsort(e, (size_t)k, sizeof *e, cmp_edge);
	*n = 0;
	for (int i = 0; i < k; i++)
		if (*n == 0 || cmp_edge(e[*n - 1], e[i]) != 0) {
			e[*n][0] = e[i][0];
			e[*n][1] = e[i][1];
			(*n)++;
		}
	return e;
}

static uint64_t fnv(uint64_t h, int64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (uint64_t)(v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint64_t fl_gl_input_hash(const fl_gl_input *in)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	int n;
	int (*e)[2] = clean_edges(in, &n);

	h = fnv(h, in->n_nodes);
	for (int i = 0; i < in->n_nodes; i++)
		h = fnv(h, in->width[i]);
	h = fnv(h, n);
	for (int i = 0; i < n; i++)
		h = fnv(h, (int64_t)e[i][0] << 32 | (uint32_t)e[i][1]);
	free(e);
	return h;
}

void fl_glayout_free(fl_glayout *l)
{
	if (!l)
		return;
	for (int i = 0; i < l->n_edges; i++)
		free(l->edges[i].pt);
	free(l->edges);
	free(l->centre);
	free(l->width);
	free(l);
}

static char *inches(char *buf, size_t n, double points)
{
	snprintf(buf, n, "%.4f", points / 72.0);
	return buf;
}

/* A cgraph graph of in's boxes and the (clean) edges e[0..n-1]; nodes[]
 * and edges[] get the objects, to read the layout back. */
static Agraph_t *build(const fl_gl_input *in, int (*e)[2], int n,
		       Agnode_t **nodes, Agedge_t **edges)
{
	Agraph_t *g = agopen("fl", Agstrictdirected, NULL);
	Agsym_t *wsym;
	char buf[32];

	if (!g)
		return NULL;
	agattr(g, AGRAPH, "rankdir", "TB");
	agattr(g, AGRAPH, "ranksep",
	       inches(buf, sizeof buf, FL_GL_RANK_GAP * CELL_H));
	agattr(g, AGRAPH, "nodesep",
	       inches(buf, sizeof buf, NODE_GAP * CELL_W));
	agattr(g, AGNODE, "shape", "box");
	agattr(g, AGNODE, "fixedsize", "true");
	agattr(g, AGNODE, "label", "");
	agattr(g, AGNODE, "height",
	       inches(buf, sizeof buf, FL_GL_NODE_H * CELL_H));
	wsym = agattr(g, AGNODE, "width", "1");
	agattr(g, AGEDGE, "arrowhead", "none");
	/* dot's crossing minimisation and network simplex grow fast with
	 * long edges (a 200-box DAG with skip connections: 1.7 s); bounded,
	 * a big graph lays out about four times faster, a little less
	 * tidily.  Small graphs keep the best layout. */
	if (in->n_nodes > BOUNDED_NODES) {
		agattr(g, AGRAPH, "nslimit", "1");
		agattr(g, AGRAPH, "nslimit1", "1");
		agattr(g, AGRAPH, "mclimit", "0.1");
		agattr(g, AGRAPH, "searchsize", "5");
	}
	for (int i = 0; i < in->n_nodes; i++) {
		snprintf(buf, sizeof buf, "n%d", i);
		nodes[i] = agnode(g, buf, 1);
		inches(buf, sizeof buf, in->width[i] * CELL_W);
		if (!nodes[i] || agxset(nodes[i], wsym, buf) != 0)
			goto fail;
	}
	for (int i = 0; i < n; i++) {
		edges[i] = agedge(g, nodes[e[i][0]], nodes[e[i][1]], NULL, 1);
		if (!edges[i])
			goto fail;
	}
	return g;
fail:
	agclose(g);
	return NULL;
}

/* Appends point (x, y) to edge out (points in cells). */
static int push_pt(fl_gl_edge *out, int *cap, double x, double y)
{
	if (out->n_pts == *cap) {
		int nc = *cap ? 2 * *cap : 16;
		double (*p)[2] = realloc(out->pt, (size_t)nc * sizeof *p);

		if (!p)
			return -1;
		out->pt = p;
		*cap = nc;
	}
	out->pt[out->n_pts][0] = x;
	out->pt[out->n_pts][1] = y;
	out->n_pts++;
	return 0;
}

/* Samples the cubic Bezier pieces of spline b into out, about two points
 * per cell; (x0, top) map points to cells (y flipped). */
static int sample_spline(const bezier *b, double x0, double top,
			 fl_gl_edge *out, int *cap)
{
	for (int i = 0; i + 3 < b->size; i += 3) {
		const pointf *p = &b->list[i];
		double len = 0;
		int steps;

		for (int k = 0; k < 3; k++)
			len += hypot((p[k + 1].x - p[k].x) / CELL_W,
				     (p[k + 1].y - p[k].y) / CELL_H);
		steps = (int)ceil(len * 2) + 1;
		for (int s = i ? 1 : 0; s <= steps; s++) {
			double t = (double)s / steps, u = 1 - t;
			double w0 = u * u * u, w1 = 3 * u * u * t;
			double w2 = 3 * u * t * t, w3 = t * t * t;
			double x = w0 * p[0].x + w1 * p[1].x + w2 * p[2].x +
				   w3 * p[3].x;
			double y = w0 * p[0].y + w1 * p[1].y + w2 * p[2].y +
				   w3 * p[3].y;

			if (push_pt(out, cap, (x - x0) / CELL_W,
				    (top - y) / CELL_H) < 0)
				return -1;
		}
	}
	return 0;
}

/* Reads positions and splines back from laid-out g into l. */
static int read_back(Agraph_t *g, Agnode_t **nodes, Agedge_t **edges,
		     int (*e)[2], fl_glayout *l)
{
	boxf bb = GD_bb(g);

	l->w = (bb.UR.x - bb.LL.x) / CELL_W;
	l->h = (bb.UR.y - bb.LL.y) / CELL_H;
	for (int i = 0; i < l->n_nodes; i++) {
		l->centre[i][0] = (ND_coord(nodes[i]).x - bb.LL.x) / CELL_W;
		l->centre[i][1] = (bb.UR.y - ND_coord(nodes[i]).y) / CELL_H;
	}
	for (int i = 0; i < l->n_edges; i++) {
		const splines *spl = ED_spl(edges[i]);
		int cap = 0;

		l->edges[i].from = e[i][0];
		l->edges[i].to = e[i][1];
		for (int b = 0; spl && b < spl->size; b++)
			if (sample_spline(&spl->list[b], bb.LL.x, bb.UR.y,
					  &l->edges[i], &cap) < 0)
				return -1;
	}
	return 0;
}

static fl_glayout *layout_alloc(const fl_gl_input *in, int n_edges)
{
	fl_glayout *l = calloc(1, sizeof *l);

	if (!l)
		return NULL;
	l->n_nodes = in->n_nodes;
	l->n_edges = n_edges;
	l->centre = calloc((size_t)in->n_nodes + 1, sizeof *l->centre);
	l->width = calloc((size_t)in->n_nodes + 1, sizeof *l->width);
	l->edges = calloc((size_t)n_edges + 1, sizeof *l->edges);
	if (!l->centre || !l->width || !l->edges) {
		fl_glayout_free(l);
		return NULL;
	}
	if (in->n_nodes > 0)
		memcpy(l->width, in->width,
		       (size_t)in->n_nodes * sizeof *l->width);
	return l;
}

fl_glayout *fl_gl_layout(fl_gl_engine *eng, const fl_gl_input *in)
{
	int n = 0;
	int (*e)[2] = clean_edges(in, &n);
	Agnode_t **nodes = calloc((size_t)in->n_nodes + 1, sizeof *nodes);
	Agedge_t **edges = calloc((size_t)n + 1, sizeof *edges);
	fl_glayout *l = layout_alloc(in, n);
	Agraph_t *g = NULL;
	int ok = 0;

	if (!nodes || !edges || !l || (in->n_edges > 0 && n > 0 && !e))
		goto out;
	g = build(in, e, n, nodes, edges);
	if (!g || gvLayout(eng->gvc, g, "dot") != 0)
		goto out;
	ok = read_back(g, nodes, edges, e, l) == 0;
	gvFreeLayout(eng->gvc, g);
out:
	if (g)
		agclose(g);
	free(nodes);
	free(edges);
	free(e);
	if (!ok) {
		fl_glayout_free(l);
		return NULL;
	}
	l->key = fl_gl_input_hash(in);
	return l;
}

void fl_gl_canvas_free(fl_gl_canvas *c)
{
	if (!c)
		return;
	free(c->node);
	free(c->mask);
	free(c);
}

static int in_rect(const fl_gl_rect *r, int x, int y)
{
	return x >= r->x && x < r->x + r->w && y >= r->y && y < r->y + r->h;
}

/* The direction bit of a step from (x0, y0) to the next cell (x1, y1). */
static int dir_of(int x0, int y0, int x1, int y1)
{
	if (y1 < y0)
		return FL_GL_UP;
	if (y1 > y0)
		return FL_GL_DOWN;
	return x1 < x0 ? FL_GL_LEFT : FL_GL_RIGHT;
}

/* The way from cell (x, y) outside r towards r: the ends of an edge
 * point into their boxes whether or not the spline reached them. */
static int dir_to_rect(int x, int y, const fl_gl_rect *r)
{
	if (y < r->y)
		return FL_GL_DOWN;
	if (y >= r->y + r->h)
		return FL_GL_UP;
	return x < r->x ? FL_GL_RIGHT : FL_GL_LEFT;
}

static int opposite(int d)
{
	switch (d) {
	case FL_GL_UP: return FL_GL_DOWN;
	case FL_GL_DOWN: return FL_GL_UP;
	case FL_GL_LEFT: return FL_GL_RIGHT;
	default: return FL_GL_LEFT;
	}
}

static int dir_index(int d)
{
	return d == FL_GL_UP ? 0 : d == FL_GL_DOWN ? 1
				 : d == FL_GL_LEFT ? 2 : 3;
}

/* A path of 4-connected cells (x, y pairs). */
struct cellpath {
	int n, cap;
	int (*c)[2];
};

static int path_push(struct cellpath *p, int x, int y)
{
	if (p->n && p->c[p->n - 1][0] == x && p->c[p->n - 1][1] == y)
		return 0;
	if (p->n == p->cap) {
		int nc = p->cap ? 2 * p->cap : 64;
		int (*c)[2] = realloc(p->c, (size_t)nc * sizeof *c);

		if (!c)
			return -1;
		p->c = c;
		p->cap = nc;
	}
	p->c[p->n][0] = x;
	p->c[p->n][1] = y;
	p->n++;
	return 0;
}

/* Walks from the path's last cell to (bx, by) one orthogonal step at a
 * time, taking the axis that is further behind, so a slanted segment
 * becomes a staircase rather than an L. */
static int path_line(struct cellpath *p, int bx, int by)
{
	int ax = p->c[p->n - 1][0], ay = p->c[p->n - 1][1];
	int x = ax, y = ay;
	int dx = abs(bx - ax), dy = abs(by - ay);

	while (x != bx || y != by) {
		/* progress so far along each axis, cross-multiplied */
		long px = (long)abs(x - ax) * (dy ? dy : 1);
		long py = (long)abs(y - ay) * (dx ? dx : 1);

		if (y == by || (x != bx && px <= py && dx))
			x += bx > x ? 1 : -1;
		else
			y += by > y ? 1 : -1;
		if (path_push(p, x, y) < 0)
			return -1;
	}
	return 0;
}

static void mask_or(fl_gl_canvas *c, int x, int y, int bits)
{
	if (x >= 0 && y >= 0 && x < c->w && y < c->h)
		c->mask[(size_t)y * (size_t)c->w + (size_t)x] |= (uint8_t)bits;
}

static void mask_arrow(fl_gl_canvas *c, int x, int y, int d)
{
	if (x >= 0 && y >= 0 && x < c->w && y < c->h) {
		uint8_t *m = &c->mask[(size_t)y * (size_t)c->w + (size_t)x];

		*m = (uint8_t)((*m & 0x0f) | FL_GL_ARROW | dir_index(d) << 5);
	}
}

/* Rasterises edge e of the layout onto c: its cells outside the two end
 * boxes, connected, with the arrowhead next to the consumer's box. */
static int raster_edge(fl_gl_canvas *c, const fl_gl_edge *e, struct cellpath *p)
{
	const fl_gl_rect *src = &c->node[e->from], *dst = &c->node[e->to];
	int first = 0, last;

	p->n = 0;
	for (int i = 0; i < e->n_pts; i++) {
		int x = (int)floor(e->pt[i][0] * c->sx);
		int y = (int)floor(e->pt[i][1] * c->sy);

		if ((p->n == 0 ? path_push(p, x, y) : path_line(p, x, y)) < 0)
			return -1;
	}
	while (first < p->n && in_rect(src, p->c[first][0], p->c[first][1]))
		first++;
	last = p->n - 1;
	while (last >= first && in_rect(dst, p->c[last][0], p->c[last][1]))
		last--;
	if (last < first)
		return 0;
	for (int i = first; i < last; i++) {
		int d = dir_of(p->c[i][0], p->c[i][1], p->c[i + 1][0],
			       p->c[i + 1][1]);

		mask_or(c, p->c[i][0], p->c[i][1], d);
		mask_or(c, p->c[i + 1][0], p->c[i + 1][1], opposite(d));
	}
	mask_or(c, p->c[first][0], p->c[first][1],
		dir_to_rect(p->c[first][0], p->c[first][1], src));
	mask_arrow(c, p->c[last][0], p->c[last][1],
		   dir_to_rect(p->c[last][0], p->c[last][1], dst));
	return 0;
}

/* Node rectangles of l at the canvas's scale. */
static void place_nodes(const fl_glayout *l, fl_gl_canvas *c)
{
	int rows = c->sy >= 0.8 ? FL_GL_NODE_H : 1;

	for (int i = 0; i < l->n_nodes; i++) {
		fl_gl_rect *r = &c->node[i];
		int w = c->sx >= 1 ? l->width[i]
				   : (int)lround(l->width[i] * c->sx);

		r->w = w < 1 ? 1 : w;
		r->h = rows;
		r->x = (int)lround(l->centre[i][0] * c->sx - r->w / 2.0);
		r->y = (int)lround(l->centre[i][1] * c->sy - r->h / 2.0);
		if (r->x < 0)
			r->x = 0;
		if (r->y < 0)
			r->y = 0;
	}
}

fl_gl_canvas *fl_gl_canvas_new(const fl_glayout *l, double sx, double sy)
{
	fl_gl_canvas *c = calloc(1, sizeof *c);
	struct cellpath p = {0, 0, NULL};

	if (!c)
		return NULL;
	c->sx = sx > 0 ? sx : 1;
	c->sy = sy > 0 ? sy : 1;
	c->w = (int)ceil(l->w * c->sx) + 1;
	c->h = (int)ceil(l->h * c->sy) + 1;
	c->n_nodes = l->n_nodes;
	c->node = calloc((size_t)l->n_nodes + 1, sizeof *c->node);
	c->mask = calloc((size_t)c->w * (size_t)c->h, 1);
	if (!c->node || !c->mask)
		goto fail;
	place_nodes(l, c);
	for (int i = 0; i < l->n_edges; i++)
		if (raster_edge(c, &l->edges[i], &p) < 0)
			goto fail;
	free(p.c);
	return c;
fail:
	free(p.c);
	fl_gl_canvas_free(c);
	return NULL;
}

uint32_t fl_gl_mask_char(uint8_t m)
{
	static const uint32_t arrow[4] = {
		FL_CH_ARROW_U, FL_CH_ARROW_D, FL_CH_ARROW_L, FL_CH_ARROW_R,
	};
	/* indexed by the UP DOWN LEFT RIGHT bits */
	static const uint32_t line[16] = {
		0, FL_CH_VLINE, FL_CH_VLINE, FL_CH_VLINE,
		FL_CH_HLINE, FL_CH_BR, FL_CH_TR, FL_CH_TEE_R,
		FL_CH_HLINE, FL_CH_BL, FL_CH_TL, FL_CH_TEE_L,
		FL_CH_HLINE, FL_CH_TEE_U, FL_CH_TEE_D, FL_CH_CROSS,
	};

	if (m & FL_GL_ARROW)
		return arrow[(m >> 5) & 3];
	return line[m & 0x0f];
}

void fl_gl_draw_edges(const fl_gl_canvas *c, fl_grid *g, int gx, int gy,
		      int w, int h, int ox, int oy, fl_look r)
{
	for (int y = 0; y < h; y++) {
		int cy = y + oy;

		if (cy < 0 || cy >= c->h)
			continue;
		for (int x = 0; x < w; x++) {
			int cx = x + ox;
			uint8_t m;

			if (cx < 0 || cx >= c->w)
				continue;
			m = c->mask[(size_t)cy * (size_t)c->w + (size_t)cx];
			if (m)
				fl_grid_put(g, gx + x, gy + y,
					    fl_gl_mask_char(m), r);
		}
	}
}
