#!/bin/sh
# soak.sh - differential testing of the whole compiler on many random
# graphs (make soak).
#
# For each seed: `fuselab gen` writes the random graph of that seed, then
# `fuselab --batch --run --strategy all --repeat 1 --warmup 0` compiles
# it under every strategy and checks each program against the reference
# interpreter.  The seed also picks a variant of the options, so that the
# paths off the default one are soaked too:
#   seed % 4 == 0  the defaults
#   seed % 4 == 1  --rules samples/rules/stencil-chains.json
#   seed % 4 == 2  a tiny --sched-budget (layer 1's feedback splits)
#   seed % 4 == 3  a --fuse and a --never-fuse pair of the graph's ops
#                  (drawn from the seed)
# Seeds run in parallel, one per core, at nice 10.
#
# Environment: SOAK_SEEDS (default 300), SOAK_OPS (ops per graph, default
# 16), SOAK_FIRST (first seed, default 1), SOAK_JOBS (default: the
# cores), FUSELAB_BIN (default build/plain/fuselab), SOAK_TIMEOUT
# (seconds per seed, default 600).
#
# Writes build/soak/: SEED.json, SEED.log per seed, and summary.txt: the
# seeds run, passed and failed (each failure with its seed, variant and
# first error line) and the wall time.  Exit status 1 when a seed failed,
# 2 on bad usage.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${FUSELAB_BIN:-$ROOT/build/plain/fuselab}
OUT=$ROOT/build/soak
RULES=$ROOT/samples/rules/stencil-chains.json

# The options of a seed's variant; reads the graph for op names.
variant_args() {
	seed=$1 file=$2
	case $((seed % 4)) in
	0) ;;
	1) echo "--rules $RULES" ;;
	2) echo "--sched-budget $((200 + seed % 7 * 300))" ;;
	3)
		# op names: the "name" fields of the ops (the graph's own
		# name, random-SEED, has a dash and is not matched)
		ops=$(sed -n 's/^[[:space:]]*"name":[[:space:]]*"\([a-z_0-9]*\)",*$/\1/p' \
			"$file")
		n=$(echo "$ops" | wc -l)
		pick() { echo "$ops" | sed -n "$(( $1 % n + 1 ))p"; }
		a=$(pick "$seed") b=$(pick $((seed * 7 + 3)))
		c=$(pick $((seed * 13 + 5))) d=$(pick $((seed * 5 + 1)))
		args=""
		[ "$a" != "$b" ] && args="--fuse $a,$b"
		[ "$c" != "$d" ] && args="$args --never-fuse $c,$d"
		echo "$args"
		;;
	esac
}

variant_name() {
	case $(($1 % 4)) in
	0) echo default ;;
	1) echo stencil-rules ;;
	2) echo sched-budget ;;
	3) echo fuse-pairs ;;
	esac
}

# One seed: writes OUT/SEED.result, "PASS SEED VARIANT" or "FAIL SEED
# VARIANT: first error line".
one_seed() {
	seed=$1 json=$OUT/$1.json log=$OUT/$1.log
	variant=$(variant_name "$seed")
	if ! "$BIN" gen --ops "$OPS" --seed "$seed" -o "$json" >"$log" 2>&1; then
		echo "FAIL $seed $variant: $(head -n 1 "$log")" >"$OUT/$seed.result"
		return
	fi
	args=$(variant_args "$seed" "$json")
	echo "fuselab --batch --run --strategy all --repeat 1 --warmup 0" \
		"$args $json" >"$log"
	# shellcheck disable=SC2086 # args is a list of options
	timeout "$TIMEOUT" "$BIN" --batch --run --strategy all --repeat 1 \
		--warmup 0 $args "$json" >>"$log" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "PASS $seed $variant" >"$OUT/$seed.result"
		return
	fi
	first=$(grep -m 1 -E 'error|verified NO|deviates|mismatch|fuselab:' \
		"$log" | sed 's/^[[:space:]]*//')
	[ $rc -eq 124 ] && first="timed out after $TIMEOUT s"
	[ -n "$first" ] || first="exit status $rc: $(tail -n 1 "$log")"
	echo "FAIL $seed $variant ($args): $first" >"$OUT/$seed.result"
}

if [ "${1:-}" = "--one" ]; then
	OPS=$3 TIMEOUT=$4
	one_seed "$2"
	exit 0
fi

SEEDS=${SOAK_SEEDS:-300}
OPS=${SOAK_OPS:-16}
FIRST=${SOAK_FIRST:-1}
JOBS=${SOAK_JOBS:-$(nproc 2>/dev/null || echo 2)}
TIMEOUT=${SOAK_TIMEOUT:-600}
for v in "$SEEDS" "$OPS" "$FIRST" "$JOBS" "$TIMEOUT"; do
	case $v in
	''|*[!0-9]*)
		echo "soak: SOAK_SEEDS, SOAK_OPS, SOAK_FIRST, SOAK_JOBS and" \
		     "SOAK_TIMEOUT must be whole numbers, got \"$v\"" >&2
		exit 2 ;;
	esac
done
if [ ! -x "$BIN" ]; then
	echo "soak: $BIN not built (make)" >&2
	exit 2
fi
rm -rf "$OUT"
mkdir -p "$OUT" || exit 2
start=$(date +%s)
seq "$FIRST" $((FIRST + SEEDS - 1)) |
	nice -n 10 xargs -P "$JOBS" -I{} sh "$0" --one {} "$OPS" "$TIMEOUT"
wall=$(($(date +%s) - start))

results=$(cat "$OUT"/*.result 2>/dev/null | sort -k2,2n)
passed=$(echo "$results" | grep -c '^PASS')
failed=$(echo "$results" | grep -c '^FAIL')
{
	echo "soak: seeds $FIRST..$((FIRST + SEEDS - 1)), $OPS ops each," \
	     "$JOBS jobs"
	echo "seeds run: $((passed + failed))"
	echo "passed: $passed"
	echo "failed: $failed"
	echo "$results" | grep '^FAIL'
	echo "wall time: ${wall} s"
} >"$OUT/summary.txt"
cat "$OUT/summary.txt"
[ "$failed" -eq 0 ] && [ $((passed + failed)) -eq "$SEEDS" ]
