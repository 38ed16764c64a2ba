/* The C + OpenMP backend (DESIGN 1.6; ISL_GUIDE 7, 8): one C function per
 * kernel, printed from an isl AST of the kernel's schedule tree.
 *
 * Statement bodies are not isl's default calls S(c0, c1): while the AST is
 * built, at_each_domain recovers the statement (the op and which of its
 * poly statements, "S<op>_<k>" or a recomputed copy "S<op>_<k>_r<n>"
 * whose instance starts with the tile coordinates), turns every exact
 * access of that statement into an isl_ast_expr through the build's
 * schedule (isl_ast_build_access_from_pw_multi_aff), and hangs them on the
 * node; print_user then writes the body from the op kind, the statement
 * role and those expressions.  Gather's data read is not affine, so its
 * body computes the floored, clamped index itself.  Custom ops are opaque
 * to isl and get a hand-written loop nest in a kernel of their own.
 *
 * Parallelism: every band that will get "#pragma omp parallel for" is
 * wrapped in a private mark that records its schedule depth and how many
 * leading members are coincident -- the bands layer 1 marked "parallel",
 * or, in a kernel without such marks, every band with a coincident first
 * member.  After the AST of a mark is built, the for loop directly under
 * it is flagged when its iterator (c<depth>) belongs to those members;
 * nothing else is, so a flag can never slide onto an inner loop such as a
 * recomputation when the marked band has a single iteration and makes no
 * loop (ISL_GUIDE 7).  Only the outermost flagged loop prints the pragma.
 *
 * Tile-local tensors become local arrays sized by their footprint box and
 * indexed by access - offset(tile(instance)); a register-placed tensor
 * without a box from layer 1 gets the box of its own accesses per tile.
 * Arrays over 64 KiB are malloc'd per tile instead of living on an
 * OpenMP worker's stack.  The array is declared in
 * the body of the innermost generated loop of the tile band that encloses
 * its accesses (or at function scope when the tile loops all vanished), so
 * each tile, and therefore each thread of a parallel tile loop, has its own
 * copy, while a parallel point loop shares the one its tile filled.  When
 * that cannot be established -- no box, no tile coordinates for a
 * statement, an index outside the box, accesses under different tile
 * loops -- the tensor is kept in global memory, which is always correct,
 * and the kernel's comment says why.
 *
 * Identifiers in the output are all generated (T<tensor>, fl_k<id>, c<n>);
 * names from the input file appear only in comments, sanitised. */
#include "codegen.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/ast.h>
#include <isl/ast_build.h>
#include <isl/fixed_box.h>
#include <isl/id.h>
#include <isl/map.h>
#include <isl/printer.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include "poly.h"

/* ---- a growable string ------------------------------------------- */

typedef struct sbuf {
	char *s;
	size_t len, cap;
	bool oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sb_printf(sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	if (b->len + (size_t)n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *s;

		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		s = realloc(b->s, cap);
		if (!s) {
			b->oom = true;
			return;
		}
		b->s = s;
		b->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* ---- comments ---------------------------------------- */

/* A '/' after '*' or a '*' after '/' would end or open a comment; a '?'
 * after '?' could start a trigraph; a backslash could splice lines. */
void fl_sanitize_comment(const char *s, char *buf, size_t n)
{
	size_t j = 0;

	if (!n)
		return;
	for (; s && *s && j + 1 < n; s++) {
		unsigned char c = (unsigned char)*s;
		char prev = j ? buf[j - 1] : '\0';

		if (c < 0x20 || c >= 0x7f || c == '\\' ||
		    (c == '/' && prev == '*') || (c == '*' && prev == '/') ||
		    (c == '?' && prev == '?'))
			c = '_';
		buf[j++] = (char)c;
	}
	buf[j] = '\0';
}

/* ---- per-kernel state --------------------------------------------- */

/* A for node of the AST being built (its annotation points here). */
typedef struct cg_loop {
	struct cg_loop *parent;	/* enclosing for node while building */
	struct cg_loop *next;	/* every loop of the kernel, for freeing */
	int depth;		/* schedule depth (iterator c<depth>), -1 */
	bool parallel;
	bool coincident;	/* its band member is coincident: no
				   dependence between its iterations */
} cg_loop;

/* A user node: one statement with its access expressions. */
typedef struct cg_stmt {
	struct cg_stmt *next;	/* every statement, for freeing */
	char name[48];
	const fl_op *op;
	const fl_poly_stmt *ps;
	cg_loop *loop;		/* innermost enclosing for node, or NULL */
	isl_ast_expr *write;
	isl_ast_expr **reads;	/* per ps->reads; NULL for a may-read */
	isl_ast_expr *iters;	/* gather, reshape: the original iterators */
	/* The same accesses as functions of the schedule dimensions (the
	 * AST iterators c<depth>), for the accumulator analysis. */
	isl_pw_multi_aff *wsched;
	isl_pw_multi_aff **rsched;	/* per ps->reads; NULL: may-read */
	int acc;		/* printing: scalar accumulator fl_acc<acc>
				   replaces the written element, or -1 */
} cg_stmt;

/* A graph tensor as this kernel sees it. */
typedef struct cg_array {
	bool used;		/* accessed by the generated code */
	bool written;		/* written by an op of the kernel */
	bool local;		/* tile-local in this attempt */
	bool failed;		/* cannot stay tile-local: retry global */
	int rank;
	int64_t size[FL_MAX_RANK];	/* local: the box */
	isl_multi_aff *offset;	/* local: tile -> box origin, ids reset */
	bool scoped;
	cg_loop *scope;		/* local: declared in this loop's body */
} cg_array;

typedef struct cg_kernel {
	isl_ctx *ctx;
	const fl_graph *g;
	const fl_kernel *k;
	fl_poly_op **poly;	/* per k->ops[i] */
	cg_array *arr;		/* per graph tensor */
	bool *force_global;	/* per graph tensor, across attempts */
	char (*why)[200];	/* per graph tensor: why it is not local */
	cg_loop *cur, *loops;
	cg_stmt *stmts;
	int tile_end;		/* schedule depth after the tile band */
	int par_open;		/* printing: enclosing parallel loops */
	bool failed;
	fl_error *err;
} cg_kernel;

/* What a private "fl_par" mark remembers of its band. */
typedef struct par_info {
	int depth, ncoinc;
} par_info;

/* What a private "fl_band" mark (above every band) remembers: which
 * members are coincident, for "#pragma omp simd" on innermost loops. */
#define BAND_MAX_MEMBERS 64
typedef struct band_info {
	int depth, n;
	bool coincident[BAND_MAX_MEMBERS];
} band_info;

static void cg_fail(cg_kernel *cg, const char *what)
{
	const char *msg = isl_ctx_last_error_msg(cg->ctx);

	if (!cg->failed)
		fl_error_set(cg->err, "kernel %s: %s%s%s", cg->k->name, what,
			     msg ? ": " : "", msg ? msg : "");
	cg->failed = true;
}

/* Tensor t cannot be tile-local in this kernel; the next attempt keeps it
 * in global memory. */
static void array_fail(cg_kernel *cg, int t, const char *why)
{
	if (!cg->arr[t].failed)
		snprintf(cg->why[t], sizeof cg->why[t], "%s", why);
	cg->arr[t].failed = true;
}

/* ---- schedule preparation: parallel marks -------------------------- */

static bool is_mark_named(__isl_keep isl_schedule_node *node,
			  const char *name)
{
	isl_id *id;
	bool yes;

	if (isl_schedule_node_get_type(node) != isl_schedule_node_mark)
		return false;
	id = isl_schedule_node_mark_get_id(node);
	yes = id && strcmp(isl_id_get_name(id), name) == 0;
	isl_id_free(id);
	return yes;
}

static isl_bool find_parallel_mark(__isl_keep isl_schedule_node *node,
				   void *user)
{
	if (is_mark_named(node, "parallel")) {
		*(bool *)user = true;
		return isl_bool_error;	/* found: stop the walk */
	}
	return isl_bool_true;
}

/* Wraps `band` (taken, pointing at a band) in an "fl_par" mark when it
 * has coincident leading members; returns the node at the same place. */
static __isl_give isl_schedule_node *wrap_parallel(
	__isl_take isl_schedule_node *band)
{
	par_info *pi;
	isl_id *id;
	int k = fl_band_leading_coincident(band);

	if (k == 0)
		return band;
	pi = malloc(sizeof *pi);
	if (!pi)
		return isl_schedule_node_free(band);
	pi->depth = isl_schedule_node_get_schedule_depth(band);
	pi->ncoinc = k;
	id = isl_id_alloc(isl_schedule_node_get_ctx(band), "fl_par", pi);
	id = isl_id_set_free_user(id, &free);
	return isl_schedule_node_insert_mark(band, id);
}

/* Wraps `band` (taken) in an "fl_band" mark recording its coincident
 * members; returns the node at the same place. */
static __isl_give isl_schedule_node *wrap_band(
	__isl_take isl_schedule_node *band)
{
	isl_size n = isl_schedule_node_band_n_member(band);
	band_info *bi;
	isl_id *id;

	if (n <= 0 || n > BAND_MAX_MEMBERS)
		return band;
	bi = calloc(1, sizeof *bi);
	if (!bi)
		return isl_schedule_node_free(band);
	bi->depth = isl_schedule_node_get_schedule_depth(band);
	bi->n = n;
	for (int i = 0; i < n; i++)
		bi->coincident[i] =
			isl_schedule_node_band_member_get_coincident(band, i) ==
			isl_bool_true;
	id = isl_id_alloc(isl_schedule_node_get_ctx(band), "fl_band", bi);
	id = isl_id_set_free_user(id, &free);
	return isl_schedule_node_insert_mark(band, id);
}

/* Bottom-up rewrite: with layer-1 marks, each "parallel" mark is replaced
 * by an "fl_par" mark over the same band; without them, every band with a
 * coincident first member gets one. */
static __isl_give isl_schedule_node *prepare_node(
	__isl_take isl_schedule_node *node, void *user)
{
	bool use_marks = *(bool *)user;
	enum isl_schedule_node_type type = isl_schedule_node_get_type(node);

	if (use_marks && is_mark_named(node, "parallel")) {
		isl_schedule_node *child = isl_schedule_node_get_child(node, 0);
		bool band = isl_schedule_node_get_type(child) ==
			    isl_schedule_node_band;

		isl_schedule_node_free(child);
		if (!band)
			return node;
		node = isl_schedule_node_delete(node);
		return wrap_parallel(node);
	}
	if (!use_marks && type == isl_schedule_node_band)
		return wrap_parallel(node);
	return node;
}

/* Second pass: every band gets an "fl_band" mark right above it (under
 * its "fl_par" mark, if any). */
static __isl_give isl_schedule_node *mark_band(
	__isl_take isl_schedule_node *node, void *user)
{
	(void)user;
	if (isl_schedule_node_get_type(node) == isl_schedule_node_band)
		return wrap_band(node);
	return node;
}

static __isl_give isl_schedule *prepare_schedule(
	__isl_keep isl_schedule *s)
{
	bool use_marks = false;
	isl_schedule *r;

	isl_schedule_foreach_schedule_node_top_down(s, &find_parallel_mark,
						    &use_marks);
	r = isl_schedule_map_schedule_node_bottom_up(isl_schedule_copy(s),
						     &prepare_node, &use_marks);
	return isl_schedule_map_schedule_node_bottom_up(r, &mark_band, NULL);
}

/* ---- the tile band ------------------------------------------------- */

/* Drops the range tuple ids of a union map, so that relations into the
 * tile space compare whatever that space is called. */
static isl_stat add_anon_range(__isl_take isl_map *m, void *user)
{
	isl_union_map **acc = user;

	m = isl_map_reset_tuple_id(m, isl_dim_out);
	*acc = isl_union_map_add_map(*acc, m);
	return *acc ? isl_stat_ok : isl_stat_error;
}

static __isl_give isl_union_map *anon_range(__isl_take isl_union_map *u)
{
	isl_union_map *r = isl_union_map_empty(isl_union_map_get_space(u));

	if (isl_union_map_foreach_map(u, &add_anon_range, &r) < 0)
		r = isl_union_map_free(r);
	isl_union_map_free(u);
	return r;
}

typedef struct tile_search {
	const fl_kernel *k;
	int end;		/* -1 until found */
} tile_search;

/* A band is the tile band when the schedule up to and including it is in
 * one-to-one correspondence with the tile coordinates (inst2tile) of the
 * statements below it, whatever the tiling's scaling. */
static isl_bool find_tile_band(__isl_keep isl_schedule_node *node,
			       void *user)
{
	tile_search *ts = user;
	isl_schedule_node *child;
	isl_union_map *prefix, *i2t, *r;
	isl_bool sv, inj, empty;

	if (ts->end >= 0)
		return isl_bool_false;
	if (isl_schedule_node_get_type(node) != isl_schedule_node_band)
		return isl_bool_true;
	child = isl_schedule_node_get_child(node, 0);
	prefix = isl_schedule_node_get_prefix_schedule_union_map(child);
	i2t = isl_union_map_from_union_pw_multi_aff(
		isl_union_pw_multi_aff_copy(ts->k->inst2tile));
	i2t = isl_union_map_intersect_domain(i2t,
					     isl_schedule_node_get_domain(child));
	isl_schedule_node_free(child);
	r = isl_union_map_apply_range(isl_union_map_reverse(prefix),
				      anon_range(i2t));
	empty = isl_union_map_is_empty(r);
	sv = isl_union_map_is_single_valued(r);
	inj = isl_union_map_is_injective(r);
	isl_union_map_free(r);
	if (empty == isl_bool_false && sv == isl_bool_true &&
	    inj == isl_bool_true) {
		ts->end = isl_schedule_node_get_schedule_depth(node) +
			  isl_schedule_node_band_n_member(node);
		return isl_bool_false;
	}
	return isl_bool_true;
}

static isl_stat first_n_out(__isl_take isl_pw_multi_aff *pma, void *user)
{
	*(int *)user = isl_pw_multi_aff_dim(pma, isl_dim_out);
	isl_pw_multi_aff_free(pma);
	return isl_stat_error;	/* one is enough */
}

/* Schedule depth just below the tile band; when no band matches, the
 * tile band is taken to be the outermost one. */
static int tile_band_end(const fl_kernel *k)
{
	tile_search ts = {k, -1};
	int n_t = -1;

	if (!k->inst2tile)
		return -1;
	isl_schedule_foreach_schedule_node_top_down(k->schedule,
						    &find_tile_band, &ts);
	if (ts.end >= 0)
		return ts.end;
	isl_union_pw_multi_aff_foreach_pw_multi_aff(k->inst2tile,
						    &first_n_out, &n_t);
	return n_t;
}

/* ---- placement of this attempt ------------------------------------- */

static int read_tensor(const fl_op *op, const fl_poly_read *r)
{
	return r->input < 0 ? op->out[0] : op->in[r->input];
}

/* Every exact access of the kernel's own statements to tensor t, as
 * instance -> T<t>.  __isl_give. */
static isl_union_map *accesses_to(const cg_kernel *cg, int t)
{
	isl_union_map *acc = isl_union_map_empty(isl_space_params_alloc(cg->ctx,
									0));

	for (int i = 0; i < cg->k->n_ops; i++) {
		const fl_op *op = &cg->g->ops[cg->k->ops[i]];

		for (int s = 0; cg->poly[i] && s < cg->poly[i]->n_stmts; s++) {
			const fl_poly_stmt *ps = &cg->poly[i]->stmts[s];

			if (op->out[0] == t)
				acc = isl_union_map_add_map(acc,
					isl_map_copy(ps->write));
			for (int r = 0; r < ps->n_reads; r++)
				if (ps->reads[r].exact &&
				    read_tensor(op, &ps->reads[r]) == t)
					acc = isl_union_map_add_map(acc,
						isl_map_copy(ps->reads[r].access));
		}
	}
	return acc;
}

/* The per-tile box of tensor t over the statements of the schedule's
 * domain, for a tensor layer 1 kept off main memory without giving a
 * box (register placement: producer and consumer at the same point, so
 * the tile's own accesses are all there is).  NULL when there is none. */
static __isl_give isl_fixed_box *own_box(const cg_kernel *cg, int t)
{
	isl_union_map *acc, *i2t, *tile2t;
	isl_fixed_box *box = NULL;
	isl_map *m;

	acc = isl_union_map_intersect_domain(accesses_to(cg, t),
		isl_schedule_get_domain(cg->k->schedule));
	i2t = anon_range(isl_union_map_from_union_pw_multi_aff(
		isl_union_pw_multi_aff_copy(cg->k->inst2tile)));
	tile2t = isl_union_map_apply_range(isl_union_map_reverse(i2t), acc);
	if (isl_union_map_n_map(tile2t) == 1) {
		m = isl_map_from_union_map(tile2t);
		box = isl_map_get_range_simple_fixed_box_hull(m);
		isl_map_free(m);
	} else {
		isl_union_map_free(tile2t);
	}
	return box;
}

/* Makes tensor t tile-local from box (keep): offset over the tile space
 * with its tuple id dropped, and the sizes. */
static void use_box(cg_kernel *cg, int t, __isl_keep isl_fixed_box *box)
{
	cg_array *a = &cg->arr[t];
	const fl_shape *sh = &cg->g->tensors[t].shape;
	isl_multi_val *size = isl_fixed_box_get_size(box);

	if (isl_multi_val_dim(size, isl_dim_set) != sh->rank) {
		isl_multi_val_free(size);
		snprintf(cg->why[t], sizeof cg->why[t], "footprint box rank "
			 "differs from the tensor's");
		return;
	}
	for (int d = 0; d < sh->rank; d++) {
		isl_val *v = isl_multi_val_get_at(size, d);

		a->size[d] = isl_val_get_num_si(v);
		isl_val_free(v);
	}
	isl_multi_val_free(size);
	a->rank = sh->rank;
	a->offset = isl_fixed_box_get_offset(box);
	a->offset = isl_multi_aff_reset_tuple_id(a->offset, isl_dim_in);
	a->local = a->offset != NULL;
}

/* Makes tensor t tile-local from its box (layer 1's, or for a register
 * placement one computed here), or leaves it global with the reason. */
static void setup_local(cg_kernel *cg, int t, const fl_kernel_tensor *kt)
{
	isl_fixed_box *box;

	if (!cg->k->inst2tile) {
		snprintf(cg->why[t], sizeof cg->why[t], "%s placement in a "
			 "kernel without tile coordinates (inst2tile)",
			 fl_placement_name(kt->place));
		return;
	}
	if (kt->box_isl && isl_fixed_box_is_valid(kt->box_isl) == isl_bool_true) {
		use_box(cg, t, kt->box_isl);
		return;
	}
	box = own_box(cg, t);
	if (box && isl_fixed_box_is_valid(box) == isl_bool_true)
		use_box(cg, t, box);
	else
		snprintf(cg->why[t], sizeof cg->why[t], "%s placement without "
			 "a fixed footprint box", fl_placement_name(kt->place));
	isl_fixed_box_free(box);
}

/* Which tensors are written, and which can be tile-local this time. */
static void setup_arrays(cg_kernel *cg)
{
	const fl_kernel *k = cg->k;

	for (int i = 0; i < k->n_ops; i++) {
		const fl_op *op = &cg->g->ops[k->ops[i]];

		cg->arr[op->out[0]].written = true;
		if (op->kind == FL_OP_GATHER)	/* its data read is not affine */
			cg->force_global[op->in[0]] = true;
	}
	for (int i = 0; i < k->n_tensors; i++) {
		const fl_kernel_tensor *kt = &k->tensors[i];
		int t = kt->tensor;

		if (t < 0 || t >= cg->g->n_tensors || kt->place == FL_PLACE_GLOBAL)
			continue;
		if (cg->force_global[t]) {
			if (!cg->why[t][0])
				snprintf(cg->why[t], sizeof cg->why[t], "gather "
					 "reads it by a data-dependent index");
			continue;
		}
		setup_local(cg, t, kt);
	}
}

/* ---- access expressions (at_each_domain) --------------------------- */

static int parse_stmt_name(const char *name, int *op, int *k)
{
	int n = 0, r;

	if (sscanf(name, "S%d_%d%n", op, k, &n) == 2 && name[n] == '\0')
		return 0;
	n = 0;
	if (sscanf(name, "S%d_%d_r%d%n", op, k, &r, &n) == 3 &&
	    name[n] == '\0')
		return 0;
	return -1;
}

static const fl_poly_op *poly_of(const cg_kernel *cg, int op)
{
	for (int i = 0; i < cg->k->n_ops; i++)
		if (cg->poly[i] && cg->poly[i]->op == op)
			return cg->poly[i];
	return NULL;
}

/* Instance (space inst, taken) -> tile coordinates, from inst2tile;
 * NULL when the statement has none. */
static __isl_give isl_pw_multi_aff *tile_of(const cg_kernel *cg,
					    __isl_take isl_space *inst)
{
	isl_union_map *um;
	isl_bool empty;

	um = isl_union_map_from_union_pw_multi_aff(
		isl_union_pw_multi_aff_copy(cg->k->inst2tile));
	um = isl_union_map_intersect_domain(um,
		isl_union_set_from_set(isl_set_universe(inst)));
	empty = isl_union_map_is_empty(um);
	if (empty != isl_bool_false) {
		isl_union_map_free(um);
		return NULL;
	}
	return isl_pw_multi_aff_from_map(isl_map_from_union_map(um));
}

/* Whether every instance of dom (keep) has a local index inside the
 * box. */
static bool inside_box(const cg_array *a, __isl_keep isl_set *dom,
		       __isl_keep isl_pw_multi_aff *local)
{
	isl_set *img, *box, *defined;
	isl_bool ok;

	defined = isl_pw_multi_aff_domain(isl_pw_multi_aff_copy(local));
	ok = isl_set_is_subset(dom, defined);
	isl_set_free(defined);
	if (ok != isl_bool_true)
		return false;
	img = isl_set_apply(isl_set_copy(dom),
			    isl_map_from_pw_multi_aff(
				    isl_pw_multi_aff_copy(local)));
	box = isl_set_universe(isl_set_get_space(img));
	for (int d = 0; d < a->rank; d++) {
		box = isl_set_lower_bound_si(box, isl_dim_set, (unsigned)d, 0);
		box = isl_set_upper_bound_si(box, isl_dim_set, (unsigned)d,
					     (int)(a->size[d] - 1));
	}
	ok = isl_set_is_subset(img, box);
	isl_set_free(img);
	isl_set_free(box);
	return ok == isl_bool_true;
}

/* access (instance -> T) minus the box origin of the instance's tile. */
static __isl_give isl_pw_multi_aff *localize(cg_kernel *cg, int t,
					     __isl_take isl_pw_multi_aff *pma,
					     __isl_keep isl_set *dom)
{
	cg_array *a = &cg->arr[t];
	isl_pw_multi_aff *tile = tile_of(cg, isl_set_get_space(dom));
	isl_pw_multi_aff *off, *local;
	isl_id *arr_id;

	if (!tile) {
		array_fail(cg, t, "a statement accessing it has no tile "
			   "coordinates");
		return pma;
	}
	if (isl_pw_multi_aff_dim(tile, isl_dim_out) !=
	    isl_multi_aff_dim(a->offset, isl_dim_in)) {
		isl_pw_multi_aff_free(tile);
		array_fail(cg, t, "footprint box and inst2tile disagree on "
			   "the tile space");
		return pma;
	}
	tile = isl_pw_multi_aff_reset_tuple_id(tile, isl_dim_out);
	off = isl_pw_multi_aff_from_multi_aff(isl_multi_aff_copy(a->offset));
	off = isl_pw_multi_aff_pullback_pw_multi_aff(off, tile);
	arr_id = isl_pw_multi_aff_get_tuple_id(pma, isl_dim_out);
	off = isl_pw_multi_aff_set_tuple_id(off, isl_dim_out, arr_id);
	local = isl_pw_multi_aff_sub(isl_pw_multi_aff_copy(pma), off);
	if (!local || !inside_box(a, dom, local)) {
		isl_pw_multi_aff_free(local);
		array_fail(cg, t, "an access falls outside its footprint box");
		return pma;
	}
	isl_pw_multi_aff_free(pma);
	return local;
}

/* What every access of one statement instance needs. */
typedef struct stmt_ctx {
	isl_ast_build *build;
	isl_multi_aff *proj;	/* instance -> original statement */
	isl_pw_multi_aff *iter;	/* schedule -> instance */
	isl_set *dom;		/* executed instances */
} stmt_ctx;

/* The AST expression of access `acc` (keep; statement -> T<t>). */
static __isl_give isl_ast_expr *access_expr(cg_kernel *cg,
					    const stmt_ctx *sc,
					    __isl_keep isl_map *acc, int t,
					    isl_pw_multi_aff **sched)
{
	isl_pw_multi_aff *pma = isl_pw_multi_aff_from_map(isl_map_copy(acc));

	pma = isl_pw_multi_aff_pullback_multi_aff(pma,
						  isl_multi_aff_copy(sc->proj));
	if (cg->arr[t].local)
		pma = localize(cg, t, pma, sc->dom);
	pma = isl_pw_multi_aff_pullback_pw_multi_aff(pma,
		isl_pw_multi_aff_copy(sc->iter));
	cg->arr[t].used = true;
	*sched = isl_pw_multi_aff_copy(pma);
	return isl_ast_build_access_from_pw_multi_aff(sc->build, pma);
}

/* Fills the statement's expressions; false on an isl failure. */
static bool stmt_exprs(cg_kernel *cg, cg_stmt *st, const stmt_ctx *sc)
{
	const fl_poly_stmt *ps = st->ps;

	st->write = access_expr(cg, sc, ps->write, st->op->out[0],
				&st->wsched);
	if (!st->write)
		return false;
	for (int r = 0; r < ps->n_reads; r++) {
		if (!ps->reads[r].exact) {
			cg->arr[read_tensor(st->op, &ps->reads[r])].used = true;
			continue;
		}
		st->reads[r] = access_expr(cg, sc, ps->reads[r].access,
					   read_tensor(st->op, &ps->reads[r]),
					   &st->rsched[r]);
		if (!st->reads[r])
			return false;
	}
	if (st->op->kind == FL_OP_GATHER || st->op->kind == FL_OP_RESHAPE) {
		isl_pw_multi_aff *id = isl_pw_multi_aff_from_multi_aff(
			isl_multi_aff_copy(sc->proj));

		id = isl_pw_multi_aff_pullback_pw_multi_aff(id,
			isl_pw_multi_aff_copy(sc->iter));
		st->iters = isl_ast_build_access_from_pw_multi_aff(sc->build,
								   id);
		return st->iters != NULL;
	}
	return true;
}

static void stmt_free(cg_stmt *st)
{
	isl_ast_expr_free(st->write);
	isl_ast_expr_free(st->iters);
	isl_pw_multi_aff_free(st->wsched);
	if (st->reads)
		for (int r = 0; r < st->ps->n_reads; r++)
			isl_ast_expr_free(st->reads[r]);
	if (st->rsched)
		for (int r = 0; r < st->ps->n_reads; r++)
			isl_pw_multi_aff_free(st->rsched[r]);
	free(st->reads);
	free(st->rsched);
	free(st);
}

/* The statement called by user node `node`, with its poly description;
 * NULL (and the kernel failed) when it is not one of the kernel's. */
static cg_stmt *stmt_lookup(cg_kernel *cg, __isl_keep isl_ast_node *node)
{
	isl_ast_expr *call = isl_ast_node_user_get_expr(node);
	isl_ast_expr *fn = isl_ast_expr_op_get_arg(call, 0);
	isl_id *id = isl_ast_expr_get_id(fn);
	const char *name = isl_id_get_name(id);
	const fl_poly_op *po;
	int op = -1, k = -1;
	cg_stmt *st = NULL;

	if (name && parse_stmt_name(name, &op, &k) == 0 &&
	    (po = poly_of(cg, op)) && k >= 0 && k < po->n_stmts) {
		st = calloc(1, sizeof *st);
		if (st) {
			st->acc = -1;
			st->reads = calloc((size_t)po->stmts[k].n_reads + 1,
					   sizeof *st->reads);
			st->rsched = calloc((size_t)po->stmts[k].n_reads + 1,
					    sizeof *st->rsched);
		}
		if (st && st->reads && st->rsched) {
			snprintf(st->name, sizeof st->name, "%s", name);
			st->op = &cg->g->ops[op];
			st->ps = &po->stmts[k];
		} else if (st) {
			free(st->reads);
			free(st->rsched);
			free(st);
			st = NULL;
		}
	}
	if (!st)
		cg_fail(cg, name ? "statement of an op outside the kernel, "
			"or out of memory" : "unnamed statement");
	isl_id_free(id);
	isl_ast_expr_free(fn);
	isl_ast_expr_free(call);
	return st;
}

/* Builds the statement-context of the user node from the build's
 * schedule; false on failure. */
static bool stmt_context(const cg_stmt *st, isl_ast_build *build,
			 stmt_ctx *sc)
{
	isl_map *sched = isl_map_from_union_map(isl_ast_build_get_schedule(build));
	isl_space *inst = isl_space_domain(isl_map_get_space(sched));
	isl_size n_inst = isl_space_dim(inst, isl_dim_set);
	int n_extra = n_inst - isl_set_dim(st->ps->domain, isl_dim_set);

	sc->build = build;
	sc->dom = isl_map_domain(isl_map_copy(sched));
	sc->iter = isl_pw_multi_aff_from_map(isl_map_reverse(sched));
	if (n_inst < 0 || n_extra < 0 || !sc->dom || !sc->iter) {
		isl_space_free(inst);
		return false;
	}
	sc->proj = isl_multi_aff_project_out_map(inst, isl_dim_set, 0,
						 (unsigned)n_extra);
	sc->proj = isl_multi_aff_set_tuple_id(sc->proj, isl_dim_out,
		isl_set_get_tuple_id(st->ps->domain));
	return sc->proj != NULL;
}

static __isl_give isl_ast_node *at_domain(__isl_take isl_ast_node *node,
					  __isl_keep isl_ast_build *build,
					  void *user)
{
	cg_kernel *cg = user;
	stmt_ctx sc = {NULL, NULL, NULL, NULL};
	cg_stmt *st = stmt_lookup(cg, node);
	bool ok;

	if (!st)
		return node;
	st->loop = cg->cur;
	st->next = cg->stmts;
	cg->stmts = st;
	ok = stmt_context(st, build, &sc) && stmt_exprs(cg, st, &sc);
	isl_multi_aff_free(sc.proj);
	isl_pw_multi_aff_free(sc.iter);
	isl_set_free(sc.dom);
	if (!ok) {
		cg_fail(cg, "could not build the access expressions of a "
			"statement");
		return node;
	}
	return isl_ast_node_set_annotation(node,
					   isl_id_alloc(cg->ctx, "fl_stmt", st));
}

/* ---- loops and marks ------------------------------------------------ */

/* Every for node gets a cg_loop; while its body is built, statements see
 * it as their innermost loop (isl calls before_each_for, builds the
 * body, then calls after_each_for). */
static __isl_give isl_id *before_for(__isl_keep isl_ast_build *build,
				     void *user)
{
	cg_kernel *cg = user;
	cg_loop *l = calloc(1, sizeof *l);

	(void)build;
	if (!l) {
		cg_fail(cg, "out of memory");
		return isl_id_alloc(cg->ctx, "fl_loop", NULL);
	}
	l->depth = -1;
	l->parent = cg->cur;
	l->next = cg->loops;
	cg->loops = l;
	cg->cur = l;
	return isl_id_alloc(cg->ctx, "fl_loop", l);
}

static cg_loop *loop_of(__isl_keep isl_ast_node *node)
{
	isl_id *id = isl_ast_node_get_annotation(node);
	cg_loop *l = id ? isl_id_get_user(id) : NULL;

	isl_id_free(id);
	return l;
}

/* Schedule depth of a for node from its iterator name "c<depth>". */
static int iterator_depth(__isl_keep isl_ast_node *node)
{
	isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
	isl_id *id = isl_ast_expr_get_id(it);
	const char *name = id ? isl_id_get_name(id) : NULL;
	int d = -1, n = 0;

	if (!name || sscanf(name, "c%d%n", &d, &n) != 1 || name[n])
		d = -1;
	isl_id_free(id);
	isl_ast_expr_free(it);
	return d;
}

static __isl_give isl_ast_node *after_for(__isl_take isl_ast_node *node,
					  __isl_keep isl_ast_build *build,
					  void *user)
{
	cg_kernel *cg = user;
	cg_loop *l = loop_of(node);

	(void)build;
	if (l) {
		l->depth = iterator_depth(node);
		cg->cur = l->parent;
	}
	return node;
}

/* Flags the loop directly under an "fl_par" mark (through an if without
 * else) when it runs one of the band's coincident members. */
static void flag_parallel(__isl_keep isl_ast_node *child, const par_info *pi)
{
	isl_ast_node *n = isl_ast_node_copy(child);
	cg_loop *l;

	while (n && isl_ast_node_get_type(n) == isl_ast_node_if &&
	       isl_ast_node_if_has_else_node(n) == isl_bool_false) {
		isl_ast_node *then = isl_ast_node_if_get_then_node(n);

		isl_ast_node_free(n);
		n = then;
	}
	if (n && isl_ast_node_get_type(n) == isl_ast_node_for &&
	    isl_ast_node_for_is_degenerate(n) == isl_bool_false) {
		l = loop_of(n);
		if (l && l->depth >= pi->depth &&
		    l->depth < pi->depth + pi->ncoinc)
			l->parallel = true;
	}
	isl_ast_node_free(n);
}

/* Flags the for loops under an "fl_band" mark that run one of its
 * coincident members (loops of inner bands have larger depths). */
static isl_bool flag_coincident(__isl_keep isl_ast_node *node, void *user)
{
	const band_info *bi = user;
	cg_loop *l;
	int m;

	if (isl_ast_node_get_type(node) != isl_ast_node_for)
		return isl_bool_true;
	l = loop_of(node);
	m = l ? l->depth - bi->depth : -1;
	if (m >= 0 && m < bi->n && bi->coincident[m])
		l->coincident = true;
	return isl_bool_true;
}

/* Every mark is dropped from the AST (its subtree stays); "fl_par" marks
 * flag their loop first, "fl_band" marks the coincident loops. */
static __isl_give isl_ast_node *after_mark(__isl_take isl_ast_node *node,
					   __isl_keep isl_ast_build *build,
					   void *user)
{
	isl_id *id = isl_ast_node_mark_get_id(node);
	isl_ast_node *child = isl_ast_node_mark_get_node(node);

	(void)build;
	(void)user;
	if (id && strcmp(isl_id_get_name(id), "fl_par") == 0 &&
	    isl_id_get_user(id))
		flag_parallel(child, isl_id_get_user(id));
	if (id && strcmp(isl_id_get_name(id), "fl_band") == 0 &&
	    isl_id_get_user(id))
		isl_ast_node_foreach_descendant_top_down(child,
			&flag_coincident, isl_id_get_user(id));
	isl_id_free(id);
	isl_ast_node_free(node);
	return child;
}

/* ---- scopes of tile-local arrays ------------------------------------ */

/* The innermost loop of the tile band (or an enclosing one) around l. */
static cg_loop *tile_scope(cg_loop *l, int tile_end)
{
	for (; l; l = l->parent)
		if (l->depth >= 0 && l->depth < tile_end)
			return l;
	return NULL;
}

static void scope_access(cg_kernel *cg, const cg_stmt *st, int t)
{
	cg_array *a = &cg->arr[t];
	cg_loop *s = tile_scope(st->loop, cg->tile_end);

	if (!a->local)
		return;
	if (!a->scoped) {
		a->scoped = true;
		a->scope = s;
	} else if (a->scope != s) {
		array_fail(cg, t, "its accesses lie under different tile "
			   "loops");
	}
}

/* Every tile-local array gets the loop whose body declares it. */
static void resolve_scopes(cg_kernel *cg)
{
	for (const cg_stmt *st = cg->stmts; st; st = st->next) {
		scope_access(cg, st, st->op->out[0]);
		for (int r = 0; r < st->ps->n_reads; r++)
			scope_access(cg, st, read_tensor(st->op,
							 &st->ps->reads[r]));
	}
}

/* ---- printing statements -------------------------------------------- */

static __isl_give isl_printer *print_access(__isl_take isl_printer *p,
					    const cg_kernel *cg,
					    __isl_keep isl_ast_expr *acc, int t)
{
	isl_size n = isl_ast_expr_op_get_n_arg(acc);
	char name[32];

	snprintf(name, sizeof name, cg->arr[t].local ? "T%d_loc" : "T%d", t);
	p = isl_printer_print_str(p, name);
	if (n <= 1)
		return isl_printer_print_str(p, "[0]");
	for (int i = 1; i < n; i++) {
		isl_ast_expr *e = isl_ast_expr_op_get_arg(acc, i);

		p = isl_printer_print_str(p, "[");
		p = isl_printer_print_ast_expr(p, e);
		p = isl_printer_print_str(p, "]");
		isl_ast_expr_free(e);
	}
	return p;
}

/* The access of the statement's read of op input `input` (-1: its own
 * output), and that tensor. */
static isl_ast_expr *read_of(const cg_stmt *st, int input, int *t)
{
	for (int r = 0; r < st->ps->n_reads; r++)
		if (st->ps->reads[r].input == input && st->reads[r]) {
			*t = read_tensor(st->op, &st->ps->reads[r]);
			return st->reads[r];
		}
	return NULL;
}

/* Prints template `tpl`, where "$<k>" stands for the read of op input k
 * and "$o" for the read of the op's own output. */
static __isl_give isl_printer *print_template(__isl_take isl_printer *p,
					      cg_kernel *cg,
					      const cg_stmt *st,
					      const char *tpl)
{
	char text[256];
	size_t n = 0;

	for (const char *c = tpl; *c; c++) {
		int input, t = -1;
		char *end;
		isl_ast_expr *e;

		if (*c != '$') {
			if (n + 1 >= sizeof text) {
				text[n] = '\0';
				p = isl_printer_print_str(p, text);
				n = 0;
			}
			text[n++] = *c;
			continue;
		}
		text[n] = '\0';
		p = isl_printer_print_str(p, text);
		n = 0;
		if (c[1] == 'o') {
			input = -1;
			end = (char *)c + 2;
		} else {
			input = (int)strtol(c + 1, &end, 10);
		}
		c = end - 1;
		e = read_of(st, input, &t);
		if (!e) {
			cg_fail(cg, "statement body reads an input it has no "
				"access for");
			continue;
		}
		p = print_access(p, cg, e, t);
	}
	text[n] = '\0';
	return isl_printer_print_str(p, text);
}

static const char *role_name(fl_stmt_role r)
{
	switch (r) {
	case FL_STMT_COMPUTE: return "compute";
	case FL_STMT_INIT: return "init";
	case FL_STMT_UPDATE: return "update";
	case FL_STMT_FINALIZE: return "finalize";
	case FL_STMT_COPY: return "copy";
	case FL_STMT_FILL: return "fill";
	}
	return "?";
}

/* The right-hand side template of a statement (from the op table; a copy
 * reads its input), formatted into buf when needed; NULL, and the kernel
 * failed, when the table has none. */
static const char *rhs_template(cg_kernel *cg, const cg_stmt *st, char *buf,
				size_t n)
{
	const char *tpl = NULL;
	fl_op_c c;
	char what[96];

	if (st->ps->role == FL_STMT_COPY) {
		snprintf(buf, n, "$%d", st->ps->input);
		return buf;
	}
	c = fl_op_c_templates(st->op, buf, n);
	switch (st->ps->role) {
	case FL_STMT_COMPUTE: tpl = c.compute; break;
	case FL_STMT_INIT: tpl = c.init; break;
	case FL_STMT_UPDATE: tpl = c.update; break;
	case FL_STMT_FINALIZE: tpl = c.finalize; break;
	case FL_STMT_FILL: tpl = c.fill; break;
	case FL_STMT_COPY: break;
	}
	if (!tpl) {
		snprintf(what, sizeof what, "op %s has no C template for its "
			 "%s statement", fl_op_kind_name(st->op->kind),
			 role_name(st->ps->role));
		cg_fail(cg, what);
	}
	return tpl;
}

/* gather: out[i] = x[i_0.., clamp(floor(idx[i_axis..])), ..]. */
static __isl_give isl_printer *print_gather(__isl_take isl_printer *p,
					    cg_kernel *cg, const cg_stmt *st)
{
	const fl_op *op = st->op;
	const fl_shape *xs = &cg->g->tensors[op->in[0]].shape;
	int rq = cg->g->tensors[op->in[1]].shape.rank, axis;
	int64_t a = 0;
	char buf[128];

	fl_attr_int(&op->attrs, "axis", 0, &a, NULL);
	axis = fl_axis_normalize(a, xs->rank);
	p = isl_printer_print_str(p, "{ const float fl_v = floorf(");
	p = print_template(p, cg, st, "$1");
	snprintf(buf, sizeof buf, "); const int fl_j = !(fl_v >= 0.0f) ? 0 : "
		 "fl_v >= %lld.0f ? %lld : (int)fl_v; ",
		 (long long)(xs->dim[axis] - 1), (long long)(xs->dim[axis] - 1));
	p = isl_printer_print_str(p, buf);
	p = print_access(p, cg, st->write, op->out[0]);
	snprintf(buf, sizeof buf, " = T%d", op->in[0]);
	p = isl_printer_print_str(p, buf);
	for (int d = 0; d < xs->rank; d++) {
		int src = d < axis ? d : d + rq - 1;
		isl_ast_expr *e;

		if (d == axis) {
			p = isl_printer_print_str(p, "[fl_j]");
			continue;
		}
		e = isl_ast_expr_op_get_arg(st->iters, src + 1);
		p = isl_printer_print_str(p, "[");
		p = isl_printer_print_ast_expr(p, e);
		p = isl_printer_print_str(p, "]");
		isl_ast_expr_free(e);
	}
	return isl_printer_print_str(p, "; }");
}

/* reshape of a global input: the same row-major element, read through
 * the flat buffer at the output's linear index -- isl's subscripts for
 * it need a division and a modulo per dimension. */
static __isl_give isl_printer *print_reshape(__isl_take isl_printer *p,
					     cg_kernel *cg, const cg_stmt *st)
{
	const fl_shape *so = &cg->g->tensors[st->op->out[0]].shape;
	int64_t strides[FL_MAX_RANK];
	char buf[64];

	fl_shape_strides(so, strides);
	p = print_access(p, cg, st->write, st->op->out[0]);
	snprintf(buf, sizeof buf, " = ((const float *)T%d)[", st->op->in[0]);
	p = isl_printer_print_str(p, buf);
	if (so->rank == 0)
		p = isl_printer_print_str(p, "0");
	for (int d = 0; d < so->rank; d++) {
		isl_ast_expr *e = isl_ast_expr_op_get_arg(st->iters, d + 1);

		p = isl_printer_print_str(p, d ? " + (long)(" : "(long)(");
		p = isl_printer_print_ast_expr(p, e);
		snprintf(buf, sizeof buf, ") * %lld", (long long)strides[d]);
		p = isl_printer_print_str(p, buf);
		isl_ast_expr_free(e);
	}
	return isl_printer_print_str(p, "];");
}

static __isl_give isl_printer *print_stmt(__isl_take isl_printer *p,
					  cg_kernel *cg, const cg_stmt *st)
{
	char tpl[64], note[96], acc[48];

	if (st->acc >= 0 && st->ps->role == FL_STMT_INIT) {
		p = isl_printer_print_str(p, "(void)0;");	/* hoisted */
	} else if (st->acc >= 0) {
		snprintf(acc, sizeof acc, "fl_acc%d = fl_acc%d + ", st->acc,
			 st->acc);
		p = isl_printer_print_str(p, acc);
		p = print_template(p, cg, st, "$0");
		p = isl_printer_print_str(p, ";");
	} else if (st->op->kind == FL_OP_GATHER) {
		p = print_gather(p, cg, st);
	} else if (st->op->kind == FL_OP_RESHAPE &&
		   !cg->arr[st->op->in[0]].local) {
		p = print_reshape(p, cg, st);
	} else {
		const char *rhs = rhs_template(cg, st, tpl, sizeof tpl);

		p = print_access(p, cg, st->write, st->op->out[0]);
		p = isl_printer_print_str(p, " = ");
		if (rhs)
			p = print_template(p, cg, st, rhs);
		p = isl_printer_print_str(p, ";");
	}
	snprintf(note, sizeof note, "  /* %s: %s %s */", st->name,
		 fl_op_kind_name(st->op->kind), role_name(st->ps->role));
	return isl_printer_print_str(p, note);
}

static __isl_give isl_printer *print_user(__isl_take isl_printer *p,
					  __isl_take isl_ast_print_options *o,
					  __isl_keep isl_ast_node *node,
					  void *user)
{
	cg_kernel *cg = user;
	isl_id *id = isl_ast_node_get_annotation(node);
	cg_stmt *st = id ? isl_id_get_user(id) : NULL;

	isl_id_free(id);
	isl_ast_print_options_free(o);
	p = isl_printer_start_line(p);
	if (st)
		p = print_stmt(p, cg, st);
	else
		p = isl_printer_print_str(p, ";");
	return isl_printer_end_line(p);
}

/* ---- printing loops ------------------------------------------------- */

static __isl_give isl_printer *line(__isl_take isl_printer *p,
				    const char *s)
{
	p = isl_printer_start_line(p);
	p = isl_printer_print_str(p, s);
	return isl_printer_end_line(p);
}

/* Tile-local arrays above this size go to the heap (malloc'd when the
 * tile starts, freed when it ends): a few of MICRO 2020's 64x34x34
 * buffers already take a megabyte, more than an OpenMP worker's stack
 * may hold. */
#define LOCAL_STACK_MAX (64 << 10)

static int64_t local_elems(const cg_array *a)
{
	int64_t n = 1;

	for (int d = 0; d < a->rank; d++)
		n *= a->size[d];
	return n;
}

static bool local_on_heap(const cg_array *a)
{
	return local_elems(a) * (int64_t)sizeof(float) > LOCAL_STACK_MAX;
}

static bool declared_in(const cg_array *a, const cg_loop *scope)
{
	return a->local && a->used && a->scope == scope;
}

/* "float T5_loc[6][6];" or, on the heap,
 * "float (*T5_loc)[6] = malloc(sizeof(float) * 36);". */
static __isl_give isl_printer *print_local(__isl_take isl_printer *p,
					   const cg_array *a, int t)
{
	char buf[96];
	bool heap = local_on_heap(a);

	p = isl_printer_start_line(p);
	if (heap && a->rank >= 2)
		snprintf(buf, sizeof buf, "float (*T%d_loc)", t);
	else
		snprintf(buf, sizeof buf, heap ? "float *T%d_loc" : "float T%d_loc",
			 t);
	p = isl_printer_print_str(p, buf);
	for (int d = heap ? 1 : 0; d < a->rank; d++) {
		snprintf(buf, sizeof buf, "[%lld]", (long long)a->size[d]);
		p = isl_printer_print_str(p, buf);
	}
	if (a->rank == 0 && !heap)
		p = isl_printer_print_str(p, "[1]");
	if (heap) {
		snprintf(buf, sizeof buf, " = malloc(sizeof(float) * %lld)",
			 (long long)local_elems(a));
		p = isl_printer_print_str(p, buf);
	}
	p = isl_printer_print_str(p, ";");
	return isl_printer_end_line(p);
}

/* Declarations of the tile-local arrays whose scope is `scope`. */
static __isl_give isl_printer *print_locals(__isl_take isl_printer *p,
					    const cg_kernel *cg,
					    const cg_loop *scope)
{
	for (int t = 0; t < cg->g->n_tensors; t++)
		if (declared_in(&cg->arr[t], scope))
			p = print_local(p, &cg->arr[t], t);
	return p;
}

/* The frees of the heap arrays declared for `scope`. */
static __isl_give isl_printer *print_frees(__isl_take isl_printer *p,
					   const cg_kernel *cg,
					   const cg_loop *scope)
{
	for (int t = 0; t < cg->g->n_tensors; t++) {
		char buf[48];

		if (!declared_in(&cg->arr[t], scope) ||
		    !local_on_heap(&cg->arr[t]))
			continue;
		snprintf(buf, sizeof buf, "free(T%d_loc);", t);
		p = line(p, buf);
	}
	return p;
}

/* The children of a block one by one (no extra braces), else the node. */
static __isl_give isl_printer *print_body(__isl_take isl_printer *p,
					  __isl_keep isl_ast_node *body,
					  __isl_keep isl_ast_print_options *o)
{
	isl_ast_node_list *list;
	isl_size n;

	if (isl_ast_node_get_type(body) != isl_ast_node_block)
		return isl_ast_node_print(body, p,
					  isl_ast_print_options_copy(o));
	list = isl_ast_node_block_get_children(body);
	n = isl_ast_node_list_n_ast_node(list);
	for (int i = 0; i < n; i++) {
		isl_ast_node *c = isl_ast_node_list_get_at(list, i);

		p = isl_ast_node_print(c, p, isl_ast_print_options_copy(o));
		isl_ast_node_free(c);
	}
	isl_ast_node_list_free(list);
	return p;
}

/* OpenMP needs "iterator relop bound": isl's default for loops have it,
 * but check rather than emit a pragma the compiler rejects. */
static bool canonical_cond(__isl_keep isl_ast_node *node)
{
	isl_ast_expr *cond = isl_ast_node_for_get_cond(node);
	isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
	isl_ast_expr *lhs = NULL;
	bool ok = false;

	if (isl_ast_expr_get_type(cond) == isl_ast_expr_op) {
		enum isl_ast_expr_op_type t = isl_ast_expr_op_get_type(cond);

		if (t == isl_ast_expr_op_le || t == isl_ast_expr_op_lt) {
			lhs = isl_ast_expr_op_get_arg(cond, 0);
			ok = isl_ast_expr_is_equal(lhs, it) == isl_bool_true;
		}
	}
	isl_ast_expr_free(lhs);
	isl_ast_expr_free(it);
	isl_ast_expr_free(cond);
	return ok;
}

static isl_bool find_for(__isl_keep isl_ast_node *node, void *user)
{
	if (isl_ast_node_get_type(node) != isl_ast_node_for)
		return isl_bool_true;
	*(bool *)user = true;
	return isl_bool_error;	/* found: stop */
}

/* Whether the body of for node `node` has no loop of its own. */
static bool innermost(__isl_keep isl_ast_node *node)
{
	isl_ast_node *body = isl_ast_node_for_get_body(node);
	bool inner = false;

	isl_ast_node_foreach_descendant_top_down(body, &find_for, &inner);
	isl_ast_node_free(body);
	return !inner;
}

static __isl_give isl_printer *print_expr_str(__isl_take isl_printer *p,
					      isl_ast_expr *e /* taken */)
{
	p = isl_printer_print_ast_expr(p, e);
	isl_ast_expr_free(e);
	return p;
}

/* ---- scalar accumulators for sum reductions ------------------------ */

/* An innermost loop whose body updates one element of a sum in every
 * iteration (the element does not depend on the loop's iterator) keeps
 * the sum in a scalar fl_acc<k> instead:
 *   { float fl_acc0 = T9[c1][0];
 *     #pragma omp simd reduction(+:fl_acc0)
 *     for (..) { ..; fl_acc0 = fl_acc0 + T8[..][c2]; }
 *     T9[c1][0] = fl_acc0; }
 * so gcc may vectorise the loop (a float sum into memory it may not
 * reassociate).  The init of the same element, when the body runs it in
 * the loop's first iteration only, moves out as the scalar's initial
 * value. */
#define ACC_MAX_STMTS 64
#define ACC_MAX 8

typedef struct acc_body {
	int n;
	cg_stmt *st[ACC_MAX_STMTS];
	bool guarded[ACC_MAX_STMTS];	/* under an if in the body */
	int n_acc;
	cg_stmt *upd[ACC_MAX];		/* the accumulated updates */
	cg_stmt *init[ACC_MAX];		/* their hoisted inits, or NULL */
} acc_body;

static cg_stmt *stmt_of(__isl_keep isl_ast_node *node)
{
	isl_id *id = isl_ast_node_get_annotation(node);
	cg_stmt *st = id ? isl_id_get_user(id) : NULL;

	isl_id_free(id);
	return st;
}

/* Collects a statement of the body: a user node, or one under an if
 * without else; false for anything else. */
static bool acc_collect(acc_body *b, __isl_keep isl_ast_node *node,
			bool guarded)
{
	isl_ast_node *then;
	bool ok;

	if (isl_ast_node_get_type(node) == isl_ast_node_if) {
		if (isl_ast_node_if_has_else_node(node) != isl_bool_false)
			return false;
		then = isl_ast_node_if_get_then_node(node);
		ok = then && acc_collect(b, then, true);
		isl_ast_node_free(then);
		return ok;
	}
	if (isl_ast_node_get_type(node) != isl_ast_node_user ||
	    b->n >= ACC_MAX_STMTS)
		return false;
	b->st[b->n] = stmt_of(node);
	b->guarded[b->n] = guarded;
	return b->st[b->n++] != NULL;
}

static bool acc_collect_body(acc_body *b, __isl_keep isl_ast_node *body)
{
	isl_ast_node_list *list;
	isl_size n;
	bool ok = true;

	if (isl_ast_node_get_type(body) != isl_ast_node_block)
		return acc_collect(b, body, false);
	list = isl_ast_node_block_get_children(body);
	n = isl_ast_node_list_n_ast_node(list);
	if (n < 0)
		ok = false;
	for (int i = 0; ok && i < n; i++) {
		isl_ast_node *c = isl_ast_node_list_get_at(list, i);

		ok = c && acc_collect(b, c, false);
		isl_ast_node_free(c);
	}
	isl_ast_node_list_free(list);
	return ok;
}

static isl_stat single_piece(__isl_take isl_set *set,
			     __isl_take isl_multi_aff *ma, void *user)
{
	isl_multi_aff **out = user;

	isl_set_free(set);
	isl_multi_aff_free(*out);
	*out = ma;
	return isl_stat_ok;
}

/* The one affine function of schedule -> element (keep), or NULL. */
static __isl_give isl_multi_aff *sole_function(
	__isl_keep isl_pw_multi_aff *pma)
{
	isl_pw_multi_aff *c;
	isl_multi_aff *ma = NULL;

	if (!pma)
		return NULL;
	c = isl_pw_multi_aff_coalesce(isl_pw_multi_aff_copy(pma));
	if (isl_pw_multi_aff_n_piece(c) == 1)
		isl_pw_multi_aff_foreach_piece(c, &single_piece, &ma);
	isl_pw_multi_aff_free(c);
	return ma;
}

/* Whether the element accessed does not involve schedule dimension d. */
static bool invariant_in(__isl_keep isl_pw_multi_aff *pma, int d)
{
	isl_multi_aff *ma = sole_function(pma);
	isl_size n = isl_multi_aff_dim(ma, isl_dim_in);
	bool inv = ma && n > d &&
		   isl_multi_aff_involves_dims(ma, isl_dim_in, (unsigned)d,
					       1) == isl_bool_false;

	isl_multi_aff_free(ma);
	return inv;
}

/* The executed schedule points of pma's domain on dimensions 0..d. */
static __isl_give isl_set *points_to(__isl_keep isl_pw_multi_aff *pma,
				     int d)
{
	isl_set *dom = isl_pw_multi_aff_domain(isl_pw_multi_aff_copy(pma));
	isl_size n = isl_set_dim(dom, isl_dim_set);

	if (n < 0 || n <= d)
		return isl_set_free(dom);
	dom = isl_set_project_out(dom, isl_dim_set, (unsigned)d + 1,
				  (unsigned)(n - d - 1));
	return isl_set_reset_tuple_id(dom);
}

/* Whether init runs exactly in the first iteration of loop d of each
 * run of upd, and writes the same element. */
static bool init_hoists(const cg_stmt *init, const cg_stmt *upd, int d)
{
	isl_multi_aff *fi = sole_function(init->wsched);
	isl_multi_aff *fu = sole_function(upd->wsched);
	isl_set *pi, *pu;
	isl_map *m;
	bool ok;

	ok = fi && fu && isl_multi_aff_plain_is_equal(fi, fu) == isl_bool_true;
	isl_multi_aff_free(fi);
	isl_multi_aff_free(fu);
	if (!ok)
		return false;
	pi = points_to(init->wsched, d);
	pu = points_to(upd->wsched, d);
	m = isl_map_from_domain(pu);
	m = isl_map_move_dims(m, isl_dim_out, 0, isl_dim_in, (unsigned)d, 1);
	m = isl_map_lexmin(m);
	pu = isl_set_flatten(isl_map_wrap(m));
	ok = pi && pu && isl_set_is_equal(pi, pu) == isl_bool_true;
	isl_set_free(pi);
	isl_set_free(pu);
	return ok;
}

static bool accesses_tensor(const cg_stmt *st, int t)
{
	if (st->op->out[0] == t)
		return true;
	for (int r = 0; r < st->ps->n_reads; r++)
		if (read_tensor(st->op, &st->ps->reads[r]) == t)
			return true;
	return false;
}

/* Whether the update (a sum whose element is invariant in loop d) can
 * use an accumulator: no other statement of the body touches its
 * tensor, except its own init hoisted out of the loop (into *init). */
static bool acc_candidate(const acc_body *b, int i, int d, cg_stmt **init)
{
	cg_stmt *u = b->st[i];
	int t = u->op->out[0];

	*init = NULL;
	if (u->op->kind != FL_OP_REDUCE_SUM || u->ps->role != FL_STMT_UPDATE ||
	    b->guarded[i] || !u->wsched || !invariant_in(u->wsched, d))
		return false;
	for (int r = 0; r < u->ps->n_reads; r++)
		if (u->ps->reads[r].input >= 0 &&
		    read_tensor(u->op, &u->ps->reads[r]) == t)
			return false;
	for (int j = 0; j < b->n; j++) {
		cg_stmt *s = b->st[j];

		if (j == i || !accesses_tensor(s, t))
			continue;
		if (*init || j > i || s->op != u->op ||
		    s->ps->role != FL_STMT_INIT || !s->wsched ||
		    !init_hoists(s, u, d))
			return false;
		*init = s;
	}
	return true;
}

/* Schedule dimensions 0..d -> element, ids reset. */
static __isl_give isl_map *sched_access(__isl_keep isl_pw_multi_aff *pma,
					int d)
{
	isl_map *m = isl_map_from_pw_multi_aff(isl_pw_multi_aff_copy(pma));
	isl_size n = isl_map_dim(m, isl_dim_in);

	if (n < 0 || n <= d)
		return isl_map_free(m);
	m = isl_map_project_out(m, isl_dim_in, (unsigned)d + 1,
				(unsigned)(n - d - 1));
	m = isl_map_reset_tuple_id(m, isl_dim_in);
	return isl_map_reset_tuple_id(m, isl_dim_out);
}

/* Whether write w and access a (schedule -> element) meet in different
 * iterations of loop d within one iteration of the loops around it. */
static bool carried(__isl_keep isl_pw_multi_aff *w,
		    __isl_keep isl_pw_multi_aff *a, int d)
{
	isl_map *mw = sched_access(w, d), *ma = sched_access(a, d);
	isl_map *r, *lt, *gt;
	isl_bool empty;

	r = isl_map_apply_range(mw, isl_map_reverse(ma));
	for (int i = 0; i < d; i++)
		r = isl_map_equate(r, isl_dim_in, i, isl_dim_out, i);
	lt = isl_map_order_lt(isl_map_copy(r), isl_dim_in, d, isl_dim_out, d);
	gt = isl_map_order_gt(r, isl_dim_in, d, isl_dim_out, d);
	r = isl_map_union(lt, gt);
	empty = isl_map_is_empty(r);
	isl_map_free(r);
	return empty != isl_bool_true;
}

static bool acc_taken(const acc_body *b, const cg_stmt *st)
{
	for (int k = 0; k < b->n_acc; k++)
		if (b->upd[k] == st || b->init[k] == st)
			return true;
	return false;
}

/* Whether, with the accumulated sums kept in scalars, no dependence is
 * carried by loop d among the body's remaining accesses. */
static bool no_carried(const acc_body *b, int d)
{
	for (int i = 0; i < b->n; i++) {
		const cg_stmt *w = b->st[i];
		int t = w->op->out[0];

		if (acc_taken(b, w))
			continue;
		if (!w->wsched)
			return false;
		for (int j = 0; j < b->n; j++) {
			const cg_stmt *s = b->st[j];

			if (acc_taken(b, s) || !accesses_tensor(s, t))
				continue;
			if (s->op->out[0] == t &&
			    (!s->wsched || carried(w->wsched, s->wsched, d)))
				return false;
			for (int r = 0; r < s->ps->n_reads; r++)
				if (read_tensor(s->op, &s->ps->reads[r]) == t &&
				    (!s->rsched[r] ||
				     carried(w->wsched, s->rsched[r], d)))
					return false;
		}
	}
	for (int i = 0; i < b->n; i++)	/* may-reads: unknown elements */
		for (int r = 0; r < b->st[i]->ps->n_reads; r++)
			if (!b->st[i]->rsched[r])
				return false;
	return true;
}

/* Fills b->upd/init for the innermost loop (depth d) with body `body`;
 * the number of accumulators. */
static int plan_accumulators(acc_body *b, __isl_keep isl_ast_node *body,
			     int d)
{
	b->n = b->n_acc = 0;
	if (d < 0 || !acc_collect_body(b, body))
		return 0;
	for (int i = 0; i < b->n && b->n_acc < ACC_MAX; i++) {
		cg_stmt *init;

		if (!acc_candidate(b, i, d, &init))
			continue;
		b->upd[b->n_acc] = b->st[i];
		b->init[b->n_acc++] = init;
	}
	if (b->n_acc && !no_carried(b, d))
		b->n_acc = 0;
	return b->n_acc;
}

/* "{ float fl_acc0 = <element or identity>; ...", before the loop. */
static __isl_give isl_printer *print_acc_open(__isl_take isl_printer *p,
					      cg_kernel *cg,
					      const acc_body *b)
{
	char buf[160];

	p = line(p, "{");
	p = isl_printer_indent(p, 2);
	for (int k = 0; k < b->n_acc; k++) {
		const cg_stmt *u = b->upd[k];

		p = isl_printer_start_line(p);
		snprintf(buf, sizeof buf, "float fl_acc%d = ", k);
		p = isl_printer_print_str(p, buf);
		if (b->init[k])
			p = isl_printer_print_str(p,
				fl_op_c_templates(u->op, buf, sizeof buf).init);
		else
			p = print_access(p, cg, u->write, u->op->out[0]);
		p = isl_printer_print_str(p, ";");
		p = isl_printer_end_line(p);
	}
	p = isl_printer_start_line(p);
	p = isl_printer_print_str(p, "#pragma omp simd reduction(+:");
	for (int k = 0; k < b->n_acc; k++) {
		snprintf(buf, sizeof buf, "%sfl_acc%d", k ? ", " : "", k);
		p = isl_printer_print_str(p, buf);
	}
	p = isl_printer_print_str(p, ")");
	return isl_printer_end_line(p);
}

/* "<element> = fl_acc0; ... }", after the loop. */
static __isl_give isl_printer *print_acc_close(__isl_take isl_printer *p,
					       cg_kernel *cg,
					       const acc_body *b)
{
	char buf[48];

	for (int k = 0; k < b->n_acc; k++) {
		const cg_stmt *u = b->upd[k];

		p = isl_printer_start_line(p);
		p = print_access(p, cg, u->write, u->op->out[0]);
		snprintf(buf, sizeof buf, " = fl_acc%d;", k);
		p = isl_printer_print_str(p, buf);
		p = isl_printer_end_line(p);
	}
	p = isl_printer_indent(p, -2);
	return line(p, "}");
}

/* for (int c = init; cond; c += inc) { locals; body }, with the pragma
 * on the outermost parallel loop; a degenerate loop is a block that
 * sets its iterator once. */
static __isl_give isl_printer *print_for(__isl_take isl_printer *p,
					 __isl_take isl_ast_print_options *o,
					 __isl_keep isl_ast_node *node,
					 void *user)
{
	cg_kernel *cg = user;
	cg_loop *l = loop_of(node);
	bool degenerate = isl_ast_node_for_is_degenerate(node) == isl_bool_true;
	bool pragma = l && l->parallel && !degenerate && cg->par_open == 0 &&
		      canonical_cond(node);
	bool simd = l && l->coincident && !degenerate && innermost(node) &&
		    canonical_cond(node);
	isl_ast_node *body = isl_ast_node_for_get_body(node);
	isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
	acc_body *acc = NULL;

	if (l && !pragma && !degenerate && innermost(node) &&
	    canonical_cond(node)) {
		acc = malloc(sizeof *acc);
		if (acc && !plan_accumulators(acc, body, l->depth)) {
			free(acc);
			acc = NULL;
		}
	}
	for (int k = 0; acc && k < acc->n_acc; k++) {
		acc->upd[k]->acc = k;
		if (acc->init[k])
			acc->init[k]->acc = k;
	}
	if (acc)
		p = print_acc_open(p, cg, acc);
	else if (pragma)
		p = line(p, simd ? "#pragma omp parallel for simd" :
			 "#pragma omp parallel for");
	else if (simd)
		p = line(p, "#pragma omp simd");
	p = isl_printer_start_line(p);
	if (degenerate) {
		p = isl_printer_print_str(p, "{ const int ");
		p = isl_printer_print_ast_expr(p, it);
		p = isl_printer_print_str(p, " = ");
		p = print_expr_str(p, isl_ast_node_for_get_init(node));
		p = isl_printer_print_str(p, "; (void)");
		p = isl_printer_print_ast_expr(p, it);
		p = isl_printer_print_str(p, ";");
	} else {
		p = isl_printer_print_str(p, "for (int ");
		p = isl_printer_print_ast_expr(p, it);
		p = isl_printer_print_str(p, " = ");
		p = print_expr_str(p, isl_ast_node_for_get_init(node));
		p = isl_printer_print_str(p, "; ");
		p = print_expr_str(p, isl_ast_node_for_get_cond(node));
		p = isl_printer_print_str(p, "; ");
		p = isl_printer_print_ast_expr(p, it);
		p = isl_printer_print_str(p, " += ");
		p = print_expr_str(p, isl_ast_node_for_get_inc(node));
		p = isl_printer_print_str(p, ") {");
	}
	p = isl_printer_end_line(p);
	p = isl_printer_indent(p, 2);
	if (l)
		p = print_locals(p, cg, l);
	cg->par_open += pragma;
	p = print_body(p, body, o);
	cg->par_open -= pragma;
	if (l)
		p = print_frees(p, cg, l);
	p = isl_printer_indent(p, -2);
	p = line(p, "}");
	if (acc) {
		p = print_acc_close(p, cg, acc);
		for (int k = 0; k < acc->n_acc; k++) {
			acc->upd[k]->acc = -1;
			if (acc->init[k])
				acc->init[k]->acc = -1;
		}
		free(acc);
	}
	isl_ast_expr_free(it);
	isl_ast_node_free(body);
	isl_ast_print_options_free(o);
	return p;
}

/* ---- one kernel ------------------------------------------------------ */

static void cg_reset(cg_kernel *cg)
{
	while (cg->stmts) {
		cg_stmt *n = cg->stmts->next;

		stmt_free(cg->stmts);
		cg->stmts = n;
	}
	while (cg->loops) {
		cg_loop *n = cg->loops->next;

		free(cg->loops);
		cg->loops = n;
	}
	cg->cur = NULL;
	for (int t = 0; cg->arr && t < cg->g->n_tensors; t++) {
		isl_multi_aff_free(cg->arr[t].offset);
		memset(&cg->arr[t], 0, sizeof cg->arr[t]);
	}
	cg->par_open = 0;
}

static void cg_clear(cg_kernel *cg)
{
	cg_reset(cg);
	for (int i = 0; cg->poly && i < cg->k->n_ops; i++)
		fl_poly_op_free(cg->poly[i]);
	free(cg->poly);
	free(cg->arr);
	free(cg->force_global);
	free(cg->why);
}

static __isl_give isl_ast_node *build_ast(cg_kernel *cg)
{
	isl_ast_build *b = isl_ast_build_alloc(cg->ctx);
	isl_schedule *s = prepare_schedule(cg->k->schedule);
	isl_ast_node *ast;

	b = isl_ast_build_set_at_each_domain(b, &at_domain, cg);
	b = isl_ast_build_set_before_each_for(b, &before_for, cg);
	b = isl_ast_build_set_after_each_for(b, &after_for, cg);
	b = isl_ast_build_set_after_each_mark(b, &after_mark, cg);
	ast = isl_ast_build_node_from_schedule(b, s);
	isl_ast_build_free(b);
	if (!ast)
		cg_fail(cg, "isl could not build the AST");
	return ast;
}

/* The body of the kernel function printed from ast (keep). */
static char *print_ast(cg_kernel *cg, __isl_keep isl_ast_node *ast)
{
	isl_printer *p = isl_printer_to_str(cg->ctx);
	isl_ast_print_options *o = isl_ast_print_options_alloc(cg->ctx);
	char *s;

	p = isl_printer_set_output_format(p, ISL_FORMAT_C);
	p = isl_printer_indent(p, 2);
	o = isl_ast_print_options_set_print_user(o, &print_user, cg);
	o = isl_ast_print_options_set_print_for(o, &print_for, cg);
	p = print_locals(p, cg, NULL);
	p = print_body(p, ast, o);
	p = print_frees(p, cg, NULL);
	isl_ast_print_options_free(o);
	s = isl_printer_get_str(p);
	isl_printer_free(p);
	if (!s)
		cg_fail(cg, "isl could not print the AST");
	return s;
}

/* One attempt at the body; returns 1 when some tensor must retry in
 * global memory, 0 with *body set, -1 on failure. */
static int try_body(cg_kernel *cg, char **body)
{
	isl_ast_node *ast;
	bool retry = false;

	cg_reset(cg);
	setup_arrays(cg);
	ast = build_ast(cg);
	if (ast && !cg->failed)
		resolve_scopes(cg);
	for (int t = 0; t < cg->g->n_tensors; t++)
		if (cg->arr[t].failed) {
			cg->force_global[t] = true;
			retry = true;
		}
	if (ast && !cg->failed && !retry)
		*body = print_ast(cg, ast);
	isl_ast_node_free(ast);
	if (cg->failed)
		return -1;
	return retry ? 1 : 0;
}

static bool ident_char(char c, bool first)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (!first && c >= '0' && c <= '9');
}

/* Whether a kernel name from layer 1 can be used as the C name. */
static bool valid_identifier(const char *s)
{
	if (!ident_char(s[0], true))
		return false;
	for (s++; *s; s++)
		if (!ident_char(*s, false))
			return false;
	return true;
}

/* The kernel's C name into buf. */
static const char *kernel_cname(const fl_kernel *k, int index, char *buf,
				size_t n)
{
	if (valid_identifier(k->name))
		snprintf(buf, n, "%s", k->name);
	else
		snprintf(buf, n, "fl_kernel_%d", index);
	return buf;
}

/* The comment above a kernel: its ops with provenance, placements. */
static void kernel_comment(sbuf *out, const fl_graph *g, const fl_kernel *k,
			   const char *cname, const cg_kernel *cg)
{
	char a[160], b[160], c[160];

	sb_printf(out, "/* %s: %d op%s", cname, k->n_ops, k->n_ops == 1 ? "" : "s");
	if (k->group >= 0)
		sb_printf(out, ", micro-graph %d", k->group);
	if (k->n_tile)
		sb_printf(out, ", tiled");
	sb_printf(out, "\n");
	for (int i = 0; i < k->n_ops; i++) {
		const fl_op *op = &g->ops[k->ops[i]];

		fl_sanitize_comment(op->name, a, sizeof a);
		sb_printf(out, " *   op %d \"%s\": %s -> T%d", k->ops[i], a,
			  fl_op_kind_name(op->kind), op->out[0]);
		if (op->prov.origin && strcmp(op->prov.origin, op->name)) {
			fl_sanitize_comment(op->prov.origin, b, sizeof b);
			sb_printf(out, ", from \"%s\"", b);
		}
		if (op->prov.compound) {
			fl_sanitize_comment(op->prov.compound, c, sizeof c);
			sb_printf(out, ", opened from %s", c);
		}
		if (op->prov.rewrite) {
			fl_sanitize_comment(op->prov.rewrite, c, sizeof c);
			sb_printf(out, ", rewritten by %s", c);
		}
		sb_printf(out, "\n");
	}
	for (int t = 0; cg && t < g->n_tensors; t++) {
		const cg_array *ar = &cg->arr[t];

		if (!ar->used || (!ar->local && !cg->why[t][0]))
			continue;
		fl_sanitize_comment(g->tensors[t].name, a, sizeof a);
		if (ar->local)
			sb_printf(out, " *   T%d \"%s\": tile-local\n", t, a);
		else
			sb_printf(out, " *   T%d \"%s\": global memory (%s)\n",
				  t, a, cg->why[t]);
	}
	sb_printf(out, " */\n");
}

/* Pointer declarations of the global tensors the body uses. */
static void global_decls(sbuf *out, const fl_graph *g, const cg_array *arr)
{
	bool any = false;

	for (int t = 0; t < g->n_tensors; t++) {
		const fl_shape *sh = &g->tensors[t].shape;
		const char *q = arr[t].written ? "" : "const ";
		char dims[256] = "";
		size_t n = 0;

		if (!arr[t].used || arr[t].local)
			continue;
		any = true;
		if (sh->rank <= 1) {
			sb_printf(out, "  %sfloat *restrict T%d = bufs[%d];\n",
				  q, t, t);
			continue;
		}
		for (int d = 1; d < sh->rank; d++)
			n += (size_t)snprintf(dims + n, sizeof dims - n, "[%lld]",
					      (long long)sh->dim[d]);
		sb_printf(out, "  %sfloat (*restrict T%d)%s = (%sfloat (*)%s)"
			  "bufs[%d];\n", q, t, dims, q, dims, t);
	}
	if (!any)
		sb_printf(out, "  (void)bufs;\n");
}

/* A custom op: cumsum along the last axis (in double, like the
 * reference) or a copy; rows run in parallel. */
static int custom_kernel(sbuf *out, const fl_graph *g, const fl_op *op,
			 const char *cname, fl_error *err)
{
	const fl_shape *s = &g->tensors[op->in[0]].shape;
	int64_t n = fl_shape_numel(s), len = s->rank ? s->dim[s->rank - 1] : 1;
	const char *fn = "cumsum";

	if (fl_attr_string(&op->attrs, "fn", "cumsum", &fn, err) < 0)
		return -1;
	sb_printf(out, "void %s(float *const *bufs)\n{\n"
		  "  const float *restrict x = bufs[%d];\n"
		  "  float *restrict y = bufs[%d];\n", cname, op->in[0],
		  op->out[0]);
	if (strcmp(fn, "cumsum") == 0)
		sb_printf(out, "#pragma omp parallel for\n"
			  "  for (long r = 0; r < %lldL; r++) {\n"
			  "    double acc = 0.0;\n"
			  "    for (long j = 0; j < %lldL; j++) {\n"
			  "      acc += x[r * %lldL + j];\n"
			  "      y[r * %lldL + j] = (float)acc;\n"
			  "    }\n  }\n}\n\n", (long long)(n / len),
			  (long long)len, (long long)len, (long long)len);
	else
		sb_printf(out, "#pragma omp parallel for\n"
			  "  for (long i = 0; i < %lldL; i++)\n"
			  "    y[i] = x[i];\n}\n\n", (long long)n);
	return 0;
}

static int cg_init(cg_kernel *cg, const fl_program *p, const fl_kernel *k,
		   fl_error *err)
{
	memset(cg, 0, sizeof *cg);
	cg->ctx = p->ctx;
	cg->g = p->graph;
	cg->k = k;
	cg->err = err;
	isl_ctx_reset_error(p->ctx);	/* so a failure reports its own */
	cg->poly = calloc((size_t)k->n_ops + 1, sizeof *cg->poly);
	cg->arr = calloc((size_t)p->graph->n_tensors + 1, sizeof *cg->arr);
	cg->force_global = calloc((size_t)p->graph->n_tensors + 1, sizeof(bool));
	cg->why = calloc((size_t)p->graph->n_tensors + 1, sizeof *cg->why);
	if (!cg->poly || !cg->arr || !cg->force_global || !cg->why) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int i = 0; i < k->n_ops; i++) {
		cg->poly[i] = fl_poly_describe(p->ctx, p->graph, k->ops[i], err);
		if (!cg->poly[i]) {
			fl_error_prefix(err, "kernel %s", k->name);
			return -1;
		}
	}
	cg->tile_end = tile_band_end(k);
	return 0;
}

/* The kernel's body, retrying with tensors moved to global memory until
 * every tile-local one is placed. */
static char *kernel_body(cg_kernel *cg)
{
	char *body = NULL;

	for (int attempt = 0; attempt <= cg->g->n_tensors + 1; attempt++) {
		int rc = try_body(cg, &body);

		if (rc <= 0)
			return rc < 0 ? NULL : body;
	}
	fl_error_set(cg->err, "kernel %s: placement did not settle",
		     cg->k->name);
	return NULL;
}

static int polyhedral_kernel(sbuf *out, const fl_program *p,
			     const fl_kernel *k, const char *cname,
			     fl_error *err)
{
	cg_kernel cg;
	char *body = NULL;
	int rc = -1;

	if (!k->schedule) {
		fl_error_set(err, "kernel %s has no schedule", k->name);
		return -1;
	}
	if (cg_init(&cg, p, k, err) == 0 && (body = kernel_body(&cg))) {
		kernel_comment(out, p->graph, k, cname, &cg);
		sb_printf(out, "void %s(float *const *bufs)\n{\n", cname);
		global_decls(out, p->graph, cg.arr);
		sb_printf(out, "%s}\n\n", body);
		rc = 0;
	}
	free(body);
	cg_clear(&cg);
	return rc;
}

static bool is_custom_kernel(const fl_program *p, const fl_kernel *k)
{
	return k->n_ops == 1 && p->graph->ops[k->ops[0]].kind == FL_OP_CUSTOM;
}

static int kernel_function(sbuf *out, const fl_program *p, int i,
			   fl_error *err)
{
	const fl_kernel *k = &p->kernels[i];
	char cname[64];

	kernel_cname(k, i, cname, sizeof cname);
	for (int j = 0; j < k->n_ops; j++)
		if (k->ops[j] < 0 || k->ops[j] >= p->graph->n_ops) {
			fl_error_set(err, "kernel %s: op %d out of range",
				     cname, k->ops[j]);
			return -1;
		}
	if (is_custom_kernel(p, k)) {
		kernel_comment(out, p->graph, k, cname, NULL);
		return custom_kernel(out, p->graph, &p->graph->ops[k->ops[0]],
				     cname, err);
	}
	return polyhedral_kernel(out, p, k, cname, err);
}

/* ---- the translation unit ------------------------------------------- */

/* The prologue of every generated file.
 *
 * Vector maths: glibc's libmvec has SIMD variants of expf, logf, tanhf,
 * erff (2.35 on) and powf; declaring them with GCC's simd attribute lets
 * the vectoriser call them from a vectorised loop (the runner links
 * -lmvec, compiles with -fno-math-errno, and retries with FL_NO_MVEC
 * defined and without -lmvec when that fails).  Their results are within
 * a few ulp of the scalar functions.  fminf and fmaxf are written out
 * so that they vectorise while keeping their NaN rule (a NaN operand
 * yields the other one); the calls do not vectorise without
 * -ffinite-math-only, which is not used. */
static const char file_prologue[] =
	"#include <math.h>\n#include <stdlib.h>\n\n"
	"#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) \\\n"
	"    && defined(__GLIBC__) && !defined(FL_NO_MVEC)\n"
	"#if __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 22)\n"
	"__attribute__((simd(\"notinbranch\"))) float expf(float);\n"
	"__attribute__((simd(\"notinbranch\"))) float logf(float);\n"
	"__attribute__((simd(\"notinbranch\"))) float powf(float, float);\n"
	"#endif\n"
	"#if __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35)\n"
	"__attribute__((simd(\"notinbranch\"))) float tanhf(float);\n"
	"__attribute__((simd(\"notinbranch\"))) float erff(float);\n"
	"#endif\n"
	"#endif\n\n"
	"static inline float fl_fminf(float a, float b)\n"
	"{\n  return isnan(b) ? a : a < b ? a : b;\n}\n\n"
	"static inline float fl_fmaxf(float a, float b)\n"
	"{\n  return isnan(b) ? a : a > b ? a : b;\n}\n\n"
	"#define floord(n, d) (((n) < 0) ? -((-(n) + (d) - 1) / (d)) "
	": (n) / (d))\n"
	"#define min(x, y) ((x) < (y) ? (x) : (y))\n"
	"#define max(x, y) ((x) > (y) ? (x) : (y))\n\n";

static void file_header(sbuf *out, const fl_program *p)
{
	char name[160];

	fl_sanitize_comment(p->graph->name ? p->graph->name : "", name,
			    sizeof name);
	sb_printf(out, "/* Generated by fuselab: graph \"%s\", strategy %s, "
		  "%d kernel%s.\n * Kernel fl_k<i> takes bufs[t] = the "
		  "row-major f32 buffer of graph tensor t (T<t>). */\n%s",
		  name, fl_strategy_name(p->strategy), p->n_kernels,
		  p->n_kernels == 1 ? "" : "s", file_prologue);
}

static void kernel_table(sbuf *out, const fl_program *p)
{
	char cname[64];

	sb_printf(out, "const int fl_n_kernels = %d;\n", p->n_kernels);
	if (p->n_kernels == 0) {	/* C has no empty initialiser */
		sb_printf(out, "void (*const fl_kernels[1])(float *const *) "
			  "= {0};\n");
		return;
	}
	sb_printf(out, "void (*const fl_kernels[%d])(float *const *) = {\n",
		  p->n_kernels);
	for (int i = 0; i < p->n_kernels; i++)
		sb_printf(out, "  %s,\n", kernel_cname(&p->kernels[i], i, cname,
						       sizeof cname));
	sb_printf(out, "};\n");
}

/* Takes the text of b (NULL with a message when it ran out of memory). */
static char *sb_take(sbuf *b, fl_error *err)
{
	if (b->oom) {
		free(b->s);
		fl_error_set(err, "codegen: out of memory");
		return NULL;
	}
	return b->s ? b->s : strdup("");
}

static int check_program(const fl_program *p, fl_error *err)
{
	if (!p || !p->graph || !p->ctx) {
		fl_error_set(err, "codegen: no program");
		return -1;
	}
	return 0;
}

char *fl_codegen_c_kernel(const fl_program *p, int i, fl_error *err)
{
	sbuf out = {NULL, 0, 0, false};

	if (check_program(p, err) < 0)
		return NULL;
	if (i < 0 || i >= p->n_kernels) {
		fl_error_set(err, "codegen: no kernel %d", i);
		return NULL;
	}
	if (kernel_function(&out, p, i, err) < 0) {
		free(out.s);
		return NULL;
	}
	return sb_take(&out, err);
}

char *fl_codegen_c_unit(const fl_program *p, const char *const *kernels,
			fl_error *err)
{
	sbuf out = {NULL, 0, 0, false};
	char cname[64];

	if (check_program(p, err) < 0)
		return NULL;
	file_header(&out, p);
	sb_printf(&out, "extern const int fl_n_kernels;\n"
		  "extern void (*const fl_kernels[])(float *const *);\n");
	for (int i = 0; i < p->n_kernels; i++)
		sb_printf(&out, "void %s(float *const *bufs);\n",
			  kernel_cname(&p->kernels[i], i, cname, sizeof cname));
	sb_printf(&out, "\n");
	for (int i = 0; i < p->n_kernels; i++)
		sb_printf(&out, "%s", kernels[i]);
	kernel_table(&out, p);
	return sb_take(&out, err);
}

char *fl_codegen_c(const fl_program *p, fl_error *err)
{
	char **kernels;
	char *unit = NULL;
	int i;

	if (check_program(p, err) < 0)
		return NULL;
	kernels = calloc((size_t)p->n_kernels + 1, sizeof *kernels);
	if (!kernels) {
		fl_error_set(err, "codegen: out of memory");
		return NULL;
	}
	for (i = 0; i < p->n_kernels; i++)
		if (!(kernels[i] = fl_codegen_c_kernel(p, i, err)))
			break;
	if (i == p->n_kernels)
		unit = fl_codegen_c_unit(p, (const char *const *)kernels, err);
	for (int j = 0; j < p->n_kernels; j++)
		free(kernels[j]);
	free(kernels);
	return unit;
}
