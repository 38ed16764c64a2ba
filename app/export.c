/* Batch exports (see export.h).
 *
 * Picture targets (--dot, --svg, --png) are a FILE or a DIR (an existing
 * directory, or a path ending in '/', created when missing).  A FILE gets
 * one picture: the --domain picture when asked for, else the graph.  A
 * DIR gets <graph>.<ext>, and with --frames <graph>-frame-0001.<ext> ...
 * one per decision, with --schedule-trees <graph>-tree-fl_k0.<ext> ...
 * one per kernel, with --domain <graph>-domain-<kernel>-<statement>.<ext>. */
#include "export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "batch.h"
#include "domain_dot.h"
#include "dot.h"
#include "onnx.h"
#include "report_json.h"
#include "trace.h"

typedef struct target {
	const char *path;
	const char *format;	/* dot, svg, png */
	bool dir;
} target;

bool fl_app_exports_wanted(const fl_options *o)
{
	return o->dot || o->svg || o->png || o->trace_file || o->report_file;
}

/* Where "wrote ..." lines go: stdout, unless it carries JSON. */
static FILE *note_stream(const fl_options *o)
{
	return o->format == FL_FORMAT_TEXT ? stdout : stderr;
}

static int fail(const fl_error *err)
{
	fprintf(stderr, "fuselab: %s\n", fl_safe_name(err->msg));
	return 1;
}

/* An existing directory, or a path ending in '/' (made when missing). */
static int resolve_target(target *t, fl_error *err)
{
	size_t n = strlen(t->path);
	struct stat st;

	t->dir = (stat(t->path, &st) == 0 && S_ISDIR(st.st_mode)) ||
		 (n > 0 && t->path[n - 1] == '/');
	if (t->dir && stat(t->path, &st) != 0 && mkdir(t->path, 0777) != 0) {
		fl_error_set(err, "%s: %s", t->path, strerror(errno));
		return -1;
	}
	return 0;
}

/* DIR/<graph><suffix>.<ext> */
static void dir_file(const target *t, const fl_session *s, const char *suffix,
		     char *out, size_t n)
{
	char name[80];
	size_t len = strlen(t->path);

	fl_app_file_name(fl_engine_input_graph(s)->name, name, sizeof name);
	snprintf(out, n, "%s%s%s%s.%s", t->path,
		 len && t->path[len - 1] == '/' ? "" : "/", name, suffix,
		 t->format);
}

static int graph_picture(fl_session *s, const target *t, const char *path,
			 const fl_options *o, const fl_ladder_step *timed,
			 const char *title)
{
	fl_export_graph_opts go;
	fl_error err = {""};

	fl_export_graph_opts_default(&go);
	go.neighbourhood = o->neighbourhood;
	go.title = title;
	go.timed = timed;
	go.total = fl_engine_total(s, NULL);

	if (fl_export_graph(s, &go, path, t->format, &err) < 0)
		return fail(&err);
	fprintf(note_stream(o), "wrote %s: the graph at step %d (%s)\n",
		fl_safe_name(path), fl_engine_position(s), t->format);
	return 0;
}

/* One picture per decision up to the step reached, then back there. */
static int frames(fl_session *s, const target *t, const fl_options *o)
{
	int end = fl_engine_position(s), rc = 0;
	fl_error err = {""};

	for (int k = 1; k <= end && rc == 0; k++) {
		const fl_event *e;
		char suffix[32], path[1200], title[FL_EVENT_REASON + 64];

		if (fl_engine_goto(s, k, &err) < 0)
			return fail(&err);
		e = fl_event_log_get(fl_engine_events(s), k - 1);
		snprintf(title, sizeof title, "#%d %s %s: %s", e->seq,
			 fl_pass_name(e->pass), fl_event_kind_name(e->kind),
			 e->reason);
		snprintf(suffix, sizeof suffix, "-frame-%04d", k);
		dir_file(t, s, suffix, path, sizeof path);
		rc = graph_picture(s, t, path, o, NULL, title);
	}
	if (fl_engine_goto(s, end, &err) < 0)
		return fail(&err);
	return rc;
}

static int schedule_trees(fl_session *s, const target *t, const fl_options *o)
{
	const fl_program *p = fl_engine_program(s);
	fl_error err = {""};

	if (!p) {
		fprintf(stderr, "fuselab: --schedule-trees: no kernels at step "
			"%d (layer 1 has not run; see --stage)\n",
			fl_engine_position(s));
		return 1;
	}
	for (int k = 0; k < p->n_kernels; k++) {
		char suffix[64], path[1200];

		snprintf(suffix, sizeof suffix, "-tree-%s", p->kernels[k].name);
		dir_file(t, s, suffix, path, sizeof path);
		if (fl_export_schedule_tree(s, k, path, t->format, &err) < 0)
			return fail(&err);
		fprintf(note_stream(o), "wrote %s: the schedule tree of %s\n",
			fl_safe_name(path), p->kernels[k].name);
	}
	return 0;
}

/* --domain KERNEL:STATEMENT: the kernel as fl_k3 or 3. */
static int domain_kernel(const fl_session *s, const char *spec, int *kernel,
			 char *stmt, size_t n)
{
	const fl_program *p = fl_engine_program(s);
	const char *colon = strchr(spec, ':');
	char name[64];

	snprintf(name, sizeof name, "%.*s", (int)(colon - spec), spec);
	snprintf(stmt, n, "%s", colon + 1);
	for (int k = 0; p && k < p->n_kernels; k++) {
		char num[16];

		snprintf(num, sizeof num, "%d", k);
		if (!strcmp(name, p->kernels[k].name) || !strcmp(name, num)) {
			*kernel = k;
			return 0;
		}
	}
	fprintf(stderr, "fuselab: --domain %s: no kernel \"%s\" at step %d "
		"(%d kernels%s)\n", fl_safe_name(spec), fl_safe_name(name),
		fl_engine_position(s), p ? p->n_kernels : 0,
		p ? "" : "; layer 1 has not run");
	return -1;
}

static int domain_picture(fl_session *s, const target *t, const fl_options *o)
{
	char stmt[128], path[1200], suffix[300];
	fl_error err = {""};
	int kernel;

	if (domain_kernel(s, o->domain, &kernel, stmt, sizeof stmt) < 0)
		return 1;
	if (t->dir) {
		char safe[80];

		fl_app_file_name(stmt, safe, sizeof safe);
		snprintf(suffix, sizeof suffix, "-domain-%s-%s",
			 fl_engine_program(s)->kernels[kernel].name, safe);
		dir_file(t, s, suffix, path, sizeof path);
	} else {
		snprintf(path, sizeof path, "%s", t->path);
	}
	if (fl_export_domain(s, kernel, stmt, o->domain_dims[0],
			     o->domain_dims[1], o->domain_fixed,
			     o->n_domain_fixed, path, t->format, &err) < 0)
		return fail(&err);
	fprintf(note_stream(o), "wrote %s: the iteration domain of %s in %s\n",
		fl_safe_name(path), fl_safe_name(stmt),
		fl_engine_program(s)->kernels[kernel].name);
	return 0;
}

/* The session's strategy's step of the ladder, for kernel times. */
static const fl_ladder_step *timed_step(const fl_session *s,
					const fl_ladder *ladder)
{
	for (int i = 0; ladder && i < ladder->n; i++)
		if (ladder->steps[i].strategy ==
			    fl_engine_options(s)->strategy &&
		    ladder->steps[i].ran)
			return &ladder->steps[i];
	return NULL;
}

static int pictures(fl_session *s, target *t, const fl_ladder *ladder,
		    const fl_options *o)
{
	char path[1200];
	fl_error err = {""};
	int rc;

	if (resolve_target(t, &err) < 0)
		return fail(&err);
	if (!t->dir && (o->frames || o->schedule_trees)) {
		fprintf(stderr, "fuselab: %s writes many files: give a "
			"directory (an existing one, or a path ending in /), "
			"not %s\n", o->frames ? "--frames" : "--schedule-trees",
			fl_safe_name(t->path));
		return 2;
	}
	if (!t->dir && o->domain)
		return domain_picture(s, t, o);
	if (t->dir)
		dir_file(t, s, "", path, sizeof path);
	else
		snprintf(path, sizeof path, "%s", t->path);
	rc = graph_picture(s, t, path, o, timed_step(s, ladder), NULL);
	if (rc == 0 && o->frames)
		rc = frames(s, t, o);
	if (rc == 0 && o->schedule_trees)
		rc = schedule_trees(s, t, o);
	if (rc == 0 && o->domain)
		rc = domain_picture(s, t, o);
	return rc;
}

/* The trace, with the graph's name in its otherData. */
static int write_trace(const fl_session *s, const fl_ladder *ladder,
		       const char *path, fl_error *err)
{
	cJSON *trace = fl_trace_build(fl_engine_events(s), ladder);
	int r;

	if (!trace || fl_trace_set_graph(trace, fl_engine_input_graph(s)->name) < 0) {
		cJSON_Delete(trace);
		fl_error_set(err, "out of memory");
		return -1;
	}
	r = fl_trace_write(trace, path, err);
	cJSON_Delete(trace);
	return r;
}

int fl_app_export(fl_session *s, const fl_ladder *ladder, const fl_options *o)
{
	target targets[3] = {{o->dot, "dot", false}, {o->svg, "svg", false},
			     {o->png, "png", false}};
	fl_error err = {""};
	int rc = 0;

	for (int i = 0; i < 3 && rc == 0; i++)
		if (targets[i].path)
			rc = pictures(s, &targets[i], ladder, o);
	if (rc == 0 && o->trace_file) {
		if (write_trace(s, ladder, o->trace_file, &err) < 0)
			return fail(&err);
		fprintf(note_stream(o), "wrote %s: a Chrome trace of the "
			"compile%s\n", fl_safe_name(o->trace_file),
			ladder ? " and of each strategy's kernel runs" : "");
	}
	if (rc == 0 && o->report_file) {
		if (fl_export_report(s, ladder, o->report_file, &err) < 0)
			return fail(&err);
		fprintf(note_stream(o), "wrote %s: the JSON report "
			"(fuselab-report/1) of step %d%s\n",
			fl_safe_name(o->report_file), fl_engine_position(s),
			ladder ? " with the strategies' timings" : "");
	}
	return rc;
}

int fl_app_export_onnx(const fl_graph *g, const fl_options *o)
{
	fl_error err = {""};

	if (fl_export_onnx(g, o->onnx_file, &err) < 0)
		return fail(&err);
	fprintf(note_stream(o), "wrote %s: the graph as an ONNX model "
		"(opset %d)\n", fl_safe_name(o->onnx_file),
		FL_ONNX_EXPORT_OPSET);
	return 0;
}
