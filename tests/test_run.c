/* The strategy ladder end to end: every sample, under every strategy, is
 * partitioned, scheduled by layer 1, compiled, run in a child process and
 * verified against the reference interpreter.  The sanitizer pass runs a
 * few small samples only: generated code is not instrumented there, and
 * the interpreter under ASan would make the full ladder slow.
 *
 * Then the runner's API on a small hand-built program: progress reports,
 * compiling and running as two steps, per-output results, cancelling (no
 * process left behind, no work directory) and runs in a worker thread. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <isl/ctx.h>

#include "codegen.h"
#include "engine.h"
#include "loader.h"
#include "program_util.h"
#include "runner.h"
#include "test_util.h"

#define FULL_LADDER (!T_SANITIZED)

static bool log_has(const fl_session *s, fl_event_kind kind, const char *text)
{
	const fl_event_log *log = fl_engine_events(s);

	for (int i = 0; i < fl_event_log_count(log); i++) {
		const fl_event *e = fl_event_log_get(log, i);

		if (e->kind == kind && strstr(e->reason, text))
			return true;
	}
	return false;
}

/* The interpreter's values of one graph, shared by the strategies of a
 * ladder: preprocessing does not depend on the strategy, so every
 * session of a graph under the same options rewrites it alike, and
 * interpreting a full-size sample once instead of once per strategy
 * saves much of the ladder's time.  n_tensors checks that the graphs
 * agree. */
typedef struct shared_ref {
	fl_values *values;
	int n_tensors;
} shared_ref;

/* The reference values of session ses's graph: from *shared when it has
 * them, else interpreted now (and kept there when shared is not NULL;
 * the caller frees shared->values).  Free the result with
 * ref_release. */
static fl_values *ref_of(const fl_session *ses, shared_ref *shared)
{
	const fl_graph *g = fl_engine_graph(ses);
	fl_error err = {""};
	fl_values *v;

	if (shared && shared->values) {
		assert_int_equal(g->n_tensors, shared->n_tensors);
		return shared->values;
	}
	v = fl_interp_run(g, NULL, &err);
	if (!v)
		fail_msg("interp: %s", err.msg);
	if (shared) {
		shared->values = v;
		shared->n_tensors = g->n_tensors;
	}
	return v;
}

static void ref_release(fl_values *v, const shared_ref *shared)
{
	if (!shared)
		fl_values_free(v);
}

/* Runs strategy s on g with base options; returns the kernel count.  When
 * `expect` is given, an event of kind `kind` must contain it.  shared:
 * the reference values of g under base, or NULL. */
static int verify_shared(const fl_graph *g, const fl_engine_opts *base,
			 fl_strategy s, fl_event_kind kind, const char *expect,
			 shared_ref *shared)
{
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *ses;
	fl_values *ref;
	fl_run_opts ro;
	fl_run_result r;
	int n;

	o = *base;
	o.strategy = s;
	o.stop_after = FL_PASS_LAYER3;	/* apollo-l2, apollo stitch there */
	ses = fl_engine_open(g, &o, &err);
	if (!ses || fl_engine_run(ses, &err) < 0 || !fl_engine_program(ses))
		fail_msg("%s/%s: %s", g->name, fl_strategy_name(s), err.msg);
	ref = ref_of(ses, shared);
	fl_run_opts_default(&ro);
	ro.warmup = 0;
	ro.repeat = 0;	/* verification only: no timed runs */
	memset(&r, 0, sizeof r);
	assert_int_equal(fl_run_program(fl_engine_program(ses), ref, &ro, &r, &err), 0);
	if (r.status != FL_RUN_OK || !r.verified)
		fail_msg("%s under %s: %s: %s", g->name, fl_strategy_name(s),
			 fl_run_status_name(r.status), r.message);
	n = fl_engine_program(ses)->n_kernels;
	if (expect && !log_has(ses, kind, expect))
		fail_msg("%s under %s: no %s event with \"%s\"", g->name,
			 fl_strategy_name(s), fl_event_kind_name(kind), expect);
	fl_run_result_free(&r);
	ref_release(ref, shared);
	fl_engine_close(ses);
	return n;
}

static int verify_expect(const fl_graph *g, const fl_engine_opts *base,
			 fl_strategy s, fl_event_kind kind, const char *expect)
{
	return verify_shared(g, base, s, kind, expect, NULL);
}

static int verify(const fl_graph *g, const fl_engine_opts *base, fl_strategy s)
{
	return verify_expect(g, base, s, FL_EV_MERGED, NULL);
}

/* The kernels strategy s makes of g (layer 1, nothing run). */
static int kernel_count(const fl_graph *g, fl_strategy s)
{
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *ses;
	int n;

	fl_engine_opts_default(&o);
	o.strategy = s;
	o.stop_after = FL_PASS_LAYER3;	/* apollo-l2, apollo stitch there */
	ses = fl_engine_open(g, &o, &err);
	if (!ses || fl_engine_run(ses, &err) < 0 || !fl_engine_program(ses))
		fail_msg("%s/%s: %s", g->name, fl_strategy_name(s), err.msg);
	n = fl_engine_program(ses)->n_kernels;
	fl_engine_close(ses);
	return n;
}

/* Every strategy verifies on sample `name`, and fusing never adds
 * kernels.  With run_apollo false, apollo-l1 is only counted: the
 * pipeline suite (test_every_sample_steps_equal_cut) runs and verifies
 * it on every sample through the engine's run pass. */
static void verify_ladder_of(const char *name, bool run_apollo)
{
	fl_graph *g = t_load_sample(name);
	shared_ref ref = {NULL, 0};
	fl_engine_opts base;
	int k[FL_STRATEGY_COUNT];

	fl_engine_opts_default(&base);
	for (int s = 0; s < FL_STRATEGY_COUNT; s++)
		k[s] = s == FL_STRATEGY_APOLLO_L1 && !run_apollo
		       ? kernel_count(g, (fl_strategy)s)
		       : verify_shared(g, &base, (fl_strategy)s, FL_EV_MERGED,
				       NULL, &ref);
	fl_values_free(ref.values);
	/* fusing never adds kernels */
	assert_true(k[FL_STRATEGY_XLA] <= k[FL_STRATEGY_UNFUSED]);
	assert_true(k[FL_STRATEGY_APOLLO_L1] <= k[FL_STRATEGY_XLA]);
	assert_true(k[FL_STRATEGY_APOLLO_L2] <= k[FL_STRATEGY_APOLLO_L1]);
	assert_true(k[FL_STRATEGY_APOLLO] <= k[FL_STRATEGY_APOLLO_L2]);
	fl_graph_free(g);
}

static void verify_ladder(const char *name)
{
	verify_ladder_of(name, true);
}

static void test_small_samples_verify(void **state)
{
	(void)state;
	verify_ladder("apollo_fig3");
	if (T_SANITIZED)	/* the plain pass verifies every sample */
		return;
	verify_ladder("apollo_listing1");
	verify_ladder("micro2020_fig1");
}

static void test_every_sample_verifies(void **state)
{
	DIR *d;
	struct dirent *de;

	(void)state;
	if (!FULL_LADDER) {
		/* sanitizer pass: one representative sample (every
		 * ladder test runs the runner under ASan too) */
		verify_ladder("apollo_fig1");
		return;
	}
	d = opendir(t_samples_dir());
	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char name[256];

		if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(name, sizeof name, "%.*s", (int)(len - 5), de->d_name);
		verify_ladder_of(name, false);
	}
	closedir(d);
}

/* With the stencil-chains rules the image pipelines fuse their stencil
 * stages into fewer kernels and still verify. */
static void test_stencil_chains_verify(void **state)
{
	const char *names[] = {"unsharp_mask", "harris_corner"};
	char path[1024];
	fl_error err = {""};

	(void)state;
	for (int i = 0; i < (FULL_LADDER ? 2 : 1); i++) {
		fl_graph *g = t_load_sample(names[i]);
		fl_engine_opts dflt, stencil;
		int plain, chained;

		fl_engine_opts_default(&dflt);
		fl_engine_opts_default(&stencil);
		snprintf(path, sizeof path, "%s/rules/stencil-chains.json",
			 t_samples_dir());
		assert_int_equal(fl_rules_load(&stencil.rules, path, &err), 0);
		plain = verify(g, &dflt, FL_STRATEGY_APOLLO_L1);
		/* the stencil stages fuse through overlapped tiles */
		chained = verify_expect(g, &stencil, FL_STRATEGY_APOLLO_L1,
					FL_EV_EXTENDED, "through an extension node");
		if (chained >= plain)
			fail_msg("%s: %d kernels with stencil chains, %d without",
				 names[i], chained, plain);
		fl_graph_free(g);
	}
}

/* A scheduler budget too small for any multi-op micro-graph: layer 1
 * splits micro-graphs through feedback, and the result still verifies. */
static void test_tiny_budget_still_verifies(void **state)
{
	fl_graph *g = t_load_sample("apollo_fig3");
	fl_engine_opts o;
	int tiny, normal;

	(void)state;
	fl_engine_opts_default(&o);
	normal = verify(g, &o, FL_STRATEGY_APOLLO_L1);
	o.layer1.sched_budget = 1;
	tiny = verify_expect(g, &o, FL_STRATEGY_APOLLO_L1, FL_EV_FEEDBACK,
			     "ran out of its budget");
	assert_true(tiny > normal);
	fl_graph_free(g);
}

/* ---- the runner's API -------------------------------------------------- */

/* Two graph outputs: y = tanh(x + b) and z = sigmoid(x); the unfused
 * program has three kernels (add, tanh, sigmoid). */
#define TWO_OUTPUTS "{'format':'fuselab-graph/1','name':'two','tensors':{"   \
	"'x':{'shape':[8,16],'role':'input'},"                              \
	"'b':{'shape':[16],'role':'param'},"                                \
	"'y':{'shape':[8,16],'role':'output'},"                             \
	"'z':{'shape':[8,16],'role':'output'}},'ops':["                     \
	"{'name':'add_1','op':'add','in':['x','b'],'out':'a'},"             \
	"{'name':'tanh_2','op':'tanh','in':['a'],'out':'y'},"               \
	"{'name':'sig_3','op':'sigmoid','in':['x'],'out':'z'}]}"

/* Everything one run needs; freed by small_free. */
typedef struct small {
	isl_ctx *ctx;
	fl_graph *g;
	fl_values *ref;
	fl_program *p;
} small;

static void small_load(small *f)
{
	fl_error err = {""};

	f->ctx = isl_ctx_alloc();
	f->g = t_load_q(TWO_OUTPUTS);
	f->ref = fl_interp_run(f->g, NULL, &err);
	if (!f->ref)
		fail_msg("interp: %s", err.msg);
	f->p = t_unfused_program(f->ctx, f->g);
	assert_non_null(f->p);
	assert_int_equal(f->p->n_kernels, 3);
}

static void small_free(small *f)
{
	fl_program_free(f->p);
	fl_values_free(f->ref);
	fl_graph_free(f->g);
	isl_ctx_free(f->ctx);
}

static fl_run_opts quick_opts(int repeat)
{
	fl_run_opts o;

	fl_run_opts_default(&o);
	o.warmup = 1;
	o.repeat = repeat;
	return o;
}

static void assert_run_verified(const fl_run_result *r)
{
	if (r->status != FL_RUN_OK || !r->verified)
		fail_msg("%s: %s", fl_run_status_name(r->status), r->message);
	assert_int_equal(r->first_bad_kernel, -1);
}

/* A scratch directory under $TMPDIR (buf). */
static void scratch_dir(char *buf, size_t n)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(buf, n, "%s/fuselab-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(buf));
}

static void remove_tree(const char *dir)
{
	char cmd[1024];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(t_run(cmd, NULL), 0);
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Whether process pid is gone: no such process, or a zombie waiting for
 * whoever inherited it (it was killed); waits up to 2 s for that. */
static bool process_gone(pid_t pid)
{
	for (int i = 0; i < 200; i++) {
		char path[64], stat[512];
		FILE *f;
		size_t n;
		char *close_paren;

		if (kill(pid, 0) < 0 && errno == ESRCH)
			return true;
		snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
		f = fopen(path, "r");
		if (f) {
			n = fread(stat, 1, sizeof stat - 1, f);
			fclose(f);
			stat[n] = '\0';
			close_paren = strrchr(stat, ')');
			if (close_paren && close_paren[1] == ' ' &&
			    close_paren[2] == 'Z')
				return true;
		}
		sleep_ms(10);
	}
	return false;
}

/* Reads "pid1 pid2" from path, waiting up to 30 s for it to appear. */
static void read_pids(const char *path, int *a, int *b)
{
	for (int i = 0; i < 3000; i++) {
		FILE *f = fopen(path, "r");

		if (f) {
			int n = fscanf(f, "%d %d", a, b);

			fclose(f);
			if (n == 2)
				return;
		}
		sleep_ms(10);
	}
	fail_msg("%s never appeared", path);
}

/* ---- progress ---- */

typedef struct progress_log {
	int n;
	struct {
		char phase[16];
		int k, n;
		pid_t pid;
	} ev[512];
} progress_log;

static void record_progress(void *user, const char *phase, int k, int n)
{
	progress_log *log = user;

	if (log->n >= 512)
		return;
	snprintf(log->ev[log->n].phase, sizeof log->ev[0].phase, "%s", phase);
	log->ev[log->n].k = k;
	log->ev[log->n].n = n;
	log->ev[log->n].pid = getpid();
	log->n++;
}

/* The callback sees compile 0/1 then 1/1, check k/3 up to 3/3, time k/3
 * up to 3/3, in that order, from this process (never the child). */
static void test_run_progress(void **state)
{
	fl_run_opts o = quick_opts(3);
	progress_log *log = calloc(1, sizeof *log);
	fl_error err = {""};
	fl_run_result r;
	int phase = 0, last_check = -1, last_time = -1;
	small f;

	(void)state;
	assert_non_null(log);
	small_load(&f);
	o.progress = record_progress;
	o.progress_user = log;
	if (fl_run_program(f.p, f.ref, &o, &r, &err) < 0)
		fail_msg("run: %s", err.msg);
	assert_run_verified(&r);
	assert_true(log->n >= 4);
	assert_string_equal(log->ev[0].phase, "compile");
	assert_int_equal(log->ev[0].k, 0);
	assert_int_equal(log->ev[0].n, 1);
	assert_string_equal(log->ev[1].phase, "compile");
	assert_int_equal(log->ev[1].k, 1);
	assert_int_equal(log->ev[1].n, 1);
	for (int i = 2; i < log->n; i++) {
		assert_int_equal(log->ev[i].pid, getpid());
		if (!strcmp(log->ev[i].phase, "check")) {
			if (phase > 1)
				fail_msg("check after time (event %d)", i);
			phase = 1;
			assert_int_equal(log->ev[i].n, 3);
			assert_true(log->ev[i].k > last_check);
			last_check = log->ev[i].k;
		} else if (!strcmp(log->ev[i].phase, "time")) {
			phase = 2;
			assert_int_equal(log->ev[i].n, 3);
			assert_true(log->ev[i].k > last_time);
			last_time = log->ev[i].k;
		} else {
			fail_msg("unexpected phase %s", log->ev[i].phase);
		}
	}
	assert_int_equal(last_check, 3);
	assert_int_equal(last_time, 3);
	/* the timing spread */
	assert_int_equal(r.n_kernels, 3);
	for (int k = 0; k < r.n_kernels; k++) {
		const fl_kernel_result *kr = &r.kernels[k];

		assert_int_equal(kr->n_timed, 3);
		assert_true(kr->min_seconds > 0);
		assert_true(kr->min_seconds <= kr->seconds);
		assert_true(kr->seconds <= kr->max_seconds);
	}
	assert_true(r.total_min_seconds > 0);
	assert_true(r.total_min_seconds <= r.total_seconds);
	assert_true(r.total_seconds <= r.total_max_seconds);
	fl_run_result_free(&r);
	free(log);
	small_free(&f);
}

/* ---- two steps ---- */

static char *with_warning(const char *src)
{
	static const char extra[] = "\n#warning fuselab-test-warning\n";
	size_t n = strlen(src);
	char *s = malloc(n + sizeof extra);

	assert_non_null(s);
	memcpy(s, src, n);
	memcpy(s + n, extra, sizeof extra);
	return s;
}

/* fl_build_source + fl_run_build verify as fl_run_program does; the
 * build records the compiler, its flags, its time and its warnings. */
static void test_run_two_steps(void **state)
{
	fl_run_opts o = quick_opts(1);
	fl_error err = {""};
	fl_run_result one, two;
	fl_build b;
	char *src, *warned, dir[512];
	small f;

	(void)state;
	small_load(&f);
	if (fl_run_program(f.p, f.ref, &o, &one, &err) < 0)
		fail_msg("run: %s", err.msg);
	assert_run_verified(&one);
	src = fl_codegen_c(f.p, &err);
	assert_non_null(src);
	/* the generated source compiles without a warning */
	assert_int_equal(fl_build_source(src, &o, &b, &err), 0);
	if (b.status != FL_RUN_OK)
		fail_msg("build: %s", b.message);
	assert_int_equal(b.n_warnings, 0);
	fl_build_remove(&b, &o);
	/* one #warning: one warning line */
	warned = with_warning(src);
	assert_int_equal(fl_build_source(warned, &o, &b, &err), 0);
	if (b.status != FL_RUN_OK)
		fail_msg("build: %s", b.message);
	assert_true(b.compiler[0] != '\0');
	assert_non_null(strstr(b.flags, "-O3"));
	assert_non_null(strstr(b.flags, "-fopenmp"));
	/* loops start 64-byte blocks: the same loop placed differently in
	   two units otherwise ran up to 8% apart */
	assert_non_null(strstr(b.flags, "-falign-loops=64"));
	assert_true(b.seconds > 0);
	assert_int_equal(b.n_warnings, 1);
	if (!strstr(b.warnings, "fuselab-test-warning"))
		fail_msg("warnings: %s", b.warnings);
	assert_true(b.created);
	assert_true(exists(b.so_path));
	snprintf(dir, sizeof dir, "%s", b.workdir);
	if (fl_run_build(&b, f.p, f.ref, &o, &two, &err) < 0)
		fail_msg("run: %s", err.msg);
	assert_run_verified(&two);
	assert_int_equal(two.n_kernels, one.n_kernels);
	for (int k = 0; k < two.n_kernels; k++) {
		assert_true(two.kernels[k].ok);
		assert_true(fabs(two.kernels[k].max_abs -
				 one.kernels[k].max_abs) <= 1e-6);
	}
	assert_true(fabs(two.max_abs - one.max_abs) <= 1e-6);
	assert_int_equal(two.n_outputs, one.n_outputs);
	fl_build_remove(&b, &o);
	assert_false(exists(dir));
	assert_int_equal(b.workdir[0], '\0');
	fl_run_result_free(&one);
	fl_run_result_free(&two);
	free(warned);
	free(src);
	small_free(&f);
}

/* ---- per output ---- */

/* One entry per graph output, in tensor order, ok on a correct program;
 * a copy of the result is deep. */
static void test_run_per_output(void **state)
{
	fl_run_opts o = quick_opts(1);
	fl_error err = {""};
	fl_run_result r, c;
	int *outs = NULL, n;
	small f;

	(void)state;
	small_load(&f);
	if (fl_run_program(f.p, f.ref, &o, &r, &err) < 0)
		fail_msg("run: %s", err.msg);
	assert_run_verified(&r);
	n = fl_graph_outputs(f.g, &outs);
	assert_int_equal(n, 2);
	assert_int_equal(r.n_outputs, 2);
	for (int i = 0; i < n; i++) {
		assert_int_equal(r.outputs[i].tensor, outs[i]);
		assert_true(r.outputs[i].ok);
		assert_true(r.outputs[i].max_abs <= 1e-4);
	}
	assert_int_equal(r.outputs[0].tensor, fl_graph_find_tensor(f.g, "y"));
	assert_int_equal(r.outputs[1].tensor, fl_graph_find_tensor(f.g, "z"));
	assert_int_equal(fl_run_result_copy(&c, &r), 0);
	assert_true(c.outputs != r.outputs && c.kernels != r.kernels);
	assert_int_equal(c.n_outputs, 2);
	assert_memory_equal(c.outputs, r.outputs, 2 * sizeof *c.outputs);
	assert_memory_equal(c.kernels, r.kernels, 3 * sizeof *c.kernels);
	assert_string_equal(c.message, r.message);
	fl_run_result_free(&r);
	assert_true(c.outputs[1].ok);	/* still readable */
	fl_run_result_free(&c);
	free(outs);
	small_free(&f);
}

/* A hand-written program whose sigmoid kernel writes zeros: y is ok, z is
 * not, and that kernel is the first bad one. */
static void test_run_per_output_mismatch(void **state)
{
	fl_run_opts o = quick_opts(1);
	fl_error err = {""};
	fl_run_result r;
	fl_build b;
	char src[4096];
	size_t len;
	small f;
	int x, bias, a, y, z, bad = -1;

	(void)state;
	small_load(&f);
	x = fl_graph_find_tensor(f.g, "x");
	bias = fl_graph_find_tensor(f.g, "b");
	a = fl_graph_find_tensor(f.g, "a");
	y = fl_graph_find_tensor(f.g, "y");
	z = fl_graph_find_tensor(f.g, "z");
	assert_true(x >= 0 && bias >= 0 && a >= 0 && y >= 0 && z >= 0);
	len = (size_t)snprintf(src, sizeof src, "#include <math.h>\n"
			       "const int fl_n_kernels = 3;\n");
	/* kernel k computes the tensor its op writes, in program order */
	for (int k = 0; k < 3; k++) {
		int out = f.g->ops[f.p->kernels[k].ops[0]].out[0];
		char body[256];

		if (out == a)
			snprintf(body, sizeof body, "t[%d][i] = t[%d][i] + "
				 "t[%d][i %% 16];", a, x, bias);
		else if (out == y)
			snprintf(body, sizeof body, "t[%d][i] = tanhf(t[%d][i]);",
				 y, a);
		else {
			assert_int_equal(out, z);
			snprintf(body, sizeof body, "t[%d][i] = 0.0f;", z);
			bad = k;
		}
		len += (size_t)snprintf(src + len, sizeof src - len,
			"static void k%d(float *const *t) { for (int i = 0; "
			"i < 128; i++) %s }\n", k, body);
	}
	snprintf(src + len, sizeof src - len, "void (*const fl_kernels[3])"
		 "(float *const *) = {k0, k1, k2};\n");
	assert_int_equal(fl_build_source(src, &o, &b, &err), 0);
	if (b.status != FL_RUN_OK)
		fail_msg("build: %s", b.message);
	if (fl_run_build(&b, f.p, f.ref, &o, &r, &err) < 0)
		fail_msg("run: %s", err.msg);
	assert_int_equal(r.status, FL_RUN_MISMATCH);
	assert_false(r.verified);
	assert_int_equal(r.first_bad_kernel, bad);
	assert_int_equal(r.n_outputs, 2);
	assert_int_equal(r.outputs[0].tensor, y);
	assert_true(r.outputs[0].ok);
	assert_int_equal(r.outputs[1].tensor, z);
	assert_false(r.outputs[1].ok);
	assert_true(r.outputs[1].max_abs > 0.1);
	fl_run_result_free(&r);
	fl_build_remove(&b, &o);
	small_free(&f);
}

/* Expected outputs from elsewhere (--expect: ONNX Runtime's): the run
 * from the inputs is compared with them element by element; y's are the
 * interpreter's, z's have one element off by 0.01 (beyond atol 1e-5 +
 * rtol 1e-3 |want| for values below 1), an entry of no output's name
 * and one of the wrong size are not compared, and verification (against
 * the interpreter) stands. */
static void test_run_expected_outputs(void **state)
{
	fl_run_opts o = quick_opts(0);
	fl_error err = {""};
	fl_run_result r;
	int y, z;
	float *zv;
	int64_t n;
	fl_feed e[4];
	small f;

	(void)state;
	small_load(&f);
	y = fl_graph_find_tensor(f.g, "y");
	z = fl_graph_find_tensor(f.g, "z");
	n = fl_shape_numel(&f.g->tensors[z].shape);
	zv = malloc((size_t)n * sizeof *zv);
	assert_non_null(zv);
	memcpy(zv, f.ref->bufs[z].data, (size_t)n * sizeof *zv);
	assert_true(fabsf(zv[5]) < 1.0f);
	zv[5] += 0.01f;
	e[0] = (fl_feed){"nope", f.ref->bufs[y]};
	e[1] = (fl_feed){"y", f.ref->bufs[y]};
	e[2] = (fl_feed){"z", {.shape = f.g->tensors[z].shape, .data = zv}};
	e[3] = (fl_feed){"y", {.shape = fl_shape_make(1, (int64_t[]){3}),
			       .data = zv}};
	o.expect = e;
	o.n_expect = 4;
	if (fl_run_program(f.p, f.ref, &o, &r, &err) < 0)
		fail_msg("run: %s", err.msg);
	assert_run_verified(&r);
	assert_int_equal(r.expect_compared, 2);
	assert_int_equal(r.expect_failed, 1);
	assert_true(r.expect_max_abs > 0.009 && r.expect_max_abs < 0.011);
	/* relative on z's scale: the error over max(|want|, a tenth of
	 * the largest |want|) */
	{
		double lo = 0, mag;

		for (int64_t i = 0; i < n; i++)
			lo = fmax(lo, 0.1 * fabs(zv[i]));
		mag = fmax(fabs(zv[5]), lo);
		assert_true(fabs(r.expect_max_rel - r.expect_max_abs / mag) <
			    1e-3 * r.expect_max_rel);
	}
	assert_int_equal(r.outputs[0].tensor, y);
	assert_true(r.outputs[0].expected && r.outputs[0].expect_ok);
	assert_int_equal(r.outputs[0].expect_bad, 0);
	assert_true(r.outputs[0].expect_max_abs <= 1e-5);
	assert_int_equal(r.outputs[1].tensor, z);
	assert_true(r.outputs[1].expected);
	assert_false(r.outputs[1].expect_ok);
	assert_int_equal(r.outputs[1].expect_bad, 1);
	assert_int_equal(r.outputs[1].expect_at, 5);
	assert_true(r.outputs[1].expect_want == zv[5]);
	assert_true(fabs(r.outputs[1].expect_got - f.ref->bufs[z].data[5]) <
		    1e-4);
	fl_run_result_free(&r);

	/* none given: nothing compared */
	o.n_expect = 0;
	if (fl_run_program(f.p, f.ref, &o, &r, &err) < 0)
		fail_msg("run: %s", err.msg);
	assert_int_equal(r.expect_compared, 0);
	assert_false(r.outputs[0].expected || r.outputs[1].expected);
	fl_run_result_free(&r);
	free(zv);
	small_free(&f);
}

/* ---- work directories ---- */

static void write_text(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

/* A fresh work directory goes with whatever the compiler left in it
 * (sub-directories, symbolic links, whose targets stay); under a caller's
 * directory it is a fresh sub-directory, and the caller's files stay. */
static void test_run_workdir_removal(void **state)
{
	fl_run_opts o = quick_opts(1);
	fl_error err = {""};
	char dir[512], cc[600], outside[600], keep[700], caller[600],
	     foreign[700], path[800], script[4096];
	fl_build b;

	(void)state;
	scratch_dir(dir, sizeof dir);
	snprintf(cc, sizeof cc, "%s/cc.sh", dir);
	snprintf(outside, sizeof outside, "%s/outside", dir);
	snprintf(keep, sizeof keep, "%s/keep.txt", outside);
	snprintf(caller, sizeof caller, "%s/caller", dir);
	snprintf(foreign, sizeof foreign, "%s/foreign.txt", caller);
	assert_int_equal(mkdir(outside, 0700), 0);
	assert_int_equal(mkdir(caller, 0700), 0);
	write_text(keep, "keep\n");
	write_text(foreign, "not ours\n");
	/* the "compiler" runs in the work directory */
	snprintf(script, sizeof script, "#!/bin/sh\nmkdir -p junk/deep\n"
		 "echo x > junk/deep/f\nln -s '%s' link\n"
		 "ln -s '%s' junk/deep/link2\ntouch gen.so\n", outside, keep);
	write_text(cc, script);
	chmod(cc, 0700);
	o.cc = cc;
	assert_int_equal(fl_build_source("int x;\n", &o, &b, &err), 0);
	if (b.status != FL_RUN_OK)
		fail_msg("build: %s", b.message);
	assert_true(b.created);
	assert_int_equal(b.parent[0], '\0');
	snprintf(path, sizeof path, "%s/junk/deep/f", b.workdir);
	assert_true(exists(path));
	snprintf(path, sizeof path, "%s", b.workdir);
	fl_build_remove(&b, &o);
	assert_false(exists(path));
	assert_true(exists(keep));
	assert_true(exists(outside));
	/* a caller's directory: a fresh one inside it, removed whole; the
	 * caller's own files (gen.c included) are never touched */
	snprintf(path, sizeof path, "%s/gen.c", caller);
	write_text(path, "the caller's gen.c\n");
	o.workdir = caller;
	assert_int_equal(fl_build_source("int x;\n", &o, &b, &err), 0);
	if (b.status != FL_RUN_OK)
		fail_msg("build: %s", b.message);
	assert_true(b.created);
	assert_int_equal(b.parent[0], '\0');	/* it existed */
	assert_int_equal(strncmp(b.workdir, caller, strlen(caller)), 0);
	assert_non_null(strstr(b.workdir + strlen(caller), "/fuselab-"));
	snprintf(path, sizeof path, "%s/junk/deep/f", b.workdir);
	assert_true(exists(path));
	fl_build_remove(&b, &o);
	assert_true(exists(foreign));
	assert_true(exists(caller));
	assert_int_equal(t_count_entries(caller), 2);	/* foreign.txt, gen.c */
	snprintf(path, sizeof path, "%s/gen.c", caller);
	assert_true(exists(path));
	assert_true(exists(keep));
	/* a --workdir that did not exist is created, and goes when empty */
	snprintf(path, sizeof path, "%s/new", dir);
	o.workdir = path;
	assert_int_equal(fl_build_source("int x;\n", &o, &b, &err), 0);
	assert_string_equal(b.parent, path);
	fl_build_remove(&b, &o);
	assert_false(exists(path));
	remove_tree(dir);
}

/* ---- cancelling ---- */

typedef struct canceller {
	const char *pidfile;
	volatile int flag;
} canceller;

/* Sets the flag 100 ms after the test child wrote its pids. */
static void *cancel_later(void *arg)
{
	canceller *c = arg;

	for (int i = 0; i < 3000 && !exists(c->pidfile); i++)
		sleep_ms(10);
	sleep_ms(100);
	c->flag = 1;
	return NULL;
}

/* A program that never ends: its first kernel forks (a second process in
 * the test child's group), writes both pids and waits forever.  Cancel
 * from another thread: status CANCELLED, neither process is left, and
 * fl_build_remove leaves no directory. */
static void test_run_cancel(void **state)
{
	fl_run_opts o = quick_opts(1);
	fl_error err = {""};
	fl_run_result r;
	canceller c = {NULL, 0};
	char dir[512], pidfile[600], src[4096], work[512];
	pthread_t th;
	fl_build b;
	int child = 0, grandchild = 0;
	small f;

	(void)state;
	small_load(&f);
	scratch_dir(dir, sizeof dir);
	snprintf(pidfile, sizeof pidfile, "%s/pids", dir);
	snprintf(src, sizeof src,
		 "#include <stdio.h>\n#include <unistd.h>\n"
		 "const int fl_n_kernels = 3;\n"
		 "static void k(float *const *t)\n{\n"
		 "	pid_t c = fork();\n	FILE *f;\n	(void)t;\n"
		 "	if (c == 0)\n		for (;;) pause();\n"
		 "	f = fopen(\"%s.tmp\", \"w\");\n"
		 "	fprintf(f, \"%%d %%d\\n\", (int)getpid(), (int)c);\n"
		 "	fclose(f);\n	rename(\"%s.tmp\", \"%s\");\n"
		 "	for (;;) pause();\n}\n"
		 "void (*const fl_kernels[3])(float *const *) = {k, k, k};\n",
		 pidfile, pidfile, pidfile);
	assert_int_equal(fl_build_source(src, &o, &b, &err), 0);
	if (b.status != FL_RUN_OK)
		fail_msg("build: %s", b.message);
	snprintf(work, sizeof work, "%s", b.workdir);
	c.pidfile = pidfile;
	o.cancel = &c.flag;
	o.timeout_s = 60;
	assert_int_equal(pthread_create(&th, NULL, cancel_later, &c), 0);
	if (fl_run_build(&b, f.p, f.ref, &o, &r, &err) < 0)
		fail_msg("run: %s", err.msg);
	pthread_join(th, NULL);
	assert_int_equal(r.status, FL_RUN_CANCELLED);
	assert_string_equal(fl_run_status_name(r.status), "cancelled");
	if (!strstr(r.message, "cancelled"))
		fail_msg("message: %s", r.message);
	read_pids(pidfile, &child, &grandchild);
	assert_true(child > 0 && grandchild > 0);
	if (!process_gone(child))
		fail_msg("test child %d is still running", child);
	if (!process_gone(grandchild))
		fail_msg("process %d started by the test child is still "
			 "running", grandchild);
	fl_build_remove(&b, &o);
	assert_false(exists(work));
	fl_run_result_free(&r);
	remove_tree(dir);
	small_free(&f);
}

/* A job cancelled while its compiler (a script that starts a long sleep)
 * runs: status CANCELLED, the script and its sleep are gone, and the
 * work directory it created is removed. */
static void test_run_job_cancel_compiling(void **state)
{
	fl_run_opts o = quick_opts(1);
	fl_error err = {""};
	fl_run_result r;
	char dir[512], cc[600], pidfile[600], work[600], script[4096];
	fl_run_job *j;
	int sh = 0, sleeper = 0;
	FILE *fp;
	small f;

	(void)state;
	small_load(&f);
	scratch_dir(dir, sizeof dir);
	snprintf(cc, sizeof cc, "%s/cc.sh", dir);
	snprintf(pidfile, sizeof pidfile, "%s/pids", dir);
	snprintf(work, sizeof work, "%s/work", dir);
	snprintf(script, sizeof script, "#!/bin/sh\nsleep 60 &\n"
		 "echo $$ $! > '%s.tmp'\nmv '%s.tmp' '%s'\nwait\n", pidfile,
		 pidfile, pidfile);
	fp = fopen(cc, "w");
	assert_non_null(fp);
	fputs(script, fp);
	fclose(fp);
	chmod(cc, 0700);
	o.cc = cc;
	o.workdir = work;
	j = fl_run_job_start(f.p, f.ref, &o, &err);
	if (!j)
		fail_msg("job: %s", err.msg);
	read_pids(pidfile, &sh, &sleeper);
	assert_false(fl_run_job_done(j));
	fl_run_job_cancel(j);
	for (int i = 0; i < 3000 && !fl_run_job_done(j); i++)
		sleep_ms(10);
	assert_true(fl_run_job_done(j));
	assert_int_equal(fl_run_job_finish(j, &r, &err), 0);
	assert_int_equal(r.status, FL_RUN_CANCELLED);
	if (!process_gone(sh) || !process_gone(sleeper))
		fail_msg("the compiler (%d) or its child (%d) is still running",
			 sh, sleeper);
	assert_false(exists(work));
	assert_int_equal(r.workdir[0], '\0');
	fl_run_result_free(&r);
	remove_tree(dir);
	small_free(&f);
}

/* ---- jobs ---- */

/* A job start to finish: done becomes true, the result is verified, and
 * progress arrived from the job's thread. */
static void test_run_job(void **state)
{
	fl_run_opts o = quick_opts(2);
	progress_log *log = calloc(1, sizeof *log);
	fl_error err = {""};
	fl_run_result r;
	fl_run_job *j;
	small f;
	int i;

	(void)state;
	assert_non_null(log);
	small_load(&f);
	o.progress = record_progress;
	o.progress_user = log;
	j = fl_run_job_start(f.p, f.ref, &o, &err);
	if (!j)
		fail_msg("job: %s", err.msg);
	for (i = 0; i < 6000 && !fl_run_job_done(j); i++)
		sleep_ms(10);
	assert_true(fl_run_job_done(j));
	assert_int_equal(fl_run_job_finish(j, &r, &err), 0);
	assert_run_verified(&r);
	assert_int_equal(r.n_kernels, 3);
	assert_int_equal(r.n_outputs, 2);
	assert_true(r.outputs[0].ok && r.outputs[1].ok);
	assert_int_equal(r.kernels[0].n_timed, 2);
	assert_true(log->n >= 4);
	assert_string_equal(log->ev[log->n - 1].phase, "time");
	assert_int_equal(log->ev[log->n - 1].k, 2);
	fl_run_result_free(&r);
	free(log);
	small_free(&f);
}

FL_SUITE(run,
	 cmocka_unit_test(test_small_samples_verify),
	 cmocka_unit_test(test_tiny_budget_still_verifies),
	 cmocka_unit_test(test_every_sample_verifies),
	 cmocka_unit_test(test_stencil_chains_verify),
	 cmocka_unit_test(test_run_progress),
	 cmocka_unit_test(test_run_two_steps),
	 cmocka_unit_test(test_run_per_output),
	 cmocka_unit_test(test_run_per_output_mismatch),
	 cmocka_unit_test(test_run_expected_outputs),
	 cmocka_unit_test(test_run_workdir_removal),
	 cmocka_unit_test(test_run_cancel),
	 cmocka_unit_test(test_run_job_cancel_compiling),
	 cmocka_unit_test(test_run_job));
