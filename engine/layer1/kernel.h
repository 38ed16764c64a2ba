/* Kernels: what layer 1 hands to code generation and the runner.
 *
 * A strategy (unfused, xla, apollo-l1, apollo-l2, apollo) turns the
 * engine's micro-graphs into a program: a list of kernels in execution
 * order.  Each kernel carries its primitive ops, its polyhedral model (domain, accesses), its
 * final isl schedule tree (tiled, with extension nodes for fused
 * producers), a walkable copy of that tree for views, and the placement of
 * every tensor it touches.  Everything isl in here is owned by the kernel
 * (freed by fl_program_free) and lives in the program's isl_ctx.
 *
 * Statement names: "S<op>_<k>" is statement k of op <op> (engine/poly.h);
 * recomputed copies grafted by tile-then-fuse are "S<op>_<k>_r<n>", with
 * the tile coordinates prepended to the instance tuple.
 *
 * Parallel loops: a mark named "parallel" sits directly above every band
 * whose first member is coincident; its user data is an int[2]
 * {schedule depth, number of leading coincident members}, freed with the
 * id.  Register tensors have box[] all 1 and no box_isl. */
#ifndef FL_KERNEL_H
#define FL_KERNEL_H

#include <isl/aff.h>
#include <isl/ctx.h>
#include <isl/fixed_box.h>
#include <isl/schedule.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <stdbool.h>
#include <stdint.h>

#include "graph.h"

typedef enum fl_strategy {
	FL_STRATEGY_UNFUSED,	/* one kernel per primitive op */
	FL_STRATEGY_XLA,	/* memory-bound only: R1-R4 */
	FL_STRATEGY_APOLLO_L1,	/* all partition rules + layer 1 */
	FL_STRATEGY_APOLLO_L2,	/* + layer 2: memory stitching (R7, R8) */
	FL_STRATEGY_APOLLO,	/* + layer 3: parallel stitching */
	FL_STRATEGY_COUNT
} fl_strategy;

const char *fl_strategy_name(fl_strategy s);
int fl_strategy_parse(const char *name, fl_strategy *s);

typedef enum fl_placement {
	FL_PLACE_GLOBAL,	/* main memory: inputs, outputs, read outside */
	FL_PLACE_TILE_LOCAL,	/* per-tile scratch sized by the footprint box */
	FL_PLACE_REGISTER,	/* producer and consumer at the same point */
} fl_placement;

const char *fl_placement_name(fl_placement p);

typedef struct fl_kernel_tensor {
	int tensor;		/* graph tensor index */
	fl_placement place;
	bool read, written;	/* inside this kernel */
	int rank;
	int64_t box[FL_MAX_RANK];	/* TILE_LOCAL: per-tile footprint */
	isl_fixed_box *box_isl;	/* TILE_LOCAL: tile -> array footprint box
				   (offset over the tile space); owned */
	int64_t bytes_kept;	/* bytes that never reach main memory */
	char why[160];		/* reason for the placement (event text) */
} fl_kernel_tensor;

/* Walkable schedule tree for views (a copy; no isl objects). */
typedef enum fl_tree_kind {
	FL_TREE_DOMAIN, FL_TREE_BAND, FL_TREE_SEQUENCE, FL_TREE_SET,
	FL_TREE_FILTER, FL_TREE_EXTENSION, FL_TREE_MARK, FL_TREE_CONTEXT,
	FL_TREE_GUARD, FL_TREE_EXPANSION, FL_TREE_LEAF,
} fl_tree_kind;

typedef struct fl_tree_node {
	fl_tree_kind kind;
	char *text;		/* filter/domain/extension set or map, mark
				   name, or the band's partial schedule */
	int n_members;		/* band */
	bool permutable;	/* band */
	bool *coincident;	/* band: n_members flags */
	int n_children;
	struct fl_tree_node *children;
} fl_tree_node;

typedef enum fl_reduce_form {
	FL_REDUCE_NONE,
	FL_REDUCE_ALL,		/* everything reduced */
	FL_REDUCE_X,		/* reduced along the outer of two merged dims */
	FL_REDUCE_Y,		/* reduced along the inner one */
} fl_reduce_form;

/* The mark layer 1 puts above the reduction band of a kernel in the
 * canonical all-reduce form (engine/layer1/reduce_form.c): the loops of
 * the band reduce everything into one element, so a backend may give
 * each thread a partial result and combine them at the end. */
#define FL_ALL_REDUCE_MARK "all-reduce"

/* "all-reduce", "x-reduce", "y-reduce" or "none". */
const char *fl_reduce_form_name(fl_reduce_form f);

/* How layer 1 sized a kernel's tiles (engine/layer1/tile_sizes.c). */
typedef enum fl_tile_kind {
	FL_TILE_NONE,		/* untiled */
	FL_TILE_MEMORY,		/* memory-bound: whole rows, a share of L2 */
	FL_TILE_CONTRACTION,	/* a matmul/conv update in the nest: output
				   tiles for a register-blocked micro-kernel
				   (tile_m x tile_n, K inside) */
	FL_TILE_USER,		/* --tile */
} fl_tile_kind;

/* "memory-bound", "contraction", "--tile" or "untiled". */
const char *fl_tile_kind_name(fl_tile_kind k);

typedef struct fl_kernel {
	int id;
	char name[32];		/* generated C identifier: "fl_k<id>" */
	int group;		/* micro-graph id, -1 when none */
	int n_ops;
	int *ops;		/* primitive op indices, topological order */
	isl_union_set *domain;
	isl_union_map *reads, *writes;
	isl_schedule *schedule;	/* final tree */
	isl_union_pw_multi_aff *inst2tile;	/* instances of the tiled
				   statements and of the recomputed copies
				   -> tile coordinates (producer nests that
				   were not fused are absent); NULL when
				   untiled */
	char *schedule_text;	/* isl's block YAML of the final tree */
	fl_tree_node *tree;
	fl_reduce_form reduce_form;
	bool reduce_moved;	/* the tree is the canonical form's rewrite
				   of the scheduler's (reduce_form.c) */
	char reduce_why[512];	/* what the canonical form moved, or why
				   nothing: the "reduce-form" event's text */
	int n_tensors;
	fl_kernel_tensor *tensors;
	int64_t tile[FL_MAX_RANK];	/* tile sizes used, 0: untiled */
	int n_tile;
	fl_tile_kind tile_kind;
	/* CONTRACTION: the tiled members playing M (rows of the output tile:
	 * a matmul's i, a conv's output channels) and N (its columns, the
	 * vectorised one: j, output width); -1 otherwise. */
	int tile_m, tile_n;
	int64_t tile_bytes;	/* estimated bytes one tile touches (panels
				   for a contraction), 0: untiled */
	double n_tiles;		/* tiles the instances reach, 0: untiled */
	char tile_why[256];	/* the sizes and why: the "tiled" event's text,
				   "" when untiled */
	/* Layer 3 (engine/stitch/parallel_pass.c): a kernel made of
	 * independent kernels that run side by side, each on its own
	 * threads.  The fields above are the union of the branches' (ops,
	 * domain, accesses, tensors; the schedule is a set node over the
	 * branches' trees); code generation works from the branches.
	 * 0 and NULL for any other kernel. */
	int n_branches;
	struct fl_kernel *branches;	/* owned, n_branches */
} fl_kernel;

typedef struct fl_program {
	fl_strategy strategy;
	const fl_graph *graph;	/* borrowed: the engine's primitive graph */
	isl_ctx *ctx;		/* borrowed */
	int n_kernels;
	fl_kernel *kernels;	/* execution order */
} fl_program;

#define FL_DEFAULT_SCHED_BUDGET 2000000	/* isl operations per micro-graph */
#define FL_DEFAULT_RECOMPUTE 1.5
#define FL_DEFAULT_MAX_STMTS 32	/* statements handed to the scheduler */
#define FL_DEFAULT_L1_TIME_BUDGET 600.0	/* seconds of layer-1 work */

typedef struct fl_layer1_opts {
	long sched_budget;	/* isl_ctx_set_max_operations per group */
	double max_recompute;	/* do not fuse above this factor */
	int max_stmts;		/* a micro-graph with more statements is
				   split before scheduling; 0: no bound */
	double time_budget_s;	/* seconds of layer-1 work in a session;
				   once spent, the micro-graphs not yet
				   worked out are left unfused; 0: none */
	int n_tile;		/* 0: defaults per target (CPU: 32 on the
				   two innermost parallel dims, 1 outside) */
	int64_t tile[FL_MAX_RANK];
	/* The machine tile sizes are chosen for (cores, caches); NULL: the
	 * one this process runs on (fl_machine_get). */
	const struct fl_machine *machine;
	/* Bytes the tile-local buffers of one tile may take together; a
	 * tensor past it stays global.  0: the machine's per-core L2. */
	int64_t local_budget;
} fl_layer1_opts;

void fl_layer1_opts_default(fl_layer1_opts *o);

void fl_program_free(fl_program *p);

/* Frees what kernel k owns (not k itself): layer 2 replaces two kernels
 * by their stitched one. */
void fl_kernel_clear(fl_kernel *k);

/* A deep copy of p whose graph is g (the same graph as p's, copied);
 * isl objects are shared by reference count.  NULL when out of memory. */
fl_program *fl_program_copy(const fl_program *p, const fl_graph *g);

/* Number of leading coincident (parallel) members of a band node: what a
 * "parallel" mark records, and what the C backend parallelises. */
int fl_band_leading_coincident(__isl_keep isl_schedule_node *band);
void fl_tree_free(fl_tree_node *t);
fl_tree_node *fl_tree_copy(const fl_tree_node *t);

#endif
