/* The reference interpreter: the oracle all generated code is checked
 * against.  It runs a validated graph op by op, in the graph's topological
 * order, with the op library's reference implementations, on inputs made
 * by a seeded generator that gives the same bits on every machine. */
#ifndef FL_INTERP_H
#define FL_INTERP_H

#include <stdint.h>

#include "graph.h"

#define FL_INTERP_DEFAULT_SEED 42u
#define FL_INTERP_DEFAULT_MAX_BYTES ((int64_t)8 << 30)

/* Given values for an input or param tensor, by name (--inputs: the
 * test data of ONNX's backend tests).  buf.shape must be the tensor's. */
typedef struct fl_feed {
	const char *name;
	fl_buf buf;
} fl_feed;

typedef struct fl_interp_opts {
	uint64_t seed;
	int64_t max_bytes;	/* refuse graphs whose tensors need more */
	/* Inputs and params named here get these values instead of the
	 * generator's; a name the graph lacks is ignored (a pass may have
	 * removed an unused input), a shape that differs is an error. */
	const fl_feed *feeds;
	int n_feeds;
} fl_interp_opts;

void fl_interp_opts_default(fl_interp_opts *o);

/* Values of every tensor of a graph after a run; values[t] has shape
 * g->tensors[t].shape (NULL for tensors that were never computed). */
typedef struct fl_values {
	int n;
	fl_buf *bufs;
	double *op_seconds;	/* wall time of each op, for --interpret */
	int n_ops;
} fl_values;

void fl_values_free(fl_values *v);

/* Fills buf (shape set, data allocated) with the deterministic input for
 * tensor `t` of g: uniform in [-1, 1) from (seed, tensor name), integers in
 * [0, extent) for tensors used as gather indices, and the file's values
 * for consts. */
void fl_interp_fill_input(const fl_graph *g, int t, uint64_t seed,
			  fl_buf *buf);

/* Runs g.  Returns NULL with a message on failure (too much memory, a
 * feed whose shape is not its tensor's). */
fl_values *fl_interp_run(const fl_graph *g, const fl_interp_opts *o,
			 fl_error *err);

/* Order-independent summary of a buffer for printing and comparing runs:
 * the sum and the sum of absolute values in double, and an FNV-1a hash of
 * the bits. */
typedef struct fl_checksum {
	double sum, abs_sum;
	uint64_t hash;
	int64_t n_nan;
} fl_checksum;

fl_checksum fl_buf_checksum(const fl_buf *b);

/* Bytes needed to hold every tensor of g at once; -1 on overflow. */
int64_t fl_interp_bytes_needed(const fl_graph *g);

#endif
