/* Reference values several sessions share (see ref_share.h). */
#include "ref_share.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the interpreter's values depend on: the graph, summed up by its
 * sizes and a hash of its content, and the interpreter options (the
 * feeds by identity: the sessions of a ladder hold the same array). */
typedef struct ref_key {
	int n_tensors, n_ops;
	uint64_t hash;
	uint64_t seed;
	int64_t max_bytes;
	const fl_feed *feeds;
	int n_feeds;
} ref_key;

struct fl_ref_share {
	ref_key key;
	fl_values *values;	/* NULL before the run, after a drop */
	bool asked;		/* key is set: the first graph asked */
	bool dropped;
	int runs;
	char failed[FL_ERROR_MAX];	/* the interpreter's error, "" */
};

/* FNV-1a's prime: spreads each word over the whole hash. */
static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull;
}

static uint64_t mix_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {	/* a word at a time: constants run
					   to hundreds of MB */
		uint64_t w;

		memcpy(&w, b + i, 8);
		h = mix(h, w);
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = mix(h, b[i]);
	return mix(h, n);
}

static uint64_t mix_string(uint64_t h, const char *s)
{
	return s ? mix_bytes(h, s, strlen(s)) : mix(h, 0x5a);
}

static uint64_t mix_tensor(uint64_t h, const fl_tensor *t)
{
	h = mix_string(h, t->name);
	h = mix(h, (uint64_t)t->dtype);
	h = mix(h, (uint64_t)t->role);
	h = mix(h, (uint64_t)t->shape.rank);
	for (int d = 0; d < t->shape.rank; d++)
		h = mix(h, (uint64_t)t->shape.dim[d]);
	h = mix(h, (uint64_t)t->n_data);
	if (t->data)
		h = mix_bytes(h, t->data, (size_t)t->n_data * sizeof *t->data);
	if (t->ints)
		h = mix_bytes(h, t->ints, (size_t)t->n_data * sizeof *t->ints);
	return h;
}

static ref_key key_of(const fl_graph *g, const fl_interp_opts *o)
{
	ref_key k;
	uint64_t h = 0xcbf29ce484222325ull;

	for (int t = 0; t < g->n_tensors; t++)
		h = mix_tensor(h, &g->tensors[t]);
	for (int i = 0; i < g->n_ops; i++) {
		const fl_op *op = &g->ops[i];

		h = mix_string(h, op->name);
		h = mix(h, (uint64_t)op->kind);
		h = mix_bytes(h, op->in, (size_t)op->n_in * sizeof *op->in);
		h = mix_bytes(h, op->out, (size_t)op->n_out * sizeof *op->out);
	}
	k.n_tensors = g->n_tensors;
	k.n_ops = g->n_ops;
	k.hash = h;
	k.seed = o->seed;
	k.max_bytes = o->max_bytes;
	k.feeds = o->feeds;
	k.n_feeds = o->n_feeds;
	return k;
}

static bool same_key(const ref_key *a, const ref_key *b)
{
	return a->n_tensors == b->n_tensors && a->n_ops == b->n_ops &&
	       a->hash == b->hash && a->seed == b->seed &&
	       a->max_bytes == b->max_bytes && a->feeds == b->feeds &&
	       a->n_feeds == b->n_feeds;
}

fl_ref_share *fl_ref_share_new(void)
{
	return calloc(1, sizeof(fl_ref_share));
}

void fl_ref_share_drop(fl_ref_share *r)
{
	if (!r)
		return;
	fl_values_free(r->values);
	r->values = NULL;
	r->dropped = true;
}

void fl_ref_share_free(fl_ref_share *r)
{
	fl_ref_share_drop(r);
	free(r);
}

int fl_ref_share_runs(const fl_ref_share *r)
{
	return r ? r->runs : 0;
}

const fl_values *fl_ref_share_values(fl_ref_share *r, const fl_graph *g,
				     const fl_interp_opts *o, fl_error *err)
{
	ref_key k;

	if (r->dropped)
		return NULL;
	k = key_of(g, o);
	if (r->asked && !same_key(&k, &r->key))
		return NULL;	/* another graph: the session's own */
	if (r->failed[0]) {	/* the same run would fail the same way */
		fl_error_set(err, "%s", r->failed);
		return NULL;
	}
	if (!r->asked) {
		r->key = k;
		r->asked = true;
		r->runs++;
		r->values = fl_interp_run(g, o, err);
		if (!r->values)
			snprintf(r->failed, sizeof r->failed, "%s",
				 err && err->msg[0] ? err->msg : "failed");
	}
	return r->values;
}
