/* Shared helpers for the cmocka suite.  Every test file defines one suite
 * with FL_SUITE(name, cmocka_unit_test(...), ...) and test_main.c runs them
 * all as one group, so the run ends with one cmocka summary line. */
#ifndef FL_TEST_UTIL_H
#define FL_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine.h"
#include "graph.h"

#define FL_SUITE(name, ...)                                                  \
	const struct CMUnitTest fl_suite_##name[] = {__VA_ARGS__};           \
	const size_t fl_suite_##name##_n =                                   \
		sizeof fl_suite_##name / sizeof fl_suite_##name[0]

/* 1 in the sanitizer build, where the slowest sweeps over every sample
 * run on a few representative ones (the plain pass runs them all). */
#if defined(__SANITIZE_ADDRESS__)
#define T_SANITIZED 1
#else
#define T_SANITIZED 0
#endif

#define FL_SUITE_DECL(name)                                                  \
	extern const struct CMUnitTest fl_suite_##name[];                    \
	extern const size_t fl_suite_##name##_n

/* Loads a graph from JSON text; fails the test with the loader's message
 * when it does not load. */
fl_graph *t_load(const char *json);

/* t_load of JSON written with ' in place of " (readable in C strings). */
fl_graph *t_load_q(const char *single_quoted);

/* Loads samples/<name>.json from the samples folder; fails the test with
 * the loader's message when it does not load. */
fl_graph *t_load_sample(const char *name);

/* Asserts that loading fails and that the message contains `expect`;
 * returns nothing, prints the message on mismatch. */
void t_load_fails(const char *json, const char *expect);

/* Asserts |got-want| <= atol + rtol*|want| elementwise (NaNs must match). */
void t_assert_close(const float *got, const float *want, int64_t n,
		    double atol, double rtol);

/* Asserts that op's shape inference on input shapes `in` fails with
 * exactly the message `expect`. */
void t_infer_fails(const fl_op *op, const fl_shape *in, const char *expect);

/* Runs a shell command, captures stdout+stderr (malloc'd, caller frees)
 * and returns its exit status (-1 if it did not exit normally). */
int t_run(const char *cmd, char **output);

/* Runs "fuselab ARGS" (the binary under test), returns its status as
 * t_run does, stdout+stderr in *out (malloc'd). */
int t_fuselab(const char *args, char **out);

/* Runs fuselab ARGS; fails unless it exits with `status` and its output
 * contains `needle`. */
void t_expect_fuselab(const char *args, int status, const char *needle);

/* The random graph of `seed` with n_ops ops (fl_random_graph); fails the
 * test naming the seed when there is none. */
fl_graph *t_random_graph(uint64_t seed, int n_ops);

/* nvcc's flags for the compile checks of generated .cu text: object code
 * for sm_90 with every optimiser off.  cicc's optimiser is most of
 * nvcc's time (a batch of BERT's five units: 14.9 s of CPU at -O3, 3.8 s
 * at -O0), and what these checks catch -- C++ errors in the front end,
 * resource limits such as too much __shared__ in ptxas, host code in the
 * host compiler -- does not depend on it. */
/* The machine every test plans for, whatever runs it (test_main assumes
 * it in this process and exports it as FUSELAB_MACHINE to every fuselab
 * the tests start): tile sizes, and so the counts, footprints and events
 * the tests read, follow the machine.  The 2-core AVX2 machine the
 * expectations were written on. */
#define T_MACHINE "cores=2,l1d=32K,l2=512K,l3=32M,isa=avx2+fma," \
		  "model=test machine"

#define T_NVCC_CHECK "-c -std=c++17 -arch=sm_90 -O0 -Xcicc -O0 -Xptxas -O0"

/* A session on g under strategy s, run through codegen for the CUDA
 * target, whose source has a __global__ kernel; fails the test naming
 * `what` when there is none.  The caller closes it. */
fl_session *t_cuda_codegen(const fl_graph *g, fl_strategy s,
			   const char *what);

/* The output of "fuselab --batch ARGS GRAPH", GRAPH a path when it has a
 * '/', else the name of a sample; fails the test when fuselab fails.
 * malloc'd. */
char *t_fuselab_ok(const char *args, const char *graph);

/* Writes text into <dir>/<name>; the path (a static buffer). */
const char *t_write_graph(const char *dir, const char *name,
			  const char *text);

/* How many times needle occurs in hay (overlaps counted). */
int t_occurrences(const char *hay, const char *needle);

/* "fuselab --batch PATH --run" under every strategy (apollo alone in the
 * sanitizer pass: the generated code is not sanitized, the plain pass
 * verifies every strategy's), its work files in dir; fails the test,
 * naming `what`, unless each strategy verified. */
void t_verifies_every_strategy(const char *path, const char *dir,
			       const char *what);

/* The same for a JSON graph written with ' for " (so that C strings stay
 * readable), saved as `name` in a fresh directory removed afterwards. */
void t_graph_verifies_every_strategy(const char *name, const char *graph);

/* Runs the Python `script` (onnx and numpy) in a fresh directory: it
 * writes m.onnx and d/input_K.pb, d/output_K.pb; then fuselab runs m.onnx
 * under every strategy (apollo alone when sanitized) with --inputs d
 * --expect d, and the test fails unless it ran, nothing was opaque and
 * every strategy verified.  The output (malloc'd) for the caller's own
 * checks; the directory is removed. */
char *t_numpy_model_every_strategy(const char *script);

/* The contents of file `path` (malloc'd, NUL-terminated; *len its length
 * when len is not NULL); fails the test when it cannot be read. */
char *t_read_file(const char *path, size_t *len);

/* A fresh directory under $TMPDIR (or /tmp) into dir[0..n); fails the
 * test when it cannot be made.  t_remove_dir removes it with everything
 * in it. */
void t_make_dir(char *dir, size_t n);
void t_remove_dir(const char *dir);

/* Graphviz's own dot lays the file out without a word on stderr (fails
 * the test with dot's output otherwise). */
void t_assert_dot_accepts(const char *path);

/* Fails the test, showing hay, unless it contains needle. */
void t_assert_contains(const char *hay, const char *needle);

/* Entries of a directory, "." and ".." aside (fails when unreadable). */
int t_count_entries(const char *dir);

/* Path of the fuselab binary under test and of the samples folder (from the
 * environment set by make test). */
const char *t_fuselab_bin(void);
const char *t_samples_dir(void);

/* The samples' names (file names without .json), sorted, into names;
 * returns how many. */
int t_sample_names(char names[][64], int max);

/* The repository's root folder: FUSELAB_ROOT (set by make test), else the
 * folder above FUSELAB_SAMPLES, else the current folder. */
const char *t_repo_root(void);

#endif
