/* make bench: layer 1 at scale (issue 8).  Elementwise chains and
 * synthetic random graphs (synth.h) of 100, 500, 2,000 and 10,000
 * primitive ops through the pipeline up to layer 1 in a fresh session
 * each: seconds, milliseconds per op, the growth of the time per op
 * from the previous size (1.00: linear), the kernels and the feedback
 * events.  Target: 2,000 ops under 10 s.  A layer-1 time budget of
 * FL_BENCH_L1_BUDGET seconds (default 120) bounds each run; a run that
 * spent it says so ("budget spent": the rest was left unfused).
 *
 * Usage: bench_layer1 [MAX_OPS]  (default 10000) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "engine.h"
#include "loader.h"
#include "synth.h"

/* An elementwise chain of n ops on [64, 64], or NULL. */
static fl_graph *chain_graph(int n)
{
	static const char *const kinds[] = {"exp", "tanh", "neg", "sigmoid",
					    "relu"};
	size_t cap = 256 + (size_t)n * 96, len;
	char *j = malloc(cap);
	fl_error err = {""};
	fl_graph *g;

	if (!j)
		return NULL;
	len = (size_t)snprintf(j, cap, "{\"format\":\"fuselab-graph/1\","
		"\"name\":\"chain%d\",\"tensors\":{"
		"\"x\":{\"shape\":[64,64],\"role\":\"input\"},"
		"\"y\":{\"shape\":[64,64],\"role\":\"output\"}},\"ops\":[", n);
	for (int i = 0; i < n; i++) {
		char in[16], out[16];

		snprintf(in, sizeof in, i ? "t%d" : "x", i - 1);
		snprintf(out, sizeof out, i < n - 1 ? "t%d" : "y", i);
		len += (size_t)snprintf(j + len, cap - len, "%s{\"name\":\"op%d\","
			"\"op\":\"%s\",\"in\":[\"%s\"],\"out\":\"%s\"}",
			i ? "," : "", i, kinds[i % 5], in, out);
	}
	len += (size_t)snprintf(j + len, cap - len, "]}");
	g = fl_load_graph_string(j, len, "chain", &err);
	if (!g)
		fprintf(stderr, "bench_layer1: chain %d: %s\n", n, err.msg);
	free(j);
	return g;
}

static int count_kind(const fl_session *s, fl_event_kind k, const char *text)
{
	const fl_event_log *log = fl_engine_events(s);
	int n = 0;

	for (int i = 0; i < fl_event_log_count(log); i++) {
		const fl_event *e = fl_event_log_get(log, i);

		n += e->kind == k && (!text || strstr(e->reason, text));
	}
	return n;
}

/* Runs g to layer 1; prints one row; returns the seconds or -1. */
static double bench_one(const char *family, fl_graph *g, int n,
			double prev_per_op, double budget)
{
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *s;
	double t0, dt, per_op;
	char growth[16] = "-";

	fl_engine_opts_default(&o);
	o.stop_after = FL_PASS_LAYER1;
	o.layer1.time_budget_s = budget;
	t0 = fl_now();
	s = fl_engine_open(g, &o, &err);
	if (!s || fl_engine_run(s, &err) < 0) {
		printf("%-7s %6d  failed: %s\n", family, n, err.msg);
		fl_engine_close(s);
		return -1;
	}
	dt = fl_now() - t0;
	per_op = dt / n;
	if (prev_per_op > 0)
		snprintf(growth, sizeof growth, "%.2f", per_op / prev_per_op);
	printf("%-7s %6d %9.2f %9.3f %7s %8d %8d%s\n", family, n, dt,
	       1e3 * per_op, growth, fl_engine_program(s)->n_kernels,
	       count_kind(s, FL_EV_FEEDBACK, NULL),
	       count_kind(s, FL_EV_SCHEDULED, "time budget") ?
	       "  budget spent" : "");
	fflush(stdout);
	fl_engine_close(s);
	return dt;
}

int main(int argc, char **argv)
{
	static const int sizes[] = {100, 500, 2000, 10000};
	int max = argc > 1 ? atoi(argv[1]) : 10000;
	const char *b = getenv("FL_BENCH_L1_BUDGET");
	double budget = b ? atof(b) : 120;

	printf("layer 1 scaling: seconds through layer 1, ms per op, growth "
	       "of the time per op from the previous size (1.00 = linear)\n");
	printf("%-7s %6s %9s %9s %7s %8s %8s\n", "graph", "ops", "seconds",
	       "ms/op", "growth", "kernels", "feedback");
	for (int f = 0; f < 2; f++) {
		double prev = -1;

		for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
			int n = sizes[i];
			fl_graph *g;
			double dt;

			if (n > max)
				break;
			g = f == 0 ? chain_graph(n) : fl_synth_graph(n, 42);
			if (!g)
				return 1;
			dt = bench_one(f == 0 ? "chain" : "random", g, n, prev,
				       budget);
			prev = dt > 0 ? dt / n : -1;
			fl_graph_free(g);
		}
	}
	return 0;
}
