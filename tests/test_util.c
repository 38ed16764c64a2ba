/* Helpers shared by the test files (see test_util.h). */
#include "test_util.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "loader.h"
#include "random_graph.h"

fl_graph *t_load(const char *json)
{
	fl_error err = {""};
	fl_graph *g = fl_load_graph_string(json, strlen(json), "test", &err);

	if (!g)
		fail_msg("graph did not load: %s", err.msg);
	return g;
}

fl_graph *t_load_q(const char *single_quoted)
{
	char *json = strdup(single_quoted);
	fl_graph *g;

	assert_non_null(json);
	for (char *c = json; *c; c++)
		if (*c == '\'')
			*c = '"';
	g = t_load(json);
	free(json);
	return g;
}

fl_graph *t_load_sample(const char *name)
{
	char path[1024];
	fl_error err = {""};
	fl_graph *g;

	snprintf(path, sizeof path, "%s/%s.json", t_samples_dir(), name);
	g = fl_load_graph_file(path, &err);
	if (!g)
		fail_msg("%s: %s", name, err.msg);
	return g;
}

void t_load_fails(const char *json, const char *expect)
{
	fl_error err = {""};
	fl_graph *g = fl_load_graph_string(json, strlen(json), "test", &err);

	if (g) {
		fl_graph_free(g);
		fail_msg("graph loaded, expected an error containing \"%s\"",
			 expect);
	}
	if (!strstr(err.msg, expect))
		fail_msg("error \"%s\" does not contain \"%s\"", err.msg, expect);
}

void t_assert_close(const float *got, const float *want, int64_t n,
		    double atol, double rtol)
{
	for (int64_t i = 0; i < n; i++) {
		double g = got[i], w = want[i];

		if (isnan(w) && isnan(g))
			continue;
		if (isinf(w) && g == w)
			continue;
		if (!(fabs(g - w) <= atol + rtol * fabs(w)))
			fail_msg("element %lld: got %.9g, want %.9g",
				 (long long)i, g, w);
	}
}

void t_infer_fails(const fl_op *op, const fl_shape *in, const char *expect)
{
	fl_shape out;
	fl_error err = {""};

	memset(&out, 0, sizeof out);
	if (fl_op_info_of(op->kind)->infer(op, in, &out, &err) == 0)
		fail_msg("%s: inference succeeded, expected \"%s\"",
			 fl_op_kind_name(op->kind), expect);
	assert_string_equal(err.msg, expect);
}

int t_run(const char *cmd, char **output)
{
	char *full, *buf = NULL;
	size_t len = 0, cap = 0;
	FILE *p;
	int status;

	full = malloc(strlen(cmd) + 16);
	assert_non_null(full);
	sprintf(full, "( %s ) 2>&1", cmd);
	p = popen(full, "r");
	free(full);
	assert_non_null(p);
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		size_t got = fread(buf + len, 1, 4096, p);

		if (got == 0)
			break;
		len += got;
	}
	buf[len] = '\0';
	status = pclose(p);
	if (output)
		*output = buf;
	else
		free(buf);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char *t_fuselab_bin(void)
{
	const char *b = getenv("FUSELAB_BIN");

	return b ? b : "build/fuselab";
}

const char *t_samples_dir(void)
{
	const char *s = getenv("FUSELAB_SAMPLES");

	return s ? s : "samples";
}

const char *t_repo_root(void)
{
	static char root[4096];
	const char *r = getenv("FUSELAB_ROOT"), *s = getenv("FUSELAB_SAMPLES");
	char *slash;

	if (r)
		return r;
	if (!s || strlen(s) >= sizeof root)
		return ".";
	strcpy(root, s);
	slash = strrchr(root, '/');
	if (!slash)
		return ".";
	*slash = '\0';
	return root[0] ? root : "/";
}

int t_fuselab(const char *args, char **out)
{
	size_t n = strlen(t_fuselab_bin()) + strlen(args) + 2;
	char *cmd = malloc(n);
	int rc;

	assert_non_null(cmd);
	snprintf(cmd, n, "%s %s", t_fuselab_bin(), args);
	rc = t_run(cmd, out);
	free(cmd);
	return rc;
}

char *t_fuselab_ok(const char *args, const char *graph)
{
	char cmd[1536], *out = NULL;
	int rc;

	if (strchr(graph, '/'))
		snprintf(cmd, sizeof cmd, "--batch %s %s", args, graph);
	else
		snprintf(cmd, sizeof cmd, "--batch %s %s/%s.json", args,
			 t_samples_dir(), graph);
	rc = t_fuselab(cmd, &out);
	if (rc != 0)
		fail_msg("fuselab %s (rc %d):\n%s", cmd, rc, out);
	return out;
}

const char *t_write_graph(const char *dir, const char *name,
			  const char *text)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	return path;
}

int t_occurrences(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static int strategies_verifying(void)
{
	return T_SANITIZED ? 1 : FL_STRATEGY_COUNT;
}

void t_verifies_every_strategy(const char *path, const char *dir,
			       const char *what)
{
	char cmd[1400], *out = NULL;
	int rc;

	snprintf(cmd, sizeof cmd, "%s --batch '%s' --run --strategy %s "
		 "--repeat 1 --warmup 0 --workdir '%s'", t_fuselab_bin(), path,
		 T_SANITIZED ? "apollo" : "all", dir);
	rc = t_run(cmd, &out);
	if (rc != 0 || t_occurrences(out, "verified yes") != strategies_verifying())
		fail_msg("%s: rc %d\n%s", what, rc, out);
	free(out);
}

void t_graph_verifies_every_strategy(const char *name, const char *graph)
{
	char dir[256], *json = strdup(graph);
	const char *path;

	assert_non_null(json);
	for (char *c = json; *c; c++)
		if (*c == '\'')
			*c = '"';
	t_make_dir(dir, sizeof dir);
	path = t_write_graph(dir, name, json);
	t_verifies_every_strategy(path, dir, name);
	free(json);
	t_remove_dir(dir);
}

char *t_numpy_model_every_strategy(const char *script)
{
	char dir[256], model[300], cmd[1024], *out;

	t_make_dir(dir, sizeof dir);
	t_write_graph(dir, "make.py", script);
	snprintf(cmd, sizeof cmd, "cd %s && /usr/bin/python3 make.py", dir);
	if (t_run(cmd, &out) != 0)
		fail_msg("writing the model: %s", out);
	free(out);
	snprintf(cmd, sizeof cmd, "--run --strategy %s --repeat 1 --warmup 0 "
		 "--inputs %s/d --expect %s/d", T_SANITIZED ? "apollo" : "all",
		 dir, dir);
	snprintf(model, sizeof model, "%s/m.onnx", dir);
	out = t_fuselab_ok(cmd, model);
	if (strstr(out, "opaque") ||
	    t_occurrences(out, "verified yes") != strategies_verifying())
		fail_msg("not every strategy verified:\n%s", out);
	t_remove_dir(dir);
	return out;
}

void t_make_dir(char *dir, size_t n)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, n, "%s/fuselab-test-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	if (!mkdtemp(dir))
		fail_msg("cannot make a directory like %s", dir);
}

void t_remove_dir(const char *dir)
{
	char cmd[1100];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(t_run(cmd, NULL), 0);
}

void t_assert_dot_accepts(const char *path)
{
	char cmd[1100], *out = NULL;
	int rc;

	snprintf(cmd, sizeof cmd, "dot -Tsvg '%s' -o /dev/null", path);
	rc = t_run(cmd, &out);
	if (rc != 0 || out[0])
		fail_msg("dot on %s: exit %d: %s", path, rc, out);
	free(out);
}

char *t_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		fail_msg("%s: cannot open", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

void t_assert_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("output does not contain \"%s\":\n%s", needle, hay);
}

int t_count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

int t_sample_names(char names[][64], int max)
{
	DIR *d = opendir(t_samples_dir());
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) && n < max) {
		size_t len = strlen(de->d_name);

		if (len > 5 && len < 60 && !strcmp(de->d_name + len - 5, ".json"))
			snprintf(names[n++], 64, "%.*s", (int)(len - 5), de->d_name);
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof names[0],
	      (int (*)(const void *, const void *))strcmp);
	return n;
}

void t_expect_fuselab(const char *args, int status, const char *needle)
{
	char *out;
	int rc = t_fuselab(args, &out);

	if (rc != status)
		fail_msg("fuselab %s: exit %d, expected %d:\n%s", args, rc, status,
			 out);
	t_assert_contains(out, needle);
	free(out);
}

fl_session *t_cuda_codegen(const fl_graph *g, fl_strategy s,
			   const char *what)
{
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *ses;

	fl_engine_opts_default(&o);
	o.strategy = s;
	o.stop_after = FL_PASS_CODEGEN;
	o.run.target = FL_TARGET_CUDA;
	ses = fl_engine_open(g, &o, &err);
	if (!ses || fl_engine_run(ses, &err) < 0 || !fl_engine_source(ses))
		fail_msg("%s, CUDA, strategy %s: %s", what,
			 fl_strategy_name(s), err.msg);
	t_assert_contains(fl_engine_source(ses), "__global__");
	return ses;
}

fl_graph *t_random_graph(uint64_t seed, int n_ops)
{
	fl_random_graph_opts o = {.n_ops = n_ops, .seed = seed};
	fl_error err = {""};
	fl_graph *g = fl_random_graph(&o, &err);

	if (!g)
		fail_msg("seed %llu: %s", (unsigned long long)seed, err.msg);
	return g;
}
