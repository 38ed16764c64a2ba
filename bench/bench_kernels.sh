#!/bin/sh
# make bench, part 2: generated kernels against the unfused ladder, in one
# run on this machine, beside its measured copy bandwidth.  --strategy all
# includes apollo-l2, so softmax and layernorm show layer 2's one kernel
# against apollo-l1's three, and apollo, so the Inception-style block shows
# layer 3's three pads run side by side against apollo-l2's three kernels.
# usage: bench_kernels.sh FUSELAB STREAM_PROBE
set -eu
fuselab=$1
stream=$2
$stream
for s in softmax layernorm bias_gelu chain8 inception_block; do
	echo "== samples/$s.json (full size)"
	$fuselab --batch samples/$s.json --run --strategy all --repeat 10 --warmup 2 |
		sed -n '/^strategy/,$p'
done
# BERT's FFN output dense with its neighbours: its matmul is a kernel of
# its own under every strategy, so the four times of that kernel should
# agree (layer 1 keeps a lone op's unfused loop nest).
echo "== bench/ffn_output.json (BERT FFN output dense, a lone matmul)"
$fuselab --batch bench/ffn_output.json --run --strategy all --repeat 5 \
	--warmup 1 --timeout 300 |
	grep -E '^(strategy|unfused|xla|apollo-l1|apollo-l2|apollo) |\[ffn_output\.matmul\]'
# The whole BERT encoder layer (issue 11's target: apollo-l1 faster than
# unfused): the programs' totals, interleaved, with 30 rounds -- the
# kernels fusion removes are about a twentieth of the layer's time, so the
# sign test needs more pairs than the microbenchmarks' 10 to tell.
echo "== samples/bert_encoder.json (one encoder layer, program totals)"
$fuselab --batch samples/bert_encoder.json --run --strategy all --repeat 30 \
	--warmup 2 --timeout 300 |
	grep -E '^(strategy|unfused|xla|apollo-l1|apollo-l2|apollo) |^(load|timing):'
