/* The Chrome trace exporter (exporters/trace.h): the structure Perfetto's
 * JSON importer needs, field by field; event counts against the engine's
 * log; the nesting rule for slices on one thread; the run timeline of a
 * real strategy ladder; and safe writes (a missing directory, a full
 * device, a failed write). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "ladder.h"
#include "output.h"
#include "test_util.h"
#include "trace.h"

static long long us(double seconds)
{
	return llround(seconds * 1e6);
}

/* A session on sample `name` run to the end of pass `last`. */
static fl_session *run_sample(fl_graph *g, fl_pass last)
{
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *s;

	fl_engine_opts_default(&o);
	o.stop_after = last;
	s = fl_engine_open(g, &o, &err);
	if (!s || fl_engine_run(s, &err) < 0)
		fail_msg("%s: %s", g->name, err.msg);
	return s;
}

static cJSON *events_of(const cJSON *trace)
{
	cJSON *ev = cJSON_GetObjectItemCaseSensitive(trace, "traceEvents");

	assert_non_null(ev);
	assert_true(cJSON_IsArray(ev));
	return ev;
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v))
		fail_msg("field %s is not a number", key);
	return v->valuedouble;
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsString(v))
		fail_msg("field %s is not a string", key);
	return v->valuestring;
}

static const cJSON *arg(const cJSON *e, const char *key)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "args");

	assert_true(cJSON_IsObject(a));
	return cJSON_GetObjectItemCaseSensitive(a, key);
}

static bool is_ph(const cJSON *e, const char *ph)
{
	return !strcmp(str(e, "ph"), ph);
}

/* An integer-valued number (pid, tid, microseconds). */
static void assert_integer(double v)
{
	assert_true(v == floor(v));
}

/* Every event: name, ph in {X, i, M}, integral pid, tid and ts >= 0, a
 * dur >= 0 for X, "s": "t" for i, args.name or args.sort_index for M. */
static void check_event(const cJSON *e)
{
	const char *ph = str(e, "ph");

	assert_true(cJSON_IsObject(e));
	assert_true(str(e, "name")[0] != '\0');
	assert_true(!strcmp(ph, "X") || !strcmp(ph, "i") || !strcmp(ph, "M"));
	assert_integer(num(e, "pid"));
	assert_integer(num(e, "tid"));
	assert_integer(num(e, "ts"));
	assert_true(num(e, "ts") >= 0);
	if (!strcmp(ph, "X")) {
		assert_integer(num(e, "dur"));
		assert_true(num(e, "dur") >= 0);
	} else if (!strcmp(ph, "i")) {
		assert_string_equal(str(e, "s"), "t");
	} else if (strstr(str(e, "name"), "sort_index")) {
		assert_integer(num(cJSON_GetObjectItem(e, "args"), "sort_index"));
	} else {
		assert_true(!strcmp(str(e, "name"), "process_name") ||
			    !strcmp(str(e, "name"), "thread_name"));
		assert_true(cJSON_IsString(arg(e, "name")));
	}
}

static void check_top(const cJSON *trace)
{
	const cJSON *other = cJSON_GetObjectItemCaseSensitive(trace, "otherData");
	const cJSON *e;

	assert_string_equal(str(trace, "displayTimeUnit"), "ms");
	assert_true(cJSON_IsObject(other));
	assert_string_equal(str(other, "generator"), "fuselab");
	cJSON_ArrayForEach(e, events_of(trace))
		check_event(e);
}

/* The name metadata gives (pid, tid) (tid < 0: the process's name);
 * NULL when there is none. */
static const char *meta_name(const cJSON *trace, int pid, int tid)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, events_of(trace))
		if (is_ph(e, "M") && num(e, "pid") == pid &&
		    !strcmp(str(e, "name"), tid < 0 ? "process_name"
						    : "thread_name") &&
		    (tid < 0 || num(e, "tid") == tid))
			return arg(e, "name")->valuestring;
	return NULL;
}

/* Perfetto's rule: two X events on one thread are disjoint or nested.
 * Also: every X and i event's thread has a name. */
static void check_nesting(const cJSON *trace)
{
	const cJSON *a, *b;

	cJSON_ArrayForEach(a, events_of(trace)) {
		double as, ae;

		if (is_ph(a, "M"))
			continue;
		assert_non_null(meta_name(trace, (int)num(a, "pid"),
					  (int)num(a, "tid")));
		if (!is_ph(a, "X"))
			continue;
		as = num(a, "ts");
		ae = as + num(a, "dur");
		for (b = a->next; b; b = b->next) {
			double bs, be;

			if (!is_ph(b, "X") || num(a, "pid") != num(b, "pid") ||
			    num(a, "tid") != num(b, "tid"))
				continue;
			bs = num(b, "ts");
			be = bs + num(b, "dur");
			if (!(ae <= bs || be <= as || (as <= bs && be <= ae) ||
			      (bs <= as && ae <= be)))
				fail_msg("pid %g tid %g: \"%s\" [%g, %g] and \"%s\" "
					 "[%g, %g] overlap", num(a, "pid"),
					 num(a, "tid"), str(a, "name"), as, ae,
					 str(b, "name"), bs, be);
		}
	}
}

static int count_ph(const cJSON *trace, int pid, const char *ph,
		    const char *cat)
{
	const cJSON *e;
	int n = 0;

	cJSON_ArrayForEach(e, events_of(trace))
		n += is_ph(e, ph) && num(e, "pid") == pid &&
		     (!cat || (cJSON_GetObjectItem(e, "cat") &&
			       !strcmp(str(e, "cat"), cat)));
	return n;
}

/* The compile timeline against log: one instant per event (found by its
 * seq) with its seq, kind, rule, ops and reason; per pass, one pass span on
 * thread pass + 1 from its first start to its last end; a span for every
 * scheduled event with the duration the engine measured. */
static void check_compile(const cJSON *trace, const fl_event_log *log)
{
	bool *seen = calloc((size_t)fl_event_log_count(log) + 1, 1);
	const cJSON *e;
	int i = 0, passes = 0;

	assert_non_null(seen);
	assert_string_equal(meta_name(trace, 1, -1),
			    "compile: passes and decisions");
	cJSON_ArrayForEach(e, events_of(trace)) {
		const fl_event *le;
		int seq;

		if (!is_ph(e, "i") || num(e, "pid") != 1)
			continue;
		seq = arg(e, "seq")->valueint;
		assert_true(seq >= 0 && seq < fl_event_log_count(log));
		assert_false(seen[seq]);
		seen[seq] = true;
		i++;
		le = fl_event_log_get(log, seq);
		assert_int_equal(num(e, "ts"), us(le->t_start));
		assert_int_equal(num(e, "tid"), le->pass + 1);
		assert_int_equal(arg(e, "seq")->valueint, le->seq);
		assert_string_equal(arg(e, "kind")->valuestring,
				    fl_event_kind_name(le->kind));
		assert_string_equal(arg(e, "rule")->valuestring, le->rule);
		assert_string_equal(arg(e, "reason")->valuestring, le->reason);
		assert_int_equal(cJSON_GetArraySize(arg(e, "ops")), le->n_ops);
		if (le->n_ops)
			assert_string_equal(cJSON_GetArrayItem(arg(e, "ops"), 0)
						    ->valuestring, le->ops[0]);
	}
	free(seen);
	assert_int_equal(i, fl_event_log_count(log));
	for (int p = 0; p < FL_PASS_COUNT; p++) {
		long long lo = -1, hi = -1;
		int spans = 0;

		for (int k = 0; k < fl_event_log_count(log); k++) {
			const fl_event *le = fl_event_log_get(log, k);

			if ((int)le->pass != p)
				continue;
			if (lo < 0 || us(le->t_start) < lo)
				lo = us(le->t_start);
			if (us(le->t_start + le->duration) > hi)
				hi = us(le->t_start + le->duration);
		}
		cJSON_ArrayForEach(e, events_of(trace))
			if (is_ph(e, "X") && num(e, "pid") == 1 &&
			    !strcmp(str(e, "cat"), "pass") &&
			    !strcmp(str(e, "name"), fl_pass_name(p))) {
				assert_int_equal(num(e, "tid"), p + 1);
				assert_int_equal(num(e, "ts"), lo);
				assert_int_equal(num(e, "ts") + num(e, "dur"), hi);
				spans++;
			}
		assert_int_equal(spans, lo >= 0);
		passes += lo >= 0;
		if (lo >= 0)
			assert_string_equal(meta_name(trace, 1, p + 1),
					    fl_pass_name(p));
	}
	assert_int_equal(count_ph(trace, 1, "X", "pass"), passes);
	for (int k = 0; k < fl_event_log_count(log); k++) {
		const fl_event *le = fl_event_log_get(log, k);
		int found = 0;

		if (le->kind != FL_EV_SCHEDULED ||
		    us(le->t_start + le->duration) - us(le->t_start) < 1)
			continue;
		cJSON_ArrayForEach(e, events_of(trace))
			found += is_ph(e, "X") && num(e, "pid") == 1 &&
				 !strcmp(str(e, "cat"), "scheduled") &&
				 arg(e, "seq")->valueint == le->seq &&
				 num(e, "ts") == us(le->t_start) &&
				 num(e, "ts") + num(e, "dur") ==
					 us(le->t_start + le->duration);
		assert_int_equal(found, 1);
	}
}

static void check_trace(const cJSON *trace, const fl_event_log *log)
{
	check_top(trace);
	check_nesting(trace);
	if (log)
		check_compile(trace, log);
}

/* softmax through codegen: the whole compile timeline, field by field;
 * nothing from a ladder. */
static void export_trace_compile(void **state)
{
	fl_graph *g = t_load_sample("softmax");
	fl_session *s = run_sample(g, FL_PASS_CODEGEN);
	const fl_event_log *log = fl_engine_events(s);
	cJSON *t = fl_trace_build(log, NULL);

	(void)state;
	assert_non_null(t);
	check_trace(t, log);
	assert_int_equal(count_ph(t, 1, "i", NULL), fl_event_log_count(log));
	for (int pid = 10; pid < 13; pid++)
		assert_null(meta_name(t, pid, -1));
	assert_int_equal(fl_trace_set_graph(t, g->name), 0);
	assert_string_equal(str(cJSON_GetObjectItem(t, "otherData"), "graph"),
			    g->name);
	cJSON_Delete(t);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* A layer-1 event remembered from earlier work keeps its measured
 * duration, which may run past the next decisions: such spans go to a
 * lane of their own, and the pass span still holds them all. */
static void export_trace_overlap_lanes(void **state)
{
	static const struct {
		fl_pass pass;
		fl_event_kind kind;
		double t, d;
	} evs[] = {
		{FL_PASS_AGGREGATE, FL_EV_MERGED, 0.000, 0.000010},
		{FL_PASS_LAYER1, FL_EV_SCHEDULED, 0.001, 0.010},
		{FL_PASS_LAYER1, FL_EV_TILED, 0.002, 0.001},
		{FL_PASS_LAYER1, FL_EV_SCHEDULED, 0.005, 0.020},	/* overlaps */
		{FL_PASS_LAYER1, FL_EV_PLACED, 0.006, 0.0},
		/* a pass's events need not be consecutive: still one span */
		{FL_PASS_AGGREGATE, FL_EV_REJECTED, 0.030, 0.000005},
	};
	fl_event_log *log = fl_event_log_new();
	const char *op = "exp_3";
	const cJSON *e;
	int lane1 = 0;
	cJSON *t;

	(void)state;
	for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++) {
		fl_event *ev = fl_event_log_add(log, evs[i].pass, evs[i].kind, "",
						&op, 1, (int)i, -1, "event %zu", i);

		ev->t_start = evs[i].t;
		ev->duration = evs[i].d;
	}
	t = fl_trace_build(log, NULL);
	assert_non_null(t);
	check_trace(t, log);
	cJSON_ArrayForEach(e, events_of(t))
		if (is_ph(e, "X") && num(e, "tid") == FL_PASS_LAYER1 + 1 + 100) {
			assert_int_equal(arg(e, "seq")->valueint, 3);
			lane1++;
		}
	assert_int_equal(lane1, 1);
	assert_non_null(strstr(meta_name(t, 1, FL_PASS_LAYER1 + 1 + 100),
			       "overlapping"));
	/* the layer-1 pass span: 1 ms to 25 ms */
	cJSON_ArrayForEach(e, events_of(t))
		if (is_ph(e, "X") && !strcmp(str(e, "cat"), "pass") &&
		    !strcmp(str(e, "name"), "layer1")) {
			assert_int_equal(num(e, "ts"), 1000);
			assert_int_equal(num(e, "dur"), 24000);
		}
	cJSON_Delete(t);
	fl_event_log_free(log);
}

/* bert_encoder at codegen: hundreds of decisions, sane counts. */
static void export_trace_bert_codegen(void **state)
{
	fl_graph *g = t_load_sample("bert_encoder");
	fl_session *s = run_sample(g, FL_PASS_CODEGEN);
	const fl_event_log *log = fl_engine_events(s);
	cJSON *t = fl_trace_build(log, NULL);
	int x = count_ph(t, 1, "X", NULL);

	(void)state;
	assert_true(fl_event_log_count(log) > 100);
	check_trace(t, log);
	assert_int_equal(count_ph(t, 1, "i", NULL), fl_event_log_count(log));
	/* a span per pass and at most one per event */
	assert_true(x > count_ph(t, 1, "X", "pass"));
	assert_true(x <= count_ph(t, 1, "X", "pass") + fl_event_log_count(log));
	cJSON_Delete(t);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* Passes with at least one event in log. */
static int n_passes(const fl_event_log *log)
{
	bool seen[FL_PASS_COUNT] = {false};
	int n = 0;

	for (int i = 0; i < fl_event_log_count(log); i++) {
		fl_pass p = fl_event_log_get(log, i)->pass;

		n += !seen[p];
		seen[p] = true;
	}
	return n;
}

static void check_step(const cJSON *t, const fl_ladder_step *st, int i)
{
	int pid = 10 + i, k = 0;
	double run_ts = -1, at;
	const cJSON *e;

	assert_true(st->ran);
	assert_non_null(st->log);
	assert_string_equal(meta_name(t, pid, -1), fl_strategy_name(st->strategy));
	assert_non_null(meta_name(t, pid, 2));
	cJSON_ArrayForEach(e, events_of(t))
		if (is_ph(e, "X") && num(e, "pid") == pid &&
		    !strcmp(str(e, "cat"), "work") &&
		    !strcmp(arg(e, "kind")->valuestring, "ran"))
			run_ts = num(e, "ts");
	assert_true(run_ts > 0);	/* after the compile */
	assert_int_equal(count_ph(t, pid, "X", "work"), 2);	/* cc, run */
	at = run_ts;
	cJSON_ArrayForEach(e, events_of(t)) {
		const fl_ladder_kernel *lk;

		if (!is_ph(e, "X") || num(e, "pid") != pid ||
		    num(e, "tid") != 2)
			continue;
		assert_true(k < st->n_kernels);
		lk = &st->kernels[k++];
		assert_string_equal(str(e, "name"), lk->name);
		assert_string_equal(arg(e, "kernel")->valuestring, lk->name);
		assert_string_equal(arg(e, "first_op")->valuestring, lk->first_op);
		assert_int_equal(arg(e, "n_ops")->valueint, lk->n_ops);
		assert_true(cJSON_IsTrue(arg(e, "verified")));
		assert_int_equal(arg(e, "repeats")->valueint, 1);
		assert_true(arg(e, "bytes")->valuedouble > 0);
		assert_non_null(strstr(arg(e, "span")->valuestring, "median"));
		/* back to back from the run's start, each its median */
		assert_int_equal(num(e, "ts"), at);
		assert_int_equal(num(e, "dur"), us(lk->r.seconds));
		at += num(e, "dur");
	}
	assert_int_equal(k, st->n_kernels);
	assert_int_equal(count_ph(t, pid, "X", "pass"), n_passes(st->log));
}

/* A real ladder (one timed run each): a process per strategy, named
 * after it, with its passes, compiler and run, and a span per kernel;
 * the compile timeline of its last session alongside. */
static void export_trace_ladder(void **state)
{
	static const fl_strategy list[] = {FL_STRATEGY_UNFUSED, FL_STRATEGY_XLA,
					   FL_STRATEGY_APOLLO_L1};
	fl_graph *g = t_load_sample(T_SANITIZED ? "softmax" : "layernorm");
	fl_engine_opts o;
	fl_error err = {""};
	fl_ladder l;
	cJSON *t;

	(void)state;
	fl_engine_opts_default(&o);
	o.run.warmup = 0;
	o.run.repeat = 1;
	assert_int_equal(fl_ladder_run(g, &o, list, 3, &l, &err), 0);
	assert_int_equal(l.n, 3);
	t = fl_trace_build(l.steps[2].log, &l);
	assert_non_null(t);
	check_trace(t, l.steps[2].log);
	/* the run's span, not one per kernel report */
	assert_int_equal(count_ph(t, 1, "X", "ran"), 1);
	for (int i = 0; i < 3; i++)
		check_step(t, &l.steps[i], i);
	assert_null(meta_name(t, 13, -1));
	cJSON_Delete(t);
	fl_ladder_free(&l);
	fl_graph_free(g);
}

/* The kernel events of strategy process pid, in order, into ev (at
 * most max); returns how many. */
static int kernel_events(const cJSON *t, int pid, const cJSON **ev, int max)
{
	const cJSON *e;
	int n = 0;

	cJSON_ArrayForEach(e, events_of(t))
		if (is_ph(e, "X") && num(e, "pid") == pid &&
		    num(e, "tid") == 2 && n < max)
			ev[n++] = e;
	return n;
}

/* Sample `name` run through a ladder of strategy st alone (one timed
 * run), its trace built, and the same strategy's program from a session
 * of its own (the engine is deterministic). */
static cJSON *ladder_trace(const char *name, fl_strategy st, fl_ladder *l,
			   fl_graph **g, fl_session **s)
{
	fl_engine_opts o;
	fl_error err = {""};
	cJSON *t;

	*g = t_load_sample(name);
	fl_engine_opts_default(&o);
	o.run.warmup = 0;
	o.run.repeat = 1;
	assert_int_equal(fl_ladder_run(*g, &o, &st, 1, l, &err), 0);
	assert_true(l->steps[0].ran);
	t = fl_trace_build(NULL, l);
	assert_non_null(t);
	o.strategy = st;
	o.stop_after = FL_PASS_CODEGEN;
	*s = fl_engine_open(*g, &o, &err);
	if (!*s || fl_engine_run(*s, &err) < 0)
		fail_msg("%s: %s", name, err.msg);
	return t;
}

/* Softmax under apollo-l2 is one kernel stitching three micro-graphs:
 * its kernel event names them; Fig. 1 of APOLLO under apollo runs
 * branches side by side in one kernel: its event names each branch by
 * its ops.  Kernels layers 2 and 3 did not make carry neither. */
static void export_trace_ladder_layers(void **state)
{
	const cJSON *ev[64];
	const fl_program *p;
	fl_session *s;
	fl_graph *g;
	fl_ladder l;
	cJSON *t = ladder_trace("softmax", FL_STRATEGY_APOLLO_L2, &l, &g, &s);
	int n, branchy = 0;

	(void)state;
	p = fl_engine_program(s);
	assert_int_equal(kernel_events(t, 10, ev, 64), 1);
	assert_int_equal(p->n_kernels, 1);
	for (int i = 0; i < p->kernels[0].n_ops; i++) {
		char want[32];

		snprintf(want, sizeof want, "G%d", fl_engine_partition(s)->
			 group_of[p->kernels[0].ops[i]]);
		t_assert_contains(arg(ev[0], "stitched_micro_graphs")->
				  valuestring, want);
	}
	t_assert_contains(arg(ev[0], "stitched_micro_graphs")->valuestring,
			  " + ");
	assert_null(arg(ev[0], "branches"));
	cJSON_Delete(t);
	fl_ladder_free(&l);
	fl_engine_close(s);
	fl_graph_free(g);

	t = ladder_trace("apollo_fig1", FL_STRATEGY_APOLLO, &l, &g, &s);
	p = fl_engine_program(s);
	n = kernel_events(t, 10, ev, 64);
	assert_int_equal(n, p->n_kernels);
	for (int k = 0; k < n; k++) {
		const fl_kernel *kn = &p->kernels[k];

		assert_string_equal(str(ev[k], "name"), kn->name);
		if (kn->n_branches == 0) {
			assert_null(arg(ev[k], "branches"));
			continue;
		}
		branchy++;
		assert_int_equal(arg(ev[k], "n_branches")->valueint,
				 kn->n_branches);
		for (int b = 0; b < kn->n_branches; b++)
			t_assert_contains(arg(ev[k], "branches")->valuestring,
					  fl_engine_graph(s)->ops[
					  kn->branches[b].ops[0]].name);
	}
	assert_true(branchy >= 1);
	cJSON_Delete(t);
	fl_ladder_free(&l);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* A session stepped back and run again (from a snapshot and the memo,
 * a scheduled event keeping the duration of the work it remembers): the
 * trace still follows the nesting rule and the log. */
static void export_trace_replay(void **state)
{
	fl_graph *g = t_load_sample("softmax");
	fl_session *s = run_sample(g, FL_PASS_CODEGEN);
	fl_error err = {""};
	cJSON *t;

	(void)state;
	if (fl_engine_goto(s, 5, &err) < 0 || fl_engine_run(s, &err) < 0)
		fail_msg("%s", err.msg);
	t = fl_trace_build(fl_engine_events(s), NULL);
	check_trace(t, fl_engine_events(s));
	cJSON_Delete(t);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* Ladder steps made by hand: one that failed (no log), one whose kernels
 * have no log to place them by (they start at 0). */
static void export_trace_ladder_without_logs(void **state)
{
	fl_ladder_kernel k[2] = {
		{.name = "fl_k0", .n_ops = 1, .first_op = "a", .last_op = "a",
		 .r = {.seconds = 0.002, .min_seconds = 0.001,
		       .max_seconds = 0.003, .n_timed = 5, .bytes = 4000000,
		       .ok = true}},
		{.name = "fl_k1", .n_ops = 2, .first_op = "b", .last_op = "c",
		 .r = {.seconds = 0.001, .n_timed = 5, .bytes = 1000, .ok = false}},
	};
	fl_ladder_step steps[2] = {
		{.strategy = FL_STRATEGY_UNFUSED, .ran = false,
		 .error = "layer 1: boom", .status = FL_RUN_OK},
		{.strategy = FL_STRATEGY_XLA, .ran = true, .status = FL_RUN_MISMATCH,
		 .n_kernels = 2, .kernels = k},
	};
	fl_ladder l = {.n = 2, .steps = steps};
	cJSON *t = fl_trace_build(NULL, &l);
	const cJSON *e;
	int failed = 0, spans = 0;

	(void)state;
	check_trace(t, NULL);
	assert_null(meta_name(t, 1, -1));
	assert_string_equal(meta_name(t, 10, -1), "unfused");
	assert_string_equal(meta_name(t, 11, -1), "xla");
	cJSON_ArrayForEach(e, events_of(t)) {
		if (is_ph(e, "i") && num(e, "pid") == 10) {
			assert_string_equal(str(e, "name"), "not run");
			assert_string_equal(arg(e, "error")->valuestring,
					    "layer 1: boom");
			failed++;
		}
		if (is_ph(e, "X") && num(e, "pid") == 11) {
			assert_int_equal(num(e, "ts"), spans ? 2000 : 0);
			assert_int_equal(num(e, "dur"), spans ? 1000 : 2000);
			assert_true(cJSON_IsBool(arg(e, "verified")));
			assert_int_equal(cJSON_IsTrue(arg(e, "verified")), !spans);
			if (!spans)	/* 4 MB in 2 ms */
				assert_true(fabs(arg(e, "GB/s")->valuedouble - 2.0) <
					    1e-9);
			spans++;
		}
	}
	assert_int_equal(failed, 1);
	assert_int_equal(spans, 2);
	assert_int_equal(count_ph(t, 10, "X", NULL), 0);
	cJSON_Delete(t);
}

/* Written and read back: the same structure; a missing directory or a
 * write that fails midway leaves nothing behind. */
static void export_trace_write(void **state)
{
	fl_graph *g = t_load_sample("softmax");
	fl_session *s = run_sample(g, FL_PASS_LAYER1);
	const fl_event_log *log = fl_engine_events(s);
	char dir[512], path[600], *text;
	fl_error err = {""};
	cJSON *t;

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/t.json", dir);
	assert_int_equal(fl_export_trace(log, NULL, path, &err), 0);
	text = t_read_file(path, NULL);
	t = cJSON_Parse(text);
	free(text);
	assert_non_null(t);
	check_trace(t, log);
	cJSON_Delete(t);
	unlink(path);

	snprintf(path, sizeof path, "%s/missing/t.json", dir);
	assert_int_equal(fl_export_trace(log, NULL, path, &err), -1);
	t_assert_contains(err.msg, path);
	assert_int_equal(t_count_entries(dir), 0);

	snprintf(path, sizeof path, "%s/t.json", dir);
	fl_out_fail_after(100);
	assert_int_equal(fl_export_trace(log, NULL, path, &err), -1);
	fl_out_fail_after(-1);
	t_assert_contains(err.msg, "No space left on device");
	t_assert_contains(err.msg, path);
	assert_int_equal(t_count_entries(dir), 0);
	rmdir(dir);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* A device is written directly and stays a device. */
static void export_trace_dev_full(void **state)
{
	fl_graph *g = t_load_sample("softmax");
	fl_session *s = run_sample(g, FL_PASS_AGGREGATE);
	fl_error err = {""};
	struct stat st;

	(void)state;
	if (access("/dev/full", W_OK) != 0)
		skip();
	assert_int_equal(fl_export_trace(fl_engine_events(s), NULL, "/dev/full",
					 &err), -1);
	t_assert_contains(err.msg, "/dev/full");
	t_assert_contains(err.msg, "No space left on device");
	assert_int_equal(stat("/dev/full", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	fl_engine_close(s);
	fl_graph_free(g);
}

FL_SUITE(export_trace,
	 cmocka_unit_test(export_trace_compile),
	 cmocka_unit_test(export_trace_overlap_lanes),
	 cmocka_unit_test(export_trace_bert_codegen),
	 cmocka_unit_test(export_trace_replay),
	 cmocka_unit_test(export_trace_ladder),
	 cmocka_unit_test(export_trace_ladder_layers),
	 cmocka_unit_test(export_trace_ladder_without_logs),
	 cmocka_unit_test(export_trace_write),
	 cmocka_unit_test(export_trace_dev_full));
