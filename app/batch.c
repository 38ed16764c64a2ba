/* Batch mode: what a script or a test sees of fuselab.  Exit status 0 on
 * success, 1 when running fails, 2 for bad input (app/main.c maps them). */
#include "batch.h"

#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "interp.h"
#include "loader.h"
#include "report_json.h"
#include "run.h"

extern const char fl_builtin_sample_json[];

#define BUILTIN_SOURCE "<built-in: bert_encoder.json>"

fl_graph *fl_app_load(const fl_options *o, fl_error *err)
{
	if (o->file)
		return fl_load_graph_file(o->file, err);
	return fl_load_graph_string(fl_builtin_sample_json,
				    strlen(fl_builtin_sample_json),
				    BUILTIN_SOURCE, err);
}

const char *fl_format_bytes(int64_t bytes, char *buf, size_t n)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB",
					    "PiB", "EiB"};
	double v = (double)bytes;
	int u = 0;

	if (bytes < 0) {
		snprintf(buf, n, "(overflows)");
		return buf;
	}
	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%lld B", (long long)bytes);
	else
		snprintf(buf, n, "%.1f %s", v, units[u]);
	return buf;
}

static void print_summary(const fl_graph *g, const fl_options *o)
{
	fl_graph_summary s;
	char b[5][32];

	fl_graph_summarize(g, &s);
	printf("file: %s\n", o->file ? o->file : BUILTIN_SOURCE);
	printf("graph: %s\n", g->name);
	if (g->doc)
		printf("doc: %s\n", g->doc);
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

int fl_batch_check(const fl_options *o)
{
	fl_error err = {""};
	fl_graph *g = fl_app_load(o, &err);

	if (!g) {
		fprintf(stderr, "fuselab: %s\n", err.msg);
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

static int interpret(const fl_graph *g, const fl_options *o)
{
	fl_interp_opts io = {o->seed, o->max_bytes};
	fl_error err = {""};
	fl_values *v = fl_interp_run(g, &io, &err);
	char *mark;
	double total = 0;
	int *outs, n;

	if (!v) {
		fprintf(stderr, "fuselab: %s: %s\n", g->name, err.msg);
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
	for (int i = 0; i < g->n_ops; i++)
		total += v->op_seconds[i];
	printf("interpreted: %d ops in %.3f s (seed %llu)\n", g->n_ops, total,
	       (unsigned long long)o->seed);
	for (int k = 0; k < n; k++) {
		const fl_buf *b = &v->bufs[outs[k]];
		fl_checksum c = fl_buf_checksum(b);
		char sh[128];

		printf("output %s %s: checksum sum=%.9g abs=%.9g hash=%016llx "
		       "nan=%lld time=%.3f ms\n",
		       g->tensors[outs[k]].name,
		       fl_shape_format(&b->shape, sh, sizeof sh), c.sum, c.abs_sum,
		       (unsigned long long)c.hash, (long long)c.n_nan,
		       1e3 * cone_seconds(g, v, outs[k], mark));
	}
	free(outs);
	free(mark);
	fl_values_free(v);
	return 0;
}

/* Engine options from the command line; -1 (message printed) on bad
 * input such as an unreadable rules file or an unknown rule id. */
static int engine_opts(const fl_options *o, fl_engine_opts *eo)
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
	if (o->sched_budget > 0)
		eo->layer1.sched_budget = o->sched_budget;
	if (o->max_recompute > 0)
		eo->layer1.max_recompute = o->max_recompute;
	eo->layer1.n_tile = o->n_tile;
	for (int i = 0; i < o->n_tile; i++)
		eo->layer1.tile[i] = o->tile[i];
	eo->run_layer1 = o->stage && !strcmp(o->stage, "layer1");
	return 0;
bad:
	fprintf(stderr, "fuselab: %s\n", err.msg);
	return -1;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void print_micro_graph(const fl_graph *g, const fl_micro_graph *m)
{
	int *sorted = malloc(((size_t)m->n_members + 1) * sizeof *sorted);

	printf("  G%-4d %s  ", m->id, fl_op_type_name(m->type));
	if (m->cluster >= 0)
		printf("F%-3d", m->cluster + 1);
	else
		printf("--  ");
	if (sorted) {
		memcpy(sorted, m->members, (size_t)m->n_members * sizeof *sorted);
		qsort(sorted, (size_t)m->n_members, sizeof *sorted, cmp_int);
		for (int i = 0; i < m->n_members; i++)
			printf(" %s", g->ops[sorted[i]].name);
		free(sorted);
	}
	printf("  [%s]\n", *m->history ? m->history : "-");
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

static void print_layer1(const fl_session *s)
{
	const fl_program *p = fl_engine_program(s);
	const fl_graph *g = fl_engine_graph(s);

	if (!p)
		return;
	printf("layer 1: %d kernels\n", p->n_kernels);
	for (int k = 0; k < p->n_kernels; k++) {
		const fl_kernel *kn = &p->kernels[k];

		printf("  %s (micro-graph G%d, %d ops):", kn->name, kn->group,
		       kn->n_ops);
		for (int i = 0; i < kn->n_ops; i++)
			printf(" %s", g->ops[kn->ops[i]].name);
		printf("\n");
		for (int t = 0; t < kn->n_tensors; t++) {
			const fl_kernel_tensor *kt = &kn->tensors[t];

			if (kt->place != FL_PLACE_GLOBAL)
				printf("    %s: %s (%s)\n", g->tensors[kt->tensor].name,
				       fl_placement_name(kt->place), kt->why);
		}
		if (kn->schedule_text)
			printf("%s\n", kn->schedule_text);
	}
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
			printf("%s\n", fl_event_format(e, line, sizeof line));
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
		fprintf(stderr, "fuselab: --why: %s\n", err.msg);
		return 2;
	}
	if (o->format == FL_FORMAT_TEXT) {
		printf("why %s %s: %s\n", o->why_a, o->why_b, why);
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

/* --stage / --events / --why: open a session, run it, print. */
static int run_engine(const fl_graph *g, const fl_options *o)
{
	fl_engine_opts eo;
	fl_error err = {""};
	fl_session *s;
	int rc = 0;

	if (engine_opts(o, &eo) < 0)
		return 2;
	s = fl_engine_open(g, &eo, &err);
	if (!s) {
		fprintf(stderr, "fuselab: %s\n", err.msg);
		return 2;
	}
	if (fl_engine_run(s, &err) < 0) {
		fprintf(stderr, "fuselab: %s: %s\n", g->name, err.msg);
		fl_engine_close(s);
		return 1;
	}
	if (o->format == FL_FORMAT_JSON && (o->stage || o->events)) {
		cJSON *j = o->stage ? fl_report_partition(s) : cJSON_CreateObject();

		if (fl_engine_program(s))
			cJSON_AddItemToObject(j, "layer1", fl_report_layer1(s));

		if (o->events)
			cJSON_AddItemToObject(j, "events", fl_report_events(s));
		print_json(j, true);
	} else {
		if (o->events)
			print_events(s, o->format);
		if (o->stage && o->format == FL_FORMAT_TEXT) {
			print_partition(s);
			print_layer1(s);
		} else if (o->stage) {
			cJSON *j = fl_report_partition(s);

			if (fl_engine_program(s))
				cJSON_AddItemToObject(j, "layer1", fl_report_layer1(s));
			print_json(j, false);
		}
	}
	if (o->why_a)
		rc = print_why(s, o);
	fl_engine_close(s);
	return rc;
}

int fl_batch_run(const fl_options *o)
{
	fl_error err = {""};
	fl_graph *g = fl_app_load(o, &err);
	int rc = 0;

	if (!g) {
		fprintf(stderr, "fuselab: %s\n", err.msg);
		return 2;
	}
	if (o->format == FL_FORMAT_TEXT)
		print_summary(g, o);
	if (o->interpret) {
		fflush(stdout);
		rc = interpret(g, o);
	}
	if (rc == 0 && (o->stage || o->events || o->why_a))
		rc = run_engine(g, o);
	if (rc == 0 && (o->emit_dir || o->run)) {
		fl_engine_opts eo;

		if (engine_opts(o, &eo) < 0)
			rc = 2;
		else if (o->emit_dir)
			rc = fl_batch_emit(g, &eo, o);
		if (rc == 0 && o->run)
			rc = fl_batch_strategies(g, &eo, o);
	}
	fl_graph_free(g);
	return rc;
}

int fl_batch_list_ops(void)
{
	static const char *const classes[] = {"unary", "binary", "reduction",
					      "opaque", "custom", "compound"};

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
		printf("%-13s %-9s in %-4s %s\n", info->name, classes[info->cls],
		       arity, info->doc);
	}
	return 0;
}
