/* Row pipelining: the phases of a stitched row kernel, each a loop over
 * the rows of a tile, become one loop over the rows in which phase p
 * works p rows behind phase 0, with one loop over the row's elements
 * holding every phase's statements (C backend; issue 11: fused
 * memory-bound kernels at 60% of the copy bandwidth).
 *
 * Why: layer 1 gives softmax as three loops over a tile's rows -- the
 * maximum (reads x from memory), exp and sum (in cache, arithmetic), the
 * division (writes y to memory).  A core runs them one after the other,
 * so memory waits while exp computes and the other way round: at full
 * size softmax took the sum of both times, 54-59% of the copy.  Skewed by
 * one row per phase, the loop over the elements at step t reads row t
 * for the maximum, computes exp on row t - 1 and stores row t - 2: the
 * out-of-order core overlaps the three streams (softmax 2.1 -> 1.6 ms on
 * two Zen 3 cores, in a hand-written harness before this pass).
 *
 * In isl terms, under the tile band the sequence of P phases, each a band
 * over the rows and a band over the elements (or one band of both), with
 * an optional sequence of statements below, is replaced by
 *
 *     band   t = row + p           (for the statements of phase p)
 *     band   c = the element       (each phase's own element schedule)
 *     sequence of the statements, in their old order
 *
 * and the t loop's AST is "separate", so that isl prints the first and
 * last steps of a tile, where some phase has no row, as loops of their
 * own and the steady state has no guard inside the element loop.  The
 * pass checks, with the kernel's memory-based dependences (every pair of
 * accesses to one element, one of them a write, in the old schedule's
 * order), that the new schedule keeps every one of them in order, and
 * leaves the schedule as it was otherwise.  A reduction over the
 * elements (softmax's maximum and sum) stays one: its accumulator is
 * invariant in the element loop in both schedules.
 *
 * Rows in turn: a tile-local array written by phase w and read by phases
 * up to r, each statement on its own row of it (one index, the same in
 * every access, is the row the phase works on), holds at most r - w + 1
 * live rows at a time:
 * row i is written at step i + w and last read at step i + r, before row
 * i + r - w + 1 is written.  It gets that many rows rounded up to a power
 * of two (the row's index is then a mask), row i in row i % rows
 * (cg->arr[t].rotate): softmax's exp, 21 rows of 4 KiB per tile,
 * becomes 2, which stay in L1.
 *
 * Needs: the kernel's schedule from layer 1, the statements' accesses
 * (cg->poly), the attempt's tile-local arrays (cg->arr).  Gives: a
 * schedule for fl_cg_prepare_schedule, the arrays' row windows, and a
 * note for the kernel's comment.  Changes nothing else.  Ownership as
 * the signatures say. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/map.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include "codegen_impl.h"

#define MAX_PHASES 8

/* One phase of the sequence: its row and element schedules and the
 * statements in their order. */
typedef struct phase {
	isl_multi_union_pw_aff *rows;	/* the loops outside the element's:
					   the last one is over the rows */
	isl_union_pw_aff *elem;
	isl_union_set_list *stmts;
} phase;

static __isl_give isl_schedule_node *skip_marks(
	__isl_take isl_schedule_node *node)
{
	while (node &&
	       isl_schedule_node_get_type(node) == isl_schedule_node_mark)
		node = isl_schedule_node_child(node, 0);
	return node;
}

static __isl_give isl_union_pw_aff *band_member(
	__isl_keep isl_schedule_node *band, int i)
{
	isl_multi_union_pw_aff *m = isl_schedule_node_band_get_partial_schedule(
		band);
	isl_union_pw_aff *upa = isl_multi_union_pw_aff_get_union_pw_aff(m, i);

	isl_multi_union_pw_aff_free(m);
	return upa;
}

static bool is_band(__isl_keep isl_schedule_node *n, int members)
{
	return n && isl_schedule_node_get_type(n) == isl_schedule_node_band &&
	       isl_schedule_node_band_n_member(n) == members;
}

/* The statements below the element band: a leaf (all of the phase's
 * statements, `all`), or a sequence of filters over leaves. */
static __isl_give isl_union_set_list *statements_below(
	__isl_take isl_schedule_node *node, __isl_keep isl_union_set *all)
{
	isl_ctx *ctx = isl_union_set_get_ctx(all);
	isl_union_set_list *list = NULL;
	isl_size n;

	node = skip_marks(node);
	if (!node)
		return NULL;
	if (isl_schedule_node_get_type(node) == isl_schedule_node_leaf) {
		isl_schedule_node_free(node);
		return isl_union_set_list_from_union_set(
			isl_union_set_copy(all));
	}
	if (isl_schedule_node_get_type(node) != isl_schedule_node_sequence) {
		isl_schedule_node_free(node);
		return NULL;
	}
	n = isl_schedule_node_n_children(node);
	list = isl_union_set_list_alloc(ctx, n < 0 ? 0 : n);
	for (int i = 0; list && i < n; i++) {
		isl_schedule_node *f = isl_schedule_node_get_child(node, i);
		isl_schedule_node *leaf = isl_schedule_node_get_child(f, 0);
		bool ok = isl_schedule_node_get_type(leaf) ==
			  isl_schedule_node_leaf;

		if (ok)
			list = isl_union_set_list_add(list,
				isl_schedule_node_filter_get_filter(f));
		else
			list = isl_union_set_list_free(list);
		isl_schedule_node_free(leaf);
		isl_schedule_node_free(f);
	}
	isl_schedule_node_free(node);
	return list;
}

/* Reads child `filter` of the sequence as a phase; false when it is not
 * a band over the rows (and whatever loops are around them: BERT's heads)
 * and one over the elements, or one band of all of them, with statements
 * below. */
static bool read_phase(__isl_keep isl_schedule_node *filter, phase *ph)
{
	isl_union_set *all = isl_schedule_node_filter_get_filter(filter);
	isl_schedule_node *n = skip_marks(isl_schedule_node_get_child(filter,
								      0));
	isl_size m = n && isl_schedule_node_get_type(n) ==
		     isl_schedule_node_band ?
		     isl_schedule_node_band_n_member(n) : 0;
	isl_schedule_node *below = m >= 1 ?
		skip_marks(isl_schedule_node_get_child(n, 0)) : NULL;

	memset(ph, 0, sizeof *ph);
	if (m >= 1)
		ph->rows = isl_schedule_node_band_get_partial_schedule(n);
	if (m >= 1 && is_band(below, 1)) {
		/* the rows' band, then the elements' */
		ph->elem = band_member(below, 0);
		isl_schedule_node_free(n);
		n = isl_schedule_node_copy(below);
	} else if (m >= 2) {
		/* one band of both: the last member is the elements' */
		ph->elem = band_member(n, m - 1);
		ph->rows = isl_multi_union_pw_aff_drop_dims(ph->rows,
			isl_dim_set, (unsigned)m - 1, 1);
	}
	isl_schedule_node_free(below);
	if (ph->elem)
		ph->stmts = statements_below(isl_schedule_node_child(n, 0),
					     all);
	else
		isl_schedule_node_free(n);
	isl_union_set_free(all);
	return ph->rows && ph->elem && ph->stmts;
}

static void phase_clear(phase *ph)
{
	isl_multi_union_pw_aff_free(ph->rows);
	isl_union_pw_aff_free(ph->elem);
	isl_union_set_list_free(ph->stmts);
}

/* The pipelined subtree in place of sequence node seq. */
static __isl_give isl_schedule_node *pipelined(
	__isl_take isl_schedule_node *seq, phase *ph, int n)
{
	isl_ctx *ctx = isl_schedule_node_get_ctx(seq);
	isl_union_set_list *stmts = isl_union_set_list_alloc(ctx, n);
	isl_multi_union_pw_aff *t = NULL;
	isl_union_pw_aff *c = NULL;
	isl_size last = isl_multi_union_pw_aff_size(ph[0].rows) - 1;

	for (int p = 0; p < n; p++) {
		isl_union_pw_aff *row = isl_multi_union_pw_aff_get_union_pw_aff(
			ph[p].rows, last);
		isl_union_set *dom = isl_union_pw_aff_domain(
			isl_union_pw_aff_copy(row));
		isl_union_pw_aff *shift = isl_union_pw_aff_val_on_domain(dom,
			isl_val_int_from_si(ctx, p));
		isl_multi_union_pw_aff *tp = isl_multi_union_pw_aff_set_union_pw_aff(
			isl_multi_union_pw_aff_copy(ph[p].rows), last,
			isl_union_pw_aff_add(row, shift));
		isl_union_pw_aff *cp = isl_union_pw_aff_copy(ph[p].elem);

		t = t ? isl_multi_union_pw_aff_union_add(t, tp) : tp;
		c = c ? isl_union_pw_aff_union_add(c, cp) : cp;
		stmts = isl_union_set_list_concat(stmts,
			isl_union_set_list_copy(ph[p].stmts));
	}
	seq = isl_schedule_node_cut(seq);
	if (isl_union_set_list_n_union_set(stmts) > 1)
		seq = isl_schedule_node_insert_sequence(seq, stmts);
	else
		isl_union_set_list_free(stmts);
	seq = isl_schedule_node_insert_partial_schedule(seq,
		isl_multi_union_pw_aff_from_union_pw_aff(c));
	seq = isl_schedule_node_insert_partial_schedule(seq, t);
	return isl_schedule_node_band_member_set_ast_loop_type(seq, last,
		isl_ast_loop_separate);
}

/* Every write and every read of the kernel's statements, statement ->
 * element (a may-read counts as a read of the elements it may read). */
static void kernel_accesses(const fl_cg_kernel *cg,
			    __isl_give isl_union_map **w,
			    __isl_give isl_union_map **r)
{
	isl_space *sp = isl_space_params_alloc(cg->ctx, 0);

	*w = isl_union_map_empty(isl_space_copy(sp));
	*r = isl_union_map_empty(sp);
	for (int i = 0; i < cg->k->n_ops; i++) {
		const fl_poly_op *po = cg->poly[i];

		for (int s = 0; po && s < po->n_stmts; s++) {
			const fl_poly_stmt *ps = &po->stmts[s];

			*w = isl_union_map_add_map(*w,
						   isl_map_copy(ps->write));
			for (int k = 0; k < ps->n_reads; k++)
				*r = isl_union_map_add_map(*r,
					isl_map_copy(ps->reads[k].access));
		}
	}
}

/* Whether schedule `after` runs every memory-based dependence of the
 * kernel under schedule `before` in the same order. */
static bool keeps_dependences(const fl_cg_kernel *cg,
			      __isl_keep isl_schedule *before,
			      __isl_keep isl_schedule *after)
{
	isl_union_map *w, *r, *same, *dep, *old_map, *new_map;
	isl_union_set *dom = isl_schedule_get_domain(before);
	isl_bool ok;

	kernel_accesses(cg, &w, &r);
	w = isl_union_map_intersect_domain(w, isl_union_set_copy(dom));
	r = isl_union_map_intersect_domain(r, dom);
	same = isl_union_map_apply_range(isl_union_map_copy(w),
		isl_union_map_reverse(isl_union_map_copy(r)));
	same = isl_union_map_union(same, isl_union_map_apply_range(
		isl_union_map_copy(r),
		isl_union_map_reverse(isl_union_map_copy(w))));
	same = isl_union_map_union(same, isl_union_map_apply_range(
		isl_union_map_copy(w),
		isl_union_map_reverse(isl_union_map_copy(w))));
	isl_union_map_free(w);
	isl_union_map_free(r);
	old_map = isl_schedule_get_map(before);
	new_map = isl_schedule_get_map(after);
	old_map = isl_union_map_lex_lt_union_map(old_map,
		isl_union_map_copy(old_map));
	new_map = isl_union_map_lex_lt_union_map(new_map,
		isl_union_map_copy(new_map));
	dep = isl_union_map_intersect(same, old_map);
	ok = isl_union_map_is_subset(dep, new_map);
	isl_union_map_free(dep);
	isl_union_map_free(new_map);
	return ok == isl_bool_true;
}

/* ---- rows in turn -------------------------------------------------------- */

/* The phase whose statements include the domain of access (keep), or
 * -1. */
static int phase_of(const phase *ph, int n, __isl_keep isl_map *access)
{
	isl_union_set *dom = isl_union_set_from_set(
		isl_map_domain(isl_map_copy(access)));
	int found = -1;

	for (int p = 0; p < n && found < 0; p++) {
		isl_size k = isl_union_set_list_n_union_set(ph[p].stmts);

		for (int i = 0; i < k && found < 0; i++) {
			isl_union_set *s = isl_union_set_list_get_at(
				ph[p].stmts, i);

			if (isl_union_set_is_subset(dom, s) == isl_bool_true)
				found = p;
			isl_union_set_free(s);
		}
	}
	isl_union_set_free(dom);
	return found;
}

/* Whether index d of access (keep) is the row phase ph works on when it
 * runs the access's statement. */
static bool on_own_row(const phase *ph, __isl_keep isl_map *access, int d)
{
	isl_size last = isl_multi_union_pw_aff_size(ph->rows) - 1;
	isl_size rank = isl_map_dim(access, isl_dim_out);
	isl_union_pw_aff *rows = isl_multi_union_pw_aff_get_union_pw_aff(
		ph->rows, last);
	isl_space *sp = isl_space_add_dims(isl_space_from_domain(
		isl_space_domain(isl_map_get_space(access))), isl_dim_out, 1);
	isl_map *row = isl_map_from_pw_aff(
		isl_union_pw_aff_extract_pw_aff(rows, sp));
	isl_map *index = isl_map_copy(access);
	isl_bool same = isl_bool_false;

	isl_union_pw_aff_free(rows);
	if (d >= 0 && d < rank) {
		index = isl_map_project_out(index, isl_dim_out, (unsigned)d + 1,
					    (unsigned)(rank - d - 1));
		index = isl_map_project_out(index, isl_dim_out, 0, (unsigned)d);
		row = isl_map_intersect_domain(row, isl_map_domain(
			isl_map_copy(access)));
		row = isl_map_reset_tuple_id(row, isl_dim_out);
		index = isl_map_reset_tuple_id(index, isl_dim_out);
		same = isl_map_is_equal(row, index);
	}
	isl_map_free(row);
	isl_map_free(index);
	return same == isl_bool_true;
}

/* Notes access (keep) of tensor t in *lo..*hi, the range of phases that
 * touch it; false when it is not on its phase's own row, index d. */
static bool note_phase(const phase *ph, int n, __isl_keep isl_map *access,
		       int d, int *lo, int *hi)
{
	int p = phase_of(ph, n, access);

	if (p < 0 || !on_own_row(&ph[p], access, d))
		return false;
	*lo = *lo < 0 || p < *lo ? p : *lo;
	*hi = p > *hi ? p : *hi;
	return true;
}

/* The rows tensor t needs at a time under the pipelined schedule (the
 * phase that writes it to the last that reads it) when index d is the
 * row, or 0 when its accesses are not one phase's writes and later
 * phases' reads, each on its own row. */
static int64_t row_window(const fl_cg_kernel *cg, const phase *ph, int n,
			  int t, int d)
{
	int wlo = -1, whi = -1, rlo = -1, rhi = -1;

	for (int i = 0; i < cg->k->n_ops; i++) {
		const fl_op *op = &cg->g->ops[cg->k->ops[i]];
		const fl_poly_op *po = cg->poly[i];

		for (int s = 0; po && s < po->n_stmts; s++) {
			const fl_poly_stmt *ps = &po->stmts[s];

			if (op->out[0] == t &&
			    !note_phase(ph, n, ps->write, d, &wlo, &whi))
				return 0;
			for (int k = 0; k < ps->n_reads; k++)
				if (fl_cg_read_tensor(op, &ps->reads[k]) == t &&
				    (!ps->reads[k].exact ||
				     !note_phase(ph, n, ps->reads[k].access, d,
						 &rlo, &rhi)))
					return 0;
		}
	}
	if (wlo < 0 || wlo != whi || rlo < wlo)
		return 0;
	return rhi - wlo + 1;
}

/* Row windows of the attempt's tile-local arrays, into win (0: none),
 * and the index that is the row, into dim: the first one, of all but the
 * last (the elements'), that gives a window. */
static void row_windows(const fl_cg_kernel *cg, const phase *ph, int n,
			int64_t *win, int *dim)
{
	for (int t = 0; t < cg->g->n_tensors; t++) {
		const fl_cg_array *a = &cg->arr[t];

		win[t] = 0;
		for (int d = 0; !win[t] && a->local && !a->reg &&
			     d < a->rank - 1; d++) {
			win[t] = row_window(cg, ph, n, t, d);
			dim[t] = d;
		}
		while (win[t] & (win[t] - 1))	/* a power of two: a mask */
			win[t]++;
		if (win[t] >= a->size[dim[t]])
			win[t] = 0;
	}
}

/* Whether every phase has as many loops around its element loop. */
static bool same_loops(const phase *ph, int n)
{
	for (int p = 1; p < n; p++)
		if (isl_multi_union_pw_aff_size(ph[p].rows) !=
		    isl_multi_union_pw_aff_size(ph[0].rows))
			return false;
	return true;
}

/* The sequence right under the outermost band (the tile band), or NULL. */
static __isl_give isl_schedule_node *tile_sequence(
	__isl_keep isl_schedule *s)
{
	isl_schedule_node *n = skip_marks(isl_schedule_node_child(
		isl_schedule_get_root(s), 0));

	if (!n || isl_schedule_node_get_type(n) != isl_schedule_node_band)
		return isl_schedule_node_free(n);
	n = skip_marks(isl_schedule_node_child(n, 0));
	if (n && isl_schedule_node_get_type(n) == isl_schedule_node_sequence)
		return n;
	return isl_schedule_node_free(n);
}

__isl_give isl_schedule *fl_cg_pipeline_rows(fl_cg_kernel *cg,
					     __isl_take isl_schedule *s)
{
	isl_schedule_node *seq = tile_sequence(s);
	isl_schedule *out = NULL;
	phase ph[MAX_PHASES];
	isl_size n = seq ? isl_schedule_node_n_children(seq) : 0;
	int64_t *win = NULL;
	int *dim = NULL, got = 0;

	cg->pipeline_note[0] = '\0';
	if (cg->cuda || n < 2 || n > MAX_PHASES) {
		isl_schedule_node_free(seq);
		return s;
	}
	for (; got < n; got++) {
		isl_schedule_node *f = isl_schedule_node_get_child(seq, got);
		bool ok = read_phase(f, &ph[got]);

		isl_schedule_node_free(f);
		if (!ok) {
			phase_clear(&ph[got]);
			break;
		}
	}
	win = calloc((size_t)cg->g->n_tensors + 1, sizeof *win);
	dim = calloc((size_t)cg->g->n_tensors + 1, sizeof *dim);
	if (got == n && same_loops(ph, n) && win && dim) {
		row_windows(cg, ph, n, win, dim);
		seq = pipelined(seq, ph, n);
		out = isl_schedule_node_get_schedule(seq);
	}
	isl_schedule_node_free(seq);
	for (int p = 0; p < got; p++)
		phase_clear(&ph[p]);
	if (!out || !keeps_dependences(cg, s, out)) {
		isl_schedule_free(out);
		isl_ctx_reset_error(cg->ctx);
		free(win);
		free(dim);
		return s;
	}
	for (int t = 0; t < cg->g->n_tensors; t++) {
		cg->arr[t].rotate = win[t];
		cg->arr[t].rotate_dim = dim[t];
	}
	free(win);
	free(dim);
	snprintf(cg->pipeline_note, sizeof cg->pipeline_note,
		 "rows pipelined: %d phases in one loop over a row's "
		 "elements, phase p on the row p steps behind the first",
		 (int)n);
	isl_schedule_free(s);
	return out;
}
