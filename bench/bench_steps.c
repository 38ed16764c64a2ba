/* make bench: how long one step of the explorer costs (DESIGN 1: cheap
 * steps both ways).  For each graph it opens a session, runs it once to
 * the end (the first run does the real work: isl scheduling, code
 * generation), then times
 *   - every forward step from step 0 to the end,
 *   - every backward step from the end to step 0,
 *   - random gotos (seeded),
 * and prints the median and maximum of each and the time of the whole
 * walk forward then backward.  The graphs: bert_encoder and
 * transformer_decoder through codegen (every pass but compile and run,
 * whose results are memoised like the rest), and a synthetic graph of
 * 1,000 primitive ops through the partition (layer 1 on graphs of that
 * size is a separate benchmark). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "engine.h"
#include "loader.h"
#include "rng.h"
#include "synth.h"

#define N_GOTO 200

typedef struct series {
	int n;
	double *v;
} series;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median_of(series *s)
{
	qsort(s->v, (size_t)s->n, sizeof *s->v, cmp_double);
	return s->n ? s->v[s->n / 2] : 0;
}

static double max_of(const series *s)
{
	double m = 0;

	for (int i = 0; i < s->n; i++)
		m = s->v[i] > m ? s->v[i] : m;
	return m;
}

static double sum_of(const series *s)
{
	double t = 0;

	for (int i = 0; i < s->n; i++)
		t += s->v[i];
	return t;
}

/* Times one engine move; -1 on error (printed). */
static double timed(fl_session *s, int (*move)(fl_session *, fl_error *),
		    int k)
{
	fl_error err = {""};
	double t0 = fl_now();
	int rc = move ? move(s, &err) : fl_engine_goto(s, k, &err);

	if (rc < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		return -1;
	}
	return fl_now() - t0;
}

static void report(const char *what, series *s)
{
	double max = max_of(s);

	printf("    %-14s %6d moves  median %8.3f ms  max %8.3f ms  total "
	       "%8.3f s\n", what, s->n, 1e3 * median_of(s), 1e3 * max,
	       sum_of(s));
}

static int bench_graph(const char *label, const fl_graph *g, fl_pass stop)
{
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *s;
	fl_rng rng = fl_rng_seed(11, "steps");
	series fwd = {0, NULL}, back = {0, NULL}, jump = {0, NULL};
	double t0, first, walk;
	int total, rc = -1;

	fl_engine_opts_default(&o);
	o.stop_after = stop;
	s = fl_engine_open(g, &o, &err);
	if (!s) {
		fprintf(stderr, "bench: %s: %s\n", label, err.msg);
		return -1;
	}
	t0 = fl_now();
	total = fl_engine_total(s, &err);
	first = fl_now() - t0;
	fwd.v = malloc(((size_t)total + 1) * sizeof *fwd.v);
	back.v = malloc(((size_t)total + 1) * sizeof *back.v);
	jump.v = malloc(N_GOTO * sizeof *jump.v);
	if (total < 0 || !fwd.v || !back.v || !jump.v)
		goto out;
	if (timed(s, NULL, 0) < 0)
		goto out;
	while (!fl_engine_done(s))
		if ((fwd.v[fwd.n++] = timed(s, fl_engine_step, 0)) < 0)
			goto out;
	while (fl_engine_position(s) > 0)
		if ((back.v[back.n++] = timed(s, fl_engine_step_back, 0)) < 0)
			goto out;
	for (int i = 0; i < N_GOTO; i++)
		if ((jump.v[jump.n++] = timed(s, NULL, (int)fl_rng_below(&rng,
			(uint64_t)total + 1))) < 0)
			goto out;
	walk = sum_of(&fwd) + sum_of(&back);
	printf("  %s: %d ops, %d decisions through %s; first complete run "
	       "%.3f s\n", label, g->n_ops, total, fl_pass_name(stop), first);
	report("forward step", &fwd);
	report("backward step", &back);
	report("random goto", &jump);
	printf("    walk every step forward then backward: %.3f s\n", walk);
	rc = 0;
out:
	free(fwd.v);
	free(back.v);
	free(jump.v);
	fl_engine_close(s);
	return rc;
}

static int bench_file(const char *samples, const char *name)
{
	char path[1024];
	fl_error err = {""};
	fl_graph *g;
	int rc;

	snprintf(path, sizeof path, "%s/%s.json", samples, name);
	g = fl_load_graph_file(path, &err);
	if (!g) {
		fprintf(stderr, "bench: %s\n", err.msg);
		return -1;
	}
	rc = bench_graph(name, g, FL_PASS_CODEGEN);
	fl_graph_free(g);
	return rc;
}

int main(int argc, char **argv)
{
	const char *samples = argc > 1 ? argv[1] : "samples";
	fl_graph *g;
	int rc = 0;

	printf("step latency (one session per graph; times per move)\n");
	rc |= bench_file(samples, "bert_encoder");
	rc |= bench_file(samples, "transformer_decoder");
	g = fl_synth_graph(1000, 7);
	if (!g)
		return 1;
	rc |= bench_graph("synthetic-1k", g, FL_PASS_AGGREGATE);
	fl_graph_free(g);
	return rc ? 1 : 0;
}
