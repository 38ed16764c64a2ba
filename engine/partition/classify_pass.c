/* Partition step 3 (DESIGN 1.2): classify primitives as elementwise,
 * broadcast, reduction or opaque from their dataflow relations; the isl
 * work is fl_classify_op (classify.c).  Results are cached by op
 * signature (kind, shapes, attrs) in a cache the session keeps across
 * replays, so stepping does not redo isl work.
 *
 * Needs: a graph of primitives (open.c) and cluster_of.
 * Changes: st->part.type_of, type_reason, classified.
 * Decides: each op of a cluster classified (one event with the type and
 * the relation that decided it); excluded custom ops are opaque without
 * a decision. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes_impl.h"

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
