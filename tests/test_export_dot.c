/* The Graphviz exporter (exporters/dot.c): what it writes is read back
 * with cgraph and checked against the engine, and the real `dot` program
 * must accept every file without a warning.
 *
 *   - every sample at the end of every pass: the .dot is accepted by dot,
 *     its clusters hold exactly the ops of the engine's micro-graphs or
 *     kernels, the decision's ops are the highlighted ones, edges carry
 *     shape and placement, ops in no cluster are grey, and the SVG of the
 *     final state names every op;
 *   - odd op names (quotes, backslashes, braces, XML specials) and a
 *     custom op; parallel groups drawn blue on exactly their kernels;
 *   - layer 2's stitched kernels (softmax, layernorm) as one cluster
 *     holding their micro-graphs as sub-clusters, stitched edges bold
 *     when kept in the tile; layer 3's kernels (inception, APOLLO
 *     Fig. 1) as a "parallel group" cluster with its gain, a
 *     sub-cluster per branch;
 *   - a neighbourhood of K hops draws exactly the ops within K hops;
 *   - micro2020_fig1's schedule trees hold an extension node, dot takes
 *     them; PNG output is a PNG; titles with quotes and braces survive;
 *   - a missing directory, a directory at the path, a failing write: an
 *     error naming the path, and nothing left behind. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <cgraph.h>

#include "dot.h"
#include "engine.h"
#include "output.h"
#include "stitch.h"
#include "test_util.h"

static Agraph_t *read_back(const char *file)
{
	char *text = t_read_file(file, NULL);
	Agraph_t *g = agmemread(text);

	free(text);
	if (!g)
		fail_msg("cgraph cannot read %s back", file);
	return g;
}

static fl_session *open_sample(const char *name, fl_graph **g)
{
	fl_engine_opts o;
	fl_error err;
	fl_session *s;

	*g = t_load_sample(name);
	fl_engine_opts_default(&o);
	o.stop_after = FL_PASS_CODEGEN;
	s = fl_engine_open(*g, &o, &err);
	if (!s)
		fail_msg("%s: %s", name, err.msg);
	return s;
}

/* The graph (kernel < 0) or kernel's schedule tree into file. */
static int export_any(const fl_session *s, const fl_export_graph_opts *o,
		      int kernel, const char *file, const char *format,
		      fl_error *err)
{
	if (kernel < 0)
		return fl_export_graph(s, o, file, format, err);
	return fl_export_schedule_tree(s, kernel, file, format, err);
}

static void export_or_fail(const fl_session *s, const fl_export_graph_opts *o,
			   const char *file, const char *format)
{
	fl_error err;

	if (export_any(s, o, -1, file, format, &err) != 0)
		fail_msg("export %s: %s", file, err.msg);
}

/* ---- what the engine says ------------------------------------------------ */

/* The cluster each op should be drawn in (dot.h): its kernel once layer 1
 * ran, else its alive micro-graph; none when the unit's ops are all
 * excluded from fusion.  Writes the cluster's name, or "". */
static void expected_cluster(const fl_session *s, int op, char *buf, size_t n)
{
	const fl_partition *p = fl_engine_partition(s);
	const fl_program *prog = fl_engine_program(s);
	bool excl = p && p->cluster_of && p->n_ops == fl_engine_graph(s)->n_ops;
	int unit = -1;

	buf[0] = '\0';
	if (prog) {
		for (int k = 0; k < prog->n_kernels; k++)
			for (int j = 0; j < prog->kernels[k].n_ops; j++)
				if (prog->kernels[k].ops[j] == op)
					unit = k;
		if (unit < 0)
			return;
		const fl_kernel *kn = &prog->kernels[unit];

		for (int j = 0; j < kn->n_ops; j++)
			if (!excl || p->cluster_of[kn->ops[j]] >= 0)
				snprintf(buf, n, "cluster_%s", kn->name);
		return;
	}
	if (!p || !p->group_of || p->n_groups == 0)
		return;
	unit = p->group_of[op];
	if (unit < 0 || !p->groups[unit].alive)
		return;
	for (int j = 0; j < p->groups[unit].n_members; j++)
		if (!excl || p->cluster_of[p->groups[unit].members[j]] >= 0)
			snprintf(buf, n, "cluster_G%d", unit);
}

static bool named_by_last(const fl_session *s, const char *op)
{
	int pos = fl_engine_position(s);
	const fl_event *e;

	if (pos == 0)
		return false;
	e = fl_event_log_get(fl_engine_events(s), pos - 1);
	for (int i = 0; i < e->n_ops; i++)
		if (!strcmp(e->ops[i], op))
			return true;
	return false;
}

/* The cluster (name) each op node of dg sits in, "" for none. */
static void clusters_of(Agraph_t *dg, const fl_graph *g, char (*in)[64])
{
	for (int i = 0; i < g->n_ops; i++)
		in[i][0] = '\0';
	for (Agraph_t *c = agfstsubg(dg); c; c = agnxtsubg(c)) {
		if (strncmp(agnameof(c), "cluster_", 8) ||
		    !strcmp(agnameof(c), "cluster_legend"))
			continue;
		for (Agnode_t *n = agfstnode(c); n; n = agnxtnode(c, n)) {
			int op = fl_graph_find_op(g, agnameof(n));

			if (op < 0)
				fail_msg("%s holds %s, not an op",
					 agnameof(c), agnameof(n));
			if (in[op][0])
				fail_msg("%s in %s and %s", agnameof(n),
					 in[op], agnameof(c));
			snprintf(in[op], sizeof in[op], "%s", agnameof(c));
		}
	}
}

/* Where tensor t lives in the kernel holding op c, "" before layer 1. */
static const char *placement_of(const fl_session *s, int c, int t)
{
	const fl_program *prog = fl_engine_program(s);

	if (!prog)
		return "";
	for (int k = 0; k < prog->n_kernels; k++)
		for (int j = 0; j < prog->kernels[k].n_ops; j++) {
			const fl_kernel *kn = &prog->kernels[k];

			if (kn->ops[j] != c)
				continue;
			for (int i = 0; i < kn->n_tensors; i++)
				if (kn->tensors[i].tensor == t)
					return fl_placement_name(
						kn->tensors[i].place);
			return "global";
		}
	return "";
}

/* Every producer -> consumer edge (key "t<T>_op<C>_in<J>") is labelled
 * with the tensor's shape and its placement in the consuming kernel; one
 * edge per op input read from another op. */
static void assert_edges_placed(const fl_session *s, Agraph_t *dg,
				const char *what)
{
	const fl_graph *g = fl_engine_graph(s);
	int edges = 0, want = 0;

	for (int c = 0; c < g->n_ops; c++)
		for (int j = 0; j < g->ops[c].n_in; j++)
			want += g->tensors[g->ops[c].in[j]].producer >= 0;
	for (Agnode_t *n = agfstnode(dg); n; n = agnxtnode(dg, n))
		for (Agedge_t *e = agfstout(dg, n); e; e = agnxtout(dg, e)) {
			int t, c, j;
			char label[256], shape[128];
			const char *place;

			if (sscanf(agnameof(e), "t%d_op%d_in%d", &t, &c,
				   &j) != 3)
				continue;
			assert_true(t >= 0 && t < g->n_tensors);
			assert_true(c >= 0 && c < g->n_ops);
			if (g->tensors[t].producer < 0)
				continue;
			edges++;
			fl_shape_format(&g->tensors[t].shape, shape,
					sizeof shape);
			place = placement_of(s, c, t);
			snprintf(label, sizeof label, "%s%s%s", shape,
				 place[0] ? "\\n" : "", place);
			/* an edge layer 2 stitched says so at the end (its
			 * own test: test_export_dot_stitched_kernels) */
			if (strcmp(agget(e, "label"), label) &&
			    strcmp(agget(e, "label"), strcat(label,
				   "\\nstitched edge")))
				fail_msg("%s: edge %s labelled %s, not %s",
					 what, agnameof(e), agget(e, "label"),
					 label);
		}
	if (edges != want)
		fail_msg("%s: %d op -> op edges, %d expected", what, edges,
			 want);
}

/* The .dot of s (whole graph) read back: every op a node, in the
 * engine's cluster, highlighted exactly when the last decision names it. */
static void assert_matches_engine(const fl_session *s, const char *file,
				  const char *what)
{
	const fl_graph *g = fl_engine_graph(s);
	Agraph_t *dg = read_back(file);
	char (*in)[64] = calloc((size_t)g->n_ops + 1, sizeof *in);
	char want[64];

	assert_non_null(in);
	clusters_of(dg, g, in);
	for (int i = 0; i < g->n_ops; i++) {
		Agnode_t *n = agnode(dg, g->ops[i].name, 0);
		bool hot;

		if (!n)
			fail_msg("%s: op %s not drawn", what, g->ops[i].name);
		expected_cluster(s, i, want, sizeof want);
		if (strcmp(in[i], want))
			fail_msg("%s: %s in \"%s\", engine says \"%s\"", what,
				 g->ops[i].name, in[i], want);
		/* ops in no cluster are greyed, the others are not */
		if (!strcmp(agget(n, "fillcolor"), "#eeeeee") != !want[0])
			fail_msg("%s: %s filled %s", what, g->ops[i].name,
				 agget(n, "fillcolor"));
		hot = !strcmp(agget(n, "color"), "red") &&
		      !strcmp(agget(n, "penwidth"), "3");
		if (hot != named_by_last(s, g->ops[i].name))
			fail_msg("%s: %s highlighted %d", what,
				 g->ops[i].name, hot);
	}
	assert_edges_placed(s, dg, what);
	free(in);
	agclose(dg);
}

/* The name as it appears in SVG text. */
static void xml_escape(const char *s, char *out, size_t n)
{
	size_t k = 0;

	for (; *s && k + 7 < n; s++) {
		const char *r = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" :
				*s == '>' ? "&gt;" :
				*s == '"' ? "&quot;" : NULL;

		if (r) {
			memcpy(out + k, r, strlen(r));
			k += strlen(r);
		} else {
			out[k++] = *s;
		}
	}
	out[k] = '\0';
}

static void assert_svg_names_ops(const fl_session *s, const char *file)
{
	const fl_graph *g = fl_engine_graph(s);
	char *svg = t_read_file(file, NULL);

	assert_non_null(strstr(svg, "<svg"));
	for (int i = 0; i < g->n_ops; i++) {
		char want[600];

		xml_escape(g->ops[i].name, want, sizeof want);
		if (!strstr(svg, want))
			fail_msg("%s lacks op %s", file, want);
	}
	free(svg);
}

/* ---- the sweep ----------------------------------------------------------- */

static void sweep_sample(const char *name, const char *dir)
{
	fl_graph *g;
	fl_session *s = open_sample(name, &g);
	char file[800], what[320];
	fl_error err;
	int passes = 0;

	while (!fl_engine_done(s)) {
		if (fl_engine_step_pass(s, &err) < 0)
			fail_msg("%s: %s", name, err.msg);
		snprintf(file, sizeof file, "%s/%s-%d.dot", dir, name, passes);
		snprintf(what, sizeof what, "%s after pass %d", name, passes);
		export_or_fail(s, NULL, file, "dot");
		t_assert_dot_accepts(file);
		assert_matches_engine(s, file, what);
		passes++;
	}
	if (passes < 4)
		fail_msg("%s: only %d passes", name, passes);
	assert_non_null(fl_engine_program(s));
	snprintf(file, sizeof file, "%s/%s.svg", dir, name);
	export_or_fail(s, NULL, file, "svg");
	assert_svg_names_ops(s, file);
	fl_engine_close(s);
	fl_graph_free(g);
}

static void test_export_dot_every_sample_every_pass(void **state)
{
	DIR *d = opendir(t_samples_dir());
	struct dirent *e;
	char dir[256];
	int n = 0;

	(void)state;
	assert_non_null(d);
	t_make_dir(dir, sizeof dir);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char name[256];

		if (len < 6 || strcmp(e->d_name + len - 5, ".json") ||
		    len - 5 >= sizeof name)
			continue;
		snprintf(name, sizeof name, "%.*s", (int)(len - 5), e->d_name);
		/* the sanitizer pass: three samples (the plain one has all) */
		if (T_SANITIZED && strcmp(name, "apollo_fig3") &&
		    strcmp(name, "micro2020_fig1") && strcmp(name, "softmax"))
			continue;
		sweep_sample(name, dir);
		n++;
	}
	closedir(d);
	t_remove_dir(dir);
	assert_true(n >= (T_SANITIZED ? 3 : 20));
}

/* A custom op (excluded from fusion: in no cluster, greyed) between ops
 * whose names hold a quote, a backslash, braces and XML's specials: dot
 * takes the file, the names come back from it unchanged, and the SVG
 * shows them. */
static const char odd_json[] =
	"{\"format\":\"fuselab-graph/1\",\"name\":\"odd \\\"names\\\"\","
	"\"tensors\":{\"x\":{\"shape\":[16,64],\"role\":\"input\"},"
	"\"y\":{\"shape\":[16,64],\"role\":\"output\"}},\"ops\":["
	"{\"name\":\"a \\\"q\\\"\",\"op\":\"mul\","
	"\"in\":[\"x\",\"x\"],\"out\":\"a\"},"
	"{\"name\":\"b\\\\n{1}\",\"op\":\"neg\",\"in\":[\"a\"],\"out\":\"b\"},"
	"{\"name\":\"c\",\"op\":\"custom\",\"in\":[\"b\"],\"out\":\"cs\"},"
	"{\"name\":\"d<&>\",\"op\":\"tanh\",\"in\":[\"cs\"],\"out\":\"d\"},"
	"{\"name\":\"x\",\"op\":\"add\",\"in\":[\"d\",\"x\"],\"out\":\"y\"}]}";

static void test_export_dot_odd_names_and_custom_ops(void **state)
{
	fl_graph *g = t_load(odd_json);
	fl_engine_opts o;
	fl_session *s;
	char dir[256], file[320], what[] = "odd names";
	fl_error err;
	Agraph_t *dg;
	Agnode_t *c;

	(void)state;
	t_make_dir(dir, sizeof dir);
	fl_engine_opts_default(&o);
	o.stop_after = FL_PASS_CODEGEN;
	s = fl_engine_open(g, &o, &err);
	if (!s)
		fail_msg("%s", err.msg);
	for (int pass = 0; !fl_engine_done(s); pass++) {
		assert_true(fl_engine_step_pass(s, &err) >= 0);
		snprintf(file, sizeof file, "%s/odd%d.dot", dir, pass);
		export_or_fail(s, NULL, file, "dot");
		t_assert_dot_accepts(file);
		assert_matches_engine(s, file, what);
	}
	/* the input tensor "x" shares its name with an op: both drawn */
	dg = read_back(file);
	c = agnode(dg, "c", 0);
	assert_non_null(c);
	assert_string_equal(agget(c, "fillcolor"), "#eeeeee");
	assert_non_null(agnode(dg, "x", 0));
	assert_non_null(agnode(dg, "x #2", 0));
	agclose(dg);
	snprintf(file, sizeof file, "%s/odd.svg", dir);
	export_or_fail(s, NULL, file, "svg");
	assert_svg_names_ops(s, file);
	fl_engine_close(s);
	fl_graph_free(g);
	t_remove_dir(dir);
}

/* ---- the decision at a step, and its neighbourhood ----------------------- */

/* Goes to the first merge of the aggregate pass (a decision naming ops). */
static int goto_first_merge(fl_session *s)
{
	fl_error err;
	int total = fl_engine_total(s, &err);

	assert_true(total > 0);
	assert_int_equal(fl_engine_goto(s, total, &err), total);
	for (int i = 0; i < total; i++) {
		const fl_event *e = fl_event_log_get(fl_engine_events(s), i);

		if (e->kind == FL_EV_MERGED && e->n_ops > 0) {
			assert_int_equal(fl_engine_goto(s, i + 1, &err), i + 1);
			return i;
		}
	}
	fail_msg("no merge");
	return -1;
}

/* Ops within k hops of the last decision's ops, counted. */
static int within(const fl_session *s, int k, bool *in)
{
	const fl_graph *g = fl_engine_graph(s);
	int *dist = malloc((size_t)g->n_ops * sizeof *dist), n = 0;

	assert_non_null(dist);
	for (int i = 0; i < g->n_ops; i++)
		dist[i] = named_by_last(s, g->ops[i].name) ? 0 : -1;
	for (int level = 0; level < k; level++)
		for (int c = 0; c < g->n_ops; c++)
			for (int j = 0; j < g->ops[c].n_in; j++) {
				int p = g->tensors[g->ops[c].in[j]].producer;

				if (p >= 0 && dist[p] == level && dist[c] < 0)
					dist[c] = level + 1;
				if (p >= 0 && dist[c] == level && dist[p] < 0)
					dist[p] = level + 1;
			}
	for (int i = 0; i < g->n_ops; i++) {
		in[i] = dist[i] >= 0;
		n += in[i];
	}
	free(dist);
	return n;
}

static void test_export_dot_neighbourhood(void **state)
{
	fl_graph *g;
	fl_session *s = open_sample("bert_encoder", &g);
	const fl_graph *eg;
	fl_export_graph_opts o;
	char dir[256], file[320];
	int counts[3];

	(void)state;
	t_make_dir(dir, sizeof dir);
	goto_first_merge(s);
	eg = fl_engine_graph(s);
	fl_export_graph_opts_default(&o);
	for (int k = 0; k < 3; k++) {
		bool *in = calloc((size_t)eg->n_ops, sizeof *in);
		int want = within(s, k, in), drawn = 0;
		Agraph_t *dg;

		assert_non_null(in);
		o.neighbourhood = k;
		snprintf(file, sizeof file, "%s/k%d.dot", dir, k);
		export_or_fail(s, &o, file, "dot");
		t_assert_dot_accepts(file);
		dg = read_back(file);
		for (int i = 0; i < eg->n_ops; i++) {
			bool there = agnode(dg, eg->ops[i].name, 0) != NULL;

			if (there != in[i])
				fail_msg("K=%d: %s drawn %d", k,
					 eg->ops[i].name, there);
			drawn += there;
		}
		assert_int_equal(drawn, want);
		counts[k] = drawn;
		agclose(dg);
		free(in);
	}
	/* a merge names two ops, and each hop adds some on bert */
	assert_true(counts[0] >= 2);
	assert_true(counts[0] < counts[1] && counts[1] < counts[2]);
	assert_true(counts[2] < eg->n_ops);
	fl_engine_close(s);
	fl_graph_free(g);
	t_remove_dir(dir);
}

/* The default title names the graph, the step and the decision's reason;
 * a given title with quotes, braces and a backslash survives dot. */
static void test_export_dot_titles(void **state)
{
	fl_graph *g;
	fl_session *s = open_sample("apollo_fig3", &g);
	const char *weird = "fig \"3\" {a|b} \\ 100%";
	fl_export_graph_opts o;
	char dir[256], file[320], want[400];
	const fl_event *e;
	Agraph_t *dg;
	int step = goto_first_merge(s) + 1;

	(void)state;
	t_make_dir(dir, sizeof dir);
	e = fl_event_log_get(fl_engine_events(s), step - 1);
	fl_export_graph_opts_default(&o);
	o.total = 99;
	snprintf(file, sizeof file, "%s/t.dot", dir);
	export_or_fail(s, &o, file, "dot");
	dg = read_back(file);
	snprintf(want, sizeof want, "step %d/99: %s", step, e->reason);
	t_assert_contains(agget(dg, "label"), want);
	t_assert_contains(agget(dg, "label"), fl_engine_graph(s)->name);
	agclose(dg);

	o.title = weird;
	export_or_fail(s, &o, file, "dot");
	t_assert_dot_accepts(file);
	dg = read_back(file);
	/* the backslash is doubled in the file so that dot shows one */
	assert_string_equal(agget(dg, "label"), "fig \"3\" {a|b} \\\\ 100%");
	agclose(dg);
	snprintf(file, sizeof file, "%s/t.svg", dir);
	export_or_fail(s, &o, file, "svg");
	{
		char *svg = t_read_file(file, NULL);

		t_assert_contains(svg, "fig &quot;3&quot; {a|b} \\ 100%");
		free(svg);
	}
	fl_engine_close(s);
	fl_graph_free(g);
	t_remove_dir(dir);
}

/* With a ladder step, kernel clusters carry their median time. */
static void test_export_dot_timed_kernels(void **state)
{
	fl_graph *g;
	fl_session *s = open_sample("softmax", &g);
	const fl_program *prog;
	fl_ladder_kernel lk[1];
	fl_ladder_step step;
	fl_export_graph_opts o;
	char dir[256], file[320], name[64];
	fl_error err;
	Agraph_t *dg, *c;

	(void)state;
	t_make_dir(dir, sizeof dir);
	assert_true(fl_engine_run(s, &err) > 0);
	prog = fl_engine_program(s);
	assert_non_null(prog);
	memset(&step, 0, sizeof step);
	memset(lk, 0, sizeof lk);
	snprintf(lk[0].name, sizeof lk[0].name, "%s", prog->kernels[0].name);
	lk[0].r.seconds = 0.00125;
	lk[0].r.n_timed = 5;
	step.n_kernels = 1;
	step.kernels = lk;
	fl_export_graph_opts_default(&o);
	o.timed = &step;
	snprintf(file, sizeof file, "%s/timed.dot", dir);
	export_or_fail(s, &o, file, "dot");
	dg = read_back(file);
	snprintf(name, sizeof name, "cluster_%s", prog->kernels[0].name);
	c = agsubg(dg, name, 0);
	assert_non_null(c);
	t_assert_contains(agget(c, "label"), "median 1.250 ms");
	t_assert_contains(agget(c, "label"), prog->kernels[0].name);
	agclose(dg);
	fl_engine_close(s);
	fl_graph_free(g);
	t_remove_dir(dir);
}

/* The kernels of the parallel groups layer 3 would form are drawn blue
 * and named in their cluster's label; no other cluster is. */
static void assert_parallel_marked(const char *name)
{
	fl_graph *g;
	fl_session *s = open_sample(name, &g);
	const fl_program *prog;
	fl_par_analysis *a;
	bool *in_group;
	char dir[256], file[320];
	fl_error err;
	Agraph_t *dg;
	int marked = 0;

	t_make_dir(dir, sizeof dir);
	assert_true(fl_engine_run(s, &err) > 0);
	prog = fl_engine_program(s);
	a = fl_stitch_parallel_analyze(fl_engine_graph(s),
				       fl_engine_partition(s), prog, NULL,
				       &err);
	assert_non_null(a);
	assert_int_equal(a->kind, FL_PAR_KERNELS);
	assert_true(a->n_groups >= 1);
	in_group = calloc((size_t)prog->n_kernels, sizeof *in_group);
	assert_non_null(in_group);
	for (int si = 0; si < a->n_sets; si++)
		for (int r = 0; r < a->sets[si].n_rounds; r++) {
			const fl_par_round *rd = &a->sets[si].rounds[r];

			for (int t = 0; t < rd->n_tries; t++) {
				const fl_par_try *tr = &rd->tries[t];

				for (int c = 0; tr->accepted &&
				     c < tr->count; c++) {
					int u = rd->cand[tr->first + c];

					in_group[a->units[u].id] = true;
				}
			}
		}
	fl_par_analysis_free(a);
	snprintf(file, sizeof file, "%s/par.dot", dir);
	export_or_fail(s, NULL, file, "dot");
	dg = read_back(file);
	for (int k = 0; k < prog->n_kernels; k++) {
		char cname[64];
		Agraph_t *c;
		bool blue;

		snprintf(cname, sizeof cname, "cluster_%s",
			 prog->kernels[k].name);
		c = agsubg(dg, cname, 0);
		assert_non_null(c);
		blue = !strcmp(agget(c, "color"), "blue") &&
		       strstr(agget(c, "label"), "parallel group P");
		if (blue != in_group[k])
			fail_msg("%s: %s marked %d", name, cname, blue);
		marked += blue;
	}
	assert_true(marked >= 2);
	agclose(dg);
	free(in_group);
	fl_engine_close(s);
	fl_graph_free(g);
	t_remove_dir(dir);
}

static void test_export_dot_parallel_groups(void **state)
{
	(void)state;
	assert_parallel_marked("apollo_fig1");
	assert_parallel_marked("deepfm");
}

/* ---- layers 2 and 3: stitched kernels and parallel groups ------------- */

static fl_session *open_strategy(const char *name, fl_strategy st,
				 fl_graph **g)
{
	fl_engine_opts o;
	fl_error err;
	fl_session *s;

	*g = t_load_sample(name);
	fl_engine_opts_default(&o);
	o.strategy = st;
	o.stop_after = FL_PASS_CODEGEN;
	s = fl_engine_open(*g, &o, &err);
	if (!s || fl_engine_run(s, &err) < 0)
		fail_msg("%s: %s", name, err.msg);
	return s;
}

/* The end of sample `name` under strategy st, exported, accepted by dot
 * and read back. */
static Agraph_t *export_end(const char *name, fl_strategy st,
			    fl_session **s, fl_graph **g, char *dir,
			    char *file)
{
	*s = open_strategy(name, st, g);
	t_make_dir(dir, 256);
	snprintf(file, 320, "%s/%s.dot", dir, name);
	export_or_fail(*s, NULL, file, "dot");
	t_assert_dot_accepts(file);
	return read_back(file);
}

/* The micro-graphs of kernel k's ops, each once (worked out here). */
static int groups_of(const fl_session *s, const fl_kernel *k, int *ids)
{
	const int *group_of = fl_engine_partition(s)->group_of;
	int n = 0;

	for (int i = 0; i < k->n_ops; i++) {
		bool seen = false;

		for (int j = 0; j < n; j++)
			seen |= ids[j] == group_of[k->ops[i]];
		if (!seen)
			ids[n++] = group_of[k->ops[i]];
	}
	return n;
}

/* Every op of kernel k is a node of cluster c. */
static void assert_ops_in(const fl_session *s, Agraph_t *dg, Agraph_t *c,
			  const fl_kernel *k)
{
	for (int i = 0; i < k->n_ops; i++) {
		const char *op = fl_engine_graph(s)->ops[k->ops[i]].name;
		Agnode_t *n = agnode(dg, (char *)op, 0);

		assert_non_null(n);
		if (!agsubnode(c, n, 0))
			fail_msg("%s not in %s", op, agnameof(c));
	}
}

/* Kernel k (in cluster c, named base) stitched micro-graphs: the label
 * says so, and each micro-graph is a sub-cluster holding its ops.
 * Returns how many micro-graphs. */
static int assert_stitched_cluster(const fl_session *s, Agraph_t *dg,
				   Agraph_t *c, const char *base,
				   const fl_kernel *k)
{
	const fl_partition *p = fl_engine_partition(s);
	int ids[64], n = groups_of(s, k, ids);

	if (n < 2)
		return n;
	for (int i = 0; i < n; i++) {
		char name[128], want[32];
		Agraph_t *sub;

		snprintf(name, sizeof name, "%s_G%d", base, ids[i]);
		sub = agsubg(c, name, 0);
		if (!sub)
			fail_msg("no sub-cluster %s", name);
		snprintf(want, sizeof want, " G%d", ids[i]);
		t_assert_contains(agget(c, "label"), want);
		for (int j = 0; j < p->groups[ids[i]].n_members; j++) {
			Agnode_t *nd = agnode(dg, (char *)fl_engine_graph(s)->
					      ops[p->groups[ids[i]].members[j]]
					      .name, 0);

			assert_non_null(nd);
			assert_non_null(agsubnode(sub, nd, 0));
		}
	}
	t_assert_contains(agget(c, "label"), "stitched (layer 2):");
	return n;
}

/* An attribute of obj, "" when the graph never declared it. */
static const char *attr(void *obj, const char *name)
{
	const char *v = agget(obj, (char *)name);

	return v ? v : "";
}

/* Edges between ops of one kernel in different micro-graphs are the
 * stitched edges: labelled so, bold green exactly when the tensor stayed
 * in the tile; no other edge is.  Returns the stitched edges. */
static int assert_stitched_edges(const fl_session *s, Agraph_t *dg)
{
	const fl_graph *g = fl_engine_graph(s);
	const fl_program *prog = fl_engine_program(s);
	const int *group_of = fl_engine_partition(s)->group_of;
	int *k_of = calloc((size_t)g->n_ops, sizeof *k_of), n = 0;

	assert_non_null(k_of);
	for (int k = 0; k < prog->n_kernels; k++)
		for (int j = 0; j < prog->kernels[k].n_ops; j++)
			k_of[prog->kernels[k].ops[j]] = k;
	for (Agnode_t *nd = agfstnode(dg); nd; nd = agnxtnode(dg, nd))
		for (Agedge_t *e = agfstout(dg, nd); e; e = agnxtout(dg, e)) {
			int t, c, j, pr;
			bool stitched, local;
			const char *label = agget(e, "label");

			if (sscanf(agnameof(e), "t%d_op%d_in%d", &t, &c,
				   &j) != 3)
				continue;
			pr = g->tensors[t].producer;
			if (pr < 0)
				continue;
			stitched = k_of[pr] == k_of[c] &&
				   group_of[pr] != group_of[c];
			local = strstr(label, "tile-local") != NULL;
			assert_int_equal(strstr(label, "stitched edge") != NULL,
					 stitched);
			assert_int_equal(!strcmp(attr(e, "style"), "bold"),
					 stitched && local);
			n += stitched;
		}
	free(k_of);
	return n;
}

/* softmax and layernorm under apollo-l2: one kernel, drawn as one
 * cluster holding its stitched micro-graphs as sub-clusters; its
 * stitched edges (all kept in the tile) are bold. */
static void test_export_dot_stitched_kernels(void **state)
{
	static const char *const samples[] = {"softmax", "layernorm"};

	(void)state;
	for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
		fl_session *s;
		fl_graph *g;
		char dir[256], base[64], file[320];
		Agraph_t *dg = export_end(samples[i], FL_STRATEGY_APOLLO_L2,
					  &s, &g, dir, file);
		const fl_program *prog = fl_engine_program(s);
		Agraph_t *c;

		assert_int_equal(prog->n_kernels, 1);
		snprintf(base, sizeof base, "cluster_%s",
			 prog->kernels[0].name);
		c = agsubg(dg, base, 0);
		assert_non_null(c);
		assert_true(assert_stitched_cluster(s, dg, c, base,
						    &prog->kernels[0]) >= 3);
		assert_int_equal(assert_stitched_edges(s, dg), 3);
		assert_matches_engine(s, file, samples[i]);
		agclose(dg);
		fl_engine_close(s);
		fl_graph_free(g);
		t_remove_dir(dir);
	}
}

/* The gain layer 3 gave the kernel named k, -1 when none. */
static double gain_of(const fl_session *s, const char *k)
{
	const fl_par_analysis *a = fl_engine_parallel(s);

	for (int si = 0; si < a->n_sets; si++)
		for (int r = 0; r < a->sets[si].n_rounds; r++) {
			const fl_par_round *rd = &a->sets[si].rounds[r];

			for (int t = 0; t < rd->n_tries; t++)
				if (rd->tries[t].stitched &&
				    !strcmp(rd->tries[t].kernel, k))
					return rd->tries[t].gain;
		}
	return -1;
}

/* inception (3a) and APOLLO Fig. 1 under apollo: each kernel layer 3
 * made is a blue cluster "parallel group (layer 3)" with its gain, each
 * branch a sub-cluster holding the branch's ops (and its stitched
 * micro-graphs when layer 2 stitched it); no hypothetical group is
 * drawn once layer 3 decided. */
static void test_export_dot_parallel_kernels(void **state)
{
	static const char *const samples[] = {"inception_block",
					      "apollo_fig1"};

	(void)state;
	for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
		fl_session *s;
		fl_graph *g;
		char dir[256], file[320];
		Agraph_t *dg = export_end(samples[i], FL_STRATEGY_APOLLO,
					  &s, &g, dir, file);
		const fl_program *prog = fl_engine_program(s);
		int groups = 0;

		for (int k = 0; k < prog->n_kernels; k++) {
			const fl_kernel *kn = &prog->kernels[k];
			char base[64], want[64];
			Agraph_t *c;

			snprintf(base, sizeof base, "cluster_%s", kn->name);
			c = agsubg(dg, base, 0);
			assert_non_null(c);
			assert_null(strstr(agget(c, "label"),
					   "parallel group P"));
			if (kn->n_branches == 0)
				continue;
			groups++;
			assert_string_equal(agget(c, "color"), "blue");
			snprintf(want, sizeof want, "parallel group (layer 3): "
				 "%d branches, gain %.1f us", kn->n_branches,
				 gain_of(s, kn->name) * 1e6);
			assert_true(gain_of(s, kn->name) > 0);
			t_assert_contains(agget(c, "label"), want);
			for (int b = 0; b < kn->n_branches; b++) {
				char name[96];
				Agraph_t *sub;

				snprintf(name, sizeof name, "%s_b%d", base, b);
				sub = agsubg(c, name, 0);
				assert_non_null(sub);
				assert_ops_in(s, dg, sub, &kn->branches[b]);
				assert_stitched_cluster(s, dg, sub, name,
							&kn->branches[b]);
			}
		}
		assert_true(groups >= 1);
		assert_stitched_edges(s, dg);
		assert_matches_engine(s, file, samples[i]);
		agclose(dg);
		fl_engine_close(s);
		fl_graph_free(g);
		t_remove_dir(dir);
	}
}

/* ---- schedule trees, png, errors ----------------------------------------- */

static bool has_label_prefix(Agraph_t *dg, const char *prefix)
{
	for (Agnode_t *n = agfstnode(dg); n; n = agnxtnode(dg, n))
		if (!strncmp(agget(n, "label"), prefix, strlen(prefix)))
			return true;
	return false;
}

static void test_export_dot_schedule_trees(void **state)
{
	fl_graph *g;
	fl_session *s = open_sample("micro2020_fig1", &g);
	const fl_program *prog;
	char dir[256], file[320];
	fl_error err;
	int ext = 0;

	(void)state;
	t_make_dir(dir, sizeof dir);
	assert_true(fl_engine_run(s, &err) > 0);
	prog = fl_engine_program(s);
	assert_non_null(prog);
	for (int k = 0; k < prog->n_kernels; k++) {
		Agraph_t *dg;

		snprintf(file, sizeof file, "%s/tree%d.dot", dir, k);
		if (fl_export_schedule_tree(s, k, file, "dot", &err) != 0)
			fail_msg("%s", err.msg);
		t_assert_dot_accepts(file);
		dg = read_back(file);
		assert_true(has_label_prefix(dg, "domain"));
		assert_true(has_label_prefix(dg, "band"));
		ext += has_label_prefix(dg, "extension");
		assert_true(agnnodes(dg) >= 3);
		assert_int_equal(agnedges(dg), agnnodes(dg) - 1);
		agclose(dg);
	}
	assert_true(ext >= 1);
	snprintf(file, sizeof file, "%s/tree.svg", dir);
	assert_int_equal(export_any(s, NULL, 0, file, "svg", &err), 0);
	{
		char *svg = t_read_file(file, NULL);

		t_assert_contains(svg, "domain");
		free(svg);
	}
	assert_int_equal(fl_export_schedule_tree(s, prog->n_kernels, file,
						 "dot", &err), -1);
	t_assert_contains(err.msg, file);
	fl_engine_close(s);
	fl_graph_free(g);
	t_remove_dir(dir);
}

static void test_export_dot_png(void **state)
{
	fl_graph *g;
	fl_session *s = open_sample("softmax", &g);
	char dir[256], file[320], *png;
	size_t len;
	fl_error err;

	(void)state;
	t_make_dir(dir, sizeof dir);
	assert_true(fl_engine_run(s, &err) > 0);
	snprintf(file, sizeof file, "%s/g.png", dir);
	export_or_fail(s, NULL, file, "png");
	png = t_read_file(file, &len);
	assert_true(len > 100);
	assert_memory_equal(png, "\x89PNG\r\n\x1a\n", 8);
	free(png);
	snprintf(file, sizeof file, "%s/t.png", dir);
	assert_int_equal(export_any(s, NULL, 0, file, "png", &err), 0);
	png = t_read_file(file, &len);
	assert_memory_equal(png, "\x89PNG\r\n\x1a\n", 8);
	free(png);
	fl_engine_close(s);
	fl_graph_free(g);
	t_remove_dir(dir);
}

static void test_export_dot_bad_paths(void **state)
{
	fl_graph *g;
	fl_session *s = open_sample("softmax", &g);
	char dir[256], file[320];
	struct stat st;
	fl_error err;

	(void)state;
	t_make_dir(dir, sizeof dir);
	/* before layer 1 there is no tree to draw */
	snprintf(file, sizeof file, "%s/early.dot", dir);
	assert_int_equal(fl_export_schedule_tree(s, 0, file, "dot", &err), -1);
	t_assert_contains(err.msg, file);
	assert_true(fl_engine_run(s, &err) > 0);
	snprintf(file, sizeof file, "%s/missing/g.svg", dir);
	for (int f = 0; f < 3; f++) {
		const char *fmt = f == 0 ? "dot" : f == 1 ? "svg" : "png";

		assert_int_equal(export_any(s, NULL, -1, file, fmt, &err), -1);
		t_assert_contains(err.msg, file);
		assert_int_equal(export_any(s, NULL, 0, file, fmt, &err), -1);
		t_assert_contains(err.msg, file);
	}
	/* the picture is rendered in a child, but written here: a write
	 * failure below the exporter loses the whole file */
	snprintf(file, sizeof file, "%s/full.svg", dir);
	fl_out_fail_after(100);
	assert_int_equal(export_any(s, NULL, -1, file, "svg", &err), -1);
	fl_out_fail_after(-1);
	t_assert_contains(err.msg, "full.svg");
	t_assert_contains(err.msg, "No space left on device");
	snprintf(file, sizeof file, "%s/g.pdf", dir);
	assert_int_equal(fl_export_graph(s, NULL, file, "pdf", &err), -1);
	t_assert_contains(err.msg, "g.pdf");
	/* a directory where the file should be */
	assert_int_equal(fl_export_graph(s, NULL, dir, "dot", &err), -1);
	t_assert_contains(err.msg, dir);
	assert_int_equal(stat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(t_count_entries(dir), 0);
	fl_engine_close(s);
	fl_graph_free(g);
	t_remove_dir(dir);
}

static void test_export_dot_format_of(void **state)
{
	(void)state;
	assert_string_equal(fl_export_format_of("a/b.dot"), "dot");
	assert_string_equal(fl_export_format_of("b.GV"), "dot");
	assert_string_equal(fl_export_format_of("x.y/b.svg"), "svg");
	assert_string_equal(fl_export_format_of("b.Png"), "png");
	assert_null(fl_export_format_of("b.pdf"));
	assert_null(fl_export_format_of("x.svg/b"));
	assert_null(fl_export_format_of("dot"));
	assert_null(fl_export_format_of(NULL));
}

FL_SUITE(export_dot,
	 cmocka_unit_test(test_export_dot_format_of),
	 cmocka_unit_test(test_export_dot_every_sample_every_pass),
	 cmocka_unit_test(test_export_dot_odd_names_and_custom_ops),
	 cmocka_unit_test(test_export_dot_neighbourhood),
	 cmocka_unit_test(test_export_dot_titles),
	 cmocka_unit_test(test_export_dot_timed_kernels),
	 cmocka_unit_test(test_export_dot_parallel_groups),
	 cmocka_unit_test(test_export_dot_stitched_kernels),
	 cmocka_unit_test(test_export_dot_parallel_kernels),
	 cmocka_unit_test(test_export_dot_schedule_trees),
	 cmocka_unit_test(test_export_dot_png),
	 cmocka_unit_test(test_export_dot_bad_paths));
