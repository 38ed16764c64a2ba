/* The interactive explorer's main loop: one place that owns input, the
 * screen size and redraws.  Views format rows; this file places them.
 * Keys come from one table, from which the help screen is generated. */
#include "tui.h"

#include <curses.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "view_ops.h"

#define MIN_COLS 40
#define MIN_LINES 10

typedef enum tui_action {
	ACT_NONE, ACT_UP, ACT_DOWN, ACT_PAGE_UP, ACT_PAGE_DOWN, ACT_HOME,
	ACT_END, ACT_HELP, ACT_QUIT,
} tui_action;

typedef struct key_binding {
	int key;
	tui_action action;
	const char *label;	/* shown in help; NULL: an alias */
	const char *help;
} key_binding;

static const key_binding keymap[] = {
	{KEY_DOWN, ACT_DOWN, "Down j", "next op"},
	{'j', ACT_DOWN, NULL, NULL},
	{KEY_UP, ACT_UP, "Up k", "previous op"},
	{'k', ACT_UP, NULL, NULL},
	{KEY_NPAGE, ACT_PAGE_DOWN, "PgDn", "page down"},
	{KEY_PPAGE, ACT_PAGE_UP, "PgUp", "page up"},
	{KEY_HOME, ACT_HOME, "Home g", "first op"},
	{'g', ACT_HOME, NULL, NULL},
	{KEY_END, ACT_END, "End G", "last op"},
	{'G', ACT_END, NULL, NULL},
	{'?', ACT_HELP, "?", "this help"},
	{'q', ACT_QUIT, "q", "quit"},
};

typedef struct tui {
	const fl_graph *g;
	int sel, top;
	bool help;
	bool color;
} tui;

static tui_action lookup_key(int ch)
{
	for (size_t i = 0; i < sizeof keymap / sizeof keymap[0]; i++)
		if (keymap[i].key == ch)
			return keymap[i].action;
	return ACT_NONE;
}

static void draw_help(void)
{
	int y = 2;

	mvprintw(0, 0, "fuselab keys (any key closes this help)");
	for (size_t i = 0; i < sizeof keymap / sizeof keymap[0]; i++)
		if (keymap[i].label && y < LINES)
			mvprintw(y++, 2, "%-10s %s", keymap[i].label,
				 keymap[i].help);
}

static void draw_list(tui *t, int rows)
{
	char buf[512];

	if (t->sel < t->top)
		t->top = t->sel;
	if (t->sel >= t->top + rows)
		t->top = t->sel - rows + 1;
	attron(A_BOLD);
	mvaddnstr(1, 0, fl_view_ops_header(), COLS);
	attroff(A_BOLD);
	for (int r = 0; r < rows && t->top + r < t->g->n_ops; r++) {
		int i = t->top + r;

		fl_view_ops_row(t->g, i, buf, sizeof buf);
		if (i == t->sel)
			attron(A_REVERSE);
		mvaddnstr(2 + r, 0, buf, COLS);
		if (i == t->sel)
			attroff(A_REVERSE);
	}
}

static void draw_details(const tui *t, int y0)
{
	char lines[12][160];
	int n = fl_view_ops_details(t->g, t->sel, lines, 12);

	mvhline(y0, 0, '-', COLS);	/* plain: any terminal */
	for (int i = 0; i < n && y0 + 1 + i < LINES - 1; i++)
		mvaddnstr(y0 + 1 + i, 0, lines[i], COLS);
}

static void draw(tui *t)
{
	int detail_rows = LINES >= 20 ? 8 : 0;
	int list_rows = LINES - 3 - detail_rows;

	erase();
	if (COLS < MIN_COLS || LINES < MIN_LINES) {
		mvprintw(0, 0, "terminal too small (need %dx%d)", MIN_COLS,
			 MIN_LINES);
		refresh();
		return;
	}
	if (t->help) {
		draw_help();
		refresh();
		return;
	}
	attron(A_BOLD);
	mvprintw(0, 0, "fuselab %s  %s  (%d ops)", FL_VERSION, t->g->name,
		 t->g->n_ops);
	attroff(A_BOLD);
	draw_list(t, list_rows);
	if (detail_rows)
		draw_details(t, LINES - 1 - detail_rows);
	mvaddnstr(LINES - 1, 0, "j/k move  g/G first/last  ? help  q quit",
		  COLS);
	refresh();
}

/* Applies an action; returns false to quit. */
static bool act(tui *t, tui_action a)
{
	int page = LINES > 12 ? LINES - 12 : 1;

	switch (a) {
	case ACT_UP: t->sel--; break;
	case ACT_DOWN: t->sel++; break;
	case ACT_PAGE_UP: t->sel -= page; break;
	case ACT_PAGE_DOWN: t->sel += page; break;
	case ACT_HOME: t->sel = 0; break;
	case ACT_END: t->sel = t->g->n_ops - 1; break;
	case ACT_HELP: t->help = true; break;
	case ACT_QUIT: return false;
	case ACT_NONE: break;
	}
	if (t->sel < 0)
		t->sel = 0;
	if (t->sel >= t->g->n_ops)
		t->sel = t->g->n_ops - 1;
	return true;
}

static void loop(tui *t)
{
	for (;;) {
		int ch;

		draw(t);
		ch = getch();
		if (ch == ERR || ch == KEY_RESIZE)
			continue;
		if (t->help) {
			t->help = false;
			continue;
		}
		if (!act(t, lookup_key(ch)))
			break;
	}
}

int fl_tui_main(const fl_options *o)
{
	fl_error err = {""};
	fl_graph *g;
	tui t;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr, "fuselab: the interactive explorer needs a "
			"terminal; use --batch or --check for scripts\n");
		return 2;
	}
	if (fl_app_check_rules(o) < 0)
		return 2;
	g = fl_app_load(o, &err);
	if (!g) {
		fprintf(stderr, "fuselab: %s\n", fl_safe_name(err.msg));
		return 2;
	}
	memset(&t, 0, sizeof t);
	t.g = g;
	initscr();
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	timeout(500);
	loop(&t);
	endwin();
	fl_graph_free(g);
	return 0;
}
