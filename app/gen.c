/* fuselab gen --ops N --seed S [-o FILE]: the random graph of seed S as
 * JSON on standard output or in FILE.  FILE appears whole or not at all
 * (exporters/output.h writes a temporary file and renames it). */
#include "gen.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_json.h"
#include "output.h"
#include "random_graph.h"

#define DEFAULT_OPS 12
#define DEFAULT_SEED 1

typedef struct gen_options {
	fl_random_graph_opts graph;
	const char *out;	/* NULL: standard output */
	bool help;
} gen_options;

static void print_help(FILE *out)
{
	fprintf(out,
		"usage: fuselab gen [--ops N] [--seed S] [-o FILE]\n"
		"\n"
		"Write a random valid graph (fuselab-graph/1 JSON) for\n"
		"testing the compiler: elementwise and broadcast chains,\n"
		"reductions, matmul, conv2d, pooling, data movement and\n"
		"compound ops, with shared producers, several outputs and\n"
		"small odd extents.  The same N and S give the same graph\n"
		"on every machine.\n"
		"\n"
		"options:\n"
		"  --ops N        ops to draw, 1 to %d (default %d; a drawn\n"
		"                 op may bring a few helper ops along)\n"
		"  --seed S       the graph's seed, a non-negative integer\n"
		"                 (default %d)\n"
		"  -o, --output FILE  write to FILE (whole or not at all)\n"
		"                 instead of standard output\n"
		"  -h, --help     show this help and exit\n"
		"\n"
		"exit status: 0 written, 2 bad usage or an unwritable FILE.\n",
		FL_RANDOM_GRAPH_MAX_OPS, DEFAULT_OPS, DEFAULT_SEED);
}

static int parse_ops(const char *arg, gen_options *o, char *err, size_t n)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 1 ||
	    v > FL_RANDOM_GRAPH_MAX_OPS) {
		snprintf(err, n, "--ops: expected an integer from 1 to %d, got "
			 "\"%s\"", FL_RANDOM_GRAPH_MAX_OPS, arg);
		return -1;
	}
	o->graph.n_ops = (int)v;
	return 0;
}

static int parse_seed(const char *arg, gen_options *o, char *err, size_t n)
{
	char *end;

	errno = 0;
	o->graph.seed = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || *arg == '-' || *arg == '+') {
		snprintf(err, n, "--seed: expected a non-negative integer "
			 "below 2^64, got \"%s\"", arg);
		return -1;
	}
	return 0;
}

/* The value of option argv[*i] ("--ops=12" or "--ops 12"). */
static const char *value_of(int argc, char **argv, int *i, const char *eq,
			    const char *opt, char *err, size_t n)
{
	if (eq)
		return eq + 1;
	if (*i + 1 < argc)
		return argv[++*i];
	snprintf(err, n, "%s needs a value", opt);
	return NULL;
}

static int parse(int argc, char **argv, gen_options *o, char *err, size_t n)
{
	memset(o, 0, sizeof *o);
	o->graph.n_ops = DEFAULT_OPS;
	o->graph.seed = DEFAULT_SEED;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *eq = strchr(a, '=');
		size_t len = eq ? (size_t)(eq - a) : strlen(a);
		const char *v;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			o->help = true;
			continue;
		}
		if (!strncmp(a, "--ops", len) && len == 5) {
			v = value_of(argc, argv, &i, eq, "--ops", err, n);
			if (!v || parse_ops(v, o, err, n) < 0)
				return -1;
		} else if (!strncmp(a, "--seed", len) && len == 6) {
			v = value_of(argc, argv, &i, eq, "--seed", err, n);
			if (!v || parse_seed(v, o, err, n) < 0)
				return -1;
		} else if (!strcmp(a, "-o")) {
			o->out = value_of(argc, argv, &i, NULL, "-o", err, n);
			if (!o->out)
				return -1;
		} else if (!strncmp(a, "--output", len) && len == 8) {
			o->out = value_of(argc, argv, &i, eq, "--output", err,
					  n);
			if (!o->out)
				return -1;
		} else {
			snprintf(err, n, "unknown option or argument \"%s\" "
				 "(see fuselab gen --help)", a);
			return -1;
		}
	}
	return 0;
}

/* The graph of o as JSON text on standard output or in o->out. */
static int write_graph(const gen_options *o, fl_error *err)
{
	fl_graph *g = fl_random_graph(&o->graph, err);
	char *text = g ? fl_graph_to_json(g, err) : NULL;
	int rc = -1;

	if (text) {
		size_t len = strlen(text);

		text[len] = '\n';	/* replaces the NUL: the file ends in a
					   newline */
		rc = fl_out_write_file(o->out ? o->out : "-", text, len + 1,
				       err);
	}
	free(text);
	fl_graph_free(g);
	return rc;
}

int fl_gen_main(int argc, char **argv)
{
	gen_options o;
	char msg[512];
	fl_error err = {""};

	if (parse(argc, argv, &o, msg, sizeof msg) < 0) {
		fprintf(stderr, "fuselab gen: %s\n", msg);
		return 2;
	}
	if (o.help) {
		print_help(stdout);
		return 0;
	}
	if (write_graph(&o, &err) < 0) {
		fprintf(stderr, "fuselab gen: %s\n", err.msg);
		return 2;
	}
	return 0;
}
