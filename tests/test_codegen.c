/* The C backend and the runner: every primitive op compiles and matches
 * the interpreter; tiled programs with recomputation and tile-local
 * buffers match too; mismatches are localised to the kernel that starts
 * them; timeouts, crashes, missing compilers, compile and load errors are
 * reported, never fatal; user names cannot change the program; the
 * source compiles warning-free.  Tensors are small and each test
 * compiles once or twice: compiling dominates the time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <isl/ctx.h>

#include "codegen.h"
#include "engine.h"
#include "interp.h"
#include "loader.h"
#include "program_util.h"
#include "runner.h"
#include "test_util.h"

#define HEAD "{\"format\":\"fuselab-graph/1\",\"name\":\"t\",\"tensors\":{"

/* Options for quick runs: no warm-up, one timed run. */
static fl_run_opts quick(void)
{
	fl_run_opts o;

	fl_run_opts_default(&o);
	o.warmup = 0;
	o.repeat = 1;
	return o;
}

/* Everything one run needs; freed by fixture_free. */
typedef struct fixture {
	isl_ctx *ctx;
	fl_graph *g;
	fl_values *ref;
	fl_program *p;
	fl_run_result r;
} fixture;

static void fixture_load(fixture *f, const char *json)
{
	fl_error err = {""};

	memset(f, 0, sizeof *f);
	f->ctx = isl_ctx_alloc();
	f->g = t_load(json);
	f->ref = fl_interp_run(f->g, NULL, &err);
	if (!f->ref)
		fail_msg("interp: %s", err.msg);
}

static void fixture_free(fixture *f)
{
	fl_run_result_free(&f->r);
	fl_program_free(f->p);
	fl_values_free(f->ref);
	fl_graph_free(f->g);
	isl_ctx_free(f->ctx);
}

/* Runs f->p with options o; fails the test on an internal error. */
static void run(fixture *f, const fl_run_opts *o)
{
	fl_error err = {""};

	if (fl_run_program(f->p, f->ref, o, &f->r, &err) < 0)
		fail_msg("run: %s", err.msg);
}

static void assert_verified(const fixture *f)
{
	if (f->r.status != FL_RUN_OK || !f->r.verified)
		fail_msg("status %s: %s", fl_run_status_name(f->r.status),
			 f->r.message);
	assert_int_equal(f->r.first_bad_kernel, -1);
	for (int k = 0; k < f->r.n_kernels; k++)
		assert_true(f->r.kernels[k].ok);
}

/* Loads json, builds the unfused program, runs it and expects a match. */
static void unfused_verifies(const char *json)
{
	fl_run_opts o = quick();
	fixture f;

	fixture_load(&f, json);
	f.p = t_unfused_program(f.ctx, f.g);
	run(&f, &o);
	assert_verified(&f);
	fixture_free(&f);
}

/* ---- every primitive op -------------------------------------------- */

#define OP1(name, op) "{\"name\":\"" name "\",\"op\":\"" op "\"," \
	"\"in\":[\"x\"],\"out\":\"" name "\"}"

static void test_unary_ops(void **state)
{
	(void)state;
	unfused_verifies(HEAD "\"x\":{\"shape\":[3,37],\"role\":\"input\"}},"
		"\"ops\":[" OP1("a", "neg") "," OP1("b", "abs") ","
		OP1("c", "exp") "," OP1("d", "log") "," OP1("e", "sqrt") ","
		OP1("f", "rsqrt") "," OP1("g", "recip") "," OP1("h", "tanh") ","
		OP1("i", "sigmoid") "," OP1("j", "relu") "," OP1("k", "erf") ","
		OP1("l", "square") "," OP1("m", "copy") "," OP1("n", "round") ","
		OP1("o", "cast") "]}");
}

#define OP2(name, op, a, b) "{\"name\":\"" name "\",\"op\":\"" op "\"," \
	"\"in\":[\"" a "\",\"" b "\"],\"out\":\"" name "\"}"

static void test_binary_ops(void **state)
{
	(void)state;
	unfused_verifies(HEAD "\"x\":{\"shape\":[4,9],\"role\":\"input\"},"
		"\"y\":{\"shape\":[9],\"role\":\"input\"},"
		"\"z\":{\"shape\":[4,1],\"role\":\"param\"},"
		"\"s\":{\"shape\":[],\"role\":\"const\",\"value\":2.5}},"
		"\"ops\":[" OP2("a", "add", "x", "y") "," OP2("b", "sub", "z", "x")
		"," OP2("c", "mul", "x", "x") "," OP2("d", "div", "x", "z") ","
		OP2("e", "max", "y", "z") "," OP2("f", "min", "x", "s") ","
		OP2("g", "pow", "z", "s") ","
		"{\"name\":\"w\",\"op\":\"where\",\"in\":[\"a\",\"x\",\"z\"],"
		"\"out\":\"w\"}]}");
}

static void test_reductions(void **state)
{
	(void)state;
	unfused_verifies(HEAD "\"x\":{\"shape\":[3,5,7],\"role\":\"input\"}},"
		"\"ops\":["
		"{\"name\":\"a\",\"op\":\"reduce_sum\",\"in\":[\"x\"],\"out\":\"a\","
		"\"attrs\":{\"axes\":[2]}},"
		"{\"name\":\"b\",\"op\":\"reduce_max\",\"in\":[\"x\"],\"out\":\"b\","
		"\"attrs\":{\"axes\":[0]}},"
		"{\"name\":\"c\",\"op\":\"reduce_min\",\"in\":[\"x\"],\"out\":\"c\","
		"\"attrs\":{\"axes\":[0,2]}},"
		"{\"name\":\"d\",\"op\":\"reduce_sum\",\"in\":[\"x\"],\"out\":\"d\"}]}");
}

static void test_matmul_conv_pool(void **state)
{
	(void)state;
	unfused_verifies(HEAD "\"a\":{\"shape\":[2,5,7],\"role\":\"input\"},"
		"\"b\":{\"shape\":[7,3],\"role\":\"param\"},"
		"\"bt\":{\"shape\":[2,3,7],\"role\":\"param\"},"
		"\"x\":{\"shape\":[1,4,11,10],\"role\":\"input\"},"
		"\"w\":{\"shape\":[6,2,3,2],\"role\":\"param\"}},"
		"\"ops\":["
		"{\"name\":\"m1\",\"op\":\"matmul\",\"in\":[\"a\",\"b\"],\"out\":\"m1\"},"
		"{\"name\":\"m2\",\"op\":\"matmul\",\"in\":[\"a\",\"bt\"],\"out\":\"m2\","
		"\"attrs\":{\"transpose_b\":true}},"
		"{\"name\":\"m3\",\"op\":\"matmul\",\"in\":[\"a\",\"a\"],\"out\":\"m3\","
		"\"attrs\":{\"transpose_a\":true}},"
		"{\"name\":\"cv\",\"op\":\"conv2d\",\"in\":[\"x\",\"w\"],\"out\":\"cv\","
		"\"attrs\":{\"stride\":[2,1],\"dilation\":[1,2],\"groups\":2}},"
		"{\"name\":\"pm\",\"op\":\"pool2d\",\"in\":[\"x\"],\"out\":\"pm\","
		"\"attrs\":{\"kernel\":[3,2],\"stride\":[2,2]}},"
		"{\"name\":\"pa\",\"op\":\"pool2d\",\"in\":[\"x\"],\"out\":\"pa\","
		"\"attrs\":{\"mode\":\"avg\",\"kernel\":[2,3],\"stride\":[1,3]}}]}");
}

static void test_data_movement(void **state)
{
	(void)state;
	unfused_verifies(HEAD "\"x\":{\"shape\":[2,3,4],\"role\":\"input\"},"
		"\"y\":{\"shape\":[2,5,4],\"role\":\"input\"},"
		"\"i\":{\"shape\":[2,3],\"role\":\"input\"},"
		"\"v\":{\"shape\":[4],\"role\":\"input\"}},"
		"\"ops\":["
		"{\"name\":\"t\",\"op\":\"transpose\",\"in\":[\"x\"],\"out\":\"t\","
		"\"attrs\":{\"perm\":[2,0,1]}},"
		"{\"name\":\"r\",\"op\":\"reshape\",\"in\":[\"x\"],\"out\":\"r\","
		"\"attrs\":{\"shape\":[4,-1]}},"
		"{\"name\":\"s\",\"op\":\"slice\",\"in\":[\"y\"],\"out\":\"s\","
		"\"attrs\":{\"starts\":[0,-4,1],\"ends\":[2,5,4],\"steps\":[1,2,2]}},"
		"{\"name\":\"c\",\"op\":\"concat\",\"in\":[\"x\",\"y\",\"x\"],"
		"\"out\":\"c\",\"attrs\":{\"axis\":1}},"
		"{\"name\":\"p\",\"op\":\"pad\",\"in\":[\"x\"],\"out\":\"p\","
		"\"attrs\":{\"pads\":[0,1,2,1,0,3],\"value\":-1.5}},"
		"{\"name\":\"g\",\"op\":\"gather\",\"in\":[\"y\",\"i\"],\"out\":\"g\","
		"\"attrs\":{\"axis\":1}},"
		"{\"name\":\"b\",\"op\":\"broadcast_to\",\"in\":[\"v\"],\"out\":\"b\","
		"\"attrs\":{\"shape\":[3,2,4]}},"
		"{\"name\":\"k\",\"op\":\"custom\",\"in\":[\"y\"],\"out\":\"k\"},"
		"{\"name\":\"q\",\"op\":\"custom\",\"in\":[\"x\"],\"out\":\"q\","
		"\"attrs\":{\"fn\":\"copy\"}}]}");
}

/* A rank-0 chain: scalars index as T[0]. */
static void test_scalars(void **state)
{
	(void)state;
	unfused_verifies(HEAD "\"x\":{\"shape\":[],\"role\":\"input\"},"
		"\"v\":{\"shape\":[5],\"role\":\"input\"}},"
		"\"ops\":[" OP1("a", "exp") "," OP2("b", "mul", "a", "v") ","
		"{\"name\":\"c\",\"op\":\"reduce_sum\",\"in\":[\"b\"],\"out\":\"c\"}]}");
}

/* ---- the op table's C templates -------------------------------------- */

/* Appends the op of kind k, named o<k>, to the "ops" list of json (n
 * bytes): its inputs are the first min_in of x, y, z; reductions reduce
 * axis 1. */
/* The logic ops take bool operands and the shifts unsigned integers
 * (docs/types.md); every other elementwise or reduction primitive
 * computes on f32. */
static bool takes_bool(const fl_op_info *info)
{
	static const char *const logic[] = {"and", "or", "xor", "not"};

	for (size_t k = 0; k < sizeof logic / sizeof *logic; k++)
		if (!strcmp(info->name, logic[k]))
			return true;
	return false;
}

static bool takes_unsigned(const fl_op_info *info)
{
	return info->kind == FL_OP_SHIFT_LEFT || info->kind == FL_OP_SHIFT_RIGHT;
}

static void append_table_op(char *json, size_t n, const fl_op_info *info)
{
	static const char *const in[] = {"[\"x\"]", "[\"x\",\"y\"]",
					 "[\"x\",\"y\",\"z\"]"};
	static const char *const in_bool[] = {"[\"p\"]", "[\"p\",\"q\"]"};
	static const char *const in_u32[] = {"[\"u\"]", "[\"u\",\"v\"]"};
	size_t len = strlen(json);

	assert_true(info->min_in >= 1 && info->min_in <= 3);
	snprintf(json + len, n - len, "%s{\"name\":\"o%d\",\"op\":\"%s\","
		 "\"in\":%s,\"out\":\"o%d\"%s}",
		 json[len - 1] == '[' ? "" : ",", (int)info->kind, info->name,
		 takes_bool(info) ? in_bool[info->min_in - 1]
		 : takes_unsigned(info) ? in_u32[info->min_in - 1]
		 : in[info->min_in - 1], (int)info->kind,
		 info->cls == FL_CLASS_REDUCE ? ",\"attrs\":{\"axes\":[1]}" : "");
}

/* Every elementwise and reduction primitive of the op table has the C
 * templates its statements need, and a graph with one op of each such
 * kind -- taken from the table, so an op added later is in it -- makes
 * one kernel per op that matches the interpreter: a wrong template fails
 * its own kernel. */
static void test_table_templates_verify(void **state)
{
	char json[8192] = HEAD "\"x\":{\"shape\":[4,9],\"role\":\"input\"},"
		"\"y\":{\"shape\":[9],\"role\":\"input\"},"
		"\"z\":{\"shape\":[4,1],\"role\":\"param\"},"
		"\"p\":{\"shape\":[4,9],\"dtype\":\"bool\",\"role\":\"input\"},"
		"\"q\":{\"shape\":[9],\"dtype\":\"bool\",\"role\":\"input\"},"
		"\"u\":{\"shape\":[4,9],\"dtype\":\"u32\",\"role\":\"input\"},"
		"\"v\":{\"shape\":[9],\"dtype\":\"u32\",\"role\":\"input\"}},"
		"\"ops\":[";
	int n_ops = 0;

	(void)state;
	for (int k = 0; k < FL_OP_COUNT; k++) {
		const fl_op_info *info = fl_op_info_of((fl_op_kind)k);

		if (info->cls == FL_CLASS_UNARY || info->cls == FL_CLASS_BINARY) {
			if (!info->c.compute)
				fail_msg("%s: no C expression", info->name);
		} else if (info->cls == FL_CLASS_REDUCE) {
			if (!info->c.init || !info->c.update)
				fail_msg("%s: no C identity or update",
					 info->name);
		} else {
			continue;
		}
		append_table_op(json, sizeof json, info);
		n_ops++;
	}
	assert_true(strlen(json) + 3 < sizeof json);
	strcat(json, "]}");
	assert_true(n_ops >= 26);	/* 15 unary, 8 binary, 3 reductions */
	unfused_verifies(json);
}

/* ---- tiled and fused programs ---------------------------------------- */

/* exp feeding a 3x3 conv: MICRO 2020 Fig. 1 in small. */
static const char *conv_prologue = HEAD
	"\"x\":{\"shape\":[1,3,10,10],\"role\":\"input\"},"
	"\"w\":{\"shape\":[4,3,3,3],\"role\":\"param\"},"
	"\"y\":{\"shape\":[1,4,8,8],\"role\":\"output\"}},\"ops\":["
	"{\"name\":\"q\",\"op\":\"exp\",\"in\":[\"x\"],\"out\":\"a\"},"
	"{\"name\":\"cv\",\"op\":\"conv2d\",\"in\":[\"a\",\"w\"],\"out\":\"y\"}]}";

static int count(const char *s, const char *what)
{
	int n = 0;

	for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
		n++;
	return n;
}

/* Generates, checks the source's shape, runs and expects a match;
 * returns the source. */
static char *fused_source(const char *json, int64_t tile, fl_placement place)
{
	fl_run_opts o = quick();
	fl_error err = {""};
	fixture f;
	char *src;
	char loc[32];
	const char *copy;

	bool local = place != FL_PLACE_GLOBAL;

	fixture_load(&f, json);
	f.p = t_fused_program(f.ctx, f.g, tile, place);
	src = fl_codegen_c(f.p, &err);
	if (!src)
		fail_msg("codegen: %s", err.msg);
	snprintf(loc, sizeof loc, "T%d_loc", f.g->ops[0].out[0]);
	if (local != (strstr(src, loc) != NULL))
		fail_msg("tile %lld: %s expected %s:\n%s", (long long)tile, loc,
			 local ? "present" : "absent", src);
	/* exactly one parallel loop (or team, around a loop whose tiles use
	 * scratch), and the recomputation is never it; the runner's copy
	 * probe at the end of the unit has a loop of its own */
	copy = strstr(src, "int fl_copy_pass(");
	if (!copy || count(src, "#pragma omp parallel") != 2 ||
	    count(copy, "#pragma omp parallel") != 1)
		fail_msg("tile %lld: expected one pragma:\n%s", (long long)tile,
			 src);
	run(&f, &o);
	assert_verified(&f);
	fixture_free(&f);
	return src;
}

static void fused_verifies(const char *json, int64_t tile, fl_placement place)
{
	free(fused_source(json, tile, place));
}

static void test_fused_conv_tiles(void **state)
{
	(void)state;
	fused_verifies(conv_prologue, 4, FL_PLACE_TILE_LOCAL);	/* 2x2 tiles */
	fused_verifies(conv_prologue, 3, FL_PLACE_TILE_LOCAL);	/* partial */
	fused_verifies(conv_prologue, 3, FL_PLACE_GLOBAL);	/* recompute */
	fused_verifies(conv_prologue, 4, FL_PLACE_REGISTER);	/* own box */
}

/* A 16x34x34 box is over 64 KiB: it is malloc'd per tile, and freed. */
static void test_fused_heap_buffer(void **state)
{
	char *src;

	(void)state;
	src = fused_source(HEAD "\"x\":{\"shape\":[1,16,40,40],\"role\":\"input\"},"
		"\"w\":{\"shape\":[2,16,3,3],\"role\":\"param\"},"
		"\"y\":{\"shape\":[1,2,38,38],\"role\":\"output\"}},\"ops\":["
		OP1("a", "tanh") ","
		"{\"name\":\"cv\",\"op\":\"conv2d\",\"in\":[\"a\",\"w\"],"
		"\"out\":\"y\"}]}", 32, FL_PLACE_TILE_LOCAL);
	/* too big for a worker's stack: a view of the thread's scratch,
	 * allocated once per call, not a malloc per tile */
	if (!strstr(src, "float (*T3_loc)[16][34][34] = (float (*)[16][34][34])"
		    "(fl_tscratch + 0);") ||
	    !strstr(src, "free(fl_tscratch);") || strstr(src, "= malloc("))
		fail_msg("expected a buffer in the thread's scratch:\n%s", src);
	free(src);
}

/* relu feeding a 2x2 average pool over one plane. */
static const char *pool_prologue = HEAD
	"\"x\":{\"shape\":[1,1,12,12],\"role\":\"input\"},"
	"\"y\":{\"shape\":[1,1,6,6],\"role\":\"output\"}},\"ops\":["
	OP1("a", "relu") ","
	"{\"name\":\"p\",\"op\":\"pool2d\",\"in\":[\"a\"],\"out\":\"y\","
	"\"attrs\":{\"mode\":\"avg\",\"kernel\":[2,2]}}]}";

/* A single tile: every tile loop vanishes, so the buffer lives at
 * function scope and the pragma must land on the consumer's point loop,
 * after the recomputation, never on it. */
static void test_fused_single_tile(void **state)
{
	fl_run_opts o = quick();
	fl_error err = {""};
	fixture f;
	char *src, *pragma, *recompute, *decl;

	(void)state;
	fixture_load(&f, pool_prologue);
	f.p = t_fused_program(f.ctx, f.g, 16, FL_PLACE_TILE_LOCAL);
	src = fl_codegen_c(f.p, &err);
	assert_non_null(src);
	pragma = strstr(src, "#pragma omp parallel for");
	recompute = strstr(src, "S0_0_r0:");
	decl = strstr(src, "float T2_loc[1][1][12][12];");
	assert_non_null(pragma);
	assert_non_null(recompute);
	assert_non_null(decl);
	if (pragma < recompute || decl > recompute)
		fail_msg("pragma or buffer misplaced:\n%s", src);
	free(src);
	run(&f, &o);
	assert_verified(&f);
	fixture_free(&f);
}

static void test_fused_elementwise_and_pool(void **state)
{
	(void)state;
	fused_verifies(HEAD "\"x\":{\"shape\":[2,3,20,19],\"role\":\"input\"},"
		"\"y\":{\"shape\":[2,3,20,19],\"role\":\"output\"}},\"ops\":["
		OP1("a", "sigmoid") ","
		"{\"name\":\"r\",\"op\":\"tanh\",\"in\":[\"a\"],\"out\":\"y\"}]}",
		8, FL_PLACE_TILE_LOCAL);
	fused_verifies(pool_prologue, 4, FL_PLACE_TILE_LOCAL);	/* 8x8 boxes */
}

/* ---- reporting ---------------------------------------------------------- */

static const char *chain = HEAD
	"\"x\":{\"shape\":[4,6],\"role\":\"input\"},"
	"\"y\":{\"shape\":[4,6],\"role\":\"output\"}},\"ops\":["
	"{\"name\":\"e\",\"op\":\"exp\",\"in\":[\"x\"],\"out\":\"a\"},"
	"{\"name\":\"m\",\"op\":\"mul\",\"in\":[\"a\",\"x\"],\"out\":\"b\"},"
	"{\"name\":\"t\",\"op\":\"tanh\",\"in\":[\"b\"],\"out\":\"y\"}]}";

/* A wrong value in the reference of the intermediate b is blamed on the
 * kernel that writes b (its consumer, fed the wrong b, deviates too). */
static void test_mismatch_is_localised(void **state)
{
	fl_run_opts o = quick();
	fixture f;
	int b;

	(void)state;
	fixture_load(&f, chain);
	f.p = t_unfused_program(f.ctx, f.g);
	b = fl_graph_find_tensor(f.g, "b");
	f.ref->bufs[b].data[7] += 0.5f;
	run(&f, &o);
	assert_int_equal(f.r.status, FL_RUN_MISMATCH);
	assert_int_equal(f.r.first_bad_kernel, 1);
	assert_true(f.r.kernels[0].ok);
	assert_false(f.r.kernels[1].ok);
	assert_false(f.r.verified);
	if (!strstr(f.r.message, "kernel fl_k1 (ops: m) deviates first") ||
	    !strstr(f.r.message, "[1][1]"))
		fail_msg("message: %s", f.r.message);
	fixture_free(&f);
}

static void test_output_mismatch_not_verified(void **state)
{
	fl_run_opts o = quick();
	fixture f;
	int y;

	(void)state;
	fixture_load(&f, chain);
	f.p = t_unfused_program(f.ctx, f.g);
	y = fl_graph_find_tensor(f.g, "y");
	f.ref->bufs[y].data[0] = 7.0f;
	run(&f, &o);
	assert_int_equal(f.r.status, FL_RUN_MISMATCH);
	assert_int_equal(f.r.first_bad_kernel, 2);
	assert_false(f.r.verified);
	assert_true(f.r.max_abs > 6.0);
	fixture_free(&f);
}

/* Kernels in the wrong order each reproduce the reference when fed its
 * values, but the run from the inputs reads unwritten (NaN) data. */
static void test_wrong_order_is_caught(void **state)
{
	fl_run_opts o = quick();
	fixture f;
	fl_kernel tmp;

	(void)state;
	fixture_load(&f, chain);
	f.p = t_unfused_program(f.ctx, f.g);
	tmp = f.p->kernels[0];
	f.p->kernels[0] = f.p->kernels[1];
	f.p->kernels[1] = tmp;
	run(&f, &o);
	assert_int_equal(f.r.first_bad_kernel, -1);
	assert_int_equal(f.r.status, FL_RUN_MISMATCH);
	assert_false(f.r.verified);
	if (!strstr(f.r.message, "reads a tensor before it is written"))
		fail_msg("message: %s", f.r.message);
	fixture_free(&f);
}

/* A scratch directory with a fake compiler script `body` in it; returns
 * the script's path (static buffer). */
static const char *fake_cc(char *dir, size_t n, const char *body)
{
	static char path[600];
	FILE *fp;

	snprintf(dir, n, "%s/fuselab-test-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/cc.sh", dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(body, fp);
	fclose(fp);
	chmod(path, 0700);
	return path;
}

static void remove_dir(const char *dir)
{
	char cmd[1024];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(t_run(cmd, NULL), 0);
}

/* A compiler script that ignores gen.c and builds `kernel_c` (the body of
 * a kernel function) into the output .so instead. */
#define FAKE_KERNEL_CC(kernel_c)                                             \
	"#!/bin/sh\nout=\nwhile [ $# -gt 0 ]; do\n"                          \
	"  if [ \"$1\" = -o ]; then out=$2; fi; shift\ndone\n"               \
	"cat > \"$out.c\" <<'EOF'\n"                                         \
	"const int fl_n_kernels = 3;\n"                                      \
	"static void k(float *const *b) { " kernel_c " }\n"                  \
	"void (*const fl_kernels[3])(float *const *) = {k, k, k};\n"         \
	"EOF\ncc -shared -fPIC -o \"$out\" \"$out.c\"; rc=$?\n"               \
	"rm -f \"$out.c\"; exit $rc\n"

/* Runs the chain with compiler script `body` and returns the status. */
static fl_run_status run_with_cc(const char *body, int timeout_s,
				 char *msg, size_t n)
{
	fl_run_opts o = quick();
	char dir[600];
	fl_run_status st;
	fixture f;

	fixture_load(&f, chain);
	f.p = t_unfused_program(f.ctx, f.g);
	o.cc = fake_cc(dir, sizeof dir, body);
	o.timeout_s = timeout_s;
	run(&f, &o);
	st = f.r.status;
	snprintf(msg, n, "%s", f.r.message);
	fixture_free(&f);
	remove_dir(dir);
	return st;
}

static void test_timeout(void **state)
{
	char msg[2048];

	(void)state;
	assert_int_equal(run_with_cc(FAKE_KERNEL_CC(
		"(void)b; for (volatile int i = 0; i >= 0; i = 0) {}"), 1, msg,
		sizeof msg), FL_RUN_TIMEOUT);
	if (!strstr(msg, "within 1 s in kernel fl_k0 (ops: e)"))
		fail_msg("message: %s", msg);
}

/* The limit bounds each kernel call, not the whole run: nine calls of
 * 0.4 s each pass under a limit of 1 s (they compute nothing, so the
 * run is a mismatch, not a timeout). */
static void test_timeout_is_per_call(void **state)
{
	char msg[2048];

	(void)state;
	assert_int_equal(run_with_cc(FAKE_KERNEL_CC(
		"(void)b; extern int usleep(unsigned); usleep(400000);"), 1, msg,
		sizeof msg), FL_RUN_MISMATCH);
}

static void test_crash(void **state)
{
	char msg[2048];

	(void)state;
	assert_int_equal(run_with_cc(FAKE_KERNEL_CC(
		"(void)b; *(volatile int *)0 = 1;"), 20, msg, sizeof msg),
		FL_RUN_CRASH);
	if (!strstr(msg, "SIGSEGV") || !strstr(msg, "fl_k0"))
		fail_msg("message: %s", msg);
}

static void test_load_error(void **state)
{
	char msg[2048];

	(void)state;
	assert_int_equal(run_with_cc("#!/bin/sh\nout=\nwhile [ $# -gt 0 ]; do\n"
		"  if [ \"$1\" = -o ]; then out=$2; fi; shift\ndone\n"
		"echo 'int unrelated;' > \"$out.c\"\n"
		"cc -shared -fPIC -o \"$out\" \"$out.c\"; rc=$?\n"
		"rm -f \"$out.c\"; exit $rc\n", 20, msg,
		sizeof msg), FL_RUN_LOAD_ERROR);
	if (!strstr(msg, "fl_n_kernels"))
		fail_msg("message: %s", msg);
}

static void test_compile_error(void **state)
{
	char msg[2048];

	(void)state;
	assert_int_equal(run_with_cc("#!/bin/sh\necho 'some note'\n"
		"echo 'gen.c:3: error: boom' >&2\nexit 1\n", 20, msg, sizeof msg),
		FL_RUN_COMPILE_ERROR);
	if (!strstr(msg, "gen.c:3: error: boom") || strstr(msg, "some note"))
		fail_msg("message: %s", msg);
}

static void test_no_compiler(void **state)
{
	fl_run_opts o = quick();
	fixture f;

	(void)state;
	fixture_load(&f, chain);
	f.p = t_unfused_program(f.ctx, f.g);
	o.cc = "/nonexistent/cc";
	run(&f, &o);
	assert_int_equal(f.r.status, FL_RUN_NO_COMPILER);
	if (!strstr(f.r.message, "/nonexistent/cc"))
		fail_msg("message: %s", f.r.message);
	fixture_free(&f);
}

/* The given work directory is used, kept on request and removed
 * otherwise; timings are filled in. */
static void test_workdir_and_timing(void **state)
{
	fl_run_opts o = quick();
	char dir[600], wd[700], gen[800];
	fixture f;

	(void)state;
	fake_cc(dir, sizeof dir, "");
	snprintf(wd, sizeof wd, "%s/work", dir);
	fixture_load(&f, chain);
	f.p = t_unfused_program(f.ctx, f.g);
	o.workdir = wd;
	o.keep = true;
	o.repeat = 3;
	run(&f, &o);
	assert_verified(&f);
	/* a fresh directory inside the one given */
	assert_int_equal(strncmp(f.r.workdir, wd, strlen(wd)), 0);
	assert_non_null(strstr(f.r.workdir + strlen(wd), "/fuselab-"));
	snprintf(gen, sizeof gen, "%s/gen.c", f.r.workdir);
	assert_int_equal(access(gen, R_OK), 0);
	assert_true(f.r.total_seconds > 0);
	assert_int_equal(f.r.kernels[1].bytes, 3 * 24 * 4);
	assert_true(f.r.kernels[1].gbps > 0);
	fl_run_result_free(&f.r);
	remove_dir(wd);
	o.keep = false;
	run(&f, &o);
	assert_verified(&f);
	assert_int_equal(access(wd, F_OK), -1);
	fixture_free(&f);
	remove_dir(dir);
}

/* ---- the source itself ------------------------------------------------ */

/* The source with every comment blanked out. */
static char *strip_comments(const char *s)
{
	char *out = strdup(s), *o = out;

	assert_non_null(out);
	while (*s) {
		if (s[0] == '/' && s[1] == '*') {
			const char *end = strstr(s + 2, "*/");

			assert_non_null(end);
			s = end + 2;
			*o++ = ' ';
			continue;
		}
		*o++ = *s++;
	}
	*o = '\0';
	return out;
}

static void test_malicious_names(void **state)
{
	fl_run_opts o = quick();
	fl_error err = {""};
	fixture f;
	char *src, *code;

	(void)state;
	fixture_load(&f, HEAD "\"x\":{\"shape\":[4],\"role\":\"input\"},"
		"\"*/ int evil; /*\":{\"shape\":[4],\"role\":\"output\"}},\"ops\":["
		"{\"name\":\"*/ system(\\\"x\\\"); /*\",\"op\":\"exp\","
		"\"in\":[\"x\"],\"out\":\"*/ int evil; /*\"}]}");
	f.p = t_unfused_program(f.ctx, f.g);
	src = fl_codegen_c(f.p, &err);
	assert_non_null(src);
	code = strip_comments(src);
	if (strstr(code, "system") || strstr(code, "evil"))
		fail_msg("a user name leaked into the code:\n%s", src);
	assert_non_null(strstr(src, "*_ system(\"x\"); /_"));
	free(code);
	free(src);
	run(&f, &o);
	assert_verified(&f);
	fixture_free(&f);
}

static void test_sanitize_comment(void **state)
{
	char buf[64];

	(void)state;
	fl_sanitize_comment("a*/b/*c\\d\n?" "?/e", buf, sizeof buf);
	assert_string_equal(buf, "a*_b/_c_d_?_/e");
	fl_sanitize_comment("abcdef", buf, 4);
	assert_string_equal(buf, "abc");
}

/* Compiles src as an object with every warning an error. */
static void compiles_cleanly(const char *src)
{
	char dir[600], path[700], cmd[1600], *out = NULL;
	FILE *fp;

	fake_cc(dir, sizeof dir, "");
	snprintf(path, sizeof path, "%s/gen.c", dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(src, fp);
	fclose(fp);
	snprintf(cmd, sizeof cmd, "cc -O3 -march=native -fopenmp -Wall -Wextra "
		 "-Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -c "
		 "-o '%s/gen.o' '%s'", dir, path);
	if (t_run(cmd, &out) != 0)
		fail_msg("%s\n%s", out, src);
	free(out);
	remove_dir(dir);
}

static void test_source_is_warning_free(void **state)
{
	fl_error err = {""};
	fixture f;
	char *src;

	(void)state;
	fixture_load(&f, HEAD "\"x\":{\"shape\":[2,3,4],\"role\":\"input\"},"
		"\"i\":{\"shape\":[2],\"role\":\"input\"},"
		"\"s\":{\"shape\":[],\"role\":\"input\"}},\"ops\":["
		OP1("a", "sigmoid") "," OP2("b", "max", "a", "s") ","
		"{\"name\":\"c\",\"op\":\"reduce_max\",\"in\":[\"b\"],\"out\":\"c\","
		"\"attrs\":{\"axes\":[1]}},"
		"{\"name\":\"g\",\"op\":\"gather\",\"in\":[\"x\",\"i\"],\"out\":\"g\","
		"\"attrs\":{\"axis\":2}},"
		"{\"name\":\"p\",\"op\":\"pad\",\"in\":[\"x\"],\"out\":\"p\","
		"\"attrs\":{\"pads\":[1,0,0,0,2,1]}},"
		"{\"name\":\"k\",\"op\":\"custom\",\"in\":[\"x\"],\"out\":\"k\"}]}");
	f.p = t_unfused_program(f.ctx, f.g);
	src = fl_codegen_c(f.p, &err);
	assert_non_null(src);
	/* the runner's copy probe goes into every C unit */
	t_assert_contains(src, "int fl_copy_pass(float *restrict dst");
	compiles_cleanly(src);
	free(src);
	fixture_free(&f);
	fixture_load(&f, conv_prologue);
	f.p = t_fused_program(f.ctx, f.g, 3, FL_PLACE_TILE_LOCAL);
	src = fl_codegen_c(f.p, &err);
	assert_non_null(src);
	compiles_cleanly(src);
	free(src);
	fixture_free(&f);
}

/* Vectorised code: NaN operands of min and max (log of a negative
 * input) still yield the other operand, elementwise loops carry
 * "#pragma omp simd", and a reduction's reduced loop only with a
 * reduction clause over its scalar accumulator. */
static void test_vector_code(void **state)
{
	fl_error err = {""};
	const char *upd, *loop, *pragma, *simd;
	fixture f;
	char *src;

	(void)state;
	unfused_verifies(HEAD "\"x\":{\"shape\":[5,67],\"role\":\"input\"}},"
		"\"ops\":[" OP1("l", "log") "," OP2("a", "max", "l", "x") ","
		OP2("b", "min", "l", "x") "," OP2("c", "max", "x", "l") ","
		OP2("d", "min", "x", "l") "," OP1("e", "tanh") ","
		OP1("g", "erf") "," OP2("p", "pow", "x", "x") ","
		"{\"name\":\"r\",\"op\":\"reduce_max\",\"in\":[\"l\"],"
		"\"out\":\"r\",\"attrs\":{\"axes\":[1]}}]}");
	fixture_load(&f, HEAD "\"x\":{\"shape\":[4,64],\"role\":\"input\"}},"
		"\"ops\":[" OP1("e", "exp") ","
		"{\"name\":\"s\",\"op\":\"reduce_sum\",\"in\":[\"e\"],"
		"\"out\":\"s\",\"attrs\":{\"axes\":[1]}}]}");
	f.p = t_unfused_program(f.ctx, f.g);
	src = fl_codegen_c(f.p, &err);
	assert_non_null(src);
	if (!strstr(src, "#pragma omp simd") &&
	    !strstr(src, "#pragma omp parallel for simd"))
		fail_msg("no simd loop:\n%s", src);
	upd = strstr(src, "reduce_sum update");
	assert_non_null(upd);
	for (loop = upd; loop > src && strncmp(loop, "for (", 5); loop--)
		;
	/* the line above the reduced loop */
	for (pragma = loop; pragma > src && pragma[-1] != '\n'; pragma--)
		;
	if (pragma > src)
		for (pragma--; pragma > src && pragma[-1] != '\n'; pragma--)
			;
	simd = strstr(pragma, "simd");
	if (strncmp(pragma + strspn(pragma, " "), "#pragma omp", 11) == 0 &&
	    simd && simd < loop &&
	    strncmp(simd, "simd reduction(+:fl_acc0)", 25) != 0)
		fail_msg("reduced loop vectorised:\n%s", src);
	compiles_cleanly(src);
	free(src);
	fixture_free(&f);
}

static void test_emit_program(void **state)
{
	fl_error err = {""};
	char dir[600], path[700];
	fixture f;
	FILE *fp;
	char line[256];

	(void)state;
	fixture_load(&f, chain);
	f.p = t_unfused_program(f.ctx, f.g);
	fake_cc(dir, sizeof dir, "");
	snprintf(path, sizeof path, "%s/out.c", dir);
	assert_int_equal(fl_emit_program(f.p, path, &err), 0);
	fp = fopen(path, "r");
	assert_non_null(fp);
	assert_non_null(fgets(line, sizeof line, fp));
	assert_non_null(strstr(line, "Generated by fuselab"));
	fclose(fp);
	snprintf(path, sizeof path, "%s/no/such/dir/out.c", dir);
	assert_int_equal(fl_emit_program(f.p, path, &err), -1);
	fixture_free(&f);
	remove_dir(dir);
}

/* ---- programs from the engine ---------------------------------------- */

/* Layer 1's program for graph g (taken) verifies; skipped while layer 1
 * makes no kernels. */
static void engine_program_verifies(fl_graph *g)
{
	fl_engine_opts eo;
	fl_error err = {""};
	fl_run_opts o = quick();
	fl_session *s;
	fl_values *ref;
	const fl_program *p;
	fl_run_result r;

	fl_engine_opts_default(&eo);
	eo.stop_after = FL_PASS_LAYER1;
	s = fl_engine_open(g, &eo, &err);
	if (!s || fl_engine_run(s, &err) < 0)
		fail_msg("engine: %s", err.msg);
	p = fl_engine_program(s);
	if (!p || p->n_kernels == 0)
		fail_msg("%s: layer 1 made no program", g->name);
	ref = fl_interp_run(fl_engine_graph(s), NULL, &err);
	assert_non_null(ref);
	if (fl_run_program(p, ref, &o, &r, &err) < 0)
		fail_msg("run: %s", err.msg);
	if (r.status != FL_RUN_OK || !r.verified)
		fail_msg("%s: %s: %s", g->name, fl_run_status_name(r.status),
			 r.message);
	fl_run_result_free(&r);
	fl_values_free(ref);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* The source of strategy st for graph json (taken through the engine;
 * up to layer 1 for apollo-l1, else up to codegen), checked to verify;
 * the caller frees it. */
static char *source_verified(const char *json, fl_strategy st)
{
	fl_engine_opts eo;
	fl_error err = {""};
	fl_run_opts o = quick();
	fl_session *s;
	fl_values *ref;
	const fl_program *p;
	fl_run_result r;
	fl_graph *g = t_load(json);
	char *src;

	fl_engine_opts_default(&eo);
	eo.strategy = st;
	eo.stop_after = st == FL_STRATEGY_APOLLO_L1 ? FL_PASS_LAYER1 :
			FL_PASS_CODEGEN;
	s = fl_engine_open(g, &eo, &err);
	if (!s || fl_engine_run(s, &err) < 0)
		fail_msg("engine: %s", err.msg);
	p = fl_engine_program(s);
	assert_non_null(p);
	src = fl_codegen_c(p, &err);
	if (!src)
		fail_msg("codegen: %s", err.msg);
	ref = fl_interp_run(fl_engine_graph(s), NULL, &err);
	assert_non_null(ref);
	if (fl_run_program(p, ref, &o, &r, &err) < 0)
		fail_msg("run: %s", err.msg);
	if (r.status != FL_RUN_OK || !r.verified)
		fail_msg("%s: %s", fl_run_status_name(r.status), r.message);
	fl_run_result_free(&r);
	fl_values_free(ref);
	fl_engine_close(s);
	fl_graph_free(g);
	return src;
}

/* Layer 1 fuses sub + square + reduce_sum into one kernel that sums
 * into a scalar accumulator under "omp simd reduction"; it verifies. */
static void test_fused_sum_accumulator(void **state)
{
	const char *open, *pragma, *loop, *upd, *store;
	char *src;

	(void)state;
	src = source_verified(HEAD "\"x\":{\"shape\":[64,300],\"role\":\"input\"},"
		"\"y\":{\"shape\":[64,300],\"role\":\"input\"},"
		"\"s\":{\"shape\":[64,1],\"role\":\"output\"}},\"ops\":["
		OP2("d", "sub", "x", "y") ","
		"{\"name\":\"q\",\"op\":\"square\",\"in\":[\"d\"],"
		"\"out\":\"q\"},"
		"{\"name\":\"s\",\"op\":\"reduce_sum\",\"in\":[\"q\"],"
		"\"out\":\"s\",\"attrs\":{\"axes\":[1]}}]}",
		FL_STRATEGY_APOLLO_L1);
	open = strstr(src, "float fl_acc0 = ");
	pragma = strstr(src, "#pragma omp simd reduction(+:fl_acc0)\n");
	upd = strstr(src, "fl_acc0 = fl_acc0 + ");
	loop = pragma ? strstr(pragma, "for (") : NULL;
	store = upd ? strstr(upd, "] = fl_acc0;") : NULL;
	if (!open || !pragma || !loop || !upd || !store || open > pragma ||
	    upd < loop || !strstr(src, "sub compute") ||
	    !strstr(src, "square compute") ||
	    !strstr(upd, "reduce_sum update"))
		fail_msg("no scalar accumulator:\n%s",
			 strstr(src, "void fl_k0") ? strstr(src, "void fl_k0") : src);
	compiles_cleanly(src);
	free(src);
}

/* Whether some line of src holds both what and also. */
static bool has_line_with(const char *src, const char *what,
			  const char *also)
{
	for (const char *at = strstr(src, what); at;
	     at = strstr(at + 1, what)) {
		const char *bol = at, *hit;

		while (bol > src && bol[-1] != '\n')
			bol--;
		hit = strstr(bol, also);
		if (hit && hit < at)
			return true;
	}
	return false;
}

/* What the kernels' facts buy, in a softmax written out in primitive
 * ops and tanh -> scale -> exp chains: the max is a one-instruction
 * select into its accumulator, exp of x - max(x) leaves out its
 * overflow side, exp of 20 tanh(..) every range select and exp of
 * 1.5 tanh(..) also the second step of its reduction, the row's divisor
 * becomes one reciprocal, min and max against a constant lose their NaN
 * test, the maths and relu compare with the bounds the kernel hid from
 * gcc -- while an exp of an input, a division by a divisor of its own
 * per element and a min of two inputs stay as they were; and all of it
 * verifies.  A kernel without such maths declares no bounds. */
static void test_bounded_maths_and_row_divisor(void **state)
{
	char *src;

	(void)state;
	src = source_verified(HEAD
		"\"x\":{\"shape\":[16,300],\"role\":\"input\"},"
		"\"y\":{\"shape\":[16,300],\"role\":\"input\"},"
		"\"k\":{\"shape\":[1],\"role\":\"const\",\"value\":1.5},"
		"\"k2\":{\"shape\":[1],\"role\":\"const\",\"value\":20},"
		"\"sm\":{\"shape\":[16,300],\"role\":\"output\"},"
		"\"ci\":{\"shape\":[16,300],\"role\":\"output\"},"
		"\"rl\":{\"shape\":[16,300],\"role\":\"output\"},"
		"\"ch\":{\"shape\":[16,300],\"role\":\"output\"},"
		"\"ex\":{\"shape\":[16,300],\"role\":\"output\"},"
		"\"q\":{\"shape\":[16,300],\"role\":\"output\"},"
		"\"mn\":{\"shape\":[16,300],\"role\":\"output\"},"
		"\"mx\":{\"shape\":[16,300],\"role\":\"output\"},"
		"\"mm\":{\"shape\":[16,300],\"role\":\"output\"}},\"ops\":["
		"{\"name\":\"m\",\"op\":\"reduce_max\",\"in\":[\"x\"],"
		"\"out\":\"m\",\"attrs\":{\"axes\":[1]}},"
		OP2("d", "sub", "x", "m") ","
		"{\"name\":\"e\",\"op\":\"exp\",\"in\":[\"d\"],\"out\":\"e\"},"
		"{\"name\":\"s\",\"op\":\"reduce_sum\",\"in\":[\"e\"],"
		"\"out\":\"s\",\"attrs\":{\"axes\":[1]}},"
		OP2("sm", "div", "e", "s") ","
		OP1("t", "tanh") "," OP2("u", "mul", "t", "k") ","
		"{\"name\":\"ch\",\"op\":\"exp\",\"in\":[\"u\"],\"out\":\"ch\"},"
		OP2("u2", "mul", "t", "k2") ","
		"{\"name\":\"ci\",\"op\":\"exp\",\"in\":[\"u2\"],\"out\":\"ci\"},"
		OP1("rl", "relu") ","
		OP1("ex", "exp") "," OP2("q", "div", "x", "y") ","
		OP2("mn", "min", "x", "k") "," OP2("mx", "max", "k", "y") ","
		OP2("mm", "min", "x", "y") "]}",
		FL_STRATEGY_APOLLO_L1);
	/* exp of x - max(x), of 1.5 tanh(x), of x; the bounds the
	 * runtime compares with hidden from gcc once per kernel */
	t_assert_contains(src, "= fl_expf_nonpos_b(");
	t_assert_contains(src, "= fl_expf_small(");
	t_assert_contains(src, "= fl_expf_b(T");
	t_assert_contains(src, "= fl_tanhf_b(T");
	t_assert_contains(src, "= fl_expf_in_range(");
	t_assert_contains(src, "  const fl_bounds fl_b = fl_bounds_hidden();\n");
	if (!has_line_with(src, "relu compute", " > fl_b.zero ? "))
		fail_msg("relu does not compare with the hidden zero");
	t_assert_contains(src, " * (1.0f / ");
	t_assert_contains(src, " > fl_acc0 ? ");
	assert_null(strstr(src, "fl_fmaxf(fl_acc"));
	if (!has_line_with(src, "div compute", "] / T"))
		fail_msg("the per-element division is not a division");
	/* min and max against the constant: one compare and select; two
	 * inputs either of which may be NaN: fl_fminf */
	if (!has_line_with(src, "min compute", "] < T2[0] ? ") ||
	    !has_line_with(src, "max compute", "] > T2[0] ? ") ||
	    !has_line_with(src, "min compute", "= fl_fminf(T"))
		fail_msg("min and max not as expected");
	free(src);
	src = source_verified(HEAD
		"\"x\":{\"shape\":[16,300],\"role\":\"input\"},"
		"\"y\":{\"shape\":[16,300],\"role\":\"input\"},"
		"\"q\":{\"shape\":[16,300],\"role\":\"output\"}},\"ops\":["
		OP2("q", "add", "x", "y") "]}", FL_STRATEGY_APOLLO_L1);
	assert_null(strstr(src, "= fl_bounds_hidden();"));
	free(src);
}

/* Whether what comes after the pragma at `at` before the next one. */
static bool before_next_pragma(const char *at, const char *what)
{
	const char *next = strstr(at + 1, "#pragma"), *hit = strstr(at, what);

	return hit && (!next || hit < next);
}

/* Layer 2's softmax kernel, its three phases (max; exp and sum;
 * division) one loop over the rows, each phase a row behind the one
 * before, in one vectorised loop over a row's elements with both
 * reductions in accumulators -- and it verifies. */
static void test_softmax_rows_pipelined(void **state)
{
	char *src;
	const char *steady;

	(void)state;
	src = source_verified(HEAD
		"\"x\":{\"shape\":[64,512],\"role\":\"input\"},"
		"\"y\":{\"shape\":[64,512],\"role\":\"output\"}},\"ops\":["
		"{\"name\":\"softmax\",\"op\":\"softmax\",\"in\":[\"x\"],"
		"\"out\":\"y\",\"attrs\":{\"axis\":-1}}]}",
		FL_STRATEGY_APOLLO);
	t_assert_contains(src, "rows pipelined: 3 phases");
	/* the steady state: the loop that also divides */
	steady = strstr(src, "#pragma omp simd reduction(max:fl_acc0) "
			"reduction(+:fl_acc1)\n");
	while (steady && !before_next_pragma(steady, "div compute"))
		steady = strstr(steady + 1, "#pragma omp simd reduction(max:"
				"fl_acc0) reduction(+:fl_acc1)\n");
	if (!steady || !before_next_pragma(steady, "reduce_max update") ||
	    !before_next_pragma(steady, "exp compute"))
		fail_msg("no loop with every phase:\n%s", strstr(src, "void fl_k0"));
	free(src);
}

static void test_layer1_micro2020(void **state)
{
	(void)state;
	engine_program_verifies(t_load_sample("micro2020_fig1"));
}

/* A tensor layer 1 placed tile-local that the backend cannot keep local
 * (here: its kernel lost the tile coordinates) is a demotion, reported
 * with the reason, and the code keeps it in global memory. */
static void test_demotion_reported(void **state)
{
	fl_graph *g = t_load_sample("micro2020_fig1");
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *s;
	fl_program *p;
	fl_codegen_demotion *d;
	int n, k = -1;
	char *src;

	(void)state;
	fl_engine_opts_default(&o);
	o.stop_after = FL_PASS_LAYER1;
	s = fl_engine_open(g, &o, &err);
	assert_non_null(s);
	assert_true(fl_engine_run(s, &err) >= 0);
	p = fl_program_copy(fl_engine_program(s), fl_engine_graph(s));
	assert_non_null(p);
	for (int i = 0; i < p->n_kernels && k < 0; i++)
		for (int t = 0; t < p->kernels[i].n_tensors; t++)
			if (p->kernels[i].tensors[t].place == FL_PLACE_TILE_LOCAL)
				k = i;
	assert_true(k >= 0);
	/* a budget that holds its 1.1 MiB of buffers per tile */
	src = fl_codegen_c_kernel_budget(p, k, 4 << 20, &d, &n, &err);
	assert_non_null(src);
	assert_int_equal(n, 0);	/* as layer 1 planned */
	free(src);
	isl_union_pw_multi_aff_free(p->kernels[k].inst2tile);
	p->kernels[k].inst2tile = NULL;
	src = fl_codegen_c_kernel_budget(p, k, 4 << 20, &d, &n, &err);
	assert_non_null(src);
	assert_true(n >= 1);	/* the tile-local one, registers alike */
	for (int i = 0; i < n; i++) {
		assert_int_not_equal(d[i].from, FL_PLACE_GLOBAL);
		assert_non_null(strstr(d[i].why, "without tile coordinates"));
	}
	assert_non_null(strstr(src, "global memory (tile-local placement in a "
				    "kernel without tile coordinates"));
	free(d);
	free(src);
	fl_program_free(p);
	fl_engine_close(s);
	fl_graph_free(g);
}

static void test_layer1_chain(void **state)
{
	(void)state;
	engine_program_verifies(t_load(HEAD
		"\"x\":{\"shape\":[64,200],\"role\":\"input\"},"
		"\"b\":{\"shape\":[200],\"role\":\"param\"},"
		"\"y\":{\"shape\":[64,200],\"role\":\"output\"}},\"ops\":["
		OP2("a", "add", "x", "b") "," OP1("e", "exp") ","
		"{\"name\":\"t\",\"op\":\"tanh\",\"in\":[\"a\"],\"out\":\"t\"},"
		"{\"name\":\"y\",\"op\":\"mul\",\"in\":[\"t\",\"e\"],"
		"\"out\":\"y\"}]}"));
}

FL_SUITE(codegen,
	 cmocka_unit_test(test_sanitize_comment),
	 cmocka_unit_test(test_unary_ops),
	 cmocka_unit_test(test_binary_ops),
	 cmocka_unit_test(test_reductions),
	 cmocka_unit_test(test_matmul_conv_pool),
	 cmocka_unit_test(test_data_movement),
	 cmocka_unit_test(test_scalars),
	 cmocka_unit_test(test_table_templates_verify),
	 cmocka_unit_test(test_fused_conv_tiles),
	 cmocka_unit_test(test_fused_heap_buffer),
	 cmocka_unit_test(test_fused_single_tile),
	 cmocka_unit_test(test_fused_elementwise_and_pool),
	 cmocka_unit_test(test_mismatch_is_localised),
	 cmocka_unit_test(test_output_mismatch_not_verified),
	 cmocka_unit_test(test_wrong_order_is_caught),
	 cmocka_unit_test(test_demotion_reported),
	 cmocka_unit_test(test_timeout),
	 cmocka_unit_test(test_timeout_is_per_call),
	 cmocka_unit_test(test_crash),
	 cmocka_unit_test(test_load_error),
	 cmocka_unit_test(test_compile_error),
	 cmocka_unit_test(test_no_compiler),
	 cmocka_unit_test(test_workdir_and_timing),
	 cmocka_unit_test(test_malicious_names),
	 cmocka_unit_test(test_source_is_warning_free),
	 cmocka_unit_test(test_vector_code),
	 cmocka_unit_test(test_fused_sum_accumulator),
	 cmocka_unit_test(test_bounded_maths_and_row_divisor),
	 cmocka_unit_test(test_softmax_rows_pipelined),
	 cmocka_unit_test(test_emit_program),
	 cmocka_unit_test(test_layer1_micro2020),
	 cmocka_unit_test(test_layer1_chain));
