/* Safe writes (see output.h). */
#include "output.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct fl_out {
	FILE *f;
	char *path;		/* the target */
	char *tmp;		/* the temporary file, NULL when direct */
	long written;
	int failed;		/* errno of the first failed write, 0 */
};

static long fail_after = -1;

void fl_out_fail_after(long bytes)
{
	fail_after = bytes;
}

/* Writes go to the target itself when it is standard output or exists
 * and is not a regular file. */
static int writes_directly(const char *path)
{
	struct stat st;

	if (strcmp(path, "-") == 0)
		return 1;
	return stat(path, &st) == 0 && !S_ISREG(st.st_mode) &&
	       !S_ISDIR(st.st_mode);
}

static fl_out *open_direct(fl_out *o, fl_error *err)
{
	o->f = strcmp(o->path, "-") == 0 ? stdout : fopen(o->path, "w");
	if (!o->f) {
		fl_error_set(err, "%s: %s", o->path, strerror(errno));
		return NULL;
	}
	return o;
}

/* The process's umask (reading it means setting it back at once). */
static mode_t umask_value(void)
{
	mode_t m = umask(022);

	umask(m);
	return m;
}

static fl_out *open_temporary(fl_out *o, fl_error *err)
{
	size_t n = strlen(o->path) + 16;
	struct stat st;
	int fd;

	if (stat(o->path, &st) == 0 && S_ISDIR(st.st_mode)) {
		fl_error_set(err, "%s: is a directory, not a file", o->path);
		return NULL;
	}
	o->tmp = malloc(n);
	if (!o->tmp) {
		fl_error_set(err, "out of memory");
		return NULL;
	}
	snprintf(o->tmp, n, "%s.tmpXXXXXX", o->path);
	fd = mkstemp(o->tmp);
	if (fd < 0) {
		fl_error_set(err, "%s: %s", o->path, strerror(errno));
		free(o->tmp);
		o->tmp = NULL;
		return NULL;
	}
	/* mkstemp makes it 0600; an exported file is an ordinary one */
	fchmod(fd, 0644 & ~umask_value());
	o->f = fdopen(fd, "w");
	if (!o->f) {
		fl_error_set(err, "%s: %s", o->path, strerror(errno));
		close(fd);
		unlink(o->tmp);
		return NULL;
	}
	return o;
}

fl_out *fl_out_open(const char *path, fl_error *err)
{
	fl_out *o = calloc(1, sizeof *o);

	if (!o || !(o->path = strdup(path))) {
		free(o);
		fl_error_set(err, "out of memory");
		return NULL;
	}
	if (!(writes_directly(path) ? open_direct(o, err)
				    : open_temporary(o, err))) {
		free(o->tmp);
		free(o->path);
		free(o);
		return NULL;
	}
	return o;
}

int fl_out_write(fl_out *o, const void *buf, size_t n, fl_error *err)
{
	if (o->failed) {
		fl_error_set(err, "%s: %s", o->path, strerror(o->failed));
		return -1;
	}
	if (fail_after >= 0 && o->written + (long)n > fail_after)
		o->failed = ENOSPC;
	else if (n && fwrite(buf, 1, n, o->f) != n)
		o->failed = errno ? errno : EIO;
	if (o->failed) {
		fl_error_set(err, "%s: %s", o->path, strerror(o->failed));
		return -1;
	}
	o->written += (long)n;
	return 0;
}

int fl_out_printf(fl_out *o, fl_error *err, const char *fmt, ...)
{
	va_list ap, again;
	char *text = NULL;
	int n, r;

	va_start(ap, fmt);
	va_copy(again, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	if (n >= 0 && (text = malloc((size_t)n + 1)))
		vsnprintf(text, (size_t)n + 1, fmt, again);
	va_end(again);
	va_end(ap);
	if (n < 0 || !text) {
		fl_error_set(err, "out of memory");
		o->failed = ENOMEM;
		return -1;
	}
	r = fl_out_write(o, text, (size_t)n, err);
	free(text);
	return r;
}

static void out_free(fl_out *o)
{
	free(o->tmp);
	free(o->path);
	free(o);
}

void fl_out_abort(fl_out *o)
{
	if (!o)
		return;
	if (o->f && o->f != stdout)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	out_free(o);
}

/* A device that is full, a pipe whose reader left: the failure shows
 * at the flush as well as at a write. */
static int finish(fl_out *o)
{
	if (!o->failed && fflush(o->f) != 0)
		o->failed = errno ? errno : EIO;
	if (o->f != stdout && fclose(o->f) != 0 && !o->failed)
		o->failed = errno ? errno : EIO;
	o->f = NULL;
	return o->failed ? -1 : 0;
}

int fl_out_close(fl_out *o, fl_error *err)
{
	errno = 0;
	if (finish(o) < 0) {
		fl_error_set(err, "%s: %s", o->path, strerror(o->failed));
		fl_out_abort(o);
		return -1;
	}
	if (o->tmp && rename(o->tmp, o->path) != 0) {
		fl_error_set(err, "%s: %s", o->path, strerror(errno));
		fl_out_abort(o);
		return -1;
	}
	out_free(o);
	return 0;
}

int fl_out_write_file(const char *path, const void *buf, size_t n,
		      fl_error *err)
{
	fl_out *o = fl_out_open(path, err);

	if (!o)
		return -1;
	if (fl_out_write(o, buf, n, err) < 0) {
		fl_out_abort(o);
		return -1;
	}
	return fl_out_close(o, err);
}
