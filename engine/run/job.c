/* A run in a worker thread (runner.h), for an interactive caller that
 * keeps drawing while a program compiles and runs: the thread calls
 * fl_run_program with a copy of the caller's options whose cancel pointer
 * is the job's own flag.  fl_run_job_cancel sets that flag, which the
 * runner polls every few ms while the compiler or the test child runs
 * (killing its process group, removing the work directory); done is an
 * atomic flag the thread sets as its last act, so polling it never
 * blocks; finish joins the thread and hands the result over. */
#include "run_impl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct fl_run_job {
	pthread_t thread;
	const fl_program *p;
	const fl_values *ref;
	fl_run_opts o;
	char *workdir, *cc;	/* copies of the caller's strings */
	volatile int cancel;	/* o.cancel points here */
	atomic_bool done;
	int rc;
	fl_run_result r;
	fl_error err;
};

static void *job_main(void *arg)
{
	fl_run_job *j = arg;

	j->rc = fl_run_program(j->p, j->ref, &j->o, &j->r, &j->err);
	atomic_store_explicit(&j->done, true, memory_order_release);
	return NULL;
}

static void job_free(fl_run_job *j)
{
	free(j->workdir);
	free(j->cc);
	free(j);
}

fl_run_job *fl_run_job_start(const fl_program *p, const fl_values *ref,
			     const fl_run_opts *o, fl_error *err)
{
	fl_run_job *j = calloc(1, sizeof *j);
	int e;

	if (!j) {
		fl_error_set(err, "out of memory");
		return NULL;
	}
	j->p = p;
	j->ref = ref;
	if (o)
		j->o = *o;
	else
		fl_run_opts_default(&j->o);
	j->workdir = j->o.workdir ? strdup(j->o.workdir) : NULL;
	j->cc = j->o.cc ? strdup(j->o.cc) : NULL;
	if ((j->o.workdir && !j->workdir) || (j->o.cc && !j->cc)) {
		job_free(j);
		fl_error_set(err, "out of memory");
		return NULL;
	}
	j->o.workdir = j->workdir;
	j->o.cc = j->cc;
	j->o.cancel = &j->cancel;
	atomic_init(&j->done, false);
	e = pthread_create(&j->thread, NULL, job_main, j);
	if (e != 0) {
		job_free(j);
		fl_error_set(err, "cannot start a thread: %s", strerror(e));
		return NULL;
	}
	return j;
}

void fl_run_job_cancel(fl_run_job *j)
{
	if (j)
		j->cancel = 1;
}

bool fl_run_job_done(fl_run_job *j)
{
	return j && atomic_load_explicit(&j->done, memory_order_acquire);
}

int fl_run_job_finish(fl_run_job *j, fl_run_result *r, fl_error *err)
{
	int rc;

	if (!j) {
		memset(r, 0, sizeof *r);
		fl_error_set(err, "no job");
		return -1;
	}
	pthread_join(j->thread, NULL);
	rc = j->rc;
	*r = j->r;		/* moved: the job no longer owns it */
	if (rc < 0)
		fl_error_set(err, "%s", j->err.msg);
	job_free(j);
	return rc;
}
