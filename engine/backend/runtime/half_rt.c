/* The 16-bit float runtime: conversions between f32 and the storage
 * types f16 (IEEE binary16) and bf16 (bfloat16), on the bits.  One text
 * for both sides of the verification: engine/ir/dtype.c includes this
 * file (the interpreter's conversions), and print_c.c and print_cuda.c
 * copy it into every generated translation unit (FL_HALF_FN set to
 * "static __host__ __device__" there), so the reference and the kernels
 * round alike, on any compiler: nothing here needs _Float16, F16C or
 * CUDA's __half.
 *
 * f16 and bf16 are storage types (docs/types.md): a load converts up
 * (exact: every 16-bit value is a float), arithmetic is f32's, and a
 * store rounds to nearest, ties to even.
 *
 * Both directions keep what IEEE 754 asks of a conversion: signed zeros
 * and infinities as they are; a NaN stays a NaN of the same sign, made
 * quiet, with the top bits of its payload; f16's subnormals (below
 * 2^-14, down to 2^-24) both ways; a float beyond f16's largest finite
 * value (65504) rounds to infinity from 65520 on -- the tie with 65536
 * goes to the even mantissa, which is infinity's side. */
#include <stdint.h>

#ifndef FL_HALF_FN
#define FL_HALF_FN static inline
#endif

FL_HALF_FN uint32_t fl_half_f32_bits(float f)
{
	union { float f; uint32_t u; } v;

	v.f = f;
	return v.u;
}

FL_HALF_FN float fl_half_f32_of(uint32_t u)
{
	union { float f; uint32_t u; } v;

	v.u = u;
	return v.f;
}

/* f16 -> f32: exact.  A subnormal m * 2^-24 is normalised by shifting
 * m up to its leading one, one exponent step per shift. */
FL_HALF_FN float fl_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, e = 113;

	if (exp == 0x1f)	/* infinity, NaN with its payload */
		return fl_half_f32_of(sign | 0x7f800000u | (man << 13));
	if (exp)
		return fl_half_f32_of(sign | ((exp + 112) << 23) | (man << 13));
	if (!man)
		return fl_half_f32_of(sign);
	while (!(man & 0x400u)) {
		man <<= 1;
		e--;
	}
	return fl_half_f32_of(sign | (e << 23) | ((man & 0x3ffu) << 13));
}

/* f32 -> f16, to nearest, ties to even. */
FL_HALF_FN uint16_t fl_f32_to_f16(float f)
{
	uint32_t x = fl_half_f32_bits(f), ax = x & 0x7fffffffu;
	uint32_t sign = (x >> 16) & 0x8000u, m, q, rem, half;
	int shift;

	if (ax > 0x7f800000u)	/* NaN: quiet, the payload's top bits */
		return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
	if (ax >= 0x477ff000u)	/* 65520 and up, infinity */
		return (uint16_t)(sign | 0x7c00u);
	if (ax >= 0x38800000u) {	/* normal in f16: 2^-14 and up */
		/* rebias the exponent (127 - 15), then round off 13
		 * bits; a carry out of the mantissa steps the exponent */
		ax -= 0x38000000u;
		ax += 0xfffu + ((ax >> 13) & 1u);
		return (uint16_t)(sign | (ax >> 13));
	}
	if (ax <= 0x33000000u)	/* up to 2^-25, the tie: zero */
		return (uint16_t)sign;
	/* a subnormal: the 24-bit significand in units of 2^-24 */
	m = (ax & 0x7fffffu) | 0x800000u;
	shift = 126 - (int)(ax >> 23);	/* 14 .. 24 */
	q = m >> shift;
	rem = m & ((1u << shift) - 1u);
	half = 1u << (shift - 1);
	if (rem > half || (rem == half && (q & 1u)))
		q++;		/* 0x400 is the smallest normal: right */
	return (uint16_t)(sign | q);
}

/* bf16 -> f32: exact, the high half of a float. */
FL_HALF_FN float fl_bf16_to_f32(uint16_t h)
{
	return fl_half_f32_of((uint32_t)h << 16);
}

/* f32 -> bf16, to nearest, ties to even (large finite values round to
 * infinity as the carry reaches the exponent). */
FL_HALF_FN uint16_t fl_f32_to_bf16(float f)
{
	uint32_t x = fl_half_f32_bits(f);

	if ((x & 0x7fffffffu) > 0x7f800000u)	/* NaN: quiet */
		return (uint16_t)((x >> 16) | 0x40u);
	x += 0x7fffu + ((x >> 16) & 1u);
	return (uint16_t)(x >> 16);
}
