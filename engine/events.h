/* The event log: every decision the engine makes (DESIGN 6).
 *
 * An event has a sequence number, the pass that made it, a kind, the ops
 * and micro-graphs involved, the rule id when a rule decided it, a one-line
 * reason a person can read, and its start time and duration (for traces).
 * The log is append-only; views and exporters read it through the
 * accessors below. */
#ifndef FL_EVENTS_H
#define FL_EVENTS_H

#include <stddef.h>

#include "fl_error.h"

typedef enum fl_pass {
	FL_PASS_PREPROCESS,
	FL_PASS_CLUSTER,
	FL_PASS_OPEN,
	FL_PASS_CLASSIFY,
	FL_PASS_CONSTRAIN,
	FL_PASS_AGGREGATE,
	FL_PASS_LAYER1,
	FL_PASS_LAYER2,
	FL_PASS_LAYER3,
	FL_PASS_CODEGEN,
	FL_PASS_COMPILE,
	FL_PASS_RUN,
	FL_PASS_COUNT
} fl_pass;

typedef enum fl_event_kind {
	FL_EV_SIMPLIFIED,	/* algebraic simplification, layout */
	FL_EV_CSE,		/* common subexpression removed */
	FL_EV_FOLDED,		/* constant folded */
	FL_EV_ELIMINATED,	/* dead code removed */
	FL_EV_CLUSTERED,	/* sub-graph extracted / op excluded */
	FL_EV_OPENED,		/* compound op opened into primitives */
	FL_EV_CLASSIFIED,	/* primitive typed E/B/R/O */
	FL_EV_CONSTRAINED,	/* user override applied */
	FL_EV_MERGED,		/* two micro-graphs merged */
	FL_EV_REJECTED,		/* a merge a rule allowed was refused */
	FL_EV_FEEDBACK,		/* a later layer split a micro-graph */
	FL_EV_SCHEDULED,	/* isl scheduler ran on a micro-graph */
	FL_EV_TILED,		/* a band was tiled */
	FL_EV_EXTENDED,		/* a producer fused into tiles (or not) */
	FL_EV_PLACED,		/* a tensor's memory placement */
	FL_EV_GENERATED,	/* a kernel's code generated */
	FL_EV_COMPILED,		/* the program compiled (or not) */
	FL_EV_RAN,		/* a kernel ran and was timed */
	FL_EV_VERIFIED,		/* a kernel's or an output's values checked */
	FL_EV_REDUCE_FORM,	/* a reduction's nest put in canonical form */
	FL_EV_PARALLELISED,	/* layer 3: kernels run side by side */
	FL_EV_KIND_COUNT
} fl_event_kind;

#define FL_EVENT_REASON 256
#define FL_EVENT_MEASURED 4

/* What measured[] holds, by kind:
 *   compiled  {seconds}
 *   ran       {median, min, max seconds, repeats}; with rule "slower"
 *             (the ladder: a fused kernel slower than its ops' unfused
 *             kernels) {its median, theirs, pairs it won, pairs} */

typedef struct fl_event {
	int seq;		/* 0-based position in the log */
	fl_pass pass;
	fl_event_kind kind;
	char rule[16];		/* "R4", "user", or "" */
	int n_ops;
	char **ops;		/* names of the ops involved */
	int group_a, group_b;	/* micro-graph ids involved, -1 if none */
	char reason[FL_EVENT_REASON];
	double t_start;		/* seconds since the session opened */
	double duration;	/* seconds */
	/* Measurements that vary from run to run (a kernel's time, the
	 * compiler's seconds): kept apart from the reason, so that two runs
	 * making the same decisions have equal logs. */
	int n_measured;
	double measured[FL_EVENT_MEASURED];
} fl_event;

typedef struct fl_event_log fl_event_log;

fl_event_log *fl_event_log_new(void);
/* A copy of the first n events of log (all when n < 0); NULL when out
 * of memory. */
fl_event_log *fl_event_log_copy(const fl_event_log *log, int n);
void fl_event_log_free(fl_event_log *log);
void fl_event_log_clear(fl_event_log *log);

/* Appends an event; the op names are copied.  Returns the event (owned by
 * the log, valid until the next append) or NULL when out of memory. */
fl_event *fl_event_log_add(fl_event_log *log, fl_pass pass,
			   fl_event_kind kind, const char *rule,
			   const char *const *ops, int n_ops, int group_a,
			   int group_b, const char *fmt, ...)
	__attribute__((format(printf, 9, 10)));

int fl_event_log_count(const fl_event_log *log);
const fl_event *fl_event_log_get(const fl_event_log *log, int i);

const char *fl_pass_name(fl_pass p);
/* The pass named `name` ("partition" names aggregate, the end of the
 * partition passes); 0, or -1 when there is none. */
int fl_pass_parse(const char *name, fl_pass *p);
const char *fl_event_kind_name(fl_event_kind k);

/* True when two logs hold the same decisions (times and measurements
 * ignored). */
int fl_event_log_equal(const fl_event_log *a, const fl_event_log *b);
/* The same for the first n events of each (both must have n). */
int fl_event_log_equal_prefix(const fl_event_log *a, const fl_event_log *b,
			      int n);

/* The measurements of e as text ("median 1.234 ms, min 1.200 ms, max
 * 1.310 ms, 10 runs"), "" when it has none. */
const char *fl_event_measured_text(const fl_event *e, char *buf, size_t n);

/* One line of text into buf:
 * "#12 aggregate merged [exp_3 sum_4] R4: E->R merge exp_3 into sum_4",
 * with the measurements after "; " when the event has some. */
const char *fl_event_format(const fl_event *e, char *buf, size_t n);

#endif
