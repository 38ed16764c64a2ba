/* Stitching (DESIGN 1.4, 1.5): layers 2 and 3 of APOLLO.
 *
 * The *analysis* of layer 3, parallel stitching (APOLLO 4.3, Algorithm
 * 3), is here; the pass that acts on it is parallel_pass.c (the pass
 * FL_PASS_LAYER3, strategy apollo), which keeps the analysis it acted
 * on in the engine state (fl_engine_parallel).
 * fl_stitch_parallel_analyze reads a graph, its partition and (when
 * layer 1 ran) its program, and works out which independent units (the
 * program's kernels, else the alive micro-graphs, else the ops) layer 3
 * would run together, with the numbers of its cost model.  It never
 * changes anything.
 *
 * The analysis, step by step:
 *   1. units and the data edges between them;
 *   2. branch sets: the branches leaving a multi-head unit (several
 *      consumers) and the branches entering a multi-tail unit (several
 *      producers); the sources of the graph share a virtual head and its
 *      sinks a virtual tail, so that disconnected sub-graphs are
 *      branches too (APOLLO 4.3: F1 and F2);
 *   3. each branch is walked from its head (or back from its tail) to the
 *      next multi-head or multi-tail unit, which ends it and is left out:
 *      such a unit is shared with other branches, so it cannot run beside
 *      them.  A unit joins at most one branch (the first set that reaches
 *      it);
 *   4. compute-bound units (any matmul, conv2d, or compound op holding
 *      one: dense, attention) and custom ops are dropped: they fill the
 *      machine on their own;
 *   5. rounds: round r takes the r-th candidate of every branch that
 *      has one, sorts them by estimated cost (largest first), and from
 *      the first not yet grouped takes the largest prefix whose gain is
 *      positive, shrinking it until it is; a group of one is no group.
 *
 * Cost model (a roofline): a unit moves `bytes` (the tensors it reads
 * from outside and writes for outside, each once) and does `flops`; it
 * can use `cores` of the machine's cores (one per `grain` output
 * elements of its largest op); alone it takes
 *     cost = launch + max(bytes / (bw * cores/C), flops / (peak * cores/C))
 * A set run together pays one launch, and its units share the machine:
 *     together = launch + max(max roof_i, sum(cores_i * roof_i) / C)
 *     gain     = sum cost_i - together
 * which is APOLLO's  gain = sum cost - max cost  while the set fits the
 * machine (sum cores_i <= C), and stops growing once the units compete
 * for cores and bandwidth (APOLLO Example 7: adding ops is not always a
 * gain). */
#ifndef FL_STITCH_H
#define FL_STITCH_H

#include <stdbool.h>
#include <stdint.h>

#include "fl_error.h"
#include "graph.h"
#include "kernel.h"
#include "partition.h"

/* Capacity of tile-local memory (DESIGN 1.4): a per-core L2 budget on a
 * CPU, shared memory per block on a GPU.  Layer 2 (memory.c, the pass
 * FL_PASS_LAYER2) takes --stitch-capacity, else for the CUDA target
 * FL_CUDA_SHARED_DEFAULT (target.h), else the machine's per-core L2, else
 * FL_STITCH_CPU_CAPACITY when the machine does not tell. */
#define FL_STITCH_CPU_CAPACITY (256 * 1024)

struct fl_engine_opts;

/* The capacity layer 2 gives a tensor on a stitched edge, per tile,
 * under options o: --stitch-capacity, else under the CUDA target a
 * block's shared memory (FL_CUDA_SHARED_DEFAULT), else the per-core L2
 * of o's machine (the running one when o names none), else
 * FL_STITCH_CPU_CAPACITY. */
int64_t fl_stitch_capacity(const struct fl_engine_opts *o);

/* Reading back what layers 2 and 3 made (stitched.c), for views and
 * exporters.  Each layer-1 kernel holds exactly one micro-graph of
 * partition p, so a kernel whose ops come from several was stitched by
 * layer 2 (or runs branches side by side: layer 3).
 * fl_stitch_kernel_groups writes the micro-graphs of k's ops, each once
 * in the order of its ops, into groups (at most max; groups may be NULL)
 * and returns how many there are. */
int fl_stitch_kernel_groups(const fl_kernel *k, const fl_partition *p,
			    int *groups, int max);
/* Whether tensor t of graph g is on an edge layer 2 stitched inside k:
 * written by an op of one of k's micro-graphs and read by an op of
 * another; then those micro-graphs go into *from and *to (either may be
 * NULL; the first reader's when several read it). */
bool fl_stitch_edge_tensor(const fl_kernel *k, const fl_graph *g,
			   const fl_partition *p, int t, int *from, int *to);

/* The machine the cost model assumes: documented defaults, not measured
 * (bench/ measures the real bandwidth). */
typedef struct fl_roofline {
	int cores;		/* C: 8 */
	double bw;		/* bytes/s of main memory: 20e9 */
	double peak;		/* f32 flop/s of all cores: 256e9 (8 cores x
				   32: AVX2 FMA at 2 GHz) */
	double launch;		/* s per kernel: 5e-6 (an OpenMP parallel
				   region's fork and join plus the call) */
	int64_t grain;		/* output elements per core's work: 4096 */
} fl_roofline;

void fl_roofline_default(fl_roofline *m);

/* The GPU the cost model assumes under the CUDA target: an H100 SXM's
 * datasheet figures, not measured -- 132 SMs (cores), 3.35e12 B/s of
 * HBM3, 67e12 f32 flop/s without tensor cores, 4e-6 s per launch, 2048
 * output elements per SM's work (a block of 256 threads, 8 each). */
void fl_roofline_cuda_default(fl_roofline *m);

typedef enum fl_par_unit_kind {
	FL_PAR_KERNELS,		/* the program's kernels (after layer 1) */
	FL_PAR_GROUPS,		/* alive micro-graphs (after aggregation) */
	FL_PAR_OPS,		/* ops (before any partition) */
} fl_par_unit_kind;

const char *fl_par_unit_kind_name(fl_par_unit_kind k);	/* "kernels" .. */

typedef struct fl_par_unit {
	int id;			/* kernel index, micro-graph id or op index */
	char name[96];		/* "fl_k3 (exp_3..sum_4)", "G12 (exp_3)" */
	int n_ops;
	int first_op;		/* op index of its first op */
	int64_t bytes;
	double flops;
	int cores;		/* cores it can use, 1..C */
	double roof;		/* max(bytes/bw, flops/peak) on its cores */
	double cost;		/* launch + roof */
	bool compute_bound;	/* dropped from the candidates */
	bool custom;		/* holds a custom op: dropped too */
	int branch_set, branch;	/* where it was walked, -1: nowhere */
} fl_par_unit;

typedef struct fl_par_branch {
	int n_units;
	int *units;		/* walk order, unit indices */
	int n_cand;
	int *cand;		/* the units not dropped, walk order */
} fl_par_branch;

/* One evaluation of the cost model on sorted candidates [first,
 * first+count) of a round. */
typedef struct fl_par_try {
	int first, count;
	double sum;		/* sum of cost */
	double max;		/* max of cost */
	double together;
	double gain;
	bool accepted;
	/* Set by the layer-3 pass (parallel_pass.c) when it made the
	 * accepted set one kernel; an accepted set it could not stitch (a
	 * cycle through other kernels) stays false. */
	bool stitched;
	char kernel[32];	/* the stitched kernel's name then */
} fl_par_try;

typedef struct fl_par_round {
	int n;
	int *cand;		/* unit indices, cost descending */
	int *branch;		/* the branch each came from */
	int n_tries;
	fl_par_try *tries;	/* in the order evaluated */
} fl_par_round;

typedef struct fl_par_set {
	char head[128];		/* "virtual head", "after G3 (add_1)",
				   "before G9 (mul_7)" */
	int n_branches;
	fl_par_branch *branches;
	int n_rounds;
	fl_par_round *rounds;
} fl_par_set;

typedef struct fl_par_analysis {
	fl_par_unit_kind kind;
	fl_roofline machine;
	int n_units;
	fl_par_unit *units;
	int n_sets;
	fl_par_set *sets;
	int n_groups;		/* accepted tries over all sets */
	double total_gain;	/* their gains summed, seconds */
	int refs;		/* owners besides the first (engine states
				   share the layer-3 pass's analysis) */
} fl_par_analysis;

/* Analyses graph g (the engine's graph as rewritten) with its partition
 * (NULL, or one before aggregation: ops are the units) and program (NULL
 * before layer 1), on machine m (NULL: the defaults).  Returns a new
 * analysis (fl_par_analysis_free), NULL with a message when out of
 * memory. */
fl_par_analysis *fl_stitch_parallel_analyze(const fl_graph *g,
					    const fl_partition *p,
					    const fl_program *prog,
					    const fl_roofline *m,
					    fl_error *err);
/* Frees a, or drops one reference when fl_par_analysis_ref added one. */
void fl_par_analysis_free(fl_par_analysis *a);
/* One more owner of a (read-only from then on); returns a. */
fl_par_analysis *fl_par_analysis_ref(fl_par_analysis *a);

/* The cost model on its own: n units with costs cost[i], roofline
 * times roof[i] and cores[i] used; returns the gain of running them
 * together on m and the time together in *together (may be NULL). */
double fl_par_gain(const fl_roofline *m, const double *cost,
		   const double *roof, const int *cores, int n,
		   double *together);

#endif
