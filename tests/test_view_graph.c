/* The graph view (views/view_graph.c): the layout drawn into cells,
 * colours by micro-graph and by kernel, the decision's ops, the three
 * modes, selection by keys and by mouse, the detail pane, the time
 * overlay, small grids, and the cost of laying out and redrawing a real
 * model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "test_util.h"
#include "view_fixture.h"

/* Where text starts on the grid (cells compared one code point per
 * byte: the names searched for are ASCII); 0 when it is nowhere. */
static int find_text(const fl_grid *g, const char *text, int *x, int *y)
{
	int n = (int)strlen(text);

	for (int r = 0; r < g->h; r++)
		for (int c = 0; c + n <= g->w; c++) {
			int k = 0;

			while (k < n && fl_grid_cell(g, c + k, r)->ch ==
					(uint32_t)(unsigned char)text[k])
				k++;
			if (k == n) {
				*x = c;
				*y = r;
				return 1;
			}
		}
	return 0;
}

/* Boxes drawn: left borders followed by a blank and a label. */
static int count_boxes(const fl_grid *g)
{
	int n = 0;

	for (int y = 0; y < g->h; y++)
		for (int x = 0; x + 2 < g->w; x++) {
			uint32_t c = fl_grid_cell(g, x, y)->ch;
			uint32_t l = fl_grid_cell(g, x + 2, y)->ch;

			n += (c == FL_CH_VLINE || c == 0x2551) &&
			     fl_grid_cell(g, x + 1, y)->ch == ' ' && l > ' ' &&
			     l < 0x80;
		}
	return n;
}

static int count_ch(const fl_grid *g, uint32_t ch)
{
	int n = 0;

	for (int i = 0; i < g->w * g->h; i++)
		n += g->cells[i].ch == ch;
	return n;
}

/* A step late in the partition, before layer 1 made kernels: the one
 * before the last merge (the engine may set up layer 1's program at the
 * pass boundary, so the step right after the merges will not do). */
static int step_partitioned(t_view *f)
{
	const fl_event_log *log;
	int last = -1;

	t_view_goto(f, -1);
	log = fl_engine_events(f->s);
	for (int i = 0; i < fl_event_log_count(log); i++)
		if (fl_event_log_get(log, i)->kind == FL_EV_MERGED)
			last = i;
	if (last < 0)
		fail_msg("no merge");
	t_view_goto(f, last);
	assert_null(fl_engine_program(f->s));
	return last;
}

static int first_event(t_view *f, fl_event_kind k)
{
	const fl_event_log *log;

	t_view_goto(f, -1);
	log = fl_engine_events(f->s);
	for (int i = 0; i < fl_event_log_count(log); i++)
		if (fl_event_log_get(log, i)->kind == k)
			return i;
	fail_msg("no %s event", fl_event_kind_name(k));
	return -1;
}

static int key(void *st, t_view *f, int k, fl_view_action *act)
{
	memset(act, 0, sizeof *act);
	return fl_view_graph.key(st, &f->ctx, k, act);
}

/* Boxes with corners, and between a producer and its consumer an edge
 * that ends in a downward arrowhead sitting on the consumer's box. */
static void view_graph_boxes_and_edges(void **state)
{
	t_view f;
	void *st = fl_view_graph.create();
	const fl_grid *g;
	char *t;
	int x, y, arrows_on_boxes = 0;

	(void)state;
	t_view_open(&f, "apollo_fig1", -1);
	t = t_view_render(&f, &fl_view_graph, st, 120, 50);
	g = f.grid;
	assert_true(count_ch(g, FL_CH_TL) >= 5 && count_ch(g, FL_CH_BR) >= 5);
	/* op2.sigmoid feeds op2.mul: its box is drawn above the consumer's */
	assert_true(find_text(g, "op2.sigmoid E", &x, &y));
	{
		int x2, y2;

		assert_true(find_text(g, "op2.mul E", &x2, &y2));
		assert_true(y2 > y + 2);
	}
	for (int i = 0; i < g->w * g->h; i++) {
		const fl_cell *below;

		if (g->cells[i].ch != FL_CH_ARROW_D)
			continue;
		assert_int_equal(g->cells[i].look, FL_LOOK_EDGE);
		below = fl_grid_cell(g, i % g->w, i / g->w + 1);
		arrows_on_boxes += below && (below->ch == FL_CH_HLINE ||
					     below->ch == FL_CH_TL ||
					     below->ch == FL_CH_TR);
	}
	assert_true(arrows_on_boxes >= 6);
	/* edges leave their producers through a tee in the bottom border */
	{
		int tees = 0;

		for (int i = g->w; i < g->w * (g->h - 1); i++)
			tees += g->cells[i].ch == FL_CH_TEE_D &&
				g->cells[i - g->w].ch != FL_CH_VLINE &&
				g->cells[i + g->w].look == FL_LOOK_EDGE;
		assert_true(tees >= 6);
	}
	assert_true(count_ch(g, FL_CH_VLINE) > 0);
	free(t);
	fl_view_graph.destroy(st);
	t_view_close(&f);
}

/* Any size renders without writing outside the grid, down to 1x1; a
 * tiny grid still shows part of the drawing. */
static void view_graph_small_sizes(void **state)
{
	static const int sizes[][2] = {
		{1, 1}, {2, 1}, {1, 5}, {3, 2}, {10, 4}, {20, 3}, {80, 24},
		{300, 100},
	};
	t_view f;
	void *st = fl_view_graph.create();

	(void)state;
	t_view_open(&f, "apollo_fig1", -1);
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		char *t = t_view_render(&f, &fl_view_graph, st, sizes[i][0],
					sizes[i][1]);

		assert_int_equal(f.grid->w, sizes[i][0]);
		assert_int_equal(f.grid->h, sizes[i][1]);
		if (sizes[i][0] >= 10 && sizes[i][1] >= 4)
			assert_true(strlen(t) > (size_t)sizes[i][0] / 2);
		free(t);
	}
	fl_view_graph.destroy(st);
	t_view_close(&f);
}

/* Panning right shows another part of a drawing wider than the view;
 * panning back restores it. */
static void view_graph_pan(void **state)
{
	t_view f;
	void *st = fl_view_graph.create();
	fl_view_action act;
	char *a, *b, *c;

	(void)state;
	t_view_open(&f, "bert_encoder", -1);
	a = t_view_render(&f, &fl_view_graph, st, 30, 12);
	assert_int_equal(key(st, &f, 'l', &act), 1);
	assert_int_equal(act.kind, FL_VIEW_ACT_NONE);
	b = t_view_render(&f, &fl_view_graph, st, 30, 12);
	assert_string_not_equal(a, b);
	assert_int_equal(key(st, &f, FL_KEY_LEFT, &act), 1);
	c = t_view_render(&f, &fl_view_graph, st, 30, 12);
	assert_string_equal(a, c);
	free(a);
	free(b);
	free(c);
	fl_view_graph.destroy(st);
	t_view_close(&f);
}

/* Renders with op selected (so the view pans to it), then without (so
 * its text is in its colour, not the cursor's). */
static void render_around(t_view *f, void *st, int op)
{
	f->sel.op = op;
	free(t_view_render(f, &fl_view_graph, st, 200, 60));
	f->sel.op = -1;
}

/* An op whose micro-graph id and kernel index have different colours:
 * its box is in the micro-graph's colour after the partition and in the
 * kernel's once layer 1 made kernels.  (Op indices differ between the
 * two steps: the op is followed by name.) */
static void view_graph_colours(void **state)
{
	t_view f;
	void *st = fl_view_graph.create();
	char names[64][128];
	int kid[64], n = 0, before, op = -1, gid = -1, k = -1;
	const fl_graph *g;
	char *t;

	(void)state;
	t_view_open(&f, "bert_encoder", -1);
	before = step_partitioned(&f);
	t_view_goto(&f, -1);
	g = fl_engine_graph(f.s);
	for (int i = 0; i < g->n_ops && n < 64; i++)
		if (!f.hl[i] && (kid[n] = fl_view_kernel_of_op(&f.ctx, i)) >= 0)
			snprintf(names[n++], sizeof names[0], "%s",
				 g->ops[i].name);
	t_view_goto(&f, before);
	for (int i = 0; i < n && op < 0; i++) {
		int o = t_view_op(&f, names[i]);
		int gr = fl_engine_partition(f.s)->group_of[o];

		if (!f.hl[o] && fl_look_group(gr) != fl_look_group(kid[i])) {
			op = o;
			gid = gr;
			k = i;
		}
	}
	assert_true(op >= 0);
	render_around(&f, st, op);
	t = t_view_render(&f, &fl_view_graph, st, 200, 60);
	assert_true(fl_grid_find_look(f.grid, names[k], fl_look_group(gid)));
	assert_non_null(strstr(t, "colour: micro-graph"));
	free(t);
	t_view_goto(&f, -1);
	render_around(&f, st, t_view_op(&f, names[k]));
	t = t_view_render(&f, &fl_view_graph, st, 200, 60);
	assert_true(fl_grid_find_look(f.grid, names[k], fl_look_group(kid[k])));
	assert_non_null(strstr(t, "colour: kernel"));
	free(t);
	fl_view_graph.destroy(st);
	t_view_close(&f);
}

/* At a merge, both ops of the decision are highlighted and the merged
 * micro-graph is drawn in double lines. */
static void view_graph_merge_highlight(void **state)
{
	t_view f;
	void *st = fl_view_graph.create();
	int m;
	char *t;

	(void)state;
	t_view_open(&f, "apollo_fig1", -1);
	m = first_event(&f, FL_EV_MERGED);
	t_view_goto(&f, m + 1);
	assert_int_equal(f.ctx.current->kind, FL_EV_MERGED);
	t = t_view_render(&f, &fl_view_graph, st, 120, 50);
	assert_true(f.ctx.current->n_ops == 2);
	for (int i = 0; i < 2; i++)
		assert_true(fl_grid_find_look(f.grid, f.ctx.current->ops[i],
					      FL_LOOK_HIGHLIGHT));
	assert_true(count_ch(f.grid, 0x2554) >= 2);	/* ╔ */
	/* a step later, the next decision's ops are the highlighted ones */
	t_view_goto(&f, m);
	free(t);
	t = t_view_render(&f, &fl_view_graph, st, 120, 50);
	assert_int_equal(count_ch(f.grid, 0x2554), 0);
	free(t);
	fl_view_graph.destroy(st);
	t_view_close(&f);
}

/* Collapsed: one box per micro-graph with its type and member count;
 * Enter on a box shows its ops instead, Enter on one of them closes it. */
static void view_graph_collapsed(void **state)
{
	t_view f;
	void *st = fl_view_graph.create();
	const fl_partition *pt;
	fl_view_action act;
	int big = -1, boxes = 0;
	const char *second;
	char *t, want[64];

	(void)state;
	t_view_open(&f, "apollo_fig1", -1);
	step_partitioned(&f);
	pt = fl_engine_partition(f.s);
	assert_int_equal(key(st, &f, 'c', &act), 1);
	t = t_view_render(&f, &fl_view_graph, st, 120, 50);
	assert_non_null(strstr(t, "collapsed"));
	for (int i = 0; i < pt->n_groups; i++) {
		const fl_micro_graph *mg = &pt->groups[i];

		if (!mg->alive)
			continue;
		boxes++;
		snprintf(want, sizeof want, "G%d %s %d op%s", mg->id,
			 fl_op_type_name(mg->type), mg->n_members,
			 mg->n_members == 1 ? "" : "s");
		assert_non_null(strstr(t, want));
		if (mg->n_members > 1 && big < 0)
			big = i;
	}
	assert_int_equal(count_boxes(f.grid), boxes);
	assert_true(big >= 0);
	second = fl_engine_graph(f.s)->ops[pt->groups[big].members[1]].name;
	assert_null(strstr(t, second));
	free(t);
	f.sel.op = pt->groups[big].members[0];
	assert_int_equal(key(st, &f, FL_KEY_ENTER, &act), 1);
	t = t_view_render(&f, &fl_view_graph, st, 120, 50);
	snprintf(want, sizeof want, "G%d %s %d ops", big,
		 fl_op_type_name(pt->groups[big].type),
		 pt->groups[big].n_members);
	for (int i = 0; i < pt->groups[big].n_members; i++) {
		int m = pt->groups[big].members[i];

		assert_non_null(strstr(t, fl_engine_graph(f.s)->ops[m].name));
	}
	assert_null(strstr(t, want));
	free(t);
	assert_int_equal(key(st, &f, FL_KEY_ENTER, &act), 1);
	t = t_view_render(&f, &fl_view_graph, st, 120, 50);
	assert_null(strstr(t, second));
	free(t);
	assert_int_equal(key(st, &f, 'a', &act), 1);
	t = t_view_render(&f, &fl_view_graph, st, 120, 50);
	assert_non_null(strstr(t, second));
	free(t);
	fl_view_graph.destroy(st);
	t_view_close(&f);
}

/* Neighbourhood: the decision's ops alone at k = 0, their producers and
 * consumers at k = 1, never ops further away. */
static void view_graph_neighbourhood(void **state)
{
	t_view f;
	void *st = fl_view_graph.create();
	fl_view_action act;
	const fl_graph *g;
	bool near[64] = {false};
	char *t;
	int m, far = -1;

	(void)state;
	t_view_open(&f, "apollo_fig1", -1);
	m = first_event(&f, FL_EV_MERGED);
	t_view_goto(&f, m + 1);
	g = fl_engine_graph(f.s);
	assert_true(g->n_ops < 64);
	assert_int_equal(key(st, &f, 'v', &act), 1);
	assert_int_equal(key(st, &f, '-', &act), 1);
	assert_int_equal(key(st, &f, '-', &act), 1);
	t = t_view_render(&f, &fl_view_graph, st, 120, 40);
	assert_non_null(strstr(t, "neighbourhood k=0"));
	assert_int_equal(count_boxes(f.grid), f.ctx.current->n_ops);
	free(t);
	assert_int_equal(key(st, &f, '+', &act), 1);
	t = t_view_render(&f, &fl_view_graph, st, 120, 40);
	/* ops one edge away from the decision's */
	for (int i = 0; i < g->n_ops; i++)
		for (int k = 0; k < g->ops[i].n_in; k++) {
			int p = g->tensors[g->ops[i].in[k]].producer;

			if (p >= 0 && (f.hl[p] || f.hl[i]))
				near[p] = near[i] = true;
		}
	for (int i = 0; i < g->n_ops; i++) {
		char label[160];

		snprintf(label, sizeof label, "%s ", g->ops[i].name);
		if (near[i] || f.hl[i])
			assert_non_null(strstr(t, label));
		else if (far < 0 && !strchr(g->ops[i].name, '.'))
			far = i;
	}
	assert_true(far >= 0);
	{
		char label[160];

		snprintf(label, sizeof label, "%s ", g->ops[far].name);
		assert_null(strstr(t, label));
	}
	free(t);
	fl_view_graph.destroy(st);
	t_view_close(&f);
}

/* A click on a box selects its op; a click on nothing selects nothing;
 * ] selects the top box first and then moves on; J moves down. */
static void view_graph_select(void **state)
{
	t_view f;
	void *st = fl_view_graph.create();
	fl_view_action act;
	char *t;
	int x, y, op;

	(void)state;
	t_view_open(&f, "apollo_fig1", -1);
	op = t_view_op(&f, "op7.rsqrt");
	t = t_view_render(&f, &fl_view_graph, st, 120, 50);
	assert_true(find_text(f.grid, "op7.rsqrt", &x, &y));
	f.ctx.mouse_x = x + 2;
	f.ctx.mouse_y = y;
	assert_int_equal(key(st, &f, FL_KEY_MOUSE, &act), 1);
	assert_int_equal(act.kind, FL_VIEW_ACT_SELECT_OP);
	assert_int_equal(act.arg, op);
	f.ctx.mouse_x = 0;	/* the blank left margin */
	f.ctx.mouse_y = y;
	assert_int_equal(key(st, &f, FL_KEY_MOUSE, &act), 1);
	assert_int_equal(act.kind, FL_VIEW_ACT_NONE);
	free(t);

	assert_int_equal(key(st, &f, ']', &act), 1);
	assert_int_equal(act.kind, FL_VIEW_ACT_SELECT_OP);
	f.sel.op = act.arg;
	t = t_view_render(&f, &fl_view_graph, st, 120, 50);
	assert_true(fl_grid_find_look(f.grid,
				      fl_engine_graph(f.s)->ops[act.arg].name,
				      FL_LOOK_CURSOR));
	free(t);
	f.sel.op = op;
	t = t_view_render(&f, &fl_view_graph, st, 120, 50);
	assert_int_equal(key(st, &f, 'J', &act), 1);
	assert_int_equal(act.kind, FL_VIEW_ACT_SELECT_OP);
	assert_int_equal(act.arg, t_view_op(&f, "op7.norm"));
	free(t);
	fl_view_graph.destroy(st);
	t_view_close(&f);
}

/* Marked ops in FL_LOOK_MARK; the selected op in FL_LOOK_CURSOR only
 * while the view has the focus. */
static void view_graph_marks_and_cursor(void **state)
{
	t_view f;
	void *st = fl_view_graph.create();
	char *t;

	(void)state;
	t_view_open(&f, "apollo_fig1", -1);
	f.sel.n_marks = 2;
	f.sel.marks[0] = t_view_op(&f, "op1");
	f.sel.marks[1] = t_view_op(&f, "op6");
	f.sel.op = t_view_op(&f, "op3");
	t = t_view_render(&f, &fl_view_graph, st, 120, 50);
	assert_true(fl_grid_find_look(f.grid, "op1 E", FL_LOOK_MARK));
	assert_true(fl_grid_find_look(f.grid, "op6 E", FL_LOOK_MARK));
	assert_true(fl_grid_find_look(f.grid, "op3 O", FL_LOOK_CURSOR));
	free(t);
	f.ctx.focused = false;
	t = t_view_render(&f, &fl_view_graph, st, 120, 50);
	assert_false(fl_grid_find_look(f.grid, "op3 O", FL_LOOK_CURSOR));
	free(t);
	fl_view_graph.destroy(st);
	t_view_close(&f);
}

/* With no decision (step 0), the neighbourhood is the selected op's. */
static void view_graph_neighbourhood_of_selection(void **state)
{
	t_view f;
	void *st = fl_view_graph.create();
	fl_view_action act;
	char *t;

	(void)state;
	t_view_open(&f, "chain8", 0);
	assert_null(f.ctx.current);
	assert_int_equal(key(st, &f, 'v', &act), 1);
	assert_int_equal(key(st, &f, '-', &act), 1);	/* k = 1 */
	t = t_view_render(&f, &fl_view_graph, st, 100, 40);
	assert_non_null(strstr(t, "no op selected"));
	free(t);
	f.sel.op = t_view_op(&f, "e4_gain");
	t = t_view_render(&f, &fl_view_graph, st, 100, 40);
	assert_non_null(strstr(t, "neighbourhood k=1"));
	assert_non_null(strstr(t, "e3_tanh "));
	assert_non_null(strstr(t, "e4_gain "));
	assert_non_null(strstr(t, "e5_exp "));
	assert_null(strstr(t, "e2_shift "));
	assert_null(strstr(t, "e7_relu "));
	assert_int_equal(count_boxes(f.grid), 3);
	free(t);
	fl_view_graph.destroy(st);
	t_view_close(&f);
}

/* The detail pane of the selected op: its kind, its type with the
 * classifier's reason, its micro-graph and kernel, its output's
 * placement and where it came from. */
static void view_graph_detail(void **state)
{
	t_view f;
	void *st = fl_view_graph.create();
	const fl_partition *pt;
	fl_view_action act;
	char *t, want[300];
	int op;

	(void)state;
	t_view_open(&f, "apollo_fig1", -1);
	op = t_view_op(&f, "op7.sqsum");
	pt = fl_engine_partition(f.s);
	f.sel.op = op;
	t = t_view_render(&f, &fl_view_graph, st, 200, 40);
	snprintf(want, sizeof want, "type R (%s): %.60s",
		 fl_op_type_long_name(FL_TYPE_R), pt->type_reason[op]);
	assert_non_null(strstr(t, want));
	assert_true(strlen(pt->type_reason[op]) > 5);
	snprintf(want, sizeof want, "micro-graph G%d", pt->group_of[op]);
	assert_non_null(strstr(t, want));
	assert_non_null(strstr(t, "opened from rmsnorm"));
	assert_non_null(strstr(t, "output "));
	free(t);
	/* a short view has no pane until d asks for it */
	t = t_view_render(&f, &fl_view_graph, st, 200, 12);
	assert_null(strstr(t, "type R"));
	free(t);
	assert_int_equal(key(st, &f, 'd', &act), 1);
	t = t_view_render(&f, &fl_view_graph, st, 200, 12);
	assert_non_null(strstr(t, "type R"));
	free(t);
	fl_view_graph.destroy(st);
	t_view_close(&f);
}

/* y colours kernels by measured time (a made-up ladder step here): the
 * fastest kernel in FL_LOOK_OK, the slowest in FL_LOOK_BAD, the legend
 * giving the ranges. */
static void view_graph_heat(void **state)
{
	t_view f;
	void *st = fl_view_graph.create();
	const fl_program *p;
	fl_ladder_step step;
	fl_view_action act;
	char *t;

	(void)state;
	t_view_open(&f, "apollo_fig1", -1);
	p = fl_engine_program(f.s);
	assert_true(p && p->n_kernels >= 3);
	memset(&step, 0, sizeof step);
	step.n_kernels = p->n_kernels;
	step.kernels = calloc((size_t)p->n_kernels, sizeof *step.kernels);
	assert_non_null(step.kernels);
	for (int k = 0; k < p->n_kernels; k++)
		step.kernels[k].r.seconds = 1e-5 * (k + 1) * (k + 1);
	f.ctx.timed = &step;
	assert_int_equal(key(st, &f, 'y', &act), 1);
	t = t_view_render(&f, &fl_view_graph, st, 120, 50);
	assert_non_null(strstr(t, "time:"));
	assert_non_null(strstr(t, " ms"));
	assert_true(fl_grid_has_look(f.grid, FL_LOOK_OK));
	assert_true(fl_grid_has_look(f.grid, FL_LOOK_BAD));
	free(t);
	assert_int_equal(key(st, &f, 'y', &act), 1);
	t = t_view_render(&f, &fl_view_graph, st, 120, 50);
	assert_null(strstr(t, "time:"));
	free(t);
	free(step.kernels);
	fl_view_graph.destroy(st);
	t_view_close(&f);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* bert_encoder: the first render (the layout, and Graphviz's context
 * when no test before made it) well under half a second, a redraw from
 * the cached layout under 30 ms, also after a step that leaves the graph
 * alone.  Sanitizer builds run slower: the bounds are relaxed there. */
static void view_graph_bert_timing(void **state)
{
	t_view f;
	void *st = fl_view_graph.create();
	double slow = T_SANITIZED ? 8 : 1, t0, first, redraw;
	char *t;

	(void)state;
	t_view_open(&f, "bert_encoder", -1);
	t0 = now();
	t = t_view_render(&f, &fl_view_graph, st, 80, 24);
	first = now() - t0;
	free(t);
	t_view_goto(&f, f.ctx.step - 1);
	t0 = now();
	t = t_view_render(&f, &fl_view_graph, st, 80, 24);
	redraw = now() - t0;
	free(t);
	print_message("bert_encoder graph view: first render %.1f ms, "
		      "redraw %.2f ms\n", first * 1e3, redraw * 1e3);
	assert_true(first < 0.5 * slow);
	assert_true(redraw < 0.030 * slow);
	fl_view_graph.destroy(st);
	t_view_close(&f);
}

/* A graph of n ops in JSON: a chain of tanh with an add every fifth op
 * that also reads the tensor three back (malloc'd). */
static char *big_graph_json(int n)
{
	size_t cap = (size_t)n * 100 + 400, used = 0;
	char *j = malloc(cap);

	assert_non_null(j);
	used += (size_t)snprintf(j, cap, "{\"format\":\"fuselab-graph/1\","
				 "\"name\":\"big\",\"tensors\":{\"t0\":"
				 "{\"shape\":[4,4],\"role\":\"input\"},"
				 "\"t%d\":{\"shape\":[4,4],"
				 "\"role\":\"output\"}},\"ops\":[", n);
	for (int i = 1; i <= n; i++) {
		if (i % 5 == 4 && i > 3)
			used += (size_t)snprintf(j + used, cap - used,
				"%s{\"name\":\"op%d\",\"op\":\"add\","
				"\"in\":[\"t%d\",\"t%d\"],\"out\":\"t%d\"}",
				i > 1 ? "," : "", i, i - 1, i - 3, i);
		else
			used += (size_t)snprintf(j + used, cap - used,
				"%s{\"name\":\"op%d\",\"op\":\"tanh\","
				"\"in\":[\"t%d\"],\"out\":\"t%d\"}",
				i > 1 ? "," : "", i, i - 1, i);
	}
	snprintf(j + used, cap - used, "]}");
	return j;
}

/* Above 400 ops the view does not lay the whole graph out by itself:
 * before the partition it offers the neighbourhood, after it the
 * collapsed micro-graphs, and says so; a lays out everything. */
static void view_graph_big(void **state)
{
	char *json = big_graph_json(450);
	fl_graph *g = t_load(json);
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *s;
	t_view f;
	void *st = fl_view_graph.create();
	fl_view_action act;
	double t0;
	char *t;

	(void)state;
	free(json);
	fl_engine_opts_default(&o);
	s = fl_engine_open(g, &o, &err);
	assert_non_null(s);
	memset(&f, 0, sizeof f);
	f.s = s;
	f.sel.op = f.sel.kernel = f.sel.event = -1;
	f.grid = fl_grid_new(0, 0);
	t_view_refresh(&f);
	t = t_view_render(&f, &fl_view_graph, st, 100, 30);
	assert_non_null(strstr(t, "450 ops: neighbourhood view"));
	free(t);
	assert_true(fl_engine_run(s, &err) > 0);
	t_view_refresh(&f);
	t = t_view_render(&f, &fl_view_graph, st, 100, 30);
	assert_non_null(strstr(t, "450 ops: collapsed view; "
				  "a to lay out the whole graph"));
	assert_non_null(strstr(t, "E 450 ops"));
	free(t);
	assert_int_equal(key(st, &f, 'a', &act), 1);
	t0 = now();
	t = t_view_render(&f, &fl_view_graph, st, 100, 30);
	print_message("450 ops laid out whole in %.0f ms\n",
		      (now() - t0) * 1e3);
	assert_non_null(strstr(t, "whole"));
	assert_null(strstr(t, "450 ops: collapsed"));
	assert_non_null(strstr(t, "op1 E"));
	free(t);
	fl_view_graph.destroy(st);
	fl_engine_close(s);
	fl_graph_free(g);
	fl_grid_free(f.grid);
	free(f.hl);
}

/* z squeezes a drawing taller than the view into it, down to two rows a
 * rank (boxes become one-row labels): the last op of the chain comes
 * into view without panning; z again goes back to 1:1. */
static void view_graph_fit(void **state)
{
	t_view f;
	void *st = fl_view_graph.create();
	fl_view_action act;
	char *t;

	(void)state;
	t_view_open(&f, "chain8", -1);
	assert_int_equal(key(st, &f, 'd', &act), 1);	/* no pane */
	t = t_view_render(&f, &fl_view_graph, st, 60, 18);
	assert_null(strstr(t, "e8_cap"));
	assert_null(strstr(t, "detail"));
	free(t);
	assert_int_equal(key(st, &f, 'z', &act), 1);
	t = t_view_render(&f, &fl_view_graph, st, 60, 18);
	assert_non_null(strstr(t, "fit"));
	assert_non_null(strstr(t, "e1_scale"));
	assert_non_null(strstr(t, "e8_cap"));
	free(t);
	/* too short for two rows a rank: the drawing pans instead */
	t = t_view_render(&f, &fl_view_graph, st, 60, 10);
	assert_null(strstr(t, "e8_cap"));
	free(t);
	assert_int_equal(key(st, &f, 'z', &act), 1);
	t = t_view_render(&f, &fl_view_graph, st, 60, 18);
	assert_null(strstr(t, "e8_cap"));
	free(t);
	fl_view_graph.destroy(st);
	t_view_close(&f);
}

FL_SUITE(view_graph,
	 cmocka_unit_test(view_graph_boxes_and_edges),
	 cmocka_unit_test(view_graph_small_sizes),
	 cmocka_unit_test(view_graph_pan),
	 cmocka_unit_test(view_graph_colours),
	 cmocka_unit_test(view_graph_merge_highlight),
	 cmocka_unit_test(view_graph_collapsed),
	 cmocka_unit_test(view_graph_neighbourhood),
	 cmocka_unit_test(view_graph_select),
	 cmocka_unit_test(view_graph_marks_and_cursor),
	 cmocka_unit_test(view_graph_neighbourhood_of_selection),
	 cmocka_unit_test(view_graph_detail),
	 cmocka_unit_test(view_graph_heat),
	 cmocka_unit_test(view_graph_bert_timing),
	 cmocka_unit_test(view_graph_big),
	 cmocka_unit_test(view_graph_fit));
