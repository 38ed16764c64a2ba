/* The code a program is generated for (DESIGN 1.6): the C + OpenMP
 * backend for the host's cores, or the CUDA backend for an NVIDIA GPU.
 *
 * The CUDA translation unit (fl_codegen_cuda_unit, codegen.h) exports the
 * same C entry points as the C one, so the runner loads either the same
 * way:
 *     extern "C" const int fl_n_kernels;
 *     extern "C" void (*const fl_kernels[])(float *const *bufs);
 * where bufs[t] is the host buffer of graph tensor t.  A call of kernel i
 * uploads the global tensors the kernel uses to the device copies the
 * unit keeps (allocated on the first call), launches the kernel's
 * phases, waits, and downloads what the kernel wrote: the host buffers
 * then hold what the C backend's call would leave there.  Beside them:
 *     extern "C" int fl_device_resident;
 *         set non-zero by the caller (the test child, before timing):
 *         calls skip the uploads and downloads and work on the device
 *         copies alone;
 *     extern "C" double fl_device_seconds;
 *         device time of the last call's launches, from CUDA events
 *         recorded around them;
 *     extern "C" const char *fl_device_name(void);
 *         the GPU the unit runs on ("" when none).
 * A CUDA error in a call is printed to stderr and aborts the process (the
 * runner's test child: reported as a crash with the message). */
#ifndef FL_TARGET_H
#define FL_TARGET_H

#include <stdint.h>

typedef enum fl_target {
	FL_TARGET_CPU,		/* default */
	FL_TARGET_CUDA,
} fl_target;

#define FL_TARGET_COUNT 2

/* "cpu", "cuda". */
const char *fl_target_name(fl_target t);

/* t from its name; -1 when s names no target. */
int fl_target_parse(const char *s, fl_target *t);

/* Bytes of __shared__ memory one block's tile-local arrays may take on
 * the GPU unless an option says otherwise (48 KiB, what every CUDA GPU
 * gives a block without opting in to more). */
#define FL_CUDA_SHARED_DEFAULT ((int64_t)48 << 10)

/* Threads of a block of the generated CUDA: 32 x 8. */
#define FL_CUDA_BLOCK_X 32
#define FL_CUDA_BLOCK_Y 8

#endif
