/* The iteration-domain picture of a statement (DESIGN 8), for slides
 * about tile-then-fuse: the points of one statement over two of its
 * dimensions, the others fixed, each a small circle at its fixed
 * position coloured by tile; the points computed by two tiles or more
 * (the overlap an extension node recomputes) drawn as diamonds with a
 * thick outline; each tile's box of points drawn dashed in its colour;
 * a legend, and a title naming kernel, statement, dimensions, fixed
 * values and the window.  Built with cgraph, laid out by neato with
 * every position pinned (positions as given), written as .dot (with
 * the positions, so `neato -n2` renders it again) or rendered to
 * .svg/.png through gvc in memory.  The model is the layer-1 stage's
 * (engine/layer1/domain_points.h), the one the domain view draws. */
#ifndef FL_DOMAIN_DOT_H
#define FL_DOMAIN_DOT_H

#include "engine.h"
#include "fl_error.h"

/* At most this many points per dimension are drawn (from the lower
 * bound); the title says when the domain was cut. */
#define FL_DOMAIN_DOT_MAX 64

/* Writes the picture of statement `statement` (NULL: the kernel's first)
 * of kernel `kernel` of the session's program to path.  dim_x (columns)
 * and dim_y (rows) are dimensions of the statement, -1 for both: the two
 * innermost, as the domain view shows first.  fixed holds the values of
 * the other dimensions in dimension order (n_fixed of them: all, or 0
 * for their lower bounds).  format is "dot", "svg" or "png" (NULL: the
 * path's extension, else dot).  Returns 0, or -1 with a message naming
 * what is wrong (kernel, statement, dimension, value, path); nothing is
 * left at path on failure. */
int fl_export_domain(const fl_session *s, int kernel, const char *statement,
		     int dim_x, int dim_y, const long *fixed, int n_fixed,
		     const char *path, const char *format, fl_error *err);

#endif
