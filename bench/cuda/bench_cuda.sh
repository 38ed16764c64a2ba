#!/bin/sh
# make bench-cuda: the strategy ladder on the GPU (--target cuda) for the
# microbenchmarks and a BERT encoder layer, beside a device-to-device copy
# measured in the same run (copy_bw.cu, CUDA events), into
# build/bench/cuda/*.txt and bench/RESULTS-cuda.md: the GPU, the date, each
# strategy's time and each fused kernel's bandwidth against the copy's.
# Without nvcc or without a GPU it says so and exits 0, writing nothing.
# usage: bench_cuda.sh FUSELAB [OUT.md]
set -eu
fuselab=$1
results=${2:-bench/RESULTS-cuda.md}
here=$(dirname "$0")
out=build/bench/cuda
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}

if ! [ -x "$nvcc" ] && ! command -v "$nvcc" >/dev/null 2>&1; then
	echo "bench-cuda: nvcc not found (set NVCC or install the CUDA toolkit): nothing measured"
	exit 0
fi
mkdir -p $out
# for the GPU found; without one nvcc refuses -arch=native, and sm_90
# builds a copy_bw that says there is no device
"$nvcc" -O3 -std=c++17 -arch=native -o $out/copy_bw "$here/copy_bw.cu" \
	2>/dev/null ||
	"$nvcc" -O3 -std=c++17 -arch=sm_90 -o $out/copy_bw "$here/copy_bw.cu"
set +e
$out/copy_bw > $out/copy-before.txt
rc=$?
set -e
if [ $rc -eq 2 ]; then
	echo "bench-cuda: no CUDA device on this machine: nothing measured"
	exit 0
fi
[ $rc -eq 0 ] || { cat $out/copy-before.txt; exit 1; }
cat $out/copy-before.txt

samples="softmax layernorm bias_gelu chain8 bert_encoder"
for s in $samples; do
	echo "== samples/$s.json --target cuda"
	$fuselab --batch samples/$s.json --run --target cuda --strategy all \
		--repeat 10 --warmup 2 --timeout 300 | tee $out/$s.txt
	if grep -q "no CUDA device" $out/$s.txt; then
		echo "bench-cuda: fuselab found no CUDA device: nothing measured"
		exit 1
	fi
done
$out/copy_bw > $out/copy-after.txt
cat $out/copy-after.txt

# The copy bandwidth: the median of the two measurements around the runs.
copy_of() { sed -n 's/^copy: \([0-9.]*\) GB\/s.*/\1/p' "$1"; }
before=$(copy_of $out/copy-before.txt)
after=$(copy_of $out/copy-after.txt)
copy=$(echo "$before $after" | awk '{ printf "%.1f", ($1 + $2) / 2 }')
gpu=$(sed -n 's/^device: //p' $out/copy-before.txt)

{
	echo "# fuselab on the GPU (make bench-cuda)"
	echo
	echo "GPU: $gpu. Date: $(date -u '+%Y-%m-%d %H:%M UTC')." \
	     "fuselab $(git rev-parse --short HEAD 2>/dev/null || echo '?')."
	echo
	echo "Device-to-device copy (bench/cuda/copy_bw.cu, 1 GiB, CUDA events," \
	     "bytes read + written): $before GB/s before the runs, $after GB/s" \
	     "after; $copy GB/s is the reference below."
	echo "Kernel times are CUDA-event times of each kernel's launches on" \
	     "device-resident tensors (no transfers), median of 10 rounds."
	for s in $samples; do
		echo
		echo "## $s"
		echo
		echo "| strategy | kernels | median ms | vs unfused |"
		echo "|---|---|---|---|"
		awk '/^(unfused|xla|apollo-l1|apollo-l2|apollo) / {
			rest = $0; sub(/^[^)]*\)/, "", rest); sub(/ +max abs.*/, "", rest)
			sub(/^ +/, "", rest)
			printf "| %s | %s | %s | %s |\n", $1, $2, $4, rest }' $out/$s.txt
		echo
		echo "Fused kernels (2 ops or more):"
		echo
		echo "| strategy | kernel | ops | median ms | GB/s | % of copy |"
		echo "|---|---|---|---|---|---|"
		awk -v copy="$copy" '
			/^(unfused|xla|apollo-l1|apollo-l2|apollo) / { st = $1 }
			/^    fl_k/ && $2 >= 2 {
				bw = 0
				for (i = 1; i < NF; i++) if ($(i + 1) == "GB/s") bw = $i
				pct = copy > 0 ? 100 * bw / copy : 0
				printf "| %s | %s | %s | %s | %s | %.0f%% |\n", st, $1,
				       $2, $4, bw, pct }' \
			$out/$s.txt
	done
} > "$results"
echo "wrote $results"
