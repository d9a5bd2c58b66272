"""Regenerate this folder's RAGAS results with RAGAS itself, offline.

The judge is a `BaseRagasLLM` subclass that answers every prompt with fixed JSON by what the
prompt asks for, and the embeddings a letter-count vector of the text (no network, no
model). Three rows, all about France's capital: an answer its context supports, one it
contradicts (Lyon), and one the judge's statements cannot be read from (it answers the
statement prompt with no statements, so RAGAS writes no faithfulness score). Metrics:
faithfulness and context precision (LLM verdicts with reasons RAGAS keeps to itself),
answer relevancy (generated questions and embeddings) and exact match (no LLM, no reason).
Run with a Python that has `ragas` (`regenerate.sh` installs it in a throwaway venv):

    python tests/data/importers/ragas-generated/regenerate.py [OUT_DIR]

It writes `EvaluationResult.to_pandas()` as `results.csv` (`to_csv(index=False)`),
`results.json` (`to_json(orient="records")`), `results-columns.json` (`to_json()`, pandas'
default orient), `results-index.json` (`to_json(orient="index")`) and `results.jsonl`
(`to_json(orient="records", lines=True)`), the same rows as `results-with-index.csv`
(`to_csv()`, pandas' default: the index as an unnamed first column), `results-split.json`
(`orient="split"`) and `results-table.json` (`orient="table"`); `multi-turn.json` and
`multi-turn.csv`, two multi-turn samples scored by `ToolCallAccuracy` (no LLM), the second
calling the tool for the wrong city; `experiment.csv`, what RAGAS 0.4's `@experiment` writes
with the `local/csv` backend (a `discrete_metric` and a `numeric_metric`, each value with
its reason in a column the experiment function names; RAGAS appends rows as they complete,
so their order may differ between runs); and `VERSION`.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
os.environ.setdefault("OPENAI_API_KEY", "offline")  # never used: every model here is local

from langchain_core.outputs import Generation, LLMResult
from ragas import Dataset, EvaluationDataset, evaluate, experiment
from ragas.embeddings.base import BaseRagasEmbeddings
from ragas.llms.base import BaseRagasLLM
from ragas.metrics import (
    ExactMatch,
    MetricResult,
    ToolCallAccuracy,
    answer_relevancy,
    context_precision,
    discrete_metric,
    faithfulness,
    numeric_metric,
)
from ragas.run_config import RunConfig


class FixedJudge(BaseRagasLLM):
    """Fixed JSON by the prompt's instruction; the contradiction is about Lyon, and the
    third row's answer gives the statement prompt nothing to read."""

    def _answer(self, prompt: str) -> str:
        question = prompt.rsplit("Input:", 1)[-1]  # the row's own input, after the examples
        wrong = "Lyon" in question
        if "Break down each sentence" in prompt:
            if "Marseille" in question:
                return json.dumps({"statements": []})
            city = "Lyon" if wrong else "Paris"
            return json.dumps({"statements": [f"The capital of France is {city}."]})
        if "judge the faithfulness of a series of statements" in prompt:
            city = "Lyon" if wrong else "Paris"
            return json.dumps(
                {
                    "statements": [
                        {
                            "statement": f"The capital of France is {city}.",
                            "reason": "The context names Paris as the capital.",
                            "verdict": 0 if wrong else 1,
                        }
                    ]
                }
            )
        if "Generate a question for the given answer" in prompt:
            return json.dumps({"question": "What is the capital of France?", "noncommittal": 0})
        if "verify if the context was useful" in prompt:
            return json.dumps({"reason": "The context names the capital.", "verdict": 1})
        raise AssertionError(f"an unexpected prompt: {prompt[:200]}")

    def _result(self, prompt) -> LLMResult:  # type: ignore[no-untyped-def]
        return LLMResult(generations=[[Generation(text=self._answer(prompt.to_string()))]])

    def generate_text(self, prompt, n=1, temperature=0.01, stop=None, callbacks=None):  # type: ignore[no-untyped-def]
        return self._result(prompt)

    async def agenerate_text(self, prompt, n=1, temperature=0.01, stop=None, callbacks=None):  # type: ignore[no-untyped-def]
        return self._result(prompt)

    def is_finished(self, response: LLMResult) -> bool:
        return True


class LetterCounts(BaseRagasEmbeddings):
    """A text's embedding is how often each letter occurs in it: fixed, and local."""

    def __init__(self) -> None:
        super().__init__()
        self.run_config = RunConfig()

    @staticmethod
    def _vector(text: str) -> list[float]:
        low = text.lower()
        return [float(low.count(c)) + 1.0 for c in "abcdefghijklmnopqrstuvwxyz"]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    async def aembed_query(self, text: str) -> list[float]:
        return self._vector(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]


ROWS = [
    {
        "user_input": "What is the capital of France?",
        "response": "The capital of France is Paris.",
        "retrieved_contexts": [
            "Paris is the capital of France.",
            "France is a country in Western Europe.",
        ],
        "reference": "The capital of France is Paris.",
    },
    {
        "user_input": "Which city is the capital of France, Lyon or Paris?",
        "response": "The capital of France is Lyon.",
        "retrieved_contexts": ["Paris is the capital of France."],
        "reference": "Paris",
    },
    {
        "user_input": "Is Marseille the capital of France?",
        "response": "No.",
        "retrieved_contexts": ['The "capital" of France is Paris, not Marseille.'],
        "reference": "No.",
    },
]


MULTI_TURN = [
    {
        "user_input": [
            {"content": "What is the weather in Paris?", "type": "human"},
            {
                "content": "Let me look.",
                "type": "ai",
                "tool_calls": [{"name": "weather", "args": {"city": "Paris"}}],
            },
            {"content": "18 degrees, sunny", "type": "tool"},
            {"content": "It is 18 degrees and sunny in Paris.", "type": "ai"},
        ],
        "reference_tool_calls": [{"name": "weather", "args": {"city": "Paris"}}],
    },
    {
        "user_input": [
            {"content": "What is the weather in Lyon?", "type": "human"},
            {
                "content": "Let me look.",
                "type": "ai",
                "tool_calls": [{"name": "weather", "args": {"city": "Paris"}}],
            },
            {"content": "18 degrees, sunny", "type": "tool"},
            {"content": "It is 18 degrees and sunny.", "type": "ai"},
        ],
        "reference_tool_calls": [{"name": "weather", "args": {"city": "Lyon"}}],
    },
]


@discrete_metric(name="correct", allowed_values=["pass", "fail"])
def correct(response: str, expected: str) -> MetricResult:
    ok = expected.lower() in response.lower()
    return MetricResult(value="pass" if ok else "fail", reason=f"`{expected}` found: {ok}")


@numeric_metric(name="overlap", allowed_values=(0.0, 1.0))
def overlap(response: str, expected: str) -> MetricResult:
    words = set(expected.lower().split())
    share = len(words & set(response.lower().split())) / len(words)
    return MetricResult(value=share, reason=f"{share:.2f} of the expected words")


async def _experiment(out: Path) -> None:
    """RAGAS 0.4's `@experiment` workflow (its docs' current one), with the `local/csv`
    backend: it writes `experiments/NAME.csv` with what the experiment function returns."""
    with tempfile.TemporaryDirectory() as root:
        dataset = Dataset(name="capitals", backend="local/csv", root_dir=root)
        for row in EXPERIMENT_ROWS:
            dataset.append(row)
        dataset.save()

        @experiment()
        async def capitals(row):  # type: ignore[no-untyped-def]
            response = f"The capital is {row['expected']}." if "France" in row["query"] else "Rome."
            c = correct.score(response=response, expected=row["expected"])
            o = overlap.score(response=response, expected=row["expected"])
            return {
                **row,
                "response": response,
                "correct": c.value,
                "correct_reason": c.reason,
                "overlap": o.value,
                "overlap_reason": o.reason,
            }

        await capitals.arun(dataset, name="capitals")
        shutil.copyfile(Path(root) / "experiments" / "capitals.csv", out / "experiment.csv")


EXPERIMENT_ROWS = [
    {"query": "What is the capital of France?", "expected": "Paris"},
    {"query": "What is the capital of Spain?", "expected": "Madrid"},
]


def main() -> None:
    here = Path(__file__).resolve().parent
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else here
    out.mkdir(parents=True, exist_ok=True)
    result = evaluate(
        EvaluationDataset.from_list(ROWS),
        metrics=[faithfulness, answer_relevancy, context_precision, ExactMatch()],
        llm=FixedJudge(),
        embeddings=LetterCounts(),
        show_progress=False,
        raise_exceptions=False,
    )
    df = result.to_pandas()
    df.to_csv(out / "results.csv", index=False)
    df.to_json(out / "results.json", orient="records")
    df.to_json(out / "results-columns.json")
    df.to_json(out / "results-index.json", orient="index")
    df.to_json(out / "results.jsonl", orient="records", lines=True)
    df.to_csv(out / "results-with-index.csv")  # pandas' default: the index as a first column
    df.to_json(out / "results-split.json", orient="split")
    df.to_json(out / "results-table.json", orient="table")
    multi = evaluate(
        EvaluationDataset.from_list(MULTI_TURN),
        metrics=[ToolCallAccuracy()],
        show_progress=False,
        raise_exceptions=False,
    ).to_pandas()
    multi.to_json(out / "multi-turn.json", orient="records")
    multi.to_csv(out / "multi-turn.csv", index=False)
    asyncio.run(_experiment(out))
    (out / "VERSION").write_text(f"ragas {version('ragas')}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
