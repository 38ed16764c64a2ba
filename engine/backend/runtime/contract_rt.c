/* Contraction runtime: the text below is not compiled into fuselab; it is
 * checked by `make` as C of its own (see the Makefile's rule for
 * contract_rt) and copied into every generated translation unit by
 * contract.c (fl_cg_contract_prologue), so what the generated kernels call
 * is code the project compiles and tests.
 *
 * fl_contract_tile computes, for one tile of a contraction (matmul,
 * batched matmul, conv2d),
 *     C[o*cso + i*csi + j*csj] =
 *         sum over r of X[i*xsi + offx(r)] * Y[o*yso + j*ysj + offy(r)]
 * for 0 <= o < NO, 0 <= i < M, 0 <= j < N, where r runs over up to three reduction
 * dimensions rn[0..2] with strides rx[] in X and ry[] in Y (r2 fastest).
 * X does not vary along j and Y does not vary along i: X is broadcast
 * into every lane of a vector, Y is loaded along j -- rows of a matmul's
 * A and columns of B, or a conv's output channels (weights) and output
 * positions (input pixels).
 *
 * As in BLIS: the reduction is cut into blocks of FL_KC (sized from the
 * L1 as layer 1 sized the tile); per block the
 * tile's X rows are packed into FL_MR-row panels and its Y columns into
 * FL_NR-column panels (contiguous, aligned, zero-padded at the edges), and
 * a register-blocked micro-kernel multiplies one FL_MR x FL_NR block of C
 * with FL_MR x FL_NR/FL_VL vector accumulators, storing (first block) or
 * adding (later blocks) the result.  The micro-kernel is written with
 * AVX-512 or AVX2+FMA wide vectors when the compiler targets them
 * (-march=native), else in plain C that the compiler may vectorise.
 * The packing buffer is per thread (each thread of the kernel's parallel
 * tile loop gets its own), allocated on first use, grown when a larger
 * tile needs it and then kept for the life of the thread: no allocation
 * per tile.  When it cannot be allocated the tile is computed by a plain
 * loop nest instead. */
#include <stdlib.h>
#include <string.h>

/* The micro-kernel's vectors are GNU C vector types, not <immintrin.h>
 * intrinsics: with -march=native that header alone is about 0.5 s of
 * every compile of a program with a contraction (a third of it), and the
 * operations below are the same instructions.  a * b + c is one FMA: GNU
 * C contracts it (GCC's -ffp-contract=fast outside ISO modes, clang's
 * default within an expression).  may_alias as in __m256/__m512: the
 * vectors are read from and written to float arrays. */
#if defined(__AVX512F__)
#define FL_VL 16
#elif defined(__AVX2__) && defined(__FMA__)
#define FL_VL 8
#endif

#ifdef FL_VL
typedef float fl_vec __attribute__((vector_size(FL_VL * 4), may_alias));
typedef float fl_uvec __attribute__((vector_size(FL_VL * 4), may_alias,
                                     aligned(4)));
#define fl_vzero() ((fl_vec){0})
#define fl_vload(p) (*(const fl_vec *)(p))
#define fl_vloadu(p) ((fl_vec)*(const fl_uvec *)(p))
#define fl_vstore(p, v) (*(fl_vec *)(p) = (v))
#define fl_vstoreu(p, v) (*(fl_uvec *)(p) = (v))
#define fl_vset1(x) fl_vbroadcast(x)
#define fl_vfma(a, b, c) ((a) * (b) + (c))
#define fl_vadd(a, b) ((a) + (b))

/* x in every lane: one broadcast (0 + x would cost an add, for -0.0; a
 * loop over the lanes, inserts). */
static inline fl_vec fl_vbroadcast(float x)
{
#if FL_VL == 16
  return (fl_vec){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
#else
  return (fl_vec){x, x, x, x, x, x, x, x};
#endif
}
#endif

#define FL_MR 6
#ifdef FL_VL
#define FL_NR (2 * FL_VL)
#else
#define FL_NR 16
#endif
/* The reduction block: a KC x FL_NR panel of Y fills half of the L1 data
   cache, as layer 1 assumed when it sized the tile.  The generating
   fuselab defines FL_L1D, the L1 it read from the machine, above this
   text; 32 KiB otherwise. */
#ifndef FL_L1D
#define FL_L1D 32768
#endif
#define FL_KC_RAW (FL_L1D / 2 / (FL_NR * 4))
#define FL_KC (FL_KC_RAW < 64 ? 64 : FL_KC_RAW > 1024 ? 1024 : FL_KC_RAW)

static _Thread_local float *fl_pack_buf;
static _Thread_local long fl_pack_cap;

/* n floats of this thread's packing buffer (64-byte aligned), or NULL. */
static inline float *fl_pack_space(long n)
{
  void *p = NULL;

  if (n <= fl_pack_cap)
    return fl_pack_buf;
  free(fl_pack_buf);
  fl_pack_buf = NULL;
  fl_pack_cap = 0;
  if (posix_memalign(&p, 64, (size_t)n * sizeof(float)) != 0)
    return NULL;
  fl_pack_buf = p;
  fl_pack_cap = n;
  return fl_pack_buf;
}

/* Stores (first) or adds block t of FL_MR x FL_NR into the mi x nj corner
 * of C. */
static inline void fl_mk_put(const float *t, float *c, long csi, long csj,
                             int mi, int nj, int first)
{
  for (int m = 0; m < mi; m++)
    for (int v = 0; v < nj; v++) {
      float *e = c + m * csi + v * csj;

      *e = first ? t[m * FL_NR + v] : *e + t[m * FL_NR + v];
    }
}

#ifdef FL_VL
#define FL_ROW(m) \
  x = fl_vset1(xp[m]); \
  a##m##0 = fl_vfma(x, y0, a##m##0); \
  a##m##1 = fl_vfma(x, y1, a##m##1);
#define FL_PUT(m) \
  if (first) { \
    fl_vstoreu(c + m * csi, a##m##0); \
    fl_vstoreu(c + m * csi + FL_VL, a##m##1); \
  } else { \
    fl_vstoreu(c + m * csi, fl_vadd(fl_vloadu(c + m * csi), a##m##0)); \
    fl_vstoreu(c + m * csi + FL_VL, \
               fl_vadd(fl_vloadu(c + m * csi + FL_VL), a##m##1)); \
  }
#define FL_SPILL(m) \
  fl_vstore(t + m * FL_NR, a##m##0); \
  fl_vstore(t + m * FL_NR + FL_VL, a##m##1);

/* One FL_MR x FL_NR block of C from kc packed steps: xp holds FL_MR values
 * per step, yp FL_NR. */
static inline void fl_mk(long kc, const float *restrict xp,
                         const float *restrict yp, float *restrict c,
                         long csi, long csj, int mi, int nj, int first)
{
  fl_vec a00 = fl_vzero(), a01 = fl_vzero(), a10 = fl_vzero();
  fl_vec a11 = fl_vzero(), a20 = fl_vzero(), a21 = fl_vzero();
  fl_vec a30 = fl_vzero(), a31 = fl_vzero(), a40 = fl_vzero();
  fl_vec a41 = fl_vzero(), a50 = fl_vzero(), a51 = fl_vzero();

  for (long r = 0; r < kc; r++) {
    const fl_vec y0 = fl_vload(yp), y1 = fl_vload(yp + FL_VL);
    fl_vec x;

    FL_ROW(0) FL_ROW(1) FL_ROW(2) FL_ROW(3) FL_ROW(4) FL_ROW(5)
    xp += FL_MR;
    yp += FL_NR;
  }
  if (mi == FL_MR && nj == FL_NR && csj == 1) {
    FL_PUT(0) FL_PUT(1) FL_PUT(2) FL_PUT(3) FL_PUT(4) FL_PUT(5)
  } else {
    float t[FL_MR * FL_NR] __attribute__((aligned(64)));

    FL_SPILL(0) FL_SPILL(1) FL_SPILL(2) FL_SPILL(3) FL_SPILL(4) FL_SPILL(5)
    fl_mk_put(t, c, csi, csj, mi, nj, first);
  }
}
#else
static inline void fl_mk(long kc, const float *restrict xp,
                         const float *restrict yp, float *restrict c,
                         long csi, long csj, int mi, int nj, int first)
{
  float t[FL_MR * FL_NR] = {0};

  for (long r = 0; r < kc; r++) {
    for (int m = 0; m < FL_MR; m++)
      for (int v = 0; v < FL_NR; v++)
        t[m * FL_NR + v] += xp[m] * yp[v];
    xp += FL_MR;
    yp += FL_NR;
  }
  fl_mk_put(t, c, csi, csj, mi, nj, first);
}
#endif

/* Offsets in X and Y of the kc reduction steps from flat step k0. */
static inline void fl_red_offsets(long k0, long kc, const long *rn,
                                  const long *rx, const long *ry,
                                  long *offx, long *offy)
{
  long r2 = k0 % rn[2], r1 = (k0 / rn[2]) % rn[1], r0 = k0 / (rn[2] * rn[1]);

  for (long k = 0; k < kc; k++) {
    offx[k] = r0 * rx[0] + r1 * rx[1] + r2 * rx[2];
    offy[k] = r0 * ry[0] + r1 * ry[1] + r2 * ry[2];
    if (++r2 == rn[2]) {
      r2 = 0;
      if (++r1 == rn[1]) {
        r1 = 0;
        r0++;
      }
    }
  }
}

/* The tile by plain loops: when no packing buffer could be had. */
static void fl_contract_plain(long M, long N, float *c, long csi, long csj,
                              const float *x, long xsi, const float *y,
                              long ysj, const long *rn, const long *rx,
                              const long *ry)
{
  for (long i = 0; i < M; i++)
    for (long j = 0; j < N; j++) {
      float s = 0.0f;

      for (long r0 = 0; r0 < rn[0]; r0++)
        for (long r1 = 0; r1 < rn[1]; r1++)
          for (long r2 = 0; r2 < rn[2]; r2++)
            s += x[i * xsi + r0 * rx[0] + r1 * rx[1] + r2 * rx[2]] *
                 y[j * ysj + r0 * ry[0] + r1 * ry[1] + r2 * ry[2]];
      c[i * csi + j * csj] = s;
    }
}

static inline long fl_min_l(long a, long b)
{
  return a < b ? a : b;
}

/* The tile's X rows for kc reduction steps (at offx) into FL_MR-row
 * panels: panel ib holds, step by step, the FL_MR values of rows
 * ib*FL_MR.. (zero past M).  Packed once for all NO outer steps (a
 * conv's output rows share its weights).  A full panel is written in
 * the order it is stored, step after step, reading its FL_MR rows side
 * by side: FL_MR streams, each along a row, where the reduction is
 * (nearly) contiguous -- FL_MR lines in flight, while going down one
 * row for the whole block and then the next stored every value
 * FL_MR floats after the last, across the whole panel, FL_MR times
 * (perf on BERT's 128x768x768: a fifth of the tile's time). */
static void fl_pack_x(float *restrict xp, const float *x, long xsi, long M,
                      long kc, const long *offx)
{
  for (long i0 = 0; i0 < M; i0 += FL_MR) {
    float *restrict dst = xp + i0 / FL_MR * kc * FL_MR;
    const long mi = fl_min_l(FL_MR, M - i0);
    const float *row[FL_MR];

    for (long m = 0; m < FL_MR; m++)
      row[m] = x + (i0 + (m < mi ? m : 0)) * xsi;
    for (long k = 0; k < kc; k++) {
      const long off = offx[k];

      for (long m = 0; m < FL_MR; m++)
        dst[k * FL_MR + m] = m < mi ? row[m][off] : 0.0f;
    }
  }
}

/* Y's N columns for kc reduction steps (at offy) into FL_NR-column
 * panels, panel jb holding step by step the FL_NR values of columns
 * jb*FL_NR.. (zero past N).  Step by step of the reduction, so that Y is
 * read along its rows (a matmul's B: N contiguous floats per step); a
 * full, contiguous piece is one fixed-size copy (vector moves) where a
 * copy of nj floats was a loop of its own per piece.  The rows of Y lie
 * a whole row apart, mostly in L3 (B of 768 x 768 is 2.25 MiB), and the
 * copy waited on each: the row FL_PACK_AHEAD steps on is prefetched
 * (perf on BERT's 128x768x768 matmul: the copy went from a sixth of the
 * tile's time to under a twentieth; the kernel 0.86 -> 0.72 of its time
 * before both packing changes, median of 100 interleaved calls). */
#define FL_PACK_AHEAD 8
static void fl_pack_y(float *restrict yp, const float *y, long ysj, long N,
                      long kc, const long *offy)
{
  const long nfull = ysj == 1 ? N / FL_NR : 0;

  for (long k = 0; k < kc; k++) {
    const float *src = y + offy[k];

    if (k + FL_PACK_AHEAD < kc)
      for (long jb = 0; jb < nfull; jb++)
        __builtin_prefetch(y + offy[k + FL_PACK_AHEAD] + jb * FL_NR);
    for (long jb = 0; jb < nfull; jb++)
      memcpy(yp + (jb * kc + k) * FL_NR, src + jb * FL_NR,
             FL_NR * sizeof(float));
    for (long j0 = nfull * FL_NR; j0 < N; j0 += FL_NR) {
      float *dst = yp + (j0 / FL_NR * kc + k) * FL_NR;
      const long nj = fl_min_l(FL_NR, N - j0);

      for (long v = 0; v < FL_NR; v++)
        dst[v] = v < nj ? src[(j0 + v) * ysj] : 0.0f;
    }
  }
}

static void fl_contract_tile(long M, long N, long NO, float *c, long csi,
                             long csj, long cso, const float *x, long xsi,
                             const float *y, long ysj, long yso,
                             const long *rn, const long *rx, const long *ry)
{
  const long R = rn[0] * rn[1] * rn[2];
  const long mb = (M + FL_MR - 1) / FL_MR, nb = (N + FL_NR - 1) / FL_NR;
  const long kmax = fl_min_l(R, FL_KC);
  /* the X panels first, rounded up to 16 floats so that Y's stay
     aligned for vector loads */
  const long xlen = (kmax * mb * FL_MR + 15) / 16 * 16;
  long offx[FL_KC], offy[FL_KC];
  float *xp, *yp;

  if (M <= 0 || N <= 0 || NO <= 0)
    return;
  xp = R > 0 ? fl_pack_space(xlen + kmax * nb * FL_NR) : NULL;
  if (!xp) {
    for (long o = 0; o < NO; o++)
      fl_contract_plain(M, N, c + o * cso, csi, csj, x, xsi, y + o * yso,
                        ysj, rn, rx, ry);
    return;
  }
  yp = xp + xlen;
  for (long k0 = 0; k0 < R; k0 += FL_KC) {
    const long kc = fl_min_l(R - k0, FL_KC);

    fl_red_offsets(k0, kc, rn, rx, ry, offx, offy);
    fl_pack_x(xp, x, xsi, M, kc, offx);
    for (long o = 0; o < NO; o++) {
      const float *yo = y + o * yso;
      float *co = c + o * cso;

      fl_pack_y(yp, yo, ysj, N, kc, offy);
      /* a Y panel stays in L1 while every X panel passes over it */
      for (long jb = 0; jb < nb; jb++)
        for (long ib = 0; ib < mb; ib++)
          fl_mk(kc, xp + ib * kc * FL_MR, yp + jb * kc * FL_NR,
                co + ib * FL_MR * csi + jb * FL_NR * csj, csi, csj,
                (int)fl_min_l(FL_MR, M - ib * FL_MR),
                (int)fl_min_l(FL_NR, N - jb * FL_NR), k0 == 0);
    }
  }
}
