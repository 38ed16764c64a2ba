/* The cell grid every view renders into (DESIGN 7): a rectangle of cells,
 * each one character (a Unicode code point) and a look (a colour role).  Views
 * never touch curses; app/tui.c draws a grid on the terminal, and tests
 * and benchmarks read grids as text.
 *
 * Everything that writes clips to the grid: writing outside is a no-op,
 * so views need not bounds-check. */
#ifndef FL_GRID_H
#define FL_GRID_H

#include <stddef.h>
#include <stdint.h>

/* Looks (colour roles): what a cell means, not what colour it is.  The terminal
 * layer maps looks to colours (or to bold/reverse under NO_COLOR). */
typedef enum fl_look {
	FL_LOOK_NORMAL,
	FL_LOOK_DIM,		/* secondary text, grid dots, inactive */
	FL_LOOK_TITLE,		/* pane titles, headers */
	FL_LOOK_STATUS,		/* the status line */
	FL_LOOK_CURSOR,		/* the row or node under the cursor */
	FL_LOOK_HIGHLIGHT,	/* ops of the current decision */
	FL_LOOK_MARK,		/* ops the user marked (why-not, override) */
	FL_LOOK_OK,		/* verified, accepted, fused */
	FL_LOOK_BAD,		/* failed, rejected, errors */
	FL_LOOK_WARN,		/* within noise, demoted, overlap */
	FL_LOOK_EDGE,		/* graph edges */
	FL_LOOK_GROUP0,		/* FL_LOOK_GROUP0 + (id % FL_LOOK_GROUPS):
				   micro-graph / kernel / tile colours */
	FL_LOOK_COUNT = FL_LOOK_GROUP0 + 8
} fl_look;

#define FL_LOOK_GROUPS 8

/* The look for colour class k (k >= 0; wraps around); FL_LOOK_DIM for
 * k < 0. */
fl_look fl_look_group(int k);

typedef struct fl_cell {
	uint32_t ch;		/* a code point; ' ' when empty */
	uint8_t look;		/* fl_look */
} fl_cell;

typedef struct fl_grid {
	int w, h;
	fl_cell *cells;		/* h rows of w cells */
} fl_grid;

/* A w x h grid of blanks (w, h >= 0); NULL when out of memory. */
fl_grid *fl_grid_new(int w, int h);
void fl_grid_free(fl_grid *g);
/* Resizes to w x h and blanks it; -1 when out of memory (g unchanged). */
int fl_grid_resize(fl_grid *g, int w, int h);
void fl_grid_clear(fl_grid *g);

/* The cell at (x, y), NULL outside. */
fl_cell *fl_grid_at(fl_grid *g, int x, int y);
const fl_cell *fl_grid_cell(const fl_grid *g, int x, int y);

void fl_grid_put(fl_grid *g, int x, int y, uint32_t ch, fl_look r);
/* Writes UTF-8 text from (x, y) on one row, clipped at the right edge
 * and at max_w columns (max_w < 0: no limit); control characters and
 * invalid bytes show as '?'.  Returns the columns written. */
int fl_grid_text(fl_grid *g, int x, int y, int max_w, const char *utf8,
		 fl_look r);
int fl_grid_textf(fl_grid *g, int x, int y, int max_w, fl_look r,
		  const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Writes UTF-8 text over up to max_rows rows from (x, y), w columns
 * wide, breaking lines at blanks (inside a word too long for a row) and
 * at newlines.  Returns the rows used, at least 1 when max_rows >= 1
 * and w >= 1 (an empty text is one empty row).  With g NULL it only
 * counts the rows. */
int fl_grid_wrap(fl_grid *g, int x, int y, int w, int max_rows,
		 const char *utf8, fl_look r);
/* Sets the look of a rectangle (the characters stay). */
void fl_grid_paint(fl_grid *g, int x, int y, int w, int h, fl_look r);
/* Fills a rectangle with ch. */
void fl_grid_fill(fl_grid *g, int x, int y, int w, int h, uint32_t ch,
		  fl_look r);
void fl_grid_hline(fl_grid *g, int x, int y, int w, fl_look r);
void fl_grid_vline(fl_grid *g, int x, int y, int h, fl_look r);
/* A box outline with box-drawing characters (w, h >= 2). */
void fl_grid_box(fl_grid *g, int x, int y, int w, int h, fl_look r);
/* Copies src into g with its top-left corner at (x, y), clipped. */
void fl_grid_blit(fl_grid *g, int x, int y, const fl_grid *src);

/* Row y as UTF-8 into buf (trailing blanks dropped); "" outside. */
const char *fl_grid_row(const fl_grid *g, int y, char *buf, size_t n);
/* The whole grid as UTF-8 text, one line per row (trailing blanks
 * dropped); malloc'd, NULL when out of memory. */
char *fl_grid_dump(const fl_grid *g);
/* True when some cell of the grid has look r / when text occurs on a
 * row whose cells under it all have look r (tests). */
int fl_grid_has_look(const fl_grid *g, fl_look r);
int fl_grid_find_look(const fl_grid *g, const char *text, fl_look r);

/* Box-drawing code points the views use; the terminal layer draws them
 * with ASCII stand-ins when the locale is not UTF-8. */
enum {
	FL_CH_HLINE = 0x2500, FL_CH_VLINE = 0x2502,
	FL_CH_TL = 0x250C, FL_CH_TR = 0x2510, FL_CH_BL = 0x2514,
	FL_CH_BR = 0x2518, FL_CH_CROSS = 0x253C,
	FL_CH_TEE_L = 0x251C, FL_CH_TEE_R = 0x2524,
	FL_CH_TEE_D = 0x252C, FL_CH_TEE_U = 0x2534,
	FL_CH_ARROW_D = 0x25BC, FL_CH_ARROW_U = 0x25B2,
	FL_CH_ARROW_R = 0x25B6, FL_CH_ARROW_L = 0x25C0,
	FL_CH_DOT = 0x00B7, FL_CH_BLOCK = 0x2588, FL_CH_LIGHT = 0x2591,
	FL_CH_BULLET = 0x25CF,
};

#endif
