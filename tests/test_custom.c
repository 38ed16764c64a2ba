/* Custom ops (DESIGN 1.2): an op the engine cannot model is a fusion
 * wall.  Under every strategy it becomes a kernel of its own -- no
 * polyhedral model, no isl schedule, its code the op's reference
 * implementation, every tensor global -- verified against the
 * interpreter like the rest, while the ops on each side of it fuse as
 * usual.  One graph per sample family with a custom op in the middle:
 * an elementwise chain, a reduction (softmax), a matmul epilogue (dense +
 * bias + relu) and a convolution (conv2d + relu); and the command line
 * (--stage layer1, --emit, --run) on a small one. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <isl/schedule.h>

#include "engine.h"
#include "interp.h"
#include "loader.h"
#include "ladder.h"
#include "test_util.h"

#define HEAD "{'format':'fuselab-graph/1','name':'%s','tensors':{"

/* Each graph's custom op is named "c". */
static const char chain[] = HEAD
	"'x':{'shape':[16,64],'role':'input'},"
	"'y':{'shape':[16,64],'role':'output'}},'ops':["
	"{'name':'a','op':'mul','in':['x','x'],'out':'a'},"
	"{'name':'b','op':'neg','in':['a'],'out':'b'},"
	"{'name':'c','op':'custom','in':['b'],'out':'cs'},"
	"{'name':'d','op':'tanh','in':['cs'],'out':'d'},"
	"{'name':'e','op':'add','in':['d','x'],'out':'y'}]}";

static const char reduction[] = HEAD
	"'x':{'shape':[8,64],'role':'input'},"
	"'y':{'shape':[8,64],'role':'output'}},'ops':["
	"{'name':'s1','op':'softmax','in':['x'],'out':'p','attrs':{'axis':-1}},"
	"{'name':'c','op':'custom','in':['p'],'out':'cs'},"
	"{'name':'s2','op':'softmax','in':['cs'],'out':'y','attrs':{'axis':-1}}]}";

static const char epilogue[] = HEAD
	"'x':{'shape':[16,32],'role':'input'},"
	"'w1':{'shape':[32,24],'role':'param'},"
	"'b1':{'shape':[24],'role':'param'},"
	"'w2':{'shape':[24,16],'role':'param'},"
	"'b2':{'shape':[16],'role':'param'},"
	"'y':{'shape':[16,16],'role':'output'}},'ops':["
	"{'name':'d1','op':'dense','in':['x','w1','b1'],'out':'h1'},"
	"{'name':'r1','op':'relu','in':['h1'],'out':'a1'},"
	"{'name':'c','op':'custom','in':['a1'],'out':'cs','attrs':{'fn':'copy'}},"
	"{'name':'d2','op':'dense','in':['cs','w2','b2'],'out':'h2'},"
	"{'name':'r2','op':'relu','in':['h2'],'out':'y'}]}";

static const char conv[] = HEAD
	"'x':{'shape':[1,4,12,12],'role':'input'},"
	"'w1':{'shape':[8,4,3,3],'role':'param'},"
	"'w2':{'shape':[4,8,3,3],'role':'param'},"
	"'y':{'shape':[1,4,8,8],'role':'output'}},'ops':["
	"{'name':'k1','op':'conv2d','in':['x','w1'],'out':'h1'},"
	"{'name':'r1','op':'relu','in':['h1'],'out':'a1'},"
	"{'name':'c','op':'custom','in':['a1'],'out':'cs'},"
	"{'name':'k2','op':'conv2d','in':['cs','w2'],'out':'h2'},"
	"{'name':'r2','op':'relu','in':['h2'],'out':'y'}]}";

static fl_graph *load(const char *fmt, const char *name)
{
	char json[4096];

	snprintf(json, sizeof json, fmt, name);
	return t_load_q(json);
}

static fl_engine_opts opts(fl_strategy s, bool run)
{
	fl_engine_opts o;

	fl_engine_opts_default(&o);
	o.strategy = s;
	o.stop_after = run ? FL_PASS_RUN : FL_PASS_CODEGEN;
	o.run_kernels = run;
	o.run.warmup = 0;
	o.run.repeat = 0;	/* verification only: no timed runs */
	return o;
}

/* The kernel (index) holding op `name` of p's graph. */
static int kernel_of(const fl_program *p, const char *name)
{
	int op = fl_graph_find_op(p->graph, name);

	assert_true(op >= 0);
	for (int k = 0; k < p->n_kernels; k++)
		for (int i = 0; i < p->kernels[k].n_ops; i++)
			if (p->kernels[k].ops[i] == op)
				return k;
	fail_msg("op %s is in no kernel", name);
	return -1;
}

static bool logged(const fl_event_log *log, fl_event_kind kind,
		   const char *text)
{
	for (int i = 0; i < fl_event_log_count(log); i++) {
		const fl_event *e = fl_event_log_get(log, i);

		if (e->kind == kind && strstr(e->reason, text))
			return true;
	}
	return false;
}

/* Strategy s on g through codegen: the custom op "c" is a kernel of its
 * own without a schedule, its tensors global, its code the reference
 * code; the events say so; the state checker holds.  With `fused`, the
 * ops before c share a kernel of two ops or more, and so do those after
 * it (the graphs are chains: op order is dataflow order).  Returns the
 * number of kernels. */
static int check_program(const fl_graph *g, fl_strategy s, bool fused)
{
	fl_engine_opts o = opts(s, false);
	fl_error err = {""};
	fl_session *ses = fl_engine_open(g, &o, &err);
	const fl_program *p;
	const fl_kernel *kc;
	const char *src;
	bool before = false, after = false;
	int c, n;

	if (!ses)
		fail_msg("%s: open: %s", g->name, err.msg);
	if (fl_engine_run(ses, &err) < 0)
		fail_msg("%s (%s): %s", g->name, fl_strategy_name(s), err.msg);
	if (fl_engine_check(ses, &err) < 0)
		fail_msg("%s (%s): state check: %s", g->name,
			 fl_strategy_name(s), err.msg);
	p = fl_engine_program(ses);
	assert_non_null(p);
	c = fl_graph_find_op(p->graph, "c");
	kc = &p->kernels[kernel_of(p, "c")];
	assert_int_equal(kc->n_ops, 1);
	assert_null(kc->schedule);
	assert_true(kc->n_tensors == 2);
	for (int i = 0; i < kc->n_tensors; i++) {
		assert_int_equal(kc->tensors[i].place, FL_PLACE_GLOBAL);
		assert_string_equal(kc->tensors[i].why, "custom op: its own kernel");
	}
	src = fl_engine_kernel_source(ses, (int)(kc - p->kernels));
	assert_non_null(src);
	assert_non_null(strstr(src, "custom -> T"));
	assert_true(logged(fl_engine_events(ses), FL_EV_SCHEDULED,
			   "not scheduled by isl"));
	assert_true(logged(fl_engine_events(ses), FL_EV_PLACED,
			   "global: custom op: its own kernel"));
	for (int k = 0; k < p->n_kernels; k++) {
		const fl_kernel *kn = &p->kernels[k];
		bool all_before = kn->n_ops >= 2, all_after = kn->n_ops >= 2;

		if (kn == kc)
			continue;
		assert_non_null(kn->schedule);
		for (int i = 0; i < kn->n_ops; i++) {
			assert_int_not_equal(kn->ops[i], c);
			all_before &= kn->ops[i] < c;
			all_after &= kn->ops[i] > c;
		}
		before |= all_before;
		after |= all_after;
	}
	if (fused && !(before && after))
		fail_msg("%s (%s): the ops %s the custom op do not fuse",
			 g->name, fl_strategy_name(s), before ? "after" : "before");
	n = p->n_kernels;
	fl_engine_close(ses);
	return n;
}

/* Every strategy compiles, runs and verifies g, the custom op a kernel
 * of its own each time; apollo-l1 needs fewer kernels than unfused and
 * fuses on both sides of the custom op. */
static void custom_in_the_middle(const char *fmt, const char *name)
{
	static const fl_strategy list[] = {FL_STRATEGY_UNFUSED, FL_STRATEGY_XLA,
					   FL_STRATEGY_APOLLO_L1};
	fl_graph *g = load(fmt, name);
	fl_engine_opts o = opts(FL_STRATEGY_UNFUSED, true);
	fl_error err = {""};
	fl_ladder l;
	int unfused;

	assert_int_equal(fl_ladder_run(g, &o, list, 3, &l, &err), 0);
	assert_int_equal(l.n, 3);
	for (int i = 0; i < l.n; i++) {
		const fl_ladder_step *st = &l.steps[i];
		int own = 0;

		if (!st->ran || !st->verified)
			fail_msg("%s under %s: %s%s", name,
				 fl_strategy_name(st->strategy),
				 st->ran ? "not verified: " : st->error,
				 st->ran ? st->message : "");
		for (int k = 0; k < st->n_kernels; k++)
			own += st->kernels[k].n_ops == 1 &&
			       !strcmp(st->kernels[k].first_op, "c");
		assert_int_equal(own, 1);
	}
	assert_true(l.steps[2].n_kernels < l.steps[0].n_kernels);
	fl_ladder_free(&l);
	unfused = check_program(g, FL_STRATEGY_UNFUSED, false);
	check_program(g, FL_STRATEGY_XLA, false);
	assert_true(check_program(g, FL_STRATEGY_APOLLO_L1, true) < unfused);
	fl_graph_free(g);
}

static void test_custom_chain(void **state)
{
	(void)state;
	custom_in_the_middle(chain, "custom_chain");
}

static void test_custom_reduction(void **state)
{
	(void)state;
	custom_in_the_middle(reduction, "custom_reduction");
}

static void test_custom_matmul_epilogue(void **state)
{
	(void)state;
	custom_in_the_middle(epilogue, "custom_epilogue");
}

static void test_custom_conv(void **state)
{
	(void)state;
	custom_in_the_middle(conv, "custom_conv");
}

/* The state checker holds a custom op's kernel to its shape: alone,
 * without a schedule, every tensor global; and any other kernel to
 * having a schedule. */
static void test_custom_state_check(void **state)
{
	fl_graph *g = load(chain, "custom_chain");
	fl_engine_opts o = opts(FL_STRATEGY_APOLLO_L1, false);
	fl_error err = {""};
	fl_session *s = fl_engine_open(g, &o, &err);
	fl_program *p;
	fl_kernel *kc, *other;
	isl_schedule *saved;

	(void)state;
	assert_non_null(s);
	assert_true(fl_engine_run(s, &err) >= 0);
	assert_int_equal(fl_engine_check(s, &err), 0);
	p = (fl_program *)fl_engine_program(s);
	kc = &p->kernels[kernel_of(p, "c")];
	other = &p->kernels[kernel_of(p, "e")];
	kc->tensors[0].place = FL_PLACE_TILE_LOCAL;
	assert_int_equal(fl_engine_check(s, &err), -1);
	assert_non_null(strstr(err.msg, kc->name));
	kc->tensors[0].place = FL_PLACE_GLOBAL;
	kc->schedule = other->schedule;
	assert_int_equal(fl_engine_check(s, &err), -1);
	assert_non_null(strstr(err.msg, "custom op is a kernel of its own"));
	kc->schedule = NULL;
	saved = other->schedule;
	other->schedule = NULL;
	assert_int_equal(fl_engine_check(s, &err), -1);
	assert_non_null(strstr(err.msg, "has no schedule"));
	other->schedule = saved;
	assert_int_equal(fl_engine_check(s, &err), 0);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* ---- the command line ---------------------------------------------------- */

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* x -> custom(copy) -> y: --stage layer1, --emit and --run succeed under
 * every strategy. */
static void test_custom_cli(void **state)
{
	static const char graph[] =
		"{\"format\":\"fuselab-graph/1\",\"name\":\"cust\",\"tensors\":{"
		"\"x\":{\"shape\":[4,8],\"role\":\"input\"},"
		"\"y\":{\"shape\":[4,8],\"role\":\"output\"}},\"ops\":["
		"{\"name\":\"c\",\"op\":\"custom\",\"in\":[\"x\"],\"out\":\"y\","
		"\"attrs\":{\"fn\":\"copy\"}}]}";
	char path[] = "/tmp/fuselab-custom-XXXXXX", dir[] = "/tmp/fuselab-emit-XXXXXX";
	char args[1024], file[1100], *out;
	static const char *const strat[] = {"unfused", "xla", "apollo-l1"};
	FILE *f;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(graph, f);
	fclose(f);
	assert_non_null(mkdtemp(dir));

	snprintf(args, sizeof args, "--batch --stage layer1 --events %s", path);
	if (t_fuselab(args, &out) != 0)
		fail_msg("--stage layer1: %s", out);
	assert_non_null(strstr(out, "G0 -> fl_k0: custom op c (copy): its own "
			       "kernel, the op's reference code; not scheduled "
			       "by isl"));
	assert_non_null(strstr(out, "fl_k0: y global: custom op: its own kernel"));
	assert_non_null(strstr(out, "not scheduled by isl: the op's reference code"));
	free(out);

	snprintf(args, sizeof args, "--batch --emit %s %s", dir, path);
	if (t_fuselab(args, &out) != 0)
		fail_msg("--emit: %s", out);
	free(out);
	for (int i = 0; i < 3; i++) {
		char *src = NULL;
		long n;

		snprintf(file, sizeof file, "%s/cust-%s.c", dir, strat[i]);
		f = fopen(file, "r");
		assert_non_null(f);
		fseek(f, 0, SEEK_END);
		n = ftell(f);
		rewind(f);
		src = calloc((size_t)n + 1, 1);
		assert_non_null(src);
		assert_int_equal(fread(src, 1, (size_t)n, f), (size_t)n);
		fclose(f);
		assert_non_null(strstr(src, "y[i] = x[i];"));
		free(src);
		unlink(file);
	}
	rmdir(dir);

	snprintf(args, sizeof args, "--batch --run --warmup 0 --repeat 1 %s", path);
	if (t_fuselab(args, &out) != 0)
		fail_msg("--run: %s", out);
	assert_int_equal(count(out, "verified yes"), FL_STRATEGY_COUNT);
	assert_int_equal(count(out, "verified no"), 0);
	free(out);
	unlink(path);
}

/* An opaque custom op (fn "opaque": any inputs, a declared output shape,
 * no implementation) in a JSON graph: every strategy partitions it into
 * a kernel of its own with the ops on each side fused, and generates the
 * kernels' code with a comment in its place but no translation unit; the
 * interpreter and the run refuse it by name; bad attributes are errors. */
static void test_custom_opaque(void **state)
{
	static const char graph[] = HEAD
		"'x':{'shape':[8,16],'role':'input'},"
		"'y':{'shape':[8,4],'role':'output'}},'ops':["
		"{'name':'a','op':'exp','in':['x'],'out':'a'},"
		"{'name':'b','op':'neg','in':['a'],'out':'b'},"
		"{'name':'c','op':'custom','in':['b','x'],'out':'cs',"
		"'attrs':{'fn':'opaque','shape':[8,4]}},"
		"{'name':'d','op':'tanh','in':['cs'],'out':'d'},"
		"{'name':'e','op':'sigmoid','in':['d'],'out':'y'}]}";
	fl_graph *g = load(graph, "opaque");
	fl_error err = {""};

	(void)state;
	assert_false(fl_op_computable(&g->ops[fl_graph_find_op(g, "c")]));
	assert_null(fl_interp_run(g, NULL, &err));
	t_assert_contains(err.msg, "cannot interpret: op \"c\" is an opaque "
			  "custom op");
	for (int s = 0; s < FL_STRATEGY_COUNT; s++) {
		fl_engine_opts o = opts((fl_strategy)s, false);
		fl_session *ses = fl_engine_open(g, &o, &err);
		const fl_program *p;
		int kc;

		assert_non_null(ses);
		if (fl_engine_run(ses, &err) < 0)
			fail_msg("%s: %s", fl_strategy_name(s), err.msg);
		if (fl_engine_check(ses, &err) < 0)
			fail_msg("%s: state check: %s", fl_strategy_name(s),
				 err.msg);
		p = fl_engine_program(ses);
		kc = kernel_of(p, "c");
		assert_int_equal(p->kernels[kc].n_ops, 1);
		assert_int_equal(p->kernels[kc].n_tensors, 3);
		t_assert_contains(fl_engine_kernel_source(ses, kc),
				  "no code.  op c is an opaque custom op");
		assert_null(fl_engine_source(ses));
		if (s == FL_STRATEGY_APOLLO_L1)
			assert_int_equal(kernel_of(p, "a"), kernel_of(p, "b"));
		fl_engine_close(ses);
	}
	fl_graph_free(g);
	for (int k = 0; k < 2; k++) {
		static const char *const bad[][2] = {
			{"'fn':'opaque'", "attrs.shape: required for fn "
			 "\"opaque\""},
			{"'fn':'opaque','shape':[4,0]", "attrs.shape[1]: must "
			 "be >= 1"},
		};
		char q[512], *json;

		snprintf(q, sizeof q, "{'format':'fuselab-graph/1','name':'b',"
			 "'tensors':{'x':{'shape':[4],'role':'input'},"
			 "'y':{'shape':[4],'role':'output'}},'ops':["
			 "{'name':'c','op':'custom','in':['x'],'out':'y',"
			 "'attrs':{%s}}]}", bad[k][0]);
		for (char *c = q; *c; c++)
			*c = *c == '\'' ? '"' : *c;
		json = q;
		g = fl_load_graph_string(json, strlen(json), "b", &err);
		assert_null(g);
		t_assert_contains(err.msg, bad[k][1]);
	}
}

FL_SUITE(custom,
	 cmocka_unit_test(test_custom_chain),
	 cmocka_unit_test(test_custom_reduction),
	 cmocka_unit_test(test_custom_matmul_epilogue),
	 cmocka_unit_test(test_custom_conv),
	 cmocka_unit_test(test_custom_state_check),
	 cmocka_unit_test(test_custom_cli),
	 cmocka_unit_test(test_custom_opaque));
