/* Runs every suite as one cmocka group, so `make test` ends with one
 * summary line.  An optional argument filters tests by name pattern.
 * With FUSELAB_TEST_TIMES=FILE each test's wall time is appended to FILE,
 * one "seconds name" line per test, to see where the suite's time goes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "machine.h"
#include "test_util.h"

FL_SUITE_DECL(shape);
FL_SUITE_DECL(ops);
FL_SUITE_DECL(compound);
FL_SUITE_DECL(recurrent);
FL_SUITE_DECL(onnx_recurrent);
FL_SUITE_DECL(onnx_loss);
FL_SUITE_DECL(ops_more);
FL_SUITE_DECL(indexed);
FL_SUITE_DECL(quant);
FL_SUITE_DECL(half);
FL_SUITE_DECL(ops_index);
FL_SUITE_DECL(norm_pool);
FL_SUITE_DECL(loader);
FL_SUITE_DECL(interp);
FL_SUITE_DECL(samples);
FL_SUITE_DECL(cli);
FL_SUITE_DECL(classify);
FL_SUITE_DECL(preprocess);
FL_SUITE_DECL(partition);
FL_SUITE_DECL(codegen);
FL_SUITE_DECL(split);
FL_SUITE_DECL(run);
FL_SUITE_DECL(layer1);
FL_SUITE_DECL(tiles);
FL_SUITE_DECL(pipeline);
FL_SUITE_DECL(layers);
FL_SUITE_DECL(custom);
FL_SUITE_DECL(signals);
FL_SUITE_DECL(errors);
FL_SUITE_DECL(robustness);
FL_SUITE_DECL(grid);
FL_SUITE_DECL(output);
FL_SUITE_DECL(export_cli);
FL_SUITE_DECL(explorer);
FL_SUITE_DECL(tui);
FL_SUITE_DECL(view_sched);
FL_SUITE_DECL(view_panels);
FL_SUITE_DECL(tour);
FL_SUITE_DECL(view_graph);
FL_SUITE_DECL(export_report);
FL_SUITE_DECL(export_trace);
FL_SUITE_DECL(export_dot);
FL_SUITE_DECL(export_domain);
FL_SUITE_DECL(contract);
FL_SUITE_DECL(codegen_cuda);
FL_SUITE_DECL(math_rt);
FL_SUITE_DECL(value_range);
FL_SUITE_DECL(timing);
FL_SUITE_DECL(ref_share);
FL_SUITE_DECL(snapshot_share);
FL_SUITE_DECL(placement);
FL_SUITE_DECL(layer2);
FL_SUITE_DECL(layer3);
FL_SUITE_DECL(bench);
FL_SUITE_DECL(reduce_form);
FL_SUITE_DECL(cuda);
FL_SUITE_DECL(build_cache);
FL_SUITE_DECL(onnx_tensor);
FL_SUITE_DECL(feeds);
FL_SUITE_DECL(onnx_export);
FL_SUITE_DECL(onnx_import);
FL_SUITE_DECL(onnx_models);
FL_SUITE_DECL(onnx_roundtrip);
FL_SUITE_DECL(fuzz_regressions);
FL_SUITE_DECL(conformance);
FL_SUITE_DECL(differential);
FL_SUITE_DECL(graph_json);
FL_SUITE_DECL(types);

struct suite {
	const struct CMUnitTest *tests;
	const size_t *n;
};

/* One test's clock: cmocka hands it to the test's setup and teardown as
 * the test state (no test uses its state). */
struct test_clock {
	const char *name;
	struct timespec start;
};

static FILE *times_file;

static double seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) +
	       (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

static int clock_start(void **state)
{
	struct test_clock *clock = *state;

	clock_gettime(CLOCK_MONOTONIC, &clock->start);
	return 0;
}

/* Written at once, so that a run cut short still leaves what it timed. */
static int clock_stop(void **state)
{
	struct test_clock *clock = *state;

	fprintf(times_file, "%.3f %s\n", seconds_since(&clock->start),
		clock->name);
	fflush(times_file);
	return 0;
}

/* Gives every test a clock when FUSELAB_TEST_TIMES names a file; the
 * clocks (malloc'd, NULL when not timing) outlive the run. */
static struct test_clock *time_tests(struct CMUnitTest *all, size_t total)
{
	const char *path = getenv("FUSELAB_TEST_TIMES");
	struct test_clock *clocks;

	if (!path || !*path)
		return NULL;
	times_file = fopen(path, "a");
	clocks = calloc(total, sizeof *clocks);
	if (!times_file || !clocks) {
		fprintf(stderr, "FUSELAB_TEST_TIMES: cannot write %s\n", path);
		exit(1);
	}
	for (size_t i = 0; i < total; i++) {
		clocks[i].name = all[i].name;
		all[i].initial_state = &clocks[i];
		all[i].setup_func = clock_start;
		all[i].teardown_func = clock_stop;
	}
	return clocks;
}

/* Every test plans for T_MACHINE, in this process and in the fuselab
 * processes it starts. */
static int assume_test_machine(void)
{
	fl_machine m = *fl_machine_host();
	char why[256];

	if (!fl_machine_describe(&m, T_MACHINE, why, (int)sizeof why) ||
	    setenv("FUSELAB_MACHINE", T_MACHINE, 1) != 0) {
		fprintf(stderr, "T_MACHINE: %s\n", why);
		return -1;
	}
	fl_machine_assume(&m);
	return 0;
}

int main(int argc, char **argv)
{
	const struct suite suites[] = {
		{fl_suite_shape, &fl_suite_shape_n},
		{fl_suite_ops, &fl_suite_ops_n},
		{fl_suite_compound, &fl_suite_compound_n},
		{fl_suite_recurrent, &fl_suite_recurrent_n},
		{fl_suite_onnx_recurrent, &fl_suite_onnx_recurrent_n},
		{fl_suite_onnx_loss, &fl_suite_onnx_loss_n},
		{fl_suite_ops_more, &fl_suite_ops_more_n},
		{fl_suite_indexed, &fl_suite_indexed_n},
		{fl_suite_quant, &fl_suite_quant_n},
		{fl_suite_half, &fl_suite_half_n},
		{fl_suite_ops_index, &fl_suite_ops_index_n},
		{fl_suite_norm_pool, &fl_suite_norm_pool_n},
		{fl_suite_loader, &fl_suite_loader_n},
		{fl_suite_interp, &fl_suite_interp_n},
		{fl_suite_samples, &fl_suite_samples_n},
		{fl_suite_classify, &fl_suite_classify_n},
		{fl_suite_preprocess, &fl_suite_preprocess_n},
		{fl_suite_partition, &fl_suite_partition_n},
		{fl_suite_codegen, &fl_suite_codegen_n},
		{fl_suite_split, &fl_suite_split_n},
		{fl_suite_layer1, &fl_suite_layer1_n},
		{fl_suite_tiles, &fl_suite_tiles_n},
		{fl_suite_run, &fl_suite_run_n},
		{fl_suite_build_cache, &fl_suite_build_cache_n},
		{fl_suite_onnx_tensor, &fl_suite_onnx_tensor_n},
		{fl_suite_feeds, &fl_suite_feeds_n},
		{fl_suite_onnx_export, &fl_suite_onnx_export_n},
		{fl_suite_onnx_import, &fl_suite_onnx_import_n},
		{fl_suite_onnx_models, &fl_suite_onnx_models_n},
		{fl_suite_onnx_roundtrip, &fl_suite_onnx_roundtrip_n},
		{fl_suite_fuzz_regressions, &fl_suite_fuzz_regressions_n},
		{fl_suite_conformance, &fl_suite_conformance_n},
		{fl_suite_pipeline, &fl_suite_pipeline_n},
		{fl_suite_cli, &fl_suite_cli_n},
		{fl_suite_layers, &fl_suite_layers_n},
		{fl_suite_custom, &fl_suite_custom_n},
		{fl_suite_differential, &fl_suite_differential_n},
		{fl_suite_graph_json, &fl_suite_graph_json_n},
		{fl_suite_types, &fl_suite_types_n},
		{fl_suite_signals, &fl_suite_signals_n},
		{fl_suite_errors, &fl_suite_errors_n},
		{fl_suite_robustness, &fl_suite_robustness_n},
		{fl_suite_grid, &fl_suite_grid_n},
		{fl_suite_output, &fl_suite_output_n},
		{fl_suite_export_cli, &fl_suite_export_cli_n},
		{fl_suite_explorer, &fl_suite_explorer_n},
		{fl_suite_tui, &fl_suite_tui_n},
		{fl_suite_view_sched, &fl_suite_view_sched_n},
		{fl_suite_view_panels, &fl_suite_view_panels_n},
		{fl_suite_tour, &fl_suite_tour_n},
		{fl_suite_view_graph, &fl_suite_view_graph_n},
		{fl_suite_export_report, &fl_suite_export_report_n},
		{fl_suite_export_trace, &fl_suite_export_trace_n},
		{fl_suite_export_dot, &fl_suite_export_dot_n},
		{fl_suite_export_domain, &fl_suite_export_domain_n},
		{fl_suite_contract, &fl_suite_contract_n},
		{fl_suite_codegen_cuda, &fl_suite_codegen_cuda_n},
		{fl_suite_math_rt, &fl_suite_math_rt_n},
		{fl_suite_value_range, &fl_suite_value_range_n},
		{fl_suite_timing, &fl_suite_timing_n},
		{fl_suite_ref_share, &fl_suite_ref_share_n},
		{fl_suite_snapshot_share, &fl_suite_snapshot_share_n},
		{fl_suite_placement, &fl_suite_placement_n},
		{fl_suite_layer2, &fl_suite_layer2_n},
		{fl_suite_layer3, &fl_suite_layer3_n},
		{fl_suite_reduce_form, &fl_suite_reduce_form_n},
		{fl_suite_cuda, &fl_suite_cuda_n},
		/* last: its genprog tests leave the generated code's OpenMP
		   runtime in this process, and a run forked after that hangs
		   in it */
		{fl_suite_bench, &fl_suite_bench_n},
	};
	size_t total = 0, k = 0;
	struct CMUnitTest *all;
	struct test_clock *clocks;
	int failed;

	for (size_t s = 0; s < sizeof suites / sizeof suites[0]; s++)
		total += *suites[s].n;
	all = calloc(total, sizeof *all);
	if (!all || assume_test_machine() < 0)
		return 1;
	for (size_t s = 0; s < sizeof suites / sizeof suites[0]; s++)
		for (size_t i = 0; i < *suites[s].n; i++)
			all[k++] = suites[s].tests[i];
	clocks = time_tests(all, total);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	failed = _cmocka_run_group_tests("fuselab", all, total, NULL, NULL);
	if (times_file)
		fclose(times_file);
	free(clocks);
	free(all);
	return failed ? 1 : 0;
}
