/* Tours (engine/ir/tour.h) and user overrides (app/overrides.h).
 *
 * Tours: the format's errors name their JSON path, the loader refuses a
 * graph whose tour is bad, stops stand where tour.h says (a step, or the
 * first event a pattern fits), and every stop of every paper sample's
 * tour stands somewhere in that sample's run, so the tours cannot rot
 * when the engine changes.  Overrides: a saved list loads back equal,
 * each bad file gives its path error, saving never leaves a partial
 * file, and --overrides changes what the command line computes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine.h"
#include "loader.h"
#include "overrides.h"
#include "test_util.h"
#include "tour.h"

/* JSON written with ' in place of " (readable in C strings). */
static char *dq(const char *single_quoted)
{
	char *s = strdup(single_quoted);

	assert_non_null(s);
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	return s;
}

static fl_tour *tour_q(const char *single_quoted, fl_error *err)
{
	char *text = dq(single_quoted);
	fl_tour *t = fl_tour_load_string(text, strlen(text), "x.json", err);

	free(text);
	return t;
}

/* ---- tour format ------------------------------------------------------- */

static void tour_parse(void **state)
{
	fl_error err = {""};
	fl_tour *t;

	(void)state;
	t = tour_q("{'tour': [{'step': 0, 'text': 'start'},"
		   " {'pass': 'partition', 'kind': 'merged', 'ops': ['a', 'b'],"
		   "  'text': 'R4 merges'}, {'kind': 'tiled', 'text': 'tiles'}]}",
		   &err);
	assert_non_null(t);
	assert_int_equal(fl_tour_count(t), 3);
	assert_string_equal(fl_tour_text(t, 0), "start");
	assert_string_equal(fl_tour_text(t, 1), "R4 merges");
	assert_null(fl_tour_text(t, 3));
	assert_null(fl_tour_text(t, -1));
	fl_tour_free(t);

	/* a file without a tour has an empty one */
	t = tour_q("{'format': 'fuselab-graph/1'}", &err);
	assert_non_null(t);
	assert_int_equal(fl_tour_count(t), 0);
	assert_int_equal(fl_tour_next(t, NULL, -1), -1);
	fl_tour_free(t);
}

static void tour_errors(void **state)
{
	static const struct {
		const char *json, *expect;
	} cases[] = {
		{"{'tour': [{'pass': 'aggregate', 'kind': 'merge', 'text': 'x'}]}",
		 "x.json: tour[0].kind: unknown event kind \"merge\""},
		{"{'tour': [{'step': 1, 'text': 'a'}, {'pass': 'agg', "
		 "'text': 'x'}]}",
		 "x.json: tour[1].pass: unknown pass \"agg\""},
		{"{'tour': [{'step': 2}]}", "x.json: tour[0].text: missing"},
		{"{'tour': [{'kind': 3, 'text': 'x'}]}",
		 "x.json: tour[0].kind: expected a name"},
		{"{'tour': [{'step': 2, 'text': ' \\n'}]}",
		 "x.json: tour[0].text: expected a non-empty string"},
		{"{'tour': [{'step': 2, 'text': 7}]}",
		 "x.json: tour[0].text: expected a non-empty string"},
		{"{'tour': [{'step': -1, 'text': 'x'}]}",
		 "x.json: tour[0].step: expected an integer from 0"},
		{"{'tour': [{'step': 1.5, 'text': 'x'}]}",
		 "x.json: tour[0].step: expected an integer from 0"},
		{"{'tour': [{'step': 1, 'kind': 'merged', 'text': 'x'}]}",
		 "x.json: tour[0].step: a stop has a step or a pattern"},
		{"{'tour': [{'ops': [], 'text': 'x'}]}",
		 "x.json: tour[0].ops: expected a non-empty list of op names"},
		{"{'tour': [{'ops': ['a', ''], 'text': 'x'}]}",
		 "x.json: tour[0].ops[1]: expected an op name"},
		{"{'tour': [{'step': 1, 'when': 3, 'text': 'x'}]}",
		 "x.json: tour[0].when: unknown field"},
		{"{'tour': [{'step': 1, 'step': 2, 'text': 'x'}]}",
		 "x.json: tour[0].step: field given twice"},
		{"{'tour': [{'text': 'x'}]}",
		 "x.json: tour[0]: expected \"step\", or a pattern"},
		{"{'tour': [3]}", "x.json: tour[0]: expected an object"},
		{"{'tour': {'step': 1}}", "x.json: tour: expected a list of stops"},
		{"[1]", "x.json: expected a JSON object at the top"},
		{"{'tour': [", "x.json: line 1, column"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		fl_error err = {""};
		fl_tour *t = tour_q(cases[i].json, &err);

		if (t)
			fail_msg("case %zu loaded, expected \"%s\"", i,
				 cases[i].expect);
		t_assert_contains(err.msg, cases[i].expect);
	}
}

static void tour_text_limit(void **state)
{
	char json[1200];
	fl_error err = {""};
	fl_tour *t;

	(void)state;
	snprintf(json, sizeof json, "{\"tour\": [{\"step\": 0, \"text\": "
		 "\"%0*d\"}]}", FL_TOUR_TEXT_MAX + 1, 0);
	t = fl_tour_load_string(json, strlen(json), "x.json", &err);
	assert_null(t);
	t_assert_contains(err.msg, "x.json: tour[0].text: 401 bytes, more "
			  "than the 400");
}

#define GRAPH_HEAD "{'format': 'fuselab-graph/1', 'name': 'g', " \
	"'tensors': {'x': {'shape': [4], 'role': 'input'}, " \
	"'y': {'shape': [4], 'role': 'output'}}, " \
	"'ops': [{'name': 'e', 'op': 'exp', 'in': ['x'], 'out': 'y'}]"

/* The graph loader takes a good tour and refuses a bad one, by path. */
static void tour_in_graph_files(void **state)
{
	char *good = dq(GRAPH_HEAD ", 'tour': [{'step': 0, 'text': 'hi'}]}");
	char *bad = dq(GRAPH_HEAD ", 'tour': [{'step': 0, 'text': 'hi'}, "
		       "{'kind': 'merge', 'text': 'x'}]}");
	fl_graph *g;

	(void)state;
	g = t_load(good);
	assert_int_equal(g->n_ops, 1);
	fl_graph_free(g);
	t_load_fails(bad, "test: tour[1].kind: unknown event kind \"merge\"");
	free(good);
	free(bad);
}

static void tour_load_file_errors(void **state)
{
	fl_error err = {""};

	(void)state;
	assert_null(fl_tour_load_file("/nonexistent/x.json", &err));
	t_assert_contains(err.msg, "/nonexistent/x.json: cannot open");
}

/* ---- matching ---------------------------------------------------------- */

static void add_event(fl_event_log *log, fl_pass pass, fl_event_kind kind,
		      const char *a, const char *b)
{
	const char *ops[2] = {a, b};

	assert_non_null(fl_event_log_add(log, pass, kind, "", ops, b ? 2 : 1,
					 -1, -1, "test event"));
}

/* Stops stand at their step, or just after the first event their
 * pattern fits; fl_tour_next walks them in step order whatever the
 * file's order. */
static void tour_match(void **state)
{
	fl_event_log *log = fl_event_log_new();
	fl_event_log *prefix;
	fl_error err = {""};
	fl_tour *t;

	(void)state;
	add_event(log, FL_PASS_CLASSIFY, FL_EV_CLASSIFIED, "a", NULL);
	add_event(log, FL_PASS_AGGREGATE, FL_EV_MERGED, "c", "d");
	add_event(log, FL_PASS_AGGREGATE, FL_EV_MERGED, "b", "a");
	add_event(log, FL_PASS_AGGREGATE, FL_EV_MERGED, "a", "b");
	add_event(log, FL_PASS_LAYER1, FL_EV_TILED, "b", NULL);
	t = tour_q("{'tour': [{'kind': 'tiled', 'text': 'tiles'},"
		   " {'step': 0, 'text': 'start'},"
		   " {'pass': 'aggregate', 'kind': 'merged', 'ops': ['a', 'b'],"
		   "  'text': 'a and b'},"
		   " {'step': 3, 'text': 'same step'},"
		   " {'ops': ['nowhere'], 'text': 'never'},"
		   " {'step': 9, 'text': 'past the end'}]}", &err);
	assert_non_null(t);
	assert_int_equal(fl_tour_stop_step(t, 0, log), 5);
	assert_int_equal(fl_tour_stop_step(t, 1, log), 0);
	/* the first fitting event only: #2, in either op order */
	assert_int_equal(fl_tour_stop_step(t, 2, log), 3);
	assert_int_equal(fl_tour_stop_step(t, 4, log), -1);
	assert_int_equal(fl_tour_stop_step(t, 5, log), -1);
	assert_int_equal(fl_tour_fixed_step(t, 5), 9);
	assert_int_equal(fl_tour_fixed_step(t, 2), -1);
	assert_int_equal(fl_tour_match(t, log, 0), 1);
	assert_int_equal(fl_tour_match(t, log, 1), -1);
	assert_int_equal(fl_tour_match(t, log, 3), 2);	/* file order */
	assert_int_equal(fl_tour_match(t, log, 4), -1);	/* a, b again */
	assert_int_equal(fl_tour_match(t, log, 5), 0);
	assert_int_equal(fl_tour_next(t, log, -1), 0);
	assert_int_equal(fl_tour_next(t, log, 0), 3);
	assert_int_equal(fl_tour_next(t, log, 3), 5);
	assert_int_equal(fl_tour_next(t, log, 5), -1);
	/* the session's log at step 3 answers as the whole run's */
	prefix = fl_event_log_copy(log, 3);
	assert_non_null(prefix);
	assert_int_equal(fl_tour_match(t, prefix, 3), 2);
	assert_int_equal(fl_tour_stop_step(t, 0, prefix), -1);
	fl_event_log_free(prefix);
	fl_tour_free(t);
	fl_event_log_free(log);
}

/* ---- the paper samples' tours ------------------------------------------ */

/* UTF-8 characters of s. */
static size_t text_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

/* The complete run an explorer shows (through layer 1; later passes add
 * events after these, so the steps stay), with the rules file the
 * sample's tour is written for. */
static fl_session *sample_session(const fl_graph *g, const char *rules)
{
	fl_engine_opts eo;
	fl_error err = {""};
	fl_session *s;
	char path[1024];

	fl_engine_opts_default(&eo);
	eo.stop_after = FL_PASS_LAYER1;
	if (rules) {
		snprintf(path, sizeof path, "%s/%s", t_samples_dir(), rules);
		if (fl_rules_load(&eo.rules, path, &err) < 0)
			fail_msg("%s", err.msg);
	}
	s = fl_engine_open(g, &eo, &err);
	if (!s || fl_engine_run(s, &err) < 0)
		fail_msg("%s: %s", g->name, err.msg);
	return s;
}

/* The samples' stops at a fixed step (past 0) point at one decision whose
 * reason the text retells; if the engine's decisions move, so must the
 * step, and this table with it. */
static const struct {
	const char *name;
	int step;
	const char *reason;
} step_stops[] = {
	{"apollo_listing1", 10, "a_biased tile-local"},
	{"micro2020_fig1", 22, "A_q tile-local"},
	{"unsharp_mask", 29, "blurx tile-local"},
};

static void check_step_stop(const char *name, int step,
			    const fl_event_log *log)
{
	const fl_event *e = fl_event_log_get(log, step - 1);

	for (size_t i = 0; i < sizeof step_stops / sizeof step_stops[0]; i++) {
		if (strcmp(step_stops[i].name, name) || step_stops[i].step != step)
			continue;
		if (!e || !strstr(e->reason, step_stops[i].reason))
			fail_msg("%s: step %d is \"%s\", the tour expects \"%s\"",
				 name, step, e ? e->reason : "(none)",
				 step_stops[i].reason);
		return;
	}
	fail_msg("%s: the stop at step %d is not in step_stops[]", name, step);
}

/* Every stop of a paper sample's tour stands at its own step of the run,
 * and `t` from the start visits them all. */
static void check_sample_tour(const char *name, const char *rules)
{
	char path[1024];
	fl_error err = {""};
	fl_graph *g = t_load_sample(name);
	fl_session *s = sample_session(g, rules);
	const fl_event_log *log = fl_engine_events(s);
	fl_tour *t;
	int n, visited = 0;

	snprintf(path, sizeof path, "%s/%s.json", t_samples_dir(), name);
	t = fl_tour_load_file(path, &err);
	if (!t)
		fail_msg("%s", err.msg);
	n = fl_tour_count(t);
	if (n < 4 || n > 8)
		fail_msg("%s: %d stops, expected 4 to 8", name, n);
	for (int i = 0; i < n; i++) {
		int k = fl_tour_stop_step(t, i, log);

		if (k < 0)
			fail_msg("%s: tour[%d] stands at no step of the run "
				 "(\"%s\")", name, i, fl_tour_text(t, i));
		if (fl_tour_match(t, log, k) != i)
			fail_msg("%s: tour[%d] shares step %d with tour[%d]",
				 name, i, k, fl_tour_match(t, log, k));
		if (fl_tour_fixed_step(t, i) > 0)
			check_step_stop(name, k, log);
		if (text_chars(fl_tour_text(t, i)) > 200)
			fail_msg("%s: tour[%d]: text longer than 200 characters",
				 name, i);
	}
	for (int k = fl_tour_next(t, log, -1); k >= 0;
	     k = fl_tour_next(t, log, k))
		visited++;
	assert_int_equal(visited, n);
	fl_tour_free(t);
	fl_engine_close(s);
	fl_graph_free(g);
}

static void tour_paper_samples(void **state)
{
	static const struct {
		const char *name, *rules;
	} samples[] = {
		{"apollo_fig1", NULL},
		{"apollo_fig3", NULL},
		{"apollo_listing1", NULL},
		{"apollo_listing3", NULL},
		{"micro2020_fig1", NULL},
		{"unsharp_mask", "rules/stencil-chains.json"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++)
		check_sample_tour(samples[i].name, samples[i].rules);
}

/* ---- overrides: the list ----------------------------------------------- */

static void overrides_list(void **state)
{
	fl_overrides *l = fl_overrides_new();
	fl_error err = {""};
	char a[16];

	(void)state;
	assert_int_equal(fl_overrides_add(l, false, "a", "b", &err),
			 0);
	assert_int_equal(fl_overrides_add(l, true, "c", "d", &err),
			 1);
	/* the same again, in either order, is the one already there */
	assert_int_equal(fl_overrides_add(l, false, "b", "a", &err),
			 0);
	assert_int_equal(fl_overrides_count(l), 2);
	assert_int_equal(fl_overrides_add(l, true, "b", "a", &err),
			 -1);
	t_assert_contains(err.msg, "b,a: already forbidden, cannot also be "
			  "forced");
	assert_int_equal(fl_overrides_add(l, true, "x", "x", &err),
			 -1);
	assert_int_equal(fl_overrides_add(l, true, "", "x", &err),
			 -1);
	t_assert_contains(err.msg, "empty op name");
	assert_int_equal(fl_overrides_find(l, "d", "c"), 1);
	assert_int_equal(fl_overrides_find(l, "a", "c"), -1);
	assert_int_equal(fl_overrides_remove(l, 0), 0);
	assert_int_equal(fl_overrides_remove(l, 1), -1);
	assert_int_equal(fl_overrides_count(l), 1);
	assert_string_equal(fl_overrides_get(l, 0)->a, "c");
	assert_true(fl_overrides_get(l, 0)->force);
	assert_null(fl_overrides_get(l, 1));
	/* at most FL_MAX_CONSTRAINTS of one action */
	for (int i = 1; i < FL_MAX_CONSTRAINTS; i++) {
		snprintf(a, sizeof a, "f%d", i);
		assert_true(fl_overrides_add(l, true, a, "z",
					     &err) >= 0);
	}
	assert_int_equal(fl_overrides_add(l, true, "f0", "z", &err),
			 -1);
	t_assert_contains(err.msg, "more than 64 force overrides");
	assert_true(fl_overrides_add(l, false, "f0", "z", &err) >= 0);
	fl_overrides_free(l);
}

static void overrides_apply(void **state)
{
	fl_overrides *l = fl_overrides_new();
	fl_engine_opts eo;
	fl_error err = {""};

	(void)state;
	fl_engine_opts_default(&eo);
	eo.n_never = 1;		/* one from the command line */
	snprintf(eo.never_fuse[0].a, sizeof eo.never_fuse[0].a, "p");
	snprintf(eo.never_fuse[0].b, sizeof eo.never_fuse[0].b, "q");
	fl_overrides_add(l, false, "a", "b", &err);
	fl_overrides_add(l, true, "c", "d", &err);
	assert_int_equal(fl_overrides_apply(l, &eo, &err), 0);
	assert_int_equal(eo.n_never, 2);
	assert_int_equal(eo.n_fuse, 1);
	assert_string_equal(eo.never_fuse[0].a, "p");
	assert_string_equal(eo.never_fuse[1].b, "b");
	assert_string_equal(eo.fuse[0].a, "c");
	eo.n_never = FL_MAX_CONSTRAINTS;
	assert_int_equal(fl_overrides_apply(l, &eo, &err), -1);
	t_assert_contains(err.msg, "overrides[0]: more than 64 --never-fuse");
	fl_overrides_free(l);
}

/* ---- overrides: files -------------------------------------------------- */

static void make_dir(char *dir)
{
	assert_non_null(mkdtemp(dir));
}

static void remove_dir(const char *dir)
{
	char cmd[600], *out;

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(t_run(cmd, &out), 0);
	free(out);
}

static void overrides_round_trip(void **state)
{
	char dir[] = "/tmp/fuselab-ovr-XXXXXX", path[300];
	fl_overrides *l = fl_overrides_new(), *back;
	fl_error err = {""};

	(void)state;
	make_dir(dir);
	snprintf(path, sizeof path, "%s/o.json", dir);
	fl_overrides_add(l, false, "op1", "op2", &err);
	fl_overrides_add(l, true, "a \"q\"", "b\\c", &err);
	fl_overrides_add(l, false, "x.y", "z", &err);
	assert_int_equal(fl_overrides_save(path, l, "my \"graph\"", &err), 0);
	assert_int_equal(fl_overrides_load(path, &back, &err), 0);
	assert_int_equal(fl_overrides_count(back), fl_overrides_count(l));
	for (int i = 0; i < fl_overrides_count(l); i++) {
		const fl_override *x = fl_overrides_get(l, i);
		const fl_override *y = fl_overrides_get(back, i);

		assert_int_equal(x->force, y->force);
		assert_string_equal(x->a, y->a);
		assert_string_equal(x->b, y->b);
	}
	assert_string_equal(fl_overrides_graph(back), "my \"graph\"");
	fl_overrides_free(back);
	/* saving again replaces the file; only it is left in the folder */
	fl_overrides_remove(l, 0);
	assert_int_equal(fl_overrides_save(path, l, NULL, &err), 0);
	assert_int_equal(fl_overrides_load(path, &back, &err), 0);
	assert_int_equal(fl_overrides_count(back), 2);
	assert_string_equal(fl_overrides_graph(back), "");
	assert_int_equal(t_count_entries(dir), 1);
	fl_overrides_free(back);
	/* an empty list is a valid file too */
	while (fl_overrides_count(l))
		fl_overrides_remove(l, 0);
	assert_int_equal(fl_overrides_save(path, l, "g", &err), 0);
	assert_int_equal(fl_overrides_load(path, &back, &err), 0);
	assert_int_equal(fl_overrides_count(back), 0);
	fl_overrides_free(back);
	fl_overrides_free(l);
	remove_dir(dir);
}

static void overrides_bad_files(void **state)
{
	static const struct {
		const char *json, *expect;
	} cases[] = {
		{"{'format': 'fuselab-overrides/1', 'overrides': ["
		 "{'action': 'forbid', 'ops': ['a', 'b']},"
		 "{'action': 'merge', 'ops': ['a', 'c']}]}",
		 "o.json: overrides[1].action: expected \"forbid\" or \"force\", "
		 "got \"merge\""},
		{"{'format': 'fuselab-overrides/2', 'overrides': []}",
		 "o.json: format: expected \"fuselab-overrides/1\", got "
		 "\"fuselab-overrides/2\""},
		{"{'overrides': []}", "o.json: format: missing"},
		{"{'format': 'fuselab-overrides/1'}", "o.json: overrides: missing"},
		{"{'format': 'fuselab-overrides/1', 'overrides': {}}",
		 "o.json: overrides: expected a list"},
		{"{'format': 'fuselab-overrides/1', 'overrides': [], 'x': 1}",
		 "o.json: x: unknown field"},
		{"{'format': 'fuselab-overrides/1', 'graph': 3, 'overrides': []}",
		 "o.json: graph: expected a graph name"},
		{"{'format': 'fuselab-overrides/1', 'overrides': ["
		 "{'action': 'forbid', 'ops': ['a']}]}",
		 "o.json: overrides[0].ops: expected two op names"},
		{"{'format': 'fuselab-overrides/1', 'overrides': ["
		 "{'action': 'forbid', 'ops': ['a', 'b', 'c']}]}",
		 "o.json: overrides[0].ops: expected two op names"},
		{"{'format': 'fuselab-overrides/1', 'overrides': ["
		 "{'action': 'forbid', 'ops': 'a,b'}]}",
		 "o.json: overrides[0].ops: expected two op names"},
		{"{'format': 'fuselab-overrides/1', 'overrides': ["
		 "{'action': 'forbid', 'ops': [1, 'b']}]}",
		 "o.json: overrides[0].ops[0]: expected an op name"},
		{"{'format': 'fuselab-overrides/1', 'overrides': ["
		 "{'action': 'forbid', 'ops': ['a', '']}]}",
		 "o.json: overrides[0].ops[1]: empty op name"},
		{"{'format': 'fuselab-overrides/1', 'overrides': ["
		 "{'action': 'forbid', 'ops': ['a', 'a']}]}",
		 "o.json: overrides[0].ops: the same op twice"},
		{"{'format': 'fuselab-overrides/1', 'overrides': ["
		 "{'ops': ['a', 'b']}]}",
		 "o.json: overrides[0].action: missing"},
		{"{'format': 'fuselab-overrides/1', 'overrides': ["
		 "{'action': 'force', 'ops': ['a', 'b'], 'why': 'x'}]}",
		 "o.json: overrides[0].why: unknown field"},
		{"{'format': 'fuselab-overrides/1', 'overrides': [7]}",
		 "o.json: overrides[0]: expected an object"},
		{"{'format': 'fuselab-overrides/1', 'overrides': ["
		 "{'action': 'forbid', 'ops': ['a', 'b']},"
		 "{'action': 'force', 'ops': ['b', 'a']}]}",
		 "o.json: overrides[1]: b,a: already forbidden, cannot also be "
		 "forced"},
		{"['fuselab-overrides/1']",
		 "o.json: expected a JSON object at the top"},
		{"{'format': ", "o.json: line 1, column"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *text = dq(cases[i].json);
		fl_overrides *l = fl_overrides_new();	/* must be reset */
		fl_error err = {""};

		fl_overrides *before = l;

		if (fl_overrides_load_string(text, strlen(text), "o.json", &l,
					     &err) == 0)
			fail_msg("case %zu loaded, expected \"%s\"", i,
				 cases[i].expect);
		assert_null(l);
		fl_overrides_free(before);
		t_assert_contains(err.msg, cases[i].expect);
		free(text);
	}
}

/* 65 forbids: one more than the engine options hold. */
static void overrides_too_many(void **state)
{
	char *text = malloc(8192), *p;
	fl_overrides *l;
	fl_error err = {""};

	(void)state;
	assert_non_null(text);
	p = text + sprintf(text, "{\"format\": \"fuselab-overrides/1\", "
			   "\"overrides\": [");
	for (int i = 0; i <= FL_MAX_CONSTRAINTS; i++)
		p += sprintf(p, "%s{\"action\": \"forbid\", \"ops\": "
			     "[\"a%d\", \"b\"]}", i ? ", " : "", i);
	sprintf(p, "]}");
	assert_int_equal(fl_overrides_load_string(text, strlen(text), "o.json",
						  &l, &err), -1);
	t_assert_contains(err.msg, "o.json: overrides[64]: more than 64 forbid "
			  "overrides");
	free(text);
}

static void overrides_missing_file(void **state)
{
	fl_overrides *l;
	fl_error err = {""};

	(void)state;
	assert_int_equal(fl_overrides_load("/nonexistent/o.json", &l, &err), -1);
	assert_null(l);
	t_assert_contains(err.msg, "/nonexistent/o.json: cannot open");
}

/* A save that cannot happen says so and leaves nothing behind: not in a
 * missing folder, not under a file, not over a folder. */
static void overrides_save_unwritable(void **state)
{
	char dir[] = "/tmp/fuselab-ovr-XXXXXX", path[300], *out;
	fl_overrides *l = fl_overrides_new();
	fl_error err = {""};

	(void)state;
	make_dir(dir);
	fl_overrides_add(l, false, "a", "b", &err);
	assert_int_equal(fl_overrides_save("/nonexistent-dir/o.json", l, "g",
					   &err), -1);
	t_assert_contains(err.msg, "/nonexistent-dir/o.json: cannot write in "
			  "/nonexistent-dir");
	/* a plain file where a folder should be */
	snprintf(path, sizeof path, "%s/file", dir);
	assert_int_equal(fl_overrides_save(path, l, "g", &err), 0);
	snprintf(path, sizeof path, "%s/file/o.json", dir);
	assert_int_equal(fl_overrides_save(path, l, "g", &err), -1);
	t_assert_contains(err.msg, path);
	/* a folder in the way: rename fails, the temporary file goes */
	snprintf(path, sizeof path, "%s/sub", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(fl_overrides_save(path, l, "g", &err), -1);
	t_assert_contains(err.msg, "sub: cannot replace");
	assert_int_equal(t_count_entries(dir), 2);	/* file, sub */
	assert_int_equal(t_count_entries(path), 0);
	fl_overrides_free(l);
	remove_dir(dir);
	(void)out;
}

static void overrides_check_names(void **state)
{
	fl_graph *g = t_load_sample("apollo_fig3");
	fl_overrides *l;
	fl_error err = {""};
	char *text = dq("{'format': 'fuselab-overrides/1', 'graph': 'softmax', "
			"'overrides': [{'action': 'force', 'ops': ['op1', 'op2']},"
			"{'action': 'forbid', 'ops': ['op2', 'nope']}]}");

	(void)state;
	assert_int_equal(fl_overrides_load_string(text, strlen(text), "o.json",
						  &l, &err), 0);
	assert_int_equal(fl_overrides_check(l, g, "o.json", &err), -1);
	t_assert_contains(err.msg, "o.json: overrides[1].ops[1]: no op named "
			  "\"nope\" in graph \"apollo_fig3\" (the file was "
			  "saved for \"softmax\")");
	fl_overrides_remove(l, 1);
	assert_int_equal(fl_overrides_check(l, g, "o.json", &err), 0);
	/* the primitives of an opened compound are names too */
	assert_true(fl_overrides_add(l, false, "op2", "op3.max", &err) >= 0);
	assert_int_equal(fl_overrides_check(l, g, "o.json", &err), 0);
	assert_true(fl_overrides_add(l, false, "op2", "op3.nope", &err) >= 0);
	assert_int_equal(fl_overrides_check(l, g, "o.json", &err), -1);
	t_assert_contains(err.msg, "overrides[2].ops[1]: no op named "
			  "\"op3.nope\"");
	fl_overrides_free(l);
	fl_graph_free(g);
	free(text);
}

/* ---- overrides: the command line --------------------------------------- */

/* Writes text (single-quoted JSON) to dir/name; the path into path. */
static void write_q(const char *dir, const char *name, const char *json,
		    char *path, size_t n)
{
	char *text = dq(json);
	FILE *f;

	snprintf(path, n, "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	free(text);
}

/* Forbidding op1/op2 (merged by R1) gives apollo_fig3 a fourth
 * micro-graph, and the event log says why. */
static void overrides_batch(void **state)
{
	char dir[] = "/tmp/fuselab-ovr-XXXXXX", path[300], args[1024], *out;

	(void)state;
	make_dir(dir);
	write_q(dir, "o.json", "{'format': 'fuselab-overrides/1', 'graph': "
		"'apollo_fig3', 'overrides': [{'action': 'forbid', 'ops': "
		"['op1', 'op2']}]}", path, sizeof path);
	snprintf(args, sizeof args, "--batch --stage partition %s/apollo_fig3.json",
		 t_samples_dir());
	assert_int_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "partition: 3 micro-graphs");
	free(out);
	snprintf(args, sizeof args, "--batch --stage partition --events "
		 "--overrides %s %s/apollo_fig3.json", path, t_samples_dir());
	assert_int_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "partition: 4 micro-graphs");
	t_assert_contains(out, "constrain constrained [op1 op2]");
	if (strstr(out, "merged [op1 op2]"))
		fail_msg("op1 and op2 merged despite the override:\n%s", out);
	free(out);
	remove_dir(dir);
}

static void overrides_batch_errors(void **state)
{
	char dir[] = "/tmp/fuselab-ovr-XXXXXX", path[300], args[1024], *out;

	(void)state;
	make_dir(dir);
	/* a missing file: exit 2, the file named */
	snprintf(args, sizeof args, "--batch --overrides %s/none.json "
		 "%s/apollo_fig3.json", dir, t_samples_dir());
	assert_int_equal(t_fuselab(args, &out), 2);
	t_assert_contains(out, "none.json: cannot open");
	free(out);
	/* a bad entry */
	write_q(dir, "bad.json", "{'format': 'fuselab-overrides/1', "
		"'overrides': [{'action': 'merge', 'ops': ['op1', 'op2']}]}",
		path, sizeof path);
	snprintf(args, sizeof args, "--check --overrides %s %s/apollo_fig3.json",
		 path, t_samples_dir());
	assert_int_equal(t_fuselab(args, &out), 2);
	t_assert_contains(out, "bad.json: overrides[0].action: expected "
			  "\"forbid\" or \"force\", got \"merge\"");
	free(out);
	/* an op the graph does not have: the file and entry named, not a
	 * --never-fuse the user never typed */
	write_q(dir, "op.json", "{'format': 'fuselab-overrides/1', "
		"'overrides': [{'action': 'forbid', 'ops': ['op1', 'nope']}]}",
		path, sizeof path);
	snprintf(args, sizeof args, "--batch --events --overrides %s "
		 "%s/apollo_fig3.json", path, t_samples_dir());
	assert_int_equal(t_fuselab(args, &out), 2);
	t_assert_contains(out, "op.json: overrides[0].ops[1]: no op named "
			  "\"nope\" in graph \"apollo_fig3\"");
	free(out);
	remove_dir(dir);
}

static void overrides_help(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(t_fuselab("--help", &out), 0);
	t_assert_contains(out, "--overrides FILE");
	free(out);
	assert_int_equal(t_fuselab("--batch --overrides", &out), 2);
	t_assert_contains(out, "--overrides needs a value (FILE)");
	free(out);
}

FL_SUITE(tour,
	 cmocka_unit_test(tour_parse),
	 cmocka_unit_test(tour_errors),
	 cmocka_unit_test(tour_text_limit),
	 cmocka_unit_test(tour_in_graph_files),
	 cmocka_unit_test(tour_load_file_errors),
	 cmocka_unit_test(tour_match),
	 cmocka_unit_test(tour_paper_samples),
	 cmocka_unit_test(overrides_list),
	 cmocka_unit_test(overrides_apply),
	 cmocka_unit_test(overrides_round_trip),
	 cmocka_unit_test(overrides_bad_files),
	 cmocka_unit_test(overrides_too_many),
	 cmocka_unit_test(overrides_missing_file),
	 cmocka_unit_test(overrides_save_unwritable),
	 cmocka_unit_test(overrides_check_names),
	 cmocka_unit_test(overrides_batch),
	 cmocka_unit_test(overrides_batch_errors),
	 cmocka_unit_test(overrides_help));
