/* The strategy ladder (see ladder.h). */
#include "ladder.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"
#include "ref_share.h"
#include "stitch.h"

/* Appends "G<a> + G<b>" (the micro-graphs layer 2 stitched into k) to
 * buf when there are several. */
static void stitched_text(const fl_kernel *k, const fl_partition *part,
			  char *buf, size_t n)
{
	int ids[32], count = fl_stitch_kernel_groups(k, part, ids, 32);

	for (int i = 0; count > 1 && i < count && i < 32; i++)
		snprintf(buf + strlen(buf), n - strlen(buf), "%sG%d",
			 i ? " + " : "", ids[i]);
}

/* What layers 2 and 3 made of kernel kn, into lk (ladder.h). */
static void describe_layers(fl_ladder_kernel *lk, const fl_kernel *kn,
			    const fl_graph *g, const fl_partition *part)
{
	lk->stitched[0] = lk->branches[0] = '\0';
	lk->n_branches = kn->n_branches;
	if (kn->n_branches == 0) {
		stitched_text(kn, part, lk->stitched, sizeof lk->stitched);
		return;
	}
	for (int b = 0; b < kn->n_branches; b++) {
		const fl_kernel *br = &kn->branches[b];
		size_t used = strlen(lk->branches);

		if (br->n_ops == 0 || used >= sizeof lk->branches)
			continue;
		snprintf(lk->branches + used, sizeof lk->branches - used,
			 "%s%s..%s", b ? " | " : "", g->ops[br->ops[0]].name,
			 g->ops[br->ops[br->n_ops - 1]].name);
	}
}

/* Copies what the session decided and verified into step st (times
 * come later, from the interleaved timing). */
static int collect(fl_session *s, fl_ladder_step *st)
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
	st->target = b->target;
	snprintf(st->note, sizeof st->note, "%s", b->note);
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
		describe_layers(lk, kn, p->graph, fl_engine_partition(s));
		lk->unfused_seconds = lk->unfused_min = lk->unfused_max = -1;
		if (r && k < r->n_kernels)
			lk->r = r->kernels[k];
	}
	if (!r)
		return 0;
	st->status = r->status;
	snprintf(st->message, sizeof st->message, "%s", r->message);
	st->target = r->target;
	snprintf(st->device, sizeof st->device, "%s", r->device);
	st->total_seconds = r->total_seconds;
	st->total_min = r->total_min_seconds;
	st->total_max = r->total_max_seconds;
	st->total_n = r->total_seconds > 0 ? fl_engine_options(s)->run.repeat : 0;
	st->max_abs = r->max_abs;
	st->max_rel = r->max_rel;
	st->verified = r->verified;
	st->expect_compared = r->expect_compared;
	st->expect_failed = r->expect_failed;
	st->expect_max_abs = r->expect_max_abs;
	st->expect_max_rel = r->expect_max_rel;
	for (int i = 0; i < r->n_outputs; i++) {
		const fl_output_result *o = &r->outputs[i];
		const fl_tensor *t = &p->graph->tensors[o->tensor];
		char sh[128], at[160];

		if (!o->expected || o->expect_ok)
			continue;
		fl_shape_format(&t->shape, sh, sizeof sh);
		fl_shape_format_index(&t->shape, o->expect_at, at, sizeof at);
		snprintf(st->expect_first, sizeof st->expect_first,
			 "output T%d \"%s\" %s: %lld of %lld elements off; "
			 "worst %s: got %.9g, want %.9g", o->tensor, t->name, sh,
			 (long long)o->expect_bad,
			 (long long)fl_shape_numel(&t->shape), at, o->expect_got,
			 o->expect_want);
		break;
	}
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

/* One strategy: a session through the run pass, verifying only (the
 * ladder times every strategy together afterwards) against the reference
 * values in share, which every step reads.  The session only goes
 * forward (no snapshots: nothing steps it back) and reads g, no copy.  It stays open in *out
 * when it ran, so that its gen.so outlives it. */
static int run_step(const fl_graph *g, const fl_engine_opts *base,
		    fl_ref_share *share, fl_strategy strategy,
		    fl_ladder_step *st, fl_session **out)
{
	fl_engine_opts o = *base;
	fl_error err = {""};
	fl_session *s;
	int rc = 0;

	o.strategy = strategy;
	o.stop_after = FL_PASS_RUN;
	o.run_kernels = true;
	o.run.warmup = 0;
	o.run.repeat = 0;
	o.ref_share = share;
	o.forward_only = true;
	o.borrow_graph = true;	/* g outlives every step's session */
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
	*out = s;
	if (!st->log || collect(s, st) < 0)
		rc = -1;
	return rc;
}

/* Whether step st has a program worth timing. */
static bool timeable(const fl_ladder_step *st, fl_session *s)
{
	return s && st->ran && fl_engine_run_result(s) &&
	       (st->status == FL_RUN_OK || st->status == FL_RUN_MISMATCH);
}

/* The paired rule when there are enough pairs, else the ranges' (which
 * need two times a side: one round has no spread). */
static fl_timing_label label_of(const fl_ratio *r, int base_n,
				double base_min, double base_max, int n,
				double min, double max)
{
	fl_timing_label l = fl_timing_paired(r);

	return l != FL_TIMING_UNKNOWN ? l
		: fl_timing_compare_n(base_n, base_min, base_max, n, min, max);
}

/* The kernel's times from the timing child. */
static void take_kernel(fl_ladder_kernel *lk, const fl_timed_kernel *tk)
{
	const fl_spread *s = tk->paired ? &tk->fused : &tk->round;

	lk->r.seconds = s->median;
	lk->r.min_seconds = s->min;
	lk->r.max_seconds = s->max;
	lk->r.n_timed = s->n;
	lk->r.gbps = s->median > 0 ? (double)lk->r.bytes / s->median / 1e9 : 0;
	lk->paired = tk->paired;
	if (!tk->paired)
		return;
	lk->unfused_seconds = tk->base.median;
	lk->unfused_min = tk->base.min;
	lk->unfused_max = tk->base.max;
	lk->ratio = tk->ratio;
	lk->label = label_of(&lk->ratio, tk->base.n, lk->unfused_min,
			     lk->unfused_max, s->n, lk->r.min_seconds,
			     lk->r.max_seconds);
}

/* For a kernel that was not paired: its ops' share of the unfused
 * kernels' round times (the sum of each op's kernel / its op count). */
static void unpaired_baseline(fl_ladder_kernel *lk, const fl_kernel *kn,
			      const fl_program *up, const fl_ladder_step *us)
{
	double s = 0, lo = 0, hi = 0;
	int n = INT_MAX;

	for (int i = 0; i < kn->n_ops; i++) {
		int found = -1;

		for (int k = 0; k < up->n_kernels && found < 0; k++)
			for (int j = 0; j < up->kernels[k].n_ops; j++)
				if (up->kernels[k].ops[j] == kn->ops[i])
					found = k;
		if (found < 0 || us->kernels[found].r.n_timed == 0)
			return;
		if (us->kernels[found].r.n_timed < n)
			n = us->kernels[found].r.n_timed;
		s += us->kernels[found].r.seconds / up->kernels[found].n_ops;
		lo += us->kernels[found].r.min_seconds / up->kernels[found].n_ops;
		hi += us->kernels[found].r.max_seconds / up->kernels[found].n_ops;
	}
	lk->unfused_seconds = s;
	lk->unfused_min = lo;
	lk->unfused_max = hi;
	lk->label = fl_timing_compare_n(n, lo, hi, lk->r.n_timed,
					lk->r.min_seconds, lk->r.max_seconds);
}

/* ---- why a fused kernel is slower ---------------------------------------- */

/* Appends "; " and the formatted text to buf (of size n), if it fits. */
static void add_fact(char *buf, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void add_fact(char *buf, size_t n, const char *fmt, ...)
{
	size_t at = strlen(buf);
	va_list ap;

	if (at && at + 2 < n)
		at += (size_t)snprintf(buf + at, n - at, "; ");
	if (at + 1 >= n)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + at, n - at, fmt, ap);
	va_end(ap);
}

/* Tiles the unfused program gives the ops of kn, at most. */
static double unfused_tiles(const fl_kernel *kn, const fl_program *up)
{
	double most = 0;

	for (int k = 0; k < up->n_kernels; k++)
		for (int j = 0; j < up->kernels[k].n_ops; j++)
			for (int i = 0; i < kn->n_ops; i++)
				if (up->kernels[k].ops[j] == kn->ops[i] &&
				    up->kernels[k].n_tiles > most)
					most = up->kernels[k].n_tiles;
	return most;
}

/* The unfused kernel of kn's contraction (matmul or conv2d), or NULL. */
static const fl_kernel *unfused_contraction(const fl_kernel *kn,
					    const fl_program *p,
					    const fl_program *up)
{
	for (int i = 0; i < kn->n_ops; i++) {
		fl_op_kind k = p->graph->ops[kn->ops[i]].kind;

		if (k != FL_OP_MATMUL && k != FL_OP_CONV2D)
			continue;
		for (int u = 0; u < up->n_kernels; u++)
			for (int j = 0; j < up->kernels[u].n_ops; j++)
				if (up->kernels[u].ops[j] == kn->ops[i])
					return &up->kernels[u];
	}
	return NULL;
}

/* What the fused kernel kn does that its ops' unfused kernels do not --
 * the facts of its plan that cost time -- into buf. */
static void slower_facts(const fl_kernel *kn, const fl_program *p,
			 const fl_program *up, char *buf, size_t n)
{
	int cores = fl_machine_get()->cores;
	double ut = unfused_tiles(kn, up);
	const fl_kernel *uc = unfused_contraction(kn, p, up);
	const char *first_global = "";
	int n_global = 0;

	buf[0] = '\0';
	if (kn->tile_kind == FL_TILE_CONTRACTION)
		add_fact(buf, n, "its %d ops besides the contraction run as "
			 "loops of their own over each tile", kn->n_ops - 1);
	if (uc && uc->n_tiles > 0 && kn->n_tiles > 1.5 * uc->n_tiles)
		add_fact(buf, n, "its contraction runs in %.0f smaller tiles "
			 "(%.0f unfused)", kn->n_tiles, uc->n_tiles);
	if (kn->n_tiles > 0 && kn->n_tiles < 2.0 * cores && ut > kn->n_tiles)
		add_fact(buf, n, "%.0f tiles for %d cores (the unfused "
			 "kernels have up to %.0f)", kn->n_tiles, cores, ut);
	for (int t = 0; t < kn->n_tensors; t++) {
		const fl_kernel_tensor *kt = &kn->tensors[t];
		const fl_tensor *x = &p->graph->tensors[kt->tensor];

		if (kt->place == FL_PLACE_GLOBAL && kt->written && kt->read &&
		    x->role == FL_ROLE_TEMP && n_global++ == 0)
			first_global = x->name ? x->name : "a tensor";
	}
	if (n_global)
		add_fact(buf, n, "%s%s through main memory inside the kernel",
			 first_global, n_global == 1 ? " goes" :
			 n_global == 2 ? " and 1 more go" : " and more go");
	if (kn->tile_bytes > 0 && kn->tile_bytes > fl_machine_get()->l2)
		add_fact(buf, n, "a tile touches %lld KiB, more than the "
			 "%lld KiB L2", (long long)(kn->tile_bytes >> 10),
			 (long long)(fl_machine_get()->l2 >> 10));
	if (!buf[0])
		add_fact(buf, n, "nothing in its plan that the unfused kernels "
			 "avoid: the same loops over different tiles (%s)",
			 kn->tile_why[0] ? kn->tile_why : "untiled");
}

void fl_ladder_explain_slower(fl_ladder_step *st, int k,
			      const fl_program *p, const fl_program *up)
{
	fl_ladder_kernel *lk = &st->kernels[k];
	const fl_kernel *kn = &p->kernels[k];
	const char **names = calloc((size_t)kn->n_ops + 1, sizeof *names);
	char facts[FL_EVENT_REASON];
	fl_event *e;

	slower_facts(kn, p, up, facts, sizeof facts);
	snprintf(lk->why, sizeof lk->why, "%s", facts);
	if (!names || !st->log) {
		free(names);
		return;
	}
	for (int i = 0; i < kn->n_ops; i++)
		names[i] = p->graph->ops[kn->ops[i]].name;
	e = fl_event_log_add(st->log, FL_PASS_RUN, FL_EV_RAN, "slower", names,
			     kn->n_ops, kn->group, -1, "%s is SLOWER than the "
			     "unfused kernels of its ops: %s", kn->name, facts);
	free(names);
	if (!e)
		return;
	e->n_measured = 4;
	e->measured[0] = lk->r.seconds;
	e->measured[1] = lk->unfused_seconds;
	e->measured[2] = lk->ratio.faster;
	e->measured[3] = lk->ratio.s.n;
}

/* Speedups and labels against the unfused step, when there is one. */
static void compare_steps(fl_ladder *out, fl_session **ses)
{
	int u = -1;

	for (int i = 0; i < out->n && u < 0; i++)
		if (out->steps[i].strategy == FL_STRATEGY_UNFUSED &&
		    out->steps[i].total_seconds > 0)
			u = i;
	for (int i = 0; i < out->n && u >= 0; i++) {
		fl_ladder_step *st = &out->steps[i], *us = &out->steps[u];

		if (st->total_seconds <= 0)
			continue;
		st->speedup = us->total_seconds / st->total_seconds;
		st->label = i == u ? FL_TIMING_UNKNOWN
			: label_of(&st->vs_unfused, us->total_n, us->total_min,
				   us->total_max, st->total_n, st->total_min,
				   st->total_max);
		st->within_noise = i != u && st->label != FL_TIMING_FASTER &&
				   st->label != FL_TIMING_SLOWER;
		for (int k = 0; i != u && ses[i] && k < st->n_kernels; k++) {
			const fl_kernel *kn = &fl_engine_program(ses[i])->kernels[k];

			if (kn->n_ops > 1 && !st->kernels[k].paired)
				unpaired_baseline(&st->kernels[k], kn,
						  fl_engine_program(ses[u]), us);
			if (st->kernels[k].label == FL_TIMING_SLOWER)
				fl_ladder_explain_slower(st, k,
					fl_engine_program(ses[i]),
					fl_engine_program(ses[u]));
		}
	}
}

/* The timing child's results into the ladder and its steps; idx maps
 * timed program -> step. */
static int take_timing(fl_ladder *out, const fl_timing *t, const int *idx)
{
	int m = t->n + 1;

	out->interleaved = t->status == FL_RUN_OK;
	out->timing_status = t->status;
	snprintf(out->timing_message, sizeof out->timing_message, "%s",
		 t->message);
	out->load_before = t->load_before;
	out->load_after = t->load_after;
	out->pinned = t->pinned;
	if (!out->interleaved)
		return 0;
	out->copy_gbps = t->copy_gbps;
	out->copy_bytes = t->copy_bytes;
	out->copy_threads = t->copy_threads;
	out->n_threads = t->n_threads;
	snprintf(out->affinity, sizeof out->affinity, "%s", t->affinity);
	out->rounds = t->rounds;
	out->n_timed = t->n;
	out->order = calloc((size_t)(t->rounds + 1) * (size_t)m,
			    sizeof *out->order);
	if (!out->order)
		return -1;
	for (int r = 0; r < t->rounds * m; r++)
		out->order[r] = t->order[r] == t->n ? -1 : idx[t->order[r]];
	for (int i = 0; i < t->n; i++) {
		fl_ladder_step *st = &out->steps[idx[i]];

		st->total_seconds = t->total[i].median;
		st->total_min = t->total[i].min;
		st->total_max = t->total[i].max;
		st->total_n = t->total[i].n;
		st->vs_unfused = t->vs_base[i];
		for (int k = 0; k < st->n_kernels; k++)
			take_kernel(&st->kernels[k], &t->kernels[i][k]);
	}
	return 0;
}

/* "dir, dir, ..." of every open session into buf. */
static void all_workdirs(fl_session **ses, int n, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		const char *d = ses[i] ? fl_engine_workdir(ses[i]) : "";

		if (d[0] && at + strlen(d) + 3 < len)
			at += (size_t)snprintf(buf + at, len - at, "%s%s",
					       at ? ", " : "", d);
	}
}

/* Times every timeable step together (see ladder.h). */
static int time_steps(const fl_engine_opts *base, fl_ladder *out,
		      fl_session **ses, fl_error *err)
{
	fl_timed_program *tp = calloc((size_t)out->n + 1, sizeof *tp);
	int *idx = calloc((size_t)out->n + 1, sizeof *idx);
	fl_run_opts ro = base->run;
	fl_timing t;
	int n = 0, rc = -1;

	if (!tp || !idx) {
		fl_error_set(err, "out of memory");
		goto out;
	}
	for (int i = 0; i < out->n; i++) {
		if (!timeable(&out->steps[i], ses[i]))
			continue;
		tp[n].p = fl_engine_program(ses[i]);
		tp[n].so_path = fl_engine_build(ses[i])->so_path;
		tp[n].workdir = fl_engine_build(ses[i])->workdir;
		tp[n].baseline = out->steps[i].strategy == FL_STRATEGY_UNFUSED;
		idx[n++] = i;
	}
	rc = 0;
	if (n == 0 || ro.repeat <= 0)
		goto out;
	if (ro.max_bytes <= 0)
		ro.max_bytes = base->interp.max_bytes;
	if (fl_time_interleaved(tp, n, &ro, base->interp.seed, &t, err) < 0) {
		rc = -1;
		goto out;
	}
	if (t.status == FL_RUN_CANCELLED && interrupted(base)) {
		fl_ladder_step *st = &out->steps[0];

		st->interrupted = true;
		snprintf(st->stopped, sizeof st->stopped, "run");
		all_workdirs(ses, out->n, st->removed, sizeof st->removed);
	}
	rc = take_timing(out, &t, idx);
	if (rc < 0)
		fl_error_set(err, "out of memory");
	fl_timing_free(&t);
out:
	free(tp);
	free(idx);
	return rc;
}

static void close_all(fl_session **ses, int n, fl_ref_share *share)
{
	for (int i = 0; i < n; i++)
		fl_engine_close(ses[i]);	/* removes unless keep */
	free(ses);
	fl_ref_share_free(share);
}

int fl_ladder_run(const fl_graph *g, const fl_engine_opts *base,
		  const fl_strategy *list, int n, fl_ladder *out,
		  fl_error *err)
{
	fl_session **ses = calloc((size_t)n + 1, sizeof *ses);
	fl_ref_share *share = fl_ref_share_new();

	memset(out, 0, sizeof *out);
	out->steps = calloc((size_t)n + 1, sizeof *out->steps);
	fl_machine_text(fl_machine_host(), out->machine,
			(int)sizeof out->machine);
	if (fl_machine_get() != fl_machine_host())
		fl_machine_text(fl_machine_get(), out->planned_for,
				(int)sizeof out->planned_for);
	out->load_before = out->load_after = -1;
	if (!out->steps || !ses || !share) {
		free(ses);
		fl_ref_share_free(share);
		fl_ladder_free(out);
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int i = 0; i < n && !(i > 0 && out->steps[i - 1].interrupted);
	     i++) {
		if (base->run.progress)
			base->run.progress(base->run.progress_user, "strategy", i,
					   n);
		out->n = i + 1;
		if (run_step(g, base, share, list[i], &out->steps[i],
			     &ses[i]) < 0) {
			close_all(ses, n, share);
			fl_ladder_free(out);
			fl_error_set(err, "out of memory");
			return -1;
		}
	}
	/* every step has verified: timing reads no reference values */
	out->reference_runs = fl_ref_share_runs(share);
	for (int i = 0; i < out->n; i++) {
		fl_engine_stats es;

		if (ses[i]) {
			fl_engine_get_stats(ses[i], &es);
			out->reference_runs += es.references;
		}
	}
	fl_ref_share_drop(share);
	if (!(out->n > 0 && out->steps[out->n - 1].interrupted) &&
	    time_steps(base, out, ses, err) < 0) {
		close_all(ses, n, share);
		fl_ladder_free(out);
		return -1;
	}
	compare_steps(out, ses);
	close_all(ses, n, share);
	return 0;
}

void fl_ladder_free(fl_ladder *l)
{
	for (int i = 0; i < l->n; i++) {
		free(l->steps[i].kernels);
		fl_event_log_free(l->steps[i].log);
	}
	free(l->steps);
	free(l->order);
	memset(l, 0, sizeof *l);
}
