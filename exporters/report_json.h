/* JSON report of the engine state (DESIGN 8), built with cJSON.  Reads
 * the session through engine.h only. */
#ifndef FL_REPORT_JSON_H
#define FL_REPORT_JSON_H

#include <cJSON.h>

#include "engine.h"

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

#endif
