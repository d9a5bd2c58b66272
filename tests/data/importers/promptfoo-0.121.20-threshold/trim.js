// keeps of promptfoo's output what the importer reads and what shows where the threshold went:
// each row's outcome, grading result, test case and response, the config's `defaultTest` and
// `tests`, and the version; drops the rest (prompts, stats, token counts, timestamps)
const fs = require('fs');
const KEEP = ['id', 'testIdx', 'promptIdx', 'success', 'score', 'gradingResult', 'testCase', 'response', 'cost', 'latencyMs'];
const row = (r) => Object.fromEntries(KEEP.filter((k) => k in r).map((k) => [k, r[k]]));
const [json, jsonl] = process.argv.slice(2);
const d = JSON.parse(fs.readFileSync(json, 'utf8'));
const out = {
  results: { version: d.results.version, results: d.results.results.map(row) },
  config: { defaultTest: d.config.defaultTest, tests: d.config.tests },
  metadata: { promptfooVersion: d.metadata.promptfooVersion },
};
fs.writeFileSync(json, JSON.stringify(out, null, 2) + '\n');
const lines = fs.readFileSync(jsonl, 'utf8').split('\n').filter((l) => l.trim());
fs.writeFileSync(jsonl, lines.map((l) => JSON.stringify(row(JSON.parse(l)))).join('\n') + '\n');
