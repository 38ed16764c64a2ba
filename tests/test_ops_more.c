/* The ops of issue 29 ("Models users bring"): the float operators ONNX's
 * node tests exercise, added to the op library or to the importer.
 *
 * Each family has its values checked against numbers worked out by hand
 * (the op's reference implementation, or the interpreter on an imported
 * model), and a graph or model that uses it run through every strategy
 * with the generated C compiled, run and verified against the
 * interpreter ("verified yes" once per strategy); the CUDA source of the
 * elementwise ops is checked to call CUDA's own functions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "ops.h"
#include "test_util.h"

#define I64(...) ((const int64_t[]){__VA_ARGS__})
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define SH(...) fl_shape_make(COUNT(I64(__VA_ARGS__)), I64(__VA_ARGS__))

#define TESTDATA "/usr/share/libonnx-testdata/data"

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* json with ' for " (in place). */
static void unquote(char *json)
{
	for (char *c = json; *c; c++)
		if (*c == '\'')
			*c = '"';
}

/* Runs every strategy on the graph (single-quoted JSON) and checks that
 * each verified; the sanitizer pass runs one (the generated code is not
 * sanitized, the plain pass verifies every strategy's). */
static void verifies_every_strategy(const char *name, const char *graph)
{
	char dir[256], cmd[1400], *json = strdup(graph), *out = NULL;
	const char *path;
	int rc;

	assert_non_null(json);
	unquote(json);
	t_make_dir(dir, sizeof dir);
	path = t_write_graph(dir, name, json);
	snprintf(cmd, sizeof cmd, "%s --batch '%s' --run --strategy %s "
		 "--repeat 1 --warmup 0 --workdir '%s'", t_fuselab_bin(),
		 path, T_SANITIZED ? "apollo" : "all", dir);
	rc = t_run(cmd, &out);
	if (rc != 0 ||
	    count(out, "verified yes") != (T_SANITIZED ? 1 : FL_STRATEGY_COUNT))
		fail_msg("%s: rc %d\n%s", name, rc, out);
	free(out);
	free(json);
	t_remove_dir(dir);
}

/* ONNX backend test `test` (node/<name>) imported, interpreted on its
 * first data set and compared with ONNX's outputs, and every strategy's
 * kernels verified on those inputs. */
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
	t_assert_contains(out, ": ok (max abs error");
	if (count(out, "verified yes") != (T_SANITIZED ? 1 : FL_STRATEGY_COUNT))
		fail_msg("%s: not every strategy verified:\n%s", test, out);
	free(out);
}

/* ---- unary elementwise ----------------------------------------------- */

typedef struct unary_case {
	fl_op_kind kind;
	float in[4], want[4];
} unary_case;

static void test_ops_more_unary_values(void **state)
{
	static const unary_case cases[] = {
		{FL_OP_SIN, {0, 0.5f, -1, 3}, {0, 0.479425539f, -0.841470985f,
					      0.141120008f}},
		{FL_OP_COS, {0, 0.5f, -1, 3}, {1, 0.877582562f, 0.540302306f,
					      -0.989992497f}},
		{FL_OP_TAN, {0, 0.5f, -1, 1.5f}, {0, 0.546302490f, -1.557407725f,
						 14.101419947f}},
		{FL_OP_ASIN, {0, 0.5f, -1, 0.25f}, {0, 0.523598776f,
						   -1.570796327f, 0.252680255f}},
		{FL_OP_ACOS, {0, 0.5f, -1, 1}, {1.570796327f, 1.047197551f,
					       3.141592654f, 0}},
		{FL_OP_ATAN, {0, 1, -2, 10}, {0, 0.785398163f, -1.107148718f,
					     1.471127674f}},
		{FL_OP_SINH, {0, 0.5f, -1, 3}, {0, 0.521095305f, -1.175201194f,
					       10.017874927f}},
		{FL_OP_COSH, {0, 0.5f, -1, 3}, {1, 1.127625965f, 1.543080635f,
					       10.067661996f}},
		{FL_OP_ASINH, {0, 0.5f, -1, 3}, {0, 0.481211825f, -0.881373587f,
						1.818446459f}},
		{FL_OP_ACOSH, {1, 1.5f, 2, 10}, {0, 0.962423650f, 1.316957897f,
						2.993222846f}},
		{FL_OP_ATANH, {0, 0.5f, -0.25f, 0.9f}, {0, 0.549306144f,
						       -0.255412812f,
						       1.472219490f}},
		{FL_OP_FLOOR, {2.5f, -1.5f, 0, -0.25f}, {2, -2, 0, -1}},
		{FL_OP_CEIL, {2.5f, -1.5f, 0, -0.25f}, {3, -1, 0, -0.0f}},
		{FL_OP_SIGN, {2.5f, -1.5f, 0, -1e-30f}, {1, -1, 0, -1}},
	};

	(void)state;
	for (int c = 0; c < COUNT(cases); c++) {
		const fl_op_info *info = fl_op_info_of(cases[c].kind);
		fl_op op;
		fl_shape s = SH(2, 2), o;
		fl_buf in = {s, (float *)cases[c].in}, out;
		float got[4];
		fl_error err = {""};

		memset(&op, 0, sizeof op);
		op.name = (char *)"op";
		op.kind = cases[c].kind;
		op.n_in = op.n_out = 1;
		assert_int_equal(info->infer(&op, &s, &o, &err), 0);
		assert_true(fl_shape_equal(&o, &s));
		out = (fl_buf){o, got};
		info->eval(&op, &in, &out);
		for (int i = 0; i < 4; i++)
			if (fabsf(got[i] - cases[c].want[i]) >
			    1e-6f + 1e-6f * fabsf(cases[c].want[i]))
				fail_msg("%s(%g) = %.9g, want %.9g", info->name,
					 cases[c].in[i], got[i],
					 cases[c].want[i]);
	}
}

/* sign keeps a NaN and the sign of a zero */
static void test_ops_more_sign_nan_and_zero(void **state)
{
	const fl_op_info *info = fl_op_info_of(FL_OP_SIGN);
	fl_op op;
	float x[2] = {NAN, -0.0f}, y[2];
	fl_buf in = {SH(2), x}, out = {SH(2), y};

	(void)state;
	memset(&op, 0, sizeof op);
	op.kind = FL_OP_SIGN;
	info->eval(&op, &in, &out);
	assert_true(isnan(y[0]));
	assert_true(y[1] == 0 && signbit(y[1]));
}

/* Every new unary op in one graph, chained so that each inverse gets
 * arguments in its domain, fused and unfused under every strategy. */
static const char unary_graph[] =
	"{'format':'fuselab-graph/1','name':'unary_more','tensors':{"
	"'x':{'shape':[6,37],'role':'input'},"
	"'y':{'shape':[6,37],'role':'output'},"
	"'z':{'shape':[6,37],'role':'output'}},'ops':["
	"{'name':'a','op':'sin','in':['x'],'out':'a'},"
	"{'name':'b','op':'asin','in':['a'],'out':'b'},"
	"{'name':'c','op':'cos','in':['b'],'out':'c'},"
	"{'name':'d','op':'acos','in':['c'],'out':'d'},"
	"{'name':'e','op':'atan','in':['d'],'out':'e'},"
	"{'name':'f','op':'sinh','in':['e'],'out':'f'},"
	"{'name':'g','op':'asinh','in':['f'],'out':'g'},"
	"{'name':'h','op':'cosh','in':['g'],'out':'h'},"
	"{'name':'i','op':'acosh','in':['h'],'out':'i'},"
	"{'name':'j','op':'tanh','in':['i'],'out':'j'},"
	"{'name':'k','op':'atanh','in':['j'],'out':'k'},"
	"{'name':'l','op':'tan','in':['k'],'out':'l'},"
	"{'name':'m','op':'floor','in':['x'],'out':'m'},"
	"{'name':'n','op':'ceil','in':['x'],'out':'n'},"
	"{'name':'o','op':'add','in':['m','n'],'out':'o'},"
	"{'name':'p','op':'sign','in':['x'],'out':'p'},"
	"{'name':'q','op':'add','in':['o','p'],'out':'z'},"
	"{'name':'r','op':'add','in':['l','x'],'out':'y'}]}";

static void test_ops_more_unary_every_strategy(void **state)
{
	(void)state;
	verifies_every_strategy("unary_more", unary_graph);
}

/* The CUDA source calls CUDA's float functions by the templates' names. */
static void test_ops_more_unary_cuda_text(void **state)
{
	static const char *const calls[] = {
		"sinf(", "asinf(", "cosf(", "acosf(", "atanf(", "sinhf(",
		"asinhf(", "coshf(", "acoshf(", "atanhf(", "tanf(", "floorf(",
		"ceilf(", " > 0.0f ? 1.0f : ",
	};
	fl_graph *g;
	fl_session *s;
	char *json = strdup(unary_graph);
	const char *cu;

	(void)state;
	assert_non_null(json);
	unquote(json);
	g = t_load(json);
	s = t_cuda_codegen(g, FL_STRATEGY_UNFUSED, "unary_more");
	cu = fl_engine_source(s);
	for (int k = 0; k < COUNT(calls); k++)
		t_assert_contains(cu, calls[k]);
	fl_engine_close(s);
	fl_graph_free(g);
	free(json);
}

static void test_ops_more_unary_onnx(void **state)
{
	(void)state;
	onnx_test_verifies("test_acosh");
	onnx_test_verifies("test_sign");
}

FL_SUITE(ops_more,
	 cmocka_unit_test(test_ops_more_unary_values),
	 cmocka_unit_test(test_ops_more_sign_nan_and_zero),
	 cmocka_unit_test(test_ops_more_unary_every_strategy),
	 cmocka_unit_test(test_ops_more_unary_cuda_text),
	 cmocka_unit_test(test_ops_more_unary_onnx),
);
