/* The explorer's background work (see explorer_impl.h).
 *
 * Two jobs, each on its own thread with its own copy of the graph and its
 * own engine sessions (so its own isl_ctx: isl is not shared between
 * threads):
 *   - the complete run of the current options, which gives the step
 *     count N of "step k/N", the tour's stops and the first step an
 *     override changed; the session at the cursor never waits for it;
 *   - the kernel run (`R`): the strategy ladder, compiled and run with
 *     progress, stopped by Esc through the run options' interrupt flag
 *     (the engine kills the child's process group and removes its work
 *     directory). */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "explorer_impl.h"

static void *full_main(void *arg)
{
	fl_full_job *j = arg;
	fl_error err = {""};
	fl_session *s = fl_engine_open(j->graph, &j->opts, &err);
	int total = s ? fl_engine_run(s, &err) : -1;
	fl_event_log *log = total >= 0 ? fl_event_log_copy(fl_engine_events(s), -1)
				       : NULL;

	if (total >= 0 && !log) {
		fl_error_set(&err, "out of memory");
		total = -1;
	}
	fl_engine_close(s);
	pthread_mutex_lock(&j->mu);
	j->total = total;
	j->log = log;
	j->err = err;
	j->done = true;
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

static void full_free(fl_full_job *j)
{
	if (!j)
		return;
	if (j->started && !j->joined)
		pthread_join(j->thread, NULL);
	pthread_mutex_destroy(&j->mu);
	fl_event_log_free(j->log);
	fl_graph_free(j->graph);
	free(j);
}

int fl_x_full_start(fl_explorer *x, fl_error *err)
{
	fl_full_job *j = calloc(1, sizeof *j);

	fl_x_full_stop(x);
	if (!j || !(j->graph = fl_graph_copy(x->graph))) {
		free(j);
		fl_error_set(err, "out of memory");
		return -1;
	}
	j->opts = x->opts;
	j->total = -1;
	pthread_mutex_init(&j->mu, NULL);
	if (pthread_create(&j->thread, NULL, full_main, j) != 0) {
		full_free(j);
		fl_error_set(err, "cannot start a thread");
		return -1;
	}
	j->started = true;
	x->full = j;
	return 0;
}

/* The complete run cannot be cancelled half-way (the engine polls only
 * the interrupt flag, between passes); it is bounded by the layer-1 time
 * budget, so stopping waits for it. */
void fl_x_full_stop(fl_explorer *x)
{
	full_free(x->full);
	x->full = NULL;
}

const fl_event_log *fl_x_full_log(fl_explorer *x, bool wait)
{
	fl_full_job *j = x->full;
	bool done;

	if (!j)
		return NULL;
	if (wait && !j->joined) {
		pthread_join(j->thread, NULL);
		j->joined = true;
	}
	pthread_mutex_lock(&j->mu);
	done = j->done;
	pthread_mutex_unlock(&j->mu);
	return done ? j->log : NULL;
}

int fl_x_total(const fl_explorer *x)
{
	fl_full_job *j = x->full;
	int total = -1;

	if (fl_engine_done(x->s))
		return fl_engine_position(x->s);
	if (!j)
		return -1;
	pthread_mutex_lock(&j->mu);
	if (j->done)
		total = j->total;
	pthread_mutex_unlock(&j->mu);
	return total;
}

static void run_progress(void *user, const char *phase, int k, int n)
{
	fl_run_job *j = user;

	pthread_mutex_lock(&j->mu);
	if (strcmp(phase, "strategy") == 0) {
		j->strategy = k;
		j->n_strategies = n;
	}
	snprintf(j->phase, sizeof j->phase, "%s", phase);
	j->k = k;
	j->n = n;
	pthread_mutex_unlock(&j->mu);
}

static void *run_main(void *arg)
{
	static const fl_strategy all[] = {FL_STRATEGY_UNFUSED, FL_STRATEGY_XLA,
					  FL_STRATEGY_APOLLO_L1,
					  FL_STRATEGY_APOLLO_L2,
					  FL_STRATEGY_APOLLO};
	fl_run_job *j = arg;
	fl_ladder ladder = {0};
	fl_error err = {""};
	int rc = fl_ladder_run(j->graph, &j->opts, all, FL_STRATEGY_COUNT,
			       &ladder, &err);

	pthread_mutex_lock(&j->mu);
	j->rc = rc;
	j->ladder = ladder;
	j->err = err;
	j->done = true;
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

static void run_free(fl_run_job *j)
{
	if (!j)
		return;
	if (j->started && !j->joined)
		pthread_join(j->thread, NULL);
	pthread_mutex_destroy(&j->mu);
	fl_ladder_free(&j->ladder);
	fl_graph_free(j->graph);
	free(j);
}

int fl_x_run_start(fl_explorer *x, fl_error *err)
{
	fl_run_job *j;

	if (x->run) {
		fl_error_set(err, "kernels are already running (Esc cancels)");
		return -1;
	}
	if (fl_graph_check_computable(x->graph, "run", err) < 0)
		return -1;
	j = calloc(1, sizeof *j);
	if (!j || !(j->graph = fl_graph_copy(x->graph))) {
		free(j);
		fl_error_set(err, "out of memory");
		return -1;
	}
	j->opts = x->opts;
	j->opts.run.progress = run_progress;
	j->opts.run.progress_user = j;
	j->opts.run.interrupt = &j->stop;
	j->started_at = fl_now();
	snprintf(j->phase, sizeof j->phase, "start");
	pthread_mutex_init(&j->mu, NULL);
	if (pthread_create(&j->thread, NULL, run_main, j) != 0) {
		run_free(j);
		fl_error_set(err, "cannot start a thread");
		return -1;
	}
	j->started = true;
	x->run = j;
	return 0;
}

void fl_x_run_cancel(fl_explorer *x)
{
	if (x->run)
		x->run->stop = 1;
}

/* One line on how the run went, for the message line. */
static void run_outcome(const fl_run_job *j, char *buf, size_t n)
{
	int ran = 0, verified = 0;

	if (j->rc < 0) {
		snprintf(buf, n, "kernel run failed: %s", j->err.msg);
		return;
	}
	for (int i = 0; i < j->ladder.n; i++) {
		ran += j->ladder.steps[i].ran;
		verified += j->ladder.steps[i].verified;
	}
	if (j->stop)
		snprintf(buf, n, "kernel run cancelled: no child process or "
			 "work directory left");
	else
		snprintf(buf, n, "kernels ran: %d of %d strategies verified "
			 "in %.1f s (timings: 7)", verified, j->ladder.n,
			 fl_now() - j->started_at);
	(void)ran;
}

bool fl_x_run_poll(fl_explorer *x)
{
	fl_run_job *j = x->run;
	bool done;

	if (!j)
		return false;
	pthread_mutex_lock(&j->mu);
	done = j->done;
	pthread_mutex_unlock(&j->mu);
	if (!done)
		return true;	/* progress moved: redraw */
	pthread_join(j->thread, NULL);
	j->joined = true;
	run_outcome(j, x->run_line, sizeof x->run_line);
	if (j->rc == 0 && !j->stop) {
		fl_ladder *l = malloc(sizeof *l);

		if (l) {
			*l = j->ladder;
			memset(&j->ladder, 0, sizeof j->ladder);
			if (x->ladder) {
				fl_ladder_free(x->ladder);
				free(x->ladder);
			}
			x->ladder = l;
		}
	}
	fl_x_say(x, j->rc == 0 && !j->stop ? FL_LOOK_OK : FL_LOOK_WARN, "%s",
		 x->run_line);
	run_free(j);
	x->run = NULL;
	return true;
}

void fl_x_run_progress(fl_explorer *x, char *buf, size_t n, double *frac)
{
	fl_run_job *j = x->run;
	const int n_all = FL_STRATEGY_COUNT;

	*frac = 0;
	if (!j) {
		snprintf(buf, n, "%s", "");
		return;
	}
	pthread_mutex_lock(&j->mu);
	{
		int s = j->strategy < n_all ? j->strategy : n_all - 1;
		double inner = j->n > 0 ? (double)j->k / j->n : 0;

		*frac = (s + (strcmp(j->phase, "strategy") ? inner : 0)) /
			n_all;
		/* "time" and "pairs" come from the one timing process that
		 * runs every strategy (the ladder times them together) */
		bool together = !strcmp(j->phase, "time") ||
				!strcmp(j->phase, "pairs");

		snprintf(buf, n,
			 "running kernels %.0f s: %s (%d/%d) %s %d/%d%s",
			 fl_now() - j->started_at, together ? "all, interleaved"
			 : fl_strategy_name((fl_strategy)s), s + 1, n_all,
			 j->phase, j->k, j->n,
			 j->stop ? "  cancelling..." : "  Esc cancels");
	}
	pthread_mutex_unlock(&j->mu);
}

void fl_x_run_stop(fl_explorer *x)
{
	if (!x->run)
		return;
	x->run->stop = 1;
	run_free(x->run);
	x->run = NULL;
}
