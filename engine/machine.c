/* The machine description (machine.h).  Cache sizes come from
 * /sys/devices/system/cpu/cpu0/cache/index<k>/{level,type,size}; the model
 * from /proc/cpuinfo; the ISA from the compiler's cpuid builtins on x86. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "machine.h"

#define DEFAULT_L1D (32 * 1024)
#define DEFAULT_L2 (512 * 1024)
#define DEFAULT_L3 (8 * 1024 * 1024)

/* The first line of a small sysfs file into buf; false when unreadable. */
static bool read_line(const char *path, char *buf, int n)
{
	FILE *f = fopen(path, "r");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, n, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* "32K", "1M", "4096": bytes from 1 KiB to 1 TiB; 0 when not such a
 * size (sysfs writes "32K", "1024K"; descriptions may use any). */
static int64_t spec_size(const char *s)
{
	char *end;
	long long v;

	if (*s < '0' || *s > '9')
		return 0;
	v = strtoll(s, &end, 10);
	if (*end == 'K' || *end == 'k')
		v = v > (1LL << 40) ? 0 : v << 10, end++;
	else if (*end == 'M' || *end == 'm')
		v = v > (1LL << 30) ? 0 : v << 20, end++;
	else if (*end == 'G' || *end == 'g')
		v = v > (1LL << 20) ? 0 : v << 30, end++;
	if (*end || v < 1024 || v > (1LL << 40))
		return 0;
	return (int64_t)v;
}

/* The data or unified caches of cpu0 by level. */
static void read_caches(fl_machine *m)
{
	for (int k = 0; k < 16; k++) {
		char path[128], level[16], type[32], size[32];
		int64_t bytes;

		snprintf(path, sizeof path,
			 "/sys/devices/system/cpu/cpu0/cache/index%d/level", k);
		if (!read_line(path, level, sizeof level))
			break;
		snprintf(path, sizeof path,
			 "/sys/devices/system/cpu/cpu0/cache/index%d/type", k);
		if (!read_line(path, type, sizeof type) ||
		    !strcmp(type, "Instruction"))
			continue;
		snprintf(path, sizeof path,
			 "/sys/devices/system/cpu/cpu0/cache/index%d/size", k);
		if (!read_line(path, size, sizeof size) ||
		    !(bytes = spec_size(size)))
			continue;
		if (!strcmp(level, "1"))
			m->l1d = bytes;
		else if (!strcmp(level, "2"))
			m->l2 = bytes;
		else if (!strcmp(level, "3"))
			m->l3 = bytes;
	}
}

static void read_model(fl_machine *m)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];

	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && colon) {
			colon++;
			while (*colon == ' ' || *colon == '\t')
				colon++;
			snprintf(m->model, sizeof m->model, "%s", colon);
			m->model[strcspn(m->model, "\n")] = '\0';
			break;
		}
	}
	fclose(f);
}

static void read_isa(fl_machine *m)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	m->fma = __builtin_cpu_supports("fma");
	if (__builtin_cpu_supports("avx512f")) {
		m->vector_bits = 512;
		snprintf(m->isa, sizeof m->isa, "avx512f");
	} else if (__builtin_cpu_supports("avx2") && m->fma) {
		m->vector_bits = 256;
		snprintf(m->isa, sizeof m->isa, "avx2+fma");
	} else {
		m->vector_bits = 128;
		snprintf(m->isa, sizeof m->isa, "sse2");
	}
#elif defined(__aarch64__)
	m->vector_bits = 128;
	m->fma = true;
	snprintf(m->isa, sizeof m->isa, "neon");
#else
	snprintf(m->isa, sizeof m->isa, "c");
#endif
}

static void note_guess(fl_machine *m, const char *what)
{
	size_t at = strlen(m->guessed);

	snprintf(m->guessed + at, sizeof m->guessed - at, "%s%s",
		 at ? ", " : "", what);
}

void fl_machine_detect(fl_machine *m)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	memset(m, 0, sizeof *m);
	m->cores = n > 0 ? (int)n : 1;
	if (n <= 0)
		note_guess(m, "cores");
	read_caches(m);
	if (!m->l1d) {
		m->l1d = DEFAULT_L1D;
		note_guess(m, "L1d");
	}
	if (!m->l2) {
		m->l2 = DEFAULT_L2;
		note_guess(m, "L2");
	}
	if (!m->l3) {
		m->l3 = DEFAULT_L3;
		note_guess(m, "L3");
	}
	read_model(m);
	read_isa(m);
}

static fl_machine cached;
static pthread_once_t cached_once = PTHREAD_ONCE_INIT;

static void detect_cached(void)
{
	fl_machine_detect(&cached);
}

static fl_machine assumed;
static bool is_assumed;

const fl_machine *fl_machine_host(void)
{
	pthread_once(&cached_once, detect_cached);
	return &cached;
}

const fl_machine *fl_machine_get(void)
{
	return is_assumed ? &assumed : fl_machine_host();
}

void fl_machine_assume(const fl_machine *m)
{
	if (m)
		assumed = *m;
	is_assumed = m != NULL;
}

/* ---- machine descriptions ("cores=4,l2=1M,isa=avx2") ---------------- */

/* isa name -> m's vector width, fma and name; false when unknown. */
static bool spec_isa(fl_machine *m, const char *name)
{
	static const struct {
		const char *name, *canon;
		int bits;
		bool fma;
	} isas[] = {
		{"avx512f", "avx512f", 512, true},
		{"avx512", "avx512f", 512, true},
		{"avx2+fma", "avx2+fma", 256, true},
		{"avx2", "avx2+fma", 256, true},
		{"sse2", "sse2", 128, false},
		{"neon", "neon", 128, true},
		{"c", "c", 0, false},
	};

	for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++)
		if (!strcmp(name, isas[i].name)) {
			m->vector_bits = isas[i].bits;
			m->fma = isas[i].fma;
			snprintf(m->isa, sizeof m->isa, "%s", isas[i].canon);
			return true;
		}
	return false;
}

/* One key=value of a description into m; false with the reason in err. */
static bool spec_field(fl_machine *m, const char *key, const char *val,
		       char *err, int n)
{
	int64_t *size = !strcmp(key, "l1d") ? &m->l1d :
			!strcmp(key, "l2") ? &m->l2 :
			!strcmp(key, "l3") ? &m->l3 : NULL;

	if (size) {
		if (!(*size = spec_size(val)))
			snprintf(err, (size_t)n, "%s=%s: expected a size from "
				 "1K to 1024G such as 512K or 32M", key, val);
		return *size != 0;
	}
	if (!strcmp(key, "cores")) {
		char *end;
		long v = strtol(val, &end, 10);

		if (*val < '0' || *val > '9' || *end || v < 1 || v > 4096) {
			snprintf(err, (size_t)n, "cores=%s: expected a whole "
				 "number from 1 to 4096", val);
			return false;
		}
		m->cores = (int)v;
		return true;
	}
	if (!strcmp(key, "isa")) {
		if (spec_isa(m, val))
			return true;
		snprintf(err, (size_t)n, "isa=%s: expected avx512f, "
			 "avx2+fma, sse2, neon or c", val);
		return false;
	}
	if (!strcmp(key, "model")) {
		snprintf(m->model, sizeof m->model, "%s", val);
		return true;
	}
	snprintf(err, (size_t)n, "unknown field \"%s\" (expected cores, l1d, "
		 "l2, l3, isa or model)", key);
	return false;
}

static void note_given(fl_machine *m, const char *key)
{
	size_t at = strlen(m->given);

	if (!strstr(m->given, key))
		snprintf(m->given + at, sizeof m->given - at, "%s%s",
			 at ? ", " : "", key);
}

bool fl_machine_describe(fl_machine *m, const char *spec, char *err, int n)
{
	fl_machine out = *m;
	char part[160];
	const char *p = spec;

	if (!*spec) {
		snprintf(err, (size_t)n, "empty machine description");
		return false;
	}
	while (*p) {
		size_t len = strcspn(p, ",");
		char *eq;

		if (len == 0 || len >= sizeof part) {
			snprintf(err, (size_t)n, "expected key=value pairs "
				 "separated by commas, got \"%s\"", spec);
			return false;
		}
		memcpy(part, p, len);
		part[len] = '\0';
		eq = strchr(part, '=');
		if (!eq || eq == part || !eq[1]) {
			snprintf(err, (size_t)n, "\"%s\": expected key=value",
				 part);
			return false;
		}
		*eq = '\0';
		if (!spec_field(&out, part, eq + 1, err, n))
			return false;
		note_given(&out, part);
		p += len + (p[len] == ',');
	}
	*m = out;
	return true;
}

/* An H100 as layer 1 sees it when planning for the CUDA backend: a
 * "core" is a streaming multiprocessor (132), the tile budget a block's
 * static __shared__ memory (48 KiB), and a warp is the vector (32 floats
 * in lockstep), so contraction tiles come in multiples of two warps'
 * width.  Stated defaults: the planning happens where the GPU may be
 * absent. */
const fl_machine *fl_machine_cuda(void)
{
	static const fl_machine gpu = {
		.cores = 132,
		.l1d = 48 << 10,
		.l2 = 48 << 10,
		.l3 = (int64_t)50 << 20,
		.vector_bits = 1024,	/* a warp: 32 floats in lockstep */
		.fma = true,
		.isa = "cuda",
		.model = "NVIDIA H100 (defaults: 132 SMs, 48 KiB shared per "
			 "block)",
		.guessed = "",
	};

	return &gpu;
}

static const char *bytes_text(int64_t b, char *buf, int n)
{
	if (b >= 1024 * 1024 && b % (1024 * 1024) == 0)
		snprintf(buf, (size_t)n, "%lld MiB", (long long)(b >> 20));
	else
		snprintf(buf, (size_t)n, "%lld KiB", (long long)(b >> 10));
	return buf;
}

const char *fl_machine_text(const fl_machine *m, char *buf, int n)
{
	char l1[24], l2[24], l3[24];

	snprintf(buf, (size_t)n, "%s, %d core%s, %s, L1d %s, L2 %s, L3 %s%s%s%s"
		 "%s%s%s",
		 m->model[0] ? m->model : "unknown CPU", m->cores,
		 m->cores == 1 ? "" : "s", m->isa, bytes_text(m->l1d, l1, 24),
		 bytes_text(m->l2, l2, 24), bytes_text(m->l3, l3, 24),
		 m->guessed[0] ? " (assumed: " : "", m->guessed,
		 m->guessed[0] ? ")" : "",
		 m->given[0] ? " (given: " : "", m->given,
		 m->given[0] ? ")" : "");
	return buf;
}

double fl_machine_load(void)
{
	double load[1];

	if (getloadavg(load, 1) != 1)
		return -1;
	return load[0];
}
