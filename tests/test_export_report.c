/* The JSON report (exporters/report_json.h, docs/report-format.md): each
 * report is written with fl_export_report, read back from the file with
 * cJSON_Parse and held against the engine state it describes -- the
 * partition, the kernels with their schedule trees and placements, the
 * parallel-stitching analysis, a real strategy ladder.  The field table
 * of docs/report-format.md is parsed and every field looked up in real
 * reports, so the document cannot drift from the code.  Bad paths fail
 * naming the path and leave nothing behind. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "test_util.h"
#include "engine.h"
#include "ladder.h"
#include "output.h"
#include "report_json.h"
#include "stitch.h"

/* ---- helpers ---------------------------------------------------------- */

/* Writes the report of s (and ladder) to a fresh directory, reads the
 * file back and parses it; the directory is gone again afterwards. */
static cJSON *export_and_parse(const fl_session *s, const fl_ladder *ladder)
{
	char dir[] = "/tmp/fl-report-XXXXXX", path[64];
	fl_error err = {""};
	cJSON *j;
	char *text;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/report.json", dir);
	if (fl_export_report(s, ladder, path, &err) < 0)
		fail_msg("export: %s", err.msg);
	text = t_read_file(path, NULL);
	/* one file, no temporary left beside it */
	assert_int_equal(t_count_entries(dir), 1);
	unlink(path);
	rmdir(dir);
	assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');
	j = cJSON_Parse(text);
	if (!j)
		fail_msg("the report is not JSON near: %.60s",
			 cJSON_GetErrorPtr());
	free(text);
	return j;
}

static fl_session *open_session(const char *sample, const fl_engine_opts *o,
				int step)
{
	fl_graph *g = t_load_sample(sample);
	fl_error err = {""};
	fl_session *s = fl_engine_open(g, o, &err);

	fl_graph_free(g);
	if (!s)
		fail_msg("%s: open: %s", sample, err.msg);
	if (step < 0 ? fl_engine_run(s, &err) < 0
		     : fl_engine_goto(s, step, &err) < 0)
		fail_msg("%s: run: %s", sample, err.msg);
	return s;
}

/* o[key], failing the test when it is missing. */
static cJSON *get(const cJSON *o, const char *key)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!v)
		fail_msg("the report has no \"%s\"", key);
	return v;
}

static const char *get_str(const cJSON *o, const char *key)
{
	cJSON *v = get(o, key);

	if (!cJSON_IsString(v))
		fail_msg("\"%s\" is not a string", key);
	return v->valuestring;
}

static double get_num(const cJSON *o, const char *key)
{
	cJSON *v = get(o, key);

	if (!cJSON_IsNumber(v))
		fail_msg("\"%s\" is not a number", key);
	return v->valuedouble;
}

static bool get_bool(const cJSON *o, const char *key)
{
	cJSON *v = get(o, key);

	if (!cJSON_IsBool(v))
		fail_msg("\"%s\" is not a boolean", key);
	return cJSON_IsTrue(v);
}

/* Asserts that number o[key] is v as cJSON prints it: cJSON keeps 15
 * significant digits when they read back as v within its epsilon, so
 * the last bits may differ. */
static void assert_number(const cJSON *o, const char *key, double v)
{
	double got = get_num(o, key);

	if (!(fabs(got - v) <= 1e-12 * fmax(fabs(got), fabs(v))))
		fail_msg("\"%s\" is %.17g, the engine has %.17g", key, got, v);
}

/* Asserts that JSON array a holds exactly the names of ops idx[0..n-1]. */
static void assert_op_names(const cJSON *a, const fl_graph *g, const int *idx,
			    int n)
{
	assert_true(cJSON_IsArray(a));
	assert_int_equal(cJSON_GetArraySize(a), n);
	for (int i = 0; i < n; i++)
		assert_string_equal(cJSON_GetArrayItem(a, i)->valuestring,
				    g->ops[idx[i]].name);
}

/* ---- checks against the engine state ---------------------------------- */

/* micro_graphs: the alive micro-graphs of the partition, in id order,
 * with their type, members and rule history. */
static void check_micro_graphs(const cJSON *r, const fl_session *s)
{
	const fl_partition *p = fl_engine_partition(s);
	const fl_graph *g = fl_engine_graph(s);
	const cJSON *mgs = get(r, "micro_graphs");
	int j = 0;

	for (int i = 0; i < p->n_groups; i++) {
		const fl_micro_graph *m = &p->groups[i];
		const cJSON *mj;
		char hist[sizeof m->history] = "";

		if (!m->alive)
			continue;
		mj = cJSON_GetArrayItem(mgs, j++);
		assert_non_null(mj);
		assert_int_equal(get_num(mj, "id"), m->id);
		assert_string_equal(get_str(mj, "type"),
				    fl_op_type_name(m->type));
		assert_op_names(get(mj, "members"), g, m->members,
				m->n_members);
		for (const cJSON *h = get(mj, "history")->child; h;
		     h = h->next) {
			size_t used = strlen(hist);

			snprintf(hist + used, sizeof hist - used, "%s%s",
				 used ? " " : "", h->valuestring);
		}
		assert_string_equal(hist, m->history);
	}
	assert_int_equal(cJSON_GetArraySize(mgs), fl_partition_count_alive(p));
	assert_int_equal(j, fl_partition_count_alive(p));
}

/* ops: every op of the graph with its kind, type and micro-graph. */
static void check_ops(const cJSON *r, const fl_session *s)
{
	const fl_partition *p = fl_engine_partition(s);
	const fl_graph *g = fl_engine_graph(s);
	const cJSON *ops = get(r, "ops");

	assert_int_equal(cJSON_GetArraySize(ops), g->n_ops);
	for (int i = 0; i < g->n_ops; i++) {
		const cJSON *oj = cJSON_GetArrayItem(ops, i);

		assert_string_equal(get_str(oj, "name"), g->ops[i].name);
		assert_string_equal(get_str(oj, "kind"),
				    fl_op_kind_name(g->ops[i].kind));
		if (p->classified) {
			assert_string_equal(get_str(oj, "type"),
					    fl_op_type_name(p->type_of[i]));
			assert_string_equal(get_str(oj, "type_reason"),
					    p->type_reason[i]);
		} else {
			assert_true(cJSON_IsNull(get(oj, "type")));
		}
		if (p->group_of && p->group_of[i] >= 0)
			assert_int_equal(get_num(oj, "micro_graph"),
					 p->group_of[i]);
		else
			assert_true(cJSON_IsNull(get(oj, "micro_graph")));
		assert_non_null(get_str(get(oj, "provenance"), "origin"));
	}
}

static void check_tensor(const cJSON *tj, const fl_graph *g,
			 const fl_kernel_tensor *kt)
{
	const cJSON *box = get(tj, "box");

	assert_string_equal(get_str(tj, "name"), g->tensors[kt->tensor].name);
	assert_string_equal(get_str(tj, "placement"),
			    fl_placement_name(kt->place));
	assert_int_equal(get_num(tj, "bytes_kept"), kt->bytes_kept);
	assert_int_equal(get_bool(tj, "read"), kt->read);
	assert_int_equal(get_bool(tj, "written"), kt->written);
	assert_string_equal(get_str(tj, "why"), kt->why);
	if (kt->place == FL_PLACE_GLOBAL) {
		assert_true(cJSON_IsNull(box));
		return;
	}
	assert_int_equal(cJSON_GetArraySize(box), kt->rank);
	for (int d = 0; d < kt->rank; d++)
		assert_int_equal(cJSON_GetArrayItem(box, d)->valuedouble,
				 kt->box[d]);
}

/* kernels: the program's kernels in order, each with its ops, its
 * schedule tree's text, how its tiles were sized and every tensor's
 * placement; the bytes kept out
 * of main memory summed over them; each op names its kernel. */
static void check_kernels(const cJSON *r, const fl_session *s)
{
	const fl_program *p = fl_engine_program(s);
	const fl_graph *g = fl_engine_graph(s);
	const cJSON *ks = get(r, "kernels"), *ops = get(r, "ops");
	int64_t kept = 0;
	int tiled = 0;

	assert_non_null(p);
	assert_true(p->n_kernels > 0);
	assert_int_equal(cJSON_GetArraySize(ks), p->n_kernels);
	for (int k = 0; k < p->n_kernels; k++) {
		const fl_kernel *kn = &p->kernels[k];
		const cJSON *kj = cJSON_GetArrayItem(ks, k);
		const cJSON *ts = get(kj, "tensors");

		assert_string_equal(get_str(kj, "name"), kn->name);
		assert_op_names(get(kj, "ops"), g, kn->ops, kn->n_ops);
		assert_string_equal(get_str(kj, "schedule_tree"),
				    kn->schedule_text);
		assert_string_equal(get_str(kj, "tile_kind"),
				    fl_tile_kind_name(kn->tile_kind));
		assert_true(get_num(kj, "n_tiles") == kn->n_tiles);
		assert_int_equal(get_num(kj, "tile_bytes"), kn->tile_bytes);
		assert_string_equal(get_str(kj, "tile_why"), kn->tile_why);
		tiled += kn->tile_kind != FL_TILE_NONE && kn->tile_why[0];
		assert_int_equal(cJSON_GetArraySize(ts), kn->n_tensors);
		for (int t = 0; t < kn->n_tensors; t++) {
			check_tensor(cJSON_GetArrayItem(ts, t), g,
				     &kn->tensors[t]);
			kept += kn->tensors[t].bytes_kept;
		}
		for (int i = 0; i < kn->n_ops; i++) {
			const cJSON *oj = cJSON_GetArrayItem(ops, kn->ops[i]);

			assert_string_equal(get_str(oj, "kernel"), kn->name);
		}
	}
	assert_int_equal(get_num(r, "bytes_kept_out_of_main_memory"), kept);
	assert_true(tiled > 0);
}

/* parallel_groups: the same analysis as fl_stitch_parallel_analyze, not
 * stitched (these sessions stop before layer 3; test_layer3.c checks a
 * report after it). */
static void check_parallel(const cJSON *r, const fl_session *s)
{
	const cJSON *pg = get(r, "parallel_groups");
	fl_error err = {""};
	fl_par_analysis *a = fl_stitch_parallel_analyze(
		fl_engine_graph(s), fl_engine_partition(s),
		fl_engine_program(s), NULL, &err);

	assert_non_null(a);
	assert_false(get_bool(pg, "stitched"));
	assert_string_equal(get_str(pg, "units_are"),
			    fl_par_unit_kind_name(a->kind));
	assert_int_equal(cJSON_GetArraySize(get(pg, "units")), a->n_units);
	assert_int_equal(cJSON_GetArraySize(get(pg, "branch_sets")), a->n_sets);
	assert_int_equal(get_num(pg, "n_groups"), a->n_groups);
	assert_int_equal(cJSON_GetArraySize(get(pg, "groups")), a->n_groups);
	assert_number(pg, "total_gain_s", a->total_gain);
	fl_par_analysis_free(a);
}

static void check_header(const cJSON *r)
{
	assert_string_equal(get_str(r, "format"), "fuselab-report/1");
	assert_string_equal(get_str(get(r, "generator"), "name"), "fuselab");
	assert_string_equal(get_str(get(r, "generator"), "version"),
			    FL_VERSION);
}

/* ---- the engine state, at the end of layer 1 and mid-partition ------- */

/* inception (3a) after layer 1: four branches, so the analysis has
 * parallel groups; every part of the report matches the engine. */
static void export_report_matches_engine(void **state)
{
	fl_engine_opts o;
	fl_session *s;
	cJSON *r;

	(void)state;
	fl_engine_opts_default(&o);
	o.stop_after = FL_PASS_LAYER1;
	s = open_session("inception_block", &o, -1);
	r = export_and_parse(s, NULL);
	check_header(r);
	assert_string_equal(get_str(get(r, "graph"), "name"),
			    "inception_block");
	assert_int_equal(get_num(get(get(r, "graph"), "summary"), "ops"),
			 fl_engine_input_graph(s)->n_ops);
	assert_int_equal(get_num(get(r, "position"), "step"),
			 fl_engine_position(s));
	assert_true(get_bool(get(r, "position"), "done"));
	assert_true(cJSON_IsNull(get(get(r, "position"), "pass")));
	check_micro_graphs(r, s);
	check_ops(r, s);
	check_kernels(r, s);
	check_parallel(r, s);
	/* inception's pads run side by side (test_view_panels) */
	assert_true(get_num(get(r, "parallel_groups"), "n_groups") >= 1);
	/* nothing compiled, no ladder, nothing went wrong */
	assert_true(cJSON_IsNull(get(r, "build")));
	assert_true(cJSON_IsNull(get(r, "run")));
	assert_int_equal(cJSON_GetArraySize(get(r, "strategies")), 0);
	assert_int_equal(cJSON_GetArraySize(get(r, "errors")), 0);
	assert_int_equal(cJSON_GetArraySize(get(r, "events")),
			 fl_event_log_count(fl_engine_events(s)));
	cJSON_Delete(r);
	fl_engine_close(s);
}

/* Inside aggregation, before layer 1: the report is the state
 * at that step (micro-graphs as merged so far, no kernels, ops in no
 * kernel) and names the pass that comes next. */
static void export_report_mid_session(void **state)
{
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *s;
	const cJSON *ops;
	cJSON *r;
	int total;

	(void)state;
	fl_engine_opts_default(&o);	/* up to the partition */
	s = open_session("apollo_fig3", &o, -1);
	total = fl_engine_position(s);
	/* two merges before the end of aggregation */
	assert_true(fl_engine_goto(s, total - 2, &err) >= 0);
	assert_int_equal(fl_engine_current_pass(s), FL_PASS_AGGREGATE);
	r = export_and_parse(s, NULL);
	assert_int_equal(get_num(get(r, "position"), "step"), total - 2);
	assert_false(get_bool(get(r, "position"), "done"));
	assert_string_equal(get_str(get(r, "position"), "pass"),
			    fl_pass_name(fl_engine_current_pass(s)));
	check_micro_graphs(r, s);
	check_ops(r, s);
	assert_null(fl_engine_program(s));
	assert_int_equal(cJSON_GetArraySize(get(r, "kernels")), 0);
	assert_int_equal(get_num(r, "bytes_kept_out_of_main_memory"), 0);
	ops = get(r, "ops");
	for (const cJSON *op = ops->child; op; op = op->next)
		assert_true(cJSON_IsNull(get(op, "kernel")));
	check_parallel(r, s);
	cJSON_Delete(r);
	fl_engine_close(s);
}

/* ---- a real ladder ---------------------------------------------------- */

static const fl_strategy all3[] = {FL_STRATEGY_UNFUSED, FL_STRATEGY_XLA,
				   FL_STRATEGY_APOLLO_L1};

/* The report of sample at its end under strategy st (through codegen). */
static cJSON *strategy_report(const char *sample, fl_strategy st,
			      fl_session **s)
{
	fl_engine_opts o;

	fl_engine_opts_default(&o);
	o.strategy = st;
	o.stop_after = FL_PASS_CODEGEN;
	*s = open_session(sample, &o, -1);
	return export_and_parse(*s, NULL);
}

/* Softmax under apollo-l2: the one kernel lists the micro-graphs layer 2
 * stitched (those of its ops, in op order), every micro-graph names it
 * as its kernel, and exactly the tensors between its micro-graphs carry
 * their stitched edge.  Inception under apollo: the kernel layer 3 made
 * lists its branches with their ops. */
static void export_report_stitched_layers(void **state)
{
	const int *group_of;
	const fl_program *p;
	const cJSON *kj, *e;
	fl_session *s;
	cJSON *r = strategy_report("softmax", FL_STRATEGY_APOLLO_L2, &s);
	int n = 0, edges = 0, branchy = 0;

	(void)state;
	p = fl_engine_program(s);
	group_of = fl_engine_partition(s)->group_of;
	assert_int_equal(p->n_kernels, 1);
	kj = cJSON_GetArrayItem(get(r, "kernels"), 0);
	for (int i = 0; i < p->kernels[0].n_ops; i++)
		if (i == 0 || group_of[p->kernels[0].ops[i]] !=
			      group_of[p->kernels[0].ops[i - 1]])
			assert_int_equal(cJSON_GetArrayItem(get(kj,
				"stitched_micro_graphs"), n++)->valueint,
				group_of[p->kernels[0].ops[i]]);
	assert_true(n >= 3);
	assert_int_equal(cJSON_GetArraySize(get(kj, "stitched_micro_graphs")),
			 n);
	assert_int_equal(cJSON_GetArraySize(get(kj, "branches")), 0);
	cJSON_ArrayForEach(e, get(r, "micro_graphs"))
		assert_string_equal(get_str(e, "kernel"), p->kernels[0].name);
	cJSON_ArrayForEach(e, get(kj, "tensors")) {
		const fl_graph *g = fl_engine_graph(s);
		int t = fl_graph_find_tensor(g, get_str(e, "name"));
		int pr = g->tensors[t].producer;
		bool between = false;

		/* read in another micro-graph of the kernel than its own */
		for (int i = 0; pr >= 0 && i < p->kernels[0].n_ops; i++) {
			const int op = p->kernels[0].ops[i];

			for (int j = 0; j < g->ops[op].n_in; j++)
				between |= g->ops[op].in[j] == t &&
					   group_of[op] != group_of[pr];
		}
		assert_int_equal(cJSON_IsObject(get(e, "stitched_edge")),
				 between);
		if (between)
			assert_number(get(e, "stitched_edge"),
				      "from_micro_graph", group_of[pr]);
		edges += between;
	}
	assert_int_equal(edges, 3);
	cJSON_Delete(r);
	fl_engine_close(s);

	r = strategy_report("inception_block", FL_STRATEGY_APOLLO, &s);
	p = fl_engine_program(s);
	for (int k = 0; k < p->n_kernels; k++) {
		const fl_kernel *kn = &p->kernels[k];
		const cJSON *br;

		kj = cJSON_GetArrayItem(get(r, "kernels"), k);
		br = get(kj, "branches");
		assert_int_equal(cJSON_GetArraySize(br), kn->n_branches);
		for (int b = 0; b < kn->n_branches; b++)
			assert_op_names(get(cJSON_GetArrayItem(br, b), "ops"),
					fl_engine_graph(s), kn->branches[b].ops,
					kn->branches[b].n_ops);
		branchy += kn->n_branches > 0;
	}
	assert_true(branchy >= 1);
	cJSON_Delete(r);
	fl_engine_close(s);
}

static fl_engine_opts run_opts(void)
{
	fl_engine_opts o;

	fl_engine_opts_default(&o);
	o.run.repeat = 1;
	o.run.warmup = 0;
	return o;
}

/* A ladder of strategies list[0..n-1] on sample (fails the test when
 * the ladder cannot be run at all). */
static void ladder_on(const char *sample, const fl_engine_opts *o,
		      const fl_strategy *list, int n, fl_ladder *l)
{
	fl_graph *g = t_load_sample(sample);
	fl_error err = {""};

	if (fl_ladder_run(g, o, list, n, l, &err) < 0)
		fail_msg("ladder: %s", err.msg);
	fl_graph_free(g);
}

static void assert_spread(const cJSON *o)
{
	double lo = get_num(o, "min_s"), mid = get_num(o, "median_s");
	double hi = get_num(o, "max_s");

	if (!(lo > 0 && lo <= mid && mid <= hi))
		fail_msg("timing spread %g <= %g <= %g does not hold",
			 lo, mid, hi);
}

/* The report of layernorm compiled and run in the session, with the
 * ladder of all three strategies: the same for the ladder test and the
 * field test, made once (it costs seconds; the pointer keeps it
 * reachable, not leaked). */
static cJSON *layernorm_report(fl_ladder *keep)
{
	static cJSON *cached;
	static fl_ladder ladder;
	fl_engine_opts o;
	fl_session *s;

	if (!cached) {
		o = run_opts();
		ladder_on("layernorm", &o, all3, 3, &ladder);
		o.run_kernels = true;
		o.stop_after = FL_PASS_RUN;
		s = open_session("layernorm", &o, -1);
		cached = export_and_parse(s, &ladder);
		check_ops(cached, s);
		check_kernels(cached, s);
		fl_engine_close(s);
	}
	if (keep)
		*keep = ladder;
	return cached;
}

static void check_strategy(const cJSON *sj, const fl_ladder_step *st)
{
	const cJSON *ks = get(sj, "kernels");

	assert_string_equal(get_str(sj, "strategy"),
			    fl_strategy_name(st->strategy));
	if (!get_bool(sj, "ran") || !get_bool(sj, "verified"))
		fail_msg("%s: %s %s", fl_strategy_name(st->strategy), st->error,
			 st->message);
	assert_string_equal(get_str(sj, "status"), "ok");
	assert_true(cJSON_IsNull(get(sj, "error")));
	assert_spread(get(sj, "total"));
	assert_number(get(sj, "total"), "median_s", st->total_seconds);
	assert_int_equal(get_num(sj, "n_kernels"), st->n_kernels);
	assert_int_equal(cJSON_GetArraySize(ks), st->n_kernels);
	if (st->speedup > 0)
		assert_number(sj, "speedup", st->speedup);
	else
		assert_true(cJSON_IsNull(get(sj, "speedup")));
	for (int k = 0; k < st->n_kernels; k++) {
		const cJSON *kj = cJSON_GetArrayItem(ks, k);

		assert_string_equal(get_str(kj, "name"), st->kernels[k].name);
		assert_string_equal(get_str(kj, "first_op"),
				    st->kernels[k].first_op);
		assert_string_equal(get_str(kj, "last_op"),
				    st->kernels[k].last_op);
		assert_int_equal(get_num(kj, "n_ops"), st->kernels[k].n_ops);
		assert_true(get_bool(kj, "verified"));
		assert_spread(kj);
	}
}

/* layernorm under unfused, xla and apollo-l1: three strategies, each
 * verified with min <= median <= max, as the ladder measured them; the
 * session's own build and run are there too, and no errors. */
static void export_report_ladder(void **state)
{
	fl_ladder l;
	const cJSON *r = layernorm_report(&l), *sts = get(r, "strategies");

	(void)state;
	check_header(r);
	assert_int_equal(cJSON_GetArraySize(sts), 3);
	for (int i = 0; i < 3; i++)
		check_strategy(cJSON_GetArrayItem(sts, i), &l.steps[i]);
	assert_string_equal(get_str(get(r, "build"), "status"), "ok");
	assert_true(get_bool(get(r, "run"), "verified"));
	assert_true(get_bool(get(r, "codegen"), "complete"));
	assert_int_equal(cJSON_GetArraySize(get(r, "errors")), 0);
	/* layernorm's fused kernels keep intermediates out of main memory */
	assert_true(get_num(r, "bytes_kept_out_of_main_memory") > 0);
}

/* A strategy whose compile fails ("false" as the compiler) is reported
 * with its status, and its message is in errors. */
static cJSON *failed_strategy_report(void)
{
	static const fl_strategy xla = FL_STRATEGY_XLA;
	fl_engine_opts o = run_opts();
	fl_ladder l;
	fl_session *s;
	cJSON *r;

	o.run.cc = "false";
	ladder_on("inception_block", &o, &xla, 1, &l);
	fl_engine_opts_default(&o);
	o.stop_after = FL_PASS_LAYER1;
	/* a feedback pair, so options.feedback has an element */
	o.n_feedback = 1;
	snprintf(o.feedback[0].a, sizeof o.feedback[0].a, "b1_1x1_conv");
	snprintf(o.feedback[0].b, sizeof o.feedback[0].b, "b1_1x1_bias");
	snprintf(o.feedback_reason[0], sizeof o.feedback_reason[0],
		 "test: kept apart");
	s = open_session("inception_block", &o, -1);
	r = export_and_parse(s, &l);
	fl_engine_close(s);
	fl_ladder_free(&l);
	return r;
}

static void export_report_failed_strategy(void **state)
{
	cJSON *r = failed_strategy_report();
	const cJSON *st = cJSON_GetArrayItem(get(r, "strategies"), 0);
	const cJSON *e = cJSON_GetArrayItem(get(r, "errors"), 0);

	(void)state;
	assert_non_null(st);
	assert_string_equal(get_str(st, "status"), "compile error");
	assert_false(get_bool(st, "verified"));
	assert_true(cJSON_IsNull(get(st, "speedup")));
	assert_non_null(e);
	assert_string_equal(get_str(e, "source"), "strategy xla");
	assert_string_equal(get_str(e, "status"), "compile error");
	assert_string_equal(get_str(e, "message"), get_str(st, "message"));
	assert_true(strlen(get_str(e, "message")) > 0);
	cJSON_Delete(r);
}

/* ---- the documented fields ------------------------------------------- */

/* How many values path (a.b[].c: "[]" steps into every element of an
 * array) leads to under o; a key holding null counts. */
static int count_path(const cJSON *o, const char *path)
{
	const char *dot = strchr(path, '.');
	size_t n = dot ? (size_t)(dot - path) : strlen(path);
	bool each = n > 2 && path[n - 2] == '[' && path[n - 1] == ']';
	char key[128];
	const cJSON *v;
	int found = 0;

	if (!cJSON_IsObject(o) || n - (each ? 2 : 0) >= sizeof key)
		return 0;
	memcpy(key, path, n - (each ? 2 : 0));
	key[n - (each ? 2 : 0)] = '\0';
	v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v)
		return 0;
	if (!dot)
		return 1;
	if (!each)
		return count_path(v, dot + 1);
	if (!cJSON_IsArray(v))
		return 0;
	for (const cJSON *e = v->child; e; e = e->next)
		found += count_path(e, dot + 1);
	return found;
}

/* The fields of docs/report-format.md: the backticked path that starts
 * each table row ("| `kernels[].name` | ..."), into f[0..max-1]. */
static int doc_fields(char (*f)[128], int max)
{
	char path[1024], *doc, *line;
	int n = 0;

	snprintf(path, sizeof path, "%s/docs/report-format.md", t_repo_root());
	doc = t_read_file(path, NULL);
	for (line = strtok(doc, "\n"); line; line = strtok(NULL, "\n")) {
		char *end;

		if (strncmp(line, "| `", 3) != 0)
			continue;
		if (!(end = strchr(line + 3, '`')))
			continue;
		assert_true(n < max && end - (line + 3) < 128);
		memcpy(f[n], line + 3, (size_t)(end - (line + 3)));
		f[n][end - (line + 3)] = '\0';
		n++;
	}
	free(doc);
	return n;
}

/* Every field the document lists appears in a real report: layernorm run
 * through the ladder (build, run, strategies, measured events) or
 * inception with a failed strategy (parallel groups, errors, feedback). */
static void export_report_documented_fields(void **state)
{
	static char fields[512][128];
	const cJSON *a = layernorm_report(NULL);
	cJSON *b = failed_strategy_report();
	int n = doc_fields(fields, 512);

	(void)state;
	/* the table has every part of the report, not a few lines */
	assert_true(n > 150);
	for (int i = 0; i < n; i++)
		if (count_path(a, fields[i]) + count_path(b, fields[i]) == 0)
			fail_msg("docs/report-format.md lists `%s`, which no "
				 "report has", fields[i]);
	/* and the other way round: every top-level field is documented */
	for (const cJSON *k = a->child; k; k = k->next) {
		int i = 0;

		while (i < n && strcmp(fields[i], k->string) != 0)
			i++;
		if (i == n)
			fail_msg("\"%s\" is not in docs/report-format.md",
				 k->string);
	}
	cJSON_Delete(b);
}

/* ---- bad paths ------------------------------------------------------- */

static fl_session *small_session(void)
{
	fl_engine_opts o;

	fl_engine_opts_default(&o);
	return open_session("softmax", &o, -1);
}

/* A missing directory, and a directory where the file should be: an
 * error naming the path, and nothing written. */
static void export_report_bad_path(void **state)
{
	char dir[] = "/tmp/fl-report-XXXXXX", path[96];
	fl_session *s = small_session();
	fl_error err = {""};

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/missing/report.json", dir);
	assert_int_equal(fl_export_report(s, NULL, path, &err), -1);
	t_assert_contains(err.msg, path);
	t_assert_contains(err.msg, "No such file or directory");
	assert_int_equal(t_count_entries(dir), 0);
	assert_int_equal(fl_export_report(s, NULL, dir, &err), -1);
	t_assert_contains(err.msg, dir);
	assert_int_equal(t_count_entries(dir), 0);
	rmdir(dir);
	fl_engine_close(s);
}

/* /dev/full: "No space left on device", and it is still a device (the
 * report is written to it directly, never renamed over it). */
static void export_report_dev_full(void **state)
{
	fl_session *s;
	fl_error err = {""};
	struct stat st;

	(void)state;
	if (access("/dev/full", W_OK) != 0)
		skip();
	s = small_session();
	assert_int_equal(fl_export_report(s, NULL, "/dev/full", &err), -1);
	t_assert_contains(err.msg, "/dev/full");
	t_assert_contains(err.msg, "No space left on device");
	assert_int_equal(stat("/dev/full", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	fl_engine_close(s);
}

/* A write failing half-way (injected below the exporter): an error, and
 * neither the report nor a temporary file is left. */
static void export_report_write_fails(void **state)
{
	char dir[] = "/tmp/fl-report-XXXXXX", path[64];
	fl_session *s = small_session();
	fl_error err = {""};

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/report.json", dir);
	fl_out_fail_after(100);
	assert_int_equal(fl_export_report(s, NULL, path, &err), -1);
	fl_out_fail_after(-1);
	t_assert_contains(err.msg, path);
	t_assert_contains(err.msg, "No space left on device");
	assert_int_equal(t_count_entries(dir), 0);
	rmdir(dir);
	fl_engine_close(s);
}

FL_SUITE(export_report,
	 cmocka_unit_test(export_report_matches_engine),
	 cmocka_unit_test(export_report_mid_session),
	 cmocka_unit_test(export_report_stitched_layers),
	 cmocka_unit_test(export_report_ladder),
	 cmocka_unit_test(export_report_failed_strategy),
	 cmocka_unit_test(export_report_documented_fields),
	 cmocka_unit_test(export_report_bad_path),
	 cmocka_unit_test(export_report_dev_full),
	 cmocka_unit_test(export_report_write_fails));
