/* SIGINT and SIGTERM (see signals.h). */
#include "signals.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t caught;

static void on_signal(int sig)
{
	caught = sig;
}

void fl_app_signals_install(void)
{
	static bool done;
	static const int sigs[] = {SIGINT, SIGTERM};
	struct sigaction sa;

	if (done)
		return;
	done = true;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* the second one takes the default action: killed at once */
	sa.sa_flags = SA_RESTART | SA_RESETHAND;
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction old;

		/* a signal ignored by whoever started us stays ignored */
		if (sigaction(sigs[i], NULL, &old) == 0 &&
		    old.sa_handler == SIG_IGN)
			continue;
		sigaction(sigs[i], &sa, NULL);
	}
}

const volatile sig_atomic_t *fl_app_signal_flag(void)
{
	return &caught;
}

int fl_app_signal(void)
{
	return (int)caught;
}

int fl_app_interrupted(const char *what, const char *dir)
{
	int sig = fl_app_signal();

	fflush(stdout);
	if (what && *what && dir && *dir)
		fprintf(stderr, "fuselab: interrupted; stopped the %s and "
			"removed %s\n", what, dir);
	else if (dir && *dir)
		fprintf(stderr, "fuselab: interrupted; removed %s\n", dir);
	else if (what && *what)
		fprintf(stderr, "fuselab: interrupted; stopped the %s\n", what);
	else
		fprintf(stderr, "fuselab: interrupted\n");
	return 128 + (sig ? sig : SIGINT);
}
