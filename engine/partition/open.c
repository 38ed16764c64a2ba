/* Partition step 2 (DESIGN 1.2, APOLLO Fig. 3): open compound ops.
 * softmax, layernorm, gelu, dense, attention ... are replaced by the
 * primitives of their expansion in the op library, erasing the op
 * boundary; the work is fl_graph_open_compounds (ir/expand.c), shared
 * with fl_graph_expand_compounds.
 *
 * Needs: st->graph and st->part.cluster_of (cluster.c).
 * Changes: st->graph becomes a new graph (tensor indices kept, primitives
 * in source order, each expansion where its compound op stood);
 * cluster_of and n_ops follow the new ops (an opened op's primitives are
 * in its cluster).
 * Decides: each compound op opened, in source order (one event naming it
 * and the primitives it produced).  When the budget runs out the rest
 * stay compound and the pass pauses. */
#include <stdio.h>
#include <stdlib.h>

#include "passes_impl.h"

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
