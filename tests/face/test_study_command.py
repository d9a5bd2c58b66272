"""`unmask study NAME`: the studies run through the library's audit, from any folder.

Run from a folder that holds a checkout named `unmask/` (the natural name of a clone),
`python -m unmask.studies.wice` imports that folder instead of the installed package; the
console script `unmask study wice` does not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.wice_data import WICE_DIR, needs_wice
from unmask.cli.main import main
from unmask.commands.study import STUDIES
from unmask.plumbing import exitcodes

ROOT = Path(__file__).resolve().parents[2]


def _script() -> Path:
    """The installed `unmask` console script (what a user types)."""
    for folder in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        path = Path(folder) / ("unmask.exe" if sys.platform == "win32" else "unmask")
        if path.is_file():
            return path
    pytest.fail("the `unmask` console script is not installed (pip install -e .)")


def _beside_a_checkout(tmp_path: Path) -> Path:
    """A folder holding a clone named `unmask/`: the trap of issue 34."""
    here = tmp_path / "work"
    (here / "unmask" / "unmask").mkdir(parents=True)
    (here / "unmask" / "pyproject.toml").write_text("[project]\nname = 'unmask'\n", "utf-8")
    (here / "unmask" / "unmask" / "__init__.py").write_text("", "utf-8")
    return here


def test_every_study_module_is_a_study_and_every_study_a_module():
    modules = {p.stem for p in (ROOT / "unmask" / "studies").glob("*.py")} - {"__init__"}
    assert modules and modules == set(STUDIES)


def test_the_study_command_lists_the_studies_and_names_a_wrong_one():
    listed = CliRunner().invoke(main, ["study", "--help"])
    assert listed.exit_code == 0
    assert all(name in listed.output for name in STUDIES)
    wrong = CliRunner().invoke(main, ["study", "wic\x1b[31m"])
    assert wrong.exit_code == exitcodes.USAGE
    assert "no such study `wic\\x1b[31m`" in wrong.stderr and "\x1b" not in wrong.stderr
    close = CliRunner().invoke(main, ["study", "factc"])
    assert "(did you mean `factcc`?)" in close.stderr


def test_a_study_runs_from_a_folder_holding_a_checkout_named_unmask(tmp_path):
    here = _beside_a_checkout(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    args = ["--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")]
    # the trap itself: `python -m` and `-c` put the current folder first on the path, and
    # there `unmask` is the clone's folder, not the package
    trapped = subprocess.run(
        [sys.executable, "-c", "from unmask import __version__"],
        cwd=here,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert trapped.returncode != 0 and "cannot import name '__version__'" in trapped.stderr
    run = subprocess.run(
        [str(_script()), "study", "wice", *args],
        cwd=here,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # the study itself ran: it names the data file it cannot read, exit 4
    assert run.returncode == exitcodes.INVALID, run.stderr
    assert "gold_claim_test.jsonl" in run.stderr and "Traceback" not in run.stderr


@needs_wice
def test_the_wice_study_on_a_slice_from_beside_a_checkout(tmp_path):
    here = _beside_a_checkout(tmp_path)
    out = tmp_path / "o"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [str(_script()), "study", "wice", "--data", str(WICE_DIR), "--out", str(out), "--limit=2"],
        cwd=here,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    tables = json.loads((out / "study.json").read_text("utf-8"))
    assert {j: t["replays"] for j, t in tables["judges"].items()} == {
        "gpt-4-0613": 2,
        "gpt-3.5-turbo-0613": 2,
    }
    assert "### gpt-4-0613 (2 judgments" in run.stdout
    # what `unmask audit` writes, written by the library call
    assert (out / "report" / "index.html").is_file()
    summary = (out / "summary.txt").read_text("utf-8")
    assert json.loads((out / "summary.json").read_text("utf-8"))["replays"] == 4, summary


def test_no_module_of_the_package_runs_a_command_through_the_test_harness():
    # the studies drove `unmask audit` through click's CliRunner; the audit is a library
    # call (unmask.batch.audit.audit), and a test harness has no place in the product
    sources = sorted((ROOT / "unmask").rglob("*.py"))
    assert len(sources) > 50
    found = [str(p.relative_to(ROOT)) for p in sources if "click.testing" in p.read_text("utf-8")]
    assert found == []
