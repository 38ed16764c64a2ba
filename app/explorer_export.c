/* The explorer's export key (see explorer_impl.h): `e` suggests a file
 * for the view in focus and writes, by the file's extension,
 *   .dot .svg .png   the view's picture: the schedule tree of the
 *                    selected kernel in the schedule view, the iteration
 *                    domain of its first statement in the domain view,
 *                    the graph at this step in every other view;
 *   .json            the JSON report of this step (with the timings of
 *                    the last kernel run);
 * and says where it wrote what. */
#include <string.h>

#include "batch.h"
#include "domain_dot.h"
#include "dot.h"
#include "explorer_impl.h"
#include "report_json.h"

typedef enum picture {
	PICTURE_GRAPH, PICTURE_TREE, PICTURE_DOMAIN,
} picture;

static picture view_picture(const fl_explorer *x)
{
	const char *view = x->classes[x->pane[x->focus]]->name;
	fl_view_ctx c;

	fl_x_context((fl_explorer *)x, &c, x->focus);
	if (fl_view_current_kernel(&c) < 0)
		return PICTURE_GRAPH;
	if (!strcmp(view, "schedule"))
		return PICTURE_TREE;
	if (!strcmp(view, "domain"))
		return PICTURE_DOMAIN;
	return PICTURE_GRAPH;
}

static int current_kernel(fl_explorer *x)
{
	fl_view_ctx c;

	fl_x_context(x, &c, x->focus);
	return fl_view_current_kernel(&c);
}

void fl_x_export_name(fl_explorer *x, char *buf, size_t n)
{
	char name[80];
	int k = current_kernel(x);

	fl_app_file_name(x->graph->name, name, sizeof name);
	switch (view_picture(x)) {
	case PICTURE_TREE:
		snprintf(buf, n, "%s-%s-tree.svg", name,
			 fl_engine_program(x->s)->kernels[k].name);
		break;
	case PICTURE_DOMAIN:
		snprintf(buf, n, "%s-%s-domain.svg", name,
			 fl_engine_program(x->s)->kernels[k].name);
		break;
	case PICTURE_GRAPH:
		snprintf(buf, n, "%s-step%d.svg", name, fl_engine_position(x->s));
		break;
	}
}

/* "svg" for "x.svg"; NULL when the extension names no picture. */
static const char *picture_format(const char *path)
{
	const char *dot = strrchr(path, '.');

	if (!dot || strchr(dot, '/'))
		return NULL;
	if (!strcmp(dot, ".dot") || !strcmp(dot, ".svg") || !strcmp(dot, ".png"))
		return dot + 1;
	return NULL;
}

static int write_picture(fl_explorer *x, const char *path, const char *format,
			 char *what, size_t n, fl_error *err)
{
	int k = current_kernel(x);
	fl_view_ctx c;

	switch (view_picture(x)) {
	case PICTURE_TREE:
		snprintf(what, n, "the schedule tree of %s",
			 fl_engine_program(x->s)->kernels[k].name);
		return fl_export_schedule_tree(x->s, k, path, format, err);
	case PICTURE_DOMAIN:
		snprintf(what, n, "the iteration domain of the first statement "
			 "of %s", fl_engine_program(x->s)->kernels[k].name);
		return fl_export_domain(x->s, k, NULL, -1, -1, NULL, 0, path,
					format, err);
	case PICTURE_GRAPH:
		break;
	}
	fl_x_context(x, &c, x->focus);
	snprintf(what, n, "the graph at step %d", fl_engine_position(x->s));
	{
		fl_export_graph_opts go;

		fl_export_graph_opts_default(&go);
		go.timed = c.timed;
		go.total = c.total > 0 ? c.total : 0;
		return fl_export_graph(x->s, &go, path, format, err);
	}
}

void fl_x_export(fl_explorer *x, const char *path)
{
	const char *format = picture_format(path);
	const char *dot = strrchr(path, '.');
	fl_error err = {""};
	char what[200];
	int r;

	if (format) {
		r = write_picture(x, path, format, what, sizeof what, &err);
	} else if (dot && !strcmp(dot, ".json")) {
		snprintf(what, sizeof what, "the JSON report of step %d%s",
			 fl_engine_position(x->s),
			 x->ladder ? " with the last kernel run" : "");
		r = fl_export_report(x->s, x->ladder, path, &err);
	} else {
		fl_x_say(x, FL_LOOK_WARN, "%s: name a .svg, .png or .dot file "
			 "for a picture, or a .json file for the report", path);
		return;
	}
	if (r < 0)
		fl_x_say(x, FL_LOOK_BAD, "%s", err.msg);
	else
		fl_x_say(x, FL_LOOK_OK, "wrote %s: %s", path, what);
}
