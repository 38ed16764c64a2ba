/* scripts/check-layers.sh (make check-layers): the include rules between
 * the engine, the views and the exporters (DESIGN 2).  Each rule is broken
 * once in a small tree made in a temp folder; the script must fail naming
 * file:line and the include, and must pass on that tree once repaired and
 * on the repository itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static void put(const char *root, const char *path, const char *text)
{
	char full[1024], cmd[1200];
	FILE *f;

	snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname %s/%s)\"", root, path);
	assert_int_equal(t_run(cmd, NULL), 0);
	snprintf(full, sizeof full, "%s/%s", root, path);
	f = fopen(full, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Runs the script on root; returns its status, output in *out. */
static int check(const char *root, char **out)
{
	char cmd[2048];

	snprintf(cmd, sizeof cmd, "sh %s/scripts/check-layers.sh %s",
		 t_repo_root(), root);
	return t_run(cmd, out);
}

/* A tree that keeps the rules: the engine includes its own headers and
 * system ones; views and exporters include public engine headers. */
static void good_tree(const char *root)
{
	put(root, "engine/engine.h", "#include \"graph.h\"\n");
	put(root, "engine/state_impl.h", "#include \"engine.h\"\n");
	put(root, "engine/ir/graph.h", "#include <stdio.h>\n");
	put(root, "engine/partition/groups_impl.h", "#include \"state_impl.h\"\n");
	put(root, "engine/partition/aggregate.c",
	    "#include <stdlib.h>\n#include \"groups_impl.h\"\n");
	put(root, "app/tui.h", "#include \"engine.h\"\n");
	put(root, "app/tui.c", "#include <curses.h>\n#include \"tui.h\"\n"
	    "#include \"state_impl.h\"\n");
	put(root, "views/view_x.c", "#include \"engine.h\"\n#include \"graph.h\"\n");
	put(root, "views/view_x.h", "");
	put(root, "exporters/dot.c", "#include \"engine.h\"\n#include \"view_x.h\"\n");
}

static void test_check_layers_flags_each_rule(void **state)
{
	char dir[] = "/tmp/fuselab-layers-XXXXXX", cmd[1100], *out;

	(void)state;
	assert_non_null(mkdtemp(dir));
	good_tree(dir);
	assert_int_equal(check(dir, &out), 0);
	t_assert_contains(out, "check-layers: OK");
	free(out);

	/* (a) curses in the engine, an app/ header, a views/ header and an
	 * exporters/ header reached by a relative path */
	put(dir, "engine/ir/bad_curses.c",
	    "#include <stdio.h>\n#include <ncurses.h>\n");
	put(dir, "engine/bad_app.c", "#include \"graph.h\"\n  # include \"tui.h\"\n");
	put(dir, "engine/partition/bad_view.h", "\n\n#include \"view_x.h\"\n");
	put(dir, "exporters/dot.h", "");
	put(dir, "engine/ir/bad_export.c", "#include \"../../exporters/dot.h\"\n");
	/* (b) engine-internal headers in a view and an exporter */
	put(dir, "views/bad_state.c", "#include \"engine.h\"\n#include \"state_impl.h\"\n");
	put(dir, "exporters/bad_groups.c", "#include \"groups_impl.h\"\n");

	assert_int_equal(check(dir, &out), 1);
	t_assert_contains(out, "engine/ir/bad_curses.c:2: #include <ncurses.h>");
	t_assert_contains(out, "engine/bad_app.c:2: #include \"tui.h\"");
	t_assert_contains(out, "(app/tui.h)");
	t_assert_contains(out, "engine/partition/bad_view.h:3: #include \"view_x.h\"");
	t_assert_contains(out, "engine/ir/bad_export.c:1: #include "
			"\"../../exporters/dot.h\"");
	t_assert_contains(out, "views/bad_state.c:2: #include \"state_impl.h\"");
	t_assert_contains(out, "exporters/bad_groups.c:1: #include \"groups_impl.h\"");
	t_assert_contains(out, "engine-internal header (engine/partition/groups_impl.h)");
	t_assert_contains(out, "6 include(s) break the layer rules");
	/* the allowed includes are not reported */
	assert_null(strstr(out, "app/tui.c"));
	assert_null(strstr(out, "aggregate.c"));
	assert_null(strstr(out, "dot.c:"));
	assert_null(strstr(out, "OK"));
	free(out);

	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(t_run(cmd, NULL), 0);
}

static void test_check_layers_repository(void **state)
{
	char *out;

	(void)state;
	if (check(t_repo_root(), &out) != 0)
		fail_msg("the repository breaks the layer rules:\n%s", out);
	t_assert_contains(out, "check-layers: OK");
	free(out);
}

FL_SUITE(layers,
	 cmocka_unit_test(test_check_layers_flags_each_rule),
	 cmocka_unit_test(test_check_layers_repository));
