/* Exports in batch mode (DESIGN 8): --dot, --svg, --png (with --frames,
 * --neighbourhood, --schedule-trees, --domain), --trace and --report,
 * and --export-onnx (the graph as loaded, no session needed).
 * The exporters (exporters/) build and write; this file decides which
 * files, under which names, says where it wrote what, and turns failures
 * into exit statuses. */
#ifndef FL_APP_EXPORT_H
#define FL_APP_EXPORT_H

#include <stdbool.h>

#include "engine.h"
#include "ladder.h"
#include "options.h"

/* Whether the options ask for any export. */
bool fl_app_exports_wanted(const fl_options *o);

/* Writes every export the options ask for from session s (at the step the
 * options reached; frames walk it and come back) and, with --run, the
 * ladder (else NULL).  Prints one line per file written; returns 0, or 1
 * after printing the first failure (nothing half-written is left). */
int fl_app_export(fl_session *s, const fl_ladder *ladder,
		  const fl_options *o);

/* --export-onnx FILE: writes g (as loaded) as an ONNX model, prints where;
 * 0, or 1 after printing the failure (nothing half-written is left). */
int fl_app_export_onnx(const fl_graph *g, const fl_options *o);

#endif
