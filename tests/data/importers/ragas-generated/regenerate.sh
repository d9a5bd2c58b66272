#!/bin/sh
# Regenerate this folder's results with RAGAS itself, offline: installs ragas into a
# throwaway venv and runs regenerate.py beside this script (a fixed-JSON `BaseRagasLLM` and
# letter-count embeddings, no network). Needs python3 and pip.
#   sh tests/data/importers/ragas-generated/regenerate.sh [OUT_DIR]
# OUT_DIR defaults to this folder; the version written is recorded in VERSION.
# ragas 0.4.3 imports `langchain_community.chat_models.vertexai`, which langchain-community
# 0.4 removed, so the install pins langchain-community below 0.4.
set -eu
VERSION="${RAGAS_VERSION:-0.4.3}"
here=$(cd "$(dirname "$0")" && pwd)
out="${1:-$here}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "ragas==$VERSION" "langchain-community<0.4" >/dev/null
cd "$work"
"$work/venv/bin/python" -W ignore "$here/regenerate.py" "$out"
