/* The values of constant tensors, shared between copies of a graph.
 *
 * Why: an engine session copies its whole state at every pass boundary
 * (the snapshots that let the explorer step back), and a real model's
 * constants are most of its bytes (ViT-B/16: 330 MB).  Copying them made
 * a session hold one copy per snapshot; sharing them makes a snapshot
 * cost the graph's structure only.
 *
 * Ownership rules (fl_tensor's data and ints):
 *
 *   - t->shared == NULL: the tensor owns data and ints alone, as plain
 *     malloc'd arrays.  Whoever builds the tensor (an importer, a folding
 *     pass) may write them in place.
 *   - t->shared != NULL: data and ints belong to that block, which is
 *     reference counted (one reference per tensor pointing at it, in any
 *     graph, in any thread: the count is atomic).  The values are then
 *     immutable: nobody writes them in place, frees them or reallocates
 *     them.  To give the tensor other values, drop the old ones
 *     (fl_tensor_drop_values) and attach fresh malloc'd arrays, which the
 *     tensor then owns alone again.
 *   - fl_graph_share_values moves owned values into blocks (once per
 *     tensor: sharing again is free), and fl_graph_copy and
 *     fl_graph_open_compounds share the blocks they find instead of
 *     copying (values not shared yet are still copied).
 *
 * So code that only reads constants never changes; code that replaces a
 * tensor's values goes through fl_tensor_drop_values instead of free. */
#include "graph.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct fl_shared_values {
	atomic_int refs;	/* tensors pointing here */
	float *data;		/* owned; what the tensors' data points at */
	int64_t *ints;		/* owned; likewise for ints */
};

/* Takes one more reference to v (v must already have one). */
static struct fl_shared_values *values_ref(struct fl_shared_values *v)
{
	atomic_fetch_add_explicit(&v->refs, 1, memory_order_relaxed);
	return v;
}

/* Drops one reference; the last one frees the values. */
static void values_unref(struct fl_shared_values *v)
{
	if (atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) != 1)
		return;
	free(v->data);
	free(v->ints);
	free(v);
}

void fl_tensor_drop_values(fl_tensor *t)
{
	if (t->shared)
		values_unref(t->shared);
	else {
		free(t->data);
		free(t->ints);
	}
	t->shared = NULL;
	t->data = NULL;
	t->ints = NULL;
}

bool fl_tensor_values_shared(const fl_tensor *t)
{
	return t->shared != NULL;
}

/* Moves t's owned values into a new block; -1 when out of memory (t is
 * then unchanged). */
static int share_tensor(fl_tensor *t)
{
	struct fl_shared_values *v;

	if (t->shared || (!t->data && !t->ints))
		return 0;
	v = malloc(sizeof *v);
	if (!v)
		return -1;
	atomic_init(&v->refs, 1);
	v->data = t->data;
	v->ints = t->ints;
	t->shared = v;
	return 0;
}

int fl_graph_share_values(fl_graph *g, fl_error *err)
{
	for (int i = 0; i < g->n_tensors; i++)
		if (share_tensor(&g->tensors[i]) < 0) {
			fl_error_set(err, "out of memory sharing the values of "
				     "tensor \"%s\"",
				     fl_error_name(g->tensors[i].name));
			return -1;
		}
	return 0;
}

/* A malloc'd copy of n items of `size` bytes (at least one item). */
static void *dup_items(const void *src, int64_t n, size_t size)
{
	void *d = malloc((size_t)(n > 0 ? n : 1) * size);

	if (d && n > 0)
		memcpy(d, src, (size_t)n * size);
	return d;
}

int fl_tensor_copy_values(fl_tensor *dst, const fl_tensor *src)
{
	dst->shared = NULL;
	dst->data = NULL;
	dst->ints = NULL;
	dst->n_data = src->n_data;
	if (src->shared) {
		dst->shared = values_ref(src->shared);
		dst->data = src->data;
		dst->ints = src->ints;
		return 0;
	}
	if (src->data && !(dst->data = dup_items(src->data, src->n_data,
						 sizeof *src->data)))
		return -1;
	if (src->ints && !(dst->ints = dup_items(src->ints, src->n_data,
						 sizeof *src->ints))) {
		free(dst->data);
		dst->data = NULL;
		return -1;
	}
	return 0;
}

int64_t fl_graph_owned_value_bytes(const fl_graph *g)
{
	int64_t n = 0;

	for (int i = 0; i < g->n_tensors; i++) {
		const fl_tensor *t = &g->tensors[i];

		if (t->shared)
			continue;
		if (t->data)
			n += t->n_data * (int64_t)sizeof *t->data;
		if (t->ints)
			n += t->n_data * (int64_t)sizeof *t->ints;
	}
	return n;
}
