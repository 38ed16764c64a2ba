/* Contractions as micro-kernels (engine/backend/contract.c and its
 * runtime): which kernels get one, that the runtime goes into a unit only
 * when called, and that the results verify against the interpreter for
 * shapes that exercise every edge of the blocking (sizes that are not
 * multiples of the register block, transposed operands, batches,
 * reductions longer than one block, 1x1 and strided convolutions), with
 * the vector micro-kernel and with the plain C one. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen.h"
#include "codegen_impl.h"
#include "engine.h"
#include "runner.h"
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

/* A matmul with its epilogue: the micro-kernel under every strategy (a
 * kernel of the matmul alone calls fl_contract_tile, one with its fused
 * epilogue fl_ctile_open); the runtime once per unit. */
static void test_contract_matmul_gets_micro_kernel(void **state)
{
	static const fl_strategy all[] = {FL_STRATEGY_UNFUSED, FL_STRATEGY_XLA,
					  FL_STRATEGY_APOLLO_L1};

	(void)state;
	for (int i = 0; i < 3; i++) {
		char *c = emit_c(MATMUL_GRAPH(40, 70, 50, ""), all[i]);

		assert_int_equal(count(c, "fl_contract_tile(fl_n") +
				 count(c, "fl_ctile_open(&fl_t, fl_n"), 1);
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

/* The runtime's block interface on its own, compiled as the runner
 * compiles a program: X is M x K, Y is NO slices of K x N, C is NO x M x N.
 * fl_test_blocks takes the finished blocks one by one into out (and into
 * C when `store`), with the packing buffer refused when `fail`;
 * fl_test_whole is fl_contract_tile. */
static const char blocks_head[] =
	"#include <stdlib.h>\n"
	"static int fl_test_refuse;\n"
	"static int fl_test_memalign(void **p, size_t a, size_t n)\n"
	"{\n"
	"  return fl_test_refuse ? 12 : posix_memalign(p, a, n);\n"
	"}\n"
	"#define posix_memalign fl_test_memalign\n";
static const char blocks_tail[] =
	"#undef posix_memalign\n"
	"void fl_test_blocks(long M, long N, long NO, long K, const float *x,\n"
	"                    const float *y, float *c, float *out, int store,\n"
	"                    int fail, int xt)\n"
	"{\n"
	"  const long rn[3] = {K, 1, 1}, rx[3] = {xt ? M : 1, 0, 0};\n"
	"  const long ry[3] = {N, 0, 0}, xsi = xt ? 1 : K;\n"
	"  fl_ctile t;\n"
	"  free(fl_pack_buf);\n"
	"  fl_pack_buf = NULL;\n"
	"  fl_pack_cap = 0;\n"
	"  fl_test_refuse = fail;\n"
	"  if (fl_ctile_open(&t, M, N, NO, c, N, 1, M * N, x, xsi, y, 1, K * N,\n"
	"                    rn, rx, ry))\n"
	"    for (long o = 0; o < t.NO; o++) {\n"
	"      fl_ctile_pack(&t, o);\n"
	"      for (long jb = 0; jb < t.nb; jb++)\n"
	"        for (long ib = 0; ib < t.mb; ib++) {\n"
	"          float r[FL_MR * FL_NR] __attribute__((aligned(64)));\n"
	"          const int mi = fl_ctile_rows(&t, ib), nj = fl_ctile_cols(&t, jb);\n"
	"          fl_ctile_block(&t, o, ib, jb, r, store);\n"
	"          for (int m = 0; m < mi; m++)\n"
	"            for (int v = 0; v < nj; v++)\n"
	"              out[o * M * N + (ib * FL_MR + m) * N + jb * FL_NR + v] =\n"
	"                r[m * FL_NR + v];\n"
	"        }\n"
	"    }\n"
	"  fl_test_refuse = 0;\n"
	"}\n"
	"void fl_test_whole(long M, long N, long NO, long K, const float *x,\n"
	"                   const float *y, float *c, int xt)\n"
	"{\n"
	"  const long rn[3] = {K, 1, 1}, rx[3] = {xt ? M : 1, 0, 0};\n"
	"  const long ry[3] = {N, 0, 0}, xsi = xt ? 1 : K;\n"
	"  fl_contract_tile(M, N, NO, c, N, 1, M * N, x, xsi, y, 1, K * N, rn,\n"
	"                   rx, ry);\n"
	"}\n"
	"long fl_test_kc(void)\n"
	"{\n"
	"  return FL_KC;\n"
	"}\n";

typedef void (*blocks_fn)(long, long, long, long, const float *,
			  const float *, float *, float *, int, int, int);
typedef void (*whole_fn)(long, long, long, long, const float *,
			 const float *, float *, int);

/* One shape through both interfaces, X read in place (row-major, the
 * reduction its contiguous run) and, with xt, packed (stored transposed):
 * both agree with the sums in double; the blocks carry fl_contract_tile's
 * bits exactly, stored or not; C is untouched unless asked for (or
 * needed for the partial sums of several reduction blocks); without a
 * packing buffer the blocks are still right. */
static void check_blocks(blocks_fn blocks, whole_fn whole, long kc, long M,
			 long N, long NO, long K, int xt)
{
	const long nx = M * K, ny = NO * K * N, nc = NO * M * N;
	float *x = malloc(sizeof *x * (size_t)nx);
	float *y = malloc(sizeof *y * (size_t)ny);
	float *want = malloc(sizeof *want * (size_t)nc);
	float *c = malloc(sizeof *c * (size_t)nc);
	float *out = malloc(sizeof *out * (size_t)nc);

	assert_true(x && y && want && c && out);
	for (long i = 0; i < nx; i++)
		x[i] = (float)((i * 37) % 19) / 19.0f - 0.5f;
	for (long i = 0; i < ny; i++)
		y[i] = (float)((i * 11) % 23) / 23.0f - 0.4f;
	whole(M, N, NO, K, x, y, want, xt);
	for (long o = 0; o < NO; o++)	/* against the sums in double */
		for (long i = 0; i < M; i++)
			for (long j = 0; j < N; j++) {
				double s = 0;

				for (long k = 0; k < K; k++)
					s += (double)x[xt ? k * M + i : i * K + k] *
					     y[o * K * N + k * N + j];
				assert_true(fabs(want[(o * M + i) * N + j] - s) <
					    1e-4 * (1 + fabs(s)));
			}
	for (int store = 0; store < 2; store++) {
		for (long i = 0; i < nc; i++)
			c[i] = out[i] = 1234.5f;
		blocks(M, N, NO, K, x, y, c, out, store, 0, xt);
		assert_memory_equal(out, want, sizeof *out * (size_t)nc);
		if (store)
			assert_memory_equal(c, want, sizeof *c * (size_t)nc);
		for (long i = 0; !store && K <= kc && i < nc; i++)
			assert_true(c[i] == 1234.5f);
	}
	for (long i = 0; i < nc; i++)
		out[i] = 1234.5f;
	blocks(M, N, NO, K, x, y, c, out, 0, 1, xt);
	for (long i = 0; i < nc; i++)
		assert_true(fabs(out[i] - want[i]) < 1e-4 * (1 + fabs(want[i])));
	free(x);
	free(y);
	free(want);
	free(c);
	free(out);
}

static void test_contract_runtime_blocks_exact(void **state)
{
	size_t n = sizeof blocks_head + strlen(fl_contract_rt_text) +
		   sizeof blocks_tail;
	char *src = malloc(n);
	fl_run_opts opts;
	fl_build build;
	fl_error err = {""};
	void *dl;
	blocks_fn blocks;
	whole_fn whole;
	long (*kc)(void);

	(void)state;
	assert_non_null(src);
	snprintf(src, n, "%s%s%s", blocks_head, fl_contract_rt_text,
		 blocks_tail);
	fl_run_opts_default(&opts);
	if (fl_build_source(src, &opts, &build, &err) < 0)
		fail_msg("build: %s", err.msg);
	free(src);
	if (build.status != FL_RUN_OK)
		fail_msg("build: %s", build.message);
	dl = dlopen(build.so_path, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		fail_msg("dlopen: %s", dlerror());
	*(void **)&blocks = dlsym(dl, "fl_test_blocks");
	*(void **)&whole = dlsym(dl, "fl_test_whole");
	*(void **)&kc = dlsym(dl, "fl_test_kc");
	assert_true(blocks && whole && kc);
	for (int xt = 0; xt < 2; xt++) {
		check_blocks(blocks, whole, kc(), 6, 32, 1, 40, xt);	/* one block */
		check_blocks(blocks, whole, kc(), 7, 37, 1, 19, xt);	/* partial */
		check_blocks(blocks, whole, kc(), 13, 45, 2, 2 * kc() + 5, xt);
	}
	dlclose(dl);
	fl_build_remove(&build, &opts);
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

/* The fused epilogue runs on each register block: the last reduction
 * block's sums go into the block fl_r, the epilogue's statements read the
 * matmul's result from there (printed once, in the block loop, not as a
 * loop nest over the finished tile), and the finished tile is not stored
 * when nothing else reads it; when another op does, it is stored too.
 * Both programs verify, at sizes with partial blocks and with several
 * reduction blocks (600 steps). */
#define MATMUL_SIDE_GRAPH(M, K, N) \
	"{\"format\": \"fuselab-graph/1\", \"name\": \"side\", \"tensors\": {" \
	"\"a\": {\"shape\": [" #M ", " #K "], \"dtype\": \"f32\", \"role\": \"input\"}," \
	"\"w\": {\"shape\": [" #K ", " #N "], \"dtype\": \"f32\", \"role\": \"param\"}," \
	"\"b\": {\"shape\": [" #N "], \"dtype\": \"f32\", \"role\": \"param\"}," \
	"\"y\": {\"shape\": [" #M ", " #N "], \"dtype\": \"f32\", \"role\": \"output\"}," \
	"\"z\": {\"shape\": [" #M ", 1], \"dtype\": \"f32\", \"role\": \"output\"}}," \
	"\"ops\": [{\"name\": \"mm\", \"op\": \"matmul\", \"in\": [\"a\", \"w\"], \"out\": \"h\"}," \
	"{\"name\": \"bias\", \"op\": \"add\", \"in\": [\"h\", \"b\"], \"out\": \"hb\"}," \
	"{\"name\": \"act\", \"op\": \"tanh\", \"in\": [\"hb\"], \"out\": \"y\"}," \
	"{\"name\": \"rs\", \"op\": \"reduce_sum\", \"in\": [\"h\"], \"out\": \"z\"," \
	" \"attrs\": {\"axes\": [1]}}]}"

static void test_contract_epilogue_on_register_block(void **state)
{
	char *c;

	(void)state;
	c = emit_c(MATMUL_GRAPH(40, 70, 50, ""), FL_STRATEGY_APOLLO_L1);
	t_assert_contains(c, "op 0 matmul: epilogue (2 statements) on each "
			  "register block before it is stored; the finished "
			  "tile is never stored");
	t_assert_contains(c, "its epilogue applied to each register block");
	assert_int_equal(count(c, "fl_ctile_open(&fl_t, fl_n"), 1);
	t_assert_contains(c, "fl_ctile_block(&fl_t, fl_in, fl_ib, fl_jb, "
			  "fl_r, 0);");
	t_assert_contains(c, " = fl_r[fl_m * FL_NR + fl_v] + ");
	assert_int_equal(count(c, "add compute */"), 1);
	assert_int_equal(count(c, "tanh compute */"), 1);
	assert_null(strstr(c, "fl_contract_tile(fl_n"));
	free(c);
	c = emit_c(MATMUL_SIDE_GRAPH(40, 70, 50), FL_STRATEGY_APOLLO_L1);
	t_assert_contains(c, "op 0 matmul: epilogue (2 statements) on each "
			  "register block before it is stored; the finished "
			  "tile is stored too (read elsewhere)");
	t_assert_contains(c, "fl_r, 1);");
	free(c);
	verifies("side", MATMUL_SIDE_GRAPH(13, 600, 45), "");
	verifies("side_odd", MATMUL_SIDE_GRAPH(7, 19, 37), "");
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
	assert_int_equal(count(c, "fl_ctile_open(&fl_t, fl_n"), 1);
	free(c);
	verifies("conv1x1", CONV_GRAPH(19, 9, 13, 1, 1, "", 9), "");
	/* output rows run inside the runtime, the weights packed once for
	   all of them */
	c = emit_c(CONV_GRAPH(16, 30, 32, 3, 3, "", 28), FL_STRATEGY_UNFUSED);
	t_assert_contains(c, "fl_contract_tile(fl_n3, fl_n5, fl_n4, ");
	free(c);
	/* with its relu on the register block: the kernel walks the output
	   rows of the last reduction block itself, each point's iterators
	   from the block's row, column and output row */
	c = emit_c(CONV_GRAPH(16, 30, 32, 3, 3, "", 28), FL_STRATEGY_APOLLO_L1);
	t_assert_contains(c, "fl_ctile_open(&fl_t, fl_n3, fl_n5, fl_n4, ");
	t_assert_contains(c, "const long fl_p3 = c3 + fl_ib * FL_MR + fl_m, "
			  "fl_p4 = c4 + fl_in, fl_p5 = c5 + fl_jb * FL_NR + "
			  "fl_v;");
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
	t_assert_contains(c, "op 3 conv2d: epilogue (1 statement) on each "
			  "register block");
	assert_int_equal(count(c, "fl_ctile_open(&fl_t, fl_n"), 1);
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
	cmocka_unit_test(test_contract_epilogue_on_register_block),
	cmocka_unit_test(test_contract_runtime_blocks_exact),
	cmocka_unit_test(test_contract_runtime_only_when_used),
	cmocka_unit_test(test_contract_odd_sizes_verify),
	cmocka_unit_test(test_contract_transposed_and_batched_verify),
	cmocka_unit_test(test_contract_conv_verify),
	cmocka_unit_test(test_contract_below_extension),
	cmocka_unit_test(test_contract_plain_c_kernel_verifies));
