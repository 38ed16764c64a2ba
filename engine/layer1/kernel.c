/* Kernels and programs: names, defaults and freeing (see kernel.h). */
#include "kernel.h"

#include <stdlib.h>
#include <string.h>

static const char *const strategy_names[FL_STRATEGY_COUNT] = {
	"unfused", "xla", "apollo-l1",
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

static void kernel_clear(fl_kernel *k)
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
}

void fl_program_free(fl_program *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n_kernels; i++)
		kernel_clear(&p->kernels[i]);
	free(p->kernels);
	free(p);
}
