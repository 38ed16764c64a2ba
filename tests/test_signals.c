/* SIGINT and SIGTERM during --run (and --stage run): fuselab, started as
 * a child with a private TMPDIR, is signalled in each phase -- while the
 * compiler runs (a fake $CC that starts a long sleep), while the test
 * child checks the kernels and while it times them (a $CC that compiles
 * gen.c with kernel fl_k0 wrapped so that a chosen call marks a file and
 * then waits forever) -- and must exit 130 or 143 with its one-line
 * message, leaving no process of the compiler's or the test child's
 * process groups (found through /proc while it ran) and nothing in the
 * private TMPDIR. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#define MAX_SEEN 64

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

/* pid's parent and process group from /proc; false when it is gone or a
 * zombie. */
static bool proc_info(int pid, int *ppid, int *pgrp)
{
	char path[64], buf[1024], *p, state;
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* the command may hold spaces */
	if (!p || sscanf(p + 1, " %c %d %d", &state, ppid, pgrp) != 3)
		return false;
	return state != 'Z' && state != 'X';
}

/* The descendants of root now, as (pid, pgrp) pairs added to seen. */
typedef struct seen_procs {
	int n, pid[MAX_SEEN], pgrp[MAX_SEEN];
} seen_procs;

static bool seen_has(const seen_procs *s, int pid)
{
	for (int i = 0; i < s->n; i++)
		if (s->pid[i] == pid)
			return true;
	return false;
}

static void note_descendants(int root, seen_procs *s)
{
	bool grew = true;

	while (grew) {
		DIR *d = opendir("/proc");
		struct dirent *de;

		grew = false;
		assert_non_null(d);
		while ((de = readdir(d))) {
			int pid = atoi(de->d_name), ppid, pgrp;

			if (pid <= 0 || seen_has(s, pid) ||
			    !proc_info(pid, &ppid, &pgrp))
				continue;
			if ((ppid == root || seen_has(s, ppid)) &&
			    s->n < MAX_SEEN) {
				s->pid[s->n] = pid;
				s->pgrp[s->n++] = pgrp;
				grew = true;
			}
		}
		closedir(d);
	}
}

/* A process that is alive and in one of the groups seen, or whose parent
 * is root: 0 when none. */
static int leftover(int root, const seen_procs *s)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int found = 0;

	assert_non_null(d);
	while (!found && (de = readdir(d))) {
		int pid = atoi(de->d_name), ppid, pgrp;

		if (pid <= 0 || !proc_info(pid, &ppid, &pgrp))
			continue;
		if (ppid == root || pgrp == root)
			found = pid;
		for (int i = 0; i < s->n && !found; i++)
			if (pgrp == s->pgrp[i] || pid == s->pid[i])
				found = pid;
	}
	closedir(d);
	return found;
}

typedef enum phase { PH_COMPILE, PH_CHECK, PH_TIME } phase;

static const char *const phase_names[] = {"compile", "check", "time"};

/* The scratch folder (outside the private TMPDIR) with the fake
 * compilers: cc-sleep.sh (writes its pid to `started`, then waits on a
 * long sleep) and cc-stall-N.sh (the real cc, with fl_k0's N-th call
 * touching `started` and then pausing). */
static void write_compilers(const char *dir)
{
	char path[600], text[4096];

	snprintf(path, sizeof path, "%s/cc-sleep.sh", dir);
	snprintf(text, sizeof text, "#!/bin/sh\nsleep 60 &\necho $$ $! > "
		 "'%s/started.tmp'\nmv '%s/started.tmp' '%s/started'\nwait\n",
		 dir, dir, dir);
	write_file(path, text, 0700);
	for (int call = 1; call <= 3; call += 2) {
		snprintf(path, sizeof path, "%s/stall-%d.c", dir, call);
		snprintf(text, sizeof text,
			 "\n#include <fcntl.h>\n#include <unistd.h>\n"
			 "static int fl_test_calls;\n"
			 "void fl_k0(float *const *bufs)\n{\n"
			 "\tif (++fl_test_calls == %d) {\n"
			 "\t\tclose(open(\"%s/started\", O_WRONLY | O_CREAT, "
			 "0600));\n\t\tfor (;;)\n\t\t\tpause();\n\t}\n"
			 "\tfl_k0_real(bufs);\n}\n", call, dir);
		write_file(path, text, 0600);
		snprintf(path, sizeof path, "%s/cc-stall-%d.sh", dir, call);
		snprintf(text, sizeof text, "#!/bin/sh\n"
			 "if ! grep -q fl_k0_real gen.c; then\n"
			 "  sed -i 's/^void fl_k0(float \\*const \\*bufs)$/"
			 "void fl_k0_real(float *const *bufs)/' gen.c\n"
			 "  cat '%s/stall-%d.c' >> gen.c\nfi\nexec cc \"$@\"\n",
			 dir, call);
		write_file(path, text, 0700);
	}
}

/* Runs fuselab with args (split on blanks) until phase ph is reached,
 * sends sig, and checks what is left. */
static void signal_at(const char *scratch, phase ph, int sig,
		      const char *args)
{
	char tmp[600], cc[700], started[700], errpath[700], cmdline[2048],
	     *argv[32], *save = NULL;
	int argc = 0, status = 0, left;
	seen_procs seen = {0};
	bool exited = false;
	pid_t pid;

	snprintf(tmp, sizeof tmp, "%s/tmp", scratch);
	assert_int_equal(mkdir(tmp, 0700), 0);
	snprintf(started, sizeof started, "%s/started", scratch);
	unlink(started);
	snprintf(cc, sizeof cc, "%s/%s", scratch,
		 ph == PH_COMPILE ? "cc-sleep.sh" :
		 ph == PH_CHECK ? "cc-stall-1.sh" : "cc-stall-3.sh");
	snprintf(errpath, sizeof errpath, "%s/stderr", scratch);
	snprintf(cmdline, sizeof cmdline, "%s", args);
	argv[argc++] = (char *)t_fuselab_bin();
	for (char *w = strtok_r(cmdline, " ", &save); w && argc < 31;
	     w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	argv[argc] = NULL;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600),
		    null = open("/dev/null", O_RDWR);

		setpgid(0, 0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		dup2(null, 0);
		dup2(null, 1);
		dup2(fd, 2);
		setenv("TMPDIR", tmp, 1);
		setenv("CC", cc, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	for (int i = 0; i < 3000 && !exists(started); i++) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			exited = true;
			break;
		}
		sleep_ms(5);
	}
	if (exited || !exists(started)) {
		if (!exited)
			kill(pid, SIGKILL), waitpid(pid, &status, 0);
		fail_msg("%s: never reached the %s phase", args,
			 phase_names[ph]);
	}
	note_descendants(pid, &seen);
	kill(pid, sig);
	for (int i = 0; i < 1000 && !exited; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			exited = true;
		else
			sleep_ms(5);
	}
	if (!exited) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("%s: still running 5 s after signal %d in the %s "
			 "phase", args, sig, phase_names[ph]);
	}
	{
		size_t n = 0;
		char msg[1024] = "";
		FILE *f = fopen(errpath, "r");

		if (f) {
			n = fread(msg, 1, sizeof msg - 1, f);
			msg[n] = '\0';
			fclose(f);
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 128 + sig)
			fail_msg("%s: signal %d in the %s phase: status %d, "
				 "stderr:\n%s", args, sig, phase_names[ph],
				 WIFEXITED(status) ? WEXITSTATUS(status)
						   : -WTERMSIG(status), msg);
		if (!strstr(msg, ph == PH_COMPILE
				 ? "fuselab: interrupted; stopped the compiler "
				   "and removed "
				 : "fuselab: interrupted; stopped the run and "
				   "removed ") || !strstr(msg, tmp))
			fail_msg("%s: %s phase: stderr:\n%s", args,
				 phase_names[ph], msg);
	}
	if (seen.n == 0)
		fail_msg("%s: no child process seen in the %s phase", args,
			 phase_names[ph]);
	/* the children are killed and reaped before fuselab exits; what
	 * they started dies with their group */
	left = leftover(pid, &seen);
	for (int i = 0; i < 100 && left; i++) {
		sleep_ms(10);
		left = leftover(pid, &seen);
	}
	if (left)
		fail_msg("%s: process %d left after signal %d in the %s phase",
			 args, left, sig, phase_names[ph]);
	if (t_count_entries(tmp) != 0)
		fail_msg("%s: TMPDIR not empty after signal %d in the %s phase",
			 args, sig, phase_names[ph]);
	assert_int_equal(rmdir(tmp), 0);
}

static void make_scratch(char *dir, size_t n)
{
	snprintf(dir, n, "/tmp/fuselab-sig-XXXXXX");
	assert_non_null(mkdtemp(dir));
	write_compilers(dir);
}

static void remove_scratch(const char *dir)
{
	char cmd[700];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(t_run(cmd, NULL), 0);
}

/* --run: SIGINT and SIGTERM in each phase. */
static void test_signal_run_each_phase(void **state)
{
	static const int sigs[] = {SIGINT, SIGTERM};
	char scratch[64], args[1024];

	(void)state;
	make_scratch(scratch, sizeof scratch);
	snprintf(args, sizeof args, "--batch %s/softmax.json --run --strategy "
		 "unfused --warmup 0 --repeat 1000 --timeout 60",
		 t_samples_dir());
	for (int ph = PH_COMPILE; ph <= PH_TIME; ph++)
		for (int s = 0; s < 2; s++)
			signal_at(scratch, (phase)ph, sigs[s], args);
	remove_scratch(scratch);
}

/* --stage run (one engine session): SIGTERM while compiling, SIGINT
 * while timing. */
static void test_signal_stage_run(void **state)
{
	char scratch[64], args[1024];

	(void)state;
	make_scratch(scratch, sizeof scratch);
	snprintf(args, sizeof args, "--batch %s/softmax.json --stage run "
		 "--strategy unfused --warmup 0 --repeat 1000",
		 t_samples_dir());
	signal_at(scratch, PH_COMPILE, SIGTERM, args);
	signal_at(scratch, PH_TIME, SIGINT, args);
	remove_scratch(scratch);
}

FL_SUITE(signals,
	 cmocka_unit_test(test_signal_run_each_phase),
	 cmocka_unit_test(test_signal_stage_run));
