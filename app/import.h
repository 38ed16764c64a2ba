/* Picking the loader of a graph file: JSON (fuselab-graph/1) or, for a
 * name ending in ".onnx" (any case), the ONNX importer with the
 * --input-shape values and the --bind-inputs / --bind files (bind.h);
 * and what the command line prints about an imported model. */
#ifndef FL_APP_IMPORT_H
#define FL_APP_IMPORT_H

#include <stdio.h>

#include "graph.h"
#include "onnx_import.h"
#include "options.h"

/* Loads `path` with the loader its name asks for.  info may be NULL;
 * when not, it receives the ONNX summary (zeroed for a JSON file; the
 * caller frees it with fl_onnx_info_free; info->bound lists the inputs
 * bound at import).  An ONNX model with custom ops gets one line on
 * stderr listing them with counts, and one given values for inputs a
 * line naming those bound.  The graph's constant values come shared
 * (fl_graph_share_values): copies of it share them.  NULL + message. */
fl_graph *fl_app_load_path(const char *path, const fl_options *o,
			   fl_onnx_info *info, fl_error *err);

/* --check's ONNX part: opsets, producer, nodes by op type, what each op
 * type became (fuselab ops, folded at import, custom). */
void fl_app_print_onnx_summary(FILE *out, const fl_onnx_info *info);

#endif
