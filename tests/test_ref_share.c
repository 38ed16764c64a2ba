/* Bounded memory for the strategy ladder (ViT-B/16 once held a copy of
 * every intermediate tensor per strategy, and a copy of the graph's
 * constants per pass per strategy): the ladder runs the interpreter once
 * for all its strategies (ref_share.h), a share gives its values only to
 * sessions of the same graph and stops giving them once dropped, and a
 * forward-only session keeps no snapshots (nor, borrowing the graph, a
 * copy of it) yet still goes back right.
 * Small samples, no timing rounds: quick. */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#include "engine.h"
#include "ladder.h"
#include "ref_share.h"

#define SAMPLE "softmax"
#define OTHER_SAMPLE "layernorm"

static void verify_only(fl_engine_opts *o, fl_strategy s)
{
	fl_engine_opts_default(o);
	o->strategy = s;
	o->stop_after = FL_PASS_RUN;
	o->run_kernels = true;
	o->run.warmup = 0;
	o->run.repeat = 0;
}

/* A session of g through its run pass that verified; its stats in *es. */
static fl_session *verified(const fl_graph *g, const fl_engine_opts *o,
			    fl_engine_stats *es)
{
	fl_error err = {""};
	fl_session *s = fl_engine_open(g, o, &err);

	if (!s || fl_engine_run(s, &err) < 0)
		fail_msg("session: %s", err.msg);
	assert_non_null(fl_engine_run_result(s));
	assert_true(fl_engine_run_result(s)->verified);
	fl_engine_get_stats(s, es);
	return s;
}

/* Three strategies, one interpreter run; each still verified. */
static void test_ref_share_ladder_runs_interpreter_once(void **state)
{
	static const fl_strategy list[] = {FL_STRATEGY_UNFUSED, FL_STRATEGY_XLA,
					   FL_STRATEGY_APOLLO};
	fl_graph *g = t_load_sample(SAMPLE);
	fl_engine_opts o;
	fl_error err = {""};
	fl_ladder l;

	(void)state;
	verify_only(&o, FL_STRATEGY_APOLLO_L1);
	assert_int_equal(fl_ladder_run(g, &o, list, 3, &l, &err), 0);
	assert_int_equal(l.n, 3);
	for (int i = 0; i < 3; i++) {
		if (!l.steps[i].ran)
			fail_msg("%s: %s", fl_strategy_name(list[i]),
				 l.steps[i].error);
		assert_true(l.steps[i].verified);
	}
	assert_int_equal(l.reference_runs, 1);
	fl_ladder_free(&l);
	fl_graph_free(g);
}

/* Sessions of one graph read the share's values (none computes its
 * own); a session of another graph computes its own; after the drop a
 * session of the first graph computes its own again. */
static void test_ref_share_sessions(void **state)
{
	fl_graph *g = t_load_sample(SAMPLE), *h = t_load_sample(OTHER_SAMPLE);
	fl_ref_share *share = fl_ref_share_new();
	fl_session *a, *b, *c, *d;
	fl_engine_stats es;
	fl_engine_opts o;

	(void)state;
	assert_non_null(share);
	verify_only(&o, FL_STRATEGY_UNFUSED);
	o.ref_share = share;
	a = verified(g, &o, &es);
	assert_int_equal(es.references, 0);
	assert_int_equal(fl_ref_share_runs(share), 1);
	o.strategy = FL_STRATEGY_APOLLO;
	b = verified(g, &o, &es);
	assert_int_equal(es.references, 0);
	assert_int_equal(fl_ref_share_runs(share), 1);
	c = verified(h, &o, &es);	/* another graph */
	assert_int_equal(es.references, 1);
	assert_int_equal(fl_ref_share_runs(share), 1);
	fl_ref_share_drop(share);
	o.strategy = FL_STRATEGY_XLA;
	d = verified(g, &o, &es);
	assert_int_equal(es.references, 1);
	assert_int_equal(fl_ref_share_runs(share), 1);
	fl_engine_close(a);
	fl_engine_close(b);
	fl_engine_close(c);
	fl_engine_close(d);
	fl_ref_share_free(share);
	fl_graph_free(g);
	fl_graph_free(h);
}

/* forward_only: no snapshots, and going back to a step still gives the
 * event a session with snapshots has there; borrow_graph: no copy of
 * the graph, which the session leaves as it was. */
static void test_ref_share_forward_only(void **state)
{
	fl_graph *g = t_load_sample(SAMPLE);
	fl_engine_opts o;
	fl_error err = {""};
	fl_engine_stats es;
	fl_session *fwd, *full;
	int total, k, n_ops = g->n_ops, n_tensors = g->n_tensors;
	const fl_event *ef, *eg;

	(void)state;
	fl_engine_opts_default(&o);
	o.stop_after = FL_PASS_CODEGEN;
	full = fl_engine_open(g, &o, &err);
	o.forward_only = true;
	fwd = fl_engine_open(g, &o, &err);
	assert_non_null(full);
	assert_non_null(fwd);
	total = fl_engine_run(fwd, &err);
	assert_int_equal(fl_engine_run(full, &err), total);
	fl_engine_get_stats(fwd, &es);
	assert_int_equal(es.snapshots, 0);
	fl_engine_get_stats(full, &es);
	assert_true(es.snapshots > 0);
	assert_true(fl_engine_input_graph(full) != g);	/* a copy */
	k = total / 2;
	assert_int_equal(fl_engine_goto(fwd, k, &err), k);
	assert_int_equal(fl_engine_goto(full, k, &err), k);
	ef = fl_engine_peek(fwd, &err);
	assert_non_null(ef);
	eg = fl_engine_peek(full, &err);
	assert_non_null(eg);
	assert_string_equal(ef->reason, eg->reason);
	fl_engine_get_stats(fwd, &es);
	assert_int_equal(es.snapshots, 0);
	fl_engine_close(fwd);
	fl_engine_close(full);
	/* borrow_graph: the session reads g itself, also going back */
	o.borrow_graph = true;
	fwd = fl_engine_open(g, &o, &err);
	assert_non_null(fwd);
	assert_ptr_equal(fl_engine_input_graph(fwd), g);
	assert_int_equal(fl_engine_run(fwd, &err), total);
	assert_int_equal(fl_engine_goto(fwd, k, &err), k);
	ef = fl_engine_peek(fwd, &err);
	assert_non_null(ef);
	fl_engine_close(fwd);
	assert_int_equal(g->n_ops, n_ops);	/* unchanged */
	assert_int_equal(g->n_tensors, n_tensors);
	fl_graph_free(g);
}

FL_SUITE(ref_share,
	 cmocka_unit_test(test_ref_share_ladder_runs_interpreter_once),
	 cmocka_unit_test(test_ref_share_sessions),
	 cmocka_unit_test(test_ref_share_forward_only));
