/* Tours (tour.h): parsing a graph file's "tour" field and finding, in an
 * event log, the step at which each stop stands.
 *
 * A stop is either a step or a pattern (pass, kind, ops).  A pattern
 * stands at its first fitting event only, so a tour that says "the first
 * merge" shows its text once and `t` does not visit every merge.  The
 * log is scanned afresh on each call: tours have a handful of stops and
 * logs a few thousand events, which is far below a frame's time. */
#include "tour.h"

#include <cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"

typedef struct tour_stop {
	int step;		/* >= 0 for a step stop, -1 for a pattern */
	bool has_pass, has_kind;
	fl_pass pass;
	fl_event_kind kind;
	int n_ops;
	char *ops[FL_TOUR_MAX_OPS];
	char *text;
} tour_stop;

struct fl_tour {
	int n;
	tour_stop stops[];
};

static const char *const stop_fields[] = {"step", "pass", "kind", "ops",
					  "text", NULL};

/* The kind the event log prints as `name`; -1 when there is none
 * (events.h has the printer only). */
static int event_kind_parse(const char *name, fl_event_kind *k)
{
	for (int i = 0; i < FL_EV_KIND_COUNT; i++)
		if (strcmp(name, fl_event_kind_name((fl_event_kind)i)) == 0) {
			*k = (fl_event_kind)i;
			return 0;
		}
	return -1;
}

static void stop_clear(tour_stop *s)
{
	for (int k = 0; k < s->n_ops; k++)
		free(s->ops[k]);
	free(s->text);
}

void fl_tour_free(fl_tour *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->n; i++)
		stop_clear(&t->stops[i]);
	free(t);
}

/* True when msg starts with a field's name ("text: ...", "ops[1]: ..."),
 * which goes after "tour[i]." rather than "tour[i]: ". */
static bool names_field(const char *msg)
{
	size_t n = strspn(msg, "abcdefghijklmnopqrstuvwxyz_");

	return n > 0 && (msg[n] == ':' || msg[n] == '[');
}

static int parse_text(tour_stop *s, const cJSON *j, fl_error *err)
{
	if (!j) {
		fl_error_set(err, "text: missing (what the explorer shows at "
			     "this stop)");
		return -1;
	}
	if (!cJSON_IsString(j) || !j->valuestring[strspn(j->valuestring,
							   " \t\n")]) {
		fl_error_set(err, "text: expected a non-empty string");
		return -1;
	}
	if (strlen(j->valuestring) > FL_TOUR_TEXT_MAX) {
		fl_error_set(err, "text: %zu bytes, more than the %d a stop may "
			     "have", strlen(j->valuestring), FL_TOUR_TEXT_MAX);
		return -1;
	}
	s->text = strdup(j->valuestring);
	if (!s->text) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	return 0;
}

static int parse_step(tour_stop *s, const cJSON *j, fl_error *err)
{
	double v = j->valuedouble;

	if (!cJSON_IsNumber(j) || !isfinite(v) || v != floor(v) || v < 0 ||
	    v > 2e9) {
		fl_error_set(err, "step: expected an integer from 0 to "
			     "2000000000 (decisions made)");
		return -1;
	}
	s->step = (int)v;
	return 0;
}

static int parse_ops(tour_stop *s, const cJSON *j, fl_error *err)
{
	if (!cJSON_IsArray(j) || !j->child) {
		fl_error_set(err, "ops: expected a non-empty list of op names");
		return -1;
	}
	for (const cJSON *e = j->child; e; e = e->next) {
		if (!cJSON_IsString(e) || !*e->valuestring) {
			fl_error_set(err, "ops[%d]: expected an op name", s->n_ops);
			return -1;
		}
		if (s->n_ops >= FL_TOUR_MAX_OPS) {
			fl_error_set(err, "ops: more than %d op names",
				     FL_TOUR_MAX_OPS);
			return -1;
		}
		s->ops[s->n_ops] = strdup(e->valuestring);
		if (!s->ops[s->n_ops]) {
			fl_error_set(err, "out of memory");
			return -1;
		}
		s->n_ops++;
	}
	return 0;
}

/* The pattern half of a stop: pass and kind by name, ops as a list. */
static int parse_pattern(tour_stop *s, const cJSON *j, fl_error *err)
{
	const cJSON *pass = cJSON_GetObjectItemCaseSensitive(j, "pass");
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
	const cJSON *ops = cJSON_GetObjectItemCaseSensitive(j, "ops");

	if (!pass && !kind && !ops) {
		fl_error_set(err, "expected \"step\", or a pattern of \"pass\", "
			     "\"kind\" and \"ops\"");
		return -1;
	}
	if ((pass && !cJSON_IsString(pass)) || (kind && !cJSON_IsString(kind))) {
		fl_error_set(err, "%s: expected a name", pass &&
			     !cJSON_IsString(pass) ? "pass" : "kind");
		return -1;
	}
	if (pass && fl_pass_parse(pass->valuestring, &s->pass) < 0) {
		fl_error_set(err, "pass: unknown pass \"%s\"",
			     fl_error_name(pass->valuestring));
		return -1;
	}
	if (kind && event_kind_parse(kind->valuestring, &s->kind) < 0) {
		fl_error_set(err, "kind: unknown event kind \"%s\"",
			     fl_error_name(kind->valuestring));
		return -1;
	}
	s->has_pass = pass != NULL;
	s->has_kind = kind != NULL;
	return ops ? parse_ops(s, ops, err) : 0;
}

static int parse_stop(tour_stop *s, const cJSON *j, fl_error *err)
{
	const cJSON *step = cJSON_GetObjectItemCaseSensitive(j, "step");

	s->step = -1;
	if (!cJSON_IsObject(j)) {
		fl_error_set(err, "expected an object with \"text\"");
		return -1;
	}
	if (fl_json_check_fields(j, stop_fields, "", err) < 0)
		return -1;
	if (step && (cJSON_GetObjectItemCaseSensitive(j, "pass") ||
		     cJSON_GetObjectItemCaseSensitive(j, "kind") ||
		     cJSON_GetObjectItemCaseSensitive(j, "ops"))) {
		fl_error_set(err, "step: a stop has a step or a pattern (pass, "
			     "kind, ops), not both");
		return -1;
	}
	if (step ? parse_step(s, step, err) < 0 :
		   parse_pattern(s, j, err) < 0)
		return -1;
	return parse_text(s, cJSON_GetObjectItemCaseSensitive(j, "text"), err);
}

fl_tour *fl_tour_from_json(const cJSON *j, fl_error *err)
{
	int n = cJSON_IsArray(j) ? cJSON_GetArraySize(j) : 0;
	fl_tour *t;

	if (j && !cJSON_IsArray(j)) {
		fl_error_set(err, "tour: expected a list of stops");
		return NULL;
	}
	if (n > FL_TOUR_MAX_STOPS) {
		fl_error_set(err, "tour: %d stops, more than %d", n,
			     FL_TOUR_MAX_STOPS);
		return NULL;
	}
	t = calloc(1, sizeof *t + (size_t)n * sizeof t->stops[0]);
	if (!t) {
		fl_error_set(err, "out of memory");
		return NULL;
	}
	for (const cJSON *e = j ? j->child : NULL; e; e = e->next) {
		if (parse_stop(&t->stops[t->n], e, err) < 0) {
			fl_error_prefix(err, "tour[%d]%s", t->n,
					err && names_field(err->msg) ? "." : "");
			t->n++;	/* what it holds so far is freed too */
			fl_tour_free(t);
			return NULL;
		}
		t->n++;
	}
	return t;
}

fl_tour *fl_tour_load_string(const char *text, size_t len,
			     const char *source, fl_error *err)
{
	cJSON *root = fl_json_parse(text, len, err);
	fl_tour *t = NULL;

	if (root && !cJSON_IsObject(root))
		fl_error_set(err, "expected a JSON object at the top");
	else if (root)
		t = fl_tour_from_json(cJSON_GetObjectItemCaseSensitive(root,
								       "tour"),
				      err);
	if (!t)
		fl_error_prefix(err, "%s", source);
	cJSON_Delete(root);
	return t;
}

fl_tour *fl_tour_load_file(const char *path, fl_error *err)
{
	size_t len;
	char *text = fl_read_file(path, FL_LOADER_MAX_FILE_BYTES,
				  "a graph file", &len, err);
	fl_tour *t;

	if (!text)
		return NULL;
	t = fl_tour_load_string(text, len, path, err);
	free(text);
	return t;
}

int fl_tour_count(const fl_tour *t)
{
	return t ? t->n : 0;
}

const char *fl_tour_text(const fl_tour *t, int i)
{
	return t && i >= 0 && i < t->n ? t->stops[i].text : NULL;
}

int fl_tour_fixed_step(const fl_tour *t, int i)
{
	return t && i >= 0 && i < t->n ? t->stops[i].step : -1;
}

static bool event_has_op(const fl_event *e, const char *name)
{
	for (int k = 0; k < e->n_ops; k++)
		if (strcmp(e->ops[k], name) == 0)
			return true;
	return false;
}

static bool stop_fits(const tour_stop *s, const fl_event *e)
{
	if ((s->has_pass && e->pass != s->pass) ||
	    (s->has_kind && e->kind != s->kind))
		return false;
	for (int k = 0; k < s->n_ops; k++)
		if (!event_has_op(e, s->ops[k]))
			return false;
	return true;
}

int fl_tour_stop_step(const fl_tour *t, int i, const fl_event_log *log)
{
	const tour_stop *s;
	int n = fl_event_log_count(log);

	if (!t || i < 0 || i >= t->n)
		return -1;
	s = &t->stops[i];
	if (s->step >= 0)
		return s->step <= n ? s->step : -1;
	for (int k = 0; k < n; k++)
		if (stop_fits(s, fl_event_log_get(log, k)))
			return k + 1;
	return -1;
}

int fl_tour_match(const fl_tour *t, const fl_event_log *log, int step)
{
	for (int i = 0; i < fl_tour_count(t); i++)
		if (fl_tour_stop_step(t, i, log) == step)
			return i;
	return -1;
}

int fl_tour_next(const fl_tour *t, const fl_event_log *full_log,
		 int from_step)
{
	int best = -1;

	for (int i = 0; i < fl_tour_count(t); i++) {
		int k = fl_tour_stop_step(t, i, full_log);

		if (k > from_step && (best < 0 || k < best))
			best = k;
	}
	return best;
}
