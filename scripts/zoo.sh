#!/bin/sh
# make zoo: real architectures through fuselab, checked against ONNX
# Runtime.  Not part of make test: the first run installs several GB.
#
# Makes the Python environment (scripts/zoo-setup.sh), exports the models
# with ONNX Runtime's outputs beside them (scripts/zoo.py, into
# build/zoo/<name>/; a model exported already is kept), then for each
# model, each step under a time limit and a memory cap:
#   import   fuselab --check: the ONNX nodes, fuselab's ops, the opaque
#            (custom) ops, seconds;
#   codegen  fuselab --batch --stage codegen --strategy apollo: seconds of
#            the whole compiler (partition, layers 1-3, code generation);
#   run      fuselab --batch --run --strategy all --inputs D --expect D:
#            the interpreter and every strategy's compiled program against
#            ONNX Runtime's outputs at rtol 1e-3 and an atol of the
#            model's own (column atol): 1e-5, or more where PyTorch and
#            ONNX Runtime themselves disagree by more on the same inputs
#            (zoo.py's torch_vs_ort_max_abs in meta.json: 4e-5 for
#            ResNet-50), as --expect-atol;
#   export   fuselab --export-onnx, then scripts/zoo_export_check.py:
#            onnx.checker (full check) on it, and ONNX Runtime run on it
#            reproduces ONNX Runtime's outputs of the model.
# Prints one table row per model, the reasons of what failed below it,
# and writes the whole to build/zoo/table.txt; every step's output is in
# build/zoo/<name>/logs/.  With -l, the other models keep the rows of
# their latest run.
#
# usage: zoo.sh [-t SECONDS] [-m SIZE] [-l NAMES] [-s] [FUSELAB]
#   FUSELAB   the binary (default build/fuselab)
#   -t SECONDS  time limit of each step of a model (default 1800)
#   -m SIZE     --max-memory of fuselab (default 8G); the address space
#               of each step is capped at twice that, and at most 3/4 of
#               the machine's memory (ulimit -v): --max-memory bounds a
#               run's tensors, not what the compiler holds (ViT-B/16's
#               --run --strategy all peaks at 3.6 GB resident;
#               docs/zoo-results.md, "Memory of the run step")
#   -l NAMES    only these models, comma-separated (zoo.py --list)
#   -s          skip the setup and the export: the models in build/zoo
# Exit status: 0 when the table was made (whatever it says), 1 when the
# environment or the export could not be made, 2 on bad usage.
set -eu

limit=1800
mem=8G
only=
skip=
usage() {
	echo "usage: zoo.sh [-t SECONDS] [-m SIZE] [-l NAMES] [-s] [FUSELAB]" >&2
	exit 2
}
while getopts t:m:l:sh opt; do
	case $opt in
	t) limit=$OPTARG ;;
	m) mem=$OPTARG ;;
	l) only=$OPTARG ;;
	s) skip=1 ;;
	h) sed -n '2,/^set -eu/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
	   exit 0 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
case $limit in ''|*[!0-9]*) echo "zoo: -t wants whole seconds" >&2; usage ;; esac

root=$(cd "$(dirname "$0")/.." && pwd)
fuselab=${1:-build/fuselab}
case $fuselab in /*) ;; *) fuselab=$PWD/$fuselab ;; esac
zoo=$root/build/zoo
py=$zoo/venv/bin/python
table=$zoo/table.txt

say() { echo "zoo: $*" >&2; }

if [ ! -x "$fuselab" ]; then
	say "$fuselab is not an executable (run make first)"
	exit 2
fi
# twice --max-memory's size in KiB, at most 3/4 of the memory, for
# ulimit -v (see -m)
kib=$(echo "$mem" | awk '{
	n = $0 + 0; u = toupper(substr($0, length($0)))
	if (u == "K") n *= 1; else if (u == "M") n *= 1024;
	else if (u == "G") n *= 1048576; else n /= 1024
	printf "%d", 2 * n }')
phys=$(awk '/^MemTotal:/ { printf "%d", $2 * 3 / 4 }' /proc/meminfo 2>/dev/null)
[ -z "$phys" ] || [ "$kib" -le "$phys" ] || kib=$phys
if [ "$kib" -le 0 ]; then
	say "-m: expected a size such as 8G, got '$mem'"
	usage
fi

if [ -z "$skip" ]; then
	"$root/scripts/zoo-setup.sh" || exit 1
	say "exporting the models that are not yet in build/zoo"
	"$py" "$root/scripts/zoo.py" ${only:+--only "$only"} ||
		say "some models did not export (see above); the table says which"
fi

# all: the zoo's models, in order; models: those to run now
if [ -x "$py" ]; then
	all=$("$py" "$root/scripts/zoo.py" --list)
else
	all=$(cd "$zoo" 2>/dev/null && for d in */model.onnx; do
		[ -f "$d" ] && echo "${d%/model.onnx}"; done)
fi
models=$all
[ -z "$only" ] || models=$(echo "$only" | tr ',' ' ')
if [ -z "$models" ]; then
	say "no models in $zoo (run without -s)"
	exit 1
fi

# limited LOG CMD...: CMD under the time limit and the memory cap, its
# output into LOG; sets rc and secs.
limited() {
	log=$1
	shift
	t0=$(date +%s.%N)
	set +e
	# dash and bash both have ulimit -v (POSIX does not say)
	# shellcheck disable=SC3045
	( ulimit -v "$kib" 2>/dev/null; exec timeout -k 10 "$limit" "$@" ) \
		> "$log" 2>&1
	rc=$?
	set -e
	secs=$(echo "$t0 $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
}

# The first line of LOG that says what went wrong, without "fuselab: "
# and the model's path.
why() {
	grep -m1 -E "${2:-fuselab:|error|MISMATCH}" "$1" |
		sed -e 's/^fuselab: //' -e "s|$zoo/||g" -e 's|^[^ ]*model.onnx: ||' |
		cut -c1-220
}

# The model's absolute tolerance against ONNX Runtime: 1e-5, or the
# largest difference between PyTorch's and ONNX Runtime's outputs on the
# same inputs (META's torch_vs_ort_max_abs) when that is larger: two
# float runtimes that differ by it bound what float rounding alone does.
model_atol() {
	sed -n 's/.*"torch_vs_ort_max_abs": *\([0-9.eE+-]*\).*/\1/p' "$1" \
		2>/dev/null | awk '{ d = $1 + 0 } END {
			printf "%.2g\n", (d > 1e-5 ? d : 1e-5) }'
}

strategies="unfused xla apollo-l1 apollo-l2 apollo"
# shellcheck disable=SC2086
n_models=$(echo $models | wc -w)
k=0
for m in $models; do
	k=$((k + 1))
	d=$zoo/$m
	logs=$d/logs
	# this model's row and notes, kept for the table of later runs
	# that leave it out (-l)
	rows=$logs/row.txt
	notes=$logs/notes.txt
	mkdir -p "$logs"
	: > "$rows"
	: > "$notes"
	nodes=- ops=- opaque=- t_import=- t_codegen=- atol=- interp=- export=-
	res=
	for s in $strategies; do res="$res -"; done
	row() {
		# shellcheck disable=SC2086
		printf '%-21s %5s %5s %6s %7s %8s %7s %6s %4s %4s %4s %4s %4s %6s\n' \
			"$m" "$nodes" "$ops" "$opaque" "$t_import" "$t_codegen" \
			"$atol" "$interp" $res "$export" >> "$rows"
	}
	note() { printf '%s: %s\n' "$m" "$*" >> "$notes"; }
	if [ ! -f "$d/model.onnx" ]; then
		note "not exported (scripts/zoo.py failed on it: see its output)"
		row
		continue
	fi
	nodes=$(sed -n 's/.*"onnx_nodes": \([0-9]*\).*/\1/p' "$d/meta.json" \
		2>/dev/null)
	args=
	[ -f "$d/args" ] && args=$(cat "$d/args")
	data=$d/test_data_set_0
	atol=$(model_atol "$d/meta.json")

	say "[$k/$n_models] $m: import"
	# shellcheck disable=SC2086
	limited "$logs/import.log" "$fuselab" --check $args "$d/model.onnx"
	t_import=$secs
	nodes=$(sed -n 's/^onnx nodes: \([0-9]*\).*/\1/p' "$logs/import.log")
	[ -n "$nodes" ] || nodes=$(sed -n 's/.*"onnx_nodes": \([0-9]*\).*/\1/p' \
		"$d/meta.json" 2>/dev/null)
	if [ $rc -ne 0 ]; then
		ops=FAIL
		note "import: $(why "$logs/import.log")"
		row
		continue
	fi
	ops=$(sed -n 's/^ops: \([0-9]*\).*/\1/p' "$logs/import.log")
	opaque=$(sed -n 's/.*custom: \([0-9]*\).*/\1/p' "$logs/import.log")

	say "[$k/$n_models] $m: export back to ONNX"
	# shellcheck disable=SC2086
	limited "$logs/export.log" "$fuselab" --export-onnx "$d/export.onnx" \
		$args "$d/model.onnx"
	if [ $rc -ne 0 ]; then
		export=FAIL
		note "export: $(why "$logs/export.log")"
	elif [ ! -x "$py" ]; then
		export=wrote
	elif "$py" "$root/scripts/zoo_export_check.py" "$d/export.onnx" \
		"$data" "$atol" >> "$logs/export.log" 2>&1; then
		export=ok
	else
		export=FAIL
		note "export: $(tail -n 1 "$logs/export.log" | cut -c1-200)"
	fi
	rm -f "$d/export.onnx"

	say "[$k/$n_models] $m: codegen (apollo)"
	# shellcheck disable=SC2086
	limited "$logs/codegen.log" "$fuselab" --batch --stage codegen \
		--strategy apollo --max-memory "$mem" $args "$d/model.onnx"
	t_codegen=$secs
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		t_codegen=">$limit"
		note "codegen: no program within $limit s"
	elif [ $rc -ne 0 ]; then
		t_codegen=FAIL
		note "codegen: $(why "$logs/codegen.log")"
	fi

	say "[$k/$n_models] $m: run every strategy against ONNX Runtime" \
	    "(limit $limit s)"
	# shellcheck disable=SC2086
	limited "$logs/run.log" "$fuselab" --batch --run --strategy all \
		--repeat 1 --warmup 0 --max-memory "$mem" $args \
		--inputs "$data" --expect "$data" --expect-atol "$atol" \
		"$d/model.onnx"
	if grep -q '^expect .*: MISMATCH' "$logs/run.log"; then
		interp=no
		note "interpreter: $(why "$logs/run.log" '^expect .*MISMATCH')"
	elif grep -q '^expect .*: ok' "$logs/run.log"; then
		interp=yes
	fi
	res=
	for s in $strategies; do
		if grep -q "^$s *vs expected: ok" "$logs/run.log"; then
			r=yes
		elif grep -q "^$s *vs expected: MISMATCH" "$logs/run.log"; then
			r=no
			note "$s: $(grep -m1 "^$s *vs expected: MISMATCH" \
				"$logs/run.log" | sed 's/^[^:]*: //' | cut -c1-220)"
		elif grep -q -E "^$s +[0-9]+ kernels  |strategy $s: " \
			"$logs/run.log"; then
			# a status instead of times, or the engine's error
			r=FAIL
			note "$s: $(grep -m1 -E "^$s +[0-9]+ kernels  |strategy $s: " \
				"$logs/run.log" | sed -e 's/.*fuselab: //' \
				-e "s|$zoo/||g" | cut -c1-220)"
		else
			r=-
		fi
		res="$res $r"
	done
	if [ $rc -eq 124 ] || { [ $rc -eq 137 ] &&
		[ "$(echo "$secs $limit" | awk '{ print ($1 >= $2) }')" = 1 ]; }; then
		note "run: stopped after $limit s (the strategies marked - did" \
		     "not finish)"
	elif [ $rc -eq 137 ]; then
		note "run: killed (SIGKILL) after $secs s, before the limit: the" \
		     "kernel's OOM killer (see dmesg)"
	elif [ $rc -ne 0 ] && [ $rc -ne 1 ]; then
		note "run: exit status $rc: $(why "$logs/run.log")"
	elif [ $rc -eq 1 ] && ! grep -q 'vs expected' "$logs/run.log"; then
		note "run: $(why "$logs/run.log")"
	fi
	row
done

{
	echo "make zoo: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores," \
	     "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
	if [ -x "$py" ]; then
		"$py" -c 'import torch, onnxruntime, onnx
print("torch %s, onnxruntime %s, onnx %s" % (torch.__version__,
      onnxruntime.__version__, onnx.__version__))' 2>/dev/null || true
	fi
	echo "limits per step: $limit s, --max-memory $mem"
	echo
	printf '%-21s %5s %5s %6s %7s %8s %7s %6s %4s %4s %4s %4s %4s %6s\n' \
		model "ONNX" fl opaque import codegen atol interp unf xla l1 l2 apol export
	printf '%-21s %5s %5s %6s %7s %8s %7s %6s %4s %4s %4s %4s %4s %6s\n' \
		"" nodes ops ops s s "" "=ORT" "" "" "" "" "" ""
	# every model's latest row, in the zoo's order
	for m in $all; do
		[ -f "$zoo/$m/logs/row.txt" ] && cat "$zoo/$m/logs/row.txt"
	done
	echo
	echo "atol: the absolute tolerance (rtol 1e-3): 1e-5, or PyTorch's own"
	echo "largest difference from ONNX Runtime on these inputs when larger."
	echo "interp, unf .. apol: the interpreter's and each strategy's outputs"
	echo "against ONNX Runtime's (yes, no: a mismatch, FAIL: did not"
	echo "compile or run, -: not reached); export: --export-onnx passes"
	echo "onnx.checker's full check and ONNX Runtime run on the export"
	echo "reproduces its outputs of the model (rtol 1e-3, atol as above)."
	echo
	for m in $all; do
		[ -f "$zoo/$m/logs/notes.txt" ] && cat "$zoo/$m/logs/notes.txt"
	done
} > "$table"
cat "$table"
