/* Interleaved timing for make bench: the contenders of one comparison
 * (fuselab's kernel and oneDNN's on the same shape; a bare matmul and
 * the same matmul with a fused epilogue) are run in turn, A B A B ...,
 * so that a change in the machine's load (five people compile on it)
 * falls on all of them alike, instead of one after the other.  The order
 * inside a round alternates (A B, then B A, ...) so that neither always
 * runs on the caches the other just warmed; with three or more the
 * order also rotates every two rounds (A B C, C B A, B C A, A C B, ...),
 * so that each contender runs in every position and after every other
 * one alike -- in A B C, C B A, ... alone, B never runs twice in a row
 * while A and C do at every turn, on caches they warmed themselves
 * (measured: a dense + GELU program in the middle looked 17% slower
 * than the bare matmul it shares nothing with).  Each contender is called
 * once untimed first (warm-up: page faults, the OpenMP pool, oneDNN's
 * primitive caches).  Repeats go on until every contender has run
 * `min_reps` times and the comparison has used its time budget, or
 * `max_reps` rounds. */
#ifndef FL_BENCH_INTERLEAVE_H
#define FL_BENCH_INTERLEAVE_H

#define IL_MAX 4

typedef struct il_contender {
	void (*call)(void *ctx);
	void *ctx;
	/* Instead of call, when set: a contender that times itself (a peer
	 * in another process, whose pipe's round trip is not its time)
	 * returns its seconds; a negative return falls back to the time
	 * measured around it. */
	double (*timed)(void *ctx);
} il_contender;

/* Seconds of one contender's calls: median, fastest, slowest; and,
 * round by round, its time over contender 0's in the same round: the
 * median of those ratios and the rounds it was quicker and slower in
 * (for contender 0 itself: 1, 0, 0). */
typedef struct il_stat {
	double median, min, max;
	int n;
	double ratio;
	int quicker, slower;
} il_stat;

typedef struct il_plan {
	int min_reps, max_reps;
	double budget_s;	/* wall time of the timed rounds, all
				   contenders together */
} il_plan;

/* Times c[0..n-1] (n <= IL_MAX) interleaved; their statistics in
 * out[0..n-1].  Returns the rounds made, or -1 when out of memory. */
int il_measure(const il_contender *c, int n, const il_plan *plan,
	       il_stat *out);

/* Whether a and b differ beyond their spread: their [min, max] ranges
 * do not overlap.  The benchmarks call a difference inside the spread
 * "within noise", never a speedup. */
int il_distinct(const il_stat *a, const il_stat *b);

/* Whether s differs from contender 0 by the sign test over the rounds
 * (the engine's paired rule, fl_timing_paired: quicker, or slower, in so
 * many rounds that chance would do it under 1 time in 20). */
int il_paired_distinct(const il_stat *s);

#endif
