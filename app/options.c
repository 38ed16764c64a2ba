/* Option parsing.  The table is the single source of truth for --help; the
 * man page (man/fuselab.1) documents the same options and a test checks
 * that every option in the table appears there. */
#include "options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"

typedef enum opt_id {
	OPT_HELP, OPT_VERSION, OPT_CHECK, OPT_BATCH, OPT_INTERPRET, OPT_SEED,
	OPT_MAX_MEMORY, OPT_LIST_OPS,
} opt_id;

typedef struct opt_spec {
	opt_id id;
	const char *lng;
	char shrt;
	const char *arg;	/* NULL: a flag */
	const char *help;
} opt_spec;

static const opt_spec specs[] = {
	{OPT_HELP, "help", 'h', NULL, "show this help and exit"},
	{OPT_VERSION, "version", 'V', NULL, "show the version and exit"},
	{OPT_CHECK, "check", 0, NULL,
	 "validate FILE and print its ops/tensors/bytes summary"},
	{OPT_BATCH, "batch", 0, NULL,
	 "non-interactive mode: print the graph summary"},
	{OPT_INTERPRET, "interpret", 0, NULL,
	 "with --batch: run the reference interpreter, print a checksum and "
	 "the time of each output"},
	{OPT_SEED, "seed", 0, "N",
	 "seed of the deterministic input generator (default 42)"},
	{OPT_MAX_MEMORY, "max-memory", 0, "SIZE",
	 "refuse to interpret graphs needing more (default 8G; K, M, G "
	 "suffixes)"},
	{OPT_LIST_OPS, "list-ops", 0, NULL,
	 "list the ops of the graph format and exit"},
};

#define N_SPECS (sizeof specs / sizeof specs[0])

void fl_options_print_help(FILE *out)
{
	fprintf(out,
		"usage: fuselab [OPTIONS] [FILE]\n"
		"\n"
		"Explore operator fusion on the computation graph in FILE (a\n"
		"fuselab-graph/1 JSON file).  Without FILE the built-in sample\n"
		"(a BERT-base encoder layer) is used.\n"
		"\n"
		"options:\n");
	for (size_t i = 0; i < N_SPECS; i++) {
		char left[64];

		snprintf(left, sizeof left, "%c%c%s--%s%s%s",
			 specs[i].shrt ? '-' : ' ',
			 specs[i].shrt ? specs[i].shrt : ' ',
			 specs[i].shrt ? ", " : "  ", specs[i].lng,
			 specs[i].arg ? " " : "", specs[i].arg ? specs[i].arg : "");
		fprintf(out, "  %-22s %s\n", left, specs[i].help);
	}
	fprintf(out,
		"\n"
		"exit status: 0 success, 1 failure while running, 2 bad input or "
		"usage.\n"
		"See fuselab(1) for the graph format.\n");
}

static const opt_spec *find_long(const char *name, size_t len)
{
	for (size_t i = 0; i < N_SPECS; i++)
		if (strlen(specs[i].lng) == len &&
		    strncmp(specs[i].lng, name, len) == 0)
			return &specs[i];
	return NULL;
}

static const opt_spec *find_short(char c)
{
	for (size_t i = 0; i < N_SPECS; i++)
		if (specs[i].shrt == c)
			return &specs[i];
	return NULL;
}

/* "8G", "512M", "1000": bytes, or -1. */
static int64_t parse_size(const char *s)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || v < 0)
		return -1;
	switch (*end) {
	case 'K': case 'k': v <<= 10; end++; break;
	case 'M': case 'm': v <<= 20; end++; break;
	case 'G': case 'g': v <<= 30; end++; break;
	default: break;
	}
	return *end ? -1 : v;
}

static int apply(const opt_spec *spec, const char *arg, fl_options *o,
		 char *err, size_t err_len)
{
	char *end;

	switch (spec->id) {
	case OPT_HELP: o->mode = FL_MODE_HELP; break;
	case OPT_VERSION: o->mode = FL_MODE_VERSION; break;
	case OPT_LIST_OPS: o->mode = FL_MODE_LIST_OPS; break;
	case OPT_CHECK: o->mode = FL_MODE_CHECK; break;
	case OPT_BATCH: o->mode = FL_MODE_BATCH; break;
	case OPT_INTERPRET: o->interpret = true; break;
	case OPT_SEED:
		errno = 0;
		o->seed = strtoull(arg, &end, 10);
		if (errno || end == arg || *end || *arg == '-') {
			snprintf(err, err_len, "--seed: expected a non-negative "
				 "integer, got \"%s\"", arg);
			return -1;
		}
		break;
	case OPT_MAX_MEMORY:
		o->max_bytes = parse_size(arg);
		if (o->max_bytes < 0) {
			snprintf(err, err_len, "--max-memory: expected a size such "
				 "as 512M or 8G, got \"%s\"", arg);
			return -1;
		}
		break;
	}
	return 0;
}

/* Handles argv[*i] = "--name[=value]"; may consume the next argument. */
static int parse_long(int argc, char **argv, int *i, fl_options *o,
		      char *err, size_t err_len)
{
	const char *name = argv[*i] + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const opt_spec *spec = find_long(name, len);
	const char *arg = NULL;

	if (!spec) {
		snprintf(err, err_len, "unknown option \"--%.*s\" (see --help)",
			 (int)len, name);
		return -1;
	}
	if (spec->arg) {
		if (eq)
			arg = eq + 1;
		else if (*i + 1 < argc)
			arg = argv[++*i];
		else {
			snprintf(err, err_len, "--%s needs a value (%s)",
				 spec->lng, spec->arg);
			return -1;
		}
	} else if (eq) {
		snprintf(err, err_len, "--%s takes no value", spec->lng);
		return -1;
	}
	return apply(spec, arg, o, err, err_len);
}

int fl_options_parse(int argc, char **argv, fl_options *o, char *err,
		     size_t err_len)
{
	memset(o, 0, sizeof *o);
	o->seed = FL_INTERP_DEFAULT_SEED;
	o->max_bytes = FL_INTERP_DEFAULT_MAX_BYTES;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strncmp(a, "--", 2) == 0 && a[2]) {
			if (parse_long(argc, argv, &i, o, err, err_len) < 0)
				return -1;
		} else if (a[0] == '-' && a[1] && !a[2] && find_short(a[1])) {
			if (apply(find_short(a[1]), NULL, o, err, err_len) < 0)
				return -1;
		} else if (a[0] == '-' && a[1]) {
			snprintf(err, err_len, "unknown option \"%s\" (see --help)",
				 a);
			return -1;
		} else if (o->file) {
			snprintf(err, err_len, "more than one FILE given (\"%s\" "
				 "and \"%s\")", o->file, a);
			return -1;
		} else {
			o->file = a;
		}
	}
	if (o->interpret && o->mode != FL_MODE_BATCH) {
		snprintf(err, err_len, "--interpret needs --batch");
		return -1;
	}
	return 0;
}
