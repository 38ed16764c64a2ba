/* The graph view (DESIGN 7): the DAG of the session's graph, ops as boxes
 * and producer -> consumer edges, laid out by Graphviz's dot
 * (graph_layout.c) and drawn in cells.
 *
 * Three modes: the whole graph (pan with the arrows or hjkl, z fits it
 * to the window), the neighbourhood of the current decision's ops (or of
 * the selected op) within k hops (v, + and -), and collapsed (c: one box
 * per micro-graph, or per kernel once layer 1 made them; Enter expands a
 * box into its ops and back).  Boxes are coloured by micro-graph or
 * kernel, or by measured kernel time (y); the current decision's ops are
 * highlighted, a merge's micro-graph outlined with double lines, marked
 * ops and the selected one shown in their looks.  A detail pane says
 * what the engine decided about the selected op (for a kernel box: its
 * tile sizes and why).
 *
 * Each render rebuilds the list of boxes and edges for the mode (linear
 * in the graph), hashes it and lays it out only when the hash changed:
 * steps that leave the graph alone redraw from the cached layout. */
#include "view.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_layout.h"

#define BIG_GRAPH 400		/* ops above which the whole graph is not
				   laid out unless asked for */
#define LABEL_MAX 22		/* op name columns in a box */
#define PANE_ROWS 7

enum mode { MODE_WHOLE, MODE_NEIGH, MODE_COLLAPSED };
enum grouping { GROUP_NONE, GROUP_MICRO, GROUP_KERNEL };

/* A box of the current drawing: one op, or one group (collapsed). */
struct gnode {
	int op;			/* op index, -1 for a group box */
	int group;		/* group id (micro-graph id or kernel index)
				   of the op or the box; -1 when none */
	int n_members;		/* a group box's ops */
	int first;		/* a group box's first op */
};

typedef struct gstate {
	enum mode mode;
	bool user_mode;		/* the user chose the mode (no automatic
				   switch for big graphs) */
	bool fit, heat, pane_flip;
	int hops;
	int ox, oy;		/* canvas cell at the area's top left */
	int seen_sel;		/* selection last kept on screen */
	uint64_t seen_key;
	/* groups expanded in collapsed mode, for one grouping */
	enum grouping exp_kind;
	int n_exp, cap_exp;
	int *exp;
	/* the boxes and edges of the last render */
	enum grouping grouping;
	int n_nodes, cap_nodes;
	struct gnode *nodes;
	int *width;
	int n_edges, cap_edges;
	int (*edges)[2];
	int n_ops;
	int *node_of_op;	/* op -> box, -1: not drawn */
	int *group_of_op;	/* op -> group id under `grouping` */
	int *order;		/* boxes in reading order */
	fl_gl_engine *eng;
	fl_glayout *lay;
	fl_gl_canvas *can;
	bool layout_failed;
	uint64_t failed_key;
	/* where the last render put the drawing (mouse, keys): valid while
	   drawn is set */
	bool drawn;
	int ax, ay, aw, ah;
	char notice[160];
} gstate;

static void *graph_create(void)
{
	gstate *st = calloc(1, sizeof *st);

	if (!st)
		return NULL;
	st->hops = 2;
	st->seen_sel = -2;
	return st;
}

static void graph_destroy(void *p)
{
	gstate *st = p;

	if (!st)
		return;
	fl_gl_canvas_free(st->can);
	fl_glayout_free(st->lay);
	fl_gl_engine_free(st->eng);
	free(st->exp);
	free(st->nodes);
	free(st->width);
	free(st->edges);
	free(st->node_of_op);
	free(st->group_of_op);
	free(st->order);
	free(st);
}

/* ---- what is drawn: groups, labels, boxes and edges ---- */

static enum grouping grouping_of(const fl_session *s)
{
	const fl_program *p = fl_engine_program(s);
	const fl_partition *pt = fl_engine_partition(s);

	if (p && p->n_kernels > 0)
		return GROUP_KERNEL;
	if (pt && pt->group_of && pt->n_groups > 0 &&
	    pt->n_ops == fl_engine_graph(s)->n_ops)
		return GROUP_MICRO;
	return GROUP_NONE;
}

/* Fills st->group_of_op for the grouping (-1 for ops outside any). */
static void fill_groups(gstate *st, const fl_session *s)
{
	const fl_program *p = fl_engine_program(s);
	const fl_partition *pt = fl_engine_partition(s);

	for (int i = 0; i < st->n_ops; i++)
		st->group_of_op[i] = -1;
	if (st->grouping == GROUP_KERNEL) {
		for (int k = 0; k < p->n_kernels; k++)
			for (int i = 0; i < p->kernels[k].n_ops; i++) {
				int op = p->kernels[k].ops[i];

				if (op >= 0 && op < st->n_ops)
					st->group_of_op[op] = k;
			}
	} else if (st->grouping == GROUP_MICRO) {
		for (int i = 0; i < st->n_ops; i++)
			st->group_of_op[i] = pt->group_of[i];
	}
}

/* The type letter of op i once classified, else its kind's first
 * letters ("mat" for matmul). */
static const char *op_type(const fl_session *s, int i, char *buf, size_t n)
{
	const fl_partition *pt = fl_engine_partition(s);

	if (pt && pt->classified && pt->type_of && i < pt->n_ops)
		return fl_op_type_name(pt->type_of[i]);
	snprintf(buf, n, "%.3s",
		 fl_op_kind_name(fl_engine_graph(s)->ops[i].kind));
	return buf;
}

/* The type letter of group gid under the grouping ("?" when unknown). */
static const char *group_type(const fl_session *s, enum grouping gk, int gid)
{
	const fl_partition *pt = fl_engine_partition(s);
	const fl_program *p = fl_engine_program(s);

	if (gk == GROUP_KERNEL && p && gid >= 0 && gid < p->n_kernels)
		gid = p->kernels[gid].group;
	if (!pt || !pt->classified || gid < 0 || gid >= pt->n_groups)
		return "?";
	return fl_op_type_name(pt->groups[gid].type);
}

/* The text inside box b. */
static void node_label(const gstate *st, const fl_session *s,
		       const struct gnode *b, char *buf, size_t n)
{
	char tb[8];

	if (b->op >= 0)
		snprintf(buf, n, "%.*s %s", LABEL_MAX,
			 fl_engine_graph(s)->ops[b->op].name,
			 op_type(s, b->op, tb, sizeof tb));
	else
		snprintf(buf, n, "%s%d %s %d op%s",
			 st->grouping == GROUP_KERNEL ? "k" : "G", b->group,
			 group_type(s, st->grouping, b->group), b->n_members,
			 b->n_members == 1 ? "" : "s");
}

static int grow(void **p, int *cap, int need, size_t size)
{
	void *q;
	int nc;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap : 16;
	while (nc < need)
		nc *= 2;
	q = realloc(*p, (size_t)nc * size);
	if (!q)
		return -1;
	*p = q;
	*cap = nc;
	return 0;
}

/* Arrays sized by the op count (reallocated when it changes). */
static int size_ops(gstate *st, int n)
{
	int *a, *b;

	if (n == st->n_ops && st->node_of_op)
		return 0;
	a = realloc(st->node_of_op, ((size_t)n + 1) * sizeof *a);
	if (a)
		st->node_of_op = a;
	b = realloc(st->group_of_op, ((size_t)n + 1) * sizeof *b);
	if (b)
		st->group_of_op = b;
	if (!a || !b)
		return -1;
	st->n_ops = n;
	return 0;
}

static int add_node(gstate *st, int op, int group)
{
	struct gnode *b;

	if (grow((void **)&st->nodes, &st->cap_nodes, st->n_nodes + 1,
		 sizeof *st->nodes) < 0)
		return -1;
	b = &st->nodes[st->n_nodes];
	b->op = op;
	b->group = group;
	b->n_members = 0;
	b->first = op;
	return st->n_nodes++;
}

static bool expanded(const gstate *st, int group)
{
	for (int i = 0; i < st->n_exp; i++)
		if (st->exp[i] == group)
			return true;
	return false;
}

/* Boxes of collapsed mode: one per group that is not expanded, one per op
 * of the expanded groups and of no group. */
static int nodes_collapsed(gstate *st)
{
	int n_groups = 0;
	int *box_of;

	for (int i = 0; i < st->n_ops; i++)
		if (st->group_of_op[i] >= n_groups)
			n_groups = st->group_of_op[i] + 1;
	box_of = malloc(((size_t)n_groups + 1) * sizeof *box_of);
	if (!box_of)
		return -1;
	for (int g = 0; g < n_groups; g++)
		box_of[g] = -1;
	for (int i = 0; i < st->n_ops; i++) {
		int g = st->group_of_op[i];

		if (g < 0 || expanded(st, g)) {
			st->node_of_op[i] = add_node(st, i, g);
		} else {
			if (box_of[g] < 0)
				box_of[g] = add_node(st, -1, g);
			st->node_of_op[i] = box_of[g];
			if (box_of[g] >= 0 &&
			    st->nodes[box_of[g]].n_members++ == 0)
				st->nodes[box_of[g]].first = i;
		}
		if (st->node_of_op[i] < 0) {
			free(box_of);
			return -1;
		}
	}
	free(box_of);
	return 0;
}

/* The ops the neighbourhood is centred on: the current decision's, else
 * the selected op.  Marks them in `in` (hop 0); false when none. */
static bool neigh_centre(const fl_view_ctx *c, int n, int *hop)
{
	bool any = false;

	for (int i = 0; i < n; i++) {
		hop[i] = -1;
		if (c->highlighted && c->highlighted[i]) {
			hop[i] = 0;
			any = true;
		}
	}
	if (!any && c->sel->op >= 0 && c->sel->op < n) {
		hop[c->sel->op] = 0;
		any = true;
	}
	return any;
}

/* Boxes of neighbourhood mode: the centre ops and the ops within
 * st->hops producer or consumer edges of them (breadth first, both
 * ways; ops are in topological order, so a few sweeps settle it). */
static int nodes_neigh(gstate *st, const fl_view_ctx *c)
{
	const fl_graph *g = fl_engine_graph(c->s);
	int *hop = malloc(((size_t)st->n_ops + 1) * sizeof *hop);

	if (!hop)
		return -1;
	if (!neigh_centre(c, st->n_ops, hop)) {
		size_t n = strlen(st->notice);

		snprintf(st->notice + n, sizeof st->notice - n, "%s",
			 n ? " (select an op or step to a decision)"
			   : "neighbourhood: no decision here, no op selected");
	}
	for (int h = 0; h < st->hops; h++)
		for (int i = 0; i < g->n_ops; i++)
			for (int k = 0; k < g->ops[i].n_in; k++) {
				int p = g->tensors[g->ops[i].in[k]].producer;

				if (p < 0)
					continue;
				if (hop[p] == h && hop[i] < 0)
					hop[i] = h + 1;
				if (hop[i] == h && hop[p] < 0)
					hop[p] = h + 1;
			}
	for (int i = 0; i < st->n_ops; i++) {
		st->node_of_op[i] = -1;
		if (hop[i] < 0)
			continue;
		st->node_of_op[i] = add_node(st, i, st->group_of_op[i]);
		if (st->node_of_op[i] < 0) {
			free(hop);
			return -1;
		}
	}
	free(hop);
	return 0;
}

static int nodes_whole(gstate *st)
{
	for (int i = 0; i < st->n_ops; i++) {
		st->node_of_op[i] = add_node(st, i, st->group_of_op[i]);
		if (st->node_of_op[i] < 0)
			return -1;
	}
	return 0;
}

/* Edges between boxes: producer op's box -> consumer op's box. */
static int build_edges(gstate *st, const fl_graph *g)
{
	st->n_edges = 0;
	for (int i = 0; i < g->n_ops; i++)
		for (int k = 0; k < g->ops[i].n_in; k++) {
			int p = g->tensors[g->ops[i].in[k]].producer;
			int a, b;

			if (p < 0)
				continue;
			a = st->node_of_op[p];
			b = st->node_of_op[i];
			if (a < 0 || b < 0 || a == b)
				continue;
			if (grow((void **)&st->edges, &st->cap_edges,
				 st->n_edges + 1, sizeof *st->edges) < 0)
				return -1;
			st->edges[st->n_edges][0] = a;
			st->edges[st->n_edges][1] = b;
			st->n_edges++;
		}
	return 0;
}

/* Box widths from their labels: the text, a blank either side, borders. */
static int build_widths(gstate *st, const fl_session *s)
{
	int *w = realloc(st->width, ((size_t)st->n_nodes + 1) * sizeof *w);
	char buf[96];

	if (!w)
		return -1;
	st->width = w;
	for (int i = 0; i < st->n_nodes; i++) {
		node_label(st, s, &st->nodes[i], buf, sizeof buf);
		w[i] = (int)strlen(buf) + 4;
	}
	return 0;
}

static int build_nodes(gstate *st, const fl_view_ctx *c)
{
	const fl_graph *g = fl_engine_graph(c->s);
	int r;

	st->n_nodes = 0;
	if (st->grouping != st->exp_kind) {
		st->n_exp = 0;
		st->exp_kind = st->grouping;
	}
	if (st->mode == MODE_COLLAPSED && st->grouping != GROUP_NONE)
		r = nodes_collapsed(st);
	else if (st->mode == MODE_NEIGH)
		r = nodes_neigh(st, c);
	else
		r = nodes_whole(st);
	if (r < 0 || build_edges(st, g) < 0 || build_widths(st, c->s) < 0)
		return -1;
	return 0;
}

/* ---- mode, layout and canvas ---- */

/* The boxes collapsed mode would draw (groups plus loose ops); ids of
 * dead micro-graphs leave holes, so distinct ids are counted. */
static int collapsed_count(const gstate *st)
{
	int n = 0, top = -1;
	bool *seen;

	for (int i = 0; i < st->n_ops; i++)
		if (st->group_of_op[i] > top)
			top = st->group_of_op[i];
	seen = calloc((size_t)top + 2, sizeof *seen);
	if (!seen)
		return st->n_ops;
	for (int i = 0; i < st->n_ops; i++) {
		int g = st->group_of_op[i];

		if (g < 0 || !seen[g])
			n++;
		if (g >= 0)
			seen[g] = true;
	}
	free(seen);
	return n;
}

/* Until the user picks a mode, a big graph starts collapsed (or, when
 * even that is big, around the current decision) and says so. */
static void auto_mode(gstate *st)
{
	st->notice[0] = 0;
	if (st->user_mode) {
		if (st->mode == MODE_COLLAPSED && st->grouping == GROUP_NONE)
			snprintf(st->notice, sizeof st->notice,
				 "no micro-graphs yet: every op shown");
		return;
	}
	st->mode = MODE_WHOLE;
	if (st->n_ops <= BIG_GRAPH)
		return;
	if (st->grouping != GROUP_NONE && collapsed_count(st) <= BIG_GRAPH) {
		st->mode = MODE_COLLAPSED;
		snprintf(st->notice, sizeof st->notice,
			 "%d ops: collapsed view; a to lay out the whole graph",
			 st->n_ops);
	} else {
		st->mode = MODE_NEIGH;
		snprintf(st->notice, sizeof st->notice, "%d ops: neighbourhood"
			 " view; a to lay out the whole graph", st->n_ops);
	}
}

/* Lays the boxes out unless the cached layout is of the same input. */
static int ensure_layout(gstate *st)
{
	fl_gl_input in = {st->n_nodes, st->width, st->n_edges,
			  (const int (*)[2])st->edges};
	uint64_t key = fl_gl_input_hash(&in);

	if (st->lay && st->lay->key == key)
		return 0;
	if (st->layout_failed && st->failed_key == key)
		return -1;
	fl_gl_canvas_free(st->can);
	st->can = NULL;
	fl_glayout_free(st->lay);
	st->lay = NULL;
	if (!st->eng)
		st->eng = fl_gl_engine_new();
	if (st->eng)
		st->lay = fl_gl_layout(st->eng, &in);
	st->layout_failed = !st->lay;
	st->failed_key = key;
	return st->lay ? 0 : -1;
}

/* The canvas at 1:1, or squeezed to fit aw x ah when st->fit; not
 * below two rows a rank (a row of boxes and one of edges), where ranks
 * would fall on the same row and their boxes over each other: a graph
 * with more ranks than that still pans up and down. */
static int ensure_canvas(gstate *st, int aw, int ah)
{
	double sx = 1, sy = 1, min_sy = 2.0 / FL_GL_RANK_PITCH;

	if (st->fit) {
		if (st->lay->w + 1 > aw)
			sx = (aw - 1) / (st->lay->w + 1);
		if (st->lay->h + 1 > ah)
			sy = (ah - 1) / (st->lay->h + 1);
		if (sx <= 0)
			sx = 0.01;
		if (sy < min_sy)
			sy = min_sy;
	}
	if (st->can && st->can->sx == sx && st->can->sy == sy)
		return 0;
	fl_gl_canvas_free(st->can);
	st->can = fl_gl_canvas_new(st->lay, sx, sy);
	return st->can ? 0 : -1;
}

/* qsort has no user pointer in C11: the rectangles to sort by come
 * through this (drawing happens on one thread). */
static const fl_gl_rect *sort_rects;

/* Reading order: by row, then by column. */
static int cmp_order(const void *a, const void *b)
{
	const fl_gl_rect *x = &sort_rects[*(const int *)a];
	const fl_gl_rect *y = &sort_rects[*(const int *)b];

	if (x->y != y->y)
		return x->y < y->y ? -1 : 1;
	return (x->x > y->x) - (x->x < y->x);
}

static int build_order(gstate *st)
{
	int *o = realloc(st->order, ((size_t)st->n_nodes + 1) * sizeof *o);

	if (!o)
		return -1;
	st->order = o;
	for (int i = 0; i < st->n_nodes; i++)
		o[i] = i;
	sort_rects = st->can->node;
	qsort(o, (size_t)st->n_nodes, sizeof *o, cmp_order);
	return 0;
}

/* The box holding the selected op, -1 when none is drawn. */
static int cursor_node(const gstate *st, const fl_view_ctx *c)
{
	int op = c->sel->op;

	if (op < 0 || op >= st->n_ops || !st->node_of_op)
		return -1;
	return st->node_of_op[op];
}

/* Keeps the pan inside the canvas (a canvas narrower than the area is
 * centred), and scrolls to the selected box when the selection or the
 * layout changed since the last time. */
static void pan(gstate *st, const fl_view_ctx *c)
{
	const fl_gl_canvas *cv = st->can;
	int cur = cursor_node(st, c);

	if (cur >= 0 &&
	    (c->sel->op != st->seen_sel || st->lay->key != st->seen_key)) {
		const fl_gl_rect *r = &cv->node[cur];

		if (r->x < st->ox || r->x + r->w > st->ox + st->aw)
			st->ox = r->x + r->w / 2 - st->aw / 2;
		if (r->y < st->oy || r->y + r->h > st->oy + st->ah)
			st->oy = r->y + r->h / 2 - st->ah / 2;
	}
	st->seen_sel = c->sel->op;
	st->seen_key = st->lay->key;
	if (cv->w <= st->aw)
		st->ox = -(st->aw - cv->w) / 2;
	else if (st->ox < 0)
		st->ox = 0;
	else if (st->ox > cv->w - st->aw)
		st->ox = cv->w - st->aw;
	if (cv->h <= st->ah || st->oy < 0)
		st->oy = 0;
	else if (st->oy > cv->h - st->ah)
		st->oy = cv->h - st->ah;
}

/* ---- looks ---- */

/* Measured kernel times, when the overlay is on and there are some. */
static bool heat_on(const gstate *st, const fl_view_ctx *c)
{
	return st->heat && c->timed && st->grouping == GROUP_KERNEL &&
	       c->timed->n_kernels > 0;
}

/* Three buckets between the fastest and the slowest kernel, evenly on a
 * log scale (kernel times spread over orders of magnitude): edges[0..1]
 * are the two inner bounds in seconds. */
static void heat_edges(const fl_ladder_step *t, double *lo, double *hi,
		       double edges[2])
{
	*lo = -1;
	*hi = 0;
	for (int k = 0; k < t->n_kernels; k++) {
		double v = t->kernels[k].r.seconds;

		if (v <= 0)
			continue;
		if (*lo < 0 || v < *lo)
			*lo = v;
		if (v > *hi)
			*hi = v;
	}
	if (*lo < 0)
		*lo = *hi = 0;
	edges[0] = *lo * 1.0;
	edges[1] = *hi;
	if (*lo > 0 && *hi > *lo) {
		double r = *hi / *lo;

		edges[0] = *lo * pow(r, 1.0 / 3);
		edges[1] = *lo * pow(r, 2.0 / 3);
	}
}

static fl_look heat_look(const fl_ladder_step *t, int k)
{
	double lo, hi, e[2], v;

	if (k < 0 || k >= t->n_kernels || t->kernels[k].r.seconds <= 0)
		return FL_LOOK_DIM;
	heat_edges(t, &lo, &hi, e);
	v = t->kernels[k].r.seconds;
	return v < e[0] ? FL_LOOK_OK : v < e[1] ? FL_LOOK_WARN : FL_LOOK_BAD;
}

/* The colour of box b: its group's, or its kernel's time bucket. */
static fl_look colour_of(const gstate *st, const fl_view_ctx *c,
			 const struct gnode *b)
{
	if (heat_on(st, c))
		return heat_look(c->timed, b->group);
	if (st->grouping == GROUP_NONE)
		return FL_LOOK_NORMAL;
	return fl_look_group(b->group);
}

static bool op_marked(const fl_view_ctx *c, int op)
{
	for (int i = 0; i < c->sel->n_marks && i < 2; i++)
		if (c->sel->marks[i] == op)
			return true;
	return false;
}

/* What box i is, beyond its colour (ops of a group box count). */
struct node_state {
	bool cursor, mark, highlight, merged;
};

/* Fills ns[0..n_nodes-1] in one pass over the ops. */
static void node_states(const gstate *st, const fl_view_ctx *c,
			struct node_state *ns)
{
	const fl_partition *pt = fl_engine_partition(c->s);
	const fl_event *ev = c->current;
	bool merge = ev && ev->kind == FL_EV_MERGED && pt && pt->group_of &&
		     pt->n_ops == st->n_ops;
	int cur = cursor_node(st, c);

	memset(ns, 0, (size_t)st->n_nodes * sizeof *ns);
	if (cur >= 0 && c->focused)	/* the cursor of the pane in focus */
		ns[cur].cursor = true;
	for (int op = 0; op < st->n_ops; op++) {
		int i = st->node_of_op[op];

		if (i < 0)
			continue;
		ns[i].mark |= op_marked(c, op);
		ns[i].highlight |= c->highlighted && c->highlighted[op];
		ns[i].merged |= merge && (pt->group_of[op] == ev->group_a ||
					  pt->group_of[op] == ev->group_b);
	}
}

/* ---- drawing ---- */

/* A box in double lines: the micro-graph of the current merge. */
static void double_box(fl_grid *g, int x, int y, int w, int h, fl_look r)
{
	for (int i = 1; i < w - 1; i++) {
		fl_grid_put(g, x + i, y, 0x2550, r);
		fl_grid_put(g, x + i, y + h - 1, 0x2550, r);
	}
	for (int j = 1; j < h - 1; j++) {
		fl_grid_put(g, x, y + j, 0x2551, r);
		fl_grid_put(g, x + w - 1, y + j, 0x2551, r);
	}
	fl_grid_put(g, x, y, 0x2554, r);
	fl_grid_put(g, x + w - 1, y, 0x2557, r);
	fl_grid_put(g, x, y + h - 1, 0x255A, r);
	fl_grid_put(g, x + w - 1, y + h - 1, 0x255D, r);
}

/* The look of a box's text: what the user is looking at first. */
static fl_look text_look(const struct node_state *ns, fl_look colour)
{
	if (ns->cursor)
		return FL_LOOK_CURSOR;
	if (ns->mark)
		return FL_LOOK_MARK;
	if (ns->highlight)
		return FL_LOOK_HIGHLIGHT;
	return colour;
}

/* Where an edge leaves box r (its first cell below the box connects
 * up), the bottom border gets a tee, so the edge visibly starts there. */
static void edge_tees(const gstate *st, fl_grid *g, const fl_gl_rect *r,
		      int x, int y, fl_look look)
{
	const fl_gl_canvas *cv = st->can;
	int below = r->y + r->h;

	if (below >= cv->h)
		return;
	for (int i = 1; i < r->w - 1; i++) {
		int cx = r->x + i;

		if (cx < cv->w &&
		    (cv->mask[(size_t)below * (size_t)cv->w + (size_t)cx] &
		     (FL_GL_UP | FL_GL_ARROW)) == FL_GL_UP)
			fl_grid_put(g, x + i, y + r->h - 1, FL_CH_TEE_D, look);
	}
}

/* Draws box i into g, the drawing area (clipped by it). */
static void draw_node(const gstate *st, const fl_view_ctx *c, fl_grid *g,
		      int i, const struct node_state *ns)
{
	const fl_gl_rect *r = &st->can->node[i];
	int x = r->x - st->ox, y = r->y - st->oy;
	fl_look colour = colour_of(st, c, &st->nodes[i]);
	fl_look tl = text_look(ns, colour);
	char label[96];

	if (x >= g->w || y >= g->h || x + r->w <= 0 || y + r->h <= 0)
		return;
	node_label(st, c->s, &st->nodes[i], label, sizeof label);
	if (r->h >= 3 && r->w >= 3) {
		fl_grid_fill(g, x, y, r->w, r->h, ' ', colour);
		if (ns->merged) {
			double_box(g, x, y, r->w, r->h, colour);
		} else {
			fl_grid_box(g, x, y, r->w, r->h, colour);
			edge_tees(st, g, r, x, y, colour);
		}
		fl_grid_text(g, x + 2, y + 1, r->w - 4 > 0 ? r->w - 4 : 1,
			     label, tl);
	} else {
		fl_grid_fill(g, x, y, r->w, r->h, ' ', tl);
		fl_grid_text(g, x, y, r->w, label, tl);
	}
}

/* Draws the boxes and edges in view into the area (st->ax, ay, aw, ah)
 * of g, through a grid of the area's size that clips them. */
static void draw_graph(gstate *st, const fl_view_ctx *c, fl_grid *g)
{
	struct node_state *ns = calloc((size_t)st->n_nodes + 1, sizeof *ns);
	fl_grid *a = fl_grid_new(st->aw, st->ah);

	if (!ns || !a) {
		fl_view_empty(g, "out of memory");
		goto out;
	}
	fl_gl_draw_edges(st->can, a, 0, 0, st->aw, st->ah, st->ox, st->oy,
			 FL_LOOK_EDGE);
	node_states(st, c, ns);
	for (int i = 0; i < st->n_nodes; i++)
		draw_node(st, c, a, i, &ns[i]);
	fl_grid_blit(g, st->ax, st->ay, a);
out:
	fl_grid_free(a);
	free(ns);
}

/* ---- the legend line ---- */

static const char *mode_name(const gstate *st, char *buf, size_t n)
{
	if (st->mode == MODE_NEIGH)
		snprintf(buf, n, "neighbourhood k=%d", st->hops);
	else
		snprintf(buf, n, "%s",
			 st->mode == MODE_COLLAPSED ? "collapsed" : "whole");
	return buf;
}

static bool node_visible(const gstate *st, int i)
{
	const fl_gl_rect *r = &st->can->node[i];

	return r->x - st->ox < st->aw && r->y - st->oy < st->ah &&
	       r->x + r->w - st->ox > 0 && r->y + r->h - st->oy > 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* "G3 E  G4 R ..." for the groups with a box in view, each in its look. */
static int legend_groups(const gstate *st, const fl_view_ctx *c, fl_grid *g,
			 int x)
{
	int *ids = malloc(((size_t)st->n_nodes + 1) * sizeof *ids);
	int n = 0;

	if (!ids)
		return x;
	for (int i = 0; i < st->n_nodes; i++)
		if (st->nodes[i].group >= 0 && node_visible(st, i))
			ids[n++] = st->nodes[i].group;
	qsort(ids, (size_t)n, sizeof *ids, cmp_int);
	for (int i = 0; i < n && x < g->w; i++) {
		if (i && ids[i] == ids[i - 1])
			continue;
		x += fl_grid_textf(g, x, 0, -1, fl_look_group(ids[i]),
				   " %s%d %s",
				   st->grouping == GROUP_KERNEL ? "k" : "G",
				   ids[i],
				   group_type(c->s, st->grouping, ids[i]));
	}
	free(ids);
	return x;
}

static void legend_heat(const fl_ladder_step *t, fl_grid *g, int x)
{
	double lo, hi, e[2];

	heat_edges(t, &lo, &hi, e);
	x += fl_grid_text(g, x, 0, -1, " time:", FL_LOOK_TITLE);
	x += fl_grid_textf(g, x, 0, -1, FL_LOOK_OK, " %.3g-%.3g ms", lo * 1e3,
			   e[0] * 1e3);
	x += fl_grid_textf(g, x, 0, -1, FL_LOOK_WARN, " %.3g-%.3g ms",
			   e[0] * 1e3, e[1] * 1e3);
	fl_grid_textf(g, x, 0, -1, FL_LOOK_BAD, " %.3g-%.3g ms", e[1] * 1e3,
		      hi * 1e3);
}

static void draw_legend(const gstate *st, const fl_view_ctx *c, fl_grid *g)
{
	static const char *const colour[] = {"none", "micro-graph", "kernel"};
	char mode[40];
	int x;

	x = fl_grid_textf(g, 0, 0, -1, FL_LOOK_TITLE, "%s %s",
			  mode_name(st, mode, sizeof mode),
			  st->fit ? "fit" : "1:1");
	if (heat_on(st, c)) {
		legend_heat(c->timed, g, x);
		return;
	}
	x += fl_grid_textf(g, x, 0, -1, FL_LOOK_DIM, " · colour: %s",
			   colour[st->grouping]);
	legend_groups(st, c, g, x);
}

/* ---- the detail pane ---- */

/* The placement of op's output tensor in kernel k, NULL when none. */
static const fl_kernel_tensor *placement(const fl_program *p, int k,
					 int tensor)
{
	if (!p || k < 0 || k >= p->n_kernels)
		return NULL;
	for (int i = 0; i < p->kernels[k].n_tensors; i++)
		if (p->kernels[k].tensors[i].tensor == tensor)
			return &p->kernels[k].tensors[i];
	return NULL;
}

/* "a [1,128], b [128]" for the inputs of op. */
static void inputs_text(const fl_graph *gr, const fl_op *op, char *buf,
			size_t n)
{
	size_t used = 0;

	buf[0] = 0;
	for (int k = 0; k < op->n_in && used + 1 < n; k++) {
		const fl_tensor *t = &gr->tensors[op->in[k]];
		char sh[96];

		fl_shape_format(&t->shape, sh, sizeof sh);
		/* "ids i64[2,3]": the dtype when it is not the usual f32 */
		used += (size_t)snprintf(buf + used, n - used, "%s%s %s%s",
					 k ? ", " : "", t->name,
					 t->dtype == FL_F32 ? ""
						: fl_dtype_name(t->dtype), sh);
	}
}

#define LINE 240			/* a detail line's bytes */

/* "type R (reduction): in[0] dim 1 reduced (surjective)" */
static void type_line(const fl_partition *pt, int i, char *buf)
{
	if (!pt || !pt->classified || i >= pt->n_ops) {
		snprintf(buf, LINE, "type: not classified yet");
		return;
	}
	snprintf(buf, LINE, "type %s (%s): %s", fl_op_type_name(pt->type_of[i]),
		 fl_op_type_long_name(pt->type_of[i]), pt->type_reason[i]);
}

/* "micro-graph G3 (R, 4 ops, R1 R4)   kernel fl_k2" */
static void group_line(const fl_partition *pt, const fl_program *p, int i,
		       int k, char *buf)
{
	const fl_micro_graph *mg = &pt->groups[pt->group_of[i]];

	snprintf(buf, LINE, "micro-graph G%d (%s, %d ops, %s)   kernel %s",
		 mg->id, fl_op_type_name(mg->type), mg->n_members,
		 mg->history[0] ? mg->history : "no merges",
		 k >= 0 ? p->kernels[k].name : "none yet");
}

/* "from: op7 (ONNX Gemm), opened from rmsnorm, rewritten by cse" */
static void prov_line(const fl_op *op, char *buf)
{
	const fl_provenance *pv = &op->prov;

	snprintf(buf, LINE, "from: %s%s%s%s%s%s%s%s",
		 pv->origin ? pv->origin : op->name,
		 pv->source_op ? " (ONNX " : "",
		 pv->source_op ? pv->source_op : "",
		 pv->source_op ? ")" : "",
		 pv->compound ? ", opened from " : "",
		 pv->compound ? pv->compound : "",
		 pv->rewrite ? ", rewritten by " : "",
		 pv->rewrite ? pv->rewrite : "");
}

/* Lines about op i (at most 5); returns how many were written. */
static int op_details(const fl_view_ctx *c, int i, char lines[][LINE])
{
	const fl_graph *gr = fl_engine_graph(c->s);
	const fl_partition *pt = fl_engine_partition(c->s);
	const fl_program *p = fl_engine_program(c->s);
	const fl_op *op = &gr->ops[i];
	int k = fl_view_kernel_of_op(c, i), n = 0;
	const fl_tensor *out;
	const fl_kernel_tensor *kt;
	char sh[96], in[160];

	if (op->n_out < 1) {
		snprintf(lines[n++], LINE, "%s: %s (no output)", op->name,
			 fl_op_kind_name(op->kind));
		return n;
	}
	out = &gr->tensors[op->out[0]];
	kt = placement(p, k, op->out[0]);

	inputs_text(gr, op, in, sizeof in);
	snprintf(lines[n++], LINE, "%s: %s   in %s   out %s %s", op->name,
		 fl_op_kind_name(op->kind), in[0] ? in : "-", out->name,
		 fl_shape_format(&out->shape, sh, sizeof sh));
	type_line(pt, i, lines[n++]);
	if (pt && pt->group_of && i < pt->n_ops && pt->group_of[i] >= 0)
		group_line(pt, p, i, k, lines[n++]);
	if (kt)
		snprintf(lines[n++], LINE, "output %s: %s: %s", out->name,
			 fl_placement_name(kt->place), kt->why);
	prov_line(op, lines[n++]);
	return n;
}

/* Lines about the group box b. */
static int group_details(const gstate *st, const fl_view_ctx *c,
			 const struct gnode *b, char lines[][LINE])
{
	const fl_graph *gr = fl_engine_graph(c->s);
	const fl_program *p = fl_engine_program(c->s);
	int n = 0;

	if (st->grouping == GROUP_KERNEL)
		snprintf(lines[n++], LINE,
			 "kernel k%d %s: %d ops, type %s, micro-graph G%d",
			 b->group, p->kernels[b->group].name, b->n_members,
			 group_type(c->s, st->grouping, b->group),
			 p->kernels[b->group].group);
	else
		snprintf(lines[n++], LINE, "micro-graph G%d: %d ops, type %s",
			 b->group, b->n_members,
			 group_type(c->s, st->grouping, b->group));
	/* the kernel's tile sizes and why (the "tiled" event's text) */
	if (st->grouping == GROUP_KERNEL && p->kernels[b->group].tile_why[0])
		snprintf(lines[n++], LINE, "%.*s", LINE - 1,
			 p->kernels[b->group].tile_why);
	snprintf(lines[n++], LINE, "first op %s; Enter shows its ops",
		 gr->ops[b->first].name);
	if (heat_on(st, c) && b->group < c->timed->n_kernels)
		snprintf(lines[n++], LINE, "measured %.4g ms",
			 c->timed->kernels[b->group].r.seconds * 1e3);
	return n;
}


static void draw_pane(const gstate *st, const fl_view_ctx *c, fl_grid *g,
		      int y, int h)
{
	char lines[6][LINE];
	int cur = cursor_node(st, c), n, row = y + 1;

	fl_grid_hline(g, 0, y, g->w, FL_LOOK_DIM);
	fl_grid_text(g, 1, y, -1, " detail ", FL_LOOK_TITLE);
	if (cur < 0 && c->sel->op >= 0 && c->sel->op < st->n_ops)
		n = op_details(c, c->sel->op, lines);
	else if (cur >= 0 && st->nodes[cur].op >= 0)
		n = op_details(c, st->nodes[cur].op, lines);
	else if (cur >= 0)
		n = group_details(st, c, &st->nodes[cur], lines);
	else
		n = snprintf(lines[0], LINE, "no op selected: [ ] HJKL or a "
			     "click select one") > 0;
	/* each line gets a row; what is left wraps the longer ones */
	for (int i = 0; i < n && row < y + h; i++) {
		int spare = y + h - row - (n - i - 1);

		row += fl_grid_wrap(g, 1, row, g->w - 2, spare > 1 ? spare : 1,
				 lines[i], i ? FL_LOOK_NORMAL : FL_LOOK_TITLE);
	}
}

/* ---- render ---- */

/* Rows of the detail pane: shown under the drawing when the view is at
 * least 16 rows high, else only when toggled with d (and d hides it on
 * tall views). */
static int pane_rows(const gstate *st, int h)
{
	bool show = (h >= 16) != st->pane_flip;

	if (!show || h < 4)
		return 0;
	return h >= 16 ? PANE_ROWS : h / 2;
}

/* Builds the boxes and their layout for the session; -1 with a message
 * drawn when there is nothing to show. */
static int prepare(gstate *st, const fl_view_ctx *c, fl_grid *g)
{
	const fl_graph *gr = fl_engine_graph(c->s);

	if (!gr || gr->n_ops == 0) {
		fl_view_empty(g, "no ops in the graph");
		return -1;
	}
	if (size_ops(st, gr->n_ops) < 0) {
		fl_view_empty(g, "out of memory");
		return -1;
	}
	st->grouping = grouping_of(c->s);
	fill_groups(st, c->s);
	auto_mode(st);
	if (build_nodes(st, c) < 0) {
		fl_view_empty(g, "out of memory");
		return -1;
	}
	if (st->n_nodes == 0) {
		fl_view_empty(g, st->notice[0] ? st->notice
					       : "nothing to draw");
		return -1;
	}
	if (ensure_layout(st) < 0) {
		fl_view_empty(g, "Graphviz could not lay this graph out");
		return -1;
	}
	return 0;
}

static void graph_render(void *p, const fl_view_ctx *c, fl_grid *g)
{
	gstate *st = p;
	int pane, top;

	st->drawn = false;
	if (g->w <= 0 || g->h <= 0 || prepare(st, c, g) < 0)
		return;
	pane = pane_rows(st, g->h);
	top = g->h >= 3 ? 1 + (st->notice[0] != 0 && g->h >= 8) : 0;
	st->ax = 0;
	st->ay = top;
	st->aw = g->w;
	st->ah = g->h - top - pane;
	if (st->ah < 1) {
		pane = 0;
		st->ah = g->h - top;
	}
	if (ensure_canvas(st, st->aw, st->ah) < 0 || build_order(st) < 0) {
		fl_view_empty(g, "out of memory");
		return;
	}
	pan(st, c);
	st->drawn = true;
	draw_graph(st, c, g);
	if (top > 0)
		draw_legend(st, c, g);
	if (top > 1)
		fl_grid_text(g, 0, 1, -1, st->notice, FL_LOOK_WARN);
	if (pane > 0)
		draw_pane(st, c, g, g->h - pane, pane);
}

/* ---- keys ---- */

static int select_node(const gstate *st, int i, fl_view_action *act)
{
	const struct gnode *b = &st->nodes[i];

	act->kind = FL_VIEW_ACT_SELECT_OP;
	act->arg = b->op >= 0 ? b->op : b->first;
	return 1;
}

/* [ and ]: the box before or after the selected one in reading order. */
static int step_order(const gstate *st, const fl_view_ctx *c, int d,
		      fl_view_action *act)
{
	int cur = cursor_node(st, c), at = -1;

	if (!st->drawn || st->n_nodes == 0)
		return 1;
	for (int k = 0; k < st->n_nodes; k++)
		if (st->order[k] == cur)
			at = k;
	at = at < 0 ? (d > 0 ? 0 : st->n_nodes - 1) : at + d;
	if (at < 0 || at >= st->n_nodes)
		return 1;
	return select_node(st, st->order[at], act);
}

/* HJKL: the nearest box whose centre lies that way from the selected
 * box's, distance along the way counting less than across it. */
static int step_dir(const gstate *st, const fl_view_ctx *c, int dx, int dy,
		    fl_view_action *act)
{
	int cur = cursor_node(st, c), best = -1;
	double bd = 0, cx, cy;

	if (!st->drawn || st->n_nodes == 0)
		return 1;
	if (cur < 0)
		return select_node(st, st->order[0], act);
	cx = st->can->node[cur].x + st->can->node[cur].w / 2.0;
	cy = st->can->node[cur].y + st->can->node[cur].h / 2.0;
	for (int i = 0; i < st->n_nodes; i++) {
		const fl_gl_rect *r = &st->can->node[i];
		double ex = r->x + r->w / 2.0 - cx, ey = r->y + r->h / 2.0 - cy;
		double along = ex * dx + ey * dy, across;

		if (i == cur || along <= 0)
			continue;
		across = dx ? ey * 2 : ex / 2;	/* a row is two columns */
		along = dx ? along : along * 2;
		if (across < 0)
			across = -across;
		if (best < 0 || along + 2 * across < bd) {
			best = i;
			bd = along + 2 * across;
		}
	}
	return best < 0 ? 1 : select_node(st, best, act);
}

static int click(const gstate *st, const fl_view_ctx *c, fl_view_action *act)
{
	int x = c->mouse_x - st->ax + st->ox, y = c->mouse_y - st->ay + st->oy;

	if (!st->drawn || c->mouse_x < st->ax || c->mouse_y < st->ay ||
	    c->mouse_x >= st->ax + st->aw || c->mouse_y >= st->ay + st->ah)
		return 0;
	for (int i = 0; i < st->n_nodes; i++) {
		const fl_gl_rect *r = &st->can->node[i];

		if (x >= r->x && x < r->x + r->w && y >= r->y &&
		    y < r->y + r->h)
			return select_node(st, i, act);
	}
	return 1;
}

/* Enter in collapsed mode: a group box opens into its ops; an op of an
 * opened group closes it again. */
static int enter(gstate *st, const fl_view_ctx *c, fl_view_action *act)
{
	int cur = cursor_node(st, c), gid;

	if (st->mode != MODE_COLLAPSED || st->grouping == GROUP_NONE ||
	    !st->drawn)
		return 0;
	if (cur < 0) {
		act->kind = FL_VIEW_ACT_MESSAGE;
		snprintf(act->text, sizeof act->text,
			 "select a box first ([ ] HJKL or a click)");
		return 1;
	}
	gid = st->nodes[cur].group;
	if (gid < 0)
		return 1;
	if (st->nodes[cur].op < 0) {
		if (grow((void **)&st->exp, &st->cap_exp, st->n_exp + 1,
			 sizeof *st->exp) == 0)
			st->exp[st->n_exp++] = gid;
		return 1;
	}
	for (int i = 0; i < st->n_exp; i++)
		if (st->exp[i] == gid)
			st->exp[i--] = st->exp[--st->n_exp];
	return 1;
}

static void set_mode(gstate *st, enum mode m)
{
	st->mode = m;
	st->user_mode = true;
}

static int pan_key(gstate *st, int key)
{
	int sx = st->aw / 4 > 1 ? st->aw / 4 : 1;
	int sy = st->ah / 4 > 1 ? st->ah / 4 : 1;

	switch (key) {
	case FL_KEY_LEFT: case 'h': st->ox -= sx; return 1;
	case FL_KEY_RIGHT: case 'l': st->ox += sx; return 1;
	case FL_KEY_UP: case 'k': st->oy -= sy; return 1;
	case FL_KEY_DOWN: case 'j': st->oy += sy; return 1;
	case FL_KEY_PGUP: st->oy -= st->ah > 1 ? st->ah - 1 : 1; return 1;
	case FL_KEY_PGDN: st->oy += st->ah > 1 ? st->ah - 1 : 1; return 1;
	case FL_KEY_HOME: st->ox = st->oy = 0; return 1;
	default: return 0;
	}
}

static int toggle_heat(gstate *st, const fl_view_ctx *c, fl_view_action *act)
{
	st->heat = !st->heat;
	if (st->heat && !c->timed) {
		act->kind = FL_VIEW_ACT_MESSAGE;
		snprintf(act->text, sizeof act->text,
			 "no kernel times yet: run the kernels first");
	}
	return 1;
}

static int graph_key(void *p, const fl_view_ctx *c, int key,
		     fl_view_action *act)
{
	gstate *st = p;

	act->kind = FL_VIEW_ACT_NONE;
	if (pan_key(st, key))
		return 1;
	switch (key) {
	case 'z': st->fit = !st->fit; return 1;
	case 'v':
		set_mode(st, st->mode == MODE_NEIGH ? MODE_WHOLE : MODE_NEIGH);
		return 1;
	case 'c': set_mode(st, MODE_COLLAPSED); return 1;
	case 'a': set_mode(st, MODE_WHOLE); return 1;
	case '+': st->hops += st->hops < 9; return 1;
	case '-': st->hops -= st->hops > 0; return 1;
	case 'd': st->pane_flip = !st->pane_flip; return 1;
	case 'y': return toggle_heat(st, c, act);
	case '[': return step_order(st, c, -1, act);
	case ']': return step_order(st, c, 1, act);
	case 'H': return step_dir(st, c, -1, 0, act);
	case 'L': return step_dir(st, c, 1, 0, act);
	case 'K': return step_dir(st, c, 0, -1, act);
	case 'J': return step_dir(st, c, 0, 1, act);
	case FL_KEY_ENTER: return enter(st, c, act);
	case FL_KEY_MOUSE: return click(st, c, act);
	default: return 0;
	}
}

static const fl_view_key graph_keys[] = {
	{"Arrows hjkl PgUp PgDn", "pan the drawing (Home: top left)"},
	{"[ ]", "select the previous / next op in reading order"},
	{"HJKL", "select the nearest op left / down / up / right"},
	{"click", "select the op under the mouse"},
	{"z", "fit the graph to the window / 1:1"},
	{"v", "neighbourhood of the decision (or selected op)"},
	{"+ -", "more / fewer hops in the neighbourhood"},
	{"c", "collapse: one box per micro-graph or kernel"},
	{"Enter", "collapsed: open the box / close its group"},
	{"a", "the whole graph"},
	{"y", "colour kernels by measured time"},
	{"d", "show / hide the detail pane"},
	{NULL, NULL},
};

const fl_view_class fl_view_graph = {
	.name = "graph",
	.keys = graph_keys,
	.create = graph_create,
	.destroy = graph_destroy,
	.render = graph_render,
	.key = graph_key,
};
