/* The op list view: every op of the graph with its kind, class, inputs and
 * output shape.  Rows are formatted into plain strings first (testable
 * without curses), then drawn.  Reads the graph, never changes it. */
#ifndef FL_VIEW_OPS_H
#define FL_VIEW_OPS_H

#include <stddef.h>

#include "graph.h"

/* Header line matching the row columns. */
const char *fl_view_ops_header(void);

/* Row text of op i into buf (truncated to n-1 bytes). */
void fl_view_ops_row(const fl_graph *g, int i, char *buf, size_t n);

/* Detail lines of op i (provenance, attrs, inputs with shapes); returns
 * the number of lines written into lines[0..max-1], each of width w. */
int fl_view_ops_details(const fl_graph *g, int i, char lines[][160], int max);

#endif
