/* Splitting an innermost vectorised loop that chains expensive maths
 * calls into one loop per link of the chain (C backend, DESIGN 1.6;
 * issue 11: fused memory-bound kernels at 60% of the copy bandwidth).
 *
 * Why: a fused elementwise chain such as samples/chain8.json (scale,
 * shift, tanh, gain, exp, ...) does per element one long serial
 * dependency chain -- tanh's rational function with its division, then
 * exp's polynomial, about a hundred instructions where each waits for the
 * one before.  The out-of-order core overlaps only so many iterations of
 * such a chain, so the kernel is latency-bound at 40-46% of the copy
 * bandwidth, and the two calls cost far more together than the sum of
 * each alone (on a Zen 3 core: 9.0 ms as one loop, 7.3 ms split at exp).
 * With one call of the chain per loop, each loop's chain is short enough
 * for the core to run many iterations at once; what crosses from one
 * loop to the next goes through a small array that stays in L1.
 *
 * Two steps, each called by the backend at its place:
 *
 *   1. fl_cg_plan_splits (after fl_cg_decide_loops, C only: a GPU thread
 *      runs one element and gains nothing): an innermost "omp simd" loop
 *      with no pragma of its own, no accumulators and no tile-local array
 *      declared in it, whose body is a run of statements that each write
 *      one element (no reduction), and where one expensive call (exp,
 *      log, tanh, sigmoid, erf, pow, the trigonometric and hyperbolic
 *      functions and their inverses) uses the result of another, gets a
 *      plan: each statement goes to the part of its chain level (how
 *      many expensive calls come before its own last one on its longest
 *      chain of reads in the body), so that a chain holds one call per
 *      part while independent calls, whose chains the core overlaps
 *      anyway, share one.  Fission is legal because the loop is
 *      coincident (no dependence between two of its iterations), no
 *      tensor has two writers in the body and every part reads only what
 *      earlier parts, or its own earlier statements, wrote; a register
 *      scalar T<t>_r written in one part and read in a later one is
 *      carried in the strip array T<t>_s, one element per iteration.
 *      The strip is the loop's extent when that is a constant up to
 *      FL_CG_STRIP; otherwise the loop is strip-mined into pieces of
 *      FL_CG_STRIP iterations with the parts inside each piece.  The
 *      kernel's comment says where it was split.
 *   2. fl_cg_print_split (printing that loop, for print_c.c): the parts,
 *      each an "omp simd" loop over the same range (or piece), declaring
 *      the scalars it writes and not carries.
 *
 * Ownership: a plan belongs to its loop (fl_cg_split_free); isl objects
 * are borrowed unless a helper says otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/ast.h>
#include <isl/id.h>
#include <isl/printer.h>
#include <isl/val.h>

#include "codegen_impl.h"

/* The name of the expensive maths call an op's C makes, or NULL: these
 * are the long chains of the maths runtime (fl_expf, fl_tanhf, fl_erff)
 * and of libm's vector variants (logf, powf, sinf, ...).  sqrt, floor,
 * ceil and sign are an instruction or two. */
static const char *expensive_call(const fl_op *op)
{
	switch (op->kind) {
	case FL_OP_EXP: return "exp";
	case FL_OP_LOG: return "log";
	case FL_OP_TANH: return "tanh";
	case FL_OP_SIGMOID: return "sigmoid";
	case FL_OP_ERF: return "erf";
	case FL_OP_POW: return "pow";
	case FL_OP_SIN: return "sin";
	case FL_OP_COS: return "cos";
	case FL_OP_TAN: return "tan";
	case FL_OP_ASIN: return "asin";
	case FL_OP_ACOS: return "acos";
	case FL_OP_ATAN: return "atan";
	case FL_OP_SINH: return "sinh";
	case FL_OP_COSH: return "cosh";
	case FL_OP_ASINH: return "asinh";
	case FL_OP_ACOSH: return "acosh";
	case FL_OP_ATANH: return "atanh";
	default: return NULL;
	}
}

/* A statement that may move to another loop of the split: it writes its
 * own element, nothing accumulates across iterations. */
static bool plain_stmt(const fl_cg_stmt *st)
{
	fl_stmt_role r = st->ps->role;

	return st->acc < 0 && (r == FL_STMT_COMPUTE || r == FL_STMT_COPY ||
			       r == FL_STMT_FILL);
}

/* Appends the statement of user node `node` (keep) to plan; false when
 * it is anything else or does not qualify. */
static bool collect_stmt(fl_cg_split *plan, __isl_keep isl_ast_node *node,
			 int cap)
{
	fl_cg_stmt *st;

	if (isl_ast_node_get_type(node) != isl_ast_node_user ||
	    plan->n_stmts >= cap)
		return false;
	st = fl_cg_stmt_of(node);
	if (!st || !plain_stmt(st))
		return false;
	plan->stmt[plan->n_stmts++] = st;
	return true;
}

/* The statements of loop body `body` (keep) in order into plan; false
 * unless the body is statements only (a block of user nodes, or one). */
static bool collect_body(fl_cg_split *plan, __isl_keep isl_ast_node *body)
{
	isl_ast_node_list *list;
	isl_size n;
	bool ok = true;

	if (isl_ast_node_get_type(body) != isl_ast_node_block) {
		plan->stmt = calloc(1, sizeof *plan->stmt);
		return plan->stmt && collect_stmt(plan, body, 1);
	}
	list = isl_ast_node_block_get_children(body);
	n = isl_ast_node_list_n_ast_node(list);
	plan->stmt = calloc(n > 0 ? (size_t)n : 1, sizeof *plan->stmt);
	for (int i = 0; ok && plan->stmt && i < n; i++) {
		isl_ast_node *c = isl_ast_node_list_get_at(list, i);

		ok = collect_stmt(plan, c, n);
		isl_ast_node_free(c);
	}
	isl_ast_node_list_free(list);
	return ok && plan->stmt;
}

/* Whether statement st reads tensor t. */
static bool stmt_reads(const fl_cg_stmt *st, int t)
{
	for (int r = 0; r < st->ps->n_reads; r++)
		if (st->reads[r] &&
		    fl_cg_read_tensor(st->op, &st->ps->reads[r]) == t)
			return true;
	return false;
}

/* Whether plan's statements may be regrouped: none reads a tensor that
 * a later one writes (that element would come from another iteration)
 * and no tensor has two writers, so that only the reads of earlier
 * writes order them. */
static bool regroupable(const fl_cg_split *plan)
{
	for (int i = 0; i < plan->n_stmts; i++)
		for (int j = i + 1; j < plan->n_stmts; j++) {
			int ti = plan->stmt[i]->op->out[0];
			int tj = plan->stmt[j]->op->out[0];

			if (ti == tj || stmt_reads(plan->stmt[i], tj))
				return false;
		}
	return true;
}

/* Puts each statement into the part of its chain level: one less than
 * the number of expensive calls on the longest chain of reads inside the
 * body that ends at it, itself included (0 when there are none) -- so
 * the first call of every chain and what uses it are in part 0, a call
 * that uses the result of one is in part 1, and so on, while
 * independent calls (an LSTM cell's gates) share a part: their chains
 * overlap within an iteration already.  The level only grows along a
 * chain, so every part reads what earlier parts or its own earlier
 * statements wrote.  Returns the number of parts. */
static int assign_parts(fl_cg_split *plan)
{
	int *level = calloc((size_t)plan->n_stmts + 1, sizeof *level);

	plan->part = calloc((size_t)plan->n_stmts + 1, sizeof *plan->part);
	plan->n_parts = 0;
	if (!level || !plan->part) {
		free(level);
		return 0;
	}
	for (int i = 0; i < plan->n_stmts; i++) {
		bool calls = expensive_call(plan->stmt[i]->op) != NULL;
		int in = 0;

		for (int j = 0; j < i; j++)
			if (stmt_reads(plan->stmt[i], plan->stmt[j]->op->out[0]) &&
			    level[j] > in)
				in = level[j];
		level[i] = in + calls;
		plan->part[i] = level[i] > 0 ? level[i] - 1 : 0;
		if (plan->part[i] > FL_CG_SPLIT_MAX_PARTS - 1)
			plan->part[i] = FL_CG_SPLIT_MAX_PARTS - 1;
		if (plan->part[i] + 1 > plan->n_parts)
			plan->n_parts = plan->part[i] + 1;
	}
	free(level);
	return plan->n_parts;
}

/* Marks in plan->carry each register scalar of loop l written in one
 * part and read in a later one. */
static void find_carried(const fl_cg_kernel *cg, fl_cg_split *plan,
			 const fl_cg_loop *l)
{
	for (int i = 0; i < plan->n_stmts; i++) {
		int t = plan->stmt[i]->op->out[0];

		if (!cg->arr[t].reg || !fl_cg_declared_in(&cg->arr[t], l))
			continue;
		for (int j = i + 1; j < plan->n_stmts; j++)
			if (plan->part[j] > plan->part[i] &&
			    stmt_reads(plan->stmt[j], t))
				plan->carry[t] = true;
	}
}

/* Whether a tile-local array (not a scalar) is declared in l's body:
 * one copy per iteration, which a split would tear apart. */
static bool declares_arrays(const fl_cg_kernel *cg, const fl_cg_loop *l)
{
	for (int t = 0; t < cg->g->n_tensors; t++) {
		const fl_cg_array *a = &cg->arr[t];

		if (!a->reg && fl_cg_declared_in(a, l))
			return true;
	}
	return false;
}

/* Integer value of expression e (keep) into *v; false when it is not an
 * integer. */
static bool int_value(__isl_keep isl_ast_expr *e, long *v)
{
	isl_val *val;

	if (!e || isl_ast_expr_get_type(e) != isl_ast_expr_int)
		return false;
	val = isl_ast_expr_get_val(e);
	*v = isl_val_get_num_si(val);
	isl_val_free(val);
	return true;
}

/* Whether for node `node` (keep) steps by one and tests "c <= e" or
 * "c < e"; *lo and *n: its start and trip count when both bounds are
 * integers (*n -1 otherwise). */
static bool unit_loop(__isl_keep isl_ast_node *node, long *lo, long *n)
{
	isl_ast_expr *inc = isl_ast_node_for_get_inc(node);
	isl_ast_expr *init = isl_ast_node_for_get_init(node);
	isl_ast_expr *cond = isl_ast_node_for_get_cond(node);
	isl_ast_expr *hi_e = NULL;
	long step = 0, hi;
	bool ok = int_value(inc, &step) && step == 1 &&
		  fl_cg_canonical_cond(node);

	*n = -1;
	if (ok)
		hi_e = isl_ast_expr_op_get_arg(cond, 1);
	if (ok && int_value(init, lo) && int_value(hi_e, &hi))
		*n = hi - *lo + (isl_ast_expr_op_get_type(cond) ==
				 isl_ast_expr_op_le);
	isl_ast_expr_free(hi_e);
	isl_ast_expr_free(cond);
	isl_ast_expr_free(init);
	isl_ast_expr_free(inc);
	return ok;
}

/* The expensive calls of plan in order, "tanh, exp", into plan->calls. */
static void name_calls(fl_cg_split *plan)
{
	size_t m = 0;

	for (int i = 0; i < plan->n_stmts; i++) {
		const char *c = expensive_call(plan->stmt[i]->op);

		if (c && m < sizeof plan->calls)
			m += (size_t)snprintf(plan->calls + m,
					      sizeof plan->calls - m, "%s%s",
					      m ? ", " : "", c);
	}
}

/* "split at tanh, exp: ..." for the kernel's comment. */
static void note_split(fl_cg_kernel *cg, const fl_cg_split *plan,
		       const fl_cg_loop *l)
{
	char *n, carried[64] = "", strip[64];
	size_t k = 0;

	if (cg->n_split_notes == FL_CG_MAX_SPLIT_NOTES)
		return;
	for (int t = 0; t < cg->g->n_tensors; t++)
		if (plan->carry[t] && k < sizeof carried)
			k += (size_t)snprintf(carried + k, sizeof carried - k,
					      "%sT%d_s", k ? ", " : "", t);
	snprintf(strip, sizeof strip, plan->strip_mined ? "strips of %ld "
		 "iterations" : "%ld floats each", plan->strip);
	n = cg->split_note[cg->n_split_notes++];
	snprintf(n, sizeof cg->split_note[0], "split at %s: loop c%d runs as "
		 "%d loops, each with one expensive call of a chain (short "
		 "chains overlap across iterations); carried: %s (%s)", plan->calls,
		 l->depth, plan->n_parts, k ? carried : "nothing", strip);
}

bool fl_cg_split_carries(const fl_cg_kernel *cg, int t)
{
	for (const fl_cg_loop *l = cg->loops; l; l = l->next)
		if (l->split && l->split->carry[t])
			return true;
	return false;
}

void fl_cg_split_free(fl_cg_split *plan)
{
	if (!plan)
		return;
	free(plan->stmt);
	free(plan->part);
	free(plan->carry);
	free(plan);
}

/* The plan for loop `node` (keep, its record l), or NULL when it does
 * not qualify or chains no expensive call behind another. */
static fl_cg_split *plan_loop(fl_cg_kernel *cg, __isl_keep isl_ast_node *node,
			      const fl_cg_loop *l)
{
	fl_cg_split *plan = calloc(1, sizeof *plan);
	isl_ast_node *body = isl_ast_node_for_get_body(node);
	long lo = 0, n = -1;
	bool ok = plan && unit_loop(node, &lo, &n) &&
		  !declares_arrays(cg, l) && collect_body(plan, body) &&
		  regroupable(plan) && assign_parts(plan) > 1;

	isl_ast_node_free(body);
	if (ok)
		plan->carry = calloc((size_t)cg->g->n_tensors,
				     sizeof *plan->carry);
	if (!ok || !plan->carry) {
		fl_cg_split_free(plan);
		return NULL;	/* one loop is correct too */
	}
	find_carried(cg, plan, l);
	plan->strip_mined = n <= 0 || n > FL_CG_STRIP;
	plan->strip = plan->strip_mined ? FL_CG_STRIP : n;
	plan->lo = lo;
	name_calls(plan);
	note_split(cg, plan, l);
	return plan;
}

static isl_bool plan_node(__isl_keep isl_ast_node *node, void *user)
{
	fl_cg_kernel *cg = user;
	fl_cg_loop *l;

	if (isl_ast_node_get_type(node) != isl_ast_node_for)
		return isl_bool_true;
	l = fl_cg_loop_of(node);
	if (l && l->simd && !l->pragma && !l->acc && !l->acc_simd &&
	    !l->contract && !l->split &&
	    isl_ast_node_for_is_degenerate(node) == isl_bool_false)
		l->split = plan_loop(cg, node, l);
	return isl_bool_true;
}

void fl_cg_plan_splits(fl_cg_kernel *cg, __isl_keep isl_ast_node *ast)
{
	cg->n_split_notes = 0;	/* a new attempt */
	if (cg->cuda || !ast)
		return;
	isl_ast_node_foreach_descendant_top_down(ast, &plan_node, cg);
}

/* ---- printing ------------------------------------------------------------ */

static __isl_give isl_printer *line(__isl_take isl_printer *p, const char *s)
{
	p = isl_printer_start_line(p);
	p = isl_printer_print_str(p, s);
	return isl_printer_end_line(p);
}

/* "float T<t>_s[strip];" for each carried scalar. */
static __isl_give isl_printer *print_strips(__isl_take isl_printer *p,
					    const fl_cg_kernel *cg,
					    const fl_cg_split *plan)
{
	char buf[64];

	for (int t = 0; t < cg->g->n_tensors; t++) {
		if (!plan->carry[t])
			continue;
		snprintf(buf, sizeof buf, "float T%d_s[%ld];", t, plan->strip);
		p = line(p, buf);
	}
	return p;
}

/* "float T<t>_r;" for each scalar part `part` writes and does not carry
 * (the others of the loop are declared by the part that writes them). */
static __isl_give isl_printer *print_part_scalars(__isl_take isl_printer *p,
						  const fl_cg_kernel *cg,
						  const fl_cg_split *plan,
						  const fl_cg_loop *l, int part)
{
	char buf[32];

	for (int i = 0; i < plan->n_stmts; i++) {
		int t = plan->stmt[i]->op->out[0];

		if (plan->part[i] != part || !cg->arr[t].reg ||
		    !fl_cg_declared_in(&cg->arr[t], l) || plan->carry[t])
			continue;
		snprintf(buf, sizeof buf, "float T%d_r;", t);
		p = line(p, buf);
	}
	return p;
}

/* The statements of one part, as the unsplit loop prints them. */
static __isl_give isl_printer *print_part_stmts(__isl_take isl_printer *p,
						fl_cg_kernel *cg,
						const fl_cg_split *plan,
						int part)
{
	for (int i = 0; i < plan->n_stmts; i++) {
		if (plan->part[i] != part)
			continue;
		p = isl_printer_start_line(p);
		p = fl_cg_print_stmt(p, cg, plan->stmt[i]);
		p = isl_printer_end_line(p);
	}
	return p;
}

/* The loop's header text pieces: its counter type, iterator name, the
 * start and bound expressions as C, and its relational operator. */
typedef struct loop_text {
	const char *type;
	char it[32];
	char *init, *bound;
	const char *rel;
} loop_text;

static char *expr_text(__isl_take isl_ast_expr *e)
{
	char *s = isl_ast_expr_to_C_str(e);

	isl_ast_expr_free(e);
	return s;
}

/* The header pieces of for node `node` (keep); false when out of
 * memory. */
static bool get_loop_text(const fl_cg_kernel *cg,
			  __isl_keep isl_ast_node *node, loop_text *lt)
{
	isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
	isl_ast_expr *cond = isl_ast_node_for_get_cond(node);
	isl_id *id = isl_ast_expr_get_id(it);

	lt->type = cg->wide ? "long" : "int";
	snprintf(lt->it, sizeof lt->it, "%s", id ? isl_id_get_name(id) : "c");
	lt->rel = isl_ast_expr_op_get_type(cond) == isl_ast_expr_op_le ?
		  "<=" : "<";
	lt->init = expr_text(isl_ast_node_for_get_init(node));
	lt->bound = expr_text(isl_ast_expr_op_get_arg(cond, 1));
	isl_id_free(id);
	isl_ast_expr_free(cond);
	isl_ast_expr_free(it);
	return lt->init && lt->bound;
}

/* Whether `part` holds the streamed statement of l (annotate.c's
 * plan_stream): printed in blocks when the parts run over the whole
 * loop from 0 (not strip-mined). */
static bool streamed_part(const fl_cg_split *plan, const fl_cg_loop *l,
			  int part)
{
	if (!l->stream || plan->strip_mined || plan->lo != 0)
		return false;
	for (int i = 0; i < plan->n_stmts; i++)
		if (plan->stmt[i] == l->stream)
			return plan->part[i] == part;
	return false;
}

/* That part as blocks of FL_STREAM_FLOATS, its output staged and
 * streamed (fl_cg_stream_open). */
static __isl_give isl_printer *print_streamed_part(__isl_take isl_printer *p,
						   fl_cg_kernel *cg,
						   const fl_cg_split *plan,
						   const fl_cg_loop *l,
						   const loop_text *lt,
						   int part)
{
	p = fl_cg_stream_open(p, cg, l, lt->it);
	p = print_part_scalars(p, cg, plan, l, part);
	p = print_part_stmts(p, cg, plan, part);
	return fl_cg_stream_close(p, cg, l, lt->it);
}

/* One part's loop: "#pragma omp simd", the loop over [from, to] with the
 * relational operator of the original loop, its scalars, statements. */
static __isl_give isl_printer *print_part(__isl_take isl_printer *p,
					  fl_cg_kernel *cg,
					  const fl_cg_split *plan,
					  const fl_cg_loop *l,
					  const loop_text *lt, const char *from,
					  const char *to, int part)
{
	char buf[512];

	if (streamed_part(plan, l, part))
		return print_streamed_part(p, cg, plan, l, lt, part);
	p = line(p, "#pragma omp simd");
	snprintf(buf, sizeof buf, "for (%s %s = %s; %s %s %s; %s += 1) {",
		 lt->type, lt->it, from, lt->it, lt->rel, to, lt->it);
	p = line(p, buf);
	p = isl_printer_indent(p, 2);
	p = print_part_scalars(p, cg, plan, l, part);
	p = print_part_stmts(p, cg, plan, part);
	p = isl_printer_indent(p, -2);
	return line(p, "}");
}

/* The parts one after the other over [from, to], each carried scalar
 * indexed by `index` in its strip. */
static __isl_give isl_printer *print_parts(__isl_take isl_printer *p,
					   fl_cg_kernel *cg,
					   const fl_cg_split *plan,
					   const fl_cg_loop *l,
					   const loop_text *lt,
					   const char *from, const char *to,
					   const char *index)
{
	p = print_strips(p, cg, plan);
	cg->strip = plan;
	snprintf(cg->strip_index, sizeof cg->strip_index, "%s", index);
	for (int part = 0; part < plan->n_parts; part++)
		p = print_part(p, cg, plan, l, lt, from, to, part);
	cg->strip = NULL;
	return p;
}

/* Constant extent within one strip: the parts over the loop's own range,
 * strips indexed from its start. */
static __isl_give isl_printer *print_whole(__isl_take isl_printer *p,
					   fl_cg_kernel *cg,
					   const fl_cg_split *plan,
					   const fl_cg_loop *l,
					   const loop_text *lt)
{
	char index[64];

	if (plan->lo)
		snprintf(index, sizeof index, "%s - %ld", lt->it, plan->lo);
	else
		snprintf(index, sizeof index, "%s", lt->it);
	p = line(p, "{");
	p = isl_printer_indent(p, 2);
	p = print_parts(p, cg, plan, l, lt, lt->init, lt->bound, index);
	p = isl_printer_indent(p, -2);
	return line(p, "}");
}

/* Otherwise a loop over pieces of FL_CG_STRIP iterations, <it>_lo the
 * piece's first and <it>_hi its bound, with the parts inside. */
static __isl_give isl_printer *print_mined(__isl_take isl_printer *p,
					   fl_cg_kernel *cg,
					   const fl_cg_split *plan,
					   const fl_cg_loop *l,
					   const loop_text *lt)
{
	char buf[512], from[48], to[48], index[96];
	long last = plan->strip - (strcmp(lt->rel, "<=") == 0);

	snprintf(from, sizeof from, "%s_lo", lt->it);
	snprintf(to, sizeof to, "%s_hi", lt->it);
	snprintf(index, sizeof index, "%s - %s", lt->it, from);
	snprintf(buf, sizeof buf, "for (%s %s = %s; %s %s %s; %s += %ld) {",
		 lt->type, from, lt->init, from, lt->rel, lt->bound, from,
		 plan->strip);
	p = line(p, buf);
	p = isl_printer_indent(p, 2);
	snprintf(buf, sizeof buf, "const %s %s = min(%s + %ld, %s);",
		 lt->type, to, from, last, lt->bound);
	p = line(p, buf);
	p = print_parts(p, cg, plan, l, lt, from, to, index);
	p = isl_printer_indent(p, -2);
	return line(p, "}");
}

__isl_give isl_printer *fl_cg_print_split(__isl_take isl_printer *p,
					  fl_cg_kernel *cg,
					  __isl_keep isl_ast_node *node,
					  const fl_cg_loop *l)
{
	loop_text lt = {0};
	char note[160];

	if (!get_loop_text(cg, node, &lt)) {
		fl_cg_fail(cg, "out of memory printing a split loop");
	} else {
		snprintf(note, sizeof note, "/* split at %s: %d loops, one "
			 "call of a chain each */", l->split->calls,
			 l->split->n_parts);
		p = line(p, note);
		p = l->split->strip_mined ? print_mined(p, cg, l->split, l, &lt) :
		    print_whole(p, cg, l->split, l, &lt);
	}
	free(lt.init);
	free(lt.bound);
	return p;
}
