/* Internal to the C backend: the state of one kernel while its C function
 * is made, shared by the steps that make it, in this order per
 * attempt (print_c.c drives them):
 *
 *   prepare.c   the kernel's op descriptions, its schedule with private
 *               marks, which tensors it writes and which can be tile-local
 *               (boxes), the local index of an access, the scope of each
 *               local array, and the retry that moves a tensor that cannot
 *               stay tile-local to global memory;
 *   annotate.c  the isl AST with its callbacks: a statement with its access
 *               expressions on every user node, a loop record on every for
 *               node (parallel, coincident), then per loop the pragma, simd
 *               and scalar accumulators the printer will write;
 *   split.c     which innermost loops chain expensive maths calls and
 *               print as one loop per link of the chain (C only);
 *   print_c.c   C text from the annotated AST, the kernel's comment and
 *               declarations, custom-op kernels, the file around them.
 *
 * Ownership follows isl: every isl object in these structs is owned by
 * the struct holding it; statements and loops live until the next attempt
 * (fl_cg_begin_attempt) or fl_cg_clear. */
#ifndef FL_CODEGEN_IMPL_H
#define FL_CODEGEN_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include <isl/aff.h>
#include <isl/ast.h>
#include <isl/ctx.h>
#include <isl/printer.h>
#include <isl/schedule.h>

#include "codegen.h"
#include "poly.h"
#include "strbuf.h"
#include "value_range.h"

/* Names of the private marks prepare.c puts into the schedule and
 * annotate.c reads back (and drops) while building the AST. */
#define FL_CG_PAR_MARK "fl_par"
#define FL_CG_BAND_MARK "fl_band"

/* What an "fl_par" mark remembers of its band: the loops that may get
 * "#pragma omp parallel for". */
typedef struct fl_cg_par_mark {
	int depth, ncoinc;	/* schedule depth, leading coincident members */
} fl_cg_par_mark;

/* What an "fl_band" mark (above every band) remembers: which members are
 * coincident, for "#pragma omp simd" on innermost loops. */
#define FL_CG_BAND_MAX_MEMBERS 64
typedef struct fl_cg_band_mark {
	int depth, n;
	bool coincident[FL_CG_BAND_MAX_MEMBERS];
} fl_cg_band_mark;

struct fl_cg_stmt;
/* A contraction printed as a micro-kernel (contract.c). */
typedef struct fl_cg_contract fl_cg_contract;

/* The reductions (sum, max, min) an innermost loop keeps in scalars
 * fl_acc<k> (annotate.c). */
#define FL_CG_ACC_MAX 8
typedef struct fl_cg_acc {
	int n;
	struct fl_cg_stmt *upd[FL_CG_ACC_MAX];	/* the accumulated updates */
	struct fl_cg_stmt *init[FL_CG_ACC_MAX];	/* their hoisted inits, or
						   NULL */
} fl_cg_acc;

/* An innermost loop split into one loop per expensive maths call
 * (split.c). */
#define FL_CG_SPLIT_MAX_PARTS 8
#define FL_CG_STRIP 1024	/* iterations of a strip (floats of a
				   carried array: 4 KiB, L1-resident) */
typedef struct fl_cg_split {
	int n_stmts;
	struct fl_cg_stmt **stmt;	/* the body's statements, in order */
	int n_parts;
	int *part;		/* per statement: its part, 0 .. n_parts-1
				   (the loops print in part order, each
				   with its statements in body order) */
	bool *carry;		/* per graph tensor: a register scalar
				   carried between parts in T<t>_s */
	long strip;		/* elements of a carried array */
	bool strip_mined;	/* extent unknown or above FL_CG_STRIP: the
				   parts run per piece of strip iterations */
	long lo;		/* !strip_mined: the loop's constant start */
	char calls[64];		/* "tanh, exp": the calls it splits at */
} fl_cg_split;

/* A for node of the AST (its annotation points here). */
typedef struct fl_cg_loop {
	struct fl_cg_loop *parent;	/* enclosing for node while building */
	struct fl_cg_loop *next;	/* every loop of the kernel, to free */
	int depth;		/* schedule depth (iterator c<depth>), -1 */
	bool parallel;		/* under an "fl_par" mark, coincident */
	bool coincident;	/* its band member is coincident: no
				   dependence between its iterations */
	/* Decided once the AST is complete (fl_cg_decide_loops). */
	bool pragma;		/* "#pragma omp parallel for" (outermost) */
	bool simd;		/* innermost and coincident: "omp simd" */
	int collapse;		/* pragma: loops collapse(k) shares out,
				   this one and the tile loops nested in
				   it; 0 or 1: this loop alone */
	fl_cg_acc *acc;		/* scalar accumulators, or NULL (owned) */
	bool all_reduce;	/* under layer 1's FL_ALL_REDUCE_MARK: the
				   band reduces everything into one element */
	bool acc_team;		/* acc spans the threads: "omp parallel for
				   reduction", each thread a partial result
				   that OpenMP combines at the loop's end */
	const fl_cg_acc *acc_simd;	/* inner loop of an acc_team loop: "omp
				   simd reduction" over the outer loop's
				   accumulators (borrowed) */
	fl_cg_contract *contract;	/* the loop, with everything under
					   it, is a contraction printed by
					   contract.c; NULL: none (owned) */
	bool absorbed;		/* an epilogue that the contraction before
				   it runs on its register blocks
				   (fl_cg_plan_epilogues): prints nothing */
	fl_cg_split *split;	/* printed as one loop per expensive call
				   by split.c; NULL: as one (owned) */
	/* A simd loop whose one write of a large program output goes
	 * around the caches (annotate.c's plan_stream): printed as blocks
	 * of FL_STREAM_FLOATS iterations, each staging the output's
	 * elements in a local vector that fl_stream16 stores
	 * non-temporally.  NULL: stored as usual (borrowed). */
	const struct fl_cg_stmt *stream;
	long stream_trips;	/* its iterations, from 0: whole blocks */
	bool stream_fence;	/* a pragma loop with streamed loops inside:
				   printed as a team whose threads each
				   fence once after the loop; a streamed
				   loop outside any fences itself */
	int gpu;		/* the CUDA backend's mapping of the loop
				   (print_cuda.c) */
} fl_cg_loop;

/* Floats in a block of a streamed loop: one 64-byte line. */
#define FL_STREAM_FLOATS 16

/* A user node: one statement with its access expressions. */
typedef struct fl_cg_stmt {
	struct fl_cg_stmt *next;	/* every statement, for freeing */
	char name[48];
	const fl_op *op;
	const fl_poly_stmt *ps;
	fl_cg_loop *loop;	/* innermost enclosing for node, or NULL */
	isl_ast_expr *write;
	isl_ast_expr **reads;	/* per ps->reads; NULL for a may-read */
	isl_ast_expr *iters;	/* gather, reshape: the original iterators */
	/* The same accesses as functions of the schedule dimensions (the
	 * AST iterators c<depth>), for the accumulator analysis.  Their
	 * domain is sspace, whose dimensions are named after the
	 * iterators: isl leaves out the dimensions it fixed (one-valued
	 * ones), so loop c<depth> need not be dimension <depth>. */
	isl_space *sspace;
	isl_pw_multi_aff *wsched;
	isl_pw_multi_aff **rsched;	/* per ps->reads; NULL: may-read */
	int acc;		/* scalar accumulator fl_acc<acc> replaces
				   the written element, or -1 */
} fl_cg_stmt;

/* A graph tensor as this kernel sees it. */
typedef struct fl_cg_array {
	bool used;		/* accessed by the generated code */
	bool written;		/* written by an op of the kernel */
	bool local;		/* tile-local in this attempt */
	bool failed;		/* cannot stay tile-local: retry global */
	int rank;
	int64_t size[FL_MAX_RANK];	/* local: the box */
	isl_multi_aff *offset;	/* local: tile -> box origin, ids reset */
	bool scoped;
	fl_cg_loop *scope;	/* local: declared in this loop's body */
	bool want_reg;		/* layer 1 placed it in registers */
	bool reg;		/* printed as the scalar T<t>_r, declared
				   in the body of each of scalar_loop[]
				   (the innermost loops of its accesses:
				   one, or the copies of one that isl's
				   "separate" option made) */
#define FL_CG_SCALAR_LOOPS 8
	int n_scalar_loops;
	fl_cg_loop *scalar_loop[FL_CG_SCALAR_LOOPS];
	/* Rows held at a time by a tile-local array of a pipelined row
	 * kernel (pipeline_rows.c): row r (index rotate_dim: the row
	 * dimension, after a head's in BERT's [heads, rows, cols]) lives
	 * in row r % rotate of the array, which has rotate rows instead of
	 * size[rotate_dim]; 0: every row its own. */
	int64_t rotate;
	int rotate_dim;
} fl_cg_array;

/* The extent of dimension d of tile-local array a as declared. */
static inline int64_t fl_cg_extent(const fl_cg_array *a, int d)
{
	return d == a->rotate_dim && a->rotate > 0 ? a->rotate : a->size[d];
}

/* Whether tile-local array or scalar a is declared in the body of loop l
 * (NULL: the function's). */
bool fl_cg_declared_in(const fl_cg_array *a, const fl_cg_loop *l);

typedef struct fl_cg_kernel {
	isl_ctx *ctx;
	const fl_graph *g;
	const fl_kernel *k;
	fl_poly_op **poly;	/* per k->ops[i] */
	fl_cg_array *arr;	/* per graph tensor */
	bool *force_global;	/* per graph tensor, across attempts */
	char (*why)[200];	/* per graph tensor: why it is not local */
	fl_value_range *range;	/* per graph tensor: its values' interval */
	char pipeline_note[200];	/* pipeline_rows.c's, or "" */
	fl_cg_loop *cur, *loops;
	fl_cg_stmt *stmts;
	int tile_end;		/* schedule depth after the tile band */
	/* What became of each contraction (contract.c), for the kernel's
	 * comment: "S11_1 matmul: micro-kernel ..." or why not. */
#define FL_CG_MAX_CONTRACT_NOTES 8
	int n_contract_notes;
	char contract_note[FL_CG_MAX_CONTRACT_NOTES][200];
	/* Where split.c split innermost loops, for the comment: "split at
	 * tanh, exp: ...". */
#define FL_CG_MAX_SPLIT_NOTES 8
	int n_split_notes;
	char split_note[FL_CG_MAX_SPLIT_NOTES][320];
	/* While split.c prints the parts of a loop: the plan, whose carried
	 * scalars print as T<t>_s[strip_index]; NULL otherwise. */
	const fl_cg_split *strip;
	char strip_index[96];
	/* While print_c.c prints the body of a streamed loop: the tensor
	 * staged (its write prints as T<t>_nt[stream_index]), -1 otherwise;
	 * and the note for the comment. */
	int stream_t;
	char stream_index[64];
	char stream_note[200];
	/* While contract.c prints an epilogue on a register block: the
	 * contraction's result, whose reads print as the block's element
	 * fl_r[fl_m * FL_NR + fl_v]; -1 otherwise. */
	int block_t;
	bool wide;		/* some extent may pass INT_MAX: loop
				   counters are long (64 bits), else int */
	int64_t budget;		/* bytes the tile-local arrays of one tile
				   may take together (> 0) */
	bool cuda;		/* for the CUDA backend: a tile-local
				   array needs a loop to declare it in
				   (a kernel's launches share no
				   on-chip memory) */
	bool uses_bounds;	/* a C statement reads fl_b, the maths
				   runtime's bounds the kernel hides from
				   the compiler (runtime/math_rt.c) */
	bool failed;
	fl_error *err;
} fl_cg_kernel;

/* ---- prepare.c ---------------------------------------------------------- */

/* Sets up cg for kernel k of p (its ops' polyhedral descriptions, the
 * tile band); -1 with a message in err.  fl_cg_clear frees it, also after
 * a failure. */
int fl_cg_init(fl_cg_kernel *cg, const fl_program *p, const fl_kernel *k,
	       fl_error *err);
void fl_cg_clear(fl_cg_kernel *cg);

/* Starts an attempt: drops the previous one's AST records and decides
 * anew which tensors are written and which try to be tile-local. */
void fl_cg_begin_attempt(fl_cg_kernel *cg);

/* After the attempt's AST is built: gives every tile-local array the
 * loop that declares it, and moves each tensor that could not stay
 * tile-local to global memory for the next attempt.  True when nothing
 * moved (the attempt can be printed). */
bool fl_cg_settle_placement(fl_cg_kernel *cg);

/* After an attempt settled: when its tile-local arrays (scalars aside)
 * take more than cg->budget bytes together, the largest move to global
 * memory, with the numbers as their reason, until the rest fits; true
 * when nothing moved (the attempt can be printed). */
bool fl_cg_fit_budget(fl_cg_kernel *cg);

/* The kernel's schedule with the private marks (FL_CG_PAR_MARK above
 * every band that may run in parallel, FL_CG_BAND_MARK above every
 * band).  __isl_give. */
isl_schedule *fl_cg_prepare_schedule(__isl_keep isl_schedule *s);

/* Access pma (taken; instance -> T<t>, t tile-local) minus the box origin
 * of the instance's tile, checked inside the box over the executed
 * instances dom (keep); when it cannot be, t is marked failed and pma
 * returned unchanged. */
__isl_give isl_pw_multi_aff *fl_cg_localize(fl_cg_kernel *cg, int t,
					    __isl_take isl_pw_multi_aff *pma,
					    __isl_keep isl_set *dom);

/* The tensor a poly read of op reads. */
int fl_cg_read_tensor(const fl_op *op, const fl_poly_read *r);

/* Fails the kernel with "kernel <name>: what[: isl's message]"; the
 * first failure's message is kept. */
void fl_cg_fail(fl_cg_kernel *cg, const char *what);

/* Tensor t cannot be tile-local in this kernel, because of why. */
void fl_cg_array_fail(fl_cg_kernel *cg, int t, const char *why);

/* ---- annotate.c --------------------------------------------------------- */

/* The OpenMP reduction operator ("+", "max", "min") of a reduction op
 * whose update can run in a scalar accumulator, else NULL. */
const char *fl_cg_acc_kind(fl_op_kind kind);

/* The AST of the kernel's schedule, its user nodes annotated with
 * fl_cg_stmt and its for nodes with fl_cg_loop (parallel and coincident
 * flags set); NULL with the kernel failed.  __isl_give. */
isl_ast_node *fl_cg_build_ast(fl_cg_kernel *cg);

/* Whether for node `node` (keep) tests its iterator against an upper
 * bound ("c <= e" or "c < e"), so that it may start elsewhere and step
 * further and stay correct. */
bool fl_cg_canonical_cond(__isl_keep isl_ast_node *node);

/* Decides, top down, each loop's pragma, simd and accumulators. */
void fl_cg_decide_loops(fl_cg_kernel *cg, __isl_keep isl_ast_node *ast);

/* The annotation of a for node, or of a user node (NULL when none). */
fl_cg_loop *fl_cg_loop_of(__isl_keep isl_ast_node *node);
fl_cg_stmt *fl_cg_stmt_of(__isl_keep isl_ast_node *node);
/* Whether the element a statement reads as op input `input` is the same
 * in every iteration of its innermost enclosing loop. */
bool fl_cg_read_invariant(const fl_cg_stmt *st, int input);

/* Whether statement st writes or reads graph tensor t. */
bool fl_cg_stmt_accesses(const fl_cg_stmt *st, int t);

/* Frees the statements and loops of the last AST. */
void fl_cg_annotations_free(fl_cg_kernel *cg);

/* ---- pipeline_rows.c: the row phases of a stitched kernel ---------------- */

/* The kernel's schedule with the phases under its tile band pipelined
 * over the rows (pipeline_rows.c), or s itself where that does not
 * apply or would break a dependence. */
__isl_give isl_schedule *fl_cg_pipeline_rows(fl_cg_kernel *cg,
					     __isl_take isl_schedule *s);

/* ---- contract.c: contractions as micro-kernels --------------------------- */

/* s (taken) with each contraction of the kernel (matmul, conv2d) split
 * off from the rest of its band below the tile band and marked for the
 * micro-kernel.  __isl_give. */
isl_schedule *fl_cg_split_contractions(fl_cg_kernel *cg,
				       __isl_take isl_schedule *s);
/* Whether mark id (keep) is the one fl_cg_split_contractions puts. */
bool fl_cg_is_contract_mark(__isl_keep isl_id *id);
/* At that mark, while the AST is built: hangs the plan on the for loop
 * child (keep) when the contraction fits the micro-kernel. */
void fl_cg_contract_plan(fl_cg_kernel *cg, __isl_keep isl_id *mark,
			 __isl_keep isl_ast_node *child);
void fl_cg_contract_free(fl_cg_contract *c);
/* Prints the contraction in place of its loop nest. */
__isl_give isl_printer *fl_cg_print_contract(__isl_take isl_printer *p,
					     fl_cg_kernel *cg,
					     const fl_cg_contract *c);
/* After the loops are decided (C only): where a contraction's loop is
 * followed in its block by a nest of independent points over the same
 * output points (its fused epilogue: bias, GELU, residual, ...), the
 * epilogue's statements join the plan, to run on each register block
 * before it is stored, and the nest is marked absorbed; the kernel's
 * comment says which, or why not. */
void fl_cg_plan_epilogues(fl_cg_kernel *cg, __isl_keep isl_ast_node *ast);
/* The C the contraction calls need, once per translation unit. */
const char *fl_cg_contract_runtime(void);
/* The runtime's text (runtime/contract_rt.c, embedded by the build). */
extern const char fl_contract_rt_text[];
/* runtime/math_rt.c (fl_tanhf, fl_erff), embedded by the Makefile */
extern const char fl_math_rt_text[];
/* runtime/half_rt.c: f32 <-> f16/bf16 on the bits (FL_HALF_FN sets how
 * its functions are declared: static inline by default) */
extern const char fl_half_rt_text[];

/* ---- split.c: one loop per expensive maths call -------------------------- */

/* After the loops are decided (C only): plans the split of each innermost
 * "omp simd" loop of ast (keep) whose statements chain two or more
 * expensive maths calls (fl_cg_loop.split), and notes it for the
 * kernel's comment. */
void fl_cg_plan_splits(fl_cg_kernel *cg, __isl_keep isl_ast_node *ast);
void fl_cg_split_free(fl_cg_split *plan);
/* Whether a split loop of cg's last attempt carries scalar t in T<t>_s. */
bool fl_cg_split_carries(const fl_cg_kernel *cg, int t);
/* A streamed loop l (l->stream) over iterator `it`, for print_c.c and
 * split.c: _open prints the loop over blocks of FL_STREAM_FLOATS, the
 * block's staging vector and the head of the "omp simd" loop of `it` over
 * the block, and makes the streamed tensor's writes print into the
 * vector; the caller prints that loop's body; _close ends it, stores the
 * block (fl_stream16) and closes the block loop, with its fence unless
 * the enclosing parallel loop fences (l->stream_fence). */
__isl_give isl_printer *fl_cg_stream_open(__isl_take isl_printer *p,
					  fl_cg_kernel *cg,
					  const fl_cg_loop *l, const char *it);
__isl_give isl_printer *fl_cg_stream_close(__isl_take isl_printer *p,
					   fl_cg_kernel *cg,
					   const fl_cg_loop *l, const char *it);

/* Prints for node `node` (keep), whose record l has a plan, as its
 * parts. */
__isl_give isl_printer *fl_cg_print_split(__isl_take isl_printer *p,
					  fl_cg_kernel *cg,
					  __isl_keep isl_ast_node *node,
					  const fl_cg_loop *l);

/* ---- print_c.c ------------------------------------------------------------ */

/* Declarations of the tile-local arrays and register scalars declared in
 * the body of loop `scope` (NULL: the function's). */
__isl_give isl_printer *fl_cg_print_locals(__isl_take isl_printer *p,
					   const fl_cg_kernel *cg,
					   const fl_cg_loop *scope);

/* The element that access expression acc (keep) of tensor t names, as the
 * statements print it (a local array minus its box origin, or the global
 * one). */
__isl_give isl_printer *fl_cg_print_access(__isl_take isl_printer *p,
					   const fl_cg_kernel *cg,
					   __isl_keep isl_ast_expr *acc, int t);


/* One attempt at kernel cg (fl_cg_begin_attempt, the AST, placement
 * settled and fitted to cg->budget, loops decided): 0 with *ast (give) to
 * print, 1 when some tensor must retry in global memory (*ast NULL), -1
 * when the kernel failed. */
int fl_cg_attempt(fl_cg_kernel *cg, isl_ast_node **ast);

/* The statement of user node st as C: "element = rhs;" and a comment
 * naming the statement. */
__isl_give isl_printer *fl_cg_print_stmt(__isl_take isl_printer *p,
					 fl_cg_kernel *cg, const fl_cg_stmt *st);

/* The children of block body one by one (no braces), else the node. */
__isl_give isl_printer *fl_cg_print_body(__isl_take isl_printer *p,
					 __isl_keep isl_ast_node *body,
					 __isl_keep isl_ast_print_options *o);

/* Whether some extent of kernel k may pass INT_MAX (long counters). */
bool fl_cg_kernel_is_wide(const fl_graph *g, const fl_kernel *k);

/* The kernel's C name (its layer-1 name when that is an identifier). */
const char *fl_cg_kernel_cname(const fl_kernel *k, int index, char *buf,
			       size_t n);

/* The comment above a kernel: its ops with provenance, placements (cg
 * NULL: the ops alone). */
void fl_cg_kernel_comment(fl_strbuf *out, const fl_graph *g,
			  const fl_kernel *k, const char *cname,
			  const fl_cg_kernel *cg);

/* "const float (*restrict T5)[64] = ...bufs[5];" per global tensor the
 * body uses. */
void fl_cg_global_decls(fl_strbuf *out, const fl_graph *g,
			const fl_cg_array *arr);

/* Appends the tensors layer 1 placed tile-local or in registers that cg
 * keeps global, with the reason, to *d (malloc'd) and *n; -1 when out of
 * memory. */
int fl_cg_note_demotions(const fl_cg_kernel *cg, fl_codegen_demotion **d,
			 int *n);

/* -1 with "codegen: no program" when p has no graph or isl context. */
int fl_cg_check_program(const fl_program *p, fl_error *err);

/* One backend's kernel text and unit around kernel texts (codegen.h). */
typedef char *(*fl_cg_kernel_fn)(const fl_program *p, int i, fl_error *err);
typedef char *(*fl_cg_unit_fn)(const fl_program *p,
			       const char *const *kernels, fl_error *err);

/* The unit of every kernel of p: kernel(p, i) for each, then unit around
 * them (malloc'd; NULL with a message). */
char *fl_cg_whole_unit(const fl_program *p, fl_cg_kernel_fn kernel,
		       fl_cg_unit_fn unit, fl_error *err);

/* -1 with a message naming kernel cname when one of k's ops is not an
 * op of p's graph. */
int fl_cg_check_ops(const fl_program *p, const fl_kernel *k,
		    const char *cname, fl_error *err);

/* Whether kernel k is one custom op (a hand-written loop nest). */
bool fl_cg_is_custom_kernel(const fl_program *p, const fl_kernel *k);

/* A kernel printer of one backend: kernel k of p, named cname, its
 * tile-local arrays within budget bytes, each demotion appended to
 * *demoted (when not NULL); 0, or -1 with a message. */
typedef int (*fl_cg_print_kernel_fn)(fl_strbuf *out, const fl_program *p,
				     const fl_kernel *k, const char *cname,
				     int64_t budget,
				     fl_codegen_demotion **demoted,
				     int *n_demoted, fl_error *err);

/* One backend's printers of the three kinds of kernel (print_c.c,
 * print_cuda.c): a layer-3 kernel of branches, one custom op, and a
 * kernel isl scheduled. */
typedef struct fl_cg_printers {
	fl_cg_print_kernel_fn branches;
	int (*custom)(fl_strbuf *out, const fl_graph *g, const fl_op *op,
		      const char *cname, fl_error *err);
	fl_cg_print_kernel_fn polyhedral;
} fl_cg_printers;

/* Kernel i of p by the backend's printers (malloc'd): the program and i
 * checked, the kind of kernel picked, the custom op's comment printed
 * here.  NULL with a message in err, and then no demotions either. */
char *fl_cg_kernel_text(const fl_cg_printers *b, const fl_program *p, int i,
			int64_t budget, fl_codegen_demotion **demoted,
			int *n_demoted, fl_error *err);

/* ---- cuda_map.c: loops onto the grid (the CUDA backend) ---------------- */

/* How a loop runs on the GPU (fl_cg_loop.gpu; cuda_map.c says when). */
enum fl_gpu_map {
	FL_GPU_PLAIN,		/* as in C, inside work already shared out */
	FL_GPU_PASS,		/* a degenerate loop above the block loop */
	FL_GPU_BLOCK_X,
	FL_GPU_BLOCK_Y,
	FL_GPU_THREADS,
	FL_GPU_THREAD_Y,
	FL_GPU_THREAD_X,
	FL_GPU_REDUCE,
	FL_GPU_REDUCE_GRID,
	FL_GPU_WARP_REDUCE,
	FL_GPU_SERIAL,
	FL_GPU_UNIFORM,
};


/* Iterators of degenerate loops above a block loop, with their values
 * (for evaluating the block loop's bounds). */
#define MAX_BOUND 8
typedef struct bound_env {
	int n;
	char name[MAX_BOUND][32];
	long val[MAX_BOUND];
} bound_env;

/* What fl_cuda_map_phase decided for a phase besides each loop's gpu. */
typedef struct fl_cuda_phase_map {
	bool blocks;		/* some loop runs over the grid's blocks */
	bool uniform_top;	/* some work above any block loop (then
				   the phase must run in one block) */
	bool allow_blocks;
	long grid_x, grid_y;
	bound_env env;		/* degenerate iterators above the block
				   loop */
	int tile_end;		/* schedule depth after the tile band */
} fl_cuda_phase_map;

/* Maps the loops of phase node (keep; fl_cg_loop.gpu) and sizes its
 * grid (pm); loops above schedule depth tile_end are the tile band's. */
void fl_cuda_map_phase(__isl_keep isl_ast_node *node, int tile_end,
		       fl_cuda_phase_map *pm);

/* Whether for node `node` (keep) runs exactly once. */
bool fl_cg_is_degenerate(__isl_keep isl_ast_node *node);

#endif
