/* Partition passes 1-3 (DESIGN 1.2): extract clusters, open compound ops,
 * classify primitives.  Aggregation (step 4) and user constraints live in
 * aggregate.c.
 *
 * Needs: a validated graph in topological order (after preprocess).
 * Changes: st->graph (compound ops replaced by primitives), st->part
 * (cluster_of, type_of). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "groups_impl.h"
#include "passes_impl.h"

void fl_partition_free(fl_partition *p)
{
	for (int i = 0; i < p->n_groups; i++)
		free(p->groups[i].members);
	free(p->groups);
	free(p->cluster_of);
	free(p->type_of);
	free(p->type_reason);
	free(p->group_of);
	memset(p, 0, sizeof *p);
}

int fl_partition_count_alive(const fl_partition *p)
{
	int n = 0;

	for (int i = 0; i < p->n_groups; i++)
		n += p->groups[i].alive;
	return n;
}

fl_op_type fl_type_join(fl_op_type a, fl_op_type b)
{
	return a > b ? a : b;
}

/* ---- clusters ---------------------------------------------------------- */

static int uf_find(int *parent, int x)
{
	while (parent[x] != x) {
		parent[x] = parent[parent[x]];
		x = parent[x];
	}
	return x;
}

/* Connected components of the ops that can be modelled (undirected),
 * numbered in the order of their first op; custom ops get -1. */
static int compute_components(const fl_graph *g, int *comp)
{
	int *parent = malloc(((size_t)g->n_ops + 1) * sizeof *parent);
	int *label = malloc(((size_t)g->n_ops + 1) * sizeof *label);
	int n = 0;

	if (!parent || !label) {
		free(parent);
		free(label);
		return -1;
	}
	for (int i = 0; i < g->n_ops; i++) {
		parent[i] = i;
		label[i] = -1;
	}
	for (int i = 0; i < g->n_ops; i++) {
		if (g->ops[i].kind == FL_OP_CUSTOM)
			continue;
		for (int k = 0; k < g->ops[i].n_in; k++) {
			int p = g->tensors[g->ops[i].in[k]].producer;

			if (p >= 0 && g->ops[p].kind != FL_OP_CUSTOM)
				parent[uf_find(parent, p)] = uf_find(parent, i);
		}
	}
	for (int i = 0; i < g->n_ops; i++) {
		int r;

		comp[i] = -1;
		if (g->ops[i].kind == FL_OP_CUSTOM)
			continue;
		r = uf_find(parent, i);
		if (label[r] < 0)
			label[r] = n++;
		comp[i] = label[r];
	}
	free(parent);
	free(label);
	return n;
}

static int log_cluster(fl_state *st, int c, const int *comp)
{
	const fl_graph *g = st->graph;
	const char *names[3];
	int n = 0, count = 0;

	for (int i = 0; i < g->n_ops; i++)
		if (comp[i] == c) {
			if (n < 3)
				names[n++] = g->ops[i].name;
			count++;
		}
	return fl_state_log(st, FL_EV_CLUSTERED, NULL, names, n, -1, -1,
			    "sub-graph F%d: %d op%s starting at %s", c + 1, count,
			    count == 1 ? "" : "s", names[0]) ? 0 : -1;
}

int fl_pass_cluster(fl_state *st, fl_error *err)
{
	const fl_graph *g = st->graph;
	int *comp = malloc(((size_t)g->n_ops + 1) * sizeof *comp);
	int n;

	if (!comp)
		goto oom;
	n = compute_components(g, comp);
	free(st->part.cluster_of);
	st->part.cluster_of = comp;
	st->part.n_ops = g->n_ops;
	st->part.n_clusters = n < 0 ? 0 : n;
	if (n < 0)
		goto oom;
	/* Decisions: each custom op excluded, then each sub-graph. */
	for (int i = 0; i < g->n_ops; i++) {
		if (g->ops[i].kind != FL_OP_CUSTOM)
			continue;
		if (!fl_state_decide(st))
			return FL_PASS_PAUSED;
		fl_state_log(st, FL_EV_CLUSTERED, NULL,
			     (const char *const[]){g->ops[i].name}, 1, -1, -1,
			     "%s is a custom op the engine cannot model: "
			     "excluded, it splits the graph", g->ops[i].name);
	}
	for (int c = 0; c < n; c++) {
		if (!fl_state_decide(st))
			return FL_PASS_PAUSED;
		if (log_cluster(st, c, comp) < 0)
			goto oom;
	}
	return FL_PASS_DONE;
oom:
	fl_error_set(err, "out of memory extracting clusters");
	return -1;
}

/* ---- opening compound ops --------------------------------------------- */

/* fl_graph_open_compounds asks before each compound op: one decision. */
static bool open_decide(void *user, const fl_graph *src, int i)
{
	(void)src;
	(void)i;
	return fl_state_decide(user);
}

/* Logs the opening of op i of src into d->ops[first .. first+n-1]. */
static int log_open(void *user, const fl_graph *src, int i, const fl_graph *d,
		    int first, int n, fl_error *err)
{
	const fl_op *op = &src->ops[i];
	const char *names[17];
	char list[200] = "";
	size_t used = 0;
	int n_names = 1;

	names[0] = op->name;
	for (int k = first; k < first + n; k++) {
		if (n_names < 17)
			names[n_names++] = d->ops[k].name;
		if (used < sizeof list)
			used += (size_t)snprintf(list + used, sizeof list - used,
						 "%s%s", k > first ? " " : "",
						 d->ops[k].name);
	}
	if (fl_state_log(user, FL_EV_OPENED, NULL, names, n_names, -1, -1,
			 "opened %s %s into %d primitives: %s",
			 fl_op_kind_name(op->kind), op->name, n, list))
		return 0;
	fl_error_set(err, "out of memory opening compound ops");
	return -1;
}

int fl_pass_open(fl_state *st, fl_error *err)
{
	const fl_open_hooks hooks = {open_decide, log_open, st};
	int *src = NULL, *cluster = NULL, n_kept = 0;
	fl_graph *d = fl_graph_open_compounds(st->graph, &hooks, &src, &n_kept,
					      err);

	if (!d)
		return -1;
	cluster = malloc(((size_t)d->n_ops + 1) * sizeof *cluster);
	if (!cluster) {
		fl_error_set(err, "out of memory opening compound ops");
		fl_graph_free(d);
		free(src);
		return -1;
	}
	for (int i = 0; i < d->n_ops; i++)
		cluster[i] = st->part.cluster_of[src[i]];
	free(src);
	free(st->part.cluster_of);
	st->part.cluster_of = cluster;
	st->part.n_ops = d->n_ops;
	fl_graph_free(st->graph);
	st->graph = d;
	/* a compound op left unopened: the budget ran out before it */
	return n_kept ? FL_PASS_PAUSED : FL_PASS_DONE;
}

/* ---- classification ---------------------------------------------------- */

/* A small open-addressing map from op signature to classification. */
struct fl_classify_cache {
	int cap, n;
	char **keys;
	fl_classification *vals;
};

struct fl_classify_cache *fl_classify_cache_new(void)
{
	struct fl_classify_cache *c = calloc(1, sizeof *c);

	if (!c)
		return NULL;
	c->cap = 256;
	c->keys = calloc((size_t)c->cap, sizeof *c->keys);
	c->vals = calloc((size_t)c->cap, sizeof *c->vals);
	if (!c->keys || !c->vals) {
		fl_classify_cache_free(c);
		return NULL;
	}
	return c;
}

void fl_classify_cache_free(struct fl_classify_cache *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->cap && c->keys; i++)
		free(c->keys[i]);
	free(c->keys);
	free(c->vals);
	free(c);
}

static unsigned long hash_key(const char *s)
{
	unsigned long h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

static int cache_slot(const struct fl_classify_cache *c, const char *key)
{
	int i = (int)(hash_key(key) & (unsigned long)(c->cap - 1));

	while (c->keys[i] && strcmp(c->keys[i], key) != 0)
		i = (i + 1) & (c->cap - 1);
	return i;
}

static int cache_grow(struct fl_classify_cache *c)
{
	struct fl_classify_cache big = {c->cap * 2, 0, NULL, NULL};

	big.keys = calloc((size_t)big.cap, sizeof *big.keys);
	big.vals = calloc((size_t)big.cap, sizeof *big.vals);
	if (!big.keys || !big.vals) {
		free(big.keys);
		free(big.vals);
		return -1;
	}
	for (int i = 0; i < c->cap; i++)
		if (c->keys[i]) {
			int j = cache_slot(&big, c->keys[i]);

			big.keys[j] = c->keys[i];
			big.vals[j] = c->vals[i];
		}
	free(c->keys);
	free(c->vals);
	c->keys = big.keys;
	c->vals = big.vals;
	c->cap = big.cap;
	return 0;
}

static int cache_put(struct fl_classify_cache *c, const char *key,
		     const fl_classification *v)
{
	int i;

	if (2 * (c->n + 1) > c->cap && cache_grow(c) < 0)
		return -1;
	i = cache_slot(c, key);
	c->keys[i] = strdup(key);
	if (!c->keys[i])
		return -1;
	c->vals[i] = *v;
	c->n++;
	return 0;
}

/* The classification depends only on the op kind, its input and output
 * shapes and its attributes: that is the cache key. */
static void signature(const fl_graph *g, const fl_op *op, char *buf,
		      size_t n)
{
	size_t used = (size_t)snprintf(buf, n, "%d", (int)op->kind);
	char sh[128];

	for (int k = 0; k < op->n_in && used < n; k++)
		used += (size_t)snprintf(buf + used, n - used, "|%s",
					 fl_shape_format(&g->tensors[op->in[k]].shape,
							 sh, sizeof sh));
	for (int k = 0; k < op->n_out && used < n; k++)
		used += (size_t)snprintf(buf + used, n - used, ">%s",
					 fl_shape_format(&g->tensors[op->out[k]].shape,
							 sh, sizeof sh));
	for (int a = 0; a < op->attrs.n && used < n; a++) {
		const fl_attr *at = &op->attrs.items[a];

		used += (size_t)snprintf(buf + used, n - used, ";%s=%g/%s", at->key,
					 at->num, at->str ? at->str : "");
		for (int v = 0; v < at->n && used < n; v++)
			used += (size_t)snprintf(buf + used, n - used, ",%g",
						 at->list[v]);
	}
}

static int classify_one(fl_state *st, int i, fl_error *err)
{
	char key[2048];
	struct fl_classify_cache *c = st->cache;
	fl_classification cl;
	int slot;

	signature(st->graph, &st->graph->ops[i], key, sizeof key);
	slot = cache_slot(c, key);
	if (c->keys[slot]) {
		cl = c->vals[slot];
	} else {
		if (fl_classify_op(st->ctx, st->graph, i, &cl, err) < 0)
			return -1;
		if (cache_put(c, key, &cl) < 0) {
			fl_error_set(err, "out of memory");
			return -1;
		}
	}
	st->part.type_of[i] = cl.type;
	memcpy(st->part.type_reason[i], cl.reason, sizeof cl.reason);
	return 0;
}

int fl_pass_classify(fl_state *st, fl_error *err)
{
	const fl_graph *g = st->graph;
	fl_partition *p = &st->part;

	p->type_of = malloc(((size_t)g->n_ops + 1) * sizeof *p->type_of);
	p->type_reason = calloc((size_t)g->n_ops + 1, sizeof *p->type_reason);
	if (!p->type_of || !p->type_reason) {
		fl_error_set(err, "out of memory classifying ops");
		return -1;
	}
	for (int i = 0; i < g->n_ops; i++) {
		p->type_of[i] = FL_TYPE_O;
		snprintf(p->type_reason[i], sizeof p->type_reason[i],
			 "not classified");
	}
	for (int i = 0; i < g->n_ops; i++) {
		const fl_op *op = &g->ops[i];

		if (p->cluster_of[i] < 0) {
			snprintf(p->type_reason[i], sizeof p->type_reason[i],
				 "custom op: cannot be modelled");
			continue;
		}
		if (!fl_state_decide(st))
			return FL_PASS_PAUSED;
		if (classify_one(st, i, err) < 0) {
			fl_error_prefix(err, "classifying %s", op->name);
			return -1;
		}
		fl_state_log(st, FL_EV_CLASSIFIED, NULL,
			     (const char *const[]){op->name}, 1, -1, -1,
			     "%s (%s) is %s: %s", op->name, fl_op_kind_name(op->kind),
			     fl_op_type_long_name(p->type_of[i]), p->type_reason[i]);
	}
	p->classified = true;
	return FL_PASS_DONE;
}
