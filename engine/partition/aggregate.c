/* Partition step 4b (DESIGN 1.2): APOLLO's Algorithm 1.  Every primitive
 * starts as its own micro-graph (constrain.c made them); rules are tried
 * in priority order, and for each rule producer->consumer pairs are merged
 * until nothing changes.  Merges never create a cycle (groups.c).
 *
 * Needs: classified primitives (st->part.type_of) and the micro-graphs
 * after user constraints (constrain.c).
 * Changes: st->part micro-graphs (members, type, history) and group_of.
 * Decides: each merge (naming the rule), and each refused merge (logged
 * once per rule and op pair, with the reason). */
#include <stdlib.h>

#include "groups_impl.h"
#include "passes_impl.h"

static const char *op_name(const fl_state *st, int i)
{
	return st->graph->ops[i].name;
}

/* Op pairs already refused under a rule, so each is logged once. */
typedef struct seen_set {
	int cap, n;
	uint64_t *keys;		/* 0 = empty */
} seen_set;

static bool seen_add(seen_set *s, uint64_t key)
{
	uint64_t *old = s->keys;
	int oldcap = s->cap, i;

	if (2 * (s->n + 1) > s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->keys = calloc((size_t)s->cap, sizeof *s->keys);
		if (!s->keys) {
			s->keys = old;
			s->cap = oldcap;
			return true;
		}
		s->n = 0;
		for (int j = 0; j < oldcap; j++)
			if (old[j])
				seen_add(s, old[j]);
		free(old);
	}
	i = (int)((key * 0x9e3779b97f4a7c15ull) >> 33) & (s->cap - 1);
	while (s->keys[i]) {
		if (s->keys[i] == key)
			return false;
		i = (i + 1) & (s->cap - 1);
	}
	s->keys[i] = key;
	s->n++;
	return true;
}

static fl_kind_set kind_set(const fl_op_kind *k, int n)
{
	fl_kind_set m = {{0}};

	for (int i = 0; i < n; i++)
		fl_kind_set_add(&m, k[i]);
	return m;
}

/* Whether a has a kind that list (n kinds) has (inside) or lacks
 * (!inside). */
static bool any_kind(fl_kind_set a, const fl_op_kind *list, int n,
		     bool inside)
{
	fl_kind_set m = kind_set(list, n);

	for (int w = 0; w < FL_KIND_WORDS; w++)
		if (a.w[w] & (inside ? m.w[w] : ~m.w[w]))
			return true;
	return false;
}

/* Do the op-kind lists of rule r allow producer gp and consumer gc? */
static bool kinds_allow(const fl_state *st, const fl_rule *r, int gp, int gc)
{
	fl_kind_set pk = fl_groups_kinds(st, gp), ck = fl_groups_kinds(st, gc);

	if (r->n_p_only && any_kind(pk, r->p_only, r->n_p_only, false))
		return false;
	if (r->n_p_except && any_kind(pk, r->p_except, r->n_p_except, true))
		return false;
	if (r->n_c_only && any_kind(ck, r->c_only, r->n_c_only, false))
		return false;
	if (r->n_c_except && any_kind(ck, r->c_except, r->n_c_except, true))
		return false;
	return true;
}

static bool rule_matches(const fl_state *st, const fl_rule *r, int gp, int gc)
{
	const fl_micro_graph *p = &st->part.groups[gp], *c = &st->part.groups[gc];

	return (r->producer & (1u << p->type)) && (r->consumer & (1u << c->type)) &&
	       p->cluster >= 0 && c->cluster >= 0 && kinds_allow(st, r, gp, gc);
}

/* Tries rule r on the edge from op p to op c.  Returns 1 if merged, 0 if
 * not, FL_PASS_PAUSED + 10 when out of budget, -1 on error. */
static int try_edge(fl_state *st, const fl_rule *r, int ri, int p, int c,
		    seen_set *seen, fl_error *err)
{
	int gp = st->part.group_of[p], gc = st->part.group_of[c];
	const char *ops[2] = {op_name(st, p), op_name(st, c)};
	fl_op_type tp, tc;
	char why[300];

	if (gp == gc || !rule_matches(st, r, gp, gc))
		return 0;
	tp = st->part.groups[gp].type;
	tc = st->part.groups[gc].type;
	if (fl_groups_check(st, gp, gc, why, sizeof why)) {
		if (!seen_add(seen, ((uint64_t)p * (uint64_t)st->graph->n_ops + (uint64_t)c) * 64 + (uint64_t)ri + 1))
			return 0;
		if (!fl_state_decide(st))
			return FL_PASS_PAUSED + 10;
		fl_state_log(st, FL_EV_REJECTED, r->id, ops, 2, gp, gc,
			     "%s: %s->%s merge of %s into %s rejected: %s", r->id,
			     fl_op_type_name(tp), fl_op_type_name(tc), ops[0],
			     ops[1], why);
		return 0;
	}
	if (!fl_state_decide(st))
		return FL_PASS_PAUSED + 10;
	if (fl_groups_merge(st, gc, gp, r->result, r->id, err) < 0)
		return -1;
	fl_state_log(st, FL_EV_MERGED, r->id, ops, 2, gp, gc,
		     "%s: %s->%s merge %s into %s (G%d into G%d)", r->id,
		     fl_op_type_name(tp), fl_op_type_name(tc), ops[0], ops[1], gp,
		     gc);
	return 1;
}

/* One sweep of rule r over every producer->consumer edge, in op order. */
static int sweep(fl_state *st, const fl_rule *r, int ri, seen_set *seen,
		 bool *changed, fl_error *err)
{
	const fl_graph *g = st->graph;

	for (int c = 0; c < g->n_ops; c++)
		for (int k = 0; k < g->ops[c].n_in; k++) {
			int p = g->tensors[g->ops[c].in[k]].producer, rc;

			if (p < 0)
				continue;
			rc = try_edge(st, r, ri, p, c, seen, err);
			if (rc < 0 || rc == FL_PASS_PAUSED + 10)
				return rc < 0 ? -1 : FL_PASS_PAUSED;
			*changed |= rc == 1;
		}
	return FL_PASS_DONE;
}

int fl_pass_aggregate(fl_state *st, fl_error *err)
{
	const fl_rule_table *t = &st->opts->rules;
	seen_set seen = {0, 0, NULL};
	int rc = FL_PASS_DONE;

	if (fl_groups_init(st, err) < 0)
		return -1;
	for (int ri = 0; ri < t->n && rc == FL_PASS_DONE; ri++) {
		const fl_rule *r = &t->rules[ri];
		bool changed = true;

		if (!r->enabled || r->stage != FL_STAGE_PARTITION)
			continue;
		while (changed && rc == FL_PASS_DONE) {
			changed = false;
			rc = sweep(st, r, ri, &seen, &changed, err);
		}
	}
	free(seen.keys);
	return rc;
}
