#!/bin/sh
# make memcheck: the batch pipeline under valgrind's memcheck, on every
# sample and on a few ONNX models (the project's own and small ones from
# ONNX's backend tests, Debian's libonnx-testdata).  The plain build
# (-O2 -g) is checked: the sanitizer build checks the same code under
# ASan, but only what ASan instruments; memcheck also sees uninitialised
# values and everything the libraries do with our memory.
#
# Two kinds of run:
#   pipeline  --interpret, then the engine through codegen with the
#             event log and the state printed (--stage codegen
#             --events), the generated code of every strategy (--emit,
#             one session per strategy through codegen), and the
#             exports: --dot with --schedule-trees, --report, --trace
#             and --export-onnx, into a temporary folder.  ONNX backend
#             tests read their inputs and compare their outputs
#             (--inputs, --expect).
#   run       --run --strategy all: compile, run, verify and time every
#             strategy, with --report and --trace, on small graphs only.
#             The compiler is a program fuselab executes: it is not
#             checked (--trace-children=no).  The kernels run in
#             children that fuselab forks without exec; valgrind cannot
#             let go of those, so they are checked too, and are slow:
#             --repeat 1 --warmup 0 keep them short.
#
# Every process of a run logs to its own file (--log-file=...%p); a run
# fails on a memcheck error or leak (definite, indirect or possible) in
# any of them, or on fuselab's own non-zero exit.  Suppressions
# (scripts/valgrind.supp) cover third-party code only, each with why.
#
# One line per run as it ends (status, file, arguments, errors, leaks,
# seconds), then a summary; both, in the runs' order, also go to OUT.
# The logs stay in build/memcheck/ (LOGS).
#
# usage: memcheck.sh [-j JOBS] [-o OUT] [-d LOGS] [-f REGEX] [FUSELAB]
#   FUSELAB  the binary (default build/plain/fuselab)
#   -f REGEX only the runs whose kind and file match REGEX (grep -E), e.g.
#            -f 'pipeline.*softmax' (to check a fix quickly)
#   -j JOBS  runs side by side (default: the number of cores)
#   -o OUT   also write the table and the summary to OUT
#   -d LOGS  folder of the valgrind logs (default build/memcheck)
# Exit status: 0 when every run was clean, 1 otherwise, 2 on bad usage.
set -eu

jobs=$(nproc 2>/dev/null || echo 2)
out=
logs=build/memcheck
filter=
while getopts j:o:d:f: opt; do
	case $opt in
	j) jobs=$OPTARG ;;
	o) out=$OPTARG ;;
	d) logs=$OPTARG ;;
	f) filter=$OPTARG ;;
	*) echo "usage: memcheck.sh [-j JOBS] [-o OUT] [-d LOGS] [-f REGEX]" \
		"[FUSELAB]" >&2
	   exit 2 ;;
	esac
done
shift $((OPTIND - 1))
fuselab=${1:-build/plain/fuselab}
root=$(cd "$(dirname "$0")/.." && pwd)
data=/usr/share/libonnx-testdata/data/node

if [ ! -x "$fuselab" ]; then
	echo "memcheck: $fuselab is not an executable (run make first)" >&2
	exit 2
fi
if ! command -v valgrind >/dev/null 2>&1 || [ ! -x /usr/bin/time ]; then
	echo "memcheck: valgrind or GNU time (/usr/bin/time) is missing" \
	     "(scripts/install-deps.sh --memcheck installs them)" >&2
	exit 2
fi
fuselab=$(cd "$(dirname "$fuselab")" && pwd)/${fuselab##*/}

work=$(mktemp -d "${TMPDIR:-/tmp}/fl-memcheck-XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$work/r"

# The ONNX backend tests checked: a convolution, a Gemm, a softmax and a
# layer normalisation (opened into primitives), each small.
onnx_tests="test_conv_with_strides_and_asymmetric_padding
test_gemm_all_attributes test_softmax_axis_1
test_layer_normalization_3d_axis1_epsilon_expanded"
# The graphs --run runs: small ones (the kernels run under valgrind).
run_samples="apollo_fig3.json"
run_tests="test_gemm_all_attributes test_softmax_axis_1"

# The runs, one a line: KIND<TAB>FILE<TAB>ARGUMENTS (no tabs inside).
{
	for f in "$root"/samples/*.json; do
		printf 'pipeline\t%s\t\n' "$f"
	done
	m=$root/tests/models/torch_mlp_layernorm
	printf 'pipeline\t%s\t%s\n' "$m/model.onnx" "$(cat "$m/args")"
	for t in $onnx_tests; do
		printf 'pipeline\t%s\t--inputs %s --expect %s\n' \
			"$data/$t/model.onnx" "$data/$t/test_data_set_0" \
			"$data/$t/test_data_set_0"
	done
	for f in $run_samples; do
		printf 'run\t%s\t\n' "$root/samples/$f"
	done
	for t in $run_tests; do
		printf 'run\t%s\t--inputs %s\n' "$data/$t/model.onnx" \
			"$data/$t/test_data_set_0"
	done
} | grep -E -e "${filter:-.}" | awk '{ printf "%03d\t%s\n", NR, $0 }' \
	> "$work/runs"
if [ ! -s "$work/runs" ]; then
	echo "memcheck: no run matches '$filter'" >&2
	exit 2
fi
# the logs of an earlier memcheck go; nothing else in LOGS is touched
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)
rm -f "$logs"/[0-9][0-9][0-9]-*

# One run: N<TAB>KIND<TAB>FILE<TAB>ARGUMENTS on the command line; writes
# "STATUS<TAB>FILE<TAB>ARGS<TAB>ERRORS<TAB>LEAKS<TAB>WALL<TAB>CPU<TAB>WHY" to
# $work/r/N and prints it.
cat > "$work/one.sh" <<'EOF'
#!/bin/sh
fuselab=$1 root=$2 logs=$3 work=$4
n=$(printf '%s' "$5" | cut -f1)
kind=$(printf '%s' "$5" | cut -f2)
file=$(printf '%s' "$5" | cut -f3)
extra=$(printf '%s' "$5" | cut -f4)
tmp=$work/t$n
mkdir -p "$tmp"
case $kind in
pipeline) args="--interpret --stage codegen --events --emit $tmp/emit \
--dot $tmp --schedule-trees --report $tmp/report.json \
--trace $tmp/trace.json --export-onnx $tmp/model.onnx" ;;
run) args="--run --strategy all --repeat 1 --warmup 0 \
--report $tmp/report.json --trace $tmp/trace.json" ;;
esac
name=$(printf '%s' "${file#"$root"/}" | sed 's|^/usr/share/libonnx-testdata/data/||')
log=$logs/$n-$(printf '%s' "$name" | tr '/' '_')
# shellcheck disable=SC2086
/usr/bin/time -f '%e %U %S' -o "$log.time" valgrind --tool=memcheck --leak-check=full \
	--show-leak-kinds=definite,indirect,possible \
	--errors-for-leak-kinds=definite,indirect,possible \
	--error-exitcode=99 --trace-children=no --num-callers=30 \
	--suppressions="$root/scripts/valgrind.supp" \
	--log-file="$log.vg.%p" \
	"$fuselab" --batch $args $extra "$file" > "$log.out" 2>&1
rc=$?
# wall and CPU seconds (user + system, of valgrind and what it runs);
# the CPU time says more on a busy machine
secs=$(awk '{ printf "%.0f\t%.0f", $1, $2 + $3 }' "$log.time")
# memcheck counts each leak's loss record as one error: the other
# errors are the total less those.
errors=$(cat "$log".vg.* | awk '/ERROR SUMMARY:/ { e += $4 }
	/lost in loss record/ { l++ } END { print e - l }')
leaks=$(cat "$log".vg.* | grep -c 'lost in loss record')
why=
if [ "$errors" -ne 0 ] || [ "$leaks" -ne 0 ]; then
	why="see $log.vg.*"
elif [ $rc -ne 0 ]; then
	why="exit status $rc: $(grep -m1 '^fuselab' "$log.out" | cut -c1-120)"
fi
status=ok
[ -n "$why" ] && status=FAIL
args=$(printf '%s' "$args $extra" | sed -e "s|$tmp|TMP|g" \
	-e 's|/usr/share/libonnx-testdata/data/node/|DATA/|g' -e 's/  */ /g')
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$status" "$name" "$args" \
	"$errors" "$leaks" "$secs" "$why" > "$work/r/$n"
awk -F '\t' -f "$work/row.awk" "$work/r/$n"
rm -rf "$tmp"
EOF
chmod +x "$work/one.sh"
# A result as one line: status, file, errors, leaks, seconds (wall and
# CPU), arguments
# (TMP: the run's temporary folder, DATA: ONNX's node tests), why.
cat > "$work/row.awk" <<'EOF'
{ printf "%-4s %-50s errors %s leaks %s %5ss (cpu %ss)  %s%s\n", $1, $2,
	 $4, $5, $6, $7, $3, $8 == "" ? "" : "  -- " $8 }
EOF

n=$(wc -l < "$work/runs")
echo "memcheck: $n runs of $fuselab under valgrind, $jobs at a time" \
     "(logs in $logs)"
t0=$(date +%s)
# OMP_WAIT_POLICY=passive: the kernels' OpenMP threads sleep at barriers;
# valgrind runs one thread at a time, and a spinning one would take it.
OMP_WAIT_POLICY=passive xargs -P "$jobs" -I{} -d '\n' "$work/one.sh" \
	"$fuselab" "$root" "$logs" "$work" {} < "$work/runs"
t1=$(date +%s)

cat "$work"/r/* > "$work/table"
{
	awk -F '\t' -f "$work/row.awk" "$work/table"
	echo
	awk -F '\t' -v wall=$((t1 - t0)) -v jobs="$jobs" '
		{ n++; e += $4; l += $5; s += $6; c += $7; if ($1 != "ok") f++ }
		END { printf "memcheck: %d runs, %d failed; %d errors, %d leaks;" \
			" runs took %d s (%d s CPU); %d s wall, %d at a time\n",
			n, f, e, l, s, c, wall, jobs }' "$work/table"
} > "$work/report"
echo
tail -n 1 "$work/report"
[ -n "$out" ] && cp "$work/report" "$out"
! grep -qv '^ok' "$work/table"
