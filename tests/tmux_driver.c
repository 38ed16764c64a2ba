/* The tmux driver for end-to-end explorer tests (see tmux_driver.h). */
#include "tmux_driver.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_util.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Runs "tmux -L socket -f /dev/null ARGS", failing the test on error. */
static char *tmux(t_tmux *t, const char *fmt, ...)
{
	char args[2048], cmd[2400], *out = NULL;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof cmd, "tmux -L %s -f /dev/null %s", t->socket, args);
	rc = t_run(cmd, &out);
	if (rc != 0)
		fail_msg("%s: exit %d: %s", cmd, rc, out);
	return out;
}

/* The sanitizer build's reports (ASan, LeakSanitizer, UBSan) of the
 * explorer and of any process it forks go to files <dir>/sanitizer.<pid>
 * (log_path) rather than to the terminal, where curses would draw over
 * them; t_tmux_exit_status fails the test when one exists, whatever the
 * exit status says.  A plain build ignores the options. */
#define REPORT_NAME "sanitizer"

/* The session under way, stopped by t_tmux_teardown when a test failed
 * before stopping it (cmocka leaves the test function at the failure). */
static t_tmux *live;

void t_tmux_start(t_tmux *t, int w, int h, const char *args)
{
	static int serial;
	char *out;

	memset(t, 0, sizeof *t);
	snprintf(t->socket, sizeof t->socket, "fltest%d_%d", (int)getpid(),
		 serial++);
	snprintf(t->dir, sizeof t->dir, "/tmp/fuselab-tui-XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->status_file, sizeof t->status_file, "%s/status", t->dir);
	live = t;
	out = tmux(t, "new-session -d -s main -x %d -y %d "
		   "\"cd %s && TERM=screen-256color LANG=C.UTF-8 "
		   "LC_ALL=C.UTF-8 ASAN_OPTIONS=detect_leaks=1:log_path=%s/"
		   REPORT_NAME " UBSAN_OPTIONS=print_stacktrace=1:"
		   "halt_on_error=1:log_path=%s/" REPORT_NAME " %s %s; "
		   "echo \\$? > %s; sleep 600\"", w, h, t->dir, t->dir,
		   t->dir, t_fuselab_bin(), args, t->status_file);
	free(out);
	out = tmux(t, "set-option -t main status off");
	free(out);
	t_tmux_wait_for(t, " | step ", 20);
}

void t_tmux_keys(t_tmux *t, const char *keys)
{
	free(tmux(t, "send-keys -t main %s", keys));
	sleep_ms(150);
}

void t_tmux_type(t_tmux *t, const char *text)
{
	free(tmux(t, "send-keys -t main -l '%s'", text));
	sleep_ms(150);
}

char *t_tmux_screen(t_tmux *t)
{
	return tmux(t, "capture-pane -p -t main");
}

bool t_tmux_shows(t_tmux *t, const char *text)
{
	char *s = t_tmux_screen(t);
	bool found = strstr(s, text) != NULL;

	free(s);
	return found;
}

void t_tmux_wait_for(t_tmux *t, const char *text, double timeout_s)
{
	double t0 = now_s();
	char *s;

	for (;;) {
		s = t_tmux_screen(t);
		if (strstr(s, text)) {
			free(s);
			return;
		}
		if (now_s() - t0 > timeout_s)
			break;
		free(s);
		sleep_ms(100);
	}
	fail_msg("\"%s\" did not show within %.0f s; the screen:\n%s", text,
		 timeout_s, s);
}

void t_tmux_resize(t_tmux *t, int w, int h)
{
	free(tmux(t, "resize-window -t main -x %d -y %d", w, h));
	sleep_ms(300);
}

/* The first sanitizer report left in t->dir, as "path:\ntext" (cut at
 * n bytes) into buf; false when there is none. */
static bool sanitizer_report(const t_tmux *t, char *buf, size_t n)
{
	char path[600], *text;
	struct dirent *e;
	DIR *d = opendir(t->dir);
	bool found = false;

	assert_non_null(d);
	while (!found && (e = readdir(d))) {
		if (strncmp(e->d_name, REPORT_NAME ".",
			    strlen(REPORT_NAME ".")) != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", t->dir, e->d_name);
		text = t_read_file(path, NULL);
		snprintf(buf, n, "%s:\n%s", path, text);
		free(text);
		found = true;
	}
	closedir(d);
	return found;
}

static void assert_no_sanitizer_report(const t_tmux *t)
{
	static char report[8192];	/* static: fail_msg does not return */

	if (sanitizer_report(t, report, sizeof report))
		fail_msg("the explorer's sanitizer report %s", report);
}

int t_tmux_exit_status(t_tmux *t, double timeout_s)
{
	double t0 = now_s();

	while (now_s() - t0 < timeout_s) {
		FILE *f = fopen(t->status_file, "r");
		int status = -1;

		if (f) {
			int got = fscanf(f, "%d", &status);

			fclose(f);
			if (got == 1) {
				char *alt = tmux(t, "display-message -p -t main "
						 "'#{alternate_on}'");

				/* endwin left the alternate screen */
				assert_int_equal(atoi(alt), 0);
				free(alt);
				assert_no_sanitizer_report(t);
				return status;
			}
		}
		sleep_ms(100);
	}
	return -1;
}

int t_tmux_teardown(void **state)
{
	(void)state;
	if (live)
		t_tmux_stop(live);
	return 0;
}

void t_tmux_stop(t_tmux *t)
{
	char cmd[512], *out = NULL;

	live = NULL;
	snprintf(cmd, sizeof cmd, "tmux -L %s kill-server", t->socket);
	t_run(cmd, &out);
	free(out);
	snprintf(cmd, sizeof cmd, "rm -rf %s", t->dir);
	t_run(cmd, &out);
	free(out);
}
