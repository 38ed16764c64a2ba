/* The reference interpreter: deterministic inputs, correct evaluation
 * order, memory limit, checksums. */
#include <math.h>
#include <string.h>

#include "interp.h"
#include "rng.h"
#include "test_util.h"

#define G2 "{\"format\":\"fuselab-graph/1\",\"name\":\"t\",\"tensors\":{" \
	"\"x\":{\"shape\":[2,3],\"role\":\"input\"}," \
	"\"w\":{\"shape\":[3],\"role\":\"const\",\"data\":[1,2,3]}," \
	"\"y\":{\"shape\":[2,3],\"role\":\"output\"}}," \
	"\"ops\":[{\"name\":\"r\",\"op\":\"relu\",\"in\":[\"h\"],\"out\":\"y\"}," \
	"{\"name\":\"m\",\"op\":\"mul\",\"in\":[\"x\",\"w\"],\"out\":\"h\"}]}"

static void test_rng_is_stable(void **state)
{
	fl_rng r = fl_rng_seed(42, "x");

	(void)state;
	/* Golden values: these must be the same on every machine. */
	assert_true(fl_rng_next(&r) == 0x3c7178b9b73fc2fbull);
	r = fl_rng_seed(42, "x");
	assert_true(fl_rng_uniform(&r) == -0.527787209f);
	assert_true(fl_rng_uniform(&r) == -0.840942025f);
	for (int i = 0; i < 10000; i++) {
		float f = fl_rng_uniform(&r);

		assert_true(f >= -1.0f && f < 1.0f);
	}
}

static void test_evaluates_in_order(void **state)
{
	fl_graph *g = t_load(G2);
	fl_values *v = fl_interp_run(g, NULL, NULL);
	int x = fl_graph_find_tensor(g, "x"), y = fl_graph_find_tensor(g, "y");
	float want[6];

	(void)state;
	assert_non_null(v);
	for (int i = 0; i < 6; i++) {
		float p = v->bufs[x].data[i] * (float)(i % 3 + 1);

		want[i] = p > 0 ? p : 0;
	}
	t_assert_close(v->bufs[y].data, want, 6, 0, 0);
	assert_int_equal(v->n_ops, 2);
	fl_values_free(v);
	fl_graph_free(g);
}

static void test_seed_determinism(void **state)
{
	fl_graph *g = t_load(G2);
	fl_interp_opts o;
	fl_values *a, *b, *c;
	int y = fl_graph_find_tensor(g, "y");

	(void)state;
	fl_interp_opts_default(&o);
	a = fl_interp_run(g, &o, NULL);
	b = fl_interp_run(g, &o, NULL);
	o.seed = 7;
	c = fl_interp_run(g, &o, NULL);
	assert_true(fl_buf_checksum(&a->bufs[y]).hash ==
		    fl_buf_checksum(&b->bufs[y]).hash);
	assert_memory_equal(a->bufs[y].data, b->bufs[y].data, 6 * sizeof(float));
	assert_true(fl_buf_checksum(&a->bufs[y]).hash !=
		    fl_buf_checksum(&c->bufs[y]).hash);
	fl_values_free(a);
	fl_values_free(b);
	fl_values_free(c);
	fl_graph_free(g);
}

static void test_gather_indices_in_range(void **state)
{
	fl_graph *g = t_load("{\"format\":\"fuselab-graph/1\",\"tensors\":{"
		"\"table\":{\"shape\":[5,4],\"role\":\"param\"},"
		"\"ids\":{\"shape\":[100],\"role\":\"input\"},"
		"\"y\":{\"shape\":[100,4],\"role\":\"output\"}},"
		"\"ops\":[{\"name\":\"g\",\"op\":\"gather\","
		"\"in\":[\"table\",\"ids\"],\"out\":\"y\"}]}");
	fl_values *v = fl_interp_run(g, NULL, NULL);
	int ids = fl_graph_find_tensor(g, "ids");
	bool seen[5] = {false};

	(void)state;
	for (int i = 0; i < 100; i++) {
		float f = v->bufs[ids].data[i];

		assert_true(f >= 0 && f < 5 && f == floorf(f));
		seen[(int)f] = true;
	}
	for (int k = 0; k < 5; k++)
		assert_true(seen[k]);
	fl_values_free(v);
	fl_graph_free(g);
}

static void test_memory_limit(void **state)
{
	fl_graph *g = t_load("{\"format\":\"fuselab-graph/1\",\"tensors\":{"
		"\"x\":{\"shape\":[1000000000,1000],\"role\":\"input\"},"
		"\"y\":{\"shape\":[1000000000,1000],\"role\":\"output\"}},"
		"\"ops\":[{\"name\":\"r\",\"op\":\"relu\",\"in\":[\"x\"],\"out\":\"y\"}]}");
	fl_error err = {""};
	fl_values *v = fl_interp_run(g, NULL, &err);

	(void)state;
	assert_null(v);
	assert_non_null(strstr(err.msg, "TiB), more than the interpreter's limit"));
	fl_graph_free(g);
}

static void test_checksum(void **state)
{
	float d[4] = {1, -2, 3, NAN};
	int64_t dims[1] = {4};
	fl_buf b = {.shape = fl_shape_make(1, dims), .data = d};
	fl_checksum c = fl_buf_checksum(&b);

	(void)state;
	assert_true(c.sum == 2.0);
	assert_true(c.abs_sum == 6.0);
	assert_int_equal(c.n_nan, 1);
}

FL_SUITE(interp,
	 cmocka_unit_test(test_rng_is_stable),
	 cmocka_unit_test(test_evaluates_in_order),
	 cmocka_unit_test(test_seed_determinism),
	 cmocka_unit_test(test_gather_indices_in_range),
	 cmocka_unit_test(test_memory_limit),
	 cmocka_unit_test(test_checksum));
