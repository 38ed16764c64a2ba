/* Interleaved timing of several compiled programs in one test child (see
 * interleave.h for what is measured and in which order).
 *
 * Why one child: the machine's load changes over minutes (other builds,
 * other users), so programs timed one after the other in separate
 * children are compared across different machines in effect.  Rotating
 * the order every round spreads a slow stretch over every program, and a
 * fused kernel alternating with its unfused group sees the same load as
 * the group it is compared with.
 *
 * The parent prepares everything the child needs (kernel tables are
 * looked up in the child, after dlopen; buffers are allocated there), so
 * the child never touches the parent's state except to read it.  The
 * child reports through a shared anonymous mapping (like runner.c): a
 * header, then per program its total, per kernel of every program an
 * fl_timed_kernel, then the rounds' order.  It ends with _exit. */
#define _GNU_SOURCE	/* sched_setaffinity, CPU_SET */
#include "interleave.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "interp.h"
#include "machine.h"
#include "run_impl.h"

/* ---- labels ------------------------------------------------------------ */

fl_timing_label fl_timing_compare(double base_min, double base_max,
				  double min, double max)
{
	if (!(base_max > 0) || !(max > 0) || base_min > base_max || min > max)
		return FL_TIMING_UNKNOWN;
	if (max < base_min)
		return FL_TIMING_FASTER;
	if (min > base_max)
		return FL_TIMING_SLOWER;
	return FL_TIMING_NOISE;
}

fl_timing_label fl_timing_compare_n(int base_n, double base_min,
				    double base_max, int n, double min,
				    double max)
{
	if (base_n <= 0 || n <= 0)
		return FL_TIMING_UNKNOWN;
	if (base_n < 2 || n < 2)
		return FL_TIMING_ONE_ROUND;
	return fl_timing_compare(base_min, base_max, min, max);
}

double fl_sign_tail(int n, int k)
{
	double term, sum = 0;

	if (k <= 0)
		return 1;
	if (n <= 0 || k > n)
		return 0;
	if (n > 1000)	/* 2^-n underflows; far more pairs than made */
		return (double)k > 0.5 * n + 1.65 * 0.5 * sqrt(n) ? 0 : 1;
	term = ldexp(1.0, -n);	/* C(n, 0) / 2^n */
	for (int j = 0; j <= n; j++) {
		if (j >= k)
			sum += term;
		term = term * (n - j) / (j + 1);
	}
	return sum;
}

fl_timing_label fl_timing_paired(const fl_ratio *r)
{
	int n = r->faster + r->slower;

	if (r->s.n < FL_TIMING_MIN_PAIRS || n < FL_TIMING_MIN_PAIRS)
		return FL_TIMING_UNKNOWN;
	if (fl_sign_tail(n, r->faster) <= FL_TIMING_SIGN_LEVEL)
		return FL_TIMING_FASTER;
	if (fl_sign_tail(n, r->slower) <= FL_TIMING_SIGN_LEVEL)
		return FL_TIMING_SLOWER;
	return FL_TIMING_NOISE;
}

const char *fl_timing_label_name(fl_timing_label l)
{
	switch (l) {
	case FL_TIMING_FASTER: return "faster";
	case FL_TIMING_SLOWER: return "SLOWER";
	case FL_TIMING_NOISE: return "within noise";
	case FL_TIMING_ONE_ROUND: return "one round";
	case FL_TIMING_UNKNOWN: break;
	}
	return "";
}

int fl_timing_order(int m, int r, int j)
{
	int row = r % (m % 2 ? 2 * m : m), at;

	if (m % 2 && row >= m)	/* the second square: reversed rows */
		j = m - 1 - j;
	at = j == 0 ? 0 : j % 2 ? (j + 1) / 2 : m - j / 2;
	return (at + row) % m;
}

int64_t fl_copy_probe_bytes(int64_t l3)
{
	int64_t b = 4 * (l3 > 0 ? l3 : 0);

	if (b < ((int64_t)32 << 20))
		b = (int64_t)32 << 20;
	if (b > ((int64_t)512 << 20))
		b = (int64_t)512 << 20;
	return b;
}

/* ---- the plan and the shared report ------------------------------------ */

enum { STAGE_START, STAGE_WARMUP, STAGE_ROUNDS, STAGE_PAIRS, STAGE_DONE };
enum { PHASE_TIME = 1, PHASE_PAIRS = 2 };
#define PROGRESS_SHIFT 24

typedef void (*kernel_fn)(float *const *);

typedef struct il_report {
	int stage;
	int status;		/* FL_RUN_OK, LOAD_ERROR or NO_MEMORY */
	int cur_prog, cur_kernel;	/* running now; -1, cur_kernel -1 for
					   the copy */
	atomic_int calls;	/* calls started: the time limit counts
				   from the latest */
	atomic_int progress;	/* (phase << PROGRESS_SHIFT) | k */
	char message[512];
	fl_spread copy;
	int copy_threads;	/* the copy's threads (the kernels' team
				   when a unit has the copy pass) */
	int n_threads;
	char affinity[256];
} il_report;

typedef struct il_plan {
	const fl_timed_program *progs;
	int n;
	fl_run_opts o;
	uint64_t seed;
	int rounds;
	int64_t copy_bytes;
	char log_path[640];
	int *layout;		/* per program: the program whose buffers it
				   uses (itself, or an earlier one with the
				   same tensor sizes) */
	int *first_kernel;	/* per program: its first fl_timed_kernel */
	int total_kernels;
	int **group;		/* per timed kernel: the baseline kernels of
				   its ops, NULL when unpaired */
	int *n_group;
	int baseline;		/* its program, -1 */
	int n_pairs;
	/* in the shared mapping */
	il_report *rep;
	fl_spread *total;
	fl_ratio *vs_base;
	fl_timed_kernel *kern;
	int *order;
	size_t map_size;
} il_plan;

static int64_t numel(const fl_program *p, int t)
{
	return fl_shape_numel(&p->graph->tensors[t].shape);
}

/* Whether programs a and b index tensors of the same sizes (one set of
 * buffers serves both). */
static bool same_layout(const fl_program *a, const fl_program *b)
{
	if (a->graph == b->graph)
		return true;
	if (a->graph->n_tensors != b->graph->n_tensors)
		return false;
	for (int t = 0; t < a->graph->n_tensors; t++)
		if (numel(a, t) != numel(b, t))
			return false;
	return true;
}

/* The baseline's kernels covering kernel kn's ops, in the baseline's
 * order, into out; -1 when an op has none or the layouts differ. */
static int base_group(const il_plan *pl, const fl_kernel *kn, int *out)
{
	const fl_program *b = pl->progs[pl->baseline].p;
	int n = 0;

	for (int k = 0; k < b->n_kernels; k++) {
		bool hit = false;

		for (int i = 0; i < b->kernels[k].n_ops && !hit; i++)
			for (int j = 0; j < kn->n_ops && !hit; j++)
				hit = b->kernels[k].ops[i] == kn->ops[j];
		if (hit)
			out[n++] = k;
	}
	for (int j = 0; j < kn->n_ops; j++) {
		bool found = false;

		for (int g = 0; g < n && !found; g++)
			for (int i = 0; i < b->kernels[out[g]].n_ops; i++)
				found |= b->kernels[out[g]].ops[i] == kn->ops[j];
		if (!found)
			return -1;
	}
	return n;
}

static void plan_free(il_plan *pl)
{
	for (int k = 0; pl->group && k < pl->total_kernels; k++)
		free(pl->group[k]);
	free(pl->group);
	free(pl->n_group);
	free(pl->layout);
	free(pl->first_kernel);
	if (pl->rep)
		munmap(pl->rep, pl->map_size);
}

/* The pairs: each kernel of 2+ ops of a non-baseline program whose ops
 * the baseline covers. */
static int plan_pairs(il_plan *pl)
{
	for (int i = 0; i < pl->n && pl->baseline >= 0; i++) {
		const fl_program *p = pl->progs[i].p;

		if (i == pl->baseline ||
		    pl->layout[i] != pl->layout[pl->baseline])
			continue;
		for (int k = 0; k < p->n_kernels; k++) {
			int idx = pl->first_kernel[i] + k, n;
			int *g;

			if (p->kernels[k].n_ops < 2)
				continue;
			g = calloc((size_t)pl->progs[pl->baseline].p->n_kernels + 1,
				   sizeof *g);
			if (!g)
				return -1;
			n = base_group(pl, &p->kernels[k], g);
			if (n <= 0) {
				free(g);
				continue;
			}
			pl->group[idx] = g;
			pl->n_group[idx] = n;
			pl->n_pairs++;
		}
	}
	return 0;
}

/* The shared mapping: header, totals, their ratios to the baseline's,
 * kernels, order. */
static int plan_map(il_plan *pl, fl_error *err)
{
	size_t off_total = (sizeof(il_report) + 63) & ~(size_t)63;
	size_t off_ratio = off_total + (size_t)pl->n * sizeof(fl_spread);
	size_t off_kern = off_ratio + (size_t)pl->n * sizeof(fl_ratio);
	size_t off_order = off_kern +
			   (size_t)pl->total_kernels * sizeof(fl_timed_kernel);
	void *m;

	pl->map_size = off_order + (size_t)(pl->rounds + 1) *
				   (size_t)(pl->n + 1) * sizeof(int);
	m = mmap(NULL, pl->map_size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		fl_error_set(err, "mmap: %s", strerror(errno));
		return -1;
	}
	memset(m, 0, pl->map_size);
	pl->rep = m;
	pl->total = (fl_spread *)(void *)((char *)m + off_total);
	pl->vs_base = (fl_ratio *)(void *)((char *)m + off_ratio);
	pl->kern = (fl_timed_kernel *)(void *)((char *)m + off_kern);
	pl->order = (int *)(void *)((char *)m + off_order);
	atomic_init(&pl->rep->calls, 0);
	atomic_init(&pl->rep->progress, 0);
	pl->rep->cur_prog = pl->rep->cur_kernel = -1;
	return 0;
}

static int plan_init(il_plan *pl, const fl_timed_program *progs, int n,
		     const fl_run_opts *o, uint64_t seed, fl_error *err)
{
	memset(pl, 0, sizeof *pl);
	pl->progs = progs;
	pl->n = n;
	pl->o = *o;
	pl->seed = seed;
	pl->rounds = o->repeat > 0 ? o->repeat : 0;
	pl->baseline = -1;
	pl->copy_bytes = fl_copy_probe_bytes(fl_machine_host()->l3);
	pl->layout = calloc((size_t)n + 1, sizeof *pl->layout);
	pl->first_kernel = calloc((size_t)n + 1, sizeof *pl->first_kernel);
	if (!pl->layout || !pl->first_kernel)
		goto oom;
	for (int i = 0; i < n; i++) {
		pl->layout[i] = i;
		for (int j = 0; j < i && pl->layout[i] == i; j++)
			if (pl->layout[j] == j && same_layout(progs[j].p, progs[i].p))
				pl->layout[i] = j;
		pl->first_kernel[i] = pl->total_kernels;
		pl->total_kernels += progs[i].p->n_kernels;
		if (progs[i].baseline && pl->baseline < 0)
			pl->baseline = i;
	}
	pl->group = calloc((size_t)pl->total_kernels + 1, sizeof *pl->group);
	pl->n_group = calloc((size_t)pl->total_kernels + 1, sizeof *pl->n_group);
	if (!pl->group || !pl->n_group || plan_pairs(pl) < 0)
		goto oom;
	fl_run_path(progs[0].workdir, "timing.log", pl->log_path,
		    sizeof pl->log_path);
	return plan_map(pl, err);
oom:
	fl_error_set(err, "out of memory");
	return -1;
}

/* Bytes of every distinct set of buffers plus the copy's two arrays. */
static int64_t bytes_needed(const il_plan *pl)
{
	int64_t b = 2 * pl->copy_bytes;

	for (int i = 0; i < pl->n; i++)
		if (pl->layout[i] == i)
			for (int t = 0; t < pl->progs[i].p->graph->n_tensors; t++)
				b += 4 * (numel(pl->progs[i].p, t) + 1);
	return b;
}

/* ---- the child --------------------------------------------------------- */

static void enter(il_report *rep, int prog, int kernel)
{
	rep->cur_prog = prog;
	rep->cur_kernel = kernel;
	atomic_fetch_add_explicit(&rep->calls, 1, memory_order_relaxed);
}

static void progress(il_report *rep, int phase, int k)
{
	atomic_store_explicit(&rep->progress, (phase << PROGRESS_SHIFT) | k,
			      memory_order_relaxed);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The q-quantile of sorted v[0..n-1], interpolated between ranks. */
static double quantile(const double *v, int n, double q)
{
	double at = q * (n - 1);
	int lo = (int)at;

	return lo + 1 < n ? v[lo] + (at - lo) * (v[lo + 1] - v[lo]) : v[lo];
}

/* Median, quartiles, minimum and maximum of v[0..n-1] (sorted in
 * place). */
static fl_spread spread_of(double *v, int n)
{
	fl_spread s = {0, 0, 0, 0, 0, 0};

	if (n <= 0)
		return s;
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	s.median = quantile(v, n, 0.5);
	s.q1 = quantile(v, n, 0.25);
	s.q3 = quantile(v, n, 0.75);
	s.min = v[0];
	s.max = v[n - 1];
	s.n = n;
	return s;
}

/* a[i] / b[i] for i < n, into ratio (a and b are left alone; scratch
 * holds n values). */
static fl_ratio ratio_of(const double *a, const double *b, int n,
			 double *scratch)
{
	fl_ratio r = {{0, 0, 0, 0, 0, 0}, 0, 0};
	int m = 0;

	for (int i = 0; i < n; i++)
		if (a[i] > 0 && b[i] > 0) {
			scratch[m++] = a[i] / b[i];
			r.faster += a[i] < b[i];
			r.slower += a[i] > b[i];
		}
	r.s = spread_of(scratch, m);
	return r;
}

/* The CPUs the child may run on, read before libgomp binds anything. */
static cpu_set_t child_cpus;

/* One copy thread's share. */
typedef struct copy_part {
	float *dst;
	const float *src;
	size_t n;
	int cpu;		/* pin to it, -1: not pinned */
} copy_part;

static void *copy_thread(void *arg)
{
	copy_part *c = arg;

	if (c->cpu >= 0) {
		cpu_set_t s;

		CPU_ZERO(&s);
		CPU_SET(c->cpu, &s);
		sched_setaffinity(0, sizeof s, &s);
	}
	memcpy(c->dst, c->src, c->n * sizeof(float));
	return NULL;
}

/* A C unit's fl_copy_pass: the copy on the unit's OpenMP threads. */
typedef int (*copy_pass_fn)(float *dst, const float *src, long n);

/* The copy probe's arrays and threads. */
typedef struct copy_probe {
	float *src, *dst;
	size_t n;		/* floats per array */
	int threads;
	int cpus[64];
	copy_pass_fn pass;	/* a loaded unit's, else NULL: threads of
				   the probe's own run memcpy */
	int team;		/* threads of the last pass */
} copy_probe;

static bool copy_init(copy_probe *cp, const il_plan *pl)
{
	cp->n = (size_t)(pl->copy_bytes / 4);
	cp->src = malloc(cp->n * sizeof(float));
	cp->dst = malloc(cp->n * sizeof(float));
	if (!cp->src || !cp->dst)
		return false;
	for (size_t i = 0; i < cp->n; i++)	/* touch every page */
		cp->src[i] = (float)(i & 1023);
	memset(cp->dst, 0, cp->n * sizeof(float));
	cp->threads = 0;
	for (int c = 0; c < CPU_SETSIZE && cp->threads < 64; c++)
		if (CPU_ISSET(c, &child_cpus))
			cp->cpus[cp->threads++] = c;
	if (cp->threads == 0)
		cp->cpus[cp->threads++] = -1;
	return true;
}

/* One copy of the whole array by every thread; seconds.  On the kernels'
 * OpenMP threads when a loaded unit has the copy pass: threads of the
 * probe's own would compete for the cores with the team's threads, which
 * spin for a while after each kernel (2 cores: 16 GB/s against 20-25). */
static double copy_once(copy_probe *cp, bool pin)
{
	pthread_t th[64];
	copy_part part[64];
	size_t chunk = cp->n / (size_t)cp->threads;
	double t0 = fl_now();
	bool started[64] = {false};

	if (cp->pass) {
		cp->team = cp->pass(cp->dst, cp->src, (long)cp->n);
		return fl_now() - t0;
	}
	cp->team = cp->threads;

	for (int i = 0; i < cp->threads; i++) {
		size_t lo = (size_t)i * chunk;

		part[i].dst = cp->dst + lo;
		part[i].src = cp->src + lo;
		part[i].n = i == cp->threads - 1 ? cp->n - lo : chunk;
		/* the calling thread keeps the binding libgomp gave it */
		part[i].cpu = pin && i > 0 ? cp->cpus[i] : -1;
		started[i] = i > 0 &&
			     pthread_create(&th[i], NULL, copy_thread,
					    &part[i]) == 0;
	}
	copy_thread(&part[0]);	/* the calling thread does the first part */
	for (int i = 1; i < cp->threads; i++)
		if (started[i])
			pthread_join(th[i], NULL);
		else
			copy_thread(&part[i]);
	return fl_now() - t0;
}

/* The interpreter's input values of typed tensor t, packed into mem as
 * the generated code declares it (mem keeps zeros when memory runs
 * out: the timing runs do not check values). */
static void fill_packed(const fl_graph *g, int t, uint64_t seed, fl_buf *b,
			void *mem)
{
	int64_t n = fl_shape_numel(&b->shape);

	b->data = NULL;
	b->ints = malloc((size_t)(n ? n : 1) * sizeof *b->ints);
	if (!b->ints)
		return;
	fl_interp_fill_input(g, t, seed, b);
	fl_dtype_pack(b->dtype, b->ints, mem, n);
	free(b->ints);
}

/* A 16-bit float tensor's inputs: the interpreter's floats, packed. */
static void fill_half(const fl_graph *g, int t, uint64_t seed, fl_buf *b,
		      void *mem)
{
	int64_t n = fl_shape_numel(&b->shape);

	b->data = malloc((size_t)(n ? n : 1) * sizeof *b->data);
	if (!b->data)
		return;
	fl_interp_fill_input(g, t, seed, b);
	fl_dtype_pack_floats(b->dtype, b->data, mem, n);
	free(b->data);
}

/* Every tensor of program i's graph: fed tensors with the interpreter's
 * inputs, the rest zero (the warm-up writes them before they are read). */
static float **child_buffers(const il_plan *pl, int i)
{
	const fl_graph *g = pl->progs[i].p->graph;
	float **bufs = calloc((size_t)g->n_tensors + 1, sizeof *bufs);

	for (int t = 0; bufs && t < g->n_tensors; t++) {
		const fl_tensor *x = &g->tensors[t];
		int64_t n = numel(pl->progs[i].p, t);
		void *mem = NULL;
		fl_buf b;

		size_t bytes = (size_t)(n ? n : 1) *
			       (size_t)fl_dtype_size(x->dtype);

		if (posix_memalign(&mem, 64, bytes))
			return NULL;	/* the child exits: no need to free */
		bufs[t] = mem;
		memset(mem, 0, bytes);
		if (x->role != FL_ROLE_INPUT && x->role != FL_ROLE_PARAM &&
		    x->role != FL_ROLE_CONST)
			continue;
		b = (fl_buf){.shape = x->shape, .data = mem, .dtype = x->dtype};
		if (fl_dtype_is_int(x->dtype)) {
			fill_packed(g, t, pl->seed, &b, mem);
			continue;
		}
		if (fl_dtype_is_half(x->dtype)) {
			fill_half(g, t, pl->seed, &b, mem);
			continue;
		}
		fl_interp_fill_input(g, t, pl->seed, &b);
	}
	return bufs;
}

/* Loads program i's gen.so; its kernel table, or NULL with the report
 * filled.  A CUDA unit's device entry points into *dev; a C unit's copy
 * pass into *copy when that has none yet (a CUDA unit has none). */
static kernel_fn *child_load(const il_plan *pl, int i, fl_device_syms *dev,
			     copy_pass_fn *copy)
{
	void *h = dlopen(pl->progs[i].so_path, RTLD_NOW | RTLD_LOCAL);
	const int *n;
	kernel_fn *table;

	if (!h) {
		pl->rep->status = FL_RUN_LOAD_ERROR;
		snprintf(pl->rep->message, sizeof pl->rep->message,
			 "dlopen: %s", dlerror());
		return NULL;
	}
	n = dlsym(h, "fl_n_kernels");
	table = dlsym(h, "fl_kernels");
	if (!n || !table || *n != pl->progs[i].p->n_kernels) {
		pl->rep->status = FL_RUN_LOAD_ERROR;
		snprintf(pl->rep->message, sizeof pl->rep->message,
			 "%s does not export the %d kernels of its program",
			 pl->progs[i].so_path, pl->progs[i].p->n_kernels);
		return NULL;
	}
	for (int k = 0; k < *n; k++)
		if (!table[k]) {
			pl->rep->status = FL_RUN_LOAD_ERROR;
			snprintf(pl->rep->message, sizeof pl->rep->message,
				 "kernel %d of %s is NULL", k,
				 pl->progs[i].so_path);
			return NULL;
		}
	fl_run_device_syms(h, dev);
	if (!*copy) {
		void *sym = dlsym(h, "fl_copy_pass");

		memcpy(copy, &sym, sizeof *copy);	/* object to function */
	}
	return table;
}

/* What the child holds while it times. */
typedef struct il_child {
	const il_plan *pl;
	kernel_fn **table;	/* per program */
	fl_device_syms *dev;	/* per program: a CUDA unit's device
				   entry points (its kernels' times are
				   device times) */
	float ***bufs;		/* per program (shared by equal layouts) */
	double *samples;	/* per timed kernel, rounds */
	double *totals;		/* per program, rounds */
	double *copies;		/* rounds */
	copy_probe cp;
} il_child;

/* Runs program i once; its total in seconds, each kernel's time into
 * ks[kernel * stride] when ks is given.  A CUDA program's times are
 * device times (fl_run_timed_call), its total their sum. */
static double run_program(il_child *c, int i, double *ks, int stride)
{
	const fl_program *p = c->pl->progs[i].p;
	double t0 = fl_now(), sum = 0.0;

	for (int k = 0; k < p->n_kernels; k++) {
		double s;

		enter(c->pl->rep, i, k);
		s = fl_run_timed_call(c->table[i][k], c->bufs[i], &c->dev[i]);
		sum += s;
		if (ks)
			ks[(size_t)k * (size_t)stride] = s;
	}
	/* on the GPU the program's time is its kernels' device time */
	return c->dev[i].resident ? sum : fl_now() - t0;
}

/* Item `item` of a round: program item, or the copy when item == n. */
static void round_item(il_child *c, int item, int r, bool timed)
{
	const il_plan *pl = c->pl;

	if (item == pl->n) {
		double s;

		enter(pl->rep, -1, -1);
		s = copy_once(&c->cp, pl->o.pin);
		if (timed)
			c->copies[r] = s > 0 ? 2.0 * (double)pl->copy_bytes /
						       s / 1e9 : 0.0;
		return;
	}
	if (!timed) {
		run_program(c, item, NULL, 0);
		return;
	}
	c->totals[(size_t)item * (size_t)pl->rounds + (size_t)r] =
		run_program(c, item, c->samples + (size_t)pl->first_kernel[item] *
					     (size_t)pl->rounds + (size_t)r,
			    pl->rounds);
}

/* Warm-up rounds, then the timed rounds in fl_timing_order's order. */
static void child_rounds(il_child *c)
{
	const il_plan *pl = c->pl;
	int m = pl->n + 1;

	pl->rep->stage = STAGE_WARMUP;
	progress(pl->rep, PHASE_TIME, 0);
	for (int w = 0; w < pl->o.warmup; w++)
		for (int j = 0; j < m; j++)
			round_item(c, fl_timing_order(m, w, j), 0, false);
	pl->rep->stage = STAGE_ROUNDS;
	for (int r = 0; r < pl->rounds; r++) {
		for (int j = 0; j < m; j++) {
			int item = fl_timing_order(m, r, j);

			pl->order[r * m + j] = item;
			round_item(c, item, r, true);
		}
		progress(pl->rep, PHASE_TIME, r + 1);
	}
	for (int i = 0; i < pl->n && pl->baseline >= 0; i++)
		pl->vs_base[i] = ratio_of(c->totals + (size_t)i *
					  (size_t)pl->rounds, c->totals +
					  (size_t)pl->baseline *
					  (size_t)pl->rounds, pl->rounds,
					  c->copies + pl->rounds);
	for (int i = 0; i < pl->n; i++) {
		pl->total[i] = spread_of(c->totals + (size_t)i * (size_t)pl->rounds,
					 pl->rounds);
		for (int k = 0; k < pl->progs[i].p->n_kernels; k++) {
			int idx = pl->first_kernel[i] + k;

			pl->kern[idx].round = spread_of(
				c->samples + (size_t)idx * (size_t)pl->rounds,
				pl->rounds);
		}
	}
	pl->rep->copy = spread_of(c->copies, pl->rounds);
	pl->rep->copy_threads = c->cp.team;
}

/* The baseline's group of timed kernel idx, run back to back; seconds. */
static double run_group(il_child *c, int idx)
{
	const il_plan *pl = c->pl;
	int b = pl->baseline;
	double t0 = fl_now(), sum = 0.0;

	for (int g = 0; g < pl->n_group[idx]; g++) {
		enter(pl->rep, b, pl->group[idx][g]);
		sum += fl_run_timed_call(c->table[b][pl->group[idx][g]],
					 c->bufs[b], &c->dev[b]);
	}
	return c->dev[b].resident ? sum : fl_now() - t0;
}

/* Kernel k of program i alternating with its baseline group. */
static void child_pair(il_child *c, int i, int k, double *fs, double *us)
{
	const il_plan *pl = c->pl;
	int idx = pl->first_kernel[i] + k;
	fl_timed_kernel *tk = &pl->kern[idx];
	size_t len = 0;

	enter(pl->rep, i, k);	/* one untimed call of each */
	c->table[i][k](c->bufs[i]);
	run_group(c, idx);
	for (int r = 0; r < pl->rounds; r++) {
		enter(pl->rep, i, k);
		fs[r] = fl_run_timed_call(c->table[i][k], c->bufs[i],
					  &c->dev[i]);
		if (len + 1 < sizeof tk->sequence)
			tk->sequence[len++] = 'F';
		us[r] = run_group(c, idx);
		if (len + 1 < sizeof tk->sequence)
			tk->sequence[len++] = 'U';
	}
	tk->sequence[len] = '\0';
	tk->paired = true;
	tk->n_base = pl->n_group[idx];
	tk->ratio = ratio_of(fs, us, pl->rounds, fs + pl->rounds);
	tk->fused = spread_of(fs, pl->rounds);
	tk->base = spread_of(us, pl->rounds);
}

static void child_pairs(il_child *c)
{
	const il_plan *pl = c->pl;
	double *fs = calloc(2 * (size_t)pl->rounds + 1, sizeof *fs);
	double *us = calloc((size_t)pl->rounds + 1, sizeof *us);
	int done = 0;

	pl->rep->stage = STAGE_PAIRS;
	if (!fs || !us || pl->rounds == 0)
		goto out;
	for (int i = 0; i < pl->n; i++)
		for (int k = 0; k < pl->progs[i].p->n_kernels; k++) {
			if (!pl->group[pl->first_kernel[i] + k])
				continue;
			child_pair(c, i, k, fs, us);
			progress(pl->rep, PHASE_PAIRS, ++done);
		}
out:
	free(fs);
	free(us);
}

/* Every thread's allowed CPUs, as the kernel has them. */
static void child_affinity(il_report *rep)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	size_t len = 0;

	rep->n_threads = 0;
	rep->affinity[0] = '\0';
	while (d && (e = readdir(d))) {
		char path[300], line[256];
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/status",
			 e->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof line, f))
			if (!strncmp(line, "Cpus_allowed_list:", 18)) {
				char *v = line + 18;

				v += strspn(v, " \t");
				v[strcspn(v, "\n")] = '\0';
				if (len + strlen(v) + 2 < sizeof rep->affinity)
					len += (size_t)snprintf(
						rep->affinity + len,
						sizeof rep->affinity - len, "%s%s",
						len ? " " : "", v);
				rep->n_threads++;
			}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
}

static void child_fail(il_report *rep, int status, const char *msg)
	__attribute__((noreturn));

static void child_fail(il_report *rep, int status, const char *msg)
{
	rep->status = status;
	snprintf(rep->message, sizeof rep->message, "%s", msg);
	_exit(1);
}

/* Each CUDA program run once with uploads and downloads, so that its
 * device copies hold the inputs, then kept on the device: what is timed
 * is the kernels, not the transfers (target.h). */
static void child_device_resident(il_child *c)
{
	for (int i = 0; i < c->pl->n; i++) {
		if (!c->dev[i].resident)
			continue;
		run_program(c, i, NULL, 0);
		*c->dev[i].resident = 1;
	}
}

static void child_main(const il_plan *pl) __attribute__((noreturn));

static void child_main(const il_plan *pl)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
	il_child c;
	int rounds = pl->rounds > 0 ? pl->rounds : 1;

	fl_run_child_setup(pl->log_path);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		signal(sigs[i], SIG_DFL);	/* a crash ends the child */
	CPU_ZERO(&child_cpus);
	sched_getaffinity(0, sizeof child_cpus, &child_cpus);
	if (pl->o.pin) {	/* before libgomp loads with the first gen.so */
		setenv("OMP_PROC_BIND", "close", 1);
		setenv("OMP_PLACES", "cores", 1);
	}
	memset(&c, 0, sizeof c);
	c.pl = pl;
	c.table = calloc((size_t)pl->n + 1, sizeof *c.table);
	c.bufs = calloc((size_t)pl->n + 1, sizeof *c.bufs);
	c.dev = calloc((size_t)pl->n + 1, sizeof *c.dev);
	c.samples = calloc((size_t)(pl->total_kernels + 1) * (size_t)rounds,
			   sizeof *c.samples);
	c.totals = calloc((size_t)(pl->n + 1) * (size_t)rounds,
			  sizeof *c.totals);
	/* the copies' bandwidths, then room for one series of ratios */
	c.copies = calloc(2 * (size_t)rounds + 1, sizeof *c.copies);
	if (!c.table || !c.bufs || !c.dev || !c.samples || !c.totals || !c.copies ||
	    !copy_init(&c.cp, pl))
		child_fail(pl->rep, FL_RUN_NO_MEMORY, "the timing process ran "
			   "out of memory");
	for (int i = 0; i < pl->n; i++) {
		if (!(c.table[i] = child_load(pl, i, &c.dev[i], &c.cp.pass)))
			_exit(1);
		c.bufs[i] = pl->layout[i] == i ? child_buffers(pl, i)
					       : c.bufs[pl->layout[i]];
		if (!c.bufs[i])
			child_fail(pl->rep, FL_RUN_NO_MEMORY, "the timing "
				   "process ran out of memory allocating the "
				   "graph's tensors");
	}
	child_device_resident(&c);
	pl->rep->cur_prog = -1;
	child_rounds(&c);
	child_pairs(&c);
	child_affinity(pl->rep);
	pl->rep->cur_prog = pl->rep->cur_kernel = -1;
	pl->rep->status = FL_RUN_OK;
	pl->rep->stage = STAGE_DONE;
	_exit(0);
}

/* ---- the parent -------------------------------------------------------- */

typedef struct il_poll {
	const il_plan *pl;
	int last_calls, last_progress;
} il_poll;

static bool poll_child(void *user)
{
	il_poll *pp = user;
	const il_plan *pl = pp->pl;
	int calls = atomic_load_explicit(&pl->rep->calls, memory_order_relaxed);
	int v = atomic_load_explicit(&pl->rep->progress, memory_order_relaxed);
	bool started = calls != pp->last_calls;

	pp->last_calls = calls;
	if (v != pp->last_progress && v != 0) {
		int phase = v >> PROGRESS_SHIFT;
		int k = v & ((1 << PROGRESS_SHIFT) - 1);

		pp->last_progress = v;
		if (phase == PHASE_TIME)
			fl_run_progress(&pl->o, "time", k, pl->rounds);
		else
			fl_run_progress(&pl->o, "pairs", k, pl->n_pairs);
	}
	return started;
}

/* " in kernel fl_k2 of xla" or " in the copy probe". */
static void where(const il_plan *pl, char *buf, size_t n)
{
	const il_report *rep = pl->rep;

	buf[0] = '\0';
	if (rep->stage < STAGE_WARMUP || rep->stage == STAGE_DONE)
		return;
	if (rep->cur_prog < 0)
		snprintf(buf, n, " in the copy probe");
	else if (rep->cur_prog < pl->n && rep->cur_kernel >= 0 &&
		 rep->cur_kernel < pl->progs[rep->cur_prog].p->n_kernels)
		snprintf(buf, n, " in kernel %s of %s",
			 pl->progs[rep->cur_prog].p->kernels[rep->cur_kernel].name,
			 fl_strategy_name(pl->progs[rep->cur_prog].p->strategy));
}

static void set_msg(fl_timing *t, const char *what, const char *at)
{
	snprintf(t->message, sizeof t->message, "%s%s (interleaved timing)",
		 what, at);
}

/* The child's end (wait_rc: FL_WAIT_*) as t's status and message. */
static void collect_status(const il_plan *pl, int wait_rc, int status,
			   fl_timing *t)
{
	char at[300], what[200];

	where(pl, at, sizeof at);
	if (wait_rc == FL_WAIT_CANCELLED) {
		t->status = FL_RUN_CANCELLED;
		set_msg(t, "cancelled", at);
	} else if (wait_rc == FL_WAIT_TIMEOUT) {
		t->status = FL_RUN_TIMEOUT;
		snprintf(what, sizeof what, "a call did not finish within %d s",
			 pl->o.timeout_s > 0 ? pl->o.timeout_s : 60);
		set_msg(t, what, at);
	} else if (WIFSIGNALED(status)) {
		t->status = FL_RUN_CRASH;
		snprintf(what, sizeof what, "the timing process died of signal "
			 "%d", WTERMSIG(status));
		set_msg(t, what, at);
	} else if (pl->rep->stage != STAGE_DONE) {
		t->status = pl->rep->status != FL_RUN_OK ? pl->rep->status
							 : FL_RUN_CRASH;
		snprintf(t->message, sizeof t->message, "%s",
			 pl->rep->message[0] ? pl->rep->message
					     : "the timing process exited early");
	} else {
		t->status = FL_RUN_OK;
	}
}

/* Copies the report out of the mapping into t. */
static int collect(const il_plan *pl, fl_timing *t)
{
	int m = pl->n + 1;

	t->n = pl->n;
	t->rounds = pl->rounds;
	t->total = calloc((size_t)pl->n + 1, sizeof *t->total);
	t->vs_base = calloc((size_t)pl->n + 1, sizeof *t->vs_base);
	t->kernels = calloc((size_t)pl->n + 1, sizeof *t->kernels);
	t->order = calloc((size_t)(pl->rounds + 1) * (size_t)m, sizeof *t->order);
	if (!t->total || !t->vs_base || !t->kernels || !t->order)
		return -1;
	memcpy(t->order, pl->order, (size_t)pl->rounds * (size_t)m * sizeof(int));
	for (int i = 0; i < pl->n; i++) {
		int nk = pl->progs[i].p->n_kernels;

		t->total[i] = pl->total[i];
		t->vs_base[i] = pl->vs_base[i];
		t->kernels[i] = calloc((size_t)nk + 1, sizeof **t->kernels);
		if (!t->kernels[i])
			return -1;
		memcpy(t->kernels[i], pl->kern + pl->first_kernel[i],
		       (size_t)nk * sizeof **t->kernels);
	}
	t->copy_gbps = pl->rep->copy;
	if (pl->rep->copy_threads > 0)
		t->copy_threads = pl->rep->copy_threads;
	t->copy_bytes = 2 * pl->copy_bytes;
	t->n_threads = pl->rep->n_threads;
	snprintf(t->affinity, sizeof t->affinity, "%s", pl->rep->affinity);
	return 0;
}

void fl_timing_free(fl_timing *t)
{
	if (!t)
		return;
	for (int i = 0; t->kernels && i < t->n; i++)
		free(t->kernels[i]);
	free(t->kernels);
	free(t->total);
	free(t->vs_base);
	free(t->order);
	memset(t, 0, sizeof *t);
}

/* Forks the child and waits for it. */
static int run(il_plan *pl, fl_timing *t, fl_error *err)
{
	il_poll pp = {pl, 0, 0};
	int status = 0, rc;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fl_error_set(err, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0)
		child_main(pl);
	rc = fl_run_wait(pid, pl->o.timeout_s > 0 ? pl->o.timeout_s : 60,
			 &pl->o, poll_child, &pp, &status);
	if (rc < 0) {
		fl_error_set(err, "waiting for the timing process: %s",
			     strerror(errno));
		return -1;
	}
	if (rc == FL_WAIT_EXITED)
		poll_child(&pp);
	collect_status(pl, rc, status, t);
	return 0;
}

/* Threads the copy probe uses: one per CPU this process may run on (the
 * child inherits the set), at most 64. */
static int copy_threads(void)
{
	cpu_set_t cpus;

	CPU_ZERO(&cpus);
	if (sched_getaffinity(0, sizeof cpus, &cpus) < 0)
		return 1;
	return CPU_COUNT(&cpus) < 64 ? CPU_COUNT(&cpus) : 64;
}

int fl_time_interleaved(const fl_timed_program *progs, int n,
			const fl_run_opts *o, uint64_t seed, fl_timing *t,
			fl_error *err)
{
	il_plan pl;
	int rc = -1;

	memset(t, 0, sizeof *t);
	t->pinned = o->pin;
	t->load_before = fl_machine_load();
	if (n <= 0) {
		t->status = FL_RUN_OK;
		t->load_after = t->load_before;
		return 0;
	}
	if (plan_init(&pl, progs, n, o, seed, err) < 0)
		goto out;
	t->copy_threads = copy_threads();
	if (o->max_bytes > 0 && bytes_needed(&pl) > o->max_bytes) {
		t->status = FL_RUN_NO_MEMORY;
		snprintf(t->message, sizeof t->message, "not timed: the "
			 "interleaved timing needs %lld bytes, more than the "
			 "limit of %lld", (long long)bytes_needed(&pl),
			 (long long)o->max_bytes);
		rc = 0;
		goto out;
	}
	if (fl_run_cancelled(o)) {
		t->status = FL_RUN_CANCELLED;
		snprintf(t->message, sizeof t->message, "cancelled before the "
			 "interleaved timing");
		rc = 0;
		goto out;
	}
	rc = run(&pl, t, err);
	if (rc == 0 && collect(&pl, t) < 0) {
		fl_timing_free(t);
		fl_error_set(err, "out of memory");
		rc = -1;
	}
out:
	t->load_after = fl_machine_load();
	plan_free(&pl);
	return rc;
}
