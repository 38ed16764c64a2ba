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

typedef struct fl_onnx_import_opts {
	int n_shapes;
	const fl_onnx_input_shape *shapes;
} fl_onnx_import_opts;

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
} fl_onnx_info;

/* Loads and validates the model at `path`.  opts may be NULL (no
 * --input-shape); info may be NULL, else it is filled (also when the
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
