"""Options several subcommands share read, and fail, the same in each."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    "args",
    [
        ["next", str(EXAMPLES / "case_a.json")],
        ["analyze", str(EXAMPLES / "factual_claims.proto")],
        ["compare", str(EXAMPLES / "factual_claims.proto"), str(EXAMPLES / "factual_claims.proto")],
    ],
)
def test_a_backend_that_cannot_be_imported_is_one_usage_error(args, monkeypatch):
    import unmask.backends

    def create(name, **kw):
        raise ImportError("no module named `solver`")

    monkeypatch.setattr(unmask.backends, "create", create)
    res = CliRunner().invoke(main, [*args, "--backend", "z3"])
    assert res.exit_code == 2
    # the import error's own text is not shown: the message names the backend
    assert res.stderr.strip() == (
        "error: backend `z3` cannot be loaded\n  = help: its solver library is not installed"
    )
