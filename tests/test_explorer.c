/* The explorer driven headless: keys in, the screen's cell grid out
 * (app/explorer.h), with no terminal.  The same calls app/tui.c makes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "explorer.h"
#include "keymap.h"
#include "keys.h"
#include "view.h"
#include "test_util.h"

typedef struct tx {
	fl_graph *g;
	fl_explorer *x;
	fl_grid *grid;
	char *text;
	char tmp[64];
} tx;

static void tx_open_with(tx *t, const char *sample, int w, int h,
			 fl_tour *tour, fl_overrides *overrides);

static void tx_open(tx *t, const char *sample, int w, int h)
{
	tx_open_with(t, sample, w, h, NULL, NULL);
}

static void tx_open_with(tx *t, const char *sample, int w, int h,
			 fl_tour *tour, fl_overrides *overrides)
{
	fl_engine_opts o;
	fl_error err = {""};

	memset(t, 0, sizeof *t);
	snprintf(t->tmp, sizeof t->tmp, "/tmp/fuselab-xtest-XXXXXX");
	assert_non_null(mkdtemp(t->tmp));
	t->g = t_load_sample(sample);
	fl_engine_opts_default(&o);
	o.run.workdir = t->tmp;
	o.run.repeat = 1;
	o.run.warmup = 0;
	t->x = fl_explorer_open(t->g, &o, sample, tour, overrides, &err);
	if (!t->x)
		fail_msg("%s", err.msg);
	t->grid = fl_grid_new(w, h);
	assert_non_null(t->grid);
}

/* Renders and returns the screen text (kept in t->text). */
static const char *tx_screen(tx *t)
{
	free(t->text);
	fl_explorer_poll(t->x);
	fl_explorer_render(t->x, t->grid);
	t->text = fl_grid_dump(t->grid);
	assert_non_null(t->text);
	return t->text;
}

static void tx_keys(tx *t, const char *keys)
{
	for (const char *k = keys; *k; k++)
		assert_true(fl_explorer_key(t->x, *k == '\n' ? FL_KEY_ENTER : *k));
}

static void tx_key(tx *t, int key)
{
	assert_true(fl_explorer_key(t->x, key));
}

static void tx_close(tx *t)
{
	char cmd[128], *out = NULL;

	fl_explorer_close(t->x);
	fl_graph_free(t->g);
	fl_grid_free(t->grid);
	free(t->text);
	/* nothing of a kernel run may be left behind */
	assert_int_equal(t_count_entries(t->tmp), 0);
	snprintf(cmd, sizeof cmd, "rm -rf %s", t->tmp);
	t_run(cmd, &out);
	free(out);
}

static void explorer_steps_forward_and_back(void **state)
{
	tx t;
	char line[64];

	(void)state;
	tx_open(&t, "softmax", 100, 30);
	t_assert_contains(tx_screen(&t), "step 0/");
	tx_keys(&t, "nnnn");
	t_assert_contains(tx_screen(&t), "step 4/");
	t_assert_contains(t.text, "softmax.sub (sub) is broadcast");
	tx_keys(&t, "N");
	t_assert_contains(tx_screen(&t), "step 3/");
	t_assert_contains(t.text, "softmax.max (reduce_max) is reduction");
	assert_null(strstr(t.text, "softmax.sub (sub) is broadcast"));
	assert_int_equal(fl_event_log_count(fl_engine_events(
				 fl_explorer_session(t.x))), 3);
	tx_keys(&t, "p");	/* the end of classify */
	t_assert_contains(tx_screen(&t), "step 7/");
	tx_keys(&t, "P");
	t_assert_contains(tx_screen(&t), "step 2/");
	tx_keys(&t, "g11\n");
	snprintf(line, sizeof line, "step 11/");
	t_assert_contains(tx_screen(&t), line);
	t_assert_contains(t.text, "R4: B->R merge softmax.exp into softmax.sum");
	tx_keys(&t, "r");
	assert_true(fl_engine_done(fl_explorer_session(t.x)));
	tx_close(&t);
}

/* Stepping through merges moves the highlight in the graph view: the ops
 * of the current decision carry the highlight look, and only they. */
static void explorer_highlight_follows_decisions(void **state)
{
	tx t;

	(void)state;
	tx_open(&t, "softmax", 100, 30);
	tx_keys(&t, "g9\n");	/* #8: R3 merges softmax.sub into softmax.exp */
	tx_screen(&t);
	assert_true(fl_grid_find_look(t.grid, "softmax.sub", FL_LOOK_HIGHLIGHT));
	assert_true(fl_grid_find_look(t.grid, "softmax.exp", FL_LOOK_HIGHLIGHT));
	assert_false(fl_grid_find_look(t.grid, "softmax.sum", FL_LOOK_HIGHLIGHT));
	tx_keys(&t, "nn");	/* #10: R4 merges softmax.exp into softmax.sum */
	t_assert_contains(tx_screen(&t), "R4: B->R merge softmax.exp into");
	assert_true(fl_grid_find_look(t.grid, "softmax.sum", FL_LOOK_HIGHLIGHT));
	assert_false(fl_grid_find_look(t.grid, "softmax.sub", FL_LOOK_HIGHLIGHT));
	tx_keys(&t, "NN");	/* back: exactly the earlier highlight */
	tx_screen(&t);
	assert_true(fl_grid_find_look(t.grid, "softmax.sub", FL_LOOK_HIGHLIGHT));
	assert_false(fl_grid_find_look(t.grid, "softmax.sum", FL_LOOK_HIGHLIGHT));
	tx_close(&t);
}

static void explorer_total_arrives(void **state)
{
	tx t;
	char want[64];
	int total;

	(void)state;
	tx_open(&t, "softmax", 100, 30);
	assert_int_equal(fl_explorer_wait(t.x, 60), 0);
	tx_keys(&t, "r");
	total = fl_engine_position(fl_explorer_session(t.x));
	tx_keys(&t, "g0\n");
	snprintf(want, sizeof want, "step 0/%d", total);
	t_assert_contains(tx_screen(&t), want);
	tx_close(&t);
}

static void explorer_bad_goto_and_small_screen(void **state)
{
	tx t;

	(void)state;
	tx_open(&t, "softmax", 100, 30);
	tx_keys(&t, "gx1\n");
	t_assert_contains(tx_screen(&t), "not a step number: \"x1\"");
	tx_keys(&t, "g");
	t_assert_contains(tx_screen(&t), "go to step: _");
	tx_key(&t, FL_KEY_ESC);
	assert_null(strstr(tx_screen(&t), "go to step"));
	assert_int_equal(fl_grid_resize(t.grid, 30, 8), 0);
	t_assert_contains(tx_screen(&t), "terminal too small");
	assert_int_equal(fl_grid_resize(t.grid, 1, 1), 0);
	tx_screen(&t);
	tx_close(&t);
}

static void explorer_find_mark_and_why(void **state)
{
	tx t;

	(void)state;
	tx_open(&t, "softmax", 120, 30);
	tx_keys(&t, "r/nosuchop\n");
	t_assert_contains(tx_screen(&t), "no op named like \"nosuchop\"");
	tx_keys(&t, "/softmax.max\nm/softmax.div\nm");
	t_assert_contains(tx_screen(&t), "marked: softmax.max, softmax.div");
	tx_keys(&t, "w");
	t_assert_contains(tx_screen(&t), "why softmax.max and softmax.div");
	t_assert_contains(t.text, "apart");
	tx_keys(&t, " ");	/* any key closes the explanation */
	assert_null(strstr(tx_screen(&t), "why softmax.max and"));
	tx_close(&t);
}

static void explorer_forbid_and_remove(void **state)
{
	tx t;

	(void)state;
	tx_open(&t, "softmax", 120, 30);
	tx_keys(&t, "r/softmax.exp\nm/softmax.sum\nm");
	tx_keys(&t, "w");
	t_assert_contains(tx_screen(&t), "together");
	tx_keys(&t, " f");
	t_assert_contains(tx_screen(&t), "forbid softmax.exp softmax.sum: "
			  "re-ran from step");
	t_assert_contains(t.text, "kernels 3 -> 4");
	tx_keys(&t, "w");
	t_assert_contains(tx_screen(&t), "apart");
	tx_keys(&t, " o");
	t_assert_contains(tx_screen(&t), "forbid  softmax.exp  softmax.sum");
	/* the run before beside this one: kernels new and gone */
	t_assert_contains(t.text, "now 4 (at step 32)");
	t_assert_contains(t.text, "+ softmax.sub softmax.exp ");
	t_assert_contains(t.text, "+ softmax.sum ");
	t_assert_contains(t.text, "- softmax.sub softmax.exp softmax.sum");
	tx_keys(&t, "d");	/* the list stays open */
	t_assert_contains(tx_screen(&t), "kernels 4 -> 3");
	t_assert_contains(t.text, "none: mark two ops");
	tx_keys(&t, " ");
	assert_null(strstr(tx_screen(&t), "none: mark two ops"));
	tx_close(&t);
}

static void explorer_switches_views_and_panes(void **state)
{
	tx t;
	const char *names[] = {"graph", "decisions", "schedule", "domain",
			       "memory", "parallel", "timings", "code"};

	(void)state;
	tx_open(&t, "softmax", 100, 30);
	for (int v = 0; v < 8; v++) {
		tx_key(&t, '1' + v);
		assert_string_equal(fl_explorer_view_name(t.x), names[v]);
	}
	tx_key(&t, FL_KEY_TAB);
	assert_string_equal(fl_explorer_view_name(t.x), "graph");
	tx_key(&t, FL_KEY_BTAB);
	assert_string_equal(fl_explorer_view_name(t.x), "code");
	/* two panes side by side from 160 columns; x moves the focus */
	assert_int_equal(fl_grid_resize(t.grid, 200, 50), 0);
	tx_key(&t, '1');
	tx_screen(&t);
	tx_key(&t, 'x');
	assert_string_equal(fl_explorer_view_name(t.x), "decisions");
	tx_keys(&t, "?");
	t_assert_contains(tx_screen(&t), "in the decisions view");
	t_assert_contains(t.text, "why (not) fused");
	tx_keys(&t, "q");	/* closes help, does not quit */
	assert_null(strstr(tx_screen(&t), "fuselab keys"));
	assert_false(fl_explorer_key(t.x, 'q'));
	tx_close(&t);
}

/* Every view shows its content on micro2020_fig1 at the end of the
 * compiler: the extension node and the overlapping tiles of MICRO 2020
 * Fig. 1, tile-local placement, the generated C. */
static void explorer_views_show_micro2020(void **state)
{
	static const struct {
		char key;
		const char *want[2];
	} views[] = {
		{'2', {"26 of 26 decisions", "codegen generated"}},
		{'3', {"extension {", "band permutable, coincident"}},
		{'4', {"computed by 2+ tiles", "\u25c6"}},
		{'5', {"tile-local", "capacity"}},
		{'6', {"Layer 3 has NOT run", "gain"}},
		{'7', {"press R to compile and run", "no kernels run yet"}},
		{'8', {"#pragma omp parallel for", "void fl_k0("}},
	};
	tx t;

	(void)state;
	tx_open(&t, "micro2020_fig1", 120, 40);
	tx_keys(&t, "r");
	for (size_t i = 0; i < sizeof views / sizeof views[0]; i++) {
		tx_key(&t, views[i].key);
		for (int k = 0; k < 2; k++)
			t_assert_contains(tx_screen(&t), views[i].want[k]);
	}
	tx_close(&t);
}

static void explorer_strategy_and_export(void **state)
{
	tx t;
	char path[128], cmd[400], *out = NULL;

	(void)state;
	tx_open(&t, "softmax", 120, 30);
	/* s steps through the strategies after apollo-l1 and wraps round to
	 * unfused, then xla and apollo-l1 again */
	tx_keys(&t, "s");
	for (int i = 0; i < FL_STRATEGY_COUNT &&
	     !strstr(tx_screen(&t), "| unfused |"); i++)
		tx_keys(&t, "s");
	t_assert_contains(tx_screen(&t), "| unfused |");
	tx_keys(&t, "ss");
	t_assert_contains(tx_screen(&t), "| apollo-l1 |");
	snprintf(path, sizeof path, "%s/report.json", t.tmp);
	tx_keys(&t, "r");
	tx_keys(&t, "e");
	/* replace the suggested name */
	for (int i = 0; i < 64; i++)
		tx_key(&t, FL_KEY_BACKSPACE);
	tx_keys(&t, path);
	tx_keys(&t, "\n");
	t_assert_contains(tx_screen(&t), "wrote ");
	snprintf(cmd, sizeof cmd, "python3 -c 'import json,sys; "
		 "d=json.load(open(sys.argv[1])); "
		 "assert d[\"format\"]==\"fuselab-report/1\"' %s", path);
	assert_int_equal(t_run(cmd, &out), 0);
	free(out);
	remove(path);
	tx_keys(&t, "e");
	for (int i = 0; i < 64; i++)
		tx_key(&t, FL_KEY_BACKSPACE);
	tx_keys(&t, "/nonexistent/dir/r.json\n");
	t_assert_contains(tx_screen(&t), "/nonexistent/dir/r.json: No such file or directory");
	tx_close(&t);
}

/* e writes the picture of the view in focus and says where. */
static void explorer_exports_view_pictures(void **state)
{
	static const struct {
		char view;
		const char *file, *suggested, *said;
	} cases[] = {
		{'1', "g.svg", "micro2020_fig1-step26.svg", "the graph at step 26"},
		{'3', "t.dot", "micro2020_fig1-fl_k0-tree.svg",
		 "the schedule tree of fl_k0"},
		{'4', "d.png", "micro2020_fig1-fl_k0-domain.svg",
		 "the iteration domain of the first statement of fl_k0"},
	};
	char path[128], cmd[256];
	tx t;

	(void)state;
	tx_open(&t, "micro2020_fig1", 120, 40);
	tx_keys(&t, "r");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tx_key(&t, cases[i].view);
		tx_keys(&t, "e");
		t_assert_contains(tx_screen(&t), cases[i].suggested);
		for (int k = 0; k < 80; k++)
			tx_key(&t, FL_KEY_BACKSPACE);
		snprintf(path, sizeof path, "%s/%s", t.tmp, cases[i].file);
		tx_keys(&t, path);
		tx_keys(&t, "\n");
		t_assert_contains(tx_screen(&t), "wrote ");
		t_assert_contains(t.text, cases[i].said);
		snprintf(cmd, sizeof cmd, "test -s %s", path);
		assert_int_equal(t_run(cmd, NULL), 0);
		remove(path);
	}
	tx_keys(&t, "e");
	for (int k = 0; k < 80; k++)
		tx_key(&t, FL_KEY_BACKSPACE);
	tx_keys(&t, "x.txt\n");
	t_assert_contains(tx_screen(&t), "name a .svg, .png or .dot file");
	tx_close(&t);
}

static void explorer_runs_kernels_in_background(void **state)
{
	tx t;
	char want[96];

	(void)state;
	/* a small graph under the sanitizers, whose interpreter is slow */
	tx_open(&t, T_SANITIZED ? "apollo_fig3" : "layernorm", 120, 30);
	tx_keys(&t, "R");
	t_assert_contains(tx_screen(&t), "running kernels");
	/* the UI keeps stepping while kernels run */
	tx_keys(&t, "nn");
	t_assert_contains(tx_screen(&t), "step 2/");
	assert_int_equal(fl_explorer_wait(t.x, 300), 0);
	snprintf(want, sizeof want, "kernels ran: %d of %d strategies "
		 "verified", FL_STRATEGY_COUNT, FL_STRATEGY_COUNT);
	t_assert_contains(tx_screen(&t), want);
	tx_close(&t);
}

static void explorer_cancels_a_run(void **state)
{
	tx t;

	(void)state;
	tx_open(&t, "layernorm", 120, 30);
	tx_keys(&t, "R");
	tx_key(&t, FL_KEY_ESC);
	assert_int_equal(fl_explorer_wait(t.x, 120), 0);
	t_assert_contains(tx_screen(&t), "kernel run cancelled");
	assert_false(fl_explorer_busy(t.x));
	tx_close(&t);	/* checks the work directory is gone */
}

static void explorer_follows_a_tour(void **state)
{
	char path[512];
	fl_error err = {""};
	fl_tour *tour;
	tx t;

	(void)state;
	snprintf(path, sizeof path, "%s/apollo_fig1.json", t_samples_dir());
	tour = fl_tour_load_file(path, &err);
	if (!tour)
		fail_msg("%s", err.msg);
	tx_open_with(&t, "apollo_fig1", 100, 30, tour, NULL);
	/* the stop at step 0 introduces the tour */
	t_assert_contains(tx_screen(&t), "tour 1/8");
	t_assert_contains(t.text, "APOLLO Fig. 1: two disjoint sub-graphs");
	tx_keys(&t, "t");
	t_assert_contains(tx_screen(&t), "tour 2/8");
	t_assert_contains(t.text, "Sec. 3.1: the sub-graphs the engine can");
	tx_keys(&t, "tt");
	t_assert_contains(tx_screen(&t), "tour 4/8");
	t_assert_contains(t.text, "Algorithm 1 never closes a cycle");
	t_assert_contains(t.text, "| aggregate |");
	tx_keys(&t, "n");	/* off the stop: the box goes */
	assert_null(strstr(tx_screen(&t), "tour 4/8"));
	tx_keys(&t, "tttt");
	t_assert_contains(tx_screen(&t), "tour 8/8");
	t_assert_contains(t.text, "extension node");
	tx_keys(&t, "t");
	t_assert_contains(tx_screen(&t), "no tour stop after step");
	tx_close(&t);
}

static void explorer_saves_and_loads_overrides(void **state)
{
	fl_overrides *start = fl_overrides_new();
	fl_error err = {""};
	char path[128], *out = NULL;
	tx t;

	(void)state;
	assert_non_null(start);
	assert_int_equal(fl_overrides_add(start, false, "softmax.exp",
					  "softmax.sum", &err), 0);
	tx_open_with(&t, "softmax", 120, 30, NULL, start);
	tx_keys(&t, "r");
	t_assert_contains(tx_screen(&t), "| done |");
	tx_keys(&t, "o");
	t_assert_contains(tx_screen(&t), "forbid  softmax.exp  softmax.sum");
	snprintf(path, sizeof path, "%s/o.json", t.tmp);
	tx_keys(&t, "S");
	for (int i = 0; i < 64; i++)
		tx_key(&t, FL_KEY_BACKSPACE);
	tx_keys(&t, path);
	tx_keys(&t, "\n");
	t_assert_contains(tx_screen(&t), "saved 1 override to");
	tx_keys(&t, "d");
	t_assert_contains(tx_screen(&t), "kernels 4 -> 3");
	tx_keys(&t, "L");
	tx_keys(&t, path);
	tx_keys(&t, "\n");
	t_assert_contains(tx_screen(&t), "loaded 1 override from");
	t_assert_contains(t.text, "kernels 3 -> 4");
	tx_keys(&t, "L/nonexistent.json\n");
	t_assert_contains(tx_screen(&t), "/nonexistent.json");
	tx_keys(&t, " ");
	remove(path);
	free(out);
	tx_close(&t);
}

/* The man page's ".B label" line for a key label (troff: '-' as '\-'). */
static void assert_man_has_key(const char *man, const char *label)
{
	char want[200];
	size_t n = 0;

	n += (size_t)snprintf(want, sizeof want, "\n.B ");
	for (const char *c = label; *c && n + 3 < sizeof want; c++) {
		if (*c == '-')
			want[n++] = '\\';
		want[n++] = *c;
	}
	want[n++] = '\n';
	want[n] = '\0';
	t_assert_contains(man, want);
}

/* Every key of the one key table and of every view is in the man page,
 * so the two cannot drift apart. */
static void explorer_man_page_lists_every_key(void **state)
{
	const fl_view_class *views[] = {
		&fl_view_graph, &fl_view_decisions, &fl_view_schedule,
		&fl_view_domain, &fl_view_memory, &fl_view_parallel,
		&fl_view_timings, &fl_view_code};
	char path[512], *man = NULL, cmd[600];

	(void)state;
	snprintf(path, sizeof path, "%s/man/fuselab.1", t_repo_root());
	snprintf(cmd, sizeof cmd, "cat %s", path);
	assert_int_equal(t_run(cmd, &man), 0);
	for (const fl_xkey *k = fl_xkeys; k->key; k++)
		if (k->label)
			assert_man_has_key(man, k->label);
	for (size_t v = 0; v < sizeof views / sizeof views[0]; v++)
		for (const fl_view_key *k = views[v]->keys; k && k->keys; k++)
			assert_man_has_key(man, k->keys);
	free(man);
}

FL_SUITE(explorer,
	 cmocka_unit_test(explorer_man_page_lists_every_key),
	 cmocka_unit_test(explorer_follows_a_tour),
	 cmocka_unit_test(explorer_saves_and_loads_overrides),
	 cmocka_unit_test(explorer_steps_forward_and_back),
	 cmocka_unit_test(explorer_highlight_follows_decisions),
	 cmocka_unit_test(explorer_total_arrives),
	 cmocka_unit_test(explorer_bad_goto_and_small_screen),
	 cmocka_unit_test(explorer_find_mark_and_why),
	 cmocka_unit_test(explorer_forbid_and_remove),
	 cmocka_unit_test(explorer_switches_views_and_panes),
	 cmocka_unit_test(explorer_views_show_micro2020),
	 cmocka_unit_test(explorer_strategy_and_export),
	 cmocka_unit_test(explorer_exports_view_pictures),
	 cmocka_unit_test(explorer_runs_kernels_in_background),
	 cmocka_unit_test(explorer_cancels_a_run));
