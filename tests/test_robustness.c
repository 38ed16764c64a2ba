/* Bad input that docs/robustness.md lists and no other suite covered:
 * every exporter under a file size limit (a write failing half-way must
 * leave no partial file), standard output that fails, graph files that
 * are empty, a folder, too large or not ONNX at all, opaque custom ops
 * asked to run, option shapes (a missing value, a value where none is
 * taken, options that need another), rules files with unknown fields or
 * op names, and a CUDA target without nvcc; and that the table of
 * docs/robustness.md names tests that exist.  Each case is quick: the
 * binary only loads, partitions or generates code (the nvcc case runs
 * one small strategy). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rules.h"
#include "test_util.h"

#define DOC "docs/robustness.md"

/* Runs fuselab --batch apollo_fig3 EXPORT with writes limited to 512
 * bytes (SIGXFSZ ignored, so a write past it fails with EFBIG), checks
 * the status and the message, and that dir stays empty. */
static void export_too_large(const char *dir, const char *export, int status)
{
	char cmd[2048], *out;
	int rc;

	snprintf(cmd, sizeof cmd, "trap '' XFSZ; ulimit -f 1; exec '%s' "
		 "--batch %s/apollo_fig3.json %s </dev/null", t_fuselab_bin(),
		 t_samples_dir(), export);
	rc = t_run(cmd, &out);
	if (rc != status)
		fail_msg("%s: exit %d, expected %d:\n%s", export, rc, status,
			 out);
	t_assert_contains(out, ": File too large");
	if (t_count_entries(dir) != 0)
		fail_msg("%s left a file behind in %s", export, dir);
	free(out);
}

/* Every exporter, --emit included, leaves nothing when a write fails
 * half-way: the file appears whole or not at all. */
static void test_robust_exports_leave_no_partial_file(void **state)
{
	static const struct {
		const char *option, *file;
		int status;
	} cases[] = {
		{"--emit", "", 2},	/* a bad --emit DIR is 2, as ever */
		{"--dot", "/g.dot", 1},
		{"--svg", "/g.svg", 1},
		{"--trace", "/t.json", 1},
		{"--report", "/r.json", 1},
		{"--export-onnx", "/m.onnx", 1},
	};
	char dir[128], export[400];

	(void)state;
	t_make_dir(dir, sizeof dir);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(export, sizeof export, "%s %s%s", cases[i].option, dir,
			 cases[i].file);
		export_too_large(dir, export, cases[i].status);
	}
	t_remove_dir(dir);
}

/* Files that are no graph at all: each named, exit 2. */
static void test_robust_graph_file_kinds(void **state)
{
	char dir[128], args[400], path[300];

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s", t_write_graph(dir, "empty.json", ""));
	snprintf(args, sizeof args, "--check %s", path);
	t_expect_fuselab(args, 2, "empty.json: line 1, column 1: malformed JSON");
	snprintf(args, sizeof args, "--check %s", dir);
	t_expect_fuselab(args, 2, "fuselab: ");
	t_expect_fuselab(args, 2, ": not a regular file");
	snprintf(path, sizeof path, "%s", t_write_graph(dir, "m.onnx",
							  "hello"));
	snprintf(args, sizeof args, "--check %s", path);
	t_expect_fuselab(args, 2, "m.onnx: not an ONNX model: the protobuf is truncated "
	       "or corrupt");
	snprintf(path, sizeof path, "%s", t_write_graph(dir, "cut.json",
		 "{\"format\":\"fuselab-graph/1\",\"tensors\":{\"x\":"));
	snprintf(args, sizeof args, "--batch --interpret %s", path);
	t_expect_fuselab(args, 2, "cut.json: line 1, column 43: malformed JSON");
	/* a sparse 65 MiB file: refused by its size before it is read */
	snprintf(args, sizeof args, "truncate -s 65M %s/big.json", dir);
	assert_int_equal(t_run(args, NULL), 0);
	snprintf(args, sizeof args, "--check %s/big.json", dir);
	t_expect_fuselab(args, 2, "big.json: file is 68157440 bytes, more than the 64 "
	       "MiB a graph file may have");
	snprintf(args, sizeof args, "--check --input-shape x=2 %s/softmax.json",
		 t_samples_dir());
	t_expect_fuselab(args, 2, "--input-shape is for ONNX models, and ");
	t_remove_dir(dir);
	t_load_fails("{\"format\":\"fuselab-graph/1\",\"tensors\":{\"c\":"
		     "{\"shape\":[16777217],\"role\":\"const\",\"data\":[1]}},"
		     "\"ops\":[]}", "tensors.c.data: 16777217 values is more "
		     "than a graph file may carry (16M)");
}

/* Standard output that fails (a full disk, a closed descriptor) is an
 * error, not a silent status 0 with the output lost. */
static void test_robust_stdout_fails(void **state)
{
	char args[400];

	(void)state;
	if (access("/dev/full", W_OK) != 0)
		skip();
	snprintf(args, sizeof args, "--check %s/softmax.json >/dev/full",
		 t_samples_dir());
	t_expect_fuselab(args, 1, "fuselab: standard output: No space left on device");
	snprintf(args, sizeof args, "--batch --events --stage partition "
		 "%s/softmax.json >/dev/full", t_samples_dir());
	t_expect_fuselab(args, 1, "fuselab: standard output: No space left on device");
	t_expect_fuselab("--help >&-", 1, "fuselab: standard output: Bad file "
	       "descriptor");
	snprintf(args, sizeof args, "--check %s/softmax.json >/dev/null",
		 t_samples_dir());
	t_expect_fuselab(args, 0, "");
}

/* A graph with an opaque custom op: everything that would execute it
 * refuses, naming the op, exits 1 and makes nothing (no --emit DIR). */
static void test_robust_opaque_op_cannot_run(void **state)
{
	static const char graph[] =
		"{\"format\":\"fuselab-graph/1\",\"name\":\"opq\",\"tensors\":{"
		"\"x\":{\"shape\":[8,16],\"role\":\"input\"},"
		"\"y\":{\"shape\":[8,4],\"role\":\"output\"}},\"ops\":["
		"{\"name\":\"a\",\"op\":\"exp\",\"in\":[\"x\"],\"out\":\"a\"},"
		"{\"name\":\"c\",\"op\":\"custom\",\"in\":[\"a\"],\"out\":\"cs\","
		"\"attrs\":{\"fn\":\"opaque\",\"shape\":[8,4]}},"
		"{\"name\":\"e\",\"op\":\"tanh\",\"in\":[\"cs\"],\"out\":\"y\"}]}";
	static const char *const refused[][2] = {
		{"--interpret", "opq: cannot interpret: op \"c\" is an opaque "
		 "custom op"},
		{"--stage run", "opq: cannot compile: op \"c\" is an opaque "
		 "custom op"},
		{"--emit %s/em", "opq: cannot emit a program: op \"c\" is an opaque "
		 "custom op"},
	};
	char dir[128], path[300], args[800];

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s", t_write_graph(dir, "opq.json",
							  graph));
	for (int i = 0; i < 3; i++) {
		char option[300];

		/* only --emit names a folder: DIR/em, which must not appear */
		snprintf(option, sizeof option, refused[i][0], dir);
		snprintf(args, sizeof args, "--batch %s %s", option, path);
		t_expect_fuselab(args, 1, refused[i][1]);
	}
	assert_int_equal(t_count_entries(dir), 1);	/* opq.json alone */
	t_remove_dir(dir);
}

/* Options without their value, with a value they do not take, or
 * without the option they need. */
static void test_robust_option_shapes(void **state)
{
	(void)state;
	t_expect_fuselab("--seed", 2, "fuselab: --seed needs a value (N)");
	t_expect_fuselab("--batch --dot", 2, "--dot needs a value (FILE|DIR)");
	t_expect_fuselab("--check=1", 2, "fuselab: --check takes no value");
	t_expect_fuselab("-z", 2, "unknown option \"-z\" (see --help)");
	t_expect_fuselab("--batch --frames", 2, "--frames needs --dot, --svg or --png");
	t_expect_fuselab("--batch --domain-dims 0,1 --dot /tmp/never.dot", 2,
	       "--domain-dims needs --domain");
	t_expect_fuselab("--batch --repeat 0", 2, "--repeat: expected an integer from 1 "
	       "to 1000, got \"0\"");
	t_expect_fuselab("--batch --timeout 0", 2, "--timeout: expected an integer from "
	       "1 to 86400, got \"0\"");
	assert_int_not_equal(access("/tmp/never.dot", F_OK), 0);
}

/* A rules file naming a field or an op fuselab does not know, or a
 * folder given as one. */
static void test_robust_rules_unknown_names(void **state)
{
	static const struct {
		const char *rules, *expect;
	} cases[] = {
		{"{\"format\":\"fuselab-rules/1\",\"rules\":[{\"id\":\"R9\","
		 "\"producer\":\"E\",\"consumer\":\"E\",\"result\":\"E\","
		 "\"priority\":1}]}",
		 "r.json: rules[0].priority: unknown field"},
		{"{\"format\":\"fuselab-rules/1\",\"rules\":[],\"extra\":1}",
		 "r.json: extra: unknown field"},
		{"{\"format\":\"fuselab-rules/1\",\"rules\":[{\"id\":\"R9\","
		 "\"producer\":\"O\",\"consumer\":\"E\",\"result\":\"O\","
		 "\"producer_only\":[\"matmul\",\"convolution\"]}]}",
		 "r.json: rules[0].producer_only[1]: unknown op "
		 "\"convolution\""},
		{"{\"format\":\"fuselab-rules/1\",\"rules\":[{\"id\":\"R9\","
		 "\"producer\":\"E\",\"consumer\":\"O\",\"result\":\"O\","
		 "\"consumer_except\":[7]}]}",
		 "r.json: rules[0].consumer_except[0]: unknown op"},
		{"{\"format\":\"fuselab-rules/2\",\"rules\":[]}",
		 "r.json: format: expected \"fuselab-rules/1\""},
	};
	char dir[128], args[400];
	const char *path;
	fl_rule_table t;
	fl_error err = {""};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (fl_rules_load_string(&t, cases[i].rules, "r.json", &err) == 0)
			fail_msg("case %zu loaded, expected \"%s\"", i,
				 cases[i].expect);
		t_assert_contains(err.msg, cases[i].expect);
	}
	/* the command line says the same and exits 2 */
	t_make_dir(dir, sizeof dir);
	path = t_write_graph(dir, "r.json", cases[2].rules);
	snprintf(args, sizeof args, "--check --rules %s", path);
	t_expect_fuselab(args, 2, "r.json: rules[0].producer_only[1]: unknown op "
	       "\"convolution\"");
	snprintf(args, sizeof args, "--check --rules %s", dir);
	t_expect_fuselab(args, 2, ": not a readable rules file (at most 1 MiB)");
	t_remove_dir(dir);
}

/* --target cuda without nvcc (NVCC names a missing one) and without a
 * device: the CPU backend runs and verifies, and the line says why the
 * CUDA was not compiled. */
static void test_robust_cuda_without_nvcc(void **state)
{
	char cmd[2048], *out;

	(void)state;
	snprintf(cmd, sizeof cmd, "env FUSELAB_NO_CUDA=1 NVCC=/nonexistent/nvcc "
		 "'%s' --batch --run --target cuda --strategy unfused "
		 "--repeat 1 --warmup 0 %s/apollo_fig3.json", t_fuselab_bin(),
		 t_samples_dir());
	if (t_run(cmd, &out) != 0)
		fail_msg("%s:\n%s", cmd, out);
	t_assert_contains(out, "target: cuda: no CUDA device: CPU backend only "
			  "(the CUDA was not compiled: nvcc not found");
	t_assert_contains(out, "verified yes");
	free(out);
}

/* Whether tests/FILE registers test NAME with cmocka. */
static int registers(const char *file, const char *name)
{
	char path[1024], call[200], *text;
	int found;

	snprintf(path, sizeof path, "%s/tests/%s", t_repo_root(), file);
	text = t_read_file(path, NULL);
	snprintf(call, sizeof call, "cmocka_unit_test(%s)", name);
	found = strstr(text, call) != NULL;
	snprintf(call, sizeof call, "cmocka_unit_test_teardown(%s,", name);
	found |= strstr(text, call) != NULL;
	free(text);
	return found;
}

/* docs/robustness.md: at least 40 classes of bad input, each row naming
 * tests as `test_x.c: name`, and every test named is a registered test
 * of that file (a renamed or removed test shows here). */
static void test_robust_doc_names_real_tests(void **state)
{
	char path[1024], *doc;
	int rows = 0, named = 0;

	(void)state;
	snprintf(path, sizeof path, "%s/" DOC, t_repo_root());
	doc = t_read_file(path, NULL);
	for (const char *line = doc; line; line = strchr(line, '\n')) {
		line += *line == '\n';
		rows += line[0] == '|' && line[1] == ' ' &&
			line[2] >= '1' && line[2] <= '9';
	}
	for (const char *p = strstr(doc, "`test_"); p;
	     p = strstr(p + 1, "`test_")) {
		char file[64], name[128];

		if (sscanf(p, "`%63[a-z0-9_.]: %127[a-z0-9_]`", file, name) != 2)
			continue;
		if (!registers(file, name))
			fail_msg(DOC " names %s: %s, which tests/%s does not "
				 "register", file, name, file);
		named++;
	}
	if (rows < 40 || named < rows)
		fail_msg(DOC ": %d classes naming %d tests (want at least 40, "
			 "each with a test)", rows, named);
	t_assert_contains(doc, "\n## Fuzzing\n");
	free(doc);
}

FL_SUITE(robustness,
	 cmocka_unit_test(test_robust_exports_leave_no_partial_file),
	 cmocka_unit_test(test_robust_graph_file_kinds),
	 cmocka_unit_test(test_robust_stdout_fails),
	 cmocka_unit_test(test_robust_opaque_op_cannot_run),
	 cmocka_unit_test(test_robust_option_shapes),
	 cmocka_unit_test(test_robust_rules_unknown_names),
	 cmocka_unit_test(test_robust_cuda_without_nvcc),
	 cmocka_unit_test(test_robust_doc_names_real_tests));
