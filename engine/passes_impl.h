/* Internal to the engine: the passes of the pipeline, in order.  The
 * table in engine.c lists them; each lives in the file of its stage and
 * states its contract (what it needs, what it changes, its decisions) at
 * the top of that file.
 *
 * Every pass has the same shape (state_impl.h): it returns FL_PASS_DONE,
 * FL_PASS_PAUSED when the decision budget ran out, FL_PASS_RESTART when a
 * later layer sent feedback to the partition, or -1 with a message. */
#ifndef FL_PASSES_IMPL_H
#define FL_PASSES_IMPL_H

#include "state_impl.h"

int fl_pass_preprocess(fl_state *st, fl_error *err);	/* preprocess/ */
int fl_pass_cluster(fl_state *st, fl_error *err);	/* partition/ */
int fl_pass_open(fl_state *st, fl_error *err);
int fl_pass_classify(fl_state *st, fl_error *err);
int fl_pass_constrain(fl_state *st, fl_error *err);
int fl_pass_aggregate(fl_state *st, fl_error *err);
int fl_pass_layer1(fl_state *st, fl_error *err);	/* layer1/ */
int fl_pass_layer2(fl_state *st, fl_error *err);	/* stitch/ */
int fl_pass_layer3(fl_state *st, fl_error *err);
int fl_pass_codegen(fl_state *st, fl_error *err);	/* backend/ */
int fl_pass_compile(fl_state *st, fl_error *err);	/* run/ */
int fl_pass_run(fl_state *st, fl_error *err);

#endif
