#!/bin/sh
# Installs the Debian packages fuselab needs to build, test and run.
# Called by every make target that builds; quiet when all is present.
# As root it runs apt-get; otherwise it prints the exact command to run
# and exits non-zero, so a build never half-starts without its libraries.
#
#   scripts/install-deps.sh          what make, make test and CI need
#   scripts/install-deps.sh --fuzz   that, plus clang and its libFuzzer
#                                    runtime (libclang-rt-14-dev), for
#                                    make fuzz
#   scripts/install-deps.sh --bench  that, plus oneDNN (libdnnl-dev), the
#                                    peer `make bench` measures the
#                                    generated matmuls and convolutions
#                                    against; nothing else needs it
#   scripts/install-deps.sh --memcheck  that, plus valgrind (and GNU
#                                    time, which times each run), for
#                                    make memcheck
set -eu

PACKAGES="build-essential pkg-config libisl-dev libgraphviz-dev libcjson-dev \
libncurses-dev libcmocka-dev tmux graphviz libprotobuf-c-dev \
protobuf-c-compiler libonnx-dev libonnx-testdata python3-onnx"

case "${1:-}" in
"") ;;
--bench) PACKAGES="$PACKAGES libdnnl-dev" ;;
--fuzz) PACKAGES="$PACKAGES clang libclang-rt-14-dev" ;;
--memcheck) PACKAGES="$PACKAGES valgrind time" ;;
*)
	echo "fuselab: install-deps.sh: unknown argument '$1' (usage:" \
	     "install-deps.sh [--bench|--fuzz|--memcheck])" >&2
	exit 2 ;;
esac

missing=""
for p in $PACKAGES; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done

[ -z "$missing" ] && exit 0

line="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" != 0 ]; then
	echo "fuselab: missing Debian packages:$missing" >&2
	echo "fuselab: run as root:  $line" >&2
	exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "fuselab: missing packages:$missing (and no apt-get to install them)" >&2
	exit 1
fi
echo "fuselab: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >&2
