/* Partition step 4a (DESIGN 1.2): user constraints, before APOLLO's
 * Algorithm 1 (aggregate.c).  --never-fuse pairs and the feedback of an
 * earlier run are recorded (groups.c refuses the merges they forbid);
 * --fuse pairs are merged at once when no cycle or constraint forbids it.
 *
 * Needs: classified primitives (st->part.type_of).
 * Changes: creates the micro-graphs (one per op, fl_groups_init) and
 * merges those --fuse asks for (type: the join of both types).
 * Decides: each --never-fuse pair and each feedback pair (logged), then
 * each --fuse pair (merged, or refused with the reason). */
#include <stdlib.h>
#include <string.h>

#include "groups_impl.h"
#include "passes_impl.h"

static int log_pairs(fl_state *st)
{
	const fl_engine_opts *o = st->opts;

	for (int i = 0; i < o->n_never; i++) {
		const char *ops[2] = {o->never_fuse[i].a, o->never_fuse[i].b};

		if (!fl_state_decide(st))
			return FL_PASS_PAUSED;
		fl_state_log(st, FL_EV_CONSTRAINED, "user", ops, 2, -1, -1,
			     "--never-fuse %s,%s: they will never share a "
			     "micro-graph", ops[0], ops[1]);
	}
	for (int i = 0; i < o->n_feedback; i++) {
		const char *ops[2] = {o->feedback[i].a, o->feedback[i].b};

		if (!fl_state_decide(st))
			return FL_PASS_PAUSED;
		fl_state_log(st, FL_EV_FEEDBACK, "feedback", ops, 2, -1, -1,
			     "merging %s with %s is forbidden on this run: %s",
			     ops[0], ops[1], o->feedback_reason[i]);
	}
	return FL_PASS_DONE;
}

/* Merges the micro-graphs of every op in idx[0..n-1] into the first one's;
 * stops at the first refusal (reason in why).  Returns the group or -1. */
static int force_merge(fl_state *st, const int *idx, int n, char *why,
		       size_t wn, fl_error *err)
{
	int into = st->part.group_of[idx[0]];

	for (int i = 1; i < n; i++) {
		int from = st->part.group_of[idx[i]];
		fl_op_type t;

		if (from == into)
			continue;
		if (fl_groups_check(st, into, from, why, wn))
			return -1;
		t = fl_type_join(st->part.groups[into].type,
				 st->part.groups[from].type);
		if (fl_groups_merge(st, into, from, t, "user", err) < 0)
			return -2;
	}
	return into;
}

static int apply_fuse(fl_state *st, const fl_op_pair *p, fl_error *err)
{
	int *a, *b, na = fl_groups_resolve(st->graph, p->a, &a);
	int nb = fl_groups_resolve(st->graph, p->b, &b), *all, g;
	const char *ops[2] = {p->a, p->b};
	char why[300];

	if (na < 0 || nb < 0 || !(all = malloc((size_t)(na + nb + 1) * sizeof *all))) {
		free(a);
		free(b);
		fl_error_set(err, "out of memory");
		return -1;
	}
	memcpy(all, a, (size_t)na * sizeof *a);
	memcpy(all + na, b, (size_t)nb * sizeof *b);
	g = na + nb > 0 ? force_merge(st, all, na + nb, why, sizeof why, err) : -1;
	free(a);
	free(b);
	free(all);
	if (g == -2)
		return -1;
	if (g < 0)
		fl_state_log(st, FL_EV_REJECTED, "user", ops, 2, -1, -1,
			     "--fuse %s,%s refused: %s", p->a, p->b, why);
	else
		fl_state_log(st, FL_EV_CONSTRAINED, "user", ops, 2, g, -1,
			     "--fuse %s,%s: put together in micro-graph G%d",
			     p->a, p->b, g);
	return 0;
}

int fl_pass_constrain(fl_state *st, fl_error *err)
{
	int rc;

	if (fl_groups_init(st, err) < 0)
		return -1;
	rc = log_pairs(st);
	if (rc != FL_PASS_DONE)
		return rc;
	for (int i = 0; i < st->opts->n_fuse; i++) {
		if (!fl_state_decide(st))
			return FL_PASS_PAUSED;
		if (apply_fuse(st, &st->opts->fuse[i], err) < 0)
			return -1;
	}
	return FL_PASS_DONE;
}
