/* Layer 3: parallel stitching (DESIGN 1.5; APOLLO 4.3, Algorithm 3).
 *
 * Needs: st->program (the kernels after layer 2, in execution order),
 * st->graph and st->part.  Changes: st->program and st->par, only under
 * strategy apollo; under any other strategy the pass makes no decision.
 *
 * The pass acts on the analysis of parallel.c (fl_stitch_parallel_analyze
 * over the program's kernels: branch sets, compute-bound kernels dropped,
 * the roofline cost model, greedy rounds with the gain formula) and keeps
 * it in st->par, each try marked with what became of it.  The model's
 * machine is the documented default (the GPU's under the CUDA target,
 * opts->run.target), its launch cost the option
 * launch_cost when set (with no launch cost, kernels that each fill the
 * machine gain nothing together).  Every try the
 * analysis evaluated is one decision, in the order evaluated:
 *   parallelised  an accepted set (gain > 0) made one kernel, e.g.
 *                 "fl_k2 | fl_k4 side by side (round 1 after fl_k1):
 *                 costs 41.0 + 23.1 us, alone 64.1 us, together
 *                 46.0 us, gain 18.1 us -> fl_k2";
 *   rejected      a try with no positive gain, with the same numbers, or
 *                 an accepted set that cannot be one kernel: a kernel of
 *                 the set feeds another, directly or through kernels
 *                 outside it (one kernel would be a cycle), or two of
 *                 them share statement instances.
 * Stitched sets are built once the decisions are taken (also when the
 * decision budget runs out inside the pass, for the decisions taken so
 * far): each set becomes one kernel whose branches are the set's kernels
 * (fl_kernel.branches; its ops, domain, accesses and tensors are their
 * union, its schedule a set node over theirs under a "parallel-branches"
 * mark), placed in the program where its dependences allow, the others
 * keeping their order; kernels are renumbered.  The C backend runs the
 * branches side by side in one parallel region.
 *
 * Nothing is memoised: the analysis reads kernel summaries and the isl
 * work is a few unions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/id.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/union_map.h>
#include <isl/union_set.h>

#include "layer1_impl.h"
#include "passes_impl.h"
#include "stitch.h"

#define L3_MARK "parallel-branches"

typedef struct l3_pass {
	fl_state *st;
	fl_error *err;
	fl_par_analysis *a;	/* owned by st->par */
	int n;			/* kernels before the pass */
	bool *feeds;		/* n x n: kernel i writes what j reads */
	int *set_of;		/* kernel -> the stitched set it joined, -1 */
	int n_sets;
	char why[FL_EVENT_REASON];
} l3_pass;

/* ---- kernel relations ------------------------------------------------ */

static bool kernel_reads(const fl_kernel *k, int t)
{
	for (int i = 0; i < k->n_tensors; i++)
		if (k->tensors[i].tensor == t && k->tensors[i].read)
			return true;
	return false;
}

static bool kernel_feeds(const fl_kernel *p, const fl_kernel *c)
{
	for (int i = 0; i < p->n_tensors; i++)
		if (p->tensors[i].written &&
		    kernel_reads(c, p->tensors[i].tensor))
			return true;
	return false;
}

static int feeds_matrix(l3_pass *l3)
{
	const fl_program *prog = l3->st->program;
	int n = l3->n;

	l3->feeds = calloc((size_t)n * n + 1, sizeof *l3->feeds);
	l3->set_of = malloc(((size_t)n + 1) * sizeof *l3->set_of);
	if (!l3->feeds || !l3->set_of)
		return -1;
	for (int i = 0; i < n; i++) {
		l3->set_of[i] = -1;
		for (int j = 0; j < n; j++)
			l3->feeds[i * n + j] = i != j &&
				kernel_feeds(&prog->kernels[i],
					     &prog->kernels[j]);
	}
	return 0;
}

/* Whether kernel k is in the candidate set `ks` (n of them). */
static bool in_set(const int *ks, int n, int k)
{
	for (int i = 0; i < n; i++)
		if (ks[i] == k)
			return true;
	return false;
}

/* Marks k reached, with the other kernels of its stitched set (they will
 * be one kernel, so reaching one reaches all); pushes them on `todo`. */
static void reach(const l3_pass *l3, int k, bool *seen, int *todo, int *top)
{
	for (int j = 0; j < l3->n; j++)
		if (!seen[j] && (j == k || (l3->set_of[k] >= 0 &&
					    l3->set_of[j] == l3->set_of[k]))) {
			seen[j] = true;
			todo[(*top)++] = j;
		}
}

/* Whether making the kernels ks one kernel keeps the program acyclic:
 * none feeds another, directly or through kernels (or sets stitched
 * before) outside ks.  Fills l3->why when not; -1 when out of memory. */
static int set_is_acyclic(l3_pass *l3, const int *ks, int n_ks)
{
	const fl_program *prog = l3->st->program;
	bool *seen = calloc((size_t)l3->n + 1, sizeof *seen);
	int *todo = malloc(((size_t)l3->n + 1) * sizeof *todo), top = 0;
	int ok = 1;

	if (!seen || !todo) {
		free(seen);
		free(todo);
		return -1;
	}
	for (int i = 0; i < n_ks && ok; i++)
		for (int j = 0; j < l3->n && ok; j++) {
			if (!l3->feeds[ks[i] * l3->n + j])
				continue;
			if (in_set(ks, n_ks, j)) {
				snprintf(l3->why, sizeof l3->why, "%s reads "
					 "what %s writes",
					 prog->kernels[j].name,
					 prog->kernels[ks[i]].name);
				ok = 0;
			} else {
				reach(l3, j, seen, todo, &top);
			}
		}
	while (top > 0 && ok) {
		int k = todo[--top];

		for (int j = 0; j < l3->n && ok; j++) {
			if (!l3->feeds[k * l3->n + j])
				continue;
			if (in_set(ks, n_ks, j)) {
				snprintf(l3->why, sizeof l3->why, "%s depends "
					 "on the set through %s: one kernel "
					 "would be a cycle",
					 prog->kernels[j].name,
					 prog->kernels[k].name);
				ok = 0;
			} else {
				reach(l3, j, seen, todo, &top);
			}
		}
	}
	free(seen);
	free(todo);
	return ok;
}

/* Whether the kernels ks have disjoint statement instances (a recomputed
 * producer has the same statement name in every kernel that recomputes
 * it: one domain could not tell them apart). */
static int domains_disjoint(l3_pass *l3, const int *ks, int n_ks)
{
	const fl_program *prog = l3->st->program;

	for (int i = 0; i < n_ks; i++)
		for (int j = i + 1; j < n_ks; j++) {
			isl_bool d = isl_union_set_is_disjoint(
				prog->kernels[ks[i]].domain,
				prog->kernels[ks[j]].domain);

			if (d < 0)
				return -1;
			if (!d) {
				snprintf(l3->why, sizeof l3->why, "%s and %s "
					 "share statement instances",
					 prog->kernels[ks[i]].name,
					 prog->kernels[ks[j]].name);
				return 0;
			}
		}
	return 1;
}

/* ---- decisions ------------------------------------------------------- */

/* The kernels of try t of round r (cost order), into ks. */
static int try_kernels(const l3_pass *l3, const fl_par_round *r,
		       const fl_par_try *t, int *ks)
{
	for (int i = 0; i < t->count; i++)
		ks[i] = l3->a->units[r->cand[t->first + i]].id;
	return t->count;
}

/* "fl_k2 | fl_k4 side by side (round 1 after fl_k1): costs 41.0 + 23.1
 * us, alone 64.1 us, together 46.0 us, gain 18.1 us" into buf. */
static void try_text(const l3_pass *l3, const fl_par_set *s, int round,
		     const fl_par_round *r, const fl_par_try *t, char *buf,
		     size_t n)
{
	const fl_program *prog = l3->st->program;
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; i < t->count && at < n; i++)
		at += snprintf(buf + at, n - at, "%s%s", i ? " | " : "",
			       prog->kernels[l3->a->units[r->cand[t->first +
			       i]].id].name);
	if (at < n)
		at += snprintf(buf + at, n - at, " (round %d, %s): costs",
			       round + 1, s->head);
	for (int i = 0; i < t->count && at < n; i++)
		at += snprintf(buf + at, n - at, "%s%.1f", i ? " + " : " ",
			       l3->a->units[r->cand[t->first + i]].cost * 1e6);
	if (at < n)
		snprintf(buf + at, n - at, " us, alone %.1f us, together %.1f "
			 "us, gain %.1f us", t->sum * 1e6, t->together * 1e6,
			 t->gain * 1e6);
}

/* The names of the ops of kernels ks (malloc'd, borrowed names) and
 * their count in *n_ops. */
static const char **set_op_names(const l3_pass *l3, const int *ks, int n_ks,
				 int *n_ops)
{
	const fl_program *prog = l3->st->program;
	const char **names;
	int n = 0;

	for (int i = 0; i < n_ks; i++)
		n += prog->kernels[ks[i]].n_ops;
	names = malloc(((size_t)n + 1) * sizeof *names);
	if (!names)
		return NULL;
	n = 0;
	for (int i = 0; i < n_ks; i++) {
		const fl_kernel *k = &prog->kernels[ks[i]];

		for (int j = 0; j < k->n_ops; j++)
			names[n++] = l3->st->graph->ops[k->ops[j]].name;
	}
	*n_ops = n;
	return names;
}

/* Whether the accepted try can be one kernel (else l3->why says why);
 * -1 on failure. */
static int stitchable(l3_pass *l3, const int *ks, int n_ks)
{
	int ok = set_is_acyclic(l3, ks, n_ks);

	if (ok == 1)
		ok = domains_disjoint(l3, ks, n_ks);
	return ok;
}

/* One decision: try t, logged as parallelised or rejected. */
static int decide_try(l3_pass *l3, const fl_par_set *s, int round,
		      const fl_par_round *r, fl_par_try *t, int *ks)
{
	fl_state *st = l3->st;
	char text[FL_EVENT_REASON];
	const char **names;
	int n_ks = try_kernels(l3, r, t, ks), n_ops = 0, ok = 0;
	int ga = st->program->kernels[ks[0]].group;
	int gb = n_ks > 1 ? st->program->kernels[ks[1]].group : -1;

	if (!fl_state_decide(st))
		return FL_PASS_PAUSED;
	try_text(l3, s, round, r, t, text, sizeof text);
	names = set_op_names(l3, ks, n_ks, &n_ops);
	if (!names || (t->accepted && (ok = stitchable(l3, ks, n_ks)) < 0))
		goto fail;
	if (ok) {
		for (int i = 0; i < n_ks; i++)
			l3->set_of[ks[i]] = l3->n_sets;
		l3->n_sets++;
		t->stitched = true;
		fl_state_log(st, FL_EV_PARALLELISED, "", names, n_ops, ga, gb,
			     "side by side: %s", text);
	} else if (t->accepted) {
		fl_state_log(st, FL_EV_REJECTED, "", names, n_ops, ga, gb,
			     "not stitched: %s; %s", l3->why, text);
	} else {
		fl_state_log(st, FL_EV_REJECTED, "", names, n_ops, ga, gb,
			     "not stitched: no gain; %s", text);
	}
	free(names);
	return FL_PASS_DONE;
fail:
	free(names);
	fl_error_set(l3->err, "layer 3: out of memory or isl failure");
	return -1;
}

/* Every try of the analysis, in the order evaluated. */
static int decide_all(l3_pass *l3)
{
	int *ks = malloc(((size_t)l3->n + 1) * sizeof *ks);
	int rc = FL_PASS_DONE;

	if (!ks) {
		fl_error_set(l3->err, "out of memory");
		return -1;
	}
	for (int s = 0; s < l3->a->n_sets && rc == FL_PASS_DONE; s++) {
		fl_par_set *set = &l3->a->sets[s];

		for (int r = 0; r < set->n_rounds && rc == FL_PASS_DONE; r++) {
			fl_par_round *rd = &set->rounds[r];

			for (int t = 0; t < rd->n_tries && rc == FL_PASS_DONE;
			     t++)
				rc = decide_try(l3, set, r, rd, &rd->tries[t],
						ks);
		}
	}
	free(ks);
	return rc;
}

/* ---- the stitched program -------------------------------------------- */

static int add_tensor(fl_kernel *k, const fl_kernel_tensor *src)
{
	for (int i = 0; i < k->n_tensors; i++)
		if (k->tensors[i].tensor == src->tensor) {
			k->tensors[i].read |= src->read;
			k->tensors[i].written |= src->written;
			return 0;
		}
	k->tensors[k->n_tensors] = *src;
	k->tensors[k->n_tensors].box_isl = isl_fixed_box_copy(src->box_isl);
	if (src->box_isl && !k->tensors[k->n_tensors].box_isl)
		return -1;
	k->n_tensors++;
	return 0;
}

/* The schedule of the stitched kernel: a set node over the branches'
 * trees (their instances are disjoint and independent) under the
 * L3_MARK mark. */
static __isl_give isl_schedule *branches_schedule(const fl_kernel *b, int n)
{
	isl_schedule *s = isl_schedule_copy(b[0].schedule);
	isl_schedule_node *node;

	for (int i = 1; i < n; i++)
		s = isl_schedule_set(s, isl_schedule_copy(b[i].schedule));
	node = isl_schedule_get_root(s);
	isl_schedule_free(s);
	node = isl_schedule_node_child(node, 0);
	node = isl_schedule_node_insert_mark(node,
		isl_id_alloc(isl_schedule_node_get_ctx(node), L3_MARK, NULL));
	s = isl_schedule_node_get_schedule(node);
	isl_schedule_node_free(node);
	return s;
}

/* The union of the branches' ops, instances, accesses and tensors. */
static int union_of_branches(fl_kernel *k)
{
	int n_ops = 0, n_t = 0;

	for (int i = 0; i < k->n_branches; i++) {
		n_ops += k->branches[i].n_ops;
		n_t += k->branches[i].n_tensors;
	}
	k->ops = malloc(((size_t)n_ops + 1) * sizeof *k->ops);
	k->tensors = calloc((size_t)n_t + 1, sizeof *k->tensors);
	if (!k->ops || !k->tensors)
		return -1;
	for (int i = 0; i < k->n_branches; i++) {
		const fl_kernel *b = &k->branches[i];

		memcpy(k->ops + k->n_ops, b->ops, (size_t)b->n_ops *
		       sizeof *b->ops);
		k->n_ops += b->n_ops;
		for (int t = 0; t < b->n_tensors; t++)
			if (add_tensor(k, &b->tensors[t]) < 0)
				return -1;
		k->domain = k->domain ? isl_union_set_union(k->domain,
				isl_union_set_copy(b->domain))
			    : isl_union_set_copy(b->domain);
		k->reads = k->reads ? isl_union_map_union(k->reads,
				isl_union_map_copy(b->reads))
			   : isl_union_map_copy(b->reads);
		k->writes = k->writes ? isl_union_map_union(k->writes,
				isl_union_map_copy(b->writes))
			    : isl_union_map_copy(b->writes);
	}
	return k->domain && k->reads && k->writes ? 0 : -1;
}

/* Makes k the kernel running branches b (n, moved into k).  -1 on
 * failure, with what was made owned by k. */
static int stitched_kernel(fl_kernel *k, fl_kernel *b, int n)
{
	memset(k, 0, sizeof *k);
	k->group = b[0].group;
	k->tile_m = k->tile_n = -1;
	k->branches = b;
	k->n_branches = n;
	if (union_of_branches(k) < 0)
		return -1;
	k->schedule = branches_schedule(b, n);
	if (!k->schedule)
		return -1;
	k->schedule_text = fl_l1_schedule_text(k->schedule);
	k->tree = fl_l1_tree(k->schedule);
	return k->schedule_text && k->tree ? 0 : -1;
}

/* The first kernel (in the old order) of each node: a kernel on its own,
 * or a stitched set; node_of[k] is k's node's first kernel. */
static void nodes(const l3_pass *l3, int *node_of)
{
	for (int k = 0; k < l3->n; k++) {
		node_of[k] = k;
		for (int j = 0; j < k && l3->set_of[k] >= 0; j++)
			if (l3->set_of[j] == l3->set_of[k]) {
				node_of[k] = j;
				break;
			}
	}
}

/* Whether node v (a first kernel) still waits for a node not yet
 * placed. */
static bool waits(const l3_pass *l3, const int *node_of, const bool *placed,
		  int v)
{
	for (int k = 0; k < l3->n; k++) {
		if (node_of[k] != v)
			continue;
		for (int j = 0; j < l3->n; j++)
			if (l3->feeds[j * l3->n + k] && node_of[j] != v &&
			    !placed[node_of[j]])
				return true;
	}
	return false;
}

/* The new order of the nodes: a topological order that keeps the old
 * order where the dependences allow (the ready node with the first
 * kernel earliest goes first).  Writes the first kernels into order and
 * returns their count. */
static int node_order(const l3_pass *l3, const int *node_of, bool *placed,
		      int *order)
{
	int n = 0, n_nodes = 0;

	for (int k = 0; k < l3->n; k++)
		n_nodes += node_of[k] == k;
	while (n < n_nodes) {
		int v = 0;

		while (v < l3->n && (node_of[v] != v || placed[v] ||
				     waits(l3, node_of, placed, v)))
			v++;
		if (v == l3->n)
			return -1;	/* a cycle: the checks rule it out */
		placed[v] = true;
		order[n++] = v;
	}
	return n;
}

/* The kernels of node v moved into a new array (old order). */
static fl_kernel *take_node(fl_program *prog, const int *node_of, int v,
			    int *n)
{
	fl_kernel *b = calloc((size_t)prog->n_kernels + 1, sizeof *b);

	*n = 0;
	if (!b)
		return NULL;
	for (int k = 0; k < prog->n_kernels; k++)
		if (node_of[k] == v) {
			b[(*n)++] = prog->kernels[k];
			memset(&prog->kernels[k], 0, sizeof prog->kernels[k]);
		}
	return b;
}

/* Marks the analysis' stitched tries with the name of their kernel. */
static void name_tries(l3_pass *l3, const int *old_to_new)
{
	for (int s = 0; s < l3->a->n_sets; s++)
		for (int r = 0; r < l3->a->sets[s].n_rounds; r++) {
			fl_par_round *rd = &l3->a->sets[s].rounds[r];

			for (int t = 0; t < rd->n_tries; t++)
				if (rd->tries[t].stitched)
					snprintf(rd->tries[t].kernel,
						 sizeof rd->tries[t].kernel,
						 "fl_k%d", old_to_new[
						 l3->a->units[rd->cand[
						 rd->tries[t].first]].id]);
		}
}

/* Rebuilds the program with each stitched set as one kernel. */
static int stitch_program(l3_pass *l3)
{
	fl_program *prog = l3->st->program;
	int n = l3->n, *node_of = malloc(((size_t)n + 1) * sizeof *node_of);
	int *order = malloc(((size_t)n + 1) * sizeof *order);
	int *old_to_new = malloc(((size_t)n + 1) * sizeof *old_to_new);
	bool *placed = calloc((size_t)n + 1, sizeof *placed);
	fl_kernel *ks = calloc((size_t)n + 1, sizeof *ks);
	int n_new = -1, rc = -1;

	if (node_of && order && old_to_new && placed && ks) {
		nodes(l3, node_of);
		n_new = node_order(l3, node_of, placed, order);
	}
	for (int i = 0; i < n_new; i++) {
		int nb;
		fl_kernel *b = take_node(prog, node_of, order[i], &nb);

		for (int k = 0; k < n; k++)
			if (node_of[k] == order[i])
				old_to_new[k] = i;
		if (!b)
			break;
		if (nb == 1) {
			ks[i] = b[0];
			free(b);
		} else if (stitched_kernel(&ks[i], b, nb) < 0) {
			fl_kernel_clear(&ks[i]);
			memset(&ks[i], 0, sizeof ks[i]);
			break;
		}
		ks[i].id = i;
		snprintf(ks[i].name, sizeof ks[i].name, "fl_k%d", i);
		rc = i == n_new - 1 ? 0 : -1;
	}
	if (rc == 0) {
		name_tries(l3, old_to_new);
		free(prog->kernels);
		prog->kernels = ks;
		prog->n_kernels = n_new;
		ks = NULL;
	} else {
		fl_error_set(l3->err, "layer 3: could not build the stitched "
			     "program");
	}
	for (int i = 0; ks && i < n; i++)
		fl_kernel_clear(&ks[i]);
	free(ks);
	free(node_of);
	free(order);
	free(old_to_new);
	free(placed);
	return rc;
}

/* ---- the pass --------------------------------------------------------- */

static int analyse(l3_pass *l3)
{
	fl_state *st = l3->st;
	fl_roofline m;

	if (st->opts->run.target == FL_TARGET_CUDA)
		fl_roofline_cuda_default(&m);
	else
		fl_roofline_default(&m);
	if (st->opts->launch_cost_set)
		m.launch = st->opts->launch_cost;
	st->par = fl_stitch_parallel_analyze(st->graph, &st->part,
					     st->program, &m, l3->err);
	l3->a = st->par;
	if (!l3->a)
		return -1;
	if (l3->a->kind != FL_PAR_KERNELS) {
		fl_error_set(l3->err, "layer 3: the analysis did not take the "
			     "program's kernels as its units");
		return -1;
	}
	return feeds_matrix(l3);
}

int fl_pass_layer3(fl_state *st, fl_error *err)
{
	l3_pass l3 = {st, err, NULL, 0, NULL, NULL, 0, ""};
	int rc;

	if (st->opts->strategy != FL_STRATEGY_APOLLO || !st->program)
		return FL_PASS_DONE;
	fl_par_analysis_free(st->par);
	st->par = NULL;
	l3.n = st->program->n_kernels;
	if (analyse(&l3) < 0) {
		if (!err->msg[0])
			fl_error_set(err, "out of memory");
		rc = -1;
	} else {
		rc = decide_all(&l3);
	}
	/* what was decided, also when paused inside the pass */
	if (rc >= 0 && l3.n_sets > 0 && stitch_program(&l3) < 0)
		rc = -1;
	free(l3.feeds);
	free(l3.set_of);
	return rc;
}
