/* fl_dtype: the element types a tensor can have.
 *
 * f32 is the default and the type of every computation that is not
 * integral by nature; bool, i8, u8, i32 and i64 carry indices, masks,
 * token ids and the like.  The zero value is f32, so a zeroed tensor,
 * buffer or struct is a float one.
 *
 * Representation (docs/types.md): the interpreter holds every integral
 * and bool value exactly as an int64_t (fl_buf.ints), wrapped to its
 * type's range after each op (fl_dtype_wrap); generated code declares
 * each array in its own C type (fl_dtype_c_type), bool as C's bool. */
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
	FL_DTYPE_COUNT
} fl_dtype;

/* "f32", "bool", "i8", "u8", "i32", "i64" (the graph format's names). */
const char *fl_dtype_name(fl_dtype dt);

/* The dtype named `name`; -1 when it names none. */
int fl_dtype_parse(const char *name);

/* Bytes of one element in generated code (and in --check's totals). */
int fl_dtype_size(fl_dtype dt);

/* The element's C type in generated code: "float", "bool", "int8_t",
 * "uint8_t", "int32_t", "int64_t". */
const char *fl_dtype_c_type(fl_dtype dt);

/* True for every dtype but f32: values held exactly as integers. */
bool fl_dtype_is_int(fl_dtype dt);

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

#endif
