/* Layer 2, memory stitching (issue 12; engine/stitch/memory.c): under
 * strategy apollo-l2 softmax and layernorm become one kernel each and
 * verify, BERT's encoder needs fewer kernels than under apollo-l1, every
 * stitched edge gets a placement against the capacity, and a pair that
 * fails a condition gets a rejected event saying which, with numbers.
 *
 * The tests drive the fuselab binary as a user would (--stage layer2
 * --events to read the decisions, --run to compile, run and verify). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* Writes text into a fresh folder's <name>; the path (static buffer). */
static const char *graph_file(char *dir, size_t n, const char *name,
			      const char *text)
{
	static char path[512];
	FILE *f;

	t_make_dir(dir, n);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* The kernel count printed by --stage layer2 under strategy s. */
static int kernels_after_layer2(const char *sample, const char *s)
{
	char args[128], *out, *at;
	int n = -1;

	snprintf(args, sizeof args, "--stage layer2 --strategy %s", s);
	out = t_fuselab_ok(args, sample);
	at = strstr(out, "\nlayer 2: ");
	if (!at)
		at = strstr(out, "\nlayer 1: ");
	if (!at || sscanf(at + 10, "%d kernels", &n) != 1)
		fail_msg("no kernel count in:\n%s", out);
	free(out);
	return n;
}

/* Runs sample under apollo-l2 once (no timing repeats) and asserts it
 * verified as one kernel. */
static void assert_one_verified_kernel(const char *sample)
{
	char *out = t_fuselab_ok("--run --strategy apollo-l2 --repeat 1 "
			       "--warmup 0", sample);

	if (!strstr(out, "apollo-l2    1 kernels") ||
	    !strstr(out, "verified yes") || strstr(out, "verified NO"))
		fail_msg("%s under apollo-l2:\n%s", sample, out);
	free(out);
}

static void test_layer2_softmax_one_kernel(void **state)
{
	char *out;

	(void)state;
	out = t_fuselab_ok("--stage layer2 --events --strategy apollo-l2",
			 "softmax");
	/* max -> sub/exp/sum (R8, both y-reduce), then -> div (R7) */
	t_assert_contains(out, "layer2 merged [softmax.max softmax.sub "
			  "softmax.exp softmax.sum] R8: fl_k0 -> fl_k1 "
			  "stitched");
	t_assert_contains(out, "softmax.div] R7: fl_k0 -> fl_k1 stitched");
	t_assert_contains(out, "softmax.exp tile-local: stitched edge: "
			  "per-tile footprint 10 x 1024 = 40960 B <= capacity");
	t_assert_contains(out, "layer 2: 1 kernels, 2 fewer than layer 1's 3");
	/* the common tile band outermost (parallel), over the max of the
	 * first kernel and the div of the last; under it the parts in
	 * sequence, producer first, without their own tile bands */
	t_assert_contains(out, "S0_1[i0, i1] -> [(floor((i0)/10))]");
	t_assert_contains(out, "S4_0[i0, i1] -> [(floor((i0)/10))]");
	t_assert_contains(out, "    coincident: [ 1 ]\n    child:\n"
			  "      sequence:\n"
			  "      - filter: \"{ S0_1[i0, i1]; S0_0[i0, i1] }\"");
	if (strstr(out, "floor((i0)/31)") || strstr(out, "floor((i0)/15)"))
		fail_msg("a kernel kept its own tile band:\n%s", out);
	free(out);
	assert_one_verified_kernel("softmax");
}

static void test_layer2_layernorm_one_kernel(void **state)
{
	(void)state;
	assert_int_equal(kernels_after_layer2("layernorm", "apollo-l1"), 3);
	assert_int_equal(kernels_after_layer2("layernorm", "apollo-l2"), 1);
	assert_one_verified_kernel("layernorm");
}

static void test_layer2_bert_fewer_kernels(void **state)
{
	int l1, l2;
	char *out, want[128];

	(void)state;
	l1 = kernels_after_layer2("bert_encoder", "apollo-l1");
	l2 = kernels_after_layer2("bert_encoder", "apollo-l2");
	assert_true(l2 < l1);
	/* the summary says by how much */
	out = t_fuselab_ok("--stage layer2 --strategy apollo-l2",
			 "bert_encoder");
	snprintf(want, sizeof want, "layer 2: %d kernels, %d fewer than "
		 "layer 1's %d", l2, l1 - l2, l1);
	t_assert_contains(out, want);
	free(out);
}

/* --run over the whole ladder prints what layer 2 saved. */
static void test_layer2_run_reports_saving(void **state)
{
	char *out;

	(void)state;
	out = t_fuselab_ok("--run --repeat 1 --warmup 0", "softmax");
	t_assert_contains(out, "layer 2: apollo-l2 runs 1 kernels, 2 fewer "
			  "than apollo-l1's 3");
	if (strstr(out, "verified NO"))
		fail_msg("a strategy did not verify:\n%s", out);
	free(out);
}

/* A stitched edge whose per-tile footprint passes the capacity stays in
 * main memory, says so with the numbers, and the kernel still verifies. */
static void test_layer2_capacity_keeps_global(void **state)
{
	char *out;

	(void)state;
	out = t_fuselab_ok("--stage layer2 --events --strategy apollo-l2 "
			 "--stitch-capacity 1K", "softmax");
	t_assert_contains(out, "softmax.exp global: stitched edge, stays in "
			  "main memory: per-tile footprint 10 x 1024 = 40960 B "
			  "> capacity 1 KiB");
	t_assert_contains(out, "softmax.max tile-local: stitched edge: "
			  "per-tile footprint 10 x 1 = 40 B <= capacity 1 KiB");
	free(out);
	out = t_fuselab_ok("--run --strategy apollo-l2 --repeat 1 --warmup 0 "
			 "--stitch-capacity 1K", "softmax");
	if (!strstr(out, "verified yes") || strstr(out, "verified NO"))
		fail_msg("softmax with --stitch-capacity 1K:\n%s", out);
	free(out);
}

static void test_layer2_capacity_option_errors(void **state)
{
	char *out = NULL;

	(void)state;
	assert_int_not_equal(t_fuselab("--batch --stitch-capacity 0", &out),
			     0);
	t_assert_contains(out, "--stitch-capacity: the size must be more "
			  "than 0");
	free(out);
	assert_int_not_equal(t_fuselab("--batch --stitch-capacity lots",
				       &out), 0);
	t_assert_contains(out, "--stitch-capacity: expected a size");
	free(out);
}

/* A row sum (y-reduce) feeding a column sum (x-reduce): R8 needs the
 * same canonical form. */
static const char forms_graph[] =
	"{\"format\": \"fuselab-graph/1\", \"name\": \"row_then_col\",\n"
	" \"tensors\": {\"x\": {\"shape\": [256, 64], \"role\": \"input\"},\n"
	"  \"y\": {\"shape\": [1, 64], \"role\": \"output\"}},\n"
	" \"ops\": [\n"
	"  {\"name\": \"rowsum\", \"op\": \"reduce_sum\", \"in\": [\"x\"],"
	" \"out\": \"s\", \"attrs\": {\"axes\": [1]}},\n"
	"  {\"name\": \"scale\", \"op\": \"mul\", \"in\": [\"x\", \"s\"],"
	" \"out\": \"p\"},\n"
	"  {\"name\": \"colsum\", \"op\": \"reduce_sum\", \"in\": [\"p\"],"
	" \"out\": \"y\", \"attrs\": {\"axes\": [0]}}]}\n";

/* A reduction whose consumer also reads it through a custom op (a kernel
 * of its own): stitching the two would put the custom op's kernel both
 * before and after the stitched one. */
static const char cycle_graph[] =
	"{\"format\": \"fuselab-graph/1\", \"name\": \"cycle\",\n"
	" \"tensors\": {\"x\": {\"shape\": [256, 64], \"role\": \"input\"},\n"
	"  \"y\": {\"shape\": [256, 1], \"role\": \"output\"}},\n"
	" \"ops\": [\n"
	"  {\"name\": \"rowsum\", \"op\": \"reduce_sum\", \"in\": [\"x\"],"
	" \"out\": \"s\", \"attrs\": {\"axes\": [1]}},\n"
	"  {\"name\": \"wall\", \"op\": \"custom\", \"in\": [\"s\"],"
	" \"out\": \"cs\"},\n"
	"  {\"name\": \"join\", \"op\": \"add\", \"in\": [\"s\", \"cs\"],"
	" \"out\": \"y\"}]}\n";

static void test_layer2_rejections_say_why(void **state)
{
	char dir[256], path[512], *out;
	const char *args = "--stage layer2 --events --strategy apollo-l2";

	(void)state;
	out = t_fuselab_ok(args, graph_file(dir, sizeof dir, "forms.json",
					  forms_graph));
	t_assert_contains(out, "layer2 rejected [rowsum scale colsum] R8: "
			  "fl_k0 -> fl_k1 not stitched: canonical reduction "
			  "forms differ: fl_k0 y-reduce, fl_k1 x-reduce");
	free(out);
	t_remove_dir(dir);
	snprintf(path, sizeof path, "%s", graph_file(dir, sizeof dir,
		 "cycle.json", cycle_graph));
	out = t_fuselab_ok(args, path);
	t_assert_contains(out, "layer2 rejected [rowsum join] R7: fl_k0 -> "
			  "fl_k2 not stitched: stitching would create a cycle "
			  "through fl_k1");
	free(out);
	out = t_fuselab_ok("--run --strategy apollo-l2 --repeat 1 --warmup 0",
			 path);
	if (!strstr(out, "verified yes") || strstr(out, "verified NO"))
		fail_msg("cycle graph under apollo-l2:\n%s", out);
	free(out);
	t_remove_dir(dir);
}

/* Only apollo-l2 stitches: under apollo-l1 the pass decides nothing. */
static void test_layer2_only_under_its_strategy(void **state)
{
	char *out;

	(void)state;
	out = t_fuselab_ok("--stage layer2 --events --strategy apollo-l1",
			 "softmax");
	if (strstr(out, " layer2 "))
		fail_msg("layer 2 decided under apollo-l1:\n%s", out);
	t_assert_contains(out, "layer 1: 3 kernels");
	free(out);
}

FL_SUITE(layer2,
	cmocka_unit_test(test_layer2_softmax_one_kernel),
	cmocka_unit_test(test_layer2_layernorm_one_kernel),
	cmocka_unit_test(test_layer2_bert_fewer_kernels),
	cmocka_unit_test(test_layer2_run_reports_saving),
	cmocka_unit_test(test_layer2_capacity_keeps_global),
	cmocka_unit_test(test_layer2_capacity_option_errors),
	cmocka_unit_test(test_layer2_rejections_say_why),
	cmocka_unit_test(test_layer2_only_under_its_strategy),
);
