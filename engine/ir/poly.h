/* The polyhedral description of primitive ops (DESIGN 1.2 step 3, 1.3 step 1).
 *
 * Each primitive op becomes one or more isl statements with an iteration
 * domain and read/write access relations to arrays named after tensors
 * ("T<tensor index>").  Reductions, matmul, conv2d and pooling have an init
 * statement and an update statement (avg pooling also a finalize);
 * concat has one copy statement per input; pad fills then copies.  The
 * description is what partition classifies and what layer 1 schedules.
 *
 * Ownership follows isl: every isl object in these structs is owned by
 * the struct and freed by fl_poly_op_free. */
#ifndef FL_POLY_H
#define FL_POLY_H

#include <isl/ctx.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/union_map.h>

#include "graph.h"

typedef enum fl_stmt_role {
	FL_STMT_COMPUTE,	/* out[..] = f(in[..]) */
	FL_STMT_INIT,		/* out[..] = identity */
	FL_STMT_UPDATE,		/* out[..] = out[..] (+) f(in[..]) */
	FL_STMT_FINALIZE,	/* out[..] = g(out[..]), e.g. avg pool scale */
	FL_STMT_COPY,		/* out[offset + ..] = in_k[..] (concat, pad) */
	FL_STMT_FILL,		/* out[..] = constant (pad border) */
	FL_STMT_SCATTER,	/* out[j.., idx[j], ..] = upd[j] (or combined
				   with it): its write is a may-write of the
				   whole axis, not a function */
} fl_stmt_role;

typedef struct fl_poly_read {
	int input;		/* index into op->in[], -1: the op's own output */
	isl_map *access;	/* stmt -> T<tensor> */
	bool exact;		/* false: a may-read (data read by an index:
				   gather, gather_elements, a scatter's
				   output) */
} fl_poly_read;

typedef struct fl_poly_stmt {
	char *name;		/* isl tuple name: "S<op>_<k>" */
	fl_stmt_role role;
	int input;		/* COPY: which op input it copies, else -1 */
	isl_set *domain;
	isl_map *write;		/* stmt -> T<out tensor>; a function but for
				   FL_STMT_SCATTER */
	int n_reads;
	fl_poly_read *reads;
} fl_poly_stmt;

typedef struct fl_poly_op {
	int op;			/* op index in the graph */
	int n_stmts;
	fl_poly_stmt *stmts;	/* in program order */
	int main_stmt;		/* whose reads carry the dataflow: the update
				   of a reduction, the compute of an
				   elementwise op; -1 for multi-statement ops
				   without one (concat, pad) */
} fl_poly_op;

/* Array tuple name of tensor t: "T<t>" into buf. */
const char *fl_poly_array_name(int t, char *buf, size_t n);

/* Describes primitive op `op` of validated graph g.  Compound and custom
 * ops have no description (error). */
fl_poly_op *fl_poly_describe(isl_ctx *ctx, const fl_graph *g, int op,
			     fl_error *err);
void fl_poly_op_free(fl_poly_op *p);

/* Whole dataflow relation from op input k to the output:
 * (reads of input k)^-1 . write, over every statement; NULL if input k is
 * not read.  __isl_give. */
isl_map *fl_poly_dataflow(const fl_poly_op *p, int k);

/* u with the range tuples' names dropped, so that relations into a tile
 * or band space compare whatever that space is called (band schedules
 * are anonymous, inst2tile's need not be). */
__isl_give isl_union_map *fl_poly_anon_range(__isl_take isl_union_map *u);

#endif
