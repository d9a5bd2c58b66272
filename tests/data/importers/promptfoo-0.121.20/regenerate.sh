#!/bin/sh
# Regenerate this folder's results.json and results.jsonl with promptfoo itself, offline:
# the model under test and the grader are the file:// providers beside this script (fixed
# answers, no network). Installs promptfoo into a throwaway folder; needs node and npm.
#   sh tests/data/importers/promptfoo-0.121.20/regenerate.sh [OUT_DIR]
# OUT_DIR defaults to this folder; the version written is recorded in VERSION (and in the
# results' own `metadata.promptfooVersion`).
set -eu
VERSION="${PROMPTFOO_VERSION:-0.121.20}"
here=$(cd "$(dirname "$0")" && pwd)
out="${1:-$here}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
npm init -y >/dev/null
npm install --no-audit --no-fund --silent "promptfoo@$VERSION" >/dev/null
cp "$here/promptfooconfig.yaml" "$here/provider.js" "$here/grader.js" .
# promptfoo exits 100 when a test case fails, as one here does on purpose
PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_CONFIG_DIR="$work/home" \
    ./node_modules/.bin/promptfoo eval -c promptfooconfig.yaml --no-cache --no-progress-bar \
    --no-share -o results.json -o results.jsonl >/dev/null 2>&1 || [ $? -eq 100 ]
mkdir -p "$out"
cp results.json results.jsonl "$out/"
echo "promptfoo $(./node_modules/.bin/promptfoo --version | tail -n 1)" >"$out/VERSION"
