#!/bin/sh
# make bench, last step: writes bench/RESULTS.md (to stdout) from what the
# benchmarks wrote into DIR (build/bench): peers.txt (bench_peers),
# kernels.txt (bench_kernels.sh), layer1.txt, partition.txt, steps.txt,
# explorer.txt.  Each table is copied as the benchmark printed it, under
# a short note on its columns and on how it was measured.  A missing or
# empty file is named in the document and on stderr, and the exit status
# is then 1, so that make bench stops on it.
# usage: results.sh DIR
set -eu

if [ $# -ne 1 ] || [ ! -d "$1" ]; then
	echo "usage: results.sh DIR   (DIR: where make bench wrote *.txt)" >&2
	exit 2
fi
dir=$1
status=0

# section FILE PREFIX: the lines of FILE from the header "== PREFIX..."
# up to the next "== " header.
section() {
	awk -v p="== $2" 'index($0, p) == 1 { on = 1; print; next }
		/^== / { on = 0 } on' "$1"
}

# file NAME: the path of DIR/NAME, or nothing (and a note) when missing.
file() {
	if [ -s "$dir/$1" ]; then
		echo "$dir/$1"
	else
		echo "results.sh: $dir/$1 is missing or empty" >&2
		return 1
	fi
}

# block NAME [PREFIX]: a code block of the file (or of its section), or
# a line saying it was not measured.
block() {
	if f=$(file "$1"); then
		echo '```'
		if [ $# -gt 1 ]; then section "$f" "$2"; else cat "$f"; fi |
			sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
		echo '```'
	else
		echo "*Not measured in this run: $dir/$1 is missing.*"
		status=1
	fi
	echo
}

value() {	# value NAME KEY: the rest of the first "KEY: ..." line
	f=$(file "$1" 2>/dev/null) && sed -n "s/^$2: //p" "$f" | head -n 1
}

date=$(value peers.txt date || true)
machine=$(value peers.txt machine || true)
peer=$(value peers.txt peer || true)
ort=$(value peers.txt ort || true)

cat <<EOF_HEAD
# fuselab benchmark results

Written by \`make bench\` (bench/results.sh) from build/bench/*.txt; do not
edit by hand, run \`make bench\` again.

- date: ${date:-unknown}
- machine: ${machine:-unknown}
- peer: ${peer:-unknown}
- second peer: ${ort:-not measured (no ONNX Runtime)}

## How to read these numbers

Every comparison is measured in one process and one run, *interleaved*:
the contenders (fuselab's generated kernel and oneDNN on the same shape and
buffers; a bare matmul and the same matmul with a fused epilogue) run in
turn, A B, then B A, ..., after one untimed warm-up call each, so a change
in the machine's load falls on all of them alike.  Each row gives the
**median** and the **min-max spread** of its rounds.  A difference whose
ranges overlap is *within noise* and is never called a speedup.  Other
work on the machine delays every OpenMP parallel region that needs a busy
core, so the load average is printed beside each section, and the rows on
all cores are the noisiest: with a load average above the core count, a
2-thread row measures the scheduler as much as the code.  The generated code is whatever the
code generator produces at the time of the run; nothing here is tuned for
it.

EOF_HEAD

echo "## Targets (issue 11), in this run"
echo
echo "Counted by bench_peers from the tables below; reported, never failed."
echo
if f=$(file peers.txt 2>/dev/null) && grep -q '^target:' "$f"; then
	echo '```'
	sed -n 's/^target: //p' "$f"
	echo '```'
else
	echo "*No target lines: bench_peers did not finish.*"
	status=1
fi
echo

echo "## Machine, load and memory bandwidth"
echo
echo "The machine as fuselab reads it (engine/machine.h), the load average,"
echo "oneDNN's version and threading runtime, and the STREAM-like probe"
echo "(bench/stream.c, built with the flags generated code gets: -O3"
echo "-march=native -fopenmp -falign-loops=64): copy \`b[i] = a[i]\` and triad"
echo "\`a[i] = b[i] + s*c[i]\` over 128 MiB arrays, GB/s counting the bytes"
echo "read and written, median (min-max) of 10 passes alternating copy and"
echo "triad, on 1 thread and on all cores."
echo
block peers.txt machine
block peers.txt "STREAM"

cat <<'EOF_PEERS'
## Peers: generated matmuls and convolutions against oneDNN

For every distinct matmul of `bert_encoder`, `gpt2_mlp` and
`transformer_decoder` (compound ops such as dense and attention opened
into primitives) and every conv2d of `resnet50_bottleneck` and
`yolov3_residual`, bench_peers builds a graph of that one op, runs the
engine on it under `apollo-l1` up to codegen, compiles the C with the
runner (`cc -O3 -march=native -fopenmp`), loads gen.so into its own
process and calls the kernels itself.  oneDNN gets the same input
buffers: `dnnl_sgemm` (row-major, with the op's transpose flags; the
matrices of a batch shared out among the threads, one single-threaded
sgemm each, so that a call opens one parallel region as the generated
code does) for matmul, a forward-inference direct convolution on
NCHW/OIHW tensors without padding and with the op's strides, dilation and
groups for conv2d.  Columns: `id` (the list above each table says which
sample ops have that shape), the shape, `thr` threads (omp_set_num_threads;
Debian's oneDNN uses the same OpenMP runtime), `krn` kernels of the
fuselab program, GFLOP/s median (min-max) of each side (flops:
2·batch·M·N·K, or 2·N·K·OH·OW·C/groups·R·S), `fuselab/oneDNN` the ratio
of the medians with its range (worst and best pairing of the two spreads),
`rel.err` max |fuselab − oneDNN| / max |oneDNN| over the output (`!` above
1e-3), `reps` interleaved rounds.  The target lines count the shapes that
meet issue 11's targets (matmul ≥ 50% of oneDNN, conv ≥ 30%), by the
median ratio and by the worst pairing; they report, they never fail.

EOF_PEERS
block peers.txt "matmul"
block peers.txt "conv2d"

cat <<'EOF_EPI'
## Fused epilogues

For every dense of `bert_encoder` and `gpt2_mlp`: the graph dense + GELU
(the sample's GELU form) and the graph dense + residual add, both with the
bias, under `apollo-l1`, timed interleaved with the bare matmul of the same
shape (three contenders per round, their order rotating every two rounds
so that each runs in every position equally often; the two fused
programs read the bare matmul's x and w buffers, so all three find the
same operands in the caches).  `krn` is the number of kernels of the
fused program (1: layer 1 put the epilogue in the matmul's kernel);
`overhead` is the median over the rounds of fused / bare in the same
round, − 1 (each round runs the three back to back, so a change of load
falls on both sides of a ratio); `by medns` is fused median / bare
median − 1, the two series taken apart; `quicker` counts the rounds the
fused program won, and `verdict` is *within noise* unless the sign test
over the rounds says otherwise (quicker, or slower, in so many rounds that
chance would do it less than once in 20).  `rel.err` compares the fused
program's output with the reference interpreter on its own inputs,
checked before the buffers are shared.
Target: under 10%.

EOF_EPI
block peers.txt "fused epilogues"

cat <<'EOF_MEM'
## Memory-bound kernels against the copy

The four memory-bound microbenchmarks (`softmax`, `layernorm`,
`bias_gelu`, `chain8`, full size) under `apollo` (one kernel each: layer 2
makes softmax and layernorm one kernel), loaded into bench_peers and timed
interleaved with the STREAM-like copy `b[i] = a[i]` (two 128 MiB arrays,
the same flags as generated code) on 1 thread and on all cores.  `MiB` is
what the program must read and write at least (every input, parameter and
output once), `GB/s` that over the program's median time, `share` the
median over the rounds of the program's GB/s over the copy's in the same
round (`by medns`: over the two medians), `nt-copy` the same copy with
non-temporal stores timed in the same rounds (the way generated code
stores a program output larger than the cores' L2 caches) and `vs nt` the
program's GB/s over its median, `rel.err` the outputs against the
reference interpreter.  The scaling line gives each side's median at 1
thread over its median at all cores.  Target (issue 11, against the plain
copy): a share of at least 60%, scaling with the threads; the `vs nt`
column shows how far a kernel is from a copy that streams as it does.

EOF_MEM
block peers.txt "memory-bound kernels"

cat <<'EOF_ORT'
## Against ONNX Runtime

Layer 2's one-kernel programs for `softmax` and `layernorm` (under
`apollo`) against ONNX Runtime's Softmax and LayerNormalization, and the
whole BERT encoder layer under `apollo-l1` against ONNX Runtime on the same
model: fuselab exports each graph as ONNX with the program's parameter
values as initializers (so that ONNX Runtime may pre-pack weights, as for
a deployed model), and bench_peers drives one warm ONNX Runtime session
(onnxruntime-node from npm, CPU provider, every graph optimisation,
outputs preallocated, no spinning threads) in a Node.js child, timed
interleaved with the generated program on 1 thread and on all cores, on
the same input values.  ONNX Runtime's time is that of `session.run`
alone, measured in its own process (the pipe's round trip is not charged
to it; a run of a 64-element model costs about 0.02 ms there).  `ORT/fl`
is the median over the rounds of ONNX Runtime's time over fuselab's (above
1: fuselab quicker), `quicker` the rounds fuselab was quicker in, the
verdict the sign test over them, and `rel.err` ONNX Runtime's output
against fuselab's, relative to its scale.

EOF_ORT
block peers.txt "ONNX Runtime"

cat <<'EOF_KERN'
## Kernel ladder (bench/bench_kernels.sh)

`fuselab --batch --run --strategy all` on the four memory-bound
microbenchmarks at full size, on BERT's FFN output dense and on the whole
BERT encoder layer (program totals only, 30 rounds): each kernel's
time and GB/s under each strategy, with the runner's own warm-up, repeats
and spread, after the stand-alone copy/triad probe of this run.

EOF_KERN
block kernels.txt

cat <<'EOF_REST'
## The engine's own speed

Layer 1 at scale (bench_layer1: synthetic graphs of growing size through
the pipeline up to layer 1; seconds, ms per op and its growth), the
partition at scale (bench_partition: 1k-100k ops), explorer steps
(bench_steps: forward, backward and random steps on the model samples,
median and maximum) and the explorer's responsiveness (bench_explorer:
open, step, view switch and redraw against their targets).

EOF_REST
echo "### Layer 1"
echo
block layer1.txt
echo "### Partition"
echo
block partition.txt
echo "### Explorer steps"
echo
block steps.txt
echo "### Explorer"
echo
block explorer.txt
exit $status
