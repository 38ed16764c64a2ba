/* The session: options, the pipeline of passes, and cheap stepping.
 *
 * The pipeline is the table `passes` below, in order.  A replay runs it
 * with a decision budget; the position of a session is the number of
 * decisions (= events) made.
 *
 * Snapshots: whenever a replay starts a pass, the state is copied (once
 * per position and pass) into a list ordered by position.  Going to step
 * k restores the last snapshot at or before k and replays from there with
 * a budget of k minus its position, so a step costs the copy plus the
 * replay of part of one pass.  A copy shares the graph's constant values
 * with the state it copies (reference counted and immutable, see
 * ir/tensor_values.c), so a snapshot costs the graph's structure, not its
 * weights.  The costly work inside passes is memoised
 * (memo_impl.h), so that replay never reschedules, regenerates, compiles
 * or runs anything twice.  Options that change decisions (user
 * constraints, feedback) drop the snapshots; the memo stays, as its keys
 * name everything its results depend on.
 *
 * The complete run's log is computed once on the side to know the total
 * and where each pass ends. */
#include "engine.h"

#include <isl/ctx.h>
#include <isl/options.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "explain_impl.h"
#include "groups_impl.h"
#include "machine.h"
#include "memo_impl.h"
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
	{FL_PASS_LAYER2, fl_pass_layer2},
	{FL_PASS_LAYER3, fl_pass_layer3},
	{FL_PASS_CODEGEN, fl_pass_codegen},
	{FL_PASS_COMPILE, fl_pass_compile},
	{FL_PASS_RUN, fl_pass_run},
};

#define N_PASSES (int)(sizeof passes / sizeof passes[0])

typedef struct snapshot {
	int pos;		/* decisions made before the pass */
	int pass;		/* index into passes[] about to run */
	fl_state st;
} snapshot;

struct fl_session {
	const fl_graph *input;	/* own_input, or the caller's graph
				   (opts.borrow_graph) */
	fl_graph *own_input;
	fl_engine_opts opts;	/* as given */
	fl_engine_opts eff;	/* with the strategy applied: what the
				   passes read */
	isl_ctx *ctx;
	struct fl_classify_cache *cache;
	fl_memo *memo;
	fl_state st;
	bool done;
	fl_pass cur_pass;
	fl_event_log *full;	/* complete run, NULL until needed */
	int n_snaps, cap_snaps;
	snapshot *snaps;	/* ordered by (pos, pass) */
	volatile int cancel;
	double t_open;
};

/* ---- options -------------------------------------------------------- */

void fl_engine_opts_default(fl_engine_opts *o)
{
	memset(o, 0, sizeof *o);
	o->strategy = FL_STRATEGY_APOLLO_L1;
	fl_rules_default(&o->rules);
	o->preprocess = true;
	o->stop_after = FL_PASS_AGGREGATE;
	o->run_kernels = false;
	fl_layer1_opts_default(&o->layer1);
	fl_run_opts_default(&o->run);
	fl_interp_opts_default(&o->interp);
}

void fl_engine_opts_effective(const fl_engine_opts *o, fl_engine_opts *out)
{
	fl_strategy s = o->strategy;

	*out = *o;
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
	/* Tiles for the GPU under the CUDA target: enough blocks for its
	 * multiprocessors, a tile within a block's shared memory. */
	if (out->run.target == FL_TARGET_CUDA && !out->layer1.machine)
		out->layer1.machine = fl_machine_cuda();
}

/* Whether pass p runs under the options. */
static bool pass_enabled(const fl_engine_opts *o, fl_pass p)
{
	if (p > o->stop_after)
		return false;
	if (p == FL_PASS_COMPILE || p == FL_PASS_RUN)
		return o->run_kernels;
	return true;
}

static int pass_index(fl_pass pass)
{
	for (int p = 0; p < N_PASSES; p++)
		if (passes[p].pass == pass)
			return p;
	return 0;
}

/* ---- snapshots ------------------------------------------------------ */

static void snapshots_drop(fl_session *s)
{
	for (int i = 0; i < s->n_snaps; i++)
		fl_state_clear(&s->snaps[i].st);
	s->n_snaps = 0;
}

static bool snap_before(const snapshot *a, int pos, int pass)
{
	return a->pos < pos || (a->pos == pos && a->pass < pass);
}

/* Keeps a copy of st as the state before pass p at position pos, unless
 * one is kept already.  Running out of memory only costs speed. */
static void snapshot_take(fl_session *s, const fl_state *st, int pos, int p)
{
	int at = s->n_snaps;
	snapshot *n;

	if (s->opts.forward_only)
		return;
	while (at > 0 && !snap_before(&s->snaps[at - 1], pos, p))
		at--;
	if (at < s->n_snaps && s->snaps[at].pos == pos && s->snaps[at].pass == p)
		return;
	if (s->n_snaps == s->cap_snaps) {
		int cap = s->cap_snaps ? 2 * s->cap_snaps : 16;
		snapshot *g = realloc(s->snaps, (size_t)cap * sizeof *g);

		if (!g)
			return;
		s->snaps = g;
		s->cap_snaps = cap;
	}
	n = &s->snaps[at];
	memmove(n + 1, n, (size_t)(s->n_snaps - at) * sizeof *n);
	if (fl_state_copy(&n->st, st) < 0) {
		memmove(n, n + 1, (size_t)(s->n_snaps - at) * sizeof *n);
		return;
	}
	n->pos = pos;
	n->pass = p;
	s->n_snaps++;
}

/* The last snapshot at or before position k, or NULL. */
static const snapshot *snapshot_for(const fl_session *s, int k)
{
	for (int i = s->n_snaps - 1; i >= 0; i--)
		if (s->snaps[i].pos <= k)
			return &s->snaps[i];
	return NULL;
}

/* ---- replay --------------------------------------------------------- */

/* The state at the start of the pipeline. */
static int state_start(fl_session *s, fl_error *err)
{
	fl_state *st = &s->st;

	st->graph = fl_graph_copy(s->input);
	st->log = fl_event_log_new();
	if (!st->graph || !st->log) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	/* a borrowed input's constants were copied; share them from here */
	if (fl_graph_share_values(st->graph, err) < 0)
		return -1;
	st->opts = &s->eff;
	st->ctx = s->ctx;
	st->cache = s->cache;
	st->memo = s->memo;
	st->t0 = s->t_open;
	return 0;
}

/* Drops the micro-graphs and kernels so that constrain and aggregate run
 * again with the feedback gathered so far. */
static int restart_partition(fl_state *st, fl_error *err)
{
	fl_partition *p = &st->part;

	if (st->n_feedback >= FL_MAX_FEEDBACK) {
		fl_error_set(err, "layer 1 asked for more than %d partition "
			     "splits", FL_MAX_FEEDBACK);
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

/* In the sanitizer build every pass is followed by the state checker. */
static int check_after_pass(const fl_state *st, fl_error *err)
{
#ifdef FL_CHECK_STATE
	if (fl_state_check(st, err) < 0) {
		fl_error_prefix(err, "state check after %s",
				fl_pass_name(st->pass));
		return -1;
	}
#else
	(void)st;
	(void)err;
#endif
	return 0;
}

/* Runs the pipeline from pass index p0 on s->st with a budget of
 * `budget` decisions (< 0: all). */
static int run_from(fl_session *s, int p0, long budget, fl_error *err)
{
	fl_state *st = &s->st;

	st->budget = budget;
	s->done = false;
	s->cancel = 0;
	for (int p = p0; p < N_PASSES; p++) {
		int pos = fl_event_log_count(st->log), rc;

		if (!pass_enabled(&s->eff, passes[p].pass))
			continue;
		if (s->eff.run.interrupt && *s->eff.run.interrupt) {
			fl_error_set(err, "interrupted before %s",
				     fl_pass_name(passes[p].pass));
			return -1;
		}
		snapshot_take(s, st, pos, p);
		st->pass = passes[p].pass;
		s->cur_pass = passes[p].pass;
		rc = passes[p].run(st, err);
		if (rc < 0)
			return -1;
		if (rc == FL_PASS_PAUSED)
			return fl_event_log_count(st->log);
		if (check_after_pass(st, err) < 0)
			return -1;
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

/* Puts the session at step k (< 0: the end) from the best snapshot. */
static int replay(fl_session *s, long k, fl_error *err)
{
	const snapshot *snap = snapshot_for(s, k < 0 ? 0x7fffffff : (int)k);

	fl_state_clear(&s->st);
	if (!snap)
		return state_start(s, err) < 0 ? -1 : run_from(s, 0, k, err);
	if (fl_state_copy(&s->st, &snap->st) < 0) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	return run_from(s, snap->pass, k < 0 ? -1 : k - snap->pos, err);
}

/* ---- opening and closing ------------------------------------------- */

/* Whether `name` names an op of g, or a primitive that opening g's
 * compound ops makes (constraints may name either: the explorer marks
 * the primitives it shows).  *opened is g opened, made on first need. */
static bool names_an_op(const fl_graph *g, fl_graph **opened, const char *name)
{
	fl_error ignored;

	if (fl_graph_find_op(g, name) >= 0)
		return true;
	if (!*opened)
		*opened = fl_graph_expand_compounds(g, &ignored);
	return *opened && fl_graph_find_op(*opened, name) >= 0;
}

/* Checks that every op name in the constraints exists. */
static int check_pairs(const fl_graph *g, fl_graph **opened,
		       const fl_op_pair *p, int n, const char *flag,
		       fl_error *err)
{
	for (int i = 0; i < n; i++) {
		const char *names[2] = {p[i].a, p[i].b};

		for (int k = 0; k < 2; k++)
			if (!names_an_op(g, opened, names[k])) {
				fl_error_set(err, "%s %s,%s: no op named \"%s\"",
					     flag, p[i].a, p[i].b, names[k]);
				return -1;
			}
	}
	return 0;
}

static int check_constraints(const fl_graph *g, const fl_engine_opts *o,
			     fl_error *err)
{
	fl_graph *opened = NULL;
	int r = check_pairs(g, &opened, o->never_fuse, o->n_never,
			    "--never-fuse", err) < 0 ||
		check_pairs(g, &opened, o->fuse, o->n_fuse, "--fuse", err) < 0;

	fl_graph_free(opened);
	return r ? -1 : 0;
}

/* A compiled program's directory goes when the session closes. */
static void free_build(void *value, void *ctx)
{
	fl_build_remove(value, ctx);
	free(value);
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
	if (check_constraints(g, &s->opts, err) < 0) {
		free(s);
		return NULL;
	}
	fl_engine_opts_effective(&s->opts, &s->eff);
	s->eff.run.cancel = &s->cancel;
	if (s->opts.borrow_graph)
		s->input = g;
	else
		s->input = s->own_input = fl_graph_copy(g);
	s->ctx = isl_ctx_alloc();
	s->cache = fl_classify_cache_new();
	s->memo = fl_memo_new(free_build, &s->eff.run);
	s->t_open = fl_now();
	if (!s->input || !s->ctx || !s->cache || !s->memo) {
		fl_error_set(err, "out of memory");
		fl_engine_close(s);
		return NULL;
	}
	/* Every state and snapshot copied from our own input shares its
	 * constants instead of copying them (ir/tensor_values.c). */
	if (s->own_input && fl_graph_share_values(s->own_input, err) < 0) {
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
	fl_state_clear(&s->st);
	snapshots_drop(s);
	free(s->snaps);
	fl_event_log_free(s->full);
	/* kernels in the memo hold isl objects of the context */
	fl_memo_free(s->memo);
	fl_graph_free(s->own_input);
	fl_classify_cache_free(s->cache);
	if (s->ctx)
		isl_ctx_free(s->ctx);
	free(s);
}

/* ---- moving --------------------------------------------------------- */

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

void fl_engine_cancel(fl_session *s)
{
	s->cancel = 1;
}

const char *fl_engine_workdir(const fl_session *s)
{
	return s->memo->workdir;
}

int fl_engine_goto(fl_session *s, int k, fl_error *err)
{
	return replay(s, k < 0 ? 0 : k, err);
}

int fl_engine_run(fl_session *s, fl_error *err)
{
	if (s->done)
		return fl_engine_position(s);
	return replay(s, -1, err);
}

int fl_engine_step(fl_session *s, fl_error *err)
{
	if (s->done)
		return fl_engine_position(s);
	return replay(s, fl_engine_position(s) + 1, err);
}

int fl_engine_step_back(fl_session *s, fl_error *err)
{
	int pos = fl_engine_position(s);

	return replay(s, pos > 0 ? pos - 1 : 0, err);
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
		fl_state_clear(&s->st);
		s->st = saved;
		return NULL;
	}
	s->full = s->st.log;
	s->st.log = NULL;
	fl_state_clear(&s->st);
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

/* ---- reading the state ---------------------------------------------- */

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

const struct fl_par_analysis *fl_engine_parallel(const fl_session *s)
{
	return s->st.par;
}

const char *fl_engine_kernel_source(const fl_session *s, int k)
{
	return k >= 0 && k < s->st.n_src ? s->st.kernel_src[k] : NULL;
}

const char *fl_engine_source(const fl_session *s)
{
	return s->st.unit_src;
}

const fl_build *fl_engine_build(const fl_session *s)
{
	return s->st.build;
}

const fl_run_result *fl_engine_run_result(const fl_session *s)
{
	return s->st.run;
}

void fl_engine_get_stats(const fl_session *s, fl_engine_stats *out)
{
	out->schedules = fl_memo_map_count(s->memo->layer1);
	out->kernels_generated = fl_memo_map_count(s->memo->kernel_code);
	out->compiles = fl_memo_map_count(s->memo->builds);
	out->runs = fl_memo_map_count(s->memo->runs);
	out->snapshots = s->n_snaps;
	out->references = s->memo->ref_runs;
	out->snapshot_value_bytes = 0;
	for (int i = 0; i < s->n_snaps; i++)
		out->snapshot_value_bytes +=
			fl_graph_owned_value_bytes(s->snaps[i].st.graph);
}

int fl_engine_check(const fl_session *s, fl_error *err)
{
	return fl_state_check(&s->st, err);
}

/* ---- changing the options ------------------------------------------- */

/* Options changed: forget the snapshots and the cached complete run and
 * replay to where the session was (or to the end if it was there). */
static int rerun(fl_session *s, int pos, bool was_done, fl_error *err)
{
	fl_engine_opts_effective(&s->opts, &s->eff);
	s->eff.run.cancel = &s->cancel;
	snapshots_drop(s);
	fl_event_log_free(s->full);
	s->full = NULL;
	return was_done ? replay(s, -1, err) : replay(s, pos, err);
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
	fl_graph *opened = NULL;
	int bad;

	snprintf(p.a, sizeof p.a, "%s", a);
	snprintf(p.b, sizeof p.b, "%s", b);
	bad = check_pairs(s->input, &opened, &p, 1, flag, err) < 0;
	fl_graph_free(opened);
	if (bad || add_pair(pairs, n, a, b, err) < 0)
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
