/* A fixed subset of ONNX's own backend tests (tests/conformance-subset.txt)
 * through scripts/conformance.sh: import, the interpreter against the
 * expected outputs, every strategy's kernels against the interpreter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

/* The first n tests of the subset list into the file `path`; returns
 * how many were written. */
static int subset(int n, char *path, size_t len)
{
	char line[512];
	FILE *in, *out;
	int k = 0;

	snprintf(path, len, "/tmp/fl-conformance-subset-%d.txt", (int)getpid());
	snprintf(line, sizeof line, "%s/tests/conformance-subset.txt",
		 t_repo_root());
	in = fopen(line, "r");
	out = fopen(path, "w");
	assert_non_null(in);
	assert_non_null(out);
	while (k < n && fgets(line, sizeof line, in))
		if (line[0] != '#' && line[0] != '\n') {
			fputs(line, out);
			k++;
		}
	fclose(in);
	fclose(out);
	return k;
}

static void test_conformance_subset_passes(void **state)
{
	char list[256], cmd[2048], want[64], *out;
	int n = subset(T_SANITIZED ? 1 : 1000, list, sizeof list);

	(void)state;
	assert_true(n >= 1);
	snprintf(cmd, sizeof cmd, "%s/scripts/conformance.sh -j 1 -l %s %s",
		 t_repo_root(), list, t_fuselab_bin());
	if (t_run(cmd, &out) != 0)
		fail_msg("conformance subset failed:\n%s", out);
	/* every listed test passed: none failed, none skipped (some with
	 * inputs needed at import bound from their data, --bind-inputs) */
	snprintf(want, sizeof want, "passed %d (", n);
	t_assert_contains(out, want);
	snprintf(want, sizeof want, "failed 0, skipped 0 of %d", n);
	t_assert_contains(out, want);
	free(out);
	remove(list);
}

FL_SUITE(conformance,
	 cmocka_unit_test(test_conformance_subset_passes));
