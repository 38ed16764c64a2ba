/* The code view (DESIGN 7): the generated code of the current kernel
 * (fl_engine_kernel_source: C, or CUDA under --target cuda, named in the
 * title), one numbered line per row, scrolled
 * vertically (Up/Down/j/k, PgUp/PgDn, Home/End) and horizontally
 * (Left/Right/h/l: long lines are clipped, never wrapped, so a line
 * number always names one row).
 *
 * Reads the session only.  Its state is the scroll position and an index
 * of line starts, rebuilt at every render: the text may have been freed
 * and another one made at the same address (another step, another
 * kernel), and one pass over a kernel's few kilobytes costs microseconds,
 * far less than keeping the key of a cache right. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"

#define HSTEP 8		/* columns per Left/Right */

typedef struct code_state {
	const char *src;	/* the text indexed at the last render */
	int n_lines;
	int *starts;		/* byte offset of each line */
	int top;		/* first line shown */
	int left;		/* first column shown */
	int rows;		/* text rows at the last render (for PgDn) */
} code_state;

static void *code_create(void)
{
	code_state *st = calloc(1, sizeof *st);

	if (st)
		st->rows = 1;
	return st;
}

static void code_destroy(void *p)
{
	code_state *st = p;

	if (!st)
		return;
	free(st->starts);
	free(st);
}

/* Indexes the lines of src (a trailing newline does not start a line);
 * -1 when out of memory (then the view shows nothing). */
static int code_index(code_state *st, const char *src)
{
	int n = 0, cap = 64, *starts = malloc((size_t)cap * sizeof *starts);

	if (!starts)
		return -1;
	for (const char *p = src; *p; ) {
		const char *nl = strchr(p, '\n');

		if (n == cap) {
			int *grown = realloc(starts, 2 * (size_t)cap *
						     sizeof *starts);

			if (!grown) {
				free(starts);
				return -1;
			}
			starts = grown;
			cap *= 2;
		}
		starts[n++] = (int)(p - src);
		if (!nl)
			break;
		p = nl + 1;
	}
	free(st->starts);
	st->starts = starts;
	st->n_lines = n;
	st->src = src;
	return 0;
}

/* The source the view shows, or NULL with the reason in why. */
static const char *code_source(const fl_view_ctx *c, int *kernel, char *why,
			       size_t n)
{
	const char *src;

	*kernel = fl_view_current_kernel(c);
	if (*kernel < 0) {
		snprintf(why, n, "no kernels yet: layer 1 has not run "
			 "(step %d/%d)", c->step, c->total);
		return NULL;
	}
	src = fl_engine_kernel_source(c->s, *kernel);
	if (!src)
		snprintf(why, n, "no code yet for kernel %d: codegen has not "
			 "generated it (step %d/%d)", *kernel, c->step,
			 c->total);
	return src;
}

/* Copies line i (without its newline) into buf, starting at column
 * `from`; tabs become single spaces (the generator uses none). */
static void code_line(const code_state *st, int i, int from, char *buf,
		      size_t n)
{
	const char *p = st->src + st->starts[i];
	size_t len = strcspn(p, "\n"), j = 0;

	for (size_t k = (size_t)from; k < len && j + 1 < n; k++)
		buf[j++] = p[k] == '\t' ? ' ' : p[k];
	buf[j] = '\0';
}

static void code_clamp(code_state *st)
{
	int last = st->n_lines - st->rows;

	if (st->top > last)
		st->top = last;
	if (st->top < 0)
		st->top = 0;
	if (st->left < 0)
		st->left = 0;
}

static void code_render(void *p, const fl_view_ctx *c, fl_grid *g)
{
	code_state *st = p;
	char why[160], buf[1024];
	const char *src;
	int kernel, numw;

	src = code_source(c, &kernel, why, sizeof why);
	if (!src) {
		fl_view_empty(g, why);
		return;
	}
	if (code_index(st, src) < 0) {
		fl_view_empty(g, "out of memory");
		return;
	}
	st->rows = g->h > 1 ? g->h - 1 : 1;
	code_clamp(st);
	fl_grid_textf(g, 0, 0, g->w, FL_LOOK_TITLE,
		      "%scode of kernel %d: lines %d-%d of %d%s",
		      fl_engine_options(c->s)->run.target == FL_TARGET_CUDA
			      ? "CUDA " : "", kernel,
		      st->n_lines ? st->top + 1 : 0,
		      st->top + st->rows < st->n_lines ? st->top + st->rows
							: st->n_lines,
		      st->n_lines, st->left ? "  (scrolled right)" : "");
	numw = snprintf(NULL, 0, "%d", st->n_lines);
	for (int r = 0; r < st->rows && st->top + r < st->n_lines; r++) {
		int i = st->top + r;

		fl_grid_textf(g, 0, r + 1, g->w, FL_LOOK_DIM, "%*d ", numw,
			      i + 1);
		code_line(st, i, st->left, buf, sizeof buf);
		fl_grid_text(g, numw + 1, r + 1, -1, buf, FL_LOOK_NORMAL);
	}
}

static int code_key(void *p, const fl_view_ctx *c, int key,
		    fl_view_action *act)
{
	code_state *st = p;

	(void)c;
	act->kind = FL_VIEW_ACT_NONE;
	switch (key) {
	case FL_KEY_UP: case 'k': st->top--; break;
	case FL_KEY_DOWN: case 'j': st->top++; break;
	case FL_KEY_PGUP: st->top -= st->rows; break;
	case FL_KEY_PGDN: st->top += st->rows; break;
	case FL_KEY_HOME: st->top = 0; st->left = 0; break;
	case FL_KEY_END: st->top = st->n_lines; break;
	case FL_KEY_LEFT: case 'h': st->left -= HSTEP; break;
	case FL_KEY_RIGHT: case 'l': st->left += HSTEP; break;
	default: return 0;
	}
	code_clamp(st);
	return 1;
}

static const fl_view_key code_keys[] = {
	{"Up Down j k", "scroll a line"},
	{"PgUp PgDn", "scroll a page"},
	{"Home End", "first / last line"},
	{"Left Right h l", "scroll long lines sideways"},
	{NULL, NULL},
};

const fl_view_class fl_view_code = {
	.name = "code",
	.keys = code_keys,
	.create = code_create,
	.destroy = code_destroy,
	.render = code_render,
	.key = code_key,
};
