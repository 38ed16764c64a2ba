/* Interleaved timing (DESIGN 1.6, issue 11): several compiled programs of
 * the same graph -- a ladder's strategies -- timed in ONE test child that
 * has every program's gen.so loaded, so that a difference between them is
 * not the machine's load changing between two runs minutes apart.
 *
 * The child (fl_time_interleaved):
 *   1. warm-up: `warmup` untimed rounds of every program;
 *   2. `repeat` rounds; in each, every program's whole run once and one
 *      STREAM-like copy (arrays well over the L3 size, threads on every
 *      core), in an order rotated every round (A B C copy, B C copy A,
 *      ...): per program the total and each kernel's time, per round the
 *      copy's bandwidth;
 *   3. pairs: each fused kernel of a fusing program (2+ ops) timed
 *      alternately with the baseline (unfused) program's kernels of the
 *      same ops, run back to back as one group: fused, group, fused, ...
 *      after one untimed call of each.
 * Median, minimum and maximum of every series.  The same child/timeout/
 * cancel machinery as the runner (run_impl.h): the child leads its own
 * process group, is killed with it on a timeout (per call), a cancel or an
 * interrupt, and reports through a shared mapping.  With opts->pin the
 * child sets OMP_PROC_BIND=close and OMP_PLACES=cores before it loads any
 * gen.so (so before libgomp initialises) and reports every thread's
 * affinity as the kernel read it (/proc/self/task/N/status).
 *
 * The label rule (fl_timing_compare) lives here too: a difference is a
 * difference only when the two min..max ranges do not overlap.
 * Never prints. */
#ifndef FL_INTERLEAVE_H
#define FL_INTERLEAVE_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel.h"
#include "runner.h"

/* ---- labels ------------------------------------------------------------ */

typedef enum fl_timing_label {
	FL_TIMING_UNKNOWN,	/* a side was not measured */
	FL_TIMING_FASTER,	/* its max is below the baseline's min */
	FL_TIMING_SLOWER,	/* its min is above the baseline's max */
	FL_TIMING_NOISE,	/* the ranges overlap: within noise */
} fl_timing_label;

/* How a measurement (min..max) compares with a baseline's
 * (base_min..base_max): faster or slower only when the ranges do not
 * overlap.  UNKNOWN when either range is empty (max <= 0) or inverted. */
fl_timing_label fl_timing_compare(double base_min, double base_max,
				  double min, double max);

/* "faster", "SLOWER", "within noise", "" */
const char *fl_timing_label_name(fl_timing_label l);

/* ---- interleaved timing ------------------------------------------------ */

typedef struct fl_spread {
	double median, min, max;
	int n;			/* samples; 0: not measured */
} fl_spread;

/* One program to time: compiled (so_path) from p; all programs share
 * p->graph's tensor layout or each gets its own buffers. */
typedef struct fl_timed_program {
	const fl_program *p;
	const char *so_path;
	const char *workdir;	/* its work directory: run.log of the
				   timing child goes to the first one's */
	bool baseline;		/* the unfused program: fused kernels of
				   the others are paired with its kernels */
} fl_timed_program;

typedef struct fl_timed_kernel {
	fl_spread round;	/* in the whole-program rounds (seconds) */
	bool paired;		/* timed alternately with the baseline */
	fl_spread fused, base;	/* that alternation (seconds): this kernel,
				   and the baseline's kernels of its ops */
	int n_base;		/* baseline kernels in the group */
	char sequence[40];	/* the first timed calls of the pair, "F"
				   this kernel, "U" the group: "FUFU..." */
} fl_timed_kernel;

typedef struct fl_timing {
	fl_run_status status;	/* OK, CRASH, TIMEOUT, CANCELLED,
				   LOAD_ERROR or NO_MEMORY */
	char message[1024];
	int n;			/* programs */
	fl_spread *total;	/* per program, seconds */
	fl_timed_kernel **kernels;	/* per program, per kernel */
	int rounds;		/* timed rounds (repeat) */
	int *order;		/* rounds x (n + 1): the order of round r is
				   order[r * (n + 1) .. + n]; n is the copy */
	fl_spread copy_gbps;	/* the copy's bandwidth, GB/s (bytes read
				   + written per second) */
	int64_t copy_bytes;	/* bytes read + written by one copy */
	int copy_threads;
	double load_before, load_after;	/* 1-minute load average, -1 */
	bool pinned;		/* opts->pin was set */
	int n_threads;		/* threads of the child after the rounds */
	char affinity[256];	/* each thread's allowed CPUs, e.g. "0 1"
				   (pinned) or "0-1 0-1" */
} fl_timing;

/* Times progs[0..n-1] (see above) with o's warmup, repeat, timeout_s,
 * pin, cancel, interrupt, progress ("time" k of repeat after each round,
 * "pairs" k of the number of pairs) and max_bytes; fed tensors get the
 * interpreter's inputs for seed.  Returns 0 when the child ran (t->status
 * says how it went), -1 on an internal error (message in err).  t is
 * freed with fl_timing_free. */
int fl_time_interleaved(const fl_timed_program *progs, int n,
			const fl_run_opts *o, uint64_t seed, fl_timing *t,
			fl_error *err);
void fl_timing_free(fl_timing *t);

/* The copy probe's array size in bytes for machine L3 size l3: well over
 * the L3 (4x), at least 32 MiB, at most 512 MiB. */
int64_t fl_copy_probe_bytes(int64_t l3);

#endif
