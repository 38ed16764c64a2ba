/* Synthetic graphs for the benchmarks: seeded random graphs of n
 * primitive ops that look like DNN graphs -- mostly local data flow (an
 * op reads the previous result or one of the last few), a mix of
 * elementwise, broadcast, reduction (softmax-like row sums) and opaque
 * ops (matmul, transpose) over 64x64 tensors. */
#ifndef FL_BENCH_SYNTH_H
#define FL_BENCH_SYNTH_H

#include <stdint.h>

#include "graph.h"

/* A valid graph of n_ops primitives (seeded), or NULL (message printed). */
fl_graph *fl_synth_graph(int n_ops, uint64_t seed);

#endif
