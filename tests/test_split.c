/* Split loops (engine/backend/split.c): an innermost vectorised loop
 * whose statements chain two or more expensive maths calls prints as one
 * "omp simd" loop per call, the scalars that cross carried in strip
 * arrays; a loop with one such call stays whole; split programs -- a
 * constant extent, a strip-mined one with several carried scalars --
 * match the interpreter. */
#include <stdlib.h>
#include <string.h>

#include "codegen.h"
#include "engine.h"
#include "interp.h"
#include "runner.h"
#include "test_util.h"

/* Layer 1's program for g (keep) in *s (the caller closes it), and its
 * C (malloc'd). */
static char *layer1_source(fl_graph *g, fl_session **s)
{
	fl_engine_opts eo;
	fl_error err = {""};
	char *src;

	fl_engine_opts_default(&eo);
	eo.stop_after = FL_PASS_LAYER1;
	*s = fl_engine_open(g, &eo, &err);
	if (!*s || fl_engine_run(*s, &err) < 0)
		fail_msg("engine: %s", err.msg);
	src = fl_codegen_c(fl_engine_program(*s), &err);
	if (!src)
		fail_msg("codegen: %s", err.msg);
	return src;
}

/* The occurrences of what in [s, end). */
static int count_in(const char *s, const char *end, const char *what)
{
	int n = 0;

	for (s = strstr(s, what); s && s < end; s = strstr(s + 1, what))
		n++;
	return n;
}

/* The function fl_k0 of src: from its comment to the next kernel's or
 * the table; *end set to its end. */
static const char *first_kernel(const char *src, const char **end)
{
	const char *k = strstr(src, "/* fl_k0:");
	const char *next;

	assert_non_null(k);
	next = strstr(k + 1, "\nconst int fl_n_kernels");
	*end = next ? next : k + strlen(k);
	return k;
}

/* Runs s's program against the interpreter; fails unless it verifies. */
static void verifies(fl_session *s)
{
	fl_error err = {""};
	fl_run_opts o;
	fl_run_result r;
	fl_values *ref = fl_interp_run(fl_engine_graph(s), NULL, &err);

	assert_non_null(ref);
	fl_run_opts_default(&o);
	o.warmup = 0;
	o.repeat = 1;
	if (fl_run_program(fl_engine_program(s), ref, &o, &r, &err) < 0)
		fail_msg("run: %s", err.msg);
	if (r.status != FL_RUN_OK || !r.verified)
		fail_msg("%s: %s", fl_run_status_name(r.status), r.message);
	fl_run_result_free(&r);
	fl_values_free(ref);
}

/* chain8 (tanh, then exp, in one kernel): two simd loops over the row,
 * the first with tanh and not exp, the second with exp and not tanh, a
 * strip of the row's 1024 elements between them, the comment naming the
 * split. */
static void test_split_chain8_one_call_per_loop(void **state)
{
	fl_graph *g = t_load_sample("chain8");
	fl_session *s;
	char *src = layer1_source(g, &s);
	const char *end, *k = first_kernel(src, &end);
	const char *first = strstr(k, "#pragma omp simd\n");
	const char *second = first ? strstr(first + 1, "#pragma omp simd\n") :
			     NULL;

	(void)state;
	if (!first || !second || second > end ||
	    count_in(k, end, "#pragma omp simd") != 2)
		fail_msg("not two simd loops:\n%s", k);
	assert_non_null(strstr(k, "split at tanh, exp:"));
	assert_int_equal(count_in(k, end, "_s[1024];"), 1);
	assert_int_equal(count_in(first, second, "fl_tanhf_b("), 1);
	/* exp of 1.5 tanh(..): the variant without range selects and with
	 * the one-step reduction (the argument is within 1.5) */
	assert_int_equal(count_in(first, second, "fl_expf"), 0);
	assert_int_equal(count_in(second, end, "fl_expf_small("), 1);
	assert_int_equal(count_in(second, end, "fl_tanhf"), 0);
	free(src);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* The kernel fl_k0 of layer 1's program for g (taken) has `loops` simd
 * loops, and "split at" in its comment when it has more than one. */
static void simd_loops(fl_graph *g, int loops)
{
	fl_session *s;
	char *src = layer1_source(g, &s);
	const char *end, *k = first_kernel(src, &end);

	if (count_in(k, end, "#pragma omp simd") != loops ||
	    !strstr(k, "split at") != (loops == 1) ||
	    (count_in(k, end, "_s[") > 0) != (loops > 1))
		fail_msg("not %d simd loop(s):\n%s", loops, k);
	if (loops > 1)
		verifies(s);
	free(src);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* Only where it pays: exp of tanh is split, while two calls that do not
 * feed each other (their chains overlap within an iteration) and
 * bias_gelu's fused kernel (tanh GELU: one expensive call) keep one simd
 * loop and no strip. */
static void test_split_only_chained_calls(void **state)
{
	(void)state;
	simd_loops(t_load_q("{'format':'fuselab-graph/1','name':'t',"
		"'tensors':{'x':{'shape':[16,256],'role':'input'},"
		"'y':{'shape':[16,256],'role':'output'}},'ops':["
		"{'name':'t','op':'tanh','in':['x'],'out':'t'},"
		"{'name':'y','op':'exp','in':['t'],'out':'y'}]}"), 2);
	simd_loops(t_load_q("{'format':'fuselab-graph/1','name':'t',"
		"'tensors':{'x':{'shape':[16,256],'role':'input'},"
		"'y':{'shape':[16,256],'role':'output'}},'ops':["
		"{'name':'t','op':'tanh','in':['x'],'out':'t'},"
		"{'name':'e','op':'exp','in':['x'],'out':'e'},"
		"{'name':'y','op':'mul','in':['t','e'],'out':'y'}]}"), 1);
	simd_loops(t_load_sample("bias_gelu"), 1);
}

/* A row longer than a strip, a chain of three calls (tanh, exp of it,
 * sigmoid of a product with it) where the first input and tanh's result
 * are also read two parts later: the loop is strip-mined, three parts,
 * three scalars carried in strips (those two and the product), and the
 * program matches the interpreter. */
static void test_split_strip_mined_verifies(void **state)
{
	fl_graph *g = t_load_q("{'format':'fuselab-graph/1','name':'t',"
		"'tensors':{'x':{'shape':[3,2500],'role':'input'},"
		"'b':{'shape':[2500],'role':'param'},"
		"'y':{'shape':[3,2500],'role':'output'}},'ops':["
		"{'name':'a','op':'add','in':['x','b'],'out':'a'},"
		"{'name':'t','op':'tanh','in':['a'],'out':'t'},"
		"{'name':'e','op':'exp','in':['t'],'out':'e'},"
		"{'name':'m','op':'mul','in':['e','a'],'out':'m'},"
		"{'name':'s','op':'sigmoid','in':['m'],'out':'s'},"
		"{'name':'y','op':'sub','in':['s','t'],'out':'y'}]}");
	fl_session *s;
	char *src = layer1_source(g, &s);
	const char *end, *k = first_kernel(src, &end);

	(void)state;
	if (count_in(k, end, "#pragma omp simd") != 3 ||
	    count_in(k, end, "_s[1024];") != 3 || !strstr(k, "_lo += 1024") ||
	    !strstr(k, "split at tanh, exp, sigmoid:"))
		fail_msg("not strip-mined into three loops:\n%s", k);
	verifies(s);
	free(src);
	fl_engine_close(s);
	fl_graph_free(g);
}

FL_SUITE(split,
	 cmocka_unit_test(test_split_chain8_one_call_per_loop),
	 cmocka_unit_test(test_split_only_chained_calls),
	 cmocka_unit_test(test_split_strip_mined_verifies));
