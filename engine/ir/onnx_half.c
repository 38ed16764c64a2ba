/* ONNX import of half-precision nodes: float16 and bfloat16 computed in
 * float (onnx_import_impl.h, docs/types.md).
 *
 * Contract: fl_onnx_map_in_f32 maps the node being imported, one with a
 * float16 or bfloat16 input, as its float version: every such input is
 * cast up to f32 (exact) under a fresh name -- a value known at import
 * stays known, as floats -- the node's own mapping runs on a copy of the
 * node that reads those names and writes fresh ones, and then each float
 * result is cast back to the 16-bit type under the node's own output
 * name (rounding to nearest even: the store of a half-precision result),
 * unless the model declares that output float; an integer or bool
 * result (ArgMax's, MaxPool's indices) is copied as it is.  So every
 * mapping works on half-precision models unchanged, and what the graph
 * computes on is f32 -- the op library's dtype rules refuse f16 and
 * bf16 to every op that computes (ops_dtype.c).  Errors are the
 * mapping's; a mapping that cannot model the node leaves it to the
 * caller, which undoes what was added here too (it is all after the
 * snapshot) and makes the node opaque.
 *
 * Cast and CastLike convert half-precision values themselves, and the
 * ops that only move values (Identity, Reshape, Transpose, Squeeze,
 * Unsqueeze, Flatten, Concat) keep them bit for bit: those nodes are
 * mapped as they are (fl_onnx_half_native). */
#include "onnx_import_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_half(int onnx_dtype)
{
	return onnx_dtype == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ||
	       onnx_dtype == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
}

static bool native(const char *op_type)
{
	static const char *const names[] = {
		"Cast", "CastLike", "Identity", "Reshape", "Transpose",
		"Squeeze", "Unsqueeze", "Flatten", "Concat",
	};

	for (size_t k = 0; k < sizeof names / sizeof *names; k++)
		if (!strcmp(op_type, names[k]))
			return true;
	return false;
}

int fl_onnx_half_input(fl_onnx_ctx *c)
{
	const Onnx__NodeProto *n = c->node;

	if (native(n->op_type))
		return 0;
	for (size_t k = 0; k < n->n_input; k++) {
		fl_onnx_binding *b = *n->input[k]
			? fl_onnx_lookup(c, n->input[k]) : NULL;

		if (b && is_half(b->dtype))
			return b->dtype;
	}
	return 0;
}

static char *fresh_name(fl_onnx_ctx *c, const char *stem)
{
	char base[300], name[300];

	snprintf(base, sizeof base, "%s.f32", stem);
	fl_onnx_unique_name(c, name, sizeof name, base, true);
	return strdup(name);
}

/* Binds `name` to input b's values as f32: a known value's floats (a
 * copy), or a cast of its tensor. */
static int bind_up(fl_onnx_ctx *c, const fl_onnx_binding *b,
		   const char *name, fl_error *err)
{
	fl_attrs a = {0};
	int t, x = b->tensor;	/* b moves when a binding is added */

	if (b->known) {
		fl_onnx_values *v = fl_onnx_values_new(&b->known->shape,
						       FL_DT_FLOAT, err);

		if (!v)
			return -1;
		memcpy(v->f, b->known->f, (size_t)(v->n ? v->n : 1) *
		       sizeof *v->f);
		if (fl_onnx_bind_known(c, name, v, err) < 0) {
			fl_onnx_values_delete(v);
			return -1;
		}
		return 0;
	}
	if (fl_attrs_set_string(&a, "dtype", "f32") < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	t = fl_onnx_emit_attrs(c, FL_OP_CAST, &x, 1, &a, -1, err);
	return t < 0 ? -1 : fl_onnx_bind_tensor(c, name, t, FL_DT_FLOAT, err);
}

/* The type output k of node n gets back: the model's declaration when it
 * declares a float one, else the half type of the inputs. */
static int result_type(const fl_onnx_ctx *c, const char *name, int half)
{
	const Onnx__ValueInfoProto *vi = fl_onnx_declared_value(c->graph, name);
	int d = vi && vi->type && vi->type->tensor_type
		? vi->type->tensor_type->elem_type : 0;

	return fl_onnx_dtype_is_float(d) ? d : half;
}

/* Output k of the original node from the float mapping's result bound to
 * `name`: cast back to the half type, copied (integers, bool, a float
 * the model declares), or -- a value known at import -- rounded. */
static int bind_back(fl_onnx_ctx *c, int k, const char *name, int half,
		     fl_error *err)
{
	fl_onnx_binding *b = fl_onnx_lookup(c, name);
	const char *out = c->node->output[k];
	int to = result_type(c, out, half), dt = fl_onnx_to_dtype(to), x;
	fl_attrs a = {0};

	if (!b)
		return 0;	/* not computed: the caller sees whether read */
	x = b->tensor;		/* b moves when a binding is added */
	if (b->known) {
		fl_onnx_values *v = fl_onnx_values_new(&b->known->shape,
			b->dtype == FL_DT_FLOAT ? to : b->dtype, err);

		if (!v)
			return -1;
		memcpy(v->f, b->known->f, (size_t)(v->n ? v->n : 1) *
		       sizeof *v->f);
		if (v->i)
			memcpy(v->i, b->known->i, (size_t)(v->n ? v->n : 1) *
			       sizeof *v->i);
		fl_onnx_values_round(v);
		if (fl_onnx_bind_known(c, out, v, err) < 0) {
			fl_onnx_values_delete(v);
			return -1;
		}
		return 0;
	}
	if (b->dtype != FL_DT_FLOAT || dt < 0 || to == FL_DT_FLOAT)
		return fl_onnx_emit1(c, FL_OP_COPY, x, k, err) < 0
			? -1 : 0;
	if (fl_attrs_set_string(&a, "dtype", fl_dtype_name((fl_dtype)dt)) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_CAST, &x, 1, &a, k, err) < 0
		? -1 : 0;
}

/* Frees the fresh names among names (an input read twice shares one). */
static void free_names(char **names, size_t n, char *const *orig)
{
	for (size_t k = 0; names && k < n; k++) {
		bool seen = names[k] == orig[k];

		for (size_t j = 0; j < k && !seen; j++)
			seen = names[j] == names[k];
		if (!seen)
			free(names[k]);
	}
	free(names);
}

/* The node's inputs renamed: a half one to a fresh name bound to its f32
 * values (once per distinct name), the others as they are. */
static int rename_inputs(fl_onnx_ctx *c, char **in, fl_error *err)
{
	const Onnx__NodeProto *n = c->node;

	for (size_t k = 0; k < n->n_input; k++) {
		fl_onnx_binding *b = *n->input[k]
			? fl_onnx_lookup(c, n->input[k]) : NULL;

		in[k] = n->input[k];
		if (!b || !is_half(b->dtype))
			continue;
		for (size_t j = 0; j < k; j++)
			if (!strcmp(n->input[j], n->input[k]))
				in[k] = in[j];
		if (in[k] != n->input[k])
			continue;
		in[k] = fresh_name(c, n->input[k]);
		if (!in[k]) {
			in[k] = n->input[k];
			return fl_onnx_oom(err);
		}
		/* the lookup again: binding may have moved the array */
		if (bind_up(c, fl_onnx_lookup(c, n->input[k]), in[k], err) < 0)
			return -1;
	}
	return 0;
}

int fl_onnx_map_in_f32(fl_onnx_ctx *c, fl_onnx_map_fn map, int half,
		       fl_error *err)
{
	const Onnx__NodeProto *orig = c->node;
	Onnx__NodeProto node = *orig;
	char **in = calloc(orig->n_input + 1, sizeof *in);
	char **out = calloc(orig->n_output + 1, sizeof *out);
	int rc = -1;

	if (!in || !out) {
		free(in);
		free(out);
		return fl_onnx_oom(err);
	}
	if (rename_inputs(c, in, err) < 0)
		goto done;
	for (size_t k = 0; k < orig->n_output; k++) {
		out[k] = *orig->output[k] ? fresh_name(c, orig->output[k])
					  : orig->output[k];
		if (!out[k]) {
			out[k] = orig->output[k];
			fl_onnx_oom(err);
			goto done;
		}
	}
	node.input = in;
	node.output = out;
	c->node = &node;
	c->unwrapped = orig;
	rc = map(c, err);
	c->node = orig;
	c->unwrapped = NULL;
	for (size_t k = 0; rc == 0 && k < orig->n_output; k++)
		if (*orig->output[k])
			rc = bind_back(c, (int)k, out[k], half, err);
done:
	free_names(in, orig->n_input, orig->input);
	free_names(out, orig->n_output, orig->output);
	return rc;
}
