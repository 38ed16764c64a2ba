/* The timings view (DESIGN 7, 1.6, 10): the strategy ladder of the last
 * kernel run (ctx->ladder).  One row per strategy: a bar proportional
 * to its time, kernels, median time with its min..max spread, speedup
 * over unfused (marked "noise" when the two runs' spreads overlap: not a
 * measured difference), verified, and the end-to-end max error.  A failed
 * strategy shows its status and message instead.
 *
 * Enter or Right expands the strategy under the cursor into its kernels,
 * each mapped back to its source ops (first..last, how many) with the
 * unfused time of those ops and the kernel's own speedup, then both
 * spreads (min..max) and the label they give: faster/SLOWER only when the
 * spreads do not overlap, else within noise.  Under the title, the
 * conditions of the measurement: the machine, the load average before
 * and after the timing, the copy bandwidth measured in the timing
 * process, whether it was interleaved and pinned; for the CUDA target
 * (--target cuda), the GPU the kernels ran on, or why the CPU backend ran
 * instead ("no CUDA device: CPU backend only").
 *
 * After an override the explorer passes the ladder of the run before it
 * (ctx->prev_ladder, ctx->prev_label): each strategy then gets a line
 * "before -> now" and the count of kernels that changed, and expanded
 * kernels that did not exist before are marked "new".
 *
 * Keys: Up/Down/j/k move over strategies; Enter/Right/l expand, Left/h
 * fold. */
#include "view.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tline {
	char text[300];
	fl_look look;
	int bar;		/* bar cells at bar_x, -1: none */
	fl_look bar_look;
} tline;

typedef struct timings {
	int cursor;		/* strategy */
	bool expanded;
	int top;
	tline *lines;
	int n_lines, cap_lines;
	int cursor_line;	/* line of the cursor's strategy */
} timings;

enum { NAME_W = 10 };

static void *timings_create(void)
{
	return calloc(1, sizeof(timings));
}

static void timings_destroy(void *st)
{
	timings *t = st;

	if (!t)
		return;
	free(t->lines);
	free(t);
}

/* The unit a time reads best in: its scale and name. */
static double unit_of(double s, const char **name)
{
	*name = s < 1e-3 ? "us" : s < 1 ? "ms" : "s";
	return s < 1e-3 ? 1e6 : s < 1 ? 1e3 : 1;
}

/* "1.234 ms"-style time into buf; "-" when not known. */
static const char *secs(double s, char *buf, size_t n)
{
	const char *u;
	double k = unit_of(s, &u);

	if (s <= 0)
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.3f %s", s * k, u);
	return buf;
}

/* "[1.900..2.100]": a spread in the unit of the median m. */
static const char *spread(double m, double lo, double hi, char *buf,
			  size_t n)
{
	const char *u;
	double k = unit_of(m, &u);

	if (lo <= 0 || hi <= 0)
		snprintf(buf, n, "[-]");
	else
		snprintf(buf, n, "[%.3f..%.3f]", lo * k, hi * k);
	return buf;
}

static tline *add(timings *t, fl_look look, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Appends a line; NULL when out of memory (the view shows less). */
static tline *add(timings *t, fl_look look, const char *fmt, ...)
{
	va_list ap;
	tline *l;

	if (t->n_lines == t->cap_lines) {
		int cap = t->cap_lines ? 2 * t->cap_lines : 32;
		tline *n = realloc(t->lines, (size_t)cap * sizeof *n);

		if (!n)
			return NULL;
		t->lines = n;
		t->cap_lines = cap;
	}
	l = &t->lines[t->n_lines++];
	l->look = look;
	l->bar = -1;
	va_start(ap, fmt);
	vsnprintf(l->text, sizeof l->text, fmt, ap);
	va_end(ap);
	return l;
}

static bool step_failed(const fl_ladder_step *st)
{
	return !st->ran || st->status != FL_RUN_OK;
}

/* The step of strategy s in ladder l, NULL when none. */
static const fl_ladder_step *find_step(const fl_ladder *l, fl_strategy s)
{
	for (int i = 0; l && i < l->n; i++)
		if (l->steps[i].strategy == s)
			return &l->steps[i];
	return NULL;
}

static bool same_kernel(const fl_ladder_kernel *a, const fl_ladder_kernel *b)
{
	return a->n_ops == b->n_ops && !strcmp(a->first_op, b->first_op) &&
	       !strcmp(a->last_op, b->last_op);
}

/* Whether kernel k of step now has an equal kernel (same ops) in was. */
static bool kernel_was(const fl_ladder_step *was, const fl_ladder_kernel *k)
{
	for (int i = 0; i < was->n_kernels; i++)
		if (same_kernel(&was->kernels[i], k))
			return true;
	return false;
}

/* The first line of text (at most n-1 bytes) into buf. */
static const char *first_line(const char *text, char *buf, size_t n)
{
	size_t len = strcspn(text, "\n");

	if (len >= n)
		len = n - 1;
	memcpy(buf, text, len);
	buf[len] = '\0';
	return buf;
}

static void strategy_line(timings *t, const fl_ladder_step *st, int i,
			  double slowest, int bar_w)
{
	char med[32], sp[32], range[64], msg[160];
	fl_look look = i == t->cursor ? FL_LOOK_CURSOR : FL_LOOK_NORMAL;
	tline *l;

	if (step_failed(st)) {
		add(t, i == t->cursor ? FL_LOOK_CURSOR : FL_LOOK_BAD,
		    "%-*s  failed (%s): %s", NAME_W,
		    fl_strategy_name(st->strategy),
		    st->ran ? fl_run_status_name(st->status) : "engine",
		    first_line(st->error[0] ? st->error : st->message, msg,
			       sizeof msg));
		return;
	}
	if (st->speedup > 0)
		snprintf(sp, sizeof sp, "%5.2fx%s", st->speedup,
			 st->label == FL_TIMING_ONE_ROUND ? " one round" :
			 st->within_noise ? " within noise" :
			 st->label == FL_TIMING_SLOWER ? " SLOWER" : "");
	else
		snprintf(sp, sizeof sp, "    -");
	l = add(t, look, "%-*s %*s %3d k %9s %-14s %-18s %-3s err %.1e/%.1e",
		NAME_W, fl_strategy_name(st->strategy), bar_w, "",
		st->n_kernels, secs(st->total_seconds, med, sizeof med),
		spread(st->total_seconds, st->total_min, st->total_max, range,
		       sizeof range), sp, st->verified ? "yes" : "NO",
		st->max_abs, st->max_rel);
	if (!l)
		return;
	l->bar = slowest > 0 ? (int)(st->total_seconds / slowest * bar_w + 0.5)
			     : 0;
	if (l->bar < 1 && st->total_seconds > 0)
		l->bar = 1;
	l->bar_look = !st->verified ? FL_LOOK_BAD :
		      st->within_noise ? FL_LOOK_WARN : fl_look_group(i);
}

/* "before (label): 1.5 ms -> now 1.2 ms (-18%); kernels: 2 new, 1 gone" */
static void compare_line(timings *t, const fl_view_ctx *c,
			 const fl_ladder_step *st)
{
	const fl_ladder_step *was = find_step(c->prev_ladder, st->strategy);
	char a[32], b[32], pct[32] = "";
	int fresh = 0, gone = 0;

	if (!was) {
		add(t, FL_LOOK_DIM, "%*s  before (%s): did not run", NAME_W, "",
		    c->prev_label ? c->prev_label : "previous run");
		return;
	}
	for (int i = 0; i < st->n_kernels; i++)
		fresh += !kernel_was(was, &st->kernels[i]);
	for (int i = 0; i < was->n_kernels; i++)
		gone += !kernel_was(st, &was->kernels[i]);
	if (!step_failed(was) && !step_failed(st) && was->total_seconds > 0)
		snprintf(pct, sizeof pct, " (%+.1f%%)",
			 100.0 * (st->total_seconds / was->total_seconds - 1));
	add(t, fresh || gone ? FL_LOOK_WARN : FL_LOOK_DIM,
	    "%*s  before (%s): %s -> now %s%s; kernels: %d new, %d gone",
	    NAME_W, "", c->prev_label ? c->prev_label : "previous run",
	    step_failed(was) ? "failed" : secs(was->total_seconds, a, sizeof a),
	    step_failed(st) ? "failed" : secs(st->total_seconds, b, sizeof b),
	    pct, fresh, gone);
}

/* "  spread [0.9..1.1] vs unfused [1.8..2.2]: faster, quicker in 9 of 10
 * pairs, interleaved": the kernel's spread beside its unfused kernels',
 * and the label (interleave.h: the sign test over the pairs, else
 * whether the ranges overlap). */
static void kernel_noise(const fl_ladder_kernel *k, char *buf, size_t n)
{
	char a[64], b[64], pairs[48] = "";
	const char *label = fl_timing_label_name(k->label);

	buf[0] = '\0';
	if (k->r.n_timed <= 0 && k->r.max_seconds <= 0)
		return;
	spread(k->r.seconds, k->r.min_seconds, k->r.max_seconds, a, sizeof a);
	if (k->unfused_max > 0 && k->unfused_seconds > 0)
		spread(k->unfused_seconds, k->unfused_min, k->unfused_max, b,
		       sizeof b);
	else
		snprintf(b, sizeof b, "-");
	if (k->ratio.s.n >= FL_TIMING_MIN_PAIRS)
		snprintf(pairs, sizeof pairs, ", quicker in %d of %d pairs",
			 k->ratio.faster, k->ratio.s.n);
	snprintf(buf, n, "  spread %s vs unfused %s%s%s%s%s", a, b,
		 label[0] ? ": " : "", label, pairs,
		 k->paired ? ", interleaved" : "");
}

static void kernel_lines(timings *t, const fl_view_ctx *c,
			 const fl_ladder_step *st)
{
	const fl_ladder_step *was = find_step(c->prev_ladder, st->strategy);

	if (st->n_kernels == 0)
		add(t, FL_LOOK_DIM, "    no kernels");
	for (int i = 0; i < st->n_kernels; i++) {
		const fl_ladder_kernel *k = &st->kernels[i];
		char a[32], b[32], sp[24] = "    -", noise[320] = "";
		bool fresh = was && !kernel_was(was, k);

		if (k->unfused_seconds > 0 && k->r.seconds > 0)
			snprintf(sp, sizeof sp, "%5.2fx",
				 k->unfused_seconds / k->r.seconds);
		kernel_noise(k, noise, sizeof noise);
		add(t, !k->r.ok ? FL_LOOK_BAD : fresh ? FL_LOOK_WARN :
		    FL_LOOK_NORMAL,
		    "    %-8s %9s  unfused %9s %s  %3d ops %s..%s%s%s%s",
		    k->name, secs(k->r.seconds, a, sizeof a),
		    secs(k->unfused_seconds, b, sizeof b), sp, k->n_ops,
		    k->first_op, k->last_op, k->r.ok ? "" : "  MISMATCH",
		    fresh ? "  new" : "", noise);
		if (k->why[0])
			add(t, FL_LOOK_WARN, "             why SLOWER: %s",
			    k->why);
	}
	/* what the run before had and this one has not */
	for (int i = 0; was && i < was->n_kernels; i++) {
		const fl_ladder_kernel *k = &was->kernels[i];
		char a[32];

		if (!kernel_was(st, k))
			add(t, FL_LOOK_DIM, "    %-8s gone (was %s)   %3d ops "
			    "%s..%s", k->name, secs(k->r.seconds, a, sizeof a),
			    k->n_ops, k->first_op, k->last_op);
	}
}

/* Every line of the ladder, the cursor's strategy expanded when asked. */
static void build(timings *t, const fl_view_ctx *c, int bar_w)
{
	const fl_ladder *l = c->ladder;
	double slowest = 0;

	t->n_lines = 0;
	for (int i = 0; i < l->n; i++)
		if (!step_failed(&l->steps[i]) &&
		    l->steps[i].total_seconds > slowest)
			slowest = l->steps[i].total_seconds;
	for (int i = 0; i < l->n; i++) {
		const fl_ladder_step *st = &l->steps[i];

		if (i == t->cursor)
			t->cursor_line = t->n_lines;
		strategy_line(t, st, i, slowest, bar_w);
		if (c->prev_ladder)
			compare_line(t, c, st);
		if (i == t->cursor && t->expanded && !step_failed(st))
			kernel_lines(t, c, st);
	}
}

/* The full story of the cursor's strategy at the bottom. */
static void draw_details(const fl_view_ctx *c, const fl_ladder_step *st,
			 int cursor, fl_grid *g, int y)
{
	char msg[160], sess[64] = "";

	fl_grid_hline(g, 0, y++, g->w, FL_LOOK_DIM);
	if (c->timed == st || (c->timed && c->timed->strategy == st->strategy))
		snprintf(sess, sizeof sess, "  (the session's strategy)");
	fl_grid_textf(g, 0, y++, -1, FL_LOOK_TITLE, "%d. %s%s: %s",
		      cursor + 1, fl_strategy_name(st->strategy), sess,
		      st->ran ? fl_run_status_name(st->status) : "did not run");
	if (st->error[0])
		fl_grid_text(g, 0, y++, -1, first_line(st->error, msg,
						       sizeof msg), FL_LOOK_BAD);
	if (st->message[0])
		fl_grid_text(g, 0, y++, -1, first_line(st->message, msg,
						       sizeof msg),
			     step_failed(st) ? FL_LOOK_BAD : FL_LOOK_NORMAL);
	if (!step_failed(st))
		fl_grid_textf(g, 0, y++, -1, FL_LOOK_NORMAL,
			      "max error abs %.3g rel %.3g; %s%s", st->max_abs,
			      st->max_rel, st->verified ? "verified" :
			      "NOT verified",
			      st->label == FL_TIMING_ONE_ROUND ?
			      "; one round: no spread to compare" :
			      st->within_noise ? "; speedup within noise" : "");
}

/* A speedup inside the noise gets the warning look (the speedup and
 * "noise"), so that it does not read as a measured difference. */
static void paint_noise(fl_grid *g, const tline *l, int y)
{
	const char *n = l->bar >= 0 ? strstr(l->text, "x within noise") : NULL;
	int x;

	if (!n)
		return;
	/* strategy lines are ASCII up to here: bytes are columns */
	x = (int)(n - l->text);
	fl_grid_paint(g, x - 5, y, 19, 1, FL_LOOK_WARN);
}

/* The machine, the load around the timing and the copy bandwidth of
 * the timing process: what the times were measured against. */
static void conditions_line(const fl_ladder *l, fl_grid *g, int y)
{
	char before[16] = "?", after[16] = "?", copy[96] = "copy -";

	if (l->load_before >= 0)
		snprintf(before, sizeof before, "%.2f", l->load_before);
	if (l->load_after >= 0)
		snprintf(after, sizeof after, "%.2f", l->load_after);
	if (l->interleaved && l->copy_gbps.n > 0)
		snprintf(copy, sizeof copy, "copy %.1f GB/s [%.1f..%.1f]",
			 l->copy_gbps.median, l->copy_gbps.min,
			 l->copy_gbps.max);
	fl_grid_textf(g, 0, y, -1, FL_LOOK_DIM, "%s | load %s -> %s | %s | "
		      "%s, %s", l->machine[0] ? l->machine : "machine unknown",
		      before, after, copy,
		      l->interleaved ? "interleaved" : "not interleaved",
		      l->pinned ? "pinned" : "not pinned");
}

/* The first step with something to say about the CUDA target: the
 * fallback's note, else the GPU; NULL under the CPU target. */
static const fl_ladder_step *cuda_step(const fl_ladder *l)
{
	for (int i = 0; i < l->n; i++)
		if (l->steps[i].note[0])
			return &l->steps[i];
	for (int i = 0; i < l->n; i++)
		if (l->steps[i].device[0])
			return &l->steps[i];
	return NULL;
}

/* "target cuda: ..." under the conditions; false (nothing drawn) under
 * the CPU target. */
static bool target_line(const fl_ladder *l, fl_grid *g, int y)
{
	const fl_ladder_step *st = cuda_step(l);

	if (!st)
		return false;
	if (st->note[0])
		fl_grid_textf(g, 0, y, -1, FL_LOOK_WARN, "target cuda: %s",
			      st->note);
	else
		fl_grid_textf(g, 0, y, -1, FL_LOOK_DIM, "target cuda: %s, "
			      "kernel times from CUDA events", st->device);
	return true;
}

static void timings_render(void *st, const fl_view_ctx *c, fl_grid *g)
{
	timings *t = st;
	/* the bar takes what the columns (87 cells) leave, 4 to 30 */
	int bar_w = g->w - 87 > 30 ? 30 : g->w - 87 < 4 ? 4 : g->w - 87;
	int y = 0, list_h, detail_h;

	if (!c->ladder || c->ladder->n == 0) {
		fl_view_empty(g, "no kernels run yet: press R to compile and "
			      "run every strategy");
		return;
	}
	if (t->cursor >= c->ladder->n)
		t->cursor = c->ladder->n - 1;
	build(t, c, bar_w);
	fl_grid_textf(g, 0, y++, -1, FL_LOOK_TITLE, "timings  %d strategies%s%s",
		      c->ladder->n, c->prev_ladder ? "; compared with before: " :
		      "", c->prev_ladder ? (c->prev_label ? c->prev_label :
					    "previous run") : "");
	conditions_line(c->ladder, g, y++);
	if (target_line(c->ladder, g, y))
		y++;
	fl_grid_textf(g, 0, y++, -1, FL_LOOK_DIM,
		      "%-*s %-*s kern. %9s %-14s %-18s %-3s max error abs/rel",
		      NAME_W, "strategy", bar_w, "time", "median",
		      "[min..max]", "speedup", "ok");
	detail_h = g->h - y >= 10 ? 5 : 0;
	list_h = g->h - y - detail_h > 1 ? g->h - y - detail_h : 1;
	fl_view_scroll_to(t->cursor_line, list_h, &t->top);
	for (int r = 0; r < list_h && t->top + r < t->n_lines; r++) {
		const tline *l = &t->lines[t->top + r];
		fl_look look = l->look;

		if (look == FL_LOOK_CURSOR && !c->focused)
			look = FL_LOOK_NORMAL;
		fl_grid_fill(g, 0, y + r, g->w, 1, ' ', look);
		fl_grid_text(g, 0, y + r, -1, l->text, look);
		if (l->bar >= 0)
			fl_grid_fill(g, NAME_W + 1, y + r, l->bar, 1,
				     FL_CH_BLOCK, l->bar_look);
		paint_noise(g, l, y + r);
	}
	if (detail_h > 0)
		draw_details(c, &c->ladder->steps[t->cursor], t->cursor, g,
			     g->h - detail_h);
}

static int timings_key(void *st, const fl_view_ctx *c, int key,
		       fl_view_action *act)
{
	timings *t = st;
	int n = c->ladder ? c->ladder->n : 0;

	act->kind = FL_VIEW_ACT_NONE;
	switch (key) {
	case FL_KEY_UP: case 'k':
		if (t->cursor > 0)
			t->cursor--;
		return 1;
	case FL_KEY_DOWN: case 'j':
		if (t->cursor + 1 < n)
			t->cursor++;
		return 1;
	case FL_KEY_ENTER: case FL_KEY_RIGHT: case 'l':
		t->expanded = key == FL_KEY_ENTER ? !t->expanded : true;
		return 1;
	case FL_KEY_LEFT: case 'h':
		t->expanded = false;
		return 1;
	default:
		return 0;
	}
}

static const fl_view_key timings_keys[] = {
	{"Up Down j k", "select a strategy"},
	{"Enter Right l", "show (Enter: toggle) its kernels"},
	{"Left h", "hide its kernels"},
	{NULL, NULL},
};

const fl_view_class fl_view_timings = {
	.name = "timings",
	.keys = timings_keys,
	.create = timings_create,
	.destroy = timings_destroy,
	.render = timings_render,
	.key = timings_key,
};
