#!/bin/sh
# make bench, part 2: generated kernels against the unfused ladder, in one
# run on this machine, beside its measured copy bandwidth.
# usage: bench_kernels.sh FUSELAB STREAM_PROBE
set -eu
fuselab=$1
stream=$2
$stream
for s in softmax layernorm bias_gelu chain8; do
	echo "== samples/$s.json (full size)"
	$fuselab --batch samples/$s.json --run --strategy all --repeat 10 --warmup 2 |
		sed -n '/^strategy/,$p'
done
