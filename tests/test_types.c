/* Element types (docs/types.md): typed JSON graphs through dtype
 * inference, the interpreter (exact integers: values past 2^24 and
 * 2^31 that a float round trip would change), every strategy's
 * generated C (compiled, run and compared exactly by the runner), the
 * printed declarations in C and CUDA, and an ONNX model with int64
 * inputs imported and checked against ONNX's own Equal/Where/Cast. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "interp.h"
#include "onnx_import.h"
#include "test_util.h"

/* ids + big, q = (ids + big) / 3, mask = q > big, y = where(mask, x, -x),
 * rs = sum(q), back = (i32)q, w = (i8)(small + small), f = (f32)neg, g =
 * gather(big, idx), p = pad(big). */
#define TYPED_GRAPH                                                         \
	"{'format':'fuselab-graph/1','name':'typed','tensors':{"             \
	"'ids':{'shape':[2,3],'dtype':'i64','role':'input'},"                \
	"'big':{'shape':[3],'dtype':'i64','role':'const',"                   \
	"'data':[3000000000,16777217,-7]},"                                   \
	"'three':{'shape':[],'dtype':'i64','role':'const','value':3},"       \
	"'small':{'shape':[3],'dtype':'i8','role':'const','data':[100,-100,7]}," \
	"'idx':{'shape':[2],'dtype':'i64','role':'const','data':[2,0]},"     \
	"'x':{'shape':[2,3],'role':'input'},"                                \
	"'sum':{'shape':[2,3],'dtype':'i64','role':'output'},"               \
	"'q':{'shape':[2,3],'dtype':'i64','role':'output'},"                 \
	"'mask':{'shape':[2,3],'dtype':'bool','role':'output'},"             \
	"'y':{'shape':[2,3],'role':'output'},"                               \
	"'rs':{'shape':[2,1],'dtype':'i64','role':'output'},"                \
	"'back':{'shape':[2,3],'dtype':'i32','role':'output'},"              \
	"'w':{'shape':[3],'dtype':'i8','role':'output'},"                    \
	"'f':{'shape':[3],'role':'output'},"                                 \
	"'g':{'shape':[2],'dtype':'i64','role':'output'},"                   \
	"'p':{'shape':[5],'dtype':'i64','role':'output'}},"                  \
	"'ops':["                                                             \
	"{'name':'add','op':'add','in':['ids','big'],'out':['sum']},"        \
	"{'name':'div','op':'div','in':['sum','three'],'out':['q']},"        \
	"{'name':'gt','op':'greater','in':['q','big'],'out':['mask']},"      \
	"{'name':'neg','op':'neg','in':['x'],'out':['nx']},"                 \
	"{'name':'sel','op':'where','in':['mask','x','nx'],'out':['y']},"    \
	"{'name':'rsum','op':'reduce_sum','in':['q'],'out':['rs'],"          \
	"'attrs':{'axes':[1]}},"                                              \
	"{'name':'c','op':'cast','in':['q'],'out':['back'],"                 \
	"'attrs':{'dtype':'i32'}},"                                           \
	"{'name':'wrap','op':'add','in':['small','small'],'out':['w']},"     \
	"{'name':'nb','op':'neg','in':['big'],'out':['negbig']},"            \
	"{'name':'tof','op':'cast','in':['negbig'],'out':['f'],"             \
	"'attrs':{'dtype':'f32'}},"                                           \
	"{'name':'ga','op':'gather','in':['big','idx'],'out':['g']},"        \
	"{'name':'pa','op':'pad','in':['big'],'out':['p'],"                  \
	"'attrs':{'pads':[1,1],'value':-1}}]}"

static const int64_t ids_vals[] = {0, 1, -2, 3, 4000000000, 5};

static fl_values *run_typed(fl_graph *g)
{
	fl_feed feed = {"ids", {.shape = fl_shape_make(2, (int64_t[]){2, 3}),
				.dtype = FL_I64, .ints = (int64_t *)ids_vals}};
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

static const fl_buf *value_of(const fl_graph *g, const fl_values *v,
			      const char *name)
{
	int t = fl_graph_find_tensor(g, name);

	assert_true(t >= 0);
	return &v->bufs[t];
}

static void assert_ints(const fl_graph *g, const fl_values *v,
			const char *name, fl_dtype dt, const int64_t *want,
			int n)
{
	const fl_buf *b = value_of(g, v, name);

	assert_int_equal(b->dtype, dt);
	assert_non_null(b->ints);
	for (int i = 0; i < n; i++)
		if (b->ints[i] != want[i])
			fail_msg("%s[%d] = %lld, want %lld", name, i,
				 (long long)b->ints[i], (long long)want[i]);
}

static void test_types_inferred(void **state)
{
	fl_graph *g = t_load_q(TYPED_GRAPH);

	(void)state;
	assert_int_equal(g->tensors[fl_graph_find_tensor(g, "nx")].dtype,
			 FL_F32);
	assert_int_equal(g->tensors[fl_graph_find_tensor(g, "negbig")].dtype,
			 FL_I64);
	assert_int_equal(g->tensors[fl_graph_find_tensor(g, "mask")].dtype,
			 FL_BOOL);
	fl_graph_free(g);
}

/* Exact integers: a float would turn 3000000000 + 1 into 3000000000
 * and 16777217 into 16777216. */
static void test_types_interp_exact(void **state)
{
	static const int64_t sum[] = {3000000000, 16777218, -9,
				      3000000003, 4016777217, -2};
	static const int64_t q[] = {1000000000, 5592406, -3,
				    1000000001, 1338925739, 0};
	static const int64_t mask[] = {0, 0, 1, 0, 1, 1};
	static const int64_t rs[] = {INT64_C(1000000000) + 5592406 - 3,
				     INT64_C(1000000001) + 1338925739};
	static const int64_t back[] = {1000000000, 5592406, -3,
				       1000000001, 1338925739, 0};
	static const int64_t w[] = {-56, 56, 14};	/* i8 wraps */
	static const int64_t gth[] = {-7, 3000000000};
	static const int64_t pad[] = {-1, 3000000000, 16777217, -7, -1};
	fl_graph *g = t_load_q(TYPED_GRAPH);
	fl_values *v = run_typed(g);
	const fl_buf *f = value_of(g, v, "f"), *x = value_of(g, v, "x");
	const fl_buf *y = value_of(g, v, "y");

	(void)state;
	assert_ints(g, v, "sum", FL_I64, sum, 6);
	assert_ints(g, v, "q", FL_I64, q, 6);	/* truncates toward zero */
	assert_ints(g, v, "mask", FL_BOOL, mask, 6);
	assert_ints(g, v, "rs", FL_I64, rs, 2);
	assert_ints(g, v, "back", FL_I32, back, 6);
	assert_ints(g, v, "w", FL_I8, w, 3);
	assert_ints(g, v, "g", FL_I64, gth, 2);
	assert_ints(g, v, "p", FL_I64, pad, 5);
	assert_int_equal(f->dtype, FL_F32);
	assert_true(f->data[0] == -3000000000.0f && f->data[2] == 7.0f);
	for (int i = 0; i < 6; i++)
		assert_true(y->data[i] == (mask[i] ? x->data[i] : -x->data[i]));
	fl_values_free(v);
	fl_graph_free(g);
}

/* Cast both ways: f32 to integers truncates toward zero, to bool is
 * x != 0, u8 wraps; integers to f32 round. */
static void test_types_cast_both_ways(void **state)
{
	static const char *graph =
		"{'format':'fuselab-graph/1','name':'c','tensors':{"
		"'x':{'shape':[4],'role':'const','data':[-2.7,0,2.7,300]},"
		"'i':{'shape':[4],'dtype':'i32','role':'output'},"
		"'b':{'shape':[4],'dtype':'bool','role':'output'},"
		"'u':{'shape':[4],'dtype':'u8','role':'output'},"
		"'f':{'shape':[4],'role':'output'}},'ops':["
		"{'name':'ci','op':'cast','in':['x'],'out':['i'],"
		"'attrs':{'dtype':'i32'}},"
		"{'name':'cb','op':'cast','in':['x'],'out':['b'],"
		"'attrs':{'dtype':'bool'}},"
		"{'name':'cu','op':'cast','in':['x'],'out':['u'],"
		"'attrs':{'dtype':'u8'}},"
		"{'name':'cf','op':'cast','in':['i'],'out':['f'],"
		"'attrs':{'dtype':'f32'}}]}";
	static const int64_t i[] = {-2, 0, 2, 300}, b[] = {1, 0, 1, 1};
	static const int64_t u[] = {254, 0, 2, 44};
	fl_graph *g = t_load_q(graph);
	fl_values *v = fl_interp_run(g, NULL, NULL);
	const fl_buf *f;

	(void)state;
	assert_non_null(v);
	assert_ints(g, v, "i", FL_I32, i, 4);
	assert_ints(g, v, "b", FL_BOOL, b, 4);
	assert_ints(g, v, "u", FL_U8, u, 4);
	f = value_of(g, v, "f");
	assert_true(f->data[0] == -2.0f && f->data[3] == 300.0f);
	fl_values_free(v);
	fl_graph_free(g);
}

static void test_types_bad_graphs(void **state)
{
	(void)state;
	t_load_fails("{\"format\":\"fuselab-graph/1\",\"tensors\":{"
		     "\"x\":{\"shape\":[2],\"dtype\":\"f64\",\"role\":\"input\"},"
		     "\"y\":{\"shape\":[2],\"role\":\"output\"}},\"ops\":["
		     "{\"name\":\"o\",\"op\":\"copy\",\"in\":[\"x\"],\"out\":[\"y\"]}]}",
		     "tensors.x.dtype: expected one of");
	t_load_fails("{\"format\":\"fuselab-graph/1\",\"tensors\":{"
		     "\"x\":{\"shape\":[2],\"dtype\":\"i64\",\"role\":\"input\"},"
		     "\"y\":{\"shape\":[2],\"role\":\"output\"}},\"ops\":["
		     "{\"name\":\"o\",\"op\":\"exp\",\"in\":[\"x\"],\"out\":[\"y\"]}]}",
		     "exp computes in f32 (cast the input to f32 first), got "
		     "a i64 tensor");
	t_load_fails("{\"format\":\"fuselab-graph/1\",\"tensors\":{"
		     "\"x\":{\"shape\":[2],\"dtype\":\"i64\",\"role\":\"input\"},"
		     "\"y\":{\"shape\":[2],\"dtype\":\"i32\",\"role\":\"output\"}},"
		     "\"ops\":[{\"name\":\"o\",\"op\":\"neg\",\"in\":[\"x\"],\"out\":[\"y\"]}]}",
		     "is declared i32 but neg computes i64");
	t_load_fails("{\"format\":\"fuselab-graph/1\",\"tensors\":{"
		     "\"x\":{\"shape\":[2],\"dtype\":\"i64\",\"role\":\"input\"},"
		     "\"z\":{\"shape\":[2],\"role\":\"input\"},"
		     "\"y\":{\"shape\":[2],\"role\":\"output\"}},\"ops\":["
		     "{\"name\":\"o\",\"op\":\"add\",\"in\":[\"x\",\"z\"],\"out\":[\"y\"]}]}",
		     "add needs inputs of one dtype, got i64 and f32");
	t_load_fails("{\"format\":\"fuselab-graph/1\",\"tensors\":{"
		     "\"k\":{\"shape\":[1],\"dtype\":\"u8\",\"role\":\"const\","
		     "\"data\":[1.5]},"
		     "\"y\":{\"shape\":[1],\"dtype\":\"u8\",\"role\":\"output\"}},"
		     "\"ops\":[{\"name\":\"o\",\"op\":\"copy\",\"in\":[\"k\"],\"out\":[\"y\"]}]}",
		     "1.5 is not a u8 value");
}

/* Every strategy's generated C computes the interpreter's integers
 * exactly (the runner compares integral tensors bit for bit). */
static void test_types_every_strategy_verifies(void **state)
{
	char dir[64], *out, *p;
	const char *path;
	int verified = 0;
	char json[4096];

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(json, sizeof json, "%s", TYPED_GRAPH);
	for (p = json; *p; p++)
		if (*p == '\'')
			*p = '"';
	path = t_write_graph(dir, "typed.json", json);
	out = t_fuselab_ok("--run --strategy all --repeat 1 --warmup 0", path);
	for (p = out; (p = strstr(p, "verified yes")); p++)
		verified++;
	if (verified != 5 || strstr(out, "verified no"))
		fail_msg("not every strategy verified:\n%s", out);
	free(out);
	t_remove_dir(dir);
}

/* The printed C declares each array in its C type, the CUDA unit too
 * and sizes its device copies in bytes of that type. */
static void test_types_printed_declarations(void **state)
{
	fl_graph *g = t_load_q(TYPED_GRAPH);
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
	t_assert_contains(src, "#include <stdint.h>");
	t_assert_contains(src, "const int64_t (*restrict T");
	t_assert_contains(src, "bool (*restrict T");
	t_assert_contains(src, "int8_t *restrict T");
	t_assert_contains(src, "int32_t (*restrict T");
	t_assert_contains(src, "int64_t fl_acc0 = ");
	t_assert_contains(src, " == 0 ? 0 : ");	/* x/0 does not trap */
	fl_engine_close(ses);
	ses = t_cuda_codegen(g, FL_STRATEGY_UNFUSED, "typed");
	src = fl_engine_source(ses);
	t_assert_contains(src, "const int64_t (*restrict T");
	t_assert_contains(src, "bool (*restrict T");
	t_assert_contains(src, "fl_bytes[FL_N_TENSORS + 1]");
	t_assert_contains(src, "48LL");	/* sum: 6 int64 elements */
	fl_engine_close(ses);
	fl_graph_free(g);
}

/* An ONNX model with int64 inputs (token ids and a position): Equal,
 * Where on the bool mask, Cast of the ids to float, Gather by the ids,
 * ArgMin (built from primitives) of the result;
 * numpy computes the expected outputs, as ONNX defines the ops. */
static void test_types_onnx_int64_model(void **state)
{
	char dir[64], cmd[4096], *out;
	int rc;

	(void)state;
	if (t_run("/usr/bin/python3 -c 'import onnx, numpy'", &out) != 0) {
		free(out);
		fail_msg("python3-onnx is missing");
	}
	free(out);
	t_make_dir(dir, sizeof dir);
	snprintf(cmd, sizeof cmd, "cd %s && /usr/bin/python3 -c '\n"
		 "import numpy as np, onnx\n"
		 "from onnx import helper as h, TensorProto as T, numpy_helper as nh\n"

		 "nodes = [h.make_node(\"Equal\", [\"ids\", \"pad\"], [\"m\"]),\n"
		 " h.make_node(\"Cast\", [\"ids\"], [\"fid\"], to=T.FLOAT),\n"
		 " h.make_node(\"Where\", [\"m\", \"zero\", \"fid\"], [\"y\"]),\n"
		 " h.make_node(\"Add\", [\"ids\", \"pos\"], [\"s\"]),\n"
		 " h.make_node(\"Gather\", [\"emb\", \"ids\"], [\"e\"]),\n"
		 " h.make_node(\"ArgMin\", [\"y\"], [\"am\"], axis=1)]\n"
		 "g = h.make_graph(nodes, \"ids\",\n"
		 " [h.make_tensor_value_info(\"ids\", T.INT64, [2, 3]),\n"
		 "  h.make_tensor_value_info(\"pos\", T.INT64, [3])],\n"
		 " [h.make_tensor_value_info(\"m\", T.BOOL, [2, 3]),\n"
		 "  h.make_tensor_value_info(\"y\", T.FLOAT, [2, 3]),\n"
		 "  h.make_tensor_value_info(\"s\", T.INT64, [2, 3]),\n"
		 "  h.make_tensor_value_info(\"e\", T.FLOAT, [2, 3, 2]),\n"
		 "  h.make_tensor_value_info(\"am\", T.INT64, [2, 1])],\n"
		 " [nh.from_array(np.array(0, dtype=np.int64), \"pad\"),\n"
		 "  nh.from_array(np.array(0.5, dtype=np.float32), \"zero\"),\n"
		 "  nh.from_array(np.arange(10, dtype=np.float32).reshape(5, 2), \"emb\")])\n"
		 "m = h.make_model(g, opset_imports=[h.make_opsetid(\"\", 13)])\n"
		 "onnx.save(m, \"m.onnx\")\n"
		 "import os; os.makedirs(\"d\", exist_ok=True)\n"
		 "ids = np.array([[0, 4, 2], [3, 0, 1]], dtype=np.int64)\n"
		 "pos = np.array([5000000000, 1, 2], dtype=np.int64)\n"
		 "mask = ids == 0\n"
		 "y = np.where(mask, np.float32(0.5), ids.astype(np.float32))\n"
		 "outs = [mask, y, ids + pos,\n"
		 " np.arange(10, dtype=np.float32).reshape(5, 2)[ids],\n"
		 " np.expand_dims(np.argmin(y, axis=1), 1)]\n"
		 "for k, a in enumerate([ids, pos]):\n"
		 "  open(\"d/input_%%d.pb\" %% k, \"wb\").write(nh.from_array(a).SerializeToString())\n"
		 "for k, a in enumerate(outs):\n"
		 "  open(\"d/output_%%d.pb\" %% k, \"wb\").write(nh.from_array(a).SerializeToString())\n"
		 "'", dir);
	rc = t_run(cmd, &out);
	if (rc != 0)
		fail_msg("writing the model: %s", out);
	free(out);
	snprintf(cmd, sizeof cmd, "--run --strategy all --repeat 1 --warmup 0 "
		 "--inputs %s/d --expect %s/d", dir, dir);
	snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/m.onnx");
	out = t_fuselab_ok(cmd, dir);
	t_assert_contains(out, "expect m [2,3]: ok (bool, exact)");
	t_assert_contains(out, "expect s [2,3]: ok (i64, exact)");
	t_assert_contains(out, "expect y [2,3]: ok (max abs error 0");
	t_assert_contains(out, "expect e [2,3,2]: ok (max abs error 0");
	t_assert_contains(out, "expect am [2,1]: ok (i64, exact)");
	if (strstr(out, "verified no"))
		fail_msg("a strategy did not verify:\n%s", out);
	free(out);
	dir[strlen(dir) - strlen("/m.onnx")] = '\0';
	t_remove_dir(dir);
}

/* A model written by /usr/bin/python3 (onnx, numpy) into dir: the
 * script's text is `body` (its "s are fine, no 's). */
static void write_onnx_model(char *dir, size_t n, const char *body)
{
	char cmd[6000], *out;
	int rc;

	if (t_run("/usr/bin/python3 -c 'import onnx, numpy'", &out) != 0) {
		free(out);
		fail_msg("python3-onnx is missing");
	}
	free(out);
	t_make_dir(dir, n);
	snprintf(cmd, sizeof cmd, "cd %s && /usr/bin/python3 -c '\n"
		 "import numpy as np, onnx, os\n"
		 "from onnx import helper as h, TensorProto as T, numpy_helper as nh\n"
		 "%s'", dir, body);
	rc = t_run(cmd, &out);
	if (rc != 0)
		fail_msg("writing the model: %s", out);
	free(out);
}

/* An operator fuselab does not know (an opaque custom op) whose output
 * the model declares bool: the op keeps that type, so the And after it
 * imports (it refused the f32 opaque output before: "and takes bool
 * inputs, got a f32 tensor"), and the int64 one feeds Add with an int64
 * constant. */
static void test_types_onnx_opaque_keeps_declared_type(void **state)
{
	char dir[64], path[128];
	fl_error err = {""};
	fl_graph *g;
	int t;

	(void)state;
	write_onnx_model(dir, sizeof dir,
		"nodes = [h.make_node(\"MakeMask\", [\"x\"], [\"m\"], domain=\"ai.test\"),\n"
		" h.make_node(\"And\", [\"m\", \"b\"], [\"y\"]),\n"
		" h.make_node(\"MakeIds\", [\"x\"], [\"i\"], domain=\"ai.test\"),\n"
		" h.make_node(\"Add\", [\"i\", \"one\"], [\"j\"])]\n"
		"g = h.make_graph(nodes, \"opaque\",\n"
		" [h.make_tensor_value_info(\"x\", T.FLOAT, [2, 3]),\n"
		"  h.make_tensor_value_info(\"b\", T.BOOL, [2, 3])],\n"
		" [h.make_tensor_value_info(\"y\", T.BOOL, [2, 3]),\n"
		"  h.make_tensor_value_info(\"j\", T.INT64, [2, 3])],\n"
		" [nh.from_array(np.array(1, dtype=np.int64), \"one\")],\n"
		" value_info=[h.make_tensor_value_info(\"m\", T.BOOL, [2, 3]),\n"
		"  h.make_tensor_value_info(\"i\", T.INT64, [2, 3])])\n"
		"m = h.make_model(g, opset_imports=[h.make_opsetid(\"\", 13),\n"
		" h.make_opsetid(\"ai.test\", 1)])\n"
		"onnx.save(m, \"m.onnx\")\n");
	snprintf(path, sizeof path, "%s/m.onnx", dir);
	g = fl_onnx_load_file(path, NULL, NULL, &err);
	if (!g)
		fail_msg("%s", err.msg);
	t = fl_graph_find_tensor(g, "m");
	assert_true(t >= 0);
	assert_int_equal(g->tensors[t].dtype, FL_BOOL);
	assert_int_equal(g->ops[g->tensors[t].producer].kind, FL_OP_CUSTOM);
	assert_int_equal(g->tensors[fl_graph_find_tensor(g, "y")].dtype,
			 FL_BOOL);
	assert_int_equal(g->tensors[fl_graph_find_tensor(g, "i")].dtype,
			 FL_I64);
	assert_int_equal(g->tensors[fl_graph_find_tensor(g, "j")].dtype,
			 FL_I64);
	fl_graph_free(g);
	t_remove_dir(dir);
}

/* GatherND with constant indices (as PyTorch writes the attention mask:
 * GatherND(Cast(mask, to=bool)), then And) on bool, int64 and float
 * data, batch_dims 0 and 1, negative indices; ONNX's reference
 * implementation (gather_nd_impl) computes the expected outputs. */
static void test_types_onnx_gather_nd(void **state)
{
	char dir[64], args[300], path[128], *out;

	(void)state;
	write_onnx_model(dir, sizeof dir,
		"from onnx.backend.test.case.node.gathernd import gather_nd_impl as ref\n"
		"i1 = np.array([[[0, 1], [-1, -1], [1, 0]], [[0, 3], [-2, 2], [2, -4]]], dtype=np.int64)\n"
		"i2 = np.array([[[2], [-3]], [[-1], [1]]], dtype=np.int64)\n"
		"i3 = np.array([[[1, -1, 0]], [[0, 2, -1]]], dtype=np.int64)\n"
		"nodes = [h.make_node(\"Cast\", [\"ids\"], [\"m\"], to=T.BOOL),\n"
		" h.make_node(\"GatherND\", [\"m\", \"i1\"], [\"g\"], batch_dims=1),\n"
		" h.make_node(\"And\", [\"g\", \"b\"], [\"y\"]),\n"
		" h.make_node(\"GatherND\", [\"f\", \"i2\"], [\"fo\"]),\n"
		" h.make_node(\"GatherND\", [\"ids\", \"i3\"], [\"io\"])]\n"
		"g = h.make_graph(nodes, \"gathernd\",\n"
		" [h.make_tensor_value_info(\"ids\", T.INT64, [2, 3, 4]),\n"
		"  h.make_tensor_value_info(\"b\", T.BOOL, [2, 3]),\n"
		"  h.make_tensor_value_info(\"f\", T.FLOAT, [3, 4, 5])],\n"
		" [h.make_tensor_value_info(\"y\", T.BOOL, [2, 3]),\n"
		"  h.make_tensor_value_info(\"fo\", T.FLOAT, [2, 2, 4, 5]),\n"
		"  h.make_tensor_value_info(\"io\", T.INT64, [2, 1])],\n"
		" [nh.from_array(i1, \"i1\"), nh.from_array(i2, \"i2\"),\n"
		"  nh.from_array(i3, \"i3\")])\n"
		"m = h.make_model(g, opset_imports=[h.make_opsetid(\"\", 13)])\n"
		"onnx.save(m, \"m.onnx\")\n"
		"os.makedirs(\"d\", exist_ok=True)\n"
		"rng = np.random.default_rng(7)\n"
		"ids = rng.integers(0, 3, (2, 3, 4)).astype(np.int64) * 1000000007\n"
		"b = np.array([[True, True, False], [True, True, True]])\n"
		"f = rng.standard_normal((3, 4, 5)).astype(np.float32)\n"
		"outs = [ref(ids != 0, i1, 1) & b, ref(f, i2, 0), ref(ids, i3, 0)]\n"
		"for k, a in enumerate([ids, b, f]):\n"
		"  open(\"d/input_%d.pb\" % k, \"wb\").write(nh.from_array(a).SerializeToString())\n"
		"for k, a in enumerate(outs):\n"
		"  open(\"d/output_%d.pb\" % k, \"wb\").write(nh.from_array(a).SerializeToString())\n");
	snprintf(args, sizeof args, "--run --strategy all --repeat 1 "
		 "--warmup 0 --inputs %s/d --expect %s/d", dir, dir);
	snprintf(path, sizeof path, "%s/m.onnx", dir);
	out = t_fuselab_ok(args, path);
	t_assert_contains(out, "expect y [2,3]: ok (bool, exact)");
	t_assert_contains(out, "expect fo [2,2,4,5]: ok (max abs error 0");
	t_assert_contains(out, "expect io [2,1]: ok (i64, exact)");
	if (strstr(out, "verified no") || strstr(out, "opaque"))
		fail_msg("a strategy did not verify:\n%s", out);
	free(out);
	t_remove_dir(dir);
}

FL_SUITE(types,
	 cmocka_unit_test(test_types_inferred),
	 cmocka_unit_test(test_types_interp_exact),
	 cmocka_unit_test(test_types_cast_both_ways),
	 cmocka_unit_test(test_types_bad_graphs),
	 cmocka_unit_test(test_types_every_strategy_verifies),
	 cmocka_unit_test(test_types_printed_declarations),
	 cmocka_unit_test(test_types_onnx_int64_model),
	 cmocka_unit_test(test_types_onnx_opaque_keeps_declared_type),
	 cmocka_unit_test(test_types_onnx_gather_nd));
