/* The schedule tree, domain and code views (views/view_schedule.c,
 * view_domain.c, view_code.c) rendered headless on the paper samples:
 * what each shows, how its keys change what it shows, the explanation
 * before layer 1, and every grid size from 1x1 to 300x100. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_util.h"
#include "view_fixture.h"

/* MICRO 2020 Fig. 1 as these tests draw it: 32 x 32 tiles of all 64
 * channels (34 x 34 inputs with the halo).  The sizes the machine would
 * pick are tested in test_tiles.c. */
#define FIG1_TILE 32

/* ---- helpers -------------------------------------------------------- */

static void *t_create(const fl_view_class *vc)
{
	void *st = vc->create();

	assert_non_null(st);
	return st;
}

/* Sends key to the view; asserts it was the view's. */
static void t_key(t_view *f, const fl_view_class *vc, void *st, int key)
{
	fl_view_action act;

	memset(&act, 0, sizeof act);
	assert_int_equal(vc->key(st, &f->ctx, key, &act), 1);
}

/* Renders and checks that text occurs (frees the dump). */
static void t_render_has(t_view *f, const fl_view_class *vc, void *st, int w,
			 int h, const char *needle)
{
	char *text = t_view_render(f, vc, st, w, h);

	t_assert_contains(text, needle);
	free(text);
}

/* Every view renders into tiny and huge grids, and explains itself before
 * layer 1 ran. */
static void t_sizes_and_empty(const fl_view_class *vc)
{
	static const int sizes[][2] = {
		{1, 1}, {2, 1}, {1, 5}, {10, 3}, {40, 8}, {80, 24},
		{99, 30}, {100, 30}, {300, 100},
	};
	t_view f;
	void *st;
	char *text;

	t_view_open_tiles(&f, "micro2020_fig1", 0, FIG1_TILE);
	st = t_create(vc);
	text = t_view_render(&f, vc, st, 100, 24);
	t_assert_contains(text, "no kernels yet: layer 1 has not run");
	free(text);
	t_view_goto(&f, -1);
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		free(t_view_render(&f, vc, st, sizes[i][0], sizes[i][1]));
	vc->destroy(st);
	t_view_close(&f);
}

/* ---- code ------------------------------------------------------------ */

static void view_sched_code_sizes(void **state)
{
	(void)state;
	t_sizes_and_empty(&fl_view_code);
}

/* Line numbers on the left, the kernel's C, scrolling by line and page. */
static void view_sched_code_scrolls(void **state)
{
	t_view f;
	void *st;
	char *text, row[256];

	(void)state;
	t_view_open_tiles(&f, "micro2020_fig1", -1, FIG1_TILE);
	st = t_create(&fl_view_code);
	text = t_view_render(&f, &fl_view_code, st, 80, 24);
	t_assert_contains(text, "code of kernel 0: lines 1-23");
	t_assert_contains(text, " 1 /* fl_k0");
	t_assert_contains(text, "void fl_k0(float *const *bufs)");
	free(text);
	t_key(&f, &fl_view_code, st, 'j');
	text = t_view_render(&f, &fl_view_code, st, 80, 24);
	fl_grid_row(f.grid, 1, row, sizeof row);
	assert_non_null(strstr(row, " 2 "));
	free(text);
	t_key(&f, &fl_view_code, st, FL_KEY_PGDN);
	t_render_has(&f, &fl_view_code, st, 80, 24, "lines 25-47");
	t_key(&f, &fl_view_code, st, FL_KEY_END);
	text = t_view_render(&f, &fl_view_code, st, 80, 24);
	{
		int a, b, n;

		assert_int_equal(sscanf(text, "code of kernel 0: lines %d-%d "
					"of %d", &a, &b, &n), 3);
		assert_int_equal(b, n);
		assert_int_equal(a, n - 22);
	}
	free(text);
	/* Sideways: the first 8 columns of a line go out of view. */
	t_key(&f, &fl_view_code, st, FL_KEY_HOME);
	t_key(&f, &fl_view_code, st, 'l');
	text = t_view_render(&f, &fl_view_code, st, 80, 24);
	t_assert_contains(text, "(scrolled right)");
	assert_null(strstr(text, "void fl_k0("));
	t_assert_contains(text, " k0(float *const *bufs)");
	free(text);
	assert_int_equal(fl_view_code.key(st, &f.ctx, 'q', &(fl_view_action){0}),
			 0);
	fl_view_code.destroy(st);
	t_view_close(&f);
}


/* ---- schedule tree ------------------------------------------------- */

/* Moves the view's cursor down until a row with `text` is the cursor's;
 * fails after 60 moves. */
static void t_sched_goto(t_view *f, void *st, int w, int h, const char *text)
{
	for (int i = 0; i < 60; i++) {
		free(t_view_render(f, &fl_view_schedule, st, w, h));
		if (fl_grid_find_look(f->grid, text, FL_LOOK_CURSOR))
			return;
		t_key(f, &fl_view_schedule, st, 'j');
	}
	fail_msg("no node \"%s\" under the cursor", text);
}

static void view_sched_schedule_sizes(void **state)
{
	(void)state;
	t_sizes_and_empty(&fl_view_schedule);
}

/* MICRO 2020 Fig. 1: the tiled conv with the quantize grafted under its
 * tile band by an extension node; bands show their flags. */
static void view_sched_schedule_extension(void **state)
{
	t_view f;
	void *st;
	char *text;

	(void)state;
	t_view_open_tiles(&f, "micro2020_fig1", -1, FIG1_TILE);
	st = t_create(&fl_view_schedule);
	text = t_view_render(&f, &fl_view_schedule, st, 90, 40);
	t_assert_contains(text, "schedule tree of kernel 0 (fl_k0)");
	t_assert_contains(text, "extension { [0, i1, i2] -> S");
	t_assert_contains(text, "domain { S3_1[0, i1");
	t_assert_contains(text, "band permutable, coincident [1 1 1], "
				"tiles 64x32x32: [{");
	t_assert_contains(text, "mark \"parallel\"");
	t_assert_contains(text, "filter { S0_0_r0[");
	t_assert_contains(text, "leaf: S4_0");
	/* Rows are cut at the width with an ellipsis... */
	t_assert_contains(text, "\u2026");
	free(text);
	/* ... and the node under the cursor is whole at the bottom. */
	t_sched_goto(&f, st, 90, 40, "extension {");
	text = t_view_render(&f, &fl_view_schedule, st, 90, 40);
	/* isl's order of the domain's statements, then the copies. */
	t_assert_contains(text, "[extension, depth 3, statements S3_1 S3_0 "
				"S4_0 S1_0_r0 S0_0_r0 S2_0_r0 ]");
	t_assert_contains(text, "o6 <= 33 + 32i2");
	free(text);
	fl_view_schedule.destroy(st);
	t_view_close(&f);
}

/* Enter folds the node under the cursor; c and C fold and unfold all. */
static void view_sched_schedule_collapse(void **state)
{
	t_view f;
	void *st;
	char *text;

	(void)state;
	t_view_open_tiles(&f, "micro2020_fig1", -1, FIG1_TILE);
	st = t_create(&fl_view_schedule);
	t_sched_goto(&f, st, 90, 40, "extension {");
	text = t_view_render(&f, &fl_view_schedule, st, 90, 40);
	t_assert_contains(text, "sequence (2 children)");
	free(text);
	t_key(&f, &fl_view_schedule, st, FL_KEY_ENTER);
	text = t_view_render(&f, &fl_view_schedule, st, 90, 40);
	assert_null(strstr(text, "sequence (2 children)"));
	assert_null(strstr(text, "filter { S0_0_r0["));
	t_assert_contains(text, "extension {");
	free(text);
	t_key(&f, &fl_view_schedule, st, FL_KEY_ENTER);
	t_render_has(&f, &fl_view_schedule, st, 90, 40, "filter { S0_0_r0[");
	/* Everything folded: the root and its one child (the mark). */
	t_key(&f, &fl_view_schedule, st, 'c');
	text = t_view_render(&f, &fl_view_schedule, st, 90, 40);
	t_assert_contains(text, "mark \"parallel\"");
	assert_null(strstr(text, "band "));
	free(text);
	t_key(&f, &fl_view_schedule, st, 'C');
	t_render_has(&f, &fl_view_schedule, st, 90, 40, "leaf: S4_0");
	fl_view_schedule.destroy(st);
	t_view_close(&f);
}

/* On a wide grid the kernel's C sits beside the tree, with the lines of
 * the node under the cursor highlighted: a filter's statements with
 * their loops, a band's own loops only. */
static void view_sched_schedule_code_pane(void **state)
{
	t_view f;
	void *st;
	char *text;

	(void)state;
	t_view_open_tiles(&f, "micro2020_fig1", -1, FIG1_TILE);
	st = t_create(&fl_view_schedule);
	t_sched_goto(&f, st, 300, 60, "filter { S0_0_r0[");
	text = t_view_render(&f, &fl_view_schedule, st, 300, 60);
	t_assert_contains(text, "code: 8 lines of this filter");
	free(text);
	/* the recomputed statement's band is coincident: simd inside */
	assert_true(fl_grid_find_look(f.grid, "#pragma omp simd",
				      FL_LOOK_HIGHLIGHT));
	assert_true(fl_grid_find_look(f.grid, "/* S0_0_r0: mul compute */",
				      FL_LOOK_HIGHLIGHT));
	assert_true(fl_grid_find_look(f.grid, "for (int c6 = 32 * c2;",
				      FL_LOOK_HIGHLIGHT));
	assert_true(fl_grid_find_look(f.grid, "for (int c1 = 0;",
				      FL_LOOK_HIGHLIGHT));
	/* the 2 x 2 tile loops are work-shared together (collapse) */
	assert_true(fl_grid_find_look(f.grid, "#pragma omp for collapse(2)",
				      FL_LOOK_HIGHLIGHT));
	assert_false(fl_grid_find_look(f.grid, "/* S1_0_r0: round",
				       FL_LOOK_HIGHLIGHT));
	assert_true(fl_grid_find_look(f.grid, "/* S1_0_r0: round",
				      FL_LOOK_NORMAL));
	/* The tile band: the tile loops c1 c2 (c0 has one iteration). */
	t_key(&f, &fl_view_schedule, st, FL_KEY_HOME);
	t_sched_goto(&f, st, 300, 60, "band permutable, coincident [1 1 1], "
				      "tiles");
	text = t_view_render(&f, &fl_view_schedule, st, 300, 60);
	t_assert_contains(text, "code: 3 lines of this band");
	free(text);
	assert_true(fl_grid_find_look(f.grid, "for (int c2 = 0; c2 <= 1;",
				      FL_LOOK_HIGHLIGHT));
	assert_false(fl_grid_find_look(f.grid, "for (int c4",
				       FL_LOOK_HIGHLIGHT));
	fl_view_schedule.destroy(st);
	t_view_close(&f);
}

/* ---- domain ---------------------------------------------------------- */

/* Cells of the grid's rows [y0, y1) with character ch and look r. */
static int t_count(const fl_grid *g, int y0, int y1, uint32_t ch, fl_look r)
{
	int n = 0;

	for (int y = y0; y < y1 && y < g->h; y++)
		for (int x = 0; x < g->w; x++) {
			const fl_cell *c = fl_grid_cell(g, x, y);

			n += c->ch == ch && c->look == r;
		}
	return n;
}

/* Distinct tile-colour looks among the points of rows [y0, y1). */
static int t_group_looks(const fl_grid *g, int y0, int y1)
{
	bool seen[FL_LOOK_GROUPS] = {false};
	int n = 0;

	for (int y = y0; y < y1 && y < g->h; y++)
		for (int x = 0; x < g->w; x++) {
			const fl_cell *c = fl_grid_cell(g, x, y);

			if (c->ch == FL_CH_BULLET && c->look >= FL_LOOK_GROUP0 &&
			    !seen[c->look - FL_LOOK_GROUP0]) {
				seen[c->look - FL_LOOK_GROUP0] = true;
				n++;
			}
		}
	return n;
}

static void view_sched_domain_sizes(void **state)
{
	(void)state;
	t_sizes_and_empty(&fl_view_domain);
}

/* MICRO 2020 Fig. 1: the quantize runs as copies in each 32 x 32 conv
 * tile, and the two columns it shares between tiles (the conv's halo)
 * are computed twice: the overlap. */
static void view_sched_domain_overlap(void **state)
{
	t_view f;
	void *st;
	char *text;

	(void)state;
	t_view_open_tiles(&f, "micro2020_fig1", -1, FIG1_TILE);
	st = t_create(&fl_view_domain);
	text = t_view_render(&f, &fl_view_domain, st, 100, 30);
	t_assert_contains(text, "S0_0 1/6: rows i2 cols i3; fixed [i0=0] i1=0; "
				"op S0_quantize.scale_down, kernel 0");
	t_assert_contains(text, "computed by 2+ tiles");
	/* Points in two tile colours, split by a boundary line, and the
	 * overlapped columns 32 and 33 marked. */
	assert_true(t_group_looks(f.grid, 1, 26) >= 2);
	assert_true(t_count(f.grid, 1, 26, FL_CH_VLINE, FL_LOOK_EDGE) > 0);
	assert_int_equal(t_count(f.grid, 1, 26, 0x25C6, FL_LOOK_WARN), 2 * 25);
	free(text);
	/* The cursor on an overlapped point says so. */
	for (int i = 0; i < 32; i++)
		t_key(&f, &fl_view_domain, st, 'l');
	t_render_has(&f, &fl_view_domain, st, 100, 30,
		     "cursor S0_0[0, 0, 0, 32]: computed by 2 tiles (first "
		     "(0,0,0)): overlap");
	/* Rows 32 and 33 are shared too; below them a line closes the
	 * first row of tiles. */
	t_key(&f, &fl_view_domain, st, 'J');
	t_render_has(&f, &fl_view_domain, st, 100, 30,
		     "cursor S0_0[0, 0, 25, 32]");
	t_key(&f, &fl_view_domain, st, 'J');
	text = t_view_render(&f, &fl_view_domain, st, 100, 30);
	t_assert_contains(text, "   33 ◆ ◆ ◆");
	free(text);
	assert_true(t_count(f.grid, 1, 26, FL_CH_HLINE, FL_LOOK_EDGE) > 0);
	fl_view_domain.destroy(st);
	t_view_close(&f);
}

/* The conv's update S3_1 at its first point: its sources are the
 * init of the same output element and the quantized input it reads;
 * its sink is the next update of that element, drawn in the window. */
static void view_sched_domain_dependences(void **state)
{
	t_view f;
	void *st;
	char *text;

	(void)state;
	t_view_open_tiles(&f, "micro2020_fig1", -1, FIG1_TILE);
	st = t_create(&fl_view_domain);
	free(t_view_render(&f, &fl_view_domain, st, 80, 24));
	for (int i = 0; i < 4; i++)
		t_key(&f, &fl_view_domain, st, ']');
	text = t_view_render(&f, &fl_view_domain, st, 80, 24);
	t_assert_contains(text, "S3_1 5/6: rows i5 cols i6; fixed [i0=0] i1=0 "
				"i2=0 i3=0 i4=0; op S1_S2_conv");
	t_assert_contains(text, "cursor S3_1[0, 0, 0, 0, 0, 0, 0]: tile (0,0,0)");
	t_assert_contains(text, "sources (2): S2_0[0, 0, 0, 0], S3_0[0, 0, 0, 0]");
	t_assert_contains(text, "sinks (1): S3_1[0, 0, 0, 0, 0, 0, 1]");
	free(text);
	assert_int_equal(t_count(f.grid, 1, 20, FL_CH_ARROW_R, FL_LOOK_MARK), 1);
	/* One step right: the previous update is now its source. */
	t_key(&f, &fl_view_domain, st, 'l');
	text = t_view_render(&f, &fl_view_domain, st, 80, 24);
	t_assert_contains(text, "sources (2): S2_0[0, 0, 0, 1], "
				"S3_1[0, 0, 0, 0, 0, 0, 0]");
	free(text);
	assert_int_equal(t_count(f.grid, 1, 20, FL_CH_ARROW_L, FL_LOOK_MARK), 1);
	assert_int_equal(t_count(f.grid, 1, 20, FL_CH_ARROW_R, FL_LOOK_MARK), 1);
	fl_view_domain.destroy(st);
	t_view_close(&f);
}

/* d, { } and < > choose what is shown; [ ] the statement; y numbers the
 * points in execution order: within a conv tile, row after row. */
static void view_sched_domain_keys(void **state)
{
	t_view f;
	void *st;
	char *text, row[512];

	(void)state;
	t_view_open_tiles(&f, "micro2020_fig1", -1, FIG1_TILE);
	st = t_create(&fl_view_domain);
	free(t_view_render(&f, &fl_view_domain, st, 80, 24));
	t_key(&f, &fl_view_domain, st, 'd');
	t_render_has(&f, &fl_view_domain, st, 80, 24,
		     "rows i0 cols i1; fixed [i2=0] i3=0");
	t_key(&f, &fl_view_domain, st, '}');
	t_key(&f, &fl_view_domain, st, '>');
	t_key(&f, &fl_view_domain, st, '>');
	t_render_has(&f, &fl_view_domain, st, 80, 24,
		     "rows i0 cols i1; fixed i2=0 [i3=2]");
	t_key(&f, &fl_view_domain, st, '<');
	t_render_has(&f, &fl_view_domain, st, 80, 24, "[i3=1]");
	t_key(&f, &fl_view_domain, st, '[');
	t_render_has(&f, &fl_view_domain, st, 80, 24,
		     "S4_0 6/6: rows i2 cols i3");
	/* Back to the quantize; execution order of its first rows. */
	t_key(&f, &fl_view_domain, st, ']');
	t_key(&f, &fl_view_domain, st, 'y');
	text = t_view_render(&f, &fl_view_domain, st, 80, 24);
	t_assert_contains(text, "runs 1st in the window");
	fl_grid_row(f.grid, 1, row, sizeof row);
	t_assert_contains(row, "    0    1    2    3");
	fl_grid_row(f.grid, 2, row, sizeof row);
	t_assert_contains(row, "    1   15   16   17");
	free(text);
	/* Paging right reaches the second tile column. */
	t_key(&f, &fl_view_domain, st, 'y');
	free(t_view_render(&f, &fl_view_domain, st, 80, 24));
	t_key(&f, &fl_view_domain, st, 'L');
	t_key(&f, &fl_view_domain, st, 'L');
	t_render_has(&f, &fl_view_domain, st, 80, 24, "tile (0,0,1)");
	t_key(&f, &fl_view_domain, st, FL_KEY_END);
	t_render_has(&f, &fl_view_domain, st, 80, 24,
		     "cursor S0_0[0, 0, 55, 55]: tile (0,1,1)");
	fl_view_domain.destroy(st);
	t_view_close(&f);
}

/* After layer 1, before codegen made the kernel's C: the tree is there,
 * the code is not, and both views say so. */
static void view_sched_before_codegen(void **state)
{
	t_view f;
	void *sched, *code;
	int total;

	(void)state;
	t_view_open_tiles(&f, "micro2020_fig1", -1, FIG1_TILE);
	total = t_step_before_codegen(&f);
	t_view_goto(&f, total);
	assert_non_null(fl_engine_program(f.s));
	assert_null(fl_engine_kernel_source(f.s, 0));
	sched = t_create(&fl_view_schedule);
	code = t_create(&fl_view_code);
	t_render_has(&f, &fl_view_schedule, sched, 120, 30, "extension {");
	t_render_has(&f, &fl_view_schedule, sched, 120, 30,
		     "no code yet: codegen has not generated this kernel");
	t_render_has(&f, &fl_view_code, code, 120, 30,
		     "no code yet for kernel 0: codegen has not generated it");
	fl_view_schedule.destroy(sched);
	fl_view_code.destroy(code);
	t_view_close(&f);
}

/* One view state across steps and across two sessions of the same graph
 * (the explorer's compare mode): the caches follow the session and the
 * step they draw, never mixing one session's isl objects with
 * another's. */
static void view_sched_caches_follow_session(void **state)
{
	const fl_view_class *const views[] = {
		&fl_view_schedule, &fl_view_domain, &fl_view_code,
	};
	t_view a, b;

	(void)state;
	t_view_open_tiles(&a, "micro2020_fig1", -1, FIG1_TILE);
	t_view_open_tiles(&b, "micro2020_fig1", -1, FIG1_TILE);
	for (size_t v = 0; v < sizeof views / sizeof views[0]; v++) {
		void *st = t_create(views[v]);

		t_render_has(&a, views[v], st, 100, 30, "kernel 0");
		t_key(&a, views[v], st, 'j');
		t_render_has(&b, views[v], st, 100, 30, "kernel 0");
		t_view_goto(&a, 0);
		t_render_has(&a, views[v], st, 100, 30, "no kernels yet");
		t_view_goto(&a, -1);
		t_render_has(&a, views[v], st, 100, 30, "kernel 0");
		t_render_has(&b, views[v], st, 100, 30, "kernel 0");
		views[v]->destroy(st);
	}
	t_view_close(&a);
	t_view_close(&b);
}

/* ---- every kernel of the samples ------------------------------------ */

/* Each view on each kernel of a sample, at 80x24 and 300x100, before and
 * after its keys: it names the kernel and never crashes. */
static void t_sweep_sample(const char *sample)
{
	static const fl_view_class *const views[] = {
		&fl_view_schedule, &fl_view_domain, &fl_view_code,
	};
	static const int keys[] = {
		'j', 'l', FL_KEY_ENTER, 'c', 'C', 'd', '}', '>', ']', 'y',
		'L', 'J', FL_KEY_END, FL_KEY_PGDN, FL_KEY_HOME,
	};
	const fl_program *p;
	t_view f;

	t_view_open(&f, sample, -1);
	p = fl_engine_program(f.s);
	assert_non_null(p);
	for (int k = 0; k < p->n_kernels; k++) {
		char want[64];

		f.sel.kernel = k;
		snprintf(want, sizeof want, "kernel %d", k);
		for (size_t v = 0; v < sizeof views / sizeof views[0]; v++) {
			void *st = t_create(views[v]);

			t_render_has(&f, views[v], st, 120, 24, want);
			for (size_t i = 0; i < sizeof keys / sizeof keys[0];
			     i++) {
				fl_view_action act = {0};

				views[v]->key(st, &f.ctx, keys[i], &act);
				assert_int_equal(act.kind, FL_VIEW_ACT_NONE);
			}
			t_render_has(&f, views[v], st, 300, 100, want);
			views[v]->destroy(st);
		}
	}
	t_view_close(&f);
}

static void view_sched_sweep_samples(void **state)
{
	static const char *const samples[] = {
		"micro2020_fig1", "apollo_listing1", "harris_corner",
		"unsharp_mask", "softmax", "layernorm", "bert_encoder",
		"inception_block", "resnet50_bottleneck",
	};
	size_t n = T_SANITIZED ? 3 : sizeof samples / sizeof samples[0];

	(void)state;
	for (size_t i = 0; i < n; i++)
		t_sweep_sample(samples[i]);
}

FL_SUITE(view_sched,
	cmocka_unit_test(view_sched_code_sizes),
	cmocka_unit_test(view_sched_code_scrolls),
	cmocka_unit_test(view_sched_schedule_sizes),
	cmocka_unit_test(view_sched_schedule_extension),
	cmocka_unit_test(view_sched_schedule_collapse),
	cmocka_unit_test(view_sched_schedule_code_pane),
	cmocka_unit_test(view_sched_domain_sizes),
	cmocka_unit_test(view_sched_domain_overlap),
	cmocka_unit_test(view_sched_domain_dependences),
	cmocka_unit_test(view_sched_domain_keys),
	cmocka_unit_test(view_sched_before_codegen),
	cmocka_unit_test(view_sched_caches_follow_session),
	cmocka_unit_test(view_sched_sweep_samples),
);
