/* The ops of issue 29 ("Models users bring"): the float operators ONNX's
 * node tests exercise, added to the op library or to the importer.
 *
 * Each family has its values checked against numbers worked out by hand
 * (the op's reference implementation, or the interpreter on an imported
 * model), and a graph or model that uses it run through every strategy
 * with the generated C compiled, run and verified against the
 * interpreter ("verified yes" once per strategy); the CUDA source of the
 * elementwise ops is checked to call CUDA's own functions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine.h"
#include "interp.h"
#include "onnx.pb-c.h"
#include "onnx_import.h"
#include "ops.h"
#include "test_util.h"

#define I64(...) ((const int64_t[]){__VA_ARGS__})
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define SH(...) fl_shape_make(COUNT(I64(__VA_ARGS__)), I64(__VA_ARGS__))

#define TESTDATA "/usr/share/libonnx-testdata/data"

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* json with ' for " (in place). */
static void unquote(char *json)
{
	for (char *c = json; *c; c++)
		if (*c == '\'')
			*c = '"';
}

/* Runs every strategy on the graph (single-quoted JSON) and checks that
 * each verified; the sanitizer pass runs one (the generated code is not
 * sanitized, the plain pass verifies every strategy's). */
static void verifies_every_strategy(const char *name, const char *graph)
{
	t_graph_verifies_every_strategy(name, graph);
}

static void backend_test_verifies(const char *group, const char *test);

/* ONNX backend test `test` (node/<name>) imported, interpreted on its
 * first data set and compared with ONNX's outputs, and every strategy's
 * kernels verified on those inputs. */
static void onnx_test_verifies(const char *test)
{
	backend_test_verifies("node", test);
}

/* The same for a test of another group (pytorch-converted, ...). */
static void backend_test_verifies(const char *group, const char *test)
{
	char args[2048], dir[512], *out;

	snprintf(dir, sizeof dir, TESTDATA "/%s/%s", group, test);
	snprintf(args, sizeof args, "--batch --run --strategy %s --repeat 1 "
		 "--warmup 0 --inputs %s/test_data_set_0 --expect "
		 "%s/test_data_set_0 %s/model.onnx",
		 T_SANITIZED ? "apollo" : "all", dir, dir, dir);
	if (t_fuselab(args, &out) != 0)
		fail_msg("%s:\n%s", test, out);
	t_assert_contains(out, ": ok (max abs error");
	if (count(out, "verified yes") != (T_SANITIZED ? 1 : FL_STRATEGY_COUNT))
		fail_msg("%s: not every strategy verified:\n%s", test, out);
	free(out);
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

/* Copies file `name` from folder `from` into folder `to`. */
static void copy_file(const char *from, const char *to, const char *name)
{
	char path[700];
	size_t len;
	char *data;

	snprintf(path, sizeof path, "%s/%s", from, name);
	data = t_read_file(path, &len);
	snprintf(path, sizeof path, "%s/%s", to, name);
	write_file(path, data, len);
	free(data);
}

/* ONNX backend test node/<test> whose graph inputs from n_data on (the
 * scales of Resize, the axis of CumSum: values fuselab needs at import)
 * are made initializers holding the values of its first data set; the
 * rest as onnx_test_verifies. */
static void onnx_test_with_known_inputs(const char *test, int n_data)
{
	char src[512], dir[256], sets[300], path[700], args[2048], *out;
	Onnx__TensorProto *made[8], **inits;
	Onnx__TensorProto **orig_inits;
	Onnx__ModelProto *m;
	Onnx__GraphProto *g;
	size_t len, n_init, n_in;
	uint8_t *bytes;

	snprintf(src, sizeof src, TESTDATA "/node/%s", test);
	snprintf(path, sizeof path, "%s/model.onnx", src);
	bytes = (uint8_t *)t_read_file(path, &len);
	m = onnx__model_proto__unpack(NULL, len, bytes);
	free(bytes);
	assert_non_null(m);
	g = m->graph;
	n_in = g->n_input;
	n_init = g->n_initializer;
	assert_true(n_in - (size_t)n_data <= 8);
	inits = calloc(n_init + n_in, sizeof *inits);
	assert_non_null(inits);
	if (n_init)
		memcpy(inits, g->initializer, n_init * sizeof *inits);
	for (size_t k = (size_t)n_data; k < n_in; k++) {
		snprintf(path, sizeof path, "%s/test_data_set_0/input_%zu.pb",
			 src, k);
		bytes = (uint8_t *)t_read_file(path, &len);
		made[k - n_data] = onnx__tensor_proto__unpack(NULL, len, bytes);
		free(bytes);
		assert_non_null(made[k - n_data]);
		assert_string_equal(made[k - n_data]->name, g->input[k]->name);
		inits[n_init++] = made[k - n_data];
	}
	orig_inits = g->initializer;
	g->initializer = inits;
	g->n_initializer = n_init;
	g->n_input = (size_t)n_data;
	len = onnx__model_proto__get_packed_size(m);
	bytes = malloc(len);
	assert_non_null(bytes);
	onnx__model_proto__pack(m, bytes);
	g->initializer = orig_inits;
	g->n_initializer = n_init - (n_in - (size_t)n_data);
	g->n_input = n_in;
	onnx__model_proto__free_unpacked(m, NULL);
	for (size_t k = 0; k < n_in - (size_t)n_data; k++)
		onnx__tensor_proto__free_unpacked(made[k], NULL);
	free(inits);

	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/model.onnx", dir);
	write_file(path, bytes, len);
	free(bytes);
	snprintf(sets, sizeof sets, "%s/set", dir);
	assert_int_equal(mkdir(sets, 0755), 0);
	snprintf(src + strlen(src), sizeof src - strlen(src),
		 "/test_data_set_0");
	for (int k = 0; k < n_data; k++) {
		char name[32];

		snprintf(name, sizeof name, "input_%d.pb", k);
		copy_file(src, sets, name);
	}
	copy_file(src, sets, "output_0.pb");
	snprintf(args, sizeof args, "--batch --run --strategy %s --repeat 1 "
		 "--warmup 0 --inputs %s --expect %s --workdir %s %s",
		 T_SANITIZED ? "apollo" : "all", sets, sets, dir, path);
	if (t_fuselab(args, &out) != 0)
		fail_msg("%s:\n%s", test, out);
	/* a float output within tolerance, an integer one exact */
	if (!strstr(out, ": ok (max abs error") && !strstr(out, "exact)"))
		fail_msg("%s: output not compared:\n%s", test, out);
	if (count(out, "verified yes") != (T_SANITIZED ? 1 : FL_STRATEGY_COUNT))
		fail_msg("%s: not every strategy verified:\n%s", test, out);
	free(out);
	t_remove_dir(dir);
}

/* ---- unary elementwise ----------------------------------------------- */

typedef struct unary_case {
	fl_op_kind kind;
	float in[4], want[4];
} unary_case;

static void test_ops_more_unary_values(void **state)
{
	static const unary_case cases[] = {
		{FL_OP_SIN, {0, 0.5f, -1, 3}, {0, 0.479425539f, -0.841470985f,
					      0.141120008f}},
		{FL_OP_COS, {0, 0.5f, -1, 3}, {1, 0.877582562f, 0.540302306f,
					      -0.989992497f}},
		{FL_OP_TAN, {0, 0.5f, -1, 1.5f},
		 {0, 0.546302490f, -1.557407725f, 14.101419947f}},
		{FL_OP_ASIN, {0, 0.5f, -1, 0.25f},
		 {0, 0.523598776f, -1.570796327f, 0.252680255f}},
		{FL_OP_ACOS, {0, 0.5f, -1, 1}, {1.570796327f, 1.047197551f,
					       3.141592654f, 0}},
		{FL_OP_ATAN, {0, 1, -2, 10}, {0, 0.785398163f, -1.107148718f,
					     1.471127674f}},
		{FL_OP_SINH, {0, 0.5f, -1, 3}, {0, 0.521095305f, -1.175201194f,
					       10.017874927f}},
		{FL_OP_COSH, {0, 0.5f, -1, 3}, {1, 1.127625965f, 1.543080635f,
					       10.067661996f}},
		{FL_OP_ASINH, {0, 0.5f, -1, 3}, {0, 0.481211825f, -0.881373587f,
						1.818446459f}},
		{FL_OP_ACOSH, {1, 1.5f, 2, 10}, {0, 0.962423650f, 1.316957897f,
						2.993222846f}},
		{FL_OP_ATANH, {0, 0.5f, -0.25f, 0.9f}, {0, 0.549306144f,
						       -0.255412812f,
						       1.472219490f}},
		{FL_OP_FLOOR, {2.5f, -1.5f, 0, -0.25f}, {2, -2, 0, -1}},
		{FL_OP_CEIL, {2.5f, -1.5f, 0, -0.25f}, {3, -1, 0, -0.0f}},
		{FL_OP_SIGN, {2.5f, -1.5f, 0, -1e-30f}, {1, -1, 0, -1}},
	};

	(void)state;
	for (int c = 0; c < COUNT(cases); c++) {
		const fl_op_info *info = fl_op_info_of(cases[c].kind);
		fl_op op;
		fl_shape s = SH(2, 2), o;
		fl_buf in = {.shape = s, .data = (float *)cases[c].in}, out;
		float got[4];
		fl_error err = {""};

		memset(&op, 0, sizeof op);
		op.name = (char *)"op";
		op.kind = cases[c].kind;
		op.n_in = op.n_out = 1;
		assert_int_equal(info->infer(&op, &s, &o, &err), 0);
		assert_true(fl_shape_equal(&o, &s));
		out = (fl_buf){.shape = o, .data = got};
		info->eval(&op, &in, &out);
		for (int i = 0; i < 4; i++)
			if (fabsf(got[i] - cases[c].want[i]) >
			    1e-6f + 1e-6f * fabsf(cases[c].want[i]))
				fail_msg("%s(%g) = %.9g, want %.9g", info->name,
					 cases[c].in[i], got[i],
					 cases[c].want[i]);
	}
}

/* sign keeps a NaN and the sign of a zero */
static void test_ops_more_sign_nan_and_zero(void **state)
{
	const fl_op_info *info = fl_op_info_of(FL_OP_SIGN);
	fl_op op;
	float x[2] = {NAN, -0.0f}, y[2];
	fl_buf in = {.shape = SH(2), .data = x};
	fl_buf out = {.shape = SH(2), .data = y};

	(void)state;
	memset(&op, 0, sizeof op);
	op.kind = FL_OP_SIGN;
	info->eval(&op, &in, &out);
	assert_true(isnan(y[0]));
	assert_true(y[1] == 0 && signbit(y[1]));
}

/* Every new unary op in one graph, chained so that each inverse gets
 * arguments in its domain, fused and unfused under every strategy. */
static const char unary_graph[] =
	"{'format':'fuselab-graph/1','name':'unary_more','tensors':{"
	"'x':{'shape':[6,37],'role':'input'},"
	"'y':{'shape':[6,37],'role':'output'},"
	"'z':{'shape':[6,37],'role':'output'}},'ops':["
	"{'name':'a','op':'sin','in':['x'],'out':'a'},"
	"{'name':'b','op':'asin','in':['a'],'out':'b'},"
	"{'name':'c','op':'cos','in':['b'],'out':'c'},"
	"{'name':'d','op':'acos','in':['c'],'out':'d'},"
	"{'name':'e','op':'atan','in':['d'],'out':'e'},"
	"{'name':'f','op':'sinh','in':['e'],'out':'f'},"
	"{'name':'g','op':'asinh','in':['f'],'out':'g'},"
	"{'name':'h','op':'cosh','in':['g'],'out':'h'},"
	"{'name':'i','op':'acosh','in':['h'],'out':'i'},"
	"{'name':'j','op':'tanh','in':['i'],'out':'j'},"
	"{'name':'k','op':'atanh','in':['j'],'out':'k'},"
	"{'name':'l','op':'tan','in':['k'],'out':'l'},"
	"{'name':'m','op':'floor','in':['x'],'out':'m'},"
	"{'name':'n','op':'ceil','in':['x'],'out':'n'},"
	"{'name':'o','op':'add','in':['m','n'],'out':'o'},"
	"{'name':'p','op':'sign','in':['x'],'out':'p'},"
	"{'name':'q','op':'add','in':['o','p'],'out':'z'},"
	"{'name':'r','op':'add','in':['l','x'],'out':'y'}]}";

static void test_ops_more_unary_every_strategy(void **state)
{
	(void)state;
	verifies_every_strategy("unary_more", unary_graph);
}

/* The CUDA source calls CUDA's float functions by the templates' names. */
static void test_ops_more_unary_cuda_text(void **state)
{
	static const char *const calls[] = {
		"sinf(", "asinf(", "cosf(", "acosf(", "atanf(", "sinhf(",
		"asinhf(", "coshf(", "acoshf(", "atanhf(", "tanf(", "floorf(",
		"ceilf(", " > 0.0f ? 1.0f : ",
	};
	fl_graph *g;
	fl_session *s;
	char *json = strdup(unary_graph);
	const char *cu;

	(void)state;
	assert_non_null(json);
	unquote(json);
	g = t_load(json);
	s = t_cuda_codegen(g, FL_STRATEGY_UNFUSED, "unary_more");
	cu = fl_engine_source(s);
	for (int k = 0; k < COUNT(calls); k++)
		t_assert_contains(cu, calls[k]);
	fl_engine_close(s);
	fl_graph_free(g);
	free(json);
}

static void test_ops_more_unary_onnx(void **state)
{
	(void)state;
	onnx_test_verifies("test_acosh");
	onnx_test_verifies("test_sign");
}

/* ---- binary: mod, fmod ------------------------------------------------ */

static void test_ops_more_mod_values(void **state)
{
	static const float a[6] = {5, -5, 5, -5, 4.5f, -0.0f};
	static const float b[6] = {3, 3, -3, -3, 1.5f, 2};
	static const float want_mod[6] = {2, 1, -1, -2, 0, -0.0f};
	static const float want_fmod[6] = {2, -2, 2, -2, 0, -0.0f};
	const fl_op_kind kinds[2] = {FL_OP_MOD, FL_OP_FMOD};

	(void)state;
	for (int k = 0; k < 2; k++) {
		const fl_op_info *info = fl_op_info_of(kinds[k]);
		const float *want = k ? want_fmod : want_mod;
		fl_shape s[2] = {SH(6), SH(6)}, o;
		fl_buf in[2] = {{.shape = s[0], .data = (float *)a},
				{.shape = s[1], .data = (float *)b}}, out;
		float got[6];
		fl_error err = {""};
		fl_op op;

		memset(&op, 0, sizeof op);
		op.kind = kinds[k];
		op.n_in = 2;
		op.n_out = 1;
		assert_int_equal(info->infer(&op, s, &o, &err), 0);
		out = (fl_buf){.shape = o, .data = got};
		info->eval(&op, in, &out);
		for (int i = 0; i < 6; i++)
			if (got[i] != want[i] ||
			    signbit(got[i]) != signbit(want[i]))
				fail_msg("%s(%g, %g) = %g, want %g", info->name,
					 a[i], b[i], got[i], want[i]);
	}
}

static void test_ops_more_mod_every_strategy(void **state)
{
	(void)state;
	verifies_every_strategy("mod", "{'format':'fuselab-graph/1',"
		"'name':'mod','tensors':{"
		"'x':{'shape':[5,33],'role':'input'},"
		"'d':{'shape':[33],'role':'input'},"
		"'y':{'shape':[5,33],'role':'output'},"
		"'z':{'shape':[5,33],'role':'output'}},'ops':["
		"{'name':'e','op':'exp','in':['x'],'out':'e'},"
		"{'name':'m','op':'mod','in':['e','d'],'out':'y'},"
		"{'name':'f','op':'fmod','in':['x','d'],'out':'f'},"
		"{'name':'n','op':'neg','in':['f'],'out':'z'}]}");
	onnx_test_verifies("test_mod_mixed_sign_float32");
}

/* ---- reduce_prod ------------------------------------------------------ */

static void test_ops_more_reduce_prod_values(void **state)
{
	static const float x[6] = {1, 2, 3, -4, 0.5f, 2};
	static const float rows[2] = {6, -4}, cols[3] = {-4, 1, 6};
	const fl_op_info *info = fl_op_info_of(FL_OP_REDUCE_PROD);
	fl_shape s = SH(2, 3), o;
	fl_buf in = {.shape = s, .data = (float *)x}, out;
	float got[3];
	fl_error err = {""};
	fl_op op;

	(void)state;
	for (int axis = 0; axis < 2; axis++) {
		int64_t ax = 1 - axis;

		memset(&op, 0, sizeof op);
		op.kind = FL_OP_REDUCE_PROD;
		op.n_in = op.n_out = 1;
		assert_int_equal(fl_attrs_set_ints(&op.attrs, "axes", &ax, 1),
				 0);
		assert_int_equal(info->infer(&op, &s, &o, &err), 0);
		out = (fl_buf){.shape = o, .data = got};
		info->eval(&op, &in, &out);
		t_assert_close(got, ax == 1 ? rows : cols, ax == 1 ? 2 : 3, 0,
			       1e-6);
		fl_attrs_free(&op.attrs);
	}
}

/* Products of values near 1 (no overflow whatever the order): along the
 * inner axis, the outer one, and of everything, fused with their
 * operands under every strategy. */
static const char prod_graph[] =
	"{'format':'fuselab-graph/1','name':'prod','tensors':{"
	"'x':{'shape':[24,40],'role':'input'},"
	"'k':{'shape':[1],'role':'const','value':0.05},"
	"'one':{'shape':[1],'role':'const','value':1},"
	"'r':{'shape':[24,1],'role':'output'},"
	"'c':{'shape':[1,40],'role':'output'},"
	"'a':{'shape':[1,1],'role':'output'}},'ops':["
	"{'name':'t','op':'tanh','in':['x'],'out':'t'},"
	"{'name':'m','op':'mul','in':['t','k'],'out':'m'},"
	"{'name':'n','op':'add','in':['m','one'],'out':'n'},"
	"{'name':'r','op':'reduce_prod','in':['n'],'out':'r',"
	"'attrs':{'axes':[1]}},"
	"{'name':'c','op':'reduce_prod','in':['n'],'out':'c',"
	"'attrs':{'axes':[0]}},"
	"{'name':'a','op':'reduce_prod','in':['n'],'out':'a'}]}";

static void test_ops_more_reduce_prod_every_strategy(void **state)
{
	(void)state;
	verifies_every_strategy("prod", prod_graph);
	onnx_test_verifies("test_reduce_prod_do_not_keepdims_random");
}

/* CUDA combines partial products as products. */
static void test_ops_more_reduce_prod_cuda_text(void **state)
{
	char *json = strdup(prod_graph);
	fl_graph *g;

	(void)state;
	assert_non_null(json);
	unquote(json);
	g = t_load(json);
	for (int st = 0; st < FL_STRATEGY_COUNT; st++) {
		fl_session *s = t_cuda_codegen(g, (fl_strategy)st, "prod");
		const char *cu = fl_engine_source(s);

		t_assert_contains(cu, "#define FL_RED_PROD 3");
		t_assert_contains(cu, "op == FL_RED_PROD ? a * b");
		t_assert_contains(cu, "op == FL_RED_PROD ? 1.0f");
		t_assert_contains(cu, ", FL_RED_PROD)");
		if (strstr(cu, ", FL_RED_SUM)") || strstr(cu, "(FL_RED_SUM,") ||
		    strstr(cu, ", FL_RED_MAX)") || strstr(cu, "(FL_RED_MAX,"))
			fail_msg("%s: a product combined as a sum or max:\n%s",
				 fl_strategy_name((fl_strategy)st), cu);
		fl_engine_close(s);
	}
	fl_graph_free(g);
	free(json);
}

/* ---- the activations the importer builds ------------------------------- */

static void test_ops_more_activations_onnx(void **state)
{
	(void)state;
	onnx_test_verifies("test_thresholdedrelu");
	onnx_test_verifies("test_shrink_soft");
	onnx_test_verifies("test_shrink_hard");
	onnx_test_verifies("test_celu");
}

/* ---- hand-made one-node models ------------------------------------------ */

/* A model of one node, op(x[, c]) -> y: x float (an input, or with
 * x_data an initializer), c an int64 initializer when c_n > 0, up to two
 * int attributes. */
typedef struct one_node {
	Onnx__ModelProto m;
	Onnx__GraphProto g;
	Onnx__OperatorSetIdProto opset, *opsets[1];
	Onnx__NodeProto node, *nodes[1];
	char *node_in[2], *node_out[1];
	Onnx__AttributeProto attr[2], *attrs[2];
	Onnx__ValueInfoProto vi[2], *ins[1], *outs[1];
	Onnx__TypeProto tp[2];
	Onnx__TypeProto__Tensor tt[2];
	Onnx__TensorShapeProto sp[2];
	Onnx__TensorShapeProto__Dimension dim[2][FL_MAX_RANK];
	Onnx__TensorShapeProto__Dimension *dims[2][FL_MAX_RANK];
	Onnx__TensorProto init[2], *inits[2];
	int64_t x_dims[FL_MAX_RANK];
} one_node;

static void value_info(one_node *b, int k, const char *name,
		       const fl_shape *s)
{
	onnx__value_info_proto__init(&b->vi[k]);
	onnx__type_proto__init(&b->tp[k]);
	onnx__type_proto__tensor__init(&b->tt[k]);
	onnx__tensor_shape_proto__init(&b->sp[k]);
	b->vi[k].name = (char *)name;
	b->vi[k].type = &b->tp[k];
	b->tp[k].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	b->tp[k].tensor_type = &b->tt[k];
	b->tt[k].has_elem_type = 1;
	b->tt[k].elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	b->tt[k].shape = &b->sp[k];
	b->sp[k].n_dim = (size_t)s->rank;
	b->sp[k].dim = b->dims[k];
	for (int d = 0; d < s->rank; d++) {
		onnx__tensor_shape_proto__dimension__init(&b->dim[k][d]);
		b->dim[k][d].value_case =
			ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
		b->dim[k][d].dim_value = s->dim[d];
		b->dims[k][d] = &b->dim[k][d];
	}
}

static void tensor_init(Onnx__TensorProto *t, const char *name, int dtype,
			int64_t *dims, int rank)
{
	onnx__tensor_proto__init(t);
	t->name = (char *)name;
	t->has_data_type = 1;
	t->data_type = dtype;
	t->n_dims = (size_t)rank;
	t->dims = dims;
}

/* b: op(x[, c]) with x of shape xs, y of shape ys; attributes names[k]
 * = vals[k] (names NULL-ended, at most 2). */
static void one_node_model(one_node *b, const char *op, const fl_shape *xs,
			   float *x_data, int64_t *c, size_t c_n,
			   const fl_shape *ys, const char *const *names,
			   const int64_t *vals)
{
	memset(b, 0, sizeof *b);
	onnx__model_proto__init(&b->m);
	onnx__graph_proto__init(&b->g);
	onnx__operator_set_id_proto__init(&b->opset);
	b->opset.domain = "";
	b->opset.has_version = 1;
	b->opset.version = 14;
	b->opsets[0] = &b->opset;
	b->m.has_ir_version = 1;
	b->m.ir_version = 8;
	b->m.n_opset_import = 1;
	b->m.opset_import = b->opsets;
	b->m.graph = &b->g;
	b->g.name = (char *)op;
	b->g.initializer = b->inits;
	memcpy(b->x_dims, xs->dim, sizeof b->x_dims);
	if (x_data) {
		tensor_init(&b->init[b->g.n_initializer], "x",
			    ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, b->x_dims,
			    xs->rank);
		b->init[b->g.n_initializer].n_float_data =
			(size_t)fl_shape_numel(xs);
		b->init[b->g.n_initializer].float_data = x_data;
		b->inits[b->g.n_initializer] = &b->init[b->g.n_initializer];
		b->g.n_initializer++;
	} else {
		value_info(b, 0, "x", xs);
		b->ins[0] = &b->vi[0];
		b->g.input = b->ins;
		b->g.n_input = 1;
	}
	value_info(b, 1, "y", ys);
	b->outs[0] = &b->vi[1];
	b->g.output = b->outs;
	b->g.n_output = 1;
	onnx__node_proto__init(&b->node);
	b->node.op_type = (char *)op;
	b->node.name = "n";
	b->node_in[0] = "x";
	b->node_in[1] = "c";
	b->node.n_input = c_n > 0 ? 2 : 1;
	b->node.input = b->node_in;
	b->node_out[0] = "y";
	b->node.n_output = 1;
	b->node.output = b->node_out;
	b->nodes[0] = &b->node;
	b->g.node = b->nodes;
	b->g.n_node = 1;
	if (c_n > 0) {
		Onnx__TensorProto *t = &b->init[b->g.n_initializer];

		tensor_init(t, "c", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, NULL,
			    0);
		t->n_int64_data = c_n;
		t->int64_data = c;
		b->inits[b->g.n_initializer++] = t;
	}
	for (int k = 0; names && names[k] && k < 2; k++) {
		onnx__attribute_proto__init(&b->attr[k]);
		b->attr[k].name = (char *)names[k];
		b->attr[k].has_type = 1;
		b->attr[k].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
		b->attr[k].has_i = 1;
		b->attr[k].i = vals[k];
		b->attrs[k] = &b->attr[k];
		b->node.n_attribute++;
	}
	b->node.attribute = b->attrs;
}

static uint8_t *pack_model(const one_node *b, size_t *len)
{
	uint8_t *buf;

	*len = onnx__model_proto__get_packed_size(&b->m);
	buf = malloc(*len + 1);
	assert_non_null(buf);
	onnx__model_proto__pack(&b->m, buf);
	return buf;
}

/* The model's y for its x initializer, through the interpreter. */
static void one_node_values(const one_node *b, const float *want, int64_t n)
{
	fl_error err = {""};
	fl_interp_opts io;
	size_t len;
	uint8_t *buf = pack_model(b, &len);
	fl_graph *g = fl_onnx_load_bytes(buf, len, "m.onnx", NULL, NULL, NULL,
					 &err);
	fl_values *v;

	free(buf);
	if (!g)
		fail_msg("%s: %s", b->node.op_type, err.msg);
	fl_interp_opts_default(&io);
	v = fl_interp_run(g, &io, &err);
	if (!v)
		fail_msg("%s: %s", b->node.op_type, err.msg);
	t_assert_close(v->bufs[fl_graph_find_tensor(g, "y")].data, want, n,
		       1e-6, 1e-6);
	fl_values_free(v);
	fl_graph_free(g);
}

/* The model (x an input) run under every strategy on generated inputs. */
static void one_node_every_strategy(const one_node *b)
{
	char dir[256], path[400];
	size_t len;
	uint8_t *buf = pack_model(b, &len);
	FILE *f;

	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/m.onnx", dir);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
	t_verifies_every_strategy(path, dir, b->node.op_type);
	t_remove_dir(dir);
}

/* ---- Trilu, CumSum --------------------------------------------------- */

static void test_ops_more_trilu(void **state)
{
	static float x[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
	static int64_t k1 = 1, km1 = -1;
	static const float upper1[12] = {0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12};
	static const float lower_m1[12] = {0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0};
	fl_shape s = SH(3, 4), big = SH(2, 5, 7);
	one_node b;

	(void)state;
	one_node_model(&b, "Trilu", &s, x, &k1, 1, &s, NULL, NULL);
	one_node_values(&b, upper1, 12);
	one_node_model(&b, "Trilu", &s, x, &km1, 1, &s,
		       (const char *const[]){"upper", NULL}, I64(0));
	one_node_values(&b, lower_m1, 12);
	one_node_model(&b, "Trilu", &big, NULL, &k1, 1, &big, NULL, NULL);
	one_node_every_strategy(&b);
}

static void test_ops_more_cumsum(void **state)
{
	static float x[6] = {1, 2, 3, 4, 5, 6};
	static int64_t ax0 = 0, ax1 = -1;
	static const float rows[6] = {1, 2, 3, 5, 7, 9};
	static const float cols_rev_excl[6] = {5, 3, 0, 11, 6, 0};
	fl_shape s = SH(2, 3), big = SH(3, 40, 6);
	one_node b;

	(void)state;
	one_node_model(&b, "CumSum", &s, x, &ax0, 1, &s, NULL, NULL);
	one_node_values(&b, rows, 6);
	one_node_model(&b, "CumSum", &s, x, &ax1, 1, &s,
		       (const char *const[]){"exclusive", "reverse", NULL},
		       I64(1, 1));
	one_node_values(&b, cols_rev_excl, 6);
	one_node_model(&b, "CumSum", &big, NULL, &ax0, 1, &big,
		       (const char *const[]){"reverse", NULL}, I64(1));
	one_node_every_strategy(&b);
	ax1 = 1;
	one_node_model(&b, "CumSum", &big, NULL, &ax1, 1, &big, NULL, NULL);
	one_node_every_strategy(&b);
	/* ONNX's tests, their axis made a constant */
	onnx_test_with_known_inputs("test_cumsum_1d_reverse_exclusive", 1);
	onnx_test_with_known_inputs("test_cumsum_2d_axis_0", 1);
	onnx_test_with_known_inputs("test_cumsum_2d_negative_axis", 1);
}

/* ---- GatherND ----------------------------------------------------------- */

/* ONNX's tests, their indices made constants (a gather by row numbers
 * computed at import); with the indices an input, known only at run
 * time, the node is a gather_elements by rows computed in the graph
 * (onnx_indexed.c; tests/test_indexed.c runs it). */
static void test_ops_more_gather_nd_onnx(void **state)
{
	fl_error err = {""};
	fl_graph *g;
	int n_custom = 0, n_gather = 0;

	(void)state;
	onnx_test_with_known_inputs("test_gathernd_example_float32", 1);
	onnx_test_with_known_inputs("test_gathernd_example_int32", 1);
	onnx_test_with_known_inputs("test_gathernd_example_int32_batch_dim1",
				    1);
	g = fl_onnx_load_file(TESTDATA "/node/test_gathernd_example_float32/"
			      "model.onnx", NULL, NULL, &err);
	if (!g)
		fail_msg("%s", err.msg);
	for (int k = 0; k < g->n_ops; k++) {
		n_custom += g->ops[k].kind == FL_OP_CUSTOM;
		n_gather += g->ops[k].kind == FL_OP_GATHER_ELEMENTS;
	}
	assert_int_equal(n_custom, 0);
	assert_int_equal(n_gather, 1);
	fl_graph_free(g);
}

/* ---- data movement, Hardmax, EyeLike, normalisations ------------------- */

static void test_ops_more_movement_and_normalisation_onnx(void **state)
{
	(void)state;
	onnx_test_verifies("test_depthtospace_crd_mode");
	onnx_test_verifies("test_depthtospace_dcr_mode");
	onnx_test_verifies("test_spacetodepth");
	onnx_test_verifies("test_hardmax_one_hot");
	onnx_test_verifies("test_hardmax_axis_1");
	onnx_test_verifies("test_eyelike_populate_off_main_diagonal");
	onnx_test_verifies("test_lrn");
	onnx_test_verifies("test_mvn");
}

/* EyeLike's diagonal k, inside the matrix and far outside it. */
static void test_ops_more_eye_like(void **state)
{
	static float x[6];
	static const float k1[6] = {0, 1, 0, 0, 0, 1}, none[6] = {0};
	fl_shape s = SH(2, 3);
	one_node b;

	(void)state;
	one_node_model(&b, "EyeLike", &s, x, NULL, 0, &s,
		       (const char *const[]){"k", NULL}, I64(1));
	one_node_values(&b, k1, 6);
	one_node_model(&b, "EyeLike", &s, x, NULL, 0, &s,
		       (const char *const[]){"k", NULL},
		       I64((int64_t)1 << 62));
	one_node_values(&b, none, 6);
}

/* Bad attributes are errors that name them. */
static void test_ops_more_bad_attributes(void **state)
{
	fl_shape s = SH(1, 8, 2, 2), s3 = SH(4, 3);
	static float x[32];	/* as many as the largest shape */
	static int64_t k = 0;
	fl_error err = {""};
	size_t len;
	uint8_t *buf;
	one_node b;
	struct {
		const char *op;
		const fl_shape *xs;
		const char *attr;
		int64_t v;
		const char *want;
	} cases[] = {
		{"DepthToSpace", &s, "blocksize", 3,
		 "8 channels, not a multiple of blocksize^2 = 9"},
		{"SpaceToDepth", &s, "blocksize", 0,
		 "attribute blocksize: 0 (1 to 4096)"},
		{"Mod", &s3, "fmod", 2, "attribute fmod: 2 (0 or 1)"},
		{"Hardmax", &s3, "axis", 2,
		 "axis 2 is out of range for rank 2"},
		{"LRN", &s, "size", 0, "attribute size: 0"},
	};

	(void)state;
	for (int c = 0; c < COUNT(cases); c++) {
		bool mod = !strcmp(cases[c].op, "Mod");

		one_node_model(&b, cases[c].op, cases[c].xs, x, mod ? &k : NULL,
			       mod ? 1 : 0, cases[c].xs,
			       (const char *const[]){cases[c].attr, NULL},
			       &cases[c].v);
		if (mod) {	/* Mod's b is data: make c a float */
			b.init[1].data_type =
				ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
			b.init[1].n_int64_data = 0;
			b.init[1].n_float_data = 1;
			b.init[1].float_data = x;
		}
		buf = pack_model(&b, &len);
		assert_null(fl_onnx_load_bytes(buf, len, "m.onnx", NULL, NULL,
					       NULL, &err));
		free(buf);
		t_assert_contains(err.msg, cases[c].want);
	}
}

/* ---- Resize ------------------------------------------------------------- */

/* ONNX's Resize tests, with their scales or sizes made constants: each
 * mode (nearest, linear, cubic) up and down, by scales and by sizes, and
 * every nearest_mode and coordinate transformation once (the align-corners
 * and cubic variants beyond these run in make conformance's form only when
 * their scales are initializers, so they were measured once, not here). */
static void test_ops_more_resize_onnx(void **state)
{
	static const char *const tests[] = {
		"test_resize_upsample_scales_nearest",
		"test_resize_downsample_scales_nearest",
		"test_resize_upsample_sizes_nearest",
		"test_resize_upsample_sizes_nearest_floor_align_corners",
		"test_resize_upsample_sizes_nearest_round_prefer_ceil_"
		"asymmetric",
		"test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn",
		"test_resize_upsample_scales_linear",
		"test_resize_downsample_scales_linear",
		"test_resize_downsample_sizes_linear_pytorch_half_pixel",
		"test_resize_upsample_scales_cubic",
		"test_resize_upsample_scales_cubic_A_n0p5_exclude_outside",
		"test_resize_downsample_scales_cubic",
		"test_upsample_nearest",
	};

	(void)state;
	for (int k = 0; k < COUNT(tests); k++)
		onnx_test_with_known_inputs(tests[k], 1);
}

/* ---- ConvTranspose --------------------------------------------------- */

static void test_ops_more_conv_transpose_onnx(void **state)
{
	static const char *const tests[] = {
		"test_convtranspose", "test_convtranspose_1d",
		"test_convtranspose_pads", "test_convtranspose_dilations",
		"test_convtranspose_output_shape",
		"test_convtranspose_autopad_same",
	};

	(void)state;
	for (int k = 0; k < COUNT(tests); k++)
		onnx_test_verifies(tests[k]);
	backend_test_verifies("pytorch-converted", "test_ConvTranspose2d");
}

/* Groups (no ONNX test has them): x [1,2,1,2], w [2,1,2,2] in 2 groups,
 * stride 2: each output channel is its own input channel spread by the
 * stride over its own kernel. */
static void test_ops_more_conv_transpose_groups(void **state)
{
	static float x[4] = {1, 2, 3, -1};
	static float w[8] = {1, 2, 3, 4, 10, 20, 30, 40};
	static int64_t dummy, w_dims[4] = {2, 1, 2, 2};
	/* channel 0: [1, 2] over [[1,2],[3,4]]; channel 1: [3, -1] over
	 * [[10,20],[30,40]] */
	static const float want[16] = {
		1, 2, 2, 4, 3, 4, 6, 8,
		30, 60, -10, -20, 90, 120, -30, -40,
	};
	fl_shape xs = SH(1, 2, 1, 2), ys = SH(1, 2, 2, 4);
	one_node b;

	(void)state;
	for (int as_input = 0; as_input < 2; as_input++) {
		/* c (the last initializer) is the weights, float
		 * [2,1,2,2]; strides a list */
		Onnx__TensorProto *c;

		one_node_model(&b, "ConvTranspose", &xs, as_input ? NULL : x,
			       &dummy, 1, &ys, (const char *const[]){
				       "group", "strides", NULL}, I64(2, 2));
		c = &b.init[b.g.n_initializer - 1];
		c->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
		c->n_int64_data = 0;
		c->n_float_data = 8;
		c->float_data = w;
		c->n_dims = 4;
		c->dims = w_dims;
		b.attr[1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
		b.attr[1].has_i = 0;
		b.attr[1].n_ints = 2;
		b.attr[1].ints = (int64_t[]){2, 2};
		if (as_input)
			one_node_every_strategy(&b);
		else
			one_node_values(&b, want, 16);
	}
}

/* ---- Range, ConstantOfShape: folded at import ---------------------- */

/* With their inputs constants, Range and ConstantOfShape are values known
 * at import (onnx_fold.c): the model's output is a constant. */
static void test_ops_more_range_constant_of_shape_fold(void **state)
{
	(void)state;
	onnx_test_with_known_inputs("test_range_float_type_positive_delta", 0);
	onnx_test_with_known_inputs("test_constantofshape_float_ones", 0);
}

FL_SUITE(ops_more,
	 cmocka_unit_test(test_ops_more_unary_values),
	 cmocka_unit_test(test_ops_more_sign_nan_and_zero),
	 cmocka_unit_test(test_ops_more_unary_every_strategy),
	 cmocka_unit_test(test_ops_more_unary_cuda_text),
	 cmocka_unit_test(test_ops_more_unary_onnx),
	 cmocka_unit_test(test_ops_more_mod_values),
	 cmocka_unit_test(test_ops_more_mod_every_strategy),
	 cmocka_unit_test(test_ops_more_activations_onnx),
	 cmocka_unit_test(test_ops_more_trilu),
	 cmocka_unit_test(test_ops_more_cumsum),
	 cmocka_unit_test(test_ops_more_gather_nd_onnx),
	 cmocka_unit_test(test_ops_more_movement_and_normalisation_onnx),
	 cmocka_unit_test(test_ops_more_eye_like),
	 cmocka_unit_test(test_ops_more_bad_attributes),
	 cmocka_unit_test(test_ops_more_resize_onnx),
	 cmocka_unit_test(test_ops_more_conv_transpose_onnx),
	 cmocka_unit_test(test_ops_more_conv_transpose_groups),
	 cmocka_unit_test(test_ops_more_reduce_prod_values),
	 cmocka_unit_test(test_ops_more_reduce_prod_every_strategy),
	 cmocka_unit_test(test_ops_more_reduce_prod_cuda_text),
	 cmocka_unit_test(test_ops_more_range_constant_of_shape_fold),
);
