/* The codegen pass (DESIGN 1.6): the C of every kernel of the program,
 * one "generated" decision per kernel, then the translation unit.
 *
 * Needs: st->program (layer 1).  Changes: st->kernel_src, st->unit_src.
 * Decisions: generated, one per kernel, e.g.
 *     generated  fl_k3: 41 lines of C, 2 parallel loops, 1 tile-local
 *                array (ops: sm.exp sm.sum)
 * A kernel's C depends only on the kernel (its name, ops, schedule and
 * placements) and the graph, so it is memoised under a key made of
 * those: going back and forth through this pass prints nothing twice. */
#include <stdlib.h>
#include <string.h>

#include "codegen.h"
#include "memo_impl.h"
#include "passes_impl.h"

/* The memo key of kernel k: everything its C depends on.  malloc'd. */
static char *kernel_key(const fl_state *st, const fl_kernel *k)
{
	fl_strbuf key = {0};

	fl_strbuf_printf(&key, "pre %d %s ops", st->opts->preprocess, k->name);
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

/* Kernel k's C: from the memo, or generated now. */
static char *kernel_source(fl_state *st, int k, fl_error *err)
{
	char *key = kernel_key(st, &st->program->kernels[k]);
	const char *known = key ? fl_memo_map_get(st->memo->kernel_src, key)
				: NULL;
	char *src;

	if (!key) {
		fl_error_set(err, "out of memory");
		return NULL;
	}
	if (known) {
		free(key);
		return strdup(known);
	}
	src = fl_codegen_c_kernel(st->program, k, err);
	if (src) {
		char *keep = strdup(src);

		if (keep)
			fl_memo_map_put(st->memo->kernel_src, key, keep);
	}
	free(key);
	return src;
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

static int log_generated(fl_state *st, int k, const char *src)
{
	const fl_kernel *kn = &st->program->kernels[k];
	const char **names = malloc(((size_t)kn->n_ops + 1) * sizeof *names);
	int par = count_in(src, "#pragma omp parallel"), local = tile_local_count(kn);
	fl_event *e;

	if (!names)
		return -1;
	for (int i = 0; i < kn->n_ops; i++)
		names[i] = st->graph->ops[kn->ops[i]].name;
	e = fl_state_log(st, FL_EV_GENERATED, "", names, kn->n_ops, kn->group,
			 -1, "%s: %d lines of C, %d parallel loop%s, %d "
			 "tile-local array%s", kn->name, count_in(src, "\n"),
			 par, par == 1 ? "" : "s", local, local == 1 ? "" : "s");
	free(names);
	return e ? 0 : -1;
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
		if (!fl_state_decide(st))
			return FL_PASS_PAUSED;
		st->kernel_src[k] = kernel_source(st, k, err);
		if (!st->kernel_src[k])
			return -1;
		if (log_generated(st, k, st->kernel_src[k]) < 0) {
			fl_error_set(err, "out of memory");
			return -1;
		}
	}
	st->unit_src = fl_codegen_c_unit(p, (const char *const *)st->kernel_src,
					 err);
	return st->unit_src ? FL_PASS_DONE : -1;
}
