/* --inputs DIR and --expect DIR: given input values and expected outputs
 * as serialized ONNX TensorProto files, laid out as ONNX's backend tests
 * store them (DIR/input_0.pb, input_1.pb, ...; output_0.pb, ...).
 *
 * A file's tensor goes to the graph input (or output) of its name, else
 * to the one at its position (as ONNX's test runner matches them).  Every value is converted to float, as
 * fuselab computes in f32. */
#ifndef FL_APP_FEEDS_H
#define FL_APP_FEEDS_H

#include "graph.h"
#include "interp.h"
#include "onnx_import.h"

/* ONNX's backend-test tolerances: |got - want| <= atol + rtol |want|. */
#define FL_EXPECT_RTOL 1e-3
#define FL_EXPECT_ATOL 1e-7

/* --run --expect: each strategy's outputs against the expected ones.
 * The generated kernels compute in float where the interpreter
 * accumulates in double, so an output that cancels to near zero carries
 * float rounding of about 1e-6 of its neighbours: atol 1e-5. */
#define FL_EXPECT_RUN_RTOL 1e-3
#define FL_EXPECT_RUN_ATOL 1e-5

/* A float16 or bfloat16 output is compared at rtol one unit in the last
 * place of its type (fl_dtype_ulp: 2^-10, 2^-7) when that is above
 * rtol: a result rounded once more or less, or another way (ONNX 1.12's
 * test data truncates to bfloat16 where fuselab rounds to nearest even:
 * docs/types.md), is at most that apart. */
double fl_expect_rtol(fl_dtype dt, double rtol);

typedef struct fl_tensor_files {
	int n;
	fl_feed *t;		/* name: the graph tensor's (owned) */
	char **path;		/* the file each came from */
} fl_tensor_files;

/* Reads DIR/<stem>_0.pb, <stem>_1.pb, ... ("input" or "output") and
 * matches each to g's inputs or outputs; -1 with "DIR/input_1.pb: ..."
 * on any problem (none found where the graph has some, more files than
 * the graph has tensors, a shape the graph does not have, a tensor given
 * twice, an unreadable file).  The files of the n_bound inputs the
 * import bound to given values (--bind-inputs; by name, or an unnamed
 * file by its position) are skipped, and the positions of the others
 * count the remaining inputs (bound may be NULL). */
int fl_tensor_files_load(const char *dir, const char *stem, const fl_graph *g,
			 const fl_onnx_bound_input *bound, int n_bound,
			 fl_tensor_files *f, fl_error *err);

void fl_tensor_files_free(fl_tensor_files *f);

/* Compares the interpreter's values v of g with the expected outputs e
 * at FL_EXPECT_RTOL and atol (FL_EXPECT_ATOL unless --expect-atol),
 * printing one line per output ("expect NAME [shape]: ok (...)" or
 * "... MISMATCH ..."); 0 when every one is within the tolerances. */
int fl_expect_compare(const fl_graph *g, const fl_values *v,
		      const fl_tensor_files *e, double atol);

#endif
