/* --bind-inputs / --bind (bind.h). */
#include "bind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"

void fl_app_given_free(fl_app_given *g)
{
	for (int k = 0; k < g->n; k++) {
		free((char *)g->in[k].name);
		free((char *)g->in[k].source);
		fl_onnx_values_free(&g->values[k]);
	}
	free(g->in);
	free(g->values);
	memset(g, 0, sizeof *g);
}

/* Reads `path` into a new entry of g for input `name` (NULL: the name
 * the file holds) at `position` (-1: by name only). */
static int add_file(fl_app_given *g, const char *path, const char *name,
		    int position, fl_error *err)
{
	fl_onnx_given_input *in = realloc(g->in, (size_t)(g->n + 1) * sizeof *in);
	fl_onnx_values *v;
	char *held = NULL;

	if (in)
		g->in = in;
	v = realloc(g->values, (size_t)(g->n + 1) * sizeof *v);
	if (v)
		g->values = v;
	if (!in || !v) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	if (fl_onnx_read_tensor_file(path, &g->values[g->n], &held, err) < 0)
		return -1;
	in = &g->in[g->n];
	in->name = name ? strdup(name) : held;
	if (name)
		free(held);
	in->source = strdup(path);
	in->position = position;
	g->n++;
	if (!in->name || !in->source) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	return 0;
}

/* DIR/input_0.pb, input_1.pb, ... up to the first missing one. */
static int add_dir(fl_app_given *g, const char *dir, fl_error *err)
{
	char path[4096];

	for (int k = 0;; k++) {
		snprintf(path, sizeof path, "%s/input_%d.pb", dir, k);
		if (access(path, F_OK) != 0) {
			if (k > 0)
				return 0;
			fl_error_set(err, "--bind-inputs %s: no input_0.pb "
				     "there", fl_error_name(dir));
			return -1;
		}
		if (add_file(g, path, NULL, k, err) < 0)
			return -1;
	}
}

/* --bind NAME=FILE (the option parser checked the '='). */
static int add_named(fl_app_given *g, const char *arg, fl_error *err)
{
	const char *eq = strchr(arg, '=');
	char *name = strndup(arg, (size_t)(eq - arg));
	int rc;

	if (!name) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	rc = add_file(g, eq + 1, name, -1, err);
	free(name);
	return rc;
}

int fl_app_given_load(const fl_options *o, fl_app_given *g, fl_error *err)
{
	memset(g, 0, sizeof *g);
	if (o->bind_dir && add_dir(g, o->bind_dir, err) < 0)
		goto fail;
	for (int k = 0; k < o->n_bind; k++)
		if (add_named(g, o->bind[k], err) < 0)
			goto fail;
	/* the array may have moved while it grew */
	for (int k = 0; k < g->n; k++)
		g->in[k].values = &g->values[k];
	return 0;
fail:
	fl_app_given_free(g);
	return -1;
}

void fl_app_print_bound(const char *path, const fl_onnx_info *info)
{
	const char *sep = "";

	if (!info->n_bound) {
		fprintf(stderr, "fuselab: %s: no input is needed at import, "
			"none bound\n", fl_safe_name(path));
		return;
	}
	fprintf(stderr, "fuselab: %s: bound at import to their given values:",
		fl_safe_name(path));
	for (int k = 0; k < info->n_bound; k++, sep = ",")
		fprintf(stderr, "%s %s (input %d)", sep,
			fl_safe_name(info->bound[k].name),
			info->bound[k].position);
	fputc('\n', stderr);
}
