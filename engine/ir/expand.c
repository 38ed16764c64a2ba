/* Opening compound ops (DESIGN 1.2 step 2): fl_graph_open_compounds, the
 * one implementation behind the partition's open pass and
 * fl_graph_expand_compounds.
 *
 * The result is a new graph with every tensor of the source at the same
 * index (so values and names map across), the primitive ops copied as they
 * are, and each compound op either replaced by the primitives its
 * expansion in the op library (ops_compound.c) emits or, when the caller's
 * decision declines it, copied as it is.  Primitive ops are copied before
 * any expansion runs, so the names the expansions pick ("sm.exp",
 * "sm.exp.2") never collide with a user op that comes later in the file;
 * the ops are then put back in source order, each expansion where its
 * compound op stood, which keeps a topologically sorted source sorted. */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

/* Rounds of opening before giving up (an expansion may emit compound
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
	d->dtype = t->dtype;
	d->dtype_declared = t->dtype_declared;
	if (fl_tensor_copy_values(d, t) < 0) {	/* shared ones stay shared */
		fl_error_set(err, "out of memory");
		return -1;
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

/* Appends a copy of op i of g (attrs and provenance kept). */
static int copy_op(fl_graph *dst, const fl_graph *g, int i, fl_error *err)
{
	const fl_op *op = &g->ops[i];
	int k = fl_graph_add_op(dst, op->name, op->kind, op->in, op->n_in,
				op->out, op->n_out, err);
	fl_op *d;

	if (k < 0)
		goto fail;
	d = &dst->ops[k];
	if (fl_attrs_copy(&d->attrs, &op->attrs) < 0 ||
	    fl_op_set_provenance(d, op->prov.origin, op->prov.compound,
				 op->prov.rewrite) < 0 ||
	    fl_op_set_source_op(d, op->prov.source_op) < 0) {
		fl_error_set(err, "out of memory copying op \"%s\"", op->name);
		goto fail;
	}
	return 0;
fail:
	fl_error_prefix(err, "ops[%d]", i);
	return -1;
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

/* One round over g: ops go to dst (primitives first, then each compound
 * op opened or kept); first[i] and count[i] say where op i of g went.
 * *emitted is set when an expansion produced a compound op. */
static int fill_ops(fl_graph *dst, const fl_graph *g,
		    const fl_open_hooks *h, int *first, int *count,
		    bool *emitted, fl_error *err)
{
	for (int i = 0; i < g->n_ops; i++) {
		count[i] = 0;
		if (fl_op_is_compound(g->ops[i].kind))
			continue;
		first[i] = dst->n_ops;
		count[i] = 1;
		if (copy_op(dst, g, i, err) < 0)
			return -1;
	}
	for (int i = 0; i < g->n_ops; i++) {
		if (!fl_op_is_compound(g->ops[i].kind))
			continue;
		first[i] = dst->n_ops;
		if (h && h->decide && !h->decide(h->user, g, i)) {
			count[i] = 1;
			if (copy_op(dst, g, i, err) < 0)
				return -1;
			continue;
		}
		if (expand_op(dst, g, i, err) < 0)
			return -1;
		count[i] = dst->n_ops - first[i];
		for (int k = first[i]; k < dst->n_ops; k++)
			*emitted |= fl_op_is_compound(dst->ops[k].kind);
		if (h && h->opened &&
		    h->opened(h->user, g, i, dst, first[i], count[i], err) != 0)
			return -1;
	}
	return 0;
}

/* Puts dst's ops back in g's order (each op's expansion where it stood)
 * and fills src[k], the op of g that new op k came from. */
static int restore_order(fl_graph *dst, const fl_graph *g, const int *first,
			 const int *count, int *src, fl_error *err)
{
	int *order = malloc((size_t)(dst->n_ops + 1) * sizeof *order);
	int n = 0, rc;

	if (!order) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int i = 0; i < g->n_ops; i++)
		for (int k = 0; k < count[i]; k++) {
			src[n] = i;
			order[n++] = first[i] + k;
		}
	rc = fl_graph_permute_ops(dst, order, err);
	free(order);
	return rc;
}

/* One round of opening g; *src (malloc'd) maps the result's ops to g's. */
static fl_graph *open_once(const fl_graph *g, const fl_open_hooks *h,
			   int **src, bool *emitted, fl_error *err)
{
	fl_graph *dst = copy_tensors(g, err);
	int *first = malloc((size_t)(g->n_ops + 1) * sizeof *first);
	int *count = malloc((size_t)(g->n_ops + 1) * sizeof *count);

	*src = NULL;
	if (dst && (!first || !count))
		fl_error_set(err, "out of memory");
	if (!dst || !first || !count ||
	    fill_ops(dst, g, h, first, count, emitted, err) < 0)
		goto fail;
	*src = malloc((size_t)(dst->n_ops + 1) * sizeof **src);
	if (!*src) {
		fl_error_set(err, "out of memory");
		goto fail;
	}
	if (restore_order(dst, g, first, count, *src, err) < 0)
		goto fail;
	free(first);
	free(count);
	return dst;
fail:
	fl_graph_free(dst);
	free(*src);
	*src = NULL;
	free(first);
	free(count);
	return NULL;
}

fl_graph *fl_graph_open_compounds(const fl_graph *g, const fl_open_hooks *h,
				  int **src_of, int *n_kept, fl_error *err)
{
	const fl_graph *cur = g;
	fl_graph *out = NULL;
	int *map = NULL;

	for (int round = 0;; round++) {
		bool emitted = false;
		fl_graph *next;
		int *src;

		if (round == MAX_ROUNDS) {
			fl_error_set(err, "compound ops still left after %d "
				     "rounds of expansion", MAX_ROUNDS);
			goto fail;
		}
		next = open_once(cur, h, &src, &emitted, err);
		if (!next)
			goto fail;
		/* compose: the result's op k comes from g's op map[src[k]] */
		if (map)
			for (int k = 0; k < next->n_ops; k++)
				src[k] = map[src[k]];
		free(map);
		map = src;
		fl_graph_free(out);
		cur = out = next;
		if (!emitted)
			break;
	}
	if (n_kept) {
		*n_kept = 0;
		for (int k = 0; k < out->n_ops; k++)
			*n_kept += fl_op_is_compound(out->ops[k].kind);
	}
	if (src_of)
		*src_of = map;
	else
		free(map);
	return out;
fail:
	fl_graph_free(out);
	free(map);
	return NULL;
}

fl_graph *fl_graph_expand_compounds(const fl_graph *g, fl_error *err)
{
	fl_graph *e = fl_graph_open_compounds(g, NULL, NULL, NULL, err);

	if (e && fl_graph_validate(e, err) < 0) {
		fl_error_prefix(err, "expanded graph");
		fl_graph_free(e);
		e = NULL;
	}
	return e;
}
