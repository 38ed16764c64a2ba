/* The explorer's screen (see explorer.h): a tab bar, one pane (or two
 * side by side from TWO_PANES_COLS columns), a message line and a status
 * line; overlays (help, explanations, the overrides list) drawn on top.
 * Everything goes into a cell grid; app/tui.c puts it on the terminal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explorer_impl.h"
#include "keymap.h"
#include "tour.h"

#define TWO_PANES_COLS 160
#define MIN_COLS 40
#define MIN_LINES 10

/* The tab bar: every view by number and name, names cut to five
 * letters when the full bar does not fit (80 columns). */
static void tab_bar(fl_explorer *x, fl_grid *g)
{
	int col = 0, full = 8, cut = 5;

	for (int v = 0; v < FL_X_VIEWS; v++)
		full += 4 + (int)strlen(x->classes[v]->name);
	fl_grid_fill(g, 0, 0, g->w, 1, ' ', FL_LOOK_STATUS);
	if (full <= g->w)
		col += fl_grid_text(g, col, 0, -1, "fuselab ", FL_LOOK_STATUS);
	for (int v = 0; v < FL_X_VIEWS; v++) {
		fl_look look = FL_LOOK_STATUS;
		char tab[40];

		if (v == x->pane[x->focus])
			look = FL_LOOK_CURSOR;
		else if (x->two_panes && v == x->pane[1 - x->focus])
			look = FL_LOOK_HIGHLIGHT;
		snprintf(tab, sizeof tab, " %d %.*s ", v + 1,
			 full <= g->w ? 32 : cut, x->classes[v]->name);
		col += fl_grid_text(g, col, 0, -1, tab, look);
	}
}

/* The pass of the next decision, or of the last one at the end. */
static const char *pass_label(const fl_explorer *x)
{
	fl_pass p = fl_engine_current_pass(x->s);

	if (p >= FL_PASS_COUNT)
		return "done";
	return fl_pass_name(p);
}

static void status_line(fl_explorer *x, fl_grid *g)
{
	int step = fl_engine_position(x->s), total = fl_x_total(x);
	const fl_event *e = step > 0 ? fl_event_log_get(fl_engine_events(x->s),
							step - 1) : NULL;
	char total_text[32], line[1024];

	if (total >= 0)
		snprintf(total_text, sizeof total_text, "%d", total);
	else
		snprintf(total_text, sizeof total_text, "...");
	/* the reason names its rule itself ("R4: B->R merge ...") */
	snprintf(line, sizeof line, " %s | %s | %s | step %d/%s | %s",
		 x->label, fl_strategy_name(x->opts.strategy), pass_label(x),
		 step, total_text,
		 e ? e->reason : "no decision yet: n makes the first");
	fl_grid_fill(g, 0, g->h - 1, g->w, 1, ' ', FL_LOOK_STATUS);
	fl_grid_text(g, 0, g->h - 1, -1, line, FL_LOOK_STATUS);
}

static const char *prompt_label(fl_prompt p)
{
	switch (p) {
	case FL_PROMPT_GOTO: return "go to step: ";
	case FL_PROMPT_FIND: return "find op: ";
	case FL_PROMPT_EXPORT: return "export JSON report to: ";
	case FL_PROMPT_SAVE: return "save overrides to: ";
	case FL_PROMPT_LOAD: return "load overrides from: ";
	case FL_PROMPT_NONE: break;
	}
	return "";
}

/* The message line: a prompt, else the run's progress bar, else the
 * last message (tour text, results, errors). */
static void message_line(fl_explorer *x, fl_grid *g)
{
	int y = g->h - 2;
	char progress[256];
	double frac;

	if (x->prompt != FL_PROMPT_NONE) {
		int col = fl_grid_text(g, 0, y, -1, prompt_label(x->prompt),
				       FL_LOOK_TITLE);

		col += fl_grid_text(g, col, y, -1, x->input, FL_LOOK_NORMAL);
		fl_grid_put(g, col, y, '_', FL_LOOK_CURSOR);
		return;
	}
	fl_x_run_progress(x, progress, sizeof progress, &frac);
	if (progress[0]) {
		int bar = g->w / 4, filled = (int)(frac * bar + 0.5);

		fl_grid_put(g, 0, y, '[', FL_LOOK_NORMAL);
		fl_grid_fill(g, 1, y, filled, 1, FL_CH_BLOCK, FL_LOOK_OK);
		fl_grid_fill(g, 1 + filled, y, bar - filled, 1, FL_CH_LIGHT,
			     FL_LOOK_DIM);
		fl_grid_put(g, bar + 1, y, ']', FL_LOOK_NORMAL);
		fl_grid_text(g, bar + 3, y, -1, progress, FL_LOOK_NORMAL);
		return;
	}
	fl_grid_text(g, 0, y, -1, x->message, x->message_look);
}

static void render_pane(fl_explorer *x, fl_grid *screen, int pane)
{
	int v = x->pane[pane];
	fl_view_ctx c;
	fl_grid *g = fl_grid_new(x->pane_w[pane], x->pane_h);

	if (!g)
		return;
	fl_x_context(x, &c, pane);
	x->classes[v]->render(x->views[v], &c, g);
	fl_grid_blit(screen, x->pane_x[pane], x->pane_y, g);
	fl_grid_free(g);
}

static void layout_panes(fl_explorer *x, const fl_grid *g)
{
	x->two_panes = g->w >= TWO_PANES_COLS;
	x->pane_y = 1;
	x->pane_h = g->h - 3;
	if (!x->two_panes) {
		x->focus = 0;
		x->pane_x[0] = 0;
		x->pane_w[0] = g->w;
		return;
	}
	x->pane_x[0] = 0;
	x->pane_w[0] = (g->w - 1) / 2;
	x->pane_x[1] = x->pane_w[0] + 1;
	x->pane_w[1] = g->w - x->pane_x[1];
}

int fl_x_pane_at(const fl_explorer *x, int col, int row, int *vx, int *vy)
{
	for (int p = 0; p < (x->two_panes ? 2 : 1); p++)
		if (col >= x->pane_x[p] && col < x->pane_x[p] + x->pane_w[p] &&
		    row >= x->pane_y && row < x->pane_y + x->pane_h) {
			*vx = col - x->pane_x[p];
			*vy = row - x->pane_y;
			return p;
		}
	return -1;
}

/* A framed box in the middle of the screen for an overlay; returns the
 * inner rectangle. */
static void overlay_box(fl_grid *g, int want_w, int want_h, const char *title,
			int *ix, int *iy, int *iw, int *ih)
{
	int w = want_w + 4 < g->w ? want_w + 4 : g->w;
	int h = want_h + 2 < g->h ? want_h + 2 : g->h;
	int x0 = (g->w - w) / 2, y0 = (g->h - h) / 2;

	fl_grid_fill(g, x0, y0, w, h, ' ', FL_LOOK_NORMAL);
	fl_grid_box(g, x0, y0, w, h, FL_LOOK_TITLE);
	fl_grid_textf(g, x0 + 2, y0, w - 4, FL_LOOK_TITLE, " %s ", title);
	*ix = x0 + 2;
	*iy = y0 + 1;
	*iw = w - 4;
	*ih = h - 2;
}

static void help_overlay(fl_explorer *x, fl_grid *g)
{
	const fl_view_class *vc = x->classes[x->pane[x->focus]];
	int rows = 0, ix, iy, iw, ih, y;

	for (const fl_xkey *k = fl_xkeys; k->key; k++)
		rows += k->label != NULL;
	for (const fl_view_key *k = vc->keys; k && k->keys; k++)
		rows++;
	overlay_box(g, 76, rows + 2, "fuselab keys (any key closes)", &ix,
		    &iy, &iw, &ih);
	y = iy;
	for (const fl_xkey *k = fl_xkeys; k->key && y < iy + ih; k++)
		if (k->label) {
			fl_grid_text(g, ix, y, 10, k->label, FL_LOOK_TITLE);
			fl_grid_text(g, ix + 10, y++, iw - 10, k->help,
				     FL_LOOK_NORMAL);
		}
	if (y < iy + ih)
		fl_grid_textf(g, ix, y++, iw, FL_LOOK_TITLE, "in the %s view:",
			      vc->name);
	for (const fl_view_key *k = vc->keys; k && k->keys && y < iy + ih; k++) {
		fl_grid_text(g, ix, y, 10, k->keys, FL_LOOK_TITLE);
		fl_grid_text(g, ix + 10, y++, iw - 10, k->help, FL_LOOK_NORMAL);
	}
}


static void text_overlay(fl_explorer *x, fl_grid *g)
{
	int ix, iy, iw, ih;

	overlay_box(g, 70, 8, x->overlay_title, &ix, &iy, &iw, &ih);
	fl_grid_wrap(g, ix, iy, iw, ih, x->overlay_text, FL_LOOK_NORMAL);
}

/* The units of a session's state as op-name lists: its kernels once
 * layer 1 ran, else its alive micro-graphs.  Each unit is one string
 * "a b c" in buf rows; returns the count. */
static int units_of(const fl_session *s, char (*rows)[256], int max)
{
	const fl_program *p = fl_engine_program(s);
	const fl_partition *part = fl_engine_partition(s);
	const fl_graph *g = fl_engine_graph(s);
	int n = 0;

	for (int u = 0; p && u < p->n_kernels && n < max; u++, n++) {
		size_t len = 0;

		rows[n][0] = '\0';
		for (int i = 0; i < p->kernels[u].n_ops && len < 250; i++)
			len += (size_t)snprintf(rows[n] + len, 256 - len, "%s%s",
						i ? " " : "",
						g->ops[p->kernels[u].ops[i]].name);
	}
	for (int u = 0; !p && part && u < part->n_groups && n < max; u++) {
		const fl_micro_graph *mg = &part->groups[u];
		size_t len = 0;

		if (!mg->alive)
			continue;
		rows[n][0] = '\0';
		for (int i = 0; i < mg->n_members && len < 250; i++)
			len += (size_t)snprintf(rows[n] + len, 256 - len, "%s%s",
						i ? " " : "", g->ops[mg->members[i]].name);
		n++;
	}
	return n;
}

static bool has_unit(char (*rows)[256], int n, const char *unit)
{
	for (int i = 0; i < n; i++)
		if (strcmp(rows[i], unit) == 0)
			return true;
	return false;
}

/* The run before the last override beside this one: unit counts and the
 * units that are new (+) or gone (-). */
static int compare_rows(fl_explorer *x, fl_grid *g, int ix, int y, int iw,
			int y_end)
{
	enum { MAX_UNITS = 256 };
	char (*now)[256] = malloc(sizeof(char[MAX_UNITS][256]));
	char (*before)[256] = malloc(sizeof(char[MAX_UNITS][256]));
	int n_now, n_before;

	if (!x->prev || !now || !before) {
		free(now);
		free(before);
		return y;
	}
	n_now = units_of(x->s, now, MAX_UNITS);
	n_before = units_of(x->prev, before, MAX_UNITS);
	fl_grid_textf(g, ix, y++, iw, FL_LOOK_TITLE, "before \"%s\": %d %s; "
		      "now %d (at step %d)", x->prev_label, n_before,
		      fl_engine_program(x->s) ? "kernels" : "micro-graphs",
		      n_now, fl_engine_position(x->s));
	for (int i = 0; i < n_now && y < y_end; i++)
		if (!has_unit(before, n_before, now[i]))
			fl_grid_textf(g, ix, y++, iw, FL_LOOK_OK, "  + %s", now[i]);
	for (int i = 0; i < n_before && y < y_end; i++)
		if (!has_unit(now, n_now, before[i]))
			fl_grid_textf(g, ix, y++, iw, FL_LOOK_BAD, "  - %s",
				      before[i]);
	free(now);
	free(before);
	return y;
}

static void overrides_overlay(fl_explorer *x, fl_grid *g)
{
	int ix, iy, iw, ih, y;

	int n = fl_overrides_count(x->overrides);

	overlay_box(g, 90, n + 14, "overrides", &ix, &iy, &iw, &ih);
	y = iy;
	if (n == 0)
		fl_grid_text(g, ix, y++, iw, "none: mark two ops (m), then f "
			     "forbids or F forces their fusion", FL_LOOK_DIM);
	for (int i = 0; i < n && y < iy + ih - 2; i++) {
		const fl_override *v = fl_overrides_get(x->overrides, i);

		fl_grid_textf(g, ix, y++, iw, i == x->override_cursor ?
			      FL_LOOK_CURSOR : FL_LOOK_NORMAL, "%2d  %-6s  %s  %s",
			      i + 1, fl_override_action_name(v->force), v->a, v->b);
	}
	compare_rows(x, g, ix, y + 1, iw, iy + ih - 1);
	fl_grid_text(g, ix, iy + ih - 1, iw, "d remove  S save  L load  "
		     "other keys close", FL_LOOK_DIM);
}

/* The text of the tour stop the cursor is at, in a framed box over the
 * bottom of the panes, word-wrapped. */
static void tour_box(fl_explorer *x, fl_grid *g)
{
	const char *text = fl_tour_text(x->tour, x->tour_stop);
	int inner = g->w - 4, rows, h, y0;

	/* counted first (no grid), then drawn in place */
	rows = fl_grid_wrap(NULL, 0, 0, inner, 6, text, FL_LOOK_NORMAL);
	h = rows + 2;
	y0 = g->h - 2 - h;
	fl_grid_fill(g, 0, y0, g->w, h, ' ', FL_LOOK_NORMAL);
	fl_grid_box(g, 0, y0, g->w, h, FL_LOOK_TITLE);
	fl_grid_textf(g, 2, y0, g->w - 4, FL_LOOK_TITLE, " tour %d/%d ",
		      x->tour_stop + 1, fl_tour_count(x->tour));
	fl_grid_wrap(g, 2, y0 + 1, inner, rows, text, FL_LOOK_NORMAL);
}

void fl_x_render(fl_explorer *x, fl_grid *g)
{
	fl_grid_clear(g);
	if (g->w < MIN_COLS || g->h < MIN_LINES) {
		fl_grid_textf(g, 0, 0, -1, FL_LOOK_BAD, "terminal too small: "
			      "%dx%d (need %dx%d)", g->w, g->h, MIN_COLS,
			      MIN_LINES);
		return;
	}
	layout_panes(x, g);
	tab_bar(x, g);
	render_pane(x, g, 0);
	if (x->two_panes) {
		fl_grid_vline(g, x->pane_x[1] - 1, x->pane_y, x->pane_h,
			      FL_LOOK_DIM);
		render_pane(x, g, 1);
	}
	message_line(x, g);
	status_line(x, g);
	if (x->tour && x->tour_stop >= 0 && x->overlay == FL_OVERLAY_NONE)
		tour_box(x, g);
	if (x->overlay == FL_OVERLAY_HELP)
		help_overlay(x, g);
	else if (x->overlay == FL_OVERLAY_TEXT)
		text_overlay(x, g);
	else if (x->overlay == FL_OVERLAY_OVERRIDES)
		overrides_overlay(x, g);
}
