/* The predicates is_nan and is_inf, and the ONNX operators built from
 * primitives by onnx_ops_index.c (IsNaN, IsInf, CastLike, OneHot,
 * Compress, TopK, ReverseSequence) and onnx_linalg.c (Det, Einsum).
 *
 * Each family has its values checked against numbers worked out by hand,
 * through the interpreter on a model made here (one node, its operands
 * initializers), and a model run through every strategy with the
 * generated C compiled, run and verified against the interpreter; the
 * ONNX node tests add ONNX's own expected outputs.  is_nan is also
 * compiled with -ffast-math, under which a NaN test by comparison would
 * be folded away. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "interp.h"
#include "onnx.pb-c.h"
#include "onnx_import.h"
#include "ops.h"
#include "runner.h"
#include "test_util.h"

#define I64(...) ((const int64_t[]){__VA_ARGS__})
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define SH(...) fl_shape_make(COUNT(I64(__VA_ARGS__)), I64(__VA_ARGS__))

#define TESTDATA "/usr/share/libonnx-testdata/data"
#define DT_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define DT_INT64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64
#define DT_BOOL ONNX__TENSOR_PROTO__DATA_TYPE__BOOL

static int strategies_run(void)
{
	return T_SANITIZED ? 1 : FL_STRATEGY_COUNT;
}

/* ONNX backend test node/<test> on its first data set: the interpreter
 * against ONNX's outputs (floats within tolerance, bool and integers
 * exactly), and every strategy's kernels verified on those inputs.
 * extra: more options (may be ""), env: a prefix of the command. */
static void node_test_verifies_with(const char *test, const char *env,
				    const char *extra)
{
	char cmd[2048], dir[512], *out;
	int rc;

	snprintf(dir, sizeof dir, TESTDATA "/node/%s", test);
	snprintf(cmd, sizeof cmd, "%s '%s' --batch --run --strategy %s "
		 "--repeat 1 --warmup 0 %s --inputs %s/test_data_set_0 "
		 "--expect %s/test_data_set_0 %s/model.onnx", env,
		 t_fuselab_bin(), T_SANITIZED ? "apollo" : "all", extra, dir,
		 dir, dir);
	rc = t_run(cmd, &out);
	if (rc != 0 || t_occurrences(out, "verified yes") != strategies_run())
		fail_msg("%s: rc %d\n%s", test, rc, out);
	if (!strstr(out, ": ok (max abs error") && !strstr(out, "exact)"))
		fail_msg("%s: output not compared:\n%s", test, out);
	free(out);
}

static void node_test_verifies(const char *test)
{
	node_test_verifies_with(test, "", "");
}

/* ---- a one-node model ---------------------------------------------------- */

/* An operand or result of the node: an initializer when data is set
 * (float, int64 or bool as uint8 values by dtype), else a graph input
 * (or output). */
typedef struct tensor_spec {
	const char *name;
	int dtype;
	fl_shape shape;
	const void *data;
} tensor_spec;

/* An attribute: a string when s is set, else the int i. */
typedef struct attr_spec {
	const char *name;
	const char *s;
	int64_t i;
} attr_spec;

#define MAX_IO 3

typedef struct node_model {
	const char *op;
	int n_in, n_out, n_attr;
	tensor_spec in[MAX_IO], out[2];
	attr_spec attr[MAX_IO];
} node_model;

/* The protobuf structures of one model, all in one place. */
typedef struct proto {
	Onnx__ModelProto m;
	Onnx__GraphProto g;
	Onnx__OperatorSetIdProto opset, *opsets[1];
	Onnx__NodeProto node, *nodes[1];
	char *node_in[MAX_IO], *node_out[2];
	Onnx__AttributeProto attr[MAX_IO], *attrs[MAX_IO];
	Onnx__ValueInfoProto vi[MAX_IO + 2], *ins[MAX_IO], *outs[2];
	Onnx__TypeProto tp[MAX_IO + 2];
	Onnx__TypeProto__Tensor tt[MAX_IO + 2];
	Onnx__TensorShapeProto sp[MAX_IO + 2];
	Onnx__TensorShapeProto__Dimension dim[MAX_IO + 2][FL_MAX_RANK];
	Onnx__TensorShapeProto__Dimension *dims[MAX_IO + 2][FL_MAX_RANK];
	Onnx__TensorProto init[MAX_IO], *inits[MAX_IO];
	int64_t init_dims[MAX_IO][FL_MAX_RANK];
	int32_t bools[MAX_IO][64];
} proto;

static Onnx__ValueInfoProto *value_info(proto *p, int k, const tensor_spec *t)
{
	onnx__value_info_proto__init(&p->vi[k]);
	onnx__type_proto__init(&p->tp[k]);
	onnx__type_proto__tensor__init(&p->tt[k]);
	onnx__tensor_shape_proto__init(&p->sp[k]);
	p->vi[k].name = (char *)t->name;
	p->vi[k].type = &p->tp[k];
	p->tp[k].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	p->tp[k].tensor_type = &p->tt[k];
	p->tt[k].has_elem_type = 1;
	p->tt[k].elem_type = t->dtype;
	p->tt[k].shape = &p->sp[k];
	p->sp[k].n_dim = (size_t)t->shape.rank;
	p->sp[k].dim = p->dims[k];
	for (int d = 0; d < t->shape.rank; d++) {
		onnx__tensor_shape_proto__dimension__init(&p->dim[k][d]);
		p->dim[k][d].value_case =
			ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
		p->dim[k][d].dim_value = t->shape.dim[d];
		p->dims[k][d] = &p->dim[k][d];
	}
	return &p->vi[k];
}

static void initializer(proto *p, int k, const tensor_spec *t)
{
	Onnx__TensorProto *i = &p->init[p->g.n_initializer];
	size_t n = (size_t)fl_shape_numel(&t->shape);

	onnx__tensor_proto__init(i);
	i->name = (char *)t->name;
	i->has_data_type = 1;
	i->data_type = t->dtype;
	memcpy(p->init_dims[k], t->shape.dim, sizeof p->init_dims[k]);
	i->n_dims = (size_t)t->shape.rank;
	i->dims = p->init_dims[k];
	if (t->dtype == DT_FLOAT) {
		i->n_float_data = n;
		i->float_data = (float *)t->data;
	} else if (t->dtype == DT_INT64) {
		i->n_int64_data = n;
		i->int64_data = (int64_t *)t->data;
	} else {
		assert_true(n <= 64);
		for (size_t j = 0; j < n; j++)
			p->bools[k][j] = ((const uint8_t *)t->data)[j];
		i->n_int32_data = n;
		i->int32_data = p->bools[k];
	}
	p->inits[p->g.n_initializer++] = i;
}

static void node_attrs(proto *p, const node_model *nm)
{
	for (int k = 0; k < nm->n_attr; k++) {
		Onnx__AttributeProto *a = &p->attr[k];

		onnx__attribute_proto__init(a);
		a->name = (char *)nm->attr[k].name;
		a->has_type = 1;
		if (nm->attr[k].s) {
			a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
			a->has_s = 1;
			a->s.data = (uint8_t *)nm->attr[k].s;
			a->s.len = strlen(nm->attr[k].s);
		} else {
			a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
			a->has_i = 1;
			a->i = nm->attr[k].i;
		}
		p->attrs[k] = a;
	}
	p->node.n_attribute = (size_t)nm->n_attr;
	p->node.attribute = p->attrs;
}

static void build(proto *p, const node_model *nm)
{
	memset(p, 0, sizeof *p);
	onnx__model_proto__init(&p->m);
	onnx__graph_proto__init(&p->g);
	onnx__operator_set_id_proto__init(&p->opset);
	p->opset.domain = "";
	p->opset.has_version = 1;
	p->opset.version = 13;
	p->opsets[0] = &p->opset;
	p->m.has_ir_version = 1;
	p->m.ir_version = 8;
	p->m.n_opset_import = 1;
	p->m.opset_import = p->opsets;
	p->m.graph = &p->g;
	p->g.name = (char *)nm->op;
	p->g.initializer = p->inits;
	p->g.input = p->ins;
	p->g.output = p->outs;
	onnx__node_proto__init(&p->node);
	p->node.op_type = (char *)nm->op;
	p->node.name = "n";
	for (int k = 0; k < nm->n_in; k++) {
		p->node_in[k] = (char *)nm->in[k].name;
		if (nm->in[k].data)
			initializer(p, k, &nm->in[k]);
		else
			p->ins[p->g.n_input++] = value_info(p, k, &nm->in[k]);
	}
	for (int k = 0; k < nm->n_out; k++) {
		p->node_out[k] = (char *)nm->out[k].name;
		p->outs[p->g.n_output++] = value_info(p, MAX_IO + k,
						      &nm->out[k]);
	}
	p->node.n_input = (size_t)nm->n_in;
	p->node.input = p->node_in;
	p->node.n_output = (size_t)nm->n_out;
	p->node.output = p->node_out;
	node_attrs(p, nm);
	p->nodes[0] = &p->node;
	p->g.node = p->nodes;
	p->g.n_node = 1;
}

static uint8_t *pack(const node_model *nm, size_t *len)
{
	proto *p = malloc(sizeof *p);
	uint8_t *buf;

	assert_non_null(p);
	build(p, nm);
	*len = onnx__model_proto__get_packed_size(&p->m);
	buf = malloc(*len + 1);
	assert_non_null(buf);
	onnx__model_proto__pack(&p->m, buf);
	free(p);
	return buf;
}

/* The model imported; NULL with err set when it does not import. */
static fl_graph *import(const node_model *nm, fl_onnx_info *info,
			fl_error *err)
{
	size_t len;
	uint8_t *buf = pack(nm, &len);
	fl_graph *g = fl_onnx_load_bytes(buf, len, "m.onnx", NULL, NULL, info,
					 err);

	free(buf);
	return g;
}

/* Output `out` of the model through the interpreter, equal to want
 * (n values; an integer output compared exactly). */
static void model_values(const node_model *nm, const char *out,
			 const double *want, int64_t n)
{
	fl_error err = {""};
	fl_interp_opts io;
	fl_graph *g = import(nm, NULL, &err);
	fl_values *v;
	const fl_buf *b;

	if (!g)
		fail_msg("%s: %s", nm->op, err.msg);
	fl_interp_opts_default(&io);
	v = fl_interp_run(g, &io, &err);
	if (!v)
		fail_msg("%s: %s", nm->op, err.msg);
	b = &v->bufs[fl_graph_find_tensor(g, out)];
	assert_int_equal(fl_shape_numel(&b->shape), n);
	for (int64_t i = 0; i < n; i++) {
		double got = b->dtype == FL_F32 ? b->data[i] : (double)b->ints[i];

		if (fabs(got - want[i]) > 1e-5 + 1e-5 * fabs(want[i]))
			fail_msg("%s: %s[%lld] = %.9g, want %.9g", nm->op, out,
				 (long long)i, got, want[i]);
	}
	fl_values_free(v);
	fl_graph_free(g);
}

/* The model (its data operands graph inputs) under every strategy on
 * generated inputs. */
static void model_every_strategy(const node_model *nm)
{
	char dir[256], path[400];
	size_t len;
	uint8_t *buf = pack(nm, &len);
	FILE *f;

	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/m.onnx", dir);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
	t_verifies_every_strategy(path, dir, nm->op);
	t_remove_dir(dir);
}

/* The model imports with its node opaque, the reason containing why. */
static void model_opaque(const node_model *nm, const char *why)
{
	fl_error err = {""};
	fl_onnx_info info;
	fl_graph *g = import(nm, &info, &err);

	if (!g)
		fail_msg("%s: %s", nm->op, err.msg);
	assert_int_equal(fl_onnx_info_custom_count(&info), 1);
	assert_non_null(info.types[0].reason);
	t_assert_contains(info.types[0].reason, why);
	fl_onnx_info_free(&info);
	fl_graph_free(g);
}

/* The model does not import; the error contains why. */
static void model_refused(const node_model *nm, const char *why)
{
	fl_error err = {""};
	fl_graph *g = import(nm, NULL, &err);

	assert_null(g);
	t_assert_contains(err.msg, why);
}

static tensor_spec input(const char *name, fl_shape s)
{
	return (tensor_spec){name, DT_FLOAT, s, NULL};
}

static tensor_spec floats(const char *name, fl_shape s, const float *v)
{
	return (tensor_spec){name, DT_FLOAT, s, v};
}

static tensor_spec ints(const char *name, fl_shape s, const int64_t *v)
{
	return (tensor_spec){name, DT_INT64, s, v};
}

/* ---- is_nan, is_inf --------------------------------------------------- */

/* The interpreter on the values a comparison gets wrong under fast
 * maths: NaNs of either sign and any payload, the infinities, and the
 * finite extremes next to them. */
static void test_ops_index_is_nan_inf_values(void **state)
{
	uint32_t nan_bits[3] = {0x7fc00000u, 0xffc00001u, 0x7f800001u};
	float x[8] = {0, 0, 0, INFINITY, -INFINITY, FLT_MAX, -0.0f, 1e-45f};
	static const int64_t nan_want[8] = {1, 1, 1, 0, 0, 0, 0, 0};
	static const int64_t inf_want[3][8] = {
		{0, 0, 0, 1, 1, 0, 0, 0},	/* both */
		{0, 0, 0, 1, 0, 0, 0, 0},	/* positive only */
		{0, 0, 0, 0, 1, 0, 0, 0},	/* negative only */
	};
	int64_t got[8];
	fl_buf in = {.shape = SH(8), .data = x};
	fl_buf out = {.shape = SH(8), .dtype = FL_BOOL, .ints = got};
	fl_op op;

	(void)state;
	memcpy(x, nan_bits, sizeof nan_bits);
	memset(&op, 0, sizeof op);
	op.n_in = op.n_out = 1;
	op.kind = FL_OP_IS_NAN;
	fl_op_eval(&op, &in, &out);
	assert_memory_equal(got, nan_want, sizeof got);
	op.kind = FL_OP_IS_INF;
	for (int c = 0; c < 3; c++) {
		assert_int_equal(fl_attrs_set_bool(&op.attrs, "positive",
						   c != 2), 0);
		assert_int_equal(fl_attrs_set_bool(&op.attrs, "negative",
						   c != 1), 0);
		fl_op_eval(&op, &in, &out);
		assert_memory_equal(got, inf_want[c], sizeof got);
	}
	fl_attrs_free(&op.attrs);
}

/* Both are bool-valued f32 tests: an integer input is refused, a bad
 * attribute named. */
static void test_ops_index_is_nan_inf_types(void **state)
{
	(void)state;
	t_load_fails("{\"format\":\"fuselab-graph/1\",\"tensors\":{"
		     "\"x\":{\"shape\":[4],\"dtype\":\"i32\",\"role\":\"input\"}},"
		     "\"ops\":[{\"name\":\"n\",\"op\":\"is_nan\",\"in\":[\"x\"],"
		     "\"out\":\"y\"}]}", "tests floats");
	t_load_fails("{\"format\":\"fuselab-graph/1\",\"tensors\":{"
		     "\"x\":{\"shape\":[4],\"role\":\"input\"}},"
		     "\"ops\":[{\"name\":\"n\",\"op\":\"is_inf\",\"in\":[\"x\"],"
		     "\"out\":\"y\",\"attrs\":{\"positive\":2}}]}",
		     "attrs.positive");
}

/* ONNX's tests feed NaNs and infinities: every strategy's kernels see
 * them; and compiled with -ffast-math (which folds x != x to false) the
 * kernels still find the NaNs. */
static void test_ops_index_is_nan_inf_onnx(void **state)
{
	(void)state;
	node_test_verifies("test_isnan");
	node_test_verifies("test_isinf_negative");
	node_test_verifies_with("test_isnan", "CC='cc -ffast-math'", "");
}

/* The CUDA source tests the bits too, and nvcc (when there is one)
 * compiles it. */
static void nvcc_compiles(const char *cu)
{
	char nvcc[512], dir[256], path[400], cmd[1400], *out = NULL;
	FILE *f;

	if (T_SANITIZED || !fl_nvcc_find(nvcc, sizeof nvcc))
		return;
	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/k.cu", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs(cu, f) >= 0);
	fclose(f);
	snprintf(cmd, sizeof cmd, "cd '%s' && '%s' " T_NVCC_CHECK " -o k.o "
		 "k.cu", dir, nvcc);
	if (t_run(cmd, &out) != 0)
		fail_msg("the CUDA does not compile:\n%.4000s", out);
	free(out);
	t_remove_dir(dir);
}

static void test_ops_index_is_nan_inf_cuda_text(void **state)
{
	fl_graph *g = t_load_q(
		"{'format':'fuselab-graph/1','name':'nan_inf','tensors':{"
		"'x':{'shape':[8,33],'role':'input'},"
		"'y':{'shape':[8,33],'dtype':'bool','role':'output'}},'ops':["
		"{'name':'a','op':'is_nan','in':['x'],'out':'a'},"
		"{'name':'b','op':'is_inf','in':['x'],'out':'b',"
		"'attrs':{'negative':false}},"
		"{'name':'c','op':'or','in':['a','b'],'out':'y'}]}");
	fl_session *s = t_cuda_codegen(g, FL_STRATEGY_UNFUSED, "nan_inf");
	const char *cu = fl_engine_source(s);

	(void)state;
	t_assert_contains(cu, "fl_isnan_bits(");
	t_assert_contains(cu, "fl_isinf_bits(");
	t_assert_contains(cu, ", 1, 0)");
	t_assert_contains(cu, "__float_as_uint(x)");
	nvcc_compiles(cu);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* ---- CastLike, EyeLike, OneHot ------------------------------------------ */

static void test_ops_index_cast_like_eye_like(void **state)
{
	(void)state;
	node_test_verifies("test_castlike_FLOAT_to_DOUBLE");
	node_test_verifies("test_eyelike_without_dtype");	/* int32 */
}

/* OneHot with depth and values known, indices negative and out of
 * range, along axis 0; then ONNX's test with all three at run time
 * (depth from the declared output shape). */
static void test_ops_index_one_hot(void **state)
{
	static const int64_t idx[3] = {1, -1, 5}, depth[1] = {3};
	static const float values[2] = {-2, 7};
	/* [depth, 3]: column j is one_hot(idx[j]) */
	static const double want[9] = {-2, -2, -2, 7, -2, -2, -2, 7, -2};
	node_model nm = {"OneHot", 3, 1, 1,
			 {ints("i", SH(3), idx), ints("d", SH(1), depth),
			  floats("v", SH(2), values)},
			 {input("y", SH(3, 3))}, {{"axis", NULL, 0}}};

	(void)state;
	model_values(&nm, "y", want, 9);
	node_test_verifies("test_onehot_negative_indices");
}

/* ---- Compress ----------------------------------------------------------- */

static void test_ops_index_compress(void **state)
{
	static const float x[6] = {1, 2, 3, 4, 5, 6};
	static const uint8_t keep_rows[3] = {0, 1, 1}, keep_flat[5] = {1, 0, 0,
									 1, 1};
	static const double rows[4] = {3, 4, 5, 6}, flat[3] = {1, 4, 5};
	node_model nm = {"Compress", 2, 1, 1,
			 {floats("x", SH(3, 2), x),
			  {"c", DT_BOOL, SH(3), keep_rows}},
			 {input("y", SH(2, 2))}, {{"axis", NULL, 0}}};

	(void)state;
	model_values(&nm, "y", rows, 4);
	nm.in[0] = input("x", SH(3, 2));
	model_every_strategy(&nm);
	/* no axis: the flattened input */
	nm.n_attr = 0;
	nm.in[0] = floats("x", SH(3, 2), x);
	nm.in[1] = (tensor_spec){"c", DT_BOOL, SH(5), keep_flat};
	nm.out[0] = input("y", SH(3));
	model_values(&nm, "y", flat, 3);
	/* a condition known only at run time */
	nm.in[1] = (tensor_spec){"c", DT_BOOL, SH(5), NULL};
	model_opaque(&nm, "condition computed at run time");
}

/* ---- TopK --------------------------------------------------------------- */

/* Ties go to the lower index, for the largest and the smallest. */
static void test_ops_index_top_k(void **state)
{
	static const float x[8] = {3, 1, 3, 2, -1, 5, 5, 5};
	static const int64_t k[1] = {3};
	static const double large_v[6] = {3, 3, 2, 5, 5, 5};
	static const double large_i[6] = {0, 2, 3, 1, 2, 3};
	static const double small_v[6] = {1, 2, 3, -1, 5, 5};
	static const double small_i[6] = {1, 3, 0, 0, 1, 2};
	node_model nm = {"TopK", 2, 2, 1,
			 {floats("x", SH(2, 4), x), ints("k", SH(1), k)},
			 {input("v", SH(2, 3)),
			  {"i", DT_INT64, SH(2, 3), NULL}},
			 {{"largest", NULL, 1}}};

	(void)state;
	model_values(&nm, "v", large_v, 6);
	model_values(&nm, "i", large_i, 6);
	nm.attr[0].i = 0;
	model_values(&nm, "v", small_v, 6);
	model_values(&nm, "i", small_i, 6);
	nm.in[0] = input("x", SH(3, 17, 2));
	nm.out[0] = input("v", SH(3, 3, 2));
	nm.out[1].shape = SH(3, 3, 2);
	nm.attr[0] = (attr_spec){"axis", NULL, 1};
	model_every_strategy(&nm);
	node_test_verifies("test_top_k_smallest");
}

/* ---- ReverseSequence ---------------------------------------------------- */

static void test_ops_index_reverse_sequence(void **state)
{
	/* x [time 3, batch 2]: column b reversed over its first len_b rows */
	static const float x[6] = {1, 10, 2, 20, 3, 30};
	static const int64_t lens[2] = {2, 3};
	static const double want[6] = {2, 30, 1, 20, 3, 10};
	node_model nm = {"ReverseSequence", 2, 1, 0,
			 {floats("x", SH(3, 2), x), ints("l", SH(2), lens)},
			 {input("y", SH(3, 2))}, {{0}}};

	(void)state;
	model_values(&nm, "y", want, 6);
	node_test_verifies("test_reversesequence_batch");
}

/* ---- Det ---------------------------------------------------------------- */

static void test_ops_index_det(void **state)
{
	static const float m3[9] = {2, -1, 0, 1, 3, 4, 0, 5, -2};
	static const float m4[16] = {1, 2, 0, 1, 0, 1, 3, 0, 2, 0, 1, 1,
				     1, 1, 0, 2};
	static const double d3[1] = {-54}, d4[1] = {16};
	node_model nm = {"Det", 1, 1, 0, {floats("x", SH(3, 3), m3)},
			 {input("y", SH(1))}, {{0}}};

	(void)state;
	nm.out[0].shape.rank = 0;
	model_values(&nm, "y", d3, 1);
	nm.in[0] = floats("x", SH(4, 4), m4);
	model_values(&nm, "y", d4, 1);
	nm.in[0] = input("x", SH(2, 4, 4));
	nm.out[0] = input("y", SH(2));
	model_every_strategy(&nm);
	nm.in[0] = input("x", SH(5, 5));
	nm.out[0].shape.rank = 0;
	model_opaque(&nm, "5x5 determinant");
	node_test_verifies("test_det_nd");
}

/* ---- Einsum ------------------------------------------------------------- */

typedef struct einsum_case {
	const char *eq;
	fl_shape a, b, y;	/* b.rank < 0: one operand */
	double want[16];
} einsum_case;

/* a = 1, 2, 3, ... and b = -1, 0.5, 2, -1, 0.5, 2, ... in their shapes */
static void test_ops_index_einsum_values(void **state)
{
	const einsum_case cases[] = {
		{"ij,jk->ik", SH(2, 3), SH(3, 2), SH(2, 2),
		 {4.5, 4.5, 9, 9}},				/* matmul */
		{"ij,jk", SH(2, 3), SH(3, 2), SH(2, 2),
		 {4.5, 4.5, 9, 9}},				/* implicit */
		{"bij,bkj->bik", SH(1, 2, 2), SH(1, 2, 2), SH(1, 2, 2),
		 {0, 0, -1, 2}},			/* transposed batch */
		{"i,j->ij", SH(2), SH(3), SH(2, 3),
		 {-1, 0.5, 2, -2, 1, 4}},			/* outer */
		{"i,i", SH(3), SH(3), SH(1), {6}},		/* dot */
		{"ij->ji", SH(2, 3), {.rank = -1}, SH(3, 2),
		 {1, 4, 2, 5, 3, 6}},				/* transpose */
		{"ij->j", SH(2, 3), {.rank = -1}, SH(3), {5, 7, 9}},
		{"ii->", SH(3, 3), {.rank = -1}, SH(1), {15}},	/* trace */
		{"...ij,...jk->...ik", SH(1, 2, 3), SH(1, 3, 2), SH(1, 2, 2),
		 {4.5, 4.5, 9, 9}},				/* ellipsis */
		{"ij,ij->ij", SH(2, 2), SH(2, 2), SH(2, 2),
		 {-1, 1, 6, -4}},				/* product */
	};
	float a[16], b[16];

	(void)state;
	for (int i = 0; i < 16; i++) {
		a[i] = (float)(i + 1);
		b[i] = i % 3 == 0 ? -1 : i % 3 == 1 ? 0.5f : 2;
	}
	for (int c = 0; c < COUNT(cases); c++) {
		const einsum_case *e = &cases[c];
		node_model nm = {"Einsum", e->b.rank < 0 ? 1 : 2, 1, 1,
				 {floats("a", e->a, a), floats("b", e->b, b)},
				 {input("y", e->y)}, {{"equation", e->eq, 0}}};

		if (e->y.dim[0] == 1 && e->y.rank == 1 &&
		    !strchr(e->eq, 'b') && !strchr(e->eq, '.'))
			nm.out[0].shape.rank = 0;	/* a scalar */
		model_values(&nm, "y", e->want, fl_shape_numel(&nm.out[0].shape));
	}
}

/* A batched, transposed contraction with an ellipsis under every
 * strategy; three operands stay opaque naming the equation; a letter no
 * operand has is an error. */
static void test_ops_index_einsum_forms(void **state)
{
	node_model nm = {"Einsum", 2, 1, 1,
			 {input("a", SH(3, 5, 4)), input("b", SH(3, 5, 6))},
			 {input("y", SH(3, 4, 6))},
			 {{"equation", "...ji,...jk->...ik", 0}}};

	(void)state;
	model_every_strategy(&nm);
	nm.n_in = 3;
	nm.in[2] = input("c", SH(6, 2));
	nm.out[0] = input("y", SH(3, 4, 2));
	nm.attr[0].s = "bji,bjk,kl->bil";
	model_opaque(&nm, "equation \"bji,bjk,kl->bil\"");
	nm.n_in = 2;
	nm.attr[0].s = "bji,bjk->bix";
	model_refused(&nm, "an output letter no operand has");
	node_test_verifies("test_einsum_batch_diagonal");
}

FL_SUITE(ops_index,
	 cmocka_unit_test(test_ops_index_is_nan_inf_values),
	 cmocka_unit_test(test_ops_index_is_nan_inf_types),
	 cmocka_unit_test(test_ops_index_is_nan_inf_onnx),
	 cmocka_unit_test(test_ops_index_is_nan_inf_cuda_text),
	 cmocka_unit_test(test_ops_index_cast_like_eye_like),
	 cmocka_unit_test(test_ops_index_one_hot),
	 cmocka_unit_test(test_ops_index_compress),
	 cmocka_unit_test(test_ops_index_top_k),
	 cmocka_unit_test(test_ops_index_reverse_sequence),
	 cmocka_unit_test(test_ops_index_det),
	 cmocka_unit_test(test_ops_index_einsum_values),
	 cmocka_unit_test(test_ops_index_einsum_forms));
