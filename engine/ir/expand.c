/* Opening compound ops (DESIGN 1.2 step 2): fl_graph_expand_compounds.
 *
 * The result is a new graph with every tensor of the source at the same
 * index (so values and names map across), the primitive ops copied as they
 * are, and each compound op replaced by the primitives its expansion in the
 * op library (ops_compound.c) emits.  Primitive ops are copied before any
 * expansion runs, so the names the expansions pick ("sm.exp", "sm.exp.2")
 * never collide with a user op that comes later in the file; the ops are
 * then put back in source order, each expansion where its compound op
 * stood, and the graph is validated, which sorts it topologically and
 * infers every shape again. */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

/* Rounds of expansion before giving up (an expansion may emit compound
 * ops; none of ours do, but the loop keeps that possible). */
#define MAX_ROUNDS 8

/* Copies tensor t of src into dst (same index, as tensors are copied in
 * order). */
static int copy_tensor(fl_graph *dst, const fl_tensor *t, fl_error *err)
{
	fl_tensor *d;
	int i = fl_graph_add_tensor(dst, t->name,
				    t->shape_known ? &t->shape : NULL, t->role,
				    err);

	if (i < 0)
		return -1;
	d = &dst->tensors[i];
	d->declared = t->declared;
	if (t->data) {
		d->data = malloc((size_t)(t->n_data > 0 ? t->n_data : 1) *
				 sizeof *d->data);
		if (!d->data) {
			fl_error_set(err, "out of memory");
			return -1;
		}
		memcpy(d->data, t->data, (size_t)t->n_data * sizeof *d->data);
		d->n_data = t->n_data;
	}
	return 0;
}

/* A graph holding copies of g's tensors (same indices) and no ops. */
static fl_graph *copy_tensors(const fl_graph *g, fl_error *err)
{
	fl_graph *dst = fl_graph_new(g->name);

	if (!dst || (g->doc && !(dst->doc = strdup(g->doc)))) {
		fl_graph_free(dst);
		fl_error_set(err, "out of memory");
		return NULL;
	}
	for (int t = 0; t < g->n_tensors; t++)
		if (copy_tensor(dst, &g->tensors[t], err) < 0) {
			fl_graph_free(dst);
			return NULL;
		}
	return dst;
}

/* Appends a copy of primitive op `op` (attrs and provenance kept). */
static int copy_op(fl_graph *dst, const fl_op *op, fl_error *err)
{
	int i = fl_graph_add_op(dst, op->name, op->kind, op->in, op->n_in,
				op->out, op->n_out, err);
	fl_op *d;

	if (i < 0)
		return -1;
	d = &dst->ops[i];
	if (fl_attrs_copy(&d->attrs, &op->attrs) < 0 ||
	    fl_op_set_provenance(d, op->prov.origin, op->prov.compound,
				 op->prov.rewrite) < 0) {
		fl_error_set(err, "out of memory copying op \"%s\"", op->name);
		return -1;
	}
	return 0;
}

/* Replaces compound op i of g by its expansion, appended to dst. */
static int expand_op(fl_graph *dst, const fl_graph *g, int i, fl_error *err)
{
	const fl_op *op = &g->ops[i];
	const fl_op_info *info = fl_op_info_of(op->kind);

	if (!info || !info->expand) {
		fl_error_set(err, "no expansion for %s", fl_op_kind_name(op->kind));
	} else if (info->expand(dst, op, err) == 0) {
		return 0;
	}
	fl_error_prefix(err, "ops[%d] (%s \"%s\")", i, fl_op_kind_name(op->kind),
			op->name);
	return -1;
}

/* Puts dst's ops back in source order: first[i] is the index in dst of
 * the first op made from g's op i, count[i] how many there are. */
static int reorder(fl_graph *dst, const fl_graph *g, const int *first,
		   const int *count, fl_error *err)
{
	fl_op *ops = malloc((size_t)(dst->n_ops + 1) * sizeof *ops);
	int n = 0;

	if (!ops) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int i = 0; i < g->n_ops; i++)
		for (int k = 0; k < count[i]; k++)
			ops[n++] = dst->ops[first[i] + k];
	free(dst->ops);
	dst->ops = ops;
	dst->cap_ops = dst->n_ops + 1;
	return 0;
}

/* Primitives first (their names are the user's), then the expansions. */
static int fill_ops(fl_graph *dst, const fl_graph *g, int *first, int *count,
		    fl_error *err)
{
	for (int i = 0; i < g->n_ops; i++) {
		count[i] = 0;
		if (fl_op_is_compound(g->ops[i].kind))
			continue;
		first[i] = dst->n_ops;
		count[i] = 1;
		if (copy_op(dst, &g->ops[i], err) < 0) {
			fl_error_prefix(err, "ops[%d]", i);
			return -1;
		}
	}
	for (int i = 0; i < g->n_ops; i++) {
		if (!fl_op_is_compound(g->ops[i].kind))
			continue;
		first[i] = dst->n_ops;
		if (expand_op(dst, g, i, err) < 0)
			return -1;
		count[i] = dst->n_ops - first[i];
	}
	return reorder(dst, g, first, count, err);
}

static bool has_compound(const fl_graph *g)
{
	for (int i = 0; i < g->n_ops; i++)
		if (fl_op_is_compound(g->ops[i].kind))
			return true;
	return false;
}

/* One round: g's compound ops opened once, the result validated. */
static fl_graph *expand_once(const fl_graph *g, fl_error *err)
{
	fl_graph *dst = copy_tensors(g, err);
	int *first = malloc((size_t)(g->n_ops + 1) * sizeof *first);
	int *count = malloc((size_t)(g->n_ops + 1) * sizeof *count);

	if (dst && (!first || !count))
		fl_error_set(err, "out of memory");
	if (!dst || !first || !count || fill_ops(dst, g, first, count, err) < 0) {
		fl_graph_free(dst);
		dst = NULL;
	} else if (fl_graph_validate(dst, err) < 0) {
		fl_error_prefix(err, "expanded graph");
		fl_graph_free(dst);
		dst = NULL;
	}
	free(first);
	free(count);
	return dst;
}

fl_graph *fl_graph_expand_compounds(const fl_graph *g, fl_error *err)
{
	fl_graph *cur = expand_once(g, err);

	for (int round = 1; cur && has_compound(cur); round++) {
		fl_graph *next = NULL;

		if (round < MAX_ROUNDS)
			next = expand_once(cur, err);
		else
			fl_error_set(err, "compound ops still left after %d "
				     "rounds of expansion", MAX_ROUNDS);
		fl_graph_free(cur);
		cur = next;
	}
	return cur;
}
