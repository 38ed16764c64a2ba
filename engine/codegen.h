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
 * "void (*const fl_kernels[])(float *const *)" in execution order. */
#ifndef FL_CODEGEN_H
#define FL_CODEGEN_H

#include "kernel.h"

/* The C source of program p (malloc'd), or NULL with a message. */
char *fl_codegen_c(const fl_program *p, fl_error *err);

/* Copies s into buf with anything that could end or nest a C comment
 * ("*" followed by "/", "/" followed by "*") and non-printable bytes
 * replaced; for user names inside comments. */
void fl_sanitize_comment(const char *s, char *buf, size_t n);

#endif
