/* The CUDA backend's code (engine/backend/print_cuda.c), read as text:
 * how loops map to blocks and threads, where tile-local arrays live,
 * which reductions become warp, block and grid reductions, and how a
 * kernel splits into launches; one unit with every construct compiled
 * with nvcc when it is installed.  Running the code needs a GPU: the
 * runner's tests (test_cuda.c) do that where there is one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen.h"
#include "engine.h"
#include "machine.h"
#include "test_util.h"

/* Layer 1 plans for this machine (NULL: the GPU, as under --target
 * cuda; the running CPU's larger tiles give multi-row tiles and
 * recomputed producers, which the GPU's small ones may not). */
static const fl_machine *plan_for;

/* The finished program of graph g under strategy s for the CUDA target,
 * in *ss (closed by the caller; g is freed with it). */
static const fl_program *program_of(fl_graph *g, fl_strategy s,
				    fl_session **ss)
{
	fl_engine_opts o;
	fl_error err = {0};

	fl_engine_opts_default(&o);
	o.strategy = s;
	o.stop_after = FL_PASS_LAYER3;
	o.run.target = FL_TARGET_CUDA;
	o.layer1.machine = plan_for;
	*ss = fl_engine_open(g, &o, &err);
	fl_graph_free(g);
	if (!*ss || fl_engine_run(*ss, &err) < 0)
		fail_msg("engine: %s", err.msg);
	return fl_engine_program(*ss);
}

/* The .cu unit of graph g (taken) under strategy s. */
static char *emit_cuda(fl_graph *g, fl_strategy s)
{
	fl_session *ss;
	fl_error err = {0};
	char *cu = fl_codegen_cuda(program_of(g, s, &ss), &err);

	if (!cu)
		fail_msg("CUDA codegen: %s", err.msg);
	fl_engine_close(ss);
	return cu;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* The blocks along x of the launches ("<<<dim3(X, Y)") of the host
 * function that follows `from` in cu, into grid[0..]; their number. */
static int launch_grids(const char *from, long *grid, int max)
{
	const char *p = strstr(from, "fl_cuda_begin(bufs");
	const char *end = p ? strstr(p, "fl_cuda_end(bufs") : NULL;
	int n = 0;

	assert_non_null(end);
	while (n < max && (p = strstr(p, "<<<dim3(")) && p < end) {
		p += strlen("<<<dim3(");
		grid[n++] = strtol(p, NULL, 10);
	}
	return n;
}

/* $NVCC, nvcc on PATH or CUDA's default place; NULL when none. */
static const char *find_nvcc(void)
{
	static char path[512];
	char *out = NULL;
	const char *env = getenv("NVCC");

	if (env && *env)
		return env;
	if (t_run("command -v nvcc", &out) == 0 && out && out[0] == '/') {
		snprintf(path, sizeof path, "%s", out);
		path[strcspn(path, "\n")] = '\0';
		free(out);
		return path;
	}
	free(out);
	return access("/usr/local/cuda/bin/nvcc", X_OK) == 0 ?
	       "/usr/local/cuda/bin/nvcc" : NULL;
}

/* A whole-tensor sum and max (all-reduces) after a tanh. */
static const char allreduce_graph[] =
	"{'format': 'fuselab-graph/1', 'name': 'allreduce', 'tensors': {"
	"'x': {'shape': [512, 300], 'dtype': 'f32', 'role': 'input'},"
	"'s': {'shape': [1, 1], 'dtype': 'f32', 'role': 'output'},"
	"'m': {'shape': [1, 1], 'dtype': 'f32', 'role': 'output'}},"
	"'ops': [{'name': 't', 'op': 'tanh', 'in': ['x'], 'out': 'tx'},"
	"{'name': 'sum', 'op': 'reduce_sum', 'in': ['tx'], 'out': 's',"
	" 'attrs': {'axes': [0, 1]}},"
	"{'name': 'max', 'op': 'reduce_max', 'in': ['x'], 'out': 'm',"
	" 'attrs': {'axes': [0, 1]}}]}";

/* The maths ops, with arguments the C backend's value ranges bound
 * (exp of 1.5 tanh(x): fl_expf_small; of x - max(x): fl_expf_nonpos). */
static const char maths_graph[] =
	"{'format': 'fuselab-graph/1', 'name': 'maths', 'tensors': {"
	"'x': {'shape': [64, 96], 'dtype': 'f32', 'role': 'input'},"
	"'k': {'shape': [1], 'dtype': 'f32', 'role': 'const', 'value': 1.5},"
	"'a': {'shape': [64, 96], 'dtype': 'f32', 'role': 'output'},"
	"'b': {'shape': [64, 96], 'dtype': 'f32', 'role': 'output'},"
	"'c': {'shape': [64, 96], 'dtype': 'f32', 'role': 'output'},"
	"'d': {'shape': [64, 96], 'dtype': 'f32', 'role': 'output'},"
	"'e': {'shape': [64, 96], 'dtype': 'f32', 'role': 'output'}},"
	"'ops': [{'name': 't', 'op': 'tanh', 'in': ['x'], 'out': 't'},"
	"{'name': 'u', 'op': 'mul', 'in': ['t', 'k'], 'out': 'u'},"
	"{'name': 'a', 'op': 'exp', 'in': ['u'], 'out': 'a'},"
	"{'name': 'b', 'op': 'relu', 'in': ['x'], 'out': 'b'},"
	"{'name': 'c', 'op': 'erf', 'in': ['x'], 'out': 'c'},"
	"{'name': 'd', 'op': 'sigmoid', 'in': ['x'], 'out': 'd'},"
	"{'name': 'm', 'op': 'reduce_max', 'in': ['x'], 'out': 'm',"
	" 'attrs': {'axes': [1]}},"
	"{'name': 'v', 'op': 'sub', 'in': ['x', 'm'], 'out': 'v'},"
	"{'name': 'e', 'op': 'exp', 'in': ['v'], 'out': 'e'}]}";

/* The C backend hides the maths runtime's bounds from gcc (fl_b, the _b
 * forms); CUDA has neither and calls its own functions, the bounded exp
 * variants by the prologue's names. */
static void test_cuda_maths_plain_forms(void **state)
{
	char *cu = emit_cuda(t_load_q(maths_graph), FL_STRATEGY_UNFUSED);

	(void)state;
	assert_null(strstr(cu, "fl_bounds"));
	assert_null(strstr(cu, "fl_b)"));
	assert_null(strstr(cu, "fl_b."));
	t_assert_contains(cu, "fl_tanhf(");
	t_assert_contains(cu, "fl_erff(");
	t_assert_contains(cu, "fl_expf_small(");
	t_assert_contains(cu, "fl_expf_nonpos(");
	t_assert_contains(cu, "#define fl_expf_small fl_expf");
	t_assert_contains(cu, " > 0.0f ? ");
	free(cu);
}

/* Layer 2's softmax on the GPU's tiles: one launch, a row per block,
 * the stitched tensors in __shared__ memory, each row reduced by the
 * whole block. */
static void test_cuda_softmax_one_launch_block_rows(void **state)
{
	char *cu;
	long grid[2];

	(void)state;
	plan_for = NULL;
	cu = emit_cuda(t_load_sample("softmax"), FL_STRATEGY_APOLLO_L2);
	assert_int_equal(count(cu, "<<<dim3("), 1);
	assert_int_equal(launch_grids(cu, grid, 2), 1);
	assert_int_equal(grid[0], 4096);
	t_assert_contains(cu, "__global__");
	t_assert_contains(cu, "__shared__ float T4_loc[1][1024];");
	t_assert_contains(cu, "fl_block_reduce(fl_acc0, FL_RED_MAX)");
	t_assert_contains(cu, "fl_block_reduce(fl_acc0, FL_RED_SUM)");
	t_assert_contains(cu, "__syncthreads();");
	free(cu);
}

/* On tiles of several rows (the CPU's), each row goes to a warp: rows
 * over threadIdx.y, a row's elements over the lanes, shuffled. */
static void test_cuda_softmax_rows_over_warps(void **state)
{
	char *cu;

	(void)state;
	plan_for = fl_machine_get();
	cu = emit_cuda(t_load_sample("softmax"), FL_STRATEGY_APOLLO_L2);
	plan_for = NULL;
	t_assert_contains(cu, "fl_warp_reduce(fl_acc0, FL_RED_MAX)");
	t_assert_contains(cu, "fl_warp_reduce(fl_acc0, FL_RED_SUM)");
	t_assert_contains(cu, "(int)threadIdx.y * (1)");
	t_assert_contains(cu, "(int)threadIdx.x * (1)");
	t_assert_contains(cu, "__syncwarp();");
	free(cu);
}

/* The unit's entry points are those of target.h. */
static void test_cuda_unit_entry_points(void **state)
{
	char *cu;

	(void)state;
	cu = emit_cuda(t_load_sample("layernorm"), FL_STRATEGY_UNFUSED);
	t_assert_contains(cu, "const int fl_n_kernels = ");
	t_assert_contains(cu, "void (*const fl_kernels[");
	t_assert_contains(cu, "int fl_device_resident = 0;");
	t_assert_contains(cu, "double fl_device_seconds = 0.0;");
	t_assert_contains(cu, "extern \"C\" const char *fl_device_name(void)");
	t_assert_contains(cu, "cudaEventElapsedTime(");
	assert_int_equal(count(cu, "extern \"C\" void fl_k"),
			 count(cu, "fl_cuda_end(bufs"));
	free(cu);
}

/* A whole-tensor reduction spans the grid: partial results per block,
 * combined into the element with atomics; its init is a launch of its
 * own, before. */
static void test_cuda_all_reduce_spans_grid(void **state)
{
	char *cu;
	const char *max;
	long grid[4];

	(void)state;
	cu = emit_cuda(t_load_q(allreduce_graph), FL_STRATEGY_UNFUSED);
	assert_int_equal(count(cu, "fl_atomic_combine(&"), 2);
	t_assert_contains(cu, "fl_atomic_combine(&T2[0][0], fl_acc0, "
			  "FL_RED_MAX)");
	max = strstr(cu, "reduce_max init");
	assert_non_null(max);
	/* the init's launch (one block), then the reduction over several */
	assert_int_equal(launch_grids(max, grid, 4), 2);
	assert_int_equal(grid[0], 1);
	assert_true(grid[1] > 1);
	free(cu);
}

/* A tile-local array over the block's budget stays global, as a
 * demotion with the numbers; under it, it is __shared__. */
static void test_cuda_shared_budget(void **state)
{
	fl_session *ss;
	fl_error err = {0};
	const fl_program *p;
	fl_codegen_demotion *d = NULL;
	int n = 0;
	char *cu;

	(void)state;
	p = program_of(t_load_sample("softmax"), FL_STRATEGY_APOLLO_L2, &ss);
	cu = fl_codegen_cuda_kernel(p, 0, 0, &d, &n, &err);
	assert_non_null(cu);
	t_assert_contains(cu, "__shared__ float T4_loc[");
	free(cu);
	free(d);
	cu = fl_codegen_cuda_kernel(p, 0, 4096, &d, &n, &err);
	assert_non_null(cu);
	assert_null(strstr(cu, "__shared__ float T4_loc["));
	assert_true(n >= 1);
	t_assert_contains(d[0].why, "over the budget of 4096 bytes");
	free(cu);
	free(d);
	fl_engine_close(ss);
}

/* Layer 3: the branches of a parallel group share one grid, each on its
 * own range of blocks. */
static void test_cuda_branches_split_the_grid(void **state)
{
	char *cu;

	(void)state;
	cu = emit_cuda(t_load_sample("inception_block"), FL_STRATEGY_APOLLO);
	t_assert_contains(cu, "branches side by side, each on its own range "
			  "of blocks");
	t_assert_contains(cu, "long b = blockIdx.x;");
	t_assert_contains(cu, "_b1_p0(bufs, b - ");
	/* a branch of several launches: its i-th with the others' i-th */
	t_assert_contains(cu, "_b0_p1(bufs, b - ");
	free(cu);
}

/* The producers recomputed per tile (an extension node) run over the
 * block's threads: layer 1 marks their bands coincident. */
static void test_cuda_recomputation_over_threads(void **state)
{
	char *cu, *stmt;

	(void)state;
	plan_for = fl_machine_get();	/* tiles with a halo to recompute */
	cu = emit_cuda(t_load_sample("micro2020_fig1"), FL_STRATEGY_APOLLO_L1);
	plan_for = NULL;
	stmt = strstr(cu, "/* S0_0_r0:");
	assert_non_null(stmt);
	assert_true(stmt - cu > 400);
	stmt[0] = '\0';
	/* the loops around the statement: shared out, not thread 0's */
	t_assert_contains(stmt - 400, "threadIdx");
	assert_null(strstr(stmt - 400, "if (fl_tid == 0) {"));
	free(cu);
}

/* A matmul's sum runs in a register over K, stored once. */
static void test_cuda_matmul_accumulates_in_register(void **state)
{
	char *cu;
	int n = 0;

	(void)state;
	cu = emit_cuda(t_load_sample("gpt2_mlp"), FL_STRATEGY_UNFUSED);
	for (char *u = strstr(cu, "matmul update */"); u;
	     u = strstr(u + 1, "matmul update */")) {
		char *line = u;

		while (line > cu && line[-1] != '\n')
			line--;
		line += strspn(line, " ");
		assert_memory_equal(line, "fl_acc0 = fl_acc0 + ", 20);
		n++;
	}
	assert_true(n >= 2);	/* both of the MLP's matmuls */
	free(cu);
}

/* Every construct above compiles with nvcc (skipped without it).  The
 * sanitizer pass prints the unit but leaves nvcc to the plain pass: nvcc
 * is the same program in both. */
static void test_cuda_constructs_compile(void **state)
{
	char dir[256], cmd[2048], *out = NULL, *cu;
	const char *nvcc = find_nvcc();
	fl_graph *g;
	int rc;

	(void)state;
	if (!nvcc)
		skip();
	t_make_dir(dir, sizeof dir);
	g = t_load_q(allreduce_graph);
	cu = emit_cuda(g, FL_STRATEGY_APOLLO);
	t_write_graph(dir, "allreduce.cu", cu);
	free(cu);
	cu = emit_cuda(t_load_q(maths_graph), FL_STRATEGY_UNFUSED);
	t_write_graph(dir, "maths.cu", cu);
	free(cu);
	if (T_SANITIZED) {
		t_remove_dir(dir);
		return;
	}
	snprintf(cmd, sizeof cmd, "cd '%s' && '%s' -std=c++17 -arch=sm_90 -c "
		 "-o allreduce.o allreduce.cu && '%s' -std=c++17 -arch=sm_90 -c "
		 "-o maths.o maths.cu", dir, nvcc, nvcc);
	rc = t_run(cmd, &out);
	if (rc != 0)
		fail_msg("nvcc: %s", out);
	free(out);
	t_remove_dir(dir);
}

FL_SUITE(codegen_cuda,
	cmocka_unit_test(test_cuda_softmax_one_launch_block_rows),
	cmocka_unit_test(test_cuda_softmax_rows_over_warps),
	cmocka_unit_test(test_cuda_unit_entry_points),
	cmocka_unit_test(test_cuda_all_reduce_spans_grid),
	cmocka_unit_test(test_cuda_shared_budget),
	cmocka_unit_test(test_cuda_branches_split_the_grid),
	cmocka_unit_test(test_cuda_recomputation_over_threads),
	cmocka_unit_test(test_cuda_matmul_accumulates_in_register),
	cmocka_unit_test(test_cuda_maths_plain_forms),
	cmocka_unit_test(test_cuda_constructs_compile));
