/* Safe writes (exporters/output.h): whole files or nothing, direct
 * writes to devices and standard output, errors naming the path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "output.h"
#include "test_util.h"

static void output_replaces_a_file_whole(void **state)
{
	char dir[256], path[320], *text;
	fl_error err = {""};
	fl_out *o;

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/a.txt", dir);
	assert_int_equal(fl_out_write_file(path, "old\n", 4, &err), 0);
	o = fl_out_open(path, &err);
	assert_non_null(o);
	assert_int_equal(fl_out_printf(o, &err, "new %d\n", 1), 0);
	/* until closed, the old file is what readers see */
	text = t_read_file(path, NULL);
	assert_string_equal(text, "old\n");
	free(text);
	assert_int_equal(t_count_entries(dir), 2);	/* a.txt + temporary */
	assert_int_equal(fl_out_close(o, &err), 0);
	text = t_read_file(path, NULL);
	assert_string_equal(text, "new 1\n");
	free(text);
	assert_int_equal(t_count_entries(dir), 1);
	t_remove_dir(dir);
}

static void output_failed_write_leaves_nothing(void **state)
{
	char dir[256], path[320], *text;
	fl_error err = {""};
	fl_out *o;

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/b.txt", dir);
	assert_int_equal(fl_out_write_file(path, "keep\n", 5, &err), 0);
	fl_out_fail_after(10);
	o = fl_out_open(path, &err);
	assert_non_null(o);
	assert_int_equal(fl_out_write(o, "0123456789", 10, &err), 0);
	assert_int_equal(fl_out_write(o, "x", 1, &err), -1);
	t_assert_contains(err.msg, "b.txt: No space left on device");
	assert_int_equal(fl_out_close(o, &err), -1);
	fl_out_fail_after(-1);
	text = t_read_file(path, NULL);
	assert_string_equal(text, "keep\n");	/* untouched */
	free(text);
	assert_int_equal(t_count_entries(dir), 1);	/* no temporary left */
	t_remove_dir(dir);
}

static void output_bad_paths_are_named(void **state)
{
	char dir[256], path[320];
	fl_error err = {""};

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/missing/c.txt", dir);
	assert_int_equal(fl_out_write_file(path, "x", 1, &err), -1);
	t_assert_contains(err.msg, path);
	t_assert_contains(err.msg, "No such file or directory");
	assert_int_equal(fl_out_write_file(dir, "x", 1, &err), -1);
	t_assert_contains(err.msg, "is a directory, not a file");
	if (getuid() != 0) {	/* root writes anywhere */
		chmod(dir, 0500);
		snprintf(path, sizeof path, "%s/d.txt", dir);
		assert_int_equal(fl_out_write_file(path, "x", 1, &err), -1);
		t_assert_contains(err.msg, "Permission denied");
		chmod(dir, 0700);
	}
	assert_int_equal(t_count_entries(dir), 0);
	t_remove_dir(dir);
}

static void output_devices_are_written_directly(void **state)
{
	fl_error err = {""};
	struct stat st;
	char buf[8192];

	(void)state;
	memset(buf, 'x', sizeof buf);
	assert_int_equal(fl_out_write_file("/dev/null", buf, sizeof buf, &err), 0);
	assert_int_equal(fl_out_write_file("/dev/full", buf, sizeof buf, &err), -1);
	t_assert_contains(err.msg, "/dev/full: No space left on device");
	assert_int_equal(stat("/dev/full", &st), 0);
	assert_true(S_ISCHR(st.st_mode));	/* still the device */
}

FL_SUITE(output,
	 cmocka_unit_test(output_replaces_a_file_whole),
	 cmocka_unit_test(output_failed_write_leaves_nothing),
	 cmocka_unit_test(output_bad_paths_are_named),
	 cmocka_unit_test(output_devices_are_written_directly));
