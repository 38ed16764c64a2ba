/* The partition state (partition.h): freeing it, counting its alive
 * micro-graphs, and the type join a forced merge uses.  The partition
 * passes themselves each live in a file of their own, in pipeline order:
 * cluster.c, open.c, classify_pass.c, constrain.c, aggregate.c. */
#include <stdlib.h>
#include <string.h>

#include "passes_impl.h"

void fl_partition_free(fl_partition *p)
{
	for (int i = 0; i < p->n_groups; i++)
		free(p->groups[i].members);
	free(p->groups);
	free(p->cluster_of);
	free(p->type_of);
	free(p->type_reason);
	free(p->group_of);
	memset(p, 0, sizeof *p);
}

int fl_partition_count_alive(const fl_partition *p)
{
	int n = 0;

	for (int i = 0; i < p->n_groups; i++)
		n += p->groups[i].alive;
	return n;
}

fl_op_type fl_type_join(fl_op_type a, fl_op_type b)
{
	return a > b ? a : b;
}
