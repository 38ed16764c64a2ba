/* The op table: one row per op of the graph format (see ops.h for the
 * attribute conventions).  Adding an op is adding a row here and its
 * functions in ops_prim.c or ops_compound.c; a primitive's row also says
 * how the C backend writes its scalar body (fl_op_c in ops.h), so an
 * elementwise op needs nothing else from the backend. */
#include <stdio.h>
#include <string.h>

#include "ops_impl.h"

#define ATTRS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NO_ATTRS ((const char *const[]){NULL})

/* The C templates of a row (fl_op_c): an elementwise expression, a
 * reduction's identity and update, or a function of the attributes. */
#define EXPR(e) .c = {.compute = e}
#define ACC(i, u) .c = {.init = i, .update = u}
#define C_OF(f) .c_of = fl_c_##f
#define NO_C .c = {NULL}

#define UNARY(k, n, e, d) \
	{n, k, FL_CLASS_UNARY, 1, 1, 1, fl_infer_unary, fl_eval_unary, NULL, NO_ATTRS, d, EXPR(e)}
#define BINARY(k, n, e, d) \
	{n, k, FL_CLASS_BINARY, 2, 2, 1, fl_infer_binary, fl_eval_binary, NULL, NO_ATTRS, d, EXPR(e)}
#define TYPED_BINARY(k, n, e, d) \
	{n, k, FL_CLASS_BINARY, 2, 2, 1, fl_infer_binary, fl_eval_typed, NULL, NO_ATTRS, d, EXPR(e)}
#define REDUCE(k, n, i, u, d) \
	{n, k, FL_CLASS_REDUCE, 1, 1, 1, fl_infer_reduce, fl_eval_reduce, NULL, ATTRS("axes"), d, ACC(i, u)}
#define OPAQUE(k, n, f, lo, hi, at, c, d) \
	{n, k, FL_CLASS_OPAQUE, lo, hi, 1, fl_infer_##f, fl_eval_##f, NULL, at, d, c}
#define COMPOUND(k, n, f, lo, hi, at, d) \
	{n, k, FL_CLASS_COMPOUND, lo, hi, 1, fl_infer_##f, fl_eval_##f, fl_expand_##f, at, d, NO_C}

static const fl_op_info op_table[FL_OP_COUNT] = {
	UNARY(FL_OP_NEG, "neg", "-$0", "-x"),
	UNARY(FL_OP_ABS, "abs", "fabsf($0)", "|x|"),
	UNARY(FL_OP_EXP, "exp", "fl_expf($0)", "e^x"),
	UNARY(FL_OP_LOG, "log", "logf($0)", "natural logarithm"),
	UNARY(FL_OP_SQRT, "sqrt", "sqrtf($0)", "square root"),
	UNARY(FL_OP_RSQRT, "rsqrt", "1.0f / sqrtf($0)", "1/sqrt(x)"),
	UNARY(FL_OP_RECIP, "recip", "1.0f / $0", "1/x"),
	UNARY(FL_OP_TANH, "tanh", "fl_tanhf($0)", "hyperbolic tangent"),
	UNARY(FL_OP_SIGMOID, "sigmoid", "1.0f / (1.0f + fl_expf(-$0))",
	      "1/(1+e^-x)"),
	UNARY(FL_OP_RELU, "relu", "$0 > 0.0f ? $0 : 0.0f", "max(x, 0)"),
	UNARY(FL_OP_ERF, "erf", "fl_erff($0)", "error function"),
	UNARY(FL_OP_SQUARE, "square", "$0 * $0", "x*x"),
	UNARY(FL_OP_COPY, "copy", "$0", "x"),
	UNARY(FL_OP_ROUND, "round", "nearbyintf($0)",
	      "round to nearest, ties to even"),
	{"cast", FL_OP_CAST, FL_CLASS_UNARY, 1, 1, 1, fl_infer_unary,
	 fl_eval_unary, NULL, ATTRS("dtype"),
	 "convert to \"dtype\" (f32 bool i8 u8 i16 u16 i32 u32 i64 u64 "
	 "f16 bf16)", EXPR("$0")},
	UNARY(FL_OP_SIN, "sin", "sinf($0)", "sine"),
	UNARY(FL_OP_COS, "cos", "cosf($0)", "cosine"),
	UNARY(FL_OP_TAN, "tan", "tanf($0)", "tangent"),
	UNARY(FL_OP_ASIN, "asin", "asinf($0)", "arcsine"),
	UNARY(FL_OP_ACOS, "acos", "acosf($0)", "arccosine"),
	UNARY(FL_OP_ATAN, "atan", "atanf($0)", "arctangent"),
	UNARY(FL_OP_SINH, "sinh", "sinhf($0)", "hyperbolic sine"),
	UNARY(FL_OP_COSH, "cosh", "coshf($0)", "hyperbolic cosine"),
	UNARY(FL_OP_ASINH, "asinh", "asinhf($0)", "inverse hyperbolic sine"),
	UNARY(FL_OP_ACOSH, "acosh", "acoshf($0)", "inverse hyperbolic cosine"),
	UNARY(FL_OP_ATANH, "atanh", "atanhf($0)",
	      "inverse hyperbolic tangent"),
	UNARY(FL_OP_FLOOR, "floor", "floorf($0)", "round down"),
	UNARY(FL_OP_CEIL, "ceil", "ceilf($0)", "round up"),
	/* the zero and NaN cases return x itself: sign(+-0) = +-0 */
	UNARY(FL_OP_SIGN, "sign", "$0 > 0.0f ? 1.0f : $0 < 0.0f ? -1.0f : $0",
	      "-1, 0 or 1 by the sign of x"),
	BINARY(FL_OP_ADD, "add", "$0 + $1", "a+b, broadcasting"),
	BINARY(FL_OP_SUB, "sub", "$0 - $1", "a-b, broadcasting"),
	BINARY(FL_OP_MUL, "mul", "$0 * $1", "a*b, broadcasting"),
	BINARY(FL_OP_DIV, "div", "$0 / $1", "a/b, broadcasting"),
	BINARY(FL_OP_MAX, "max", "fl_fmaxf($0, $1)", "max(a,b), broadcasting"),
	BINARY(FL_OP_MIN, "min", "fl_fminf($0, $1)", "min(a,b), broadcasting"),
	BINARY(FL_OP_POW, "pow", "powf($0, $1)", "a^b, broadcasting"),
	{"where", FL_OP_WHERE, FL_CLASS_BINARY, 3, 3, 1, fl_infer_where,
	 fl_eval_where, NULL, NO_ATTRS, "c != 0 ? a : b, broadcasting",
	 EXPR("$0 != 0.0f ? $1 : $2")},
	/* a remainder with a's sign moves to b's by adding b */
	BINARY(FL_OP_MOD, "mod", "(fmodf($0, $1) != 0.0f && (fmodf($0, $1) < "
	       "0.0f) != ($1 < 0.0f) ? fmodf($0, $1) + $1 : fmodf($0, $1))",
	       "remainder with b's sign (Python's %), broadcasting"),
	BINARY(FL_OP_FMOD, "fmod", "fmodf($0, $1)",
	       "remainder with a's sign (C's fmod), broadcasting"),
	/* unsigned integers only (ops_dtype.c); the typed templates say
	 * what a shift by the width or more gives (0, as numpy) */
	TYPED_BINARY(FL_OP_SHIFT_LEFT, "shift_left", "$0 << $1",
		     "a << b, unsigned integers, broadcasting"),
	TYPED_BINARY(FL_OP_SHIFT_RIGHT, "shift_right", "$0 >> $1",
		     "a >> b, unsigned integers, broadcasting"),
	/* results are bool: the interpreter's typed path evaluates them */
	TYPED_BINARY(FL_OP_EQUAL, "equal", "$0 == $1", "a == b, bool"),
	TYPED_BINARY(FL_OP_LESS, "less", "$0 < $1", "a < b, bool"),
	TYPED_BINARY(FL_OP_LESS_EQUAL, "less_equal", "$0 <= $1", "a <= b, bool"),
	TYPED_BINARY(FL_OP_GREATER, "greater", "$0 > $1", "a > b, bool"),
	TYPED_BINARY(FL_OP_GREATER_EQUAL, "greater_equal", "$0 >= $1",
		     "a >= b, bool"),
	TYPED_BINARY(FL_OP_AND, "and", "$0 && $1", "a and b, bool"),
	TYPED_BINARY(FL_OP_OR, "or", "$0 || $1", "a or b, bool"),
	TYPED_BINARY(FL_OP_XOR, "xor", "$0 != $1", "a xor b, bool"),
	{"not", FL_OP_NOT, FL_CLASS_UNARY, 1, 1, 1, fl_infer_unary,
	 fl_eval_typed, NULL, NO_ATTRS, "not a, bool", EXPR("!$0")},
	/* bit tests of the generated file's prologue: x != x would fold to
	 * false under -ffinite-math-only (or -ffast-math) */
	{"is_nan", FL_OP_IS_NAN, FL_CLASS_UNARY, 1, 1, 1, fl_infer_unary,
	 fl_eval_typed, NULL, NO_ATTRS, "x is NaN, bool",
	 EXPR("fl_isnan_bits($0)")},
	{"is_inf", FL_OP_IS_INF, FL_CLASS_UNARY, 1, 1, 1, fl_infer_is_inf,
	 fl_eval_typed, NULL, ATTRS("positive", "negative"),
	 "x is an infinity (\"positive\", \"negative\"), bool",
	 EXPR("fl_isinf_bits($0, 1, 1)"), C_OF(is_inf)},
	REDUCE(FL_OP_REDUCE_SUM, "reduce_sum", "0.0f", "$o + $0",
	       "sum over \"axes\" (kept as 1)"),
	REDUCE(FL_OP_REDUCE_MAX, "reduce_max", "-INFINITY", "fl_fmaxf($o, $0)",
	       "max over \"axes\" (kept as 1)"),
	REDUCE(FL_OP_REDUCE_MIN, "reduce_min", "INFINITY", "fl_fminf($o, $0)",
	       "min over \"axes\" (kept as 1)"),
	REDUCE(FL_OP_REDUCE_PROD, "reduce_prod", "1.0f", "$o * $0",
	       "product over \"axes\" (kept as 1)"),
	OPAQUE(FL_OP_MATMUL, "matmul", matmul, 2, 2,
	       ATTRS("transpose_a", "transpose_b"), ACC("0.0f", "$o + $0 * $1"),
	       "batched a[..,M,K] x b[..,K,N]"),
	OPAQUE(FL_OP_CONV2D, "conv2d", conv2d, 2, 2,
	       ATTRS("stride", "dilation", "groups"),
	       ACC("0.0f", "$o + $0 * $1"),
	       "NCHW convolution, weights [K,C/groups,R,S], no padding"),
	OPAQUE(FL_OP_POOL2D, "pool2d", pool2d, 1, 1,
	       ATTRS("mode", "kernel", "stride", "dilation"), C_OF(pool2d),
	       "NCHW max/avg pooling"),
	OPAQUE(FL_OP_TRANSPOSE, "transpose", transpose, 1, 1, ATTRS("perm"),
	       EXPR("$0"), "permute dims by \"perm\""),
	OPAQUE(FL_OP_RESHAPE, "reshape", reshape, 1, 1, ATTRS("shape"),
	       EXPR("$0"), "same elements, new \"shape\""),
	OPAQUE(FL_OP_CONCAT, "concat", concat, 1, -1, ATTRS("axis"), NO_C,
	       "join inputs along \"axis\""),
	OPAQUE(FL_OP_SLICE, "slice", slice, 1, 1,
	       ATTRS("starts", "ends", "steps"), EXPR("$0"), "strided sub-box"),
	OPAQUE(FL_OP_PAD, "pad", pad, 1, 1, ATTRS("pads", "value"), C_OF(pad),
	       "constant padding"),
	/* gather's body computes its data-dependent index: the backend
	 * writes it whole */
	OPAQUE(FL_OP_GATHER, "gather", gather, 2, 2, ATTRS("axis"), NO_C,
	       "select slices by index"),
	/* indexed ops write their statements whole too (print_c.c) */
	OPAQUE(FL_OP_GATHER_ELEMENTS, "gather_elements", gather_elements, 2, 2,
	       ATTRS("axis"), NO_C, "select elements by an index per element"),
	OPAQUE(FL_OP_SCATTER_ELEMENTS, "scatter_elements", scatter_elements,
	       3, 3, ATTRS("axis", "reduction"), NO_C,
	       "copy of x with elements replaced (or combined) at indices"),
	OPAQUE(FL_OP_BROADCAST_TO, "broadcast_to", broadcast_to, 1, 1,
	       ATTRS("shape"), EXPR("$0"), "stretch to \"shape\""),
	{"custom", FL_OP_CUSTOM, FL_CLASS_CUSTOM, 0, -1, 1, fl_infer_custom,
	 fl_eval_custom, NULL, ATTRS("fn", "shape", "reason", "dtype"),
	 "an op the engine cannot model (\"fn\": cumsum|copy|opaque)", NO_C},
	COMPOUND(FL_OP_SOFTMAX, "softmax", softmax, 1, 1, ATTRS("axis"),
		 "exp(x-max)/sum along \"axis\""),
	COMPOUND(FL_OP_LOG_SOFTMAX, "log_softmax", log_softmax, 1, 1,
		 ATTRS("axis"), "log of softmax, computed stably"),
	COMPOUND(FL_OP_LAYERNORM, "layernorm", layernorm, 1, 3,
		 ATTRS("axis", "eps"), "(x-mean)/sqrt(var+eps)*gamma+beta"),
	COMPOUND(FL_OP_RMSNORM, "rmsnorm", rmsnorm, 1, 2, ATTRS("eps"),
		 "x/sqrt(mean(x^2)+eps)*gamma"),
	COMPOUND(FL_OP_BATCHNORM, "batchnorm", batchnorm, 3, 5, ATTRS("eps"),
		 "inference batch normalisation"),
	COMPOUND(FL_OP_GELU, "gelu", gelu, 1, 1, ATTRS("approximate", "approx"),
		 "Gaussian error linear unit (erf or tanh form)"),
	COMPOUND(FL_OP_SILU, "silu", silu, 1, 1, NO_ATTRS, "x*sigmoid(x)"),
	COMPOUND(FL_OP_LEAKY_RELU, "leaky_relu", leaky_relu, 1, 1,
		 ATTRS("alpha"), "max(x, alpha*x)"),
	COMPOUND(FL_OP_QUANTIZE, "quantize", quantize, 1, 1, ATTRS("scale"),
		 "fake quantisation round(x/scale)*scale"),
	COMPOUND(FL_OP_BIAS_ADD, "bias_add", bias_add, 2, 2, NO_ATTRS,
		 "x + b, b broadcast to x"),
	COMPOUND(FL_OP_DENSE, "dense", dense, 2, 3, ATTRS("transpose_b"),
		 "matmul(x, w) + b"),
	COMPOUND(FL_OP_REDUCE_MEAN, "reduce_mean", reduce_mean, 1, 1,
		 ATTRS("axes"), "mean over \"axes\" (kept as 1)"),
	COMPOUND(FL_OP_VARIANCE, "variance", variance, 1, 1, ATTRS("axes"),
		 "population variance over \"axes\""),
	COMPOUND(FL_OP_ATTENTION, "attention", attention, 3, 3,
		 ATTRS("scale"), "softmax(q k^T * scale) v"),
	COMPOUND(FL_OP_HARD_SIGMOID, "hard_sigmoid", hard_sigmoid, 1, 1,
		 ATTRS("alpha", "beta"), "max(0, min(1, alpha*x + beta))"),
	COMPOUND(FL_OP_HARD_SWISH, "hard_swish", hard_swish, 1, 1, NO_ATTRS,
		 "x * hard_sigmoid(x) (alpha 1/6, beta 1/2)"),
	COMPOUND(FL_OP_ELU, "elu", elu, 1, 1, ATTRS("alpha"),
		 "x > 0 ? x : alpha*(e^x - 1)"),
	COMPOUND(FL_OP_LSTM, "lstm", lstm, 3, 7,
		 ATTRS("direction", "hidden_size", "activations", "clip",
		       "input_forget", "output"),
		 "ONNX LSTM cell over the time loop (gates i,o,f,c)"),
	COMPOUND(FL_OP_GRU, "gru", gru, 3, 5,
		 ATTRS("direction", "hidden_size", "activations", "clip",
		       "linear_before_reset", "output"),
		 "ONNX GRU cell over the time loop (gates z,r,h)"),
	COMPOUND(FL_OP_RNN, "rnn", rnn, 3, 5,
		 ATTRS("direction", "hidden_size", "activations", "clip",
		       "output"),
		 "ONNX simple RNN cell over the time loop"),
};

const fl_op_info *fl_op_info_of(fl_op_kind kind)
{
	if ((int)kind < 0 || kind >= FL_OP_COUNT)
		return NULL;
	return &op_table[kind];
}

const fl_op_info *fl_op_lookup(const char *name)
{
	for (int k = 0; k < FL_OP_COUNT; k++)
		if (strcmp(op_table[k].name, name) == 0)
			return &op_table[k];
	return NULL;
}

const char *fl_op_kind_name(fl_op_kind kind)
{
	const fl_op_info *info = fl_op_info_of(kind);
	return info ? info->name : "?";
}

const char *fl_op_class_name(fl_op_class c)
{
	static const char *const names[] = {
		[FL_CLASS_UNARY] = "unary",	[FL_CLASS_BINARY] = "binary",
		[FL_CLASS_REDUCE] = "reduction", [FL_CLASS_OPAQUE] = "opaque",
		[FL_CLASS_CUSTOM] = "custom",	[FL_CLASS_COMPOUND] = "compound",
	};

	return (int)c >= 0 && (size_t)c < sizeof names / sizeof names[0]
		? names[c] : "?";
}

bool fl_op_is_compound(fl_op_kind kind)
{
	const fl_op_info *info = fl_op_info_of(kind);
	return info && info->cls == FL_CLASS_COMPOUND;
}

fl_op_c fl_op_c_templates(const fl_op *op, char *buf, size_t n)
{
	const fl_op_info *info = fl_op_info_of(op->kind);

	if (!info)
		return (fl_op_c){NULL};
	return info->c_of ? info->c_of(op, buf, n) : info->c;
}

/* Integer forms of the templates whose float form would be wrong on
 * integers: fabsf, the NaN-aware fl_fmaxf/fl_fminf, -INFINITY as an
 * identity, fmodf, and a division or remainder that would trap on zero
 * or on INT_MIN by -1 (the reference gives 0, see ops_typed.c). */
static const char *int_mod_template(fl_op_kind k, fl_dtype dt)
{
	if (fl_dtype_is_unsigned(dt))
		return "($1 == 0 ? 0 : $0 % $1)";
	if (k == FL_OP_FMOD)
		return "($1 == 0 || $1 == -1 ? 0 : $0 % $1)";
	/* Python's %: a remainder with a's sign moves to b's by adding b */
	return "($1 == 0 || $1 == -1 ? 0 : $0 % $1 != 0 && ($0 % $1 < 0) != "
	       "($1 < 0) ? $0 % $1 + $1 : $0 % $1)";
}

/* A shift by the width or more gives 0; the left one shifts in 64 bits
 * (the store truncates), so that no promoted int overflows. */
static const char *shift_template(fl_op_kind k, fl_dtype dt, char *buf,
				  size_t n)
{
	snprintf(buf, n, k == FL_OP_SHIFT_LEFT
		 ? "($1 >= %d ? 0 : (uint64_t)$0 << $1)"
		 : "($1 >= %d ? 0 : $0 >> $1)", 8 * fl_dtype_size(dt));
	return buf;
}

fl_op_c fl_op_c_templates_typed(const fl_op *op, fl_dtype dt, char *buf,
				size_t n)
{
	fl_op_c c = fl_op_c_templates(op, buf, n);

	if (!fl_dtype_is_int(dt))
		return c;
	switch (op->kind) {
	case FL_OP_ABS: c.compute = "($0 < 0 ? -$0 : $0)"; break;
	case FL_OP_RELU: c.compute = "($0 > 0 ? $0 : 0)"; break;
	case FL_OP_DIV: c.compute = "($1 == 0 ? 0 : $0 / $1)"; break;
	case FL_OP_MAX: c.compute = "($0 > $1 ? $0 : $1)"; break;
	case FL_OP_MIN: c.compute = "($0 < $1 ? $0 : $1)"; break;
	case FL_OP_MOD: case FL_OP_FMOD:
		c.compute = int_mod_template(op->kind, dt);
		break;
	case FL_OP_SHIFT_LEFT: case FL_OP_SHIFT_RIGHT:
		c.compute = shift_template(op->kind, dt, buf, n);
		break;
	case FL_OP_REDUCE_SUM: c.init = "0"; break;
	case FL_OP_REDUCE_MAX:
		c.init = fl_dtype_min_name(dt);
		c.update = "($0 > $o ? $0 : $o)";
		break;
	case FL_OP_REDUCE_MIN:
		c.init = fl_dtype_max_name(dt);
		c.update = "($0 < $o ? $0 : $o)";
		break;
	default: break;
	}
	return c;
}

/* The 16-bit floats in generated code are uint16_t bits (half_rt.c):
 * a cast converts through f32, and pad's value is stored as the bits of
 * the value rounded to the type.  The other ops that take them only
 * move the bits (ops_dtype.c). */
const char *fl_op_c_half_template(const fl_op *op, fl_dtype from,
				  fl_dtype to, char *buf, size_t n)
{
	const char *load = fl_dtype_load_fn(from), *store = fl_dtype_store_fn(to);
	double v = 0.0;

	if (op->kind == FL_OP_PAD && store) {
		fl_attr_float(&op->attrs, "value", 0.0, &v, NULL);
		snprintf(buf, n, "(uint16_t)0x%04x",
			 (unsigned)fl_dtype_half_bits(to, (float)v));
		return buf;
	}
	if (op->kind != FL_OP_CAST || (!load && !store))
		return NULL;
	if (load && store)
		snprintf(buf, n, "%s(%s($0))", store, load);
	else if (load)
		snprintf(buf, n, "%s($0)", load);
	else
		snprintf(buf, n, "%s((float)$0)", store);
	return buf;
}

fl_dtype fl_op_operand_dtype(const fl_graph *g, const fl_op *op)
{
	int k = op->kind == FL_OP_WHERE ? 1 : 0;

	return op->n_in > k ? g->tensors[op->in[k]].dtype : FL_F32;
}
