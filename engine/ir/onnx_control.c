/* ONNX import of control flow: If (onnx_import_impl.h).
 *
 * Contract: an If whose condition is known at import (a constant, or
 * folded from shapes: exported models test a shape this way) is inlined:
 * the chosen branch's initializers are bound and its nodes imported in
 * place, as if they stood in the outer graph (outer names stay visible,
 * ONNX names being unique across scopes), and each If output k becomes
 * a copy of the branch's output k (a known value stays known).  The
 * ops of the branch count for their own op types in the import summary,
 * the copies for If.  An If whose condition is computed at run time
 * cannot be modelled and becomes one opaque `custom` op per used output
 * (onnx_custom.c), reading every outer value its branches name.
 * Errors name the problem only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import_impl.h"

/* The branch attribute `name` ("then_branch", "else_branch"), or NULL. */
static const Onnx__GraphProto *branch(const fl_onnx_ctx *c, const char *name)
{
	const Onnx__AttributeProto *a = fl_onnx_attr(c, name);

	return a ? a->g : NULL;
}

/* A copy of known value v (the branch's output, bound again under the
 * If's output name). */
static fl_onnx_values *copy_values(const fl_onnx_values *v, fl_error *err)
{
	fl_onnx_values *n = fl_onnx_values_new(&v->shape, v->dtype, err);

	if (!n)
		return NULL;
	memcpy(n->f, v->f, (size_t)v->n * sizeof *v->f);
	if (v->i && n->i)
		memcpy(n->i, v->i, (size_t)v->n * sizeof *v->i);
	return n;
}

/* If output k takes the value of branch output `from`. */
static int bind_output(fl_onnx_ctx *c, int k, const char *from,
		       fl_error *err)
{
	const char *to = c->node->output[k];
	fl_onnx_binding *b = from ? fl_onnx_lookup(c, from) : NULL;
	fl_onnx_values *v;
	fl_onnx_binding *bound;
	int dtype;

	if (!to || !*to)
		return 0;
	if (!b) {
		fl_error_set(err, "branch output %d: \"%s\" has no value", k,
			     fl_error_name(from ? from : ""));
		return -1;
	}
	if (b->known) {
		v = copy_values(b->known, err);
		return v ? fl_onnx_bind_known(c, to, v, err) : -1;
	}
	/* b may move as the copy adds a binding */
	dtype = b->dtype;
	if (fl_onnx_emit1(c, FL_OP_COPY, b->tensor, k, err) < 0)
		return -1;
	bound = fl_onnx_lookup(c, to);
	bound->dtype = dtype;
	return 0;
}

static int inline_branch(fl_onnx_ctx *c, const Onnx__GraphProto *gp,
			 fl_error *err)
{
	if (gp->n_output < c->node->n_output) {
		fl_error_set(err, "the branch has %zu outputs, the If %zu",
			     gp->n_output, c->node->n_output);
		return -1;
	}
	if (fl_onnx_import_subgraph(c, gp, err) < 0)
		return -1;
	/* the branch's ops were counted for their own op types */
	c->first_op = c->g->n_ops;
	for (size_t k = 0; k < c->node->n_output; k++)
		if (bind_output(c, (int)k, gp->output[k]->name, err) < 0)
			return -1;
	return 0;
}

int fl_onnx_import_if(fl_onnx_ctx *c, fl_error *err)
{
	const fl_onnx_values *cond = fl_onnx_input_known(c, 0);
	const char *which;
	const Onnx__GraphProto *gp;

	if (!cond) {
		fl_onnx_want_known(c, 0);
		snprintf(c->reason, sizeof c->reason, "condition computed at "
			 "run time");
		return fl_onnx_import_custom(c, err);
	}
	if (cond->n != 1) {
		fl_error_set(err, "cond: %lld values, If needs one",
			     (long long)cond->n);
		return -1;
	}
	which = (cond->i ? cond->i[0] != 0 : cond->f[0] != 0.0f)
		? "then_branch" : "else_branch";
	if (!(gp = branch(c, which))) {
		fl_error_set(err, "%s: missing, or not a graph", which);
		return -1;
	}
	if (inline_branch(c, gp, err) < 0) {
		fl_error_prefix(err, "%s", which);
		return -1;
	}
	return 0;
}
