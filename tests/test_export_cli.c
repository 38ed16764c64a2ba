/* The exports from the command line (app/export.c): pictures, frames,
 * schedule trees, the domain picture, the trace and the report, and their
 * errors, through the real binary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "kernel.h"
#include "test_util.h"

/* fuselab --batch ARGS SAMPLE; its status, output in *out. */
static int fuselab_on(const char *args, const char *sample, char **out)
{
	char cmd[2048];

	snprintf(cmd, sizeof cmd, "--batch %s %s/%s.json", args, t_samples_dir(),
		 sample);
	return t_fuselab(cmd, out);
}

static void export_cli_graph_file_and_dir(void **state)
{
	char args[400], path[200], *out = NULL;
	char dir[128];

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/fig3.dot", dir);
	snprintf(args, sizeof args, "--dot %s", path);
	assert_int_equal(fuselab_on(args, "apollo_fig3", &out), 0);
	t_assert_contains(out, "wrote ");
	t_assert_contains(out, "the graph at step 43 (dot)");
	free(out);
	t_assert_dot_accepts(path);
	/* a directory gets <graph>.svg; --stage picks the step */
	snprintf(args, sizeof args, "--svg %s/ --stage partition", dir);
	assert_int_equal(fuselab_on(args, "apollo_fig3", &out), 0);
	free(out);
	snprintf(args, sizeof args, "grep -c '</svg>' %s/apollo_fig3.svg", dir);
	assert_int_equal(t_run(args, NULL), 0);
	t_remove_dir(dir);
}

static void export_cli_frames(void **state)
{
	char args[400], *out = NULL;
	char dir[128];

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(args, sizeof args, "--dot %s --frames --stage partition",
		 dir);
	assert_int_equal(fuselab_on(args, "apollo_fig3", &out), 0);
	free(out);
	/* one frame per decision of the partition, plus the picture */
	assert_int_equal(t_count_entries(dir), 1 + 17);
	for (int k = 1; k <= 17; k++) {
		char path[200];

		snprintf(path, sizeof path, "%s/apollo_fig3-frame-%04d.dot",
			 dir, k);
		t_assert_dot_accepts(path);
	}
	/* many files need a directory */
	snprintf(args, sizeof args, "--dot %s/one.dot --frames", dir);
	assert_int_equal(fuselab_on(args, "apollo_fig3", &out), 2);
	t_assert_contains(out, "--frames writes many files: give a directory");
	free(out);
	t_remove_dir(dir);
}

static void export_cli_trees_and_domain(void **state)
{
	char args[400], path[200], *out = NULL;
	char dir[128];

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(args, sizeof args, "--dot %s --schedule-trees", dir);
	assert_int_equal(fuselab_on(args, "micro2020_fig1", &out), 0);
	free(out);
	snprintf(path, sizeof path, "%s/micro2020_fig1-tree-fl_k0.dot", dir);
	t_assert_dot_accepts(path);
	snprintf(path, sizeof path, "%s/d.svg", dir);
	snprintf(args, sizeof args, "--svg %s --domain fl_k0:S0_0", path);
	assert_int_equal(fuselab_on(args, "micro2020_fig1", &out), 0);
	t_assert_contains(out, "the iteration domain of S0_0 in fl_k0");
	free(out);
	snprintf(args, sizeof args, "grep -c '</svg>' %s", path);
	assert_int_equal(t_run(args, NULL), 0);
	snprintf(args, sizeof args, "--svg %s --domain fl_k7:S0_0", path);
	assert_int_equal(fuselab_on(args, "micro2020_fig1", &out), 1);
	t_assert_contains(out, "no kernel \"fl_k7\"");
	free(out);
	t_remove_dir(dir);
}

/* What is asserted holds for any graph the five strategies run; the
 * plain pass takes apollo_fig1 (branches, a matmul and a conv, each
 * strategy its own program) rather than BERT, whose interpretation and
 * runs were most of this test's 20 s. */
static void export_cli_trace_and_report_of_a_run(void **state)
{
	const char *sample = T_SANITIZED ? "softmax" : "apollo_fig1";
	char args[600], cmd[1100], *out = NULL;
	char dir[128];

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(args, sizeof args, "--run --strategy all --repeat 1 --warmup 0 "
		 "--trace %s/t.json --report %s/r.json", dir, dir);
	assert_int_equal(fuselab_on(args, sample, &out), 0);
	t_assert_contains(out, "of each strategy's kernel runs");
	t_assert_contains(out, "with the strategies' timings");
	free(out);
	/* the trace: the events Perfetto needs, a process per strategy */
	snprintf(cmd, sizeof cmd, "python3 -c '\n"
		 "import json,sys\n"
		 "t=json.load(open(sys.argv[1]))\n"
		 "ev=t[\"traceEvents\"]\n"
		 "assert all(e[\"ph\"] in \"XiM\" for e in ev)\n"
		 "assert all(isinstance(e[\"pid\"],int) and isinstance(e[\"tid\"],int) for e in ev)\n"
		 "assert all(e[\"dur\"]>=0 for e in ev if e[\"ph\"]==\"X\")\n"
		 "names={e[\"args\"][\"name\"] for e in ev if e[\"ph\"]==\"M\" and e[\"name\"]==\"process_name\"}\n"
		 "assert {\"unfused\",\"xla\",\"apollo-l1\",\"apollo-l2\",\"apollo\"} <= names, names\n"
		 "r=json.load(open(sys.argv[2]))\n"
		 "assert r[\"format\"]==\"fuselab-report/1\"\n"
		 "assert len(r[\"strategies\"])==%d\n"
		 "assert all(s[\"verified\"] for s in r[\"strategies\"])\n"
		 "' %s/t.json %s/r.json", FL_STRATEGY_COUNT, dir, dir);
	if (t_run(cmd, &out) != 0)
		fail_msg("%s", out);
	free(out);
	t_remove_dir(dir);
}

static void export_cli_write_errors(void **state)
{
	char args[400], *out = NULL;
	struct stat st;
	char dir[128];

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(args, sizeof args, "--report %s/missing/r.json", dir);
	assert_int_equal(fuselab_on(args, "softmax", &out), 1);
	t_assert_contains(out, "missing/r.json: No such file or directory");
	free(out);
	snprintf(args, sizeof args, "--trace %s", dir);
	assert_int_equal(fuselab_on(args, "softmax", &out), 1);
	t_assert_contains(out, "is a directory, not a file");
	free(out);
	assert_int_equal(fuselab_on("--report /dev/full", "softmax", &out), 1);
	t_assert_contains(out, "/dev/full: No space left on device");
	free(out);
	assert_int_equal(stat("/dev/full", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(t_count_entries(dir), 0);
	/* standard output */
	assert_int_equal(fuselab_on("--format json --report -", "softmax", &out), 0);
	t_assert_contains(out, "\"format\":");
	free(out);
	t_remove_dir(dir);
}

FL_SUITE(export_cli,
	 cmocka_unit_test(export_cli_graph_file_and_dir),
	 cmocka_unit_test(export_cli_frames),
	 cmocka_unit_test(export_cli_trees_and_domain),
	 cmocka_unit_test(export_cli_trace_and_report_of_a_run),
	 cmocka_unit_test(export_cli_write_errors));
