/* Why two ops are (not) in one micro-graph (engine_explain). */
#ifndef FL_EXPLAIN_IMPL_H
#define FL_EXPLAIN_IMPL_H

#include "state_impl.h"

/* Reads a completed state.  1: together, 0: apart, -1: unknown op. */
int fl_explain(const fl_state *st, const char *a, const char *b, char *buf,
	       size_t n, fl_error *err);

#endif
