/* User overrides (overrides.h): an in-memory list, its file format
 * fuselab-overrides/1, and how it reaches the engine options.
 *
 * The list is small (at most FL_MAX_CONSTRAINTS of each action, what the
 * engine options hold), so it is a fixed array kept in the order the
 * user gave.  Loading checks the file the way the graph loader does,
 * naming the JSON path of each problem; saving writes a temporary file
 * beside the target and renames it, so a reader never sees half a list. */
#include "overrides.h"

#include <cJSON.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader.h"

#define MAX_OVERRIDES (2 * FL_MAX_CONSTRAINTS)
#define NAME_MAX_LEN (sizeof(((fl_override *)0)->a) - 1)

struct fl_overrides {
	int n;
	fl_override items[MAX_OVERRIDES];
	char graph[128];
};

/* indexed by fl_override.force */
static const char *const action_names[] = {"forbid", "force"};

fl_overrides *fl_overrides_new(void)
{
	return calloc(1, sizeof(fl_overrides));
}

void fl_overrides_free(fl_overrides *l)
{
	free(l);
}

int fl_overrides_count(const fl_overrides *l)
{
	return l ? l->n : 0;
}

const fl_override *fl_overrides_get(const fl_overrides *l, int i)
{
	return l && i >= 0 && i < l->n ? &l->items[i] : NULL;
}

const char *fl_overrides_graph(const fl_overrides *l)
{
	return l ? l->graph : "";
}

const char *fl_override_action_name(bool force)
{
	return action_names[force];
}

int fl_overrides_find(const fl_overrides *l, const char *a, const char *b)
{
	for (int i = 0; i < fl_overrides_count(l); i++) {
		const fl_override *o = &l->items[i];

		if ((!strcmp(o->a, a) && !strcmp(o->b, b)) ||
		    (!strcmp(o->a, b) && !strcmp(o->b, a)))
			return i;
	}
	return -1;
}

static int count_action(const fl_overrides *l, bool force)
{
	int n = 0;

	for (int i = 0; i < l->n; i++)
		n += l->items[i].force == force;
	return n;
}

static int check_name(const char *name, fl_error *err)
{
	if (!*name) {
		fl_error_set(err, "empty op name");
		return -1;
	}
	if (strlen(name) > NAME_MAX_LEN) {
		fl_error_set(err, "op name \"%s\" is longer than %zu characters",
			     fl_error_name(name), NAME_MAX_LEN);
		return -1;
	}
	return 0;
}

int fl_overrides_add(fl_overrides *l, bool force, const char *a,
		     const char *b, fl_error *err)
{
	int k;

	if (check_name(a, err) < 0 || check_name(b, err) < 0)
		return -1;
	if (strcmp(a, b) == 0) {
		fl_error_set(err, "%s,%s: an op is always with itself",
			     fl_error_name(a), fl_error_name(b));
		return -1;
	}
	k = fl_overrides_find(l, a, b);
	if (k >= 0 && l->items[k].force == force)
		return k;
	if (k >= 0) {
		fl_error_set(err, "%s,%s: already %s, cannot also be %s",
			     fl_error_name(a), fl_error_name(b),
			     force ? "forbidden" : "forced",
			     force ? "forced" : "forbidden");
		return -1;
	}
	if (count_action(l, force) >= FL_MAX_CONSTRAINTS) {
		fl_error_set(err, "more than %d %s overrides", FL_MAX_CONSTRAINTS,
			     fl_override_action_name(force));
		return -1;
	}
	l->items[l->n].force = force;
	snprintf(l->items[l->n].a, sizeof l->items[l->n].a, "%s", a);
	snprintf(l->items[l->n].b, sizeof l->items[l->n].b, "%s", b);
	return l->n++;
}

int fl_overrides_remove(fl_overrides *l, int i)
{
	if (!l || i < 0 || i >= l->n)
		return -1;
	memmove(&l->items[i], &l->items[i + 1],
		(size_t)(l->n - i - 1) * sizeof l->items[0]);
	l->n--;
	return 0;
}

int fl_overrides_apply(const fl_overrides *l, fl_engine_opts *eo,
		       fl_error *err)
{
	for (int i = 0; i < fl_overrides_count(l); i++) {
		const fl_override *o = &l->items[i];
		bool forbid = !o->force;
		fl_op_pair *pairs = forbid ? eo->never_fuse : eo->fuse;
		int *n = forbid ? &eo->n_never : &eo->n_fuse;

		if (*n >= FL_MAX_CONSTRAINTS) {
			fl_error_set(err, "overrides[%d]: more than %d %s pairs "
				     "with the command line's", i,
				     FL_MAX_CONSTRAINTS,
				     forbid ? "--never-fuse" : "--fuse");
			return -1;
		}
		snprintf(pairs[*n].a, sizeof pairs[*n].a, "%s", o->a);
		snprintf(pairs[*n].b, sizeof pairs[*n].b, "%s", o->b);
		(*n)++;
	}
	return 0;
}

/* Whether name is an op of g or one of the primitives opening its
 * compounds makes ("op7.norm"): the names the engine's constraints take.
 * The opened graph is made once, on the first name g lacks. */
static bool names_an_op(const fl_graph *g, fl_graph **opened,
			const char *name)
{
	fl_error ignored;

	if (fl_graph_find_op(g, name) >= 0)
		return true;
	if (!*opened)
		*opened = fl_graph_expand_compounds(g, &ignored);
	return *opened && fl_graph_find_op(*opened, name) >= 0;
}

int fl_overrides_check(const fl_overrides *l, const fl_graph *g,
		       const char *source, fl_error *err)
{
	bool other = *l->graph && strcmp(l->graph, g->name) != 0;
	fl_graph *opened = NULL;
	int rc = 0;

	for (int i = 0; i < fl_overrides_count(l) && rc == 0; i++) {
		const char *names[2] = {l->items[i].a, l->items[i].b};

		for (int k = 0; k < 2 && rc == 0; k++) {
			if (names_an_op(g, &opened, names[k]))
				continue;
			fl_error_set(err, "%s: overrides[%d].ops[%d]: no op named "
				     "\"%s\" in graph \"%s\"%s%s%s", source, i, k,
				     fl_error_name(names[k]),
				     fl_error_name(g->name),
				     other ? " (the file was saved for \"" : "",
				     other ? fl_error_name(l->graph) : "",
				     other ? "\")" : "");
			rc = -1;
		}
	}
	fl_graph_free(opened);
	return rc;
}

/* ---- reading ---------------------------------------------------------- */

static int parse_action(const cJSON *j, bool *force, fl_error *err)
{
	if (!j) {
		fl_error_set(err, "action: missing (\"forbid\" or \"force\")");
		return -1;
	}
	for (int k = 0; k < 2 && cJSON_IsString(j); k++)
		if (strcmp(j->valuestring, action_names[k]) == 0) {
			*force = k == 1;
			return 0;
		}
	if (cJSON_IsString(j))
		fl_error_set(err, "action: expected \"forbid\" or \"force\", got "
			     "\"%s\"", fl_error_name(j->valuestring));
	else
		fl_error_set(err, "action: expected \"forbid\" or \"force\"");
	return -1;
}

static int parse_ops(const cJSON *j, const char **a, const char **b,
		     fl_error *err)
{
	const cJSON *e0 = cJSON_IsArray(j) ? j->child : NULL;
	const cJSON *e1 = e0 ? e0->next : NULL;

	if (!j) {
		fl_error_set(err, "ops: missing (two op names)");
		return -1;
	}
	if (!e1 || e1->next) {
		fl_error_set(err, "ops: expected two op names, as [\"a\", \"b\"]");
		return -1;
	}
	for (int k = 0; k < 2; k++) {
		const cJSON *e = k ? e1 : e0;

		if (!cJSON_IsString(e) || check_name(e->valuestring, err) < 0) {
			if (!cJSON_IsString(e))
				fl_error_set(err, "expected an op name");
			fl_error_prefix(err, "ops[%d]", k);
			return -1;
		}
	}
	if (strcmp(e0->valuestring, e1->valuestring) == 0) {
		fl_error_set(err, "ops: the same op twice (\"%s\")",
			     fl_error_name(e0->valuestring));
		return -1;
	}
	*a = e0->valuestring;
	*b = e1->valuestring;
	return 0;
}

/* Override i of the file into l.  A problem with one of its fields is
 * reported as "overrides[i].ops: ...", one with the whole override as
 * "overrides[i]: ...". */
static int parse_override(fl_overrides *l, const cJSON *j, int i,
			  fl_error *err)
{
	static const char *const fields[] = {"action", "ops", "doc", NULL};
	bool force;
	const char *a, *b;

	if (!cJSON_IsObject(j)) {
		fl_error_set(err, "expected an object with \"action\" and "
			     "\"ops\"");
		goto whole;
	}
	if (fl_json_check_fields(j, fields, "", err) < 0 ||
	    parse_action(cJSON_GetObjectItemCaseSensitive(j, "action"),
			 &force, err) < 0 ||
	    parse_ops(cJSON_GetObjectItemCaseSensitive(j, "ops"), &a, &b,
		      err) < 0) {
		fl_error_prefix(err, "overrides[%d].", i);
		return -1;
	}
	if (fl_overrides_add(l, force, a, b, err) >= 0)
		return 0;
whole:
	fl_error_prefix(err, "overrides[%d]", i);
	return -1;
}

static int parse_header(fl_overrides *l, const cJSON *root, fl_error *err)
{
	static const char *const fields[] = {"format", "graph", "doc",
					     "overrides", NULL};
	const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
	const cJSON *graph = cJSON_GetObjectItemCaseSensitive(root, "graph");

	if (!format) {
		fl_error_set(err, "format: missing (expected \"%s\")",
			     FL_OVERRIDES_FORMAT);
		return -1;
	}
	if (!cJSON_IsString(format) ||
	    strcmp(format->valuestring, FL_OVERRIDES_FORMAT) != 0) {
		fl_error_set(err, "format: expected \"%s\", got %s%s%s",
			     FL_OVERRIDES_FORMAT,
			     cJSON_IsString(format) ? "\"" : "",
			     cJSON_IsString(format) ?
			     fl_error_name(format->valuestring) : "no string",
			     cJSON_IsString(format) ? "\"" : "");
		return -1;
	}
	if (fl_json_check_fields(root, fields, "", err) < 0)
		return -1;
	if (graph && (!cJSON_IsString(graph) ||
		      strlen(graph->valuestring) >= sizeof l->graph)) {
		fl_error_set(err, "graph: expected a graph name (at most %zu "
			     "characters)", sizeof l->graph - 1);
		return -1;
	}
	if (graph)
		snprintf(l->graph, sizeof l->graph, "%s", graph->valuestring);
	return 0;
}

static int parse_list(fl_overrides *l, const cJSON *root, fl_error *err)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "overrides");
	int i = 0;

	if (parse_header(l, root, err) < 0)
		return -1;
	if (!cJSON_IsArray(list)) {
		fl_error_set(err, "overrides: %s", list ? "expected a list"
							: "missing");
		return -1;
	}
	for (const cJSON *e = list->child; e; e = e->next, i++)
		if (parse_override(l, e, i, err) < 0)
			return -1;
	return 0;
}

int fl_overrides_load_string(const char *text, size_t len,
			     const char *source, fl_overrides **out,
			     fl_error *err)
{
	cJSON *root = fl_json_parse(text, len, err);
	fl_overrides *l = fl_overrides_new();
	int rc = -1;

	*out = NULL;
	if (!l)
		fl_error_set(err, "out of memory");
	else if (root && !cJSON_IsObject(root))
		fl_error_set(err, "expected a JSON object at the top");
	else if (root)
		rc = parse_list(l, root, err);
	cJSON_Delete(root);
	if (rc < 0) {
		fl_error_prefix(err, "%s", source);
		fl_overrides_free(l);
		return -1;
	}
	*out = l;
	return 0;
}

int fl_overrides_load(const char *path, fl_overrides **out, fl_error *err)
{
	size_t len;
	char *text = fl_read_file(path, FL_OVERRIDES_MAX_FILE_BYTES,
				  "an overrides file", &len, err);
	int rc;

	*out = NULL;
	if (!text)
		return -1;
	rc = fl_overrides_load_string(text, len, path, out, err);
	free(text);
	return rc;
}

/* ---- writing ---------------------------------------------------------- */

/* s as a JSON string literal (quotes and escapes), malloc'd. */
static char *json_string(const char *s)
{
	cJSON *j = cJSON_CreateString(s);
	char *text = j ? cJSON_PrintUnformatted(j) : NULL;

	cJSON_Delete(j);
	return text;
}

/* Writes one line per override, so that the file diffs well. */
static int write_list(FILE *f, const fl_overrides *l, const char *graph_name)
{
	char *g = graph_name ? json_string(graph_name) : NULL;
	int ok = !graph_name || g;

	fprintf(f, "{\n  \"format\": \"%s\",\n", FL_OVERRIDES_FORMAT);
	if (g)
		fprintf(f, "  \"graph\": %s,\n", g);
	free(g);
	fprintf(f, "  \"overrides\": [");
	for (int i = 0; i < fl_overrides_count(l) && ok; i++) {
		char *a = json_string(l->items[i].a);
		char *b = json_string(l->items[i].b);

		ok = a && b;
		if (ok)
			fprintf(f, "%s\n    {\"action\": \"%s\", \"ops\": [%s, %s]}",
				i ? "," : "",
				fl_override_action_name(l->items[i].force), a, b);
		free(a);
		free(b);
	}
	fprintf(f, "%s]\n}\n", fl_overrides_count(l) ? "\n  " : "");
	return ok ? 0 : -1;
}

/* The folder of path, for the temporary file ("." for a bare name). */
static void dir_of(const char *path, char *dir, size_t n)
{
	char copy[4096];

	snprintf(copy, sizeof copy, "%s", path);
	snprintf(dir, n, "%s", dirname(copy));
}

int fl_overrides_save(const char *path, const fl_overrides *l,
		      const char *graph_name, fl_error *err)
{
	char dir[4096], tmp[4200];
	FILE *f = NULL;
	int fd, rc = -1;

	if (strlen(path) >= sizeof dir) {
		fl_error_set(err, "%.64s...: path too long", path);
		return -1;
	}
	dir_of(path, dir, sizeof dir);
	snprintf(tmp, sizeof tmp, "%s/.fuselab-overrides.XXXXXX", dir);
	fd = mkstemp(tmp);
	if (fd < 0) {
		fl_error_set(err, "%s: cannot write in %s: %s", path, dir,
			     strerror(errno));
		return -1;
	}
	(void)fchmod(fd, 0644);	/* mkstemp makes 0600; a list is no secret */
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		fl_error_set(err, "%s: cannot write: %s", path, strerror(errno));
		goto out;
	}
	if (write_list(f, l, graph_name) < 0) {
		fl_error_set(err, "%s: out of memory", path);
		goto out;
	}
	if (fflush(f) != 0 || fsync(fileno(f)) != 0 || ferror(f)) {
		fl_error_set(err, "%s: cannot write: %s", path, strerror(errno));
		goto out;
	}
	if (fclose(f) != 0) {
		f = NULL;
		fl_error_set(err, "%s: cannot write: %s", path, strerror(errno));
		goto out;
	}
	f = NULL;
	if (rename(tmp, path) != 0) {
		fl_error_set(err, "%s: cannot replace: %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (f)
		fclose(f);
	if (rc < 0)
		unlink(tmp);
	return rc;
}
