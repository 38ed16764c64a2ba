/* The C + OpenMP backend (DESIGN 1.6): isl AST generation from each
 * kernel's schedule tree, printed as C.
 *
 * The translation unit has one function per kernel,
 *     void fl_k<id>(float *const *bufs);
 * where bufs[t] is the buffer of graph tensor t (row-major f32, global
 * placement).  Tile-local tensors are local arrays sized by their
 * footprint box; the outermost parallel loop gets
 * "#pragma omp parallel for".  A comment at the top of each kernel lists
 * its source ops (provenance).  Identifiers are generated; names from the
 * input file appear only inside comments, sanitised so they cannot end the
 * comment.  Also exported: "int fl_n_kernels" and
 * "void (*const fl_kernels[])(float *const *)" in execution order.
 *
 * Implemented by prepare.c (placements and marks), annotate.c (the
 * annotated isl AST) and print_c.c (the C text and these entry points),
 * sharing codegen_impl.h; scalar bodies come from the op table (fl_op_c
 * in ops.h). */
#ifndef FL_CODEGEN_H
#define FL_CODEGEN_H

#include "kernel.h"
#include "target.h"

/* The C source of program p (malloc'd), or NULL with a message: the
 * unit of every kernel's function. */
char *fl_codegen_c(const fl_program *p, fl_error *err);

/* The C function of kernel i of p alone (malloc'd): its provenance
 * comment, local arrays and body.  The codegen pass makes one per kernel
 * (a "generated" decision each). */
char *fl_codegen_c_kernel(const fl_program *p, int i, fl_error *err);

/* A tensor layer 1 placed tile-local or in registers that the generated
 * code keeps in global memory after all (the backend found no fixed
 * footprint box, a local array would need two declaring loops, ...). */
typedef struct fl_codegen_demotion {
	int tensor;		/* graph tensor */
	fl_placement from;	/* what layer 1 decided */
	char why[200];
} fl_codegen_demotion;

/* fl_codegen_c_kernel, also giving the demotions of kernel i in
 * *demoted (malloc'd; NULL and 0 when none). */
char *fl_codegen_c_kernel_placed(const fl_program *p, int i,
				 fl_codegen_demotion **demoted, int *n_demoted,
				 fl_error *err);

/* fl_codegen_c_kernel_placed where the tile-local arrays of one tile may
 * take local_budget bytes together (0: the machine's per-core L2); past
 * it the largest become global, each a demotion naming the numbers.
 * fl_codegen_c_kernel_placed uses the default. */
char *fl_codegen_c_kernel_budget(const fl_program *p, int i,
				 int64_t local_budget,
				 fl_codegen_demotion **demoted, int *n_demoted,
				 fl_error *err);

/* The translation unit around kernel functions kernels[0..n_kernels-1]
 * made by fl_codegen_c_kernel: header, declarations, the functions, the
 * kernel table (malloc'd). */
char *fl_codegen_c_unit(const fl_program *p, const char *const *kernels,
			fl_error *err);

/* Copies s into buf with anything that could end or nest a C comment
 * ("*" followed by "/", "/" followed by "*") and non-printable bytes
 * replaced; for user names inside comments. */
void fl_sanitize_comment(const char *s, char *buf, size_t n);

/* ---- the CUDA backend (print_cuda.c; target.h has the unit's ABI) ---- */

/* The CUDA of kernel i of p: its phases as __global__ functions (one
 * launch per top-level part of its schedule, so that what one part
 * writes is complete before the next reads it: the grid has no barrier)
 * and the host function fl_k<id>(bufs) that launches them.  The tile
 * band's outermost parallel loops run over blocks, the point band's
 * outermost coincident loops over the block's 32 x 8 threads; tile-local
 * arrays outside the thread loops are __shared__ when the kernel's fit
 * shared_budget bytes (0: FL_CUDA_SHARED_DEFAULT), else global, each a
 * demotion; reductions the C backend keeps in scalar accumulators run as
 * block-level tree reductions (warp shuffles).  *demoted as for
 * fl_codegen_c_kernel_placed (demoted may be NULL).  malloc'd. */
char *fl_codegen_cuda_kernel(const fl_program *p, int i,
			     int64_t shared_budget,
			     fl_codegen_demotion **demoted, int *n_demoted,
			     fl_error *err);

/* The .cu translation unit around kernels[0..n_kernels-1] made by
 * fl_codegen_cuda_kernel: prologue, device maths, the device copies of
 * the tensors, the kernels, the table and entry points of target.h. */
char *fl_codegen_cuda_unit(const fl_program *p, const char *const *kernels,
			   fl_error *err);

/* Both steps for every kernel of p (default budget). */
char *fl_codegen_cuda(const fl_program *p, fl_error *err);

/* The unit for target t: fl_codegen_c or fl_codegen_cuda. */
char *fl_codegen_target(const fl_program *p, fl_target t, fl_error *err);

#endif
