/* The strategy ladder from the command line (see run.h). */
#include "run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "batch.h"
#include "codegen.h"
#include "runner.h"

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

/* Runs the engine for one strategy; NULL (message printed) on failure. */
static fl_session *build(const fl_graph *g, const fl_engine_opts *base,
			 fl_strategy s)
{
	fl_engine_opts eo;
	fl_error err = {""};
	fl_session *ses;

	fl_engine_opts_for_strategy(base, s, &eo);
	ses = fl_engine_open(g, &eo, &err);
	if (!ses || fl_engine_run(ses, &err) < 0 || !fl_engine_program(ses)) {
		fprintf(stderr, "fuselab: %s: strategy %s: %s\n", g->name,
			fl_strategy_name(s), err.msg[0] ? err.msg : "no program");
		fl_engine_close(ses);
		return NULL;
	}
	return ses;
}

static const fl_program *program_of(fl_session *ses, fl_strategy s)
{
	fl_program *p = (fl_program *)fl_engine_program(ses);

	p->strategy = s;
	return p;
}

int fl_batch_emit(const fl_graph *g, const fl_engine_opts *base,
		  const fl_options *o)
{
	fl_strategy list[FL_STRATEGY_COUNT];
	int n = selected(o, list);

	if (mkdir(o->emit_dir, 0777) < 0 && errno != EEXIST) {
		fprintf(stderr, "fuselab: --emit %s: %s\n", o->emit_dir,
			strerror(errno));
		return 2;
	}
	for (int i = 0; i < n; i++) {
		fl_session *ses = build(g, base, list[i]);
		fl_error err = {""};
		char path[1024];

		if (!ses)
			return 1;
		snprintf(path, sizeof path, "%s/%s-%s.c", o->emit_dir, g->name,
			 fl_strategy_name(list[i]));
		if (fl_emit_program(program_of(ses, list[i]), path, &err) < 0) {
			fprintf(stderr, "fuselab: %s\n", err.msg);
			fl_engine_close(ses);
			return 1;
		}
		printf("wrote %s (%d kernels)\n", path,
		       fl_engine_program(ses)->n_kernels);
		fl_engine_close(ses);
	}
	return 0;
}

/* Seconds the unfused program spends on op `op` (its one-op kernel). */
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

static void print_kernel(const fl_program *p, int k, const fl_kernel_result *kr,
			 const unfused_times *u)
{
	const fl_kernel *kn = &p->kernels[k];
	double base = kn->n_ops > 1 ? unfused_seconds(u, kn) : -1;
	char bytes[32];

	printf("    %-7s %3d op%s %10.3f ms %10s %8.1f GB/s", kn->name, kn->n_ops,
	       kn->n_ops == 1 ? " " : "s", 1e3 * kr->seconds,
	       fl_format_bytes(kr->bytes, bytes, sizeof bytes), kr->gbps);
	if (base > 0)
		printf("   unfused %.3f ms (%s %.2fx)", 1e3 * base,
		       base >= kr->seconds ? "faster" : "SLOWER",
		       base >= kr->seconds ? base / kr->seconds
					   : kr->seconds / base);
	printf("  [%s", p->graph->ops[kn->ops[0]].name);
	if (kn->n_ops > 1)
		printf(" .. %s", p->graph->ops[kn->ops[kn->n_ops - 1]].name);
	printf("]\n");
}

static void run_opts(const fl_options *o, fl_run_opts *ro)
{
	fl_run_opts_default(ro);
	ro->workdir = o->workdir;
	ro->keep = o->keep;
	ro->timeout_s = o->timeout_s;
	ro->warmup = o->warmup;
	ro->repeat = o->repeat;
}

/* Runs one strategy; prints its line and kernels.  Returns 0 verified,
 * 1 when it failed or did not verify. */
static int run_one(const fl_graph *g, const fl_engine_opts *base,
		   const fl_options *o, fl_strategy s, double *unfused_total,
		   unfused_times *u)
{
	fl_session *ses = build(g, base, s);
	fl_interp_opts io = {o->seed, o->max_bytes};
	fl_run_result r;
	fl_run_opts ro;
	fl_error err = {""};
	fl_values *ref;
	const fl_program *p;
	int rc = 1;

	if (!ses)
		return 1;
	p = program_of(ses, s);
	ref = fl_interp_run(p->graph, &io, &err);
	if (!ref) {
		fprintf(stderr, "fuselab: %s: %s\n", g->name, err.msg);
		fl_engine_close(ses);
		return 1;
	}
	run_opts(o, &ro);
	memset(&r, 0, sizeof r);
	if (fl_run_program(p, ref, &ro, &r, &err) < 0) {
		fprintf(stderr, "fuselab: %s: %s\n", g->name, err.msg);
	} else if (r.status != FL_RUN_OK && r.status != FL_RUN_MISMATCH) {
		printf("%-10s %3d kernels  %s: %s\n", fl_strategy_name(s),
		       p->n_kernels, fl_run_status_name(r.status), r.message);
	} else {
		if (s == FL_STRATEGY_UNFUSED) {
			*unfused_total = r.total_seconds;
			record_unfused(u, p, &r);
		}
		printf("%-10s %3d kernels %10.3f ms", fl_strategy_name(s),
		       p->n_kernels, 1e3 * r.total_seconds);
		if (*unfused_total > 0)
			printf(" %7.2fx", *unfused_total / r.total_seconds);
		else
			printf("        -");
		printf("   max abs err %.2e  rel %.2e  verified %s\n", r.max_abs,
		       r.max_rel, r.verified ? "yes" : "NO");
		if (!r.verified)
			printf("    %s\n", r.message);
		for (int k = 0; k < r.n_kernels; k++)
			print_kernel(p, k, &r.kernels[k], u);
		rc = r.verified ? 0 : 1;
	}
	if (r.workdir[0])
		printf("    sources kept in %s\n", r.workdir);
	fl_run_result_free(&r);
	fl_values_free(ref);
	fl_engine_close(ses);
	return rc;
}

int fl_batch_strategies(const fl_graph *g, const fl_engine_opts *base,
			const fl_options *o)
{
	fl_strategy list[FL_STRATEGY_COUNT];
	int n = selected(o, list), failed = 0;
	double unfused_total = 0;
	unfused_times u = {0, NULL};

	printf("%-10s %11s %13s %8s\n", "strategy", "kernels", "time",
	       "speedup");
	for (int i = 0; i < n; i++) {
		failed |= run_one(g, base, o, list[i], &unfused_total, &u);
		fflush(stdout);
	}
	free(u.op_seconds);
	return failed ? 1 : 0;
}
