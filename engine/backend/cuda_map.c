/* The CUDA backend's mapping of a phase's loops onto the grid (DESIGN
 * 1.6; print_cuda.c prints what it decides): which loop runs over the
 * grid's blocks, which over the block's threads or a warp's lanes,
 * which reductions combine across threads, warps or blocks, and how
 * many blocks a launch needs.
 *
 * Needs: the annotated AST of a settled attempt (annotate.c: each for
 * node's fl_cg_loop with its parallel, coincident and accumulator
 * decisions).  Gives: fl_cg_loop.gpu for every loop of the phase (an
 * FL_GPU_* value) and the grid's size, by these rules, top down:
 *   - a phase that is one loop with accumulators (an all-reduce) spans
 *     the grid (REDUCE_GRID);
 *   - above the block loop only degenerate loops, ifs and marks may sit
 *     (PASS); the outermost loop with the C backend's "omp parallel for"
 *     runs over blocks (BLOCK_X), and a coincident tile loop nested right
 *     in it over blockIdx.y (BLOCK_Y); any other work up there (a sequence,
 *     a statement, a sequential loop) makes the whole phase one block's;
 *   - in a block's uniform code: a loop with accumulators is a block
 *     reduction (REDUCE); a tile loop with shareable loops inside runs in
 *     every thread alike, so that the threads take the point loops (a
 *     tile's elements), not the few tiles; a coincident loop whose body
 *     is inits and such a loop is a row reduction (THREAD_Y over rows, WARP_REDUCE over a
 *     row); other coincident loops run over the threads (THREADS), or a
 *     perfect nest of two over threadIdx.y and .x (THREAD_Y, THREAD_X); a
 *     sequential loop around such loops runs in every thread alike
 *     (UNIFORM); one with nothing to share out is thread 0's (SERIAL);
 *   - inside a thread's work every loop is PLAIN.
 * The numbers of blocks come from evaluating the loops' bounds (the
 * shapes are constants); where they cannot be, a default stands in: the
 * loops step over the grid, so any grid size is correct, only slower. */
#include <stdio.h>
#include <string.h>

#include <isl/ast.h>
#include <isl/id.h>
#include <isl/val.h>

#include "codegen_impl.h"

#define BLOCK_THREADS (FL_CUDA_BLOCK_X * FL_CUDA_BLOCK_Y)
/* Blocks of a phase whose block loop could not be counted. */
#define DEFAULT_BLOCKS 1024
#define MAX_BLOCKS_X (1L << 20)
#define MAX_BLOCKS_Y 65535L
/* Blocks of an all-reduce at most: enough to fill a GPU, few
 * atomics. */
#define GRID_REDUCE_BLOCKS 1024L

/* Where map_node is: above the block loop, in the block's uniform code,
 * or inside work one thread does. */
enum map_ctx { CTX_TOP, CTX_UNIFORM, CTX_INNER };

/* ---- evaluating loop bounds (grid sizes) -------------------------------- */

static bool env_get(const bound_env *env, const char *name, long *v)
{
	for (int i = env->n - 1; i >= 0; i--)
		if (strcmp(env->name[i], name) == 0) {
			*v = env->val[i];
			return true;
		}
	return false;
}

static void env_push(bound_env *env, __isl_keep isl_ast_expr *it, long v)
{
	isl_id *id = isl_ast_expr_id_get_id(it);

	if (id && env->n < MAX_BOUND) {
		snprintf(env->name[env->n], sizeof env->name[0], "%s",
			 isl_id_get_name(id));
		env->val[env->n++] = v;
	}
	isl_id_free(id);
}

static long floor_div(long a, long b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

static bool eval_expr(__isl_keep isl_ast_expr *e, const bound_env *env,
		      long *v);
static long counted_trip_count(__isl_keep isl_ast_node *node,
			       bound_env *env, long cap);

static bool eval_arg(__isl_keep isl_ast_expr *e, int i, const bound_env *env,
		     long *v)
{
	isl_ast_expr *a = isl_ast_expr_op_get_arg(e, i);
	bool ok = a && eval_expr(a, env, v);

	isl_ast_expr_free(a);
	return ok;
}

/* Binary operators; false for anything else or a division by zero. */
static bool eval_binary(enum isl_ast_expr_op_type t, long a, long b, long *v)
{
	switch (t) {
	case isl_ast_expr_op_add: *v = a + b; return true;
	case isl_ast_expr_op_sub: *v = a - b; return true;
	case isl_ast_expr_op_mul: *v = a * b; return true;
	case isl_ast_expr_op_max: *v = a > b ? a : b; return true;
	case isl_ast_expr_op_min: *v = a < b ? a : b; return true;
	case isl_ast_expr_op_le: *v = a <= b; return true;
	case isl_ast_expr_op_lt: *v = a < b; return true;
	case isl_ast_expr_op_ge: *v = a >= b; return true;
	case isl_ast_expr_op_gt: *v = a > b; return true;
	case isl_ast_expr_op_eq: *v = a == b; return true;
	case isl_ast_expr_op_and:
	case isl_ast_expr_op_and_then: *v = a && b; return true;
	case isl_ast_expr_op_or:
	case isl_ast_expr_op_or_else: *v = a || b; return true;
	default: break;
	}
	if (b == 0)
		return false;
	switch (t) {
	case isl_ast_expr_op_div:
	case isl_ast_expr_op_pdiv_q:
	case isl_ast_expr_op_fdiv_q: *v = floor_div(a, b); return true;
	case isl_ast_expr_op_pdiv_r:
	case isl_ast_expr_op_zdiv_r: *v = a % b; return true;
	default: return false;
	}
}

/* The value of e with the iterators of env; false when e uses anything
 * else (these numbers only size grids: a guess is never wrong, only
 * slower). */
static bool eval_expr(__isl_keep isl_ast_expr *e, const bound_env *env,
		      long *v)
{
	enum isl_ast_expr_op_type t;
	isl_val *val;
	isl_id *id;
	long a, b, c;
	bool ok;

	switch (isl_ast_expr_get_type(e)) {
	case isl_ast_expr_int:
		val = isl_ast_expr_int_get_val(e);
		ok = val && isl_val_is_int(val) == isl_bool_true;
		*v = ok ? isl_val_get_num_si(val) : 0;
		isl_val_free(val);
		return ok;
	case isl_ast_expr_id:
		id = isl_ast_expr_id_get_id(e);
		ok = id && env_get(env, isl_id_get_name(id), v);
		isl_id_free(id);
		return ok;
	case isl_ast_expr_op:
		break;
	default:
		return false;
	}
	t = isl_ast_expr_op_get_type(e);
	if (t == isl_ast_expr_op_minus)
		return eval_arg(e, 0, env, &a) && ((*v = -a), true);
	if (t == isl_ast_expr_op_cond || t == isl_ast_expr_op_select)
		return eval_arg(e, 0, env, &c) &&
		       eval_arg(e, c ? 1 : 2, env, v);
	if (isl_ast_expr_op_get_n_arg(e) < 2 || !eval_arg(e, 0, env, &a))
		return false;
	for (int i = 1; i < isl_ast_expr_op_get_n_arg(e); i++) {
		if (!eval_arg(e, i, env, &b) || !eval_binary(t, a, b, &a))
			return false;
	}
	*v = a;
	return true;
}

/* Iterations of a canonical loop ("c <= e", "c < e") whose bounds do
 * not depend on its own iterator, in closed form; -1 when they cannot be
 * evaluated. */
static long closed_trip_count(__isl_keep isl_ast_node *node,
			      const bound_env *env)
{
	isl_ast_expr *init = isl_ast_node_for_get_init(node);
	isl_ast_expr *cond = isl_ast_node_for_get_cond(node);
	isl_ast_expr *inc = isl_ast_node_for_get_inc(node);
	isl_ast_expr *ub = NULL;
	long c, step, e, n = -1;

	if (fl_cg_canonical_cond(node))
		ub = isl_ast_expr_op_get_arg(cond, 1);
	if (ub && eval_expr(init, env, &c) && eval_expr(inc, env, &step) &&
	    step > 0 && eval_expr(ub, env, &e)) {
		if (isl_ast_expr_op_get_type(cond) == isl_ast_expr_op_lt)
			e--;
		n = e < c ? 0 : (e - c) / step + 1;
	}
	isl_ast_expr_free(ub);
	isl_ast_expr_free(init);
	isl_ast_expr_free(cond);
	isl_ast_expr_free(inc);
	return n;
}

/* Iterations of for node `node` (keep) with env's iterators, counted up
 * to cap; -1 when its bounds cannot be evaluated. */
static long trip_count(__isl_keep isl_ast_node *node, bound_env *env,
		       long cap)
{
	long closed = closed_trip_count(node, env);

	if (closed >= 0)
		return closed < cap ? closed : cap;
	return counted_trip_count(node, env, cap);
}

/* trip_count by stepping through the iterations. */
static long counted_trip_count(__isl_keep isl_ast_node *node,
			       bound_env *env, long cap)
{
	isl_ast_expr *init = isl_ast_node_for_get_init(node);
	isl_ast_expr *cond = isl_ast_node_for_get_cond(node);
	isl_ast_expr *inc = isl_ast_node_for_get_inc(node);
	isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
	long c, step, ok, n = 0;
	int depth = env->n;

	if (eval_expr(init, env, &c) && eval_expr(inc, env, &step) &&
	    step > 0 && (env_push(env, it, c), env->n > depth)) {
		for (; n < cap; n++) {
			env->val[env->n - 1] = c + n * step;
			if (!eval_expr(cond, env, &ok)) {
				n = -1;
				break;
			}
			if (!ok)
				break;
		}
	} else {
		n = -1;
	}
	env->n = depth;
	isl_ast_expr_free(init);
	isl_ast_expr_free(cond);
	isl_ast_expr_free(inc);
	isl_ast_expr_free(it);
	return n;
}

/* The value of a degenerate loop's iterator (its init), pushed on env
 * when it can be evaluated. */
static void bind_degenerate(__isl_keep isl_ast_node *node, bound_env *env)
{
	isl_ast_expr *init = isl_ast_node_for_get_init(node);
	isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
	long v;

	if (eval_expr(init, env, &v))
		env_push(env, it, v);
	isl_ast_expr_free(init);
	isl_ast_expr_free(it);
}

/* ---- mapping the loops of a phase --------------------------------------- */

bool fl_cg_is_degenerate(__isl_keep isl_ast_node *node)
{
	return isl_ast_node_for_is_degenerate(node) == isl_bool_true;
}

/* The for loop that is the whole body of for node `node`, or NULL.
 * __isl_give. */
static __isl_give isl_ast_node *nested_for(__isl_keep isl_ast_node *node)
{
	isl_ast_node *body = isl_ast_node_for_get_body(node);
	isl_ast_node_list *list;

	if (body && isl_ast_node_get_type(body) == isl_ast_node_block) {
		list = isl_ast_node_block_get_children(body);
		isl_ast_node_free(body);
		body = isl_ast_node_list_n_ast_node(list) == 1 ?
		       isl_ast_node_list_get_at(list, 0) : NULL;
		isl_ast_node_list_free(list);
	}
	if (body && isl_ast_node_get_type(body) == isl_ast_node_for)
		return body;
	isl_ast_node_free(body);
	return NULL;
}

/* Whether the iterations of for node `node` can be shared out: a loop
 * (not one iteration), coincident, bounded above ("c <= e"), and not the
 * home of accumulators. */
static bool shareable(__isl_keep isl_ast_node *node)
{
	const fl_cg_loop *l = fl_cg_loop_of(node);

	return l && l->coincident && !l->acc && !l->acc_simd &&
	       !fl_cg_is_degenerate(node) && fl_cg_canonical_cond(node);
}

/* Whether for node `node` runs as a block-level reduction: annotate.c
 * planned its accumulators, which the C backend turns into an "omp simd
 * reduction" (or, for an all-reduce, an "omp parallel for reduction"):
 * apart from them its iterations are independent, so threads may take
 * them with partial results. */
static bool reducible(__isl_keep isl_ast_node *node)
{
	const fl_cg_loop *l = fl_cg_loop_of(node);

	return l && l->acc && !fl_cg_is_degenerate(node) &&
	       fl_cg_canonical_cond(node);
}

static isl_bool find_mappable(__isl_keep isl_ast_node *node, void *user)
{
	if (isl_ast_node_get_type(node) != isl_ast_node_for)
		return isl_bool_true;
	if (shareable(node) || reducible(node)) {
		*(bool *)user = true;
		return isl_bool_false;
	}
	return isl_bool_true;
}

/* Whether some loop under node (keep) can be shared out among threads. */
static bool has_mappable(__isl_keep isl_ast_node *node)
{
	bool found = false;

	isl_ast_node_foreach_descendant_top_down(node, &find_mappable, &found);
	return found;
}

static void map_node(__isl_keep isl_ast_node *node, enum map_ctx ctx,
		     fl_cuda_phase_map *pm);

/* Whether for node `node` (keep) is a loop of the tile band. */
static bool is_tile_loop(__isl_keep isl_ast_node *node,
			 const fl_cuda_phase_map *pm)
{
	const fl_cg_loop *l = fl_cg_loop_of(node);

	return l && l->depth >= 0 && l->depth < pm->tile_end;
}

/* Whether some loop inside the body of for node `node` (keep) can be
 * shared out among threads. */
static bool has_mappable_below(__isl_keep isl_ast_node *node)
{
	isl_ast_node *body = isl_ast_node_for_get_body(node);
	bool found = has_mappable(body);

	isl_ast_node_free(body);
	return found;
}

static void set_map(__isl_keep isl_ast_node *node, int how)
{
	fl_cg_loop *l = fl_cg_loop_of(node);

	if (l)
		l->gpu = how;
}

static void map_body(__isl_keep isl_ast_node *node, enum map_ctx ctx,
		     fl_cuda_phase_map *pm)
{
	isl_ast_node *body = isl_ast_node_for_get_body(node);

	map_node(body, ctx, pm);
	isl_ast_node_free(body);
}

/* The loop with the pragma, and the next when its collapse shares that
 * out too, run over the grid's blocks. */
static void map_blocks(__isl_keep isl_ast_node *node, fl_cuda_phase_map *pm)
{
	isl_ast_node *in = nested_for(node);
	isl_ast_expr *it;
	long n;

	pm->blocks = true;
	set_map(node, FL_GPU_BLOCK_X);
	n = trip_count(node, &pm->env, MAX_BLOCKS_X);
	n = n > 0 ? n : DEFAULT_BLOCKS;
	pm->grid_x = n > pm->grid_x ? n : pm->grid_x;	/* if/else: both */
	if (in && is_tile_loop(in, pm) && shareable(in)) {
		isl_ast_expr *init = isl_ast_node_for_get_init(node);
		long v;

		it = isl_ast_node_for_get_iterator(node);
		if (eval_expr(init, &pm->env, &v))
			env_push(&pm->env, it, v);
		n = trip_count(in, &pm->env, MAX_BLOCKS_Y);
		n = n > 0 ? n : 1;
		pm->grid_y = n > pm->grid_y ? n : pm->grid_y;
		isl_ast_expr_free(it);
		isl_ast_expr_free(init);
		set_map(in, FL_GPU_BLOCK_Y);
		map_body(in, CTX_UNIFORM, pm);
	} else {
		map_body(node, CTX_UNIFORM, pm);
	}
	isl_ast_node_free(in);
}

/* Whether user node `node` (keep) is the init of a reduction: the same
 * value whichever thread writes it, so the threads of a warp may all
 * run it. */
static bool is_init_stmt(__isl_keep isl_ast_node *node)
{
	const fl_cg_stmt *st;

	if (isl_ast_node_get_type(node) != isl_ast_node_user)
		return false;
	st = fl_cg_stmt_of(node);
	return st && st->ps->role == FL_STMT_INIT;
}

/* The reducible loop that ends the body of for node `node` (keep), when
 * only inits come before it: a row reduction (x-reduce) whose rows may
 * go to warps and whose iterations may go to the warp's lanes.
 * __isl_give. */
static __isl_give isl_ast_node *row_reduction(__isl_keep isl_ast_node *node)
{
	isl_ast_node *body = isl_ast_node_for_get_body(node), *last = NULL;
	isl_ast_node_list *list;
	isl_size n;
	bool ok = true;

	if (isl_ast_node_get_type(body) != isl_ast_node_block) {
		last = body;
	} else {
		list = isl_ast_node_block_get_children(body);
		n = isl_ast_node_list_n_ast_node(list);
		for (int i = 0; ok && i + 1 < n; i++) {
			isl_ast_node *c = isl_ast_node_list_get_at(list, i);

			ok = is_init_stmt(c);
			isl_ast_node_free(c);
		}
		last = ok && n > 0 ? isl_ast_node_list_get_at(list, n - 1) : NULL;
		isl_ast_node_list_free(list);
		isl_ast_node_free(body);
	}
	if (last && isl_ast_node_get_type(last) == isl_ast_node_for &&
	    reducible(last))
		return last;
	isl_ast_node_free(last);
	return NULL;
}

/* A loop in the block's uniform code. */
static void map_uniform_for(__isl_keep isl_ast_node *node, fl_cuda_phase_map *pm)
{
	isl_ast_node *in;

	if (shareable(node) && (in = row_reduction(node))) {
		set_map(node, FL_GPU_THREAD_Y);
		set_map(in, FL_GPU_WARP_REDUCE);
		map_body(in, CTX_INNER, pm);
		isl_ast_node_free(in);
	} else if (fl_cg_is_degenerate(node)) {
		set_map(node, FL_GPU_UNIFORM);
		map_body(node, CTX_UNIFORM, pm);
	} else if (reducible(node)) {
		set_map(node, FL_GPU_REDUCE);
		map_body(node, CTX_INNER, pm);
	} else if (shareable(node) && !(is_tile_loop(node, pm) &&
					 has_mappable_below(node))) {
		in = nested_for(node);
		if (in && shareable(in)) {
			set_map(node, FL_GPU_THREAD_Y);
			set_map(in, FL_GPU_THREAD_X);
			map_body(in, CTX_INNER, pm);
		} else {
			set_map(node, FL_GPU_THREADS);
			map_body(node, CTX_INNER, pm);
		}
		isl_ast_node_free(in);
	} else if (has_mappable(node)) {
		set_map(node, FL_GPU_UNIFORM);
		map_body(node, CTX_UNIFORM, pm);
	} else {
		set_map(node, FL_GPU_SERIAL);
		map_body(node, CTX_INNER, pm);
	}
}

static void map_for(__isl_keep isl_ast_node *node, enum map_ctx ctx,
		    fl_cuda_phase_map *pm)
{
	const fl_cg_loop *l = fl_cg_loop_of(node);

	if (ctx == CTX_INNER) {
		set_map(node, FL_GPU_PLAIN);
		map_body(node, CTX_INNER, pm);
	} else if (ctx == CTX_UNIFORM) {
		map_uniform_for(node, pm);
	} else if (fl_cg_is_degenerate(node)) {
		set_map(node, FL_GPU_PASS);
		bind_degenerate(node, &pm->env);
		map_body(node, CTX_TOP, pm);
	} else if (pm->allow_blocks && l && l->pragma &&
		   fl_cg_canonical_cond(node)) {
		map_blocks(node, pm);
	} else {
		pm->uniform_top = true;
		map_uniform_for(node, pm);
	}
}

/* Decides how each loop under node (keep) runs, in context ctx. */
static void map_node(__isl_keep isl_ast_node *node, enum map_ctx ctx,
		     fl_cuda_phase_map *pm)
{
	isl_ast_node_list *list;
	isl_ast_node *c;
	isl_size n;

	switch (isl_ast_node_get_type(node)) {
	case isl_ast_node_for:
		map_for(node, ctx, pm);
		break;
	case isl_ast_node_if:
		c = isl_ast_node_if_get_then_node(node);
		map_node(c, ctx, pm);
		isl_ast_node_free(c);
		if (isl_ast_node_if_has_else_node(node) == isl_bool_true) {
			c = isl_ast_node_if_get_else_node(node);
			map_node(c, ctx, pm);
			isl_ast_node_free(c);
		}
		break;
	case isl_ast_node_block:
		/* a sequence above the block loop needs one block */
		if (ctx == CTX_TOP) {
			pm->uniform_top = true;
			ctx = CTX_UNIFORM;
		}
		list = isl_ast_node_block_get_children(node);
		n = isl_ast_node_list_n_ast_node(list);
		for (int i = 0; i < n; i++) {
			c = isl_ast_node_list_get_at(list, i);
			map_node(c, ctx, pm);
			isl_ast_node_free(c);
		}
		isl_ast_node_list_free(list);
		break;
	case isl_ast_node_mark:
		c = isl_ast_node_mark_get_node(node);
		map_node(c, ctx, pm);
		isl_ast_node_free(c);
		break;
	case isl_ast_node_user:
		if (ctx == CTX_TOP)
			pm->uniform_top = true;
		break;
	default:
		break;
	}
}

/* A phase that is one reducible loop (an all-reduce: the whole tensor
 * into one element) spans the grid: each block a partial result, added
 * into the element with atomics (the element is set to its start value
 * by a launch before, when its init was hoisted). */
static bool map_grid_reduce(__isl_keep isl_ast_node *node, int tile_end,
			    fl_cuda_phase_map *pm)
{
	long n;

	memset(pm, 0, sizeof *pm);
	pm->tile_end = tile_end;
	if (isl_ast_node_get_type(node) != isl_ast_node_for ||
	    !reducible(node))
		return false;
	set_map(node, FL_GPU_REDUCE_GRID);
	map_body(node, CTX_INNER, pm);
	n = trip_count(node, &pm->env, MAX_BLOCKS_X * BLOCK_THREADS);
	n = n > 0 ? (n + BLOCK_THREADS - 1) / BLOCK_THREADS : 1;
	pm->blocks = true;
	pm->grid_x = n < 1 ? 1 : n > GRID_REDUCE_BLOCKS ? GRID_REDUCE_BLOCKS : n;
	pm->grid_y = 1;
	return true;
}

/* Maps phase node; work above the block loop alongside a block loop
 * would run in every block, so then the phase runs in one block. */
void fl_cuda_map_phase(__isl_keep isl_ast_node *node, int tile_end,
		       fl_cuda_phase_map *pm)
{
	if (map_grid_reduce(node, tile_end, pm))
		return;
	memset(pm, 0, sizeof *pm);
	pm->tile_end = tile_end;
	pm->allow_blocks = true;
	map_node(node, CTX_TOP, pm);
	if (pm->blocks && pm->uniform_top) {
		memset(pm, 0, sizeof *pm);
		pm->tile_end = tile_end;
		map_node(node, CTX_TOP, pm);
	}
	if (!pm->blocks)
		pm->grid_x = pm->grid_y = 1;
	if (pm->grid_y < 1)
		pm->grid_y = 1;
}
