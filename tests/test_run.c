/* The strategy ladder end to end: every sample, under every strategy, is
 * partitioned, scheduled by layer 1, compiled, run in a child process and
 * verified against the reference interpreter.  The sanitizer pass runs a
 * few small samples only: generated code is not instrumented there, and
 * the interpreter under ASan would make the full ladder slow. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "loader.h"
#include "runner.h"
#include "test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define FULL_LADDER 0
#else
#define FULL_LADDER 1
#endif

static bool log_has(const fl_session *s, fl_event_kind kind, const char *text)
{
	const fl_event_log *log = fl_engine_events(s);

	for (int i = 0; i < fl_event_log_count(log); i++) {
		const fl_event *e = fl_event_log_get(log, i);

		if (e->kind == kind && strstr(e->reason, text))
			return true;
	}
	return false;
}

/* Runs strategy s on g with base options; returns the kernel count.  When
 * `expect` is given, an event of kind `kind` must contain it. */
static int verify_expect(const fl_graph *g, const fl_engine_opts *base,
			 fl_strategy s, fl_event_kind kind, const char *expect)
{
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *ses;
	fl_values *ref;
	fl_run_opts ro;
	fl_run_result r;
	int n;

	o = *base;
	o.strategy = s;
	o.stop_after = FL_PASS_LAYER1;
	ses = fl_engine_open(g, &o, &err);
	if (!ses || fl_engine_run(ses, &err) < 0 || !fl_engine_program(ses))
		fail_msg("%s/%s: %s", g->name, fl_strategy_name(s), err.msg);
	ref = fl_interp_run(fl_engine_graph(ses), NULL, &err);
	assert_non_null(ref);
	fl_run_opts_default(&ro);
	ro.warmup = 0;
	ro.repeat = 1;
	memset(&r, 0, sizeof r);
	assert_int_equal(fl_run_program(fl_engine_program(ses), ref, &ro, &r, &err), 0);
	if (r.status != FL_RUN_OK || !r.verified)
		fail_msg("%s under %s: %s: %s", g->name, fl_strategy_name(s),
			 fl_run_status_name(r.status), r.message);
	n = fl_engine_program(ses)->n_kernels;
	if (expect && !log_has(ses, kind, expect))
		fail_msg("%s under %s: no %s event with \"%s\"", g->name,
			 fl_strategy_name(s), fl_event_kind_name(kind), expect);
	fl_run_result_free(&r);
	fl_values_free(ref);
	fl_engine_close(ses);
	return n;
}

static int verify(const fl_graph *g, const fl_engine_opts *base, fl_strategy s)
{
	return verify_expect(g, base, s, FL_EV_MERGED, NULL);
}

static void verify_ladder(const char *name)
{
	fl_graph *g = t_load_sample(name);
	fl_engine_opts base;
	int k[FL_STRATEGY_COUNT];

	fl_engine_opts_default(&base);
	for (int s = 0; s < FL_STRATEGY_COUNT; s++)
		k[s] = verify(g, &base, (fl_strategy)s);
	/* fusing never adds kernels */
	assert_true(k[FL_STRATEGY_XLA] <= k[FL_STRATEGY_UNFUSED]);
	assert_true(k[FL_STRATEGY_APOLLO_L1] <= k[FL_STRATEGY_XLA]);
	fl_graph_free(g);
}

static void test_small_samples_verify(void **state)
{
	(void)state;
	verify_ladder("apollo_fig3");
	verify_ladder("apollo_listing1");
	verify_ladder("micro2020_fig1");
}

static void test_every_sample_verifies(void **state)
{
	DIR *d;
	struct dirent *de;

	(void)state;
	if (!FULL_LADDER) {
		/* sanitizer pass: two representative samples */
		verify_ladder("apollo_fig1");
		verify_ladder("layernorm");
		return;
	}
	d = opendir(t_samples_dir());
	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char name[256];

		if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(name, sizeof name, "%.*s", (int)(len - 5), de->d_name);
		verify_ladder(name);
	}
	closedir(d);
}

/* With the stencil-chains rules the image pipelines fuse their stencil
 * stages into fewer kernels and still verify. */
static void test_stencil_chains_verify(void **state)
{
	const char *names[] = {"unsharp_mask", "harris_corner"};
	char path[1024];
	fl_error err = {""};

	(void)state;
	for (int i = 0; i < (FULL_LADDER ? 2 : 1); i++) {
		fl_graph *g = t_load_sample(names[i]);
		fl_engine_opts dflt, stencil;
		int plain, chained;

		fl_engine_opts_default(&dflt);
		fl_engine_opts_default(&stencil);
		snprintf(path, sizeof path, "%s/rules/stencil-chains.json",
			 t_samples_dir());
		assert_int_equal(fl_rules_load(&stencil.rules, path, &err), 0);
		plain = verify(g, &dflt, FL_STRATEGY_APOLLO_L1);
		/* the stencil stages fuse through overlapped tiles */
		chained = verify_expect(g, &stencil, FL_STRATEGY_APOLLO_L1,
					FL_EV_EXTENDED, "through an extension node");
		if (chained >= plain)
			fail_msg("%s: %d kernels with stencil chains, %d without",
				 names[i], chained, plain);
		fl_graph_free(g);
	}
}

/* A scheduler budget too small for any multi-op micro-graph: layer 1
 * splits micro-graphs through feedback, and the result still verifies. */
static void test_tiny_budget_still_verifies(void **state)
{
	fl_graph *g = t_load_sample("apollo_fig3");
	fl_engine_opts o;
	int tiny, normal;

	(void)state;
	fl_engine_opts_default(&o);
	normal = verify(g, &o, FL_STRATEGY_APOLLO_L1);
	o.layer1.sched_budget = 1;
	tiny = verify_expect(g, &o, FL_STRATEGY_APOLLO_L1, FL_EV_FEEDBACK,
			     "ran out of its budget");
	assert_true(tiny > normal);
	fl_graph_free(g);
}

FL_SUITE(run,
	 cmocka_unit_test(test_small_samples_verify),
	 cmocka_unit_test(test_tiny_budget_still_verifies),
	 cmocka_unit_test(test_every_sample_verifies),
	 cmocka_unit_test(test_stencil_chains_verify));
