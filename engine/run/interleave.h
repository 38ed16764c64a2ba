/* Interleaved timing (DESIGN 1.6, issue 11): several compiled programs of
 * the same graph -- a ladder's strategies -- timed in ONE test child that
 * has every program's gen.so loaded, so that a difference between them is
 * not the machine's load changing between two runs minutes apart.
 *
 * The child (fl_time_interleaved):
 *   0. a CUDA program (one exporting fl_device_resident, target.h) runs
 *      once with its transfers, then stays on the device: its kernels'
 *      times below are their CUDA-event times, its totals their sums;
 *   1. warm-up: `warmup` untimed rounds of every program;
 *   2. `repeat` rounds; in each, every program's whole run once and one
 *      STREAM-like copy (arrays well over the L3 size; on the kernels'
 *      OpenMP threads, through the first C unit's fl_copy_pass, so that
 *      it does not compete with them for the cores; else memcpy on a
 *      thread per core), in an order that changes every round so that each item
 *      follows every other one equally often (fl_timing_order: a
 *      rotation kept the same neighbours, so one program always ran
 *      right after the copy had flushed the caches): per program the
 *      total and each kernel's time, per round the copy's bandwidth;
 *   3. pairs: each fused kernel of a fusing program (2+ ops) timed
 *      alternately with the baseline (unfused) program's kernels of the
 *      same ops, run back to back as one group: fused, group, fused, ...
 *      after one untimed call of each.
 * Median, quartiles, minimum and maximum of every series, and the same
 * for the *paired ratios*: per round, each program's total over the
 * baseline's total in that round; per alternation, the fused kernel's
 * time over its group's right after it.  The same child/timeout/
 * cancel machinery as the runner (run_impl.h): the child leads its own
 * process group, is killed with it on a timeout (per call), a cancel or an
 * interrupt, and reports through a shared mapping.  With opts->pin the
 * child sets OMP_PROC_BIND=close and OMP_PLACES=cores before it loads any
 * gen.so (so before libgomp initialises) and reports every thread's
 * affinity as the kernel read it (/proc/self/task/N/status).
 *
 * The label rules live here too.  Paired (fl_timing_paired): the two
 * sides ran back to back, under the same load, in every pair; a side is
 * faster (slower) when it was the quicker (slower) one in so many pairs
 * that a coin tossed per pair would do as well less than once in 20 (a
 * one-sided sign test at 5%: 5 of 5, 9 of 10, 15 of 20 ...).  A pause
 * that hits one call moves one pair, not the verdict; a min..max rule
 * would let any one slow call (and every run on a shared machine has
 * some) make every comparison "within noise", more so the more rounds
 * are made.
 * Unpaired (fl_timing_compare, too few pairs, or sides timed apart): a
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
	FL_TIMING_ONE_ROUND,	/* a side was timed once: it has no spread,
				   so no difference can be told from noise */
} fl_timing_label;

/* How a measurement (min..max) compares with a baseline's
 * (base_min..base_max): faster or slower only when the ranges do not
 * overlap.  UNKNOWN when either range is empty (max <= 0) or inverted. */
fl_timing_label fl_timing_compare(double base_min, double base_max,
				  double min, double max);

/* fl_timing_compare when both sides were timed at least twice (n,
 * base_n: their samples); ONE_ROUND when either side has a single time,
 * whose min..max is a point (two points never overlap, so a lone round
 * would be called faster or slower by chance); UNKNOWN when either side
 * was not timed. */
fl_timing_label fl_timing_compare_n(int base_n, double base_min,
				    double base_max, int n, double min,
				    double max);

/* "faster", "SLOWER", "within noise", "one round", "" */
const char *fl_timing_label_name(fl_timing_label l);

/* ---- interleaved timing ------------------------------------------------ */

typedef struct fl_spread {
	double median, min, max;
	double q1, q3;		/* lower and upper quartile */
	int n;			/* samples; 0: not measured */
} fl_spread;

/* Paired ratios, this side's time over the baseline's in the same pair:
 * their spread, and in how many pairs this side was the quicker and the
 * slower one. */
typedef struct fl_ratio {
	fl_spread s;
	int faster, slower;
} fl_ratio;

/* Fewest pairs that can decide the sign test (5 of 5: 1 in 32). */
#define FL_TIMING_MIN_PAIRS 5
/* Its level: a verdict chance would give at most this often. */
#define FL_TIMING_SIGN_LEVEL 0.05

/* The chance that a fair coin tossed n times shows heads k times or
 * more. */
double fl_sign_tail(int n, int k);

/* The paired rule (above); UNKNOWN under FL_TIMING_MIN_PAIRS pairs. */
fl_timing_label fl_timing_paired(const fl_ratio *r);

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
	fl_ratio ratio;		/* fused / base, pair by pair */
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
	fl_ratio *vs_base;	/* per program, its total over the
				   baseline's in the same round; n 0
				   without a baseline */
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

/* Position j of round r's order of m items (0 <= result < m): a
 * Williams design -- round r is 0, 1, m-1, 2, m-2, ... plus r (mod m),
 * and for odd m the rounds m..2m-1 are those reversed -- in which every
 * item comes right after every other one equally often over m rounds
 * (2m for odd m), and each is first once per m rounds. */
int fl_timing_order(int m, int r, int j);

/* The copy probe's array size in bytes for machine L3 size l3: well over
 * the L3 (4x), at least 32 MiB, at most 512 MiB. */
int64_t fl_copy_probe_bytes(int64_t l3);

#endif
