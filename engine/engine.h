/* The steppable fusion engine (DESIGN 5): open a session on a graph, then
 * advance one decision, one pass or to the end, or go to any step, and
 * read the state and the event log at any point.
 *
 * Stepping is replay: the engine is deterministic, so the state after k
 * decisions is obtained by running from the start with a budget of k
 * decisions.  Stepping through a run and running it straight through
 * therefore give the same states and the same event log. */
#ifndef FL_ENGINE_H
#define FL_ENGINE_H

#include <stdbool.h>

#include "events.h"
#include "graph.h"
#include "kernel.h"
#include "partition.h"
#include "rules.h"

#define FL_MAX_CONSTRAINTS 64

typedef struct fl_op_pair {
	char a[128], b[128];	/* op names as in the input file */
} fl_op_pair;

typedef struct fl_engine_opts {
	fl_rule_table rules;		/* default: fl_rules_default */
	bool preprocess;		/* default true */
	int n_never, n_fuse;
	fl_op_pair never_fuse[FL_MAX_CONSTRAINTS];
	fl_op_pair fuse[FL_MAX_CONSTRAINTS];
	/* merges forbidden by feedback from later layers */
	int n_feedback;
	fl_op_pair feedback[FL_MAX_CONSTRAINTS];
	char feedback_reason[FL_MAX_CONSTRAINTS][128];
	/* layer 1; run_layer1 false stops after partition */
	bool run_layer1;
	fl_layer1_opts layer1;
} fl_engine_opts;

void fl_engine_opts_default(fl_engine_opts *o);

/* Options for a strategy of the ladder (DESIGN 1.6) on top of `base`
 * (rules, constraints, layer-1 settings): unfused switches every partition
 * rule and --fuse off, xla keeps only R1-R4, apollo-l1 keeps them all;
 * layer 1 runs in each. */
void fl_engine_opts_for_strategy(const fl_engine_opts *base, fl_strategy s,
				 fl_engine_opts *out);

typedef struct fl_session fl_session;

/* Opens a session on a copy of validated graph g.  Checks the options
 * (unknown op names in constraints are errors).  The session starts at
 * step 0: nothing decided yet. */
fl_session *fl_engine_open(const fl_graph *g, const fl_engine_opts *o,
			   fl_error *err);
void fl_engine_close(fl_session *s);

/* Each returns the number of decisions now made, or -1 on error. */
int fl_engine_step(fl_session *s, fl_error *err);
int fl_engine_step_pass(fl_session *s, fl_error *err);
int fl_engine_run(fl_session *s, fl_error *err);
int fl_engine_goto(fl_session *s, int k, fl_error *err);

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
const fl_engine_opts *fl_engine_options(const fl_session *s);
/* The kernels layer 1 made (NULL before it ran). */
const fl_program *fl_engine_program(const fl_session *s);

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
