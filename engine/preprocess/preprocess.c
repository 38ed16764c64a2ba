/* The preprocess pass (DESIGN 1.1): graph-level clean-up before partition.
 *
 * Needs: st->graph validated (ops in topological order, producers linked,
 * shapes known); compound ops may still be present.  Changes: st->graph
 * only.  Four rewrites, each one decision and one event:
 *
 *   simplified  x*1, 1*x, x+0, 0+x, x-0, x/1, pow(x,1), neg(neg(x)),
 *               transpose(transpose(x)) whose permutations cancel and
 *               transpose with the identity permutation, all become x
 *               (the constant must be a const tensor holding only the
 *               identity element, and must not enlarge x by broadcasting)
 *   cse         an op computing what an earlier op computes (same kind,
 *               same inputs, swapped too for add/mul/max/min, same attrs)
 *               is removed; its users read the earlier op's output
 *   folded      an op reading only consts, with at most FOLD_MAX_OUT output
 *               elements, is run now by the reference implementation; its
 *               output becomes a const
 *   eliminated  an op whose outputs nobody reads and that writes no graph
 *               output is removed
 *
 * Order: sweeps over the ops in topological order try simplify, CSE and
 * folding on each op, until a sweep changes nothing (a rewrite at op i only
 * touches the readers of i's output, which come later, so the first sweep
 * already reaches the fixpoint and the second one checks it); then one
 * sweep in reverse order removes dead code, so whole dead chains go.  The
 * op writing a graph output is never removed or rewired by the first three
 * rewrites (the output keeps its producer).  Ops whose outputs nobody reads
 * are left to dead-code elimination.
 *
 * Everything is deterministic (hashing uses op and tensor indices and
 * attribute contents, never addresses), so a run with a budget of k
 * decisions ends in the state after the first k decisions of a full run.
 * Removed ops are only marked while the pass runs and compacted away
 * (fl_graph_remove_ops) when it returns, done or paused.  Readers of each
 * tensor are kept in lists, so a sweep is O(ops + edges) and a rewrite
 * O(readers moved). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes_impl.h"

#define FOLD_MAX_OUT 65536		/* output elements a fold may create */
#define FOLD_MAX_IN ((int64_t)1 << 22)	/* input elements a fold may read */

/* Outcome of one rewrite attempt. */
enum { R_ERROR = -1, R_NONE = 0, R_APPLIED = 1, R_PAUSED = 2 };

/* What a const tensor holds, computed lazily (cval[]). */
enum { CV_UNKNOWN = 0, CV_ZERO, CV_ONE, CV_OTHER };

typedef struct pp_list {
	int n, cap;
	int *v;
} pp_list;

typedef struct pp {
	fl_state *st;
	fl_graph *g;
	fl_error *err;
	bool *dead;		/* per op: removed, compacted on return */
	int *uses;		/* per tensor: inputs of live ops reading it */
	pp_list *readers;	/* per tensor: ops that may read it */
	unsigned char *cval;	/* per tensor: CV_* */
	int *table;		/* CSE: open addressing, op index or -1 */
	size_t mask;
	bool has_outputs;	/* the graph declares an output tensor */
} pp;

/* ---- bookkeeping ---------------------------------------------------- */

static int list_push(pp_list *l, int v)
{
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 4;
		int *p = realloc(l->v, (size_t)cap * sizeof *p);

		if (!p)
			return -1;
		l->v = p;
		l->cap = cap;
	}
	l->v[l->n++] = v;
	return 0;
}

static void pp_free(pp *p)
{
	if (p->readers)
		for (int t = 0; t < p->g->n_tensors; t++)
			free(p->readers[t].v);
	free(p->readers);
	free(p->dead);
	free(p->uses);
	free(p->cval);
	free(p->table);
}

/* Fills the per-op and per-tensor arrays from the graph. */
static int pp_init(pp *p, fl_state *st, fl_error *err)
{
	fl_graph *g = st->graph;
	size_t size = 16;

	memset(p, 0, sizeof *p);
	p->st = st;
	p->g = g;
	p->err = err;
	while (size < 2 * (size_t)g->n_ops)
		size *= 2;
	p->mask = size - 1;
	p->dead = calloc((size_t)g->n_ops + 1, sizeof *p->dead);
	p->uses = calloc((size_t)g->n_tensors + 1, sizeof *p->uses);
	p->readers = calloc((size_t)g->n_tensors + 1, sizeof *p->readers);
	p->cval = calloc((size_t)g->n_tensors + 1, sizeof *p->cval);
	p->table = malloc(size * sizeof *p->table);
	if (!p->dead || !p->uses || !p->readers || !p->cval || !p->table)
		goto oom;
	for (int i = 0; i < g->n_ops; i++)
		for (int k = 0; k < g->ops[i].n_in; k++) {
			int t = g->ops[i].in[k];

			p->uses[t]++;
			if (list_push(&p->readers[t], i) < 0)
				goto oom;
		}
	for (int t = 0; t < g->n_tensors; t++)
		p->has_outputs |= g->tensors[t].role == FL_ROLE_OUTPUT;
	return 0;
oom:
	fl_error_set(err, "out of memory in preprocess");
	return -1;
}

/* Marks op i removed and drops its reads. */
static void kill_op(pp *p, int i)
{
	const fl_op *op = &p->g->ops[i];

	p->dead[i] = true;
	for (int k = 0; k < op->n_in; k++)
		p->uses[op->in[k]]--;
}

/* Every live op reading tensor `from` reads `to` instead; the changed ops'
 * provenance records `rewrite`.  The shapes of from and to are equal. */
static int rewire(pp *p, int from, int to, const char *rewrite)
{
	pp_list *src = &p->readers[from];

	for (int r = 0; r < src->n; r++) {
		int o = src->v[r];
		fl_op *op = &p->g->ops[o];
		bool hit = false;

		if (p->dead[o])
			continue;
		for (int k = 0; k < op->n_in; k++)
			if (op->in[k] == from) {
				op->in[k] = to;
				hit = true;
			}
		if (hit && (fl_op_set_provenance(op, NULL, NULL, rewrite) < 0 ||
			    list_push(&p->readers[to], o) < 0)) {
			fl_error_set(p->err, "out of memory in preprocess");
			return -1;
		}
	}
	p->uses[to] += p->uses[from];
	p->uses[from] = 0;
	free(src->v);
	memset(src, 0, sizeof *src);
	return 0;
}

static bool writes_output(const pp *p, const fl_op *op)
{
	for (int k = 0; k < op->n_out; k++)
		if (p->g->tensors[op->out[k]].role == FL_ROLE_OUTPUT)
			return true;
	return false;
}

/* No live op reads any output of op, and none is a graph output. */
static bool unread(const pp *p, const fl_op *op)
{
	for (int k = 0; k < op->n_out; k++)
		if (p->uses[op->out[k]] > 0)
			return false;
	return !writes_output(p, op);
}

static fl_event *log_event(pp *p, fl_event_kind kind, const fl_op *a,
			   const fl_op *b, const char *reason)
{
	const char *ops[2] = {a->name, b ? b->name : NULL};
	fl_event *e = fl_state_log(p->st, kind, NULL, ops, b ? 2 : 1, -1, -1,
				   "%s", reason);

	if (!e)
		fl_error_set(p->err, "out of memory logging a decision");
	return e;
}

/* ---- algebraic simplification --------------------------------------- */

static int const_value(pp *p, int t)
{
	const fl_tensor *x = &p->g->tensors[t];

	if (x->role != FL_ROLE_CONST || !x->data || x->n_data < 1)
		return CV_OTHER;
	if (p->cval[t] == CV_UNKNOWN) {
		float v = x->data[0];
		int cv = v == 0.0f ? CV_ZERO : v == 1.0f ? CV_ONE : CV_OTHER;

		for (int64_t k = 1; k < x->n_data && cv != CV_OTHER; k++)
			if (x->data[k] != v)
				cv = CV_OTHER;
		p->cval[t] = (unsigned char)cv;
	}
	return p->cval[t];
}

/* True when `c` holds only the identity `cv` and op's output keeps the
 * shape of `x` (a broadcasting constant that enlarges x blocks it). */
static bool neutral(pp *p, const fl_op *op, int x, int c, int cv)
{
	const fl_graph *g = p->g;

	return const_value(p, c) == cv &&
	       fl_shape_equal(&g->tensors[op->out[0]].shape,
			      &g->tensors[x].shape);
}

/* The live op producing tensor t when it has kind `kind`, else NULL. */
static const fl_op *producer_of(const pp *p, int t, fl_op_kind kind)
{
	int i = p->g->tensors[t].producer;

	if (i < 0 || p->dead[i] || p->g->ops[i].kind != kind)
		return NULL;
	return &p->g->ops[i];
}

static int perm_of(const fl_op *op, int64_t *perm)
{
	int n;

	if (fl_attr_ints(&op->attrs, "perm", perm, FL_MAX_RANK, &n, NULL) < 0)
		return -1;
	return n;
}

/* A match: the tensor the op's readers may read instead, the inner op of a
 * cancelling pair (or NULL) and the rule's text. */
typedef struct simp {
	int x;
	const fl_op *inner;
	const char *rule;
} simp;

static bool simp_transpose(pp *p, const fl_op *op, simp *m)
{
	int64_t q[FL_MAX_RANK], pi[FL_MAX_RANK];
	int n = perm_of(op, q), ni;
	const fl_op *in;

	if (n < 0)
		return false;
	m->x = op->in[0];
	m->rule = "transpose by the identity permutation = x";
	for (int k = 0; k < n && m->x >= 0; k++)
		if (q[k] != k)
			m->x = -1;
	if (m->x >= 0)
		return true;
	in = producer_of(p, op->in[0], FL_OP_TRANSPOSE);
	if (!in || (ni = perm_of(in, pi)) != n)
		return false;
	for (int k = 0; k < n; k++)
		if (q[k] < 0 || q[k] >= n || pi[q[k]] != k)
			return false;
	m->x = in->in[0];
	m->inner = in;
	m->rule = "transpose(transpose(x)) = x, the permutations cancel";
	return true;
}

/* x op c (or c op x when `swap` is allowed) with c the identity `cv`. */
static bool simp_binary(pp *p, const fl_op *op, int cv, bool swap,
			const char *rule, const char *rule_swapped, simp *m)
{
	if (op->n_in != 2)
		return false;
	if (neutral(p, op, op->in[0], op->in[1], cv)) {
		m->x = op->in[0];
		m->rule = rule;
		return true;
	}
	if (swap && neutral(p, op, op->in[1], op->in[0], cv)) {
		m->x = op->in[1];
		m->rule = rule_swapped;
		return true;
	}
	return false;
}

static bool simp_match(pp *p, const fl_op *op, simp *m)
{
	const fl_op *in;

	memset(m, 0, sizeof *m);
	m->x = -1;
	if (op->n_out != 1 || writes_output(p, op))
		return false;
	switch (op->kind) {
	case FL_OP_MUL:
		return simp_binary(p, op, CV_ONE, true, "x*1 = x", "1*x = x", m);
	case FL_OP_ADD:
		return simp_binary(p, op, CV_ZERO, true, "x+0 = x", "0+x = x", m);
	case FL_OP_SUB:
		return simp_binary(p, op, CV_ZERO, false, "x-0 = x", NULL, m);
	case FL_OP_DIV:
		return simp_binary(p, op, CV_ONE, false, "x/1 = x", NULL, m);
	case FL_OP_POW:
		return simp_binary(p, op, CV_ONE, false, "pow(x,1) = x", NULL, m);
	case FL_OP_NEG:
		in = producer_of(p, op->in[0], FL_OP_NEG);
		if (!in)
			return false;
		m->x = in->in[0];
		m->inner = in;
		m->rule = "neg(neg(x)) = x";
		return true;
	case FL_OP_TRANSPOSE:
		return simp_transpose(p, op, m);
	default:
		return false;
	}
}

static int try_simplify(pp *p, int i)
{
	fl_op *op = &p->g->ops[i];
	char why[FL_EVENT_REASON];
	simp m;

	if (!simp_match(p, op, &m))
		return R_NONE;
	if (!fl_state_decide(p->st))
		return R_PAUSED;
	if (rewire(p, op->out[0], m.x, "simplify") < 0)
		return R_ERROR;
	kill_op(p, i);
	snprintf(why, sizeof why, "%s: %s removed, its users read %s instead",
		 m.rule, op->name, p->g->tensors[m.x].name);
	return log_event(p, FL_EV_SIMPLIFIED, op, m.inner, why) ? R_APPLIED
							      : R_ERROR;
}

/* ---- common-subexpression elimination ------------------------------- */

static bool commutative(fl_op_kind k)
{
	return k == FL_OP_ADD || k == FL_OP_MUL || k == FL_OP_MAX ||
	       k == FL_OP_MIN;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t hash_double(uint64_t h, double d)
{
	uint64_t bits;

	d += 0.0;		/* -0.0 hashes as 0.0, as they compare equal */
	memcpy(&bits, &d, sizeof bits);
	return mix(h, bits);
}

static uint64_t hash_attr(const fl_attr *a)
{
	uint64_t h = 1469598103934665603ull;

	for (const char *s = a->key; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	h = mix(h, (uint64_t)a->kind);
	h = hash_double(h, a->num);
	for (const char *s = a->str; s && *s; s++)
		h = mix(h, (unsigned char)*s);
	for (int k = 0; k < a->n; k++)
		h = hash_double(h, a->list[k]);
	return h;
}

/* Independent of the order the attributes were written in. */
static uint64_t hash_op(const fl_op *op)
{
	uint64_t h = mix(mix(0, (uint64_t)op->kind), (uint64_t)op->n_in);
	uint64_t attrs = 0;

	if (commutative(op->kind) && op->n_in == 2) {
		int a = op->in[0], b = op->in[1];

		h = mix(mix(h, (uint64_t)(a < b ? a : b)),
			(uint64_t)(a < b ? b : a));
	} else {
		for (int k = 0; k < op->n_in; k++)
			h = mix(h, (uint64_t)op->in[k]);
	}
	for (int k = 0; k < op->attrs.n; k++)
		attrs += hash_attr(&op->attrs.items[k]);
	return mix(mix(h, attrs), (uint64_t)op->n_out);
}

static bool attr_equal(const fl_attr *a, const fl_attr *b)
{
	if (a->kind != b->kind || a->num != b->num || a->n != b->n)
		return false;
	if ((a->str || b->str) &&
	    (!a->str || !b->str || strcmp(a->str, b->str) != 0))
		return false;
	for (int k = 0; k < a->n; k++)
		if (a->list[k] != b->list[k])
			return false;
	return true;
}

static bool attrs_equal(const fl_attrs *a, const fl_attrs *b)
{
	if (a->n != b->n)
		return false;
	for (int k = 0; k < a->n; k++) {
		const fl_attr *x = &a->items[k];
		const fl_attr *y = fl_attrs_find(b, x->key);

		if (!y || !attr_equal(x, y))
			return false;
	}
	return true;
}

static bool inputs_equal(const fl_op *a, const fl_op *b)
{
	bool same = true;

	for (int k = 0; k < a->n_in && same; k++)
		same = a->in[k] == b->in[k];
	if (same || !commutative(a->kind) || a->n_in != 2)
		return same;
	return a->in[0] == b->in[1] && a->in[1] == b->in[0];
}

static bool same_value(const fl_op *a, const fl_op *b)
{
	return a->kind == b->kind && a->n_in == b->n_in &&
	       a->n_out == b->n_out && inputs_equal(a, b) &&
	       attrs_equal(&a->attrs, &b->attrs);
}

/* Slot of op i's value in the table: an equal op's slot or an empty one. */
static size_t table_slot(const pp *p, int i)
{
	const fl_op *op = &p->g->ops[i];
	size_t s = (size_t)hash_op(op) & p->mask;

	while (p->table[s] >= 0 && !same_value(&p->g->ops[p->table[s]], op))
		s = (s + 1) & p->mask;
	return s;
}

static void table_insert(pp *p, int i)
{
	size_t s = table_slot(p, i);

	if (p->table[s] < 0)
		p->table[s] = i;
}

static int try_cse(pp *p, int i)
{
	fl_op *op = &p->g->ops[i];
	char why[FL_EVENT_REASON];
	const fl_op *first;
	int j;

	if (fl_op_info_of(op->kind)->cls == FL_CLASS_CUSTOM ||
	    writes_output(p, op))
		return R_NONE;
	j = p->table[table_slot(p, i)];
	if (j < 0)
		return R_NONE;
	if (!fl_state_decide(p->st))
		return R_PAUSED;
	first = &p->g->ops[j];
	for (int k = 0; k < op->n_out; k++)
		if (rewire(p, op->out[k], first->out[k], "cse") < 0)
			return R_ERROR;
	kill_op(p, i);
	snprintf(why, sizeof why,
		 "same %s of the same inputs as %s: %s removed, its users "
		 "read %s instead", fl_op_kind_name(op->kind), first->name,
		 op->name, p->g->tensors[first->out[0]].name);
	return log_event(p, FL_EV_CSE, op, first, why) ? R_APPLIED : R_ERROR;
}

/* ---- constant folding ----------------------------------------------- */

/* Op i reads only consts, is not custom, and folding it stays small. */
static bool foldable(const pp *p, const fl_op *op)
{
	const fl_graph *g = p->g;
	int64_t in_total = 0, n;

	if (op->n_in < 1 || op->n_out != 1 || writes_output(p, op) ||
	    fl_op_info_of(op->kind)->cls == FL_CLASS_CUSTOM)
		return false;
	for (int k = 0; k < op->n_in; k++) {
		const fl_tensor *t = &g->tensors[op->in[k]];

		n = fl_shape_numel(&t->shape);
		if (t->role != FL_ROLE_CONST || !t->data || n < 0 ||
		    (t->n_data != 1 && t->n_data != n) ||
		    n > FOLD_MAX_IN - in_total)
			return false;
		in_total += n;
	}
	/* typed results are left to run (fold_eval holds floats only) */
	if (g->tensors[op->out[0]].dtype != FL_F32)
		return false;
	n = fl_shape_numel(&g->tensors[op->out[0]].shape);
	return n >= 0 && n <= FOLD_MAX_OUT;
}

/* Evaluates op with the reference implementation; returns its output
 * (malloc'd, numel of the output shape) or NULL when out of memory. */
static float *fold_eval(const pp *p, const fl_op *op)
{
	const fl_graph *g = p->g;
	fl_buf *in = calloc((size_t)op->n_in, sizeof *in), out;
	float *res = NULL;
	int k;

	out.shape = g->tensors[op->out[0]].shape;
	out.data = malloc((size_t)fl_shape_numel(&out.shape) * sizeof(float)
			  + sizeof(float));
	for (k = 0; in && out.data && k < op->n_in; k++) {
		const fl_tensor *t = &g->tensors[op->in[k]];
		int64_t n = fl_shape_numel(&t->shape);

		in[k].shape = t->shape;
		in[k].data = malloc((size_t)n * sizeof(float) + sizeof(float));
		if (!in[k].data)
			break;
		for (int64_t e = 0; e < n; e++)
			in[k].data[e] = t->data[t->n_data == 1 ? 0 : e];
	}
	if (in && out.data && k == op->n_in) {
		fl_op_info_of(op->kind)->eval(op, in, &out);
		res = out.data;
		out.data = NULL;
	}
	for (int e = 0; in && e < op->n_in; e++)
		free(in[e].data);
	free(in);
	free(out.data);
	return res;
}

static int try_fold(pp *p, int i)
{
	fl_op *op = &p->g->ops[i];
	char why[FL_EVENT_REASON], shape[64];
	fl_tensor *t;
	float *data;

	if (!foldable(p, op))
		return R_NONE;
	if (!fl_state_decide(p->st))
		return R_PAUSED;
	data = fold_eval(p, op);
	if (!data) {
		fl_error_set(p->err, "out of memory folding op \"%s\"", op->name);
		return R_ERROR;
	}
	t = &p->g->tensors[op->out[0]];
	fl_tensor_drop_values(t);
	t->data = data;
	t->n_data = fl_shape_numel(&t->shape);
	t->role = FL_ROLE_CONST;
	t->producer = -1;
	p->cval[op->out[0]] = CV_UNKNOWN;
	kill_op(p, i);
	snprintf(why, sizeof why,
		 "all inputs constant: %s evaluated now, %s %s is a constant",
		 op->name, t->name, fl_shape_format(&t->shape, shape,
						   sizeof shape));
	return log_event(p, FL_EV_FOLDED, op, NULL, why) ? R_APPLIED : R_ERROR;
}

/* ---- the sweeps ----------------------------------------------------- */

/* One rewrite of live op i, in the order simplify, CSE, fold; an op that
 * stays is entered into the CSE table. */
static int visit(pp *p, int i)
{
	const fl_op *op = &p->g->ops[i];
	int r;

	if (unread(p, op))
		return R_NONE;
	r = try_simplify(p, i);
	if (r == R_NONE)
		r = try_cse(p, i);
	if (r == R_NONE)
		r = try_fold(p, i);
	if (r == R_NONE && fl_op_info_of(op->kind)->cls != FL_CLASS_CUSTOM)
		table_insert(p, i);
	return r;
}

/* One sweep in op order; *changed says whether anything was rewritten. */
static int sweep(pp *p, bool *changed)
{
	*changed = false;
	for (size_t s = 0; s <= p->mask; s++)
		p->table[s] = -1;
	for (int i = 0; i < p->g->n_ops; i++) {
		int r;

		if (p->dead[i])
			continue;
		r = visit(p, i);
		if (r == R_ERROR || r == R_PAUSED)
			return r;
		*changed |= r == R_APPLIED;
	}
	return R_NONE;
}

static int try_eliminate(pp *p, int i)
{
	const fl_op *op = &p->g->ops[i];
	char why[FL_EVENT_REASON];

	if (!unread(p, op))
		return R_NONE;
	if (!fl_state_decide(p->st))
		return R_PAUSED;
	kill_op(p, i);
	snprintf(why, sizeof why,
		 "nothing reads %s (not a graph output): %s removed",
		 op->n_out > 0 ? p->g->tensors[op->out[0]].name : "its output",
		 op->name);
	return log_event(p, FL_EV_ELIMINATED, op, NULL, why) ? R_APPLIED
							    : R_ERROR;
}

/* Dead-code elimination in reverse op order, so a dead chain goes whole.
 * A graph that declares no output has nothing to keep alive: skipped. */
static int eliminate(pp *p)
{
	if (!p->has_outputs)
		return R_NONE;
	for (int i = p->g->n_ops - 1; i >= 0; i--) {
		int r = p->dead[i] ? R_NONE : try_eliminate(p, i);

		if (r == R_ERROR || r == R_PAUSED)
			return r;
	}
	return R_NONE;
}

static int rewrite_all(pp *p)
{
	bool changed = true;
	int r = R_NONE;

	while (changed && r == R_NONE)
		r = sweep(p, &changed);
	return r == R_NONE ? eliminate(p) : r;
}

int fl_pass_preprocess(fl_state *st, fl_error *err)
{
	pp p;
	int r;

	if (!st->opts->preprocess)
		return FL_PASS_DONE;
	if (pp_init(&p, st, err) < 0) {
		pp_free(&p);
		return -1;
	}
	r = rewrite_all(&p);
	/* compact even after an error, so the graph stays linked */
	if (fl_graph_remove_ops(st->graph, p.dead,
				r == R_ERROR ? NULL : err) < 0)
		r = R_ERROR;
	pp_free(&p);
	if (r == R_ERROR)
		return -1;
	return r == R_PAUSED ? FL_PASS_PAUSED : FL_PASS_DONE;
}
