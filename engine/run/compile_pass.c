/* The compile pass (DESIGN 1.6): the program's translation unit into a
 * shared object, with the session's compiler and options.
 *
 * Needs: st->unit_src (codegen).  Changes: st->build.
 * Decisions: one "compiled", e.g.
 *     compiled  cc -O3 -march=native -fopenmp ...: gen.so built, 0
 *               warnings; 1.84 s
 *     compiled  compile error: gen.c:12: error: ...
 * With the CUDA target the unit is compiled by nvcc (gen.cu); when this
 * machine has no CUDA device (fl_build_cpu_fallback) a second "compiled"
 * follows: the C of the same program built with cc, which is what runs,
 * e.g.
 *     compiled  nvcc -O3 -std=c++17 ... -arch=sm_90 ...: gen.so built
 *     compiled  no CUDA device: CPU backend only (...): cc -O3 ...:
 *               gen.so built, 0 warnings
 * A failed compile is a decision, not an engine error: the run pass then
 * says there is nothing to run.  The build is memoised under the unit's
 * text and the compiler, and its directory lives as long as the session;
 * a cancelled compile is an error ("cancelled") and is not kept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen.h"
#include "memo_impl.h"
#include "passes_impl.h"

/* The memo key of a build: compiler options, then the unit.  malloc'd. */
static char *build_key(const fl_run_opts *o, const char *src)
{
	fl_strbuf k = {0};

	fl_strbuf_printf(&k, "%s cc %s workdir %s keep %d\n",
			 fl_target_name(o->target), o->cc ? o->cc : "",
			 o->workdir ? o->workdir : "", o->keep);
	fl_strbuf_printf(&k, "%s", src);
	return fl_strbuf_take(&k);
}

/* The build of src with options o: from the memo or compiled now; NULL
 * with a message when that fails or was cancelled. */
static fl_build *build_of(fl_state *st, const char *src,
			  const fl_run_opts *o, fl_error *err)
{
	char *key = build_key(o, src);
	fl_build *b = key ? fl_memo_map_get(st->memo->builds, key) : NULL;

	if (b || !key) {
		free(key);
		if (!b)
			fl_error_set(err, "out of memory");
		return b;
	}
	b = calloc(1, sizeof *b);
	if (!b || fl_build_source(src, o, b, err) < 0) {
		if (!b)
			fl_error_set(err, "out of memory");
		free(b);
		free(key);
		return NULL;
	}
	snprintf(st->memo->workdir, sizeof st->memo->workdir, "%s",
		 b->workdir);
	if (b->status == FL_RUN_CANCELLED) {
		fl_error_set(err, "cancelled while compiling");
		fl_build_remove(b, &st->opts->run);
		free(b);
		free(key);
		return NULL;
	}
	if (fl_memo_map_put(st->memo->builds, key, b) < 0) {
		fl_error_set(err, "out of memory");
		b = NULL;
	}
	free(key);
	return b;
}

static void log_compiled(fl_state *st, const fl_build *b)
{
	const char *sep = b->note[0] ? ": " : "";
	fl_event *e;

	if (b->status == FL_RUN_OK)
		e = fl_state_log(st, FL_EV_COMPILED, "", NULL, 0, -1, -1,
				 "%s%s%s %s: %s built, %d warning%s%s%s",
				 b->note, sep, b->compiler, b->flags, "gen.so",
				 b->n_warnings, b->n_warnings == 1 ? "" : "s",
				 b->n_warnings ? ": " : "", b->warnings);
	else
		e = fl_state_log(st, FL_EV_COMPILED, "", NULL, 0, -1, -1,
				 "%s%s%s: %s", b->note, sep,
				 fl_run_status_name(b->status), b->message);
	if (e) {
		e->n_measured = 1;
		e->measured[0] = b->seconds;
	}
}

/* The C of the program built in place of its CUDA build cuda (no CUDA
 * device), with the fallback's note; NULL with a message. */
static const fl_build *cpu_build_of(fl_state *st, const fl_build *cuda,
				    fl_error *err)
{
	fl_run_opts o = st->opts->run;
	char *src = fl_codegen_c(st->program, err);
	fl_build *b;

	if (!src)
		return NULL;
	o.target = FL_TARGET_CPU;
	b = build_of(st, src, &o, err);
	free(src);
	if (b)
		fl_build_note_fallback(b, cuda);
	return b;
}

int fl_pass_compile(fl_state *st, fl_error *err)
{
	if (!st->unit_src) {
		if (!st->program ||
		    fl_graph_check_computable(st->program->graph, "compile",
					      err) == 0)
			fl_error_set(err, "compile: no generated code");
		return -1;
	}
	if (!fl_state_decide(st))
		return FL_PASS_PAUSED;
	st->build = build_of(st, st->unit_src, &st->opts->run, err);
	if (!st->build)
		return -1;
	log_compiled(st, st->build);
	if (!fl_build_cpu_fallback(st->build, &st->opts->run))
		return FL_PASS_DONE;
	if (!fl_state_decide(st))
		return FL_PASS_PAUSED;
	st->build = cpu_build_of(st, st->build, err);
	if (!st->build)
		return -1;
	log_compiled(st, st->build);
	return FL_PASS_DONE;
}
