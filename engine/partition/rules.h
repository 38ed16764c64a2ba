/* The aggregation rule table (DESIGN 1.2): data, not code.
 *
 * A rule merges a producer micro-graph of one of the `producer` types into
 * a consumer of one of the `consumer` types, giving `result`.  Optional
 * op-kind lists restrict which producers/consumers qualify (`only`: every
 * op of the group that has the group's type is of a listed kind; `except`:
 * none is).  Rules of stage "partition" are used by Algorithm 1; later
 * stages (layer 2) are kept in the table so explanations can name them.
 *
 * File format (JSON):
 *   {"format": "fuselab-rules/1", "base": "default" | "none",
 *    "rules": [{"id": "R9", "producer": ["O"], "producer_only": ["conv2d"],
 *               "consumer": ["O"], "consumer_only": ["conv2d"],
 *               "result": "O", "stage": "partition", "doc": "..."}]}
 * "base": "default" (the default) appends the file's rules to the built-in
 * table; a rule with an existing id replaces it. */
#ifndef FL_RULES_H
#define FL_RULES_H

#include <stdbool.h>

#include "classify.h"
#include "fl_error.h"
#include "ops.h"

#define FL_RULE_MAX_KINDS 16

typedef enum fl_rule_stage {
	FL_STAGE_PARTITION,
	FL_STAGE_LAYER2,
} fl_rule_stage;

typedef struct fl_rule {
	char id[16];
	unsigned producer;	/* bit set of fl_op_type */
	unsigned consumer;
	fl_op_type result;
	fl_rule_stage stage;
	int n_p_only, n_p_except, n_c_only, n_c_except;
	fl_op_kind p_only[FL_RULE_MAX_KINDS], p_except[FL_RULE_MAX_KINDS];
	fl_op_kind c_only[FL_RULE_MAX_KINDS], c_except[FL_RULE_MAX_KINDS];
	bool enabled;
	char doc[160];
} fl_rule;

typedef struct fl_rule_table {
	int n;
	fl_rule rules[64];
} fl_rule_table;

void fl_rules_default(fl_rule_table *t);

/* Loads a rules file (see above); "file: rules[2].producer: ..." errors. */
int fl_rules_load(fl_rule_table *t, const char *path, fl_error *err);
int fl_rules_load_string(fl_rule_table *t, const char *text,
			 const char *source, fl_error *err);

/* Switches rule `id` off; -1 when there is no such rule. */
int fl_rules_disable(fl_rule_table *t, const char *id, fl_error *err);

const fl_rule *fl_rules_find(const fl_rule_table *t, const char *id);

/* "E or B" style text of a type set. */
const char *fl_type_set_format(unsigned set, char *buf, size_t n);

#endif
