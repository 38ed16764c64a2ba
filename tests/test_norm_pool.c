/* Normalisation statistics, Dropout's mask, and the pooling and
 * convolution forms of onnx_norm.c and onnx_ops.c: ONNX's own node tests
 * (their expected outputs are the known values) imported, interpreted
 * and compared, and every strategy's kernels compiled, run and verified
 * on the same inputs ("verified yes" once per strategy). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "onnx_import.h"
#include "ops.h"
#include "test_util.h"

#define TESTDATA "/usr/share/libonnx-testdata/data"

/* The lines of out that start "expect " and say ": ok (". */
static int outputs_ok(const char *out)
{
	int n = 0;

	for (const char *l = out; l; l = strchr(l, '\n')) {
		const char *end;

		l += *l == '\n';
		end = strchr(l, '\n');
		if (!strncmp(l, "expect ", 7) && strstr(l, ": ok (") &&
		    (!end || strstr(l, ": ok (") < end))
			n++;
	}
	return n;
}

/* ONNX backend test <group>/<test> on its first data set: every output
 * compared with ONNX's (n_outputs "expect ...: ok" lines), and every
 * strategy verified against the interpreter. */
static void backend_test_verifies(const char *group, const char *test,
				  int n_outputs)
{
	char args[2048], dir[512], *out;

	snprintf(dir, sizeof dir, TESTDATA "/%s/%s", group, test);
	snprintf(args, sizeof args, "--batch --run --strategy %s --repeat 1 "
		 "--warmup 0 --inputs %s/test_data_set_0 --expect "
		 "%s/test_data_set_0 %s/model.onnx",
		 T_SANITIZED ? "apollo" : "all", dir, dir, dir);
	if (t_fuselab(args, &out) != 0)
		fail_msg("%s:\n%s", test, out);
	if (outputs_ok(out) != n_outputs)
		fail_msg("%s: not every output compared ok:\n%s", test, out);
	if (t_occurrences(out, "verified yes") != (T_SANITIZED ? 1 : FL_STRATEGY_COUNT))
		fail_msg("%s: not every strategy verified:\n%s", test, out);
	free(out);
}

/* The op kinds of the imported node test, and whether one is custom. */
static bool imports_opaque(const char *test)
{
	char path[512];
	fl_error err = {""};
	fl_graph *g;
	bool opaque = false;

	snprintf(path, sizeof path, TESTDATA "/node/%s/model.onnx", test);
	g = fl_onnx_load_file(path, NULL, NULL, &err);
	if (!g)
		fail_msg("%s: %s", test, err.msg);
	for (int k = 0; k < g->n_ops; k++)
		opaque |= g->ops[k].kind == FL_OP_CUSTOM;
	fl_graph_free(g);
	return opaque;
}

/* ---- LayerNormalization's Mean and InvStdDev ------------------------ */

static void test_norm_pool_layernorm_stats(void **state)
{
	(void)state;
	/* over the last axis, scale and bias [5]: Y, Mean, InvStdDev */
	backend_test_verifies("node", "test_layer_normalization_default_axis",
			      3);
	/* over every axis: statistics of shape [1, 1] */
	backend_test_verifies("node", "test_layer_normalization_2d_axis0", 3);
}

/* ---- BatchNormalization in training mode ---------------------------- */

static void test_norm_pool_batchnorm_training(void **state)
{
	(void)state;
	/* y from the batch's statistics, running mean and variance */
	backend_test_verifies("node", "test_batchnorm_example_training_mode",
			      3);
}

/* ---- Dropout -------------------------------------------------------- */

static void test_norm_pool_dropout_mask(void **state)
{
	(void)state;
	/* inference: y = x, the mask all true (bool, compared exactly) */
	backend_test_verifies("node", "test_dropout_default_mask", 2);
	/* training with its mode an input: a random mask, opaque */
	assert_true(imports_opaque("test_training_dropout_mask"));
	assert_false(imports_opaque("test_dropout_default_mask"));
}

/* ---- pooling: dilations, ceil_mode, 3-D, MaxPool's Indices ---------- */

static void test_norm_pool_pool_forms(void **state)
{
	(void)state;
	/* pool2d's dilation */
	backend_test_verifies("node", "test_maxpool_2d_dilations", 1);
	/* ceil_mode 1: a last window past the floor's, its extension not
	 * counted by the average */
	backend_test_verifies("node", "test_maxpool_2d_ceil", 1);
	backend_test_verifies("node", "test_averagepool_2d_ceil", 1);
	/* 3-D: separable, with pads */
	backend_test_verifies("pytorch-converted",
			      "test_MaxPool3d_stride_padding", 1);
	backend_test_verifies("pytorch-converted", "test_AvgPool3d_stride", 1);
}

static void test_norm_pool_maxpool_indices(void **state)
{
	(void)state;
	/* int64 flat indices compared exactly: padded windows, and
	 * storage_order 1 (column-major) with strides */
	backend_test_verifies("node",
			      "test_maxpool_with_argmax_2d_precomputed_pads", 2);
	backend_test_verifies("node",
			      "test_maxpool_with_argmax_2d_precomputed_strides",
			      2);
}

/* ---- 3-D convolution ------------------------------------------------ */

static void test_norm_pool_conv_3d(void **state)
{
	(void)state;
	/* depth taps stacked into channels: groups, and strided, dilated
	 * windows (3-D pads: the MaxPool3d case above) */
	backend_test_verifies("pytorch-converted", "test_Conv3d_groups", 1);
	backend_test_verifies("pytorch-converted",
			      "test_Conv3d_dilated_strided", 1);
}

FL_SUITE(norm_pool,
	 cmocka_unit_test(test_norm_pool_layernorm_stats),
	 cmocka_unit_test(test_norm_pool_batchnorm_training),
	 cmocka_unit_test(test_norm_pool_dropout_mask),
	 cmocka_unit_test(test_norm_pool_pool_forms),
	 cmocka_unit_test(test_norm_pool_maxpool_indices),
	 cmocka_unit_test(test_norm_pool_conv_3d),
);
