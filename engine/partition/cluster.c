/* Partition step 1 (DESIGN 1.2): extract clusters.  Ops the engine
 * cannot model (custom ops) are excluded; the connected pieces of the rest
 * are the sub-graphs F1..Fm.
 *
 * Needs: a validated graph in topological order (after preprocess).
 * Changes: st->part.cluster_of (op -> sub-graph, -1 for an excluded op),
 * n_clusters, n_ops; the graph is not changed.
 * Decides: each custom op excluded (one event each), then each sub-graph
 * (one event each, naming its first ops). */
#include <stdlib.h>

#include "passes_impl.h"

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
