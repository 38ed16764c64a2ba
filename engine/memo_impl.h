/* Internal to the engine: what a session remembers of costly work, so
 * that stepping and going back never redo it (DESIGN 1: "layer-1 results
 * memoised per micro-graph").  Each table maps a key that names
 * everything the result depends on to the result; a replay that reaches
 * the same work with the same key takes the result instead of doing the
 * work again.  All of it lives as long as the session.  Keys are built
 * with fl_strbuf (strbuf.h). */
#ifndef FL_MEMO_IMPL_H
#define FL_MEMO_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "interp.h"
#include "strbuf.h"

/* A string-keyed table owning its values (freed with free_value). */
typedef struct fl_memo_map fl_memo_map;

fl_memo_map *fl_memo_map_new(void (*free_value)(void *value, void *ctx),
			     void *ctx);
void fl_memo_map_free(fl_memo_map *m);
/* The value under key, or NULL. */
void *fl_memo_map_get(const fl_memo_map *m, const char *key);
/* Stores value under key (a copy of key is kept; value is taken, and an
 * older value under the same key freed).  -1 when out of memory (value
 * is then freed). */
int fl_memo_map_put(fl_memo_map *m, const char *key, void *value);
int fl_memo_map_count(const fl_memo_map *m);

typedef struct fl_memo {
	fl_memo_map *layer1;	/* micro-graph -> layer-1 work (layer1.c) */
	fl_memo_map *kernel_code;	/* kernel -> its C and demotions
				   (codegen pass) */
	fl_memo_map *builds;	/* unit + compiler -> fl_build (compile) */
	fl_memo_map *runs;	/* unit + run options -> fl_run_result */
	fl_values *ref;		/* reference values of the primitive graph,
				   NULL until the run pass needs them (and
				   while opts' ref_share provides them) */
	int ref_runs;		/* interpreter runs for ref */
	char workdir[512];	/* of the latest compile, a cancelled one
				   too (fl_engine_workdir); "" before */
	double l1_seconds;	/* new layer-1 work done so far in the
				   session (the time budget's account) */
} fl_memo;

/* Free a layer-1 entry and a kernel's code (layer1.c and
 * backend/codegen_pass.c own their shapes). */
void fl_l1_memo_entry_free(void *value, void *ctx);
void fl_kernel_code_free(void *value, void *ctx);

/* free_build and the builds' ctx: the session's run options, so that a
 * work directory kept on request stays. */
fl_memo *fl_memo_new(void (*free_build)(void *, void *), void *build_ctx);
void fl_memo_free(fl_memo *m);

#endif
