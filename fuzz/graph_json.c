/* libFuzzer harness: a fuselab-graph/1 JSON file, as the command line
 * and the explorer load it (fl_load_graph_string: JSON, schema, names,
 * shapes, op attributes, inference, validation).  Whatever the bytes,
 * loading returns a graph or an error; it never crashes, leaks, reads
 * out of bounds or hits undefined behaviour.  A graph that loads is
 * also summarised and copied, as --check and the explorer do. */
#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "loader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fl_error err;
	fl_graph *g = fl_load_graph_string((const char *)data, size, "fuzz",
					   &err);
	fl_graph *copy;

	if (!g)
		return 0;
	copy = fl_graph_copy(g);
	fl_graph_free(copy);
	fl_graph_free(g);
	return 0;
}
