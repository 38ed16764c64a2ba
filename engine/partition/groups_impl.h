/* Internal to the engine: micro-graph bookkeeping for the passes that
 * merge (constrain, aggregate).
 *
 * Merging two micro-graphs must never create a cycle.  We keep a
 * topological order of the micro-graphs (ord) and, for a merge of X into
 * Y (X before Y), search only the window between them: a path X ~> Y
 * through another micro-graph means a cycle; otherwise the ancestors of Y
 * and the descendants of X inside the window are re-slotted around the
 * merged node (Pearce and Kelly's dynamic topological order), so each
 * check costs the size of the window rather than of the graph. */
#ifndef FL_GROUPS_IMPL_H
#define FL_GROUPS_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "state_impl.h"

/* Builds one micro-graph per op (type from classification; custom ops are
 * opaque and fenced off) and the bookkeeping.  Idempotent. */
int fl_groups_init(fl_state *st, fl_error *err);
void fl_groups_free(struct fl_groups *gx);
/* A deep copy (for snapshots); NULL when out of memory. */
struct fl_groups *fl_groups_copy(const struct fl_groups *gx);

/* Could micro-graphs x and y become one?  0: yes; 1: no, reason in why
 * ("would create a cycle through mul_7", "--never-fuse a,b", ...). */
int fl_groups_check(fl_state *st, int x, int y, char *why, size_t n);

/* Merges `from` into `into` (after fl_groups_check said yes); the result
 * has type `type`; `rule` is appended to the history. */
int fl_groups_merge(fl_state *st, int into, int from, fl_op_type type,
		    const char *rule, fl_error *err);

/* A set of op kinds, one bit per fl_op_kind: the op library has more
 * kinds than one 64-bit word holds. */
#define FL_KIND_WORDS ((FL_OP_COUNT + 63) / 64)
typedef struct fl_kind_set {
	uint64_t w[FL_KIND_WORDS];
} fl_kind_set;

static inline void fl_kind_set_add(fl_kind_set *s, fl_op_kind k)
{
	s->w[k / 64] |= 1ull << (k % 64);
}

static inline bool fl_kind_set_has(const fl_kind_set *s, fl_op_kind k)
{
	return (s->w[k / 64] >> (k % 64)) & 1;
}

/* Op kinds of the members of g whose own type is g's type: what a rule's
 * only/except lists are checked against. */
fl_kind_set fl_groups_kinds(const fl_state *st, int g);

/* Ops named `name`: the op with that name, else every op opened from the
 * user's op `name`.  Returns the count; idx (malloc'd) receives them. */
int fl_groups_resolve(const fl_graph *g, const char *name, int **idx);

#endif
