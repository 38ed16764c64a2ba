/* ONNX import (onnx_import.h): backend-test models load with the right
 * shapes and ops, hand-made models check real data, folding, custom
 * ops, provenance, --input-shape and the errors of bad files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "interp.h"
#include "onnx.pb-c.h"
#include "onnx.h"
#include "onnx_import.h"
#include "onnx_tensor.h"
#include "test_util.h"

#define TESTDATA "/usr/share/libonnx-testdata/data"
#define MAXN 12

/* A model built in memory from protobuf-c structs (static storage, no
 * allocation), packed with onnx__model_proto__pack. */
typedef struct model {
	Onnx__ModelProto m;
	Onnx__GraphProto g;
	Onnx__OperatorSetIdProto opset, *opsets[1];
	Onnx__NodeProto node[MAXN], *nodes[MAXN];
	char *node_in[MAXN][4], *node_out[MAXN][2];
	Onnx__AttributeProto attr[MAXN], *attrs[MAXN][1];
	Onnx__ValueInfoProto vi[MAXN], *ins[MAXN], *outs[MAXN];
	Onnx__TypeProto tp[MAXN];
	Onnx__TypeProto__Tensor tt[MAXN];
	Onnx__TensorShapeProto sp[MAXN];
	Onnx__TensorShapeProto__Dimension dim[MAXN][FL_MAX_RANK + 2];
	Onnx__TensorShapeProto__Dimension *dims[MAXN][FL_MAX_RANK + 2];
	Onnx__TensorProto init[MAXN], *inits[MAXN];
	int n_vi;
} model;

static void model_init(model *b, int64_t opset)
{
	memset(b, 0, sizeof *b);
	onnx__model_proto__init(&b->m);
	onnx__graph_proto__init(&b->g);
	onnx__operator_set_id_proto__init(&b->opset);
	b->opset.domain = "";
	b->opset.has_version = 1;
	b->opset.version = opset;
	b->opsets[0] = &b->opset;
	b->m.has_ir_version = 1;
	b->m.ir_version = 8;
	b->m.producer_name = "fuselab-test";
	b->m.n_opset_import = 1;
	b->m.opset_import = b->opsets;
	b->m.graph = &b->g;
	b->g.name = "handmade";
	b->g.node = b->nodes;
	b->g.input = b->ins;
	b->g.output = b->outs;
	b->g.initializer = b->inits;
}

/* A float tensor value; dims[d] == 0 is dynamic ("N"). */
static Onnx__ValueInfoProto *value(model *b, const char *name,
				   const int64_t *dims, int rank)
{
	int k = b->n_vi++;

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
	b->sp[k].n_dim = (size_t)rank;
	b->sp[k].dim = b->dims[k];
	for (int d = 0; d < rank; d++) {
		Onnx__TensorShapeProto__Dimension *x = &b->dim[k][d];

		onnx__tensor_shape_proto__dimension__init(x);
		if (dims[d]) {
			x->value_case =
			      ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			x->dim_value = dims[d];
		} else {
			x->value_case =
			      ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			x->dim_param = "N";
		}
		b->dims[k][d] = x;
	}
	return &b->vi[k];
}

static void input(model *b, const char *name, const int64_t *dims, int rank)
{
	b->ins[b->g.n_input++] = value(b, name, dims, rank);
}

static void output(model *b, const char *name, const int64_t *dims, int rank)
{
	b->outs[b->g.n_output++] = value(b, name, dims, rank);
}

/* Node k: op_type on up to 4 inputs (NULL ends them) into out. */
static Onnx__NodeProto *node(model *b, const char *op, const char *name,
			     const char *const *in, const char *out)
{
	int k = (int)b->g.n_node++;
	Onnx__NodeProto *n = &b->node[k];

	onnx__node_proto__init(n);
	n->op_type = (char *)op;
	n->name = (char *)name;
	for (; in && in[n->n_input]; n->n_input++)
		b->node_in[k][n->n_input] = (char *)in[n->n_input];
	n->input = b->node_in[k];
	b->node_out[k][0] = (char *)out;
	n->n_output = 1;
	n->output = b->node_out[k];
	b->nodes[k] = n;
	return n;
}

/* One attribute on the last node. */
static Onnx__AttributeProto *attr(model *b, const char *name)
{
	int k = (int)b->g.n_node - 1;
	Onnx__AttributeProto *a = &b->attr[k];

	onnx__attribute_proto__init(a);
	a->name = (char *)name;
	b->attrs[k][0] = a;
	b->node[k].n_attribute = 1;
	b->node[k].attribute = b->attrs[k];
	return a;
}

static void initializer(model *b, const char *name, int dtype, int64_t *dims,
			int rank, float *f, int64_t *i, size_t n)
{
	Onnx__TensorProto *t = &b->init[b->g.n_initializer];

	onnx__tensor_proto__init(t);
	t->name = (char *)name;
	t->has_data_type = 1;
	t->data_type = dtype;
	t->n_dims = (size_t)rank;
	t->dims = dims;
	if (f) {
		t->n_float_data = n;
		t->float_data = f;
	} else {
		t->n_int64_data = n;
		t->int64_data = i;
	}
	b->inits[b->g.n_initializer++] = t;
}

static uint8_t *pack(const model *b, size_t *len)
{
	uint8_t *buf;

	*len = onnx__model_proto__get_packed_size(&b->m);
	buf = malloc(*len + 1);
	assert_non_null(buf);
	onnx__model_proto__pack(&b->m, buf);
	return buf;
}

static fl_graph *load(const model *b, const fl_onnx_import_opts *o,
		      fl_onnx_info *info, fl_error *err)
{
	size_t len;
	uint8_t *buf = pack(b, &len);
	fl_graph *g = fl_onnx_load_bytes(buf, len, "m.onnx", NULL, o, info, err);

	free(buf);
	return g;
}

static void expect_error(const model *b, const char *want);

static void write_model(const model *b, const char *path)
{
	size_t len;
	uint8_t *buf = pack(b, &len);
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
}

static int count_kind(const fl_graph *g, fl_op_kind kind)
{
	int n = 0;

	for (int i = 0; i < g->n_ops; i++)
		n += g->ops[i].kind == kind;
	return n;
}

static const fl_tensor *tensor(const fl_graph *g, const char *name)
{
	int t = fl_graph_find_tensor(g, name);

	assert_true(t >= 0);
	return &g->tensors[t];
}

static void assert_shape(const fl_tensor *t, int rank, const int64_t *dims)
{
	assert_int_equal(t->shape.rank, rank);
	for (int d = 0; d < rank; d++)
		assert_int_equal(t->shape.dim[d], dims[d]);
}

/* --- backend-test models --- */

static fl_graph *load_backend(const char *test, fl_onnx_info *info)
{
	char path[512];
	fl_error err = {{0}};
	fl_graph *g;

	snprintf(path, sizeof path, TESTDATA "/node/%s/model.onnx", test);
	g = fl_onnx_load_file(path, NULL, info, &err);
	if (!g)
		fail_msg("%s", err.msg);
	return g;
}

static void test_onnx_import_backend_conv_and_pool(void **state)
{
	fl_graph *g;

	(void)state;
	/* pads 1 around a 5x5 image: an explicit pad, then conv2d */
	g = load_backend("test_basic_conv_with_padding", NULL);
	assert_int_equal(count_kind(g, FL_OP_PAD), 1);
	assert_int_equal(count_kind(g, FL_OP_CONV2D), 1);
	assert_shape(tensor(g, "y"), 4, (int64_t[]){1, 1, 5, 5});
	assert_int_equal(tensor(g, "x")->role, FL_ROLE_INPUT);
	assert_int_equal(tensor(g, "y")->role, FL_ROLE_OUTPUT);
	fl_graph_free(g);
	/* strides 2 with pads: [1,1,7,5] -> [1,1,4,3] */
	g = load_backend("test_conv_with_strides_padding", NULL);
	assert_shape(tensor(g, "y"), 4, (int64_t[]){1, 1, 4, 3});
	fl_graph_free(g);
	/* count_include_pad 0: the padded mean over a mean of ones */
	g = load_backend("test_averagepool_2d_pads", NULL);
	assert_int_equal(count_kind(g, FL_OP_POOL2D), 2);
	assert_int_equal(count_kind(g, FL_OP_DIV), 1);
	assert_shape(tensor(g, "y"), 4, (int64_t[]){1, 3, 30, 30});
	fl_graph_free(g);
}

/* Gather with indices fed at run time: a negative index is wrapped by
 * where(i < 0, i + extent, i) on a bool condition -- not a number's
 * truth through relu(-i), which ONNX Runtime cannot run on the int64
 * indices of an exported model (every transformer's embedding). */
static void test_onnx_import_gather_wraps_by_bool(void **state)
{
	fl_graph *g;

	(void)state;
	g = load_backend("test_gather_0", NULL);
	assert_int_equal(count_kind(g, FL_OP_RELU), 0);
	assert_int_equal(count_kind(g, FL_OP_LESS), 1);
	for (int i = 0; i < g->n_ops; i++)
		if (g->ops[i].kind == FL_OP_WHERE)
			assert_int_equal(g->tensors[g->ops[i].in[0]].dtype,
					 FL_BOOL);
	assert_int_equal(count_kind(g, FL_OP_WHERE), 1);
	fl_graph_free(g);
}

static void test_onnx_import_backend_gemm_reduce_transpose(void **state)
{
	fl_onnx_info info;
	fl_graph *g;

	(void)state;
	g = load_backend("test_gemm_all_attributes", &info);
	assert_int_equal(count_kind(g, FL_OP_MATMUL), 1);
	assert_int_equal(count_kind(g, FL_OP_ADD), 1);
	assert_true(count_kind(g, FL_OP_MUL) >= 1);	/* alpha, beta */
	assert_int_equal(info.n_types, 1);
	assert_string_equal(info.types[0].op_type, "Gemm");
	assert_true(info.types[0].uses[FL_OP_MATMUL]);
	assert_int_equal(info.n_opsets, 1);
	assert_string_equal(info.producer_name, "backend-test");
	fl_onnx_info_free(&info);
	fl_graph_free(g);
	/* keepdims 0: reduce_mean keeps a unit dim, a reshape drops it */
	g = load_backend("test_reduce_mean_do_not_keepdims_example", NULL);
	assert_int_equal(count_kind(g, FL_OP_REDUCE_MEAN), 1);
	assert_int_equal(count_kind(g, FL_OP_RESHAPE), 1);
	assert_shape(tensor(g, "reduced"), 2, (int64_t[]){3, 2});
	fl_graph_free(g);
	g = load_backend("test_transpose_default", NULL);
	assert_int_equal(count_kind(g, FL_OP_TRANSPOSE), 1);
	assert_shape(tensor(g, "transposed"), 3, (int64_t[]){4, 3, 2});
	fl_graph_free(g);
	g = load_backend("test_batchnorm_example", NULL);
	assert_int_equal(count_kind(g, FL_OP_BATCHNORM), 1);
	fl_graph_free(g);
}

/* A dozen node tests across op families, and two PyTorch-converted ones
 * (opset 6), imported and interpreted on the test's own inputs, compared
 * with its expected outputs at ONNX's tolerances (--inputs, --expect). */
static void test_onnx_import_backend_outputs_match(void **state)
{
	static const char *const tests[] = {
		"node/test_add_bcast", "node/test_clip_splitbounds",
		"node/test_gemm_all_attributes", "node/test_matmul_4d",
		"node/test_conv_with_strides_and_asymmetric_padding",
		"node/test_averagepool_2d_pads",
		"node/test_maxpool_2d_same_lower",
		"node/test_reduce_mean_do_not_keepdims_random",
		"node/test_logsoftmax_axis_1", "node/test_softmax_axis_0",
		"node/test_flatten_negative_axis2", "node/test_gather_2d_indices",
		"node/test_gather_negative_indices",
		"node/test_transpose_all_permutations_4",
		"node/test_batchnorm_epsilon", "node/test_hardswish",
		"node/test_layer_normalization_4d_axis1_expanded",
		"node/test_concat_3d_axis_negative_2", "node/test_where_example",
		"pytorch-converted/test_Conv2d_groups",
		"pytorch-converted/test_ELU", "node/test_hardsigmoid",
		"node/test_instancenorm_epsilon", "node/test_prelu_broadcast",
		"node/test_reduce_l2_do_not_keepdims_random",
		"node/test_reduce_log_sum_exp_keepdims_random",
		"node/test_selu", "node/test_softplus", "node/test_softsign",
		"node/test_split_equal_parts_2d",
	};

	(void)state;
	for (size_t k = 0; k < sizeof tests / sizeof tests[0]; k++) {
		char args[2048], dir[512];
		char *out;

		snprintf(dir, sizeof dir, TESTDATA "/%s", tests[k]);
		snprintf(args, sizeof args, "--batch --interpret --inputs "
			 "%s/test_data_set_0 --expect %s/test_data_set_0 "
			 "%s/model.onnx", dir, dir, dir);
		if (t_fuselab(args, &out) != 0)
			fail_msg("%s:\n%s", tests[k], out);
		t_assert_contains(out, ": ok (max abs error");
		free(out);
	}
}

/* The repository's real PyTorch export (Gemm, decomposed LayerNorm, a
 * dynamic batch): PyTorch's own outputs, and every strategy verified. */
static void test_onnx_import_torch_export(void **state)
{
	char args[2048], dir[512];
	char *out;

	(void)state;
	snprintf(dir, sizeof dir, "%s/tests/models/torch_mlp_layernorm",
		 t_repo_root());
	snprintf(args, sizeof args, "--batch --interpret --input-shape x=4,32 "
		 "--inputs %s/test_data_set_0 --expect %s/test_data_set_0 "
		 "%s/model.onnx", dir, dir, dir);
	assert_int_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "expect y [4,32]: ok");
	free(out);
	/* every strategy's kernels on it: the conformance subset
	 * (tests/conformance-subset.txt, models/torch_mlp_layernorm) */
}

/* --- hand-made models --- */

/* y = relu(W + c): W an initializer, c a Constant node; the interpreter
 * sees their real values. */
static void test_onnx_import_constants_keep_real_data(void **state)
{
	static int64_t wd[] = {2, 3}, cd[] = {3};
	static float w[] = {1, -2, 3, -4, 5, -6}, cv[] = {0.5f, 1, -1};
	const float want[] = {1.5f, 0, 2, 0, 6, 0};
	Onnx__TensorProto ct = ONNX__TENSOR_PROTO__INIT;
	fl_interp_opts io;
	fl_error err = {{0}};
	fl_values *v;
	model b;
	fl_graph *g;
	int y;

	(void)state;
	fl_interp_opts_default(&io);
	model_init(&b, 13);
	initializer(&b, "W", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, wd, 2, w,
		    NULL, 6);
	node(&b, "Constant", "c", NULL, "cval");
	ct.has_data_type = 1;
	ct.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	ct.n_dims = 1;
	ct.dims = cd;
	ct.n_float_data = 3;
	ct.float_data = cv;
	attr(&b, "value")->t = &ct;
	node(&b, "Add", "add", (const char *[]){"W", "cval", NULL}, "s");
	node(&b, "Relu", "relu", (const char *[]){"s", NULL}, "y");
	output(&b, "y", wd, 2);
	g = load(&b, NULL, NULL, &err);
	assert_non_null(g);
	assert_int_equal(tensor(g, "W")->role, FL_ROLE_CONST);
	assert_int_equal(tensor(g, "W")->n_data, 6);
	v = fl_interp_run(g, &io, &err);
	assert_non_null(v);
	y = fl_graph_find_tensor(g, "y");
	t_assert_close(v->bufs[y].data, want, 6, 0, 0);
	fl_values_free(v);
	fl_graph_free(g);
}

/* x.reshape(x.shape[0], -1) as exporters write it: Shape, Gather,
 * Unsqueeze, Concat feed Reshape; all folded, one reshape op left, and
 * the int64 constants never become tensors. */
static void test_onnx_import_folds_shape_subgraph(void **state)
{
	static int64_t xd[] = {2, 3, 4}, yd[] = {2, 12}, one[] = {1};
	static int64_t zero = 0, minus1 = -1;
	fl_error err = {{0}};
	fl_onnx_info info;
	model b;
	fl_graph *g;

	(void)state;
	model_init(&b, 13);
	input(&b, "x", xd, 3);
	initializer(&b, "i0", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, NULL, 0,
		    NULL, &zero, 1);
	initializer(&b, "ax", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, one, 1,
		    NULL, &zero, 1);
	initializer(&b, "m1", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, one, 1,
		    NULL, &minus1, 1);
	node(&b, "Shape", "shape", (const char *[]){"x", NULL}, "s");
	node(&b, "Gather", "g0", (const char *[]){"s", "i0", NULL}, "n");
	node(&b, "Unsqueeze", "u", (const char *[]){"n", "ax", NULL}, "n1");
	node(&b, "Concat", "cat", (const char *[]){"n1", "m1", NULL}, "dims");
	attr(&b, "axis")->i = 0;
	b.attr[3].has_i = 1;
	node(&b, "Reshape", "flat", (const char *[]){"x", "dims", NULL}, "y");
	output(&b, "y", yd, 2);
	g = load(&b, NULL, &info, &err);
	if (!g)
		fail_msg("%s", err.msg);
	assert_int_equal(g->n_ops, 1);
	assert_int_equal(g->ops[0].kind, FL_OP_RESHAPE);
	assert_shape(tensor(g, "y"), 2, yd);
	assert_true(fl_graph_find_tensor(g, "i0") < 0);
	assert_true(fl_graph_find_tensor(g, "dims") < 0);
	assert_int_equal(info.types[0].folded, 1);	/* Shape */
	assert_int_equal(info.types[4].folded, 0);	/* Reshape: an op */
	fl_onnx_info_free(&info);
	fl_graph_free(g);
}

/* Tile with known repeats: a unit dim broadcasts, another is joined to
 * itself; the values follow numpy's tile. */
static void test_onnx_import_tile(void **state)
{
	static int64_t xd[] = {2, 1}, yd[] = {4, 3}, two[] = {2};
	static int64_t reps[] = {2, 3};
	static float x[] = {1, 2};
	const float want[] = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2};
	fl_interp_opts io;
	fl_error err = {{0}};
	fl_values *v;
	fl_graph *g;
	model b;

	(void)state;
	fl_interp_opts_default(&io);
	model_init(&b, 13);
	initializer(&b, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, xd, 2, x,
		    NULL, 2);
	initializer(&b, "reps", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, two, 1,
		    NULL, reps, 2);
	node(&b, "Tile", "t", (const char *[]){"x", "reps", NULL}, "y");
	output(&b, "y", yd, 2);
	g = load(&b, NULL, NULL, &err);
	if (!g)
		fail_msg("%s", err.msg);
	assert_int_equal(count_kind(g, FL_OP_CONCAT), 1);
	assert_int_equal(count_kind(g, FL_OP_BROADCAST_TO), 1);
	v = fl_interp_run(g, &io, &err);
	assert_non_null(v);
	t_assert_close(v->bufs[fl_graph_find_tensor(g, "y")].data, want, 12,
		       0, 0);
	fl_values_free(v);
	fl_graph_free(g);
}

/* Float data cast to int64 may index a Gather (as exporters write it)
 * but not reach a float op, nor be cast again. */
static void test_onnx_import_cast_to_index(void **state)
{
	static int64_t xd[] = {3}, td[] = {4, 2}, yd[] = {3, 2};
	static float table[] = {0, 1, 2, 3, 4, 5, 6, 7};
	fl_error err = {{0}};
	Onnx__AttributeProto *to;
	fl_graph *g;
	model b;

	(void)state;
	model_init(&b, 13);
	input(&b, "x", xd, 1);
	initializer(&b, "table", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, td, 2,
		    table, NULL, 8);
	node(&b, "Cast", "c", (const char *[]){"x", NULL}, "i");
	to = attr(&b, "to");
	to->has_i = 1;
	to->i = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
	node(&b, "Gather", "g", (const char *[]){"table", "i", NULL}, "y");
	output(&b, "y", yd, 2);
	g = load(&b, NULL, NULL, &err);
	if (!g)
		fail_msg("%s", err.msg);
	assert_int_equal(count_kind(g, FL_OP_GATHER), 1);
	fl_graph_free(g);

	/* an op computing in float refuses the integers (docs/types.md) */
	b.node[1].op_type = "Exp";
	b.node[1].n_input = 1;
	b.node_in[1][0] = "i";
	expect_error(&b, "node g (Exp): exp: in[0]: exp computes in f32");
}

/* Samples exported with --export-onnx and imported back compute what
 * the JSON graph computes (Round, Cast to bool for where, quantize). */
static void test_onnx_import_reads_exported_samples(void **state)
{
	static const char *const samples[] = {"micro2020_fig1", "softmax",
					      "unsharp_mask"};
	char dir[64], path[128], args[512];

	(void)state;
	if (T_SANITIZED)	/* in process: test_onnx_round_trip_every_sample */
		return;
	t_make_dir(dir, sizeof dir);
	for (size_t k = 0; k < sizeof samples / sizeof samples[0]; k++) {
		char *json, *onnx, *hj, *ho;

		snprintf(path, sizeof path, "%s/%s.onnx", dir, samples[k]);
		snprintf(args, sizeof args, "--batch --export-onnx %s %s/%s.json",
			 path, t_samples_dir(), samples[k]);
		assert_int_equal(t_fuselab(args, &json), 0);
		free(json);
		snprintf(args, sizeof args, "--batch --interpret %s/%s.json",
			 t_samples_dir(), samples[k]);
		assert_int_equal(t_fuselab(args, &json), 0);
		snprintf(args, sizeof args, "--batch --interpret %s", path);
		assert_int_equal(t_fuselab(args, &onnx), 0);
		hj = strstr(json, "hash=");
		ho = strstr(onnx, "hash=");
		assert_non_null(hj);
		assert_non_null(ho);
		if (strncmp(hj, ho, 21))
			fail_msg("%s: %.21s vs %.21s", samples[k], hj, ho);
		free(json);
		free(onnx);
	}
	t_remove_dir(dir);
}

/* An op fuselab does not know becomes custom; its provenance and the
 * summary say so; the other ops keep their node's name and type. */
static void test_onnx_import_custom_and_provenance(void **state)
{
	static int64_t xd[] = {4, 5};
	fl_error err = {{0}};
	fl_onnx_info info;
	model b;
	fl_graph *g;
	int i;

	(void)state;
	model_init(&b, 13);
	input(&b, "x", xd, 2);
	node(&b, "LpNormalization", "fl", (const char *[]){"x", NULL}, "f");
	node(&b, "Tanh", NULL, (const char *[]){"f", NULL}, "y");
	output(&b, "y", xd, 2);
	g = load(&b, NULL, &info, &err);
	if (!g)
		fail_msg("%s", err.msg);
	assert_int_equal(count_kind(g, FL_OP_CUSTOM), 1);
	assert_int_equal(fl_onnx_info_custom_count(&info), 1);
	assert_string_equal(info.types[0].op_type, "LpNormalization");
	assert_int_equal(info.types[0].custom, 1);
	i = fl_graph_find_op(g, "fl");
	assert_true(i >= 0);
	assert_string_equal(g->ops[i].prov.source_op, "LpNormalization");
	i = fl_graph_find_op(g, "Tanh_1");	/* a node without a name */
	assert_true(i >= 0);
	assert_string_equal(g->ops[i].prov.origin, "Tanh_1");
	assert_string_equal(g->ops[i].prov.source_op, "Tanh");
	fl_onnx_info_free(&info);
	fl_graph_free(g);
}

/* The model of test_onnx_import_opaque_ops: x[N,3,8,8] -> Relu r ->
 * Resize (scales 1,1,2,2; tf_crop_and_resize) up -> Tanh t -> ArgMax am
 * (int64 output, computed: docs/types.md);
 * TopK on t with two outputs, the second never read, its k a graph input
 * (known at run time only, and the declared output shape has the
 * symbolic N: opaque); If on a bool input
 * whose branch reads r from the outer graph, its output's shape in
 * value_info with the symbolic N -> Sigmoid bo. */
static void opaque_model(model *b, Onnx__GraphProto *then_g,
			 Onnx__NodeProto *then_n, Onnx__NodeProto **then_nodes,
			 Onnx__ValueInfoProto **vis)
{
	static int64_t xd[] = {0, 3, 8, 8}, upd[] = {0, 3, 16, 16};
	static int64_t amd[] = {0, 1, 16, 16}, tvd[] = {0, 3, 16, 4};
	static int64_t sd[] = {4}, kd[] = {1};
	static float scales[] = {1, 1, 2, 2};
	static char *then_in[] = {"r"}, *then_out[] = {"o"};
	Onnx__AttributeProto *a;
	Onnx__NodeProto *n;

	model_init(b, 13);
	input(b, "x", xd, 4);
	input(b, "cond", NULL, 0);
	b->tt[1].elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
	initializer(b, "scales", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, sd, 1,
		    scales, NULL, 4);
	input(b, "k", kd, 1);
	b->tt[b->n_vi - 1].elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
	node(b, "Relu", "relu", (const char *[]){"x", NULL}, "r");
	node(b, "Resize", "up", (const char *[]){"r", "", "scales", NULL},
	     "up");
	/* a form fuselab does not compute: kept as an opaque op */
	a = attr(b, "coordinate_transformation_mode");
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
	a->has_s = 1;
	a->s.data = (uint8_t *)"tf_crop_and_resize";
	a->s.len = strlen("tf_crop_and_resize");
	node(b, "Tanh", "tanh", (const char *[]){"up", NULL}, "t");
	node(b, "ArgMax", "am", (const char *[]){"t", NULL}, "am");
	a = attr(b, "axis");
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	a->has_i = 1;
	a->i = 1;
	n = node(b, "TopK", "topk", (const char *[]){"t", "k", NULL}, "tv");
	b->node_out[b->g.n_node - 1][1] = "ti";
	n->n_output = 2;
	/* the branch: o = Identity(r), r from the outer graph */
	onnx__graph_proto__init(then_g);
	onnx__node_proto__init(then_n);
	then_n->op_type = "Identity";
	then_n->n_input = 1;
	then_n->input = then_in;
	then_n->n_output = 1;
	then_n->output = then_out;
	then_g->name = "then";
	then_g->n_node = 1;
	then_nodes[0] = then_n;
	then_g->node = then_nodes;
	node(b, "If", "iff", (const char *[]){"cond", NULL}, "branch");
	a = attr(b, "then_branch");
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
	a->g = then_g;
	node(b, "Sigmoid", "sig", (const char *[]){"branch", NULL}, "bo");
	output(b, "t", upd, 4);
	output(b, "am", amd, 4);
	b->tt[b->n_vi - 1].elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
	output(b, "tv", tvd, 4);
	output(b, "bo", xd, 4);
	vis[0] = value(b, "branch", xd, 4);
	b->g.n_value_info = 1;
	b->g.value_info = vis;
}

static const fl_op *op_named(const fl_graph *g, const char *name)
{
	int i = fl_graph_find_op(g, name);

	if (i < 0)
		fail_msg("no op %s", name);
	return &g->ops[i];
}

/* Operators fuselab cannot model become opaque custom ops: one per output
 * read later, shaped by the model's declarations (symbolic dims from
 * --input-shape) or by fuselab's rules (Resize); control flow
 * reads the outer values of its branches.  The graph partitions and
 * generates its kernels' code to read, but the interpreter, the compile
 * pass and the ONNX export refuse it, naming the op. */
static void test_onnx_import_opaque_ops(void **state)
{
	static const int64_t up_shape[] = {2, 3, 16, 16};
	Onnx__GraphProto then_g;
	Onnx__NodeProto then_n, *then_nodes[1];
	Onnx__ValueInfoProto *vis[1];
	fl_onnx_input_shape shape = {"x", {4, {2, 3, 8, 8}}};
	fl_onnx_import_opts o = {1, &shape, 0, NULL};
	fl_error err = {{0}};
	fl_onnx_info info;
	fl_engine_opts eo;
	fl_session *ses;
	const fl_program *p;
	const fl_op *op;
	model b;
	fl_graph *g;
	uint8_t *bytes;
	size_t len;
	bool said = false;

	(void)state;
	opaque_model(&b, &then_g, &then_n, then_nodes, vis);
	g = load(&b, &o, &info, &err);
	if (!g)
		fail_msg("%s", err.msg);
	assert_int_equal(count_kind(g, FL_OP_CUSTOM), 3);
	assert_int_equal(fl_onnx_info_custom_count(&info), 3);
	op = op_named(g, "up");
	assert_string_equal(op->prov.source_op, "Resize");
	assert_int_equal(op->n_in, 2);	/* r and the scales; no roi */
	assert_false(fl_op_computable(op));
	assert_shape(tensor(g, "up"), 4, up_shape);
	assert_shape(tensor(g, "am"), 4, (const int64_t[]){2, 1, 16, 16});
	assert_int_equal(tensor(g, "am")->dtype, FL_I64);
	assert_shape(tensor(g, "tv"), 4, (const int64_t[]){2, 3, 16, 4});
	assert_int_equal(fl_graph_find_tensor(g, "ti"), -1);
	op = op_named(g, "iff");
	assert_int_equal(op->n_in, 2);	/* cond, and r read by the branch */
	assert_string_equal(g->tensors[op->in[1]].name, "r");
	assert_shape(tensor(g, "branch"), 4, (const int64_t[]){2, 3, 8, 8});

	assert_null(fl_interp_run(g, NULL, &err));
	t_assert_contains(err.msg, "cannot interpret: op \"up\" (ONNX Resize) "
			  "is an opaque custom op");
	assert_int_equal(fl_export_onnx_bytes(g, &bytes, &len, &err), -1);
	t_assert_contains(err.msg, "(ONNX Resize): fuselab kept only its "
			  "output shape");

	fl_engine_opts_default(&eo);
	eo.strategy = FL_STRATEGY_APOLLO;
	eo.stop_after = FL_PASS_CODEGEN;
	ses = fl_engine_open(g, &eo, &err);
	assert_non_null(ses);
	if (fl_engine_run(ses, &err) < 0)
		fail_msg("%s", err.msg);
	assert_null(fl_engine_source(ses));
	p = fl_engine_program(ses);
	for (int k = 0; k < p->n_kernels; k++)
		said |= strstr(fl_engine_kernel_source(ses, k),
			       "no code.  ONNX Resize is an opaque custom "
			       "op") != NULL;
	assert_true(said);
	fl_engine_close(ses);
	eo.stop_after = FL_PASS_RUN;
	eo.run_kernels = true;
	ses = fl_engine_open(g, &eo, &err);
	assert_non_null(ses);
	assert_int_equal(fl_engine_run(ses, &err), -1);
	t_assert_contains(err.msg, "cannot compile: op \"up\" (ONNX Resize)");
	fl_engine_close(ses);
	fl_onnx_info_free(&info);
	fl_graph_free(g);
}

/* The opaque model from the command line: --check and the partition
 * work, --run and --export-onnx fail naming the op, and leave nothing. */
static void test_onnx_import_cli_opaque_ops(void **state)
{
	Onnx__GraphProto then_g;
	Onnx__NodeProto then_n, *then_nodes[1];
	Onnx__ValueInfoProto *vis[1];
	char dir[64], path[128], args[512];
	char *out;
	model b;

	(void)state;
	opaque_model(&b, &then_g, &then_n, then_nodes, vis);
	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/opaque.onnx", dir);
	write_model(&b, path);
	snprintf(args, sizeof args, "--check --input-shape x=2,3,8,8 %s", path);
	assert_int_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "3 ops cannot be modelled and are opaque: "
			  "Resize x1, TopK x1 (input 1 computed at run "
			  "time), If x1 (condition computed at run time)");
	free(out);
	snprintf(args, sizeof args, "--batch --stage layer1 --events "
		 "--input-shape x=2,3,8,8 %s", path);
	assert_int_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "custom op up (opaque): its own kernel");
	free(out);
	snprintf(args, sizeof args, "--batch --run --input-shape x=2,3,8,8 %s",
		 path);
	assert_int_equal(t_fuselab(args, &out), 1);
	t_assert_contains(out, "cannot run: op \"up\" (ONNX Resize) is an "
			  "opaque custom op");
	free(out);
	snprintf(args, sizeof args, "--export-onnx %s/back.onnx "
		 "--input-shape x=2,3,8,8 %s", dir, path);
	assert_int_not_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "cannot be written as ONNX");
	free(out);
	snprintf(path, sizeof path, "%s/back.onnx", dir);
	assert_int_equal(access(path, F_OK), -1);
	t_remove_dir(dir);
}

/* The provenance survives opening compound ops. */
static void test_onnx_import_provenance_through_expansion(void **state)
{
	static int64_t xd[] = {2, 8};
	fl_error err = {{0}};
	fl_graph *g, *e;
	model b;

	(void)state;
	model_init(&b, 13);
	input(&b, "x", xd, 2);
	node(&b, "Softmax", "sm", (const char *[]){"x", NULL}, "y");
	output(&b, "y", xd, 2);
	g = load(&b, NULL, NULL, &err);
	assert_non_null(g);
	e = fl_graph_expand_compounds(g, &err);
	assert_non_null(e);
	assert_true(e->n_ops > 1);
	for (int i = 0; i < e->n_ops; i++) {
		assert_string_equal(e->ops[i].prov.origin, "sm");
		assert_string_equal(e->ops[i].prov.source_op, "Softmax");
	}
	fl_graph_free(e);
	fl_graph_free(g);
}

/* Opset 11 Softmax coerces to 2-D at axis 1: a reshape to [2, 12]
 * around a softmax over the rows; opset 13 normalises along axis 1 only. */
static void test_onnx_import_softmax_opset_semantics(void **state)
{
	static int64_t xd[] = {2, 3, 4};
	fl_error err = {{0}};
	fl_graph *g;
	model b;

	(void)state;
	for (int opset = 11; opset <= 13; opset += 2) {
		model_init(&b, opset);
		input(&b, "x", xd, 3);
		node(&b, "Softmax", "sm", (const char *[]){"x", NULL}, "y");
		attr(&b, "axis")->i = 1;
		b.attr[0].has_i = 1;
		output(&b, "y", xd, 3);
		g = load(&b, NULL, NULL, &err);
		assert_non_null(g);
		assert_int_equal(count_kind(g, FL_OP_RESHAPE),
				 opset == 11 ? 2 : 0);
		assert_int_equal(count_kind(g, FL_OP_SOFTMAX), 1);
		fl_graph_free(g);
	}
}

static void test_onnx_import_input_shape_option(void **state)
{
	static int64_t xd[] = {0, 3};
	char dir[64], path[128], args[512];
	char *out;
	model b;

	(void)state;
	model_init(&b, 13);
	input(&b, "x", xd, 2);
	node(&b, "Relu", "r", (const char *[]){"x", NULL}, "y");
	output(&b, "y", xd, 2);
	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/dyn.onnx", dir);
	write_model(&b, path);
	snprintf(args, sizeof args, "--check %s", path);
	assert_int_equal(t_fuselab(args, &out), 2);
	t_assert_contains(out, "input x: dynamic dimensions: give them with "
			  "--input-shape x=d1,d2,...");
	free(out);
	snprintf(args, sizeof args, "--check --input-shape x=7,3 %s", path);
	assert_int_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "valid: yes");
	t_assert_contains(out, "onnx opsets: ai.onnx 13");
	t_assert_contains(out, "Relu");
	free(out);
	snprintf(args, sizeof args, "--check --input-shape z=1 %s", path);
	assert_int_equal(t_fuselab(args, &out), 2);
	t_assert_contains(out, "--input-shape z: the model has no input");
	free(out);
	t_remove_dir(dir);
}

/* --- bad input --- */

static void expect_error(const model *b, const char *want)
{
	fl_error err = {{0}};
	fl_graph *g = load(b, NULL, NULL, &err);

	assert_null(g);
	t_assert_contains(err.msg, want);
}

static void test_onnx_import_bad_bytes(void **state)
{
	static int64_t xd[] = {2};
	static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
	fl_error err = {{0}};
	size_t len;
	uint8_t *buf;
	model b;

	(void)state;
	assert_null(fl_onnx_load_bytes(junk, sizeof junk, "j.onnx", NULL, NULL,
				       NULL, &err));
	t_assert_contains(err.msg, "j.onnx: not an ONNX model");
	model_init(&b, 13);
	input(&b, "x", xd, 1);
	node(&b, "Relu", "r", (const char *[]){"x", NULL}, "y");
	output(&b, "y", xd, 1);
	buf = pack(&b, &len);
	assert_null(fl_onnx_load_bytes(buf, len / 2, "t.onnx", NULL, NULL,
				       NULL, &err));
	t_assert_contains(err.msg, "t.onnx: ");
	free(buf);
	b.m.graph = NULL;
	expect_error(&b, "the model has no graph");
}

static void test_onnx_import_bad_models(void **state)
{
	static int64_t xd[] = {2}, big[] = {1000000, 1000000};
	static int64_t r9[] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
	model b;

	(void)state;
	model_init(&b, 13);
	input(&b, "x", xd, 1);
	node(&b, "Relu", "r", (const char *[]){"nope", NULL}, "y");
	output(&b, "y", xd, 1);
	expect_error(&b, "node r (Relu): input 0: \"nope\" is not a graph "
		     "input, an initializer or the output of an earlier node");

	/* a model without the default domain (a declared domain that no
	 * node uses is ignored: test_onnx_import_user_unused_domains) */
	b.opset.domain = "com.example";
	expect_error(&b, "node r (Relu): opset_import: the model declares no "
		     "version of the default domain");

	model_init(&b, 13);
	input(&b, "x", xd, 1);
	node(&b, "Relu", "r", (const char *[]){"x", NULL}, "y");
	output(&b, "y", xd, 1);
	output(&b, "y", xd, 1);
	expect_error(&b, "output y: listed twice");

	model_init(&b, 13);
	input(&b, "x", xd, 1);
	node(&b, "Relu", "r", (const char *[]){"x", NULL}, "y");
	output(&b, "y", (int64_t[]){3}, 1);
	expect_error(&b, "output y: the model declares shape [3], the inputs "
		     "give [2]");

	model_init(&b, 13);
	input(&b, "x", r9, 9);
	node(&b, "Relu", "r", (const char *[]){"x", NULL}, "y");
	output(&b, "y", r9, 9);
	expect_error(&b, "input x: rank 9 is above fuselab's 8");

	model_init(&b, 13);
	input(&b, "x", xd, 1);
	initializer(&b, "W", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, big, 2,
		    NULL, NULL, 0);
	b.init[0].n_int64_data = 0;
	node(&b, "Add", "a", (const char *[]){"x", "W", NULL}, "y");
	output(&b, "y", xd, 1);
	expect_error(&b, "initializer W: ");

	/* a cycle: each node reads the other's output */
	model_init(&b, 13);
	input(&b, "x", xd, 1);
	node(&b, "Add", "a", (const char *[]){"x", "q", NULL}, "p");
	node(&b, "Relu", "r", (const char *[]){"p", NULL}, "q");
	output(&b, "q", xd, 1);
	expect_error(&b, "node a (Add): input 1: \"q\" is not a graph input");

	/* an int64 graph input into an op that computes in float */
	model_init(&b, 13);
	input(&b, "x", xd, 1);
	b.tt[0].elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
	node(&b, "Sqrt", "r", (const char *[]){"x", NULL}, "y");
	output(&b, "y", xd, 1);
	expect_error(&b, "node r (Sqrt): sqrt: in[0]: sqrt computes in f32 "
		     "(cast the input to f32 first), got a i64 tensor");
	/* a complex one: no fuselab type holds it (float16 does, since
	 * the half-precision types: tests/test_half.c) */
	b.tt[0].elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64;
	expect_error(&b, "element type complex64 is not supported for an "
		     "input");

	/* a value folded at import past 2^22 elements: refused, not made */
	model_init(&b, 13);
	input(&b, "x", xd, 1);
	initializer(&b, "shp", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, xd, 1,
		    NULL, (int64_t[]){8192, 8192}, 2);
	node(&b, "ConstantOfShape", "cs", (const char *[]){"shp", NULL}, "c");
	node(&b, "Add", "a", (const char *[]){"x", "c", NULL}, "y");
	output(&b, "y", xd, 1);
	expect_error(&b, "a value of 67108864 elements, more than the 4194304 "
		     "fuselab computes at import");

	/* an operator fuselab does not know, with no shape for its output */
	model_init(&b, 13);
	input(&b, "x", xd, 1);
	node(&b, "NonMaxSuppression", "nms", (const char *[]){"x", NULL}, "s");
	node(&b, "Relu", "r", (const char *[]){"s", NULL}, "y");
	output(&b, "y", xd, 1);
	expect_error(&b, "node nms (NonMaxSuppression): NonMaxSuppression is "
		     "not supported, and its output s has no shape in the "
		     "model: fuselab keeps such an operator as an opaque "
		     "custom op when the model declares its output shapes "
		     "(run ONNX shape inference");
}

/* A missing external-data file names the tensor. */
static void test_onnx_import_missing_external_data(void **state)
{
	static int64_t xd[] = {2};
	Onnx__StringStringEntryProto loc = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
	Onnx__StringStringEntryProto *locs[1] = {&loc};
	char dir[64], path[128], args[256];
	char *out;
	model b;

	(void)state;
	model_init(&b, 13);
	input(&b, "x", xd, 1);
	initializer(&b, "W", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, xd, 1,
		    NULL, NULL, 0);
	b.init[0].n_int64_data = 0;
	b.init[0].has_data_location = 1;
	b.init[0].data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	loc.key = "location";
	loc.value = "weights.bin";
	b.init[0].n_external_data = 1;
	b.init[0].external_data = locs;
	node(&b, "Add", "a", (const char *[]){"x", "W", NULL}, "y");
	output(&b, "y", xd, 1);
	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/ext.onnx", dir);
	write_model(&b, path);
	snprintf(args, sizeof args, "--check %s", path);
	assert_int_equal(t_fuselab(args, &out), 2);
	t_assert_contains(out, "initializer W: ");
	/* the file as the user would name it: one slash before it */
	snprintf(args, sizeof args, "ext.onnx: initializer W: external data "
		 "file %s/weights.bin: No such file or directory", dir);
	t_assert_contains(out, args);
	free(out);
	t_remove_dir(dir);
}

/* The JSON report maps each op back to its ONNX node and op type. */
static void test_onnx_import_report_names_source_op(void **state)
{
	char dir[64], args[512], path[128];
	char *out, *report;
	size_t len;

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/r.json", dir);
	snprintf(args, sizeof args, "--batch --stage partition --report %s "
		 TESTDATA "/node/test_gemm_all_attributes/model.onnx", path);
	assert_int_equal(t_fuselab(args, &out), 0);
	free(out);
	report = t_read_file(path, &len);
	assert_non_null(report);
	t_assert_contains(report, "\"source_op\":\t\"Gemm\"");
	t_assert_contains(report, "\"origin\":\t\"Gemm_0\"");
	free(report);
	/* the picture labels each op with its ONNX node type too */
	snprintf(path, sizeof path, "%s/g.dot", dir);
	snprintf(args, sizeof args, "--batch --stage partition --dot %s "
		 TESTDATA "/node/test_gemm_all_attributes/model.onnx", path);
	assert_int_equal(t_fuselab(args, &out), 0);
	free(out);
	report = t_read_file(path, &len);
	t_assert_contains(report, "\\nONNX Gemm");
	free(report);
	t_remove_dir(dir);
}

/* A hand-made model with an op fuselab does not know: the import line
 * on stderr counts it. */
static void test_onnx_import_cli_custom_line(void **state)
{
	static int64_t xd[] = {4, 5};
	char dir[64], path[128], args[256];
	char *out;
	model b;

	(void)state;
	model_init(&b, 13);
	input(&b, "x", xd, 2);
	node(&b, "LpNormalization", "f1", (const char *[]){"x", NULL}, "a");
	node(&b, "LpNormalization", "f2", (const char *[]){"a", NULL}, "y");
	output(&b, "y", xd, 2);
	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/custom.onnx", dir);
	write_model(&b, path);
	snprintf(args, sizeof args, "--check %s", path);
	assert_int_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "2 ops cannot be modelled and are opaque: "
			  "LpNormalization x2");
	t_assert_contains(out, "LpNormalization        x2    -> custom x2");
	free(out);
	t_remove_dir(dir);
}

/* The custom-op line on stderr, and a whole conv model and a Gemm model
 * from the backend tests verified under every strategy. */
static void test_onnx_import_cli_runs_every_strategy(void **state)
{
	/* a Gemm runs so in the conformance subset */
	const char *models[] = {"test_basic_conv_with_padding"};

	(void)state;
	for (int k = 0; k < 1; k++) {
		char args[512];
		char *out;

		snprintf(args, sizeof args, "--batch --run --strategy all "
			 "--repeat 1 --warmup 0 " TESTDATA "/node/%s/model.onnx",
			 models[k]);
		assert_int_equal(t_fuselab(args, &out), 0);
		t_assert_contains(out, "verified");
		assert_null(strstr(out, "MISMATCH"));
		free(out);
	}
}


/* --- graph inputs bound to given values (--bind-inputs, --bind) --- */

#define T_INT32 ONNX__TENSOR_PROTO__DATA_TYPE__INT32
#define T_INT64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64
#define T_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT

/* Graph input `name` of element type dtype (the builder's are float). */
static void typed_input(model *b, const char *name, const int64_t *dims,
			int rank, int dtype)
{
	input(b, name, dims, rank);
	b->tt[b->n_vi - 1].elem_type = dtype;
}

/* A given value of n integers (rank 1, or a scalar with rank 0); f is
 * filled with them as floats. */
static fl_onnx_values int_value(int64_t *i, float *f, int64_t n, int rank,
				int dtype)
{
	fl_onnx_values v = {.dtype = dtype, .n = n, .f = f, .i = i};

	v.shape = rank ? fl_shape_make(1, &n) : fl_shape_scalar();
	for (int64_t k = 0; k < n; k++)
		f[k] = (float)i[k];
	return v;
}

/* x [2,3] -> Reshape(x, shape) -> y [3,2]: shape an int64 graph input. */
static void reshape_model(model *b)
{
	static int64_t xd[] = {2, 3}, sd[] = {2}, yd[] = {3, 2};

	model_init(b, 13);
	input(b, "x", xd, 2);
	typed_input(b, "shape", sd, 1, T_INT64);
	node(b, "Reshape", "r", (const char *[]){"x", "shape", NULL}, "y");
	output(b, "y", yd, 2);
}

/* Only the input an op needs at import is bound, by name or by its
 * position; a data input given too stays an input. */
static void test_onnx_import_bind_reshape_shape(void **state)
{
	static int64_t si[] = {3, 2};
	static float sf[2], xf[6];
	fl_onnx_values sv = int_value(si, sf, 2, 1, T_INT64);
	fl_onnx_values xv = {fl_shape_make(2, (int64_t[]){2, 3}), T_FLOAT, 6,
			     xf, NULL};
	fl_onnx_given_input given[] = {{"x", 0, "in0.pb", &xv},
				       {"", 1, "in1.pb", &sv}};
	fl_onnx_import_opts o = {0, NULL, 2, given};
	fl_onnx_info info;
	fl_error err = {{0}};
	fl_graph *g;
	int *ins = NULL;
	model b;

	(void)state;
	reshape_model(&b);
	g = load(&b, NULL, &info, &err);	/* nothing given: opaque */
	assert_non_null(g);
	assert_int_equal(count_kind(g, FL_OP_CUSTOM), 1);
	assert_int_equal(info.n_bound, 0);
	fl_onnx_info_free(&info);
	fl_graph_free(g);
	g = load(&b, &o, &info, &err);
	if (!g)
		fail_msg("%s", err.msg);
	assert_int_equal(count_kind(g, FL_OP_CUSTOM), 0);
	assert_int_equal(fl_graph_inputs(g, &ins), 1);
	assert_string_equal(g->tensors[ins[0]].name, "x");
	assert_shape(tensor(g, "y"), 2, (int64_t[]){3, 2});
	assert_int_equal(info.n_bound, 1);
	assert_string_equal(info.bound[0].name, "shape");
	assert_int_equal(info.bound[0].position, 1);
	free(ins);
	fl_onnx_info_free(&info);
	fl_graph_free(g);
}

/* The const tensor a known graph output `name` was copied from. */
static const fl_tensor *known_output(const fl_graph *g, const char *name)
{
	size_t n = strlen(name);

	for (int t = 0; t < g->n_tensors; t++) {
		const fl_tensor *x = &g->tensors[t];

		if (x->role != FL_ROLE_OUTPUT || strncmp(x->name, name, n) ||
		    (x->name[n] && x->name[n] != '.'))
			continue;
		assert_true(x->producer >= 0);
		assert_int_equal(g->ops[x->producer].kind, FL_OP_COPY);
		return &g->tensors[g->ops[x->producer].in[0]];
	}
	fail_msg("no output %s", name);
	return NULL;
}

static void assert_floats(const fl_tensor *t, const double *want, int n)
{
	assert_int_equal(fl_shape_numel(&t->shape), n);
	assert_non_null(t->data);
	for (int k = 0; k < n; k++)
		if (fabs(t->data[k] - want[k]) > 1e-6)
			fail_msg("%s[%d] = %.9g, want %.9g", t->name, k,
				 t->data[k], want[k]);
}

static void assert_ints(const fl_tensor *t, const int64_t *want, int n)
{
	assert_int_equal(fl_shape_numel(&t->shape), n);
	assert_non_null(t->ints);
	for (int k = 0; k < n; k++)
		assert_int_equal(t->ints[k], want[k]);
}

/* Range (int32, negative delta), ConstantOfShape and the three windows
 * of bound inputs fold at import to the values ONNX defines. */
static void test_onnx_import_bind_folds_range_windows(void **state)
{
	static int64_t sd[] = {2}, r3[] = {3}, w4[] = {4}, c22[] = {2, 2};
	static int64_t start[] = {10}, limit[] = {2}, delta[] = {-3};
	static int64_t size[] = {4}, shape[] = {2, 2}, seven[] = {7}, one = 1;
	static float f[5][2];
	fl_onnx_values v[5] = {
		int_value(start, f[0], 1, 0, T_INT32),
		int_value(limit, f[1], 1, 0, T_INT32),
		int_value(delta, f[2], 1, 0, T_INT32),
		int_value(size, f[3], 1, 0, T_INT64),
		int_value(shape, f[4], 2, 1, T_INT64),
	};
	fl_onnx_given_input given[] = {
		{"s", -1, "s.pb", &v[0]}, {"l", -1, "l.pb", &v[1]},
		{"d", -1, "d.pb", &v[2]}, {"n", -1, "n.pb", &v[3]},
		{"shape", -1, "shape.pb", &v[4]},
	};
	fl_onnx_import_opts o = {0, NULL, 5, given};
	Onnx__TensorProto fill;
	const double a = 25.0 / 46, q = 21.0 / 46, h = 0.5;
	const double hann[] = {0, h, 1, h},
		     hamming_sym[] = {a - q, a + q * h, a + q * h, a - q},
		     blackman[] = {0, 0.34, 1, 0.34};
	fl_error err = {{0}};
	fl_graph *g;
	model b;

	(void)state;
	model_init(&b, 17);
	typed_input(&b, "s", NULL, 0, T_INT32);
	typed_input(&b, "l", NULL, 0, T_INT32);
	typed_input(&b, "d", NULL, 0, T_INT32);
	typed_input(&b, "n", NULL, 0, T_INT64);
	typed_input(&b, "shape", sd, 1, T_INT64);
	node(&b, "Range", "rg", (const char *[]){"s", "l", "d", NULL}, "r");
	node(&b, "HannWindow", "hw", (const char *[]){"n", NULL}, "hann");
	node(&b, "HammingWindow", "mw", (const char *[]){"n", NULL}, "ham");
	attr(&b, "periodic")->has_i = 1;	/* 0: symmetric */
	b.attr[b.g.n_node - 1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	node(&b, "BlackmanWindow", "bw", (const char *[]){"n", NULL}, "bl");
	node(&b, "ConstantOfShape", "cs", (const char *[]){"shape", NULL}, "c");
	onnx__tensor_proto__init(&fill);
	fill.has_data_type = 1;
	fill.data_type = T_INT64;
	fill.n_dims = 1;
	fill.dims = &one;
	fill.n_int64_data = 1;
	fill.int64_data = seven;
	attr(&b, "value")->t = &fill;
	b.attr[b.g.n_node - 1].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
	output(&b, "r", r3, 1);
	output(&b, "hann", w4, 1);
	output(&b, "ham", w4, 1);
	output(&b, "bl", w4, 1);
	output(&b, "c", c22, 2);
	g = load(&b, &o, NULL, &err);
	if (!g)
		fail_msg("%s", err.msg);
	assert_ints(known_output(g, "r"), (int64_t[]){10, 7, 4}, 3);
	assert_floats(known_output(g, "hann"), hann, 4);
	assert_floats(known_output(g, "ham"), hamming_sym, 4);
	assert_floats(known_output(g, "bl"), blackman, 4);
	assert_ints(known_output(g, "c"), (int64_t[]){7, 7, 7, 7}, 4);
	fl_graph_free(g);
	/* unbound, the import-only ops stay opaque, naming the input */
	b.g.n_output = 1;
	g = load(&b, NULL, NULL, &err);
	assert_non_null(g);
	assert_int_equal(count_kind(g, FL_OP_CUSTOM), 1);
	fl_graph_free(g);
}

static void expect_bind_error(const model *b, fl_onnx_given_input *gv,
			      const char *want)
{
	fl_onnx_import_opts o = {0, NULL, 1, gv};
	fl_error err = {{0}};

	assert_null(load(b, &o, NULL, &err));
	t_assert_contains(err.msg, want);
}

/* A name that is no graph input, a wrong element type or shape. */
static void test_onnx_import_bind_errors(void **state)
{
	static int64_t si[] = {3, 2, 1};
	static float sf[3];
	fl_onnx_values ok = int_value(si, sf, 2, 1, T_INT64);
	fl_onnx_values three = int_value(si, sf, 3, 1, T_INT64);
	fl_onnx_values floats = {fl_shape_make(1, (int64_t[]){2}), T_FLOAT,
				 2, sf, NULL};
	fl_onnx_given_input gv[] = {
		{"nope", -1, "a.pb", &ok}, {"shape", -1, "b.pb", &floats},
		{"shape", -1, "c.pb", &three}, {"nope", 5, "d.pb", &ok},
	};
	model b;

	(void)state;
	reshape_model(&b);
	expect_bind_error(&b, &gv[0], "m.onnx: a.pb: \"nope\" is not a graph "
			  "input of the model");
	expect_bind_error(&b, &gv[1], "b.pb: input shape is int64, the file "
			  "holds float");
	expect_bind_error(&b, &gv[2], "c.pb: input shape has shape [2], the "
			  "file [3]");
	expect_bind_error(&b, &gv[3], "d.pb: \"nope\" is not a graph input");
}

/* A TensorProto file: name (may be ""), float or int64 values. */
static void write_tensor(const char *path, const char *name, int dtype,
			 int64_t *dims, int rank, float *f, int64_t *i, int n)
{
	Onnx__TensorProto t;
	uint8_t buf[512];
	size_t len;
	FILE *out;

	onnx__tensor_proto__init(&t);
	t.name = (char *)name;
	t.has_data_type = 1;
	t.data_type = dtype;
	t.n_dims = (size_t)rank;
	t.dims = dims;
	if (f)
		t.n_float_data = (size_t)n, t.float_data = f;
	else
		t.n_int64_data = (size_t)n, t.int64_data = i;
	len = onnx__tensor_proto__pack(&t, buf);
	out = fopen(path, "wb");
	assert_non_null(out);
	assert_int_equal(fwrite(buf, 1, len, out), len);
	fclose(out);
}

/* The command line: --bind-inputs binds shape and n (an unnamed file),
 * --inputs skips their files and feeds x, and every strategy computes
 * the expected Reshape and HannWindow; bad files are errors. */
static void test_onnx_import_bind_cli(void **state)
{
	static int64_t xd[] = {2, 3}, sd[] = {2}, yd[] = {3, 2}, wd[] = {4};
	static int64_t shape[] = {3, 2}, size[] = {4};
	static float x[] = {1, 2, 3, 4, 5, 6}, hann[] = {0, 0.5f, 1, 0.5f};
	char dir[64], path[256], args[1024];
	char *out;
	model b;

	(void)state;
	reshape_model(&b);
	typed_input(&b, "n", NULL, 0, T_INT64);
	node(&b, "HannWindow", "hw", (const char *[]){"n", NULL}, "w");
	output(&b, "w", wd, 1);
	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/m.onnx", dir);
	write_model(&b, path);
#define FILE_AT(f) (snprintf(path, sizeof path, "%s/" f, dir), path)
	write_tensor(FILE_AT("input_0.pb"), "x", T_FLOAT, xd, 2, x, NULL, 6);
	write_tensor(FILE_AT("input_1.pb"), "shape", T_INT64, sd, 1, NULL,
		     shape, 2);
	write_tensor(FILE_AT("input_2.pb"), "", T_INT64, NULL, 0, NULL, size,
		     1);
	write_tensor(FILE_AT("output_0.pb"), "y", T_FLOAT, yd, 2, x, NULL, 6);
	write_tensor(FILE_AT("output_1.pb"), "w", T_FLOAT, wd, 1, hann, NULL,
		     4);
	snprintf(args, sizeof args, "--batch --run --strategy all --repeat 1 "
		 "--warmup 0 --bind-inputs %s --inputs %s --expect %s %s/m.onnx",
		 dir, dir, dir, dir);
	assert_int_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "bound at import to their given values: shape "
			  "(input 1), n (input 2)");
	t_assert_contains(out, "expect y [3,2]: ok");
	t_assert_contains(out, "[4]: ok");
	t_assert_contains(out, "verified yes");
	assert_null(strstr(out, "verified no"));
	assert_null(strstr(out, "MISMATCH"));
	free(out);
	snprintf(args, sizeof args, "--check --bind shape=%s/none.pb "
		 "%s/m.onnx", dir, dir);
	t_expect_fuselab(args, 2, "none.pb");
	snprintf(args, sizeof args, "--check --bind nope=%s/input_1.pb "
		 "%s/m.onnx", dir, dir);
	t_expect_fuselab(args, 2, "\"nope\" is not a graph input");
	snprintf(args, sizeof args, "--check --bind-inputs %s/m.onnx "
		 "%s/m.onnx", dir, dir);
	t_expect_fuselab(args, 2, "no input_0.pb there");
	t_remove_dir(dir);
#undef FILE_AT
}

FL_SUITE(onnx_import,
	 cmocka_unit_test(test_onnx_import_backend_conv_and_pool),
	 cmocka_unit_test(test_onnx_import_gather_wraps_by_bool),
	 cmocka_unit_test(test_onnx_import_backend_gemm_reduce_transpose),
	 cmocka_unit_test(test_onnx_import_backend_outputs_match),
	 cmocka_unit_test(test_onnx_import_torch_export),
	 cmocka_unit_test(test_onnx_import_constants_keep_real_data),
	 cmocka_unit_test(test_onnx_import_folds_shape_subgraph),
	 cmocka_unit_test(test_onnx_import_tile),
	 cmocka_unit_test(test_onnx_import_cast_to_index),
	 cmocka_unit_test(test_onnx_import_reads_exported_samples),
	 cmocka_unit_test(test_onnx_import_custom_and_provenance),
	 cmocka_unit_test(test_onnx_import_opaque_ops),
	 cmocka_unit_test(test_onnx_import_cli_opaque_ops),
	 cmocka_unit_test(test_onnx_import_provenance_through_expansion),
	 cmocka_unit_test(test_onnx_import_softmax_opset_semantics),
	 cmocka_unit_test(test_onnx_import_input_shape_option),
	 cmocka_unit_test(test_onnx_import_bad_bytes),
	 cmocka_unit_test(test_onnx_import_bad_models),
	 cmocka_unit_test(test_onnx_import_missing_external_data),
	 cmocka_unit_test(test_onnx_import_report_names_source_op),
	 cmocka_unit_test(test_onnx_import_cli_custom_line),
	 cmocka_unit_test(test_onnx_import_cli_runs_every_strategy),
	 cmocka_unit_test(test_onnx_import_bind_reshape_shape),
	 cmocka_unit_test(test_onnx_import_bind_folds_range_windows),
	 cmocka_unit_test(test_onnx_import_bind_errors),
	 cmocka_unit_test(test_onnx_import_bind_cli));
