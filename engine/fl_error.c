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
	char prefix[FL_ERROR_MAX], old[FL_ERROR_MAX];
	size_t len;
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof old);
	len = strlen(prefix);
	/* "ops[3]" + "." + "in[1]: ..." joins paths; anything else gets ": ". */
	if (len && prefix[len - 1] == '.')
		snprintf(err->msg, sizeof err->msg, "%s%s", prefix, old);
	else
		snprintf(err->msg, sizeof err->msg, "%s: %s", prefix, old);
}

void fl_error_clear(fl_error *err)
{
	if (err)
		err->msg[0] = '\0';
}
