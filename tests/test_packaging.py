"""The installed layout: grammar and backends live inside the package, never at the top."""

from __future__ import annotations

import importlib.resources
import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT


def test_grammar_and_backends_are_subpackages() -> None:
    import unmask.backends
    import unmask.grammar

    assert importlib.util.find_spec("unmask.grammar") is not None
    assert Path(unmask.backends.__file__).parent.name == "backends"
    assert importlib.resources.files("unmask.grammar").joinpath("unmask.lark").is_file()


def test_no_top_level_backends_module(tmp_path: Path) -> None:
    # Run from a neutral folder: the test run itself puts the repository on sys.path.
    probe = (
        "import importlib.util as u, unmask.backends; "
        "print(u.find_spec('backends'), u.find_spec('grammar'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["None", "None"]


@pytest.mark.skipif(
    importlib.util.find_spec("setuptools") is None, reason="building a wheel needs setuptools"
)
def test_wheel_puts_nothing_named_backends_at_the_top(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
    )
    (wheel,) = tmp_path.glob("unmask-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert "backends" not in tops and "grammar" not in tops
    assert "unmask/backends/base.py" in names
    assert "unmask/grammar/unmask.lark" in names
