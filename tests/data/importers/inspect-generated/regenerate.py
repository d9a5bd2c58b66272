"""Regenerate this folder's Inspect logs with Inspect itself, offline.

The model under test and the grader are Inspect's `mockllm/model` with fixed outputs (each
with a `usage`, so Inspect counts no tokens itself), and samples run one at a time, so each
output goes to its sample. Two tasks:

- `moon`: the case of issue 23. The answer names Buzz Aldrin, the target Neil Armstrong,
  and the grader writes `The submission names "Neil Armstrong" as required. GRADE: C`: a
  wrong PASS backed by a quote of the target, not of the submission.
- `partial`: `model_graded_fact(partial_credit=True)`, three samples graded C, P and I.

Each run is written as Inspect writes it by default (`.eval`, a zip archive of zstd
members) and converted to Inspect's JSON log format, as `inspect log convert --to json`
does, so both files hold the same run. Run with a Python that has `inspect-ai`:

    python tests/data/importers/inspect-generated/regenerate.py [OUT_DIR]

- `settings`: one sample scored four ways, by settings the log records (issue 37): a custom
  grading template whose rubric the grader quotes, a second `model_graded_qa`
  (`model_graded_qa1`) with `grade_pattern=r"VERDICT: (C|I)"` whose explanation writes
  `GRADE: I` before its verdict, a panel of three graders (votes C, C, I), and a custom
  scorer.

It writes `moon.eval`, `moon.json`, `partial.eval`, `partial.json`, `settings.eval`,
`settings.json` and `VERSION` (the inspect-ai version).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log, write_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import (
    Score,
    Scorer,
    Target,
    accuracy,
    model_graded_fact,
    model_graded_qa,
    scorer,
)
from inspect_ai.solver import TaskState, generate


def _output(text: str) -> ModelOutput:
    out = ModelOutput.from_content(model="mockllm/model", content=text)
    out.usage = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)
    return out


def _mock(*texts: str):  # type: ignore[no-untyped-def]
    return get_model("mockllm/model", custom_outputs=[_output(t) for t in texts])


@task
def moon() -> Task:
    grader = _mock('The submission names "Neil Armstrong" as required. GRADE: C')
    return Task(
        dataset=[Sample(id="moon", input="Who first walked on the Moon?", target="Neil Armstrong")],
        solver=generate(),
        scorer=model_graded_fact(model=grader),
    )


MOON_ANSWERS = ("Buzz Aldrin was the first to walk on it.",)

PARTIAL = [
    (
        Sample(
            id="a-full",
            input="Which planet is the largest, and is it a gas giant?",
            target="Jupiter; it is a gas giant.",
        ),
        "Jupiter is the largest planet, and it is a gas giant.",
        'The submission says "Jupiter is the largest planet" and that it is a gas giant,'
        " as the expert answer does. GRADE: C",
    ),
    (
        Sample(
            id="b-partial",
            input="What is the capital of Australia, and in which territory does it lie?",
            target="Canberra, in the Australian Capital Territory.",
        ),
        "The capital is Canberra.",
        'The submission names "Canberra" but not the Australian Capital Territory.'
        " It is partly correct. GRADE: P",
    ),
    (
        Sample(
            id="c-wrong",
            input="Who wrote Hamlet?",
            target="William Shakespeare.",
        ),
        "Hamlet was written by Christopher Marlowe.",
        'The submission names "Christopher Marlowe", not William Shakespeare. GRADE: I',
    ),
]


@task
def partial() -> Task:
    return Task(
        dataset=[s for s, _, _ in PARTIAL],
        solver=generate(),
        scorer=model_graded_fact(partial_credit=True, model=_mock(*(g for _, _, g in PARTIAL))),
    )


# a custom grading template with a rubric the grader quotes: the rubric is in the grading
# prompt Inspect keeps in the score's metadata, not in the answer, the input or the target
RUBRIC_TEMPLATE = """Grade the answer against the rubric.

Rubric: the answer "names the first person to walk on the Moon" and nothing else.

[Question]: {question}
[Answer]: {answer}
[Expected]: {criterion}

{instructions}
"""
SETTINGS_ANSWERS = ("Neil Armstrong was the first to walk on it.",)


@scorer(metrics=[accuracy()])
def keyword() -> Scorer:
    """A custom scorer: its rule (the target's last word in the answer) is code, not in the log."""

    async def score(state: TaskState, target: Target) -> Score:
        found = target.text.split()[-1].lower() in state.output.completion.lower()
        return Score(
            value="C" if found else "I",
            answer=state.output.completion,
            explanation=f"the target's last word is {'' if found else 'not '}in the answer",
        )

    return score


@task
def settings() -> Task:
    """Settings a log records that change how a score is read: a custom template (the
    grader quotes its rubric), a second model-graded scorer (`model_graded_qa1`) with a
    grade pattern other than `GRADE:`, a panel of three graders, and a custom scorer."""
    return Task(
        dataset=[Sample(id="moon", input="Who first walked on the Moon?", target="Neil Armstrong")],
        solver=generate(),
        scorer=[
            model_graded_qa(
                template=RUBRIC_TEMPLATE,
                model=_mock(
                    'The answer "names the first person to walk on the Moon" as the rubric'
                    " asks. GRADE: C"
                ),
            ),
            model_graded_qa(
                instructions="Reply GRADE: C or GRADE: I, then VERDICT: C or VERDICT: I.",
                grade_pattern=r"VERDICT: (C|I)",
                model=_mock("A first thought: GRADE: I. On reflection it is right. VERDICT: C"),
            ),
            model_graded_fact(
                model=[
                    _mock("The submission names Neil Armstrong. GRADE: C"),
                    _mock("Armstrong, as the expert says. GRADE: C"),
                    _mock("It adds a claim the expert does not make. GRADE: I"),
                ]
            ),
            keyword(),
        ],
    )


def _run(t: Task, answers: tuple[str, ...], name: str, out: Path) -> None:
    with tempfile.TemporaryDirectory() as logs:
        (log,) = eval(
            t, model=_mock(*answers), log_dir=logs, display="none", max_samples=1, max_tasks=1
        )  # the default log format: `.eval`
        assert log.location.endswith(".eval"), log.location
        shutil.copyfile(log.location, out / f"{name}.eval")
        # what `inspect log convert --to json` writes: the same run, in JSON
        write_eval_log(read_eval_log(log.location), str(out / f"{name}.json"), format="json")


def main() -> None:
    here = Path(__file__).resolve().parent
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else here
    out.mkdir(parents=True, exist_ok=True)
    _run(moon(), MOON_ANSWERS, "moon", out)
    _run(partial(), tuple(a for _, a, _ in PARTIAL), "partial", out)
    _run(settings(), SETTINGS_ANSWERS, "settings", out)
    (out / "VERSION").write_text(f"inspect-ai {version('inspect-ai')}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
