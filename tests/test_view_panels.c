/* The explorer's panels: decisions, memory, parallel groups (and the
 * layer-3 analysis under it, engine/stitch), timings.  Each view is
 * rendered headless through the view fixture and read back as text and
 * looks; the parallel analysis is checked on a branchy sample, on a
 * chain and on hand-made costs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "view_fixture.h"

/* MICRO 2020 Fig. 1 as these tests draw it: 32 x 32 tiles of all 64
 * channels (34 x 34 inputs with the halo).  The sizes the machine would
 * pick are tested in test_tiles.c. */
#define FIG1_TILE 32
#include "stitch.h"

/* ---- parallel stitching analysis ------------------------------------- */

/* The unit of analysis a holds whose name starts with op name `op`
 * (after the "G12 (" or "fl_k3 (" prefix when there is one), -1. */
static int unit_named(const fl_par_analysis *a, const char *op)
{
	size_t n = strlen(op);

	for (int u = 0; u < a->n_units; u++) {
		const char *p = strchr(a->units[u].name, '(');

		p = p ? p + 1 : a->units[u].name;
		if (!strncmp(p, op, n) && (p[n] == ')' || p[n] == '.' ||
					   p[n] == '\0'))
			return u;
	}
	return -1;
}

static fl_par_analysis *analyze_at(t_view *f, const char *sample, int step)
{
	fl_error err = {""};
	fl_par_analysis *a;

	t_view_open(f, sample, step);
	a = fl_stitch_parallel_analyze(fl_engine_graph(f->s),
				       fl_engine_partition(f->s),
				       fl_engine_program(f->s), NULL, &err);
	if (!a)
		fail_msg("%s", err.msg);
	return a;
}

/* inception (3a) after layer 1: its four branches leave the input
 * together (a virtual head: x is no unit's output); the convolutions
 * are dropped as compute-bound, the pads and the pool are candidates,
 * and the first round stitches the three pads. */
static void view_panels_parallel_inception(void **state)
{
	t_view f;
	fl_par_analysis *a = analyze_at(&f, "inception_block", -1);
	const fl_par_set *s;
	int conv, pad2, pad3, pad4;

	(void)state;
	assert_int_equal(a->kind, FL_PAR_KERNELS);
	assert_true(a->n_sets >= 1);
	s = &a->sets[0];
	t_assert_contains(s->head, "virtual head");
	assert_int_equal(s->n_branches, 4);
	conv = unit_named(a, "b2_3x3_conv");
	pad2 = unit_named(a, "b2_pad");
	pad3 = unit_named(a, "b3_pad");
	pad4 = unit_named(a, "b4_pad");
	assert_true(conv >= 0 && pad2 >= 0 && pad3 >= 0 && pad4 >= 0);
	assert_true(a->units[conv].compute_bound);
	assert_false(a->units[pad2].compute_bound);
	assert_int_equal(a->units[conv].branch_set, 0);
	assert_true(a->units[pad2].cost > a->machine.launch);
	/* bytes: pad b3 reads 16x28x28 and writes 16x32x32 floats */
	assert_int_equal(a->units[pad3].bytes, 4 * (16 * 28 * 28 +
						    16 * 32 * 32));
	/* round 0: one pad per branch that has one, cost descending:
	 * b4 (192 channels) before b2 (96) before b3 (16) */
	assert_true(s->n_rounds >= 1);
	assert_int_equal(s->rounds[0].n, 3);
	assert_int_equal(s->rounds[0].cand[0], pad4);
	assert_int_equal(s->rounds[0].cand[1], pad2);
	assert_int_equal(s->rounds[0].cand[2], pad3);
	assert_true(s->rounds[0].n_tries >= 1);
	assert_true(a->n_groups >= 1);
	assert_true(a->total_gain > 0);
	for (int r = 0; r < s->n_rounds; r++)
		for (int i = 0; i < s->rounds[r].n_tries; i++) {
			const fl_par_try *t = &s->rounds[r].tries[i];

			assert_true(t->accepted == (t->gain > 0));
			assert_true(t->sum >= t->max);
		}
	fl_par_analysis_free(a);
	t_view_close(&f);
}

/* Until layer 1 has made every kernel the units are the micro-graphs:
 * the same branch set, with the same pads as the first round. */
static void view_panels_parallel_groups(void **state)
{
	t_view f;
	fl_par_analysis *a = analyze_at(&f, "inception_block", -1);
	const fl_event_log *log = fl_engine_events(f.s);
	fl_error err = {""};
	int first_l1 = -1;

	(void)state;
	fl_par_analysis_free(a);
	for (int i = 0; i < fl_event_log_count(log) && first_l1 < 0; i++)
		if (fl_event_log_get(log, i)->pass == FL_PASS_LAYER1)
			first_l1 = i;
	assert_true(first_l1 > 0);
	/* one layer-1 decision in: the program holds only some kernels */
	t_view_goto(&f, first_l1 + 1);
	assert_non_null(fl_engine_program(f.s));
	assert_true(fl_engine_program(f.s)->n_kernels < 11);
	a = fl_stitch_parallel_analyze(fl_engine_graph(f.s),
				       fl_engine_partition(f.s),
				       fl_engine_program(f.s), NULL, &err);
	assert_non_null(a);
	assert_int_equal(a->kind, FL_PAR_GROUPS);
	assert_int_equal(a->n_units,
			 fl_partition_count_alive(fl_engine_partition(f.s)));
	assert_true(a->n_sets >= 1);
	assert_int_equal(a->sets[0].n_branches, 4);
	assert_int_equal(a->sets[0].rounds[0].n, 3);
	assert_int_equal(a->sets[0].rounds[0].cand[0], unit_named(a, "b4_pad"));
	t_assert_contains(a->units[unit_named(a, "b4_pad")].name, "G");
	fl_par_analysis_free(a);
	t_view_close(&f);
}

/* A diamond (x -> a -> {b, c} -> d) and, beside it, an independent
 * chain (x2 -> e -> f): the fork a heads a set of two one-op branches
 * whose join d is left out; the virtual head (sources a, e) and tail
 * (sinks d, f) find one branch each, so no set. */
static void view_panels_parallel_diamond(void **state)
{
	fl_graph *g = t_load_q(
		"{'format':'fuselab-graph/1','name':'d','tensors':{"
		"'x':{'shape':[256,256],'role':'input'},"
		"'x2':{'shape':[64,64],'role':'input'},"
		"'y':{'shape':[256,256],'role':'output'},"
		"'y2':{'shape':[64,64],'role':'output'}},'ops':["
		"{'name':'a','op':'exp','in':['x'],'out':'ta'},"
		"{'name':'b','op':'relu','in':['ta'],'out':'tb'},"
		"{'name':'c','op':'neg','in':['ta'],'out':'tc'},"
		"{'name':'d','op':'add','in':['tb','tc'],'out':'y'},"
		"{'name':'e','op':'exp','in':['x2'],'out':'te'},"
		"{'name':'f','op':'tanh','in':['te'],'out':'y2'}]}");
	fl_error err = {""};
	fl_par_analysis *a = fl_stitch_parallel_analyze(g, NULL, NULL, NULL,
							&err);
	int ua, ub, uc, ud, ue, uf;
	const fl_par_set *fork = NULL, *head = NULL;

	(void)state;
	assert_non_null(a);
	assert_int_equal(a->kind, FL_PAR_OPS);
	ua = unit_named(a, "a");
	ub = unit_named(a, "b");
	uc = unit_named(a, "c");
	ud = unit_named(a, "d");
	ue = unit_named(a, "e");
	uf = unit_named(a, "f");
	for (int i = 0; i < a->n_sets; i++) {
		if (strstr(a->sets[i].head, "after a"))
			fork = &a->sets[i];
		if (strstr(a->sets[i].head, "virtual head"))
			head = &a->sets[i];
	}
	/* the virtual head walks a (a fork: left out) and e -> f: one
	 * non-empty branch only, so it is no set; the fork is one */
	assert_null(head);
	assert_non_null(fork);
	assert_int_equal(fork->n_branches, 2);
	assert_int_equal(fork->branches[0].n_units, 1);
	assert_int_equal(fork->branches[0].units[0], ub);
	assert_int_equal(fork->branches[1].units[0], uc);
	assert_int_equal(a->units[ud].branch_set, -1);
	assert_int_equal(a->units[ua].branch_set, -1);
	/* relu and neg move the same bytes: the round stitches both */
	assert_int_equal(a->units[ub].bytes, 2 * 4 * 256 * 256);
	assert_int_equal(fork->n_rounds, 1);
	assert_int_equal(fork->rounds[0].n, 2);
	assert_true(fork->rounds[0].tries[0].accepted);
	/* e -> f is a branch from the virtual head and to the virtual
	 * tail, but the diamond offers none beside it there (its source a
	 * is a fork, its sink d a join, both shared): no set holds it */
	assert_int_equal(a->units[ue].branch_set, -1);
	assert_int_equal(a->units[uf].branch_set, -1);
	assert_int_equal(a->n_groups, 1);
	fl_par_analysis_free(a);
	fl_graph_free(g);
}

/* Two disconnected chains (APOLLO's F1 and F2): a virtual head joins
 * them into one set of two branches, two rounds of one op each. */
static void view_panels_parallel_disconnected(void **state)
{
	fl_graph *g = t_load_q(
		"{'format':'fuselab-graph/1','name':'f','tensors':{"
		"'x':{'shape':[128,128],'role':'input'},"
		"'x2':{'shape':[128,128],'role':'input'},"
		"'y':{'shape':[128,128],'role':'output'},"
		"'y2':{'shape':[128,128],'role':'output'}},'ops':["
		"{'name':'e','op':'exp','in':['x'],'out':'te'},"
		"{'name':'f','op':'tanh','in':['te'],'out':'y'},"
		"{'name':'g','op':'neg','in':['x2'],'out':'tg'},"
		"{'name':'h','op':'relu','in':['tg'],'out':'y2'}]}");
	fl_error err = {""};
	fl_par_analysis *a = fl_stitch_parallel_analyze(g, NULL, NULL, NULL,
							&err);

	(void)state;
	assert_non_null(a);
	assert_int_equal(a->n_sets, 1);
	t_assert_contains(a->sets[0].head, "virtual head");
	assert_int_equal(a->sets[0].n_branches, 2);
	assert_int_equal(a->sets[0].branches[0].n_units, 2);
	assert_int_equal(a->sets[0].branches[0].units[1], unit_named(a, "f"));
	assert_int_equal(a->sets[0].n_rounds, 2);
	assert_int_equal(a->n_groups, 2);
	fl_par_analysis_free(a);
	fl_graph_free(g);
}

/* A chain has no branch set: nothing runs beside anything. */
static void view_panels_parallel_chain(void **state)
{
	t_view f;
	fl_par_analysis *a = analyze_at(&f, "chain8", 0);

	(void)state;
	assert_int_equal(a->kind, FL_PAR_OPS);
	assert_int_equal(a->n_units, 8);
	assert_int_equal(a->n_sets, 0);
	assert_int_equal(a->n_groups, 0);
	fl_par_analysis_free(a);
	t_view_close(&f);
}

/* The gain arithmetic on hand-made numbers (launch 5 us, 8 cores). */
static void view_panels_parallel_gain(void **state)
{
	fl_roofline m;
	double together;
	/* two small units, 2 cores each: they fit the machine, so the
	 * gain is APOLLO's sum - max (with one launch saved) */
	double cost2[] = {15e-6, 10e-6}, roof2[] = {10e-6, 5e-6};
	int cores2[] = {2, 2};
	/* three that fill the machine each: they share it, so running
	 * them together saves only the launches */
	double cost3[] = {105e-6, 105e-6, 105e-6};
	double roof3[] = {100e-6, 100e-6, 100e-6};
	int cores3[] = {8, 8, 8};
	double g;

	(void)state;
	fl_roofline_default(&m);
	g = fl_par_gain(&m, cost2, roof2, cores2, 2, &together);
	assert_float_equal(together, 15e-6, 1e-12);
	assert_float_equal(g, 25e-6 - 15e-6, 1e-12);
	g = fl_par_gain(&m, cost3, roof3, cores3, 3, &together);
	assert_float_equal(together, 5e-6 + 300e-6, 1e-12);
	assert_float_equal(g, 10e-6, 1e-12);
	/* no launch to save: sharing the machine gains nothing */
	m.launch = 0;
	double cost4[] = {100e-6, 100e-6};
	g = fl_par_gain(&m, cost4, roof3, cores3, 2, NULL);
	assert_float_equal(g, 0, 1e-12);
}

/* ---- grid helpers ------------------------------------------------------- */

/* Cells of row y holding a bar block. */
static int bar_cells(const fl_grid *g, int y)
{
	int n = 0;

	for (int x = 0; x < g->w; x++)
		n += fl_grid_cell(g, x, y)->ch == FL_CH_BLOCK;
	return n;
}

/* The row of the grid whose text contains s, -1. */
static int row_of(const fl_grid *g, const char *s)
{
	char buf[1024];

	for (int y = 0; y < g->h; y++)
		if (strstr(fl_grid_row(g, y, buf, sizeof buf), s))
			return y;
	return -1;
}

/* ---- decisions --------------------------------------------------------- */

/* Sends key to view class vc (state st) in f's context. */
static fl_view_action press(t_view *f, const fl_view_class *vc, void *st,
			    int key)
{
	fl_view_action act;

	memset(&act, 0, sizeof act);
	act.kind = FL_VIEW_ACT_NONE;
	assert_int_equal(vc->key(st, &f->ctx, key, &act), 1);
	return act;
}

/* Rows 1..n_rows-ish of the list: every list line (they start "  #" or
 * ">" and a bullet) must contain `word`; returns how many there were. */
static int list_rows_with(const char *text, const char *word)
{
	int n = 0;
	const char *line = strchr(text, '\n');

	while (line && line[1]) {
		const char *end = strchr(line + 1, '\n');
		size_t len = end ? (size_t)(end - line - 1) : strlen(line + 1);
		char buf[1024];

		if (len >= sizeof buf)
			len = sizeof buf - 1;
		memcpy(buf, line + 1, len);
		buf[len] = '\0';
		if (strstr(buf, "details"))
			break;
		if (strstr(buf, " #") || buf[0] == '#' ||
		    strstr(buf, "\xe2\x97\x8f#")) {
			t_assert_contains(buf, word);
			n++;
		}
		line = end;
	}
	return n;
}

/* At step 10 of softmax: the title counts what is ahead, the log shows
 * decisions 0..9 and no more, the current one (#9) is highlighted, and
 * the details show it in full. */
static void view_panels_decisions_sync(void **state)
{
	t_view f;
	void *st = fl_view_decisions.create();
	const fl_event *e;
	char *text, want[96];

	(void)state;
	t_view_open(&f, "softmax", 10);
	text = t_view_render(&f, &fl_view_decisions, st, 120, 40);
	snprintf(want, sizeof want, "10 of %d decisions; %d ahead",
		 f.ctx.total, f.ctx.total - 10);
	t_assert_contains(text, want);
	t_assert_contains(text, "#0 ");
	t_assert_contains(text, "#9 ");
	assert_null(strstr(text, "#10 "));
	assert_true(fl_grid_find_look(f.grid, "#9 ", FL_LOOK_HIGHLIGHT));
	assert_false(fl_grid_find_look(f.grid, "#8 ", FL_LOOK_HIGHLIGHT));
	e = fl_event_log_get(fl_engine_events(f.s), 9);
	t_assert_contains(text, e->reason);
	t_assert_contains(text, "(current)");
	free(text);

	/* the step moves on: the cursor follows it to the new current */
	t_view_goto(&f, 13);
	text = t_view_render(&f, &fl_view_decisions, st, 120, 40);
	assert_true(fl_grid_find_look(f.grid, "#12 ", FL_LOOK_HIGHLIGHT));
	t_assert_contains(text, ">\xe2\x97\x8f#12 ");
	free(text);
	fl_view_decisions.destroy(st);
	t_view_close(&f);
}

/* Up selects the decision before; Enter goes to the state right after
 * it (seq + 1); the cursor stays where the user put it until the step
 * moves; a click selects a row. */
static void view_panels_decisions_keys(void **state)
{
	t_view f;
	void *st = fl_view_decisions.create();
	fl_view_action act;
	char *text;

	(void)state;
	t_view_open(&f, "softmax", 10);
	free(t_view_render(&f, &fl_view_decisions, st, 120, 40));
	act = press(&f, &fl_view_decisions, st, FL_KEY_UP);
	assert_int_equal(act.kind, FL_VIEW_ACT_SELECT_EVENT);
	assert_int_equal(act.arg, 8);
	act = press(&f, &fl_view_decisions, st, FL_KEY_ENTER);
	assert_int_equal(act.kind, FL_VIEW_ACT_GOTO_STEP);
	assert_int_equal(act.arg, 9);
	/* a redraw at the same step keeps the cursor on #8 */
	text = t_view_render(&f, &fl_view_decisions, st, 120, 40);
	t_assert_contains(text, "> #8 ");
	t_assert_contains(text, "#8  pass ");
	free(text);
	act = press(&f, &fl_view_decisions, st, FL_KEY_HOME);
	assert_int_equal(act.arg, 0);
	act = press(&f, &fl_view_decisions, st, FL_KEY_END);
	assert_int_equal(act.arg, 9);
	f.ctx.mouse_x = 5;
	f.ctx.mouse_y = 3;	/* the third row of the list */
	act = press(&f, &fl_view_decisions, st, FL_KEY_MOUSE);
	assert_int_equal(act.kind, FL_VIEW_ACT_SELECT_EVENT);
	assert_int_equal(act.arg, 2);
	fl_view_decisions.destroy(st);
	t_view_close(&f);
}

/* ] cycles the pass filter, } the kind filter, A clears both; the rows
 * shown are exactly the matching events. */
static void view_panels_decisions_filters(void **state)
{
	t_view f;
	void *st = fl_view_decisions.create();
	const fl_event_log *log;
	const fl_event *e;
	fl_view_action act;
	char *text, want[64];
	int n_pass = 0, n_kind = 0, step;

	(void)state;
	t_view_open(&f, "softmax", -1);
	log = fl_engine_events(f.s);
	step = fl_event_log_count(log);
	/* the pass filter on layer1 */
	for (int i = 0; i <= FL_PASS_LAYER1; i++)
		act = press(&f, &fl_view_decisions, st, ']');
	assert_int_equal(act.kind, FL_VIEW_ACT_MESSAGE);
	t_assert_contains(act.text, "pass layer1");
	for (int i = 0; i < step; i++)
		n_pass += fl_event_log_get(log, i)->pass == FL_PASS_LAYER1;
	assert_true(n_pass > 0 && n_pass < step);
	text = t_view_render(&f, &fl_view_decisions, st, 160, 200);
	snprintf(want, sizeof want, "(%d shown)", n_pass);
	t_assert_contains(text, want);
	assert_int_equal(list_rows_with(text, " layer1 "), n_pass);
	free(text);
	/* and the kind filter on the kind of the first event */
	press(&f, &fl_view_decisions, st, 'A');
	e = fl_event_log_get(log, 0);
	for (int i = 0; i <= (int)e->kind; i++)
		press(&f, &fl_view_decisions, st, '}');
	for (int i = 0; i < step; i++)
		n_kind += fl_event_log_get(log, i)->kind == e->kind;
	text = t_view_render(&f, &fl_view_decisions, st, 160, 200);
	snprintf(want, sizeof want, " %s ", fl_event_kind_name(e->kind));
	assert_int_equal(list_rows_with(text, want), n_kind);
	free(text);
	/* A: everything again */
	press(&f, &fl_view_decisions, st, 'A');
	text = t_view_render(&f, &fl_view_decisions, st, 160, 400);
	snprintf(want, sizeof want, "(%d shown)", step);
	t_assert_contains(text, want);
	free(text);
	fl_view_decisions.destroy(st);
	t_view_close(&f);
}

/* A long reason wraps in the details of a narrow pane: its last word
 * still shows. */
static void view_panels_decisions_details(void **state)
{
	t_view f;
	void *st = fl_view_decisions.create();
	const fl_event_log *log;
	const fl_event *e = NULL;
	char reason[FL_EVENT_REASON], *text, *last;
	int seq;

	(void)state;
	t_view_open(&f, "softmax", -1);
	log = fl_engine_events(f.s);
	for (int i = fl_event_log_count(log) - 1; i >= 0 && !e; i--)
		if (strlen(fl_event_log_get(log, i)->reason) > 70)
			e = fl_event_log_get(log, i);
	assert_non_null(e);
	/* the log is rebuilt when the session moves: keep copies */
	snprintf(reason, sizeof reason, "%s", e->reason);
	seq = e->seq;
	t_view_goto(&f, seq + 1);
	text = t_view_render(&f, &fl_view_decisions, st, 50, 30);
	last = strrchr(reason, ' ');
	assert_non_null(last);
	t_assert_contains(text, last + 1);
	t_assert_contains(text, "reason: ");
	free(text);
	fl_view_decisions.destroy(st);
	t_view_close(&f);
}

/* Stepping through the decisions of pass `pass` one step at a time:
 * at each, the decisions view shows that decision as the current one,
 * highlighted, its kind and its whole reason (with the numbers) in the
 * details.  Returns how many decisions of kind `kind` there were. */
static int step_through_pass(t_view *f, fl_pass pass, fl_event_kind kind,
			     const char *number)
{
	void *st = fl_view_decisions.create();
	int n = 0, total;

	t_view_goto(f, -1);
	total = fl_event_log_count(fl_engine_events(f->s));
	for (int i = 0; i < total; i++) {
		const fl_event *e;
		char want[32], reason[FL_EVENT_REASON], *text;

		t_view_goto(f, i + 1);
		e = fl_event_log_get(fl_engine_events(f->s), i);
		if (e->pass != pass)
			continue;
		snprintf(reason, sizeof reason, "%s", e->reason);
		text = t_view_render(f, &fl_view_decisions, st, 400, 60);
		snprintf(want, sizeof want, "#%d ", i);
		assert_true(fl_grid_find_look(f->grid, want,
					      FL_LOOK_HIGHLIGHT));
		t_assert_contains(text, "(current)");
		t_assert_contains(text, fl_event_kind_name(e->kind));
		t_assert_contains(text, reason);
		if (e->kind == kind) {
			t_assert_contains(reason, number);
			n++;
		}
		free(text);
	}
	fl_view_decisions.destroy(st);
	return n;
}

/* Layer 2 under apollo-l2 (softmax: two stitches, a placed decision per
 * edge tensor with its bytes against the capacity) and layer 3 under
 * apollo (inception: the parallelised set with its gain), one step at a
 * time in the decisions view. */
static void view_panels_decisions_layers(void **state)
{
	t_view f;

	(void)state;
	t_view_open_strategy(&f, "softmax", -1, FL_STRATEGY_APOLLO_L2);
	assert_int_equal(step_through_pass(&f, FL_PASS_LAYER2, FL_EV_PLACED,
					   "<= capacity 512 KiB"), 3);
	assert_int_equal(step_through_pass(&f, FL_PASS_LAYER2, FL_EV_MERGED,
					   "stitched: same tiled loops"), 2);
	t_view_close(&f);
	t_view_open_strategy(&f, "inception_block", -1, FL_STRATEGY_APOLLO);
	assert_int_equal(step_through_pass(&f, FL_PASS_LAYER3,
					   FL_EV_PARALLELISED, "gain "), 1);
	t_view_close(&f);
}

/* ---- memory ------------------------------------------------------------ */

/* MICRO 2020 Fig. 1 after layer 1: the quantized input is tile-local
 * with its 34x34 footprint box (per tile, overlapping), the conv output
 * a register, the output global; three tile buffers of 289 KiB overflow
 * layer 1's budget, the 512 KiB L2 of the view fixture's machine, and
 * the bar says so. */
static void view_panels_memory_placements(void **state)
{
	t_view f;
	void *st = fl_view_memory.create();
	char *text;
	int y;

	(void)state;
	t_view_open_tiles(&f, "micro2020_fig1", -1, FIG1_TILE);
	/* layer 1's placement, before codegen's capacity check demotes the
	 * buffers that overflow */
	t_view_goto(&f, t_step_before_codegen(&f));
	text = t_view_render(&f, &fl_view_memory, st, 100, 30);
	t_assert_contains(text, "kernel fl_k0 (1 of 1)");
	t_assert_contains(text, "867.0 KiB of 512.0 KiB (capacity");
	t_assert_contains(text, "per-core L2");
	assert_true(fl_grid_find_look(f.grid, "A_q", FL_LOOK_OK));
	t_assert_contains(text, "tile-local [1,64,34,34]");
	t_assert_contains(text, "289.0 KiB");
	t_assert_contains(text, "register");
	assert_true(fl_grid_find_look(f.grid, "OVER", FL_LOOK_BAD));
	y = row_of(f.grid, "OVER");
	assert_true(y > 0);
	assert_int_equal(fl_grid_cell(f.grid, 1, y)->ch, FL_CH_BLOCK);
	assert_int_equal(fl_grid_cell(f.grid, 1, y)->look, FL_LOOK_BAD);
	assert_int_equal(bar_cells(f.grid, y), 40);
	/* the reason of the selected tensor (the first: A, an input) */
	t_assert_contains(text, "graph input");
	free(text);
	/* a click on conv's row selects it: its reason shows */
	f.ctx.mouse_y = row_of(f.grid, "conv ");
	press(&f, &fl_view_memory, st, FL_KEY_MOUSE);
	text = t_view_render(&f, &fl_view_memory, st, 100, 30);
	t_assert_contains(text, "conv: register, read here, written here");
	t_assert_contains(text, "produced and consumed at");
	free(text);
	fl_view_memory.destroy(st);
	t_view_close(&f);
}

/* Kernels switch with Left/Right (wrapping) through the explorer's
 * selection; a kernel without tile buffers has an empty, OK bar; before
 * layer 1 the view says why it is empty. */
static void view_panels_memory_kernels(void **state)
{
	t_view f;
	void *st = fl_view_memory.create();
	fl_view_action act;
	char *text;

	(void)state;
	t_view_open(&f, "inception_block", -1);
	text = t_view_render(&f, &fl_view_memory, st, 100, 30);
	assert_true(fl_grid_find_look(f.grid, "0%", FL_LOOK_OK));
	free(text);
	act = press(&f, &fl_view_memory, st, FL_KEY_RIGHT);
	assert_int_equal(act.kind, FL_VIEW_ACT_SELECT_KERNEL);
	assert_int_equal(act.arg, 1);
	act = press(&f, &fl_view_memory, st, '<');
	assert_int_equal(act.arg, fl_engine_program(f.s)->n_kernels - 1);
	f.sel.kernel = 3;
	text = t_view_render(&f, &fl_view_memory, st, 100, 30);
	t_assert_contains(text, "kernel fl_k3 (4 of 11)");
	free(text);
	t_view_goto(&f, 2);
	text = t_view_render(&f, &fl_view_memory, st, 100, 30);
	t_assert_contains(text, "no kernels yet");
	t_assert_contains(text, "layer 1");
	free(text);
	fl_view_memory.destroy(st);
	t_view_close(&f);
}

/* Whether tensor t is on a stitched edge of kernel k, worked out here
 * from the graph and the partition: written by an op of one micro-graph
 * of k and read by an op of another. */
static bool on_stitched_edge(const t_view *f, const fl_kernel *k, int t,
			     int *from, int *to)
{
	const fl_graph *g = fl_engine_graph(f->s);
	const int *group_of = fl_engine_partition(f->s)->group_of;
	int pr = g->tensors[t].producer;
	bool in_k = false;

	for (int i = 0; i < k->n_ops; i++)
		in_k |= k->ops[i] == pr;
	if (pr < 0 || !in_k)
		return false;
	for (int i = 0; i < k->n_ops; i++) {
		const fl_op *op = &g->ops[k->ops[i]];

		for (int j = 0; j < op->n_in; j++)
			if (op->in[j] == t &&
			    group_of[k->ops[i]] != group_of[pr]) {
				*from = group_of[pr];
				*to = group_of[k->ops[i]];
				return true;
			}
	}
	return false;
}

/* The memory view of kernel fl_k0 past layer 2 (before codegen): it
 * names every micro-graph the kernel stitched, and each tensor on a
 * stitched edge has a row with its micro-graphs, its placement, its
 * bytes per tile against `cap` and the reason of its decision.  Returns
 * the edges' names, space-separated, for the caller to check. */
static char *assert_stitched_edges(t_view *f, const char *cap, char *names,
				   size_t n)
{
	void *st = fl_view_memory.create();
	const fl_program *p;
	const fl_kernel *k;
	const int *group_of;
	char *text, want[256];
	int from, to, n_groups = 0;

	t_view_goto(f, t_step_before_codegen(f));
	p = fl_engine_program(f->s);
	k = &p->kernels[0];
	group_of = fl_engine_partition(f->s)->group_of;
	f->sel.kernel = 0;
	text = t_view_render(f, &fl_view_memory, st, 200, 40);
	t_assert_contains(text, "stitched (layer 2): G");
	for (int i = 0; i < k->n_ops; i++) {
		snprintf(want, sizeof want, "G%d (", group_of[k->ops[i]]);
		t_assert_contains(text, want);
		n_groups += i == 0 || group_of[k->ops[i]] !=
				      group_of[k->ops[i - 1]];
	}
	assert_true(n_groups >= 2);
	names[0] = '\0';
	for (int i = 0; i < k->n_tensors; i++) {
		const fl_kernel_tensor *kt = &k->tensors[i];
		const char *name =
			fl_engine_graph(f->s)->tensors[kt->tensor].name;
		char row[1024];
		int y;

		if (!on_stitched_edge(f, k, kt->tensor, &from, &to))
			continue;
		snprintf(want, sizeof want, "  %s ", name);
		y = row_of(f->grid, want);
		assert_true(y >= 0);
		fl_grid_row(f->grid, y, row, sizeof row);
		snprintf(want, sizeof want, "G%d -> G%d", from, to);
		t_assert_contains(row, want);
		t_assert_contains(row, fl_placement_name(kt->place));
		t_assert_contains(row, cap);
		t_assert_contains(row, kt->why);
		t_assert_contains(kt->why, "stitched edge");
		assert_int_equal(fl_grid_cell(f->grid, 3, y)->look,
				 kt->place == FL_PLACE_TILE_LOCAL ?
				 FL_LOOK_OK : FL_LOOK_WARN);
		snprintf(names + strlen(names), n - strlen(names), "%s%s:%s",
			 names[0] ? " " : "", name,
			 fl_placement_name(kt->place));
	}
	free(text);
	fl_view_memory.destroy(st);
	return names;
}

/* The last step of layer 1: the memory view has no layer-2 section. */
static void assert_nothing_stitched_before_layer2(t_view *f)
{
	const fl_event_log *log = fl_engine_events(f->s);
	void *st = fl_view_memory.create();
	int last = -1;
	char *text;

	for (int i = 0; i < fl_event_log_count(log); i++)
		if (fl_event_log_get(log, i)->pass == FL_PASS_LAYER1)
			last = i;
	assert_true(last > 0);
	t_view_goto(f, last + 1);
	text = t_view_render(f, &fl_view_memory, st, 200, 40);
	assert_null(strstr(text, "stitched (layer 2)"));
	free(text);
	fl_view_memory.destroy(st);
}

/* Softmax and layernorm under apollo-l2: layer 2 makes each one kernel
 * (APOLLO 4.2), its reductions' results and the tensors between the
 * stitched parts stay in each tile (the sample's 512 KiB L2 is the
 * capacity); before layer 2 nothing is stitched. */
static void view_panels_memory_stitched(void **state)
{
	char names[512];
	t_view f;

	(void)state;
	t_view_open_strategy(&f, "softmax", -1, FL_STRATEGY_APOLLO_L2);
	assert_int_equal(fl_engine_program(f.s)->n_kernels, 1);
	assert_string_equal(assert_stitched_edges(&f, "of 512.0 KiB", names,
						  sizeof names),
			    "softmax.max:tile-local softmax.exp:tile-local "
			    "softmax.sum:tile-local");
	assert_nothing_stitched_before_layer2(&f);
	t_view_close(&f);

	t_view_open_strategy(&f, "layernorm", -1, FL_STRATEGY_APOLLO_L2);
	assert_int_equal(fl_engine_program(f.s)->n_kernels, 1);
	assert_stitched_edges(&f, "of 512.0 KiB", names, sizeof names);
	t_assert_contains(names, "layernorm.sum:tile-local");
	t_assert_contains(names, "layernorm.center:tile-local");
	t_assert_contains(names, "layernorm.sqsum:tile-local");
	assert_nothing_stitched_before_layer2(&f);
	t_view_close(&f);
}

/* With a 1 KiB capacity, softmax's exp (a whole row block a tile) stays
 * global and says why with its numbers; the row of the reduction's
 * result, a few bytes a tile, is still tile-local. */
static void view_panels_memory_stitched_global(void **state)
{
	char names[512];
	t_view f;

	(void)state;
	t_view_open_capacity(&f, "softmax", -1, FL_STRATEGY_APOLLO_L2, 1024);
	assert_stitched_edges(&f, "of 1.0 KiB", names, sizeof names);
	assert_string_equal(names, "softmax.max:tile-local "
			    "softmax.exp:global softmax.sum:tile-local");
	/* the grid of that rendering: the reason, with its numbers */
	assert_true(fl_grid_find_look(f.grid, "> capacity 1 KiB",
				      FL_LOOK_WARN));
	t_view_close(&f);
}

/* Inception under apollo: the memory view of the kernel layer 3 made
 * names its branches (each by its micro-graph and ops); the other
 * kernels' views name none. */
static void view_panels_memory_branches(void **state)
{
	void *st = fl_view_memory.create();
	const fl_program *p;
	const int *group_of;
	int shown = 0;
	t_view f;

	(void)state;
	t_view_open_strategy(&f, "inception_block", -1, FL_STRATEGY_APOLLO);
	p = fl_engine_program(f.s);
	group_of = fl_engine_partition(f.s)->group_of;
	for (int k = 0; k < p->n_kernels; k++) {
		const fl_kernel *kn = &p->kernels[k];
		char *text, want[160];

		f.sel.kernel = k;
		text = t_view_render(&f, &fl_view_memory, st, 200, 40);
		if (kn->n_branches == 0) {
			assert_null(strstr(text, "parallel (layer 3)"));
			free(text);
			continue;
		}
		snprintf(want, sizeof want, "parallel (layer 3): %d branches "
			 "side by side: ", kn->n_branches);
		t_assert_contains(text, want);
		for (int b = 0; b < kn->n_branches; b++) {
			const fl_kernel *br = &kn->branches[b];

			snprintf(want, sizeof want, "G%d (%s", group_of[
				 br->ops[0]], fl_engine_graph(f.s)->ops[
				 br->ops[0]].name);
			t_assert_contains(text, want);
		}
		shown++;
		free(text);
	}
	assert_int_equal(shown, 1);
	fl_view_memory.destroy(st);
	t_view_close(&f);
}

/* ---- parallel groups view ---------------------------------------------- */

static void view_panels_parallel_view(void **state)
{
	t_view f;
	void *st = fl_view_parallel.create();
	fl_view_action act;
	char *text;

	(void)state;
	t_view_open(&f, "inception_block", -1);
	text = t_view_render(&f, &fl_view_parallel, st, 110, 50);
	assert_true(fl_grid_find_look(f.grid, "has NOT run", FL_LOOK_WARN));
	t_assert_contains(text, "virtual head");
	t_assert_contains(text, "dropped: compute-bound");
	t_assert_contains(text, "round 1");
	t_assert_contains(text, "gain = ");
	assert_true(fl_grid_find_look(f.grid, "accept {(b4_pad) + (b2_pad) + "
				      "(b3_pad)}", FL_LOOK_OK));
	t_assert_contains(text, "1 group would run together");
	free(text);
	/* lines: units, formula, set, branch, then the first unit: fl_k0 */
	for (int i = 0; i < 4; i++)
		press(&f, &fl_view_parallel, st, FL_KEY_DOWN);
	act = press(&f, &fl_view_parallel, st, FL_KEY_ENTER);
	assert_int_equal(act.kind, FL_VIEW_ACT_SELECT_KERNEL);
	assert_int_equal(act.arg, 0);
	fl_view_parallel.destroy(st);
	t_view_close(&f);

	st = fl_view_parallel.create();
	t_view_open(&f, "chain8", 0);
	text = t_view_render(&f, &fl_view_parallel, st, 110, 30);
	t_assert_contains(text, "no branch set");
	t_assert_contains(text, "0 groups would run together");
	free(text);
	fl_view_parallel.destroy(st);
	t_view_close(&f);
}

/* Under apollo, once layer 3 ran: the analysis it acted on, with the
 * group it stitched; stepping back before the pass shows the analysis of
 * the state there again. */
static void view_panels_parallel_view_after_layer3(void **state)
{
	t_view f;
	void *st = fl_view_parallel.create();
	char *text;
	int before = -1;
	const fl_event_log *log;

	(void)state;
	t_view_open_strategy(&f, "inception_block", -1, FL_STRATEGY_APOLLO);
	text = t_view_render(&f, &fl_view_parallel, st, 140, 50);
	assert_true(fl_grid_find_look(f.grid, "Layer 3 ran", FL_LOOK_OK));
	t_assert_contains(text, "accept, stitched as fl_k3 {(b4_pad) + "
			  "(b2_pad) + (b3_pad)}");
	t_assert_contains(text, "1 of 1 accepted group stitched");
	free(text);
	log = fl_engine_events(f.s);
	for (int i = 0; i < fl_event_log_count(log) && before < 0; i++)
		if (fl_event_log_get(log, i)->pass == FL_PASS_LAYER3)
			before = i;
	assert_true(before > 0);
	t_view_goto(&f, before - 1);	/* the last decision before layer 3 */
	text = t_view_render(&f, &fl_view_parallel, st, 140, 50);
	assert_true(fl_grid_find_look(f.grid, "has NOT run", FL_LOOK_WARN));
	t_assert_contains(text, "1 group would run together");
	free(text);
	fl_view_parallel.destroy(st);
	t_view_close(&f);
}

/* ---- timings ------------------------------------------------------------ */

static fl_ladder_kernel *kernels(int n, const char *first, const char *last,
				 double secs, double unfused)
{
	fl_ladder_kernel *k = calloc((size_t)n, sizeof *k);

	assert_non_null(k);
	for (int i = 0; i < n; i++) {
		snprintf(k[i].name, sizeof k[i].name, "fl_k%d", i);
		snprintf(k[i].first_op, sizeof k[i].first_op, "%s%d", first,
			 n > 1 ? i : 0);
		snprintf(k[i].last_op, sizeof k[i].last_op, "%s%d", last,
			 n > 1 ? i : 0);
		k[i].n_ops = n > 1 ? 1 : 3;
		k[i].r.seconds = secs;
		k[i].r.min_seconds = secs * 0.9;
		k[i].r.max_seconds = secs * 1.1;
		k[i].r.ok = true;
		k[i].unfused_seconds = unfused;
	}
	return k;
}

static void ran_step(fl_ladder_step *s, fl_strategy st, int n_k,
		     double secs, double lo, double hi, double speedup,
		     bool noise)
{
	memset(s, 0, sizeof *s);
	s->strategy = st;
	s->ran = true;
	s->status = FL_RUN_OK;
	s->n_kernels = n_k;
	s->total_seconds = secs;
	s->total_min = lo;
	s->total_max = hi;
	s->max_abs = 2.5e-7;
	s->max_rel = 1.5e-6;
	s->verified = true;
	s->speedup = speedup;
	s->within_noise = noise;
}

static void free_ladder(fl_ladder *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->steps[i].kernels);
	free(l->steps);
}

/* now: unfused 2 ms, xla 1.9 ms (a speedup inside the noise), apollo-l1
 * 1 ms (2x, one kernel of three ops); before: apollo-l1 failed to
 * compile and xla had two kernels. */
static void make_ladders(fl_ladder *now, fl_ladder *before)
{
	/* every field the view reads (machine, load, interleaved) defined */
	memset(now, 0, sizeof *now);
	memset(before, 0, sizeof *before);
	now->n = before->n = 3;
	now->steps = calloc(3, sizeof *now->steps);
	before->steps = calloc(3, sizeof *before->steps);
	assert_true(now->steps && before->steps);
	ran_step(&now->steps[0], FL_STRATEGY_UNFUSED, 3, 2e-3, 1.9e-3,
		 2.1e-3, 1.0, false);
	now->steps[0].kernels = kernels(3, "op", "op", 0.66e-3, 0.66e-3);
	ran_step(&now->steps[1], FL_STRATEGY_XLA, 1, 1.9e-3, 1.8e-3, 2.0e-3,
		 2e-3 / 1.9e-3, true);
	now->steps[1].kernels = kernels(1, "op", "op", 1.9e-3, 2e-3);
	ran_step(&now->steps[2], FL_STRATEGY_APOLLO_L1, 1, 1e-3, 0.95e-3,
		 1.05e-3, 2.0, false);
	now->steps[2].kernels = kernels(1, "op", "op", 1e-3, 2e-3);
	ran_step(&before->steps[0], FL_STRATEGY_UNFUSED, 3, 2e-3, 1.9e-3,
		 2.1e-3, 1.0, false);
	before->steps[0].kernels = kernels(3, "op", "op", 0.66e-3, 0.66e-3);
	ran_step(&before->steps[1], FL_STRATEGY_XLA, 2, 2.5e-3, 2.4e-3,
		 2.6e-3, 0.8, false);
	before->steps[1].kernels = kernels(2, "op", "op", 1.2e-3, 1e-3);
	memset(&before->steps[2], 0, sizeof before->steps[2]);
	before->steps[2].strategy = FL_STRATEGY_APOLLO_L1;
	before->steps[2].ran = true;
	before->steps[2].status = FL_RUN_COMPILE_ERROR;
	snprintf(before->steps[2].message, sizeof before->steps[2].message,
		 "gen.c:12: error: boom\nmore");
}

static void view_panels_timings_ladder(void **state)
{
	t_view f;
	void *st = fl_view_timings.create();
	fl_ladder now, before;
	char *text;
	int y_unf, y_apo;

	(void)state;
	make_ladders(&now, &before);
	t_view_open(&f, "softmax", 0);
	text = t_view_render(&f, &fl_view_timings, st, 100, 30);
	t_assert_contains(text, "press R");
	free(text);
	f.ctx.ladder = &now;
	f.ctx.timed = &now.steps[2];
	text = t_view_render(&f, &fl_view_timings, st, 117, 30);
	t_assert_contains(text, "2.000 ms [1.900..2.100]");
	t_assert_contains(text, " 2.00x");
	assert_true(fl_grid_find_look(f.grid, "1.05x within noise",
				      FL_LOOK_WARN));
	assert_false(fl_grid_find_look(f.grid, "2.00x", FL_LOOK_WARN));
	t_assert_contains(text, "err 2.5e-07/1.5e-06");
	/* bars: unfused (slowest) fills the bar, apollo-l1 half of it */
	y_unf = row_of(f.grid, "unfused ");
	y_apo = row_of(f.grid, "apollo-l1 ");
	assert_true(y_unf > 0 && y_apo > 0);
	assert_int_equal(bar_cells(f.grid, y_unf), 30);
	assert_int_equal(bar_cells(f.grid, y_apo), 15);
	free(text);
	/* expand apollo-l1: its kernel, its ops and its own speedup */
	press(&f, &fl_view_timings, st, FL_KEY_DOWN);
	press(&f, &fl_view_timings, st, FL_KEY_DOWN);
	press(&f, &fl_view_timings, st, FL_KEY_ENTER);
	text = t_view_render(&f, &fl_view_timings, st, 100, 30);
	t_assert_contains(text, "fl_k0     1.000 ms  unfused  2.000 ms  2.00x"
			  "    3 ops op0..op0");
	t_assert_contains(text, "apollo-l1  (the session's strategy)");
	free(text);
	/* a kernel found SLOWER over its pairs says so, and why */
	now.steps[2].kernels[0].label = FL_TIMING_SLOWER;
	now.steps[2].kernels[0].ratio.s.n = 9;
	now.steps[2].kernels[0].ratio.slower = 9;
	snprintf(now.steps[2].kernels[0].why, sizeof now.steps[2].kernels[0].why,
		 "%s", "8 tiles for 16 cores");
	text = t_view_render(&f, &fl_view_timings, st, 160, 30);
	t_assert_contains(text, "SLOWER, quicker in 0 of 9 pairs");
	assert_true(fl_grid_find_look(f.grid, "why SLOWER: 8 tiles for 16 "
				      "cores", FL_LOOK_WARN));
	free(text);
	fl_view_timings.destroy(st);
	free_ladder(&now);
	free_ladder(&before);
	t_view_close(&f);
}

static void view_panels_timings_compare(void **state)
{
	t_view f;
	void *st = fl_view_timings.create();
	fl_ladder now, before;
	char *text;

	(void)state;
	make_ladders(&now, &before);
	t_view_open(&f, "softmax", 0);
	/* the failed run on its own */
	f.ctx.ladder = &before;
	text = t_view_render(&f, &fl_view_timings, st, 100, 30);
	assert_true(fl_grid_find_look(f.grid, "failed (compile error): "
				      "gen.c:12: error: boom", FL_LOOK_BAD));
	assert_null(strstr(text, "more"));
	free(text);
	/* after an override: before -> now per strategy */
	f.ctx.ladder = &now;
	f.ctx.prev_ladder = &before;
	f.ctx.prev_label = "forbid a b";
	text = t_view_render(&f, &fl_view_timings, st, 120, 30);
	t_assert_contains(text, "compared with before: forbid a b");
	t_assert_contains(text, "before (forbid a b): 2.000 ms -> now "
			  "2.000 ms (+0.0%); kernels: 0 new, 0 gone");
	t_assert_contains(text, "before (forbid a b): 2.500 ms -> now "
			  "1.900 ms (-24.0%); kernels: 1 new, 2 gone");
	t_assert_contains(text, "before (forbid a b): failed -> now 1.000 ms");
	assert_true(fl_grid_find_look(f.grid, "1 new, 2 gone", FL_LOOK_WARN));
	free(text);
	/* expanded, the kernel that did not exist before is new, and the
	 * two it replaced are gone */
	press(&f, &fl_view_timings, st, FL_KEY_DOWN);
	press(&f, &fl_view_timings, st, FL_KEY_RIGHT);
	text = t_view_render(&f, &fl_view_timings, st, 120, 30);
	assert_true(fl_grid_find_look(f.grid, "  new", FL_LOOK_WARN));
	t_assert_contains(text, "fl_k0    gone (was 1.200 ms)     1 ops "
			  "op0..op0");
	t_assert_contains(text, "fl_k1    gone (was 1.200 ms)     1 ops "
			  "op1..op1");
	free(text);
	fl_view_timings.destroy(st);
	free_ladder(&now);
	free_ladder(&before);
	t_view_close(&f);
}

/* ---- every size --------------------------------------------------------- */

/* Each view at sizes from 1x1 to 300x100, before anything, at the end,
 * with a ladder; keys at a tiny size must not crash either. */
static void view_panels_sizes(void **state)
{
	static const int sizes[][2] = {{1, 1}, {2, 2}, {5, 3}, {80, 24},
				       {300, 100}, {0, 0}, {1, 100}, {300, 1}};
	const fl_view_class *vcs[] = {&fl_view_decisions, &fl_view_memory,
				      &fl_view_parallel, &fl_view_timings};
	static const int keys[] = {FL_KEY_UP, FL_KEY_DOWN, FL_KEY_PGDN,
				   FL_KEY_PGUP, FL_KEY_HOME, FL_KEY_END,
				   FL_KEY_ENTER, FL_KEY_LEFT, FL_KEY_RIGHT,
				   FL_KEY_MOUSE, '[', ']', '{', '}', 'A'};
	fl_ladder now, before;
	fl_view_action act;
	t_view f;

	(void)state;
	make_ladders(&now, &before);
	t_view_open(&f, "inception_block", 0);
	for (int pass = 0; pass < 3; pass++) {
		if (pass == 1)
			t_view_goto(&f, -1);
		if (pass == 2) {
			f.ctx.ladder = &now;
			f.ctx.prev_ladder = &before;
		}
		for (size_t v = 0; v < sizeof vcs / sizeof vcs[0]; v++) {
			void *st = vcs[v]->create();

			assert_non_null(st);
			for (size_t i = 0; i < sizeof sizes / sizeof sizes[0];
			     i++) {
				char *text = t_view_render(&f, vcs[v], st,
							   sizes[i][0],
							   sizes[i][1]);

				if (sizes[i][0] == 80)
					assert_true(strlen(text) > 0);
				free(text);
				for (size_t k = 0;
				     k < sizeof keys / sizeof keys[0]; k++)
					vcs[v]->key(st, &f.ctx, keys[k], &act);
			}
			vcs[v]->destroy(st);
		}
	}
	free_ladder(&now);
	free_ladder(&before);
	t_view_close(&f);
}

FL_SUITE(view_panels,
	 cmocka_unit_test(view_panels_parallel_inception),
	 cmocka_unit_test(view_panels_parallel_groups),
	 cmocka_unit_test(view_panels_parallel_diamond),
	 cmocka_unit_test(view_panels_parallel_disconnected),
	 cmocka_unit_test(view_panels_parallel_chain),
	 cmocka_unit_test(view_panels_parallel_gain),
	 cmocka_unit_test(view_panels_decisions_sync),
	 cmocka_unit_test(view_panels_decisions_keys),
	 cmocka_unit_test(view_panels_decisions_filters),
	 cmocka_unit_test(view_panels_decisions_details),
	 cmocka_unit_test(view_panels_decisions_layers),
	 cmocka_unit_test(view_panels_memory_placements),
	 cmocka_unit_test(view_panels_memory_kernels),
	 cmocka_unit_test(view_panels_memory_stitched),
	 cmocka_unit_test(view_panels_memory_stitched_global),
	 cmocka_unit_test(view_panels_memory_branches),
	 cmocka_unit_test(view_panels_parallel_view),
	 cmocka_unit_test(view_panels_parallel_view_after_layer3),
	 cmocka_unit_test(view_panels_timings_ladder),
	 cmocka_unit_test(view_panels_timings_compare),
	 cmocka_unit_test(view_panels_sizes));
