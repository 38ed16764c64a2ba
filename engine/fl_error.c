/* One-line error messages that gain context on the way out. */
#include "fl_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void fl_error_set(fl_error *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
}

void fl_error_prefix(fl_error *err, const char *fmt, ...)
{
	char joined[2 * FL_ERROR_MAX + 4];
	size_t len;
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(joined, FL_ERROR_MAX, fmt, ap);
	va_end(ap);
	len = strlen(joined);
	/* "ops[3]" + "." + "in[1]: ..." joins paths; anything else gets ": ". */
	if (!(len && joined[len - 1] == '.')) {
		memcpy(joined + len, ": ", 3);
		len += 2;
	}
	memcpy(joined + len, err->msg, strnlen(err->msg, FL_ERROR_MAX - 1) + 1);
	joined[len + strnlen(err->msg, FL_ERROR_MAX - 1)] = '\0';
	/* keep the start: the file and path matter most */
	memcpy(err->msg, joined, FL_ERROR_MAX - 1);
	err->msg[FL_ERROR_MAX - 1] = '\0';
}

void fl_error_clear(fl_error *err)
{
	if (err)
		err->msg[0] = '\0';
}
