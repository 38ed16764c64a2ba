/* The CUDA side of the runner: whether this machine has a GPU to run the
 * CUDA backend's programs on, where nvcc is, and, in the test child, the
 * device entry points of a loaded CUDA unit (target.h).
 *
 * The probe talks to the driver API through dlopen("libcuda.so.1") and
 * dlsym, so fuselab neither needs the CUDA headers to build nor the driver
 * to start: a machine without one simply has no device.  It asks in a
 * child process of its own: a process that initialised the driver
 * (cuInit) and then forks gets children in which every CUDA call fails
 * ("initialization error"), and the runner's test children are forked
 * from this process.  The child writes its answer into a shared page.
 * The answer is asked once per process (pthread_once: the explorer's
 * worker threads may ask together) and kept.  FUSELAB_NO_CUDA=1 answers
 * "no device" without asking, so tests can take the CPU fallback on a
 * machine with a GPU.  Nothing here prints. */
#include "run_impl.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "clock.h"

/* The driver API's entry points we call, by their C types (CUresult is
 * an int, CUdevice an int). */
typedef int (*cu_init_fn)(unsigned int flags);
typedef int (*cu_count_fn)(int *count);
typedef int (*cu_get_fn)(int *dev, int ordinal);
typedef int (*cu_name_fn)(char *name, int len, int dev);

#define PROBE_TIMEOUT_S 60

/* The answer: whether there is a device, its name or why there is
 * none.  The probe child fills one in a shared page. */
typedef struct probe_answer {
	int present;
	char text[128];
} probe_answer;

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static probe_answer answer;

/* In the probe child: asks the driver, the answer into *a. */
static void ask_driver(probe_answer *a)
{
	char *probe_text = a->text;
	size_t n_text = sizeof a->text;
	void *h;
	cu_init_fn init;
	cu_count_fn count;
	cu_get_fn get;
	cu_name_fn name;
	int n = 0, dev = 0;

	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(probe_text, n_text, "no CUDA driver "
			 "(libcuda.so.1 not found)");
		return;
	}
	init = (cu_init_fn)dlsym(h, "cuInit");
	count = (cu_count_fn)dlsym(h, "cuDeviceGetCount");
	get = (cu_get_fn)dlsym(h, "cuDeviceGet");
	name = (cu_name_fn)dlsym(h, "cuDeviceGetName");
	if (!init || !count || !get || !name) {
		snprintf(probe_text, n_text, "the CUDA driver lacks "
			 "the device API");
		return;
	}
	if (init(0) != 0 || count(&n) != 0 || n < 1) {
		snprintf(probe_text, n_text, "the CUDA driver finds "
			 "no device");
		return;
	}
	if (get(&dev, 0) != 0 || name(probe_text, (int)n_text, dev) != 0)
		snprintf(probe_text, n_text, "CUDA device 0");
	a->present = 1;
}

/* Asks the driver in a child process; the answer into `answer`. */
static void probe(void)
{
	const char *off = getenv("FUSELAB_NO_CUDA");
	probe_answer *a;
	int status = 0, rc;
	pid_t pid;

	if (off && *off && strcmp(off, "0") != 0) {
		snprintf(answer.text, sizeof answer.text,
			 "FUSELAB_NO_CUDA is set");
		return;
	}
	a = mmap(NULL, sizeof *a, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED) {
		snprintf(answer.text, sizeof answer.text, "cannot ask the CUDA "
			 "driver: mmap: %s", strerror(errno));
		return;
	}
	snprintf(a->text, sizeof a->text, "the CUDA probe did not answer");
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		fl_run_child_setup(NULL);
		ask_driver(a);
		_exit(0);
	}
	rc = pid < 0 ? -1 : fl_run_wait(pid, PROBE_TIMEOUT_S, NULL, NULL, NULL,
					&status);
	if (rc == FL_WAIT_EXITED)
		answer = *a;
	else
		snprintf(answer.text, sizeof answer.text, "the CUDA probe %s",
			 pid < 0 ? "could not start" : "did not finish");
	answer.text[sizeof answer.text - 1] = '\0';
	munmap(a, sizeof *a);
}

bool fl_cuda_device_present(char *name, size_t n)
{
	pthread_once(&probe_once, probe);
	if (name && n)
		snprintf(name, n, "%s", answer.text);
	return answer.present;
}

/* Whether dir/file is an executable file; its path into path. */
static bool executable_in(const char *dir, size_t len, const char *file,
			  char *path, size_t n)
{
	if ((size_t)snprintf(path, n, "%.*s/%s", (int)len, dir, file) >= n)
		return false;
	return access(path, X_OK) == 0;
}

bool fl_nvcc_find(char *path, size_t n)
{
	const char *env = getenv("NVCC"), *p = getenv("PATH");

	if (env && *env) {
		snprintf(path, n, "%s", env);
		return access(env, X_OK) == 0 || !strchr(env, '/');
	}
	while (p && *p) {
		size_t len = strcspn(p, ":");

		if (len && executable_in(p, len, "nvcc", path, n))
			return true;
		p += len + (p[len] == ':');
	}
	return executable_in("/usr/local/cuda/bin", 19, "nvcc", path, n);
}

bool fl_build_cpu_fallback(const fl_build *b, const fl_run_opts *o)
{
	if (!o || o->target != FL_TARGET_CUDA || b->target != FL_TARGET_CUDA)
		return false;
	if (b->status != FL_RUN_OK && b->status != FL_RUN_NO_COMPILER)
		return false;
	return !fl_cuda_device_present(NULL, 0);
}

void fl_build_note_fallback(fl_build *cpu, const fl_build *cuda)
{
	const char *arch = strstr(cuda->flags, "-arch=");

	arch = arch ? arch + 6 : "?";
	if (cuda->status == FL_RUN_OK)
		snprintf(cpu->note, sizeof cpu->note, "%s (the CUDA compiled "
			 "with nvcc for %.*s in %.1f s)", FL_NO_CUDA_DEVICE,
			 (int)strcspn(arch, " "), arch, cuda->seconds);
	else
		snprintf(cpu->note, sizeof cpu->note, "%s (the CUDA was not "
			 "compiled: %.160s)", FL_NO_CUDA_DEVICE, cuda->message);
}

void fl_run_device_syms(void *so, fl_device_syms *d)
{
	memset(d, 0, sizeof *d);
	d->resident = dlsym(so, "fl_device_resident");
	d->seconds = dlsym(so, "fl_device_seconds");
	*(void **)&d->name = dlsym(so, "fl_device_name");
	if (!d->resident || !d->seconds)
		d->resident = NULL;	/* not a CUDA unit: wall clock */
}

double fl_run_timed_call(fl_kernel_call f, float *const *bufs,
			 const fl_device_syms *d)
{
	double t0 = fl_now(), wall;

	f(bufs);
	wall = fl_now() - t0;
	return d && d->resident ? *d->seconds : wall;
}
