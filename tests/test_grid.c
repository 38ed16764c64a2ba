/* The cell grid views render into (views/grid.h): text, clipping,
 * boxes, word wrapping, dumps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "grid.h"
#include "test_util.h"

static void grid_text_clips_and_escapes(void **state)
{
	fl_grid *g = fl_grid_new(8, 2);
	char row[64];

	(void)state;
	assert_int_equal(fl_grid_text(g, 5, 0, -1, "abcdef", FL_LOOK_OK), 3);
	assert_string_equal(fl_grid_row(g, 0, row, sizeof row), "     abc");
	assert_int_equal(fl_grid_cell(g, 6, 0)->look, FL_LOOK_OK);
	/* left of the grid, outside rows, control characters */
	fl_grid_text(g, -2, 1, -1, "xy\tz", FL_LOOK_NORMAL);
	assert_string_equal(fl_grid_row(g, 1, row, sizeof row), "?z");
	fl_grid_text(g, 0, 5, -1, "nothing", FL_LOOK_NORMAL);
	assert_null(fl_grid_at(g, 8, 0));
	fl_grid_free(g);
}

static void grid_box_and_dump(void **state)
{
	fl_grid *g = fl_grid_new(4, 3);
	char *text;

	(void)state;
	fl_grid_box(g, 0, 0, 4, 3, FL_LOOK_TITLE);
	text = fl_grid_dump(g);
	assert_string_equal(text, "\u250c\u2500\u2500\u2510\n"
			    "\u2502  \u2502\n"
			    "\u2514\u2500\u2500\u2518\n");
	assert_true(fl_grid_has_look(g, FL_LOOK_TITLE));
	free(text);
	assert_int_equal(fl_grid_resize(g, 1, 1), 0);
	fl_grid_box(g, 0, 0, 4, 3, FL_LOOK_TITLE);	/* clipped */
	assert_int_equal(fl_grid_cell(g, 0, 0)->ch, FL_CH_TL);
	fl_grid_free(g);
}

static void grid_wraps_words(void **state)
{
	fl_grid *g = fl_grid_new(10, 6);
	char row[64];

	(void)state;
	assert_int_equal(fl_grid_wrap(g, 0, 0, 10, 6, "one two three "
				      "fourfivesixseven\nend", FL_LOOK_NORMAL), 5);
	assert_string_equal(fl_grid_row(g, 0, row, sizeof row), "one two");
	assert_string_equal(fl_grid_row(g, 1, row, sizeof row), "three");
	assert_string_equal(fl_grid_row(g, 2, row, sizeof row), "fourfivesi");
	assert_string_equal(fl_grid_row(g, 3, row, sizeof row), "xseven");
	assert_string_equal(fl_grid_row(g, 4, row, sizeof row), "end");
	/* counting only; bounded rows; code points count as one column */
	assert_int_equal(fl_grid_wrap(NULL, 0, 0, 10, 6, "one two three", 0), 2);
	assert_int_equal(fl_grid_wrap(NULL, 0, 0, 10, 1, "one two three", 0), 1);
	assert_int_equal(fl_grid_wrap(NULL, 0, 0, 3, 9, "\u25c6\u25c6\u25c6", 0), 1);
	assert_int_equal(fl_grid_wrap(NULL, 0, 0, 4, 9, "", 0), 1);
	assert_int_equal(fl_grid_wrap(NULL, 0, 0, 0, 9, "abc", 0), 0);
	fl_grid_free(g);
}

FL_SUITE(grid,
	 cmocka_unit_test(grid_text_clips_and_escapes),
	 cmocka_unit_test(grid_box_and_dump),
	 cmocka_unit_test(grid_wraps_words));
