/* Safe writes for every exporter (DESIGN 8): a file appears whole or not
 * at all.
 *
 * A regular file (or a path that does not exist yet) is written to a
 * temporary file in the same directory and renamed into place when
 * everything was written; any failure removes the temporary file and
 * leaves whatever was at the path untouched.  A target that exists and is
 * not a regular file ("-" for standard output, a pipe, a device such as
 * /dev/full) is written directly and never replaced.  Errors name the
 * path and the system's reason: "out/x.svg: No space left on device". */
#ifndef FL_OUTPUT_H
#define FL_OUTPUT_H

#include <stddef.h>
#include <stdio.h>

#include "fl_error.h"

typedef struct fl_out fl_out;

/* Opens path for writing; NULL with the reason when it cannot be (a
 * missing parent directory, a directory at path, no permission). */
fl_out *fl_out_open(const char *path, fl_error *err);
/* Appends n bytes; -1 with the reason (the output is then spoilt: close
 * fails and removes it). */
int fl_out_write(fl_out *o, const void *buf, size_t n, fl_error *err);
int fl_out_printf(fl_out *o, fl_error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Flushes and puts the file in place; -1 with the reason when any write
 * failed (nothing is left behind).  Frees o either way. */
int fl_out_close(fl_out *o, fl_error *err);
/* Gives up: removes the temporary file, frees o. */
void fl_out_abort(fl_out *o);

/* Writes a whole buffer to path (open, write, close). */
int fl_out_write_file(const char *path, const void *buf, size_t n,
		      fl_error *err);

/* For tests: the write that would take the output past `bytes` bytes
 * fails with ENOSPC (-1: never, the default).  Process-wide. */
void fl_out_fail_after(long bytes);

#endif
