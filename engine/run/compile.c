/* Compiling a program's C source (the first of the runner's two steps;
 * runner.c has the second and the overview): the work directory, child
 * processes, and the compiler.
 *
 * The work directory is always a fresh mkdtemp "fuselab-XXXXXX": under
 * the caller's directory (--workdir; created when missing) or under
 * $TMPDIR.  Nothing is ever written into, or removed from, a directory
 * the program did not create: the fresh one is ours and is removed with
 * whatever ends up in it (a compiler may leave files), entry by entry
 * through directory descriptors, never following a symbolic link out of
 * it; a caller's directory that we created goes too when it is then
 * empty.
 *
 * The compiler ($CC or "cc" unless opts->cc says otherwise; its words are
 * split on blanks and it is run without a shell) builds gen.so from gen.c
 * with -O3 -march=native -fopenmp -fno-math-errno -fno-trapping-math
 * (no kernel relies on a floating-point trap, and without it GCC keeps
 * the clamps of fl_tanhf/fl_erff behind branches and the loops around
 * them scalar) -falign-loops=64 (every loop starts a 64-byte block: the
 * same micro-kernel loop, placed differently in two units, ran up to 8%
 * apart -- a matmul with a fused residual add measured 8% slower than
 * the bare matmul only for that; the core fetches and caches decoded
 * instructions by 64-byte windows) -shared -fPIC, linking
 * glibc's vector maths library (-lmvec; when the compiler's log names it
 * as the failure, it compiles again without it and with -DFL_NO_MVEC),
 * its output going to cc.log.  The log's "warning:" lines are counted and
 * the first ones kept in the fl_build, with the command, its flags and
 * the wall time.
 *
 * The CUDA target (opts->target) writes gen.cu instead and compiles it
 * with nvcc ($NVCC, else nvcc on PATH, else /usr/local/cuda/bin/nvcc):
 * -O3 -std=c++17 -shared -Xcompiler -fPIC, for the GPU found
 * (-arch=native), or for sm_90 when this machine has none (the unit is
 * still compiled, so that its errors show without a GPU).  Its TMPDIR is the work directory, so that what it
 * leaves there when killed goes with the directory.
 *
 * Children (the compiler here, the test process in runner.c) lead their
 * own process group, so that a timeout or a cancel kills everything they
 * started (kill(-pgid, SIGKILL)) and reaps them; the waiting thread polls
 * a cancel flag every few ms.  An exec failure's errno comes back through
 * a shared anonymous page rather than a pipe: no descriptor can leak into
 * a child that another thread forks meanwhile.  Nothing here prints. */
#include "run_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "clock.h"

extern char **environ;

#define COMPILE_TIMEOUT_S 600
#define MAX_CC_WORDS 32
#define MAX_TREE_DEPTH 64

void fl_run_path(const char *dir, const char *name, char *path, size_t n)
{
	snprintf(path, n, "%s/%s", dir, name);
}

int fl_run_write_file(const char *path, const char *text, fl_error *err)
{
	FILE *f = fopen(path, "w");
	size_t n = strlen(text);
	bool ok;
	int e;

	if (!f) {
		fl_error_set(err, "%s: %s", path, strerror(errno));
		return -1;
	}
	ok = fwrite(text, 1, n, f) == n;
	e = ok ? 0 : errno;
	if (fclose(f) != 0 && ok) {
		e = errno;
		ok = false;
	}
	if (!ok) {
		fl_error_set(err, "%s: write failed: %s", path,
			     strerror(e ? e : EIO));
		return -1;
	}
	return 0;
}

bool fl_run_cancelled(const fl_run_opts *o)
{
	return o && ((o->cancel && *o->cancel) ||
		     (o->interrupt && *o->interrupt));
}

void fl_run_progress(const fl_run_opts *o, const char *phase, int k, int n)
{
	if (o->progress)
		o->progress(o->progress_user, phase, k, n);
}

static void set_message(fl_build *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_message(fl_build *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b->message, sizeof b->message, fmt, ap);
	va_end(ap);
}

/* ---- work directory ------------------------------------------------- */

static int workdir_open(const fl_run_opts *o, fl_build *b, fl_error *err)
{
	const char *tmp = getenv("TMPDIR"), *under;

	under = o->workdir && *o->workdir ? o->workdir
		: tmp && *tmp ? tmp : "/tmp";
	if (o->workdir && *o->workdir) {
		if (mkdir(under, 0700) == 0)
			snprintf(b->parent, sizeof b->parent, "%s", under);
		else if (errno != EEXIST) {
			fl_error_set(err, "work directory %s: %s", under,
				     strerror(errno));
			return -1;
		}
	}
	if ((size_t)snprintf(b->workdir, sizeof b->workdir, "%s/fuselab-XXXXXX",
			     under) >= sizeof b->workdir) {
		if (under == tmp)
			fl_error_set(err, "TMPDIR is too long (%zu characters; "
				     "at most %zu fit in a work directory's "
				     "path): set a shorter TMPDIR or use "
				     "--workdir",
				     strlen(tmp), sizeof b->workdir -
				     sizeof "/fuselab-XXXXXX");
		else
			fl_error_set(err, "cannot create a work directory under "
				     "%s: the path is too long", under);
		goto fail;
	}
	if (!mkdtemp(b->workdir)) {
		fl_error_set(err, "cannot create a work directory under %s: %s",
			     under, strerror(errno));
		goto fail;
	}
	b->created = true;
	return 0;
fail:
	if (b->parent[0])
		rmdir(b->parent);
	b->workdir[0] = b->parent[0] = '\0';
	return -1;
}

static void remove_entry(int dirfd, const char *name, int depth);

/* Removes everything in the directory open as fd (which it closes). */
static void remove_contents(int fd, int depth)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;

	if (!d) {
		close(fd);
		return;
	}
	/* removing while reading may hide entries: go over it again until
	 * a pass removes nothing (bounded) */
	for (int pass = 0; pass < 4; pass++) {
		bool removed = false;

		rewinddir(d);
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			remove_entry(dirfd(d), de->d_name, depth + 1);
			removed = true;
		}
		if (!removed)
			break;
	}
	closedir(d);
}

/* Removes name in dirfd: a directory with its contents, anything else
 * (a symbolic link included) by unlinking it. */
static void remove_entry(int dirfd, const char *name, int depth)
{
	struct stat st;
	int fd;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlinkat(dirfd, name, 0);
		return;
	}
	if (depth > MAX_TREE_DEPTH)
		return;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd >= 0)
		remove_contents(fd, depth);
	unlinkat(dirfd, name, AT_REMOVEDIR);
}

/* Removes the work directory with everything in it, then the caller's
 * directory when we created it and it is empty. */
static void workdir_remove(const fl_build *b)
{
	if (b->workdir[0] && b->created)
		remove_entry(AT_FDCWD, b->workdir, 0);
	if (b->parent[0])
		rmdir(b->parent);	/* fails, as it should, unless empty */
}

void fl_build_remove(fl_build *b, const fl_run_opts *o)
{
	if (!b)
		return;
	if (!(o && o->keep) || (o->interrupt && *o->interrupt))
		workdir_remove(b);
	memset(b, 0, sizeof *b);
}

/* ---- child processes ------------------------------------------------- */

void fl_run_child_setup(const char *log)
{
	int fd;

	setpgid(0, 0);
	/* the caller's handlers (a flag to stop) are not the child's */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
#ifdef __linux__
	prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0) {
		dup2(fd, 0);
		close(fd);
	}
	fd = log ? open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600) : -1;
	if (fd < 0)
		fd = open("/dev/null", O_WRONLY);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
}

/* Kills what is left of pid's process group (pid not reaped yet, so its
 * number cannot have been reused), then pid itself in case it never got
 * a group of its own. */
static void kill_group(pid_t pid)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
}

static int reap(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

int fl_run_wait(pid_t pid, double limit_s, const fl_run_opts *o,
		fl_run_poll_fn poll, void *user, int *status)
{
	double t0 = fl_now();
	long nap_ns = 100000;

	/* the child does the same; whichever runs first wins, the other
	 * fails harmlessly */
	setpgid(pid, pid);
	for (;;) {
		siginfo_t si;
		struct timespec ts;
		int rc = FL_WAIT_EXITED;

		memset(&si, 0, sizeof si);
		/* WNOWAIT: a child that ended stays a zombie, holding its
		 * process group's number while we kill what is left in it */
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT)
		    < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (si.si_pid != pid) {
			if (fl_run_cancelled(o))
				rc = FL_WAIT_CANCELLED;
			else if (fl_now() - t0 > limit_s)
				rc = FL_WAIT_TIMEOUT;
		}
		if (si.si_pid == pid || rc != FL_WAIT_EXITED) {
			kill_group(pid);
			if (reap(pid, status) < 0)
				return -1;
			return rc;
		}
		if (poll && poll(user))
			t0 = fl_now();
		ts.tv_sec = 0;
		ts.tv_nsec = nap_ns;
		nanosleep(&ts, NULL);
		if (nap_ns < 5000000)	/* back off to 5 ms */
			nap_ns *= 2;
	}
}

/* ---- compiling ------------------------------------------------------- */

static const char *compiler_of(const fl_run_opts *o)
{
	const char *cc = getenv("CC");

	if (o->cc && *o->cc)
		return o->cc;
	return cc && *cc ? cc : "cc";
}

/* argv for the compiler: the words of cc (split in place), then the fixed
 * flags; with mvec, glibc's vector maths library (libmvec) is linked for
 * the SIMD variants of expf, tanhf, ... that the generated code declares,
 * else FL_NO_MVEC keeps the code from asking for them.  Records the
 * command and the flags in b.  -1 when cc has no words. */
static int compiler_argv(char *words, bool mvec, char **argv, fl_build *b)
{
	static char *const flags_mvec[] = {
		"-O3", "-march=native", "-fopenmp", "-fno-math-errno",
		"-fno-trapping-math", "-falign-loops=64",
		"-shared", "-fPIC", "-o", "gen.so", "gen.c", "-lmvec", "-lm",
		NULL,
	};
	static char *const flags_plain[] = {
		"-O3", "-march=native", "-fopenmp", "-fno-math-errno",
		"-fno-trapping-math", "-falign-loops=64",
		"-DFL_NO_MVEC", "-shared", "-fPIC", "-o", "gen.so", "gen.c",
		"-lm", NULL,
	};
	char *const *flags = mvec ? flags_mvec : flags_plain;
	char *save = NULL;
	size_t len = 0;
	int n = 0;

	b->compiler[0] = '\0';
	for (char *w = strtok_r(words, " \t", &save); w && n < MAX_CC_WORDS;
	     w = strtok_r(NULL, " \t", &save)) {
		argv[n++] = w;
		if (len < sizeof b->compiler)
			len += (size_t)snprintf(b->compiler + len,
						sizeof b->compiler - len,
						"%s%s", n > 1 ? " " : "", w);
	}
	if (n == 0)
		return -1;
	len = 0;
	b->flags[0] = '\0';
	for (int i = 0; flags[i]; i++) {
		argv[n++] = flags[i];
		if (len < sizeof b->flags)
			len += (size_t)snprintf(b->flags + len,
						sizeof b->flags - len, "%s%s",
						i ? " " : "", flags[i]);
	}
	argv[n] = NULL;
	return 0;
}

/* The environment for the compiler: ours with TMPDIR set to the work
 * directory, so that its temporary files (cc's .s and .o) go with the
 * directory when it is killed.  malloc'd array of borrowed strings (the
 * TMPDIR entry in tmpdir_var); NULL when out of memory. */
static char **compiler_env(const char *dir, char *tmpdir_var, size_t n)
{
	size_t count = 0, k = 0;
	char **env, cwd[512];

	while (environ[count])
		count++;
	env = malloc((count + 2) * sizeof *env);
	if (!env)
		return NULL;
	if (dir[0] != '/' && getcwd(cwd, sizeof cwd))	/* it runs in dir */
		snprintf(tmpdir_var, n, "TMPDIR=%s/%s", cwd, dir);
	else
		snprintf(tmpdir_var, n, "TMPDIR=%s", dir);
	for (size_t i = 0; i < count; i++)
		if (strncmp(environ[i], "TMPDIR=", 7) != 0)
			env[k++] = environ[i];
	env[k++] = tmpdir_var;
	env[k] = NULL;
	return env;
}

/* In the compiler's child: run it in the work directory with its output
 * in cc.log and env as its environment; an exec failure's errno goes to
 * *exec_errno. */
static void compiler_child(const char *dir, char **argv, char **env,
			   volatile int *exec_errno) __attribute__((noreturn));

static void compiler_child(const char *dir, char **argv, char **env,
			   volatile int *exec_errno)
{
	char log[700];

	fl_run_path(dir, "cc.log", log, sizeof log);
	fl_run_child_setup(log);
	if (chdir(dir) < 0) {
		*exec_errno = errno;
		_exit(127);
	}
	if (env)
		environ = env;
	execvp(argv[0], argv);
	*exec_errno = errno;
	_exit(127);
}

/* The compiler's first lines that mention an error (file:line: error:
 * ...), or its first lines when none does, after a one-line summary. */
static void compile_message(fl_build *b, int code)
{
	char path[700], line[512], first[8][512];
	int n_first = 0, n_err = 0;
	size_t len, n = sizeof b->message;
	char *msg = b->message;
	FILE *f;

	len = (size_t)snprintf(msg, n, "the compiler failed (exit status %d)",
			       code);
	fl_run_path(b->workdir, "cc.log", path, sizeof path);
	f = fopen(path, "r");
	if (!f)
		return;
	while (n_err < 8 && fgets(line, sizeof line, f)) {
		if (!strstr(line, "error")) {
			if (n_first < 8)
				snprintf(first[n_first++], sizeof first[0],
					 "%s", line);
			continue;
		}
		len += (size_t)snprintf(msg + len, len < n ? n - len : 0,
					"%s%s", n_err ? "" : ":\n", line);
		n_err++;
	}
	fclose(f);
	for (int i = 0; n_err == 0 && i < n_first && len < n; i++)
		len += (size_t)snprintf(msg + len, n - len, "%s%s",
					i ? "" : ":\n", first[i]);
}

/* argv for nvcc at path nvcc compiling gen.cu into gen.so, for this
 * machine's GPU or, without one, for sm_90; records the command and the
 * flags in b. */
static void nvcc_argv(char *nvcc, char **argv, fl_build *b)
{
	static char *const flags[] = {
		"-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", NULL,
		"-o", "gen.so", "gen.cu", NULL,
	};
	size_t len = 0;
	int n = 0;

	argv[n++] = nvcc;
	snprintf(b->compiler, sizeof b->compiler, "%.200s", nvcc);
	b->flags[0] = '\0';
	for (int i = 0; i < (int)(sizeof flags / sizeof flags[0]) - 1; i++) {
		char *f = flags[i] ? flags[i] : fl_cuda_device_present(NULL, 0)
					       ? "-arch=native" : "-arch=sm_90";

		argv[n++] = f;
		if (len < sizeof b->flags)
			len += (size_t)snprintf(b->flags + len,
						sizeof b->flags - len, "%s%s",
						i ? " " : "", f);
	}
	argv[n] = NULL;
}

/* argv for the target's compiler into argv (words: room for the
 * command's words); 1 with b's status set when there is none. */
static int target_argv(const fl_run_opts *o, bool mvec, char *words,
		       size_t n, char **argv, fl_build *b)
{
	if (o->target == FL_TARGET_CUDA) {
		if (!fl_nvcc_find(words, n)) {
			b->status = FL_RUN_NO_COMPILER;
			set_message(b, "nvcc not found (set NVCC, put it on "
				    "PATH or install the CUDA toolkit in "
				    "/usr/local/cuda): the CUDA target needs "
				    "it");
			return 1;
		}
		nvcc_argv(words, argv, b);
		return 0;
	}
	snprintf(words, n, "%s", compiler_of(o));
	if (compiler_argv(words, mvec, argv, b) < 0) {
		b->status = FL_RUN_NO_COMPILER;
		set_message(b, "no compiler given");
		return 1;
	}
	return 0;
}

/* One attempt at compiling gen.c (gen.cu) into gen.so; 0 when it built,
 * 1 when b says why not (no compiler, compile error, cancelled), -1 on
 * an internal error. */
static int compile_once(fl_build *b, const fl_run_opts *o, bool mvec,
			fl_error *err)
{
	char words[1024], *argv[MAX_CC_WORDS + 16], tmpdir_var[1100], **env;
	volatile int *exec_errno;
	int status = 0, rc, e;
	pid_t pid;

	if (target_argv(o, mvec, words, sizeof words, argv, b))
		return 1;
	exec_errno = mmap(NULL, sizeof *exec_errno, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (exec_errno == MAP_FAILED) {
		fl_error_set(err, "mmap: %s", strerror(errno));
		return -1;
	}
	*exec_errno = 0;
	env = compiler_env(b->workdir, tmpdir_var, sizeof tmpdir_var);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fl_error_set(err, "fork: %s", strerror(errno));
		munmap((void *)exec_errno, sizeof *exec_errno);
		free(env);
		return -1;
	}
	if (pid == 0)
		compiler_child(b->workdir, argv, env, exec_errno);
	free(env);
	rc = fl_run_wait(pid, COMPILE_TIMEOUT_S, o, NULL, NULL,
			 &status);
	e = *exec_errno;
	munmap((void *)exec_errno, sizeof *exec_errno);
	if (rc < 0) {
		fl_error_set(err, "waiting for the compiler: %s",
			     strerror(errno));
		return -1;
	}
	if (rc == FL_WAIT_CANCELLED) {
		b->status = FL_RUN_CANCELLED;
		set_message(b, "cancelled while compiling");
		return 1;
	}
	if (rc == FL_WAIT_TIMEOUT) {
		b->status = FL_RUN_COMPILE_ERROR;
		set_message(b, "the compiler did not finish within %d s",
			    COMPILE_TIMEOUT_S);
		return 1;
	}
	if (e && o->target == FL_TARGET_CUDA) {
		b->status = FL_RUN_NO_COMPILER;
		set_message(b, "cannot run nvcc \"%s\": %s (set NVCC to the "
			    "CUDA compiler)", b->compiler, strerror(e));
		return 1;
	}
	if (e) {
		b->status = FL_RUN_NO_COMPILER;
		set_message(b, "cannot run the C compiler \"%s\": %s (set CC "
			    "to a C compiler)", b->compiler, strerror(e));
		return 1;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	b->status = FL_RUN_COMPILE_ERROR;
	compile_message(b, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 1;
}

/* Whether the compiler's log mentions libmvec (it could not be found or
 * linked). */
static bool log_mentions_mvec(const fl_build *b)
{
	char path[700], line[512];
	bool yes = false;
	FILE *f;

	fl_run_path(b->workdir, "cc.log", path, sizeof path);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (!yes && fgets(line, sizeof line, f))
		yes = strstr(line, "mvec") != NULL;
	fclose(f);
	return yes;
}

/* Compiles gen.c into gen.so, with libmvec, or without it when the
 * compiler says that is what failed (a system without glibc's vector
 * maths library).  Returns as compile_once. */
static int compile(fl_build *b, const fl_run_opts *o, fl_error *err)
{
	int rc = compile_once(b, o, true, err);

	if (rc == 1 && b->status == FL_RUN_COMPILE_ERROR &&
	    o->target != FL_TARGET_CUDA && log_mentions_mvec(b)) {
		b->status = FL_RUN_OK;
		b->message[0] = '\0';
		rc = compile_once(b, o, false, err);
	}
	return rc;
}

/* Counts the "warning:" lines of cc.log and keeps the first ones. */
static void read_warnings(fl_build *b)
{
	char path[700], line[512];
	size_t len = 0;
	FILE *f;

	fl_run_path(b->workdir, "cc.log", path, sizeof path);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		size_t n = strlen(line);

		if (!strstr(line, "warning:"))
			continue;
		b->n_warnings++;
		if (n > 0 && line[n - 1] != '\n' && n + 1 < sizeof line) {
			line[n++] = '\n';
			line[n] = '\0';
		}
		if (len + n < sizeof b->warnings) {
			memcpy(b->warnings + len, line, n + 1);
			len += n;
		}
	}
	fclose(f);
	if (len > 0 && b->warnings[len - 1] == '\n')
		b->warnings[len - 1] = '\0';
}

/* The build cache's key of source under o's compiler: the command and
 * the flags it is asked for, then the source; malloc'd, NULL when the
 * cache is off for this compiler (*dir: the cache's directory). */
static char *cache_key(const char *source, const fl_run_opts *o,
		       const char **dir)
{
	char words[1024], *argv[MAX_CC_WORDS + 16], *key;
	fl_build asked;
	size_t n;

	/* C builds only: the key is the C compiler's command line, which
	 * says nothing of the nvcc a CUDA build would run */
	*dir = o->target == FL_TARGET_CPU ? fl_build_cache_dir(compiler_of(o))
					  : NULL;
	snprintf(words, sizeof words, "%s", compiler_of(o));
	if (!*dir || compiler_argv(words, true, argv, &asked) < 0)
		return NULL;
	n = strlen(asked.compiler) + strlen(asked.flags) + strlen(source) + 64;
	key = malloc(n);
	if (key)
		snprintf(key, n, "fuselab-build/1\n%s\n%s\n%s", asked.compiler,
			 asked.flags, source);
	return key;
}

/* Compiles gen.c, or takes what the same compiler made of the same
 * source before from the build cache (keeping what it compiles now).
 * On a miss it waits for whoever compiles that source now (the lock),
 * then looks again.  Returns as compile. */
static int compile_or_fetch(fl_build *b, const char *source,
			    const fl_run_opts *o, fl_error *err)
{
	const char *dir;
	char *key = cache_key(source, o, &dir);
	int rc = 0, lock;

	if (key && fl_build_cache_fetch(dir, key, b)) {
		free(key);
		return 0;
	}
	lock = key ? fl_build_cache_lock(dir, key, o) : -1;
	if (lock < 0 || !fl_build_cache_fetch(dir, key, b)) {
		rc = compile(b, o, err);
		if (key && rc == 0)
			fl_build_cache_store(dir, key, b);
	}
	fl_build_cache_unlock(lock);
	free(key);
	return rc;
}

int fl_build_source(const char *source, const fl_run_opts *opts, fl_build *b,
		    fl_error *err)
{
	char path[700];
	fl_run_opts dflt;
	double t0;
	int rc;

	if (!opts) {
		fl_run_opts_default(&dflt);
		opts = &dflt;
	}
	memset(b, 0, sizeof *b);
	b->status = FL_RUN_OK;
	b->target = opts->target;
	if (workdir_open(opts, b, err) < 0) {
		memset(b, 0, sizeof *b);
		return -1;
	}
	fl_run_path(b->workdir, opts->target == FL_TARGET_CUDA ? "gen.cu"
							       : "gen.c",
		    path, sizeof path);
	if (fl_run_write_file(path, source, err) < 0) {
		workdir_remove(b);
		memset(b, 0, sizeof *b);
		return -1;
	}
	fl_run_progress(opts, "compile", 0, 1);
	t0 = fl_now();
	rc = compile_or_fetch(b, source, opts, err);
	b->seconds = fl_now() - t0;
	if (rc < 0) {
		workdir_remove(b);
		memset(b, 0, sizeof *b);
		return -1;
	}
	if (b->status == FL_RUN_CANCELLED) {
		/* removed, whatever it holds; workdir still names it */
		workdir_remove(b);
		b->created = false;
		b->parent[0] = '\0';
		return 0;
	}
	read_warnings(b);
	if (b->status == FL_RUN_OK)
		fl_run_path(b->workdir, "gen.so", b->so_path,
			    sizeof b->so_path);
	fl_run_progress(opts, "compile", 1, 1);
	return 0;
}
