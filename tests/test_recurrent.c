/* Recurrent cells (lstm, gru, rnn; engine/ir/ops_recurrent.c): each
 * cell's reference against values worked out by hand from the ONNX
 * equations, attribute and shape errors, the expansion into primitives
 * (only primitives, per-step matmuls and elementwise cell math, the same
 * values as the reference for every direction, output and option), the
 * partition stage fusing a step's matmul with its cell math, and every
 * strategy's generated code verified against the reference.
 *
 * Graph JSON is written with single quotes and converted before
 * loading, as in test_compound.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "interp.h"
#include "ops.h"
#include "test_util.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define SH(...) fl_shape_make(COUNT(((const int64_t[]){__VA_ARGS__})), \
			      (const int64_t[]){__VA_ARGS__})

/* ------------------------------------------------------------------ */
/* The reference against hand-computed values                          */

static double sig(double v)
{
	return 1 / (1 + exp(-v));
}

/* An op of `kind` with inputs of the given shapes and data, attributes
 * from `attrs` (key, value pairs of strings; a value starting with a
 * digit, '-' or '.' is a number). */
typedef struct cell_case {
	fl_op op;
	fl_buf in[7];
} cell_case;

static void set_attr(fl_op *op, const char *key, const char *v)
{
	if (strchr("0123456789-.", v[0]))
		assert_int_equal(fl_attrs_set_number(&op->attrs, key,
						     strtod(v, NULL)), 0);
	else if (!strcmp(v, "true"))
		assert_int_equal(fl_attrs_set_bool(&op->attrs, key, true), 0);
	else
		assert_int_equal(fl_attrs_set_string(&op->attrs, key, v), 0);
}

static void case_init(cell_case *c, fl_op_kind kind, int n_in,
		      const char *const *attrs)
{
	memset(c, 0, sizeof *c);
	c->op.name = (char *)"cell";
	c->op.kind = kind;
	c->op.n_in = n_in;
	c->op.n_out = 1;
	for (int k = 0; attrs && attrs[k]; k += 2)
		set_attr(&c->op, attrs[k], attrs[k + 1]);
}

static void case_in(cell_case *c, int k, fl_shape s, const float *data)
{
	c->in[k].shape = s;
	c->in[k].data = (float *)data;
}

/* Infers, checks the shape, evaluates and compares with want. */
static void case_check(cell_case *c, fl_shape shape, const double *want)
{
	const fl_op_info *info = fl_op_info_of(c->op.kind);
	fl_shape in[7], out_shape;
	fl_error err = {""};
	float got[64];
	fl_buf out;
	int64_t n;

	for (int k = 0; k < c->op.n_in; k++)
		in[k] = c->in[k].shape;
	memset(&out_shape, 0, sizeof out_shape);
	if (info->infer(&c->op, in, &out_shape, &err) < 0)
		fail_msg("%s: %s", info->name, err.msg);
	assert_true(fl_shape_equal(&out_shape, &shape));
	n = fl_shape_numel(&shape);
	assert_true(n <= 64);
	for (int64_t i = 0; i < n; i++)
		got[i] = NAN;
	out.shape = out_shape;
	out.data = got;
	info->eval(&c->op, c->in, &out);
	for (int64_t i = 0; i < n; i++)
		if (fabs(got[i] - want[i]) > 1e-6 + 1e-5 * fabs(want[i]))
			fail_msg("%s [%lld]: %.9g, want %.9g", info->name,
				 (long long)i, got[i], want[i]);
	fl_attrs_free(&c->op.attrs);
}

/* rnn, T 2, one unit: h_t = tanh(0.5 x_t + 2 h_{t-1} + 0.1 - 0.2),
 * forward and reverse (which runs t = 1 first and writes y at t). */
static void test_recurrent_rnn_ref(void **state)
{
	static const float x[] = {1, -1}, w[] = {0.5f}, r[] = {2};
	static const float b[] = {0.1f, -0.2f};
	static const char *const rev[] = {"direction", "reverse", NULL};
	static const char *const relu[] = {"activations", "Relu",
					   "output", "h", NULL};
	cell_case c;
	double h0 = tanh(0.5 - 0.1), h1 = tanh(-0.5 + 2 * h0 - 0.1);
	double r1 = tanh(-0.5 - 0.1), r0 = tanh(0.5 + 2 * r1 - 0.1);

	(void)state;
	case_init(&c, FL_OP_RNN, 4, NULL);
	case_in(&c, 0, SH(2, 1, 1), x);
	case_in(&c, 1, SH(1, 1, 1), w);
	case_in(&c, 2, SH(1, 1, 1), r);
	case_in(&c, 3, SH(1, 2), b);
	case_check(&c, SH(2, 1, 1, 1), (const double[]){h0, h1});

	case_init(&c, FL_OP_RNN, 4, rev);
	memcpy(c.in, (fl_buf[]){{.shape = SH(2, 1, 1), .data = (float *)x},
				{.shape = SH(1, 1, 1), .data = (float *)w},
				{.shape = SH(1, 1, 1), .data = (float *)r},
				{.shape = SH(1, 2), .data = (float *)b}}, 4 * sizeof(fl_buf));
	case_check(&c, SH(2, 1, 1, 1), (const double[]){r0, r1});

	/* relu: h0 = relu(0.4) = 0.4, h1 = relu(-0.5 + 0.8 - 0.1) */
	case_init(&c, FL_OP_RNN, 4, relu);
	memcpy(c.in, (fl_buf[]){{.shape = SH(2, 1, 1), .data = (float *)x},
				{.shape = SH(1, 1, 1), .data = (float *)w},
				{.shape = SH(1, 1, 1), .data = (float *)r},
				{.shape = SH(1, 2), .data = (float *)b}}, 4 * sizeof(fl_buf));
	case_check(&c, SH(1, 1, 1), (const double[]){-0.5 + 0.8 - 0.1});
}

/* lstm, one step, one unit, gates i o f c with W = 1 2 3 4, x = 0.5,
 * h0 = 0, c0 = 1, peepholes i o f = 0.1 0.2 0.3. */
static void test_recurrent_lstm_ref(void **state)
{
	static const float x[] = {0.5f}, w[] = {1, 2, 3, 4};
	static const float r[] = {0, 0, 0, 0}, b[8] = {0}, h0[] = {0};
	static const float c0[] = {1}, p[] = {0.1f, 0.2f, 0.3f};
	static const char *const outs[][3] = {{"output", "y", NULL},
					      {"output", "h", NULL},
					      {"output", "c", NULL}};
	static const char *const forget[] = {"input_forget", "true",
					     "output", "c", NULL};
	double i = sig(0.5 + 0.1), f = sig(1.5 + 0.3), g = tanh(2.0);
	double c1 = f * 1 + i * g, o = sig(1.0 + 0.2 * c1);
	double h1 = o * tanh(c1), want[3] = {h1, h1, c1};
	cell_case c;

	(void)state;
	for (int k = 0; k < 3; k++) {
		case_init(&c, FL_OP_LSTM, 7, outs[k]);
		case_in(&c, 0, SH(1, 1, 1), x);
		case_in(&c, 1, SH(1, 4, 1), w);
		case_in(&c, 2, SH(1, 4, 1), r);
		case_in(&c, 3, SH(1, 8), b);
		case_in(&c, 4, SH(1, 1, 1), h0);
		case_in(&c, 5, SH(1, 1, 1), c0);
		case_in(&c, 6, SH(1, 3), p);
		case_check(&c, k ? SH(1, 1, 1) : SH(1, 1, 1, 1), &want[k]);
	}
	/* input_forget couples the gates: f = 1 - i */
	case_init(&c, FL_OP_LSTM, 7, forget);
	case_in(&c, 0, SH(1, 1, 1), x);
	case_in(&c, 1, SH(1, 4, 1), w);
	case_in(&c, 2, SH(1, 4, 1), r);
	case_in(&c, 3, SH(1, 8), b);
	case_in(&c, 4, SH(1, 1, 1), h0);
	case_in(&c, 5, SH(1, 1, 1), c0);
	case_in(&c, 6, SH(1, 3), p);
	case_check(&c, SH(1, 1, 1), (const double[]){(1 - i) * 1 + i * g});
}

/* gru, one step, one unit: W z r h = 1 -1 0.5, R = 0.5 0.25 2, Wb = 0.1
 * 0.2 0.3, Rb = -0.1 0.05 0.2, x = 1, h0 = 0.4; both forms of the
 * candidate. */
static void test_recurrent_gru_ref(void **state)
{
	static const float x[] = {1}, w[] = {1, -1, 0.5f};
	static const float r[] = {0.5f, 0.25f, 2};
	static const float b[] = {0.1f, 0.2f, 0.3f, -0.1f, 0.05f, 0.2f};
	static const float h0[] = {0.4f};
	static const char *const lbr[] = {"linear_before_reset", "true",
					  NULL};
	double z = sig(1 + 0.5 * 0.4 + 0.1 - 0.1);
	double rg = sig(-1 + 0.25 * 0.4 + 0.2 + 0.05);
	double n0 = tanh(0.5 + 0.3 + (rg * 0.4) * 2 + 0.2);
	double n1 = tanh(0.5 + 0.3 + rg * (2 * 0.4 + 0.2));
	cell_case c;

	(void)state;
	for (int k = 0; k < 2; k++) {
		double n = k ? n1 : n0;

		case_init(&c, FL_OP_GRU, 5, k ? lbr : NULL);
		case_in(&c, 0, SH(1, 1, 1), x);
		case_in(&c, 1, SH(1, 3, 1), w);
		case_in(&c, 2, SH(1, 3, 1), r);
		case_in(&c, 3, SH(1, 6), b);
		case_in(&c, 4, SH(1, 1, 1), h0);
		case_check(&c, SH(1, 1, 1, 1),
			   (const double[]){(1 - z) * n + z * 0.4});
	}
}

/* ------------------------------------------------------------------ */
/* Errors                                                               */

static void infer_fails(fl_op_kind kind, const char *key, const char *v,
			const fl_shape *in, int n_in, const char *expect)
{
	fl_op op;

	memset(&op, 0, sizeof op);
	op.name = (char *)"cell";
	op.kind = kind;
	op.n_in = n_in;
	op.n_out = 1;
	if (key)
		set_attr(&op, key, v);
	t_infer_fails(&op, in, expect);
	fl_attrs_free(&op.attrs);
}

static void test_recurrent_errors(void **state)
{
	const fl_shape lstm[] = {SH(2, 3, 4), SH(1, 20, 4), SH(1, 20, 5)};
	const fl_shape bad_w[] = {SH(2, 3, 4), SH(1, 20, 3), SH(1, 20, 5)};
	const fl_shape gru[] = {SH(2, 3, 4), SH(1, 15, 4), SH(1, 15, 5),
				SH(1, 30), SH(1, 2, 5)};
	const fl_shape x2[] = {SH(3, 4), SH(1, 5, 4), SH(1, 5, 5)};

	(void)state;
	infer_fails(FL_OP_LSTM, "direction", "sideways", lstm, 3,
		    "attrs.direction: \"sideways\" is not forward, reverse or "
		    "bidirectional");
	infer_fails(FL_OP_LSTM, "activations", "sigmoid,softplus,tanh", lstm,
		    3, "attrs.activations: \"softplus\" is not supported "
		    "(sigmoid, tanh, relu)");
	infer_fails(FL_OP_LSTM, "activations", "sigmoid,tanh", lstm, 3,
		    "attrs.activations: 2 names for 1 direction(s), "
		    "expected 3");
	infer_fails(FL_OP_GRU, "output", "c", gru, 5,
		    "attrs.output: \"c\" is not y or h");
	infer_fails(FL_OP_LSTM, "clip", "-1", lstm, 3,
		    "attrs.clip: must be > 0, got -1");
	infer_fails(FL_OP_LSTM, "hidden_size", "4", lstm, 3,
		    "attrs.hidden_size: 4, but r gives 5");
	infer_fails(FL_OP_LSTM, NULL, NULL, bad_w, 3,
		    "in[1]: w shape [1,20,3], expected [1,20,4]");
	infer_fails(FL_OP_GRU, NULL, NULL, gru, 5,
		    "in[4]: h0 shape [1,2,5], expected [1,3,5]");
	infer_fails(FL_OP_RNN, NULL, NULL, x2, 3,
		    "in[0]: x needs rank 3, got shape [3,4]");
	infer_fails(FL_OP_LSTM, "direction", "bidirectional", lstm, 3,
		    "in[1]: w shape [1,20,4], expected [2,20,4]");
}

/* ------------------------------------------------------------------ */
/* The expansion                                                        */

#define HEAD "{'format':'fuselab-graph/1','name':'cells','tensors':{"
#define IN(n, s) "'" n "':{'shape':" s ",'role':'input'},"
#define PARAM(n, s) "'" n "':{'shape':" s ",'role':'param'},"
#define OUT(n, s) "'" n "':{'shape':" s ",'role':'output'}"
#define OPS "},'ops':["
#define TAIL "]}"

/* lstm, T 3, B 2, I 4, H 5, with every optional input; D directions. */
#define LSTM_TENSORS(D)                                                      \
	IN("x", "[3,2,4]") PARAM("w", "[" #D ",20,4]")                       \
	PARAM("r", "[" #D ",20,5]") PARAM("b", "[" #D ",40]")                \
	IN("h0", "[" #D ",2,5]") IN("c0", "[" #D ",2,5]")                    \
	PARAM("p", "[" #D ",15]")
#define LSTM_IN "'in':['x','w','r','b','h0','c0','p']"
/* gru and rnn with b and h0. */
#define CELL_IN "'in':['x','w','r','b','h0']"

static const char *const lstm_bidi_y =
	HEAD LSTM_TENSORS(2) OUT("y", "[3,2,2,5]") OPS
	"{'name':'cell','op':'lstm'," LSTM_IN ",'out':'y','attrs':{"
	"'direction':'bidirectional','clip':0.8}}" TAIL;
static const char *const lstm_rev_c =
	HEAD LSTM_TENSORS(1) OUT("c", "[1,2,5]") OPS
	"{'name':'cell','op':'lstm'," LSTM_IN ",'out':'c','attrs':{"
	"'direction':'reverse','input_forget':true,'output':'c',"
	"'activations':'tanh,sigmoid,relu'}}" TAIL;
static const char *const lstm_plain_h =
	HEAD IN("x", "[3,2,4]") PARAM("w", "[1,20,4]") PARAM("r", "[1,20,5]")
	OUT("h", "[1,2,5]") OPS
	"{'name':'cell','op':'lstm','in':['x','w','r'],'out':'h',"
	"'attrs':{'output':'h','hidden_size':5}}" TAIL;
static const char *const gru_bidi_h =
	HEAD IN("x", "[3,2,4]") PARAM("w", "[2,15,4]") PARAM("r", "[2,15,5]")
	PARAM("b", "[2,30]") IN("h0", "[2,2,5]") OUT("h", "[2,2,5]") OPS
	"{'name':'cell','op':'gru'," CELL_IN ",'out':'h','attrs':{"
	"'direction':'bidirectional','output':'h'}}" TAIL;
static const char *const gru_lbr_y =
	HEAD IN("x", "[3,2,4]") PARAM("w", "[1,15,4]") PARAM("r", "[1,15,5]")
	PARAM("b", "[1,30]") IN("h0", "[1,2,5]") OUT("y", "[3,1,2,5]") OPS
	"{'name':'cell','op':'gru'," CELL_IN ",'out':'y','attrs':{"
	"'linear_before_reset':true,'clip':0.5}}" TAIL;
static const char *const rnn_rev_y =
	HEAD IN("x", "[3,2,4]") PARAM("w", "[1,5,4]") PARAM("r", "[1,5,5]")
	PARAM("b", "[1,10]") IN("h0", "[1,2,5]") OUT("y", "[3,1,2,5]") OPS
	"{'name':'cell','op':'rnn'," CELL_IN ",'out':'y','attrs':{"
	"'direction':'reverse','activations':'Relu'}}" TAIL;

static int count_kind(const fl_graph *g, fl_op_kind kind)
{
	int n = 0;

	for (int i = 0; i < g->n_ops; i++)
		n += g->ops[i].kind == kind;
	return n;
}

/* Runs g and e and compares the output of g's op. */
static void assert_same_output(const fl_graph *g, const fl_graph *e)
{
	fl_error err = {""};
	fl_values *vg = fl_interp_run(g, NULL, &err);
	fl_values *ve = fl_interp_run(e, NULL, &err);
	int t = g->ops[0].out[0];

	assert_non_null(vg);
	assert_non_null(ve);
	t_assert_close(ve->bufs[t].data, vg->bufs[t].data,
		       fl_shape_numel(&g->tensors[t].shape), 1e-6, 1e-5);
	fl_values_free(vg);
	fl_values_free(ve);
}

/* Every op of e but the last writer of the output is read by another
 * (an unread register trips the sanitizer build's state checks). */
static void assert_no_dead_ops(const fl_graph *e, int out)
{
	for (int i = 0; i < e->n_ops; i++)
		if (e->ops[i].out[0] != out &&
		    fl_graph_count_uses(e, e->ops[i].out[0]) == 0)
			fail_msg("op \"%s\" is read by no op", e->ops[i].name);
}

/* Opens the one cell of `json`: only primitives, each from the cell and
 * read by another, `matmuls` matmuls (two per step and direction, plus
 * gru's reset product), the gate nonlinearities, and the reference's
 * values. */
static void check_opens(const char *json, int matmuls, fl_op_kind act,
			int acts)
{
	fl_graph *g = t_load_q(json);
	fl_error err = {""};
	fl_graph *e = fl_graph_expand_compounds(g, &err);

	if (!e)
		fail_msg("expansion: %s", err.msg);
	for (int i = 0; i < e->n_ops; i++) {
		if (fl_op_is_compound(e->ops[i].kind))
			fail_msg("op \"%s\" is still a %s", e->ops[i].name,
				 fl_op_kind_name(e->ops[i].kind));
		assert_string_equal(e->ops[i].prov.origin, "cell");
		assert_string_equal(e->ops[i].prov.compound,
				    fl_op_kind_name(g->ops[0].kind));
	}
	assert_no_dead_ops(e, g->ops[0].out[0]);
	assert_int_equal(count_kind(e, FL_OP_MATMUL), matmuls);
	assert_int_equal(count_kind(e, act), acts);
	assert_same_output(g, e);
	fl_graph_free(e);
	fl_graph_free(g);
}

static void test_recurrent_lstm_opens(void **state)
{
	(void)state;
	/* 3 steps x 2 directions; sigmoid for i, f, o */
	check_opens(lstm_bidi_y, 12, FL_OP_SIGMOID, 18);
	/* f is tanh here, g sigmoid, h relu; input_forget: no forget gate;
	 * only c wanted: no o or h at the last step */
	check_opens(lstm_rev_c, 6, FL_OP_RELU, 2);
	check_opens(lstm_rev_c, 6, FL_OP_TANH, 5);
	check_opens(lstm_plain_h, 6, FL_OP_TANH, 6);
}

static void test_recurrent_gru_opens(void **state)
{
	(void)state;
	/* without linear_before_reset a third matmul per step: (r*h) R_h^T */
	check_opens(gru_bidi_h, 18, FL_OP_SIGMOID, 12);
	check_opens(gru_lbr_y, 6, FL_OP_TANH, 3);
}

static void test_recurrent_rnn_opens(void **state)
{
	(void)state;
	check_opens(rnn_rev_y, 6, FL_OP_RELU, 3);
}

/* A bad attribute is reported when the graph loads, naming the op. */
static void test_recurrent_load_errors(void **state)
{
	(void)state;
	t_load_fails("{\"format\":\"fuselab-graph/1\",\"name\":\"t\","
		     "\"tensors\":{\"x\":{\"shape\":[3,2,4],\"role\":\"input\"},"
		     "\"w\":{\"shape\":[1,5,4],\"role\":\"param\"},"
		     "\"r\":{\"shape\":[1,5,5],\"role\":\"param\"},"
		     "\"y\":{\"shape\":[3,1,2,5],\"role\":\"output\"}},"
		     "\"ops\":[{\"name\":\"cell\",\"op\":\"rnn\","
		     "\"in\":[\"x\",\"w\",\"r\"],\"out\":\"y\","
		     "\"attrs\":{\"activations\":\"Softsign\"}}]}",
		     "attrs.activations: \"Softsign\" is not supported");
}

/* ------------------------------------------------------------------ */
/* Partition and every strategy                                         */

/* Double quotes for the single ones of a graph text (static buffer). */
static const char *dq(const char *single_quoted)
{
	static char buf[4096];
	size_t n = strlen(single_quoted);

	assert_true(n < sizeof buf);
	for (size_t i = 0; i <= n; i++)
		buf[i] = single_quoted[i] == '\'' ? '"' : single_quoted[i];
	return buf;
}

/* The partition stage opens the rnn and fuses a step's recurrent matmul
 * (h R^T) with the cell math that follows it: the add, the activation
 * and the reshape into y. */
static void test_recurrent_partition_fuses_steps(void **state)
{
	char dir[256], *out;
	const char *path;

	(void)state;
	t_make_dir(dir, sizeof dir);
	path = t_write_graph(dir, "rnn.json", dq(rnn_rev_y));
	out = t_fuselab_ok("--stage partition", path);
	t_assert_contains(out, "partition: ");
	t_assert_contains(out, "cell.t0.hr cell.t0.pre cell.t0.h cell.t0.y");
	free(out);
	t_remove_dir(dir);
}

/* Every strategy's generated code runs and verifies against the cells'
 * own references (the sanitizer pass runs apollo alone). */
static void verifies_everywhere(const char *name, const char *json)
{
	char dir[256];
	const char *path;

	t_make_dir(dir, sizeof dir);
	path = t_write_graph(dir, name, dq(json));
	t_verifies_every_strategy(path, dir, name);
	t_remove_dir(dir);
}

static void test_recurrent_lstm_strategies(void **state)
{
	(void)state;
	verifies_everywhere("lstm_bidi.json", lstm_bidi_y);
	verifies_everywhere("lstm_rev.json", lstm_rev_c);
}

static void test_recurrent_gru_strategies(void **state)
{
	(void)state;
	verifies_everywhere("gru_bidi.json", gru_bidi_h);
	verifies_everywhere("gru_lbr.json", gru_lbr_y);
}

static void test_recurrent_rnn_strategies(void **state)
{
	(void)state;
	verifies_everywhere("rnn_rev.json", rnn_rev_y);
}

FL_SUITE(recurrent,
	 cmocka_unit_test(test_recurrent_rnn_ref),
	 cmocka_unit_test(test_recurrent_lstm_ref),
	 cmocka_unit_test(test_recurrent_gru_ref),
	 cmocka_unit_test(test_recurrent_errors),
	 cmocka_unit_test(test_recurrent_lstm_opens),
	 cmocka_unit_test(test_recurrent_gru_opens),
	 cmocka_unit_test(test_recurrent_rnn_opens),
	 cmocka_unit_test(test_recurrent_load_errors),
	 cmocka_unit_test(test_recurrent_partition_fuses_steps),
	 cmocka_unit_test(test_recurrent_lstm_strategies),
	 cmocka_unit_test(test_recurrent_gru_strategies),
	 cmocka_unit_test(test_recurrent_rnn_strategies));
