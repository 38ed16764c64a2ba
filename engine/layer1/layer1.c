/* Layer 1 (DESIGN 1.3; APOLLO 4.1, MICRO 2020): one kernel per alive
 * micro-graph, in a topological order of the micro-graphs.
 *
 * For each micro-graph the pass builds its polyhedral model (statements of
 * every member op from engine/poly.c, original schedule = the statements
 * in op order, each with its identity band), computes the dependences and
 * asks isl's scheduler for a maximize-coincidence schedule under an
 * operation budget.  Then the canonical reduction form (reduce_form.c),
 * tile-then-fuse (tile.c) and the placement of every tensor.  Each step
 * is a decision (the examples are from samples/micro2020_fig1.json and
 * softmax.json):
 *
 *   scheduled  G3 -> fl_k1: 3 ops, 4 statements, 1 loop nest; outer
 *              coincidence (maximize coincidence split the live-outs);
 *              softmax.sum [4096 x r1024]: y-reduce
 *   reduce-form fl_k0: x-reduce: moved reduced i0 outside kept i1
 *              (innermost, vectorised: a row of partials); ... /
 *              y-reduce: canonical as scheduled ... (reduce_form.c;
 *              a kernel rewritten here is left untiled)
 *   tiled      fl_k0: tiled S3_relu (3 of 4 band members parallel) by
 *              64 x 8 x 16: 28 tiles for 2 threads; contraction (K 576,
 *              KC 256): A 64 x KC + B KC x 128 + C = 224 KiB, within 1/2
 *              of 512 KiB L2; member 0 kept whole for its producers
 *   extended   fl_k0: fused S0_quantize.round into the tiles through an
 *              extension node (recomputed as S1_0_r0): per-tile
 *              footprint 1 x 64 x 10 x 18, recompute 1.34x <= 1.50x
 *              / not fused: recompute 4.00x > 1.50x (...)
 *   placed     fl_k0: A_q tile-local: recomputed in each tile: tile-local
 *              buffer of 1 x 64 x 10 x 18 floats, recompute 1.34x
 *   feedback   split the micro-graph at the merge of e into h and
 *              partition again: isl scheduler ran out of its budget (1
 *              operations) on an E->E pattern
 *
 * Feedback (APOLLO's upward feedback), each one event, then
 * FL_PASS_RESTART and the engine partitions again:
 *   - a micro-graph of more than max_stmts statements (default 32) is cut
 *     before any isl work into pieces of at most max_stmts statements
 *     along the op order: every merge crossing a cut is forbidden at once
 *     (an n-op chain: one restart, not n);
 *   - when the scheduler runs out of its budget, the micro-graph is cut in
 *     two halves the same way;
 *   - when the live-out statements end up in different top-level loop
 *     nests (no band can tile them together), the merge that last grew
 *     the micro-graph is forbidden;
 *   - once the session's layer-1 time budget is spent, a micro-graph not
 *     yet worked out is cut into single ops (left unfused).
 * A single-op micro-graph never causes feedback: it falls back to its
 * original schedule.  With the memo below, the pieces already scheduled
 * are not scheduled again after a restart, so layer 1 is linear in the
 * number of ops (make bench: bench_layer1).  The engine's progress
 * callback (opts.run.progress) hears "layer1", k of n micro-graphs.
 *
 * Memo: the model, the scheduler's outcome and the kernel path (tiling,
 * the schedule after every step, placement) of each micro-graph are kept
 * by the session under a key naming its members and the layer-1 options
 * (memo_impl.h), so a replay of this pass -- every step back or forth in
 * the explorer -- only copies them into the program and logs the
 * decisions again.  The scheduled event keeps the time the work took.
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

#include "layer1_impl.h"
#include "machine.h"
#include "memo_impl.h"
#include "passes_impl.h"

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

/* The smallest member op of mg (members are ascending). */
static int first_op(const fl_micro_graph *mg)
{
	return mg->members[0];
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

static bool is_reduction(fl_op_kind k)
{
	return k == FL_OP_REDUCE_SUM || k == FL_OP_REDUCE_MAX ||
	       k == FL_OP_REDUCE_MIN || k == FL_OP_REDUCE_PROD;
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
			 fl_reduce_form_name(f));
		return f;
	}
	return FL_REDUCE_NONE;
}

/* ---- the kernel ----------------------------------------------------------- */

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
	k->tile_m = k->tile_n = -1;
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

	if (!e || st->n_feedback + 1 >= FL_MAX_FEEDBACK)
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

/* ---- splitting a micro-graph into pieces ------------------------------------ */

/* About how many statements op `op` gives the model (engine/poly.c): two
 * for an op with an initialisation (reductions, contractions, pooling),
 * one per input for a concat, one otherwise.  Counted from the graph so
 * that an oversized micro-graph is split before any isl work on it. */
static int op_stmts(const fl_graph *g, int op)
{
	switch (g->ops[op].kind) {
	case FL_OP_REDUCE_SUM: case FL_OP_REDUCE_MAX: case FL_OP_REDUCE_MIN:
	case FL_OP_REDUCE_PROD:
	case FL_OP_MATMUL: case FL_OP_CONV2D: case FL_OP_POOL2D:
		return 2;
	case FL_OP_CONCAT:
		return g->ops[op].n_in > 0 ? g->ops[op].n_in : 1;
	default:
		return 1;
	}
}

static int group_stmts(const fl_state *st, const fl_micro_graph *mg)
{
	int n = 0;

	for (int i = 0; i < mg->n_members; i++)
		n += op_stmts(st->graph, mg->members[i]);
	return n;
}

/* Whether ops x, y are among the n pairs (a[i], b[i]) already. */
static bool seen_pair(const fl_graph *g, const char **a, const char **b,
		      int n, int x, int y)
{
	for (int i = n - 1; i >= 0 && i >= n - 64; i--)
		if (strcmp(a[i], g->ops[x].name) == 0 &&
		    strcmp(b[i], g->ops[y].name) == 0)
			return true;
	return false;
}

/* Splits micro-graph mg into pieces of at most `limit` statements along
 * its members' order (ascending op index, a topological order): forbids
 * at once every merge of the partition that joined two members of
 * different pieces, and logs one feedback event saying why (`what`).
 * Returns FL_PASS_RESTART, 0 when no merge crosses a cut (nothing to
 * split: the caller goes on), or -1.
 *
 * This replaces peeling one merge per restart: an elementwise chain of n
 * ops is cut in one restart instead of n, and each piece is scheduled
 * once (the memo keeps it across the restarts that follow). */
static int split_pieces(fl_state *st, const fl_micro_graph *mg, int limit,
			const char *what, fl_error *err)
{
	const fl_graph *g = st->graph;
	int *piece = malloc(((size_t)g->n_ops + 1) * sizeof *piece);
	const char **a = NULL, **b = NULL;
	int n_pieces = 1, used = 0, n = 0, cap = 0, rc = 0;
	char reason[128];
	fl_strbuf text = {0};

	if (!piece) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int i = 0; i < g->n_ops; i++)
		piece[i] = -1;
	for (int i = 0; i < mg->n_members; i++) {
		int s = op_stmts(g, mg->members[i]);

		if (used > 0 && used + s > limit) {
			n_pieces++;
			used = 0;
		}
		used += s;
		piece[mg->members[i]] = n_pieces - 1;
	}
	for (int i = 0; i < fl_event_log_count(st->log) && rc == 0; i++) {
		const fl_event *e = fl_event_log_get(st->log, i);
		int x, y;

		if (e->kind != FL_EV_MERGED || e->n_ops < 2)
			continue;
		x = fl_graph_find_op(g, e->ops[0]);
		y = fl_graph_find_op(g, e->ops[1]);
		if (x < 0 || y < 0 || piece[x] < 0 || piece[y] < 0 ||
		    piece[x] == piece[y] || seen_pair(g, a, b, n, x, y))
			continue;	/* the log keeps the merges of earlier
					   partition runs: each pair once */
		if (n == cap) {
			const char **na, **nb;

			cap = cap ? 2 * cap : 16;
			na = realloc(a, (size_t)cap * sizeof *na);
			if (na)
				a = na;
			nb = na ? realloc(b, (size_t)cap * sizeof *nb) : NULL;
			if (!nb) {
				fl_error_set(err, "out of memory");
				rc = -1;
				break;
			}
			b = nb;
		}
		a[n] = e->ops[0];
		b[n++] = e->ops[1];
	}
	if (rc == 0 && n > 0) {
		int x = fl_graph_find_op(g, a[0]), y = fl_graph_find_op(g, b[0]);

		snprintf(reason, sizeof reason, "%s on an %s->%s pattern", what,
			 fl_op_type_name(st->part.type_of[x]),
			 fl_op_type_name(st->part.type_of[y]));
		if (n == 1) {
			rc = fl_state_feedback(st, a[0], b[0], reason, err);
		} else {
			fl_strbuf_printf(&text, "split the micro-graph G%d (%d "
				"ops, %d statements) into %d pieces of at most %d "
				"statements along the op order and partition "
				"again, forbidding %d merges (%s|%s ...): %s",
				mg->id, mg->n_members, group_stmts(st, mg),
				n_pieces, limit, n, a[0], b[0], reason);
			rc = fl_state_feedback_many(st, a, b, n, reason,
						    text.s ? text.s : reason, err);
		}
		rc = rc < 0 ? -1 : FL_PASS_RESTART;
	}
	free(fl_strbuf_take(&text));
	free(a);
	free(b);
	free(piece);
	return rc;
}

/* ---- the memo of one micro-graph ------------------------------------------ */

/* A schedule as the kernel and the views show it: with parallel marks,
 * isl's text and the walkable tree. */
typedef struct l1_view {
	isl_schedule *marked;
	char *text;
	fl_tree_node *tree;
	isl_union_pw_multi_aff *inst2tile;	/* after this step, or NULL */
} l1_view;

/* Everything layer 1 works out for one micro-graph, kept by the session
 * (memo_impl.h) under a key naming its members and the options, so that
 * a replay never rebuilds the model or reschedules.  The scheduler's
 * outcome is computed first; the kernel path (tiling, placement, the
 * views of every step) only when the micro-graph becomes a kernel, which
 * depends on the outcome alone: feedback is the only decision that reads
 * the rest of the state, and it happens before the kernel path. */
typedef struct l1_memo {
	bool by_budget;		/* left unfused: the layer-1 time budget was
				   spent before this micro-graph came up */
	bool oversized;		/* more than max_stmts statements: split
				   before any isl work */
	bool has_model;		/* m is built (a by_budget or oversized
				   entry of several ops has none, unless no
				   merge could split it) */
	fl_l1_model m;
	double seconds;		/* model + scheduler, first time */
	isl_schedule *sched;	/* the scheduler's, NULL: it failed */
	int child;		/* liveout_child's answer for sched */
	int n_nests, n_children;
	bool quota;
	char sched_note[160];
	bool kernel_ready;	/* the fields below are valid */
	char what[112];		/* why the schedule fails (feedback) */
	char form[128];
	fl_reduce_form reduce_form;
	fl_l1_rform rform;	/* what the canonical form did */
	l1_view first;		/* the kernel's schedule before tiling */
	l1_view canon;		/* rform.moved: the canonical tree */
	fl_l1_tiling t;
	l1_view *steps;		/* per tiling step */
	fl_kernel_tensor *tensors;
	int n_tensors;
} l1_memo;

static void view_clear(l1_view *v)
{
	isl_schedule_free(v->marked);
	free(v->text);
	fl_tree_free(v->tree);
	isl_union_pw_multi_aff_free(v->inst2tile);
	memset(v, 0, sizeof *v);
}

void fl_l1_memo_entry_free(void *value, void *ctx)
{
	l1_memo *e = value;

	(void)ctx;
	if (!e)
		return;
	if (e->has_model)
		fl_l1_model_clear(&e->m);
	isl_schedule_free(e->sched);
	view_clear(&e->first);
	view_clear(&e->canon);
	if (e->steps)
		for (int i = 0; i < e->t.n_steps; i++)
			view_clear(&e->steps[i]);
	free(e->steps);
	fl_l1_tiling_clear(&e->t);
	for (int i = 0; i < e->n_tensors; i++)
		isl_fixed_box_free(e->tensors[i].box_isl);
	free(e->tensors);
	free(e);
}

/* The view of schedule s (kept); -1 when isl fails. */
static int view_make(l1_view *v, __isl_keep isl_schedule *s,
		     __isl_keep isl_union_pw_multi_aff *inst2tile)
{
	v->marked = fl_l1_mark_parallel(isl_schedule_copy(s));
	v->text = v->marked ? fl_l1_schedule_text(v->marked) : NULL;
	v->tree = v->marked ? fl_l1_tree(v->marked) : NULL;
	v->inst2tile = isl_union_pw_multi_aff_copy(inst2tile);
	return v->text && v->tree ? 0 : -1;
}

/* Puts view v into kernel k. */
static int kernel_show(fl_kernel *k, const l1_view *v, fl_error *err)
{
	isl_schedule_free(k->schedule);
	free(k->schedule_text);
	fl_tree_free(k->tree);
	isl_union_pw_multi_aff_free(k->inst2tile);
	k->schedule = isl_schedule_copy(v->marked);
	k->schedule_text = strdup(v->text);
	k->tree = fl_tree_copy(v->tree);
	k->inst2tile = isl_union_pw_multi_aff_copy(v->inst2tile);
	if (!k->schedule_text || !k->tree) {
		fl_error_set(err, "out of memory recording the schedule of %s",
			     k->name);
		return -1;
	}
	return 0;
}

/* The memo key of micro-graph mg: the options layer 1 reads and its
 * members (the graph it runs on is the session's, fixed by the input and
 * the preprocess option).  malloc'd. */
static char *memo_key(const fl_state *st, const fl_micro_graph *mg)
{
	const fl_engine_opts *o = st->opts;
	const fl_machine *mach = o->layer1.machine ? o->layer1.machine
						   : fl_machine_get();
	fl_strbuf k = {0};

	fl_strbuf_printf(&k, "pre %d budget %ld recompute %.17g tile", o->preprocess,
		      o->layer1.sched_budget, o->layer1.max_recompute);
	for (int i = 0; i < o->layer1.n_tile; i++)
		fl_strbuf_printf(&k, " %lld", (long long)o->layer1.tile[i]);
	/* the tile sizes follow the machine and the local budget */
	fl_strbuf_printf(&k, " machine %d %lld %lld %d budget %lld", mach->cores,
			 (long long)mach->l1d, (long long)mach->l2,
			 mach->vector_bits, (long long)o->layer1.local_budget);
	fl_strbuf_printf(&k, " ops");
	for (int i = 0; i < mg->n_members; i++)	/* ascending */
		fl_strbuf_printf(&k, " %d", mg->members[i]);
	return fl_strbuf_take(&k);
}

/* Schedules with maximize_coincidence; when that puts the live-out
 * statements into separate loop nests (a row reduction and the
 * elementwise op feeding it: the reduction's inner loop is not parallel,
 * so isl keeps them apart), asks again with outer_coincidence, which
 * fuses them under their common parallel outer loop.  Each attempt has
 * the whole budget. */
static void run_scheduler(l1_memo *e, long budget)
{
	isl_schedule *again;
	int nests, children, child;

	e->sched = schedule_model(&e->m, budget, false, &e->quota);
	e->child = e->sched ? liveout_child(&e->m, e->sched, &e->n_nests,
					    &e->n_children) : -3;
	if (e->child != L1_SPLIT)
		return;
	again = schedule_model(&e->m, budget, true, &e->quota);
	child = again ? liveout_child(&e->m, again, &nests, &children) : -3;
	if (child < -1) {
		isl_schedule_free(again);
		return;
	}
	isl_schedule_free(e->sched);
	e->sched = again;
	e->child = child;
	e->n_nests = nests;
	e->n_children = children;
	snprintf(e->sched_note, sizeof e->sched_note, "outer coincidence "
		 "(maximize coincidence split the live-outs)");
}

/* Why the schedule cannot be used, into e->what (the scheduler failed,
 * or the live-outs are in separate nests). */
static void failure_text(l1_memo *e, long budget)
{
	if (!e->sched)
		snprintf(e->what, sizeof e->what, e->quota ?
			 "isl scheduler ran out of its budget (%ld operations)" :
			 "isl scheduler found no schedule", budget);
	else if (e->m.n_ops > 1)
		snprintf(e->what, sizeof e->what, "live-outs end up in %d "
			 "separate loop nests", e->n_nests);
	else
		snprintf(e->what, sizeof e->what, "its %d statements end up in "
			 "separate loop nests", e->m.n_stmts);
}

/* Whether the session's layer-1 time budget is spent (options: 0 means
 * no budget). */
static bool budget_spent(const fl_state *st)
{
	double b = st->opts->layer1.time_budget_s;

	return b > 0 && st->memo->l1_seconds >= b;
}

/* The memo entry of micro-graph mg: from the session, or made now
 * (model, dependences, isl scheduler).  NULL with a message on failure.
 *
 * The time budget: the seconds of new work (model, scheduler, kernel
 * path) add up in the session's memo; once they reach the budget, a
 * micro-graph that has no entry yet gets one marked by_budget -- left
 * unfused: a single op keeps its original schedule without calling the
 * scheduler, several ops are split into single ops by feedback.  The
 * decision is stored under the micro-graph's key like any other outcome,
 * so every replay of the session (stepping, going back, running again)
 * finds it and repeats it whatever the clock says: stepping == running. */
/* Builds e's model and, unless e is by_budget, runs the scheduler; the
 * time goes to e->seconds and the session's account.  -1 on failure. */
static int entry_work(fl_state *st, const fl_micro_graph *mg, l1_memo *e,
		      fl_error *err)
{
	double t0 = fl_now(), dt;

	if (!e->has_model) {
		if (fl_l1_model_build(&e->m, st->ctx, st->graph, mg->members,
				      mg->n_members, err) < 0)
			return -1;
		e->has_model = true;
	}
	if (e->by_budget) {
		e->child = -3;
		snprintf(e->what, sizeof e->what, "the layer-1 time budget "
			 "(%g s) is spent", st->opts->layer1.time_budget_s);
	} else {
		run_scheduler(e, st->opts->layer1.sched_budget);
		if (e->child < -1)
			failure_text(e, st->opts->layer1.sched_budget);
	}
	dt = fl_now() - t0;
	e->seconds += dt;
	st->memo->l1_seconds += dt;
	return 0;
}

static l1_memo *memo_entry(fl_state *st, const fl_micro_graph *mg,
			   fl_error *err)
{
	char *key = memo_key(st, mg);
	l1_memo *e = key ? fl_memo_map_get(st->memo->layer1, key) : NULL;
	int lim = st->opts->layer1.max_stmts;

	if (e || !key) {
		free(key);
		if (!e)
			fl_error_set(err, "out of memory");
		return e;
	}
	e = calloc(1, sizeof *e);
	if (!e) {
		free(key);
		fl_error_set(err, "out of memory");
		return NULL;
	}
	e->by_budget = budget_spent(st);
	e->oversized = !e->by_budget && lim > 0 && mg->n_members > 1 &&
		       group_stmts(st, mg) > lim;
	if (e->by_budget && mg->n_members > 1) {
		e->child = -3;
		snprintf(e->what, sizeof e->what, "the layer-1 time budget "
			 "(%g s) is spent", st->opts->layer1.time_budget_s);
	} else if (!e->oversized && entry_work(st, mg, e, err) < 0) {
		fl_l1_memo_entry_free(e, NULL);
		free(key);
		return NULL;
	}
	if (fl_memo_map_put(st->memo->layer1, key, e) < 0) {
		free(key);
		fl_error_set(err, "out of memory");
		return NULL;
	}
	free(key);
	return e;
}

/* The kernel path of e, worked out once: the schedule the kernel starts
 * from (the scheduler's, or the original one when it failed and no
 * feedback could split the micro-graph), tile-then-fuse, the views of
 * every step, the placement of every tensor. */
static int kernel_path(l1_memo *e, const fl_layer1_opts *o, fl_error *err)
{
	isl_union_pw_multi_aff *i2t = NULL;	/* canonical x-reduce tiles */
	isl_schedule *s;
	char why[192];
	int child = e->child;

	if (e->kernel_ready)
		return 0;
	if (child < -1) {
		snprintf(e->sched_note, sizeof e->sched_note, "%s%s", e->what,
			 e->sched ? "" : ": keeps its original schedule");
		child = L1_SPLIT;
	}
	s = e->sched ? e->sched : e->m.original;
	e->reduce_form = group_reduce_form(&e->m, e->form, sizeof e->form);
	if (view_make(&e->first, s, NULL) < 0)
		goto isl_failed;
	snprintf(why, sizeof why, "not tiled: %s", e->sched_note);
	s = fl_l1_reduce_canonical(&e->m, isl_schedule_copy(s),
				   e->reduce_form, o, &e->rform);
	if (e->rform.moved) {
		/* the canonical form already cut the kept dims for the
		 * threads; tile-then-fuse would undo the loop order */
		i2t = fl_l1_reduce_tiles(s);
		if (view_make(&e->canon, s, i2t) < 0) {
			isl_schedule_free(s);
			goto isl_failed;
		}
		snprintf(why, sizeof why, "not tiled: in canonical %s form, "
			 "which splits the kept dims among the threads itself",
			 fl_reduce_form_name(e->reduce_form));
		child = L1_SPLIT;
	}
	if (fl_l1_tile(&e->m, s, child, child == L1_SPLIT ? why : NULL, o,
		       &e->t, err) < 0) {
		isl_union_pw_multi_aff_free(i2t);
		return -1;
	}
	e->steps = calloc((size_t)e->t.n_steps + 1, sizeof *e->steps);
	if (!e->steps) {
		isl_union_pw_multi_aff_free(i2t);
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int i = 0; i < e->t.n_steps; i++)
		if (view_make(&e->steps[i], e->t.steps[i].schedule,
			      e->rform.moved ? i2t :
			      e->t.steps[i].inst2tile) < 0)
			goto isl_failed;
	i2t = isl_union_pw_multi_aff_free(i2t);
	if (fl_l1_place(&e->m, &e->t, &e->tensors, &e->n_tensors, err) < 0)
		return -1;
	e->kernel_ready = true;
	return 0;
isl_failed:
	isl_union_pw_multi_aff_free(i2t);
	fl_error_set(err, "layer 1: could not record the schedule of a "
		     "micro-graph of %d ops", e->m.n_ops);
	return -1;
}

/* ---- the decisions of one micro-graph -------------------------------------- */

/* The scheduling decision: the kernel, or feedback to the partition. */
static int decide_schedule(fl_state *st, const fl_micro_graph *mg,
			   l1_memo **out, fl_kernel **k, fl_error *err)
{
	const char **names;
	fl_event *ev;
	l1_memo *e;
	int rc;

	if (!fl_state_decide(st))
		return FL_PASS_PAUSED;
	e = *out = memo_entry(st, mg, err);
	if (!e)
		return -1;
	/* bound what the scheduler sees: an oversized micro-graph is cut
	 * into pieces at once, before any isl work on it; one left unfused
	 * by the time budget into single ops.  Both decisions are in the
	 * memo entry, so replays repeat them.  No merge to forbid (built by
	 * --fuse): it is worked out as it is. */
	if ((e->oversized || e->by_budget) && !e->has_model) {
		char what[112];

		snprintf(what, sizeof what, "more than %d statements for the "
			 "isl scheduler", st->opts->layer1.max_stmts);
		rc = split_pieces(st, mg, e->by_budget ? 1 :
				  st->opts->layer1.max_stmts,
				  e->by_budget ? e->what : what, err);
		if (rc != 0)
			return rc;
		if (entry_work(st, mg, e, err) < 0)
			return -1;
	}
	if (e->child < -1 && e->m.n_ops > 1) {
		/* out of budget: cut in two halves along the op order (one
		 * restart halves the group, not one merge per restart);
		 * live-outs in separate nests: the merge that last grew it */
		rc = !e->sched && e->quota && mg->n_members > 2 ?
		     split_pieces(st, mg, (group_stmts(st, mg) + 1) / 2,
				  e->what, err) : 0;
		if (rc == 0)
			rc = feedback(st, mg, e->what, err);
		if (rc != 0)
			return rc;
	}
	if (!e->kernel_ready) {
		double t0 = fl_now();

		if (kernel_path(e, &st->opts->layer1, err) < 0)
			return -1;
		st->memo->l1_seconds += fl_now() - t0;
	}
	*k = kernel_add(st->program, mg->id, &e->m);
	names = fl_state_op_names(st, e->m.ops, e->m.n_ops);
	if (!*k || !names) {
		free(names);
		fl_error_set(err, "out of memory");
		return -1;
	}
	(*k)->reduce_form = e->reduce_form;
	rc = kernel_show(*k, &e->first, err);
	ev = rc < 0 ? NULL :
	     fl_state_log(st, FL_EV_SCHEDULED, "", names, e->m.n_ops, mg->id, -1,
			  "G%d -> %s: %d ops, %d statements, %d loop nest%s%s%s%s",
			  mg->id, (*k)->name, e->m.n_ops, e->m.n_stmts,
			  e->n_children, e->n_children == 1 ? "" : "s",
			  e->sched_note[0] ? "; " : "", e->sched_note, e->form);
	if (ev)	/* the time the work took, not the replay's */
		ev->duration = e->seconds;
	free(names);
	return rc;
}

/* The canonical reduction form decision of a kernel whose nest holds a
 * reduction: the rewritten tree becomes the kernel's, or the event says
 * why the scheduler's stays. */
static int decide_reduce_form(fl_state *st, const fl_micro_graph *mg,
			      const l1_memo *e, fl_kernel *k, fl_error *err)
{
	const char *op;

	if (e->reduce_form == FL_REDUCE_NONE)
		return FL_PASS_DONE;
	if (!fl_state_decide(st))
		return FL_PASS_PAUSED;
	if (e->rform.moved && kernel_show(k, &e->canon, err) < 0)
		return -1;
	k->reduce_moved = e->rform.moved;
	snprintf(k->reduce_why, sizeof k->reduce_why, "%s", e->rform.why);
	op = st->graph->ops[e->m.ops[e->m.n_ops - 1]].name;
	for (int i = e->m.n_ops - 1; i >= 0; i--)
		if (is_reduction(st->graph->ops[e->m.ops[i]].kind)) {
			op = st->graph->ops[e->m.ops[i]].name;
			break;
		}
	fl_state_log(st, FL_EV_REDUCE_FORM, "", &op, 1, mg->id, -1,
		     "%s: %s: %s", k->name, fl_reduce_form_name(e->reduce_form),
		     e->rform.why);
	return FL_PASS_DONE;
}

/* The tile-then-fuse decisions: tiled, then one per candidate producer. */
static int decide_tiling(fl_state *st, const fl_micro_graph *mg,
			 const l1_memo *e, fl_kernel *k, fl_error *err)
{
	for (int i = 0; i < e->t.n_steps; i++) {
		const fl_l1_step *step = &e->t.steps[i];
		const char *op = st->graph->ops[step->op].name;

		if (!fl_state_decide(st))
			return FL_PASS_PAUSED;
		if (kernel_show(k, &e->steps[i], err) < 0)
			return -1;
		if (step->kind == FL_EV_TILED && step->done) {
			k->n_tile = e->t.n_tile;
			memcpy(k->tile, e->t.tile, sizeof k->tile);
			k->tile_kind = e->t.kind;
			k->tile_m = e->t.tile_m;
			k->tile_n = e->t.tile_n;
			k->tile_bytes = e->t.bytes;
			k->n_tiles = e->t.n_tiles;
			snprintf(k->tile_why, sizeof k->tile_why, "%s",
				 step->reason);
		}
		fl_state_log(st, (fl_event_kind)step->kind, "", &op, 1, mg->id, -1,
			     "%s: %s", k->name, step->reason);
	}
	return FL_PASS_DONE;
}

/* The op an event about tensor t names: its producer when a member, else
 * the first member reading it. */
static const char *tensor_op(const fl_state *st, const fl_micro_graph *mg,
			     const fl_l1_model *m, int t)
{
	const fl_graph *g = st->graph;
	int p = g->tensors[t].producer;

	if (p >= 0 && st->part.group_of[p] == mg->id)
		return g->ops[p].name;
	for (int i = 0; i < m->n_ops; i++) {
		const fl_op *op = &g->ops[m->ops[i]];

		for (int k = 0; k < op->n_in; k++)
			if (op->in[k] == t)
				return op->name;
	}
	return g->ops[m->ops[0]].name;
}

/* The placement decisions, one per tensor the kernel touches. */
static int decide_placement(fl_state *st, const fl_micro_graph *mg,
			    const l1_memo *e, fl_kernel *k, fl_error *err)
{
	k->tensors = calloc((size_t)e->n_tensors + 1, sizeof *k->tensors);
	if (!k->tensors) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int i = 0; i < e->n_tensors; i++) {
		const fl_kernel_tensor *kt = &e->tensors[i];
		const char *op = tensor_op(st, mg, &e->m, kt->tensor);

		if (!fl_state_decide(st))
			return FL_PASS_PAUSED;
		k->tensors[k->n_tensors] = *kt;
		k->tensors[k->n_tensors++].box_isl =
			isl_fixed_box_copy(kt->box_isl);
		fl_state_log(st, FL_EV_PLACED, "", &op, 1, mg->id, -1,
			     "%s: %s %s: %s", k->name,
			     st->graph->tensors[kt->tensor].name,
			     fl_placement_name(kt->place), kt->why);
	}
	return FL_PASS_DONE;
}

/* ---- custom ops ------------------------------------------------------------ */

/* Micro-graph mg is one custom op: a fusion wall the engine cannot model
 * (DESIGN 1.2; the cluster pass excluded it, so it never merges). */
static bool is_custom_group(const fl_state *st, const fl_micro_graph *mg)
{
	return mg->n_members == 1 &&
	       st->graph->ops[mg->members[0]].kind == FL_OP_CUSTOM;
}

/* The decisions of a custom op's micro-graph: a kernel of its own with no
 * polyhedral model and no schedule, whose code is the op's reference
 * implementation (the backend's custom kernel, print_c.c), then each
 * tensor it touches placed global.  Nothing is memoised: nothing here
 * asks isl.
 *     scheduled  G4 -> fl_k2: custom op c (cumsum): its own kernel, the
 *                op's reference code; not scheduled by isl
 *     placed     fl_k2: t3 global: custom op: its own kernel */
static int layer1_custom(fl_state *st, const fl_micro_graph *mg,
			 fl_error *err)
{
	const fl_graph *g = st->graph;
	const fl_op *op = &g->ops[mg->members[0]];
	const char *name = op->name, *fn = "cumsum";
	fl_program *p = st->program;
	fl_kernel *k;

	if (!fl_state_decide(st))
		return FL_PASS_PAUSED;
	k = &p->kernels[p->n_kernels];
	memset(k, 0, sizeof *k);
	k->ops = malloc(sizeof *k->ops);
	k->tensors = calloc((size_t)op->n_in + 2, sizeof *k->tensors);
	if (!k->ops || !k->tensors) {
		free(k->ops);
		free(k->tensors);
		memset(k, 0, sizeof *k);
		fl_error_set(err, "out of memory");
		return -1;
	}
	k->id = p->n_kernels++;
	snprintf(k->name, sizeof k->name, "fl_k%d", k->id);
	k->group = mg->id;
	k->tile_m = k->tile_n = -1;
	k->n_ops = 1;
	k->ops[0] = mg->members[0];
	if (fl_attr_string(&op->attrs, "fn", "cumsum", &fn, err) < 0)
		return -1;
	fl_state_log(st, FL_EV_SCHEDULED, "", &name, 1, mg->id, -1,
		     "G%d -> %s: custom op %s (%s): its own kernel, the op's "
		     "reference code; not scheduled by isl", mg->id, k->name,
		     op->name, fn);
	for (int i = 0; i <= op->n_in; i++) {
		int t = i < op->n_in ? op->in[i] : op->out[0];
		fl_kernel_tensor *kt = NULL;

		for (int j = 0; j < k->n_tensors; j++)
			if (k->tensors[j].tensor == t)
				kt = &k->tensors[j];
		if (kt) {	/* the same tensor twice: placed once */
			kt->written |= i == op->n_in;
			continue;
		}
		if (!fl_state_decide(st))
			return FL_PASS_PAUSED;
		kt = &k->tensors[k->n_tensors++];
		kt->tensor = t;
		kt->place = FL_PLACE_GLOBAL;
		kt->read = i < op->n_in;
		kt->written = i == op->n_in;
		kt->rank = g->tensors[t].shape.rank;
		snprintf(kt->why, sizeof kt->why, "custom op: its own kernel");
		fl_state_log(st, FL_EV_PLACED, "", &name, 1, mg->id, -1,
			     "%s: %s %s: %s", k->name, g->tensors[t].name,
			     fl_placement_name(kt->place), kt->why);
	}
	return FL_PASS_DONE;
}

/* All decisions of micro-graph gid. */
static int layer1_group(fl_state *st, int gid, fl_error *err)
{
	const fl_micro_graph *mg = &st->part.groups[gid];
	l1_memo *e = NULL;
	fl_kernel *k = NULL;
	int rc;

	if (is_custom_group(st, mg))
		return layer1_custom(st, mg, err);
	rc = decide_schedule(st, mg, &e, &k, err);

	if (rc == FL_PASS_DONE)
		rc = decide_reduce_form(st, mg, e, k, err);
	if (rc == FL_PASS_DONE)
		rc = decide_tiling(st, mg, e, k, err);
	if (rc == FL_PASS_DONE)
		rc = decide_placement(st, mg, e, k, err);
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
	p->strategy = st->opts->strategy;
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
	for (int i = 0; i < n && rc == FL_PASS_DONE; i++) {
		if (st->opts->run.progress)	/* k of n micro-graphs */
			st->opts->run.progress(st->opts->run.progress_user,
					       "layer1", i, n);
		rc = layer1_group(st, order[i], err);
	}
	if (rc == FL_PASS_DONE && st->opts->run.progress)
		st->opts->run.progress(st->opts->run.progress_user, "layer1",
				       n, n);
	free(order);
	return rc;
}
