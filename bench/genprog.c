/* Generated programs loaded into the benchmark (genprog.h). */
#include "genprog.h"

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen.h"

/* The engine on g, stopped after codegen. */
static int generate(gp_prog *gp, const fl_graph *g, fl_strategy st,
		    fl_error *err)
{
	fl_engine_opts o;

	fl_engine_opts_default(&o);
	o.strategy = st;
	o.stop_after = FL_PASS_CODEGEN;
	gp->session = fl_engine_open(g, &o, err);
	if (!gp->session || fl_engine_run(gp->session, err) < 0)
		return -1;
	gp->program = fl_engine_program(gp->session);
	if (!gp->program) {
		fl_error_set(err, "the engine made no program");
		return -1;
	}
	return 0;
}

/* Compiles the program's C (fl_codegen_c: the unit the codegen pass
 * makes) and loads its kernel table. */
static int build_and_load(gp_prog *gp, fl_error *err)
{
	char *src = fl_codegen_c(gp->program, err);
	const int *n;

	if (!src)
		return -1;
	fl_run_opts_default(&gp->run_opts);
	if (fl_build_source(src, &gp->run_opts, &gp->build, err) < 0) {
		free(src);
		return -1;
	}
	free(src);
	if (gp->build.status != FL_RUN_OK) {
		fl_error_set(err, "%s: %s", fl_run_status_name(gp->build.status),
			     gp->build.message);
		return -1;
	}
	/* Never unloaded: gen.so may be what brought in the OpenMP runtime,
	 * whose idle worker threads would crash if it went away. */
	gp->dl = dlopen(gp->build.so_path, RTLD_NOW | RTLD_LOCAL |
			RTLD_NODELETE);
	if (!gp->dl) {
		fl_error_set(err, "dlopen: %s", dlerror());
		return -1;
	}
	n = dlsym(gp->dl, "fl_n_kernels");
	gp->kernels = dlsym(gp->dl, "fl_kernels");
	if (!n || !gp->kernels || *n != gp->program->n_kernels) {
		fl_error_set(err, "%s does not export the program's %d kernels",
			     gp->build.so_path, gp->program->n_kernels);
		return -1;
	}
	gp->n_kernels = *n;
	return 0;
}

/* One 64-byte aligned buffer per tensor of the graph, inputs,
 * parameters and constants filled with the interpreter's values. */
static int make_buffers(gp_prog *gp, fl_error *err)
{
	const fl_graph *g = gp->program->graph;

	gp->n_bufs = g->n_tensors;
	gp->bufs = calloc((size_t)g->n_tensors, sizeof *gp->bufs);
	gp->numel = calloc((size_t)g->n_tensors, sizeof *gp->numel);
	gp->borrowed = calloc((size_t)g->n_tensors, 1);
	if (!gp->bufs || !gp->numel || !gp->borrowed)
		goto oom;
	for (int t = 0; t < g->n_tensors; t++) {
		const fl_tensor *x = &g->tensors[t];
		int64_t n = fl_shape_numel(&x->shape);
		size_t bytes = ((size_t)(n > 0 ? n : 1) * sizeof(float) + 63) /
			       64 * 64;

		gp->numel[t] = n;
		gp->bufs[t] = aligned_alloc(64, bytes);
		if (!gp->bufs[t])
			goto oom;
		memset(gp->bufs[t], 0, bytes);
		if (x->role == FL_ROLE_INPUT || x->role == FL_ROLE_PARAM ||
		    x->role == FL_ROLE_CONST) {
			fl_buf b = {.shape = x->shape, .data = gp->bufs[t]};

			fl_interp_fill_input(g, t, FL_INTERP_DEFAULT_SEED, &b);
		}
	}
	return 0;
oom:
	fl_error_set(err, "out of memory allocating the tensors of %s",
		     g->name ? g->name : "the graph");
	return -1;
}

int gp_open(gp_prog *gp, const fl_graph *g, fl_strategy st, fl_error *err)
{
	memset(gp, 0, sizeof *gp);
	if (generate(gp, g, st, err) < 0 || build_and_load(gp, err) < 0 ||
	    make_buffers(gp, err) < 0) {
		gp_close(gp);
		return -1;
	}
	return 0;
}

void gp_call(void *p)
{
	gp_prog *gp = p;

	for (int k = 0; k < gp->n_kernels; k++)
		gp->kernels[k](gp->bufs);
}

float *gp_tensor(const gp_prog *gp, const char *name, int64_t *numel)
{
	int t = fl_graph_find_tensor(gp->program->graph, name);

	if (t < 0 || t >= gp->n_bufs)
		return NULL;
	if (numel)
		*numel = gp->numel[t];
	return gp->bufs[t];
}

int gp_share(gp_prog *dst, const char *dst_name, const gp_prog *src,
	     const char *src_name, fl_error *err)
{
	int t = fl_graph_find_tensor(dst->program->graph, dst_name);
	int64_t n;
	float *buf = gp_tensor(src, src_name, &n);

	if (t < 0 || t >= dst->n_bufs || !buf || dst->numel[t] != n) {
		fl_error_set(err, "cannot share tensor %s with %s: missing or "
			     "of another size", dst_name, src_name);
		return -1;
	}
	if (!dst->borrowed[t])
		free(dst->bufs[t]);
	dst->bufs[t] = buf;
	dst->borrowed[t] = 1;
	return 0;
}

void gp_close(gp_prog *gp)
{
	if (gp->bufs)
		for (int t = 0; t < gp->n_bufs; t++)
			if (!gp->borrowed || !gp->borrowed[t])
				free(gp->bufs[t]);
	free(gp->bufs);
	free(gp->numel);
	free(gp->borrowed);
	if (gp->dl)
		dlclose(gp->dl);
	fl_build_remove(&gp->build, &gp->run_opts);
	fl_engine_close(gp->session);
	memset(gp, 0, sizeof *gp);
}

double gp_rel_error(const float *got, const float *want, int64_t n)
{
	double diff = 0, scale = 0;

	for (int64_t i = 0; i < n; i++) {
		double d = fabs((double)got[i] - (double)want[i]);

		if (isfinite(want[i]) && !isfinite(got[i]))
			return INFINITY;
		if (d > diff)
			diff = d;
		if (fabs((double)want[i]) > scale)
			scale = fabs((double)want[i]);
	}
	return scale > 0 ? diff / scale : diff;
}
