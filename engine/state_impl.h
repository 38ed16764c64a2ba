/* Internal to the engine: the state the passes read and write during one
 * (re)play, and the decision budget that makes stepping possible.
 *
 * Every pass has the same shape: `int pass_x(fl_state *st, fl_error *err)`
 * returning FL_PASS_DONE, FL_PASS_PAUSED (the budget ran out before its
 * next decision: nothing more may change) or -1.  A decision is made as
 *
 *     if (!fl_state_decide(st)) return FL_PASS_PAUSED;
 *     ...apply the change...
 *     fl_state_log(st, FL_EV_..., ...);
 */
#ifndef FL_STATE_IMPL_H
#define FL_STATE_IMPL_H

#include <isl/ctx.h>

#include "clock.h"
#include "engine.h"

#define FL_PASS_DONE 0
#define FL_PASS_PAUSED 1
#define FL_PASS_RESTART 2	/* feedback: redo the partition passes */

struct fl_classify_cache;
struct fl_groups;
struct fl_memo;

typedef struct fl_state {
	fl_graph *graph;		/* owned; rewritten by the passes */
	fl_event_log *log;		/* owned */
	const fl_engine_opts *opts;
	fl_partition part;
	fl_pass pass;			/* pass running now */
	isl_ctx *ctx;			/* borrowed from the session */
	struct fl_classify_cache *cache;	/* borrowed */
	struct fl_groups *groups;	/* owned; merge bookkeeping */
	fl_program *program;		/* owned; made by layer 1 */
	struct fl_par_analysis *par;	/* shared (reference counted): the
					   analysis layer 3 acted on, NULL
					   before it ran */
	struct fl_memo *memo;		/* borrowed: the session's results of
					   costly work, by key (memo_impl.h) */
	/* codegen */
	int n_src;
	char **kernel_src;		/* owned; per kernel, NULL until made */
	char *unit_src;			/* owned; once every kernel is made */
	/* compile and run */
	const fl_build *build;		/* borrowed from the memo */
	const fl_run_result *run;	/* borrowed from the memo */
	/* feedback found during this replay (in addition to opts) */
	int n_feedback, cap_feedback;
	fl_op_pair *feedback;		/* owned; grows */
	char (*feedback_reason)[128];	/* owned; grows */
	long budget;			/* decisions left; < 0: unlimited */
	double t0, t_decide;
} fl_state;

/* Frees what st owns and zeroes it (borrowed pointers are dropped). */
void fl_state_clear(fl_state *st);

/* A copy of src into dst (borrowed pointers shared; the graph's constant
 * values shared, after src's own are made shareable: src->graph's
 * ownership bookkeeping changes, never its values; everything else
 * deep): what a snapshot keeps.  0, or -1 when out of memory (dst is
 * then cleared). */
int fl_state_copy(fl_state *dst, const fl_state *src);

/* The invariant checks of fl_engine_check on a state. */
int fl_state_check(const fl_state *st, fl_error *err);

/* The names of ops ops[0..n-1] of st->graph, for an event's op list
 * (malloc'd array of borrowed names); NULL when out of memory. */
const char **fl_state_op_names(const fl_state *st, const int *ops, int n);

/* Consumes one decision of the budget; false when none is left. */
bool fl_state_decide(fl_state *st);

/* Logs the decision just made (timing from the matching decide). */
fl_event *fl_state_log(fl_state *st, fl_event_kind kind, const char *rule,
		       const char *const *ops, int n_ops, int group_a,
		       int group_b, const char *fmt, ...)
	__attribute__((format(printf, 8, 9)));


/* Feedback from a later layer during a run: forbid merging the micro-
 * graphs of ops a and b on the re-run of the partition passes, and log it.
 * The caller then returns FL_PASS_RESTART. */
int fl_state_feedback(fl_state *st, const char *a, const char *b,
		      const char *reason, fl_error *err);

/* Feedback forbidding n merges at once (a[i] with b[i], each with
 * `reason`), logged as one event whose text is `text` and whose ops are
 * the pairs' ops.  The caller then returns FL_PASS_RESTART. */
int fl_state_feedback_many(fl_state *st, const char *const *a,
			   const char *const *b, int n, const char *reason,
			   const char *text, fl_error *err);

#define FL_MAX_FEEDBACK 8192	/* feedback splits in one run */

#endif
