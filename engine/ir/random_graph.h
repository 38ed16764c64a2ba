/* Random valid graphs for differential testing of the whole compiler.
 *
 * Contract: fl_random_graph draws a graph from a seed alone (rng.h, the
 * same graph on every machine and every run) and returns it validated
 * (fl_graph_validate), or NULL with a message.  The graph mixes what the
 * compiler has to get right together: elementwise and broadcasting
 * chains, reductions over random axes, matmul (plain and batched), conv2d
 * (with explicit padding, strides, dilation, depthwise groups), pooling,
 * the data-movement ops (transpose, reshape, concat, slice, pad,
 * broadcast_to, gather), compound ops (softmax, layernorm, gelu, dense,
 * attention, ...), tensors read by several later ops, several outputs and
 * small odd extents (1 and primes).  Inputs have role input, weights role
 * param; every tensor no op reads is an output, so nothing is dead.
 *
 * Values are kept tame so that any correct evaluation order agrees with
 * the interpreter within the runner's tolerance: log, sqrt, rsqrt, recip,
 * div and pow only see operands made positive (|x| + 1), and a value
 * whose estimated magnitude grows past a bound is squashed with tanh
 * before it is used again.  Every tensor holds at most
 * FL_RANDOM_GRAPH_MAX_NUMEL elements, so compiling and running a graph
 * of a few dozen ops under every strategy takes seconds. */
#ifndef FL_RANDOM_GRAPH_H
#define FL_RANDOM_GRAPH_H

#include <stdint.h>

#include "fl_error.h"
#include "graph.h"

#define FL_RANDOM_GRAPH_MAX_OPS 1000
#define FL_RANDOM_GRAPH_MAX_NUMEL 4096

typedef struct fl_random_graph_opts {
	int n_ops;	/* ops to draw, 1..FL_RANDOM_GRAPH_MAX_OPS; the graph
			   has at least n_ops ops and a few more at most (a
			   drawn op may bring helpers: |x| + 1 before a
			   log, a tanh that squashes a large operand) */
	uint64_t seed;
} fl_random_graph_opts;

/* The graph of o->seed, named "random-<seed>"; NULL with a message when
 * o->n_ops is out of range or memory runs out.  The caller frees it. */
fl_graph *fl_random_graph(const fl_random_graph_opts *o, fl_error *err);

#endif
