/* The STREAM-like memory probe: the bandwidth this machine reaches on a
 * plain copy (b[i] = a[i]) and a triad (a[i] = b[i] + s * c[i]) over
 * arrays well past the last-level cache, the yardstick for the GB/s of
 * memory-bound generated kernels.  Compiled on its own with -O3
 * -march=native -fopenmp (the flags the runner gives generated code), so
 * the probe's loops are what the compiler makes of the simplest code.
 * Never prints: the caller does. */
#ifndef FL_BENCH_STREAM_H
#define FL_BENCH_STREAM_H

#include <stddef.h>

/* Bandwidth in GB/s (bytes read + written per second, write-allocate
 * traffic not counted, as STREAM does) over `repeats` runs. */
typedef struct stream_stat {
	double median, min, max;
	int repeats;
} stream_stat;

typedef struct stream_result {
	int threads;
	size_t bytes_per_array;
	stream_stat copy, triad;
} stream_result;

/* Runs the probe with `threads` OpenMP threads (0: the runtime's
 * default), copy and triad interleaved, `repeats` times each (at least
 * 3) after one untimed pass.  Returns 0, or -1 when the arrays cannot be
 * allocated. */
int stream_probe(int threads, int repeats, stream_result *r);

#endif
