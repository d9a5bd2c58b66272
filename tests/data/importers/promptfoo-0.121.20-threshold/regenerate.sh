#!/bin/sh
# Regenerate this folder's results with promptfoo itself, offline: where a threshold set in
# `defaultTest` is written (default-threshold.yaml: a test without a threshold of its own and one
# whose own overrides it) and what a run without any threshold writes (no-threshold.yaml). The
# model under test is the file:// provider beside this script (a fixed answer, no network);
# trim.js then keeps what the importer reads. Installs promptfoo into a throwaway folder; needs
# node and npm.
#   sh tests/data/importers/promptfoo-0.121.20-threshold/regenerate.sh [OUT_DIR]
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
cp "$here/default-threshold.yaml" "$here/no-threshold.yaml" "$here/provider.js" "$here/trim.js" .
mkdir -p "$out"
for name in default-threshold no-threshold; do
    # promptfoo exits 100 when a test case fails, as one in each config does on purpose
    PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_CONFIG_DIR="$work/home" \
        ./node_modules/.bin/promptfoo eval -c "$name.yaml" --no-cache --no-progress-bar \
        --no-share -o "$name.json" -o "$name.jsonl" >/dev/null 2>&1 || [ $? -eq 100 ]
    node trim.js "$name.json" "$name.jsonl"
    cp "$name.json" "$name.jsonl" "$out/"
done
echo "promptfoo $(./node_modules/.bin/promptfoo --version | tail -n 1)" >"$out/VERSION"
