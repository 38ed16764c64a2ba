/* Reference values several sessions of one graph share (DESIGN 1.6).
 *
 * The run pass checks every kernel against the interpreter's values of
 * every tensor of the session's primitive graph.  The strategy ladder runs
 * one graph under several strategies, and those values are the same under
 * every strategy: the passes that rewrite the graph (preprocess, open)
 * do not depend on it.  Computed per session, a model's intermediate
 * tensors were held once per strategy (five copies of ViT-B/16's 1.3 GB);
 * through a share the interpreter runs once for all of them and the values
 * are held once.
 *
 * A session finds the share in its options (fl_engine_opts.ref_share) and
 * asks it, in the run pass, for the values of its graph under its
 * interpreter options (fl_ref_share_values).  The share answers with the
 * values it holds when they were made from an equal graph (tensors, their
 * shapes, dtypes, roles and constant data, ops and their tensors) under
 * equal interpreter options; holding none yet, it runs the interpreter
 * and keeps the result.  Otherwise -- another graph, or values already
 * dropped -- it answers NULL without an error and the session computes
 * values of its own, as without a share: a share can cost memory, never
 * correctness.
 *
 * The values are read-only.  A session never keeps the pointer beyond
 * the call that checks its program (run_pass.c), so the share's owner may
 * drop them (fl_ref_share_drop) as soon as the sessions have verified --
 * timing does not read them -- even while the sessions stay open. */
#ifndef FL_REF_SHARE_H
#define FL_REF_SHARE_H

#include "interp.h"

typedef struct fl_ref_share fl_ref_share;

/* An empty share; NULL when out of memory. */
fl_ref_share *fl_ref_share_new(void);
/* Frees the share and its values (NULL: nothing). */
void fl_ref_share_free(fl_ref_share *r);
/* Frees the values now; later questions get NULL. */
void fl_ref_share_drop(fl_ref_share *r);
/* Interpreter runs made for the share so far (0 or 1). */
int fl_ref_share_runs(const fl_ref_share *r);

/* The values of g under o, from the share or run now (see above).  NULL
 * with err set when the interpreter failed; NULL with err untouched when
 * the share cannot hold g's values (the caller computes its own). */
const fl_values *fl_ref_share_values(fl_ref_share *r, const fl_graph *g,
				     const fl_interp_opts *o, fl_error *err);

#endif
