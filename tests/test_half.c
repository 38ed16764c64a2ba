/* The 16-bit float storage types f16 and bf16 (docs/types.md):
 *   - the conversions on the bits (runtime/half_rt.c, the interpreter's
 *     and the generated code's alike) on their edge values: signed
 *     zeros, subnormals, the largest finite values, the overflow to
 *     infinity, NaN, ties to even; every 16-bit pattern round trips;
 *   - a graph holding f16 and bf16 tensors (cast, matmul and max in f32
 *     between, transpose and pad of f16) against values worked out by
 *     hand, and verified under every strategy; the typed C and CUDA;
 *   - the dtype rules: computing ops refuse the storage types;
 *   - an ONNX model in float16 (Add, Max, MatMul, a bfloat16 Cast),
 *     imported as f32 arithmetic between casts, against numpy's values,
 *     and ONNX's own Cast/Max/Mod float16 node tests. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "engine.h"
#include "interp.h"
#include "loader.h"
#include "test_util.h"

#define TESTDATA "/usr/share/libonnx-testdata/data"

static void bits_are(fl_dtype dt, float x, unsigned want)
{
	unsigned got = fl_dtype_half_bits(dt, x);

	if (got != want)
		fail_msg("%s(%a) = 0x%04x, want 0x%04x", fl_dtype_name(dt),
			 (double)x, got, want);
}

/* ------------------------------------------------ conversions */

static void test_half_f16_edges(void **state)
{
	(void)state;
	bits_are(FL_F16, 0.0f, 0x0000);
	bits_are(FL_F16, -0.0f, 0x8000);
	bits_are(FL_F16, 1.0f, 0x3c00);
	bits_are(FL_F16, -2.0f, 0xc000);
	bits_are(FL_F16, 65504.0f, 0x7bff);		/* the largest */
	bits_are(FL_F16, 65519.99f, 0x7bff);
	bits_are(FL_F16, 65520.0f, 0x7c00);		/* tie: to infinity */
	bits_are(FL_F16, 1e30f, 0x7c00);
	bits_are(FL_F16, INFINITY, 0x7c00);
	bits_are(FL_F16, -INFINITY, 0xfc00);
	bits_are(FL_F16, 0x1p-14f, 0x0400);		/* smallest normal */
	bits_are(FL_F16, 0x1p-24f, 0x0001);		/* smallest subnormal */
	bits_are(FL_F16, 0x3ffp-24f, 0x03ff);		/* largest subnormal */
	bits_are(FL_F16, 0x1p-25f, 0x0000);		/* tie: to even, 0 */
	bits_are(FL_F16, 0x1.000002p-25f, 0x0001);	/* above the tie */
	bits_are(FL_F16, 0x3p-25f, 0x0002);		/* tie: to even, 2 */
	bits_are(FL_F16, 0x7fep-25f, 0x03ff);
	bits_are(FL_F16, 0x7ffp-25f, 0x0400);		/* rounds up to normal */
	bits_are(FL_F16, 1.0f + 0x1p-11f, 0x3c00);	/* tie: to even */
	bits_are(FL_F16, 1.0f + 0x3p-11f, 0x3c02);	/* tie: to even */
	bits_are(FL_F16, 1.0f + 0x1.2p-11f, 0x3c01);	/* above the tie */
	bits_are(FL_F16, 0.1f, 0x2e66);
	assert_true((fl_dtype_half_bits(FL_F16, NAN) & 0x7fff) > 0x7c00);
	assert_int_equal(fl_dtype_half_bits(FL_F16, -NAN) & 0x8000, 0x8000);
	assert_true(fl_dtype_half_value(FL_F16, 0x0001) == 0x1p-24f);
	assert_true(fl_dtype_half_value(FL_F16, 0x83ff) == -0x3ffp-24f);
	assert_true(fl_dtype_half_value(FL_F16, 0x7bff) == 65504.0f);
	assert_true(isinf(fl_dtype_half_value(FL_F16, 0xfc00)));
	assert_true(signbit(fl_dtype_half_value(FL_F16, 0x8000)));
	assert_true(isnan(fl_dtype_half_value(FL_F16, 0x7e00)));
	/* every pattern: exact up, back to itself (a NaN stays a NaN) */
	for (unsigned h = 0; h < 0x10000; h++) {
		float f = fl_dtype_half_value(FL_F16, (uint16_t)h);
		unsigned back = fl_dtype_half_bits(FL_F16, f);

		if ((h & 0x7fff) > 0x7c00 ? (back & 0x7fff) <= 0x7c00
					  : back != h)
			fail_msg("f16 0x%04x -> %a -> 0x%04x", h, (double)f,
				 back);
	}
}

static void test_half_bf16_edges(void **state)
{
	(void)state;
	bits_are(FL_BF16, 0.0f, 0x0000);
	bits_are(FL_BF16, -0.0f, 0x8000);
	bits_are(FL_BF16, 1.0f, 0x3f80);
	bits_are(FL_BF16, 1.0f + 0x1p-8f, 0x3f80);	/* tie: to even */
	bits_are(FL_BF16, 1.0f + 0x3p-8f, 0x3f82);	/* tie: to even */
	bits_are(FL_BF16, 1.0f + 0x1.02p-8f, 0x3f81);	/* above the tie */
	bits_are(FL_BF16, 0x1.fep127f, 0x7f7f);	/* the largest */
	bits_are(FL_BF16, 0x1.ffp127f, 0x7f80);	/* tie: to infinity */
	bits_are(FL_BF16, INFINITY, 0x7f80);
	bits_are(FL_BF16, -INFINITY, 0xff80);
	bits_are(FL_BF16, 0x1p-133f, 0x0001);		/* a subnormal */
	bits_are(FL_BF16, 0x1p-134f, 0x0000);		/* tie: to even */
	assert_int_equal(fl_dtype_half_bits(FL_BF16, NAN) & 0x7fc0, 0x7fc0);
	assert_true(fl_dtype_half_value(FL_BF16, 0x3f80) == 1.0f);
	for (unsigned h = 0; h < 0x10000; h++) {
		float f = fl_dtype_half_value(FL_BF16, (uint16_t)h);
		unsigned back = fl_dtype_half_bits(FL_BF16, f);

		if ((h & 0x7fff) > 0x7f80 ? (back & 0x7fff) <= 0x7f80
					  : back != h)
			fail_msg("bf16 0x%04x -> %a -> 0x%04x", h, (double)f,
				 back);
	}
	/* rounding a float of the type leaves it; others move */
	assert_true(fl_dtype_round(FL_F16, 0.5f) == 0.5f);
	assert_true(fl_dtype_round(FL_F16, 0.1f) == 0.0999755859375f);
	assert_true(fl_dtype_round(FL_F32, 0.1f) == 0.1f);
}

/* ------------------------------------------------ a graph */

/* a (f16 [2,3]) times w (f16 const [3,2]) in f32, stored as f16 and as
 * bf16; s = x + y computed in f32 and stored as f16 (ties, overflow);
 * max of the stored values; a transposed and padded with 0.1 as f16. */
#define HALF_GRAPH                                                          \
	"{'format':'fuselab-graph/1','name':'half','tensors':{"              \
	"'a':{'shape':[2,3],'dtype':'f16','role':'input'},"                  \
	"'x':{'shape':[4],'dtype':'f16','role':'input'},"                    \
	"'y':{'shape':[4],'dtype':'f16','role':'input'},"                    \
	"'w':{'shape':[3,2],'dtype':'f16','role':'const',"                   \
	"'data':[0.5,1,0.25,-1,2,0.125]},"                                    \
	"'mm':{'shape':[2,2],'dtype':'f16','role':'output'},"                \
	"'mb':{'shape':[2,2],'dtype':'bf16','role':'output'},"               \
	"'s':{'shape':[4],'dtype':'f16','role':'output'},"                   \
	"'mx':{'shape':[4],'dtype':'f16','role':'output'},"                  \
	"'tp':{'shape':[3,4],'dtype':'f16','role':'output'}},"               \
	"'ops':["                                                             \
	"{'name':'ca','op':'cast','in':['a'],'out':['af'],"                  \
	"'attrs':{'dtype':'f32'}},"                                           \
	"{'name':'cw','op':'cast','in':['w'],'out':['wf'],"                  \
	"'attrs':{'dtype':'f32'}},"                                           \
	"{'name':'mmf','op':'matmul','in':['af','wf'],'out':['mmf']},"       \
	"{'name':'mm','op':'cast','in':['mmf'],'out':['mm'],"                \
	"'attrs':{'dtype':'f16'}},"                                           \
	"{'name':'mb','op':'cast','in':['mmf'],'out':['mb'],"                \
	"'attrs':{'dtype':'bf16'}},"                                          \
	"{'name':'cx','op':'cast','in':['x'],'out':['xf'],"                  \
	"'attrs':{'dtype':'f32'}},"                                           \
	"{'name':'cy','op':'cast','in':['y'],'out':['yf'],"                  \
	"'attrs':{'dtype':'f32'}},"                                           \
	"{'name':'sf','op':'add','in':['xf','yf'],'out':['sf']},"            \
	"{'name':'s','op':'cast','in':['sf'],'out':['s'],"                   \
	"'attrs':{'dtype':'f16'}},"                                           \
	"{'name':'cs','op':'cast','in':['s'],'out':['s32'],"                 \
	"'attrs':{'dtype':'f32'}},"                                           \
	"{'name':'mxf','op':'max','in':['s32','yf'],'out':['mxf']},"         \
	"{'name':'mx','op':'cast','in':['mxf'],'out':['mx'],"                \
	"'attrs':{'dtype':'f16'}},"                                           \
	"{'name':'t','op':'transpose','in':['a'],'out':['at'],"              \
	"'attrs':{'perm':[1,0]}},"                                            \
	"{'name':'tp','op':'pad','in':['at'],'out':['tp'],"                  \
	"'attrs':{'pads':[0,1,0,1],'value':0.1}}]}"

static void assert_floats(const fl_graph *g, const fl_values *v,
			  const char *name, fl_dtype dt, const float *want,
			  int n)
{
	const fl_buf *b = &v->bufs[fl_graph_find_tensor(g, name)];

	assert_int_equal(b->dtype, dt);
	assert_non_null(b->data);
	for (int i = 0; i < n; i++)
		if (!(b->data[i] == want[i] ||
		      (isnan(want[i]) && isnan(b->data[i]))))
			fail_msg("%s[%d] = %a, want %a", name, i,
				 (double)b->data[i], (double)want[i]);
}

static void test_half_graph_values(void **state)
{
	/* a: 1/3 is no f16 -- the feed rounds it to 0x3555 */
	float a[] = {1, 0.333333333f, 3, -2, 0.5, 1024};
	float x[] = {1, 1, 65504, 1e-4f};
	float y[] = {0x1p-11f, 0x3p-11f, 16, -1e-4f};
	fl_feed feeds[] = {
		{"a", {.shape = fl_shape_make(2, (int64_t[]){2, 3}),
		       .dtype = FL_F16, .data = a}},
		{"x", {.shape = fl_shape_make(1, (int64_t[]){4}),
		       .dtype = FL_F16, .data = x}},
		{"y", {.shape = fl_shape_make(1, (int64_t[]){4}),
		       .dtype = FL_F16, .data = y}},
	};
	float third = 0x1.554p-2f;	/* f16 nearest 1/3 */
	/* mm = a w in f32, then rounded: row 0 = [0.5 + third/4 + 6,
	 * 1 - third + 0.375], row 1 = [-1 + 0.125 + 2048, -2 - 0.5 + 128] */
	float m00 = 6.5f + third / 4, m01 = 1.375f - third;
	float mm[] = {fl_dtype_round(FL_F16, m00),
		      fl_dtype_round(FL_F16, m01), 2047.0f, 125.5f};
	float mb[] = {fl_dtype_round(FL_BF16, m00),
		      fl_dtype_round(FL_BF16, m01), 2048.0f, 125.5f};
	/* ties to even (1.0 and 1 + 2^-9), overflow, cancellation */
	float s[] = {1.0f, 1.0f + 0x1p-9f, INFINITY, 0.0f};
	float mx[] = {1.0f, 1.0f + 0x1p-9f, INFINITY,
		      fl_dtype_round(FL_F16, 0.0f)};
	float tp[] = {0x1.998p-4f, 1, -2, 0x1.998p-4f,
		      0x1.998p-4f, third, 0.5, 0x1.998p-4f,
		      0x1.998p-4f, 3, 1024, 0x1.998p-4f};
	fl_graph *g = t_load_q(HALF_GRAPH);
	fl_interp_opts o;
	fl_error err = {""};
	fl_values *v;

	(void)state;
	assert_true(fl_dtype_round(FL_F16, 0.333333333f) == third);
	assert_true(mm[0] != m00);	/* the rounding is seen */
	fl_interp_opts_default(&o);
	o.feeds = feeds;
	o.n_feeds = 3;
	v = fl_interp_run(g, &o, &err);
	if (!v)
		fail_msg("%s", err.msg);
	assert_floats(g, v, "mm", FL_F16, mm, 4);
	assert_floats(g, v, "mb", FL_BF16, mb, 4);
	assert_floats(g, v, "s", FL_F16, s, 4);
	assert_floats(g, v, "mx", FL_F16, mx, 4);
	assert_floats(g, v, "tp", FL_F16, tp, 12);
	fl_values_free(v);
	fl_graph_free(g);
}

static void test_half_graph_every_strategy(void **state)
{
	char dir[256], *json = strdup(HALF_GRAPH), *out;
	const char *path;

	(void)state;
	assert_non_null(json);
	for (char *c = json; *c; c++)
		if (*c == '\'')
			*c = '"';
	t_make_dir(dir, sizeof dir);
	path = t_write_graph(dir, "half.json", json);
	out = t_fuselab_ok(T_SANITIZED ? "--run --strategy apollo --repeat 1 "
			   "--warmup 0" : "--run --strategy all --repeat 1 "
			   "--warmup 0", path);
	if (t_occurrences(out, "verified yes") != (T_SANITIZED ? 1 : FL_STRATEGY_COUNT))
		fail_msg("not every strategy verified:\n%s", out);
	free(out);
	free(json);
	t_remove_dir(dir);
}

/* Arrays of uint16_t bits, converted on load and store, in C and CUDA. */
static void test_half_graph_printed(void **state)
{
	fl_graph *g = t_load_q(HALF_GRAPH);
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
	t_assert_contains(src, "uint16_t (*restrict T");
	t_assert_contains(src, "= fl_f16_to_f32(T");
	t_assert_contains(src, "= fl_f32_to_f16((float)");
	t_assert_contains(src, "= fl_f32_to_bf16((float)");
	t_assert_contains(src, "(uint16_t)0x2e66");	/* pad's 0.1 */
	fl_engine_close(ses);
	ses = t_cuda_codegen(g, FL_STRATEGY_UNFUSED, "half");
	src = fl_engine_source(ses);
	t_assert_contains(src, "#define FL_HALF_FN static __host__ __device__");
	t_assert_contains(src, "fl_f32_to_f16((float)");
	fl_engine_close(ses);
	fl_graph_free(g);
}

static void refused(const char *graph, const char *why)
{
	char *json = strdup(graph);
	fl_error err = {""};
	fl_graph *g;

	assert_non_null(json);
	for (char *c = json; *c; c++)
		if (*c == '\'')
			*c = '"';
	g = fl_load_graph_string(json, strlen(json), "half", &err);
	free(json);
	if (g)
		fail_msg("loaded; want \"%s\"", why);
	t_assert_contains(err.msg, why);
}

static void test_half_refused_where_computed(void **state)
{
	(void)state;
	refused("{'format':'fuselab-graph/1','tensors':{"
		"'x':{'shape':[2],'dtype':'f16','role':'input'},"
		"'y':{'shape':[2],'dtype':'f16','role':'output'}},'ops':["
		"{'name':'e','op':'add','in':['x','x'],'out':['y']}]}",
		"add computes in f32 (f16 and bf16 are storage types");
	refused("{'format':'fuselab-graph/1','tensors':{"
		"'x':{'shape':[2],'dtype':'bf16','role':'input'},"
		"'y':{'shape':[2],'dtype':'bf16','role':'output'}},'ops':["
		"{'name':'e','op':'exp','in':['x'],'out':['y']}]}",
		"exp computes in f32");
	refused("{'format':'fuselab-graph/1','tensors':{"
		"'x':{'shape':[2],'dtype':'f16','role':'const',"
		"'data':[0.1,1]}},'ops':[]}", "0.1 is not a f16 value");
}

/* ------------------------------------------------ ONNX */

/* float16 Add, Max and MatMul (values whose f32 results need rounding
 * to f16 once), a bfloat16 Cast of the product written as ONNX's tests
 * store bfloat16 (uint16 bits), an f32 Cast back. */
static const char half_model_py[] =
	"import numpy as np, onnx, os\n"
	"from onnx import helper as h, TensorProto as T, numpy_helper as nh\n"
	"W = (np.arange(12).reshape(4, 3) / 3 - 1).astype(np.float16)\n"
	"g = h.make_graph([\n"
	"  h.make_node('Add', ['a', 'b'], ['s']),\n"
	"  h.make_node('Max', ['s', 'b'], ['m']),\n"
	"  h.make_node('MatMul', ['m', 'W'], ['y']),\n"
	"  h.make_node('Cast', ['y'], ['yb'], to=T.BFLOAT16),\n"
	"  h.make_node('Cast', ['yb'], ['yf'], to=T.FLOAT)], 'half',\n"
	"  [h.make_tensor_value_info('a', T.FLOAT16, [2, 4]),\n"
	"   h.make_tensor_value_info('b', T.FLOAT16, [2, 4])],\n"
	"  [h.make_tensor_value_info('y', T.FLOAT16, [2, 3]),\n"
	"   h.make_tensor_value_info('yb', T.BFLOAT16, [2, 3]),\n"
	"   h.make_tensor_value_info('yf', T.FLOAT, [2, 3])],\n"
	"  [nh.from_array(W, 'W')])\n"
	"onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]),\n"
	"          'm.onnx')\n"
	"os.makedirs('d', exist_ok=True)\n"
	"rng = np.random.default_rng(3)\n"
	"a = rng.standard_normal((2, 4)).astype(np.float16)\n"
	"b = rng.standard_normal((2, 4)).astype(np.float16)\n"
	"f = np.float32\n"
	"m = np.maximum((a.astype(f) + b.astype(f)).astype(np.float16), b)\n"
	"y32 = m.astype(np.float64) @ W.astype(np.float64)\n"
	"y = y32.astype(f).astype(np.float16)\n"
	"u = y.astype(f).view(np.uint32).astype(np.uint64)\n"
	"yb = ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)\n"
	"yf = (yb.astype(np.uint32) << 16).view(f)\n"
	"for k, v in enumerate([a, b]):\n"
	"  open('d/input_%d.pb' % k, 'wb').write(nh.from_array(v).SerializeToString())\n"
	"for k, v in enumerate([y, yb, yf]):\n"
	"  open('d/output_%d.pb' % k, 'wb').write(nh.from_array(v).SerializeToString())\n";

static void test_half_onnx_model(void **state)
{
	char *out;

	(void)state;
	out = t_numpy_model_every_strategy(half_model_py);
	t_assert_contains(out, "expect y [2,3]: ok (max abs error 0;");
	t_assert_contains(out, "expect yb [2,3]: ok (max abs error 0;");
	t_assert_contains(out, "expect yf [2,3]: ok (max abs error 0;");
	free(out);
}

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

static void test_half_onnx_node_tests(void **state)
{
	static const char *const tests[] = {
		"test_cast_FLOAT_to_FLOAT16", "test_cast_BFLOAT16_to_FLOAT",
		"test_cast_FLOAT_to_BFLOAT16", "test_mod_mixed_sign_float16",
	};

	(void)state;
	for (size_t k = 0; k < sizeof tests / sizeof tests[0]; k++)
		node_test_verifies(tests[k]);
}

FL_SUITE(half,
	 cmocka_unit_test(test_half_f16_edges),
	 cmocka_unit_test(test_half_bf16_edges),
	 cmocka_unit_test(test_half_graph_values),
	 cmocka_unit_test(test_half_graph_every_strategy),
	 cmocka_unit_test(test_half_graph_printed),
	 cmocka_unit_test(test_half_refused_where_computed),
	 cmocka_unit_test(test_half_onnx_model),
	 cmocka_unit_test(test_half_onnx_node_tests));
