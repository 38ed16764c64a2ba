/* Shapes: element counts with overflow, broadcasting, index helpers. */
#include <string.h>

#include "shape.h"
#include "test_util.h"

static fl_shape S(int rank, int64_t a, int64_t b, int64_t c)
{
	int64_t d[3] = {a, b, c};

	return fl_shape_make(rank, d);
}

static void test_numel(void **state)
{
	fl_shape s = S(3, 2, 3, 4), big = S(2, (int64_t)1 << 32, (int64_t)1 << 32, 0);
	fl_shape sc = fl_shape_scalar();

	(void)state;
	assert_int_equal(fl_shape_numel(&s), 24);
	assert_int_equal(fl_shape_numel(&sc), 1);
	assert_int_equal(fl_shape_numel(&big), -1);
}

static void test_broadcast_rules(void **state)
{
	fl_shape a = S(2, 4, 1, 0), b = S(1, 3, 0, 0), r;
	fl_shape c = S(2, 4, 2, 0);
	fl_error err = {""};
	char buf[64];

	(void)state;
	assert_int_equal(fl_shape_broadcast(&a, &b, &r, &err), 0);
	assert_string_equal(fl_shape_format(&r, buf, sizeof buf), "[4,3]");
	assert_int_equal(fl_shape_broadcast(&c, &b, &r, &err), -1);
	assert_string_equal(err.msg,
			    "shapes [4,2] and [3] do not broadcast (dim 1: 2 vs 3)");
	assert_true(fl_shape_broadcasts_to(&b, &r) == false ||
		    fl_shape_equal(&r, &r));
	r = S(2, 4, 3, 0);
	assert_true(fl_shape_broadcasts_to(&b, &r));
	assert_false(fl_shape_broadcasts_to(&r, &b));
}

static void test_axis_and_offsets(void **state)
{
	fl_shape to = S(3, 2, 3, 4), from = S(2, 3, 1, 0);
	int64_t idx[3] = {1, 2, 3}, st[3];
	int n = 1;

	(void)state;
	assert_int_equal(fl_axis_normalize(-1, 3), 2);
	assert_int_equal(fl_axis_normalize(3, 3), -1);
	assert_int_equal(fl_axis_normalize(-4, 3), -1);
	fl_shape_strides(&to, st);
	assert_int_equal(st[0], 12);
	assert_int_equal(st[2], 1);
	/* from [3,1] against [2,3,4]: index (1,2,3) reads element (2,0) */
	assert_int_equal(fl_broadcast_offset(&from, &to, idx), 2);
	memset(idx, 0, sizeof idx);
	while (fl_index_next(&to, idx))
		n++;
	assert_int_equal(n, 24);
}

static void test_error_prefix(void **state)
{
	fl_error e;

	(void)state;
	fl_error_set(&e, "unknown tensor \"%s\"", "h2");
	fl_error_prefix(&e, "in[%d]", 1);
	fl_error_prefix(&e, "ops[%d].", 3);
	fl_error_prefix(&e, "%s", "x.json");
	assert_string_equal(e.msg, "x.json: ops[3].in[1]: unknown tensor \"h2\"");
}

FL_SUITE(shape,
	 cmocka_unit_test(test_numel),
	 cmocka_unit_test(test_broadcast_rules),
	 cmocka_unit_test(test_axis_and_offsets),
	 cmocka_unit_test(test_error_prefix));
