/* The build cache ($FUSELAB_BUILD_CACHE, engine/run/build_cache.c): the
 * same source under the same compiler is compiled once and taken from
 * the cache after that (its gen.so runs and verifies, its warnings are
 * those the compiler printed); a different source, an entry whose key
 * differs (a hash collision), a compiler named by a path and an unset
 * variable all mean compiling; two builds of one source at once compile
 * it once (the second waits for the first). */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <isl/ctx.h>

#include "codegen.h"
#include "interp.h"
#include "program_util.h"
#include "runner.h"
#include "test_util.h"

/* y = tanh(x + b): two kernels unfused. */
#define GRAPH "{'format':'fuselab-graph/1','name':'cache','tensors':{"    \
	"'x':{'shape':[4,8],'role':'input'},"                              \
	"'b':{'shape':[8],'role':'param'},"                                \
	"'y':{'shape':[4,8],'role':'output'}},'ops':["                     \
	"{'name':'add_1','op':'add','in':['x','b'],'out':'a'},"            \
	"{'name':'tanh_2','op':'tanh','in':['a'],'out':'y'}]}"

/* The test's program, its reference values and its C; the variable as
 * it was before the test, put back by fixture_free. */
typedef struct fixture {
	isl_ctx *ctx;
	fl_graph *g;
	fl_values *ref;
	fl_program *p;
	char *src;
	char dir[256], cache[300];
	char *saved_env;
} fixture;

static void fixture_load(fixture *f)
{
	const char *env = getenv("FUSELAB_BUILD_CACHE");
	fl_error err = {""};

	memset(f, 0, sizeof *f);
	f->saved_env = env ? strdup(env) : NULL;
	f->ctx = isl_ctx_alloc();
	f->g = t_load_q(GRAPH);
	f->ref = fl_interp_run(f->g, NULL, &err);
	assert_non_null(f->ref);
	f->p = t_unfused_program(f->ctx, f->g);
	assert_non_null(f->p);
	f->src = fl_codegen_c(f->p, &err);
	assert_non_null(f->src);
	t_make_dir(f->dir, sizeof f->dir);
	snprintf(f->cache, sizeof f->cache, "%s/cache", f->dir);
	assert_int_equal(setenv("FUSELAB_BUILD_CACHE", f->cache, 1), 0);
}

static void fixture_free(fixture *f)
{
	if (f->saved_env)
		setenv("FUSELAB_BUILD_CACHE", f->saved_env, 1);
	else
		unsetenv("FUSELAB_BUILD_CACHE");
	free(f->saved_env);
	t_remove_dir(f->dir);
	free(f->src);
	fl_program_free(f->p);
	fl_values_free(f->ref);
	fl_graph_free(f->g);
	isl_ctx_free(f->ctx);
}

/* Builds src with o; true when gen.so came from the cache.  The build
 * must succeed and its gen.so must exist. */
static bool build_cached(const char *src, const fl_run_opts *o, fl_build *b)
{
	fl_error err = {""};

	assert_int_equal(fl_build_source(src, o, b, &err), 0);
	if (b->status != FL_RUN_OK)
		fail_msg("build: %s", b->message);
	assert_true(access(b->so_path, R_OK) == 0);
	return b->cached;
}

static bool build_once(const char *src, const fl_run_opts *o)
{
	fl_build b;
	bool cached = build_cached(src, o, &b);

	fl_build_remove(&b, o);
	return cached;
}

static fl_run_opts verify_only(void)
{
	fl_run_opts o;

	fl_run_opts_default(&o);
	o.warmup = 0;
	o.repeat = 0;
	return o;
}

/* The entries in the cache directory (each a sub-directory). */
static int count_entries(const char *cache)
{
	DIR *d = opendir(cache);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A second build of the same source is the first one's gen.so: it runs
 * and verifies, with the same compiler and flags. */
static void test_build_cache_second_build_is_taken(void **state)
{
	fl_run_opts o = verify_only();
	fl_build first, again;
	fl_error err = {""};
	fl_run_result r;
	fixture f;

	(void)state;
	fixture_load(&f);
	assert_false(build_cached(f.src, &o, &first));
	assert_int_equal(count_entries(f.cache), 1);
	assert_true(build_cached(f.src, &o, &again));
	assert_string_equal(again.compiler, first.compiler);
	assert_string_equal(again.flags, first.flags);
	assert_true(again.seconds > 0);
	assert_int_equal(fl_run_build(&again, f.p, f.ref, &o, &r, &err), 0);
	if (r.status != FL_RUN_OK || !r.verified)
		fail_msg("%s: %s", fl_run_status_name(r.status), r.message);
	fl_run_result_free(&r);
	fl_build_remove(&first, &o);
	fl_build_remove(&again, &o);
	assert_int_equal(count_entries(f.cache), 1);
	fixture_free(&f);
}

/* One more line is another source; its warning comes back with the
 * cached build. */
static void test_build_cache_other_source_compiles(void **state)
{
	static const char extra[] = "\n#warning fuselab-cache-warning\n";
	fl_run_opts o = verify_only();
	fl_build b;
	fixture f;
	char *warned;

	(void)state;
	fixture_load(&f);
	warned = malloc(strlen(f.src) + sizeof extra);
	assert_non_null(warned);
	strcpy(warned, f.src);
	strcat(warned, extra);
	assert_false(build_once(f.src, &o));
	assert_false(build_once(warned, &o));
	assert_int_equal(count_entries(f.cache), 2);
	assert_true(build_cached(warned, &o, &b));
	assert_int_equal(b.n_warnings, 1);
	if (!strstr(b.warnings, "fuselab-cache-warning"))
		fail_msg("warnings: %s", b.warnings);
	fl_build_remove(&b, &o);
	free(warned);
	fixture_free(&f);
}

/* An entry whose key is not the source's (what a hash collision looks
 * like) is never taken. */
static void test_build_cache_key_must_match(void **state)
{
	fl_run_opts o = verify_only();
	char path[700];
	struct dirent *de;
	fixture f;
	DIR *d;

	(void)state;
	fixture_load(&f);
	assert_false(build_once(f.src, &o));
	d = opendir(f.cache);
	assert_non_null(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			FILE *key;

			snprintf(path, sizeof path, "%s/%s/key", f.cache,
				 de->d_name);
			key = fopen(path, "w");
			assert_non_null(key);
			fputs("another source", key);
			assert_int_equal(fclose(key), 0);
		}
	closedir(d);
	assert_false(build_once(f.src, &o));
	fixture_free(&f);
}

/* No cache without the variable, nor for a compiler named by a path. */
static void test_build_cache_off(void **state)
{
	fl_run_opts o = verify_only();
	fixture f;

	(void)state;
	fixture_load(&f);
	unsetenv("FUSELAB_BUILD_CACHE");
	assert_false(build_once(f.src, &o));
	assert_false(build_once(f.src, &o));
	assert_int_equal(count_entries(f.cache), 0);
	setenv("FUSELAB_BUILD_CACHE", f.cache, 1);
	if (access("/usr/bin/cc", X_OK) == 0) {
		o.cc = "/usr/bin/cc";
		assert_false(build_once(f.src, &o));
		assert_false(build_once(f.src, &o));
		assert_int_equal(count_entries(f.cache), 0);
		o.cc = NULL;
	}
	assert_false(build_once(f.src, &o));
	assert_true(build_once(f.src, &o));
	fixture_free(&f);
}

/* A CUDA build is never taken from the cache: its key would be the C
 * compiler's, which says nothing of the nvcc it needs -- with no nvcc it
 * must say so, even when a C build of the same text is cached. */
static void test_build_cache_not_for_cuda(void **state)
{
	fl_run_opts o = verify_only(), cu = verify_only();
	char *saved = getenv("NVCC") ? strdup(getenv("NVCC")) : NULL;
	fl_error err = {""};
	fl_build b;
	fixture f;

	(void)state;
	fixture_load(&f);
	assert_false(build_once(f.src, &o));
	cu.target = FL_TARGET_CUDA;
	setenv("NVCC", "/nonexistent/nvcc", 1);
	assert_int_equal(fl_build_source(f.src, &cu, &b, &err), 0);
	if (saved)
		setenv("NVCC", saved, 1);
	else
		unsetenv("NVCC");
	free(saved);
	assert_int_equal(b.status, FL_RUN_NO_COMPILER);
	assert_false(b.cached);
	fl_build_remove(&b, &cu);
	assert_int_equal(count_entries(f.cache), 1);
	fixture_free(&f);
}

/* One of two builds started together. */
typedef struct racer {
	const char *src;
	pthread_barrier_t *start;
	bool cached;
} racer;

static void *race_build(void *arg)
{
	racer *r = arg;
	fl_run_opts o = verify_only();
	fl_error err = {""};
	fl_build b;

	pthread_barrier_wait(r->start);
	if (fl_build_source(r->src, &o, &b, &err) == 0 &&
	    b.status == FL_RUN_OK)
		r->cached = b.cached;
	else
		r->cached = true;	/* a failed build counts as no compile */
	fl_build_remove(&b, &o);
	return NULL;
}

/* Two builds of one source started at the same moment (as the plain and
 * the sanitizer pass of make test do): one compiles, the other waits for
 * it and takes its gen.so.  Without the wait both miss the cache, since
 * a compile takes far longer than starting one. */
static void test_build_cache_waits_for_a_build_in_flight(void **state)
{
	pthread_barrier_t start;
	pthread_t t[2];
	racer r[2];
	fixture f;

	(void)state;
	fixture_load(&f);
	assert_int_equal(pthread_barrier_init(&start, NULL, 2), 0);
	for (int i = 0; i < 2; i++) {
		r[i] = (racer){f.src, &start, false};
		assert_int_equal(pthread_create(&t[i], NULL, race_build, &r[i]),
				 0);
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	pthread_barrier_destroy(&start);
	if (r[0].cached == r[1].cached)
		fail_msg("two builds at once: %s", r[0].cached
			 ? "both from the cache (or failed)"
			 : "both compiled");
	assert_int_equal(count_entries(f.cache), 1);
	fixture_free(&f);
}

FL_SUITE(build_cache,
	 cmocka_unit_test(test_build_cache_second_build_is_taken),
	 cmocka_unit_test(test_build_cache_waits_for_a_build_in_flight),
	 cmocka_unit_test(test_build_cache_not_for_cuda),
	 cmocka_unit_test(test_build_cache_other_source_compiles),
	 cmocka_unit_test(test_build_cache_key_must_match),
	 cmocka_unit_test(test_build_cache_off));
