/* Parallel stitching, the analysis (stitch.h; DESIGN 1.5, APOLLO 4.3 and
 * Algorithm 3): branch sets of independent units, their candidates, the
 * roofline costs, and the groups a greedy pass over the sorted costs
 * accepts.  Reads the graph, partition and program; changes nothing.
 * Everything it returns is owned by the analysis. */
#include "stitch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fl_roofline_default(fl_roofline *m)
{
	m->cores = 8;
	m->bw = 20e9;
	m->peak = 256e9;
	m->launch = 5e-6;
	m->grain = 4096;
}

void fl_roofline_cuda_default(fl_roofline *m)
{
	m->cores = 132;
	m->bw = 3.35e12;
	m->peak = 67e12;
	m->launch = 4e-6;
	m->grain = 2048;
}

const char *fl_par_unit_kind_name(fl_par_unit_kind k)
{
	switch (k) {
	case FL_PAR_KERNELS: return "kernels";
	case FL_PAR_GROUPS: return "micro-graphs";
	case FL_PAR_OPS: return "ops";
	}
	return "?";
}

double fl_par_gain(const fl_roofline *m, const double *cost,
		   const double *roof, const int *cores, int n,
		   double *together)
{
	double sum = 0, max_roof = 0, shared = 0, t;

	for (int i = 0; i < n; i++) {
		sum += cost[i];
		if (roof[i] > max_roof)
			max_roof = roof[i];
		shared += (double)cores[i] * roof[i];
	}
	shared /= m->cores > 0 ? m->cores : 1;
	t = m->launch + (shared > max_roof ? shared : max_roof);
	if (together)
		*together = t;
	return sum - t;
}

/* ---- units ------------------------------------------------------------ */

/* What the walk works on: units and the deduplicated edges between
 * them. */
typedef struct par_ctx {
	const fl_graph *g;
	const fl_roofline *m;
	fl_par_analysis *a;
	int *unit_of;		/* op -> unit, -1: none */
	int **ops_of, *n_of;	/* unit -> its ops (borrowed) */
	int *one;		/* FL_PAR_OPS: ops_of[i] points at one[i] */
	bool *ext_read;		/* tensor -> read outside its producer's unit */
	int **succ, *n_succ;
	int **pred, *n_pred;
} par_ctx;

static int64_t tensor_numel(const fl_graph *g, int t)
{
	int64_t n = fl_shape_numel(&g->tensors[t].shape);

	return n < 0 ? INT64_MAX / 8 : n;
}

static bool op_compute_bound(fl_op_kind k)
{
	return k == FL_OP_MATMUL || k == FL_OP_CONV2D || k == FL_OP_DENSE ||
	       k == FL_OP_ATTENTION;
}

/* Flops of op o: one per output element for element-wise work, one per
 * input element for a reduction, the multiply-adds of matmul and conv2d,
 * the window of a pool; data movement does none. */
static double op_flops(const fl_graph *g, const fl_op *o)
{
	double out = o->n_out > 0 ? (double)tensor_numel(g, o->out[0]) : 0;
	const fl_shape *a = o->n_in > 0 ? &g->tensors[o->in[0]].shape : NULL;
	const fl_op_info *info = fl_op_info_of(o->kind);
	int64_t win[2] = {1, 1};
	int n_win = 0;
	bool ta = false;

	switch (o->kind) {
	case FL_OP_MATMUL:
		if (!a || a->rank < 2)
			return 2 * out;
		fl_attr_bool(&o->attrs, "transpose_a", false, &ta, NULL);
		return 2 * out * (double)a->dim[a->rank - (ta ? 2 : 1)];
	case FL_OP_CONV2D:
		if (o->n_in < 2)
			return 2 * out;
		return 2 * out * (double)tensor_numel(g, o->in[1]) /
		       (double)g->tensors[o->in[1]].shape.dim[0];
	case FL_OP_POOL2D:
		if (fl_attr_ints(&o->attrs, "kernel", win, 2, &n_win,
				 NULL) < 0 || n_win != 2)
			return out;
		return out * (double)(win[0] * win[1]);
	default:
		break;
	}
	if (!info)
		return 0;
	if (info->cls == FL_CLASS_REDUCE && a)
		return (double)tensor_numel(g, o->in[0]);
	if (info->cls == FL_CLASS_UNARY || info->cls == FL_CLASS_BINARY ||
	    info->cls == FL_CLASS_COMPOUND)
		return out;
	return 0;
}

/* Bytes unit u moves: each tensor it reads from outside (produced by
 * another unit or fed by the caller) once, and each it writes that is
 * read outside (ext_read) or is a graph output.  seen[] is scratch, left
 * marked with u. */
static int64_t unit_bytes(const par_ctx *c, int u, const int *ops, int n,
			  int *seen)
{
	const fl_graph *g = c->g;
	int64_t b = 0;

	for (int i = 0; i < n; i++) {
		const fl_op *o = &g->ops[ops[i]];

		for (int k = 0; k < o->n_in; k++) {
			int t = o->in[k], p = g->tensors[t].producer;

			if (seen[t] == u || (p >= 0 && c->unit_of[p] == u))
				continue;
			seen[t] = u;
			b += fl_dtype_size(g->tensors[t].dtype) *
				     tensor_numel(g, t);
		}
		for (int k = 0; k < o->n_out; k++) {
			int t = o->out[k];

			if (c->ext_read[t] ||
			    g->tensors[t].role == FL_ROLE_OUTPUT)
				b += fl_dtype_size(g->tensors[t].dtype) *
				     tensor_numel(g, t);
		}
	}
	return b;
}

/* ext_read[t]: tensor t is read by a unit other than its producer's. */
static void mark_ext_read(par_ctx *c)
{
	const fl_graph *g = c->g;

	for (int j = 0; j < g->n_ops; j++)
		for (int k = 0; k < g->ops[j].n_in; k++) {
			int t = g->ops[j].in[k], p = g->tensors[t].producer;

			if (p >= 0 && c->unit_of[p] != c->unit_of[j])
				c->ext_read[t] = true;
		}
}

/* Fills unit u (its id and name set) from its ops: bytes, flops, cores,
 * costs, and whether it is dropped. */
static void unit_measure(par_ctx *c, int u, const int *ops, int n,
			 int *seen)
{
	fl_par_unit *pu = &c->a->units[u];
	const fl_roofline *m = c->m;
	int64_t widest = 1;
	double share;

	pu->n_ops = n;
	pu->first_op = n > 0 ? ops[0] : -1;
	pu->branch_set = pu->branch = -1;
	for (int i = 0; i < n; i++) {
		const fl_op *o = &c->g->ops[ops[i]];

		pu->flops += op_flops(c->g, o);
		if (op_compute_bound(o->kind))
			pu->compute_bound = true;
		if (o->kind == FL_OP_CUSTOM)
			pu->custom = true;
		if (o->n_out > 0 && tensor_numel(c->g, o->out[0]) > widest)
			widest = tensor_numel(c->g, o->out[0]);
	}
	pu->bytes = unit_bytes(c, u, ops, n, seen);
	pu->cores = (int)((widest + m->grain - 1) / m->grain);
	if (pu->cores > m->cores || pu->cores < 1)
		pu->cores = pu->cores < 1 ? 1 : m->cores;
	share = (double)pu->cores / m->cores;
	pu->roof = (double)pu->bytes / (m->bw * share);
	if (pu->flops / (m->peak * share) > pu->roof)
		pu->roof = pu->flops / (m->peak * share);
	pu->cost = m->launch + pu->roof;
}

/* Unit u is ops[0..n-1] (borrowed), named "<label> (first..last)", or
 * by its one op's name when label is NULL. */
static void set_unit(par_ctx *c, int u, int id, int *ops, int n,
		     const char *label)
{
	const fl_graph *g = c->g;
	fl_par_unit *pu = &c->a->units[u];
	char span[48];

	pu->id = id;
	c->ops_of[u] = ops;
	c->n_of[u] = n;
	for (int i = 0; i < n; i++)
		if (ops[i] >= 0 && ops[i] < g->n_ops)
			c->unit_of[ops[i]] = u;
	if (n == 0)
		snprintf(span, sizeof span, "no ops");
	else if (n == 1)
		snprintf(span, sizeof span, "%s", g->ops[ops[0]].name);
	else
		snprintf(span, sizeof span, "%s..%s", g->ops[ops[0]].name,
			 g->ops[ops[n - 1]].name);
	if (label)
		snprintf(pu->name, sizeof pu->name, "%s (%s)", label, span);
	else
		snprintf(pu->name, sizeof pu->name, "%s", span);
}

/* Whether program prog covers every op that partition p put in a
 * micro-graph: while layer 1 is under way the program holds only the
 * kernels made so far, and the micro-graphs are the better units. */
static bool program_complete(const fl_program *prog, const fl_partition *p,
			     int n_ops)
{
	int64_t covered = 0, grouped = 0;

	if (!prog || prog->n_kernels == 0)
		return false;
	if (!p || !p->group_of || p->n_ops != n_ops)
		return true;
	for (int k = 0; k < prog->n_kernels; k++)
		covered += prog->kernels[k].n_ops;
	for (int i = 0; i < n_ops; i++)
		grouped += p->group_of[i] >= 0;
	return covered >= grouped;
}

/* The units: kernels, else alive micro-graphs, else ops; fills
 * c->unit_of. */
static int make_units(par_ctx *c, const fl_partition *p,
		      const fl_program *prog)
{
	const fl_graph *g = c->g;
	fl_par_analysis *a = c->a;
	int n = 0;

	if (program_complete(prog, p, g->n_ops)) {
		a->kind = FL_PAR_KERNELS;
		n = prog->n_kernels;
	} else if (p && p->n_ops == g->n_ops && p->group_of &&
		   fl_partition_count_alive(p) > 0) {
		a->kind = FL_PAR_GROUPS;
		n = fl_partition_count_alive(p);
	} else {
		a->kind = FL_PAR_OPS;
		n = g->n_ops;
	}
	a->units = calloc((size_t)n + 1, sizeof *a->units);
	if (!a->units)
		return -1;
	a->n_units = n;
	for (int i = 0; i < g->n_ops; i++)
		c->unit_of[i] = -1;
	if (a->kind == FL_PAR_KERNELS) {
		for (int k = 0; k < n; k++)
			set_unit(c, k, k, prog->kernels[k].ops,
				 prog->kernels[k].n_ops,
				 prog->kernels[k].name);
	} else if (a->kind == FL_PAR_GROUPS) {
		for (int gi = 0, u = 0; gi < p->n_groups && u < n; gi++) {
			const fl_micro_graph *mg = &p->groups[gi];
			char label[16];

			if (!mg->alive)
				continue;
			snprintf(label, sizeof label, "G%d", mg->id);
			set_unit(c, u++, mg->id, mg->members, mg->n_members,
				 label);
		}
	} else {
		for (int i = 0; i < n; i++) {
			c->one[i] = i;
			set_unit(c, i, i, &c->one[i], 1, NULL);
		}
	}
	return 0;
}

/* Appends v to the list *l of *n entries. */
static int push(int **l, int *n, int v)
{
	int *t = realloc(*l, ((size_t)*n + 1) * sizeof *t);

	if (!t)
		return -1;
	t[(*n)++] = v;
	*l = t;
	return 0;
}

/* Data edges between units, each pair once. */
static int make_edges(par_ctx *c)
{
	const fl_graph *g = c->g;
	int n = c->a->n_units;
	int *mark = malloc(((size_t)n + 1) * sizeof *mark);
	int rc = 0;

	c->succ = calloc((size_t)n + 1, sizeof *c->succ);
	c->pred = calloc((size_t)n + 1, sizeof *c->pred);
	c->n_succ = calloc((size_t)n + 1, sizeof *c->n_succ);
	c->n_pred = calloc((size_t)n + 1, sizeof *c->n_pred);
	if (!mark || !c->succ || !c->pred || !c->n_succ || !c->n_pred) {
		free(mark);
		return -1;
	}
	for (int i = 0; i < n; i++)
		mark[i] = -1;
	/* mark[u] == v: the edge u -> v is known */
	for (int v = 0; v < n && rc == 0; v++) {
		for (int i = 0; i < c->n_of[v] && rc == 0; i++) {
			int j = c->ops_of[v][i];

			for (int k = 0; k < g->ops[j].n_in && rc == 0; k++) {
				int p = g->tensors[g->ops[j].in[k]].producer;
				int u = p >= 0 ? c->unit_of[p] : -1;

				if (u < 0 || u == v || mark[u] == v)
					continue;
				mark[u] = v;
				rc = push(&c->succ[u], &c->n_succ[u], v) ||
				     push(&c->pred[v], &c->n_pred[v], u);
			}
		}
	}
	free(mark);
	return rc ? -1 : 0;
}

/* ---- branch sets -------------------------------------------------------- */

/* Walks one branch from unit start, forward (fwd) or back, while each
 * unit is on no other branch and has one producer and one consumer in
 * the direction walked; a unit shared with other branches (a head or a
 * tail) ends the branch and is left out. */
static int walk(par_ctx *c, int set, int bi, int start, bool fwd,
		fl_par_branch *b)
{
	int cur = start;

	while (cur >= 0) {
		fl_par_unit *u = &c->a->units[cur];
		int n_back = fwd ? c->n_pred[cur] : c->n_succ[cur];
		int n_on = fwd ? c->n_succ[cur] : c->n_pred[cur];

		if (n_back > 1 || n_on > 1 || u->branch_set >= 0)
			break;
		if (push(&b->units, &b->n_units, cur) < 0)
			return -1;
		u->branch_set = set;
		u->branch = bi;
		if (n_on == 0)
			break;
		cur = fwd ? c->succ[cur][0] : c->pred[cur][0];
	}
	return 0;
}

/* Adds a branch set whose branches start at starts[0..n-1] (walked
 * forward or back); kept only when two or more branches are not
 * empty. */
static int add_set(par_ctx *c, const char *head, const int *starts, int n,
		   bool fwd)
{
	fl_par_analysis *a = c->a;
	fl_par_set *s, *t;
	int set = a->n_sets, nonempty = 0;

	t = realloc(a->sets, ((size_t)set + 1) * sizeof *t);
	if (!t)
		return -1;
	a->sets = t;
	s = &a->sets[set];
	memset(s, 0, sizeof *s);
	snprintf(s->head, sizeof s->head, "%s", head);
	s->branches = calloc((size_t)n, sizeof *s->branches);
	if (!s->branches)
		return -1;
	a->n_sets++;
	for (int i = 0; i < n; i++) {
		fl_par_branch *b = &s->branches[s->n_branches];

		if (walk(c, set, s->n_branches, starts[i], fwd, b) < 0) {
			s->n_branches++;	/* so that it is freed */
			return -1;
		}
		if (b->n_units > 0) {
			s->n_branches++;
			nonempty++;
		}
	}
	if (nonempty >= 2)
		return 0;
	/* too few branches: give their units back */
	for (int i = 0; i < s->n_branches; i++) {
		for (int k = 0; k < s->branches[i].n_units; k++)
			a->units[s->branches[i].units[k]].branch_set = -1;
		free(s->branches[i].units);
	}
	free(s->branches);
	a->n_sets--;
	return 0;
}

/* Every branch set: the virtual head, then each multi-head unit, then
 * each multi-tail unit, then the virtual tail. */
static int find_sets(par_ctx *c)
{
	fl_par_analysis *a = c->a;
	int n = a->n_units;
	int *ends = malloc(((size_t)n + 1) * sizeof *ends);
	char head[128];
	int k = 0, rc = 0;

	if (!ends)
		return -1;
	for (int u = 0; u < n; u++)
		if (c->n_pred[u] == 0)
			ends[k++] = u;
	if (k >= 2)
		rc = add_set(c, "virtual head (the graph's sources)", ends, k,
			     true);
	for (int u = 0; u < n && rc == 0; u++)
		if (c->n_succ[u] > 1) {
			snprintf(head, sizeof head, "after %s",
				 a->units[u].name);
			rc = add_set(c, head, c->succ[u], c->n_succ[u], true);
		}
	for (int u = 0; u < n && rc == 0; u++)
		if (c->n_pred[u] > 1) {
			snprintf(head, sizeof head, "before %s",
				 a->units[u].name);
			rc = add_set(c, head, c->pred[u], c->n_pred[u], false);
		}
	k = 0;
	for (int u = 0; u < n && rc == 0; u++)
		if (c->n_succ[u] == 0)
			ends[k++] = u;
	if (k >= 2 && rc == 0)
		rc = add_set(c, "virtual tail (the graph's sinks)", ends, k,
			     false);
	free(ends);
	return rc;
}

/* ---- candidates and rounds ---------------------------------------------- */

/* A candidate and its cost, for sorting without a global. */
typedef struct by_cost {
	double cost;
	int unit;
} by_cost;

/* Cost descending, then unit index: a stable, deterministic order. */
static int by_cost_desc(const void *x, const void *y)
{
	const by_cost *a = x, *b = y;

	if (a->cost != b->cost)
		return a->cost < b->cost ? 1 : -1;
	return a->unit - b->unit;
}

/* Evaluates sorted candidates [first, first+count) of round r. */
static int try_set(par_ctx *c, fl_par_round *r, int first, int count)
{
	double cost[count], roof[count];
	int cores[count];
	fl_par_try *t = realloc(r->tries, ((size_t)r->n_tries + 1) *
					  sizeof *t);

	if (!t)
		return -1;
	r->tries = t;
	t = &r->tries[r->n_tries++];
	memset(t, 0, sizeof *t);
	t->first = first;
	t->count = count;
	for (int i = 0; i < count; i++) {
		const fl_par_unit *u = &c->a->units[r->cand[first + i]];

		cost[i] = u->cost;
		roof[i] = u->roof;
		cores[i] = u->cores;
		t->sum += u->cost;
		if (u->cost > t->max)
			t->max = u->cost;
	}
	t->gain = fl_par_gain(c->m, cost, roof, cores, count, &t->together);
	t->accepted = t->gain > 0;
	return t->accepted;
}

/* APOLLO Algorithm 3 on one round: from m, the largest prefix with a
 * positive gain, shrinking k until there is one; a single unit is left
 * alone. */
static int greedy_round(par_ctx *c, fl_par_round *r)
{
	int m = 0;

	while (m < r->n - 1) {
		int k = r->n - m, ok = 0;

		for (; k >= 2; k--) {
			ok = try_set(c, r, m, k);
			if (ok < 0)
				return -1;
			if (ok)
				break;
		}
		if (ok) {
			c->a->n_groups++;
			c->a->total_gain += r->tries[r->n_tries - 1].gain;
			m += k;
		} else {
			m++;
		}
	}
	return 0;
}

/* Candidates of set s (units not dropped) and its rounds. */
static int make_rounds(par_ctx *c, fl_par_set *s)
{
	int longest = 0;

	for (int i = 0; i < s->n_branches; i++) {
		fl_par_branch *b = &s->branches[i];

		b->cand = malloc(((size_t)b->n_units + 1) * sizeof *b->cand);
		if (!b->cand)
			return -1;
		for (int k = 0; k < b->n_units; k++) {
			const fl_par_unit *u = &c->a->units[b->units[k]];

			if (!u->compute_bound && !u->custom)
				b->cand[b->n_cand++] = b->units[k];
		}
		if (b->n_cand > longest)
			longest = b->n_cand;
	}
	s->rounds = calloc((size_t)longest + 1, sizeof *s->rounds);
	if (!s->rounds)
		return -1;
	for (int r = 0; r < longest; r++) {
		fl_par_round *rd = &s->rounds[s->n_rounds++];
		by_cost order[s->n_branches + 1];

		rd->cand = malloc(((size_t)s->n_branches + 1) *
				  sizeof *rd->cand);
		rd->branch = malloc(((size_t)s->n_branches + 1) *
				    sizeof *rd->branch);
		if (!rd->cand || !rd->branch)
			return -1;
		for (int i = 0; i < s->n_branches; i++) {
			int u;

			if (r >= s->branches[i].n_cand)
				continue;
			u = s->branches[i].cand[r];
			order[rd->n++] = (by_cost){c->a->units[u].cost, u};
		}
		qsort(order, (size_t)rd->n, sizeof *order, by_cost_desc);
		for (int i = 0; i < rd->n; i++) {
			rd->cand[i] = order[i].unit;
			rd->branch[i] = c->a->units[order[i].unit].branch;
		}
		if (greedy_round(c, rd) < 0)
			return -1;
	}
	return 0;
}

/* ---- the analysis --------------------------------------------------------- */

static void ctx_free(par_ctx *c)
{
	for (int u = 0; c->succ && u < c->a->n_units; u++)
		free(c->succ[u]);
	for (int u = 0; c->pred && u < c->a->n_units; u++)
		free(c->pred[u]);
	free(c->succ);
	free(c->pred);
	free(c->n_succ);
	free(c->n_pred);
	free(c->unit_of);
	free(c->ops_of);
	free(c->n_of);
	free(c->one);
	free(c->ext_read);
}

static int analyze(par_ctx *c, const fl_partition *p,
		   const fl_program *prog)
{
	const fl_graph *g = c->g;
	size_t n_max = (size_t)g->n_ops + 1;
	int *seen = malloc(((size_t)g->n_tensors + 1) * sizeof *seen);
	int rc = -1;

	c->unit_of = malloc(n_max * sizeof *c->unit_of);
	c->ops_of = calloc(n_max, sizeof *c->ops_of);
	c->n_of = calloc(n_max, sizeof *c->n_of);
	c->one = calloc(n_max, sizeof *c->one);
	c->ext_read = calloc((size_t)g->n_tensors + 1, sizeof *c->ext_read);
	if (!seen || !c->unit_of || !c->ops_of || !c->n_of || !c->one ||
	    !c->ext_read || make_units(c, p, prog) < 0)
		goto out;
	mark_ext_read(c);
	for (int t = 0; t < g->n_tensors; t++)
		seen[t] = -1;
	for (int u = 0; u < c->a->n_units; u++)
		unit_measure(c, u, c->ops_of[u], c->n_of[u], seen);
	if (make_edges(c) < 0 || find_sets(c) < 0)
		goto out;
	for (int i = 0; i < c->a->n_sets; i++)
		if (make_rounds(c, &c->a->sets[i]) < 0)
			goto out;
	rc = 0;
out:
	free(seen);
	return rc;
}

fl_par_analysis *fl_stitch_parallel_analyze(const fl_graph *g,
					    const fl_partition *p,
					    const fl_program *prog,
					    const fl_roofline *m,
					    fl_error *err)
{
	fl_par_analysis *a = calloc(1, sizeof *a);
	par_ctx c = {.g = g};

	if (!a) {
		fl_error_set(err, "parallel stitching: out of memory");
		return NULL;
	}
	if (m)
		a->machine = *m;
	else
		fl_roofline_default(&a->machine);
	c.m = &a->machine;
	c.a = a;
	if (analyze(&c, p, prog) < 0) {
		ctx_free(&c);
		fl_par_analysis_free(a);
		fl_error_set(err, "parallel stitching: out of memory");
		return NULL;
	}
	ctx_free(&c);
	return a;
}

fl_par_analysis *fl_par_analysis_ref(fl_par_analysis *a)
{
	if (a)
		a->refs++;
	return a;
}

void fl_par_analysis_free(fl_par_analysis *a)
{
	if (!a)
		return;
	if (a->refs > 0) {
		a->refs--;
		return;
	}
	for (int i = 0; i < a->n_sets; i++) {
		fl_par_set *s = &a->sets[i];

		for (int b = 0; b < s->n_branches; b++) {
			free(s->branches[b].units);
			free(s->branches[b].cand);
		}
		for (int r = 0; r < s->n_rounds; r++) {
			free(s->rounds[r].cand);
			free(s->rounds[r].branch);
			free(s->rounds[r].tries);
		}
		free(s->branches);
		free(s->rounds);
	}
	free(a->sets);
	free(a->units);
	free(a);
}
