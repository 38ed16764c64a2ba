/* The run pass (DESIGN 1.6): the compiled program run in a child process
 * on the interpreter's inputs, every kernel checked against the reference
 * values and timed, every graph output checked after a run from the
 * inputs alone (runner.h says how).
 *
 * Needs: st->build (compile), st->program.  Changes: st->run.
 * Decisions, e.g.
 *     ran       fl_k2 (3 ops): 24.0 MiB of global traffic;
 *               median 1.234 ms, min 1.200 ms, max 1.310 ms, 10 runs
 *     verified  fl_k2: pass, max abs err 2.4e-07, rel 1.1e-07
 *     verified  output y: pass, max abs err 3.0e-07, rel 2.2e-07
 * one "ran" and one "verified" per kernel, then one "verified" per graph
 * output; a single "ran" when there is nothing to run (the program did not
 * compile) or the run failed as a whole (crash, time limit).  The times
 * are measurements of the event, apart from its reason (events.h).
 *
 * The run happens at the first decision and is memoised under the unit's
 * text and the run options, so that stepping through these decisions runs
 * the program once.  A cancelled run is an error ("cancelled"). */
#include <stdlib.h>
#include <string.h>

#include "memo_impl.h"
#include "passes_impl.h"
#include "ref_share.h"

/* The run's memory limit: the run options', else the interpreter's
 * (--max-memory bounds the whole program, not only the interpreter). */
static int64_t run_max_bytes(const fl_state *st)
{
	return st->opts->run.max_bytes > 0 ? st->opts->run.max_bytes
					   : st->opts->interp.max_bytes;
}

static char *run_key(const fl_state *st)
{
	const fl_run_opts *o = &st->opts->run;
	fl_strbuf k = {0};

	fl_strbuf_printf(&k, "warmup %d repeat %d timeout %d atol %.17g rtol "
		      "%.17g seed %llu\n", o->warmup, o->repeat, o->timeout_s,
		      o->atol, o->rtol, (unsigned long long)st->opts->interp.seed);
	fl_strbuf_printf(&k, "max bytes %lld pin %d target %s\n",
			 (long long)run_max_bytes(st), (int)o->pin,
			 fl_target_name(o->target));
	fl_strbuf_printf(&k, "%s", st->unit_src);
	return fl_strbuf_take(&k);
}

/* The interpreter's values of every tensor: from the options' share when
 * it holds this graph's (asked anew each time, as its owner may drop
 * them: never kept beyond the run that reads them), else once per
 * session. */
static const fl_values *reference(fl_state *st, fl_error *err)
{
	fl_ref_share *share = st->opts->ref_share;
	fl_error e = {""};
	const fl_values *v;

	if (!st->memo->ref && share) {
		v = fl_ref_share_values(share, st->graph, &st->opts->interp, &e);
		if (v)
			return v;
		if (e.msg[0]) {	/* the interpreter failed */
			fl_error_set(err, "reference values: %s", e.msg);
			return NULL;
		}
	}
	if (!st->memo->ref) {
		st->memo->ref_runs++;
		st->memo->ref = fl_interp_run(st->graph, &st->opts->interp, err);
		if (!st->memo->ref)
			fl_error_prefix(err, "reference values");
	}
	return st->memo->ref;
}

/* The run's result: from the memo, or run now. */
static const fl_run_result *result_of(fl_state *st, fl_error *err)
{
	char *key = run_key(st);
	fl_run_result *r = key ? fl_memo_map_get(st->memo->runs, key) : NULL;
	const fl_values *ref;
	fl_run_opts ro;

	if (r || !key) {
		free(key);
		if (!r)
			fl_error_set(err, "out of memory");
		return r;
	}
	ref = reference(st, err);
	r = calloc(1, sizeof *r);
	ro = st->opts->run;
	ro.max_bytes = run_max_bytes(st);
	if (!ref || !r ||
	    fl_run_build(st->build, st->program, ref, &ro, r, err) < 0) {
		if (ref && !r)
			fl_error_set(err, "out of memory");
		free(r);
		free(key);
		return NULL;
	}
	if (r->status == FL_RUN_CANCELLED) {
		fl_error_set(err, "cancelled while running");
		fl_run_result_free(r);
		free(r);
		free(key);
		return NULL;
	}
	if (fl_memo_map_put(st->memo->runs, key, r) < 0) {
		fl_error_set(err, "out of memory");
		r = NULL;
	}
	free(key);
	return r;
}

static int log_ran(fl_state *st, int k)
{
	const fl_kernel *kn = &st->program->kernels[k];
	const fl_kernel_result *kr = &st->run->kernels[k];
	const char **names = fl_state_op_names(st, kn->ops, kn->n_ops);
	fl_event *e = NULL;

	if (names)
		e = fl_state_log(st, FL_EV_RAN, "", names, kn->n_ops, kn->group,
				 -1, "%s (%d op%s): %.1f MiB of global traffic",
				 kn->name, kn->n_ops, kn->n_ops == 1 ? "" : "s",
				 (double)kr->bytes / (1024.0 * 1024.0));
	free(names);
	if (!e)
		return -1;
	e->n_measured = 4;
	e->measured[0] = kr->seconds;
	e->measured[1] = kr->min_seconds;
	e->measured[2] = kr->max_seconds;
	e->measured[3] = kr->n_timed;
	return 0;
}

static int log_kernel_verified(fl_state *st, int k)
{
	const fl_kernel *kn = &st->program->kernels[k];
	const fl_kernel_result *kr = &st->run->kernels[k];
	const char **names = fl_state_op_names(st, kn->ops, kn->n_ops);
	fl_event *e = NULL;

	if (names)
		e = fl_state_log(st, FL_EV_VERIFIED, "", names, kn->n_ops,
				 kn->group, -1, "%s: %s, max abs err %.1e, rel "
				 "%.1e", kn->name, kr->ok ? "pass" : "FAIL",
				 kr->max_abs, kr->max_rel);
	free(names);
	return e ? 0 : -1;
}

static int log_output_verified(fl_state *st, const fl_output_result *o)
{
	const fl_graph *g = st->graph;
	int p = g->tensors[o->tensor].producer;
	const char *op = p >= 0 ? g->ops[p].name : NULL;

	return fl_state_log(st, FL_EV_VERIFIED, "", op ? &op : NULL, op ? 1 : 0,
			    -1, -1, "output %s: %s, max abs err %.1e, rel %.1e",
			    g->tensors[o->tensor].name, o->ok ? "pass" : "FAIL",
			    o->max_abs, o->max_rel) ? 0 : -1;
}

/* The one decision when there is nothing to report per kernel. */
static int log_not_run(fl_state *st, const char *why)
{
	return fl_state_log(st, FL_EV_RAN, "", NULL, 0, -1, -1, "%s", why)
		       ? FL_PASS_DONE : -1;
}

/* The per-kernel and per-output decisions: ran, verified, outputs. */
static int report(fl_state *st)
{
	const fl_run_result *r = st->run;
	int n = r->n_kernels;

	for (int i = 1; i < 2 * n + r->n_outputs; i++) {
		int rc;

		if (!fl_state_decide(st))
			return FL_PASS_PAUSED;
		if (i < n)
			rc = log_ran(st, i);
		else if (i < 2 * n)
			rc = log_kernel_verified(st, i - n);
		else
			rc = log_output_verified(st, &r->outputs[i - 2 * n]);
		if (rc < 0)
			return -1;
	}
	return FL_PASS_DONE;
}

int fl_pass_run(fl_state *st, fl_error *err)
{
	char why[2200];
	int rc;

	if (!fl_state_decide(st))
		return FL_PASS_PAUSED;
	if (!st->build || st->build->status != FL_RUN_OK) {
		snprintf(why, sizeof why, "not run: the program did not compile "
			 "(%s)", st->build ? fl_run_status_name(st->build->status)
					   : "no build");
		rc = log_not_run(st, why);
		goto out;
	}
	st->run = result_of(st, err);
	if (!st->run)
		return -1;
	if (st->run->status != FL_RUN_OK && st->run->status != FL_RUN_MISMATCH) {
		snprintf(why, sizeof why, "%s: %s",
			 fl_run_status_name(st->run->status), st->run->message);
		rc = log_not_run(st, why);
	} else if (st->run->n_kernels == 0) {
		rc = log_not_run(st, "no kernels to run");
	} else {	/* the first decision is the first kernel's run */
		rc = log_ran(st, 0);
		if (rc == 0)
			rc = report(st);
	}
out:
	if (rc < 0)
		fl_error_set(err, "out of memory");
	return rc;
}
