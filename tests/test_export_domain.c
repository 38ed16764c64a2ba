/* The iteration-domain model (engine/layer1/domain_points.c) and its
 * picture (exporters/domain_dot.c) on MICRO 2020 Fig. 1: the quantize
 * S0_0 runs as copies in each 32 x 32 tile of the conv, and the two
 * columns and rows of its halo are computed by two tiles.  The .dot is
 * read back with cgraph and compared with the model, and handed to the
 * installed neato; svg and png are checked for their signatures; bad
 * arguments and paths give messages naming what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <cgraph.h>

#include "domain_dot.h"
#include "domain_points.h"
#include "test_util.h"

typedef struct t_sess {
	fl_graph *g;
	fl_session *s;
	const fl_kernel *k;	/* kernel 0 */
	fl_domain *d;
	char dir[64];		/* a temporary folder */
} t_sess;

/* micro2020_fig1 at the end of codegen, kernel 0's model, and a
 * temporary folder; budget > 0: layer 1's isl budget per micro-graph. */
static void t_open(t_sess *t, long budget)
{
	fl_engine_opts o;
	fl_error err = {""};
	const fl_program *p;

	memset(t, 0, sizeof *t);
	t->g = t_load_sample("micro2020_fig1");
	fl_engine_opts_default(&o);
	/* the 32 x 32 tiles these pictures were drawn for (the sizes the
	 * machine would pick are tested in test_tiles.c) */
	o.layer1.n_tile = 2;
	o.layer1.tile[0] = o.layer1.tile[1] = 32;
	if (budget > 0)
		o.layer1.sched_budget = budget;
	o.stop_after = FL_PASS_CODEGEN;
	t->s = fl_engine_open(t->g, &o, &err);
	if (!t->s || fl_engine_run(t->s, &err) < 0)
		fail_msg("%s", err.msg);
	p = fl_engine_program(t->s);
	assert_non_null(p);
	assert_true(p->n_kernels >= 1);
	t->k = &p->kernels[0];
	t->d = fl_domain_new(t->k, &err);
	if (!t->d)
		fail_msg("%s", err.msg);
	snprintf(t->dir, sizeof t->dir, "/tmp/fl_domXXXXXX");
	assert_non_null(mkdtemp(t->dir));
}

static void t_close(t_sess *t)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf %s", t->dir);
	assert_int_equal(t_run(cmd, NULL), 0);
	fl_domain_free(t->d);
	fl_engine_close(t->s);
	fl_graph_free(t->g);
}

/* The window of S0_0 the exporter draws by default: columns i3, rows
 * i2, from the lower bounds, at most FL_DOMAIN_DOT_MAX points each. */
static fl_domain_window *t_window(const t_sess *t, int w, int h)
{
	long fixed[FL_DOMAIN_MAXD] = {0};
	fl_error err = {""};
	fl_domain_window *win = fl_domain_window_new(t->d, t->k, 0, 3, 2, fixed,
						     0, 0, w, h, &err);

	if (!win)
		fail_msg("%s", err.msg);
	return win;
}

/* ---- the model ------------------------------------------------------ */

/* S0_0 first, in program order; the view's first 100 x 30 window
 * (47 columns, 25 rows) has 2 x 25 overlapped points: columns 32, 33. */
static void export_domain_model_overlap(void **state)
{
	t_sess t;
	fl_domain_window *win;
	const fl_domain_stmt *s;
	long at[4] = {0, 0, 5, 32};
	char names[256];

	(void)state;
	t_open(&t, 0);
	s = fl_domain_stmt_at(t.d, 0);
	assert_string_equal(s->name, "S0_0");
	assert_int_equal(s->n_dims, 4);
	assert_int_equal(fl_domain_find(t.d, "S0_0"), 0);
	assert_int_equal(fl_domain_find(t.d, "S9_0"), -1);
	assert_null(fl_domain_stmt_at(t.d, fl_domain_n_stmts(t.d)));
	fl_domain_names(t.d, names, sizeof names);
	assert_memory_equal(names, "S0_0 ", 5);
	win = t_window(&t, 47, 25);
	assert_true(win->copied);
	assert_int_equal(win->n_in, 47 * 25);
	assert_int_equal(win->n_overlap, 2 * 25);
	assert_true(win->n_tiles >= 2);
	/* Column 32 is computed by the first two tiles; 31 and 34 by one
	 * each, different ones. */
	assert_int_equal(fl_domain_window_at(win, at)->n_tiles, 2);
	at[3] = 31;
	assert_int_equal(fl_domain_window_at(win, at)->n_tiles, 1);
	at[3] = 34;
	assert_int_equal(fl_domain_window_at(win, at)->n_tiles, 1);
	assert_int_not_equal(fl_domain_window_at(win, at)->tile_id,
			     win->pts[5 * 47 + 31].tile_id);
	/* The first tile's box spans the halo: columns 0 to 33. */
	assert_int_equal(win->tiles[0].x_lo, 0);
	assert_int_equal(win->tiles[0].x_hi, 33);
	at[3] = 47;
	assert_null(fl_domain_window_at(win, at));
	fl_domain_window_free(win);
	t_close(&t);
}

/* Out-of-range arguments are refused with a reason. */
static void export_domain_model_arguments(void **state)
{
	t_sess t;
	long fixed[FL_DOMAIN_MAXD] = {0};
	fl_error err = {""};

	(void)state;
	t_open(&t, 0);
	assert_null(fl_domain_window_new(t.d, t.k, 0, 3, 3, fixed, 0, 0, 4, 4,
					 &err));
	assert_non_null(strstr(err.msg, "S0_0 has 4 dimensions"));
	assert_null(fl_domain_window_new(t.d, t.k, 99, 3, 2, fixed, 0, 0, 4, 4,
					 &err));
	assert_non_null(strstr(err.msg, "no statement 99"));
	assert_null(fl_domain_window_new(t.d, t.k, 0, 3, 2, fixed, 0, 0, 0, 4,
					 &err));
	assert_non_null(strstr(err.msg, "window 0 x 4"));
	t_close(&t);
}

/* With a budget of one isl operation layer 1 keeps the original
 * schedules, untiled: every point of a statement is in one colour, with
 * no tile and no overlap. */
static void export_domain_model_untiled(void **state)
{
	t_sess t;
	long fixed[FL_DOMAIN_MAXD] = {0};
	fl_error err = {""};
	fl_domain_window *win;
	const fl_domain_stmt *s;

	(void)state;
	t_open(&t, 1);
	assert_null(t.k->inst2tile);
	s = fl_domain_stmt_at(t.d, 0);
	assert_true(s->n_dims >= 2);
	win = fl_domain_window_new(t.d, t.k, 0, s->n_dims - 1, s->n_dims - 2,
				   fixed, 0, 0, 40, 40, &err);
	if (!win)
		fail_msg("%s", err.msg);
	assert_true(win->n_in > 0);
	assert_false(win->copied);
	assert_int_equal(win->n_tiles, 0);
	assert_int_equal(win->n_overlap, 0);
	for (int i = 0; i < win->w * win->h; i++) {
		assert_int_equal(win->pts[i].n_tiles, 0);
		assert_int_equal(win->pts[i].tile_id, -1);
		assert_int_equal(fl_domain_tile_colour(&win->pts[i]), 0);
	}
	fl_domain_window_free(win);
	t_close(&t);
}

static void t_export(const t_sess *t, const char *name, const char *format,
		     char *path, size_t n)
{
	fl_error err = {""};

	snprintf(path, n, "%s/%s", t->dir, name);
	if (fl_export_domain(t->s, 0, "S0_0", 3, 2, NULL, 0, path, format,
			     &err) < 0)
		fail_msg("%s", err.msg);
}

typedef struct t_counts {
	int points, diamonds, boxes;
	double x[3], y[3];	/* positions of p_0_0, p_32_0, p_0_1 */
	char colours[16][16];
	int n_colours;
} t_counts;

static void t_colour_seen(t_counts *c, const char *colour)
{
	for (int i = 0; i < c->n_colours; i++)
		if (!strcmp(c->colours[i], colour))
			return;
	if (c->n_colours < 16)
		snprintf(c->colours[c->n_colours++], sizeof c->colours[0], "%s",
			 colour);
}

/* Reads the .dot back: points (p_*), their shapes and colours, tile
 * boxes (tile*). */
static void t_count_dot(const char *path, t_counts *c, char **label)
{
	FILE *f = fopen(path, "r");
	Agraph_t *g;

	assert_non_null(f);
	g = agread(f, NULL);
	fclose(f);
	assert_non_null(g);
	memset(c, 0, sizeof *c);
	for (Agnode_t *n = agfstnode(g); n; n = agnxtnode(g, n)) {
		const char *name = agnameof(n);

		if (!strncmp(name, "tile", 4))
			c->boxes++;
		if (strncmp(name, "p_", 2))
			continue;
		c->points++;
		for (int i = 0; i < 3; i++)
			if (!strcmp(name, (const char *[]){"p_0_0", "p_32_0",
							   "p_0_1"}[i]))
				assert_int_equal(sscanf(agget(n, "pos"),
							"%lf,%lf", &c->x[i],
							&c->y[i]), 2);
		c->diamonds += !strcmp(agget(n, "shape"), "diamond");
		t_colour_seen(c, agget(n, "fillcolor"));
	}
	*label = strdup(agget(g, "label"));
	agclose(g);
}

/* The .dot has a node per instance of the 64 x 64 window, the model's
 * overlap as diamonds, a box per tile, two colours or more, the
 * title; neato -n2 renders it without a word. */
static void export_domain_dot(void **state)
{
	t_sess t;
	char path[128], cmd[320], *out, *label;
	fl_domain_window *win;
	t_counts c;

	(void)state;
	t_open(&t, 0);
	t_export(&t, "s00.dot", NULL, path, sizeof path);
	win = t_window(&t, FL_DOMAIN_DOT_MAX, FL_DOMAIN_DOT_MAX);
	t_count_dot(path, &c, &label);
	assert_int_equal(c.points, win->n_in);
	assert_true(win->n_overlap > 2 * 25);
	assert_int_equal(c.diamonds, win->n_overlap);
	assert_int_equal(c.boxes, win->n_tiles);
	assert_true(c.n_colours >= 2);
	/* Points 18 points apart, at their coordinates; rows go down. */
	assert_true(c.x[1] - c.x[0] > 32 * 18 - 0.1 &&
		    c.x[1] - c.x[0] < 32 * 18 + 0.1);
	assert_true(c.y[1] == c.y[0]);
	assert_true(c.y[0] - c.y[2] > 18 - 0.1 && c.y[0] - c.y[2] < 18 + 0.1);
	assert_true(c.x[2] == c.x[0]);
	assert_non_null(strstr(label, "kernel 0 ("));
	assert_non_null(strstr(label, "statement S0_0 of op "
				      "S0_quantize.scale_down"));
	/* The domain is 56 x 56: not cut. */
	assert_non_null(strstr(label, "columns i3 0..55, rows i2 0..55"));
	assert_null(strstr(label, "cut"));
	assert_non_null(strstr(label, "fixed i0=0 i1=0"));
	free(label);
	fl_domain_window_free(win);
	snprintf(cmd, sizeof cmd, "neato -n2 -Tsvg %s -o %s/again.svg", path,
		 t.dir);
	assert_int_equal(t_run(cmd, &out), 0);
	assert_string_equal(out, "");
	free(out);
	t_close(&t);
}

/* svg and png rendered in the program: their signatures, and the svg
 * draws the diamonds. */
static void export_domain_svg_png(void **state)
{
	t_sess t;
	char path[128], *buf;
	size_t n;

	(void)state;
	t_open(&t, 0);
	t_export(&t, "s00.svg", NULL, path, sizeof path);
	buf = t_read_file(path, &n);
	assert_true(n > 0);
	assert_non_null(strstr(buf, "<svg"));
	assert_non_null(strstr(buf, "S0_0[0, 0, 0, 32]: computed by 2 tiles"));
	assert_non_null(strstr(buf, "stroke-dasharray"));
	assert_true(n > 7 && !strcmp(buf + n - 7, "</svg>\n"));
	free(buf);
	t_export(&t, "picture", "png", path, sizeof path);
	buf = t_read_file(path, &n);
	assert_true(n > 0);
	assert_true(n > 8);
	assert_memory_equal(buf, "\x89PNG\r\n\x1a\n", 8);
	free(buf);
	t_close(&t);
}

/* A 4096 x 1024 softmax (its first statement over both dimensions):
 * the picture is cut to 64 x 64 points and the title says so; only the
 * window's points are nodes. */
static void export_domain_cut(void **state)
{
	fl_graph *g = t_load_sample("softmax");
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *s;
	char dir[] = "/tmp/fl_domXXXXXX", path[64], *label;
	const char *stmt = NULL;
	const fl_kernel *k;
	fl_domain *d;
	t_counts c;

	(void)state;
	fl_engine_opts_default(&o);
	o.stop_after = FL_PASS_LAYER1;
	s = fl_engine_open(g, &o, &err);
	if (!s || fl_engine_run(s, &err) < 0)
		fail_msg("%s", err.msg);
	k = &fl_engine_program(s)->kernels[0];
	d = fl_domain_new(k, &err);
	assert_non_null(d);
	for (int i = 0; !stmt && i < fl_domain_n_stmts(d); i++)
		if (fl_domain_stmt_at(d, i)->n_dims == 2 &&
		    fl_domain_stmt_at(d, i)->hi[1] == 1023)
			stmt = fl_domain_stmt_at(d, i)->name;
	assert_non_null(stmt);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/softmax.dot", dir);
	if (fl_export_domain(s, 0, stmt, -1, -1, NULL, 0, path, "dot",
			     &err) < 0)
		fail_msg("%s", err.msg);
	t_count_dot(path, &c, &label);
	assert_int_equal(c.points, 64 * 64);
	assert_non_null(strstr(label, "columns i1 0..63 of 0..1023, rows i0 "
				      "0..63 of 0..4095"));
	assert_non_null(strstr(label, "cut to the first 64 x 64 points"));
	free(label);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
	fl_domain_free(d);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* Asserts the export fails with a message containing expect. */
static void t_fails(const t_sess *t, int kernel, const char *stmt, int dx,
		    int dy, const long *fixed, int n_fixed, const char *path,
		    const char *format, const char *expect)
{
	fl_error err = {""};

	assert_int_equal(fl_export_domain(t->s, kernel, stmt, dx, dy, fixed,
					  n_fixed, path, format, &err), -1);
	if (!strstr(err.msg, expect))
		fail_msg("message \"%s\" lacks \"%s\"", err.msg, expect);
}

static void export_domain_errors(void **state)
{
	t_sess t;
	char path[128], missing[160];
	long fixed[2] = {0, 99};
	struct stat sb;

	(void)state;
	t_open(&t, 0);
	snprintf(path, sizeof path, "%s/x.dot", t.dir);
	t_fails(&t, 0, "S9_0", -1, -1, NULL, 0, path, NULL,
		"no statement \"S9_0\" in kernel 0; statements: S0_0 ");
	t_fails(&t, 99, "S0_0", -1, -1, NULL, 0, path, NULL, "no kernel 99");
	t_fails(&t, 0, "S0_0", 4, 2, NULL, 0, path, NULL,
		"dimensions i4 (columns) and i2 (rows): statement S0_0 has 4");
	t_fails(&t, 0, "S0_0", 2, 2, NULL, 0, path, NULL, "two distinct");
	t_fails(&t, 0, "S0_0", 3, 2, fixed, 1, path, NULL,
		"1 fixed values for statement S0_0");
	t_fails(&t, 0, "S0_0", 3, 2, fixed, 2, path, NULL,
		"fixed value i1=99 is outside");
	t_fails(&t, 0, "S0_0", 3, 2, NULL, 0, path, "jpeg", "format \"jpeg\"");
	assert_int_equal(stat(path, &sb), -1);
	snprintf(missing, sizeof missing, "%s/no/such/dir/x.svg", t.dir);
	t_fails(&t, 0, "S0_0", 3, 2, NULL, 0, missing, NULL, missing);
	assert_int_equal(rmdir(t.dir), 0);	/* nothing was left in it */
	assert_int_equal(mkdir(t.dir, 0700), 0);
	t_close(&t);
}

/* Before layer 1 there is no kernel to draw: said, nothing written. */
static void export_domain_before_layer1(void **state)
{
	fl_graph *g = t_load_sample("micro2020_fig1");
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *s;
	struct stat sb;

	(void)state;
	fl_engine_opts_default(&o);	/* stops after the partition */
	s = fl_engine_open(g, &o, &err);
	if (!s || fl_engine_run(s, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(fl_export_domain(s, 0, NULL, -1, -1, NULL, 0,
					  "/tmp/fl_dom_never.dot", NULL, &err),
			 -1);
	assert_string_equal(err.msg, "no kernels yet: layer 1 has not run");
	assert_int_equal(stat("/tmp/fl_dom_never.dot", &sb), -1);
	fl_engine_close(s);
	fl_graph_free(g);
}

FL_SUITE(export_domain,
	 cmocka_unit_test(export_domain_model_overlap),
	 cmocka_unit_test(export_domain_model_arguments),
	 cmocka_unit_test(export_domain_model_untiled),
	 cmocka_unit_test(export_domain_dot),
	 cmocka_unit_test(export_domain_svg_png),
	 cmocka_unit_test(export_domain_cut),
	 cmocka_unit_test(export_domain_errors),
	 cmocka_unit_test(export_domain_before_layer1));
