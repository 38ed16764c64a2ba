/* Every input the fuzzers (make fuzz) found a crash, leak or undefined
 * behaviour with, kept in tests/fuzz-regressions/<harness>/: each must
 * now load or fail with a message, under ASan and UBSan in the sanitizer
 * pass. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"
#include "test_util.h"

/* Calls fn on every file of tests/fuzz-regressions/<harness>; returns
 * how many. */
static int each_input(const char *harness, void (*fn)(const char *path))
{
	char dir[4096], path[8192];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(dir, sizeof dir, "%s/tests/fuzz-regressions/%s",
		 t_repo_root(), harness);
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		fn(path);
		n++;
	}
	closedir(d);
	return n;
}

static void import_one(const char *path)
{
	fl_error err = {""};
	fl_onnx_info info;
	fl_graph *g = fl_onnx_load_file(path, NULL, &info, &err);

	if (!g && !err.msg[0])
		fail_msg("%s: no graph and no message", path);
	fl_graph_free(g);
	fl_onnx_info_free(&info);
}

static void test_fuzz_regressions_onnx_import(void **state)
{
	(void)state;
	assert_true(each_input("onnx_import", import_one) >= 1);
}

FL_SUITE(fuzz_regressions,
	 cmocka_unit_test(test_fuzz_regressions_onnx_import));
