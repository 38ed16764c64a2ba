/* ONNX export (see onnx.h).
 *
 * The export works on a copy of the graph in which the compound ops that
 * have no ONNX operator are opened into primitives (fl_graph_open_compounds
 * decides per op), so every op left maps to a fixed short list of ONNX
 * nodes.  The copy also reserves the names the export invents: each one
 * avoids every tensor and op name and is added to the copy as a tensor,
 * so the graph's own name indexes keep them unique.  A graph with an
 * empty or repeated tensor or op name is first copied and those renamed:
 * every value and node name written is non-empty and unique.
 *
 * Every protobuf-c message, array and string is malloc'd and hung on the
 * model as soon as it exists, so onnx__model_proto__free_unpacked frees
 * the whole model, whether it was finished or an error stopped it
 * half-way. */
#include "onnx.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "onnx_tensor.h"
#include "output.h"

enum {
	DT_FLOAT = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
	DT_INT64 = ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
	DT_BOOL = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL,
};

typedef struct builder {
	fl_graph *g;		/* the opened copy; invented names reserved */
	Onnx__GraphProto *gp;
	const fl_op *op;	/* the op being exported */
	fl_error *err;
} builder;

static void *oom(builder *b)
{
	fl_error_set(b->err, "out of memory");
	return NULL;
}

static char *dup_str(builder *b, const char *s)
{
	char *d = strdup(s ? s : "");

	return d ? d : oom(b);
}

/* ---------------------------------------------------------------- names */

static const char *tensor_name(const builder *b, int t)
{
	return b->g->tensors[t].name;
}

/* Whether name is a tensor's or an op's of g (helper values and the
 * nodes computing them share a name, so it must be neither). */
static bool name_taken(const fl_graph *g, const char *name)
{
	return fl_graph_find_tensor(g, name) >= 0 ||
	       fl_graph_find_op(g, name) >= 0;
}

/* A name no tensor or op of g has, from base ("<base>", "<base>_1",
 * ...), in buf (n bytes, at least 64; the base is cut so that the
 * suffix always fits). */
static void free_name(const fl_graph *g, const char *base, char *buf,
		      size_t n)
{
	snprintf(buf, n, "%.*s", (int)(n - 24), base);
	for (int k = 1; name_taken(g, buf); k++)
		snprintf(buf, n, "%.*s_%d", (int)(n - 24), base, k);
}

/* A free name from base reserved in the copy; a malloc'd string, NULL
 * when out of memory. */
static char *fresh_name(builder *b, const char *base)
{
	char name[512];

	free_name(b->g, base, name, sizeof name);
	if (fl_graph_add_tensor(b->g, name, NULL, FL_ROLE_TEMP, b->err) < 0)
		return NULL;
	return dup_str(b, name);
}

static bool bad_tensor_name(const fl_graph *g, int i)
{
	const char *s = g->tensors[i].name;

	return !*s || fl_graph_find_tensor(g, s) != i;
}

static bool bad_op_name(const fl_graph *g, int i)
{
	const char *s = g->ops[i].name;

	return !*s || fl_graph_find_op(g, s) != i;
}

/* Whether a tensor or op of g has an empty name or one an earlier entry
 * has: the graph's own indexes refuse both, but a graph built by hand
 * may hold them, and ONNX needs every value and node name non-empty and
 * written once (onnx.checker rejects the model otherwise). */
static bool names_need_repair(const fl_graph *g)
{
	for (int i = 0; i < g->n_tensors; i++)
		if (bad_tensor_name(g, i))
			return true;
	for (int i = 0; i < g->n_ops; i++)
		if (bad_op_name(g, i))
			return true;
	return false;
}

/* Renames every such tensor or op of g: "value" or the op kind when the
 * name is empty, "<name>_<k>" when it is repeated (the first entry keeps
 * it). */
static int repair_names(fl_graph *g, fl_error *err)
{
	char name[512];

	for (int i = 0; i < g->n_tensors; i++) {
		const char *s = g->tensors[i].name;

		if (!bad_tensor_name(g, i))
			continue;
		free_name(g, *s ? s : "value", name, sizeof name);
		if (fl_graph_rename_tensor(g, i, name, err) < 0)
			return -1;
	}
	for (int i = 0; i < g->n_ops; i++) {
		const char *s = g->ops[i].name;

		if (!bad_op_name(g, i))
			continue;
		free_name(g, *s ? s : fl_op_kind_name(g->ops[i].kind), name,
			  sizeof name);
		if (fl_graph_rename_op(g, i, name, err) < 0)
			return -1;
	}
	return 0;
}

/* "<op>/<what>": where the helper values of the current op come from. */
static char *helper_name(builder *b, const char *what)
{
	char base[512];

	snprintf(base, sizeof base, "%.300s/%.64s", b->op->name, what);
	return fresh_name(b, base);
}

/* --------------------------------------------------------- initializers */

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int k = 0; k < 4; k++)
		p[k] = (uint8_t)(v >> (8 * k));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int k = 0; k < 8; k++)
		p[k] = (uint8_t)(v >> (8 * k));
}

/* A TensorProto named `name` (taken) with dims and room for n elements
 * of esize bytes of raw data, appended to the initializers. */
static Onnx__TensorProto *add_initializer(builder *b, char *name, int dtype,
					  const int64_t *dims, int rank,
					  int64_t n, size_t esize)
{
	Onnx__GraphProto *gp = b->gp;
	Onnx__TensorProto **list = realloc(gp->initializer,
					   (gp->n_initializer + 1) *
					   sizeof *list);
	Onnx__TensorProto *t;

	if (list)
		gp->initializer = list;
	if (!list || !(t = malloc(sizeof *t))) {
		free(name);
		return oom(b);
	}
	onnx__tensor_proto__init(t);
	list[gp->n_initializer++] = t;
	t->name = name;
	t->has_data_type = 1;
	t->data_type = dtype;
	if (!name)
		return NULL;
	if (rank > 0) {
		if (!(t->dims = malloc(rank * sizeof *dims)))
			return oom(b);
		memcpy(t->dims, dims, rank * sizeof *dims);
		t->n_dims = rank;
	}
	t->has_raw_data = 1;
	t->raw_data.data = malloc(n > 0 ? (size_t)n * esize : 1);
	if (!t->raw_data.data)
		return oom(b);
	t->raw_data.len = (size_t)n * esize;
	return t;
}

/* An int64 initializer: a 1-D list of n values, or a scalar (n == 1,
 * scalar set).  Returns its name (owned by the model), NULL on error. */
static const char *init_int64(builder *b, const char *what, const int64_t *v,
			      int n, bool scalar)
{
	int64_t dims[1] = {n};
	Onnx__TensorProto *t = add_initializer(b, helper_name(b, what),
					       DT_INT64, dims, scalar ? 0 : 1,
					       n, 8);

	if (!t)
		return NULL;
	for (int k = 0; k < n; k++)
		put_le64(t->raw_data.data + 8 * k, (uint64_t)v[k]);
	return t->name;
}

static void put_floats(uint8_t *p, const float *v, int64_t n_data,
		       int64_t n)
{
	for (int64_t k = 0; k < n; k++) {
		uint32_t u;

		memcpy(&u, &v[n_data == 1 ? 0 : k], 4);
		put_le32(p + 4 * k, u);
	}
}

/* A float initializer named `name` (taken) of shape s holding v (n_data
 * values, one value splatted over s when n_data is 1). */
static const char *init_float_named(builder *b, char *name, const fl_shape *s,
				    const float *v, int64_t n_data)
{
	int64_t n = fl_shape_numel(s);
	Onnx__TensorProto *t = add_initializer(b, name, DT_FLOAT, s->dim,
					       s->rank, n, 4);

	if (!t)
		return NULL;
	put_floats(t->raw_data.data, v, n_data, n);
	return t->name;
}

/* An initializer named `name` (taken) holding integral const t's values
 * in t's element type (bool and the 8-bit types one byte each). */
static const char *init_typed_named(builder *b, char *name,
				    const fl_tensor *t)
{
	int64_t n = fl_shape_numel(&t->shape);
	int size = fl_dtype_size(t->dtype);
	Onnx__TensorProto *tp = add_initializer(b, name,
						fl_onnx_from_dtype(t->dtype),
						t->shape.dim, t->shape.rank, n,
						(size_t)size);

	if (!tp)
		return NULL;
	for (int64_t k = 0; k < n; k++) {
		uint64_t u = (uint64_t)t->ints[t->n_data == 1 ? 0 : k];

		for (int j = 0; j < size; j++)	/* little-endian */
			tp->raw_data.data[size * k + j] = (uint8_t)(u >> (8 * j));
	}
	return tp->name;
}

/* An initializer named `name` (taken) of shape s holding v (n_data
 * values, splatted when 1) as the bits of 16-bit float dtype dt. */
static const char *init_half_named(builder *b, char *name, fl_dtype dt,
				   const fl_shape *s, const float *v,
				   int64_t n_data)
{
	int64_t n = fl_shape_numel(s);
	Onnx__TensorProto *tp = add_initializer(b, name, fl_onnx_from_dtype(dt),
						s->dim, s->rank, n, 2);

	if (!tp)
		return NULL;
	for (int64_t k = 0; k < n; k++) {
		uint16_t u = fl_dtype_half_bits(dt, v[n_data == 1 ? 0 : k]);

		tp->raw_data.data[2 * k] = (uint8_t)u;
		tp->raw_data.data[2 * k + 1] = (uint8_t)(u >> 8);
	}
	return tp->name;
}

/* A helper float initializer of shape s, every element v. */
static const char *init_splat(builder *b, const char *what, const fl_shape *s,
			      float v)
{
	return init_float_named(b, helper_name(b, what), s, &v, 1);
}

/* ---------------------------------------------------------------- nodes */

/* Appends node op_type(in[0..n_in-1]) -> out; out NULL: a fresh helper
 * name.  The node computing the op's own output carries the op's name,
 * a helper node its output's name.  Returns the node, NULL on error. */
static Onnx__NodeProto *add_node(builder *b, const char *op_type,
				 const char *const *in, int n_in,
				 const char *out)
{
	Onnx__GraphProto *gp = b->gp;
	Onnx__NodeProto **list = realloc(gp->node,
					 (gp->n_node + 1) * sizeof *list);
	Onnx__NodeProto *nd;

	if (list)
		gp->node = list;
	if (!list || !(nd = malloc(sizeof *nd)))
		return oom(b);
	onnx__node_proto__init(nd);
	list[gp->n_node++] = nd;
	if (!(nd->output = calloc(1, sizeof *nd->output)))
		return oom(b);
	nd->output[0] = out ? dup_str(b, out) : helper_name(b, op_type);
	if (!nd->output[0])
		return NULL;
	nd->n_output = 1;
	if (!(nd->op_type = dup_str(b, op_type)) ||
	    !(nd->name = dup_str(b, out ? b->op->name : nd->output[0])))
		return NULL;
	if (b->op->prov.compound && b->op->prov.origin &&
	    !(nd->doc_string = dup_str(b, b->op->prov.origin)))
		return NULL;
	if (n_in > 0 && !(nd->input = calloc(n_in, sizeof *nd->input)))
		return oom(b);
	for (int k = 0; k < n_in; k++, nd->n_input++)
		if (!(nd->input[k] = dup_str(b, in[k])))
			return NULL;
	return nd;
}

/* A helper node of one input; its output's name, NULL on error. */
static const char *helper1(builder *b, const char *op_type, const char *x)
{
	Onnx__NodeProto *nd = add_node(b, op_type, &x, 1, NULL);

	return nd ? nd->output[0] : NULL;
}

static Onnx__AttributeProto *add_attr(builder *b, Onnx__NodeProto *nd,
				      const char *name, int type)
{
	Onnx__AttributeProto **list = realloc(nd->attribute,
					      (nd->n_attribute + 1) *
					      sizeof *list);
	Onnx__AttributeProto *a;

	if (list)
		nd->attribute = list;
	if (!list || !(a = malloc(sizeof *a)))
		return oom(b);
	onnx__attribute_proto__init(a);
	list[nd->n_attribute++] = a;
	a->has_type = 1;
	a->type = type;
	return (a->name = dup_str(b, name)) ? a : NULL;
}

static int attr_int(builder *b, Onnx__NodeProto *nd, const char *name,
		    int64_t v)
{
	Onnx__AttributeProto *a = nd ? add_attr(b, nd, name,
		ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) : NULL;

	if (!a)
		return -1;
	a->has_i = 1;
	a->i = v;
	return 0;
}

static int attr_float(builder *b, Onnx__NodeProto *nd, const char *name,
		      double v)
{
	Onnx__AttributeProto *a = nd ? add_attr(b, nd, name,
		ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) : NULL;

	if (!a)
		return -1;
	a->has_f = 1;
	a->f = (float)v;
	return 0;
}

static int attr_string(builder *b, Onnx__NodeProto *nd, const char *name,
		       const char *v)
{
	Onnx__AttributeProto *a = nd ? add_attr(b, nd, name,
		ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING) : NULL;
	char *s = a ? dup_str(b, v) : NULL;

	if (!s)
		return -1;
	a->has_s = 1;
	a->s.data = (uint8_t *)s;
	a->s.len = strlen(s);
	return 0;
}

static int attr_ints(builder *b, Onnx__NodeProto *nd, const char *name,
		     const int64_t *v, int n)
{
	Onnx__AttributeProto *a = nd ? add_attr(b, nd, name,
		ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) : NULL;

	if (!a || !(a->ints = malloc((n > 0 ? n : 1) * sizeof *v))) {
		if (a)
			oom(b);
		return -1;
	}
	memcpy(a->ints, v, n * sizeof *v);
	a->n_ints = n;
	return 0;
}

/* ------------------------------------------------------ op → nodes */

static const fl_shape *shape_of(const builder *b, int t)
{
	return &b->g->tensors[t].shape;
}

static const char *in_name(const builder *b, int k)
{
	return tensor_name(b, b->op->in[k]);
}

static const char *out_name(const builder *b)
{
	return tensor_name(b, b->op->out[0]);
}

/* Ops that are one ONNX operator of the same inputs. */
static const struct {
	fl_op_kind kind;
	const char *onnx;
} same_inputs[] = {
	{FL_OP_NEG, "Neg"}, {FL_OP_ABS, "Abs"}, {FL_OP_EXP, "Exp"},
	{FL_OP_LOG, "Log"}, {FL_OP_SQRT, "Sqrt"}, {FL_OP_RECIP, "Reciprocal"},
	{FL_OP_TANH, "Tanh"}, {FL_OP_SIGMOID, "Sigmoid"}, {FL_OP_RELU, "Relu"},
	{FL_OP_ERF, "Erf"}, {FL_OP_COPY, "Identity"},
	{FL_OP_ROUND, "Round"},	/* both round half to even */
	{FL_OP_NOT, "Not"}, {FL_OP_EQUAL, "Equal"}, {FL_OP_LESS, "Less"},
	{FL_OP_LESS_EQUAL, "LessOrEqual"}, {FL_OP_GREATER, "Greater"},
	{FL_OP_GREATER_EQUAL, "GreaterOrEqual"}, {FL_OP_AND, "And"},
	{FL_OP_OR, "Or"}, {FL_OP_XOR, "Xor"}, {FL_OP_IS_NAN, "IsNaN"},
	{FL_OP_SIN, "Sin"}, {FL_OP_COS, "Cos"}, {FL_OP_TAN, "Tan"},
	{FL_OP_ASIN, "Asin"}, {FL_OP_ACOS, "Acos"}, {FL_OP_ATAN, "Atan"},
	{FL_OP_SINH, "Sinh"}, {FL_OP_COSH, "Cosh"}, {FL_OP_ASINH, "Asinh"},
	{FL_OP_ACOSH, "Acosh"}, {FL_OP_ATANH, "Atanh"},
	{FL_OP_FLOOR, "Floor"}, {FL_OP_CEIL, "Ceil"}, {FL_OP_SIGN, "Sign"},
	{FL_OP_MOD, "Mod"}, {FL_OP_FMOD, "Mod"},
	{FL_OP_SHIFT_LEFT, "BitShift"}, {FL_OP_SHIFT_RIGHT, "BitShift"},
	{FL_OP_ADD, "Add"}, {FL_OP_SUB, "Sub"}, {FL_OP_MUL, "Mul"},
	{FL_OP_DIV, "Div"}, {FL_OP_MAX, "Max"}, {FL_OP_MIN, "Min"},
	{FL_OP_POW, "Pow"}, {FL_OP_TRANSPOSE, "Transpose"},
	{FL_OP_SOFTMAX, "Softmax"}, {FL_OP_LOG_SOFTMAX, "LogSoftmax"},
	{FL_OP_LEAKY_RELU, "LeakyRelu"}, {FL_OP_CONCAT, "Concat"},
	{FL_OP_CONV2D, "Conv"}, {FL_OP_HARD_SIGMOID, "HardSigmoid"},
	{FL_OP_HARD_SWISH, "HardSwish"}, {FL_OP_ELU, "Elu"},
};

/* The op's own node: onnx(inputs of the op) -> the op's output. */
static Onnx__NodeProto *own_node(builder *b, const char *onnx)
{
	const char **in = malloc((b->op->n_in + 1) * sizeof *in);
	Onnx__NodeProto *nd;

	if (!in)
		return oom(b);
	for (int k = 0; k < b->op->n_in; k++)
		in[k] = in_name(b, k);
	nd = add_node(b, onnx, in, b->op->n_in, out_name(b));
	free(in);
	return nd;
}

/* An int attribute of the op, after validation (cannot fail then). */
static int64_t op_int(const builder *b, const char *key, int64_t dflt)
{
	int64_t v = dflt;

	fl_attr_int(&b->op->attrs, key, dflt, &v, NULL);
	return v;
}

static double op_float(const builder *b, const char *key, double dflt)
{
	double v = dflt;

	fl_attr_float(&b->op->attrs, key, dflt, &v, NULL);
	return v;
}

static bool op_bool(const builder *b, const char *key)
{
	bool v = false;

	fl_attr_bool(&b->op->attrs, key, false, &v, NULL);
	return v;
}

/* An int list attribute of the op; *n -1 when absent. */
static void op_ints(const builder *b, const char *key, int64_t *v, int *n)
{
	if (fl_attr_ints(&b->op->attrs, key, v, FL_MAX_RANK * 2, n, NULL) < 0)
		*n = -1;
}

/* The attributes a one-operator op carries over. */
static int same_inputs_attrs(builder *b, Onnx__NodeProto *nd)
{
	int rank = shape_of(b, b->op->in[0])->rank;
	int64_t v[FL_MAX_RANK * 2];
	int n;

	switch (b->op->kind) {
	case FL_OP_TRANSPOSE:
		op_ints(b, "perm", v, &n);
		return attr_ints(b, nd, "perm", v, n);
	case FL_OP_SOFTMAX:
	case FL_OP_LOG_SOFTMAX:
		return attr_int(b, nd, "axis",
				fl_axis_normalize(op_int(b, "axis", -1), rank));
	case FL_OP_LEAKY_RELU:
		return attr_float(b, nd, "alpha", op_float(b, "alpha", 0.01));
	case FL_OP_HARD_SIGMOID:
		if (attr_float(b, nd, "alpha", op_float(b, "alpha", 0.2)) < 0)
			return -1;
		return attr_float(b, nd, "beta", op_float(b, "beta", 0.5));
	case FL_OP_ELU:
		return attr_float(b, nd, "alpha", op_float(b, "alpha", 1.0));
	case FL_OP_FMOD:
		return attr_int(b, nd, "fmod", 1);
	case FL_OP_SHIFT_LEFT:
		return attr_string(b, nd, "direction", "LEFT");
	case FL_OP_SHIFT_RIGHT:
		return attr_string(b, nd, "direction", "RIGHT");
	case FL_OP_CONCAT:
		return attr_int(b, nd, "axis",
				fl_axis_normalize(op_int(b, "axis", 0), rank));
	case FL_OP_CONV2D: {
		const fl_shape *w = shape_of(b, b->op->in[1]);
		int64_t stride[2] = {1, 1}, dil[2] = {1, 1}, pads[4] = {0};

		op_ints(b, "stride", v, &n);
		if (n == 2)
			memcpy(stride, v, sizeof stride);
		op_ints(b, "dilation", v, &n);
		if (n == 2)
			memcpy(dil, v, sizeof dil);
		if (attr_ints(b, nd, "kernel_shape", w->dim + 2, 2) < 0 ||
		    attr_ints(b, nd, "strides", stride, 2) < 0 ||
		    attr_ints(b, nd, "dilations", dil, 2) < 0 ||
		    attr_ints(b, nd, "pads", pads, 4) < 0)
			return -1;
		return attr_int(b, nd, "group", op_int(b, "groups", 1));
	}
	default:
		return 0;
	}
}

static int export_same_inputs(builder *b, const char *onnx)
{
	Onnx__NodeProto *nd = own_node(b, onnx);

	return nd ? same_inputs_attrs(b, nd) : -1;
}

/* cast: Cast to the ONNX type of its dtype. */
static int export_cast(builder *b)
{
	Onnx__NodeProto *nd = own_node(b, "Cast");

	return nd ? attr_int(b, nd, "to", fl_onnx_from_dtype(
				     b->g->tensors[b->op->out[0]].dtype)) : -1;
}

/* is_inf: IsInf, its "positive" and "negative" as detect_positive and
 * detect_negative. */
static int export_is_inf(builder *b)
{
	Onnx__NodeProto *nd = own_node(b, "IsInf");
	bool pos = true, neg = true;

	fl_attr_bool(&b->op->attrs, "positive", true, &pos, NULL);
	fl_attr_bool(&b->op->attrs, "negative", true, &neg, NULL);
	return nd && attr_int(b, nd, "detect_positive", pos) == 0 &&
	       attr_int(b, nd, "detect_negative", neg) == 0 ? 0 : -1;
}

/* rsqrt(x) = Reciprocal(Sqrt(x)) */
static int export_rsqrt(builder *b)
{
	const char *s = helper1(b, "Sqrt", in_name(b, 0));

	return s && add_node(b, "Reciprocal", &s, 1, out_name(b)) ? 0 : -1;
}

static int export_square(builder *b)
{
	const char *in[2] = {in_name(b, 0), in_name(b, 0)};

	return add_node(b, "Mul", in, 2, out_name(b)) ? 0 : -1;
}

/* where(c, a, b) = Where(Cast(c, bool), a, b): ONNX casts every float
 * but +-0 to true, fuselab's c != 0. */
static int export_where(builder *b)
{
	Onnx__NodeProto *cast = add_node(b, "Cast", (const char *[]){
						in_name(b, 0)}, 1, NULL);
	const char *in[3];

	if (!cast || attr_int(b, cast, "to", DT_BOOL) < 0)
		return -1;
	in[0] = cast->output[0];
	in[1] = in_name(b, 1);
	in[2] = in_name(b, 2);
	return add_node(b, "Where", in, 3, out_name(b)) ? 0 : -1;
}

/* The op's "axes", normalised; *n -1 when absent (every axis). */
static void reduce_axes(const builder *b, int64_t *axes, int *n)
{
	int rank = shape_of(b, b->op->in[0])->rank;

	op_ints(b, "axes", axes, n);
	for (int k = 0; k < *n; k++)
		axes[k] = fl_axis_normalize(axes[k], rank);
}

/* ReduceSum takes its axes as an input from opset 13, ReduceMax, ReduceMin
 * and ReduceMean as an attribute up to opset 17; keepdims as fuselab. */
static int export_reduce(builder *b, const char *onnx, bool axes_input)
{
	int64_t axes[FL_MAX_RANK * 2];
	const char *in[2] = {in_name(b, 0), NULL};
	Onnx__NodeProto *nd;
	int n;

	reduce_axes(b, axes, &n);
	if (axes_input && n >= 0 &&
	    !(in[1] = init_int64(b, "axes", axes, n, false)))
		return -1;
	nd = add_node(b, onnx, in, in[1] ? 2 : 1, out_name(b));
	if (!nd || attr_int(b, nd, "keepdims", 1) < 0)
		return -1;
	return !axes_input && n >= 0 ? attr_ints(b, nd, "axes", axes, n) : 0;
}

/* Operand k of a matmul, transposed in its last two dims when asked. */
static const char *matmul_operand(builder *b, int k, const char *flag)
{
	int rank = shape_of(b, b->op->in[k])->rank;
	int64_t perm[FL_MAX_RANK];
	Onnx__NodeProto *nd;

	if (!op_bool(b, flag))
		return in_name(b, k);
	for (int d = 0; d < rank; d++)
		perm[d] = d;
	perm[rank - 2] = rank - 1;
	perm[rank - 1] = rank - 2;
	nd = add_node(b, "Transpose", (const char *[]){in_name(b, k)}, 1,
		      NULL);
	if (!nd || attr_ints(b, nd, "perm", perm, rank) < 0)
		return NULL;
	return nd->output[0];
}

static int export_matmul(builder *b)
{
	const char *in[2] = {matmul_operand(b, 0, "transpose_a"),
			     matmul_operand(b, 1, "transpose_b")};

	if (!in[0] || !in[1])
		return -1;
	return add_node(b, "MatMul", in, 2, out_name(b)) ? 0 : -1;
}

static int export_pool(builder *b)
{
	const char *mode = "max";
	int64_t kernel[2], stride[2], dilation[FL_MAX_RANK * 2];
	Onnx__NodeProto *nd;
	int n;

	fl_attr_string(&b->op->attrs, "mode", "max", &mode, NULL);
	op_ints(b, "kernel", kernel, &n);
	op_ints(b, "stride", stride, &n);
	if (n != 2)
		memcpy(stride, kernel, sizeof stride);
	op_ints(b, "dilation", dilation, &n);
	nd = own_node(b, strcmp(mode, "avg") ? "MaxPool" : "AveragePool");
	if (!nd || attr_ints(b, nd, "kernel_shape", kernel, 2) < 0 ||
	    (n == 2 && attr_ints(b, nd, "dilations", dilation, 2) < 0))
		return -1;
	return attr_ints(b, nd, "strides", stride, 2);
}

/* Reshape and broadcast_to: the output shape as an int64 input (the
 * inferred one, so -1 entries are resolved). */
static int export_to_shape(builder *b, const char *onnx)
{
	/* a copy: naming the helper adds a tensor, which may move them */
	const fl_shape s = *shape_of(b, b->op->out[0]);
	const char *in[2] = {in_name(b, 0),
			     init_int64(b, "shape", s.dim, s.rank, false)};

	return in[1] && add_node(b, onnx, in, 2, out_name(b)) ? 0 : -1;
}

/* slice: starts, ends, axes (every dim) and steps as int64 inputs; both
 * clamp ends and count negative positions from the end alike. */
static int export_slice(builder *b)
{
	int rank = shape_of(b, b->op->in[0])->rank, n;
	int64_t starts[FL_MAX_RANK * 2], ends[FL_MAX_RANK * 2];
	int64_t axes[FL_MAX_RANK], steps[FL_MAX_RANK * 2];
	const char *in[5] = {in_name(b, 0)};

	op_ints(b, "starts", starts, &n);
	op_ints(b, "ends", ends, &n);
	op_ints(b, "steps", steps, &n);
	for (int d = 0; d < rank; d++) {
		axes[d] = d;
		if (n != rank)
			steps[d] = 1;
	}
	if (!(in[1] = init_int64(b, "starts", starts, rank, false)) ||
	    !(in[2] = init_int64(b, "ends", ends, rank, false)) ||
	    !(in[3] = init_int64(b, "axes", axes, rank, false)) ||
	    !(in[4] = init_int64(b, "steps", steps, rank, false)))
		return -1;
	return add_node(b, "Slice", in, 5, out_name(b)) ? 0 : -1;
}

/* pad: the same pads order as ONNX; the value as a scalar input. */
static int export_pad(builder *b)
{
	int rank = shape_of(b, b->op->in[0])->rank, n;
	int64_t pads[FL_MAX_RANK * 2];
	fl_shape scalar = fl_shape_scalar();
	const char *in[3] = {in_name(b, 0)};

	fl_dtype dt = b->g->tensors[b->op->in[0]].dtype;
	float value = (float)op_float(b, "value", 0);

	op_ints(b, "pads", pads, &n);
	/* ONNX's constant_value has the data's type */
	in[2] = fl_dtype_is_half(dt)
		? init_half_named(b, helper_name(b, "value"), dt, &scalar,
				  &value, 1)
		: init_splat(b, "value", &scalar, value);
	if (!(in[1] = init_int64(b, "pads", pads, 2 * rank, false)) || !in[2])
		return -1;
	return add_node(b, "Pad", in, 3, out_name(b)) ? 0 : -1;
}

/* gather: fuselab reads index floor(v) clamped into [0, extent); ONNX
 * wants int64 indices.  Clip into [0, extent - 1] then Cast (which
 * truncates) is the same index for every finite v: after the clip v is
 * non-negative, where truncating is flooring.  NaN: see onnx.h. */
static int export_gather(builder *b)
{
	/* a copy: helpers add tensors, which may move them */
	const fl_shape x = *shape_of(b, b->op->in[0]);
	int axis = fl_axis_normalize(op_int(b, "axis", 0), x.rank);
	fl_shape scalar = fl_shape_scalar();
	const char *clip_in[3], *in[2] = {in_name(b, 0)};
	Onnx__NodeProto *clip, *cast, *nd;

	clip_in[0] = in_name(b, 1);
	/* integer indices: Clip's bounds are floats here */
	if (b->g->tensors[b->op->in[1]].dtype != FL_F32) {
		Onnx__NodeProto *f = add_node(b, "Cast", clip_in, 1, NULL);

		if (!f || attr_int(b, f, "to", DT_FLOAT) < 0)
			return -1;
		clip_in[0] = f->output[0];
	}
	if (!(clip_in[1] = init_splat(b, "min", &scalar, 0)) ||
	    !(clip_in[2] = init_splat(b, "max", &scalar,
				      (float)(x.dim[axis] - 1))) ||
	    !(clip = add_node(b, "Clip", clip_in, 3, NULL)) ||
	    !(cast = add_node(b, "Cast", (const char *[]){clip->output[0]}, 1,
			      NULL)) ||
	    attr_int(b, cast, "to", DT_INT64) < 0)
		return -1;
	in[1] = cast->output[0];
	nd = add_node(b, "Gather", in, 2, out_name(b));
	return nd ? attr_int(b, nd, "axis", axis) : -1;
}

/* The ONNX index (int64) of fuselab index tensor `idx` along an axis of
 * `extent`, as gather_elements and scatter_elements resolve it (ops.h):
 * floored, a negative one counted from the end, then clipped into
 * [0, extent - 1] -- ONNX would reject what fuselab clamps. */
static const char *export_index(builder *b, const char *idx, int in_t,
				int64_t extent)
{
	fl_shape scalar = fl_shape_scalar();
	const char *v = idx, *zero, *x, *t[3];
	Onnx__NodeProto *nd;

	if (b->g->tensors[in_t].dtype != FL_F32) {
		nd = add_node(b, "Cast", &v, 1, NULL);
		if (!nd || attr_int(b, nd, "to", DT_FLOAT) < 0)
			return NULL;
		v = nd->output[0];
	}
	if (!(nd = add_node(b, "Floor", &v, 1, NULL)) ||
	    !(zero = init_splat(b, "zero", &scalar, 0)) ||
	    !(x = init_splat(b, "extent", &scalar, (float)extent)))
		return NULL;
	t[2] = v = nd->output[0];
	if (!(nd = add_node(b, "Less", (const char *[]){v, zero}, 2, NULL)))
		return NULL;
	t[0] = nd->output[0];
	if (!(nd = add_node(b, "Add", (const char *[]){v, x}, 2, NULL)))
		return NULL;
	t[1] = nd->output[0];
	if (!(nd = add_node(b, "Where", t, 3, NULL)) ||
	    !(x = init_splat(b, "last", &scalar, (float)(extent - 1))))
		return NULL;
	if (!(nd = add_node(b, "Clip", (const char *[]){nd->output[0], zero, x},
			    3, NULL)) ||
	    !(nd = add_node(b, "Cast", (const char *[]){nd->output[0]}, 1,
			    NULL)) ||
	    attr_int(b, nd, "to", DT_INT64) < 0)
		return NULL;
	return nd->output[0];
}

/* gather_elements is GatherElements, scatter_elements ScatterElements
 * (opset 18 for max and min), their indices resolved as fuselab does. */
static int export_indexed(builder *b)
{
	const fl_shape x = *shape_of(b, b->op->in[0]);
	int axis = fl_axis_normalize(op_int(b, "axis", 0), x.rank);
	bool scatter = b->op->kind == FL_OP_SCATTER_ELEMENTS;
	const char *in[3] = {in_name(b, 0), NULL, scatter ? in_name(b, 2)
							  : NULL};
	const char *red = "none";
	Onnx__NodeProto *nd;

	if (!(in[1] = export_index(b, in_name(b, 1), b->op->in[1],
				   x.dim[axis])))
		return -1;
	nd = add_node(b, scatter ? "ScatterElements" : "GatherElements", in,
		      scatter ? 3 : 2, out_name(b));
	if (!nd || attr_int(b, nd, "axis", axis) < 0)
		return -1;
	fl_attr_string(&b->op->attrs, "reduction", "none", &red, NULL);
	return scatter && strcmp(red, "none") ? attr_string(b, nd, "reduction",
							    red) : 0;
}

/* custom: fn cumsum (inclusive, last axis) is CumSum, fn copy Identity. */
static int export_custom(builder *b)
{
	const char *fn = "cumsum", *in[2] = {NULL};
	int64_t axis;

	fl_attr_string(&b->op->attrs, "fn", "cumsum", &fn, NULL);
	if (!strcmp(fn, "opaque")) {
		char note[96];

		fl_error_set(b->err, "an opaque custom op%s: fuselab kept "
			     "only its output shape, not the operator, so it "
			     "cannot be written as ONNX",
			     fl_op_source_note(b->op, note, sizeof note));
		return -1;
	}
	if (!strcmp(fn, "copy"))
		return own_node(b, "Identity") ? 0 : -1;
	if (strcmp(fn, "cumsum")) {
		fl_error_set(b->err, "custom fn \"%s\" has no ONNX operator",
			     fl_error_name(fn));
		return -1;
	}
	in[0] = in_name(b, 0);
	axis = shape_of(b, b->op->in[0])->rank - 1;
	if (!(in[1] = init_int64(b, "axis", &axis, 1, true)))
		return -1;
	return add_node(b, "CumSum", in, 2, out_name(b)) ? 0 : -1;
}

/* ------------------------------------------------- compound operators */

/* Parameter p of shape ps as the ONNX operator wants it, shape want:
 * itself when the shapes agree, else Reshape(p, want) (same count). */
static const char *param_as(builder *b, int k, const fl_shape *want)
{
	const char *in[2] = {in_name(b, k), NULL};
	Onnx__NodeProto *nd;

	if (fl_shape_equal(shape_of(b, b->op->in[k]), want))
		return in[0];
	if (!(in[1] = init_int64(b, "shape", want->dim, want->rank, false)))
		return NULL;
	nd = add_node(b, "Reshape", in, 2, NULL);
	return nd ? nd->output[0] : NULL;
}

/* The dims of x from axis on: what layernorm normalises over. */
static fl_shape normalized_shape(const fl_shape *x, int axis)
{
	return fl_shape_make(x->rank - axis, x->dim + axis);
}

/* Whether p, aligned to the right of x, has x's extent in dims from
 * `from` to `to` (exclusive) and 1 everywhere else. */
static bool param_spans(const fl_shape *p, const fl_shape *x, int from,
			int to)
{
	for (int d = 0; d < x->rank; d++) {
		int pd = d - (x->rank - p->rank);
		int64_t e = pd >= 0 ? p->dim[pd] : 1;

		if (e != (d >= from && d < to ? x->dim[d] : 1))
			return false;
	}
	return p->rank <= x->rank;
}

static int layernorm_axis(const fl_graph *g, const fl_op *op)
{
	int64_t axis = -1;

	fl_attr_int(&op->attrs, "axis", -1, &axis, NULL);
	return fl_axis_normalize(axis, g->tensors[op->in[0]].shape.rank);
}

/* LayerNormalization takes gamma and beta of the normalised shape. */
static bool layernorm_fits(const fl_graph *g, const fl_op *op)
{
	const fl_shape *x = &g->tensors[op->in[0]].shape;
	int axis = layernorm_axis(g, op);

	for (int k = 1; k < op->n_in; k++)
		if (!param_spans(&g->tensors[op->in[k]].shape, x, axis,
				 x->rank))
			return false;
	return true;
}

/* BatchNormalization takes per-channel (dim 1) parameters. */
static bool batchnorm_fits(const fl_graph *g, const fl_op *op)
{
	const fl_shape *x = &g->tensors[op->in[0]].shape;

	if (x->rank < 2)
		return false;
	for (int k = 1; k < op->n_in; k++)
		if (!param_spans(&g->tensors[op->in[k]].shape, x, 1, 2))
			return false;
	return true;
}

/* Gemm takes 2-D operands and a bias of rank 2 at most. */
static bool dense_fits(const fl_graph *g, const fl_op *op)
{
	return g->tensors[op->in[0]].shape.rank == 2 &&
	       g->tensors[op->in[1]].shape.rank == 2 &&
	       (op->n_in < 3 || g->tensors[op->in[2]].shape.rank <= 2);
}

/* fuselab's max(x, alpha x) is LeakyRelu's x < 0 ? alpha x : x only
 * for alpha in [0, 1]. */
static bool leaky_relu_fits(const fl_op *op)
{
	double alpha = 0.01;

	fl_attr_float(&op->attrs, "alpha", 0.01, &alpha, NULL);
	return alpha >= 0 && alpha <= 1;
}

/* Whether compound op i of g becomes one ONNX operator (else it is
 * opened into primitives before the export). */
static bool has_onnx_operator(const fl_graph *g, const fl_op *op)
{
	switch (op->kind) {
	case FL_OP_SOFTMAX:
	case FL_OP_LOG_SOFTMAX:
	case FL_OP_REDUCE_MEAN:
	case FL_OP_HARD_SIGMOID:
	case FL_OP_HARD_SWISH:
	case FL_OP_ELU:
		return true;
	case FL_OP_LEAKY_RELU:
		return leaky_relu_fits(op);
	case FL_OP_LAYERNORM:
		return layernorm_fits(g, op);
	case FL_OP_BATCHNORM:
		return batchnorm_fits(g, op);
	case FL_OP_DENSE:
		return dense_fits(g, op);
	default:
		return false;
	}
}

/* Parameter k of the op in the operator's shape, or (missing) a helper
 * initializer of that shape filled with v. */
static const char *param_or_fill(builder *b, int k, const fl_shape *want,
				 const char *what, float v)
{
	if (k < b->op->n_in)
		return param_as(b, k, want);
	return init_splat(b, what, want, v);
}

static int export_layernorm(builder *b)
{
	const fl_shape *x = shape_of(b, b->op->in[0]);
	int axis = layernorm_axis(b->g, b->op);
	fl_shape ns = normalized_shape(x, axis);
	const char *in[3] = {in_name(b, 0)};
	Onnx__NodeProto *nd;

	if (!(in[1] = param_or_fill(b, 1, &ns, "scale", 1)) ||
	    !(in[2] = param_or_fill(b, 2, &ns, "bias", 0)) ||
	    !(nd = add_node(b, "LayerNormalization", in, 3, out_name(b))) ||
	    attr_int(b, nd, "axis", axis) < 0)
		return -1;
	return attr_float(b, nd, "epsilon", op_float(b, "eps", 1e-5));
}

/* batchnorm(x, mean, var[, gamma[, beta]]) is
 * BatchNormalization(x, scale, bias, mean, var) in inference mode. */
static int export_batchnorm(builder *b)
{
	fl_shape c = fl_shape_make(1, &shape_of(b, b->op->in[0])->dim[1]);
	const char *in[5] = {in_name(b, 0)};
	Onnx__NodeProto *nd;

	if (!(in[1] = param_or_fill(b, 3, &c, "scale", 1)) ||
	    !(in[2] = param_or_fill(b, 4, &c, "bias", 0)) ||
	    !(in[3] = param_as(b, 1, &c)) || !(in[4] = param_as(b, 2, &c)) ||
	    !(nd = add_node(b, "BatchNormalization", in, 5, out_name(b))))
		return -1;
	return attr_float(b, nd, "epsilon", op_float(b, "eps", 1e-5));
}

/* dense on 2-D operands: Gemm (the bias, if any, broadcasts to [M, N]
 * as Gemm's C must). */
static int export_dense(builder *b)
{
	Onnx__NodeProto *nd = own_node(b, "Gemm");

	return nd ? attr_int(b, nd, "transB", op_bool(b, "transpose_b")) : -1;
}

/* Every op left after opening: the ONNX nodes computing its output. */
static int export_op(builder *b)
{
	for (size_t k = 0; k < sizeof same_inputs / sizeof same_inputs[0]; k++)
		if (same_inputs[k].kind == b->op->kind)
			return export_same_inputs(b, same_inputs[k].onnx);
	switch (b->op->kind) {
	case FL_OP_RSQRT: return export_rsqrt(b);
	case FL_OP_CAST: return export_cast(b);
	case FL_OP_IS_INF: return export_is_inf(b);
	case FL_OP_SQUARE: return export_square(b);
	case FL_OP_WHERE: return export_where(b);
	case FL_OP_REDUCE_SUM: return export_reduce(b, "ReduceSum", true);
	case FL_OP_REDUCE_MAX: return export_reduce(b, "ReduceMax", false);
	case FL_OP_REDUCE_MIN: return export_reduce(b, "ReduceMin", false);
	case FL_OP_REDUCE_PROD: return export_reduce(b, "ReduceProd", false);
	case FL_OP_REDUCE_MEAN: return export_reduce(b, "ReduceMean", false);
	case FL_OP_MATMUL: return export_matmul(b);
	case FL_OP_POOL2D: return export_pool(b);
	case FL_OP_RESHAPE: return export_to_shape(b, "Reshape");
	case FL_OP_BROADCAST_TO: return export_to_shape(b, "Expand");
	case FL_OP_SLICE: return export_slice(b);
	case FL_OP_PAD: return export_pad(b);
	case FL_OP_GATHER: return export_gather(b);
	case FL_OP_GATHER_ELEMENTS: case FL_OP_SCATTER_ELEMENTS:
		return export_indexed(b);
	case FL_OP_CUSTOM: return export_custom(b);
	case FL_OP_LAYERNORM: return export_layernorm(b);
	case FL_OP_BATCHNORM: return export_batchnorm(b);
	case FL_OP_DENSE: return export_dense(b);
	default:
		fl_error_set(b->err, "%s has no ONNX form",
			     fl_op_kind_name(b->op->kind));
		return -1;
	}
}

/* ------------------------------------------------------- graph, model */

/* A float tensor's type and static shape under `name`. */
static Onnx__ValueInfoProto *value_info(builder *b, const fl_tensor *t)
{
	Onnx__ValueInfoProto *vi = calloc(1, sizeof *vi);
	Onnx__TypeProto *tp = calloc(1, sizeof *tp);
	Onnx__TypeProto__Tensor *tt = calloc(1, sizeof *tt);
	Onnx__TensorShapeProto *sp = calloc(1, sizeof *sp);

	if (!vi || !tp || !tt || !sp) {
		free(vi), free(tp), free(tt), free(sp);
		return oom(b);
	}
	onnx__value_info_proto__init(vi);
	onnx__type_proto__init(tp);
	onnx__type_proto__tensor__init(tt);
	onnx__tensor_shape_proto__init(sp);
	vi->type = tp;
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	tt->has_elem_type = 1;
	tt->elem_type = fl_onnx_from_dtype(t->dtype);
	tt->shape = sp;
	if (!(vi->name = dup_str(b, t->name)) ||
	    (t->shape.rank > 0 &&
	     !(sp->dim = calloc(t->shape.rank, sizeof *sp->dim)))) {
		onnx__value_info_proto__free_unpacked(vi, NULL);
		return oom(b);
	}
	for (int d = 0; d < t->shape.rank; d++, sp->n_dim++) {
		Onnx__TensorShapeProto__Dimension *dim = malloc(sizeof *dim);

		if (!dim) {
			onnx__value_info_proto__free_unpacked(vi, NULL);
			return oom(b);
		}
		onnx__tensor_shape_proto__dimension__init(dim);
		dim->value_case =
			ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
		dim->dim_value = t->shape.dim[d];
		sp->dim[d] = dim;
	}
	return vi;
}

/* Appends tensor t's value info to one of the graph's lists. */
static int add_value_info(builder *b, const fl_tensor *t,
			  Onnx__ValueInfoProto ***list, size_t *n)
{
	Onnx__ValueInfoProto **grown = realloc(*list, (*n + 1) * sizeof *grown);
	Onnx__ValueInfoProto *vi;

	if (!grown) {
		oom(b);
		return -1;
	}
	*list = grown;
	if (!(vi = value_info(b, t)))
		return -1;
	grown[(*n)++] = vi;
	return 0;
}

/* Inputs, initializers, outputs and value infos from the tensors. */
static int export_tensors(builder *b, int n_tensors)
{
	Onnx__GraphProto *gp = b->gp;

	for (int i = 0; i < n_tensors; i++) {
		const fl_tensor *t = &b->g->tensors[i];
		int r = 0;

		if (!t->shape_known) {
			fl_error_set(b->err, "tensor %s: shape unknown (the "
				     "graph is not validated)",
				     fl_error_name(t->name));
			return -1;
		}
		if (t->role == FL_ROLE_INPUT || t->role == FL_ROLE_PARAM)
			r = add_value_info(b, t, &gp->input, &gp->n_input);
		else if (t->role == FL_ROLE_OUTPUT)
			r = add_value_info(b, t, &gp->output, &gp->n_output);
		else if (t->role == FL_ROLE_TEMP && t->producer >= 0)
			r = add_value_info(b, t, &gp->value_info,
					   &gp->n_value_info);
		else if (t->role == FL_ROLE_CONST && t->ints)
			r = init_typed_named(b, dup_str(b, t->name), t) ? 0 : -1;
		else if (t->role == FL_ROLE_CONST && fl_dtype_is_half(t->dtype))
			r = init_half_named(b, dup_str(b, t->name), t->dtype,
					    &t->shape, t->data, t->n_data)
				? 0 : -1;
		else if (t->role == FL_ROLE_CONST)
			r = init_float_named(b, dup_str(b, t->name), &t->shape,
					     t->data, t->n_data) ? 0 : -1;
		if (r < 0)
			return -1;
	}
	return 0;
}

static int export_ops(builder *b)
{
	for (int i = 0; i < b->g->n_ops; i++) {
		b->op = &b->g->ops[i];
		if (export_op(b) < 0) {
			fl_error_prefix(b->err, "op %s",
					fl_error_name(b->op->name));
			return -1;
		}
	}
	return 0;
}

static bool open_without_operator(void *user, const fl_graph *src, int i)
{
	(void)user;
	return !has_onnx_operator(src, &src->ops[i]);
}

/* model->graph, named and documented as g. */
static int new_graph_proto(builder *b, Onnx__ModelProto *model,
			   const fl_graph *g)
{
	Onnx__GraphProto *gp = malloc(sizeof *gp);

	if (!gp) {
		oom(b);
		return -1;
	}
	onnx__graph_proto__init(gp);
	model->graph = b->gp = gp;
	if (!(gp->name = dup_str(b, g->name)) ||
	    (g->doc && !(gp->doc_string = dup_str(b, g->doc))))
		return -1;
	return 0;
}

/* g opened for the export (see the top of the file), from a copy whose
 * bad names are repaired when it has any; NULL on error. */
static fl_graph *export_copy(const fl_graph *g, fl_error *err)
{
	fl_open_hooks hooks = {open_without_operator, NULL, NULL};
	fl_graph *renamed = NULL, *opened;

	if (names_need_repair(g)) {
		if (!(renamed = fl_graph_copy(g))) {
			fl_error_set(err, "out of memory");
			return NULL;
		}
		if (repair_names(renamed, err) < 0) {
			fl_graph_free(renamed);
			return NULL;
		}
	}
	opened = fl_graph_open_compounds(renamed ? renamed : g, &hooks, NULL,
					 NULL, err);
	fl_graph_free(renamed);
	return opened;
}

/* The graph proto of g, hung on model->graph. */
static int build_graph(Onnx__ModelProto *model, const fl_graph *g,
		       fl_error *err)
{
	builder b = {.err = err};
	int n_tensors, rc;

	b.g = export_copy(g, err);
	if (!b.g)
		return -1;
	n_tensors = b.g->n_tensors;	/* before names are reserved */
	rc = new_graph_proto(&b, model, g) == 0 &&
	     fl_graph_relink(b.g, err) == 0 &&
	     export_tensors(&b, n_tensors) == 0 && export_ops(&b) == 0 ? 0
									 : -1;
	fl_graph_free(b.g);
	return rc;
}

static int set_header(Onnx__ModelProto *model, fl_error *err)
{
	Onnx__OperatorSetIdProto *opset = malloc(sizeof *opset);

	if (!opset || !(model->opset_import = malloc(sizeof *opset))) {
		free(opset);
		fl_error_set(err, "out of memory");
		return -1;
	}
	onnx__operator_set_id_proto__init(opset);
	model->opset_import[0] = opset;
	model->n_opset_import = 1;
	opset->has_version = 1;
	opset->version = FL_ONNX_EXPORT_OPSET;
	model->has_ir_version = 1;
	model->ir_version = FL_ONNX_EXPORT_IR_VERSION;
	if (!(opset->domain = strdup("")) ||
	    !(model->producer_name = strdup("fuselab")) ||
	    !(model->producer_version = strdup(FL_VERSION))) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	return 0;
}

int fl_export_onnx_bytes(const fl_graph *g, uint8_t **bytes, size_t *n,
			 fl_error *err)
{
	Onnx__ModelProto *model = malloc(sizeof *model);
	int rc = -1;

	*bytes = NULL;
	*n = 0;
	if (!model) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	onnx__model_proto__init(model);
	if (set_header(model, err) == 0 && build_graph(model, g, err) == 0) {
		*n = onnx__model_proto__get_packed_size(model);
		*bytes = malloc(*n ? *n : 1);
		if (*bytes) {
			onnx__model_proto__pack(model, *bytes);
			rc = 0;
		} else {
			fl_error_set(err, "out of memory");
		}
	}
	onnx__model_proto__free_unpacked(model, NULL);
	return rc;
}

int fl_export_onnx(const fl_graph *g, const char *path, fl_error *err)
{
	uint8_t *bytes;
	size_t n;
	int rc;

	if (fl_export_onnx_bytes(g, &bytes, &n, err) < 0)
		return -1;
	rc = fl_out_write_file(path, bytes, n, err);
	free(bytes);
	return rc;
}
