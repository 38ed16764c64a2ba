/* Layer 1 (DESIGN 1.3; APOLLO 4.1, MICRO 2020): one kernel per alive
 * micro-graph, in a topological order of the micro-graphs.
 *
 * For each micro-graph the pass builds its polyhedral model (statements of
 * every member op from engine/poly.c, original schedule = the statements
 * in op order, each with its identity band), computes the dependences and
 * asks isl's scheduler for a maximize-coincidence schedule under an
 * operation budget.  Then tile-then-fuse (tile.c), the canonical reduction
 * form and the placement of every tensor.  Each step is a decision (the
 * examples are from samples/micro2020_fig1.json and softmax.json):
 *
 *   scheduled  G3 -> fl_k1: 3 ops, 4 statements, 1 loop nest; outer
 *              coincidence (maximize coincidence split the live-outs);
 *              softmax.sum [4096 x r1024]: y-reduce
 *   tiled      fl_k0: tiled the live-out band of S3_relu (3 of 4 members
 *              parallel) by 64 x 32 x 32: 4 tiles; member 0 kept whole
 *              (the producers' footprint does not depend on it)
 *   extended   fl_k0: fused S0_quantize.round into the tiles through an
 *              extension node (recomputed as S1_0_r0): per-tile
 *              footprint 1 x 64 x 34 x 34, recompute 1.07x <= 1.50x
 *              / not fused: recompute 4.00x > 1.50x (...)
 *   placed     fl_k0: A_q tile-local: recomputed in each tile: tile-local
 *              buffer of 1 x 64 x 34 x 34 floats, recompute 1.07x
 *   feedback   split the micro-graph at the merge of e into h and
 *              partition again: isl scheduler ran out of its budget (1
 *              operations) on an E->E pattern
 *
 * Feedback (APOLLO's upward feedback): when the scheduler runs out of its
 * budget, or the live-out statements of a multi-op micro-graph end up in
 * different top-level loop nests (children of the outermost sequence or
 * set: no band can tile them together), the pass forbids the merge that
 * last grew the micro-graph and returns FL_PASS_RESTART; the engine then
 * partitions again.  A single-op micro-graph never causes feedback: it
 * falls back to its original schedule.
 *
 * Needs: st->part (alive micro-graphs), st->graph (primitive ops only).
 * Changes: st->program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/options.h>
#include <isl/schedule.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/union_set.h>

#include "passes_impl.h"
#include "layer1_impl.h"

/* ---- scheduling --------------------------------------------------------- */

/* Runs isl's scheduler under `budget` isl operations, with
 * maximize_coincidence (the "smart fuse" start for tile-then-fuse,
 * ISL_GUIDE 3) or, when `outer` is set, with outer_coincidence only,
 * which fuses more while keeping the outer band parallel.  Returns the
 * schedule or NULL; *quota tells whether the budget ran out.  The budget,
 * the operation count, the error and the options are reset afterwards:
 * the quota is sticky and would fail every later isl call on the
 * session's context (ISL_GUIDE 10.4). */
static isl_schedule *schedule_model(const fl_l1_model *m, long budget,
				    bool outer, bool *quota)
{
	isl_ctx *ctx = m->ctx;
	int max_coinc = isl_options_get_schedule_maximize_coincidence(ctx);
	int outer_coinc = isl_options_get_schedule_outer_coincidence(ctx);
	isl_schedule_constraints *sc;
	isl_schedule *s;

	sc = isl_schedule_constraints_on_domain(isl_union_set_copy(m->domain));
	sc = isl_schedule_constraints_set_validity(sc,
		isl_union_map_copy(m->validity));
	sc = isl_schedule_constraints_set_coincidence(sc,
		isl_union_map_copy(m->validity));
	sc = isl_schedule_constraints_set_proximity(sc,
		isl_union_map_copy(m->raw));
	isl_options_set_schedule_maximize_coincidence(ctx, !outer);
	isl_options_set_schedule_outer_coincidence(ctx, outer);
	isl_ctx_reset_error(ctx);
	isl_ctx_reset_operations(ctx);
	isl_ctx_set_max_operations(ctx, (unsigned long)(budget > 0 ? budget : 0));
	s = isl_schedule_constraints_compute_schedule(sc);
	*quota = !s && isl_ctx_last_error(ctx) == isl_error_quota;
	isl_ctx_set_max_operations(ctx, 0);
	isl_ctx_reset_operations(ctx);
	isl_ctx_reset_error(ctx);
	isl_options_set_schedule_maximize_coincidence(ctx, max_coinc);
	isl_options_set_schedule_outer_coincidence(ctx, outer_coinc);
	return s;
}

/* ---- micro-graph order -------------------------------------------------- */

/* The smallest member op of mg (members are not kept sorted). */
static int first_op(const fl_micro_graph *mg)
{
	int f = mg->members[0];

	for (int i = 1; i < mg->n_members; i++)
		f = mg->members[i] < f ? mg->members[i] : f;
	return f;
}

/* Producer -> consumer edges between different micro-graphs (repeats
 * kept), as pairs in *edges (malloc'd); returns their number or -1. */
static int group_edges(const fl_state *st, int **edges)
{
	const fl_graph *g = st->graph;
	const int *grp = st->part.group_of;
	int n = 0, cap = 0;

	for (int c = 0; c < g->n_ops; c++)
		cap += g->ops[c].n_in;
	*edges = malloc(2 * ((size_t)cap + 1) * sizeof **edges);
	if (!*edges)
		return -1;
	for (int c = 0; c < g->n_ops; c++)
		for (int k = 0; k < g->ops[c].n_in; k++) {
			int pr = g->tensors[g->ops[c].in[k]].producer;

			if (pr >= 0 && grp[pr] != grp[c]) {
				(*edges)[2 * n] = grp[pr];
				(*edges)[2 * n + 1] = grp[c];
				n++;
			}
		}
	return n;
}

/* Alive micro-graphs in a topological order (Kahn: a micro-graph after
 * those producing its inputs; among the ready ones the one with the
 * smallest member op first, i.e. program order).  Returns the count;
 * *order (malloc'd) receives group ids. */
static int group_order(const fl_state *st, int **order)
{
	const fl_partition *p = &st->part;
	int *edges, n_edges = group_edges(st, &edges), done = 0;
	int *indeg = calloc((size_t)p->n_groups + 1, sizeof *indeg);
	bool *placed = calloc((size_t)p->n_groups + 1, sizeof *placed);

	*order = malloc(((size_t)p->n_groups + 1) * sizeof **order);
	if (n_edges < 0 || !indeg || !placed || !*order) {
		free(n_edges < 0 ? NULL : edges);
		free(indeg);
		free(placed);
		free(*order);
		return -1;
	}
	for (int e = 0; e < n_edges; e++)
		indeg[edges[2 * e + 1]]++;
	for (;;) {
		int best = -1;

		for (int i = 0; i < p->n_groups; i++)
			if (p->groups[i].alive && !placed[i] && !indeg[i] &&
			    (best < 0 || first_op(&p->groups[i]) <
					 first_op(&p->groups[best])))
				best = i;
		if (best < 0)
			break;	/* all placed (a cycle cannot happen) */
		placed[best] = true;
		(*order)[done++] = best;
		for (int e = 0; e < n_edges; e++)
			if (edges[2 * e] == best)
				indeg[edges[2 * e + 1]]--;
	}
	free(edges);
	free(indeg);
	free(placed);
	return done;
}

/* ---- canonical reduction form ------------------------------------------- */

/* The canonical form of reduction op `op` (DESIGN 1.3 step 4): drop the
 * dims of extent 1, merge neighbouring dims that are both kept or both
 * reduced; no kept dim left: all-reduce; the innermost merged dim reduced:
 * y-reduce (e.g. a row reduction of a [rows, cols] tensor over cols);
 * otherwise x-reduce (the reduced dim lies outside the innermost kept
 * one, e.g. a column reduction over rows).  `why` gets the merged shape. */
static fl_reduce_form reduce_form_of(const fl_graph *g, int op, char *why,
				     size_t n)
{
	const fl_shape *in = &g->tensors[g->ops[op].in[0]].shape;
	const fl_shape *out = &g->tensors[g->ops[op].out[0]].shape;
	int64_t ext[FL_MAX_RANK];
	bool red[FL_MAX_RANK], any_kept = false, any_red = false;
	int runs = 0, len = 0;

	for (int d = 0; d < in->rank; d++) {
		bool r = out->dim[d] == 1;

		if (in->dim[d] == 1)
			continue;
		if (runs > 0 && red[runs - 1] == r) {
			ext[runs - 1] *= in->dim[d];
			continue;
		}
		red[runs] = r;
		ext[runs++] = in->dim[d];
		any_kept |= !r;
		any_red |= r;
	}
	why[0] = '\0';
	for (int i = 0; i < runs && len >= 0 && (size_t)len < n; i++)
		len += snprintf(why + len, n - (size_t)len, "%s%s%lld",
				i ? " x " : "[", red[i] ? "r" : "",
				(long long)ext[i]);
	if (len >= 0 && (size_t)len < n)
		snprintf(why + len, n - (size_t)len, "%s", runs ? "]" : "[]");
	if (!any_red)
		return FL_REDUCE_NONE;
	if (!any_kept)
		return FL_REDUCE_ALL;
	return red[runs - 1] ? FL_REDUCE_Y : FL_REDUCE_X;
}

static const char *reduce_form_name(fl_reduce_form f)
{
	switch (f) {
	case FL_REDUCE_ALL: return "all-reduce";
	case FL_REDUCE_X: return "x-reduce";
	case FL_REDUCE_Y: return "y-reduce";
	default: return "none";
	}
}

static bool is_reduction(fl_op_kind k)
{
	return k == FL_OP_REDUCE_SUM || k == FL_OP_REDUCE_MAX ||
	       k == FL_OP_REDUCE_MIN;
}

/* The form of the micro-graph: that of its last reduction (the live-out
 * one in an R micro-graph); a description goes into why. */
static fl_reduce_form group_reduce_form(const fl_l1_model *m, char *why,
					size_t n)
{
	char shape[96];

	why[0] = '\0';
	for (int i = m->n_ops - 1; i >= 0; i--) {
		int op = m->ops[i];
		fl_reduce_form f;

		if (!is_reduction(m->g->ops[op].kind))
			continue;
		f = reduce_form_of(m->g, op, shape, sizeof shape);
		snprintf(why, n, "; %s %s: %s", m->g->ops[op].name, shape,
			 reduce_form_name(f));
		return f;
	}
	return FL_REDUCE_NONE;
}

/* ---- the kernel ----------------------------------------------------------- */

/* Puts schedule s (kept) into the kernel, with parallel marks, its text
 * and its walkable tree. */
static int kernel_set_schedule(fl_kernel *k, __isl_keep isl_schedule *s,
			       fl_error *err)
{
	isl_schedule *marked = fl_l1_mark_parallel(isl_schedule_copy(s));

	isl_schedule_free(k->schedule);
	k->schedule = marked;
	free(k->schedule_text);
	fl_tree_free(k->tree);
	k->schedule_text = marked ? fl_l1_schedule_text(marked) : NULL;
	k->tree = marked ? fl_l1_tree(marked) : NULL;
	if (!k->schedule_text || !k->tree) {
		fl_error_set(err, "layer 1: could not record the schedule of %s",
			     k->name);
		return -1;
	}
	return 0;
}

/* Appends the kernel of micro-graph gid (model m) to the program. */
static fl_kernel *kernel_add(fl_program *p, int gid, const fl_l1_model *m)
{
	fl_kernel *k = &p->kernels[p->n_kernels];

	memset(k, 0, sizeof *k);
	k->ops = malloc((size_t)m->n_ops * sizeof *k->ops);
	if (!k->ops)
		return NULL;
	p->n_kernels++;
	k->id = p->n_kernels - 1;
	snprintf(k->name, sizeof k->name, "fl_k%d", k->id);
	k->group = gid;
	k->n_ops = m->n_ops;
	memcpy(k->ops, m->ops, (size_t)m->n_ops * sizeof *k->ops);
	k->domain = isl_union_set_copy(m->domain);
	k->reads = isl_union_map_copy(m->reads);
	k->writes = isl_union_map_copy(m->writes);
	return k;
}

/* ---- live-out statements and feedback ------------------------------------ */

/* Instances of the live-out statements; when nothing leaves the kernel
 * (a dead result kept with --no-preprocess), those of the last op.
 * __isl_give. */
static isl_union_set *liveout_domain(const fl_l1_model *m)
{
	isl_union_set *d = isl_union_set_empty(isl_union_set_get_space(m->domain));
	int last = m->ops[m->n_ops - 1];
	bool any = false;

	for (int i = 0; i < m->n_stmts; i++)
		any |= m->stmts[i].live_out;
	for (int i = 0; i < m->n_stmts; i++)
		if (any ? m->stmts[i].live_out : m->stmts[i].op == last)
			d = isl_union_set_add_set(d,
				isl_set_copy(m->stmts[i].poly->domain));
	return d;
}

#define L1_SPLIT (-2)	/* live-outs under several top-level children */

/* The top-level child of s holding every live-out statement: its index,
 * -1 when s has no top-level sequence or set (one loop nest), L1_SPLIT
 * when they are spread over several (*n_nests: how many), -3 when isl
 * fails.  *n_children: the number of top-level children. */
static int liveout_child(const fl_l1_model *m, __isl_keep isl_schedule *s,
			 int *n_nests, int *n_children)
{
	isl_union_set **f, *lo = liveout_domain(m);
	int n = fl_l1_top_children(s, &f), found = -1, count = 0;

	*n_children = n > 0 ? n : 1;
	for (int i = 0; i < n; i++) {
		isl_union_set *x = isl_union_set_intersect(
			isl_union_set_copy(f[i]), isl_union_set_copy(lo));
		isl_bool empty = isl_union_set_is_empty(x);

		isl_union_set_free(x);
		if (empty < 0)
			count = -1000;
		if (empty == isl_bool_false) {
			found = i;
			count++;
		}
	}
	isl_union_set_free(lo);
	if (n > 0)
		fl_l1_free_sets(f, n);
	*n_nests = count;
	if (n < 0 || count < 0)
		return -3;
	if (n == 0)
		return -1;
	return count == 1 ? found : L1_SPLIT;
}

static bool is_member(const fl_state *st, const fl_micro_graph *mg,
		      const char *op)
{
	int i = fl_graph_find_op(st->graph, op);

	return i >= 0 && st->part.group_of[i] == mg->id;
}

/* The merge that last grew micro-graph mg: the last merged event whose
 * two ops are both members.  NULL when none (built by --fuse only). */
static const fl_event *last_merge(const fl_state *st, const fl_micro_graph *mg)
{
	for (int i = fl_event_log_count(st->log) - 1; i >= 0; i--) {
		const fl_event *e = fl_event_log_get(st->log, i);

		if (e->kind == FL_EV_MERGED && e->n_ops >= 2 &&
		    is_member(st, mg, e->ops[0]) && is_member(st, mg, e->ops[1]))
			return e;
	}
	return NULL;
}

/* Asks the partition to split micro-graph mg at its last merge, naming
 * the op-type pattern of that merge.  Returns FL_PASS_RESTART, 0 when
 * there is no merge to split (the caller falls back), or -1. */
static int feedback(fl_state *st, const fl_micro_graph *mg, const char *what,
		    fl_error *err)
{
	const fl_event *e = last_merge(st, mg);
	char reason[192];
	int a, b;

	if (!e || st->n_feedback + 1 >= FL_MAX_CONSTRAINTS)
		return 0;
	a = fl_graph_find_op(st->graph, e->ops[0]);
	b = fl_graph_find_op(st->graph, e->ops[1]);
	snprintf(reason, sizeof reason, "%s on an %s->%s pattern", what,
		 fl_op_type_name(st->part.type_of[a]),
		 fl_op_type_name(st->part.type_of[b]));
	if (fl_state_feedback(st, e->ops[0], e->ops[1], reason, err) < 0)
		return -1;
	return FL_PASS_RESTART;
}

/* ---- one micro-graph ------------------------------------------------------ */

typedef struct l1_group {
	fl_state *st;
	const fl_micro_graph *mg;
	fl_l1_model m;
	isl_schedule *sched;	/* from the scheduler (or the original) */
	int child;		/* liveout_child's answer */
	int n_nests, n_children;
	char sched_note[160];	/* what the scheduling decision says */
	fl_kernel *k;
	fl_l1_tiling t;
	fl_kernel_tensor *tensors;
	int n_tensors, n_placed;
} l1_group;

static void group_clear(l1_group *G)
{
	fl_l1_model_clear(&G->m);
	isl_schedule_free(G->sched);
	fl_l1_tiling_clear(&G->t);
	for (int i = G->n_placed; i < G->n_tensors; i++)
		isl_fixed_box_free(G->tensors[i].box_isl);
	free(G->tensors);
}

/* Op names of the members (for events), into names[0..n-1]. */
static const char **member_names(const l1_group *G)
{
	const char **names = malloc(((size_t)G->m.n_ops + 1) * sizeof *names);

	if (names)
		for (int i = 0; i < G->m.n_ops; i++)
			names[i] = G->st->graph->ops[G->m.ops[i]].name;
	return names;
}

/* Schedules with maximize_coincidence; when that puts the live-out
 * statements into separate loop nests (a row reduction and the
 * elementwise op feeding it: the reduction's inner loop is not parallel,
 * so isl keeps them apart), asks again with outer_coincidence, which
 * fuses them under their common parallel outer loop.  Each attempt has
 * the whole budget.  Sets G->sched, G->child; *quota as schedule_model. */
static void run_scheduler(l1_group *G, long budget, bool *quota)
{
	isl_schedule *again;
	int nests, children, child;

	G->sched = schedule_model(&G->m, budget, false, quota);
	G->child = G->sched ? liveout_child(&G->m, G->sched, &G->n_nests,
					    &G->n_children) : -3;
	if (G->child != L1_SPLIT)
		return;
	again = schedule_model(&G->m, budget, true, quota);
	child = again ? liveout_child(&G->m, again, &nests, &children) : -3;
	if (child < -1) {
		isl_schedule_free(again);
		return;
	}
	isl_schedule_free(G->sched);
	G->sched = again;
	G->child = child;
	G->n_nests = nests;
	G->n_children = children;
	snprintf(G->sched_note, sizeof G->sched_note, "outer coincidence "
		 "(maximize coincidence split the live-outs)");
}

/* Schedules the model; on failure of a multi-op micro-graph returns the
 * feedback's FL_PASS_RESTART, else falls back to the original schedule
 * (G->child then says untiled).  0 when a schedule is in G->sched. */
static int schedule_group(l1_group *G, fl_error *err)
{
	long budget = G->st->opts->layer1.sched_budget;
	bool quota = false;
	char what[112];
	int rc;

	run_scheduler(G, budget, &quota);
	if (G->child >= -1)
		return 0;
	if (!G->sched)
		snprintf(what, sizeof what, quota ?
			 "isl scheduler ran out of its budget (%ld operations)" :
			 "isl scheduler found no schedule", budget);
	else if (G->m.n_ops > 1)
		snprintf(what, sizeof what, "live-outs end up in %d separate "
			 "loop nests", G->n_nests);
	else
		snprintf(what, sizeof what, "its %d statements end up in "
			 "separate loop nests", G->m.n_stmts);
	if (G->m.n_ops > 1) {
		rc = feedback(G->st, G->mg, what, err);
		if (rc != 0)
			return rc;
	}
	snprintf(G->sched_note, sizeof G->sched_note, "%s%s", what,
		 G->sched ? "" : ": keeps its original schedule");
	if (!G->sched)
		G->sched = isl_schedule_copy(G->m.original);
	G->child = L1_SPLIT;
	return G->sched ? 0 : -1;
}

/* The scheduling decision: model, dependences, isl scheduler, and either
 * the kernel or feedback. */
static int decide_schedule(l1_group *G, fl_error *err)
{
	fl_state *st = G->st;
	const char **names;
	char form[128];
	int rc;

	if (!fl_state_decide(st))
		return FL_PASS_PAUSED;
	if (fl_l1_model_build(&G->m, st->ctx, st->graph, G->mg->members,
			      G->mg->n_members, err) < 0)
		return -1;
	rc = schedule_group(G, err);
	if (rc != 0)
		return rc;
	G->k = kernel_add(st->program, G->mg->id, &G->m);
	names = member_names(G);
	if (!G->k || !names) {
		free(names);
		fl_error_set(err, "out of memory");
		return -1;
	}
	G->k->reduce_form = group_reduce_form(&G->m, form, sizeof form);
	rc = kernel_set_schedule(G->k, G->sched, err);
	if (rc == 0)
		fl_state_log(st, FL_EV_SCHEDULED, "", names, G->m.n_ops,
			     G->mg->id, -1, "G%d -> %s: %d ops, %d statements, "
			     "%d loop nest%s%s%s%s", G->mg->id, G->k->name,
			     G->m.n_ops, G->m.n_stmts, G->n_children,
			     G->n_children == 1 ? "" : "s",
			     G->sched_note[0] ? "; " : "", G->sched_note, form);
	free(names);
	return rc;
}

/* Applies step i of tile-then-fuse to the kernel. */
static int apply_step(l1_group *G, const fl_l1_step *s, fl_error *err)
{
	fl_kernel *k = G->k;

	if (kernel_set_schedule(k, s->schedule, err) < 0)
		return -1;
	isl_union_pw_multi_aff_free(k->inst2tile);
	k->inst2tile = isl_union_pw_multi_aff_copy(s->inst2tile);
	if (s->kind == FL_EV_TILED && s->done) {
		k->n_tile = G->t.n_tile;
		memcpy(k->tile, G->t.tile, sizeof k->tile);
	}
	return 0;
}

/* The tile-then-fuse decisions: tiled, then one per candidate producer. */
static int decide_tiling(l1_group *G, fl_error *err)
{
	fl_state *st = G->st;
	isl_schedule *s = G->sched;
	char why[192];

	G->sched = NULL;
	snprintf(why, sizeof why, "not tiled: %s", G->sched_note);
	if (fl_l1_tile(&G->m, s, G->child, G->child == L1_SPLIT ? why : NULL,
		       &st->opts->layer1, &G->t, err) < 0)
		return -1;
	for (int i = 0; i < G->t.n_steps; i++) {
		const fl_l1_step *step = &G->t.steps[i];
		const char *op = st->graph->ops[step->op].name;

		if (!fl_state_decide(st))
			return FL_PASS_PAUSED;
		if (apply_step(G, step, err) < 0)
			return -1;
		fl_state_log(st, (fl_event_kind)step->kind, "", &op, 1,
			     G->mg->id, -1, "%s: %s", G->k->name, step->reason);
	}
	return FL_PASS_DONE;
}

/* The op an event about tensor t names: its producer when a member, else
 * the first member reading it. */
static const char *tensor_op(const l1_group *G, int t)
{
	const fl_graph *g = G->st->graph;
	int p = g->tensors[t].producer;

	if (p >= 0 && G->st->part.group_of[p] == G->mg->id)
		return g->ops[p].name;
	for (int i = 0; i < G->m.n_ops; i++) {
		const fl_op *op = &g->ops[G->m.ops[i]];

		for (int k = 0; k < op->n_in; k++)
			if (op->in[k] == t)
				return op->name;
	}
	return g->ops[G->m.ops[0]].name;
}

/* The placement decisions, one per tensor the kernel touches. */
static int decide_placement(l1_group *G, fl_error *err)
{
	fl_state *st = G->st;
	fl_kernel *k = G->k;

	if (fl_l1_place(&G->m, &G->t, &G->tensors, &G->n_tensors, err) < 0)
		return -1;
	k->tensors = calloc((size_t)G->n_tensors + 1, sizeof *k->tensors);
	if (!k->tensors) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int i = 0; i < G->n_tensors; i++) {
		const fl_kernel_tensor *kt = &G->tensors[i];
		const char *op = tensor_op(G, kt->tensor);

		if (!fl_state_decide(st))
			return FL_PASS_PAUSED;
		k->tensors[k->n_tensors++] = *kt;
		G->n_placed++;
		fl_state_log(st, FL_EV_PLACED, "", &op, 1, G->mg->id, -1,
			     "%s: %s %s: %s", k->name,
			     st->graph->tensors[kt->tensor].name,
			     fl_placement_name(kt->place), kt->why);
	}
	return FL_PASS_DONE;
}

/* All decisions of micro-graph gid. */
static int layer1_group(fl_state *st, int gid, fl_error *err)
{
	l1_group G;
	int rc;

	memset(&G, 0, sizeof G);
	G.st = st;
	G.mg = &st->part.groups[gid];
	rc = decide_schedule(&G, err);
	if (rc == FL_PASS_DONE)
		rc = decide_tiling(&G, err);
	if (rc == FL_PASS_DONE)
		rc = decide_placement(&G, err);
	group_clear(&G);
	return rc;
}

/* A fresh, empty program with room for n kernels. */
static fl_program *program_new(const fl_state *st, int n)
{
	fl_program *p = calloc(1, sizeof *p);

	if (!p)
		return NULL;
	p->kernels = calloc((size_t)n + 1, sizeof *p->kernels);
	if (!p->kernels) {
		free(p);
		return NULL;
	}
	p->strategy = FL_STRATEGY_APOLLO_L1;
	p->graph = st->graph;
	p->ctx = st->ctx;
	return p;
}

int fl_pass_layer1(fl_state *st, fl_error *err)
{
	int *order, n = group_order(st, &order), rc = FL_PASS_DONE;

	if (n < 0) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	fl_program_free(st->program);
	st->program = program_new(st, n);
	if (!st->program) {
		free(order);
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int i = 0; i < n && rc == FL_PASS_DONE; i++)
		rc = layer1_group(st, order[i], err);
	free(order);
	return rc;
}
