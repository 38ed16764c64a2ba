/* Kernels and programs: names, defaults and freeing (see kernel.h). */
#include "kernel.h"

#include <stdlib.h>
#include <string.h>

static const char *const strategy_names[FL_STRATEGY_COUNT] = {
	"unfused", "xla", "apollo-l1", "apollo-l2", "apollo",
};

const char *fl_strategy_name(fl_strategy s)
{
	return (int)s >= 0 && s < FL_STRATEGY_COUNT ? strategy_names[s] : "?";
}

int fl_strategy_parse(const char *name, fl_strategy *s)
{
	for (int i = 0; i < FL_STRATEGY_COUNT; i++)
		if (strcmp(name, strategy_names[i]) == 0) {
			*s = (fl_strategy)i;
			return 0;
		}
	return -1;
}

const char *fl_placement_name(fl_placement p)
{
	switch (p) {
	case FL_PLACE_GLOBAL: return "global";
	case FL_PLACE_TILE_LOCAL: return "tile-local";
	case FL_PLACE_REGISTER: return "register";
	}
	return "?";
}

const char *fl_tile_kind_name(fl_tile_kind k)
{
	switch (k) {
	case FL_TILE_MEMORY: return "memory-bound";
	case FL_TILE_CONTRACTION: return "contraction";
	case FL_TILE_USER: return "--tile";
	case FL_TILE_NONE: break;
	}
	return "untiled";
}

const char *fl_reduce_form_name(fl_reduce_form f)
{
	switch (f) {
	case FL_REDUCE_ALL: return "all-reduce";
	case FL_REDUCE_X: return "x-reduce";
	case FL_REDUCE_Y: return "y-reduce";
	case FL_REDUCE_NONE: break;
	}
	return "none";
}

void fl_layer1_opts_default(fl_layer1_opts *o)
{
	memset(o, 0, sizeof *o);
	o->sched_budget = FL_DEFAULT_SCHED_BUDGET;
	o->max_recompute = FL_DEFAULT_RECOMPUTE;
	o->max_stmts = FL_DEFAULT_MAX_STMTS;
	o->time_budget_s = FL_DEFAULT_L1_TIME_BUDGET;
}

static void tree_clear(fl_tree_node *t)
{
	for (int i = 0; i < t->n_children; i++)
		tree_clear(&t->children[i]);
	free(t->children);
	free(t->text);
	free(t->coincident);
}

void fl_tree_free(fl_tree_node *t)
{
	if (!t)
		return;
	tree_clear(t);
	free(t);
}

void fl_kernel_clear(fl_kernel *k)
{
	free(k->ops);
	isl_union_set_free(k->domain);
	isl_union_map_free(k->reads);
	isl_union_map_free(k->writes);
	isl_schedule_free(k->schedule);
	isl_union_pw_multi_aff_free(k->inst2tile);
	free(k->schedule_text);
	fl_tree_free(k->tree);
	for (int i = 0; i < k->n_tensors; i++)
		isl_fixed_box_free(k->tensors[i].box_isl);
	free(k->tensors);
	for (int i = 0; i < k->n_branches; i++)
		fl_kernel_clear(&k->branches[i]);
	free(k->branches);
}

void fl_program_free(fl_program *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n_kernels; i++)
		fl_kernel_clear(&p->kernels[i]);
	free(p->kernels);
	free(p);
}

/* Deep copy of tree node src into dst; -1 when out of memory. */
static int tree_copy_into(fl_tree_node *dst, const fl_tree_node *src)
{
	*dst = *src;
	dst->text = NULL;
	dst->coincident = NULL;
	dst->children = NULL;
	dst->n_children = 0;
	if (src->text && !(dst->text = strdup(src->text)))
		return -1;
	if (src->coincident) {
		dst->coincident = malloc((size_t)src->n_members + 1);
		if (!dst->coincident)
			return -1;
		memcpy(dst->coincident, src->coincident,
		       (size_t)src->n_members * sizeof *src->coincident);
	}
	if (src->n_children) {
		dst->children = calloc((size_t)src->n_children,
				       sizeof *dst->children);
		if (!dst->children)
			return -1;
	}
	for (int i = 0; i < src->n_children; i++) {
		dst->n_children = i + 1;
		if (tree_copy_into(&dst->children[i], &src->children[i]) < 0)
			return -1;
	}
	return 0;
}

fl_tree_node *fl_tree_copy(const fl_tree_node *t)
{
	fl_tree_node *c;

	if (!t || !(c = calloc(1, sizeof *c)))
		return NULL;
	if (tree_copy_into(c, t) < 0) {
		fl_tree_free(c);
		return NULL;
	}
	return c;
}

static int kernel_copy_into(fl_kernel *dst, const fl_kernel *src);

/* The branches of a layer-3 kernel src into dst (whose branch fields
 * are still src's); -1 when out of memory, with what was copied owned
 * by dst. */
static int branches_copy_into(fl_kernel *dst, const fl_kernel *src)
{
	dst->n_branches = 0;
	dst->branches = NULL;
	if (!src->n_branches)
		return 0;
	dst->branches = calloc((size_t)src->n_branches,
			       sizeof *dst->branches);
	if (!dst->branches)
		return -1;
	for (int i = 0; i < src->n_branches; i++) {
		dst->n_branches = i + 1;
		if (kernel_copy_into(&dst->branches[i], &src->branches[i]) < 0)
			return -1;
	}
	return 0;
}

/* Deep copy of kernel src (isl objects shared by reference count). */
static int kernel_copy_into(fl_kernel *dst, const fl_kernel *src)
{
	*dst = *src;
	if (branches_copy_into(dst, src) < 0) {
		dst->ops = NULL;
		dst->tensors = NULL;
		dst->n_tensors = 0;
		dst->schedule_text = NULL;
		dst->tree = NULL;
		dst->domain = NULL;
		dst->reads = dst->writes = NULL;
		dst->schedule = NULL;
		dst->inst2tile = NULL;
		return -1;
	}
	dst->ops = malloc(((size_t)src->n_ops + 1) * sizeof *dst->ops);
	dst->tensors = calloc((size_t)src->n_tensors + 1, sizeof *dst->tensors);
	dst->schedule_text = src->schedule_text ? strdup(src->schedule_text)
						: NULL;
	dst->tree = fl_tree_copy(src->tree);
	dst->domain = isl_union_set_copy(src->domain);
	dst->reads = isl_union_map_copy(src->reads);
	dst->writes = isl_union_map_copy(src->writes);
	dst->schedule = isl_schedule_copy(src->schedule);
	dst->inst2tile = isl_union_pw_multi_aff_copy(src->inst2tile);
	if (dst->tensors)
		for (int i = 0; i < src->n_tensors; i++) {
			dst->tensors[i] = src->tensors[i];
			dst->tensors[i].box_isl =
				isl_fixed_box_copy(src->tensors[i].box_isl);
		}
	else
		dst->n_tensors = 0;
	if (!dst->ops || !dst->tensors ||
	    (src->schedule_text && !dst->schedule_text) ||
	    (src->tree && !dst->tree))
		return -1;
	memcpy(dst->ops, src->ops, (size_t)src->n_ops * sizeof *dst->ops);
	return 0;
}

fl_program *fl_program_copy(const fl_program *p, const fl_graph *g)
{
	fl_program *c = calloc(1, sizeof *c);

	if (!c)
		return NULL;
	*c = *p;
	c->graph = g;
	c->n_kernels = 0;
	c->kernels = calloc((size_t)p->n_kernels + 1, sizeof *c->kernels);
	if (!c->kernels) {
		free(c);
		return NULL;
	}
	for (int i = 0; i < p->n_kernels; i++) {
		c->n_kernels = i + 1;
		if (kernel_copy_into(&c->kernels[i], &p->kernels[i]) < 0) {
			fl_program_free(c);
			return NULL;
		}
	}
	return c;
}
