/* A session and a view context for rendering views in tests, without a
 * terminal or the explorer: open a sample, move the session, render a
 * view class into a grid of a given size and read it as text. */
#ifndef FL_VIEW_FIXTURE_H
#define FL_VIEW_FIXTURE_H

#include "view.h"

typedef struct t_view {
	fl_graph *g;
	fl_session *s;
	fl_view_sel sel;
	fl_view_ctx ctx;
	bool *hl;
	fl_grid *grid;
} t_view;

/* Opens samples/<sample>.json under strategy apollo-l1, stopping after
 * codegen (no compile or run), and goes to `step` (-1: the end).  Fails
 * the test when anything goes wrong. */
void t_view_open(t_view *f, const char *sample, int step);
/* t_view_open with --tile tile,tile (0: the machine's sizes): for the
 * tests whose pictures were drawn around given tiles. */
void t_view_open_tiles(t_view *f, const char *sample, int step, int tile);
/* t_view_open under another strategy. */
void t_view_open_strategy(t_view *f, const char *sample, int step,
			  fl_strategy strategy);
/* t_view_open under another strategy, with layer 2's capacity for a
 * stitched edge's tensor set to stitch_capacity bytes (0: default). */
void t_view_open_capacity(t_view *f, const char *sample, int step,
			  fl_strategy strategy, int64_t stitch_capacity);
/* Moves the session to `step` (-1: the end) and refreshes ctx. */
void t_view_goto(t_view *f, int step);
/* Recomputes ctx (current decision, highlighted ops) for the session's
 * position. */
void t_view_refresh(t_view *f);
/* Renders vc (state st from vc->create) into a w x h grid, returns the
 * text (malloc'd; the grid stays in f->grid for looks). */
char *t_view_render(t_view *f, const fl_view_class *vc, void *st, int w,
		    int h);
/* The step just before the session's first codegen decision (the end
 * of the session when there is none). */
int t_step_before_codegen(const t_view *f);
/* The index of op `name` in the session's graph (fails when none). */
int t_view_op(const t_view *f, const char *name);
void t_view_close(t_view *f);

#endif
