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

const char *fl_error_name(const char *name)
{
	static _Thread_local char bufs[8][4 * FL_ERROR_NAME_MAX + 8];
	static _Thread_local int next;
	char *b = bufs[next];
	size_t o = 0, n = 0;

	next = (next + 1) % 8;
	if (!name)
		return "(null)";
	for (; *name; name++, n++) {
		unsigned char c = (unsigned char)*name;

		if (n == FL_ERROR_NAME_MAX) {
			memcpy(b + o, "...", 4);
			return b;
		}
		if (c < 0x20 || c == 0x7f)
			o += (size_t)snprintf(b + o, 5, "\\x%02x", c);
		else
			b[o++] = (char)c;
	}
	b[o] = '\0';
	return b;
}
