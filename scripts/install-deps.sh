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
#                                    against, and ONNX Runtime
#                                    (onnxruntime-node from npm, with
#                                    Node.js when it is missing) in
#                                    build/ort, the peer of the whole
#                                    programs; nothing else needs them
#   scripts/install-deps.sh --memcheck  that, plus valgrind (and GNU
#                                    time, which times each run), for
#                                    make memcheck
set -eu

PACKAGES="build-essential pkg-config libisl-dev libgraphviz-dev libcjson-dev \
libncurses-dev libcmocka-dev tmux graphviz libprotobuf-c-dev \
protobuf-c-compiler libonnx-dev libonnx-testdata python3-onnx"

case "${1:-}" in
"") ;;
--bench)
	PACKAGES="$PACKAGES libdnnl-dev"
	command -v node >/dev/null 2>&1 || PACKAGES="$PACKAGES nodejs"
	command -v npm >/dev/null 2>&1 || PACKAGES="$PACKAGES npm" ;;
--fuzz) PACKAGES="$PACKAGES clang libclang-rt-14-dev" ;;
--memcheck) PACKAGES="$PACKAGES valgrind time" ;;
*)
	echo "fuselab: install-deps.sh: unknown argument '$1' (usage:" \
	     "install-deps.sh [--bench|--fuzz|--memcheck])" >&2
	exit 2 ;;
esac

# ONNX Runtime for make bench: the npm package ships the library; its
# install script would only fetch GPU providers, so it does not run.
# A failure leaves the benchmark without that peer (it says so), not
# without the rest.
ORT_VERSION=1.30.0
ORT_PREFIX="$(dirname "$0")/../build/ort"
install_ort() {
	[ -f "$ORT_PREFIX/node_modules/onnxruntime-node/package.json" ] && return 0
	echo "fuselab: installing onnxruntime-node $ORT_VERSION into build/ort" >&2
	mkdir -p "$ORT_PREFIX" &&
	npm install --ignore-scripts --no-audit --no-fund --silent \
		--prefix "$ORT_PREFIX" "onnxruntime-node@$ORT_VERSION" >&2 ||
	echo "fuselab: warning: onnxruntime-node did not install; make" \
	     "bench runs without ONNX Runtime" >&2
}

missing=""
for p in $PACKAGES; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	[ "${1:-}" = --bench ] && install_ort
	exit 0
fi

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
[ "${1:-}" = --bench ] && install_ort
exit 0
