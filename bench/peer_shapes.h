/* The shapes make bench compares with oneDNN, read from the samples:
 * every distinct matmul of a model block once its compound ops (dense,
 * attention) are opened into primitives (fl_graph_expand_compounds), with
 * M, N, K, the batch and the transpose flags from the operands' shapes
 * and the op's attributes; every distinct conv2d with its strides,
 * dilation and groups; every distinct dense (for the fused-epilogue
 * cost) with the GELU form of its sample.  Each shape remembers which
 * ops of which samples use it.  Also builds the one-op (or dense +
 * epilogue) graph of a shape, in memory, for the engine.  Never prints. */
#ifndef FL_BENCH_PEER_SHAPES_H
#define FL_BENCH_PEER_SHAPES_H

#include <stdbool.h>
#include <stdint.h>

#include "dnnl_peer.h"
#include "graph.h"

#define PS_MAX 64
#define PS_USES 256

typedef struct ps_matmul {
	fl_shape a, b;		/* operands as stored */
	bool ta, tb;		/* transpose_a, transpose_b */
	int64_t batch, m, n, k;
	char uses[PS_USES];	/* "bert_encoder: q_proj k_proj ..." */
} ps_matmul;

typedef struct ps_conv {
	fl_shape x, w;
	dp_conv_shape sh;
	char uses[PS_USES];
} ps_conv;

typedef struct ps_dense {
	fl_shape x, w, bias;
	bool tb;
	char gelu[16];		/* the sample's GELU form: "none", "tanh" */
	char uses[PS_USES];
} ps_dense;

typedef struct ps_set {
	int n_mm, n_conv, n_dense;
	ps_matmul mm[PS_MAX];
	ps_conv conv[PS_MAX];
	ps_dense dense[PS_MAX];
} ps_set;

/* Adds the distinct matmul shapes of graph file `path` (its compound ops
 * opened) to set; 0 or -1 with a message. */
int ps_add_matmuls(ps_set *set, const char *path, fl_error *err);
/* The same for conv2d. */
int ps_add_convs(ps_set *set, const char *path, fl_error *err);
/* The same for the dense ops (before opening); the GELU form is that of
 * the file's first gelu op ("none" when it has none). */
int ps_add_denses(ps_set *set, const char *path, fl_error *err);

/* 2 * batch * M * N * K, and its conv counterpart. */
double ps_matmul_flops(const ps_matmul *m);
double ps_conv_flops(const ps_conv *c);

/* "12x128x128x64 tB" (batch x M x N x K, transposed operands) into buf. */
const char *ps_matmul_text(const ps_matmul *m, char *buf, int n);
/* "1x512x28x28*128x512x1x1 s1 d1 g1" (x * w, stride, dilation,
 * groups; "s2x1" when the two strides differ) into buf. */
const char *ps_conv_text(const ps_conv *c, char *buf, int n);

/* The offsets of each batch's A and B (malloc'd, m->batch each), for
 * dp_gemm. */
int ps_batch_offsets(const ps_matmul *m, int64_t **a_off, int64_t **b_off);

/* One-op graphs: a (input) b (param) -> y (output); x (input) w (param)
 * -> y (output).  Validated; NULL with a message. */
fl_graph *ps_matmul_graph(const ps_matmul *m, fl_error *err);
fl_graph *ps_conv_graph(const ps_conv *c, fl_error *err);

typedef enum ps_epilogue {
	PS_BIAS_GELU,		/* y = gelu(dense(x, w, bias)) */
	PS_BIAS_RESIDUAL,	/* y = dense(x, w, bias) + r */
} ps_epilogue;

const char *ps_epilogue_name(ps_epilogue e);

/* The dense with its epilogue: x (input), w, bias (params), r (input,
 * residual only) -> y (output).  NULL with a message. */
fl_graph *ps_dense_graph(const ps_dense *d, ps_epilogue e, fl_error *err);

#endif
