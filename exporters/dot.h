/* Graphviz pictures of a session (DESIGN 8), built with cgraph and
 * rendered with gvc inside the program: no hand-made DOT text, no `dot`
 * process.
 *
 * fl_export_graph draws the graph at the session's current step:
 *   - one cluster per unit: the program's kernels once layer 1 ran, else
 *     the alive micro-graphs once they exist; labelled with the type
 *     (E/B/R/O), the rules that built it (the micro-graph's history) and
 *     the kernel name.  A unit whose ops are all excluded from fusion
 *     (custom ops) gets no cluster;
 *   - a node per op (named as the op), filled by its type once classified
 *     (by its op class before), with a legend; ops in no cluster greyed;
 *   - an edge per producer -> consumer tensor, labelled with the shape
 *     and, once layer 1 ran, the tensor's placement in the consuming
 *     kernel (global, tile-local, register); graph inputs, parameters and
 *     outputs as small ellipses;
 *   - a kernel layer 2 stitched (its ops from several micro-graphs) is
 *     labelled "stitched (layer 2): G.. + G.." and holds one dotted
 *     sub-cluster per micro-graph; an edge between two of them is a
 *     stitched edge, so labelled, bold green when its tensor stayed in
 *     the tile;
 *   - a kernel layer 3 made is a blue cluster "parallel group (layer 3):
 *     N branches, gain X us" with one sub-cluster per branch (itself
 *     split by micro-graph when layer 2 stitched it);
 *   - until layer 3 has run, the parallel groups it would form
 *     (fl_stitch_parallel_analyze) drawn blue and named in their
 *     members' labels;
 *   - the ops of the decision that led to this step (the last event)
 *     bold red.
 * fl_export_schedule_tree draws a kernel's schedule tree, one Graphviz
 * node per tree node, each kind in its own style.
 *
 * Formats: "dot" (the graph as written by cgraph, no layout), "svg" and
 * "png" (laid out by dot and rendered by gvc).  Every file goes through
 * output.h: it appears whole or not at all.  Neither function prints or
 * exits; each returns 0, or -1 with a message naming the path. */
#ifndef FL_DOT_H
#define FL_DOT_H

#include "engine.h"
#include "ladder.h"

typedef struct fl_export_graph_opts {
	/* -1: the whole graph; K >= 0: the ops of the step's decision and
	 * those K hops away from them, along edges in both directions (the
	 * whole graph when the decision names no op of the graph) */
	int neighbourhood;
	/* the picture's label; NULL: the graph's name, "step k/N" and the
	 * last decision's reason */
	const char *title;
	/* decisions in the complete run, N of "step k/N" (fl_engine_total,
	 * which needs a session it may run); 0: unknown, "step k" alone */
	int total;
	/* a ladder step of the same strategy, or NULL: with it, kernel
	 * clusters show their median time */
	const fl_ladder_step *timed;
} fl_export_graph_opts;

/* The defaults: whole graph, generated title, no times. */
void fl_export_graph_opts_default(fl_export_graph_opts *o);

/* "dot", "svg" or "png" from path's extension (case-insensitive: .dot
 * and .gv, .svg, .png); NULL for any other. */
const char *fl_export_format_of(const char *path);

/* The graph of s at its current step into path, in format ("dot", "svg"
 * or "png"); o may be NULL (the defaults). */
int fl_export_graph(const fl_session *s, const fl_export_graph_opts *o,
		    const char *path, const char *format, fl_error *err);

/* The schedule tree of kernel `kernel` (an index into the program) into
 * path; -1 when layer 1 has not run or there is no such kernel. */
int fl_export_schedule_tree(const fl_session *s, int kernel,
			    const char *path, const char *format,
			    fl_error *err);

#endif
