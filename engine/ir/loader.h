/* Loader for the fuselab-graph/1 JSON format (DESIGN 3), read with cJSON.
 * A file's "tour" (tour.h) is checked here too, and left to the explorer.
 * Every problem is reported as "<file>: <json path>: <what>" and no graph
 * is returned; the caller exits with status 2. */
#ifndef FL_LOADER_H
#define FL_LOADER_H

#include <stddef.h>

#include "graph.h"

#define FL_GRAPH_FORMAT "fuselab-graph/1"
#define FL_LOADER_MAX_FILE_BYTES (64 << 20)

/* Parses and validates a graph from text; `source` names it in messages. */
fl_graph *fl_load_graph_string(const char *text, size_t len,
			       const char *source, fl_error *err);

/* Parses JSON text (cJSON) the way graph files are read: NULL with "line
 * L, column C: <problem>" in err for a syntax error, nesting deeper than
 * cJSON allows, or a NUL in the text or in a string.  The caller frees the
 * result with cJSON_Delete. */
struct cJSON;
struct cJSON *fl_json_parse(const char *text, size_t len, fl_error *err);

/* Every key of object `obj` must be in `known` (NULL-terminated) and
 * appear once; else -1 with "<path>.<key>: unknown field" or "...: field
 * given twice" (no "<path>." when path is ""). */
int fl_json_check_fields(const struct cJSON *obj, const char *const *known,
			 const char *path, fl_error *err);

/* The whole of regular file `path`, NUL-terminated, its length in *len;
 * NULL with "<path>: <problem>" when it cannot be opened or read, or
 * holds more than max_bytes ("... more than the 64 MiB <what> may
 * have").  The caller frees it. */
char *fl_read_file(const char *path, size_t max_bytes, const char *what,
		   size_t *len, fl_error *err);

/* Reads `path` and calls fl_load_graph_string. */
fl_graph *fl_load_graph_file(const char *path, fl_error *err);

#endif
