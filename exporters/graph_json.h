/* The graph as a fuselab-graph/1 file (DESIGN 3, README "The graph
 * format"), written with cJSON: the inverse of the loader (loader.h).
 *
 * Contract: fl_graph_to_json writes every tensor whose shape is known
 * (in the graph's tensor order, with its role; consts with their values)
 * and every op (in the graph's order, with its attributes), so that
 * loading the text gives a graph with the same tensors, shapes, roles,
 * ops, attributes and therefore the same interpreter outputs.  What the
 * format does not carry is left out: op provenance, a file's tour and
 * meta.  Never prints. */
#ifndef FL_GRAPH_JSON_H
#define FL_GRAPH_JSON_H

#include "fl_error.h"
#include "graph.h"

/* g as indented JSON text (malloc'd, NUL-terminated); NULL with a message
 * when memory runs out or g holds what the format cannot say (a const
 * value that is not a finite number, a tensor of unknown shape that is
 * not an intermediate). */
char *fl_graph_to_json(const fl_graph *g, fl_error *err);

#endif
