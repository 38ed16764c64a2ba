/* Synthetic DNN-like graphs for the benchmarks (see synth.h). */
#include "synth.h"

#include <stdio.h>
#include <stdlib.h>

#include "rng.h"

#define ROWS 64
#define COLS 64

typedef struct builder {
	fl_graph *g;
	fl_rng rng;
	int *full;	/* tensors of shape [ROWS, COLS] so far */
	int n_full;
	int bias, weight;
} builder;

static int pick(builder *b)
{
	if (fl_rng_below(&b->rng, 10) < 7)
		return b->full[b->n_full - 1];
	return b->full[b->n_full - 1 - fl_rng_below(&b->rng, b->n_full < 32 ? b->n_full : 32)];
}

static int add_op(builder *b, fl_op_kind kind, int a, int c, int n_in,
		  const int64_t *axes, int n_axes, bool transpose)
{
	char name[32];
	int in[2] = {a, c}, out, i;
	fl_error err;

	snprintf(name, sizeof name, "t%d", b->g->n_tensors);
	out = fl_graph_add_tensor(b->g, name, NULL, FL_ROLE_TEMP, &err);
	snprintf(name, sizeof name, "op%d", b->g->n_ops);
	i = fl_graph_add_op(b->g, name, kind, in, n_in, &out, 1, &err);
	if (out < 0 || i < 0)
		return -1;
	if (n_axes)
		fl_attrs_set_ints(&b->g->ops[i].attrs, "axes", axes, n_axes);
	if (transpose) {
		int64_t perm[2] = {1, 0};

		fl_attrs_set_ints(&b->g->ops[i].attrs, "perm", perm, 2);
	}
	return out;
}

/* One random op reading earlier tensors; keeps the [ROWS, COLS] pool. */
static int grow(builder *b)
{
	static const fl_op_kind unary[] = {FL_OP_EXP, FL_OP_TANH, FL_OP_RELU,
					   FL_OP_NEG, FL_OP_SIGMOID};
	static const fl_op_kind binary[] = {FL_OP_ADD, FL_OP_MUL, FL_OP_SUB,
					    FL_OP_MAX};
	int64_t axis = 1;
	int r = (int)fl_rng_below(&b->rng, 100), x = pick(b), t;

	if (r < 40)
		t = add_op(b, unary[fl_rng_below(&b->rng, 5)], x, 0, 1, NULL, 0, false);
	else if (r < 70)
		t = add_op(b, binary[fl_rng_below(&b->rng, 4)], x, pick(b), 2, NULL, 0,
			   false);
	else if (r < 82)
		t = add_op(b, FL_OP_ADD, x, b->bias, 2, NULL, 0, false);
	else if (r < 90) {
		/* row reduction, then broadcast back: softmax-like */
		int s = add_op(b, FL_OP_REDUCE_SUM, x, 0, 1, &axis, 1, false);

		t = s < 0 ? -1 : add_op(b, FL_OP_DIV, x, s, 2, NULL, 0, false);
	} else if (r < 96)
		t = add_op(b, FL_OP_MATMUL, x, b->weight, 2, NULL, 0, false);
	else
		t = add_op(b, FL_OP_TRANSPOSE, x, 0, 1, NULL, 0, true);
	if (t < 0)
		return -1;
	b->full[b->n_full++] = t;
	return 0;
}

fl_graph *fl_synth_graph(int n_ops, uint64_t seed)
{
	int64_t d2[2] = {ROWS, COLS}, d1[1] = {COLS}, dw[2] = {COLS, COLS};
	fl_shape s2 = fl_shape_make(2, d2), s1 = fl_shape_make(1, d1);
	fl_shape sw = fl_shape_make(2, dw);
	builder b = {fl_graph_new("synthetic"), fl_rng_seed(seed, "bench"),
		     malloc(((size_t)n_ops + 8) * sizeof(int)), 0, 0, 0};
	fl_error err;

	if (!b.g || !b.full)
		return NULL;
	b.full[b.n_full++] = fl_graph_add_tensor(b.g, "x", &s2, FL_ROLE_INPUT, &err);
	b.bias = fl_graph_add_tensor(b.g, "bias", &s1, FL_ROLE_PARAM, &err);
	b.weight = fl_graph_add_tensor(b.g, "w", &sw, FL_ROLE_PARAM, &err);
	while (b.g->n_ops < n_ops)
		if (grow(&b) < 0)
			break;
	b.g->tensors[b.full[b.n_full - 1]].role = FL_ROLE_OUTPUT;
	free(b.full);
	if (fl_graph_validate(b.g, &err) < 0) {
		fprintf(stderr, "bench: synthetic graph invalid: %s\n", err.msg);
		fl_graph_free(b.g);
		return NULL;
	}
	return b.g;
}
