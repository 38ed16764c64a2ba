/* The cell grid (see grid.h). */
#include "grid.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fl_look fl_look_group(int k)
{
	if (k < 0)
		return FL_LOOK_DIM;
	return (fl_look)(FL_LOOK_GROUP0 + k % FL_LOOK_GROUPS);
}

fl_grid *fl_grid_new(int w, int h)
{
	fl_grid *g = calloc(1, sizeof *g);

	if (!g)
		return NULL;
	if (fl_grid_resize(g, w, h) < 0) {
		free(g);
		return NULL;
	}
	return g;
}

void fl_grid_free(fl_grid *g)
{
	if (!g)
		return;
	free(g->cells);
	free(g);
}

int fl_grid_resize(fl_grid *g, int w, int h)
{
	fl_cell *cells;

	if (w < 0)
		w = 0;
	if (h < 0)
		h = 0;
	cells = malloc(((size_t)w * (size_t)h + 1) * sizeof *cells);
	if (!cells)
		return -1;
	free(g->cells);
	g->cells = cells;
	g->w = w;
	g->h = h;
	fl_grid_clear(g);
	return 0;
}

void fl_grid_clear(fl_grid *g)
{
	for (size_t i = 0; i < (size_t)g->w * (size_t)g->h; i++) {
		g->cells[i].ch = ' ';
		g->cells[i].look = FL_LOOK_NORMAL;
	}
}

fl_cell *fl_grid_at(fl_grid *g, int x, int y)
{
	if (x < 0 || y < 0 || x >= g->w || y >= g->h)
		return NULL;
	return &g->cells[(size_t)y * (size_t)g->w + (size_t)x];
}

const fl_cell *fl_grid_cell(const fl_grid *g, int x, int y)
{
	if (x < 0 || y < 0 || x >= g->w || y >= g->h)
		return NULL;
	return &g->cells[(size_t)y * (size_t)g->w + (size_t)x];
}

void fl_grid_put(fl_grid *g, int x, int y, uint32_t ch, fl_look r)
{
	fl_cell *c = fl_grid_at(g, x, y);

	if (c) {
		c->ch = ch;
		c->look = (uint8_t)r;
	}
}

/* Decodes one UTF-8 code point at *s and advances; '?' for bytes that
 * are not valid UTF-8, for control characters and for code points a
 * terminal cell cannot show as one column (we do not measure widths, so
 * anything outside the BMP is '?' too). */
static uint32_t next_code_point(const unsigned char **s)
{
	const unsigned char *p = *s;
	uint32_t cp;
	int more;

	if (p[0] < 0x80) {
		*s = p + 1;
		return p[0] < 0x20 || p[0] == 0x7f ? '?' : p[0];
	}
	if ((p[0] & 0xe0) == 0xc0) {
		cp = p[0] & 0x1f;
		more = 1;
	} else if ((p[0] & 0xf0) == 0xe0) {
		cp = p[0] & 0x0f;
		more = 2;
	} else {
		*s = p + 1;
		return '?';
	}
	for (int i = 1; i <= more; i++) {
		if ((p[i] & 0xc0) != 0x80) {
			*s = p + i;
			return '?';
		}
		cp = cp << 6 | (p[i] & 0x3f);
	}
	*s = p + 1 + more;
	if (cp < 0xa0 || (cp >= 0xd800 && cp < 0xe000))
		return '?';
	return cp;
}

int fl_grid_text(fl_grid *g, int x, int y, int max_w, const char *utf8,
		 fl_look r)
{
	const unsigned char *s = (const unsigned char *)utf8;
	int n = 0;

	if (!s || y < 0 || y >= g->h)
		return 0;
	while (*s && x + n < g->w && (max_w < 0 || n < max_w)) {
		uint32_t cp = next_code_point(&s);

		if (x + n >= 0)
			fl_grid_put(g, x + n, y, cp, r);
		n++;
	}
	return n;
}

int fl_grid_textf(fl_grid *g, int x, int y, int max_w, fl_look r,
		  const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return fl_grid_text(g, x, y, max_w, buf, r);
}

/* Bytes of the longest prefix of s (up to a newline) that fits w
 * columns, cut after the last blank when the text goes on; *skip: the
 * bytes after it to drop (the blank or newline it breaks at). */
static size_t wrap_line(const char *s, int w, size_t *skip)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t end = 0, blank = 0;
	int cols = 0;

	*skip = 0;
	while (p[end] && p[end] != '\n' && cols < w) {
		const unsigned char *q = p + end;

		next_code_point(&q);
		if (p[end] == ' ')
			blank = end;
		end = (size_t)(q - p);
		cols++;
	}
	if (p[end] == '\n' || !p[end]) {
		*skip = p[end] == '\n';
		return end;
	}
	if (p[end] == ' ') {
		*skip = 1;
		return end;
	}
	if (blank > 0) {
		*skip = 1;
		return blank;
	}
	return end;
}

int fl_grid_wrap(fl_grid *g, int x, int y, int w, int max_rows,
		 const char *utf8, fl_look r)
{
	const char *p = utf8 ? utf8 : "";
	int rows = 0;

	if (w < 1)
		return 0;
	while (rows < max_rows && (*p || rows == 0)) {
		size_t skip, n = wrap_line(p, w, &skip);

		if (g)
			fl_grid_textf(g, x, y + rows, w, r, "%.*s", (int)n, p);
		rows++;
		p += n + skip;
	}
	return rows;
}

void fl_grid_paint(fl_grid *g, int x, int y, int w, int h, fl_look r)
{
	for (int j = y; j < y + h; j++)
		for (int i = x; i < x + w; i++) {
			fl_cell *c = fl_grid_at(g, i, j);

			if (c)
				c->look = (uint8_t)r;
		}
}

void fl_grid_fill(fl_grid *g, int x, int y, int w, int h, uint32_t ch,
		  fl_look r)
{
	for (int j = y; j < y + h; j++)
		for (int i = x; i < x + w; i++)
			fl_grid_put(g, i, j, ch, r);
}

void fl_grid_hline(fl_grid *g, int x, int y, int w, fl_look r)
{
	fl_grid_fill(g, x, y, w, 1, FL_CH_HLINE, r);
}

void fl_grid_vline(fl_grid *g, int x, int y, int h, fl_look r)
{
	fl_grid_fill(g, x, y, 1, h, FL_CH_VLINE, r);
}

void fl_grid_box(fl_grid *g, int x, int y, int w, int h, fl_look r)
{
	if (w < 2 || h < 2)
		return;
	fl_grid_hline(g, x + 1, y, w - 2, r);
	fl_grid_hline(g, x + 1, y + h - 1, w - 2, r);
	fl_grid_vline(g, x, y + 1, h - 2, r);
	fl_grid_vline(g, x + w - 1, y + 1, h - 2, r);
	fl_grid_put(g, x, y, FL_CH_TL, r);
	fl_grid_put(g, x + w - 1, y, FL_CH_TR, r);
	fl_grid_put(g, x, y + h - 1, FL_CH_BL, r);
	fl_grid_put(g, x + w - 1, y + h - 1, FL_CH_BR, r);
}

void fl_grid_blit(fl_grid *g, int x, int y, const fl_grid *src)
{
	for (int j = 0; j < src->h; j++)
		for (int i = 0; i < src->w; i++) {
			const fl_cell *c = fl_grid_cell(src, i, j);
			fl_cell *d = fl_grid_at(g, x + i, y + j);

			if (d)
				*d = *c;
		}
}

/* Appends cp as UTF-8 to buf[*len..n); false when it does not fit. */
static int put_utf8(char *buf, size_t n, size_t *len, uint32_t cp)
{
	unsigned char b[4];
	size_t k;

	if (cp < 0x80) {
		b[0] = (unsigned char)cp;
		k = 1;
	} else if (cp < 0x800) {
		b[0] = (unsigned char)(0xc0 | cp >> 6);
		b[1] = (unsigned char)(0x80 | (cp & 0x3f));
		k = 2;
	} else {
		b[0] = (unsigned char)(0xe0 | cp >> 12);
		b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (unsigned char)(0x80 | (cp & 0x3f));
		k = 3;
	}
	if (*len + k >= n)
		return 0;
	memcpy(buf + *len, b, k);
	*len += k;
	return 1;
}

/* Columns of row y up to its last non-blank cell. */
static int row_used(const fl_grid *g, int y)
{
	int w = g->w;

	while (w > 0 && fl_grid_cell(g, w - 1, y)->ch == ' ')
		w--;
	return w;
}

const char *fl_grid_row(const fl_grid *g, int y, char *buf, size_t n)
{
	size_t len = 0;

	if (n == 0)
		return buf;
	buf[0] = '\0';
	if (y < 0 || y >= g->h)
		return buf;
	for (int x = 0, w = row_used(g, y); x < w; x++)
		if (!put_utf8(buf, n, &len, fl_grid_cell(g, x, y)->ch))
			break;
	buf[len] = '\0';
	return buf;
}

char *fl_grid_dump(const fl_grid *g)
{
	size_t n = (size_t)g->h * ((size_t)g->w * 3 + 1) + 1, len = 0;
	char *out = malloc(n);

	if (!out)
		return NULL;
	for (int y = 0; y < g->h; y++) {
		fl_grid_row(g, y, out + len, n - len);
		len += strlen(out + len);
		out[len++] = '\n';
	}
	out[len] = '\0';
	return out;
}

int fl_grid_has_look(const fl_grid *g, fl_look r)
{
	for (size_t i = 0; i < (size_t)g->w * (size_t)g->h; i++)
		if (g->cells[i].look == r)
			return 1;
	return 0;
}

int fl_grid_find_look(const fl_grid *g, const char *text, fl_look r)
{
	size_t n = strlen(text);

	for (int y = 0; y < g->h; y++)
		for (int x = 0; x + (int)n <= g->w; x++) {
			size_t k = 0;

			while (k < n && g->cells[(size_t)y * (size_t)g->w + (size_t)x + k].ch
				       == (unsigned char)text[k] &&
			       g->cells[(size_t)y * (size_t)g->w + (size_t)x + k].look
				       == r)
				k++;
			if (k == n)
				return 1;
		}
	return 0;
}
