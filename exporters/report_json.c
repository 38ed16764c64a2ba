/* JSON report exporter (see report_json.h). */
#include "report_json.h"

#include <stdlib.h>
#include <string.h>

#include "classify.h"
#include "output.h"
#include "stitch.h"

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
	if (op->prov.source_op)
		cJSON_AddStringToObject(o, "source_op", op->prov.source_op);
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

/* How layer 1 sized the kernel's tiles, as the "tiled" event says. */
static void add_tiling(cJSON *o, const fl_kernel *k)
{
	cJSON_AddStringToObject(o, "tile_kind",
				fl_tile_kind_name(k->tile_kind));
	cJSON_AddNumberToObject(o, "n_tiles", k->n_tiles);
	cJSON_AddNumberToObject(o, "tile_bytes", (double)k->tile_bytes);
	cJSON_AddStringToObject(o, "tile_why", k->tile_why);
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
	add_tiling(o, k);
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
	cJSON_AddBoolToObject(o, "cached", b->cached);
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
	cJSON_AddStringToObject(o, "target", fl_target_name(r->target));
	cJSON_AddStringToObject(o, "device", r->device);
	cJSON_AddStringToObject(o, "note", r->note);
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

/* ---- the full report: "fuselab-report/1" (docs/report-format.md) ------
 *
 * Every number in it is one the engine holds; where the engine has no
 * value (a speedup it could not measure, a kernel not built yet) the
 * field is null rather than a made-up zero. */

static void add_str_or_null(cJSON *o, const char *key, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

/* A non-negative index or null (-1 and below mean "none" in the engine). */
static void add_index(cJSON *o, const char *key, int v)
{
	if (v >= 0)
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

static cJSON *int64_array(const int64_t *v, int n)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
	return a;
}

/* The names of ops idx[0..n-1] of g, in that order. */
static cJSON *op_names(const fl_graph *g, const int *idx, int n)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; i < n; i++) {
		const char *name = g->ops[idx[i]].name;

		cJSON_AddItemToArray(a, cJSON_CreateString(name));
	}
	return a;
}

static cJSON *summary_json(const fl_graph *g)
{
	fl_graph_summary sm;
	cJSON *o = cJSON_CreateObject();

	fl_graph_summarize(g, &sm);
	cJSON_AddNumberToObject(o, "ops", sm.n_ops);
	cJSON_AddNumberToObject(o, "compound_ops", sm.n_compound);
	cJSON_AddNumberToObject(o, "primitive_ops", sm.n_primitive);
	cJSON_AddNumberToObject(o, "tensors", sm.n_tensors);
	cJSON_AddNumberToObject(o, "inputs", sm.n_inputs);
	cJSON_AddNumberToObject(o, "params", sm.n_params);
	cJSON_AddNumberToObject(o, "consts", sm.n_consts);
	cJSON_AddNumberToObject(o, "outputs", sm.n_outputs);
	cJSON_AddNumberToObject(o, "temps", sm.n_temps);
	cJSON_AddNumberToObject(o, "input_bytes", (double)sm.input_bytes);
	cJSON_AddNumberToObject(o, "param_bytes", (double)sm.param_bytes);
	cJSON_AddNumberToObject(o, "output_bytes", (double)sm.output_bytes);
	cJSON_AddNumberToObject(o, "temp_bytes", (double)sm.temp_bytes);
	if (sm.total_bytes >= 0)
		cJSON_AddNumberToObject(o, "total_bytes",
					(double)sm.total_bytes);
	else
		cJSON_AddNullToObject(o, "total_bytes");	/* overflow */
	return o;
}

/* The graph as given (summary) and as rewritten by the passes so far
 * (summary_now: compound ops opened, dead code gone). */
static cJSON *graph_json(const fl_session *s)
{
	const fl_graph *in = fl_engine_input_graph(s);
	cJSON *o = cJSON_CreateObject();

	add_str_or_null(o, "name", in->name);
	add_str_or_null(o, "doc", in->doc);
	cJSON_AddItemToObject(o, "summary", summary_json(in));
	cJSON_AddItemToObject(o, "summary_now",
			      summary_json(fl_engine_graph(s)));
	return o;
}

static cJSON *position_json(const fl_session *s)
{
	fl_pass next = fl_engine_current_pass(s);
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "step", fl_engine_position(s));
	cJSON_AddBoolToObject(o, "done", fl_engine_done(s));
	add_str_or_null(o, "pass",
			next < FL_PASS_COUNT ? fl_pass_name(next) : NULL);
	return o;
}

static cJSON *pairs_json(const fl_op_pair *p, int n)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; i < n; i++) {
		const char *two[2] = {p[i].a, p[i].b};

		cJSON_AddItemToArray(a, cJSON_CreateStringArray(two, 2));
	}
	return a;
}

static cJSON *rule_json(const fl_rule *r)
{
	cJSON *o = cJSON_CreateObject();
	char buf[64];

	cJSON_AddStringToObject(o, "id", r->id);
	cJSON_AddBoolToObject(o, "enabled", r->enabled);
	cJSON_AddStringToObject(o, "stage", r->stage == FL_STAGE_PARTITION ?
				"partition" : "layer2");
	fl_type_set_format(r->producer, buf, sizeof buf);
	cJSON_AddStringToObject(o, "producer", buf);
	fl_type_set_format(r->consumer, buf, sizeof buf);
	cJSON_AddStringToObject(o, "consumer", buf);
	cJSON_AddStringToObject(o, "result", fl_op_type_name(r->result));
	return o;
}

/* The rule table as the session applies it (the strategy switches rules
 * off: fl_engine_opts_effective), with the ids switched off listed
 * apart for a quick look. */
static cJSON *rules_json(const fl_engine_opts *eff)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *all = cJSON_AddArrayToObject(o, "table");
	cJSON *off = cJSON_AddArrayToObject(o, "disabled");

	for (int i = 0; i < eff->rules.n; i++) {
		const fl_rule *r = &eff->rules.rules[i];

		cJSON_AddItemToArray(all, rule_json(r));
		if (!r->enabled)
			cJSON_AddItemToArray(off, cJSON_CreateString(r->id));
	}
	return o;
}

static cJSON *feedback_json(const fl_engine_opts *o)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; i < o->n_feedback; i++) {
		cJSON *f = cJSON_CreateObject();

		cJSON_AddStringToObject(f, "a", o->feedback[i].a);
		cJSON_AddStringToObject(f, "b", o->feedback[i].b);
		cJSON_AddStringToObject(f, "reason", o->feedback_reason[i]);
		cJSON_AddItemToArray(a, f);
	}
	return a;
}

static cJSON *layer1_opts_json(const fl_layer1_opts *l)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "sched_budget", (double)l->sched_budget);
	cJSON_AddNumberToObject(o, "max_recompute", l->max_recompute);
	cJSON_AddNumberToObject(o, "max_stmts", l->max_stmts);
	cJSON_AddNumberToObject(o, "time_budget_s", l->time_budget_s);
	cJSON_AddItemToObject(o, "tile", int64_array(l->tile, l->n_tile));
	return o;
}

static cJSON *run_opts_json(const fl_run_opts *r)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "warmup", r->warmup);
	cJSON_AddNumberToObject(o, "repeat", r->repeat);
	cJSON_AddNumberToObject(o, "atol", r->atol);
	cJSON_AddNumberToObject(o, "rtol", r->rtol);
	cJSON_AddNumberToObject(o, "timeout_s", r->timeout_s);
	return o;
}

static cJSON *options_json(const fl_session *s)
{
	const fl_engine_opts *given = fl_engine_options(s);
	fl_engine_opts eff;
	cJSON *o = cJSON_CreateObject();

	fl_engine_opts_effective(given, &eff);
	cJSON_AddStringToObject(o, "strategy",
				fl_strategy_name(given->strategy));
	cJSON_AddBoolToObject(o, "preprocess", given->preprocess);
	cJSON_AddStringToObject(o, "stop_after",
				fl_pass_name(given->stop_after));
	cJSON_AddBoolToObject(o, "run_kernels", given->run_kernels);
	cJSON_AddItemToObject(o, "rules", rules_json(&eff));
	cJSON_AddItemToObject(o, "never_fuse",
			      pairs_json(given->never_fuse, given->n_never));
	cJSON_AddItemToObject(o, "fuse",
			      pairs_json(given->fuse, given->n_fuse));
	cJSON_AddItemToObject(o, "feedback", feedback_json(given));
	cJSON_AddItemToObject(o, "layer1", layer1_opts_json(&given->layer1));
	cJSON_AddItemToObject(o, "run", run_opts_json(&given->run));
	return o;
}

/* Index of the kernel holding each op (-1: none), or NULL before layer 1
 * (or out of memory: the report then names no kernels). */
static int *kernel_of_ops(const fl_graph *g, const fl_program *p)
{
	int *k_of;

	if (!p || !(k_of = malloc(((size_t)g->n_ops + 1) * sizeof *k_of)))
		return NULL;
	for (int i = 0; i < g->n_ops; i++)
		k_of[i] = -1;
	for (int k = 0; k < p->n_kernels; k++)
		for (int i = 0; i < p->kernels[k].n_ops; i++)
			if (p->kernels[k].ops[i] < g->n_ops)
				k_of[p->kernels[k].ops[i]] = k;
	return k_of;
}

/* "R1 R4" as ["R1", "R4"]. */
static cJSON *history_json(const char *h)
{
	cJSON *a = cJSON_CreateArray();
	char id[sizeof ((fl_micro_graph *)0)->history];

	while (*h) {
		size_t n = strcspn(h, " ");

		if (n > 0 && n < sizeof id) {
			memcpy(id, h, n);
			id[n] = '\0';
			cJSON_AddItemToArray(a, cJSON_CreateString(id));
		}
		h += n + strspn(h + n, " ");
	}
	return a;
}

static cJSON *full_micro_graph_json(const fl_graph *g, const fl_micro_graph *m,
				    const fl_program *p)
{
	cJSON *o = cJSON_CreateObject();
	const char *kernel = NULL;

	cJSON_AddNumberToObject(o, "id", m->id);
	cJSON_AddStringToObject(o, "type", fl_op_type_name(m->type));
	cJSON_AddItemToObject(o, "members",
			      op_names(g, m->members, m->n_members));
	cJSON_AddItemToObject(o, "history", history_json(m->history));
	add_index(o, "cluster", m->cluster);
	/* the kernel holding its ops: a kernel layer 2 or 3 made holds
	 * several micro-graphs, and names only the first as its own */
	for (int k = 0; p && k < p->n_kernels && m->n_members > 0; k++)
		for (int i = 0; i < p->kernels[k].n_ops; i++)
			if (p->kernels[k].ops[i] == m->members[0])
				kernel = p->kernels[k].name;
	add_str_or_null(o, "kernel", kernel);
	return o;
}

static cJSON *micro_graphs_json(const fl_session *s)
{
	const fl_partition *p = fl_engine_partition(s);
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; p && i < p->n_groups; i++)
		if (p->groups[i].alive)
			cJSON_AddItemToArray(a, full_micro_graph_json(
				fl_engine_graph(s), &p->groups[i],
				fl_engine_program(s)));
	return a;
}

static cJSON *provenance_json(const fl_op *op)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "origin",
				op->prov.origin ? op->prov.origin : op->name);
	add_str_or_null(o, "compound", op->prov.compound);
	add_str_or_null(o, "rewrite", op->prov.rewrite);
	add_str_or_null(o, "source_op", op->prov.source_op);
	return o;
}

/* One op: its kind, its type with the classifier's reason (null before
 * the classify pass), where it ended up. */
static cJSON *full_op_json(const fl_session *s, int i, const int *k_of)
{
	const fl_graph *g = fl_engine_graph(s);
	const fl_partition *p = fl_engine_partition(s);
	const fl_program *prog = fl_engine_program(s);
	bool in_p = p && i < p->n_ops;
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "name", g->ops[i].name);
	cJSON_AddStringToObject(o, "kind", fl_op_kind_name(g->ops[i].kind));
	add_str_or_null(o, "type", in_p && p->classified ?
			fl_op_type_name(p->type_of[i]) : NULL);
	add_str_or_null(o, "type_reason", in_p && p->classified ?
			p->type_reason[i] : NULL);
	add_index(o, "cluster", in_p && p->cluster_of ? p->cluster_of[i] : -1);
	add_index(o, "micro_graph", in_p && p->group_of ? p->group_of[i] : -1);
	add_str_or_null(o, "kernel", k_of && k_of[i] >= 0 ?
			prog->kernels[k_of[i]].name : NULL);
	cJSON_AddItemToObject(o, "provenance", provenance_json(&g->ops[i]));
	return o;
}

static cJSON *ops_json(const fl_session *s, const int *k_of)
{
	const fl_graph *g = fl_engine_graph(s);
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; i < g->n_ops; i++)
		cJSON_AddItemToArray(a, full_op_json(s, i, k_of));
	return a;
}

/* Bytes of t in its element type (docs/types.md). */
static double tensor_bytes(const fl_tensor *t)
{
	return (double)fl_shape_numel(&t->shape) * fl_dtype_size(t->dtype);
}

/* "stitched_edge": {"from": G, "to": G} when layer 2 stitched the edge
 * tensor kt lies on inside kernel k, else null. */
static void add_stitched_edge(cJSON *o, const fl_session *s,
			      const fl_kernel *k, const fl_kernel_tensor *kt)
{
	int from, to;
	cJSON *e;

	if (!fl_stitch_edge_tensor(k, fl_engine_graph(s),
				   fl_engine_partition(s), kt->tensor, &from,
				   &to)) {
		cJSON_AddNullToObject(o, "stitched_edge");
		return;
	}
	e = cJSON_AddObjectToObject(o, "stitched_edge");
	cJSON_AddNumberToObject(e, "from_micro_graph", from);
	cJSON_AddNumberToObject(e, "to_micro_graph", to);
}

static cJSON *full_tensor_json(const fl_graph *g, const fl_kernel_tensor *kt)
{
	const fl_tensor *t = &g->tensors[kt->tensor];
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "name", t->name);
	cJSON_AddStringToObject(o, "role", fl_role_name(t->role));
	cJSON_AddItemToObject(o, "shape",
			      int64_array(t->shape.dim, t->shape.rank));
	cJSON_AddNumberToObject(o, "bytes", tensor_bytes(t));
	cJSON_AddStringToObject(o, "placement", fl_placement_name(kt->place));
	cJSON_AddBoolToObject(o, "read", kt->read);
	cJSON_AddBoolToObject(o, "written", kt->written);
	/* a global tensor has no per-tile box: it lives in main memory */
	if (kt->place != FL_PLACE_GLOBAL)
		cJSON_AddItemToObject(o, "box", int64_array(kt->box, kt->rank));
	else
		cJSON_AddNullToObject(o, "box");
	cJSON_AddNumberToObject(o, "bytes_kept", (double)kt->bytes_kept);
	cJSON_AddStringToObject(o, "why", kt->why);
	return o;
}

static int64_t kernel_bytes_kept(const fl_kernel *k)
{
	int64_t sum = 0;

	for (int t = 0; t < k->n_tensors; t++)
		sum += k->tensors[t].bytes_kept;
	return sum;
}

/* The micro-graphs of k's ops, each once: several when layer 2
 * stitched them (or layer 3 ran them side by side). */
static cJSON *kernel_groups_json(const fl_session *s, const fl_kernel *k)
{
	int n = fl_stitch_kernel_groups(k, fl_engine_partition(s), NULL, 0);
	int *ids = malloc(((size_t)n + 1) * sizeof *ids);
	cJSON *a = cJSON_CreateArray();

	if (!ids)
		return a;
	fl_stitch_kernel_groups(k, fl_engine_partition(s), ids, n);
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
	free(ids);
	return a;
}

/* What layers 2 and 3 made of k: the micro-graphs layer 2 stitched into
 * it (empty unless several), and the branches layer 3 runs side by side
 * in it (empty for any other kernel). */
static void add_layers(cJSON *o, const fl_session *s, const fl_kernel *k)
{
	const fl_graph *g = fl_engine_graph(s);
	cJSON *br = cJSON_CreateArray(), *st = kernel_groups_json(s, k);

	if (k->n_branches > 0 || cJSON_GetArraySize(st) < 2) {
		cJSON_Delete(st);
		st = cJSON_CreateArray();
	}
	cJSON_AddItemToObject(o, "stitched_micro_graphs", st);
	for (int b = 0; b < k->n_branches; b++) {
		cJSON *one = cJSON_CreateObject();

		cJSON_AddItemToObject(one, "ops", op_names(g,
			k->branches[b].ops, k->branches[b].n_ops));
		cJSON_AddItemToObject(one, "micro_graphs",
				      kernel_groups_json(s, &k->branches[b]));
		cJSON_AddItemToArray(br, one);
	}
	cJSON_AddItemToObject(o, "branches", br);
}

static cJSON *full_kernel_json(const fl_session *s, const fl_kernel *k)
{
	const fl_graph *g = fl_engine_graph(s);
	cJSON *o = cJSON_CreateObject(), *ts = cJSON_CreateArray();

	cJSON_AddNumberToObject(o, "id", k->id);
	cJSON_AddStringToObject(o, "name", k->name);
	add_index(o, "micro_graph", k->group);
	cJSON_AddItemToObject(o, "ops", op_names(g, k->ops, k->n_ops));
	cJSON_AddNumberToObject(o, "n_ops", k->n_ops);
	cJSON_AddStringToObject(o, "reduce_form",
				fl_reduce_form_name(k->reduce_form));
	cJSON_AddBoolToObject(o, "reduce_form_moved", k->reduce_moved);
	cJSON_AddItemToObject(o, "tile", int64_array(k->tile, k->n_tile));
	add_tiling(o, k);
	add_str_or_null(o, "schedule_tree", k->schedule_text);
	add_layers(o, s, k);
	for (int t = 0; t < k->n_tensors; t++) {
		cJSON *tj = full_tensor_json(g, &k->tensors[t]);

		add_stitched_edge(tj, s, k, &k->tensors[t]);
		cJSON_AddItemToArray(ts, tj);
	}
	cJSON_AddItemToObject(o, "tensors", ts);
	cJSON_AddNumberToObject(o, "bytes_kept", (double)kernel_bytes_kept(k));
	return o;
}

/* The kernels array, and the bytes all of them keep out of main memory
 * into root. */
static void add_kernels(cJSON *root, const fl_session *s)
{
	const fl_program *p = fl_engine_program(s);
	cJSON *a = cJSON_AddArrayToObject(root, "kernels");
	int64_t kept = 0;

	for (int k = 0; p && k < p->n_kernels; k++) {
		cJSON_AddItemToArray(a, full_kernel_json(s, &p->kernels[k]));
		kept += kernel_bytes_kept(&p->kernels[k]);
	}
	cJSON_AddNumberToObject(root, "bytes_kept_out_of_main_memory",
				(double)kept);
}

/* ---- parallel stitching (the layer-3 analysis; nothing is stitched) -- */

static cJSON *machine_json(const fl_roofline *m)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "cores", m->cores);
	cJSON_AddNumberToObject(o, "bandwidth_bytes_per_s", m->bw);
	cJSON_AddNumberToObject(o, "peak_flops", m->peak);
	cJSON_AddNumberToObject(o, "launch_s", m->launch);
	cJSON_AddNumberToObject(o, "grain", (double)m->grain);
	return o;
}

static cJSON *par_unit_json(const fl_par_unit *u)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "id", u->id);
	cJSON_AddStringToObject(o, "name", u->name);
	cJSON_AddNumberToObject(o, "n_ops", u->n_ops);
	cJSON_AddNumberToObject(o, "bytes", (double)u->bytes);
	cJSON_AddNumberToObject(o, "flops", u->flops);
	cJSON_AddNumberToObject(o, "cores", u->cores);
	cJSON_AddNumberToObject(o, "roof_s", u->roof);
	cJSON_AddNumberToObject(o, "cost_s", u->cost);
	cJSON_AddBoolToObject(o, "compute_bound", u->compute_bound);
	cJSON_AddBoolToObject(o, "custom", u->custom);
	add_index(o, "branch_set", u->branch_set);
	add_index(o, "branch", u->branch);
	return o;
}

static cJSON *unit_names(const fl_par_analysis *a, const int *units, int n)
{
	cJSON *arr = cJSON_CreateArray();

	for (int i = 0; i < n; i++) {
		const char *name = a->units[units[i]].name;

		cJSON_AddItemToArray(arr, cJSON_CreateString(name));
	}
	return arr;
}

static cJSON *par_try_json(const fl_par_try *t)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "first", t->first);
	cJSON_AddNumberToObject(o, "count", t->count);
	cJSON_AddNumberToObject(o, "sum_s", t->sum);
	cJSON_AddNumberToObject(o, "max_s", t->max);
	cJSON_AddNumberToObject(o, "together_s", t->together);
	cJSON_AddNumberToObject(o, "gain_s", t->gain);
	cJSON_AddBoolToObject(o, "accepted", t->accepted);
	cJSON_AddBoolToObject(o, "stitched", t->stitched);
	return o;
}

static cJSON *par_round_json(const fl_par_analysis *a, const fl_par_round *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *cand = cJSON_AddArrayToObject(o, "candidates");
	cJSON *tries = cJSON_AddArrayToObject(o, "tries");

	for (int i = 0; i < r->n; i++) {
		cJSON *c = cJSON_CreateObject();

		cJSON_AddStringToObject(c, "unit", a->units[r->cand[i]].name);
		cJSON_AddNumberToObject(c, "branch", r->branch[i]);
		cJSON_AddNumberToObject(c, "cost_s", a->units[r->cand[i]].cost);
		cJSON_AddItemToArray(cand, c);
	}
	for (int i = 0; i < r->n_tries; i++)
		cJSON_AddItemToArray(tries, par_try_json(&r->tries[i]));
	return o;
}

static cJSON *par_set_json(const fl_par_analysis *a, const fl_par_set *set)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *br = cJSON_CreateArray(), *rounds = cJSON_CreateArray();

	cJSON_AddStringToObject(o, "head", set->head);
	for (int b = 0; b < set->n_branches; b++) {
		const fl_par_branch *pb = &set->branches[b];
		cJSON *bj = cJSON_CreateObject();

		cJSON_AddItemToObject(bj, "units",
				      unit_names(a, pb->units, pb->n_units));
		cJSON_AddItemToObject(bj, "candidates",
				      unit_names(a, pb->cand, pb->n_cand));
		cJSON_AddItemToArray(br, bj);
	}
	cJSON_AddItemToObject(o, "branches", br);
	for (int r = 0; r < set->n_rounds; r++)
		cJSON_AddItemToArray(rounds,
				     par_round_json(a, &set->rounds[r]));
	cJSON_AddItemToObject(o, "rounds", rounds);
	return o;
}

/* The accepted tries of every set and round: the groups layer 3 would
 * run together. */
static cJSON *par_groups_json(const fl_par_analysis *a)
{
	cJSON *arr = cJSON_CreateArray();

	for (int s = 0; s < a->n_sets; s++)
		for (int r = 0; r < a->sets[s].n_rounds; r++) {
			const fl_par_round *rd = &a->sets[s].rounds[r];

			for (int t = 0; t < rd->n_tries; t++) {
				const fl_par_try *tr = &rd->tries[t];
				cJSON *g;

				if (!tr->accepted)
					continue;
				g = cJSON_CreateObject();
				cJSON_AddNumberToObject(g, "branch_set", s);
				cJSON_AddNumberToObject(g, "round", r);
				cJSON_AddItemToObject(g, "units", unit_names(
					a, rd->cand + tr->first, tr->count));
				cJSON_AddNumberToObject(g, "gain_s", tr->gain);
				/* false when layer 3 did not run, or found the
				 * set would be a cycle */
				cJSON_AddBoolToObject(g, "stitched",
						      tr->stitched);
				if (tr->stitched)
					cJSON_AddStringToObject(g, "kernel",
								tr->kernel);
				else
					cJSON_AddNullToObject(g, "kernel");
				cJSON_AddItemToArray(arr, g);
			}
		}
	return arr;
}

/* by_pass: a is the analysis the layer-3 pass acted on (its units are
 * the kernels before the pass; a group's "kernel" is the one it became),
 * else one made for the report on the session's state. */
static cJSON *parallel_json(const fl_par_analysis *a, bool by_pass)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *units = cJSON_CreateArray(), *sets = cJSON_CreateArray();

	cJSON_AddBoolToObject(o, "stitched", by_pass);
	cJSON_AddStringToObject(o, "units_are", fl_par_unit_kind_name(a->kind));
	cJSON_AddItemToObject(o, "machine", machine_json(&a->machine));
	for (int i = 0; i < a->n_units; i++)
		cJSON_AddItemToArray(units, par_unit_json(&a->units[i]));
	cJSON_AddItemToObject(o, "units", units);
	for (int i = 0; i < a->n_sets; i++)
		cJSON_AddItemToArray(sets, par_set_json(a, &a->sets[i]));
	cJSON_AddItemToObject(o, "branch_sets", sets);
	cJSON_AddItemToObject(o, "groups", par_groups_json(a));
	cJSON_AddNumberToObject(o, "n_groups", a->n_groups);
	cJSON_AddNumberToObject(o, "total_gain_s", a->total_gain);
	return o;
}

/* ---- errors the engine reports ------------------------------------- */

static void add_error(cJSON *errors, const char *source, const char *status,
		      const char *message)
{
	cJSON *e = cJSON_CreateObject();

	cJSON_AddStringToObject(e, "source", source);
	add_str_or_null(e, "status", status);
	cJSON_AddStringToObject(e, "message", message);
	cJSON_AddItemToArray(errors, e);
}

static void session_errors(cJSON *errors, const fl_session *s)
{
	const fl_build *b = fl_engine_build(s);
	const fl_run_result *r = fl_engine_run_result(s);

	if (b && b->status != FL_RUN_OK)
		add_error(errors, "build", fl_run_status_name(b->status),
			  b->message);
	if (r && r->status != FL_RUN_OK)
		add_error(errors, "run", fl_run_status_name(r->status),
			  r->message);
}

static void ladder_errors(cJSON *errors, const fl_ladder *l)
{
	char src[64];

	for (int i = 0; l && i < l->n; i++) {
		const fl_ladder_step *st = &l->steps[i];

		snprintf(src, sizeof src, "strategy %s",
			 fl_strategy_name(st->strategy));
		if (!st->ran)
			add_error(errors, src, NULL, st->error);
		else if (st->status != FL_RUN_OK)
			add_error(errors, src, fl_run_status_name(st->status),
				  st->message);
	}
}

/* ---- strategies (the ladder) ----------------------------------------- */

static void add_seconds_or_null(cJSON *o, const char *key, double v)
{
	if (v >= 0)
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

/* "faster", "slower", "within noise", "one round" (no spread to
 * compare), or NULL when not compared. */
static const char *label_or_null(fl_timing_label l)
{
	switch (l) {
	case FL_TIMING_FASTER: return "faster";
	case FL_TIMING_SLOWER: return "slower";
	case FL_TIMING_NOISE: return "within noise";
	case FL_TIMING_ONE_ROUND: return "one round";
	case FL_TIMING_UNKNOWN: break;
	}
	return NULL;
}

/* Paired ratios (this / unfused, pair by pair), null when none. */
static void add_ratio(cJSON *o, const char *key, const fl_ratio *r)
{
	cJSON *j;

	if (r->s.n <= 0) {
		cJSON_AddNullToObject(o, key);
		return;
	}
	j = cJSON_AddObjectToObject(o, key);
	cJSON_AddNumberToObject(j, "median", r->s.median);
	cJSON_AddNumberToObject(j, "q1", r->s.q1);
	cJSON_AddNumberToObject(j, "q3", r->s.q3);
	cJSON_AddNumberToObject(j, "min", r->s.min);
	cJSON_AddNumberToObject(j, "max", r->s.max);
	cJSON_AddNumberToObject(j, "pairs", r->s.n);
	cJSON_AddNumberToObject(j, "quicker", r->faster);
	cJSON_AddNumberToObject(j, "slower", r->slower);
}

static cJSON *ladder_kernel_json(const fl_ladder_kernel *k)
{
	cJSON *o = cJSON_CreateObject(), *e;

	cJSON_AddStringToObject(o, "name", k->name);
	cJSON_AddStringToObject(o, "first_op", k->first_op);
	cJSON_AddStringToObject(o, "last_op", k->last_op);
	cJSON_AddNumberToObject(o, "n_ops", k->n_ops);
	cJSON_AddNumberToObject(o, "median_s", k->r.seconds);
	cJSON_AddNumberToObject(o, "min_s", k->r.min_seconds);
	cJSON_AddNumberToObject(o, "max_s", k->r.max_seconds);
	cJSON_AddNumberToObject(o, "runs", k->r.n_timed);
	cJSON_AddNumberToObject(o, "bytes", (double)k->r.bytes);
	add_seconds_or_null(o, "unfused_seconds", k->unfused_seconds);
	add_seconds_or_null(o, "unfused_min_s", k->unfused_min);
	add_seconds_or_null(o, "unfused_max_s", k->unfused_max);
	cJSON_AddBoolToObject(o, "paired", k->paired);
	add_ratio(o, "ratio_to_unfused", &k->ratio);
	add_str_or_null(o, "label", label_or_null(k->label));
	add_str_or_null(o, "why_slower", k->why[0] ? k->why : NULL);
	cJSON_AddBoolToObject(o, "verified", k->r.ok);
	e = cJSON_AddObjectToObject(o, "errors");
	cJSON_AddNumberToObject(e, "max_abs", k->r.max_abs);
	cJSON_AddNumberToObject(e, "max_rel", k->r.max_rel);
	return o;
}

/* One strategy.  What it measured is only there when it ran (ran true):
 * a strategy that stopped early has null status and timings. */
static cJSON *ladder_step_json(const fl_ladder_step *st)
{
	cJSON *o = cJSON_CreateObject(), *t, *ks;

	cJSON_AddStringToObject(o, "strategy", fl_strategy_name(st->strategy));
	cJSON_AddBoolToObject(o, "ran", st->ran);
	add_str_or_null(o, "error", st->ran ? NULL : st->error);
	add_str_or_null(o, "status",
			st->ran ? fl_run_status_name(st->status) : NULL);
	cJSON_AddStringToObject(o, "message", st->message);
	cJSON_AddBoolToObject(o, "interrupted", st->interrupted);
	cJSON_AddStringToObject(o, "target", fl_target_name(st->target));
	cJSON_AddStringToObject(o, "device", st->device);
	cJSON_AddStringToObject(o, "note", st->note);
	cJSON_AddNumberToObject(o, "n_kernels", st->n_kernels);
	if (st->ran) {
		t = cJSON_AddObjectToObject(o, "total");
		cJSON_AddNumberToObject(t, "median_s", st->total_seconds);
		cJSON_AddNumberToObject(t, "min_s", st->total_min);
		cJSON_AddNumberToObject(t, "max_s", st->total_max);
	} else {
		cJSON_AddNullToObject(o, "total");
	}
	if (st->speedup > 0)	/* 0: the engine could not measure one */
		cJSON_AddNumberToObject(o, "speedup", st->speedup);
	else
		cJSON_AddNullToObject(o, "speedup");
	cJSON_AddBoolToObject(o, "within_noise", st->within_noise);
	add_ratio(o, "ratio_to_unfused", &st->vs_unfused);
	add_str_or_null(o, "label", label_or_null(st->label));
	cJSON_AddNumberToObject(o, "max_abs", st->max_abs);
	cJSON_AddNumberToObject(o, "max_rel", st->max_rel);
	cJSON_AddBoolToObject(o, "verified", st->verified);
	ks = cJSON_AddArrayToObject(o, "kernels");
	for (int k = 0; k < st->n_kernels; k++)
		cJSON_AddItemToArray(ks, ladder_kernel_json(&st->kernels[k]));
	return o;
}

static cJSON *strategies_json(const fl_ladder *l)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; l && i < l->n; i++)
		cJSON_AddItemToArray(a, ladder_step_json(&l->steps[i]));
	return a;
}

static void add_load(cJSON *o, const char *key, double v)
{
	if (v >= 0)
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

/* How the ladder's times were taken; null when no ladder ran. */
static cJSON *timing_json(const fl_ladder *l)
{
	cJSON *o, *c;

	if (!l || l->n == 0)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "interleaved", l->interleaved);
	cJSON_AddStringToObject(o, "status", fl_run_status_name(l->timing_status));
	cJSON_AddStringToObject(o, "message", l->timing_message);
	cJSON_AddStringToObject(o, "machine", l->machine);
	add_load(o, "load_before", l->load_before);
	add_load(o, "load_after", l->load_after);
	cJSON_AddBoolToObject(o, "pinned", l->pinned);
	cJSON_AddNumberToObject(o, "threads", l->n_threads);
	cJSON_AddStringToObject(o, "affinity", l->affinity);
	cJSON_AddNumberToObject(o, "rounds", l->rounds);
	if (l->interleaved && l->copy_gbps.n > 0) {
		c = cJSON_AddObjectToObject(o, "copy");
		cJSON_AddNumberToObject(c, "median_gbps", l->copy_gbps.median);
		cJSON_AddNumberToObject(c, "min_gbps", l->copy_gbps.min);
		cJSON_AddNumberToObject(c, "max_gbps", l->copy_gbps.max);
		cJSON_AddNumberToObject(c, "bytes", (double)l->copy_bytes);
		cJSON_AddNumberToObject(c, "threads", l->copy_threads);
	} else {
		cJSON_AddNullToObject(o, "copy");
	}
	return o;
}

/* ---- the report ------------------------------------------------------ */

static cJSON *generator_json(void)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "name", "fuselab");
	cJSON_AddStringToObject(o, "version", FL_VERSION);
	return o;
}

/* The analysis layer 3 acted on, else one made at the session's step;
 * when it cannot be made
 * (out of memory) the field is null and errors says why. */
static void add_parallel(cJSON *root, cJSON *errors, const fl_session *s)
{
	fl_error err = {""};
	fl_par_analysis *a;

	if (fl_engine_parallel(s)) {
		cJSON_AddItemToObject(root, "parallel_groups", parallel_json(
			fl_engine_parallel(s), true));
		return;
	}
	a = fl_stitch_parallel_analyze(fl_engine_graph(s),
				       fl_engine_partition(s),
				       fl_engine_program(s), NULL, &err);
	if (!a) {
		cJSON_AddNullToObject(root, "parallel_groups");
		add_error(errors, "parallel analysis", NULL, err.msg);
		return;
	}
	cJSON_AddItemToObject(root, "parallel_groups", parallel_json(a, false));
	fl_par_analysis_free(a);
}

/* codegen, build and run as --stage prints them, null before the
 * session got there. */
static void add_backend(cJSON *root, const fl_session *s)
{
	const fl_program *p = fl_engine_program(s);

	if (p && p->n_kernels > 0 && fl_engine_kernel_source(s, 0))
		cJSON_AddItemToObject(root, "codegen", fl_report_codegen(s));
	else
		cJSON_AddNullToObject(root, "codegen");
	if (fl_engine_build(s))
		cJSON_AddItemToObject(root, "build", fl_report_build(s));
	else
		cJSON_AddNullToObject(root, "build");
	if (fl_engine_run_result(s) && p)
		cJSON_AddItemToObject(root, "run", fl_report_run(s));
	else
		cJSON_AddNullToObject(root, "run");
}

cJSON *fl_report_full(const fl_session *s, const fl_ladder *ladder)
{
	cJSON *root = cJSON_CreateObject(), *errors = cJSON_CreateArray();
	int *k_of = kernel_of_ops(fl_engine_graph(s), fl_engine_program(s));

	if (!root || !errors) {
		cJSON_Delete(root);
		cJSON_Delete(errors);
		free(k_of);
		return NULL;
	}
	cJSON_AddStringToObject(root, "format", FL_REPORT_FORMAT);
	cJSON_AddItemToObject(root, "generator", generator_json());
	cJSON_AddItemToObject(root, "graph", graph_json(s));
	cJSON_AddItemToObject(root, "position", position_json(s));
	cJSON_AddItemToObject(root, "options", options_json(s));
	cJSON_AddItemToObject(root, "micro_graphs", micro_graphs_json(s));
	cJSON_AddItemToObject(root, "ops", ops_json(s, k_of));
	free(k_of);
	add_kernels(root, s);
	add_parallel(root, errors, s);
	add_backend(root, s);
	cJSON_AddItemToObject(root, "strategies", strategies_json(ladder));
	cJSON_AddItemToObject(root, "timing", timing_json(ladder));
	session_errors(errors, s);
	ladder_errors(errors, ladder);
	cJSON_AddItemToObject(root, "errors", errors);
	cJSON_AddItemToObject(root, "events", fl_report_events(s));
	return root;
}

int fl_export_report(const fl_session *s, const fl_ladder *ladder,
		     const char *path, fl_error *err)
{
	cJSON *j = fl_report_full(s, ladder);
	char *text = j ? cJSON_Print(j) : NULL, *nl;
	size_t n;
	int rc;

	cJSON_Delete(j);
	n = text ? strlen(text) : 0;
	/* one newline at the end, as a text file has */
	nl = text ? realloc(text, n + 2) : NULL;
	if (!nl) {
		free(text);
		fl_error_set(err, "%s: out of memory building the report",
			     path);
		return -1;
	}
	nl[n] = '\n';
	nl[n + 1] = '\0';
	rc = fl_out_write_file(path, nl, n + 1, err);
	free(nl);
	return rc;
}
