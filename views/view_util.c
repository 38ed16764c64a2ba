/* Helpers shared by the views (see view.h). */
#include "view.h"

#include <string.h>

int fl_view_kernel_of_op(const fl_view_ctx *c, int op)
{
	const fl_program *p = fl_engine_program(c->s);

	if (!p || op < 0)
		return -1;
	for (int k = 0; k < p->n_kernels; k++)
		for (int i = 0; i < p->kernels[k].n_ops; i++)
			if (p->kernels[k].ops[i] == op)
				return k;
	return -1;
}

int fl_view_current_kernel(const fl_view_ctx *c)
{
	const fl_program *p = fl_engine_program(c->s);
	int k;

	if (!p || p->n_kernels == 0)
		return -1;
	if (c->sel->kernel >= 0 && c->sel->kernel < p->n_kernels)
		return c->sel->kernel;
	k = fl_view_kernel_of_op(c, c->sel->op);
	return k >= 0 ? k : 0;
}

void fl_view_empty(fl_grid *g, const char *text)
{
	int n = (int)strlen(text);
	int x = n < g->w ? (g->w - n) / 2 : 0;

	fl_grid_text(g, x, g->h / 2, g->w, text, FL_LOOK_DIM);
}

void fl_view_scroll_to(int cursor, int rows, int *top)
{
	if (rows < 1)
		rows = 1;
	if (cursor < *top)
		*top = cursor;
	if (cursor >= *top + rows)
		*top = cursor - rows + 1;
	if (*top < 0)
		*top = 0;
}
