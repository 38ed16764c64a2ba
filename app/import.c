/* The loader choice and the ONNX summaries (import.h). */
#include "import.h"

#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "bind.h"
#include "loader.h"

/* "NAME=d1,d2,..." (checked by the option parser) into s and a
 * malloc'd name; -1 when the extents' product overflows or memory runs
 * out. */
static int parse_input_shape(const char *arg, char **name, fl_shape *s,
			     fl_error *err)
{
	const char *eq = strrchr(arg, '=');
	long dims[FL_MAX_RANK];
	int n = fl_options_parse_numbers(eq + 1, dims, FL_MAX_RANK, 1);

	*name = NULL;
	memset(s, 0, sizeof *s);
	for (int d = 0; d < n; d++)
		s->dim[s->rank++] = dims[d];
	if (fl_shape_numel(s) < 0) {
		fl_error_set(err, "--input-shape %s: more elements than a "
			     "64-bit count holds", fl_error_name(arg));
		return -1;
	}
	*name = strndup(arg, (size_t)(eq - arg));
	if (!*name) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	return 0;
}

/* One line per model for everything it keeps opaque, each op type with
 * why when the importer knows (a mode, a domain): "<file>: 3 ops cannot
 * be modelled and are opaque: Resize x2 (mode cubic), LSTM x1".
 * scripts/conformance.sh reads it to classify skips. */
static void print_custom_line(const char *path, const fl_onnx_info *info)
{
	int n = fl_onnx_info_custom_count(info);
	const char *sep = "";

	if (!n)
		return;
	fprintf(stderr, "fuselab: %s: %d op%s cannot be modelled and %s "
		"opaque:", fl_safe_name(path), n, n == 1 ? "" : "s",
		n == 1 ? "is" : "are");
	for (int k = 0; k < info->n_types; k++)
		if (info->types[k].custom) {
			fprintf(stderr, "%s %s x%d", sep,
				fl_safe_name(info->types[k].op_type),
				info->types[k].custom);
			if (info->types[k].reason)
				fprintf(stderr, " (%s)",
					fl_safe_name(info->types[k].reason));
			sep = ",";
		}
	fputc('\n', stderr);
}

static fl_graph *load_onnx(const char *path, const fl_options *o,
			   fl_onnx_info *info, fl_error *err)
{
	fl_onnx_input_shape shapes[FL_MAX_LIST];
	char *names[FL_MAX_LIST] = {NULL};
	fl_onnx_import_opts opts = {0, shapes, 0, NULL};
	fl_app_given given = {0};
	fl_onnx_info mine;
	fl_graph *g = NULL;

	for (int k = 0; k < o->n_input_shape; k++) {
		if (parse_input_shape(o->input_shape[k], &names[k],
				      &shapes[k].shape, err) < 0)
			goto out;
		shapes[k].name = names[k];
		opts.n_shapes++;
	}
	if ((o->bind_dir || o->n_bind) &&
	    fl_app_given_load(o, &given, err) < 0)
		goto out;
	opts.n_given = given.n;
	opts.given = given.in;
	g = fl_onnx_load_file(path, &opts, info ? info : &mine, err);
	if (g)
		print_custom_line(path, info ? info : &mine);
	if (g && given.n)
		fl_app_print_bound(path, info ? info : &mine);
	if (!info)
		fl_onnx_info_free(&mine);
out:
	fl_app_given_free(&given);
	for (int k = 0; k < o->n_input_shape; k++)
		free(names[k]);
	return g;
}

static fl_graph *load_any(const char *path, const fl_options *o,
			  fl_onnx_info *info, fl_error *err)
{
	if (fl_onnx_is_model_path(path))
		return load_onnx(path, o, info, err);
	if (o->n_input_shape || o->bind_dir || o->n_bind) {
		fl_error_set(err, "%s is for ONNX models, and %s is not one "
			     "(no .onnx)", o->n_input_shape ? "--input-shape"
			     : o->bind_dir ? "--bind-inputs" : "--bind", path);
		return NULL;
	}
	return fl_load_graph_file(path, err);
}

fl_graph *fl_app_load_path(const char *path, const fl_options *o,
			   fl_onnx_info *info, fl_error *err)
{
	fl_graph *g;

	if (info)
		memset(info, 0, sizeof *info);
	g = load_any(path, o, info, err);
	/* The constants are shared from now on: the explorer's copies, the
	 * engine's sessions and their snapshots all point at these
	 * values instead of copying a model's weights each time. */
	if (g && fl_graph_share_values(g, err) < 0) {
		fl_graph_free(g);
		return NULL;
	}
	return g;
}

/* "conv2d+pad", "folded", "custom", or a mix, for one op type. */
static void print_became(FILE *out, const fl_onnx_op_count *t)
{
	const char *sep = "";

	for (int k = 0; k < FL_OP_COUNT; k++)
		if (t->uses[k] && k != FL_OP_CUSTOM) {
			fprintf(out, "%s%s", sep, fl_op_kind_name(k));
			sep = "+";
		}
	if (t->folded)
		fprintf(out, "%sfolded at import x%d", *sep ? ", " : "",
			t->folded), sep = ", ";
	if (t->custom)
		fprintf(out, "%scustom x%d", *sep ? ", " : "", t->custom);
	else if (!*sep && !t->folded)
		fprintf(out, "nothing (no output is read)");
}

void fl_app_print_onnx_summary(FILE *out, const fl_onnx_info *info)
{
	int custom = fl_onnx_info_custom_count(info);

	fprintf(out, "onnx: ir_version %lld, producer %s %s\n",
		(long long)info->ir_version,
		*info->producer_name ? fl_safe_name(info->producer_name) : "-",
		fl_safe_name(info->producer_version));
	fprintf(out, "onnx opsets:");
	for (int k = 0; k < info->n_opsets; k++)
		fprintf(out, " %s %lld", *info->opsets[k].domain ?
			fl_safe_name(info->opsets[k].domain) : "ai.onnx",
			(long long)info->opsets[k].version);
	fprintf(out, "\nonnx nodes: %d, initializers: %d, custom: %d\n",
		info->n_nodes, info->n_initializers, custom);
	for (int k = 0; k < info->n_types; k++) {
		fprintf(out, "  %-22s x%-4d -> ",
			fl_safe_name(info->types[k].op_type),
			info->types[k].nodes);
		print_became(out, &info->types[k]);
		fputc('\n', out);
	}
}
