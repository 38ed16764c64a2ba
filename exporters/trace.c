/* Chrome trace exporter (see trace.h).
 *
 * The trace is built in one cJSON array; every helper records a failed
 * allocation in the builder instead of returning it, and fl_trace_build
 * checks once at the end (cJSON's add functions accept a NULL object, so
 * nothing after a failure touches freed or missing memory). */
#include "trace.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"
#include "output.h"

#define PID_COMPILE 1
#define PID_STRATEGY 10		/* + the step's index */
#define LANE_TIDS 100		/* a pass's lane k is tid + 100 * k */
#define TID_PASSES 1		/* threads of a strategy's process */
#define TID_KERNELS 2

typedef struct tb {
	cJSON *events;		/* traceEvents */
	bool failed;		/* an allocation failed */
} tb;

/* A span before it is placed: [ts, end] in microseconds. */
typedef struct span {
	long long ts, end;
	const fl_event *e;	/* NULL: a pass's own span */
	fl_pass pass;
	int lane;
} span;

static long long us(double seconds)
{
	return llround(seconds * 1e6);
}

static void add_num(tb *t, cJSON *o, const char *key, double v)
{
	if (!cJSON_AddNumberToObject(o, key, v))
		t->failed = true;
}

static void add_str(tb *t, cJSON *o, const char *key, const char *s)
{
	if (!cJSON_AddStringToObject(o, key, s))
		t->failed = true;
}

static void add_bool(tb *t, cJSON *o, const char *key, bool v)
{
	if (!cJSON_AddBoolToObject(o, key, v))
		t->failed = true;
}

static cJSON *add_obj(tb *t, cJSON *o, const char *key)
{
	cJSON *c = cJSON_AddObjectToObject(o, key);

	if (!c)
		t->failed = true;
	return c;
}

/* A new event {name, ph, pid, tid, ts} at the end of traceEvents. */
static cJSON *event_new(tb *t, const char *name, const char *ph, int pid,
			int tid, long long ts)
{
	cJSON *e = cJSON_CreateObject();

	if (!e || !cJSON_AddItemToArray(t->events, e)) {
		cJSON_Delete(e);
		t->failed = true;
		return NULL;
	}
	add_str(t, e, "name", name);
	add_str(t, e, "ph", ph);
	add_num(t, e, "pid", pid);
	add_num(t, e, "tid", tid);
	add_num(t, e, "ts", (double)ts);
	return e;
}

static cJSON *complete(tb *t, const char *name, const char *cat, int pid,
		       int tid, long long ts, long long end)
{
	cJSON *e = event_new(t, name, "X", pid, tid, ts);

	add_num(t, e, "dur", (double)(end - ts));
	add_str(t, e, "cat", cat);
	return e;
}

/* Metadata: {"name": what, "ph": "M", "args": {key: value}}. */
static void meta_str(tb *t, const char *what, int pid, int tid,
		     const char *value)
{
	cJSON *e = event_new(t, what, "M", pid, tid, 0);

	add_str(t, add_obj(t, e, "args"), "name", value);
}

static void meta_num(tb *t, const char *what, int pid, int tid, int value)
{
	cJSON *e = event_new(t, what, "M", pid, tid, 0);

	add_num(t, add_obj(t, e, "args"), "sort_index", value);
}

static void name_thread(tb *t, int pid, int tid, int sort, const char *name)
{
	meta_str(t, "thread_name", pid, tid, name);
	meta_num(t, "thread_sort_index", pid, tid, sort);
}

/* ---- placing spans on lanes -------------------------------------------- */

/* Perfetto's rule for one thread: two slices are disjoint or one holds
 * the other. */
static bool nests(const span *a, const span *b)
{
	return a->end <= b->ts || b->end <= a->ts ||
	       (a->ts <= b->ts && b->end <= a->end) ||
	       (b->ts <= a->ts && a->end <= b->end);
}

/* Earlier first, then longer first, so a span comes before the spans it
 * holds; a pass's own span first among equals, then log order. */
static int span_cmp(const void *pa, const void *pb)
{
	const span *a = pa, *b = pb;

	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->end != b->end)
		return a->end > b->end ? -1 : 1;
	if (!a->e || !b->e)
		return !a->e ? (b->e ? -1 : 0) : 1;
	return a->e->seq - b->e->seq;
}

/* Sorts s[0..n-1] and gives each the first lane where it nests with
 * every span already there (a pairwise check: the lanes stay laminar
 * whatever the order).  Returns the number of lanes used. */
static int place_lanes(span *s, int n)
{
	int lanes = 0;

	qsort(s, (size_t)n, sizeof *s, span_cmp);
	for (int i = 0; i < n; i++) {
		int k = 0;

		for (int j = 0; j < i; j++)
			if (s[j].lane == k && !nests(&s[i], &s[j])) {
				k++;
				j = -1;	/* check lane k from the start */
			}
		s[i].lane = k;
		if (k + 1 > lanes)
			lanes = k + 1;
	}
	return lanes;
}

/* ---- the compile timeline ---------------------------------------------- */

static long long event_end(const fl_event *e)
{
	return us(e->t_start + (e->duration > 0 ? e->duration : 0));
}

/* A short slice name: "scheduled G3", "merged R4 exp_3", "compiled". */
static void event_title(const fl_event *e, char *buf, size_t n)
{
	const char *kind = fl_event_kind_name(e->kind);

	if (e->kind == FL_EV_SCHEDULED && e->group_a >= 0)
		snprintf(buf, n, "%s G%d", kind, e->group_a);
	else
		snprintf(buf, n, "%s%s%s%s%s", kind, e->rule[0] ? " " : "",
			 e->rule, e->n_ops ? " " : "",
			 e->n_ops ? e->ops[0] : "");
}

/* The args every view of an event shares. */
static void event_args(tb *t, cJSON *ev, const fl_event *e)
{
	cJSON *a = add_obj(t, ev, "args"), *ops = cJSON_CreateArray();
	char m[160];

	add_num(t, a, "seq", e->seq);
	add_str(t, a, "pass", fl_pass_name(e->pass));
	add_str(t, a, "kind", fl_event_kind_name(e->kind));
	add_str(t, a, "rule", e->rule);
	for (int i = 0; ops && i < e->n_ops; i++)
		if (!cJSON_AddItemToArray(ops, cJSON_CreateString(e->ops[i])))
			t->failed = true;
	if (!ops || !cJSON_AddItemToObject(a, "ops", ops)) {
		cJSON_Delete(ops);
		t->failed = true;
	}
	add_str(t, a, "reason", e->reason);
	if (e->n_measured > 0)
		add_str(t, a, "measured", fl_event_measured_text(e, m, sizeof m));
}

static void compile_span(tb *t, const span *s, const fl_event_log *log)
{
	int tid = (int)s->pass + 1 + LANE_TIDS * s->lane, n = 0;
	char title[96];
	cJSON *ev;

	if (!s->e) {
		for (int i = 0; i < fl_event_log_count(log); i++)
			n += fl_event_log_get(log, i)->pass == s->pass;
		ev = complete(t, fl_pass_name(s->pass), "pass", PID_COMPILE, tid,
			      s->ts, s->end);
		add_num(t, add_obj(t, ev, "args"), "events", n);
		return;
	}
	event_title(s->e, title, sizeof title);
	ev = complete(t, title, fl_event_kind_name(s->e->kind), PID_COMPILE,
		      tid, s->ts, s->end);
	event_args(t, ev, s->e);
}

static void thread_names(tb *t, int pid, int tid, const char *name,
			 int lanes)
{
	char buf[96];

	for (int k = 0; k < lanes; k++) {
		if (k == 0)
			snprintf(buf, sizeof buf, "%s", name);
		else
			snprintf(buf, sizeof buf, "%s (overlapping spans %d)",
				 name, k);
		name_thread(t, pid, tid + LANE_TIDS * k, tid * 16 + k, buf);
	}
}

/* The spans of pass p's events in log into s: the pass's own (first)
 * and every event lasting a microsecond or more (only compiled and ran
 * when work_only), except the "ran" events after the first (the first
 * lasts the whole run; the others only report what it measured, and a
 * span would pass for the kernel's time).  Returns how many: 0 when p
 * made no decision.  The log is in pass order, but nothing here needs a
 * pass's events to be consecutive. */
static int pass_spans(const fl_event_log *log, fl_pass p, bool work_only,
		      span *s)
{
	bool ran = false;
	int n = 0;

	for (int i = 0; i < fl_event_log_count(log); i++) {
		const fl_event *e = fl_event_log_get(log, i);
		long long ts = us(e->t_start), end = event_end(e);
		bool work = e->kind == FL_EV_COMPILED || e->kind == FL_EV_RAN;

		if (e->pass != p)
			continue;
		if (n == 0)
			s[n++] = (span){ts, end, NULL, p, 0};
		s[0].ts = ts < s[0].ts ? ts : s[0].ts;
		s[0].end = end > s[0].end ? end : s[0].end;
		if (end - ts >= 1 && (work || !work_only) &&
		    !(e->kind == FL_EV_RAN && ran))
			s[n++] = (span){ts, end, e, p, 0};
		ran = ran || e->kind == FL_EV_RAN;
	}
	return n;
}

/* Pass p's instant events, one per decision, on its thread. */
static void compile_instants(tb *t, const fl_event_log *log, fl_pass p)
{
	char title[96];

	for (int i = 0; i < fl_event_log_count(log); i++) {
		const fl_event *e = fl_event_log_get(log, i);
		cJSON *ev;

		if (e->pass != p)
			continue;
		event_title(e, title, sizeof title);
		ev = event_new(t, title, "i", PID_COMPILE, (int)p + 1,
			       us(e->t_start));
		add_str(t, ev, "s", "t");
		event_args(t, ev, e);
	}
}

/* Pass p's thread (none when it made no decision): its spans on lanes,
 * an instant per decision.  s: room for a span per event, and one. */
static void compile_pass(tb *t, const fl_event_log *log, fl_pass p, span *s)
{
	int n = pass_spans(log, p, false, s), lanes;

	if (n == 0)
		return;
	lanes = place_lanes(s, n);
	thread_names(t, PID_COMPILE, (int)p + 1, fl_pass_name(p), lanes);
	for (int i = 0; i < n; i++)
		compile_span(t, &s[i], log);
	compile_instants(t, log, p);
}

static int compile_timeline(tb *t, const fl_event_log *log)
{
	span *s = malloc(((size_t)fl_event_log_count(log) + 1) * sizeof *s);

	if (!s)
		return -1;
	meta_str(t, "process_name", PID_COMPILE, 0,
		 "compile: passes and decisions");
	meta_num(t, "process_sort_index", PID_COMPILE, 0, 0);
	for (int p = 0; p < FL_PASS_COUNT; p++)
		compile_pass(t, log, (fl_pass)p, s);
	free(s);
	return 0;
}

/* ---- the run timeline -------------------------------------------------- */

/* A span of a strategy's passes thread: a pass, the compiler, or the
 * whole run (its first "ran" event lasts the run of every kernel, though
 * its reason names the first kernel only: the args say what it covers). */
static void step_span(tb *t, const span *s, int pid)
{
	int tid = TID_PASSES + LANE_TIDS * s->lane;
	bool cc = s->e && s->e->kind == FL_EV_COMPILED;
	const char *name = !s->e ? fl_pass_name(s->pass)
			   : cc ? "compiler" : "run of the program";
	cJSON *ev = complete(t, name, s->e ? "work" : "pass", pid, tid, s->ts,
			     s->end), *a;

	if (!s->e)
		return;
	a = add_obj(t, ev, "args");
	add_num(t, a, "seq", s->e->seq);
	add_str(t, a, "kind", fl_event_kind_name(s->e->kind));
	add_num(t, a, "seconds", s->e->duration);
	add_str(t, a, cc ? "command" : "covers", cc ? s->e->reason :
		"every kernel checked against the reference, warm-up and "
		"timed repeats, the outputs checked after a run from the "
		"inputs");
}

/* A strategy's pass spans and its compiler's and whole run's spans, from
 * its session's log, on thread TID_PASSES (and its lanes) of pid. */
static int step_passes(tb *t, const fl_event_log *log, int pid)
{
	int n = fl_event_log_count(log), m = 0, lanes;
	span *s = malloc(((size_t)n + FL_PASS_COUNT) * sizeof *s);

	if (!s)
		return -1;
	for (int p = 0; p < FL_PASS_COUNT; p++)
		m += pass_spans(log, (fl_pass)p, true, &s[m]);
	lanes = place_lanes(s, m);
	thread_names(t, pid, TID_PASSES, "passes", lanes);
	for (int i = 0; i < m; i++)
		step_span(t, &s[i], pid);
	free(s);
	return 0;
}

/* Where the run began in the step's session: its first "ran" event
 * (logged when the run started, lasting the whole run); 0 without. */
static long long run_start(const fl_event_log *log)
{
	for (int i = 0; log && i < fl_event_log_count(log); i++)
		if (fl_event_log_get(log, i)->kind == FL_EV_RAN)
			return us(fl_event_log_get(log, i)->t_start);
	return 0;
}

static void kernel_args(tb *t, cJSON *ev, const fl_ladder_kernel *k)
{
	cJSON *a = add_obj(t, ev, "args");
	const fl_kernel_result *r = &k->r;
	char what[96];

	snprintf(what, sizeof what, "median of %d runs, laid back to back "
		 "(not measured timestamps)", r->n_timed);
	add_str(t, a, "span", what);
	add_str(t, a, "kernel", k->name);
	add_str(t, a, "first_op", k->first_op);
	add_str(t, a, "last_op", k->last_op);
	add_num(t, a, "n_ops", k->n_ops);
	/* what layers 2 and 3 made of the kernel */
	if (k->stitched[0])
		add_str(t, a, "stitched_micro_graphs", k->stitched);
	if (k->n_branches > 0) {
		add_num(t, a, "n_branches", k->n_branches);
		add_str(t, a, "branches", k->branches);
	}
	add_num(t, a, "bytes", (double)r->bytes);
	if (r->seconds > 0)
		add_num(t, a, "GB/s", (double)r->bytes / r->seconds / 1e9);
	add_num(t, a, "median_ms", r->seconds * 1e3);
	add_num(t, a, "min_ms", r->min_seconds * 1e3);
	add_num(t, a, "max_ms", r->max_seconds * 1e3);
	add_num(t, a, "repeats", r->n_timed);
	if (k->unfused_seconds > 0)
		add_num(t, a, "unfused_ms", k->unfused_seconds * 1e3);
	add_bool(t, a, "verified", r->ok);
	add_num(t, a, "max_abs_error", r->max_abs);
	add_num(t, a, "max_rel_error", r->max_rel);
}

static bool step_was_run(const fl_ladder_step *st)
{
	return st->ran && (st->status == FL_RUN_OK ||
			   st->status == FL_RUN_MISMATCH);
}

/* Why step st has no kernel spans, as an instant at the end of its log. */
static void step_not_run(tb *t, const fl_ladder_step *st, int pid)
{
	int n = st->log ? fl_event_log_count(st->log) : 0;
	long long ts = n ? event_end(fl_event_log_get(st->log, n - 1)) : 0;
	cJSON *ev = event_new(t, "not run", "i", pid, TID_PASSES, ts);
	cJSON *a;

	add_str(t, ev, "s", "t");
	a = add_obj(t, ev, "args");
	add_str(t, a, "status", fl_run_status_name(st->status));
	add_str(t, a, "error", st->ran ? st->message : st->error);
}

static int strategy_timeline(tb *t, const fl_ladder_step *st, int i)
{
	int pid = PID_STRATEGY + i;
	long long ts = run_start(st->log);

	meta_str(t, "process_name", pid, 0, fl_strategy_name(st->strategy));
	meta_num(t, "process_sort_index", pid, 0, 1 + i);
	if (st->log && step_passes(t, st->log, pid) < 0)
		return -1;
	if (!st->log)
		name_thread(t, pid, TID_PASSES, TID_PASSES, "passes");
	if (!step_was_run(st)) {
		step_not_run(t, st, pid);
		return 0;
	}
	name_thread(t, pid, TID_KERNELS, TID_KERNELS * 16,
		    "kernels (median times, back to back)");
	for (int k = 0; k < st->n_kernels; k++) {
		const fl_ladder_kernel *lk = &st->kernels[k];
		long long end = ts + us(lk->r.seconds);

		kernel_args(t, complete(t, lk->name, "kernel", pid, TID_KERNELS,
					ts, end), lk);
		ts = end;
	}
	return 0;
}

/* ---- the whole trace --------------------------------------------------- */

static cJSON *trace_object(tb *t)
{
	cJSON *o = cJSON_CreateObject(), *other;

	if (!o)
		return NULL;
	t->events = cJSON_AddArrayToObject(o, "traceEvents");
	add_str(t, o, "displayTimeUnit", "ms");
	other = add_obj(t, o, "otherData");
	add_str(t, other, "generator", "fuselab");
	if (!cJSON_AddNullToObject(other, "graph"))
		t->failed = true;
	if (!t->events)
		t->failed = true;
	return o;
}

cJSON *fl_trace_build(const fl_event_log *log, const fl_ladder *ladder)
{
	tb t = {NULL, false};
	cJSON *o = trace_object(&t);

	if (!o)
		return NULL;
	if (!t.failed && log && compile_timeline(&t, log) < 0)
		t.failed = true;
	for (int i = 0; !t.failed && ladder && i < ladder->n; i++)
		if (strategy_timeline(&t, &ladder->steps[i], i) < 0)
			t.failed = true;
	if (t.failed) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int fl_trace_set_graph(cJSON *trace, const char *graph)
{
	cJSON *other = cJSON_GetObjectItemCaseSensitive(trace, "otherData");
	cJSON *name = cJSON_CreateString(graph);

	if (!other || !name ||
	    !cJSON_ReplaceItemInObjectCaseSensitive(other, "graph", name)) {
		cJSON_Delete(name);
		return -1;
	}
	return 0;
}

int fl_trace_write(const cJSON *trace, const char *path, fl_error *err)
{
	char *text = cJSON_PrintUnformatted(trace);
	int rc;

	if (!text) {
		fl_error_set(err, "%s: out of memory printing the trace", path);
		return -1;
	}
	rc = fl_out_write_file(path, text, strlen(text), err);
	cJSON_free(text);
	return rc;
}

int fl_export_trace(const fl_event_log *log, const fl_ladder *ladder,
		    const char *path, fl_error *err)
{
	cJSON *trace = fl_trace_build(log, ladder);
	int rc;

	if (!trace) {
		fl_error_set(err, "%s: out of memory building the trace", path);
		return -1;
	}
	rc = fl_trace_write(trace, path, err);
	cJSON_Delete(trace);
	return rc;
}
