/* Trustworthy timings (issue 11): the noise label rule; the interleaved
 * timing child (rounds in a balanced order, fused kernels alternating with
 * their unfused group, the copy probe); the ladder's timings coming from
 * it; --pin taking effect on the child's threads; an interrupt during the
 * interleaved phase leaving no process and no directory; the CLI printing
 * the machine, load and copy bandwidth above the ladder.  Small samples
 * and --repeat 3 keep it quick. */
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

/* The graph the timing tests run: softmax, or under the sanitizers,
 * whose interpreter is slow, the smaller apollo_fig3 (the same rules
 * apply to any graph's timings). */
#define TIMED_SAMPLE (T_SANITIZED ? "apollo_fig3" : "softmax")

#include "engine.h"
#include "interleave.h"
#include "ladder.h"
#include "loader.h"
#include "machine.h"

/* ---- the label rule ---------------------------------------------------- */

static void test_timing_label(void **state)
{
	(void)state;
	/* disjoint ranges: a measured difference either way */
	assert_int_equal(fl_timing_compare(2.0, 3.0, 1.0, 1.5),
			 FL_TIMING_FASTER);
	assert_int_equal(fl_timing_compare(1.0, 1.5, 2.0, 3.0),
			 FL_TIMING_SLOWER);
	/* overlapping, nested or touching ranges: within noise, however
	 * far apart the medians may be */
	assert_int_equal(fl_timing_compare(1.0, 2.0, 1.5, 3.0), FL_TIMING_NOISE);
	assert_int_equal(fl_timing_compare(1.0, 10.0, 2.0, 3.0),
			 FL_TIMING_NOISE);
	assert_int_equal(fl_timing_compare(1.0, 2.0, 2.0, 3.0), FL_TIMING_NOISE);
	assert_int_equal(fl_timing_compare(2.0, 3.0, 1.0, 2.0), FL_TIMING_NOISE);
	/* not measured, or nonsense: no label */
	assert_int_equal(fl_timing_compare(0, 0, 1.0, 2.0), FL_TIMING_UNKNOWN);
	assert_int_equal(fl_timing_compare(1.0, 2.0, 0, 0), FL_TIMING_UNKNOWN);
	assert_int_equal(fl_timing_compare(3.0, 2.0, 0.5, 1.0),
			 FL_TIMING_UNKNOWN);
	assert_string_equal(fl_timing_label_name(FL_TIMING_FASTER), "faster");
	assert_string_equal(fl_timing_label_name(FL_TIMING_SLOWER), "SLOWER");
	assert_string_equal(fl_timing_label_name(FL_TIMING_NOISE),
			    "within noise");
	assert_string_equal(fl_timing_label_name(FL_TIMING_UNKNOWN), "");
	/* counts: one time a side is a point, never a difference */
	assert_int_equal(fl_timing_compare_n(1, 2.0, 2.0, 1, 1.0, 1.0),
			 FL_TIMING_ONE_ROUND);
	assert_int_equal(fl_timing_compare_n(10, 2.0, 3.0, 1, 1.0, 1.0),
			 FL_TIMING_ONE_ROUND);
	assert_int_equal(fl_timing_compare_n(2, 2.0, 3.0, 2, 1.0, 1.5),
			 FL_TIMING_FASTER);
	assert_int_equal(fl_timing_compare_n(0, 0, 0, 3, 1.0, 1.5),
			 FL_TIMING_UNKNOWN);
	assert_string_equal(fl_timing_label_name(FL_TIMING_ONE_ROUND),
			    "one round");
}

/* The copy probe's arrays are well over the L3, within bounds. */
static void test_timing_copy_size(void **state)
{
	(void)state;
	assert_int_equal(fl_copy_probe_bytes((int64_t)32 << 20),
			 (int64_t)128 << 20);
	assert_int_equal(fl_copy_probe_bytes(0), (int64_t)32 << 20);
	assert_int_equal(fl_copy_probe_bytes((int64_t)1 << 30),
			 (int64_t)512 << 20);
}

/* ---- the interleaved child --------------------------------------------- */

static void quick(fl_engine_opts *o)
{
	fl_engine_opts_default(o);
	o->run.warmup = 1;
	o->run.repeat = 3;
}

static fl_session *verified_session(const fl_graph *g, fl_strategy s)
{
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *ses;

	quick(&o);
	o.strategy = s;
	o.stop_after = FL_PASS_RUN;
	o.run_kernels = true;
	o.run.repeat = 0;
	ses = fl_engine_open(g, &o, &err);
	if (!ses || fl_engine_run(ses, &err) < 0)
		fail_msg("%s: %s", fl_strategy_name(s), err.msg);
	assert_non_null(fl_engine_run_result(ses));
	assert_true(fl_engine_run_result(ses)->verified);
	return ses;
}

/* The rounds' orders (the copy is -1 in them, item m - 1 in
 * fl_timing_order's) are fl_timing_order's, each with every item once. */
static void assert_rotated(const int *order, int rounds, int m)
{
	for (int r = 0; r < rounds; r++) {
		int seen = 0;

		for (int j = 0; j < m; j++) {
			int item = order[r * m + j];
			int want = fl_timing_order(m, r, j);

			assert_int_equal(item, want == m - 1 ? -1 : want);
			seen |= 1 << (item + 1);	/* -1 (copy) too */
		}
		assert_int_equal(__builtin_popcount((unsigned)seen), m);
	}
}

/* Over a full design (m rounds, 2m for odd m) every ordered pair of
 * items is adjacent equally often, every item first equally often, and
 * every round is a permutation: no program always runs right after the
 * copy probe, whose arrays flush the caches. */
static void test_timing_order_balanced(void **state)
{
	(void)state;
	for (int m = 2; m <= 7; m++) {
		int rounds = m % 2 ? 2 * m : m;
		int next[8][8] = {{0}}, first[8] = {0};

		for (int r = 0; r < rounds; r++) {
			int seen = 0;

			first[fl_timing_order(m, r, 0)]++;
			for (int j = 0; j < m; j++) {
				int a = fl_timing_order(m, r, j);

				assert_true(a >= 0 && a < m);
				seen |= 1 << a;
				if (j + 1 < m)
					next[a][fl_timing_order(m, r, j + 1)]++;
			}
			assert_int_equal(seen, (1 << m) - 1);
		}
		for (int a = 0; a < m; a++) {
			assert_int_equal(first[a], rounds / m);
			for (int b = 0; b < m; b++)
				assert_int_equal(next[a][b],
						 a == b ? 0 : rounds / m);
		}
	}
}

/* The sign test: the chance of k or more heads in n tosses, and the
 * paired verdicts it gives -- 5 of 5 is a difference (1 in 32), 4 of 5
 * is not; 9 of 10 is, 8 of 10 is not; too few pairs give no verdict. */
static void test_timing_paired_rule(void **state)
{
	fl_ratio r = {{1.0, 0.9, 1.1, 0.95, 1.05, 5}, 0, 0};

	(void)state;
	assert_true(fabs(fl_sign_tail(5, 5) - 1.0 / 32) < 1e-12);
	assert_true(fabs(fl_sign_tail(10, 9) - 11.0 / 1024) < 1e-12);
	assert_true(fabs(fl_sign_tail(10, 8) - 56.0 / 1024) < 1e-12);
	assert_true(fl_sign_tail(10, 0) == 1 && fl_sign_tail(3, 4) == 0);
	r.faster = 5;
	assert_int_equal(fl_timing_paired(&r), FL_TIMING_FASTER);
	r.faster = 4;
	r.slower = 1;
	assert_int_equal(fl_timing_paired(&r), FL_TIMING_NOISE);
	r.faster = 0;
	r.slower = 5;
	assert_int_equal(fl_timing_paired(&r), FL_TIMING_SLOWER);
	r.s.n = 10;
	r.faster = 9;
	r.slower = 1;
	assert_int_equal(fl_timing_paired(&r), FL_TIMING_FASTER);
	r.faster = 8;
	r.slower = 2;
	assert_int_equal(fl_timing_paired(&r), FL_TIMING_NOISE);
	r.s.n = 4;
	r.faster = 4;
	r.slower = 0;
	assert_int_equal(fl_timing_paired(&r), FL_TIMING_UNKNOWN);
}

/* unfused and xla of softmax timed in one child: the rounds rotate, the
 * fused kernel alternates with its unfused group (F U F U F U), every
 * series has repeat samples ordered min <= median <= max, and the copy
 * probe measured a bandwidth. */
static void test_timing_interleaved_child(void **state)
{
	fl_graph *g = t_load_sample(TIMED_SAMPLE);
	fl_session *u = verified_session(g, FL_STRATEGY_UNFUSED);
	fl_session *x = verified_session(g, FL_STRATEGY_XLA);
	fl_timed_program tp[2] = {
		{fl_engine_program(u), fl_engine_build(u)->so_path,
		 fl_engine_build(u)->workdir, true},
		{fl_engine_program(x), fl_engine_build(x)->so_path,
		 fl_engine_build(x)->workdir, false},
	};
	fl_engine_opts o;
	fl_error err = {""};
	fl_timing t;
	int paired = 0;

	(void)state;
	quick(&o);
	if (fl_time_interleaved(tp, 2, &o.run, o.interp.seed, &t, &err) < 0)
		fail_msg("%s", err.msg);
	if (t.status != FL_RUN_OK)
		fail_msg("%s: %s", fl_run_status_name(t.status), t.message);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.rounds, 3);
	/* items 0, 1 the programs, 2 the copy; round 0 is 0 1 2 */
	for (int j = 0; j < 3; j++)
		assert_int_equal(t.order[j], j);
	for (int r = 0; r < 3; r++)
		for (int j = 0; j < 3; j++)
			assert_int_equal(t.order[r * 3 + j], (r + j) % 3);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(t.total[i].n, 3);
		assert_true(t.total[i].min > 0);
		assert_true(t.total[i].min <= t.total[i].median &&
			    t.total[i].median <= t.total[i].max);
		for (int k = 0; k < tp[i].p->n_kernels; k++) {
			const fl_timed_kernel *tk = &t.kernels[i][k];

			assert_int_equal(tk->round.n, 3);
			assert_true(tk->round.min <= tk->round.max);
			/* fused kernels of xla (2+ ops) are paired, no other */
			assert_int_equal(tk->paired,
					 i == 1 && tp[i].p->kernels[k].n_ops > 1);
			if (!tk->paired)
				continue;
			paired++;
			assert_string_equal(tk->sequence, "FUFUFU");
			assert_int_equal(tk->n_base, tp[i].p->kernels[k].n_ops);
			assert_int_equal(tk->fused.n, 3);
			assert_int_equal(tk->base.n, 3);
			assert_true(tk->fused.min > 0 && tk->base.min > 0);
		}
	}
	assert_true(paired >= 1);
	assert_int_equal(t.copy_gbps.n, 3);
	assert_true(t.copy_gbps.min > 0 && t.copy_gbps.min <= t.copy_gbps.max);
	assert_int_equal(t.copy_bytes,
			 2 * fl_copy_probe_bytes(fl_machine_host()->l3));
	assert_true(t.n_threads >= 1);
	assert_true(t.affinity[0] != '\0');
	assert_false(t.pinned);
	fl_timing_free(&t);
	fl_engine_close(u);
	fl_engine_close(x);
	fl_graph_free(g);
}

/* ---- the ladder -------------------------------------------------------- */

/* The ladder's times are the interleaved ones: every step timed repeat
 * rounds in one child, rotated, each kernel with a label that follows
 * from its spread and its unfused kernels'. */
static void test_timing_ladder(void **state)
{
	static const fl_strategy list[] = {FL_STRATEGY_UNFUSED, FL_STRATEGY_XLA,
					   FL_STRATEGY_APOLLO_L1};
	fl_graph *g = t_load_sample(TIMED_SAMPLE);
	fl_engine_opts o;
	fl_error err = {""};
	fl_ladder l;
	int paired = 0;

	(void)state;
	quick(&o);
	assert_int_equal(fl_ladder_run(g, &o, list, 3, &l, &err), 0);
	assert_int_equal(l.n, 3);
	if (!l.interleaved)
		fail_msg("not interleaved: %s", l.timing_message);
	assert_int_equal(l.n_timed, 3);
	assert_int_equal(l.rounds, 3);
	assert_rotated(l.order, 3, 4);
	assert_true(strstr(l.machine, "cores") != NULL);
	assert_true(l.copy_gbps.n == 3 && l.copy_gbps.median > 0);
	for (int i = 0; i < 3; i++) {
		const fl_ladder_step *st = &l.steps[i];

		assert_true(st->verified);
		assert_true(st->total_min > 0 &&
			    st->total_min <= st->total_seconds &&
			    st->total_seconds <= st->total_max);
		if (i > 0)
			assert_int_equal(st->label, fl_timing_compare(
				l.steps[0].total_min, l.steps[0].total_max,
				st->total_min, st->total_max));
		for (int k = 0; k < st->n_kernels; k++) {
			const fl_ladder_kernel *lk = &st->kernels[k];

			assert_int_equal(lk->r.n_timed, 3);
			if (lk->n_ops < 2)
				continue;
			assert_true(lk->paired);
			paired++;
			assert_true(lk->unfused_min > 0 &&
				    lk->unfused_min <= lk->unfused_max);
			assert_int_equal(lk->label, fl_timing_compare(
				lk->unfused_min, lk->unfused_max,
				lk->r.min_seconds, lk->r.max_seconds));
			assert_int_not_equal(lk->label, FL_TIMING_UNKNOWN);
		}
	}
	assert_true(paired >= 2);
	fl_ladder_free(&l);
	fl_graph_free(g);
}

/* Whether a CPU list ("3", "0-1", "0,2") names exactly one CPU. */
static bool one_cpu(const char *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == '-' || list[i] == ',')
			return false;
	return n > 0;
}

/* Counts the threads of an affinity text whose list is one CPU. */
static int pinned_threads(const char *aff, int *threads)
{
	int pinned = 0;

	*threads = 0;
	while (*aff) {
		size_t n = strcspn(aff, " ");

		if (n) {
			(*threads)++;
			pinned += one_cpu(aff, n);
		}
		aff += n + (aff[n] == ' ');
	}
	return pinned;
}

/* --pin: every thread of the timing child is bound to one CPU (as the
 * kernel reports it); without it, none is (on a machine with 2+ CPUs). */
static void test_timing_pin(void **state)
{
	static const fl_strategy list[] = {FL_STRATEGY_APOLLO_L1};
	fl_graph *g = t_load_sample(TIMED_SAMPLE);
	fl_engine_opts o;
	fl_error err = {""};
	fl_ladder l;
	int threads, pinned;

	(void)state;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		skip();
	quick(&o);
	o.run.pin = true;
	assert_int_equal(fl_ladder_run(g, &o, list, 1, &l, &err), 0);
	if (!l.interleaved)
		fail_msg("not timed: %s", l.timing_message);
	assert_true(l.pinned);
	pinned = pinned_threads(l.affinity, &threads);
	assert_int_equal(threads, l.n_threads);
	/* the OpenMP team outlives the rounds: more than the main thread */
	assert_true(threads >= 2);
	if (pinned != threads)
		fail_msg("--pin: threads' CPUs: %s", l.affinity);
	fl_ladder_free(&l);
	o.run.pin = false;
	assert_int_equal(fl_ladder_run(g, &o, list, 1, &l, &err), 0);
	assert_false(l.pinned);
	pinned = pinned_threads(l.affinity, &threads);
	if (pinned != 0)
		fail_msg("not pinned, yet threads' CPUs are: %s", l.affinity);
	fl_ladder_free(&l);
	fl_graph_free(g);
}

/* ---- interrupting the interleaved phase -------------------------------- */

/* Children of this process, from /proc, into pids (at most n). */
static int our_children(int *pids, int n)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int found = 0;

	while (d && (e = readdir(d)) && found < n) {
		char path[300], buf[512], *p;
		FILE *f;
		int ppid = -1;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof buf, f) && (p = strrchr(buf, ')')))
			sscanf(p + 2, "%*c %d", &ppid);
		fclose(f);
		if (ppid == (int)getpid())
			pids[found++] = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

static bool gone(int pid)
{
	char path[64];
	struct stat sb;

	snprintf(path, sizeof path, "/proc/%d", pid);
	return stat(path, &sb) != 0;
}

static volatile sig_atomic_t stop_flag;

typedef struct stopper {
	int pids[16];
	int n_pids;
	bool in_time;
} stopper;

/* On the first "time" report (the interleaved child is warming up):
 * notes the children alive now, then raises the interrupt flag. */
static void stop_in_time(void *user, const char *phase, int k, int n)
{
	stopper *s = user;

	(void)k;
	(void)n;
	if (strcmp(phase, "time") != 0 || s->in_time)
		return;
	s->in_time = true;
	s->n_pids = our_children(s->pids, 16);
	stop_flag = 1;
}

/* An interrupt while the strategies are timed together: the ladder marks
 * its first step interrupted (the run stopped, every work directory named
 * as removed), the timing child is gone and the work directories too,
 * even with keep. */
static void test_timing_interrupted(void **state)
{
	static const fl_strategy list[] = {FL_STRATEGY_UNFUSED, FL_STRATEGY_XLA};
	fl_graph *g = t_load_sample(TIMED_SAMPLE);
	fl_engine_opts o;
	fl_error err = {""};
	stopper s = {{0}, 0, false};
	char dir[512];
	fl_ladder l;

	(void)state;
	t_make_dir(dir, sizeof dir);
	quick(&o);
	o.run.repeat = 1000;	/* long enough to be interrupted */
	o.run.keep = true;
	o.run.workdir = dir;
	o.run.progress = stop_in_time;
	o.run.progress_user = &s;
	o.run.interrupt = &stop_flag;
	stop_flag = 0;
	assert_int_equal(fl_ladder_run(g, &o, list, 2, &l, &err), 0);
	stop_flag = 0;
	assert_true(s.in_time);
	assert_true(s.n_pids >= 1);	/* the timing child was seen */
	for (int i = 0; i < s.n_pids; i++)
		if (!gone(s.pids[i]))
			fail_msg("process %d left after the interrupt",
				 s.pids[i]);
	assert_true(l.steps[0].interrupted);
	assert_string_equal(l.steps[0].stopped, "run");
	assert_true(strstr(l.steps[0].removed, dir) != NULL);
	assert_true(strstr(l.steps[0].removed, ", ") != NULL);	/* both */
	assert_false(l.interleaved);
	assert_int_equal(l.timing_status, FL_RUN_CANCELLED);
	assert_int_equal(t_count_entries(dir), 0);
	fl_ladder_free(&l);
	t_remove_dir(dir);
	fl_graph_free(g);
}

/* A fused kernel found SLOWER says why, in the ladder and as an event:
 * for a matmul + GELU kernel, the GELU's ops looping over each tile. */
static void test_timing_slower_says_why(void **state)
{
	static const char graph[] =
		"{\"format\": \"fuselab-graph/1\", \"name\": \"dg\",\n"
		" \"tensors\": {\"x\": {\"shape\": [64, 96], \"dtype\": \"f32\","
		" \"role\": \"input\"},\n"
		"  \"w\": {\"shape\": [96, 128], \"dtype\": \"f32\", \"role\":"
		" \"param\"},\n"
		"  \"y\": {\"shape\": [64, 128], \"dtype\": \"f32\", \"role\":"
		" \"output\"}},\n"
		" \"ops\": [{\"name\": \"mm\", \"op\": \"matmul\", \"in\":"
		" [\"x\", \"w\"], \"out\": \"h\"},\n"
		"  {\"name\": \"g\", \"op\": \"gelu\", \"in\": [\"h\"],"
		" \"out\": \"y\"}]}\n";
	fl_error err = {""};
	fl_graph *g = fl_load_graph_string(graph, strlen(graph), "dg", &err);
	fl_session *u, *a;
	const fl_program *pa;
	fl_ladder_kernel lk[4];
	fl_ladder_step st;
	const fl_event *e;
	char text[512];

	(void)state;
	if (!g)
		fail_msg("%s", err.msg);
	u = verified_session(g, FL_STRATEGY_UNFUSED);
	a = verified_session(g, FL_STRATEGY_APOLLO_L1);
	pa = fl_engine_program(a);
	assert_int_equal(pa->n_kernels, 1);
	memset(&st, 0, sizeof st);
	memset(lk, 0, sizeof lk);
	st.n_kernels = 1;
	st.kernels = lk;
	st.log = fl_event_log_new();
	lk[0].label = FL_TIMING_SLOWER;
	lk[0].r.seconds = 2e-3;
	lk[0].unfused_seconds = 1e-3;
	lk[0].ratio.faster = 0;
	lk[0].ratio.s.n = 9;
	fl_ladder_explain_slower(&st, 0, pa, fl_engine_program(u));
	t_assert_contains(lk[0].why, "its 5 ops besides the contraction run "
			  "as loops of their own over each tile");
	assert_int_equal(fl_event_log_count(st.log), 1);
	e = fl_event_log_get(st.log, 0);
	assert_int_equal(e->kind, FL_EV_RAN);
	assert_string_equal(e->rule, "slower");
	assert_int_equal(e->n_ops, pa->kernels[0].n_ops);
	fl_event_format(e, text, sizeof text);
	t_assert_contains(text, "fl_k0 is SLOWER than the unfused kernels of "
			  "its ops: ");
	t_assert_contains(text, "2.000 ms against 1.000 ms unfused, quicker "
			  "in 0 of 9 pairs");
	fl_event_log_free(st.log);
	fl_engine_close(a);
	fl_engine_close(u);
	fl_graph_free(g);
}

/* ---- the command line -------------------------------------------------- */

/* The ladder says what it was measured on and against: the machine, the
 * load around the timing, the copy bandwidth, how it timed; each kernel
 * its share of the copy bandwidth and its label. */
static void test_timing_cli(void **state)
{
	char args[1024], want[128], *out = NULL;

	(void)state;
	snprintf(args, sizeof args, "--batch %s/softmax.json --run --repeat 3 "
		 "--pin", t_samples_dir());
	/* every strategy of the ladder ("all") */
	snprintf(want, sizeof want, "timing: %d strategies interleaved in one "
		 "process, 3 rounds in a balanced order", FL_STRATEGY_COUNT);
	if (t_fuselab(args, &out) != 0)
		fail_msg("%s", out);
	t_assert_contains(out, "machine: ");
	t_assert_contains(out, "cores");
	/* the host measured on, and the machine planned for (the tests'
	   FUSELAB_MACHINE) below it */
	t_assert_contains(out, "\nplanned for: test machine, 2 cores, "
			  "avx2+fma, L1d 32 KiB, L2 512 KiB, L3 32 MiB (given: ");
	t_assert_contains(out, "load: ");
	t_assert_contains(out, " after timing; copy bandwidth ");
	t_assert_contains(out, "GB/s (");
	t_assert_contains(out, want);
	t_assert_contains(out, "threads pinned");
	t_assert_contains(out, "% copy");
	t_assert_contains(out, ", interleaved  [softmax.sub .. softmax.sum]");
	/* the header comes after the conditions */
	assert_true(strstr(out, "machine: ") < strstr(out, "strategy  "));
	free(out);
	/* one strategy: timed alone, the same report */
	snprintf(args, sizeof args, "--batch %s/softmax.json --run --repeat 3 "
		 "--strategy xla", t_samples_dir());
	if (t_fuselab(args, &out) != 0)
		fail_msg("%s", out);
	t_assert_contains(out, "timing: 1 strategy interleaved");
	t_assert_contains(out, "threads not pinned");
	t_assert_contains(out, "copy bandwidth ");
	free(out);
}

FL_SUITE(timing,
	 cmocka_unit_test(test_timing_label),
	 cmocka_unit_test(test_timing_copy_size),
	 cmocka_unit_test(test_timing_order_balanced),
	 cmocka_unit_test(test_timing_paired_rule),
	 cmocka_unit_test(test_timing_interleaved_child),
	 cmocka_unit_test(test_timing_slower_says_why),
	 cmocka_unit_test(test_timing_ladder),
	 cmocka_unit_test(test_timing_pin),
	 cmocka_unit_test(test_timing_interrupted),
	 cmocka_unit_test(test_timing_cli));
