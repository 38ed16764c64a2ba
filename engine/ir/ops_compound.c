/* Compound ops: softmax, log_softmax, layernorm, rmsnorm, batchnorm, gelu,
 * silu, leaky_relu, quantize, bias_add, dense, reduce_mean, variance and
 * attention (attribute conventions at the top of ops.h).
 *
 * Each op has three functions.  fl_infer_X checks the input shapes and
 * attributes and gives the output shape.  fl_eval_X is the op's own
 * reference: a direct, deliberately plain computation in double that does
 * not go through the primitives, so that comparing it with the expansion
 * checks the expansion.  fl_expand_X appends to a graph the primitive ops
 * that compute the same thing ("opening" the op, APOLLO Fig. 3), using a
 * small emitter so that each expansion reads like the formula it encodes:
 * every emitted op is named "<op>.<step>", writes a new temp tensor of the
 * same name (the last one writes the compound op's output) and carries the
 * compound op's provenance. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops_impl.h"

/* ------------------------------------------------------------------ */
/* Shape and attribute checks shared by the infer functions.            */

/* "in[k]: <what> shape [..] does not broadcast to [..]" unless p
 * broadcasts to exactly x. */
static int check_param(const fl_shape *p, const fl_shape *x, int k,
		       const char *what, fl_error *err)
{
	char sp[128], sx[128];

	if (fl_shape_broadcasts_to(p, x))
		return 0;
	fl_error_set(err, "in[%d]: %s shape %s does not broadcast to %s", k,
		     what, fl_shape_format(p, sp, sizeof sp),
		     fl_shape_format(x, sx, sizeof sx));
	return -1;
}

/* Checks in[1..n-1] against in[0] with the given names. */
static int check_params(const fl_shape *in, int n, const char *const *names,
			fl_error *err)
{
	for (int k = 1; k < n; k++)
		if (check_param(&in[k], &in[0], k, names[k], err) < 0)
			return -1;
	return 0;
}

/* The normalised "axis" attribute (default -1) for a tensor of `rank`. */
static int get_axis(const fl_op *op, int rank, int *axis, fl_error *err)
{
	int64_t a;

	if (fl_attr_int(&op->attrs, "axis", -1, &a, err) < 0)
		return -1;
	*axis = fl_axis_normalize(a, rank);
	if (*axis < 0) {
		fl_error_set(err, "attrs.axis: axis %lld is out of range for "
			     "rank %d", (long long)a, rank);
		return -1;
	}
	return 0;
}

/* mask[d] = true for the dims reduced by the "axes" attribute (default:
 * all); rejects an empty list, axes out of range and axes given twice,
 * as the primitive reductions do. */
static int get_axes(const fl_op *op, int rank, bool *mask, fl_error *err)
{
	int64_t ax[FL_MAX_RANK];
	int n;

	if (fl_attr_ints(&op->attrs, "axes", ax, FL_MAX_RANK, &n, err) < 0)
		return -1;
	for (int d = 0; d < rank; d++)
		mask[d] = n < 0;
	if (n == 0) {
		fl_error_set(err, "attrs.axes: empty list (leave it out to "
			     "reduce every axis)");
		return -1;
	}
	for (int i = 0; i < n; i++) {
		int a = fl_axis_normalize(ax[i], rank);

		if (a < 0) {
			fl_error_set(err, "attrs.axes[%d]: axis %lld is out of "
				     "range for rank %d", i, (long long)ax[i],
				     rank);
			return -1;
		}
		if (mask[a]) {
			fl_error_set(err, "attrs.axes[%d]: axis %d given twice",
				     i, a);
			return -1;
		}
		mask[a] = true;
	}
	return 0;
}

/* mask of the dims from `from` to the last one. */
static void tail_mask(int rank, int from, bool *mask)
{
	for (int d = 0; d < rank; d++)
		mask[d] = d >= from;
}

/* "eps" (default dflt), which must not be negative. */
static int get_eps(const fl_op *op, double dflt, double *eps, fl_error *err)
{
	if (fl_attr_float(&op->attrs, "eps", dflt, eps, err) < 0)
		return -1;
	if (*eps < 0) {
		fl_error_set(err, "attrs.eps: must be >= 0, got %g", *eps);
		return -1;
	}
	return 0;
}

/* x with the masked dims set to extent 1 (reduced dims are kept). */
static fl_shape reduced_shape(const fl_shape *x, const bool *mask)
{
	fl_shape r = *x;

	for (int d = 0; d < x->rank; d++)
		if (mask[d])
			r.dim[d] = 1;
	return r;
}

/* Elements per group of a reduction of x over mask. */
static int64_t group_size(const fl_shape *x, const bool *mask)
{
	int64_t n = 1;

	for (int d = 0; d < x->rank; d++)
		if (mask[d])
			n *= x->dim[d];
	return n;
}

static int need_rank(const fl_shape *s, int k, const char *what, int rank,
		     fl_error *err)
{
	char b[128];

	if (s->rank >= rank)
		return 0;
	fl_error_set(err, "in[%d]: %s needs rank >= %d, got shape %s", k, what,
		     rank, fl_shape_format(s, b, sizeof b));
	return -1;
}

/* Batch dims (all but the last two) of a rank >= 2 shape. */
static fl_shape batch_of(const fl_shape *s)
{
	return fl_shape_make(s->rank - 2, s->dim);
}

/* out = batch + [m, n]. */
static fl_shape with_matrix(const fl_shape *batch, int64_t m, int64_t n)
{
	fl_shape r = *batch;

	r.dim[r.rank++] = m;
	r.dim[r.rank++] = n;
	return r;
}

/* Broadcasts the batch dims of operand k (`what`) into *batch. */
static int merge_batch(fl_shape *batch, const fl_shape *s, int k,
		       const char *what, fl_error *err)
{
	fl_shape b = batch_of(s);

	if (fl_shape_broadcast(batch, &b, batch, err) == 0)
		return 0;
	fl_error_prefix(err, "in[%d]: batch dims of %s", k, what);
	return -1;
}

static int inner_mismatch(int k, const char *what, const fl_shape *s,
			  int64_t got, int64_t want, const char *role,
			  fl_error *err)
{
	char b[128];

	fl_error_set(err, "in[%d]: %s shape %s has %s %lld, expected %lld", k,
		     what, fl_shape_format(s, b, sizeof b), role,
		     (long long)got, (long long)want);
	return -1;
}

/* ------------------------------------------------------------------ */
/* Helpers for the reference implementations (all arithmetic in double). */

static void fill_nan(fl_buf *out)
{
	int64_t n = fl_shape_numel(&out->shape);

	for (int64_t i = 0; i < n; i++)
		out->data[i] = NAN;
}

/* Value of parameter p (broadcasting to shape x) at x's index idx. */
static double at(const fl_buf *p, const fl_shape *x, const int64_t *idx)
{
	return p->data[fl_broadcast_offset(&p->shape, x, idx)];
}

/* A reduction of x over mask seen as groups: id[i] is the group of element
 * i (its row-major offset in the reduced shape); a and b are two zeroed
 * per-group accumulators; per is the number of elements in a group. */
typedef struct groups {
	int64_t n, n_groups, per;
	int64_t *id;
	double *a, *b;
} groups;

static void groups_free(groups *gr)
{
	free(gr->id);
	free(gr->a);
	free(gr->b);
}

static int groups_init(groups *gr, const fl_shape *x, const bool *mask)
{
	fl_shape red = reduced_shape(x, mask);
	int64_t idx[FL_MAX_RANK] = {0};

	gr->n = fl_shape_numel(x);
	gr->n_groups = fl_shape_numel(&red);
	gr->per = group_size(x, mask);
	gr->id = malloc((size_t)gr->n * sizeof *gr->id);
	gr->a = calloc((size_t)gr->n_groups, sizeof *gr->a);
	gr->b = calloc((size_t)gr->n_groups, sizeof *gr->b);
	if (!gr->id || !gr->a || !gr->b) {
		groups_free(gr);
		return -1;
	}
	for (int64_t i = 0; i < gr->n; i++) {
		gr->id[i] = fl_broadcast_offset(&red, x, idx);
		fl_index_next(x, idx);
	}
	return 0;
}

/* a = per-group mean of x, b = per-group population variance. */
static void groups_moments(groups *gr, const float *x)
{
	for (int64_t i = 0; i < gr->n; i++)
		gr->a[gr->id[i]] += x[i];
	for (int64_t g = 0; g < gr->n_groups; g++)
		gr->a[g] /= (double)gr->per;
	for (int64_t i = 0; i < gr->n; i++) {
		double d = x[i] - gr->a[gr->id[i]];

		gr->b[gr->id[i]] += d * d;
	}
	for (int64_t g = 0; g < gr->n_groups; g++)
		gr->b[g] /= (double)gr->per;
}

/* Offset of the matrix of operand s (rank >= 2) that serves the batch
 * index idx of the result's batch shape `batch`. */
static int64_t mat_base(const fl_shape *s, const fl_shape *batch,
			const int64_t *idx)
{
	fl_shape sb = batch_of(s);

	return fl_broadcast_offset(&sb, batch, idx) * s->dim[s->rank - 2] *
	       s->dim[s->rank - 1];
}

/* ------------------------------------------------------------------ */
/* The emitter used by the expansions.                                   */

typedef struct emitter {
	fl_graph *g;
	const fl_op *op;	/* the compound op being opened */
	fl_error *err;
	fl_shape x;		/* shape of op->in[0] (a copy: g grows) */
	int last_op;		/* index in g of the op emitted last */
	bool failed;
} emitter;

/* Checks op's inputs in g and runs the compound op's own inference, so
 * that bad attributes are reported before anything is emitted. */
static int e_begin(emitter *e, fl_graph *g, const fl_op *op, fl_error *err)
{
	const fl_op_info *info = fl_op_info_of(op->kind);
	fl_shape in[8], out[1];

	*e = (emitter){.g = g, .op = op, .err = err, .last_op = -1};
	if (!info || !info->expand || op->n_in < info->min_in ||
	    op->n_in > info->max_in || op->n_in > 8 || op->n_out != 1) {
		fl_error_set(err, "op \"%s\" cannot be expanded", op->name);
		return -1;
	}
	for (int k = 0; k < op->n_in; k++) {
		int t = op->in[k];

		if (t < 0 || t >= g->n_tensors || !g->tensors[t].shape_known) {
			fl_error_set(err, "in[%d]: input has no known shape", k);
			return -1;
		}
		in[k] = g->tensors[t].shape;
	}
	if (op->out[0] < 0 || op->out[0] >= g->n_tensors) {
		fl_error_set(err, "out: no such tensor");
		return -1;
	}
	e->x = in[0];
	memset(out, 0, sizeof out);
	if (fl_attrs_check_known(&op->attrs, info->attrs, err) < 0)
		return -1;
	return info->infer(op, in, out, err);
}

static int e_fail(emitter *e)
{
	e->failed = true;
	return -1;
}

/* "<op>.<step>", made unique among g's op and tensor names by a numeric
 * suffix; malloc'd. */
static char *e_name(const emitter *e, const char *step)
{
	size_t len = strlen(e->op->name) + strlen(step) + 32;
	char *base = malloc(len), *name = malloc(len);

	if (base && name) {
		snprintf(base, len, "%s.%s", e->op->name, step);
		snprintf(name, len, "%s", base);
		for (int k = 2; fl_graph_find_op(e->g, name) >= 0 ||
				fl_graph_find_tensor(e->g, name) >= 0; k++)
			snprintf(name, len, "%s.%d", base, k);
	} else {
		free(name);
		name = NULL;
		fl_error_set(e->err, "out of memory expanding \"%s\"",
			     e->op->name);
	}
	free(base);
	return name;
}

/* Gives op i the provenance of everything emitted for e->op and infers
 * its output shape. */
static int e_settle(emitter *e, int i)
{
	fl_op *op = &e->g->ops[i];
	const char *origin = e->op->prov.origin ? e->op->prov.origin
						: e->op->name;

	if (fl_op_set_provenance(op, origin, fl_op_kind_name(e->op->kind),
				 NULL) < 0 ||
	    fl_op_set_source_op(op, e->op->prov.source_op) < 0) {
		fl_error_set(e->err, "out of memory");
		return -1;
	}
	if (fl_graph_infer_op(e->g, i, e->err) < 0) {
		fl_error_prefix(e->err, "%s", op->name);
		return -1;
	}
	return 0;
}

/* Emits `kind` reading in[0..n_in-1] (with *attrs, moved into the op;
 * NULL for none) into a new temp tensor named like the op; returns the
 * tensor or -1.  After a failure (an input of -1) it only returns -1, so
 * expansions can nest calls and check once at the end. */
static int e_op(emitter *e, fl_op_kind kind, const char *step, const int *in,
		int n_in, fl_attrs *attrs)
{
	char *name = NULL;
	int t = -1, i = -1;

	for (int k = 0; k < n_in; k++)
		if (in[k] < 0)
			e->failed = true;
	if (!e->failed)
		name = e_name(e, step);
	if (name)
		t = fl_graph_add_tensor(e->g, name, NULL, FL_ROLE_TEMP, e->err);
	if (t >= 0)
		i = fl_graph_add_op(e->g, name, kind, in, n_in, &t, 1, e->err);
	free(name);
	if (i >= 0 && attrs) {
		e->g->ops[i].attrs = *attrs;
		memset(attrs, 0, sizeof *attrs);
	}
	if (attrs)
		fl_attrs_free(attrs);
	if (i < 0 || e_settle(e, i) < 0)
		return e_fail(e);
	e->last_op = i;
	return t;
}

static int e_un(emitter *e, fl_op_kind kind, const char *step, int a)
{
	return e_op(e, kind, step, &a, 1, NULL);
}

static int e_bin(emitter *e, fl_op_kind kind, const char *step, int a, int b)
{
	int in[2] = {a, b};

	return e_op(e, kind, step, in, 2, NULL);
}

/* A rank-0 constant named "<op>.<cname>". */
static int e_const(emitter *e, const char *cname, double v)
{
	size_t len = strlen(e->op->name) + strlen(cname) + 2;
	char *hint;
	int t;

	if (e->failed)
		return -1;
	hint = malloc(len);
	if (!hint) {
		fl_error_set(e->err, "out of memory");
		return e_fail(e);
	}
	snprintf(hint, len, "%s.%s", e->op->name, cname);
	t = fl_graph_add_scalar(e->g, hint, (float)v, e->err);
	free(hint);
	return t < 0 ? e_fail(e) : t;
}

/* a * constant v (the constant named "<op>.<cname>"). */
static int e_mulc(emitter *e, const char *step, int a, const char *cname,
		  double v)
{
	return e_bin(e, FL_OP_MUL, step, a, e_const(e, cname, v));
}

/* Reduction of a over the masked dims of a `rank` tensor; dims stay with
 * extent 1.  Reducing over nothing is a itself. */
static int e_reduce(emitter *e, fl_op_kind kind, const char *step, int a,
		    const bool *mask, int rank)
{
	int64_t axes[FL_MAX_RANK];
	int n = 0;
	fl_attrs attrs = {0, NULL};

	for (int d = 0; d < rank; d++)
		if (mask[d])
			axes[n++] = d;
	if (n == 0)
		return a;
	if (n < rank && fl_attrs_set_ints(&attrs, "axes", axes, n) < 0) {
		fl_attrs_free(&attrs);
		fl_error_set(e->err, "out of memory");
		return e_fail(e);
	}
	return e_op(e, kind, step, &a, 1, &attrs);
}

static int e_matmul(emitter *e, const char *step, int a, int b,
		    bool transpose_b)
{
	int in[2] = {a, b};
	fl_attrs attrs = {0, NULL};

	if (transpose_b && fl_attrs_set_bool(&attrs, "transpose_b", true) < 0) {
		fl_attrs_free(&attrs);
		fl_error_set(e->err, "out of memory");
		return e_fail(e);
	}
	return e_op(e, FL_OP_MATMUL, step, in, 2, &attrs);
}

/* Makes the last emitted op, which wrote t, write the compound op's
 * output instead (dropping t), and checks its shape there. */
static int e_finish(emitter *e, int t)
{
	fl_graph *g = e->g;
	fl_op *last;

	if (e->failed || t < 0 || e->last_op < 0)
		return -1;
	last = &g->ops[e->last_op];
	if (last->out[0] != t) {
		fl_error_set(e->err, "expansion of \"%s\" ends in no op",
			     e->op->name);
		return -1;
	}
	last->out[0] = e->op->out[0];
	if (t == g->n_tensors - 1) {
		free(g->tensors[t].name);
		fl_tensor_drop_values(&g->tensors[t]);
		g->n_tensors--;
	}
	if (fl_graph_infer_op(g, e->last_op, e->err) < 0) {
		fl_error_prefix(e->err, "%s", last->name);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* softmax, log_softmax                                                  */

int fl_infer_softmax(const fl_op *op, const fl_shape *in, fl_shape *out,
		     fl_error *err)
{
	int axis;

	if (get_axis(op, in[0].rank, &axis, err) < 0)
		return -1;
	out[0] = in[0];
	return 0;
}

int fl_infer_log_softmax(const fl_op *op, const fl_shape *in, fl_shape *out,
			 fl_error *err)
{
	return fl_infer_softmax(op, in, out, err);
}

/* Softmax (or its log) of in[0] along the "axis" attribute. */
static void eval_softmax_like(const fl_op *op, const fl_buf *in, fl_buf *out,
			      bool log_form)
{
	const float *x = in[0].data;
	bool mask[FL_MAX_RANK];
	int axis;
	groups gr;

	if (get_axis(op, in[0].shape.rank, &axis, NULL) < 0) {
		fill_nan(out);
		return;
	}
	for (int d = 0; d < in[0].shape.rank; d++)
		mask[d] = d == axis;
	if (groups_init(&gr, &in[0].shape, mask) < 0) {
		fill_nan(out);
		return;
	}
	for (int64_t g = 0; g < gr.n_groups; g++)
		gr.a[g] = -INFINITY;
	for (int64_t i = 0; i < gr.n; i++)
		gr.a[gr.id[i]] = fmax(gr.a[gr.id[i]], x[i]);
	for (int64_t i = 0; i < gr.n; i++)
		gr.b[gr.id[i]] += exp(x[i] - gr.a[gr.id[i]]);
	for (int64_t i = 0; i < gr.n; i++) {
		double d = x[i] - gr.a[gr.id[i]];

		out[0].data[i] = (float)(log_form ? d - log(gr.b[gr.id[i]])
						  : exp(d) / gr.b[gr.id[i]]);
	}
	groups_free(&gr);
}

void fl_eval_softmax(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	eval_softmax_like(op, in, out, false);
}

void fl_eval_log_softmax(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	eval_softmax_like(op, in, out, true);
}

/* The mask of the softmax axis of op's input. */
static int softmax_mask(const emitter *e, bool *mask, int *rank)
{
	int axis;

	*rank = e->g->tensors[e->op->in[0]].shape.rank;
	if (get_axis(e->op, *rank, &axis, e->err) < 0)
		return -1;
	for (int d = 0; d < *rank; d++)
		mask[d] = d == axis;
	return 0;
}

/* softmax = exp(x - max) / sum(exp(x - max)) */
int fl_expand_softmax(fl_graph *dst, const fl_op *op, fl_error *err)
{
	bool mask[FL_MAX_RANK];
	int rank, x = op->in[0], m, ex, s;
	emitter e;

	if (e_begin(&e, dst, op, err) < 0 || softmax_mask(&e, mask, &rank) < 0)
		return -1;
	m = e_reduce(&e, FL_OP_REDUCE_MAX, "max", x, mask, rank);
	ex = e_un(&e, FL_OP_EXP, "exp", e_bin(&e, FL_OP_SUB, "sub", x, m));
	s = e_reduce(&e, FL_OP_REDUCE_SUM, "sum", ex, mask, rank);
	return e_finish(&e, e_bin(&e, FL_OP_DIV, "div", ex, s));
}

/* log_softmax = (x - max) - log(sum(exp(x - max))) */
int fl_expand_log_softmax(fl_graph *dst, const fl_op *op, fl_error *err)
{
	bool mask[FL_MAX_RANK];
	int rank, x = op->in[0], m, d, s;
	emitter e;

	if (e_begin(&e, dst, op, err) < 0 || softmax_mask(&e, mask, &rank) < 0)
		return -1;
	m = e_reduce(&e, FL_OP_REDUCE_MAX, "max", x, mask, rank);
	d = e_bin(&e, FL_OP_SUB, "sub", x, m);
	s = e_reduce(&e, FL_OP_REDUCE_SUM, "sum",
		     e_un(&e, FL_OP_EXP, "exp", d), mask, rank);
	return e_finish(&e, e_bin(&e, FL_OP_SUB, "out", d,
				  e_un(&e, FL_OP_LOG, "log", s)));
}

/* ------------------------------------------------------------------ */
/* layernorm, rmsnorm, batchnorm                                         */

static const char *const norm_names[] = {"x", "gamma", "beta"};
static const char *const bn_names[] = {"x", "mean", "var", "gamma", "beta"};

int fl_infer_layernorm(const fl_op *op, const fl_shape *in, fl_shape *out,
		       fl_error *err)
{
	double eps;
	int axis;

	if (get_axis(op, in[0].rank, &axis, err) < 0 ||
	    get_eps(op, 1e-5, &eps, err) < 0 ||
	    check_params(in, op->n_in, norm_names, err) < 0)
		return -1;
	out[0] = in[0];
	return 0;
}

/* y = (x - mean) / sqrt(var + eps) [* gamma] [+ beta], the moments taken
 * over the masked dims. */
static void eval_norm(const fl_op *op, const fl_buf *in, fl_buf *out,
		      const bool *mask, double eps)
{
	const fl_shape *s = &in[0].shape;
	int64_t idx[FL_MAX_RANK] = {0};
	groups gr;

	if (groups_init(&gr, s, mask) < 0) {
		fill_nan(out);
		return;
	}
	groups_moments(&gr, in[0].data);
	for (int64_t i = 0; i < gr.n; i++) {
		int64_t g = gr.id[i];
		double y = (in[0].data[i] - gr.a[g]) / sqrt(gr.b[g] + eps);

		if (op->n_in > 1)
			y *= at(&in[1], s, idx);
		if (op->n_in > 2)
			y += at(&in[2], s, idx);
		out[0].data[i] = (float)y;
		fl_index_next(s, idx);
	}
	groups_free(&gr);
}

void fl_eval_layernorm(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	bool mask[FL_MAX_RANK];
	double eps;
	int axis;

	if (get_axis(op, in[0].shape.rank, &axis, NULL) < 0 ||
	    get_eps(op, 1e-5, &eps, NULL) < 0) {
		fill_nan(out);
		return;
	}
	tail_mask(in[0].shape.rank, axis, mask);
	eval_norm(op, in, out, mask, eps);
}

/* Applies the optional gamma (in[k]) and beta (in[k+1]) of e->op to y. */
static int e_affine(emitter *e, int y, int k)
{
	if (e->op->n_in > k)
		y = e_bin(e, FL_OP_MUL, "gamma", y, e->op->in[k]);
	if (e->op->n_in > k + 1)
		y = e_bin(e, FL_OP_ADD, "beta", y, e->op->in[k + 1]);
	return y;
}

/* mean = sum(x) / n; xc = x - mean; var = sum(xc^2) / n;
 * y = xc * rsqrt(var + eps) [* gamma] [+ beta] */
int fl_expand_layernorm(fl_graph *dst, const fl_op *op, fl_error *err)
{
	bool mask[FL_MAX_RANK];
	double eps;
	int axis, x = op->in[0], inv_n, mean, xc, var, r;
	emitter e;

	if (e_begin(&e, dst, op, err) < 0 ||
	    get_axis(op, e.x.rank, &axis, err) < 0 ||
	    get_eps(op, 1e-5, &eps, err) < 0)
		return -1;
	tail_mask(e.x.rank, axis, mask);
	inv_n = e_const(&e, "inv_n", 1.0 / (double)group_size(&e.x, mask));
	mean = e_bin(&e, FL_OP_MUL, "mean",
		     e_reduce(&e, FL_OP_REDUCE_SUM, "sum", x, mask, e.x.rank),
		     inv_n);
	xc = e_bin(&e, FL_OP_SUB, "center", x, mean);
	var = e_bin(&e, FL_OP_MUL, "var",
		    e_reduce(&e, FL_OP_REDUCE_SUM, "sqsum",
			     e_un(&e, FL_OP_SQUARE, "square", xc), mask,
			     e.x.rank),
		    inv_n);
	r = e_un(&e, FL_OP_RSQRT, "rsqrt",
		 e_bin(&e, FL_OP_ADD, "add_eps", var, e_const(&e, "eps", eps)));
	return e_finish(&e, e_affine(&e, e_bin(&e, FL_OP_MUL, "norm", xc, r),
				     1));
}

int fl_infer_rmsnorm(const fl_op *op, const fl_shape *in, fl_shape *out,
		     fl_error *err)
{
	double eps;

	if (need_rank(&in[0], 0, "x", 1, err) < 0 ||
	    get_eps(op, 1e-6, &eps, err) < 0 ||
	    check_params(in, op->n_in, norm_names, err) < 0)
		return -1;
	out[0] = in[0];
	return 0;
}

void fl_eval_rmsnorm(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	const fl_shape *s = &in[0].shape;
	int64_t idx[FL_MAX_RANK] = {0};
	bool mask[FL_MAX_RANK];
	double eps;
	groups gr;

	tail_mask(s->rank, s->rank - 1, mask);
	if (get_eps(op, 1e-6, &eps, NULL) < 0 || groups_init(&gr, s, mask) < 0) {
		fill_nan(out);
		return;
	}
	for (int64_t i = 0; i < gr.n; i++)
		gr.a[gr.id[i]] += (double)in[0].data[i] * in[0].data[i];
	for (int64_t i = 0; i < gr.n; i++) {
		double y = in[0].data[i] /
			   sqrt(gr.a[gr.id[i]] / (double)gr.per + eps);

		if (op->n_in > 1)
			y *= at(&in[1], s, idx);
		out[0].data[i] = (float)y;
		fl_index_next(s, idx);
	}
	groups_free(&gr);
}

/* y = x * rsqrt(sum(x^2) / n + eps) [* gamma] */
int fl_expand_rmsnorm(fl_graph *dst, const fl_op *op, fl_error *err)
{
	bool mask[FL_MAX_RANK];
	double eps;
	int x = op->in[0], ms, r;
	emitter e;

	if (e_begin(&e, dst, op, err) < 0 || get_eps(op, 1e-6, &eps, err) < 0)
		return -1;
	tail_mask(e.x.rank, e.x.rank - 1, mask);
	ms = e_mulc(&e, "mean_sq",
		    e_reduce(&e, FL_OP_REDUCE_SUM, "sqsum",
			     e_un(&e, FL_OP_SQUARE, "square", x), mask,
			     e.x.rank),
		    "inv_n", 1.0 / (double)e.x.dim[e.x.rank - 1]);
	r = e_un(&e, FL_OP_RSQRT, "rsqrt",
		 e_bin(&e, FL_OP_ADD, "add_eps", ms, e_const(&e, "eps", eps)));
	return e_finish(&e, e_affine(&e, e_bin(&e, FL_OP_MUL, "norm", x, r),
				     1));
}

int fl_infer_batchnorm(const fl_op *op, const fl_shape *in, fl_shape *out,
		       fl_error *err)
{
	double eps;

	if (get_eps(op, 1e-5, &eps, err) < 0 ||
	    check_params(in, op->n_in, bn_names, err) < 0)
		return -1;
	out[0] = in[0];
	return 0;
}

void fl_eval_batchnorm(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	const fl_shape *s = &in[0].shape;
	int64_t n = fl_shape_numel(s), idx[FL_MAX_RANK] = {0};
	double eps;

	if (get_eps(op, 1e-5, &eps, NULL) < 0) {
		fill_nan(out);
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		double y = (in[0].data[i] - at(&in[1], s, idx)) /
			   sqrt(at(&in[2], s, idx) + eps);

		if (op->n_in > 3)
			y *= at(&in[3], s, idx);
		if (op->n_in > 4)
			y += at(&in[4], s, idx);
		out[0].data[i] = (float)y;
		fl_index_next(s, idx);
	}
}

/* y = (x - mean) * rsqrt(var + eps) [* gamma] [+ beta] */
int fl_expand_batchnorm(fl_graph *dst, const fl_op *op, fl_error *err)
{
	double eps;
	int xc, r;
	emitter e;

	if (e_begin(&e, dst, op, err) < 0 || get_eps(op, 1e-5, &eps, err) < 0)
		return -1;
	xc = e_bin(&e, FL_OP_SUB, "center", op->in[0], op->in[1]);
	r = e_un(&e, FL_OP_RSQRT, "rsqrt",
		 e_bin(&e, FL_OP_ADD, "add_eps", op->in[2],
		       e_const(&e, "eps", eps)));
	return e_finish(&e, e_affine(&e, e_bin(&e, FL_OP_MUL, "norm", xc, r),
				     3));
}

/* ------------------------------------------------------------------ */
/* gelu, silu, leaky_relu, quantize: elementwise                         */

/* "approximate", as ONNX and PyTorch spell it: "none" (the exact erf
 * form, the default) or "tanh"; "erf" means "none".  "approx" is an older
 * alias of the same attribute (one of the two may be given).  Sets
 * *tanh_form. */
static int gelu_is_tanh(const fl_op *op, bool *tanh_form, fl_error *err)
{
	const char *key = "approximate", *s;
	int given = fl_attr_string(&op->attrs, key, "none", &s, err);

	if (given < 0)
		return -1;
	if (fl_attrs_find(&op->attrs, "approx")) {
		if (given) {
			fl_error_set(err, "attrs.approx: an alias of "
				     "\"approximate\", which is given too");
			return -1;
		}
		key = "approx";
		if (fl_attr_string(&op->attrs, key, "none", &s, err) < 0)
			return -1;
	}
	*tanh_form = strcmp(s, "tanh") == 0;
	if (!*tanh_form && strcmp(s, "none") != 0 && strcmp(s, "erf") != 0) {
		fl_error_set(err, "attrs.%s: expected \"none\" or \"tanh\" "
			     "(\"erf\" = \"none\"), got \"%s\"", key, s);
		return -1;
	}
	return 0;
}

int fl_infer_gelu(const fl_op *op, const fl_shape *in, fl_shape *out,
		  fl_error *err)
{
	bool tanh_form;

	if (gelu_is_tanh(op, &tanh_form, err) < 0)
		return -1;
	out[0] = in[0];
	return 0;
}

#define SQRT_2_OVER_PI 0.79788456080286535588
#define GELU_CUBIC 0.044715

static double gelu_ref(double x, bool tanh_form)
{
	if (tanh_form)
		return 0.5 * x *
		       (1 + tanh(SQRT_2_OVER_PI * (x + GELU_CUBIC * x * x * x)));
	return 0.5 * x * (1 + erf(x / sqrt(2.0)));
}

void fl_eval_gelu(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	int64_t n = fl_shape_numel(&in[0].shape);
	bool tanh_form;

	if (gelu_is_tanh(op, &tanh_form, NULL) < 0) {
		fill_nan(out);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		out[0].data[i] = (float)gelu_ref(in[0].data[i], tanh_form);
}

/* erf:  0.5 * x * (1 + erf(x / sqrt(2)))
 * tanh: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) */
int fl_expand_gelu(fl_graph *dst, const fl_op *op, fl_error *err)
{
	bool tanh_form;
	int x = op->in[0], inner, half;
	emitter e;

	if (e_begin(&e, dst, op, err) < 0 ||
	    gelu_is_tanh(op, &tanh_form, err) < 0)
		return -1;
	if (tanh_form) {
		int cube = e_bin(&e, FL_OP_MUL, "cube",
				 e_un(&e, FL_OP_SQUARE, "square", x), x);
		int poly = e_bin(&e, FL_OP_ADD, "poly", x,
				 e_mulc(&e, "cubic", cube, "k_cubic",
					GELU_CUBIC));

		inner = e_un(&e, FL_OP_TANH, "tanh",
			     e_mulc(&e, "scale", poly, "k_scale",
				    SQRT_2_OVER_PI));
	} else {
		inner = e_un(&e, FL_OP_ERF, "erf",
			     e_mulc(&e, "scale", x, "k_scale", 1 / sqrt(2.0)));
	}
	inner = e_bin(&e, FL_OP_ADD, "add_one", inner, e_const(&e, "one", 1));
	half = e_mulc(&e, "half", x, "k_half", 0.5);
	return e_finish(&e, e_bin(&e, FL_OP_MUL, "mul", half, inner));
}

int fl_infer_silu(const fl_op *op, const fl_shape *in, fl_shape *out,
		  fl_error *err)
{
	(void)op;
	(void)err;
	out[0] = in[0];
	return 0;
}

void fl_eval_silu(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	int64_t n = fl_shape_numel(&in[0].shape);

	(void)op;
	for (int64_t i = 0; i < n; i++) {
		double x = in[0].data[i];

		out[0].data[i] = (float)(x / (1 + exp(-x)));
	}
}

/* silu = x * sigmoid(x) */
int fl_expand_silu(fl_graph *dst, const fl_op *op, fl_error *err)
{
	int x = op->in[0];
	emitter e;

	if (e_begin(&e, dst, op, err) < 0)
		return -1;
	return e_finish(&e, e_bin(&e, FL_OP_MUL, "mul", x,
				  e_un(&e, FL_OP_SIGMOID, "sigmoid", x)));
}

int fl_infer_leaky_relu(const fl_op *op, const fl_shape *in, fl_shape *out,
			fl_error *err)
{
	double alpha;

	if (fl_attr_float(&op->attrs, "alpha", 0.01, &alpha, err) < 0)
		return -1;
	out[0] = in[0];
	return 0;
}

void fl_eval_leaky_relu(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	int64_t n = fl_shape_numel(&in[0].shape);
	double alpha;

	fl_attr_float(&op->attrs, "alpha", 0.01, &alpha, NULL);
	for (int64_t i = 0; i < n; i++) {
		double x = in[0].data[i];

		out[0].data[i] = (float)fmax(x, alpha * x);
	}
}

/* leaky_relu = max(x, alpha * x) */
int fl_expand_leaky_relu(fl_graph *dst, const fl_op *op, fl_error *err)
{
	double alpha;
	int x = op->in[0];
	emitter e;

	if (e_begin(&e, dst, op, err) < 0 ||
	    fl_attr_float(&op->attrs, "alpha", 0.01, &alpha, err) < 0)
		return -1;
	return e_finish(&e, e_bin(&e, FL_OP_MAX, "max", x,
				  e_mulc(&e, "scale", x, "alpha", alpha)));
}

/* hard_sigmoid, hard_swish, elu: ONNX's activations of the same names,
 * kept whole until partition opens them so that an export can write them
 * back as one ONNX op. */

static int hard_sigmoid_attrs(const fl_op *op, double *alpha, double *beta,
			      fl_error *err)
{
	if (op->kind == FL_OP_HARD_SWISH) {	/* ONNX fixes them */
		*alpha = 1.0 / 6.0;
		*beta = 0.5;
		return 0;
	}
	if (fl_attr_float(&op->attrs, "alpha", 0.2, alpha, err) < 0 ||
	    fl_attr_float(&op->attrs, "beta", 0.5, beta, err) < 0)
		return -1;
	return 0;
}

int fl_infer_hard_sigmoid(const fl_op *op, const fl_shape *in, fl_shape *out,
			  fl_error *err)
{
	double alpha, beta;

	if (hard_sigmoid_attrs(op, &alpha, &beta, err) < 0)
		return -1;
	out[0] = in[0];
	return 0;
}

static double hard_sigmoid_ref(double x, double alpha, double beta)
{
	return fmax(0.0, fmin(1.0, alpha * x + beta));
}

void fl_eval_hard_sigmoid(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	int64_t n = fl_shape_numel(&in[0].shape);
	double alpha, beta;

	hard_sigmoid_attrs(op, &alpha, &beta, NULL);
	for (int64_t i = 0; i < n; i++) {
		double x = in[0].data[i];
		double h = hard_sigmoid_ref(x, alpha, beta);

		out[0].data[i] = (float)(op->kind == FL_OP_HARD_SWISH ? x * h
								      : h);
	}
}

/* max(0, min(1, alpha * x + beta)), times x for hard_swish */
int fl_expand_hard_sigmoid(fl_graph *dst, const fl_op *op, fl_error *err)
{
	double alpha, beta;
	int x = op->in[0], h;
	emitter e;

	if (e_begin(&e, dst, op, err) < 0 ||
	    hard_sigmoid_attrs(op, &alpha, &beta, err) < 0)
		return -1;
	h = e_bin(&e, FL_OP_ADD, "shift", e_mulc(&e, "scale", x, "alpha", alpha),
		  e_const(&e, "beta", beta));
	h = e_bin(&e, FL_OP_MIN, "min", h, e_const(&e, "one", 1));
	h = e_bin(&e, FL_OP_MAX, "max", h, e_const(&e, "zero", 0));
	if (op->kind == FL_OP_HARD_SWISH)
		h = e_bin(&e, FL_OP_MUL, "mul", x, h);
	return e_finish(&e, h);
}

int fl_infer_hard_swish(const fl_op *op, const fl_shape *in, fl_shape *out,
			fl_error *err)
{
	return fl_infer_hard_sigmoid(op, in, out, err);
}

void fl_eval_hard_swish(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	fl_eval_hard_sigmoid(op, in, out);
}

int fl_expand_hard_swish(fl_graph *dst, const fl_op *op, fl_error *err)
{
	return fl_expand_hard_sigmoid(dst, op, err);
}

int fl_infer_elu(const fl_op *op, const fl_shape *in, fl_shape *out,
		 fl_error *err)
{
	double alpha;

	if (fl_attr_float(&op->attrs, "alpha", 1.0, &alpha, err) < 0)
		return -1;
	out[0] = in[0];
	return 0;
}

void fl_eval_elu(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	int64_t n = fl_shape_numel(&in[0].shape);
	double alpha;

	fl_attr_float(&op->attrs, "alpha", 1.0, &alpha, NULL);
	for (int64_t i = 0; i < n; i++) {
		double x = in[0].data[i];

		out[0].data[i] = (float)(x > 0 ? x : alpha * expm1(x));
	}
}

/* relu(x) + alpha * (exp(min(x, 0)) - 1): right for any sign of alpha,
 * and no exp of a large positive x */
int fl_expand_elu(fl_graph *dst, const fl_op *op, fl_error *err)
{
	double alpha;
	int x = op->in[0], neg;
	emitter e;

	if (e_begin(&e, dst, op, err) < 0 ||
	    fl_attr_float(&op->attrs, "alpha", 1.0, &alpha, err) < 0)
		return -1;
	neg = e_bin(&e, FL_OP_MIN, "min", x, e_const(&e, "zero", 0));
	neg = e_bin(&e, FL_OP_SUB, "expm1", e_un(&e, FL_OP_EXP, "exp", neg),
		    e_const(&e, "one", 1));
	return e_finish(&e, e_bin(&e, FL_OP_ADD, "add",
				  e_un(&e, FL_OP_RELU, "relu", x),
				  e_mulc(&e, "scale", neg, "alpha", alpha)));
}

/* "scale" (default 1/127), which must be positive. */
static int quantize_scale(const fl_op *op, double *scale, fl_error *err)
{
	if (fl_attr_float(&op->attrs, "scale", 1.0 / 127, scale, err) < 0)
		return -1;
	if (!(*scale > 0)) {
		fl_error_set(err, "attrs.scale: must be > 0, got %g", *scale);
		return -1;
	}
	return 0;
}

int fl_infer_quantize(const fl_op *op, const fl_shape *in, fl_shape *out,
		      fl_error *err)
{
	double scale;

	if (quantize_scale(op, &scale, err) < 0)
		return -1;
	out[0] = in[0];
	return 0;
}

void fl_eval_quantize(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	int64_t n = fl_shape_numel(&in[0].shape);
	double scale;

	if (quantize_scale(op, &scale, NULL) < 0) {
		fill_nan(out);
		return;
	}
	/* Mirrors the expansion's f32 steps (x times an f32 1/scale, rounded
	 * to f32, then nearbyint: ties to even), so both agree bit for bit
	 * even where x/scale lands near a half. */
	for (int64_t i = 0; i < n; i++) {
		float t = (float)((double)in[0].data[i] * (double)(float)(1 / scale));

		out[0].data[i] = (float)(nearbyint(t) * (double)(float)scale);
	}
}

/* quantize = round(x * (1/scale)) * scale */
int fl_expand_quantize(fl_graph *dst, const fl_op *op, fl_error *err)
{
	double scale;
	int r;
	emitter e;

	if (e_begin(&e, dst, op, err) < 0 || quantize_scale(op, &scale, err) < 0)
		return -1;
	r = e_un(&e, FL_OP_ROUND, "round",
		 e_mulc(&e, "scale_down", op->in[0], "inv_scale", 1 / scale));
	return e_finish(&e, e_mulc(&e, "scale_up", r, "scale", scale));
}

/* ------------------------------------------------------------------ */
/* bias_add, dense                                                       */

static const char *const bias_names[] = {"x", "b"};

int fl_infer_bias_add(const fl_op *op, const fl_shape *in, fl_shape *out,
		      fl_error *err)
{
	if (check_params(in, op->n_in, bias_names, err) < 0)
		return -1;
	out[0] = in[0];
	return 0;
}

void fl_eval_bias_add(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	const fl_shape *s = &in[0].shape;
	int64_t n = fl_shape_numel(s), idx[FL_MAX_RANK] = {0};

	(void)op;
	for (int64_t i = 0; i < n; i++) {
		out[0].data[i] = (float)((double)in[0].data[i] +
					 at(&in[1], s, idx));
		fl_index_next(s, idx);
	}
}

/* bias_add = x + b */
int fl_expand_bias_add(fl_graph *dst, const fl_op *op, fl_error *err)
{
	emitter e;

	if (e_begin(&e, dst, op, err) < 0)
		return -1;
	return e_finish(&e, e_bin(&e, FL_OP_ADD, "add", op->in[0], op->in[1]));
}

int fl_infer_dense(const fl_op *op, const fl_shape *in, fl_shape *out,
		   fl_error *err)
{
	const fl_shape *x = &in[0], *w = &in[1];
	fl_shape batch;
	bool tb;
	int64_t k, n;

	if (fl_attr_bool(&op->attrs, "transpose_b", false, &tb, err) < 0 ||
	    need_rank(x, 0, "x", 2, err) < 0 || need_rank(w, 1, "w", 2, err) < 0)
		return -1;
	k = w->dim[w->rank - (tb ? 1 : 2)];
	n = w->dim[w->rank - (tb ? 2 : 1)];
	if (k != x->dim[x->rank - 1])
		return inner_mismatch(1, "w", w, k, x->dim[x->rank - 1],
				      tb ? "K (last dim, transpose_b)"
					 : "K (second-last dim)", err);
	batch = batch_of(x);
	if (merge_batch(&batch, w, 1, "w", err) < 0)
		return -1;
	out[0] = with_matrix(&batch, x->dim[x->rank - 2], n);
	if (op->n_in > 2 && check_param(&in[2], &out[0], 2, "b", err) < 0)
		return -1;
	return 0;
}

/* One element of matmul(x, w): row m of x's matrix at xb, column n of w's
 * matrix at wb (stored [N, K] when tb), K terms. */
/* q[s,:] . k[t,:] over d_n values (row s of x at xb, row t of k at kb). */
static double dot_rows(const float *x, int64_t xb, const float *k,
		       int64_t kb, int64_t s, int64_t t, int64_t d_n)
{
	double sum = 0;

	for (int64_t d = 0; d < d_n; d++)
		sum += (double)x[xb + s * d_n + d] * k[kb + t * d_n + d];
	return sum;
}

/* One output row of dense: acc[j] = sum_k x[m,k] * w[k,j] for every j,
 * walking w row by row so the inner loop is contiguous (tb: w[j,k]). */
static void dense_row(const float *xr, const float *w, int64_t k_n,
		      int64_t n_n, bool tb, double *acc)
{
	for (int64_t j = 0; j < n_n; j++)
		acc[j] = 0;
	for (int64_t k = 0; k < k_n; k++) {
		double xv = xr[k];

		if (tb)
			for (int64_t j = 0; j < n_n; j++)
				acc[j] += xv * w[j * k_n + k];
		else
			for (int64_t j = 0; j < n_n; j++)
				acc[j] += xv * w[k * n_n + j];
	}
}

void fl_eval_dense(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	const fl_shape *x = &in[0].shape, *w = &in[1].shape, *o = &out[0].shape;
	fl_shape batch = batch_of(o);
	int64_t k_n = x->dim[x->rank - 1], n_n = o->dim[o->rank - 1];
	int64_t rows = fl_shape_numel(o) / n_n, idx[FL_MAX_RANK] = {0};
	double *acc = malloc((size_t)n_n * sizeof *acc);
	bool tb;

	if (!acc) {
		fill_nan(out);
		return;
	}
	fl_attr_bool(&op->attrs, "transpose_b", false, &tb, NULL);
	for (int64_t r = 0; r < rows; r++) {
		const float *xr = in[0].data + mat_base(x, &batch, idx) +
				  idx[o->rank - 2] * k_n;

		dense_row(xr, in[1].data + mat_base(w, &batch, idx), k_n, n_n, tb,
			  acc);
		for (int64_t j = 0; j < n_n; j++) {
			double y = acc[j];

			idx[o->rank - 1] = j;
			if (op->n_in > 2)
				y += at(&in[2], o, idx);
			out[0].data[r * n_n + j] = (float)y;
		}
		fl_index_next(o, idx);	/* to the next row */
	}
	free(acc);
}

/* dense = matmul(x, w) [+ b] */
int fl_expand_dense(fl_graph *dst, const fl_op *op, fl_error *err)
{
	bool tb;
	int y;
	emitter e;

	if (e_begin(&e, dst, op, err) < 0 ||
	    fl_attr_bool(&op->attrs, "transpose_b", false, &tb, err) < 0)
		return -1;
	y = e_matmul(&e, "matmul", op->in[0], op->in[1], tb);
	if (op->n_in > 2)
		y = e_bin(&e, FL_OP_ADD, "bias", y, op->in[2]);
	return e_finish(&e, y);
}

/* ------------------------------------------------------------------ */
/* reduce_mean, variance                                                 */

int fl_infer_reduce_mean(const fl_op *op, const fl_shape *in, fl_shape *out,
			 fl_error *err)
{
	bool mask[FL_MAX_RANK];

	if (get_axes(op, in[0].rank, mask, err) < 0)
		return -1;
	out[0] = reduced_shape(&in[0], mask);
	return 0;
}

int fl_infer_variance(const fl_op *op, const fl_shape *in, fl_shape *out,
		      fl_error *err)
{
	return fl_infer_reduce_mean(op, in, out, err);
}

/* Mean (variance false) or population variance over the "axes". */
static void eval_moment(const fl_op *op, const fl_buf *in, fl_buf *out,
			bool variance)
{
	bool mask[FL_MAX_RANK];
	groups gr;

	if (get_axes(op, in[0].shape.rank, mask, NULL) < 0 ||
	    groups_init(&gr, &in[0].shape, mask) < 0) {
		fill_nan(out);
		return;
	}
	groups_moments(&gr, in[0].data);
	for (int64_t g = 0; g < gr.n_groups; g++)
		out[0].data[g] = (float)(variance ? gr.b[g] : gr.a[g]);
	groups_free(&gr);
}

void fl_eval_reduce_mean(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	eval_moment(op, in, out, false);
}

void fl_eval_variance(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	eval_moment(op, in, out, true);
}

/* reduce_mean = sum(x) * (1/n) */
int fl_expand_reduce_mean(fl_graph *dst, const fl_op *op, fl_error *err)
{
	bool mask[FL_MAX_RANK];
	int sum;
	emitter e;

	if (e_begin(&e, dst, op, err) < 0 ||
	    get_axes(op, e.x.rank, mask, err) < 0)
		return -1;
	sum = e_reduce(&e, FL_OP_REDUCE_SUM, "sum", op->in[0], mask, e.x.rank);
	return e_finish(&e, e_mulc(&e, "mean", sum, "inv_n",
				   1.0 / (double)group_size(&e.x, mask)));
}

/* mean = sum(x) / n; variance = sum((x - mean)^2) / n */
int fl_expand_variance(fl_graph *dst, const fl_op *op, fl_error *err)
{
	bool mask[FL_MAX_RANK];
	int x = op->in[0], inv_n, mean, xc, sq;
	emitter e;

	if (e_begin(&e, dst, op, err) < 0 ||
	    get_axes(op, e.x.rank, mask, err) < 0)
		return -1;
	inv_n = e_const(&e, "inv_n", 1.0 / (double)group_size(&e.x, mask));
	mean = e_bin(&e, FL_OP_MUL, "mean",
		     e_reduce(&e, FL_OP_REDUCE_SUM, "sum", x, mask, e.x.rank),
		     inv_n);
	xc = e_bin(&e, FL_OP_SUB, "center", x, mean);
	sq = e_reduce(&e, FL_OP_REDUCE_SUM, "sqsum",
		      e_un(&e, FL_OP_SQUARE, "square", xc), mask, e.x.rank);
	return e_finish(&e, e_bin(&e, FL_OP_MUL, "var", sq, inv_n));
}

/* ------------------------------------------------------------------ */
/* attention                                                             */

int fl_infer_attention(const fl_op *op, const fl_shape *in, fl_shape *out,
		       fl_error *err)
{
	const fl_shape *q = &in[0], *k = &in[1], *v = &in[2];
	fl_shape batch;
	double scale;

	if (need_rank(q, 0, "q", 2, err) < 0 || need_rank(k, 1, "k", 2, err) < 0 ||
	    need_rank(v, 2, "v", 2, err) < 0 ||
	    fl_attr_float(&op->attrs, "scale", 1, &scale, err) < 0)
		return -1;
	if (k->dim[k->rank - 1] != q->dim[q->rank - 1])
		return inner_mismatch(1, "k", k, k->dim[k->rank - 1],
				      q->dim[q->rank - 1], "D (last dim)", err);
	if (v->dim[v->rank - 2] != k->dim[k->rank - 2])
		return inner_mismatch(2, "v", v, v->dim[v->rank - 2],
				      k->dim[k->rank - 2],
				      "T (second-last dim)", err);
	batch = batch_of(q);
	if (merge_batch(&batch, k, 1, "k", err) < 0 ||
	    merge_batch(&batch, v, 2, "v", err) < 0)
		return -1;
	out[0] = with_matrix(&batch, q->dim[q->rank - 2], v->dim[v->rank - 1]);
	return 0;
}

static double attention_scale(const fl_op *op, const fl_shape *q)
{
	double scale;

	fl_attr_float(&op->attrs, "scale", 1 / sqrt((double)q->dim[q->rank - 1]),
		      &scale, NULL);
	return scale;
}

/* One output row: softmax over t of q[s,:].k[t,:] * scale, times v.
 * p holds T scratch values. */
static void attention_row(const fl_buf *in, const int64_t *base, int64_t s,
			  double scale, double *p, float *out)
{
	const fl_shape *k = &in[1].shape, *v = &in[2].shape;
	int64_t t_n = k->dim[k->rank - 2], d_n = k->dim[k->rank - 1];
	int64_t e_n = v->dim[v->rank - 1];
	double mx = -INFINITY, sum = 0;

	for (int64_t t = 0; t < t_n; t++) {
		p[t] = scale * dot_rows(in[0].data, base[0], in[1].data,
					base[1], s, t, d_n);
		mx = fmax(mx, p[t]);
	}
	for (int64_t t = 0; t < t_n; t++) {
		p[t] = exp(p[t] - mx);
		sum += p[t];
	}
	for (int64_t e = 0; e < e_n; e++) {
		double y = 0;

		for (int64_t t = 0; t < t_n; t++)
			y += p[t] * in[2].data[base[2] + t * e_n + e];
		out[e] = (float)(y / sum);
	}
}

void fl_eval_attention(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	const fl_shape *o = &out[0].shape;
	fl_shape batch = batch_of(o);
	int64_t nb = fl_shape_numel(&batch), idx[FL_MAX_RANK] = {0};
	int64_t s_n = o->dim[o->rank - 2], e_n = o->dim[o->rank - 1];
	double scale = attention_scale(op, &in[0].shape);
	double *p = malloc((size_t)in[1].shape.dim[in[1].shape.rank - 2] *
			   sizeof *p);

	if (!p) {
		fill_nan(out);
		return;
	}
	for (int64_t b = 0; b < nb; b++) {
		int64_t base[3];

		for (int k = 0; k < 3; k++)
			base[k] = mat_base(&in[k].shape, &batch, idx);
		for (int64_t s = 0; s < s_n; s++)
			attention_row(in, base, s, scale, p,
				      out[0].data + (b * s_n + s) * e_n);
		fl_index_next(&batch, idx);
	}
	free(p);
}

/* attention = matmul(softmax(matmul(q, k^T) * scale), v), the softmax over
 * the last axis written out as primitives. */
int fl_expand_attention(fl_graph *dst, const fl_op *op, fl_error *err)
{
	bool mask[FL_MAX_RANK];
	int rank, z, m, ex, p;
	emitter e;

	if (e_begin(&e, dst, op, err) < 0)
		return -1;
	z = e_matmul(&e, "qk", op->in[0], op->in[1], true);
	z = e_mulc(&e, "scale", z, "k_scale", attention_scale(op, &e.x));
	rank = z < 0 ? 0 : dst->tensors[z].shape.rank;
	tail_mask(rank, rank - 1, mask);
	m = e_reduce(&e, FL_OP_REDUCE_MAX, "max", z, mask, rank);
	ex = e_un(&e, FL_OP_EXP, "exp", e_bin(&e, FL_OP_SUB, "sub", z, m));
	p = e_bin(&e, FL_OP_DIV, "softmax", ex,
		  e_reduce(&e, FL_OP_REDUCE_SUM, "sum", ex, mask, rank));
	return e_finish(&e, e_matmul(&e, "pv", p, op->in[2], false));
}

/* ------------------------------------------------------------------ */
/* The emitter for expansions kept in files of their own (ops_impl.h):  */
/* the same functions behind an opaque handle.                          */

struct fl_emitter {
	emitter e;
};

fl_emitter *fl_emit_begin(fl_graph *g, const fl_op *op, fl_error *err)
{
	fl_emitter *em = malloc(sizeof *em);

	if (!em) {
		fl_error_set(err, "out of memory");
		return NULL;
	}
	if (e_begin(&em->e, g, op, err) < 0) {
		free(em);
		return NULL;
	}
	return em;
}

int fl_emit_op(fl_emitter *em, fl_op_kind kind, const char *step,
	       const int *in, int n_in, fl_attrs *attrs)
{
	return e_op(&em->e, kind, step, in, n_in, attrs);
}

int fl_emit_const(fl_emitter *em, const char *cname, double v)
{
	return e_const(&em->e, cname, v);
}

int fl_emit_matmul(fl_emitter *em, const char *step, int a, int b,
		   bool transpose_b)
{
	return e_matmul(&em->e, step, a, b, transpose_b);
}

int fl_emit_finish(fl_emitter *em, int t)
{
	int rc = e_finish(&em->e, t);

	free(em);
	return rc;
}
