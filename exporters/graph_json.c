/* fuselab-graph/1 writer (see graph_json.h for the contract). */
#include "graph_json.h"

#include <cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "loader.h"

/* Adds item under key; a NULL item (out of memory) clears *ok. */
static void put(cJSON *obj, const char *key, cJSON *item, bool *ok)
{
	if (!item || !obj || !cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(item);
		*ok = false;
	}
}

static void append(cJSON *arr, cJSON *item, bool *ok)
{
	if (!item || !arr || !cJSON_AddItemToArray(arr, item)) {
		cJSON_Delete(item);
		*ok = false;
	}
}

static cJSON *shape_json(const fl_shape *s, bool *ok)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; i < s->rank; i++)
		append(a, cJSON_CreateNumber((double)s->dim[i]), ok);
	return a;
}

/* A const's "value" (one number splatted over the shape) or "data". */
static int put_const(cJSON *o, const fl_tensor *t, bool *ok, fl_error *err)
{
	cJSON *data;

	for (int64_t i = 0; i < t->n_data; i++)
		if (!isfinite(t->data[i])) {
			fl_error_set(err, "tensors.%s: value %lld is not a "
				     "finite number, which the format cannot "
				     "hold", fl_error_name(t->name),
				     (long long)i);
			return -1;
		}
	if (t->n_data == 1) {
		put(o, "value", cJSON_CreateNumber(t->data[0]), ok);
		return 0;
	}
	data = cJSON_CreateArray();
	for (int64_t i = 0; i < t->n_data; i++)
		append(data, cJSON_CreateNumber(t->data[i]), ok);
	put(o, "data", data, ok);
	return 0;
}

/* An integral const's values, as JSON numbers (exact up to 2^53, what a
 * JSON reader's doubles hold). */
static void put_int_const(cJSON *o, const fl_tensor *t, bool *ok)
{
	cJSON *data;

	if (t->n_data == 1) {
		put(o, "value", cJSON_CreateNumber((double)t->ints[0]), ok);
		return;
	}
	data = cJSON_CreateArray();
	for (int64_t i = 0; i < t->n_data; i++)
		append(data, cJSON_CreateNumber((double)t->ints[i]), ok);
	put(o, "data", data, ok);
}

/* One entry of "tensors", or nothing (*entry NULL) for an intermediate
 * whose shape is not known yet. */
static int tensor_json(const fl_tensor *t, cJSON **entry, bool *ok,
		       fl_error *err)
{
	cJSON *o;

	*entry = NULL;
	if (!t->shape_known) {
		if (t->role == FL_ROLE_TEMP)
			return 0;
		fl_error_set(err, "tensors.%s: shape not known",
			     fl_error_name(t->name));
		return -1;
	}
	o = cJSON_CreateObject();
	*entry = o;
	put(o, "shape", shape_json(&t->shape, ok), ok);
	put(o, "dtype", cJSON_CreateString(fl_dtype_name(t->dtype)), ok);
	if (t->role != FL_ROLE_TEMP)
		put(o, "role", cJSON_CreateString(fl_role_name(t->role)), ok);
	if (t->role == FL_ROLE_CONST && t->ints)
		put_int_const(o, t, ok);
	if (t->role == FL_ROLE_CONST && t->data)
		return put_const(o, t, ok, err);
	return 0;
}

static int tensors_json(const fl_graph *g, cJSON *root, bool *ok,
			fl_error *err)
{
	cJSON *tensors = cJSON_CreateObject();

	put(root, "tensors", tensors, ok);
	for (int i = 0; i < g->n_tensors; i++) {
		cJSON *entry;

		if (tensor_json(&g->tensors[i], &entry, ok, err) < 0) {
			cJSON_Delete(entry);
			return -1;
		}
		if (entry)
			put(tensors, g->tensors[i].name, entry, ok);
	}
	return 0;
}

static cJSON *attr_json(const fl_attr *a, bool *ok)
{
	cJSON *list;

	switch (a->kind) {
	case FL_ATTR_NUMBER:
		return cJSON_CreateNumber(a->num);
	case FL_ATTR_BOOL:
		return cJSON_CreateBool(a->num != 0);
	case FL_ATTR_STRING:
		return cJSON_CreateString(a->str);
	case FL_ATTR_LIST:
		list = cJSON_CreateArray();
		for (int i = 0; i < a->n; i++)
			append(list, cJSON_CreateNumber(a->list[i]), ok);
		return list;
	}
	return NULL;
}

static cJSON *names_json(const fl_graph *g, const int *idx, int n, bool *ok)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; i < n; i++)
		append(a, cJSON_CreateString(g->tensors[idx[i]].name), ok);
	return a;
}

static cJSON *op_json(const fl_graph *g, const fl_op *op, bool *ok)
{
	cJSON *o = cJSON_CreateObject(), *attrs;

	put(o, "name", cJSON_CreateString(op->name), ok);
	put(o, "op", cJSON_CreateString(fl_op_kind_name(op->kind)), ok);
	put(o, "in", names_json(g, op->in, op->n_in, ok), ok);
	if (op->n_out == 1)
		put(o, "out", cJSON_CreateString(g->tensors[op->out[0]].name),
		    ok);
	else
		put(o, "out", names_json(g, op->out, op->n_out, ok), ok);
	if (op->attrs.n == 0)
		return o;
	attrs = cJSON_CreateObject();
	for (int i = 0; i < op->attrs.n; i++)
		put(attrs, op->attrs.items[i].key,
		    attr_json(&op->attrs.items[i], ok), ok);
	put(o, "attrs", attrs, ok);
	return o;
}

char *fl_graph_to_json(const fl_graph *g, fl_error *err)
{
	cJSON *root = cJSON_CreateObject(), *ops = cJSON_CreateArray();
	bool ok = true;
	char *text = NULL;

	put(root, "format", cJSON_CreateString(FL_GRAPH_FORMAT), &ok);
	put(root, "name", cJSON_CreateString(g->name ? g->name : ""), &ok);
	if (g->doc)
		put(root, "doc", cJSON_CreateString(g->doc), &ok);
	if (tensors_json(g, root, &ok, err) < 0)
		goto done;
	for (int i = 0; i < g->n_ops; i++)
		append(ops, op_json(g, &g->ops[i], &ok), &ok);
	put(root, "ops", ops, &ok);
	ops = NULL;
	if (ok)
		text = cJSON_Print(root);
	if (!text)
		fl_error_set(err, "out of memory");
done:
	cJSON_Delete(ops);
	cJSON_Delete(root);
	return text;
}
