/* make bench: fuselab's generated kernels beside oneDNN, in one process
 * and one run (issue 11, "Peers in make bench" and "Targets").
 *
 *   1. the machine (model, ISA, cores, caches), its load, oneDNN's
 *      version and threading, and the STREAM-like copy and triad probe;
 *   2. every distinct matmul of bert_encoder, gpt2_mlp and
 *      transformer_decoder (compound ops opened): the one-op graph of
 *      that shape through the engine under apollo-l1 up to codegen,
 *      compiled by the runner, loaded here and timed interleaved with
 *      dnnl_sgemm on the same buffers, on 1 thread and on all cores, the
 *      outputs compared; then the same for every conv2d of
 *      resnet50_bottleneck and yolov3_residual against a oneDNN
 *      convolution; then how many shapes meet the targets (matmul >= 50%
 *      of oneDNN, conv >= 30%), reported, never failed;
 *   3. the cost of a fused epilogue: for every dense of bert_encoder and
 *      gpt2_mlp, dense + GELU and dense + residual add under apollo-l1
 *      (their kernel count: one when layer 1 fuses them) timed
 *      interleaved with the bare matmul of the same shape, each output
 *      checked against the interpreter (target: under 10%);
 *   4. the four memory-bound microbenchmarks (softmax, layernorm,
 *      bias_gelu, chain8) under apollo, timed interleaved with the copy
 *      on 1 thread and on all cores: their GB/s as a share of the copy's
 *      in the same rounds (target: at least 60%) and how both scale with
 *      the threads; beside it the copy with non-temporal stores, the
 *      yardstick for kernels that stream their output;
 *   5. ONNX Runtime (onnxruntime-node, installed with npm by
 *      scripts/install-deps.sh --bench; bench/ort_peer.mjs in a Node.js
 *      child, ort_peer.c): layer 2's softmax and layernorm kernels
 *      against its Softmax and LayerNormalization, and the BERT encoder
 *      layer under apollo-l1 against the whole model, the parameters as
 *      initializers holding the program's values, timed interleaved on
 *      1 thread and on all cores, the outputs compared.
 * Whatever code generation makes today is what is measured: nothing here
 * knows how the kernels are written.
 *
 * Usage: bench_peers [SAMPLES_DIR]   (default: samples)
 * FL_BENCH_PEERS_BUDGET: seconds of timed rounds per comparison (default
 * 1.5; at least 3 rounds, at most 50, are made whatever the budget).
 * FL_BENCH_PEERS_ONLY: "peers", "epilogues", "memory" or "ort" runs that section alone
 * (with the machine section), to re-measure one while working on it. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "dnnl_peer.h"
#include "genprog.h"
#include "interleave.h"
#include "interp.h"
#include "loader.h"
#include "onnx.h"
#include "ort_peer.h"
#include "machine.h"
#include "peer_shapes.h"
#include "stream.h"

#define MIN_REPS 3
#define MAX_REPS 50
#define MISMATCH 1e-3	/* relative error above which a row says so */

static const char *const mm_samples[] = {"bert_encoder", "gpt2_mlp",
					 "transformer_decoder"};
static const char *const conv_samples[] = {"resnet50_bottleneck",
					   "yolov3_residual"};
static const char *const dense_samples[] = {"bert_encoder", "gpt2_mlp"};
static const char *const memory_samples[] = {"softmax", "layernorm",
					     "bias_gelu", "chain8"};

static il_plan plan;
static int n_threads, threads[2];

/* What the target lines count, per thread count. */
typedef struct tally {
	int rows, met, met_spread;
} tally;

/* A relative error as rows print it: "!" after one above MISMATCH. */
static void err_text(double err, char *buf, size_t n)
{
	if (isfinite(err))
		snprintf(buf, n, "%.1e%s", err, err > MISMATCH ? "!" : "");
	else
		snprintf(buf, n, "NaN/inf!");
}

/* The load average beside each section: five people share this
 * machine, and a busy core delays every OpenMP region that needs it. */
static void print_load(const char *when)
{
	printf("load average (1 min) %s: %.2f on %d cores\n", when,
	       fl_machine_load(), fl_machine_get()->cores);
}

static double gflops(double flops, double s)
{
	return s > 0 ? flops / s / 1e9 : 0;
}

/* ---- 1. the machine ---------------------------------------------------- */

static int print_machine(void)
{
	const fl_machine *m = fl_machine_get();
	char buf[512];

	printf("== machine\n");
	print_load("at the start");
	printf("machine: %s\n", fl_machine_text(m, buf, sizeof buf));
	printf("peer: %s\n", dp_version(buf, sizeof buf));
	printf("threads measured: 1 and %d (omp_set_num_threads: generated "
	       "code and oneDNN share one OpenMP runtime)\n",
	       threads[n_threads - 1]);
	printf("timing: interleaved rounds (A B, B A, ...) after one warm-up "
	       "call each; %d to %d rounds, %.1f s budget per comparison\n\n",
	       plan.min_reps, plan.max_reps, plan.budget_s);
	printf("== STREAM-like probe (GB/s: bytes read + written per second, "
	       "median of 10 (min-max))\n");
	printf("%-8s %-24s %-24s\n", "threads", "copy b[i] = a[i]",
	       "triad a[i] = b[i] + s*c[i]");
	for (int i = 0; i < n_threads; i++) {
		stream_result r;

		if (stream_probe(threads[i], 10, &r) < 0) {
			fprintf(stderr, "bench_peers: the STREAM probe ran out "
				"of memory\n");
			return -1;
		}
		printf("%-8d %6.1f (%5.1f-%5.1f)      %6.1f (%5.1f-%5.1f)\n",
		       r.threads, r.copy.median, r.copy.min, r.copy.max,
		       r.triad.median, r.triad.min, r.triad.max);
	}
	printf("\n");
	return 0;
}

/* ---- 2. peers --------------------------------------------------------- */

static void print_peer_header(const char *what)
{
	printf("%-4s %-34s %3s %3s  %-22s %-22s %-22s %8s %4s\n", "id", what,
	       "thr", "krn", "fuselab GFLOP/s", "oneDNN GFLOP/s",
	       "fuselab/oneDNN", "rel.err", "reps");
	printf("%-4s %-34s %3s %3s  %-22s %-22s %-22s\n", "", "", "", "",
	       "median (min-max)", "median (min-max)", "median (range)");
}

/* One row: the two contenders' statistics as GFLOP/s, their ratio with
 * its range (worst and best pairing of the two spreads). */
static void print_peer_row(const char *id, const char *shape, int thr,
			   int krn, double flops, const il_stat *f,
			   const il_stat *d, double err, int reps, tally *t,
			   double target)
{
	double fm = gflops(flops, f->median), dm = gflops(flops, d->median);
	double lo = gflops(flops, f->max) / gflops(flops, d->min);
	double hi = gflops(flops, f->min) / gflops(flops, d->max);
	char e[32], fs[32], ds[32], rs[32];

	err_text(err, e, sizeof e);
	snprintf(fs, sizeof fs, "%.2f (%.2f-%.2f)", fm,
		 gflops(flops, f->max), gflops(flops, f->min));
	snprintf(ds, sizeof ds, "%.2f (%.2f-%.2f)", dm,
		 gflops(flops, d->max), gflops(flops, d->min));
	snprintf(rs, sizeof rs, "%.3f (%.3f-%.3f)", fm / dm, lo, hi);
	printf("%-4s %-34s %3d %3d  %-22s %-22s %-22s %8s %4d\n", id, shape,
	       thr, krn, fs, ds, rs, e, reps);
	t->rows++;
	t->met += fm / dm >= target;
	t->met_spread += lo >= target;
	fflush(stdout);
}

/* Compares fuselab's program (gp) with the peer call on every thread
 * count; fl_out / dn_out: the two outputs of n values. */
static void compare(const char *id, const char *shape, double flops,
		    gp_prog *gp, il_contender peer, int (*reopen)(void *),
		    void *peer_ctx, const float *fl_out, const float *dn_out,
		    int64_t n, tally *t, double target)
{
	for (int i = 0; i < n_threads; i++) {
		il_contender c[2] = {{.call = gp_call, .ctx = gp}, peer};
		il_stat s[2];
		int reps;

		omp_set_num_threads(threads[i]);
		if (reopen && reopen(peer_ctx) < 0)
			continue;
		reps = il_measure(c, 2, &plan, s);
		if (reps < 0) {
			fprintf(stderr, "bench_peers: out of memory\n");
			return;
		}
		print_peer_row(id, shape, threads[i], gp->n_kernels, flops,
			       &s[0], &s[1], gp_rel_error(fl_out, dn_out, n),
			       reps, &t[i], target);
	}
}

/* Compiles the one-op graph g under apollo-l1 (g is freed). */
static int open_program(gp_prog *gp, fl_graph *g, const char *what)
{
	fl_error err = {""};
	int rc;

	if (!g)
		return -1;
	rc = gp_open(gp, g, FL_STRATEGY_APOLLO_L1, &err);
	fl_graph_free(g);
	if (rc < 0)
		fprintf(stderr, "bench_peers: %s: %s\n", what, err.msg);
	return rc;
}

static void bench_matmul(const ps_matmul *m, int idx, tally *t)
{
	fl_error err = {""};
	gp_prog gp;
	dp_gemm dg;
	int64_t *a_off = NULL, *b_off = NULL, n;
	float *c = NULL, *y;
	char id[16], shape[64], msg[256];

	snprintf(id, sizeof id, "m%d", idx + 1);
	ps_matmul_text(m, shape, sizeof shape);
	if (open_program(&gp, ps_matmul_graph(m, &err), shape) < 0) {
		if (err.msg[0])
			fprintf(stderr, "bench_peers: %s: %s\n", shape, err.msg);
		return;
	}
	y = gp_tensor(&gp, "y", &n);
	c = aligned_alloc(64, ((size_t)n * sizeof *c + 63) / 64 * 64);
	if (!y || !c || ps_batch_offsets(m, &a_off, &b_off) < 0) {
		fprintf(stderr, "bench_peers: %s: out of memory\n", shape);
		goto out;
	}
	dg = (dp_gemm){m->ta, m->tb, m->m, m->n, m->k, (int)m->batch, a_off,
		       b_off, gp_tensor(&gp, "a", NULL),
		       gp_tensor(&gp, "b", NULL), c};
	if (dp_gemm_check(&dg, msg, sizeof msg) < 0) {
		fprintf(stderr, "bench_peers: %s: %s\n", shape, msg);
		goto out;
	}
	compare(id, shape, ps_matmul_flops(m), &gp,
		(il_contender){.call = dp_gemm_call, .ctx = &dg}, NULL, NULL, y,
		c, n, t, 0.5);
out:
	free(a_off);
	free(b_off);
	free(c);
	gp_close(&gp);
}

/* The oneDNN convolution, made again for the thread count now set. */
typedef struct conv_peer {
	dp_conv cv;
	const dp_conv_shape *sh;
	const float *x, *w;
	float *y;
} conv_peer;

static int conv_reopen(void *ctx)
{
	conv_peer *p = ctx;
	char msg[256];

	dp_conv_close(&p->cv);
	if (dp_conv_open(&p->cv, p->sh, p->x, p->w, p->y, msg, sizeof msg) <
	    0) {
		fprintf(stderr, "bench_peers: oneDNN convolution: %s\n", msg);
		return -1;
	}
	return 0;
}

static void bench_conv(const ps_conv *cv, int idx, tally *t)
{
	fl_error err = {""};
	gp_prog gp;
	conv_peer p = {{0}, &cv->sh, NULL, NULL, NULL};
	int64_t n;
	float *y;
	char id[16], shape[96];

	snprintf(id, sizeof id, "c%d", idx + 1);
	ps_conv_text(cv, shape, sizeof shape);
	if (open_program(&gp, ps_conv_graph(cv, &err), shape) < 0) {
		if (err.msg[0])
			fprintf(stderr, "bench_peers: %s: %s\n", shape, err.msg);
		return;
	}
	y = gp_tensor(&gp, "y", &n);
	p.x = gp_tensor(&gp, "x", NULL);
	p.w = gp_tensor(&gp, "w", NULL);
	p.y = aligned_alloc(64, ((size_t)n * sizeof *p.y + 63) / 64 * 64);
	if (!y || !p.y) {
		fprintf(stderr, "bench_peers: %s: out of memory\n", shape);
	} else {
		compare(id, shape, ps_conv_flops(cv), &gp,
			(il_contender){.call = dp_conv_call, .ctx = &p.cv},
			conv_reopen, &p, y, p.y, n, t, 0.3);
		if (p.cv.impl_name[0])
			printf("%-4s oneDNN implementation: %s\n", "",
			       p.cv.impl_name);
	}
	dp_conv_close(&p.cv);
	free(p.y);
	gp_close(&gp);
}

/* A note when the machine was busier than it has cores: then a thread
 * of an all-core row often waits for a core, and such rows time the
 * scheduler as much as the code. */
static void print_busy_note(void)
{
	double load = fl_machine_load();
	int cores = fl_machine_get()->cores;

	if (load > cores)
		printf("note: load average %.2f above the %d cores: rows on all "
		       "cores are unreliable in this run\n", load, cores);
}

static void print_targets(const char *what, const tally *t, double target)
{
	for (int i = 0; i < n_threads; i++)
		printf("target: %s >= %.0f%% of oneDNN, %d thread%s: %d of %d "
		       "shapes by the median ratio (%d also at the worst "
		       "pairing of the spread)\n", what, target * 100,
		       threads[i], threads[i] == 1 ? "" : "s", t[i].met,
		       t[i].rows, t[i].met_spread);
}

/* Reads every sample of list (n) with add; 0 or -1 after a message. */
static int collect(ps_set *set, const char *dir, const char *const *list,
		   int n, int (*add)(ps_set *, const char *, fl_error *))
{
	for (int i = 0; i < n; i++) {
		fl_error err = {""};
		char path[1024];

		snprintf(path, sizeof path, "%s/%s.json", dir, list[i]);
		if (add(set, path, &err) < 0) {
			fprintf(stderr, "bench_peers: %s\n", err.msg);
			return -1;
		}
	}
	return 0;
}

static void print_uses(const char *prefix, int n, const char *(*uses)(
			       const ps_set *, int), const ps_set *set)
{
	for (int i = 0; i < n; i++)
		printf("  %s%d: %s\n", prefix, i + 1, uses(set, i));
}

static const char *mm_uses(const ps_set *s, int i)
{
	return s->mm[i].uses;
}

static const char *conv_uses(const ps_set *s, int i)
{
	return s->conv[i].uses;
}

static const char *dense_uses(const ps_set *s, int i)
{
	return s->dense[i].uses;
}

static void bench_peers(const ps_set *set)
{
	tally tm[2] = {{0}}, tc[2] = {{0}};

	printf("== matmul: fuselab (apollo-l1, one-op graph) vs oneDNN "
	       "dnnl_sgemm\n");
	printf("shape: batch x M x N x K (tA, tB: operand transposed); "
	       "flops 2*batch*M*N*K\n");
	print_uses("m", set->n_mm, mm_uses, set);
	print_load("before the matmuls");
	print_peer_header("batch x M x N x K");
	for (int i = 0; i < set->n_mm; i++)
		bench_matmul(&set->mm[i], i, tm);
	printf("\n== conv2d: fuselab (apollo-l1, one-op graph) vs oneDNN "
	       "convolution (NCHW, OIHW, direct)\n");
	printf("shape: x [N,C,H,W] * w [K,C/g,R,S], stride, dilation, groups;"
	       " no padding\n");
	print_uses("c", set->n_conv, conv_uses, set);
	print_load("before the convolutions");
	print_peer_header("x * w");
	for (int i = 0; i < set->n_conv; i++)
		bench_conv(&set->conv[i], i, tc);
	printf("\n");
	print_targets("matmul", tm, 0.5);
	print_targets("conv", tc, 0.3);
	print_load("after them");
	print_busy_note();
	printf("\n");
}

/* ---- 3. fused epilogues ----------------------------------------------- */

/* The largest error of gp's outputs against the interpreter on its graph
 * (the same inputs: both use seed 42); +inf when the interpreter cannot
 * run. */
static double check_outputs(gp_prog *gp)
{
	const fl_graph *g = gp->program->graph;
	fl_interp_opts io;
	fl_error err = {""};
	fl_values *v;
	double worst = 0;

	fl_interp_opts_default(&io);
	v = fl_interp_run(g, &io, &err);
	if (!v) {
		fprintf(stderr, "bench_peers: interpreter: %s\n", err.msg);
		return INFINITY;
	}
	gp_call(gp);
	for (int t = 0; t < g->n_tensors; t++) {
		double e;

		if (g->tensors[t].role != FL_ROLE_OUTPUT)
			continue;
		e = v->bufs[t].data ? gp_rel_error(gp->bufs[t], v->bufs[t].data,
						   gp->numel[t]) : INFINITY;
		if (!(e <= worst))
			worst = e;
	}
	fl_values_free(v);
	return worst;
}

static void print_epilogue_header(void)
{
	printf("%-4s %-14s %-14s %3s %3s  %-24s %-24s %9s %9s %-8s %-13s "
	       "%8s %4s\n", "id", "M x N x K", "epilogue", "thr", "krn",
	       "bare matmul ms", "fused ms", "overhead", "by medns",
	       "quicker", "verdict", "rel.err", "reps");
	printf("%-4s %-14s %-14s %3s %3s  %-24s %-24s %9s\n", "", "", "", "",
	       "", "median (min-max)", "median (min-max)", "paired");
}

static void print_epilogue_row(const char *id, const char *shape,
			       ps_epilogue e, int thr, int krn,
			       const il_stat *bare, const il_stat *f,
			       double err, int reps, tally *t)
{
	double over = (f->ratio - 1) * 100;
	double by_medians = (f->median / bare->median - 1) * 100;
	char bs[40], fs[40], es[32], qs[16];
	const char *verdict = !il_paired_distinct(f) ? "within noise"
			      : f->slower > f->quicker ? "slower" : "faster";

	snprintf(bs, sizeof bs, "%.4g (%.4g-%.4g)", bare->median * 1e3,
		 bare->min * 1e3, bare->max * 1e3);
	snprintf(fs, sizeof fs, "%.4g (%.4g-%.4g)", f->median * 1e3,
		 f->min * 1e3, f->max * 1e3);
	err_text(err, es, sizeof es);
	snprintf(qs, sizeof qs, "%d/%d", f->quicker, f->n);
	printf("%-4s %-14s %-14s %3d %3d  %-24s %-24s %8.1f%% %8.1f%% %-8s "
	       "%-13s %8s %4d\n", id, shape, ps_epilogue_name(e), thr, krn,
	       bs, fs, over, by_medians, qs, verdict, es, reps);
	t->rows++;
	t->met += over < 10;
	t->met_spread += by_medians < 10;
	fflush(stdout);
}

static void bench_dense(const ps_dense *d, int idx, tally *t)
{
	ps_matmul m = {.a = d->x, .b = d->w, .tb = d->tb, .batch = 1};
	gp_prog gp[3];
	fl_error err = {""};
	double rel[3] = {0, 0, 0};
	char id[16], shape[64];
	int ok = 0;

	m.m = d->x.dim[d->x.rank - 2];
	m.k = d->x.dim[d->x.rank - 1];
	m.n = d->w.dim[d->tb ? d->w.rank - 2 : d->w.rank - 1];
	for (int i = d->x.rank - 3; i >= 0; i--)
		m.batch *= d->x.dim[i];
	snprintf(id, sizeof id, "e%d", idx + 1);
	snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)m.m,
		 (long long)m.n, (long long)m.k);
	memset(gp, 0, sizeof gp);
	if (open_program(&gp[0], ps_matmul_graph(&m, &err), shape) < 0 ||
	    open_program(&gp[1], ps_dense_graph(d, PS_BIAS_GELU, &err),
			 shape) < 0 ||
	    open_program(&gp[2], ps_dense_graph(d, PS_BIAS_RESIDUAL, &err),
			 shape) < 0) {
		if (err.msg[0])
			fprintf(stderr, "bench_peers: %s: %s\n", shape, err.msg);
		goto out;
	}
	for (int k = 0; k < 3; k++)
		rel[k] = check_outputs(&gp[k]);
	/* checked on their own inputs, timed on one copy of x and w */
	for (int k = 1; k < 3; k++)
		if (gp_share(&gp[k], "x", &gp[0], "a", &err) < 0 ||
		    gp_share(&gp[k], "w", &gp[0], "b", &err) < 0) {
			fprintf(stderr, "bench_peers: %s: %s\n", shape,
				err.msg);
			goto out;
		}
	ok = 1;
	for (int i = 0; i < n_threads; i++) {
		il_contender c[3] = {{.call = gp_call, .ctx = &gp[0]},
				     {.call = gp_call, .ctx = &gp[1]},
				     {.call = gp_call, .ctx = &gp[2]}};
		il_stat s[3];
		int reps;

		omp_set_num_threads(threads[i]);
		reps = il_measure(c, 3, &plan, s);
		if (reps < 0)
			break;
		for (int k = 1; k < 3; k++)
			print_epilogue_row(id, shape, k == 1 ? PS_BIAS_GELU
					   : PS_BIAS_RESIDUAL, threads[i],
					   gp[k].n_kernels, &s[0], &s[k],
					   rel[k], reps, &t[i]);
	}
	if (rel[0] > MISMATCH)
		printf("%-4s the bare matmul deviates from the interpreter: "
		       "%.1e\n", id, rel[0]);
out:
	if (!ok)
		fprintf(stderr, "bench_peers: %s: skipped\n", shape);
	for (int k = 0; k < 3; k++)
		gp_close(&gp[k]);
}

static void bench_epilogues(const ps_set *set)
{
	tally t[2] = {{0}};

	printf("== fused epilogues: dense + bias + GELU, dense + bias + "
	       "residual add (apollo-l1) vs the bare matmul\n");
	printf("overhead: the median over the rounds of fused / bare in the "
	       "same round, - 1; by medns: fused median / bare median - 1; "
	       "quicker: rounds the fused program won; verdict: the sign test "
	       "over the rounds; krn: kernels of the fused program (1: layer "
	       "1 fused the epilogue)\n");
	print_uses("e", set->n_dense, dense_uses, set);
	print_load("before the epilogues");
	print_epilogue_header();
	for (int i = 0; i < set->n_dense; i++)
		bench_dense(&set->dense[i], i, t);
	printf("\n");
	for (int i = 0; i < n_threads; i++)
		printf("target: fused epilogue < 10%% over its matmul, %d "
		       "thread%s: %d of %d by the paired overhead (%d by the "
		       "two medians)\n", threads[i],
		       threads[i] == 1 ? "" : "s", t[i].met, t[i].rows,
		       t[i].met_spread);
	print_load("at the end");
	print_busy_note();
}

/* ---- 4. memory-bound kernels -------------------------------------------- */

/* Bytes a program must move at least: every tensor it reads from
 * outside (inputs, parameters, constants) once, every output once. */
static double compulsory_bytes(const gp_prog *gp)
{
	const fl_graph *g = gp->program->graph;
	double b = 0;

	for (int t = 0; t < g->n_tensors; t++)
		if (g->tensors[t].role != FL_ROLE_TEMP)
			b += 4.0 * (double)gp->numel[t];
	return b;
}

static void print_memory_header(void)
{
	printf("%-4s %-10s %3s %3s %9s  %-24s %8s  %-22s %7s %7s %8s %8s %8s "
	       "%4s\n",
	       "id", "sample", "thr", "krn", "MiB", "program ms", "GB/s",
	       "copy GB/s", "share", "by medns", "nt-copy", "vs nt", "rel.err",
	       "reps");
	printf("%-4s %-10s %3s %3s %9s  %-24s %8s  %-22s %7s %7s %8s %8s\n", "",
	       "", "", "", "", "median (min-max)", "", "median (min-max)",
	       "paired", "", "GB/s", "by medns");
}

/* One sample: its program under apollo against the copy, on every thread
 * count; the rows, and a line on how both scale. */
static void bench_memory_one(const char *dir, const char *name, int idx,
			     stream_copy *cp, tally *t)
{
	char path[1024], id[16], es[32];
	fl_error err = {""};
	fl_graph *g;
	gp_prog gp;
	double bytes, cb = stream_copy_bytes(cp), err_rel, med[2][2];
	int rc;

	snprintf(path, sizeof path, "%s/%s.json", dir, name);
	snprintf(id, sizeof id, "b%d", idx + 1);
	g = fl_load_graph_file(path, &err);
	if (!g) {
		fprintf(stderr, "bench_peers: %s\n", err.msg);
		return;
	}
	rc = gp_open(&gp, g, FL_STRATEGY_APOLLO, &err);
	fl_graph_free(g);
	if (rc < 0) {
		fprintf(stderr, "bench_peers: %s: %s\n", name, err.msg);
		return;
	}
	bytes = compulsory_bytes(&gp);
	err_rel = check_outputs(&gp);
	err_text(err_rel, es, sizeof es);
	for (int i = 0; i < n_threads; i++) {
		il_contender c[3] = {{.call = stream_copy_call, .ctx = cp},
				     {.call = gp_call, .ctx = &gp},
				     {.call = stream_copy_nt_call, .ctx = cp}};
		il_stat s[3];
		double share, by_medians;
		char ps[40], cs[40];
		int reps;

		omp_set_num_threads(threads[i]);
		reps = il_measure(c, 3, &plan, s);
		if (reps < 0)
			break;
		/* per round: (bytes / program time) / (copy bytes / copy
		   time); s[1].ratio is the median of program / copy time */
		share = bytes / cb / s[1].ratio;
		by_medians = bytes / cb * s[0].median / s[1].median;
		med[i][0] = s[1].median;
		med[i][1] = s[0].median;
		snprintf(ps, sizeof ps, "%.4g (%.4g-%.4g)", s[1].median * 1e3,
			 s[1].min * 1e3, s[1].max * 1e3);
		snprintf(cs, sizeof cs, "%.1f (%.1f-%.1f)",
			 cb / s[0].median / 1e9, cb / s[0].max / 1e9,
			 cb / s[0].min / 1e9);
		printf("%-4s %-10s %3d %3d %9.1f  %-24s %8.1f  %-22s %6.0f%% "
		       "%6.0f%% %8.1f %7.0f%% %8s %4d\n", id, name, threads[i],
		       gp.n_kernels, bytes / (1 << 20), ps,
		       bytes / s[1].median / 1e9, cs, 100 * share,
		       100 * by_medians, cb / s[2].median / 1e9,
		       100 * bytes / cb * s[2].median / s[1].median, es, reps);
		t[i].rows++;
		t[i].met += share >= 0.6;
		t[i].met_spread += by_medians >= 0.6;
		fflush(stdout);
	}
	if (n_threads == 2)
		printf("%-4s %-10s scaling 1 -> %d threads: program %.2fx, "
		       "copy %.2fx (the medians' ratio)\n", id, name,
		       threads[1], med[0][0] / med[1][0],
		       med[0][1] / med[1][1]);
	gp_close(&gp);
}

static void bench_memory(const char *dir)
{
	int n = sizeof memory_samples / sizeof *memory_samples;
	tally t[2] = {{0}};
	stream_copy cp;

	printf("== memory-bound kernels: the four microbenchmarks (apollo) "
	       "vs the copy b[i] = a[i], interleaved\n");
	printf("MiB: what the program must read and write (inputs, "
	       "parameters and outputs once); GB/s: that over its time; share: "
	       "the median over the rounds of the program's GB/s / the copy's "
	       "in the same round; by medns: the two medians' GB/s; nt-copy: "
	       "the same copy with non-temporal stores (%s), timed in the same "
	       "rounds, and the program's GB/s over its median\n",
	       stream_copy_nt_available() ? "as generated code stores a large "
	       "program output" : "none on this machine: plain stores");
	if (stream_copy_open(&cp) < 0) {
		fprintf(stderr, "bench_peers: the copy ran out of memory\n");
		return;
	}
	print_load("before the memory-bound kernels");
	print_memory_header();
	for (int i = 0; i < n; i++)
		bench_memory_one(dir, memory_samples[i], i, &cp, t);
	stream_copy_close(&cp);
	printf("\n");
	for (int i = 0; i < n_threads; i++)
		printf("target: memory-bound kernels >= 60%% of the copy, %d "
		       "thread%s: %d of %d by the paired share (%d by the two "
		       "medians)\n", threads[i], threads[i] == 1 ? "" : "s",
		       t[i].met, t[i].rows, t[i].met_spread);
	print_load("after them");
	print_busy_note();
	printf("\n");
}

/* ---- 5. ONNX Runtime ---------------------------------------------------- */

/* The programs ONNX Runtime is compared with: layer 2's one kernel for
 * softmax and layernorm (ORT's Softmax and LayerNormalization ops), and
 * the whole BERT encoder layer under apollo-l1. */
static const struct {
	const char *sample;
	fl_strategy strategy;
} ort_cases[] = {
	{"softmax", FL_STRATEGY_APOLLO},
	{"layernorm", FL_STRATEGY_APOLLO},
	{"bert_encoder", FL_STRATEGY_APOLLO_L1},
};

#define ORT_MAX_FEEDS 16

/* What one comparison with ONNX Runtime works with: the model file with
 * the program's parameter values as initializers, and its inputs'
 * values in files. */
typedef struct ort_case {
	char dir[64], model[128];
	int n_feeds;
	char feed[ORT_MAX_FEEDS][256];
	const char *feedp[ORT_MAX_FEEDS];
	const char *output;	/* the model's first output */
} ort_case;

/* Writes n floats to path; 0 or -1. */
static int write_floats(const char *path, const float *v, int64_t n)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(v, sizeof *v, (size_t)n, f) == (size_t)n;

	if (f && fclose(f) != 0)
		ok = 0;
	return ok ? 0 : -1;
}

/* g's parameters become constants holding gp's values (ONNX Runtime
 * then sees weights it may pre-pack, as a deployed model has them); the
 * model goes to oc->model, the inputs' values to files beside it. */
static int ort_prepare(ort_case *oc, fl_graph *g, const gp_prog *gp,
		       fl_error *err)
{
	oc->n_feeds = 0;
	oc->output = NULL;
	for (int t = 0; t < g->n_tensors; t++) {
		fl_tensor *x = &g->tensors[t];
		int64_t n;
		float *v = gp_tensor(gp, x->name, &n);

		if (x->role == FL_ROLE_OUTPUT && !oc->output)
			oc->output = x->name;
		if (x->role != FL_ROLE_PARAM && x->role != FL_ROLE_INPUT)
			continue;
		if (!v) {
			fl_error_set(err, "tensor %s is not in the program",
				     x->name);
			return -1;
		}
		if (x->role == FL_ROLE_PARAM) {
			x->data = malloc(sizeof *v * (size_t)n);
			if (!x->data) {
				fl_error_set(err, "out of memory");
				return -1;
			}
			memcpy(x->data, v, sizeof *v * (size_t)n);
			x->n_data = n;
			x->role = FL_ROLE_CONST;
			continue;
		}
		if (oc->n_feeds == ORT_MAX_FEEDS) {
			fl_error_set(err, "more than %d inputs", ORT_MAX_FEEDS);
			return -1;
		}
		char file[96];

		snprintf(file, sizeof file, "%s/in%d", oc->dir, oc->n_feeds);
		if (write_floats(file, v, n) < 0) {
			fl_error_set(err, "cannot write %s", file);
			return -1;
		}
		snprintf(oc->feed[oc->n_feeds], sizeof oc->feed[0], "%s=%s",
			 x->name, file);
		oc->feedp[oc->n_feeds] = oc->feed[oc->n_feeds];
		oc->n_feeds++;
	}
	snprintf(oc->model, sizeof oc->model, "%s/model.onnx", oc->dir);
	return oc->output ? fl_export_onnx(g, oc->model, err) : -1;
}

/* ONNX Runtime's first output against the program's, relative to its
 * scale; +inf when it could not be read. */
static double ort_check(ort_peer *p, const ort_case *oc, const gp_prog *gp)
{
	char path[128];
	int64_t n;
	const float *want = gp_tensor(gp, oc->output, &n);
	float *got = malloc(sizeof *got * (size_t)(n > 0 ? n : 1));
	FILE *f;
	double e = INFINITY;

	snprintf(path, sizeof path, "%s/out", oc->dir);
	if (got && want && ort_peer_dump(p, path) == 0 &&
	    (f = fopen(path, "rb"))) {
		if (fread(got, sizeof *got, (size_t)n, f) == (size_t)n)
			e = gp_rel_error(got, want, n);
		fclose(f);
	}
	free(got);
	return e;
}

static void ort_print_header(void)
{
	printf("%-4s %-13s %-9s %3s %3s  %-24s %-24s %7s %9s %-13s %8s %4s\n",
	       "id", "sample", "strategy", "thr", "krn", "fuselab ms (min-max)",
	       "ORT ms (min-max)", "ORT/fl", "quicker", "verdict", "rel.err",
	       "reps");
}

/* The program of sample i against ONNX Runtime, on 1 thread and all. */
static void bench_ort_one(const char *dir, const char *module, int i,
			  tally *t)
{
	char path[1024], why[512] = "", id[8];
	fl_error err = {""};
	ort_case oc = {0};
	fl_graph *g;
	gp_prog gp;

	snprintf(id, sizeof id, "o%d", i + 1);
	snprintf(path, sizeof path, "%s/%s.json", dir, ort_cases[i].sample);
	snprintf(oc.dir, sizeof oc.dir, "/tmp/fuselab-ort-XXXXXX");
	if (!(g = fl_load_graph_file(path, &err))) {
		fprintf(stderr, "bench_peers: %s\n", err.msg);
		return;
	}
	if (gp_open(&gp, g, ort_cases[i].strategy, &err) < 0) {
		fprintf(stderr, "bench_peers: %s: %s\n", path, err.msg);
		fl_graph_free(g);
		return;
	}
	gp_call(&gp);
	if (!mkdtemp(oc.dir) || ort_prepare(&oc, g, &gp, &err) < 0) {
		printf("%-4s %-13s not compared: %s\n", id, ort_cases[i].sample,
		       err.msg[0] ? err.msg : "no temporary directory");
		goto done;
	}
	for (int k = 0; k < n_threads; k++) {
		ort_peer p;
		il_contender c[2] = {{.call = gp_call, .ctx = &gp},
				     {.ctx = &p, .timed = ort_peer_run}};
		il_stat s[2];
		char fs[40], os[40], es[32], q[16];
		int reps;

		if (ort_peer_open(&p, module, oc.model, threads[k], oc.feedp,
				  oc.n_feeds, why, sizeof why) < 0) {
			printf("%-4s %-13s not compared: %s\n", id,
			       ort_cases[i].sample, why);
			break;
		}
		omp_set_num_threads(threads[k]);
		err_text(ort_check(&p, &oc, &gp), es, sizeof es);
		reps = il_measure(c, 2, &plan, s);
		ort_peer_close(&p);
		if (reps < 0)
			break;
		snprintf(fs, sizeof fs, "%.4g (%.4g-%.4g)", s[0].median * 1e3,
			 s[0].min * 1e3, s[0].max * 1e3);
		snprintf(os, sizeof os, "%.4g (%.4g-%.4g)", s[1].median * 1e3,
			 s[1].min * 1e3, s[1].max * 1e3);
		snprintf(q, sizeof q, "%d/%d", s[1].slower, reps);
		printf("%-4s %-13s %-9s %3d %3d  %-24s %-24s %6.2fx %9s %-13s "
		       "%8s %4d\n", id, ort_cases[i].sample,
		       fl_strategy_name(ort_cases[i].strategy), threads[k],
		       gp.n_kernels, fs, os, s[1].ratio, q,
		       !il_paired_distinct(&s[1]) ? "within noise" :
		       s[1].ratio > 1 ? "fuselab ahead" : "ORT ahead", es,
		       reps);
		t[k].rows++;
		t[k].met += s[1].ratio > 1 && il_paired_distinct(&s[1]);
		fflush(stdout);
	}
done:
	for (int f = 0; f < oc.n_feeds; f++) {
		snprintf(path, sizeof path, "%s/in%d", oc.dir, f);
		unlink(path);
	}
	snprintf(path, sizeof path, "%s/out", oc.dir);
	unlink(path);
	unlink(oc.model);
	rmdir(oc.dir);
	gp_close(&gp);
	fl_graph_free(g);
}

static void bench_ort(const char *dir)
{
	int n = sizeof ort_cases / sizeof *ort_cases;
	char why[512], version[64];
	const char *module = ort_peer_module(why, sizeof why);
	tally t[2] = {{0}};

	printf("== ONNX Runtime: layer 2's softmax and layernorm kernels "
	       "against its Softmax and LayerNormalization, the BERT encoder "
	       "layer (apollo-l1) against the whole model, interleaved\n");
	if (!module) {
		printf("ONNX Runtime: not measured: %s\n\n", why);
		return;
	}
	printf("ort: ONNX Runtime %s (onnxruntime-node)\n",
	       ort_peer_version(module, version, sizeof version));
	printf("ONNX Runtime: onnxruntime-node in %s, CPU provider, every "
	       "graph optimisation, no spinning threads, outputs "
	       "preallocated, intra-op threads = the program's, the "
	       "parameters as initializers holding the program's values; "
	       "its time is session.run's alone, measured in its Node.js "
	       "process; ORT/fl: the median over the rounds of ORT's time / "
	       "fuselab's in the same round (above 1: fuselab quicker); "
	       "quicker: rounds fuselab was quicker in\n", module);
	print_load("before ONNX Runtime");
	ort_print_header();
	for (int i = 0; i < n; i++)
		bench_ort_one(dir, module, i, t);
	printf("\n");
	for (int i = 0; i < n_threads; i++)
		printf("target: ahead of ONNX Runtime beyond the noise, %d "
		       "thread%s: %d of %d\n", threads[i],
		       threads[i] == 1 ? "" : "s", t[i].met, t[i].rows);
	print_load("after it");
	printf("\n");
}

/* ---- main --------------------------------------------------------------- */

static int setup(void)
{
	const char *b = getenv("FL_BENCH_PEERS_BUDGET");
	char *end;
	int cores = fl_machine_get()->cores;

	plan.min_reps = MIN_REPS;
	plan.max_reps = MAX_REPS;
	plan.budget_s = 1.5;
	if (b && *b) {
		plan.budget_s = strtod(b, &end);
		if (*end || !(plan.budget_s >= 0)) {
			fprintf(stderr, "bench_peers: FL_BENCH_PEERS_BUDGET: "
				"'%s' is not a number of seconds\n", b);
			return -1;
		}
	}
	threads[0] = 1;
	n_threads = 1;
	if (cores > 1)
		threads[n_threads++] = cores;
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "samples";
	static ps_set set;
	int n_mm = sizeof mm_samples / sizeof *mm_samples;
	int n_conv = sizeof conv_samples / sizeof *conv_samples;
	int n_dense = sizeof dense_samples / sizeof *dense_samples;
	const char *only = getenv("FL_BENCH_PEERS_ONLY");
	double t0;

	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: bench_peers [SAMPLES_DIR]\n");
		return 2;
	}
	if (only && *only && strcmp(only, "peers") &&
	    strcmp(only, "epilogues") && strcmp(only, "memory") &&
	    strcmp(only, "ort")) {
		fprintf(stderr, "bench_peers: FL_BENCH_PEERS_ONLY: '%s' is "
			"not a section (peers, epilogues, memory, ort)\n", only);
		return 2;
	}
	if (only && !*only)
		only = NULL;
	if (setup() < 0 ||
	    collect(&set, dir, mm_samples, n_mm, ps_add_matmuls) < 0 ||
	    collect(&set, dir, conv_samples, n_conv, ps_add_convs) < 0 ||
	    collect(&set, dir, dense_samples, n_dense, ps_add_denses) < 0)
		return 2;
	t0 = fl_now();
	if (print_machine() < 0)
		return 1;
	if (!only || !strcmp(only, "peers"))
		bench_peers(&set);
	if (!only || !strcmp(only, "epilogues"))
		bench_epilogues(&set);
	if (!only || !strcmp(only, "memory"))
		bench_memory(dir);
	if (!only || !strcmp(only, "ort"))
		bench_ort(dir);
	printf("bench_peers took %.0f s\n", fl_now() - t0);
	return 0;
}
