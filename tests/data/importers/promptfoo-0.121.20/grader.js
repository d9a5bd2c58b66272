// the grader: a fixed JSON verdict per rubric, offline; the last one is promptfoo issue 2998's
// case (score 0.75 but pass false)
class Grader {
  id() { return 'fixed-grader'; }
  async callApi(prompt) {
    if (prompt.includes('mentions Paris')) return { output: JSON.stringify({ pass: true, score: 0.9, reason: 'The output names Paris.' }) };
    return { output: JSON.stringify({ pass: false, score: 0.75, reason: 'The grammar is fine but the answer is too short.' }) };
  }
}
module.exports = Grader;
