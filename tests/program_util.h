/* Programs built by hand for the code generator's tests, independent of
 * layer 1: one kernel per op with identity schedules, and a two-op kernel
 * tiled and fused the way MICRO 2020 does it (ISL_GUIDE 6, p6b), with a
 * recomputed producer and its tile-local buffer. */
#ifndef FL_TEST_PROGRAM_UTIL_H
#define FL_TEST_PROGRAM_UTIL_H

#include <isl/ctx.h>
#include <stdbool.h>
#include <stdint.h>

#include "graph.h"
#include "kernel.h"

/* One kernel per op of g (validated, primitive ops only), in op order:
 * the op's statements in a sequence, each with an identity band whose
 * members are coincident when no two instances write the same element
 * with different values of that iterator; every tensor global. */
fl_program *t_unfused_program(isl_ctx *ctx, const fl_graph *g);

/* g has exactly two ops, a single-statement producer P and a consumer C
 * whose statements all start with its output's iterators.  One kernel:
 * C's output band tiled with `tile` on its last two dims (1 on the
 * others), P recomputed per tile through an extension node as
 * "S<P>_0_r0" with the tile coordinates in front of its instance, marks
 * "parallel" on the tile and point bands.  P's output is placed `place`:
 * tile-local with the footprint box, register without a box (code
 * generation works one out), or global. */
fl_program *t_fused_program(isl_ctx *ctx, const fl_graph *g, int64_t tile,
			    fl_placement place);

#endif
