"""Regenerate this folder's DeepEval run with DeepEval itself, offline.

The judge is a `DeepEvalBaseLLM` subclass that answers every prompt with fixed JSON (no
network): Hallucination verdicts and a reason, an Answer Relevancy reading, and a G-Eval
("Correctness") score and reason, which DeepEval's template tells not to quote the score.
Two test cases: one whose answer agrees with its context (Hallucination passes) and one
whose answer contradicts it (Hallucination fails). Run with a Python that has `deepeval`:

    python tests/data/importers/deepeval-generated/regenerate.py [OUT_DIR]

It writes `latest_test_run.json` (DeepEval's `.deepeval/.latest_test_run.json`, as written);
`evaluation_result.json`, the `EvaluationResult` a second `evaluate()` returns (the first
case, a DAG metric "Names Paris" and Answer Relevancy), saved with `model_dump_json`;
`deepeval-cache.json`, the `.deepeval/.deepeval-cache.json` DeepEval kept then;
`conversational_test_run.json`, a run of one conversational test case with a
`ConversationalGEval`, and `conversational_result.json`, what that `evaluate()` returned;
and `VERSION` (the deepeval version).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")

from deepeval import evaluate
from deepeval.evaluate.configs import AsyncConfig, DisplayConfig
from deepeval.metrics import (
    AnswerRelevancyMetric,
    ConversationalGEval,
    DAGMetric,
    DeepAcyclicGraph,
    GEval,
    HallucinationMetric,
)
from deepeval.metrics.dag import BinaryJudgementNode, VerdictNode
from deepeval.models import DeepEvalBaseLLM
from deepeval.test_case import (
    ConversationalTestCase,
    LLMTestCase,
    LLMTestCaseParams,
    MultiTurnParams,
    Turn,
)


class FixedJudge(DeepEvalBaseLLM):
    """Fixed answers by what the prompt asks for; the contradiction is about Lyon."""

    def load_model(self):  # type: ignore[no-untyped-def]
        return self

    def get_model_name(self) -> str:
        return "fixed-judge"

    def _answer(self, prompt: str) -> str:
        wrong = "Lyon" in prompt
        if "evaluation steps" in prompt.lower():  # G-Eval: a 0-10 score and a reason
            return json.dumps(
                {
                    "score": 2 if wrong else 9,
                    "reason": "The answer names Lyon, not Paris, as the capital."
                    if wrong
                    else "The answer names Paris as the capital, as it should.",
                }
            )
        if '"verdicts"' in prompt and "context" in prompt.lower() and "statements" not in prompt:
            verdict = "no" if wrong else "yes"
            return json.dumps(
                {"verdicts": [{"verdict": verdict, "reason": "Compared with the context."}]}
            )
        if '"statements"' in prompt:
            return json.dumps({"statements": ["The capital of France is Paris."]})
        if '"verdicts"' in prompt:
            return json.dumps({"verdicts": [{"verdict": "yes", "reason": "It is relevant."}]})
        return json.dumps(
            {
                "reason": "The score is 0.00 because the output contradicts the context."
                if wrong
                else "The score is 1.00 because the output agrees with the context."
            }
        )

    def generate(self, prompt: str, schema=None):  # type: ignore[no-untyped-def]
        if schema is not None and "steps" in schema.model_fields:  # G-Eval's own steps
            return schema(steps=["Check that the assistant answers the question."])
        fields = schema.model_fields if schema is not None else {}
        if "verdict" in fields and fields["verdict"].annotation is bool:  # a DAG's judgement
            return schema(verdict="Paris" in prompt, reason="It names the capital.")
        text = self._answer(prompt)
        return schema.model_validate_json(text) if schema is not None else text

    async def a_generate(self, prompt: str, schema=None):  # type: ignore[no-untyped-def]
        return self.generate(prompt, schema)


def _more(judge: FixedJudge, cases: list, work: Path, out: Path) -> None:
    """Issue 37's outputs: the `EvaluationResult` that `evaluate()` returns, saved as JSON
    (`model_dump_json`), with a DAG metric among its metrics; the cache DeepEval keeps
    (`.deepeval/.deepeval-cache.json`); and a run of a conversational test case."""
    dag = DeepAcyclicGraph(
        root_nodes=[
            BinaryJudgementNode(
                criteria="Does the actual output name Paris?",
                children=[VerdictNode(verdict=False, score=0), VerdictNode(verdict=True, score=10)],
            )
        ]
    )
    metrics = [
        DAGMetric(name="Names Paris", dag=dag, model=judge, threshold=0.5),
        AnswerRelevancyMetric(model=judge, threshold=0.5),
    ]
    result = evaluate(
        test_cases=cases[:1],
        metrics=metrics,
        async_config=AsyncConfig(run_async=False),
        display_config=DisplayConfig(show_indicator=False, print_results=False),
    )
    (out / "evaluation_result.json").write_text(result.model_dump_json(indent=1), "utf-8")
    shutil.copyfile(work / ".deepeval" / ".deepeval-cache.json", out / "deepeval-cache.json")
    convo = ConversationalTestCase(
        name="weather",
        turns=[
            Turn(role="user", content="What is the weather in Paris?"),
            Turn(role="assistant", content="It is 18 degrees and sunny in Paris."),
        ],
    )
    talk = evaluate(
        test_cases=[convo],
        metrics=[
            ConversationalGEval(
                name="Helpful",
                criteria="The assistant answers the user's question.",
                evaluation_params=[MultiTurnParams.CONTENT, MultiTurnParams.ROLE],
                model=judge,
                threshold=0.5,
            )
        ],
        async_config=AsyncConfig(run_async=False),
        display_config=DisplayConfig(show_indicator=False, print_results=False),
    )
    latest = work / ".deepeval" / ".latest_test_run.json"
    shutil.copyfile(latest, out / "conversational_test_run.json")
    (out / "conversational_result.json").write_text(talk.model_dump_json(indent=1), "utf-8")


def main() -> None:
    here = Path(__file__).resolve().parent
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else here
    judge = FixedJudge()
    cases = [
        LLMTestCase(
            name="agrees",
            input="What is the capital of France?",
            actual_output="The capital of France is Paris.",
            context=["Paris is the capital of France."],
        ),
        LLMTestCase(
            name="contradicts",
            input="What is the capital of France?",
            actual_output="The capital of France is Lyon.",
            context=["Paris is the capital of France."],
        ),
    ]
    metrics = [
        HallucinationMetric(model=judge, threshold=0.5),
        AnswerRelevancyMetric(model=judge, threshold=0.5),
        GEval(
            name="Correctness",
            evaluation_steps=["Check that the actual output names the right capital."],
            evaluation_params=[LLMTestCaseParams.INPUT, LLMTestCaseParams.ACTUAL_OUTPUT],
            model=judge,
            threshold=0.5,
        ),
    ]
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as work:
        os.chdir(work)
        try:
            evaluate(
                test_cases=cases,
                metrics=metrics,
                async_config=AsyncConfig(run_async=False),
                display_config=DisplayConfig(show_indicator=False, print_results=False),
            )
            out.mkdir(parents=True, exist_ok=True)
            written = Path(work) / ".deepeval" / ".latest_test_run.json"
            shutil.copyfile(written, out / "latest_test_run.json")
            _more(judge, cases, Path(work), out)
        finally:
            os.chdir(cwd)
    (out / "VERSION").write_text(f"deepeval {version('deepeval')}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
