/* fl_graph: the computation graph every stage reads and rewrites.
 *
 * Tensors and ops live in two arrays and refer to each other by index.
 * A validated graph (fl_graph_validate) has: every tensor shape known and
 * positive, each tensor written by at most one op, inputs/params/consts
 * written by none, every output written, and ops stored in a topological
 * order (each op after the producers of its inputs).
 *
 * Every op carries provenance: the user's op name it stems from, the
 * compound op it was opened from (if any) and the rewrite that produced it
 * (if any), so anything later can be mapped back to the input file. */
#ifndef FL_GRAPH_H
#define FL_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "attrs.h"
#include "dtype.h"
#include "fl_error.h"
#include "ops.h"
#include "shape.h"

typedef enum fl_role {
	FL_ROLE_TEMP,	/* intermediate: produced and consumed inside */
	FL_ROLE_INPUT,	/* fed by the caller */
	FL_ROLE_PARAM,	/* weights: an input the runner also fills */
	FL_ROLE_CONST,	/* values given in the file */
	FL_ROLE_OUTPUT,	/* produced by an op and returned */
} fl_role;

const char *fl_role_name(fl_role r);

typedef struct fl_tensor {
	char *name;
	fl_shape shape;
	bool shape_known;	/* declared in the file or inferred */
	fl_dtype dtype;		/* element type (docs/types.md): given for
				 * inputs, params and consts, inferred for
				 * op outputs (fl_op_infer_dtype) */
	bool dtype_declared;	/* given in the file: inference checks it */
	bool declared;		/* had an entry under "tensors" */
	fl_role role;
	float *data;		/* f32 CONST only: n_data values */
	int64_t *ints;		/* integral CONST only: n_data exact values */
	int64_t n_data;		/* 1 = one value splatted over the shape */
	int producer;		/* op index, -1 when none */
	struct fl_shared_values *shared;	/* NULL: data and ints are
				 * this tensor's alone; else they belong to
				 * this reference-counted block and are
				 * immutable (ownership: tensor_values.c) */
} fl_tensor;

typedef struct fl_provenance {
	char *origin;		/* the user's op this stems from */
	char *compound;		/* compound op it was opened from, or NULL */
	char *rewrite;		/* rewrite that produced it, or NULL */
	char *source_op;	/* op type of the imported model's node it
				 * stems from (ONNX), or NULL */
} fl_provenance;

typedef struct fl_op {
	char *name;
	fl_op_kind kind;
	int n_in;
	int *in;		/* tensor indices, order matters */
	int n_out;
	int *out;
	fl_attrs attrs;
	fl_provenance prov;
} fl_op;

struct fl_name_index;

typedef struct fl_graph {
	char *name;
	char *doc;
	int n_tensors, cap_tensors;
	fl_tensor *tensors;
	int n_ops, cap_ops;
	fl_op *ops;
	/* name -> index hash tables, built lazily by the find functions;
	 * code that reorders or removes ops drops them (graph.c only). */
	struct fl_name_index *tensor_index, *op_index;
} fl_graph;

fl_graph *fl_graph_new(const char *name);
void fl_graph_free(fl_graph *g);
/* A copy of g: the tensor values g shares (fl_graph_share_values) are
 * shared with the copy, the others copied. */
fl_graph *fl_graph_copy(const fl_graph *g);

/* Shared constant values (the rules are at the top of tensor_values.c).
 *
 * fl_graph_share_values: every tensor of g holding values it owns alone
 * hands them to a reference-counted block, so that copies of g share
 * them; from then on nobody writes them in place.  -1 when memory runs
 * out (the tensors done so far stay shared).
 * fl_tensor_drop_values: frees t's values, or drops its reference to
 * shared ones; data, ints and shared become NULL (n_data is kept).
 * fl_tensor_copy_values: dst gets src's values (and n_data): a new
 * reference when src's are shared, a copy otherwise; -1 when memory runs
 * out (dst then holds none).
 * fl_graph_owned_value_bytes: the bytes of values g's tensors own alone
 * (what a copy of g would duplicate). */
int fl_graph_share_values(fl_graph *g, fl_error *err);
void fl_tensor_drop_values(fl_tensor *t);
int fl_tensor_copy_values(fl_tensor *dst, const fl_tensor *src);
bool fl_tensor_values_shared(const fl_tensor *t);
int64_t fl_graph_owned_value_bytes(const fl_graph *g);

int fl_graph_find_tensor(const fl_graph *g, const char *name);
int fl_graph_find_op(const fl_graph *g, const char *name);

/* Adds a tensor; returns its index, or -1 when the name is taken or memory
 * runs out (message in err).  shape may be NULL (unknown until inferred). */
int fl_graph_add_tensor(fl_graph *g, const char *name, const fl_shape *shape,
			fl_role role, fl_error *err);

/* Adds a rank-0 const tensor holding v, named uniquely from `hint`. */
int fl_graph_add_scalar(fl_graph *g, const char *hint, float v,
			fl_error *err);

/* Converts the values of const tensor t to dtype dt as cast does (f32
 * to an integer type truncates, see fl_dtype_from_float) and sets its
 * dtype; -1 when memory runs out. */
int fl_tensor_convert_const(fl_tensor *t, fl_dtype dt, fl_error *err);

/* Adds an op reading in[0..n_in-1] and writing out[0..n_out-1]; the
 * provenance origin defaults to the op's own name.  Returns the op index or
 * -1.  Does not infer shapes (see fl_graph_infer_op). */
int fl_graph_add_op(fl_graph *g, const char *name, fl_op_kind kind,
		    const int *in, int n_in, const int *out, int n_out,
		    fl_error *err);

/* Sets provenance strings of op i (each may be NULL = keep). */
int fl_op_set_provenance(fl_op *op, const char *origin, const char *compound,
			 const char *rewrite);

/* Sets the source op type of op's provenance (NULL clears it). */
int fl_op_set_source_op(fl_op *op, const char *source_op);

/* Infers the output shapes of op i from its input shapes and attributes;
 * fills unknown output shapes, checks declared ones.  Errors are relative to
 * the op ("in[1]: ...", "attrs.axis: ...", "out: declared shape ..."). */
int fl_graph_infer_op(fl_graph *g, int op, fl_error *err);

/* Full validation (see top of file).  Sorts ops topologically, sets
 * producers, infers every shape.  Messages name the JSON-like path
 * ("ops[3].in[1]: ...", "tensors.x: ...") without a file name. */
int fl_graph_validate(fl_graph *g, fl_error *err);

/* " (ONNX <op type>)" for an op imported from ONNX (its provenance's
 * source_op, as messages show names), "" for any other; in buf (n bytes,
 * 96 are enough). */
const char *fl_op_source_note(const fl_op *op, char *buf, size_t n);

/* Error when an op of g has no implementation (an opaque custom op,
 * fl_op_computable), naming the op, where it came from, and what still
 * works; `doing` says what was asked ("interpret", "compile"). */
int fl_graph_check_computable(const fl_graph *g, const char *doing,
			      fl_error *err);

/* Indices of the graph's output tensors / input-like tensors (input and
 * param), in tensor order; the caller frees the array. */
int fl_graph_outputs(const fl_graph *g, int **idx);
int fl_graph_inputs(const fl_graph *g, int **idx);

/* Rewrites: every op input reading tensor `from` reads `to` instead
 * (shapes must agree; the caller checks).  Returns how many inputs changed
 * and marks the changed ops' provenance with `rewrite` when not NULL. */
int fl_graph_replace_uses(fl_graph *g, int from, int to, const char *rewrite);

/* Number of op inputs reading tensor t. */
int fl_graph_count_uses(const fl_graph *g, int t);

/* Removes the ops with dead[i] set, keeping the others' order, and relinks
 * producers.  Tensors stay (unused ones are harmless). */
int fl_graph_remove_ops(fl_graph *g, const bool *dead, fl_error *err);

/* Drops the ops from n_ops on and the tensors from n_tensors on: the
 * tail added since those counts were taken, which nothing before it may
 * name (the ONNX importer undoing a node it then keeps opaque).  Earlier
 * tensors that a dropped op wrote lose their producer. */
void fl_graph_truncate(fl_graph *g, int n_tensors, int n_ops);

/* Reorders the ops: new op i is old op order[i] (a permutation); relinks
 * producers. */
int fl_graph_permute_ops(fl_graph *g, const int *order, fl_error *err);

/* Recomputes every tensor's producer after ops were rewritten (checks
 * that no tensor is written twice). */
int fl_graph_relink(fl_graph *g, fl_error *err);

/* Renames tensor t / op i to `name`, which must be non-empty and free
 * among the tensors / ops; -1 otherwise or when memory runs out. */
int fl_graph_rename_tensor(fl_graph *g, int t, const char *name,
			   fl_error *err);
int fl_graph_rename_op(fl_graph *g, int i, const char *name, fl_error *err);

/* Totals for --check. */
typedef struct fl_graph_summary {
	int n_ops, n_compound, n_primitive;
	int n_tensors, n_inputs, n_params, n_consts, n_outputs, n_temps;
	int64_t input_bytes, param_bytes, output_bytes, temp_bytes;
	int64_t total_bytes;	/* -1 on overflow */
} fl_graph_summary;

void fl_graph_summarize(const fl_graph *g, fl_graph_summary *s);

/* What a caller of fl_graph_open_compounds decides and hears.  Every
 * member may be NULL. */
typedef struct fl_open_hooks {
	/* Open compound op i of src now?  Asked once per compound op, in
	 * source order; an op it declines is copied as it is. */
	bool (*decide)(void *user, const fl_graph *src, int i);
	/* Op i of src was just opened into dst->ops[first .. first+n-1] (the
	 * order before the source order is restored).  Non-zero aborts the
	 * opening (message in err). */
	int (*opened)(void *user, const fl_graph *src, int i,
		      const fl_graph *dst, int first, int n, fl_error *err);
	void *user;
} fl_open_hooks;

/* Opens the compound ops of g that hooks->decide accepts (all of them
 * when hooks or decide is NULL) into their primitive expansions: a new
 * graph, g is not changed.  Tensor indices of g are kept (new
 * intermediates and constants are appended); primitives are copied
 * before any expansion (so expansion names never clash with user ops),
 * then the ops are put back in source order, each expansion where its
 * compound op stood, and producers relinked.  Shapes are inferred as the
 * expansions add ops, but the result is not validated.  When src_of is
 * not NULL it receives (malloc'd) for each op of the result the index of
 * the op of g it came from; n_kept (may be NULL) receives how many
 * compound ops were left unopened. */
fl_graph *fl_graph_open_compounds(const fl_graph *g, const fl_open_hooks *hooks,
				  int **src_of, int *n_kept, fl_error *err);

/* Replaces every compound op by its primitive expansion (the call above
 * opening everything); the result is validated. */
fl_graph *fl_graph_expand_compounds(const fl_graph *g, fl_error *err);

#endif
