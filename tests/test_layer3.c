/* Layer 3, parallel stitching (issue 12; engine/stitch/parallel_pass.c):
 * under strategy apollo the Inception-style block and APOLLO Fig. 1 get
 * a parallel group with a positive gain, run it as one kernel whose
 * threads take different branches, and verify; every try of the
 * analysis is a decision, a rejected one with its numbers; the report
 * says which groups were stitched.
 *
 * The tests drive the fuselab binary as a user would (--stage layer3
 * --events for the decisions, --run to compile, run and verify, --emit
 * for the C, --report for the JSON). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "test_util.h"

/* The gain (us) of the first "parallelised" decision in out, failing
 * when there is none. */
static double first_gain(const char *out)
{
	const char *at = strstr(out, " layer3 parallelised [");
	const char *g = at ? strstr(at, ", gain ") : NULL;
	double gain;

	if (!g || sscanf(g, ", gain %lf us", &gain) != 1)
		fail_msg("no parallelised decision with a gain in:\n%s", out);
	return gain;
}

/* Sample under apollo: one parallel group of `branches` kernels with a
 * positive gain, `kernels` kernels in all, then a run that verifies. */
static void assert_parallel_group(const char *sample, int kernels,
				  int branches)
{
	char want[128], *out;

	out = t_fuselab_ok("--stage layer3 --events --strategy apollo", sample);
	assert_true(first_gain(out) > 0);
	snprintf(want, sizeof want, "layer 3: %d kernels, 1 of them running "
		 "%d kernels side by side (%d fewer)", kernels, branches,
		 branches - 1);
	t_assert_contains(out, want);
	free(out);
	out = t_fuselab_ok("--run --strategy apollo --repeat 1 --warmup 0",
			 sample);
	snprintf(want, sizeof want, "apollo       %d kernels", kernels);
	if (!strstr(out, want) || !strstr(out, "verified yes") ||
	    strstr(out, "verified NO"))
		fail_msg("%s under apollo:\n%s", sample, out);
	free(out);
}

static void test_layer3_inception_parallel_group(void **state)
{
	(void)state;
	/* the three pads of the branches (b2, b3, b4) run together */
	assert_parallel_group("inception_block", 9, 3);
}

static void test_layer3_fig1_parallel_group(void **state)
{
	(void)state;
	/* F1's relu and silu and F2's add + reduction: the virtual head's
	 * branches (APOLLO Fig. 1) */
	assert_parallel_group("apollo_fig1", 3, 3);
}

/* More threads than branches: each branch's nested parallel loops get
 * their share (2, 2 and 1 of 5), and the results still verify. */
static void test_layer3_nested_shares_verify(void **state)
{
	const char *was = getenv("OMP_NUM_THREADS");
	char *keep = was ? strdup(was) : NULL;
	char *out;

	(void)state;
	assert_int_equal(setenv("OMP_NUM_THREADS", "5", 1), 0);
	out = t_fuselab_ok("--run --strategy apollo --repeat 1 --warmup 0",
			 "apollo_fig1");
	if (keep)
		setenv("OMP_NUM_THREADS", keep, 1);
	else
		unsetenv("OMP_NUM_THREADS");
	free(keep);
	t_assert_contains(out, "threads not pinned (5:");
	if (!strstr(out, "verified yes") || strstr(out, "verified NO"))
		fail_msg("apollo_fig1 on 5 threads:\n%s", out);
	free(out);
}

/* The C of the stitched kernel: one parallel region of sections, each
 * calling its branch's kernel with its share of the cores. */
static void test_layer3_codegen_sections(void **state)
{
	char dir[256], args[512], path[512], *out, *src;

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(args, sizeof args, "--emit %s --strategy apollo", dir);
	out = t_fuselab_ok(args, "apollo_fig1");
	free(out);
	snprintf(path, sizeof path, "%s/apollo_fig1-apollo.c", dir);
	src = t_read_file(path, NULL);
	t_assert_contains(src, "#include <omp.h>");
	t_assert_contains(src, "#pragma omp parallel sections "
			  "num_threads(teams)");
	t_assert_contains(src, "#pragma omp section\n    {\n      int share "
			  "= cores / 3 + (0 < cores % 3);");
	t_assert_contains(src, "      fl_k0_b2(bufs);");
	t_assert_contains(src, "omp_set_max_active_levels(levels + 1);");
	t_assert_contains(src, "void fl_k0_b0(float *const *bufs)");
	free(src);
	t_remove_dir(dir);
}

/* Without a launch cost, kernels that each fill the (model's) machine
 * gain nothing together: every try is a rejected decision with its
 * numbers, and nothing is stitched. */
static void test_layer3_rejections_say_why(void **state)
{
	char *out;

	(void)state;
	out = t_fuselab_ok("--stage layer3 --events --strategy apollo "
			 "--launch-cost 0", "apollo_fig1");
	t_assert_contains(out, " layer3 rejected [op6 op7.square op7.sqsum "
			  "op1 op2.sigmoid op2.mul] not stitched: no gain; "
			  "fl_k2 | fl_k0 | fl_k1 (round 1, virtual head");
	t_assert_contains(out, "alone 104.9 us, together 104.9 us, gain "
			  "0.0 us");
	if (strstr(out, " layer3 parallelised "))
		fail_msg("stitched without a gain:\n%s", out);
	t_assert_contains(out, "layer 3: 5 kernels, 0 of them");
	free(out);
}

static void test_layer3_launch_cost_errors(void **state)
{
	char *out = NULL;
	char cmd[512];

	(void)state;
	snprintf(cmd, sizeof cmd, "--batch --launch-cost -1 %s/softmax.json",
		 t_samples_dir());
	assert_int_equal(t_fuselab(cmd, &out), 2);
	t_assert_contains(out, "--launch-cost: expected microseconds >= 0, "
			  "got \"-1\"");
	free(out);
}

static void test_layer3_only_under_its_strategy(void **state)
{
	char *out;

	(void)state;
	out = t_fuselab_ok("--stage layer3 --events --strategy apollo-l2",
			 "inception_block");
	if (strstr(out, " layer3 "))
		fail_msg("layer 3 decided under apollo-l2:\n%s", out);
	free(out);
}

/* The report's parallel_groups is the analysis the pass acted on, with
 * the stitched group and the kernel it became. */
static void test_layer3_report_says_stitched(void **state)
{
	char dir[256], args[1100], path[512], *out, *text;
	const cJSON *pg, *groups, *g;
	cJSON *r;

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/r.json", dir);
	snprintf(args, sizeof args, "--stage layer3 --strategy apollo "
		 "--report %s", path);
	out = t_fuselab_ok(args, "inception_block");
	free(out);
	text = t_read_file(path, NULL);
	r = cJSON_Parse(text);
	assert_non_null(r);
	pg = cJSON_GetObjectItem(r, "parallel_groups");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(pg, "stitched")));
	groups = cJSON_GetObjectItem(pg, "groups");
	assert_int_equal(cJSON_GetArraySize(groups), 1);
	g = cJSON_GetArrayItem(groups, 0);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(g, "stitched")));
	assert_string_equal(cJSON_GetObjectItem(g, "kernel")->valuestring,
			    "fl_k3");
	assert_true(cJSON_GetObjectItem(g, "gain_s")->valuedouble > 0);
	cJSON_Delete(r);
	free(text);
	t_remove_dir(dir);
}

FL_SUITE(layer3,
	cmocka_unit_test(test_layer3_inception_parallel_group),
	cmocka_unit_test(test_layer3_fig1_parallel_group),
	cmocka_unit_test(test_layer3_nested_shares_verify),
	cmocka_unit_test(test_layer3_codegen_sections),
	cmocka_unit_test(test_layer3_rejections_say_why),
	cmocka_unit_test(test_layer3_launch_cost_errors),
	cmocka_unit_test(test_layer3_only_under_its_strategy),
	cmocka_unit_test(test_layer3_report_says_stitched),
);
