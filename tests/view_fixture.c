/* The view test fixture (see view_fixture.h). */
#include "view_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "machine.h"
#include "test_util.h"

/* The machine the views' sessions size tiles for, whatever runs the
 * tests: 2 Zen 3 cores (tile sizes follow the machine, and the views'
 * texts follow the tile sizes). */
static const fl_machine view_machine = {
	.cores = 2, .l1d = 32 * 1024, .l2 = 512 * 1024,
	.l3 = 32 * 1024 * 1024, .vector_bits = 256, .fma = true,
	.isa = "avx2+fma", .model = "test machine",
};

static void view_open(t_view *f, const char *sample, int step, int tile,
		      fl_strategy strategy, int64_t stitch_capacity)
{
	fl_engine_opts o;
	fl_error err = {""};

	memset(f, 0, sizeof *f);
	f->g = t_load_sample(sample);
	fl_engine_opts_default(&o);
	o.strategy = strategy;
	o.stop_after = FL_PASS_CODEGEN;
	o.layer1.machine = &view_machine;
	o.stitch_capacity = stitch_capacity;
	if (tile > 0) {
		o.layer1.n_tile = 2;
		o.layer1.tile[0] = o.layer1.tile[1] = tile;
	}
	f->s = fl_engine_open(f->g, &o, &err);
	if (!f->s)
		fail_msg("%s", err.msg);
	f->sel.op = f->sel.kernel = f->sel.event = -1;
	f->grid = fl_grid_new(0, 0);
	assert_non_null(f->grid);
	t_view_goto(f, step);
}

void t_view_open(t_view *f, const char *sample, int step)
{
	view_open(f, sample, step, 0, FL_STRATEGY_APOLLO_L1, 0);
}

void t_view_open_tiles(t_view *f, const char *sample, int step, int tile)
{
	view_open(f, sample, step, tile, FL_STRATEGY_APOLLO_L1, 0);
}

void t_view_open_strategy(t_view *f, const char *sample, int step,
			  fl_strategy strategy)
{
	view_open(f, sample, step, 0, strategy, 0);
}

void t_view_open_capacity(t_view *f, const char *sample, int step,
			  fl_strategy strategy, int64_t stitch_capacity)
{
	view_open(f, sample, step, 0, strategy, stitch_capacity);
}

void t_view_goto(t_view *f, int step)
{
	fl_error err = {""};
	int r = step < 0 ? fl_engine_run(f->s, &err)
			 : fl_engine_goto(f->s, step, &err);

	if (r < 0)
		fail_msg("%s", err.msg);
	t_view_refresh(f);
}

void t_view_refresh(t_view *f)
{
	const fl_graph *g = fl_engine_graph(f->s);
	const fl_event_log *log = fl_engine_events(f->s);
	int step = fl_engine_position(f->s);

	free(f->hl);
	f->hl = calloc((size_t)g->n_ops + 1, sizeof *f->hl);
	assert_non_null(f->hl);
	memset(&f->ctx, 0, sizeof f->ctx);
	f->ctx.s = f->s;
	f->ctx.sel = &f->sel;
	f->ctx.step = step;
	f->ctx.total = fl_engine_total(f->s, NULL);
	f->ctx.current = step > 0 ? fl_event_log_get(log, step - 1) : NULL;
	f->ctx.focused = true;
	if (f->ctx.current) {
		for (int i = 0; i < f->ctx.current->n_ops; i++) {
			int op = fl_graph_find_op(g, f->ctx.current->ops[i]);

			if (op >= 0)
				f->hl[op] = true;
		}
		f->ctx.highlighted = f->hl;
	}
}

char *t_view_render(t_view *f, const fl_view_class *vc, void *st, int w,
		    int h)
{
	char *text;

	assert_int_equal(fl_grid_resize(f->grid, w, h), 0);
	vc->render(st, &f->ctx, f->grid);
	text = fl_grid_dump(f->grid);
	assert_non_null(text);
	return text;
}

int t_view_op(const t_view *f, const char *name)
{
	int op = fl_graph_find_op(fl_engine_graph(f->s), name);

	if (op < 0)
		fail_msg("no op %s", name);
	return op;
}

void t_view_close(t_view *f)
{
	fl_engine_close(f->s);
	fl_graph_free(f->g);
	fl_grid_free(f->grid);
	free(f->hl);
	memset(f, 0, sizeof *f);
}

int t_step_before_codegen(const t_view *f)
{
	const fl_event_log *log = fl_engine_events(f->s);

	for (int i = 0; i < fl_event_log_count(log); i++)
		if (fl_event_log_get(log, i)->pass == FL_PASS_CODEGEN)
			return fl_event_log_get(log, i)->seq;
	return fl_event_log_count(log);
}
