/* ONNX Runtime beside the generated programs in make bench (issue 11):
 * bench/ort_peer.mjs run by Node.js as a child process holding one warm
 * session, driven over pipes.  The time of a run is the one the child
 * measures around session.run, so the pipe's round trip is not charged
 * to ONNX Runtime.  Everything here is for the benchmark only: make,
 * make test and CI never start it. */
#ifndef FL_BENCH_ORT_PEER_H
#define FL_BENCH_ORT_PEER_H

#include <stdio.h>
#include <sys/types.h>

typedef struct ort_peer {
	pid_t pid;
	FILE *to, *from;
	char version[64];
} ort_peer;

/* Where onnxruntime-node is (FL_ORT_DIR, else build/ort's npm prefix),
 * or NULL with the reason in why when it is not installed or Node.js is
 * missing. */
const char *ort_peer_module(char *why, size_t n);

/* The version its package.json names into buf ("unknown" when it names
 * none). */
const char *ort_peer_version(const char *module, char *buf, size_t n);

/* Starts the peer on model (parameters as initializers) with `threads`
 * intra-op threads and the inputs feeds[0..n_feeds-1] ("NAME=FILE", raw
 * float32).  0, or -1 with the reason in why. */
int ort_peer_open(ort_peer *p, const char *module, const char *model,
		  int threads, const char *const *feeds, int n_feeds,
		  char *why, size_t n);

/* Runs the session once; the seconds session.run took, or -1. */
double ort_peer_run(void *p);

/* Writes the model's first output (raw float32) to path; 0 or -1. */
int ort_peer_dump(ort_peer *p, const char *path);

/* Ends the child and reaps it. */
void ort_peer_close(ort_peer *p);

#endif
