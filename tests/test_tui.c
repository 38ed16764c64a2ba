/* The explorer end to end: the real binary in a detached tmux session of
 * fixed size, driven by keys, read back from the screen (tmux_driver.h).
 * Under the sanitizer build the binary is the sanitizer's: a leak or an
 * error shows as a non-zero exit status and as a report file, and
 * quitting (t_tmux_exit_status) fails on either. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernel.h"
#include "test_util.h"
#include "tmux_driver.h"

static char *sample_path(const char *name)
{
	static char buf[512];

	snprintf(buf, sizeof buf, "%s/%s.json", t_samples_dir(), name);
	return buf;
}

static void quit_cleanly(t_tmux *t)
{
	t_tmux_keys(t, "q");
	assert_int_equal(t_tmux_exit_status(t, 30), 0);
	t_tmux_stop(t);
}

static void tui_steps_back_and_forth(void **state)
{
	t_tmux t;

	(void)state;
	t_tmux_start(&t, 100, 30, sample_path("softmax"));
	t_tmux_wait_for(&t, "step 0/32", 20);
	t_tmux_keys(&t, "n n n n");
	t_tmux_wait_for(&t, "step 4/32", 5);
	t_tmux_wait_for(&t, "softmax.sub (sub) is broadcast", 5);
	t_tmux_keys(&t, "N");
	t_tmux_wait_for(&t, "step 3/32", 5);
	t_tmux_wait_for(&t, "softmax.max (reduce_max) is reduction", 5);
	t_tmux_keys(&t, "g");
	t_tmux_type(&t, "11");
	t_tmux_keys(&t, "Enter");
	t_tmux_wait_for(&t, "R4: B->R merge softmax.exp into softmax.sum", 5);
	quit_cleanly(&t);
}

static void tui_find_why_and_forbid(void **state)
{
	t_tmux t;

	(void)state;
	t_tmux_start(&t, 120, 30, sample_path("softmax"));
	t_tmux_keys(&t, "r /");
	t_tmux_type(&t, "softmax.exp");
	t_tmux_keys(&t, "Enter");
	t_tmux_wait_for(&t, "found softmax.exp", 5);
	t_tmux_keys(&t, "m /");
	t_tmux_type(&t, "softmax.sum");
	t_tmux_keys(&t, "Enter m w");
	t_tmux_wait_for(&t, "why softmax.exp and softmax.sum", 10);
	t_tmux_wait_for(&t, "together", 5);
	t_tmux_keys(&t, "Space f");
	t_tmux_wait_for(&t, "kernels 3 -> 4", 20);
	t_tmux_keys(&t, "o");
	t_tmux_wait_for(&t, "forbid  softmax.exp  softmax.sum", 5);
	t_tmux_keys(&t, "d");
	t_tmux_wait_for(&t, "kernels 4 -> 3", 20);
	t_tmux_keys(&t, "Escape");
	quit_cleanly(&t);
}

static void tui_resizes_and_helps(void **state)
{
	t_tmux t;

	(void)state;
	t_tmux_start(&t, 80, 24, sample_path("softmax"));
	t_tmux_wait_for(&t, "1 graph", 5);
	t_tmux_resize(&t, 200, 50);
	/* two panes: graph and decisions side by side */
	t_tmux_keys(&t, "?");
	t_tmux_wait_for(&t, "fuselab keys", 5);
	t_tmux_wait_for(&t, "why (not) fused", 5);
	t_tmux_keys(&t, "Space");
	t_tmux_resize(&t, 80, 24);
	t_tmux_wait_for(&t, "step 0/", 5);
	t_tmux_resize(&t, 30, 8);
	t_tmux_wait_for(&t, "terminal too small", 5);
	t_tmux_resize(&t, 80, 24);
	t_tmux_wait_for(&t, "step 0/", 5);
	quit_cleanly(&t);
}

static void tui_runs_and_cancels_kernels(void **state)
{
	t_tmux t;
	char want[96];

	(void)state;
	t_tmux_start(&t, 120, 30, sample_path("layernorm"));
	t_tmux_keys(&t, "R");
	t_tmux_wait_for(&t, "running kernels", 10);
	t_tmux_keys(&t, "Escape");
	t_tmux_wait_for(&t, "kernel run cancelled", 60);
	t_tmux_keys(&t, "R");
	snprintf(want, sizeof want, "kernels ran: %d of %d strategies "
		 "verified", FL_STRATEGY_COUNT, FL_STRATEGY_COUNT);
	t_tmux_wait_for(&t, want, 300);
	quit_cleanly(&t);
}

static void tui_views_on_micro2020(void **state)
{
	t_tmux t;

	(void)state;
	t_tmux_start(&t, 120, 40, sample_path("micro2020_fig1"));
	t_tmux_keys(&t, "r 3");
	t_tmux_wait_for(&t, "extension {", 10);
	t_tmux_keys(&t, "4");
	t_tmux_wait_for(&t, "computed by 2+ tiles", 10);
	t_tmux_wait_for(&t, "\u25c6", 5);
	t_tmux_keys(&t, "5");
	t_tmux_wait_for(&t, "tile-local", 5);
	t_tmux_keys(&t, "8");
	t_tmux_wait_for(&t, "#pragma omp parallel for", 5);
	t_tmux_keys(&t, "2");
	t_tmux_wait_for(&t, "26 of 26 decisions", 5);
	t_tmux_keys(&t, "6");
	t_tmux_wait_for(&t, "Layer 3 has NOT run", 5);
	t_tmux_keys(&t, "7");
	t_tmux_wait_for(&t, "press R", 5);
	quit_cleanly(&t);
}

static void tui_tour_and_overrides_file(void **state)
{
	char args[1200], path[300];
	t_tmux t;
	FILE *f;

	(void)state;
	snprintf(path, sizeof path, "/tmp/fuselab-tui-ovr-%d.json", (int)getpid());
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"format\": \"fuselab-overrides/1\", \"overrides\": "
	      "[{\"action\": \"forbid\", \"ops\": [\"op3\", \"op4.scale\"]}]}\n",
	      f);
	fclose(f);
	snprintf(args, sizeof args, "--overrides %s %s", path,
		 sample_path("apollo_fig1"));
	t_tmux_start(&t, 120, 30, args);
	t_tmux_wait_for(&t, "tour 1/8", 10);
	t_tmux_wait_for(&t, "APOLLO Fig. 1", 5);
	t_tmux_keys(&t, "o");
	t_tmux_wait_for(&t, "forbid  op3  op4.scale", 5);
	t_tmux_keys(&t, "Escape t");
	t_tmux_wait_for(&t, "tour 2/8", 20);
	quit_cleanly(&t);
	remove(path);
}

/* What each view (keys 1-8, in order) shows of softmax at step 3, before
 * layer 1, and at the end of the compile. */
static const char *const views_early[8] = {
	"whole 1:1", "3 of 32 decisions", "layer 1 has not run",
	"layer 1 has not run", "placement is decided in layer 1",
	"Layer 3 has NOT run", "press R", "layer 1 has not run",
};
static const char *const views_done[8] = {
	"colour: kernel", "32 of 32 decisions", "schedule tree of kernel 0",
	"S0_0 1/2", "tile-local per tile", "no branch set", "press R",
	"code of kernel 0",
};

static void visit_views(t_tmux *t, const char *const *shows)
{
	for (int v = 0; v < 8; v++) {
		char key[2] = {(char)('1' + v), '\0'};

		t_tmux_keys(t, key);
		t_tmux_wait_for(t, shows[v], 5);
	}
}

/* One session through every view, before and after layer 1, and the main
 * keys: stepping both ways, a pass, to the end, find and mark, help and
 * quit.  Its point is the sanitizer build: everything the explorer
 * draws and frees on the way must leave no report (tmux_driver.h). */
static void tui_visits_every_view(void **state)
{
	t_tmux t;

	(void)state;
	t_tmux_start(&t, 100, 30, sample_path("softmax"));
	t_tmux_keys(&t, "n n n n N");
	t_tmux_wait_for(&t, "step 3/32", 5);
	visit_views(&t, views_early);
	t_tmux_keys(&t, "p r");
	t_tmux_wait_for(&t, "step 32/32", 20);
	visit_views(&t, views_done);
	t_tmux_keys(&t, "1 /");
	t_tmux_type(&t, "softmax.exp");
	t_tmux_keys(&t, "Enter m");
	t_tmux_wait_for(&t, "marked: softmax.exp", 5);
	t_tmux_keys(&t, "?");
	t_tmux_wait_for(&t, "fuselab keys", 5);
	t_tmux_keys(&t, "Escape");
	quit_cleanly(&t);
}

static void tui_needs_a_terminal(void **state)
{
	char *out = NULL;
	char args[600];

	(void)state;
	snprintf(args, sizeof args, "%s < /dev/null", sample_path("softmax"));
	assert_int_equal(t_fuselab(args, &out), 2);
	t_assert_contains(out, "needs a terminal; use --batch");
	free(out);
}

/* An ONNX model on the command line opens like a JSON graph; an op's
 * details name the ONNX node type it came from. */
static void tui_opens_onnx_model(void **state)
{
	char args[1024];
	t_tmux t;

	(void)state;
	snprintf(args, sizeof args, "--input-shape x=4,32 %s/tests/models/"
		 "torch_mlp_layernorm/model.onnx", t_repo_root());
	t_tmux_start(&t, 120, 30, args);
	t_tmux_wait_for(&t, "/up/Gemm", 20);
	t_tmux_keys(&t, "/");
	t_tmux_type(&t, "/up/Gemm");
	t_tmux_keys(&t, "Enter");
	t_tmux_wait_for(&t, "found /up/Gemm", 5);
	t_tmux_wait_for(&t, "(ONNX Gemm)", 5);
	quit_cleanly(&t);
}

FL_SUITE(tui,
	 cmocka_unit_test_teardown(tui_opens_onnx_model, t_tmux_teardown),
	 cmocka_unit_test_teardown(tui_steps_back_and_forth, t_tmux_teardown),
	 cmocka_unit_test_teardown(tui_find_why_and_forbid, t_tmux_teardown),
	 cmocka_unit_test_teardown(tui_resizes_and_helps, t_tmux_teardown),
	 cmocka_unit_test_teardown(tui_runs_and_cancels_kernels, t_tmux_teardown),
	 cmocka_unit_test_teardown(tui_views_on_micro2020, t_tmux_teardown),
	 cmocka_unit_test_teardown(tui_tour_and_overrides_file, t_tmux_teardown),
	 cmocka_unit_test_teardown(tui_visits_every_view, t_tmux_teardown),
	 cmocka_unit_test(tui_needs_a_terminal));
