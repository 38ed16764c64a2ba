/* User overrides: fusions a person forbids or forces (DESIGN 7).
 *
 * The explorer lists them, removes them and saves them; the command line
 * reads them back with --overrides FILE.  The file is small versioned
 * JSON:
 *
 *   {"format": "fuselab-overrides/1", "graph": "softmax",
 *    "overrides": [{"action": "forbid", "ops": ["a", "b"]},
 *                  {"action": "force", "ops": ["c", "d"]}]}
 *
 * "graph" names the graph the list was made for (a hint in messages,
 * not a check); ops are op names of the input file or of the primitives
 * its compounds open into ("op7.norm"), as --never-fuse and --fuse take
 * them.  A forbid is a --never-fuse pair, a force a --fuse
 * pair: fl_overrides_apply adds them to the engine options. */
#ifndef FL_APP_OVERRIDES_H
#define FL_APP_OVERRIDES_H

#include <stdbool.h>

#include "engine.h"
#include "fl_error.h"
#include "graph.h"

#define FL_OVERRIDES_FORMAT "fuselab-overrides/1"
#define FL_OVERRIDES_MAX_FILE_BYTES (1 << 20)

/* One override: a forbid (never in one micro-graph: --never-fuse) or,
 * with force, a force (together unless a cycle forbids it: --fuse). */
typedef struct fl_override {
	bool force;
	char a[128], b[128];	/* op names, as fl_op_pair holds them */
} fl_override;

typedef struct fl_overrides fl_overrides;

fl_overrides *fl_overrides_new(void);
void fl_overrides_free(fl_overrides *l);

int fl_overrides_count(const fl_overrides *l);
/* Override i (NULL when out of range); valid until the list changes. */
const fl_override *fl_overrides_get(const fl_overrides *l, int i);
/* The override on ops a and b (either order), or -1. */
int fl_overrides_find(const fl_overrides *l, const char *a, const char *b);

/* Adds an override and returns its index; the same override given again
 * returns the one already there.  -1 with a message when a name is empty
 * or too long, a and b are the same op, the pair already has the other
 * action ("op1,op2: already forbidden, cannot also be forced"), or the list
 * holds FL_MAX_CONSTRAINTS of that action (what fl_engine_opts holds). */
int fl_overrides_add(fl_overrides *l, bool force, const char *a,
		     const char *b, fl_error *err);
/* Removes override i (later ones move up); -1 when out of range. */
int fl_overrides_remove(fl_overrides *l, int i);

/* The graph name the loaded file gave ("" when none, or a new list). */
const char *fl_overrides_graph(const fl_overrides *l);

/* "force" or "forbid", as the file writes them. */
const char *fl_override_action_name(bool force);

/* Appends the overrides to eo's never_fuse and fuse pairs, after those
 * already there (the command line's); -1 when they would pass
 * FL_MAX_CONSTRAINTS. */
int fl_overrides_apply(const fl_overrides *l, fl_engine_opts *eo,
		       fl_error *err);

/* Checks every op name against the input graph g (its ops, or the
 * primitives its compound ops open into, as the engine takes them);
 * `source` (the file) names the list in the message:
 * "o.json: overrides[1].ops[0]: no op named "x" in graph "layernorm"". */
int fl_overrides_check(const fl_overrides *l, const fl_graph *g,
		       const char *source, fl_error *err);

/* Reads an overrides file into a new list (*out); -1 with a message
 * naming the file and the JSON path otherwise:
 * "o.json: overrides[1].action: expected "forbid" or "force", got
 * "merge"". */
int fl_overrides_load(const char *path, fl_overrides **out, fl_error *err);
/* The same from text; `source` names it in messages. */
int fl_overrides_load_string(const char *text, size_t len,
			     const char *source, fl_overrides **out,
			     fl_error *err);

/* Writes the list to path, atomically: a temporary file in the same
 * folder, then rename, so that a failure leaves whatever was at path
 * untouched and no partial file.  graph_name may be NULL (no "graph"). */
int fl_overrides_save(const char *path, const fl_overrides *l,
		      const char *graph_name, fl_error *err);

#endif
