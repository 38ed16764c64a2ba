/* The whole pipeline as passes (DESIGN 1): every pass from preprocess to
 * run makes events; the state and the log after N decisions are the
 * same whether a session goes there from scratch or comes back to it
 * after a complete run (snapshots and memoised work); the state checker
 * holds after every pass and catches a broken state; cancel stops a run;
 * the strategy ladder runs in the engine. */
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "ladder.h"
#include "test_util.h"


/* ---- a digest of the state, through the public API ------------------- */

typedef struct text {
	char *s;
	size_t len, cap;
} text;

static void add(text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add(text *t, const char *fmt, ...)
{
	va_list ap;
	int need;

	va_start(ap, fmt);
	need = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (t->len + (size_t)need + 1 > t->cap) {
		t->cap = 2 * (t->cap + (size_t)need + 1);
		t->s = realloc(t->s, t->cap);
		assert_non_null(t->s);
	}
	va_start(ap, fmt);
	vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	t->len += (size_t)need;
}

static void digest_partition(text *t, const fl_session *s)
{
	const fl_graph *g = fl_engine_graph(s);
	const fl_partition *p = fl_engine_partition(s);

	add(t, "graph %d ops:", g->n_ops);
	for (int i = 0; i < g->n_ops; i++)
		add(t, " %s/%s", g->ops[i].name, fl_op_kind_name(g->ops[i].kind));
	add(t, "\npartition %d groups\n", p->n_groups);
	for (int i = 0; i < p->n_groups; i++) {
		const fl_micro_graph *m = &p->groups[i];

		if (!m->alive)
			continue;
		add(t, "G%d %s [%s]:", m->id, fl_op_type_name(m->type), m->history);
		for (int j = 0; j < m->n_members; j++)
			add(t, " %d", m->members[j]);
		add(t, "\n");
	}
}

static void digest_program(text *t, const fl_session *s)
{
	const fl_program *p = fl_engine_program(s);

	for (int k = 0; p && k < p->n_kernels; k++) {
		const fl_kernel *kn = &p->kernels[k];

		add(t, "%s G%d tile %d:", kn->name, kn->group, kn->n_tile);
		for (int i = 0; i < kn->n_ops; i++)
			add(t, " %d", kn->ops[i]);
		for (int i = 0; i < kn->n_tensors; i++)
			add(t, " T%d=%s", kn->tensors[i].tensor,
			    fl_placement_name(kn->tensors[i].place));
		add(t, "\n%s\n", kn->schedule_text ? kn->schedule_text : "-");
		if (fl_engine_kernel_source(s, k))
			add(t, "%s", fl_engine_kernel_source(s, k));
	}
	if (fl_engine_source(s))
		add(t, "unit %zu bytes\n", strlen(fl_engine_source(s)));
}

static void digest_run(text *t, const fl_session *s)
{
	const fl_build *b = fl_engine_build(s);
	const fl_run_result *r = fl_engine_run_result(s);

	if (b)
		add(t, "build %s\n", fl_run_status_name(b->status));
	if (!r)
		return;
	add(t, "run %s verified %d kernels %d outputs %d:",
	    fl_run_status_name(r->status), r->verified, r->n_kernels,
	    r->n_outputs);
	for (int k = 0; k < r->n_kernels; k++)
		add(t, " %d", r->kernels[k].ok);
	for (int i = 0; i < r->n_outputs; i++)
		add(t, " T%d:%d", r->outputs[i].tensor, r->outputs[i].ok);
	add(t, "\n");
}

/* Everything a view could show of the state, as text (malloc'd). */
static char *digest(const fl_session *s)
{
	text t = {NULL, 0, 0};

	add(&t, "position %d done %d pass %s\n", fl_engine_position(s),
	    fl_engine_done(s), fl_pass_name(fl_engine_current_pass(s)));
	digest_partition(&t, s);
	digest_program(&t, s);
	digest_run(&t, s);
	return t.s;
}

/* ---- helpers ---------------------------------------------------------- */

static fl_engine_opts pipeline_opts(bool run)
{
	fl_engine_opts o;

	fl_engine_opts_default(&o);
	o.stop_after = run ? FL_PASS_RUN : FL_PASS_CODEGEN;
	o.run_kernels = run;
	o.run.warmup = 0;
	o.run.repeat = 1;
	return o;
}

static fl_session *open_graph(const fl_graph *g, const fl_engine_opts *o)
{
	fl_error err = {""};
	fl_session *s = fl_engine_open(g, o, &err);

	if (!s)
		fail_msg("%s: open: %s", g->name, err.msg);
	return s;
}

static void must(int rc, const fl_error *err, const char *what)
{
	if (rc < 0)
		fail_msg("%s: %s", what, err->msg);
}

/* Positions where each pass starts in log, and a few inside it:
 * up to 4 per pass (its first decision, second, middle, last), in
 * increasing order.  Returns the count. */
static int step_points(const fl_event_log *log, int *at, int max)
{
	int n = 0, total = fl_event_log_count(log);

	for (int i = 0; i < total && n + 4 < max; i++) {
		const fl_event *e = fl_event_log_get(log, i);
		int end = i;

		if (i > 0 && fl_event_log_get(log, i - 1)->pass == e->pass)
			continue;
		while (end + 1 < total && fl_event_log_get(log, end + 1)->pass == e->pass)
			end++;
		at[n++] = i;
		if (end > i)
			at[n++] = i + 1;
		if (end > i + 2)
			at[n++] = (i + end) / 2;
		if (end > i + 1)
			at[n++] = end;
	}
	at[n++] = total;
	return n;
}

/* The state at each of the points, from a session that ran to the end
 * and goes back (snapshots, memo), equals that of a fresh session sent
 * there directly; and its log is the complete log cut at that point. */
static void assert_steps_equal_cut(const fl_graph *g, const fl_engine_opts *o)
{
	fl_session *full = open_graph(g, o), *fresh;
	fl_event_log *all;
	fl_error err = {""};
	int at[128], n;

	must(fl_engine_run(full, &err), &err, g->name);
	if (o->run_kernels && !(fl_engine_run_result(full) &&
				fl_engine_run_result(full)->verified))
		fail_msg("%s does not verify through the pipeline", g->name);
	all = fl_event_log_copy(fl_engine_events(full), -1);	/* the session
		will move: keep the complete log */
	assert_non_null(all);
	/* passes that decide on every graph (preprocess, open, constrain
	 * and aggregate may have nothing to do; layer 2 decides only under
	 * apollo-l2, on a reduction kernel feeding another kernel; layer 3
	 * only under apollo, on a graph with a branch set -- a chain has
	 * none) */
	for (int p = FL_PASS_CLUSTER; p <= (int)o->stop_after; p++) {
		bool seen = false;

		if (p == FL_PASS_OPEN || p == FL_PASS_CONSTRAIN ||
		    p == FL_PASS_AGGREGATE || p == FL_PASS_LAYER2 ||
		    p == FL_PASS_LAYER3 ||
		    ((p == FL_PASS_COMPILE || p == FL_PASS_RUN) && !o->run_kernels))
			continue;
		for (int i = 0; i < fl_event_log_count(all); i++)
			seen |= fl_event_log_get(all, i)->pass == (fl_pass)p;
		if (!seen)
			fail_msg("%s: no event from pass %s", g->name,
				 fl_pass_name((fl_pass)p));
	}
	n = step_points(all, at, 128);
	fresh = open_graph(g, o);
	/* the fresh session moves forward only: no snapshot helps it back */
	for (int i = 0; i < n; i++) {
		char *a, *b;

		must(fl_engine_goto(full, at[i], &err), &err, "goto (full)");
		must(fl_engine_goto(fresh, at[i], &err), &err, "goto (fresh)");
		assert_int_equal(fl_engine_position(fresh), at[i]);
		if (!fl_event_log_equal_prefix(fl_engine_events(fresh), all, at[i]) ||
		    !fl_event_log_equal(fl_engine_events(fresh),
					fl_engine_events(full)))
			fail_msg("%s: the log at step %d is not the complete log "
				 "cut there", g->name, at[i]);
		a = digest(full);
		b = digest(fresh);
		if (strcmp(a, b) != 0)
			fail_msg("%s: the state at step %d differs:\n--- after a "
				 "complete run:\n%.2000s\n--- from scratch:\n%.2000s",
				 g->name, at[i], a, b);
		free(a);
		free(b);
		must(fl_engine_check(fresh, &err), &err, "state check");
	}
	fl_event_log_free(all);
	fl_engine_close(fresh);
	fl_engine_close(full);
}

/* ---- tests ------------------------------------------------------------ */

static void test_every_sample_steps_equal_cut(void **state)
{
	static const char *const sanitized[] = {"apollo_fig3", "layernorm"};
	/* the compile and run passes are stepped on these; every sample's
	 * kernels are verified by test_every_sample_verifies */
	static const char *const run[] = {"apollo_fig3", "micro2020_fig1",
					  "layernorm"};
	char names[64][64];
	int n = t_sample_names(names, 64);

	(void)state;
	assert_true(n >= 20);
	for (int i = 0; i < (T_SANITIZED ? 2 : n); i++) {
		const char *name = T_SANITIZED ? sanitized[i] : names[i];
		fl_graph *g = t_load_sample(name);
		bool runs = false;
		fl_engine_opts o;

		for (size_t k = 0; k < sizeof run / sizeof run[0]; k++)
			runs |= strcmp(run[k], name) == 0;
		o = pipeline_opts(runs);
		o.run.repeat = 0;	/* verification only: no timed runs */
		assert_steps_equal_cut(g, &o);
		fl_graph_free(g);
	}
}

/* Under apollo-l2 too, where layer 2 stitches kernels (renumbering
 * them) between layer 1 and codegen: each step equals the cut of the
 * complete run, and the stitched programs verify. */
static void test_stitched_steps_equal_cut(void **state)
{
	static const char *const names[] = {"softmax", "layernorm"};

	(void)state;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		fl_graph *g = t_load_sample(names[i]);
		fl_engine_opts o = pipeline_opts(true);

		o.strategy = FL_STRATEGY_APOLLO_L2;
		o.run.repeat = 0;	/* verification only */
		assert_steps_equal_cut(g, &o);
		fl_graph_free(g);
	}
}

/* Under apollo, where layer 3 makes independent kernels one kernel
 * between layer 2 and codegen: each step (inside layer 3 too, where the
 * decisions taken so far are applied) equals the cut of the complete
 * run, and the stitched program verifies. */
static void test_parallel_steps_equal_cut(void **state)
{
	fl_graph *g = t_load_sample("apollo_fig1");
	fl_engine_opts o = pipeline_opts(true);

	(void)state;
	o.strategy = FL_STRATEGY_APOLLO;
	o.run.repeat = 0;	/* verification only */
	assert_steps_equal_cut(g, &o);
	fl_graph_free(g);
}

/* Going back and forth redoes no work: after one complete run, walking
 * every step both ways schedules no micro-graph and generates no kernel
 * again. */
static void test_steps_reuse_memo(void **state)
{
	fl_graph *g = t_load_sample("softmax");
	fl_engine_opts o = pipeline_opts(false);
	fl_session *s = open_graph(g, &o);
	fl_error err = {""};
	fl_engine_stats before, after;
	fl_pass first_pass;
	int total;

	(void)state;
	must(fl_engine_run(s, &err), &err, "run");
	fl_engine_get_stats(s, &before);
	assert_true(before.schedules > 0);
	assert_int_equal(before.kernels_generated, fl_engine_program(s)->n_kernels);
	total = fl_engine_position(s);
	assert_true(total > 10);
	first_pass = fl_event_log_get(fl_engine_events(s), 0)->pass;
	while (fl_engine_position(s) > 0)
		must(fl_engine_step_back(s, &err), &err, "back");
	assert_int_equal(fl_engine_current_pass(s), first_pass);
	while (!fl_engine_done(s))
		must(fl_engine_step(s, &err), &err, "step");
	assert_int_equal(fl_engine_position(s), total);
	assert_non_null(fl_engine_source(s));
	fl_engine_get_stats(s, &after);
	assert_int_equal(after.schedules, before.schedules);
	assert_int_equal(after.kernels_generated, before.kernels_generated);
	assert_true(after.snapshots >= 8);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* Events of the later passes say what happened. */
static void test_run_pass_events(void **state)
{
	fl_graph *g = t_load_sample("bias_gelu");
	fl_engine_opts o = pipeline_opts(true);
	fl_session *s = open_graph(g, &o);
	const fl_event_log *log;
	fl_error err = {""};
	int count[FL_EV_KIND_COUNT] = {0}, kernels;

	(void)state;
	must(fl_engine_run(s, &err), &err, "run");
	log = fl_engine_events(s);
	kernels = fl_engine_program(s)->n_kernels;
	for (int i = 0; i < fl_event_log_count(log); i++) {
		const fl_event *e = fl_event_log_get(log, i);

		count[e->kind]++;
		if (e->kind == FL_EV_RAN) {
			assert_int_equal(e->n_measured, 4);
			assert_true(e->measured[0] > 0);
			assert_true(e->measured[1] <= e->measured[0]);
			assert_true(e->measured[2] >= e->measured[0]);
		}
		if (e->kind == FL_EV_COMPILED) {
			assert_non_null(strstr(e->reason, "built"));
			assert_true(e->measured[0] > 0);
		}
		if (e->kind == FL_EV_VERIFIED)
			assert_non_null(strstr(e->reason, "pass"));
	}
	assert_int_equal(count[FL_EV_GENERATED], kernels);
	assert_int_equal(count[FL_EV_COMPILED], 1);
	assert_int_equal(count[FL_EV_RAN], kernels);
	assert_int_equal(count[FL_EV_VERIFIED],
			 kernels + fl_engine_run_result(s)->n_outputs);
	assert_true(fl_engine_run_result(s)->verified);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* A program that does not compile is a decision, and nothing runs. */
static void test_missing_compiler_is_a_decision(void **state)
{
	fl_graph *g = t_load_sample("chain8");
	fl_engine_opts o = pipeline_opts(true);
	fl_session *s;
	const fl_event_log *log;
	fl_error err = {""};
	const fl_event *last;

	(void)state;
	o.run.cc = "/nonexistent/fuselab-no-cc";
	s = open_graph(g, &o);
	must(fl_engine_run(s, &err), &err, "run");
	assert_non_null(fl_engine_build(s));
	assert_int_equal(fl_engine_build(s)->status, FL_RUN_NO_COMPILER);
	assert_null(fl_engine_run_result(s));
	log = fl_engine_events(s);
	last = fl_event_log_get(log, fl_event_log_count(log) - 1);
	assert_int_equal(last->kind, FL_EV_RAN);
	assert_non_null(strstr(last->reason, "did not compile"));
	fl_engine_close(s);
	fl_graph_free(g);
}

/* The state checker finds what it is there to find. */
static void test_state_checker_catches(void **state)
{
	fl_graph *g = t_load_sample("softmax");
	fl_engine_opts o = pipeline_opts(false);
	fl_session *s = open_graph(g, &o);
	fl_error err = {""};
	fl_program *p;
	int saved;

	(void)state;
	must(fl_engine_run(s, &err), &err, "run");
	must(fl_engine_check(s, &err), &err, "check of a good state");
	/* a copy of the state, broken in one place at a time */
	p = (fl_program *)fl_engine_program(s);
	saved = p->kernels[0].group;
	p->kernels[0].group = p->n_kernels > 1 ? p->kernels[1].group : -1;
	assert_int_equal(fl_engine_check(s, &err), -1);
	assert_non_null(strstr(err.msg, "fl_k0"));
	p->kernels[0].group = saved;
	must(fl_engine_check(s, &err), &err, "check after repair");
	{
		fl_partition *part = (fl_partition *)fl_engine_partition(s);
		int op = part->groups[p->kernels[0].group].members[0];
		int other = part->group_of[op];

		part->group_of[op] = other + 1;
		assert_int_equal(fl_engine_check(s, &err), -1);
		part->group_of[op] = other;
	}
	for (int k = 0; k < p->n_kernels; k++)
		for (int t = 0; t < p->kernels[k].n_tensors; t++) {
			fl_kernel_tensor *kt = &p->kernels[k].tensors[t];
			const fl_tensor *tn = &fl_engine_graph(s)->tensors[kt->tensor];

			if (tn->role == FL_ROLE_OUTPUT) {
				kt->place = FL_PLACE_REGISTER;
				assert_int_equal(fl_engine_check(s, &err), -1);
				assert_non_null(strstr(err.msg, tn->name));
				kt->place = FL_PLACE_GLOBAL;
			}
		}
	must(fl_engine_check(s, &err), &err, "check after repair");
	fl_engine_close(s);
	fl_graph_free(g);
}

static void *cancel_later(void *arg)
{
	usleep(200000);
	fl_engine_cancel(arg);
	return NULL;
}

/* Cancel from another thread stops a long run; the session can go on. */
static void test_cancel_run(void **state)
{
	fl_graph *g = t_load_sample("bert_encoder");
	fl_engine_opts o = pipeline_opts(true);
	fl_session *s;
	fl_error err = {""};
	pthread_t th;
	int rc;

	(void)state;
	o.strategy = FL_STRATEGY_UNFUSED;
	o.run.repeat = 50;
	s = open_graph(g, &o);
	must(fl_engine_goto(s, 0, &err), &err, "goto");
	assert_int_equal(pthread_create(&th, NULL, cancel_later, s), 0);
	rc = fl_engine_run(s, &err);
	pthread_join(th, NULL);
	assert_int_equal(rc, -1);
	assert_non_null(strstr(err.msg, "cancelled"));
	assert_false(fl_engine_done(s));
	must(fl_engine_goto(s, 3, &err), &err, "goto after cancel");
	assert_int_equal(fl_engine_position(s), 3);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* A custom op between two fused pieces (its own kernel, no schedule, the
 * reference code): stepping to any point equals running, under every
 * strategy. */
static void test_custom_steps_equal_cut(void **state)
{
	fl_graph *g = t_load_q("{'format':'fuselab-graph/1','name':'custom_steps',"
		"'tensors':{'x':{'shape':[8,64],'role':'input'},"
		"'y':{'shape':[8,64],'role':'output'}},'ops':["
		"{'name':'s','op':'softmax','in':['x'],'out':'p'},"
		"{'name':'c','op':'custom','in':['p'],'out':'cs'},"
		"{'name':'t','op':'tanh','in':['cs'],'out':'h'},"
		"{'name':'m','op':'mul','in':['h','x'],'out':'y'}]}");

	(void)state;
	for (int s = 0; s < FL_STRATEGY_COUNT; s++) {
		fl_engine_opts o = pipeline_opts(true);

		o.strategy = (fl_strategy)s;
		o.run.repeat = 0;	/* verification only */
		assert_steps_equal_cut(g, &o);
	}
	fl_graph_free(g);
}

/* The ladder: one call, a step per strategy, unfused comparison. */
static void test_ladder(void **state)
{
	static const fl_strategy list[] = {FL_STRATEGY_UNFUSED, FL_STRATEGY_XLA,
					   FL_STRATEGY_APOLLO_L1};
	/* chain8's 288 MiB through the sanitized interpreter take most of
	 * the test's time there: a small graph shows the same */
	fl_graph *g = t_load_sample(T_SANITIZED ? "apollo_fig3" : "chain8");
	fl_engine_opts o = pipeline_opts(true);
	fl_ladder l;
	fl_error err = {""};

	(void)state;
	assert_int_equal(fl_ladder_run(g, &o, list, 3, &l, &err), 0);
	assert_int_equal(l.n, 3);
	for (int i = 0; i < 3; i++) {
		assert_true(l.steps[i].ran);
		assert_true(l.steps[i].verified);
		assert_int_equal(l.steps[i].strategy, list[i]);
		assert_true(l.steps[i].speedup > 0);
		assert_true(l.steps[i].total_min <= l.steps[i].total_seconds);
		assert_true(l.steps[i].total_seconds <= l.steps[i].total_max);
		/* a speedup that is not a measured difference is called
		 * noise: the sign test over the paired rounds when there
		 * are enough, else overlapping ranges */
		if (i > 0 && l.steps[i].vs_unfused.s.n >= FL_TIMING_MIN_PAIRS)
			assert_int_equal(l.steps[i].label,
					 fl_timing_paired(&l.steps[i].vs_unfused));
		else if (i > 0)	/* one round: no spread, no verdict */
			assert_int_equal(l.steps[i].label, fl_timing_compare_n(
				l.steps[0].total_n, l.steps[0].total_min,
				l.steps[0].total_max, l.steps[i].total_n,
				l.steps[i].total_min, l.steps[i].total_max));
		assert_int_equal(l.steps[i].within_noise,
				 i > 0 && l.steps[i].label != FL_TIMING_FASTER &&
				 l.steps[i].label != FL_TIMING_SLOWER);
	}
	assert_true(l.steps[2].n_kernels < l.steps[0].n_kernels);
	/* a fused kernel knows what its ops took unfused */
	for (int k = 0; k < l.steps[2].n_kernels; k++)
		if (l.steps[2].kernels[k].n_ops > 1)
			assert_true(l.steps[2].kernels[k].unfused_seconds > 0);
	fl_ladder_free(&l);
	fl_graph_free(g);
}

FL_SUITE(pipeline,
	 cmocka_unit_test(test_every_sample_steps_equal_cut),
	 cmocka_unit_test(test_stitched_steps_equal_cut),
	 cmocka_unit_test(test_parallel_steps_equal_cut),
	 cmocka_unit_test(test_steps_reuse_memo),
	 cmocka_unit_test(test_run_pass_events),
	 cmocka_unit_test(test_missing_compiler_is_a_decision),
	 cmocka_unit_test(test_state_checker_catches),
	 cmocka_unit_test(test_cancel_run),
	 cmocka_unit_test(test_ladder),
	 cmocka_unit_test(test_custom_steps_equal_cut));
