/* The CUDA backend (DESIGN 1.6; codegen.h has the entry points, target.h
 * the unit's ABI): the kernels of a program as CUDA, printed from the
 * same annotated isl AST as the C backend (prepare.c, annotate.c), with
 * the statements printed as the C backend prints them.
 *
 * Needs: a settled attempt of the kernel (fl_cg_attempt) whose tile-local
 * arrays fit the block's __shared__ budget.  Gives, per kernel:
 *   - phases: each top-level part of the AST (a child of the root block,
 *     or the root) is one launch, because what one part writes must be
 *     complete in global memory before the next reads it, and a grid has
 *     no barrier.  A phase is a __device__ function taking its block
 *     coordinates (so that a layer-3 kernel can hand each branch its own
 *     range of blocks) and a __global__ entry calling it;
 *   - the loops of a phase as cuda_map.c mapped them (fl_cg_loop.gpu):
 *     over the grid's blocks (c = init + bid * inc; c += nblk * inc, so
 *     any grid size is correct), over the block's 32 x 8 threads or a
 *     warp's lanes (likewise), as warp, block or grid reductions (warp
 *     shuffles; atomics across blocks), in thread 0, or in every thread
 *     alike; code between them (statements outside any shared-out loop)
 *     runs in thread 0, and every piece of work done outside a thread's
 *     own iterations ends with __syncthreads(), so that the next piece
 *     reads what all threads wrote.  __syncthreads() is only ever printed
 *     where every thread of the block gets to (uniform control flow: the
 *     conditions there depend on block-level iterators alone);
 *   - tile-local arrays declared outside the threads' own iterations are
 *     __shared__ (one copy per block, filled by its threads); those
 *     declared inside are per-thread locals; registers are scalars;
 *   - a host function fl_k<id>(bufs) that uploads the global tensors the
 *     kernel uses, launches the phases with 32 x 8 threads per block
 *     and as many blocks as the block loop has iterations (evaluated
 *     from the AST; a default when it cannot be), times the launches
 *     with CUDA events, and downloads what the kernel wrote.
 * A layer-3 kernel launches its branches together, the blocks of each
 * grid split among them (a dispatcher on blockIdx.x): the i-th grid
 * runs the i-th phase of each branch.  Custom ops get a hand-
 * written kernel, one row (cumsum) or element (copy) per thread. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/ast.h>
#include <isl/printer.h>

#include "codegen_impl.h"
#include "strbuf.h"

#define BLOCK_THREADS (FL_CUDA_BLOCK_X * FL_CUDA_BLOCK_Y)
#define MAX_BLOCKS_X (1L << 20)

/* ---- printing a phase --------------------------------------------------- */

typedef struct cu_printer {
	fl_cg_kernel *cg;
	int inner;		/* > 0: inside work that one thread does */
} cu_printer;

static __isl_give isl_printer *line(__isl_take isl_printer *p, const char *s)
{
	p = isl_printer_start_line(p);
	p = isl_printer_print_str(p, s);
	return isl_printer_end_line(p);
}

static __isl_give isl_printer *print_expr(__isl_take isl_printer *p,
					  __isl_take isl_ast_expr *e)
{
	p = isl_printer_print_ast_expr(p, e);
	isl_ast_expr_free(e);
	return p;
}

/* Tile-local arrays declared in the body of loop scope: __shared__ when
 * the body is the block's uniform code, else the thread's own. */
static __isl_give isl_printer *print_locals(__isl_take isl_printer *p,
					    const cu_printer *cp,
					    const fl_cg_loop *scope)
{
	const fl_cg_kernel *cg = cp->cg;
	char buf[96], dims[256];

	for (int t = 0; t < cg->g->n_tensors; t++) {
		const fl_cg_array *a = &cg->arr[t];
		size_t n = 0;

		if (!fl_cg_declared_in(a, scope))
			continue;
		if (a->reg) {
			snprintf(buf, sizeof buf, "float T%d_r;", t);
			p = line(p, buf);
			continue;
		}
		dims[0] = '\0';
		for (int d = 0; d < a->rank; d++)
			n += (size_t)snprintf(dims + n, sizeof dims - n,
					      "[%lld]", (long long)a->size[d]);
		snprintf(buf, sizeof buf, "%sfloat T%d_loc",
			 cp->inner ? "" : "__shared__ ", t);
		p = isl_printer_start_line(p);
		p = isl_printer_print_str(p, buf);
		p = isl_printer_print_str(p, a->rank ? dims : "[1]");
		p = isl_printer_print_str(p, ";");
		p = isl_printer_end_line(p);
	}
	return p;
}

/* "for (int c = (init) + (first) * (inc); cond; c += (step) * (inc)) {"
 * where first and step share the iterations out (NULL: the plain loop);
 * a degenerate loop is a block that sets its iterator once. */
static __isl_give isl_printer *print_header(__isl_take isl_printer *p,
					    const cu_printer *cp,
					    __isl_keep isl_ast_node *node,
					    const char *first,
					    const char *step)
{
	isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
	const char *type = cp->cg->wide ? "long " : "int ";

	p = isl_printer_start_line(p);
	if (fl_cg_is_degenerate(node)) {
		p = isl_printer_print_str(p, "{ const ");
		p = isl_printer_print_str(p, type);
		p = isl_printer_print_ast_expr(p, it);
		p = isl_printer_print_str(p, " = ");
		p = print_expr(p, isl_ast_node_for_get_init(node));
		p = isl_printer_print_str(p, "; (void)");
		p = isl_printer_print_ast_expr(p, it);
		p = isl_printer_print_str(p, ";");
	} else {
		p = isl_printer_print_str(p, "for (");
		p = isl_printer_print_str(p, type);
		p = isl_printer_print_ast_expr(p, it);
		p = isl_printer_print_str(p, " = ");
		if (first)
			p = isl_printer_print_str(p, "(");
		p = print_expr(p, isl_ast_node_for_get_init(node));
		if (first) {
			p = isl_printer_print_str(p, ") + ");
			p = isl_printer_print_str(p, first);
			p = isl_printer_print_str(p, " * (");
			p = print_expr(p, isl_ast_node_for_get_inc(node));
			p = isl_printer_print_str(p, ")");
		}
		p = isl_printer_print_str(p, "; ");
		p = print_expr(p, isl_ast_node_for_get_cond(node));
		p = isl_printer_print_str(p, "; ");
		p = isl_printer_print_ast_expr(p, it);
		p = isl_printer_print_str(p, " += ");
		if (step) {
			p = isl_printer_print_str(p, step);
			p = isl_printer_print_str(p, " * (");
		}
		p = print_expr(p, isl_ast_node_for_get_inc(node));
		p = isl_printer_print_str(p, step ? ")) {" : ") {");
	}
	isl_ast_expr_free(it);
	return isl_printer_end_line(p);
}

/* The loop's header, its locals, its body, "}". */
static __isl_give isl_printer *print_loop(__isl_take isl_printer *p,
					  cu_printer *cp,
					  __isl_keep isl_ast_node *node,
					  __isl_keep isl_ast_print_options *o,
					  const char *first, const char *step)
{
	isl_ast_node *body = isl_ast_node_for_get_body(node);
	const fl_cg_loop *l = fl_cg_loop_of(node);

	p = print_header(p, cp, node, first, step);
	p = isl_printer_indent(p, 2);
	if (l)
		p = print_locals(p, cp, l);
	p = fl_cg_print_body(p, body, o);
	p = isl_printer_indent(p, -2);
	isl_ast_node_free(body);
	return line(p, "}");
}

/* The element accumulator k of b stands for. */
static __isl_give isl_printer *print_acc_element(__isl_take isl_printer *p,
						 const fl_cg_kernel *cg,
						 const fl_cg_acc *b, int k)
{
	const fl_cg_stmt *u = b->upd[k];

	return fl_cg_print_access(p, cg, u->write, u->op->out[0]);
}

/* The value accumulator k starts from: the hoisted init's, else the
 * element's. */
static __isl_give isl_printer *print_acc_start(__isl_take isl_printer *p,
					       const fl_cg_kernel *cg,
					       const fl_cg_acc *b, int k)
{
	char buf[64];

	if (b->init[k])
		return isl_printer_print_str(p,
			fl_op_c_templates_typed(b->upd[k]->op,
				fl_op_operand_dtype(cg->g, b->upd[k]->op), buf,
				sizeof buf).init);
	return print_acc_element(p, cg, b, k);
}

/* FL_RED_SUM, _MAX, _MIN or _PROD: how partial results combine. */
static const char *combine_name(const fl_cg_stmt *u)
{
	const char *kind = fl_cg_acc_kind(u->op->kind);

	if (kind && strcmp(kind, "max") == 0)
		return "FL_RED_MAX";
	if (kind && strcmp(kind, "min") == 0)
		return "FL_RED_MIN";
	if (kind && strcmp(kind, "*") == 0)
		return "FL_RED_PROD";
	return "FL_RED_SUM";
}

/* A loop with scalar accumulators inside one thread's work, as the C
 * backend has it: "{ float fl_acc0 = start; for (..) ..; element =
 * fl_acc0; }". */
static __isl_give isl_printer *print_acc_loop(__isl_take isl_printer *p,
					      cu_printer *cp,
					      __isl_keep isl_ast_node *node,
					      __isl_keep isl_ast_print_options *o)
{
	const fl_cg_acc *b = fl_cg_loop_of(node)->acc;
	char buf[48];

	p = line(p, "{");
	p = isl_printer_indent(p, 2);
	for (int k = 0; k < b->n; k++) {
		snprintf(buf, sizeof buf, "%s fl_acc%d = ", fl_dtype_c_type(
				 cp->cg->g->tensors[b->upd[k]->op->out[0]].dtype),
			 k);
		p = isl_printer_start_line(p);
		p = isl_printer_print_str(p, buf);
		p = print_acc_start(p, cp->cg, b, k);
		p = isl_printer_print_str(p, ";");
		p = isl_printer_end_line(p);
	}
	p = print_loop(p, cp, node, o, NULL, NULL);
	for (int k = 0; k < b->n; k++) {
		p = isl_printer_start_line(p);
		p = print_acc_element(p, cp->cg, b, k);
		snprintf(buf, sizeof buf, " = fl_acc%d;", k);
		p = isl_printer_print_str(p, buf);
		p = isl_printer_end_line(p);
	}
	p = isl_printer_indent(p, -2);
	return line(p, "}");
}

/* "{ float fl_acc<k> = identity; ..." and loop node with its iterations
 * shared out (from `first` by `step`): each thread's partial results.
 * The caller combines them and closes the brace. */
static __isl_give isl_printer *print_partials(__isl_take isl_printer *p,
					      cu_printer *cp,
					      __isl_keep isl_ast_node *node,
					      __isl_keep isl_ast_print_options *o,
					      const char *first,
					      const char *step)
{
	const fl_cg_acc *b = fl_cg_loop_of(node)->acc;
	char buf[128];

	p = line(p, "{");
	p = isl_printer_indent(p, 2);
	for (int k = 0; k < b->n; k++) {
		/* the warp, block and atomic combines are float code */
		if (fl_dtype_is_int(cp->cg->g->tensors[b->upd[k]->op->out[0]].dtype))
			fl_cg_fail(cp->cg, "CUDA: a reduction shared out among "
				   "threads must be f32 (docs/types.md)");
		snprintf(buf, sizeof buf, "float fl_acc%d = fl_identity(%s);",
			 k, combine_name(b->upd[k]));
		p = line(p, buf);
	}
	cp->inner++;
	p = print_loop(p, cp, node, o, first, step);
	cp->inner--;
	return p;
}

/* A block-level reduction: each thread a partial result over its share
 * of the iterations, from the identity; the block combines them; thread
 * 0 combines the total with the start value and stores it. */
static __isl_give isl_printer *print_reduce(__isl_take isl_printer *p,
					    cu_printer *cp,
					    __isl_keep isl_ast_node *node,
					    __isl_keep isl_ast_print_options *o)
{
	const fl_cg_acc *b = fl_cg_loop_of(node)->acc;
	char buf[128];

	p = print_partials(p, cp, node, o, "fl_tid", "FL_BLOCK_THREADS");
	for (int k = 0; k < b->n; k++) {
		snprintf(buf, sizeof buf, "fl_acc%d = fl_block_reduce(fl_acc%d, "
			 "%s);", k, k, combine_name(b->upd[k]));
		p = line(p, buf);
	}
	p = line(p, "if (fl_tid == 0) {");
	p = isl_printer_indent(p, 2);
	for (int k = 0; k < b->n; k++) {
		p = isl_printer_start_line(p);
		p = print_acc_element(p, cp->cg, b, k);
		p = isl_printer_print_str(p, " = fl_combine(");
		p = isl_printer_print_str(p, combine_name(b->upd[k]));
		p = isl_printer_print_str(p, ", ");
		p = print_acc_start(p, cp->cg, b, k);
		snprintf(buf, sizeof buf, ", fl_acc%d);", k);
		p = isl_printer_print_str(p, buf);
		p = isl_printer_end_line(p);
	}
	p = isl_printer_indent(p, -2);
	p = line(p, "}");
	p = line(p, "__syncthreads();");
	p = isl_printer_indent(p, -2);
	return line(p, "}");
}

/* A row reduction over the lanes of a warp (its row loop is shared out
 * over threadIdx.y, one row per warp): per-lane partial results, then a
 * butterfly over the warp so that every lane holds the total, combined
 * with the start value read before any lane stores (hence the
 * __syncwarp between), and stored by every lane alike. */
static __isl_give isl_printer *print_warp_reduce(__isl_take isl_printer *p,
						 cu_printer *cp,
						 __isl_keep isl_ast_node *node,
						 __isl_keep isl_ast_print_options *o)
{
	const fl_cg_acc *b = fl_cg_loop_of(node)->acc;
	char buf[128];

	p = print_partials(p, cp, node, o, "(int)threadIdx.x", "FL_BLOCK_X");
	for (int k = 0; k < b->n; k++) {
		snprintf(buf, sizeof buf, "const float fl_start%d = ", k);
		p = isl_printer_start_line(p);
		p = isl_printer_print_str(p, buf);
		p = print_acc_start(p, cp->cg, b, k);
		p = isl_printer_print_str(p, ";");
		p = isl_printer_end_line(p);
	}
	p = line(p, "__syncwarp();");
	for (int k = 0; k < b->n; k++) {
		p = isl_printer_start_line(p);
		p = print_acc_element(p, cp->cg, b, k);
		snprintf(buf, sizeof buf, " = fl_combine(%s, fl_start%d, "
			 "fl_warp_reduce(fl_acc%d, %s));", combine_name(b->upd[k]),
			 k, k, combine_name(b->upd[k]));
		p = isl_printer_print_str(p, buf);
		p = isl_printer_end_line(p);
	}
	p = line(p, "__syncwarp();");
	p = isl_printer_indent(p, -2);
	return line(p, "}");
}

/* An all-reduce over the grid: per-thread partial results over a
 * grid-wide stride, combined in the block, then into the element with
 * an atomic operation by each block's thread 0. */
static __isl_give isl_printer *print_reduce_grid(__isl_take isl_printer *p,
						 cu_printer *cp,
						 __isl_keep isl_ast_node *node,
						 __isl_keep isl_ast_print_options *o)
{
	const fl_cg_acc *b = fl_cg_loop_of(node)->acc;
	char buf[128];

	p = print_partials(p, cp, node, o,
			   "(fl_bid * FL_BLOCK_THREADS + fl_tid)",
			   "(fl_nblk * FL_BLOCK_THREADS)");
	for (int k = 0; k < b->n; k++) {
		snprintf(buf, sizeof buf, "fl_acc%d = fl_block_reduce(fl_acc%d, "
			 "%s);", k, k, combine_name(b->upd[k]));
		p = line(p, buf);
		p = isl_printer_start_line(p);
		p = isl_printer_print_str(p, "if (fl_tid == 0) fl_atomic_combine(&");
		p = print_acc_element(p, cp->cg, b, k);
		snprintf(buf, sizeof buf, ", fl_acc%d, %s);", k,
			 combine_name(b->upd[k]));
		p = isl_printer_print_str(p, buf);
		p = isl_printer_end_line(p);
	}
	p = isl_printer_indent(p, -2);
	return line(p, "}");
}

/* Work that thread 0 does for the block, then a barrier. */
static __isl_give isl_printer *print_serial(__isl_take isl_printer *p,
					    cu_printer *cp,
					    __isl_keep isl_ast_node *node,
					    __isl_keep isl_ast_print_options *o)
{
	const fl_cg_loop *l = fl_cg_loop_of(node);

	p = line(p, "if (fl_tid == 0) {");
	p = isl_printer_indent(p, 2);
	cp->inner++;
	if (l && l->acc)
		p = print_acc_loop(p, cp, node, o);
	else
		p = print_loop(p, cp, node, o, NULL, NULL);
	cp->inner--;
	p = isl_printer_indent(p, -2);
	p = line(p, "}");
	return line(p, "__syncthreads();");
}

/* A loop shared out among the threads (its body their own work). */
static __isl_give isl_printer *print_threads(__isl_take isl_printer *p,
					     cu_printer *cp,
					     __isl_keep isl_ast_node *node,
					     __isl_keep isl_ast_print_options *o,
					     const char *first,
					     const char *step, bool barrier)
{
	cp->inner++;
	p = print_loop(p, cp, node, o, first, step);
	cp->inner--;
	return barrier ? line(p, "__syncthreads();") : p;
}

static __isl_give isl_printer *print_for(__isl_take isl_printer *p,
					 __isl_take isl_ast_print_options *o,
					 __isl_keep isl_ast_node *node,
					 void *user)
{
	cu_printer *cp = user;
	const fl_cg_loop *l = fl_cg_loop_of(node);
	int how = l ? l->gpu : cp->inner ? FL_GPU_PLAIN : FL_GPU_SERIAL;

	switch (how) {
	case FL_GPU_BLOCK_X:
		p = print_loop(p, cp, node, o, "fl_bid", "fl_nblk");
		break;
	case FL_GPU_BLOCK_Y:
		p = print_loop(p, cp, node, o, "fl_bidy", "fl_nblky");
		break;
	case FL_GPU_THREADS:
		p = print_threads(p, cp, node, o, "fl_tid", "FL_BLOCK_THREADS",
				  true);
		break;
	case FL_GPU_THREAD_Y:
		p = print_threads(p, cp, node, o, "(int)threadIdx.y",
				  "FL_BLOCK_Y", true);
		break;
	case FL_GPU_THREAD_X:
		p = print_threads(p, cp, node, o, "(int)threadIdx.x",
				  "FL_BLOCK_X", false);
		break;
	case FL_GPU_REDUCE:
		p = print_reduce(p, cp, node, o);
		break;
	case FL_GPU_REDUCE_GRID:
		p = print_reduce_grid(p, cp, node, o);
		break;
	case FL_GPU_WARP_REDUCE:
		p = print_warp_reduce(p, cp, node, o);
		break;
	case FL_GPU_SERIAL:
		p = print_serial(p, cp, node, o);
		break;
	default:	/* PLAIN, PASS, UNIFORM */
		if (l && l->acc)
			p = print_acc_loop(p, cp, node, o);
		else
			p = print_loop(p, cp, node, o, NULL, NULL);
		break;
	}
	isl_ast_print_options_free(o);
	return p;
}

/* A statement: as in C inside a thread's work; in the block's uniform
 * code, thread 0's, then a barrier (a hoisted init prints nothing). */
static __isl_give isl_printer *print_user(__isl_take isl_printer *p,
					  __isl_take isl_ast_print_options *o,
					  __isl_keep isl_ast_node *node,
					  void *user)
{
	cu_printer *cp = user;
	fl_cg_stmt *st = fl_cg_stmt_of(node);
	bool hoisted = st && st->acc >= 0 && st->ps->role == FL_STMT_INIT;

	isl_ast_print_options_free(o);
	if (!st || (hoisted && !cp->inner))
		return p;
	if (cp->inner) {
		p = isl_printer_start_line(p);
		p = fl_cg_print_stmt(p, cp->cg, st);
		return isl_printer_end_line(p);
	}
	p = isl_printer_start_line(p);
	p = isl_printer_print_str(p, "if (fl_tid == 0) { ");
	p = fl_cg_print_stmt(p, cp->cg, st);
	p = isl_printer_print_str(p, " }");
	p = isl_printer_end_line(p);
	return line(p, "__syncthreads();");
}

/* The body of one phase (keep), with its mapping decided. */
static char *print_phase_body(fl_cg_kernel *cg, __isl_keep isl_ast_node *node)
{
	isl_printer *p = isl_printer_to_str(cg->ctx);
	isl_ast_print_options *o = isl_ast_print_options_alloc(cg->ctx);
	cu_printer cp = {.cg = cg};
	char *s;

	p = isl_printer_set_output_format(p, ISL_FORMAT_C);
	p = isl_printer_indent(p, 2);
	o = isl_ast_print_options_set_print_user(o, &print_user, &cp);
	o = isl_ast_print_options_set_print_for(o, &print_for, &cp);
	p = fl_cg_print_body(p, node, o);
	isl_ast_print_options_free(o);
	s = isl_printer_get_str(p);
	isl_printer_free(p);
	if (!s)
		fl_cg_fail(cg, "isl could not print the CUDA AST");
	return s;
}

/* ---- one kernel ---------------------------------------------------------- */

/* A phase as the host launches it. */
typedef struct cu_phase {
	char name[96];		/* its __device__ function */
	long grid_x, grid_y;
	bool init;		/* <name>_init runs first (one thread): the
				   start values of a grid reduction */
} cu_phase;

/* What print_phases made of a kernel (or a branch). */
typedef struct cu_kernel {
	int n_phases;
	cu_phase *phases;
	int n_used, n_written;
	int *used, *written;	/* global tensors: uploaded, downloaded */
} cu_kernel;

static void cu_kernel_clear(cu_kernel *ck)
{
	free(ck->phases);
	free(ck->used);
	free(ck->written);
	memset(ck, 0, sizeof *ck);
}

/* The top-level parts of ast (keep): the root block's children, else the
 * root.  __isl_give. */
static __isl_give isl_ast_node_list *phases_of(__isl_keep isl_ast_node *ast)
{
	if (isl_ast_node_get_type(ast) == isl_ast_node_block)
		return isl_ast_node_block_get_children(ast);
	return isl_ast_node_list_from_ast_node(isl_ast_node_copy(ast));
}

static const char phase_params[] =
	"(float *const *bufs, long fl_bid, long fl_nblk, long fl_bidy, "
	"long fl_nblky)";

/* "element = start;" for each accumulator of grid reduction node (keep)
 * whose init was hoisted, into *text (malloc'd; NULL: none). */
static int grid_reduce_starts(fl_cg_kernel *cg, __isl_keep isl_ast_node *node,
			      char **text)
{
	const fl_cg_loop *l = fl_cg_loop_of(node);
	isl_printer *p;
	bool any = false;

	*text = NULL;
	if (!l || l->gpu != FL_GPU_REDUCE_GRID)
		return 0;
	p = isl_printer_to_str(cg->ctx);
	p = isl_printer_set_output_format(p, ISL_FORMAT_C);
	p = isl_printer_indent(p, 2);
	for (int k = 0; k < l->acc->n; k++) {
		if (!l->acc->init[k])
			continue;
		any = true;
		p = isl_printer_start_line(p);
		p = print_acc_element(p, cg, l->acc, k);
		p = isl_printer_print_str(p, " = ");
		p = print_acc_start(p, cg, l->acc, k);
		p = isl_printer_print_str(p, ";");
		p = isl_printer_end_line(p);
	}
	*text = any ? isl_printer_get_str(p) : NULL;
	isl_printer_free(p);
	return any && !*text ? -1 : 0;
}

/* The launch before a grid reduction that sets its start values. */
static int print_phase_init(fl_strbuf *out, fl_cg_kernel *cg,
			    __isl_keep isl_ast_node *node, cu_phase *ph)
{
	char *starts;

	if (grid_reduce_starts(cg, node, &starts) < 0)
		return -1;
	if (!starts)
		return 0;
	ph->init = true;
	fl_strbuf_printf(out, "static __global__ void %s_init(float *const "
			 "*bufs)\n{\n", ph->name);
	fl_cg_global_decls(out, cg->g, cg->arr);
	fl_strbuf_printf(out, "%s}\n\n", starts);
	free(starts);
	return 0;
}

/* The phase's __device__ function. */
static int print_phase(fl_strbuf *out, fl_cg_kernel *cg,
		       __isl_keep isl_ast_node *node, cu_phase *ph)
{
	fl_cuda_phase_map pm;
	char *body;

	fl_cuda_map_phase(node, cg->tile_end, &pm);
	if (print_phase_init(out, cg, node, ph) < 0)
		return -1;
	ph->grid_x = pm.grid_x;
	ph->grid_y = pm.grid_y;
	body = print_phase_body(cg, node);
	if (!body)
		return -1;
	fl_strbuf_printf(out, "static __device__ __forceinline__ void %s%s\n{\n"
			 "  const int fl_tid = (int)(threadIdx.y * FL_BLOCK_X + "
			 "threadIdx.x);\n"
			 "  (void)fl_tid; (void)fl_bid; (void)fl_nblk; "
			 "(void)fl_bidy; (void)fl_nblky;\n", ph->name,
			 phase_params);
	fl_cg_global_decls(out, cg->g, cg->arr);
	fl_strbuf_printf(out, "%s}\n\n", body);
	free(body);
	return 0;
}

/* The global tensors the kernel uses and writes, into ck. */
static int note_tensors(const fl_cg_kernel *cg, cu_kernel *ck)
{
	int n = cg->g->n_tensors;

	ck->used = calloc((size_t)n + 1, sizeof *ck->used);
	ck->written = calloc((size_t)n + 1, sizeof *ck->written);
	if (!ck->used || !ck->written)
		return -1;
	for (int t = 0; t < n; t++) {
		const fl_cg_array *a = &cg->arr[t];

		if (!a->used || a->local)
			continue;
		ck->used[ck->n_used++] = t;
		if (a->written)
			ck->written[ck->n_written++] = t;
	}
	return 0;
}

/* Every phase of the settled attempt's ast (keep) as a __device__
 * function named <cname>_p<k>. */
static int print_phases(fl_strbuf *out, fl_cg_kernel *cg,
			__isl_keep isl_ast_node *ast, const char *cname,
			cu_kernel *ck)
{
	isl_ast_node_list *list = phases_of(ast);
	isl_size n = isl_ast_node_list_n_ast_node(list);
	int rc = n < 0 ? -1 : 0;

	ck->phases = calloc((size_t)(n > 0 ? n : 0) + 1, sizeof *ck->phases);
	if (!ck->phases)
		rc = -1;
	for (int i = 0; rc == 0 && i < n; i++) {
		isl_ast_node *c = isl_ast_node_list_get_at(list, i);
		cu_phase *ph = &ck->phases[ck->n_phases++];

		snprintf(ph->name, sizeof ph->name, "%s_p%d", cname, i);
		rc = print_phase(out, cg, c, ph);
		isl_ast_node_free(c);
	}
	isl_ast_node_list_free(list);
	if (rc == 0 && note_tensors(cg, ck) < 0)
		rc = -1;
	return rc;
}

/* The settled attempt of kernel cg printed as phases, retrying with
 * tensors moved to global memory until every tile-local one is placed. */
static int polyhedral_phases(fl_strbuf *out, fl_cg_kernel *cg,
			     const char *cname, cu_kernel *ck)
{
	cg->wide = fl_cg_kernel_is_wide(cg->g, cg->k);
	cg->cuda = true;
	for (int attempt = 0; attempt <= cg->g->n_tensors + 1; attempt++) {
		isl_ast_node *ast;
		int rc = fl_cg_attempt(cg, &ast);

		if (rc == 0 && ast) {
			rc = print_phases(out, cg, ast, cname, ck);
			isl_ast_node_free(ast);
			if (rc < 0 && !cg->failed)
				fl_error_set(cg->err, "codegen: out of memory");
			return rc;
		}
		isl_ast_node_free(ast);
		if (rc < 0 || (rc == 0 && !ast))
			return -1;
	}
	fl_error_set(cg->err, "kernel %s: placement did not settle",
		     cg->k->name);
	return -1;
}

/* One kernel (or branch) k: comment, phases; its demotions appended. */
static int polyhedral_kernel(fl_strbuf *out, const fl_program *p,
			     const fl_kernel *k, const char *cname,
			     int64_t budget, cu_kernel *ck,
			     fl_codegen_demotion **demoted, int *n_demoted,
			     fl_error *err)
{
	fl_strbuf text = {0};
	fl_cg_kernel cg;
	int rc = -1;

	if (!k->schedule) {
		fl_error_set(err, "kernel %s has no schedule", k->name);
		return -1;
	}
	if (fl_cg_init(&cg, p, k, err) == 0) {
		cg.budget = budget;
		rc = polyhedral_phases(&text, &cg, cname, ck);
	}
	if (rc == 0) {
		fl_cg_kernel_comment(out, p->graph, k, cname, &cg);
		fl_strbuf_printf(out, "%s", text.s ? text.s : "");
		if (demoted && fl_cg_note_demotions(&cg, demoted,
						    n_demoted) < 0) {
			fl_error_set(err, "codegen: out of memory");
			rc = -1;
		}
	}
	free(text.s);
	fl_cg_clear(&cg);
	return rc;
}

/* ---- the host side ---------------------------------------------------- */

static void print_int_array(fl_strbuf *out, const char *name, const int *v,
			    int n)
{
	fl_strbuf_printf(out, "  static const int %s[] = {", name);
	for (int i = 0; i < n; i++)
		fl_strbuf_printf(out, "%s%d", i ? ", " : "", v[i]);
	fl_strbuf_printf(out, "%s};\n", n ? "" : "-1");
}

/* The __global__ entry of phase ph. */
static void print_entry(fl_strbuf *out, const cu_phase *ph)
{
	fl_strbuf_printf(out, "static __global__ void __launch_bounds__("
			 "FL_BLOCK_THREADS) %s_g(float *const *bufs)\n{\n"
			 "  %s(bufs, blockIdx.x, gridDim.x, blockIdx.y, "
			 "gridDim.y);\n}\n\n", ph->name, ph->name);
}

/* The host function: uploads, the launches in order, downloads. */
static void print_host(fl_strbuf *out, const char *cname,
		       const cu_kernel *ck, const char *launches)
{
	fl_strbuf_printf(out, "extern \"C\" void %s(float *const *bufs)\n{\n",
			 cname);
	print_int_array(out, "used", ck->used, ck->n_used);
	print_int_array(out, "written", ck->written, ck->n_written);
	fl_strbuf_printf(out, "\n  fl_cuda_begin(bufs, used, %d);\n%s"
			 "  fl_cuda_end(bufs, written, %d);\n}\n\n", ck->n_used,
			 launches, ck->n_written);
}

/* The launch of phase ph's start values, when it has them. */
static void init_launch_line(fl_strbuf *out, const cu_phase *ph)
{
	if (ph->init)
		fl_strbuf_printf(out, "  %s_init<<<1, 1>>>(fl_dbufs);\n"
				 "  fl_cuda_check(\"%s_init\");\n", ph->name,
				 ph->name);
}

static void launch_line(fl_strbuf *out, const char *fn, long gx, long gy)
{
	fl_strbuf_printf(out, "  %s<<<dim3(%ld, %ld), dim3(FL_BLOCK_X, "
			 "FL_BLOCK_Y)>>>(fl_dbufs);\n  fl_cuda_check(\"%s\");\n",
			 fn, gx, gy, fn);
}

static int plain_kernel(fl_strbuf *out, const fl_program *p,
			const fl_kernel *k, const char *cname, int64_t budget,
			fl_codegen_demotion **demoted, int *n_demoted,
			fl_error *err)
{
	cu_kernel ck = {0};
	fl_strbuf launches = {0};
	char fn[128];

	if (polyhedral_kernel(out, p, k, cname, budget, &ck, demoted,
			      n_demoted, err) < 0) {
		cu_kernel_clear(&ck);
		return -1;
	}
	for (int i = 0; i < ck.n_phases; i++) {
		print_entry(out, &ck.phases[i]);
		snprintf(fn, sizeof fn, "%s_g", ck.phases[i].name);
		init_launch_line(&launches, &ck.phases[i]);
		launch_line(&launches, fn, ck.phases[i].grid_x,
			    ck.phases[i].grid_y);
	}
	print_host(out, cname, &ck, launches.s ? launches.s : "");
	free(launches.s);
	cu_kernel_clear(&ck);
	return 0;
}

/* Layer 3: the branches share grids, each on its own range of blocks (a
 * dispatcher on blockIdx.x): the i-th grid runs the i-th phase of every
 * branch that has one -- branches are independent, and each branch's
 * phases still run in order, one grid after another.  A branch with
 * fewer rows of blocks than the grid leaves the others idle. */
static void print_dispatch(fl_strbuf *out, const char *cname,
			   const cu_kernel *br, int n, int phase,
			   fl_strbuf *launches)
{
	long start = 0, gy = 1;
	char fn[128];

	snprintf(fn, sizeof fn, "%s_g%d", cname, phase);
	fl_strbuf_printf(out, "/* %s, launch %d: layer 3 runs its branches side "
			 "by side, each on its own range of blocks */\n"
			 "static __global__ void __launch_bounds__("
			 "FL_BLOCK_THREADS) %s(float *const *bufs)\n{\n"
			 "  long b = blockIdx.x;\n\n", cname, phase, fn);
	for (int i = 0; i < n; i++) {
		const cu_phase *ph = &br[i].phases[phase];

		if (phase >= br[i].n_phases)
			continue;
		init_launch_line(launches, ph);
		fl_strbuf_printf(out, "  if (b >= %ld && b < %ld) {\n"
				 "    if (blockIdx.y < %ld)\n"
				 "      %s(bufs, b - %ld, %ld, blockIdx.y, %ld);\n"
				 "    return;\n  }\n", start,
				 start + ph->grid_x, ph->grid_y, ph->name,
				 start, ph->grid_x, ph->grid_y);
		start += ph->grid_x;
		if (ph->grid_y > gy)
			gy = ph->grid_y;
	}
	fl_strbuf_printf(out, "}\n\n");
	launch_line(launches, fn, start, gy);
}

static int max_phases(const cu_kernel *br, int n)
{
	int m = 0;

	for (int i = 0; i < n; i++)
		if (br[i].n_phases > m)
			m = br[i].n_phases;
	return m;
}

/* The used and written tensors of all branches, merged into all. */
static int merge_tensors(const fl_graph *g, const cu_kernel *br, int n,
			 cu_kernel *all)
{
	bool *u = calloc((size_t)g->n_tensors + 1, sizeof *u);
	bool *w = calloc((size_t)g->n_tensors + 1, sizeof *w);
	int rc = 0;

	all->used = calloc((size_t)g->n_tensors + 1, sizeof *all->used);
	all->written = calloc((size_t)g->n_tensors + 1, sizeof *all->written);
	if (!u || !w || !all->used || !all->written)
		rc = -1;
	for (int i = 0; rc == 0 && i < n; i++) {
		for (int j = 0; j < br[i].n_used; j++)
			u[br[i].used[j]] = true;
		for (int j = 0; j < br[i].n_written; j++)
			w[br[i].written[j]] = true;
	}
	for (int t = 0; rc == 0 && t < g->n_tensors; t++) {
		if (u[t])
			all->used[all->n_used++] = t;
		if (w[t])
			all->written[all->n_written++] = t;
	}
	free(u);
	free(w);
	return rc;
}

static int branches_kernel(fl_strbuf *out, const fl_program *p,
			   const fl_kernel *k, const char *cname,
			   int64_t budget, fl_codegen_demotion **demoted,
			   int *n_demoted, fl_error *err)
{
	int n = k->n_branches, rc = 0;
	cu_kernel *br = calloc((size_t)n + 1, sizeof *br), all = {0};
	fl_strbuf launches = {0};
	char bname[96];

	if (!br) {
		fl_error_set(err, "codegen: out of memory");
		return -1;
	}
	for (int b = 0; rc == 0 && b < n; b++) {
		snprintf(bname, sizeof bname, "%s_b%d", cname, b);
		rc = polyhedral_kernel(out, p, &k->branches[b], bname, budget,
				       &br[b], demoted, n_demoted, err);
	}
	if (rc == 0 && merge_tensors(p->graph, br, n, &all) < 0) {
		fl_error_set(err, "codegen: out of memory");
		rc = -1;
	}
	for (int i = 0; rc == 0 && i < max_phases(br, n); i++)
		print_dispatch(out, cname, br, n, i, &launches);
	if (rc == 0)
		print_host(out, cname, &all, launches.s ? launches.s : "");
	for (int b = 0; b < n; b++)
		cu_kernel_clear(&br[b]);
	cu_kernel_clear(&all);
	free(br);
	free(launches.s);
	return rc;
}

/* A custom op: cumsum along the last axis (in double, like the
 * reference), one row per thread, or a copy, one element per thread. */
static int custom_kernel(fl_strbuf *out, const fl_graph *g, const fl_op *op,
			 const char *cname, fl_error *err)
{
	const fl_shape *s = &g->tensors[op->in[0]].shape;
	int64_t n = fl_shape_numel(s), len = s->rank ? s->dim[s->rank - 1] : 1;
	int64_t items;
	const char *fn = "cumsum";
	cu_kernel ck = {0};
	int used[2] = {op->in[0], op->out[0]}, written[1] = {op->out[0]};
	char launch[512], entry[128];
	long blocks;

	if (fl_attr_string(&op->attrs, "fn", "cumsum", &fn, err) < 0)
		return -1;
	items = strcmp(fn, "cumsum") == 0 ? (len ? n / len : 0) : n;
	blocks = (long)((items + BLOCK_THREADS - 1) / BLOCK_THREADS);
	blocks = blocks < 1 ? 1 : blocks > MAX_BLOCKS_X ? MAX_BLOCKS_X : blocks;
	snprintf(entry, sizeof entry, "%s_g", cname);
	fl_strbuf_printf(out, "static __global__ void __launch_bounds__("
			 "FL_BLOCK_THREADS) %s(float *const *bufs)\n{\n"
			 "  const float *restrict x = bufs[%d];\n"
			 "  float *restrict y = bufs[%d];\n"
			 "  const long first = (long)blockIdx.x * FL_BLOCK_THREADS"
			 " + threadIdx.y * FL_BLOCK_X + threadIdx.x;\n"
			 "  const long step = (long)gridDim.x * "
			 "FL_BLOCK_THREADS;\n\n", entry, op->in[0], op->out[0]);
	if (strcmp(fn, "cumsum") == 0)
		fl_strbuf_printf(out, "  for (long r = first; r < %lldL; r += "
				 "step) {\n    double acc = 0.0;\n\n"
				 "    for (long j = 0; j < %lldL; j++) {\n"
				 "      acc += x[r * %lldL + j];\n"
				 "      y[r * %lldL + j] = (float)acc;\n"
				 "    }\n  }\n}\n\n", (long long)items,
				 (long long)len, (long long)len,
				 (long long)len);
	else
		fl_strbuf_printf(out, "  for (long i = first; i < %lldL; i += "
				 "step)\n    y[i] = x[i];\n}\n\n",
				 (long long)items);
	ck.used = used;
	ck.n_used = 2;
	ck.written = written;
	ck.n_written = 1;
	snprintf(launch, sizeof launch, "  %s<<<dim3(%ld, 1), dim3(FL_BLOCK_X, "
		 "FL_BLOCK_Y)>>>(fl_dbufs);\n  fl_cuda_check(\"%s\");\n", entry,
		 blocks, entry);
	print_host(out, cname, &ck, launch);
	return 0;
}

/* Static __shared__ arrays may take 48 KiB per block at most. */
static int64_t shared_budget_of(int64_t budget)
{
	if (budget <= 0 || budget > FL_CUDA_SHARED_DEFAULT)
		return FL_CUDA_SHARED_DEFAULT;
	return budget;
}

static const fl_cg_printers cuda_printers = {
	branches_kernel, custom_kernel, plain_kernel,
};

char *fl_codegen_cuda_kernel(const fl_program *p, int i,
			     int64_t shared_budget,
			     fl_codegen_demotion **demoted, int *n_demoted,
			     fl_error *err)
{
	return fl_cg_kernel_text(&cuda_printers, p, i,
				 shared_budget_of(shared_budget), demoted,
				 n_demoted, err);
}

/* The prologue of every .cu file: the device maths the op templates
 * call (CUDA's own functions; fl_fminf/fl_fmaxf keep the C backend's NaN
 * rule: a NaN operand yields the other), isl's integer helpers, and the
 * block-level reduction. */
static const char cuda_prologue[] =
	"#include <cuda_runtime.h>\n#include <math.h>\n#include <stdint.h>\n"
	"#include <stdio.h>\n#include <stdlib.h>\n\n"
	"/* each phase declares every global tensor of its kernel */\n"
	"#pragma nv_diag_suppress 177\n\n"
	"#define restrict __restrict__\n"
	"#define FL_BLOCK_X " "32\n#define FL_BLOCK_Y 8\n"
	"#define FL_BLOCK_THREADS (FL_BLOCK_X * FL_BLOCK_Y)\n"
	"#define FL_WARPS (FL_BLOCK_THREADS / 32)\n\n"
	"__device__ __forceinline__ float fl_fminf(float a, float b)\n"
	"{\n  return isnan(b) ? a : a < b ? a : b;\n}\n\n"
	"__device__ __forceinline__ float fl_fmaxf(float a, float b)\n"
	"{\n  return isnan(b) ? a : a > b ? a : b;\n}\n\n"
	"__device__ __forceinline__ bool fl_isnan_bits(float x)\n"
	"{\n  return (__float_as_uint(x) & 0x7fffffffu) > 0x7f800000u;\n}\n\n"
	"__device__ __forceinline__ bool fl_isinf_bits(float x, int pos, "
	"int neg)\n"
	"{\n  return (pos && __float_as_uint(x) == 0x7f800000u) ||\n"
	"         (neg && __float_as_uint(x) == 0xff800000u);\n}\n\n"
	"__device__ __forceinline__ float fl_expf(float x)\n"
	"{\n  return expf(x);\n}\n\n"
	"/* the C backend's variants for a bounded argument */\n"
	"#define fl_expf_nonpos fl_expf\n#define fl_expf_in_range fl_expf\n"
	"#define fl_expf_small fl_expf\n\n"
	"__device__ __forceinline__ float fl_tanhf(float x)\n"
	"{\n  return tanhf(x);\n}\n\n"
	"__device__ __forceinline__ float fl_erff(float x)\n"
	"{\n  return erff(x);\n}\n\n"
	"#define floord(n, d) (((n) < 0) ? -((-(n) + (d) - 1) / (d)) "
	": (n) / (d))\n"
	"#define min(x, y) ((x) < (y) ? (x) : (y))\n"
	"#define max(x, y) ((x) > (y) ? (x) : (y))\n\n"
	"#define FL_RED_SUM 0\n#define FL_RED_MAX 1\n#define FL_RED_MIN 2\n"
	"#define FL_RED_PROD 3\n\n"
	"__device__ __forceinline__ float fl_identity(int op)\n"
	"{\n  return op == FL_RED_SUM ? 0.0f : op == FL_RED_PROD ? 1.0f : "
	"op == FL_RED_MAX ? -INFINITY : INFINITY;\n}\n\n"
	"__device__ __forceinline__ float fl_combine(int op, float a, "
	"float b)\n"
	"{\n  return op == FL_RED_SUM ? a + b : op == FL_RED_PROD ? a * b : "
	"op == FL_RED_MAX ? fl_fmaxf(a, b) : fl_fminf(a, b);\n}\n\n"
	"/* *addr = *addr (op) v, atomically: max, min and product by\n"
	" * compare-and-swap (max and min with the NaN rule of fl_fmaxf and\n"
	" * fl_fminf). */\n"
	"__device__ inline void fl_atomic_combine(float *addr, float v, int op)\n{\n"
	"  unsigned int *a = (unsigned int *)addr, old, seen;\n\n"
	"  if (op == FL_RED_SUM) {\n    atomicAdd(addr, v);\n    return;\n  }\n"
	"  old = *a;\n  do {\n    float cur = __uint_as_float(old);\n"
	"    float next = fl_combine(op, cur, v);\n\n"
	"    if (__float_as_uint(next) == old)\n      return;\n"
	"    seen = old;\n"
	"    old = atomicCAS(a, seen, __float_as_uint(next));\n"
	"  } while (old != seen);\n}\n\n"
	"/* v combined over the 32 lanes of the warp, in every lane. */\n"
	"__device__ __forceinline__ float fl_warp_reduce(float v, int op)\n{\n"
	"  for (int off = 16; off > 0; off /= 2)\n"
	"    v = fl_combine(op, v, __shfl_xor_sync(0xffffffffu, v, off));\n"
	"  return v;\n}\n\n"
	"/* v combined over the block's threads, in every thread; every thread\n"
	" * of the block calls it (it waits at barriers). */\n"
	"__device__ inline float fl_block_reduce(float v, int op)\n{\n"
	"  __shared__ float part[FL_WARPS];\n"
	"  const int tid = (int)(threadIdx.y * FL_BLOCK_X + threadIdx.x);\n"
	"  const int lane = tid % 32, warp = tid / 32;\n\n"
	"  for (int off = 16; off > 0; off /= 2)\n"
	"    v = fl_combine(op, v, __shfl_down_sync(0xffffffffu, v, off));\n"
	"  __syncthreads();\n"
	"  if (lane == 0)\n    part[warp] = v;\n"
	"  __syncthreads();\n"
	"  if (warp == 0) {\n"
	"    v = lane < FL_WARPS ? part[lane] : fl_identity(op);\n"
	"    for (int off = 16; off > 0; off /= 2)\n"
	"      v = fl_combine(op, v, __shfl_down_sync(0xffffffffu, v, off));\n"
	"    if (lane == 0)\n      part[0] = v;\n  }\n"
	"  __syncthreads();\n"
	"  return part[0];\n}\n\n";

/* The device copies of the tensors and the calls' bookkeeping. */
static const char cuda_runtime_text[] =
	"extern \"C\" {\nint fl_device_resident = 0;\n"
	"double fl_device_seconds = 0.0;\n}\n\n"
	"static float *fl_dev[FL_N_TENSORS + 1];\n"
	"static float **fl_dbufs;\n"
	"static cudaEvent_t fl_ev[2];\n\n"
	"static void fl_cuda_fail(const char *what, cudaError_t e)\n{\n"
	"  fprintf(stderr, \"fuselab CUDA: %s: %s\\n\", what, "
	"cudaGetErrorString(e));\n  abort();\n}\n\n"
	"static void fl_cuda_check(const char *what)\n{\n"
	"  cudaError_t e = cudaGetLastError();\n\n"
	"  if (e != cudaSuccess)\n    fl_cuda_fail(what, e);\n}\n\n"
	"static void fl_cuda_setup(void)\n{\n  cudaError_t e;\n\n"
	"  if (fl_dbufs)\n    return;\n"
	"  for (int t = 0; t < FL_N_TENSORS; t++)\n"
	"    if ((e = cudaMalloc((void **)&fl_dev[t], (size_t)(fl_bytes[t] ? "
	"fl_bytes[t] : 8))) != cudaSuccess)\n"
	"      fl_cuda_fail(\"allocating the device copy of a tensor\", e);\n"
	"  if ((e = cudaMalloc((void **)&fl_dbufs, (FL_N_TENSORS + 1) * "
	"sizeof(float *))) != cudaSuccess ||\n"
	"      (e = cudaMemcpy(fl_dbufs, fl_dev, (FL_N_TENSORS + 1) * "
	"sizeof(float *), cudaMemcpyHostToDevice)) != cudaSuccess ||\n"
	"      (e = cudaEventCreate(&fl_ev[0])) != cudaSuccess ||\n"
	"      (e = cudaEventCreate(&fl_ev[1])) != cudaSuccess)\n"
	"    fl_cuda_fail(\"setting up the device\", e);\n}\n\n"
	"/* Uploads the tensors a kernel uses (unless resident), then marks\n"
	" * the start of its launches. */\n"
	"static void fl_cuda_begin(float *const *bufs, const int *used, int n)\n"
	"{\n  cudaError_t e;\n\n  fl_cuda_setup();\n"
	"  for (int i = 0; i < n && !fl_device_resident; i++)\n"
	"    if ((e = cudaMemcpy(fl_dev[used[i]], bufs[used[i]], "
	"(size_t)fl_bytes[used[i]], cudaMemcpyHostToDevice))"
	" != cudaSuccess)\n      fl_cuda_fail(\"uploading a tensor\", e);\n"
	"  if ((e = cudaEventRecord(fl_ev[0])) != cudaSuccess)\n"
	"    fl_cuda_fail(\"recording an event\", e);\n}\n\n"
	"/* Waits for the launches, keeps their device time, downloads what\n"
	" * the kernel wrote (unless resident). */\n"
	"static void fl_cuda_end(float *const *bufs, const int *written, "
	"int n)\n{\n  cudaError_t e;\n  float ms = 0.0f;\n\n"
	"  if ((e = cudaEventRecord(fl_ev[1])) != cudaSuccess ||\n"
	"      (e = cudaEventSynchronize(fl_ev[1])) != cudaSuccess ||\n"
	"      (e = cudaGetLastError()) != cudaSuccess ||\n"
	"      (e = cudaEventElapsedTime(&ms, fl_ev[0], fl_ev[1])) != "
	"cudaSuccess)\n    fl_cuda_fail(\"running a kernel\", e);\n"
	"  fl_device_seconds = ms * 1e-3;\n"
	"  for (int i = 0; i < n && !fl_device_resident; i++)\n"
	"    if ((e = cudaMemcpy(bufs[written[i]], fl_dev[written[i]], "
	"(size_t)fl_bytes[written[i]], cudaMemcpyDeviceToHost))"
	" != cudaSuccess)\n      fl_cuda_fail(\"downloading a tensor\", e);\n"
	"}\n\n"
	"extern \"C\" const char *fl_device_name(void)\n{\n"
	"  static char name[256];\n  cudaDeviceProp prop;\n\n"
	"  if (!name[0] && cudaGetDeviceProperties(&prop, 0) == cudaSuccess)\n"
	"    snprintf(name, sizeof name, \"%s\", prop.name);\n"
	"  return name;\n}\n\n";

static void cuda_header(fl_strbuf *out, const fl_program *p)
{
	const fl_graph *g = p->graph;
	char name[160];

	fl_sanitize_comment(g->name ? g->name : "", name, sizeof name);
	fl_strbuf_printf(out, "/* Generated by fuselab: graph \"%s\", strategy %s, "
			 "%d kernel%s, CUDA.\n * Kernel fl_k<i> takes bufs[t] = "
			 "the host buffer of graph tensor t; the unit keeps a "
			 "device copy of each. */\n%s", name,
			 fl_strategy_name(p->strategy), p->n_kernels,
			 p->n_kernels == 1 ? "" : "s", cuda_prologue);
	/* the 16-bit floats' conversions, the C backend's and the
	 * interpreter's own, on host and device alike */
	fl_strbuf_printf(out, "#define FL_HALF_FN static __host__ __device__ "
			 "__forceinline__\n%s\n", fl_half_rt_text);
	/* bytes, each tensor in its element type (docs/types.md) */
	fl_strbuf_printf(out, "#define FL_N_TENSORS %d\n"
			 "static const long long fl_bytes[FL_N_TENSORS + 1] = {",
			 g->n_tensors);
	for (int t = 0; t < g->n_tensors; t++)
		fl_strbuf_printf(out, "%s%lldLL", t == 0 ? "\n  " :
				 t % 8 ? ", " : ",\n  ",
				 (long long)fl_shape_numel(&g->tensors[t].shape) *
				 fl_dtype_size(g->tensors[t].dtype));
	fl_strbuf_printf(out, "%s0\n};\n\n%s", g->n_tensors ? ",\n  " : "  ",
			 cuda_runtime_text);
}

static void cuda_table(fl_strbuf *out, const fl_program *p)
{
	char cname[64];

	fl_strbuf_printf(out, "extern \"C\" {\nextern const int fl_n_kernels;\n"
			 "extern void (*const fl_kernels[])(float *const *);\n"
			 "const int fl_n_kernels = %d;\n"
			 "void (*const fl_kernels[%d])(float *const *) = {\n",
			 p->n_kernels, p->n_kernels ? p->n_kernels : 1);
	for (int i = 0; i < p->n_kernels; i++)
		fl_strbuf_printf(out, "  %s,\n",
				 fl_cg_kernel_cname(&p->kernels[i], i, cname,
						    sizeof cname));
	fl_strbuf_printf(out, "%s};\n}\n", p->n_kernels ? "" : "  0\n");
}

char *fl_codegen_cuda_unit(const fl_program *p, const char *const *kernels,
			   fl_error *err)
{
	fl_strbuf out = {0};
	char *text;

	if (fl_cg_check_program(p, err) < 0 ||
	    fl_graph_check_computable(p->graph, "generate a program", err) < 0)
		return NULL;
	cuda_header(&out, p);
	for (int i = 0; i < p->n_kernels; i++)
		fl_strbuf_printf(&out, "%s", kernels[i]);
	cuda_table(&out, p);
	text = fl_strbuf_take(&out);
	if (!text)
		fl_error_set(err, "codegen: out of memory");
	return text;
}

/* fl_codegen_cuda_kernel with the default budget, no demotions. */
static char *cuda_kernel(const fl_program *p, int i, fl_error *err)
{
	return fl_codegen_cuda_kernel(p, i, 0, NULL, NULL, err);
}

char *fl_codegen_cuda(const fl_program *p, fl_error *err)
{
	return fl_cg_whole_unit(p, cuda_kernel, fl_codegen_cuda_unit, err);
}

char *fl_codegen_target(const fl_program *p, fl_target t, fl_error *err)
{
	return t == FL_TARGET_CUDA ? fl_codegen_cuda(p, err) :
				     fl_codegen_c(p, err);
}
