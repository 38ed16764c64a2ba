/* Layer 1's schedule trees as the rest of fuselab sees them: "parallel"
 * marks for the code generators, isl's block YAML text, and a walkable
 * copy (fl_tree_node, kernel.h) for the schedule-tree view.
 *
 * Mark convention (ISL_GUIDE 7): every band whose leading member is
 * coincident gets a mark node right above it, with id name "parallel"
 * and a user pointer to int[2] = {depth, ncoinc}: the band's schedule
 * depth (number of outer schedule dimensions, so the AST iterator of its
 * first member is c<depth>) and its number of leading coincident members.
 * The array is freed with the id (isl_id_set_free_user).  A backend puts
 * "#pragma omp parallel for" on the outermost non-degenerate for loop
 * whose iterator is c<d> with depth <= d < depth + ncoinc, and only when
 * no enclosing loop already got one. */
#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/id.h>
#include <isl/printer.h>
#include <isl/schedule_node.h>
#include <isl/set.h>

#include "layer1_impl.h"

/* Shared with tile.c and the C backend (declared in kernel.h). */
int fl_band_leading_coincident(__isl_keep isl_schedule_node *band)
{
	isl_size n = isl_schedule_node_band_n_member(band);
	int k = 0;

	while (k < n &&
	       isl_schedule_node_band_member_get_coincident(band, k) ==
		       isl_bool_true)
		k++;
	return k;
}

/* Bottom-up callback: a mark above each band with a coincident lead. */
static isl_schedule_node *mark_band(__isl_take isl_schedule_node *node,
				    void *user)
{
	int k, *data;
	isl_id *id;

	(void)user;
	if (isl_schedule_node_get_type(node) != isl_schedule_node_band)
		return node;
	k = fl_band_leading_coincident(node);
	if (k == 0)
		return node;
	data = malloc(2 * sizeof *data);
	if (!data)
		return isl_schedule_node_free(node);
	data[0] = isl_schedule_node_get_schedule_depth(node);
	data[1] = k;
	id = isl_id_alloc(isl_schedule_node_get_ctx(node), "parallel", data);
	id = isl_id_set_free_user(id, free);
	if (!id)
		free(data);
	return isl_schedule_node_insert_mark(node, id);
}

__isl_give isl_schedule *fl_l1_mark_parallel(__isl_take isl_schedule *s)
{
	return isl_schedule_map_schedule_node_bottom_up(s, mark_band, NULL);
}

char *fl_l1_schedule_text(__isl_keep isl_schedule *s)
{
	isl_printer *p;
	char *text;

	if (!s)
		return NULL;
	p = isl_printer_to_str(isl_schedule_get_ctx(s));
	p = isl_printer_set_yaml_style(p, ISL_YAML_STYLE_BLOCK);
	p = isl_printer_print_schedule(p, s);
	text = isl_printer_get_str(p);
	isl_printer_free(p);
	return text;
}

/* The kind of node `node` in fl_tree terms. */
static fl_tree_kind tree_kind(enum isl_schedule_node_type t)
{
	switch (t) {
	case isl_schedule_node_band: return FL_TREE_BAND;
	case isl_schedule_node_context: return FL_TREE_CONTEXT;
	case isl_schedule_node_domain: return FL_TREE_DOMAIN;
	case isl_schedule_node_expansion: return FL_TREE_EXPANSION;
	case isl_schedule_node_extension: return FL_TREE_EXTENSION;
	case isl_schedule_node_filter: return FL_TREE_FILTER;
	case isl_schedule_node_guard: return FL_TREE_GUARD;
	case isl_schedule_node_mark: return FL_TREE_MARK;
	case isl_schedule_node_sequence: return FL_TREE_SEQUENCE;
	case isl_schedule_node_set: return FL_TREE_SET;
	default: return FL_TREE_LEAF;
	}
}

/* isl's text of an object, which is freed (the _text helpers take). */
static char *uset_text(__isl_take isl_union_set *u)
{
	char *s = isl_union_set_to_str(u);

	isl_union_set_free(u);
	return s;
}

static char *umap_text(__isl_take isl_union_map *u)
{
	char *s = isl_union_map_to_str(u);

	isl_union_map_free(u);
	return s;
}

static char *set_text(__isl_take isl_set *set)
{
	char *s = isl_set_to_str(set);

	isl_set_free(set);
	return s;
}

static char *mupa_text(__isl_take isl_multi_union_pw_aff *mupa)
{
	char *s = isl_multi_union_pw_aff_to_str(mupa);

	isl_multi_union_pw_aff_free(mupa);
	return s;
}

static char *mark_text(__isl_take isl_id *id)
{
	const char *name = isl_id_get_name(id);
	char *s = strdup(name ? name : "");

	isl_id_free(id);
	return s;
}

/* The text of a node: its set, map, mark name or partial schedule
 * (malloc'd), NULL for sequence, set and leaf. */
static char *node_text(__isl_keep isl_schedule_node *node)
{
	switch (isl_schedule_node_get_type(node)) {
	case isl_schedule_node_band:
		return mupa_text(isl_schedule_node_band_get_partial_schedule(node));
	case isl_schedule_node_domain:
		return uset_text(isl_schedule_node_domain_get_domain(node));
	case isl_schedule_node_filter:
		return uset_text(isl_schedule_node_filter_get_filter(node));
	case isl_schedule_node_extension:
		return umap_text(isl_schedule_node_extension_get_extension(node));
	case isl_schedule_node_expansion:
		return umap_text(isl_schedule_node_expansion_get_expansion(node));
	case isl_schedule_node_context:
		return set_text(isl_schedule_node_context_get_context(node));
	case isl_schedule_node_guard:
		return set_text(isl_schedule_node_guard_get_guard(node));
	case isl_schedule_node_mark:
		return mark_text(isl_schedule_node_mark_get_id(node));
	default:
		return NULL;
	}
}

static bool is_leaf(__isl_keep isl_schedule_node *node)
{
	return isl_schedule_node_get_type(node) == isl_schedule_node_leaf;
}

/* Fills the band fields of t from band node `node`. */
static int fill_band(fl_tree_node *t, __isl_keep isl_schedule_node *node)
{
	isl_size n = isl_schedule_node_band_n_member(node);

	if (n < 0)
		return -1;
	t->n_members = n;
	t->permutable = isl_schedule_node_band_get_permutable(node) ==
			isl_bool_true;
	t->coincident = calloc((size_t)n + 1, sizeof *t->coincident);
	if (!t->coincident)
		return -1;
	for (int i = 0; i < n; i++)
		t->coincident[i] =
			isl_schedule_node_band_member_get_coincident(node, i) ==
			isl_bool_true;
	return 0;
}

static int fill(fl_tree_node *t, __isl_keep isl_schedule_node *node);

/* Fills t's children from node's non-leaf children. */
static int fill_children(fl_tree_node *t, __isl_keep isl_schedule_node *node)
{
	isl_size n = isl_schedule_node_n_children(node);

	if (n < 0)
		return -1;
	t->children = calloc((size_t)n + 1, sizeof *t->children);
	if (!t->children)
		return -1;
	for (int i = 0; i < n; i++) {
		isl_schedule_node *c = isl_schedule_node_get_child(node, i);
		int rc = 0;

		if (!c)
			return -1;
		if (!is_leaf(c))
			rc = fill(&t->children[t->n_children++], c);
		isl_schedule_node_free(c);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* Copies node and its subtree into t (t zeroed by the caller). */
static int fill(fl_tree_node *t, __isl_keep isl_schedule_node *node)
{
	enum isl_schedule_node_type type = isl_schedule_node_get_type(node);

	t->kind = tree_kind(type);
	t->text = node_text(node);
	if (type == isl_schedule_node_band && fill_band(t, node) < 0)
		return -1;
	return fill_children(t, node);
}

fl_tree_node *fl_l1_tree(__isl_keep isl_schedule *s)
{
	isl_schedule_node *root;
	fl_tree_node *t;
	int rc;

	if (!s)
		return NULL;
	t = calloc(1, sizeof *t);
	root = isl_schedule_get_root(s);
	if (!t || !root) {
		free(t);
		isl_schedule_node_free(root);
		return NULL;
	}
	rc = fill(t, root);
	isl_schedule_node_free(root);
	if (rc < 0) {
		fl_tree_free(t);
		return NULL;
	}
	return t;
}
