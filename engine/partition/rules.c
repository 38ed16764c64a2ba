/* The rule table: the built-in default (DESIGN 1.2) and rules files. */
#include "rules.h"

#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"

#define T(x) (1u << FL_TYPE_##x)

static void add_rule(fl_rule_table *t, const char *id, unsigned p,
		     unsigned c, fl_op_type r, fl_rule_stage st,
		     const char *doc)
{
	fl_rule *x = &t->rules[t->n++];

	memset(x, 0, sizeof *x);
	snprintf(x->id, sizeof x->id, "%s", id);
	x->producer = p;
	x->consumer = c;
	x->result = r;
	x->stage = st;
	x->enabled = true;
	snprintf(x->doc, sizeof x->doc, "%s", doc);
}

void fl_rules_default(fl_rule_table *t)
{
	fl_rule *r;

	memset(t, 0, sizeof *t);
	add_rule(t, "R1", T(E), T(E), FL_TYPE_E, FL_STAGE_PARTITION,
		 "elementwise into elementwise");
	add_rule(t, "R2", T(E), T(B), FL_TYPE_B, FL_STAGE_PARTITION,
		 "elementwise into broadcast");
	add_rule(t, "R3", T(B), T(E) | T(B), FL_TYPE_B, FL_STAGE_PARTITION,
		 "broadcast into elementwise or broadcast");
	add_rule(t, "R4", T(E) | T(B), T(R), FL_TYPE_R, FL_STAGE_PARTITION,
		 "elementwise or broadcast into a reduction");
	r = &t->rules[t->n];
	add_rule(t, "R5", T(O), T(E) | T(B), FL_TYPE_O, FL_STAGE_PARTITION,
		 "compute-bound op takes its elementwise epilogue");
	r->p_except[0] = FL_OP_RESHAPE;
	r->p_except[1] = FL_OP_TRANSPOSE;
	r->p_except[2] = FL_OP_CONCAT;
	r->p_except[3] = FL_OP_GATHER;
	/* indexed reads and writes: never fused as if affine */
	r->p_except[4] = FL_OP_GATHER_ELEMENTS;
	r->p_except[5] = FL_OP_SCATTER_ELEMENTS;
	r->n_p_except = 6;
	r = &t->rules[t->n];
	add_rule(t, "R6", T(E) | T(B), T(O), FL_TYPE_O, FL_STAGE_PARTITION,
		 "sliding-window op takes its elementwise prologue");
	r->c_only[0] = FL_OP_CONV2D;
	r->c_only[1] = FL_OP_POOL2D;
	r->n_c_only = 2;
	add_rule(t, "R7", T(R), T(E) | T(B), FL_TYPE_R, FL_STAGE_LAYER2,
		 "reduction into its consumers (memory stitching)");
	add_rule(t, "R8", T(R), T(R), FL_TYPE_R, FL_STAGE_LAYER2,
		 "reduction into reduction of the same canonical form");
}

const fl_rule *fl_rules_find(const fl_rule_table *t, const char *id)
{
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->rules[i].id, id) == 0)
			return &t->rules[i];
	return NULL;
}

int fl_rules_disable(fl_rule_table *t, const char *id, fl_error *err)
{
	fl_rule *r = (fl_rule *)fl_rules_find(t, id);

	if (!r) {
		fl_error_set(err, "--disable-rule: no rule \"%s\"", id);
		return -1;
	}
	r->enabled = false;
	return 0;
}

const char *fl_type_set_format(unsigned set, char *buf, size_t n)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int t = FL_TYPE_E; t <= FL_TYPE_O; t++)
		if (set & (1u << t))
			used += (size_t)snprintf(buf + used, used < n ? n - used : 0,
						 "%s%s", used ? " or " : "",
						 fl_op_type_name((fl_op_type)t));
	return buf;
}

static int parse_type(const char *s, fl_op_type *t)
{
	static const char *const names[] = {"E", "B", "R", "O"};

	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0) {
			*t = (fl_op_type)i;
			return 0;
		}
	return -1;
}

static int parse_type_set(const cJSON *j, unsigned *set, const char *path,
			  fl_error *err)
{
	fl_op_type t;

	*set = 0;
	if (cJSON_IsString(j)) {
		if (parse_type(j->valuestring, &t) < 0)
			goto bad;
		*set = 1u << t;
		return 0;
	}
	if (!cJSON_IsArray(j) || !j->child)
		goto bad;
	for (const cJSON *e = j->child; e; e = e->next) {
		if (!cJSON_IsString(e) || parse_type(e->valuestring, &t) < 0)
			goto bad;
		*set |= 1u << t;
	}
	return 0;
bad:
	fl_error_set(err, "%s: expected a type (\"E\", \"B\", \"R\", \"O\") or "
		     "a list of them", path);
	return -1;
}

static int parse_kinds(const cJSON *j, fl_op_kind *kinds, int *n,
		       const char *path, fl_error *err)
{
	*n = 0;
	if (!j)
		return 0;
	if (!cJSON_IsArray(j)) {
		fl_error_set(err, "%s: expected a list of op names", path);
		return -1;
	}
	for (const cJSON *e = j->child; e; e = e->next) {
		const fl_op_info *info =
			cJSON_IsString(e) ? fl_op_lookup(e->valuestring) : NULL;

		if (!info) {
			fl_error_set(err, "%s[%d]: unknown op%s%s%s", path, *n,
				     cJSON_IsString(e) ? " \"" : "",
				     cJSON_IsString(e) ?
				     fl_error_name(e->valuestring) : "",
				     cJSON_IsString(e) ? "\"" : "");
			return -1;
		}
		if (*n >= FL_RULE_MAX_KINDS) {
			fl_error_set(err, "%s: more than %d ops", path,
				     FL_RULE_MAX_KINDS);
			return -1;
		}
		kinds[(*n)++] = info->kind;
	}
	return 0;
}

static const char *const rule_fields[] = {
	"id", "producer", "consumer", "result", "stage", "producer_only",
	"producer_except", "consumer_only", "consumer_except", "doc", NULL};

/* A key of object j given more than once: "PATH.KEY: field given twice"
 * (PATH "" at the top). */
static int check_unique(const cJSON *j, const char *path, fl_error *err)
{
	for (const cJSON *a = j->child; a; a = a->next)
		for (const cJSON *b = a->next; b; b = b->next) {
			if (strcmp(a->string, b->string) != 0)
				continue;
			fl_error_set(err, "%s%s%s: field given twice", path,
				     *path ? "." : "", fl_error_name(a->string));
			return -1;
		}
	return 0;
}

static int check_rule_fields(const cJSON *j, const char *path, fl_error *err)
{
	for (const cJSON *a = j->child; a; a = a->next) {
		bool ok = false;

		for (int i = 0; rule_fields[i]; i++)
			ok |= strcmp(rule_fields[i], a->string) == 0;
		if (!ok) {
			fl_error_set(err, "%s.%s: unknown field", path,
				     fl_error_name(a->string));
			return -1;
		}
	}
	return check_unique(j, path, err);
}

static int parse_stage(const cJSON *j, fl_rule_stage *st, const char *path,
		       fl_error *err)
{
	*st = FL_STAGE_PARTITION;
	if (!j)
		return 0;
	if (cJSON_IsString(j) && strcmp(j->valuestring, "partition") == 0)
		return 0;
	if (cJSON_IsString(j) && strcmp(j->valuestring, "layer2") == 0) {
		*st = FL_STAGE_LAYER2;
		return 0;
	}
	fl_error_set(err, "%s.stage: expected \"partition\" or \"layer2\"", path);
	return -1;
}

static int parse_rule(const cJSON *j, fl_rule *r, const char *path,
		      fl_error *err)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(j, "result");
	const cJSON *doc = cJSON_GetObjectItemCaseSensitive(j, "doc");
	char sub[96];

	memset(r, 0, sizeof *r);
	r->enabled = true;
	if (!cJSON_IsObject(j)) {
		fl_error_set(err, "%s: expected an object", path);
		return -1;
	}
	if (check_rule_fields(j, path, err) < 0)
		return -1;
	if (!cJSON_IsString(id) || !*id->valuestring ||
	    strlen(id->valuestring) >= sizeof r->id) {
		fl_error_set(err, "%s.id: expected a short name such as \"R9\"",
			     path);
		return -1;
	}
	snprintf(r->id, sizeof r->id, "%s", id->valuestring);
	snprintf(sub, sizeof sub, "%s.producer", path);
	if (parse_type_set(cJSON_GetObjectItemCaseSensitive(j, "producer"),
			   &r->producer, sub, err) < 0)
		return -1;
	snprintf(sub, sizeof sub, "%s.consumer", path);
	if (parse_type_set(cJSON_GetObjectItemCaseSensitive(j, "consumer"),
			   &r->consumer, sub, err) < 0)
		return -1;
	if (!cJSON_IsString(res) || parse_type(res->valuestring, &r->result) < 0) {
		fl_error_set(err, "%s.result: expected \"E\", \"B\", \"R\" or \"O\"",
			     path);
		return -1;
	}
	if (parse_stage(cJSON_GetObjectItemCaseSensitive(j, "stage"), &r->stage,
			path, err) < 0)
		return -1;
#define KINDS(field, arr, n)                                                  \
	snprintf(sub, sizeof sub, "%s." field, path);                         \
	if (parse_kinds(cJSON_GetObjectItemCaseSensitive(j, field), r->arr,    \
			&r->n, sub, err) < 0)                                 \
		return -1;
	KINDS("producer_only", p_only, n_p_only)
	KINDS("producer_except", p_except, n_p_except)
	KINDS("consumer_only", c_only, n_c_only)
	KINDS("consumer_except", c_except, n_c_except)
#undef KINDS
	if (doc && cJSON_IsString(doc))
		snprintf(r->doc, sizeof r->doc, "%s", doc->valuestring);
	return 0;
}

/* Adds r to t, replacing a rule with the same id. */
static int put_rule(fl_rule_table *t, const fl_rule *r, fl_error *err)
{
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->rules[i].id, r->id) == 0) {
			t->rules[i] = *r;
			return 0;
		}
	if (t->n >= (int)(sizeof t->rules / sizeof t->rules[0])) {
		fl_error_set(err, "rules: more than %d rules",
			     (int)(sizeof t->rules / sizeof t->rules[0]));
		return -1;
	}
	t->rules[t->n++] = *r;
	return 0;
}

static int parse_table(fl_rule_table *t, const cJSON *root, fl_error *err)
{
	const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
	const cJSON *base = cJSON_GetObjectItemCaseSensitive(root, "base");
	const cJSON *rules = cJSON_GetObjectItemCaseSensitive(root, "rules");
	int i = 0;

	for (const cJSON *a = root->child; a; a = a->next)
		if (strcmp(a->string, "format") && strcmp(a->string, "base") &&
		    strcmp(a->string, "rules") && strcmp(a->string, "doc")) {
			fl_error_set(err, "%s: unknown field",
				     fl_error_name(a->string));
			return -1;
		}
	if (check_unique(root, "", err) < 0)
		return -1;

	if (!cJSON_IsString(format) ||
	    strcmp(format->valuestring, "fuselab-rules/1") != 0) {
		fl_error_set(err, "format: expected \"fuselab-rules/1\"");
		return -1;
	}
	if (base && !(cJSON_IsString(base) &&
		      (!strcmp(base->valuestring, "default") ||
		       !strcmp(base->valuestring, "none")))) {
		fl_error_set(err, "base: expected \"default\" or \"none\"");
		return -1;
	}
	if (base && !strcmp(base->valuestring, "none"))
		memset(t, 0, sizeof *t);
	else
		fl_rules_default(t);
	if (!cJSON_IsArray(rules)) {
		fl_error_set(err, "rules: expected a list of rules");
		return -1;
	}
	for (const cJSON *j = rules->child; j; j = j->next, i++) {
		char path[32];
		fl_rule r;

		snprintf(path, sizeof path, "rules[%d]", i);
		if (parse_rule(j, &r, path, err) < 0 || put_rule(t, &r, err) < 0)
			return -1;
	}
	return 0;
}

static int load_text(fl_rule_table *t, const char *text, size_t len,
		     const char *source, fl_error *err)
{
	cJSON *root = fl_json_parse(text, len, err);
	int rc;

	if (!root) {
		fl_error_prefix(err, "%s", source);
		return -1;
	}
	rc = cJSON_IsObject(root) ? parse_table(t, root, err) : -1;
	if (rc < 0 && !cJSON_IsObject(root))
		fl_error_set(err, "expected a JSON object");
	if (rc < 0)
		fl_error_prefix(err, "%s", source);
	cJSON_Delete(root);
	return rc;
}

int fl_rules_load_string(fl_rule_table *t, const char *text,
			 const char *source, fl_error *err)
{
	return load_text(t, text, strlen(text), source, err);
}

int fl_rules_load(fl_rule_table *t, const char *path, fl_error *err)
{
	FILE *f = fopen(path, "rb");
	char *text;
	long len;
	size_t n;
	int rc;

	if (!f) {
		fl_error_set(err, "%s: cannot open rules file: %s", path,
			     strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) < 0 || (len = ftell(f)) < 0 ||
	    len > (1 << 20) || fseek(f, 0, SEEK_SET) < 0) {
		fclose(f);
		fl_error_set(err, "%s: not a readable rules file (at most 1 MiB)",
			     path);
		return -1;
	}
	text = malloc((size_t)len + 1);
	if (!text) {
		fclose(f);
		fl_error_set(err, "%s: out of memory", path);
		return -1;
	}
	n = fread(text, 1, (size_t)len, f);
	text[n] = '\0';
	fclose(f);
	rc = load_text(t, text, n, path, err);
	free(text);
	return rc;
}
