/* ONNX import of the two loss operators, NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss, built at import from fuselab's primitives
 * and compound ops, so that a loss fuses with what computes its input
 * and runs under every strategy and backend.
 *
 * Contract: as onnx_ops.c's mappings (onnx_import_impl.h).  Input 0 is
 * float [N, C] or [N, C, d1..dk]; input 1, the target, an int32 or
 * int64 tensor [N] or [N, d1..dk] that may be computed at run time
 * (data, not an import-time constant); input 2, the optional weight,
 * float [C].  Attributes: ignore_index (any int64: negative or outside
 * [0, C) too; absent, nothing is ignored) and reduction none | sum |
 * mean (the default).  Output 0 is the loss, [N, d1..dk] for none, a
 * scalar otherwise; SoftmaxCrossEntropyLoss's optional output 1 is the
 * log-probability log_softmax(input, axis 1).  A wrong shape, a target
 * that is not integral or an unknown reduction is an error naming the
 * input or attribute.
 *
 * Why no gather: the target picks one class per element, which
 * `gather_elements` along axis 1 could read (as ONNX's expanded form
 * does), but that op is opaque to fusion (a kernel of its own, never
 * merged) and clamps an out-of-range index where ignore_index may lie
 * outside [0, C).  A mask instead is elementwise and reductions only, so
 * the loss fuses with the log_softmax or whatever computes its input,
 * and an ignore_index outside the classes simply matches nothing:
 *
 *   hit[n, c, d]  = (target[n, 1, d] == c) && target[n, 1, d] != ii
 *                   (equal against an int64 iota [1, C, 1..] made at
 *                   import; the && only when ignore_index is given)
 *   w[n, 1, d]    = sum_c where(hit, weight[c], 0)   (sum_c hit
 *                   without a weight)
 *   loss[n, 1, d] = -sum_c where(hit, input, 0) * w   (without a
 *                   weight: -sum_c where(hit, input, 0))
 *   none: loss reshaped to [N, d..]; sum: sum(loss); mean:
 *   sum(loss) / sum(w), the weights of the non-ignored elements.
 *
 * `where` rather than a product by the mask keeps a -inf or NaN of a
 * class not picked out of the loss, as ONNX's reference does.  A target
 * outside [0, C) that is not ignored picks nothing: its loss and weight
 * are 0 (ONNX leaves it undefined; its reference clips the weight's
 * index).  For mean without a weight, ONNX's reference divides by every
 * element when ignore_index is -1 but by the non-ignored ones
 * otherwise; this follows the operator's specification, the
 * non-ignored ones, always (no backend test has that case). */
#include "onnx_import_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TMP (-1)	/* emit into a new intermediate */

typedef enum loss_reduction {
	LOSS_NONE, LOSS_SUM, LOSS_MEAN
} loss_reduction;

static const fl_shape *shape_of(const fl_onnx_ctx *c, int t)
{
	return &c->g->tensors[t].shape;
}

/* An int64 const tensor of shape s holding v[0..numel(s)-1] (copied),
 * named after the node and `what`; -1 on error. */
static int int64_const(fl_onnx_ctx *c, const char *what, const fl_shape *s,
		       const int64_t *v, fl_error *err)
{
	int64_t n = fl_shape_numel(s);
	char base[300], name[300];
	fl_tensor *t;
	int k;

	snprintf(base, sizeof base, "%s.%s", c->origin, what);
	fl_onnx_unique_name(c, name, sizeof name, base, true);
	k = fl_graph_add_tensor(c->g, name, s, FL_ROLE_CONST, err);
	if (k < 0)
		return -1;
	t = &c->g->tensors[k];
	t->dtype = FL_I64;
	t->n_data = n;
	t->ints = malloc((size_t)(n > 0 ? n : 1) * sizeof *t->ints);
	if (!t->ints)
		return fl_onnx_oom(err);
	memcpy(t->ints, v, (size_t)n * sizeof *v);
	return k;
}

/* The class numbers 0..C-1 as an int64 const [1, C, 1, ..] of the
 * input's rank, to compare with the target. */
static int class_iota(fl_onnx_ctx *c, int rank, int64_t n_class,
		      fl_error *err)
{
	fl_shape s = {.rank = rank};
	int64_t *v = malloc((size_t)(n_class > 0 ? n_class : 1) * sizeof *v);
	int k;

	if (!v)
		return fl_onnx_oom(err);
	for (int d = 0; d < rank; d++)
		s.dim[d] = d == 1 ? n_class : 1;
	for (int64_t i = 0; i < n_class; i++)
		v[i] = i;
	k = int64_const(c, "classes", &s, v, err);
	free(v);
	return k;
}

/* The reduction attribute; -1 with err set for an unknown one. */
static int read_reduction(fl_onnx_ctx *c, fl_error *err)
{
	char buf[16];
	const char *r = fl_onnx_attr_string(c, "reduction", "mean", buf,
					    sizeof buf);

	if (!strcmp(r, "none"))
		return LOSS_NONE;
	if (!strcmp(r, "sum"))
		return LOSS_SUM;
	if (!strcmp(r, "mean"))
		return LOSS_MEAN;
	fl_error_set(err, "attribute reduction: \"%s\" (none, sum or mean)",
		     r);
	return -1;
}

/* Checks the target's type and shape against the input's [N, C, d..]
 * and returns it as int64 [N, 1, d..], ready to compare with the class
 * iota; -1 on error. */
static int target_as_column(fl_onnx_ctx *c, const fl_shape *xs,
			    fl_error *err)
{
	int t = fl_onnx_data_any(c, 1, err);
	fl_shape ts, col;
	fl_dtype dt;

	if (t < 0)
		return -1;
	ts = *shape_of(c, t);
	dt = c->g->tensors[t].dtype;
	if (dt != FL_I64 && dt != FL_I32) {
		fl_error_set(err, "input 1: the target must be int32 or int64, "
			     "not %s", fl_dtype_name(dt));
		return -1;
	}
	if (ts.rank != xs->rank - 1 || ts.dim[0] != xs->dim[0]) {
		fl_error_set(err, "input 1: the target must have shape [N, "
			     "d1..dk] for an input [N, C, d1..dk]");
		return -1;
	}
	col.rank = xs->rank;
	col.dim[0] = xs->dim[0];
	col.dim[1] = 1;
	for (int d = 1; d < ts.rank; d++) {
		if (ts.dim[d] != xs->dim[d + 1]) {
			fl_error_set(err, "input 1: target dim %d is %lld, the "
				     "input's dim %d %lld", d,
				     (long long)ts.dim[d], d + 1,
				     (long long)xs->dim[d + 1]);
			return -1;
		}
		col.dim[d + 1] = ts.dim[d];
	}
	if (dt == FL_I32) {
		fl_attrs a = {0};

		if (fl_attrs_set_string(&a, "dtype", "i64") < 0) {
			fl_attrs_free(&a);
			return fl_onnx_oom(err);
		}
		if ((t = fl_onnx_emit_attrs(c, FL_OP_CAST, &t, 1, &a, TMP,
					    err)) < 0)
			return -1;
	}
	return fl_onnx_reshape(c, t, &col, TMP, err);
}

/* The bool mask hit [N, C, d..]: the target's class, unless the target
 * is ignore_index (when the node has one). */
static int class_mask(fl_onnx_ctx *c, int col, int rank, int64_t n_class,
		      fl_error *err)
{
	const fl_shape scalar = fl_shape_scalar();
	int hit, iota, ii, keep;
	int64_t ignore;

	if ((iota = class_iota(c, rank, n_class, err)) < 0 ||
	    (hit = fl_onnx_emit2(c, FL_OP_EQUAL, col, iota, TMP, err)) < 0)
		return -1;
	if (!fl_onnx_attr(c, "ignore_index"))
		return hit;
	ignore = fl_onnx_attr_int(c, "ignore_index", 0);
	if ((ii = int64_const(c, "ignore_index", &scalar, &ignore, err)) < 0 ||
	    (keep = fl_onnx_emit2(c, FL_OP_EQUAL, col, ii, TMP, err)) < 0 ||
	    (keep = fl_onnx_emit1(c, FL_OP_NOT, keep, TMP, err)) < 0)
		return -1;
	return fl_onnx_emit2(c, FL_OP_AND, hit, keep, TMP, err);
}

/* sum over axis 1 of where(hit, v, 0): the value v holds for each
 * element's class ([N, 1, d..]). */
static int pick(fl_onnx_ctx *c, int hit, int v, fl_error *err)
{
	int64_t axis = 1;
	int in[3] = {hit, v, -1};
	int w;

	if (v < 0 || (in[2] = fl_onnx_scalar(c, 0.0f, err)) < 0 ||
	    (w = fl_onnx_emit(c, FL_OP_WHERE, in, 3, NULL, TMP, err)) < 0)
		return -1;
	return fl_onnx_emit_ints(c, FL_OP_REDUCE_SUM, w, "axes", &axis, 1, TMP,
				 err);
}

/* Each element's weight [N, 1, d..]: weight[target] where hit, else 0;
 * without a weight input, 1 where hit. */
static int element_weight(fl_onnx_ctx *c, int hit, int rank, int64_t n_class,
			  fl_error *err)
{
	fl_shape ws = {.rank = rank};
	int w;

	if (!fl_onnx_has_input(c, 2))
		return pick(c, hit, fl_onnx_scalar(c, 1.0f, err), err);
	if ((w = fl_onnx_data(c, 2, err)) < 0)
		return -1;
	if (shape_of(c, w)->rank != 1 || shape_of(c, w)->dim[0] != n_class) {
		fl_error_set(err, "input 2: the weight must have shape [C] = "
			     "[%lld]", (long long)n_class);
		return -1;
	}
	for (int d = 0; d < rank; d++)
		ws.dim[d] = d == 1 ? n_class : 1;
	if ((w = fl_onnx_reshape(c, w, &ws, TMP, err)) < 0)
		return -1;
	return pick(c, hit, w, err);
}

/* The sum of every element of x as a scalar, into the node's output
 * `out` (or a new intermediate with TMP). */
static int sum_all(fl_onnx_ctx *c, int x, int out, fl_error *err)
{
	int64_t axes[FL_MAX_RANK];
	int rank = shape_of(c, x)->rank;
	fl_shape scalar = fl_shape_scalar();

	for (int d = 0; d < rank; d++)
		axes[d] = d;
	x = fl_onnx_emit_ints(c, FL_OP_REDUCE_SUM, x, "axes", axes, rank, TMP,
			      err);
	return x < 0 ? -1 : fl_onnx_reshape(c, x, &scalar, out, err);
}

/* The per-element loss [N, 1, d..] reduced as `red` says into the
 * node's output 0; w, the elements' weights, is needed for the mean. */
static int reduce_loss(fl_onnx_ctx *c, int loss, int w, int red,
		       fl_error *err)
{
	fl_shape none = *shape_of(c, loss);
	int total;

	if (red == LOSS_NONE) {	/* [N, 1, d..] -> [N, d..] */
		for (int d = 1; d + 1 < none.rank; d++)
			none.dim[d] = none.dim[d + 1];
		none.rank--;
		return fl_onnx_reshape(c, loss, &none, 0, err);
	}
	if (red == LOSS_SUM)
		return sum_all(c, loss, 0, err);
	if ((total = sum_all(c, loss, TMP, err)) < 0 ||
	    (w = sum_all(c, w, TMP, err)) < 0)
		return -1;
	return fl_onnx_emit2(c, FL_OP_DIV, total, w, 0, err);
}

/* The loss of log-probabilities lp [N, C, d..] (graph tensor) into the
 * node's output 0: -lp at each element's class, times its weight when
 * the node has one, then reduced. */
static int nll_of(fl_onnx_ctx *c, int lp, fl_error *err)
{
	fl_shape xs = *shape_of(c, lp);	/* a copy: tensors grow below */
	int rank = xs.rank, red = read_reduction(c, err), col, hit, loss;
	int64_t n_class = xs.dim[1];
	bool weighted = fl_onnx_has_input(c, 2);
	int w = -1;

	if (red < 0 || (col = target_as_column(c, &xs, err)) < 0 ||
	    (hit = class_mask(c, col, rank, n_class, err)) < 0 ||
	    (loss = pick(c, hit, lp, err)) < 0 ||
	    (loss = fl_onnx_emit1(c, FL_OP_NEG, loss, TMP, err)) < 0)
		return -1;
	if ((weighted || red == LOSS_MEAN) &&
	    (w = element_weight(c, hit, rank, n_class, err)) < 0)
		return -1;
	if (weighted &&
	    (loss = fl_onnx_emit2(c, FL_OP_MUL, loss, w, TMP, err)) < 0)
		return -1;
	return reduce_loss(c, loss, w, red, err) < 0 ? -1 : 0;
}

/* The input as float [N, C, d..]; -1 with err set otherwise. */
static int loss_input(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err);

	if (x >= 0 && shape_of(c, x)->rank < 2) {
		fl_error_set(err, "input 0: needs shape [N, C] or [N, C, "
			     "d1..dk]");
		return -1;
	}
	return x;
}

int fl_onnx_map_nll_loss(fl_onnx_ctx *c, fl_error *err)
{
	int x = loss_input(c, err);

	return x < 0 ? -1 : nll_of(c, x, err);
}

/* log_softmax over the classes (into output 1 when the model reads the
 * log-probability), then the negative log-likelihood. */
int fl_onnx_map_softmax_cross_entropy(fl_onnx_ctx *c, fl_error *err)
{
	bool want_lp = c->node->n_output > 1 && *c->node->output[1];
	int x = loss_input(c, err), lp;
	fl_attrs a = {0};

	if (x < 0)
		return -1;
	if (fl_attrs_set_number(&a, "axis", 1) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	lp = fl_onnx_emit_attrs(c, FL_OP_LOG_SOFTMAX, &x, 1, &a,
				want_lp ? 1 : TMP, err);
	return lp < 0 ? -1 : nll_of(c, lp, err);
}
