#!/bin/sh
# check-layers.sh [ROOT] - the include rules between layers (DESIGN 2).
#
#   (a) nothing under engine/ includes a curses header, or a header that
#       lives in app/, views/ or exporters/: the engine never draws and
#       never depends on its front ends;
#   (b) nothing under views/ or exporters/ includes an engine-internal
#       header (one under engine/ whose name ends in _impl.h): they read
#       the engine only through the header each stage offers.
#
# ROOT defaults to the repository this script lives in.  A quoted include
# is resolved as the build resolves it: next to the including file, then
# in ROOT, then in the folders the Makefile passes with -I (every folder
# under engine/, app/, views/, exporters/).  Each violation is printed to
# stderr as "file:line: #include <name>: why" and the exit status is 1;
# otherwise one OK line is printed.
set -u

ROOT=${1:-$(cd "$(dirname "$0")/.." && pwd)}
if [ ! -d "$ROOT/engine" ]; then
	echo "check-layers: $ROOT has no engine/ folder" >&2
	exit 2
fi
cd "$ROOT" || exit 2

INC_DIRS="$(find engine -type d | sort) app views exporters"

# Prints where a quoted include `name` of `file` resolves, relative to
# ROOT; nothing when it is not in the tree (a system header).
resolve() {
	for d in "$(dirname "$1")" . $INC_DIRS; do
		if [ -f "$d/$2" ]; then
			realpath -m --relative-to=. "$d/$2"
			return
		fi
	done
}

hits=$(mktemp) || exit 2
found=$(mktemp) || exit 2
trap 'rm -f "$hits" "$found"' EXIT
files=$(find engine views exporters -type f \( -name '*.c' -o -name '*.h' \) \
	2>/dev/null | sort)
n_files=$(printf '%s\n' "$files" | grep -c .)
# file:line:text of every #include
# shellcheck disable=SC2086
[ -n "$files" ] && grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' \
	$files > "$hits"

while IFS= read -r hit; do
	file=${hit%%:*}
	rest=${hit#*:}
	line=${rest%%:*}
	text=${rest#*:}
	layer=${file%%/*}
	name=$(printf '%s\n' "$text" | sed 's/^[^<"]*[<"]\([^>"]*\)[>"].*/\1/')
	case $text in
	*'#'*include*'<'*) shown="<$name>" where= ;;
	*) shown="\"$name\"" where=$(resolve "$file" "$name") ;;
	esac
	why=
	case $layer/$name in
	engine/curses.h | engine/ncurses.h | engine/ncursesw/* | \
	engine/ncurses/* | engine/*/curses.h | engine/panel.h | \
	engine/menu.h | engine/form.h)
		why="the engine must not use curses (only app/ draws)" ;;
	esac
	case $layer/$where in
	engine/app/* | engine/views/* | engine/exporters/*)
		why="the engine must not include a header of ${where%%/*}/ ($where)" ;;
	views/engine/*_impl.h | exporters/engine/*_impl.h)
		why="$layer/ must not include an engine-internal header ($where): use the stage's public header" ;;
	esac
	[ -n "$why" ] && echo "$file:$line: #include $shown: $why"
done < "$hits" > "$found"

if [ -s "$found" ]; then
	cat "$found" >&2
	echo "check-layers: $(grep -c . "$found") include(s) break the layer rules of DESIGN 2" >&2
	exit 1
fi
echo "check-layers: OK, $n_files files under engine/, views/, exporters/ include nothing across layers"
