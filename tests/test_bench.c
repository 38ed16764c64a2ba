/* make bench's harness, without oneDNN (bench/: interleave, peer_shapes,
 * genprog, results.sh; install-deps.sh --bench): the interleaved timing
 * rounds and their statistics, the shapes read from the samples, the
 * one-op and dense + epilogue graphs, a generated program loaded into
 * this process and called on its buffers, and the assembly of
 * bench/RESULTS.md.  The timings themselves are make bench's business,
 * never a test's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "../bench/genprog.h"
#include "../bench/interleave.h"
#include "../bench/ort_peer.h"
#include "../bench/peer_shapes.h"
#include "test_util.h"

/* A contender that logs the order of calls into a shared string. */
typedef struct order_log {
	char seq[64];
	int n;
} order_log;

typedef struct logged {
	order_log *log;
	char name;
} logged;

static void log_call(void *ctx)
{
	logged *l = ctx;

	if (l->log->n < (int)sizeof l->log->seq - 1)
		l->log->seq[l->log->n++] = l->name;
}

/* One warm-up call each, then rounds alternating A B / B A; with no time
 * budget exactly min_reps rounds, with a huge one max_reps. */
static void test_bench_interleave_rounds(void **state)
{
	order_log log = {"", 0};
	logged a = {&log, 'A'}, b = {&log, 'B'};
	il_contender c[2] = {{.call = log_call, .ctx = &a},
			     {.call = log_call, .ctx = &b}};
	il_plan quick = {3, 10, 0}, long_budget = {2, 4, 1e9};
	il_stat s[2];

	(void)state;
	assert_int_equal(il_measure(c, 2, &quick, s), 3);
	assert_string_equal(log.seq, "AB" "AB" "BA" "AB");
	assert_int_equal(s[0].n, 3);
	assert_int_equal(s[1].n, 3);
	for (int i = 0; i < 2; i++)
		assert_true(s[i].min <= s[i].median && s[i].median <= s[i].max);
	memset(&log, 0, sizeof log);
	assert_int_equal(il_measure(c, 2, &long_budget, s), 4);
	assert_string_equal(log.seq, "AB" "AB" "BA" "AB" "BA");
	assert_int_equal(s[1].n, 4);
}

/* Three contenders: the order rotates every two rounds, so that in six
 * rounds each one takes each position twice and each runs twice in a
 * row at some turn (in A B C, C B A, ... alone B never would: it ran on
 * caches the others had filled in every round). */
static void test_bench_interleave_rotates(void **state)
{
	order_log log = {"", 0};
	logged a = {&log, 'A'}, b = {&log, 'B'}, c = {&log, 'C'};
	il_contender con[3] = {{.call = log_call, .ctx = &a},
			       {.call = log_call, .ctx = &b},
			       {.call = log_call, .ctx = &c}};
	il_plan six = {6, 6, 0};
	il_stat s[3];

	(void)state;
	assert_int_equal(il_measure(con, 3, &six, s), 6);
	assert_string_equal(log.seq, "ABC" "ABC" "CBA" "BCA" "ACB" "CAB"
			    "BAC");
	for (int pos = 0; pos < 3; pos++)
		for (char who = 'A'; who <= 'C'; who++) {
			int times = 0;

			for (int r = 1; r <= 6; r++)
				times += log.seq[3 * r + pos] == who;
			assert_int_equal(times, 2);
		}
	for (char who = 'A'; who <= 'C'; who++) {
		char twice[3] = {who, who, 0};

		assert_non_null(strstr(log.seq + 3, twice));
	}
}

/* Spreads that overlap are within noise; disjoint ones differ. */
static void test_bench_interleave_distinct(void **state)
{
	il_stat a = {1.0, 0.9, 1.2, 5, 1, 0, 0},
		b = {1.1, 1.15, 1.3, 5, 1.1, 2, 3},
		c = {2.0, 1.8, 2.2, 5, 2.0, 0, 5};

	(void)state;
	assert_false(il_distinct(&a, &b));
	assert_false(il_distinct(&b, &a));
	assert_true(il_distinct(&a, &c));
	assert_true(il_distinct(&c, &b));
	/* paired: slower in 5 of 5 rounds differs, 3 of 5 does not */
	assert_true(il_paired_distinct(&c));
	assert_false(il_paired_distinct(&b));
	assert_false(il_paired_distinct(&a));
}

/* A contender that takes `sleep_us` per call. */
static void sleep_call(void *ctx)
{
	struct timespec ts = {0, *(const long *)ctx * 1000L};

	nanosleep(&ts, NULL);
}

/* Round by round ratios to contender 0: a contender that sleeps 30x
 * longer is slower in (nearly: a loaded machine can oversleep) every
 * round, with a median ratio far above 1; every round is counted one way
 * or the other, and contender 0 against itself has ratio 1. */
static void test_bench_interleave_paired(void **state)
{
	long fast = 100, slow = 3000;
	il_contender c[2] = {{.call = sleep_call, .ctx = &fast},
			     {.call = sleep_call, .ctx = &slow}};
	il_plan plan = {6, 6, 0};
	il_stat s[2];

	(void)state;
	assert_int_equal(il_measure(c, 2, &plan, s), 6);
	assert_true(s[0].ratio == 1 && s[0].quicker == 0 && s[0].slower == 0);
	assert_int_equal(s[1].slower + s[1].quicker, 6);
	assert_true(s[1].slower >= 4);
	assert_true(s[1].ratio > 3);
}

/* A contender that times itself (ONNX Runtime in its own process) is
 * charged the seconds it reports, not the time around the call; a
 * negative report falls back to that time. */
static double reports_quarter(void *ctx)
{
	(*(int *)ctx)++;
	return 0.25;
}

static double reports_nothing(void *ctx)
{
	(*(int *)ctx)++;
	return -1;
}

static void test_bench_interleave_self_timed(void **state)
{
	long sleep_us = 200;
	int calls = 0, fallback = 0;
	il_contender c[3] = {{.call = sleep_call, .ctx = &sleep_us},
			     {.ctx = &calls, .timed = reports_quarter},
			     {.ctx = &fallback, .timed = reports_nothing}};
	il_plan plan = {5, 5, 0};
	il_stat s[3];

	(void)state;
	assert_int_equal(il_measure(c, 3, &plan, s), 5);
	assert_int_equal(calls, 6);	/* the warm-up and 5 rounds */
	assert_int_equal(fallback, 6);
	assert_true(s[1].median == 0.25 && s[1].min == 0.25);
	assert_true(s[2].median >= 0 && s[2].median < 0.25);
	assert_true(s[1].ratio > 1 && s[1].slower == 5);
}

/* The ONNX Runtime peer's side of the pipe, against a stand-in `node`
 * (a shell script first on the PATH) that speaks the protocol of
 * bench/ort_peer.mjs: the arguments it is started with, the time a run
 * reports, an output dump, the reason when the peer refuses to start,
 * and the module's absence named. */
static void fake_node(const char *dir, const char *body)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof path, "%s/node", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s", body);
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
}

static void test_bench_ort_peer_protocol(void **state)
{
	char dir[512], path[1024], why[512], body[2048], args[1024] = "";
	char *old, *saved;
	const char *feeds[2] = {"x=/tmp/in0", "w=/tmp/in1"};
	ort_peer p;
	FILE *f;

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/args", dir);
	snprintf(body, sizeof body,
		 "echo \"$@\" > '%s'\n"
		 "echo ready 9.9.9\n"
		 "while read cmd arg; do\n"
		 "  case $cmd in\n"
		 "  run) echo ok 0.125 ;;\n"
		 "  dump) printf abcd > \"$arg\"; echo ok ;;\n"
		 "  quit) exit 0 ;;\n"
		 "  esac\n"
		 "done\n", path);
	fake_node(dir, body);
	old = getenv("PATH");
	saved = strdup(old ? old : "/usr/bin:/bin");
	snprintf(args, sizeof args, "%s:%s", dir, saved);
	setenv("PATH", args, 1);
	setenv("FL_ORT_PEER", "peer.mjs", 1);
	assert_int_equal(ort_peer_open(&p, "/mod", "/m.onnx", 2, feeds, 2, why,
				       sizeof why), 0);
	assert_string_equal(p.version, "9.9.9");
	assert_true(ort_peer_run(&p) == 0.125);
	assert_true(ort_peer_run(&p) == 0.125);
	snprintf(path, sizeof path, "%s/out", dir);
	assert_int_equal(ort_peer_dump(&p, path), 0);
	ort_peer_close(&p);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(args, sizeof args, f));
	fclose(f);
	assert_string_equal(args, "abcd");
	snprintf(path, sizeof path, "%s/args", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(args, sizeof args, f));
	fclose(f);
	assert_string_equal(args, "peer.mjs /mod /m.onnx 2 x=/tmp/in0 "
			    "w=/tmp/in1\n");
	/* a peer that cannot start says why, and nothing is left running */
	fake_node(dir, "echo 'error cannot load onnxruntime-node from /mod'\n"
		  "exit 1\n");
	assert_int_equal(ort_peer_open(&p, "/mod", "/m.onnx", 1, feeds, 1, why,
				       sizeof why), -1);
	t_assert_contains(why, "error cannot load onnxruntime-node");
	assert_true(p.pid <= 0 && !p.to && !p.from);
	/* no package where FL_ORT_DIR points: the reason names it */
	setenv("FL_ORT_DIR", dir, 1);
	assert_null(ort_peer_module(why, sizeof why));
	t_assert_contains(why, "onnxruntime-node is not installed in");
	t_assert_contains(why, "install-deps.sh --bench");
	assert_string_equal(ort_peer_version(dir, why, sizeof why), "unknown");
	/* with one, its version as package.json gives it */
	snprintf(path, sizeof path, "%s/package.json", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\n  \"name\": \"onnxruntime-node\",\n  \"version\": "
	      "\"9.8.7\",\n  \"main\": \"x\"\n}\n", f);
	fclose(f);
	assert_ptr_equal(ort_peer_module(why, sizeof why), getenv("FL_ORT_DIR"));
	assert_string_equal(ort_peer_version(dir, why, sizeof why), "9.8.7");
	unsetenv("FL_ORT_DIR");
	unsetenv("FL_ORT_PEER");
	setenv("PATH", saved, 1);
	free(saved);
	t_remove_dir(dir);
}

static void sample_path(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s.json", t_samples_dir(), name);
}

static const ps_matmul *find_mm(const ps_set *s, int64_t batch, int64_t m,
				int64_t n, int64_t k, bool tb)
{
	for (int i = 0; i < s->n_mm; i++)
		if (s->mm[i].batch == batch && s->mm[i].m == m &&
		    s->mm[i].n == n && s->mm[i].k == k && s->mm[i].tb == tb)
			return &s->mm[i];
	return NULL;
}

/* BERT's matmuls once dense and attention are opened: the four 768x768
 * projections share one shape; the attention's q k^T (transposed B,
 * batch 12) and p v; the two FFN denses. */
static void test_bench_matmul_shapes(void **state)
{
	static ps_set set;
	fl_error err = {""};
	char path[1024];
	const ps_matmul *m;

	(void)state;
	memset(&set, 0, sizeof set);
	sample_path(path, sizeof path, "bert_encoder");
	assert_int_equal(ps_add_matmuls(&set, path, &err), 0);
	assert_int_equal(set.n_mm, 5);
	m = find_mm(&set, 1, 128, 768, 768, false);
	assert_non_null(m);
	t_assert_contains(m->uses, "bert_encoder: q_proj");
	t_assert_contains(m->uses, "attn_out_proj");
	m = find_mm(&set, 12, 128, 128, 64, true);
	assert_non_null(m);
	assert_true(ps_matmul_flops(m) == 2.0 * 12 * 128 * 128 * 64);
	assert_non_null(find_mm(&set, 12, 128, 64, 128, false));
	assert_non_null(find_mm(&set, 1, 128, 3072, 768, false));
	assert_non_null(find_mm(&set, 1, 128, 768, 3072, false));
	/* a second file adds only its new shapes, and names its sample */
	sample_path(path, sizeof path, "gpt2_mlp");
	assert_int_equal(ps_add_matmuls(&set, path, &err), 0);
	assert_int_equal(set.n_mm, 7);
	t_assert_contains(find_mm(&set, 1, 64, 3072, 768, false)->uses,
			  "gpt2_mlp: c_fc");
}

/* ResNet's three convolutions, the 3x3 one on the padded input; the
 * strides, dilation and groups are the op's. */
static void test_bench_conv_shapes(void **state)
{
	static ps_set set;
	fl_error err = {""};
	char path[1024], text[96];
	const ps_conv *c = NULL;

	(void)state;
	memset(&set, 0, sizeof set);
	sample_path(path, sizeof path, "resnet50_bottleneck");
	assert_int_equal(ps_add_convs(&set, path, &err), 0);
	assert_int_equal(set.n_conv, 3);
	for (int i = 0; i < set.n_conv; i++)
		if (set.conv[i].sh.r == 3)
			c = &set.conv[i];
	assert_non_null(c);
	assert_int_equal(c->sh.h, 30);
	assert_int_equal(c->sh.oh, 28);
	assert_int_equal(c->sh.stride[0], 1);
	assert_int_equal(c->sh.dilation[1], 1);
	assert_int_equal(c->sh.groups, 1);
	assert_string_equal(ps_conv_text(c, text, sizeof text),
			    "1x128x30x30*128x128x3x3 s1 d1 g1");
	assert_true(ps_conv_flops(c) == 2.0 * 128 * 28 * 28 * 128 * 9);
	t_assert_contains(c->uses, "conv2_3x3");
}

/* Dense shapes keep their sample's GELU form; a missing file is an
 * error naming it. */
static void test_bench_dense_shapes(void **state)
{
	static ps_set set;
	fl_error err = {""};
	char path[1024];

	(void)state;
	memset(&set, 0, sizeof set);
	sample_path(path, sizeof path, "bert_encoder");
	assert_int_equal(ps_add_denses(&set, path, &err), 0);
	assert_int_equal(set.n_dense, 3);
	assert_string_equal(set.dense[0].gelu, "none");
	sample_path(path, sizeof path, "gpt2_mlp");
	assert_int_equal(ps_add_denses(&set, path, &err), 0);
	assert_int_equal(set.n_dense, 5);
	assert_string_equal(set.dense[4].gelu, "tanh");
	sample_path(path, sizeof path, "no_such_sample");
	assert_int_equal(ps_add_denses(&set, path, &err), -1);
	t_assert_contains(err.msg, "no_such_sample.json");
}

/* Broadcast batch dims: B without batch dims repeats its one matrix. */
static void test_bench_batch_offsets(void **state)
{
	ps_matmul m = {.batch = 6, .m = 4, .n = 6, .k = 5};
	int64_t *a, *b;

	(void)state;
	m.a = fl_shape_make(4, (const int64_t[]){2, 3, 4, 5});
	m.b = fl_shape_make(2, (const int64_t[]){5, 6});
	assert_int_equal(ps_batch_offsets(&m, &a, &b), 0);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(a[i], i * 20);
		assert_int_equal(b[i], 0);
	}
	free(a);
	free(b);
	m.b = fl_shape_make(3, (const int64_t[]){3, 5, 6});
	assert_int_equal(ps_batch_offsets(&m, &a, &b), 0);
	for (int i = 0; i < 6; i++)
		assert_int_equal(b[i], (i % 3) * 30);
	free(a);
	free(b);
}

/* A small batched matmul with B transposed, compiled by the engine and
 * called here: one kernel, its output equal to the product of the
 * buffers it was given. */
static void test_bench_genprog_matmul(void **state)
{
	ps_matmul m = {.tb = true, .batch = 2, .m = 5, .n = 7, .k = 9};
	fl_error err = {""};
	fl_graph *g;
	gp_prog gp;
	float *a, *b, *y;
	int64_t ny;

	(void)state;
	m.a = fl_shape_make(3, (const int64_t[]){2, 5, 9});
	m.b = fl_shape_make(3, (const int64_t[]){2, 7, 9});
	g = ps_matmul_graph(&m, &err);
	assert_non_null(g);
	if (gp_open(&gp, g, FL_STRATEGY_APOLLO_L1, &err) < 0)
		fail_msg("gp_open: %s", err.msg);
	fl_graph_free(g);
	assert_int_equal(gp.n_kernels, 1);
	a = gp_tensor(&gp, "a", NULL);
	b = gp_tensor(&gp, "b", NULL);
	y = gp_tensor(&gp, "y", &ny);
	assert_non_null(a);
	assert_non_null(y);
	assert_int_equal(ny, 2 * 5 * 7);
	assert_null(gp_tensor(&gp, "nope", NULL));
	y[0] = NAN;
	gp_call(&gp);
	for (int z = 0; z < 2; z++)
		for (int i = 0; i < 5; i++)
			for (int j = 0; j < 7; j++) {
				double s = 0;

				for (int k = 0; k < 9; k++)
					s += (double)a[(z * 5 + i) * 9 + k] *
					     b[(z * 7 + j) * 9 + k];
				assert_true(fabs(y[(z * 5 + i) * 7 + j] - s) <
					    1e-4);
			}
	gp_close(&gp);
}

/* dense + GELU and dense + residual build, run through the engine and
 * agree with the interpreter on the same inputs; gp_rel_error sees a
 * NaN. */
static void test_bench_genprog_epilogues(void **state)
{
	ps_dense d = {.gelu = "tanh"};

	(void)state;
	d.x = fl_shape_make(2, (const int64_t[]){6, 8});
	d.w = fl_shape_make(2, (const int64_t[]){8, 10});
	d.bias = fl_shape_make(1, (const int64_t[]){10});
	for (int e = PS_BIAS_GELU; e <= PS_BIAS_RESIDUAL; e++) {
		fl_error err = {""};
		fl_graph *g = ps_dense_graph(&d, (ps_epilogue)e, &err);
		fl_interp_opts io;
		fl_values *v;
		gp_prog gp;
		int64_t n;
		float *y;
		int t;

		assert_non_null(g);
		assert_int_equal(fl_graph_find_tensor(g, "r") >= 0,
				 e == PS_BIAS_RESIDUAL);
		if (gp_open(&gp, g, FL_STRATEGY_APOLLO_L1, &err) < 0)
			fail_msg("gp_open %s: %s", ps_epilogue_name(e),
				 err.msg);
		fl_graph_free(g);
		gp_call(&gp);
		fl_interp_opts_default(&io);
		v = fl_interp_run(gp.program->graph, &io, &err);
		assert_non_null(v);
		y = gp_tensor(&gp, "y", &n);
		t = fl_graph_find_tensor(gp.program->graph, "y");
		/* the runner's tolerance scale: vector maths may differ from
		 * libm by a few ulp, a wrong epilogue by far more */
		assert_true(gp_rel_error(y, v->bufs[t].data, n) < 1e-4);
		y[3] = NAN;
		assert_true(isinf(gp_rel_error(y, v->bufs[t].data, n)));
		fl_values_free(v);
		gp_close(&gp);
	}
}

/* gp_share: the dense program reads the bare matmul's operands (the same
 * memory, so the two are timed on the same cache contents), still
 * computes its own epilogue from them, and closing both frees each
 * buffer once (the sanitizer pass would report a double free or a
 * leak); a tensor of another size is refused. */
static void test_bench_genprog_share(void **state)
{
	ps_dense d = {.gelu = "tanh"};
	ps_matmul m = {.batch = 1, .m = 6, .n = 10, .k = 8};
	fl_error err = {""};
	fl_graph *gd, *gm;
	gp_prog bare, fused;
	float *y, *x;
	int64_t n;

	(void)state;
	d.x = m.a = fl_shape_make(2, (const int64_t[]){6, 8});
	d.w = m.b = fl_shape_make(2, (const int64_t[]){8, 10});
	d.bias = fl_shape_make(1, (const int64_t[]){10});
	gm = ps_matmul_graph(&m, &err);
	gd = ps_dense_graph(&d, PS_BIAS_RESIDUAL, &err);
	assert_non_null(gm);
	assert_non_null(gd);
	if (gp_open(&bare, gm, FL_STRATEGY_APOLLO_L1, &err) < 0 ||
	    gp_open(&fused, gd, FL_STRATEGY_APOLLO_L1, &err) < 0)
		fail_msg("gp_open: %s", err.msg);
	fl_graph_free(gm);
	fl_graph_free(gd);
	assert_int_equal(gp_share(&fused, "x", &bare, "a", &err), 0);
	assert_int_equal(gp_share(&fused, "w", &bare, "b", &err), 0);
	assert_ptr_equal(gp_tensor(&fused, "x", NULL),
			 gp_tensor(&bare, "a", NULL));
	assert_int_equal(gp_share(&fused, "bias", &bare, "a", &err), -1);
	assert_non_null(strstr(err.msg, "bias"));
	/* zero operands: the fused output is bias + residual alone */
	x = gp_tensor(&bare, "a", &n);
	memset(x, 0, (size_t)n * sizeof *x);
	gp_call(&fused);
	y = gp_tensor(&fused, "y", &n);
	for (int64_t i = 0; i < n; i++)
		assert_float_equal(y[i], gp_tensor(&fused, "bias", NULL)[i % 10]
				   + gp_tensor(&fused, "r", NULL)[i], 1e-6);
	gp_close(&fused);
	gp_close(&bare);
}

/* Writes text to dir/name. */
static void put(const char *dir, const char *name, const char *text)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* results.sh copies every table under its note, the date and machine at
 * the top; a missing file is named, in the document and on stderr, and
 * fails the script. */
static void test_bench_results_script(void **state)
{
	char dir[512], cmd[4096], *out;
	static const char *const others[] = {"kernels.txt", "layer1.txt",
		"partition.txt", "steps.txt", "explorer.txt"};

	(void)state;
	t_make_dir(dir, sizeof dir);
	put(dir, "peers.txt", "date: 2026-01-02T03:04:05Z\n== machine\n"
	    "machine: Test CPU, 2 cores, avx2+fma\npeer: oneDNN 9.9\n\n"
	    "== STREAM-like probe\n1 11.0\n\n== matmul: x\nm1 ROW-MM\n\n"
	    "== conv2d: y\nc1 ROW-CONV\n\ntarget: matmul T-LINE\n\n"
	    "== fused epilogues: z\ne1 ROW-EPI\n\n"
	    "== memory-bound kernels: w\nb1 ROW-MEM\n");
	for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
		char text[64];

		snprintf(text, sizeof text, "TABLE-%zu\n", i);
		put(dir, others[i], text);
	}
	snprintf(cmd, sizeof cmd, "sh %s/bench/results.sh %s 2>&1",
		 t_repo_root(), dir);
	assert_int_equal(t_run(cmd, &out), 0);
	t_assert_contains(out, "- date: 2026-01-02T03:04:05Z");
	t_assert_contains(out, "- machine: Test CPU, 2 cores, avx2+fma");
	t_assert_contains(out, "## Peers");
	t_assert_contains(out, "```\n== matmul: x\nm1 ROW-MM\n```");
	t_assert_contains(out, "```\n== conv2d: y\nc1 ROW-CONV\n");
	t_assert_contains(out, "e1 ROW-EPI");
	t_assert_contains(out, "## Memory-bound kernels against the copy");
	t_assert_contains(out, "```\n== memory-bound kernels: w\nb1 ROW-MEM\n```");
	t_assert_contains(out, "## Targets (issue 11), in this run");
	t_assert_contains(out, "```\nmatmul T-LINE\n```");
	t_assert_contains(out, "interleaved");
	for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
		char text[64];

		snprintf(text, sizeof text, "TABLE-%zu", i);
		t_assert_contains(out, text);
	}
	assert_null(strstr(out, "Not measured"));
	free(out);
	snprintf(cmd, sizeof cmd, "rm %s/layer1.txt && sh %s/bench/results.sh "
		 "%s 2>&1", dir, t_repo_root(), dir);
	assert_int_equal(t_run(cmd, &out), 1);
	t_assert_contains(out, "Not measured in this run");
	t_assert_contains(out, "results.sh: ");
	t_assert_contains(out, "layer1.txt is missing");
	free(out);
	snprintf(cmd, sizeof cmd, "sh %s/bench/results.sh 2>&1", t_repo_root());
	assert_int_equal(t_run(cmd, &out), 2);
	t_assert_contains(out, "usage: results.sh DIR");
	free(out);
	t_remove_dir(dir);
}

/* install-deps.sh --bench asks for oneDNN too (without root it prints
 * the line to run); a plain call does not; a wrong argument is a usage
 * error.  dpkg-query and id are faked as in the CLI suite. */
static void test_bench_install_deps_mode(void **state)
{
	char dir[512], cmd[4096], *out;

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(cmd, sizeof cmd,
		 "printf '#!/bin/sh\\nexit 1\\n' > %s/dpkg-query && "
		 "printf '#!/bin/sh\\necho 1000\\n' > %s/id && "
		 "chmod +x %s/dpkg-query %s/id && PATH=%s:$PATH sh "
		 "%s/scripts/install-deps.sh --bench", dir, dir, dir, dir, dir,
		 t_repo_root());
	assert_int_equal(t_run(cmd, &out), 1);
	t_assert_contains(out, "python3-onnx libdnnl-dev");
	free(out);
	snprintf(cmd, sizeof cmd, "PATH=%s:$PATH sh %s/scripts/install-deps.sh",
		 dir, t_repo_root());
	assert_int_equal(t_run(cmd, &out), 1);
	assert_null(strstr(out, "libdnnl-dev"));
	free(out);
	snprintf(cmd, sizeof cmd, "sh %s/scripts/install-deps.sh --fast",
		 t_repo_root());
	assert_int_equal(t_run(cmd, &out), 2);
	t_assert_contains(out, "unknown argument '--fast'");
	free(out);
	/* --fuzz: clang and libFuzzer's runtime, for make fuzz */
	snprintf(cmd, sizeof cmd, "PATH=%s:$PATH sh %s/scripts/install-deps.sh "
		 "--fuzz", dir, t_repo_root());
	assert_int_equal(t_run(cmd, &out), 1);
	t_assert_contains(out, "python3-onnx clang libclang-rt-14-dev");
	assert_null(strstr(out, "libdnnl-dev"));
	free(out);
	t_remove_dir(dir);
}

FL_SUITE(bench,
	 cmocka_unit_test(test_bench_interleave_rounds),
	 cmocka_unit_test(test_bench_interleave_rotates),
	 cmocka_unit_test(test_bench_interleave_distinct),
	 cmocka_unit_test(test_bench_interleave_paired),
	 cmocka_unit_test(test_bench_interleave_self_timed),
	 cmocka_unit_test(test_bench_ort_peer_protocol),
	 cmocka_unit_test(test_bench_matmul_shapes),
	 cmocka_unit_test(test_bench_conv_shapes),
	 cmocka_unit_test(test_bench_dense_shapes),
	 cmocka_unit_test(test_bench_batch_offsets),
	 cmocka_unit_test(test_bench_genprog_matmul),
	 cmocka_unit_test(test_bench_genprog_epilogues),
	 cmocka_unit_test(test_bench_genprog_share),
	 cmocka_unit_test(test_bench_results_script),
	 cmocka_unit_test(test_bench_install_deps_mode));
