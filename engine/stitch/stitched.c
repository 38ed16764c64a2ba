/* What layers 2 and 3 made of a kernel, read back from the program and
 * the partition (stitch.h), for the views and exporters that show it.
 *
 * Layer 2 (memory.c) stitches whole kernels, and each layer-1 kernel is
 * exactly one micro-graph (engine/check.c checks both), so the
 * micro-graphs a kernel's ops come from are the layer-1 kernels it
 * stitched, and a tensor written in one of them and read in another is
 * on a stitched edge: the tensors layer 2 gave one `placed` event each.
 * Nothing here changes the state. */
#include <stdbool.h>

#include "engine.h"
#include "machine.h"
#include "stitch.h"

/* The micro-graph of op, -1 when the partition does not say. */
static int group_of_op(const fl_partition *p, int op)
{
	if (!p || !p->group_of || op < 0 || op >= p->n_ops)
		return -1;
	return p->group_of[op];
}

/* Whether an op of k before its i-th has the micro-graph of the i-th. */
static bool group_seen(const fl_kernel *k, const fl_partition *p, int i)
{
	int gid = group_of_op(p, k->ops[i]);

	for (int j = 0; j < i; j++)
		if (group_of_op(p, k->ops[j]) == gid)
			return true;
	return false;
}

int fl_stitch_kernel_groups(const fl_kernel *k, const fl_partition *p,
			    int *groups, int max)
{
	int n = 0;

	for (int i = 0; i < k->n_ops; i++) {
		if (group_of_op(p, k->ops[i]) < 0 || group_seen(k, p, i))
			continue;
		if (groups && n < max)
			groups[n] = group_of_op(p, k->ops[i]);
		n++;
	}
	return n;
}

/* Whether op belongs to kernel k. */
static bool in_kernel(const fl_kernel *k, int op)
{
	for (int i = 0; i < k->n_ops; i++)
		if (k->ops[i] == op)
			return true;
	return false;
}

bool fl_stitch_edge_tensor(const fl_kernel *k, const fl_graph *g,
			   const fl_partition *p, int t, int *from, int *to)
{
	int pr, gp;

	if (t < 0 || t >= g->n_tensors)
		return false;
	pr = g->tensors[t].producer;
	if (pr < 0 || !in_kernel(k, pr) || (gp = group_of_op(p, pr)) < 0)
		return false;
	for (int i = 0; i < k->n_ops; i++) {
		const fl_op *op = &g->ops[k->ops[i]];
		int gc = group_of_op(p, k->ops[i]);

		if (gc < 0 || gc == gp)
			continue;
		for (int j = 0; j < op->n_in; j++)
			if (op->in[j] == t) {
				if (from)
					*from = gp;
				if (to)
					*to = gc;
				return true;
			}
	}
	return false;
}

int64_t fl_stitch_capacity(const fl_engine_opts *o)
{
	const fl_machine *m = o->layer1.machine ? o->layer1.machine
						: fl_machine_get();

	if (o->stitch_capacity > 0)
		return o->stitch_capacity;
	if (o->run.target == FL_TARGET_CUDA)	/* a block's shared memory */
		return FL_CUDA_SHARED_DEFAULT;
	return m->l2 > 0 ? m->l2 : FL_STITCH_CPU_CAPACITY;
}
