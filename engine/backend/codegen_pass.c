/* The codegen pass (DESIGN 1.6): the code of every kernel of the program
 * for the session's target (opts->run.target: C + OpenMP, or CUDA), one
 * "generated" decision per kernel, then the translation unit.
 *
 * Needs: st->program (layer 1).  Changes: st->kernel_src, st->unit_src
 * (left NULL when an op has no implementation: an opaque custom op),
 * and the placement of a tensor the backend could not keep tile-local or
 * in registers (it becomes global, with the backend's reason).
 * Decisions: generated, one per kernel, then placed, one per such
 * demotion, e.g.
 *     generated  fl_k3: 41 lines of C, 2 parallel loops, 1 tile-local
 *                array
 *     generated  fl_k3: 88 lines of CUDA, 2 __global__ functions, 1
 *                tile-local array        (the CUDA target)
 *     placed     fl_k3: t7 tile-local -> global: tile-local placement
 *                without a fixed footprint box
 * A kernel's code depends only on the target and the kernel (its name,
 * ops, schedule and placements) and the graph, so it is memoised under a
 * key made of those: going back and forth through this pass prints
 * nothing twice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/fixed_box.h>

#include "codegen.h"
#include "machine.h"
#include "memo_impl.h"
#include "passes_impl.h"

static fl_target target_of(const fl_state *st)
{
	return st->opts->run.target;
}

/* Bytes the tile-local arrays of one tile may take (--local-budget; 0:
 * the per-core L2 of the machine layer 1 plans for on the CPU, the
 * shared memory every CUDA GPU gives a block on the GPU). */
static int64_t local_budget(const fl_state *st)
{
	const fl_layer1_opts *o = &st->opts->layer1;

	if (o->local_budget > 0)
		return o->local_budget;
	if (target_of(st) == FL_TARGET_CUDA)
		return FL_CUDA_SHARED_DEFAULT;
	return (o->machine ? o->machine : fl_machine_get())->l2;
}

/* The memo key of kernel k: everything its C depends on.  malloc'd. */
static char *kernel_key(const fl_state *st, const fl_kernel *k)
{
	fl_strbuf key = {0};

	fl_strbuf_printf(&key, "%s pre %d budget %lld %s ops",
			 fl_target_name(target_of(st)), st->opts->preprocess,
			 (long long)local_budget(st), k->name);
	for (int i = 0; i < k->n_ops; i++)
		fl_strbuf_printf(&key, " %d", k->ops[i]);
	for (int i = 0; i < k->n_tensors; i++) {
		const fl_kernel_tensor *t = &k->tensors[i];

		fl_strbuf_printf(&key, " T%d:%d", t->tensor, (int)t->place);
		for (int d = 0; d < t->rank; d++)
			fl_strbuf_printf(&key, ",%lld", (long long)t->box[d]);
	}
	fl_strbuf_printf(&key, "\n%s", k->schedule_text ? k->schedule_text : "");
	return fl_strbuf_take(&key);
}

/* What the backend made of one kernel (the memo's value). */
typedef struct kernel_code {
	char *src;
	int n_demoted;
	fl_codegen_demotion *demoted;
} kernel_code;

void fl_kernel_code_free(void *value, void *ctx)
{
	kernel_code *c = value;

	(void)ctx;
	if (c) {
		free(c->src);
		free(c->demoted);
		free(c);
	}
}

/* Kernel k's code: from the memo, or generated now (kept by the memo;
 * NULL with a message on failure). */
static const kernel_code *kernel_code_of(fl_state *st, int k, fl_error *err)
{
	char *key = kernel_key(st, &st->program->kernels[k]);
	kernel_code *c = key ? fl_memo_map_get(st->memo->kernel_code, key) : NULL;

	if (c || !key) {
		free(key);
		if (!c)
			fl_error_set(err, "out of memory");
		return c;
	}
	c = calloc(1, sizeof *c);
	if (!c) {
		free(key);
		fl_error_set(err, "out of memory");
		return NULL;
	}
	if (target_of(st) == FL_TARGET_CUDA)
		c->src = fl_codegen_cuda_kernel(st->program, k, local_budget(st),
						&c->demoted, &c->n_demoted,
						err);
	else
		c->src = fl_codegen_c_kernel_budget(st->program, k,
						    local_budget(st),
						    &c->demoted, &c->n_demoted,
						    err);
	if (!c->src || fl_memo_map_put(st->memo->kernel_code, key, c) < 0) {
		if (c->src)
			fl_error_set(err, "out of memory");
		else
			fl_kernel_code_free(c, NULL);
		free(key);
		return NULL;
	}
	free(key);
	return c;
}

static int count_in(const char *s, const char *what)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static int tile_local_count(const fl_kernel *k)
{
	int n = 0;

	for (int i = 0; i < k->n_tensors; i++)
		n += k->tensors[i].place == FL_PLACE_TILE_LOCAL;
	return n;
}

/* "2 parallel loops" (C) or "2 __global__ functions" (CUDA): how the
 * kernel's code runs in parallel. */
static void parallel_text(fl_target t, const char *src, char *buf, size_t n)
{
	int par;

	if (t == FL_TARGET_CUDA) {
		par = count_in(src, "__global__");
		snprintf(buf, n, "%d __global__ function%s", par,
			 par == 1 ? "" : "s");
		return;
	}
	par = count_in(src, "#pragma omp parallel");
	snprintf(buf, n, "%d parallel loop%s", par, par == 1 ? "" : "s");
}

static int log_generated(fl_state *st, int k, const char *src)
{
	const fl_kernel *kn = &st->program->kernels[k];
	const char **names = fl_state_op_names(st, kn->ops, kn->n_ops);
	fl_target t = target_of(st);
	int local = tile_local_count(kn);
	char par[64];
	fl_event *e;

	if (!names)
		return -1;
	parallel_text(t, src, par, sizeof par);
	e = fl_state_log(st, FL_EV_GENERATED, "", names, kn->n_ops, kn->group,
			 -1, "%s: %d lines of %s, %s, %d tile-local array%s",
			 kn->name, count_in(src, "\n"),
			 t == FL_TARGET_CUDA ? "CUDA" : "C", par, local,
			 local == 1 ? "" : "s");
	free(names);
	return e ? 0 : -1;
}

/* The placement of demoted tensor d in kernel k becomes global, logged
 * as a decision. */
static int demote(fl_state *st, int k, const fl_codegen_demotion *d)
{
	fl_kernel *kn = &st->program->kernels[k];
	const char *name = st->graph->tensors[d->tensor].name;
	int p = st->graph->tensors[d->tensor].producer;
	const char *op = p >= 0 ? st->graph->ops[p].name : kn->name;

	for (int i = 0; i < kn->n_tensors; i++) {
		fl_kernel_tensor *kt = &kn->tensors[i];

		if (kt->tensor != d->tensor)
			continue;
		kt->place = FL_PLACE_GLOBAL;
		isl_fixed_box_free(kt->box_isl);
		kt->box_isl = NULL;
		kt->bytes_kept = 0;
		snprintf(kt->why, sizeof kt->why, "demoted by the backend: %.130s",
			 d->why);
	}
	return fl_state_log(st, FL_EV_PLACED, "", &op, 1, kn->group, -1,
			    "%s: %s %s -> global: %s", kn->name, name,
			    fl_placement_name(d->from), d->why) ? 0 : -1;
}

/* The decisions of kernel k: generated, then its demotions. */
static int kernel_decisions(fl_state *st, int k, fl_error *err)
{
	const kernel_code *c;

	if (!fl_state_decide(st))
		return FL_PASS_PAUSED;
	c = kernel_code_of(st, k, err);
	if (!c)
		return -1;
	st->kernel_src[k] = strdup(c->src);
	if (!st->kernel_src[k] || log_generated(st, k, c->src) < 0)
		goto oom;
	for (int i = 0; i < c->n_demoted; i++) {
		if (!fl_state_decide(st))
			return FL_PASS_PAUSED;
		if (demote(st, k, &c->demoted[i]) < 0)
			goto oom;
	}
	return FL_PASS_DONE;
oom:
	fl_error_set(err, "out of memory");
	return -1;
}

int fl_pass_codegen(fl_state *st, fl_error *err)
{
	const fl_program *p = st->program;

	if (!p) {
		fl_error_set(err, "codegen: layer 1 made no program");
		return -1;
	}
	st->kernel_src = calloc((size_t)p->n_kernels + 1, sizeof *st->kernel_src);
	if (!st->kernel_src) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	st->n_src = p->n_kernels;
	for (int k = 0; k < p->n_kernels; k++) {
		int rc = kernel_decisions(st, k, err);

		if (rc != FL_PASS_DONE)
			return rc;
	}
	/* A graph with an opaque custom op gets its kernels' code, to read,
	 * but no translation unit; the compile pass says why. */
	if (fl_graph_check_computable(p->graph, "compile", NULL) < 0)
		return FL_PASS_DONE;
	if (target_of(st) == FL_TARGET_CUDA)
		st->unit_src = fl_codegen_cuda_unit(p, (const char *const *)
						    st->kernel_src, err);
	else
		st->unit_src = fl_codegen_c_unit(p, (const char *const *)
						 st->kernel_src, err);
	return st->unit_src ? FL_PASS_DONE : -1;
}
