/* The explorer (DESIGN 7): the model behind the interactive front end.
 * It owns the engine session at the step cursor, the views, the
 * selection, the overrides and the background work (the complete run that
 * gives the step count, and compiling and running kernels), and turns keys
 * into engine moves and view actions.  It renders the whole screen into a
 * cell grid: app/tui.c draws that grid with curses, and tests and
 * benchmarks drive the explorer headless through the same calls.
 *
 * Nothing here blocks on compiling or running kernels: `R` starts a
 * worker thread (its own sessions, its own copy of the graph), and
 * fl_explorer_poll picks up its progress and result. */
#ifndef FL_APP_EXPLORER_H
#define FL_APP_EXPLORER_H

#include <stdbool.h>

#include "engine.h"
#include "grid.h"

#include "overrides.h"
#include "tour.h"

typedef struct fl_explorer fl_explorer;

/* Opens the explorer on a copy of graph g (already validated) with the
 * engine options o (compile and run are left to `R`).  label names the
 * file on the status line.  The explorer takes tour and overrides (both
 * may be NULL): the overrides are applied on top of o, listed and
 * removable. */
fl_explorer *fl_explorer_open(const fl_graph *g, const fl_engine_opts *o,
			      const char *label, fl_tour *tour,
			      fl_overrides *overrides, fl_error *err);
/* Cancels and joins any background work, removes its files. */
void fl_explorer_close(fl_explorer *x);

/* Handles one key (views/keys.h codes).  Returns false once the user
 * asked to quit. */
bool fl_explorer_key(fl_explorer *x, int key);
/* A mouse click at screen cell (col, row). */
void fl_explorer_click(fl_explorer *x, int col, int row);
/* Picks up background progress and results; true when the screen should
 * be redrawn. */
bool fl_explorer_poll(fl_explorer *x);
/* True while kernels compile and run in the background. */
bool fl_explorer_busy(const fl_explorer *x);
/* Renders the whole screen into g at g's size. */
void fl_explorer_render(fl_explorer *x, fl_grid *g);

/* For tests and benchmarks. */
const fl_session *fl_explorer_session(const fl_explorer *x);
/* Waits for the background work (complete run, kernel run); 0, or -1 on
 * timeout. */
int fl_explorer_wait(fl_explorer *x, double timeout_s);
/* The view shown in the pane in focus ("graph", ...). */
const char *fl_explorer_view_name(const fl_explorer *x);

#endif
