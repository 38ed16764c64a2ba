/* ONNX import of the com.microsoft operators that ONNX Runtime's graph
 * optimizer writes into the models it saves (onnx_import_impl.h).
 *
 * Contract: each becomes the compound or primitive ops fuselab already
 * has, with ONNX Runtime's contrib-op semantics and attribute defaults:
 *   Gelu(X)                      gelu, erf form
 *   FastGelu(X[, bias])          gelu, tanh form, of X (+ bias)
 *   BiasGelu(A, B)               gelu, erf form, of A + B
 *   QuickGelu(X)                 X * sigmoid(alpha X), alpha 1.702
 *   LayerNormalization(X, Scale[, B])   as the ONNX operator (axis -1,
 *                                epsilon 1e-5); output 0 only
 *   SkipLayerNormalization(input, skip, gamma[, beta[, bias]])
 *                                layernorm over the last axis (epsilon
 *                                1e-12) of input + skip (+ bias); output
 *                                3 is that sum; outputs 1 and 2 (mean,
 *                                inverse std, for training) cannot be
 *                                modelled when something reads them
 *   SimplifiedLayerNormalization(X, scale)   rmsnorm over the last axis
 *                                (epsilon 1e-5); output 0 only
 *   SkipSimplifiedLayerNormalization(input, skip, gamma)   rmsnorm (epsilon
 *                                1e-5) of input + skip; output 3 is that
 *                                sum; a bias input cannot be modelled
 *                                (ONNX Runtime's versions disagree on
 *                                whether it is added)
 *   FusedMatMul(A, B)            alpha * (A or A^T) (B or B^T) over the
 *                                last two dims (transA, transB, alpha);
 *                                transBatchA/B cannot be modelled
 *   FusedConv(X, W[, B[, Z]])    activation(conv(X, W, B) + Z), the conv
 *                                as ONNX Conv, activation one of Relu,
 *                                Tanh, Sigmoid, LeakyRelu (alpha),
 *                                Clip (min, max), HardSigmoid (alpha,
 *                                beta), its parameters from
 *                                activation_params
 * Any other operator of the domain has no mapping (NULL) and becomes
 * opaque; a form listed above as one that cannot be modelled reports it
 * with fl_onnx_cannot_model before emitting anything, so it becomes
 * opaque too.  Errors name the problem only. */
#include <stdio.h>
#include <string.h>

#include "onnx_import_impl.h"

#define OUT 0		/* emit into the node's output 0 */
#define TMP (-1)	/* emit into a new intermediate */

static int emit_gelu(fl_onnx_ctx *c, int x, const char *approximate,
		     fl_error *err)
{
	fl_attrs a = {0};
	int y;

	if (fl_attrs_set_string(&a, "approximate", approximate) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	y = fl_onnx_emit(c, FL_OP_GELU, &x, 1, &a, OUT, err);
	fl_attrs_free(&a);
	return y < 0 ? -1 : 0;
}

/* x + input k when the node has input k, else x. */
static int plus_input(fl_onnx_ctx *c, int x, int k, fl_error *err)
{
	int b;

	if (x < 0 || !fl_onnx_has_input(c, k))
		return x;
	if ((b = fl_onnx_data(c, k, err)) < 0)
		return -1;
	return fl_onnx_emit2(c, FL_OP_ADD, x, b, TMP, err);
}

static int map_gelu(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err);

	return x < 0 ? -1 : emit_gelu(c, x, "none", err);
}

static int map_fast_gelu(fl_onnx_ctx *c, fl_error *err)
{
	int x = plus_input(c, fl_onnx_data(c, 0, err), 1, err);

	return x < 0 ? -1 : emit_gelu(c, x, "tanh", err);
}

static int map_bias_gelu(fl_onnx_ctx *c, fl_error *err)
{
	int x;

	if (!fl_onnx_has_input(c, 1)) {
		fl_error_set(err, "input 1 (bias): missing");
		return -1;
	}
	x = plus_input(c, fl_onnx_data(c, 0, err), 1, err);
	return x < 0 ? -1 : emit_gelu(c, x, "none", err);
}

static int map_quick_gelu(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), alpha, y;

	if (x < 0 ||
	    (alpha = fl_onnx_scalar(c, fl_onnx_attr_float(c, "alpha", 1.702f),
				    err)) < 0 ||
	    (y = fl_onnx_emit2(c, FL_OP_MUL, x, alpha, TMP, err)) < 0 ||
	    (y = fl_onnx_emit1(c, FL_OP_SIGMOID, y, TMP, err)) < 0)
		return -1;
	return fl_onnx_emit2(c, FL_OP_MUL, x, y, OUT, err) < 0 ? -1 : 0;
}

static int map_layernorm(fl_onnx_ctx *c, fl_error *err)
{
	return fl_onnx_mapping("LayerNormalization")(c, err);
}

static bool output_read(const fl_onnx_ctx *c, int k)
{
	return (size_t)k < c->node->n_output &&
	       fl_onnx_output_read(c, c->node->output[k]);
}

static int map_skip_layernorm(fl_onnx_ctx *c, fl_error *err)
{
	int in[3], n = 1, sum;
	fl_attrs a = {0};

	if (output_read(c, 1) || output_read(c, 2))
		return fl_onnx_cannot_model(c, err, "output mean or "
					    "inv_std_var");
	sum = fl_onnx_data(c, 0, err);
	if (sum < 0 || (in[1] = fl_onnx_data(c, 1, err)) < 0 ||
	    (sum = fl_onnx_emit2(c, FL_OP_ADD, sum, in[1], TMP, err)) < 0 ||
	    (sum = plus_input(c, sum, 4, err)) < 0)
		return -1;
	in[0] = sum;
	for (int k = 2; k < 4 && fl_onnx_has_input(c, k); k++)
		if ((in[n++] = fl_onnx_data(c, k, err)) < 0)
			return -1;
	if (fl_attrs_set_number(&a, "axis", -1) < 0 ||
	    fl_attrs_set_number(&a, "eps",
				fl_onnx_attr_float(c, "epsilon", 1e-12f)) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	n = fl_onnx_emit(c, FL_OP_LAYERNORM, in, n, &a, OUT, err);
	fl_attrs_free(&a);
	if (n < 0)
		return -1;
	if (output_read(c, 3) &&
	    fl_onnx_emit1(c, FL_OP_COPY, sum, 3, err) < 0)
		return -1;
	return 0;
}

/* rmsnorm of x over the last axis, times gamma (input k), into out. */
static int emit_rmsnorm(fl_onnx_ctx *c, int x, int k, int out, fl_error *err)
{
	int in[2] = {x, -1};
	fl_attrs a = {0};
	int y;

	if ((in[1] = fl_onnx_data(c, k, err)) < 0)
		return -1;
	if (fl_attrs_set_number(&a, "eps",
				fl_onnx_attr_float(c, "epsilon", 1e-5f)) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	y = fl_onnx_emit(c, FL_OP_RMSNORM, in, 2, &a, out, err);
	fl_attrs_free(&a);
	return y;
}

static int map_simplified_layernorm(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err);
	int64_t axis = fl_onnx_attr_int(c, "axis", -1);

	if (x < 0)
		return -1;
	if (axis != -1 && axis != c->g->tensors[x].shape.rank - 1)
		return fl_onnx_cannot_model(c, err, "axis %lld",
					    (long long)axis);
	if (output_read(c, 1))
		return fl_onnx_cannot_model(c, err, "output inv_std_var");
	return emit_rmsnorm(c, x, 1, OUT, err) < 0 ? -1 : 0;
}

/* The optional bias is left out: ONNX Runtime's versions disagree on
 * whether it is added. */
static int map_skip_simplified_layernorm(fl_onnx_ctx *c, fl_error *err)
{
	int x, skip;

	if (fl_onnx_has_input(c, 3))
		return fl_onnx_cannot_model(c, err, "input bias");
	if (output_read(c, 1) || output_read(c, 2))
		return fl_onnx_cannot_model(c, err, "output mean or "
					    "inv_std_var");
	if ((x = fl_onnx_data(c, 0, err)) < 0 ||
	    (skip = fl_onnx_data(c, 1, err)) < 0 ||
	    (x = fl_onnx_emit2(c, FL_OP_ADD, x, skip, TMP, err)) < 0 ||
	    emit_rmsnorm(c, x, 2, OUT, err) < 0)
		return -1;
	if (output_read(c, 3) && fl_onnx_emit1(c, FL_OP_COPY, x, 3, err) < 0)
		return -1;
	return 0;
}

static int map_fused_matmul(fl_onnx_ctx *c, fl_error *err)
{
	float alpha = fl_onnx_attr_float(c, "alpha", 1.0f);
	int in[2], y;

	if (fl_onnx_attr_int(c, "transBatchA", 0) ||
	    fl_onnx_attr_int(c, "transBatchB", 0))
		return fl_onnx_cannot_model(c, err, "transBatchA/transBatchB");
	if ((in[0] = fl_onnx_data(c, 0, err)) < 0 ||
	    (in[1] = fl_onnx_data(c, 1, err)) < 0)
		return -1;
	if (c->g->tensors[in[0]].shape.rank < 2 ||
	    c->g->tensors[in[1]].shape.rank < 2) {
		fl_error_set(err, "FusedMatMul needs operands of rank 2 or "
			     "more");
		return -1;
	}
	y = fl_onnx_emit_trans_matmul(c, in, alpha == 1.0f ? OUT : TMP, err);
	if (y < 0 || alpha == 1.0f)
		return y < 0 ? -1 : 0;
	if ((in[1] = fl_onnx_scalar(c, alpha, err)) < 0)
		return -1;
	return fl_onnx_emit2(c, FL_OP_MUL, y, in[1], OUT, err) < 0 ? -1 : 0;
}

/* FusedConv's activation parameter k, or dflt. */
static float activation_param(const fl_onnx_ctx *c, size_t k, float dflt)
{
	const Onnx__AttributeProto *a = fl_onnx_attr(c, "activation_params");

	return a && a->n_floats > k ? a->floats[k] : dflt;
}

/* The conv of a FusedConv, by the ONNX Conv mapping run on a copy of
 * the node with inputs X, W, B and output 0 renamed "<output>.conv";
 * the result's tensor. */
static int fused_conv_conv(fl_onnx_ctx *c, fl_error *err)
{
	const Onnx__NodeProto *node = c->node;
	Onnx__NodeProto copy = *node;
	char name[300], *outs[1] = {name};
	fl_onnx_binding *b;
	int rc;

	snprintf(name, sizeof name, "%s.conv", node->output[0]);
	copy.n_input = node->n_input < 3 ? node->n_input : 3;
	copy.output = outs;
	copy.n_output = 1;
	c->node = &copy;
	rc = fl_onnx_mapping("Conv")(c, err);
	c->node = node;
	if (rc < 0 || !(b = fl_onnx_lookup(c, name)))
		return -1;
	return b->tensor;
}

/* The activation of a FusedConv on y, into output 0. */
static int fused_activation(fl_onnx_ctx *c, const char *act, int y,
			    fl_error *err)
{
	fl_attrs a = {0};
	int lo, hi, rc = 0;

	if (!strcmp(act, "Relu") || !strcmp(act, "Tanh") ||
	    !strcmp(act, "Sigmoid"))
		return fl_onnx_emit1(c, act[0] == 'R' ? FL_OP_RELU
					: act[0] == 'T' ? FL_OP_TANH
							: FL_OP_SIGMOID,
				     y, OUT, err);
	if (!strcmp(act, "Clip")) {
		if ((lo = fl_onnx_scalar(c, activation_param(c, 0, -3.4e38f),
					 err)) < 0 ||
		    (hi = fl_onnx_scalar(c, activation_param(c, 1, 3.4e38f),
					 err)) < 0 ||
		    (y = fl_onnx_emit2(c, FL_OP_MAX, y, lo, TMP, err)) < 0)
			return -1;
		return fl_onnx_emit2(c, FL_OP_MIN, y, hi, OUT, err);
	}
	if (!strcmp(act, "LeakyRelu"))
		rc = fl_attrs_set_number(&a, "alpha",
					 activation_param(c, 0, 0.01f));
	else		/* HardSigmoid, checked by the caller */
		rc = fl_attrs_set_number(&a, "alpha",
					 activation_param(c, 0, 0.2f)) |
		     fl_attrs_set_number(&a, "beta",
					 activation_param(c, 1, 0.5f));
	if (rc < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	y = fl_onnx_emit(c, act[0] == 'L' ? FL_OP_LEAKY_RELU
					  : FL_OP_HARD_SIGMOID,
			 &y, 1, &a, OUT, err);
	fl_attrs_free(&a);
	return y;
}

static int map_fused_conv(fl_onnx_ctx *c, fl_error *err)
{
	static const char *const known[] = {
		"Relu", "Tanh", "Sigmoid", "LeakyRelu", "Clip", "HardSigmoid",
	};
	char buf[32];
	const char *act = fl_onnx_attr_string(c, "activation", "", buf,
					      sizeof buf);
	bool ok = false;
	int y;

	for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
		ok |= !strcmp(act, known[k]);
	if (*act && !ok)
		return fl_onnx_cannot_model(c, err, "activation %s",
					    fl_error_name(act));
	if (c->node->n_output < 1 || !*c->node->output[0]) {
		fl_error_set(err, "output 0: missing");
		return -1;
	}
	if ((y = fused_conv_conv(c, err)) < 0 ||
	    (y = plus_input(c, y, 3, err)) < 0)
		return -1;
	if (!*act)
		return fl_onnx_emit1(c, FL_OP_COPY, y, OUT, err) < 0 ? -1 : 0;
	return fused_activation(c, act, y, err) < 0 ? -1 : 0;
}

static const struct {
	const char *op_type;
	fl_onnx_map_fn map;
} mappings[] = {
	{"Gelu", map_gelu}, {"FastGelu", map_fast_gelu},
	{"BiasGelu", map_bias_gelu}, {"QuickGelu", map_quick_gelu},
	{"LayerNormalization", map_layernorm},
	{"SkipLayerNormalization", map_skip_layernorm},
	{"SimplifiedLayerNormalization", map_simplified_layernorm},
	{"SkipSimplifiedLayerNormalization", map_skip_simplified_layernorm},
	{"FusedMatMul", map_fused_matmul}, {"FusedConv", map_fused_conv},
};

fl_onnx_map_fn fl_onnx_msft_mapping(const char *op_type)
{
	for (size_t k = 0; k < sizeof mappings / sizeof mappings[0]; k++)
		if (!strcmp(mappings[k].op_type, op_type))
			return mappings[k].map;
	return NULL;
}
