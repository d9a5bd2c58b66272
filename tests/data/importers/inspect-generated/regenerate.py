"""Regenerate this folder's Inspect log with Inspect itself, offline.

The model under test and the grader are Inspect's `mockllm/model` with fixed outputs (each
with a `usage`, so Inspect counts no tokens itself). The one sample is the case of issue 23:
the answer names Buzz Aldrin, the target Neil Armstrong, and the grader writes
`The submission names "Neil Armstrong" as required. GRADE: C`: a wrong PASS backed by a
quote of the target, not of the submission. Run with a Python that has `inspect-ai`:

    python tests/data/importers/inspect-generated/regenerate.py [OUT_DIR]

It writes `moon.json` (Inspect's JSON log format) and `VERSION` (the inspect-ai version).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import model_graded_fact
from inspect_ai.solver import generate


def _output(text: str) -> ModelOutput:
    out = ModelOutput.from_content(model="mockllm/model", content=text)
    out.usage = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)
    return out


@task
def moon() -> Task:
    grader = get_model(
        "mockllm/model",
        custom_outputs=[_output('The submission names "Neil Armstrong" as required. GRADE: C')],
    )
    return Task(
        dataset=[Sample(id="moon", input="Who first walked on the Moon?", target="Neil Armstrong")],
        solver=generate(),
        scorer=model_graded_fact(model=grader),
    )


def main() -> None:
    here = Path(__file__).resolve().parent
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else here
    model = get_model(
        "mockllm/model", custom_outputs=[_output("Buzz Aldrin was the first to walk on it.")]
    )
    with tempfile.TemporaryDirectory() as logs:
        (log,) = eval(moon(), model=model, log_dir=logs, log_format="json", display="none")
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log.location, out / "moon.json")
    (out / "VERSION").write_text(f"inspect-ai {version('inspect-ai')}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
