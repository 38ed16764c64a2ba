/* The runner (DESIGN 1.6): writes a program's generated C to a work
 * directory, compiles it into a shared object, and runs it in a child
 * process with a time limit (a crash or hang in generated code is reported,
 * never fatal), feeding the interpreter's deterministic inputs, checking
 * every output -- and, to localise a mismatch, every kernel's outputs --
 * against the reference values, and timing each kernel and the whole
 * program (warm-up, then the median, minimum and maximum of repeats).
 * A CUDA program (--target cuda, target.h) is compiled by nvcc and timed
 * on the device by CUDA events; without a device its C stands in.
 * The ladder times several compiled programs together, interleaved, in
 * one child instead (interleave.h).
 * It never prints: the compiler's and the child's output go to files in
 * the work directory. */
#ifndef FL_RUNNER_H
#define FL_RUNNER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp.h"
#include "kernel.h"
#include "target.h"

/* Progress of long work, for an interactive caller: phase is "compile",
 * "check" (each kernel against the reference) or "time"; k of n done.
 * Called from the thread that called fl_run_program (or fl_build_source,
 * fl_run_build; the job's own thread for a job), never from the test
 * child: the parent polls what the child reports while it waits, so a
 * step may be skipped, but the last k of each phase is always reported.
 * "compile" goes 0/1 then 1/1 (not after a cancelled compile); "check"
 * k/n_kernels as each kernel is checked; "time" k/repeat as each timed
 * repetition ends (0/repeat when the warm-up starts; none when repeat
 * is 0). */
typedef void (*fl_progress_fn)(void *user, const char *phase, int k, int n);

typedef struct fl_run_opts {
	const char *workdir;	/* where the fresh work directory
				   (fuselab-XXXXXX) is made: NULL for
				   $TMPDIR; created when missing.  Nothing
				   else in it is touched. */
	bool keep;		/* keep the work directory */
	const char *cc;		/* compiler; NULL: $CC or "cc" */
	int timeout_s;		/* limit for each kernel call of the test
				   child (it counts again whenever the
				   child starts another call) */
	int warmup, repeat;	/* repeat 0: verify only, time nothing */
	double atol, rtol;	/* pass: |got-want| <= atol + rtol *
				   max(|want|, 0.1 * max |want| over the
				   tensor), so values that cancel to near
				   zero in a long sum are judged on the
				   tensor's scale */
	fl_progress_fn progress;	/* NULL: none */
	void *progress_user;
	/* Set (non-zero) by another thread to cancel: polled every few ms
	 * while the compiler or the test child runs; its whole process
	 * group is killed and reaped and the status is FL_RUN_CANCELLED.
	 * The work directory goes even with keep when fl_build_source or
	 * fl_run_program is cancelled; after a cancelled fl_run_build it
	 * is left to the caller's fl_build_remove.  NULL: cannot be
	 * cancelled. */
	const volatile int *cancel;
	/* Process-wide, set by the caller's signal handler (SIGINT,
	 * SIGTERM): polled like cancel, but the engine never resets it; it
	 * also stops an engine session between passes and the ladder
	 * between strategies, and the work directory goes even with keep.
	 * NULL: none. */
	const volatile sig_atomic_t *interrupt;
	/* Limit on the memory of the whole run in bytes: the tensors the
	 * test child allocates plus the reference values it compares with.
	 * A program needing more is not run (FL_RUN_NO_MEMORY, the bytes
	 * needed and the limit in the message).  0: no limit. */
	int64_t max_bytes;
	/* Pin the test child's OpenMP threads to cores: OMP_PROC_BIND=close
	 * and OMP_PLACES=cores in its environment before it loads gen.so
	 * (--pin).  Off by default. */
	bool pin;
	/* The backend (--target): FL_TARGET_CPU (default) compiles C with
	 * cc; FL_TARGET_CUDA compiles the CUDA unit with nvcc and, when no
	 * CUDA device is present, runs the C of the same program instead
	 * (fl_build_cpu_fallback). */
	fl_target target;
	/* Expected values of graph outputs from elsewhere (--expect DIR:
	 * another runtime's, such as ONNX Runtime's), by tensor name: the
	 * outputs of the run from the inputs alone (step 2) are also
	 * compared with them, element by element, passing when
	 * |got - want| <= expect_atol + expect_rtol * |want| (ONNX's
	 * formula, without the magnitude floor of atol and rtol; NaN matches
	 * NaN, an infinity only itself), into each fl_output_result's
	 * expect_* fields and the result's expect_* summary.  An entry whose
	 * name is not a graph output of the program, or whose element count
	 * differs from it, is not compared.  A mismatch does not unset
	 * verified (that is against the interpreter): the caller judges it.
	 * Not copied: the values must outlive the run.  NULL: none. */
	const fl_feed *expect;
	int n_expect;
	double expect_atol, expect_rtol;	/* default 1e-5, 1e-3 */
} fl_run_opts;

/* Whether o's cancel or interrupt flag is set. */
bool fl_run_cancelled(const fl_run_opts *o);

void fl_run_opts_default(fl_run_opts *o);

typedef enum fl_run_status {
	FL_RUN_OK,
	FL_RUN_NO_COMPILER,
	FL_RUN_COMPILE_ERROR,
	FL_RUN_LOAD_ERROR,
	FL_RUN_CRASH,
	FL_RUN_TIMEOUT,
	FL_RUN_MISMATCH,
	FL_RUN_CANCELLED,
	FL_RUN_NO_MEMORY,	/* over opts max_bytes, or the test child
				   could not allocate its tensors */
} fl_run_status;

const char *fl_run_status_name(fl_run_status s);

typedef struct fl_kernel_result {
	double seconds;		/* median of the timed repeats */
	double min_seconds, max_seconds;	/* spread of the repeats */
	int n_timed;		/* repeats measured (opts repeat) */
	int64_t bytes;		/* global bytes read + written */
	double gbps;
	double max_abs, max_rel;	/* over the tensors it writes */
	bool ok;
} fl_kernel_result;

/* One graph output after the run from the inputs alone (the chained run:
 * float drift accumulates along the graph, so an output may be off
 * tolerance while every kernel reproduces the reference and the program
 * is verified). */
typedef struct fl_output_result {
	int tensor;		/* graph tensor index */
	double max_abs, max_rel;	/* against the reference */
	bool ok;		/* some kernel writes it, and every element is
				   within tolerance (so no NaN or infinity
				   where the reference is finite); true with
				   errors 0 when the reference has no value */
	/* Against the expected values of opts expect (expected false when
	 * it has none for this output): expect_ok when every element is
	 * within expect_atol/expect_rtol; expect_bad elements are not; the
	 * worst (largest error) is element expect_at, expect_got where
	 * expect_want was wanted.  expect_max_rel is relative to
	 * max(|want|, 0.1 * max |want|), as max_rel. */
	bool expected, expect_ok;
	double expect_max_abs, expect_max_rel;
	int64_t expect_bad, expect_at;
	double expect_got, expect_want;
} fl_output_result;

typedef struct fl_run_result {
	fl_strategy strategy;
	fl_run_status status;
	char message[2048];	/* what went wrong, e.g. "gen.c:12: error:
				   ..." or "kernel fl_k3 (ops: mul_1 exp_2)
				   deviates first: ..." */
	int n_kernels;
	fl_kernel_result *kernels;	/* per kernel of the program */
	double total_seconds;	/* median of whole-program runs */
	double total_min_seconds, total_max_seconds;	/* their spread */
	double max_abs, max_rel;	/* end-to-end drift of the graph
					   outputs in a run from the inputs
					   (reported; each kernel is checked
					   on the reference values it reads) */
	bool verified;
	int first_bad_kernel;	/* -1 when none */
	int n_outputs;
	fl_output_result *outputs;	/* per graph output, in tensor order */
	/* The outputs compared with opts expect: how many, how many of them
	 * differ, the worst absolute error over them (0 compared when the
	 * run did not get that far or there were none), and the worst
	 * relative error on the tensors' scale. */
	int expect_compared, expect_failed;
	double expect_max_abs, expect_max_rel;
	char workdir[512];	/* kept only with keep */
	fl_target target;	/* the backend that ran */
	char device[128];	/* the GPU it ran on (fl_device_name), ""
				   for the CPU backend */
	char note[256];		/* e.g. FL_NO_CUDA_DEVICE when the CUDA
				   target fell back to the CPU; "" */
} fl_run_result;

/* Bytes a run of p needs: the test child's copy of every tensor of the
 * graph (*tensors) plus the reference values in ref (*refs; NULL: one of
 * every tensor).  -1 when the count overflows 64 bits. */
int64_t fl_run_bytes_needed(const fl_program *p, const fl_values *ref,
			    int64_t *tensors, int64_t *refs);

/* Frees what r holds (not r itself). */
void fl_run_result_free(fl_run_result *r);

/* A deep copy of src into dst (0, or -1 when out of memory). */
int fl_run_result_copy(fl_run_result *dst, const fl_run_result *src);

/* ---- compiling and running as two steps (the engine's compile and run
 * passes) ------------------------------------------------------------- */

/* A compiled program: gen.so in a work directory. */
typedef struct fl_build {
	fl_run_status status;	/* OK, NO_COMPILER, COMPILE_ERROR or
				   CANCELLED */
	char message[2048];	/* what went wrong */
	char workdir[512];	/* a fresh directory "fuselab-XXXXXX" under
				   $TMPDIR or the caller's --workdir; after
				   a cancelled compile, the one that was
				   removed */
	bool created;		/* workdir exists and is ours: removed, with
				   whatever it holds, by fl_build_remove */
	char parent[512];	/* the caller's --workdir when we created it
				   (removed too when then empty), else "" */
	char so_path[640];
	char compiler[256];	/* the compiler command as run */
	char flags[512];	/* its flags */
	double seconds;		/* wall time of the compile */
	bool cached;		/* gen.so came from the build cache
				   ($FUSELAB_BUILD_CACHE), not the compiler */
	int n_warnings;		/* "warning:" lines in its log */
	char warnings[1024];	/* the first of them */
	fl_target target;	/* what gen.so was built from: gen.c (cc)
				   or gen.cu (nvcc) */
	char note[256];		/* why a CUDA program runs on the CPU
				   (FL_NO_CUDA_DEVICE ...), copied into
				   the run result; "" */
} fl_build;

/* Writes source to gen.c in a work directory and compiles it (with
 * o->target FL_TARGET_CUDA: to gen.cu, compiled by nvcc, see compile.c).
 * Returns 0 when the compiler ran (b->status says how it went), -1 on an
 * internal error (message in err).  Never prints. */
int fl_build_source(const char *source, const fl_run_opts *o, fl_build *b,
		    fl_error *err);

/* Removes the work directory (unless o->keep is set and o->interrupt is
 * not; o: the options b was built with, NULL for the defaults) with
 * everything in it (symbolic links are removed, never followed), and the
 * caller's --workdir when we created it and it is then empty; b becomes
 * empty (all zero). */
void fl_build_remove(fl_build *b, const fl_run_opts *o);

/* Runs a compiled program p (see fl_run_program for what is checked and
 * timed).  When b did not build, r takes its status and message.
 * Returns 0 when the run happened, -1 on an internal error.  A cancelled
 * run leaves b's directory to fl_build_remove. */
int fl_run_build(const fl_build *b, const fl_program *p,
		 const fl_values *ref, const fl_run_opts *o,
		 fl_run_result *r, fl_error *err);

/* ---- a run in a worker thread, for an interactive caller ------------- */

typedef struct fl_run_job fl_run_job;

/* Starts codegen, compile and run of p (fl_run_program) in a new thread
 * (p and ref must outlive the job and stay unchanged; o, NULL for the
 * defaults, is copied with its strings, its cancel pointer ignored: the
 * job has its own; progress is called from the job's thread).  NULL with
 * a message on failure to start. */
fl_run_job *fl_run_job_start(const fl_program *p, const fl_values *ref,
			     const fl_run_opts *o, fl_error *err);
/* Asks the job to stop: the child is killed, the directory removed. */
void fl_run_job_cancel(fl_run_job *j);
/* True once the job has finished (no blocking). */
bool fl_run_job_done(fl_run_job *j);
/* Waits for the job, moves its result into r, frees the job.  Returns
 * what fl_run_program returned. */
int fl_run_job_finish(fl_run_job *j, fl_run_result *r, fl_error *err);

/* Compiles and runs p.  ref holds the interpreter's values of every tensor
 * of p->graph (inputs included: they are what the program is fed).
 * Returns 0 when the run happened (r->status says how it went), -1 on an
 * internal error (message in err). */
int fl_run_program(const fl_program *p, const fl_values *ref,
		   const fl_run_opts *o, fl_run_result *r, fl_error *err);

/* Writes the program's C source to path.  (--emit goes through the
 * engine's codegen pass, which makes the unit of the session's target.) */
int fl_emit_program(const fl_program *p, const char *path, fl_error *err);

/* ---- the CUDA device (cuda_probe.c) ---------------------------------- */

/* What a CUDA run says when there is no GPU to run on. */
#define FL_NO_CUDA_DEVICE "no CUDA device: CPU backend only"

/* Whether a CUDA device is present: the driver (libcuda.so.1, loaded
 * with dlopen, so nothing is linked) initialises and counts one or more
 * devices.  The first device's name goes to name (when given), else the
 * reason there is none ("no CUDA driver", "FUSELAB_NO_CUDA is set", ...).
 * Asked once per process and cached (thread-safe); FUSELAB_NO_CUDA=1 in
 * the environment answers "no device" without asking the driver. */
bool fl_cuda_device_present(char *name, size_t n);

/* The nvcc to run: $NVCC, else nvcc on PATH, else
 * /usr/local/cuda/bin/nvcc; into path, false when none is executable. */
bool fl_nvcc_find(char *path, size_t n);

/* Whether a CUDA build b (o->target FL_TARGET_CUDA) is to be run as the
 * C of the same program on the CPU instead: there is no CUDA device, and
 * the CUDA either compiled or could not be compiled for want of nvcc (a
 * compile error stays an error).  False for the CPU target. */
bool fl_build_cpu_fallback(const fl_build *b, const fl_run_opts *o);

/* cpu->note for a C build that stands in for CUDA build cuda:
 * FL_NO_CUDA_DEVICE, then how the CUDA compile went. */
void fl_build_note_fallback(fl_build *cpu, const fl_build *cuda);

#endif
