/* Random valid graphs (see random_graph.h for the contract).
 *
 * A builder keeps a pool of the values made so far (inputs, weights, op
 * results) with a rough bound on their magnitude.  Each round draws one
 * kind of op from a weighted table; its generator picks operands from the
 * pool (mostly recent values, sometimes any: that makes the branches and
 * the shared producers), makes fresh inputs or weights where an operand
 * of a given shape is needed, sets the attributes, and lets the op
 * library infer the result's shape.  A generator that finds no operand
 * it can use, or whose result would be too large, declines and another
 * is drawn. */
#include "random_graph.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

/* Past this magnitude a value is squashed (tanh) before it is used. */
#define TAME_BOUND 64.0
#define DECLINED 1	/* a generator's "not applicable here" */
#define NONE (-2)	/* pick: no value fits */

typedef struct value {
	int t;		/* tensor index */
	double bound;	/* rough bound on |element| */
} value;

typedef struct builder {
	fl_graph *g;
	fl_rng rng;
	value *pool;
	int n_pool, cap_pool;
	int one;	/* the const 1 of |x| + 1, -1 until needed */
	fl_error *err;
} builder;

/* Small extents, odd ones and primes among them: the edge cases of
 * tiling (a tile larger than the extent, a remainder tile). */
static const int64_t extents[] = {1, 2, 3, 4, 5, 7, 8, 13, 16, 17};
#define N_EXTENTS ((int64_t)(sizeof extents / sizeof extents[0]))

static int64_t draw(builder *b, int64_t n)
{
	return fl_rng_below(&b->rng, n);
}

static bool chance(builder *b, int percent)
{
	return draw(b, 100) < percent;
}

static int64_t extent(builder *b)
{
	return extents[draw(b, N_EXTENTS)];
}

static const fl_shape *shape_of(const builder *b, int t)
{
	return &b->g->tensors[t].shape;
}

static int rank_of(const builder *b, int t)
{
	return shape_of(b, t)->rank;
}

static bool fits_size(const fl_shape *s)
{
	int64_t n = fl_shape_numel(s);

	return n >= 1 && n <= FL_RANDOM_GRAPH_MAX_NUMEL;
}

static double bound_of(const builder *b, int t)
{
	for (int i = 0; i < b->n_pool; i++)
		if (b->pool[i].t == t)
			return b->pool[i].bound;
	return 1.0;
}

static int remember(builder *b, int t, double bound)
{
	if (t < 0)
		return -1;
	if (b->n_pool == b->cap_pool) {
		int cap = b->cap_pool ? 2 * b->cap_pool : 64;
		value *p = realloc(b->pool, (size_t)cap * sizeof *p);

		if (!p) {
			fl_error_set(b->err, "out of memory");
			return -1;
		}
		b->pool = p;
		b->cap_pool = cap;
	}
	b->pool[b->n_pool++] = (value){t, bound};
	return t;
}

/* A shape of `rank` small extents holding at most the size limit. */
static fl_shape random_shape(builder *b, int rank)
{
	fl_shape s = {.rank = rank};

	for (int i = 0; i < rank; i++)
		s.dim[i] = extent(b);
	while (!fits_size(&s)) {
		int big = 0;

		for (int i = 1; i < rank; i++)
			if (s.dim[i] > s.dim[big])
				big = i;
		s.dim[big] = extents[draw(b, 5)];
	}
	return s;
}

/* A fresh graph input (role input) or weight (role param) of shape s,
 * named x<k> or w<k>, in the pool. */
static int new_leaf(builder *b, const fl_shape *s)
{
	bool input = chance(b, 30);
	char name[32];

	if (!fits_size(s)) {
		fl_error_set(b->err, "random graph: a leaf over %d elements",
			     FL_RANDOM_GRAPH_MAX_NUMEL);
		return -1;
	}
	snprintf(name, sizeof name, "%s%d", input ? "x" : "w", b->g->n_tensors);
	return remember(b, fl_graph_add_tensor(b->g, name, s, input ?
					       FL_ROLE_INPUT : FL_ROLE_PARAM,
					       b->err), 1.0);
}

/* Starts an op of `kind` reading in[0..n_in-1] into a fresh tensor; the
 * caller sets its attributes, then calls end_op.  Returns the op. */
static int begin_op(builder *b, fl_op_kind kind, const int *in, int n_in)
{
	char name[48];
	int out;

	snprintf(name, sizeof name, "t%d", b->g->n_tensors);
	out = fl_graph_add_tensor(b->g, name, NULL, FL_ROLE_TEMP, b->err);
	if (out < 0)
		return -1;
	snprintf(name, sizeof name, "%s_%d", fl_op_kind_name(kind),
		 b->g->n_ops);
	return fl_graph_add_op(b->g, name, kind, in, n_in, &out, 1, b->err);
}

/* Infers op's result (a generator's mistake is an error naming the op)
 * and puts it in the pool; returns its tensor. */
static int end_op(builder *b, int op, double bound)
{
	int t;

	if (op < 0)
		return -1;
	if (fl_graph_infer_op(b->g, op, b->err) < 0) {
		fl_error_prefix(b->err, "random graph: %s", b->g->ops[op].name);
		return -1;
	}
	t = b->g->ops[op].out[0];
	if (!fits_size(shape_of(b, t))) {
		fl_error_set(b->err, "random graph: %s: result over %d "
			     "elements",
			     b->g->ops[op].name, FL_RANDOM_GRAPH_MAX_NUMEL);
		return -1;
	}
	return remember(b, t, bound > 1e30 ? 1e30 : bound);
}

static int simple_op(builder *b, fl_op_kind kind, const int *in, int n_in,
		     double bound)
{
	return end_op(b, begin_op(b, kind, in, n_in), bound);
}

static int attr_oom(builder *b, int op)
{
	fl_error_set(b->err, "random graph: %s: out of memory",
		     b->g->ops[op].name);
	return -1;
}

static int set_ints(builder *b, int op, const char *key, const int64_t *v,
		    int n)
{
	if (op < 0)
		return -1;
	if (fl_attrs_set_ints(&b->g->ops[op].attrs, key, v, n) < 0)
		return attr_oom(b, op);
	return 0;
}

static int set_number(builder *b, int op, const char *key, double v)
{
	if (op < 0)
		return -1;
	if (fl_attrs_set_number(&b->g->ops[op].attrs, key, v) < 0)
		return attr_oom(b, op);
	return 0;
}

static int set_int(builder *b, int op, const char *key, int64_t v)
{
	return set_number(b, op, key, (double)v);
}

static int set_string(builder *b, int op, const char *key, const char *s)
{
	if (op < 0)
		return -1;
	if (fl_attrs_set_string(&b->g->ops[op].attrs, key, s) < 0)
		return attr_oom(b, op);
	return 0;
}

static int set_bool(builder *b, int op, const char *key, bool v)
{
	if (op < 0)
		return -1;
	if (fl_attrs_set_bool(&b->g->ops[op].attrs, key, v) < 0)
		return attr_oom(b, op);
	return 0;
}

/* |t| + 1: the operand of log, sqrt, rsqrt, recip, a divisor, a base of
 * pow, a variance, so that no evaluation order meets a NaN or a pole. */
static int positive(builder *b, int t)
{
	int in[2];

	if (b->one < 0) {
		b->one = fl_graph_add_scalar(b->g, "one", 1.0f, b->err);
		if (b->one < 0)
			return -1;
	}
	in[0] = simple_op(b, FL_OP_ABS, &t, 1, bound_of(b, t));
	in[1] = b->one;
	if (in[0] < 0)
		return -1;
	return simple_op(b, FL_OP_ADD, in, 2, bound_of(b, t) + 1);
}

/* t, or tanh(t) when t may be larger than `limit`. */
static int squash_above(builder *b, int t, double limit)
{
	if (t < 0 || bound_of(b, t) <= limit)
		return t;
	return simple_op(b, FL_OP_TANH, &t, 1, 1.0);
}

typedef bool (*fit_fn)(const builder *b, int t, const void *arg);

static bool fit_any(const builder *b, int t, const void *arg)
{
	(void)b, (void)t, (void)arg;
	return true;
}

static bool fit_rank_at_least(const builder *b, int t, const void *arg)
{
	return rank_of(b, t) >= *(const int *)arg;
}

static bool fit_rank(const builder *b, int t, const void *arg)
{
	return rank_of(b, t) == *(const int *)arg;
}

static bool fit_matmul(const builder *b, int t, const void *arg)
{
	(void)arg;
	return rank_of(b, t) == 2 || rank_of(b, t) == 3;
}

/* t broadcasts to shape arg without growing it (same shape included). */
static bool fit_broadcasts_to(const builder *b, int t, const void *arg)
{
	const fl_shape *s = arg;
	fl_shape out;

	return rank_of(b, t) <= s->rank &&
	       fl_shape_broadcast(shape_of(b, t), s, &out, NULL) == 0 &&
	       fl_shape_equal(&out, s);
}

/* The value of a pool entry that `fit` accepts, mostly a recent one (a
 * chain), sometimes any (a branch off an earlier producer); squashed when
 * large.  NONE when none fits. */
static int pick(builder *b, fit_fn fit, const void *arg)
{
	int *ok = malloc((size_t)(b->n_pool + 1) * sizeof *ok), n = 0, t;

	if (!ok) {
		fl_error_set(b->err, "out of memory");
		return -1;
	}
	for (int i = 0; i < b->n_pool; i++)
		if (fit(b, b->pool[i].t, arg))
			ok[n++] = b->pool[i].t;
	if (n == 0) {
		free(ok);
		return NONE;
	}
	if (chance(b, 60))
		t = ok[n - 1 - draw(b, n < 3 ? n : 3)];
	else
		t = ok[draw(b, n)];
	free(ok);
	return squash_above(b, t, TAME_BOUND);
}

/* Status of a generator from a tensor result: 0 made, -1 error. */
static int made(int t)
{
	return t < 0 ? -1 : 0;
}

static int gen_unary(builder *b)
{
	static const fl_op_kind plain[] = {
		FL_OP_NEG, FL_OP_ABS, FL_OP_EXP, FL_OP_TANH, FL_OP_SIGMOID,
		FL_OP_RELU, FL_OP_ERF, FL_OP_SQUARE, FL_OP_COPY, FL_OP_CAST,
	};
	static const fl_op_kind needs_positive[] = {
		FL_OP_LOG, FL_OP_SQRT, FL_OP_RSQRT, FL_OP_RECIP,
	};
	int x = pick(b, fit_any, NULL), op;
	fl_op_kind k;
	double bx;

	if (x < 0)
		return -1;
	if (chance(b, 25)) {
		k = needs_positive[draw(b, 4)];
		x = positive(b, x);
		if (x < 0)
			return -1;
		bx = bound_of(b, x);
		return made(simple_op(b, k, &x, 1,
				      k == FL_OP_LOG ? log(bx) + 1 :
				      k == FL_OP_SQRT ? sqrt(bx) : 1.0));
	}
	k = plain[draw(b, 10)];
	if (k == FL_OP_EXP)
		x = squash_above(b, x, 4.0);
	if (x < 0)
		return -1;
	bx = bound_of(b, x);
	op = begin_op(b, k, &x, 1);
	if (k == FL_OP_CAST && set_string(b, op, "dtype", "f32") < 0)
		return -1;
	return made(end_op(b, op, k == FL_OP_EXP ? exp(bx) :
			   k == FL_OP_SQUARE ? bx * bx :
			   k == FL_OP_SIGMOID ? 1.0 : bx));
}

/* A shape that broadcasts with s: leading dims dropped, some dims 1, and
 * dims where s has 1 sometimes stretched (the result then grows). */
static fl_shape broadcast_partner(builder *b, const fl_shape *s)
{
	int drop = chance(b, 30) ? (int)draw(b, s->rank + 1) : 0;
	fl_shape p = {.rank = s->rank - drop};

	for (int i = 0; i < p.rank; i++) {
		int64_t d = s->dim[i + drop];

		if (d == 1 && chance(b, 30))
			d = extent(b);
		else if (chance(b, 40))
			d = 1;
		p.dim[i] = d;
	}
	return p;
}

/* The second operand of a binary op on x (its shape xs): an earlier value
 * that broadcasts to it (x itself, a reduction of it), or a fresh leaf. */
static int binary_partner(builder *b, const fl_shape *xs)
{
	fl_shape p, out;
	int y;

	if (chance(b, 55)) {
		y = pick(b, fit_broadcasts_to, xs);
		if (y != NONE)
			return y;
	}
	p = broadcast_partner(b, xs);
	if (fl_shape_broadcast(xs, &p, &out, NULL) < 0 || !fits_size(&out))
		p = *xs;
	return new_leaf(b, &p);
}

/* where(c, x, y) with c a leaf: exact values, so that every evaluation
 * order takes the same branch. */
static int gen_where(builder *b, int x, int y)
{
	fl_shape cs = broadcast_partner(b, shape_of(b, x)), out;
	int in[3];

	if (fl_shape_broadcast(shape_of(b, x), &cs, &out, NULL) < 0 ||
	    !fl_shape_equal(&out, shape_of(b, x)))
		cs = *shape_of(b, x);
	in[0] = new_leaf(b, &cs);
	in[1] = x;
	in[2] = y;
	if (in[0] < 0)
		return -1;
	return made(simple_op(b, FL_OP_WHERE, in, 3,
			      fmax(bound_of(b, x), bound_of(b, y))));
}

static int gen_binary(builder *b)
{
	static const fl_op_kind kinds[] = {
		FL_OP_ADD, FL_OP_SUB, FL_OP_MUL, FL_OP_MAX, FL_OP_MIN,
		FL_OP_DIV, FL_OP_POW, FL_OP_WHERE,
	};
	fl_op_kind k = kinds[draw(b, 8)];
	int x = pick(b, fit_any, NULL), y, in[2];
	fl_shape xs;
	double bx, by;

	if (x < 0)
		return -1;
	xs = *shape_of(b, x);
	y = binary_partner(b, &xs);
	if (y < 0)
		return -1;
	if (k == FL_OP_WHERE)
		return gen_where(b, x, y);
	if (k == FL_OP_DIV)
		y = positive(b, y);
	if (k == FL_OP_POW) {
		x = positive(b, x);
		y = squash_above(b, y, 1.0);
	}
	if (x < 0 || y < 0)
		return -1;
	bx = bound_of(b, x);
	by = bound_of(b, y);
	in[0] = x;
	in[1] = y;
	if (k != FL_OP_DIV && k != FL_OP_POW && chance(b, 50)) {
		in[0] = y;
		in[1] = x;
	}
	return made(simple_op(b, k, in, 2,
			      k == FL_OP_ADD || k == FL_OP_SUB ? bx + by :
			      k == FL_OP_MUL ? bx * by :
			      k == FL_OP_POW ? pow(bx, by) : fmax(bx, by)));
}

static int gen_reduce(builder *b)
{
	static const fl_op_kind kinds[] = {
		FL_OP_REDUCE_SUM, FL_OP_REDUCE_MAX, FL_OP_REDUCE_MIN,
		FL_OP_REDUCE_MEAN, FL_OP_VARIANCE,
	};
	int one = 1, x = pick(b, fit_rank_at_least, &one), op, n = 0;
	fl_op_kind k = kinds[draw(b, 5)];
	int64_t axes[FL_MAX_RANK], reduced = 1;
	fl_shape s;	/* a copy: begin_op moves tensors */
	double bx;

	if (x == NONE)
		return DECLINED;
	if (x < 0)
		return -1;
	s = *shape_of(b, x);
	for (int i = 0; i < s.rank; i++)
		if (chance(b, 45))
			axes[n++] = i;
	if (n == 0)
		axes[n++] = draw(b, s.rank);
	for (int i = 0; i < n; i++) {
		reduced *= s.dim[axes[i]];
		if (chance(b, 30))
			axes[i] -= s.rank;	/* the same, from the end */
	}
	bx = bound_of(b, x);
	op = begin_op(b, k, &x, 1);
	if (chance(b, 10))
		reduced = fl_shape_numel(&s);	/* no "axes": all */
	else if (set_ints(b, op, "axes", axes, n) < 0)
		return -1;
	return made(end_op(b, op, k == FL_OP_REDUCE_SUM ? bx * reduced :
			   k == FL_OP_VARIANCE ? 4 * bx * bx : bx));
}

/* A weight for x [.., K] (batch dims bs[0..nb-1]) giving N columns:
 * [K, N], or [N, K] with transpose_b, with or without the batch dims. */
static int matmul_weight(builder *b, const fl_shape *xs, int64_t n,
			 bool transpose_b)
{
	int64_t k = xs->dim[xs->rank - 1];
	fl_shape w = {.rank = 2};

	if (xs->rank == 3 && chance(b, 50)) {
		w.rank = 3;
		w.dim[0] = xs->dim[0];
	}
	w.dim[w.rank - 2] = transpose_b ? n : k;
	w.dim[w.rank - 1] = transpose_b ? k : n;
	return new_leaf(b, &w);
}

/* An earlier value y of x's rank, batch and K: matmul(x, y^T). */
static bool fit_rows_of(const builder *b, int t, const void *arg)
{
	const fl_shape *xs = arg, *ys = shape_of(b, t);

	return ys->rank == xs->rank && ys->dim[ys->rank - 1] ==
	       xs->dim[xs->rank - 1] && (xs->rank == 2 ||
					 ys->dim[0] == xs->dim[0]);
}

static int gen_matmul(builder *b)
{
	int x = pick(b, fit_matmul, NULL), w, op, in[3], n_in = 2;
	bool transpose_b = chance(b, 30), dense;
	fl_shape xs, out;
	int64_t n = extent(b), k;

	if (x == NONE)
		return DECLINED;
	if (x < 0)
		return -1;
	xs = *shape_of(b, x);
	k = xs.dim[xs.rank - 1];
	dense = chance(b, 25);
	w = NONE;
	if (!dense && chance(b, 25)) {
		w = pick(b, fit_rows_of, &xs);
		if (w >= 0) {
			transpose_b = true;
			n = shape_of(b, w)->dim[xs.rank - 2];
		}
	}
	out = xs;
	out.dim[out.rank - 1] = n;
	if (!fits_size(&out) || (w == NONE && k * n * (xs.rank == 3 ?
						       xs.dim[0] : 1) >
				 FL_RANDOM_GRAPH_MAX_NUMEL))
		return DECLINED;	/* the result or the weight too large */
	if (w == NONE)
		w = matmul_weight(b, &xs, n, transpose_b);
	if (w < 0)
		return -1;
	in[0] = x;
	in[1] = w;
	if (dense) {
		fl_shape bs = {.rank = 1, .dim = {n}};

		in[n_in++] = new_leaf(b, &bs);
		if (in[2] < 0)
			return -1;
	}
	op = begin_op(b, dense ? FL_OP_DENSE : FL_OP_MATMUL, in, n_in);
	if (transpose_b && set_bool(b, op, "transpose_b", true) < 0)
		return -1;
	return made(end_op(b, op, bound_of(b, x) * bound_of(b, w) * k + 1));
}

/* pad(x) by p on both sides of the two spatial dims of NCHW x. */
static int pad_spatial(builder *b, int x, int64_t p)
{
	int64_t pads[8] = {0, 0, p, p, 0, 0, p, p};
	int op = begin_op(b, FL_OP_PAD, &x, 1);

	if (set_ints(b, op, "pads", pads, 8) < 0)
		return -1;
	return end_op(b, op, bound_of(b, x));
}

/* A filter size for a spatial extent h: 3 (or 1) and a dilation. */
static void window(builder *b, int64_t h, int64_t *r, int64_t *dil)
{
	*r = h >= 3 && chance(b, 70) ? 3 : 1;
	*dil = *r == 3 && h >= 5 && chance(b, 20) ? 2 : 1;
}

static int gen_conv(builder *b)
{
	int four = 4, x = pick(b, fit_rank, &four), op, in[2];
	int64_t r, s, dh, dw, stride = chance(b, 30) ? 2 : 1, groups = 1, k;
	fl_shape xs, ws, os;

	if (x == NONE)
		return DECLINED;
	if (x < 0)
		return -1;
	xs = *shape_of(b, x);
	xs.dim[2] += 2;
	xs.dim[3] += 2;
	if (chance(b, 40) && fits_size(&xs))
		x = pad_spatial(b, x, 1);	/* a "same" convolution */
	if (x < 0)
		return -1;
	xs = *shape_of(b, x);
	window(b, xs.dim[2], &r, &dh);
	window(b, xs.dim[3], &s, &dw);
	k = extent(b);
	if (xs.dim[1] > 1 && chance(b, 25)) {
		groups = xs.dim[1];	/* depthwise: 1 or 2 per channel */
		k = groups * (chance(b, 50) ? 1 : 2);
	}
	ws = (fl_shape){4, {k, xs.dim[1] / groups, r, s}};
	os = (fl_shape){4, {xs.dim[0], k, (xs.dim[2] - dh * (r - 1) - 1) /
			    stride + 1, (xs.dim[3] - dw * (s - 1) - 1) /
			    stride + 1}};
	if (!fits_size(&os) || !fits_size(&ws))
		return DECLINED;
	in[0] = x;
	in[1] = new_leaf(b, &ws);
	if (in[1] < 0)
		return -1;
	op = begin_op(b, FL_OP_CONV2D, in, 2);
	if ((stride > 1 && set_ints(b, op, "stride",
				    (int64_t[]){stride, stride}, 2) < 0) ||
	    ((dh > 1 || dw > 1) && set_ints(b, op, "dilation",
					    (int64_t[]){dh, dw}, 2) < 0) ||
	    (groups > 1 && set_int(b, op, "groups", groups) < 0))
		return -1;
	return made(end_op(b, op, bound_of(b, x) *
			   (double)(ws.dim[1] * r * s)));
}

static int gen_pool(builder *b)
{
	int four = 4, x = pick(b, fit_rank, &four), op;
	int64_t kernel[2], stride[2];
	bool avg = chance(b, 50), explicit_stride = chance(b, 40);

	if (x == NONE)
		return DECLINED;
	if (x < 0)
		return -1;
	for (int i = 0; i < 2; i++) {
		int64_t h = shape_of(b, x)->dim[2 + i];

		kernel[i] = h >= 3 && chance(b, 50) ? 3 : h >= 2 ? 2 : 1;
		stride[i] = 1 + draw(b, kernel[i]);
	}
	op = begin_op(b, FL_OP_POOL2D, &x, 1);
	if (set_ints(b, op, "kernel", kernel, 2) < 0 ||
	    (avg && set_string(b, op, "mode", "avg") < 0) ||
	    (explicit_stride && set_ints(b, op, "stride", stride, 2) < 0))
		return -1;
	return made(end_op(b, op, bound_of(b, x)));
}

static int gen_transpose(builder *b)
{
	int two = 2, x = pick(b, fit_rank_at_least, &two), op, rank;
	int64_t perm[FL_MAX_RANK];
	bool identity = true;

	if (x == NONE)
		return DECLINED;
	if (x < 0)
		return -1;
	rank = rank_of(b, x);
	for (int i = 0; i < rank; i++)
		perm[i] = i;
	for (int i = rank - 1; i > 0; i--) {
		int j = (int)draw(b, i + 1);
		int64_t tmp = perm[i];

		perm[i] = perm[j];
		perm[j] = tmp;
	}
	for (int i = 0; i < rank; i++)
		identity = identity && perm[i] == i;
	if (identity) {
		perm[rank - 2] = rank - 1;
		perm[rank - 1] = rank - 2;
	}
	op = begin_op(b, FL_OP_TRANSPOSE, &x, 1);
	if (set_ints(b, op, "perm", perm, rank) < 0)
		return -1;
	return made(end_op(b, op, bound_of(b, x)));
}

/* A new shape of s's elements: two neighbouring dims merged, a dim split
 * (a prime one into itself and 1), a unit dim inserted, or everything
 * flattened; sometimes with one extent written -1. */
static fl_shape reshaped(builder *b, const fl_shape *s)
{
	fl_shape r = *s;
	int i = (int)draw(b, s->rank), how = (int)draw(b, 4);

	if (how == 0 && s->rank >= 2) {
		i = (int)draw(b, s->rank - 1);
		r.dim[i] *= r.dim[i + 1];
		memmove(&r.dim[i + 1], &r.dim[i + 2],
			(size_t)(s->rank - i - 2) * sizeof r.dim[0]);
		r.rank--;
	} else if (how <= 1 && s->rank < 5) {
		int64_t d = s->dim[i], f = d;

		for (int64_t c = 2; c < d; c++)
			if (d % c == 0) {
				f = c;
				break;
			}
		memmove(&r.dim[i + 1], &r.dim[i],
			(size_t)(s->rank - i) * sizeof r.dim[0]);
		r.dim[i] = f;
		r.dim[i + 1] = d / f;
		r.rank++;
	} else if (how == 2 && s->rank < 5) {
		memmove(&r.dim[i + 1], &r.dim[i],
			(size_t)(s->rank - i) * sizeof r.dim[0]);
		r.dim[i] = 1;
		r.rank++;
	} else {
		r.rank = 1;
		r.dim[0] = fl_shape_numel(s);
	}
	return r;
}

static int gen_reshape(builder *b)
{
	int one = 1, x = pick(b, fit_rank_at_least, &one), op;
	int64_t dims[FL_MAX_RANK];
	fl_shape r;

	if (x == NONE)
		return DECLINED;
	if (x < 0)
		return -1;
	r = reshaped(b, shape_of(b, x));
	memcpy(dims, r.dim, sizeof dims);
	if (chance(b, 25))
		dims[draw(b, r.rank)] = -1;
	op = begin_op(b, FL_OP_RESHAPE, &x, 1);
	if (set_ints(b, op, "shape", dims, r.rank) < 0)
		return -1;
	return made(end_op(b, op, bound_of(b, x)));
}

typedef struct concat_fit {
	const fl_shape *s;
	int axis;
} concat_fit;

/* The largest extent a concat partner brings along its axis. */
#define CONCAT_PART_MAX 17

/* Same shape as arg's but for the concat axis. */
static bool fit_concat(const builder *b, int t, const void *arg)
{
	const concat_fit *c = arg;
	const fl_shape *ts = shape_of(b, t);

	if (ts->rank != c->s->rank)
		return false;
	for (int i = 0; i < ts->rank; i++)
		if (i != c->axis && ts->dim[i] != c->s->dim[i])
			return false;
	return ts->dim[c->axis] <= CONCAT_PART_MAX;
}

static int gen_concat(builder *b)
{
	int one = 1, x = pick(b, fit_rank_at_least, &one), op, in[3], n = 1;
	int64_t total;
	fl_shape xs;
	concat_fit cf;
	double bound;

	if (x == NONE)
		return DECLINED;
	if (x < 0)
		return -1;
	xs = *shape_of(b, x);
	cf = (concat_fit){&xs, (int)draw(b, xs.rank)};
	xs.dim[cf.axis] += 2 * CONCAT_PART_MAX;	/* the largest result */
	if (!fits_size(&xs))
		return DECLINED;
	xs = *shape_of(b, x);
	in[0] = x;
	bound = bound_of(b, x);
	total = xs.dim[cf.axis];
	for (int parts = 1 + (int)draw(b, 2); n <= parts; n++) {
		fl_shape ps = xs;

		in[n] = chance(b, 50) ? pick(b, fit_concat, &cf) : NONE;
		if (in[n] == NONE) {
			ps.dim[cf.axis] = extent(b);
			in[n] = new_leaf(b, &ps);
		}
		if (in[n] < 0)
			return -1;
		total += shape_of(b, in[n])->dim[cf.axis];
		bound = fmax(bound, bound_of(b, in[n]));
	}
	xs.dim[cf.axis] = total;
	op = begin_op(b, FL_OP_CONCAT, in, n);
	if (set_int(b, op, "axis",
		    chance(b, 30) ? cf.axis - xs.rank : cf.axis) < 0)
		return -1;
	return made(end_op(b, op, bound));
}

static int gen_slice(builder *b)
{
	int one = 1, x = pick(b, fit_rank_at_least, &one), op, rank;
	int64_t starts[FL_MAX_RANK], ends[FL_MAX_RANK], steps[FL_MAX_RANK];
	bool strided = false;

	if (x == NONE)
		return DECLINED;
	if (x < 0)
		return -1;
	rank = rank_of(b, x);
	for (int i = 0; i < rank; i++) {
		int64_t d = shape_of(b, x)->dim[i];

		starts[i] = draw(b, d);
		ends[i] = starts[i] + 1 + draw(b, d - starts[i]);
		steps[i] = d - starts[i] >= 3 && chance(b, 25) ? 2 : 1;
		strided = strided || steps[i] > 1;
		if (chance(b, 20))
			starts[i] -= d;	/* counted from the end */
		if (ends[i] == d && chance(b, 30))
			ends[i] = d + 5;	/* clamps to the extent */
	}
	op = begin_op(b, FL_OP_SLICE, &x, 1);
	if (set_ints(b, op, "starts", starts, rank) < 0 ||
	    set_ints(b, op, "ends", ends, rank) < 0 ||
	    (strided && set_ints(b, op, "steps", steps, rank) < 0))
		return -1;
	return made(end_op(b, op, bound_of(b, x)));
}

static int gen_pad(builder *b)
{
	static const double values[] = {0.0, 0.5, -1.0};
	int one = 1, x = pick(b, fit_rank_at_least, &one), op, rank;
	int64_t pads[2 * FL_MAX_RANK];
	fl_shape s;
	double v = values[draw(b, 3)];

	if (x == NONE)
		return DECLINED;
	if (x < 0)
		return -1;
	s = *shape_of(b, x);
	rank = s.rank;
	for (int i = 0; i < 2 * rank; i++) {
		pads[i] = chance(b, 55) ? 0 : 1 + draw(b, 2);
		s.dim[i % rank] += pads[i];
	}
	if (!fits_size(&s))
		return DECLINED;
	op = begin_op(b, FL_OP_PAD, &x, 1);
	if (set_ints(b, op, "pads", pads, 2 * rank) < 0 ||
	    (v != 0.0 && set_number(b, op, "value", v) < 0))
		return -1;
	return made(end_op(b, op, fmax(bound_of(b, x), fabs(v))));
}

static int gen_broadcast_to(builder *b)
{
	int x = pick(b, fit_any, NULL), op;
	int64_t dims[FL_MAX_RANK];
	fl_shape s;

	if (x < 0)
		return x == NONE ? DECLINED : -1;
	s = *shape_of(b, x);
	if (s.rank < 4 && chance(b, 50)) {
		memmove(&s.dim[1], &s.dim[0], (size_t)s.rank * sizeof s.dim[0]);
		s.dim[0] = extent(b);
		s.rank++;
	}
	for (int i = 0; i < s.rank; i++)
		if (s.dim[i] == 1)
			s.dim[i] = extent(b);
	if (!fits_size(&s))
		return DECLINED;
	memcpy(dims, s.dim, sizeof dims);
	op = begin_op(b, FL_OP_BROADCAST_TO, &x, 1);
	if (set_ints(b, op, "shape", dims, s.rank) < 0)
		return -1;
	return made(end_op(b, op, bound_of(b, x)));
}

/* A const index list of n entries into an extent d: whole numbers in
 * range, now and then one outside it (gather clamps it). */
static int gather_indices(builder *b, int64_t n, int64_t d)
{
	fl_shape s = {.rank = 1, .dim = {n}};
	char name[32];
	int t;
	float *data;

	snprintf(name, sizeof name, "c%d", b->g->n_tensors);
	t = fl_graph_add_tensor(b->g, name, &s, FL_ROLE_CONST, b->err);
	if (t < 0)
		return -1;
	data = malloc((size_t)n * sizeof *data);
	if (!data) {
		fl_error_set(b->err, "out of memory");
		return -1;
	}
	for (int64_t i = 0; i < n; i++)
		data[i] = chance(b, 10) ? (float)(d + 1) : (float)draw(b, d);
	b->g->tensors[t].data = data;
	b->g->tensors[t].n_data = n;
	return t;
}

static int gen_gather(builder *b)
{
	int one = 1, x = pick(b, fit_rank_at_least, &one), op, in[2], axis;
	int64_t n = 1 + draw(b, 5);
	fl_shape s;

	if (x == NONE)
		return DECLINED;
	if (x < 0)
		return -1;
	s = *shape_of(b, x);
	axis = (int)draw(b, s.rank);
	s.dim[axis] = n;	/* the result's shape */
	if (!fits_size(&s))
		return DECLINED;
	s = *shape_of(b, x);
	in[0] = x;
	in[1] = gather_indices(b, n, s.dim[axis]);
	if (in[1] < 0)
		return -1;
	op = begin_op(b, FL_OP_GATHER, in, 2);
	if (set_int(b, op, "axis", axis) < 0)
		return -1;
	return made(end_op(b, op, bound_of(b, x)));
}

/* The trailing dims of s from axis on, as a weight's shape. */
static fl_shape tail_shape(const fl_shape *s, int axis)
{
	fl_shape t = {.rank = s->rank - axis};

	memcpy(t.dim, &s->dim[axis], (size_t)t.rank * sizeof t.dim[0]);
	return t;
}

/* layernorm(x[, gamma, beta]) over a random axis and what follows it. */
static int gen_layernorm(builder *b, int x)
{
	fl_shape s = *shape_of(b, x);	/* a copy: leaves move tensors */
	int axis = (int)draw(b, s.rank), in[3] = {x}, n = 1, op;
	fl_shape ts = tail_shape(&s, axis);

	if (chance(b, 50)) {
		in[n++] = new_leaf(b, &ts);
		in[n++] = new_leaf(b, &ts);
		if (in[1] < 0 || in[2] < 0)
			return -1;
	}
	op = begin_op(b, FL_OP_LAYERNORM, in, n);
	if (set_int(b, op, "axis", axis - s.rank) < 0)
		return -1;
	return made(end_op(b, op, sqrt((double)fl_shape_numel(&ts)) + 2));
}

/* batchnorm(x, mean, var, gamma, beta) on NCHW x, parameters [C,1,1]. */
static int gen_batchnorm(builder *b, int x)
{
	fl_shape ps = {3, {shape_of(b, x)->dim[1], 1, 1}};
	int in[5] = {x};

	for (int i = 1; i < 5; i++)
		in[i] = new_leaf(b, &ps);
	in[2] = positive(b, in[2]);	/* the variance */
	for (int i = 1; i < 5; i++)
		if (in[i] < 0)
			return -1;
	return made(simple_op(b, FL_OP_BATCHNORM, in, 5, bound_of(b, x) + 3));
}

/* attention(q, k, v) on q [B,S,D]: self-attention (q, q, q) or with
 * fresh keys [B,T,D] and values [B,T,E]. */
static int gen_attention(builder *b, int x)
{
	fl_shape s = *shape_of(b, x);	/* a copy: leaves move tensors */
	bool self = chance(b, 40);
	int64_t t = self ? s.dim[1] : extent(b);
	int64_t e = self ? s.dim[2] : extent(b);
	fl_shape ks = {3, {s.dim[0], t, s.dim[2]}};
	fl_shape vs = {3, {s.dim[0], t, e}};
	fl_shape scores = {3, {s.dim[0], s.dim[1], t}};
	fl_shape out = {3, {s.dim[0], s.dim[1], e}};
	int in[3] = {x, x, x};

	if (!fits_size(&ks) || !fits_size(&vs) || !fits_size(&scores) ||
	    !fits_size(&out))
		return DECLINED;
	if (!self) {
		in[1] = new_leaf(b, &ks);
		in[2] = new_leaf(b, &vs);
		if (in[1] < 0 || in[2] < 0)
			return -1;
	}
	return made(simple_op(b, FL_OP_ATTENTION, in, 3, bound_of(b, in[2])));
}

/* Compound ops of one input whose only attribute is optional. */
static int gen_activation(builder *b, int x)
{
	static const fl_op_kind kinds[] = {
		FL_OP_GELU, FL_OP_SILU, FL_OP_LEAKY_RELU, FL_OP_HARD_SIGMOID,
		FL_OP_HARD_SWISH, FL_OP_ELU,
	};
	fl_op_kind k = kinds[draw(b, 6)];
	int op;

	x = squash_above(b, x, 16.0);	/* elu's and gelu's exp */
	op = begin_op(b, k, &x, 1);
	if (k == FL_OP_GELU && chance(b, 50) &&
	    set_string(b, op, "approximate", "tanh") < 0)
		return -1;
	if (k == FL_OP_LEAKY_RELU && set_number(b, op, "alpha", 0.1) < 0)
		return -1;
	return made(end_op(b, op, bound_of(b, x) + 1));
}

static int gen_compound(builder *b)
{
	int one = 1, x = pick(b, fit_rank_at_least, &one), op, in[2];
	int what = (int)draw(b, 8), rank;
	fl_shape bs;

	if (x == NONE)
		return DECLINED;
	if (x < 0)
		return -1;
	rank = rank_of(b, x);
	switch (what) {
	case 0:
	case 1:
		op = begin_op(b, what ? FL_OP_LOG_SOFTMAX : FL_OP_SOFTMAX,
			      &x, 1);
		if (set_int(b, op, "axis", draw(b, rank)) < 0)
			return -1;
		return made(end_op(b, op, what ? 2 * bound_of(b, x) + 10 : 1));
	case 2:
		return gen_layernorm(b, x);
	case 3:
		if (rank != 4)
			return gen_activation(b, x);
		return gen_batchnorm(b, x);
	case 4:
		if (rank != 3)
			return gen_activation(b, x);
		return gen_attention(b, x);
	case 5:
		bs = tail_shape(shape_of(b, x), rank - 1);
		in[0] = x;
		in[1] = new_leaf(b, &bs);
		if (in[1] < 0)
			return -1;
		if (chance(b, 50))
			return made(simple_op(b, FL_OP_RMSNORM, in, 2, 32));
		return made(simple_op(b, FL_OP_BIAS_ADD, in, 2,
				      bound_of(b, x) + 1));
	default:
		return gen_activation(b, x);
	}
}

typedef struct generator {
	int (*gen)(builder *b);
	int weight;
} generator;

static const generator generators[] = {
	{gen_unary, 14},	{gen_binary, 20},	{gen_reduce, 10},
	{gen_matmul, 8},	{gen_conv, 6},		{gen_pool, 4},
	{gen_transpose, 5},	{gen_reshape, 5},	{gen_concat, 5},
	{gen_slice, 5},		{gen_pad, 4},	{gen_compound, 12},
	{gen_broadcast_to, 2},	{gen_gather, 2},
};
#define N_GENERATORS ((int)(sizeof generators / sizeof generators[0]))

/* Runs one generator drawn by weight; 0, DECLINED or -1. */
static int grow(builder *b)
{
	int total = 0, r;

	for (int i = 0; i < N_GENERATORS; i++)
		total += generators[i].weight;
	r = (int)draw(b, total);
	for (int i = 0; i < N_GENERATORS; i++) {
		if (r < generators[i].weight)
			return generators[i].gen(b);
		r -= generators[i].weight;
	}
	return DECLINED;
}

/* The first input: an image (NCHW) half of the time, for the
 * convolutions and pools, else a matrix or a batch of them. */
static int first_input(builder *b)
{
	static const int64_t sides[] = {5, 7, 8, 13, 16, 17};
	fl_shape s;
	char name[32];

	if (chance(b, 50)) {
		s = (fl_shape){4, {1 + draw(b, 2), 1 + draw(b, 4),
				   sides[draw(b, 6)], sides[draw(b, 6)]}};
		while (!fits_size(&s))
			s.dim[2] = s.dim[3] = 5;
	} else {
		s = random_shape(b, 2 + (int)draw(b, 2));
	}
	snprintf(name, sizeof name, "x%d", b->g->n_tensors);
	return remember(b, fl_graph_add_tensor(b->g, name, &s, FL_ROLE_INPUT,
					       b->err), 1.0);
}

/* Every op result no op reads is an output; now and then one that is
 * read is an output too. */
static void mark_outputs(builder *b)
{
	fl_graph *g = b->g;
	int n_read = 0;

	for (int i = 0; i < g->n_ops; i++) {
		fl_tensor *t = &g->tensors[g->ops[i].out[0]];

		if (fl_graph_count_uses(g, g->ops[i].out[0]) == 0)
			t->role = FL_ROLE_OUTPUT;
		else
			n_read++;
	}
	if (n_read && chance(b, 30)) {
		int k = (int)draw(b, n_read);

		for (int i = 0; i < g->n_ops; i++) {
			int t = g->ops[i].out[0];

			if (g->tensors[t].role == FL_ROLE_TEMP && k-- == 0)
				g->tensors[t].role = FL_ROLE_OUTPUT;
		}
	}
}

static int build(builder *b, const fl_random_graph_opts *o)
{
	char doc[96];

	snprintf(doc, sizeof doc, "random graph: fuselab gen --ops %d --seed "
		 "%llu", o->n_ops, (unsigned long long)o->seed);
	b->g->doc = strdup(doc);
	if (!b->g->doc) {
		fl_error_set(b->err, "out of memory");
		return -1;
	}
	if (first_input(b) < 0)
		return -1;
	while (b->g->n_ops < o->n_ops)
		if (grow(b) < 0)
			return -1;
	mark_outputs(b);
	if (fl_graph_validate(b->g, b->err) < 0) {
		fl_error_prefix(b->err, "random graph %llu",
				(unsigned long long)o->seed);
		return -1;
	}
	return 0;
}

fl_graph *fl_random_graph(const fl_random_graph_opts *o, fl_error *err)
{
	char name[48];
	builder b = {.one = -1, .err = err};

	if (o->n_ops < 1 || o->n_ops > FL_RANDOM_GRAPH_MAX_OPS) {
		fl_error_set(err, "random graph: %d ops: expected 1 to %d",
			     o->n_ops, FL_RANDOM_GRAPH_MAX_OPS);
		return NULL;
	}
	snprintf(name, sizeof name, "random-%llu", (unsigned long long)o->seed);
	b.g = fl_graph_new(name);
	b.rng = fl_rng_seed(o->seed, "random-graph");
	if (!b.g) {
		fl_error_set(err, "out of memory");
		return NULL;
	}
	if (build(&b, o) < 0) {
		fl_graph_free(b.g);
		b.g = NULL;
	}
	free(b.pool);
	return b.g;
}
