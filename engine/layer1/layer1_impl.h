/* Internal to layer 1: the polyhedral model of one micro-graph, and the
 * steps that turn its isl schedule into a kernel -- tile-then-fuse with
 * extension nodes (tile.c), placement of its tensors (place.c), "parallel"
 * marks and the walkable tree for views (schedtree.c).  layer1.c drives
 * them and turns every step into a decision of the event log; nothing in
 * here touches fl_state, so each piece can be tested on its own.
 *
 * Ownership follows isl: every isl object in these structs is owned by
 * the struct and freed by its _clear function. */
#ifndef FL_LAYER1_IMPL_H
#define FL_LAYER1_IMPL_H

#include <isl/schedule.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <stdbool.h>

#include "kernel.h"
#include "poly.h"

/* ---- the model (model.c) ----------------------------------------------- */

typedef struct fl_l1_stmt {
	const char *name;	/* "S<op>_<k>", borrowed from the poly op */
	int op;			/* graph op index */
	int k;			/* statement index inside the op */
	fl_stmt_role role;
	bool live_out;		/* writes a tensor that leaves the kernel */
	const fl_poly_stmt *poly;	/* domain and accesses, borrowed */
} fl_l1_stmt;

typedef struct fl_l1_model {
	isl_ctx *ctx;
	const fl_graph *g;
	int n_ops;
	int *ops;		/* member op indices, ascending = topological */
	fl_poly_op **poly;	/* per member, owned */
	int n_stmts;
	fl_l1_stmt *stmts;	/* in program order */
	bool *leaves;		/* per graph tensor: read or kept outside the
				   kernel (graph output, other kernels) */
	isl_union_set *domain;
	isl_union_map *reads;	/* exact and may-reads (gather) together */
	isl_union_map *writes;
	isl_schedule *original;	/* sequence of identity bands, op order */
	isl_union_map *raw;	/* flow dependences (instance -> instance) */
	isl_union_map *validity;	/* raw | war | waw */
} fl_l1_model;

/* Builds the model of the member ops ops[0..n-1] of graph g (ascending,
 * i.e. topological, as micro-graph members are kept), with its
 * dependences; a tensor leaves the kernel when it is a graph output or an
 * op that is not a member reads it.  On error the model is cleared and -1
 * returned with a message. */
int fl_l1_model_build(fl_l1_model *m, isl_ctx *ctx, const fl_graph *g,
		      const int *ops, int n, fl_error *err);
void fl_l1_model_clear(fl_l1_model *m);

/* Index of the statement named `name` (an original "S<op>_<k>"), or -1. */
int fl_l1_model_find(const fl_l1_model *m, const char *name);

/* The statement table entry for tuple name `name`, also for recomputed
 * copies "S<op>_<k>_r<n>" (which map to their original); NULL if none. */
const fl_l1_stmt *fl_l1_model_stmt_of(const fl_l1_model *m, const char *name);

/* ---- tile-then-fuse (tile.c) -------------------------------------------- */

/* One decision of tile-then-fuse, in the order they are made. */
typedef struct fl_l1_step {
	int kind;		/* FL_EV_TILED or FL_EV_EXTENDED */
	int op;			/* the producer op for EXTENDED, else the
				   last op with a live-out statement */
	bool done;		/* tiled / fused (false: refused) */
	char reason[240];
	isl_schedule *schedule;	/* the tree after this step, no marks */
	isl_union_pw_multi_aff *inst2tile;	/* after this step, or NULL */
} fl_l1_step;

/* What tile-then-fuse decided for one fused producer tensor. */
typedef struct fl_l1_fused {
	int op;			/* producer op */
	int tensor;		/* the tensor it writes */
	isl_fixed_box *box;	/* tile -> footprint box of that tensor */
	double factor;		/* recomputation factor */
} fl_l1_fused;

typedef struct fl_l1_tiling {
	int n_steps;
	fl_l1_step *steps;
	isl_schedule *tiled;	/* tiled, before any extension, no marks */
	isl_schedule *final;	/* after all steps, no marks */
	isl_union_pw_multi_aff *inst2tile;	/* tiled statements and
				   recomputed copies -> tile; NULL: untiled */
	isl_union_set *tiled_dom;	/* instances under the tile band
				   (original statements), NULL: untiled */
	int n_tile;
	int64_t tile[FL_MAX_RANK];
	fl_tile_kind kind;	/* how the sizes were chosen */
	int tile_m, tile_n;	/* CONTRACTION: members playing M, N; else -1 */
	int64_t bytes;		/* estimated bytes one tile touches */
	double n_tiles;		/* tiles the instances reach */
	int n_fused;
	fl_l1_fused *fused;
} fl_l1_tiling;

/* Tile-then-fuse on `sched` (a schedule of m's domain from the scheduler,
 * taken), whose live-out statements are all under top-level child
 * `liveout_child` (-1: the root has no sequence/set: everything is one
 * group).  With `untiled` set, nothing is tiled and the one step says
 * why.  Never fails for a semantic reason: a refusal is a step with done
 * false.  -1 only when isl fails (message in err). */
int fl_l1_tile(const fl_l1_model *m, __isl_take isl_schedule *sched,
	       int liveout_child, const char *untiled,
	       const fl_layer1_opts *o, fl_l1_tiling *t, fl_error *err);
void fl_l1_tiling_clear(fl_l1_tiling *t);

/* The top-level children of a schedule: the filters of the sequence or
 * set right under the root.  Returns their count (0 when the root has no
 * sequence or set: one loop nest), or -1; *filters (malloc'd, with owned
 * sets; NULL when 0) receives one union_set per child. */
int fl_l1_top_children(__isl_keep isl_schedule *s, isl_union_set ***filters);
void fl_l1_free_sets(isl_union_set **sets, int n);

/* The fixed-size box hull of the range of u (taken; it must hold one
 * map): 0 with *box (given), or -1 when isl finds none. */
int fl_l1_box_of(__isl_take isl_union_map *u, isl_fixed_box **box);

/* "64 x 34 x 34" for v[0..n-1], into buf. */
const char *fl_l1_dims_text(const int64_t *v, int n, char *buf, size_t len);

/* ---- tile sizes from the machine (tile_sizes.c) ------------------------ */

/* The live-out band tile-then-fuse is about to tile, as the sizing reads
 * it (every isl object borrowed). */
typedef struct fl_l1_band {
	const fl_l1_model *m;
	__isl_keep isl_union_set *lo_dom;	/* instances of the nest */
	__isl_keep isl_union_map *band_map;	/* instance -> band point */
	__isl_keep isl_set *points;	/* band points (n_members dims) */
	int n_members, m_tiled;		/* members, leading parallel ones */
	int64_t lower[FL_MAX_RANK], extent[FL_MAX_RANK];	/* tiled members */
	const bool *whole;		/* per tiled member: the producers'
					   footprint does not depend on it */
	bool producers;			/* some producer outside the nest
					   feeds it and may be recomputed in
					   the tiles */
} fl_l1_band;

/* What the sizing decided. */
typedef struct fl_l1_sizes {
	int64_t tile[FL_MAX_RANK];	/* per tiled member */
	fl_tile_kind kind;
	int tile_m, tile_n;		/* CONTRACTION members, else -1 */
	int64_t bytes;			/* bytes one tile touches (estimate) */
	double tiles;			/* tiles of the band's bounding box */
	int want;			/* tiles wanted: TILES_PER_THREAD x
					   cores */
	char why[200];			/* the reason, after "by SIZES: " */
} fl_l1_sizes;

/* Chooses the tile sizes of band b from the machine (o->machine, NULL:
 * this one), o->local_budget and o->tile (which overrides).  Returns 0:
 * a footprint isl cannot measure is estimated instead; err is kept for
 * failures a later sizing may have. */
int fl_l1_choose_sizes(const fl_l1_band *b, const fl_layer1_opts *o,
		       fl_l1_sizes *out, fl_error *err);

/* ---- canonical reduction forms (reduce_form.c) -------------------------- */

/* What the canonical form did to a kernel's tree. */
typedef struct fl_l1_rform {
	fl_reduce_form form;
	bool moved;		/* the tree was rewritten */
	char why[512];		/* what moved, or why nothing did */
} fl_l1_rform;

/* The tree of m in its canonical reduction form `form` (from the shapes):
 * sched (taken) rewritten when the form moves loops (all-reduce,
 * x-reduce) and the dependences allow it, else sched itself; *out says
 * which and why.  o gives the machine (threads) the x-reduce's chunks are
 * cut for. */
__isl_give isl_schedule *fl_l1_reduce_canonical(const fl_l1_model *m,
	__isl_take isl_schedule *sched, fl_reduce_form form,
	const fl_layer1_opts *o, fl_l1_rform *out);

/* The tile coordinates of a canonical x-reduce tree (keep): every
 * instance -> its point of the outer band (kept outer dims, thread
 * chunk), which the C backend treats as the kernel's tiles; NULL when the
 * tree has no outer band (an all-reduce). */
__isl_give isl_union_pw_multi_aff *fl_l1_reduce_tiles(
	__isl_keep isl_schedule *canon);

/* ---- placement (place.c) ------------------------------------------------- */

/* Placement of every tensor the kernel touches (kernel.h conventions). */
int fl_l1_place(const fl_l1_model *m, const fl_l1_tiling *t,
		fl_kernel_tensor **out, int *n_out, fl_error *err);

/* ---- marks and the walkable tree (schedtree.c) -------------------------- */

/* Inserts a "parallel" mark above every band whose leading member is
 * coincident.  The mark's id carries an int[2] {depth, ncoinc} (schedule
 * depth of the band, number of leading coincident members), freed with
 * the id.  Takes s, gives the marked schedule. */
__isl_give isl_schedule *fl_l1_mark_parallel(__isl_take isl_schedule *s);

/* isl's block YAML text of s (malloc'd). */
char *fl_l1_schedule_text(__isl_keep isl_schedule *s);

/* The walkable copy of s for views (leaves hidden); NULL on failure. */
fl_tree_node *fl_l1_tree(__isl_keep isl_schedule *s);

#endif
