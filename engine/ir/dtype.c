/* Element types (see dtype.h): names, sizes, C types and the exact
 * conversions between the interpreter's int64 form and packed arrays. */
#include "dtype.h"

#include <math.h>
#include <string.h>

static const struct {
	const char *name, *c_type;
	int size;
} rows[FL_DTYPE_COUNT] = {
	[FL_F32] = {"f32", "float", 4},
	[FL_BOOL] = {"bool", "bool", 1},
	[FL_I8] = {"i8", "int8_t", 1},
	[FL_U8] = {"u8", "uint8_t", 1},
	[FL_I32] = {"i32", "int32_t", 4},
	[FL_I64] = {"i64", "int64_t", 8},
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
	return dt != FL_F32;
}

int64_t fl_dtype_wrap(fl_dtype dt, int64_t v)
{
	switch (dt) {
	case FL_BOOL: return v != 0;
	case FL_I8: return (int8_t)(uint8_t)(uint64_t)v;
	case FL_U8: return (uint8_t)(uint64_t)v;
	case FL_I32: return (int32_t)(uint32_t)(uint64_t)v;
	default: return v;
	}
}

int64_t fl_dtype_from_float(fl_dtype dt, double x)
{
	if (dt == FL_BOOL)
		return x != 0;
	if (isnan(x))
		return 0;
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
		case FL_I32: ((int32_t *)dst)[i] = (int32_t)src[i]; break;
		case FL_I64: ((int64_t *)dst)[i] = src[i]; break;
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
		case FL_I32: dst[i] = ((const int32_t *)src)[i]; break;
		case FL_I64: dst[i] = ((const int64_t *)src)[i]; break;
		default: dst[i] = (int64_t)((const float *)src)[i]; break;
		}
}
