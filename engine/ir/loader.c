/* Loader for fuselab-graph/1 files (DESIGN 3).
 *
 * Three steps: parse the JSON with cJSON (reporting line and column of a
 * syntax error), build an fl_graph from it while checking each field's
 * kind and naming its JSON path, then hand the graph to fl_graph_validate
 * for the checks that need the whole graph (cycles, double writes, shape
 * inference).  Whatever fails, nothing is returned and nothing leaks. */
#include "loader.h"

#include <cJSON.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tour.h"

static const char *const tensor_fields[] = {"shape", "dtype", "role", "value",
					    "data", "doc", NULL};
static const char *const op_fields[] = {"name", "op", "in", "out", "attrs",
					"doc", NULL};
static const char *const top_fields[] = {"format", "name", "doc", "tensors",
					 "ops", "meta", "tour", NULL};

static bool in_list(const char *const *list, const char *s)
{
	for (int i = 0; list[i]; i++)
		if (strcmp(list[i], s) == 0)
			return true;
	return false;
}

int fl_json_check_fields(const cJSON *obj, const char *const *known,
			 const char *path, fl_error *err)
{
	for (const cJSON *a = obj->child; a; a = a->next) {
		if (!in_list(known, a->string)) {
			fl_error_set(err, "%s%s%s: unknown field", path,
				     *path ? "." : "",
				     fl_error_name(a->string));
			return -1;
		}
		for (const cJSON *b = a->next; b; b = b->next)
			if (strcmp(a->string, b->string) == 0) {
				fl_error_set(err, "%s%s%s: field given twice",
					     path, *path ? "." : "",
					     fl_error_name(a->string));
				return -1;
			}
	}
	return 0;
}

/* Numbers are read as doubles, exact below 2^53: integers must be below
 * FL_LOADER_INT_LIMIT in magnitude. */
#define FL_LOADER_INT_LIMIT 9.0e15

static bool is_int(const cJSON *j)
{
	double v = j->valuedouble;

	return cJSON_IsNumber(j) && isfinite(v) && v == floor(v) &&
	       fabs(v) < FL_LOADER_INT_LIMIT;
}

static bool is_huge_int(const cJSON *j)
{
	double v = j->valuedouble;

	return cJSON_IsNumber(j) && isfinite(v) && v == floor(v) &&
	       fabs(v) >= FL_LOADER_INT_LIMIT;
}

/* A number that a float holds without becoming infinite. */
static bool fits_f32(double v)
{
	return isfinite(v) && fabs(v) <= FLT_MAX;
}

static int parse_shape(const cJSON *j, const char *name, fl_shape *s,
		       fl_error *err)
{
	int n = 0;

	if (!cJSON_IsArray(j)) {
		fl_error_set(err, "tensors.%s.shape: expected a list of extents",
			     fl_error_name(name));
		return -1;
	}
	memset(s, 0, sizeof *s);
	for (const cJSON *d = j->child; d; d = d->next, n++) {
		if (n >= FL_MAX_RANK) {
			fl_error_set(err, "tensors.%s.shape: rank above %d",
				     fl_error_name(name), FL_MAX_RANK);
			return -1;
		}
		if (is_huge_int(d)) {
			fl_error_set(err, "tensors.%s.shape[%d]: %.17g is too "
				     "large: integers must be below 9e15",
				     fl_error_name(name), n, d->valuedouble);
			return -1;
		}
		if (!is_int(d)) {
			fl_error_set(err, "tensors.%s.shape[%d]: expected an integer",
				     fl_error_name(name), n);
			return -1;
		}
		if (d->valuedouble < 1) {
			fl_error_set(err,
				     "tensors.%s.shape[%d]: dimension must be >= 1, "
				     "got %.0f",
				     fl_error_name(name), n, d->valuedouble);
			return -1;
		}
		s->dim[n] = (int64_t)d->valuedouble;
	}
	s->rank = n;
	if (fl_shape_numel(s) < 0) {
		fl_error_set(err,
			     "tensors.%s.shape: element count overflows 64 bits",
			     fl_error_name(name));
		return -1;
	}
	return 0;
}

static int parse_role(const cJSON *j, const char *name, fl_role *role,
		      fl_error *err)
{
	static const struct {
		const char *s;
		fl_role r;
	} roles[] = {{"input", FL_ROLE_INPUT}, {"param", FL_ROLE_PARAM},
		     {"const", FL_ROLE_CONST}, {"output", FL_ROLE_OUTPUT},
		     {"intermediate", FL_ROLE_TEMP}};

	*role = FL_ROLE_TEMP;
	if (!j)
		return 0;
	if (cJSON_IsString(j))
		for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
			if (strcmp(roles[i].s, j->valuestring) == 0) {
				*role = roles[i].r;
				return 0;
			}
	fl_error_set(err,
		     "tensors.%s.role: expected \"input\", \"param\", \"const\", "
		     "\"output\" or \"intermediate\"",
		     fl_error_name(name));
	return -1;
}

static int check_value(const fl_tensor *t, double v, fl_error *err);

/* Flattens nested number arrays into out[0..cap-1]; counts into *n. */
static int flatten_data(const cJSON *j, double *out, int64_t cap, int64_t *n,
			const fl_tensor *t, fl_error *err)
{
	for (const cJSON *e = j->child; e; e = e->next) {
		if (cJSON_IsArray(e)) {
			if (flatten_data(e, out, cap, n, t, err) < 0)
				return -1;
			continue;
		}
		if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble)) {
			fl_error_set(err, "tensors.%s.data[%lld]: expected a number",
				     fl_error_name(t->name), (long long)*n);
			return -1;
		}
		if (check_value(t, e->valuedouble, err) < 0) {
			fl_error_prefix(err, "tensors.%s.data[%lld]",
					fl_error_name(t->name), (long long)*n);
			return -1;
		}
		if (*n < cap)
			out[*n] = e->valuedouble;
		(*n)++;
	}
	return 0;
}

/* v fits t's dtype: f32's range, an integral type's exact values, a
 * 16-bit float's exact values (0.1 is no f16: 0.0999755859375 is). */
static int check_value(const fl_tensor *t, double v, fl_error *err)
{
	if (fl_dtype_is_half(t->dtype)) {
		if (!fits_f32(v) ||
		    (double)fl_dtype_round(t->dtype, (float)v) != v) {
			fl_error_set(err, "%g is not a %s value", v,
				     fl_dtype_name(t->dtype));
			return -1;
		}
		return 0;
	}
	if (t->dtype == FL_F32 && !fits_f32(v)) {
		fl_error_set(err, "%g does not fit in f32 (largest magnitude "
			     "%g)", v, (double)FLT_MAX);
		return -1;
	}
	if (fl_dtype_is_int(t->dtype) &&
	    (v != floor(v) || fl_dtype_from_float(t->dtype, v) != v)) {
		fl_error_set(err, "%g is not a %s value", v,
			     fl_dtype_name(t->dtype));
		return -1;
	}
	return 0;
}

/* Stores n values in t: as floats, or exactly as integers. */
static int store_values(fl_tensor *t, const double *v, int64_t n)
{
	size_t cnt = (size_t)(n > 0 ? n : 1);

	if (!fl_dtype_is_int(t->dtype))
		t->data = malloc(cnt * sizeof *t->data);
	else
		t->ints = malloc(cnt * sizeof *t->ints);
	if (!t->data && !t->ints)
		return -1;
	for (int64_t i = 0; i < n; i++)
		if (t->data)
			t->data[i] = (float)v[i];
		else
			t->ints[i] = (int64_t)v[i];
	t->n_data = n;
	return 0;
}

static int oom(const fl_tensor *t, fl_error *err)
{
	fl_error_set(err, "tensors.%s: out of memory", fl_error_name(t->name));
	return -1;
}

static int parse_const(const cJSON *j, fl_tensor *t, fl_error *err)
{
	double *vals;
	const cJSON *value = cJSON_GetObjectItemCaseSensitive(j, "value");
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(j, "data");
	int64_t numel = fl_shape_numel(&t->shape), n = 0;

	if (t->role != FL_ROLE_CONST) {
		if (value || data) {
			fl_error_set(err, "tensors.%s.%s: only const tensors carry "
				     "values", fl_error_name(t->name),
				     value ? "value" : "data");
			return -1;
		}
		return 0;
	}
	if ((value != NULL) == (data != NULL)) {
		fl_error_set(err, "tensors.%s: a const needs exactly one of "
			     "\"value\" or \"data\"", fl_error_name(t->name));
		return -1;
	}
	if (value) {
		if (!cJSON_IsNumber(value) || !isfinite(value->valuedouble)) {
			fl_error_set(err, "tensors.%s.value: expected a number",
				     fl_error_name(t->name));
			return -1;
		}
		if (check_value(t, value->valuedouble, err) < 0) {
			fl_error_prefix(err, "tensors.%s.value",
					fl_error_name(t->name));
			return -1;
		}
		return store_values(t, &value->valuedouble, 1) < 0 ? oom(t, err)
								   : 0;
	}
	if (!cJSON_IsArray(data)) {
		fl_error_set(err, "tensors.%s.data: expected a list of numbers",
			     fl_error_name(t->name));
		return -1;
	}
	if (numel > (int64_t)16 << 20) {
		fl_error_set(err, "tensors.%s.data: %lld values is more than a "
			     "graph file may carry (16M)",
			     fl_error_name(t->name),
			     (long long)numel);
		return -1;
	}
	vals = malloc((size_t)(numel > 0 ? numel : 1) * sizeof *vals);
	if (!vals)
		return oom(t, err);
	if (flatten_data(data, vals, numel, &n, t, err) < 0)
		goto fail;
	if (n != numel) {
		fl_error_set(err, "tensors.%s.data: %lld values for shape with "
			     "%lld elements", fl_error_name(t->name),
			     (long long)n,
			     (long long)numel);
		goto fail;
	}
	if (store_values(t, vals, numel) < 0) {
		oom(t, err);
		goto fail;
	}
	free(vals);
	return 0;
fail:
	free(vals);
	return -1;
}
static int parse_tensor(fl_graph *g, const cJSON *j, fl_error *err)
{
	const char *name = j->string;
	const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(j, "dtype");
	const cJSON *shape = cJSON_GetObjectItemCaseSensitive(j, "shape");
	char path[300];
	fl_shape s;
	fl_role role;
	int t;

	if (!*name) {
		fl_error_set(err, "tensors: empty tensor name");
		return -1;
	}
	if (!cJSON_IsObject(j)) {
		fl_error_set(err, "tensors.%s: expected an object",
			     fl_error_name(name));
		return -1;
	}
	snprintf(path, sizeof path, "tensors.%s", name);
	if (fl_json_check_fields(j, tensor_fields, path, err) < 0)
		return -1;
	if (!shape) {
		fl_error_set(err, "tensors.%s.shape: missing",
			     fl_error_name(name));
		return -1;
	}
	if (parse_shape(shape, name, &s, err) < 0)
		return -1;
	if (dtype && !(cJSON_IsString(dtype) &&
		       fl_dtype_parse(dtype->valuestring) >= 0)) {
		fl_error_set(err, "tensors.%s.dtype: expected one of \"f32\", "
			     "\"bool\", \"i8\", \"u8\", \"i16\", \"u16\", "
			     "\"i32\", \"u32\", \"i64\", \"u64\", \"f16\", "
			     "\"bf16\"",
			     fl_error_name(name));
		return -1;
	}
	if (parse_role(cJSON_GetObjectItemCaseSensitive(j, "role"), name,
		       &role, err) < 0)
		return -1;
	t = fl_graph_add_tensor(g, name, &s, role, err);
	if (t < 0) {
		fl_error_prefix(err, "tensors.%s", fl_error_name(name));
		return -1;
	}
	g->tensors[t].declared = true;
	if (dtype) {
		g->tensors[t].dtype = (fl_dtype)fl_dtype_parse(dtype->valuestring);
		g->tensors[t].dtype_declared = true;
	}
	return parse_const(j, &g->tensors[t], err);
}

static int parse_tensors(fl_graph *g, const cJSON *j, fl_error *err)
{
	if (!j) {
		fl_error_set(err, "tensors: missing (declare at least the inputs "
			     "and outputs)");
		return -1;
	}
	if (!cJSON_IsObject(j)) {
		fl_error_set(err, "tensors: expected an object of name -> tensor");
		return -1;
	}
	for (const cJSON *a = j->child; a; a = a->next)
		for (const cJSON *b = a->next; b; b = b->next)
			if (strcmp(a->string, b->string) == 0) {
				fl_error_set(err, "tensors.%s: tensor declared twice",
					     fl_error_name(a->string));
				return -1;
			}
	for (const cJSON *e = j->child; e; e = e->next)
		if (parse_tensor(g, e, err) < 0)
			return -1;
	return 0;
}

static int parse_attr(fl_attrs *attrs, const cJSON *a, fl_error *err)
{
	double vals[64];
	int n = 0;

	if (cJSON_IsBool(a))
		return fl_attrs_set_bool(attrs, a->string, cJSON_IsTrue(a));
	if (cJSON_IsNumber(a))
		return fl_attrs_set_number(attrs, a->string, a->valuedouble);
	if (cJSON_IsString(a))
		return fl_attrs_set_string(attrs, a->string, a->valuestring);
	if (cJSON_IsArray(a)) {
		for (const cJSON *e = a->child; e; e = e->next, n++) {
			if (n >= 64) {
				fl_error_set(err, "attrs.%s: more than 64 values",
					     fl_error_name(a->string));
				return -2;
			}
			if (!cJSON_IsNumber(e)) {
				fl_error_set(err, "attrs.%s[%d]: expected a number",
					     fl_error_name(a->string), n);
				return -2;
			}
			vals[n] = e->valuedouble;
		}
		return fl_attrs_set_list(attrs, a->string, vals, n);
	}
	fl_error_set(err, "attrs.%s: expected a number, a bool, a string or a "
		     "list of numbers", fl_error_name(a->string));
	return -2;
}

static int parse_attrs(fl_op *op, const cJSON *j, fl_error *err)
{
	if (!j)
		return 0;
	if (!cJSON_IsObject(j)) {
		fl_error_set(err, "attrs: expected an object");
		return -1;
	}
	for (const cJSON *a = j->child; a; a = a->next) {
		int rc = parse_attr(&op->attrs, a, err);

		if (rc == -1)
			fl_error_set(err, "attrs.%s: out of memory",
				     fl_error_name(a->string));
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* Collects the names of op j's "out" (a string or a list of strings). */
static int out_names(const cJSON *out, const char **names, int max, int *n,
		     fl_error *err)
{
	*n = 0;
	if (cJSON_IsString(out)) {
		names[(*n)++] = out->valuestring;
		return 0;
	}
	if (!cJSON_IsArray(out) || !out->child) {
		fl_error_set(err, "out: expected a tensor name or a list of names");
		return -1;
	}
	for (const cJSON *e = out->child; e; e = e->next) {
		if (!cJSON_IsString(e) || !*e->valuestring) {
			fl_error_set(err, "out[%d]: expected a tensor name", *n);
			return -1;
		}
		if (*n >= max) {
			fl_error_set(err, "out: more than %d outputs", max);
			return -1;
		}
		names[(*n)++] = e->valuestring;
	}
	return 0;
}

/* Creates the tensors that ops write without a declaration, so that ops
 * may read tensors written by ops later in the file. */
static int declare_op_outputs(fl_graph *g, const cJSON *ops, fl_error *err)
{
	int i = 0;

	for (const cJSON *j = ops->child; j; j = j->next, i++) {
		const cJSON *out = cJSON_GetObjectItemCaseSensitive(j, "out");
		const char *names[8];
		int n;

		if (!cJSON_IsObject(j)) {
			fl_error_set(err, "ops[%d]: expected an object", i);
			return -1;
		}
		if (!out) {
			fl_error_set(err, "ops[%d].out: missing", i);
			return -1;
		}
		if (out_names(out, names, 8, &n, err) < 0) {
			fl_error_prefix(err, "ops[%d].", i);
			return -1;
		}
		for (int k = 0; k < n; k++) {
			if (!*names[k]) {
				fl_error_set(err, "ops[%d].out: empty tensor name", i);
				return -1;
			}
			if (fl_graph_find_tensor(g, names[k]) < 0 &&
			    fl_graph_add_tensor(g, names[k], NULL, FL_ROLE_TEMP,
						err) < 0)
				return -1;
		}
	}
	return 0;
}

static int resolve_names(const fl_graph *g, const char **names, int n,
			 int *idx, const char *field, bool list,
			 fl_error *err)
{
	for (int k = 0; k < n; k++) {
		idx[k] = fl_graph_find_tensor(g, names[k]);
		if (idx[k] < 0) {
			if (list)
				fl_error_set(err, "%s[%d]: unknown tensor \"%s\"",
					     field, k, fl_error_name(names[k]));
			else
				fl_error_set(err, "%s: unknown tensor \"%s\"",
					     field, fl_error_name(names[k]));
			return -1;
		}
		for (int m = 0; m < k && !strcmp(field, "out"); m++)
			if (idx[m] == idx[k]) {
				fl_error_set(err, "out: tensor \"%s\" is written "
					     "twice by this op",
					     fl_error_name(names[k]));
				return -1;
			}
	}
	return 0;
}

static int op_inputs(const cJSON *in, const char **names, int max, int *n,
		     fl_error *err)
{
	*n = 0;
	if (!in) {
		fl_error_set(err, "in: missing");
		return -1;
	}
	if (!cJSON_IsArray(in)) {
		fl_error_set(err, "in: expected a list of tensor names");
		return -1;
	}
	for (const cJSON *e = in->child; e; e = e->next) {
		if (*n >= max) {
			fl_error_set(err, "in: more than %d inputs", max);
			return -1;
		}
		if (!cJSON_IsString(e)) {
			fl_error_set(err, "in[%d]: expected a tensor name", *n);
			return -1;
		}
		names[(*n)++] = e->valuestring;
	}
	return 0;
}

static int parse_op(fl_graph *g, const cJSON *j, fl_error *err)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "op");
	const char *in_names[64], *out_n[8];
	int in[64], out[8], n_in, n_out, i;
	const fl_op_info *info;

	if (fl_json_check_fields(j, op_fields, "", err) < 0)
		return -1;
	if (!cJSON_IsString(name) || !*name->valuestring) {
		fl_error_set(err, "name: %s", name ? "expected a non-empty string"
						   : "missing");
		return -1;
	}
	if (!cJSON_IsString(kind)) {
		fl_error_set(err, "op: %s", kind ? "expected an op name" : "missing");
		return -1;
	}
	info = fl_op_lookup(kind->valuestring);
	if (!info) {
		fl_error_set(err, "op: unknown op \"%s\" (fuselab --list-ops "
			     "shows the known ones)",
			     fl_error_name(kind->valuestring));
		return -1;
	}
	if (fl_graph_find_op(g, name->valuestring) >= 0) {
		fl_error_set(err, "name: duplicate op name \"%s\"",
			     fl_error_name(name->valuestring));
		return -1;
	}
	if (op_inputs(cJSON_GetObjectItemCaseSensitive(j, "in"), in_names, 64,
		      &n_in, err) < 0 ||
	    resolve_names(g, in_names, n_in, in, "in", true, err) < 0)
		return -1;
	if (out_names(cJSON_GetObjectItemCaseSensitive(j, "out"), out_n, 8,
		      &n_out, err) < 0 ||
	    resolve_names(g, out_n, n_out, out, "out", false, err) < 0)
		return -1;
	i = fl_graph_add_op(g, name->valuestring, info->kind, in, n_in, out,
			    n_out, err);
	if (i < 0)
		return -1;
	return parse_attrs(&g->ops[i], cJSON_GetObjectItemCaseSensitive(j, "attrs"),
			   err);
}

static int parse_ops(fl_graph *g, const cJSON *ops, fl_error *err)
{
	int i = 0;

	if (!ops) {
		fl_error_set(err, "ops: missing");
		return -1;
	}
	if (!cJSON_IsArray(ops)) {
		fl_error_set(err, "ops: expected a list of ops");
		return -1;
	}
	if (!ops->child) {
		fl_error_set(err, "ops: the graph has no ops");
		return -1;
	}
	if (declare_op_outputs(g, ops, err) < 0)
		return -1;
	for (const cJSON *j = ops->child; j; j = j->next, i++)
		if (parse_op(g, j, err) < 0) {
			fl_error_prefix(err, "ops[%d].", i);
			return -1;
		}
	return 0;
}

static int parse_header(fl_graph *g, const cJSON *root, fl_error *err)
{
	const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
	const cJSON *doc = cJSON_GetObjectItemCaseSensitive(root, "doc");

	if (!format) {
		fl_error_set(err, "format: missing (expected \"%s\")",
			     FL_GRAPH_FORMAT);
		return -1;
	}
	if (!cJSON_IsString(format) ||
	    strcmp(format->valuestring, FL_GRAPH_FORMAT) != 0) {
		fl_error_set(err, "format: expected \"%s\"", FL_GRAPH_FORMAT);
		return -1;
	}
	if (fl_json_check_fields(root, top_fields, "", err) < 0)
		return -1;
	if (name && !cJSON_IsString(name)) {
		fl_error_set(err, "name: expected a string");
		return -1;
	}
	if (doc && !cJSON_IsString(doc)) {
		fl_error_set(err, "doc: expected a string");
		return -1;
	}
	if (name) {
		free(g->name);
		g->name = strdup(name->valuestring);
	}
	if (doc)
		g->doc = strdup(doc->valuestring);
	if (!g->name || (doc && !g->doc)) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	return 0;
}

/* Line and column (1-based) of byte offset `off` in text. */
static void line_col(const char *text, size_t off, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off && text[i]; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* What cJSON does not say: the offset where arrays and objects first nest
 * deeper than its limit (or len), and the offset of the first NUL in the
 * text or \u0000 in a string (or len), which would cut a string short. */
static void scan_json(const char *text, size_t len, size_t *too_deep,
		      size_t *nul)
{
	bool in_str = false;
	size_t depth = 0;

	*too_deep = *nul = len;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];

		if (c == '\0') {
			if (*nul == len)
				*nul = i;
		} else if (in_str) {
			if (c == '"')
				in_str = false;
			else if (c == '\\' && i + 1 < len) {
				if (text[i + 1] == 'u' && i + 5 < len &&
				    !strncmp(text + i + 2, "0000", 4) &&
				    *nul == len)
					*nul = i;
				i++;
			}
		} else if (c == '"') {
			in_str = true;
		} else if (c == '[' || c == '{') {
			if (++depth > CJSON_NESTING_LIMIT && *too_deep == len)
				*too_deep = i;
		} else if ((c == ']' || c == '}') && depth) {
			depth--;
		}
	}
}

cJSON *fl_json_parse(const char *text, size_t len, fl_error *err)
{
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	size_t too_deep, nul;
	int line, col;

	scan_json(text, len, &too_deep, &nul);
	if (nul < len) {
		line_col(text, nul, &line, &col);
		fl_error_set(err, "line %d, column %d: %s: names and strings "
			     "may not contain NUL characters", line, col,
			     text[nul] ? "\\u0000 in a string" : "NUL byte");
		cJSON_Delete(root);
		return NULL;
	}
	if (root)
		return root;
	if (!end || end < text || end > text + len)
		end = text + len;
	if (too_deep < len && too_deep <= (size_t)(end - text)) {
		line_col(text, too_deep, &line, &col);
		fl_error_set(err, "line %d, column %d: nesting deeper than %d "
			     "levels", line, col, CJSON_NESTING_LIMIT);
		return NULL;
	}
	line_col(text, (size_t)(end - text), &line, &col);
	fl_error_set(err, "line %d, column %d: malformed JSON", line, col);
	return NULL;
}

/* The tour is the explorer's (tour.h), but a bad one is the file's error:
 * it is checked here, with the rest, and dropped. */
static int check_tour(const cJSON *root, fl_error *err)
{
	fl_tour *t = fl_tour_from_json(cJSON_GetObjectItemCaseSensitive(root,
									"tour"),
				       err);

	fl_tour_free(t);
	return t ? 0 : -1;
}

fl_graph *fl_load_graph_string(const char *text, size_t len,
			       const char *source, fl_error *err)
{
	cJSON *root = fl_json_parse(text, len, err);
	fl_graph *g = NULL;

	if (!root)
		goto fail;
	if (!cJSON_IsObject(root)) {
		fl_error_set(err, "expected a JSON object at the top");
		goto fail;
	}
	g = fl_graph_new(source);
	if (!g) {
		fl_error_set(err, "out of memory");
		goto fail;
	}
	if (parse_header(g, root, err) < 0 ||
	    parse_tensors(g, cJSON_GetObjectItemCaseSensitive(root, "tensors"),
			  err) < 0 ||
	    parse_ops(g, cJSON_GetObjectItemCaseSensitive(root, "ops"), err) < 0 ||
	    fl_graph_validate(g, err) < 0 || check_tour(root, err) < 0)
		goto fail;
	cJSON_Delete(root);
	return g;
fail:
	fl_error_prefix(err, "%s", source);
	cJSON_Delete(root);
	fl_graph_free(g);
	return NULL;
}

char *fl_read_file(const char *path, size_t max_bytes, const char *what,
		   size_t *len, fl_error *err)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	char *text = NULL;

	if (!f) {
		fl_error_set(err, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode)) {
		fl_error_set(err, "%s: not a regular file", path);
		goto out;
	}
	if ((uint64_t)st.st_size > max_bytes) {
		fl_error_set(err, "%s: file is %lld bytes, more than the %zu MiB "
			     "%s may have", path, (long long)st.st_size,
			     max_bytes >> 20, what);
		goto out;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		fl_error_set(err, "%s: out of memory", path);
		goto out;
	}
	*len = fread(text, 1, (size_t)st.st_size, f);
	if (ferror(f)) {
		fl_error_set(err, "%s: read error: %s", path, strerror(errno));
		free(text);
		text = NULL;
		goto out;
	}
	text[*len] = '\0';
out:
	fclose(f);
	return text;
}

fl_graph *fl_load_graph_file(const char *path, fl_error *err)
{
	size_t len;
	char *text = fl_read_file(path, FL_LOADER_MAX_FILE_BYTES,
				  "a graph file", &len, err);
	fl_graph *g;

	if (!text)
		return NULL;
	g = fl_load_graph_string(text, len, path, err);
	free(text);
	return g;
}
