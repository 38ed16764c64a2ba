/* Partition: clusters, opening, aggregation by the rule table, user
 * constraints, feedback, explanations, and the engine's stepping. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "loader.h"
#include "test_util.h"

#define HEAD "{\"format\":\"fuselab-graph/1\",\"name\":\"t\",\"tensors\":{"

/* APOLLO Fig. 3 in miniature: two elementwise primitives feed a
 * log_softmax. */
static const char *fig3 = HEAD
	"\"x\":{\"shape\":[8,16],\"role\":\"input\"},"
	"\"y\":{\"shape\":[8,16],\"role\":\"output\"}},\"ops\":["
	"{\"name\":\"p1\",\"op\":\"exp\",\"in\":[\"x\"],\"out\":\"a\"},"
	"{\"name\":\"p2\",\"op\":\"tanh\",\"in\":[\"a\"],\"out\":\"b\"},"
	"{\"name\":\"lsm\",\"op\":\"log_softmax\",\"in\":[\"b\"],\"out\":\"y\"}]}";

static fl_session *open_run(const char *json, fl_engine_opts *o,
			    fl_graph **gp)
{
	fl_graph *g = t_load(json);
	fl_engine_opts dflt;
	fl_error err = {""};
	fl_session *s;

	if (!o) {
		fl_engine_opts_default(&dflt);
		o = &dflt;
	}
	s = fl_engine_open(g, o, &err);
	if (!s)
		fail_msg("open: %s", err.msg);
	if (fl_engine_run(s, &err) < 0)
		fail_msg("run: %s", err.msg);
	if (gp)
		*gp = g;
	else
		fl_graph_free(g);
	return s;
}

static int group_of(const fl_session *s, const char *op)
{
	int i = fl_graph_find_op(fl_engine_graph(s), op);

	if (i < 0)
		fail_msg("no op %s after partition", op);
	return fl_engine_partition(s)->group_of[i];
}

static const fl_micro_graph *group(const fl_session *s, const char *op)
{
	return &fl_engine_partition(s)->groups[group_of(s, op)];
}

/* partition.h: the members of every alive micro-graph are ascending op
 * indices (topological order), however the merges that built it went. */
static void assert_members_ascending(const fl_session *s)
{
	const fl_graph *g = fl_engine_graph(s);
	const fl_partition *p = fl_engine_partition(s);

	for (int m = 0; m < p->n_groups; m++) {
		const fl_micro_graph *mg = &p->groups[m];

		if (!mg->alive)
			continue;
		assert_true(mg->n_members >= 1);
		for (int i = 1; i < mg->n_members; i++)
			if (mg->members[i] <= mg->members[i - 1])
				fail_msg("G%d: member %s (op %d) after %s (op %d)",
					 m, g->ops[mg->members[i]].name,
					 mg->members[i],
					 g->ops[mg->members[i - 1]].name,
					 mg->members[i - 1]);
	}
}

/* Every primitive in exactly one alive micro-graph, the micro-graphs
 * form a DAG and their members are ascending. */
static void assert_valid_partition(const fl_session *s)
{
	const fl_graph *g = fl_engine_graph(s);
	const fl_partition *p = fl_engine_partition(s);
	int *seen = calloc((size_t)g->n_ops + 1, sizeof *seen);
	int *indeg = calloc((size_t)p->n_groups + 1, sizeof *indeg);
	int *queue = malloc(((size_t)p->n_groups + 1) * sizeof *queue);
	int head = 0, tail = 0, alive = 0;

	for (int m = 0; m < p->n_groups; m++) {
		if (!p->groups[m].alive)
			continue;
		alive++;
		for (int i = 0; i < p->groups[m].n_members; i++) {
			int op = p->groups[m].members[i];

			assert_int_equal(p->group_of[op], m);
			seen[op]++;
		}
	}
	for (int i = 0; i < g->n_ops; i++) {
		if (seen[i] != 1)
			fail_msg("op %s is in %d micro-graphs", g->ops[i].name, seen[i]);
		assert_false(fl_op_is_compound(g->ops[i].kind));
	}
	/* Kahn over micro-graph edges (with repeats: fine for in-degrees). */
	for (int c = 0; c < g->n_ops; c++)
		for (int k = 0; k < g->ops[c].n_in; k++) {
			int pr = g->tensors[g->ops[c].in[k]].producer;

			if (pr >= 0 && p->group_of[pr] != p->group_of[c])
				indeg[p->group_of[c]]++;
		}
	for (int m = 0; m < p->n_groups; m++)
		if (p->groups[m].alive && indeg[m] == 0)
			queue[tail++] = m;
	while (head < tail) {
		const fl_micro_graph *m = &p->groups[queue[head++]];

		for (int i = 0; i < m->n_members; i++)
			for (int c = 0; c < g->n_ops; c++)
				for (int k = 0; k < g->ops[c].n_in; k++)
					if (g->tensors[g->ops[c].in[k]].producer ==
						    m->members[i] &&
					    p->group_of[c] != m->id &&
					    --indeg[p->group_of[c]] == 0)
						queue[tail++] = p->group_of[c];
	}
	if (tail != alive)
		fail_msg("micro-graphs form a cycle (%d of %d sorted)", tail, alive);
	assert_members_ascending(s);
	free(seen);
	free(indeg);
	free(queue);
}

static void test_fig3_r1_then_r4(void **state)
{
	fl_session *s = open_run(fig3, NULL, NULL);
	const fl_micro_graph *m = group(s, "p1");

	(void)state;
	assert_valid_partition(s);
	/* p1, p2 and the log_softmax's max reduction: R1 then R4 */
	assert_int_equal(group_of(s, "p2"), m->id);
	assert_int_equal(group_of(s, "lsm.max"), m->id);
	assert_int_equal(m->type, FL_TYPE_R);
	assert_string_equal(m->history, "R1 R4");
	/* the subtraction after the reduction is a separate micro-graph */
	assert_int_not_equal(group_of(s, "lsm.sub"), m->id);
	fl_engine_close(s);
}

static void test_epilogue_and_prologue(void **state)
{
	const char *json = HEAD
		"\"x\":{\"shape\":[1,4,10,10],\"role\":\"input\"},"
		"\"b\":{\"shape\":[4,1,1],\"role\":\"param\"},"
		"\"w\":{\"shape\":[8,4,3,3],\"role\":\"param\"},"
		"\"m\":{\"shape\":[8,8],\"role\":\"param\"},"
		"\"y\":{\"shape\":[1,8,8,8],\"role\":\"output\"},"
		"\"z\":{\"shape\":[1,8,8,8],\"role\":\"output\"}},\"ops\":["
		"{\"name\":\"bias\",\"op\":\"add\",\"in\":[\"x\",\"b\"],\"out\":\"xb\"},"
		"{\"name\":\"conv\",\"op\":\"conv2d\",\"in\":[\"xb\",\"w\"],\"out\":\"c\"},"
		"{\"name\":\"act\",\"op\":\"relu\",\"in\":[\"c\"],\"out\":\"y\"},"
		"{\"name\":\"pre\",\"op\":\"exp\",\"in\":[\"y\"],\"out\":\"e\"},"
		"{\"name\":\"mm\",\"op\":\"matmul\",\"in\":[\"e\",\"m\"],\"out\":\"z\"}]}";
	fl_session *s = open_run(json, NULL, NULL);

	(void)state;
	assert_valid_partition(s);
	/* R6: the bias add is the conv's prologue; R5: relu its epilogue */
	assert_int_equal(group_of(s, "bias"), group_of(s, "conv"));
	assert_int_equal(group_of(s, "act"), group_of(s, "conv"));
	assert_int_equal(group(s, "conv")->type, FL_TYPE_O);
	/* a matmul takes no prologue */
	assert_int_not_equal(group_of(s, "pre"), group_of(s, "mm"));
	fl_engine_close(s);
}

static const char *diamond = HEAD
	"\"x\":{\"shape\":[4,8],\"role\":\"input\"},"
	"\"y\":{\"shape\":[4,8],\"role\":\"output\"}},\"ops\":["
	"{\"name\":\"a\",\"op\":\"exp\",\"in\":[\"x\"],\"out\":\"ta\"},"
	"{\"name\":\"r\",\"op\":\"reduce_sum\",\"in\":[\"ta\"],\"out\":\"tr\","
	"\"attrs\":{\"axes\":[1]}},"
	"{\"name\":\"d\",\"op\":\"div\",\"in\":[\"ta\",\"tr\"],\"out\":\"y\"}]}";

static void test_cycle_rejected_and_explained(void **state)
{
	fl_session *s = open_run(diamond, NULL, NULL);
	fl_error err = {""};
	char why[512];

	(void)state;
	assert_valid_partition(s);
	/* R2 (E->B) would merge a into d, but a -> r -> d makes a cycle */
	assert_int_equal(group_of(s, "a"), group_of(s, "r"));
	assert_int_not_equal(group_of(s, "a"), group_of(s, "d"));
	assert_int_equal(fl_engine_explain(s, "a", "d", why, sizeof why, &err), 0);
	/* the first reason is the refused R2 merge, logged at the time */
	assert_non_null(strstr(why, "would create a cycle through r"));
	assert_int_equal(fl_engine_explain(s, "a", "r", why, sizeof why, &err), 1);
	assert_non_null(strstr(why, "built by R4"));
	assert_int_equal(fl_engine_explain(s, "a", "nope", why, sizeof why, &err), -1);
	assert_non_null(strstr(err.msg, "no op named \"nope\""));
	fl_engine_close(s);
}

static void test_rejection_event_names_cycle(void **state)
{
	fl_session *s = open_run(diamond, NULL, NULL);
	const fl_event_log *log = fl_engine_events(s);
	bool found = false;

	(void)state;
	for (int i = 0; i < fl_event_log_count(log); i++) {
		const fl_event *e = fl_event_log_get(log, i);

		if (e->kind == FL_EV_REJECTED &&
		    strstr(e->reason, "would create a cycle through r"))
			found = true;
	}
	assert_true(found);
	fl_engine_close(s);
}

static void test_disable_rule_and_rules_file(void **state)
{
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *s;
	char why[512];

	(void)state;
	fl_engine_opts_default(&o);
	assert_int_equal(fl_rules_disable(&o.rules, "R4", &err), 0);
	s = open_run(diamond, &o, NULL);
	assert_int_not_equal(group_of(s, "a"), group_of(s, "r"));
	assert_int_equal(fl_engine_explain(s, "a", "r", why, sizeof why, &err), 0);
	assert_non_null(strstr(why, "rule R4 (E->R) is switched off"));
	fl_engine_close(s);
	assert_int_equal(fl_rules_disable(&o.rules, "R99", &err), -1);
	/* a rules file with base none and only R1: nothing merges into r */
	assert_int_equal(fl_rules_load_string(&o.rules,
		"{\"format\":\"fuselab-rules/1\",\"base\":\"none\",\"rules\":["
		"{\"id\":\"X1\",\"producer\":\"E\",\"consumer\":[\"R\"],"
		"\"result\":\"R\"}]}", "r.json", &err), 0);
	assert_int_equal(o.rules.n, 1);
	s = open_run(diamond, &o, NULL);
	assert_int_equal(group_of(s, "a"), group_of(s, "r"));
	assert_string_equal(group(s, "r")->history, "X1");
	fl_engine_close(s);
	assert_int_equal(fl_rules_load_string(&o.rules,
		"{\"format\":\"fuselab-rules/1\",\"rules\":[{\"id\":\"X\","
		"\"producer\":\"Q\",\"consumer\":\"E\",\"result\":\"E\"}]}",
		"bad.json", &err), -1);
	assert_non_null(strstr(err.msg, "bad.json: rules[0].producer: expected a type"));
}

static void test_never_and_fuse(void **state)
{
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *s;
	char why[512];

	(void)state;
	fl_engine_opts_default(&o);
	snprintf(o.never_fuse[0].a, 128, "p2");
	snprintf(o.never_fuse[0].b, 128, "lsm");
	o.n_never = 1;
	s = open_run(fig3, &o, NULL);
	assert_valid_partition(s);
	assert_int_not_equal(group_of(s, "p2"), group_of(s, "lsm.max"));
	assert_int_equal(fl_engine_explain(s, "p2", "lsm", why, sizeof why, &err), 0);
	assert_non_null(strstr(why, "--never-fuse p2,lsm"));
	fl_engine_close(s);

	fl_engine_opts_default(&o);
	snprintf(o.fuse[0].a, 128, "p2");
	snprintf(o.fuse[0].b, 128, "lsm");
	o.n_fuse = 1;
	s = open_run(fig3, &o, NULL);
	assert_valid_partition(s);
	/* the whole log_softmax joins p2: no cycle forbids it */
	for (int i = 0; i < fl_engine_graph(s)->n_ops; i++) {
		const fl_op *op = &fl_engine_graph(s)->ops[i];

		if (!strcmp(op->prov.origin, "lsm"))
			assert_int_equal(fl_engine_partition(s)->group_of[i],
					 group_of(s, "p2"));
	}
	fl_engine_close(s);

	/* p1 and lsm cannot be together without p2: a cycle through p2 */
	snprintf(o.fuse[0].a, 128, "p1");
	s = open_run(fig3, &o, NULL);
	assert_valid_partition(s);
	{
		const fl_event_log *log = fl_engine_events(s);
		bool refused = false;

		for (int i = 0; i < fl_event_log_count(log); i++)
			refused |= strstr(fl_event_log_get(log, i)->reason,
					  "--fuse p1,lsm refused: merging would "
					  "create a cycle through p2") != NULL;
		assert_true(refused);
	}
	fl_engine_close(s);

	/* unknown op names are refused at open */
	snprintf(o.fuse[0].b, 128, "nosuch");
	{
		fl_graph *g = t_load(fig3);

		assert_null(fl_engine_open(g, &o, &err));
		assert_non_null(strstr(err.msg, "no op named \"nosuch\""));
		fl_graph_free(g);
	}
}

/* A user op named like a compound op's expansion ("sm.exp") later in the
 * file: the expansion picks another name, nothing clashes. */
static void test_open_avoids_user_names(void **state)
{
	const char *json = HEAD
		"\"x\":{\"shape\":[4,8],\"role\":\"input\"},"
		"\"y\":{\"shape\":[4,8],\"role\":\"output\"}},\"ops\":["
		"{\"name\":\"sm\",\"op\":\"softmax\",\"in\":[\"x\"],\"out\":\"s\"},"
		"{\"name\":\"sm.exp\",\"op\":\"neg\",\"in\":[\"s\"],\"out\":\"y\"}]}";
	fl_session *s = open_run(json, NULL, NULL);
	const fl_graph *g = fl_engine_graph(s);
	int user = fl_graph_find_op(g, "sm.exp");

	(void)state;
	assert_valid_partition(s);
	assert_true(user >= 0);
	assert_int_equal(g->ops[user].kind, FL_OP_NEG);
	/* ops stay in dataflow order: the user op comes last */
	assert_int_equal(user, g->n_ops - 1);
	fl_engine_close(s);
}

static void test_custom_op_splits_clusters(void **state)
{
	const char *json = HEAD
		"\"x\":{\"shape\":[4,8],\"role\":\"input\"},"
		"\"y\":{\"shape\":[4,8],\"role\":\"output\"}},\"ops\":["
		"{\"name\":\"a\",\"op\":\"exp\",\"in\":[\"x\"],\"out\":\"ta\"},"
		"{\"name\":\"c\",\"op\":\"custom\",\"in\":[\"ta\"],\"out\":\"tc\"},"
		"{\"name\":\"b\",\"op\":\"neg\",\"in\":[\"tc\"],\"out\":\"y\"}]}";
	fl_session *s = open_run(json, NULL, NULL);
	const fl_partition *p = fl_engine_partition(s);
	fl_error err = {""};
	char why[512];

	(void)state;
	assert_valid_partition(s);
	assert_int_equal(p->n_clusters, 2);
	assert_int_equal(fl_engine_explain(s, "a", "c", why, sizeof why, &err), 0);
	assert_non_null(strstr(why, "c is an op the engine cannot model"));
	assert_int_equal(fl_engine_explain(s, "a", "b", why, sizeof why, &err), 0);
	assert_non_null(strstr(why, "different sub-graphs"));
	fl_engine_close(s);
}

static void test_feedback_split(void **state)
{
	fl_session *s = open_run(fig3, NULL, NULL);
	const fl_event_log *log = fl_engine_events(s);
	fl_error err = {""};
	int merge = -1;

	(void)state;
	for (int i = 0; i < fl_event_log_count(log) && merge < 0; i++) {
		const fl_event *e = fl_event_log_get(log, i);

		if (e->kind == FL_EV_MERGED && !strcmp(e->rule, "R4"))
			merge = i;
	}
	assert_true(merge >= 0);
	assert_int_equal(group_of(s, "p2"), group_of(s, "lsm.max"));
	assert_true(fl_engine_feedback_split(s, merge, "scheduler budget ran out",
					     &err) > 0);
	assert_valid_partition(s);
	assert_int_not_equal(group_of(s, "p2"), group_of(s, "lsm.max"));
	log = fl_engine_events(s);
	{
		bool fb = false;

		for (int i = 0; i < fl_event_log_count(log); i++)
			fb |= fl_event_log_get(log, i)->kind == FL_EV_FEEDBACK;
		assert_true(fb);
	}
	assert_int_equal(fl_engine_feedback_split(s, 0, "x", &err), -1);
	fl_engine_close(s);
}

/* Stepping one decision at a time gives the same log and partition as
 * running straight through. */
static void assert_stepping_equals_running(const fl_graph *g)
{
	fl_error err = {""};
	fl_session *a = fl_engine_open(g, NULL, &err), *b;
	int total, steps = 0;

	assert_non_null(a);
	b = fl_engine_open(g, NULL, &err);
	assert_true(fl_engine_run(a, &err) >= 0);
	total = fl_engine_total(b, &err);
	assert_int_equal(total, fl_engine_position(a));
	assert_int_equal(fl_engine_position(b), 0);
	while (!fl_engine_done(b)) {
		const fl_event *next = fl_engine_peek(b, &err);
		int before = fl_engine_position(b);

		if (next)
			assert_int_equal(next->seq, before);
		assert_true(fl_engine_step(b, &err) == before + 1 ||
			    fl_engine_done(b));
		if (++steps > total + 1)
			fail_msg("stepping does not end");
	}
	assert_true(fl_event_log_equal(fl_engine_events(a), fl_engine_events(b)));
	for (int i = 0; i < fl_engine_graph(a)->n_ops; i++)
		assert_int_equal(fl_engine_partition(a)->group_of[i],
				 fl_engine_partition(b)->group_of[i]);
	/* goto back and forth lands on the same states */
	assert_int_equal(fl_engine_goto(b, total / 2, &err), total / 2);
	assert_false(fl_engine_done(b) && total > 0);
	assert_true(fl_engine_step_pass(b, &err) > total / 2);
	fl_engine_close(a);
	fl_engine_close(b);
}

static void test_stepping_equals_running(void **state)
{
	fl_graph *g = t_load(fig3);

	(void)state;
	assert_stepping_equals_running(g);
	fl_graph_free(g);
}

static fl_session *open_sample(const char *name, fl_engine_opts *o)
{
	fl_error err = {""};
	fl_graph *g = t_load_sample(name);
	fl_session *s = fl_engine_open(g, o, &err);
	if (!s || fl_engine_run(s, &err) < 0)
		fail_msg("%s: %s", name, err.msg);
	fl_graph_free(g);
	assert_valid_partition(s);
	return s;
}

/* The paper examples partition as APOLLO describes them. */
static void test_paper_samples(void **state)
{
	fl_session *s = open_sample("apollo_fig3", NULL);
	static const char *const fig3_groups[3][4] = {
		{"op1", "op2", "op3.max"},
		{"op3.sub", "op3.exp", "op3.sum"},
		{"op3.log", "op3.out"},
	};
	static const char *const fig3_rules[3] = {"R1 R4", "R3 R4", "R2"};

	(void)state;
	/* Fig. 3 / Example 2, as the sample's doc explains: the paper's two
	 * groups (primitives + reduction; the final subtraction) become
	 * three, because the stable log_softmax has two reductions and no
	 * partition rule merges a reduction with its consumers. */
	assert_int_equal(fl_partition_count_alive(fl_engine_partition(s)), 3);
	for (int k = 0; k < 3; k++) {
		const fl_micro_graph *m = group(s, fig3_groups[k][0]);
		int n = 0;

		while (n < 4 && fig3_groups[k][n]) {
			assert_int_equal(group_of(s, fig3_groups[k][n]), m->id);
			n++;
		}
		assert_int_equal(m->n_members, n);
		assert_string_equal(m->history, fig3_rules[k]);
	}
	assert_non_null(strstr(fl_engine_input_graph(s)->doc,
			       "three micro-graphs where the paper's Example 2 "
			       "gives two"));
	fl_engine_close(s);

	/* Fig. 1: op3 takes its epilogue (R5); op71 joins op6 (R4); F1 in
	 * three micro-graphs, F2 in two */
	s = open_sample("apollo_fig1", NULL);
	assert_int_equal(group_of(s, "op4.max"), group_of(s, "op3"));
	assert_non_null(strstr(group(s, "op3")->history, "R5"));
	assert_int_equal(group_of(s, "op6"), group_of(s, "op7.sqsum"));
	assert_non_null(strstr(group(s, "op6")->history, "R4"));
	assert_int_equal(fl_engine_partition(s)->n_clusters, 2);
	assert_int_equal(fl_partition_count_alive(fl_engine_partition(s)), 5);
	fl_engine_close(s);

	/* Listing 1 and MICRO Fig. 1: the elementwise producer is the
	 * sliding-window op's prologue (R6) */
	s = open_sample("apollo_listing1", NULL);
	assert_int_equal(group_of(s, "S1_bias_add"), group_of(s, "S2_max_pool"));
	assert_string_equal(group(s, "S2_max_pool")->history, "R6");
	fl_engine_close(s);
	s = open_sample("micro2020_fig1", NULL);
	assert_int_equal(group_of(s, "S0_quantize.round"), group_of(s, "S1_S2_conv"));
	assert_int_equal(group_of(s, "S3_relu"), group_of(s, "S1_S2_conv"));
	assert_non_null(strstr(group(s, "S1_S2_conv")->history, "R6"));
	fl_engine_close(s);
}

/* Merges put a producer's micro-graph into its consumer's, yet members
 * stay ascending after aggregation (--fuse merges are checked the same
 * way: assert_valid_partition in test_never_and_fuse). */
static void test_members_ascending(void **state)
{
	static const char *const names[] = {
		"apollo_fig1", "apollo_fig3", "bert_encoder", "inception_block",
		"lstm_cell", "transformer_decoder", "resnet50_bottleneck",
	};
	fl_session *s;
	int merged = 0;

	(void)state;
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		const fl_partition *p;

		s = open_sample(names[k], NULL);
		assert_members_ascending(s);
		p = fl_engine_partition(s);
		for (int m = 0; m < p->n_groups; m++)
			merged += p->groups[m].alive && p->groups[m].n_members > 1;
		fl_engine_close(s);
	}
	assert_true(merged > 10);	/* the check saw real merges */
}

/* The stencil-chains rules file fuses the stencil stages of the image
 * pipelines, which the default rules keep apart. */
static void test_stencil_chains(void **state)
{
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *s;
	char path[1024];

	(void)state;
	s = open_sample("unsharp_mask", NULL);
	assert_int_not_equal(group_of(s, "blur_x"), group_of(s, "blur_y"));
	fl_engine_close(s);
	fl_engine_opts_default(&o);
	snprintf(path, sizeof path, "%s/rules/stencil-chains.json", t_samples_dir());
	assert_int_equal(fl_rules_load(&o.rules, path, &err), 0);
	s = open_sample("unsharp_mask", &o);
	assert_int_equal(group_of(s, "blur_x"), group_of(s, "blur_y"));
	assert_non_null(strstr(group(s, "blur_x")->history, "S1"));
	fl_engine_close(s);
	s = open_sample("harris_corner", &o);
	assert_int_equal(group_of(s, "grad_x"), group_of(s, "Sxx"));
	assert_int_equal(group_of(s, "grad_y"), group_of(s, "Syy"));
	fl_engine_close(s);
}

/* Every sample: valid partition, and stepping == running. */
static void test_samples_partition(void **state)
{
	DIR *d = opendir(t_samples_dir());
	struct dirent *de;

	(void)state;
	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char path[1024];
		fl_error err = {""};
		fl_graph *g;
		fl_session *s;

		if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", t_samples_dir(), de->d_name);
		g = fl_load_graph_file(path, &err);
		if (!g)
			fail_msg("%s", err.msg);
		s = fl_engine_open(g, NULL, &err);
		assert_non_null(s);
		if (fl_engine_run(s, &err) < 0)
			fail_msg("%s: %s", path, err.msg);
		assert_valid_partition(s);
		fl_engine_close(s);
		assert_stepping_equals_running(g);
		fl_graph_free(g);
	}
	closedir(d);
}

FL_SUITE(partition,
	 cmocka_unit_test(test_fig3_r1_then_r4),
	 cmocka_unit_test(test_epilogue_and_prologue),
	 cmocka_unit_test(test_cycle_rejected_and_explained),
	 cmocka_unit_test(test_rejection_event_names_cycle),
	 cmocka_unit_test(test_disable_rule_and_rules_file),
	 cmocka_unit_test(test_never_and_fuse),
	 cmocka_unit_test(test_open_avoids_user_names),
	 cmocka_unit_test(test_custom_op_splits_clusters),
	 cmocka_unit_test(test_feedback_split),
	 cmocka_unit_test(test_stepping_equals_running),
	 cmocka_unit_test(test_paper_samples),
	 cmocka_unit_test(test_stencil_chains),
	 cmocka_unit_test(test_members_ascending),
	 cmocka_unit_test(test_samples_partition));
