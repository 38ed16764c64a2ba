/* ONNX import: the normalisations and Dropout (onnx_import_impl.h).
 *
 * Contract: maps LayerNormalization, BatchNormalization,
 * InstanceNormalization and Dropout, with every output the node names:
 *
 *   LayerNormalization(X, Scale[, B]) -> Y[, Mean[, InvStdDev]]
 *     Y alone is the `layernorm` compound op (opened at partition).  When
 *     Mean or InvStdDev is read, the normalisation is built from
 *     primitives at import so that those statistics are tensors the
 *     outputs can name: mean = sum(x) / n, xc = x - mean, inv =
 *     rsqrt(sum(xc^2) / n + epsilon), Y = xc * inv [* Scale] [+ B], both
 *     statistics over the dims from `axis` on, kept with extent 1 (the
 *     shape ONNX gives them).  stash_type 1 (float) is the only type
 *     fuselab computes in, so both stash types give the same tensors.
 *   BatchNormalization(X, scale, B, input_mean, input_var)
 *     inference (training_mode 0, the default): the `batchnorm` compound
 *     op over the given statistics.  Training (training_mode 1, opset
 *     14 on): the statistics of the batch, mean and population variance
 *     over every dim but the channel one, normalise X, and the outputs
 *     running_mean = input_mean * momentum + mean * (1 - momentum),
 *     running_var likewise with the variance, are computed when read.
 *     Before opset 14 the extra outputs (training statistics) stay
 *     unbound, so a node that reads them is opaque.
 *   InstanceNormalization: layernorm over the dims from 2 on, then the
 *     per-channel scale and bias.
 *   Dropout(X[, ratio[, training_mode]]) -> Y[, mask]
 *     deterministic when not training (training_mode absent or known
 *     false; opset < 7: is_test 1; opset 7-11: always) or when the ratio
 *     is known to be 0: Y = X and the mask is all true (bool from opset
 *     10, ones of X's type before).  Training with another ratio draws a
 *     random mask: the node stays opaque with that reason, and so does
 *     a training_mode or ratio known only at run time. */
#include "onnx_import_impl.h"

#include <stdio.h>
#include <string.h>

#define OUT 0		/* emit into the node's output 0 */
#define TMP (-1)	/* emit into a new intermediate */

static const fl_shape *shape_of(const fl_onnx_ctx *c, int t)
{
	return &c->g->tensors[t].shape;
}

/* Output k of the node when the model names it (it may be read), else
 * TMP: a statistic is computed either way, and bound only when named. */
static int named_output(const fl_onnx_ctx *c, int k)
{
	return (size_t)k < c->node->n_output && c->node->output[k] &&
	       c->node->output[k][0] ? k : TMP;
}

static bool output_read(const fl_onnx_ctx *c, int k)
{
	return (size_t)k < c->node->n_output && c->node->output[k] &&
	       c->node->output[k][0] &&
	       fl_onnx_output_read(c, c->node->output[k]);
}

/* A constant v of x's shape (one value splatted over it), cast to dtype
 * dt; -1 on error. */
static int splat(fl_onnx_ctx *c, float v, const fl_shape *s, fl_dtype dt,
		 fl_error *err)
{
	int t = fl_onnx_scalar(c, v, err);

	if (t < 0 || (dt != FL_F32 &&
		      fl_tensor_convert_const(&c->g->tensors[t], dt, err) < 0))
		return -1;
	c->g->tensors[t].shape = *s;
	return t;
}

/* x * v for a float constant v. */
static int times(fl_onnx_ctx *c, int x, double v, int out, fl_error *err)
{
	int s = fl_onnx_scalar(c, (float)v, err);

	return s < 0 ? -1 : fl_onnx_emit2(c, FL_OP_MUL, x, s, out, err);
}

/* --- moments --- */

/* The mean and the population variance of x over axes[0..n-1] (kept
 * with extent 1), written to outputs mean_out and var_out (or TMP);
 * *xc gets x - mean, which the normalisation reuses.  Each moment is a
 * sum times 1/count, as the layernorm compound opens. */
static int moments(fl_onnx_ctx *c, int x, const int64_t *axes, int n,
		   int mean_out, int var_out, int *mean, int *var, int *xc,
		   fl_error *err)
{
	const fl_shape *s = shape_of(c, x);
	int64_t count = 1;
	int sum, sq;

	for (int k = 0; k < n; k++)
		count *= s->dim[axes[k]];
	sum = fl_onnx_emit_ints(c, FL_OP_REDUCE_SUM, x, "axes", axes, n, TMP,
				err);
	if (sum < 0 || (*mean = times(c, sum, 1.0 / (double)count, mean_out,
				      err)) < 0 ||
	    (*xc = fl_onnx_emit2(c, FL_OP_SUB, x, *mean, TMP, err)) < 0 ||
	    (sq = fl_onnx_emit1(c, FL_OP_SQUARE, *xc, TMP, err)) < 0)
		return -1;
	sq = fl_onnx_emit_ints(c, FL_OP_REDUCE_SUM, sq, "axes", axes, n, TMP,
			       err);
	if (sq < 0)
		return -1;
	*var = times(c, sq, 1.0 / (double)count, var_out, err);
	return *var < 0 ? -1 : 0;
}

/* rsqrt(var + eps) into out (or TMP). */
static int inv_std(fl_onnx_ctx *c, int var, float eps, int out,
		   fl_error *err)
{
	int e = fl_onnx_scalar(c, eps, err), v;

	if (e < 0 || (v = fl_onnx_emit2(c, FL_OP_ADD, var, e, TMP, err)) < 0)
		return -1;
	return fl_onnx_emit1(c, FL_OP_RSQRT, v, out, err);
}

/* --- LayerNormalization --- */

/* Y, Mean and InvStdDev from primitives (the contract above). */
static int layernorm_with_stats(fl_onnx_ctx *c, int x, int axis,
				const int *param, int n_param, float eps,
				fl_error *err)
{
	int rank = shape_of(c, x)->rank, n = 0, mean, var, xc, inv, y;
	int64_t axes[FL_MAX_RANK];

	for (int d = axis; d < rank; d++)
		axes[n++] = d;
	if (moments(c, x, axes, n, named_output(c, 1), TMP, &mean, &var, &xc,
		    err) < 0 ||
	    (inv = inv_std(c, var, eps, named_output(c, 2), err)) < 0 ||
	    (y = fl_onnx_emit2(c, FL_OP_MUL, xc, inv,
			       n_param > 0 ? TMP : OUT, err)) < 0)
		return -1;
	for (int k = 0; k < n_param; k++)
		if ((y = fl_onnx_emit2(c, k == 0 ? FL_OP_MUL : FL_OP_ADD, y,
				       param[k], k == n_param - 1 ? OUT : TMP,
				       err)) < 0)
			return -1;
	return 0;
}

int fl_onnx_map_layernorm(fl_onnx_ctx *c, fl_error *err)
{
	int in[3], n = 0, axis;
	float eps = fl_onnx_attr_float(c, "epsilon", 1e-5f);
	fl_attrs a = {0};

	for (int k = 0; k < 3 && fl_onnx_has_input(c, k); k++)
		if ((in[n++] = fl_onnx_data(c, k, err)) < 0)
			return -1;
	if (n == 0) {
		fl_error_set(err, "input 0: missing");
		return -1;
	}
	axis = fl_axis_normalize(fl_onnx_attr_int(c, "axis", -1),
				 shape_of(c, in[0])->rank);
	if (axis < 0) {
		fl_error_set(err, "attribute axis: out of range");
		return -1;
	}
	if (output_read(c, 1) || output_read(c, 2))
		return layernorm_with_stats(c, in[0], axis, in + 1, n - 1, eps,
					    err);
	if (fl_attrs_set_number(&a, "axis", axis) < 0 ||
	    fl_attrs_set_number(&a, "eps", eps) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_LAYERNORM, in, n, &a, OUT, err) < 0
		       ? -1 : 0;
}

/* --- BatchNormalization --- */

/* A per-channel parameter [C] of an NC... tensor of rank r as [C,1,..]. */
static int per_channel(fl_onnx_ctx *c, int k, int rank, fl_error *err)
{
	int p = fl_onnx_data(c, k, err);
	fl_shape s = {0};

	if (p < 0 || rank <= 2)
		return p;
	s.rank = rank - 1;
	s.dim[0] = fl_shape_numel(shape_of(c, p));
	for (int d = 1; d < s.rank; d++)
		s.dim[d] = 1;
	return fl_onnx_reshape(c, p, &s, TMP, err);
}

/* `batchnorm` of x over mean and var (tensors that broadcast to x) with
 * the node's scale (input 1) and bias (input 2), into output 0. */
static int emit_batchnorm(fl_onnx_ctx *c, int x, int mean, int var,
			  fl_error *err)
{
	int r = shape_of(c, x)->rank, in[5] = {x, mean, var, -1, -1};
	fl_attrs a = {0};

	/* ONNX: X, scale, B, mean, var; fuselab: x, mean, var, gamma, beta */
	if ((in[3] = per_channel(c, 1, r, err)) < 0 ||
	    (in[4] = per_channel(c, 2, r, err)) < 0)
		return -1;
	if (fl_attrs_set_number(&a, "eps",
				fl_onnx_attr_float(c, "epsilon", 1e-5f)) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_BATCHNORM, in, 5, &a, OUT, err) < 0
		       ? -1 : 0;
}

/* stat (shape [1,C,1..]) blended into the running statistic of input k:
 * input_k * momentum + stat * (1 - momentum), as [C] into output out. */
static int running_stat(fl_onnx_ctx *c, int k, int stat, float momentum,
			int out, fl_error *err)
{
	int run = fl_onnx_data(c, k, err), a, b;
	fl_shape s;

	if (run < 0)
		return -1;
	s = *shape_of(c, run);
	if ((b = fl_onnx_reshape(c, stat, &s, TMP, err)) < 0 ||
	    (a = times(c, run, momentum, TMP, err)) < 0 ||
	    (b = times(c, b, 1.0 - (double)momentum, TMP, err)) < 0)
		return -1;
	return fl_onnx_emit2(c, FL_OP_ADD, a, b, out, err);
}

/* Training mode: normalised by the batch's statistics (the contract). */
static int batchnorm_training(fl_onnx_ctx *c, int x, fl_error *err)
{
	float momentum = fl_onnx_attr_float(c, "momentum", 0.9f);
	int rank = shape_of(c, x)->rank, n = 0, mean, var, xc;
	int64_t axes[FL_MAX_RANK];

	if (rank < 2) {
		fl_error_set(err, "input 0: needs rank >= 2 (N, C, ...)");
		return -1;
	}
	for (int d = 0; d < rank; d++)
		if (d != 1)
			axes[n++] = d;
	if (moments(c, x, axes, n, TMP, TMP, &mean, &var, &xc, err) < 0 ||
	    emit_batchnorm(c, x, mean, var, err) < 0)
		return -1;
	if (named_output(c, 1) != TMP &&
	    running_stat(c, 3, mean, momentum, 1, err) < 0)
		return -1;
	if (named_output(c, 2) != TMP &&
	    running_stat(c, 4, var, momentum, 2, err) < 0)
		return -1;
	return 0;
}

int fl_onnx_map_batchnorm(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), r, mean, var;

	if (x < 0)
		return -1;
	if (c->opset < 9 && fl_onnx_attr_int(c, "spatial", 1) == 0) {
		fl_error_set(err, "spatial 0 (per-activation statistics) is "
			     "not supported");
		return -1;
	}
	if (c->opset >= 14 && fl_onnx_attr_int(c, "training_mode", 0))
		return batchnorm_training(c, x, err);
	r = shape_of(c, x)->rank;
	if ((mean = per_channel(c, 3, r, err)) < 0 ||
	    (var = per_channel(c, 4, r, err)) < 0)
		return -1;
	return emit_batchnorm(c, x, mean, var, err);
}

/* --- InstanceNormalization --- */

/* layernorm over every dim from 2 on (each sample's each channel), then
 * the per-channel scale and bias. */
int fl_onnx_map_instancenorm(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), y, scale, bias;
	fl_attrs a = {0};

	if (x < 0 || shape_of(c, x)->rank < 3) {
		if (x >= 0)
			fl_error_set(err, "input 0: needs rank >= 3");
		return -1;
	}
	if (fl_attrs_set_number(&a, "axis", 2) < 0 ||
	    fl_attrs_set_number(&a, "eps",
				fl_onnx_attr_float(c, "epsilon", 1e-5f)) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	if ((y = fl_onnx_emit_attrs(c, FL_OP_LAYERNORM, &x, 1, &a, TMP,
				    err)) < 0 ||
	    (scale = per_channel(c, 1, shape_of(c, x)->rank, err)) < 0 ||
	    (bias = per_channel(c, 2, shape_of(c, x)->rank, err)) < 0 ||
	    (y = fl_onnx_emit2(c, FL_OP_MUL, y, scale, TMP, err)) < 0)
		return -1;
	return fl_onnx_emit2(c, FL_OP_ADD, y, bias, OUT, err) < 0 ? -1 : 0;
}

/* --- Dropout --- */

/* NULL when the Dropout node computes Y = X (the contract), else why it
 * cannot be modelled. */
static const char *dropout_random(fl_onnx_ctx *c)
{
	const fl_onnx_values *ratio, *training;

	if (c->opset < 7)
		return fl_onnx_attr_int(c, "is_test", 0) ||
		       fl_onnx_attr_float(c, "ratio", 0.5f) == 0.0f
		       ? NULL : "training mode (a random mask)";
	if (c->opset < 12 || !fl_onnx_has_input(c, 2))
		return NULL;
	training = fl_onnx_input_known(c, 2);
	if (training && training->n >= 1 && training->f[0] == 0)
		return NULL;
	ratio = fl_onnx_has_input(c, 1) ? fl_onnx_input_known(c, 1) : NULL;
	if (fl_onnx_has_input(c, 1) && ratio && ratio->n >= 1 &&
	    ratio->f[0] == 0)
		return NULL;
	if (!training)
		return "training_mode known only at run time";
	return ratio || !fl_onnx_has_input(c, 1)
	       ? "training mode (a random mask)"
	       : "training mode with a ratio known only at run time";
}

int fl_onnx_map_dropout(fl_onnx_ctx *c, fl_error *err)
{
	const char *why = dropout_random(c);
	int x = fl_onnx_data(c, 0, err), ones;

	if (x < 0)
		return -1;
	if (why)
		return fl_onnx_cannot_model(c, err, "%s", why);
	if (fl_onnx_emit1(c, FL_OP_COPY, x, OUT, err) < 0)
		return -1;
	if (named_output(c, 1) == TMP)
		return 0;
	/* the mask keeps every element */
	ones = splat(c, 1.0f, shape_of(c, x),
		     c->opset >= 10 ? FL_BOOL : c->g->tensors[x].dtype, err);
	return ones < 0 || fl_onnx_emit1(c, FL_OP_COPY, ones, 1, err) < 0
	       ? -1 : 0;
}
