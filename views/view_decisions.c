/* The decisions view (DESIGN 7): the event log synced with the step
 * cursor, filterable by pass and kind, with the details of the event
 * under the view's cursor at the bottom.
 *
 * The session's log holds the decisions made so far (ctx->step of
 * ctx->total): what lies after the cursor is not known yet, so the
 * title says how many are ahead.  The last decision made is the
 * current one (FL_LOOK_HIGHLIGHT); whenever the step moves, the view's
 * cursor jumps to it, and between moves the user may scroll the cursor
 * anywhere.  Only the rows on screen are formatted, so a log of
 * thousands of events redraws in microseconds.
 *
 * Keys: Up/Down/j/k, PgUp/PgDn, Home/End move the cursor (and select
 * that event); Enter goes to the state right after it; [ ] cycle the
 * pass filter, { } the kind filter, A shows all again; a click selects
 * a row. */
#include "view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct decisions {
	const fl_session *s;	/* the rows below are of this session */
	int n_events;		/* ... with this many events */
	const fl_event *last_ev;	/* ... the last at this address (a
				   replay, after an override, rebuilds the
				   log: likely elsewhere) */
	int pass, kind;		/* filters, -1: all */
	bool stale;		/* filters changed: rebuild the rows */
	int *rows;		/* event indices passing the filters */
	int n_rows;
	int last_step;		/* ctx->step at the last sync, -1: none */
	int cursor;		/* a row, -1 when there are none */
	int top;
	int list_h;		/* rows of the list at the last render */
} decisions;

static void *decisions_create(void)
{
	decisions *d = calloc(1, sizeof *d);

	if (!d)
		return NULL;
	d->pass = d->kind = -1;
	d->last_step = -1;
	d->cursor = -1;
	d->list_h = 10;
	return d;
}

static void decisions_destroy(void *st)
{
	decisions *d = st;

	if (!d)
		return;
	free(d->rows);
	free(d);
}

static bool passes_filter(const decisions *d, const fl_event *e)
{
	return (d->pass < 0 || (int)e->pass == d->pass) &&
	       (d->kind < 0 || (int)e->kind == d->kind);
}

/* The last row whose event is at or before event ev (0 when none). */
static int row_at_or_before(const decisions *d, int ev)
{
	int lo = 0, hi = d->n_rows - 1, best = 0;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (d->rows[mid] <= ev) {
			best = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return best;
}

/* Rebuilds the filtered rows when the log or the filters changed,
 * keeping the cursor on the same event (or the nearest before it). */
static void rebuild(decisions *d, const fl_view_ctx *c)
{
	const fl_event_log *log = fl_engine_events(c->s);
	int n = fl_event_log_count(log);
	int was = d->cursor >= 0 && d->cursor < d->n_rows ?
		  d->rows[d->cursor] : n - 1;
	const fl_event *last = n > 0 ? fl_event_log_get(log, n - 1) : NULL;
	int *rows;

	if (!d->stale && d->s == c->s && d->n_events == n &&
	    d->last_ev == last)
		return;
	rows = realloc(d->rows, ((size_t)n + 1) * sizeof *rows);
	if (!rows) {
		/* out of memory: show nothing rather than stale indices */
		d->n_rows = 0;
		d->cursor = -1;
		return;
	}
	d->rows = rows;
	d->n_rows = 0;
	for (int i = 0; i < n; i++)
		if (passes_filter(d, fl_event_log_get(log, i)))
			d->rows[d->n_rows++] = i;
	d->s = c->s;
	d->n_events = n;
	d->last_ev = last;
	d->stale = false;
	d->cursor = d->n_rows > 0 ? row_at_or_before(d, was) : -1;
}

/* Brings the rows up to date and, when the step moved since the last
 * sync, puts the cursor on the current decision. */
static void sync(decisions *d, const fl_view_ctx *c)
{
	rebuild(d, c);
	if (c->step != d->last_step) {
		d->last_step = c->step;
		d->cursor = d->n_rows > 0 ? row_at_or_before(d, c->step - 1)
					  : -1;
		fl_view_scroll_to(d->cursor, d->list_h, &d->top);
	}
	if (d->n_rows == 0)
		d->cursor = -1;
}

static fl_look kind_look(fl_event_kind k)
{
	switch (k) {
	case FL_EV_MERGED:
	case FL_EV_VERIFIED:
		return FL_LOOK_OK;
	case FL_EV_REJECTED:
	case FL_EV_FEEDBACK:
		return FL_LOOK_BAD;
	case FL_EV_EXTENDED:
	case FL_EV_PLACED:
		return FL_LOOK_WARN;
	default:
		return FL_LOOK_NORMAL;
	}
}


static void draw_title(const decisions *d, const fl_view_ctx *c, fl_grid *g)
{
	char ahead[64] = "";
	int x;

	if (c->total >= 0)
		snprintf(ahead, sizeof ahead, " of %d decisions; %d ahead",
			 c->total, c->total > c->step ? c->total - c->step : 0);
	x = fl_grid_textf(g, 0, 0, -1, FL_LOOK_TITLE, "decisions  %d%s",
			  c->step, ahead);
	fl_grid_textf(g, x + 2, 0, -1, FL_LOOK_DIM,
		      "pass: %s  kind: %s  (%d shown)",
		      d->pass < 0 ? "all" : fl_pass_name(d->pass),
		      d->kind < 0 ? "all" : fl_event_kind_name(d->kind),
		      d->n_rows);
}

static void draw_row(const decisions *d, const fl_view_ctx *c, fl_grid *g,
		     int y, int row)
{
	const fl_event *e = fl_event_log_get(fl_engine_events(c->s),
					     d->rows[row]);
	bool current = e->seq == c->step - 1;
	fl_look look = kind_look(e->kind);
	char buf[600];

	if (current)
		look = FL_LOOK_HIGHLIGHT;
	else if (row == d->cursor && c->focused)
		look = FL_LOOK_CURSOR;
	fl_grid_fill(g, 0, y, g->w, 1, ' ', look);
	if (row == d->cursor)
		fl_grid_put(g, 0, y, '>', c->focused ? FL_LOOK_CURSOR
						     : FL_LOOK_DIM);
	if (current)
		fl_grid_put(g, 1, y, FL_CH_BULLET, FL_LOOK_HIGHLIGHT);
	fl_grid_text(g, 2, y, -1, fl_event_format(e, buf, sizeof buf), look);
}

/* All fields of the event under the cursor, from row y0 to the end. */
static void draw_details(const decisions *d, const fl_view_ctx *c,
			 fl_grid *g, int y0)
{
	const fl_event *e;
	char buf[600], m[160];
	size_t used = 0;
	int y = y0 + 1, end = g->h;

	fl_grid_hline(g, 0, y0, g->w, FL_LOOK_DIM);
	fl_grid_text(g, 2, y0, -1, " details ", FL_LOOK_TITLE);
	if (d->cursor < 0) {
		fl_grid_text(g, 0, y, -1, d->n_events == 0 ?
			     "no decision made yet" :
			     "no decision matches the filters (A: all)",
			     FL_LOOK_DIM);
		return;
	}
	e = fl_event_log_get(fl_engine_events(c->s), d->rows[d->cursor]);
	fl_grid_textf(g, 0, y++, -1, kind_look(e->kind),
		      "#%d  pass %s  kind %s  rule %s%s", e->seq,
		      fl_pass_name(e->pass), fl_event_kind_name(e->kind),
		      e->rule[0] ? e->rule : "-",
		      e->seq == c->step - 1 ? "  (current)" : "");
	used = (size_t)snprintf(buf, sizeof buf, "ops:");
	for (int i = 0; i < e->n_ops && used < sizeof buf; i++)
		used += (size_t)snprintf(buf + used, sizeof buf - used, " %s",
					 e->ops[i]);
	if (e->n_ops == 0)
		snprintf(buf + used, sizeof buf - used, " -");
	y += fl_grid_wrap(g, 0, y, g->w, end - y > 2 ? 2 : end - y, buf,
		  FL_LOOK_NORMAL);
	used = (size_t)snprintf(buf, sizeof buf, "groups:");
	if (e->group_a >= 0)
		used += (size_t)snprintf(buf + used, sizeof buf - used,
					 " G%d", e->group_a);
	if (e->group_b >= 0)
		snprintf(buf + used, sizeof buf - used, " G%d", e->group_b);
	if (e->group_a < 0 && e->group_b < 0)
		snprintf(buf + used, sizeof buf - used, " -");
	fl_grid_text(g, 0, y++, -1, buf, FL_LOOK_NORMAL);
	fl_event_measured_text(e, m, sizeof m);
	fl_grid_textf(g, 0, y++, -1, FL_LOOK_DIM,
		      "at %.3f s, took %.3f ms%s%s", e->t_start,
		      e->duration * 1e3, m[0] ? "; measured: " : "", m);
	snprintf(buf, sizeof buf, "reason: %s", e->reason);
	fl_grid_wrap(g, 0, y, g->w, end - y, buf, FL_LOOK_NORMAL);
}

static void decisions_render(void *st, const fl_view_ctx *c, fl_grid *g)
{
	decisions *d = st;
	int detail_h, list_y = 1;

	sync(d, c);
	if (g->h < 1 || g->w < 1)
		return;
	draw_title(d, c, g);
	if (c->step == 0) {
		fl_view_empty(g, "no decisions yet: press n to make the "
			      "first");
		return;
	}
	/* the details take a third of the height, 4 to 9 rows, when there
	 * is room for a list above them */
	detail_h = g->h / 3;
	detail_h = detail_h < 4 ? 4 : detail_h > 9 ? 9 : detail_h;
	if (g->h - list_y - detail_h < 3)
		detail_h = 0;
	d->list_h = g->h - list_y - detail_h;
	if (d->list_h < 1)
		d->list_h = 1;
	if (d->cursor >= 0)
		fl_view_scroll_to(d->cursor, d->list_h, &d->top);
	if (d->top > d->n_rows - d->list_h)
		d->top = d->n_rows - d->list_h > 0 ? d->n_rows - d->list_h : 0;
	for (int r = 0; r < d->list_h && d->top + r < d->n_rows; r++)
		draw_row(d, c, g, list_y + r, d->top + r);
	if (detail_h > 0)
		draw_details(d, c, g, g->h - detail_h);
}

/* Moves the cursor to row r (clamped) and says which event that is. */
static int move_to(decisions *d, int r, fl_view_action *act)
{
	if (d->n_rows == 0)
		return 1;
	r = r < 0 ? 0 : r >= d->n_rows ? d->n_rows - 1 : r;
	d->cursor = r;
	fl_view_scroll_to(r, d->list_h, &d->top);
	act->kind = FL_VIEW_ACT_SELECT_EVENT;
	act->arg = d->rows[r];
	return 1;
}

/* Steps a filter through -1 (all), 0 .. n-1 by dir, wrapping. */
static int cycle(int v, int n, int dir)
{
	v += dir;
	if (v < -1)
		v = n - 1;
	if (v >= n)
		v = -1;
	return v;
}

static int filter_key(decisions *d, const fl_view_ctx *c, int key,
		      fl_view_action *act)
{
	switch (key) {
	case '[': d->pass = cycle(d->pass, FL_PASS_COUNT, -1); break;
	case ']': d->pass = cycle(d->pass, FL_PASS_COUNT, 1); break;
	case '{': d->kind = cycle(d->kind, FL_EV_KIND_COUNT, -1); break;
	case '}': d->kind = cycle(d->kind, FL_EV_KIND_COUNT, 1); break;
	case 'A': d->pass = d->kind = -1; break;
	default: return 0;
	}
	d->stale = true;
	rebuild(d, c);
	act->kind = FL_VIEW_ACT_MESSAGE;
	snprintf(act->text, sizeof act->text,
		 "decisions: pass %s, kind %s: %d shown",
		 d->pass < 0 ? "all" : fl_pass_name(d->pass),
		 d->kind < 0 ? "all" : fl_event_kind_name(d->kind), d->n_rows);
	return 1;
}

static int decisions_key(void *st, const fl_view_ctx *c, int key,
			 fl_view_action *act)
{
	decisions *d = st;
	int page = d->list_h > 1 ? d->list_h - 1 : 1;

	act->kind = FL_VIEW_ACT_NONE;
	sync(d, c);
	switch (key) {
	case FL_KEY_UP: case 'k': return move_to(d, d->cursor - 1, act);
	case FL_KEY_DOWN: case 'j': return move_to(d, d->cursor + 1, act);
	case FL_KEY_PGUP: return move_to(d, d->cursor - page, act);
	case FL_KEY_PGDN: return move_to(d, d->cursor + page, act);
	case FL_KEY_HOME: return move_to(d, 0, act);
	case FL_KEY_END: return move_to(d, d->n_rows - 1, act);
	case FL_KEY_ENTER:
		if (d->cursor >= 0) {
			act->kind = FL_VIEW_ACT_GOTO_STEP;
			act->arg = d->rows[d->cursor] + 1;
		}
		return 1;
	case FL_KEY_MOUSE:
		if (c->mouse_y >= 1 && c->mouse_y <= d->list_h &&
		    d->top + c->mouse_y - 1 < d->n_rows)
			return move_to(d, d->top + c->mouse_y - 1, act);
		return 1;
	default:
		return filter_key(d, c, key, act);
	}
}

static const fl_view_key decisions_keys[] = {
	{"Up Down j k", "move through the decisions"},
	{"PgUp PgDn Home End", "page, first, last"},
	{"Enter", "go to the state right after this decision"},
	{"[ ]", "filter by pass (cycle)"},
	{"{ }", "filter by kind (cycle)"},
	{"A", "show all passes and kinds"},
	{NULL, NULL},
};

const fl_view_class fl_view_decisions = {
	.name = "decisions",
	.keys = decisions_keys,
	.create = decisions_create,
	.destroy = decisions_destroy,
	.render = decisions_render,
	.key = decisions_key,
};
