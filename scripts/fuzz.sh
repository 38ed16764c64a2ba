#!/bin/sh
# make fuzz, last step: runs each libFuzzer harness build/fuzz/fuzz_NAME
# for SECONDS, its corpus in build/fuzz/corpus/NAME (kept between runs, so
# fuzzing goes on where it stopped) seeded with real inputs: the models of
# ONNX's backend tests (libonnx-testdata) and tests/models/ for onnx_*,
# their input/output .pb files for tensor_*, samples/ for graph_json,
# samples/rules/ and a rules file of its own for rules_json, two lists
# for overrides_json.  A crash, leak or timeout writes the input to
# build/fuzz/crashes/NAME/ and the exit status is 1.  One summary line per
# harness: seconds, runs, coverage, corpus size.
# usage: fuzz.sh SECONDS NAME...
set -u

secs=$1
shift
data=/usr/share/libonnx-testdata/data
status=0

seed() {
	dir=build/fuzz/seeds/$1
	[ -d "$dir" ] && return
	mkdir -p "$dir"
	case $1 in
	onnx*)	for f in "$data"/*/*/model.onnx tests/models/*/model.onnx; do
			[ -f "$f" ] || continue
			cp "$f" "$dir/$(echo "$f" | tr / _)"
		done ;;
	tensor*) for f in "$data"/node/*/test_data_set_0/*.pb; do
			cp "$f" "$dir/$(echo "$f" | tr / _)"
		done ;;
	graph*)	cp samples/*.json "$dir"/ ;;
	rules*)	cp samples/rules/*.json "$dir"/
		printf '{"format": "fuselab-rules/1", "base": "none", "rules": [{"id": "X1", "producer": ["E", "B"], "consumer": ["R"], "result": "R", "stage": "partition", "doc": "d"}]}\n' \
			> "$dir/none.json" ;;
	overrides*)
		printf '{"format": "fuselab-overrides/1", "graph": "g", "overrides": [{"action": "forbid", "ops": ["a", "b"]}, {"action": "force", "ops": ["b", "c.max"]}]}\n' \
			> "$dir/both.json"
		printf '{"format": "fuselab-overrides/1", "overrides": []}\n' \
			> "$dir/empty.json" ;;
	esac
}

# The JSON harnesses get the formats' keywords (fuzz/json.dict).
dict() {
	case $1 in
	graph*|rules*|overrides*) echo "-dict=fuzz/json.dict" ;;
	esac
}

for name in "$@"; do
	bin=build/fuzz/fuzz_$name
	corpus=build/fuzz/corpus/$name
	crashes=build/fuzz/crashes/$name
	log=build/fuzz/$name.log
	seed "$name"
	mkdir -p "$corpus" "$crashes"
	echo "== fuzz $name: $secs s (log $log)"
	before=$(ls "$crashes" | wc -l)
	# fork mode: a crash, leak or timeout is kept and fuzzing goes on,
	# so that one run finds more than the first problem
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
	LSAN_OPTIONS=suppressions=scripts/lsan.supp:print_suppressions=0 \
	"$bin" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
		-max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 \
		$(dict "$name") \
		-malloc_limit_mb=2048 -artifact_prefix="$crashes/" \
		"$corpus" "build/fuzz/seeds/$name" > "$log" 2>&1
	rc=$?
	found=$(($(ls "$crashes" | wc -l) - before))
	last=$(grep -E '^#[0-9]+: cov: ' "$log" | tail -1)
	runs=$(printf '%s\n' "$last" | sed -n 's/.* exec\/s: [0-9]* .*//;s/^#\([0-9]*\):.*/\1/p')
	cov=$(printf '%s\n' "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	echo "fuzz $name: ${secs} s, ${runs:-?} runs, coverage ${cov:-?}," \
	     "corpus $(ls "$corpus" | wc -l) inputs, $found new crashing" \
	     "inputs, exit $rc"
	if [ "$found" -gt 0 ] || [ $rc -ne 0 ]; then
		echo "fuzz $name: FAILED; inputs in $crashes/:" >&2
		ls "$crashes" >&2
		grep -m5 -E 'ERROR|SUMMARY' "$log" >&2
		status=1
	fi
done
exit $status
