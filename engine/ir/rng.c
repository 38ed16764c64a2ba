/* splitmix64 (Steele, Lea, Flood 2014): tiny, fast and good enough for
 * test inputs; its output depends only on integer arithmetic. */
#include "rng.h"

uint64_t fl_hash_string(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

fl_rng fl_rng_seed(uint64_t seed, const char *stream)
{
	fl_rng r;

	r.state = seed * 0x9e3779b97f4a7c15ull ^ fl_hash_string(stream);
	return r;
}

uint64_t fl_rng_next(fl_rng *r)
{
	uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

float fl_rng_uniform(fl_rng *r)
{
	/* 24 bits -> [0, 2^24) -> [-1, 1) in steps of 2^-23: exact in f32. */
	int32_t bits = (int32_t)(fl_rng_next(r) >> 40);

	return (float)(bits - (1 << 23)) / (float)(1 << 23);
}

int64_t fl_rng_below(fl_rng *r, int64_t n)
{
	return (int64_t)(fl_rng_next(r) % (uint64_t)n);
}
