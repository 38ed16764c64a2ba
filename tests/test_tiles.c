/* Tile sizes from the machine (engine/layer1/tile_sizes.c) and the
 * machine description itself (engine/machine.c).
 *
 * Layer 1 runs on made-up machines (fl_layer1_opts.machine), so that the
 * sizes do not depend on the host: more cores give more tiles, at least
 * 4 per thread where the extents allow; memory-bound kernels get whole
 * rows; the matmuls of the model blocks get output tiles for a
 * register-blocked micro-kernel and enough of them for every thread;
 * --tile still wins; the "tiled" event and the kernel say the numbers.
 * The machine the tests run on is read for real: sane values, and a text
 * naming its ISA and cores. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "machine.h"
#include "test_util.h"
#include "view_fixture.h"

#define HEAD "{\"format\":\"fuselab-graph/1\",\"name\":\"t\",\"tensors\":{"

/* Zen 3 per-core caches, with `cores` cores. */
static fl_machine machine_of(int cores)
{
	fl_machine m = {
		.cores = cores, .l1d = 32 * 1024, .l2 = 512 * 1024,
		.l3 = 32 * 1024 * 1024, .vector_bits = 256, .fma = true,
		.isa = "avx2+fma", .model = "made-up machine",
	};

	return m;
}

static fl_session *open_at_layer1(const fl_graph *g, const fl_machine *m,
				  const fl_engine_opts *base)
{
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *s;

	if (base)
		o = *base;
	else
		fl_engine_opts_default(&o);
	o.stop_after = FL_PASS_LAYER1;
	o.strategy = FL_STRATEGY_APOLLO_L1;
	o.layer1.machine = m;
	s = fl_engine_open(g, &o, &err);
	if (!s)
		fail_msg("open: %s", err.msg);
	if (fl_engine_run(s, &err) < 0)
		fail_msg("run: %s", err.msg);
	return s;
}

/* The "tiled" event of kernel `name` ("fl_k0"), NULL when none. */
static const fl_event *tiled_event(const fl_session *s, const char *name)
{
	const fl_event_log *log = fl_engine_events(s);
	char prefix[40];

	snprintf(prefix, sizeof prefix, "%s: tiled", name);
	for (int i = 0; i < fl_event_log_count(log); i++) {
		const fl_event *e = fl_event_log_get(log, i);

		if (e->kind == FL_EV_TILED && !strncmp(e->reason, prefix,
						       strlen(prefix)))
			return e;
	}
	return NULL;
}

/* x -> exp -> relu -> y on [rows, cols]: one memory-bound kernel. */
static char *chain_json(int rows, int cols)
{
	char *j = malloc(1024);

	assert_non_null(j);
	snprintf(j, 1024, HEAD
		 "\"x\":{\"shape\":[%d,%d],\"role\":\"input\"},"
		 "\"y\":{\"shape\":[%d,%d],\"role\":\"output\"}},\"ops\":["
		 "{\"name\":\"e\",\"op\":\"exp\",\"in\":[\"x\"],\"out\":\"t\"},"
		 "{\"name\":\"r\",\"op\":\"relu\",\"in\":[\"t\"],\"out\":\"y\"}]}",
		 rows, cols, rows, cols);
	return j;
}

static const fl_kernel *only_kernel(const fl_session *s)
{
	const fl_program *p = fl_engine_program(s);

	assert_non_null(p);
	assert_int_equal(p->n_kernels, 1);
	return &p->kernels[0];
}

static double tiles_of(const fl_kernel *k, const int64_t *ext)
{
	double n = 1;

	for (int d = 0; d < k->n_tile; d++)
		n *= (double)((ext[d] + k->tile[d] - 1) / k->tile[d]);
	return n;
}

/* ---- memory-bound kernels ------------------------------------------------ */

/* 2 cores vs 64: the counts differ and each reaches 4 tiles per thread;
 * both keep whole rows (the extents allow it). */
static void test_tiles_follow_cores(void **state)
{
	char *json = chain_json(512, 1024);
	fl_graph *g = t_load(json);
	fl_machine two = machine_of(2), many = machine_of(64);
	fl_session *a = open_at_layer1(g, &two, NULL);
	fl_session *b = open_at_layer1(g, &many, NULL);
	const fl_kernel *ka = only_kernel(a), *kb = only_kernel(b);
	const int64_t ext[2] = {512, 1024};

	(void)state;
	assert_int_equal(ka->n_tile, 2);
	assert_int_equal(kb->n_tile, 2);
	assert_true(ka->n_tiles >= 4 * 2);
	assert_true(kb->n_tiles >= 4 * 64);
	assert_true(kb->n_tiles > ka->n_tiles);
	assert_true(tiles_of(ka, ext) == ka->n_tiles);
	assert_int_equal(ka->tile[1], 1024);
	assert_int_equal(kb->tile[1], 1024);
	assert_int_equal(ka->tile_kind, FL_TILE_MEMORY);
	t_assert_contains(tiled_event(a, "fl_k0")->reason, "for 2 threads");
	t_assert_contains(tiled_event(b, "fl_k0")->reason, "for 64 threads");
	fl_engine_close(a);
	fl_engine_close(b);
	fl_graph_free(g);
	free(json);
}

/* Rows that fit get whole; a row too long for half of L2 is cut to a
 * multiple of 16 floats, and the event says which. */
static void test_tiles_memory_bound_whole_rows(void **state)
{
	char *wide = chain_json(64, 3072), *huge = chain_json(8, 1 << 20);
	fl_graph *gw = t_load(wide), *gh = t_load(huge);
	fl_machine m = machine_of(2);
	fl_session *a = open_at_layer1(gw, &m, NULL);
	fl_session *b = open_at_layer1(gh, &m, NULL);
	const fl_kernel *ka = only_kernel(a), *kb = only_kernel(b);

	(void)state;
	assert_int_equal(ka->tile[1], 3072);
	t_assert_contains(ka->tile_why, "whole rows");
	/* 2 x 4 MiB per row: cut, in whole lines, within half of L2 */
	assert_true(kb->tile[1] < (1 << 20));
	assert_int_equal(kb->tile[1] % 16, 0);
	assert_true(kb->tile_bytes <= 256 * 1024);
	t_assert_contains(kb->tile_why, "rows cut to fit L2");
	fl_engine_close(a);
	fl_engine_close(b);
	fl_graph_free(gw);
	fl_graph_free(gh);
	free(wide);
	free(huge);
}

/* A band with fewer points than 4 tiles per thread says so. */
static void test_tiles_small_band_says_so(void **state)
{
	char *json = chain_json(2, 16);
	fl_graph *g = t_load(json);
	fl_machine m = machine_of(8);
	fl_session *s = open_at_layer1(g, &m, NULL);
	const fl_kernel *k = only_kernel(s);

	(void)state;
	assert_true(k->n_tiles < 32);
	t_assert_contains(tiled_event(s, "fl_k0")->reason,
			  "fewer than 32 tiles: the band is too small");
	fl_engine_close(s);
	fl_graph_free(g);
	free(json);
}

/* A smaller local budget makes smaller tiles, and the event names it. */
static void test_tiles_budget_shrinks_tiles(void **state)
{
	char *json = chain_json(4096, 1024);
	fl_graph *g = t_load(json);
	fl_machine m = machine_of(2);
	fl_engine_opts o;
	fl_session *a, *b;

	(void)state;
	fl_engine_opts_default(&o);
	a = open_at_layer1(g, &m, &o);
	o.layer1.local_budget = 64 * 1024;
	b = open_at_layer1(g, &m, &o);
	assert_true(only_kernel(b)->tile_bytes < only_kernel(a)->tile_bytes);
	assert_true(only_kernel(b)->tile_bytes <= 16 * 1024);
	t_assert_contains(only_kernel(b)->tile_why, "of 64 KiB budget");
	t_assert_contains(only_kernel(a)->tile_why, "of 512 KiB L2");
	fl_engine_close(a);
	fl_engine_close(b);
	fl_graph_free(g);
	free(json);
}

/* ---- contractions --------------------------------------------------------- */

/* Every contraction kernel of a sample: TN a multiple of 16 or the whole
 * extent, TM a multiple of 4 or 6 or whole, at least 2 tiles per thread,
 * and the event naming K and the panel bytes.  Returns how many. */
static int check_contractions(const char *sample, int cores)
{
	fl_graph *g = t_load_sample(sample);
	fl_machine m = machine_of(cores);
	fl_session *s = open_at_layer1(g, &m, NULL);
	const fl_program *p = fl_engine_program(s);
	int n = 0;

	for (int i = 0; i < p->n_kernels; i++) {
		const fl_kernel *k = &p->kernels[i];
		const fl_event *e = tiled_event(s, k->name);
		char threads[32];

		if (k->tile_kind != FL_TILE_CONTRACTION)
			continue;
		n++;
		assert_non_null(e);
		assert_true(k->tile_n == k->n_tile - 1);
		assert_true(k->tile_m >= 0 && k->tile_m < k->tile_n);
		assert_true(k->tile[k->tile_n] % 16 == 0 ||
			    k->tile[k->tile_n] <= 256);
		assert_true(k->tile[k->tile_m] % 4 == 0 ||
			    k->tile[k->tile_m] % 6 == 0 ||
			    k->tile[k->tile_m] <= 6);
		if (k->n_tiles < 2 * cores)
			fail_msg("%s %s: %.0f tiles for %d cores", sample,
				 k->name, k->n_tiles, cores);
		assert_true(k->tile_bytes > 0 && k->tile_bytes <= 256 * 1024);
		snprintf(threads, sizeof threads, "for %d threads", cores);
		t_assert_contains(e->reason, threads);
		t_assert_contains(e->reason, "contraction (K ");
		t_assert_contains(e->reason, "within 1/2 of 512 KiB L2");
		t_assert_contains(k->tile_why, "contraction (K ");
	}
	fl_engine_close(s);
	fl_graph_free(g);
	return n;
}

/* BERT's six dense layers and two attention matmuls, GPT-2's two: all
 * contraction tiles, with enough tiles for 2 and for 16 cores. */
static void test_tiles_matmuls_get_tiles_for_threads(void **state)
{
	(void)state;
	assert_true(check_contractions("bert_encoder", 2) >= 8);
	assert_true(check_contractions("gpt2_mlp", 2) >= 2);
	assert_true(check_contractions("gpt2_mlp", 16) >= 2);
}

/* BERT's q projection: M = 128 tokens, N = 768, K = 768; the event says
 * the sizes it chose, and those are the kernel's. */
static void test_tiles_event_names_the_numbers(void **state)
{
	fl_graph *g = t_load_sample("bert_encoder");
	fl_machine m = machine_of(2);
	fl_session *s = open_at_layer1(g, &m, NULL);
	const fl_kernel *k = &fl_engine_program(s)->kernels[0];
	const fl_event *e = tiled_event(s, k->name);
	char want[96];

	(void)state;
	assert_int_equal(k->tile_kind, FL_TILE_CONTRACTION);
	snprintf(want, sizeof want, "by %lld x %lld: %.0f tiles for 2 threads",
		 (long long)k->tile[0], (long long)k->tile[1], k->n_tiles);
	t_assert_contains(e->reason, want);
	t_assert_contains(e->reason, "(K 768, KC 256)");
	snprintf(want, sizeof want, "+ C = %lld KiB",
		 (long long)(k->tile_bytes >> 10));
	t_assert_contains(e->reason, want);
	assert_string_equal(strchr(e->reason, ' ') + 1, k->tile_why);
	fl_engine_close(s);
	fl_graph_free(g);
}

/* --tile wins over the machine, in the engine and on the command line. */
static void test_tiles_user_tiles_override(void **state)
{
	char *json = chain_json(512, 1024);
	fl_graph *g = t_load(json);
	fl_machine m = machine_of(64);
	fl_engine_opts o;
	fl_session *s;
	const fl_kernel *k;
	char args[512], *out = NULL;

	(void)state;
	fl_engine_opts_default(&o);
	o.layer1.n_tile = 2;
	o.layer1.tile[0] = 16;
	o.layer1.tile[1] = 8;
	s = open_at_layer1(g, &m, &o);
	k = only_kernel(s);
	assert_int_equal(k->tile[0], 16);
	assert_int_equal(k->tile[1], 8);
	assert_int_equal(k->tile_kind, FL_TILE_USER);
	t_assert_contains(tiled_event(s, "fl_k0")->reason,
			  "by 16 x 8: 4096 tiles for 64 threads; sizes from "
			  "--tile");
	fl_engine_close(s);
	snprintf(args, sizeof args, "--batch %s/gpt2_mlp.json --stage layer1 "
		 "--events --tile 24,48", t_samples_dir());
	assert_int_equal(t_fuselab(args, &out), 0);
	t_assert_contains(out, "by 24 x 48: ");
	t_assert_contains(out, "sizes from --tile");
	free(out);
	fl_graph_free(g);
	free(json);
}

/* ---- the explorer ----------------------------------------------------------- */

/* The schedule view's title names the sizes, how they were chosen, the
 * tiles and the bytes of one; on the tile band the detail lines start
 * with the whole reason (the view fixture's machine: 2 Zen 3 cores). */
static void test_tiles_schedule_view_says_why(void **state)
{
	t_view f;
	void *st = fl_view_schedule.create();
	const fl_kernel *k;
	fl_view_action act;
	char *text = NULL, want[160];
	bool found = false;

	(void)state;
	t_view_open(&f, "micro2020_fig1", -1);
	k = &fl_engine_program(f.s)->kernels[0];
	assert_int_equal(k->tile_kind, FL_TILE_CONTRACTION);
	snprintf(want, sizeof want, "tiles %lldx%lldx%lld (contraction, %.0f "
		 "of %lld KiB)", (long long)k->tile[0],
		 (long long)k->tile[1], (long long)k->tile[2], k->n_tiles,
		 (long long)(k->tile_bytes >> 10));
	for (int i = 0; i < 40 && !found; i++) {
		free(text);
		text = t_view_render(&f, &fl_view_schedule, st, 90, 40);
		found = fl_grid_find_look(f.grid, "band permutable",
					  FL_LOOK_CURSOR) != 0 &&
			strstr(text, "tiled S3_relu") != NULL;
		memset(&act, 0, sizeof act);
		if (!found)
			assert_int_equal(fl_view_schedule.key(st, &f.ctx, 'j',
							      &act), 1);
	}
	t_assert_contains(text, want);
	/* the tile band's detail: the reason, as the event gives it */
	t_assert_contains(text, "tiled S3_relu (3 of 4 band members");
	t_assert_contains(text, "28 tiles for 2 threads");
	t_assert_contains(text, "A 64 x KC + B KC x 128 + C = 224 KiB");
	free(text);
	fl_view_schedule.destroy(st);
	t_view_close(&f);
}

/* The graph view, collapsed to kernels: a kernel box's detail pane
 * carries its tile sizes and why. */
static void test_tiles_graph_view_kernel_detail(void **state)
{
	t_view f;
	void *st = fl_view_graph.create();
	const fl_kernel *k;
	fl_view_action act;
	char *text, want[96];

	(void)state;
	t_view_open(&f, "gpt2_mlp", -1);
	k = &fl_engine_program(f.s)->kernels[0];
	memset(&act, 0, sizeof act);
	assert_int_equal(fl_view_graph.key(st, &f.ctx, 'c', &act), 1);
	f.sel.op = k->ops[0];
	text = t_view_render(&f, &fl_view_graph, st, 160, 50);
	snprintf(want, sizeof want, "kernel k0 %s", k->name);
	t_assert_contains(text, want);
	snprintf(want, sizeof want, "by %lld: %.0f tiles for 2 threads",
		 (long long)k->tile[0], k->n_tiles);
	t_assert_contains(text, want);
	free(text);
	fl_view_graph.destroy(st);
	t_view_close(&f);
}

/* ---- the machine ----------------------------------------------------------- */

static void test_tiles_machine_detect_sane(void **state)
{
	fl_machine m;

	(void)state;
	fl_machine_detect(&m);
	assert_true(m.cores >= 1);
	assert_true(m.l1d > 0 && m.l2 > 0 && m.l3 > 0);
	if (!strstr(m.guessed, "L1d") && !strstr(m.guessed, "L2"))
		assert_true(m.l1d <= m.l2);
	if (!strstr(m.guessed, "L2") && !strstr(m.guessed, "L3"))
		assert_true(m.l2 <= m.l3);
	assert_true(m.vector_bits == 0 || m.vector_bits == 128 ||
		    m.vector_bits == 256 || m.vector_bits == 512);
	assert_true(m.isa[0] != '\0');
	/* the cached host is the same machine */
	assert_int_equal(fl_machine_host()->cores, m.cores);
	assert_true(fl_machine_host()->l2 == m.l2);
	assert_string_equal(fl_machine_host()->isa, m.isa);
	assert_ptr_equal(fl_machine_host(), fl_machine_host());
	assert_true(fl_machine_load() >= 0 || fl_machine_load() == -1);
}

static void test_tiles_machine_text_names_isa_and_cores(void **state)
{
	fl_machine m = machine_of(6), one = machine_of(1);
	char buf[256], cores[32];

	(void)state;
	fl_machine_text(&m, buf, sizeof buf);
	t_assert_contains(buf, "made-up machine");
	t_assert_contains(buf, "6 cores");
	t_assert_contains(buf, "avx2+fma");
	t_assert_contains(buf, "L2 512 KiB");
	t_assert_contains(buf, "L3 32 MiB");
	fl_machine_text(&one, buf, sizeof buf);
	t_assert_contains(buf, "1 core,");
	snprintf(one.guessed, sizeof one.guessed, "L3");
	fl_machine_text(&one, buf, sizeof buf);
	t_assert_contains(buf, "(assumed: L3)");
	fl_machine_text(fl_machine_host(), buf, sizeof buf);
	snprintf(cores, sizeof cores, "%d core", fl_machine_host()->cores);
	t_assert_contains(buf, cores);
	t_assert_contains(buf, fl_machine_host()->isa);
}

/* A description replaces the fields it names, lists them as given, and
 * leaves the others; a bad one changes nothing and names its bad part. */
static void test_tiles_machine_description(void **state)
{
	fl_machine m = machine_of(6), before;
	char buf[256], why[256];

	(void)state;
	assert_true(fl_machine_describe(&m, "l2=1M,isa=avx512f,cores=16",
					why, sizeof why));
	assert_int_equal(m.cores, 16);
	assert_true(m.l2 == 1 << 20);
	assert_true(m.l1d == 32 * 1024);	/* not named: kept */
	assert_int_equal(m.vector_bits, 512);
	assert_string_equal(m.isa, "avx512f");
	fl_machine_text(&m, buf, sizeof buf);
	t_assert_contains(buf, "16 cores, avx512f");
	t_assert_contains(buf, "L2 1 MiB");
	t_assert_contains(buf, "(given: l2, isa, cores)");
	assert_true(fl_machine_describe(&m, "isa=avx2,l1d=48k,model=x y",
					why, sizeof why));
	assert_int_equal(m.vector_bits, 256);
	assert_string_equal(m.isa, "avx2+fma");
	assert_true(m.l1d == 48 * 1024);
	assert_string_equal(m.model, "x y");
	before = m;
	{
		static const struct {
			const char *spec, *why;
		} bad[] = {
			{"", "empty machine description"},
			{"cores=0", "cores=0: expected a whole number"},
			{"cores=2x", "cores=2x: expected a whole number"},
			{"l2=12Q", "l2=12Q: expected a size"},
			{"l3=100", "l3=100: expected a size"},
			{"l1d=-32K", "l1d=-32K: expected a size"},
			{"isa=avx9", "isa=avx9: expected avx512f"},
			{"ghz=3", "unknown field \"ghz\""},
			{"l2", "\"l2\": expected key=value"},
			{"l2=", "\"l2=\": expected key=value"},
			{"l2=1M,,cores=2", "separated by commas"},
			{"cores=4,l2=huge", "l2=huge"},
		};

		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			why[0] = '\0';
			assert_false(fl_machine_describe(&m, bad[i].spec, why,
							 sizeof why));
			t_assert_contains(why, bad[i].why);
			/* unchanged, even by the good part before the bad */
			assert_int_equal(m.cores, before.cores);
			assert_true(m.l2 == before.l2);
		}
	}
}

/* The tiled event of softmax's max kernel (fl_k0) as planned for the
 * machine of env (a FUSELAB_MACHINE=... prefix, or "") and options. */
static char *max_kernel_tiling(const char *env, const char *options)
{
	char cmd[1024], *out = NULL, *line, *end;

	snprintf(cmd, sizeof cmd, "%s %s --batch --stage layer1 --events "
		 "--strategy apollo-l1 %s %s/softmax.json", env,
		 t_fuselab_bin(), options, t_samples_dir());
	if (t_run(cmd, &out) != 0)
		fail_msg("%s:\n%s", cmd, out);
	line = strstr(out, "fl_k0: tiled softmax.max");
	if (!line)
		fail_msg("no tiled event for fl_k0:\n%s", out);
	end = strchr(line, '\n');
	if (end)
		*end = '\0';
	memmove(out, line, strlen(line) + 1);
	return out;
}

/* --machine plans for the machine it describes, FUSELAB_MACHINE is its
 * default, the option wins over the variable, and a bad description is
 * an error that names it. */
static void test_tiles_machine_option(void **state)
{
	char *plain, *big, *env, *both;

	(void)state;
	plain = max_kernel_tiling("", "");	/* the tests' T_MACHINE */
	t_assert_contains(plain, "for 2 threads");
	t_assert_contains(plain, "aim 1/4 of 512 KiB L2");
	big = max_kernel_tiling("", "--machine l2=2M,cores=8");
	t_assert_contains(big, "for 8 threads");
	t_assert_contains(big, "of 2048 KiB L2");
	env = max_kernel_tiling("FUSELAB_MACHINE=l2=2M,cores=8", "");
	assert_string_equal(env, big);
	both = max_kernel_tiling("FUSELAB_MACHINE=l2=2M,cores=8",
				 "--machine cores=2,l2=512K");
	assert_string_equal(both, plain);
	free(plain);
	free(big);
	free(env);
	free(both);
	t_expect_fuselab("--machine cores=0 x.json", 2,
			 "--machine: cores=0: expected a whole number");
	t_expect_fuselab("--machine l2=1M,foo=2 x.json", 2,
			 "--machine: unknown field \"foo\"");
	t_expect_fuselab("--machine", 2, "--machine");
	{
		char cmd[512], *out = NULL;

		snprintf(cmd, sizeof cmd, "FUSELAB_MACHINE=isa=avx9 %s x.json",
			 t_fuselab_bin());
		assert_int_equal(t_run(cmd, &out), 2);
		t_assert_contains(out, "FUSELAB_MACHINE: isa=avx9: expected");
		free(out);
	}
}

/* The tests plan for T_MACHINE (test_main assumes it); the host stays
 * what the system says. */
static void test_tiles_machine_assumed_for_tests(void **state)
{
	(void)state;
	assert_int_equal(fl_machine_get()->cores, 2);
	assert_true(fl_machine_get()->l2 == 512 * 1024);
	assert_string_equal(fl_machine_get()->model, "test machine");
	t_assert_contains(fl_machine_get()->given, "l2");
	assert_string_equal(fl_machine_host()->given, "");
}

FL_SUITE(tiles,
	 cmocka_unit_test(test_tiles_follow_cores),
	 cmocka_unit_test(test_tiles_memory_bound_whole_rows),
	 cmocka_unit_test(test_tiles_small_band_says_so),
	 cmocka_unit_test(test_tiles_budget_shrinks_tiles),
	 cmocka_unit_test(test_tiles_matmuls_get_tiles_for_threads),
	 cmocka_unit_test(test_tiles_event_names_the_numbers),
	 cmocka_unit_test(test_tiles_user_tiles_override),
	 cmocka_unit_test(test_tiles_schedule_view_says_why),
	 cmocka_unit_test(test_tiles_graph_view_kernel_detail),
	 cmocka_unit_test(test_tiles_machine_detect_sane),
	 cmocka_unit_test(test_tiles_machine_text_names_isa_and_cores),
	 cmocka_unit_test(test_tiles_machine_description),
	 cmocka_unit_test(test_tiles_machine_option),
	 cmocka_unit_test(test_tiles_machine_assumed_for_tests));
