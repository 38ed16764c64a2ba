/* ONNX import of the operators fuselab cannot model (DESIGN 1.2 and 7):
 * each used output of such a node becomes one opaque `custom` op, a
 * fusion wall with no implementation, so that the model still loads,
 * partitions and shows (only running it is refused, naming the op).
 *
 * Contract (called by onnx_import.c for a node with no mapping, of a
 * domain fuselab does not know, or whose mapping reported a form it
 * cannot model, fl_onnx_cannot_model):
 *   - inputs: every input known at import as integers (Resize's sizes,
 *     TopK's k) or empty (Resize's roi) is an operand, not data, and is
 *     left out; every other
 *     present input is data (float, or integers kept as integral floats);
 *     a control-flow node (If, Loop, Scan) also reads every outer value
 *     its sub-graphs name, so that nothing it needs looks dead;
 *   - outputs: each output read later (by a node or a sub-graph, or as a
 *     graph output) becomes one op, "fn": "opaque", "shape": the shape
 *     the model declares for it (value_info or graph output; symbolic
 *     dims take the values --input-shape gave the inputs declaring the
 *     same names), else the shape fuselab infers for a few common
 *     operators (Resize, Upsample, ArgMax, ArgMin, elementwise ones
 *     such as Floor, CumSum or IsNaN, and If, whose branches declare
 *     their outputs' shapes); with neither, an
 *     error that says how to add the shapes (ONNX shape inference) or
 *     names the symbolic dim nothing gives (fl_onnx_output_read tells
 *     which outputs are read, also inside an inlined If branch);
 *   - an output keeps the element type the model declares (or the one
 *     inferred with the shape), as the op's "dtype" attribute: a bool
 *     result feeds And, an int64 one (ArgMax) index inputs, as any
 *     tensor of that type does (f32 for float, double and types
 *     fuselab does not hold).
 * Every op records the node's name and op type (provenance), and the
 * import summary counts them as custom. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import_impl.h"

/* ---- what the node reads ------------------------------------------------ */

#define MAX_CUSTOM_IN 64

typedef struct custom_inputs {
	int t[MAX_CUSTOM_IN];
	int n;
} custom_inputs;

static int add_input(custom_inputs *ci, int t, fl_error *err)
{
	for (int k = 0; k < ci->n; k++)
		if (ci->t[k] == t)
			return 0;
	if (ci->n == MAX_CUSTOM_IN) {
		fl_error_set(err, "more than %d data inputs", MAX_CUSTOM_IN);
		return -1;
	}
	ci->t[ci->n++] = t;
	return 0;
}

/* A value known at import that is an operand rather than data: integers
 * (sizes, axes, k) and empty tensors (Resize's unused roi). */
static bool operand_only(const fl_onnx_values *v)
{
	return v && (v->i || v->n == 0);
}

static int node_inputs(fl_onnx_ctx *c, custom_inputs *ci, fl_error *err)
{
	for (int k = 0; k < fl_onnx_n_inputs(c); k++) {
		int t;

		if (!fl_onnx_has_input(c, k))
			continue;
		if (operand_only(fl_onnx_input_known(c, k)))
			continue;
		t = fl_onnx_data_any(c, k, err);
		if (t < 0)
			return -1;
		if (t >= 0 && add_input(ci, t, err) < 0)
			return -1;
	}
	return 0;
}

/* Outer values named inside graph gp (a sub-graph, at any depth). */
static int outer_reads(fl_onnx_ctx *c, const Onnx__GraphProto *gp,
		       custom_inputs *ci, int depth, fl_error *err);

static int attr_graph_reads(fl_onnx_ctx *c, const Onnx__AttributeProto *a,
			    custom_inputs *ci, int depth, fl_error *err)
{
	if (a->g && outer_reads(c, a->g, ci, depth + 1, err) < 0)
		return -1;
	for (size_t k = 0; k < a->n_graphs; k++)
		if (a->graphs[k] &&
		    outer_reads(c, a->graphs[k], ci, depth + 1, err) < 0)
			return -1;
	return 0;
}

static int outer_reads(fl_onnx_ctx *c, const Onnx__GraphProto *gp,
		       custom_inputs *ci, int depth, fl_error *err)
{
	if (depth > 16) {
		fl_error_set(err, "sub-graphs nested more than 16 deep");
		return -1;
	}
	for (size_t i = 0; i < gp->n_node; i++) {
		const Onnx__NodeProto *n = gp->node[i];

		for (size_t j = 0; j < n->n_input; j++) {
			fl_onnx_binding *b = n->input[j] && *n->input[j]
				? fl_onnx_lookup(c, n->input[j]) : NULL;
			int t;

			/* ONNX names are unique across scopes: a name
			 * bound out here is an outer value */
			if (!b || operand_only(b->known))
				continue;
			t = b->tensor;
			if (t < 0)
				continue;	/* a known float: a constant */
			if (add_input(ci, t, err) < 0)
				return -1;
		}
		for (size_t j = 0; j < n->n_attribute; j++)
			if (attr_graph_reads(c, n->attribute[j], ci, depth,
					     err) < 0)
				return -1;
	}
	return 0;
}

static int subgraph_inputs(fl_onnx_ctx *c, custom_inputs *ci, fl_error *err)
{
	for (size_t k = 0; k < c->node->n_attribute; k++)
		if (attr_graph_reads(c, c->node->attribute[k], ci, 0, err) < 0)
			return -1;
	return 0;
}

/* ---- which outputs are used --------------------------------------------- */

static bool graph_reads(const Onnx__GraphProto *gp, const char *name,
			int depth);

static bool node_reads(const Onnx__NodeProto *n, const char *name, int depth)
{
	for (size_t j = 0; j < n->n_input; j++)
		if (n->input[j] && !strcmp(n->input[j], name))
			return true;
	for (size_t j = 0; depth < 16 && j < n->n_attribute; j++) {
		const Onnx__AttributeProto *a = n->attribute[j];

		if (a->g && graph_reads(a->g, name, depth + 1))
			return true;
		for (size_t k = 0; k < a->n_graphs; k++)
			if (a->graphs[k] &&
			    graph_reads(a->graphs[k], name, depth + 1))
				return true;
	}
	return false;
}

static bool graph_reads(const Onnx__GraphProto *gp, const char *name,
			int depth)
{
	for (size_t i = 0; i < gp->n_node; i++)
		if (node_reads(gp->node[i], name, depth))
			return true;
	return false;
}

static bool is_output(const Onnx__GraphProto *gp, const char *name)
{
	for (size_t k = 0; k < gp->n_output; k++)
		if (gp->output[k]->name && !strcmp(gp->output[k]->name, name))
			return true;
	return false;
}

bool fl_onnx_output_read(const fl_onnx_ctx *c, const char *name)
{
	const Onnx__GraphProto *gp = c->graph;

	if (!name || !*name)
		return false;
	/* a half-precision node's float copy: its outputs stand for the
	 * node's (onnx_half.c) */
	for (size_t k = 0; c->unwrapped && k < c->node->n_output &&
			   k < c->unwrapped->n_output; k++)
		if (!strcmp(c->node->output[k], name))
			name = c->unwrapped->output[k];
	/* in an inlined branch: a read anywhere in the model is one of
	 * this value (ONNX names are assigned once), or the branch or the
	 * model gives it out */
	if (c->depth > 0)
		return is_output(gp, name) || is_output(c->main_graph, name) ||
		       graph_reads(c->main_graph, name, 0);
	if (is_output(gp, name))
		return true;
	for (size_t i = (size_t)c->node_index + 1; i < gp->n_node; i++)
		if (node_reads(gp->node[i], name, 0))
			return true;
	return false;
}

/* ---- output shapes ------------------------------------------------------- */

/* The value --input-shape (or the model) gave symbolic dim `param` of a
 * graph input declaring it; -1 when none does. */
static int64_t param_value(const fl_onnx_ctx *c, const char *param)
{
	const Onnx__GraphProto *gp = c->main_graph;

	for (size_t k = 0; k < gp->n_input; k++) {
		const Onnx__ValueInfoProto *vi = gp->input[k];
		const Onnx__TensorShapeProto *sp;
		fl_onnx_binding *b;

		if (!vi->name || !vi->type || !vi->type->tensor_type ||
		    !(sp = vi->type->tensor_type->shape))
			continue;
		b = fl_onnx_lookup((fl_onnx_ctx *)c, vi->name);
		if (!b || b->tensor < 0 ||
		    c->g->tensors[b->tensor].shape.rank != (int)sp->n_dim)
			continue;
		for (size_t d = 0; d < sp->n_dim; d++)
			if (sp->dim[d]->value_case ==
				    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
			    sp->dim[d]->dim_param &&
			    !strcmp(sp->dim[d]->dim_param, param))
				return c->g->tensors[b->tensor].shape.dim[d];
	}
	return -1;
}

/* The declared shape of value `name`, symbolic dims resolved: 1 when
 * every dim has a value, 0 when the model declares none (or leaves a
 * dim unknown), -1 on error. */
static int declared_output_shape(const fl_onnx_ctx *c, const char *name,
				 fl_shape *s, int *dtype, fl_error *err)
{
	const Onnx__ValueInfoProto *vi = fl_onnx_declared_value(c->graph, name);
	const Onnx__TensorShapeProto *sp;
	bool dynamic;

	if (!vi)
		return 0;
	if (fl_onnx_declared_shape(vi, s, &dynamic, err) < 0)
		return -1;
	*dtype = vi->type->tensor_type->elem_type;
	sp = vi->type->tensor_type->shape;
	if (!sp)
		return 0;
	for (int d = 0; dynamic && d < s->rank; d++) {
		const Onnx__TensorShapeProto__Dimension *dim = sp->dim[d];

		if (s->dim[d] >= 1)
			continue;
		if (dim->value_case !=
			    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ||
		    !dim->dim_param ||
		    (s->dim[d] = param_value(c, dim->dim_param)) < 1)
			return 0;
	}
	return 1;
}

/* Resize (opset 10+: X, roi, scales, sizes; opset 10: X, scales) and
 * Upsample (X, scales; or a "scales" attribute before opset 9): sizes
 * when given, else floor(extent * scale). */
static int resize_shape(fl_onnx_ctx *c, fl_shape *s, fl_error *err)
{
	const fl_onnx_values *v;
	int n_in = fl_onnx_n_inputs(c);
	int scales_at = !strcmp(c->node->op_type, "Resize") && c->opset >= 11
		? 2 : 1;
	fl_shape in;

	if (fl_onnx_input_dims(c, 0, &in, err) < 0)
		return -1;
	if (n_in > 3 && fl_onnx_has_input(c, 3) &&
	    (v = fl_onnx_input_known(c, 3)) && v->i && v->n == in.rank) {
		*s = in;
		for (int d = 0; d < in.rank; d++)
			s->dim[d] = v->i[d];
		return 1;
	}
	if (n_in > scales_at && fl_onnx_has_input(c, scales_at) &&
	    (v = fl_onnx_input_known(c, scales_at)) && v->f &&
	    v->n == in.rank) {
		*s = in;
		for (int d = 0; d < in.rank; d++)
			s->dim[d] = (int64_t)floor((double)in.dim[d] * v->f[d]);
		return 1;
	}
	return 0;
}

/* ArgMax, ArgMin: the axis dropped or kept as 1. */
static int arg_shape(fl_onnx_ctx *c, fl_shape *s, fl_error *err)
{
	int64_t axis = fl_onnx_attr_int(c, "axis", 0);
	bool keep = fl_onnx_attr_int(c, "keepdims", 1) != 0;
	fl_shape in;

	if (fl_onnx_input_dims(c, 0, &in, err) < 0)
		return -1;
	if (axis < -in.rank || axis >= in.rank)
		return 0;
	axis = axis < 0 ? axis + in.rank : axis;
	*s = in;
	if (keep) {
		s->dim[axis] = 1;
		return 1;
	}
	for (int d = (int)axis; d + 1 < in.rank; d++)
		s->dim[d] = in.dim[d + 1];
	s->rank--;
	return 1;
}

/* Operators whose output has their first input's shape, and its
 * element type unless they test something (a bool result). */
static const char *const same_shape_ops[] = {
	"Ceil", "Floor", "Sign", "CumSum", "Hardmax", "LpNormalization",
	"Shrink", "ThresholdedRelu", "Celu", "MeanVarianceNormalization",
	"LRN", "Trilu", "ReverseSequence", "BitwiseNot", NULL,
};
static const char *const same_shape_bool_ops[] = {
	"IsNaN", "IsInf", "Not", NULL,
};

static bool listed(const char *const *list, const char *op)
{
	for (; *list; list++)
		if (!strcmp(*list, op))
			return true;
	return false;
}

/* An If decided at run time: output k has the shape both branches
 * declare for their output k, when they agree and it is static. */
static int if_shape(const fl_onnx_ctx *c, int k, fl_shape *s, int *dtype)
{
	static const char *const names[2] = {"then_branch", "else_branch"};
	fl_shape b[2];

	for (int i = 0; i < 2; i++) {
		const Onnx__AttributeProto *a = fl_onnx_attr(c, names[i]);
		bool dynamic;
		fl_error ignore;

		if (!a || !a->g || a->g->n_output <= (size_t)k ||
		    fl_onnx_declared_shape(a->g->output[k], &b[i], &dynamic,
					   &ignore) < 0 ||
		    dynamic)
			return 0;
		*dtype = a->g->output[k]->type->tensor_type->elem_type;
	}
	if (b[0].rank != b[1].rank || !fl_shape_equal(&b[0], &b[1]))
		return 0;
	*s = b[0];
	return 1;
}

/* The shape fuselab infers for output k of a few common operators: 1
 * when it does, 0 when it does not. */
static int inferred_shape(fl_onnx_ctx *c, int k, fl_shape *s, int *dtype,
			  fl_error *err)
{
	const char *op = c->node->op_type;

	if (!strcmp(op, "If"))
		return if_shape(c, k, s, dtype);
	if (k != 0 || !fl_onnx_has_input(c, 0))
		return 0;
	if (!strcmp(op, "Resize") || !strcmp(op, "Upsample")) {
		*dtype = FL_DT_FLOAT;
		return resize_shape(c, s, err);
	}
	if (!strcmp(op, "ArgMax") || !strcmp(op, "ArgMin")) {
		*dtype = FL_DT_INT64;
		return arg_shape(c, s, err);
	}
	if (listed(same_shape_ops, op) || listed(same_shape_bool_ops, op)) {
		fl_onnx_binding *b = fl_onnx_input(c, 0, err);

		if (!b || fl_onnx_input_dims(c, 0, s, err) < 0)
			return -1;
		*dtype = listed(same_shape_bool_ops, op)
			? ONNX__TENSOR_PROTO__DATA_TYPE__BOOL : b->dtype;
		return 1;
	}
	return 0;
}

static void no_shape_error(const fl_onnx_ctx *c, const char *name,
			   fl_error *err);

static int output_shape(fl_onnx_ctx *c, int k, fl_shape *s, int *dtype,
			fl_error *err)
{
	const char *name = c->node->output[k];
	int rc = declared_output_shape(c, name, s, dtype, err);

	if (rc == 0)
		rc = inferred_shape(c, k, s, dtype, err);
	if (rc < 0) {
		fl_error_prefix(err, "output %s", fl_error_name(name));
		return -1;
	}
	for (int d = 0; rc == 1 && d < s->rank; d++)
		if (s->dim[d] < 1)
			rc = 0;
	if (rc == 0) {
		no_shape_error(c, name, err);
		return -1;
	}
	return 0;
}

/* The first symbolic dim of value `name`'s declared shape that no
 * input gives, or NULL. */
static const char *symbolic_dim(const fl_onnx_ctx *c, const char *name)
{
	const Onnx__ValueInfoProto *vi = fl_onnx_declared_value(c->graph, name);
	const Onnx__TensorShapeProto *sp = vi && vi->type &&
		vi->type->tensor_type ? vi->type->tensor_type->shape : NULL;

	for (size_t d = 0; sp && d < sp->n_dim; d++)
		if (sp->dim[d]->value_case ==
			    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
		    sp->dim[d]->dim_param &&
		    param_value(c, sp->dim[d]->dim_param) < 1)
			return sp->dim[d]->dim_param;
	return NULL;
}

/* An opaque op needs its output's extents; a symbolic dim (ONNX shape
 * inference names unknown ones unk__N) that no input's --input-shape
 * gives is named, as the advice to run shape inference would not help. */
static void no_shape_error(const fl_onnx_ctx *c, const char *name,
			   fl_error *err)
{
	const char *param = symbolic_dim(c, name);
	char what[200];

	/* "X is not supported", or why its mapping could not model it */
	if (*c->reason)
		snprintf(what, sizeof what, "%s (%s) cannot be modelled",
			 fl_error_name(c->node->op_type), c->reason);
	else
		snprintf(what, sizeof what, "%s is not supported",
			 fl_error_name(c->node->op_type));
	if (param) {
		fl_error_set(err, "%s, and its output %s has no shape in the "
			     "model: it declares the symbolic dim \"%s\", "
			     "which no graph input's --input-shape gives, and "
			     "fuselab keeps such an operator as an opaque "
			     "custom op only with its output's extents", what,
			     fl_error_name(name), fl_error_name(param));
		return;
	}
	fl_error_set(err, "%s, and its output %s has no shape in the model: "
		     "fuselab keeps such an operator as an opaque custom op "
		     "when the model declares its output shapes (run ONNX "
		     "shape inference on the model, onnx.shape_inference."
		     "infer_shapes, and give dynamic dims with "
		     "--input-shape)", what, fl_error_name(name));
}

/* ---- the ops -------------------------------------------------------------- */

static int emit_output(fl_onnx_ctx *c, const custom_inputs *ci, int k,
		       fl_error *err)
{
	fl_attrs a = {0};
	int64_t dims[FL_MAX_RANK];
	fl_onnx_binding *b;
	fl_shape s = {0};
	int dtype = FL_DT_FLOAT, dt, t, rc = -1;

	if (output_shape(c, k, &s, &dtype, err) < 0)
		return -1;
	for (int d = 0; d < s.rank; d++)
		dims[d] = s.dim[d];
	/* the element type the model declares (or fuselab infers), so a
	 * typed op after it (And on a bool result) imports; f32 for
	 * float, double and the types fuselab does not hold */
	dt = fl_onnx_to_dtype(dtype);
	if (fl_attrs_set_string(&a, "fn", "opaque") < 0 ||
	    fl_attrs_set_ints(&a, "shape", dims, s.rank) < 0 ||
	    (dt > 0 && fl_attrs_set_string(&a, "dtype",
					   fl_dtype_name((fl_dtype)dt)) < 0)) {
		fl_error_set(err, "out of memory");
		goto out;
	}
	t = fl_onnx_emit(c, FL_OP_CUSTOM, ci->t, ci->n, &a, k, err);
	if (t < 0)
		goto out;
	b = fl_onnx_lookup(c, c->node->output[k]);
	if (b)
		b->dtype = dtype;
	rc = 0;
out:
	fl_attrs_free(&a);
	return rc;
}

int fl_onnx_import_custom(fl_onnx_ctx *c, fl_error *err)
{
	custom_inputs ci = {.n = 0};

	if (node_inputs(c, &ci, err) < 0 || subgraph_inputs(c, &ci, err) < 0)
		return -1;
	for (size_t k = 0; k < c->node->n_output; k++) {
		if (!c->node->output[k] || !*c->node->output[k] ||
		    !fl_onnx_output_read(c, c->node->output[k]))
			continue;
		/* a node nothing reads adds no op */
		if (emit_output(c, &ci, (int)k, err) < 0)
			return -1;
	}
	return 0;
}
