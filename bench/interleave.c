/* Interleaved timing (interleave.h). */
#include "interleave.h"

#include <stdlib.h>

#include "clock.h"
#include "../engine/run/interleave.h"	/* fl_timing_paired */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The statistics of t[0..n-1] (sorted in place). */
static il_stat stat_of(double *t, int n)
{
	il_stat s = {0, 0, 0, n, 1, 0, 0};

	if (n == 0)
		return s;
	qsort(t, (size_t)n, sizeof *t, cmp_double);
	s.min = t[0];
	s.max = t[n - 1];
	s.median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
	return s;
}

/* Round by round a[r] / b[r] (b: contender 0's times, both unsorted):
 * their median and the rounds a was quicker and slower into s. */
static void paired_ratios(const double *a, const double *b, int rounds,
			  il_stat *s)
{
	double *q = malloc((size_t)(rounds + 1) * sizeof *q);
	il_stat r;

	s->ratio = 1;
	s->quicker = s->slower = 0;
	if (!q)
		return;
	for (int k = 0; k < rounds; k++) {
		q[k] = b[k] > 0 ? a[k] / b[k] : 1;
		s->quicker += a[k] < b[k];
		s->slower += a[k] > b[k];
	}
	r = stat_of(q, rounds);
	s->ratio = rounds ? r.median : 1;
	free(q);
}

/* The spread of st with the ratios already in r. */
static il_stat with_ratios(il_stat st, const il_stat *r)
{
	st.ratio = r->ratio;
	st.quicker = r->quicker;
	st.slower = r->slower;
	return st;
}

/* The contender at position k of round r: odd rounds go backwards
 * (A B, B A, ...), and every two rounds the order rotates by one, so that
 * with n > 2 each contender takes every position and follows every
 * other one equally often (interleave.h). */
static int round_position(int r, int k, int n)
{
	int i = r % 2 ? n - 1 - k : k;

	return n > 2 ? (i + r / 2) % n : i;
}

/* One call of contender c: its seconds, its own where it times itself. */
static double run_one(const il_contender *c)
{
	double t0 = fl_now(), own;

	if (!c->timed) {
		c->call(c->ctx);
		return fl_now() - t0;
	}
	own = c->timed(c->ctx);
	return own >= 0 ? own : fl_now() - t0;
}

int il_measure(const il_contender *c, int n, const il_plan *plan,
	       il_stat *out)
{
	int max = plan->max_reps > plan->min_reps ? plan->max_reps
						  : plan->min_reps;
	double *t = malloc((size_t)n * (size_t)max * sizeof *t), start;
	int rounds = 0;

	if (!t || n > IL_MAX)
		goto fail;
	for (int i = 0; i < n; i++)
		run_one(&c[i]);
	start = fl_now();
	while (rounds < max && (rounds < plan->min_reps ||
				fl_now() - start < plan->budget_s)) {
		for (int k = 0; k < n; k++) {
			int i = round_position(rounds, k, n);

			t[i * max + rounds] = run_one(&c[i]);
		}
		rounds++;
	}
	for (int i = 0; i < n; i++)
		paired_ratios(t + i * max, t, rounds, &out[i]);
	for (int i = 0; i < n; i++)
		out[i] = with_ratios(stat_of(t + i * max, rounds), &out[i]);
	free(t);
	return rounds;
fail:
	free(t);
	return -1;
}

int il_distinct(const il_stat *a, const il_stat *b)
{
	return a->max < b->min || b->max < a->min;
}

int il_paired_distinct(const il_stat *s)
{
	fl_ratio r = {{s->ratio, 0, 0, 0, 0, s->n}, s->quicker, s->slower};

	return fl_timing_paired(&r) == FL_TIMING_FASTER ||
	       fl_timing_paired(&r) == FL_TIMING_SLOWER;
}
