/* oneDNN peers (dnnl_peer.h), through its C API (oneDNN 2.x). */
#include "dnnl_peer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

/* Row-major leading dimensions of op(A) M x K, op(B) K x N as stored. */
static int64_t lda_of(const dp_gemm *g)
{
	return g->ta ? g->m : g->k;
}

static int64_t ldb_of(const dp_gemm *g)
{
	return g->tb ? g->k : g->n;
}

static dnnl_status_t gemm_one(const dp_gemm *g, int i)
{
	return dnnl_sgemm(g->ta ? 'T' : 'N', g->tb ? 'T' : 'N', g->m, g->n,
			  g->k, 1.0f, g->a + g->a_off[i], lda_of(g),
			  g->b + g->b_off[i], ldb_of(g), 0.0f,
			  g->c + (int64_t)i * g->m * g->n, g->n);
}

/* A batch is shared out among the threads, one whole sgemm each at a
 * time (inside a parallel region oneDNN's sgemm runs on its calling
 * thread): one parallel region per call, as in the generated code and
 * in frameworks' batched matmul, rather than one per matrix, each of
 * which waits for every thread to be scheduled. */
void dp_gemm_call(void *ctx)
{
	dp_gemm *g = ctx;
	int bad = 0;

	if (g->batch == 1) {
		bad = gemm_one(g, 0) != dnnl_success;
	} else {
#pragma omp parallel for schedule(static) reduction(| : bad)
		for (int i = 0; i < g->batch; i++)
			bad |= gemm_one(g, i) != dnnl_success;
	}
	if (bad)
		g->c[0] = NAN;
}

int dp_gemm_check(const dp_gemm *g, char *msg, size_t n)
{
	dnnl_status_t st = gemm_one(g, 0);

	if (st == dnnl_success)
		return 0;
	snprintf(msg, n, "dnnl_sgemm: %s", dnnl_status2str(st));
	return -1;
}

struct dp_conv_impl {
	dnnl_engine_t engine;
	dnnl_stream_t stream;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t prim;
	dnnl_memory_t src, wei, dst;
	float *y;
};

#define TRY(call, what)                                                    \
	do {                                                               \
		dnnl_status_t st_ = (call);                                \
		if (st_ != dnnl_success) {                                 \
			snprintf(msg, n, "%s: %s", what,                   \
				 dnnl_status2str(st_));                    \
			goto fail;                                         \
		}                                                          \
	} while (0)

/* The memory descriptors: plain NCHW data, OIHW (or GOIHW) weights. */
static int conv_descs(const dp_conv_shape *sh, dnnl_memory_desc_t *src,
		      dnnl_memory_desc_t *wei, dnnl_memory_desc_t *dst,
		      char *msg, size_t n)
{
	dnnl_dims_t xd = {sh->n, sh->c, sh->h, sh->w};
	dnnl_dims_t yd = {sh->n, sh->k, sh->oh, sh->ow};
	dnnl_dims_t wd = {sh->k, sh->c / sh->groups, sh->r, sh->s};
	dnnl_dims_t gwd = {sh->groups, sh->k / sh->groups, sh->c / sh->groups,
			   sh->r, sh->s};

	TRY(dnnl_memory_desc_init_by_tag(src, 4, xd, dnnl_f32, dnnl_nchw),
	    "src descriptor");
	TRY(dnnl_memory_desc_init_by_tag(dst, 4, yd, dnnl_f32, dnnl_nchw),
	    "dst descriptor");
	if (sh->groups > 1)
		TRY(dnnl_memory_desc_init_by_tag(wei, 5, gwd, dnnl_f32,
						 dnnl_goihw),
		    "weights descriptor");
	else
		TRY(dnnl_memory_desc_init_by_tag(wei, 4, wd, dnnl_f32,
						 dnnl_oihw),
		    "weights descriptor");
	return 0;
fail:
	return -1;
}

/* The primitive (direct algorithm, no bias, no padding). */
static int conv_primitive(struct dp_conv_impl *c, const dp_conv_shape *sh,
			  const dnnl_memory_desc_t *src,
			  const dnnl_memory_desc_t *wei,
			  const dnnl_memory_desc_t *dst, char *msg, size_t n)
{
	dnnl_convolution_desc_t cd;
	/* oneDNN counts dilation from 0 (no dilation), the graph from 1 */
	dnnl_dims_t strides = {sh->stride[0], sh->stride[1]};
	dnnl_dims_t dil = {sh->dilation[0] - 1, sh->dilation[1] - 1};
	dnnl_dims_t pad = {0, 0};

	TRY(dnnl_dilated_convolution_forward_desc_init(&cd,
		dnnl_forward_inference, dnnl_convolution_direct, src, wei,
		NULL, dst, strides, dil, pad, pad), "convolution descriptor");
	TRY(dnnl_primitive_desc_create(&c->pd, &cd, NULL, c->engine, NULL),
	    "convolution primitive descriptor");
	TRY(dnnl_primitive_create(&c->prim, c->pd), "convolution primitive");
	return 0;
fail:
	return -1;
}

int dp_conv_open(dp_conv *cv, const dp_conv_shape *sh, const float *x,
		 const float *w, float *y, char *msg, size_t n)
{
	struct dp_conv_impl *c = calloc(1, sizeof *c);
	dnnl_memory_desc_t src, wei, dst;
	const char *impl = NULL;

	memset(cv, 0, sizeof *cv);
	if (!c) {
		snprintf(msg, n, "out of memory");
		return -1;
	}
	cv->impl = c;
	c->y = y;
	TRY(dnnl_engine_create(&c->engine, dnnl_cpu, 0), "engine");
	TRY(dnnl_stream_create(&c->stream, c->engine,
			       dnnl_stream_default_flags), "stream");
	if (conv_descs(sh, &src, &wei, &dst, msg, n) < 0 ||
	    conv_primitive(c, sh, &src, &wei, &dst, msg, n) < 0)
		goto fail;
	TRY(dnnl_memory_create(&c->src, &src, c->engine, (void *)x), "src");
	TRY(dnnl_memory_create(&c->wei, &wei, c->engine, (void *)w),
	    "weights");
	TRY(dnnl_memory_create(&c->dst, &dst, c->engine, y), "dst");
	if (dnnl_primitive_desc_query(c->pd, dnnl_query_impl_info_str, 0,
				      &impl) == dnnl_success && impl)
		snprintf(cv->impl_name, sizeof cv->impl_name, "%s", impl);
	return 0;
fail:
	dp_conv_close(cv);
	return -1;
}

void dp_conv_call(void *ctx)
{
	struct dp_conv_impl *c = ((dp_conv *)ctx)->impl;
	dnnl_exec_arg_t args[3] = {
		{DNNL_ARG_SRC, c->src},
		{DNNL_ARG_WEIGHTS, c->wei},
		{DNNL_ARG_DST, c->dst},
	};

	if (dnnl_primitive_execute(c->prim, c->stream, 3, args) !=
	    dnnl_success || dnnl_stream_wait(c->stream) != dnnl_success)
		c->y[0] = NAN;
}

void dp_conv_close(dp_conv *cv)
{
	struct dp_conv_impl *c = cv->impl;

	if (!c)
		return;
	if (c->src)
		dnnl_memory_destroy(c->src);
	if (c->wei)
		dnnl_memory_destroy(c->wei);
	if (c->dst)
		dnnl_memory_destroy(c->dst);
	if (c->prim)
		dnnl_primitive_destroy(c->prim);
	if (c->pd)
		dnnl_primitive_desc_destroy(c->pd);
	if (c->stream)
		dnnl_stream_destroy(c->stream);
	if (c->engine)
		dnnl_engine_destroy(c->engine);
	free(c);
	cv->impl = NULL;
}

const char *dp_version(char *buf, size_t n)
{
	const dnnl_version_t *v = dnnl_version();
	const char *rt = v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP"
			 : v->cpu_runtime == DNNL_RUNTIME_TBB ? "TBB"
			 : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential"
			 : "other";

	snprintf(buf, n, "oneDNN %d.%d.%d (%s threading)", v->major,
		 v->minor, v->patch, rt);
	return buf;
}
