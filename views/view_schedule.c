/* The schedule tree view (DESIGN 7): the isl schedule tree of the
 * current kernel, one node per row, collapsible, with the node under the
 * cursor in full at the bottom and, on grids at least 100 columns wide,
 * the kernel's generated C beside it with the lines of that node
 * highlighted.
 *
 * The title names the kernel's tile sizes, how they were chosen
 * (memory-bound, contraction, --tile), the tiles and the bytes of one;
 * the detail lines of the tile band start with the whole reason (the
 * "tiled" event's text: threads, cache sizes, footprint).
 *
 * Rows: domain, band (permutable flag, coincident flag per member, tile
 * sizes on the tile band), sequence, set, filter, extension (its map),
 * mark, context, guard, expansion and leaf (with the statements reaching
 * it).  Long isl texts are cut at the pane's width; the detail lines show
 * them whole.
 *
 * Which code lines belong to a node.  The C printer ends every statement
 * line with a comment naming its statement ("... ;  /+ S3_1: conv2d
 * update +/"), and isl's AST names the loop of schedule dimension d
 * "c<d>".  So:
 *   - any node covers the statements whose instances reach it
 *     (isl_schedule_node_get_domain, which includes the instances an
 *     extension above it introduced): their lines, the for/if lines that
 *     enclose them (found by indentation), and the "#pragma" right above
 *     such a for;
 *   - a band at schedule depth d with n members covers only the loops
 *     c<d>..c<d+n-1> enclosing those statements: the loops it generates.
 *     A member with one iteration has no loop (isl drops it), which the
 *     code pane's title says when none is left.
 *
 * Reads the session only.  The node table (walked once with
 * isl_schedule_node) is cached in the state and rebuilt when the kernel
 * index or its schedule text changes; collapse flags belong to that
 * table and are reset with it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/id.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/set.h>
#include <isl/union_map.h>
#include <isl/union_set.h>

#include "view.h"

#define CODE_MIN_W 100	/* grids this wide show the code pane */

typedef struct sched_node {
	enum isl_schedule_node_type type;
	int level;		/* depth in the tree (indentation) */
	int parent;		/* preorder index, -1 at the root */
	int end;		/* first preorder index after the subtree */
	int n_children;
	char *text;		/* isl's text of the node, NULL when none */
	char *stmts;		/* " S1_0 S3_0 ": statements reaching it */
	int n_members;		/* band */
	bool permutable;	/* band */
	char coinc[64];		/* band: "1 1 0" */
	int depth;		/* schedule depth (band: iterator c<depth>) */
	bool tile_band;		/* the band the tiling made */
	bool collapsed;
} sched_node;

typedef struct sched_state {
	/* The table and what it was built from. */
	int kernel;
	char *sched_text;
	int n_nodes;
	sched_node *nodes;
	/* Presentation. */
	int cursor;		/* preorder index */
	int top;		/* first visible row shown */
	int rows;		/* tree rows at the last render */
	int code_for;		/* node the code pane last scrolled to */
	int code_top;
} sched_state;

/* ---- the node table ------------------------------------------------- */

static void table_free(sched_state *st)
{
	for (int i = 0; i < st->n_nodes; i++) {
		free(st->nodes[i].text);
		free(st->nodes[i].stmts);
	}
	free(st->nodes);
	free(st->sched_text);
	st->nodes = NULL;
	st->sched_text = NULL;
	st->n_nodes = 0;
}

static void *sched_create(void)
{
	sched_state *st = calloc(1, sizeof *st);

	if (st) {
		st->kernel = -1;
		st->code_for = -1;
		st->rows = 1;
	}
	return st;
}

static void sched_destroy(void *p)
{
	sched_state *st = p;

	if (!st)
		return;
	table_free(st);
	free(st);
}

/* isl's text of a node's object (malloc'd), NULL for sequence, set and
 * leaf. */
static char *node_text(__isl_keep isl_schedule_node *node)
{
	isl_union_set *us = NULL;
	isl_union_map *um = NULL;
	isl_set *set = NULL;
	char *s = NULL;

	switch (isl_schedule_node_get_type(node)) {
	case isl_schedule_node_band: {
		isl_multi_union_pw_aff *m =
			isl_schedule_node_band_get_partial_schedule(node);

		s = isl_multi_union_pw_aff_to_str(m);
		isl_multi_union_pw_aff_free(m);
		return s;
	}
	case isl_schedule_node_domain:
		us = isl_schedule_node_domain_get_domain(node);
		break;
	case isl_schedule_node_filter:
		us = isl_schedule_node_filter_get_filter(node);
		break;
	case isl_schedule_node_extension:
		um = isl_schedule_node_extension_get_extension(node);
		break;
	case isl_schedule_node_expansion:
		um = isl_schedule_node_expansion_get_expansion(node);
		break;
	case isl_schedule_node_context:
		set = isl_schedule_node_context_get_context(node);
		break;
	case isl_schedule_node_guard:
		set = isl_schedule_node_guard_get_guard(node);
		break;
	case isl_schedule_node_mark: {
		isl_id *id = isl_schedule_node_mark_get_id(node);
		const char *name = isl_id_get_name(id);

		s = strdup(name ? name : "");
		isl_id_free(id);
		return s;
	}
	default:
		return NULL;
	}
	if (us)
		s = isl_union_set_to_str(us);
	else if (um)
		s = isl_union_map_to_str(um);
	else if (set)
		s = isl_set_to_str(set);
	isl_union_set_free(us);
	isl_union_map_free(um);
	isl_set_free(set);
	return s;
}

/* Statement lists " S1_0 S3_0 ": one blank before and after each name,
 * so that " name " finds a whole name.  The names reaching a node are
 * worked out from its ancestors' domains, filters and extensions rather
 * than with isl_schedule_node_get_domain, which isl refuses (with an
 * error on stderr) under an extension node. */
typedef struct name_list {
	char *s;		/* malloc'd, NULL when out of memory */
	const char *only;	/* names outside this list are left out
				   (NULL: none is) */
} name_list;

static bool list_has(const char *list, const char *name)
{
	size_t k = strlen(name);

	for (const char *p = list ? strstr(list, name) : NULL; p;
	     p = strstr(p + 1, name))
		if (p[-1] == ' ' && p[k] == ' ')
			return true;
	return false;
}

static void list_add(name_list *l, const char *name)
{
	size_t n, k = strlen(name);
	char *grown;

	if (!l->s || !k || list_has(l->s, name) ||
	    (l->only && !list_has(l->only, name)))
		return;
	n = strlen(l->s);
	grown = realloc(l->s, n + k + 2);
	if (!grown)
		return;
	memcpy(grown + n, name, k);
	grown[n + k] = ' ';
	grown[n + k + 1] = '\0';
	l->s = grown;
}

static isl_stat add_set_name(__isl_take isl_set *set, void *user)
{
	const char *name = isl_set_get_tuple_name(set);

	if (name)
		list_add(user, name);
	isl_set_free(set);
	return isl_stat_ok;
}

/* Adds the statements of u to l; u is freed. */
static void list_add_uset(name_list *l, __isl_take isl_union_set *u)
{
	if (u)
		isl_union_set_foreach_set(u, add_set_name, l);
	isl_union_set_free(u);
}

/* The statements reaching node, given those reaching its parent
 * (`reach`, NULL at the root). */
static char *node_stmts(__isl_keep isl_schedule_node *node, const char *reach)
{
	name_list l = {strdup(" "), NULL};

	switch (isl_schedule_node_get_type(node)) {
	case isl_schedule_node_domain:
		list_add_uset(&l, isl_schedule_node_domain_get_domain(node));
		break;
	case isl_schedule_node_filter:
		l.only = reach;
		list_add_uset(&l, isl_schedule_node_filter_get_filter(node));
		break;
	case isl_schedule_node_extension:
		free(l.s);
		l.s = strdup(reach ? reach : " ");
		list_add_uset(&l, isl_union_map_range(
			isl_schedule_node_extension_get_extension(node)));
		break;
	case isl_schedule_node_expansion:
		list_add_uset(&l, isl_union_map_range(
			isl_schedule_node_expansion_get_expansion(node)));
		break;
	default:
		free(l.s);
		l.s = strdup(reach ? reach : " ");
	}
	return l.s;
}

static void fill_band(sched_node *n, __isl_keep isl_schedule_node *node)
{
	size_t used = 0;

	n->n_members = isl_schedule_node_band_n_member(node);
	n->permutable = isl_schedule_node_band_get_permutable(node) ==
			isl_bool_true;
	for (int i = 0; i < n->n_members && used + 3 < sizeof n->coinc; i++)
		used += (size_t)snprintf(n->coinc + used,
					 sizeof n->coinc - used, "%s%d",
					 i ? " " : "",
					 isl_schedule_node_band_member_get_coincident(
						 node, i) == isl_bool_true);
}

/* Appends node and its subtree to st's table in preorder; -1 when out of
 * memory. */
static int table_add(sched_state *st, __isl_keep isl_schedule_node *node,
		     int level, int parent, int *cap)
{
	int i = st->n_nodes, n_children;
	sched_node *n;

	if (st->n_nodes == *cap) {
		sched_node *grown = realloc(st->nodes, 2 * (size_t)*cap *
						       sizeof *grown);

		if (!grown)
			return -1;
		st->nodes = grown;
		*cap *= 2;
	}
	n = &st->nodes[st->n_nodes++];
	memset(n, 0, sizeof *n);
	n->type = isl_schedule_node_get_type(node);
	n->level = level;
	n->parent = parent;
	n->text = node_text(node);
	n->stmts = node_stmts(node, parent >= 0 ? st->nodes[parent].stmts
						: NULL);
	n->depth = isl_schedule_node_get_schedule_depth(node);
	if (n->type == isl_schedule_node_band)
		fill_band(n, node);
	n_children = isl_schedule_node_n_children(node);
	n->n_children = n_children;
	for (int c = 0; c < n_children; c++) {
		isl_schedule_node *child = isl_schedule_node_get_child(node, c);
		int rc = child ? table_add(st, child, level + 1, i, cap) : -1;

		isl_schedule_node_free(child);
		if (rc < 0)
			return -1;
	}
	st->nodes[i].end = st->n_nodes;
	return 0;
}

/* The tile band: the outermost band whose members are tile coordinates
 * (isl's band tiling writes them as floor(i/T)), in a tiled kernel. */
static void mark_tile_band(sched_state *st, const fl_kernel *k)
{
	if (k->n_tile <= 0)
		return;
	for (int i = 0; i < st->n_nodes; i++) {
		sched_node *n = &st->nodes[i];

		if (n->type == isl_schedule_node_band && n->text &&
		    strstr(n->text, "floor(")) {
			n->tile_band = true;
			return;
		}
	}
}

/* Builds the table of kernel kernel unless it is the one cached. */
static int table_get(sched_state *st, const fl_kernel *k, int kernel)
{
	isl_schedule_node *root;
	int cap = 32, rc;

	if (st->nodes && st->kernel == kernel && k->schedule_text &&
	    st->sched_text && !strcmp(st->sched_text, k->schedule_text))
		return 0;
	table_free(st);
	st->cursor = st->top = st->code_top = 0;
	st->code_for = -1;
	st->kernel = kernel;
	st->nodes = malloc((size_t)cap * sizeof *st->nodes);
	st->sched_text = strdup(k->schedule_text ? k->schedule_text : "");
	root = isl_schedule_get_root(k->schedule);
	if (!st->nodes || !st->sched_text || !root) {
		isl_schedule_node_free(root);
		table_free(st);
		return -1;
	}
	rc = table_add(st, root, 0, -1, &cap);
	isl_schedule_node_free(root);
	if (rc < 0) {
		table_free(st);
		return -1;
	}
	mark_tile_band(st, k);
	return 0;
}

/* ---- visible rows -------------------------------------------------- */

/* The next visible node after i in preorder (skips collapsed subtrees). */
static int next_visible(const sched_state *st, int i)
{
	return st->nodes[i].collapsed ? st->nodes[i].end : i + 1;
}

/* The visible node `row` rows after the root's, and the row of node
 * `want` in *row_of (-1 when hidden); returns the visible count. */
static int visible_walk(const sched_state *st, int want, int *row_of)
{
	int row = 0;

	*row_of = -1;
	for (int i = 0; i < st->n_nodes; i = next_visible(st, i), row++)
		if (i == want)
			*row_of = row;
	return row;
}

static int visible_at(const sched_state *st, int row)
{
	int i = 0;

	for (; i < st->n_nodes && row > 0; row--)
		i = next_visible(st, i);
	return i < st->n_nodes ? i : -1;
}

/* Moves the cursor to its nearest visible ancestor. */
static void cursor_visible(sched_state *st)
{
	for (int a = st->nodes[st->cursor].parent; a >= 0;
	     a = st->nodes[a].parent)
		if (st->nodes[a].collapsed)
			st->cursor = a;
}

/* ---- labels ------------------------------------------------------- */

static const char *type_name(enum isl_schedule_node_type t)
{
	switch (t) {
	case isl_schedule_node_band: return "band";
	case isl_schedule_node_context: return "context";
	case isl_schedule_node_domain: return "domain";
	case isl_schedule_node_expansion: return "expansion";
	case isl_schedule_node_extension: return "extension";
	case isl_schedule_node_filter: return "filter";
	case isl_schedule_node_guard: return "guard";
	case isl_schedule_node_mark: return "mark";
	case isl_schedule_node_sequence: return "sequence";
	case isl_schedule_node_set: return "set";
	case isl_schedule_node_leaf: return "leaf";
	default: return "?";
	}
}

/* The tile sizes of k as "1x32x32". */
static void tile_sizes(const fl_kernel *k, char *buf, size_t n)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < k->n_tile && used + 2 < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%lld",
					 i ? "x" : "", (long long)k->tile[i]);
}

/* ", tiles 64x128 (contraction, 12 of 224 KiB)": the sizes, how they
 * were chosen, the tiles and the bytes of one; "" when untiled.  The full
 * reason is on the tile band's detail lines. */
static void tile_header(const fl_kernel *k, char *buf, size_t n)
{
	char sizes[96];

	buf[0] = '\0';
	if (k->n_tile <= 0)
		return;
	tile_sizes(k, sizes, sizeof sizes);
	if (k->tile_kind == FL_TILE_NONE)
		snprintf(buf, n, ", tiles %s", sizes);
	else
		snprintf(buf, n, ", tiles %s (%s, %.0f of %lld KiB)",
			 sizes, fl_tile_kind_name(k->tile_kind), k->n_tiles,
			 (long long)(k->tile_bytes >> 10));
}

/* The row label of node n: kind, flags, then the (long) isl text. */
static void node_label(const sched_node *n, const fl_kernel *k, char *buf,
		       size_t size)
{
	char tiles[96] = "";

	switch (n->type) {
	case isl_schedule_node_band:
		if (n->tile_band) {
			tile_sizes(k, tiles + 8, sizeof tiles - 8);
			memcpy(tiles, ", tiles ", 8);
		}
		snprintf(buf, size, "band%s coincident [%s]%s: %s",
			 n->permutable ? " permutable," : "", n->coinc, tiles,
			 n->text ? n->text : "");
		break;
	case isl_schedule_node_sequence:
	case isl_schedule_node_set:
		snprintf(buf, size, "%s (%d children)", type_name(n->type),
			 n->n_children);
		break;
	case isl_schedule_node_leaf:
		snprintf(buf, size, "leaf:%s", n->stmts ? n->stmts : "");
		break;
	case isl_schedule_node_mark:
		snprintf(buf, size, "mark \"%s\"", n->text ? n->text : "");
		break;
	default:
		snprintf(buf, size, "%s %s", type_name(n->type),
			 n->text ? n->text : "");
	}
}

/* Writes text at (x, y) within w columns, ending in an ellipsis when
 * it was cut. */
static void put_clipped(fl_grid *g, int x, int y, int w, const char *text,
			fl_look look)
{
	if (w <= 0)
		return;
	fl_grid_text(g, x, y, w, text, look);
	if ((int)strlen(text) > w)
		fl_grid_put(g, x + w - 1, y, 0x2026, look);
}

/* ---- the tree pane ------------------------------------------------- */

static void draw_row(fl_grid *g, int x, int y, int w, const sched_node *n,
		     const fl_kernel *k, bool cursor)
{
	char label[4096];
	int indent = 2 * n->level, used;
	uint32_t arrow = n->n_children == 0 ? ' ' :
			 n->collapsed ? FL_CH_ARROW_R : FL_CH_ARROW_D;
	fl_look look = cursor ? FL_LOOK_CURSOR :
		       n->type == isl_schedule_node_leaf ? FL_LOOK_DIM :
		       n->type == isl_schedule_node_extension ? FL_LOOK_WARN :
							       FL_LOOK_NORMAL;

	if (indent > w / 2)
		indent = w / 2;
	node_label(n, k, label, sizeof label);
	fl_grid_put(g, x + indent, y, arrow, FL_LOOK_DIM);
	used = indent + 2;
	put_clipped(g, x + used, y, w - used, label, look);
	if (cursor)
		fl_grid_paint(g, x + used, y, w - used, 1, FL_LOOK_CURSOR);
}

/* The full text of the cursor node over rows [y, y + h), wrapped. */
static void draw_detail(fl_grid *g, int y, int h, const sched_node *n,
			const fl_kernel *k)
{
	char label[4096], head[512];
	int w = g->w, len, off = 0;

	if (h <= 0 || w <= 0)
		return;
	snprintf(head, sizeof head, "[%s, depth %d, statements%s] ",
		 type_name(n->type), n->depth, n->stmts ? n->stmts : " ");
	/* on the tile band, why these sizes comes first: the isl text
	 * after it may not fit the rows */
	len = n->tile_band && k->tile_why[0]
	      ? snprintf(label, sizeof label, "%s | ", k->tile_why) : 0;
	node_label(n, k, label + len, sizeof label - (size_t)len);
	fl_grid_hline(g, 0, y, w, FL_LOOK_DIM);
	fl_grid_text(g, 1, y, w - 1, head, FL_LOOK_TITLE);
	len = (int)strlen(label);
	for (int r = 1; r < h && off < len; r++, off += w) {
		if (r == h - 1 && len - off > w) {
			put_clipped(g, 0, y + r, w, label + off, FL_LOOK_NORMAL);
			break;
		}
		fl_grid_text(g, 0, y + r, w, label + off, FL_LOOK_NORMAL);
	}
}

static void draw_tree(sched_state *st, const fl_kernel *k, fl_grid *g, int w,
		      int y0, int rows, bool focused)
{
	int crow, n_vis;

	st->rows = rows > 0 ? rows : 1;
	n_vis = visible_walk(st, st->cursor, &crow);
	if (st->top > n_vis - st->rows)
		st->top = n_vis - st->rows;
	if (st->top < 0)
		st->top = 0;
	fl_view_scroll_to(crow, st->rows, &st->top);
	for (int r = 0, i = visible_at(st, st->top); r < rows && i >= 0 &&
	     i < st->n_nodes; r++, i = next_visible(st, i))
		draw_row(g, 0, y0 + r, w, &st->nodes[i], k,
			 focused && i == st->cursor);
}

/* ---- the code pane --------------------------------------------------- */

typedef struct code_line {
	const char *p;		/* start of the line */
	int len;
	int indent;
	int loop;		/* "for (int c<d>": d, else -1 */
	bool opener;		/* a for or an if: encloses what it indents */
	bool pragma;
	char stmt[48];		/* the statement its comment names, or "" */
} code_line;

/* The statement named by the trailing comment "/ * S3_1: ... * /". */
static void line_stmt(const char *p, int len, char *buf, size_t n)
{
	const char *c = NULL;

	buf[0] = '\0';
	for (int i = 0; i + 3 < len; i++)
		if (p[i] == '/' && p[i + 1] == '*' && p[i + 2] == ' ' &&
		    p[i + 3] == 'S')
			c = p + i + 3;
	if (c) {
		size_t k = 0;

		while (c + k < p + len && c[k] != ':' && c[k] != ' ' &&
		       k + 1 < n)
			k++;
		if (c + k < p + len && c[k] == ':') {
			memcpy(buf, c, k);
			buf[k] = '\0';
		}
	}
}

/* Splits src into lines (malloc'd array, *n of them). */
static code_line *code_lines(const char *src, int *n)
{
	int cap = 64, count = 0;
	code_line *L = malloc((size_t)cap * sizeof *L);

	for (const char *p = src; L && *p; ) {
		const char *nl = strchr(p, '\n'), *t;
		code_line *l;

		if (count == cap) {
			code_line *grown = realloc(L, 2 * (size_t)cap *
							 sizeof *L);

			if (!grown)
				break;
			L = grown;
			cap *= 2;
		}
		l = &L[count++];
		l->p = p;
		l->len = nl ? (int)(nl - p) : (int)strlen(p);
		for (t = p; *t == ' '; t++)
			;
		l->indent = (int)(t - p);
		l->loop = strncmp(t, "for (int c", 10) ? -1 : atoi(t + 10);
		l->opener = l->loop >= 0 || !strncmp(t, "if (", 4);
		l->pragma = !strncmp(t, "#pragma", 7);
		line_stmt(p, l->len, l->stmt, sizeof l->stmt);
		if (!nl)
			break;
		p = nl + 1;
	}
	*n = L ? count : 0;
	return L;
}

/* Marks in hl the lines of node n: its statements' lines and enclosing
 * for/if lines, or for a band only its loops c<depth>.. (see the top
 * comment); a "#pragma" right above a marked for is marked too.
 * Returns the number of lines marked. */
static int code_mark(const sched_node *n, const code_line *L, int n_lines,
		     bool *hl)
{
	bool band = n->type == isl_schedule_node_band;
	int marked = 0;

	for (int i = 0; i < n_lines; i++) {
		char key[52];
		int indent = L[i].indent;

		if (!L[i].stmt[0])
			continue;
		snprintf(key, sizeof key, " %s ", L[i].stmt);
		if (!n->stmts || !strstr(n->stmts, key))
			continue;
		if (!band)
			hl[i] = true;
		for (int j = i - 1; j >= 0 && indent > 0; j--) {
			if (L[j].indent >= indent)
				continue;
			indent = L[j].indent;
			if (!L[j].opener)
				continue;
			if (!band || (L[j].loop >= n->depth &&
				      L[j].loop < n->depth + n->n_members))
				hl[j] = true;
		}
	}
	for (int i = 0; i < n_lines; i++) {
		if (i + 1 < n_lines && L[i].pragma && hl[i + 1])
			hl[i] = true;
		marked += hl[i];
	}
	return marked;
}

static void draw_code(sched_state *st, const fl_view_ctx *c, int kernel,
		      fl_grid *g, int x0, int w, int h)
{
	const char *src = fl_engine_kernel_source(c->s, kernel);
	const sched_node *n = &st->nodes[st->cursor];
	code_line *L;
	bool *hl;
	int n_lines, marked, first = -1, numw;

	if (!src) {
		fl_grid_text(g, x0, 0, w, "no code yet: codegen has not "
			     "generated this kernel", FL_LOOK_DIM);
		return;
	}
	L = code_lines(src, &n_lines);
	hl = calloc((size_t)n_lines + 1, sizeof *hl);
	if (!L || !hl) {
		free(L);
		free(hl);
		return;
	}
	marked = code_mark(n, L, n_lines, hl);
	for (int i = 0; i < n_lines && first < 0; i++)
		if (hl[i])
			first = i;
	if (n->type == isl_schedule_node_band && !marked)
		fl_grid_textf(g, x0, 0, w, FL_LOOK_TITLE, "code: loops c%d..c%d "
			      "have one iteration each: no for", n->depth,
			      n->depth + n->n_members - 1);
	else
		fl_grid_textf(g, x0, 0, w, FL_LOOK_TITLE, "code: %d line%s of "
			      "this %s", marked, marked == 1 ? "" : "s",
			      type_name(n->type));
	/* Follow the selected node: show its first line near the top. */
	if (st->code_for != st->cursor) {
		st->code_for = st->cursor;
		st->code_top = first > 2 ? first - 2 : 0;
	}
	if (st->code_top > n_lines - (h - 1))
		st->code_top = n_lines - (h - 1);
	if (st->code_top < 0)
		st->code_top = 0;
	numw = snprintf(NULL, 0, "%d", n_lines);
	for (int r = 1; r < h && st->code_top + r - 1 < n_lines; r++) {
		int i = st->code_top + r - 1;
		char buf[512];
		int len = L[i].len < (int)sizeof buf - 1 ? L[i].len
							 : (int)sizeof buf - 1;

		memcpy(buf, L[i].p, (size_t)len);
		buf[len] = '\0';
		fl_grid_textf(g, x0, r, w, FL_LOOK_DIM, "%*d ", numw, i + 1);
		fl_grid_text(g, x0 + numw + 1, r, w - numw - 1, buf,
			     hl[i] ? FL_LOOK_HIGHLIGHT : FL_LOOK_NORMAL);
		if (hl[i])
			fl_grid_paint(g, x0 + numw + 1, r, w - numw - 1, 1,
				      FL_LOOK_HIGHLIGHT);
	}
	free(L);
	free(hl);
}

/* ---- render and keys ------------------------------------------------ */

/* The current kernel, or NULL with the reason drawn. */
static const fl_kernel *current(const fl_view_ctx *c, fl_grid *g, int *kernel)
{
	const fl_program *p = fl_engine_program(c->s);
	char why[160];

	*kernel = fl_view_current_kernel(c);
	if (*kernel < 0 || !p) {
		snprintf(why, sizeof why, "no kernels yet: layer 1 has not "
			 "run (step %d/%d)", c->step, c->total);
		fl_view_empty(g, why);
		return NULL;
	}
	if (!p->kernels[*kernel].schedule) {
		fl_view_empty(g, "this kernel has no schedule tree (custom "
			      "op: a hand-written loop nest)");
		return NULL;
	}
	return &p->kernels[*kernel];
}

static void sched_render(void *p, const fl_view_ctx *c, fl_grid *g)
{
	sched_state *st = p;
	const fl_kernel *k;
	int kernel, tree_w, detail_h, rows;
	char tiles[160];

	k = current(c, g, &kernel);
	if (!k)
		return;
	if (table_get(st, k, kernel) < 0) {
		fl_view_empty(g, "out of memory");
		return;
	}
	tree_w = g->w >= CODE_MIN_W ? (g->w - 1) / 2 : g->w;
	detail_h = g->h >= 12 ? 4 : g->h >= 6 ? 2 : 0;
	rows = g->h - 1 - detail_h;
	tile_header(k, tiles, sizeof tiles);
	fl_grid_textf(g, 0, 0, tree_w, FL_LOOK_TITLE,
		      "schedule tree of kernel %d (%s): %d nodes%s", kernel,
		      k->name, st->n_nodes, tiles);
	draw_tree(st, k, g, tree_w, 1, rows, c->focused);
	if (g->w >= CODE_MIN_W) {
		fl_grid_vline(g, tree_w, 0, g->h - detail_h, FL_LOOK_DIM);
		draw_code(st, c, kernel, g, tree_w + 1, g->w - tree_w - 1,
			  g->h - detail_h);
	}
	draw_detail(g, g->h - detail_h, detail_h, &st->nodes[st->cursor], k);
}

/* Moves the cursor by d visible rows. */
static void cursor_move(sched_state *st, int d)
{
	int row, n_vis = visible_walk(st, st->cursor, &row), i;

	row += d;
	if (row >= n_vis)
		row = n_vis - 1;
	if (row < 0)
		row = 0;
	i = visible_at(st, row);
	if (i >= 0)
		st->cursor = i;
}

static void collapse_all(sched_state *st, bool on)
{
	/* The root stays open: collapsed to one row the tree says nothing. */
	for (int i = 1; i < st->n_nodes; i++)
		st->nodes[i].collapsed = on && st->nodes[i].n_children > 0;
	st->nodes[0].collapsed = false;
	cursor_visible(st);
}

static int sched_key(void *p, const fl_view_ctx *c, int key,
		     fl_view_action *act)
{
	sched_state *st = p;
	sched_node *n;

	(void)c;
	act->kind = FL_VIEW_ACT_NONE;
	if (!st->nodes)
		return 0;
	n = &st->nodes[st->cursor];
	switch (key) {
	case FL_KEY_UP: case 'k': cursor_move(st, -1); break;
	case FL_KEY_DOWN: case 'j': cursor_move(st, 1); break;
	case FL_KEY_PGUP: cursor_move(st, -st->rows); break;
	case FL_KEY_PGDN: cursor_move(st, st->rows); break;
	case FL_KEY_HOME: st->cursor = 0; break;
	case FL_KEY_END: cursor_move(st, st->n_nodes); break;
	case FL_KEY_ENTER: case '\r':
		if (n->n_children)
			n->collapsed = !n->collapsed;
		break;
	case FL_KEY_LEFT: case 'h':
		if (n->n_children && !n->collapsed)
			n->collapsed = true;
		else if (n->parent >= 0)
			st->cursor = n->parent;
		break;
	case FL_KEY_RIGHT: case 'l': n->collapsed = false; break;
	case 'c': collapse_all(st, true); break;
	case 'C': collapse_all(st, false); break;
	default: return 0;
	}
	return 1;
}

static const fl_view_key sched_keys[] = {
	{"Up Down j k", "move the cursor"},
	{"PgUp PgDn Home End", "move by a page / to the ends"},
	{"Enter", "collapse or expand the node"},
	{"Left h", "collapse, or go to the parent"},
	{"Right l", "expand"},
	{"c C", "collapse all / expand all"},
	{NULL, NULL},
};

const fl_view_class fl_view_schedule = {
	.name = "schedule",
	.keys = sched_keys,
	.create = sched_create,
	.destroy = sched_destroy,
	.render = sched_render,
	.key = sched_key,
};
