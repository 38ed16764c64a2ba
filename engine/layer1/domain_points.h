/* The iteration-domain model of a kernel's statements, for pictures: the
 * domain view (views/view_domain.c) and the domain exporter
 * (exporters/domain_dot.c) draw it, this computes it.  Public header of
 * the layer-1 stage; reads a kernel, changes nothing.
 *
 *   - fl_domain_new lists a kernel's statements "S<op>_<k>" in program
 *     order (ops in the kernel's topological order, then k), with their
 *     dimensions and extent box, and collects the recomputed copies
 *     "S<op>_<k>_r<n>" that the tree's extension nodes add.
 *   - fl_domain_window_new cuts one statement to a window of two of its
 *     dimensions, [x0, x0 + w) x [y0, y0 + h), the others fixed, and
 *     says per point whether it is an instance, which tile computes it
 *     and how many tiles do: a tiled statement's tile is
 *     kernel->inst2tile of the instance; a producer fused by an
 *     extension node runs only as its copies, whose tuples are the tile
 *     coordinates followed by the instance, so its tiles are those of
 *     its copies and an instance with copies under two tiles or more is
 *     overlapped (recomputed).  Untiled statements have no tile.
 *
 * Work is bounded by the window: isl intersects the domain with the
 * window's box before any point is enumerated.  Results are plain
 * structs; isl objects stay inside fl_domain (they live in the kernel's
 * isl_ctx, so a model must be freed before the kernel's program). */
#ifndef FL_DOMAIN_POINTS_H
#define FL_DOMAIN_POINTS_H

#include <isl/point.h>
#include <isl/set.h>
#include <stdbool.h>
#include <stddef.h>

#include "fl_error.h"
#include "kernel.h"

#define FL_DOMAIN_MAXD 16	/* dimensions kept per instance or tile */

/* One statement; bounds are LONG_MIN / LONG_MAX where there is none. */
typedef struct fl_domain_stmt {
	char name[48];
	int op_pos, k;		/* position of its op in kernel->ops, k */
	int n_dims;
	long lo[FL_DOMAIN_MAXD], hi[FL_DOMAIN_MAXD];
} fl_domain_stmt;

typedef struct fl_domain fl_domain;

/* The model of kernel k (which must have a domain and a schedule); NULL
 * with the reason when it has no statement or memory runs out. */
fl_domain *fl_domain_new(const fl_kernel *k, fl_error *err);
void fl_domain_free(fl_domain *d);
int fl_domain_n_stmts(const fl_domain *d);
/* Statement i, NULL out of range; statements are contiguous, so
 * fl_domain_stmt_at(d, 0)[i] is statement i. */
const fl_domain_stmt *fl_domain_stmt_at(const fl_domain *d, int i);
/* The index of statement `name`, -1 when none. */
int fl_domain_find(const fl_domain *d, const char *name);
/* Statement i's instances, borrowed from the model. */
__isl_keep isl_set *fl_domain_stmt_set(const fl_domain *d, int i);
/* "S0_0 S1_0 S2_0" into buf: for messages naming the choices. */
void fl_domain_names(const fl_domain *d, char *buf, size_t n);
/* Is copy the name of a recomputed copy of statement base
 * ("<base>_r<n>")? */
bool fl_domain_is_copy_of(const char *copy, const char *base);

/* One point of a window. */
typedef struct fl_domain_point {
	bool in;		/* an instance of the statement */
	int n_tiles;		/* tiles computing it: 0 untiled, 2+ overlap */
	int tile_id;		/* its first tile in window->tiles, -1: none */
	int n_tile;		/* coordinates of that first tile */
	int tile[FL_DOMAIN_MAXD];
} fl_domain_point;

/* A tile with instances in the window, and their bounding box there. */
typedef struct fl_domain_tile {
	int n_tile;
	int coord[FL_DOMAIN_MAXD];
	long x_lo, x_hi, y_lo, y_hi;
} fl_domain_tile;

typedef struct fl_domain_window {
	int stmt;		/* index in the model */
	int dim_x, dim_y;	/* -1: none (the single value 0) */
	long fixed[FL_DOMAIN_MAXD];	/* per dimension; shown ones unused */
	long x0, y0;
	int w, h;
	fl_domain_point *pts;	/* h rows of w: pts[y * w + x] */
	int n_tiles;		/* window tiles, sorted by coordinates */
	fl_domain_tile *tiles;
	bool copied;		/* the statement runs as copies only */
	long n_in, n_overlap;	/* instances, of them computed twice+ */
} fl_domain_window;

/* Statement stmt of d cut to the window: dim_x and dim_y distinct
 * dimensions of it or -1, fixed[d] the value of every other dimension d
 * (NULL: all 0), w, h >= 1.  k is the kernel d was built from.  NULL with the reason
 * when an argument is out of range or memory runs out. */
fl_domain_window *fl_domain_window_new(const fl_domain *d,
				       const fl_kernel *k, int stmt,
				       int dim_x, int dim_y, const long *fixed,
				       long x0, long y0, int w, int h,
				       fl_error *err);
void fl_domain_window_free(fl_domain_window *win);
/* The point of instance coordinates inst (the statement's), NULL outside
 * the window. */
fl_domain_point *fl_domain_window_at(const fl_domain_window *win,
				     const long *inst);
/* set, whose dimensions off.. are the window statement's, cut to the
 * window (other dimensions fixed, shown ones bounded). */
__isl_give isl_set *fl_domain_window_cut(const fl_domain_window *win,
					 __isl_take isl_set *set, int off);
/* A colour class per tile: tiles one coordinate apart differ by an odd
 * amount, so with an even number of colours neighbours never share
 * one.  0 for an untiled point. */
int fl_domain_tile_colour(const fl_domain_point *p);
/* The n coordinates of pt into v; -1 when one is missing. */
int fl_domain_point_coords(__isl_keep isl_point *pt, int n, long *v);

#endif
