/* libFuzzer harness: a serialized ONNX TensorProto, as --inputs and
 * --expect read them (fl_onnx_tensor_from_bytes).  Whatever the bytes,
 * decoding returns values or an error; it never crashes, leaks or
 * allocates more than the data backs. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "onnx_tensor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fl_onnx_values v;
	fl_error err;
	char *name;

	if (fl_onnx_tensor_from_bytes(data, size, &v, &name, &err) == 0) {
		free(name);
		fl_onnx_values_free(&v);
	}
	return 0;
}
