/* The state the passes share (state_impl.h): making and logging a
 * decision under the budget, feedback to the partition, and the copy
 * that snapshots keep (deep, except for the graph's constant values,
 * which the copy shares: ir/tensor_values.c). */
#include "state_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "groups_impl.h"
#include "stitch.h"

const char **fl_state_op_names(const fl_state *st, const int *ops, int n)
{
	const char **names = malloc(((size_t)n + 1) * sizeof *names);

	if (names)
		for (int i = 0; i < n; i++)
			names[i] = st->graph->ops[ops[i]].name;
	return names;
}

bool fl_state_decide(fl_state *st)
{
	if (st->budget == 0)
		return false;
	if (st->budget > 0)
		st->budget--;
	st->t_decide = fl_now();
	return true;
}

fl_event *fl_state_log(fl_state *st, fl_event_kind kind, const char *rule,
		       const char *const *ops, int n_ops, int group_a,
		       int group_b, const char *fmt, ...)
{
	char reason[FL_EVENT_REASON];
	fl_event *e;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof reason, fmt, ap);
	va_end(ap);
	e = fl_event_log_add(st->log, st->pass, kind, rule, ops, n_ops,
			     group_a, group_b, "%s", reason);
	if (e) {
		double now = fl_now();

		e->t_start = st->t_decide - st->t0;
		e->duration = now - st->t_decide;
	}
	return e;
}

/* Room for n more feedback pairs; -1 when out of memory or too many. */
static int feedback_room(fl_state *st, int n, fl_error *err)
{
	int cap = st->cap_feedback ? st->cap_feedback : 16;
	fl_op_pair *p;
	char (*r)[128];

	if (st->n_feedback + n > FL_MAX_FEEDBACK) {
		fl_error_set(err, "too many feedback splits (more than %d)",
			     FL_MAX_FEEDBACK);
		return -1;
	}
	if (st->n_feedback + n <= st->cap_feedback)
		return 0;
	while (cap < st->n_feedback + n)
		cap *= 2;
	p = realloc(st->feedback, (size_t)cap * sizeof *p);
	if (p)
		st->feedback = p;
	r = p ? realloc(st->feedback_reason, (size_t)cap * sizeof *r) : NULL;
	if (!r) {
		fl_error_set(err, "out of memory recording feedback");
		return -1;
	}
	st->feedback_reason = r;
	st->cap_feedback = cap;
	return 0;
}

static void feedback_add(fl_state *st, const char *a, const char *b,
			 const char *reason)
{
	int n = st->n_feedback++;

	snprintf(st->feedback[n].a, sizeof st->feedback[n].a, "%s", a);
	snprintf(st->feedback[n].b, sizeof st->feedback[n].b, "%s", b);
	snprintf(st->feedback_reason[n], sizeof st->feedback_reason[n], "%s",
		 reason);
}

int fl_state_feedback(fl_state *st, const char *a, const char *b,
		      const char *reason, fl_error *err)
{
	if (feedback_room(st, 1, err) < 0)
		return -1;
	feedback_add(st, a, b, reason);
	fl_state_log(st, FL_EV_FEEDBACK, "feedback",
		     (const char *const[]){a, b}, 2, -1, -1,
		     "split the micro-graph at the merge of %s into %s and "
		     "partition again: %s", a, b, reason);
	return 0;
}

int fl_state_feedback_many(fl_state *st, const char *const *a,
			   const char *const *b, int n, const char *reason,
			   const char *text, fl_error *err)
{
	const char **ops;

	if (feedback_room(st, n, err) < 0)
		return -1;
	ops = malloc(2 * ((size_t)n + 1) * sizeof *ops);
	if (!ops) {
		fl_error_set(err, "out of memory recording feedback");
		return -1;
	}
	for (int i = 0; i < n; i++) {
		feedback_add(st, a[i], b[i], reason);
		ops[2 * i] = a[i];
		ops[2 * i + 1] = b[i];
	}
	fl_state_log(st, FL_EV_FEEDBACK, "feedback", ops, 2 * n, -1, -1, "%s",
		     text);
	free(ops);
	return 0;
}

static void free_sources(fl_state *st)
{
	for (int i = 0; i < st->n_src; i++)
		free(st->kernel_src[i]);
	free(st->kernel_src);
	free(st->unit_src);
	st->kernel_src = NULL;
	st->unit_src = NULL;
	st->n_src = 0;
}

void fl_state_clear(fl_state *st)
{
	fl_graph_free(st->graph);
	fl_event_log_free(st->log);
	fl_partition_free(&st->part);
	fl_groups_free(st->groups);
	fl_program_free(st->program);
	fl_par_analysis_free(st->par);
	free_sources(st);
	free(st->feedback);
	free(st->feedback_reason);
	memset(st, 0, sizeof *st);
}

/* A copy of n items of `size` bytes (NULL stays NULL); false on OOM. */
static bool dup_into(void *dst, const void *src, size_t n, size_t size)
{
	void **d = dst;

	*d = NULL;
	if (!src)
		return true;
	*d = malloc(n * size + 1);
	if (!*d)
		return false;
	memcpy(*d, src, n * size);
	return true;
}

static bool partition_copy(fl_partition *d, const fl_partition *s)
{
	size_t n = (size_t)s->n_ops;
	bool ok;

	*d = *s;
	ok = dup_into(&d->cluster_of, s->cluster_of, n, sizeof *d->cluster_of) &
	     dup_into(&d->type_of, s->type_of, n, sizeof *d->type_of) &
	     dup_into(&d->type_reason, s->type_reason, n,
		      sizeof *d->type_reason) &
	     dup_into(&d->group_of, s->group_of, n, sizeof *d->group_of);
	d->groups = NULL;
	d->n_groups = d->cap_groups = 0;
	if (!ok || !s->groups)
		return ok;
	d->groups = calloc((size_t)s->cap_groups + 1, sizeof *d->groups);
	if (!d->groups)
		return false;
	d->cap_groups = s->cap_groups;
	for (int i = 0; i < s->n_groups; i++) {
		fl_micro_graph *m = &d->groups[i];

		*m = s->groups[i];
		d->n_groups = i + 1;
		m->cap_members = m->n_members;
		if (!dup_into(&m->members, s->groups[i].members,
			      (size_t)m->n_members, sizeof *m->members))
			return false;
	}
	return true;
}

static bool sources_copy(fl_state *d, const fl_state *s)
{
	d->kernel_src = NULL;
	d->unit_src = NULL;
	d->n_src = 0;
	if (s->kernel_src) {
		d->kernel_src = calloc((size_t)s->n_src + 1, sizeof *d->kernel_src);
		if (!d->kernel_src)
			return false;
		d->n_src = s->n_src;
		for (int i = 0; i < s->n_src; i++)
			if (s->kernel_src[i] &&
			    !(d->kernel_src[i] = strdup(s->kernel_src[i])))
				return false;
	}
	return !s->unit_src || (d->unit_src = strdup(s->unit_src));
}

int fl_state_copy(fl_state *dst, const fl_state *src)
{
	bool ok;

	/* Constants a pass made since the last copy (folded ones) become
	 * shared too, so that no copy duplicates them.  Failing to share
	 * only costs memory: fl_graph_copy copies what is not shared. */
	if (src->graph)
		(void)fl_graph_share_values(src->graph, NULL);
	*dst = *src;
	dst->graph = fl_graph_copy(src->graph);
	dst->log = fl_event_log_copy(src->log, -1);
	dst->groups = src->groups ? fl_groups_copy(src->groups) : NULL;
	dst->program = NULL;
	fl_par_analysis_ref(dst->par);
	ok = partition_copy(&dst->part, &src->part) & sources_copy(dst, src) &
	     dup_into(&dst->feedback, src->feedback, (size_t)src->n_feedback,
		      sizeof *dst->feedback) &
	     dup_into(&dst->feedback_reason, src->feedback_reason,
		      (size_t)src->n_feedback, sizeof *dst->feedback_reason);
	dst->cap_feedback = dst->feedback && dst->feedback_reason ?
			    src->n_feedback : 0;
	if (ok && dst->graph && src->program)
		ok = (dst->program = fl_program_copy(src->program, dst->graph));
	if (!ok || !dst->graph || !dst->log || (src->groups && !dst->groups)) {
		fl_state_clear(dst);
		return -1;
	}
	return 0;
}
