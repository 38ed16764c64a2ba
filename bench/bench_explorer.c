/* make bench: how fast the explorer feels (issue: the explorer must feel
 * instant).  A headless driver opens the explorer (app/explorer.h) and
 * renders the whole screen into a cell grid, as the terminal layer does,
 * and times
 *   - opening bert_encoder and showing its graph view (first render),
 *   - a step forward or back followed by a redraw, over the whole run
 *     (median, minimum, maximum),
 *   - a view switch with its redraw, over every view at several steps,
 *   - a plain redraw,
 *   - opening a synthetic 2,000-op graph and showing its graph view.
 * Targets: open under 0.5 s; step, switch and redraw under 30 ms median;
 * the 2,000-op graph under 2 s.  Each line says whether it met its target;
 * the numbers are this machine's, in this run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "explorer.h"
#include "keys.h"
#include "loader.h"
#include "synth.h"

#define W 200
#define H 50

typedef struct series {
	int n, cap;
	double *v;
} series;

static void add(series *s, double v)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->v = realloc(s->v, (size_t)s->cap * sizeof *s->v);
		if (!s->v)
			exit(1);
	}
	s->v[s->n++] = v;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Prints median, min and max in ms against a target median. */
static void report(const char *what, series *s, double target_ms)
{
	double med, lo, hi;

	if (s->n == 0)
		return;
	qsort(s->v, (size_t)s->n, sizeof *s->v, cmp_double);
	med = s->v[s->n / 2] * 1e3;
	lo = s->v[0] * 1e3;
	hi = s->v[s->n - 1] * 1e3;
	printf("  %-34s median %7.2f ms  min %7.2f  max %8.2f  (%d samples)  "
	       "target < %.0f ms: %s\n", what, med, lo, hi, s->n, target_ms,
	       med < target_ms ? "met" : "MISSED");
	free(s->v);
	memset(s, 0, sizeof *s);
}

static double timed_render(fl_explorer *x, fl_grid *g)
{
	double t0 = fl_now();

	fl_explorer_render(x, g);
	return fl_now() - t0;
}

/* Opens g in the explorer and renders the graph view once; the time of
 * both. */
static fl_explorer *open_timed(const fl_graph *g, const char *label,
			       fl_grid *grid, double *seconds)
{
	fl_engine_opts o;
	fl_error err = {""};
	double t0 = fl_now();
	fl_explorer *x;

	fl_engine_opts_default(&o);
	x = fl_explorer_open(g, &o, label, NULL, NULL, &err);
	if (!x) {
		fprintf(stderr, "bench_explorer: %s: %s\n", label, err.msg);
		exit(1);
	}
	fl_explorer_render(x, grid);
	*seconds = fl_now() - t0;
	return x;
}

static void bench_steps(fl_explorer *x, fl_grid *g)
{
	series fwd = {0}, back = {0}, redraw = {0}, sw = {0};
	int total;

	fl_explorer_wait(x, 600);
	fl_explorer_key(x, 'r');	/* the first run does the real work */
	total = fl_engine_position(fl_explorer_session(x));
	fl_explorer_key(x, 'g');
	fl_explorer_key(x, '0');
	fl_explorer_key(x, FL_KEY_ENTER);
	for (int k = 0; k < total; k++) {
		double t0 = fl_now();

		fl_explorer_key(x, 'n');
		fl_explorer_render(x, g);
		add(&fwd, fl_now() - t0);
		if (k % 7 == 0)
			add(&redraw, timed_render(x, g));
		if (k % (total / 8 + 1) == 0)
			for (int v = 0; v < 8; v++) {
				double t1 = fl_now();

				fl_explorer_key(x, '1' + v);
				fl_explorer_render(x, g);
				add(&sw, fl_now() - t1);
			}
		fl_explorer_key(x, '1');
	}
	for (int k = total; k > 0; k--) {
		double t0 = fl_now();

		fl_explorer_key(x, 'N');
		fl_explorer_render(x, g);
		add(&back, fl_now() - t0);
	}
	printf("  %d decisions walked forward then back, screen %dx%d\n",
	       total, W, H);
	report("step forward + redraw", &fwd, 30);
	report("step back + redraw", &back, 30);
	report("view switch + redraw", &sw, 30);
	report("redraw", &redraw, 30);
}

/* Rows [from, from+n) of the screen, the left pane's part. */
static void print_rows(const fl_grid *g, int from, int n)
{
	char row[2048];

	for (int y = from; y < from + n; y++) {
		fl_grid_row(g, y, row, sizeof row);
		printf("    |%.*s\n", 96, row);
	}
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "samples";
	char path[512];
	fl_error err = {""};
	fl_grid *grid = fl_grid_new(W, H);
	fl_graph *g;
	fl_explorer *x;
	double s;

	snprintf(path, sizeof path, "%s/bert_encoder.json", dir);
	g = fl_load_graph_file(path, &err);
	if (!g || !grid) {
		fprintf(stderr, "bench_explorer: %s\n", err.msg);
		return 1;
	}
	printf("explorer, headless (app/explorer.h rendering into a cell grid)\n");
	x = open_timed(g, "bert_encoder.json", grid, &s);
	printf("bert_encoder (%d ops): open and show the graph view %.3f s "
	       "(target < 0.5 s: %s)\n", g->n_ops, s, s < 0.5 ? "met" : "MISSED");
	bench_steps(x, grid);
	fl_explorer_close(x);
	fl_graph_free(g);

	g = fl_synth_graph(2000, 7);
	if (!g)
		return 1;
	x = open_timed(g, "synthetic", grid, &s);
	printf("synthetic graph (%d ops): open and show the graph view %.3f s "
	       "(target < 2 s: %s); its first rows:\n", g->n_ops, s,
	       s < 2 ? "met" : "MISSED");
	print_rows(grid, 1, 4);
	{
		double t0 = fl_now();

		fl_explorer_key(x, 'n');
		fl_explorer_key(x, 'n');
		fl_explorer_render(x, grid);
		printf("  two steps and a redraw %.3f s; the first rows then:\n",
		       fl_now() - t0);
		print_rows(grid, 1, 4);
	}
	{
		series redraw = {0};

		for (int i = 0; i < 20; i++)
			add(&redraw, timed_render(x, grid));
		report("synthetic: redraw", &redraw, 30);
	}
	fl_explorer_close(x);
	fl_graph_free(g);
	fl_grid_free(grid);
	return 0;
}
