/* ONNX import (DESIGN 9): an ONNX model file becomes an fl_graph.
 *
 * The model is read with the protobuf-c bindings of Debian's onnx.proto;
 * every node of the main graph is mapped to ops of the op library
 * (onnx_ops.c), the small integer sub-graphs that compute shapes are
 * folded at import (onnx_fold.c), initializers and Constant nodes become
 * const tensors with their real data, and operators that cannot be
 * modelled become opaque `custom` ops (onnx_custom.c).  Graph inputs are
 * the graph's inputs in the model's order, graph outputs its outputs.
 * Every op remembers the ONNX node it came from (provenance origin = node
 * name, source_op = op type).
 *
 * Errors read "<file>: <node or tensor>: <what>"; nothing is returned and
 * nothing leaks.  The engine never prints: what the command line shows
 * about the model comes back in fl_onnx_info. */
#ifndef FL_ONNX_IMPORT_H
#define FL_ONNX_IMPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"

/* The most bytes a model file may have (protobuf's own limit). */
#define FL_ONNX_MAX_FILE_BYTES (((size_t)2 << 30) - 1)

/* One --input-shape NAME=d1,d2,...: the shape of graph input NAME,
 * replacing its dynamic (or declared) dims. */
typedef struct fl_onnx_input_shape {
	const char *name;
	fl_shape shape;
} fl_onnx_input_shape;

struct fl_onnx_values;

/* One value given for a graph input (--bind-inputs DIR, --bind
 * NAME=FILE).  The import takes it as a constant only when an op needs
 * that input's value at import (a Reshape's shape, a Range's limit, ...,
 * or a value computed from it): the model is specialised to it, and the
 * input is no longer a graph input.  Inputs read only as data stay
 * inputs (onnx_bind.c). */
typedef struct fl_onnx_given_input {
	const char *name;	/* the graph input it is for ("": none) */
	int position;		/* K of DIR/input_K.pb: the input at that
				 * position when the name matches none;
				 * -1: by name only */
	const char *source;	/* the file, for messages */
	const struct fl_onnx_values *values;
} fl_onnx_given_input;

typedef struct fl_onnx_import_opts {
	int n_shapes;
	const fl_onnx_input_shape *shapes;
	int n_given;
	const fl_onnx_given_input *given;
} fl_onnx_import_opts;

/* A graph input the import took as a constant (its given value). */
typedef struct fl_onnx_bound_input {
	char *name;
	int position;		/* among the model's graph inputs that are
				 * not initializers */
} fl_onnx_bound_input;

typedef struct fl_onnx_opset {
	char *domain;		/* "" for the default domain */
	int64_t version;
} fl_onnx_opset;

/* What became of the nodes of one ONNX op type. */
typedef struct fl_onnx_op_count {
	char *op_type;
	int nodes;		/* nodes of this type in the graph */
	int folded;		/* computed at import (shape sub-graphs) */
	int custom;		/* became `custom` ops */
	char *reason;		/* why they did, when the importer says
				 * ("mode cubic", different ones joined
				 * by "; "), or NULL */
	bool uses[FL_OP_COUNT];	/* fuselab ops its other nodes became */
} fl_onnx_op_count;

typedef struct fl_onnx_info {
	int64_t ir_version;
	char *producer_name, *producer_version;
	int n_opsets;
	fl_onnx_opset *opsets;
	int n_types;		/* in order of first appearance */
	fl_onnx_op_count *types;
	int n_nodes, n_initializers;
	int n_bound;		/* given inputs taken as constants, in */
	fl_onnx_bound_input *bound;	/* the model's order */
} fl_onnx_info;

/* Loads and validates the model at `path`.  opts may be NULL (no
 * --input-shape, no given values); a given value that names no graph
 * input, or whose element type or shape is not the input's, is an
 * error; info may be NULL, else it is filled (also when the
 * import fails part way) and the caller frees it with fl_onnx_info_free. */
fl_graph *fl_onnx_load_file(const char *path, const fl_onnx_import_opts *opts,
			    fl_onnx_info *info, fl_error *err);

/* The same from a serialized model in memory; base_dir is the folder of
 * external data files (NULL: external data is an error). */
fl_graph *fl_onnx_load_bytes(const uint8_t *data, size_t len,
			     const char *source, const char *base_dir,
			     const fl_onnx_import_opts *opts,
			     fl_onnx_info *info, fl_error *err);

void fl_onnx_info_free(fl_onnx_info *info);

/* Total custom ops in info (for the one-line import summary:
 * "<file>: N ops cannot be modelled and are opaque: Resize x2 (mode
 * cubic), LSTM x1"). */
int fl_onnx_info_custom_count(const fl_onnx_info *info);

/* True when path names an ONNX model: it ends in ".onnx", any case. */
bool fl_onnx_is_model_path(const char *path);

#endif
