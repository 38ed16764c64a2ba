/* Tours: guided stops through a graph's fusion run (DESIGN 7).
 *
 * A graph file may carry a top-level "tour": a list of stops, each with a
 * short text and either a step or an event pattern:
 *
 *   "tour": [
 *     {"step": 0, "text": "Before any decision: ..."},
 *     {"pass": "aggregate", "kind": "merged", "ops": ["exp_3", "sum_4"],
 *      "text": "R4 merges the exponent into the sum (APOLLO 3.3)."}
 *   ]
 *
 * "step": N names the state after N decisions (0: before any).  A pattern
 * gives "pass" (a pass name as --stage takes it), "kind" (an event kind
 * as the event log prints it), "ops" (op names the event must all
 * involve, in any order, among others), or several of them; it stops at
 * the FIRST event of the run that fits, i.e. at the state just after that
 * decision.  Op names are not checked against the graph: opening a
 * compound op creates ops ("op7.sq") that the file does not list.
 *
 * The graph loader checks a file's tour with fl_tour_from_json and drops
 * it; the explorer loads it with fl_tour_load_file (or _string) and asks,
 * step by step, which stop it is at.  Matching needs the event log only,
 * so the tour stays apart from the graph and the engine. */
#ifndef FL_TOUR_H
#define FL_TOUR_H

#include <stddef.h>

#include "events.h"
#include "fl_error.h"

#define FL_TOUR_TEXT_MAX 400	/* bytes of a stop's text */
#define FL_TOUR_MAX_STOPS 256
#define FL_TOUR_MAX_OPS 16	/* op names of one pattern */

typedef struct fl_tour fl_tour;

/* Builds a tour from the value of a graph file's "tour" field; NULL j
 * gives an empty tour.  On a bad tour returns NULL with the problem as
 * "tour[2].kind: unknown event kind \"merge\"" (the caller puts the file
 * name in front). */
struct cJSON;
fl_tour *fl_tour_from_json(const struct cJSON *j, fl_error *err);

/* The tour of a graph file's text (an empty tour when it has none);
 * `source` names it in messages: "x.json: tour[0].text: missing".  The
 * rest of the file is not checked: the loader does that. */
fl_tour *fl_tour_load_string(const char *text, size_t len,
			     const char *source, fl_error *err);
fl_tour *fl_tour_load_file(const char *path, fl_error *err);

void fl_tour_free(fl_tour *t);

int fl_tour_count(const fl_tour *t);
/* Stop i's text (NULL when i is out of range). */
const char *fl_tour_text(const fl_tour *t, int i);

/* Stop i's "step", or -1 when it is a pattern. */
int fl_tour_fixed_step(const fl_tour *t, int i);

/* The step at which stop i stands in `log`: its "step", or 1 + the
 * position of the first event that fits its pattern; -1 when the log
 * does not reach it.  A prefix of a run's log answers like the whole
 * log for every stop it reaches. */
int fl_tour_stop_step(const fl_tour *t, int i, const fl_event_log *log);

/* The first stop (in the file's order) at the state after `step`
 * decisions, or -1.  `log` holds at least the first `step` events of
 * the run (the session's log at that step, or the complete run's). */
int fl_tour_match(const fl_tour *t, const fl_event_log *log, int step);

/* The smallest step above from_step at which some stop stands, or -1;
 * `full_log` is the log of the complete run.  from_step -1 finds a stop
 * at step 0. */
int fl_tour_next(const fl_tour *t, const fl_event_log *full_log,
		 int from_step);

#endif
