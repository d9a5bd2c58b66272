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

import ast
import os
import re
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


def _unread_by_mypy() -> set[str]:
    """The packages of the ``follow_imports = "skip"`` override in ``pyproject.toml``."""
    text = (ROOT / "pyproject.toml").read_text("utf-8")
    [block] = [b for b in text.split("[[tool.mypy.overrides]]") if 'follow_imports = "skip"' in b]
    return {m for m in re.findall(r'"([\w.]+)"', block.split("follow_imports")[0])}


def test_mypy_leaves_unread_only_packages_that_unmask_never_imports() -> None:
    # an unread package is Any to mypy: were unmask to import one, its use would go unchecked
    unread = {m.split(".")[0] for m in _unread_by_mypy()}
    assert {"openai", "textual"} <= unread
    imported: dict[str, str] = {}
    for folder in ("unmask", "backends"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                for name in names:
                    imported.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    assert "inspect_ai" in imported and "dask" in imported  # the walk sees lazy imports
    assert not {m: imported[m] for m in unread if m in imported}
