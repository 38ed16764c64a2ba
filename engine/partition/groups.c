/* Micro-graph bookkeeping for merging passes (see groups.h). */
#include "groups_impl.h"
#include "rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


struct fl_groups {
	int n;			/* ops == initial micro-graphs */
	int *cons_start, *cons;	/* consumer ops of each op (CSR) */
	int *ord;		/* micro-graph -> slot in topological order */
	int *at_slot;		/* slot -> micro-graph, -1: free */
	fl_kind_set (*kinds)[4];	/* per group and type: member op kinds */
	/* constraint membership: per group, nw words of one bit per
	 * constraint (side_a[g * nw + w]); as many words as the constraints
	 * need, so that feedback may forbid many merges at once */
	uint64_t *side_a, *side_b;
	int nw, n_cons;
	char (*cons_desc)[300];
	int *mark, stamp;	/* per group: visited in DFS `stamp` */
	int *win_mark;		/* per group: in the window `stamp` */
	int *stack, *window;
};

void fl_groups_free(struct fl_groups *gx)
{
	if (!gx)
		return;
	free(gx->cons_start);
	free(gx->cons);
	free(gx->ord);
	free(gx->at_slot);
	free(gx->kinds);
	free(gx->side_a);
	free(gx->side_b);
	free(gx->cons_desc);
	free(gx->mark);
	free(gx->win_mark);
	free(gx->stack);
	free(gx->window);
	free(gx);
}

int fl_groups_resolve(const fl_graph *g, const char *name, int **idx)
{
	int n = 0, exact = fl_graph_find_op(g, name);

	*idx = malloc((size_t)(g->n_ops + 1) * sizeof **idx);
	if (!*idx)
		return -1;
	if (exact >= 0) {
		(*idx)[n++] = exact;
		return n;
	}
	for (int i = 0; i < g->n_ops; i++)
		if (g->ops[i].prov.origin && !strcmp(g->ops[i].prov.origin, name))
			(*idx)[n++] = i;
	return n;
}

static int build_consumers(struct fl_groups *gx, const fl_graph *g)
{
	int n_edges = 0, *fill;

	gx->cons_start = calloc((size_t)g->n_ops + 2, sizeof *gx->cons_start);
	if (!gx->cons_start)
		return -1;
	for (int i = 0; i < g->n_ops; i++)
		for (int k = 0; k < g->ops[i].n_in; k++) {
			int p = g->tensors[g->ops[i].in[k]].producer;

			if (p >= 0) {
				gx->cons_start[p + 1]++;
				n_edges++;
			}
		}
	for (int i = 0; i < g->n_ops; i++)
		gx->cons_start[i + 1] += gx->cons_start[i];
	gx->cons = malloc((size_t)(n_edges + 1) * sizeof *gx->cons);
	fill = calloc((size_t)g->n_ops + 1, sizeof *fill);
	if (!gx->cons || !fill) {
		free(fill);
		return -1;
	}
	for (int i = 0; i < g->n_ops; i++)
		for (int k = 0; k < g->ops[i].n_in; k++) {
			int p = g->tensors[g->ops[i].in[k]].producer;

			if (p >= 0)
				gx->cons[gx->cons_start[p] + fill[p]++] = i;
		}
	free(fill);
	return 0;
}

/* Marks the ops of one side of constraint k in the per-op masks. */
static int mark_side(fl_state *st, const char *name, uint64_t *side, int nw,
		     int k)
{
	int *idx, n = fl_groups_resolve(st->graph, name, &idx);

	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++)
		side[(size_t)idx[i] * (size_t)nw + (size_t)(k / 64)] |=
			1ull << (k % 64);
	free(idx);
	return 0;
}

/* Constraint i: never-fuse pairs, then feedback given as options, then
 * feedback found during this run. */
static const fl_op_pair *constraint(const fl_state *st, int i,
				    const char **reason)
{
	const fl_engine_opts *o = st->opts;

	*reason = NULL;
	if (i < o->n_never)
		return &o->never_fuse[i];
	i -= o->n_never;
	if (i < o->n_feedback) {
		*reason = o->feedback_reason[i];
		return &o->feedback[i];
	}
	i -= o->n_feedback;
	*reason = st->feedback_reason[i];
	return &st->feedback[i];
}

/* How many constraints: never-fuse pairs and feedback of both kinds. */
static int n_constraints(const fl_state *st)
{
	const fl_engine_opts *o = st->opts;

	return o->n_never + o->n_feedback + st->n_feedback;
}

static int build_constraints(fl_state *st, struct fl_groups *gx)
{
	int n = n_constraints(st);

	for (int i = 0; i < n; i++) {
		const char *reason;
		const fl_op_pair *p = constraint(st, i, &reason);

		if (!reason)
			snprintf(gx->cons_desc[i], sizeof gx->cons_desc[i],
				 "--never-fuse %s,%s", p->a, p->b);
		else
			snprintf(gx->cons_desc[i], sizeof gx->cons_desc[i],
				 "feedback forbids merging %s with %s: %s", p->a,
				 p->b, reason);
		if (mark_side(st, p->a, gx->side_a, gx->nw, i) < 0 ||
		    mark_side(st, p->b, gx->side_b, gx->nw, i) < 0)
			return -1;
		gx->n_cons = i + 1;
	}
	return 0;
}

static int alloc_groups(fl_partition *part, int n)
{
	part->groups = calloc((size_t)n + 1, sizeof *part->groups);
	part->group_of = malloc(((size_t)n + 1) * sizeof *part->group_of);
	if (!part->groups || !part->group_of)
		return -1;
	part->cap_groups = n;
	for (int i = 0; i < n; i++) {
		fl_micro_graph *m = &part->groups[i];

		m->id = i;
		m->alive = true;
		m->members = malloc(sizeof *m->members);
		if (!m->members)
			return -1;
		m->members[0] = i;
		m->n_members = m->cap_members = 1;
		m->type = part->type_of[i];
		m->cluster = part->cluster_of[i];
		part->group_of[i] = i;
	}
	part->n_groups = n;
	return 0;
}

int fl_groups_init(fl_state *st, fl_error *err)
{
	const fl_graph *g = st->graph;
	struct fl_groups *gx;
	int n = g->n_ops;

	if (st->groups)
		return 0;
	gx = calloc(1, sizeof *gx);
	if (!gx)
		goto oom;
	st->groups = gx;
	gx->n = n;
	gx->ord = malloc(((size_t)n + 1) * sizeof *gx->ord);
	gx->at_slot = malloc(((size_t)n + 1) * sizeof *gx->at_slot);
	gx->kinds = calloc((size_t)n + 1, sizeof *gx->kinds);
	gx->nw = (n_constraints(st) + 63) / 64;
	if (gx->nw < 1)
		gx->nw = 1;
	gx->side_a = calloc(((size_t)n + 1) * (size_t)gx->nw,
			    sizeof *gx->side_a);
	gx->side_b = calloc(((size_t)n + 1) * (size_t)gx->nw,
			    sizeof *gx->side_b);
	gx->cons_desc = calloc((size_t)gx->nw * 64, sizeof *gx->cons_desc);
	gx->mark = calloc((size_t)n + 1, sizeof *gx->mark);
	gx->win_mark = calloc((size_t)n + 1, sizeof *gx->win_mark);
	gx->stack = malloc(((size_t)n + 1) * sizeof *gx->stack);
	gx->window = malloc(((size_t)n + 1) * sizeof *gx->window);
	if (!gx->ord || !gx->at_slot || !gx->kinds || !gx->side_a ||
	    !gx->side_b || !gx->cons_desc || !gx->mark || !gx->win_mark ||
	    !gx->stack || !gx->window || build_consumers(gx, g) < 0 ||
	    alloc_groups(&st->part, n) < 0 || build_constraints(st, gx) < 0)
		goto oom;
	for (int i = 0; i < n; i++) {
		gx->ord[i] = gx->at_slot[i] = i;
		fl_kind_set_add(&gx->kinds[i][st->part.type_of[i]],
				g->ops[i].kind);
	}
	return 0;
oom:
	fl_error_set(err, "out of memory setting up micro-graphs");
	return -1;
}

fl_kind_set fl_groups_kinds(const fl_state *st, int g)
{
	return st->groups->kinds[g][st->part.groups[g].type];
}

/* Live micro-graphs strictly between slots lo and hi, in slot order. */
static int collect_window(struct fl_groups *gx, int lo, int hi)
{
	int n = 0;

	gx->stamp++;
	for (int s = lo + 1; s < hi; s++) {
		int g = gx->at_slot[s];

		if (g >= 0) {
			gx->window[n++] = g;
			gx->win_mark[g] = gx->stamp;
		}
	}
	return n;
}

/* Backward search from c over micro-graphs of the window.  Fills the
 * stack with the ancestors of c found there (marked with the stamp) and
 * returns the op through which p reaches c indirectly, or -1. */
static int search_back(fl_state *st, int p, int c, int *n_found)
{
	struct fl_groups *gx = st->groups;
	const fl_graph *g = st->graph;
	int top = 0, found = 0;

	gx->stack[top++] = c;
	while (top > 0) {
		int h = gx->stack[--top];
		const fl_micro_graph *m = &st->part.groups[h];

		for (int i = 0; i < m->n_members; i++) {
			const fl_op *op = &g->ops[m->members[i]];

			for (int k = 0; k < op->n_in; k++) {
				int q = g->tensors[op->in[k]].producer, pg;

				if (q < 0)
					continue;
				pg = st->part.group_of[q];
				if (pg == p && h != c) {
					*n_found = found;
					return m->members[i];
				}
				if (gx->win_mark[pg] != gx->stamp ||
				    gx->mark[pg] == gx->stamp)
					continue;
				gx->mark[pg] = gx->stamp;
				gx->stack[top++] = pg;
				found++;
			}
		}
	}
	*n_found = found;
	return -1;
}

static const char *first_name(const fl_state *st, int g)
{
	return st->graph->ops[st->part.groups[g].members[0]].name;
}

static int check_fence(const fl_state *st, int x, int y, char *why, size_t n)
{
	const fl_micro_graph *a = &st->part.groups[x], *b = &st->part.groups[y];

	if (a->cluster < 0 || b->cluster < 0) {
		snprintf(why, n, "%s is an op the engine cannot model: it is "
			 "excluded from fusion", first_name(st, a->cluster < 0 ? x : y));
		return 1;
	}
	if (a->cluster != b->cluster) {
		snprintf(why, n, "they are in different sub-graphs (F%d and F%d)",
			 a->cluster + 1, b->cluster + 1);
		return 1;
	}
	return 0;
}

/* Whether micro-graph g holds a scatter_elements (whatever its type). */
static bool holds_scatter(const fl_state *st, int g)
{
	for (int t = 0; t < 4; t++)
		if (fl_kind_set_has(&st->groups->kinds[g][t],
				    FL_OP_SCATTER_ELEMENTS))
			return true;
	return false;
}

/* A scatter writes elements chosen by data: a consumer fused with it
 * could not be told which of its instances produce a tile's elements
 * (recomputing them would combine twice), so it keeps a kernel of its
 * own under any rules. */
static int check_scatter(const fl_state *st, int x, int y, char *why,
			 size_t n)
{
	int g = holds_scatter(st, x) ? x : holds_scatter(st, y) ? y : -1;

	if (g < 0)
		return 0;
	snprintf(why, n, "%s writes by data-dependent indices: it keeps a "
		 "kernel of its own", first_name(st, g));
	return 1;
}

static int check_constraints(const fl_state *st, int x, int y, char *why,
			     size_t n)
{
	const struct fl_groups *gx = st->groups;

	const uint64_t *ax = gx->side_a + (size_t)x * (size_t)gx->nw;
	const uint64_t *bx = gx->side_b + (size_t)x * (size_t)gx->nw;
	const uint64_t *ay = gx->side_a + (size_t)y * (size_t)gx->nw;
	const uint64_t *by = gx->side_b + (size_t)y * (size_t)gx->nw;

	for (int w = 0; w < gx->nw; w++) {
		uint64_t hit = (ax[w] & by[w]) | (bx[w] & ay[w]);

		if (hit) {
			snprintf(why, n, "%s", gx->cons_desc[w * 64 +
							     __builtin_ctzll(hit)]);
			return 1;
		}
	}
	return 0;
}

int fl_groups_check(fl_state *st, int x, int y, char *why, size_t n)
{
	struct fl_groups *gx = st->groups;
	int p = gx->ord[x] < gx->ord[y] ? x : y, c = p == x ? y : x;
	int through, found;

	if (x == y)
		return 0;
	if (check_fence(st, x, y, why, n) || check_scatter(st, x, y, why, n) ||
	    check_constraints(st, x, y, why, n))
		return 1;
	if (collect_window(gx, gx->ord[p], gx->ord[c]) == 0)
		return 0;
	through = search_back(st, p, c, &found);
	if (through >= 0) {
		snprintf(why, n, "merging would create a cycle through %s",
			 st->graph->ops[through].name);
		return 1;
	}
	return 0;
}

/* New slots for the window after merging p into c (or c into p): the
 * ancestors of c in the window first, then the merged node, then the rest
 * of the window, over the sorted slots they and p, c occupied. */
static void reslot(fl_state *st, int p, int c, int merged, int n_win)
{
	struct fl_groups *gx = st->groups;
	int *seq = malloc((size_t)(n_win + 2) * sizeof *seq);
	int *slots = malloc((size_t)(n_win + 2) * sizeof *slots);
	int n = 0, ns = 0, found;

	if (!seq || !slots) {
		free(seq);
		free(slots);
		return;
	}
	gx->stamp++;	/* fresh marks for the ancestors search */
	for (int i = 0; i < n_win; i++)
		gx->win_mark[gx->window[i]] = gx->stamp;
	search_back(st, p, c, &found);
	slots[ns++] = gx->ord[p];
	for (int i = 0; i < n_win; i++) {
		slots[ns++] = gx->ord[gx->window[i]];
		if (gx->mark[gx->window[i]] == gx->stamp)
			seq[n++] = gx->window[i];
	}
	slots[ns++] = gx->ord[c];
	seq[n++] = merged;
	for (int i = 0; i < n_win; i++)
		if (gx->mark[gx->window[i]] != gx->stamp)
			seq[n++] = gx->window[i];
	/* window slots are already ascending (collected in slot order) */
	for (int i = 0; i < ns; i++)
		gx->at_slot[slots[i]] = -1;
	for (int i = 0; i < n; i++) {
		gx->ord[seq[i]] = slots[i];
		gx->at_slot[slots[i]] = seq[i];
	}
	free(seq);
	free(slots);
}

/* Merges from's members into into's, keeping them ascending (both lists
 * are ascending and disjoint): a merge from the back, in place. */
static int merge_members(fl_micro_graph *into, const fl_micro_graph *from)
{
	int need = into->n_members + from->n_members;
	int i = into->n_members - 1, j = from->n_members - 1, k = need - 1;

	if (need > into->cap_members) {
		int cap = need > 2 * into->cap_members ? need : 2 * into->cap_members;
		int *m = realloc(into->members, (size_t)cap * sizeof *m);

		if (!m)
			return -1;
		into->members = m;
		into->cap_members = cap;
	}
	while (j >= 0)
		into->members[k--] = i >= 0 && into->members[i] > from->members[j]
			? into->members[i--] : from->members[j--];
	into->n_members = need;
	return 0;
}

static void join_history(fl_micro_graph *into, const fl_micro_graph *from,
			 const char *rule)
{
	char h[3 * sizeof into->history];

	snprintf(h, sizeof h, "%s%s%s%s%s", from->history,
		 *from->history && *into->history ? " " : "", into->history,
		 *from->history || *into->history ? " " : "", rule);
	snprintf(into->history, sizeof into->history, "%.*s",
		 (int)sizeof into->history - 1, h);
}

int fl_groups_merge(fl_state *st, int into, int from, fl_op_type type,
		    const char *rule, fl_error *err)
{
	struct fl_groups *gx = st->groups;
	fl_micro_graph *a = &st->part.groups[into], *b = &st->part.groups[from];
	int p = gx->ord[into] < gx->ord[from] ? into : from;
	int c = p == into ? from : into;
	int n_win = collect_window(gx, gx->ord[p], gx->ord[c]);

	if (n_win > 0) {
		reslot(st, p, c, into, n_win);
	} else {
		int slot = gx->ord[c];

		gx->at_slot[gx->ord[p]] = -1;
		gx->ord[into] = slot;
		gx->at_slot[slot] = into;
	}
	if (merge_members(a, b) < 0) {
		fl_error_set(err, "out of memory merging micro-graphs");
		return -1;
	}
	for (int i = 0; i < b->n_members; i++)
		st->part.group_of[b->members[i]] = into;
	for (int t = 0; t < 4; t++)
		for (int w = 0; w < FL_KIND_WORDS; w++)
			gx->kinds[into][t].w[w] |= gx->kinds[from][t].w[w];
	for (int w = 0; w < gx->nw; w++) {
		size_t i = (size_t)into * (size_t)gx->nw + (size_t)w;
		size_t f = (size_t)from * (size_t)gx->nw + (size_t)w;

		gx->side_a[i] |= gx->side_a[f];
		gx->side_b[i] |= gx->side_b[f];
	}
	join_history(a, b, rule);
	a->type = type;
	b->alive = false;
	free(b->members);
	b->members = NULL;
	b->n_members = 0;
	return 0;
}

/* A copy of n items of `size` bytes from src, NULL when src is NULL. */
static void *dup_array(const void *src, size_t n, size_t size, bool *oom)
{
	void *d;

	if (!src)
		return NULL;
	d = malloc(n * size + 1);
	if (!d) {
		*oom = true;
		return NULL;
	}
	memcpy(d, src, n * size);
	return d;
}

struct fl_groups *fl_groups_copy(const struct fl_groups *gx)
{
	struct fl_groups *c;
	size_t n = (size_t)gx->n + 1;
	bool oom = false;

	c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	*c = *gx;
	c->cons_start = dup_array(gx->cons_start, n + 1, sizeof *c->cons_start,
				  &oom);
	c->cons = dup_array(gx->cons, (size_t)gx->cons_start[gx->n] + 1,
			    sizeof *c->cons, &oom);
	c->ord = dup_array(gx->ord, n, sizeof *c->ord, &oom);
	c->at_slot = dup_array(gx->at_slot, n, sizeof *c->at_slot, &oom);
	c->kinds = dup_array(gx->kinds, n, sizeof *c->kinds, &oom);
	c->side_a = dup_array(gx->side_a, n * (size_t)gx->nw, sizeof *c->side_a,
			      &oom);
	c->side_b = dup_array(gx->side_b, n * (size_t)gx->nw, sizeof *c->side_b,
			      &oom);
	c->cons_desc = dup_array(gx->cons_desc, (size_t)gx->nw * 64,
				 sizeof *c->cons_desc,
				 &oom);
	c->mark = dup_array(gx->mark, n, sizeof *c->mark, &oom);
	c->win_mark = dup_array(gx->win_mark, n, sizeof *c->win_mark, &oom);
	c->stack = dup_array(gx->stack, n, sizeof *c->stack, &oom);
	c->window = dup_array(gx->window, n, sizeof *c->window, &oom);
	if (oom) {
		fl_groups_free(c);
		return NULL;
	}
	return c;
}
