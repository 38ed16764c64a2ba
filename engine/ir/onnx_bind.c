/* ONNX import: graph inputs bound to given values (onnx_import_impl.h).
 *
 * Contract: fuselab's ops have static shapes, so a value that sets a
 * shape or an amount (a Reshape's shape, Slice's starts, a Range's
 * limit, Resize's sizes, ...) must be known at import.  When a model
 * feeds such a position from a graph input, the user may give that
 * input's value (--bind-inputs DIR, --bind NAME=FILE) and the import is
 * specialised to it, as if the model held it as an initializer.
 *
 *   - in: the given values (fl_onnx_import_opts), each matched to a graph
 *     input by name, else (a file of DIR) by position among the inputs
 *     that are not initializers; each must have the input's element type
 *     and declared shape (a dim without a value takes any extent);
 *   - during an import, every place that needs a value known at import
 *     and finds it computed at run time records it (fl_onnx_want_known);
 *   - after an import, the given inputs that a wanted value is computed
 *     from (walking the model's nodes back from it) are marked bound, and
 *     the driver imports again with them bound as known values
 *     (fl_onnx_bind_given); it stops when no new input is wanted;
 *   - out: only the inputs an import-time position needs become
 *     constants; every other input, given or not, stays a graph input,
 *     so data keeps flowing through the kernels (and --inputs still
 *     feeds it).  info->bound lists the inputs taken.
 * Errors read "<file>: <what>". */
#include "onnx_import_impl.h"

#include <stdlib.h>
#include <string.h>

static bool is_initializer(const Onnx__GraphProto *gp, const char *name)
{
	for (size_t k = 0; k < gp->n_initializer; k++)
		if (gp->initializer[k]->name &&
		    !strcmp(gp->initializer[k]->name, name))
			return true;
	return false;
}

/* Whether graph input k can take a given value: it has a name and no
 * initializer gives it one already. */
static bool candidate(const Onnx__GraphProto *gp, size_t k)
{
	const char *name = gp->input[k]->name;

	return name && *name && !is_initializer(gp, name);
}

/* The graph input of gv: by name, else at gv's position among the
 * candidates when that one is not given yet; -1 with a message. */
static int match_input(const Onnx__GraphProto *gp,
		       const fl_onnx_given_input *gv,
		       const fl_onnx_values **given, fl_error *err)
{
	int pos = 0;

	for (size_t k = 0; gv->name && *gv->name && k < gp->n_input; k++)
		if (candidate(gp, k) && !strcmp(gp->input[k]->name, gv->name))
			return (int)k;
	for (size_t k = 0; gv->position >= 0 && k < gp->n_input; k++)
		if (candidate(gp, k) && pos++ == gv->position && !given[k])
			return (int)k;
	if (gv->name && *gv->name)
		fl_error_set(err, "\"%s\" is not a graph input of the model%s",
			     fl_error_name(gv->name), gv->position >= 0 ?
			     " (nor is its position one not given already)"
			     : "");
	else
		fl_error_set(err, "an unnamed tensor, and the model has no "
			     "graph input at position %d not given already",
			     gv->position);
	return -1;
}

/* The value v fits input vi: its element type, and its declared shape
 * where it declares one. */
static int check_fits(const Onnx__ValueInfoProto *vi,
		      const fl_onnx_values *v, fl_error *err)
{
	fl_shape s = {0};
	bool dynamic, fits;
	char want[128], got[128];

	if (fl_onnx_declared_shape(vi, &s, &dynamic, err) < 0)
		return -1;
	if (vi->type->tensor_type->elem_type != v->dtype) {
		fl_error_set(err, "input %s is %s, the file holds %s",
			     fl_error_name(vi->name),
			     fl_onnx_dtype_name(vi->type->tensor_type->elem_type),
			     fl_onnx_dtype_name(v->dtype));
		return -1;
	}
	if (!vi->type->tensor_type->shape)
		return 0;	/* no declared shape: any */
	fits = s.rank == v->shape.rank;

	for (int d = 0; fits && d < s.rank; d++)
		fits = s.dim[d] < 0 || s.dim[d] == v->shape.dim[d];
	if (!fits) {
		/* a dynamic dim prints as -1 */
		fl_error_set(err, "input %s has shape %s, the file %s",
			     fl_error_name(vi->name),
			     fl_shape_format(&s, want, sizeof want),
			     fl_shape_format(&v->shape, got, sizeof got));
		return -1;
	}
	return 0;
}

int fl_onnx_given_resolve(const Onnx__GraphProto *gp,
			  const fl_onnx_import_opts *o,
			  const fl_onnx_values ***given, fl_error *err)
{
	const fl_onnx_values **g;

	*given = NULL;
	if (!o || o->n_given <= 0)
		return 0;
	g = calloc(gp->n_input ? gp->n_input : 1, sizeof *g);
	if (!g)
		return fl_onnx_oom(err);
	for (int j = 0; j < o->n_given; j++) {
		const fl_onnx_given_input *gv = &o->given[j];
		int k = match_input(gp, gv, g, err);

		if (k >= 0 && g[k]) {
			fl_error_set(err, "input %s is given twice",
				     fl_error_name(gp->input[k]->name));
			k = -1;
		}
		if (k < 0 || check_fits(gp->input[k], gv->values, err) < 0) {
			fl_error_prefix(err, "%s", fl_error_name(gv->source));
			free(g);
			return -1;
		}
		g[k] = gv->values;
	}
	*given = g;
	return 0;
}

static fl_onnx_values *copy_values(const fl_onnx_values *v, fl_error *err)
{
	fl_onnx_values *r = fl_onnx_values_new(&v->shape, v->dtype, err);

	if (!r)
		return NULL;
	memcpy(r->f, v->f, (size_t)v->n * sizeof *r->f);
	if (r->i && v->i)
		memcpy(r->i, v->i, (size_t)v->n * sizeof *r->i);
	return r;
}

int fl_onnx_bind_given(fl_onnx_ctx *c, fl_error *err)
{
	const Onnx__GraphProto *gp = c->main_graph;

	for (size_t k = 0; c->given && k < gp->n_input; k++) {
		fl_onnx_values *v;

		if (!c->bound[k])
			continue;
		v = copy_values(c->given[k], err);
		if (!v || fl_onnx_bind_known(c, gp->input[k]->name, v, err) < 0)
			return -1;
	}
	return 0;
}

void fl_onnx_want_known(fl_onnx_ctx *c, int k)
{
	char *name;

	if (!c->given || !fl_onnx_has_input(c, k))
		return;
	if (c->n_wanted == c->cap_wanted) {
		int cap = c->cap_wanted ? 2 * c->cap_wanted : 8;
		char **p = realloc(c->wanted, (size_t)cap * sizeof *p);

		if (!p)
			return;	/* the import goes on without binding */
		c->wanted = p;
		c->cap_wanted = cap;
	}
	name = strdup(c->node->input[k]);
	if (name)
		c->wanted[c->n_wanted++] = name;
}

/* Marks the given inputs value `name` is computed from; how many new.
 * seen: one flag per node of gp, so each node is walked once. */
static int mark_sources(const fl_onnx_ctx *c, const char *name, bool *seen,
			bool *bound)
{
	const Onnx__GraphProto *gp = c->main_graph;
	int n = 0;

	for (size_t k = 0; k < gp->n_input; k++)
		if (gp->input[k]->name && !strcmp(gp->input[k]->name, name)) {
			if (!c->given[k] || bound[k])
				return 0;
			bound[k] = true;
			return 1;
		}
	for (size_t i = 0; i < gp->n_node; i++) {
		const Onnx__NodeProto *nd = gp->node[i];

		for (size_t o = 0; o < nd->n_output; o++) {
			if (!nd->output[o] || strcmp(nd->output[o], name))
				continue;
			if (seen[i])
				return 0;
			seen[i] = true;
			for (size_t j = 0; j < nd->n_input; j++)
				if (nd->input[j] && *nd->input[j])
					n += mark_sources(c, nd->input[j], seen,
							  bound);
			return n;
		}
	}
	return 0;	/* an initializer, or made inside a sub-graph */
}

int fl_onnx_bind_wanted(const fl_onnx_ctx *c, bool *bound)
{
	const Onnx__GraphProto *gp = c->main_graph;
	bool *seen;
	int n = 0;

	if (!c->given || !c->n_wanted)
		return 0;
	seen = calloc(gp->n_node ? gp->n_node : 1, sizeof *seen);
	if (!seen)
		return 0;
	for (int k = 0; k < c->n_wanted; k++)
		n += mark_sources(c, c->wanted[k], seen, bound);
	free(seen);
	return n;
}

int fl_onnx_note_bound(fl_onnx_info *info, const Onnx__GraphProto *gp,
		       const bool *bound)
{
	int pos = 0;

	for (size_t k = 0; bound && k < gp->n_input; k++) {
		fl_onnx_bound_input *b;

		if (!candidate(gp, k))
			continue;
		pos++;
		if (!bound[k])
			continue;
		b = realloc(info->bound, (size_t)(info->n_bound + 1) * sizeof *b);
		if (!b)
			return -1;
		info->bound = b;
		b[info->n_bound].position = pos - 1;
		b[info->n_bound].name = strdup(gp->input[k]->name);
		if (!b[info->n_bound].name)
			return -1;
		info->n_bound++;
	}
	return 0;
}
