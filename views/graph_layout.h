/* Graph layout for the graph view: Graphviz's dot (through gvc) places
 * boxes whose sizes are given in character cells, top to bottom, and
 * routes the edges between them; the result comes back in cells.
 *
 * A layout (fl_glayout) holds each node's centre and size and each edge
 * as a polyline sampled from dot's splines, in cell units.  A canvas
 * (fl_gl_canvas) is a layout rasterised at a scale: node rectangles and
 * a mask of line connections per cell, so that drawing any window of it
 * (panning) costs only the cells drawn.  Both are plain data, computed
 * once and cached by the view (fl_gl_input_hash keys the layout).
 *
 * Graphviz keeps global state and is not thread safe: lay out on one
 * thread (the explorer's drawing thread). */
#ifndef FL_GRAPH_LAYOUT_H
#define FL_GRAPH_LAYOUT_H

#include <stdint.h>

#include "grid.h"

#define FL_GL_NODE_H 3		/* a node is a box of three rows */
#define FL_GL_RANK_GAP 2	/* rows between two ranks of boxes */
#define FL_GL_RANK_PITCH (FL_GL_NODE_H + FL_GL_RANK_GAP)

/* What to lay out: n_nodes boxes (width[i] cells wide, >= 3; each
 * FL_GL_NODE_H rows high) and directed edges between them (duplicates
 * and self loops are dropped). */
typedef struct fl_gl_input {
	int n_nodes;
	const int *width;
	int n_edges;
	const int (*edge)[2];	/* {from, to} node indices */
} fl_gl_input;

typedef struct fl_gl_edge {
	int from, to;
	int n_pts;
	double (*pt)[2];	/* x, y in cells, from the source's side */
} fl_gl_edge;

typedef struct fl_glayout {
	int n_nodes;
	double (*centre)[2];	/* x, y in cells, y downwards */
	int *width;		/* cells, as given */
	double w, h;		/* the drawing's size in cells */
	int n_edges;
	fl_gl_edge *edges;
	uint64_t key;		/* fl_gl_input_hash of the input */
} fl_glayout;

/* Connection bits of a canvas cell, and its arrowhead. */
enum {
	FL_GL_UP = 1, FL_GL_DOWN = 2, FL_GL_LEFT = 4, FL_GL_RIGHT = 8,
	FL_GL_ARROW = 16,	/* an arrowhead: it points the way of
				   FL_GL_ARROW_DIR (one of the four above) */
};

#define FL_GL_ARROW_DIR(m) (1 << (((m) >> 5) & 3))

typedef struct fl_gl_rect {
	int x, y, w, h;
} fl_gl_rect;

/* A layout rasterised at scale (sx, sy): cell (x, y) of the canvas is
 * mask[y * w + x]. */
typedef struct fl_gl_canvas {
	int w, h;
	double sx, sy;
	int n_nodes;
	fl_gl_rect *node;
	uint8_t *mask;
} fl_gl_canvas;

typedef struct fl_gl_engine fl_gl_engine;

/* A handle on the process's Graphviz context (made on first use, kept
 * until exit), its messages silenced: nothing may scribble on the
 * terminal.  NULL when out of memory. */
fl_gl_engine *fl_gl_engine_new(void);
void fl_gl_engine_free(fl_gl_engine *e);

/* A hash of everything that decides the layout (sizes and edges). */
uint64_t fl_gl_input_hash(const fl_gl_input *in);

/* Lays in out with dot (rankdir TB).  NULL when Graphviz fails or
 * memory runs out. */
fl_glayout *fl_gl_layout(fl_gl_engine *e, const fl_gl_input *in);
void fl_glayout_free(fl_glayout *l);

/* Rasterises l at scale (sx, sy) (1, 1: one cell per cell; below 1:
 * squeezed to fit).  Nodes keep at least one cell; at a scale where a
 * node cannot keep three rows it is one row high.  NULL when out of
 * memory. */
fl_gl_canvas *fl_gl_canvas_new(const fl_glayout *l, double sx, double sy);
void fl_gl_canvas_free(fl_gl_canvas *c);

/* The box-drawing character for a connection mask (0 for none). */
uint32_t fl_gl_mask_char(uint8_t mask);

/* Draws the canvas's edges whose cells fall in the window of w x h cells
 * at canvas offset (ox, oy) into g at (gx, gy), in look r. */
void fl_gl_draw_edges(const fl_gl_canvas *c, fl_grid *g, int gx, int gy,
		      int w, int h, int ox, int oy, fl_look r);

#endif
