/* Internal to the ONNX importer (onnx_import.c, onnx_ops.c, onnx_fold.c):
 * the state of one import and the helpers the per-operator mappings use.
 * Nothing outside engine/ir/onnx_*.c includes this header but the tests
 * of its helpers.
 *
 * Every ONNX value name is bound to one of two things: a tensor of the
 * graph (an input, or an op's output), with its ONNX element type, or a
 * value known at import (initializers, Constant nodes, folded shape
 * arithmetic).  A known float value becomes a const tensor only when an
 * op reads it as data, so integer initializers that only feed shape
 * inputs never become tensors. */
#ifndef FL_ONNX_IMPORT_IMPL_H
#define FL_ONNX_IMPORT_IMPL_H

#include "onnx_import.h"
#include "onnx_tensor.h"

typedef struct fl_onnx_binding {
	char *name;
	int tensor;		/* graph tensor, or -1 */
	int dtype;		/* ONNX element type */
	fl_onnx_values *known;	/* value known at import, or NULL */
} fl_onnx_binding;

typedef struct fl_onnx_ctx {
	fl_graph *g;
	const char *base_dir;
	int64_t opset;		/* version of the default domain */
	fl_onnx_info *info;
	int n_bind, cap_bind;
	fl_onnx_binding *bind;
	int *hash;		/* open addressing over bind, cap_hash slots */
	int cap_hash;
	/* the node being imported */
	const Onnx__NodeProto *node;
	const Onnx__GraphProto *graph;
	int node_index;
	char origin[256];	/* node name, or "<OpType>_<index>" */
	int n_emitted;		/* ops added for this node so far */
	int first_op;		/* the node's ops start here (the import
				 * summary counts them for its op type) */
	/* set by fl_onnx_cannot_model: the mapping refused a form fuselab
	 * cannot model, and the node becomes opaque instead */
	bool cannot_model;
	char reason[96];	/* "mode cubic": why, for the summary */
	const Onnx__GraphProto *main_graph;	/* the model's graph */
	int depth;		/* If branches inlined around the node */
	/* given values (onnx_bind.c), per graph input of main_graph (NULL
	 * when none, or when nothing is given): bound[k] when input k is
	 * taken as a constant in this import */
	const fl_onnx_values **given;
	const bool *bound;
	/* the values ops wanted known at import and found computed at run
	 * time (names; recorded only when values are given) */
	char **wanted;
	int n_wanted, cap_wanted;
	/* while a half-precision node's float copy is mapped (onnx_half.c):
	 * the node itself, whose output names the copy's stand for */
	const Onnx__NodeProto *unwrapped;
} fl_onnx_ctx;

/* A per-operator mapping: adds the node's ops (or binds known values) and
 * binds every output it produces.  Errors name the problem only; the
 * caller prefixes the node. */
typedef int (*fl_onnx_map_fn)(fl_onnx_ctx *c, fl_error *err);

/* onnx_ops.c: the mapping of op_type (default domain), or NULL. */
fl_onnx_map_fn fl_onnx_mapping(const char *op_type);

/* onnx_ops.c: matmul of in[0] and in[1], each transposed as the node's
 * transA and transB say (Gemm, com.microsoft's FusedMatMul). */
int fl_onnx_emit_trans_matmul(fl_onnx_ctx *c, const int *in, int out,
			      fl_error *err);

/* onnx_ops.c and onnx_sliding.c, shared with the quantized operators
 * (onnx_quant.c): ONNX's MatMul of tensors a and b (numpy's rules for
 * 1-D operands and batch dims), and Conv of x by weights w (1 to 3
 * spatial dims) with bias b (-1: none) under the node's own Conv
 * attributes (pads, strides, dilations, group,
 * auto_pad); the result into out (0: the node's output 0, -1: a new
 * intermediate).  -1 at once when an operand is -1, so calls chain. */
int fl_onnx_emit_matmul(fl_onnx_ctx *c, int a, int b, int out, fl_error *err);
int fl_onnx_emit_conv(fl_onnx_ctx *c, int x, int w, int b, int out,
		      fl_error *err);

/* onnx_quant.c: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv; NULL for the
 * other op types. */
fl_onnx_map_fn fl_onnx_quant_mapping(const char *op_type);
/* onnx_ops.c: Cast of the node's input 0 to ONNX element type `to`
 * into its output 0 (Cast, CastLike). */
int fl_onnx_cast_node(fl_onnx_ctx *c, int to, fl_error *err);
/* onnx_ops_index.c: IsNaN, IsInf, CastLike, OneHot, Compress, TopK,
 * ReverseSequence, then onnx_linalg.c's (Det, Einsum), or NULL;
 * fl_onnx_mapping_more falls back on it. */
fl_onnx_map_fn fl_onnx_mapping_index(const char *op_type);
fl_onnx_map_fn fl_onnx_mapping_linalg(const char *op_type);
/* onnx_ops_more.c: the mappings of issue 29's operators (Mod, Trilu,
 * CumSum, ...), or NULL; fl_onnx_mapping falls back on it. */
fl_onnx_map_fn fl_onnx_mapping_more(const char *op_type);
/* onnx_ops_more.c: a const tensor of shape s holding numel(s) floats of
 * data (copied), named after the node and `what`; -1 on error. */
int fl_onnx_const_tensor(fl_onnx_ctx *c, const char *what, const fl_shape *s,
			 const float *data, fl_error *err);
/* onnx_resize.c: Resize and Upsample. */
int fl_onnx_map_resize(fl_onnx_ctx *c, fl_error *err);
/* onnx_gather_nd.c: GatherND with indices known at import (the others
 * go to onnx_indexed.c's). */
int fl_onnx_map_gather_nd(fl_onnx_ctx *c, fl_error *err);
/* onnx_indexed.c: GatherElements, ScatterElements, Scatter, ScatterND
 * (the mapping of op_type, or NULL; fl_onnx_mapping_more falls back on
 * it), and GatherND with indices computed at run time. */
fl_onnx_map_fn fl_onnx_mapping_indexed(const char *op_type);
int fl_onnx_map_gather_nd_dynamic(fl_onnx_ctx *c, fl_error *err);
/* onnx_loss.c: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss. */
int fl_onnx_map_nll_loss(fl_onnx_ctx *c, fl_error *err);
int fl_onnx_map_softmax_cross_entropy(fl_onnx_ctx *c, fl_error *err);
/* onnx_half.c: the ONNX type (float16 or bfloat16) of the node's first
 * half-precision input when the node computes on it, else 0 (none, or
 * a node that takes the 16-bit types as they are: Cast, data movement).
 * fl_onnx_map_in_f32 then runs `map` on the node's float version: the
 * inputs cast up, the float results cast back to type `half`. */
int fl_onnx_half_input(fl_onnx_ctx *c);
int fl_onnx_map_in_f32(fl_onnx_ctx *c, fl_onnx_map_fn map, int half,
		       fl_error *err);

/* onnx_conv_transpose.c: ConvTranspose (1-D, 2-D). */
int fl_onnx_map_conv_transpose(fl_onnx_ctx *c, fl_error *err);

/* onnx_norm.c: LayerNormalization (with its Mean and InvStdDev),
 * BatchNormalization (and its training mode), InstanceNormalization and
 * Dropout (with its mask). */
int fl_onnx_map_layernorm(fl_onnx_ctx *c, fl_error *err);
int fl_onnx_map_batchnorm(fl_onnx_ctx *c, fl_error *err);
int fl_onnx_map_instancenorm(fl_onnx_ctx *c, fl_error *err);
int fl_onnx_map_dropout(fl_onnx_ctx *c, fl_error *err);

/* onnx_sliding.c: Conv, MaxPool (with its Indices), AveragePool over 1
 * to 3 spatial dims, and the global pools. */
int fl_onnx_map_conv(fl_onnx_ctx *c, fl_error *err);
int fl_onnx_map_pool(fl_onnx_ctx *c, fl_error *err);
int fl_onnx_map_global_pool(fl_onnx_ctx *c, fl_error *err);

/* onnx_recurrent.c: LSTM, GRU and RNN. */
int fl_onnx_map_lstm(fl_onnx_ctx *c, fl_error *err);
int fl_onnx_map_gru(fl_onnx_ctx *c, fl_error *err);
int fl_onnx_map_rnn(fl_onnx_ctx *c, fl_error *err);

/* onnx_msft.c: the mapping of op_type in domain com.microsoft, or NULL. */
fl_onnx_map_fn fl_onnx_msft_mapping(const char *op_type);

/* onnx_pad.c: Pad's modes reflect (!reflect: edge) of graph tensor x by
 * pads (ONNX order, 2 * rank values >= 0) into the node's output 0. */
int fl_onnx_pad_border(fl_onnx_ctx *c, int x, const int64_t *pads, int rank,
		       bool reflect, fl_error *err);

/* onnx_control.c: If; a condition known at import inlines the chosen
 * branch, any other becomes opaque.  Errors name the problem only. */
int fl_onnx_import_if(fl_onnx_ctx *c, fl_error *err);

/* onnx_import.c: imports the nodes of sub-graph gp (an If branch) in
 * place, its initializers bound first; outer names stay visible.  The
 * node being imported is saved and restored around it. */
int fl_onnx_import_subgraph(fl_onnx_ctx *c, const Onnx__GraphProto *gp,
			    fl_error *err);

/* For a form of an operator fuselab cannot model (an attribute value,
 * a mode): sets err to "<reason> is not supported" and marks the node so
 * that the driver undoes what the mapping added and makes the node an
 * opaque `custom` op instead of failing.  reason is short ("mode
 * reflect"); it also shows in the import's summary line.  Returns -1. */
int fl_onnx_cannot_model(fl_onnx_ctx *c, fl_error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* onnx_custom.c: a node with no mapping, as opaque `custom` ops (one per
 * output read later); errors name the problem only. */
int fl_onnx_import_custom(fl_onnx_ctx *c, fl_error *err);
/* Whether the node's output `name` is read by a later node (at any
 * depth of sub-graphs) or is a graph output. */
bool fl_onnx_output_read(const fl_onnx_ctx *c, const char *name);

/* The value info the model declares for value `name` (value_info or a
 * graph output), or NULL; its shape, *dynamic set when a dim has no value
 * (that dim is -1). */
const Onnx__ValueInfoProto *fl_onnx_declared_value(const Onnx__GraphProto *gp,
						   const char *name);
int fl_onnx_declared_shape(const Onnx__ValueInfoProto *vi, fl_shape *s,
			   bool *dynamic, fl_error *err);

/* onnx_bind.c: given values (--bind-inputs, --bind) for the graph
 * inputs of gp: *given receives one entry per gp->input (NULL where
 * none is given; the array NULL when nothing is), each checked against
 * the input's declared element type and shape.  Errors read "<file>:
 * <what>". */
int fl_onnx_given_resolve(const Onnx__GraphProto *gp,
			  const fl_onnx_import_opts *o,
			  const fl_onnx_values ***given, fl_error *err);
/* onnx_bind.c: binds the given value of every input marked bound as a
 * known value (a copy), before the graph inputs are made. */
int fl_onnx_bind_given(fl_onnx_ctx *c, fl_error *err);
/* onnx_bind.c: records that the node's input k must be known at import
 * and is not (nothing when no value is given). */
void fl_onnx_want_known(fl_onnx_ctx *c, int k);
/* onnx_bind.c: marks in bound (one per main-graph input) the inputs
 * with a given value, not bound yet, that a wanted value is computed
 * from; how many. */
int fl_onnx_bind_wanted(const fl_onnx_ctx *c, bool *bound);
/* onnx_bind.c: the bound inputs into info->bound; -1 out of memory. */
int fl_onnx_note_bound(fl_onnx_info *info, const Onnx__GraphProto *gp,
		       const bool *bound);
/* onnx_window.c: whether op_type is HannWindow, HammingWindow or
 * BlackmanWindow, and its values for the node's known size. */
bool fl_onnx_is_window(const char *op_type);
int fl_onnx_fold_window(fl_onnx_ctx *c, fl_onnx_values **out, fl_error *err);

/* onnx_fold.c: when every input of the node is known at import and its
 * op type is one the folder computes, binds its outputs to known values
 * and returns 1; 0 when it does not apply; -1 on error. */
int fl_onnx_fold_node(fl_onnx_ctx *c, fl_error *err);

/* A name for a tensor (tensor set) or op the importer invents, in buf
 * (n >= 64 bytes): base itself when it is free, else "<base>_<k>" for the
 * first free k >= 2 ("value" or "op" when base is NULL or empty).  A
 * tensor name is free when no tensor of the graph, no bound value and no
 * output of node c->node_index or later of the ONNX graph (c->graph, may
 * be NULL) has it.  base may be buf itself.  Never empty and never taken,
 * so every import has unique names. */
void fl_onnx_unique_name(fl_onnx_ctx *c, char *buf, size_t n,
			 const char *base, bool tensor);

/* Bindings (onnx_import.c). */
fl_onnx_binding *fl_onnx_lookup(fl_onnx_ctx *c, const char *name);
int fl_onnx_bind_tensor(fl_onnx_ctx *c, const char *name, int tensor,
			int dtype, fl_error *err);
/* Takes ownership of *v (freed on error too). */
int fl_onnx_bind_known(fl_onnx_ctx *c, const char *name, fl_onnx_values *v,
		       fl_error *err);

/* The node's inputs. */
int fl_onnx_n_inputs(const fl_onnx_ctx *c);
bool fl_onnx_has_input(const fl_onnx_ctx *c, int k);
/* Binding of input k; error when it is missing or was never produced. */
fl_onnx_binding *fl_onnx_input(fl_onnx_ctx *c, int k, fl_error *err);
/* Known value of input k, or NULL (no error) when not known. */
const fl_onnx_values *fl_onnx_input_known(fl_onnx_ctx *c, int k);
/* Graph tensor of float input k (a known value becomes a const tensor);
 * a non-float tensor on the data path is an error. */
int fl_onnx_data(fl_onnx_ctx *c, int k, fl_error *err);
/* Like fl_onnx_data, but integer and bool tensors are accepted (gather
 * indices, where's condition: fuselab keeps them as integral floats). */
int fl_onnx_data_any(fl_onnx_ctx *c, int k, fl_error *err);
/* Integer values of input k, which must be known at import (else the
 * node cannot be modelled, as with fl_onnx_cannot_model); at most max. */
int fl_onnx_input_ints(fl_onnx_ctx *c, int k, int64_t *out, int max,
		       int *n, fl_error *err);
/* Shape of the graph tensor (or known value) of input k. */
int fl_onnx_input_dims(fl_onnx_ctx *c, int k, fl_shape *s, fl_error *err);

/* The node's attributes (defaults when absent). */
const Onnx__AttributeProto *fl_onnx_attr(const fl_onnx_ctx *c,
					 const char *name);
int64_t fl_onnx_attr_int(const fl_onnx_ctx *c, const char *name,
			 int64_t dflt);
float fl_onnx_attr_float(const fl_onnx_ctx *c, const char *name, float dflt);
/* *n = -1 when absent. */
int fl_onnx_attr_ints(const fl_onnx_ctx *c, const char *name, int64_t *out,
		      int max, int *n, fl_error *err);
/* NUL-terminated copy into buf (dflt when absent). */
const char *fl_onnx_attr_string(const fl_onnx_ctx *c, const char *name,
				const char *dflt, char *buf, size_t n);

/* Adds one op reading in[0..n_in-1] (attributes copied from attrs, may be
 * NULL) and infers its shape.  Its output is the node's output `out`
 * (bound to it) or, with out = -1, a new intermediate tensor.  Returns
 * the output tensor, or -1. */
int fl_onnx_emit(fl_onnx_ctx *c, fl_op_kind kind, const int *in, int n_in,
		 const fl_attrs *attrs, int out, fl_error *err);
/* Shorthands. */
int fl_onnx_emit1(fl_onnx_ctx *c, fl_op_kind kind, int x, int out,
		  fl_error *err);
int fl_onnx_emit2(fl_onnx_ctx *c, fl_op_kind kind, int a, int b, int out,
		  fl_error *err);

/* Sets err to "out of memory"; returns -1. */
int fl_onnx_oom(fl_error *err);

/* fl_onnx_emit with attrs a, which it frees. */
int fl_onnx_emit_attrs(fl_onnx_ctx *c, fl_op_kind kind, const int *in, int n,
		       fl_attrs *a, int out, fl_error *err);

/* Op `kind` on x with the one ints attribute key = v[0..n-1]; -1 at once
 * when x < 0 (a failed earlier step), so calls chain. */
int fl_onnx_emit_ints(fl_onnx_ctx *c, fl_op_kind kind, int x, const char *key,
		      const int64_t *v, int n, int out, fl_error *err);
int fl_onnx_reshape(fl_onnx_ctx *c, int x, const fl_shape *s, int out,
		    fl_error *err);
int fl_onnx_scalar(fl_onnx_ctx *c, float v, fl_error *err);

/* Element types by short names. */
#define FL_DT_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define FL_DT_INT64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64

/* The float element types fuselab computes: float and double. */
bool fl_onnx_dtype_is_float(int dtype);

/* onnx_ops.c, shared with the folder: the output shape of the reshape
 * family (Reshape, Flatten, Squeeze, Unsqueeze, Identity) for input
 * shape `in`, and Slice's box over `in` (start, end and step per dim,
 * normalised: start in range, end exclusive, a step that may be
 * negative). */
bool fl_onnx_is_reshape_family(const char *op_type);
int fl_onnx_reshape_target(fl_onnx_ctx *c, const fl_shape *in,
			   fl_shape *out, fl_error *err);
int fl_onnx_slice_box(fl_onnx_ctx *c, const fl_shape *in, int64_t *start,
		      int64_t *step, fl_shape *out, fl_error *err);

/* Known values (the i array only for integral and bool types). */
fl_onnx_values *fl_onnx_values_new(const fl_shape *s, int dtype,
				   fl_error *err);
void fl_onnx_values_delete(fl_onnx_values *v);

#endif
