/* Element types (see dtype.h): names, sizes, C types and the exact
 * conversions between the interpreter's int64 form and packed arrays;
 * the 16-bit floats' conversions are the generated code's own text
 * (engine/backend/runtime/half_rt.c), so both round alike. */
#include "dtype.h"

#include <math.h>
#include <string.h>

#include "runtime/half_rt.c"

static const struct {
	const char *name, *c_type;
	int size;
	bool is_unsigned;
	int64_t min, max;
	const char *min_name, *max_name;
} rows[FL_DTYPE_COUNT] = {
	[FL_F32] = {"f32", "float", 4, false, 0, 0, "-INFINITY", "INFINITY"},
	[FL_BOOL] = {"bool", "bool", 1, true, 0, 1, "0", "1"},
	[FL_I8] = {"i8", "int8_t", 1, false, INT8_MIN, INT8_MAX,
		   "INT8_MIN", "INT8_MAX"},
	[FL_U8] = {"u8", "uint8_t", 1, true, 0, UINT8_MAX, "0", "UINT8_MAX"},
	[FL_I32] = {"i32", "int32_t", 4, false, INT32_MIN, INT32_MAX,
		    "INT32_MIN", "INT32_MAX"},
	[FL_I64] = {"i64", "int64_t", 8, false, INT64_MIN, INT64_MAX,
		    "INT64_MIN", "INT64_MAX"},
	[FL_I16] = {"i16", "int16_t", 2, false, INT16_MIN, INT16_MAX,
		    "INT16_MIN", "INT16_MAX"},
	[FL_U16] = {"u16", "uint16_t", 2, true, 0, UINT16_MAX,
		    "0", "UINT16_MAX"},
	[FL_U32] = {"u32", "uint32_t", 4, true, 0, UINT32_MAX,
		    "0", "UINT32_MAX"},
	/* UINT64_MAX's bits, as the interpreter holds it */
	[FL_U64] = {"u64", "uint64_t", 8, true, 0, -1, "0", "UINT64_MAX"},
	/* floats stored in 16 bits: never integral, no integer range */
	[FL_F16] = {"f16", "uint16_t", 2, false, 0, 0, "-INFINITY", "INFINITY"},
	[FL_BF16] = {"bf16", "uint16_t", 2, false, 0, 0, "-INFINITY",
		     "INFINITY"},
};

static bool valid(fl_dtype dt)
{
	return (int)dt >= 0 && dt < FL_DTYPE_COUNT;
}

const char *fl_dtype_name(fl_dtype dt)
{
	return valid(dt) ? rows[dt].name : "?";
}

int fl_dtype_parse(const char *name)
{
	for (int k = 0; k < FL_DTYPE_COUNT; k++)
		if (strcmp(rows[k].name, name) == 0)
			return k;
	return -1;
}

int fl_dtype_size(fl_dtype dt)
{
	return valid(dt) ? rows[dt].size : 4;
}

const char *fl_dtype_c_type(fl_dtype dt)
{
	return valid(dt) ? rows[dt].c_type : "float";
}

bool fl_dtype_is_int(fl_dtype dt)
{
	return dt != FL_F32 && !fl_dtype_is_half(dt);
}

bool fl_dtype_is_half(fl_dtype dt)
{
	return dt == FL_F16 || dt == FL_BF16;
}

uint16_t fl_dtype_half_bits(fl_dtype dt, float x)
{
	return dt == FL_BF16 ? fl_f32_to_bf16(x) : fl_f32_to_f16(x);
}

float fl_dtype_half_value(fl_dtype dt, uint16_t bits)
{
	return dt == FL_BF16 ? fl_bf16_to_f32(bits) : fl_f16_to_f32(bits);
}

float fl_dtype_round(fl_dtype dt, float x)
{
	return fl_dtype_is_half(dt)
		? fl_dtype_half_value(dt, fl_dtype_half_bits(dt, x)) : x;
}

double fl_dtype_ulp(fl_dtype dt)
{
	return dt == FL_F16 ? 0x1p-10 : dt == FL_BF16 ? 0x1p-7 : 0x1p-23;
}

const char *fl_dtype_store_fn(fl_dtype dt)
{
	return dt == FL_F16 ? "fl_f32_to_f16"
	       : dt == FL_BF16 ? "fl_f32_to_bf16" : NULL;
}

const char *fl_dtype_load_fn(fl_dtype dt)
{
	return dt == FL_F16 ? "fl_f16_to_f32"
	       : dt == FL_BF16 ? "fl_bf16_to_f32" : NULL;
}

bool fl_dtype_is_unsigned(fl_dtype dt)
{
	return valid(dt) && rows[dt].is_unsigned;
}

int64_t fl_dtype_min(fl_dtype dt)
{
	return valid(dt) ? rows[dt].min : 0;
}

int64_t fl_dtype_max(fl_dtype dt)
{
	return valid(dt) ? rows[dt].max : 0;
}

const char *fl_dtype_min_name(fl_dtype dt)
{
	return valid(dt) ? rows[dt].min_name : "0";
}

const char *fl_dtype_max_name(fl_dtype dt)
{
	return valid(dt) ? rows[dt].max_name : "0";
}

double fl_dtype_to_double(fl_dtype dt, int64_t v)
{
	return dt == FL_U64 ? (double)(uint64_t)v : (double)v;
}

int fl_dtype_compare(fl_dtype dt, int64_t a, int64_t b)
{
	if (dt == FL_U64)
		return (uint64_t)a < (uint64_t)b ? -1 : (uint64_t)a > (uint64_t)b;
	return a < b ? -1 : a > b;
}

int64_t fl_dtype_wrap(fl_dtype dt, int64_t v)
{
	switch (dt) {
	case FL_BOOL: return v != 0;
	case FL_I8: return (int8_t)(uint8_t)(uint64_t)v;
	case FL_U8: return (uint8_t)(uint64_t)v;
	case FL_I16: return (int16_t)(uint16_t)(uint64_t)v;
	case FL_U16: return (uint16_t)(uint64_t)v;
	case FL_I32: return (int32_t)(uint32_t)(uint64_t)v;
	case FL_U32: return (uint32_t)(uint64_t)v;
	default: return v;
	}
}

int64_t fl_dtype_from_float(fl_dtype dt, double x)
{
	if (dt == FL_BOOL)
		return x != 0;
	if (isnan(x))
		return 0;
	/* u64 values from 2^63 on: exact in the unsigned conversion */
	if (dt == FL_U64 && x >= 9223372036854775808.0)
		return x >= 18446744073709551615.0 ? -1
						    : (int64_t)(uint64_t)x;
	if (x >= 9223372036854775807.0)
		return fl_dtype_wrap(dt, INT64_MAX);
	if (x <= -9223372036854775808.0)
		return fl_dtype_wrap(dt, INT64_MIN);
	return fl_dtype_wrap(dt, (int64_t)x);
}

void fl_dtype_pack(fl_dtype dt, const int64_t *src, void *dst, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		switch (dt) {
		case FL_BOOL: ((bool *)dst)[i] = src[i] != 0; break;
		case FL_I8: ((int8_t *)dst)[i] = (int8_t)src[i]; break;
		case FL_U8: ((uint8_t *)dst)[i] = (uint8_t)src[i]; break;
		case FL_I16: ((int16_t *)dst)[i] = (int16_t)src[i]; break;
		case FL_U16: ((uint16_t *)dst)[i] = (uint16_t)src[i]; break;
		case FL_I32: ((int32_t *)dst)[i] = (int32_t)src[i]; break;
		case FL_U32: ((uint32_t *)dst)[i] = (uint32_t)src[i]; break;
		case FL_I64: ((int64_t *)dst)[i] = src[i]; break;
		case FL_U64: ((uint64_t *)dst)[i] = (uint64_t)src[i]; break;
		default: ((float *)dst)[i] = (float)src[i]; break;
		}
}

void fl_dtype_unpack(fl_dtype dt, const void *src, int64_t *dst, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		switch (dt) {
		case FL_BOOL: dst[i] = ((const uint8_t *)src)[i] != 0; break;
		case FL_I8: dst[i] = ((const int8_t *)src)[i]; break;
		case FL_U8: dst[i] = ((const uint8_t *)src)[i]; break;
		case FL_I16: dst[i] = ((const int16_t *)src)[i]; break;
		case FL_U16: dst[i] = ((const uint16_t *)src)[i]; break;
		case FL_I32: dst[i] = ((const int32_t *)src)[i]; break;
		case FL_U32: dst[i] = ((const uint32_t *)src)[i]; break;
		case FL_I64: dst[i] = ((const int64_t *)src)[i]; break;
		case FL_U64:
			dst[i] = (int64_t)((const uint64_t *)src)[i];
			break;
		default: dst[i] = (int64_t)((const float *)src)[i]; break;
		}
}

void fl_dtype_pack_floats(fl_dtype dt, const float *src, void *dst,
			  int64_t n)
{
	if (!fl_dtype_is_half(dt)) {
		memcpy(dst, src, (size_t)n * sizeof(float));
		return;
	}
	for (int64_t i = 0; i < n; i++)
		((uint16_t *)dst)[i] = fl_dtype_half_bits(dt, src[i]);
}

void fl_dtype_unpack_floats(fl_dtype dt, const void *src, float *dst,
			    int64_t n)
{
	if (!fl_dtype_is_half(dt)) {
		memcpy(dst, src, (size_t)n * sizeof(float));
		return;
	}
	for (int64_t i = 0; i < n; i++)
		dst[i] = fl_dtype_half_value(dt, ((const uint16_t *)src)[i]);
}
