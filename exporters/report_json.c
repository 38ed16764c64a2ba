/* JSON report exporter (see report_json.h). */
#include "report_json.h"

#include "classify.h"

cJSON *fl_report_event(const fl_event *e)
{
	cJSON *o = cJSON_CreateObject(), *ops = cJSON_CreateArray();

	cJSON_AddNumberToObject(o, "seq", e->seq);
	cJSON_AddStringToObject(o, "pass", fl_pass_name(e->pass));
	cJSON_AddStringToObject(o, "kind", fl_event_kind_name(e->kind));
	if (e->rule[0])
		cJSON_AddStringToObject(o, "rule", e->rule);
	for (int i = 0; i < e->n_ops; i++)
		cJSON_AddItemToArray(ops, cJSON_CreateString(e->ops[i]));
	cJSON_AddItemToObject(o, "ops", ops);
	if (e->group_a >= 0)
		cJSON_AddNumberToObject(o, "group_a", e->group_a);
	if (e->group_b >= 0)
		cJSON_AddNumberToObject(o, "group_b", e->group_b);
	cJSON_AddStringToObject(o, "reason", e->reason);
	cJSON_AddNumberToObject(o, "t_start_us", (double)(long)(e->t_start * 1e6));
	cJSON_AddNumberToObject(o, "duration_us", (double)(long)(e->duration * 1e6));
	if (e->kind == FL_EV_COMPILED && e->n_measured >= 1) {
		cJSON *m = cJSON_AddObjectToObject(o, "measured");

		cJSON_AddNumberToObject(m, "seconds", e->measured[0]);
	} else if (e->kind == FL_EV_RAN && e->n_measured >= 4) {
		cJSON *m = cJSON_AddObjectToObject(o, "measured");

		cJSON_AddNumberToObject(m, "median_s", e->measured[0]);
		cJSON_AddNumberToObject(m, "min_s", e->measured[1]);
		cJSON_AddNumberToObject(m, "max_s", e->measured[2]);
		cJSON_AddNumberToObject(m, "runs", e->measured[3]);
	}
	return o;
}

cJSON *fl_report_events(const fl_session *s)
{
	const fl_event_log *log = fl_engine_events(s);
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; i < fl_event_log_count(log); i++)
		cJSON_AddItemToArray(a, fl_report_event(fl_event_log_get(log, i)));
	return a;
}

static cJSON *micro_graph_json(const fl_graph *g, const fl_micro_graph *m)
{
	cJSON *o = cJSON_CreateObject(), *mem = cJSON_CreateArray();

	cJSON_AddNumberToObject(o, "id", m->id);
	cJSON_AddStringToObject(o, "type", fl_op_type_name(m->type));
	if (m->cluster >= 0)
		cJSON_AddNumberToObject(o, "subgraph", m->cluster + 1);
	else
		cJSON_AddNullToObject(o, "subgraph");
	for (int i = 0; i < m->n_members; i++)	/* ascending: op order */
		cJSON_AddItemToArray(mem, cJSON_CreateString(g->ops[m->members[i]].name));
	cJSON_AddItemToObject(o, "members", mem);
	cJSON_AddStringToObject(o, "rules", m->history);
	return o;
}

static cJSON *op_json(const fl_graph *g, const fl_partition *p, int i)
{
	const fl_op *op = &g->ops[i];
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "name", op->name);
	cJSON_AddStringToObject(o, "op", fl_op_kind_name(op->kind));
	if (p->classified)
		cJSON_AddStringToObject(o, "type", fl_op_type_name(p->type_of[i]));
	if (p->group_of)
		cJSON_AddNumberToObject(o, "micro_graph", p->group_of[i]);
	cJSON_AddStringToObject(o, "origin", op->prov.origin ? op->prov.origin : op->name);
	if (op->prov.compound)
		cJSON_AddStringToObject(o, "opened_from", op->prov.compound);
	if (op->prov.rewrite)
		cJSON_AddStringToObject(o, "rewrite", op->prov.rewrite);
	return o;
}

cJSON *fl_report_partition(const fl_session *s)
{
	const fl_graph *g = fl_engine_graph(s);
	const fl_partition *p = fl_engine_partition(s);
	cJSON *o = cJSON_CreateObject(), *mgs = cJSON_CreateArray();
	cJSON *ops = cJSON_CreateArray();

	cJSON_AddStringToObject(o, "graph", g->name);
	cJSON_AddNumberToObject(o, "position", fl_engine_position(s));
	cJSON_AddBoolToObject(o, "done", fl_engine_done(s));
	cJSON_AddNumberToObject(o, "subgraphs", p->n_clusters);
	for (int i = 0; i < p->n_groups; i++)
		if (p->groups[i].alive)
			cJSON_AddItemToArray(mgs, micro_graph_json(g, &p->groups[i]));
	cJSON_AddItemToObject(o, "micro_graphs", mgs);
	for (int i = 0; i < g->n_ops; i++)
		cJSON_AddItemToArray(ops, op_json(g, p, i));
	cJSON_AddItemToObject(o, "ops", ops);
	return o;
}

static cJSON *tensor_json(const fl_graph *g, const fl_kernel_tensor *kt)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "tensor", g->tensors[kt->tensor].name);
	cJSON_AddStringToObject(o, "placement", fl_placement_name(kt->place));
	cJSON_AddBoolToObject(o, "read", kt->read);
	cJSON_AddBoolToObject(o, "written", kt->written);
	if (kt->place != FL_PLACE_GLOBAL) {
		cJSON *box = cJSON_CreateArray();

		for (int d = 0; d < kt->rank; d++)
			cJSON_AddItemToArray(box, cJSON_CreateNumber((double)kt->box[d]));
		cJSON_AddItemToObject(o, "tile_box", box);
		cJSON_AddNumberToObject(o, "bytes_kept", (double)kt->bytes_kept);
	}
	if (kt->why[0])
		cJSON_AddStringToObject(o, "why", kt->why);
	return o;
}

static cJSON *kernel_json(const fl_graph *g, const fl_kernel *k)
{
	cJSON *o = cJSON_CreateObject(), *ops = cJSON_CreateArray();
	cJSON *tensors = cJSON_CreateArray(), *tile = cJSON_CreateArray();

	cJSON_AddStringToObject(o, "name", k->name);
	cJSON_AddNumberToObject(o, "micro_graph", k->group);
	for (int i = 0; i < k->n_ops; i++)
		cJSON_AddItemToArray(ops, cJSON_CreateString(g->ops[k->ops[i]].name));
	cJSON_AddItemToObject(o, "ops", ops);
	for (int i = 0; i < k->n_tile; i++)
		cJSON_AddItemToArray(tile, cJSON_CreateNumber((double)k->tile[i]));
	cJSON_AddItemToObject(o, "tile", tile);
	cJSON_AddStringToObject(o, "reduction_form", fl_reduce_form_name(k->reduce_form));
	for (int t = 0; t < k->n_tensors; t++)
		cJSON_AddItemToArray(tensors, tensor_json(g, &k->tensors[t]));
	cJSON_AddItemToObject(o, "tensors", tensors);
	cJSON_AddStringToObject(o, "schedule", k->schedule_text ? k->schedule_text : "");
	return o;
}

cJSON *fl_report_layer1(const fl_session *s)
{
	const fl_program *p = fl_engine_program(s);
	const fl_graph *g = fl_engine_graph(s);
	cJSON *o = cJSON_CreateObject(), *ks = cJSON_CreateArray();

	if (p)
		for (int k = 0; k < p->n_kernels; k++)
			cJSON_AddItemToArray(ks, kernel_json(g, &p->kernels[k]));
	cJSON_AddItemToObject(o, "kernels", ks);
	return o;
}

cJSON *fl_report_codegen(const fl_session *s)
{
	const fl_program *p = fl_engine_program(s);
	cJSON *o = cJSON_CreateObject(), *ks = cJSON_CreateArray();

	for (int k = 0; p && k < p->n_kernels; k++) {
		const char *src = fl_engine_kernel_source(s, k);
		cJSON *kj;

		if (!src)
			break;
		kj = cJSON_CreateObject();
		cJSON_AddStringToObject(kj, "name", p->kernels[k].name);
		cJSON_AddStringToObject(kj, "c", src);
		cJSON_AddItemToArray(ks, kj);
	}
	cJSON_AddItemToObject(o, "kernels", ks);
	cJSON_AddBoolToObject(o, "complete", fl_engine_source(s) != NULL);
	return o;
}

cJSON *fl_report_build(const fl_session *s)
{
	const fl_build *b = fl_engine_build(s);
	cJSON *o = cJSON_CreateObject();

	if (!b)
		return o;
	cJSON_AddStringToObject(o, "status", fl_run_status_name(b->status));
	cJSON_AddStringToObject(o, "message", b->message);
	cJSON_AddStringToObject(o, "compiler", b->compiler);
	cJSON_AddStringToObject(o, "flags", b->flags);
	cJSON_AddNumberToObject(o, "seconds", b->seconds);
	cJSON_AddNumberToObject(o, "warnings", b->n_warnings);
	return o;
}

static cJSON *kernel_result_json(const fl_kernel *k, const fl_kernel_result *r)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "name", k->name);
	cJSON_AddNumberToObject(o, "median_s", r->seconds);
	cJSON_AddNumberToObject(o, "min_s", r->min_seconds);
	cJSON_AddNumberToObject(o, "max_s", r->max_seconds);
	cJSON_AddNumberToObject(o, "runs", r->n_timed);
	cJSON_AddNumberToObject(o, "bytes", (double)r->bytes);
	cJSON_AddNumberToObject(o, "max_abs", r->max_abs);
	cJSON_AddNumberToObject(o, "max_rel", r->max_rel);
	cJSON_AddBoolToObject(o, "ok", r->ok);
	return o;
}

cJSON *fl_report_run(const fl_session *s)
{
	const fl_run_result *r = fl_engine_run_result(s);
	const fl_program *p = fl_engine_program(s);
	const fl_graph *g = fl_engine_graph(s);
	cJSON *o = cJSON_CreateObject(), *ks, *outs;

	if (!r || !p)
		return o;
	cJSON_AddStringToObject(o, "status", fl_run_status_name(r->status));
	cJSON_AddStringToObject(o, "message", r->message);
	cJSON_AddBoolToObject(o, "verified", r->verified);
	cJSON_AddNumberToObject(o, "total_s", r->total_seconds);
	cJSON_AddNumberToObject(o, "max_abs", r->max_abs);
	cJSON_AddNumberToObject(o, "max_rel", r->max_rel);
	ks = cJSON_AddArrayToObject(o, "kernels");
	for (int k = 0; k < r->n_kernels && k < p->n_kernels; k++)
		cJSON_AddItemToArray(ks, kernel_result_json(&p->kernels[k],
							    &r->kernels[k]));
	outs = cJSON_AddArrayToObject(o, "outputs");
	for (int i = 0; i < r->n_outputs; i++) {
		cJSON *oj = cJSON_CreateObject();

		cJSON_AddStringToObject(oj, "tensor",
					g->tensors[r->outputs[i].tensor].name);
		cJSON_AddNumberToObject(oj, "max_abs", r->outputs[i].max_abs);
		cJSON_AddNumberToObject(oj, "max_rel", r->outputs[i].max_rel);
		cJSON_AddBoolToObject(oj, "ok", r->outputs[i].ok);
		cJSON_AddItemToArray(outs, oj);
	}
	return o;
}
