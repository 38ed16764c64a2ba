/* Op list view formatting (see view_ops.h). */
#include "view_ops.h"

#include <stdio.h>
#include <string.h>

const char *fl_view_ops_header(void)
{
	return "  #  op                    kind          class         output";
}

void fl_view_ops_row(const fl_graph *g, int i, char *buf, size_t n)
{
	const fl_op *op = &g->ops[i];
	const fl_op_info *info = fl_op_info_of(op->kind);
	const fl_tensor *out = &g->tensors[op->out[0]];
	char shape[96];

	snprintf(buf, n, "%3d  %-20.20s  %-12.12s  %-12.12s  %s %s", i,
		 op->name, info->name, fl_op_class_name(info->cls), out->name,
		 fl_shape_format(&out->shape, shape, sizeof shape));
}

int fl_view_ops_details(const fl_graph *g, int i, char lines[][160], int max)
{
	const fl_op *op = &g->ops[i];
	int n = 0;

	if (max <= 0)
		return 0;
	snprintf(lines[n++], 160, "%s = %s  (%s)", op->name,
		 fl_op_kind_name(op->kind), fl_op_info_of(op->kind)->doc);
	for (int k = 0; k < op->n_in && n < max; k++) {
		const fl_tensor *t = &g->tensors[op->in[k]];
		char shape[96];

		snprintf(lines[n++], 160, "  in[%d]  %-20s %-12s %s", k, t->name,
			 fl_role_name(t->role),
			 fl_shape_format(&t->shape, shape, sizeof shape));
	}
	for (int a = 0; a < op->attrs.n && n < max; a++) {
		const fl_attr *at = &op->attrs.items[a];
		char val[120] = "";
		size_t used = 0;

		if (at->kind == FL_ATTR_STRING)
			snprintf(val, sizeof val, "\"%s\"", at->str);
		else if (at->kind == FL_ATTR_BOOL)
			snprintf(val, sizeof val, "%s", at->num ? "true" : "false");
		else if (at->kind == FL_ATTR_NUMBER)
			snprintf(val, sizeof val, "%g", at->num);
		else
			for (int v = 0; v < at->n && used < sizeof val; v++)
				used += (size_t)snprintf(val + used, sizeof val - used,
							 "%s%g", v ? "," : "[",
							 at->list[v]);
		if (at->kind == FL_ATTR_LIST && used < sizeof val - 1)
			strcat(val, at->n ? "]" : "[]");
		snprintf(lines[n++], 160, "  attrs.%s = %s", at->key, val);
	}
	if (n < max && op->prov.compound)
		snprintf(lines[n++], 160, "  opened from %s \"%s\"",
			 op->prov.compound, op->prov.origin);
	return n;
}
