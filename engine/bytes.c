/* Byte counts as people read them (see bytes.h). */
#include "bytes.h"

#include <stdio.h>

const char *fl_format_bytes(int64_t bytes, char *buf, size_t n)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB",
					    "PiB", "EiB"};
	double v = (double)bytes;
	int u = 0;

	if (bytes < 0) {
		snprintf(buf, n, "(overflows)");
		return buf;
	}
	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%lld B", (long long)bytes);
	else
		snprintf(buf, n, "%.1f %s", v, units[u]);
	return buf;
}
