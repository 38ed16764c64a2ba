/* What the runner's files share (runner.h has the public side):
 * compile.c owns the work directory, child processes and the compiler;
 * runner.c the test child and its results; job.c the worker thread. */
#ifndef FL_RUN_IMPL_H
#define FL_RUN_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "runner.h"

/* path = dir/name (cut at n). */
void fl_run_path(const char *dir, const char *name, char *path, size_t n);

/* Writes text to path; -1 with a message. */
int fl_run_write_file(const char *path, const char *text, fl_error *err);

/* Calls o's progress callback, when there is one. */
void fl_run_progress(const fl_run_opts *o, const char *phase, int k, int n);

/* First thing in a freshly forked child: its own process group (so that
 * the parent can kill it and everything it started), killed when the
 * parent thread dies (Linux), stdin from /dev/null, stdout and stderr to
 * log (a file in the work directory; /dev/null when it cannot be
 * opened), so that nothing reaches the caller's terminal. */
void fl_run_child_setup(const char *log);

/* Called by fl_run_wait between naps (from the waiting thread); true
 * when the child made progress that restarts the time limit. */
typedef bool (*fl_run_poll_fn)(void *user);

enum {
	FL_WAIT_EXITED,		/* *status says how */
	FL_WAIT_TIMEOUT,	/* ran past limit_s: group killed, reaped */
	FL_WAIT_CANCELLED,	/* cancelled: group killed, reaped */
};

/* Waits for child pid (the leader of its own process group, see
 * fl_run_child_setup), polling o's cancel and interrupt flags
 * (fl_run_cancelled; o may be NULL) and calling poll every few ms.
 * The limit counts from the start, or from the last poll that reported
 * progress: it bounds each step of the child, not the whole of it.
 * Whatever the ending, anything left in the child's process group is
 * killed before the child is reaped.  Returns one of FL_WAIT_*, or -1 on
 * error (errno). */
int fl_run_wait(pid_t pid, double limit_s, const fl_run_opts *o,
		fl_run_poll_fn poll, void *user, int *status);

typedef void (*fl_kernel_call)(float *const *bufs);

/* The device entry points of a loaded unit (target.h): all NULL for a C
 * unit.  resident is set only when seconds is there too. */
typedef struct fl_device_syms {
	int *resident;
	const double *seconds;
	const char *(*name)(void);
} fl_device_syms;

/* Looks them up in so (a dlopen handle). */
void fl_run_device_syms(void *so, fl_device_syms *d);

/* Calls f(bufs); its time in seconds: the device time of its launches
 * (fl_device_seconds, CUDA events) for a CUDA unit, else the wall clock
 * around the call.  d may be NULL (wall clock). */
double fl_run_timed_call(fl_kernel_call f, float *const *bufs,
			 const fl_device_syms *d);
/* The build cache (build_cache.c): the directory $FUSELAB_BUILD_CACHE
 * names, or NULL when it is unset or compiler (the command's first word)
 * is named by a path. */
const char *fl_build_cache_dir(const char *compiler);

/* Copies the entry of key (the compiler command, the flags asked for and
 * the source) from cache directory dir into b's work directory as gen.so
 * and cc.log, with b's compiler, flags and cached set; false, b's
 * directory left for the compiler, when there is none. */
bool fl_build_cache_fetch(const char *dir, const char *key, fl_build *b);

/* Locks key's entry in dir for compiling it, first waiting while another
 * process (or thread) holds that lock, so that the second of two builds
 * of one key can take the first one's result.  The lock's descriptor for
 * fl_build_cache_unlock, or -1 (no lock: compile anyway) when it cannot
 * be made, the wait was cancelled (o) or took longer than a compile may. */
int fl_build_cache_lock(const char *dir, const char *key,
			const fl_run_opts *o);
void fl_build_cache_unlock(int fd);

/* Keeps b's gen.so and cc.log in dir under key, when b built and was not
 * itself fetched; failures only mean nothing is kept. */
void fl_build_cache_store(const char *dir, const char *key,
			  const fl_build *b);

#endif
