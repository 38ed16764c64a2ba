/* Export, import, same outputs: every sample written as ONNX
 * (--export-onnx) and read back by the importer computes what the sample
 * computes, in the interpreter, on the same input values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interp.h"
#include "onnx.h"
#include "onnx_import.h"
#include "test_util.h"

/* The sample's interpreter values of its inputs, as feeds by name (the
 * imported graph's inputs keep their names; tensors that index a gather
 * hold integers, which the generator would not give the import). */
static fl_feed *input_feeds(const fl_graph *g, const fl_values *v, int *n)
{
	int *in, k;
	fl_feed *f;

	*n = fl_graph_inputs(g, &in);
	assert_true(*n >= 0);
	f = calloc((size_t)*n + 1, sizeof *f);
	assert_non_null(f);
	for (k = 0; k < *n; k++) {
		f[k].name = g->tensors[in[k]].name;
		f[k].buf = v->bufs[in[k]];
	}
	free(in);
	return f;
}

static void compare_outputs(const char *sample, const fl_graph *g,
			    const fl_values *want, const fl_graph *back,
			    const fl_values *got)
{
	int *out, n = fl_graph_outputs(g, &out);

	assert_true(n > 0);
	for (int k = 0; k < n; k++) {
		const fl_tensor *x = &g->tensors[out[k]];
		int t = fl_graph_find_tensor(back, x->name);

		if (t < 0)
			fail_msg("%s: output %s lost in the round trip", sample,
				 x->name);
		assert_true(fl_shape_equal(&back->tensors[t].shape, &x->shape));
		/* compound ops the export opens (gelu, attention, ...) run
		 * as primitives, which round differently from the compound
		 * op's reference; a matmul after them sums the differences
		 * (gpt2_mlp: 3.5e-5 on a value of 0.18) */
		for (int64_t i = 0; i < fl_shape_numel(&x->shape); i++) {
			double gv = got->bufs[t].data[i];
			double wv = want->bufs[out[k]].data[i];

			if (!(fabs(gv - wv) <= 1e-4 + 1e-3 * fabs(wv)) &&
			    !(isnan(gv) && isnan(wv)))
				fail_msg("%s: output %s element %lld: %.9g after "
					 "the round trip, %.9g before", sample,
					 x->name, (long long)i, gv, wv);
		}
	}
	free(out);
}

static void round_trip(const char *sample)
{
	fl_graph *g = t_load_sample(sample), *back;
	fl_interp_opts o;
	fl_values *want, *got;
	fl_error err = {""};
	uint8_t *bytes;
	size_t len;
	fl_feed *feeds;
	int n_feeds;

	fl_interp_opts_default(&o);
	want = fl_interp_run(g, &o, &err);
	assert_non_null(want);
	if (fl_export_onnx_bytes(g, &bytes, &len, &err) < 0)
		fail_msg("%s: export: %s", sample, err.msg);
	back = fl_onnx_load_bytes(bytes, len, sample, NULL, NULL, NULL, &err);
	if (!back)
		fail_msg("%s: import of the export: %s", sample, err.msg);
	feeds = input_feeds(g, want, &n_feeds);
	o.feeds = feeds;
	o.n_feeds = n_feeds;
	got = fl_interp_run(back, &o, &err);
	if (!got)
		fail_msg("%s: interpreting the import: %s", sample, err.msg);
	compare_outputs(sample, g, want, back, got);
	free(feeds);
	fl_values_free(got);
	fl_values_free(want);
	fl_graph_free(back);
	free(bytes);
	fl_graph_free(g);
}

static void test_onnx_round_trip_every_sample(void **state)
{
	static const char *const sanitized[] = {"apollo_fig3", "deepfm"};
	char names[64][64];
	int n = t_sample_names(names, 64);

	(void)state;
	if (T_SANITIZED) {	/* two: a plain chain, and gathers */
		for (size_t i = 0; i < sizeof sanitized / sizeof *sanitized; i++)
			round_trip(sanitized[i]);
		return;
	}
	assert_true(n >= 20);
	for (int i = 0; i < n; i++)
		round_trip(names[i]);
}

/* The real architectures of tests/models (tiny configurations of make
 * zoo's, exported by PyTorch): exported again by fuselab, the export
 * reads back and computes ONNX Runtime's outputs.  The importer's helper
 * tensors (a convolution's padding, say) once had empty names, which
 * made the export's nodes nameless and its re-import fail. */
static void test_onnx_round_trip_zoo_models(void **state)
{
	static const char *const models[] = {
		"zoo_tiny_resnet", "zoo_tiny_vit", "zoo_tiny_convnext",
		"zoo_tiny_whisper_encoder"};
	int n = T_SANITIZED ? 1 : (int)(sizeof models / sizeof *models);
	char dir[600], file[600], args[2400], *out;

	(void)state;
	snprintf(file, sizeof file, "/tmp/fl-zoo-roundtrip-%d.onnx",
		 (int)getpid());
	for (int k = 0; k < n; k++) {
		snprintf(dir, sizeof dir, "%s/tests/models/%s", t_repo_root(),
			 models[k]);
		snprintf(args, sizeof args, "--batch --export-onnx %s %s/model.onnx",
			 file, dir);
		if (t_fuselab(args, &out) != 0)
			fail_msg("%s: export:\n%s", models[k], out);
		free(out);
		snprintf(args, sizeof args, "--batch --inputs %s/test_data_set_0 "
			 "--expect %s/test_data_set_0 %s", dir, dir, file);
		if (t_fuselab(args, &out) != 0)
			fail_msg("%s: the export against ONNX Runtime's "
				 "outputs:\n%s", models[k], out);
		t_assert_contains(out, ": ok (max abs error");
		free(out);
	}
	unlink(file);
}

FL_SUITE(onnx_roundtrip,
	 cmocka_unit_test(test_onnx_round_trip_every_sample),
	 cmocka_unit_test(test_onnx_round_trip_zoo_models));
