/* ONNX tensors (TensorProto) as values fuselab can use: the importer's
 * initializers and Constant nodes, and the .pb input and expected-output
 * files of ONNX's backend tests (--inputs, --expect).
 *
 * fuselab computes in f32; every numeric element type is converted to
 * float, and integral types are also kept exactly as int64 (shape-only
 * inputs: Reshape's shape, Slice's starts, ...).  Data may sit in the
 * typed fields, in raw_data (little-endian) or, when data_location is
 * EXTERNAL, in a file next to the model.  Every count is checked against
 * the dims before anything is allocated, so a file that claims 10^12
 * elements is an error, not an allocation. */
#ifndef FL_ONNX_TENSOR_H
#define FL_ONNX_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "fl_error.h"
#include "onnx.pb-c.h"
#include "shape.h"

/* The most elements one tensor may hold (1 GiB of f32). */
#define FL_ONNX_MAX_ELEMENTS ((int64_t)1 << 28)

typedef struct fl_onnx_values {
	fl_shape shape;
	int dtype;		/* ONNX__TENSOR_PROTO__DATA_TYPE__* */
	int64_t n;		/* elements (1 for a scalar) */
	float *f;		/* every element as float */
	int64_t *i;		/* integral types only (else NULL), exact */
} fl_onnx_values;

/* "float", "int64", ... ("type 42" for one ONNX does not define). */
const char *fl_onnx_dtype_name(int dtype);

/* The fuselab dtype of ONNX element type `dtype` (float and double:
 * f32; bool, the 8- to 64-bit integers, float16 and bfloat16: their
 * own), -1 for the others (strings, complex, the 8-bit floats). */
int fl_onnx_to_dtype(int dtype);

/* The ONNX element type of fuselab dtype dt. */
int fl_onnx_from_dtype(fl_dtype dt);

/* True for the element types decoded at all (numbers and bool). */
bool fl_onnx_dtype_supported(int dtype);

/* Decodes t into *v (zeroed first).  base_dir is the folder external
 * data files are relative to (NULL: external data is an error).  Errors
 * name the problem only; the caller prefixes the tensor's name. */
int fl_onnx_tensor_values(const Onnx__TensorProto *t, const char *base_dir,
			  fl_onnx_values *v, fl_error *err);

void fl_onnx_values_free(fl_onnx_values *v);

/* v's floats rounded to its type when that is float16 or bfloat16 (a
 * value computed at import, stored as the type holds it). */
void fl_onnx_values_round(fl_onnx_values *v);

/* ONNX's backend tests store a bfloat16 tensor's data as uint16 bit
 * patterns (numpy has no bfloat16): a uint16 v read for a tensor of
 * 16-bit float type `dtype` becomes that type's values.  1 when it did,
 * 0 when v is left as it was. */
int fl_onnx_values_reinterpret_half(fl_onnx_values *v, int dtype);

/* Decodes a serialized TensorProto held in memory (len bytes at data)
 * like fl_onnx_read_tensor_file; errors name no file. */
int fl_onnx_tensor_from_bytes(const uint8_t *data, size_t len,
			      fl_onnx_values *v, char **name, fl_error *err);

/* Reads a serialized TensorProto file (the test_data_set_N/input_K.pb of
 * ONNX's backend tests); *name (may be NULL) receives a malloc'd copy of
 * the tensor's name ("" when it has none).  Errors start with path. */
int fl_onnx_read_tensor_file(const char *path, fl_onnx_values *v, char **name,
			     fl_error *err);

#endif
