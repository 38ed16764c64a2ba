/* Integer element types and quantized operators (docs/types.md):
 *   - i16, u16, u32 and u64 exact in the interpreter against values
 *     worked out by hand (u64 above INT64_MAX ordered, divided and
 *     converted unsigned), and through every strategy's generated C;
 *   - integer mod/fmod (Python's and C's remainder) and bit shifts;
 *   - ONNX's QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 *     MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv built
 *     from primitives at import.
 * ONNX's own node tests of each family are run against ONNX's expected
 * outputs with every strategy's kernels verified. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "interp.h"
#include "test_util.h"

#define TESTDATA "/usr/share/libonnx-testdata/data"

/* Runs the graph (single-quoted JSON) through every strategy (one under
 * the sanitizer) and checks that each verified. */
static void verifies_every_strategy(const char *name, const char *graph)
{
	char dir[256], *json = strdup(graph), *out;
	const char *path;

	assert_non_null(json);
	for (char *c = json; *c; c++)
		if (*c == '\'')
			*c = '"';
	t_make_dir(dir, sizeof dir);
	path = t_write_graph(dir, name, json);
	out = t_fuselab_ok(T_SANITIZED ? "--run --strategy apollo --repeat 1 "
			   "--warmup 0" : "--run --strategy all --repeat 1 "
			   "--warmup 0", path);
	if (t_occurrences(out, "verified yes") != (T_SANITIZED ? 1 : FL_STRATEGY_COUNT))
		fail_msg("%s: not every strategy verified:\n%s", name, out);
	free(out);
	free(json);
	t_remove_dir(dir);
}

/* ONNX node test `test`: its outputs against ONNX's expected ones, every
 * strategy's kernels verified on its inputs. */
static void node_test_verifies(const char *test)
{
	char args[1200], *out = NULL;
	const char *dir = TESTDATA "/node";

	snprintf(args, sizeof args, "--batch --run --strategy %s --repeat 1 "
		 "--warmup 0 --inputs %s/%s/test_data_set_0 --expect "
		 "%s/%s/test_data_set_0 %s/%s/model.onnx",
		 T_SANITIZED ? "apollo" : "all", dir, test, dir, test, dir, test);
	if (t_fuselab(args, &out) != 0)
		fail_msg("%s:\n%s", test, out);
	if (!strstr(out, ": ok (") || strstr(out, "deviat") ||
	    strstr(out, "opaque") ||
	    t_occurrences(out, "verified yes") != (T_SANITIZED ? 1 : FL_STRATEGY_COUNT))
		fail_msg("%s: not verified:\n%s", test, out);
	free(out);
}

static fl_values *run_with_feed(fl_graph *g, const char *name, fl_dtype dt,
				const int64_t *vals, int n)
{
	fl_feed feed = {name, {.shape = fl_shape_make(1, (int64_t[]){n}),
			       .dtype = dt, .ints = (int64_t *)vals}};
	fl_interp_opts o;
	fl_error err = {""};
	fl_values *v;

	fl_interp_opts_default(&o);
	o.feeds = &feed;
	o.n_feeds = 1;
	v = fl_interp_run(g, &o, &err);
	if (!v)
		fail_msg("%s", err.msg);
	return v;
}

static void assert_ints(const fl_graph *g, const fl_values *v,
			const char *name, fl_dtype dt, const int64_t *want,
			int n)
{
	int t = fl_graph_find_tensor(g, name);
	const fl_buf *b;

	assert_true(t >= 0);
	b = &v->bufs[t];
	assert_int_equal(b->dtype, dt);
	assert_non_null(b->ints);
	for (int i = 0; i < n; i++)
		if (b->ints[i] != want[i])
			fail_msg("%s[%d] = %lld, want %lld", name, i,
				 (long long)b->ints[i], (long long)want[i]);
}

/* ------------------------------------------------ 16- and 64-bit types */

/* x (i64 input) cast to u64 (negative x: above INT64_MAX), i16, u16 and
 * u32, then arithmetic that wraps or orders differently when signed. */
#define WIDE_GRAPH                                                          \
	"{'format':'fuselab-graph/1','name':'wide','tensors':{"              \
	"'x':{'shape':[4],'dtype':'i64','role':'input'},"                    \
	"'three':{'shape':[],'dtype':'u64','role':'const','value':3},"       \
	"'two':{'shape':[],'dtype':'u64','role':'const','value':2},"         \
	"'k':{'shape':[],'dtype':'i16','role':'const','value':300},"         \
	"'one':{'shape':[],'dtype':'u16','role':'const','value':1},"         \
	"'m':{'shape':[],'dtype':'u32','role':'const','value':50000000},"    \
	"'mx':{'shape':[4],'dtype':'u64','role':'output'},"                  \
	"'mn':{'shape':[4],'dtype':'u64','role':'output'},"                  \
	"'dv':{'shape':[4],'dtype':'u64','role':'output'},"                  \
	"'rm':{'shape':[1],'dtype':'u64','role':'output'},"                  \
	"'fu':{'shape':[4],'role':'output'},"                                \
	"'s16':{'shape':[4],'dtype':'i16','role':'output'},"                 \
	"'u16':{'shape':[4],'dtype':'u16','role':'output'},"                 \
	"'u32':{'shape':[4],'dtype':'u32','role':'output'}},"                \
	"'ops':["                                                             \
	"{'name':'cu','op':'cast','in':['x'],'out':['ux'],"                  \
	"'attrs':{'dtype':'u64'}},"                                           \
	"{'name':'mx','op':'max','in':['ux','three'],'out':['mx']},"         \
	"{'name':'mn','op':'min','in':['ux','three'],'out':['mn']},"         \
	"{'name':'dv','op':'div','in':['ux','two'],'out':['dv']},"           \
	"{'name':'rm','op':'reduce_max','in':['ux'],'out':['rm'],"           \
	"'attrs':{'axes':[0]}},"                                              \
	"{'name':'fu','op':'cast','in':['ux'],'out':['fu'],"                 \
	"'attrs':{'dtype':'f32'}},"                                           \
	"{'name':'c16','op':'cast','in':['x'],'out':['x16'],"                \
	"'attrs':{'dtype':'i16'}},"                                           \
	"{'name':'s16','op':'mul','in':['x16','k'],'out':['s16']},"          \
	"{'name':'cu16','op':'cast','in':['x'],'out':['xu16'],"              \
	"'attrs':{'dtype':'u16'}},"                                           \
	"{'name':'u16','op':'sub','in':['xu16','one'],'out':['u16']},"       \
	"{'name':'cu32','op':'cast','in':['x'],'out':['xu32'],"              \
	"'attrs':{'dtype':'u32'}},"                                           \
	"{'name':'u32','op':'mul','in':['xu32','m'],'out':['u32']}]}"

/* Values held as int64 bits: -1 is UINT64_MAX, INT64_MIN is 2^63. */
static void test_quant_wide_types_exact(void **state)
{
	static const int64_t x[] = {-1, 2, 200, 0};
	static const int64_t mx[] = {-1, 3, 200, 3};
	static const int64_t mn[] = {3, 2, 3, 0};
	static const int64_t dv[] = {INT64_MAX, 1, 100, 0};
	static const int64_t rm[] = {-1};
	/* 200 * 300 = 60000 wraps to -5536; 0 - 1 = 65535; 200 * 5e7 =
	 * 1e10 wraps to 1e10 mod 2^32 */
	static const int64_t s16[] = {-300, 600, -5536, 0};
	static const int64_t u16[] = {65534, 1, 199, 65535};
	static const int64_t u32[] = {4244967296, 100000000, 1410065408, 0};
	fl_graph *g = t_load_q(WIDE_GRAPH);
	fl_values *v = run_with_feed(g, "x", FL_I64, x, 4);
	const fl_buf *fu = &v->bufs[fl_graph_find_tensor(g, "fu")];

	(void)state;
	assert_ints(g, v, "mx", FL_U64, mx, 4);
	assert_ints(g, v, "mn", FL_U64, mn, 4);
	assert_ints(g, v, "dv", FL_U64, dv, 4);
	assert_ints(g, v, "rm", FL_U64, rm, 1);
	assert_ints(g, v, "s16", FL_I16, s16, 4);
	assert_ints(g, v, "u16", FL_U16, u16, 4);
	assert_ints(g, v, "u32", FL_U32, u32, 4);
	assert_true(fu->data[0] == 18446744073709551616.0f);
	assert_true(fu->data[2] == 200.0f);
	fl_values_free(v);
	fl_graph_free(g);
}

static void test_quant_wide_types_every_strategy(void **state)
{
	(void)state;
	verifies_every_strategy("wide.json", WIDE_GRAPH);
}

/* The printed C declares each of the new types in its C type. */
static void test_quant_wide_types_declared(void **state)
{
	fl_graph *g = t_load_q(WIDE_GRAPH);
	fl_session *ses;
	fl_engine_opts o;
	fl_error err = {""};
	const char *src;

	(void)state;
	fl_engine_opts_default(&o);
	o.strategy = FL_STRATEGY_UNFUSED;
	o.stop_after = FL_PASS_CODEGEN;
	ses = fl_engine_open(g, &o, &err);
	if (!ses || fl_engine_run(ses, &err) < 0 || !fl_engine_source(ses))
		fail_msg("%s", err.msg);
	src = fl_engine_source(ses);
	t_assert_contains(src, "uint64_t *restrict T");
	t_assert_contains(src, "int16_t *restrict T");
	t_assert_contains(src, "uint16_t *restrict T");
	t_assert_contains(src, "uint32_t *restrict T");
	t_assert_contains(src, "uint64_t fl_acc0 = ");
	fl_engine_close(ses);
	ses = t_cuda_codegen(g, FL_STRATEGY_UNFUSED, "wide");
	t_assert_contains(fl_engine_source(ses), "uint64_t *restrict T");
	fl_engine_close(ses);
	fl_graph_free(g);
}

static void test_quant_onnx_wide_types(void **state)
{
	static const char *const tests[] = {
		"test_max_int16", "test_min_uint64",
		"test_pow_types_float32_uint64",
	};

	(void)state;
	for (size_t k = 0; k < sizeof tests / sizeof tests[0]; k++)
		node_test_verifies(tests[k]);
}

/* ------------------------------------------------ remainders and shifts */

/* Python's and C's remainders of i32 x by a divisor of each sign (and by
 * 0 and -1, which give 0 rather than trap); u64 and u8 shifts. */
#define INT_OPS_GRAPH                                                       \
	"{'format':'fuselab-graph/1','name':'intops','tensors':{"            \
	"'x':{'shape':[6],'dtype':'i32','role':'input'},"                    \
	"'d':{'shape':[6],'dtype':'i32','role':'const',"                     \
	"'data':[3,-3,3,-3,0,-1]},"                                           \
	"'n':{'shape':[6],'dtype':'u64','role':'const','data':[0,1,4,63,64,70]},"\
	"'b':{'shape':[6],'dtype':'u8','role':'const','data':[0,1,4,7,8,9]},"\
	"'md':{'shape':[6],'dtype':'i32','role':'output'},"                  \
	"'fm':{'shape':[6],'dtype':'i32','role':'output'},"                  \
	"'sl':{'shape':[6],'dtype':'u64','role':'output'},"                  \
	"'sr':{'shape':[6],'dtype':'u64','role':'output'},"                  \
	"'bl':{'shape':[6],'dtype':'u8','role':'output'},"                   \
	"'br':{'shape':[6],'dtype':'u8','role':'output'}},"                  \
	"'ops':["                                                             \
	"{'name':'md','op':'mod','in':['x','d'],'out':['md']},"              \
	"{'name':'fm','op':'fmod','in':['x','d'],'out':['fm']},"             \
	"{'name':'cu','op':'cast','in':['x'],'out':['ux'],"                  \
	"'attrs':{'dtype':'u64'}},"                                           \
	"{'name':'sl','op':'shift_left','in':['ux','n'],'out':['sl']},"      \
	"{'name':'sr','op':'shift_right','in':['ux','n'],'out':['sr']},"     \
	"{'name':'c8','op':'cast','in':['x'],'out':['x8'],"                  \
	"'attrs':{'dtype':'u8'}},"                                            \
	"{'name':'bl','op':'shift_left','in':['x8','b'],'out':['bl']},"      \
	"{'name':'br','op':'shift_right','in':['x8','b'],'out':['br']}]}"

static void test_quant_remainders_and_shifts_exact(void **state)
{
	static const int64_t x[] = {-7, -7, 7, 7, 5, INT32_MIN};
	/* Python: -7 % 3 = 2, -7 % -3 = -1, 7 % 3 = 1, 7 % -3 = -2 */
	static const int64_t md[] = {2, -1, 1, -2, 0, 0};
	/* C: the dividend's sign */
	static const int64_t fm[] = {-1, -1, 1, 1, 0, 0};
	/* -7 as u64 is 2^64 - 7: << 1 wraps, >> 4 is unsigned */
	static const int64_t sl[] = {-7, -14, 112, INT64_MIN, 0, 0};
	static const int64_t sr[] = {-7, INT64_MAX - 3, 0, 0, 0, 0};
	/* -7 as u8 is 249 */
	static const int64_t bl[] = {249, 242, 112, 128, 0, 0};
	static const int64_t br[] = {249, 124, 0, 0, 0, 0};
	fl_graph *g = t_load_q(INT_OPS_GRAPH);
	fl_values *v = run_with_feed(g, "x", FL_I32, x, 6);

	(void)state;
	assert_ints(g, v, "md", FL_I32, md, 6);
	assert_ints(g, v, "fm", FL_I32, fm, 6);
	assert_ints(g, v, "sl", FL_U64, sl, 6);
	assert_ints(g, v, "sr", FL_U64, sr, 6);
	assert_ints(g, v, "bl", FL_U8, bl, 6);
	assert_ints(g, v, "br", FL_U8, br, 6);
	fl_values_free(v);
	fl_graph_free(g);
}

static void test_quant_remainders_and_shifts_every_strategy(void **state)
{
	(void)state;
	verifies_every_strategy("intops.json", INT_OPS_GRAPH);
}

/* Shifts take unsigned integers only, as ONNX's BitShift. */
static void test_quant_shift_refuses_signed(void **state)
{
	(void)state;
	t_load_fails("{\"format\":\"fuselab-graph/1\",\"tensors\":{"
		     "\"x\":{\"shape\":[2],\"dtype\":\"i32\",\"role\":\"input\"},"
		     "\"y\":{\"shape\":[2],\"dtype\":\"i32\",\"role\":\"output\"}},"
		     "\"ops\":[{\"name\":\"o\",\"op\":\"shift_left\","
		     "\"in\":[\"x\",\"x\"],\"out\":[\"y\"]}]}",
		     "shift_left takes unsigned integers (u8, u16, u32, u64), "
		     "got a i32 tensor");
}

static void test_quant_onnx_mod_and_bitshift(void **state)
{
	static const char *const tests[] = {
		"test_mod_mixed_sign_int8", "test_mod_int64_fmod",
		"test_bitshift_right_uint64",
	};

	(void)state;
	for (size_t k = 0; k < sizeof tests / sizeof tests[0]; k++)
		node_test_verifies(tests[k]);
}

/* ------------------------------------------------ quantized operators */

/* A model numpy checks, as ONNX defines the ops: MatMulInteger with
 * K = 600 (past the 258 terms a float sums exactly: split into slices
 * whose int32 sum is exact), QuantizeLinear to int8 rounding half to
 * even and saturating, DequantizeLinear per axis. */
static const char quant_model_py[] =
	"import numpy as np, onnx, os\n"
	"from onnx import helper as h, TensorProto as T, numpy_helper as nh\n"
	"nodes = [h.make_node('MatMulInteger', ['a', 'b', 'azp'], ['mm']),\n"
	" h.make_node('QuantizeLinear', ['x', 'qs', 'qzp'], ['q']),\n"
	" h.make_node('DequantizeLinear', ['u', 'ds', 'dzp'], ['dq'], axis=0)]\n"
	"g = h.make_graph(nodes, 'quant',\n"
	" [h.make_tensor_value_info('a', T.UINT8, [3, 600]),\n"
	"  h.make_tensor_value_info('b', T.INT8, [600, 4]),\n"
	"  h.make_tensor_value_info('x', T.FLOAT, [8]),\n"
	"  h.make_tensor_value_info('u', T.UINT8, [2, 3])],\n"
	" [h.make_tensor_value_info('mm', T.INT32, [3, 4]),\n"
	"  h.make_tensor_value_info('q', T.INT8, [8]),\n"
	"  h.make_tensor_value_info('dq', T.FLOAT, [2, 3])],\n"
	" [nh.from_array(np.array(3, dtype=np.uint8), 'azp'),\n"
	"  nh.from_array(np.array(0.5, dtype=np.float32), 'qs'),\n"
	"  nh.from_array(np.array(-1, dtype=np.int8), 'qzp'),\n"
	"  nh.from_array(np.array([2, 0.25], dtype=np.float32), 'ds'),\n"
	"  nh.from_array(np.array([10, 200], dtype=np.uint8), 'dzp')])\n"
	"onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]),\n"
	"          'm.onnx')\n"
	"os.makedirs('d', exist_ok=True)\n"
	"rng = np.random.default_rng(7)\n"
	"a = rng.integers(240, 256, (3, 600)).astype(np.uint8)\n"
	"b = rng.integers(-128, -120, (600, 4)).astype(np.int8)\n"
	"x = np.array([0.25, 0.75, 1.25, -0.25, -1.25, 100, -100, 3.5],\n"
	"             dtype=np.float32)\n"
	"u = np.array([[0, 10, 255], [0, 200, 255]], dtype=np.uint8)\n"
	"mm = (a.astype(np.int64) - 3) @ b.astype(np.int64)\n"
	"assert abs(mm).max() > 2 ** 24\n"
	"q = np.clip(np.rint(x / np.float32(0.5)) - 1, -128, 127)\n"
	"dq = (u.astype(np.float32) - np.array([[10], [200]], np.float32)) *\\\n"
	"     np.array([[2], [0.25]], np.float32)\n"
	"outs = [mm.astype(np.int32), q.astype(np.int8), dq]\n"
	"for k, v in enumerate([a, b, x, u]):\n"
	"  open('d/input_%d.pb' % k, 'wb').write(nh.from_array(v).SerializeToString())\n"
	"for k, v in enumerate(outs):\n"
	"  open('d/output_%d.pb' % k, 'wb').write(nh.from_array(v).SerializeToString())\n";

static void test_quant_model_against_numpy(void **state)
{
	char *out;

	(void)state;
	out = t_numpy_model_every_strategy(quant_model_py);
	t_assert_contains(out, "expect mm [3,4]: ok (i32, exact)");
	t_assert_contains(out, "expect q [8]: ok (i8, exact)");
	t_assert_contains(out, "expect dq [2,3]: ok (max abs error 0");
	free(out);
}

static void test_quant_onnx_quantized_ops(void **state)
{
	static const char *const tests[] = {
		"test_quantizelinear_axis", "test_dynamicquantizelinear",
		"test_convinteger_with_padding", "test_qlinearmatmul_3D",
		"test_qlinearconv",
	};

	(void)state;
	for (size_t k = 0; k < sizeof tests / sizeof tests[0]; k++)
		node_test_verifies(tests[k]);
}

FL_SUITE(quant,
	 cmocka_unit_test(test_quant_wide_types_exact),
	 cmocka_unit_test(test_quant_wide_types_every_strategy),
	 cmocka_unit_test(test_quant_wide_types_declared),
	 cmocka_unit_test(test_quant_onnx_wide_types),
	 cmocka_unit_test(test_quant_remainders_and_shifts_exact),
	 cmocka_unit_test(test_quant_remainders_and_shifts_every_strategy),
	 cmocka_unit_test(test_quant_shift_refuses_signed),
	 cmocka_unit_test(test_quant_onnx_mod_and_bitshift),
	 cmocka_unit_test(test_quant_model_against_numpy),
	 cmocka_unit_test(test_quant_onnx_quantized_ops));
