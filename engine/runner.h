/* The runner (DESIGN 1.6): writes a program's generated C to a work
 * directory, compiles it into a shared object, and runs it in a child
 * process with a time limit (a crash or hang in generated code is reported,
 * never fatal), feeding the interpreter's deterministic inputs, checking
 * every output -- and, to localise a mismatch, every kernel's outputs --
 * against the reference values, and timing each kernel and the whole
 * program (warm-up, then the median of repeats). */
#ifndef FL_RUNNER_H
#define FL_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include "interp.h"
#include "kernel.h"

typedef struct fl_run_opts {
	const char *workdir;	/* NULL: a fresh directory under $TMPDIR */
	bool keep;		/* keep the work directory */
	const char *cc;		/* compiler; NULL: $CC or "cc" */
	int timeout_s;		/* limit for the child process */
	int warmup, repeat;
	double atol, rtol;	/* pass: |got-want| <= atol + rtol *
				   max(|want|, 0.1 * max |want| over the
				   tensor), so values that cancel to near
				   zero in a long sum are judged on the
				   tensor's scale */
} fl_run_opts;

void fl_run_opts_default(fl_run_opts *o);

typedef enum fl_run_status {
	FL_RUN_OK,
	FL_RUN_NO_COMPILER,
	FL_RUN_COMPILE_ERROR,
	FL_RUN_LOAD_ERROR,
	FL_RUN_CRASH,
	FL_RUN_TIMEOUT,
	FL_RUN_MISMATCH,
} fl_run_status;

const char *fl_run_status_name(fl_run_status s);

typedef struct fl_kernel_result {
	double seconds;		/* median */
	int64_t bytes;		/* global bytes read + written */
	double gbps;
	double max_abs, max_rel;	/* over the tensors it writes */
	bool ok;
} fl_kernel_result;

typedef struct fl_run_result {
	fl_strategy strategy;
	fl_run_status status;
	char message[2048];	/* what went wrong, e.g. "gen.c:12: error:
				   ..." or "kernel fl_k3 (ops: mul_1 exp_2)
				   deviates first: ..." */
	int n_kernels;
	fl_kernel_result *kernels;	/* per kernel of the program */
	double total_seconds;	/* median of whole-program runs */
	double max_abs, max_rel;	/* end-to-end drift of the graph
					   outputs in a run from the inputs
					   (reported; each kernel is checked
					   on the reference values it reads) */
	bool verified;
	int first_bad_kernel;	/* -1 when none */
	char workdir[512];	/* kept only with keep */
} fl_run_result;

/* Frees what r holds (not r itself). */
void fl_run_result_free(fl_run_result *r);

/* Compiles and runs p.  ref holds the interpreter's values of every tensor
 * of p->graph (inputs included: they are what the program is fed).
 * Returns 0 when the run happened (r->status says how it went), -1 on an
 * internal error (message in err). */
int fl_run_program(const fl_program *p, const fl_values *ref,
		   const fl_run_opts *o, fl_run_result *r, fl_error *err);

/* Writes the program's C source to path (for --emit). */
int fl_emit_program(const fl_program *p, const char *path, fl_error *err);

#endif
