/* Loader tests: a good graph loads with the right structure, and each class
 * of bad input is refused with a message naming the JSON path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"
#include "test_util.h"

/* A small valid graph; the bad-input tests below each break one thing. */
#define HEAD "{\"format\":\"fuselab-graph/1\",\"name\":\"t\","
#define XY "\"tensors\":{\"x\":{\"shape\":[2,3],\"role\":\"input\"}," \
	   "\"b\":{\"shape\":[3],\"role\":\"param\"}," \
	   "\"y\":{\"shape\":[2,3],\"role\":\"output\"}},"

static void test_loads_and_sorts(void **state)
{
	/* ops given out of order: the loader sorts them topologically */
	fl_graph *g = t_load(HEAD XY "\"ops\":["
		"{\"name\":\"r\",\"op\":\"relu\",\"in\":[\"h\"],\"out\":\"y\"},"
		"{\"name\":\"a\",\"op\":\"add\",\"in\":[\"x\",\"b\"],\"out\":\"h\"}]}");
	int h;

	(void)state;
	assert_int_equal(g->n_ops, 2);
	assert_string_equal(g->ops[0].name, "a");
	assert_string_equal(g->ops[1].name, "r");
	h = fl_graph_find_tensor(g, "h");
	assert_true(h >= 0);
	assert_int_equal(g->tensors[h].role, FL_ROLE_TEMP);
	assert_int_equal(g->tensors[h].shape.rank, 2);
	assert_int_equal(g->tensors[h].shape.dim[1], 3);
	assert_int_equal(g->tensors[h].producer, 0);
	assert_string_equal(g->name, "t");
	fl_graph_free(g);
}

static void test_const_values(void **state)
{
	fl_graph *g = t_load(HEAD "\"tensors\":{"
		"\"x\":{\"shape\":[2,2],\"role\":\"input\"},"
		"\"w\":{\"shape\":[2,2],\"role\":\"const\",\"data\":[[1,2],[3,4]]},"
		"\"s\":{\"shape\":[],\"role\":\"const\",\"value\":0.5},"
		"\"y\":{\"shape\":[2,2],\"role\":\"output\"}},"
		"\"ops\":[{\"name\":\"m\",\"op\":\"mul\",\"in\":[\"x\",\"w\"],\"out\":\"t\"},"
		"{\"name\":\"n\",\"op\":\"mul\",\"in\":[\"t\",\"s\"],\"out\":\"y\"}]}");
	int w = fl_graph_find_tensor(g, "w"), s = fl_graph_find_tensor(g, "s");

	(void)state;
	assert_int_equal(g->tensors[w].n_data, 4);
	assert_true(g->tensors[w].data[3] == 4.0f);
	assert_int_equal(g->tensors[s].n_data, 1);
	assert_int_equal(g->tensors[s].shape.rank, 0);
	fl_graph_free(g);
}

static void test_attrs_parsed(void **state)
{
	fl_graph *g = t_load(HEAD "\"tensors\":{"
		"\"x\":{\"shape\":[2,3],\"role\":\"input\"},"
		"\"y\":{\"shape\":[3,2],\"role\":\"output\"}},"
		"\"ops\":[{\"name\":\"t\",\"op\":\"transpose\",\"in\":[\"x\"],"
		"\"out\":\"y\",\"attrs\":{\"perm\":[1,0]}}]}");
	const fl_attr *a = fl_attrs_find(&g->ops[0].attrs, "perm");

	(void)state;
	assert_non_null(a);
	assert_int_equal(a->kind, FL_ATTR_LIST);
	assert_int_equal(a->n, 2);
	fl_graph_free(g);
}

static void test_malformed_json(void **state)
{
	(void)state;
	t_load_fails("{\"format\":\"fuselab-graph/1\",\n \"tensors\": {,}}",
		     "test: line 2, column 1");
	t_load_fails("", "malformed JSON");
	t_load_fails("[1,2]", "expected a JSON object");
}

static void test_missing_fields(void **state)
{
	(void)state;
	t_load_fails("{\"name\":\"x\"}", "test: format: missing");
	t_load_fails("{\"format\":\"other/2\"}", "format: expected");
	t_load_fails(HEAD "\"ops\":[]}", "tensors: missing");
	t_load_fails(HEAD XY "\"x\":1}", "test: x: unknown field");
	t_load_fails(HEAD XY "\"ops\":[]}", "ops: the graph has no ops");
	t_load_fails(HEAD "\"tensors\":{\"x\":{\"role\":\"input\"}},\"ops\":[]}",
		     "tensors.x.shape: missing");
	t_load_fails(HEAD XY "\"ops\":[{\"name\":\"a\",\"in\":[\"x\"],"
		     "\"out\":\"y\"}]}", "ops[0].op: missing");
	t_load_fails(HEAD XY "\"ops\":[{\"name\":\"a\",\"op\":\"relu\","
		     "\"out\":\"y\"}]}", "ops[0].in: missing");
	t_load_fails(HEAD XY "\"ops\":[{\"name\":\"a\",\"op\":\"relu\","
		     "\"in\":[\"x\"]}]}", "ops[0].out: missing");
	t_load_fails(HEAD XY "\"ops\":[{\"op\":\"relu\",\"in\":[\"x\"],"
		     "\"out\":\"y\"}]}", "ops[0].name: missing");
	t_load_fails(HEAD XY "\"ops\":[{\"name\":\"a\",\"op\":\"relu\","
		     "\"in\":[\"x\"],\"out\":\"y\",\"atrs\":{}}]}",
		     "ops[0].atrs: unknown field");
}

static void test_unknown_op(void **state)
{
	(void)state;
	t_load_fails(HEAD XY "\"ops\":[{\"name\":\"a\",\"op\":\"softmaxx\","
		     "\"in\":[\"x\"],\"out\":\"y\"}]}",
		     "test: ops[0].op: unknown op \"softmaxx\"");
}

static void test_wrong_arity(void **state)
{
	(void)state;
	t_load_fails(HEAD XY "\"ops\":[{\"name\":\"a\",\"op\":\"add\","
		     "\"in\":[\"x\"],\"out\":\"y\"}]}",
		     "ops[0].in: add takes 2 inputs, got 1");
	t_load_fails(HEAD XY "\"ops\":[{\"name\":\"a\",\"op\":\"relu\","
		     "\"in\":[\"x\",\"b\"],\"out\":\"y\"}]}",
		     "ops[0].in: relu takes 1 input, got 2");
	t_load_fails(HEAD XY "\"ops\":[{\"name\":\"a\",\"op\":\"relu\","
		     "\"in\":[\"x\"],\"out\":[\"y\",\"z\"]}]}",
		     "ops[0].out: relu writes 1 tensor, got 2");
}

static void test_unknown_names(void **state)
{
	(void)state;
	t_load_fails(HEAD XY "\"ops\":[{\"name\":\"a\",\"op\":\"add\","
		     "\"in\":[\"x\",\"h2\"],\"out\":\"y\"}]}",
		     "test: ops[0].in[1]: unknown tensor \"h2\"");
	t_load_fails(HEAD XY "\"ops\":[{\"name\":\"a\",\"op\":\"relu\","
		     "\"in\":[\"x\"],\"out\":\"h\"},{\"name\":\"b\",\"op\":\"relu\","
		     "\"in\":[\"x\"],\"out\":\"y\"},{\"name\":\"c\",\"op\":\"relu\","
		     "\"in\":[\"q\"],\"out\":\"z\"}]}",
		     "ops[2].in[0]: unknown tensor \"q\"");
}

static void test_duplicate_names(void **state)
{
	(void)state;
	t_load_fails(HEAD XY "\"ops\":[{\"name\":\"a\",\"op\":\"relu\","
		     "\"in\":[\"x\"],\"out\":\"h\"},{\"name\":\"a\",\"op\":\"relu\","
		     "\"in\":[\"h\"],\"out\":\"y\"}]}",
		     "ops[1].name: duplicate op name \"a\"");
	t_load_fails(HEAD "\"tensors\":{\"x\":{\"shape\":[1],\"role\":\"input\"},"
		     "\"x\":{\"shape\":[1],\"role\":\"output\"}},\"ops\":[]}",
		     "tensors.x: tensor declared twice");
}

static void test_shape_mismatch(void **state)
{
	(void)state;
	/* y is declared [2,3] but the transpose makes [3,2] */
	t_load_fails(HEAD XY "\"ops\":[{\"name\":\"t\",\"op\":\"transpose\","
		     "\"in\":[\"x\"],\"out\":\"y\",\"attrs\":{\"perm\":[1,0]}}]}",
		     "ops[0].out: tensor \"y\" is declared [2,3] but transpose "
		     "computes [3,2]");
}

static void test_broadcast_error(void **state)
{
	(void)state;
	t_load_fails(HEAD "\"tensors\":{\"x\":{\"shape\":[2,3],\"role\":\"input\"},"
		     "\"b\":{\"shape\":[4],\"role\":\"param\"},"
		     "\"y\":{\"shape\":[2,3],\"role\":\"output\"}},"
		     "\"ops\":[{\"name\":\"a\",\"op\":\"add\",\"in\":[\"x\",\"b\"],"
		     "\"out\":\"y\"}]}",
		     "ops[0].");
	t_load_fails(HEAD "\"tensors\":{\"x\":{\"shape\":[2,3],\"role\":\"input\"},"
		     "\"b\":{\"shape\":[4],\"role\":\"param\"},"
		     "\"y\":{\"shape\":[2,3],\"role\":\"output\"}},"
		     "\"ops\":[{\"name\":\"a\",\"op\":\"add\",\"in\":[\"x\",\"b\"],"
		     "\"out\":\"y\"}]}",
		     "do not broadcast");
}

static void test_bad_attrs(void **state)
{
	(void)state;
	t_load_fails(HEAD XY "\"ops\":[{\"name\":\"a\",\"op\":\"relu\","
		     "\"in\":[\"x\"],\"out\":\"y\",\"attrs\":{\"axis\":1}}]}",
		     "ops[0].attrs.axis: unknown attribute");
	t_load_fails(HEAD XY "\"ops\":[{\"name\":\"a\",\"op\":\"softmax\","
		     "\"in\":[\"x\"],\"out\":\"y\",\"attrs\":{\"axis\":\"last\"}}]}",
		     "ops[0].attrs.axis: expected an integer");
	t_load_fails(HEAD XY "\"ops\":[{\"name\":\"a\",\"op\":\"softmax\","
		     "\"in\":[\"x\"],\"out\":\"y\",\"attrs\":{\"axis\":{}}}]}",
		     "ops[0].attrs.axis: expected a number, a bool, a string or "
		     "a list");
	t_load_fails(HEAD XY "\"ops\":[{\"name\":\"a\",\"op\":\"transpose\","
		     "\"in\":[\"x\"],\"out\":\"y\"}]}",
		     "ops[0].attrs.perm");
}

/* gelu's form: "approximate" as ONNX and PyTorch spell it ("none" |
 * "tanh"), or the older alias "approx" ("erf" | "tanh"). */
static fl_graph *gelu_graph(const char *attrs)
{
	char json[1024];

	snprintf(json, sizeof json, HEAD XY "\"ops\":[{\"name\":\"ge\","
		 "\"op\":\"gelu\",\"in\":[\"x\"],\"out\":\"y\"%s%s%s}]}",
		 attrs ? ",\"attrs\":{" : "", attrs ? attrs : "",
		 attrs ? "}" : "");
	return t_load(json);
}

/* "tanh" or "erf": the form gelu opens into. */
static const char *gelu_form(const char *attrs)
{
	fl_graph *g = gelu_graph(attrs), *e;
	fl_error err = {""};
	const char *form;

	e = fl_graph_expand_compounds(g, &err);
	if (!e)
		fail_msg("%s: %s", attrs ? attrs : "no attrs", err.msg);
	form = fl_graph_find_op(e, "ge.tanh") >= 0 ? "tanh"
	       : fl_graph_find_op(e, "ge.erf") >= 0 ? "erf" : "?";
	fl_graph_free(e);
	fl_graph_free(g);
	return form;
}

static void test_gelu_approximate(void **state)
{
	char json[1024];

	(void)state;
	assert_string_equal(gelu_form(NULL), "erf");
	assert_string_equal(gelu_form("\"approximate\":\"none\""), "erf");
	assert_string_equal(gelu_form("\"approximate\":\"tanh\""), "tanh");
	assert_string_equal(gelu_form("\"approx\":\"erf\""), "erf");
	assert_string_equal(gelu_form("\"approx\":\"tanh\""), "tanh");
	assert_string_equal(gelu_form("\"approx\":\"none\""), "erf");
	/* bad values name the key the file used */
	snprintf(json, sizeof json, HEAD XY "\"ops\":[{\"name\":\"ge\","
		 "\"op\":\"gelu\",\"in\":[\"x\"],\"out\":\"y\","
		 "\"attrs\":{\"approximate\":\"fast\"}}]}");
	t_load_fails(json, "ops[0]");
	t_load_fails(json, "attrs.approximate: expected \"none\" or \"tanh\" "
		     "(\"erf\" = \"none\"), got \"fast\"");
	snprintf(json, sizeof json, HEAD XY "\"ops\":[{\"name\":\"ge\","
		 "\"op\":\"gelu\",\"in\":[\"x\"],\"out\":\"y\","
		 "\"attrs\":{\"approx\":\"Tanh\"}}]}");
	t_load_fails(json, "attrs.approx: expected \"none\" or \"tanh\" "
		     "(\"erf\" = \"none\"), got \"Tanh\"");
	snprintf(json, sizeof json, HEAD XY "\"ops\":[{\"name\":\"ge\","
		 "\"op\":\"gelu\",\"in\":[\"x\"],\"out\":\"y\","
		 "\"attrs\":{\"approximate\":1}}]}");
	t_load_fails(json, "attrs.approximate: expected a string");
	snprintf(json, sizeof json, HEAD XY "\"ops\":[{\"name\":\"ge\","
		 "\"op\":\"gelu\",\"in\":[\"x\"],\"out\":\"y\","
		 "\"attrs\":{\"approximate\":\"tanh\",\"approx\":\"tanh\"}}]}");
	t_load_fails(json, "attrs.approx: an alias of \"approximate\", which "
		     "is given too");
}

static void test_cycle(void **state)
{
	(void)state;
	t_load_fails(HEAD XY "\"ops\":["
		     "{\"name\":\"a\",\"op\":\"add\",\"in\":[\"x\",\"c\"],\"out\":\"h\"},"
		     "{\"name\":\"b\",\"op\":\"relu\",\"in\":[\"h\"],\"out\":\"c\"},"
		     "{\"name\":\"d\",\"op\":\"relu\",\"in\":[\"h\"],\"out\":\"y\"}]}",
		     "the graph has a cycle through op");
	/* an op reading its own output is the smallest cycle */
	t_load_fails(HEAD XY "\"ops\":["
		     "{\"name\":\"a\",\"op\":\"add\",\"in\":[\"x\",\"y\"],\"out\":\"y\"}]}",
		     "cycle through op \"a\"");
}

static void test_written_twice(void **state)
{
	(void)state;
	t_load_fails(HEAD XY "\"ops\":["
		     "{\"name\":\"a\",\"op\":\"relu\",\"in\":[\"x\"],\"out\":\"y\"},"
		     "{\"name\":\"b\",\"op\":\"neg\",\"in\":[\"x\"],\"out\":\"y\"}]}",
		     "ops[1].out: tensor \"y\" is written twice (already by op \"a\")");
	t_load_fails(HEAD XY "\"ops\":["
		     "{\"name\":\"a\",\"op\":\"relu\",\"in\":[\"b\"],\"out\":\"x\"},"
		     "{\"name\":\"b\",\"op\":\"neg\",\"in\":[\"x\"],\"out\":\"y\"}]}",
		     "ops[0].out: tensor \"x\" is an input and cannot be written");
}

static void test_bad_dims(void **state)
{
	(void)state;
	t_load_fails(HEAD "\"tensors\":{\"x\":{\"shape\":[2,0],\"role\":\"input\"}},"
		     "\"ops\":[]}",
		     "tensors.x.shape[1]: dimension must be >= 1, got 0");
	t_load_fails(HEAD "\"tensors\":{\"x\":{\"shape\":[-3],\"role\":\"input\"}},"
		     "\"ops\":[]}",
		     "tensors.x.shape[0]: dimension must be >= 1, got -3");
	t_load_fails(HEAD "\"tensors\":{\"x\":{\"shape\":[2.5],\"role\":\"input\"}},"
		     "\"ops\":[]}",
		     "tensors.x.shape[0]: expected an integer");
}

static void test_overflow(void **state)
{
	(void)state;
	t_load_fails(HEAD "\"tensors\":{\"x\":{\"shape\":[4294967296,4294967296],"
		     "\"role\":\"input\"}},\"ops\":[]}",
		     "tensors.x.shape: element count overflows 64 bits");
	/* inference that overflows: broadcast of two huge shapes */
	t_load_fails(HEAD "\"tensors\":{\"a\":{\"shape\":[4294967296,1],"
		     "\"role\":\"input\"},\"b\":{\"shape\":[4294967296],"
		     "\"role\":\"input\"}},\"ops\":[{\"name\":\"m\",\"op\":\"mul\","
		     "\"in\":[\"a\",\"b\"],\"out\":\"y\"}]}",
		     "ops[0].");
}

static void test_roles_and_consts(void **state)
{
	(void)state;
	t_load_fails(HEAD "\"tensors\":{\"x\":{\"shape\":[1],\"role\":\"inputt\"}},"
		     "\"ops\":[]}", "tensors.x.role: expected");
	t_load_fails(HEAD "\"tensors\":{\"x\":{\"shape\":[2],\"role\":\"const\","
		     "\"data\":[1,2,3]}},\"ops\":[]}",
		     "tensors.x.data: 3 values for shape with 2 elements");
	t_load_fails(HEAD "\"tensors\":{\"x\":{\"shape\":[2],\"role\":\"const\"}},"
		     "\"ops\":[]}", "tensors.x: a const needs exactly one of");
	t_load_fails(HEAD "\"tensors\":{\"x\":{\"shape\":[2],\"role\":\"input\","
		     "\"value\":1}},\"ops\":[]}",
		     "tensors.x.value: only const tensors carry values");
	t_load_fails(HEAD "\"tensors\":{\"x\":{\"shape\":[2],\"dtype\":\"f64\","
		     "\"role\":\"input\"}},\"ops\":[]}",
		     "tensors.x.dtype: expected one of \"f32\", \"bool\"");
	t_load_fails(HEAD "\"tensors\":{\"x\":{\"shape\":[2],\"role\":\"input\"},"
		     "\"y\":{\"shape\":[2],\"role\":\"output\"}},\"ops\":["
		     "{\"name\":\"a\",\"op\":\"relu\",\"in\":[\"x\"],\"out\":\"h\"}]}",
		     "tensors.y: output is never written by any op");
	t_load_fails(HEAD "\"tensors\":{\"x\":{\"shape\":[2]},"
		     "\"y\":{\"shape\":[2],\"role\":\"output\"}},\"ops\":["
		     "{\"name\":\"a\",\"op\":\"relu\",\"in\":[\"x\"],\"out\":\"y\"}]}",
		     "ops[0].in[0]: tensor \"x\" is never written by any op");
}

static void test_file_errors(void **state)
{
	fl_error err = {""};
	fl_graph *g;
	char path[] = "/tmp/fuselab-test-XXXXXX";
	FILE *f;
	int fd;

	(void)state;
	g = fl_load_graph_file("/nonexistent/x.json", &err);
	assert_null(g);
	assert_non_null(strstr(err.msg, "/nonexistent/x.json: cannot open"));
	g = fl_load_graph_file("/tmp", &err);
	assert_null(g);
	assert_non_null(strstr(err.msg, "not a regular file"));
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs("{\"format\":\"fuselab-graph/1\",\"tensors\":{},\"ops\":[{}]}", f);
	fclose(f);
	g = fl_load_graph_file(path, &err);
	remove(path);
	assert_null(g);
	/* the file name leads the message */
	assert_int_equal(strncmp(err.msg, path, strlen(path)), 0);
}

FL_SUITE(loader,
	 cmocka_unit_test(test_loads_and_sorts),
	 cmocka_unit_test(test_const_values),
	 cmocka_unit_test(test_attrs_parsed),
	 cmocka_unit_test(test_malformed_json),
	 cmocka_unit_test(test_missing_fields),
	 cmocka_unit_test(test_unknown_op),
	 cmocka_unit_test(test_wrong_arity),
	 cmocka_unit_test(test_unknown_names),
	 cmocka_unit_test(test_duplicate_names),
	 cmocka_unit_test(test_shape_mismatch),
	 cmocka_unit_test(test_broadcast_error),
	 cmocka_unit_test(test_bad_attrs),
	 cmocka_unit_test(test_gelu_approximate),
	 cmocka_unit_test(test_cycle),
	 cmocka_unit_test(test_written_twice),
	 cmocka_unit_test(test_bad_dims),
	 cmocka_unit_test(test_overflow),
	 cmocka_unit_test(test_roles_and_consts),
	 cmocka_unit_test(test_file_errors));
