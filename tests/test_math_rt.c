/* The maths runtime (engine/backend/runtime/math_rt.c): fl_tanhf, fl_erff
 * and fl_expf as generated programs get them -- the embedded text,
 * compiled by the runner with its flags, called from a vectorisable loop
 * -- agree with libm's double tanh, erf and exp to 1e-6 relative over the
 * whole line, keep the special values (+-0, +-inf, NaN) and are what the
 * generated code of exp, tanh, erf, sigmoid and GELU calls. */
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen.h"
#include "codegen_impl.h"
#include "engine.h"
#include "loader.h"
#include "runner.h"
#include "test_util.h"
#include "value_range.h"

/* A loop as the kernels have it: both functions over an array. */
static const char sweep_text[] =
	"void fl_test_sweep(const float *x, float *t, float *e, float *p,\n"
	"                   long n)\n"
	"{\n"
	"  #pragma omp simd\n"
	"  for (long i = 0; i < n; i++) {\n"
	"    t[i] = fl_tanhf(x[i]);\n"
	"    e[i] = fl_erff(x[i]);\n"
	"    p[i] = fl_expf(x[i]);\n"
	"  }\n"
	"}\n"
	"void fl_test_exp_variants(const float *x, float *nonpos,\n"
	"                          float *in_range, long n)\n"
	"{\n"
	"  #pragma omp simd\n"
	"  for (long i = 0; i < n; i++) {\n"
	"    nonpos[i] = fl_expf_nonpos(x[i]);\n"
	"    in_range[i] = fl_expf_in_range(x[i]);\n"
	"  }\n"
	"}\n"
	"void fl_test_hidden(const float *x, float *t, float *e, float *p,\n"
	"                    float *np, float *sm, long n)\n"
	"{\n"
	"  const fl_bounds fl_b = fl_bounds_hidden();\n"
	"  #pragma omp simd\n"
	"  for (long i = 0; i < n; i++) {\n"
	"    t[i] = fl_tanhf_b(x[i], fl_b);\n"
	"    e[i] = fl_erff_b(x[i], fl_b);\n"
	"    p[i] = fl_expf_b(x[i], fl_b);\n"
	"    np[i] = fl_expf_nonpos_b(x[i], fl_b);\n"
	"    sm[i] = fl_expf_small(x[i]);\n"
	"  }\n"
	"}\n"
	"void fl_test_stream(float *dst, const float *src, long n)\n"
	"{\n"
	"  float stage[16] __attribute__((aligned(64)));\n"
	"  for (long i = 0; i + 16 <= n; i += 16) {\n"
	"    for (int k = 0; k < 16; k++)\n"
	"      stage[k] = src[i + k];\n"
	"    fl_stream16(dst + i, stage);\n"
	"  }\n"
	"  fl_stream_fence();\n"
	"}\n"
	"void fl_test_exp_bounds(float *lo, float *hi)\n"
	"{\n"
	"  *lo = FL_EXPF_LO;\n"
	"  *hi = FL_EXPF_HI;\n"
	"}\n";

typedef void (*variants_fn)(const float *, float *, float *, long);
typedef void (*bounds_fn)(float *, float *);
typedef void (*hidden_fn)(const float *, float *, float *, float *, float *,
			  float *, long);

typedef void (*sweep_fn)(const float *, float *, float *, float *, long);
typedef void (*stream_fn)(float *, const float *, long);

typedef struct built {
	fl_run_opts opts;
	fl_build build;
	void *dl;
	sweep_fn sweep;
	variants_fn variants;
	bounds_fn bounds;
	hidden_fn hidden;
	stream_fn stream;
} built;

static void build_sweep(built *b)
{
	size_t n = strlen(fl_math_rt_text) + sizeof sweep_text;
	char *src = malloc(n);
	fl_error err = {""};

	assert_non_null(src);
	snprintf(src, n, "%s%s", fl_math_rt_text, sweep_text);
	fl_run_opts_default(&b->opts);
	if (fl_build_source(src, &b->opts, &b->build, &err) < 0)
		fail_msg("build: %s", err.msg);
	free(src);
	if (b->build.status != FL_RUN_OK)
		fail_msg("build: %s", b->build.message);
	assert_int_equal(b->build.n_warnings, 0);
	b->dl = dlopen(b->build.so_path, RTLD_NOW | RTLD_LOCAL);
	if (!b->dl)
		fail_msg("dlopen: %s", dlerror());
	*(void **)&b->sweep = dlsym(b->dl, "fl_test_sweep");
	*(void **)&b->variants = dlsym(b->dl, "fl_test_exp_variants");
	*(void **)&b->bounds = dlsym(b->dl, "fl_test_exp_bounds");
	*(void **)&b->hidden = dlsym(b->dl, "fl_test_hidden");
	*(void **)&b->stream = dlsym(b->dl, "fl_test_stream");
	assert_true(b->sweep && b->variants && b->bounds && b->hidden &&
		    b->stream);
}

static void unbuild(built *b)
{
	dlclose(b->dl);
	fl_build_remove(&b->build, &b->opts);
}

/* Relative error of got against the double reference, measured against
 * the smallest normal float at most (a denormal has fewer bits). */
static double rel_err(float got, double want)
{
	double d = fabs((double)got - want);

	return d / fmax(fabs(want), FLT_MIN);
}

/* The worst relative error of one function over the sweep. */
typedef struct worst {
	const char *name;
	double err;
	float at;
} worst;

static void note_err(worst *w, float x, double err)
{
	if (err > w->err) {
		w->err = err;
		w->at = x;
	}
}

static void assert_within(const worst *w, double bound)
{
	if (w->err > bound)
		fail_msg("%s off by %.3g relative at %.9g", w->name, w->err,
			 (double)w->at);
}

/* Every 1e-4 over [-12, 12], every 1e-3 over [-104, 90] (exp's whole
 * range) and powers of two down to the denormals: no value off by more
 * than 1e-6 relative (the fits' own errors are under 4e-7 in float; a
 * wrong coefficient or a lost clamp is off by far more); exp below the
 * smallest normal float is 0. */
static void test_math_rt_accurate_everywhere(void **state)
{
	enum { N_LIN = 240001, N_WIDE = 194001, N_POW = 2 * 140 };
	long n = N_LIN + N_WIDE + N_POW;
	float *x = malloc((size_t)n * sizeof *x);
	float *t = malloc((size_t)n * sizeof *t);
	float *e = malloc((size_t)n * sizeof *e);
	float *p = malloc((size_t)n * sizeof *p);
	worst wt = {"fl_tanhf", 0, 0}, we = {"fl_erff", 0, 0};
	worst wp = {"fl_expf", 0, 0};
	built b;

	(void)state;
	assert_true(x && t && e && p);
	for (long i = 0; i < N_LIN; i++)
		x[i] = (float)(-12.0 + 1e-4 * (double)i);
	for (long i = 0; i < N_WIDE; i++)
		x[N_LIN + i] = (float)(-104.0 + 1e-3 * (double)i);
	for (int k = 0; k < N_POW / 2; k++) {
		x[N_LIN + N_WIDE + 2 * k] = ldexpf(1.37f, -k);
		x[N_LIN + N_WIDE + 2 * k + 1] = -ldexpf(1.37f, -k);
	}
	build_sweep(&b);
	b.sweep(x, t, e, p, n);
	for (long i = 0; i < n; i++) {
		double ex = exp((double)x[i]);

		if (fabsf(t[i]) > 1 || fabsf(e[i]) > 1)
			fail_msg("outside [-1, 1] at %.9g: tanh %.9g, erf %.9g",
				 (double)x[i], (double)t[i], (double)e[i]);
		note_err(&wt, x[i], rel_err(t[i], tanh((double)x[i])));
		note_err(&we, x[i], rel_err(e[i], erf((double)x[i])));
		if (ex < FLT_MIN && p[i] != 0)
			fail_msg("fl_expf(%.9g) = %.9g, not 0", (double)x[i],
				 (double)p[i]);
		else if (ex >= FLT_MIN && ex <= FLT_MAX)
			note_err(&wp, x[i], rel_err(p[i], ex));
		else if (ex > FLT_MAX && !isinf(p[i]))
			fail_msg("fl_expf(%.9g) = %.9g, not inf", (double)x[i],
				 (double)p[i]);
	}
	unbuild(&b);
	free(x);
	free(t);
	free(e);
	free(p);
	assert_within(&wt, 1e-6);
	assert_within(&we, 1e-6);
	assert_within(&wp, 1e-6);
}

/* Far out tanh and erf are exactly +-1 and exp inf or 0; zero keeps its
 * sign (exp(+-0) is 1); NaN stays NaN. */
static void test_math_rt_special_values(void **state)
{
	float x[] = {INFINITY, -INFINITY, 1e30f, -1e30f, 10.5f, -4.5f,
		     0.0f, -0.0f, NAN, 9.1f, -9.1000004f};
	enum { N = sizeof x / sizeof *x };
	float t[N], e[N], p[N];
	built b;

	(void)state;
	build_sweep(&b);
	b.sweep(x, t, e, p, N);
	unbuild(&b);
	assert_true(t[0] == 1.0f && e[0] == 1.0f);
	assert_true(t[1] == -1.0f && e[1] == -1.0f);
	assert_true(t[2] == 1.0f && e[2] == 1.0f);
	assert_true(t[3] == -1.0f && e[3] == -1.0f);
	assert_true(t[4] == 1.0f && e[5] == -1.0f);
	assert_true(t[6] == 0.0f && !signbit(t[6]) && !signbit(e[6]));
	assert_true(t[7] == 0.0f && signbit(t[7]) && signbit(e[7]));
	assert_true(isnan(t[8]) && isnan(e[8]));
	assert_true(isinf(p[0]) && p[0] > 0 && p[1] == 0.0f);
	assert_true(isinf(p[2]) && p[3] == 0.0f);
	assert_true(p[6] == 1.0f && p[7] == 1.0f && isnan(p[8]));
	/* tanh's clamp bound itself (where only the clamp makes it 1) */
	assert_true(t[9] == 1.0f && t[10] == -1.0f);
}

static float float_of_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof f);
	return f;
}

/* exp at the ends of its range: the clamp bounds themselves are exact
 * to 1e-6 (the top one is the float just below ln FLT_MAX, where 2^128
 * comes from the exponent bits), the floats just past them give 0 and
 * inf; and every NaN -- quiet or signalling, either sign, with a payload
 * -- comes out NaN (fl_expf adds to a result's bits, which could turn a
 * NaN into inf if the NaN were not passed through). */
static void test_math_rt_exp_range_ends_and_nan_payloads(void **state)
{
	const float lo = -87.3365402f, hi = 88.7228317f;
	static const uint32_t nan_bits[] = {0x7fc12345u, 0xffc00123u,
					    0x7f800001u, 0xff812345u,
					    0x7fffffffu};
	enum { N_NAN = sizeof nan_bits / sizeof *nan_bits, N = 4 + N_NAN };
	float x[N] = {lo, nextafterf(lo, -INFINITY), hi,
		      nextafterf(hi, INFINITY)};
	float t[N], e[N], p[N];
	built b;

	(void)state;
	for (int i = 0; i < N_NAN; i++)
		x[4 + i] = float_of_bits(nan_bits[i]);
	assert_true(exp((double)lo) >= FLT_MIN && exp((double)hi) <= FLT_MAX);
	assert_true(exp((double)x[1]) < FLT_MIN && exp((double)x[3]) > FLT_MAX);
	build_sweep(&b);
	b.sweep(x, t, e, p, N);
	unbuild(&b);
	assert_true(rel_err(p[0], exp((double)lo)) < 1e-6);
	assert_true(p[1] == 0.0f);
	assert_true(isfinite(p[2]) && rel_err(p[2], exp((double)hi)) < 1e-6);
	assert_true(isinf(p[3]) && p[3] > 0);
	for (int i = 0; i < N_NAN; i++)
		if (!isnan(p[4 + i]))
			fail_msg("fl_expf(NaN 0x%08x) = %.9g, not NaN",
				 (unsigned)nan_bits[i], (double)p[4 + i]);
}

static bool same_bits(float a, float b)
{
	return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

/* The exp variants for an argument the code generator has bounded
 * (fl_expf_nonpos: at most 0; fl_expf_in_range: within fl_expf's clamp
 * bounds, which value_range.h repeats) give fl_expf's bits on their
 * domain -- every 509th float of it, both ends, zeros, NaNs -- and tanh
 * is exactly +-1 for every float from its clamp bound 9.1 to 9.2. */
static void test_math_rt_exp_variants_agree(void **state)
{
	enum { N = 1 << 23 };
	float *x = malloc(N * sizeof *x), *t = malloc(N * sizeof *t);
	float *e = malloc(N * sizeof *e), *p = malloc(N * sizeof *p);
	float *np = malloc(N * sizeof *np), *ir = malloc(N * sizeof *ir);
	float lo, hi;
	long n = 0;
	built b;

	(void)state;
	assert_true(x && t && e && p && np && ir);
	build_sweep(&b);
	b.bounds(&lo, &hi);
	assert_true(lo == FL_EXPF_ARG_LO && hi == FL_EXPF_ARG_HI);
	/* every 509th float of [lo, hi], walking the bits of each sign */
	for (uint32_t u = 0; n < N - 16; u += 509) {
		float f = float_of_bits(u);

		if (!(f <= hi))
			break;
		x[n++] = f;
		if (-f >= lo)
			x[n++] = -f;
	}
	x[n++] = lo;
	x[n++] = hi;
	x[n++] = -0.0f;
	x[n++] = NAN;
	x[n++] = float_of_bits(0xff812345u);
	b.sweep(x, t, e, p, n);
	b.variants(x, np, ir, n);
	for (long i = 0; i < n; i++) {
		if (!same_bits(ir[i], p[i]))
			fail_msg("fl_expf_in_range(%.9g) = %.9g, fl_expf %.9g",
				 (double)x[i], (double)ir[i], (double)p[i]);
		if (!(x[i] > 0) && !same_bits(np[i], p[i]))
			fail_msg("fl_expf_nonpos(%.9g) = %.9g, fl_expf %.9g",
				 (double)x[i], (double)np[i], (double)p[i]);
	}
	/* below the range only the non-positive variant is defined */
	n = 0;
	x[n++] = -INFINITY;
	x[n++] = nextafterf(lo, -INFINITY);
	x[n++] = -1000.0f;
	for (float f = 9.1f; f <= 9.2f; f = nextafterf(f, INFINITY)) {
		x[n++] = f;
		x[n++] = -f;
	}
	b.sweep(x, t, e, p, n);
	b.variants(x, np, ir, n);
	unbuild(&b);
	for (int i = 0; i < 3; i++)
		assert_true(np[i] == 0.0f && p[i] == 0.0f);
	for (long i = 3; i < n; i++)
		if (t[i] != (x[i] > 0 ? 1.0f : -1.0f))
			fail_msg("fl_tanhf(%.9g) = %.9g, not +-1", (double)x[i],
				 (double)t[i]);
	free(x);
	free(t);
	free(e);
	free(p);
	free(np);
	free(ir);
}

/* Units in the last place between two floats of one sign. */
static long ulps_apart(float a, float b)
{
	int32_t ia, ib;

	memcpy(&ia, &a, sizeof ia);
	memcpy(&ib, &b, sizeof ib);
	return labs((long)ia - (long)ib);
}

/* The forms the kernels call with the bounds hidden from the compiler
 * (fl_b: each clamp becomes one vector min or max) give the bits of the
 * plain forms, whose bounds the compiler sees and folds into the
 * arithmetic (tanh's clamped arm becomes the constant 1, which holds
 * only if 9.1 P/Q computed at run time rounds to 1 or above, as the
 * runtime's comment says), over the whole float line
 * -- every 1021st float of each sign, infinities, zeros, NaNs with
 * payloads, tanh's bound and the floats just past it -- and fl_expf_small
 * (one-step reduction) stays within 2 units in the last place of fl_expf
 * and within 1e-6 of exp on its domain [-5.5, 5.5]. */
static void test_math_rt_hidden_bounds_same_bits(void **state)
{
	enum { N = 1 << 23 };
	static const uint32_t specials[] = {0x7f800000u, 0xff800000u, 0u,
					    0x80000000u, 0x7fc12345u,
					    0xff812345u, 0x7f800001u};
	/* nine arrays of N floats, one allocation */
	float *x = malloc(9 * (size_t)N * sizeof *x);
	float *t = x + N, *e = t + N, *p = e + N, *np = p + N;
	float *ht = np + N, *he = ht + N, *hp = he + N, *sm = hp + N;
	long n = 0, small = 0;
	built b;

	(void)state;
	assert_non_null(x);
	for (uint32_t u = 0; u < 0x7f800000u; u += 1021) {
		x[n++] = float_of_bits(u);
		x[n++] = -float_of_bits(u);
	}
	for (size_t i = 0; i < sizeof specials / sizeof *specials; i++)
		x[n++] = float_of_bits(specials[i]);
	x[n++] = 9.1f;
	x[n++] = nextafterf(9.1f, INFINITY);
	x[n++] = -nextafterf(9.1f, -INFINITY);
	x[n++] = 5.5f;
	x[n++] = -5.5f;
	assert_true(n <= N);
	build_sweep(&b);
	b.sweep(x, t, e, p, n);
	b.hidden(x, ht, he, hp, np, sm, n);
	unbuild(&b);
	for (long i = 0; i < n; i++) {
		if (!same_bits(ht[i], t[i]) || !same_bits(he[i], e[i]) ||
		    !same_bits(hp[i], p[i]))
			fail_msg("hidden bounds at %.9g: tanh %.9g/%.9g, erf "
				 "%.9g/%.9g, exp %.9g/%.9g", (double)x[i],
				 (double)ht[i], (double)t[i], (double)he[i],
				 (double)e[i], (double)hp[i], (double)p[i]);
		if (!(x[i] > 0) && !same_bits(np[i], p[i]))
			fail_msg("fl_expf_nonpos_b(%.9g) = %.9g, fl_expf %.9g",
				 (double)x[i], (double)np[i], (double)p[i]);
		if (isnan(x[i]) && !isnan(sm[i]))
			fail_msg("fl_expf_small(NaN) = %.9g", (double)sm[i]);
		if (!(fabsf(x[i]) <= 5.5f))
			continue;
		small++;
		if (ulps_apart(sm[i], p[i]) > 2 ||
		    rel_err(sm[i], exp((double)x[i])) > 1e-6)
			fail_msg("fl_expf_small(%.9g) = %.9g, fl_expf %.9g",
				 (double)x[i], (double)sm[i], (double)p[i]);
	}
	assert_true(small > 1000000);
	free(x);
}

/* fl_stream16 writes its 16 floats, bit for bit (NaN payloads, -0),
 * to a destination on a 64-byte boundary (non-temporal stores where the
 * compiler has them) and to one off it (plain stores), and nothing
 * beyond them. */
static void test_math_rt_stream_stores_exactly(void **state)
{
	enum { N = 4096 };
	float *src = aligned_alloc(64, N * sizeof *src);
	float *dst = aligned_alloc(64, (N + 32) * sizeof *dst);
	built b;

	(void)state;
	assert_true(src && dst);
	for (int i = 0; i < N; i++)
		src[i] = i % 97 == 0 ? float_of_bits(0x7fc00000u + (uint32_t)i)
			 : i % 89 == 0 ? -0.0f : (float)i * 0.37f - 500.0f;
	build_sweep(&b);
	for (int off = 0; off < 2; off++) {
		for (int i = 0; i < N + 32; i++)
			dst[i] = 12345.0f;
		b.stream(dst + off, src, N);
		for (int i = 0; i < N; i++)
			if (!same_bits(dst[off + i], src[i]))
				fail_msg("offset %d, element %d: %.9g, want "
					 "%.9g", off, i, (double)dst[off + i],
					 (double)src[i]);
		for (int i = off + N; i < N + 32; i++)
			assert_true(dst[i] == 12345.0f);
		if (off)
			assert_true(dst[0] == 12345.0f);
	}
	unbuild(&b);
	free(src);
	free(dst);
}

/* The generated code of exp, tanh, erf, sigmoid and both GELU forms
 * calls the runtime, which the unit carries, and not libm's expf, tanhf
 * and erff. */
static void test_math_rt_generated_code_calls_it(void **state)
{
	static const char graph[] =
		"{\"format\": \"fuselab-graph/1\", \"name\": \"m\",\n"
		" \"tensors\": {\"x\": {\"shape\": [8, 64], \"dtype\": \"f32\","
		" \"role\": \"input\"},\n"
		"  \"y\": {\"shape\": [8, 64], \"dtype\": \"f32\", \"role\":"
		" \"output\"},\n"
		"  \"z\": {\"shape\": [8, 64], \"dtype\": \"f32\", \"role\":"
		" \"output\"},\n"
		"  \"v\": {\"shape\": [8, 64], \"dtype\": \"f32\", \"role\":"
		" \"output\"},\n"
		"  \"w\": {\"shape\": [8, 64], \"dtype\": \"f32\", \"role\":"
		" \"output\"}},\n"
		" \"ops\": [{\"name\": \"g1\", \"op\": \"gelu\", \"in\": [\"x\"],"
		" \"out\": \"y\"},\n"
		"  {\"name\": \"g2\", \"op\": \"gelu\", \"in\": [\"x\"], \"out\":"
		" \"z\", \"attrs\": {\"approximate\": \"tanh\"}},\n"
		"  {\"name\": \"e\", \"op\": \"exp\", \"in\": [\"x\"], \"out\":"
		" \"v\"},\n"
		"  {\"name\": \"s\", \"op\": \"sigmoid\", \"in\": [\"x\"],"
		" \"out\": \"w\"}]}\n";
	fl_error err = {""};
	fl_engine_opts o;
	fl_session *s;
	fl_graph *g;
	char *src;

	(void)state;
	g = fl_load_graph_string(graph, strlen(graph), "m.json", &err);
	if (!g)
		fail_msg("load: %s", err.msg);
	fl_engine_opts_default(&o);
	o.strategy = FL_STRATEGY_UNFUSED;
	o.stop_after = FL_PASS_CODEGEN;
	s = fl_engine_open(g, &o, &err);
	if (!s || fl_engine_run(s, &err) < 0)
		fail_msg("engine: %s", err.msg);
	src = fl_codegen_c(fl_engine_program(s), &err);
	assert_non_null(src);
	assert_non_null(strstr(src, "static inline float fl_tanhf(float x)"));
	assert_non_null(strstr(src, "static inline float fl_erff(float x)"));
	/* the forms with the bounds hidden once per kernel */
	assert_non_null(strstr(src, "const fl_bounds fl_b = fl_bounds_hidden();"));
	assert_non_null(strstr(src, "= fl_tanhf_b("));
	assert_non_null(strstr(src, "= fl_erff_b("));
	assert_non_null(strstr(src, "= fl_expf_b("));
	assert_non_null(strstr(src, "1.0f + fl_expf_b(-"));
	assert_null(strstr(src, " tanhf("));
	assert_null(strstr(src, " erff("));
	assert_null(strstr(src, " expf("));
	free(src);
	fl_engine_close(s);
	fl_graph_free(g);
}

FL_SUITE(math_rt,
	cmocka_unit_test(test_math_rt_accurate_everywhere),
	cmocka_unit_test(test_math_rt_special_values),
	cmocka_unit_test(test_math_rt_exp_range_ends_and_nan_payloads),
	cmocka_unit_test(test_math_rt_exp_variants_agree),
	cmocka_unit_test(test_math_rt_hidden_bounds_same_bits),
	cmocka_unit_test(test_math_rt_stream_stores_exactly),
	cmocka_unit_test(test_math_rt_generated_code_calls_it));
