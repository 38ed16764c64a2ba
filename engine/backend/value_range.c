/* Value ranges: an interval [lo, hi] that every non-NaN value of a graph
 * tensor lies in, for the code generator to leave out the range selects
 * of a maths function whose argument cannot reach them.
 *
 * Needs: a validated graph (ops in topological order, shapes inferred,
 * constants' data loaded).  Gives: one fl_value_range per tensor.
 * Changes nothing.
 *
 * Why: in a fused elementwise kernel the maths functions are most of the
 * vector instructions, and fl_expf spends about a quarter of its own on
 * the clamps and selects that give 0 below ln FLT_MIN and inf above
 * ln FLT_MAX.  chain8's exp takes 1.5 tanh(..), within [-1.5, 1.5];
 * softmax's takes x - max(x), never above 0.  Knowing that, the printer
 * calls fl_expf_in_range or fl_expf_nonpos (engine/backend/runtime/
 * math_rt.c), which compute the same bits without those selects.
 *
 * The intervals are plain interval arithmetic, forward over the ops, with
 * one relational rule interval arithmetic cannot see: x - reduce_max(x)
 * with the max kept over the reduced axes (keepdims) is at most 0, because
 * every element is at most the maximum of the block it belongs to (where
 * x holds +inf the difference is NaN, which the ranges leave out: every
 * exp variant passes NaN through).  Anything the rules do not cover --
 * inputs, parameters, opaque ops -- is the whole line, so the analysis
 * can only leave selects in, never take a needed one out. */
#include <math.h>
#include <stdlib.h>

#include "value_range.h"

static const fl_value_range whole_line = {-INFINITY, INFINITY};

/* Constants with more values than this (an imported model's weights)
 * are not read: the printer asks per kernel and per statement, and what
 * it looks for -- a scale, a shift, a cap -- is a handful of values. */
#define SCAN_MAX 4096

static fl_value_range of(float lo, float hi)
{
	/* a NaN bound (inf - inf, 0 * inf) means nothing is known */
	if (isnan(lo) || isnan(hi))
		return whole_line;
	return (fl_value_range){lo, hi};
}

/* The values a constant holds (one value splatted, or all of them). */
static fl_value_range const_range(const fl_tensor *t)
{
	float lo = INFINITY, hi = -INFINITY;

	if (!t->data || t->n_data < 1 || t->n_data > SCAN_MAX)
		return whole_line;
	for (int64_t i = 0; i < t->n_data; i++) {
		if (isnan(t->data[i]))
			continue;
		lo = fminf(lo, t->data[i]);
		hi = fmaxf(hi, t->data[i]);
	}
	return lo <= hi ? of(lo, hi) : whole_line;
}

static fl_value_range mul_range(fl_value_range a, fl_value_range b)
{
	float p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
	float lo = p[0], hi = p[0];

	for (int i = 0; i < 4; i++) {
		if (isnan(p[i]))
			return whole_line;
		lo = fminf(lo, p[i]);
		hi = fmaxf(hi, p[i]);
	}
	return of(lo, hi);
}

/* x - m where m = reduce_max(x) kept over its axes: at most 0. */
static bool minus_own_max(const fl_graph *g, const fl_op *op)
{
	const fl_tensor *x = &g->tensors[op->in[0]];
	const fl_tensor *m = &g->tensors[op->in[1]];
	const fl_tensor *out = &g->tensors[op->out[0]];
	const fl_op *red;

	if (m->producer < 0)
		return false;
	red = &g->ops[m->producer];
	if (red->kind != FL_OP_REDUCE_MAX || red->in[0] != op->in[0])
		return false;
	/* keepdims (same rank) and x not broadcast: m's element at each
	 * position is the maximum of a block holding x's element there */
	if (m->shape.rank != x->shape.rank || out->shape.rank != x->shape.rank)
		return false;
	for (int d = 0; d < x->shape.rank; d++)
		if (out->shape.dim[d] != x->shape.dim[d] ||
		    (m->shape.dim[d] != 1 &&
		     m->shape.dim[d] != x->shape.dim[d]))
			return false;
	return true;
}

/* The range of op's (single) output from its inputs' ranges. */
static fl_value_range op_range(const fl_graph *g, const fl_op *op,
			       const fl_value_range *r)
{
	fl_value_range a = op->n_in > 0 ? r[op->in[0]] : whole_line;
	fl_value_range b = op->n_in > 1 ? r[op->in[1]] : whole_line;

	switch (op->kind) {
	case FL_OP_COPY:
	case FL_OP_CAST:
	case FL_OP_TRANSPOSE:
	case FL_OP_RESHAPE:
		return a;
	case FL_OP_NEG:
		return of(-a.hi, -a.lo);
	case FL_OP_TANH:
		return of(tanhf(a.lo), tanhf(a.hi));
	case FL_OP_SIGMOID:
		return of(0.0f, 1.0f);
	case FL_OP_SIN:
	case FL_OP_COS:
	case FL_OP_SIGN:
		return of(-1.0f, 1.0f);
	case FL_OP_ATAN:
		return of(-1.5707964f, 1.5707964f);
	case FL_OP_FLOOR:
		return of(floorf(a.lo), floorf(a.hi));
	case FL_OP_CEIL:
		return of(ceilf(a.lo), ceilf(a.hi));
	case FL_OP_EXP:
		return of(expf(a.lo), expf(a.hi));
	case FL_OP_RELU:
		return of(fmaxf(a.lo, 0.0f), fmaxf(a.hi, 0.0f));
	case FL_OP_ADD:
		return of(a.lo + b.lo, a.hi + b.hi);
	case FL_OP_SUB:
		if (minus_own_max(g, op))
			return of(-INFINITY, 0.0f);
		return of(a.lo - b.hi, a.hi - b.lo);
	case FL_OP_MUL:
		return mul_range(a, b);
	case FL_OP_MAX:
	case FL_OP_MIN:
		/* a NaN operand yields the other one: either input's value */
		return of(fminf(a.lo, b.lo), fmaxf(a.hi, b.hi));
	default:
		return whole_line;
	}
}

fl_value_range *fl_value_ranges(const fl_graph *g)
{
	fl_value_range *r = malloc(sizeof *r * (size_t)(g->n_tensors + 1));

	if (!r)
		return NULL;
	for (int t = 0; t < g->n_tensors; t++)
		r[t] = g->tensors[t].role == FL_ROLE_CONST ?
		       const_range(&g->tensors[t]) : whole_line;
	for (int i = 0; i < g->n_ops; i++) {
		const fl_op *op = &g->ops[i];

		if (op->n_out == 1)
			r[op->out[0]] = op_range(g, op, r);
	}
	return r;
}

bool fl_value_never_nan(const fl_graph *g, int t)
{
	const fl_tensor *x = &g->tensors[t];

	if (x->role != FL_ROLE_CONST || !x->data || x->n_data < 1 ||
	    x->n_data > SCAN_MAX)
		return false;
	for (int64_t i = 0; i < x->n_data; i++)
		if (isnan(x->data[i]))
			return false;
	return true;
}

bool fl_value_range_within(fl_value_range r, float lo, float hi)
{
	return r.lo >= lo && r.hi <= hi;
}
