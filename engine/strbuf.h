/* A growable string built with printf-style appends, for generated code
 * and memo keys.  Running out of memory is sticky: appends after it do
 * nothing and fl_strbuf_take gives NULL.  Start from {0}. */
#ifndef FL_STRBUF_H
#define FL_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct fl_strbuf {
	char *s;		/* NUL-terminated once something was added */
	size_t len, cap;
	bool oom;
} fl_strbuf;

void fl_strbuf_printf(fl_strbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The text (malloc'd; "" when nothing was added), or NULL when memory
 * ran out; b is empty afterwards. */
char *fl_strbuf_take(fl_strbuf *b);

#endif
