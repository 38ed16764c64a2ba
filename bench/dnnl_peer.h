/* oneDNN as the peer of fuselab's generated matmuls and convolutions in
 * make bench: dnnl_sgemm (row-major; a batch shared out among the
 * threads, one sgemm per matrix) and a forward-inference convolution
 * primitive on plain NCHW / OIHW (GOIHW with groups) f32 tensors, no
 * padding, the strides, dilation and groups
 * of the sample's op: the layouts fuselab's kernels read and write, so
 * both sides do the same work on the same buffers.  Debian's libdnnl is
 * built with the OpenMP runtime (DNNL_CPU_THREADING_RUNTIME), the one
 * generated code uses: omp_set_num_threads sets both sides' threads.
 * Never prints: errors come back as messages. */
#ifndef FL_BENCH_DNNL_PEER_H
#define FL_BENCH_DNNL_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* C[i] = op(A[i]) op(B[i]) for every batch i: row-major, op(A) M x K,
 * op(B) K x N, C M x N; the batch's operands start at a_off[i], b_off[i]
 * (broadcast batch dims repeat an offset), C's at i * M * N. */
typedef struct dp_gemm {
	bool ta, tb;
	int64_t m, n, k;
	int batch;
	const int64_t *a_off, *b_off;	/* borrowed */
	const float *a, *b;
	float *c;
} dp_gemm;

/* One call of the whole batch (a batch of several matrices is shared
 * out among the OpenMP threads, one single-threaded sgemm per matrix;
 * a single matrix gets every thread); ctx is a dp_gemm.  A failing call
 * (impossible for shapes that passed dp_gemm_check) sets c[0] to NaN so
 * that the output check catches it. */
void dp_gemm_call(void *ctx);

/* Checks that oneDNN accepts the shape (one small call). 0, or -1 with
 * the status in msg. */
int dp_gemm_check(const dp_gemm *g, char *msg, size_t n);

/* A convolution: x [n, c, h, w], w [k, c / groups, r, s], y [n, k, oh,
 * ow]; dilation as the graph format counts it (1: none). */
typedef struct dp_conv_shape {
	int64_t n, c, h, w, k, r, s, oh, ow;
	int64_t stride[2], dilation[2], groups;
} dp_conv_shape;

struct dp_conv_impl;

typedef struct dp_conv {
	struct dp_conv_impl *impl;
	char impl_name[64];	/* the implementation oneDNN chose */
} dp_conv;

/* Creates the primitive for the current OpenMP thread count (create it
 * again after changing it) on the caller's buffers.  0, or -1 with a
 * message. */
int dp_conv_open(dp_conv *cv, const dp_conv_shape *sh, const float *x,
		 const float *w, float *y, char *msg, size_t n);
/* Runs it once and waits; ctx is a dp_conv.  A failure sets y[0] to
 * NaN. */
void dp_conv_call(void *ctx);
void dp_conv_close(dp_conv *cv);

/* "oneDNN 2.6.3 (OpenMP)", into buf. */
const char *dp_version(char *buf, size_t n);

#endif
