/* make bench: how the engine's preprocess + partition time grows with the
 * graph.  Builds synthetic random graphs of 1k, 10k and 100k primitive
 * ops (in memory, seeded), runs a session to the end and prints the time
 * and the time per op at each size (graphs from synth.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "engine.h"
#include "synth.h"

int main(int argc, char **argv)
{
	static const int sizes[] = {1000, 10000, 100000};
	double per_op[3] = {0};
	int n_sizes = argc > 1 ? atoi(argv[1]) : 3;

	if (n_sizes < 1 || n_sizes > 3)
		n_sizes = 3;
	printf("preprocess + partition of synthetic graphs (seeded, mostly "
	       "local data flow, 64x64 tensors)\n");
	printf("%8s %10s %10s %10s %12s %10s\n", "ops", "build s", "run s",
	       "us/op", "micro-graphs", "events");
	for (int k = 0; k < n_sizes; k++) {
		double t0 = fl_now(), t1, t2;
		fl_graph *g = fl_synth_graph(sizes[k], 7);
		fl_error err = {""};
		fl_session *s;

		if (!g)
			return 1;
		t1 = fl_now();
		s = fl_engine_open(g, NULL, &err);
		if (!s || fl_engine_run(s, &err) < 0) {
			fprintf(stderr, "bench: %s\n", err.msg);
			return 1;
		}
		t2 = fl_now();
		per_op[k] = 1e6 * (t2 - t1) / g->n_ops;
		printf("%8d %10.3f %10.3f %10.2f %12d %10d\n", g->n_ops, t1 - t0,
		       t2 - t1, per_op[k],
		       fl_partition_count_alive(fl_engine_partition(s)),
		       fl_event_log_count(fl_engine_events(s)));
		fflush(stdout);
		fl_engine_close(s);
		fl_graph_free(g);
	}
	if (n_sizes == 3)
		printf("growth of time per op from 1k to 100k ops: %.2fx "
		       "(1.00x would be exactly linear)\n", per_op[2] / per_op[0]);
	return 0;
}
