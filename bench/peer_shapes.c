/* Shapes of the samples for make bench's peers (peer_shapes.h). */
#include "peer_shapes.h"

#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>

#include "loader.h"

/* The file's base name without ".json": how rows name their sample. */
static void sample_name(const char *path, char *buf, size_t n)
{
	const char *b = strrchr(path, '/');
	size_t len;

	b = b ? b + 1 : path;
	len = strcspn(b, ".");
	snprintf(buf, n, "%.*s", (int)len, b);
}

/* Appends "sample: op" (or " op" when the sample is already the last one
 * named) to uses, ending in "..." once full. */
static void add_use(char *uses, const char *sample, const char *op)
{
	size_t len = strlen(uses), sl = strlen(sample);
	const char *last = strrchr(uses, ';');
	const char *from = last ? last + 2 : uses;
	bool same = len && strncmp(from, sample, sl) == 0 && from[sl] == ':';
	char piece[160];

	if (len >= PS_USES - 4 && strcmp(uses + len - 3, "..."))
		return;
	snprintf(piece, sizeof piece, "%s%s%s%s", same ? " " : len ? "; " : "",
		 same ? "" : sample, same ? "" : ": ", op);
	if (len + strlen(piece) >= PS_USES - 4) {
		if (strcmp(uses + len - 3, "..."))
			strcpy(uses + len, " ...");
		return;
	}
	strcpy(uses + len, piece);
}

/* Loads path; with open, its compound ops opened too. */
static fl_graph *load(const char *path, bool open, fl_error *err)
{
	fl_graph *g = fl_load_graph_file(path, err), *e;

	if (!g || !open)
		return g;
	e = fl_graph_expand_compounds(g, err);
	fl_graph_free(g);
	if (!e)
		fl_error_prefix(err, "%s", path);
	return e;
}

/* Reads a matmul's shape from its operands and attributes. */
static int matmul_of(const fl_graph *g, const fl_op *op, void *out,
		     fl_error *err)
{
	const fl_shape *y = &g->tensors[op->out[0]].shape;
	ps_matmul *m = out;

	memset(m, 0, sizeof *m);
	m->a = g->tensors[op->in[0]].shape;
	m->b = g->tensors[op->in[1]].shape;
	if (fl_attr_bool(&op->attrs, "transpose_a", false, &m->ta, err) < 0 ||
	    fl_attr_bool(&op->attrs, "transpose_b", false, &m->tb, err) < 0)
		return -1;
	m->m = y->dim[y->rank - 2];
	m->n = y->dim[y->rank - 1];
	m->k = m->a.dim[m->a.rank - (m->ta ? 2 : 1)];
	m->batch = 1;
	for (int d = 0; d < y->rank - 2; d++)
		m->batch *= y->dim[d];
	return 0;
}

static bool same_matmul(const void *a, const void *b)
{
	const ps_matmul *x = a, *y = b;

	return fl_shape_equal(&x->a, &y->a) && fl_shape_equal(&x->b, &y->b) &&
	       x->ta == y->ta && x->tb == y->tb;
}

/* How to collect the shapes of one op kind: read an op's shape into an
 * element of `size` bytes, compare two, and where its uses are. */
typedef struct shape_kind {
	fl_op_kind kind;
	size_t size, uses;
	int (*of)(const fl_graph *, const fl_op *, void *, fl_error *);
	bool (*same)(const void *, const void *);
} shape_kind;

/* Adds the distinct shapes of kind k in graph file path (compound ops
 * opened) to the n elements of arr (at most PS_MAX). */
static int add_shapes(const shape_kind *k, void *arr, int *n,
		      const char *path, fl_error *err)
{
	fl_graph *g = load(path, true, err);
	union { ps_matmul mm; ps_conv conv; } one;	/* aligned for either */
	char name[64], *el = arr;

	if (!g)
		return -1;
	sample_name(path, name, sizeof name);
	for (int i = 0; i < g->n_ops; i++) {
		const fl_op *op = &g->ops[i];
		int j;

		if (op->kind != k->kind)
			continue;
		if (k->of(g, op, &one, err) < 0) {
			fl_error_prefix(err, "%s: %s", path, op->name);
			fl_graph_free(g);
			return -1;
		}
		for (j = 0; j < *n && !k->same(el + (size_t)j * k->size, &one); j++)
			;
		if (j == *n) {
			if (j == PS_MAX)
				continue;
			memcpy(el + (size_t)(*n)++ * k->size, &one, k->size);
		}
		add_use(el + (size_t)j * k->size + k->uses, name, op->name);
	}
	fl_graph_free(g);
	return 0;
}

int ps_add_matmuls(ps_set *set, const char *path, fl_error *err)
{
	static const shape_kind mm = {FL_OP_MATMUL, sizeof(ps_matmul),
		offsetof(ps_matmul, uses), matmul_of, same_matmul};

	return add_shapes(&mm, set->mm, &set->n_mm, path, err);
}

/* Reads a conv2d's shape and attributes. */
static int conv_of(const fl_graph *g, const fl_op *op, void *out,
		   fl_error *err)
{
	const fl_shape *y = &g->tensors[op->out[0]].shape;
	ps_conv *c = out;
	int n_s, n_d;

	memset(c, 0, sizeof *c);
	c->x = g->tensors[op->in[0]].shape;
	c->w = g->tensors[op->in[1]].shape;
	c->sh.stride[0] = c->sh.stride[1] = 1;
	c->sh.dilation[0] = c->sh.dilation[1] = 1;
	if (fl_attr_ints(&op->attrs, "stride", c->sh.stride, 2, &n_s, err) < 0 ||
	    fl_attr_ints(&op->attrs, "dilation", c->sh.dilation, 2, &n_d,
			 err) < 0 ||
	    fl_attr_int(&op->attrs, "groups", 1, &c->sh.groups, err) < 0)
		return -1;
	if (n_s < 0)
		c->sh.stride[0] = c->sh.stride[1] = 1;
	if (n_d < 0)
		c->sh.dilation[0] = c->sh.dilation[1] = 1;
	c->sh.n = c->x.dim[0];
	c->sh.c = c->x.dim[1];
	c->sh.h = c->x.dim[2];
	c->sh.w = c->x.dim[3];
	c->sh.k = c->w.dim[0];
	c->sh.r = c->w.dim[2];
	c->sh.s = c->w.dim[3];
	c->sh.oh = y->dim[2];
	c->sh.ow = y->dim[3];
	return 0;
}

static bool same_conv(const void *pa, const void *pb)
{
	const ps_conv *a = pa, *b = pb;

	return fl_shape_equal(&a->x, &b->x) && fl_shape_equal(&a->w, &b->w) &&
	       !memcmp(a->sh.stride, b->sh.stride, sizeof a->sh.stride) &&
	       !memcmp(a->sh.dilation, b->sh.dilation, sizeof a->sh.dilation) &&
	       a->sh.groups == b->sh.groups;
}

int ps_add_convs(ps_set *set, const char *path, fl_error *err)
{
	static const shape_kind conv = {FL_OP_CONV2D, sizeof(ps_conv),
		offsetof(ps_conv, uses), conv_of, same_conv};

	return add_shapes(&conv, set->conv, &set->n_conv, path, err);
}

/* The "approximate" attribute of g's first gelu op, "none" without. */
static int gelu_form(const fl_graph *g, char *buf, size_t n, fl_error *err)
{
	const char *s = "none";

	for (int i = 0; i < g->n_ops; i++)
		if (g->ops[i].kind == FL_OP_GELU) {
			if (fl_attr_string(&g->ops[i].attrs, "approximate",
					   "none", &s, err) < 0)
				return -1;
			break;
		}
	snprintf(buf, n, "%s", s);
	return 0;
}

int ps_add_denses(ps_set *set, const char *path, fl_error *err)
{
	fl_graph *g = load(path, false, err);
	char name[64], gelu[16];

	if (!g)
		return -1;
	sample_name(path, name, sizeof name);
	if (gelu_form(g, gelu, sizeof gelu, err) < 0)
		goto fail;
	for (int i = 0; i < g->n_ops; i++) {
		const fl_op *op = &g->ops[i];
		ps_dense d;
		int j;

		if (op->kind != FL_OP_DENSE || op->n_in < 3)
			continue;
		memset(&d, 0, sizeof d);
		d.x = g->tensors[op->in[0]].shape;
		d.w = g->tensors[op->in[1]].shape;
		d.bias = g->tensors[op->in[2]].shape;
		snprintf(d.gelu, sizeof d.gelu, "%s", gelu);
		if (fl_attr_bool(&op->attrs, "transpose_b", false, &d.tb,
				 err) < 0)
			goto fail;
		for (j = 0; j < set->n_dense; j++) {
			const ps_dense *e = &set->dense[j];

			if (fl_shape_equal(&e->x, &d.x) &&
			    fl_shape_equal(&e->w, &d.w) && e->tb == d.tb &&
			    !strcmp(e->gelu, d.gelu))
				break;
		}
		if (j == set->n_dense) {
			if (j == PS_MAX)
				continue;
			set->dense[set->n_dense++] = d;
		}
		add_use(set->dense[j].uses, name, op->name);
	}
	fl_graph_free(g);
	return 0;
fail:
	fl_error_prefix(err, "%s", path);
	fl_graph_free(g);
	return -1;
}

double ps_matmul_flops(const ps_matmul *m)
{
	return 2.0 * (double)m->batch * (double)m->m * (double)m->n *
	       (double)m->k;
}

double ps_conv_flops(const ps_conv *c)
{
	const dp_conv_shape *s = &c->sh;

	return 2.0 * (double)s->n * (double)s->k * (double)s->oh *
	       (double)s->ow * (double)(s->c / s->groups) * (double)s->r *
	       (double)s->s;
}

const char *ps_matmul_text(const ps_matmul *m, char *buf, int n)
{
	snprintf(buf, (size_t)n, "%" PRId64 "x%" PRId64 "x%" PRId64 "x%" PRId64
		 "%s%s", m->batch, m->m, m->n, m->k, m->ta ? " tA" : "",
		 m->tb ? " tB" : "");
	return buf;
}

/* "2" for a pair of equal values, "2x1" otherwise. */
static const char *pair_text(const int64_t *v, char *buf, size_t n)
{
	if (v[0] == v[1])
		snprintf(buf, n, "%" PRId64, v[0]);
	else
		snprintf(buf, n, "%" PRId64 "x%" PRId64, v[0], v[1]);
	return buf;
}

const char *ps_conv_text(const ps_conv *c, char *buf, int n)
{
	const dp_conv_shape *s = &c->sh;
	char st[48], dl[48];

	snprintf(buf, (size_t)n, "%" PRId64 "x%" PRId64 "x%" PRId64 "x%" PRId64
		 "*%" PRId64 "x%" PRId64 "x%" PRId64 "x%" PRId64 " s%s d%s g%"
		 PRId64, s->n, s->c, s->h, s->w, s->k, c->w.dim[1], s->r, s->s,
		 pair_text(s->stride, st, sizeof st),
		 pair_text(s->dilation, dl, sizeof dl), s->groups);
	return buf;
}

/* The batch dims (all but the last two) of s. */
static fl_shape batch_dims(const fl_shape *s)
{
	return fl_shape_make(s->rank - 2, s->dim);
}

int ps_batch_offsets(const ps_matmul *m, int64_t **a_off, int64_t **b_off)
{
	fl_shape ab = batch_dims(&m->a), bb = batch_dims(&m->b), yb;
	int64_t idx[FL_MAX_RANK] = {0};
	int64_t a_mat = m->a.dim[m->a.rank - 2] * m->a.dim[m->a.rank - 1];
	int64_t b_mat = m->b.dim[m->b.rank - 2] * m->b.dim[m->b.rank - 1];
	int i = 0;

	*a_off = malloc((size_t)m->batch * sizeof **a_off);
	*b_off = malloc((size_t)m->batch * sizeof **b_off);
	if (!*a_off || !*b_off || fl_shape_broadcast(&ab, &bb, &yb, NULL) < 0) {
		free(*a_off);
		free(*b_off);
		*a_off = *b_off = NULL;
		return -1;
	}
	do {
		(*a_off)[i] = fl_broadcast_offset(&ab, &yb, idx) * a_mat;
		(*b_off)[i] = fl_broadcast_offset(&bb, &yb, idx) * b_mat;
		i++;
	} while (i < m->batch && fl_index_next(&yb, idx));
	return 0;
}

/* Adds tensor `name` of shape s (NULL: inferred) with role r; -1 when
 * that fails. */
static int tensor(fl_graph *g, const char *name, const fl_shape *s,
		  fl_role r, fl_error *err)
{
	return fl_graph_add_tensor(g, name, s, r, err);
}

/* Adds op `name` of kind k from in[0..n_in-1] to tensor out. */
static int op(fl_graph *g, const char *name, fl_op_kind k, const int *in,
	      int n_in, int out, fl_error *err)
{
	return fl_graph_add_op(g, name, k, in, n_in, &out, 1, err);
}

/* Validates g, or frees it: the builders' common ending. */
static fl_graph *finish(fl_graph *g, bool ok, fl_error *err)
{
	if (ok && fl_graph_validate(g, err) == 0)
		return g;
	if (ok)
		fl_error_prefix(err, "%s", g->name);
	else if (!err->msg[0])
		fl_error_set(err, "out of memory building %s", g->name);
	fl_graph_free(g);
	return NULL;
}

fl_graph *ps_matmul_graph(const ps_matmul *m, fl_error *err)
{
	fl_graph *g = fl_graph_new("peer_matmul");
	int in[2], y, o;
	bool ok;

	if (!g) {
		fl_error_set(err, "out of memory");
		return NULL;
	}
	in[0] = tensor(g, "a", &m->a, FL_ROLE_INPUT, err);
	in[1] = tensor(g, "b", &m->b, FL_ROLE_PARAM, err);
	y = tensor(g, "y", NULL, FL_ROLE_OUTPUT, err);
	ok = in[0] >= 0 && in[1] >= 0 && y >= 0 &&
	     (o = op(g, "matmul", FL_OP_MATMUL, in, 2, y, err)) >= 0 &&
	     (!m->ta || fl_attrs_set_bool(&g->ops[o].attrs, "transpose_a",
					  true) == 0) &&
	     (!m->tb || fl_attrs_set_bool(&g->ops[o].attrs, "transpose_b",
					  true) == 0);
	return finish(g, ok, err);
}

/* The conv2d attributes of c (all of them, defaults included). */
static int conv_attrs(fl_attrs *a, const ps_conv *c)
{
	return fl_attrs_set_ints(a, "stride", c->sh.stride, 2) |
	       fl_attrs_set_ints(a, "dilation", c->sh.dilation, 2) |
	       fl_attrs_set_number(a, "groups", (double)c->sh.groups);
}

fl_graph *ps_conv_graph(const ps_conv *c, fl_error *err)
{
	fl_graph *g = fl_graph_new("peer_conv2d");
	int in[2], y, o;
	bool ok;

	if (!g) {
		fl_error_set(err, "out of memory");
		return NULL;
	}
	in[0] = tensor(g, "x", &c->x, FL_ROLE_INPUT, err);
	in[1] = tensor(g, "w", &c->w, FL_ROLE_PARAM, err);
	y = tensor(g, "y", NULL, FL_ROLE_OUTPUT, err);
	ok = in[0] >= 0 && in[1] >= 0 && y >= 0 &&
	     (o = op(g, "conv2d", FL_OP_CONV2D, in, 2, y, err)) >= 0 &&
	     conv_attrs(&g->ops[o].attrs, c) == 0;
	return finish(g, ok, err);
}

const char *ps_epilogue_name(ps_epilogue e)
{
	return e == PS_BIAS_GELU ? "bias+gelu" : "bias+residual";
}

fl_graph *ps_dense_graph(const ps_dense *d, ps_epilogue e, fl_error *err)
{
	fl_graph *g = fl_graph_new(e == PS_BIAS_GELU ? "peer_dense_gelu"
				   : "peer_dense_residual");
	int in[3], h, y, r = -1, o, last;
	bool ok;

	if (!g) {
		fl_error_set(err, "out of memory");
		return NULL;
	}
	in[0] = tensor(g, "x", &d->x, FL_ROLE_INPUT, err);
	in[1] = tensor(g, "w", &d->w, FL_ROLE_PARAM, err);
	in[2] = tensor(g, "bias", &d->bias, FL_ROLE_PARAM, err);
	h = tensor(g, "h", NULL, FL_ROLE_TEMP, err);
	y = tensor(g, "y", NULL, FL_ROLE_OUTPUT, err);
	ok = in[0] >= 0 && in[1] >= 0 && in[2] >= 0 && h >= 0 && y >= 0 &&
	     (o = op(g, "dense", FL_OP_DENSE, in, 3, h, err)) >= 0 &&
	     (!d->tb || fl_attrs_set_bool(&g->ops[o].attrs, "transpose_b",
					  true) == 0);
	if (ok && e == PS_BIAS_GELU) {
		ok = (last = op(g, "gelu", FL_OP_GELU, &h, 1, y, err)) >= 0 &&
		     fl_attrs_set_string(&g->ops[last].attrs, "approximate",
					 d->gelu) == 0;
	} else if (ok) {
		fl_shape ys;
		/* the residual has the dense's output shape */
		ys = d->x;
		ys.dim[ys.rank - 1] = d->w.dim[d->tb ? d->w.rank - 2
						   : d->w.rank - 1];
		r = tensor(g, "r", &ys, FL_ROLE_INPUT, err);
		ok = r >= 0 && op(g, "residual", FL_OP_ADD,
				  (const int[]){h, r}, 2, y, err) >= 0;
	}
	return finish(g, ok, err);
}
