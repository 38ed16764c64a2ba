/* TensorProto decoding (onnx_tensor.h). */
#include "onnx_tensor.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"

static const struct {
	int dtype;
	const char *name;
	int bytes;		/* of one element in raw_data; 0: not decoded */
} dtypes[] = {
	{ONNX__TENSOR_PROTO__DATA_TYPE__UNDEFINED, "undefined", 0},
	{ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, "float", 4},
	{ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, "uint8", 1},
	{ONNX__TENSOR_PROTO__DATA_TYPE__INT8, "int8", 1},
	{ONNX__TENSOR_PROTO__DATA_TYPE__UINT16, "uint16", 2},
	{ONNX__TENSOR_PROTO__DATA_TYPE__INT16, "int16", 2},
	{ONNX__TENSOR_PROTO__DATA_TYPE__INT32, "int32", 4},
	{ONNX__TENSOR_PROTO__DATA_TYPE__INT64, "int64", 8},
	{ONNX__TENSOR_PROTO__DATA_TYPE__STRING, "string", 0},
	{ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, "bool", 1},
	{ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, "float16", 2},
	{ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, "double", 8},
	{ONNX__TENSOR_PROTO__DATA_TYPE__UINT32, "uint32", 4},
	{ONNX__TENSOR_PROTO__DATA_TYPE__UINT64, "uint64", 8},
	{ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64, "complex64", 0},
	{ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX128, "complex128", 0},
	{ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16, "bfloat16", 2},
};

static int dtype_row(int dtype)
{
	for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++)
		if (dtypes[k].dtype == dtype)
			return (int)k;
	return -1;
}

const char *fl_onnx_dtype_name(int dtype)
{
	static _Thread_local char buf[24];
	int k = dtype_row(dtype);

	if (k >= 0)
		return dtypes[k].name;
	snprintf(buf, sizeof buf, "type %d", dtype);
	return buf;
}

static const struct {
	int onnx;
	fl_dtype dt;
} fl_types[] = {
	{ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, FL_F32},
	{ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, FL_BOOL},
	{ONNX__TENSOR_PROTO__DATA_TYPE__INT8, FL_I8},
	{ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, FL_U8},
	{ONNX__TENSOR_PROTO__DATA_TYPE__INT32, FL_I32},
	{ONNX__TENSOR_PROTO__DATA_TYPE__INT64, FL_I64},
	{ONNX__TENSOR_PROTO__DATA_TYPE__INT16, FL_I16},
	{ONNX__TENSOR_PROTO__DATA_TYPE__UINT16, FL_U16},
	{ONNX__TENSOR_PROTO__DATA_TYPE__UINT32, FL_U32},
	{ONNX__TENSOR_PROTO__DATA_TYPE__UINT64, FL_U64},
	{ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, FL_F16},
	{ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16, FL_BF16},
	{ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, FL_F32},
};

int fl_onnx_to_dtype(int dtype)
{
	for (size_t k = 0; k < sizeof fl_types / sizeof fl_types[0]; k++)
		if (fl_types[k].onnx == dtype)
			return (int)fl_types[k].dt;
	return -1;
}

int fl_onnx_from_dtype(fl_dtype dt)
{
	for (size_t k = 0; k < sizeof fl_types / sizeof fl_types[0]; k++)
		if (fl_types[k].dt == dt)
			return fl_types[k].onnx;
	return ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
}

bool fl_onnx_dtype_supported(int dtype)
{
	int k = dtype_row(dtype);

	return k >= 0 && dtypes[k].bytes > 0;
}

static bool dtype_integral(int dtype)
{
	return fl_onnx_dtype_supported(dtype) &&
	       dtype != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
	       dtype != ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE &&
	       dtype != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 &&
	       dtype != ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
}

/* Little-endian unsigned integer of `bytes` bytes at p. */
static uint64_t load_le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;

	for (int b = bytes - 1; b >= 0; b--)
		v = (v << 8) | p[b];
	return v;
}

static int64_t sign_extend(uint64_t v, int bytes)
{
	int shift = 64 - 8 * bytes;

	if (shift == 0)
		return (int64_t)v;
	return (int64_t)(v << shift) >> shift;
}

/* Element k, given as the raw little-endian bits of its type (from
 * raw_data or widened from a typed field), stored into v. */
static void store_bits(fl_onnx_values *v, int64_t k, uint64_t bits, int bytes)
{
	float f;

	switch (v->dtype) {
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: {
		uint32_t b32 = (uint32_t)bits;

		memcpy(&f, &b32, sizeof f);
		v->f[k] = f;
		return;
	}
	case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: {
		double d;

		memcpy(&d, &bits, sizeof d);
		v->f[k] = (float)d;
		return;
	}
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
		v->f[k] = fl_dtype_half_value(FL_F16, (uint16_t)bits);
		return;
	case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
		v->f[k] = fl_dtype_half_value(FL_BF16, (uint16_t)bits);
		return;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
		v->i[k] = sign_extend(bits, bytes);
		break;
	case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
		v->i[k] = bits != 0;
		break;
	default:		/* unsigned */
		v->i[k] = (int64_t)bits;
		break;
	}
	v->f[k] = v->dtype == ONNX__TENSOR_PROTO__DATA_TYPE__UINT64 ?
		  (float)(uint64_t)v->i[k] : (float)v->i[k];
}

static void decode_bytes(fl_onnx_values *v, const uint8_t *p)
{
	int bytes = dtypes[dtype_row(v->dtype)].bytes;

	for (int64_t k = 0; k < v->n; k++)
		store_bits(v, k, load_le(p + k * bytes, bytes), bytes);
}

/* How many values the typed field of v's type holds, and its name (ONNX's
 * table: small integers, bool and 16-bit floats go into int32_data). */
static size_t typed_count(const Onnx__TensorProto *t, int dtype,
			  const char **field)
{
	switch (dtype) {
	case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
		*field = "float_data";
		return t->n_float_data;
	case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
		*field = "double_data";
		return t->n_double_data;
	case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
		*field = "int64_data";
		return t->n_int64_data;
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
	case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
		*field = "uint64_data";
		return t->n_uint64_data;
	default:
		*field = "int32_data";
		return t->n_int32_data;
	}
}

/* Copies the typed field (its count already checked) into v. */
static void decode_typed(const Onnx__TensorProto *t, fl_onnx_values *v)
{
	int bytes = dtypes[dtype_row(v->dtype)].bytes;

	for (int64_t k = 0; k < v->n; k++) {
		switch (v->dtype) {
		case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
			v->f[k] = t->float_data[k];
			break;
		case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
			v->f[k] = (float)t->double_data[k];
			break;
		case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
			store_bits(v, k, (uint64_t)t->int64_data[k], 8);
			break;
		case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
		case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
			store_bits(v, k, t->uint64_data[k], 8);
			break;
		default:
			store_bits(v, k, (uint32_t)t->int32_data[k], bytes);
			break;
		}
	}
}

/* The arrays of v's n elements. */
static int alloc_values(fl_onnx_values *v, fl_error *err)
{
	size_t n = (size_t)(v->n ? v->n : 1);

	v->f = malloc(n * sizeof *v->f);
	if (v->f && dtype_integral(v->dtype))
		v->i = malloc(n * sizeof *v->i);
	if (!v->f || (dtype_integral(v->dtype) && !v->i)) {
		fl_error_set(err, "out of memory for %lld elements",
			     (long long)v->n);
		fl_onnx_values_free(v);
		return -1;
	}
	return 0;
}

/* The bytes of raw_data, or -1 when their count is not n elements'. */
static int decode_raw(const Onnx__TensorProto *t, fl_onnx_values *v,
		      fl_error *err)
{
	int bytes = dtypes[dtype_row(v->dtype)].bytes;
	size_t len = t->raw_data.len;

	if (len != (size_t)v->n * (size_t)bytes) {
		fl_error_set(err, "%zu bytes of data where %lld %s elements "
			     "need %lld", len, (long long)v->n,
			     fl_onnx_dtype_name(v->dtype),
			     (long long)v->n * bytes);
		return -1;
	}
	if (alloc_values(v, err))
		return -1;
	decode_bytes(v, t->raw_data.data);
	return 0;
}

static int decode_field(const Onnx__TensorProto *t, fl_onnx_values *v,
			fl_error *err)
{
	const char *field;
	size_t have = typed_count(t, v->dtype, &field);

	if (have != (size_t)v->n) {
		fl_error_set(err, "%s holds %zu values where the dims give %lld",
			     field, have, (long long)v->n);
		return -1;
	}
	if (alloc_values(v, err))
		return -1;
	decode_typed(t, v);
	return 0;
}

static const char *external_key(const Onnx__TensorProto *t, const char *key)
{
	for (size_t k = 0; k < t->n_external_data; k++) {
		const Onnx__StringStringEntryProto *e = t->external_data[k];

		if (e->key && e->value && strcmp(e->key, key) == 0)
			return e->value;
	}
	return NULL;
}

static int parse_count(const char *s, const char *key, long long *out,
		       fl_error *err)
{
	char *end;

	errno = 0;
	*out = s ? strtoll(s, &end, 10) : 0;
	if (s && (errno || end == s || *end || *out < 0)) {
		fl_error_set(err, "external_data %s \"%s\" is not a byte count",
			     key, fl_error_name(s));
		return -1;
	}
	return 0;
}

/* Reads the bytes of a tensor stored outside the model (ONNX's
 * external data: keys location, offset, length), from a file that must
 * stay inside base_dir. */
static int decode_external(const Onnx__TensorProto *t, const char *base_dir,
			   fl_onnx_values *v, fl_error *err)
{
	const char *loc = external_key(t, "location");
	long long offset, length;
	int bytes = dtypes[dtype_row(v->dtype)].bytes;
	size_t need = (size_t)v->n * (size_t)bytes;
	char path[4096];
	uint8_t *buf;
	FILE *f;
	int rc = -1;

	if (!loc || !*loc) {
		fl_error_set(err, "external data without a location");
		return -1;
	}
	if (!base_dir) {
		fl_error_set(err, "external data (\"%s\") where none may be",
			     fl_error_name(loc));
		return -1;
	}
	if (loc[0] == '/' || strstr(loc, "..")) {
		fl_error_set(err, "external data location \"%s\" leaves the "
			     "model's folder", fl_error_name(loc));
		return -1;
	}
	if (parse_count(external_key(t, "offset"), "offset", &offset, err) ||
	    parse_count(external_key(t, "length"), "length", &length, err))
		return -1;
	if (external_key(t, "length") && (size_t)length != need) {
		fl_error_set(err, "external data length %lld where %lld %s "
			     "elements need %zu", length, (long long)v->n,
			     fl_onnx_dtype_name(v->dtype), need);
		return -1;
	}
	/* base_dir may end in '/' (the model's folder, "/" included): one
	 * slash between, so that messages name the file as the user would */
	snprintf(path, sizeof path, "%s%s%s", base_dir,
		 *base_dir && base_dir[strlen(base_dir) - 1] == '/' ? "" : "/",
		 loc);
	f = fopen(path, "rb");
	if (!f) {
		fl_error_set(err, "external data file %s: %s",
			     path, strerror(errno));
		return -1;
	}
	buf = NULL;
	if (fseeko(f, 0, SEEK_END) != 0 || ftello(f) < offset ||
	    (size_t)(ftello(f) - offset) < need)
		fl_error_set(err, "external data file %s: shorter than offset "
			     "%lld + %zu bytes", path, offset, need);
	else if (!(buf = malloc(need ? need : 1)))
		fl_error_set(err, "out of memory for %zu bytes", need);
	else if (fseeko(f, (off_t)offset, SEEK_SET) != 0 ||
		 fread(buf, 1, need, f) != need)
		fl_error_set(err, "external data file %s: cannot read %zu "
			     "bytes at offset %lld", path, need, offset);
	else if (alloc_values(v, err) == 0) {
		decode_bytes(v, buf);
		rc = 0;
	}
	free(buf);
	fclose(f);
	return rc;
}

static int take_shape(const Onnx__TensorProto *t, fl_onnx_values *v,
		      fl_error *err)
{
	if (t->n_dims > FL_MAX_RANK) {
		fl_error_set(err, "rank %zu; fuselab takes at most %d",
			     t->n_dims, FL_MAX_RANK);
		return -1;
	}
	v->shape.rank = (int)t->n_dims;
	v->n = 1;
	for (size_t d = 0; d < t->n_dims; d++) {
		if (t->dims[d] < 0) {
			fl_error_set(err, "dims[%zu] is %lld", d,
				     (long long)t->dims[d]);
			return -1;
		}
		v->shape.dim[d] = t->dims[d];
		if (t->dims[d] && v->n > FL_ONNX_MAX_ELEMENTS / t->dims[d]) {
			fl_error_set(err, "dims claim more than %lld elements",
				     (long long)FL_ONNX_MAX_ELEMENTS);
			return -1;
		}
		v->n *= t->dims[d];
	}
	return 0;
}

int fl_onnx_tensor_values(const Onnx__TensorProto *t, const char *base_dir,
			  fl_onnx_values *v, fl_error *err)
{
	int rc;

	memset(v, 0, sizeof *v);
	v->dtype = t->has_data_type ? t->data_type : 0;
	if (!fl_onnx_dtype_supported(v->dtype)) {
		fl_error_set(err, "element type %s is not supported",
			     fl_onnx_dtype_name(v->dtype));
		return -1;
	}
	if (t->segment) {
		fl_error_set(err, "segmented tensors are not supported");
		return -1;
	}
	if (take_shape(t, v, err))
		return -1;
	/* each path checks the data's size against the dims before it
	 * allocates: a short file cannot claim gigabytes */
	if (t->has_data_location &&
	    t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		rc = decode_external(t, base_dir, v, err);
	else if (t->has_raw_data)
		rc = decode_raw(t, v, err);
	else
		rc = decode_field(t, v, err);
	if (rc)
		fl_onnx_values_free(v);
	return rc;
}

void fl_onnx_values_free(fl_onnx_values *v)
{
	free(v->f);
	free(v->i);
	v->f = NULL;
	v->i = NULL;
}

int fl_onnx_tensor_from_bytes(const uint8_t *data, size_t len,
			      fl_onnx_values *v, char **name, fl_error *err)
{
	Onnx__TensorProto *t;
	int rc;

	memset(v, 0, sizeof *v);
	if (name)
		*name = NULL;
	t = onnx__tensor_proto__unpack(NULL, len, data);
	if (!t) {
		fl_error_set(err, "not a serialized ONNX TensorProto");
		return -1;
	}
	rc = fl_onnx_tensor_values(t, NULL, v, err);
	if (rc == 0 && name && !(*name = strdup(t->name ? t->name : ""))) {
		fl_error_set(err, "out of memory");
		fl_onnx_values_free(v);
		rc = -1;
	}
	onnx__tensor_proto__free_unpacked(t, NULL);
	return rc;
}

int fl_onnx_read_tensor_file(const char *path, fl_onnx_values *v, char **name,
			     fl_error *err)
{
	size_t len;
	char *text = fl_read_file(path, FL_LOADER_MAX_FILE_BYTES, "tensor file",
				  &len, err);
	int rc;

	memset(v, 0, sizeof *v);
	if (name)
		*name = NULL;
	if (!text)
		return -1;
	rc = fl_onnx_tensor_from_bytes((const uint8_t *)text, len, v, name,
				       err);
	free(text);
	if (rc)
		fl_error_prefix(err, "%s", path);
	return rc;
}

void fl_onnx_values_round(fl_onnx_values *v)
{
	int dt = fl_onnx_to_dtype(v->dtype);

	if (dt < 0 || !fl_dtype_is_half((fl_dtype)dt))
		return;
	for (int64_t k = 0; k < v->n; k++)
		v->f[k] = fl_dtype_round((fl_dtype)dt, v->f[k]);
}

int fl_onnx_values_reinterpret_half(fl_onnx_values *v, int dtype)
{
	if (v->dtype != ONNX__TENSOR_PROTO__DATA_TYPE__UINT16 || !v->i ||
	    (dtype != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 &&
	     dtype != ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16))
		return 0;
	for (int64_t k = 0; k < v->n; k++)
		v->f[k] = fl_dtype_half_value(
			(fl_dtype)fl_onnx_to_dtype(dtype), (uint16_t)v->i[k]);
	free(v->i);
	v->i = NULL;
	v->dtype = dtype;
	return 1;
}
