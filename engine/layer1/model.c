/* The polyhedral model of one micro-graph (DESIGN 1.3 step 1): one
 * statement per primitive (two for a reduction: init and update) from the
 * op library's descriptions (ir/poly.h), their iteration domains and
 * access relations, the original schedule (the statements in op order,
 * each with its identity band) and the dependences.  A tensor "leaves"
 * the kernel when it is a graph output or an op outside the micro-graph
 * reads it.
 *
 * The model of a one-op micro-graph is that of the op alone, whichever
 * strategy partitioned the graph (whoever reads its result is in another
 * kernel), and the scheduler, the tiler and the placement see nothing
 * but the model and the layer-1 options: so a lone op -- BERT's
 * ffn_output.matmul under apollo-l1, or one left by feedback -- gets
 * exactly its unfused kernel, loop order and tiling included.  Keep it
 * so; the tests *_unfused_order in tests/test_layer1.c check it on every
 * sample.
 *
 * Ownership follows isl: the model owns every isl object in it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/map.h>
#include <isl/schedule.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/union_set.h>

#include "layer1_impl.h"

/* ---- the model ---------------------------------------------------------- */

void fl_l1_model_clear(fl_l1_model *m)
{
	if (m->poly)
		for (int i = 0; i < m->n_ops; i++)
			fl_poly_op_free(m->poly[i]);
	free(m->poly);
	free(m->ops);
	free(m->stmts);
	free(m->leaves);
	isl_union_set_free(m->domain);
	isl_union_map_free(m->reads);
	isl_union_map_free(m->writes);
	isl_schedule_free(m->original);
	isl_union_map_free(m->raw);
	isl_union_map_free(m->validity);
	memset(m, 0, sizeof *m);
}

int fl_l1_model_find(const fl_l1_model *m, const char *name)
{
	for (int i = 0; i < m->n_stmts; i++)
		if (strcmp(m->stmts[i].name, name) == 0)
			return i;
	return -1;
}

const fl_l1_stmt *fl_l1_model_stmt_of(const fl_l1_model *m, const char *name)
{
	char base[64];
	const char *r = strstr(name, "_r");
	int i;

	if (r && (size_t)(r - name) < sizeof base) {
		memcpy(base, name, (size_t)(r - name));
		base[r - name] = '\0';
		name = base;
	}
	i = fl_l1_model_find(m, name);
	return i < 0 ? NULL : &m->stmts[i];
}

/* Marks the tensors that leave the kernel: graph outputs and tensors read
 * by an op that is not a member. */
static int find_leaves(fl_l1_model *m)
{
	const fl_graph *g = m->g;
	bool *member = calloc((size_t)g->n_ops + 1, sizeof *member);

	m->leaves = calloc((size_t)g->n_tensors + 1, sizeof *m->leaves);
	if (!member || !m->leaves) {
		free(member);
		return -1;
	}
	for (int i = 0; i < m->n_ops; i++)
		member[m->ops[i]] = true;
	for (int t = 0; t < g->n_tensors; t++)
		m->leaves[t] = g->tensors[t].role == FL_ROLE_OUTPUT;
	for (int c = 0; c < g->n_ops; c++)
		if (!member[c])
			for (int k = 0; k < g->ops[c].n_in; k++)
				m->leaves[g->ops[c].in[k]] = true;
	free(member);
	return 0;
}

/* The identity band S[i] -> [i] of one statement domain (kept).
 * __isl_give. */
static isl_multi_union_pw_aff *identity_band(__isl_keep isl_set *dom)
{
	isl_map *id = isl_set_identity(isl_set_copy(dom));

	id = isl_map_reset_tuple_id(id, isl_dim_out);
	return isl_multi_union_pw_aff_from_union_map(isl_union_map_from_map(id));
}

/* The schedule of one statement alone: its identity band (none for a
 * zero-dimensional statement).  __isl_give. */
static isl_schedule *stmt_schedule(__isl_keep isl_set *dom)
{
	isl_schedule *s = isl_schedule_from_domain(
		isl_union_set_from_set(isl_set_copy(dom)));

	if (isl_set_dim(dom, isl_dim_set) > 0)
		s = isl_schedule_insert_partial_schedule(s, identity_band(dom));
	return s;
}

/* Adds statement s of op p to the model's table and isl unions. */
static void add_stmt(fl_l1_model *m, const fl_poly_op *p, int k)
{
	const fl_poly_stmt *s = &p->stmts[k];
	int out = m->g->ops[p->op].out[0];
	isl_schedule *one = stmt_schedule(s->domain);

	m->stmts[m->n_stmts++] = (fl_l1_stmt){s->name, p->op, k, s->role,
					      m->leaves[out], s};
	m->domain = isl_union_set_add_set(m->domain, isl_set_copy(s->domain));
	m->writes = isl_union_map_add_map(m->writes, isl_map_copy(s->write));
	for (int r = 0; r < s->n_reads; r++)
		m->reads = isl_union_map_add_map(m->reads,
						 isl_map_copy(s->reads[r].access));
	m->original = m->original ? isl_schedule_sequence(m->original, one)
				  : one;
}

/* Reads of tensor t by the statements of the ops other than `skip`.
 * __isl_give. */
static isl_union_map *reads_of(const fl_l1_model *m, int t, int skip)
{
	isl_union_map *r = isl_union_map_empty(isl_union_set_get_space(m->domain));

	for (int i = 0; i < m->n_stmts; i++) {
		const fl_poly_stmt *s = m->stmts[i].poly;
		const fl_op *op = &m->g->ops[m->stmts[i].op];

		for (int k = 0; k < s->n_reads && m->stmts[i].op != skip; k++) {
			int in = s->reads[k].input;

			if ((in < 0 ? op->out[0] : op->in[in]) == t)
				r = isl_union_map_add_map(r,
					isl_map_copy(s->reads[k].access));
		}
	}
	return r;
}

/* Instances of one statement: the later instance writing the same
 * element (chain, the immediate successor: lexmin), and those that write
 * an element first and last.  For a statement that writes each element
 * once the chain is empty and first = last = every instance. */
typedef struct stmt_order {
	isl_union_map *chain;
	isl_union_set *first, *last;
} stmt_order;

static void order_of(const fl_poly_stmt *s, stmt_order *o)
{
	isl_map *w = s->write;
	isl_map *e = isl_map_apply_range(isl_map_copy(w),
					 isl_map_reverse(isl_map_copy(w)));
	isl_set *dom = isl_map_domain(isl_map_copy(w));

	e = isl_map_intersect(e, isl_map_lex_lt(isl_space_domain(
		isl_map_get_space(w))));
	o->first = isl_union_set_from_set(isl_set_subtract(isl_set_copy(dom),
		isl_map_range(isl_map_copy(e))));
	o->last = isl_union_set_from_set(isl_set_subtract(dom,
		isl_map_domain(isl_map_copy(e))));
	o->chain = isl_union_map_from_map(isl_map_lexmin(e));
}

static void order_clear(stmt_order *o)
{
	isl_union_map_free(o->chain);
	isl_union_set_free(o->first);
	isl_union_set_free(o->last);
}

/* Whether statement s reads its op's own output (an accumulation). */
static bool reads_self(const fl_poly_stmt *s)
{
	for (int k = 0; k < s->n_reads; k++)
		if (s->reads[k].input < 0)
			return true;
	return false;
}

/* Statement s's write restricted to instances `inst` (kept).
 * __isl_give. */
static isl_union_map *write_at(const fl_poly_stmt *s,
			       __isl_keep isl_union_set *inst)
{
	return isl_union_map_intersect_domain(
		isl_union_map_from_map(isl_map_copy(s->write)),
		isl_union_set_copy(inst));
}

/* Dependences inside op p (several statements writing the same elements,
 * or an accumulation): along each statement's chain, and from the last
 * instance of an earlier statement to the first instance of a later one
 * on the same element (output; also flow when the later one reads it).
 * A statement of an op reads the op's output only where it writes it
 * (reduction update, pooling finalize), so these cover the anti
 * dependences too.  They are isl's last-writer relations for these ops,
 * built without its dataflow analysis. */
static void op_deps(fl_l1_model *m, const fl_poly_op *p, stmt_order *o)
{
	for (int b = 0; b < p->n_stmts; b++) {
		const fl_poly_stmt *y = &p->stmts[b];

		m->validity = isl_union_map_union(m->validity,
			isl_union_map_copy(o[b].chain));
		if (reads_self(y))
			m->raw = isl_union_map_union(m->raw,
				isl_union_map_copy(o[b].chain));
		for (int a = 0; a < b; a++) {
			isl_union_map *d = isl_union_map_apply_range(
				write_at(&p->stmts[a], o[a].last),
				isl_union_map_reverse(write_at(y, o[b].first)));

			if (reads_self(y))
				m->raw = isl_union_map_union(m->raw,
					isl_union_map_copy(d));
			m->validity = isl_union_map_union(m->validity, d);
		}
	}
}

/* Flow dependences from op p to the readers of its output in later ops:
 * from the last writer of each element (the last instance of the last
 * statement writing it) to every read of it. */
static void flow_out(fl_l1_model *m, const fl_poly_op *p, stmt_order *o)
{
	int t = m->g->ops[p->op].out[0];
	isl_union_map *r = isl_union_map_reverse(reads_of(m, t, p->op));
	isl_union_set *done = isl_union_set_empty(
		isl_union_set_get_space(m->domain));

	for (int a = p->n_stmts - 1; a >= 0; a--) {
		isl_union_map *w = write_at(&p->stmts[a], o[a].last);

		w = isl_union_map_subtract_range(w, isl_union_set_copy(done));
		done = isl_union_set_union(done, isl_union_map_range(
			isl_union_map_from_map(isl_map_copy(p->stmts[a].write))));
		m->raw = isl_union_map_union(m->raw, isl_union_map_apply_range(
			w, isl_union_map_copy(r)));
	}
	isl_union_set_free(done);
	isl_union_map_free(r);
}

/* Dependences.  An op writes only its own output and the ops of a
 * micro-graph run in topological order, so between ops there are only
 * flow dependences, from the last write of an element to its reads;
 * inside an op there are the chains of accumulations and the order of
 * statements writing the same elements (op_deps).  Built from the
 * accesses rather than with isl's dataflow analysis (ISL_GUIDE 2), which
 * gives the same relations here but dominated the pass's time (20-30 ms
 * for each convolution). */
static int compute_deps(fl_l1_model *m)
{
	isl_space *sp = isl_union_set_get_space(m->domain);

	m->raw = isl_union_map_empty(isl_space_copy(sp));
	m->validity = isl_union_map_empty(sp);
	for (int i = 0; i < m->n_ops; i++) {
		const fl_poly_op *p = m->poly[i];
		stmt_order *o = calloc((size_t)p->n_stmts, sizeof *o);

		if (!o)
			return -1;
		for (int k = 0; k < p->n_stmts; k++)
			order_of(&p->stmts[k], &o[k]);
		op_deps(m, p, o);
		flow_out(m, p, o);
		for (int k = 0; k < p->n_stmts; k++)
			order_clear(&o[k]);
		free(o);
	}
	m->raw = isl_union_map_coalesce(m->raw);
	m->validity = isl_union_map_coalesce(isl_union_map_union(m->validity,
		isl_union_map_copy(m->raw)));
	return m->raw && m->validity ? 0 : -1;
}

static int model_fail(fl_l1_model *m, const char *what, fl_error *err)
{
	const char *msg = isl_ctx_last_error_msg(m->ctx);

	fl_error_set(err, "layer 1: isl could not build the %s%s%s", what,
		     msg ? ": " : "", msg ? msg : "");
	fl_l1_model_clear(m);
	return -1;
}

int fl_l1_model_build(fl_l1_model *m, isl_ctx *ctx, const fl_graph *g,
		      const int *ops, int n, fl_error *err)
{
	int cap = 0;

	memset(m, 0, sizeof *m);
	for (int i = 1; i < n; i++)
		if (ops[i] <= ops[i - 1]) {
			fl_error_set(err, "layer 1: member ops not ascending "
				     "(%d after %d)", ops[i], ops[i - 1]);
			return -1;
		}
	m->ctx = ctx;
	m->g = g;
	m->n_ops = n;
	m->ops = malloc((size_t)n * sizeof *m->ops);
	m->poly = calloc((size_t)n, sizeof *m->poly);
	if (m->ops)
		memcpy(m->ops, ops, (size_t)n * sizeof *ops);
	if (!m->ops || !m->poly || find_leaves(m) < 0) {
		fl_l1_model_clear(m);
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int i = 0; i < n; i++) {
		m->poly[i] = fl_poly_describe(ctx, g, m->ops[i], err);
		if (!m->poly[i]) {
			fl_l1_model_clear(m);
			return -1;
		}
		cap += m->poly[i]->n_stmts;
	}
	m->stmts = calloc((size_t)cap + 1, sizeof *m->stmts);
	if (!m->stmts) {
		fl_l1_model_clear(m);
		fl_error_set(err, "out of memory");
		return -1;
	}
	isl_ctx_reset_error(ctx);
	m->domain = isl_union_set_empty(isl_space_params_alloc(ctx, 0));
	m->reads = isl_union_map_empty(isl_space_params_alloc(ctx, 0));
	m->writes = isl_union_map_empty(isl_space_params_alloc(ctx, 0));
	for (int i = 0; i < n; i++)
		for (int k = 0; k < m->poly[i]->n_stmts; k++)
			add_stmt(m, m->poly[i], k);
	if (!m->domain || !m->reads || !m->writes || !m->original)
		return model_fail(m, "model", err);
	if (compute_deps(m) < 0)
		return model_fail(m, "dependences", err);
	return 0;
}

