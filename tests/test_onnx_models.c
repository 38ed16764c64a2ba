/* ONNX import of models in the shapes users bring them (issue 29): the
 * models are written by tests/onnx_user_models.py with python3-onnx, the
 * numbers checked with --expect against numpy's: unused opset domains,
 * symbolic dims without value_info, If with a known condition, Pad's
 * border modes, com.microsoft operators, and the one summary line for
 * what stays opaque. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* Writes the model (and data) of `name` into a new folder dir. */
static void make_model(const char *name, char *dir, size_t n)
{
	char cmd[512], *out;

	t_make_dir(dir, n);
	snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tests/onnx_user_models.py "
		 "%s %s", t_repo_root(), name, dir);
	if (t_run(cmd, &out) != 0)
		fail_msg("onnx_user_models.py %s: %s", name, out);
	free(out);
}

/* fuselab ARGS DIR/model.onnx; its status must be `status`; the output
 * (malloc'd) in *out. */
static void run_model(const char *dir, const char *args, int status,
		      char **out)
{
	char cmd[1024];
	int rc;

	snprintf(cmd, sizeof cmd, "%s %s/model.onnx", args, dir);
	rc = t_fuselab(cmd, out);
	if (rc != status)
		fail_msg("fuselab %s: status %d, not %d:\n%s", cmd, rc, status,
			 *out);
}

/* The interpreter's outputs of model file `file` of case `name` against
 * numpy's: every one "ok". */
static void numbers_match_in(const char *name, const char *file,
			     const char *shapes, int n_out)
{
	char dir[64], args[512], *out, *p;
	int ok = 0, rc;

	make_model(name, dir, sizeof dir);
	snprintf(args, sizeof args, "--batch %s --inputs %s/data --expect "
		 "%s/data %s/%s", shapes, dir, dir, dir, file);
	rc = t_fuselab(args, &out);
	if (rc != 0)
		fail_msg("fuselab %s: status %d:\n%s", args, rc, out);
	for (p = out; (p = strstr(p, ": ok (")); p++)
		ok++;
	if (ok != n_out || strstr(out, "MISMATCH"))
		fail_msg("%s: %d of %d outputs ok:\n%s", name, ok, n_out, out);
	free(out);
	t_remove_dir(dir);
}

static void numbers_match(const char *name, const char *shapes, int n_out)
{
	numbers_match_in(name, "model.onnx", shapes, n_out);
}

/* --check of the model prints `needle` (status 0). */
static void check_prints(const char *name, const char *args, int status,
			 const char *needle)
{
	char dir[64], all[256], *out;

	make_model(name, dir, sizeof dir);
	snprintf(all, sizeof all, "--check %s", args);
	run_model(dir, all, status, &out);
	t_assert_contains(out, needle);
	free(out);
	t_remove_dir(dir);
}

/* Silero VAD declares eight opset domains no node uses: accepted; a
 * node of a domain fuselab does not know is opaque, not a refusal. */
static void test_onnx_import_user_unused_domains(void **state)
{
	(void)state;
	numbers_match("unused_domains_runs", "--input-shape x=2,3", 1);
	check_prints("unused_domains", "", 0,
		     "model.onnx: 1 op cannot be modelled and is opaque: "
		     "Frobnicate x1 (domain com.example)");
}

/* No value_info, inputs with named and unk__N dims, outputs declared
 * with unk__N dims or no shape: --input-shape and fuselab's own shape
 * inference give every extent; the value_info ONNX shape inference
 * writes into the same model (symbolic dims) changes nothing; a symbolic batch dim given for one input
 * is given for every input naming it. */
static void test_onnx_import_user_symbolic_dims(void **state)
{
	(void)state;
	numbers_match("symbolic", "--input-shape x=2,3,6,5", 2);
	numbers_match_in("symbolic", "inferred.onnx",
			 "--input-shape x=2,3,6,5", 2);
	numbers_match("shared_param", "--input-shape a=3,4", 1);
}

/* An opaque op needs its output's extents: a symbolic dim nothing
 * gives is named in the error (following the advice to run shape
 * inference would not help). */
static void test_onnx_import_user_symbolic_opaque(void **state)
{
	(void)state;
	check_prints("symbolic_opaque", "--input-shape x=2,3", 2,
		     "its output y has no shape in the model: it declares the "
		     "symbolic dim \"unk__5\", which no graph input's "
		     "--input-shape gives");
}

/* If on a shape test folded at import is inlined (branch initializers,
 * outer values, the else branch returning an outer value that is also
 * a graph output, an opaque op in the branch read by the outer graph,
 * counted for its own op type); an If decided at run time is opaque,
 * shaped by its branches' declared outputs. */
static void test_onnx_import_user_if_inlined(void **state)
{
	char dir[64], *out;

	(void)state;
	numbers_match("if_known", "--input-shape x=1,4", 1);
	numbers_match("if_else_output", "", 1);
	check_prints("if_runtime", "", 0,
		     "1 op cannot be modelled and is opaque: If x1 (condition "
		     "computed at run time)\n");
	check_prints("if_opaque_branch", "", 0,
		     "1 op cannot be modelled and is opaque: Frobnicate x1 "
		     "(domain com.example)\n");
	make_model("if_known", dir, sizeof dir);
	run_model(dir, "--batch --input-shape x=1,4", 0, &out);
	if (strstr(out, "opaque"))
		fail_msg("an If with a known condition is opaque:\n%s", out);
	free(out);
	t_remove_dir(dir);
}

/* A node whose later output is read but not computed by its mapping
 * (an inference BatchNormalization's running mean) is opaque as a whole,
 * where it was an error; with only output 0 read it is mapped.
 * LayerNormalization's Mean and Dropout's mask are computed. */
static void test_onnx_import_user_later_outputs(void **state)
{
	char dir[64], *out;

	(void)state;
	make_model("later_output", dir, sizeof dir);
	run_model(dir, "--check", 0, &out);
	t_assert_contains(out, "2 ops cannot be modelled and are opaque: "
			  "BatchNormalization x2 (output 1 is read)\n");
	t_assert_contains(out, "BatchNormalization     x2    -> batchnorm, "
			  "custom x2");
	t_assert_contains(out, "LayerNormalization     x1    -> rsqrt+square+"
			  "add+sub+mul+reduce_sum");
	t_assert_contains(out, "Dropout                x1    -> copy\n");
	free(out);
	t_remove_dir(dir);
}

/* An operand computed at run time (Reshape's shape from an input) makes
 * the node opaque when the model declares its output's shape, else the
 * error names why it cannot be modelled. */
static void test_onnx_import_user_runtime_operand(void **state)
{
	char dir[64], args[256], *out;

	(void)state;
	check_prints("runtime_shape", "", 0,
		     "1 op cannot be modelled and is opaque: Reshape x1 (input "
		     "1 computed at run time)\n");
	make_model("runtime_shape", dir, sizeof dir);
	snprintf(args, sizeof args, "--check %s/undeclared.onnx", dir);
	assert_int_equal(t_fuselab(args, &out), 2);
	t_assert_contains(out, "node rs (Reshape): Reshape (input 1 computed "
			  "at run time) cannot be modelled, and its output y "
			  "has no shape in the model");
	free(out);
	t_remove_dir(dir);
}

/* Pad's reflect and edge modes compute numpy's np.pad; a mode fuselab
 * cannot model is opaque, each mode named once (also when the mapping
 * had made a const tensor of an initializer first: it is undone). */
static void test_onnx_import_user_pad_modes(void **state)
{
	(void)state;
	numbers_match("pad_modes", "", 2);
	check_prints("pad_wrap", "", 0,
		     "4 ops cannot be modelled and are opaque: Pad x4 (mode "
		     "wrap; mode mirror)\n");
}

/* The com.microsoft operators ONNX Runtime's optimizer writes compute
 * what numpy does with the contrib ops' semantics and defaults. */
static void test_onnx_import_user_msft_ops(void **state)
{
	(void)state;
	numbers_match("msft", "", 18);
}

/* Their kernels, under every strategy, compute what the interpreter
 * does (the compound ops they become open and fuse like any other). */
static void test_onnx_import_user_msft_ops_run(void **state)
{
	char dir[64], args[512], *out;

	(void)state;
	if (T_SANITIZED)	/* compiles kernels: the plain pass runs it */
		return;
	make_model("msft", dir, sizeof dir);
	snprintf(args, sizeof args, "--batch --run --strategy all --repeat 1 "
		 "--warmup 0 --inputs %s/data --expect %s/data", dir, dir);
	run_model(dir, args, 0, &out);
	if (strstr(out, "verified no") || !strstr(out, "verified yes"))
		fail_msg("not every strategy verified:\n%s", out);
	free(out);
	t_remove_dir(dir);
}

/* What cannot be modelled of them is opaque, listed on one line. */
static void test_onnx_import_user_msft_opaque(void **state)
{
	(void)state;
	check_prints("msft_opaque", "", 0,
		     "4 ops cannot be modelled and are opaque: FusedConv x1 "
		     "(activation Softsign), SkipLayerNormalization x2 (output "
		     "mean or inv_std_var), Attention x1\n");
}

FL_SUITE(onnx_models,
	 cmocka_unit_test(test_onnx_import_user_unused_domains),
	 cmocka_unit_test(test_onnx_import_user_symbolic_dims),
	 cmocka_unit_test(test_onnx_import_user_symbolic_opaque),
	 cmocka_unit_test(test_onnx_import_user_if_inlined),
	 cmocka_unit_test(test_onnx_import_user_later_outputs),
	 cmocka_unit_test(test_onnx_import_user_runtime_operand),
	 cmocka_unit_test(test_onnx_import_user_pad_modes),
	 cmocka_unit_test(test_onnx_import_user_msft_ops),
	 cmocka_unit_test(test_onnx_import_user_msft_ops_run),
	 cmocka_unit_test(test_onnx_import_user_msft_opaque));
