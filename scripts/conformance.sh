#!/bin/sh
# make conformance: ONNX's own backend tests (Debian's libonnx-testdata)
# through fuselab.  Each test is a model.onnx with test_data_set_N/
# folders of input_K.pb and output_K.pb; for each data set fuselab imports
# the model, runs the reference interpreter on the inputs and compares its
# outputs with the expected ones at ONNX's tolerances (--expect), and
# compiles, runs and verifies every strategy's kernels against the
# interpreter (--run --strategy all).
#
# A test is skipped, with the reason, when the importer cannot model it:
# an unsupported op (one that would become a `custom` op), element type
# or attribute.  Everything else that is not a pass is a failure, with
# fuselab's error.  A test skipped for a shape input fed at run time (a
# value an op needs at import, such as a Reshape's shape, given as a
# graph input) is tried again on each data set with --bind-inputs SET:
# the model specialised to the test's values; when that passes it is a
# PASS noted "(inputs needed at import bound from the test data)", and
# the totals count such passes.  One line per test, then the totals and the skipped
# tests grouped by reason.
#
# The project's own real models (tests/models/<name>/model.onnx, the
# options they need in <name>/args, e.g. --input-shape) run the same way
# as "models/<name>"; one without test_data_set_N/ folders is run on
# generated inputs and must verify under every strategy.
#
# usage: conformance.sh [-j JOBS] [-l LIST] [-o OUT] [FUSELAB [DATA]]
#   FUSELAB  the binary (default build/fuselab)
#   DATA     the testdata folder (default /usr/share/libonnx-testdata/data)
#   -l LIST  only the tests named in LIST, one "group/test" per line
#            (e.g. node/test_abs; # starts a comment)
#   -o OUT   also write the table to OUT
#   -j JOBS  tests run side by side (default: the number of cores)
# Exit status: 0 when no test failed, 1 otherwise, 2 on bad usage.
set -eu

jobs=$(nproc 2>/dev/null || echo 2)
list=
out=
while getopts j:l:o: opt; do
	case $opt in
	j) jobs=$OPTARG ;;
	l) list=$OPTARG ;;
	o) out=$OPTARG ;;
	*) echo "usage: conformance.sh [-j JOBS] [-l LIST] [-o OUT]" \
		"[FUSELAB [DATA]]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
fuselab=${1:-build/fuselab}
data=${2:-/usr/share/libonnx-testdata/data}
models=$(cd "$(dirname "$0")/.." && pwd)/tests/models

if [ ! -x "$fuselab" ]; then
	echo "conformance: $fuselab is not an executable (run make first)" >&2
	exit 2
fi
if [ ! -d "$data/node" ]; then
	echo "conformance: $data has no node/ folder (Debian package" \
	     "libonnx-testdata)" >&2
	exit 2
fi
if [ -n "$list" ] && [ ! -r "$list" ]; then
	echo "conformance: cannot read the list $list" >&2
	exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/fl-conformance-XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# The tests to run, "group/test", sorted.
if [ -n "$list" ]; then
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$list"
else
	for d in "$data"/node/* "$data"/pytorch-converted/* \
		 "$data"/pytorch-operator/* "$data"/simple/*; do
		[ -f "$d/model.onnx" ] && echo "${d#"$data"/}"
	done
	for d in "$models"/*; do
		[ -f "$d/model.onnx" ] && echo "models/${d##*/}"
	done
fi | sort > "$work/tests"

# One test: writes "PASS|FAIL|SKIP<TAB>group/test<TAB>reason" to
# $work/r/<n>.  Called by xargs, one test per call.
cat > "$work/one.sh" <<'EOF'
#!/bin/sh
fuselab=$1 data=$2 models=$3 work=$4 t=$5
case $t in
models/*) dir=$models/${t#models/} ;;
*) dir=$data/$t ;;
esac
# the options a model needs (tests/models/<name>/args)
args=
[ -f "$dir/args" ] && args=$(cat "$dir/args")
res=$work/r/$(echo "$t" | tr / _)
log=$work/l/$(echo "$t" | tr / _)

# fuselab's line naming the inputs bound at import (--bind-inputs).
bound_line='bound at import to their given values\|none bound$'

# The first line of $log that names the problem, without "fuselab: ".
why() {
	grep -v "$bound_line" "$log" | grep -m1 -E "$1" |
		sed -e 's/^fuselab: //' -e "s|$dir/||g" | cut -c1-200
}

if [ ! -f "$dir/model.onnx" ]; then
	printf 'FAIL\t%s\tno model.onnx\n' "$t" > "$res"
	exit 0
fi
# check [SET]: imports the model (with SET: its inputs that an op needs
# at import bound to SET's values, --bind-inputs) and sets verdict to
# ok, SKIP or FAIL, with the reason in r; runtime is set when the import
# skipped for want of a value known at import (a shape input fed at run
# time), which binding the test's inputs may give.
check() {
	# shellcheck disable=SC2086
	"$fuselab" --check $args ${1:+--bind-inputs "$1"} "$dir/model.onnx" \
		> "$log" 2>&1
	rc=$?
	verdict=ok r= runtime=
	# The import's message without the path and the node's name:
	# "(OpType): what" (not the line naming the bound inputs).
	msg=$(grep '^fuselab: ' "$log" | grep -v "$bound_line" | head -n 1 |
		sed -e 's/^fuselab: //' -e "s|^$dir/model.onnx: ||" \
		    -e 's/^node [^ ]* (/(/')
	if [ $rc -ne 0 ]; then
		op=$(printf '%s\n' "$msg" | sed -n 's/^(\([A-Za-z0-9]*\)).*/\1/p')
		case $msg in
		*"must be known at import"*|*"computed at run time"*)
			runtime=1 ;;
		esac
		case $msg in
		*"is not supported"*"cannot be kept"*|*"is not supported, and its output"*|\
		*"cannot be modelled, and its output"*)
			r="unsupported op: $op" ;;
		*"on the data path"*|*"element type"*"not supported"*|\
		*"computes in f32"*)
			r="unsupported type: $msg" ;;
		*"must be known at import"*)
			r="unsupported: a shape input computed at run time ($op)" ;;
		*"fuselab needs extents >= 1"*)
			r="unsupported: an empty (0-extent) tensor" ;;
		*"dynamic dimensions"*)
			r="unsupported: an input with dynamic dimensions and no values" ;;
		*"fuselab computes its first output only"*)
			r="unsupported: ${msg#*: }" ;;
		*"not supported"*|*unsupported*|*"is supported"*|*"windows only"*)
			r="unsupported attribute or form: $msg" ;;
		*)	r= ;;
		esac
		if [ -n "$r" ]; then
			verdict=SKIP
		else
			verdict=FAIL r="import: $msg"
		fi
		return
	fi
	custom=$(grep -m1 -E 'cannot be modelled and (is|are) opaque:' "$log" |
		sed 's/.* opaque: *//')
	if [ -n "$custom" ]; then
		case $custom in
		*"computed at run time"*) runtime=1 ;;
		esac
		verdict=SKIP
		r="unsupported op: $custom (an opaque custom op: imports, cannot run)"
	fi
}

# run DATASET [bind]: the run on the inputs of DATASET (none: generated
# ones), checked against its outputs; with bind, the inputs an op needs
# at import bound to DATASET's values; 0 when every strategy verified.
run() {
	# shellcheck disable=SC2086
	"$fuselab" --batch --run --strategy all --repeat 1 --warmup 0 $args \
		${1:+--inputs "$1" --expect "$1"} \
		${2:+--bind-inputs "$1"} "$dir/model.onnx" \
		> "$log" 2>&1
	rc=$?
	# ONNX 1.12's data sets of test_castlike_*BFLOAT16* give the
	# unused "like" input shape [1] where their model declares [3,4]:
	# the test contradicts itself, a skip rather than a failure (an
	# output's shape is fuselab's own and stays a failure)
	if [ $rc -ne 0 ] && grep -q '/input_[0-9]*\.pb: tensor .* has shape .* where the graph.s is' "$log"; then
		r=$(why 'has shape')
		printf 'SKIP\t%s\ttest data disagrees with the model: %s\n' \
			"$t" "$r" > "$res"
		return 1
	fi
	if [ $rc -ne 0 ]; then
		r=$(why 'MISMATCH|error|fuselab:|verified no|deviates')
		printf 'FAIL\t%s\t%s: %s\n' "$t" "${1:+${1##*/}}" \
			"${r:-exit status $rc}" > "$res"
		return 1
	fi
	if [ -n "$1" ] && ! grep -q '^expect .*: ok' "$log"; then
		printf 'FAIL\t%s\t%s: no output was compared\n' "$t" \
			"${1##*/}" > "$res"
		return 1
	fi
	if ! grep -q 'verified yes' "$log" || grep -q 'verified no' "$log"
	then
		printf 'FAIL\t%s\t%s: not every strategy verified\n' "$t" \
			"${1:+${1##*/}}" > "$res"
		return 1
	fi
}

check
if [ $verdict != ok ] && [ -n "$runtime" ] && \
   [ -d "$dir/test_data_set_0" ]; then
	# a shape input fed at run time: each data set with the inputs the
	# import needs bound to its values (the model specialised to them)
	for set in "$dir"/test_data_set_*; do
		[ -d "$set" ] || continue
		check "$set"
		if [ $verdict != ok ]; then
			printf '%s\t%s\t%s\n' $verdict "$t" "$r" > "$res"
			exit 0
		fi
		run "$set" bind || exit 0
	done
	printf 'PASS\t%s\t(inputs needed at import bound from the test data)\n' "$t" \
		> "$res"
	exit 0
fi
if [ $verdict != ok ]; then
	printf '%s\t%s\t%s\n' $verdict "$t" "$r" > "$res"
	exit 0
fi
sets=0
for set in "$dir"/test_data_set_*; do
	[ -d "$set" ] || continue
	sets=$((sets + 1))
	run "$set" || exit 0
done
if [ $sets -eq 0 ]; then
	run "" || exit 0
fi
printf 'PASS\t%s\t\n' "$t" > "$res"
EOF
chmod +x "$work/one.sh"
mkdir -p "$work/r" "$work/l"

n=$(wc -l < "$work/tests")
echo "conformance: $n ONNX backend tests from $data, $jobs at a time" >&2
xargs -P "$jobs" -I{} "$work/one.sh" "$fuselab" "$data" "$models" "$work" {} \
	< "$work/tests"

cat "$work"/r/* 2>/dev/null | sort -k2 > "$work/table"
{
	awk -F '\t' '{ printf "%-4s %-60s %s\n", $1, $2, $3 }' "$work/table"
	echo
	awk -F '\t' '{ n[$1]++ }
		$1 == "PASS" && $3 ~ /bound/ { bound++ } END {
		printf "passed %d (%d with inputs bound at import), " \
		       "failed %d, skipped %d of %d\n", n["PASS"], bound,
		       n["FAIL"], n["SKIP"], NR }' "$work/table"
	echo
	echo "skipped, by reason:"
	awk -F '\t' '$1 == "SKIP" { print $3 }' "$work/table" | sed -E \
		-e 's/^(unsupported op): .*/\1/' \
		-e 's/^(unsupported (type|attribute or form)): .*/\1/' \
		-e 's/^(unsupported: a shape input computed at run time).*/\1/' \
		-e 's/^unsupported: output [0-9]+ of .*/unsupported: a later output of a node/' \
		-e 's/^(test data disagrees with the model): .*/\1/' |
		sort | uniq -c | sort -rn
	echo
	echo "unsupported ops, by tests skipped:"
	awk -F '\t' '$1 == "SKIP" && $3 ~ /^unsupported op: / { print $3 }' \
		"$work/table" | sed -E 's/^unsupported op: ([A-Za-z0-9]+).*/\1/' |
		sort | uniq -c | sort -rn | awk '{ printf "%s %s, ", $2, $1 }
			END { print "" }' | fold -s -w 78
} > "$work/report"
cat "$work/report"
[ -n "$out" ] && cp "$work/report" "$out"
! grep -q '^FAIL' "$work/table"
