/* fl_dtype: the element types a tensor can have.
 *
 * f32 is the default and the type of every computation that is not
 * integral by nature; bool and the integers (i8 u8 i16 u16 i32 u32 i64
 * u64) carry indices, masks, token ids, quantized values and the like;
 * f16 and bf16 are storage types for floats (half-precision models):
 * values are loaded as f32, computed in f32 and rounded to nearest even
 * when stored (half_rt.c).  The zero value is f32, so a zeroed tensor,
 * buffer or struct is a float one.
 *
 * Representation (docs/types.md): the interpreter holds every integral
 * and bool value exactly as an int64_t (fl_buf.ints), wrapped to its
 * type's range after each op (fl_dtype_wrap) -- a u64 above INT64_MAX
 * is held as its two's complement bits, so comparisons, division and
 * conversion to float go through fl_dtype_is_unsigned; generated code declares
 * each array in its own C type (fl_dtype_c_type), bool as C's bool.
 * f16 and bf16 values are floats in the interpreter (fl_buf.data, each
 * one exactly a value of the type: fl_dtype_round after every op) and
 * uint16_t bit patterns in generated code. */
#ifndef FL_DTYPE_H
#define FL_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum fl_dtype {
	FL_F32 = 0,
	FL_BOOL,
	FL_I8,
	FL_U8,
	FL_I32,
	FL_I64,
	FL_I16,
	FL_U16,
	FL_U32,
	FL_U64,
	FL_F16,
	FL_BF16,
	FL_DTYPE_COUNT
} fl_dtype;

/* "f32", "bool", "i8", "u8", "i32", "i64", "i16", "u16", "u32", "u64",
 * "f16", "bf16" (the graph format's names). */
const char *fl_dtype_name(fl_dtype dt);

/* The dtype named `name`; -1 when it names none. */
int fl_dtype_parse(const char *name);

/* Bytes of one element in generated code (and in --check's totals). */
int fl_dtype_size(fl_dtype dt);

/* The element's C type in generated code: "float", "bool", "int8_t",
 * "uint8_t", ..., "uint64_t"; "uint16_t" for f16 and bf16, whose bits
 * the generated code converts (fl_f16_to_f32 and the like). */
const char *fl_dtype_c_type(fl_dtype dt);

/* True for bool and the integers: values held exactly as integers. */
bool fl_dtype_is_int(fl_dtype dt);

/* True for f16 and bf16, the 16-bit storage types of floats. */
bool fl_dtype_is_half(fl_dtype dt);

/* x rounded to a value of float dtype dt (f16, bf16: to nearest, ties
 * to even; f32: x). */
float fl_dtype_round(fl_dtype dt, float x);

/* The bits of x in half dtype dt (rounded to nearest even), and back. */
uint16_t fl_dtype_half_bits(fl_dtype dt, float x);
float fl_dtype_half_value(fl_dtype dt, uint16_t bits);

/* The relative size of one unit in the last place of float dtype dt:
 * 2^-10 for f16, 2^-7 for bf16, 2^-23 for f32 -- what comparisons of
 * rounded results allow on top of their tolerance. */
double fl_dtype_ulp(fl_dtype dt);

/* The C function that converts a float to dtype dt's stored bits in
 * generated code ("fl_f32_to_f16"), and the one that loads them back
 * ("fl_f16_to_f32"); NULL for the other dtypes. */
const char *fl_dtype_store_fn(fl_dtype dt);
const char *fl_dtype_load_fn(fl_dtype dt);

/* True for the unsigned integer types (bool included: 0 and 1). */
bool fl_dtype_is_unsigned(fl_dtype dt);

/* The smallest and largest value of integral dt (u64's largest is
 * UINT64_MAX, held as -1); the C names of both for generated code. */
int64_t fl_dtype_min(fl_dtype dt);
int64_t fl_dtype_max(fl_dtype dt);
const char *fl_dtype_min_name(fl_dtype dt);
const char *fl_dtype_max_name(fl_dtype dt);

/* Integral value v of dt as a double (u64 read as unsigned). */
double fl_dtype_to_double(fl_dtype dt, int64_t v);

/* Orders integral values a and b of dt: -1, 0 or 1 (u64 unsigned). */
int fl_dtype_compare(fl_dtype dt, int64_t a, int64_t b);

/* v reduced to dt's range the way C's conversion to the type does
 * (two's complement wrap-around; bool: v != 0). */
int64_t fl_dtype_wrap(fl_dtype dt, int64_t v);

/* x converted to integral dt as C and ONNX's Cast do (truncation toward
 * zero, bool: x != 0), but defined everywhere: NaN gives 0, values
 * beyond int64's range saturate before wrapping. */
int64_t fl_dtype_from_float(fl_dtype dt, double x);

/* Copies n exact values between the interpreter's int64 form and the
 * packed C arrays of generated code (element type fl_dtype_c_type). */
void fl_dtype_pack(fl_dtype dt, const int64_t *src, void *dst, int64_t n);
void fl_dtype_unpack(fl_dtype dt, const void *src, int64_t *dst, int64_t n);

/* The same for float dtypes: n floats to f32 or the 16-bit bits of dt
 * (rounded), and back (exact). */
void fl_dtype_pack_floats(fl_dtype dt, const float *src, void *dst,
			  int64_t n);
void fl_dtype_unpack_floats(fl_dtype dt, const void *src, float *dst,
			    int64_t n);

#endif
