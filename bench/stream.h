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

/* The copy as a contender of an interleaved comparison (interleave.h):
 * two arrays of the probe's size, first touched by all cores;
 * stream_copy_call runs one copy pass with the thread count set at the
 * time, stream_copy_bytes is what a pass reads and writes. */
typedef struct stream_copy {
	float *a, *b;
	size_t n;
} stream_copy;

int stream_copy_open(stream_copy *c);	/* 0, or -1: out of memory */
void stream_copy_call(void *c);
/* The same copy with non-temporal stores (whole lines written to memory
 * without reading them first), as generated code streams a large program
 * output; plain stores where the compiler has no such vector builtins
 * (stream_copy_nt_available says which). */
void stream_copy_nt_call(void *c);
int stream_copy_nt_available(void);
double stream_copy_bytes(const stream_copy *c);
void stream_copy_close(stream_copy *c);

#endif
