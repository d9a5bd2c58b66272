"""The package's types check: mypy, over the package as it installs, finds nothing.

``backends/`` and ``grammar/`` sit at the top of the repository and install as
``unmask.backends`` and ``unmask.grammar`` (setuptools' ``package-dir``). mypy cannot follow
that mapping: run over the tree it checks ``backends/`` as a package of its own and every
import of ``unmask.backends`` is unresolved, so nothing crossing that boundary is checked.
This test lays the package out as it installs, in a temporary folder (the two folders copied
into ``unmask/``), and runs mypy there with the settings of ``pyproject.toml``. A path in a
failure is that layout's: ``unmask/backends/base.py`` is ``backends/base.py`` in the tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def installed_layout(dest: Path) -> Path:
    """``unmask/`` with ``backends/`` and ``grammar/`` inside it, as a wheel has them."""
    ignore = shutil.ignore_patterns("__pycache__")
    package = dest / "unmask"
    shutil.copytree(ROOT / "unmask", package, ignore=ignore)
    for folder in ("backends", "grammar"):
        assert not (package / folder).exists(), f"unmask/{folder} now exists in the tree"
        shutil.copytree(ROOT / folder, package / folder, ignore=ignore)
    return package


def test_the_layout_mypy_checks_is_the_one_that_installs(tmp_path) -> None:
    text = (ROOT / "pyproject.toml").read_text("utf-8")
    assert '"unmask.backends" = "backends"' in text and '"unmask.grammar" = "grammar"' in text
    package = installed_layout(tmp_path)
    assert (package / "backends" / "base.py").is_file()
    assert (package / "grammar" / "unmask.lark").is_file()


def test_mypy_finds_no_error_in_the_package_as_installed(tmp_path) -> None:
    installed_layout(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            # a fresh cache: a shared one would let another layout's results in
            "--cache-dir",
            str(tmp_path / ".mypy_cache"),
            "-p",
            "unmask",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0 and out.startswith("Success: no issues found"), out
    # every module of the layout was checked, the mapped ones with the rest (mypy counts
    # a few more: modules it followed into)
    checked = int(out.split(" in ")[1].split()[0])
    assert checked >= len(list((tmp_path / "unmask").rglob("*.py"))) > 150
