/* The state checker (fl_state_check): invariants every pass must keep.
 * The sanitizer build runs it after every pass (engine.c), the tests call
 * it through fl_engine_check at chosen steps.
 *
 *   - once micro-graphs exist: every op in exactly one alive micro-graph,
 *     group_of agreeing with the member lists, members ascending;
 *   - the micro-graphs form a DAG (no producer -> consumer cycle);
 *   - once a program exists: kernels cover distinct alive micro-graphs,
 *     each exactly its members; a complete layer 1 covers them all;
 *   - placements: every tensor a kernel touches is a graph tensor, listed
 *     once; graph inputs, params, consts and outputs, and tensors another
 *     kernel reads, are global; tile-local ones have a footprint box;
 *     register ones are written and read inside their kernel;
 *   - a custom op is a kernel of its own, with no schedule and every
 *     tensor global (its code is the op's reference code); every other
 *     kernel has a schedule;
 *   - generated code exists for every kernel once the unit exists. */
#include <stdlib.h>
#include <string.h>

#include "state_impl.h"

static int check_groups(const fl_state *st, fl_error *err)
{
	const fl_partition *p = &st->part;
	int n_ops = st->graph->n_ops;
	int *seen = calloc((size_t)n_ops + 1, sizeof *seen);

	if (!seen) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int i = 0; i < p->n_groups; i++) {
		const fl_micro_graph *m = &p->groups[i];

		for (int j = 0; m->alive && j < m->n_members; j++) {
			int op = m->members[j];

			if (op < 0 || op >= n_ops || seen[op]++ ||
			    p->group_of[op] != i || (j && op <= m->members[j - 1])) {
				fl_error_set(err, "micro-graph G%d: member %d is "
					     "out of range, repeated, not ascending "
					     "or mapped elsewhere", i, op);
				free(seen);
				return -1;
			}
		}
	}
	for (int op = 0; op < n_ops; op++)
		if (!seen[op]) {
			fl_error_set(err, "op %s is in no micro-graph",
				     st->graph->ops[op].name);
			free(seen);
			return -1;
		}
	free(seen);
	return 0;
}

/* Kahn's algorithm over the micro-graph edges (producer group ->
 * consumer group, one per op input crossing groups): every alive
 * micro-graph gets placed unless there is a cycle. */
static int check_dag(const fl_state *st, fl_error *err)
{
	const fl_graph *g = st->graph;
	const int *grp = st->part.group_of;
	int n = st->part.n_groups, n_edges = 0, head = 0, tail = 0, alive = 0;
	int *indeg = calloc((size_t)n + 1, sizeof *indeg);
	int *start = calloc((size_t)n + 2, sizeof *start);
	int *queue = malloc(((size_t)n + 1) * sizeof *queue), *to = NULL;

	for (int c = 0; c < g->n_ops; c++)
		n_edges += g->ops[c].n_in;
	to = malloc(((size_t)n_edges + 1) * sizeof *to);
	if (!indeg || !start || !queue || !to) {
		fl_error_set(err, "out of memory");
		n = -1;
		goto out;
	}
	/* edges grouped by their producer group (CSR) */
	for (int pass = 0; pass < 2; pass++) {
		for (int c = 0; c < g->n_ops; c++)
			for (int k = 0; k < g->ops[c].n_in; k++) {
				int pr = g->tensors[g->ops[c].in[k]].producer;

				if (pr < 0 || grp[pr] == grp[c])
					continue;
				if (pass == 0) {
					start[grp[pr] + 1]++;
					indeg[grp[c]]++;
				} else {
					to[start[grp[pr]]++] = grp[c];
				}
			}
		if (pass == 0) {
			for (int i = 0; i < n; i++)
				start[i + 1] += start[i];
		} else {	/* the fill moved each start to the next one's */
			memmove(start + 1, start, (size_t)n * sizeof *start);
			start[0] = 0;
		}
	}
	for (int i = 0; i < n; i++) {
		alive += st->part.groups[i].alive;
		if (st->part.groups[i].alive && !indeg[i])
			queue[tail++] = i;
	}
	while (head < tail) {
		int x = queue[head++];

		for (int e = start[x]; e < start[x + 1]; e++)
			if (--indeg[to[e]] == 0)
				queue[tail++] = to[e];
	}
	if (tail != alive) {
		fl_error_set(err, "the micro-graphs form a cycle (%d of %d "
			     "ordered)", tail, alive);
		n = -1;
	}
out:
	free(indeg);
	free(start);
	free(queue);
	free(to);
	return n < 0 ? -1 : 0;
}

/* The kernel (index) that writes tensor t, -1 when none. */
static int writer_kernel(const fl_program *pr, int t)
{
	for (int k = 0; k < pr->n_kernels; k++)
		for (int i = 0; i < pr->kernels[k].n_ops; i++)
			if (pr->graph->ops[pr->kernels[k].ops[i]].out[0] == t)
				return k;
	return -1;
}

static bool kernel_reads(const fl_graph *g, const fl_kernel *k, int t)
{
	for (int i = 0; i < k->n_ops; i++)
		for (int j = 0; j < g->ops[k->ops[i]].n_in; j++)
			if (g->ops[k->ops[i]].in[j] == t)
				return true;
	return false;
}

static int check_tensor(const fl_state *st, const fl_kernel *k,
			const fl_kernel_tensor *kt, fl_error *err)
{
	const fl_graph *g = st->graph;
	const fl_program *pr = st->program;
	const fl_tensor *t;
	bool outside = false;

	if (kt->tensor < 0 || kt->tensor >= g->n_tensors) {
		fl_error_set(err, "%s: tensor %d out of range", k->name, kt->tensor);
		return -1;
	}
	t = &g->tensors[kt->tensor];
	for (int o = 0; o < pr->n_kernels; o++)
		outside |= &pr->kernels[o] != k &&
			   kernel_reads(g, &pr->kernels[o], kt->tensor);
	if (kt->place == FL_PLACE_GLOBAL)
		return 0;
	if (t->role != FL_ROLE_TEMP || outside) {
		fl_error_set(err, "%s: %s is %s but %s", k->name, t->name,
			     fl_placement_name(kt->place), outside ?
			     "another kernel reads it" : "it is not a temporary");
		return -1;
	}
	if (kt->place == FL_PLACE_TILE_LOCAL && !kt->box_isl) {
		fl_error_set(err, "%s: tile-local %s has no footprint box",
			     k->name, t->name);
		return -1;
	}
	if (kt->place == FL_PLACE_REGISTER &&
	    (writer_kernel(pr, kt->tensor) != k - pr->kernels ||
	     !kernel_reads(g, k, kt->tensor))) {
		fl_error_set(err, "%s: register %s is not both written and read "
			     "there", k->name, t->name);
		return -1;
	}
	return 0;
}

/* A custom op is alone in its kernel, which has no schedule and only
 * global tensors; any other kernel has a schedule. */
static int check_custom(const fl_state *st, const fl_kernel *k,
			fl_error *err)
{
	bool custom = false;

	for (int i = 0; i < k->n_ops; i++)
		custom |= st->graph->ops[k->ops[i]].kind == FL_OP_CUSTOM;
	if (!custom && !k->schedule) {
		fl_error_set(err, "%s has no schedule", k->name);
		return -1;
	}
	if (custom && (k->n_ops != 1 || k->schedule)) {
		fl_error_set(err, "%s: a custom op is a kernel of its own, "
			     "without a schedule", k->name);
		return -1;
	}
	for (int i = 0; custom && i < k->n_tensors; i++)
		if (k->tensors[i].place != FL_PLACE_GLOBAL) {
			fl_error_set(err, "%s: %s of a custom op's kernel is "
				     "%s, not global", k->name,
				     st->graph->tensors[k->tensors[i].tensor].name,
				     fl_placement_name(k->tensors[i].place));
			return -1;
		}
	return 0;
}

/* Marks micro-graph gid covered by kernel k and counts its members into
 * *n_ops; -1 when it is not alive or another kernel covers it. */
static int cover_group(const fl_state *st, const fl_kernel *k, int gid,
		       bool *covered, int *n_ops, fl_error *err)
{
	const fl_partition *p = &st->part;

	if (gid < 0 || gid >= p->n_groups || !p->groups[gid].alive ||
	    covered[gid]) {
		fl_error_set(err, "%s: micro-graph G%d is not alive or has "
			     "another kernel", k->name, gid);
		return -1;
	}
	covered[gid] = true;
	*n_ops += p->groups[gid].n_members;
	return 0;
}

/* A kernel covers whole micro-graphs: exactly one up to layer 1 (its
 * ops in member order), one or more once layer 2 may have stitched
 * them (its ops are then the union of their members). */
static int check_cover(const fl_state *st, const fl_kernel *k,
		       bool *covered, fl_error *err)
{
	const fl_partition *p = &st->part;
	int n = 0;

	if (cover_group(st, k, k->group, covered, &n, err) < 0)
		return -1;
	for (int i = 0; st->pass > FL_PASS_LAYER1 && p->group_of &&
			i < k->n_ops; i++) {
		int gid = p->group_of[k->ops[i]];

		if (gid != k->group && (gid < 0 || !covered[gid]) &&
		    cover_group(st, k, gid, covered, &n, err) < 0)
			return -1;
	}
	for (int i = 0; i < k->n_ops && n == k->n_ops; i++)
		if (k->ops[i] < 0 || k->ops[i] >= st->graph->n_ops ||
		    p->group_of[k->ops[i]] < 0 ||
		    !covered[p->group_of[k->ops[i]]])
			n = -1;
	if (n != k->n_ops || (n == p->groups[k->group].n_members &&
	    memcmp(k->ops, p->groups[k->group].members,
		   (size_t)n * sizeof *k->ops))) {
		fl_error_set(err, "%s does not cover exactly %s G%d", k->name,
			     n == p->groups[k->group].n_members ? "micro-graph"
			     : "the micro-graphs of its ops, from", k->group);
		return -1;
	}
	return 0;
}

static int check_kernel(const fl_state *st, const fl_kernel *k,
			bool *covered, fl_error *err)
{
	if (check_cover(st, k, covered, err) < 0)
		return -1;
	for (int i = 0; i < k->n_tensors; i++) {
		for (int j = 0; j < i; j++)
			if (k->tensors[j].tensor == k->tensors[i].tensor) {
				fl_error_set(err, "%s: tensor %d placed twice",
					     k->name, k->tensors[i].tensor);
				return -1;
			}
		if (check_tensor(st, k, &k->tensors[i], err) < 0)
			return -1;
	}
	return check_custom(st, k, err);
}

static int check_program(const fl_state *st, fl_error *err)
{
	const fl_program *pr = st->program;
	bool *covered = calloc((size_t)st->part.n_groups + 1, sizeof *covered);
	int rc = 0;

	if (!covered) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int k = 0; k < pr->n_kernels && rc == 0; k++)
		rc = check_kernel(st, &pr->kernels[k], covered, err);
	/* once layer 1 is over, every alive micro-graph has its kernel */
	for (int i = 0; rc == 0 && st->pass > FL_PASS_LAYER1 &&
			i < st->part.n_groups; i++)
		if (st->part.groups[i].alive && !covered[i]) {
			fl_error_set(err, "micro-graph G%d has no kernel", i);
			rc = -1;
		}
	free(covered);
	return rc;
}

int fl_state_check(const fl_state *st, fl_error *err)
{
	if (!st->graph || !st->log) {
		fl_error_set(err, "no state");
		return -1;
	}
	if (st->part.groups && st->part.group_of &&
	    (check_groups(st, err) < 0 || check_dag(st, err) < 0))
		return -1;
	if (st->program && check_program(st, err) < 0)
		return -1;
	if (st->unit_src && (!st->program || st->n_src != st->program->n_kernels)) {
		fl_error_set(err, "generated code does not match the program");
		return -1;
	}
	for (int i = 0; st->unit_src && i < st->n_src; i++)
		if (!st->kernel_src[i]) {
			fl_error_set(err, "kernel %d has no generated code", i);
			return -1;
		}
	return 0;
}
