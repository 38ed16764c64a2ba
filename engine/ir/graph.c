/* The graph IR: construction, copying, validation and summaries.
 *
 * Validation is the one place that turns "a list of ops naming tensors"
 * into a graph later stages may trust: producers set, ops in topological
 * order, every shape inferred and checked against what the file declared.
 * Messages use the file's JSON paths (ops[i] is the op's position in the
 * file, before sorting) so the loader only has to add the file name. */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fl_role_name(fl_role r)
{
	switch (r) {
	case FL_ROLE_TEMP: return "intermediate";
	case FL_ROLE_INPUT: return "input";
	case FL_ROLE_PARAM: return "param";
	case FL_ROLE_CONST: return "const";
	case FL_ROLE_OUTPUT: return "output";
	}
	return "?";
}

struct fl_name_index;
static void index_free(struct fl_name_index **ix);

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

fl_graph *fl_graph_new(const char *name)
{
	fl_graph *g = calloc(1, sizeof *g);

	if (!g)
		return NULL;
	g->name = strdup(name ? name : "graph");
	if (!g->name) {
		free(g);
		return NULL;
	}
	return g;
}

static void tensor_clear(fl_tensor *t)
{
	free(t->name);
	fl_tensor_drop_values(t);
}

static void op_clear(fl_op *op)
{
	free(op->name);
	free(op->in);
	free(op->out);
	fl_attrs_free(&op->attrs);
	free(op->prov.origin);
	free(op->prov.compound);
	free(op->prov.rewrite);
	free(op->prov.source_op);
}

void fl_graph_free(fl_graph *g)
{
	if (!g)
		return;
	for (int i = 0; i < g->n_tensors; i++)
		tensor_clear(&g->tensors[i]);
	for (int i = 0; i < g->n_ops; i++)
		op_clear(&g->ops[i]);
	free(g->tensors);
	free(g->ops);
	index_free(&g->tensor_index);
	index_free(&g->op_index);
	free(g->name);
	free(g->doc);
	free(g);
}

void fl_graph_truncate(fl_graph *g, int n_tensors, int n_ops)
{
	for (int i = n_tensors; i < g->n_tensors; i++)
		tensor_clear(&g->tensors[i]);
	for (int i = n_ops; i < g->n_ops; i++)
		op_clear(&g->ops[i]);
	if (n_tensors < g->n_tensors)
		g->n_tensors = n_tensors;
	if (n_ops < g->n_ops)
		g->n_ops = n_ops;
	for (int i = 0; i < g->n_tensors; i++)
		if (g->tensors[i].producer >= g->n_ops)
			g->tensors[i].producer = -1;
	/* the indexes only ever catch up with appended entries */
	index_free(&g->tensor_index);
	index_free(&g->op_index);
}

/* A name index: open addressing over positions in the tensor or op
 * array.  Entries are only ever appended to those arrays, so the index
 * catches up by adding the new tail; anything that reorders or removes
 * entries drops the index. */
struct fl_name_index {
	int cap;
	int n_indexed;
	int *slot;	/* -1: empty, else array position */
};

static unsigned long name_hash(const char *s)
{
	unsigned long h = 1469598103934665603ul;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ul;
	return h;
}

static void index_free(struct fl_name_index **ix)
{
	if (*ix) {
		free((*ix)->slot);
		free(*ix);
		*ix = NULL;
	}
}

static const char *entry_name(const fl_graph *g, bool ops, int i)
{
	return ops ? g->ops[i].name : g->tensors[i].name;
}

static void index_insert(struct fl_name_index *ix, const fl_graph *g,
			 bool ops, int i)
{
	unsigned long h = name_hash(entry_name(g, ops, i));
	int k = (int)(h & (unsigned long)(ix->cap - 1));

	while (ix->slot[k] >= 0)
		k = (k + 1) & (ix->cap - 1);
	ix->slot[k] = i;
}

/* Brings the index up to date with n entries; false when out of memory
 * (the caller then searches linearly). */
static bool index_update(struct fl_name_index **ixp, const fl_graph *g,
			 bool ops, int n)
{
	struct fl_name_index *ix = *ixp;

	if (!ix || 2 * n + 2 > ix->cap) {
		int cap = 64;

		while (cap < 4 * n + 4)
			cap *= 2;
		index_free(ixp);
		ix = calloc(1, sizeof *ix);
		if (!ix || !(ix->slot = malloc((size_t)cap * sizeof *ix->slot))) {
			free(ix);
			return false;
		}
		ix->cap = cap;
		memset(ix->slot, -1, (size_t)cap * sizeof *ix->slot);
		*ixp = ix;
	}
	for (; ix->n_indexed < n; ix->n_indexed++)
		index_insert(ix, g, ops, ix->n_indexed);
	return true;
}

static int index_find(const fl_graph *g, bool ops, const char *name)
{
	fl_graph *mg = (fl_graph *)g;	/* the index is a cache */
	struct fl_name_index **ixp = ops ? &mg->op_index : &mg->tensor_index;
	int n = ops ? g->n_ops : g->n_tensors, k;

	if (!index_update(ixp, g, ops, n)) {
		for (int i = 0; i < n; i++)
			if (strcmp(entry_name(g, ops, i), name) == 0)
				return i;
		return -1;
	}
	k = (int)(name_hash(name) & (unsigned long)((*ixp)->cap - 1));
	for (; (*ixp)->slot[k] >= 0; k = (k + 1) & ((*ixp)->cap - 1))
		if (strcmp(entry_name(g, ops, (*ixp)->slot[k]), name) == 0)
			return (*ixp)->slot[k];
	return -1;
}

int fl_graph_find_tensor(const fl_graph *g, const char *name)
{
	return index_find(g, false, name);
}

int fl_graph_find_op(const fl_graph *g, const char *name)
{
	return index_find(g, true, name);
}

/* Grows an array of `size`-byte items so that index n fits. */
static int grow(void **items, int *cap, int n, size_t size)
{
	void *p;
	int c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 16;
	p = realloc(*items, (size_t)c * size);
	if (!p)
		return -1;
	*items = p;
	*cap = c;
	return 0;
}

int fl_graph_add_tensor(fl_graph *g, const char *name, const fl_shape *shape,
			fl_role role, fl_error *err)
{
	fl_tensor *t;

	if (fl_graph_find_tensor(g, name) >= 0) {
		fl_error_set(err, "tensor \"%s\" already exists",
			     fl_error_name(name));
		return -1;
	}
	if (grow((void **)&g->tensors, &g->cap_tensors, g->n_tensors,
		 sizeof *g->tensors) < 0)
		goto oom;
	t = &g->tensors[g->n_tensors];
	memset(t, 0, sizeof *t);
	t->name = strdup(name);
	if (!t->name)
		goto oom;
	if (shape) {
		t->shape = *shape;
		t->shape_known = true;
	}
	t->role = role;
	t->producer = -1;
	return g->n_tensors++;
oom:
	fl_error_set(err, "out of memory adding tensor \"%s\"",
		     fl_error_name(name));
	return -1;
}

int fl_graph_add_scalar(fl_graph *g, const char *hint, float v, fl_error *err)
{
	char name[256];
	fl_shape s = fl_shape_scalar();
	int t;

	snprintf(name, sizeof name, "%s", hint);
	for (int k = 2; fl_graph_find_tensor(g, name) >= 0; k++)
		snprintf(name, sizeof name, "%s.%d", hint, k);
	t = fl_graph_add_tensor(g, name, &s, FL_ROLE_CONST, err);
	if (t < 0)
		return -1;
	g->tensors[t].data = malloc(sizeof(float));
	if (!g->tensors[t].data) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	g->tensors[t].data[0] = v;
	g->tensors[t].n_data = 1;
	return t;
}

int fl_tensor_convert_const(fl_tensor *t, fl_dtype dt, fl_error *err)
{
	size_t n = (size_t)(t->n_data > 0 ? t->n_data : 1);
	float *f = NULL;
	int64_t *i = NULL;

	if (fl_dtype_is_int(dt))
		i = malloc(n * sizeof *i);
	else
		f = malloc(n * sizeof *f);
	if (!i && !f) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int64_t k = 0; k < t->n_data; k++)
		if (i)
			i[k] = t->ints ? fl_dtype_wrap(dt, t->ints[k])
				       : fl_dtype_from_float(dt, t->data[k]);
		else
			f[k] = fl_dtype_round(dt, t->ints
				? (float)fl_dtype_to_double(t->dtype, t->ints[k])
				: t->data[k]);
	fl_tensor_drop_values(t);
	t->data = f;
	t->ints = i;
	t->dtype = dt;
	return 0;
}

static int *dup_ints(const int *v, int n)
{
	int *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);

	if (p && n > 0)
		memcpy(p, v, (size_t)n * sizeof *p);
	return p;
}

int fl_graph_add_op(fl_graph *g, const char *name, fl_op_kind kind,
		    const int *in, int n_in, const int *out, int n_out,
		    fl_error *err)
{
	fl_op *op;

	if (fl_graph_find_op(g, name) >= 0) {
		fl_error_set(err, "op \"%s\" already exists",
			     fl_error_name(name));
		return -1;
	}
	if (grow((void **)&g->ops, &g->cap_ops, g->n_ops, sizeof *g->ops) < 0)
		goto oom;
	op = &g->ops[g->n_ops];
	memset(op, 0, sizeof *op);
	op->kind = kind;
	op->n_in = n_in;
	op->n_out = n_out;
	op->name = strdup(name);
	op->in = dup_ints(in, n_in);
	op->out = dup_ints(out, n_out);
	op->prov.origin = strdup(name);
	if (!op->name || !op->in || !op->out || !op->prov.origin) {
		op_clear(op);
		goto oom;
	}
	return g->n_ops++;
oom:
	fl_error_set(err, "out of memory adding op \"%s\"",
		     fl_error_name(name));
	return -1;
}

static int replace_str(char **dst, const char *src)
{
	char *s;

	if (!src)
		return 0;
	s = strdup(src);
	if (!s)
		return -1;
	free(*dst);
	*dst = s;
	return 0;
}

int fl_op_set_provenance(fl_op *op, const char *origin, const char *compound,
			 const char *rewrite)
{
	if (replace_str(&op->prov.origin, origin) < 0 ||
	    replace_str(&op->prov.compound, compound) < 0 ||
	    replace_str(&op->prov.rewrite, rewrite) < 0)
		return -1;
	return 0;
}

int fl_op_set_source_op(fl_op *op, const char *source_op)
{
	char *s = source_op ? strdup(source_op) : NULL;

	if (source_op && !s)
		return -1;
	free(op->prov.source_op);
	op->prov.source_op = s;
	return 0;
}

static int copy_tensor(fl_tensor *dst, const fl_tensor *src)
{
	*dst = *src;
	dst->name = strdup(src->name);
	if (fl_tensor_copy_values(dst, src) < 0 || !dst->name)
		return -1;
	return 0;
}

static int copy_op(fl_op *dst, const fl_op *src)
{
	memset(dst, 0, sizeof *dst);
	dst->kind = src->kind;
	dst->n_in = src->n_in;
	dst->n_out = src->n_out;
	dst->name = strdup(src->name);
	dst->in = dup_ints(src->in, src->n_in);
	dst->out = dup_ints(src->out, src->n_out);
	dst->prov.origin = dup_or_null(src->prov.origin);
	dst->prov.compound = dup_or_null(src->prov.compound);
	dst->prov.rewrite = dup_or_null(src->prov.rewrite);
	dst->prov.source_op = dup_or_null(src->prov.source_op);
	if (fl_attrs_copy(&dst->attrs, &src->attrs) < 0)
		return -1;
	return dst->name && dst->in && dst->out ? 0 : -1;
}

fl_graph *fl_graph_copy(const fl_graph *g)
{
	fl_graph *c = fl_graph_new(g->name);

	if (!c)
		return NULL;
	c->doc = dup_or_null(g->doc);
	c->tensors = calloc((size_t)(g->n_tensors + 1), sizeof *c->tensors);
	c->ops = calloc((size_t)(g->n_ops + 1), sizeof *c->ops);
	if (!c->tensors || !c->ops)
		goto fail;
	c->cap_tensors = g->n_tensors + 1;
	c->cap_ops = g->n_ops + 1;
	for (int i = 0; i < g->n_tensors; i++, c->n_tensors++)
		if (copy_tensor(&c->tensors[i], &g->tensors[i]) < 0) {
			c->n_tensors++;
			goto fail;
		}
	for (int i = 0; i < g->n_ops; i++, c->n_ops++)
		if (copy_op(&c->ops[i], &g->ops[i]) < 0) {
			c->n_ops++;
			goto fail;
		}
	return c;
fail:
	fl_graph_free(c);
	return NULL;
}

/* Sets the dtypes of op's outputs from its inputs' (fl_op_infer_dtype),
 * checking those the file declared. */
static int infer_dtypes(fl_graph *g, const fl_op *op, fl_error *err)
{
	fl_dtype in[64], out[8] = {FL_F32};

	for (int k = 0; k < op->n_in && k < 64; k++)
		in[k] = g->tensors[op->in[k]].dtype;
	if (fl_op_infer_dtype(op, in, out, err) < 0)
		return -1;
	for (int k = 0; k < op->n_out && k < 8; k++) {
		fl_tensor *t = &g->tensors[op->out[k]];

		if (t->dtype_declared && t->dtype != out[k]) {
			fl_error_set(err, "out: tensor \"%s\" is declared %s "
				     "but %s computes %s", fl_error_name(t->name),
				     fl_dtype_name(t->dtype),
				     fl_op_kind_name(op->kind),
				     fl_dtype_name(out[k]));
			return -1;
		}
		t->dtype = out[k];
	}
	return 0;
}

int fl_graph_infer_op(fl_graph *g, int i, fl_error *err)
{
	fl_op *op = &g->ops[i];
	const fl_op_info *info = fl_op_info_of(op->kind);
	fl_shape in[64], out[8];

	if (!info) {
		fl_error_set(err, "op: unknown op kind %d", (int)op->kind);
		return -1;
	}
	if (op->n_in < info->min_in ||
	    (info->max_in >= 0 && op->n_in > info->max_in) || op->n_in > 64) {
		if (info->min_in == info->max_in)
			fl_error_set(err, "in: %s takes %d input%s, got %d",
				     info->name, info->min_in,
				     info->min_in == 1 ? "" : "s", op->n_in);
		else if (info->max_in < 0)
			fl_error_set(err, "in: %s takes at least %d inputs, got %d",
				     info->name, info->min_in, op->n_in);
		else
			fl_error_set(err, "in: %s takes %d to %d inputs, got %d",
				     info->name, info->min_in, info->max_in,
				     op->n_in);
		return -1;
	}
	if (op->n_out != info->n_out) {
		fl_error_set(err, "out: %s writes %d tensor%s, got %d",
			     info->name, info->n_out,
			     info->n_out == 1 ? "" : "s", op->n_out);
		return -1;
	}
	if (fl_attrs_check_known(&op->attrs, info->attrs, err) < 0)
		return -1;
	for (int k = 0; k < op->n_in; k++) {
		const fl_tensor *t = &g->tensors[op->in[k]];

		if (!t->shape_known) {
			fl_error_set(err, "in[%d]: tensor \"%s\" has no shape yet",
				     k, fl_error_name(t->name));
			return -1;
		}
		in[k] = t->shape;
	}
	memset(out, 0, sizeof out);
	if (info->infer(op, in, out, err) < 0 || infer_dtypes(g, op, err) < 0)
		return -1;
	for (int k = 0; k < op->n_out; k++) {
		fl_tensor *t = &g->tensors[op->out[k]];
		char sd[128], si[128];

		if (fl_shape_numel(&out[k]) < 0) {
			fl_error_set(err, "out: result has too many elements");
			return -1;
		}
		if (t->shape_known && !fl_shape_equal(&t->shape, &out[k])) {
			fl_error_set(err,
				     "out: tensor \"%s\" is declared %s but %s "
				     "computes %s",
				     fl_error_name(t->name),
				     fl_shape_format(&t->shape, sd, sizeof sd),
				     info->name,
				     fl_shape_format(&out[k], si, sizeof si));
			return -1;
		}
		t->shape = out[k];
		t->shape_known = true;
	}
	return 0;
}

/* Sets t->producer for every op output and checks the write rules. */
static int link_producers(fl_graph *g, fl_error *err)
{
	for (int t = 0; t < g->n_tensors; t++)
		g->tensors[t].producer = -1;
	for (int i = 0; i < g->n_ops; i++) {
		const fl_op *op = &g->ops[i];

		for (int k = 0; k < op->n_out; k++) {
			fl_tensor *t = &g->tensors[op->out[k]];

			if (t->role == FL_ROLE_INPUT || t->role == FL_ROLE_PARAM ||
			    t->role == FL_ROLE_CONST) {
				fl_error_set(err,
					     "ops[%d].out: tensor \"%s\" is %s %s "
					     "and cannot be written by an op",
					     i, fl_error_name(t->name),
					     t->role == FL_ROLE_INPUT ? "an" : "a",
					     fl_role_name(t->role));
				return -1;
			}
			if (t->producer >= 0) {
				fl_error_set(err,
					     "ops[%d].out: tensor \"%s\" is written "
					     "twice (already by op \"%s\")",
					     i, fl_error_name(t->name),
					     fl_error_name(g->ops[t->producer].name));
				return -1;
			}
			t->producer = i;
		}
	}
	return 0;
}

/* Every tensor that is read must have a value: a producer or an outside
 * source; every output must be written. */
static int check_sources(const fl_graph *g, fl_error *err)
{
	for (int i = 0; i < g->n_ops; i++) {
		const fl_op *op = &g->ops[i];

		for (int k = 0; k < op->n_in; k++) {
			const fl_tensor *t = &g->tensors[op->in[k]];

			if (t->producer < 0 && (t->role == FL_ROLE_TEMP ||
						t->role == FL_ROLE_OUTPUT)) {
				fl_error_set(err,
					     "ops[%d].in[%d]: tensor \"%s\" is "
					     "never written by any op (declare it "
					     "with role \"input\"?)",
					     i, k, fl_error_name(t->name));
				return -1;
			}
		}
	}
	for (int t = 0; t < g->n_tensors; t++) {
		const fl_tensor *x = &g->tensors[t];

		if (x->role == FL_ROLE_OUTPUT && x->producer < 0) {
			fl_error_set(err,
				     "tensors.%s: output is never written by any op",
				     fl_error_name(x->name));
			return -1;
		}
		if (x->role == FL_ROLE_CONST &&
		    !(fl_dtype_is_int(x->dtype) ? (void *)x->ints
						: (void *)x->data)) {
			fl_error_set(err, "tensors.%s: const tensor has no values",
				     fl_error_name(x->name));
			return -1;
		}
	}
	return 0;
}

/* Describes a cycle among the unsorted ops (indeg > 0): walks producers
 * from op `start` until an op repeats, then prints that loop. */
static void describe_cycle(const fl_graph *g, const int *indeg, int start,
			   fl_error *err)
{
	int *seen = calloc((size_t)g->n_ops, sizeof *seen);
	int cur = start, step = 1;
	char path[FL_ERROR_MAX / 2] = "";
	size_t used = 0;

	if (!seen) {
		fl_error_set(err, "ops[%d]: the graph has a cycle", start);
		return;
	}
	/* Follow an unsorted producer until we come back to a visited op. */
	while (!seen[cur]) {
		const fl_op *op = &g->ops[cur];
		int next = -1;

		seen[cur] = step++;
		for (int k = 0; k < op->n_in && next < 0; k++) {
			int p = g->tensors[op->in[k]].producer;

			if (p >= 0 && indeg[p] > 0)
				next = p;
		}
		if (next < 0)
			break;
		cur = next;
	}
	/* cur is on the loop: print it in dataflow order. */
	start = cur;
	do {
		const fl_op *op = &g->ops[cur];
		int next = -1;

		if (used < sizeof path)
			used += (size_t)snprintf(path + used, sizeof path - used,
						 "%s%s", used ? " <- " : "",
						 fl_error_name(op->name));
		for (int k = 0; k < op->n_in && next < 0; k++) {
			int p = g->tensors[op->in[k]].producer;

			if (p >= 0 && indeg[p] > 0)
				next = p;
		}
		cur = next;
	} while (cur >= 0 && cur != start);
	fl_error_set(err, "ops[%d]: the graph has a cycle through op \"%s\" (%s <- %s)",
		     start, fl_error_name(g->ops[start].name), path,
		     fl_error_name(g->ops[start].name));
	free(seen);
}

/* Kahn's algorithm over op indices; order[] receives a topological order
 * that keeps the file order wherever the data allows it. */
static int topo_order(const fl_graph *g, int *order, fl_error *err)
{
	int *indeg = calloc((size_t)g->n_ops + 1, sizeof *indeg);
	int *users = NULL, *ustart = calloc((size_t)g->n_ops + 2, sizeof *ustart);
	int head = 0, tail = 0, rc = -1, n_edges = 0;

	if (!indeg || !ustart)
		goto out;
	/* CSR list of consumer ops per op (one entry per input edge). */
	for (int i = 0; i < g->n_ops; i++)
		for (int k = 0; k < g->ops[i].n_in; k++) {
			int p = g->tensors[g->ops[i].in[k]].producer;

			if (p >= 0) {
				ustart[p + 1]++;
				indeg[i]++;
				n_edges++;
			}
		}
	for (int i = 0; i < g->n_ops; i++)
		ustart[i + 1] += ustart[i];
	users = malloc((size_t)(n_edges + 1) * sizeof *users);
	if (!users)
		goto out;
	{
		int *fill = calloc((size_t)g->n_ops + 1, sizeof *fill);

		if (!fill)
			goto out;
		for (int i = 0; i < g->n_ops; i++)
			for (int k = 0; k < g->ops[i].n_in; k++) {
				int p = g->tensors[g->ops[i].in[k]].producer;

				if (p >= 0)
					users[ustart[p] + fill[p]++] = i;
			}
		free(fill);
	}
	for (int i = 0; i < g->n_ops; i++)
		if (indeg[i] == 0)
			order[tail++] = i;
	while (head < tail) {
		int i = order[head++];

		for (int e = ustart[i]; e < ustart[i + 1]; e++)
			if (--indeg[users[e]] == 0)
				order[tail++] = users[e];
	}
	if (tail < g->n_ops) {
		for (int i = 0; i < g->n_ops; i++)
			if (indeg[i] > 0) {
				describe_cycle(g, indeg, i, err);
				break;
			}
		goto out;
	}
	rc = 0;
out:
	if (rc < 0 && (!indeg || !ustart || !users))
		fl_error_set(err, "out of memory sorting the graph");
	free(indeg);
	free(ustart);
	free(users);
	return rc;
}

/* Puts the ops in `order` and relinks producers. */
static int apply_order(fl_graph *g, const int *order, fl_error *err)
{
	fl_op *sorted = malloc((size_t)(g->n_ops + 1) * sizeof *sorted);

	if (!sorted) {
		fl_error_set(err, "out of memory sorting the graph");
		return -1;
	}
	for (int i = 0; i < g->n_ops; i++)
		sorted[i] = g->ops[order[i]];
	free(g->ops);
	g->ops = sorted;
	index_free(&g->op_index);
	g->cap_ops = g->n_ops + 1;
	return link_producers(g, err);
}

static int check_tensor_shapes(const fl_graph *g, fl_error *err)
{
	for (int t = 0; t < g->n_tensors; t++) {
		const fl_tensor *x = &g->tensors[t];

		if (!x->shape_known) {
			/* Unused and never written: nothing to infer from. */
			if (x->producer < 0)
				continue;
			fl_error_set(err, "tensors.%s: shape unknown",
				     fl_error_name(x->name));
			return -1;
		}
		for (int d = 0; d < x->shape.rank; d++)
			if (x->shape.dim[d] < 1) {
				fl_error_set(err,
					     "tensors.%s.shape[%d]: dimension "
					     "must be >= 1, got %lld",
					     fl_error_name(x->name), d,
					     (long long)x->shape.dim[d]);
				return -1;
			}
		if (fl_shape_numel(&x->shape) < 0) {
			fl_error_set(err,
				     "tensors.%s.shape: element count overflows "
				     "64 bits",
				     fl_error_name(x->name));
			return -1;
		}
	}
	return 0;
}

const char *fl_op_source_note(const fl_op *op, char *buf, size_t n)
{
	if (!op->prov.source_op)
		return "";
	snprintf(buf, n, " (ONNX %s)", fl_error_name(op->prov.source_op));
	return buf;
}

/* The "reason" an opaque custom op gives for being opaque, or NULL. */
static const char *opaque_reason(const fl_op *op)
{
	const fl_attr *a = fl_attrs_find(&op->attrs, "reason");

	return a && a->kind == FL_ATTR_STRING ? a->str : NULL;
}

int fl_graph_check_computable(const fl_graph *g, const char *doing,
			      fl_error *err)
{
	const char *why;
	char note[96];
	int n = 0, first = -1;

	for (int i = 0; i < g->n_ops; i++)
		if (!fl_op_computable(&g->ops[i])) {
			n++;
			if (first < 0)
				first = i;
		}
	if (!n)
		return 0;
	why = opaque_reason(&g->ops[first]);
	fl_error_set(err, "cannot %s: op \"%s\"%s is an opaque custom "
		     "op (an operator fuselab has no implementation of%s%s)%s; "
		     "the graph can be explored, partitioned and exported as "
		     "pictures, but not run", doing,
		     fl_error_name(g->ops[first].name),
		     fl_op_source_note(&g->ops[first], note, sizeof note),
		     why ? ": " : "", why ? why : "",
		     n > 1 ? " and so are others" : "");
	return -1;
}

int fl_graph_validate(fl_graph *g, fl_error *err)
{
	int *order;
	int rc = -1;

	if (check_tensor_shapes(g, err) < 0 || link_producers(g, err) < 0 ||
	    check_sources(g, err) < 0)
		return -1;
	if (g->n_ops == 0) {
		fl_error_set(err, "ops: the graph has no ops");
		return -1;
	}
	order = malloc((size_t)g->n_ops * sizeof *order);
	if (!order) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	if (topo_order(g, order, err) < 0)
		goto out;
	for (int i = 0; i < g->n_ops; i++)
		if (fl_graph_infer_op(g, order[i], err) < 0) {
			fl_error_prefix(err, "ops[%d].", order[i]);
			goto out;
		}
	if (apply_order(g, order, err) < 0 || check_tensor_shapes(g, err) < 0)
		goto out;
	rc = 0;
out:
	free(order);
	return rc;
}

static int collect(const fl_graph *g, int **idx, bool (*pick)(fl_role))
{
	int n = 0;

	*idx = malloc((size_t)(g->n_tensors + 1) * sizeof **idx);
	if (!*idx)
		return -1;
	for (int t = 0; t < g->n_tensors; t++)
		if (pick(g->tensors[t].role))
			(*idx)[n++] = t;
	return n;
}

static bool is_output(fl_role r)
{
	return r == FL_ROLE_OUTPUT;
}

static bool is_input(fl_role r)
{
	return r == FL_ROLE_INPUT || r == FL_ROLE_PARAM;
}

int fl_graph_outputs(const fl_graph *g, int **idx)
{
	return collect(g, idx, is_output);
}

int fl_graph_inputs(const fl_graph *g, int **idx)
{
	return collect(g, idx, is_input);
}

/* a += b unless either is already -1 (overflow sticks). */
static void add_bytes(int64_t *a, int64_t b)
{
	if (*a < 0 || b < 0 || *a > INT64_MAX - b)
		*a = -1;
	else
		*a += b;
}

void fl_graph_summarize(const fl_graph *g, fl_graph_summary *s)
{
	memset(s, 0, sizeof *s);
	s->n_ops = g->n_ops;
	s->n_tensors = g->n_tensors;
	for (int i = 0; i < g->n_ops; i++) {
		if (fl_op_is_compound(g->ops[i].kind))
			s->n_compound++;
		else
			s->n_primitive++;
	}
	for (int t = 0; t < g->n_tensors; t++) {
		const fl_tensor *x = &g->tensors[t];
		int64_t n = x->shape_known ? fl_shape_numel(&x->shape) : 0;
		int64_t size = fl_dtype_size(x->dtype);
		int64_t bytes = n < 0 || n > INT64_MAX / size ? -1 : n * size;

		switch (x->role) {
		case FL_ROLE_INPUT: s->n_inputs++; add_bytes(&s->input_bytes, bytes); break;
		case FL_ROLE_PARAM: s->n_params++; add_bytes(&s->param_bytes, bytes); break;
		case FL_ROLE_CONST: s->n_consts++; add_bytes(&s->param_bytes, bytes); break;
		case FL_ROLE_OUTPUT: s->n_outputs++; add_bytes(&s->output_bytes, bytes); break;
		case FL_ROLE_TEMP: s->n_temps++; add_bytes(&s->temp_bytes, bytes); break;
		}
		add_bytes(&s->total_bytes, bytes);
	}
}

int fl_graph_replace_uses(fl_graph *g, int from, int to, const char *rewrite)
{
	int changed = 0;

	for (int i = 0; i < g->n_ops; i++) {
		fl_op *op = &g->ops[i];
		bool hit = false;

		for (int k = 0; k < op->n_in; k++)
			if (op->in[k] == from) {
				op->in[k] = to;
				hit = true;
				changed++;
			}
		if (hit && rewrite)
			fl_op_set_provenance(op, NULL, NULL, rewrite);
	}
	return changed;
}

int fl_graph_count_uses(const fl_graph *g, int t)
{
	int n = 0;

	for (int i = 0; i < g->n_ops; i++)
		for (int k = 0; k < g->ops[i].n_in; k++)
			n += g->ops[i].in[k] == t;
	return n;
}

int fl_graph_remove_ops(fl_graph *g, const bool *dead, fl_error *err)
{
	int w = 0;

	for (int i = 0; i < g->n_ops; i++) {
		if (dead[i]) {
			op_clear(&g->ops[i]);
			continue;
		}
		g->ops[w++] = g->ops[i];
	}
	g->n_ops = w;
	index_free(&g->op_index);
	return link_producers(g, err);
}

int fl_graph_relink(fl_graph *g, fl_error *err)
{
	return link_producers(g, err);
}

int fl_graph_permute_ops(fl_graph *g, const int *order, fl_error *err)
{
	return apply_order(g, order, err);
}

/* Renaming changes an entry's hash, so the index of that array is
 * dropped (the next find rebuilds it). */
static int rename_entry(fl_graph *g, bool ops, int i, const char *name,
			fl_error *err)
{
	char **slot = ops ? &g->ops[i].name : &g->tensors[i].name;
	char *d;

	if (!*name || index_find(g, ops, name) >= 0) {
		fl_error_set(err, "%s name \"%s\" is empty or taken",
			     ops ? "op" : "tensor", fl_error_name(name));
		return -1;
	}
	if (!(d = strdup(name))) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	free(*slot);
	*slot = d;
	index_free(ops ? &g->op_index : &g->tensor_index);
	return 0;
}

int fl_graph_rename_tensor(fl_graph *g, int t, const char *name,
			   fl_error *err)
{
	return rename_entry(g, false, t, name, err);
}

int fl_graph_rename_op(fl_graph *g, int i, const char *name, fl_error *err)
{
	return rename_entry(g, true, i, name, err);
}
