/* Contractions as micro-kernels (engine/backend/contract.c and its
 * runtime): which kernels get one, that the runtime goes into a unit only
 * when called, and that the results verify against the interpreter for
 * shapes that exercise every edge of the blocking (sizes that are not
 * multiples of the register block, transposed operands, batches,
 * reductions longer than one block, 1x1 and strided convolutions), with
 * the vector micro-kernel and with the plain C one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen.h"
#include "engine.h"
#include "test_util.h"

/* The C of graph g (taken) under strategy s, as --emit writes it. */
static char *emit_graph(fl_graph *g, fl_strategy s)
{
	fl_engine_opts o;
	fl_session *ss;
	fl_error err = {0};
	char *c;

	fl_engine_opts_default(&o);
	o.strategy = s;
	o.stop_after = FL_PASS_LAYER1;
	ss = fl_engine_open(g, &o, &err);
	assert_non_null(ss);
	assert_true(fl_engine_run(ss, &err) >= 0);
	c = fl_codegen_c(fl_engine_program(ss), &err);
	if (!c)
		fail_msg("codegen: %s", err.msg);
	fl_engine_close(ss);
	fl_graph_free(g);
	return c;
}

static char *emit_c(const char *json, fl_strategy s)
{
	return emit_graph(t_load(json), s);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

#define MATMUL_GRAPH(M, K, N, EXTRA) \
	"{\"format\": \"fuselab-graph/1\", \"name\": \"mm\", \"tensors\": {" \
	"\"a\": {\"shape\": [" #M ", " #K "], \"dtype\": \"f32\", \"role\": \"input\"}," \
	"\"w\": {\"shape\": [" #K ", " #N "], \"dtype\": \"f32\", \"role\": \"param\"}," \
	"\"b\": {\"shape\": [" #N "], \"dtype\": \"f32\", \"role\": \"param\"}," \
	"\"y\": {\"shape\": [" #M ", " #N "], \"dtype\": \"f32\", \"role\": \"output\"}}," \
	"\"ops\": [{\"name\": \"mm\", \"op\": \"matmul\", \"in\": [\"a\", \"w\"], \"out\": \"h\"}," \
	"{\"name\": \"bias\", \"op\": \"add\", \"in\": [\"h\", \"b\"], \"out\": \"hb\"}," \
	"{\"name\": \"act\", \"op\": \"tanh\", \"in\": [\"hb\"], \"out\": \"y\"}" EXTRA "]}"

/* A matmul with its epilogue: the micro-kernel under every strategy, the
 * epilogue a loop over the finished tile; the runtime once per unit. */
static void test_contract_matmul_gets_micro_kernel(void **state)
{
	static const fl_strategy all[] = {FL_STRATEGY_UNFUSED, FL_STRATEGY_XLA,
					  FL_STRATEGY_APOLLO_L1};

	(void)state;
	for (int i = 0; i < 3; i++) {
		char *c = emit_c(MATMUL_GRAPH(40, 70, 50, ""), all[i]);

		assert_int_equal(count(c, "fl_contract_tile(fl_n"), 1);
		assert_int_equal(count(c, "static void fl_contract_tile("), 1);
		/* the reduction block follows the L1 fuselab read */
		t_assert_contains(c, "#define FL_L1D ");
		t_assert_contains(c, "register-blocked micro-kernel");
		t_assert_contains(c, "matmul: micro-kernel, rows");
		/* the update's loop nest is gone */
		assert_int_equal(count(c, "matmul update */"), 0);
		free(c);
	}
}

/* A unit without a contraction carries no runtime (nor its headers). */
static void test_contract_runtime_only_when_used(void **state)
{
	char *c;

	(void)state;
	c = emit_graph(t_load_sample("softmax"), FL_STRATEGY_APOLLO_L1);
	assert_null(strstr(c, "fl_contract_tile"));
	assert_null(strstr(c, "immintrin.h"));
	free(c);
}

/* Writes json to a fresh file in dir; the path into path. */
static void write_graph(const char *dir, const char *name, const char *json,
			char *path, size_t n)
{
	FILE *f;

	snprintf(path, n, "%s/%s.json", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(json, f);
	fclose(f);
}

/* Runs every strategy on json (verify only) with environment env before
 * the command ("" for none) and checks every strategy verified. */
static void verifies(const char *name, const char *json, const char *env)
{
	char dir[256], path[512], cmd[1400], *out = NULL;
	int rc;

	t_make_dir(dir, sizeof dir);
	write_graph(dir, name, json, path, sizeof path);
	/* the sanitizer pass: one strategy (the generated code is not
	 * sanitized; the plain pass verifies every strategy's) */
	snprintf(cmd, sizeof cmd, "%s %s --batch '%s' --run --strategy %s "
		 "--repeat 1 --warmup 0 --workdir '%s'", env, t_fuselab_bin(),
		 path, T_SANITIZED ? "apollo" : "all", dir);
	rc = t_run(cmd, &out);
	if (rc != 0 ||
	    count(out, "verified yes") != (T_SANITIZED ? 1 : FL_STRATEGY_COUNT))
		fail_msg("%s: rc %d\n%s", name, rc, out);
	free(out);
	t_remove_dir(dir);
}

/* Sizes that are not multiples of the 6 x 16 register block or of the
 * tiles, and a reduction longer than one 256-step block. */
static void test_contract_odd_sizes_verify(void **state)
{
	(void)state;
	verifies("odd", MATMUL_GRAPH(7, 19, 37, ""), "");
	verifies("long", MATMUL_GRAPH(13, 600, 33, ""), "");
}

/* Transposed operands, a batch with a broadcast operand, the whole
 * attention block. */
static void test_contract_transposed_and_batched_verify(void **state)
{
	(void)state;
	verifies("tb",
		"{\"format\": \"fuselab-graph/1\", \"name\": \"tb\", \"tensors\": {"
		"\"a\": {\"shape\": [9, 23], \"dtype\": \"f32\", \"role\": \"input\"},"
		"\"w\": {\"shape\": [31, 23], \"dtype\": \"f32\", \"role\": \"param\"},"
		"\"y\": {\"shape\": [9, 31], \"dtype\": \"f32\", \"role\": \"output\"}},"
		"\"ops\": [{\"name\": \"mm\", \"op\": \"matmul\", \"in\": [\"a\", \"w\"],"
		" \"out\": \"y\", \"attrs\": {\"transpose_b\": true}}]}", "");
	verifies("ta",
		"{\"format\": \"fuselab-graph/1\", \"name\": \"ta\", \"tensors\": {"
		"\"a\": {\"shape\": [23, 9], \"dtype\": \"f32\", \"role\": \"input\"},"
		"\"w\": {\"shape\": [23, 31], \"dtype\": \"f32\", \"role\": \"param\"},"
		"\"y\": {\"shape\": [9, 31], \"dtype\": \"f32\", \"role\": \"output\"}},"
		"\"ops\": [{\"name\": \"mm\", \"op\": \"matmul\", \"in\": [\"a\", \"w\"],"
		" \"out\": \"y\", \"attrs\": {\"transpose_a\": true}}]}", "");
	verifies("bmm",
		"{\"format\": \"fuselab-graph/1\", \"name\": \"bmm\", \"tensors\": {"
		"\"a\": {\"shape\": [3, 10, 17], \"dtype\": \"f32\", \"role\": \"input\"},"
		"\"w\": {\"shape\": [17, 21], \"dtype\": \"f32\", \"role\": \"param\"},"
		"\"y\": {\"shape\": [3, 10, 21], \"dtype\": \"f32\", \"role\": \"output\"}},"
		"\"ops\": [{\"name\": \"mm\", \"op\": \"matmul\", \"in\": [\"a\", \"w\"],"
		" \"out\": \"y\"}]}", "");
}

#define CONV_GRAPH(C, H, K, R, S, EXTRA_ATTRS, OH) \
	"{\"format\": \"fuselab-graph/1\", \"name\": \"conv\", \"tensors\": {" \
	"\"x\": {\"shape\": [1, " #C ", " #H ", " #H "], \"dtype\": \"f32\", \"role\": \"input\"}," \
	"\"w\": {\"shape\": [" #K ", " #C ", " #R ", " #S "], \"dtype\": \"f32\", \"role\": \"param\"}," \
	"\"y\": {\"shape\": [1, " #K ", " #OH ", " #OH "], \"dtype\": \"f32\", \"role\": \"output\"}}," \
	"\"ops\": [{\"name\": \"conv\", \"op\": \"conv2d\", \"in\": [\"x\", \"w\"], \"out\": \"c\"" \
	EXTRA_ATTRS "}, {\"name\": \"act\", \"op\": \"relu\", \"in\": [\"c\"], \"out\": \"y\"}]}"

/* MICRO 2020 Fig. 1 at a small size: quantize, 3x3 conv, relu. */
#define MICRO_FIG1_SMALL \
	"{\"format\": \"fuselab-graph/1\", \"name\": \"fig1\", \"tensors\": {" \
	"\"A\": {\"shape\": [1, 8, 20, 20], \"dtype\": \"f32\", \"role\": \"input\"}," \
	"\"B\": {\"shape\": [8, 8, 3, 3], \"dtype\": \"f32\", \"role\": \"param\"}," \
	"\"C\": {\"shape\": [1, 8, 18, 18], \"dtype\": \"f32\", \"role\": \"output\"}}," \
	"\"ops\": [{\"name\": \"q\", \"op\": \"quantize\", \"in\": [\"A\"], \"out\": \"Aq\"," \
	" \"attrs\": {\"scale\": 0.0078125}}," \
	"{\"name\": \"conv\", \"op\": \"conv2d\", \"in\": [\"Aq\", \"B\"], \"out\": \"c\"}," \
	"{\"name\": \"act\", \"op\": \"relu\", \"in\": [\"c\"], \"out\": \"C\"}]}"

static void test_contract_conv_verify(void **state)
{
	char *c;

	(void)state;
	c = emit_c(CONV_GRAPH(19, 9, 13, 1, 1, "", 9), FL_STRATEGY_APOLLO_L1);
	assert_int_equal(count(c, "fl_contract_tile(fl_n"), 1);
	free(c);
	verifies("conv1x1", CONV_GRAPH(19, 9, 13, 1, 1, "", 9), "");
	/* output rows run inside the runtime, the weights packed once for
	   all of them */
	c = emit_c(CONV_GRAPH(16, 30, 32, 3, 3, "", 28), FL_STRATEGY_UNFUSED);
	t_assert_contains(c, "fl_contract_tile(fl_n3, fl_n5, fl_n4, ");
	free(c);
	verifies("conv3x3rows", CONV_GRAPH(16, 30, 32, 3, 3, "", 28), "");
	/* isl puts this 1x1 conv's output width outermost in its band; the
	   tile's columns are still the width, so the input is loaded along
	   its contiguous dimension (stride 1), not gathered along a column */
	c = emit_c(CONV_GRAPH(64, 28, 32, 1, 1, "", 28), FL_STRATEGY_UNFUSED);
	t_assert_contains(c, "fl_y, 1L, ");
	free(c);
	verifies("conv1x1wide", CONV_GRAPH(64, 28, 32, 1, 1, "", 28), "");
	verifies("conv3x3s2", CONV_GRAPH(5, 11, 7, 3, 3,
		 ", \"attrs\": {\"stride\": [2, 2]}", 5), "");
}

/* MICRO 2020 Fig. 1: the quantize prologue is grafted into the conv's
 * tiles by an extension node; the conv below it still gets the
 * micro-kernel (isl_schedule_node_get_domain under an extension node
 * leaves the conv out, and the search for its band found nothing, so the
 * fused kernel ran the conv as a plain loop nest, 2.6x slower than
 * unfused), and the fused program verifies. */
static void test_contract_below_extension(void **state)
{
	char *c;

	(void)state;
	c = emit_graph(t_load_sample("micro2020_fig1"), FL_STRATEGY_APOLLO_L1);
	t_assert_contains(c, "S0_quantize.scale_down");
	t_assert_contains(c, "op 3 conv2d: micro-kernel");
	assert_int_equal(count(c, "fl_contract_tile(fl_n"), 1);
	free(c);
	verifies("fig1_prologue", MICRO_FIG1_SMALL, "");
}

/* The plain C micro-kernel (the compiler told the vector ISA is absent)
 * gives the same verified results. */
static void test_contract_plain_c_kernel_verifies(void **state)
{
	(void)state;
	verifies("plain", MATMUL_GRAPH(11, 40, 29, ""),
		 "CC='cc -U__AVX512F__ -U__AVX2__ -U__FMA__'");
}

FL_SUITE(contract,
	cmocka_unit_test(test_contract_matmul_gets_micro_kernel),
	cmocka_unit_test(test_contract_runtime_only_when_used),
	cmocka_unit_test(test_contract_odd_sizes_verify),
	cmocka_unit_test(test_contract_transposed_and_batched_verify),
	cmocka_unit_test(test_contract_conv_verify),
	cmocka_unit_test(test_contract_below_extension),
	cmocka_unit_test(test_contract_plain_c_kernel_verifies));
