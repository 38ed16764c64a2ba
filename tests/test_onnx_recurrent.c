/* ONNX import of LSTM, GRU and RNN (engine/ir/onnx_recurrent.c) on
 * one-node models built in memory: what the backend tests do not cover
 * -- a bidirectional LSTM's three outputs with gaps among its optional
 * inputs, a reverse batch-first GRU's Y and Y_h, a constant
 * sequence_lens equal to the sequence length -- against the cells' own
 * references; the opaque fallback and its reason; bad attributes.
 * (The backend tests node/test_lstm_*, test_gru_*, test_*rnn_* run
 * through scripts/conformance.sh.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "interp.h"
#include "onnx.h"
#include "onnx.pb-c.h"
#include "onnx_import.h"
#include "ops.h"
#include "test_util.h"

#define MAXV 12
#define MAXA 6

/* A model of one recurrent node; every data input is a graph input
 * (the interpreter fills it), sequence_lens an initializer. */
typedef struct cell_model {
	Onnx__ModelProto m;
	Onnx__GraphProto g;
	Onnx__OperatorSetIdProto opset, *opsets[1];
	Onnx__NodeProto node, *nodes[1];
	char *node_in[8], *node_out[3];
	Onnx__AttributeProto attr[MAXA], *attrs[MAXA];
	ProtobufCBinaryData strs[MAXA][6];
	Onnx__ValueInfoProto vi[MAXV], *ins[MAXV], *outs[MAXV];
	Onnx__TypeProto tp[MAXV];
	Onnx__TypeProto__Tensor tt[MAXV];
	Onnx__TensorShapeProto sp[MAXV];
	Onnx__TensorShapeProto__Dimension dim[MAXV][4], *dims[MAXV][4];
	Onnx__TensorProto init, *inits[1];
	int64_t init_dims[1];
	int n_vi;
} cell_model;

static void model_init(cell_model *b, const char *op_type)
{
	memset(b, 0, sizeof *b);
	onnx__model_proto__init(&b->m);
	onnx__graph_proto__init(&b->g);
	onnx__operator_set_id_proto__init(&b->opset);
	onnx__node_proto__init(&b->node);
	b->opset.domain = "";
	b->opset.has_version = 1;
	b->opset.version = 14;
	b->opsets[0] = &b->opset;
	b->m.has_ir_version = 1;
	b->m.ir_version = 8;
	b->m.n_opset_import = 1;
	b->m.opset_import = b->opsets;
	b->m.graph = &b->g;
	b->g.name = "cell";
	b->g.node = b->nodes;
	b->g.input = b->ins;
	b->g.output = b->outs;
	b->g.initializer = b->inits;
	b->nodes[0] = &b->node;
	b->g.n_node = 1;
	b->node.op_type = (char *)op_type;
	b->node.name = "cell";
	b->node.input = b->node_in;
	b->node.output = b->node_out;
	b->node.attribute = b->attrs;
}

static Onnx__ValueInfoProto *value(cell_model *b, const char *name,
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
		onnx__tensor_shape_proto__dimension__init(&b->dim[k][d]);
		b->dim[k][d].value_case =
			ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
		b->dim[k][d].dim_value = dims[d];
		b->dims[k][d] = &b->dim[k][d];
	}
	return &b->vi[k];
}

/* Node input `name` ("" for a missing optional one), a graph input of
 * shape dims unless missing. */
static void in(cell_model *b, const char *name, int rank,
	       const int64_t *dims)
{
	b->node_in[b->node.n_input++] = (char *)name;
	if (*name)
		b->ins[b->g.n_input++] = value(b, name, dims, rank);
}

/* sequence_lens as a constant. */
static void seq_lens(cell_model *b, int64_t *lens, int n)
{
	Onnx__TensorProto *t = &b->init;

	onnx__tensor_proto__init(t);
	t->name = "sequence_lens";
	t->has_data_type = 1;
	t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
	b->init_dims[0] = n;
	t->n_dims = 1;
	t->dims = b->init_dims;
	t->n_int64_data = (size_t)n;
	t->int64_data = lens;
	b->inits[0] = t;
	b->g.n_initializer = 1;
	b->node_in[b->node.n_input++] = "sequence_lens";
}

/* Node output `name` ("" when not asked for), a graph output. */
static void out(cell_model *b, const char *name, int rank,
		const int64_t *dims)
{
	b->node_out[b->node.n_output++] = (char *)name;
	if (*name)
		b->outs[b->g.n_output++] = value(b, name, dims, rank);
}

static Onnx__AttributeProto *attr(cell_model *b, const char *name)
{
	Onnx__AttributeProto *a = &b->attr[b->node.n_attribute];

	onnx__attribute_proto__init(a);
	a->name = (char *)name;
	b->attrs[b->node.n_attribute++] = a;
	return a;
}

static void attr_int(cell_model *b, const char *name, int64_t v)
{
	Onnx__AttributeProto *a = attr(b, name);

	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	a->has_i = 1;
	a->i = v;
}

static void attr_str(cell_model *b, const char *name, const char *v)
{
	Onnx__AttributeProto *a = attr(b, name);

	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
	a->has_s = 1;
	a->s.data = (uint8_t *)v;
	a->s.len = strlen(v);
}

/* A list of strings (NULL-terminated). */
static void attr_strs(cell_model *b, const char *name, const char *const *v)
{
	int k = (int)b->node.n_attribute;
	Onnx__AttributeProto *a = attr(b, name);

	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
	a->strings = b->strs[k];
	for (; v[a->n_strings]; a->n_strings++) {
		b->strs[k][a->n_strings].data = (uint8_t *)v[a->n_strings];
		b->strs[k][a->n_strings].len = strlen(v[a->n_strings]);
	}
}

static fl_graph *load(const cell_model *b, fl_error *err)
{
	size_t len = onnx__model_proto__get_packed_size(&b->m);
	uint8_t *buf = malloc(len + 1);
	fl_graph *g;

	assert_non_null(buf);
	onnx__model_proto__pack(&b->m, buf);
	g = fl_onnx_load_bytes(buf, len, "cell.onnx", NULL, NULL, NULL, err);
	free(buf);
	return g;
}

static fl_graph *load_ok(const cell_model *b)
{
	fl_error err = {""};
	fl_graph *g = load(b, &err);

	if (!g)
		fail_msg("import: %s", err.msg);
	return g;
}

/* ------------------------------------------------------------------ */
/* Against the references                                               */

/* The value of tensor `name` of a run. */
static const fl_buf *value_of(const fl_graph *g, const fl_values *v,
			      const char *name)
{
	int t = fl_graph_find_tensor(g, name);

	assert_true(t >= 0);
	assert_non_null(v->bufs[t].data);
	return &v->bufs[t];
}

/* Evaluates `kind` with output `which` and attrs direction/extra on
 * in[0..n_in-1] into want (shape s, malloc'd). */
static float *reference(fl_op_kind kind, const char *direction,
			const char *which, const char *flag, const fl_buf *in,
			int n_in, fl_shape s)
{
	fl_op op;
	fl_buf o = {.shape = s,
		    .data = malloc((size_t)fl_shape_numel(&s) * sizeof(float))};
	fl_shape shapes[7], got;
	fl_error err = {""};

	assert_non_null(o.data);
	memset(&op, 0, sizeof op);
	op.name = (char *)"ref";
	op.kind = kind;
	op.n_in = n_in;
	op.n_out = 1;
	assert_int_equal(fl_attrs_set_string(&op.attrs, "direction",
					     direction), 0);
	assert_int_equal(fl_attrs_set_string(&op.attrs, "output", which), 0);
	if (flag)
		assert_int_equal(fl_attrs_set_bool(&op.attrs, flag, true), 0);
	for (int k = 0; k < n_in; k++)
		shapes[k] = in[k].shape;
	if (fl_op_info_of(kind)->infer(&op, shapes, &got, &err) < 0)
		fail_msg("reference: %s", err.msg);
	assert_true(fl_shape_equal(&got, &s));
	fl_op_info_of(kind)->eval(&op, in, &o);
	fl_attrs_free(&op.attrs);
	return o.data;
}

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define SH(r, ...) fl_shape_make(r, DIMS(__VA_ARGS__))

/* Every tensor of g has a name of its own, and g exports to ONNX and
 * imports again (an intermediate named "" would be an absent output). */
static void assert_names_round_trip(const fl_graph *g)
{
	fl_error err = {""};
	uint8_t *bytes = NULL;
	size_t n = 0;
	fl_graph *back;

	for (int t = 0; t < g->n_tensors; t++) {
		assert_true(g->tensors[t].name[0] != '\0');
		for (int u = t + 1; u < g->n_tensors; u++)
			assert_string_not_equal(g->tensors[t].name,
						g->tensors[u].name);
	}
	if (fl_export_onnx_bytes(g, &bytes, &n, &err) < 0)
		fail_msg("export: %s", err.msg);
	back = fl_onnx_load_bytes(bytes, n, "back.onnx", NULL, NULL, NULL,
				  &err);
	if (!back)
		fail_msg("import of the export: %s", err.msg);
	fl_graph_free(back);
	free(bytes);
}

/* Bidirectional LSTM with B and initial_c missing before P: they are
 * zeros; Y, Y_h (sliced out of Y: the reverse direction's last state is
 * at time 0) and Y_c equal the reference's y, h and c; the graph exports
 * and imports again. */
static void test_onnx_recurrent_lstm_bidirectional(void **state)
{
	static const float zero[2 * 40] = {0};
	static const char *const which[] = {"y", "h", "c"};
	static const char *const names[] = {"Y", "Y_h", "Y_c"};
	cell_model b;
	fl_error err = {""};
	fl_graph *g;
	fl_values *v;
	fl_buf ref_in[7];

	(void)state;
	model_init(&b, "LSTM");
	in(&b, "X", 3, DIMS(3, 2, 4));
	in(&b, "W", 3, DIMS(2, 20, 4));
	in(&b, "R", 3, DIMS(2, 20, 5));
	in(&b, "", 0, NULL);
	in(&b, "", 0, NULL);
	in(&b, "initial_h", 3, DIMS(2, 2, 5));
	in(&b, "", 0, NULL);
	in(&b, "P", 2, DIMS(2, 15));
	out(&b, "Y", 4, DIMS(3, 2, 2, 5));
	out(&b, "Y_h", 3, DIMS(2, 2, 5));
	out(&b, "Y_c", 3, DIMS(2, 2, 5));
	attr_str(&b, "direction", "bidirectional");
	attr_int(&b, "hidden_size", 5);
	g = load_ok(&b);
	assert_names_round_trip(g);
	v = fl_interp_run(g, NULL, &err);
	if (!v)
		fail_msg("run: %s", err.msg);
	ref_in[0] = *value_of(g, v, "X");
	ref_in[1] = *value_of(g, v, "W");
	ref_in[2] = *value_of(g, v, "R");
	ref_in[3] = (fl_buf){.shape = SH(2, 2, 40), .data = (float *)zero};
	ref_in[4] = *value_of(g, v, "initial_h");
	ref_in[5] = (fl_buf){.shape = SH(3, 2, 2, 5), .data = (float *)zero};
	ref_in[6] = *value_of(g, v, "P");
	for (int k = 0; k < 3; k++) {
		const fl_buf *got = value_of(g, v, names[k]);
		float *want = reference(FL_OP_LSTM, "bidirectional", which[k],
					NULL, ref_in, 7, got->shape);

		t_assert_close(got->data, want, fl_shape_numel(&got->shape),
			       1e-6, 1e-5);
		free(want);
	}
	fl_values_free(v);
	fl_graph_free(g);
}

/* [d0, d1, d2] -> [d1, d0, d2] into a malloc'd buffer. */
static float *swap01(const fl_buf *x)
{
	const int64_t *d = x->shape.dim;
	float *t = malloc((size_t)fl_shape_numel(&x->shape) * sizeof *t);

	assert_non_null(t);
	for (int64_t i = 0; i < d[0]; i++)
		for (int64_t j = 0; j < d[1]; j++)
			for (int64_t k = 0; k < d[2]; k++)
				t[(j * d[0] + i) * d[2] + k] =
					x->data[(i * d[1] + j) * d[2] + k];
	return t;
}

/* A reverse GRU with layout 1 (batch first) and linear_before_reset, a
 * constant sequence_lens of all 3: Y [B, T, 1, H] is the reference's y
 * [T, 1, B, H] transposed, Y_h [B, 1, H] its time 0. */
static void test_onnx_recurrent_gru_batch_first(void **state)
{
	static int64_t lens[2] = {3, 3};
	cell_model b;
	fl_error err = {""};
	fl_graph *g;
	fl_values *v;
	fl_buf ref_in[5];
	const fl_buf *y, *yh;
	float *x_t, *h_t, *want;

	(void)state;
	model_init(&b, "GRU");
	in(&b, "X", 3, DIMS(2, 3, 4));
	in(&b, "W", 3, DIMS(1, 15, 4));
	in(&b, "R", 3, DIMS(1, 15, 5));
	in(&b, "B", 2, DIMS(1, 30));
	seq_lens(&b, lens, 2);
	in(&b, "initial_h", 3, DIMS(2, 1, 5));
	out(&b, "Y", 4, DIMS(2, 3, 1, 5));
	out(&b, "Y_h", 3, DIMS(2, 1, 5));
	attr_str(&b, "direction", "reverse");
	attr_int(&b, "layout", 1);
	attr_int(&b, "linear_before_reset", 1);
	g = load_ok(&b);
	v = fl_interp_run(g, NULL, &err);
	if (!v)
		fail_msg("run: %s", err.msg);
	x_t = swap01(value_of(g, v, "X"));
	h_t = swap01(value_of(g, v, "initial_h"));
	ref_in[0] = (fl_buf){.shape = SH(3, 3, 2, 4), .data = x_t};
	ref_in[1] = *value_of(g, v, "W");
	ref_in[2] = *value_of(g, v, "R");
	ref_in[3] = *value_of(g, v, "B");
	ref_in[4] = (fl_buf){.shape = SH(3, 1, 2, 5), .data = h_t};
	want = reference(FL_OP_GRU, "reverse", "y", "linear_before_reset",
			 ref_in, 5, SH(4, 3, 1, 2, 5));
	y = value_of(g, v, "Y");
	yh = value_of(g, v, "Y_h");
	for (int64_t bi = 0; bi < 2; bi++)
		for (int64_t t = 0; t < 3; t++)
			t_assert_close(y->data + (bi * 3 + t) * 5,
				       want + (t * 2 + bi) * 5, 5, 1e-6, 1e-5);
	for (int64_t bi = 0; bi < 2; bi++)
		t_assert_close(yh->data + bi * 5, want + bi * 5, 5, 1e-6, 1e-5);
	free(want);
	free(x_t);
	free(h_t);
	fl_values_free(v);
	fl_graph_free(g);
}

/* ONNX's test_lstm_with_peepholes feeds sequence_lens at run time, so
 * its import is opaque; its data still checks the peepholes: the same
 * cell as an lstm op on X, W, R, B, initial_h, initial_c and P gives
 * ONNX's Y_h (P is 0.1 throughout there: their order is checked by
 * test_recurrent_lstm_ref). */
static void test_onnx_recurrent_peepholes_match_onnx(void **state)
{
	static const char graph[] =
		"{\"format\":\"fuselab-graph/1\",\"name\":\"peep\","
		"\"tensors\":{"
		"\"X\":{\"shape\":[1,2,4],\"role\":\"input\"},"
		"\"W\":{\"shape\":[1,12,4],\"role\":\"input\"},"
		"\"R\":{\"shape\":[1,12,3],\"role\":\"input\"},"
		"\"B\":{\"shape\":[1,24],\"role\":\"input\"},"
		"\"initial_h\":{\"shape\":[1,2,3],\"role\":\"input\"},"
		"\"initial_c\":{\"shape\":[1,2,3],\"role\":\"input\"},"
		"\"P\":{\"shape\":[1,9],\"role\":\"input\"},"
		"\"Y_h\":{\"shape\":[1,2,3],\"role\":\"output\"}},"
		"\"ops\":[{\"name\":\"cell\",\"op\":\"lstm\",\"in\":[\"X\","
		"\"W\",\"R\",\"B\",\"initial_h\",\"initial_c\",\"P\"],"
		"\"out\":\"Y_h\",\"attrs\":{\"output\":\"h\"}}]}";
	static const char data[] = "/usr/share/libonnx-testdata/data/node/"
				   "test_lstm_with_peepholes/test_data_set_0";
	char dir[256], cmd[2048], *out = NULL;
	const char *path;

	(void)state;
	t_make_dir(dir, sizeof dir);
	path = t_write_graph(dir, "peep.json", graph);
	/* every input but sequence_lens (input_4), renumbered */
	snprintf(cmd, sizeof cmd, "mkdir %s/in %s/out && n=0 && "
		 "for i in 0 1 2 3 5 6 7; do cp %s/input_$i.pb "
		 "%s/in/input_$n.pb; n=$((n+1)); done && "
		 "cp %s/output_0.pb %s/out/", dir, dir, data, dir, data, dir);
	if (t_run(cmd, &out) != 0)
		fail_msg("%s", out);
	free(out);
	snprintf(cmd, sizeof cmd, "--batch --inputs %s/in --expect %s/out %s",
		 dir, dir, path);
	if (t_fuselab(cmd, &out) != 0)
		fail_msg("%s", out);
	t_assert_contains(out, "expect Y_h [1,2,3]: ok");
	free(out);
	t_remove_dir(dir);
}

/* ------------------------------------------------------------------ */
/* The opaque fallback and errors                                       */

/* An RNN on X, W, R with Y_h asked for. */
static void rnn_model(cell_model *b)
{
	model_init(b, "RNN");
	in(b, "X", 3, DIMS(3, 2, 4));
	in(b, "W", 3, DIMS(1, 5, 4));
	in(b, "R", 3, DIMS(1, 5, 5));
}

/* The one op of g is an opaque custom op whose reason contains why,
 * and running says so. */
static void assert_opaque(fl_graph *g, const char *why)
{
	fl_error err = {""};
	const fl_attr *a;

	assert_int_equal(g->n_ops, 1);
	assert_int_equal(g->ops[0].kind, FL_OP_CUSTOM);
	a = fl_attrs_find(&g->ops[0].attrs, "reason");
	assert_non_null(a);
	t_assert_contains(a->str, why);
	assert_int_equal(fl_graph_check_computable(g, "run", &err), -1);
	t_assert_contains(err.msg, why);
}

static void test_onnx_recurrent_opaque(void **state)
{
	static const char *const acts[] = {"Softsign", NULL};
	static int64_t short_lens[2] = {3, 2}, full_lens[2] = {3, 3};
	cell_model b;
	fl_graph *g;

	(void)state;
	rnn_model(&b);
	out(&b, "", 0, NULL);
	out(&b, "Y_h", 3, DIMS(1, 2, 5));
	attr_strs(&b, "activations", acts);
	g = load_ok(&b);
	assert_opaque(g, "activation \"Softsign\" is not one fuselab's rnn "
		      "computes (Sigmoid, Tanh, Relu)");
	fl_graph_free(g);

	rnn_model(&b);
	in(&b, "", 0, NULL);
	seq_lens(&b, short_lens, 2);
	out(&b, "", 0, NULL);
	out(&b, "Y_h", 3, DIMS(1, 2, 5));
	g = load_ok(&b);
	assert_opaque(g, "sequence_lens[1] is 2, not the sequence length 3");
	fl_graph_free(g);

	/* all equal to T: no effect, the rnn op alone */
	rnn_model(&b);
	in(&b, "", 0, NULL);
	seq_lens(&b, full_lens, 2);
	out(&b, "", 0, NULL);
	out(&b, "Y_h", 3, DIMS(1, 2, 5));
	g = load_ok(&b);
	assert_int_equal(g->n_ops, 1);
	assert_int_equal(g->ops[0].kind, FL_OP_RNN);
	fl_graph_free(g);
}

static void load_fails(const cell_model *b, const char *want)
{
	fl_error err = {""};
	fl_graph *g = load(b, &err);

	if (g)
		fail_msg("loaded, expected \"%s\"", want);
	t_assert_contains(err.msg, want);
}

static void test_onnx_recurrent_bad_attributes(void **state)
{
	cell_model b;

	(void)state;
	rnn_model(&b);
	out(&b, "Y", 4, DIMS(3, 1, 2, 5));
	attr_str(&b, "direction", "sideways");
	load_fails(&b, "node cell (RNN): attribute direction: \"sideways\" is "
		   "not forward, reverse or bidirectional");

	rnn_model(&b);
	out(&b, "Y", 4, DIMS(3, 1, 2, 5));
	attr_int(&b, "layout", 2);
	load_fails(&b, "attribute layout: 2 is not 0 or 1");

	rnn_model(&b);
	out(&b, "Y", 4, DIMS(3, 1, 2, 5));
	attr_int(&b, "hidden_size", 4);
	load_fails(&b, "attrs.hidden_size: 4, but r gives 5");
}

FL_SUITE(onnx_recurrent,
	 cmocka_unit_test(test_onnx_recurrent_lstm_bidirectional),
	 cmocka_unit_test(test_onnx_recurrent_gru_batch_first),
	 cmocka_unit_test(test_onnx_recurrent_peepholes_match_onnx),
	 cmocka_unit_test(test_onnx_recurrent_opaque),
	 cmocka_unit_test(test_onnx_recurrent_bad_attributes));
