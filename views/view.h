/* The contract between the explorer (app/explorer.c) and its views
 * (DESIGN 7): one file per view under views/, each a class below.
 *
 * A view reads engine state only, through the engine's public headers
 * (never an _impl.h: scripts/check-layers.sh), renders it into a cell grid
 * (grid.h) of whatever size it is given, and answers keys with an action:
 * what the explorer should do next (select an op, go to a step, ...).  It
 * never moves the session, prints or exits; it keeps only its own
 * presentation state (scroll offsets, cursor, collapsed nodes, caches) in
 * the state object its class creates.
 *
 * Keys: the explorer handles its own keys first (its table in
 * app/keymap.c: n space N b p P r g / w m f F o R e s t x ? q Tab
 * shift-Tab 1-9 Esc) and offers every other key to the view in focus:
 * arrows, hjkl, HJKL, PgUp/PgDn, Home/End, Enter, the mouse, and letters
 * or signs the table leaves free (a c d v y z u i A C D V Y Z + - [ ] < >
 * { } . ,). */
#ifndef FL_VIEW_H
#define FL_VIEW_H

#include <stdbool.h>

#include "engine.h"
#include "grid.h"
#include "keys.h"
#include "ladder.h"

/* What the user has selected, shared by all views (owned by the
 * explorer; views change it only by returning actions). */
typedef struct fl_view_sel {
	int op;			/* op index in fl_engine_graph(s), -1: none */
	int kernel;		/* kernel index in fl_engine_program(s), -1 */
	int event;		/* event index in the log, -1 */
	int n_marks;
	int marks[2];		/* ops marked for why-not and overrides */
} fl_view_sel;

typedef struct fl_view_ctx {
	const fl_session *s;	/* the state at the step cursor */
	const fl_view_sel *sel;
	int step;		/* decisions made (fl_engine_position) */
	int total;		/* decisions in the whole run, -1: not known
				   yet */
	const fl_event *current;	/* the last decision made, NULL at 0 */
	/* Ops of the current decision: highlighted[op] for the ops of
	 * fl_engine_graph(s) (NULL when there is no decision). */
	const bool *highlighted;
	/* The strategy ladder of the last kernel run, NULL before any; the
	 * step of the session's strategy in it (NULL: it did not run), whose
	 * kernels are the session's final program's, in order. */
	const fl_ladder *ladder;
	const fl_ladder_step *timed;
	/* Comparing with the run before the last override: that session at
	 * the same step and its ladder (NULL when there is none). */
	const fl_session *prev;
	const fl_ladder *prev_ladder;
	const char *prev_label;	/* what changed, e.g. "forbid a b" */
	/* FL_KEY_MOUSE: the clicked cell, relative to the view's grid. */
	int mouse_x, mouse_y;
	bool focused;		/* the pane in focus (draw its cursor) */
} fl_view_ctx;

typedef enum fl_view_act_kind {
	FL_VIEW_ACT_NONE,
	FL_VIEW_ACT_SELECT_OP,		/* arg: op index */
	FL_VIEW_ACT_SELECT_KERNEL,	/* arg: kernel index */
	FL_VIEW_ACT_SELECT_EVENT,	/* arg: event index */
	FL_VIEW_ACT_GOTO_STEP,		/* arg: the step to go to */
	FL_VIEW_ACT_MESSAGE,		/* text: shown on the status line */
} fl_view_act_kind;

typedef struct fl_view_action {
	fl_view_act_kind kind;
	int arg;
	char text[200];
} fl_view_action;

/* One key a view binds, for the help overlay. */
typedef struct fl_view_key {
	const char *keys;	/* "c", "Enter", "Left Right" */
	const char *help;
} fl_view_key;

typedef struct fl_view_class {
	const char *name;	/* "graph", "decisions", ... */
	const fl_view_key *keys;	/* NULL-terminated (keys == NULL) */
	void *(*create)(void);	/* NULL when out of memory */
	void (*destroy)(void *st);
	/* Draws the view into all of g (already cleared). */
	void (*render)(void *st, const fl_view_ctx *c, fl_grid *g);
	/* 1 when the key was the view's (act says what follows, NONE for
	 * a change of its own state such as scrolling), 0 when not. */
	int (*key)(void *st, const fl_view_ctx *c, int key,
		   fl_view_action *act);
} fl_view_class;

extern const fl_view_class fl_view_graph;
extern const fl_view_class fl_view_decisions;
extern const fl_view_class fl_view_schedule;
extern const fl_view_class fl_view_domain;
extern const fl_view_class fl_view_memory;
extern const fl_view_class fl_view_parallel;
extern const fl_view_class fl_view_timings;
extern const fl_view_class fl_view_code;

/* Small helpers every view uses (view_util.c). */

/* The kernel of the program that holds op (an index into
 * fl_engine_graph), -1 when none or before layer 1. */
int fl_view_kernel_of_op(const fl_view_ctx *c, int op);
/* The selected kernel, else the kernel of the selected op, else 0 when
 * there is a program, else -1. */
int fl_view_current_kernel(const fl_view_ctx *c);
/* Draws "text" centred on g in FL_LOOK_DIM: what a view shows when it
 * has nothing yet ("no kernels yet: layer 1 has not run (step 12/40)"). */
void fl_view_empty(fl_grid *g, const char *text);
/* Keeps a cursor row visible in a window of `rows` rows starting at
 * *top. */
void fl_view_scroll_to(int cursor, int rows, int *top);

#endif
