/* The CUDA target (--target cuda): the generated CUDA of every sample
 * under every strategy compiles with nvcc (when nvcc exists: this machine
 * and the ones that test the project have no GPU, so compiling is how
 * codegen errors are caught); the option and its errors; --emit writes a
 * .cu unit; --run without a device runs the CPU backend and says so; the
 * device probe answers; the runner compiles .cu units with nvcc, and a
 * unit that exports the device entry points of target.h is timed by
 * them (a C stand-in plays the GPU unit, so this runs without one).
 *
 * Compiling costs: nvcc spends about 1.5 s per call before it reads a line
 * of ours (the CUDA headers, the host compiler), so the every-sample test
 * makes three calls: the distinct units go into batch files, each unit in
 * its own namespace with its fl_ names made unique (the table and entry
 * points of target.h are extern "C"), compiled with -c (object only) and
 * every optimiser off; the first batch compiles while the second half of
 * the samples is generated, the other two side by side after.  A batch that fails is compiled again unit
 * by unit, so that the error names one (sample, strategy) and a mistake
 * in the batching cannot hide or invent one. */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <isl/ctx.h>

#include "clock.h"
#include "codegen.h"
#include "engine.h"
#include "interleave.h"
#include "program_util.h"
#include "runner.h"
#include "strbuf.h"
#include "test_util.h"
#include "view_fixture.h"

#define MAX_UNITS 256
#define BATCH_TIMEOUT_S 900

/* The compile checks of generated .cu text run nvcc in the plain pass
 * only.  nvcc is the same program under both passes and the plain pass
 * compiles every sample's units (the sanitizer pass's two among them);
 * the sanitizer pass still generates and writes every unit it checks, so
 * the code that prints CUDA runs under ASan.  The runner's own nvcc
 * builds (--run --target cuda) stay in both passes: that is our code. */
#define NVCC_CHECKS (!T_SANITIZED)

/* Writes text to path; fails the test when it cannot. */
static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		fail_msg("cannot write %s", path);
}

/* nvcc's path into path; skips the test when there is none. */
static void need_nvcc(char *path, size_t n)
{
	if (!fl_nvcc_find(path, n))
		skip();
}

/* ---- every sample under every strategy -------------------------------- */

typedef struct cuda_unit {
	char label[96];		/* "<sample>-<strategy>" */
	char *text;		/* the .cu unit (owned) */
} cuda_unit;

typedef struct unit_set {
	cuda_unit u[MAX_UNITS];
	int n, generated;
} unit_set;

static bool generated_cuda(const fl_session *s)
{
	const fl_event_log *log = fl_engine_events(s);

	for (int i = 0; i < fl_event_log_count(log); i++) {
		const fl_event *e = fl_event_log_get(log, i);

		if (e->kind == FL_EV_GENERATED && strstr(e->reason,
							 "lines of CUDA"))
			return true;
	}
	return false;
}

/* The CUDA unit of sample g under strategy s, through the codegen pass;
 * kept in set unless an identical one is there already. */
static void add_unit(unit_set *set, const fl_graph *g, const char *sample,
		     fl_strategy s)
{
	fl_session *ses = t_cuda_codegen(g, s, sample);
	const char *src = fl_engine_source(ses);

	if (!generated_cuda(ses))
		fail_msg("%s/%s: no \"generated\" event says \"lines of CUDA\"",
			 sample, fl_strategy_name(s));
	set->generated++;
	for (int i = 0; i < set->n; i++)
		if (!strcmp(set->u[i].text, src)) {
			fl_engine_close(ses);
			return;
		}
	assert_true(set->n < MAX_UNITS);
	snprintf(set->u[set->n].label, sizeof set->u[0].label, "%s-%s",
		 sample, fl_strategy_name(s));
	set->u[set->n].text = strdup(src);
	assert_non_null(set->u[set->n].text);
	set->n++;
	fl_engine_close(ses);
}

/* The sanitizer pass takes two small samples; the plain pass all. */
static bool sample_wanted(const char *name)
{
	return !T_SANITIZED || !strcmp(name, "apollo_fig3") ||
	       !strcmp(name, "layernorm");
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The names of the samples to compile, sorted; their count. */
static int sample_list(char names[][64], int max)
{
	DIR *d = opendir(t_samples_dir());
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (len < 6 || len >= 64 || strcmp(de->d_name + len - 5, ".json"))
			continue;
		assert_true(n < max);
		snprintf(names[n], 64, "%.*s", (int)len - 5, de->d_name);
		if (sample_wanted(names[n]))
			n++;
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof names[0], cmp_name);
	return n;
}

/* Copies text into b with every identifier that starts with "fl_" made
 * "fl_u<k>_..." and every #include line left empty (the batch file has
 * them once, at its top, outside the namespaces). */
static void rename_unit(fl_strbuf *b, const char *text, int k)
{
	bool line_start = true;

	for (const char *p = text; *p; p++) {
		if (line_start && !strncmp(p, "#include", 8)) {
			p += strcspn(p, "\n");
			fl_strbuf_printf(b, "\n");
			if (!*p)
				break;
			continue;
		}
		line_start = *p == '\n';
		if (!strncmp(p, "fl_", 3) && (p == text ||
		    !(p[-1] == '_' || (p[-1] >= '0' && p[-1] <= '9') ||
		      (p[-1] >= 'a' && p[-1] <= 'z') ||
		      (p[-1] >= 'A' && p[-1] <= 'Z')))) {
			fl_strbuf_printf(b, "fl_u%d_", k);
			p += 2;
			continue;
		}
		fl_strbuf_printf(b, "%c", *p);
	}
}

/* Units from, from + step, ... below to: what one batch file holds. */
typedef struct unit_range {
	int from, to, step;
} unit_range;

/* The #include lines of the units of r, once each. */
static void batch_includes(fl_strbuf *b, const unit_set *set, unit_range r)
{
	char seen[64][160];
	int n_seen = 0;

	for (int k = r.from; k < r.to; k += r.step)
		for (const char *p = set->u[k].text; p && *p; ) {
			size_t len = strcspn(p, "\n");
			bool dup = false;

			if (!strncmp(p, "#include", 8) && len < sizeof seen[0]) {
				for (int i = 0; i < n_seen && !dup; i++)
					dup = strlen(seen[i]) == len &&
					      !strncmp(seen[i], p, len);
				if (!dup && n_seen < 64) {
					snprintf(seen[n_seen++], sizeof seen[0],
						 "%.*s", (int)len, p);
					fl_strbuf_printf(b, "%.*s\n", (int)len, p);
				}
			}
			p += len + (p[len] == '\n');
		}
}

/* dir/b<i>.cu: the units of r, each in its own namespace, its lines
 * numbered as in the unit under its label. */
static void write_batch(const unit_set *set, unit_range r, const char *dir,
			int i)
{
	fl_strbuf b = {0};
	char path[600], *text;

	batch_includes(&b, set, r);
	for (int k = r.from; k < r.to; k += r.step) {
		fl_strbuf_printf(&b, "namespace fl_unit_%d {\n#line 1 \"%s.cu\"\n",
				 k, set->u[k].label);
		rename_unit(&b, set->u[k].text, k);
		fl_strbuf_printf(&b, "\n}\n");
	}
	text = fl_strbuf_take(&b);
	assert_non_null(text);
	snprintf(path, sizeof path, "%s/b%d.cu", dir, i);
	write_file(path, text);
	free(text);
}

/* Starts nvcc on dir/b<i>.cu in the background: its output goes to
 * b<i>.log, then its exit status to b<i>.rc. */
static void start_batch(const char *nvcc, const char *dir, int i)
{
	char cmd[1600];

	snprintf(cmd, sizeof cmd, "cd '%s' && { '%s' " T_NVCC_CHECK " -o b%d.o "
		 "b%d.cu > b%d.log 2>&1; echo $? > b%d.tmp; mv b%d.tmp b%d.rc; "
		 "} < /dev/null > /dev/null 2>&1 &", dir, nvcc, i, i, i, i, i,
		 i);
	assert_int_equal(t_run(cmd, NULL), 0);
}

/* Waits for batches 0..n-1; 0 when all compiled, else their logs in
 * *out. */
static int wait_batches(const char *dir, int n, char **out)
{
	double t0 = fl_now();
	char cmd[700];

	for (int i = 0; i < n; ) {
		char path[600];
		struct timespec nap = {0, 50000000};

		snprintf(path, sizeof path, "%s/b%d.rc", dir, i);
		if (access(path, R_OK) == 0) {
			i++;
			continue;
		}
		if (fl_now() - t0 > BATCH_TIMEOUT_S)
			fail_msg("nvcc did not finish batch %d within %d s", i,
				 BATCH_TIMEOUT_S);
		nanosleep(&nap, NULL);
	}
	snprintf(cmd, sizeof cmd, "cd '%s' && cat b*.log && test \"$(cat b*.rc "
		 "| sort -u)\" = 0", dir);
	return t_run(cmd, out);
}

/* Compiles every unit alone; fails the test with the first unit's
 * errors, or returns when each compiles (the batching, not the
 * generator, was at fault). */
static void compile_units_alone(const unit_set *set, const char *nvcc,
				const char *dir)
{
	for (int k = 0; k < set->n; k++) {
		char path[700], cmd[1400], *out = NULL;

		snprintf(path, sizeof path, "%s/%s.cu", dir, set->u[k].label);
		write_file(path, set->u[k].text);
		snprintf(cmd, sizeof cmd, "cd %s && '%s' " T_NVCC_CHECK " -o u.o "
			 "'%s.cu'", dir, nvcc, set->u[k].label);
		if (t_run(cmd, &out) != 0)
			fail_msg("the CUDA of %s does not compile:\n%.4000s",
				 set->u[k].label, out);
		free(out);
	}
}

/* Every sample's units under every strategy, made by the codegen pass;
 * nvcc starts on the first half of the samples' units while the second
 * half is generated, then on the rest in two batches side by side. */
static void test_cuda_every_sample_compiles(void **state)
{
	unit_set *set = calloc(1, sizeof *set);
	char nvcc[512], dir[512], (*names)[64] = calloc(128, 64), *out = NULL;
	double t0 = fl_now(), t_gen;
	int n, half, first = 0;

	(void)state;
	assert_non_null(set);
	assert_non_null(names);
	if (NVCC_CHECKS)
		need_nvcc(nvcc, sizeof nvcc);
	n = sample_list(names, 128);
	assert_true(n > 0);
	half = (n + 1) / 2;
	t_make_dir(dir, sizeof dir);
	for (int i = 0; i < n; i++) {
		fl_graph *g = t_load_sample(names[i]);

		for (int s = 0; s < FL_STRATEGY_COUNT; s++)
			add_unit(set, g, names[i], (fl_strategy)s);
		fl_graph_free(g);
		if (i != half - 1)
			continue;
		first = set->n;
		write_batch(set, (unit_range){0, first, 1}, dir, 0);
		if (NVCC_CHECKS)
			start_batch(nvcc, dir, 0);
	}
	t_gen = fl_now() - t0;
	for (int i = 1; i <= 2; i++) {
		write_batch(set, (unit_range){first + i - 1, set->n, 2}, dir, i);
		if (NVCC_CHECKS)
			start_batch(nvcc, dir, i);
	}
	if (NVCC_CHECKS && wait_batches(dir, 3, &out) != 0) {
		print_message("batched nvcc failed; compiling unit by unit:\n"
			      "%.2000s\n", out);
		compile_units_alone(set, nvcc, dir);
	}
	print_message("CUDA units: %d generated, %d distinct, of %d samples; "
		      "codegen %.1f s, %s after %.1f s\n", set->generated,
		      set->n, n, t_gen, NVCC_CHECKS ? "all compiled by nvcc"
		      : "written (nvcc: the plain pass)", fl_now() - t0);
	free(out);
	t_remove_dir(dir);
	for (int k = 0; k < set->n; k++)
		free(set->u[k].text);
	free(set);
	free(names);
}

/* ---- the command line ------------------------------------------------- */

static void test_target_option_errors(void **state)
{
	char args[600], *out;

	(void)state;
	snprintf(args, sizeof args, "--batch --run --target gpu %s/"
		 "apollo_fig3.json", t_samples_dir());
	assert_int_equal(t_fuselab(args, &out), 2);
	t_assert_contains(out, "--target: expected cpu or cuda, got \"gpu\"");
	free(out);
	snprintf(args, sizeof args, "--batch --run --target CPU %s/"
		 "apollo_fig3.json", t_samples_dir());
	assert_int_equal(t_fuselab(args, &out), 2);
	t_assert_contains(out, "--target: expected cpu or cuda");
	free(out);
	assert_int_equal(t_fuselab("--batch --target", &out), 2);
	t_assert_contains(out, "--target");
	free(out);
	assert_int_equal(t_fuselab("--help", &out), 0);
	t_assert_contains(out, "--target T");
	free(out);
}

/* --emit with --target cuda writes NAME-STRATEGY.cu, a CUDA unit that
 * nvcc compiles. */
static void test_emit_cuda_unit(void **state)
{
	char dir[512], args[1200], path[600], nvcc[512], *out, *cu;

	(void)state;
	t_make_dir(dir, sizeof dir);
	snprintf(args, sizeof args, "--batch %s/apollo_fig3.json --emit %s "
		 "--target cuda --strategy apollo", t_samples_dir(), dir);
	if (t_fuselab(args, &out) != 0)
		fail_msg("fuselab %s:\n%s", args, out);
	t_assert_contains(out, "apollo_fig3-apollo.cu");
	free(out);
	snprintf(path, sizeof path, "%s/apollo_fig3-apollo.cu", dir);
	cu = t_read_file(path, NULL);
	t_assert_contains(cu, "__global__");
	t_assert_contains(cu, "fl_kernels");
	t_assert_contains(cu, "fl_device_seconds");
	free(cu);
	if (NVCC_CHECKS && fl_nvcc_find(nvcc, sizeof nvcc)) {
		snprintf(args, sizeof args, "cd %s && '%s' " T_NVCC_CHECK " -o "
			 "u.o apollo_fig3-apollo.cu", dir, nvcc);
		if (t_run(args, &out) != 0)
			fail_msg("the emitted unit does not compile:\n%s", out);
		free(out);
	}
	t_remove_dir(dir);
}

/* Without a CUDA device (forced by FUSELAB_NO_CUDA), --run --target cuda
 * compiles the CUDA when nvcc exists, then runs and verifies the CPU
 * backend, and says so. */
static void test_run_cuda_without_device(void **state)
{
	char args[1200], *out;
	char nvcc[512];

	(void)state;
	snprintf(args, sizeof args, "env FUSELAB_NO_CUDA=1 '%s' --batch --run "
		 "--target cuda --strategy apollo --repeat 1 --warmup 0 "
		 "%s/apollo_fig3.json", t_fuselab_bin(), t_samples_dir());
	if (t_run(args, &out) != 0)
		fail_msg("%s:\n%s", args, out);
	t_assert_contains(out, "target: cuda: no CUDA device: CPU backend only");
	t_assert_contains(out, fl_nvcc_find(nvcc, sizeof nvcc)
			       ? "the CUDA compiled with nvcc"
			       : "the CUDA was not compiled");
	t_assert_contains(out, "verified yes");
	free(out);
}

/* Under the CPU target nothing about CUDA is said. */
static void test_run_cpu_says_nothing_of_cuda(void **state)
{
	char *out = t_fuselab_ok("--run --strategy unfused --repeat 1 "
				 "--warmup 0", "apollo_fig3");

	(void)state;
	assert_null(strstr(out, "target: cuda"));
	t_assert_contains(out, "verified yes");
	free(out);
}

/* The timings view says which GPU ran, or that the CPU stood in; under
 * the CPU target it says nothing of CUDA. */
static void test_timings_view_names_the_target(void **state)
{
	void *st = fl_view_timings.create();
	fl_ladder_step step;
	fl_ladder l;
	t_view f;
	char *text;

	(void)state;
	memset(&l, 0, sizeof l);
	memset(&step, 0, sizeof step);
	step.strategy = FL_STRATEGY_UNFUSED;
	step.ran = true;
	step.status = FL_RUN_OK;
	step.verified = true;
	l.n = 1;
	l.steps = &step;
	t_view_open(&f, "apollo_fig3", 0);
	f.ctx.ladder = &l;
	text = t_view_render(&f, &fl_view_timings, st, 120, 20);
	assert_null(strstr(text, "target cuda"));
	free(text);
	snprintf(step.note, sizeof step.note, "%s (the CUDA compiled with "
		 "nvcc for sm_90 in 1.0 s)", FL_NO_CUDA_DEVICE);
	text = t_view_render(&f, &fl_view_timings, st, 120, 20);
	t_assert_contains(text, "target cuda: no CUDA device: CPU backend only");
	free(text);
	step.note[0] = '\0';
	snprintf(step.device, sizeof step.device, "NVIDIA H100 80GB HBM3");
	text = t_view_render(&f, &fl_view_timings, st, 120, 20);
	t_assert_contains(text, "target cuda: NVIDIA H100 80GB HBM3, kernel "
			  "times from CUDA events");
	free(text);
	fl_view_timings.destroy(st);
	t_view_close(&f);
}

/* ---- the engine and the runner ---------------------------------------- */

/* The probe answers, the same each time, with a device's name or the
 * reason there is none. */
static void test_cuda_probe_answers(void **state)
{
	char a[128] = "", b[128] = "";
	bool first, second;

	(void)state;
	first = fl_cuda_device_present(a, sizeof a);
	second = fl_cuda_device_present(b, sizeof b);
	assert_int_equal(first, second);
	assert_true(a[0] != '\0');
	assert_string_equal(a, b);
	assert_false(fl_cuda_device_present(NULL, 0) != first);
}

/* Layer 2's capacity: the L2 on the CPU, a block's shared memory (48 KiB)
 * for the CUDA target. */
static void test_cuda_stitch_capacity(void **state)
{
	fl_graph *g = t_load_sample("layernorm");
	bool seen[2] = {false, false};

	(void)state;
	for (int t = 0; t < 2; t++) {
		fl_engine_opts o;
		fl_error err = {""};
		fl_session *ses;
		const fl_event_log *log;

		fl_engine_opts_default(&o);
		o.strategy = FL_STRATEGY_APOLLO_L2;
		o.stop_after = FL_PASS_LAYER2;
		o.run.target = t ? FL_TARGET_CUDA : FL_TARGET_CPU;
		ses = fl_engine_open(g, &o, &err);
		if (!ses || fl_engine_run(ses, &err) < 0)
			fail_msg("layernorm: %s", err.msg);
		log = fl_engine_events(ses);
		for (int i = 0; i < fl_event_log_count(log); i++) {
			const fl_event *e = fl_event_log_get(log, i);

			if (e->kind == FL_EV_PLACED && strstr(e->reason,
							       "capacity "))
				seen[t] |= (strstr(e->reason, "capacity 48 KiB")
					    != NULL) == (t == 1);
		}
		fl_engine_close(ses);
	}
	assert_true(seen[0]);
	assert_true(seen[1]);
	fl_graph_free(g);
}

/* Layer 3's decisions on sample name under target t: their reasons, one
 * a line (malloc'd). */
static char *layer3_reasons(const fl_graph *g, fl_target t)
{
	fl_engine_opts o;
	fl_error err = {""};
	fl_session *ses;
	const fl_event_log *log;
	fl_strbuf b = {0};

	fl_engine_opts_default(&o);
	o.strategy = FL_STRATEGY_APOLLO;
	o.stop_after = FL_PASS_LAYER3;
	o.run.target = t;
	ses = fl_engine_open(g, &o, &err);
	if (!ses || fl_engine_run(ses, &err) < 0)
		fail_msg("%s: %s", g->name, err.msg);
	log = fl_engine_events(ses);
	for (int i = 0; i < fl_event_log_count(log); i++) {
		const fl_event *e = fl_event_log_get(log, i);

		if (e->pass == FL_PASS_LAYER3)
			fl_strbuf_printf(&b, "%s\n", e->reason);
	}
	fl_engine_close(ses);
	return fl_strbuf_take(&b);
}

/* Layer 3 costs kernels with the GPU's roofline under the CUDA target:
 * the same branches, other numbers. */
static void test_cuda_layer3_costs_on_the_gpu(void **state)
{
	fl_graph *g = t_load_sample("inception_block");
	char *cpu = layer3_reasons(g, FL_TARGET_CPU);
	char *gpu = layer3_reasons(g, FL_TARGET_CUDA);

	(void)state;
	t_assert_contains(cpu, "costs ");
	t_assert_contains(gpu, "costs ");
	if (!strcmp(cpu, gpu))
		fail_msg("layer 3 decided with the same numbers under both "
			 "targets:\n%s", gpu);
	free(cpu);
	free(gpu);
	fl_graph_free(g);
}

/* A small CUDA unit with the ABI of target.h, for the runner's nvcc. */
static const char tiny_cu[] =
	"#include <cuda_runtime.h>\n"
	"__global__ void fl_scale(float *x, int n)\n"
	"{\n"
	"\tint i = blockIdx.x * blockDim.x + threadIdx.x;\n"
	"\tif (i < n) x[i] *= 2.0f;\n"
	"}\n"
	"static void fl_k0(float *const *bufs) { (void)bufs; }\n"
	"extern \"C\" const int fl_n_kernels = 1;\n"
	"extern \"C\" void (*const fl_kernels[])(float *const *) = {fl_k0};\n"
	"extern \"C\" int fl_device_resident = 0;\n"
	"extern \"C\" double fl_device_seconds = 0;\n"
	"extern \"C\" const char *fl_device_name(void) { return \"\"; }\n";

/* The CUDA target compiles gen.cu with nvcc, for sm_90 without a GPU;
 * no nvcc is FL_RUN_NO_COMPILER saying so. */
static void test_cuda_build_uses_nvcc(void **state)
{
	char nvcc[512], path[700], *saved;
	fl_error err = {""};
	fl_run_opts o;
	fl_build b;
	struct stat sb;

	(void)state;
	fl_run_opts_default(&o);
	o.target = FL_TARGET_CUDA;
	saved = getenv("NVCC") ? strdup(getenv("NVCC")) : NULL;
	setenv("NVCC", "/nonexistent/nvcc", 1);
	assert_int_equal(fl_build_source(tiny_cu, &o, &b, &err), 0);
	assert_int_equal(b.status, FL_RUN_NO_COMPILER);
	t_assert_contains(b.message, "nvcc");
	fl_build_remove(&b, &o);
	if (saved) {
		setenv("NVCC", saved, 1);
		free(saved);
	} else {
		unsetenv("NVCC");
	}
	need_nvcc(nvcc, sizeof nvcc);
	o.keep = true;
	assert_int_equal(fl_build_source(tiny_cu, &o, &b, &err), 0);
	if (b.status != FL_RUN_OK)
		fail_msg("%s", b.message);
	t_assert_contains(b.compiler, "nvcc");
	t_assert_contains(b.flags, fl_cuda_device_present(NULL, 0)
				   ? "-arch=native" : "-arch=sm_90");
	assert_int_equal(b.target, FL_TARGET_CUDA);
	snprintf(path, sizeof path, "%s/gen.cu", b.workdir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(stat(b.so_path, &sb), 0);
	o.keep = false;
	fl_build_remove(&b, &o);
}

/* The C unit of p posing as a CUDA unit (target.h): its table wrapped so
 * that each call leaves fl_device_seconds at 0.125 s, or 0.25 s when the
 * caller set fl_device_resident.  malloc'd. */
static char *fake_device_unit(const fl_program *p)
{
	fl_error err = {""};
	char *c = fl_codegen_c(p, &err);
	fl_strbuf b = {0};

	if (!c)
		fail_msg("%s", err.msg);
	fl_strbuf_printf(&b, "#define fl_kernels fl_c_kernels\n"
			 "#define fl_n_kernels fl_c_n_kernels\n%s"
			 "#undef fl_kernels\n#undef fl_n_kernels\n", c);
	fl_strbuf_printf(&b, "int fl_device_resident;\n"
			 "double fl_device_seconds;\n"
			 "const char *fl_device_name(void) { return \"fake GPU\"; }\n"
			 "static void fake_call(int k, float *const *b)\n{\n"
			 "\tfl_c_kernels[k](b);\n"
			 "\tfl_device_seconds = fl_device_resident ? 0.25 : 0.125;\n"
			 "}\n");
	for (int k = 0; k < p->n_kernels; k++)
		fl_strbuf_printf(&b, "static void fake%d(float *const *b) "
				 "{ fake_call(%d, b); }\n", k, k);
	fl_strbuf_printf(&b, "const int fl_n_kernels = %d;\n"
			 "void (*const fl_kernels[])(float *const *) = {",
			 p->n_kernels);
	for (int k = 0; k < p->n_kernels; k++)
		fl_strbuf_printf(&b, "%sfake%d", k ? ", " : "", k);
	fl_strbuf_printf(&b, "};\n");
	free(c);
	return fl_strbuf_take(&b);
}

/* A unit with the device entry points is verified as any, then timed on
 * its device copies (fl_device_resident set) by the device time it
 * reports, not the wall clock: in the runner's child and in the ladder's
 * interleaved one; its GPU's name is in the result. */
static void test_device_seconds_time_kernels(void **state)
{
	isl_ctx *ctx = isl_ctx_alloc();
	fl_graph *g = t_load_q("{'format':'fuselab-graph/1','name':'t',"
			       "'tensors':{'x':{'shape':[64,32],'role':'input'},"
			       "'y':{'shape':[64,32],'role':'output'}},'ops':["
			       "{'name':'e','op':'exp','in':['x'],'out':'t1'},"
			       "{'name':'n','op':'neg','in':['t1'],'out':'y'}]}");
	fl_error err = {""};
	fl_values *ref = fl_interp_run(g, NULL, &err);
	fl_program *p = t_unfused_program(ctx, g);
	char *src = fake_device_unit(p);
	fl_timed_program tp;
	fl_run_result r;
	fl_timing t;
	fl_run_opts o;
	fl_build b;

	(void)state;
	assert_non_null(ref);
	assert_int_equal(p->n_kernels, 2);
	fl_run_opts_default(&o);
	o.warmup = 1;
	o.repeat = 3;
	assert_int_equal(fl_build_source(src, &o, &b, &err), 0);
	if (b.status != FL_RUN_OK)
		fail_msg("%s", b.message);
	assert_int_equal(fl_run_build(&b, p, ref, &o, &r, &err), 0);
	if (!r.verified)
		fail_msg("%s", r.message);
	assert_string_equal(r.device, "fake GPU");
	for (int k = 0; k < 2; k++)
		assert_true(r.kernels[k].seconds == 0.25);
	assert_true(r.total_seconds == 0.5);
	fl_run_result_free(&r);
	memset(&tp, 0, sizeof tp);
	tp.p = p;
	tp.so_path = b.so_path;
	tp.workdir = b.workdir;
	assert_int_equal(fl_time_interleaved(&tp, 1, &o, 42, &t, &err), 0);
	if (t.status != FL_RUN_OK)
		fail_msg("%s", t.message);
	assert_true(t.total[0].median == 0.5);
	assert_true(t.kernels[0][1].round.median == 0.25);
	fl_timing_free(&t);
	fl_build_remove(&b, &o);
	free(src);
	fl_program_free(p);
	fl_values_free(ref);
	fl_graph_free(g);
	isl_ctx_free(ctx);
}

/* A hand-written CUDA unit with the ABI of target.h for the two-op graph
 * of test_device_seconds_time_kernels (exp into t1, neg into y; tensor
 * indices tx, tt, ty, n elements each).  malloc'd. */
static char *device_unit(int tx, int tt, int ty, int n)
{
	fl_strbuf b = {0};

	fl_strbuf_printf(&b,
		"#include <cstdio>\n#include <cstdlib>\n"
		"#include <cuda_runtime.h>\n"
		"#define N %d\n"
		"static float *dev[3];\n"
		"static cudaEvent_t ev0, ev1;\n"
		"extern \"C\" int fl_device_resident = 0;\n"
		"extern \"C\" double fl_device_seconds = 0;\n"
		"static void ok(cudaError_t e)\n{\n"
		"\tif (e != cudaSuccess) {\n"
		"\t\tfprintf(stderr, \"%%s\\n\", cudaGetErrorString(e));\n"
		"\t\tabort();\n\t}\n}\n"
		"__global__ void k_exp(const float *x, float *y)\n{\n"
		"\tint i = blockIdx.x * 256 + threadIdx.x;\n"
		"\tif (i < N) y[i] = expf(x[i]);\n}\n"
		"__global__ void k_neg(const float *x, float *y)\n{\n"
		"\tint i = blockIdx.x * 256 + threadIdx.x;\n"
		"\tif (i < N) y[i] = -x[i];\n}\n"
		"static void call(int k, float *const *bufs, int in, int out)\n{\n"
		"\tfloat ms = 0;\n"
		"\tif (!dev[0]) {\n"
		"\t\tfor (int i = 0; i < 3; i++)\n"
		"\t\t\tok(cudaMalloc(&dev[i], N * sizeof(float)));\n"
		"\t\tok(cudaEventCreate(&ev0));\n"
		"\t\tok(cudaEventCreate(&ev1));\n\t}\n"
		"\tif (!fl_device_resident)\n"
		"\t\tok(cudaMemcpy(dev[in], bufs[in], N * sizeof(float),\n"
		"\t\t\t\tcudaMemcpyHostToDevice));\n"
		"\tok(cudaEventRecord(ev0));\n"
		"\tif (k == 0)\n"
		"\t\tk_exp<<<(N + 255) / 256, 256>>>(dev[in], dev[out]);\n"
		"\telse\n"
		"\t\tk_neg<<<(N + 255) / 256, 256>>>(dev[in], dev[out]);\n"
		"\tok(cudaGetLastError());\n"
		"\tok(cudaEventRecord(ev1));\n"
		"\tok(cudaEventSynchronize(ev1));\n"
		"\tok(cudaEventElapsedTime(&ms, ev0, ev1));\n"
		"\tfl_device_seconds = ms * 1e-3;\n"
		"\tif (!fl_device_resident)\n"
		"\t\tok(cudaMemcpy(bufs[out], dev[out], N * sizeof(float),\n"
		"\t\t\t\tcudaMemcpyDeviceToHost));\n}\n"
		"static void fl_k0(float *const *b) { call(0, b, %d, %d); }\n"
		"static void fl_k1(float *const *b) { call(1, b, %d, %d); }\n"
		"extern \"C\" const int fl_n_kernels = 2;\n"
		"extern \"C\" void (*const fl_kernels[])(float *const *) =\n"
		"\t{fl_k0, fl_k1};\n"
		"extern \"C\" const char *fl_device_name(void)\n{\n"
		"\tstatic cudaDeviceProp prop;\n"
		"\tif (!prop.name[0] &&\n"
		"\t    cudaGetDeviceProperties(&prop, 0) != cudaSuccess)\n"
		"\t\treturn \"\";\n"
		"\treturn prop.name;\n}\n", n, tx, tt, tt, ty);
	return fl_strbuf_take(&b);
}

static int tensor_named(const fl_graph *g, const char *name)
{
	for (int t = 0; t < g->n_tensors; t++)
		if (!strcmp(g->tensors[t].name, name))
			return t;
	fail_msg("no tensor %s", name);
	return -1;
}

/* On a machine with a GPU: a CUDA unit built by the runner (nvcc,
 * -arch=native) verifies in the test child, runs on the device (its name
 * in the result, the probe's), and each kernel's time is its CUDA-event
 * time; the ladder's timing child takes it too.  Skipped without a GPU
 * or nvcc. */
static void test_cuda_unit_runs_on_device(void **state)
{
	char nvcc[512], name[128];
	isl_ctx *ctx;
	fl_graph *g;
	fl_error err = {""};
	fl_values *ref;
	fl_program *p;
	char *src;
	fl_timed_program tp;
	fl_run_result r;
	fl_timing t;
	fl_run_opts o;
	fl_build b;

	(void)state;
	need_nvcc(nvcc, sizeof nvcc);
	if (!fl_cuda_device_present(name, sizeof name))
		skip();
	ctx = isl_ctx_alloc();
	g = t_load_q("{'format':'fuselab-graph/1','name':'t',"
		     "'tensors':{'x':{'shape':[64,32],'role':'input'},"
		     "'y':{'shape':[64,32],'role':'output'}},'ops':["
		     "{'name':'e','op':'exp','in':['x'],'out':'t1'},"
		     "{'name':'n','op':'neg','in':['t1'],'out':'y'}]}");
	ref = fl_interp_run(g, NULL, &err);
	assert_non_null(ref);
	p = t_unfused_program(ctx, g);
	assert_int_equal(g->n_tensors, 3);
	src = device_unit(tensor_named(g, "x"), tensor_named(g, "t1"),
			  tensor_named(g, "y"), 64 * 32);
	fl_run_opts_default(&o);
	o.target = FL_TARGET_CUDA;
	o.warmup = 1;
	o.repeat = 5;
	assert_int_equal(fl_build_source(src, &o, &b, &err), 0);
	if (b.status != FL_RUN_OK)
		fail_msg("%s", b.message);
	t_assert_contains(b.flags, "-arch=native");
	assert_int_equal(fl_run_build(&b, p, ref, &o, &r, &err), 0);
	if (!r.verified)
		fail_msg("%s: %s", fl_run_status_name(r.status), r.message);
	assert_string_equal(r.device, name);
	for (int k = 0; k < 2; k++)
		assert_true(r.kernels[k].seconds > 0 &&
			    r.kernels[k].seconds < 0.01);
	print_message("device %s: exp %.2f us, neg %.2f us (CUDA events)\n",
		      r.device, 1e6 * r.kernels[0].seconds,
		      1e6 * r.kernels[1].seconds);
	fl_run_result_free(&r);
	memset(&tp, 0, sizeof tp);
	tp.p = p;
	tp.so_path = b.so_path;
	tp.workdir = b.workdir;
	assert_int_equal(fl_time_interleaved(&tp, 1, &o, 42, &t, &err), 0);
	if (t.status != FL_RUN_OK)
		fail_msg("%s", t.message);
	assert_true(t.total[0].median > 0 && t.total[0].median < 0.02);
	fl_timing_free(&t);
	fl_build_remove(&b, &o);
	free(src);
	fl_program_free(p);
	fl_values_free(ref);
	fl_graph_free(g);
	isl_ctx_free(ctx);
}

/* The batching of the every-sample test itself: units that each define
 * the extern "C" table and entry points of target.h (and the same static
 * names) compile together in one batch, without the unit-by-unit
 * fallback.  The sanitizer pass writes the batches and leaves nvcc to
 * the plain pass (NVCC_CHECKS). */
static void test_cuda_units_batch_together(void **state)
{
	unit_set *set = calloc(1, sizeof *set);
	char nvcc[512], dir[512], *out = NULL;

	(void)state;
	assert_non_null(set);
	if (NVCC_CHECKS)
		need_nvcc(nvcc, sizeof nvcc);
	for (int k = 0; k < 4; k++) {
		snprintf(set->u[k].label, sizeof set->u[k].label, "stand-in-%d",
			 k);
		set->u[k].text = k % 2 ? device_unit(k % 3, (k + 1) % 3,
						      (k + 2) % 3, 64 + k)
				       : strdup(tiny_cu);
		assert_non_null(set->u[k].text);
		set->n++;
	}
	t_make_dir(dir, sizeof dir);
	for (int i = 0; i < 2; i++) {
		write_batch(set, (unit_range){i, set->n, 2}, dir, i);
		if (NVCC_CHECKS)
			start_batch(nvcc, dir, i);
	}
	if (NVCC_CHECKS && wait_batches(dir, 2, &out) != 0)
		fail_msg("the batches do not compile:\n%.4000s", out);
	free(out);
	t_remove_dir(dir);
	for (int k = 0; k < set->n; k++)
		free(set->u[k].text);
	free(set);
}

FL_SUITE(cuda,
	 cmocka_unit_test(test_target_option_errors),
	 cmocka_unit_test(test_cuda_probe_answers),
	 cmocka_unit_test(test_cuda_stitch_capacity),
	 cmocka_unit_test(test_cuda_layer3_costs_on_the_gpu),
	 cmocka_unit_test(test_cuda_build_uses_nvcc),
	 cmocka_unit_test(test_device_seconds_time_kernels),
	 cmocka_unit_test(test_cuda_unit_runs_on_device),
	 cmocka_unit_test(test_cuda_units_batch_together),
	 cmocka_unit_test(test_run_cpu_says_nothing_of_cuda),
	 cmocka_unit_test(test_timings_view_names_the_target),
	 cmocka_unit_test(test_emit_cuda_unit),
	 cmocka_unit_test(test_run_cuda_without_device),
	 cmocka_unit_test(test_cuda_every_sample_compiles));
