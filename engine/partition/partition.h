/* Partition state (DESIGN 1.2): which cluster each op belongs to, each
 * primitive's type, and the micro-graphs that aggregation builds.  Views
 * and exporters read it through the engine (engine.h); the partition
 * passes write it (cluster.c, open.c, classify_pass.c, constrain.c,
 * aggregate.c: one file each, in pipeline order). */
#ifndef FL_PARTITION_H
#define FL_PARTITION_H

#include <stdbool.h>

#include "classify.h"

typedef struct fl_micro_graph {
	int id;
	bool alive;		/* false once merged into another */
	fl_op_type type;
	int cluster;
	int n_members, cap_members;
	int *members;		/* op indices, ascending */
	char history[128];	/* rule ids that built it, e.g. "R1 R4" */
} fl_micro_graph;

typedef struct fl_partition {
	int n_ops;
	int n_clusters;
	int *cluster_of;	/* op -> cluster, -1: excluded (custom op) */
	bool classified;	/* type_of is valid */
	fl_op_type *type_of;
	char (*type_reason)[FL_CLASSIFY_REASON];
	int *group_of;		/* op -> micro-graph index, -1: none */
	int n_groups, cap_groups;
	fl_micro_graph *groups;	/* alive and dead; index == id */
} fl_partition;

void fl_partition_free(fl_partition *p);

/* Union of two micro-graph types when a user forces a merge. */
fl_op_type fl_type_join(fl_op_type a, fl_op_type b);

/* Alive micro-graphs, in id order. */
int fl_partition_count_alive(const fl_partition *p);

#endif
