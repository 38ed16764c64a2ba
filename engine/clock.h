/* Small shared utilities of the engine: the monotonic clock every timing
 * uses, and the integer comparison qsort needs for op and tensor lists. */
#ifndef FL_CLOCK_H
#define FL_CLOCK_H

/* Seconds on the monotonic clock (for differences only). */
double fl_now(void);

/* qsort comparison of two ints, ascending, without overflow. */
int fl_cmp_int(const void *a, const void *b);

#endif
