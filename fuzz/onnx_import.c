/* libFuzzer harness: an ONNX model as bytes through the whole importer
 * (fl_onnx_load_bytes: protobuf decoding, initializers, shape folding,
 * operator mapping, validation).  Whatever the bytes, the import returns
 * a graph or an error; it never crashes, leaks or hangs.  No
 * --input-shape is given: most seeds (ONNX's node tests) have static
 * shapes, which a given shape would contradict. */
#include <stddef.h>
#include <stdint.h>

#include "onnx_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fl_onnx_info info;
	fl_error err;
	fl_graph *g;

	g = fl_onnx_load_bytes(data, size, "fuzz", NULL, NULL, &info, &err);
	fl_graph_free(g);
	fl_onnx_info_free(&info);
	return 0;
}
