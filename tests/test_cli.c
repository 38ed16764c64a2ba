/* Black-box tests of the fuselab binary: options, exit statuses, messages,
 * and that the man page documents every option --help lists. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "events.h"
#include "kernel.h"
#include "test_util.h"

static void test_help_and_version(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(t_fuselab("--help", &out), 0);
	t_assert_contains(out, "usage: fuselab");
	t_assert_contains(out, "--interpret");
	free(out);
	assert_int_equal(t_fuselab("--version", &out), 0);
	t_assert_contains(out, "fuselab " FL_VERSION);
	free(out);
}

static void test_usage_errors(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(t_fuselab("--bogus", &out), 2);
	t_assert_contains(out, "unknown option \"--bogus\"");
	free(out);
	assert_int_equal(t_fuselab("--interpret", &out), 2);
	t_assert_contains(out, "--interpret needs --batch");
	free(out);
	assert_int_equal(t_fuselab("--batch --seed abc", &out), 2);
	t_assert_contains(out, "--seed: expected");
	free(out);
	assert_int_equal(t_fuselab("a.json b.json --check", &out), 2);
	t_assert_contains(out, "more than one FILE");
	free(out);
}

static void test_check_sample(void **state)
{
	char args[1024], *out;

	(void)state;
	snprintf(args, sizeof args, "--check %s/softmax.json", t_samples_dir());
	assert_int_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "ops: 1 (1 compound, 0 primitive)");
	t_assert_contains(out, "valid: yes");
	free(out);
}

static void test_check_bad_file(void **state)
{
	char path[] = "/tmp/fuselab-cli-XXXXXX", args[1024], want[256], *out;
	FILE *f;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs("{\"format\":\"fuselab-graph/1\",\"tensors\":{\"x\":{\"shape\":[2],"
	      "\"role\":\"input\"},\"y\":{\"shape\":[2],\"role\":\"output\"}},"
	      "\"ops\":[{\"name\":\"a\",\"op\":\"add\",\"in\":[\"x\",\"h2\"],"
	      "\"out\":\"y\"}]}", f);
	fclose(f);
	/* stdout must stay empty: only the error, on stderr */
	snprintf(args, sizeof args, "--check %s 2>&1 >/dev/null", path);
	assert_int_equal(t_fuselab(args, &out), 2);
	snprintf(want, sizeof want, "fuselab: %s: ops[0].in[1]: unknown tensor "
		 "\"h2\"", path);
	t_assert_contains(out, want);
	free(out);
	snprintf(args, sizeof args, "--check %s 2>/dev/null", path);
	assert_int_equal(t_fuselab(args, &out), 2);
	assert_string_equal(out, "");
	free(out);
	remove(path);
	assert_int_equal(t_fuselab("--check /nonexistent.json", &out), 2);
	t_assert_contains(out, "/nonexistent.json: cannot open");
	free(out);
}

static void test_builtin_sample(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(t_fuselab("--check", &out), 0);
	t_assert_contains(out, "<built-in: bert_encoder.json>");
	t_assert_contains(out, "valid: yes");
	free(out);
}

static void test_interpret_is_deterministic(void **state)
{
	char args[1024], *a, *b, *c;
	const char *p, *q;

	(void)state;
	snprintf(args, sizeof args, "--batch %s/apollo_fig3.json --interpret",
		 t_samples_dir());
	assert_int_equal(t_fuselab(args, &a), 0);
	assert_int_equal(t_fuselab(args, &b), 0);
	strcat(args, " --seed 7");
	assert_int_equal(t_fuselab(args, &c), 0);
	t_assert_contains(a, "interpreted:");
	p = strstr(a, "checksum");
	q = strstr(b, "checksum");
	assert_non_null(p);
	assert_non_null(q);
	/* same seed: identical checksum text up to the timing */
	assert_memory_equal(p, q, (size_t)(strstr(p, "time=") - p));
	assert_null(strstr(c, strstr(a, "hash=")));
	free(a);
	free(b);
	free(c);
}

static void test_interpret_memory_limit(void **state)
{
	char args[1024], *out;

	(void)state;
	snprintf(args, sizeof args, "--batch %s/softmax.json --interpret "
		 "--max-memory 1M", t_samples_dir());
	assert_int_equal(t_fuselab(args, &out), 1);
	t_assert_contains(out, "more than the interpreter's limit");
	free(out);
}

static void test_interactive_needs_terminal(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(t_fuselab("</dev/null", &out), 2);
	t_assert_contains(out, "needs a terminal");
	free(out);
}

static void test_list_ops(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(t_fuselab("--list-ops", &out), 0);
	t_assert_contains(out, "softmax");
	t_assert_contains(out, "conv2d");
	t_assert_contains(out, "compound");
	/* each op with the class name the TUI shows too (fl_op_class_name) */
	for (int k = 0; k < FL_OP_COUNT; k++) {
		const fl_op_info *info = fl_op_info_of((fl_op_kind)k);
		char line[64];

		assert_string_not_equal(fl_op_class_name(info->cls), "?");
		snprintf(line, sizeof line, "\n%-13s %-9s in ", info->name,
			 fl_op_class_name(info->cls));
		t_assert_contains(out, k == 0 ? line + 1 : line);
	}
	free(out);
}

/* Every long option in --help appears in the man page. */
static void test_man_page_documents_options(void **state)
{
	char *help, *man, *p;

	(void)state;
	assert_int_equal(t_fuselab("--help", &help), 0);
	assert_int_equal(t_run("cat man/fuselab.1", &man), 0);
	for (p = strstr(help, "--"); p; p = strstr(p + 2, "--")) {
		char opt[64], esc[80];
		size_t n = strspn(p + 2, "abcdefghijklmnopqrstuvwxyz-");

		if (n == 0 || n > 40)
			continue;
		snprintf(opt, sizeof opt, "%.*s", (int)n, p + 2);
		/* roff writes a dash as \- */
		snprintf(esc, sizeof esc, "\\-\\-%s", opt);
		for (char *d = esc + 4; *d; d++)
			if (*d == '-') {
				memmove(d + 1, d, strlen(d) + 1);
				*d++ = '\\';
			}
		if (!strstr(man, esc))
			fail_msg("man page lacks --%s (looked for %s)", opt, esc);
	}
	free(help);
	free(man);
}

/* "--batch <sample> ARGS" */
static int sample_run(const char *sample, const char *args, char **out)
{
	char cmd[2048];

	snprintf(cmd, sizeof cmd, "--batch %s/%s.json %s", t_samples_dir(),
		 sample, args);
	return t_fuselab(cmd, out);
}

static void test_stage_partition(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(sample_run("apollo_fig3", "--stage partition", &out), 0);
	t_assert_contains(out, "partition: 3 micro-graphs from 8 primitives");
	t_assert_contains(out, "op1 op2 op3.max  [R1 R4]");
	free(out);
	assert_int_equal(sample_run("apollo_fig3", "--stage layer9", &out), 2);
	t_assert_contains(out, "--stage: unknown stage \"layer9\"");
	free(out);
}

/* The "reason" of each event line of out, one per line (malloc'd), and
 * the passes seen; the state (with --stage) is one more line. */
static char *event_reasons(char *out, bool *pass_seen, int *n)
{
	char *line, *save = NULL, *reasons = calloc(1, strlen(out) + 1);
	size_t used = 0;

	assert_non_null(reasons);
	*n = 0;
	for (line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		cJSON *j = cJSON_Parse(line);
		const cJSON *r = cJSON_GetObjectItem(j, "reason");
		const cJSON *p = cJSON_GetObjectItem(j, "pass");
		fl_pass pass;

		if (!j)
			fail_msg("not a JSON line: %s", line);
		if (!cJSON_GetObjectItem(j, "seq")) {	/* the state, last */
			assert_non_null(cJSON_GetObjectItem(j, "micro_graphs"));
			cJSON_Delete(j);
			continue;
		}
		if (!cJSON_IsString(r) || !cJSON_IsString(p) ||
		    fl_pass_parse(p->valuestring, &pass) < 0)
			fail_msg("not an event line: %s", line);
		pass_seen[pass] = true;
		used += (size_t)sprintf(reasons + used, "%s\n", r->valuestring);
		cJSON_Delete(j);
		(*n)++;
	}
	return reasons;
}

/* --step N prints the log of a complete run cut at N, with every pass
 * up to the run: events in JSONL, text and JSON.  Under apollo-l2, so
 * that layer 2 decides too (step 30 falls among its decisions); layer 3
 * decides only under apollo. */
static void test_step_equals_cut(void **state)
{
	static const int steps[] = {0, 3, 9, 20, 30, 33};
	bool seen[FL_PASS_COUNT] = {false}, none[FL_PASS_COUNT];
	char *out, *all, args[128];
	int n_all, n;

	(void)state;
	assert_int_equal(sample_run("softmax", "--stage run --repeat 1 --warmup 0 "
				    "--events --format jsonl --strategy apollo-l2",
				    &out), 0);
	all = event_reasons(out, seen, &n_all);
	free(out);
	for (int p = FL_PASS_CLUSTER; p < FL_PASS_COUNT; p++)
		if (p != FL_PASS_CONSTRAIN && p != FL_PASS_AGGREGATE &&
		    p != FL_PASS_LAYER3 && !seen[p])
			fail_msg("no event of pass %s", fl_pass_name((fl_pass)p));
	assert_true(n_all > steps[5]);
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		char *cut;
		size_t len = 0;

		snprintf(args, sizeof args, "--stage run --repeat 1 --warmup 0 "
			 "--events --format jsonl --strategy apollo-l2 "
			 "--step %d", steps[i]);
		assert_int_equal(sample_run("softmax", args, &out), 0);
		cut = event_reasons(out, none, &n);
		assert_int_equal(n, steps[i]);
		for (int k = 0; k < n; k++)
			len += strcspn(all + len, "\n") + 1;
		if (strlen(cut) != len || strncmp(cut, all, len) != 0)
			fail_msg("--step %d: the log is not the complete log cut "
				 "there:\n%s", steps[i], cut);
		free(cut);
		free(out);
	}
	free(all);
	/* text: one line per decision, the later passes included */
	assert_int_equal(sample_run("softmax", "--stage run --repeat 1 "
				    "--warmup 0 --events", &out), 0);
	t_assert_contains(out, " codegen generated [softmax.max] fl_k0: ");
	t_assert_contains(out, " compile compiled [] ");
	t_assert_contains(out, " run ran [softmax.max] fl_k0 (1 op): ");
	t_assert_contains(out, " run verified [softmax.div] output y: pass");
	t_assert_contains(out, "run: ok, verified");
	free(out);
	/* JSON: the state of every stage and the events, measurements apart */
	assert_int_equal(sample_run("softmax", "--stage run --repeat 1 "
				    "--warmup 0 --events --format json", &out), 0);
	{
		cJSON *j = cJSON_Parse(strstr(out, "{"));
		const cJSON *ev, *e;
		int ran = 0;

		assert_non_null(j);
		assert_non_null(cJSON_GetObjectItem(j, "codegen"));
		assert_non_null(cJSON_GetObjectItem(j, "compile"));
		assert_true(cJSON_IsTrue(cJSON_GetObjectItem(
			cJSON_GetObjectItem(j, "run"), "verified")));
		ev = cJSON_GetObjectItem(j, "events");
		cJSON_ArrayForEach(e, ev)
			if (!strcmp(cJSON_GetObjectItem(e, "kind")->valuestring,
				    "ran")) {
				assert_non_null(cJSON_GetObjectItem(
					cJSON_GetObjectItem(e, "measured"),
					"median_s"));
				ran++;
			}
		assert_int_equal(ran, 3);
		cJSON_Delete(j);
	}
	free(out);
	/* the state at a step: where it is and what comes next */
	assert_int_equal(sample_run("softmax", "--stage codegen --step 5", &out), 0);
	t_assert_contains(out, "step 5 of ");
	t_assert_contains(out, ": next #5 classify classified");
	free(out);
	assert_int_equal(sample_run("softmax", "--step -1", &out), 2);
	t_assert_contains(out, "--step");
	free(out);
}

/* --stage takes every pass of the pipeline. */
static void test_stage_every_pass(void **state)
{
	char args[64], *out;

	(void)state;
	for (int p = 0; p < FL_PASS_COUNT; p++) {
		if (p == FL_PASS_COMPILE || p == FL_PASS_RUN)
			continue;	/* test_step_equals_cut runs these */
		snprintf(args, sizeof args, "--stage %s", fl_pass_name((fl_pass)p));
		if (sample_run("layernorm", args, &out) != 0)
			fail_msg("%s failed:\n%s", args, out);
		if (p >= FL_PASS_LAYER1)
			t_assert_contains(out, "layer 1: ");
		if (p == FL_PASS_CODEGEN)
			t_assert_contains(out, "const int fl_n_kernels");
		free(out);
	}
}

static void test_events_jsonl(void **state)
{
	char *out, *line, *save = NULL;
	int n = 0, merged = 0;

	(void)state;
	assert_int_equal(sample_run("apollo_fig3", "--events --format jsonl", &out), 0);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *j = cJSON_Parse(line);
		const cJSON *kind;

		if (!j)
			fail_msg("not a JSON line: %s", line);
		kind = cJSON_GetObjectItem(j, "kind");
		assert_true(cJSON_IsString(kind));
		assert_true(cJSON_IsNumber(cJSON_GetObjectItem(j, "seq")));
		assert_true(cJSON_IsString(cJSON_GetObjectItem(j, "reason")));
		merged += !strcmp(kind->valuestring, "merged");
		cJSON_Delete(j);
		n++;
	}
	assert_true(n > 10);
	assert_int_equal(merged, 5);
	free(out);
}

static void test_partition_json(void **state)
{
	char *out;
	cJSON *j, *mgs;

	(void)state;
	assert_int_equal(sample_run("apollo_fig3", "--stage partition --events "
				    "--format json", &out), 0);
	j = cJSON_Parse(out);
	assert_non_null(j);
	mgs = cJSON_GetObjectItem(j, "micro_graphs");
	assert_int_equal(cJSON_GetArraySize(mgs), 3);
	assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(j, "events")) > 10);
	assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(j, "ops")) == 8);
	cJSON_Delete(j);
	free(out);
}

static void test_why(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(sample_run("apollo_fig3", "--why op1 op2", &out), 0);
	t_assert_contains(out, "why op1 op2: yes: op1 and op2 are in micro-graph");
	free(out);
	assert_int_equal(sample_run("apollo_fig3", "--why op2 op3.sub", &out), 0);
	t_assert_contains(out, "would create a cycle through op3.max");
	free(out);
	assert_int_equal(sample_run("apollo_fig3", "--why op1 zz", &out), 2);
	t_assert_contains(out, "--why: no op named \"zz\"");
	free(out);
	assert_int_equal(sample_run("apollo_fig3", "--why op1", &out), 2);
	t_assert_contains(out, "--why needs two op names");
	free(out);
}

/* Appends the --why examples of a document (command lines starting with
 * "fuselab" or "build/fuselab", roff's \- unescaped, continuation lines
 * joined) to cmds[*n]. */
static void why_examples(const char *doc, char cmds[][512], int *n, int max)
{
	char *text, *line, *save = NULL, cmd[512] = "";
	char path[1024];

	snprintf(path, sizeof path, "cat %s/%s", t_repo_root(), doc);
	assert_int_equal(t_run(path, &text), 0);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char clean[512];
		size_t len = 0;
		int more;

		for (const char *c = line; *c && len + 1 < sizeof clean; c++)
			if (!(c[0] == '\\' && c[1] == '-'))
				clean[len++] = *c;
		clean[len] = '\0';
		more = len > 0 && clean[len - 1] == '\\';
		while (len > 0 && (clean[len - 1] == ' ' || clean[len - 1] == '\\'))
			clean[--len] = '\0';
		if (cmd[0]) {
			strncat(cmd, " ", sizeof cmd - strlen(cmd) - 1);
			strncat(cmd, clean + strspn(clean, " "), sizeof cmd - strlen(cmd) - 1);
		} else {
			const char *c = clean + strspn(clean, " ");

			if (strncmp(c, "build/fuselab ", 14) == 0)
				c += 14;
			else if (strncmp(c, "fuselab ", 8) == 0)
				c += 8;
			else
				continue;
			snprintf(cmd, sizeof cmd, "%s", c);
		}
		if (more)
			continue;
		if (strstr(cmd, "--why ") && *n < max)
			snprintf(cmds[(*n)++], 512, "%s", cmd);
		cmd[0] = '\0';
	}
	free(text);
}

/* Every --why example in the man page and the README names real ops. */
static void test_why_examples_in_docs(void **state)
{
	char cmds[16][512], cmd[10240], *out;
	int n = 0, man;

	(void)state;
	why_examples("man/fuselab.1", cmds, &n, 16);
	man = n;
	why_examples("README.md", cmds, &n, 16);
	assert_true(man >= 1);
	assert_true(n > man);
	for (int i = 0; i < n; i++) {
		snprintf(cmd, sizeof cmd, "cd %s && %s %s", t_repo_root(),
			 t_fuselab_bin(), cmds[i]);
		if (t_run(cmd, &out) != 0)
			fail_msg("%s example \"fuselab %s\" failed:\n%s",
				 i < man ? "man page" : "README", cmds[i], out);
		t_assert_contains(out, "why ");
		free(out);
	}
}

static void test_rule_options(void **state)
{
	char args[1024], *out;

	(void)state;
	assert_int_equal(sample_run("apollo_fig3", "--stage partition "
				    "--disable-rule R4", &out), 0);
	t_assert_contains(out, "partition: 5 micro-graphs");
	free(out);
	assert_int_equal(sample_run("apollo_fig3", "--stage partition "
				    "--disable-rule R42", &out), 2);
	t_assert_contains(out, "--disable-rule: no rule \"R42\"");
	free(out);
	assert_int_equal(sample_run("apollo_fig3", "--stage partition "
				    "--rules /nonexistent.json", &out), 2);
	t_assert_contains(out, "/nonexistent.json: cannot open rules file");
	free(out);
	snprintf(args, sizeof args, "--stage partition --rules "
		 "%s/rules/stencil-chains.json", t_samples_dir());
	assert_int_equal(sample_run("unsharp_mask", args, &out), 0);
	t_assert_contains(out, "blur_x blur_y");
	free(out);
}

static void test_constraint_options(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(sample_run("apollo_fig3", "--stage partition --events "
				    "--never-fuse op1,op2", &out), 0);
	t_assert_contains(out, "--never-fuse op1,op2: they will never share");
	t_assert_contains(out, "partition: 4 micro-graphs");
	free(out);
	assert_int_equal(sample_run("apollo_fig3", "--stage partition "
				    "--fuse op2,op3", &out), 0);
	t_assert_contains(out, "partition: 1 micro-graphs");
	free(out);
	assert_int_equal(sample_run("apollo_fig3", "--stage partition "
				    "--fuse op1", &out), 2);
	t_assert_contains(out, "--fuse: expected two op names as A,B");
	free(out);
	assert_int_equal(sample_run("apollo_fig3", "--stage partition "
				    "--never-fuse op1,nope", &out), 2);
	t_assert_contains(out, "no op named \"nope\"");
	free(out);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static void test_run_ladder(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(sample_run("apollo_fig3", "--run --repeat 1 --warmup 0",
				    &out), 0);
	t_assert_contains(out, "unfused");
	t_assert_contains(out, "xla");
	t_assert_contains(out, "apollo-l1");
	t_assert_contains(out, "apollo-l2");
	assert_int_equal(count(out, "verified yes"), FL_STRATEGY_COUNT);
	/* a fused kernel is compared with its ops unfused */
	t_assert_contains(out, "unfused ");
	/* one round has no spread: no verdict, for totals and kernels */
	assert_int_equal(count(out, "(one round, no spread: not compared)"),
			 FL_STRATEGY_COUNT - 1);
	{
		/* a kernel's pair: its ratio, whatever the timings were */
		const char *pair = strstr(out, "one round, no spread ");
		double ratio = 0;

		assert_non_null(pair);
		assert_int_equal(sscanf(pair, "one round, no spread %lfx",
					&ratio), 1);
		assert_true(ratio > 0);
	}
	assert_null(strstr(out, "faster"));
	assert_null(strstr(out, "SLOWER"));
	assert_null(strstr(out, "within noise"));
	free(out);
	assert_int_equal(sample_run("apollo_fig3", "--run --strategy bogus", &out), 2);
	t_assert_contains(out, "--strategy: expected unfused, xla, apollo-l1, apollo-l2, apollo or all");
	free(out);
	assert_int_equal(sample_run("apollo_fig3", "--run --tile 0,4", &out), 2);
	t_assert_contains(out, "--tile: expected");
	free(out);
}

/* The ladder's copy probe runs on the kernels' OpenMP team, so it has
 * the team's thread count (before, threads of its own on every CPU
 * competed with the team's spinning threads). */
static void test_run_copy_on_kernel_threads(void **state)
{
	char cmd[2048], *out;

	(void)state;
	snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 %s --batch "
		 "%s/apollo_fig3.json --run --strategy unfused --repeat 2 "
		 "--warmup 0", t_fuselab_bin(), t_samples_dir());
	assert_int_equal(t_run(cmd, &out), 0);
	t_assert_contains(out, "per copy, 1 thread)");
	free(out);
}

static void test_run_without_compiler(void **state)
{
	char args[1024], *out;

	(void)state;
	snprintf(args, sizeof args, "--batch %s/apollo_fig3.json --run "
		 "--strategy unfused", t_samples_dir());
	{
		char cmd[2048];

		snprintf(cmd, sizeof cmd, "CC=/nonexistent/cc %s %s",
			 t_fuselab_bin(), args);
		assert_int_equal(t_run(cmd, &out), 1);
	}
	t_assert_contains(out, "/nonexistent/cc");
	free(out);
}

static void test_emit_and_layer1_json(void **state)
{
	char dir[] = "/tmp/fuselab-emit-XXXXXX", args[1024], cmd[1200], *out;
	cJSON *j, *kernels;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(args, sizeof args, "--batch %s/micro2020_fig1.json --emit %s",
		 t_samples_dir(), dir);
	assert_int_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "micro2020_fig1-apollo-l1.c");
	free(out);
	snprintf(cmd, sizeof cmd, "cc -fsyntax-only -fopenmp -Wall -Wextra "
		 "-Werror %s/micro2020_fig1-apollo-l1.c", dir);
	if (t_run(cmd, &out) != 0)
		fail_msg("emitted source does not compile cleanly:\n%s", out);
	free(out);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(t_run(cmd, NULL), 0);
	assert_int_equal(sample_run("micro2020_fig1", "--stage layer1 --format json",
				    &out), 0);
	j = cJSON_Parse(out);
	assert_non_null(j);
	kernels = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "layer1"), "kernels");
	assert_int_equal(cJSON_GetArraySize(kernels), 1);
	assert_non_null(strstr(cJSON_GetObjectItem(cJSON_GetArrayItem(kernels, 0),
						   "schedule")->valuestring,
			       "extension"));
	cJSON_Delete(j);
	free(out);
}

/* ---- file names and directories that are not ours ---- */

/* path's contents (malloc'd, NUL-terminated; *n its length), or NULL. */
static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long len = 0;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1)) &&
	    fread(buf, 1, (size_t)len, f) == (size_t)len) {
		buf[len] = '\0';
		*n = (size_t)len;
	} else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static void spit(const char *path, const char *text, size_t n)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* The names in dir, sorted, joined with '|' ("." and ".." left out). */
static void list_dir(const char *dir, char *out, size_t n)
{
	char cmd[1024], *ls;

	snprintf(cmd, sizeof cmd, "LC_ALL=C ls -A '%s' | tr '\\n' '|'", dir);
	assert_int_equal(t_run(cmd, &ls), 0);
	snprintf(out, n, "%s", ls);
	free(ls);
}

/* samples/softmax.json with its name replaced by json_name (JSON text,
 * quotes included), written to path. */
static void renamed_softmax(const char *path, const char *json_name)
{
	char src[1024], *text, *p, *out;
	size_t n = 0;

	snprintf(src, sizeof src, "%s/softmax.json", t_samples_dir());
	text = slurp(src, &n);
	assert_non_null(text);
	p = strstr(text, "\"name\": \"softmax\"");
	assert_non_null(p);
	out = malloc(n + strlen(json_name) + 16);
	assert_non_null(out);
	n = (size_t)sprintf(out, "%.*s\"name\": %s%s", (int)(p - text), text,
			    json_name, p + strlen("\"name\": \"softmax\""));
	spit(path, out, n);
	free(out);
	free(text);
}

/* --emit DIR: a graph's name never forms a path ("../../escaped" and
 * "a/b\n" become one safe file name inside DIR). */
static void test_emit_names_stay_inside(void **state)
{
	char top[] = "/tmp/fuselab-names-XXXXXX", dir[128], graph[128],
	     args[1024], names[1024], *out;

	(void)state;
	assert_non_null(mkdtemp(top));
	snprintf(dir, sizeof dir, "%s/out", top);
	snprintf(graph, sizeof graph, "%s/g.json", top);
	renamed_softmax(graph, "\"../../escaped\"");
	snprintf(args, sizeof args, "--batch %s --emit %s --strategy unfused",
		 graph, dir);
	assert_int_equal(t_fuselab(args, &out), 0);
	free(out);
	renamed_softmax(graph, "\"a/b\\n\"");
	assert_int_equal(t_fuselab(args, &out), 0);
	free(out);
	renamed_softmax(graph, "\"...\"");
	assert_int_equal(t_fuselab(args, &out), 0);
	free(out);
	list_dir(dir, names, sizeof names);
	assert_string_equal(names, "_..-unfused.c|_._.._escaped-unfused.c|"
			    "a_b_-unfused.c|");
	list_dir(top, names, sizeof names);
	assert_string_equal(names, "g.json|out|");
	assert_int_equal(access("/tmp/escaped-unfused.c", F_OK), -1);
	snprintf(args, sizeof args, "rm -rf '%s'", top);
	assert_int_equal(t_run(args, NULL), 0);
}

/* --run --workdir DIR: a DIR holding files named like ours (gen.c,
 * gen.so, cc.log) keeps them byte for byte, and nothing else is left in
 * it; with --keep the fresh sub-directory is named and kept (--run and
 * --stage compile). */
static void test_run_workdir_leaves_user_files(void **state)
{
	static const char *const names[] = {"gen.c", "gen.so", "cc.log"};
	char dir[] = "/tmp/fuselab-wd-XXXXXX", path[256], args[1024],
	     list[1024], *out, *kept, *p;
	size_t n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (int i = 0; i < 3; i++) {
		char text[64];

		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		n = (size_t)snprintf(text, sizeof text, "user's %s\n%c",
				     names[i], '\0');
		spit(path, text, n);	/* a NUL inside, too */
	}
	snprintf(args, sizeof args, "--batch %s/apollo_fig3.json --run "
		 "--strategy unfused --repeat 1 --warmup 0 --workdir %s",
		 t_samples_dir(), dir);
	assert_int_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "verified yes");
	free(out);
	list_dir(dir, list, sizeof list);
	assert_string_equal(list, "cc.log|gen.c|gen.so|");
	for (int i = 0; i < 3; i++) {
		char want[64], *got;
		size_t wn = (size_t)snprintf(want, sizeof want, "user's %s\n%c",
					    names[i], '\0');

		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		got = slurp(path, &n);
		assert_non_null(got);
		assert_int_equal(n, wn);
		assert_memory_equal(got, want, wn);
		free(got);
	}
	/* --keep: the fresh directory inside DIR is printed and kept */
	assert_int_equal(t_fuselab(strcat(args, " --keep"), &out), 0);
	p = strstr(out, "sources kept in ");
	assert_non_null(p);
	kept = strndup(p + strlen("sources kept in "),
		       strcspn(p + strlen("sources kept in "), "\n"));
	assert_int_equal(strncmp(kept, dir, strlen(dir)), 0);
	assert_int_equal(strncmp(kept + strlen(dir), "/fuselab-", 9), 0);
	snprintf(path, sizeof path, "%s/gen.c", kept);
	assert_int_equal(access(path, R_OK), 0);
	free(kept);
	free(out);
	/* and so does --stage compile */
	snprintf(args, sizeof args, "--batch %s/apollo_fig3.json --stage "
		 "compile --strategy unfused --workdir %s --keep",
		 t_samples_dir(), dir);
	assert_int_equal(t_fuselab(args, &out), 0);
	p = strstr(out, "sources kept in ");
	assert_non_null(p);
	assert_int_equal(strncmp(p + strlen("sources kept in "), dir,
				 strlen(dir)), 0);
	free(out);
	snprintf(args, sizeof args, "rm -rf '%s'", dir);
	assert_int_equal(t_run(args, NULL), 0);
}

/* Without root, the set-up script prints the exact apt-get line and fails;
 * dpkg-query and id are faked so the test runs on any machine. */
static void test_install_script_without_root(void **state)
{
	char dir[] = "/tmp/fuselab-deps-XXXXXX", cmd[2048], *out;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof cmd,
		 "printf '#!/bin/sh\\nexit 1\\n' > %s/dpkg-query && "
		 "printf '#!/bin/sh\\necho 1000\\n' > %s/id && "
		 "chmod +x %s/dpkg-query %s/id && "
		 "PATH=%s:$PATH sh scripts/install-deps.sh", dir, dir, dir, dir, dir);
	assert_int_equal(t_run(cmd, &out), 1);
	t_assert_contains(out, "fuselab: run as root:  apt-get install -y "
			"--no-install-recommends build-essential pkg-config "
			"libisl-dev libgraphviz-dev libcjson-dev libncurses-dev "
			"libcmocka-dev tmux graphviz");
	free(out);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(t_run(cmd, NULL), 0);
}

/* make install puts the binary, the samples and the man page in PREFIX. */
static void test_make_install(void **state)
{
	char dir[] = "/tmp/fuselab-inst-XXXXXX", cmd[2048], *out;
	const char *files[] = {"bin/fuselab", "share/man/man1/fuselab.1",
			       "share/fuselab/samples/bert_encoder.json",
			       "share/fuselab/samples/rules/stencil-chains.json"};

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof cmd, "make -s -j1 --no-print-directory install "
		 "PREFIX=%s >/dev/null", dir);
	if (t_run(cmd, &out) != 0)
		fail_msg("make install failed:\n%s", out);
	free(out);
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		snprintf(cmd, sizeof cmd, "test -s %s/%s", dir, files[i]);
		if (t_run(cmd, NULL) != 0)
			fail_msg("make install did not install %s", files[i]);
	}
	snprintf(cmd, sizeof cmd, "%s/bin/fuselab --version", dir);
	assert_int_equal(t_run(cmd, &out), 0);
	t_assert_contains(out, "fuselab " FL_VERSION);
	free(out);
	snprintf(cmd, sizeof cmd, "grep -c '@VERSION@' %s/share/man/man1/fuselab.1",
		 dir);
	assert_int_equal(t_run(cmd, NULL), 1);	/* substituted */
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(t_run(cmd, NULL), 0);
}

FL_SUITE(cli,
	 cmocka_unit_test(test_help_and_version),
	 cmocka_unit_test(test_usage_errors),
	 cmocka_unit_test(test_check_sample),
	 cmocka_unit_test(test_check_bad_file),
	 cmocka_unit_test(test_builtin_sample),
	 cmocka_unit_test(test_interpret_is_deterministic),
	 cmocka_unit_test(test_interpret_memory_limit),
	 cmocka_unit_test(test_interactive_needs_terminal),
	 cmocka_unit_test(test_list_ops),
	 cmocka_unit_test(test_man_page_documents_options),
	 cmocka_unit_test(test_install_script_without_root),
	 cmocka_unit_test(test_run_ladder),
	 cmocka_unit_test(test_run_copy_on_kernel_threads),
	 cmocka_unit_test(test_run_without_compiler),
	 cmocka_unit_test(test_emit_and_layer1_json),
	 cmocka_unit_test(test_emit_names_stay_inside),
	 cmocka_unit_test(test_run_workdir_leaves_user_files),
	 cmocka_unit_test(test_make_install),
	 cmocka_unit_test(test_stage_partition),
	 cmocka_unit_test(test_step_equals_cut),
	 cmocka_unit_test(test_stage_every_pass),
	 cmocka_unit_test(test_events_jsonl),
	 cmocka_unit_test(test_partition_json),
	 cmocka_unit_test(test_why),
	 cmocka_unit_test(test_why_examples_in_docs),
	 cmocka_unit_test(test_rule_options),
	 cmocka_unit_test(test_constraint_options));
