/* Chrome trace exporter (DESIGN 8): the engine's event log and the
 * strategy ladder as Trace Event Format JSON, built with cJSON, for
 * Perfetto and chrome://tracing.
 *
 * {"traceEvents": [...], "displayTimeUnit": "ms",
 *  "otherData": {"generator": "fuselab", "graph": name or null}}
 *
 * Every ts and dur is a whole number of microseconds (times rounded to the
 * microsecond once, so spans that nest in the log nest in the trace).
 * Processes and threads are named by "M" events (process_name,
 * thread_name, and sort indexes that keep them in pipeline order).
 *
 * Compile timeline, from log (pid 1, "compile: passes and decisions"):
 * pass p is thread p + 1, with
 *   - one complete event ("X", cat "pass") spanning the pass's events,
 *     from the earliest start to the latest end (a replayed layer-1 event
 *     keeps the duration of the work it remembers, which may end after
 *     the pass's last decision);
 *   - a complete event for each event that lasted at least a microsecond
 *     (cat: its kind; scheduled: the micro-graph's model, isl scheduling
 *     and kernel path; compiled: the compiler; the first ran: the whole
 *     run of the program; the later ran events get none: they report
 *     what the first measured, and a span would pass for a kernel's time);
 *   - an instant event ("i", "s": "t") per decision, args seq, pass,
 *     kind, rule, ops, reason and, when measured, the measurements.
 * Perfetto draws only properly nested slices on a thread, so a span that
 * would partially overlap another of its pass goes to the pass's next
 * lane: thread p + 1 + 100 * k, named "<pass> (overlapping spans k)".
 *
 * Run timeline, from ladder (pid 10 + i, named after step i's strategy):
 *   - thread 1 ("passes"): a complete event per pass of the step's own
 *     session (from its log, when it has one) and, inside them, the
 *     compiler's span ("compiler", args command and seconds) and the
 *     whole run's ("run of the program": checks, warm-up, timed repeats);
 *     a strategy that did not run has an instant "not run" with its
 *     status and error instead of kernels;
 *   - thread 2 ("kernels"): one complete event per kernel lasting its
 *     median time, laid back to back from the start of the run (0 without
 *     a log).  These are not measured timestamps: the runner times each
 *     kernel over repeats and keeps median, min and max, not when each
 *     call happened, and the log's "ran" events after the first are
 *     logged once the whole run is over.  The args say so ("span":
 *     "median of N runs, laid back to back ...") and carry kernel, source
 *     ops (first_op, last_op, n_ops), what layers 2 and 3 made of it
 *     (stitched_micro_graphs "G0 + G3" when layer 2 stitched it;
 *     n_branches and branches "a..b | c..d" when layer 3 runs branches
 *     side by side in it), bytes moved, GB/s (bytes / median),
 *     median/min/max in ms, repeats, the unfused ops' time when known,
 *     verified and the max errors. */
#ifndef FL_TRACE_H
#define FL_TRACE_H

#include <cJSON.h>

#include "events.h"
#include "ladder.h"

/* The trace of log and ladder (either may be NULL: its timeline is left
 * out).  A new cJSON tree owned by the caller; NULL when out of memory. */
cJSON *fl_trace_build(const fl_event_log *log, const fl_ladder *ladder);

/* Names the graph in trace's otherData ("graph"); -1 when out of memory. */
int fl_trace_set_graph(cJSON *trace, const char *graph);

/* Writes trace to path through exporters/output.h (a regular file appears
 * whole or not at all; "-", pipes and devices are written directly).
 * -1 with the reason, naming the path. */
int fl_trace_write(const cJSON *trace, const char *path, fl_error *err);

/* fl_trace_build, then fl_trace_write. */
int fl_export_trace(const fl_event_log *log, const fl_ladder *ladder,
		    const char *path, fl_error *err);

#endif
