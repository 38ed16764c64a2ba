/* TensorProto decoding: the backend tests' .pb files, every field kind,
 * and the claims a broken file makes (onnx_tensor.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx_tensor.h"
#include "test_util.h"

#define TESTDATA "/usr/share/libonnx-testdata/data"

/* A tensor of `dtype` with dims [n]; the caller fills a data field. */
static Onnx__TensorProto vector_tensor(int dtype, int64_t *dims, int rank)
{
	Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT;

	t.has_data_type = 1;
	t.data_type = dtype;
	t.n_dims = (size_t)rank;
	t.dims = dims;
	return t;
}

static void test_onnx_tensor_reads_backend_test_file(void **state)
{
	fl_onnx_values v;
	fl_error err = {{0}};
	char *name;

	(void)state;
	assert_int_equal(fl_onnx_read_tensor_file(
		TESTDATA "/node/test_abs/test_data_set_0/input_0.pb", &v,
		&name, &err), 0);
	assert_string_equal(name, "x");
	assert_int_equal(v.dtype, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
	assert_int_equal(v.shape.rank, 3);
	assert_int_equal(v.shape.dim[0] * v.shape.dim[1] * v.shape.dim[2],
			 v.n);
	assert_int_equal(v.n, 60);
	assert_null(v.i);
	assert_true(isfinite(v.f[0]) && isfinite(v.f[59]));
	free(name);
	fl_onnx_values_free(&v);
}

static void test_onnx_tensor_typed_fields(void **state)
{
	int64_t dims[] = {3};
	int32_t halves[] = {0x3c00, 0xc000, 0x7c00};	/* 1, -2, inf */
	int64_t longs[] = {-5, 0, 1LL << 40};
	int32_t bools[] = {0, 1, 7};
	Onnx__TensorProto t;
	fl_onnx_values v;
	fl_error err = {{0}};

	(void)state;
	t = vector_tensor(ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, dims, 1);
	t.n_int32_data = 3;
	t.int32_data = halves;
	assert_int_equal(fl_onnx_tensor_values(&t, NULL, &v, &err), 0);
	assert_true(v.f[0] == 1.0f && v.f[1] == -2.0f && isinf(v.f[2]));
	fl_onnx_values_free(&v);

	t = vector_tensor(ONNX__TENSOR_PROTO__DATA_TYPE__INT64, dims, 1);
	t.n_int64_data = 3;
	t.int64_data = longs;
	assert_int_equal(fl_onnx_tensor_values(&t, NULL, &v, &err), 0);
	assert_true(v.i[0] == -5 && v.i[2] == 1LL << 40);
	assert_true(v.f[0] == -5.0f);
	fl_onnx_values_free(&v);

	t = vector_tensor(ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, dims, 1);
	t.n_int32_data = 3;
	t.int32_data = bools;
	assert_int_equal(fl_onnx_tensor_values(&t, NULL, &v, &err), 0);
	assert_true(v.i[0] == 0 && v.i[1] == 1 && v.i[2] == 1);
	fl_onnx_values_free(&v);
}

static void test_onnx_tensor_raw_little_endian(void **state)
{
	int64_t dims[] = {2};
	uint8_t raw[] = {0xfe, 0xff, 0xff, 0xff, 0x05, 0x00, 0x00, 0x00};
	Onnx__TensorProto t =
		vector_tensor(ONNX__TENSOR_PROTO__DATA_TYPE__INT32, dims, 1);
	fl_onnx_values v;
	fl_error err = {{0}};

	(void)state;
	t.has_raw_data = 1;
	t.raw_data.len = sizeof raw;
	t.raw_data.data = raw;
	assert_int_equal(fl_onnx_tensor_values(&t, NULL, &v, &err), 0);
	assert_true(v.i[0] == -2 && v.i[1] == 5);
	fl_onnx_values_free(&v);

	t.raw_data.len = 7;
	assert_int_equal(fl_onnx_tensor_values(&t, NULL, &v, &err), -1);
	assert_non_null(strstr(err.msg, "7 bytes of data where 2 int32"));
}

static void test_onnx_tensor_rejects_bad_claims(void **state)
{
	int64_t huge[] = {1000000, 1000000};
	int64_t neg[] = {-1};
	int64_t three[] = {3};
	float one = 1;
	Onnx__TensorProto t =
		vector_tensor(ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, huge, 2);
	fl_onnx_values v;
	fl_error err = {{0}};

	(void)state;
	assert_int_equal(fl_onnx_tensor_values(&t, NULL, &v, &err), -1);
	assert_non_null(strstr(err.msg, "dims claim more than"));

	t = vector_tensor(ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, neg, 1);
	assert_int_equal(fl_onnx_tensor_values(&t, NULL, &v, &err), -1);
	assert_non_null(strstr(err.msg, "dims[0] is -1"));

	t = vector_tensor(ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, three, 1);
	t.n_float_data = 1;
	t.float_data = &one;
	assert_int_equal(fl_onnx_tensor_values(&t, NULL, &v, &err), -1);
	assert_non_null(strstr(err.msg, "float_data holds 1 values where "
				       "the dims give 3"));

	t = vector_tensor(ONNX__TENSOR_PROTO__DATA_TYPE__STRING, three, 1);
	assert_int_equal(fl_onnx_tensor_values(&t, NULL, &v, &err), -1);
	assert_non_null(strstr(err.msg, "element type string is not "
				       "supported"));
}

static void test_onnx_tensor_external_data(void **state)
{
	char dir[] = "/tmp/fl-onnx-ext-XXXXXX";
	char path[256];
	int64_t dims[] = {2};
	float vals[] = {0, 0, 1.5f, -3};	/* offset 8: the last two */
	Onnx__StringStringEntryProto loc = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
	Onnx__StringStringEntryProto off = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
	Onnx__StringStringEntryProto *entries[] = {&loc, &off};
	Onnx__TensorProto t =
		vector_tensor(ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, dims, 1);
	fl_onnx_values v;
	fl_error err = {{0}};
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/w.bin", dir);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(vals, sizeof vals, 1, f), 1);
	fclose(f);
	loc.key = "location";
	loc.value = "w.bin";
	off.key = "offset";
	off.value = "8";
	t.has_data_location = 1;
	t.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	t.n_external_data = 2;
	t.external_data = entries;
	assert_int_equal(fl_onnx_tensor_values(&t, dir, &v, &err), 0);
	assert_true(v.f[0] == 1.5f && v.f[1] == -3.0f);
	fl_onnx_values_free(&v);

	loc.value = "missing.bin";
	assert_int_equal(fl_onnx_tensor_values(&t, dir, &v, &err), -1);
	assert_non_null(strstr(err.msg, "missing.bin: No such file"));
	loc.value = "../w.bin";
	assert_int_equal(fl_onnx_tensor_values(&t, dir, &v, &err), -1);
	assert_non_null(strstr(err.msg, "leaves the model's folder"));
	off.value = "12";
	loc.value = "w.bin";
	assert_int_equal(fl_onnx_tensor_values(&t, dir, &v, &err), -1);
	assert_non_null(strstr(err.msg, "shorter than offset 12"));
	unlink(path);
	rmdir(dir);
}

static void test_onnx_tensor_file_not_a_tensor(void **state)
{
	char path[] = "/tmp/fl-onnx-bad-XXXXXX";
	int fd = mkstemp(path);
	fl_onnx_values v;
	fl_error err = {{0}};

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "\xff\xff\xff\xff", 4), 4);
	close(fd);
	assert_int_equal(fl_onnx_read_tensor_file(path, &v, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "not a serialized ONNX TensorProto"));
	unlink(path);
}

FL_SUITE(onnx_tensor,
	 cmocka_unit_test(test_onnx_tensor_reads_backend_test_file),
	 cmocka_unit_test(test_onnx_tensor_typed_fields),
	 cmocka_unit_test(test_onnx_tensor_raw_little_endian),
	 cmocka_unit_test(test_onnx_tensor_rejects_bad_claims),
	 cmocka_unit_test(test_onnx_tensor_external_data),
	 cmocka_unit_test(test_onnx_tensor_file_not_a_tensor));
