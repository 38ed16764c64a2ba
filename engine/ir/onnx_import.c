/* ONNX import, the driver (onnx_import.h).
 *
 * Contract: in, the bytes of a serialized ModelProto; out, a validated
 * fl_graph whose inputs are the model's graph inputs that are not
 * initializers (in the model's order, first), whose outputs are the
 * model's graph outputs, and whose const tensors hold the initializers'
 * real data; or NULL and "<source>: <node or tensor>: <what>".
 *
 * The steps: unpack the protobuf, check the model (a graph, a version
 * of the default domain; other declared domains are ignored until a
 * node uses one), bind initializers as known values, create the graph
 * inputs (dynamic dims from --input-shape, given for the input or, by
 * the dim's name, for another input), then walk the nodes in
 * their order (ONNX stores them topologically; an input not produced by
 * an earlier node is an error, which also catches cycles): fold it when
 * its inputs are known (onnx_fold.c), map it (onnx_ops.c, com.microsoft
 * ones onnx_msft.c, If onnx_control.c, which may import a branch's
 * nodes in place) or make it opaque `custom` ops (onnx_custom.c): an
 * unknown op, an unknown domain, a form its mapping reports it cannot
 * model (fl_onnx_cannot_model), or a later output that something reads
 * and the mapping does not compute (the mapping is undone: what it
 * appended to the graph and the bindings is dropped); only malformed
 * input is an error; finally mark the outputs and validate. */
#include "onnx_import_impl.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "loader.h"

/* --- bindings: ONNX value name -> tensor or known value --- */

static uint32_t hash_name(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static int rehash(fl_onnx_ctx *c)
{
	int cap = c->cap_hash ? 2 * c->cap_hash : 256;
	int *h = malloc((size_t)cap * sizeof *h);

	if (!h)
		return -1;
	for (int i = 0; i < cap; i++)
		h[i] = -1;
	for (int b = 0; b < c->n_bind; b++) {
		uint32_t k = hash_name(c->bind[b].name) & (uint32_t)(cap - 1);

		while (h[k] >= 0)
			k = (k + 1) & (uint32_t)(cap - 1);
		h[k] = b;
	}
	free(c->hash);
	c->hash = h;
	c->cap_hash = cap;
	return 0;
}

fl_onnx_binding *fl_onnx_lookup(fl_onnx_ctx *c, const char *name)
{
	uint32_t k;

	if (!c->cap_hash || !name)
		return NULL;
	k = hash_name(name) & (uint32_t)(c->cap_hash - 1);
	for (; c->hash[k] >= 0; k = (k + 1) & (uint32_t)(c->cap_hash - 1))
		if (!strcmp(c->bind[c->hash[k]].name, name))
			return &c->bind[c->hash[k]];
	return NULL;
}

/* A new binding for name; a name bound twice is an error (ONNX values
 * are assigned once). */
static fl_onnx_binding *new_binding(fl_onnx_ctx *c, const char *name,
				    fl_error *err)
{
	fl_onnx_binding *b;
	uint32_t k;

	if (fl_onnx_lookup(c, name)) {
		fl_error_set(err, "%s: value produced twice",
			     fl_error_name(name));
		return NULL;
	}
	if (c->n_bind == c->cap_bind) {
		int cap = c->cap_bind ? 2 * c->cap_bind : 64;
		void *p = realloc(c->bind, (size_t)cap * sizeof *c->bind);

		if (!p)
			goto oom;
		c->bind = p;
		c->cap_bind = cap;
	}
	if (2 * (c->n_bind + 1) > c->cap_hash && rehash(c) < 0)
		goto oom;
	b = &c->bind[c->n_bind];
	memset(b, 0, sizeof *b);
	b->tensor = -1;
	b->name = strdup(name);
	if (!b->name)
		goto oom;
	k = hash_name(name) & (uint32_t)(c->cap_hash - 1);
	while (c->hash[k] >= 0)
		k = (k + 1) & (uint32_t)(c->cap_hash - 1);
	c->hash[k] = c->n_bind++;
	return b;
oom:
	fl_error_set(err, "out of memory");
	return NULL;
}

int fl_onnx_bind_tensor(fl_onnx_ctx *c, const char *name, int tensor,
			int dtype, fl_error *err)
{
	fl_onnx_binding *b = new_binding(c, name, err);

	if (!b)
		return -1;
	b->tensor = tensor;
	b->dtype = dtype;
	return 0;
}

int fl_onnx_bind_known(fl_onnx_ctx *c, const char *name, fl_onnx_values *v,
		       fl_error *err)
{
	fl_onnx_binding *b = new_binding(c, name, err);

	if (!b) {
		fl_onnx_values_delete(v);
		return -1;
	}
	b->known = v;
	b->dtype = v->dtype;
	return 0;
}

fl_onnx_values *fl_onnx_values_new(const fl_shape *s, int dtype,
				   fl_error *err)
{
	fl_onnx_values *v = calloc(1, sizeof *v);
	int64_t n = fl_shape_numel(s);

	if (n < 0 || n > FL_ONNX_MAX_ELEMENTS) {
		fl_error_set(err, "%lld elements is more than a tensor may "
			     "hold", (long long)n);
		free(v);
		return NULL;
	}
	if (v) {
		v->shape = *s;
		v->dtype = dtype;
		v->n = n;
		v->f = calloc((size_t)(n ? n : 1), sizeof *v->f);
		if (!fl_onnx_dtype_is_float(dtype))
			v->i = calloc((size_t)(n ? n : 1), sizeof *v->i);
	}
	if (!v || !v->f || (!fl_onnx_dtype_is_float(dtype) && !v->i)) {
		fl_onnx_values_delete(v);
		fl_error_set(err, "out of memory");
		return NULL;
	}
	return v;
}

void fl_onnx_values_delete(fl_onnx_values *v)
{
	if (!v)
		return;
	fl_onnx_values_free(v);
	free(v);
}

/* --- the node's inputs and attributes --- */

int fl_onnx_n_inputs(const fl_onnx_ctx *c)
{
	return (int)c->node->n_input;
}

bool fl_onnx_has_input(const fl_onnx_ctx *c, int k)
{
	return k >= 0 && (size_t)k < c->node->n_input && c->node->input[k] &&
	       *c->node->input[k];
}

fl_onnx_binding *fl_onnx_input(fl_onnx_ctx *c, int k, fl_error *err)
{
	fl_onnx_binding *b;

	if (!fl_onnx_has_input(c, k)) {
		fl_error_set(err, "input %d: missing", k);
		return NULL;
	}
	b = fl_onnx_lookup(c, c->node->input[k]);
	if (!b)
		fl_error_set(err, "input %d: \"%s\" is not a graph input, an "
			     "initializer or the output of an earlier node", k,
			     fl_error_name(c->node->input[k]));
	return b;
}

const fl_onnx_values *fl_onnx_input_known(fl_onnx_ctx *c, int k)
{
	fl_onnx_binding *b = fl_onnx_has_input(c, k)
		? fl_onnx_lookup(c, c->node->input[k]) : NULL;

	return b ? b->known : NULL;
}

/* Makes known value b a const tensor (once), named after the value. */
static int materialize(fl_onnx_ctx *c, fl_onnx_binding *b, fl_error *err)
{
	fl_tensor *t;
	int64_t n = b->known->n;

	if (n == 0) {
		fl_error_set(err, "%s: a tensor with no elements cannot be "
			     "used as data", fl_error_name(b->name));
		return -1;
	}
	b->tensor = fl_graph_add_tensor(c->g, b->name, &b->known->shape,
					FL_ROLE_CONST, err);
	if (b->tensor < 0)
		return -1;
	t = &c->g->tensors[b->tensor];
	t->n_data = n;
	if (fl_onnx_to_dtype(b->dtype) >= 0 &&
	    fl_dtype_is_int((fl_dtype)fl_onnx_to_dtype(b->dtype)) &&
	    b->known->i) {
		t->dtype = (fl_dtype)fl_onnx_to_dtype(b->dtype);
		t->ints = malloc((size_t)n * sizeof *t->ints);
		if (t->ints)
			memcpy(t->ints, b->known->i, (size_t)n * sizeof *t->ints);
		return t->ints ? b->tensor : (fl_error_set(err, "out of memory"), -1);
	}
	t->data = malloc((size_t)n * sizeof(float));
	if (!t->data) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	memcpy(t->data, b->known->f, (size_t)n * sizeof(float));
	if (fl_onnx_to_dtype(b->dtype) >= 0 &&
	    fl_dtype_is_half((fl_dtype)fl_onnx_to_dtype(b->dtype))) {
		t->dtype = (fl_dtype)fl_onnx_to_dtype(b->dtype);
		for (int64_t k = 0; k < n; k++)
			t->data[k] = fl_dtype_round(t->dtype, t->data[k]);
	}
	return b->tensor;
}

/* float and double (computed in float), float16 and bfloat16 (stored
 * in 16 bits, computed in float): values held as floats only. */
bool fl_onnx_dtype_is_float(int dtype)
{
	return dtype == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ||
	       dtype == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE ||
	       dtype == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ||
	       dtype == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
}

static int data_input(fl_onnx_ctx *c, int k, bool any_type, fl_error *err)
{
	fl_onnx_binding *b = fl_onnx_input(c, k, err);

	if (!b)
		return -1;
	/* the op's dtype inference decides whether it takes the type */
	if (!any_type && fl_onnx_to_dtype(b->dtype) < 0) {
		fl_error_set(err, "input %d: \"%s\" is a %s tensor on the data "
			     "path (fuselab's element types: float, float16, "
			     "bfloat16, bool and the 8-, 16-, 32- and 64-bit "
			     "integers)", k, fl_error_name(b->name),
			     fl_onnx_dtype_name(b->dtype));
		return -1;
	}
	if (b->tensor >= 0)
		return b->tensor;
	return materialize(c, b, err);
}

int fl_onnx_data(fl_onnx_ctx *c, int k, fl_error *err)
{
	return data_input(c, k, false, err);
}

int fl_onnx_data_any(fl_onnx_ctx *c, int k, fl_error *err)
{
	return data_input(c, k, true, err);
}

int fl_onnx_input_ints(fl_onnx_ctx *c, int k, int64_t *out, int max,
		       int *n, fl_error *err)
{
	fl_onnx_binding *b = fl_onnx_input(c, k, err);

	if (!b)
		return -1;
	if (!b->known) {
		/* a shape or an amount computed at run time: fuselab's ops
		 * are static, so the node cannot be modelled (unless the
		 * input it comes from is given: onnx_bind.c) */
		fl_onnx_want_known(c, k);
		snprintf(c->reason, sizeof c->reason, "input %d computed at "
			 "run time", k);
		c->cannot_model = true;
		fl_error_set(err, "input %d: \"%s\" must be known at import "
			     "(a constant, or computed from shapes only)", k,
			     fl_error_name(b->name));
		return -1;
	}
	if (!b->known->i) {
		fl_error_set(err, "input %d: \"%s\" must hold integers, not %s",
			     k, fl_error_name(b->name),
			     fl_onnx_dtype_name(b->dtype));
		return -1;
	}
	if (b->known->n > max) {
		fl_error_set(err, "input %d: more than %d values", k, max);
		return -1;
	}
	*n = (int)b->known->n;
	memcpy(out, b->known->i, (size_t)*n * sizeof *out);
	return 0;
}

int fl_onnx_input_dims(fl_onnx_ctx *c, int k, fl_shape *s, fl_error *err)
{
	fl_onnx_binding *b = fl_onnx_input(c, k, err);

	if (!b)
		return -1;
	if (b->known) {
		*s = b->known->shape;
		return 0;
	}
	*s = c->g->tensors[b->tensor].shape;
	return 0;
}

const Onnx__AttributeProto *fl_onnx_attr(const fl_onnx_ctx *c,
					 const char *name)
{
	for (size_t a = 0; a < c->node->n_attribute; a++) {
		const Onnx__AttributeProto *p = c->node->attribute[a];

		if (p->name && !strcmp(p->name, name))
			return p;
	}
	return NULL;
}

int64_t fl_onnx_attr_int(const fl_onnx_ctx *c, const char *name,
			 int64_t dflt)
{
	const Onnx__AttributeProto *a = fl_onnx_attr(c, name);

	return a && a->has_i ? a->i : dflt;
}

float fl_onnx_attr_float(const fl_onnx_ctx *c, const char *name, float dflt)
{
	const Onnx__AttributeProto *a = fl_onnx_attr(c, name);

	return a && a->has_f ? a->f : dflt;
}

int fl_onnx_attr_ints(const fl_onnx_ctx *c, const char *name, int64_t *out,
		      int max, int *n, fl_error *err)
{
	const Onnx__AttributeProto *a = fl_onnx_attr(c, name);

	*n = -1;
	if (!a)
		return 0;
	if (a->n_ints > (size_t)max) {
		fl_error_set(err, "attribute %s: more than %d values", name,
			     max);
		return -1;
	}
	*n = (int)a->n_ints;
	if (a->n_ints)
		memcpy(out, a->ints, a->n_ints * sizeof *out);
	return 0;
}

const char *fl_onnx_attr_string(const fl_onnx_ctx *c, const char *name,
				const char *dflt, char *buf, size_t n)
{
	const Onnx__AttributeProto *a = fl_onnx_attr(c, name);
	size_t len;

	if (!a || !a->has_s)
		return dflt;
	len = a->s.len < n - 1 ? a->s.len : n - 1;
	if (len)	/* an empty string's data may be NULL */
		memcpy(buf, a->s.data, len);
	buf[len] = '\0';
	return buf;
}

/* --- adding ops --- */

/* Whether value `name` is one the ONNX graph itself names: a name the
 * importer invents must leave those free, since their tensors may be
 * added later under that name.  Graph inputs, initializers and the
 * outputs of the nodes imported so far are bound; only the outputs of
 * the node being imported and of those after it need a look. */
static bool onnx_names_value(fl_onnx_ctx *c, const char *name)
{
	const Onnx__GraphProto *gp = c->graph;

	if (fl_onnx_lookup(c, name))
		return true;
	if (!gp)
		return false;
	for (size_t k = c->node_index > 0 ? (size_t)c->node_index : 0;
	     k < gp->n_node; k++)
		for (size_t j = 0; j < gp->node[k]->n_output; j++)
			if (!strcmp(gp->node[k]->output[j], name))
				return true;
	return false;
}

static bool name_taken(fl_onnx_ctx *c, const char *name, bool tensor)
{
	if (!tensor)
		return fl_graph_find_op(c->g, name) >= 0;
	return fl_graph_find_tensor(c->g, name) >= 0 ||
	       onnx_names_value(c, name);
}

void fl_onnx_unique_name(fl_onnx_ctx *c, char *buf, size_t n,
			 const char *base, bool tensor)
{
	/* base may be buf itself: copied first, cut so that a suffix always
	 * fits (a cut suffix could repeat a taken name forever) */
	char stem[256];

	snprintf(stem, sizeof stem, "%.*s", (int)(n - 24),
		 base && *base ? base : tensor ? "value" : "op");
	snprintf(buf, n, "%s", stem);
	for (int k = 2; name_taken(c, buf, tensor); k++)
		snprintf(buf, n, "%s_%d", stem, k);
}

static int new_output(fl_onnx_ctx *c, int out, fl_error *err)
{
	char base[300], name[300];
	int t;

	if (out >= 0) {
		if ((size_t)out >= c->node->n_output ||
		    !*c->node->output[out]) {
			fl_error_set(err, "output %d: missing", out);
			return -1;
		}
		t = fl_graph_add_tensor(c->g, c->node->output[out], NULL,
					FL_ROLE_TEMP, err);
		if (t < 0 || fl_onnx_bind_tensor(c, c->node->output[out], t,
						 FL_DT_FLOAT, err) < 0)
			return -1;
		return t;
	}
	snprintf(base, sizeof base, "%s/out", c->origin);
	fl_onnx_unique_name(c, name, sizeof name, base, true);
	return fl_graph_add_tensor(c->g, name, NULL, FL_ROLE_TEMP, err);
}

int fl_onnx_emit(fl_onnx_ctx *c, fl_op_kind kind, const int *in, int n_in,
		 const fl_attrs *attrs, int out, fl_error *err)
{
	char name[300];
	int t = new_output(c, out, err), op;

	if (t < 0)
		return -1;
	fl_onnx_unique_name(c, name, sizeof name, c->origin, false);
	op = fl_graph_add_op(c->g, name, kind, in, n_in, &t, 1, err);
	if (op < 0)
		return -1;
	c->n_emitted++;
	if ((attrs && fl_attrs_copy(&c->g->ops[op].attrs, attrs) < 0) ||
	    fl_op_set_provenance(&c->g->ops[op], c->origin, NULL, NULL) < 0 ||
	    fl_op_set_source_op(&c->g->ops[op], c->node->op_type) < 0) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	c->g->tensors[t].producer = op;
	if (fl_graph_infer_op(c->g, op, err) < 0) {
		fl_error_prefix(err, "%s", fl_op_kind_name(kind));
		return -1;
	}
	if (out >= 0)	/* the node's output has the type the op computes */
		fl_onnx_lookup(c, c->node->output[out])->dtype =
			fl_onnx_from_dtype(c->g->tensors[t].dtype);
	return t;
}

int fl_onnx_emit1(fl_onnx_ctx *c, fl_op_kind kind, int x, int out,
		  fl_error *err)
{
	return fl_onnx_emit(c, kind, &x, 1, NULL, out, err);
}

int fl_onnx_emit2(fl_onnx_ctx *c, fl_op_kind kind, int a, int b, int out,
		  fl_error *err)
{
	int in[2] = {a, b};

	return fl_onnx_emit(c, kind, in, 2, NULL, out, err);
}

int fl_onnx_oom(fl_error *err)
{
	fl_error_set(err, "out of memory");
	return -1;
}

int fl_onnx_emit_attrs(fl_onnx_ctx *c, fl_op_kind kind, const int *in, int n,
		       fl_attrs *a, int out, fl_error *err)
{
	int t = fl_onnx_emit(c, kind, in, n, a, out, err);

	fl_attrs_free(a);
	return t;
}

int fl_onnx_emit_ints(fl_onnx_ctx *c, fl_op_kind kind, int x, const char *key,
		      const int64_t *v, int n, int out, fl_error *err)
{
	fl_attrs a = {0};

	if (x < 0)
		return -1;
	if (fl_attrs_set_ints(&a, key, v, n) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, kind, &x, 1, &a, out, err);
}

int fl_onnx_reshape(fl_onnx_ctx *c, int x, const fl_shape *s, int out,
		    fl_error *err)
{
	return fl_onnx_emit_ints(c, FL_OP_RESHAPE, x, "shape", s->dim, s->rank,
				 out, err);
}

int fl_onnx_scalar(fl_onnx_ctx *c, float v, fl_error *err)
{
	char base[300], name[300];

	snprintf(base, sizeof base, "%s.const", c->origin);
	fl_onnx_unique_name(c, name, sizeof name, base, true);
	return fl_graph_add_scalar(c->g, name, v, err);
}

/* --- the model --- */

static bool domain_is_default(const char *d)
{
	return !d || !*d || !strcmp(d, "ai.onnx");
}

/* The version of the default domain (-1 when the model declares none:
 * then a node of the default domain is an error); other domains are not
 * checked here: a model may declare domains no node uses (Silero VAD
 * declares eight), and a node of a domain fuselab does not know becomes
 * opaque. */
static int read_opsets(fl_onnx_ctx *c, const Onnx__ModelProto *m,
		       fl_error *err)
{
	c->opset = -1;
	for (size_t k = 0; k < m->n_opset_import; k++) {
		const Onnx__OperatorSetIdProto *o = m->opset_import[k];

		if (domain_is_default(o->domain))
			c->opset = o->version;
	}
	if (c->opset != -1 && (c->opset < 1 || c->opset > 18)) {
		fl_error_set(err, "opset_import: version %lld of the default "
			     "domain; fuselab reads opsets 1 to 18",
			     (long long)c->opset);
		return -1;
	}
	return 0;
}

static char *dup_str(const char *s)
{
	return strdup(s ? s : "");
}

static int fill_info_header(fl_onnx_info *info, const Onnx__ModelProto *m)
{
	info->ir_version = m->ir_version;
	info->producer_name = dup_str(m->producer_name);
	info->producer_version = dup_str(m->producer_version);
	info->opsets = calloc(m->n_opset_import + 1, sizeof *info->opsets);
	if (!info->producer_name || !info->producer_version || !info->opsets)
		return -1;
	for (size_t k = 0; k < m->n_opset_import; k++) {
		info->opsets[k].domain = dup_str(m->opset_import[k]->domain);
		info->opsets[k].version = m->opset_import[k]->version;
		info->n_opsets++;
		if (!info->opsets[k].domain)
			return -1;
	}
	if (m->graph) {
		info->n_nodes = (int)m->graph->n_node;
		info->n_initializers = (int)m->graph->n_initializer;
	}
	return 0;
}

static int bind_initializers(fl_onnx_ctx *c, const Onnx__GraphProto *gp,
			     fl_error *err)
{
	for (size_t k = 0; k < gp->n_initializer; k++) {
		const Onnx__TensorProto *t = gp->initializer[k];
		fl_onnx_values *v = calloc(1, sizeof *v);
		const char *name = t->name ? t->name : "";

		if (!v) {
			fl_error_set(err, "out of memory");
			return -1;
		}
		if (!*name) {
			free(v);
			fl_error_set(err, "initializer[%zu]: no name", k);
			return -1;
		}
		if (fl_onnx_tensor_values(t, c->base_dir, v, err) < 0) {
			free(v);
			fl_error_prefix(err, "initializer %s",
					fl_error_name(name));
			return -1;
		}
		if (fl_onnx_bind_known(c, name, v, err) < 0) {
			fl_error_prefix(err, "initializer");
			return -1;
		}
	}
	return 0;
}

static const fl_onnx_input_shape *given_shape(const fl_onnx_import_opts *o,
					      const char *name)
{
	for (int k = 0; o && k < o->n_shapes; k++)
		if (!strcmp(o->shapes[k].name, name))
			return &o->shapes[k];
	return NULL;
}

/* The declared shape of a value (tensor type with a shape); *dynamic is
 * set when a dim has no value. */
int fl_onnx_declared_shape(const Onnx__ValueInfoProto *vi, fl_shape *s,
			   bool *dynamic, fl_error *err)
{
	const Onnx__TypeProto *tp = vi->type;
	const Onnx__TensorShapeProto *sp;

	*dynamic = false;
	if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
	    !tp->tensor_type) {
		fl_error_set(err, "not a tensor (sequences, maps and "
			     "optionals are not supported)");
		return -1;
	}
	sp = tp->tensor_type->shape;
	if (!sp) {
		*dynamic = true;
		return 0;
	}
	if (sp->n_dim > FL_MAX_RANK) {
		fl_error_set(err, "rank %zu is above fuselab's %d", sp->n_dim,
			     FL_MAX_RANK);
		return -1;
	}
	s->rank = (int)sp->n_dim;
	for (int d = 0; d < s->rank; d++) {
		const Onnx__TensorShapeProto__Dimension *dim = sp->dim[d];

		if (dim->value_case !=
		    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
			*dynamic = true;
			s->dim[d] = -1;
			continue;
		}
		if (dim->dim_value < 1) {
			fl_error_set(err, "dimension %d is %lld (fuselab needs "
				     "extents >= 1)", d,
				     (long long)dim->dim_value);
			return -1;
		}
		s->dim[d] = dim->dim_value;
	}
	if (!*dynamic && fl_shape_numel(s) < 0) {
		fl_error_set(err, "element count overflows 64 bits");
		return -1;
	}
	return 0;
}

/* An input's values are read as numbers (--inputs converts them; a
 * bfloat16 input's uint16 file, as ONNX's backend tests store one, as
 * its bit patterns); strings and complex numbers cannot be. */
static int input_type_supported(const Onnx__ValueInfoProto *vi,
				fl_error *err)
{
	int dtype = vi->type->tensor_type->elem_type;

	if (fl_onnx_dtype_supported(dtype))
		return 0;
	fl_error_set(err, "element type %s is not supported for an input",
		     fl_onnx_dtype_name(dtype));
	return -1;
}

/* The value --input-shape gives symbolic dim `param` through another
 * graph input declaring the same name (batch "N" on several inputs), or
 * -1. */
static int64_t given_param(const Onnx__GraphProto *gp,
			   const fl_onnx_import_opts *o, const char *param)
{
	for (size_t k = 0; k < gp->n_input; k++) {
		const Onnx__ValueInfoProto *vi = gp->input[k];
		const fl_onnx_input_shape *given =
			vi->name ? given_shape(o, vi->name) : NULL;
		const Onnx__TensorShapeProto *sp = given && vi->type &&
			vi->type->tensor_type ? vi->type->tensor_type->shape
					      : NULL;

		if (!sp || (int)sp->n_dim != given->shape.rank)
			continue;
		for (size_t d = 0; d < sp->n_dim; d++)
			if (sp->dim[d]->value_case ==
				    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
			    sp->dim[d]->dim_param &&
			    !strcmp(sp->dim[d]->dim_param, param))
				return given->shape.dim[d];
	}
	return -1;
}

/* Fills the symbolic dims of input vi (shape s, dynamic) that other
 * inputs' --input-shape give; true when none is left. */
static bool resolve_by_name(const Onnx__GraphProto *gp,
			    const fl_onnx_import_opts *o,
			    const Onnx__ValueInfoProto *vi, fl_shape *s)
{
	const Onnx__TensorShapeProto *sp = vi->type->tensor_type->shape;

	if (!sp)
		return false;
	for (int d = 0; d < s->rank; d++) {
		const Onnx__TensorShapeProto__Dimension *dim = sp->dim[d];

		if (s->dim[d] >= 1)
			continue;
		if (dim->value_case !=
			    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ||
		    !dim->dim_param ||
		    (s->dim[d] = given_param(gp, o, dim->dim_param)) < 1)
			return false;
	}
	return true;
}

/* Graph input vi; a given value (or NULL) sets its dynamic dims when
 * --input-shape does not. */
static int add_input(fl_onnx_ctx *c, const Onnx__ValueInfoProto *vi,
		     const fl_onnx_import_opts *o,
		     const fl_onnx_values *given_value, fl_error *err)
{
	const fl_onnx_input_shape *given = given_shape(o, vi->name);
	fl_shape s = {0};
	bool dynamic;
	int t;

	if (fl_onnx_declared_shape(vi, &s, &dynamic, err) < 0 ||
	    input_type_supported(vi, err) < 0)
		return -1;
	if (given) {
		if (!(dynamic && s.rank == 0) && s.rank != given->shape.rank) {
			fl_error_set(err, "--input-shape gives rank %d, the "
				     "model declares rank %d",
				     given->shape.rank, s.rank);
			return -1;
		}
		s = given->shape;
	} else if (dynamic && given_value) {
		s = given_value->shape;
	} else if (dynamic && !resolve_by_name(c->graph, o, vi, &s)) {
		fl_error_set(err, "dynamic dimensions: give them with "
			     "--input-shape %s=d1,d2,...",
			     fl_error_name(vi->name));
		return -1;
	}
	t = fl_graph_add_tensor(c->g, vi->name, &s, FL_ROLE_INPUT, err);
	if (t < 0)
		return -1;
	c->g->tensors[t].declared = true;
	/* fuselab's types as they are; the others read as f32 */
	if (fl_onnx_to_dtype(vi->type->tensor_type->elem_type) >= 0)
		c->g->tensors[t].dtype = (fl_dtype)fl_onnx_to_dtype(
			vi->type->tensor_type->elem_type);
	return fl_onnx_bind_tensor(c, vi->name, t,
				   vi->type->tensor_type->elem_type, err);
}

static int add_inputs(fl_onnx_ctx *c, const Onnx__GraphProto *gp,
		      const fl_onnx_import_opts *o, fl_error *err)
{
	for (int k = 0; o && k < o->n_shapes; k++) {
		bool found = false;

		for (size_t i = 0; i < gp->n_input && !found; i++)
			found = gp->input[i]->name &&
				!strcmp(gp->input[i]->name, o->shapes[k].name);
		if (!found) {
			fl_error_set(err, "--input-shape %s: the model has no "
				     "input of that name",
				     fl_error_name(o->shapes[k].name));
			return -1;
		}
	}
	for (size_t k = 0; k < gp->n_input; k++) {
		const Onnx__ValueInfoProto *vi = gp->input[k];

		if (!vi->name || !*vi->name) {
			fl_error_set(err, "graph input %zu: no name", k);
			return -1;
		}
		if (fl_onnx_lookup(c, vi->name))
			continue;	/* an initializer: a constant */
		if (add_input(c, vi, o, c->given ? c->given[k] : NULL,
			      err) < 0) {
			fl_error_prefix(err, "input %s",
					fl_error_name(vi->name));
			return -1;
		}
	}
	return 0;
}

/* --- info --- */

static fl_onnx_op_count *count_of(fl_onnx_info *info, const char *op_type)
{
	fl_onnx_op_count *n;

	for (int k = 0; k < info->n_types; k++)
		if (!strcmp(info->types[k].op_type, op_type))
			return &info->types[k];
	n = realloc(info->types, (size_t)(info->n_types + 1) * sizeof *n);
	if (!n)
		return NULL;
	info->types = n;
	n = &info->types[info->n_types];
	memset(n, 0, sizeof *n);
	n->op_type = strdup(op_type);
	if (!n->op_type)
		return NULL;
	info->n_types++;
	return n;
}

/* Adds why a node of n's type is opaque to n's reasons, "; " between
 * different ones. */
static int add_reason(fl_onnx_op_count *n, const char *reason)
{
	size_t len = n->reason ? strlen(n->reason) : 0;
	char *r;

	if (n->reason && strstr(n->reason, reason))
		return 0;
	r = realloc(n->reason, len + strlen(reason) + 3);
	if (!r)
		return -1;
	if (len)
		strcpy(r + len, "; ");
	strcpy(r + (len ? len + 2 : 0), reason);
	n->reason = r;
	return 0;
}

/* How the current node was imported: folded, custom, or into the ops
 * from first on. */
static int record(fl_onnx_ctx *c, int first, bool folded, fl_error *err)
{
	fl_onnx_op_count *n;
	bool made_custom = false;

	if (!c->info)
		return 0;
	n = count_of(c->info, c->node->op_type);
	if (!n) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	n->nodes++;
	n->folded += folded;
	for (int k = first; k < c->g->n_ops; k++) {
		n->uses[c->g->ops[k].kind] = true;
		made_custom |= c->g->ops[k].kind == FL_OP_CUSTOM;
		n->custom += c->g->ops[k].kind == FL_OP_CUSTOM;
	}
	if (made_custom && *c->reason && add_reason(n, c->reason) < 0) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	return 0;
}

/* --- nodes --- */

/* The node's shape as a value declared in the model (value_info or a
 * graph output), for checks; NULL when none declares it. */
const Onnx__ValueInfoProto *fl_onnx_declared_value(const Onnx__GraphProto *gp,
						   const char *name)
{
	for (size_t k = 0; k < gp->n_value_info; k++)
		if (gp->value_info[k]->name &&
		    !strcmp(gp->value_info[k]->name, name))
			return gp->value_info[k];
	for (size_t k = 0; k < gp->n_output; k++)
		if (gp->output[k]->name && !strcmp(gp->output[k]->name, name))
			return gp->output[k];
	return NULL;
}

/* A declared shape that disagrees with the inferred one is an error;
 * dims without a value agree with anything. */
static int check_declared(const fl_onnx_ctx *c, const char *name,
			  const fl_shape *s, fl_error *err)
{
	const Onnx__ValueInfoProto *vi = fl_onnx_declared_value(c->graph, name);
	fl_shape d;
	bool dynamic;
	char a[128], b[128];
	fl_error ignore;

	if (!vi || fl_onnx_declared_shape(vi, &d, &dynamic, &ignore) < 0 ||
	    (dynamic && !vi->type->tensor_type->shape))
		return 0;
	for (int k = 0; k < d.rank && k < s->rank; k++)
		if (d.dim[k] < 0)
			d.dim[k] = s->dim[k];
	if (d.rank == s->rank && fl_shape_equal(&d, s))
		return 0;
	fl_error_set(err, "output %s: the model declares shape %s, the "
		     "inputs give %s", fl_error_name(name),
		     fl_shape_format(&d, a, sizeof a),
		     fl_shape_format(s, b, sizeof b));
	return -1;
}

/* The node's outputs against the shapes the model declares for them
 * (value_info, graph outputs): a disagreement is an inconsistent model
 * or a mapping that got the op wrong, either way not to go on with. */
static int check_outputs(fl_onnx_ctx *c, fl_error *err)
{
	for (size_t k = 0; k < c->node->n_output; k++) {
		fl_onnx_binding *b = fl_onnx_lookup(c, c->node->output[k]);
		const fl_shape *s;

		if (!b || !*c->node->output[k])
			continue;
		s = b->known ? &b->known->shape
			     : &c->g->tensors[b->tensor].shape;
		if (check_declared(c, b->name, s, err) < 0)
			return -1;
	}
	return 0;
}

static void set_origin(fl_onnx_ctx *c, int index)
{
	const Onnx__NodeProto *n = c->node;

	if (n->name && *n->name)
		snprintf(c->origin, sizeof c->origin, "%s", n->name);
	else
		snprintf(c->origin, sizeof c->origin, "%s_%d",
			 n->op_type ? n->op_type : "node", index);
}

int fl_onnx_cannot_model(fl_onnx_ctx *c, fl_error *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->reason, sizeof c->reason, fmt, ap);
	va_end(ap);
	c->cannot_model = true;
	fl_error_set(err, "%s is not supported", c->reason);
	return -1;
}

/* The counts of graph and bindings before a node's mapping runs:
 * everything it adds is appended after them, so undoing it (the node
 * then kept opaque) is dropping the tail. */
typedef struct snapshot {
	int n_bind, n_tensors, n_ops;
} snapshot;

/* Output k >= 1 of the node that something reads and the mapping left
 * unbound (it computes output 0 only), or -1. */
static int unbound_read_output(fl_onnx_ctx *c)
{
	for (size_t k = 1; k < c->node->n_output; k++)
		if (fl_onnx_output_read(c, c->node->output[k]) &&
		    !fl_onnx_lookup(c, c->node->output[k]))
			return (int)k;
	return -1;
}

static snapshot take_snapshot(const fl_onnx_ctx *c)
{
	snapshot s = {c->n_bind, c->g->n_tensors, c->g->n_ops};

	return s;
}

/* Back to snapshot s: the ops and tensors added since dropped, the
 * bindings made since dropped, and known values made const tensors
 * since (materialised) known only again. */
static int restore_snapshot(fl_onnx_ctx *c, const snapshot *s, fl_error *err)
{
	for (int k = s->n_bind; k < c->n_bind; k++) {
		free(c->bind[k].name);
		fl_onnx_values_delete(c->bind[k].known);
	}
	c->n_bind = s->n_bind;
	for (int k = 0; k < c->n_bind; k++)
		if (c->bind[k].tensor >= s->n_tensors)
			c->bind[k].tensor = -1;
	fl_graph_truncate(c->g, s->n_tensors, s->n_ops);
	if (rehash(c) < 0) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	return 0;
}

/* Runs map (on the node's float version when it computes on float16 or
 * bfloat16: onnx_half.c); when it finds a form it cannot model (fl_onnx_cannot_model)
 * or leaves a later output that something reads unbound, undoes what
 * it added and makes the node opaque (all its outputs). */
static int map_or_opaque(fl_onnx_ctx *c, fl_onnx_map_fn map, fl_error *err)
{
	snapshot s = take_snapshot(c);
	int half = fl_onnx_half_input(c), k = -1;
	int rc = half ? fl_onnx_map_in_f32(c, map, half, err) : map(c, err);

	if (rc == 0 && (k = unbound_read_output(c)) < 0)
		return 0;
	if (rc < 0 && !c->cannot_model)
		return -1;
	if (restore_snapshot(c, &s, err) < 0)
		return -1;
	if (k > 0)
		snprintf(c->reason, sizeof c->reason, "output %d is read", k);
	return fl_onnx_import_custom(c, err);
}

/* Maps the node with its domain's mapping (none: opaque); a mapping
 * that finds a form it cannot model, or that does not compute a later
 * output something reads, makes the node opaque instead. */
static int map_node(fl_onnx_ctx *c, fl_error *err)
{
	const char *domain = c->node->domain;
	fl_onnx_map_fn map = NULL;

	if (domain_is_default(domain) && !strcmp(c->node->op_type, "If"))
		map = fl_onnx_import_if;
	else if (domain_is_default(domain))
		map = fl_onnx_mapping(c->node->op_type);
	else if (!strcmp(domain, "com.microsoft"))
		map = fl_onnx_msft_mapping(c->node->op_type);
	else
		snprintf(c->reason, sizeof c->reason, "domain %s",
			 fl_error_name(domain));
	if (!map)
		return fl_onnx_import_custom(c, err);
	return map_or_opaque(c, map, err);
}

static int import_node(fl_onnx_ctx *c, fl_error *err)
{
	int rc = 0;

	c->first_op = c->g->n_ops;
	c->cannot_model = false;
	c->reason[0] = '\0';
	if (!c->node->op_type || !*c->node->op_type) {
		fl_error_set(err, "no op_type");
		return -1;
	}
	if (domain_is_default(c->node->domain) && c->opset < 0) {
		fl_error_set(err, "opset_import: the model declares no "
			     "version of the default domain");
		return -1;
	}
	if (domain_is_default(c->node->domain))
		rc = fl_onnx_fold_node(c, err);
	if (rc < 0 || (rc == 0 && map_node(c, err) < 0))
		return -1;
	if (check_outputs(c, err) < 0)
		return -1;
	return record(c, c->first_op, rc == 1, err);
}

static int import_nodes(fl_onnx_ctx *c, const Onnx__GraphProto *gp,
			fl_error *err)
{
	for (size_t k = 0; k < gp->n_node; k++) {
		c->node = gp->node[k];
		c->node_index = (int)k;
		c->n_emitted = 0;
		set_origin(c, (int)k);
		if (import_node(c, err) < 0) {
			fl_error_prefix(err, "node %s (%s)",
					fl_error_name(c->origin),
					fl_error_name(c->node->op_type ?
						      c->node->op_type : "?"));
			return -1;
		}
	}
	return 0;
}

/* The state of the node being imported, kept across a sub-graph. */
typedef struct node_state {
	const Onnx__NodeProto *node;
	const Onnx__GraphProto *graph;
	int node_index, n_emitted, first_op;
	bool cannot_model;
	char origin[256], reason[96];
} node_state;

int fl_onnx_import_subgraph(fl_onnx_ctx *c, const Onnx__GraphProto *gp,
			    fl_error *err)
{
	node_state s = {c->node, c->graph, c->node_index, c->n_emitted,
			c->first_op, c->cannot_model, "", ""};
	int rc;

	if (c->depth >= 16) {
		fl_error_set(err, "sub-graphs nested more than 16 deep");
		return -1;
	}
	memcpy(s.origin, c->origin, sizeof s.origin);
	memcpy(s.reason, c->reason, sizeof s.reason);
	c->graph = gp;
	c->depth++;
	rc = bind_initializers(c, gp, err) < 0 || import_nodes(c, gp, err) < 0
		? -1 : 0;
	c->depth--;
	c->node = s.node;
	c->graph = s.graph;
	c->node_index = s.node_index;
	c->n_emitted = s.n_emitted;
	c->first_op = s.first_op;
	c->cannot_model = s.cannot_model;
	memcpy(c->origin, s.origin, sizeof c->origin);
	memcpy(c->reason, s.reason, sizeof c->reason);
	return rc;
}

/* --- outputs --- */

/* A graph output that no op of the graph writes (an input, a constant):
 * a copy op gives it one. */
static int copy_to_output(fl_onnx_ctx *c, fl_onnx_binding *b, fl_error *err)
{
	char base[300], name[300];
	int x = b->tensor >= 0 ? b->tensor : materialize(c, b, err), t, op;
	fl_shape shape;

	if (x < 0)
		return -1;
	/* a copy: adding the tensor may move the tensor array */
	shape = c->g->tensors[x].shape;
	snprintf(base, sizeof base, "%s.out", b->name);
	fl_onnx_unique_name(c, name, sizeof name, base, true);
	t = fl_graph_add_tensor(c->g, name, &shape, FL_ROLE_OUTPUT, err);
	if (t < 0)
		return -1;
	fl_onnx_unique_name(c, name, sizeof name, base, false);
	op = fl_graph_add_op(c->g, name, FL_OP_COPY, &x, 1, &t, 1, err);
	return op < 0 ? -1 : 0;
}

/* Why graph output `name` has no value: a node's later output that
 * its mapping does not compute (LayerNormalization's Mean, Dropout's
 * mask, ...), or nothing at all. */
static void no_value(const Onnx__GraphProto *gp, const char *name,
		     fl_error *err)
{
	for (size_t i = 0; i < gp->n_node; i++) {
		const Onnx__NodeProto *n = gp->node[i];

		for (size_t j = 1; j < n->n_output; j++)
			if (n->output[j] && !strcmp(n->output[j], name)) {
				char who[160];

				if (n->name && *n->name)
					snprintf(who, sizeof who, "node %s (%s)",
						 fl_error_name(n->name),
						 fl_error_name(n->op_type));
				else
					snprintf(who, sizeof who, "a %s node",
						 fl_error_name(n->op_type));
				fl_error_set(err, "output %zu of %s is not "
					     "supported (fuselab computes its "
					     "first output only)", j, who);
				return;
			}
	}
	fl_error_set(err, "not produced by any node");
}

static int mark_output(fl_onnx_ctx *c, const Onnx__GraphProto *gp,
		       const char *name, fl_error *err)
{
	fl_onnx_binding *b = fl_onnx_lookup(c, name);
	fl_tensor *t;

	if (!b) {
		no_value(gp, name, err);
		return -1;
	}
	if (b->tensor < 0 || c->g->tensors[b->tensor].role != FL_ROLE_TEMP)
		return copy_to_output(c, b, err);
	t = &c->g->tensors[b->tensor];
	/* an opaque op's integer result is never computed: no values to
	 * misread as floats */
	if (!fl_onnx_dtype_is_float(b->dtype) &&
	    fl_onnx_to_dtype(b->dtype) != (int)t->dtype &&
	    fl_op_computable(&c->g->ops[t->producer])) {
		fl_error_set(err, "a %s output is not supported",
			     fl_onnx_dtype_name(b->dtype));
		return -1;
	}
	t->role = FL_ROLE_OUTPUT;
	return check_declared(c, name, &t->shape, err);
}

static int mark_outputs(fl_onnx_ctx *c, const Onnx__GraphProto *gp,
			fl_error *err)
{
	if (!gp->n_output) {
		fl_error_set(err, "graph: no outputs");
		return -1;
	}
	for (size_t k = 0; k < gp->n_output; k++) {
		const char *name = gp->output[k]->name ? gp->output[k]->name
						       : "";

		for (size_t j = 0; j < k; j++)
			if (gp->output[j]->name &&
			    !strcmp(gp->output[j]->name, name)) {
				fl_error_set(err, "output %s: listed twice",
					     fl_error_name(name));
				return -1;
			}
		if (mark_output(c, gp, name, err) < 0) {
			fl_error_prefix(err, "output %s", fl_error_name(name));
			return -1;
		}
	}
	return 0;
}

/* --- entry points --- */

static void ctx_free(fl_onnx_ctx *c)
{
	for (int k = 0; k < c->n_bind; k++) {
		free(c->bind[k].name);
		fl_onnx_values_delete(c->bind[k].known);
	}
	free(c->bind);
	free(c->hash);
	for (int k = 0; k < c->n_wanted; k++)
		free(c->wanted[k]);
	free(c->wanted);
}

static int import_model(fl_onnx_ctx *c, const Onnx__ModelProto *m,
			const fl_onnx_import_opts *o, fl_error *err)
{
	const Onnx__GraphProto *gp = m->graph;

	if (!gp) {
		fl_error_set(err, "the model has no graph (is this an ONNX "
			     "model?)");
		return -1;
	}
	c->graph = gp;
	c->main_graph = gp;
	if (read_opsets(c, m, err) < 0 || bind_initializers(c, gp, err) < 0 ||
	    fl_onnx_bind_given(c, err) < 0 || add_inputs(c, gp, o, err) < 0 ||
	    import_nodes(c, gp, err) < 0 ||
	    mark_outputs(c, gp, err) < 0)
		return -1;
	if (fl_graph_validate(c->g, err) < 0)
		return -1;
	return 0;
}

static const char *graph_name(const Onnx__ModelProto *m, const char *source)
{
	if (m->graph && m->graph->name && *m->graph->name)
		return m->graph->name;
	return source;
}

/* One import of m, the inputs marked in bound taken as their given
 * values.  When ops wanted the value of given inputs not bound yet,
 * marks them, sets *again and returns NULL: the caller imports again. */
static fl_graph *import_pass(const Onnx__ModelProto *m, const char *source,
			     const char *base_dir,
			     const fl_onnx_import_opts *opts,
			     const fl_onnx_values **given, bool *bound,
			     fl_onnx_info *info, bool *again, fl_error *err)
{
	fl_onnx_ctx c = {0};
	int rc = -1;

	fl_onnx_info_free(info);
	c.base_dir = base_dir;
	c.info = info;
	c.given = given;
	c.bound = bound;
	c.g = fl_graph_new(graph_name(m, source));
	if (!c.g || (info && fill_info_header(info, m) < 0))
		fl_error_set(err, "out of memory");
	else
		rc = import_model(&c, m, opts, err);
	/* a failed import may fail for want of a bound value too */
	*again = c.main_graph && fl_onnx_bind_wanted(&c, bound) > 0;
	if (rc < 0 || *again) {
		fl_graph_free(c.g);
		c.g = NULL;
	}
	ctx_free(&c);
	return c.g;
}

fl_graph *fl_onnx_load_bytes(const uint8_t *data, size_t len,
			     const char *source, const char *base_dir,
			     const fl_onnx_import_opts *opts,
			     fl_onnx_info *info, fl_error *err)
{
	Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, data);
	const fl_onnx_values **given = NULL;
	bool *bound = NULL, again = true;
	fl_graph *g = NULL;

	if (info)
		memset(info, 0, sizeof *info);
	if (!m) {
		fl_error_set(err, "%s: not an ONNX model: the protobuf is "
			     "truncated or corrupt", source);
		return NULL;
	}
	if (m->graph && fl_onnx_given_resolve(m->graph, opts, &given, err) < 0)
		goto out;
	if (given && !(bound = calloc(m->graph->n_input, sizeof *bound))) {
		fl_error_set(err, "out of memory");
		goto out;
	}
	/* each pass binds one more given input at least, so this ends */
	while (again)
		g = import_pass(m, source, base_dir, opts, given, bound, info,
				&again, err);
	if (g && info && fl_onnx_note_bound(info, m->graph, bound) < 0) {
		fl_error_set(err, "out of memory");
		fl_graph_free(g);
		g = NULL;
	}
out:
	if (!g)
		fl_error_prefix(err, "%s", source);
	free(given);
	free(bound);
	onnx__model_proto__free_unpacked(m, NULL);
	return g;
}

fl_graph *fl_onnx_load_file(const char *path, const fl_onnx_import_opts *opts,
			    fl_onnx_info *info, fl_error *err)
{
	size_t len;
	char *bytes = fl_read_file(path, FL_ONNX_MAX_FILE_BYTES,
				   "an ONNX model", &len, err);
	char *dir = strdup(path), *slash;
	fl_graph *g = NULL;

	if (info)
		memset(info, 0, sizeof *info);
	if (bytes && dir) {
		slash = strrchr(dir, '/');
		if (slash)
			slash[1] = '\0';
		else
			strcpy(dir, ".");
		g = fl_onnx_load_bytes((const uint8_t *)bytes, len, path, dir,
				       opts, info, err);
	} else if (bytes) {
		fl_error_set(err, "%s: out of memory", path);
	}
	free(dir);
	free(bytes);
	return g;
}

void fl_onnx_info_free(fl_onnx_info *info)
{
	if (!info)
		return;
	free(info->producer_name);
	free(info->producer_version);
	for (int k = 0; k < info->n_opsets; k++)
		free(info->opsets[k].domain);
	free(info->opsets);
	for (int k = 0; k < info->n_types; k++) {
		free(info->types[k].op_type);
		free(info->types[k].reason);
	}
	free(info->types);
	for (int k = 0; k < info->n_bound; k++)
		free(info->bound[k].name);
	free(info->bound);
	memset(info, 0, sizeof *info);
}

int fl_onnx_info_custom_count(const fl_onnx_info *info)
{
	int n = 0;

	for (int k = 0; info && k < info->n_types; k++)
		n += info->types[k].custom;
	return n;
}

bool fl_onnx_is_model_path(const char *path)
{
	size_t n = path ? strlen(path) : 0;

	return n >= 5 && !strcasecmp(path + n - 5, ".onnx");
}
