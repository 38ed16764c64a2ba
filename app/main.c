/* fuselab: the command line.  Parses options and hands off to batch mode
 * or the interactive explorer (or, for "fuselab gen", to the random
 * graph writer); the only place that calls exit codes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "gen.h"
#include "options.h"
#include "tui.h"

int main(int argc, char **argv)
{
	fl_options o;
	char err[512];

	if (argc > 1 && strcmp(argv[1], "gen") == 0)
		return fl_gen_main(argc - 1, argv + 1);
	if (fl_options_parse(argc, argv, &o, err, sizeof err) < 0) {
		fprintf(stderr, "fuselab: %s\n", err);
		return 2;
	}
	switch (o.mode) {
	case FL_MODE_HELP:
		fl_options_print_help(stdout);
		return 0;
	case FL_MODE_VERSION:
		printf("fuselab %s\n", FL_VERSION);
		return 0;
	case FL_MODE_LIST_OPS:
		return fl_batch_list_ops();
	case FL_MODE_CHECK:
		return fl_batch_check(&o);
	case FL_MODE_BATCH:
		return fl_batch_run(&o);
	case FL_MODE_INTERACTIVE:
		return fl_tui_main(&o);
	}
	return 2;
}
