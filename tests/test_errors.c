/* Errors that name the problem (issue 8, items 7-9): sizes that overflow,
 * hostile names, deep nesting, huge numbers, rules files, paths. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <isl/ctx.h>

#include "interp.h"
#include "loader.h"
#include "program_util.h"
#include "rules.h"
#include "codegen.h"
#include "run_impl.h"
#include "test_util.h"

/* Writes text to a fresh temporary file; its path in path[64]. */
static void temp_file(char *path, const char *text, size_t len)
{
	int fd;
	FILE *f;

	strcpy(path, "/tmp/fuselab-err-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

static void test_max_memory_overflow(void **state)
{
	(void)state;
	t_expect_fuselab("--batch --max-memory 9007199254740993G", 2,
	       "--max-memory: \"9007199254740993G\" is more than the largest "
	       "size");
	t_expect_fuselab("--batch --max-memory 17179869184G", 2, "is more than the largest");
	t_expect_fuselab("--batch --max-memory 99999999999999999999", 2,
	       "is more than the largest");
	t_expect_fuselab("--batch --max-memory 0", 2, "must be more than 0");
	t_expect_fuselab("--batch --max-memory 0G", 2, "must be more than 0");
	t_expect_fuselab("--batch --max-memory -5M", 2, "expected a size");
	t_expect_fuselab("--batch --max-memory 8589934591G --check", 0, "valid: yes");
}

static void test_tile_trailing_comma(void **state)
{
	(void)state;
	t_expect_fuselab("--batch --tile 4,", 2, "--tile: \"4,\" ends in a comma");
	t_expect_fuselab("--batch --tile 4,,4", 2, "--tile: expected");
	t_expect_fuselab("--batch --tile ,4", 2, "--tile: expected");
}

/* A graph x -> OP -> y with the given pieces spliced in. */
#define G_HEAD "{\"format\":\"fuselab-graph/1\",\"tensors\":{"
#define G_XY "\"x\":{\"shape\":[4],\"role\":\"input\"}," \
	     "\"y\":{\"shape\":[4],\"role\":\"output\"}"

static void test_deep_nesting(void **state)
{
	size_t depth = 1500, len = 64 + 2 * depth;
	char *json = malloc(len);
	size_t o = 0;

	(void)state;
	o += (size_t)sprintf(json, "{\"format\":\"fuselab-graph/1\",\"meta\":");
	for (size_t i = 0; i < depth; i++)
		json[o++] = '[';
	for (size_t i = 0; i < depth; i++)
		json[o++] = ']';
	strcpy(json + o, "}");
	t_load_fails(json, "nesting deeper than 1000 levels");
	/* a plain syntax error still says "malformed JSON" */
	t_load_fails("{\"format\": }", "line 1, column 12: malformed JSON");
	free(json);
}

static void test_huge_integers(void **state)
{
	(void)state;
	t_load_fails(G_HEAD "\"x\":{\"shape\":[9000000000000000],\"role\":"
		     "\"input\"}}}",
		     "tensors.x.shape[0]: 9000000000000000 is too large: "
		     "integers must be below 9e15");
	t_load_fails(G_HEAD "\"x\":{\"shape\":[4,1e19],\"role\":\"input\"}}}",
		     "tensors.x.shape[1]: 1e+19 is too large");
	t_load_fails(G_HEAD "\"x\":{\"shape\":[4,4],\"role\":\"input\"},"
		     "\"y\":{\"shape\":[4,4],\"role\":\"output\"}},\"ops\":["
		     "{\"name\":\"s\",\"op\":\"softmax\",\"in\":[\"x\"],"
		     "\"out\":\"y\",\"attrs\":{\"axis\":1e16}}]}",
		     "ops[0].attrs.axis: 10000000000000000 is too large: "
		     "integers must be below 9e15");
	/* not a whole number: still "expected an integer" */
	t_load_fails(G_HEAD "\"x\":{\"shape\":[4.5],\"role\":\"input\"}}}",
		     "tensors.x.shape[0]: expected an integer");
}

static void test_long_name_keeps_reason(void **state)
{
	size_t n = 1 << 20;
	char *json = malloc(n + 256), *name = malloc(n + 1);
	fl_error err = {""};

	(void)state;
	memset(name, 'n', n);
	name[n] = '\0';
	sprintf(json, G_HEAD "\"%s\":{\"shape\":[4],\"dtype\":\"f64\"}}}",
		name);
	assert_null(fl_load_graph_string(json, strlen(json), "t.json", &err));
	assert_non_null(strstr(err.msg, "t.json: tensors.nnnnnnnn"));
	assert_non_null(strstr(err.msg, "nnn....dtype: expected one of "
			       "\"f32\""));
	assert_true(strlen(err.msg) < 200);
	free(json);
	free(name);
}

static void test_grammar_is_a_param(void **state)
{
	(void)state;
	t_load_fails(G_HEAD G_XY ",\"w\":{\"shape\":[4],\"role\":\"param\"}},"
		     "\"ops\":[{\"name\":\"a\",\"op\":\"relu\",\"in\":[\"x\"],"
		     "\"out\":\"w\"}]}",
		     "tensor \"w\" is a param and cannot be written");
	t_load_fails(G_HEAD G_XY "},\"ops\":[{\"name\":\"a\",\"op\":\"relu\","
		     "\"in\":[\"y\"],\"out\":\"x\"}]}",
		     "tensor \"x\" is an input and cannot be written");
}

static void test_constant_fits_f32(void **state)
{
	(void)state;
	t_load_fails(G_HEAD G_XY ",\"c\":{\"shape\":[],\"role\":\"const\","
		     "\"value\":1e300}},\"ops\":[{\"name\":\"a\",\"op\":\"add\","
		     "\"in\":[\"x\",\"c\"],\"out\":\"y\"}]}",
		     "tensors.c.value: 1e+300 does not fit in f32");
	t_load_fails(G_HEAD G_XY ",\"c\":{\"shape\":[2],\"role\":\"const\","
		     "\"data\":[1,-1e39]}},\"ops\":[{\"name\":\"a\",\"op\":"
		     "\"add\",\"in\":[\"x\",\"c\"],\"out\":\"y\"}]}",
		     "tensors.c.data[1]: -1e+39 does not fit in f32");
}

static void test_nul_in_name(void **state)
{
	static const char raw[] = G_HEAD G_XY "},\"ops\":[{\"name\":\"a\\u0000b\","
		"\"op\":\"relu\",\"in\":[\"x\"],\"out\":\"y\"}]}";
	char with_byte[] = G_HEAD G_XY "},\"ops\":[{\"name\":\"a?b\","
		"\"op\":\"relu\",\"in\":[\"x\"],\"out\":\"y\"}]}";
	fl_error err = {""};

	(void)state;
	t_load_fails(raw, "\\u0000 in a string: names and strings may not "
		     "contain NUL characters");
	*strchr(with_byte, '?') = '\0';
	assert_null(fl_load_graph_string(with_byte, sizeof with_byte - 1,
					 "t.json", &err));
	assert_non_null(strstr(err.msg, "NUL byte"));
	/* an escaped backslash before u0000 is no NUL */
	t_load_fails(G_HEAD G_XY "},\"ops\":[{\"name\":\"a\\\\u0000\","
		     "\"op\":\"relu\",\"in\":[\"q\"],\"out\":\"y\"}]}",
		     "unknown tensor \"q\"");
}

static void test_rules_file_errors(void **state)
{
	char bad[64], dup[64], args[512];
	static const char bad_text[] = "{\"format\":\"fuselab-rules/1\",\n"
				       " \"rules\": [ {\"id\": \"R9\",, } ]}";
	static const char dup_text[] =
		"{\"format\":\"fuselab-rules/1\",\"rules\":[{\"id\":\"R9\","
		"\"producer\":\"E\",\"consumer\":\"E\",\"result\":\"E\","
		"\"result\":\"B\"}]}";
	fl_rule_table t;
	fl_error err = {""};

	(void)state;
	temp_file(bad, bad_text, sizeof bad_text - 1);
	temp_file(dup, dup_text, sizeof dup_text - 1);
	assert_int_equal(fl_rules_load(&t, bad, &err), -1);
	assert_non_null(strstr(err.msg, ": line 2, column 26: malformed JSON"));
	assert_int_equal(fl_rules_load(&t, dup, &err), -1);
	assert_non_null(strstr(err.msg, ": rules[0].result: field given twice"));
	assert_int_equal(fl_rules_load_string(&t, "{\"format\":\"fuselab-rules/1\","
					      "\"rules\":[],\"rules\":[]}", "r",
					      &err), -1);
	assert_string_equal(err.msg, "r: rules: field given twice");
	assert_int_equal(fl_rules_load(&t, "/nonexistent/x.rules", &err), -1);
	assert_string_equal(err.msg, "/nonexistent/x.rules: cannot open rules "
			    "file: No such file or directory");
	/* --rules is read even when no engine pass runs */
	snprintf(args, sizeof args, "--batch --rules %s", bad);
	t_expect_fuselab(args, 2, "line 2, column 26: malformed JSON");
	snprintf(args, sizeof args, "--check --rules %s", dup);
	t_expect_fuselab(args, 2, "rules[0].result: field given twice");
	t_expect_fuselab("--batch --rules /nonexistent/x.rules", 2,
	       "cannot open rules file: No such file or directory");
	t_expect_fuselab("--check --disable-rule R99", 2, "--disable-rule: no rule \"R99\"");
	unlink(bad);
	unlink(dup);
}

static void test_write_failed_says_why(void **state)
{
	fl_error err = {""};

	(void)state;
	if (access("/dev/full", W_OK) != 0)
		skip();
	assert_int_equal(fl_run_write_file("/dev/full", "int x;\n", &err), -1);
	assert_string_equal(err.msg, "/dev/full: write failed: No space left "
			    "on device");
}

static void test_long_tmpdir(void **state)
{
	char cmd[2048], *out;
	int rc;

	(void)state;
	snprintf(cmd, sizeof cmd, "TMPDIR=/tmp/%0600d %s --batch --stage "
		 "compile %s/softmax.json", 0, t_fuselab_bin(), t_samples_dir());
	rc = t_run(cmd, &out);
	assert_int_equal(rc, 1);
	t_assert_contains(out, "TMPDIR is too long (605 characters");
	free(out);
}

static void test_emit_bad_path_exits_2(void **state)
{
	char file[64], args[512];

	(void)state;
	temp_file(file, "", 0);
	/* mkdir fails: 2 */
	snprintf(args, sizeof args, "--batch --emit %s/sub %s/softmax.json",
		 file, t_samples_dir());
	t_expect_fuselab(args, 2, "Not a directory");
	/* DIR exists but is a file: mkdir says EEXIST, the open fails: 2 too */
	snprintf(args, sizeof args, "--batch --emit %s %s/softmax.json", file,
		 t_samples_dir());
	t_expect_fuselab(args, 2, "Not a directory");
	unlink(file);
}

static void test_names_escaped_on_terminal(void **state)
{
	static const char g[] =
		"{\"format\":\"fuselab-graph/1\",\"name\":\"g\\u001b[31m\","
		"\"doc\":\"d\\u001b]0;t\\u0007\",\"tensors\":{"
		"\"x\\u001b[1m\":{\"shape\":[4],\"role\":\"input\"},"
		"\"y\\u001b[2J\":{\"shape\":[4],\"role\":\"output\"}},\"ops\":["
		"{\"name\":\"a\\u001b[31mRED\",\"op\":\"relu\",\"in\":"
		"[\"x\\u001b[1m\"],\"out\":\"t\\u001b\"},{\"name\":\"b\",\"op\":"
		"\"exp\",\"in\":[\"t\\u001b\"],\"out\":\"y\\u001b[2J\"}]}";
	char path[64], args[512], *out;

	(void)state;
	temp_file(path, g, sizeof g - 1);
	snprintf(args, sizeof args, "--check %s", path);
	assert_int_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "graph: g\\x1b[31m\n");
	t_assert_contains(out, "doc: d\\x1b]0;t\\x07\n");
	assert_null(strchr(out, '\033'));
	free(out);
	snprintf(args, sizeof args, "--batch --stage layer1 --events %s", path);
	assert_int_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "a\\x1b[31mRED b");
	t_assert_contains(out, "t\\x1b register");
	assert_null(strchr(out, '\033'));
	assert_null(strchr(out, '\007'));
	free(out);
	snprintf(args, sizeof args, "--batch --run --repeat 1 --warmup 0 "
		 "--strategy xla %s", path);
	if (t_fuselab(args, &out) == 0)	/* a compiler is there */
		t_assert_contains(out, "[a\\x1b[31mRED .. b]");
	assert_null(strchr(out, '\033'));
	free(out);
	unlink(path);
}

/* Loops over more than INT_MAX elements count in long; normal sizes keep
 * int.  Generated only (--stage codegen), never run. */
static void test_wide_loop_counters(void **state)
{
	static const char g[] =
		"{\"format\":\"fuselab-graph/1\",\"name\":\"huge\",\"tensors\":{"
		"\"x\":{\"shape\":[3,1000000000],\"role\":\"input\"},"
		"\"y\":{\"shape\":[3,1000000000],\"role\":\"output\"}},\"ops\":["
		"{\"name\":\"a\",\"op\":\"relu\",\"in\":[\"x\"],\"out\":\"t\"},"
		"{\"name\":\"b\",\"op\":\"exp\",\"in\":[\"t\"],\"out\":\"y\"}]}";
	static const char *const strategies[] = {"apollo-l1", "xla", "unfused"};
	char path[64], args[512], *out;

	(void)state;
	temp_file(path, g, sizeof g - 1);
	for (int i = 0; i < 3; i++) {
		snprintf(args, sizeof args, "--batch --stage codegen --strategy %s "
			 "%s", strategies[i], path);
		assert_int_equal(t_fuselab(args, &out), 0);
		t_assert_contains(out, "for (long c");
		assert_null(strstr(out, "for (int c"));
		free(out);
	}
	/* tiles of 1 x 32 (not the machine's): the point loop's bounds */
	snprintf(args, sizeof args, "--batch --stage codegen --strategy "
		 "apollo-l1 --tile 1,32 %s", path);
	assert_int_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "for (long c3 = 32 * c1; c3 <= 32 * c1 + 31;");
	free(out);
	unlink(path);
	snprintf(args, sizeof args, "--batch --stage codegen %s/softmax.json",
		 t_samples_dir());
	assert_int_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "for (int c");
	assert_null(strstr(out, "for (long c"));
	free(out);
}

/* --max-memory bounds the whole run: the test child's tensors plus the
 * reference values, checked before the child allocates anything. */
static void test_run_memory_limit(void **state)
{
	char args[512];

	(void)state;
	snprintf(args, sizeof args, "--batch --run --strategy unfused "
		 "--repeat 1 --max-memory 128M %s/softmax.json", t_samples_dir());
	t_expect_fuselab(args, 1, "unfused      5 kernels  out of memory: not run: the "
	       "program needs ");
	t_expect_fuselab(args, 1, "more than the limit of 134217728 bytes (128.0 MiB, "
	       "--max-memory)");
	snprintf(args, sizeof args, "--batch --stage run --repeat 1 "
		 "--max-memory 128M %s/softmax.json", t_samples_dir());
	t_expect_fuselab(args, 1, "run: out of memory, NOT verified");
	/* the interpreter's own limit names bytes too */
	snprintf(args, sizeof args, "--batch --interpret --max-memory 1M "
		 "%s/softmax.json", t_samples_dir());
	t_expect_fuselab(args, 1, "the graph's tensors need 33554432 bytes (32.0 MiB), "
	       "more than the interpreter's limit of 1048576 bytes");
}

#define BIG_JSON \
	"{'format':'fuselab-graph/1','tensors':{" \
	"'x':{'shape':[16777216],'role':'input'}," \
	"'y':{'shape':[16777216],'role':'output'}}," \
	"'ops':[{'name':'r','op':'relu','in':['x'],'out':'y'}]}"

static void test_run_bytes_needed(void **state)
{
	isl_ctx *ctx = isl_ctx_alloc();
	fl_graph *g = t_load_q(BIG_JSON);
	fl_program *p = t_unfused_program(ctx, g);
	fl_values ref = {0};
	fl_buf bufs[2] = {{.shape = g->tensors[0].shape, .data = (float *)1},
			  {.shape = g->tensors[1].shape, .data = NULL}};
	int64_t tensors = 0, refs = 0;

	(void)state;
	assert_non_null(p);
	assert_int_equal(fl_run_bytes_needed(p, NULL, &tensors, &refs),
			 4 * ((int64_t)64 << 20));
	assert_int_equal(tensors, (int64_t)128 << 20);
	assert_int_equal(refs, (int64_t)128 << 20);
	ref.n = 2;
	ref.bufs = bufs;	/* only x has a reference value */
	assert_int_equal(fl_run_bytes_needed(p, &ref, &tensors, &refs),
			 (int64_t)192 << 20);
	assert_int_equal(refs, (int64_t)64 << 20);
	fl_program_free(p);
	fl_graph_free(g);
	isl_ctx_free(ctx);
}

/* Virtual memory of this process in bytes. */
static int64_t vm_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &pages) != 1)
		pages = -1;
	fclose(f);
	return pages < 0 ? -1 : (int64_t)pages * sysconf(_SC_PAGESIZE);
}

/* When the test child cannot allocate its tensors (here: an address
 * space limit it inherits), the run says out of memory, not crash. */
static void test_run_child_out_of_memory(void **state)
{
	isl_ctx *ctx;
	fl_graph *g;
	fl_program *p;
	fl_values *ref;
	fl_run_opts o;
	fl_build b;
	fl_run_result r;
	fl_error err = {""};
	struct rlimit old, lim;
	int64_t vm;
	char *src;
	int rc;

	(void)state;
	if (T_SANITIZED)	/* a sanitizer's shadow memory needs the space */
		skip();
	ctx = isl_ctx_alloc();
	g = t_load_q(BIG_JSON);
	p = t_unfused_program(ctx, g);
	ref = fl_interp_run(g, NULL, &err);
	assert_non_null(p);
	assert_non_null(ref);
	fl_run_opts_default(&o);
	o.warmup = 0;
	o.repeat = 0;
	src = fl_codegen_c(p, &err);
	assert_non_null(src);
	assert_int_equal(fl_build_source(src, &o, &b, &err), 0);
	free(src);
	if (b.status != FL_RUN_OK) {
		fl_build_remove(&b, &o);
		skip();		/* no compiler here */
	}
	vm = vm_bytes();
	assert_true(vm > 0);
	assert_int_equal(getrlimit(RLIMIT_AS, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)(vm + (48 << 20));
	assert_int_equal(setrlimit(RLIMIT_AS, &lim), 0);
	rc = fl_run_build(&b, p, ref, &o, &r, &err);
	assert_int_equal(setrlimit(RLIMIT_AS, &old), 0);
	assert_int_equal(rc, 0);
	if (r.status != FL_RUN_NO_MEMORY)
		fail_msg("status %s: %s", fl_run_status_name(r.status),
			 r.message);
	assert_string_equal(fl_run_status_name(r.status), "out of memory");
	assert_non_null(strstr(r.message, "the test process ran out of memory "
			       "allocating the graph's tensors (134217728 "
			       "bytes)"));
	fl_run_result_free(&r);
	fl_build_remove(&b, &o);
	fl_values_free(ref);
	fl_program_free(p);
	fl_graph_free(g);
	isl_ctx_free(ctx);
}

FL_SUITE(errors,
	 cmocka_unit_test(test_max_memory_overflow),
	 cmocka_unit_test(test_tile_trailing_comma),
	 cmocka_unit_test(test_deep_nesting),
	 cmocka_unit_test(test_huge_integers),
	 cmocka_unit_test(test_long_name_keeps_reason),
	 cmocka_unit_test(test_grammar_is_a_param),
	 cmocka_unit_test(test_constant_fits_f32),
	 cmocka_unit_test(test_nul_in_name),
	 cmocka_unit_test(test_rules_file_errors),
	 cmocka_unit_test(test_write_failed_says_why),
	 cmocka_unit_test(test_long_tmpdir),
	 cmocka_unit_test(test_emit_bad_path_exits_2),
	 cmocka_unit_test(test_names_escaped_on_terminal),
	 cmocka_unit_test(test_wide_loop_counters),
	 cmocka_unit_test(test_run_memory_limit),
	 cmocka_unit_test(test_run_bytes_needed),
	 cmocka_unit_test(test_run_child_out_of_memory));
