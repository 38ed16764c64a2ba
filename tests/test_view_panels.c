/* The explorer's panels: decisions, memory, parallel groups (and the
 * layer-3 analysis under it, engine/stitch), timings.  Each view is
 * rendered headless through the view fixture and read back as text and
 * looks; the parallel analysis is checked on a branchy sample, on a
 * chain and on hand-made costs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "view_fixture.h"
#include "stitch.h"

/* ---- parallel stitching analysis ------------------------------------- */

/* The unit of analysis a holds whose name starts with op name `op`
 * (after the "G12 (" or "fl_k3 (" prefix when there is one), -1. */
static int unit_named(const fl_par_analysis *a, const char *op)
{
	size_t n = strlen(op);

	for (int u = 0; u < a->n_units; u++) {
		const char *p = strchr(a->units[u].name, '(');

		p = p ? p + 1 : a->units[u].name;
		if (!strncmp(p, op, n) && (p[n] == ')' || p[n] == '.' ||
					   p[n] == '\0'))
			return u;
	}
	return -1;
}

static fl_par_analysis *analyze_at(t_view *f, const char *sample, int step)
{
	fl_error err = {""};
	fl_par_analysis *a;

	t_view_open(f, sample, step);
	a = fl_stitch_parallel_analyze(fl_engine_graph(f->s),
				       fl_engine_partition(f->s),
				       fl_engine_program(f->s), NULL, &err);
	if (!a)
		fail_msg("%s", err.msg);
	return a;
}

/* inception (3a) after layer 1: its four branches leave the input
 * together (a virtual head: x is no unit's output); the convolutions
 * are dropped as compute-bound, the pads and the pool are candidates,
 * and the first round stitches the three pads. */
static void view_panels_parallel_inception(void **state)
{
	t_view f;
	fl_par_analysis *a = analyze_at(&f, "inception_block", -1);
	const fl_par_set *s;
	int conv, pad2, pad3, pad4;

	(void)state;
	assert_int_equal(a->kind, FL_PAR_KERNELS);
	assert_true(a->n_sets >= 1);
	s = &a->sets[0];
	t_assert_contains(s->head, "virtual head");
	assert_int_equal(s->n_branches, 4);
	conv = unit_named(a, "b2_3x3_conv");
	pad2 = unit_named(a, "b2_pad");
	pad3 = unit_named(a, "b3_pad");
	pad4 = unit_named(a, "b4_pad");
	assert_true(conv >= 0 && pad2 >= 0 && pad3 >= 0 && pad4 >= 0);
	assert_true(a->units[conv].compute_bound);
	assert_false(a->units[pad2].compute_bound);
	assert_int_equal(a->units[conv].branch_set, 0);
	assert_true(a->units[pad2].cost > a->machine.launch);
	/* bytes: pad b3 reads 16x28x28 and writes 16x32x32 floats */
	assert_int_equal(a->units[pad3].bytes, 4 * (16 * 28 * 28 +
						    16 * 32 * 32));
	/* round 0: one pad per branch that has one, cost descending:
	 * b4 (192 channels) before b2 (96) before b3 (16) */
	assert_true(s->n_rounds >= 1);
	assert_int_equal(s->rounds[0].n, 3);
	assert_int_equal(s->rounds[0].cand[0], pad4);
	assert_int_equal(s->rounds[0].cand[1], pad2);
	assert_int_equal(s->rounds[0].cand[2], pad3);
	assert_true(s->rounds[0].n_tries >= 1);
	assert_true(a->n_groups >= 1);
	assert_true(a->total_gain > 0);
	for (int r = 0; r < s->n_rounds; r++)
		for (int i = 0; i < s->rounds[r].n_tries; i++) {
			const fl_par_try *t = &s->rounds[r].tries[i];

			assert_true(t->accepted == (t->gain > 0));
			assert_true(t->sum >= t->max);
		}
	fl_par_analysis_free(a);
	t_view_close(&f);
}

/* A chain has no branch set: nothing runs beside anything. */
static void view_panels_parallel_chain(void **state)
{
	t_view f;
	fl_par_analysis *a = analyze_at(&f, "chain8", 0);

	(void)state;
	assert_int_equal(a->kind, FL_PAR_OPS);
	assert_int_equal(a->n_units, 8);
	assert_int_equal(a->n_sets, 0);
	assert_int_equal(a->n_groups, 0);
	fl_par_analysis_free(a);
	t_view_close(&f);
}

/* The gain arithmetic on hand-made numbers (launch 5 us, 8 cores). */
static void view_panels_parallel_gain(void **state)
{
	fl_roofline m;
	double together;
	/* two small units, 2 cores each: they fit the machine, so the
	 * gain is APOLLO's sum - max (with one launch saved) */
	double cost2[] = {15e-6, 10e-6}, roof2[] = {10e-6, 5e-6};
	int cores2[] = {2, 2};
	/* three that fill the machine each: they share it, so running
	 * them together saves only the launches */
	double cost3[] = {105e-6, 105e-6, 105e-6};
	double roof3[] = {100e-6, 100e-6, 100e-6};
	int cores3[] = {8, 8, 8};
	double g;

	(void)state;
	fl_roofline_default(&m);
	g = fl_par_gain(&m, cost2, roof2, cores2, 2, &together);
	assert_float_equal(together, 15e-6, 1e-12);
	assert_float_equal(g, 25e-6 - 15e-6, 1e-12);
	g = fl_par_gain(&m, cost3, roof3, cores3, 3, &together);
	assert_float_equal(together, 5e-6 + 300e-6, 1e-12);
	assert_float_equal(g, 10e-6, 1e-12);
	/* no launch to save: sharing the machine gains nothing */
	m.launch = 0;
	double cost4[] = {100e-6, 100e-6};
	g = fl_par_gain(&m, cost4, roof3, cores3, 2, NULL);
	assert_float_equal(g, 0, 1e-12);
}

FL_SUITE(view_panels,
	 cmocka_unit_test(view_panels_parallel_inception),
	 cmocka_unit_test(view_panels_parallel_chain),
	 cmocka_unit_test(view_panels_parallel_gain));
