/* A STREAM-like copy probe: the memory bandwidth this machine reaches on
 * a plain parallel copy, the yardstick for generated kernels' GB/s.
 * Copies a 256 MiB array (well past any cache) with OpenMP; reports the
 * best of 10 runs as bytes read + written per second. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N ((size_t)64 << 20)	/* floats: 256 MiB per array */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void)
{
	float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
	double best = 1e30;

	if (!a || !b)
		return 1;
#pragma omp parallel for
	for (size_t i = 0; i < N; i++) {
		a[i] = (float)i;
		b[i] = 0;
	}
	for (int r = 0; r < 10; r++) {
		double t = now();

#pragma omp parallel for
		for (size_t i = 0; i < N; i++)
			b[i] = a[i];
		t = now() - t;
		if (t < best)
			best = t;
	}
	printf("copy bandwidth: %.1f GB/s (best of 10, %zu MiB copied, "
	       "check %.0f)\n", 2.0 * N * sizeof(float) / best / 1e9,
	       N * sizeof(float) >> 20, (double)b[N - 1]);
	free(a);
	free(b);
	return 0;
}
