/* The memory view (DESIGN 7, 1.3 step 5, 1.4): the tensors of the
 * current kernel with their shape, size, placement (global, tile-local,
 * register), per-tile footprint box and its bytes, the bytes kept out of
 * main memory and the reason for each placement; above them a bar of
 * the tile-local bytes one tile needs against layer 1's budget for them
 * (--local-budget, else the per-core L2 of the session's machine).
 *
 * Once layer 2 stitched the kernel (its ops come from several layer-1
 * micro-graphs), a section says which micro-graphs it stitched and lists
 * the tensors on the stitched edges: producer and consumer micro-graph,
 * tile-local or global, the bytes one tile needs against layer 2's
 * capacity (--stitch-capacity, else the per-core L2) and the reason of
 * the `placed` decision.  A kernel layer 3 made of branches names them.
 *
 * Keys: Up/Down/j/k (or a click) select a tensor; Left/Right/h/l and
 * < > switch kernel (the explorer's selection:
 * FL_VIEW_ACT_SELECT_KERNEL). */
#include "view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"
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
	int64_t size = fl_dtype_size(g->tensors[t].dtype);

	return n < 0 || n > INT64_MAX / size ? -1 : size * n;
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

/* Layer 1's budget for the tile-local buffers of one tile. */
static int64_t local_budget(const fl_view_ctx *c)
{
	const fl_engine_opts *o = fl_engine_options(c->s);
	const fl_machine *m = o->layer1.machine ? o->layer1.machine
						: fl_machine_get();

	if (o->layer1.local_budget > 0)
		return o->layer1.local_budget;
	return m->l2 > 0 ? m->l2 : FL_STITCH_CPU_CAPACITY;
}

/* The capacity line and bar: tile-local bytes per tile of kernel k. */
static int draw_capacity(const fl_view_ctx *c, const fl_kernel *k,
			 fl_grid *g, int y)
{
	int64_t local = 0, kept = 0, cap = local_budget(c);
	char a[32], b[32], d[32];
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
		      "tile-local per tile: %s of %s (capacity: %s)",
		      human(local, a, sizeof a), human(cap, b, sizeof b),
		      fl_engine_options(c->s)->layer1.local_budget > 0 ?
		      "--local-budget" : "per-core L2");
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
		      local > cap ? " OVER" : "", human(kept, d, sizeof d));
	return y + 1;
}

/* ---- what layers 2 and 3 made of the kernel ------------------------------ */

/* Appends "G<id> (first..last)" for micro-graph gid to buf. */
static void put_group(const fl_graph *gr, const fl_partition *part, int gid,
		      char *buf, size_t n)
{
	const fl_micro_graph *m = &part->groups[gid];
	size_t used = strlen(buf);

	if (used >= n)
		return;
	if (m->n_members == 0)
		snprintf(buf + used, n - used, "G%d", gid);
	else if (m->n_members == 1)
		snprintf(buf + used, n - used, "G%d (%s)", gid,
			 gr->ops[m->members[0]].name);
	else
		snprintf(buf + used, n - used, "G%d (%s..%s)", gid,
			 gr->ops[m->members[0]].name,
			 gr->ops[m->members[m->n_members - 1]].name);
}

/* "G0 (a) + G3 (b..c)": the micro-graphs of kernel k, joined by sep. */
static int groups_text(const fl_graph *gr, const fl_partition *part,
		       const fl_kernel *k, const char *sep, char *buf,
		       size_t n)
{
	int ids[16], count = fl_stitch_kernel_groups(k, part, ids, 16);

	buf[0] = '\0';
	for (int i = 0; i < count && i < 16; i++) {
		if (i)
			snprintf(buf + strlen(buf), n - strlen(buf), "%s",
				 sep);
		put_group(gr, part, ids[i], buf, n);
	}
	if (count > 16)
		snprintf(buf + strlen(buf), n - strlen(buf), "%s%d more",
			 sep, count - 16);
	return count;
}

/* One stitched-edge tensor: its micro-graphs, placement, per-tile bytes
 * against layer 2's capacity, and the reason of its decision. */
static void draw_edge(const fl_graph *gr, const fl_kernel_tensor *kt,
		      int from, int to, int64_t cap, fl_grid *g, int y)
{
	char name[160], link[32], bytes[32] = "-", capacity[32];
	bool local = kt->place == FL_PLACE_TILE_LOCAL;
	int pad;

	tail(gr->tensors[kt->tensor].name, name_w(g), name, sizeof name);
	pad = name_w(g) + (strncmp(name, "\xe2\x80\xa6", 3) ? 0 : 2);
	snprintf(link, sizeof link, "G%d -> G%d", from, to);
	if (local)
		human(box_bytes(kt), bytes, sizeof bytes);
	human(cap, capacity, sizeof capacity);
	fl_grid_textf(g, 0, y, -1, local ? FL_LOOK_OK : FL_LOOK_WARN,
		      "  %-*s %-13s %-10s %9s of %s  %s", pad, name, link,
		      fl_placement_name(kt->place), bytes, capacity, kt->why);
}

/* Stitched-edge tensors of kernel k. */
static int count_edges(const fl_graph *gr, const fl_partition *part,
		       const fl_kernel *k)
{
	int n = 0;

	for (int i = 0; i < k->n_tensors; i++)
		n += fl_stitch_edge_tensor(k, gr, part, k->tensors[i].tensor,
					   NULL, NULL);
	return n;
}

/* The layer-2 section of kernel k (a layer-3 kernel's branch too): the
 * micro-graphs stitched, then the tensors on the stitched edges, at most
 * max_rows lines in all; returns the next row. */
static int draw_stitched(const fl_view_ctx *c, const fl_kernel *k,
			 fl_grid *g, int y, int max_rows)
{
	const fl_graph *gr = fl_engine_graph(c->s);
	const fl_partition *part = fl_engine_partition(c->s);
	int64_t cap = fl_stitch_capacity(fl_engine_options(c->s));
	int from, to, n_edges, room, shown = 0;
	char text[512];

	if (!part || max_rows < 1 ||
	    groups_text(gr, part, k, " + ", text, sizeof text) < 2)
		return y;
	fl_grid_textf(g, 0, y++, -1, FL_LOOK_TITLE, "stitched (layer 2): %s",
		      text);
	n_edges = count_edges(gr, part, k);
	room = max_rows - 1;
	if (n_edges > room)
		room--;		/* the "more" line */
	for (int i = 0; i < k->n_tensors && shown < room; i++)
		if (fl_stitch_edge_tensor(k, gr, part, k->tensors[i].tensor,
					  &from, &to)) {
			draw_edge(gr, &k->tensors[i], from, to, cap, g, y++);
			shown++;
		}
	if (shown < n_edges && room >= 0)
		fl_grid_textf(g, 0, y++, -1, FL_LOOK_DIM, "  ... %d more "
			      "stitched edges", n_edges - shown);
	return y;
}

/* The layer-2 sections of k, or of each of its branches (layer 3),
 * in half of the rows left; returns the next row. */
static int draw_layer2(const fl_view_ctx *c, const fl_kernel *k, fl_grid *g,
		       int y)
{
	int end = y + (g->h - y) / 2;

	if (k->n_branches == 0)
		return draw_stitched(c, k, g, y, end - y);
	for (int b = 0; b < k->n_branches; b++)
		y = draw_stitched(c, &k->branches[b], g, y, end - y);
	return y;
}

/* A kernel layer 3 made: its branches, side by side. */
static int draw_branches(const fl_view_ctx *c, const fl_kernel *k,
			 fl_grid *g, int y)
{
	const fl_graph *gr = fl_engine_graph(c->s);
	const fl_partition *part = fl_engine_partition(c->s);
	char text[512] = "", one[256];

	if (k->n_branches == 0 || !part)
		return y;
	for (int b = 0; b < k->n_branches; b++) {
		groups_text(gr, part, &k->branches[b], " + ", one,
			    sizeof one);
		snprintf(text + strlen(text), sizeof text - strlen(text),
			 "%s%s", b ? " | " : "", one);
	}
	fl_grid_textf(g, 0, y++, -1, FL_LOOK_TITLE, "parallel (layer 3): %d "
		      "branches side by side: %s", k->n_branches, text);
	return y;
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
	y = draw_capacity(c, kn, g, y);
	y = draw_branches(c, kn, g, y);
	y = draw_layer2(c, kn, g, y);
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
