/* Byte counts as people read them ("32.0 MiB"), for messages of the
 * engine and summaries of the app alike. */
#ifndef FL_BYTES_H
#define FL_BYTES_H

#include <stddef.h>
#include <stdint.h>

/* bytes in the largest binary unit that keeps the number at 1 or more,
 * one decimal ("1.5 MiB", "512 B"; "(overflows)" when negative), into
 * buf; returns buf. */
const char *fl_format_bytes(int64_t bytes, char *buf, size_t n);

#endif
