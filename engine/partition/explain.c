/* engine_explain: why two ops are (not) in one micro-graph.
 *
 * After a complete run: if the ops share a micro-graph, say which and how
 * it was built.  Otherwise find the first reason, in this order: an op the
 * engine cannot model, different sub-graphs, a user or feedback
 * constraint, no data path at all, and else the first edge on the data
 * path whose ends were not merged -- explained by a logged rejection, a
 * rule switched off, a rule's op-kind list, or no rule for the type pair. */
#include "explain_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "groups_impl.h"

/* Path from op `from` to op `to` following data (from earlier to later);
 * prev[] receives the BFS tree.  Returns true if one exists. */
static bool find_path(const fl_graph *g, int from, int to, int *prev)
{
	int *queue = malloc(((size_t)g->n_ops + 1) * sizeof *queue);
	int head = 0, tail = 0;
	bool found = false;

	if (!queue)
		return false;
	for (int i = 0; i < g->n_ops; i++)
		prev[i] = -2;
	/* Search backwards from `to` over producers until `from`. */
	queue[tail++] = to;
	prev[to] = -1;
	while (head < tail && !found) {
		int v = queue[head++];

		for (int k = 0; k < g->ops[v].n_in; k++) {
			int p = g->tensors[g->ops[v].in[k]].producer;

			if (p < 0 || prev[p] != -2)
				continue;
			prev[p] = v;	/* next op towards `to` */
			if (p == from) {
				found = true;
				break;
			}
			queue[tail++] = p;
		}
	}
	free(queue);
	return found;
}

static const fl_event *find_rejection(const fl_state *st, const char *x,
				      const char *y)
{
	for (int i = fl_event_log_count(st->log) - 1; i >= 0; i--) {
		const fl_event *e = fl_event_log_get(st->log, i);

		if (e->kind == FL_EV_REJECTED && e->n_ops == 2 &&
		    !strcmp(e->ops[0], x) && !strcmp(e->ops[1], y))
			return e;
	}
	return NULL;
}

/* Explains why the micro-graphs of ops x -> y (an edge) were not merged. */
static void explain_edge(const fl_state *st, int x, int y, char *buf,
			 size_t n)
{
	const fl_graph *g = st->graph;
	const fl_partition *p = &st->part;
	const fl_micro_graph *gx = &p->groups[p->group_of[x]];
	const fl_micro_graph *gy = &p->groups[p->group_of[y]];
	const fl_event *rej = find_rejection(st, g->ops[x].name, g->ops[y].name);
	const fl_rule_table *t = &st->opts->rules;
	unsigned bx = 1u << gx->type, by = 1u << gy->type;
	const fl_rule *off = NULL, *kinds = NULL, *later = NULL;

	if (rej) {
		snprintf(buf, n, "%s", rej->reason);
		return;
	}
	for (int i = 0; i < t->n; i++) {
		const fl_rule *r = &t->rules[i];

		if (!(r->producer & bx) || !(r->consumer & by))
			continue;
		if (r->stage != FL_STAGE_PARTITION)
			later = later ? later : r;
		else if (!r->enabled)
			off = off ? off : r;
		else
			kinds = kinds ? kinds : r;
	}
	if (kinds)
		snprintf(buf, n, "%s (%s->%s) does not apply: its op-kind lists "
			 "exclude %s or %s", kinds->id, fl_op_type_name(gx->type),
			 fl_op_type_name(gy->type), fl_op_kind_name(g->ops[x].kind),
			 fl_op_kind_name(g->ops[y].kind));
	else if (off)
		snprintf(buf, n, "rule %s (%s->%s) is switched off", off->id,
			 fl_op_type_name(gx->type), fl_op_type_name(gy->type));
	else if (later)
		snprintf(buf, n, "no rule for %s->%s at partition time (%s merges "
			 "it later, in layer 2)", fl_op_type_name(gx->type),
			 fl_op_type_name(gy->type), later->id);
	else
		snprintf(buf, n, "no rule for %s->%s",
			 fl_op_type_name(gx->type), fl_op_type_name(gy->type));
}

/* Reason for the pair of single ops u, v (in different micro-graphs). */
static void explain_ops(fl_state *st, int u, int v, char *buf, size_t n)
{
	const fl_graph *g = st->graph;
	const fl_partition *p = &st->part;
	int *prev = malloc(((size_t)g->n_ops + 1) * sizeof *prev);
	int from = u < v ? u : v, to = u < v ? v : u;
	char why[300];

	if (!prev) {
		snprintf(buf, n, "out of memory");
		return;
	}
	/* Fences and constraints first; a cycle is explained by the path. */
	if (fl_groups_check(st, p->group_of[u], p->group_of[v], why,
			    sizeof why) &&
	    strncmp(why, "merging would", 13) != 0) {
		snprintf(buf, n, "%s", why);
	} else if (!find_path(g, from, to, prev)) {
		snprintf(buf, n, "no data path connects them, and partition "
			 "rules only merge a producer into its consumer");
	} else {
		int x = from;

		while (p->group_of[prev[x]] == p->group_of[x])
			x = prev[x];
		explain_edge(st, x, prev[x], why, sizeof why);
		if (x == from && prev[x] == to)
			snprintf(buf, n, "%s", why);
		else
			snprintf(buf, n, "on the path between them, %s -> %s was "
				 "not merged: %s", g->ops[x].name,
				 g->ops[prev[x]].name, why);
	}
	free(prev);
}

static int resolve(const fl_state *st, const char *name, int **idx,
		   fl_error *err)
{
	int k = fl_groups_resolve(st->graph, name, idx);

	if (k == 0) {
		free(*idx);
		fl_error_set(err, "no op named \"%s\"", name);
		return -1;
	}
	if (k < 0)
		fl_error_set(err, "out of memory");
	return k;
}

int fl_explain(const fl_state *cst, const char *a, const char *b, char *buf,
	       size_t n, fl_error *err)
{
	fl_state *st = (fl_state *)cst;	/* checks use scratch marks only */
	const fl_partition *p = &st->part;
	int *ia, *ib, na, nb, rc = 0;

	na = resolve(st, a, &ia, err);
	if (na < 0)
		return -1;
	nb = resolve(st, b, &ib, err);
	if (nb < 0) {
		free(ia);
		return -1;
	}
	for (int i = 0; i < na && !rc; i++)
		for (int j = 0; j < nb && !rc; j++)
			if (p->group_of[ia[i]] == p->group_of[ib[j]]) {
				const fl_micro_graph *m = &p->groups[p->group_of[ia[i]]];

				snprintf(buf, n, "yes: %s and %s are in micro-graph "
					 "G%d (%s, built by %s)",
					 st->graph->ops[ia[i]].name,
					 st->graph->ops[ib[j]].name, m->id,
					 fl_op_type_name(m->type),
					 *m->history ? m->history : "no merge");
				rc = 1;
			}
	if (!rc)
		explain_ops(st, ia[na - 1], ib[0], buf, n);
	free(ia);
	free(ib);
	return rc;
}
