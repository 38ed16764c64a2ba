/* Internal to the op library: the functions the op table (ops.c) points at.
 * Primitives are implemented in ops_prim.c, compound ops in ops_compound.c.
 * Nothing outside engine/ops*.c includes this header. */
#ifndef FL_OPS_IMPL_H
#define FL_OPS_IMPL_H

#include "graph.h"
#include "ops.h"

#define FL_DECLARE_PRIM(x)                                                   \
	int fl_infer_##x(const fl_op *op, const fl_shape *in, fl_shape *out,  \
			 fl_error *err);                                      \
	void fl_eval_##x(const fl_op *op, const fl_buf *in, fl_buf *out);

#define FL_DECLARE_COMPOUND(x)                                               \
	FL_DECLARE_PRIM(x)                                                   \
	int fl_expand_##x(fl_graph *dst, const fl_op *op, fl_error *err);

/* ops_prim.c: unary covers every unary kind, binary the binary kinds,
 * reduce the reductions (each switches on op->kind). */
FL_DECLARE_PRIM(unary)
FL_DECLARE_PRIM(binary)
FL_DECLARE_PRIM(where)
FL_DECLARE_PRIM(reduce)
FL_DECLARE_PRIM(matmul)
FL_DECLARE_PRIM(conv2d)
FL_DECLARE_PRIM(pool2d)
FL_DECLARE_PRIM(transpose)
FL_DECLARE_PRIM(reshape)
FL_DECLARE_PRIM(concat)
FL_DECLARE_PRIM(slice)
FL_DECLARE_PRIM(pad)
FL_DECLARE_PRIM(gather)
/* ops_index.c */
FL_DECLARE_PRIM(gather_elements)
FL_DECLARE_PRIM(scatter_elements)
FL_DECLARE_PRIM(broadcast_to)
FL_DECLARE_PRIM(custom)

/* ops_prim.c: the C templates of ops whose attributes decide them
 * (fl_op_c_fn in ops.h). */
fl_op_c fl_c_pool2d(const fl_op *op, char *buf, size_t n);
fl_op_c fl_c_pad(const fl_op *op, char *buf, size_t n);
/* ops_typed.c: is_inf's bit test for the signs its attributes ask, and
 * its inference (a unary op's, after checking that "positive" and
 * "negative" are bools). */
fl_op_c fl_c_is_inf(const fl_op *op, char *buf, size_t n);
int fl_infer_is_inf(const fl_op *op, const fl_shape *in, fl_shape *out,
		    fl_error *err);

/* ops_compound.c */
FL_DECLARE_COMPOUND(softmax)
FL_DECLARE_COMPOUND(log_softmax)
FL_DECLARE_COMPOUND(layernorm)
FL_DECLARE_COMPOUND(rmsnorm)
FL_DECLARE_COMPOUND(batchnorm)
FL_DECLARE_COMPOUND(gelu)
FL_DECLARE_COMPOUND(silu)
FL_DECLARE_COMPOUND(leaky_relu)
FL_DECLARE_COMPOUND(quantize)
FL_DECLARE_COMPOUND(bias_add)
FL_DECLARE_COMPOUND(dense)
FL_DECLARE_COMPOUND(reduce_mean)
FL_DECLARE_COMPOUND(variance)
FL_DECLARE_COMPOUND(attention)
FL_DECLARE_COMPOUND(hard_sigmoid)
FL_DECLARE_COMPOUND(hard_swish)
FL_DECLARE_COMPOUND(elu)

/* The emitter of ops_compound.c for expansions in other files: begin
 * checks op (its inference runs first, so bad attributes are reported
 * before anything is emitted); fl_emit_op appends `kind` reading in[]
 * (attrs moved into the op, may be NULL) into a new temp tensor named
 * "<op>.<step>" and returns it, or -1 (after a failure every call returns
 * -1, so calls nest and are checked once); fl_emit_const is a rank-0
 * constant; fl_emit_finish makes the last emitted op, which wrote t,
 * write op's output, and frees the emitter (also on failure). */
typedef struct fl_emitter fl_emitter;
fl_emitter *fl_emit_begin(fl_graph *g, const fl_op *op, fl_error *err);
int fl_emit_op(fl_emitter *em, fl_op_kind kind, const char *step,
	       const int *in, int n_in, fl_attrs *attrs);
int fl_emit_const(fl_emitter *em, const char *cname, double v);
int fl_emit_matmul(fl_emitter *em, const char *step, int a, int b,
		   bool transpose_b);
int fl_emit_finish(fl_emitter *em, int t);

/* ops_recurrent.c */
FL_DECLARE_COMPOUND(lstm)
FL_DECLARE_COMPOUND(gru)
FL_DECLARE_COMPOUND(rnn)

#endif
