/* The ONNX exporter (exporters/onnx.h): every sample and a graph for
 * every op kind is exported, unpacked with protobuf-c and held to what an
 * ONNX model must be -- opset 17, operator types ONNX has, every node
 * input defined before it is read, the graph's inputs, outputs and
 * constants (their data decoded back) -- and, where it matters, to the
 * operators and attributes each op must become.  ONNX's own checker
 * (python3-onnx, full check with strict shape inference) reads every
 * sample's file, and the command line writes, refuses and documents
 * --export-onnx. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loader.h"
#include "onnx.h"
#include "onnx_tensor.h"
#include "test_util.h"

/* ---- what a model must be ---------------------------------------------- */

/* Operator types of ONNX's default domain up to opset 17 that an export
 * may use.  Gelu (opset 20) is deliberately not here. */
static const char *const onnx_ops[] = {
	"Abs", "Add", "And", "AveragePool", "BatchNormalization", "Cast",
	"Clip", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Or",
	"Xor",
	"Concat", "Conv", "CumSum", "Div", "Equal", "Erf", "Exp", "Expand",
	"Elu", "Floor", "Gather", "Gemm", "HardSigmoid", "HardSwish",
	"Identity", "LayerNormalization",
	"LeakyRelu", "Log", "LogSoftmax", "MatMul", "Max", "MaxPool", "Min",
	"Mul", "Neg", "Not", "Pad", "Pow", "Reciprocal", "ReduceMax",
	"ReduceMean", "ReduceMin", "ReduceSum", "Relu", "Reshape", "Round",
	"Sigmoid", "Slice", "Softmax", "Sqrt", "Sub", "Tanh", "Transpose",
	"Where",
	/* issue 29's unary primitives */
	"Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh",
	"Acosh", "Atanh", "Ceil", "Sign", "Mod", "ReduceProd", "BitShift",
	"GatherElements", "ScatterElements", "IsNaN", "IsInf",
};

static bool is_onnx_op(const char *type)
{
	for (size_t k = 0; k < sizeof onnx_ops / sizeof onnx_ops[0]; k++)
		if (!strcmp(onnx_ops[k], type))
			return true;
	return false;
}

static Onnx__ModelProto *export_model(const fl_graph *g)
{
	fl_error err = {""};
	Onnx__ModelProto *m;
	uint8_t *bytes;
	size_t n;

	if (fl_export_onnx_bytes(g, &bytes, &n, &err) < 0)
		fail_msg("%s: export: %s", g->name, err.msg);
	m = onnx__model_proto__unpack(NULL, n, bytes);
	free(bytes);
	if (!m)
		fail_msg("%s: the export does not unpack as a ModelProto",
			 g->name);
	return m;
}

static void assert_header(const Onnx__ModelProto *m, const fl_graph *g)
{
	assert_true(m->has_ir_version);
	assert_int_equal(m->ir_version, 8);
	assert_int_equal(m->n_opset_import, 1);
	assert_string_equal(m->opset_import[0]->domain, "");
	assert_int_equal(m->opset_import[0]->version, 17);
	assert_string_equal(m->producer_name, "fuselab");
	assert_string_equal(m->producer_version, FL_VERSION);
	assert_non_null(m->graph);
	assert_string_equal(m->graph->name, g->name);
	if (g->doc)
		assert_string_equal(m->graph->doc_string, g->doc);
}

/* A set of names, linear (models here are small). */
typedef struct names {
	int n, cap;
	const char **v;
} names;

static bool names_has(const names *s, const char *name)
{
	for (int k = 0; k < s->n; k++)
		if (!strcmp(s->v[k], name))
			return true;
	return false;
}

/* Adds name; fails the test when it is defined already (SSA). */
static void names_define(names *s, const char *name, const char *graph)
{
	if (names_has(s, name))
		fail_msg("%s: \"%s\" is defined twice", graph, name);
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->v = realloc(s->v, s->cap * sizeof *s->v);
		assert_non_null(s->v);
	}
	s->v[s->n++] = name;
}

/* Every node input is a graph input, an initializer or the output of an
 * earlier node; every value and every node has a name of its own; every
 * type is ONNX's. */
static void assert_topological(const Onnx__GraphProto *gp)
{
	names defined = {0}, node_names = {0};

	for (size_t k = 0; k < gp->n_input; k++)
		names_define(&defined, gp->input[k]->name, gp->name);
	for (size_t k = 0; k < gp->n_initializer; k++)
		names_define(&defined, gp->initializer[k]->name, gp->name);
	for (size_t k = 0; k < gp->n_node; k++) {
		const Onnx__NodeProto *nd = gp->node[k];

		if (!is_onnx_op(nd->op_type))
			fail_msg("%s: node %s: \"%s\" is no ONNX operator",
				 gp->name, nd->name, nd->op_type);
		assert_true(nd->name && nd->name[0]);
		names_define(&node_names, nd->name, gp->name);
		for (size_t i = 0; i < nd->n_input; i++)
			if (!names_has(&defined, nd->input[i]))
				fail_msg("%s: node %s reads \"%s\" before "
					 "it is defined", gp->name, nd->name,
					 nd->input[i]);
		for (size_t i = 0; i < nd->n_output; i++)
			names_define(&defined, nd->output[i], gp->name);
	}
	for (size_t k = 0; k < gp->n_output; k++)
		if (!names_has(&defined, gp->output[k]->name))
			fail_msg("%s: output %s is never computed", gp->name,
				 gp->output[k]->name);
	free(defined.v);
	free(node_names.v);
}

/* vi is tensor t of g: t's element type and static shape. */
static void assert_value_info(const Onnx__ValueInfoProto *vi,
			      const fl_tensor *t)
{
	const Onnx__TypeProto__Tensor *tt;

	assert_string_equal(vi->name, t->name);
	assert_int_equal(vi->type->value_case,
			 ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE);
	tt = vi->type->tensor_type;
	assert_int_equal(tt->elem_type, fl_onnx_from_dtype(t->dtype));
	assert_int_equal(tt->shape->n_dim, t->shape.rank);
	for (int d = 0; d < t->shape.rank; d++)
		assert_int_equal(tt->shape->dim[d]->dim_value, t->shape.dim[d]);
}

static const Onnx__TensorProto *find_initializer(const Onnx__GraphProto *gp,
						 const char *name)
{
	for (size_t k = 0; k < gp->n_initializer; k++)
		if (!strcmp(gp->initializer[k]->name, name))
			return gp->initializer[k];
	return NULL;
}

/* Const t is an initializer of its element type holding exactly its
 * values (a splat written out over the shape). */
static void assert_const_data(const Onnx__GraphProto *gp, const fl_tensor *t)
{
	const Onnx__TensorProto *init = find_initializer(gp, t->name);
	fl_error err = {""};
	fl_onnx_values v;

	if (!init)
		fail_msg("%s: const %s is no initializer", gp->name, t->name);
	if (fl_onnx_tensor_values(init, NULL, &v, &err) < 0)
		fail_msg("%s: %s: %s", gp->name, t->name, err.msg);
	assert_int_equal(v.dtype, fl_onnx_from_dtype(t->dtype));
	assert_true(fl_shape_equal(&v.shape, &t->shape));
	assert_int_equal(v.n, fl_shape_numel(&t->shape));
	for (int64_t k = 0; t->ints && k < v.n; k++)	/* exact */
		assert_int_equal(v.i[k], t->ints[t->n_data == 1 ? 0 : k]);
	for (int64_t k = 0; t->data && k < v.n; k++)
		if (memcmp(&v.f[k], &t->data[t->n_data == 1 ? 0 : k], 4))
			fail_msg("%s: %s[%lld] = %g, the graph holds %g",
				 gp->name, t->name, (long long)k, v.f[k],
				 t->data[t->n_data == 1 ? 0 : k]);
	fl_onnx_values_free(&v);
}

/* Inputs are g's inputs and params, outputs its outputs (in tensor
 * order, with their shapes), constants initializers; a name the graph
 * gives an input or a constant is never computed by a node. */
static void assert_interface(const Onnx__GraphProto *gp, const fl_graph *g)
{
	size_t n_in = 0, n_out = 0;

	for (int i = 0; i < g->n_tensors; i++) {
		const fl_tensor *t = &g->tensors[i];

		if (t->role == FL_ROLE_INPUT || t->role == FL_ROLE_PARAM) {
			assert_true(n_in < gp->n_input);
			assert_value_info(gp->input[n_in++], t);
		} else if (t->role == FL_ROLE_OUTPUT) {
			assert_true(n_out < gp->n_output);
			assert_value_info(gp->output[n_out++], t);
		} else if (t->role == FL_ROLE_CONST) {
			assert_const_data(gp, t);
		}
	}
	assert_int_equal(n_in, gp->n_input);
	assert_int_equal(n_out, gp->n_output);
}

/* Everything above, on the export of g; the model for more checks. */
static Onnx__ModelProto *check_export(const fl_graph *g)
{
	Onnx__ModelProto *m = export_model(g);

	assert_header(m, g);
	assert_topological(m->graph);
	assert_interface(m->graph, g);
	return m;
}

static int count_type(const Onnx__ModelProto *m, const char *type)
{
	int n = 0;

	for (size_t k = 0; k < m->graph->n_node; k++)
		n += !strcmp(m->graph->node[k]->op_type, type);
	return n;
}

static const Onnx__NodeProto *node_of_type(const Onnx__ModelProto *m,
					   const char *type)
{
	for (size_t k = 0; k < m->graph->n_node; k++)
		if (!strcmp(m->graph->node[k]->op_type, type))
			return m->graph->node[k];
	fail_msg("%s: no %s node", m->graph->name, type);
	return NULL;
}

static const Onnx__AttributeProto *attr_of(const Onnx__NodeProto *nd,
					   const char *name)
{
	for (size_t k = 0; k < nd->n_attribute; k++)
		if (!strcmp(nd->attribute[k]->name, name))
			return nd->attribute[k];
	fail_msg("node %s has no attribute %s", nd->name, name);
	return NULL;
}

/* The values of initializer `name` (int64 kept exactly in v->i). */
static void init_values(const Onnx__ModelProto *m, const char *name,
			fl_onnx_values *v)
{
	const Onnx__TensorProto *t = find_initializer(m->graph, name);
	fl_error err = {""};

	if (!t)
		fail_msg("%s: no initializer %s", m->graph->name, name);
	if (fl_onnx_tensor_values(t, NULL, v, &err) < 0)
		fail_msg("%s: %s", name, err.msg);
}

/* ---- every sample ------------------------------------------------------- */

static void test_onnx_export_every_sample(void **state)
{
	DIR *d = opendir(t_samples_dir());
	struct dirent *e;
	int n = 0;

	(void)state;
	assert_non_null(d);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char path[1024];
		fl_error err = {""};
		fl_graph *g;

		if (len < 6 || strcmp(e->d_name + len - 5, ".json"))
			continue;
		snprintf(path, sizeof path, "%s/%s", t_samples_dir(),
			 e->d_name);
		g = fl_load_graph_file(path, &err);
		if (!g)
			fail_msg("%s: %s", path, err.msg);
		onnx__model_proto__free_unpacked(check_export(g), NULL);
		fl_graph_free(g);
		n++;
	}
	closedir(d);
	assert_true(n >= 20);
}

/* ---- every op kind ------------------------------------------------------ */

#define HEAD "{'format':'fuselab-graph/1','name':'t','tensors':{"
#define IN(n, s) "'" n "':{'shape':" s ",'role':'input'},"
#define PARAM(n, s) "'" n "':{'shape':" s ",'role':'param'},"
#define CONST(n, s, d) "'" n "':{'shape':" s ",'role':'const','data':" d "},"
#define OUT(n, s) "'" n "':{'shape':" s ",'role':'output'}"
#define OPS "},'ops':["
#define TAIL "]}"
#define OP(name, op, in, out, attrs) \
	"{'name':'" name "','op':'" op "','in':[" in "],'out':'" out \
	"','attrs':{" attrs "}}"
/* x -> op -> y */
#define ONE(xs, ys, op, attrs) \
	HEAD IN("x", xs) OUT("y", ys) OPS OP("o", op, "'x'", "y", attrs) TAIL

typedef struct op_case {
	const char *graph;	/* single-quoted JSON */
	const char *must;	/* ONNX types that must appear, by spaces */
	const char *never;	/* ... that must not */
} op_case;

static const op_case op_cases[] = {
	/* the unary primitives, one chain */
	{HEAD IN("x", "[2,3]") OUT("y", "[2,3]") OPS
	 OP("a", "neg", "'x'", "t1", "") "," OP("b", "abs", "'t1'", "t2", "")
	 "," OP("c", "exp", "'t2'", "t3", "") ","
	 OP("d", "log", "'t3'", "t4", "") "," OP("e", "sqrt", "'t4'", "t5", "")
	 "," OP("f", "rsqrt", "'t5'", "t6", "") ","
	 OP("g", "recip", "'t6'", "t7", "") ","
	 OP("h", "tanh", "'t7'", "t8", "") ","
	 OP("i", "sigmoid", "'t8'", "t9", "") ","
	 OP("j", "relu", "'t9'", "t10", "") ","
	 OP("k", "erf", "'t10'", "t11", "") ","
	 OP("l", "square", "'t11'", "t12", "") ","
	 OP("m", "copy", "'t12'", "t13", "") ","
	 OP("n", "round", "'t13'", "t14", "") ","
	 OP("p", "cast", "'t14'", "y", "'dtype':'f32'") TAIL,
	 "Neg Abs Exp Log Sqrt Reciprocal Tanh Sigmoid Relu Erf Mul Identity "
	 "Round", ""},
	/* binary and where, broadcasting */
	{HEAD IN("x", "[2,3]") IN("z", "[3]") OUT("y", "[2,3]") OPS
	 OP("a", "add", "'x','z'", "t1", "") ","
	 OP("b", "sub", "'t1','z'", "t2", "") ","
	 OP("c", "mul", "'t2','x'", "t3", "") ","
	 OP("d", "div", "'t3','z'", "t4", "") ","
	 OP("e", "max", "'t4','x'", "t5", "") ","
	 OP("f", "min", "'t5','z'", "t6", "") ","
	 OP("g", "pow", "'t6','z'", "t7", "") ","
	 OP("h", "where", "'z','t7','x'", "y", "") TAIL,
	 "Add Sub Mul Div Max Min Pow Cast Where", ""},
	{HEAD IN("x", "[2,3,4]") OUT("y", "[1,1,1]") OPS
	 OP("a", "reduce_sum", "'x'", "t1", "'axes':[1]") ","
	 OP("b", "reduce_max", "'t1'", "t2", "'axes':[-1]") ","
	 OP("c", "reduce_min", "'t2'", "t3", "") ","
	 OP("d", "reduce_sum", "'t3'", "y", "") TAIL,
	 "ReduceSum ReduceMax ReduceMin", ""},
	{HEAD IN("x", "[2,4,3]") IN("w", "[5,4]") OUT("y", "[2,3,5]") OPS
	 OP("mm", "matmul", "'x','w'", "y",
	    "'transpose_a':true,'transpose_b':true") TAIL,
	 "Transpose MatMul", ""},
	{HEAD IN("x", "[1,4,9,9]") PARAM("w", "[6,2,3,3]")
	 OUT("y", "[1,6,1,1]") OPS
	 OP("cv", "conv2d", "'x','w'", "t1",
	    "'stride':[2,2],'dilation':[1,2],'groups':2") ","
	 OP("mp", "pool2d", "'t1'", "t2", "'kernel':[2,2],'mode':'max'") ","
	 OP("ap", "pool2d", "'t2'", "y", "'kernel':[2,1],'mode':'avg'") TAIL,
	 "Conv MaxPool AveragePool", ""},
	{HEAD IN("x", "[2,3,4]") IN("z", "[4,2]") OUT("y", "[3,12]") OPS
	 OP("tr", "transpose", "'x'", "t1", "'perm':[1,0,2]") ","
	 OP("rs", "reshape", "'t1'", "t2", "'shape':[3,-1]") ","
	 OP("rz", "reshape", "'z'", "t3", "'shape':[1,8]") ","
	 OP("bc", "broadcast_to", "'t3'", "t4", "'shape':[3,8]") ","
	 OP("sl", "slice", "'t4'", "t5",
	    "'starts':[0,-7],'ends':[3,100],'steps':[1,2]") ","
	 OP("ct", "concat", "'t2','t5'", "t6", "'axis':-1") ","
	 OP("pd", "pad", "'t6'", "t7", "'pads':[0,1,0,0],'value':2.5") ","
	 OP("sl2", "slice", "'t7'", "y", "'starts':[0,1],'ends':[3,13]")
	 TAIL,
	 "Transpose Reshape Expand Slice Concat Pad", ""},
	{HEAD IN("x", "[5,3]") CONST("idx", "[4]", "[0,4,-2,7.5]")
	 OUT("y", "[4,3]") OPS OP("ga", "gather", "'x','idx'", "y", "")
	 TAIL, "Clip Cast Gather", ""},
	{HEAD IN("x", "[2,6]") OUT("y", "[2,6]") OPS
	 OP("cs", "custom", "'x'", "t1", "'fn':'cumsum'") ","
	 OP("cp", "custom", "'t1'", "y", "'fn':'copy'") TAIL,
	 "CumSum Identity", ""},
	/* compound ops with an ONNX operator */
	{HEAD IN("x", "[2,3,4]") OUT("y", "[2,3,4]") OPS
	 OP("sm", "softmax", "'x'", "t1", "'axis':1") ","
	 OP("ls", "log_softmax", "'t1'", "t2", "") ","
	 OP("lr", "leaky_relu", "'t2'", "t3", "'alpha':0.2") ","
	 OP("ln", "layernorm", "'t3'", "y", "'axis':1,'eps':0.001") TAIL,
	 "Softmax LogSoftmax LeakyRelu LayerNormalization",
	 "ReduceMax Exp Sqrt"},
	{HEAD IN("x", "[2,3,4]") PARAM("g", "[1,4]") PARAM("b", "[4]")
	 OUT("y", "[2,3,1]") OPS
	 OP("ln", "layernorm", "'x','g','b'", "t1", "") ","
	 OP("rm", "reduce_mean", "'t1'", "y", "'axes':[2]") TAIL,
	 "LayerNormalization Reshape ReduceMean", "Div"},
	{HEAD IN("x", "[2,3,4,4]") CONST("m", "[3,1,1]", "[0.5,1,2]")
	 CONST("v", "[3,1,1]", "[1,2,3]") PARAM("ga", "[3,1,1]")
	 OUT("y", "[2,3,4,4]") OPS
	 OP("bn", "batchnorm", "'x','m','v','ga'", "y", "'eps':0.01") TAIL,
	 "BatchNormalization Reshape", "Sqrt"},
	{HEAD IN("x", "[2,5]") PARAM("w", "[3,5]") PARAM("b", "[3]")
	 OUT("y", "[2,3]") OPS
	 OP("de", "dense", "'x','w','b'", "y", "'transpose_b':true") TAIL,
	 "Gemm", "MatMul"},
	/* compound ops opened into primitives */
	{HEAD IN("x", "[2,3,4]") PARAM("g", "[3,1]") OUT("y", "[2,3,4]")
	 OPS OP("ln", "layernorm", "'x','g'", "t1", "") ","
	 OP("lr", "leaky_relu", "'t1'", "y", "'alpha':2") TAIL,
	 "ReduceSum Max", "LayerNormalization LeakyRelu"},
	{HEAD IN("x", "[2,3,2,2]") CONST("m", "[1]", "[0.5]")
	 CONST("v", "[1]", "[2]") OUT("y", "[2,3,2,2]") OPS
	 OP("bn", "batchnorm", "'x','m','v'", "y", "") TAIL,
	 "Sub Sqrt", "BatchNormalization"},
	{HEAD IN("x", "[2,3,5]") PARAM("w", "[5,4]") PARAM("b", "[4]")
	 OUT("y", "[2,3,4]") OPS OP("de", "dense", "'x','w','b'", "y", "")
	 TAIL, "MatMul Add", "Gemm"},
	{HEAD IN("x", "[2,8]") PARAM("g", "[8]") PARAM("b", "[8]")
	 OUT("y", "[2,1]") OPS
	 OP("ge", "gelu", "'x'", "t1", "") ","
	 OP("gt", "gelu", "'t1'", "t2", "'approximate':'tanh'") ","
	 OP("si", "silu", "'t2'", "t3", "") ","
	 OP("rn", "rmsnorm", "'t3','g'", "t4", "") ","
	 OP("qu", "quantize", "'t4'", "t5", "'scale':0.5") ","
	 OP("ba", "bias_add", "'t5','b'", "t6", "") ","
	 OP("va", "variance", "'t6'", "y", "'axes':[1]") TAIL,
	 "Erf Tanh Sigmoid Round ReduceSum", ""},
	{HEAD IN("q", "[2,3,4]") IN("k", "[2,5,4]") IN("v", "[2,5,6]")
	 OUT("y", "[2,3,6]") OPS
	 OP("at", "attention", "'q','k','v'", "y", "") TAIL,
	 "MatMul Exp", "Softmax"},
	/* ONNX's activations, written back as their operators */
	{HEAD IN("x", "[2,3]") OUT("y", "[2,3]") OPS
	 OP("hs", "hard_sigmoid", "'x'", "t1", "'alpha':0.3,'beta':0.4") ","
	 OP("hw", "hard_swish", "'t1'", "t2", "") ","
	 OP("el", "elu", "'t2'", "y", "'alpha':0.5") TAIL,
	 "HardSigmoid HardSwish Elu", "Min Max Exp"},
	/* comparisons and logic on typed tensors (docs/types.md) */
	{HEAD "'i':{'shape':[2,3],'dtype':'i64','role':'input'},"
	 "'k':{'shape':[3],'dtype':'i64','role':'const','data':[1,5,3000000000]},"
	 IN("x", "[2,3]") OUT("y", "[2,3]") OPS
	 OP("a", "equal", "'i','k'", "b1", "") ","
	 OP("b", "less", "'i','k'", "b2", "") ","
	 OP("c", "less_equal", "'i','k'", "b3", "") ","
	 OP("d", "greater", "'x','x'", "b4", "") ","
	 OP("e", "greater_equal", "'x','x'", "b5", "") ","
	 OP("f", "and", "'b1','b2'", "b6", "") ","
	 OP("g", "or", "'b6','b3'", "b7", "") ","
	 OP("h", "xor", "'b7','b4'", "b8", "") ","
	 OP("m", "not", "'b8'", "b9", "") ","
	 OP("n", "xor", "'b9','b5'", "b10", "") ","
	 OP("p", "cast", "'b10'", "y", "'dtype':'f32'") TAIL,
	 "Equal Less LessOrEqual Greater GreaterOrEqual And Or Xor Not Cast",
	 ""},
	/* the recurrent cells, opened: each step's matmuls and cell math */
	{HEAD IN("x", "[2,1,3]") PARAM("wl", "[1,8,3]") PARAM("rl", "[1,8,2]")
	 PARAM("wg", "[1,6,3]") PARAM("rg", "[1,6,2]") PARAM("wr", "[1,2,3]")
	 PARAM("rr", "[1,2,2]") OUT("yl", "[2,1,1,2]") ","
	 OUT("hg", "[1,1,2]") "," OUT("yr", "[2,1,1,2]") OPS
	 OP("ls", "lstm", "'x','wl','rl'", "yl", "") ","
	 OP("gr", "gru", "'x','wg','rg'", "hg", "'output':'h'") ","
	 OP("rn", "rnn", "'x','wr','rr'", "yr", "'direction':'reverse'") TAIL,
	 "MatMul Sigmoid Tanh Slice Concat", "LSTM GRU RNN"},
	/* the libm unary primitives, one chain */
	{HEAD IN("x", "[2,3]") OUT("y", "[2,3]") OPS
	 OP("a", "sin", "'x'", "t1", "") "," OP("b", "cos", "'t1'", "t2", "")
	 "," OP("c", "tan", "'t2'", "t3", "") ","
	 OP("d", "asin", "'t3'", "t4", "") "," OP("e", "acos", "'t4'", "t5", "")
	 "," OP("f", "atan", "'t5'", "t6", "") ","
	 OP("g", "sinh", "'t6'", "t7", "") "," OP("h", "cosh", "'t7'", "t8", "")
	 "," OP("i", "asinh", "'t8'", "t9", "") ","
	 OP("j", "acosh", "'t9'", "t10", "") ","
	 OP("k", "atanh", "'t10'", "t11", "") ","
	 OP("l", "floor", "'t11'", "t12", "") ","
	 OP("m", "ceil", "'t12'", "t13", "") ","
	 OP("n", "sign", "'t13'", "y", "") TAIL,
	 "Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh Floor Ceil "
	 "Sign", ""},
	{HEAD IN("x", "[2,3]") IN("z", "[3]") OUT("y", "[2,3]") OPS
	 OP("a", "mod", "'x','z'", "t1", "") ","
	 OP("b", "fmod", "'t1','z'", "y", "") TAIL, "Mod", ""},
	/* unsigned shifts (BitShift's direction) */
	{HEAD "'u':{'shape':[2,3],'dtype':'u32','role':'input'},"
	 "'n':{'shape':[3],'dtype':'u32','role':'const','data':[1,2,31]},"
	 "'y':{'shape':[2,3],'dtype':'u32','role':'output'}" OPS
	 OP("a", "shift_left", "'u','n'", "t1", "") ","
	 OP("b", "shift_right", "'t1','n'", "y", "") TAIL, "BitShift", ""},
	{HEAD IN("x", "[2,3,4]") OUT("y", "[2,1,1]") OPS
	 OP("a", "reduce_prod", "'x'", "y", "'axes':[1,2]") TAIL,
	 "ReduceProd", ""},
	/* indexed ops, their indices resolved as fuselab does */
	{HEAD IN("x", "[3,2]") CONST("idx", "[2,2]", "[0,-1,2,9]")
	 OUT("y", "[3,2]") OPS
	 OP("ge", "gather_elements", "'x','idx'", "t1", "") ","
	 OP("se", "scatter_elements", "'x','idx','t1'", "y",
	    "'axis':0,'reduction':'add'") TAIL,
	 "Floor Where Clip GatherElements ScatterElements", ""},
	/* the predicates, bool results */
	{HEAD IN("x", "[2,3]") OUT("y", "[2,3]") OPS
	 OP("a", "is_nan", "'x'", "b1", "") ","
	 OP("b", "is_inf", "'x'", "b2", "'negative':false") ","
	 OP("c", "or", "'b1','b2'", "b3", "") ","
	 OP("d", "cast", "'b3'", "y", "'dtype':'f32'") TAIL,
	 "IsNaN IsInf Or Cast", ""},
};

#define N_OP_CASES (sizeof op_cases / sizeof op_cases[0])

/* Each space-separated type of list appears (want) or not in m. */
static void assert_types(const Onnx__ModelProto *m, const char *list,
			 bool want, int c)
{
	char buf[256], *save, *tok;

	snprintf(buf, sizeof buf, "%s", list);
	for (tok = strtok_r(buf, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save))
		if ((count_type(m, tok) > 0) != want)
			fail_msg("case %d: %s %s", c, tok,
				 want ? "missing" : "present");
}

static void test_onnx_export_every_op_kind(void **state)
{
	bool seen[FL_OP_COUNT] = {false};

	(void)state;
	for (size_t c = 0; c < N_OP_CASES; c++) {
		fl_graph *g = t_load_q(op_cases[c].graph);
		Onnx__ModelProto *m = check_export(g);

		assert_types(m, op_cases[c].must, true, (int)c);
		assert_types(m, op_cases[c].never, false, (int)c);
		for (int i = 0; i < g->n_ops; i++)
			seen[g->ops[i].kind] = true;
		onnx__model_proto__free_unpacked(m, NULL);
		fl_graph_free(g);
	}
	/* a new op kind needs an ONNX form and a case here */
	for (int k = 0; k < FL_OP_COUNT; k++)
		if (!seen[k])
			fail_msg("no case exports %s",
				 fl_op_kind_name((fl_op_kind)k));
}

/* ---- attributes and helper values ------------------------------------- */

static void assert_ints(const Onnx__AttributeProto *a, const int64_t *want,
			size_t n)
{
	assert_int_equal(a->n_ints, n);
	for (size_t k = 0; k < n; k++)
		assert_int_equal(a->ints[k], want[k]);
}

static const Onnx__NodeProto *node_named(const Onnx__ModelProto *m,
					 const char *name)
{
	for (size_t k = 0; k < m->graph->n_node; k++)
		if (!strcmp(m->graph->node[k]->name, name))
			return m->graph->node[k];
	fail_msg("%s: no node %s", m->graph->name, name);
	return NULL;
}

/* Input k of the node named `name` is an initializer with exactly these
 * int64s. */
static void assert_int_input(const Onnx__ModelProto *m, const char *name,
			     int k, const int64_t *want, int n)
{
	const Onnx__NodeProto *nd = node_named(m, name);
	fl_onnx_values v;

	assert_true((size_t)k < nd->n_input);
	init_values(m, nd->input[k], &v);
	assert_int_equal(v.dtype, ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
	assert_int_equal(v.n, n);
	for (int i = 0; i < n; i++)
		assert_int_equal(v.i[i], want[i]);
	fl_onnx_values_free(&v);
}

static void test_onnx_export_conv_pool_attributes(void **state)
{
	fl_graph *g = t_load_q(op_cases[4].graph);
	Onnx__ModelProto *m = check_export(g);
	const Onnx__NodeProto *cv = node_of_type(m, "Conv");

	(void)state;
	assert_ints(attr_of(cv, "strides"), (int64_t[]){2, 2}, 2);
	assert_ints(attr_of(cv, "dilations"), (int64_t[]){1, 2}, 2);
	assert_ints(attr_of(cv, "pads"), (int64_t[]){0, 0, 0, 0}, 4);
	assert_int_equal(attr_of(cv, "group")->i, 2);
	assert_string_equal(cv->name, "cv");
	/* stride defaults to the kernel */
	assert_ints(attr_of(node_of_type(m, "AveragePool"), "strides"),
		    (int64_t[]){2, 1}, 2);
	assert_ints(attr_of(node_of_type(m, "MaxPool"), "kernel_shape"),
		    (int64_t[]){2, 2}, 2);
	onnx__model_proto__free_unpacked(m, NULL);
	fl_graph_free(g);
}

static void test_onnx_export_shape_inputs(void **state)
{
	fl_graph *g = t_load_q(op_cases[5].graph);
	Onnx__ModelProto *m = check_export(g);
	const Onnx__NodeProto *pad = node_of_type(m, "Pad");
	fl_onnx_values v;

	(void)state;
	/* reshape's -1 resolved, broadcast_to's shape, the first slice */
	assert_int_input(m, "rs", 1, (int64_t[]){3, 8}, 2);
	assert_int_input(m, "bc", 1, (int64_t[]){3, 8}, 2);
	assert_int_input(m, "sl", 1, (int64_t[]){0, -7}, 2);
	assert_int_input(m, "sl", 2, (int64_t[]){3, 100}, 2);
	assert_int_input(m, "sl", 3, (int64_t[]){0, 1}, 2);
	assert_int_input(m, "sl", 4, (int64_t[]){1, 2}, 2);
	assert_int_input(m, "sl2", 4, (int64_t[]){1, 1}, 2);
	assert_int_input(m, "pd", 1, (int64_t[]){0, 1, 0, 0}, 4);
	init_values(m, pad->input[2], &v);
	assert_int_equal(v.shape.rank, 0);
	assert_true(v.f[0] == 2.5f);
	fl_onnx_values_free(&v);
	assert_int_equal(attr_of(node_of_type(m, "Concat"), "axis")->i, 1);
	onnx__model_proto__free_unpacked(m, NULL);
	fl_graph_free(g);
}

/* Gather indices are clamped as fuselab clamps them: Clip to [0, 4] for
 * an axis of 5. */
static void test_onnx_export_gather_clamps(void **state)
{
	fl_graph *g = t_load_q(op_cases[6].graph);
	Onnx__ModelProto *m = check_export(g);
	const Onnx__NodeProto *clip = node_of_type(m, "Clip");
	fl_onnx_values lo, hi;

	(void)state;
	init_values(m, clip->input[1], &lo);
	init_values(m, clip->input[2], &hi);
	assert_true(lo.f[0] == 0.0f);
	assert_true(hi.f[0] == 4.0f);
	assert_int_equal(attr_of(node_of_type(m, "Cast"), "to")->i,
			 ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
	assert_int_equal(attr_of(node_of_type(m, "Gather"), "axis")->i, 0);
	fl_onnx_values_free(&lo);
	fl_onnx_values_free(&hi);
	onnx__model_proto__free_unpacked(m, NULL);
	fl_graph_free(g);
}

/* LayerNormalization gets a ones scale and zeros bias when the graph
 * gives none; BatchNormalization a zeros bias and [C] parameters. */
static void test_onnx_export_norm_parameters(void **state)
{
	fl_graph *g = t_load_q(op_cases[8].graph);
	Onnx__ModelProto *m = check_export(g);
	const Onnx__NodeProto *ln = node_of_type(m, "LayerNormalization");
	fl_onnx_values s, b;

	(void)state;
	assert_int_equal(attr_of(ln, "axis")->i, 1);
	assert_true(attr_of(ln, "epsilon")->f == 0.001f);
	init_values(m, ln->input[1], &s);
	init_values(m, ln->input[2], &b);
	assert_int_equal(s.n, 12);	/* [3, 4]: the dims from axis 1 */
	assert_int_equal(b.n, 12);
	for (int k = 0; k < 12; k++)
		assert_true(s.f[k] == 1.0f && b.f[k] == 0.0f);
	fl_onnx_values_free(&s);
	fl_onnx_values_free(&b);
	assert_true(attr_of(node_of_type(m, "LeakyRelu"), "alpha")->f == 0.2f);
	assert_int_equal(attr_of(node_of_type(m, "Softmax"), "axis")->i, 1);
	onnx__model_proto__free_unpacked(m, NULL);
	fl_graph_free(g);

	g = t_load_q(op_cases[10].graph);
	m = check_export(g);
	ln = node_of_type(m, "BatchNormalization");
	/* X, scale, bias, mean, var; the [3,1,1] ones reshaped to [3] */
	assert_int_equal(ln->n_input, 5);
	assert_int_equal(count_type(m, "Reshape"), 3);
	init_values(m, ln->input[2], &b);
	assert_int_equal(b.shape.rank, 1);
	assert_int_equal(b.n, 3);
	assert_true(b.f[0] == 0.0f && b.f[1] == 0.0f && b.f[2] == 0.0f);
	fl_onnx_values_free(&b);
	onnx__model_proto__free_unpacked(m, NULL);
	fl_graph_free(g);
}

/* Names the export invents never take a tensor's or an op's name: the
 * graph below names a tensor and an op as the export would name its
 * helpers (assert_topological checks that values and nodes are named
 * once). */
static void test_onnx_export_names_do_not_clash(void **state)
{
	fl_graph *g = t_load_q(
		HEAD IN("x", "[2,3]") IN("r/Sqrt", "[2,3]")
		IN("g/Cast", "[3]") OUT("y", "[2,3]") OPS
		OP("r", "rsqrt", "'x'", "t1", "") ","
		OP("r/Sqrt_1", "add", "'t1','r/Sqrt'", "t2", "") ","
		OP("g", "where", "'g/Cast','t2','x'", "y", "") TAIL);
	Onnx__ModelProto *m = check_export(g);
	const Onnx__NodeProto *sq = node_of_type(m, "Sqrt");

	(void)state;
	assert_string_not_equal(sq->output[0], "r/Sqrt");
	assert_string_not_equal(sq->name, "r/Sqrt_1");	/* an op's name */
	assert_int_equal(fl_graph_find_tensor(g, sq->output[0]), -1);
	assert_string_not_equal(node_of_type(m, "Cast")->output[0], "g/Cast");
	onnx__model_proto__free_unpacked(m, NULL);
	fl_graph_free(g);
}

/* A graph whose shapes were never inferred is refused, naming the
 * tensor, and nothing is returned. */
static void test_onnx_export_needs_shapes(void **state)
{
	fl_graph *g = fl_graph_new("raw");
	fl_error err = {""};
	uint8_t *bytes = (uint8_t *)"";
	size_t n = 1;

	(void)state;
	assert_true(fl_graph_add_tensor(g, "x", NULL, FL_ROLE_INPUT,
					&err) >= 0);
	assert_int_equal(fl_export_onnx_bytes(g, &bytes, &n, &err), -1);
	t_assert_contains(err.msg, "tensor x: shape unknown");
	assert_null(bytes);
	assert_int_equal(n, 0);
	fl_graph_free(g);
}

/* ---- ONNX's checker and the command line ------------------------------- */

/* The op cases' models into dir, named case-<k>.onnx. */
static void export_op_cases(const char *dir)
{
	for (size_t c = 0; c < N_OP_CASES; c++) {
		fl_graph *g = t_load_q(op_cases[c].graph);
		fl_error err = {""};
		char path[256];

		snprintf(path, sizeof path, "%s/case-%zu.onnx", dir, c);
		if (fl_export_onnx(g, path, &err) < 0)
			fail_msg("case %zu: %s", c, err.msg);
		fl_graph_free(g);
	}
}

/* fuselab FILE --export-onnx OUT for every sample, and the op cases'
 * models, then ONNX's own checker (full check: strict shape inference
 * against the declared shapes, which catches a wrong axis or perm). */
static void test_onnx_export_onnx_checker(void **state)
{
	char dir[128], cmd[2048], *out = NULL;
	DIR *d;
	struct dirent *e;

	(void)state;
	if (t_run("/usr/bin/python3 -c 'import onnx'", &out) != 0)
		fail_msg("python3-onnx is missing (scripts/install-deps.sh "
			 "installs it): %s", out);
	free(out);
	t_make_dir(dir, sizeof dir);
	assert_non_null(d = opendir(t_samples_dir()));
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if (len < 6 || strcmp(e->d_name + len - 5, ".json"))
			continue;
		snprintf(cmd, sizeof cmd, "%s/%s --export-onnx %s/%.*s.onnx",
			 t_samples_dir(), e->d_name, dir, (int)len - 5,
			 e->d_name);
		if (t_fuselab(cmd, &out) != 0)
			fail_msg("%s: %s", e->d_name, out);
		free(out);
	}
	closedir(d);
	export_op_cases(dir);
	snprintf(cmd, sizeof cmd,
		 "/usr/bin/python3 -c 'import glob, onnx, sys\n"
		 "fs = sorted(glob.glob(sys.argv[1] + \"/*.onnx\"))\n"
		 "assert len(fs) >= %zu, fs\n"
		 "for f in fs:\n"
		 "    onnx.checker.check_model(onnx.load(f), full_check=True)\n"
		 "print(\"checked\", len(fs))' %s", 20 + N_OP_CASES, dir);
	if (t_run(cmd, &out) != 0)
		fail_msg("onnx.checker: %s", out);
	t_assert_contains(out, "checked ");
	free(out);
	t_remove_dir(dir);
}

static void test_onnx_export_cli(void **state)
{
	char dir[128], args[1024], path[256], *out = NULL;
	Onnx__ModelProto *m;
	size_t len;
	uint8_t *bytes;

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/m.onnx", dir);
	/* with --batch, beside the summary */
	snprintf(args, sizeof args, "--export-onnx %s", path);
	out = t_fuselab_ok(args, "softmax");
	t_assert_contains(out, "wrote ");
	t_assert_contains(out, "ONNX model (opset 17)");
	free(out);
	bytes = (uint8_t *)t_read_file(path, &len);
	assert_non_null(m = onnx__model_proto__unpack(NULL, len, bytes));
	assert_string_equal(m->graph->node[0]->op_type, "Softmax");
	onnx__model_proto__free_unpacked(m, NULL);
	free(bytes);
	/* an unwritable path: an error naming it, nothing left behind */
	snprintf(args, sizeof args, "%s/softmax.json --export-onnx "
		 "%s/missing/m.onnx", t_samples_dir(), dir);
	assert_int_not_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "missing/m.onnx");
	free(out);
	snprintf(args, sizeof args, "%s/softmax.json --export-onnx %s",
		 t_samples_dir(), dir);
	assert_int_not_equal(t_fuselab(args, &out), 0);
	free(out);
	assert_int_equal(t_count_entries(dir), 1);
	t_remove_dir(dir);
	assert_int_equal(t_fuselab("--help", &out), 0);
	t_assert_contains(out, "--export-onnx FILE");
	free(out);
	/* --check only checks: asking it to export is a usage error */
	snprintf(args, sizeof args, "--check %s/softmax.json --export-onnx "
		 "/tmp/never.onnx", t_samples_dir());
	assert_int_equal(t_fuselab(args, &out), 2);
	t_assert_contains(out, "--export-onnx needs --batch");
	free(out);
	assert_int_not_equal(access("/tmp/never.onnx", F_OK), 0);
}

FL_SUITE(onnx_export,
	 cmocka_unit_test(test_onnx_export_every_sample),
	 cmocka_unit_test(test_onnx_export_every_op_kind),
	 cmocka_unit_test(test_onnx_export_conv_pool_attributes),
	 cmocka_unit_test(test_onnx_export_shape_inputs),
	 cmocka_unit_test(test_onnx_export_gather_clamps),
	 cmocka_unit_test(test_onnx_export_norm_parameters),
	 cmocka_unit_test(test_onnx_export_names_do_not_clash),
	 cmocka_unit_test(test_onnx_export_needs_shapes),
	 cmocka_unit_test(test_onnx_export_onnx_checker),
	 cmocka_unit_test(test_onnx_export_cli));
