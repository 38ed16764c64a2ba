/* Differential testing of the whole compiler: random graphs
 * (random_graph.h) compiled and run under every strategy, each program
 * checked kernel by kernel against the reference interpreter by the run
 * pass, under the default options and under variants that take other
 * paths through the engine: the stencil rules file, a scheduler budget so
 * small that layer 1 must split micro-graphs (feedback), and --fuse /
 * --never-fuse pairs drawn from the seed.  And the CUDA backend's unit of
 * each graph compiles with nvcc (when nvcc exists; nothing here needs a
 * GPU).
 *
 * A failure names everything needed to reproduce it: the seed, the
 * number of ops, the variant, the strategy and the first kernel whose
 * values deviate, with the fuselab command lines that do the same.
 *
 * Seeds that once found a bug stay in the list below (with the bug in a
 * comment), so that the bug stays fixed; `make soak` looks for new ones
 * (scripts/soak.sh).  The sanitizer pass runs a smaller list: it is about
 * memory errors in the engine, and every ladder there costs seconds. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "ladder.h"
#include "random_graph.h"
#include "rng.h"
#include "runner.h"
#include "test_util.h"

typedef enum variant {
	V_DEFAULT,
	V_STENCIL,	/* samples/rules/stencil-chains.json */
	V_BUDGET,	/* a tiny isl scheduler budget: feedback */
	V_PAIRS,	/* --fuse and --never-fuse pairs from the seed */
} variant;

static const char *const variant_names[] = {
	[V_DEFAULT] = "default", [V_STENCIL] = "stencil-rules",
	[V_BUDGET] = "sched-budget", [V_PAIRS] = "fuse-pairs",
};

typedef struct diff_case {
	uint64_t seed;
	int n_ops;
	variant v;
	bool ladder;	/* every strategy; else apollo alone (the variants
			   change what fuses, and apollo runs every pass) */
} diff_case;

/* isl operations per micro-graph in the budget variant: enough for a
 * single op, too few for most merged ones. */
#define TINY_BUDGET 400

/* Each compile of a generated program costs about a second: make
 * test's time limits allow about eight programs in the plain pass. */
static const diff_case plain_cases[] = {
	{1, 12, V_DEFAULT, true},
	{3, 10, V_STENCIL, false},
	{4, 10, V_BUDGET, false},
	{5, 10, V_PAIRS, false},
};

/* The sanitizer pass: one graph, every strategy, the tiny budget (its
 * feedback is the path the plain pass's default graph does not take). */
static const diff_case san_cases[] = {
	{4, 8, V_BUDGET, true},
};

static const diff_case *cases(int *n)
{
	*n = T_SANITIZED ? (int)(sizeof san_cases / sizeof san_cases[0])
			 : (int)(sizeof plain_cases / sizeof plain_cases[0]);
	return T_SANITIZED ? san_cases : plain_cases;
}

/* One --fuse or --never-fuse pair of two different ops of g, drawn. */
static void draw_pair(const fl_graph *g, fl_rng *rng, fl_op_pair *p)
{
	int a = (int)fl_rng_below(rng, g->n_ops);
	int b = (int)fl_rng_below(rng, g->n_ops - 1);

	if (b >= a)
		b++;
	snprintf(p->a, sizeof p->a, "%s", g->ops[a].name);
	snprintf(p->b, sizeof p->b, "%s", g->ops[b].name);
}

/* The engine options of case c on graph g; the pairs' text (for the
 * reproducing command line) into pairs. */
static void case_opts(const diff_case *c, const fl_graph *g,
		      fl_engine_opts *o, char *pairs, size_t n)
{
	fl_error err = {""};
	char path[900];
	fl_rng rng = fl_rng_seed(c->seed, "differential-pairs");

	fl_engine_opts_default(o);
	o->run.warmup = 0;
	o->run.repeat = 0;	/* verification only: nothing timed */
	pairs[0] = '\0';
	switch (c->v) {
	case V_DEFAULT:
		break;
	case V_STENCIL:
		snprintf(path, sizeof path, "%s/rules/stencil-chains.json",
			 t_samples_dir());
		if (fl_rules_load(&o->rules, path, &err) < 0)
			fail_msg("%s", err.msg);
		snprintf(pairs, n, " --rules %s", path);
		break;
	case V_BUDGET:
		o->layer1.sched_budget = TINY_BUDGET;
		snprintf(pairs, n, " --sched-budget %d", TINY_BUDGET);
		break;
	case V_PAIRS:
		if (g->n_ops < 2)
			break;
		draw_pair(g, &rng, &o->fuse[o->n_fuse++]);
		draw_pair(g, &rng, &o->never_fuse[o->n_never++]);
		snprintf(pairs, n, " --fuse %s,%s --never-fuse %s,%s",
			 o->fuse[0].a, o->fuse[0].b, o->never_fuse[0].a,
			 o->never_fuse[0].b);
		break;
	}
}

/* "kernel fl_k3 (mul_1 .. exp_2)": the first kernel of st whose values
 * deviate, or what went wrong when none ran. */
static void first_deviation(const fl_ladder_step *st, char *buf, size_t n)
{
	for (int k = 0; k < st->n_kernels; k++) {
		const fl_ladder_kernel *lk = &st->kernels[k];

		if (!lk->r.ok) {
			snprintf(buf, n, "kernel %s (%d ops: %s .. %s), max "
				 "abs err %.3g", lk->name, lk->n_ops, lk->first_op,
				 lk->last_op, lk->r.max_abs);
			return;
		}
	}
	snprintf(buf, n, "no kernel deviates (%s)",
		 st->n_kernels ? "an output does" : "none ran");
}

static void check_step(const diff_case *c, const fl_ladder_step *st,
		       const char *extra)
{
	char where[512];

	if (st->ran && st->verified)
		return;
	first_deviation(st, where, sizeof where);
	fail_msg("seed %llu (%d ops), variant %s, strategy %s: %s; first "
		 "deviating: %s; message: %s\nreproduce: fuselab gen --ops %d "
		 "--seed %llu -o g.json && fuselab --batch --run --strategy %s "
		 "--repeat 1 --warmup 0%s g.json",
		 (unsigned long long)c->seed, c->n_ops, variant_names[c->v],
		 fl_strategy_name(st->strategy),
		 st->ran ? "did not verify" : "did not run", where,
		 st->ran ? st->message : st->error, c->n_ops,
		 (unsigned long long)c->seed, fl_strategy_name(st->strategy),
		 extra);
}

static int count_feedback(const fl_ladder_step *st)
{
	int n = 0;

	for (int i = 0; st->log && i < fl_event_log_count(st->log); i++)
		n += fl_event_log_get(st->log, i)->kind == FL_EV_FEEDBACK;
	return n;
}

/* Case c through its strategies; returns the feedback events seen. */
static int run_case(const diff_case *c)
{
	static const fl_strategy all[] = {
		FL_STRATEGY_UNFUSED, FL_STRATEGY_XLA, FL_STRATEGY_APOLLO_L1,
		FL_STRATEGY_APOLLO_L2, FL_STRATEGY_APOLLO,
	};
	static const fl_strategy apollo[] = {FL_STRATEGY_APOLLO};
	int n = c->ladder ? 5 : 1, feedback = 0;
	fl_graph *g = t_random_graph(c->seed, c->n_ops);
	fl_engine_opts *o = malloc(sizeof *o);
	fl_error err = {""};
	fl_ladder l;
	char extra[1024];

	assert_non_null(o);
	case_opts(c, g, o, extra, sizeof extra);
	if (fl_ladder_run(g, o, c->ladder ? all : apollo, n, &l, &err) < 0)
		fail_msg("seed %llu: %s", (unsigned long long)c->seed, err.msg);
	assert_int_equal(l.n, n);
	for (int i = 0; i < l.n; i++) {
		check_step(c, &l.steps[i], extra);
		feedback += count_feedback(&l.steps[i]);
	}
	fl_ladder_free(&l);
	free(o);
	fl_graph_free(g);
	return feedback;
}

static void test_differential_strategies(void **state)
{
	int n, feedback = 0, budget_cases = 0;
	const diff_case *list = cases(&n);

	(void)state;
	for (int i = 0; i < n; i++) {
		int f = run_case(&list[i]);

		if (list[i].v == V_BUDGET) {
			feedback += f;
			budget_cases++;
		}
	}
	/* the budget variant is there to take layer 1's feedback path */
	if (budget_cases && feedback == 0)
		fail_msg("sched-budget %d: no feedback event in %d graphs",
			 TINY_BUDGET, budget_cases);
}

/* The failure message names what reproduces it: a step that did not
 * verify, with one kernel off, fails the test with the seed, the variant,
 * the strategy and that kernel.  (A made-up step: no compiler is wrong on
 * purpose here.) */
static void test_differential_failure_message(void **state)
{
	fl_ladder_kernel k[2] = {{.name = "fl_k0", .n_ops = 1,
				  .first_op = "exp_0", .last_op = "exp_0",
				  .r = {.ok = true}},
				 {.name = "fl_k1", .n_ops = 2,
				  .first_op = "mul_1", .last_op = "tanh_2",
				  .r = {.ok = false, .max_abs = 0.5}}};
	fl_ladder_step st = {.strategy = FL_STRATEGY_APOLLO, .ran = true,
			     .verified = false, .n_kernels = 2, .kernels = k};
	char where[512];

	(void)state;
	first_deviation(&st, where, sizeof where);
	assert_string_equal(where, "kernel fl_k1 (2 ops: mul_1 .. tanh_2), "
			    "max abs err 0.5");
	st.n_kernels = 0;
	first_deviation(&st, where, sizeof where);
	t_assert_contains(where, "none ran");
}

/* The CUDA unit of graph g under strategy s, through codegen (malloc'd). */
static char *cuda_unit(const fl_graph *g, fl_strategy s, uint64_t seed)
{
	char what[48];
	fl_session *ses;
	char *src;

	snprintf(what, sizeof what, "seed %llu", (unsigned long long)seed);
	ses = t_cuda_codegen(g, s, what);
	src = strdup(fl_engine_source(ses));
	assert_non_null(src);
	fl_engine_close(ses);
	return src;
}

/* The CUDA of two random graphs (strategy apollo: the most fused)
 * compiles: nvcc costs seconds a call, so two graphs.  Under the
 * sanitizer the units are still generated (our code), not compiled
 * (nvcc's). */
static void test_differential_cuda_compiles(void **state)
{
	static const uint64_t seeds[] = {1, 3};
	char nvcc[512], dir[512], path[1100], cmd[4096], *out = NULL;
	bool have_nvcc = fl_nvcc_find(nvcc, sizeof nvcc);

	(void)state;
	if (!have_nvcc && !T_SANITIZED)
		skip();
	t_make_dir(dir, sizeof dir);
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
		fl_graph *g = t_random_graph(seeds[i], 12);
		char *unit = cuda_unit(g, FL_STRATEGY_APOLLO, seeds[i]);
		FILE *f;

		snprintf(path, sizeof path, "%s/seed%llu.cu", dir,
			 (unsigned long long)seeds[i]);
		f = fopen(path, "w");
		assert_non_null(f);
		fputs(unit, f);
		assert_int_equal(fclose(f), 0);
		free(unit);
		fl_graph_free(g);
		if (T_SANITIZED || !have_nvcc)
			continue;
		snprintf(cmd, sizeof cmd, "cd '%s' && '%s' " T_NVCC_CHECK
			 " -o seed.o '%s'", dir, nvcc, path);
		if (t_run(cmd, &out) != 0)
			fail_msg("seed %llu (12 ops): the CUDA of strategy "
				 "apollo does not compile:\n%s",
				 (unsigned long long)seeds[i], out);
		free(out);
		out = NULL;
	}
	t_remove_dir(dir);
}

FL_SUITE(differential,
	 cmocka_unit_test(test_differential_strategies),
	 cmocka_unit_test(test_differential_failure_message),
	 cmocka_unit_test(test_differential_cuda_compiles));
