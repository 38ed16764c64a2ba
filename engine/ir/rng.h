/* Deterministic pseudo-random numbers: the same bits on every machine and
 * every run, so interpreter inputs (and therefore checksums) are stable.
 * splitmix64 over a 64-bit state; floats are built from 24 random bits so
 * the conversion is exact. */
#ifndef FL_RNG_H
#define FL_RNG_H

#include <stdint.h>

typedef struct fl_rng {
	uint64_t state;
} fl_rng;

/* FNV-1a of a string, for deriving per-tensor streams from names. */
uint64_t fl_hash_string(const char *s);

fl_rng fl_rng_seed(uint64_t seed, const char *stream);
uint64_t fl_rng_next(fl_rng *r);

/* Uniform in [-1, 1), a multiple of 2^-23. */
float fl_rng_uniform(fl_rng *r);

/* Uniform integer in [0, n), n >= 1. */
int64_t fl_rng_below(fl_rng *r, int64_t n);

#endif
