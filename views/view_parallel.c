/* The parallel groups view (DESIGN 7, 1.5): what layer 3, parallel
 * stitching, runs together.  Once the layer-3 pass ran (strategy apollo)
 * the view shows the analysis it acted on (fl_engine_parallel), each
 * accepted group with the kernel it became; before that, or under
 * another strategy, a banner says layer 3 has not run and the view shows
 * what it would consider (fl_stitch_parallel_analyze on the state at
 * the step).  Either way: the branch sets,
 * each branch's units with their roofline costs (compute-bound ones
 * dropped), every round's candidates sorted by cost, each evaluation of
 * the gain with its numbers, and the groups accepted.
 *
 * The analysis is worked out once per state (session, step, program,
 * last event) and its lines are kept; a redraw only copies the lines on
 * screen.
 *
 * Keys: Up/Down/j/k, PgUp/PgDn, Home/End move the cursor over the lines;
 * Enter on a unit's line selects its kernel (or its first op). */
#include "view.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stitch.h"

typedef struct par_line {
	char text[240];
	fl_look look;
	int unit;		/* unit index of the analysis, -1: none */
} par_line;

typedef struct parallel {
	/* the state the lines were made for */
	const fl_session *s;
	int step;
	const fl_program *prog;
	const fl_event *last_ev;	/* the log's last event (a replay after
				   an override rebuilds the log) */
	fl_par_analysis *a;	/* owned, or one reference to the pass's */
	bool by_pass;		/* a is the analysis layer 3 acted on */
	char error[FL_ERROR_MAX];
	par_line *lines;
	int n_lines, cap_lines;
	int cursor, top, list_h;
} parallel;

static void *parallel_create(void)
{
	parallel *p = calloc(1, sizeof *p);

	if (p)
		p->step = -1;
	return p;
}

static void parallel_destroy(void *st)
{
	parallel *p = st;

	if (!p)
		return;
	fl_par_analysis_free(p->a);
	free(p->lines);
	free(p);
}

/* "12.3 us"-style time into buf. */
static const char *secs(double s, char *buf, size_t n)
{
	const char *sign = s < 0 ? "-" : "";

	if (s < 0)
		s = -s;
	if (s < 1e-3)
		snprintf(buf, n, "%s%.1f us", sign, s * 1e6);
	else if (s < 1)
		snprintf(buf, n, "%s%.2f ms", sign, s * 1e3);
	else
		snprintf(buf, n, "%s%.2f s", sign, s);
	return buf;
}

static void line(parallel *p, fl_look look, int unit, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Appends a line (dropped when out of memory: the view shows less). */
static void line(parallel *p, fl_look look, int unit, const char *fmt, ...)
{
	va_list ap;
	par_line *l;

	if (p->n_lines == p->cap_lines) {
		int cap = p->cap_lines ? 2 * p->cap_lines : 64;
		par_line *t = realloc(p->lines, (size_t)cap * sizeof *t);

		if (!t)
			return;
		p->lines = t;
		p->cap_lines = cap;
	}
	l = &p->lines[p->n_lines++];
	l->look = look;
	l->unit = unit;
	va_start(ap, fmt);
	vsnprintf(l->text, sizeof l->text, fmt, ap);
	va_end(ap);
}

static void unit_line(parallel *p, const fl_par_unit *u, int ui,
		      const char *indent)
{
	char c[32];
	const char *why = u->compute_bound ? "dropped: compute-bound" :
			  u->custom ? "dropped: custom op" : "candidate";

	line(p, u->compute_bound || u->custom ? FL_LOOK_DIM : FL_LOOK_NORMAL,
	     ui, "%s%-34s %9s  %-22s %.2f MB, %.3f GFLOP, %d cores", indent,
	     u->name, secs(u->cost, c, sizeof c), why, (double)u->bytes / 1e6,
	     u->flops / 1e9, u->cores);
}

/* The tries layer 3 made one kernel. */
static int stitched_count(const fl_par_analysis *a)
{
	int n = 0;

	for (int s = 0; s < a->n_sets; s++)
		for (int r = 0; r < a->sets[s].n_rounds; r++)
			for (int t = 0; t < a->sets[s].rounds[r].n_tries; t++)
				n += a->sets[s].rounds[r].tries[t].stitched;
	return n;
}

/* What layer 3 made of an accepted try, when it ran. */
static const char *try_fate(const parallel *p, const fl_par_try *t)
{
	static char buf[48];

	if (!p->by_pass || !t->accepted)
		return "";
	if (!t->stitched)
		return ", not stitched (see the decisions)";
	snprintf(buf, sizeof buf, ", stitched as %s", t->kernel);
	return buf;
}

/* One evaluation: the units it took and the gain formula's numbers. */
static void try_lines(parallel *p, const fl_par_round *r,
		      const fl_par_try *t)
{
	char names[200], a[32], b[32], c[32];
	size_t used = 0;

	names[0] = '\0';
	for (int i = 0; i < t->count && used < sizeof names; i++) {
		const fl_par_unit *u = &p->a->units[r->cand[t->first + i]];
		const char *n = strchr(u->name, '(');

		used += (size_t)snprintf(names + used, sizeof names - used,
					 "%s%s", i ? " + " : "",
					 n ? n : u->name);
	}
	line(p, t->accepted ? FL_LOOK_OK : FL_LOOK_DIM, -1,
	     "      %s%s {%s}: gain = %s sum - %s together = %s",
	     t->accepted ? "accept" : "reject", try_fate(p, t), names,
	     secs(t->sum, a, sizeof a), secs(t->together, b, sizeof b),
	     secs(t->gain, c, sizeof c));
}

static void set_lines(parallel *p, const fl_par_set *s, int si)
{
	line(p, FL_LOOK_TITLE, -1, "set %d: %s, %d branches", si + 1, s->head,
	     s->n_branches);
	for (int b = 0; b < s->n_branches; b++) {
		const fl_par_branch *br = &s->branches[b];

		line(p, FL_LOOK_NORMAL, -1, "  branch %d: %d units, %d "
		     "candidates", b + 1, br->n_units, br->n_cand);
		for (int k = 0; k < br->n_units; k++)
			unit_line(p, &p->a->units[br->units[k]], br->units[k],
				  "    ");
	}
	for (int r = 0; r < s->n_rounds; r++) {
		const fl_par_round *rd = &s->rounds[r];
		char c[32];

		line(p, FL_LOOK_NORMAL, -1, "  round %d: one candidate per "
		     "branch, by cost:", r + 1);
		for (int i = 0; i < rd->n; i++)
			line(p, FL_LOOK_NORMAL, rd->cand[i],
			     "    %d. %s (branch %d) %s", i + 1,
			     p->a->units[rd->cand[i]].name, rd->branch[i] + 1,
			     secs(p->a->units[rd->cand[i]].cost, c, sizeof c));
		if (rd->n < 2)
			line(p, FL_LOOK_DIM, -1, "      alone: nothing to run "
			     "beside it");
		for (int i = 0; i < rd->n_tries; i++)
			try_lines(p, rd, &rd->tries[i]);
	}
}

/* Works the analysis out again when the state changed; makes the lines. */
static void refresh(parallel *p, const fl_view_ctx *c)
{
	const fl_program *prog = fl_engine_program(c->s);
	const fl_event_log *log = fl_engine_events(c->s);
	int n = fl_event_log_count(log);
	const fl_event *last = n > 0 ? fl_event_log_get(log, n - 1) : NULL;
	const fl_roofline *m;
	fl_error err = {""};
	char a[32];

	if (p->s == c->s && p->step == c->step && p->prog == prog &&
	    p->last_ev == last)
		return;
	p->s = c->s;
	p->step = c->step;
	p->prog = prog;
	p->last_ev = last;
	p->n_lines = 0;
	p->cursor = p->top = 0;
	fl_par_analysis_free(p->a);
	/* the pass's analysis is shared read-only; one more reference keeps
	 * it alive while the session moves on */
	p->by_pass = fl_engine_parallel(c->s) != NULL;
	p->a = p->by_pass ? fl_par_analysis_ref((fl_par_analysis *)
						fl_engine_parallel(c->s))
		: fl_stitch_parallel_analyze(fl_engine_graph(c->s),
					     fl_engine_partition(c->s), prog,
					     NULL, &err);
	snprintf(p->error, sizeof p->error, "%s", p->a ? "" : err.msg);
	if (!p->a)
		return;
	m = &p->a->machine;
	line(p, FL_LOOK_DIM, -1, "units: %s (%d); machine: %d cores, %.0f GB/s, "
	     "%.0f GFLOP/s, launch %s (defaults, not measured)",
	     fl_par_unit_kind_name(p->a->kind), p->a->n_units, m->cores,
	     m->bw / 1e9, m->peak / 1e9, secs(m->launch, a, sizeof a));
	line(p, FL_LOOK_DIM, -1, "gain = sum of costs - together; together = "
	     "launch + max(max roof, sum(cores x roof) / %d)", m->cores);
	if (p->a->n_sets == 0)
		line(p, FL_LOOK_NORMAL, -1, "no branch set: no two %s here "
		     "can run side by side", fl_par_unit_kind_name(p->a->kind));
	for (int i = 0; i < p->a->n_sets; i++)
		set_lines(p, &p->a->sets[i], i);
	if (p->by_pass)
		line(p, p->a->n_groups ? FL_LOOK_OK : FL_LOOK_NORMAL, -1,
		     "%d of %d accepted group%s stitched; estimated gain %s",
		     stitched_count(p->a), p->a->n_groups,
		     p->a->n_groups == 1 ? "" : "s",
		     secs(p->a->total_gain, a, sizeof a));
	else
		line(p, p->a->n_groups ? FL_LOOK_OK : FL_LOOK_NORMAL, -1,
		     "%d group%s would run together; estimated gain %s",
		     p->a->n_groups, p->a->n_groups == 1 ? "" : "s",
		     secs(p->a->total_gain, a, sizeof a));
}

static void parallel_render(void *st, const fl_view_ctx *c, fl_grid *g)
{
	parallel *p = st;
	int y = 0;

	refresh(p, c);
	fl_grid_fill(g, 0, 0, g->w, 1, ' ', FL_LOOK_WARN);
	fl_grid_text(g, 0, y++, -1, p->by_pass ? "Layer 3 ran: the groups it "
		     "accepted run as one kernel each (units: the kernels "
		     "before it)" : "Layer 3 has NOT run (strategy apollo "
		     "runs it): what parallel stitching would consider",
		     p->by_pass ? FL_LOOK_OK : FL_LOOK_WARN);
	if (!p->a) {
		fl_view_empty(g, p->error);
		return;
	}
	p->list_h = g->h - y > 1 ? g->h - y : 1;
	fl_view_scroll_to(p->cursor, p->list_h, &p->top);
	for (int r = 0; r < p->list_h && p->top + r < p->n_lines; r++) {
		const par_line *l = &p->lines[p->top + r];
		fl_look look = l->look;

		if (p->top + r == p->cursor && c->focused)
			look = FL_LOOK_CURSOR;
		fl_grid_fill(g, 0, y + r, g->w, 1, ' ', look);
		fl_grid_text(g, 0, y + r, -1, l->text, look);
	}
}

static int select_unit(parallel *p, fl_view_action *act)
{
	const par_line *l;
	const fl_par_unit *u;

	if (!p->a || p->cursor >= p->n_lines)
		return 1;
	l = &p->lines[p->cursor];
	if (l->unit < 0)
		return 1;
	u = &p->a->units[l->unit];
	/* the pass's units are the kernels before it renumbered them */
	if (p->a->kind == FL_PAR_KERNELS && !p->by_pass) {
		act->kind = FL_VIEW_ACT_SELECT_KERNEL;
		act->arg = u->id;
	} else if (u->first_op >= 0) {
		act->kind = FL_VIEW_ACT_SELECT_OP;
		act->arg = u->first_op;
	}
	return 1;
}

static int parallel_key(void *st, const fl_view_ctx *c, int key,
			fl_view_action *act)
{
	parallel *p = st;
	int page = p->list_h > 1 ? p->list_h - 1 : 1, to = p->cursor;

	act->kind = FL_VIEW_ACT_NONE;
	refresh(p, c);
	switch (key) {
	case FL_KEY_UP: case 'k': to--; break;
	case FL_KEY_DOWN: case 'j': to++; break;
	case FL_KEY_PGUP: to -= page; break;
	case FL_KEY_PGDN: to += page; break;
	case FL_KEY_HOME: to = 0; break;
	case FL_KEY_END: to = p->n_lines - 1; break;
	case FL_KEY_ENTER: return select_unit(p, act);
	default: return 0;
	}
	p->cursor = to >= p->n_lines ? p->n_lines - 1 : to;
	if (p->cursor < 0)
		p->cursor = 0;
	return 1;
}

static const fl_view_key parallel_keys[] = {
	{"Up Down j k", "move over the analysis"},
	{"PgUp PgDn Home End", "page, first, last"},
	{"Enter", "select the unit's kernel (or op)"},
	{NULL, NULL},
};

const fl_view_class fl_view_parallel = {
	.name = "parallel",
	.keys = parallel_keys,
	.create = parallel_create,
	.destroy = parallel_destroy,
	.render = parallel_render,
	.key = parallel_key,
};
