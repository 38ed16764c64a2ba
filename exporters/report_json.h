/* JSON report of the engine state (DESIGN 8), built with cJSON.  Reads
 * the session through the engine's public headers only.
 *
 * Two kinds of functions: the pieces below (partition, layer 1, codegen,
 * build, run, events), which --stage/--events --format json print as
 * they are, and the full report (fl_report_full, fl_export_report): the
 * whole state at the session's step in the versioned format
 * "fuselab-report/1" that docs/report-format.md describes field by
 * field. */
#ifndef FL_REPORT_JSON_H
#define FL_REPORT_JSON_H

#include <cJSON.h>

#include "engine.h"
#include "fl_error.h"
#include "ladder.h"

/* {"graph", "position", "done", "micro_graphs": [...], "ops": [...]} */
cJSON *fl_report_partition(const fl_session *s);

/* Layer-1 state: kernels with their ops, schedule trees as isl text,
 * tensor placements, reduction forms. */
cJSON *fl_report_layer1(const fl_session *s);

/* Generated C per kernel so far: {"kernels": [{"name", "c"}], "complete"}. */
cJSON *fl_report_codegen(const fl_session *s);

/* The compile: status, message, compiler, flags, seconds, warnings. */
cJSON *fl_report_build(const fl_session *s);

/* The run: status, verified, totals, per kernel timing statistics and
 * errors, per output errors. */
cJSON *fl_report_run(const fl_session *s);

/* One event as an object: seq, pass, kind, rule, ops, groups, reason,
 * t_start_us, duration_us, and "measured" ({seconds} for compiled,
 * {median_s, min_s, max_s, runs} for ran) when it has measurements. */
cJSON *fl_report_event(const fl_event *e);

/* The whole log as an array. */
cJSON *fl_report_events(const fl_session *s);

/* The format the full report declares in its "format" field.  Fields are
 * only added under /1; a change of a field's meaning bumps the version. */
#define FL_REPORT_FORMAT "fuselab-report/1"

/* The whole state of session s at its current step (graph summary,
 * position, options, micro-graphs, ops, kernels with schedule trees and
 * placements, the parallel-stitching analysis, codegen, build and run
 * when the session got there, the strategies of ladder (NULL: none),
 * errors, events) as a new cJSON object the caller frees; NULL when out
 * of memory. */
cJSON *fl_report_full(const fl_session *s, const fl_ladder *ladder);

/* Writes fl_report_full(s, ladder) to path through the safe writes of
 * output.h ("-": standard output).  0, or -1 with the reason naming the
 * path (nothing is left at a regular path then). */
int fl_export_report(const fl_session *s, const fl_ladder *ladder,
		     const char *path, fl_error *err);

#endif
