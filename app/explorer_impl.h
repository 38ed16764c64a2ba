/* The explorer's state, shared by its files: explorer.c (keys and engine
 * moves), explorer_screen.c (the screen layout), explorer_work.c (work in
 * the background). */
#ifndef FL_APP_EXPLORER_IMPL_H
#define FL_APP_EXPLORER_IMPL_H

#include <pthread.h>
#include <signal.h>

#include "explorer.h"
#include "ladder.h"
#include "overrides.h"
#include "view.h"

#define FL_X_VIEWS 8

/* The complete run of the current options, worked out on a worker
 * thread in a session of its own (the step count, tour stops). */
typedef struct fl_full_job {
	pthread_t thread;
	bool started, joined;
	fl_graph *graph;	/* the job's own copy */
	fl_engine_opts opts;
	pthread_mutex_t mu;
	bool done;		/* under mu */
	int total;		/* -1 on error */
	fl_event_log *log;	/* the complete log, owned */
	fl_error err;
} fl_full_job;

/* Compiling and running every strategy (the ladder) on a worker thread. */
typedef struct fl_run_job {
	pthread_t thread;
	bool started, joined;
	fl_graph *graph;
	fl_engine_opts opts;
	volatile sig_atomic_t stop;	/* opts.run.interrupt: Esc */
	pthread_mutex_t mu;
	bool done;		/* under mu, and the fields below */
	char phase[32];
	int k, n, strategy, n_strategies;
	double started_at;
	int rc;
	fl_ladder ladder;
	fl_error err;
} fl_run_job;

typedef enum fl_prompt {
	FL_PROMPT_NONE, FL_PROMPT_GOTO, FL_PROMPT_FIND, FL_PROMPT_EXPORT,
	FL_PROMPT_SAVE, FL_PROMPT_LOAD,
} fl_prompt;

typedef enum fl_overlay {
	FL_OVERLAY_NONE, FL_OVERLAY_HELP, FL_OVERLAY_TEXT,
	FL_OVERLAY_OVERRIDES,
} fl_overlay;

struct fl_explorer {
	fl_graph *graph;	/* the input graph (owned copy) */
	char label[256];
	fl_engine_opts base;	/* the options as given */
	fl_engine_opts opts;	/* base + overrides + strategy */
	fl_session *s;
	fl_session *prev;	/* before the last override, same step */
	char prev_label[200];
	fl_ladder *ladder, *prev_ladder;

	fl_full_job *full;
	bool full_seen;		/* the status line shows its total */
	fl_run_job *run;
	char run_line[1200];	/* the last run's outcome */

	fl_overrides *overrides;	/* forbidden and forced fusions */
	int override_cursor;

	fl_tour *tour;
	int tour_stop;		/* shown stop, -1 none */

	const fl_view_class *classes[FL_X_VIEWS];
	void *views[FL_X_VIEWS];
	int pane[2];		/* view in each pane */
	int focus;		/* 0 or 1 */
	bool two_panes;		/* the last render had two panes */
	int pane_x[2], pane_y, pane_w[2], pane_h;

	fl_view_sel sel;
	char sel_name[128];	/* selection and marks by op name: indices
				   change when preprocess rewrites */
	char mark_name[2][128];
	bool *hl;

	fl_prompt prompt;
	char input[320];
	fl_overlay overlay;
	char overlay_title[300];
	char overlay_text[4096];

	char message[512];
	fl_look message_look;
	int mouse_x, mouse_y;
};

/* explorer.c */
void fl_x_say(fl_explorer *x, fl_look look, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The context views render with, for the current position. */
void fl_x_context(fl_explorer *x, fl_view_ctx *c, int pane);
int fl_x_total(const fl_explorer *x);

/* Saves the overrides to path, or loads them from path and re-runs. */
void fl_x_overrides_file(fl_explorer *x, bool save, const char *path);
/* Re-runs under base + the overrides; label says what changed. */
void fl_x_apply_overrides(fl_explorer *x, const char *label);

/* explorer_export.c: the file name `e` suggests for the view in focus,
 * and the export itself (the view's picture, or the JSON report). */
void fl_x_export_name(fl_explorer *x, char *buf, size_t n);
void fl_x_export(fl_explorer *x, const char *path);

/* explorer_work.c */
int fl_x_full_start(fl_explorer *x, fl_error *err);
/* The complete log when the full run is done (NULL before); with wait,
 * joins it first. */
const fl_event_log *fl_x_full_log(fl_explorer *x, bool wait);
void fl_x_full_stop(fl_explorer *x);
int fl_x_run_start(fl_explorer *x, fl_error *err);
void fl_x_run_cancel(fl_explorer *x);
/* Takes a finished run's ladder; true when something changed. */
bool fl_x_run_poll(fl_explorer *x);
/* "compile 3/12 ..." for the message line, "" when idle. */
void fl_x_run_progress(fl_explorer *x, char *buf, size_t n, double *frac);
void fl_x_run_stop(fl_explorer *x);

/* explorer_screen.c */
void fl_x_render(fl_explorer *x, fl_grid *g);
/* The pane under screen cell (col, row), -1 none; *vx, *vy the cell in
 * that pane's view grid. */
int fl_x_pane_at(const fl_explorer *x, int col, int row, int *vx, int *vy);

#endif
