/* Errors that name the problem (issue 8, items 7-9): sizes that overflow,
 * hostile names, deep nesting, huge numbers, rules files, paths. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loader.h"
#include "test_util.h"

static int fuselab(const char *args, char **out)
{
	char cmd[8192];

	snprintf(cmd, sizeof cmd, "%s %s", t_fuselab_bin(), args);
	return t_run(cmd, out);
}

static void assert_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("output does not contain \"%s\":\n%s", needle, hay);
}

static void expect(const char *args, int status, const char *needle)
{
	char *out;
	int rc = fuselab(args, &out);

	if (rc != status)
		fail_msg("fuselab %s: exit %d, expected %d:\n%s", args, rc, status,
			 out);
	assert_contains(out, needle);
	free(out);
}

/* Writes text to a fresh temporary file; its path in path[64]. */
static void temp_file(char *path, const char *text, size_t len)
{
	int fd;
	FILE *f;

	strcpy(path, "/tmp/fuselab-err-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

static void test_max_memory_overflow(void **state)
{
	(void)state;
	expect("--batch --max-memory 9007199254740993G", 2,
	       "--max-memory: \"9007199254740993G\" is more than the largest "
	       "size");
	expect("--batch --max-memory 17179869184G", 2, "is more than the largest");
	expect("--batch --max-memory 99999999999999999999", 2,
	       "is more than the largest");
	expect("--batch --max-memory 0", 2, "must be more than 0");
	expect("--batch --max-memory 0G", 2, "must be more than 0");
	expect("--batch --max-memory -5M", 2, "expected a size");
	expect("--batch --max-memory 8589934591G --check", 0, "valid: yes");
}

static void test_tile_trailing_comma(void **state)
{
	(void)state;
	expect("--batch --tile 4,", 2, "--tile: \"4,\" ends in a comma");
	expect("--batch --tile 4,,4", 2, "--tile: expected");
	expect("--batch --tile ,4", 2, "--tile: expected");
}

FL_SUITE(errors,
	 cmocka_unit_test(test_max_memory_overflow),
	 cmocka_unit_test(test_tile_trailing_comma));
