/* The steppable fusion engine (DESIGN 5): open a session on a graph, then
 * advance one decision, one pass or to the end, or go to any step, and
 * read the state and the event log at any point.
 *
 * The pipeline is one table of passes (engine.c):
 *   preprocess -> cluster -> open -> classify -> constrain -> aggregate ->
 *   layer1 -> codegen -> compile -> run
 * Each decision of a pass is one event.  The engine is deterministic, so
 * the state after k decisions is a function of k: going to step k
 * restores the snapshot taken at the last pass boundary before k and
 * replays the rest of that pass, and the costly work inside a pass (isl
 * scheduling of a micro-graph, a kernel's code, compiling, running) is
 * memoised for the session, so a replay never redoes it.  Stepping
 * through a run and running it straight through give the same states and
 * the same event log (measurements such as kernel times aside, which are
 * kept apart from the decisions: events.h).
 *
 * Compiling and running are optional passes (run_kernels).  They take
 * seconds: a caller on an interactive thread runs the engine call in a
 * worker thread, follows it through opts.run.progress and stops it with
 * fl_engine_cancel. */
#ifndef FL_ENGINE_H
#define FL_ENGINE_H

#include <stdbool.h>

#include "events.h"
#include "graph.h"
#include "interp.h"
#include "kernel.h"
#include "partition.h"
#include "rules.h"
#include "runner.h"

#define FL_MAX_CONSTRAINTS 64

typedef struct fl_op_pair {
	char a[128], b[128];	/* op names as in the input file */
} fl_op_pair;

typedef struct fl_engine_opts {
	fl_strategy strategy;		/* default apollo-l1 */
	fl_rule_table rules;		/* default: fl_rules_default */
	bool preprocess;		/* default true */
	int n_never, n_fuse;
	fl_op_pair never_fuse[FL_MAX_CONSTRAINTS];
	fl_op_pair fuse[FL_MAX_CONSTRAINTS];
	/* merges forbidden by feedback from later layers */
	int n_feedback;
	fl_op_pair feedback[FL_MAX_CONSTRAINTS];
	char feedback_reason[FL_MAX_CONSTRAINTS][128];
	/* The last pass that runs (default FL_PASS_AGGREGATE: the
	 * partition); compile and run also need run_kernels. */
	fl_pass stop_after;
	bool run_kernels;		/* default false */
	fl_layer1_opts layer1;
	/* Bytes a tensor on a stitched edge may take per tile to be
	 * tile-local (layer 2); 0: the machine's per-core L2, or with
	 * run.target cuda FL_CUDA_SHARED_DEFAULT (a block's shared
	 * memory). */
	int64_t stitch_capacity;
	/* Seconds one kernel costs beyond its roofline time in layer 3's
	 * cost model, when set; else the model's default (stitch.h). */
	bool launch_cost_set;
	double launch_cost;
	fl_run_opts run;		/* compiler, time limit, repeats,
					   tolerance, progress */
	fl_interp_opts interp;		/* the reference values' seed and
					   memory limit */
	/* Reference values shared with other sessions of the same graph
	 * (ref_share.h; the ladder's), NULL: the session computes and keeps
	 * its own.  Borrowed: must outlive the session's run pass. */
	struct fl_ref_share *ref_share;
	/* The session only goes forward (a batch run, the ladder): it keeps
	 * no snapshots at pass boundaries, each a copy of the whole state
	 * with the graph's constants (ViT-B/16: 330 MB a copy, 12 passes).
	 * Going back still works, replayed from the start.  Default false. */
	bool forward_only;
	/* The session reads the graph given to fl_engine_open, which must
	 * then outlive it unchanged, instead of keeping a copy of its own
	 * (one copy of the constants less per session).  Default false. */
	bool borrow_graph;
} fl_engine_opts;

void fl_engine_opts_default(fl_engine_opts *o);

/* The rules and constraints strategy s lets through (DESIGN 1.6):
 * unfused switches every partition rule and --fuse off, xla keeps only
 * R1-R4, apollo-l1 keeps them all; and under the CUDA target layer 1
 * plans tiles for the GPU (fl_machine_cuda) unless a machine is given.  The session applies this to its
 * options; exposed for views that show what a strategy allows. */
void fl_engine_opts_effective(const fl_engine_opts *o, fl_engine_opts *out);

typedef struct fl_session fl_session;

/* Opens a session on a copy of validated graph g (on g itself with
 * o->borrow_graph).  Checks the options
 * (unknown op names in constraints are errors).  The session starts at
 * step 0: nothing decided yet. */
fl_session *fl_engine_open(const fl_graph *g, const fl_engine_opts *o,
			   fl_error *err);
void fl_engine_close(fl_session *s);

/* Each returns the number of decisions now made, or -1 on error. */
int fl_engine_step(fl_session *s, fl_error *err);
int fl_engine_step_back(fl_session *s, fl_error *err);
int fl_engine_step_pass(fl_session *s, fl_error *err);
int fl_engine_run(fl_session *s, fl_error *err);
int fl_engine_goto(fl_session *s, int k, fl_error *err);

/* Cancels the compile or run under way in another thread (safe to call
 * from any thread); that engine call returns -1 with "cancelled". */
void fl_engine_cancel(fl_session *s);

/* The session's latest work directory (the compile pass's, a cancelled
 * compile's too), "" before any; it goes when the session closes (or at
 * once when the compile was cancelled), unless opts.run.keep is set and
 * opts.run.interrupt is not.  A caller stopping on a signal sets
 * opts.run.interrupt (a flag the engine polls and never resets: it stops
 * the compiler or the test child within milliseconds, and the session
 * between passes, with an error) and names this directory as removed. */
const char *fl_engine_workdir(const fl_session *s);

int fl_engine_position(const fl_session *s);
/* Decisions in the complete run (runs it once, on the side, if needed). */
int fl_engine_total(fl_session *s, fl_error *err);
bool fl_engine_done(const fl_session *s);
/* The pass the next decision belongs to (FL_PASS_COUNT at the end). */
fl_pass fl_engine_current_pass(const fl_session *s);
/* The event the next step will add, or NULL at the end.  Valid until the
 * session moves. */
const fl_event *fl_engine_peek(fl_session *s, fl_error *err);

const fl_event_log *fl_engine_events(const fl_session *s);
const fl_graph *fl_engine_graph(const fl_session *s);	/* as rewritten */
const fl_graph *fl_engine_input_graph(const fl_session *s);
const fl_partition *fl_engine_partition(const fl_session *s);
/* The options as given (the strategy not yet applied to the rules). */
const fl_engine_opts *fl_engine_options(const fl_session *s);
/* The kernels layer 1 made (NULL before it ran). */
const fl_program *fl_engine_program(const fl_session *s);
/* The parallel-stitching analysis layer 3 acted on, its tries marked
 * stitched where the pass made them one kernel (NULL before the pass
 * ran, and under strategies other than apollo). */
const struct fl_par_analysis *fl_engine_parallel(const fl_session *s);
/* The C of kernel k once generated (NULL before), and the whole
 * translation unit once the codegen pass is complete (NULL before). */
const char *fl_engine_kernel_source(const fl_session *s, int k);
const char *fl_engine_source(const fl_session *s);
/* The compile result once the compile pass ran (NULL before). */
const fl_build *fl_engine_build(const fl_session *s);
/* The run result once the run pass ran (NULL before, or when the
 * program did not compile). */
const fl_run_result *fl_engine_run_result(const fl_session *s);

/* What the session has worked out so far (memoised, never redone):
 * micro-graphs scheduled, kernels generated, programs compiled and run,
 * and the snapshots kept at pass boundaries (and what they hold). */
typedef struct fl_engine_stats {
	int schedules, kernels_generated, compiles, runs, snapshots;
	int references;	/* interpreter runs for reference values of the
			   session's own (0 when they came from opts'
			   ref_share) */
	int64_t snapshot_value_bytes;	/* bytes of tensor values the
			   snapshots own (constants are shared with the
			   live state, not copied: see ir/tensor_values.c) */
} fl_engine_stats;

void fl_engine_get_stats(const fl_session *s, fl_engine_stats *out);

/* Checks the invariants of the current state: every primitive op in
 * exactly one micro-graph, micro-graphs form a DAG, each kernel covers
 * exactly its micro-graph and every alive micro-graph has one kernel,
 * placements consistent (graph inputs and outputs and tensors read by
 * other kernels global, tile-local ones with a footprint box, register
 * ones written and read inside their kernel).  0, or -1 naming the first
 * violation.  The sanitizer build runs it after every pass. */
int fl_engine_check(const fl_session *s, fl_error *err);

/* Why ops a and b are (not) in one micro-graph after a complete run.
 * Returns 1 (together), 0 (apart) with the first reason in buf, -1 on
 * error (unknown op). */
int fl_engine_explain(fl_session *s, const char *a, const char *b,
		      char *buf, size_t n, fl_error *err);

/* Feedback from a later layer: split the micro-graph at the merge made by
 * event `merge_seq` and forbid that merge on the re-run.  The session is
 * re-run to where it was (or to the end). */
int fl_engine_feedback_split(fl_session *s, int merge_seq,
			     const char *reason, fl_error *err);

/* User overrides through the API (the same as --never-fuse / --fuse). */
int fl_engine_never_fuse(fl_session *s, const char *a, const char *b,
			 fl_error *err);
int fl_engine_fuse(fl_session *s, const char *a, const char *b,
		   fl_error *err);

#endif
