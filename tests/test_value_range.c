/* Value ranges (engine/backend/value_range.c): interval arithmetic over
 * a graph, the x - max(x) rule only where it holds, and nothing assumed
 * about inputs, parameters or what the rules do not cover. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "graph.h"
#include "test_util.h"
#include "value_range.h"

static fl_value_range range_of(const fl_graph *g, const fl_value_range *r,
			       const char *name)
{
	int t = fl_graph_find_tensor(g, name);

	assert_true(t >= 0);
	return r[t];
}

static void assert_range(fl_value_range r, float lo, float hi)
{
	if (!(fabsf(r.lo - lo) <= 1e-6f * fabsf(lo) || r.lo == lo) ||
	    !(fabsf(r.hi - hi) <= 1e-6f * fabsf(hi) || r.hi == hi))
		fail_msg("range [%g, %g], expected [%g, %g]", (double)r.lo,
			 (double)r.hi, (double)lo, (double)hi);
}

/* chain8: scale and shift are parameters (anything), tanh bounds it,
 * the gain, exp, the shift by one, relu and the cap follow. */
static void test_value_range_chain8(void **state)
{
	fl_graph *g = t_load_sample("chain8");
	fl_value_range *r = fl_value_ranges(g);

	(void)state;
	assert_non_null(r);
	assert_range(range_of(g, r, "x"), -INFINITY, INFINITY);
	assert_range(range_of(g, r, "t2"), -INFINITY, INFINITY);
	assert_range(range_of(g, r, "t3"), -1.0f, 1.0f);
	assert_range(range_of(g, r, "t4"), -1.5f, 1.5f);
	assert_true(fl_value_range_within(range_of(g, r, "t4"),
					  FL_EXPF_ARG_LO, FL_EXPF_ARG_HI));
	assert_range(range_of(g, r, "t5"), expf(-1.5f), expf(1.5f));
	assert_range(range_of(g, r, "t6"), expf(-1.5f) - 1, expf(1.5f) - 1);
	assert_range(range_of(g, r, "t7"), 0.0f, expf(1.5f) - 1);
	/* min's NaN rule may give either operand: the union */
	assert_range(range_of(g, r, "y"), 0.0f, expf(1.5f) - 1);
	free(r);
	fl_graph_free(g);
}

#define HEAD "{'format':'fuselab-graph/1','name':'t','tensors':{"

/* x - reduce_max(x) is at most 0; the same max taken from another
 * tensor, or subtracted the other way round, is not. */
static void test_value_range_minus_own_max(void **state)
{
	fl_graph *g = t_load_q(HEAD
		"'x':{'shape':[4,8],'role':'input'},"
		"'y':{'shape':[4,8],'role':'input'},"
		"'c':{'shape':[3],'role':'const','data':[-2,0.5,7]},"
		"'z':{'shape':[1],'role':'const','value':0},"
		"'a':{'shape':[4,8],'role':'output'},"
		"'b':{'shape':[4,8],'role':'output'},"
		"'d':{'shape':[4,8],'role':'output'},"
		"'w':{'shape':[4,8],'role':'output'},"
		"'v':{'shape':[3],'role':'output'}},'ops':["
		"{'name':'m','op':'reduce_max','in':['x'],'out':'m',"
		"'attrs':{'axes':[1]}},"
		"{'name':'a','op':'sub','in':['x','m'],'out':'a'},"
		"{'name':'b','op':'sub','in':['y','m'],'out':'b'},"
		"{'name':'d','op':'sub','in':['m','x'],'out':'d'},"
		"{'name':'w','op':'mul','in':['x','z'],'out':'w'},"
		"{'name':'v','op':'neg','in':['c'],'out':'v'}]}");
	fl_value_range *r = fl_value_ranges(g);

	(void)state;
	assert_non_null(r);
	assert_range(range_of(g, r, "a"), -INFINITY, 0.0f);
	assert_range(range_of(g, r, "b"), -INFINITY, INFINITY);
	assert_range(range_of(g, r, "d"), -INFINITY, INFINITY);
	/* 0 * inf is NaN: nothing is known */
	assert_range(range_of(g, r, "w"), -INFINITY, INFINITY);
	assert_range(range_of(g, r, "c"), -2.0f, 7.0f);
	assert_range(range_of(g, r, "v"), -7.0f, 2.0f);
	assert_true(fl_value_never_nan(g, fl_graph_find_tensor(g, "c")));
	assert_false(fl_value_never_nan(g, fl_graph_find_tensor(g, "x")));
	assert_false(fl_value_never_nan(g, fl_graph_find_tensor(g, "v")));
	free(r);
	fl_graph_free(g);
}

/* A constant too big to read through (an imported model's weights)
 * tells nothing: whole line, maybe NaN. */
static void test_value_range_big_constant_unread(void **state)
{
	enum { N = 5000 };
	char *json = malloc(N * 4 + 512), *at;
	fl_value_range *r;
	fl_graph *g;

	(void)state;
	assert_non_null(json);
	at = json + sprintf(json, "{\"format\":\"fuselab-graph/1\",\"name\":"
			    "\"t\",\"tensors\":{\"w\":{\"shape\":[%d],"
			    "\"role\":\"const\",\"data\":[", N);
	for (int i = 0; i < N; i++)
		at += sprintf(at, i ? ",1" : "1");
	sprintf(at, "]},\"y\":{\"shape\":[%d],\"role\":\"output\"}},"
		"\"ops\":[{\"name\":\"y\",\"op\":\"tanh\",\"in\":[\"w\"],"
		"\"out\":\"y\"}]}", N);
	g = t_load(json);
	free(json);
	r = fl_value_ranges(g);
	assert_non_null(r);
	assert_range(range_of(g, r, "w"), -INFINITY, INFINITY);
	assert_range(range_of(g, r, "y"), -1.0f, 1.0f);
	assert_false(fl_value_never_nan(g, fl_graph_find_tensor(g, "w")));
	free(r);
	fl_graph_free(g);
}

FL_SUITE(value_range,
	cmocka_unit_test(test_value_range_chain8),
	cmocka_unit_test(test_value_range_minus_own_max),
	cmocka_unit_test(test_value_range_big_constant_unread));
