/* ONNX NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
 * (engine/ir/onnx_loss.c) on models built in memory whose expected
 * outputs are worked out by hand below: with and without a weight, an
 * ignore_index inside, above and (for SoftmaxCrossEntropyLoss) below
 * the classes, each reduction, extra dims [N, C, d1, d2], an int32
 * target, and SoftmaxCrossEntropyLoss's log_prob output.  The targets
 * are graph inputs (run-time data).  Each model runs through the
 * interpreter against the hand values (--expect) and through every
 * strategy, whose kernels must verify and match the same values.  Bad
 * attributes and inputs are errors naming them.  (The backend tests
 * node/test_nllloss_* and node/test_sce_* run in
 * scripts/conformance.sh.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph.h"
#include "onnx.h"
#include "onnx.pb-c.h"
#include "onnx_import.h"
#include "test_util.h"

#define MAXV 16		/* graph inputs and outputs */
#define MAXN 12		/* nodes */

#define FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define INT64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64
#define INT32 ONNX__TENSOR_PROTO__DATA_TYPE__INT32

/* A value of the model: a graph input (with the data fed to it) or a
 * graph output (with the data it must hold). */
typedef struct value {
	const char *name;
	int elem_type;
	int rank;
	int64_t dims[4];
	const float *f;		/* FLOAT */
	const int64_t *i;	/* INT64, INT32 */
} value;

/* One node: op type, inputs ("" for an absent optional one), outputs,
 * reduction ("" for the default) and ignore_index (when has_ii). */
typedef struct node {
	const char *op_type;
	const char *in[3];
	const char *out[2];
	const char *reduction;
	int has_ii;
	int64_t ii;
} node;

typedef struct loss_model {
	Onnx__ModelProto m;
	Onnx__GraphProto g;
	Onnx__OperatorSetIdProto opset, *opsets[1];
	Onnx__NodeProto node[MAXN], *nodes[MAXN];
	char *node_in[MAXN][3], *node_out[MAXN][2];
	Onnx__AttributeProto attr[MAXN][2], *attrs[MAXN][2];
	Onnx__ValueInfoProto vi[MAXV], *ins[MAXV], *outs[MAXV];
	Onnx__TypeProto tp[MAXV];
	Onnx__TypeProto__Tensor tt[MAXV];
	Onnx__TensorShapeProto sp[MAXV];
	Onnx__TensorShapeProto__Dimension dim[MAXV][4], *dims[MAXV][4];
	int n_vi;
} loss_model;

static Onnx__ValueInfoProto *value_info(loss_model *b, const value *v)
{
	int k = b->n_vi++;

	assert_true(k < MAXV);
	onnx__value_info_proto__init(&b->vi[k]);
	onnx__type_proto__init(&b->tp[k]);
	onnx__type_proto__tensor__init(&b->tt[k]);
	onnx__tensor_shape_proto__init(&b->sp[k]);
	b->vi[k].name = (char *)v->name;
	b->vi[k].type = &b->tp[k];
	b->tp[k].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	b->tp[k].tensor_type = &b->tt[k];
	b->tt[k].has_elem_type = 1;
	b->tt[k].elem_type = v->elem_type;
	b->tt[k].shape = &b->sp[k];
	b->sp[k].n_dim = (size_t)v->rank;
	b->sp[k].dim = b->dims[k];
	for (int d = 0; d < v->rank; d++) {
		onnx__tensor_shape_proto__dimension__init(&b->dim[k][d]);
		b->dim[k][d].value_case =
			ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
		b->dim[k][d].dim_value = v->dims[d];
		b->dims[k][d] = &b->dim[k][d];
	}
	return &b->vi[k];
}

static void add_node(loss_model *b, int k, const node *n)
{
	Onnx__NodeProto *p = &b->node[k];
	int na = 0;

	onnx__node_proto__init(p);
	p->op_type = (char *)n->op_type;
	p->input = b->node_in[k];
	p->output = b->node_out[k];
	p->attribute = b->attrs[k];
	for (int i = 0; i < 3 && n->in[i]; i++)
		p->input[p->n_input++] = (char *)n->in[i];
	for (int o = 0; o < 2 && n->out[o]; o++)
		p->output[p->n_output++] = (char *)n->out[o];
	if (n->reduction && *n->reduction) {
		Onnx__AttributeProto *a = &b->attr[k][na];

		onnx__attribute_proto__init(a);
		a->name = "reduction";
		a->has_type = 1;
		a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
		a->has_s = 1;
		a->s.data = (uint8_t *)n->reduction;
		a->s.len = strlen(n->reduction);
		b->attrs[k][na++] = a;
	}
	if (n->has_ii) {
		Onnx__AttributeProto *a = &b->attr[k][na];

		onnx__attribute_proto__init(a);
		a->name = "ignore_index";
		a->has_type = 1;
		a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
		a->has_i = 1;
		a->i = n->ii;
		b->attrs[k][na++] = a;
	}
	p->n_attribute = (size_t)na;
	b->nodes[k] = p;
}

/* The model of nodes[0..n_nodes-1] with graph inputs ins and outputs
 * outs, packed into *len bytes (malloc'd). */
static uint8_t *pack_model(const node *nodes, int n_nodes, const value *ins,
			   int n_ins, const value *outs, int n_outs,
			   size_t *len)
{
	loss_model *b = calloc(1, sizeof *b);
	uint8_t *bytes;

	assert_non_null(b);
	assert_true(n_nodes <= MAXN);
	onnx__model_proto__init(&b->m);
	onnx__graph_proto__init(&b->g);
	onnx__operator_set_id_proto__init(&b->opset);
	b->opset.domain = "";
	b->opset.has_version = 1;
	b->opset.version = 13;
	b->opsets[0] = &b->opset;
	b->m.has_ir_version = 1;
	b->m.ir_version = 8;
	b->m.n_opset_import = 1;
	b->m.opset_import = b->opsets;
	b->m.graph = &b->g;
	b->g.name = "losses";
	b->g.node = b->nodes;
	b->g.input = b->ins;
	b->g.output = b->outs;
	for (int k = 0; k < n_nodes; k++)
		add_node(b, k, &nodes[k]);
	b->g.n_node = (size_t)n_nodes;
	for (int k = 0; k < n_ins; k++)
		b->ins[b->g.n_input++] = value_info(b, &ins[k]);
	for (int k = 0; k < n_outs; k++)
		b->outs[b->g.n_output++] = value_info(b, &outs[k]);
	*len = onnx__model_proto__get_packed_size(&b->m);
	bytes = malloc(*len);
	assert_non_null(bytes);
	onnx__model_proto__pack(&b->m, bytes);
	free(b);
	return bytes;
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

/* v's data as a TensorProto in file <dir>/<stem>_<k>.pb. */
static void write_tensor(const char *dir, const char *stem, int k,
			 const value *v)
{
	Onnx__TensorProto t;
	int64_t n = 1;
	int32_t i32[64];
	char path[512];
	uint8_t *bytes;
	size_t len;

	onnx__tensor_proto__init(&t);
	t.name = (char *)v->name;
	t.has_data_type = 1;
	t.data_type = v->elem_type;
	t.n_dims = (size_t)v->rank;
	t.dims = (int64_t *)v->dims;
	for (int d = 0; d < v->rank; d++)
		n *= v->dims[d];
	if (v->elem_type == FLOAT) {
		t.n_float_data = (size_t)n;
		t.float_data = (float *)v->f;
	} else if (v->elem_type == INT64) {
		t.n_int64_data = (size_t)n;
		t.int64_data = (int64_t *)v->i;
	} else {
		assert_true(n <= 64);
		for (int64_t e = 0; e < n; e++)
			i32[e] = (int32_t)v->i[e];
		t.n_int32_data = (size_t)n;
		t.int32_data = i32;
	}
	len = onnx__tensor_proto__get_packed_size(&t);
	bytes = malloc(len);
	assert_non_null(bytes);
	onnx__tensor_proto__pack(&t, bytes);
	snprintf(path, sizeof path, "%s/%s_%d.pb", dir, stem, k);
	write_file(path, bytes, len);
	free(bytes);
}

/* Writes the model, its inputs and expected outputs into a fresh
 * folder and runs fuselab on them: the interpreter must give every
 * expected output, and every strategy (one under the sanitizer) must
 * verify and give them too. */
static void model_gives(const node *nodes, int n_nodes, const value *ins,
			int n_ins, const value *outs, int n_outs)
{
	char dir[256], path[400], args[1400], *out;
	int n_strat = T_SANITIZED ? 1 : FL_STRATEGY_COUNT;
	size_t len;
	uint8_t *bytes = pack_model(nodes, n_nodes, ins, n_ins, outs, n_outs,
				    &len);

	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/model.onnx", dir);
	write_file(path, bytes, len);
	free(bytes);
	for (int k = 0; k < n_ins; k++)
		write_tensor(dir, "input", k, &ins[k]);
	for (int k = 0; k < n_outs; k++)
		write_tensor(dir, "output", k, &outs[k]);
	snprintf(args, sizeof args, "--batch --run --strategy %s --repeat 1 "
		 "--warmup 0 --inputs %s --expect %s --workdir %s %s",
		 T_SANITIZED ? "apollo" : "all", dir, dir, dir, path);
	if (t_fuselab(args, &out) != 0)
		fail_msg("fuselab %s:\n%s", args, out);
	if (t_occurrences(out, ": ok (max abs error") != n_outs ||
	    t_occurrences(out, "verified yes") != n_strat ||
	    t_occurrences(out, "vs expected: ok") != n_strat)
		fail_msg("not every output and strategy as expected:\n%s", out);
	if (strstr(out, "opaque"))
		fail_msg("a loss stayed opaque:\n%s", out);
	free(out);
	t_remove_dir(dir);
}

/* ---- the hand-worked cases ------------------------------------------ */

/* x [3, 3] read as log-probabilities, target [2, 0, 1], weight
 * [0.5, 1, 2]: the picked x are -3, -4, -8, their weights 2, 0.5, 1. */
static const float X[] = {-1, -2, -3, -4, -5, -6, -7, -8, -9};
static const int64_t T[] = {2, 0, 1};
static const float W[] = {0.5f, 1, 2};

#define XIN {"x", FLOAT, 2, {3, 3}, X, NULL}
#define TIN {"t", INT64, 1, {3}, NULL, T}
#define WIN {"w", FLOAT, 1, {3}, W, NULL}
#define SCALAR(n, v) {n, FLOAT, 0, {0}, (const float[]){v}, NULL}
#define VEC3(n, a, b, c) {n, FLOAT, 1, {3}, (const float[]){a, b, c}, NULL}

/* NegativeLogLikelihoodLoss, [N, C]: each reduction, with and without
 * a weight; ignore_index inside the classes (0, 2), out of them (5);
 * an int32 target. */
static void test_onnx_loss_nll_reductions(void **state)
{
	const node nodes[] = {
		{"NegativeLogLikelihoodLoss", {"x", "t"}, {"none"}, "none",
		 0, 0},
		{"NegativeLogLikelihoodLoss", {"x", "t", "w"}, {"none_w"},
		 "none", 0, 0},
		/* target 0 ignored: 3 * 2 + 8 * 1 */
		{"NegativeLogLikelihoodLoss", {"x", "t", "w"}, {"sum_w_ii"},
		 "sum", 1, 0},
		/* (6 + 2 + 8) / (2 + 0.5 + 1), the default reduction */
		{"NegativeLogLikelihoodLoss", {"x", "t", "w"}, {"mean_w"},
		 "", 0, 0},
		/* target 2 ignored: (4 + 8) / 2 */
		{"NegativeLogLikelihoodLoss", {"x", "t"}, {"mean_ii"},
		 "mean", 1, 2},
		/* no target is 5: 3 + 4 + 8 */
		{"NegativeLogLikelihoodLoss", {"x", "t"}, {"sum_high_ii"},
		 "sum", 1, 5},
		{"NegativeLogLikelihoodLoss", {"x", "t32", "w"}, {"none_i32"},
		 "none", 0, 0},
	};
	const value ins[] = {
		XIN, TIN, WIN, {"t32", INT32, 1, {3}, NULL, T},
	};
	const value outs[] = {
		VEC3("none", 3, 4, 8),
		VEC3("none_w", 6, 2, 8),
		SCALAR("sum_w_ii", 14),
		SCALAR("mean_w", 16.0f / 3.5f),
		SCALAR("mean_ii", 6),
		SCALAR("sum_high_ii", 15),
		VEC3("none_i32", 6, 2, 8),
	};

	(void)state;
	model_gives(nodes, 7, ins, 4, outs, 7);
}

/* NegativeLogLikelihoodLoss with extra dims: x [1, 2, 1, 2] holds
 * class 0 = [-1, -2] and class 1 = [-3, -4] over d2; target [[1, 0]]
 * picks -3 then -2. */
static void test_onnx_loss_nll_extra_dims(void **state)
{
	const node nodes[] = {
		{"NegativeLogLikelihoodLoss", {"x4", "t4"}, {"none4"}, "none",
		 0, 0},
		/* (3 * 1 + 2 * 10) / (1 + 10) */
		{"NegativeLogLikelihoodLoss", {"x4", "t4", "w2"}, {"mean4"},
		 "mean", 0, 0},
	};
	const value ins[] = {
		{"x4", FLOAT, 4, {1, 2, 1, 2}, (const float[]){-1, -2, -3, -4},
		 NULL},
		{"t4", INT64, 3, {1, 1, 2}, NULL, (const int64_t[]){1, 0}},
		{"w2", FLOAT, 1, {2}, (const float[]){10, 1}, NULL},
	};
	const value outs[] = {
		{"none4", FLOAT, 3, {1, 1, 2}, (const float[]){3, 2}, NULL},
		SCALAR("mean4", 23.0f / 11.0f),
	};

	(void)state;
	model_gives(nodes, 2, ins, 3, outs, 2);
}

/* SoftmaxCrossEntropyLoss: s = [[ln 2, 0, 0], [0, 0, 0]] has
 * log_softmax [[-ln 2, -2 ln 2, -2 ln 2], [-ln 3, -ln 3, -ln 3]];
 * target [0, 1] picks -ln 2 and -ln 3: the loss, the log_prob output,
 * the mean with the weight [0.5, 1, 2], (0.5 ln 2 + ln 3) / 1.5; target
 * [-1, 1] with ignore_index -1 sums the second row's only. */
static void test_onnx_loss_sce_log_prob(void **state)
{
#define LN2 0.69314718f
#define LN3 1.09861229f
	const node nodes[] = {
		{"SoftmaxCrossEntropyLoss", {"s", "u"}, {"sce", "log_prob"},
		 "none", 0, 0},
		{"SoftmaxCrossEntropyLoss", {"s", "u", "w"}, {"sce_mean_w"},
		 "mean", 0, 0},
		{"SoftmaxCrossEntropyLoss", {"s", "u_ii"}, {"sce_sum_ii", ""},
		 "sum", 1, -1},
	};
	const value ins[] = {
		{"s", FLOAT, 2, {2, 3}, (const float[]){LN2, 0, 0, 0, 0, 0},
		 NULL},
		{"u", INT64, 1, {2}, NULL, (const int64_t[]){0, 1}},
		WIN,
		{"u_ii", INT64, 1, {2}, NULL, (const int64_t[]){-1, 1}},
	};
	const value outs[] = {
		{"sce", FLOAT, 1, {2}, (const float[]){LN2, LN3}, NULL},
		{"log_prob", FLOAT, 2, {2, 3},
		 (const float[]){-LN2, -2 * LN2, -2 * LN2, -LN3, -LN3, -LN3},
		 NULL},
		SCALAR("sce_mean_w", (0.5f * LN2 + LN3) / 1.5f),
		SCALAR("sce_sum_ii", LN3),
	};

	(void)state;
	model_gives(nodes, 3, ins, 4, outs, 4);
#undef LN2
#undef LN3
}

/* Bad attributes and inputs: errors naming them. */
static void load_fails(const node *n, const value *ins, int n_ins,
		       const char *want)
{
	const value out = SCALAR("loss", 0);
	fl_error err = {""};
	size_t len;
	uint8_t *bytes = pack_model(n, 1, ins, n_ins, &out, 1, &len);
	fl_graph *g = fl_onnx_load_bytes(bytes, len, "loss.onnx", NULL, NULL,
					 NULL, &err);

	free(bytes);
	if (g) {
		fl_graph_free(g);
		fail_msg("loaded; wanted the error \"%s\"", want);
	}
	t_assert_contains(err.msg, want);
}

static void test_onnx_loss_bad_input(void **state)
{
	const node bad_red = {"NegativeLogLikelihoodLoss", {"x", "t"},
				     {"loss"}, "average", 0, 0};
	const node nll = {"NegativeLogLikelihoodLoss", {"x", "t"},
				 {"loss"}, "sum", 0, 0};
	const node nll_w = {"NegativeLogLikelihoodLoss",
				   {"x", "t", "w"}, {"loss"}, "sum", 0, 0};
	const value ok[] = {XIN, TIN};
	const value float_target[] = {XIN, VEC3("t", 0, 1, 2)};
	const value short_target[] = {
		XIN, {"t", INT64, 1, {2}, NULL, T}};
	const value vec_x[] = {
		{"x", FLOAT, 1, {3}, X, NULL}, TIN};
	const value long_w[] = {
		XIN, TIN, {"w", FLOAT, 1, {4}, X, NULL}};

	(void)state;
	load_fails(&bad_red, ok, 2, "attribute reduction: \"average\"");
	load_fails(&nll, float_target, 2, "input 1: the target must be int32 "
		   "or int64");
	load_fails(&nll, short_target, 2, "input 1: the target must have "
		   "shape [N, d1..dk]");
	load_fails(&nll, vec_x, 2, "input 0: needs shape [N, C]");
	load_fails(&nll_w, long_w, 3, "input 2: the weight must have shape "
		   "[C] = [3]");
}

FL_SUITE(onnx_loss,
	 cmocka_unit_test(test_onnx_loss_nll_reductions),
	 cmocka_unit_test(test_onnx_loss_nll_extra_dims),
	 cmocka_unit_test(test_onnx_loss_sce_log_prob),
	 cmocka_unit_test(test_onnx_loss_bad_input));
