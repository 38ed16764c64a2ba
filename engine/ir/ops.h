/* The op library: every op the graph format knows, with shape inference,
 * a reference implementation, (for compound ops) the expansion into
 * primitives and (for primitives) the C templates of their scalar bodies
 * (fl_op_c).  One table row per op (engine/ir/ops.c); implementations live
 * in ops_prim.c (primitives) and ops_compound.c (compound ops).
 *
 * Attribute conventions (all optional unless marked *required*; axes may be
 * negative, counted from the end):
 *
 *   unary elementwise  neg abs exp log sqrt rsqrt recip tanh sigmoid relu
 *                      erf square copy round cast not
 *                      sin cos tan asin acos atan sinh cosh asinh acosh
 *                      atanh floor ceil sign  (libm's; sign: -1, 0 or 1,
 *                      NaN stays NaN)
 *                      (cast: "dtype" f32|bool|i8|u8|i32|i64, default
 *                      f32; float to integer truncates toward zero,
 *                      anything to bool is x != 0; not: bool -> bool)
 *   binary, numpy broadcasting   add sub mul div max min pow
 *   comparisons        equal less less_equal greater greater_equal: two
 *                      inputs of one dtype, broadcasting, bool result
 *   logic              and or xor: bool inputs, broadcasting, bool result
 *   is_nan(x), is_inf(x)  f32 -> bool, tested on the float's bits (so
 *                      that no compiler flag folds them away); is_inf's
 *                      "positive" and "negative" (default 1 both) say
 *                      which infinities count
 *   where(c, a, b)     c != 0 ? a : b, the three broadcast together; c of
 *                      any dtype (bool from ONNX), a and b of one dtype
 *   mod(a, b), fmod(a, b)  remainders, broadcasting: fmod's has a's sign
 *                      (C's fmodf), mod's b's (Python's %; ONNX Mod with
 *                      fmod=0); b = 0 gives NaN
 *   reduce_sum/max/min/prod  "axes": [..] (default: all axes); reduced
 *                      dims are kept with extent 1
 *
 * Element types (docs/types.md): every tensor has a dtype, f32 unless
 * said otherwise.  Besides cast, comparisons, logic and where, these
 * accept bool and integer tensors: neg abs relu square copy add sub mul
 * div max min (integers, not bool; div truncates toward zero, x/0 = 0),
 * reduce_sum/max/min (integers), and the data movement ops transpose
 * reshape concat slice pad broadcast_to custom("copy") and the data of
 * gather, gather_elements and scatter_elements (any dtype; a scatter's
 * reduction other than none takes numbers, not bool) and their indices
 * (integers or integral floats).  Every other op
 * computes in f32 and refuses other inputs: cast them first.
 *   matmul(a, b)       a [..., M, K], b [..., K, N] (rank >= 2 both, batch
 *                      dims broadcast); "transpose_a", "transpose_b" bools
 *                      swap the last two dims of that operand
 *   conv2d(x, w)       x [N, C, H, W], w [K, C/groups, R, S]; "stride"
 *                      [sh, sw] (default [1,1]), "dilation" [dh, dw]
 *                      (default [1,1]), "groups" (default 1); no implicit
 *                      padding: out [N, K, (H-dh*(R-1)-1)/sh+1, ...]
 *   pool2d(x)          x [N, C, H, W]; "mode" "max"|"avg" (default max),
 *                      "kernel" [kh, kw] *required*, "stride" (default =
 *                      kernel), "dilation" [dh, dw] (default [1,1]): the
 *                      taps' spacing, as conv2d's
 *   transpose(x)       "perm" *required*, a permutation of 0..rank-1
 *   reshape(x)         "shape" *required*, one entry may be -1
 *   concat(x1..xn)     "axis" (default 0); other dims must agree
 *   slice(x)           "starts", "ends" *required* (one per dim, negative
 *                      counts from the end, ends clamp to the extent),
 *                      "steps" (default 1s, >= 1)
 *   pad(x)             "pads" *required*: 2*rank values >= 0, all the
 *                      leading pads then all the trailing pads (ONNX
 *                      order); "value" (default 0)
 *   gather(x, idx)     "axis" (default 0); out = x.shape[:axis] + idx.shape
 *                      + x.shape[axis+1:]; idx holds integral floats, an
 *                      index outside [0, extent) is clamped into it
 *   gather_elements(x, idx)  "axis" (default 0); idx of x's rank, each
 *                      dim but the axis no larger than x's; out has
 *                      idx's shape, out[i] = x[i with i_axis = idx[i]];
 *                      a negative index counts from the end, then
 *                      anything outside [0, extent) is clamped into it
 *   scatter_elements(x, idx, upd)  "axis" (default 0), "reduction"
 *                      none|add|mul|max|min (default none); idx and upd
 *                      of one shape, as gather_elements' idx; out = x,
 *                      then for each element j of upd in row-major
 *                      order out[j with j_axis = idx[j]] becomes upd[j]
 *                      (none: the last write wins) or combines with it;
 *                      indices as gather_elements'
 *   broadcast_to(x)    "shape" *required*; numpy rule
 *   custom(x...)       an op the engine cannot model (fusion treats it as a
 *                      wall); "fn": "cumsum" (inclusive prefix sum along the
 *                      last axis, default) or "copy", one input, out shape
 *                      = x's; or "opaque": any number of inputs, out shape
 *                      "shape" *required*, no implementation (imported
 *                      operators fuselab does not know: the graph loads,
 *                      partitions and shows, but cannot be run);
 *                      "reason" (optional) says why it is opaque
 *
 * Compound ops (opened into primitives by the partition stage):
 *   softmax(x), log_softmax(x)        "axis" (default -1)
 *   layernorm(x[, gamma[, beta]])     normalise over "axis" (default -1)
 *                                     and the dims after it; "eps" 1e-5;
 *                                     gamma, beta broadcast to x
 *   rmsnorm(x[, gamma])               over the last axis; "eps" 1e-6
 *   batchnorm(x, mean, var[, gamma[, beta]])  inference form; every
 *                                     parameter must broadcast to x (use
 *                                     [C,1,1] for NCHW); "eps" 1e-5
 *   gelu(x)                           "approximate" (ONNX, PyTorch):
 *                                     "none" (erf form, default) | "tanh";
 *                                     "approx" is an alias, "erf" = "none"
 *   silu(x)                           x * sigmoid(x)
 *   leaky_relu(x)                     max(x, alpha*x); "alpha" 0.01
 *   quantize(x)                       fake quantisation round(x/s)*s;
 *                                     "scale" (default 1/127)
 *   bias_add(x, b)                    x + b, b broadcasts to x
 *   dense(x, w[, b])                  matmul(x, w) + b; "transpose_b"
 *   reduce_mean(x), variance(x)       "axes" as the reductions
 *                                     (variance: population, divides by n)
 *   attention(q, k, v)                softmax(q k^T * scale) v with q [..,S,D],
 *                                     k [..,T,D], v [..,T,E]; "scale"
 *                                     (default 1/sqrt(D))
 *   hard_sigmoid(x)                   max(0, min(1, alpha*x + beta));
 *                                     "alpha" 0.2, "beta" 0.5 (ONNX)
 *   hard_swish(x)                     x * hard_sigmoid(x) with alpha 1/6
 *   elu(x)                            x > 0 ? x : alpha*(e^x - 1);
 *                                     "alpha" 1
 *
 * Recurrent cells (ONNX's LSTM, GRU, RNN; ops_recurrent.c), opened by
 * unrolling the time loop: per step matmuls of x_t with W^T and h_{t-1}
 * with R^T, bias adds, the gates' nonlinearities and the cell update.
 * x [T,B,I] (time first), D = 2 when bidirectional else 1, G gates:
 *   lstm(x, w, r[, b[, h0[, c0[, p]]]])  G = 4 in ONNX order i,o,f,c;
 *                                     w [D,G*H,I], r [D,G*H,H], b
 *                                     [D,2*G*H] (Wb then Rb), h0 and c0
 *                                     [D,B,H], p [D,3*H] peepholes i,o,f
 *   gru(x, w, r[, b[, h0]])           G = 3, order z,r,h;
 *                                     "linear_before_reset" (false)
 *   rnn(x, w, r[, b[, h0]])           G = 1, h = f(x W^T + h R^T + b)
 *   common: "direction" "forward" (default) | "reverse" |
 *   "bidirectional"; "hidden_size" (optional, must match r); "output"
 *   "y" (default: every step's h, [T,D,B,H]) | "h" (last h, [D,B,H]) |
 *   "c" (lstm: last cell state, [D,B,H]); "activations" comma-separated
 *   names among sigmoid, tanh, relu, one set per direction (defaults
 *   "sigmoid,tanh,tanh", "sigmoid,tanh", "tanh"); "clip" (> 0, bounds
 *   the gates' pre-activations); lstm's "input_forget" (false: f = 1-i
 *   when true).  A missing optional input is zero.
 */
#ifndef FL_OPS_H
#define FL_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "fl_error.h"
#include "shape.h"

typedef enum fl_op_kind {
	/* unary elementwise */
	FL_OP_NEG, FL_OP_ABS, FL_OP_EXP, FL_OP_LOG, FL_OP_SQRT, FL_OP_RSQRT,
	FL_OP_RECIP, FL_OP_TANH, FL_OP_SIGMOID, FL_OP_RELU, FL_OP_ERF,
	FL_OP_SQUARE, FL_OP_COPY, FL_OP_ROUND, FL_OP_CAST,
	FL_OP_SIN, FL_OP_COS, FL_OP_TAN, FL_OP_ASIN, FL_OP_ACOS, FL_OP_ATAN,
	FL_OP_SINH, FL_OP_COSH, FL_OP_ASINH, FL_OP_ACOSH, FL_OP_ATANH,
	FL_OP_FLOOR, FL_OP_CEIL, FL_OP_SIGN,
	/* binary / ternary with broadcasting */
	FL_OP_ADD, FL_OP_SUB, FL_OP_MUL, FL_OP_DIV, FL_OP_MAX, FL_OP_MIN,
	FL_OP_POW, FL_OP_WHERE, FL_OP_MOD, FL_OP_FMOD, FL_OP_SHIFT_LEFT,
	FL_OP_SHIFT_RIGHT,
	/* comparisons and logic: bool results (docs/types.md) */
	FL_OP_EQUAL, FL_OP_LESS, FL_OP_LESS_EQUAL, FL_OP_GREATER,
	FL_OP_GREATER_EQUAL, FL_OP_AND, FL_OP_OR, FL_OP_XOR, FL_OP_NOT,
	FL_OP_IS_NAN, FL_OP_IS_INF,
	/* reductions */
	FL_OP_REDUCE_SUM, FL_OP_REDUCE_MAX, FL_OP_REDUCE_MIN, FL_OP_REDUCE_PROD,
	/* opaque */
	FL_OP_MATMUL, FL_OP_CONV2D, FL_OP_POOL2D, FL_OP_TRANSPOSE,
	FL_OP_RESHAPE, FL_OP_CONCAT, FL_OP_SLICE, FL_OP_PAD, FL_OP_GATHER,
	FL_OP_GATHER_ELEMENTS, FL_OP_SCATTER_ELEMENTS,
	FL_OP_BROADCAST_TO, FL_OP_CUSTOM,
	/* compound */
	FL_OP_SOFTMAX, FL_OP_LOG_SOFTMAX, FL_OP_LAYERNORM, FL_OP_RMSNORM,
	FL_OP_BATCHNORM, FL_OP_GELU, FL_OP_SILU, FL_OP_LEAKY_RELU,
	FL_OP_QUANTIZE, FL_OP_BIAS_ADD, FL_OP_DENSE, FL_OP_REDUCE_MEAN,
	FL_OP_VARIANCE, FL_OP_ATTENTION, FL_OP_HARD_SIGMOID, FL_OP_HARD_SWISH,
	FL_OP_ELU,
	FL_OP_LSTM, FL_OP_GRU, FL_OP_RNN,
	FL_OP_COUNT
} fl_op_kind;

typedef enum fl_op_class {
	FL_CLASS_UNARY,
	FL_CLASS_BINARY,	/* includes where */
	FL_CLASS_REDUCE,
	FL_CLASS_OPAQUE,
	FL_CLASS_CUSTOM,	/* cannot be modelled: splits clusters */
	FL_CLASS_COMPOUND,
} fl_op_class;

/* "unary", "binary", "reduction", "opaque", "custom", "compound": the
 * op library's class, as --list-ops, --check and the TUI print it (not
 * the E/B/R/O type partition computes, classify.h). */
const char *fl_op_class_name(fl_op_class c);

/* A tensor buffer as the reference implementations see it, row-major:
 * f32 values in data, every other dtype's values exactly in ints (bool
 * 0/1, wrapped to the type's range).  A zeroed dtype is f32, so
 * (fl_buf){shape, data} is a float buffer. */
typedef struct fl_buf {
	fl_shape shape;
	float *data;
	fl_dtype dtype;
	int64_t *ints;
} fl_buf;

struct fl_op;
struct fl_graph;

/* Output shapes of op from the input shapes; validates arity-independent
 * things (attrs, broadcasting, extents).  Messages are relative to the op:
 * "in[1]: ...", "attrs.axes: ...". */
typedef int (*fl_infer_fn)(const struct fl_op *op, const fl_shape *in,
			   fl_shape *out, fl_error *err);

/* Reference implementation: out[k].data is allocated with out[k].shape
 * (from inference) and must be filled completely.  Only called on ops that
 * passed inference. */
typedef void (*fl_eval_fn)(const struct fl_op *op, const fl_buf *in,
			   fl_buf *out);

/* Runs op's reference implementation: the op table's (f32 buffers) or,
 * when any buffer is typed, fl_eval_typed (ops_typed.c).  Every caller
 * evaluating ops goes through here. */
void fl_op_eval(const struct fl_op *op, const fl_buf *in, fl_buf *out);
void fl_eval_typed(const struct fl_op *op, const fl_buf *in, fl_buf *out);

/* The output dtypes of op from its input dtypes (ops_dtype.c): cast
 * gives its "dtype", comparisons and logic bool, where its branches'
 * type, gather its data's, data movement and integer-capable arithmetic
 * their inputs' common type; every other op computes in f32 and refuses
 * other inputs.  Messages are relative to the op, as inference's. */
int fl_op_infer_dtype(const struct fl_op *op, const fl_dtype *in,
		      fl_dtype *out, fl_error *err);

/* Appends primitives computing compound op `op` (which belongs to a graph
 * whose tensors were copied to `dst` with the same indices) to dst,
 * reading op->in[] and writing op->out[]. */
typedef int (*fl_expand_fn)(struct fl_graph *dst, const struct fl_op *op,
			    fl_error *err);

/* The scalar body of an op's statements as the C backend writes it: one C
 * expression template per statement role of the op's polyhedral
 * description (fl_stmt_role in poly.h).  "$<k>" stands for the element of
 * op input k that the statement reads, "$o" for the element of the op's
 * own output that it reads (the running value of a reduction).  A
 * template may call <math.h> functions and the generated file's
 * fl_fmaxf/fl_fminf (fmaxf/fminf's NaN rule).  NULL where the op has no
 * statement of that role; copy statements (concat, pad) copy their input
 * for every op and need no template. */
typedef struct fl_op_c {
	const char *compute;	/* out = f(inputs): elementwise, data movement */
	const char *init;	/* out = identity, before the updates */
	const char *update;	/* out = $o (+) f(inputs) */
	const char *finalize;	/* out = g($o), after the updates */
	const char *fill;	/* out = a constant */
} fl_op_c;

/* The templates of an op whose body depends on its attributes (pool2d's
 * mode and window, pad's value); any text it formats goes into buf (n
 * bytes, 32 are enough).  Only called on ops that passed inference. */
typedef fl_op_c (*fl_op_c_fn)(const struct fl_op *op, char *buf, size_t n);

typedef struct fl_op_info {
	const char *name;	/* as written in the graph file */
	fl_op_kind kind;
	fl_op_class cls;
	int min_in, max_in;	/* max_in -1: any number */
	int n_out;
	fl_infer_fn infer;
	fl_eval_fn eval;
	fl_expand_fn expand;	/* compound only */
	const char *const *attrs;	/* known attribute names, NULL-terminated */
	const char *doc;	/* one line for --help-ops and the man page */
	fl_op_c c;		/* C templates of the scalar body; primitives */
	fl_op_c_fn c_of;	/* instead of c, when attributes decide */
} fl_op_info;

const fl_op_info *fl_op_info_of(fl_op_kind kind);

/* A custom op's function ("fn"); FL_CUSTOM_NONE for any other op. */
typedef enum fl_custom_fn {
	FL_CUSTOM_NONE,
	FL_CUSTOM_CUMSUM,
	FL_CUSTOM_COPY,
	FL_CUSTOM_OPAQUE,
} fl_custom_fn;

fl_custom_fn fl_custom_fn_of(const struct fl_op *op);

/* Whether the interpreter and the backends can compute op: every op but
 * an opaque custom op. */
bool fl_op_computable(const struct fl_op *op);
const fl_op_info *fl_op_lookup(const char *name);	/* NULL if unknown */
const char *fl_op_kind_name(fl_op_kind kind);
bool fl_op_is_compound(fl_op_kind kind);

/* The C templates of op's scalar body (from its table row; formatted
 * into buf, n bytes, when its attributes decide them). */
fl_op_c fl_op_c_templates(const struct fl_op *op, char *buf, size_t n);

/* The templates of op computing on operands of dtype dt: the float
 * ones, with integer forms where those would be wrong on integers (abs,
 * max, min, a division by zero, the reductions' identities).  C's
 * conversions on assignment do cast's work. */
fl_op_c fl_op_c_templates_typed(const struct fl_op *op, fl_dtype dt,
				char *buf, size_t n);

/* Indexed ops (ops_index.c): gather_elements and scatter_elements.
 * fl_index_axis reads op's "axis" (default 0) for data of rank `rank`,
 * normalised; fl_scatter_reduction its "reduction"; fl_index_resolve is
 * the element an index value v picks along an axis of `extent`: floored,
 * NaN reads 0, a negative value counts from the end, the rest clamped
 * into [0, extent) -- the rule the generated code follows too. */
typedef enum fl_scatter_red {
	FL_SCATTER_NONE, FL_SCATTER_ADD, FL_SCATTER_MUL, FL_SCATTER_MAX,
	FL_SCATTER_MIN,
} fl_scatter_red;

int fl_index_axis(const struct fl_op *op, int rank, int *axis,
		  fl_error *err);
int fl_scatter_reduction(const struct fl_op *op, fl_scatter_red *r,
			 fl_error *err);
int64_t fl_index_resolve(double v, int64_t extent);

/* The C template of a statement of op from dtype `from` (its input) to
 * `to` (its output) where a 16-bit float is involved and the op's own
 * template would be wrong on uint16_t bits: a cast (through f32) or
 * pad's fill (the value's bits); NULL otherwise.  buf holds it. */
const char *fl_op_c_half_template(const struct fl_op *op, fl_dtype from,
				  fl_dtype to, char *buf, size_t n);

/* The dtype op computes in: its first input's (where: its branches'). */
fl_dtype fl_op_operand_dtype(const struct fl_graph *g,
			     const struct fl_op *op);

#endif
