/* The session: options, the pipeline of passes, and stepping by replay.
 *
 * The pipeline is the table `passes` below, in order.  A replay runs it
 * on a fresh copy of the input graph with a decision budget; the position
 * of a session is the number of decisions (= events) made.  The complete
 * run's log is computed once on the side to know the total and where each
 * pass ends. */
#include "engine.h"

#include <isl/ctx.h>
#include <isl/options.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "explain_impl.h"
#include "groups_impl.h"
#include "passes_impl.h"

typedef int (*pass_fn)(fl_state *st, fl_error *err);

static const struct {
	fl_pass pass;
	pass_fn run;
} passes[] = {
	{FL_PASS_PREPROCESS, fl_pass_preprocess},
	{FL_PASS_CLUSTER, fl_pass_cluster},
	{FL_PASS_OPEN, fl_pass_open},
	{FL_PASS_CLASSIFY, fl_pass_classify},
	{FL_PASS_CONSTRAIN, fl_pass_constrain},
	{FL_PASS_AGGREGATE, fl_pass_aggregate},
	{FL_PASS_LAYER1, fl_pass_layer1},
};

#define N_PASSES (int)(sizeof passes / sizeof passes[0])

struct fl_session {
	fl_graph *input;
	fl_engine_opts opts;
	isl_ctx *ctx;
	struct fl_classify_cache *cache;
	fl_state st;
	bool done;
	fl_pass cur_pass;
	fl_event_log *full;	/* complete run, NULL until needed */
	double t_open;
};

bool fl_state_decide(fl_state *st)
{
	if (st->budget == 0)
		return false;
	if (st->budget > 0)
		st->budget--;
	st->t_decide = fl_now();
	return true;
}

fl_event *fl_state_log(fl_state *st, fl_event_kind kind, const char *rule,
		       const char *const *ops, int n_ops, int group_a,
		       int group_b, const char *fmt, ...)
{
	char reason[FL_EVENT_REASON];
	fl_event *e;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof reason, fmt, ap);
	va_end(ap);
	e = fl_event_log_add(st->log, st->pass, kind, rule, ops, n_ops,
			     group_a, group_b, "%s", reason);
	if (e) {
		double now = fl_now();

		e->t_start = st->t_decide - st->t0;
		e->duration = now - st->t_decide;
	}
	return e;
}

void fl_engine_opts_default(fl_engine_opts *o)
{
	memset(o, 0, sizeof *o);
	fl_rules_default(&o->rules);
	o->preprocess = true;
	o->run_layer1 = false;
	fl_layer1_opts_default(&o->layer1);
}

void fl_engine_opts_for_strategy(const fl_engine_opts *base, fl_strategy s,
				 fl_engine_opts *out)
{
	*out = *base;
	out->run_layer1 = true;
	for (int i = 0; i < out->rules.n; i++) {
		fl_rule *r = &out->rules.rules[i];
		bool memory_bound = !strcmp(r->id, "R1") || !strcmp(r->id, "R2") ||
				    !strcmp(r->id, "R3") || !strcmp(r->id, "R4");

		if (s == FL_STRATEGY_UNFUSED ||
		    (s == FL_STRATEGY_XLA && !memory_bound))
			r->enabled = false;
	}
	if (s == FL_STRATEGY_UNFUSED)
		out->n_fuse = 0;	/* nothing fuses, whatever was asked */
}

static void state_clear(fl_state *st)
{
	fl_graph_free(st->graph);
	fl_event_log_free(st->log);
	fl_partition_free(&st->part);
	fl_groups_free(st->groups);
	fl_program_free(st->program);
	memset(st, 0, sizeof *st);
}

static int pass_index(fl_pass pass)
{
	for (int p = 0; p < N_PASSES; p++)
		if (passes[p].pass == pass)
			return p;
	return 0;
}

/* Drops the micro-graphs and kernels so that constrain and aggregate run
 * again with the feedback gathered so far. */
static int restart_partition(fl_state *st, fl_error *err)
{
	fl_partition *p = &st->part;

	if (st->n_feedback >= FL_MAX_CONSTRAINTS) {
		fl_error_set(err, "layer 1 asked for more than %d partition "
			     "splits", FL_MAX_CONSTRAINTS);
		return -1;
	}
	for (int i = 0; i < p->n_groups; i++)
		free(p->groups[i].members);
	free(p->groups);
	free(p->group_of);
	p->groups = NULL;
	p->group_of = NULL;
	p->n_groups = p->cap_groups = 0;
	fl_groups_free(st->groups);
	st->groups = NULL;
	fl_program_free(st->program);
	st->program = NULL;
	return 0;
}

int fl_state_feedback(fl_state *st, const char *a, const char *b,
		      const char *reason, fl_error *err)
{
	int n = st->n_feedback;

	if (n >= FL_MAX_CONSTRAINTS) {
		fl_error_set(err, "too many feedback splits");
		return -1;
	}
	snprintf(st->feedback[n].a, sizeof st->feedback[n].a, "%s", a);
	snprintf(st->feedback[n].b, sizeof st->feedback[n].b, "%s", b);
	snprintf(st->feedback_reason[n], sizeof st->feedback_reason[n], "%s",
		 reason);
	st->n_feedback++;
	fl_state_log(st, FL_EV_FEEDBACK, "feedback",
		     (const char *const[]){a, b}, 2, -1, -1,
		     "split the micro-graph at the merge of %s into %s and "
		     "partition again: %s", a, b, reason);
	return 0;
}

/* Replays the pipeline with a budget of `budget` decisions (< 0: all). */
static int replay(fl_session *s, long budget, fl_error *err)
{
	fl_state *st = &s->st;

	state_clear(st);
	st->graph = fl_graph_copy(s->input);
	st->log = fl_event_log_new();
	if (!st->graph || !st->log) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	st->opts = &s->opts;
	st->ctx = s->ctx;
	st->cache = s->cache;
	st->budget = budget;
	st->t0 = s->t_open;
	s->done = false;
	for (int p = 0; p < N_PASSES; p++) {
		int rc;

		if (passes[p].pass == FL_PASS_LAYER1 && !s->opts.run_layer1)
			break;
		st->pass = passes[p].pass;
		s->cur_pass = passes[p].pass;
		rc = passes[p].run(st, err);
		if (rc < 0)
			return -1;
		if (rc == FL_PASS_PAUSED)
			return fl_event_log_count(st->log);
		if (rc == FL_PASS_RESTART) {
			/* feedback: partition again from the constraints on */
			if (restart_partition(st, err) < 0)
				return -1;
			p = pass_index(FL_PASS_CONSTRAIN) - 1;
		}
	}
	s->done = true;
	s->cur_pass = FL_PASS_COUNT;
	return fl_event_log_count(st->log);
}

/* Checks that every op name in the constraints exists in g. */
static int check_pairs(const fl_graph *g, const fl_op_pair *p, int n,
		       const char *flag, fl_error *err)
{
	for (int i = 0; i < n; i++) {
		const char *names[2] = {p[i].a, p[i].b};

		for (int k = 0; k < 2; k++)
			if (fl_graph_find_op(g, names[k]) < 0) {
				fl_error_set(err, "%s %s,%s: no op named \"%s\"",
					     flag, p[i].a, p[i].b, names[k]);
				return -1;
			}
	}
	return 0;
}

fl_session *fl_engine_open(const fl_graph *g, const fl_engine_opts *o,
			   fl_error *err)
{
	fl_session *s = calloc(1, sizeof *s);

	if (!s) {
		fl_error_set(err, "out of memory");
		return NULL;
	}
	if (o)
		s->opts = *o;
	else
		fl_engine_opts_default(&s->opts);
	if (check_pairs(g, s->opts.never_fuse, s->opts.n_never, "--never-fuse",
			err) < 0 ||
	    check_pairs(g, s->opts.fuse, s->opts.n_fuse, "--fuse", err) < 0) {
		free(s);
		return NULL;
	}
	s->input = fl_graph_copy(g);
	s->ctx = isl_ctx_alloc();
	s->cache = fl_classify_cache_new();
	s->t_open = fl_now();
	if (!s->input || !s->ctx || !s->cache) {
		fl_error_set(err, "out of memory");
		fl_engine_close(s);
		return NULL;
	}
	/* The engine reports isl errors itself; isl must not print. */
	isl_options_set_on_error(s->ctx, ISL_ON_ERROR_CONTINUE);
	if (replay(s, 0, err) < 0) {
		fl_engine_close(s);
		return NULL;
	}
	return s;
}

void fl_engine_close(fl_session *s)
{
	if (!s)
		return;
	state_clear(&s->st);
	fl_event_log_free(s->full);
	fl_graph_free(s->input);
	fl_classify_cache_free(s->cache);
	if (s->ctx)
		isl_ctx_free(s->ctx);
	free(s);
}

int fl_engine_position(const fl_session *s)
{
	return fl_event_log_count(s->st.log);
}

bool fl_engine_done(const fl_session *s)
{
	return s->done;
}

fl_pass fl_engine_current_pass(const fl_session *s)
{
	return s->cur_pass;
}

int fl_engine_goto(fl_session *s, int k, fl_error *err)
{
	return replay(s, k < 0 ? 0 : k, err);
}

int fl_engine_run(fl_session *s, fl_error *err)
{
	return replay(s, -1, err);
}

int fl_engine_step(fl_session *s, fl_error *err)
{
	if (s->done)
		return fl_engine_position(s);
	return replay(s, fl_engine_position(s) + 1, err);
}

/* Computes the complete run's log once, without moving the session. */
static const fl_event_log *full_log(fl_session *s, fl_error *err)
{
	fl_state saved;
	bool done = s->done;
	fl_pass cur = s->cur_pass;

	if (s->full)
		return s->full;
	saved = s->st;
	memset(&s->st, 0, sizeof s->st);
	if (replay(s, -1, err) < 0) {
		state_clear(&s->st);
		s->st = saved;
		return NULL;
	}
	s->full = s->st.log;
	s->st.log = NULL;
	state_clear(&s->st);
	s->st = saved;
	s->done = done;
	s->cur_pass = cur;
	return s->full;
}

int fl_engine_total(fl_session *s, fl_error *err)
{
	const fl_event_log *full = full_log(s, err);

	return full ? fl_event_log_count(full) : -1;
}

const fl_event *fl_engine_peek(fl_session *s, fl_error *err)
{
	const fl_event_log *full = full_log(s, err);

	return full ? fl_event_log_get(full, fl_engine_position(s)) : NULL;
}

int fl_engine_step_pass(fl_session *s, fl_error *err)
{
	const fl_event_log *full = full_log(s, err);
	int pos = fl_engine_position(s), n, j;
	const fl_event *next;

	if (!full)
		return -1;
	n = fl_event_log_count(full);
	next = fl_event_log_get(full, pos);
	if (!next)
		return fl_engine_run(s, err);
	for (j = pos; j < n && fl_event_log_get(full, j)->pass == next->pass; j++)
		;
	return j == n ? fl_engine_run(s, err) : replay(s, j, err);
}

const fl_event_log *fl_engine_events(const fl_session *s)
{
	return s->st.log;
}

const fl_graph *fl_engine_graph(const fl_session *s)
{
	return s->st.graph;
}

const fl_graph *fl_engine_input_graph(const fl_session *s)
{
	return s->input;
}

const fl_partition *fl_engine_partition(const fl_session *s)
{
	return &s->st.part;
}

const fl_engine_opts *fl_engine_options(const fl_session *s)
{
	return &s->opts;
}

const fl_program *fl_engine_program(const fl_session *s)
{
	return s->st.program;
}

/* Options changed: forget the cached complete run and replay to where the
 * session was (or to the end if it was there). */
static int rerun(fl_session *s, int pos, bool was_done, fl_error *err)
{
	fl_event_log_free(s->full);
	s->full = NULL;
	return was_done ? fl_engine_run(s, err) : replay(s, pos, err);
}

static int add_pair(fl_op_pair *pairs, int *n, const char *a, const char *b,
		    fl_error *err)
{
	if (*n >= FL_MAX_CONSTRAINTS) {
		fl_error_set(err, "more than %d constraints", FL_MAX_CONSTRAINTS);
		return -1;
	}
	snprintf(pairs[*n].a, sizeof pairs[*n].a, "%s", a);
	snprintf(pairs[*n].b, sizeof pairs[*n].b, "%s", b);
	(*n)++;
	return 0;
}

/* Adds a user constraint through the API and re-runs to where we were. */
static int add_constraint(fl_session *s, fl_op_pair *pairs, int *n,
			  const char *a, const char *b, const char *flag,
			  fl_error *err)
{
	fl_op_pair p;

	snprintf(p.a, sizeof p.a, "%s", a);
	snprintf(p.b, sizeof p.b, "%s", b);
	if (check_pairs(s->input, &p, 1, flag, err) < 0 ||
	    add_pair(pairs, n, a, b, err) < 0)
		return -1;
	return rerun(s, fl_engine_position(s), s->done, err);
}

int fl_engine_never_fuse(fl_session *s, const char *a, const char *b,
			 fl_error *err)
{
	return add_constraint(s, s->opts.never_fuse, &s->opts.n_never, a, b,
			      "--never-fuse", err);
}

int fl_engine_fuse(fl_session *s, const char *a, const char *b,
		   fl_error *err)
{
	return add_constraint(s, s->opts.fuse, &s->opts.n_fuse, a, b, "--fuse",
			      err);
}

int fl_engine_feedback_split(fl_session *s, int merge_seq,
			     const char *reason, fl_error *err)
{
	const fl_event *e = fl_event_log_get(s->st.log, merge_seq);
	int n = s->opts.n_feedback;

	if (!e || e->kind != FL_EV_MERGED || e->n_ops < 2) {
		fl_error_set(err, "feedback: event #%d is not a merge", merge_seq);
		return -1;
	}
	if (add_pair(s->opts.feedback, &s->opts.n_feedback, e->ops[0],
		     e->ops[1], err) < 0)
		return -1;
	snprintf(s->opts.feedback_reason[n], sizeof s->opts.feedback_reason[n],
		 "%s", reason ? reason : "split by a later layer");
	return rerun(s, fl_engine_position(s), s->done, err);
}

int fl_engine_explain(fl_session *s, const char *a, const char *b,
		      char *buf, size_t n, fl_error *err)
{
	if (!s->done && fl_engine_run(s, err) < 0)
		return -1;
	return fl_explain(&s->st, a, b, buf, n, err);
}
