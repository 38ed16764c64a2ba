/* --inputs / --expect: given inputs reach the interpreter and every
 * strategy's kernels; expected outputs are compared at ONNX's tolerances
 * (app/feeds.c, the interpreter's named feeds). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interp.h"
#include "onnx.pb-c.h"
#include "test_util.h"

static const char relu_graph[] =
	"{'format': 'fuselab-graph/1', 'name': 'feeds',"
	" 'tensors': {'x': {'shape': [2, 3], 'role': 'input'},"
	"             'y': {'shape': [2, 3], 'role': 'output'}},"
	" 'ops': [{'name': 'r', 'op': 'relu', 'in': ['x'], 'out': ['y']}]}";

static const float x_vals[6] = {-1.5f, 2, 0.25f, -3, 4, 1e-3f};
static const float y_vals[6] = {0, 2, 0.25f, 0, 4, 1e-3f};

/* Writes a float TensorProto file <dir>/<file>. */
static void write_tensor(const char *dir, const char *file, const char *name,
			 const float *v, int64_t d0, int64_t d1)
{
	Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT;
	int64_t dims[2] = {d0, d1};
	size_t n = (size_t)(d0 * d1), len;
	uint8_t *buf;
	char path[512];
	FILE *f;

	t.has_data_type = 1;
	t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	t.n_dims = 2;
	t.dims = dims;
	t.name = (char *)name;
	t.n_float_data = n;
	t.float_data = (float *)v;
	len = onnx__tensor_proto__get_packed_size(&t);
	buf = malloc(len);
	assert_non_null(buf);
	onnx__tensor_proto__pack(&t, buf);
	snprintf(path, sizeof path, "%s/%s", dir, file);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
}

/* relu_graph as a file in dir (" for '); its path (a static buffer). */
static const char *write_graph(const char *dir)
{
	char text[sizeof relu_graph];

	for (size_t i = 0; i < sizeof relu_graph; i++)
		text[i] = relu_graph[i] == '\'' ? '"' : relu_graph[i];
	return t_write_graph(dir, "g.json", text);
}

static char *make_dir(void)
{
	char *dir = strdup("/tmp/fl-feeds-XXXXXX");

	assert_non_null(dir);
	assert_non_null(mkdtemp(dir));
	return dir;
}

static void remove_dir(char *dir)
{
	char cmd[600];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(dir);
}

static void test_interp_feeds_by_name(void **state)
{
	fl_graph *g = t_load_q(relu_graph);
	fl_feed feed = {"x", {.shape = fl_shape_make(2, (int64_t[]){2, 3}),
			      .data = (float *)x_vals}};
	fl_interp_opts o;
	fl_error err = {""};
	fl_values *v;

	(void)state;
	fl_interp_opts_default(&o);
	o.feeds = &feed;
	o.n_feeds = 1;
	v = fl_interp_run(g, &o, &err);
	assert_non_null(v);
	t_assert_close(v->bufs[fl_graph_find_tensor(g, "y")].data, y_vals, 6,
		       0, 0);
	fl_values_free(v);

	feed.buf.shape = fl_shape_make(2, (int64_t[]){3, 2});
	assert_null(fl_interp_run(g, &o, &err));
	assert_non_null(strstr(err.msg, "input \"x\": given values of shape "
					"[3,2] where the graph's tensor is "
					"[2,3]"));
	fl_graph_free(g);
}

/* Every strategy's kernels verify against the interpreter run on the
 * given inputs, and the interpreter matches the expected outputs. */
static void test_cli_inputs_expect_every_strategy(void **state)
{
	char *dir = make_dir(), args[1200], *out;
	const char *graph;

	(void)state;
	graph = write_graph(dir);
	write_tensor(dir, "input_0.pb", "x", x_vals, 2, 3);
	write_tensor(dir, "output_0.pb", "y", y_vals, 2, 3);
	snprintf(args, sizeof args, "--inputs %s --expect %s --interpret "
		 "--run --strategy all --repeat 1 --warmup 0", dir, dir);
	out = t_fuselab_ok(args, graph);
	assert_non_null(strstr(out, "(inputs from "));
	assert_non_null(strstr(out, "expect y [2,3]: ok"));
	/* relu of the given x sums to 6.251; the generator's
	 * values would not */
	assert_non_null(strstr(out, "sum=6.25"));
	/* and each strategy's outputs match the expected ones */
	assert_non_null(strstr(out, "unfused    vs expected: ok (1 output, "));
	assert_non_null(strstr(out, "apollo     vs expected: ok (1 output, "));
	assert_non_null(strstr(out, "rtol 0.001, atol 1e-05)"));
	free(out);
	remove_dir(dir);
}

static void test_cli_expect_mismatch_and_bad_files(void **state)
{
	char *dir = make_dir(), args[1200], *out = NULL;
	float wrong[6];
	const char *graph;

	(void)state;
	graph = write_graph(dir);
	memcpy(wrong, y_vals, sizeof wrong);
	wrong[4] = 4.01f;	/* outside rtol 1e-3 */
	write_tensor(dir, "input_0.pb", "", x_vals, 2, 3);  /* by position */
	write_tensor(dir, "output_0.pb", "y", wrong, 2, 3);
	snprintf(args, sizeof args, "--batch --inputs %s --expect %s %s", dir,
		 dir, graph);
	assert_int_equal(t_fuselab(args, &out), 1);
	assert_non_null(strstr(out, "expect y [2,3]: MISMATCH in 1 of 6 "
				    "elements; first [1][1]: got 4, want "
				    "4.01"));
	free(out);

	/* with --run the strategies still run, each compared with the
	 * expected outputs; the status is 1 */
	snprintf(args, sizeof args, "--batch --inputs %s --expect %s --run "
		 "--strategy all --repeat 1 --warmup 0 %s", dir, dir, graph);
	assert_int_equal(t_fuselab(args, &out), 1);
	assert_non_null(strstr(out, "expect y [2,3]: MISMATCH in 1 of 6 "));
	assert_non_null(strstr(out, "verified yes"));
	assert_non_null(strstr(out, "xla        vs expected: MISMATCH in 1 of "
				    "1 output (rtol 0.001, atol 1e-05): "
				    "output T"));
	assert_non_null(strstr(out, "\"y\" [2,3]: 1 of 6 elements off; "
				    "worst [1][1]: got 4, want 4.01"));
	assert_non_null(strstr(out, "apollo     vs expected: MISMATCH"));
	free(out);
	snprintf(args, sizeof args, "--batch --inputs %s --expect %s %s", dir,
		 dir, graph);

	write_tensor(dir, "output_0.pb", "y", y_vals, 3, 2);
	assert_int_equal(t_fuselab(args, &out), 2);
	assert_non_null(strstr(out, "output_0.pb: tensor \"y\" has shape "
				    "[3,2] where the graph's is [2,3]"));
	free(out);

	write_tensor(dir, "output_0.pb", "z", y_vals, 2, 3);
	write_tensor(dir, "output_1.pb", "y", y_vals, 2, 3);
	assert_int_equal(t_fuselab(args, &out), 2);
	assert_non_null(strstr(out, "output_1.pb: tensor \"y\" given twice"));
	free(out);

	snprintf(args, sizeof args, "--batch --inputs %s/none %s", dir, graph);
	assert_int_equal(t_fuselab(args, &out), 2);
	assert_non_null(strstr(out, "none: no input_0.pb there"));
	free(out);

	snprintf(args, sizeof args, "--inputs %s %s", dir, graph);
	assert_int_equal(t_fuselab(args, &out), 2);
	assert_non_null(strstr(out, "--inputs needs --batch"));
	free(out);
	remove_dir(dir);
}

/* --expect-atol widens both comparisons' absolute tolerance: the 4.01
 * the test above rejects is within 0.01 + 1e-3 * 4.01 of 4, not within
 * 0.001 + ...; a bad value or no --expect is a usage error. */
static void test_cli_expect_atol(void **state)
{
	char *dir = make_dir(), args[1200], *out = NULL;
	float wrong[6];
	const char *graph;

	(void)state;
	graph = write_graph(dir);
	memcpy(wrong, y_vals, sizeof wrong);
	wrong[4] = 4.01f;
	write_tensor(dir, "input_0.pb", "x", x_vals, 2, 3);
	write_tensor(dir, "output_0.pb", "y", wrong, 2, 3);
	snprintf(args, sizeof args, "--batch --inputs %s --expect %s "
		 "--expect-atol 0.01 --run --strategy xla --repeat 1 "
		 "--warmup 0 %s", dir, dir, graph);
	assert_int_equal(t_fuselab(args, &out), 0);
	assert_non_null(strstr(out, "expect y [2,3]: ok (max abs error 0.01; "
				    "rtol 0.001, atol 0.01)"));
	assert_non_null(strstr(out, "xla        vs expected: ok (1 output, "));
	assert_non_null(strstr(out, "rtol 0.001, atol 0.01)"));
	free(out);

	snprintf(args, sizeof args, "--batch --inputs %s --expect %s "
		 "--expect-atol 0.001 %s", dir, dir, graph);
	assert_int_equal(t_fuselab(args, &out), 1);
	assert_non_null(strstr(out, "MISMATCH in 1 of 6 elements"));
	assert_non_null(strstr(out, "(rtol 0.001, atol 0.001)"));
	free(out);

	snprintf(args, sizeof args, "--batch --inputs %s --expect %s "
		 "--expect-atol -1 %s", dir, dir, graph);
	assert_int_equal(t_fuselab(args, &out), 2);
	assert_non_null(strstr(out, "--expect-atol: expected a tolerance >= 0, "
				    "got \"-1\""));
	free(out);

	snprintf(args, sizeof args, "--batch --expect-atol 0.1 %s", graph);
	assert_int_equal(t_fuselab(args, &out), 2);
	assert_non_null(strstr(out, "--expect-atol needs --expect DIR"));
	free(out);
	remove_dir(dir);
}

FL_SUITE(feeds,
	 cmocka_unit_test(test_interp_feeds_by_name),
	 cmocka_unit_test(test_cli_inputs_expect_every_strategy),
	 cmocka_unit_test(test_cli_expect_mismatch_and_bad_files),
	 cmocka_unit_test(test_cli_expect_atol));
