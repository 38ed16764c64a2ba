/* Command-line options of fuselab.  One table in options.c describes every
 * option; --help is generated from it so the two never drift. */
#ifndef FL_APP_OPTIONS_H
#define FL_APP_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "machine.h"
#include "target.h"

typedef enum fl_mode {
	FL_MODE_INTERACTIVE,
	FL_MODE_CHECK,
	FL_MODE_BATCH,
	FL_MODE_HELP,
	FL_MODE_VERSION,
	FL_MODE_LIST_OPS,
} fl_mode;

typedef enum fl_format {
	FL_FORMAT_TEXT,
	FL_FORMAT_JSON,
	FL_FORMAT_JSONL,
} fl_format;

#define FL_MAX_LIST 64

typedef struct fl_options {
	fl_mode mode;
	const char *file;	/* NULL: the built-in sample */
	bool interpret;
	uint64_t seed;
	const char *inputs_dir;	/* --inputs: input_K.pb files */
	const char *expect_dir;	/* --expect: output_K.pb files */
	double expect_atol;	/* --expect-atol, when expect_atol_set */
	bool expect_atol_set;
	int64_t max_bytes;
	/* engine */
	const char *stage;	/* a pass name, "partition", or NULL */
	int step;		/* --step N; -1: to the end */
	bool events;
	fl_format format;
	const char *why_a, *why_b;
	const char *rules_file;
	const char *overrides_file;	/* --overrides: fuselab-overrides/1 */
	bool no_preprocess;
	int n_disabled, n_never, n_fuse;
	/* layer 1 and runs */
	bool run;
	const char *strategy;	/* NULL or "all": every strategy */
	const char *emit_dir;
	const char *workdir;
	bool keep;
	bool pin;		/* --pin: timing threads pinned to cores */
	/* --machine, else $FUSELAB_MACHINE: the description (NULL: plan
	 * for the host) and the machine it gives (machine.h) */
	const char *machine_spec;
	fl_machine machine;
	fl_target target;	/* --target: the backend (default cpu) */
	int timeout_s, warmup, repeat;
	long sched_budget;	/* 0: default */
	double max_recompute;	/* 0: default */
	double l1_time_budget;	/* seconds; 0: default */
	int l1_max_stmts;	/* 0: default */
	int64_t local_budget;	/* --local-budget bytes; 0: default */
	int64_t stitch_capacity;	/* --stitch-capacity bytes; 0: default */
	bool launch_cost_set;		/* --launch-cost given */
	double launch_cost_us;
	int n_tile;
	int64_t tile[8];
	/* exports (DESIGN 8) */
	const char *dot, *svg, *png;	/* FILE or DIR */
	const char *trace_file, *report_file;
	const char *onnx_file;	/* --export-onnx: the graph as loaded */
	bool frames, schedule_trees;
	int neighbourhood;	/* -1: the whole graph */
	const char *domain;	/* "KERNEL:STATEMENT" */
	int domain_dims[2];	/* -1: the statement's last two */
	int n_domain_fixed;
	long domain_fixed[8];
	const char *disabled[FL_MAX_LIST];
	const char *never[FL_MAX_LIST];	/* "A,B" */
	const char *fuse[FL_MAX_LIST];
	/* ONNX import (DESIGN 9): --input-shape NAME=d1,d2,... as given */
	int n_input_shape;
	const char *input_shape[FL_MAX_LIST];
	/* --bind-inputs DIR and --bind NAME=FILE as given: values for
	 * inputs an op needs at import */
	const char *bind_dir;
	int n_bind;
	const char *bind[FL_MAX_LIST];
} fl_options;

/* Parses argv; on a usage error writes the message to `err` (a line of at
 * most 512 bytes) and returns -1. */
int fl_options_parse(int argc, char **argv, fl_options *o, char *err,
		     size_t err_len);

void fl_options_print_help(FILE *out);

/* Comma-separated whole numbers >= lo ("32,32") into v[0..max); their
 * count, or -1 for anything else (more than max, a trailing comma). */
int fl_options_parse_numbers(const char *arg, long *v, int max, long lo);

#endif
