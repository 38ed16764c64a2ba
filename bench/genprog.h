/* A graph's generated program, loaded into the benchmark's own process:
 * the engine runs on the graph up to codegen under a strategy, the
 * runner's fl_build_source compiles the C into gen.so (the flags every
 * `fuselab --run` uses), and the benchmark dlopens it and calls the
 * kernels of its fl_kernels table itself, on buffers it owns (bufs[t] =
 * the buffer of tensor t of the engine's primitive graph), so that
 * generated code and a peer library can be timed side by side in one
 * process.  Inputs, parameters and constants hold the interpreter's
 * deterministic values (fl_interp_fill_input, seed 42), so the outputs
 * can be checked against the interpreter or a peer.  Generated code runs
 * in this process: a crash in it ends the benchmark.  A gen.so stays
 * mapped until the process ends (it may have brought in the OpenMP
 * runtime, whose idle threads outlive the program). */
#ifndef FL_BENCH_GENPROG_H
#define FL_BENCH_GENPROG_H

#include <stdint.h>

#include "engine.h"

typedef void (*gp_kernel_fn)(float *const *bufs);

typedef struct gp_prog {
	fl_session *session;	/* owns the program and its graph */
	const fl_program *program;
	fl_run_opts run_opts;
	fl_build build;
	void *dl;		/* gen.so */
	int n_kernels;
	gp_kernel_fn const *kernels;
	int n_bufs;
	float **bufs;		/* per tensor of program->graph */
	int64_t *numel;
	char *borrowed;		/* per tensor: bufs[t] is another
				   program's (gp_share), not freed here */
} gp_prog;

/* Runs the engine on g under strategy st to codegen, compiles and loads
 * the program, allocates and fills its buffers.  0, or -1 with a
 * message in err (gp_close is then already done). */
int gp_open(gp_prog *gp, const fl_graph *g, fl_strategy st, fl_error *err);

/* Calls every kernel of the program once, in execution order. */
void gp_call(void *gp);

/* The buffer of the tensor named `name` in the program's graph and its
 * element count, or NULL. */
float *gp_tensor(const gp_prog *gp, const char *name, int64_t *numel);

/* Makes dst read the tensor dst_name from src's buffer of src_name (same
 * element count) instead of its own copy, so that programs timed against
 * each other read the same memory: with their own copies of a 9 MiB
 * weight matrix each, which of them finds its copy in the last-level
 * cache depends on the order they run in, not on their code.  src must
 * stay open while dst is used.  0, or -1 with a message in err. */
int gp_share(gp_prog *dst, const char *dst_name, const gp_prog *src,
	     const char *src_name, fl_error *err);

/* Unloads the program, removes its work directory, frees everything. */
void gp_close(gp_prog *gp);

/* max |got - want| / max |want| over n values: the error relative to the
 * output's scale (elements that cancel to near zero would make an
 * element-wise relative error meaningless); +inf when got has a NaN or
 * infinity where want is finite. */
double gp_rel_error(const float *got, const float *want, int64_t n);

#endif
