/* libFuzzer harness: an overrides file (--overrides FILE, the explorer's
 * saved forbid/force list), read by fl_overrides_load_string, checked
 * against a small graph and applied to engine options, as the command
 * line does.  Whatever the bytes: a list or a message, never a crash, a
 * leak or undefined behaviour. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "loader.h"
#include "overrides.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Op names a, b, c (c a compound whose primitives are c.*). */
static const char graph_json[] =
	"{\"format\":\"fuselab-graph/1\",\"name\":\"g\",\"tensors\":{"
	"\"x\":{\"shape\":[4,8],\"role\":\"input\"},"
	"\"y\":{\"shape\":[4,8],\"role\":\"output\"}},\"ops\":["
	"{\"name\":\"a\",\"op\":\"exp\",\"in\":[\"x\"],\"out\":\"t\"},"
	"{\"name\":\"b\",\"op\":\"neg\",\"in\":[\"t\"],\"out\":\"u\"},"
	"{\"name\":\"c\",\"op\":\"softmax\",\"in\":[\"u\"],\"out\":\"y\"}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static fl_graph *g;
	fl_overrides *l;
	fl_engine_opts eo;
	fl_error err;

	if (!g)
		g = fl_load_graph_string(graph_json, strlen(graph_json), "g",
					 &err);
	if (fl_overrides_load_string((const char *)data, size, "fuzz", &l,
				     &err) < 0)
		return 0;
	fl_engine_opts_default(&eo);
	if (g)
		fl_overrides_check(l, g, "fuzz", &err);
	fl_overrides_apply(l, &eo, &err);
	fl_overrides_free(l);
	return 0;
}
