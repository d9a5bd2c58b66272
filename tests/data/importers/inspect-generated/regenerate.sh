#!/bin/sh
# Regenerate this folder's fixtures with inspect-ai itself, offline: installs inspect-ai into a
# throwaway virtual environment (needs python3 and the package index) and runs
# regenerate.py beside this script, whose fixed-answer models need no network.
#   sh tests/data/importers/inspect-generated/regenerate.sh [OUT_DIR]
# OUT_DIR defaults to this folder; the version written is recorded in VERSION.
set -eu
VERSION="${INSPECT_VERSION:-0.3.285}"
here=$(cd "$(dirname "$0")" && pwd)
out="${1:-$here}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "inspect-ai==$VERSION" >/dev/null
cd "$work"
INSPECT_LOG_DIR="$work/logs" "$work/venv/bin/python" "$here/regenerate.py" "$out"
