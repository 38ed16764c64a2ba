/* Canonical reduction forms (issue 12; engine/layer1/reduce_form.c and
 * the all-reduce loops of engine/backend/annotate.c): layer 1 rewrites
 * the schedule tree of a reduction's kernel into its canonical form, says
 * so in a "reduce-form" event, and the C backend maps the form to the
 * machine -- an all-reduce as per-thread partial results combined by
 * OpenMP, an x-reduce (reduced outside the kept innermost dim, a column
 * sum) as a row of partials updated with "omp simd" across the kept dim,
 * a y-reduce (reduced innermost, a row reduction) as today's scalar
 * accumulator.  Every graph also runs under every strategy and verifies
 * against the interpreter.
 *
 * Each test drives the fuselab binary: --stage layer1 for the tree,
 * --events for the decision, --emit for the C, --run for the results. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* The generated C of apollo-l1 for graph g, from an --emit folder. */
static char *emit_c(const char *g)
{
	char dir[256], args[512], cmd[512], *src;

	t_make_dir(dir, sizeof dir);
	snprintf(args, sizeof args, "--strategy apollo-l1 --emit %s", dir);
	free(t_fuselab_ok(args, g));
	snprintf(cmd, sizeof cmd, "cat %s/*-apollo-l1.c", dir);
	if (t_run(cmd, &src) != 0)
		fail_msg("no C emitted in %s:\n%s", dir, src);
	t_remove_dir(dir);
	return src;
}

/* Every strategy runs graph g and verifies. */
static void run_verified(const char *g)
{
	char *out = t_fuselab_ok("--run --strategy all --repeat 1 "
			       "--warmup 0", g);

	if (strstr(out, "verified no") || strstr(out, "NOT verified") ||
	    !strstr(out, "verified yes"))
		fail_msg("a strategy did not verify:\n%s", out);
	free(out);
}

/* The layer-1 state (schedule trees) and the event log of graph g under
 * apollo-l1, both asserted to hold each of the `n` strings of want[]. */
static void assert_layer1(const char *g, const char *const *want, int n)
{
	char *out = t_fuselab_ok("--strategy apollo-l1 --stage layer1 "
			       "--events", g);
	char *tree = t_fuselab_ok("--strategy apollo-l1 --stage layer1", g);
	size_t len = strlen(out) + strlen(tree) + 2;
	char *both = malloc(len);

	assert_non_null(both);
	snprintf(both, len, "%s\n%s", tree, out);
	for (int i = 0; i < n; i++)
		t_assert_contains(both, want[i]);
	free(both);
	free(tree);
	free(out);
}

/* A graph of one input x, ops `ops` (JSON) and output y. */
static const char *graph_of(const char *dir, const char *name,
			    const char *xshape, const char *yshape,
			    const char *ops)
{
	char text[2048];

	snprintf(text, sizeof text,
		 "{\"format\": \"fuselab-graph/1\", \"name\": \"%s\",\n"
		 " \"tensors\": {\n"
		 "  \"x\": {\"shape\": %s, \"dtype\": \"f32\", "
		 "\"role\": \"input\"},\n"
		 "  \"y\": {\"shape\": %s, \"dtype\": \"f32\", "
		 "\"role\": \"output\"}},\n"
		 " \"ops\": [%s]}\n", name, xshape, yshape, ops);
	return t_write_graph(dir, "g.json", text);
}

/* reduce_sum over both axes of [512, 1024]: an all-reduce.  The tree is
 * one band over both dims under the all-reduce mark; the code sums each
 * thread's rows into a private partial, which OpenMP adds up at the end
 * (before: a serial row loop around a simd row sum). */
static void test_reduce_form_all_reduce_sum(void **state)
{
	static const char *const want[] = {
		"mark: \"all-reduce\"",
		"schedule: \"[{ S0_1[i0, i1] -> [(i0)] }, "
		"{ S0_1[i0, i1] -> [(i1)] }]\"",
		"reduce-form [s] fl_k0: all-reduce: one reduction band over "
		"i0, i1 under an all-reduce mark",
		"not tiled: in canonical all-reduce form",
	};
	char dir[256], *src;
	const char *g, *par, *simd, *upd, *store;

	(void)state;
	t_make_dir(dir, sizeof dir);
	g = graph_of(dir, "all_sum", "[512, 1024]", "[1, 1]",
		     "{\"name\": \"s\", \"op\": \"reduce_sum\", \"in\": [\"x\"], "
		     "\"out\": \"y\", \"attrs\": {\"axes\": [0, 1]}}");
	assert_layer1(g, want, 4);
	src = emit_c(g);
	par = strstr(src, "#pragma omp parallel for reduction(+:fl_acc0)\n"
		     "    for (int c0 = 0; c0 <= 511; c0 += 1) {");
	simd = strstr(src, "#pragma omp simd reduction(+:fl_acc0)\n"
		      "      for (int c1 = 0; c1 <= 1023; c1 += 1) {");
	upd = strstr(src, "fl_acc0 = fl_acc0 + T0[c0][c1];");
	store = strstr(src, "T1[0][0] = fl_acc0;");
	if (!par || !simd || !upd || !store || !(par < simd) ||
	    !(simd < upd) || !(upd < store))
		fail_msg("expected per-thread partial sums combined at the "
			 "end:\n%s", src);
	free(src);
	run_verified(g);
	t_remove_dir(dir);
}

/* reduce_sum over axis 0 of [1024, 256] (column sums): an x-reduce.  The
 * reduced dim moves outside the kept one, which stays innermost and
 * coincident: each row of x is added to a row of partial sums with
 * "omp simd" across the columns (before: one column at a time, a
 * stride-256 walk down x). */
static void test_reduce_form_column_sum(void **state)
{
	static const char *const want[] = {
		"schedule: \"[{ S0_1[i0, i1] -> [(i0)] }, "
		"{ S0_1[i0, i1] -> [(i1)] }]\"\n"
		"          permutable: 1\n"
		"          coincident: [ 0, 1 ]",
		"reduce-form [s] fl_k0: x-reduce: moved reduced i0 outside "
		"kept i1 (innermost, vectorised",
	};
	char dir[256], *src;
	const char *g, *rows, *simd, *upd;

	(void)state;
	t_make_dir(dir, sizeof dir);
	g = graph_of(dir, "col_sum", "[1024, 256]", "[1, 256]",
		     "{\"name\": \"s\", \"op\": \"reduce_sum\", \"in\": [\"x\"], "
		     "\"out\": \"y\", \"attrs\": {\"axes\": [0]}}");
	assert_layer1(g, want, 2);
	src = emit_c(g);
	rows = strstr(src, "for (int c1 = 0; c1 <= 1023; c1 += 1) {\n");
	simd = rows ? strstr(rows, "#pragma omp simd\n") : NULL;
	upd = strstr(src, "T1[0][c2] = T1[0][c2] + T0[c1][c2];");
	if (!rows || !simd || !upd || !(simd < upd))
		fail_msg("expected a simd row of partial sums inside the "
			 "row loop:\n%s", src);
	t_assert_contains(src, "#pragma omp parallel for\n");
	if (strstr(src, "fl_acc0"))
		fail_msg("a column sum kept in a scalar:\n%s", src);
	free(src);
	run_verified(g);
	t_remove_dir(dir);
}

/* reduce_min of sqrt(x) over all three axes of [16, 64, 256]: the two
 * outer dims are flattened into one band member (PANAMERA), the
 * innermost stays on its own for vectors; the threads split the
 * flattened loop, and the NaNs of sqrt are skipped by every partial. */
static void test_reduce_form_all_reduce_flattens_3d(void **state)
{
	static const char *const want[] = {
		"S1_1[i0, i1, i2] -> [(64i0 + i1)]",
		"S1_1[i0, i1, i2] -> [(i2)]",
		"all-reduce: one reduction band over (i0, i1) flattened, i2",
	};
	char dir[256], *src;
	const char *g;

	(void)state;
	t_make_dir(dir, sizeof dir);
	g = graph_of(dir, "min3", "[16, 64, 256]", "[1, 1, 1]",
		     "{\"name\": \"r\", \"op\": \"sqrt\", \"in\": [\"x\"], "
		     "\"out\": \"r\"},\n"
		     "{\"name\": \"m\", \"op\": \"reduce_min\", \"in\": [\"r\"], "
		     "\"out\": \"y\", \"attrs\": {\"axes\": [0, 1, 2]}}");
	assert_layer1(g, want, 3);
	src = emit_c(g);
	t_assert_contains(src, "#pragma omp parallel for reduction(min:fl_acc0)\n"
			  "    for (int c0 = 0; c0 <= 1023; c0 += 1) {");
	t_assert_contains(src, "#pragma omp simd reduction(min:fl_acc0)\n"
			  "      for (int c1 = 0; c1 <= 255; c1 += 1) {");
	t_assert_contains(src, " < fl_acc0 ? ");
	free(src);
	run_verified(g);
	t_remove_dir(dir);
}

/* The column sums of x*x: the square runs beside the update at each
 * point of the x-reduce's nest; layer 1 places it in a register and the
 * C backend, which reads the outer band of the canonical tree as the
 * kernel's tiles, holds it in a scalar rather than writing x*x out. */
static void test_reduce_form_column_producer_in_register(void **state)
{
	char dir[256], *src;
	const char *g;

	(void)state;
	t_make_dir(dir, sizeof dir);
	g = graph_of(dir, "col_sq", "[1024, 256]", "[1, 256]",
		     "{\"name\": \"q\", \"op\": \"square\", \"in\": [\"x\"], "
		     "\"out\": \"q\"},\n"
		     "{\"name\": \"s\", \"op\": \"reduce_sum\", \"in\": [\"q\"], "
		     "\"out\": \"y\", \"attrs\": {\"axes\": [0]}}");
	src = emit_c(g);
	t_assert_contains(src, "T2_r = T0[c1][c2] * T0[c1][c2];");
	t_assert_contains(src, "T1[0][c2] = T1[0][c2] + T2_r;");
	if (strstr(src, "bufs[2]"))
		fail_msg("x*x written to memory:\n%s", src);
	free(src);
	run_verified(g);
	t_remove_dir(dir);
}

/* reduce_max over the last axis of [1024, 256] (a row max): a y-reduce,
 * canonical as isl schedules it; nothing moves, and the code keeps the
 * scalar accumulator with "omp simd reduction(max:)". */
static void test_reduce_form_row_max(void **state)
{
	static const char *const want[] = {
		"reduce-form [s] fl_k0: y-reduce: canonical as scheduled: the "
		"reduced dim runs innermost; nothing moved",
	};
	char dir[256], *src;
	const char *g;

	(void)state;
	t_make_dir(dir, sizeof dir);
	g = graph_of(dir, "row_max", "[1024, 256]", "[1024, 1]",
		     "{\"name\": \"s\", \"op\": \"reduce_max\", \"in\": [\"x\"], "
		     "\"out\": \"y\", \"attrs\": {\"axes\": [-1]}}");
	assert_layer1(g, want, 1);
	src = emit_c(g);
	t_assert_contains(src, "#pragma omp simd reduction(max:fl_acc0)");
	t_assert_contains(src, "fl_acc0 = T0[c1][c2] > fl_acc0 ? T0[c1][c2] : fl_acc0;");
	if (strstr(src, "mark") || strstr(src, "parallel for reduction"))
		fail_msg("a row reduction run as an all-reduce:\n%s", src);
	free(src);
	run_verified(g);
	t_remove_dir(dir);
}

/* reduce_mean of x*x over both axes: the square fuses into the
 * reduction, and both statements go into the all-reduce band (the
 * mean's scale is a micro-graph of its own: no rule merges a reduction
 * with its consumers). */
static void test_reduce_form_mean_of_squares(void **state)
{
	static const char *const want[] = {
		"mark: \"all-reduce\"",
		"all-reduce: one reduction band over i0, i1 under an "
		"all-reduce mark (per-thread partials combined at the end); "
		"nest: 2 statements",
	};
	char dir[256], *src;
	const char *g;

	(void)state;
	t_make_dir(dir, sizeof dir);
	g = graph_of(dir, "mean_sq", "[256, 512]", "[1, 1]",
		     "{\"name\": \"q\", \"op\": \"square\", \"in\": [\"x\"], "
		     "\"out\": \"q\"},\n"
		     "{\"name\": \"m\", \"op\": \"reduce_mean\", \"in\": [\"q\"], "
		     "\"out\": \"y\", \"attrs\": {\"axes\": [0, 1]}}");
	assert_layer1(g, want, 2);
	src = emit_c(g);
	t_assert_contains(src, "#pragma omp parallel for reduction(+:fl_acc0)");
	t_assert_contains(src, "#pragma omp simd reduction(+:fl_acc0)");
	free(src);
	run_verified(g);
	t_remove_dir(dir);
}

/* The max/min NaN rule through both new forms: sqrt of the generator's
 * inputs in [-1, 1) is NaN for about half of them.  An all-reduce max
 * whose partials let a NaN through (a plain a > b ? a : b, or OpenMP's
 * combine of a NaN partial) gives NaN where the interpreter skips it;
 * the column min updates a row of partials with fl_fminf. */
static void test_reduce_form_nan_max_min(void **state)
{
	char dir[256], *src;
	const char *g;

	(void)state;
	t_make_dir(dir, sizeof dir);
	g = graph_of(dir, "nan_max", "[64, 4096]", "[1, 1]",
		     "{\"name\": \"r\", \"op\": \"sqrt\", \"in\": [\"x\"], "
		     "\"out\": \"r\"},\n"
		     "{\"name\": \"m\", \"op\": \"reduce_max\", \"in\": [\"r\"], "
		     "\"out\": \"y\", \"attrs\": {\"axes\": [0, 1]}}");
	src = emit_c(g);
	t_assert_contains(src, "#pragma omp parallel for reduction(max:fl_acc0)");
	t_assert_contains(src, " > fl_acc0 ? ");
	free(src);
	run_verified(g);
	g = graph_of(dir, "nan_min", "[4, 512]", "[1, 512]",
		     "{\"name\": \"r\", \"op\": \"sqrt\", \"in\": [\"x\"], "
		     "\"out\": \"r\"},\n"
		     "{\"name\": \"m\", \"op\": \"reduce_min\", \"in\": [\"r\"], "
		     "\"out\": \"y\", \"attrs\": {\"axes\": [0]}}");
	src = emit_c(g);
	t_assert_contains(src, "= fl_fminf(T1[0][c2], ");
	free(src);
	run_verified(g);
	t_remove_dir(dir);
}

/* x - colsum(x), forced into one kernel with --fuse: the sub runs on
 * the reduced nest's domain but reads the finished column sums, so the
 * canonical order (sub beside the update, inside the row loop) would
 * read each sum before its last row is added.  The isl check on the
 * dependences refuses the rewrite, the event says so, and the kernel
 * keeps the scheduler's tree (and verifies). */
static void test_reduce_form_refused_by_dependence(void **state)
{
	char dir[256], cmd[512], *out;
	const char *g;

	(void)state;
	t_make_dir(dir, sizeof dir);
	g = graph_of(dir, "center", "[1024, 256]", "[1024, 256]",
		     "{\"name\": \"s\", \"op\": \"reduce_sum\", \"in\": [\"x\"], "
		     "\"out\": \"s\", \"attrs\": {\"axes\": [0]}},\n"
		     "{\"name\": \"d\", \"op\": \"sub\", \"in\": [\"x\", \"s\"], "
		     "\"out\": \"y\"}");
	out = t_fuselab_ok("--strategy apollo-l1 --fuse s,d --stage layer1 "
			 "--events", g);
	t_assert_contains(out, "reduce-form [s] fl_k0: x-reduce: left as "
			  "scheduled: the canonical order would break a "
			  "dependence of the kernel");
	t_assert_contains(out, "layer1 tiled [d] fl_k0: tiled d");
	free(out);
	snprintf(cmd, sizeof cmd, "--run --strategy all --fuse s,d "
		 "--repeat 1 --warmup 0");
	out = t_fuselab_ok(cmd, g);
	if (strstr(out, "verified no") || !strstr(out, "verified yes"))
		fail_msg("a strategy did not verify:\n%s", out);
	free(out);
	t_remove_dir(dir);
}

FL_SUITE(reduce_form,
	cmocka_unit_test(test_reduce_form_all_reduce_sum),
	cmocka_unit_test(test_reduce_form_all_reduce_flattens_3d),
	cmocka_unit_test(test_reduce_form_column_sum),
	cmocka_unit_test(test_reduce_form_column_producer_in_register),
	cmocka_unit_test(test_reduce_form_row_max),
	cmocka_unit_test(test_reduce_form_mean_of_squares),
	cmocka_unit_test(test_reduce_form_nan_max_min),
	cmocka_unit_test(test_reduce_form_refused_by_dependence),
);
