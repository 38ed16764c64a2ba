/* Batch mode: what a script or a test sees of fuselab.  Exit status 0 on
 * success, 1 when running fails, 2 for bad input (app/main.c maps them). */
#include "batch.h"

#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "bytes.h"
#include "engine.h"
#include "interp.h"
#include "loader.h"
#include "overrides.h"
#include "export.h"
#include "feeds.h"
#include "import.h"
#include "report_json.h"
#include "run.h"
#include "signals.h"

extern const char fl_builtin_sample_json[];

#define BUILTIN_SOURCE "<built-in: bert_encoder.json>"

fl_graph *fl_app_load(const fl_options *o, fl_error *err)
{
	if (o->file)
		return fl_app_load_path(o->file, o, NULL, err);
	return fl_load_graph_string(fl_builtin_sample_json,
				    strlen(fl_builtin_sample_json),
				    BUILTIN_SOURCE, err);
}

static const char *escape_controls(const char *s, bool keep_lines)
{
	static char *bufs[8];
	static size_t caps[8];
	static int next;
	size_t need = 1, o = 0;
	bool clean = true;
	char *b;

	if (!s)
		return "";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		bool ctl = (*p < 0x20 || *p == 0x7f) &&
			   !(keep_lines && (*p == '\n' || *p == '\t'));

		clean &= !ctl;
		need += ctl ? 4 : 1;
	}
	if (clean)
		return s;
	if (caps[next] < need) {
		char *nb = realloc(bufs[next], need);

		if (!nb)
			return "(out of memory)";
		bufs[next] = nb;
		caps[next] = need;
	}
	b = bufs[next];
	next = (next + 1) % 8;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		bool ctl = (*p < 0x20 || *p == 0x7f) &&
			   !(keep_lines && (*p == '\n' || *p == '\t'));

		if (ctl)
			o += (size_t)snprintf(b + o, 5, "\\x%02x", *p);
		else
			b[o++] = (char)*p;
	}
	b[o] = '\0';
	return b;
}

const char *fl_safe_name(const char *s)
{
	return escape_controls(s, false);
}

const char *fl_safe_text(const char *s)
{
	return escape_controls(s, true);
}

#define SAFE_NAME_MAX 64

/* See batch.h: name as one safe file-name component (names from input files never
 * form paths): letters, digits, '-', '_' and '.' (not leading) are kept,
 * every other byte becomes '_'; at most SAFE_NAME_MAX bytes; "graph"
 * when empty. */
void fl_app_file_name(const char *name, char *out, size_t n)
{
	size_t k = 0;

	for (const char *c = name; *c && k + 1 < n && k < SAFE_NAME_MAX; c++) {
		unsigned char ch = (unsigned char)*c;
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			  (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
			  (ch == '.' && k > 0);

		out[k++] = ok ? (char)ch : '_';
	}
	out[k] = '\0';
	if (k == 0)
		snprintf(out, n, "graph");
}

static void print_summary(const fl_graph *g, const fl_options *o)
{
	fl_graph_summary s;
	char b[5][32];

	fl_graph_summarize(g, &s);
	printf("file: %s\n", fl_safe_name(o->file ? o->file : BUILTIN_SOURCE));
	printf("graph: %s\n", fl_safe_name(g->name));
	if (g->doc)
		printf("doc: %s\n", fl_safe_name(g->doc));
	printf("ops: %d (%d compound, %d primitive)\n", s.n_ops, s.n_compound,
	       s.n_primitive);
	printf("tensors: %d (%d input, %d param, %d const, %d output, "
	       "%d intermediate)\n",
	       s.n_tensors, s.n_inputs, s.n_params, s.n_consts, s.n_outputs,
	       s.n_temps);
	printf("bytes: inputs %s, params+consts %s, outputs %s, "
	       "intermediates %s, total %s\n",
	       fl_format_bytes(s.input_bytes, b[0], sizeof b[0]),
	       fl_format_bytes(s.param_bytes, b[1], sizeof b[1]),
	       fl_format_bytes(s.output_bytes, b[2], sizeof b[2]),
	       fl_format_bytes(s.temp_bytes, b[3], sizeof b[3]),
	       fl_format_bytes(s.total_bytes, b[4], sizeof b[4]));
}

/* --rules, --disable-rule and --overrides are checked whatever runs: a
 * bad rules or overrides file is an error even when no engine pass would
 * read it.  -1 (message printed) when they are bad. */
int fl_app_check_rules(const fl_options *o)
{
	fl_engine_opts eo;

	if (!o->rules_file && !o->n_disabled && !o->overrides_file)
		return 0;
	return fl_app_engine_opts(o, &eo);
}

/* The op names of --overrides FILE are checked against the graph here,
 * not by the engine, so that the message names the file and the entry
 * rather than a --never-fuse the user never typed. */
int fl_app_check_overrides(const fl_options *o, const fl_graph *g)
{
	fl_error err = {""};
	fl_overrides *l;
	int rc;

	if (!o->overrides_file)
		return 0;
	if (fl_overrides_load(o->overrides_file, &l, &err) < 0) {
		fprintf(stderr, "fuselab: %s\n", fl_safe_name(err.msg));
		return -1;
	}
	rc = fl_overrides_check(l, g, o->overrides_file, &err);
	if (rc < 0)
		fprintf(stderr, "fuselab: %s\n", fl_safe_name(err.msg));
	fl_overrides_free(l);
	return rc;
}

int fl_batch_check(const fl_options *o)
{
	fl_onnx_info info = {0};
	fl_error err = {""};
	fl_graph *g;

	if (fl_app_check_rules(o) < 0)
		return 2;
	g = o->file ? fl_app_load_path(o->file, o, &info, &err)
		    : fl_app_load(o, &err);
	if (g && o->file && fl_onnx_is_model_path(o->file))
		fl_app_print_onnx_summary(stdout, &info);
	fl_onnx_info_free(&info);
	if (!g) {
		fprintf(stderr, "fuselab: %s\n", fl_safe_name(err.msg));
		return 2;
	}
	if (fl_app_check_overrides(o, g) < 0) {
		fl_graph_free(g);
		return 2;
	}
	print_summary(g, o);
	printf("valid: yes\n");
	fl_graph_free(g);
	return 0;
}

/* Seconds spent on the ops that output tensor t depends on (its cone). */
static double cone_seconds(const fl_graph *g, const fl_values *v, int t,
			   char *mark)
{
	int p = g->tensors[t].producer;
	double s = 0;

	memset(mark, 0, (size_t)g->n_ops);
	if (p >= 0)
		mark[p] = 1;
	/* Ops are in topological order: sweep backwards once. */
	for (int i = g->n_ops - 1; i >= 0; i--) {
		if (!mark[i])
			continue;
		s += v->op_seconds[i];
		for (int k = 0; k < g->ops[i].n_in; k++) {
			int q = g->tensors[g->ops[i].in[k]].producer;

			if (q >= 0)
				mark[q] = 1;
		}
	}
	return s;
}

/* The interpreter's options: the seed, the memory limit and the
 * --inputs values. */
static fl_interp_opts interp_opts(const fl_options *o,
				  const fl_tensor_files *in)
{
	fl_interp_opts io;

	fl_interp_opts_default(&io);
	io.seed = o->seed;
	io.max_bytes = o->max_bytes;
	io.feeds = in->t;
	io.n_feeds = in->n;
	return io;
}

static void print_checksums(const fl_graph *g, const fl_options *o,
			    const fl_values *v, const int *outs, int n,
			    char *mark)
{
	double total = 0;

	for (int i = 0; i < g->n_ops; i++)
		total += v->op_seconds[i];
	if (o->inputs_dir)
		printf("interpreted: %d ops in %.3f s (inputs from %s)\n",
		       g->n_ops, total, fl_safe_name(o->inputs_dir));
	else
		printf("interpreted: %d ops in %.3f s (seed %llu)\n", g->n_ops,
		       total, (unsigned long long)o->seed);
	for (int k = 0; k < n; k++) {
		const fl_buf *b = &v->bufs[outs[k]];
		fl_checksum c = fl_buf_checksum(b);
		char sh[128];

		printf("output %s %s: checksum sum=%.9g abs=%.9g hash=%016llx "
		       "nan=%lld time=%.3f ms\n",
		       fl_safe_name(g->tensors[outs[k]].name),
		       fl_shape_format(&b->shape, sh, sizeof sh), c.sum, c.abs_sum,
		       (unsigned long long)c.hash, (long long)c.n_nan,
		       1e3 * cone_seconds(g, v, outs[k], mark));
	}
}

/* --interpret and --expect: runs the reference interpreter (on the
 * --inputs values when given); prints the outputs' checksums
 * (--interpret) and compares them with the expected ones (--expect:
 * *mismatch when one differs).  1 when the interpreter failed. */
static int interpret(const fl_graph *g, const fl_options *o,
		     const fl_tensor_files *in, const fl_tensor_files *expect,
		     bool *mismatch)
{
	fl_interp_opts io = interp_opts(o, in);
	fl_error err = {""};
	fl_values *v = fl_interp_run(g, &io, &err);
	char *mark;
	int *outs, n, rc = 0;

	if (!v) {
		fprintf(stderr, "fuselab: %s: %s\n", fl_safe_name(g->name),
			fl_safe_name(err.msg));
		return 1;
	}
	mark = malloc((size_t)g->n_ops + 1);
	n = fl_graph_outputs(g, &outs);
	if (!mark || n < 0) {
		fprintf(stderr, "fuselab: out of memory\n");
		free(mark);
		fl_values_free(v);
		return 1;
	}
	if (o->interpret)
		print_checksums(g, o, v, outs, n, mark);
	if (expect->n)
		*mismatch = fl_expect_compare(g, v, expect,
					      o->expect_atol_set ? o->expect_atol
							  : FL_EXPECT_ATOL) != 0;
	free(outs);
	free(mark);
	fl_values_free(v);
	return rc;
}

/* The pass the command line asks the engine to stop after: --stage, or
 * the partition for --events/--why/--step alone. */
static fl_pass stop_pass(const fl_options *o)
{
	/* exports show the kernels unless a stage is named */
	fl_pass p = fl_app_exports_wanted(o) ? FL_PASS_CODEGEN
					     : FL_PASS_AGGREGATE;

	if (o->stage)
		fl_pass_parse(o->stage, &p);
	return p;
}

/* A progress line on stderr (a terminal only: tests and pipes see
 * nothing): "layer1 12/157", rewritten in place, ended at the last. */
static void tty_progress(void *user, const char *phase, int k, int n)
{
	(void)user;
	fprintf(stderr, "\rfuselab: %s %d/%d%s", phase, k, n,
		k >= n ? "\n" : "");
	fflush(stderr);
}

/* --overrides FILE: its pairs go after the command line's. */
static int add_overrides(const char *path, fl_engine_opts *eo, fl_error *err)
{
	fl_overrides *l;
	int rc;

	if (fl_overrides_load(path, &l, err) < 0)
		return -1;
	rc = fl_overrides_apply(l, eo, err);
	if (rc < 0)
		fl_error_prefix(err, "%s", path);
	fl_overrides_free(l);
	return rc;
}

/* Engine options from the command line; -1 (message printed) on bad
 * input such as an unreadable rules file or an unknown rule id. */
int fl_app_engine_opts(const fl_options *o, fl_engine_opts *eo)
{
	fl_error err = {""};

	fl_engine_opts_default(eo);
	eo->preprocess = !o->no_preprocess;
	if (o->rules_file && fl_rules_load(&eo->rules, o->rules_file, &err) < 0)
		goto bad;
	for (int i = 0; i < o->n_disabled; i++)
		if (fl_rules_disable(&eo->rules, o->disabled[i], &err) < 0)
			goto bad;
	for (int i = 0; i < o->n_never; i++, eo->n_never++)
		sscanf(o->never[i], "%127[^,],%127s", eo->never_fuse[i].a,
		       eo->never_fuse[i].b);
	for (int i = 0; i < o->n_fuse; i++, eo->n_fuse++)
		sscanf(o->fuse[i], "%127[^,],%127s", eo->fuse[i].a, eo->fuse[i].b);
	if (o->overrides_file && add_overrides(o->overrides_file, eo, &err) < 0)
		goto bad;
	if (o->sched_budget > 0)
		eo->layer1.sched_budget = o->sched_budget;
	if (o->max_recompute > 0)
		eo->layer1.max_recompute = o->max_recompute;
	if (o->l1_time_budget > 0)
		eo->layer1.time_budget_s = o->l1_time_budget;
	if (o->l1_max_stmts > 0)
		eo->layer1.max_stmts = o->l1_max_stmts;
	if (o->local_budget > 0)
		eo->layer1.local_budget = o->local_budget;
	if (o->stitch_capacity > 0)
		eo->stitch_capacity = o->stitch_capacity;
	if (o->launch_cost_set) {
		eo->launch_cost_set = true;
		eo->launch_cost = o->launch_cost_us * 1e-6;
	}
	eo->layer1.n_tile = o->n_tile;
	for (int i = 0; i < o->n_tile; i++)
		eo->layer1.tile[i] = o->tile[i];
	if (o->strategy && strcmp(o->strategy, "all") != 0)
		fl_strategy_parse(o->strategy, &eo->strategy);
	eo->stop_after = stop_pass(o);
	eo->run_kernels = eo->stop_after >= FL_PASS_COMPILE;
	eo->run.workdir = o->workdir;
	eo->run.keep = o->keep;
	eo->run.pin = o->pin;
	eo->run.target = o->target;
	eo->run.timeout_s = o->timeout_s;
	if (isatty(STDERR_FILENO))
		eo->run.progress = tty_progress;
	eo->run.warmup = o->warmup;
	eo->run.repeat = o->repeat;
	eo->interp.seed = o->seed;
	eo->interp.max_bytes = o->max_bytes;
	eo->run.interrupt = fl_app_signal_flag();
	eo->run.max_bytes = o->max_bytes;	/* the whole program's too */
	return 0;
bad:
	fprintf(stderr, "fuselab: %s\n", fl_safe_name(err.msg));
	return -1;
}

static void print_micro_graph(const fl_graph *g, const fl_micro_graph *m)
{
	printf("  G%-4d %s  ", m->id, fl_op_type_name(m->type));
	if (m->cluster >= 0)
		printf("F%-3d", m->cluster + 1);
	else
		printf("--  ");
	for (int i = 0; i < m->n_members; i++)	/* ascending: program order */
		printf(" %s", fl_safe_name(g->ops[m->members[i]].name));
	printf("  [%s]\n", *m->history ? fl_safe_name(m->history) : "-");
}

static void print_partition(const fl_session *s)
{
	const fl_graph *g = fl_engine_graph(s);
	const fl_partition *p = fl_engine_partition(s);

	printf("partition: %d micro-graphs from %d primitives in %d sub-graph%s\n",
	       fl_partition_count_alive(p), g->n_ops, p->n_clusters,
	       p->n_clusters == 1 ? "" : "s");
	for (int i = 0; i < p->n_groups; i++)
		if (p->groups[i].alive)
			print_micro_graph(g, &p->groups[i]);
}

/* The stitches layer 2 made so far (each one kernel fewer). */
static int count_stitches(const fl_session *s)
{
	const fl_event_log *log = fl_engine_events(s);
	int n = 0;

	for (int i = 0; i < fl_event_log_count(log); i++) {
		const fl_event *e = fl_event_log_get(log, i);

		n += e->pass == FL_PASS_LAYER2 && e->kind == FL_EV_MERGED;
	}
	return n;
}

/* The kernels layer 3 made of several running side by side, and the
 * kernels inside them. */
static int count_parallel(const fl_program *p, int *branches)
{
	int n = 0;

	*branches = 0;
	for (int k = 0; k < p->n_kernels; k++)
		if (p->kernels[k].n_branches > 0) {
			n++;
			*branches += p->kernels[k].n_branches;
		}
	return n;
}

static void print_layer1(const fl_session *s)
{
	const fl_program *p = fl_engine_program(s);
	const fl_graph *g = fl_engine_graph(s);
	int stitched = count_stitches(s);

	if (!p)
		return;
	if (fl_engine_options(s)->strategy == FL_STRATEGY_APOLLO_L2 &&
	    fl_engine_options(s)->stop_after >= FL_PASS_LAYER2)
		printf("layer 2: %d kernels, %d fewer than layer 1's %d "
		       "(stitched pairs)\n", p->n_kernels, stitched,
		       p->n_kernels + stitched);
	else if (fl_engine_options(s)->strategy == FL_STRATEGY_APOLLO &&
		 fl_engine_options(s)->stop_after >= FL_PASS_LAYER3) {
		int branches, n_par = count_parallel(p, &branches);

		printf("layer 3: %d kernels, %d of them running %d kernels side "
		       "by side (%d fewer)\n", p->n_kernels, n_par, branches,
		       branches - n_par);
	} else
		printf("layer 1: %d kernels\n", p->n_kernels);
	for (int k = 0; k < p->n_kernels; k++) {
		const fl_kernel *kn = &p->kernels[k];

		printf("  %s (micro-graph G%d, %d ops):", fl_safe_name(kn->name),
		       kn->group,
		       kn->n_ops);
		for (int i = 0; i < kn->n_ops; i++)
			printf(" %s", fl_safe_name(g->ops[kn->ops[i]].name));
		printf("\n");
		for (int t = 0; t < kn->n_tensors; t++) {
			const fl_kernel_tensor *kt = &kn->tensors[t];

			if (kt->place != FL_PLACE_GLOBAL)
				printf("    %s: %s (%s)\n",
				       fl_safe_name(g->tensors[kt->tensor].name),
				       fl_placement_name(kt->place),
				       fl_safe_name(kt->why));
		}
		if (kn->schedule_text)
			printf("%s\n", fl_safe_text(kn->schedule_text));
		else	/* a custom op (engine/layer1/layer1.c) */
			printf("    not scheduled by isl: the op's reference "
			       "code\n");
	}
}

/* The generated C: the whole unit once complete, else the kernels so
 * far. */
static void print_codegen(const fl_session *s)
{
	const fl_program *p = fl_engine_program(s);
	int n = 0;

	if (fl_engine_source(s)) {
		printf("codegen: %d kernels\n%s", p->n_kernels, fl_engine_source(s));
		return;
	}
	while (p && fl_engine_kernel_source(s, n))
		n++;
	if (!n)
		return;
	printf("codegen: %d of %d kernels so far\n", n, p->n_kernels);
	for (int k = 0; k < n; k++)
		printf("%s", fl_engine_kernel_source(s, k));
}

static void print_build(const fl_session *s)
{
	const fl_build *b = fl_engine_build(s);

	if (!b)
		return;
	if (b->status == FL_RUN_OK)
		printf("compile: %s %s: %s in %.2f s, %d warning%s\n",
		       b->compiler, b->flags,
		       b->cached ? "taken from the build cache" : "built",
		       b->seconds, b->n_warnings,
		       b->n_warnings == 1 ? "" : "s");
	else
		printf("compile: %s: %s\n", fl_run_status_name(b->status),
		       b->message);
}

static void print_run(const fl_session *s)
{
	const fl_run_result *r = fl_engine_run_result(s);
	const fl_program *p = fl_engine_program(s);
	const fl_graph *g = fl_engine_graph(s);
	char bytes[32];

	if (!r)
		return;
	printf("run: %s, %s; %.3f ms per program run, max abs err %.2e, rel "
	       "%.2e\n", fl_run_status_name(r->status),
	       r->verified ? "verified" : "NOT verified", 1e3 * r->total_seconds,
	       r->max_abs, r->max_rel);
	if (r->message[0])
		printf("  %s\n", fl_safe_name(r->message));
	for (int k = 0; k < r->n_kernels && k < p->n_kernels; k++) {
		const fl_kernel_result *kr = &r->kernels[k];

		printf("  %-7s %3d op%s  median %9.3f ms  min %9.3f  max %9.3f  "
		       "%10s  %s  err %.1e\n", fl_safe_name(p->kernels[k].name),
		       p->kernels[k].n_ops, p->kernels[k].n_ops == 1 ? " " : "s",
		       1e3 * kr->seconds, 1e3 * kr->min_seconds,
		       1e3 * kr->max_seconds,
		       fl_format_bytes(kr->bytes, bytes, sizeof bytes),
		       kr->ok ? "pass" : "FAIL", kr->max_abs);
	}
	for (int i = 0; i < r->n_outputs; i++)
		printf("  output %s: %s, max abs err %.2e, rel %.2e\n",
		       fl_safe_name(g->tensors[r->outputs[i].tensor].name),
		       r->outputs[i].ok ? "pass" : "FAIL", r->outputs[i].max_abs,
		       r->outputs[i].max_rel);
}

/* Where the session stands (with --step): "step 12 of 285: next is
 * aggregate merged ...".  The total and the next decision need the
 * complete run; when that would compile and run kernels, only the
 * position and the pass are printed. */
static void print_position(fl_session *s)
{
	fl_error err = {""};
	const fl_event *next;
	char line[1024];
	int total;

	if (fl_engine_options(s)->run_kernels && !fl_engine_done(s)) {
		printf("step %d, in pass %s\n", fl_engine_position(s),
		       fl_pass_name(fl_engine_current_pass(s)));
		return;
	}
	next = fl_engine_peek(s, &err);
	total = fl_engine_total(s, &err);
	printf("step %d of %d", fl_engine_position(s), total);
	if (next)
		printf(": next %s\n",
		       fl_safe_name(fl_event_format(next, line, sizeof line)));
	else
		printf(": the end\n");
}

static void print_state_text(fl_session *s, const fl_options *o)
{
	if (o->step >= 0)
		print_position(s);
	print_partition(s);
	print_layer1(s);
	print_codegen(s);
	print_build(s);
	print_run(s);
}

/* The state as one JSON object: partition, then what later passes made. */
static cJSON *state_json(const fl_session *s)
{
	cJSON *j = fl_report_partition(s);

	if (fl_engine_program(s))
		cJSON_AddItemToObject(j, "layer1", fl_report_layer1(s));
	if (fl_engine_kernel_source(s, 0))
		cJSON_AddItemToObject(j, "codegen", fl_report_codegen(s));
	if (fl_engine_build(s))
		cJSON_AddItemToObject(j, "compile", fl_report_build(s));
	if (fl_engine_run_result(s))
		cJSON_AddItemToObject(j, "run", fl_report_run(s));
	return j;
}

static void print_json(cJSON *j, bool pretty)
{
	char *text = pretty ? cJSON_Print(j) : cJSON_PrintUnformatted(j);

	if (text)
		printf("%s\n", text);
	free(text);
	cJSON_Delete(j);
}

static void print_events(const fl_session *s, fl_format f)
{
	const fl_event_log *log = fl_engine_events(s);
	char line[1024];

	for (int i = 0; i < fl_event_log_count(log); i++) {
		const fl_event *e = fl_event_log_get(log, i);

		if (f == FL_FORMAT_TEXT)
			printf("%s\n",
			       fl_safe_name(fl_event_format(e, line,
							    sizeof line)));
		else
			print_json(fl_report_event(e), false);
	}
}

static int print_why(fl_session *s, const fl_options *o)
{
	fl_error err = {""};
	char why[1024];
	int rc = fl_engine_explain(s, o->why_a, o->why_b, why, sizeof why, &err);

	if (rc < 0) {
		fprintf(stderr, "fuselab: --why: %s\n", fl_safe_name(err.msg));
		return 2;
	}
	if (o->format == FL_FORMAT_TEXT) {
		printf("why %s %s: %s\n", fl_safe_name(o->why_a),
		       fl_safe_name(o->why_b), fl_safe_name(why));
	} else {
		cJSON *j = cJSON_CreateObject();

		cJSON_AddStringToObject(j, "a", o->why_a);
		cJSON_AddStringToObject(j, "b", o->why_b);
		cJSON_AddBoolToObject(j, "together", rc == 1);
		cJSON_AddStringToObject(j, "reason", why);
		print_json(j, o->format == FL_FORMAT_JSON);
	}
	return 0;
}

/* Runs the session to the end, or to --step N. */
static int advance(fl_session *s, const fl_options *o, fl_error *err)
{
	if (o->step >= 0)
		return fl_engine_goto(s, o->step, err);
	return fl_engine_run(s, err);
}

/* --stage / --step / --events / --why: open a session, run it, print. */
/* With keep, the session is handed to *keep instead of being closed
 * (exports read it after the strategies ran). */
static int run_engine(const fl_graph *g, const fl_options *o,
		      const fl_tensor_files *in, fl_session **keep)
{
	bool show_state = o->stage || o->step >= 0;
	fl_engine_opts eo;
	fl_error err = {""};
	fl_session *s;
	int rc = 0;

	if (fl_app_engine_opts(o, &eo) < 0)
		return 2;
	eo.interp = interp_opts(o, in);
	s = fl_engine_open(g, &eo, &err);
	if (!s && fl_app_signal())
		return fl_app_interrupted(NULL, NULL);
	if (!s) {
		fprintf(stderr, "fuselab: %s\n", fl_safe_name(err.msg));
		return 2;
	}
	if (advance(s, o, &err) < 0) {
		if (fl_app_signal()) {
			char dir[512];
			fl_pass p = fl_engine_current_pass(s);

			snprintf(dir, sizeof dir, "%s", fl_engine_workdir(s));
			fl_engine_close(s);	/* removes the work directory */
			return fl_app_interrupted(!dir[0] ? NULL
						  : p == FL_PASS_RUN ? "run"
						  : "compiler", dir);
		}
		fprintf(stderr, "fuselab: %s: %s\n", fl_safe_name(g->name),
			fl_safe_name(err.msg));
		fl_engine_close(s);
		return 1;
	}
	if (o->format == FL_FORMAT_JSON && (show_state || o->events)) {
		cJSON *j = show_state ? state_json(s) : cJSON_CreateObject();

		if (o->events)
			cJSON_AddItemToObject(j, "events", fl_report_events(s));
		print_json(j, true);
	} else {
		if (o->events)
			print_events(s, o->format);
		if (show_state && o->format == FL_FORMAT_TEXT)
			print_state_text(s, o);
		else if (show_state)
			print_json(state_json(s), false);
	}
	if (o->keep && fl_engine_workdir(s)[0])	/* JSON keeps stdout */
		fprintf(o->format == FL_FORMAT_TEXT ? stdout : stderr,
			"sources kept in %s\n", fl_engine_workdir(s));
	if (o->why_a)
		rc = print_why(s, o);
	if (rc == 0 && fl_engine_run_result(s) &&
	    !fl_engine_run_result(s)->verified)
		rc = 1;
	if (keep && rc == 0)
		*keep = s;
	else
		fl_engine_close(s);
	return rc;
}

/* --inputs DIR, --expect DIR: -1 (message printed) when a file does
 * not fit the graph. */
static int load_tensor_files(const fl_options *o, const fl_graph *g,
			     const fl_onnx_info *info, fl_tensor_files *in,
			     fl_tensor_files *expect)
{
	fl_error err = {""};

	if ((o->inputs_dir &&
	     fl_tensor_files_load(o->inputs_dir, "input", g, info->bound,
				  info->n_bound, in, &err) < 0) ||
	    (o->expect_dir &&
	     fl_tensor_files_load(o->expect_dir, "output", g, NULL, 0, expect,
				  &err) < 0)) {
		fprintf(stderr, "fuselab: %s\n", fl_safe_name(err.msg));
		return -1;
	}
	return 0;
}

int fl_batch_run(const fl_options *o)
{
	bool exports = fl_app_exports_wanted(o);
	fl_session *kept = NULL;
	fl_ladder ladder = {0};
	fl_tensor_files in = {0}, expect = {0};
	fl_onnx_info info = {0};
	fl_error err = {""};
	fl_graph *g;
	bool mismatch = false;
	int rc = 0;

	if (fl_app_check_rules(o) < 0)
		return 2;
	/* the ONNX summary tells which inputs were bound at import */
	g = o->file ? fl_app_load_path(o->file, o, &info, &err)
		    : fl_app_load(o, &err);
	if (!g) {
		fl_onnx_info_free(&info);
		fprintf(stderr, "fuselab: %s\n", fl_safe_name(err.msg));
		return 2;
	}
	if (fl_app_check_overrides(o, g) < 0 ||
	    load_tensor_files(o, g, &info, &in, &expect) < 0) {
		fl_onnx_info_free(&info);
		fl_tensor_files_free(&in);
		fl_graph_free(g);
		return 2;
	}
	fl_onnx_info_free(&info);
	/* compiling or running kernels: stop cleanly on SIGINT/SIGTERM */
	if (o->run || stop_pass(o) >= FL_PASS_COMPILE)
		fl_app_signals_install();
	if (o->format == FL_FORMAT_TEXT)
		print_summary(g, o);
	if (o->interpret || expect.n) {
		fflush(stdout);
		rc = interpret(g, o, &in, &expect, &mismatch);
		/* with --run each strategy is compared with the expected
		 * outputs too, whatever the interpreter's comparison said;
		 * the status is 1 at the end */
		if (rc == 0 && mismatch && !o->run)
			rc = 1;
	}
	if (rc == 0 && o->onnx_file)
		rc = fl_app_export_onnx(g, o);
	if (rc == 0 && (o->stage || o->step >= 0 || o->events || o->why_a ||
			exports))
		rc = run_engine(g, o, &in, exports ? &kept : NULL);
	if (rc == 0 && (o->emit_dir || o->run)) {
		fl_engine_opts eo;

		if (fl_app_engine_opts(o, &eo) < 0)
			rc = 2;
		else
			eo.interp = interp_opts(o, &in);
		/* --expect: every strategy's outputs against the files too,
		 * at the tolerances of float code (feeds.h) */
		eo.run.expect = expect.t;
		eo.run.n_expect = expect.n;
		eo.run.expect_atol = o->expect_atol_set ? o->expect_atol
							: FL_EXPECT_RUN_ATOL;
		eo.run.expect_rtol = FL_EXPECT_RUN_RTOL;
		if (rc == 0 && o->emit_dir)
			rc = fl_batch_emit(g, &eo, o);
		if (rc == 0 && o->run)
			rc = fl_batch_strategies(g, &eo, o,
						 exports ? &ladder : NULL);
	}
	if (rc == 0 && kept)
		rc = fl_app_export(kept, o->run ? &ladder : NULL, o);
	if (rc == 0 && mismatch)
		rc = 1;
	fl_engine_close(kept);
	fl_ladder_free(&ladder);
	fl_tensor_files_free(&in);
	fl_tensor_files_free(&expect);
	fl_graph_free(g);
	/* a signal that came when nothing could be stopped */
	if (fl_app_signal() && rc < 128)
		rc = fl_app_interrupted(NULL, NULL);
	return rc;
}

int fl_batch_list_ops(void)
{
	for (int k = 0; k < FL_OP_COUNT; k++) {
		const fl_op_info *info = fl_op_info_of((fl_op_kind)k);
		char arity[16];

		if (info->max_in < 0)
			snprintf(arity, sizeof arity, "%d+", info->min_in);
		else if (info->max_in == info->min_in)
			snprintf(arity, sizeof arity, "%d", info->min_in);
		else
			snprintf(arity, sizeof arity, "%d-%d", info->min_in,
				 info->max_in);
		printf("%-13s %-9s in %-4s %s\n", info->name, fl_op_class_name(info->cls),
		       arity, info->doc);
	}
	return 0;
}
