/* The C backend's memory-bound code (issue 11): scalar accumulators for
 * every reduction kind with the interpreter's NaN rule, register
 * placements printed as scalars, per-thread scratch allocated once per
 * kernel call, the capacity check of tile-local buffers (--local-budget)
 * with its "placed" events, and collapse over coincident tile loops.
 *
 * Each test drives the fuselab binary as a user would: --emit to read the
 * generated C, --run to compile, run and verify it against the
 * interpreter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* Writes text into <dir>/<name> and returns the path (static buffer). */
static const char *write_graph(const char *dir, const char *name,
			       const char *text)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* The generated C of strategy `strategy` for graph `graph` (extra
 * options in `extra`), read back from an --emit folder.  malloc'd. */
static char *emit_c(const char *graph, const char *strategy,
		    const char *extra)
{
	char dir[256], cmd[1536], *out = NULL, *src;

	t_make_dir(dir, sizeof dir);
	snprintf(cmd, sizeof cmd, "--batch %s --strategy %s --emit %s %s",
		 graph, strategy, dir, extra ? extra : "");
	if (t_fuselab(cmd, &out) != 0)
		fail_msg("fuselab %s failed:\n%s", cmd, out);
	free(out);
	snprintf(cmd, sizeof cmd, "cat %s/*-%s.c", dir, strategy);
	if (t_run(cmd, &src) != 0)
		fail_msg("no C emitted in %s:\n%s", dir, src);
	t_remove_dir(dir);
	return src;
}

/* Runs every strategy of graph (with extra options) and asserts that each
 * verified; returns the output (malloc'd). */
static char *run_verified(const char *graph, const char *strategy,
			  const char *extra)
{
	char cmd[1024], *out = NULL;
	int rc;

	snprintf(cmd, sizeof cmd, "--batch %s --run --strategy %s --repeat 1 "
		 "--warmup 0 %s", graph, strategy, extra ? extra : "");
	rc = t_fuselab(cmd, &out);
	if (rc != 0 || strstr(out, "verified no") ||
	    !strstr(out, "verified yes"))
		fail_msg("fuselab %s (rc %d):\n%s", cmd, rc, out);
	return out;
}

/* sqrt and log of the generator's inputs in [-1, 1) are NaN for about
 * half of them; rows of 4 are all NaN one time in 16, where fmax/fmin
 * give the identity (-inf, +inf).  A max or min accumulator that let a
 * NaN through -- the plain a > b ? a : b, or OpenMP's max over lanes
 * holding NaN -- would give NaN where the interpreter gives a number. */
static const char nan_graph[] =
	"{\"format\": \"fuselab-graph/1\", \"name\": \"nan_reduce\",\n"
	" \"tensors\": {\n"
	"  \"x\": {\"shape\": [256, 4], \"dtype\": \"f32\", \"role\": \"input\"},\n"
	"  \"w\": {\"shape\": [64, 300], \"dtype\": \"f32\", \"role\": \"input\"},\n"
	"  \"hi\": {\"shape\": [256, 1], \"dtype\": \"f32\", \"role\": \"output\"},\n"
	"  \"lo\": {\"shape\": [64, 1], \"dtype\": \"f32\", \"role\": \"output\"}},\n"
	" \"ops\": [\n"
	"  {\"name\": \"r\", \"op\": \"sqrt\", \"in\": [\"x\"], \"out\": \"r\"},\n"
	"  {\"name\": \"hi\", \"op\": \"reduce_max\", \"in\": [\"r\"], \"out\": \"hi\",\n"
	"   \"attrs\": {\"axes\": [-1]}},\n"
	"  {\"name\": \"l\", \"op\": \"log\", \"in\": [\"w\"], \"out\": \"l\"},\n"
	"  {\"name\": \"lo\", \"op\": \"reduce_min\", \"in\": [\"l\"], \"out\": \"lo\",\n"
	"   \"attrs\": {\"axes\": [-1]}}]}\n";

static void test_placement_max_min_accumulators_keep_nan_rule(void **state)
{
	char dir[256], *src, *out;
	const char *g;

	(void)state;
	t_make_dir(dir, sizeof dir);
	g = write_graph(dir, "nan_reduce.json", nan_graph);
	for (int s = 0; s < 2; s++) {
		src = emit_c(g, s ? "unfused" : "apollo-l1", NULL);
		t_assert_contains(src, "#pragma omp simd reduction(max:fl_acc0)");
		t_assert_contains(src, "fl_acc0 = fl_fmaxf(fl_acc0, ");
		t_assert_contains(src, "#pragma omp simd reduction(min:fl_acc0)");
		t_assert_contains(src, "fl_acc0 = fl_fminf(fl_acc0, ");
		free(src);
	}
	out = run_verified(g, "all", NULL);
	free(out);
	t_remove_dir(dir);
}

FL_SUITE(placement,
	cmocka_unit_test(test_placement_max_min_accumulators_keep_nan_rule),
);
