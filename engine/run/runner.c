/* The runner (DESIGN 1.6): compile a program's generated C, run it in a
 * child process, check it against the interpreter, time it.
 *
 * Two steps, usable apart (the engine's compile and run passes) or
 * together (fl_run_program: codegen, fl_build_source, fl_run_build,
 * fl_build_remove):
 *   - fl_build_source (compile.c) writes the C source to gen.c in a work
 *     directory (the caller's, or a fresh mkdtemp under $TMPDIR) and
 *     compiles it into gen.so ($CC or "cc" unless opts->cc says
 *     otherwise, -O3 -march=native -fopenmp -fno-math-errno
 *     -fno-trapping-math -falign-loops=64 -shared
 *     -fPIC with glibc's -lmvec, again without it when that is what
 *     failed), recording the command, flags, wall time and warnings;
 *   - fl_run_build (here) forks a child process that loads gen.so,
 *     allocates every tensor of the graph and
 *   1. runs each kernel once, in order, on the reference values of the
 *      global tensors it reads, comparing every global tensor it writes:
 *      each kernel is judged on its own arithmetic, so the first one that
 *      deviates is the one whose code is wrong, not one that inherited
 *      float drift from its producers (first_bad_kernel, the message);
 *   2. runs the whole program from the inputs alone (everything else
 *      poisoned with NaN) and measures how far each graph output drifts
 *      from the reference (r->outputs, and the worst of them in
 *      r->max_abs, r->max_rel) -- a NaN where the reference has a number
 *      means a kernel read what nobody wrote -- and, when the caller
 *      gave expected outputs (opts expect: ONNX Runtime's, say), how far
 *      each is from those (r->outputs' expect_*, r->expect_*);
 *   3. times warm-up and repeated runs of the whole program: per kernel
 *      and for the whole program, the median, minimum and maximum of the
 *      repeats.
 * The child leads its own process group, with stdout and stderr going to
 * run.log in the work directory.  The parent waits with a time limit,
 * polling the cancel flag and the child's progress every few ms (the
 * progress callback runs in the parent's thread); on a timeout or a
 * cancel it kills the child's whole process group and reaps it.  A
 * signal in the child is a crash report, never the parent's problem.
 *
 * The child reports through a shared anonymous mapping of fixed-size
 * structs rather than a pipe: what it wrote before dying stays readable,
 * including which kernel was running, and nothing can block on a full
 * pipe; the one field read while it runs (progress) is atomic.  It ends
 * with _exit, so no exit handlers (or leak checkers) run twice.
 *
 * Tolerance: element i of a tensor passes when
 *     |got_i - want_i| <= atol + rtol * max(|want_i|, 0.1 * max_j |want_j|)
 * (defaults atol 1e-4, rtol 1e-3).  The floor on the magnitude is what
 * makes float code comparable with the reference, which accumulates in
 * double: a float dot product of length K errs by about sqrt(K) * 2^-24
 * times the typical magnitude of the result, not of the element, so an
 * element that cancels to nearly zero in a 3072-long matmul (GPT-2's MLP)
 * is off by 1e-3 while its neighbours are in the hundreds.  Measured over
 * the samples, these errors stay below 1e-5 of the tensor's largest
 * value; a wrong index or a missing term is of the order of the values
 * themselves.  max_rel is the error measured the same way, |got - want| /
 * max(|want|, 0.1 * max |want|).  NaN matches NaN and an infinity only
 * itself.
 *
 * Status and r->verified: verified when every kernel reproduces the
 * reference (hence every graph output does), every graph output is
 * written by some kernel and the run from the inputs loses no values;
 * MISMATCH otherwise.  Drift of a deep graph's outputs (float against a
 * double reference through softmaxes with large logits, say) is reported
 * -- per output, whose ok then says false -- but does not fail
 * verification.  Nothing here prints. */
#include "run_impl.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bytes.h"
#include "clock.h"
#include "codegen.h"

void fl_run_opts_default(fl_run_opts *o)
{
	memset(o, 0, sizeof *o);
	o->timeout_s = 60;
	o->warmup = 2;
	o->repeat = 10;
	o->atol = 1e-4;
	o->rtol = 1e-3;
	o->expect_atol = 1e-5;
	o->expect_rtol = 1e-3;
}

const char *fl_run_status_name(fl_run_status s)
{
	switch (s) {
	case FL_RUN_OK: return "ok";
	case FL_RUN_NO_COMPILER: return "no compiler";
	case FL_RUN_COMPILE_ERROR: return "compile error";
	case FL_RUN_LOAD_ERROR: return "load error";
	case FL_RUN_CRASH: return "crash";
	case FL_RUN_NO_MEMORY: return "out of memory";
	case FL_RUN_TIMEOUT: return "timeout";
	case FL_RUN_MISMATCH: return "mismatch";
	case FL_RUN_CANCELLED: return "cancelled";
	}
	return "?";
}

void fl_run_result_free(fl_run_result *r)
{
	if (!r)
		return;
	free(r->kernels);
	r->kernels = NULL;
	r->n_kernels = 0;
	free(r->outputs);
	r->outputs = NULL;
	r->n_outputs = 0;
}

int fl_run_result_copy(fl_run_result *dst, const fl_run_result *src)
{
	fl_kernel_result *k = NULL;
	fl_output_result *o = NULL;

	if (src->kernels && src->n_kernels > 0) {
		k = malloc((size_t)src->n_kernels * sizeof *k);
		if (!k)
			goto oom;
		memcpy(k, src->kernels, (size_t)src->n_kernels * sizeof *k);
	}
	if (src->outputs && src->n_outputs > 0) {
		o = malloc((size_t)src->n_outputs * sizeof *o);
		if (!o)
			goto oom;
		memcpy(o, src->outputs, (size_t)src->n_outputs * sizeof *o);
	}
	*dst = *src;
	dst->kernels = k;
	dst->n_kernels = k ? src->n_kernels : 0;
	dst->outputs = o;
	dst->n_outputs = o ? src->n_outputs : 0;
	return 0;
oom:
	free(k);
	memset(dst, 0, sizeof *dst);
	return -1;
}

/* Sets r->message; long parts are cut at the buffer's end. */
static void set_message(fl_run_result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_message(fl_run_result *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->message, sizeof r->message, fmt, ap);
	va_end(ap);
}


/* ---- what the child does, and how it reports ------------------------- */

enum {
	STAGE_START, STAGE_LOADED, STAGE_VERIFY, STAGE_CHAIN, STAGE_TIME,
	STAGE_DONE
};

typedef struct shared_kernel {
	double seconds, min_seconds, max_seconds, max_abs, max_rel;
	int n_timed;
	int ok;
} shared_kernel;

typedef struct shared_output {
	double max_abs, max_rel;
	int ok;
	/* against opts expect (fl_output_result's expect_* fields) */
	int expected, expect_ok;
	double expect_max_abs, expect_max_rel;
	int64_t expect_bad, expect_at;
	double expect_got, expect_want;
} shared_output;

/* progress: (phase << PROGRESS_SHIFT) | k, 0 before the first report */
enum { PHASE_CHECK = 1, PHASE_TIME = 2 };
#define PROGRESS_SHIFT 24
#define PROGRESS_K_MAX ((1 << PROGRESS_SHIFT) - 1)

/* Written by the child; read by the parent after it ended, except
 * progress, which the parent polls while it runs.  Followed in the
 * mapping by n_kernels shared_kernel (k) and n_outputs shared_output. */
typedef struct shared_report {
	int stage;
	int status;		/* FL_RUN_OK, _MISMATCH or _LOAD_ERROR */
	int current;		/* kernel running now, -1 */
	atomic_int kernel_runs;	/* kernel calls started so far: the
				   parent's time limit counts from the
				   latest */
	int first_bad;
	int verified;
	atomic_int progress;
	double total_seconds, total_min, total_max, max_abs, max_rel;
	char message[2048];
	char device[128];	/* fl_device_name of a CUDA unit */
	shared_kernel k[];	/* n_kernels */
} shared_report;

/* The per-output part of the report, after the kernels. */
static shared_output *report_outputs(shared_report *rep, int n_kernels)
{
	return (shared_output *)(void *)(rep->k + n_kernels);
}

/* Marks kernel k as running (the time limit starts again for it). */
static void enter_kernel(shared_report *rep, int k)
{
	rep->current = k;
	atomic_fetch_add_explicit(&rep->kernel_runs, 1, memory_order_relaxed);
}

static void report_progress(shared_report *rep, int phase, int k)
{
	atomic_store_explicit(&rep->progress, (phase << PROGRESS_SHIFT) |
			      (k < PROGRESS_K_MAX ? k : PROGRESS_K_MAX),
			      memory_order_relaxed);
}

/* What the parent prepares for the child: per kernel, the tensors to
 * compare and a label "fl_k3 (ops: mul_1 exp_2)". */
typedef struct run_plan {
	const fl_program *p;
	const fl_values *ref;
	fl_run_opts o;
	char so_path[640];
	char log_path[640];	/* the child's stdout and stderr */
	int n_kernels;
	int **written;		/* global tensors kernel k writes */
	int *n_written;
	int **read;		/* global tensors it reads and does not write */
	int *n_read;
	bool *produced;		/* per tensor: some kernel writes it */
	char (*label)[256];
	int *outputs;
	int n_outputs;
	const float **expect;	/* per output: opts expect's values, NULL */
	int64_t tensor_bytes;	/* what the child allocates */
} run_plan;

/* Comparison of one tensor against the reference. */
typedef struct cmp_result {
	double max_abs, max_rel;
	bool ok;
	int64_t bad;		/* worst failing element, -1 */
	double bad_err, got, want;
} cmp_result;

static double elem_error(double got, double want)
{
	if (isnan(want))
		return isnan(got) ? 0.0 : INFINITY;
	if (isnan(got))
		return INFINITY;
	if (isinf(want) || isinf(got))
		return got == want ? 0.0 : INFINITY;
	return fabs(got - want);
}

/* A tenth of the largest finite magnitude of the reference. */
static double magnitude_floor(const float *want, int64_t n)
{
	double m = 0.0;

	for (int64_t i = 0; i < n; i++)
		if (isfinite(want[i]) && fabs(want[i]) > m)
			m = fabs(want[i]);
	return 0.1 * m;
}

/* Every element of every kernel's output goes through here, so it is
 * much of a verification's time: the common case (both values finite)
 * takes a short path without elem_error's NaN and infinity tests or
 * fmax's call, with the same error and magnitude as the general one
 * (half the time on 4M elements). */
static cmp_result compare(const float *got, const float *want, int64_t n,
			  double atol, double rtol)
{
	cmp_result c = {0.0, 0.0, true, -1, 0.0, 0.0, 0.0};
	double lo = magnitude_floor(want, n);

	for (int64_t i = 0; i < n; i++) {
		double w = want[i], g = got[i], e, mag;

		if (isfinite(w) && isfinite(g)) {
			e = fabs(g - w);
			mag = fabs(w) > lo ? fabs(w) : lo;
		} else {
			e = elem_error(g, w);
			mag = isfinite(w) ? fmax(fabs(w), lo) : 0.0;
		}

		if (e > c.max_abs)
			c.max_abs = e;
		if (mag > 0.0 && e / mag > c.max_rel)
			c.max_rel = e / mag;
		if (e <= atol + rtol * mag)
			continue;
		c.ok = false;
		if (c.bad < 0 || e > c.bad_err) {
			c.bad = i;
			c.bad_err = e;
			c.got = got[i];
			c.want = w;
		}
	}
	return c;
}

/* An integral or bool tensor (generated code's packed C array got,
 * dtype dt) against the interpreter's exact values: equal or not; the
 * errors are the differences, for the report. */
static cmp_result compare_exact(fl_dtype dt, const void *got,
				const int64_t *want, int64_t n)
{
	cmp_result c = {0.0, 0.0, true, -1, 0.0, 0.0, 0.0};

	for (int64_t i = 0; i < n; i++) {
		int64_t g;
		double e;

		fl_dtype_unpack(dt, (const char *)got +
				i * fl_dtype_size(dt), &g, 1);
		if (g == want[i])
			continue;
		e = fabs((double)g - (double)want[i]);
		c.max_abs = fmax(c.max_abs, e);
		c.max_rel = INFINITY;
		if (c.ok || e > c.bad_err) {
			c.bad = i;
			c.bad_err = e;
			c.got = (double)g;
			c.want = (double)want[i];
		}
		c.ok = false;
	}
	return c;
}

/* The floats of a tensor of float dtype dt at got (a 16-bit float's
 * unpacked into a malloc'd copy, to be freed when it differs from got);
 * NULL when out of memory. */
static const float *float_view(fl_dtype dt, const void *got, int64_t n)
{
	float *f;

	if (!fl_dtype_is_half(dt))
		return got;
	f = malloc((size_t)(n ? n : 1) * sizeof *f);
	if (f)
		fl_dtype_unpack_floats(dt, got, f, n);
	return f;
}

static void free_view(const float *view, const void *got)
{
	if ((const void *)view != got)
		free((void *)view);
}

/* Buffer got of tensor t against the reference ref, by its dtype: a
 * 16-bit float's result was rounded to its type after computing in f32,
 * so it may be one unit in its last place off on top of the f32
 * tolerance (fl_dtype_ulp: 2^-10 for f16, 2^-7 for bf16). */
static cmp_result compare_tensor(const run_plan *pl, int t, const void *got,
				 const fl_buf *ref)
{
	int64_t n = fl_shape_numel(&pl->p->graph->tensors[t].shape);
	const float *view;
	cmp_result c;

	if (ref->ints)
		return compare_exact(ref->dtype, got, ref->ints, n);
	if (!fl_dtype_is_half(ref->dtype))
		return compare(got, ref->data, n, pl->o.atol, pl->o.rtol);
	view = float_view(ref->dtype, got, n);
	if (!view)
		return (cmp_result){0.0, 0.0, false, 0, 0.0, 0.0, 0.0};
	c = compare(view, ref->data, n, pl->o.atol,
		    pl->o.rtol + fl_dtype_ulp(ref->dtype));
	free_view(view, got);
	return c;
}

static bool ref_known(const fl_buf *ref)
{
	return ref->data || ref->ints;
}

/* The reference values of tensor t into its buffer, packed as the
 * generated code declares it. */
static void copy_ref(const fl_buf *ref, int64_t n, float *buf)
{
	if (ref->ints)
		fl_dtype_pack(ref->dtype, ref->ints, buf, n);
	else
		fl_dtype_pack_floats(ref->dtype, ref->data, buf, n);
}

static void describe_deviation(const run_plan *pl, int k, int t,
			       const cmp_result *c, char *msg, size_t n)
{
	const fl_tensor *ts = &pl->p->graph->tensors[t];
	char name[128], at[160];

	fl_sanitize_comment(ts->name, name, sizeof name);
	fl_shape_format_index(&ts->shape, c->bad, at, sizeof at);
	snprintf(msg, n, "kernel %s deviates first: max abs error %.3g "
		 "(max rel %.3g) in T%d \"%s\"; worst element %s: got %.9g, "
		 "want %.9g", pl->label[k], c->max_abs, c->max_rel, t, name, at,
		 c->got, c->want);
}

typedef void (*kernel_fn)(float *const *);

static int64_t numel_of(const fl_program *p, int t)
{
	return fl_shape_numel(&p->graph->tensors[t].shape);
}

static bool is_fed(fl_role r)
{
	return r == FL_ROLE_INPUT || r == FL_ROLE_PARAM || r == FL_ROLE_CONST;
}

/* Fed tensors (inputs, params, consts) from the reference, every other
 * one NaN (integers: a byte pattern; 16-bit floats: 0xffff, a NaN in
 * both), so that reading what nobody wrote shows. */
static void reset_buffers(const run_plan *pl, float *const *bufs)
{
	const fl_graph *g = pl->p->graph;

	for (int t = 0; t < g->n_tensors; t++) {
		int64_t n = numel_of(pl->p, t);
		const fl_buf *ref = &pl->ref->bufs[t];

		if (is_fed(g->tensors[t].role) && ref_known(ref))
			copy_ref(ref, n, bufs[t]);
		else if (fl_dtype_is_int(g->tensors[t].dtype))
			memset(bufs[t], 0x5b,
			       (size_t)n * (size_t)fl_dtype_size(g->tensors[t].dtype));
		else if (fl_dtype_is_half(g->tensors[t].dtype))
			memset(bufs[t], 0xff, (size_t)n * 2);
		else
			for (int64_t i = 0; i < n; i++)
				bufs[t][i] = NAN;
	}
}

/* Every tensor of the graph, reset; NULL when memory runs out. */
static float **child_buffers(const run_plan *pl)
{
	const fl_graph *g = pl->p->graph;
	float **bufs = calloc((size_t)g->n_tensors + 1, sizeof *bufs);

	for (int t = 0; bufs && t < g->n_tensors; t++) {
		int64_t n = numel_of(pl->p, t);
		void *mem = NULL;

		if (posix_memalign(&mem, 64, (size_t)(n ? n : 1) *
				   (size_t)fl_dtype_size(g->tensors[t].dtype)))
			return NULL;	/* the child exits: no need to free */
		bufs[t] = mem;
	}
	if (bufs)
		reset_buffers(pl, bufs);
	return bufs;
}

/* Compares what kernel k wrote with the reference. */
static void check_kernel(const run_plan *pl, int k, float *const *bufs,
			 shared_report *rep)
{
	shared_kernel *sk = &rep->k[k];

	sk->ok = 1;
	for (int j = 0; j < pl->n_written[k]; j++) {
		int t = pl->written[k][j];
		cmp_result c;

		if (!ref_known(&pl->ref->bufs[t]))
			continue;
		c = compare_tensor(pl, t, bufs[t], &pl->ref->bufs[t]);
		sk->max_abs = fmax(sk->max_abs, c.max_abs);
		sk->max_rel = fmax(sk->max_rel, c.max_rel);
		if (c.ok || !sk->ok)
			continue;
		sk->ok = 0;
		if (rep->first_bad < 0) {
			rep->first_bad = k;
			describe_deviation(pl, k, t, &c, rep->message,
					   sizeof rep->message);
		}
	}
}

/* Runs each kernel once, in order, on the reference values of the
 * global tensors it reads, and compares what it wrote: a kernel is
 * judged by its own arithmetic, not by the float drift it inherits. */
static void child_verify(const run_plan *pl, kernel_fn *kernels,
			 float *const *bufs, shared_report *rep)
{
	rep->stage = STAGE_VERIFY;
	report_progress(rep, PHASE_CHECK, 0);
	for (int k = 0; k < pl->n_kernels; k++) {
		for (int j = 0; j < pl->n_read[k]; j++) {
			int t = pl->read[k][j];

			if (ref_known(&pl->ref->bufs[t]))
				copy_ref(&pl->ref->bufs[t], numel_of(pl->p, t),
					 bufs[t]);
		}
		enter_kernel(rep, k);
		kernels[k](bufs);
		check_kernel(pl, k, bufs, rep);
		report_progress(rep, PHASE_CHECK, k + 1);
	}
	rep->current = -1;
}

/* Whether got has a NaN or infinity where want is finite. */
static bool lost_values(const float *got, const float *want, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		if (isfinite(want[i]) && !isfinite(got[i]))
			return true;
	return false;
}

/* One graph output of the run from the inputs against the expected
 * values of opts expect, element by element at ONNX's formula. */
static void compare_expected(const float *got, const float *want, int64_t n,
			     const fl_run_opts *o, shared_output *out)
{
	double worst = -1.0, lo = magnitude_floor(want, n);

	out->expected = 1;
	out->expect_ok = 1;
	out->expect_at = -1;
	for (int64_t i = 0; i < n; i++) {
		double w = want[i], g = got[i], e = elem_error(g, w);
		double mag = isfinite(w) ? fabs(w) : 0.0;

		if (isfinite(e) && e > out->expect_max_abs)
			out->expect_max_abs = e;
		/* judged elementwise; the relative error reported is on the
		 * tensor's scale, as max_rel (an element that cancels to
		 * near zero would make it meaningless) */
		if (fmax(mag, lo) > 0.0 && e / fmax(mag, lo) > out->expect_max_rel)
			out->expect_max_rel = e / fmax(mag, lo);
		if (e <= o->expect_atol + o->expect_rtol * mag)
			continue;
		out->expect_ok = 0;
		out->expect_bad++;
		if (e > worst) {	/* the first infinite error stays */
			worst = e;
			out->expect_at = i;
			out->expect_got = g;
			out->expect_want = w;
		}
	}
}

/* Runs the whole program from its inputs alone and measures how far each
 * output drifts from the reference; a NaN where the reference has a
 * number means some kernel read what no kernel wrote. */
static void child_chained(const run_plan *pl, kernel_fn *kernels,
			  float *const *bufs, shared_report *rep)
{
	shared_output *outs = report_outputs(rep, pl->n_kernels);

	rep->stage = STAGE_CHAIN;
	reset_buffers(pl, bufs);
	for (int k = 0; k < pl->n_kernels; k++) {
		enter_kernel(rep, k);
		kernels[k](bufs);
	}
	rep->current = -1;
	rep->verified = rep->first_bad < 0;
	for (int i = 0; i < pl->n_outputs; i++) {
		int t = pl->outputs[i];
		int64_t n = numel_of(pl->p, t);
		fl_dtype dt = pl->p->graph->tensors[t].dtype;
		const float *got = NULL;
		fl_run_opts half_o = pl->o;
		cmp_result c;

		outs[i].ok = pl->produced[t];
		if (pl->expect[i] && !fl_dtype_is_half(dt)) {
			/* f32 outputs; the others: exact above */
			compare_expected(bufs[t], pl->expect[i], n, &pl->o,
					 &outs[i]);
		} else if (pl->expect[i] && (got = float_view(dt, bufs[t], n))) {
			/* one unit in the type's last place more */
			half_o.expect_rtol += fl_dtype_ulp(dt);
			compare_expected(got, pl->expect[i], n, &half_o,
					 &outs[i]);
			free_view(got, bufs[t]);
		}
		if (!ref_known(&pl->ref->bufs[t]))
			continue;
		c = compare_tensor(pl, t, bufs[t], &pl->ref->bufs[t]);
		/* c.ok: no element off tolerance, so no NaN or infinity
		 * where the reference is finite */
		outs[i].max_abs = c.max_abs;
		outs[i].max_rel = c.max_rel;
		outs[i].ok = pl->produced[t] && c.ok;
		rep->max_abs = fmax(rep->max_abs, c.max_abs);
		rep->max_rel = fmax(rep->max_rel, c.max_rel);
		if (!rep->verified || !pl->ref->bufs[t].data)
			continue;
		got = float_view(dt, bufs[t], n);
		if (got && !lost_values(got, pl->ref->bufs[t].data, n)) {
			free_view(got, bufs[t]);
			continue;
		}
		free_view(got, bufs[t]);
		rep->verified = 0;
		snprintf(rep->message, sizeof rep->message, "output T%d has "
			 "NaN or infinite values where the reference has numbers "
			 "when the program runs from its inputs alone: a kernel "
			 "reads a tensor before it is written", t);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median, minimum and maximum of v[0..n-1] (sorted in place); zeros when
 * n is 0. */
static void spread(double *v, int n, double *med, double *lo, double *hi)
{
	*med = *lo = *hi = 0.0;
	if (n <= 0)
		return;
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	*med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
	*lo = v[0];
	*hi = v[n - 1];
}

/* Warm-up runs, then timed runs; median, minimum and maximum per kernel
 * and of the totals.  Reports "time" progress: 0 at the start of the
 * warm-up, r after timed run r.  A CUDA unit (dev->resident) works on
 * its device copies alone while timed, and each kernel's time is the
 * device time of its launches; a round's total is then their sum (the
 * host's waits between kernels are not the program's work). */
static void child_time(const run_plan *pl, kernel_fn *kernels,
		       float *const *bufs, const fl_device_syms *dev,
		       shared_report *rep)
{
	int nk = pl->n_kernels, nr = pl->o.repeat > 0 ? pl->o.repeat : 0;
	double *t = calloc((size_t)(nk + 1) * (size_t)(nr + 1), sizeof *t);
	double *col = t ? t + (size_t)nk * (size_t)(nr + 1) : NULL;

	rep->stage = STAGE_TIME;
	report_progress(rep, PHASE_TIME, 0);
	for (int w = 0; w < pl->o.warmup; w++)
		for (int k = 0; k < nk; k++) {
			enter_kernel(rep, k);
			kernels[k](bufs);
		}
	if (!t)
		return;
	if (dev->resident)
		*dev->resident = 1;
	for (int r = 0; r < nr; r++) {
		double t0 = fl_now(), sum = 0.0;

		for (int k = 0; k < nk; k++) {
			double s;

			enter_kernel(rep, k);
			s = fl_run_timed_call(kernels[k], bufs, dev);
			t[(size_t)k * (size_t)(nr + 1) + (size_t)r] = s;
			sum += s;
		}
		col[r] = dev->resident ? sum : fl_now() - t0;
		report_progress(rep, PHASE_TIME, r + 1);
	}
	rep->current = -1;
	for (int k = 0; k < nk; k++) {
		shared_kernel *sk = &rep->k[k];

		spread(t + (size_t)k * (size_t)(nr + 1), nr, &sk->seconds,
		       &sk->min_seconds, &sk->max_seconds);
		sk->n_timed = nr;
	}
	spread(col, nr, &rep->total_seconds, &rep->total_min,
	       &rep->total_max);
	free(t);
}

/* Resets the handlers of fatal signals (a sanitizer's, say) so that a
 * crash in generated code ends the child by that signal. */
static void default_fatal_signals(void)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		signal(sigs[i], SIG_DFL);
}

/* Loads gen.so and checks its table; NULL with the report filled.  The
 * device entry points of a CUDA unit into *dev, its GPU's name into the
 * report. */
static kernel_fn *child_load(const run_plan *pl, fl_device_syms *dev,
			     shared_report *rep)
{
	void *h = dlopen(pl->so_path, RTLD_NOW | RTLD_LOCAL);
	const int *n;
	kernel_fn *table;

	if (!h) {
		rep->status = FL_RUN_LOAD_ERROR;
		snprintf(rep->message, sizeof rep->message, "dlopen: %s",
			 dlerror());
		return NULL;
	}
	n = dlsym(h, "fl_n_kernels");
	table = dlsym(h, "fl_kernels");
	if (!n || !table || *n != pl->n_kernels) {
		rep->status = FL_RUN_LOAD_ERROR;
		snprintf(rep->message, sizeof rep->message, "%s does not "
			 "export the %d kernels of the program (fl_n_kernels, "
			 "fl_kernels)", pl->so_path, pl->n_kernels);
		return NULL;
	}
	for (int k = 0; k < pl->n_kernels; k++)
		if (!table[k]) {
			rep->status = FL_RUN_LOAD_ERROR;
			snprintf(rep->message, sizeof rep->message,
				 "kernel %d of %s is NULL", k, pl->so_path);
			return NULL;
		}
	fl_run_device_syms(h, dev);
	if (dev->name)
		snprintf(rep->device, sizeof rep->device, "%s", dev->name());
	return table;
}

static void child_main(const run_plan *pl, shared_report *rep)
	__attribute__((noreturn));

static void child_main(const run_plan *pl, shared_report *rep)
{
	fl_device_syms dev;
	kernel_fn *kernels;
	float **bufs;

	fl_run_child_setup(pl->log_path);
	default_fatal_signals();
	if (pl->o.pin) {	/* before gen.so brings libgomp in */
		setenv("OMP_PROC_BIND", "close", 1);
		setenv("OMP_PLACES", "cores", 1);
	}
	kernels = child_load(pl, &dev, rep);
	if (!kernels)
		_exit(0);
	rep->stage = STAGE_LOADED;
	bufs = child_buffers(pl);
	if (!bufs) {
		rep->status = FL_RUN_NO_MEMORY;
		snprintf(rep->message, sizeof rep->message, "the test process "
			 "ran out of memory allocating the graph's tensors "
			 "(%lld bytes)", (long long)pl->tensor_bytes);
		_exit(1);
	}
	child_verify(pl, kernels, bufs, rep);
	child_chained(pl, kernels, bufs, rep);
	for (int i = 0; i < pl->n_outputs && rep->verified; i++)
		if (!pl->produced[pl->outputs[i]]) {
			rep->verified = 0;
			snprintf(rep->message, sizeof rep->message, "no kernel "
				 "writes graph output T%d", pl->outputs[i]);
		}
	rep->status = rep->verified ? FL_RUN_OK : FL_RUN_MISMATCH;
	child_time(pl, kernels, bufs, &dev, rep);
	rep->stage = STAGE_DONE;
	_exit(0);
}

/* ---- the plan -------------------------------------------------------- */

static void plan_free(run_plan *pl)
{
	for (int k = 0; k < pl->n_kernels; k++) {
		if (pl->written)
			free(pl->written[k]);
		if (pl->read)
			free(pl->read[k]);
	}
	free(pl->written);
	free(pl->n_written);
	free(pl->read);
	free(pl->n_read);
	free(pl->produced);
	free(pl->label);
	free(pl->outputs);
	free(pl->expect);
}

static void kernel_label(const fl_program *p, int k, char *buf, size_t n)
{
	const fl_kernel *kn = &p->kernels[k];
	size_t len = (size_t)snprintf(buf, n, "%s (ops:", kn->name);

	for (int i = 0; i < kn->n_ops && len + 8 < n; i++) {
		char name[96];

		fl_sanitize_comment(p->graph->ops[kn->ops[i]].name, name,
				    sizeof name);
		len += (size_t)snprintf(buf + len, n - len, " %s", name);
	}
	if (len + 2 < n)
		snprintf(buf + len, n - len, ")");
}

/* Global tensors kernel k writes (its ops' outputs when the kernel has
 * no tensor list). */
static int kernel_written(const fl_program *p, int k, int *out)
{
	const fl_kernel *kn = &p->kernels[k];
	int n = 0;

	if (kn->n_tensors == 0) {
		for (int i = 0; i < kn->n_ops; i++)
			out[n++] = p->graph->ops[kn->ops[i]].out[0];
		return n;
	}
	for (int i = 0; i < kn->n_tensors; i++)
		if (kn->tensors[i].written &&
		    kn->tensors[i].place == FL_PLACE_GLOBAL)
			out[n++] = kn->tensors[i].tensor;
	return n;
}

static bool contains(const int *v, int n, int x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

/* Global tensors kernel k reads and does not write itself (its ops'
 * inputs when the kernel has no tensor list). */
static int kernel_read(const fl_program *p, int k, int *out)
{
	const fl_kernel *kn = &p->kernels[k];
	int n = 0, outs[64], n_outs = 0;

	if (kn->n_tensors > 0) {
		for (int i = 0; i < kn->n_tensors; i++)
			if (kn->tensors[i].read && !kn->tensors[i].written &&
			    kn->tensors[i].place == FL_PLACE_GLOBAL)
				out[n++] = kn->tensors[i].tensor;
		return n;
	}
	for (int i = 0; i < kn->n_ops && n_outs < 64; i++)
		outs[n_outs++] = p->graph->ops[kn->ops[i]].out[0];
	for (int i = 0; i < kn->n_ops; i++) {
		const fl_op *op = &p->graph->ops[kn->ops[i]];

		for (int j = 0; j < op->n_in; j++)
			if (!contains(outs, n_outs, op->in[j]) &&
			    !contains(out, n, op->in[j]))
				out[n++] = op->in[j];
	}
	return n;
}

/* Room for any list of tensors kernel k touches. */
static size_t kernel_list_size(const fl_program *p, int k)
{
	const fl_kernel *kn = &p->kernels[k];
	size_t n = (size_t)kn->n_tensors + 1;

	for (int i = 0; i < kn->n_ops; i++)
		n += (size_t)p->graph->ops[kn->ops[i]].n_in + 1;
	return n;
}

static int plan_init(run_plan *pl, const fl_program *p, const fl_values *ref,
		     const fl_run_opts *o, fl_error *err)
{
	memset(pl, 0, sizeof *pl);
	pl->p = p;
	pl->ref = ref;
	pl->o = *o;
	pl->n_kernels = p->n_kernels;
	pl->written = calloc((size_t)p->n_kernels + 1, sizeof *pl->written);
	pl->n_written = calloc((size_t)p->n_kernels + 1, sizeof *pl->n_written);
	pl->read = calloc((size_t)p->n_kernels + 1, sizeof *pl->read);
	pl->n_read = calloc((size_t)p->n_kernels + 1, sizeof *pl->n_read);
	pl->label = calloc((size_t)p->n_kernels + 1, sizeof *pl->label);
	pl->produced = calloc((size_t)p->graph->n_tensors + 1, sizeof(bool));
	if (!pl->written || !pl->n_written || !pl->read || !pl->n_read ||
	    !pl->label || !pl->produced)
		goto oom;
	for (int k = 0; k < p->n_kernels; k++) {
		size_t n = kernel_list_size(p, k);

		pl->written[k] = calloc(n, sizeof(int));
		pl->read[k] = calloc(n, sizeof(int));
		if (!pl->written[k] || !pl->read[k])
			goto oom;
		pl->n_written[k] = kernel_written(p, k, pl->written[k]);
		pl->n_read[k] = kernel_read(p, k, pl->read[k]);
		for (int j = 0; j < pl->n_written[k]; j++)
			pl->produced[pl->written[k][j]] = true;
		kernel_label(p, k, pl->label[k], sizeof pl->label[k]);
	}
	pl->n_outputs = fl_graph_outputs(p->graph, &pl->outputs);
	if (pl->n_outputs < 0)
		goto oom;
	pl->expect = calloc((size_t)pl->n_outputs + 1, sizeof *pl->expect);
	if (!pl->expect)
		goto oom;
	for (int e = 0; e < o->n_expect; e++) {
		int t = fl_graph_find_tensor(p->graph, o->expect[e].name);

		for (int i = 0; t >= 0 && i < pl->n_outputs; i++)
			if (pl->outputs[i] == t &&
			    fl_shape_numel(&o->expect[e].buf.shape) ==
				    numel_of(p, t))
				pl->expect[i] = o->expect[e].buf.data;
	}
	return 0;
oom:
	fl_error_set(err, "out of memory");
	return -1;
}

/* Global bytes read + written by kernel k: each global tensor counted
 * once, whether it is read, written or both. */
/* Bytes of tensor t in its element type. */
static int64_t bytes_of(const fl_program *p, int t)
{
	return numel_of(p, t) * fl_dtype_size(p->graph->tensors[t].dtype);
}

static int64_t kernel_bytes(const fl_program *p, int k)
{
	const fl_kernel *kn = &p->kernels[k];
	int64_t b = 0;

	if (kn->n_tensors == 0) {
		for (int i = 0; i < kn->n_ops; i++) {
			const fl_op *op = &p->graph->ops[kn->ops[i]];

			for (int j = 0; j < op->n_in; j++)
				b += bytes_of(p, op->in[j]);
			b += bytes_of(p, op->out[0]);
		}
		return b;
	}
	for (int i = 0; i < kn->n_tensors; i++)
		if (kn->tensors[i].place == FL_PLACE_GLOBAL &&
		    (kn->tensors[i].read || kn->tensors[i].written))
			b += bytes_of(p, kn->tensors[i].tensor);
	return b;
}

/* ---- running --------------------------------------------------------- */

static const char *signal_name(int sig)
{
	switch (sig) {
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGFPE: return "SIGFPE";
	case SIGILL: return "SIGILL";
	case SIGABRT: return "SIGABRT";
	case SIGKILL: return "SIGKILL";
	default: return "signal";
	}
}

/* strsignal's words for the usual ones (strsignal itself may use a
 * static buffer: not for a worker thread). */
static const char *signal_words(int sig)
{
	switch (sig) {
	case SIGSEGV: return "Segmentation fault";
	case SIGBUS: return "Bus error";
	case SIGFPE: return "Floating point exception";
	case SIGILL: return "Illegal instruction";
	case SIGABRT: return "Aborted";
	case SIGKILL: return "Killed";
	default: return "unexpected signal";
	}
}

/* " in kernel fl_k2 (ops: ...)" when the child was inside one. */
static void where_suffix(const run_plan *pl, const shared_report *rep,
			 char *buf, size_t n)
{
	buf[0] = '\0';
	if (rep->current >= 0 && rep->current < pl->n_kernels)
		snprintf(buf, n, " in kernel %s%s", pl->label[rep->current],
			 rep->stage == STAGE_TIME ? " (timing runs)" :
			 rep->stage == STAGE_CHAIN ? " (run from the inputs)"
						   : "");
}

static int timeout_of(const run_plan *pl)
{
	return pl->o.timeout_s > 0 ? pl->o.timeout_s : 60;
}

/* The last line the child wrote to its log (a CUDA unit prints its
 * error there before it aborts: target.h), "" when none. */
static void log_last_line(const char *path, char *buf, size_t n)
{
	char line[512];
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	while (f && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0])
			snprintf(buf, n, "%.280s", line);
	}
	if (f)
		fclose(f);
}

/* Turns the child's end (wait_rc: FL_WAIT_*) and report into r. */
static void collect(const run_plan *pl, shared_report *rep, int wait_rc,
		    int status, fl_run_result *r)
{
	const shared_output *outs = report_outputs(rep, pl->n_kernels);
	char where[300];

	where_suffix(pl, rep, where, sizeof where);
	if (wait_rc == FL_WAIT_CANCELLED) {
		r->status = FL_RUN_CANCELLED;
		set_message(r, "cancelled while running the generated code%s",
			    where);
		return;
	}
	if (wait_rc == FL_WAIT_TIMEOUT) {
		r->status = FL_RUN_TIMEOUT;
		set_message(r, "a kernel call of the generated code did not "
			    "finish within %d s%s", timeout_of(pl), where);
		return;
	}
	if (WIFSIGNALED(status)) {
		char said[300];

		log_last_line(pl->log_path, said, sizeof said);
		r->status = FL_RUN_CRASH;
		set_message(r, "the generated code crashed with %s (%s)%s%s%s",
			    signal_name(WTERMSIG(status)),
			    signal_words(WTERMSIG(status)), where,
			    said[0] ? ": " : "", said);
		return;
	}
	if (rep->status == FL_RUN_NO_MEMORY) {
		r->status = FL_RUN_NO_MEMORY;
		set_message(r, "%s", rep->message);
		return;
	}
	if (rep->status == FL_RUN_LOAD_ERROR) {
		r->status = FL_RUN_LOAD_ERROR;
		set_message(r, "%s", rep->message);
		return;
	}
	if (rep->stage != STAGE_DONE) {
		r->status = FL_RUN_CRASH;
		set_message(r, "the test process exited with status %d "
			    "before it finished%s%s%s",
			    WIFEXITED(status) ? WEXITSTATUS(status) : -1, where,
			    rep->message[0] ? ": " : "", rep->message);
		return;
	}
	r->status = (fl_run_status)rep->status;
	r->verified = rep->verified;
	r->first_bad_kernel = rep->first_bad;
	r->max_abs = rep->max_abs;
	r->max_rel = rep->max_rel;
	r->total_seconds = rep->total_seconds;
	r->total_min_seconds = rep->total_min;
	r->total_max_seconds = rep->total_max;
	snprintf(r->device, sizeof r->device, "%s", rep->device);
	if (rep->message[0])
		set_message(r, "%s", rep->message);
	else
		set_message(r, "verified: each of the %d kernel%s "
			    "reproduces the reference; outputs of a run from "
			    "the inputs drift by max abs %.3g (rel %.3g)",
			    pl->n_kernels, pl->n_kernels == 1 ? "" : "s",
			    rep->max_abs, rep->max_rel);
	for (int k = 0; k < pl->n_kernels; k++) {
		fl_kernel_result *kr = &r->kernels[k];
		const shared_kernel *sk = &rep->k[k];

		kr->seconds = sk->seconds;
		kr->min_seconds = sk->min_seconds;
		kr->max_seconds = sk->max_seconds;
		kr->n_timed = sk->n_timed;
		kr->max_abs = sk->max_abs;
		kr->max_rel = sk->max_rel;
		kr->ok = sk->ok;
		kr->gbps = kr->seconds > 0 ? (double)kr->bytes / kr->seconds / 1e9
					   : 0.0;
	}
	for (int i = 0; i < r->n_outputs && i < pl->n_outputs; i++) {
		fl_output_result *ro = &r->outputs[i];
		const shared_output *so = &outs[i];

		ro->max_abs = so->max_abs;
		ro->max_rel = so->max_rel;
		ro->ok = so->ok;
		ro->expected = so->expected;
		ro->expect_ok = so->expect_ok;
		ro->expect_max_abs = so->expect_max_abs;
		ro->expect_max_rel = so->expect_max_rel;
		ro->expect_bad = so->expect_bad;
		ro->expect_at = so->expect_at;
		ro->expect_got = so->expect_got;
		ro->expect_want = so->expect_want;
		if (!so->expected)
			continue;
		r->expect_compared++;
		r->expect_failed += !so->expect_ok;
		r->expect_max_abs = fmax(r->expect_max_abs, so->expect_max_abs);
		r->expect_max_rel = fmax(r->expect_max_rel, so->expect_max_rel);
	}
}

/* The parent's side of progress: what it last passed on. */
typedef struct progress_poll {
	const run_plan *pl;
	shared_report *rep;
	int last_phase, last_k;
	int last_runs;		/* kernel_runs when last seen */
} progress_poll;

/* Passes the child's progress on when it changed; the end of checking
 * (every kernel) is reported even when the child moved on to timing
 * between two polls. */
static void report_phase(progress_poll *pp, int v, int phase, int k, int nr)
{
	const run_plan *pl = pp->pl;

	if (v == 0 || (phase == pp->last_phase && k == pp->last_k))
		return;
	if (phase == PHASE_TIME && pp->last_phase != PHASE_TIME &&
	    !(pp->last_phase == PHASE_CHECK && pp->last_k == pl->n_kernels))
		fl_run_progress(&pl->o, "check", pl->n_kernels, pl->n_kernels);
	pp->last_phase = phase;
	pp->last_k = k;
	if (phase == PHASE_CHECK)
		fl_run_progress(&pl->o, "check", k, pl->n_kernels);
	else if (phase == PHASE_TIME && nr > 0)
		fl_run_progress(&pl->o, "time", k, nr);
}

/* Polled by the wait loop: passes progress on, and says whether the
 * child started another kernel call since the last poll (the time limit
 * then counts again from now). */
static bool poll_progress(void *user)
{
	progress_poll *pp = user;
	const run_plan *pl = pp->pl;
	int v = atomic_load_explicit(&pp->rep->progress, memory_order_relaxed);
	int phase = v >> PROGRESS_SHIFT, k = v & PROGRESS_K_MAX;
	int nr = pl->o.repeat > 0 ? pl->o.repeat : 0;
	int runs = atomic_load_explicit(&pp->rep->kernel_runs,
				       memory_order_relaxed);
	bool started = runs != pp->last_runs;

	pp->last_runs = runs;
	report_phase(pp, v, phase, k, nr);
	return started;
}

/* Runs gen.so in a child and fills r. */
static int run_child(const run_plan *pl, fl_run_result *r, fl_error *err)
{
	size_t size = sizeof(shared_report) +
		      (size_t)pl->n_kernels * sizeof(shared_kernel) +
		      (size_t)pl->n_outputs * sizeof(shared_output);
	shared_report *rep = mmap(NULL, size, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	progress_poll pp = {pl, rep, 0, 0, 0};
	int status = 0, rc;
	pid_t pid;

	if (rep == MAP_FAILED) {
		fl_error_set(err, "mmap: %s", strerror(errno));
		return -1;
	}
	memset(rep, 0, size);
	atomic_init(&rep->progress, 0);
	rep->current = -1;
	rep->first_bad = -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		munmap(rep, size);
		fl_error_set(err, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0)
		child_main(pl, rep);
	rc = fl_run_wait(pid, timeout_of(pl), &pl->o, poll_progress, &pp,
			 &status);
	if (rc < 0) {
		fl_error_set(err, "waiting for the test process: %s",
			     strerror(errno));
		munmap(rep, size);
		return -1;
	}
	if (rc == FL_WAIT_EXITED)
		poll_progress(&pp);
	collect(pl, rep, rc, status, r);
	munmap(rep, size);
	return 0;
}

/* n elements of `size` bytes added to *sum; false when it overflows. */
static bool add_elems(int64_t *sum, int64_t n, int size)
{
	if (n < 0 || n > (INT64_MAX - *sum) / size)
		return false;
	*sum += n * size;
	return true;
}

int64_t fl_run_bytes_needed(const fl_program *p, const fl_values *ref,
			    int64_t *tensors, int64_t *refs)
{
	const fl_graph *g = p->graph;
	int64_t t_sum = 0, r_sum = 0;

	for (int t = 0; t < g->n_tensors; t++) {
		int64_t n = numel_of(p, t);

		/* the child allocates at least one element per tensor */
		if (!add_elems(&t_sum, n ? n : 1,
			       fl_dtype_size(g->tensors[t].dtype)))
			return -1;
		if (ref && t < ref->n && !ref_known(&ref->bufs[t]))
			continue;
		if (ref && t < ref->n)
			n = fl_shape_numel(&ref->bufs[t].shape);
		if (!add_elems(&r_sum, n,
			       fl_dtype_is_int(g->tensors[t].dtype) ? 8 : 4))
			return -1;
	}
	if (tensors)
		*tensors = t_sum;
	if (refs)
		*refs = r_sum;
	return t_sum > INT64_MAX - r_sum ? -1 : t_sum + r_sum;
}

/* False, with r's status and message set, when the run needs more
 * memory than opts->max_bytes allows (it is then not started). */
static bool memory_fits(const fl_program *p, const fl_values *ref,
			const fl_run_opts *o, fl_run_result *r)
{
	int64_t tensors = 0, refs = 0;
	int64_t need = fl_run_bytes_needed(p, ref, &tensors, &refs);
	char a[32], b[32];

	if (o->max_bytes <= 0)
		return true;
	if (need < 0) {
		r->status = FL_RUN_NO_MEMORY;
		set_message(r, "not run: the program needs more memory than a "
			    "64-bit count can express");
		return false;
	}
	if (need <= o->max_bytes)
		return true;
	r->status = FL_RUN_NO_MEMORY;
	set_message(r, "not run: the program needs %lld bytes (%s: "
		    "tensors %lld, reference values %lld), more than the "
		    "limit of %lld bytes (%s, --max-memory)",
		    (long long)need, fl_format_bytes(need, a, sizeof a),
		    (long long)tensors, (long long)refs,
		    (long long)o->max_bytes,
		    fl_format_bytes(o->max_bytes, b, sizeof b));
	return false;
}

/* Checks that ref holds every tensor of the graph with its shape. */
static int check_ref(const fl_program *p, const fl_values *ref,
		     fl_error *err)
{
	const fl_graph *g = p->graph;

	if (!ref || ref->n < g->n_tensors) {
		fl_error_set(err, "reference values do not cover the graph's "
			     "%d tensors", g->n_tensors);
		return -1;
	}
	for (int t = 0; t < g->n_tensors; t++)
		if (ref_known(&ref->bufs[t]) &&
		    (fl_shape_numel(&ref->bufs[t].shape) != numel_of(p, t) ||
		     ref->bufs[t].dtype != g->tensors[t].dtype)) {
			fl_error_set(err, "reference value of tensor \"%s\" has "
				     "the wrong size", g->tensors[t].name);
			return -1;
		} else if (!ref_known(&ref->bufs[t]) &&
			   is_fed(g->tensors[t].role)) {
			fl_error_set(err, "no reference value for input \"%s\"",
				     g->tensors[t].name);
			return -1;
		}
	return 0;
}

/* r for program p before anything ran: per kernel its bytes, per graph
 * output its tensor; -1 when out of memory. */
static int result_init(fl_run_result *r, const fl_program *p, fl_error *err)
{
	int *outs = NULL, n_outs;

	memset(r, 0, sizeof *r);
	r->strategy = p->strategy;
	r->first_bad_kernel = -1;
	r->kernels = calloc((size_t)p->n_kernels + 1, sizeof *r->kernels);
	n_outs = fl_graph_outputs(p->graph, &outs);
	if (!r->kernels || n_outs < 0)
		goto oom;
	r->n_kernels = p->n_kernels;
	for (int k = 0; k < p->n_kernels; k++)
		r->kernels[k].bytes = kernel_bytes(p, k);
	r->outputs = calloc((size_t)n_outs + 1, sizeof *r->outputs);
	if (!r->outputs)
		goto oom;
	r->n_outputs = n_outs;
	for (int i = 0; i < n_outs; i++)
		r->outputs[i].tensor = outs[i];
	free(outs);
	return 0;
oom:
	free(outs);
	fl_run_result_free(r);
	fl_error_set(err, "out of memory");
	return -1;
}

int fl_run_build(const fl_build *b, const fl_program *p,
		 const fl_values *ref, const fl_run_opts *opts,
		 fl_run_result *r, fl_error *err)
{
	fl_run_opts dflt;
	run_plan pl;
	int rc;

	if (!opts) {
		fl_run_opts_default(&dflt);
		opts = &dflt;
	}
	if (result_init(r, p, err) < 0)
		return -1;
	if (check_ref(p, ref, err) < 0) {
		fl_run_result_free(r);
		return -1;
	}
	r->target = b->target;
	snprintf(r->note, sizeof r->note, "%s", b->note);
	if (b->status != FL_RUN_OK || !b->so_path[0]) {
		r->status = b->status != FL_RUN_OK ? b->status
						   : FL_RUN_LOAD_ERROR;
		set_message(r, "%s", b->status != FL_RUN_OK ? b->message
			    : "nothing was built");
		return 0;
	}
	if (fl_run_cancelled(opts)) {
		r->status = FL_RUN_CANCELLED;
		set_message(r, "cancelled before running the generated code");
		return 0;
	}
	if (!memory_fits(p, ref, opts, r))
		return 0;
	if (plan_init(&pl, p, ref, opts, err) < 0) {
		plan_free(&pl);
		fl_run_result_free(r);
		return -1;
	}
	fl_run_bytes_needed(p, ref, &pl.tensor_bytes, NULL);
	snprintf(pl.so_path, sizeof pl.so_path, "%s", b->so_path);
	fl_run_path(b->workdir, "run.log", pl.log_path, sizeof pl.log_path);
	rc = run_child(&pl, r, err);
	plan_free(&pl);
	if (rc < 0)
		fl_run_result_free(r);
	return rc;
}

/* Compiles p's unit for o->target into b; for the CUDA target without a
 * device (fl_build_cpu_fallback), p's C instead, once the CUDA compiled
 * (or could not be, for want of nvcc), with the fallback's note.  As
 * fl_build_source. */
static int build_program(const fl_program *p, const fl_run_opts *o,
			 fl_build *b, fl_error *err)
{
	char *src = fl_codegen_target(p, o->target, err);
	fl_run_opts cpu = *o;
	fl_build cuda;
	int rc;

	if (!src)
		return -1;
	rc = fl_build_source(src, o, b, err);
	free(src);
	if (rc < 0 || !fl_build_cpu_fallback(b, o))
		return rc;
	cuda = *b;
	cpu.target = FL_TARGET_CPU;
	src = fl_codegen_c(p, err);
	rc = src ? fl_build_source(src, &cpu, b, err) : -1;
	free(src);
	if (rc == 0)
		fl_build_note_fallback(b, &cuda);
	fl_build_remove(&cuda, o);
	return rc;
}

int fl_run_program(const fl_program *p, const fl_values *ref,
		   const fl_run_opts *opts, fl_run_result *r, fl_error *err)
{
	fl_run_opts dflt, o;
	fl_build b;
	int rc;

	if (!opts) {
		fl_run_opts_default(&dflt);
		opts = &dflt;
	}
	memset(r, 0, sizeof *r);
	if (check_ref(p, ref, err) < 0)
		return -1;
	if (build_program(p, opts, &b, err) < 0)
		return -1;
	rc = fl_run_build(&b, p, ref, opts, r, err);
	o = *opts;
	if (rc == 0 && r->status == FL_RUN_CANCELLED)
		o.keep = false;		/* a cancelled run leaves nothing */
	else if (o.keep && b.workdir[0])
		snprintf(r->workdir, sizeof r->workdir, "%s", b.workdir);
	fl_build_remove(&b, &o);
	return rc;
}

int fl_emit_program(const fl_program *p, const char *path, fl_error *err)
{
	char *src = fl_codegen_c(p, err);
	int rc;

	if (!src)
		return -1;
	rc = fl_run_write_file(path, src, err);
	free(src);
	return rc;
}
