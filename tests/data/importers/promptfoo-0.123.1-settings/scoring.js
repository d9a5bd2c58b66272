// a custom aggregate rule: the test passes when at least half of its assertions pass
module.exports = (namedScores, context) => {
  const results = context.componentResults || [];
  const passed = results.filter((r) => r.pass).length;
  const ok = passed * 2 >= results.length;
  return { pass: ok, score: results.length ? passed / results.length : 0, reason: `${passed} of ${results.length} assertions passed (custom rule: at least half)` };
};
