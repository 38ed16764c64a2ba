/* make bench-cuda's bandwidth reference: a device-to-device copy of a
 * large buffer on the GPU, timed with CUDA events.  Each round copies
 * BYTES (default 1 GiB, argv[1] in MiB) with a grid-stride float4 kernel;
 * the bandwidth counts the bytes read and written.  Prints
 *     device: NAME
 *     copy: MEDIAN GB/s (MIN..MAX), N rounds of SIZE MiB
 * and exits 0; exits 2 with "no CUDA device" when there is none, 1 on a
 * CUDA error. */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#define ROUNDS 20

static void check(cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return;
	fprintf(stderr, "copy_bw: %s: %s\n", what, cudaGetErrorString(e));
	exit(1);
}

__global__ void copy_kernel(const float4 *__restrict__ src,
			    float4 *__restrict__ dst, size_t n)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += stride)
		dst[i] = src[i];
}

/* Seconds of one copy of n float4 from src to dst. */
static double time_copy(const float4 *src, float4 *dst, size_t n,
			int blocks, cudaEvent_t a, cudaEvent_t b)
{
	float ms = 0;

	check(cudaEventRecord(a), "cudaEventRecord");
	copy_kernel<<<blocks, 256>>>(src, dst, n);
	check(cudaGetLastError(), "copy kernel launch");
	check(cudaEventRecord(b), "cudaEventRecord");
	check(cudaEventSynchronize(b), "cudaEventSynchronize");
	check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
	return ms * 1e-3;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 1024;
	size_t bytes = mib << 20, n = bytes / sizeof(float4);
	std::vector<double> gbps;
	cudaDeviceProp prop;
	cudaEvent_t a, b;
	float4 *src, *dst;
	int count = 0, sms;

	if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
		printf("no CUDA device\n");
		return 2;
	}
	check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
	sms = prop.multiProcessorCount;
	check(cudaMalloc(&src, bytes), "cudaMalloc");
	check(cudaMalloc(&dst, bytes), "cudaMalloc");
	check(cudaMemset(src, 1, bytes), "cudaMemset");
	check(cudaEventCreate(&a), "cudaEventCreate");
	check(cudaEventCreate(&b), "cudaEventCreate");
	time_copy(src, dst, n, sms * 8, a, b);	/* warm-up */
	for (int r = 0; r < ROUNDS; r++)
		gbps.push_back(2.0 * (double)bytes /
			       time_copy(src, dst, n, sms * 8, a, b) / 1e9);
	std::sort(gbps.begin(), gbps.end());
	printf("device: %s\n", prop.name);
	printf("copy: %.1f GB/s (%.1f..%.1f), %d rounds of %zu MiB\n",
	       gbps[ROUNDS / 2], gbps.front(), gbps.back(), ROUNDS, mib);
	cudaFree(src);
	cudaFree(dst);
	return 0;
}
