/* Export, import, same outputs: every sample written as ONNX
 * (--export-onnx) and read back by the importer computes what the sample
 * computes, in the interpreter, on the same input values.  The same for
 * every real model in tests/models (imported, exported, checked by ONNX's
 * own checker, imported again); every exported file has non-empty,
 * unique value and node names, also for a graph whose own names are
 * empty or repeated; and the importer's naming of the values it
 * invents. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interp.h"
#include "onnx.h"
#include "onnx.pb-c.h"
#include "onnx_import.h"
#include "onnx_import_impl.h"	/* fl_onnx_unique_name */
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

/* Every output of g equals the output of `back` of the same name within
 * atol + rtol |want|. */
static void compare_outputs(const char *sample, const fl_graph *g,
			    const fl_values *want, const fl_graph *back,
			    const fl_values *got, double atol, double rtol)
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
		for (int64_t i = 0; i < fl_shape_numel(&x->shape); i++) {
			double gv = got->bufs[t].data[i];
			double wv = want->bufs[out[k]].data[i];

			if (!(fabs(gv - wv) <= atol + rtol * fabs(wv)) &&
			    !(isnan(gv) && isnan(wv)))
				fail_msg("%s: output %s element %lld: %.9g after "
					 "the round trip, %.9g before", sample,
					 x->name, (long long)i, gv, wv);
		}
	}
	free(out);
}

/* g's outputs after an export to ONNX bytes (*bytes, *len; the caller
 * frees) and an import of them, on the same inputs, within atol and rtol
 * of g's own. */
static void round_trip_graph(const char *what, const fl_graph *g,
			     uint8_t **bytes, size_t *len, double atol,
			     double rtol)
{
	fl_interp_opts o;
	fl_values *want, *got;
	fl_error err = {""};
	fl_graph *back;
	fl_feed *feeds;
	int n_feeds;

	fl_interp_opts_default(&o);
	want = fl_interp_run(g, &o, &err);
	if (!want)
		fail_msg("%s: interpreting it: %s", what, err.msg);
	if (fl_export_onnx_bytes(g, bytes, len, &err) < 0)
		fail_msg("%s: export: %s", what, err.msg);
	back = fl_onnx_load_bytes(*bytes, *len, what, NULL, NULL, NULL, &err);
	if (!back)
		fail_msg("%s: import of the export: %s", what, err.msg);
	feeds = input_feeds(g, want, &n_feeds);
	o.feeds = feeds;
	o.n_feeds = n_feeds;
	got = fl_interp_run(back, &o, &err);
	if (!got)
		fail_msg("%s: interpreting the import: %s", what, err.msg);
	compare_outputs(what, g, want, back, got, atol, rtol);
	free(feeds);
	fl_values_free(got);
	fl_values_free(want);
	fl_graph_free(back);
}

static void round_trip(const char *sample)
{
	fl_graph *g = t_load_sample(sample);
	uint8_t *bytes;
	size_t len;

	/* compound ops the export opens (gelu, attention, ...) run as
	 * primitives, which round differently from the compound op's
	 * reference; a matmul after them sums the differences (gpt2_mlp:
	 * 3.5e-5 on a value of 0.18) */
	round_trip_graph(sample, g, &bytes, &len, 1e-4, 1e-3);
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

/* ---- names in an exported file ----------------------------------------- */

typedef struct name_list {
	const char **v;
	size_t n, cap;
} name_list;

static void name_add(name_list *l, const char *name)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = realloc(l->v, l->cap * sizeof *l->v);
		assert_non_null(l->v);
	}
	l->v[l->n++] = name ? name : "";
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* No name of l is empty and none comes twice; frees l. */
static void assert_distinct(const char *what, const char *kind, name_list *l)
{
	qsort(l->v, l->n, sizeof *l->v, compare_names);
	for (size_t i = 0; i < l->n; i++) {
		if (!*l->v[i])
			fail_msg("%s: an empty %s name", what, kind);
		if (i > 0 && !strcmp(l->v[i], l->v[i - 1]))
			fail_msg("%s: %s name \"%s\" twice", what, kind,
				 l->v[i]);
	}
	free(l->v);
}

/* What ONNX asks of the names of a model: every value is defined once
 * (a graph input, an initializer or a node's output) under a non-empty
 * name, every node has a non-empty name of its own, and value infos and
 * graph outputs name values. */
static void assert_names_unique(const char *what, const uint8_t *bytes,
				size_t len)
{
	Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, bytes);
	name_list values = {0}, nodes = {0}, infos = {0};
	const Onnx__GraphProto *gp;

	assert_non_null(m);
	gp = m->graph;
	for (size_t i = 0; i < gp->n_input; i++)
		name_add(&values, gp->input[i]->name);
	for (size_t i = 0; i < gp->n_initializer; i++)
		name_add(&values, gp->initializer[i]->name);
	for (size_t i = 0; i < gp->n_node; i++) {
		for (size_t k = 0; k < gp->node[i]->n_output; k++)
			name_add(&values, gp->node[i]->output[k]);
		name_add(&nodes, gp->node[i]->name);
	}
	for (size_t i = 0; i < gp->n_value_info; i++)
		name_add(&infos, gp->value_info[i]->name);
	for (size_t i = 0; i < gp->n_output; i++)
		name_add(&infos, gp->output[i]->name);
	assert_true(values.n > 0 && nodes.n > 0);
	assert_distinct(what, "value", &values);
	assert_distinct(what, "node", &nodes);
	assert_distinct(what, "value info or output", &infos);
	onnx__model_proto__free_unpacked(m, NULL);
}

/* A graph whose names the graph's own indexes would refuse, edited in
 * behind them (a graph built by hand can hold them): an empty tensor
 * name, an empty op name and an op name twice.  The export renames them;
 * the model still computes the graph. */
static void test_onnx_export_repairs_empty_and_repeated_names(void **state)
{
	fl_graph *g = t_load_q(
		"{'format': 'fuselab-graph/1', 'name': 'names', 'tensors': {"
		" 'x': {'shape': [2, 8], 'role': 'input'},"
		" 'a': {'shape': [2, 8]}, 'b': {'shape': [2, 8]},"
		" 'y': {'shape': [2, 8], 'role': 'output'}},"
		" 'ops': ["
		" {'name': 'neg', 'op': 'neg', 'in': ['x'], 'out': 'a'},"
		" {'name': 'exp', 'op': 'exp', 'in': ['a'], 'out': 'b'},"
		" {'name': 'relu', 'op': 'relu', 'in': ['b'], 'out': 'y'}]}");
	int a = fl_graph_find_tensor(g, "a");
	uint8_t *bytes;
	size_t len;

	(void)state;
	free(g->tensors[a].name);
	free(g->ops[0].name);
	free(g->ops[2].name);
	assert_non_null(g->tensors[a].name = strdup(""));
	assert_non_null(g->ops[0].name = strdup(""));
	assert_non_null(g->ops[2].name = strdup("exp"));
	round_trip_graph("names", g, &bytes, &len, 0, 0);
	assert_names_unique("names", bytes, len);
	free(bytes);
	fl_graph_free(g);
}

/* ---- real models: tests/models/<name>/ ---------------------------------- */

/* The --input-shape NAME=d1,d2,... options of <dir>/args (one or more a
 * line; a line starting with '#' is a comment; other options do not
 * change the import and are skipped) into shapes, their names kept in
 * names; returns how many. */
static int model_shapes(const char *dir, fl_onnx_input_shape *shapes,
			char names[][64], int max)
{
	char path[1024], *text, *line, *save_line;
	int n = 0;

	snprintf(path, sizeof path, "%.1000s/args", dir);
	if (access(path, R_OK) != 0)
		return 0;
	text = t_read_file(path, NULL);
	for (line = strtok_r(text, "\n", &save_line); line;
	     line = strtok_r(NULL, "\n", &save_line)) {
		char *tok, *save, *spec, *eq = NULL;

		if (line[0] == '#')
			continue;
		for (tok = strtok_r(line, " \t", &save); tok;
		     tok = strtok_r(NULL, " \t", &save)) {
			if (strcmp(tok, "--input-shape"))
				continue;
			spec = strtok_r(NULL, " \t", &save);
			if (!spec || !(eq = strchr(spec, '=')) || n >= max)
				fail_msg("%s: --input-shape %s: not NAME=d1,d2,...",
					 path, spec ? spec : "");
			snprintf(names[n], 64, "%.*s", (int)(eq - spec), spec);
			shapes[n].name = names[n];
			shapes[n].shape.rank = 0;
			for (char *d = eq; *d && shapes[n].shape.rank < FL_MAX_RANK;)
				shapes[n].shape.dim[shapes[n].shape.rank++] =
					strtoll(d + 1, &d, 10);
			n++;
		}
	}
	free(text);
	return n;
}

/* Every tensor and op of g (an import) has a non-empty name of its own:
 * the exporter would repair them, so this is what shows the importer's
 * naming in the round trip below. */
static void assert_graph_names(const char *what, const fl_graph *g)
{
	for (int i = 0; i < g->n_tensors; i++)
		if (!*g->tensors[i].name ||
		    fl_graph_find_tensor(g, g->tensors[i].name) != i)
			fail_msg("%s: tensor %d is named \"%s\", empty or "
				 "repeated", what, i, g->tensors[i].name);
	for (int i = 0; i < g->n_ops; i++)
		if (!*g->ops[i].name || fl_graph_find_op(g, g->ops[i].name) != i)
			fail_msg("%s: op %d is named \"%s\", empty or repeated",
				 what, i, g->ops[i].name);
}

/* The model at `path` imported with opts, then exported into
 * <out>/<what>.onnx, imported again and run on the same inputs: the
 * outputs agree within atol 1e-5, rtol 1e-3, and the names of the import
 * and of the file are unique and non-empty. */
static void round_trip_file(const char *what, const char *path,
			    const fl_onnx_import_opts *opts, const char *out)
{
	char file[1024];
	fl_error err = {""};
	fl_graph *g;
	uint8_t *bytes;
	size_t len;
	FILE *f;

	if (!(g = fl_onnx_load_file(path, opts, NULL, &err)))
		fail_msg("%s: %s", what, err.msg);
	assert_graph_names(what, g);
	round_trip_graph(what, g, &bytes, &len, 1e-5, 1e-3);
	assert_names_unique(what, bytes, len);
	snprintf(file, sizeof file, "%s/%s.onnx", out, what);
	assert_non_null(f = fopen(file, "wb"));
	assert_true(fwrite(bytes, 1, len, f) == len);
	assert_int_equal(fclose(f), 0);
	free(bytes);
	fl_graph_free(g);
}

/* tests/models/<name>/model.onnx, imported as the tests run it (the
 * options of its args file), through round_trip_file. */
static void round_trip_model(const char *models, const char *name,
			     const char *out)
{
	fl_onnx_input_shape shapes[8];
	char shape_names[8][64], path[1024];
	fl_onnx_import_opts opts = {0};

	snprintf(path, sizeof path, "%s/%s", models, name);
	opts.n_shapes = model_shapes(path, shapes, shape_names, 8);
	opts.shapes = shapes;
	snprintf(path, sizeof path, "%s/%s/model.onnx", models, name);
	round_trip_file(name, path, &opts, out);
}

/* ONNX's own checker (full check: strict shape inference against the
 * declared shapes) accepts the n .onnx files of dir. */
static void assert_checker_accepts(const char *dir, int n)
{
	char cmd[1024], *text = NULL;

	snprintf(cmd, sizeof cmd,
		 "/usr/bin/python3 -c 'import glob, onnx, sys\n"
		 "fs = sorted(glob.glob(sys.argv[1] + \"/*.onnx\"))\n"
		 "for f in fs:\n"
		 "    onnx.checker.check_model(onnx.load(f), full_check=True)\n"
		 "print(\"checked\", len(fs))' %s 2>&1", dir);
	if (t_run(cmd, &text) != 0)
		fail_msg("onnx.checker: %s", text);
	snprintf(cmd, sizeof cmd, "checked %d", n);
	t_assert_contains(text, cmd);
	free(text);
}

/* Every model in tests/models: the round trip above, then the checker
 * over the exported files.  Before the importer named its temporaries by
 * construction, each of these exports had values named "", ".2", ...
 * and failed both. */
static void test_onnx_round_trip_every_imported_model(void **state)
{
	char models[512], out[128];
	struct dirent *e;
	int n = 0;
	DIR *d;

	(void)state;
	snprintf(models, sizeof models, "%s/tests/models", t_repo_root());
	t_make_dir(out, sizeof out);
	assert_non_null(d = opendir(models));
	while ((e = readdir(d))) {
		char path[1024];

		snprintf(path, sizeof path, "%s/%s/model.onnx", models,
			 e->d_name);
		if (e->d_name[0] == '.' || access(path, R_OK) != 0)
			continue;
		round_trip_model(models, e->d_name, out);
		n++;
	}
	closedir(d);
	assert_true(n >= 2);
	assert_checker_accepts(out, n);
	t_remove_dir(out);
}

/* ONNX backend-test models (Debian's libonnx-testdata) whose import
 * invents values (a bias add, a normalisation opened into primitives,
 * negative indices wrapped, windows padded) or keeps one operator: the
 * same round trip and check. */
static void test_onnx_round_trip_backend_models(void **state)
{
	static const char *const models[] = {
		"test_basic_conv_with_padding",
		"test_conv_with_strides_and_asymmetric_padding",
		"test_gemm_all_attributes", "test_gemm_transposeA",
		"test_matmul_4d", "test_softmax_axis_1",
		"test_logsoftmax_negative_axis",
		"test_layer_normalization_4d_axis1_expanded",
		"test_batchnorm_epsilon", "test_instancenorm_example",
		"test_gather_negative_indices",
		"test_reduce_mean_do_not_keepdims_random",
		"test_reduce_log_sum_exp_keepdims_random",
		"test_concat_3d_axis_negative_2",
		"test_transpose_all_permutations_3",
		"test_averagepool_2d_pads", "test_maxpool_2d_same_upper",
		"test_where_example", "test_hardswish",
		"test_clip_splitbounds",
	};
	size_t n = sizeof models / sizeof *models;
	char out[128], path[512];

	(void)state;
	t_make_dir(out, sizeof out);
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof path,
			 "/usr/share/libonnx-testdata/data/node/%s/model.onnx",
			 models[i]);
		round_trip_file(models[i], path, NULL, out);
	}
	assert_checker_accepts(out, (int)n);
	t_remove_dir(out);
}

/* ---- the importer's names for the values it invents --------------------- */

/* fl_onnx_unique_name: base may be the buffer it writes (the old
 * unique_name printed into its own source and gave ""), an empty base
 * still gives a name, a suffix is added only when the name is taken, and
 * a value name the ONNX graph uses later counts as taken. */
static void test_onnx_import_unique_name(void **state)
{
	char later_name[] = "Later/out", *later_out[] = {later_name};
	Onnx__NodeProto later = ONNX__NODE_PROTO__INIT, *nodes[] = {&later};
	Onnx__GraphProto gp = ONNX__GRAPH_PROTO__INIT;
	fl_onnx_ctx c = {0};
	fl_error err = {""};
	char buf[300], longer[400];
	int t;

	(void)state;
	later.n_output = 1;
	later.output = later_out;
	gp.n_node = 1;
	gp.node = nodes;
	c.graph = &gp;
	assert_non_null(c.g = fl_graph_new("names"));
	assert_true(fl_graph_add_tensor(c.g, "Conv_0/out", NULL, FL_ROLE_TEMP,
					&err) >= 0);
	assert_true((t = fl_graph_add_tensor(c.g, "Conv_0/out_2", NULL,
					     FL_ROLE_TEMP, &err)) >= 0);
	assert_true(fl_graph_add_op(c.g, "Conv_0", FL_OP_NEG, &t, 1, &t, 1,
				    &err) >= 0);

	snprintf(buf, sizeof buf, "Conv_0/out");
	fl_onnx_unique_name(&c, buf, sizeof buf, buf, true);
	assert_string_equal(buf, "Conv_0/out_3");
	fl_onnx_unique_name(&c, buf, sizeof buf, "Free/out", true);
	assert_string_equal(buf, "Free/out");
	fl_onnx_unique_name(&c, buf, sizeof buf, "", true);
	assert_string_equal(buf, "value");
	fl_onnx_unique_name(&c, buf, sizeof buf, NULL, false);
	assert_string_equal(buf, "op");
	/* op names and tensor names are apart */
	fl_onnx_unique_name(&c, buf, sizeof buf, "Conv_0", false);
	assert_string_equal(buf, "Conv_0_2");
	fl_onnx_unique_name(&c, buf, sizeof buf, "Conv_0/out", false);
	assert_string_equal(buf, "Conv_0/out");
	/* a later node's output is not free for a tensor, nor is a bound
	 * value (an initializer, say) that is no tensor yet */
	fl_onnx_unique_name(&c, buf, sizeof buf, "Later/out", true);
	assert_string_equal(buf, "Later/out_2");
	assert_int_equal(fl_onnx_bind_tensor(&c, "Bound", -1, 1, &err), 0);
	fl_onnx_unique_name(&c, buf, sizeof buf, "Bound", true);
	assert_string_equal(buf, "Bound_2");
	/* a base too long for buf is cut so that the suffix still fits */
	memset(longer, 'a', sizeof longer - 1);
	longer[sizeof longer - 1] = '\0';
	fl_onnx_unique_name(&c, buf, sizeof buf, longer, true);
	assert_true(fl_graph_add_tensor(c.g, buf, NULL, FL_ROLE_TEMP,
					&err) >= 0);
	snprintf(longer, sizeof longer, "%s", buf);
	fl_onnx_unique_name(&c, buf, sizeof buf, buf, true);
	assert_true(strcmp(buf, longer) != 0 && strlen(buf) < sizeof buf - 1);
	assert_int_equal(strcmp(buf + strlen(buf) - 2, "_2"), 0);
	for (int i = 0; i < c.n_bind; i++)
		free(c.bind[i].name);
	free(c.bind);
	free(c.hash);
	fl_graph_free(c.g);
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
	 cmocka_unit_test(test_onnx_export_repairs_empty_and_repeated_names),
	 cmocka_unit_test(test_onnx_round_trip_every_imported_model),
	 cmocka_unit_test(test_onnx_round_trip_backend_models),
	 cmocka_unit_test(test_onnx_import_unique_name),
	 cmocka_unit_test(test_onnx_round_trip_zoo_models));
