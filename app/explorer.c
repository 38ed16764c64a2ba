/* The explorer's model: keys to engine moves and view actions (see
 * explorer.h).  The screen layout is explorer_screen.c, the background
 * work explorer_work.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "explorer_impl.h"
#include "keymap.h"
#include "report_json.h"
#include "tour.h"

static const fl_view_class *const view_classes[FL_X_VIEWS] = {
	&fl_view_graph, &fl_view_decisions, &fl_view_schedule,
	&fl_view_domain, &fl_view_memory, &fl_view_parallel,
	&fl_view_timings, &fl_view_code,
};

void fl_x_say(fl_explorer *x, fl_look look, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->message, sizeof x->message, fmt, ap);
	va_end(ap);
	x->message_look = look;
}

/* ---- selection by name ------------------------------------------------ */

static int op_by_name(const fl_explorer *x, const char *name)
{
	return name[0] ? fl_graph_find_op(fl_engine_graph(x->s), name) : -1;
}

static const char *op_name(const fl_explorer *x, int op)
{
	const fl_graph *g = fl_engine_graph(x->s);

	return op >= 0 && op < g->n_ops ? g->ops[op].name : "";
}

/* Re-resolves the selection and marks after the session moved (the
 * graph may have been rewritten), and the highlighted ops. */
static void refresh(fl_explorer *x)
{
	const fl_graph *g = fl_engine_graph(x->s);
	int step = fl_engine_position(x->s);
	const fl_event *e = step > 0 ? fl_event_log_get(fl_engine_events(x->s),
							step - 1) : NULL;
	bool *hl = calloc((size_t)g->n_ops + 1, sizeof *hl);

	x->sel.op = op_by_name(x, x->sel_name);
	x->sel.n_marks = 0;
	for (int i = 0; i < 2; i++) {
		int op = op_by_name(x, x->mark_name[i]);

		if (op >= 0)
			x->sel.marks[x->sel.n_marks++] = op;
	}
	if (x->sel.kernel >= 0) {
		const fl_program *p = fl_engine_program(x->s);

		if (!p || x->sel.kernel >= p->n_kernels)
			x->sel.kernel = -1;
	}
	if (x->sel.event >= step)
		x->sel.event = step - 1;
	free(x->hl);
	x->hl = hl;
	for (int i = 0; e && hl && i < e->n_ops; i++) {
		int op = fl_graph_find_op(g, e->ops[i]);

		if (op >= 0)
			hl[op] = true;
	}
}

void fl_x_context(fl_explorer *x, fl_view_ctx *c, int pane)
{
	int step = fl_engine_position(x->s);

	memset(c, 0, sizeof *c);
	c->s = x->s;
	c->sel = &x->sel;
	c->step = step;
	c->total = fl_x_total(x);
	c->current = step > 0 ? fl_event_log_get(fl_engine_events(x->s),
						 step - 1) : NULL;
	c->highlighted = c->current ? x->hl : NULL;
	c->ladder = x->ladder;
	for (int i = 0; x->ladder && i < x->ladder->n; i++)
		if (x->ladder->steps[i].strategy == x->opts.strategy &&
		    x->ladder->steps[i].ran)
			c->timed = &x->ladder->steps[i];
	c->prev = x->prev;
	c->prev_ladder = x->prev_ladder;
	c->prev_label = x->prev ? x->prev_label : NULL;
	c->mouse_x = x->mouse_x;
	c->mouse_y = x->mouse_y;
	c->focused = pane == x->focus;
}

static void select_op(fl_explorer *x, int op)
{
	snprintf(x->sel_name, sizeof x->sel_name, "%s", op_name(x, op));
	x->sel.op = op;
	x->sel.kernel = -1;
	if (op >= 0) {
		fl_view_ctx c;

		fl_x_context(x, &c, x->focus);
		x->sel.kernel = fl_view_kernel_of_op(&c, op);
	}
}

/* ---- moving the session ---------------------------------------------- */

static void show_tour_stop(fl_explorer *x);

/* After any move: selection, highlights, tour text, message. */
static void moved(fl_explorer *x, int r, const fl_error *err)
{
	refresh(x);
	if (r < 0) {
		fl_x_say(x, FL_LOOK_BAD, "%s", err->msg);
		return;
	}
	x->message[0] = '\0';
	show_tour_stop(x);
}

static void go(fl_explorer *x, int step)
{
	fl_error err = {""};
	int total = fl_x_total(x);

	if (step < 0)
		step = 0;
	if (total >= 0 && step > total)
		step = total;
	moved(x, fl_engine_goto(x->s, step, &err), &err);
}

/* The step at which the pass of the last decision began; from there, the
 * start of the pass before. */
static int pass_start(const fl_explorer *x)
{
	const fl_event_log *log = fl_engine_events(x->s);
	int k = fl_engine_position(x->s);
	fl_pass p;

	if (k == 0)
		return 0;
	p = fl_event_log_get(log, k - 1)->pass;
	while (k > 0 && fl_event_log_get(log, k - 1)->pass == p)
		k--;
	return k;
}

static void step_action(fl_explorer *x, fl_xact a)
{
	fl_error err = {""};
	int r = 0;

	switch (a) {
	case FL_X_NEXT:
		if (fl_engine_done(x->s)) {
			fl_x_say(x, FL_LOOK_DIM, "at the end: every decision "
				 "is made (N goes back)");
			return;
		}
		r = fl_engine_step(x->s, &err);
		break;
	case FL_X_BACK:
		r = fl_engine_step_back(x->s, &err);
		break;
	case FL_X_NEXT_PASS:
		r = fl_engine_step_pass(x->s, &err);
		break;
	case FL_X_PREV_PASS: {
		int start = pass_start(x);

		if (start == fl_engine_position(x->s) && start > 0) {
			r = fl_engine_goto(x->s, start - 1, &err);
			if (r >= 0)
				start = pass_start(x);
		}
		if (r >= 0)
			r = fl_engine_goto(x->s, start, &err);
		break;
	}
	case FL_X_TO_END:
		r = fl_engine_run(x->s, &err);
		break;
	default:
		return;
	}
	moved(x, r, &err);
}

/* ---- tours ------------------------------------------------------------ */

static void show_tour_stop(fl_explorer *x)
{
	int stop;

	x->tour_stop = -1;
	if (!x->tour)
		return;
	stop = fl_tour_match(x->tour, fl_engine_events(x->s),
			     fl_engine_position(x->s));
	if (stop < 0)
		return;
	x->tour_stop = stop;
	fl_x_say(x, FL_LOOK_TITLE, "tour stop %d of %d (t: the next one)",
		 stop + 1, fl_tour_count(x->tour));
}

static void next_tour_stop(fl_explorer *x)
{
	const fl_event_log *log;
	int step;

	if (!x->tour || fl_tour_count(x->tour) == 0) {
		fl_x_say(x, FL_LOOK_DIM, "this graph has no tour (the paper "
			 "samples carry one)");
		return;
	}
	log = fl_x_full_log(x, true);
	if (!log) {
		fl_x_say(x, FL_LOOK_BAD, "the complete run failed: %s",
			 x->full ? x->full->err.msg : "");
		return;
	}
	step = fl_tour_next(x->tour, log, fl_engine_position(x->s));
	if (step < 0) {
		fl_x_say(x, FL_LOOK_DIM, "no tour stop after step %d "
			 "(g 0 starts over)", fl_engine_position(x->s));
		return;
	}
	go(x, step);
}

/* ---- options and overrides ------------------------------------------- */

/* opts = base + the overrides, keeping the strategy. */
static int build_opts(fl_explorer *x, fl_engine_opts *o, fl_error *err)
{
	fl_strategy strategy = x->opts.strategy;

	*o = x->base;
	o->strategy = strategy;
	return fl_overrides_apply(x->overrides, o, err);
}

/* The first decision where two logs differ (their common length when
 * one is a prefix of the other). */
static int first_difference(const fl_event_log *a, const fl_event_log *b)
{
	int n = fl_event_log_count(a), m = fl_event_log_count(b);
	int k = 0;

	while (k < n && k < m && fl_event_log_equal_prefix(a, b, k + 1))
		k++;
	return k;
}

static int kernels_of(const fl_session *s)
{
	const fl_program *p = fl_engine_program(s);

	return p ? p->n_kernels : fl_partition_count_alive(fl_engine_partition(s));
}

static int renew_views(fl_explorer *x, fl_error *err)
{
	for (int v = 0; v < FL_X_VIEWS; v++) {
		void *fresh = x->classes[v]->create();

		if (!fresh) {
			fl_error_set(err, "out of memory");
			return -1;
		}
		x->classes[v]->destroy(x->views[v]);
		x->views[v] = fresh;
	}
	return 0;
}

/* Re-opens the session under new options at the same step; the old one
 * becomes `prev` for comparing.  label says what changed. */
static int reopen(fl_explorer *x, const fl_engine_opts *o, const char *label)
{
	fl_error err = {""};
	int step = fl_engine_position(x->s);
	const fl_event_log *old_log;
	fl_session *s = fl_engine_open(x->graph, o, &err);
	int first, total, before, after;

	/* A kernel run under way measures the old options: it stops. */
	if (x->run) {
		fl_x_run_stop(x);
		fl_x_say(x, FL_LOOK_WARN, "kernel run cancelled: the options "
			 "changed");
	}
	if (!s || fl_engine_run(s, &err) < 0) {
		fl_engine_close(s);
		fl_x_say(x, FL_LOOK_BAD, "%s: %s", label, err.msg);
		return -1;
	}
	total = fl_engine_position(s);
	after = kernels_of(s);
	old_log = fl_x_full_log(x, true);
	first = old_log ? first_difference(old_log, fl_engine_events(s)) : 0;
	fl_engine_goto(s, step < total ? step : total, &err);
	/* Views may keep work derived from the session they drew (isl
	 * objects of its isl_ctx, event addresses): fresh ones draw the new
	 * session, before any session closes. */
	if (renew_views(x, &err) < 0) {
		fl_engine_close(s);
		fl_x_say(x, FL_LOOK_BAD, "%s: %s", label, err.msg);
		return -1;
	}
	if (x->prev)
		fl_engine_close(x->prev);
	x->prev = x->s;
	x->s = s;
	/* The old session at its end for the kernel count, then back at the
	 * same step for the views that compare (memoised: cheap). */
	fl_engine_run(x->prev, &err);
	before = kernels_of(x->prev);
	fl_engine_goto(x->prev, step, &err);
	snprintf(x->prev_label, sizeof x->prev_label, "%s", label);
	x->opts = *o;
	if (x->prev_ladder) {
		fl_ladder_free(x->prev_ladder);
		free(x->prev_ladder);
	}
	x->prev_ladder = x->ladder;	/* its kernels are the old ones */
	x->ladder = NULL;
	fl_x_full_start(x, &err);
	refresh(x);
	fl_x_say(x, FL_LOOK_OK, "%s: re-ran from step %d (first changed "
		 "decision); kernels %d -> %d at the end", label, first,
		 before, after);
	return 0;
}

void fl_x_apply_overrides(fl_explorer *x, const char *label)
{
	fl_engine_opts o;
	fl_error err = {""};

	if (build_opts(x, &o, &err) < 0) {
		fl_x_say(x, FL_LOOK_BAD, "%s", err.msg);
		return;
	}
	reopen(x, &o, label);
}

static void add_override(fl_explorer *x, bool force)
{
	fl_error err = {""};
	char label[300];

	if (x->sel.n_marks < 2) {
		fl_x_say(x, FL_LOOK_WARN, "mark two ops first (m on each)");
		return;
	}
	if (fl_overrides_add(x->overrides, force, x->mark_name[0],
			     x->mark_name[1], &err) < 0) {
		fl_x_say(x, FL_LOOK_BAD, "%s", err.msg);
		return;
	}
	snprintf(label, sizeof label, "%s %s %s",
		 fl_override_action_name(force), x->mark_name[0],
		 x->mark_name[1]);
	fl_x_apply_overrides(x, label);
}

static void remove_override(fl_explorer *x, int i)
{
	const fl_override *v = fl_overrides_get(x->overrides, i);
	char label[300];

	if (!v)
		return;
	snprintf(label, sizeof label, "removed %s %s %s",
		 fl_override_action_name(v->force), v->a, v->b);
	fl_overrides_remove(x->overrides, i);
	if (x->override_cursor >= fl_overrides_count(x->overrides) &&
	    x->override_cursor > 0)
		x->override_cursor--;
	fl_x_apply_overrides(x, label);
}

static void switch_strategy(fl_explorer *x)
{
	fl_engine_opts o = x->opts;
	char label[64];

	o.strategy = (fl_strategy)((o.strategy + 1) % FL_STRATEGY_COUNT);
	snprintf(label, sizeof label, "strategy %s", fl_strategy_name(o.strategy));
	reopen(x, &o, label);
}

/* ---- marks, why-not, find, export ------------------------------------ */

static void toggle_mark(fl_explorer *x)
{
	if (x->sel.op < 0) {
		fl_x_say(x, FL_LOOK_WARN, "select an op first (graph view, or "
			 "/ to find one)");
		return;
	}
	for (int i = 0; i < 2; i++)
		if (strcmp(x->mark_name[i], x->sel_name) == 0) {
			memmove(x->mark_name[i], x->mark_name[1], sizeof x->mark_name[1]);
			x->mark_name[1][0] = '\0';
			refresh(x);
			fl_x_say(x, FL_LOOK_DIM, "unmarked %s", x->sel_name);
			return;
		}
	if (x->mark_name[1][0] || !x->mark_name[0][0]) {
		if (x->mark_name[1][0])
			memcpy(x->mark_name[0], x->mark_name[1], sizeof x->mark_name[0]);
		snprintf(x->mark_name[x->mark_name[1][0] || x->mark_name[0][0] ? 1 : 0],
			 sizeof x->mark_name[0], "%s", x->sel_name);
	} else {
		snprintf(x->mark_name[1], sizeof x->mark_name[1], "%s", x->sel_name);
	}
	refresh(x);
	fl_x_say(x, FL_LOOK_MARK, "marked: %s%s%s%s", x->mark_name[0],
		 x->mark_name[1][0] ? ", " : "", x->mark_name[1],
		 x->sel.n_marks == 2 ? "  (w why, f forbid, F force)" : "");
}

static void why_not(fl_explorer *x)
{
	char buf[1024];
	fl_error err = {""};
	int step = fl_engine_position(x->s), r;

	if (x->sel.n_marks < 2) {
		fl_x_say(x, FL_LOOK_WARN, "mark two ops first (m on each), "
			 "then w");
		return;
	}
	/* The explanation is about the complete run; the cursor comes back
	 * to where it was (memoised: no work is redone). */
	r = fl_engine_explain(x->s, x->mark_name[0], x->mark_name[1], buf,
			      sizeof buf, &err);
	fl_engine_goto(x->s, step, &err);
	refresh(x);
	if (r < 0) {
		fl_x_say(x, FL_LOOK_BAD, "%s", err.msg);
		return;
	}
	snprintf(x->overlay_title, sizeof x->overlay_title, "why %s and %s",
		 x->mark_name[0], x->mark_name[1]);
	snprintf(x->overlay_text, sizeof x->overlay_text, "%s %s: %s\n\n"
		 "(f forbids, F forces this fusion and re-runs)",
		 r ? "together" : "apart", r ? "fused" : "not fused", buf);
	x->overlay = FL_OVERLAY_TEXT;
	fl_x_say(x, r ? FL_LOOK_OK : FL_LOOK_WARN, "%s", buf);
}

static void find_op(fl_explorer *x, const char *text)
{
	const fl_graph *g = fl_engine_graph(x->s);
	int start = x->sel.op, n = g->n_ops;

	if (!text[0])
		return;
	for (int i = 1; i <= n; i++) {
		int op = ((start < 0 ? -1 : start) + i + n) % n;

		if (strstr(g->ops[op].name, text)) {
			select_op(x, op);
			fl_x_say(x, FL_LOOK_OK, "found %s (op %d of %d; / again "
				 "finds the next)", g->ops[op].name, op + 1, n);
			return;
		}
	}
	fl_x_say(x, FL_LOOK_BAD, "no op named like \"%s\" at this step", text);
}


/* ---- prompts ---------------------------------------------------------- */

static void start_prompt(fl_explorer *x, fl_prompt p, const char *initial)
{
	x->prompt = p;
	snprintf(x->input, sizeof x->input, "%s", initial);
}

static void submit_prompt(fl_explorer *x)
{
	fl_prompt p = x->prompt;
	char *end;
	long k;

	x->prompt = FL_PROMPT_NONE;
	switch (p) {
	case FL_PROMPT_GOTO:
		k = strtol(x->input, &end, 10);
		if (end == x->input || *end || k < 0)
			fl_x_say(x, FL_LOOK_BAD, "not a step number: \"%s\"",
				 x->input);
		else
			go(x, k > 1000000000 ? 1000000000 : (int)k);
		break;
	case FL_PROMPT_FIND:
		find_op(x, x->input);
		break;
	case FL_PROMPT_EXPORT:
		fl_x_export(x, x->input);
		break;
	case FL_PROMPT_SAVE:
	case FL_PROMPT_LOAD:
		fl_x_overrides_file(x, p == FL_PROMPT_SAVE, x->input);
		break;
	case FL_PROMPT_NONE:
		break;
	}
}

static void prompt_key(fl_explorer *x, int key)
{
	size_t len = strlen(x->input);

	if (key == FL_KEY_ENTER || key == '\r')
		submit_prompt(x);
	else if (key == FL_KEY_ESC)
		x->prompt = FL_PROMPT_NONE;
	else if (key == FL_KEY_BACKSPACE || key == 8) {
		if (len)
			x->input[len - 1] = '\0';
	} else if (key >= 0x20 && key < 0x7f && len + 1 < sizeof x->input) {
		x->input[len] = (char)key;
		x->input[len + 1] = '\0';
	}
}

/* ---- overlays --------------------------------------------------------- */

static void overrides_key(fl_explorer *x, int key)
{
	char name[300];

	switch (key) {
	case FL_KEY_UP: case 'k':
		if (x->override_cursor > 0)
			x->override_cursor--;
		break;
	case FL_KEY_DOWN: case 'j':
		if (x->override_cursor + 1 < fl_overrides_count(x->overrides))
			x->override_cursor++;
		break;
	case 'd': case FL_KEY_BACKSPACE:
		remove_override(x, x->override_cursor);
		break;
	case 'S':
		snprintf(name, sizeof name, "%s.overrides.json",
			 fl_engine_input_graph(x->s)->name);
		start_prompt(x, FL_PROMPT_SAVE, name);
		break;
	case 'L':
		start_prompt(x, FL_PROMPT_LOAD, "");
		break;
	default:
		x->overlay = FL_OVERLAY_NONE;
	}
}

/* ---- views ------------------------------------------------------------ */

static void show_view(fl_explorer *x, int v)
{
	if (v < 0 || v >= FL_X_VIEWS)
		return;
	if (x->two_panes && x->pane[1 - x->focus] == v)
		x->pane[1 - x->focus] = x->pane[x->focus];
	x->pane[x->focus] = v;
}

static void view_action(fl_explorer *x, const fl_view_action *a)
{
	switch (a->kind) {
	case FL_VIEW_ACT_SELECT_OP:
		select_op(x, a->arg);
		break;
	case FL_VIEW_ACT_SELECT_KERNEL:
		x->sel.kernel = a->arg;
		break;
	case FL_VIEW_ACT_SELECT_EVENT:
		x->sel.event = a->arg;
		break;
	case FL_VIEW_ACT_GOTO_STEP:
		go(x, a->arg);
		break;
	case FL_VIEW_ACT_MESSAGE:
		fl_x_say(x, FL_LOOK_NORMAL, "%s", a->text);
		break;
	case FL_VIEW_ACT_NONE:
		break;
	}
}

static void view_key(fl_explorer *x, int pane, int key)
{
	int v = x->pane[pane];
	fl_view_action a = {FL_VIEW_ACT_NONE, 0, ""};
	fl_view_ctx c;

	fl_x_context(x, &c, pane);
	if (x->classes[v]->key(x->views[v], &c, key, &a))
		view_action(x, &a);
}

/* ---- keys ------------------------------------------------------------- */

static bool global_key(fl_explorer *x, const fl_xkey *k)
{
	fl_error err = {""};
	char name[300];

	switch (k->act) {
	case FL_X_NEXT: case FL_X_BACK: case FL_X_NEXT_PASS:
	case FL_X_PREV_PASS: case FL_X_TO_END:
		step_action(x, k->act);
		break;
	case FL_X_GOTO:
		start_prompt(x, FL_PROMPT_GOTO, "");
		break;
	case FL_X_FIND:
		start_prompt(x, FL_PROMPT_FIND, "");
		break;
	case FL_X_MARK: toggle_mark(x); break;
	case FL_X_WHY: why_not(x); break;
	case FL_X_FORBID: add_override(x, false); break;
	case FL_X_FORCE: add_override(x, true); break;
	case FL_X_OVERRIDES:
		x->overlay = FL_OVERLAY_OVERRIDES;
		break;
	case FL_X_RUN:
		if (fl_x_run_start(x, &err) < 0)
			fl_x_say(x, FL_LOOK_WARN, "%s", err.msg);
		else
			fl_x_say(x, FL_LOOK_NORMAL, "compiling and running "
				 "every strategy in the background");
		break;
	case FL_X_CANCEL:
		if (x->run)
			fl_x_run_cancel(x);
		else
			x->message[0] = '\0';
		break;
	case FL_X_EXPORT:
		fl_x_export_name(x, name, sizeof name);
		start_prompt(x, FL_PROMPT_EXPORT, name);
		break;
	case FL_X_STRATEGY: switch_strategy(x); break;
	case FL_X_TOUR: next_tour_stop(x); break;
	case FL_X_SWAP:
		if (x->two_panes)
			x->focus = 1 - x->focus;
		else {
			int other = x->pane[1 - x->focus];

			x->pane[1 - x->focus] = x->pane[x->focus];
			x->pane[x->focus] = other;
		}
		break;
	case FL_X_NEXT_VIEW:
		show_view(x, (x->pane[x->focus] + 1) % FL_X_VIEWS);
		break;
	case FL_X_PREV_VIEW:
		show_view(x, (x->pane[x->focus] + FL_X_VIEWS - 1) % FL_X_VIEWS);
		break;
	case FL_X_VIEW: show_view(x, k->arg); break;
	case FL_X_HELP: x->overlay = FL_OVERLAY_HELP; break;
	case FL_X_QUIT: return false;
	case FL_X_NONE: break;
	}
	return true;
}

bool fl_explorer_key(fl_explorer *x, int key)
{
	const fl_xkey *k;

	if (key == FL_KEY_RESIZE)
		return true;
	if (x->prompt != FL_PROMPT_NONE) {
		prompt_key(x, key);
		return true;
	}
	if (x->overlay == FL_OVERLAY_OVERRIDES) {
		overrides_key(x, key);
		return true;
	}
	if (x->overlay != FL_OVERLAY_NONE) {
		x->overlay = FL_OVERLAY_NONE;	/* any key closes it */
		return true;
	}
	k = fl_xkey_find(key);
	if (k)
		return global_key(x, k);
	view_key(x, x->focus, key);
	return true;
}

void fl_explorer_click(fl_explorer *x, int col, int row)
{
	int vx, vy, pane = fl_x_pane_at(x, col, row, &vx, &vy);

	if (pane < 0 || x->prompt != FL_PROMPT_NONE ||
	    x->overlay != FL_OVERLAY_NONE)
		return;
	x->focus = pane;
	x->mouse_x = vx;
	x->mouse_y = vy;
	view_key(x, pane, FL_KEY_MOUSE);
}

bool fl_explorer_poll(fl_explorer *x)
{
	bool changed = fl_x_run_poll(x);
	bool full_done = fl_x_total(x) >= 0;

	/* The step count arrived: the status line changes once. */
	if (full_done != x->full_seen) {
		x->full_seen = full_done;
		changed = true;
	}
	return changed;
}

bool fl_explorer_busy(const fl_explorer *x)
{
	return x->run != NULL;
}

void fl_explorer_render(fl_explorer *x, fl_grid *g)
{
	fl_x_render(x, g);
}

const fl_session *fl_explorer_session(const fl_explorer *x)
{
	return x->s;
}

const char *fl_explorer_view_name(const fl_explorer *x)
{
	return x->classes[x->pane[x->focus]]->name;
}

int fl_explorer_wait(fl_explorer *x, double timeout_s)
{
	double t0 = fl_now();

	fl_x_full_log(x, true);
	while (x->run) {
		struct timespec ts = {0, 20 * 1000 * 1000};

		if (fl_now() - t0 > timeout_s)
			return -1;
		nanosleep(&ts, NULL);
		fl_x_run_poll(x);
	}
	return 0;
}

/* ---- open and close --------------------------------------------------- */

static int open_views(fl_explorer *x, fl_error *err)
{
	for (int v = 0; v < FL_X_VIEWS; v++) {
		x->classes[v] = view_classes[v];
		x->views[v] = x->classes[v]->create();
		if (!x->views[v]) {
			fl_error_set(err, "out of memory");
			return -1;
		}
	}
	x->pane[0] = 0;		/* graph */
	x->pane[1] = 1;		/* decisions */
	return 0;
}

/* Imported operators fuselab cannot compute: said at the start, since the
 * import's line on stderr is hidden by the screen. */
static void say_opaque_ops(fl_explorer *x)
{
	const fl_graph *g = x->graph;
	const char *first = NULL;
	int n = 0;

	for (int i = 0; i < g->n_ops; i++)
		if (!fl_op_computable(&g->ops[i])) {
			if (!first)
				first = g->ops[i].prov.source_op
					? g->ops[i].prov.source_op
					: g->ops[i].name;
			n++;
		}
	if (n)
		fl_x_say(x, FL_LOOK_WARN, "%d opaque custom op%s (%s%s): they "
			 "partition and show, but R cannot run this graph; n "
			 "steps, ? lists every key", n, n == 1 ? "" : "s",
			 first, n > 1 ? ", ..." : "");
}

fl_explorer *fl_explorer_open(const fl_graph *g, const fl_engine_opts *o,
			      const char *label, fl_tour *tour,
			      fl_overrides *overrides, fl_error *err)
{
	fl_explorer *x = calloc(1, sizeof *x);

	if (!overrides)
		overrides = fl_overrides_new();
	if (!x || !overrides) {
		fl_tour_free(tour);
		fl_overrides_free(overrides);
		free(x);
		fl_error_set(err, "out of memory");
		return NULL;
	}
	x->tour = tour;
	x->overrides = overrides;
	x->tour_stop = -1;
	x->sel.op = x->sel.kernel = x->sel.event = -1;
	snprintf(x->label, sizeof x->label, "%s", label);
	x->base = *o;
	/* The explorer shows progress itself: nothing may write to the
	 * terminal under curses. */
	x->base.run.progress = NULL;
	x->base.run.progress_user = NULL;
	x->base.run_kernels = false;
	x->base.stop_after = FL_PASS_CODEGEN;
	x->opts = x->base;
	x->graph = fl_graph_copy(g);
	if (!x->graph || build_opts(x, &x->opts, err) < 0 ||
	    open_views(x, err) < 0 ||
	    !(x->s = fl_engine_open(x->graph, &x->opts, err)) ||
	    fl_x_full_start(x, err) < 0) {
		if (!x->graph)
			fl_error_set(err, "out of memory");
		fl_explorer_close(x);
		return NULL;
	}
	refresh(x);
	fl_x_say(x, FL_LOOK_DIM, "n steps through the compiler, ? lists "
		 "every key%s", tour && fl_tour_count(tour) ? ", t follows the "
		 "tour" : "");
	say_opaque_ops(x);
	show_tour_stop(x);	/* a stop at step 0 introduces the tour */
	return x;
}

void fl_explorer_close(fl_explorer *x)
{
	if (!x)
		return;
	fl_x_run_stop(x);
	fl_x_full_stop(x);
	for (int v = 0; v < FL_X_VIEWS; v++)
		if (x->views[v])
			x->classes[v]->destroy(x->views[v]);
	fl_engine_close(x->s);
	fl_engine_close(x->prev);
	if (x->ladder) {
		fl_ladder_free(x->ladder);
		free(x->ladder);
	}
	if (x->prev_ladder) {
		fl_ladder_free(x->prev_ladder);
		free(x->prev_ladder);
	}
	fl_tour_free(x->tour);
	fl_overrides_free(x->overrides);
	fl_graph_free(x->graph);
	free(x->hl);
	free(x);
}
