/* fl_error: the one way the engine reports a problem.
 *
 * The engine never prints and never exits (STYLE 6).  A function that can
 * fail takes an fl_error * and returns -1 (or NULL) after writing a one-line
 * message into it.  Callers add context from the outside in with
 * fl_error_prefix(), so a shape error found deep inside the op library ends
 * up as "samples/x.json: ops[3].in[1]: ..." by the time app/ prints it. */
#ifndef FL_ERROR_H
#define FL_ERROR_H

#include <stddef.h>

#define FL_ERROR_MAX 1024

typedef struct fl_error {
	char msg[FL_ERROR_MAX];
} fl_error;

/* Replaces the message.  Tolerates err == NULL (the error is then dropped). */
void fl_error_set(fl_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Puts "<prefix>: " (or "<prefix>" when it ends in '.') in front of the
 * message already held, e.g. fl_error_prefix(e, "ops[%d]", i). */
void fl_error_prefix(fl_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

void fl_error_clear(fl_error *err);

/* Names taken from input files as messages show them: control characters
 * written as \xNN, and a name longer than FL_ERROR_NAME_MAX characters cut
 * there with "..." after it, so that the reason after a name always fits
 * the message.  Returns one of 8 thread-local buffers used in turn (enough
 * for the names of one message). */
#define FL_ERROR_NAME_MAX 64
const char *fl_error_name(const char *name);

#endif
