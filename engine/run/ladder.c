/* The strategy ladder (see ladder.h). */
#include "ladder.h"

#include <stdlib.h>
#include <string.h>

/* Seconds each op's kernel took under unfused (one op per kernel). */
typedef struct unfused_times {
	int n_ops;
	double *op_seconds;	/* -1 when unknown */
} unfused_times;

static void record_unfused(unfused_times *u, const fl_program *p,
			   const fl_run_result *r)
{
	u->n_ops = p->graph->n_ops;
	u->op_seconds = malloc(((size_t)u->n_ops + 1) * sizeof *u->op_seconds);
	if (!u->op_seconds)
		return;
	for (int i = 0; i < u->n_ops; i++)
		u->op_seconds[i] = -1;
	for (int k = 0; k < p->n_kernels && k < r->n_kernels; k++)
		for (int i = 0; i < p->kernels[k].n_ops; i++)
			u->op_seconds[p->kernels[k].ops[i]] =
				r->kernels[k].seconds / p->kernels[k].n_ops;
}

static double unfused_seconds(const unfused_times *u, const fl_kernel *k)
{
	double s = 0;

	if (!u->op_seconds)
		return -1;
	for (int i = 0; i < k->n_ops; i++) {
		if (k->ops[i] >= u->n_ops || u->op_seconds[k->ops[i]] < 0)
			return -1;
		s += u->op_seconds[k->ops[i]];
	}
	return s;
}

/* Copies what the session decided and measured into step st. */
static int collect(fl_session *s, const unfused_times *u, fl_ladder_step *st)
{
	const fl_program *p = fl_engine_program(s);
	const fl_build *b = fl_engine_build(s);
	const fl_run_result *r = fl_engine_run_result(s);

	st->n_kernels = p->n_kernels;
	st->kernels = calloc((size_t)p->n_kernels + 1, sizeof *st->kernels);
	if (!st->kernels)
		return -1;
	st->status = b->status;
	snprintf(st->message, sizeof st->message, "%s", b->message);
	if (fl_engine_options(s)->run.keep)
		snprintf(st->workdir, sizeof st->workdir, "%s", b->workdir);
	for (int k = 0; k < p->n_kernels; k++) {
		const fl_kernel *kn = &p->kernels[k];
		fl_ladder_kernel *lk = &st->kernels[k];

		snprintf(lk->name, sizeof lk->name, "%s", kn->name);
		lk->n_ops = kn->n_ops;
		snprintf(lk->first_op, sizeof lk->first_op, "%s",
			 p->graph->ops[kn->ops[0]].name);
		snprintf(lk->last_op, sizeof lk->last_op, "%s",
			 p->graph->ops[kn->ops[kn->n_ops - 1]].name);
		lk->unfused_seconds = kn->n_ops > 1 ? unfused_seconds(u, kn) : -1;
		if (r && k < r->n_kernels)
			lk->r = r->kernels[k];
	}
	if (!r)
		return 0;
	st->status = r->status;
	snprintf(st->message, sizeof st->message, "%s", r->message);
	st->total_seconds = r->total_seconds;
	st->total_min = r->total_min_seconds;
	st->total_max = r->total_max_seconds;
	st->max_abs = r->max_abs;
	st->max_rel = r->max_rel;
	st->verified = r->verified;
	return 0;
}

static bool interrupted(const fl_engine_opts *o)
{
	return o->run.interrupt && *o->run.interrupt;
}

/* What an interrupt stopped in session s (closed next, which removes its
 * work directory: the interrupt overrides keep). */
static void note_interrupt(fl_session *s, fl_ladder_step *st)
{
	fl_pass p = fl_engine_current_pass(s);
	const char *dir = fl_engine_workdir(s);

	st->interrupted = true;
	if (dir[0])
		snprintf(st->stopped, sizeof st->stopped, "%s",
			 p == FL_PASS_RUN ? "run" : "compiler");
	snprintf(st->removed, sizeof st->removed, "%s", dir);
}

/* One strategy: a session through the run pass. */
static int run_step(const fl_graph *g, const fl_engine_opts *base,
		    fl_strategy strategy, unfused_times *u, fl_ladder_step *st)
{
	fl_engine_opts o = *base;
	fl_error err = {""};
	fl_session *s;
	int rc = 0;

	o.strategy = strategy;
	o.stop_after = FL_PASS_RUN;
	o.run_kernels = true;
	st->strategy = strategy;
	s = fl_engine_open(g, &o, &err);
	if (!s || fl_engine_run(s, &err) < 0) {
		snprintf(st->error, sizeof st->error, "%s", err.msg);
		if (interrupted(base) && s)
			note_interrupt(s, st);
		else if (interrupted(base))
			st->interrupted = true;
		/* what it decided before failing belongs in a trace too */
		if (s && !(st->log = fl_event_log_copy(fl_engine_events(s), -1)))
			rc = -1;
		fl_engine_close(s);	/* removes the work directory */
		return rc;
	}
	st->ran = true;
	st->log = fl_event_log_copy(fl_engine_events(s), -1);
	if (!st->log || collect(s, u, st) < 0)
		rc = -1;
	else if (strategy == FL_STRATEGY_UNFUSED && fl_engine_run_result(s) &&
		 !u->op_seconds)
		record_unfused(u, fl_engine_program(s), fl_engine_run_result(s));
	fl_engine_close(s);
	return rc;
}

int fl_ladder_run(const fl_graph *g, const fl_engine_opts *base,
		  const fl_strategy *list, int n, fl_ladder *out,
		  fl_error *err)
{
	unfused_times u = {0, NULL};
	const fl_ladder_step *unfused = NULL;

	memset(out, 0, sizeof *out);
	out->steps = calloc((size_t)n + 1, sizeof *out->steps);
	if (!out->steps) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int i = 0; i < n && !(i > 0 && out->steps[i - 1].interrupted);
	     i++) {
		fl_ladder_step *st = &out->steps[i];

		if (base->run.progress)
			base->run.progress(base->run.progress_user, "strategy", i,
					   n);
		out->n = i + 1;
		if (run_step(g, base, list[i], &u, st) < 0) {
			free(u.op_seconds);
			fl_error_set(err, "out of memory");
			return -1;
		}
		if (list[i] == FL_STRATEGY_UNFUSED && st->total_seconds > 0)
			unfused = st;
		if (unfused && st->total_seconds > 0) {
			st->speedup = unfused->total_seconds / st->total_seconds;
			st->within_noise = st != unfused &&
					   st->total_min <= unfused->total_max &&
					   unfused->total_min <= st->total_max;
		}
	}
	free(u.op_seconds);
	return 0;
}

void fl_ladder_free(fl_ladder *l)
{
	for (int i = 0; i < l->n; i++) {
		free(l->steps[i].kernels);
		fl_event_log_free(l->steps[i].log);
	}
	free(l->steps);
	memset(l, 0, sizeof *l);
}
