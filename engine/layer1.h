/* Layer 1 (DESIGN 1.3): per micro-graph polyhedral model, dependences,
 * isl scheduling under an operation budget, tile-then-fuse with extension
 * nodes (MICRO 2020 Alg. 1-3), bounded recomputation, canonical reduction
 * forms and memory placement.  Produces the program (kernel.h). */
#ifndef FL_LAYER1_H
#define FL_LAYER1_H

#include "kernel.h"
#include "state.h"

/* The layer-1 pass: one kernel per alive micro-graph, in a topological
 * order of the micro-graphs.  Decisions: scheduled, tiled, extended (or
 * refused: parallelism, recomputation, overlap), placed, feedback.  When a
 * micro-graph cannot be scheduled within budget it calls fl_state_feedback
 * and returns FL_PASS_RESTART. */
int fl_pass_layer1(fl_state *st, fl_error *err);

#endif
