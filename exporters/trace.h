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
 * Compile timeline, from log (pid 1, "compile"): pass p is thread p + 1
 * with one complete event ("X") spanning its events, from the earliest
 * start to the latest end (a replayed layer-1 event keeps the duration of
 * the work it remembers, which may end after the pass's last decision);
 * a complete event for each event that lasted at least a microsecond
 * (scheduled: the micro-graph's model, isl scheduling and kernel path;
 * compiled: the compiler; the first ran: the whole run of the program);
 * and an instant event ("i", "s": "t") per decision with args seq, kind,
 * rule, ops, reason (and measured values).  Perfetto draws only properly
 * nested slices on a thread, so a span that would overlap another one of
 * its pass partially goes to the pass's next lane: thread p + 1 + 100 * k,
 * named "<pass> (overlapping spans k)".
 *
 * Run timeline, from ladder (pid 10 + i, named after strategy i, step i):
 * thread 1 ("passes") has a complete event per pass of the step's own
 * session (from its log, when it has one), so the compiler's and the
 * run's wall times show; thread 2 ("kernels") has one complete event per
 * kernel lasting its median time, laid back to back from the start of the
 * run pass (0 without a log).  These are not measured timestamps: the
 * runner times each kernel over repeats and keeps median, min and max,
 * not when each call happened, and the log's "ran" events are logged
 * after the whole run.  The args say so ("span": "median of N runs, laid
 * back to back") and carry kernel, source ops (first, last, n_ops),
 * bytes moved, GB/s (bytes / median), median/min/max in ms, repeats,
 * verified and max errors.  A strategy that did not run has an instant
 * event with its error on thread 1. */
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
