/* The STREAM-like copy and triad probe (stream.h).  Three arrays of
 * STREAM_FLOATS floats (128 MiB each: four times any L3 this project
 * meets, so every pass goes to memory); each timed pass is one OpenMP
 * loop, copy and triad alternating so that both see the same machine
 * load.  Built with -DSTREAM_MAIN it is also the stand-alone probe that
 * bench_kernels.sh runs before the kernel ladders. */
#include "stream.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define STREAM_FLOATS ((size_t)32 << 20)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median, min and max of the GB/s of n passes moving `bytes` each, from
 * their seconds t[] (sorted in place). */
static stream_stat stat_of(double *t, int n, double bytes)
{
	stream_stat s;

	qsort(t, (size_t)n, sizeof *t, cmp_double);
	s.repeats = n;
	s.min = bytes / t[n - 1] / 1e9;
	s.max = bytes / t[0] / 1e9;
	s.median = bytes / (n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]))
		   / 1e9;
	return s;
}

static void copy(float *restrict b, const float *restrict a, size_t n)
{
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < n; i++)
		b[i] = a[i];
}

static void triad(float *restrict a, const float *restrict b,
		  const float *restrict c, float s, size_t n)
{
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < n; i++)
		a[i] = b[i] + s * c[i];
}

int stream_probe(int threads, int repeats, stream_result *r)
{
	size_t n = STREAM_FLOATS;
	float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b),
	      *c = malloc(n * sizeof *c);
	double *tc = malloc((size_t)(repeats < 3 ? 3 : repeats) * sizeof *tc),
	       *tt = malloc((size_t)(repeats < 3 ? 3 : repeats) * sizeof *tt);
	int saved = omp_get_max_threads(), rc = -1;

	if (repeats < 3)
		repeats = 3;
	if (!a || !b || !c || !tc || !tt)
		goto out;
	if (threads > 0)
		omp_set_num_threads(threads);
	r->threads = omp_get_max_threads();
	r->bytes_per_array = n * sizeof *a;
	/* First touch by the threads that will use the pages. */
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < n; i++) {
		a[i] = 1.0f;
		b[i] = 2.0f;
		c[i] = 0.5f;
	}
	copy(b, a, n);
	triad(a, b, c, 3.0f, n);
	for (int k = 0; k < repeats; k++) {
		double t = now();

		copy(b, a, n);
		tc[k] = now() - t;
		t = now();
		triad(a, b, c, 3.0f, n);
		tt[k] = now() - t;
	}
	r->copy = stat_of(tc, repeats, 2.0 * (double)(n * sizeof *a));
	r->triad = stat_of(tt, repeats, 3.0 * (double)(n * sizeof *a));
	rc = 0;
out:
	omp_set_num_threads(saved);
	free(a);
	free(b);
	free(c);
	free(tc);
	free(tt);
	return rc;
}

int stream_copy_open(stream_copy *c)
{
	c->n = STREAM_FLOATS;
	c->a = malloc(c->n * sizeof *c->a);
	c->b = malloc(c->n * sizeof *c->b);
	if (!c->a || !c->b) {
		stream_copy_close(c);
		return -1;
	}
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < c->n; i++) {
		c->a[i] = 1.0f;
		c->b[i] = 2.0f;
	}
	return 0;
}

void stream_copy_call(void *c)
{
	stream_copy *s = c;

	copy(s->b, s->a, s->n);
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)
typedef float nt_vec __attribute__((vector_size(64), may_alias));
typedef float nt_uvec __attribute__((vector_size(64), may_alias, aligned(4)));
#define NT_FLOATS 16
#define NT_STORE(dst, v) __builtin_ia32_movntps512((dst), (v))
#elif defined(__GNUC__) && !defined(__clang__) && defined(__AVX__)
typedef float nt_vec __attribute__((vector_size(32), may_alias));
typedef float nt_uvec __attribute__((vector_size(32), may_alias, aligned(4)));
#define NT_FLOATS 8
#define NT_STORE(dst, v) __builtin_ia32_movntps256((dst), (v))
#endif

int stream_copy_nt_available(void)
{
#ifdef NT_STORE
	return 1;
#else
	return 0;
#endif
}

/* The arrays come from malloc (16-byte aligned): each thread's chunk
 * starts with plain stores up to a 64-byte boundary. */
void stream_copy_nt_call(void *c)
{
	stream_copy *s = c;
	float *restrict b = s->b;
	const float *restrict a = s->a;
	size_t n = s->n;

#ifdef NT_STORE
#pragma omp parallel
	{
		int nt = omp_get_num_threads(), id = omp_get_thread_num();
		size_t lo = n / (size_t)nt * (size_t)id,
		       hi = id == nt - 1 ? n : n / (size_t)nt * (size_t)(id + 1),
		       i = lo;

		for (; i < hi && ((size_t)(b + i) & 63); i++)
			b[i] = a[i];
		for (; i + NT_FLOATS <= hi; i += NT_FLOATS)
			NT_STORE(b + i, (nt_vec) * (const nt_uvec *)(a + i));
		for (; i < hi; i++)
			b[i] = a[i];
		__builtin_ia32_sfence();
	}
#else
	copy(b, a, n);
#endif
}

double stream_copy_bytes(const stream_copy *c)
{
	return 2.0 * (double)(c->n * sizeof *c->a);
}

void stream_copy_close(stream_copy *c)
{
	free(c->a);
	free(c->b);
	c->a = c->b = NULL;
}

#ifdef STREAM_MAIN
/* The stand-alone probe: all cores, then one thread. */
int main(void)
{
	int cores = omp_get_num_procs();

	for (int k = 0; k < 2; k++) {
		stream_result r;
		int th = k == 0 ? cores : 1;

		if (k == 1 && cores == 1)
			break;
		if (stream_probe(th, 10, &r) < 0) {
			fprintf(stderr, "stream: out of memory\n");
			return 1;
		}
		printf("copy bandwidth: %.1f GB/s (median of %d, min %.1f, "
		       "max %.1f; %d thread%s, %zu MiB arrays)\n",
		       r.copy.median, r.copy.repeats, r.copy.min, r.copy.max,
		       r.threads, r.threads == 1 ? "" : "s",
		       r.bytes_per_array >> 20);
		printf("triad bandwidth: %.1f GB/s (median of %d, min %.1f, "
		       "max %.1f; %d thread%s)\n", r.triad.median,
		       r.triad.repeats, r.triad.min, r.triad.max, r.threads,
		       r.threads == 1 ? "" : "s");
	}
	return 0;
}
#endif
