/* The event log (see events.h): a growable array of events. */
#include "events.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fl_event_log {
	int n, cap;
	fl_event *items;
};

static const char *const pass_names[FL_PASS_COUNT] = {
	"preprocess", "cluster", "open", "classify", "constrain", "aggregate",
	"layer1", "layer2", "layer3", "codegen", "compile", "run",
};

static const char *const kind_names[FL_EV_KIND_COUNT] = {
	"simplified", "cse", "folded", "eliminated", "clustered", "opened",
	"classified", "constrained", "merged", "rejected", "feedback",
	"scheduled", "tiled", "extended", "placed", "generated", "compiled",
	"ran", "verified", "reduce-form", "parallelised",
};

const char *fl_pass_name(fl_pass p)
{
	return (int)p >= 0 && p < FL_PASS_COUNT ? pass_names[p] : "?";
}

int fl_pass_parse(const char *name, fl_pass *p)
{
	if (strcmp(name, "partition") == 0) {
		*p = FL_PASS_AGGREGATE;
		return 0;
	}
	for (int i = 0; i < FL_PASS_COUNT; i++)
		if (strcmp(name, pass_names[i]) == 0) {
			*p = (fl_pass)i;
			return 0;
		}
	return -1;
}

const char *fl_event_kind_name(fl_event_kind k)
{
	return (int)k >= 0 && k < FL_EV_KIND_COUNT ? kind_names[k] : "?";
}

fl_event_log *fl_event_log_new(void)
{
	return calloc(1, sizeof(fl_event_log));
}

static void event_clear(fl_event *e)
{
	for (int i = 0; i < e->n_ops; i++)
		free(e->ops[i]);
	free(e->ops);
}

void fl_event_log_clear(fl_event_log *log)
{
	for (int i = 0; i < log->n; i++)
		event_clear(&log->items[i]);
	log->n = 0;
}

void fl_event_log_free(fl_event_log *log)
{
	if (!log)
		return;
	fl_event_log_clear(log);
	free(log->items);
	free(log);
}

static int copy_names(fl_event *e, const char *const *ops, int n_ops)
{
	e->ops = calloc((size_t)(n_ops > 0 ? n_ops : 1), sizeof *e->ops);
	if (!e->ops)
		return -1;
	for (int i = 0; i < n_ops; i++) {
		e->ops[i] = strdup(ops[i]);
		if (!e->ops[i])
			return -1;
		e->n_ops = i + 1;
	}
	return 0;
}

fl_event *fl_event_log_add(fl_event_log *log, fl_pass pass,
			   fl_event_kind kind, const char *rule,
			   const char *const *ops, int n_ops, int group_a,
			   int group_b, const char *fmt, ...)
{
	fl_event *e;
	va_list ap;

	if (log->n == log->cap) {
		int cap = log->cap ? log->cap * 2 : 64;
		fl_event *p = realloc(log->items, (size_t)cap * sizeof *p);

		if (!p)
			return NULL;
		log->items = p;
		log->cap = cap;
	}
	e = &log->items[log->n];
	memset(e, 0, sizeof *e);
	e->seq = log->n;
	e->pass = pass;
	e->kind = kind;
	snprintf(e->rule, sizeof e->rule, "%s", rule ? rule : "");
	e->group_a = group_a;
	e->group_b = group_b;
	va_start(ap, fmt);
	vsnprintf(e->reason, sizeof e->reason, fmt, ap);
	va_end(ap);
	if (copy_names(e, ops, n_ops) < 0) {
		event_clear(e);
		return NULL;
	}
	log->n++;
	return e;
}

fl_event_log *fl_event_log_copy(const fl_event_log *log, int n)
{
	fl_event_log *c = fl_event_log_new();

	if (n < 0 || n > log->n)
		n = log->n;
	if (!c)
		return NULL;
	c->items = calloc((size_t)n + 1, sizeof *c->items);
	if (!c->items) {
		free(c);
		return NULL;
	}
	c->cap = n + 1;
	for (int i = 0; i < n; i++) {
		const fl_event *e = &log->items[i];

		c->items[i] = *e;
		c->items[i].n_ops = 0;
		c->items[i].ops = NULL;
		c->n = i + 1;
		if (copy_names(&c->items[i], (const char *const *)e->ops,
			       e->n_ops) < 0) {
			fl_event_log_free(c);
			return NULL;
		}
	}
	return c;
}

int fl_event_log_count(const fl_event_log *log)
{
	return log->n;
}

const fl_event *fl_event_log_get(const fl_event_log *log, int i)
{
	return i >= 0 && i < log->n ? &log->items[i] : NULL;
}

static int event_equal(const fl_event *a, const fl_event *b)
{
	if (a->pass != b->pass || a->kind != b->kind ||
	    strcmp(a->rule, b->rule) || a->n_ops != b->n_ops ||
	    a->group_a != b->group_a || a->group_b != b->group_b ||
	    strcmp(a->reason, b->reason))
		return 0;
	for (int i = 0; i < a->n_ops; i++)
		if (strcmp(a->ops[i], b->ops[i]))
			return 0;
	return 1;
}

int fl_event_log_equal_prefix(const fl_event_log *a, const fl_event_log *b,
			      int n)
{
	if (a->n < n || b->n < n)
		return 0;
	for (int i = 0; i < n; i++)
		if (!event_equal(&a->items[i], &b->items[i]))
			return 0;
	return 1;
}

int fl_event_log_equal(const fl_event_log *a, const fl_event_log *b)
{
	return a->n == b->n && fl_event_log_equal_prefix(a, b, a->n);
}

const char *fl_event_measured_text(const fl_event *e, char *buf, size_t n)
{
	const double *m = e->measured;

	buf[0] = '\0';
	if (e->kind == FL_EV_COMPILED && e->n_measured >= 1)
		snprintf(buf, n, "%.2f s", m[0]);
	else if (e->kind == FL_EV_RAN && !strcmp(e->rule, "slower") &&
		 e->n_measured >= 4)
		snprintf(buf, n, "%.3f ms against %.3f ms unfused, quicker in "
			 "%.0f of %.0f pairs", 1e3 * m[0], 1e3 * m[1], m[2],
			 m[3]);
	else if (e->kind == FL_EV_RAN && e->n_measured >= 4)
		snprintf(buf, n, "median %.3f ms, min %.3f ms, max %.3f ms, "
			 "%.0f runs", 1e3 * m[0], 1e3 * m[1], 1e3 * m[2], m[3]);
	return buf;
}

const char *fl_event_format(const fl_event *e, char *buf, size_t n)
{
	size_t used = (size_t)snprintf(buf, n, "#%d %s %s [", e->seq,
				       fl_pass_name(e->pass),
				       fl_event_kind_name(e->kind));

	for (int i = 0; i < e->n_ops && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%s",
					 i ? " " : "", e->ops[i]);
	if (used < n)
		used += (size_t)snprintf(buf + used, n - used, "] %s",
					 e->reason);
	if (used < n && e->n_measured > 0) {
		char m[128];

		snprintf(buf + used, n - used, "; %s",
			 fl_event_measured_text(e, m, sizeof m));
	}
	return buf;
}
