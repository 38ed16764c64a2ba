/* The machine the generated code runs on: cores, cache sizes and the
 * vector ISA, read once from the running system (sysfs, sysconf, cpuid
 * through the compiler's builtins).  Layer 1 sizes tiles from it, placement
 * takes its per-core L2 as the default budget of tile-local buffers, and
 * the ladder and the benchmarks print it beside every measurement.  Never
 * prints; a value the system does not tell falls back to a stated default
 * and `guessed` says which. */
#ifndef FL_MACHINE_H
#define FL_MACHINE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct fl_machine {
	int cores;		/* online processors (sysconf) */
	int64_t l1d, l2, l3;	/* bytes: L1 data and L2 per core, L3
				   shared */
	int vector_bits;	/* widest float vector the ISA has: 512
				   (AVX-512F), 256 (AVX2 with FMA), 128
				   (SSE2/NEON) or 0 (plain C) */
	bool fma;		/* fused multiply-add */
	char isa[32];		/* "avx512f", "avx2+fma", "sse2", "c" */
	char model[128];	/* CPU model name, "" when unknown */
	char guessed[64];	/* which fields are defaults, "" if none */
	char given[64];		/* which fields a machine description set
				   (fl_machine_describe), "" if none */
} fl_machine;

/* The machine the engine plans for: the one this process runs on, read
 * once and cached (thread-safe), unless fl_machine_assume named another. */
const fl_machine *fl_machine_get(void);

/* The machine this process runs on, whatever was assumed: what timings
 * are measured on (the copy probe, the ladder's machine line). */
const fl_machine *fl_machine_host(void);

/* Applies a description such as "cores=4,l2=1M,isa=avx2" to m: the
 * fields named (cores, l1d, l2, l3 with K/M/G suffixes, isa one of
 * avx512f, avx2+fma, sse2, neon, c, and model) replace m's, each listed
 * in m->given.  False with a message naming the bad part in err, m
 * unchanged. */
bool fl_machine_describe(fl_machine *m, const char *spec, char *err, int n);

/* From now on fl_machine_get returns a copy of *m (plan tiles, budgets
 * and thread counts for another machine: reproducible plans, tests that
 * do not follow the machine running them).  Call before the engine runs
 * in other threads; NULL goes back to the host. */
void fl_machine_assume(const fl_machine *m);

/* The GPU layer 1 plans for under the CUDA target (an H100's defaults:
 * cores = resident blocks, the budget a block's shared memory). */
const fl_machine *fl_machine_cuda(void);

/* Reads the machine afresh into m (what fl_machine_get caches). */
void fl_machine_detect(fl_machine *m);

/* One line describing m, e.g. "AMD EPYC, 2 cores, avx2+fma, L1d 32 KiB,
 * L2 512 KiB, L3 32 MiB", into buf; fields that were given or guessed
 * are named at the end. */
const char *fl_machine_text(const fl_machine *m, char *buf, int n);

/* The load average over the last minute, -1 when unknown. */
double fl_machine_load(void);

#endif
