/* The explorer on a terminal: one small layer that turns curses input
 * into key codes (views/keys.h) and draws the explorer's cell grid.
 * Everything else (what a key does, what the screen shows) is the
 * explorer's (explorer.h), so tests drive it without a terminal.
 *
 * Colours follow the terminal's own (use_default_colors) and NO_COLOR
 * (https://no-color.org): without colour, looks become bold, reverse,
 * underline and dim.  Box-drawing characters fall back to ASCII when the
 * locale is not UTF-8.  SIGINT and SIGTERM end the loop like `q` does,
 * so the terminal is always restored. */
#include "tui.h"

#include <curses.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "onnx_import.h"
#include "explorer.h"
#include "keys.h"
#include "signals.h"
#include "overrides.h"
#include "tour.h"

typedef struct tui {
	bool color, utf8;
	attr_t attr[FL_LOOK_COUNT];
	short pair[FL_LOOK_COUNT];
} tui;

static void setup_looks(tui *t)
{
	static const short group_fg[FL_LOOK_GROUPS] = {
		COLOR_CYAN, COLOR_GREEN, COLOR_MAGENTA, COLOR_YELLOW,
		COLOR_BLUE, COLOR_RED, COLOR_WHITE, COLOR_CYAN};
	const char *no_color = getenv("NO_COLOR");

	memset(t->attr, 0, sizeof t->attr);
	memset(t->pair, 0, sizeof t->pair);
	t->attr[FL_LOOK_DIM] = A_DIM;
	t->attr[FL_LOOK_TITLE] = A_BOLD;
	t->attr[FL_LOOK_STATUS] = A_REVERSE;
	t->attr[FL_LOOK_CURSOR] = A_REVERSE | A_BOLD;
	t->attr[FL_LOOK_HIGHLIGHT] = A_BOLD | A_UNDERLINE;
	t->attr[FL_LOOK_MARK] = A_BOLD | A_UNDERLINE;
	t->attr[FL_LOOK_BAD] = A_BOLD;
	t->attr[FL_LOOK_WARN] = A_UNDERLINE;
	t->color = has_colors() && !(no_color && no_color[0]);
	if (!t->color)
		return;
	start_color();
	use_default_colors();
	init_pair(1, COLOR_YELLOW, -1);		/* highlight */
	init_pair(2, COLOR_MAGENTA, -1);	/* mark */
	init_pair(3, COLOR_GREEN, -1);		/* ok */
	init_pair(4, COLOR_RED, -1);		/* bad */
	init_pair(5, COLOR_YELLOW, -1);		/* warn */
	init_pair(6, COLOR_BLUE, -1);		/* edge */
	t->pair[FL_LOOK_HIGHLIGHT] = 1;
	t->pair[FL_LOOK_MARK] = 2;
	t->pair[FL_LOOK_OK] = 3;
	t->pair[FL_LOOK_BAD] = 4;
	t->pair[FL_LOOK_WARN] = 5;
	t->pair[FL_LOOK_EDGE] = 6;
	t->attr[FL_LOOK_WARN] = 0;
	for (int k = 0; k < FL_LOOK_GROUPS; k++) {
		init_pair((short)(10 + k), group_fg[k], -1);
		t->pair[FL_LOOK_GROUP0 + k] = (short)(10 + k);
	}
}

/* An ASCII stand-in for a box-drawing or symbol code point. */
static wchar_t ascii_of(uint32_t ch)
{
	switch (ch) {
	case FL_CH_HLINE: return '-';
	case FL_CH_VLINE: return '|';
	case FL_CH_ARROW_D: return 'v';
	case FL_CH_ARROW_U: return '^';
	case FL_CH_ARROW_R: return '>';
	case FL_CH_ARROW_L: return '<';
	case FL_CH_DOT: return '.';
	case FL_CH_BLOCK: return '#';
	case FL_CH_LIGHT: return ':';
	case FL_CH_BULLET: return 'o';
	}
	if (ch >= 0x2500 && ch < 0x2580)
		return '+';
	return ch < 0x80 ? (wchar_t)ch : '?';
}

static void draw(tui *t, const fl_grid *g)
{
	for (int y = 0; y < g->h; y++)
		for (int x = 0; x < g->w; x++) {
			const fl_cell *c = fl_grid_cell(g, x, y);
			wchar_t wc[2] = {t->utf8 ? (wchar_t)c->ch : ascii_of(c->ch), 0};
			cchar_t cc;

			/* The last cell of the screen cannot be written
			 * without scrolling on some terminals. */
			if (y == g->h - 1 && x == g->w - 1)
				continue;
			setcchar(&cc, wc, t->attr[c->look], t->pair[c->look],
				 NULL);
			mvadd_wch(y, x, &cc);
		}
	refresh();
}

/* A curses key as a views/keys.h code; -1 to ignore. */
static int key_code(int r, wint_t ch)
{
	if (r == OK) {
		if (ch == '\r' || ch == '\n')
			return FL_KEY_ENTER;
		if (ch == 8)
			return FL_KEY_BACKSPACE;
		return (int)ch;
	}
	switch (ch) {
	case KEY_UP: return FL_KEY_UP;
	case KEY_DOWN: return FL_KEY_DOWN;
	case KEY_LEFT: return FL_KEY_LEFT;
	case KEY_RIGHT: return FL_KEY_RIGHT;
	case KEY_PPAGE: return FL_KEY_PGUP;
	case KEY_NPAGE: return FL_KEY_PGDN;
	case KEY_HOME: return FL_KEY_HOME;
	case KEY_END: return FL_KEY_END;
	case KEY_BTAB: return FL_KEY_BTAB;
	case KEY_ENTER: return FL_KEY_ENTER;
	case KEY_BACKSPACE: case KEY_DC: return FL_KEY_BACKSPACE;
	case KEY_RESIZE: return FL_KEY_RESIZE;
	case KEY_MOUSE: return FL_KEY_MOUSE;
	}
	return -1;
}

/* While curses owns the screen nothing else may write to it: libraries'
 * messages on stderr (isl, Graphviz) go to /dev/null until endwin.
 * Returns the saved stderr (-1 when it could not be saved). */
static int silence_stderr(void)
{
	int saved = dup(STDERR_FILENO);
	int null = open("/dev/null", O_WRONLY);

	if (saved >= 0 && null >= 0)
		dup2(null, STDERR_FILENO);
	if (null >= 0)
		close(null);
	return saved;
}

static void restore_stderr(int saved)
{
	if (saved < 0)
		return;
	dup2(saved, STDERR_FILENO);
	close(saved);
}

static void loop(tui *t, fl_explorer *x)
{
	fl_grid *g = fl_grid_new(COLS, LINES);
	bool dirty = true;

	while (g && !fl_app_signal()) {
		wint_t ch;
		int r, key;

		if (dirty) {
			if (g->w != COLS || g->h != LINES)
				fl_grid_resize(g, COLS, LINES);
			fl_explorer_render(x, g);
			draw(t, g);
		}
		r = get_wch(&ch);
		dirty = fl_explorer_poll(x);
		if (r == ERR)
			continue;
		key = key_code(r, ch);
		if (key == FL_KEY_MOUSE) {
			MEVENT m;

			if (getmouse(&m) == OK && (m.bstate & (BUTTON1_CLICKED |
						BUTTON1_PRESSED | BUTTON1_RELEASED)))
				fl_explorer_click(x, m.x, m.y);
			dirty = true;
			continue;
		}
		if (key < 0)
			continue;
		if (key == FL_KEY_RESIZE)
			clear();
		if (!fl_explorer_key(x, key))
			break;
		dirty = true;
	}
	fl_grid_free(g);
}

/* The file's name without its folders, for the status line. */
static const char *file_label(const fl_options *o)
{
	const char *slash;

	if (!o->file)
		return "built-in sample";
	slash = strrchr(o->file, '/');
	return slash ? slash + 1 : o->file;
}

/* Opens the explorer on the file with its tour; the --overrides file's
 * pairs go to the explorer's list (where they can be listed and
 * removed), not into the options.  NULL with the message printed. */
static fl_explorer *open_explorer(const fl_options *o)
{
	fl_options plain = *o;
	fl_engine_opts eo;
	fl_error err = {""};
	fl_graph *g = fl_app_load(o, &err);
	fl_tour *tour = NULL;
	fl_overrides *list = NULL;
	fl_explorer *x = NULL;

	plain.overrides_file = NULL;
	if (!g)
		goto out;
	if (fl_app_check_overrides(o, g) < 0 || fl_app_engine_opts(&plain, &eo) < 0)
		goto quiet;	/* printed */
	if (o->overrides_file && fl_overrides_load(o->overrides_file, &list, &err) < 0)
		goto out;
	if (o->file && !fl_onnx_is_model_path(o->file) &&
	    !(tour = fl_tour_load_file(o->file, &err)))
		goto out;
	x = fl_explorer_open(g, &eo, file_label(o), tour, list, &err);
	list = NULL;
	tour = NULL;
out:
	if (!x)
		fprintf(stderr, "fuselab: %s\n", fl_safe_name(err.msg));
quiet:
	fl_overrides_free(list);
	fl_tour_free(tour);
	fl_graph_free(g);
	return x;
}

int fl_tui_main(const fl_options *o)
{
	fl_explorer *x;
	int quiet_stderr;
	tui t;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr, "fuselab: the interactive explorer needs a "
			"terminal; use --batch (with --stage, --events, --run) "
			"or --check for scripts\n");
		return 2;
	}
	if (fl_app_check_rules(o) < 0)
		return 2;
	x = open_explorer(o);
	if (!x)
		return 2;
	fl_app_signals_install();
	quiet_stderr = silence_stderr();
	setlocale(LC_ALL, "");
	t.utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
	set_escdelay(25);
	initscr();
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	mousemask(BUTTON1_CLICKED | BUTTON1_PRESSED | BUTTON1_RELEASED, NULL);
	mouseinterval(0);
	timeout(100);
	setup_looks(&t);
	loop(&t, x);
	endwin();
	restore_stderr(quiet_stderr);
	fl_explorer_close(x);
	return fl_app_signal() ? 128 + fl_app_signal() : 0;
}
