/* gather_elements and scatter_elements: indexing by indices computed at
 * run time (ops_index.c, onnx_indexed.c).
 *
 * The interpreter against values worked out by hand (negative indices,
 * an axis other than 0, a scatter with duplicate indices under every
 * reduction, integer data); graphs with them run through every strategy
 * with the generated C compiled, run and verified against the
 * interpreter; ONNX's own node tests (ScatterElements with duplicates,
 * ScatterND add, run-time GatherND with a batch dim, an expanded
 * NegativeLogLikelihoodLoss) verified against ONNX's outputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "interp.h"
#include "ops.h"
#include "test_util.h"

#define TESTDATA "/usr/share/libonnx-testdata/data"

/* The interpreter's value of tensor `name` of graph (single-quoted
 * JSON), as doubles into got (n of them). */
static void interpret(const char *graph, const char *name, double *got, int n)
{
	fl_graph *g = t_load_q(graph);
	fl_interp_opts o;
	fl_error err = {""};
	fl_values *v;
	int t = -1;

	fl_interp_opts_default(&o);
	v = fl_interp_run(g, &o, &err);
	if (!v)
		fail_msg("interpret: %s", err.msg);
	for (int k = 0; k < g->n_tensors; k++)
		if (!strcmp(g->tensors[k].name, name))
			t = k;
	assert_true(t >= 0);
	assert_int_equal(fl_shape_numel(&v->bufs[t].shape), n);
	for (int i = 0; i < n; i++)
		got[i] = v->bufs[t].ints ? (double)v->bufs[t].ints[i]
					 : v->bufs[t].data[i];
	fl_values_free(v);
	fl_graph_free(g);
}

static void assert_values(const char *what, const double *got,
			  const double *want, int n)
{
	for (int i = 0; i < n; i++)
		if (got[i] != want[i])
			fail_msg("%s: element %d is %g, want %g", what, i, got[i],
				 want[i]);
}

static void test_indexed_gather_elements_values(void **state)
{
	/* axis 1: row 0 takes x[0][2], x[0][0]; row 1 x[1][1], x[1][0] */
	static const double want[4] = {3, 1, 5, 4};
	double got[4];

	(void)state;
	interpret("{'format':'fuselab-graph/1','name':'ge','tensors':{"
		  "'x':{'shape':[2,3],'role':'const','data':[1,2,3,4,5,6]},"
		  "'i':{'shape':[2,2],'dtype':'i64','role':'const',"
		  "'data':[-1,0,1,-3]},"
		  "'y':{'shape':[2,2],'role':'output'}},'ops':["
		  "{'name':'g','op':'gather_elements','in':['x','i'],"
		  "'out':'y','attrs':{'axis':1}}]}", "y", got, 4);
	assert_values("gather_elements", got, want, 4);
}

/* x [1,5] = 1..5, indices 1, -4 (also 1: a duplicate), 3 along axis 1,
 * updates 10, 20, 30. */
static void scatter_case(const char *reduction, const double *want)
{
	char graph[900];
	double got[5];

	snprintf(graph, sizeof graph, "{'format':'fuselab-graph/1',"
		 "'name':'se','tensors':{"
		 "'x':{'shape':[1,5],'role':'const','data':[1,2,3,4,5]},"
		 "'i':{'shape':[1,3],'dtype':'i32','role':'const',"
		 "'data':[1,-4,3]},"
		 "'u':{'shape':[1,3],'role':'const','data':[10,20,30]},"
		 "'y':{'shape':[1,5],'role':'output'}},'ops':["
		 "{'name':'s','op':'scatter_elements','in':['x','i','u'],"
		 "'out':'y','attrs':{'axis':-1,'reduction':'%s'}}]}",
		 reduction);
	interpret(graph, "y", got, 5);
	assert_values(reduction, got, want, 5);
}

static void test_indexed_scatter_elements_values(void **state)
{
	static const double none[5] = {1, 20, 3, 30, 5};	/* last wins */
	static const double add[5] = {1, 32, 3, 34, 5};
	static const double mul[5] = {1, 400, 3, 120, 5};
	static const double max[5] = {1, 20, 3, 30, 5};
	static const double min[5] = {1, 2, 3, 4, 5};
	static const double ints[3] = {1, 2, 1103};
	double got[3];

	(void)state;
	scatter_case("none", none);
	scatter_case("add", add);
	scatter_case("mul", mul);
	scatter_case("max", max);
	scatter_case("min", min);
	/* int64 data along axis 0: indices 2 and -1 both pick row 2 */
	interpret("{'format':'fuselab-graph/1','name':'si','tensors':{"
		  "'x':{'shape':[3,1],'dtype':'i64','role':'const',"
		  "'data':[1,2,3]},"
		  "'i':{'shape':[2,1],'dtype':'i64','role':'const',"
		  "'data':[2,-1]},"
		  "'u':{'shape':[2,1],'dtype':'i64','role':'const',"
		  "'data':[100,1000]},"
		  "'y':{'shape':[3,1],'dtype':'i64','role':'output'}},'ops':["
		  "{'name':'s','op':'scatter_elements','in':['x','i','u'],"
		  "'out':'y','attrs':{'reduction':'add'}}]}", "y", got, 3);
	assert_values("int64 add", got, ints, 3);
}

/* Runs every strategy on the graph (single-quoted JSON) and checks that
 * each verified; the sanitizer pass runs one. */
static void verifies_every_strategy(const char *name, const char *graph)
{
	t_graph_verifies_every_strategy(name, graph);
}

/* Both ops between elementwise producers and consumers (which must not
 * fuse into their indexed accesses), negative and duplicate indices,
 * a scatter along axis 0 whose duplicates share a column and one with
 * a reduction along axis 1. */
static void test_indexed_every_strategy(void **state)
{
	(void)state;
	verifies_every_strategy("indexed", "{'format':'fuselab-graph/1',"
		"'name':'indexed','tensors':{"
		"'x':{'shape':[5,8],'role':'input'},"
		"'u':{'shape':[3,8],'role':'input'},"
		"'i':{'shape':[3,8],'dtype':'i64','role':'const','data':["
		"0,4,-1,2,2,3,-5,1, 4,4,0,2,-3,3,0,1, 1,-1,2,0,2,0,4,-2]},"
		"'j':{'shape':[5,3],'dtype':'i64','role':'const','data':["
		"7,-1,0, 2,2,5, -8,3,1, 6,6,6, 0,1,2]},"
		"'y':{'shape':[5,8],'role':'output'},"
		"'z':{'shape':[5,3],'role':'output'},"
		"'w':{'shape':[5,8],'role':'output'}},'ops':["
		"{'name':'e','op':'exp','in':['x'],'out':'e'},"
		"{'name':'s','op':'scatter_elements','in':['e','i','u'],"
		"'out':'s'},"
		"{'name':'r','op':'relu','in':['s'],'out':'y'},"
		"{'name':'g','op':'gather_elements','in':['e','j'],'out':'g',"
		"'attrs':{'axis':1}},"
		"{'name':'n','op':'neg','in':['g'],'out':'z'},"
		"{'name':'a','op':'scatter_elements','in':['x','j','g'],"
		"'out':'w','attrs':{'axis':1,'reduction':'add'}}]}");
}

/* ONNX backend test node/<test> on its first data set: the interpreter
 * against ONNX's outputs, every strategy's kernels verified. */
static void onnx_test_verifies(const char *test)
{
	char args[2048], dir[512], *out;

	snprintf(dir, sizeof dir, TESTDATA "/node/%s", test);
	snprintf(args, sizeof args, "--batch --run --strategy %s --repeat 1 "
		 "--warmup 0 --inputs %s/test_data_set_0 --expect "
		 "%s/test_data_set_0 %s/model.onnx",
		 T_SANITIZED ? "apollo" : "all", dir, dir, dir);
	if (t_fuselab(args, &out) != 0)
		fail_msg("%s:\n%s", test, out);
	if (!strstr(out, ": ok (max abs error") && !strstr(out, "exact)"))
		fail_msg("%s: output not compared:\n%s", test, out);
	if (t_occurrences(out, "verified yes") != (T_SANITIZED ? 1 : FL_STRATEGY_COUNT))
		fail_msg("%s: not every strategy verified:\n%s", test, out);
	free(out);
}

static void test_indexed_onnx(void **state)
{
	(void)state;
	onnx_test_verifies("test_scatter_elements_with_duplicate_indices");
	onnx_test_verifies("test_scatternd_add");
	onnx_test_verifies("test_gathernd_example_int32_batch_dim1");
	onnx_test_verifies("test_nllloss_NCd1d2d3_none_no_weight_negative_ii_"
			   "expanded");
}

FL_SUITE(indexed,
	 cmocka_unit_test(test_indexed_gather_elements_values),
	 cmocka_unit_test(test_indexed_scatter_elements_values),
	 cmocka_unit_test(test_indexed_every_strategy),
	 cmocka_unit_test(test_indexed_onnx),
);
