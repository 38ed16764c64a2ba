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
 * L1 as layer 1 sized the tile); per block the tile's Y columns are packed
 * into FL_NR-column panels (contiguous, aligned, zero-padded at the
 * edges) and its X rows into FL_MR-row panels -- unless the reduction is
 * X's own contiguous run (a matmul's A) and no outer steps reuse the
 * panels, where the micro-kernel reads X in place (FL_X_ROWS) -- and
 * a register-blocked micro-kernel multiplies one FL_MR x FL_NR block of C
 * with FL_MR x FL_NR/FL_VL vector accumulators, storing (first block) or
 * adding (later blocks) the result.  The micro-kernel is written with
 * AVX-512 or AVX2+FMA wide vectors when the compiler targets them
 * (-march=native), else in plain C that the compiler may vectorise.
 * The packing buffer is per thread (each thread of the kernel's parallel
 * tile loop gets its own), allocated on first use, grown when a larger
 * tile needs it and then kept for the life of the thread: no allocation
 * per tile.  When it cannot be allocated the tile is computed by a plain
 * loop nest instead.
 *
 * A kernel whose contraction has a fused epilogue (bias, GELU, residual)
 * calls fl_ctile_open, fl_ctile_pack and fl_ctile_block instead: the same
 * blocking, but the last reduction block hands each finished FL_MR x
 * FL_NR block to the kernel, which applies the epilogue to it before
 * anything is stored. */
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

/* Where a micro-kernel reads X: row m of its block at xb + m * rs, step r
 * of the reduction at r * ss further on -- a packed panel (rs 1, ss
 * FL_MR) or, where the reduction is X's own contiguous run (a matmul's
 * A), X itself (rs its row stride, ss 1), which is then not packed at
 * all: packing it was a sixth of a BERT matmul's time (a scalar
 * interleave of six rows).  In place, rows past `lim` (the block's rows)
 * read row 0 again, their sums dropped; a packed panel is zero-padded,
 * and passes FL_MR, so that its rows are constant offsets the compiler
 * folds into the FMAs. */
#define FL_X_ROWS(xb, rs, lim) \
  const float *x0 = (xb), *x1 = (xb) + ((lim) > 1) * (rs); \
  const float *x2 = (xb) + ((lim) > 2) * 2 * (rs); \
  const float *x3 = (xb) + ((lim) > 3) * 3 * (rs); \
  const float *x4 = (xb) + ((lim) > 4) * 4 * (rs); \
  const float *x5 = (xb) + ((lim) > 5) * 5 * (rs);

#ifdef FL_VL
#define FL_ROW(m) \
  x = fl_vset1(x##m[k]); \
  a##m##0 = fl_vfma(x, y0, a##m##0); \
  if (w == 2) \
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

/* The sums of one FL_MR x FL_NR block over kc steps, in the accumulators
 * a<m><half>: X as FL_X_ROWS says, yp FL_NR values per step.  With w
 * (a constant where it is used) 1, only the first vector of each row:
 * the block's columns fit in one (a convolution's 16 output columns
 * under AVX-512), and the second half would be sums of padding. */
#define FL_MK_SUMS(kc, xb, rs, ss, lim, yp) \
  FL_X_ROWS(xb, rs, lim) \
  fl_vec a00 = fl_vzero(), a01 = fl_vzero(), a10 = fl_vzero(); \
  fl_vec a11 = fl_vzero(), a20 = fl_vzero(), a21 = fl_vzero(); \
  fl_vec a30 = fl_vzero(), a31 = fl_vzero(), a40 = fl_vzero(); \
  fl_vec a41 = fl_vzero(), a50 = fl_vzero(), a51 = fl_vzero(); \
  for (long r = 0; r < (kc); r++) { \
    const long k = r * (ss); \
    const fl_vec y0 = fl_vload(yp); \
    const fl_vec y1 = w == 2 ? fl_vload((yp) + FL_VL) : fl_vzero(); \
    fl_vec x; \
    FL_ROW(0) FL_ROW(1) FL_ROW(2) FL_ROW(3) FL_ROW(4) FL_ROW(5) \
    yp += FL_NR; \
  }
#define FL_ADD_PART(m) \
  a##m##0 = fl_vadd(a##m##0, fl_vloadu(cp + m * csi)); \
  a##m##1 = fl_vadd(a##m##1, fl_vloadu(cp + m * csi + FL_VL));

/* One FL_MR x FL_NR block of C (its mi x nj corner) from kc steps, w
 * vectors wide. */
static inline void fl_mk_w(long kc, const float *xb, long rs, long ss,
                           const float *restrict yp, float *restrict c,
                           long csi, long csj, int mi, int nj, int first,
                           int w)
{
  FL_MK_SUMS(kc, xb, rs, ss, ss == 1 ? mi : FL_MR, yp)
  if (mi == FL_MR && nj == FL_NR && csj == 1) {
    FL_PUT(0) FL_PUT(1) FL_PUT(2) FL_PUT(3) FL_PUT(4) FL_PUT(5)
  } else {
    float t[FL_MR * FL_NR] __attribute__((aligned(64)));

    FL_SPILL(0) FL_SPILL(1) FL_SPILL(2) FL_SPILL(3) FL_SPILL(4) FL_SPILL(5)
    fl_mk_put(t, c, csi, csj, mi, nj, first);
  }
}

static inline void fl_mk(long kc, const float *xb, long rs, long ss,
                         const float *restrict yp, float *restrict c,
                         long csi, long csj, int mi, int nj, int first)
{
  if (nj <= FL_VL)
    fl_mk_w(kc, xb, rs, ss, yp, c, csi, csj, mi, nj, first, 1);
  else
    fl_mk_w(kc, xb, rs, ss, yp, c, csi, csj, mi, nj, first, 2);
}

/* The finished block into t (FL_NR floats per row, 64-byte aligned): the
 * sums of kc steps plus the partial sums at cp (the mi x nj corner of C),
 * or none when cp is NULL. */
static inline void fl_mk_last_w(long kc, const float *xb, long rs, long ss,
                                const float *restrict yp, const float *cp,
                                long csi, long csj, int mi, int nj,
                                float *restrict t, int w)
{
  FL_MK_SUMS(kc, xb, rs, ss, ss == 1 ? mi : FL_MR, yp)
  if (cp && mi == FL_MR && nj == FL_NR && csj == 1) {
    FL_ADD_PART(0) FL_ADD_PART(1) FL_ADD_PART(2) FL_ADD_PART(3)
    FL_ADD_PART(4) FL_ADD_PART(5)
    cp = NULL;
  }
  FL_SPILL(0) FL_SPILL(1) FL_SPILL(2) FL_SPILL(3) FL_SPILL(4) FL_SPILL(5)
  for (int m = 0; cp && m < mi; m++)
    for (int v = 0; v < nj; v++)
      t[m * FL_NR + v] += cp[m * csi + v * csj];
}

static inline void fl_mk_last(long kc, const float *xb, long rs, long ss,
                              const float *restrict yp, const float *cp,
                              long csi, long csj, int mi, int nj,
                              float *restrict t)
{
  if (nj <= FL_VL)
    fl_mk_last_w(kc, xb, rs, ss, yp, cp, csi, csj, mi, nj, t, 1);
  else
    fl_mk_last_w(kc, xb, rs, ss, yp, cp, csi, csj, mi, nj, t, 2);
}
#else
/* The sums into t (FL_MR x FL_NR, zeroed first), in plain C. */
static inline void fl_mk_sums(long kc, const float *xb, long rs, long ss,
                              const float *restrict yp, int mi,
                              float *restrict t)
{
  FL_X_ROWS(xb, rs, ss == 1 ? mi : FL_MR)
  const float *xr[FL_MR] = {x0, x1, x2, x3, x4, x5};

  for (int e = 0; e < FL_MR * FL_NR; e++)
    t[e] = 0.0f;
  for (long r = 0; r < kc; r++) {
    for (int m = 0; m < FL_MR; m++)
      for (int v = 0; v < FL_NR; v++)
        t[m * FL_NR + v] += xr[m][r * ss] * yp[v];
    yp += FL_NR;
  }
}

static inline void fl_mk(long kc, const float *xb, long rs, long ss,
                         const float *restrict yp, float *restrict c,
                         long csi, long csj, int mi, int nj, int first)
{
  float t[FL_MR * FL_NR];

  fl_mk_sums(kc, xb, rs, ss, yp, mi, t);
  fl_mk_put(t, c, csi, csj, mi, nj, first);
}

static inline void fl_mk_last(long kc, const float *xb, long rs, long ss,
                              const float *restrict yp, const float *cp,
                              long csi, long csj, int mi, int nj,
                              float *restrict t)
{
  fl_mk_sums(kc, xb, rs, ss, yp, mi, t);
  for (int m = 0; cp && m < mi; m++)
    for (int v = 0; v < nj; v++)
      t[m * FL_NR + v] += cp[m * csi + v * csj];
}
#endif

/* Whether the flat reduction step k is X's offset k: the reduction
 * dimensions (those of more than one step) are X's contiguous innermost
 * run, in order -- then X is read in place (FL_X_ROWS). */
static inline int fl_x_flat(const long *rn, const long *rx)
{
  long s = 1;

  for (int d = 2; d >= 0; d--) {
    if (rn[d] > 1 && rx[d] != s)
      return 0;
    s *= rn[d];
  }
  return 1;
}

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

/* One tile of a contraction while it is computed: what fl_contract_tile
 * was called with, and for a kernel that takes the finished blocks one by
 * one (fl_ctile_open) the last reduction block, packed. */
typedef struct fl_ctile {
  long M, N, NO;
  float *c;
  long csi, csj, cso;
  const float *x;
  long xsi;
  const float *y;
  long ysj, yso;
  const long *rn, *rx, *ry;
  long R, mb, nb;
  int xflat;            /* X read in place (fl_x_flat), not packed */
  float *xp, *yp;       /* the packed panels (xp: the buffer, where Y's
                           start when X is not packed); NULL: no buffer
                           could be had, the tile is computed in C by
                           plain loops */
  long k0, kc;          /* fl_ctile_open: the last block's steps */
  long offy[FL_KC];     /* and their offsets in Y (fl_contract_tile keeps
                           its own: a pointer into t passed to a call
                           would make the compiler keep t in memory) */
} fl_ctile;

/* Sets t up for the tile (the packing buffer included); 0 when the tile
 * is empty. */
/* The tile's steps are inlined into each caller (FL_INLINE), and
 * fl_contract_tile's record never has its address passed to a call, so
 * that the compiler keeps it in registers and sees the tile's shape
 * where a kernel passes constants -- a convolution's 16 columns, 8 output
 * rows -- and specialises the loops for it (measured on resnet's 1x1
 * convolution of 16 x 16 pixels: with the record in memory, the kernel
 * took twice as long). */
#define FL_INLINE static inline __attribute__((always_inline))

FL_INLINE int fl_ctile_init(fl_ctile *t, long M, long N, long NO, float *c,
                         long csi, long csj, long cso, const float *x,
                         long xsi, const float *y, long ysj, long yso,
                         const long *rn, const long *rx, const long *ry)
{
  long kmax, xlen;

  if (M <= 0 || N <= 0 || NO <= 0)
    return 0;
  t->M = M, t->N = N, t->NO = NO, t->c = c, t->csi = csi, t->csj = csj;
  t->cso = cso, t->x = x, t->xsi = xsi, t->y = y, t->ysj = ysj;
  t->yso = yso, t->rn = rn, t->rx = rx, t->ry = ry;
  t->R = rn[0] * rn[1] * rn[2];
  t->mb = (M + FL_MR - 1) / FL_MR;
  t->nb = (N + FL_NR - 1) / FL_NR;
  t->k0 = t->kc = 0;
  /* in place only without outer steps: a convolution's output rows
     (NO > 1) read the weights once per row, and packed once per block
     they were twice as fast (resnet's 1x1 and 3x3 convolutions) */
  t->xflat = NO == 1 && fl_x_flat(rn, rx);
  kmax = fl_min_l(t->R, FL_KC);
  /* the X panels first, rounded up to 16 floats so that Y's stay aligned
     for vector loads */
  xlen = t->xflat ? 0 : (kmax * t->mb * FL_MR + 15) / 16 * 16;
  t->xp = t->R > 0 ? fl_pack_space(xlen + kmax * t->nb * FL_NR) : NULL;
  t->yp = t->xp ? t->xp + xlen : NULL;
  return 1;
}

/* The whole tile by plain loops, into C. */
FL_INLINE void fl_ctile_plain(const fl_ctile *t)
{
  for (long o = 0; o < t->NO; o++)
    fl_contract_plain(t->M, t->N, t->c + o * t->cso, t->csi, t->csj, t->x,
                      t->xsi, t->y + o * t->yso, t->ysj, t->rn, t->rx, t->ry);
}

/* Rows and columns of block (ib, jb). */
static inline int fl_ctile_rows(const fl_ctile *t, long ib)
{
  return (int)fl_min_l(FL_MR, t->M - ib * FL_MR);
}

static inline int fl_ctile_cols(const fl_ctile *t, long jb)
{
  return (int)fl_min_l(FL_NR, t->N - jb * FL_NR);
}

/* Block (ib, jb) of the tile's C at co from reduction steps k0 .. k0+kc-1
 * (their Y panels packed): stored when first, else added. */
FL_INLINE void fl_ctile_mk(const fl_ctile *t, long k0, long kc,
                               float *co, long ib, long jb, int first)
{
  const float *yp = t->yp + jb * kc * FL_NR;
  float *c = co + ib * FL_MR * t->csi + jb * FL_NR * t->csj;
  const int mi = fl_ctile_rows(t, ib), nj = fl_ctile_cols(t, jb);

  if (t->xflat)
    fl_mk(kc, t->x + ib * FL_MR * t->xsi + k0, t->xsi, 1, yp, c, t->csi,
          t->csj, mi, nj, first);
  else
    fl_mk(kc, t->xp + ib * kc * FL_MR, 1, FL_MR, yp, c, t->csi, t->csj, mi,
          nj, first);
}

/* Reduction steps k0 .. k0+kc-1 of the whole tile into C: stored by the
 * first block, added by later ones; their offsets in Y into offy. */
FL_INLINE void fl_ctile_reduce(fl_ctile *t, long *offy, long k0, long kc)
{
  long offx[FL_KC];

  fl_red_offsets(k0, kc, t->rn, t->rx, t->ry, offx, offy);
  if (!t->xflat)
    fl_pack_x(t->xp, t->x, t->xsi, t->M, kc, offx);
  for (long o = 0; o < t->NO; o++) {
    float *co = t->c + o * t->cso;

    fl_pack_y(t->yp, t->y + o * t->yso, t->ysj, t->N, kc, offy);
    /* a Y panel stays in L1 while every X panel passes over it */
    for (long jb = 0; jb < t->nb; jb++)
      for (long ib = 0; ib < t->mb; ib++)
        fl_ctile_mk(t, k0, kc, co, ib, jb, k0 == 0);
  }
}

static void fl_contract_tile(long M, long N, long NO, float *c, long csi,
                             long csj, long cso, const float *x, long xsi,
                             const float *y, long ysj, long yso,
                             const long *rn, const long *rx, const long *ry)
{
  fl_ctile t;
  long offy[FL_KC];

  if (!fl_ctile_init(&t, M, N, NO, c, csi, csj, cso, x, xsi, y, ysj, yso,
                     rn, rx, ry))
    return;
  if (!t.xp) {
    fl_ctile_plain(&t);
    return;
  }
  for (long k0 = 0; k0 < t.R; k0 += FL_KC)
    fl_ctile_reduce(&t, offy, k0, fl_min_l(t.R - k0, FL_KC));
}

/* For a kernel that applies its epilogue to each block of the result
 * while the block is still in registers: every reduction block but the
 * last is added up in C, and the last one's X panels are packed.  The
 * kernel then runs, for each outer step o, fl_ctile_pack and, block by
 * block (columns jb outside rows ib, as above), fl_ctile_block.  0 when
 * the tile is empty. */
static int fl_ctile_open(fl_ctile *t, long M, long N, long NO, float *c,
                         long csi, long csj, long cso, const float *x,
                         long xsi, const float *y, long ysj, long yso,
                         const long *rn, const long *rx, const long *ry)
{
  /* the earlier blocks on a record of this call's own, as in
     fl_contract_tile (the kernel's, whose address the kernel holds,
     would stay in memory: measured, MICRO 2020's conv + relu 1.3x
     slower than the conv and relu apart); handed over at the end */
  fl_ctile u;
  long offx[FL_KC], offy[FL_KC];

  if (!fl_ctile_init(&u, M, N, NO, c, csi, csj, cso, x, xsi, y, ysj, yso,
                     rn, rx, ry))
    return 0;
  if (!u.xp) {
    fl_ctile_plain(&u);
    *t = u;
    return 1;
  }
  u.k0 = (u.R - 1) / FL_KC * FL_KC;
  u.kc = u.R - u.k0;
  for (long k0 = 0; k0 < u.k0; k0 += FL_KC)
    fl_ctile_reduce(&u, offy, k0, FL_KC);
  fl_red_offsets(u.k0, u.kc, rn, rx, ry, offx, offy);
  if (!u.xflat)
    fl_pack_x(u.xp, x, xsi, M, u.kc, offx);
  *t = u;
  memcpy(t->offy, offy, sizeof(long) * (size_t)u.kc);
  return 1;
}

/* The last block's Y panels for outer step o. */
FL_INLINE void fl_ctile_pack(fl_ctile *t, long o)
{
  if (t->xp)
    fl_pack_y(t->yp, t->y + o * t->yso, t->ysj, t->N, t->kc, t->offy);
}

/* The finished block (ib, jb) of outer step o into r (r[m * FL_NR + v]
 * for its rows m and columns v): the last reduction block's sums plus
 * what the earlier blocks left in C.  C is written only when `store`
 * (another reader than the epilogue needs it). */
FL_INLINE void fl_ctile_block(const fl_ctile *t, long o, long ib, long jb,
                           float *restrict r, int store)
{
  const int mi = fl_ctile_rows(t, ib), nj = fl_ctile_cols(t, jb);
  float *co = t->c + o * t->cso + ib * FL_MR * t->csi + jb * FL_NR * t->csj;

  if (!t->xp) {
    for (int m = 0; m < mi; m++)
      for (int v = 0; v < nj; v++)
        r[m * FL_NR + v] = co[m * t->csi + v * t->csj];
    return;
  }
  if (t->xflat)
    fl_mk_last(t->kc, t->x + ib * FL_MR * t->xsi + t->k0, t->xsi, 1,
               t->yp + jb * t->kc * FL_NR, t->k0 ? co : NULL, t->csi, t->csj,
               mi, nj, r);
  else
    fl_mk_last(t->kc, t->xp + ib * t->kc * FL_MR, 1, FL_MR,
               t->yp + jb * t->kc * FL_NR, t->k0 ? co : NULL, t->csi, t->csj,
               mi, nj, r);
  if (store)
    fl_mk_put(r, co, t->csi, t->csj, mi, nj, 1);
}
