/* The test binary itself (test_main.c): with FUSELAB_TEST_CLAIMS=DIR,
 * processes sharing DIR run each test once between them, as make test's
 * second process of a pass relies on. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

/* Runs this test binary on the tests matching pattern with claims in
 * dir; its exit status, its output in *out. */
static int run_self(const char *dir, const char *pattern, char **out)
{
	char self[PATH_MAX], cmd[PATH_MAX + 600];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

	assert_true(n > 0);
	self[n] = '\0';
	/* the times file is the outer run's: none for the inner one */
	snprintf(cmd, sizeof cmd, "FUSELAB_TEST_TIMES= FUSELAB_TEST_CLAIMS=%s "
		 "'%s' '%s' 2>&1", dir, self, pattern);
	return t_run(cmd, out);
}

/* The first process runs the tests it claims; a second one sharing the
 * claims runs none of them again; a process with claims of its own runs
 * them all. */
static void test_claims_run_each_test_once(void **state)
{
	static const char pattern[] = "test_shape_*";
	char dir[512], claims[600], other[600], *out;

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(claims, sizeof claims, "%s/claims", dir);
	snprintf(other, sizeof other, "%s/other", dir);
	assert_int_equal(run_self(claims, pattern, &out), 0);
	t_assert_contains(out, "[       OK ] test_shape_");
	if (strstr(out, "this process ran 0 of"))
		fail_msg("the first process ran nothing:\n%s", out);
	free(out);
	assert_int_equal(run_self(claims, pattern, &out), 0);
	if (strstr(out, "[ RUN      ]") || !strstr(out, "this process ran 0 of"))
		fail_msg("a second process ran claimed tests:\n%s", out);
	free(out);
	assert_int_equal(run_self(other, pattern, &out), 0);
	t_assert_contains(out, "[       OK ] test_shape_");
	free(out);
	t_remove_dir(dir);
}

FL_SUITE(harness,
	 cmocka_unit_test(test_claims_run_each_test_once));
