/* Option parsing.  The table is the single source of truth for --help; the
 * man page (man/fuselab.1) documents the same options and a test checks
 * that every option in the table appears there. */
#include "options.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "interp.h"
#include "machine.h"

typedef enum opt_id {
	OPT_HELP, OPT_VERSION, OPT_CHECK, OPT_BATCH, OPT_INTERPRET, OPT_SEED,
	OPT_MAX_MEMORY, OPT_LIST_OPS, OPT_STAGE, OPT_EVENTS, OPT_FORMAT,
	OPT_WHY, OPT_RULES, OPT_DISABLE_RULE, OPT_NEVER_FUSE, OPT_FUSE,
	OPT_NO_PREPROCESS, OPT_RUN, OPT_STRATEGY, OPT_EMIT, OPT_WORKDIR,
	OPT_KEEP, OPT_TIMEOUT, OPT_WARMUP, OPT_REPEAT, OPT_SCHED_BUDGET,
	OPT_MAX_RECOMPUTE, OPT_TILE, OPT_STEP, OPT_L1_TIME_BUDGET,
	OPT_L1_MAX_STMTS, OPT_OVERRIDES, OPT_DOT, OPT_SVG, OPT_PNG, OPT_TRACE,
	OPT_REPORT, OPT_FRAMES, OPT_NEIGHBOURHOOD, OPT_SCHEDULE_TREES,
	OPT_DOMAIN, OPT_DOMAIN_DIMS, OPT_DOMAIN_FIXED, OPT_PIN, OPT_LOCAL_BUDGET,
	OPT_STITCH_CAPACITY, OPT_LAUNCH_COST, OPT_TARGET, OPT_INPUTS, OPT_EXPECT,
	OPT_EXPORT_ONNX,
	OPT_INPUT_SHAPE, OPT_MACHINE, OPT_BIND_INPUTS, OPT_BIND, OPT_EXPECT_ATOL,
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
	{OPT_INPUTS, "inputs", 0, "DIR",
	 "with --batch: the graph's inputs from DIR/input_0.pb, input_1.pb, "
	 "... (ONNX TensorProto files, as ONNX's backend tests store them; "
	 "matched by tensor name, else by position) instead of the seeded "
	 "generator; the interpreter and every run use them"},
	{OPT_EXPECT, "expect", 0, "DIR",
	 "with --batch: compare the interpreter's outputs with "
	 "DIR/output_0.pb, ... at ONNX's tolerances (rtol 1e-3, atol 1e-7) "
	 "and, with --run, each strategy's (rtol 1e-3, atol 1e-5); exit "
	 "status 1 when one differs"},
	{OPT_EXPECT_ATOL, "expect-atol", 0, "A",
	 "with --expect: the absolute tolerance A of both comparisons "
	 "instead of 1e-7 and 1e-5 (rtol stays 1e-3), for a model whose "
	 "reference runtimes disagree by more"},
	{OPT_MAX_MEMORY, "max-memory", 0, "SIZE",
	 "refuse to interpret graphs, or run programs (tensors plus "
	 "reference values), needing more (default 8G; K, M, G suffixes)"},
	{OPT_LIST_OPS, "list-ops", 0, NULL,
	 "list the ops of the graph format and exit"},
	{OPT_STAGE, "stage", 0, "NAME",
	 "with --batch: run the engine through pass NAME and print the state: "
	 "preprocess, cluster, open, classify, constrain, aggregate (or "
	 "partition), layer1, layer2, layer3, codegen, compile or run"},
	{OPT_STEP, "step", 0, "N",
	 "with --batch: stop after N decisions and print the state there "
	 "(with --stage, --events, --format)"},
	{OPT_EVENTS, "events", 0, NULL,
	 "with --batch: print the event log, one decision per line"},
	{OPT_FORMAT, "format", 0, "FMT",
	 "output format of --stage/--events: text (default), json, jsonl"},
	{OPT_WHY, "why", 0, "A B",
	 "with --batch: say whether ops A and B share a micro-graph, and "
	 "if not, why"},
	{OPT_INPUT_SHAPE, "input-shape", 0, "NAME=D1,D2,...",
	 "the shape of ONNX model input NAME, for its dynamic dimensions "
	 "(or to replace the declared ones); repeatable"},
	{OPT_BIND_INPUTS, "bind-inputs", 0, "DIR",
	 "ONNX model inputs whose values an op needs at import (a Reshape's "
	 "shape, Slice's starts, a Range's limit, ...) take their values "
	 "from DIR/input_K.pb (as --inputs reads them) and become "
	 "constants: the model is specialised to them; the other inputs "
	 "stay inputs, and --inputs skips the files of bound ones"},
	{OPT_BIND, "bind", 0, "NAME=FILE",
	 "the same for ONNX model input NAME from the TensorProto FILE; "
	 "repeatable"},
	{OPT_RULES, "rules", 0, "FILE",
	 "load the aggregation rule table from FILE (fuselab-rules/1 JSON)"},
	{OPT_DISABLE_RULE, "disable-rule", 0, "ID",
	 "switch rule ID off (repeatable)"},
	{OPT_NEVER_FUSE, "never-fuse", 0, "A,B",
	 "never put ops A and B in one micro-graph (repeatable)"},
	{OPT_FUSE, "fuse", 0, "A,B",
	 "put ops A and B together when no cycle forbids it (repeatable)"},
	{OPT_OVERRIDES, "overrides", 0, "FILE",
	 "forbid and force fusions as listed in FILE (fuselab-overrides/1 "
	 "JSON, as the explorer saves them), after --never-fuse and --fuse"},
	{OPT_NO_PREPROCESS, "no-preprocess", 0, NULL,
	 "skip simplification, CSE, constant folding and dead-code removal"},
	{OPT_RUN, "run", 0, NULL,
	 "with --batch: generate, compile, run and verify the kernels of each "
	 "strategy against the interpreter"},
	{OPT_STRATEGY, "strategy", 0, "S",
	 "unfused, xla, apollo-l1, apollo-l2, apollo or all (default all)"},
	{OPT_TARGET, "target", 0, "T",
	 "the backend of --run, --emit and the explorer's run: cpu (C + "
	 "OpenMP, default) or cuda (compiled with nvcc; without a CUDA "
	 "device the CUDA is still compiled when nvcc exists, and the CPU "
	 "backend runs: \"no CUDA device: CPU backend only\")"},
	{OPT_EMIT, "emit", 0, "DIR",
	 "with --batch: write the generated code of each strategy to DIR "
	 "(NAME-STRATEGY.c, or .cu with --target cuda), without running it"},
	{OPT_WORKDIR, "workdir", 0, "DIR",
	 "where --run makes a fresh work directory (default: $TMPDIR)"},
	{OPT_KEEP, "keep", 0, NULL, "keep the work directory of --run"},
	{OPT_PIN, "pin", 0, NULL,
	 "pin the timing process's OpenMP threads to cores (OMP_PROC_BIND="
	 "close, OMP_PLACES=cores); off by default"},
	{OPT_MACHINE, "machine", 0, "SPEC",
	 "plan tiles, buffers and threads for another machine, e.g. "
	 "cores=8,l1d=48K,l2=2M,l3=32M,isa=avx512f (fields not named are "
	 "the host's; also $FUSELAB_MACHINE); timings still run here"},
	{OPT_TIMEOUT, "timeout", 0, "SECONDS",
	 "time limit of each call of a generated kernel (default 60)"},
	{OPT_WARMUP, "warmup", 0, "N", "untimed runs before timing (default 1)"},
	{OPT_REPEAT, "repeat", 0, "N",
	 "timed rounds; the median, min and max are reported (default 10). "
	 "The strategies are timed together, interleaved, in one process; "
	 "a difference is \"faster\"/\"SLOWER\" only when one side was "
	 "quicker in so many rounds (pairs) that chance would do it under "
	 "1 time in 20 (a sign test; with fewer than 5 rounds, only when "
	 "the min..max ranges do not overlap), else \"within noise\"; "
	 "with 1 round there is no spread and nothing is called faster or "
	 "slower (\"one round\")"},
	{OPT_SCHED_BUDGET, "sched-budget", 0, "N",
	 "isl operations the scheduler may spend per micro-graph (default "
	 "2000000); past it, layer 1 splits the micro-graph"},
	{OPT_L1_MAX_STMTS, "l1-max-stmts", 0, "N",
	 "largest micro-graph (in statements) handed to the isl scheduler "
	 "(default 32); a bigger one is cut into pieces along the op order"},
	{OPT_L1_TIME_BUDGET, "l1-time-budget", 0, "SECONDS",
	 "seconds layer 1 may spend (default 600); past them the remaining "
	 "micro-graphs are left unfused"},
	{OPT_MAX_RECOMPUTE, "max-recompute", 0, "X",
	 "do not fuse a producer whose tiles would recompute it more than X "
	 "times (default 1.5)"},
	{OPT_LOCAL_BUDGET, "local-budget", 0, "SIZE",
	 "bytes the tile-local buffers of one tile may take together "
	 "(default: the per-core L2, with --target cuda 48K of shared "
	 "memory; K, M, G suffixes); past it the largest stay in main "
	 "memory"},
	{OPT_STITCH_CAPACITY, "stitch-capacity", 0, "SIZE",
	 "bytes per tile a tensor on an edge that layer 2 stitches may take "
	 "to be tile-local (default: the per-core L2, with --target cuda "
	 "48K of shared memory; K, M, G suffixes); a larger one stays in "
	 "main memory"},
	{OPT_LAUNCH_COST, "launch-cost", 0, "US",
	 "microseconds one kernel costs beyond its memory and compute time "
	 "in layer 3's cost model (default 5); a set of kernels run side by "
	 "side pays it once"},
	{OPT_TILE, "tile", 0, "T1,T2,...",
	 "tile sizes of the live-out band, outermost first (default: from "
	 "the machine's cores and caches, per kernel; the tiled event says "
	 "why)"},
	{OPT_DOT, "dot", 0, "FILE|DIR",
	 "with --batch: write the graph at the step reached (--stage, --step; "
	 "default the end of codegen) as Graphviz DOT, to FILE or to "
	 "DIR/<graph>.dot"},
	{OPT_SVG, "svg", 0, "FILE|DIR", "the same picture as SVG"},
	{OPT_PNG, "png", 0, "FILE|DIR", "the same picture as PNG"},
	{OPT_FRAMES, "frames", 0, NULL,
	 "with --dot/--svg/--png DIR: one picture per decision, numbered, "
	 "titled with its reason"},
	{OPT_NEIGHBOURHOOD, "neighbourhood", 0, "K",
	 "pictures show only the decision's ops and K hops around them"},
	{OPT_SCHEDULE_TREES, "schedule-trees", 0, NULL,
	 "with --dot/--svg/--png DIR: also each kernel's isl schedule tree"},
	{OPT_DOMAIN, "domain", 0, "KERNEL:STATEMENT",
	 "with --dot/--svg/--png: the iteration domain of a statement of a "
	 "kernel (fl_k0:S0_0 or 0:S0_0), points coloured by tile"},
	{OPT_DOMAIN_DIMS, "domain-dims", 0, "X,Y",
	 "the two dimensions --domain draws (default the last two)"},
	{OPT_DOMAIN_FIXED, "domain-fixed", 0, "V,...",
	 "values of the other dimensions, outermost first (default 0)"},
	{OPT_TRACE, "trace", 0, "FILE",
	 "with --batch: write a Chrome trace (Perfetto, chrome://tracing) of "
	 "the compile and, with --run, of each strategy's kernel runs"},
	{OPT_REPORT, "report", 0, "FILE",
	 "with --batch: write the JSON report (fuselab-report/1, "
	 "docs/report-format.md) of the state and, with --run, the timings"},
	{OPT_EXPORT_ONNX, "export-onnx", 0, "FILE",
	 "write the graph as loaded as an ONNX model (opset 17) to FILE; "
	 "without --batch: only that (and the graph summary)"},
};

#define N_SPECS (sizeof specs / sizeof specs[0])

/* Prints text from column `indent` (the cursor is there), wrapping at
 * `width` with continuation lines indented alike. */
static void print_wrapped(FILE *out, const char *text, int indent, int width)
{
	int col = indent;

	while (*text) {
		int len = (int)strcspn(text, " ");

		if (col > indent && col + 1 + len > width) {
			fprintf(out, "\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', out);
			col++;
		}
		fprintf(out, "%.*s", len, text);
		col += len;
		text += len;
		while (*text == ' ')
			text++;
	}
	fputc('\n', out);
}

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
		fprintf(out, "  %-22s ", left);
		print_wrapped(out, specs[i].help, 25, 79);
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

/* "8G", "512M", "1000": bytes, or -1 (not a size), -2 (more than int64
 * holds), -3 (zero). */
static int64_t parse_size(const char *s)
{
	char *end;
	long long v;
	int shift = 0;

	errno = 0;
	if (*s == '-' || *s == '+')
		return -1;
	v = strtoll(s, &end, 10);
	if (end == s)
		return -1;
	if (errno == ERANGE)
		return -2;
	if (errno || v < 0)
		return -1;
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	default: break;
	}
	if (*end)
		return -1;
	if (v > (INT64_MAX >> shift))
		return -2;
	if (v == 0)
		return -3;
	return (int64_t)v << shift;
}

/* The host as machine description spec (--machine, $FUSELAB_MACHINE)
 * changes it, into o; -1 with the reason in err. */
static int set_machine(fl_options *o, const char *spec, const char *from,
		       char *err, size_t err_len)
{
	char why[256];

	o->machine = *fl_machine_host();
	o->machine_spec = spec;
	if (fl_machine_describe(&o->machine, spec, why, (int)sizeof why))
		return 0;
	snprintf(err, err_len, "%s: %s", from, why);
	return -1;
}

static int parse_int(const char *arg, const char *opt, long lo, long hi,
		     long *out, char *err, size_t err_len)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < lo || v > hi) {
		snprintf(err, err_len, "--%s: expected an integer from %ld to %ld, "
			 "got \"%s\"", opt, lo, hi, arg);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_tiles(const char *arg, fl_options *o, char *err,
		       size_t err_len)
{
	const char *p = arg;

	o->n_tile = 0;
	while (*p) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || end == p || v < 1 || v > 1 << 20 || o->n_tile >= 8 ||
		    (*end && *end != ',')) {
			snprintf(err, err_len, "--tile: expected up to 8 positive "
				 "sizes such as 32,32, got \"%s\"", arg);
			return -1;
		}
		o->tile[o->n_tile++] = v;
		if (*end == ',' && !end[1]) {
			snprintf(err, err_len, "--tile: \"%s\" ends in a comma: "
				 "expected a size after it", arg);
			return -1;
		}
		p = *end ? end + 1 : end;
	}
	if (o->n_tile == 0) {
		snprintf(err, err_len, "--tile: expected sizes such as 32,32");
		return -1;
	}
	return 0;
}

int fl_options_parse_numbers(const char *arg, long *v, int max, long lo)
{
	const char *p = arg;
	int n = 0;

	while (*p) {
		char *end;

		errno = 0;
		if (n == max)
			return -1;
		v[n] = strtol(p, &end, 10);
		if (errno || end == p || v[n] < lo || (*end && *end != ','))
			return -1;
		n++;
		if (*end == ',' && !end[1])
			return -1;
		p = *end ? end + 1 : end;
	}
	return n;
}

static int parse_dims(const char *arg, fl_options *o, char *err,
		      size_t err_len)
{
	long v[2];

	if (fl_options_parse_numbers(arg, v, 2, 0) != 2 || v[0] == v[1] || v[0] > 15 ||
	    v[1] > 15) {
		snprintf(err, err_len, "--domain-dims: expected two different "
			 "dimension numbers such as 2,3, got \"%s\"", arg);
		return -1;
	}
	o->domain_dims[0] = (int)v[0];
	o->domain_dims[1] = (int)v[1];
	return 0;
}

static int parse_fixed(const char *arg, fl_options *o, char *err,
		       size_t err_len)
{
	int n = fl_options_parse_numbers(arg, o->domain_fixed, 8, -(1L << 40));

	if (n < 1) {
		snprintf(err, err_len, "--domain-fixed: expected up to 8 whole "
			 "numbers such as 0,1, got \"%s\"", arg);
		return -1;
	}
	o->n_domain_fixed = n;
	return 0;
}

/* --input-shape NAME=D1,D2,...: a name (cut at the last '=', so that
 * names holding '=' still work) and up to FL_MAX_RANK extents >= 1. */
static int check_input_shape(const char *arg, char *err, size_t err_len)
{
	const char *eq = strrchr(arg, '=');
	long dims[64];		/* more than a rank, to name a rank too high */
	int n = eq && eq != arg ? fl_options_parse_numbers(eq + 1, dims, 64, 1)
				: -1;

	if (n > FL_MAX_RANK) {
		snprintf(err, err_len, "--input-shape %s: rank above %d", arg,
			 FL_MAX_RANK);
		return -1;
	}
	if (n < 1) {
		snprintf(err, err_len, "--input-shape: expected NAME=D1,D2,... "
			 "with extents >= 1, got \"%s\"", arg);
		return -1;
	}
	return 0;
}

/* Appends arg to a repeatable option's list. */
static int push(const char **list, int *n, const char *arg, const char *opt,
		char *err, size_t err_len)
{
	if (*n >= FL_MAX_LIST) {
		snprintf(err, err_len, "--%s given more than %d times", opt,
			 FL_MAX_LIST);
		return -1;
	}
	list[(*n)++] = arg;
	return 0;
}

static int check_pair(const char *arg, const char *opt, char *err,
		      size_t err_len)
{
	const char *comma = strchr(arg, ',');

	if (!comma || comma == arg || !comma[1] || strchr(comma + 1, ',') ||
	    (size_t)(comma - arg) >= 128 || strlen(comma + 1) >= 128) {
		snprintf(err, err_len, "--%s: expected two op names as A,B, got "
			 "\"%s\"", opt, arg);
		return -1;
	}
	return 0;
}

static int parse_format(const char *arg, fl_options *o, char *err,
			size_t err_len)
{
	if (!strcmp(arg, "text"))
		o->format = FL_FORMAT_TEXT;
	else if (!strcmp(arg, "json"))
		o->format = FL_FORMAT_JSON;
	else if (!strcmp(arg, "jsonl"))
		o->format = FL_FORMAT_JSONL;
	else {
		snprintf(err, err_len, "--format: expected text, json or jsonl, "
			 "got \"%s\"", arg);
		return -1;
	}
	return 0;
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
	case OPT_EVENTS: o->events = true; break;
	case OPT_NO_PREPROCESS: o->no_preprocess = true; break;
	case OPT_RULES: o->rules_file = arg; break;
	case OPT_OVERRIDES: o->overrides_file = arg; break;
	case OPT_FORMAT: return parse_format(arg, o, err, err_len);
	case OPT_STAGE: {
		fl_pass p;

		if (fl_pass_parse(arg, &p) < 0) {
			snprintf(err, err_len, "--stage: unknown stage \"%s\" "
				 "(known: preprocess, cluster, open, classify, "
				 "constrain, aggregate, partition, layer1, layer2, "
				 "layer3, codegen, compile, run)", arg);
			return -1;
		}
		o->stage = arg;
		break;
	}
	case OPT_STEP: {
		long v;

		if (parse_int(arg, spec->lng, 0, 2000000000L, &v, err,
			      err_len) < 0)
			return -1;
		o->step = (int)v;
		break;
	}
	case OPT_WHY: break;	/* two values: handled by the parser */
	case OPT_RUN: o->run = true; break;
	case OPT_KEEP: o->keep = true; break;
	case OPT_PIN: o->pin = true; break;
	case OPT_MACHINE:
		if (set_machine(o, arg, "--machine", err, err_len) < 0)
			return -1;
		break;
	case OPT_TARGET:
		if (fl_target_parse(arg, &o->target) < 0) {
			snprintf(err, err_len, "--target: expected cpu or cuda, "
				 "got \"%s\"", arg);
			return -1;
		}
		break;
	case OPT_EMIT: o->emit_dir = arg; break;
	case OPT_WORKDIR: o->workdir = arg; break;
	case OPT_TILE: return parse_tiles(arg, o, err, err_len);
	case OPT_DOT: o->dot = arg; break;
	case OPT_SVG: o->svg = arg; break;
	case OPT_PNG: o->png = arg; break;
	case OPT_TRACE: o->trace_file = arg; break;
	case OPT_REPORT: o->report_file = arg; break;
	case OPT_INPUTS: o->inputs_dir = arg; break;
	case OPT_EXPECT: o->expect_dir = arg; break;
	case OPT_EXPORT_ONNX: o->onnx_file = arg; break;
	case OPT_FRAMES: o->frames = true; break;
	case OPT_SCHEDULE_TREES: o->schedule_trees = true; break;
	case OPT_DOMAIN:
		if (!strchr(arg, ':') || arg[0] == ':' || !strchr(arg, ':')[1]) {
			snprintf(err, err_len, "--domain: expected KERNEL:STATEMENT "
				 "such as fl_k0:S0_0, got \"%s\"", arg);
			return -1;
		}
		o->domain = arg;
		break;
	case OPT_NEIGHBOURHOOD: {
		long k;

		if (parse_int(arg, "neighbourhood", 0, 1000, &k, err, err_len) < 0)
			return -1;
		o->neighbourhood = (int)k;
		break;
	}
	case OPT_DOMAIN_DIMS:
		return parse_dims(arg, o, err, err_len);
	case OPT_DOMAIN_FIXED:
		return parse_fixed(arg, o, err, err_len);
	case OPT_STRATEGY:
		if (strcmp(arg, "all") && strcmp(arg, "unfused") &&
		    strcmp(arg, "xla") && strcmp(arg, "apollo-l1") &&
		    strcmp(arg, "apollo-l2") && strcmp(arg, "apollo")) {
			snprintf(err, err_len, "--strategy: expected unfused, xla, "
				 "apollo-l1, apollo-l2, apollo or all, got "
				 "\"%s\"", arg);
			return -1;
		}
		o->strategy = arg;
		break;
	case OPT_TIMEOUT: {
		long v;

		if (parse_int(arg, spec->lng, 1, 86400, &v, err, err_len) < 0)
			return -1;
		o->timeout_s = (int)v;
		break;
	}
	case OPT_WARMUP:
	case OPT_REPEAT: {
		long v;

		if (parse_int(arg, spec->lng, spec->id == OPT_WARMUP ? 0 : 1,
			      1000, &v, err, err_len) < 0)
			return -1;
		if (spec->id == OPT_WARMUP)
			o->warmup = (int)v;
		else
			o->repeat = (int)v;
		break;
	}
	case OPT_SCHED_BUDGET:
		if (parse_int(arg, spec->lng, 1, 2000000000L, &o->sched_budget,
			      err, err_len) < 0)
			return -1;
		break;
	case OPT_L1_MAX_STMTS: {
		long v;

		if (parse_int(arg, spec->lng, 1, 1000000, &v, err, err_len) < 0)
			return -1;
		o->l1_max_stmts = (int)v;
		break;
	}
	case OPT_L1_TIME_BUDGET:
		o->l1_time_budget = strtod(arg, &end);
		if (end == arg || *end || !(o->l1_time_budget > 0) ||
		    !(o->l1_time_budget <= 1e9)) {
			snprintf(err, err_len, "--l1-time-budget: expected "
				 "seconds > 0, got \"%s\"", arg);
			return -1;
		}
		break;
	case OPT_LAUNCH_COST:
		o->launch_cost_us = strtod(arg, &end);
		if (end == arg || *end || !(o->launch_cost_us >= 0) ||
		    !(o->launch_cost_us <= 1e9)) {
			snprintf(err, err_len, "--launch-cost: expected "
				 "microseconds >= 0, got \"%s\"", arg);
			return -1;
		}
		o->launch_cost_set = true;
		break;
	case OPT_EXPECT_ATOL:
		o->expect_atol = strtod(arg, &end);
		if (end == arg || *end || !(o->expect_atol >= 0) ||
		    !(o->expect_atol <= 1e6)) {
			snprintf(err, err_len, "--expect-atol: expected a "
				 "tolerance >= 0, got \"%s\"", arg);
			return -1;
		}
		o->expect_atol_set = true;
		break;
	case OPT_MAX_RECOMPUTE:
		o->max_recompute = strtod(arg, &end);
		if (end == arg || *end || !(o->max_recompute >= 1.0)) {
			snprintf(err, err_len, "--max-recompute: expected a factor "
				 ">= 1, got \"%s\"", arg);
			return -1;
		}
		break;
	case OPT_BIND_INPUTS: o->bind_dir = arg; break;
	case OPT_BIND:
		if (!strchr(arg, '=') || arg[0] == '=' || !strchr(arg, '=')[1]) {
			snprintf(err, err_len, "--bind: expected NAME=FILE, got "
				 "\"%s\"", arg);
			return -1;
		}
		return push(o->bind, &o->n_bind, arg, spec->lng, err, err_len);
	case OPT_INPUT_SHAPE:
		if (check_input_shape(arg, err, err_len) < 0)
			return -1;
		return push(o->input_shape, &o->n_input_shape, arg, spec->lng,
			    err, err_len);
	case OPT_DISABLE_RULE:
		return push(o->disabled, &o->n_disabled, arg, spec->lng, err,
			    err_len);
	case OPT_NEVER_FUSE:
		if (check_pair(arg, spec->lng, err, err_len) < 0)
			return -1;
		return push(o->never, &o->n_never, arg, spec->lng, err, err_len);
	case OPT_FUSE:
		if (check_pair(arg, spec->lng, err, err_len) < 0)
			return -1;
		return push(o->fuse, &o->n_fuse, arg, spec->lng, err, err_len);
	case OPT_SEED:
		errno = 0;
		o->seed = strtoull(arg, &end, 10);
		if (errno || end == arg || *end || *arg == '-') {
			snprintf(err, err_len, "--seed: expected a non-negative "
				 "integer, got \"%s\"", arg);
			return -1;
		}
		break;
	case OPT_LOCAL_BUDGET:
		o->local_budget = parse_size(arg);
		if (o->local_budget == -2 || o->local_budget == -3 ||
		    o->local_budget < 0) {
			snprintf(err, err_len, "--local-budget: %s, got \"%s\"",
				 o->local_budget == -2 ? "more than the largest "
				 "size, 8 EiB" : o->local_budget == -3 ?
				 "the size must be more than 0" :
				 "expected a size such as 256K or 1M", arg);
			return -1;
		}
		break;
	case OPT_STITCH_CAPACITY:
		o->stitch_capacity = parse_size(arg);
		if (o->stitch_capacity <= 0) {
			snprintf(err, err_len, "--stitch-capacity: %s, got \"%s\"",
				 o->stitch_capacity == -2 ? "more than the "
				 "largest size, 8 EiB" : o->stitch_capacity == -3 ?
				 "the size must be more than 0" :
				 "expected a size such as 256K or 1M", arg);
			return -1;
		}
		break;
	case OPT_MAX_MEMORY:
		o->max_bytes = parse_size(arg);
		if (o->max_bytes == -2) {
			snprintf(err, err_len, "--max-memory: \"%s\" is more than "
				 "the largest size, %lld bytes (8 EiB)", arg,
				 (long long)INT64_MAX);
			return -1;
		}
		if (o->max_bytes == -3) {
			snprintf(err, err_len, "--max-memory: the size must be more "
				 "than 0, got \"%s\"", arg);
			return -1;
		}
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
	if (spec->id == OPT_WHY) {
		if (eq || *i + 2 >= argc) {
			snprintf(err, err_len, "--why needs two op names: --why A B");
			return -1;
		}
		o->why_a = argv[++*i];
		o->why_b = argv[++*i];
		return 0;
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

/* Options that only shape pictures need somewhere to put them. */
static int check_pictures(const fl_options *o, char *err, size_t err_len)
{
	bool target = o->dot || o->svg || o->png;
	const char *alone = o->frames ? "--frames"
			    : o->schedule_trees ? "--schedule-trees"
			    : o->domain ? "--domain"
			    : o->neighbourhood >= 0 ? "--neighbourhood"
			    : o->domain_dims[0] >= 0 ? "--domain-dims"
			    : o->n_domain_fixed ? "--domain-fixed" : NULL;

	if (!target && alone) {
		snprintf(err, err_len, "%s needs --dot, --svg or --png", alone);
		return -1;
	}
	if ((o->domain_dims[0] >= 0 || o->n_domain_fixed) && !o->domain) {
		snprintf(err, err_len, "%s needs --domain",
			 o->n_domain_fixed ? "--domain-fixed" : "--domain-dims");
		return -1;
	}
	return 0;
}

int fl_options_parse(int argc, char **argv, fl_options *o, char *err,
		     size_t err_len)
{
	memset(o, 0, sizeof *o);
	o->seed = FL_INTERP_DEFAULT_SEED;
	o->max_bytes = FL_INTERP_DEFAULT_MAX_BYTES;
	o->timeout_s = 60;
	o->step = -1;
	o->warmup = 1;
	o->repeat = 10;
	o->neighbourhood = -1;
	o->domain_dims[0] = o->domain_dims[1] = -1;
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
	if (o->expect_atol_set && !o->expect_dir) {
		snprintf(err, err_len, "--expect-atol needs --expect DIR");
		return -1;
	}
	if (!o->machine_spec && getenv("FUSELAB_MACHINE") &&
	    getenv("FUSELAB_MACHINE")[0] &&
	    set_machine(o, getenv("FUSELAB_MACHINE"), "FUSELAB_MACHINE", err,
			err_len) < 0)
		return -1;
	/* the ONNX export needs only the graph: alone it is a batch run */
	if (o->onnx_file && o->mode == FL_MODE_INTERACTIVE)
		o->mode = FL_MODE_BATCH;
	if (o->mode != FL_MODE_BATCH) {
		const char *need = o->interpret ? "--interpret"
				   : o->inputs_dir ? "--inputs"
				   : o->expect_dir ? "--expect"
				   : o->stage	 ? "--stage"
				   : o->step >= 0 ? "--step"
				   : o->events	 ? "--events"
				   : o->why_a	 ? "--why"
				   : o->run	 ? "--run"
				   : o->emit_dir ? "--emit"
				   : o->dot	 ? "--dot"
				   : o->svg	 ? "--svg"
				   : o->png	 ? "--png"
				   : o->trace_file ? "--trace"
				   : o->report_file ? "--report"
				   : o->onnx_file ? "--export-onnx"
						 : NULL;

		if (need) {
			snprintf(err, err_len, "%s needs --batch", need);
			return -1;
		}
	}
	return check_pictures(o, err, err_len);
}
