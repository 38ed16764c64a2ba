/* Maths runtime: like contract_rt.c, this text is not compiled into
 * fuselab; `make` checks it as C of its own and print_c.c copies it into
 * every generated translation unit.  The generated code of the exp, tanh,
 * erf and sigmoid ops (and so of GELU, both forms, and softmax) calls
 * these functions.
 *
 * fl_tanhf, fl_erff.  Why not tanhf and erff: they are the slow part of a fused elementwise
 * kernel.  glibc's vector variants (libmvec) cost about 1 ns (tanhf) and
 * 0.6 ns (erff) per element on an AVX2 core, which holds a fused
 * bias + tanh-GELU kernel to half of the copy bandwidth, and without
 * libmvec every element is a scalar call.  These are rational functions
 * of x^2 -- a handful of FMAs and one division, 0.36 and 0.48 ns per
 * element -- which the compiler vectorises inside the kernel's loop:
 *
 *     tanh(x) ~ x P(x^2) / Q(x^2),  |x| <= 9.1, P degree 4, Q degree 4
 *     erf(x)  ~ x P(x^2) / Q(x^2),  |x| <= 4, P degree 6, Q degree 4
 *
 * The coefficients come from scripts/fit_rational.py (least squares on
 * the relative error, 2.5e-8 and 7.4e-8 in double); evaluated in float
 * the relative error stays under 4e-7 (3 to 4 units in the last place)
 * over the whole line (tanh: 3.1e-7 in a sweep over every float), which
 * tests/test_math_rt.c checks.  tanh's P was of degree 5 on [0, 10]:
 * fitting only up to 9.1, where the result becomes exactly 1 anyway,
 * saves one FMA at the same accuracy, 8% of the function's time, which
 * counts where tanh is chained with exp (samples/chain8.json).  Both are odd:
 * they work on |x|, clamped to the bound (beyond it the function is 1 in
 * float), and give the result the sign of x, so -0 stays -0 and NaN,
 * which every comparison leaves alone, comes out NaN.  The result is
 * exactly 1 where the function rounds to 1 in float (|x| > 9.1 and 3.95:
 * tanh and erf are within 3e-8 of 1 there, nearer to 1 than to the float
 * below it).
 *
 * fl_expf.  glibc's vector expf is as fast for arguments in its range,
 * but takes a scalar path for every vector holding one below about -87
 * (14 ns per element instead of 0.8): softmax of large logits, where most
 * x - max(x) are far below that, spent 1.6 ms of BERT's 23 in one exp.
 * Here exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 (ln 2 in
 * two parts so that n ln 2 is exact), |r| <= ln(2)/2, exp(r) by a
 * polynomial of degree 6 (scripts/fit_exp.py: it interpolates exp at the
 * Chebyshev points, 2.5e-9 in double, where the Taylor polynomial needs
 * degree 7 for 5e-9), evaluated in Estrin's form -- three independent
 * products instead of one chain of six, so the out-of-order core overlaps
 * more of a loop's iterations (10% of the function's time on a Zen 3
 * core, at the price of a few units in the last place of rounding).
 * 2^n costs no conversion:
 * n is rounded by adding 1.5 * 2^23, which leaves n + 2^22 in the low
 * mantissa bits of that sum, and those bits shifted into the exponent
 * field are added to the polynomial's bits -- an integer add instead of
 * a float-to-int conversion and two multiplications, about a quarter of
 * the function's time, which counts in a kernel that chains exp behind
 * other maths (samples/chain8.json).  The argument is clamped first to
 * [-126 ln 2 rounded up, the largest float below ln FLT_MAX], so n stays
 * in [-126, 128] and the sum is a normal float (at n = 128, r < 0 and
 * the polynomial is below 1).  Results below the smallest normal float
 * (x < ln FLT_MIN = -87.3365) are 0, not denormals -- arithmetic that
 * makes denormals stalls the core on each vector, and the difference is
 * under 1.2e-38 -- x > ln FLT_MAX gives inf, and a NaN is returned as it
 * came (adding to the bits of a NaN with a payload could make it inf).
 * Relative error 1.8e-7 (an exhaustive sweep over every float).
 *
 * Every test is a single select, and the runner compiles with
 * -fno-trapping-math: otherwise GCC keeps a comparison that might trap
 * behind a branch and the loop does not vectorise. */
#include <math.h>
#include <stdint.h>
#include <string.h>

/* The bounds the functions below compare with, as values the caller
 * passes.  With a literal bound GCC turns "b < a ? b : a" into a compare
 * and a blend (it folds the arithmetic after the select into the
 * literal's arm), two instructions on the two FMA pipes of a Zen 3 or
 * Skylake core where vminps is one; a bound it cannot see is a plain
 * min or max.  A kernel hides them once, outside its loops
 * (fl_bounds_hidden: an empty asm that "changes" each value in a
 * register), and calls the _b forms (print_c.c); the plain forms pass
 * the literals, and both give the same bits (test_math_rt).  tanh's two
 * clamps as minima: 12% of chain8's tanh loop. */
typedef struct fl_bounds {
  float tanh_hi;      /* tanh(x) is 1 in float from here on */
  float erf_hi;       /* erf's fit ends here */
  float exp_lo;       /* FL_EXPF_LO */
  float exp_hi;       /* FL_EXPF_HI */
  float one;
  float zero;
} fl_bounds;

/* -126 ln 2 rounded up; the largest float below ln FLT_MAX */
#define FL_EXPF_LO (-87.3365402f)
#define FL_EXPF_HI 88.7228317f

#define FL_BOUNDS_LITERAL \
  ((fl_bounds){9.1f, 4.0f, FL_EXPF_LO, FL_EXPF_HI, 1.0f, 0.0f})

/* "+x": the value is in an SSE register, which the asm may have changed
 * (it emits nothing); elsewhere the bounds stay literals. */
#if defined(__GNUC__) && defined(__SSE__)
#define FL_HIDE(v) __asm__("" : "+x"(v))
#else
#define FL_HIDE(v) ((void)0)
#endif

static inline fl_bounds fl_bounds_hidden(void)
{
  fl_bounds b = FL_BOUNDS_LITERAL;

  FL_HIDE(b.tanh_hi);
  FL_HIDE(b.erf_hi);
  FL_HIDE(b.exp_lo);
  FL_HIDE(b.exp_hi);
  FL_HIDE(b.one);
  FL_HIDE(b.zero);
  return b;
}

/* f(a) = a P(a^2) / Q(a^2) for a = |x| clamped to [0, bound], with the
 * sign of x: near 1 the float arithmetic of P/Q is a few units in the
 * last place off either way, so the result is kept at most 1.  Every
 * min is written "bound < v ? bound : v", which is vminps(bound, v) and
 * leaves a NaN v alone. */
static inline float fl_odd_rational(float r, float x, float one)
{
  r = one < r ? one : r;
  return copysignf(r, x);
}

static inline float fl_tanhf_b(float x, fl_bounds b)
{
  float a = fabsf(x);
  float t, p, q;

  a = b.tanh_hi < a ? b.tanh_hi : a;
  t = a * a;
  p = 9.999999918e-01f + t * (1.337852212e-01f + t * (3.492470936e-03f +
      t * (2.055193099e-05f + t * 1.326440471e-08f)));
  q = 1.0f + t * (4.671184204e-01f + t * (2.586549731e-02f +
      t * (3.280284984e-04f + t * 7.741958849e-07f)));
  /* at a = 9.1 itself P/Q rounds to 1 or above, so the clamp of a is
   * all it takes for every |x| >= 9.1 to give exactly 1 (one select
   * fewer than erf: 7% of chain8's time) */
  return fl_odd_rational(a * p / q, x, b.one);
}

static inline float fl_tanhf(float x)
{
  return fl_tanhf_b(x, FL_BOUNDS_LITERAL);
}

static inline float fl_erff_b(float x, fl_bounds b)
{
  float a = fabsf(x);
  float t, p, q;

  a = b.erf_hi < a ? b.erf_hi : a;
  t = a * a;
  p = 1.128379144e+00f + t * (2.036967506e-01f + t * (5.105739078e-02f +
      t * (3.840006310e-03f + t * (1.433697883e-04f +
      t * (-1.921970666e-06f + t * 1.909935147e-08f)))));
  q = 1.0f + t * (5.138535974e-01f + t * (1.165408497e-01f +
      t * (1.465661059e-02f + t * 9.836101621e-04f)));
  /* P/Q at the bound 4 is a little below 1; from 3.95 on erf rounds
   * to 1 in float */
  return fl_odd_rational(a > 3.95f ? b.one : a * p / q, x, b.one);
}

static inline float fl_erff(float x)
{
  return fl_erff_b(x, FL_BOUNDS_LITERAL);
}

/* 2^n exp(r), where t = c / ln 2 + 1.5 * 2^23 (n in its low bits) and
 * r = c - n ln 2: the polynomial and the exponent of every exp below. */
static inline float fl_expf_poly(float t, float r)
{
  float r2 = r * r, r4 = r2 * r2, p;
  uint32_t tb, pb;

  p = (1.0f + r * 1.000000038e+00f) +
      r2 * (5.000000047e-01f + r * 1.666641541e-01f) +
      r4 * ((4.166635277e-02f + r * 8.375134775e-03f) +
            r2 * 1.394111891e-03f);
  /* t's bits minus those of 1.5 * 2^23 are n (two's complement) */
  memcpy(&tb, &t, sizeof tb);
  memcpy(&pb, &p, sizeof pb);
  pb += (tb - 0x4B400000u) << 23;
  memcpy(&p, &pb, sizeof p);
  return p;
}

/* 2^n exp(r) for c in [lo, hi] (fl_expf's clamp bounds), or NaN: the
 * arithmetic of every exp below, without its range selects. */
static inline float fl_expf_core(float c)
{
  float t, n, r;

  /* round to nearest: adding 1.5 * 2^23 leaves no fraction bits */
  t = c * 1.44269504088896341f + 12582912.0f;
  n = t - 12582912.0f;
  r = c - n * 0.693145751953125f;
  r = r - n * 1.42860676533018700e-06f;
  return fl_expf_poly(t, r);
}

/* The clamps are maxps(lo, x) and minps(hi, c), which leave a NaN
 * alone as the selects after them need; a select of 0 stays literal
 * (it is one and-not, on any pipe). */
static inline float fl_expf_b(float x, fl_bounds b)
{
  float c = b.exp_lo > x ? b.exp_lo : x;
  float p;

  c = b.exp_hi < c ? b.exp_hi : c;
  p = fl_expf_core(c);
  p = x < b.exp_lo ? 0.0f : p;
  p = x > b.exp_hi ? INFINITY : p;
  return x != x ? x : p;
}

static inline float fl_expf(float x)
{
  return fl_expf_b(x, FL_BOUNDS_LITERAL);
}

/* The same function where the code generator has proved the argument
 * at most 0 or NaN (softmax's x - max(x); engine/backend/value_range.c):
 * the overflow side's clamp and select go, and the result is fl_expf's
 * to the bit.  Each select is two vector instructions of the few dozen
 * in a fused kernel's body. */
static inline float fl_expf_nonpos_b(float x, fl_bounds b)
{
  float c = b.exp_lo > x ? b.exp_lo : x;
  float p = fl_expf_core(c);

  p = x < b.exp_lo ? 0.0f : p;
  return x != x ? x : p;
}

static inline float fl_expf_nonpos(float x)
{
  return fl_expf_nonpos_b(x, FL_BOUNDS_LITERAL);
}

/* ... and where it is proved within [FL_EXPF_LO, FL_EXPF_HI] or NaN
 * (exp of 1.5 tanh(x) in samples/chain8.json): no range select at all,
 * 12% of chain8's time. */
static inline float fl_expf_in_range(float x)
{
  float p = fl_expf_core(x);

  return x != x ? x : p;
}

/* ... and where it is proved within [-FL_EXPF_SMALL, FL_EXPF_SMALL] or
 * NaN: n is at most 8 in magnitude, and with an FMA r = x - n ln 2 is
 * one instruction, ln 2 rounded to float: the product is exact inside
 * the FMA, so r is off by at most 8 * 1.9e-9 (ln 2's rounding error), a
 * quarter of a unit in the last place of exp, 3% of chain8's time.
 * Within a few units in the last place of fl_expf (test_math_rt).
 * Without an FMA the product would round, and the two-part reduction
 * stays. */
#define FL_EXPF_SMALL 5.5f

static inline float fl_expf_small(float x)
{
#ifdef __FMA__
  float t = x * 1.44269504088896341f + 12582912.0f;
  float n = t - 12582912.0f;
  float p = fl_expf_poly(t, fmaf(-n, 0.693147182464599609375f, x));
#else
  float p = fl_expf_core(x);
#endif

  return x != x ? x : p;
}

/* fl_stream16: the 16 floats of src (64-byte aligned, the block a
 * streamed loop staged) into dst with non-temporal stores, which write
 * whole lines to memory without first reading them into the caches
 * (write allocate) and without pushing other lines out.  The generated
 * code uses it only for a program output that no op reads and that is
 * larger than the cores' L2 caches together (annotate.c's
 * plan_stream).  A dst not on a 64-byte boundary (a caller's buffer),
 * or a compiler without these vector builtins, gets ordinary stores:
 * the same values either way.  fl_stream_fence orders the streamed
 * stores before the stores and loads that follow (they are weakly
 * ordered); a streamed loop ends with it. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)
typedef float fl_stream_v16 __attribute__((vector_size(64), may_alias));
#define FL_STREAM_LINE(dst, src) \
  __builtin_ia32_movntps512((dst), *(const fl_stream_v16 *)(src))
#elif defined(__GNUC__) && !defined(__clang__) && defined(__AVX__)
typedef float fl_stream_v8 __attribute__((vector_size(32), may_alias));
#define FL_STREAM_LINE(dst, src)                                         \
  (__builtin_ia32_movntps256((dst), *(const fl_stream_v8 *)(src)),      \
   __builtin_ia32_movntps256((dst) + 8, *(const fl_stream_v8 *)((src) + 8)))
#elif defined(__clang__) && defined(__SSE__)
typedef float fl_stream_v16 __attribute__((vector_size(64), may_alias));
#define FL_STREAM_LINE(dst, src)                                         \
  __builtin_nontemporal_store(*(const fl_stream_v16 *)(src),            \
                              (fl_stream_v16 *)(dst))
#endif

static inline void fl_stream16(float *restrict dst,
                               const float *restrict src)
{
#ifdef FL_STREAM_LINE
  if (((unsigned long)dst & 63) == 0) {
    FL_STREAM_LINE(dst, src);
    return;
  }
#endif
  for (int i = 0; i < 16; i++)
    dst[i] = src[i];
}

static inline void fl_stream_fence(void)
{
#if defined(__GNUC__) && defined(__SSE__)
  __builtin_ia32_sfence();
#endif
}
