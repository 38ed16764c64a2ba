/* The strategy ladder from the command line (see run.h): the engine runs
 * it (engine/run/ladder.h); this file only prints. */
#include "run.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "batch.h"
#include "bytes.h"
#include "ladder.h"
#include "output.h"
#include "signals.h"

/* The strategies --strategy selects, in ladder order. */
static int selected(const fl_options *o, fl_strategy *list)
{
	fl_strategy one;

	if (!o->strategy || !strcmp(o->strategy, "all")) {
		for (int i = 0; i < FL_STRATEGY_COUNT; i++)
			list[i] = (fl_strategy)i;
		return FL_STRATEGY_COUNT;
	}
	fl_strategy_parse(o->strategy, &one);
	list[0] = one;
	return 1;
}


/* The generated C of one strategy, through the codegen pass.  Written
 * through the exporters' safe writer, so that a write failing half-way
 * (a full disk, a file size limit) leaves no truncated source behind. */
static int emit_one(const fl_graph *g, const fl_engine_opts *base,
		    fl_strategy s, const char *dir)
{
	fl_engine_opts eo = *base;
	fl_error err = {""};
	fl_session *ses;
	const char *src;
	char path[1024], file[80];
	int rc;

	eo.strategy = s;
	eo.stop_after = FL_PASS_CODEGEN;
	eo.run_kernels = false;
	ses = fl_engine_open(g, &eo, &err);
	if (!ses || fl_engine_run(ses, &err) < 0 || !fl_engine_source(ses)) {
		fprintf(stderr, "fuselab: %s: strategy %s: %s\n", g->name,
			fl_strategy_name(s), err.msg[0] ? err.msg : "no program");
		fl_engine_close(ses);
		return 1;
	}
	fl_app_file_name(g->name, file, sizeof file);
	snprintf(path, sizeof path, "%s/%s-%s.%s", dir, file,
		 fl_strategy_name(s), base->run.target == FL_TARGET_CUDA ? "cu"
									: "c");
	src = fl_engine_source(ses);
	if (fl_out_write_file(path, src, strlen(src), &err) < 0) {
		fprintf(stderr, "fuselab: %s\n", err.msg);
		rc = 2;	/* a bad output path, like a bad --emit DIR */
	} else {
		printf("wrote %s (%d kernels)\n", path,
		       fl_engine_program(ses)->n_kernels);
		rc = 0;
	}
	fl_engine_close(ses);
	return rc;
}

int fl_batch_emit(const fl_graph *g, const fl_engine_opts *base,
		  const fl_options *o)
{
	fl_strategy list[FL_STRATEGY_COUNT];
	int n = selected(o, list);
	fl_error err = {""};

	if (fl_graph_check_computable(g, "emit a program", &err) < 0) {
		fprintf(stderr, "fuselab: %s: %s\n", fl_safe_name(g->name),
			fl_safe_name(err.msg));
		return 1;
	}
	if (mkdir(o->emit_dir, 0777) < 0 && errno != EEXIST) {
		fprintf(stderr, "fuselab: --emit %s: %s\n", o->emit_dir,
			strerror(errno));
		return 2;
	}
	for (int i = 0; i < n; i++) {
		int rc = emit_one(g, base, list[i], o->emit_dir);

		if (rc != 0)
			return rc;
	}
	return 0;
}

/* "faster 1.68x", "SLOWER 1.18x", "within noise 1.03x" or "one round
 * 1.03x" (the ratio as unfused / this time, so above 1 means this one is
 * quicker). */
static void print_label(fl_timing_label l, double base, double t)
{
	if (l == FL_TIMING_FASTER)
		printf("faster %.2fx", base / t);
	else if (l == FL_TIMING_SLOWER)
		printf("SLOWER %.2fx", t / base);
	else if (l == FL_TIMING_ONE_ROUND)
		printf("one round, no spread %.2fx", base / t);
	else
		printf("within noise %.2fx", base / t);
}

static void print_kernel(const fl_ladder_kernel *k, double copy_gbps)
{
	char bytes[32];
	double base = k->unfused_seconds, t = k->r.seconds;

	printf("    %-7s %3d op%s %10.3f ms (%.3f..%.3f) %10s %8.1f GB/s", k->name,
	       k->n_ops, k->n_ops == 1 ? " " : "s", 1e3 * t,
	       1e3 * k->r.min_seconds, 1e3 * k->r.max_seconds,
	       fl_format_bytes(k->r.bytes, bytes, sizeof bytes), k->r.gbps);
	if (copy_gbps > 0)
		printf(" %4.0f%% copy", 100.0 * k->r.gbps / copy_gbps);
	if (base > 0 && t > 0) {
		printf("   unfused %.3f ms (%.3f..%.3f) ", 1e3 * base,
		       1e3 * k->unfused_min, 1e3 * k->unfused_max);
		print_label(k->label, base, t);
		if (k->ratio.s.n >= FL_TIMING_MIN_PAIRS)
			printf(", quicker in %d of %d pairs", k->ratio.faster,
			       k->ratio.s.n);
		printf("%s", k->paired ? ", interleaved" : "");
	}
	printf("  [%s", fl_safe_name(k->first_op));
	if (k->n_ops > 1)
		printf(" .. %s", fl_safe_name(k->last_op));
	printf("]\n");
	if (k->why[0])
		printf("      why: %s\n", fl_safe_name(k->why));
}

/* --expect: the strategy's outputs against the expected ones, one line
 * "apollo     vs expected: ok (...)"; 1 when one differs. */
static int print_expected(const fl_ladder_step *st, const fl_run_opts *ro)
{
	const char *name = fl_strategy_name(st->strategy);

	if (st->expect_compared == 0) {
		printf("%-10s vs expected: nothing compared (no graph output of "
		       "its program has the expected files' names and sizes)\n",
		       name);
		return 0;
	}
	if (st->expect_failed == 0) {
		printf("%-10s vs expected: ok (%d output%s, max abs err %.3g, "
		       "rel %.2e; rtol %g, atol %g)\n", name,
		       st->expect_compared, st->expect_compared == 1 ? "" : "s",
		       st->expect_max_abs, st->expect_max_rel, ro->expect_rtol,
		       ro->expect_atol);
		return 0;
	}
	/* rel: on the tensor's scale (runner.h), which tells float drift
	 * near zero from a wrong value */
	printf("%-10s vs expected: MISMATCH in %d of %d output%s (rtol %g, "
	       "atol %g): %s; max abs err %.3g, rel %.2e\n", name,
	       st->expect_failed, st->expect_compared,
	       st->expect_compared == 1 ? "" : "s", ro->expect_rtol,
	       ro->expect_atol, fl_safe_name(st->expect_first),
	       st->expect_max_abs, st->expect_max_rel);
	return 1;
}

/* One strategy's line and kernels; 0 when it verified (and, with
 * expected outputs, matched them). */
static int print_step(const fl_graph *g, const fl_ladder *l,
		      const fl_ladder_step *st, const fl_run_opts *ro)
{
	int bad = 0;

	const char *name = fl_strategy_name(st->strategy);

	if (!st->ran) {
		fprintf(stderr, "fuselab: %s: strategy %s: %s\n",
			fl_safe_name(g->name), name, fl_safe_name(st->error));
		return 1;
	}
	if (st->status != FL_RUN_OK && st->status != FL_RUN_MISMATCH) {
		printf("%-10s %3d kernels  %s: %s\n", name, st->n_kernels,
		       fl_run_status_name(st->status),
		       fl_safe_name(st->message));
	} else {
		printf("%-10s %3d kernels %10.3f ms (%.3f..%.3f)", name,
		       st->n_kernels, 1e3 * st->total_seconds,
		       1e3 * st->total_min, 1e3 * st->total_max);
		if (st->speedup > 0 && st->strategy != FL_STRATEGY_UNFUSED &&
		    st->vs_unfused.s.n >= FL_TIMING_MIN_PAIRS)
			printf(" %7.2fx (%s, quicker in %d of %d rounds)",
			       st->speedup, fl_timing_label_name(st->label),
			       st->vs_unfused.faster, st->vs_unfused.s.n);
		else if (st->speedup > 0 && st->strategy != FL_STRATEGY_UNFUSED)
			printf(" %7.2fx (%s)", st->speedup,
			       st->label == FL_TIMING_ONE_ROUND
				       ? "one round, no spread: not compared"
			       : fl_timing_label_name(st->label)[0]
				       ? fl_timing_label_name(st->label) : "?");
		else if (st->speedup > 0)
			printf(" %7.2fx", st->speedup);
		else
			printf("        -");
		printf("   max abs err %.2e  rel %.2e  verified %s\n", st->max_abs,
		       st->max_rel, st->verified ? "yes" : "NO");
		if (!st->verified)
			printf("    %s\n", st->message);
		if (ro->n_expect > 0)
			bad = print_expected(st, ro);
		/* the copy probe is the host's memory: no yardstick for
		 * kernels that ran on a GPU */
		for (int k = 0; k < st->n_kernels; k++)
			print_kernel(&st->kernels[k], st->device[0] ? 0.0
					: l->copy_gbps.median);
	}
	if (st->workdir[0])
		printf("    sources kept in %s\n", st->workdir);
	return st->verified && !bad ? 0 : 1;
}

/* " 1.23" or " unknown" */
static const char *load_text(double load, char *buf, size_t n)
{
	if (load < 0)
		snprintf(buf, n, "unknown");
	else
		snprintf(buf, n, "%.2f", load);
	return buf;
}

/* The lines above the table: the machine, the load around the timing,
 * the copy bandwidth measured in the timing process, how it was timed. */
static void print_conditions(const fl_ladder *l)
{
	char before[32], after[32], bytes[32];

	printf("machine: %s\n", fl_safe_name(l->machine));
	if (l->planned_for[0])
		printf("planned for: %s\n", fl_safe_name(l->planned_for));
	printf("load: %s before, %s after timing", load_text(l->load_before,
	       before, sizeof before), load_text(l->load_after, after,
						 sizeof after));
	if (l->interleaved && l->copy_gbps.n > 0)
		printf("; copy bandwidth %.1f GB/s (%.1f..%.1f, %s per copy, "
		       "%d thread%s)", l->copy_gbps.median, l->copy_gbps.min,
		       l->copy_gbps.max,
		       fl_format_bytes(l->copy_bytes, bytes, sizeof bytes),
		       l->copy_threads, l->copy_threads == 1 ? "" : "s");
	printf("\n");
	if (l->interleaved)
		printf("timing: %d strateg%s interleaved in one process, %d "
		       "rounds in a balanced order, fused kernels alternating "
		       "with their unfused kernels; threads %s (%d: %s)\n",
		       l->n_timed, l->n_timed == 1 ? "y" : "ies", l->rounds,
		       l->pinned ? "pinned" : "not pinned", l->n_threads,
		       l->affinity[0] ? l->affinity : "?");
	else if (l->timing_message[0])
		printf("timing: %s: %s\n", fl_run_status_name(l->timing_status),
		       fl_safe_name(l->timing_message));
	else
		printf("timing: none (nothing to time)\n");
}

/* "target: cuda, ..." for the CUDA target: the GPU the kernels ran on,
 * or the note saying that the CPU backend ran instead. */
static void print_target(const fl_ladder *l)
{
	for (int i = 0; i < l->n; i++)
		if (l->steps[i].note[0]) {
			printf("target: cuda: %s\n",
			       fl_safe_name(l->steps[i].note));
			return;
		}
	for (int i = 0; i < l->n; i++)
		if (l->steps[i].device[0]) {
			printf("target: cuda on %s, kernel times from CUDA "
			       "events\n", fl_safe_name(l->steps[i].device));
			return;
		}
}

/* What layer 2 saved: apollo-l2's kernel count against apollo-l1's, when
 * the ladder ran both; likewise layer 3 (apollo against apollo-l2). */
static void print_stitching(const fl_ladder *l)
{
	const fl_ladder_step *l1 = NULL, *l2 = NULL, *l3 = NULL;

	for (int i = 0; i < l->n; i++) {
		const fl_ladder_step *st = &l->steps[i];

		if (st->ran && st->strategy == FL_STRATEGY_APOLLO_L1)
			l1 = st;
		if (st->ran && st->strategy == FL_STRATEGY_APOLLO_L2)
			l2 = st;
		if (st->ran && st->strategy == FL_STRATEGY_APOLLO)
			l3 = st;
	}
	if (l1 && l2)
		printf("layer 2: apollo-l2 runs %d kernels, %d fewer than "
		       "apollo-l1's %d\n", l2->n_kernels,
		       l1->n_kernels - l2->n_kernels, l1->n_kernels);
	if (l2 && l3)
		printf("layer 3: apollo runs %d kernels, %d fewer than "
		       "apollo-l2's %d\n", l3->n_kernels,
		       l2->n_kernels - l3->n_kernels, l2->n_kernels);
}

int fl_batch_strategies(const fl_graph *g, const fl_engine_opts *base,
			const fl_options *o, fl_ladder *keep)
{
	fl_strategy list[FL_STRATEGY_COUNT];
	int n = selected(o, list), failed = 0;
	fl_error err = {""};
	fl_ladder ladder;

	/* one line, not one per strategy, for a graph that cannot run */
	if (fl_graph_check_computable(g, "run", &err) < 0) {
		fprintf(stderr, "fuselab: %s: %s\n", fl_safe_name(g->name),
			fl_safe_name(err.msg));
		return 1;
	}
	if (fl_ladder_run(g, base, list, n, &ladder, &err) < 0) {
		fprintf(stderr, "fuselab: %s: %s\n", fl_safe_name(g->name),
			fl_safe_name(err.msg));
		return 1;
	}
	for (int i = 0; i < ladder.n; i++) {
		const fl_ladder_step *st = &ladder.steps[i];

		if (st->interrupted) {
			failed = fl_app_interrupted(st->stopped, st->removed);
			break;
		}
		if (i == 0) {
			print_conditions(&ladder);
			print_target(&ladder);
			printf("%-10s %11s %13s %16s %8s\n", "strategy",
			       "kernels", "median", "(min..max)", "speedup");
		}
		failed |= print_step(g, &ladder, st, &base->run);
		if (i == ladder.n - 1)
			print_stitching(&ladder);
	}
	if (keep)
		*keep = ladder;
	else
		fl_ladder_free(&ladder);
	return failed;
}
