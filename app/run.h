/* --run and --emit: the strategy ladder (DESIGN 1.6) from the command
 * line.  Each strategy is an engine session with its own rule set and
 * layer 1 on; the programs are emitted, or compiled, run and verified
 * against the interpreter, and compared by measured time. */
#ifndef FL_APP_RUN_H
#define FL_APP_RUN_H

#include "engine.h"
#include "ladder.h"
#include "options.h"

/* --emit DIR / --run; returns the exit status.  fl_batch_strategies
 * hands the ladder to *keep when keep is not NULL (the caller frees it
 * with fl_ladder_free), for exports that show the timings. */
int fl_batch_emit(const fl_graph *g, const fl_engine_opts *base,
		  const fl_options *o);
int fl_batch_strategies(const fl_graph *g, const fl_engine_opts *base,
			const fl_options *o, fl_ladder *keep);

#endif
