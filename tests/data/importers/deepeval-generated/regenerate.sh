#!/bin/sh
# Regenerate this folder's fixtures with deepeval itself, offline: installs deepeval into a
# throwaway virtual environment (needs python3 and the package index) and runs
# regenerate.py beside this script, whose fixed-answer models need no network.
#   sh tests/data/importers/deepeval-generated/regenerate.sh [OUT_DIR]
# OUT_DIR defaults to this folder; the version written is recorded in VERSION.
set -eu
VERSION="${DEEPEVAL_VERSION:-4.3.1}"
here=$(cd "$(dirname "$0")" && pwd)
out="${1:-$here}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "deepeval==$VERSION" >/dev/null
cd "$work"
HOME="$work" DEEPEVAL_TELEMETRY_OPT_OUT=YES "$work/venv/bin/python" "$here/regenerate.py" "$out"
