// the model under test: a fixed answer, with a cost so that `cost` can be checked
class Provider {
  id() { return 'fixed-model'; }
  async callApi(prompt) {
    return { output: 'The capital of France is Paris.', cost: 0.0005, tokenUsage: { total: 12, prompt: 5, completion: 7 } };
  }
}
module.exports = Provider;
