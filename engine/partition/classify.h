/* Classification of primitive ops into elementwise / broadcast / reduction
 * / opaque (DESIGN 1.2 step 3), computed with isl from each op's
 * polyhedral description -- never looked up by op name.
 *
 * For each input k the relation I_k -> O is split into 1-D relations per
 * dimension pair, each bijective (same extent, one-to-one, aligned),
 * injective (input extent 1: broadcast), surjective (output extent 1 while
 * the input is larger: reduction) or general.  E: all bijective; B: some
 * injective, rest bijective; R: some surjective, rest bijective or
 * injective; O: any general relation, or a whole relation that is neither
 * single-valued nor injective (a contraction such as matmul).  Inputs with
 * a single element (scalars) do not change the iteration space and are
 * left out. */
#ifndef FL_CLASSIFY_H
#define FL_CLASSIFY_H

#include <isl/ctx.h>

#include "graph.h"

typedef enum fl_op_type {
	FL_TYPE_E,
	FL_TYPE_B,
	FL_TYPE_R,
	FL_TYPE_O,
} fl_op_type;

typedef enum fl_dim_rel {
	FL_REL_BIJECTIVE,
	FL_REL_INJECTIVE,
	FL_REL_SURJECTIVE,
	FL_REL_GENERAL,
} fl_dim_rel;

#define FL_CLASSIFY_REASON 256

typedef struct fl_classification {
	fl_op_type type;
	/* why, for the event log: "in[1] dim 0 -> out dim 1: injective
	 * (broadcast)", "in[0] dim 1 reduced (surjective)" */
	char reason[FL_CLASSIFY_REASON];
} fl_classification;

const char *fl_op_type_name(fl_op_type t);	/* "E", "B", "R", "O" */
const char *fl_op_type_long_name(fl_op_type t);	/* "elementwise", ... */
const char *fl_dim_rel_name(fl_dim_rel r);

/* Classifies primitive op `op` of g; -1 with a message for ops that have no
 * polyhedral description (compound, custom). */
int fl_classify_op(isl_ctx *ctx, const fl_graph *g, int op,
		   fl_classification *c, fl_error *err);

/* Classification results by op signature (kind, input shapes, attrs), kept
 * by the session across replays so stepping does not redo isl work
 * (classify_pass.c). */
struct fl_classify_cache;
struct fl_classify_cache *fl_classify_cache_new(void);
void fl_classify_cache_free(struct fl_classify_cache *c);

#endif
