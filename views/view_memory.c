/* The memory view (DESIGN 7, 1.3 step 5): the tensors of the current
 * kernel with their shape, size, placement (global, tile-local,
 * register), per-tile footprint box and its bytes, the bytes kept out of
 * main memory and the reason for each placement; above them a bar of
 * the tile-local bytes one tile needs against the tile-local capacity.
 *
 * The engine has no capacity option yet: the bar uses layer 2's CPU
 * default (stitch.h, FL_STITCH_CPU_CAPACITY, a per-core L2 budget) and
 * says so on screen.
 *
 * Keys: Up/Down/j/k (or a click) select a tensor; Left/Right/h/l and
 * < > switch kernel (the explorer's selection:
 * FL_VIEW_ACT_SELECT_KERNEL). */
#include "view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stitch.h"

typedef struct memory {
	int kernel;		/* the kernel the cursor belongs to */
	int cursor;		/* tensor row */
	int top;
	int list_y, list_h;	/* where the rows were drawn */
} memory;

static void *memory_create(void)
{
	memory *m = calloc(1, sizeof *m);

	if (m)
		m->kernel = -1;
	return m;
}

static void memory_destroy(void *st)
{
	free(st);
}

/* "1.5 KiB"-style size into buf. */
static const char *human(int64_t b, char *buf, size_t n)
{
	if (b < 0)
		snprintf(buf, n, "?");
	else if (b < 1024)
		snprintf(buf, n, "%lld B", (long long)b);
	else if (b < 1024 * 1024)
		snprintf(buf, n, "%.1f KiB", (double)b / 1024);
	else if (b < 1024LL * 1024 * 1024)
		snprintf(buf, n, "%.1f MiB", (double)b / (1024.0 * 1024));
	else
		snprintf(buf, n, "%.1f GiB", (double)b / (1024.0 * 1024 * 1024));
	return buf;
}

static int64_t tensor_bytes(const fl_graph *g, int t)
{
	int64_t n = fl_shape_numel(&g->tensors[t].shape);

	return n < 0 || n > INT64_MAX / 4 ? -1 : 4 * n;
}

/* Bytes of one tile's footprint box of kt (f32 elements). */
static int64_t box_bytes(const fl_kernel_tensor *kt)
{
	int64_t b = 4;

	for (int i = 0; i < kt->rank; i++) {
		if (kt->box[i] <= 0 || b > INT64_MAX / 2 / kt->box[i])
			return -1;
		b *= kt->box[i];
	}
	return b;
}


/* name cut to its last w-1 bytes after an ellipsis when longer than w:
 * primitives opened from one compound op share their prefix
 * ("layernorm.mean", "layernorm.var"), so the end tells them apart. */
static const char *tail(const char *name, int w, char *buf, size_t n)
{
	size_t len = strlen(name);
	const char *t;

	if (w < 2 || len <= (size_t)w) {
		snprintf(buf, n, "%s", name);
		return buf;
	}
	t = name + len - (size_t)(w - 1);
	while (((unsigned char)*t & 0xC0) == 0x80)	/* UTF-8 continuation */
		t++;
	snprintf(buf, n, "\xe2\x80\xa6%s", t);	/* one column */
	return buf;
}

/* The tensor column takes what the other columns (69 cells) leave. */
static int name_w(const fl_grid *g)
{
	int w = g->w - 69;

	return w < 8 ? 8 : w > 32 ? 32 : w;
}

static fl_look place_look(fl_placement p)
{
	return p == FL_PLACE_GLOBAL ? FL_LOOK_NORMAL : FL_LOOK_OK;
}

/* The capacity line and bar: tile-local bytes per tile of kernel k. */
static int draw_capacity(const fl_kernel *k, fl_grid *g, int y)
{
	int64_t local = 0, kept = 0, cap = FL_STITCH_CPU_CAPACITY;
	char a[32], b[32], c[32];
	int bar_w = g->w - 2 < 40 ? g->w - 2 : 40, fill;
	fl_look look;

	for (int i = 0; i < k->n_tensors; i++) {
		const fl_kernel_tensor *kt = &k->tensors[i];

		if (kt->place == FL_PLACE_TILE_LOCAL && box_bytes(kt) > 0)
			local += box_bytes(kt);
		if (kt->bytes_kept > 0)
			kept += kt->bytes_kept;
	}
	look = local > cap ? FL_LOOK_BAD : FL_LOOK_OK;
	fl_grid_textf(g, 0, y++, -1, FL_LOOK_NORMAL,
		      "tile-local per tile: %s of %s (capacity: CPU L2/core "
		      "default)", human(local, a, sizeof a),
		      human(cap, b, sizeof b));
	if (bar_w < 1)
		return y;
	fill = (int)((double)local / (double)cap * bar_w + 0.5);
	if (local > 0 && fill == 0)
		fill = 1;
	fl_grid_put(g, 0, y, '[', FL_LOOK_DIM);
	fl_grid_fill(g, 1, y, bar_w, 1, FL_CH_LIGHT, FL_LOOK_DIM);
	fl_grid_fill(g, 1, y, fill < bar_w ? fill : bar_w, 1, FL_CH_BLOCK,
		     look);
	fl_grid_put(g, 1 + bar_w, y, ']', FL_LOOK_DIM);
	fl_grid_textf(g, bar_w + 3, y, -1, look, "%.0f%%%s  kept out of "
		      "main memory: %s", 100.0 * (double)local / (double)cap,
		      local > cap ? " OVER" : "", human(kept, c, sizeof c));
	return y + 1;
}

static void draw_tensor(const memory *m, const fl_view_ctx *c,
			const fl_program *p, const fl_kernel_tensor *kt,
			fl_grid *g, int y, int row)
{
	const fl_graph *gr = p->graph;
	char shape[64], size[32], box[96] = "-", bb[32] = "-", kept[32] = "-";
	char name[160];
	int pad;
	size_t used = 0;
	fl_look look = place_look(kt->place);

	fl_shape_format(&gr->tensors[kt->tensor].shape, shape, sizeof shape);
	human(tensor_bytes(gr, kt->tensor), size, sizeof size);
	if (kt->place != FL_PLACE_GLOBAL) {
		used = (size_t)snprintf(box, sizeof box, "[");
		for (int i = 0; i < kt->rank && used < sizeof box; i++)
			used += (size_t)snprintf(box + used, sizeof box - used,
						 "%s%lld", i ? "," : "",
						 (long long)kt->box[i]);
		if (used < sizeof box)
			snprintf(box + used, sizeof box - used, "]");
		human(box_bytes(kt), bb, sizeof bb);
	}
	if (kt->bytes_kept > 0)
		human(kt->bytes_kept, kept, sizeof kept);
	if (row == m->cursor && c->focused)
		look = FL_LOOK_CURSOR;
	fl_grid_fill(g, 0, y, g->w, 1, ' ', look);
	tail(gr->tensors[kt->tensor].name, name_w(g), name, sizeof name);
	/* printf pads by bytes: the ellipsis is 3 bytes but one column */
	pad = name_w(g) + (strncmp(name, "\xe2\x80\xa6", 3) ? 0 : 2);
	fl_grid_textf(g, 0, y, -1, look,
		      "%-*s %-13.13s %9s %-10s %-13.13s %9s %9s", pad, name,
		      shape, size,
		      fl_placement_name(kt->place), box, bb, kept);
}

/* The reason for the selected tensor's placement, wrapped at the
 * bottom. */
static void draw_why(const fl_program *p, const fl_kernel_tensor *kt,
		     fl_grid *g, int y)
{
	fl_grid_hline(g, 0, y++, g->w, FL_LOOK_DIM);
	fl_grid_textf(g, 0, y++, -1, FL_LOOK_TITLE, "%s: %s%s%s",
		      p->graph->tensors[kt->tensor].name,
		      fl_placement_name(kt->place),
		      kt->read ? ", read here" : "",
		      kt->written ? ", written here" : "");
	fl_grid_wrap(g, 0, y, g->w, g->h - y, kt->why, FL_LOOK_NORMAL);
}

static void memory_render(void *st, const fl_view_ctx *c, fl_grid *g)
{
	memory *m = st;
	const fl_program *p = fl_engine_program(c->s);
	int k = fl_view_current_kernel(c), y = 0, why_h;
	const fl_kernel *kn;
	char first[48], last[48];

	if (!p || k < 0) {
		char msg[160];

		snprintf(msg, sizeof msg, "no kernels yet: placement is decided "
			 "in layer 1, which has not run (step %d)", c->step);
		fl_view_empty(g, msg);
		return;
	}
	kn = &p->kernels[k];
	if (k != m->kernel) {
		m->kernel = k;
		m->cursor = m->top = 0;
	}
	if (m->cursor >= kn->n_tensors)
		m->cursor = kn->n_tensors > 0 ? kn->n_tensors - 1 : 0;
	snprintf(first, sizeof first, "%s", kn->n_ops > 0 ?
		 p->graph->ops[kn->ops[0]].name : "-");
	snprintf(last, sizeof last, "%s", kn->n_ops > 0 ?
		 p->graph->ops[kn->ops[kn->n_ops - 1]].name : "-");
	fl_grid_textf(g, 0, y++, -1, FL_LOOK_TITLE,
		      "memory  kernel %s (%d of %d): %d ops, %s..%s", kn->name,
		      k + 1, p->n_kernels, kn->n_ops, first, last);
	y = draw_capacity(kn, g, y);
	fl_grid_textf(g, 0, y++, -1, FL_LOOK_DIM,
		      "%-*s %-13s %9s %-10s %-13s %9s %9s", name_w(g), "tensor",
		      "shape", "bytes", "placement", "per-tile box",
		      "box bytes", "kept");
	why_h = g->h - y >= 8 ? 4 : 0;
	m->list_y = y;
	m->list_h = g->h - y - why_h;
	if (m->list_h < 1)
		m->list_h = 1;
	fl_view_scroll_to(m->cursor, m->list_h, &m->top);
	for (int r = 0; r < m->list_h && m->top + r < kn->n_tensors; r++)
		draw_tensor(m, c, p, &kn->tensors[m->top + r], g, y + r,
			    m->top + r);
	if (kn->n_tensors == 0)
		fl_grid_text(g, 0, y, -1, "this kernel touches no tensor",
			     FL_LOOK_DIM);
	else if (why_h > 0)
		draw_why(p, &kn->tensors[m->cursor], g, g->h - why_h);
}

static int memory_key(void *st, const fl_view_ctx *c, int key,
		      fl_view_action *act)
{
	memory *m = st;
	const fl_program *p = fl_engine_program(c->s);
	int k = fl_view_current_kernel(c), dir = 0;

	act->kind = FL_VIEW_ACT_NONE;
	switch (key) {
	case FL_KEY_UP: case 'k':
		if (m->cursor > 0)
			m->cursor--;
		return 1;
	case FL_KEY_DOWN: case 'j':
		if (p && k >= 0 && m->cursor + 1 < p->kernels[k].n_tensors)
			m->cursor++;
		return 1;
	case FL_KEY_MOUSE:
		if (p && k >= 0 && c->mouse_y >= m->list_y &&
		    c->mouse_y < m->list_y + m->list_h &&
		    m->top + c->mouse_y - m->list_y < p->kernels[k].n_tensors)
			m->cursor = m->top + c->mouse_y - m->list_y;
		return 1;
	case FL_KEY_LEFT: case '<': case 'h': dir = -1; break;
	case FL_KEY_RIGHT: case '>': case 'l': dir = 1; break;
	default:
		return 0;
	}
	if (!p || k < 0 || p->n_kernels == 0)
		return 1;
	act->kind = FL_VIEW_ACT_SELECT_KERNEL;
	act->arg = (k + dir + p->n_kernels) % p->n_kernels;
	return 1;
}

static const fl_view_key memory_keys[] = {
	{"Up Down j k", "select a tensor (or click it)"},
	{"Left Right < > h l", "previous / next kernel"},
	{NULL, NULL},
};

const fl_view_class fl_view_memory = {
	.name = "memory",
	.keys = memory_keys,
	.create = memory_create,
	.destroy = memory_destroy,
	.render = memory_render,
	.key = memory_key,
};
