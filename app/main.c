/* fuselab: the command line.  Parses options and hands off to batch mode
 * or the interactive explorer (or, for "fuselab gen", to the random
 * graph writer); the only place that calls exit codes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "gen.h"
#include "machine.h"
#include "options.h"
#include "tui.h"

/* Output that never arrived is a failure: `fuselab --batch ... > log` on
 * a full disk must not end in status 0 with a truncated log.  Flushes
 * standard output; when it (or any earlier write to it) failed, says so
 * and turns a success into status 1. */
static int close_stdout(int status)
{
	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return status;
	fprintf(stderr, "fuselab: standard output: %s\n",
		errno ? strerror(errno) : "write error");
	return status ? status : 1;
}

static int run_mode(const fl_options *o)
{
	switch (o->mode) {
	case FL_MODE_HELP:
		fl_options_print_help(stdout);
		return 0;
	case FL_MODE_VERSION:
		printf("fuselab %s\n", FL_VERSION);
		return 0;
	case FL_MODE_LIST_OPS:
		return fl_batch_list_ops();
	case FL_MODE_CHECK:
		return fl_batch_check(o);
	case FL_MODE_BATCH:
		return fl_batch_run(o);
	case FL_MODE_INTERACTIVE:
		return fl_tui_main(o);
	}
	return 2;
}

int main(int argc, char **argv)
{
	fl_options o;
	char err[512];

	if (argc > 1 && strcmp(argv[1], "gen") == 0)
		return close_stdout(fl_gen_main(argc - 1, argv + 1));
	if (fl_options_parse(argc, argv, &o, err, sizeof err) < 0) {
		fprintf(stderr, "fuselab: %s\n", err);
		return 2;
	}
	if (o.machine_spec)	/* plan for the machine described */
		fl_machine_assume(&o.machine);
	return close_stdout(run_mode(&o));
}
