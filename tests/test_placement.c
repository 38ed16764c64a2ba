/* The C backend's memory-bound code (issue 11): scalar accumulators for
 * every reduction kind with the interpreter's NaN rule, register
 * placements printed as scalars, per-thread scratch allocated once per
 * kernel call, the capacity check of tile-local buffers (--local-budget)
 * with its "placed" events, collapse over coincident tile loops, and
 * large program outputs stored around the caches (streamed).
 *
 * Each test drives the fuselab binary as a user would: --emit to read the
 * generated C, --run to compile, run and verify it against the
 * interpreter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

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
	g = t_write_graph(dir, "nan_reduce.json", nan_graph);
	for (int s = 0; s < 2; s++) {
		src = emit_c(g, s ? "unfused" : "apollo-l1", NULL);
		t_assert_contains(src, "#pragma omp simd reduction(max:fl_acc0)");
		t_assert_contains(src, " > fl_acc0 ? ");
		t_assert_contains(src, "#pragma omp simd reduction(min:fl_acc0)");
		t_assert_contains(src, " < fl_acc0 ? ");
		free(src);
	}
	out = run_verified(g, "all", NULL);
	free(out);
	t_remove_dir(dir);
}

/* BERT's attention softmax, [heads, rows, cols]: the tiles take one head
 * each, so isl fixes the head's point dimension and leaves it out of the
 * schedule the statements see -- the row loop c3 is schedule dimension 2,
 * the column loop c4 dimension 3.  The accumulator analysis found loop
 * c4 by its name, not by its depth (by depth it asked whether the sum
 * varies along the nonexistent dimension 4, and both reductions stayed
 * sums through memory under "if (c4 == 0)", unvectorised). */
static const char heads_softmax_graph[] =
	"{\"format\": \"fuselab-graph/1\", \"name\": \"heads_softmax\",\n"
	" \"tensors\": {\n"
	"  \"s\": {\"shape\": [12, 128, 128], \"dtype\": \"f32\", \"role\": \"input\"},\n"
	"  \"p\": {\"shape\": [12, 128, 128], \"dtype\": \"f32\", \"role\": \"output\"}},\n"
	" \"ops\": [\n"
	"  {\"name\": \"sm\", \"op\": \"softmax\", \"in\": [\"s\"], \"out\": \"p\",\n"
	"   \"attrs\": {\"axis\": -1}}]}\n";

static void test_placement_accumulators_past_fixed_dimensions(void **state)
{
	char dir[256], *src, *out;
	const char *g;

	(void)state;
	t_make_dir(dir, sizeof dir);
	g = t_write_graph(dir, "heads_softmax.json", heads_softmax_graph);
	src = emit_c(g, "apollo-l1", NULL);
	t_assert_contains(src, "#pragma omp simd reduction(max:fl_acc0)");
	t_assert_contains(src, "#pragma omp simd reduction(+:fl_acc0)");
	if (strstr(src, "_init */\n") && !strstr(src, "(void)0;  /*"))
		fail_msg("a reduction init stayed in the loop:\n%s", src);
	free(src);
	out = run_verified(g, "all", NULL);
	free(out);
	t_remove_dir(dir);
}

/* Softmax's sub is consumed by exp at the same point: layer 1 places it
 * in registers, and the code holds it in a scalar, not a per-tile array
 * (32 x 1024 floats, malloc'd per tile before). */
static void test_placement_register_is_a_scalar(void **state)
{
	char g[512], *src;

	(void)state;
	snprintf(g, sizeof g, "%s/softmax.json", t_samples_dir());
	src = emit_c(g, "apollo-l1", NULL);
	t_assert_contains(src, "register (the scalar T3_r)");
	t_assert_contains(src, "float T3_r;");
	t_assert_contains(src, "T3_r = T0[c1][c2] - T2[c1][0];");
	t_assert_contains(src, "fl_expf_nonpos_b(T3_r, fl_b)");
	if (strstr(src, "T3_loc"))
		fail_msg("a register tensor printed as an array:\n%s", src);
	free(src);
}

static int occurrences(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* Layer 2's softmax with its rows pipelined (pipeline_rows.c), on 96
 * rows of 256 (the sample's shape pipelines alike, at 400 times the
 * work): isl's "separate" gives the first and last rows of a tile loops
 * of their own, each with its copy of the sub and the exp; the register
 * tensor is a scalar declared in each of them, never a per-tile array,
 * and the program verifies. */
static const char rows_softmax_graph[] =
	"{\"format\": \"fuselab-graph/1\", \"name\": \"softmax\",\n"
	" \"tensors\": {\"x\": {\"shape\": [96, 256], \"dtype\": \"f32\","
	" \"role\": \"input\"},\n"
	"  \"y\": {\"shape\": [96, 256], \"dtype\": \"f32\", \"role\":"
	" \"output\"}},\n"
	" \"ops\": [{\"name\": \"softmax\", \"op\": \"softmax\", \"in\":"
	" [\"x\"], \"out\": \"y\", \"attrs\": {\"axis\": -1}}]}\n";

static void test_placement_register_scalar_in_pipelined_rows(void **state)
{
	const char *graph = rows_softmax_graph;
	char dir[256], *src, *out;
	const char *g;

	(void)state;
	t_make_dir(dir, sizeof dir);
	g = t_write_graph(dir, "softmax.json", graph);
	src = emit_c(g, "apollo", NULL);
	t_assert_contains(src, "rows pipelined");
	t_assert_contains(src, "register (the scalar T3_r)");
	if (strstr(src, "T3_loc"))
		fail_msg("a register tensor printed as an array:\n%s", src);
	if (occurrences(src, "float T3_r;") < 3 ||
	    occurrences(src, "float T3_r;") !=
	    occurrences(src, "fl_expf_nonpos_b(T3_r, fl_b)"))
		fail_msg("not one scalar per copy of the loop:\n%s", src);
	free(src);
	out = run_verified(g, "apollo", NULL);
	free(out);
	t_remove_dir(dir);
}

/* The tile-local buffers of MICRO 2020 Fig. 1 (1.1 MiB per tile) under a
 * 4 MiB budget all stay local; they live in a scratch each thread
 * allocates once per call, before the work-shared tile loop, and never
 * in a malloc per tile. */
static void test_placement_scratch_once_per_call(void **state)
{
	char g[512], *src;
	const char *team, *alloc, *loop, *tiles;

	(void)state;
	snprintf(g, sizeof g, "%s/micro2020_fig1.json", t_samples_dir());
	src = emit_c(g, "apollo-l1", "--local-budget 4M --tile 32,32");
	team = strstr(src, "#pragma omp parallel\n");
	alloc = strstr(src, "float *const fl_tscratch = fl_scratch_alloc(");
	loop = strstr(src, "#pragma omp for");
	tiles = strstr(src, "= (float (*)[64][34][34])(fl_tscratch + ");
	if (!team || !alloc || !loop || !tiles || !(team < alloc) ||
	    !(alloc < loop) || !(loop < tiles))
		fail_msg("expected one scratch per thread before the tile "
			 "loop:\n%s", src);
	t_assert_contains(src, "free(fl_tscratch);");
	t_assert_contains(src, "if (!p) {");	/* allocation checked */
	/* the conv's sum, placed in registers by layer 1, reads its own
	 * value across iterations of its inner loops: no scalar then, it
	 * stays a per-tile array */
	t_assert_contains(src, "T4 \"conv\": tile-local");
	t_assert_contains(src, "float (*T4_loc)[64][32][32] = ");
	if (strstr(src, "= malloc("))
		fail_msg("a buffer is still malloc'd per tile:\n%s", src);
	free(src);
	free(run_verified(g, "apollo-l1", "--local-budget 4M --tile 32,32"));
}

/* Under a budget smaller than a tile's buffers, the largest go to main
 * memory until the rest fits: each a "placed" event with the bytes
 * needed and the budget, and the program still verifies. */
static void test_placement_budget_demotes_largest(void **state)
{
	static const struct {
		const char *sample, *budget, *need, *limit;
		int n;
	} cases[] = {
		{"micro2020_fig1", "300K", "need 1149952 bytes (1.1 MiB)",
		 "budget of 307200 bytes (300.0 KiB)", 3},
		{"apollo_listing3", "1M", "need 16777216 bytes (16.0 MiB)",
		 "budget of 1048576 bytes (1.0 MiB)", 1},
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char cmd[768], g[512], opt[64], *out = NULL;
		int n = 0;

		snprintf(cmd, sizeof cmd, "--batch %s/%s.json --strategy "
			 "apollo-l1 --stage codegen --events --local-budget %s "
			 "--tile 32,32", t_samples_dir(), cases[i].sample,
			 cases[i].budget);
		assert_int_equal(t_fuselab(cmd, &out), 0);
		for (const char *p = out; (p = strstr(p, "codegen placed"));
		     p++) {
			const char *eol = strchr(p, '\n');
			char ev[512];

			snprintf(ev, sizeof ev, "%.*s", eol ? (int)(eol - p) :
				 (int)strlen(p), p);
			t_assert_contains(ev, "tile-local -> global");
			t_assert_contains(ev, cases[i].need);
			t_assert_contains(ev, cases[i].limit);
			n++;
		}
		if (n != cases[i].n)
			fail_msg("%s: %d demotions, expected %d:\n%s",
				 cases[i].sample, n, cases[i].n, out);
		free(out);
		snprintf(g, sizeof g, "%s/%s.json", t_samples_dir(),
			 cases[i].sample);
		snprintf(opt, sizeof opt, "--local-budget %s --tile 32,32",
			 cases[i].budget);
		free(run_verified(g, "apollo-l1", opt));
	}
}

/* A budget above the buffers demotes nothing. */
static void test_placement_budget_large_keeps_local(void **state)
{
	char cmd[512], *out = NULL;

	(void)state;
	snprintf(cmd, sizeof cmd, "--batch %s/micro2020_fig1.json --strategy "
		 "apollo-l1 --stage codegen --events --local-budget 2M "
		 "--tile 32,32", t_samples_dir());
	assert_int_equal(t_fuselab(cmd, &out), 0);
	if (strstr(out, "codegen placed"))
		fail_msg("demoted under a budget that holds it all:\n%s", out);
	free(out);
}

/* --local-budget takes sizes like --max-memory and names bad ones. */
static void test_placement_budget_option_errors(void **state)
{
	static const struct {
		const char *arg, *msg;
	} bad[] = {
		{"0", "--local-budget: the size must be more than 0"},
		{"12Q", "--local-budget: expected a size such as 256K"},
		{"-5K", "--local-budget: expected a size such as 256K"},
		{"99999999999G", "--local-budget: more than the largest size"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char cmd[256], *out = NULL;

		snprintf(cmd, sizeof cmd, "--batch --local-budget %s",
			 bad[i].arg);
		assert_int_not_equal(t_fuselab(cmd, &out), 0);
		t_assert_contains(out, bad[i].msg);
		free(out);
	}
}

/* MICRO Fig. 1's 2 x 2 tiles: the parallel tile loop alone has two
 * iterations, fewer than four per core, so its pragma collapses the
 * coincident tile loop below it; softmax's 512 row tiles of 8 are enough
 * and keep a plain pragma (as do its reductions, whose inner loop is
 * not coincident). */
static void test_placement_collapse_small_tile_loops(void **state)
{
	char g[512], *src;

	(void)state;
	snprintf(g, sizeof g, "%s/micro2020_fig1.json", t_samples_dir());
	src = emit_c(g, "apollo-l1", "--local-budget 4M --tile 32,32");
	t_assert_contains(src, "#pragma omp for collapse(2)\n"
			  "    for (int c1 = 0; c1 <= 1; c1 += 1) {\n"
			  "      for (int c2 = 0; c2 <= 1; c2 += 1) {\n");
	free(src);
	free(run_verified(g, "apollo-l1", "--local-budget 4M --tile 32,32"));
	snprintf(g, sizeof g, "%s/softmax.json", t_samples_dir());
	src = emit_c(g, "apollo-l1", "--tile 8,1024");
	/* a parallel loop of its own (the div kernel, whose output is
	   streamed, as a team whose threads each fence after it) */
	if (!strstr(src, "#pragma omp parallel for\n"
		    "  for (int c0 = 0; c0 <= 511; c0 += 1) {") &&
	    !strstr(src, "    #pragma omp for nowait\n"
		    "    for (int c0 = 0; c0 <= 511; c0 += 1) {"))
		fail_msg("no parallel loop over the 512 tiles:\n%s", src);
	if (strstr(src, "collapse("))
		fail_msg("collapse over a loop with enough tiles:\n%s", src);
	free(src);
}

/* In the pipelined softmax the max, exp and sum of a row are written by
 * one phase and read by the next at most: each tile-local array holds 2
 * rows, row r in row r % 2, where it had one per row of the tile; the
 * comment says so and every strategy still verifies. */
static void test_placement_pipelined_rows_in_turn(void **state)
{
	char dir[256], *src, *out;
	const char *g, *decl;
	long rows = 0;

	(void)state;
	t_make_dir(dir, sizeof dir);
	g = t_write_graph(dir, "softmax.json", rows_softmax_graph);
	src = emit_c(g, "apollo", NULL);
	t_assert_contains(src, "rows pipelined");
	decl = strstr(src, "\"softmax.exp\": tile-local, 2 of its ");
	if (!decl || sscanf(decl, "\"softmax.exp\": tile-local, 2 of its %ld",
			    &rows) != 1 || rows <= 2)
		fail_msg("exp's array not 2 rows in turn:\n%s", src);
	t_assert_contains(src, "(row r in row r % 2)");
	t_assert_contains(src, "float T4_loc[2][256];");
	t_assert_contains(src, "float T2_loc[2][1];");
	t_assert_contains(src, "float T5_loc[2][1];");
	assert_int_equal(occurrences(src, "rows at a time"), 3);
	free(src);
	out = run_verified(g, "all", NULL);
	assert_int_equal(occurrences(out, "verified yes"), FL_STRATEGY_COUNT);
	free(out);
	/* without pipelining (layer 1 alone: three kernels) no array is
	   shared out in turn */
	src = emit_c(g, "apollo-l1", NULL);
	assert_null(strstr(src, "rows at a time"));
	free(src);
	/* BERT's heads: the row is the second index (every strategy of this
	   graph verifies in test_placement_accumulators_past_fixed_dimensions) */
	g = t_write_graph(dir, "heads_softmax.json", heads_softmax_graph);
	src = emit_c(g, "apollo", NULL);
	t_assert_contains(src, "\"sm.exp\": tile-local, 2 of its 64 rows at a "
			  "time");
	t_assert_contains(src, "float T4_loc[1][2][128];");
	t_assert_contains(src, "T4_loc[0][(c3 & 1)][c4]");
	free(src);
	t_remove_dir(dir);
}

/* ---- streamed outputs --------------------------------------------------- */

/* x [rows, cols] -> tanh -> y, and with `chain` exp after it (a split
 * loop), with `reread` an op that reads y into a second output z. */
static const char *stream_graph(char *dir, int rows, int cols, bool chain,
				bool reread)
{
	char text[2048], z[128];

	snprintf(z, sizeof z, ",\n  \"z\": {\"shape\": [%d, %d], \"dtype\": "
		 "\"f32\", \"role\": \"output\"}", rows, cols);
	snprintf(text, sizeof text,
		 "{\"format\": \"fuselab-graph/1\", \"name\": \"stream\",\n"
		 " \"tensors\": {\n"
		 "  \"x\": {\"shape\": [%d, %d], \"dtype\": \"f32\", "
		 "\"role\": \"input\"},\n"
		 "  \"y\": {\"shape\": [%d, %d], \"dtype\": \"f32\", "
		 "\"role\": \"output\"}%s},\n"
		 " \"ops\": [\n"
		 "  {\"name\": \"t\", \"op\": \"tanh\", \"in\": [\"x\"], "
		 "\"out\": \"%s\"}%s%s]}\n",
		 rows, cols, rows, cols,
		 reread ? z : "", chain ? "t" : "y",
		 chain ? ",\n  {\"name\": \"e\", \"op\": \"exp\", \"in\": "
			 "[\"t\"], \"out\": \"y\"}" : "",
		 reread ? ",\n  {\"name\": \"z\", \"op\": \"add\", \"in\": "
			  "[\"y\", \"y\"], \"out\": \"z\"}" : "");
	return t_write_graph(dir, "stream.json", text);
}


/* An output of 2 MiB (the tests' machine: 2 cores of 512 KiB L2) is
 * written in blocks of 16 staged in a vector and stored non-temporally,
 * with one fence per thread after the parallel loop; it verifies. */
static void test_placement_streams_large_output(void **state)
{
	char dir[256], *src, *out;
	const char *g;

	(void)state;
	t_make_dir(dir, sizeof dir);
	g = stream_graph(dir, 512, 1024, false, false);
	src = emit_c(g, "apollo", NULL);
	t_assert_contains(src, "\"y\" stored around the caches, 16 floats "
			  "at a time");
	t_assert_contains(src, "float T1_nt[16] __attribute__((aligned(64)));");
	t_assert_contains(src, "_nt + 15; c");
	t_assert_contains(src, "_nt] = fl_tanhf_b(");
	t_assert_contains(src, "], T1_nt); }");
	t_assert_contains(src, "{ const int c");
	/* the team form: each thread fences once, after its share */
	t_assert_contains(src, "  #pragma omp parallel\n  {\n    #pragma omp for "
			  "nowait\n");
	assert_int_equal(occurrences(src, "    fl_stream_fence();\n  }\n}"), 1);
	assert_int_equal(occurrences(src, "fl_stream_fence();\n"), 1);
	free(src);
	free(run_verified(g, "apollo", NULL));
	/* a chain split into two loops streams from the second */
	g = stream_graph(dir, 512, 1024, true, false);
	src = emit_c(g, "apollo", NULL);
	t_assert_contains(src, "split at tanh, exp: 2 loops");
	t_assert_contains(src, "_nt] = fl_expf");
	t_assert_contains(src, "], T1_nt); }");
	t_assert_contains(src, "_s[c");
	free(src);
	out = run_verified(g, "all", NULL);
	assert_int_equal(occurrences(out, "verified yes"), FL_STRATEGY_COUNT);
	free(out);
	t_remove_dir(dir);
}

/* Not streamed: an output within the cores' L2 caches (the next reader
 * may find it there), rows that are not whole 64-byte lines, an output
 * that an op reads, and the CUDA backend. */
static void test_placement_streams_only_what_pays(void **state)
{
	char dir[256], cmd[1024], *src, *out = NULL;
	const char *g;

	(void)state;
	t_make_dir(dir, sizeof dir);
	src = emit_c(stream_graph(dir, 128, 1024, false, false), "apollo",
		     NULL);	/* 512 KiB */
	assert_null(strstr(src, "fl_stream16(&"));
	assert_null(strstr(src, "stored around the caches"));
	free(src);
	src = emit_c(stream_graph(dir, 600, 1000, false, false), "apollo",
		     NULL);	/* 2.3 MiB in rows of 1000 */
	assert_null(strstr(src, "fl_stream16(&"));
	free(src);
	/* y is read by z's op: only z streams */
	g = stream_graph(dir, 512, 1024, false, true);
	src = emit_c(g, "unfused", NULL);
	assert_null(strstr(src, "\"y\" stored around"));
	t_assert_contains(src, "\"z\" stored around the caches");
	free(src);
	free(run_verified(g, "unfused", NULL));
	/* the planned machine decides: with 2 MiB of L2 per core, 2 MiB is
	   within them */
	src = emit_c(stream_graph(dir, 512, 1024, false, false), "apollo",
		     "--machine l2=2M");
	assert_null(strstr(src, "fl_stream16(&"));
	free(src);
	snprintf(cmd, sizeof cmd, "--batch %s --target cuda --strategy apollo "
		 "--emit %s/cu", stream_graph(dir, 512, 1024, false, false),
		 dir);
	if (t_fuselab(cmd, &out) != 0)
		fail_msg("%s:\n%s", cmd, out);
	free(out);
	snprintf(cmd, sizeof cmd, "cat %s/cu/*.cu", dir);
	assert_int_equal(t_run(cmd, &src), 0);
	t_assert_contains(src, "__global__");
	assert_null(strstr(src, "fl_stream16(&"));
	free(src);
	t_remove_dir(dir);
}

FL_SUITE(placement,
	cmocka_unit_test(test_placement_max_min_accumulators_keep_nan_rule),
	cmocka_unit_test(test_placement_accumulators_past_fixed_dimensions),
	cmocka_unit_test(test_placement_register_is_a_scalar),
	cmocka_unit_test(test_placement_register_scalar_in_pipelined_rows),
	cmocka_unit_test(test_placement_pipelined_rows_in_turn),
	cmocka_unit_test(test_placement_scratch_once_per_call),
	cmocka_unit_test(test_placement_budget_demotes_largest),
	cmocka_unit_test(test_placement_budget_large_keeps_local),
	cmocka_unit_test(test_placement_budget_option_errors),
	cmocka_unit_test(test_placement_collapse_small_tile_loops),
	cmocka_unit_test(test_placement_streams_large_output),
	cmocka_unit_test(test_placement_streams_only_what_pays),
);
