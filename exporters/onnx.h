/* ONNX exporter (issue 13): any fuselab graph as a model ONNX tools open
 * (Netron, ONNX Runtime), built with the protobuf-c bindings of the
 * onnx.proto that libonnx-dev installs.
 *
 * The model: ir_version 8, the default domain at opset 17, producer
 * "fuselab" at FL_VERSION; the graph keeps g's name and doc.  Input and
 * param tensors are the graph inputs (float, static shapes), const tensors
 * initializers (float32 raw data, a one-value splat written out over its
 * whole shape), output tensors the graph outputs; the other tensors get a
 * value_info with their shape.  Tensor names are kept; names the export
 * invents (a Transpose before a MatMul, the axes of a ReduceSum, ...) are
 * made unique against every tensor and op name of the graph.
 *
 * Ops: each primitive becomes the ONNX operators computing the same
 * values; compound ops with an operator in opset 17 (softmax, log_softmax,
 * layernorm, batchnorm with per-channel parameters, leaky_relu,
 * reduce_mean, dense on 2-D operands) become that operator, the others
 * their primitive expansion from the op library.  The node computing a
 * fuselab op's output is named after the op; helper nodes after their
 * output.
 *
 * One difference: gather indices go through Clip into the axis's range
 * and Cast to int64 (truncation), which is fuselab's rule (floor, then
 * clamp) for every finite index; a NaN index reads element 0 in fuselab
 * but gives an undefined index in ONNX.
 *
 * g must be validated (every shape known, ops in topological order), as
 * the loader and the importer leave it; g is not changed. */
#ifndef FL_EXPORT_ONNX_H
#define FL_EXPORT_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "fl_error.h"
#include "graph.h"

/* The opset of the default domain the export targets. */
#define FL_ONNX_EXPORT_OPSET 17
#define FL_ONNX_EXPORT_IR_VERSION 8

/* The serialized ModelProto of g in *bytes (malloc'd, the caller frees)
 * and its length in *n.  0, or -1 with the reason (naming the op or
 * tensor). */
int fl_export_onnx_bytes(const fl_graph *g, uint8_t **bytes, size_t *n,
			 fl_error *err);

/* Writes the model to path through output.h's safe writes: the file
 * appears whole or not at all.  0, or -1 with the reason naming the
 * path. */
int fl_export_onnx(const fl_graph *g, const char *path, fl_error *err);

#endif
