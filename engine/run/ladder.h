/* The strategy ladder (DESIGN 1.6): the same graph compiled and run under
 * several strategies, each through a whole engine session (so every
 * decision, compile and run is also in that session's event log), with
 * each fused kernel compared against the unfused kernels of its ops.
 * Never prints: app/ prints what this returns. */
#ifndef FL_LADDER_H
#define FL_LADDER_H

#include "engine.h"
#include "interleave.h"

typedef struct fl_ladder_kernel {
	char name[32];		/* generated name, fl_k<i> */
	int n_ops;
	char first_op[128], last_op[128];	/* op names, in order */
	fl_kernel_result r;
	double unfused_seconds;	/* its ops' kernels under unfused in the
				   same ladder; -1 when unknown */
	double unfused_min, unfused_max;	/* their spread; -1 when
						   unknown */
	bool paired;		/* r and unfused_* were timed alternately
				   (fused, unfused group, ...) in the one
				   timing child; else r is from the rounds
				   and unfused_* the unfused run's per-op
				   share */
	fl_ratio ratio;		/* paired: r / unfused, alternation by
				   alternation (n 0 when unpaired) */
	fl_timing_label label;	/* r against unfused: fl_timing_paired
				   over ratio, else fl_timing_compare over
				   the ranges */
	char why[FL_EVENT_REASON];	/* SLOWER: what differs from the
					   unfused kernels, "" otherwise */
	/* What layers 2 and 3 made of it (the trace names them): the
	 * micro-graphs layer 2 stitched into it, "G0 + G3", else "";
	 * the branches layer 3 runs side by side in it, each as its
	 * first..last op, joined by " | ", else "" (n_branches 0). */
	char stitched[256];
	int n_branches;
	char branches[512];
} fl_ladder_kernel;

typedef struct fl_ladder_step {
	fl_strategy strategy;
	bool ran;		/* the session reached the end */
	char error[1024];	/* the engine's error when not */
	fl_run_status status;	/* of the compile, else of the run */
	char message[2048];
	int n_kernels;
	fl_ladder_kernel *kernels;
	double total_seconds;	/* median of whole-program runs */
	double total_min, total_max;	/* their spread */
	int total_n;		/* whole-program times behind them */
	double max_abs, max_rel;	/* end-to-end output drift */
	bool verified;
	/* Against base->run.expect (the run result's expect_*): outputs
	 * compared (0: none), how many differ, the worst absolute error;
	 * expect_first describes the first that differs ("" when none):
	 * "output T5 \"y\" [1,10]: 3 of 10 elements off; worst [0,7]: got
	 * 1.5, want 1.25". */
	int expect_compared, expect_failed;
	double expect_max_abs, expect_max_rel;	/* rel: on the tensors'
						   scale, as max_rel */
	char expect_first[512];
	double speedup;		/* unfused total / this total; 0: unknown */
	bool within_noise;	/* label is neither faster nor SLOWER: the
				   speedup is not a measured difference */
	fl_ratio vs_unfused;	/* this total / unfused's, round by round
				   (n 0 when not timed in one child) */
	fl_timing_label label;	/* the total against unfused's: paired
				   over vs_unfused, else over the ranges */
	char workdir[512];	/* kept sources (--keep), else "" */
	fl_target target;	/* the backend that ran (the run result's) */
	char device[128];	/* the GPU it ran on, "" */
	char note[256];		/* e.g. FL_NO_CUDA_DEVICE: the CUDA target
				   fell back to the CPU; "" */
	/* Stopped by base->run.interrupt (a signal): the last step.
	 * stopped names what was running ("compiler", "run", or "" when
	 * neither was), removed the work directory that was removed with
	 * whatever it held ("" when there was none). */
	bool interrupted;
	char stopped[16];
	char removed[512];
	/* A copy of the session's whole event log (every decision, the
	 * compile and the runs, with their times), so a trace can show each
	 * strategy; NULL when the session could not open.  Owned by the
	 * step, freed by fl_ladder_free. */
	fl_event_log *log;
} fl_ladder_step;

typedef struct fl_ladder {
	int n;
	fl_ladder_step *steps;
	/* How the timings were taken.  interleaved: every step that ran
	 * (status ok or mismatch) was timed in one child after all had
	 * compiled and verified (interleave.h); the steps' times are those.
	 * False when nothing was timed (repeat 0, no step ran, interrupted)
	 * or the timing child failed (timing_status, timing_message). */
	bool interleaved;
	fl_run_status timing_status;
	char timing_message[1024];
	char machine[256];	/* fl_machine_text of the host */
	char planned_for[256];	/* of the machine assumed for planning
				   (fl_machine_assume), "" when the host */
	double load_before, load_after;	/* 1-minute load average, -1 */
	fl_spread copy_gbps;	/* the copy probe in the timing child */
	int64_t copy_bytes;	/* read + written by one copy */
	int copy_threads;
	bool pinned;
	int n_threads;		/* the timing child's, after the rounds */
	char affinity[256];	/* each thread's allowed CPUs */
	int rounds;		/* timed rounds */
	int n_timed;		/* steps timed */
	/* rounds x (n_timed + 1) step indices in the order they ran in
	 * each round; -1 is the copy probe.  NULL when not interleaved. */
	int *order;
	/* Interpreter runs for reference values over the whole ladder: 1
	 * when a step reached its run (the steps share one set of values,
	 * ref_share.h, freed once all have verified), 0 when none did. */
	int reference_runs;
} fl_ladder;

/* Runs strategies list[0..n-1] on g with base options (rules, constraints,
 * layer-1 and run options; strategy, stop_after and run_kernels are set
 * per step).  base->run.progress, when set, also hears ("strategy", i, n)
 * before each strategy.  Returns 0 with one step per strategy (a failed
 * strategy is a step with ran false), -1 when out of memory (out then
 * empty).  When base->run.interrupt is set the ladder stops: the step
 * under way (if any) is the last, with interrupted set, its child process
 * group killed and its work directory removed (even with keep) before this
 * returns.  Each session verifies its program (no timing) against
 * reference values the sessions share: the interpreter runs once for the
 * whole ladder, and its values are freed when every strategy has
 * verified; each session keeps no snapshots and reads g (which must
 * outlive the call) instead of a copy.  The sessions
 * stay open (their work directories with them) until every strategy is
 * done, then the verified ones are timed together in one child
 * (fl_time_interleaved, base->run's warmup, repeat, pin; progress "time"
 * and "pairs"), and the sessions close.  An interrupt during that timing
 * marks the first step interrupted, stopped "run", removed every work
 * directory (all removed). */
int fl_ladder_run(const fl_graph *g, const fl_engine_opts *base,
		  const fl_strategy *list, int n, fl_ladder *out,
		  fl_error *err);
void fl_ladder_free(fl_ladder *l);

/* Kernel k of step st (program p) was labelled SLOWER against the
 * unfused program up: what its plan does that the unfused kernels of its
 * ops do not (ops beside a contraction looping over each tile again,
 * fewer tiles than cores, intermediates through main memory, tiles beyond
 * the L2)
 * into st->kernels[k].why, and a "ran" event with rule "slower" into
 * st->log (its measurements: the two medians, the pairs it won, the
 * pairs).  The ladder calls it; public for its tests. */
void fl_ladder_explain_slower(fl_ladder_step *st, int k,
			      const fl_program *p, const fl_program *up);

#endif
