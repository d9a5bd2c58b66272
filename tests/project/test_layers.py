"""The layers hold in the code: import-linter's contracts, kept, and the contracts bite.

The contracts live in ``pyproject.toml`` (``[tool.importlinter]``): the core flows down
(plumbing, IR, language and backends, replays, review, checking, formats, batch and
analysis, the face), producers sit beside the core and neither uses the other, and no two
modules or packages import each other around a circle at any depth. ``lint-imports`` reads
every import, function-local ones too; names loaded through ``importlib.import_module`` (the
registries of formats, importers, proposers, commands and backends) stay inside their own
package and are not followed.

``backends/`` installs inside the package, so ``lint-imports`` runs over the layout a wheel
has (``tests/project/test_types.py`` builds it): over the tree, the backends would be outside the
graph. The last tests plant an upward import and a circle in a copy and see each reported.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.project.test_types import installed_layout

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).parent / "lint-imports"


def contracts() -> list[dict]:
    """The contracts of ``pyproject.toml``, as import-linter itself reads them."""
    from importlinter.api import read_configuration

    return read_configuration(str(ROOT / "pyproject.toml"))["contracts_options"]


def lint(layout: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the package laid out in ``layout``, with the project's contracts."""
    # wide enough that no contract's line wraps before its KEPT or BROKEN
    env = {**os.environ, "PYTHONPATH": str(layout), "COLUMNS": "300"}
    return subprocess.run(
        [str(LINT), str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=layout,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def layout(tmp_path) -> Path:
    installed_layout(tmp_path)
    return tmp_path


def test_every_contract_is_kept(layout) -> None:
    done = lint(layout)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert f"Contracts: {len(contracts())} kept, 0 broken." in out, out
    # the graph is the whole package, the mapped backends with it
    analyzed = int(re.search(r"Analyzed (\d+) files", out).group(1))
    assert analyzed >= len(list((layout / "unmask").rglob("*.py"))) > 150


def test_the_layers_name_every_package_so_none_is_outside_the_rules() -> None:
    named = set()
    for contract in contracts():
        for layer in contract.get("layers", []):
            named |= {m.strip() for m in re.split(r"[|:]", layer)}
        named |= set(contract.get("source_modules", []))
    packages = {
        f"unmask.{p.name}"
        for p in (ROOT / "unmask").iterdir()
        if (p / "__init__.py").exists() and p.name != "grammar"
    }
    modules = {f"unmask.{p.stem}" for p in (ROOT / "unmask").glob("*.py") if p.stem != "__init__"}
    assert sorted((packages | modules | {"unmask.backends"}) - named) == []


def test_an_upward_import_breaks_the_layers(layout) -> None:
    text = layout / "unmask" / "ir" / "text.py"
    text.write_text(
        text.read_text("utf-8") + "\n\ndef _up():\n    import unmask.checking.checker\n",
        encoding="utf-8",
    )
    done = lint(layout)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "unmask.ir.text -> unmask.checking.checker" in out
    verdicts = dict(re.findall(r"^(.+?) (KEPT|BROKEN)$", out, re.M))
    assert verdicts[contracts()[0]["name"]] == "BROKEN", out


def test_a_circle_between_siblings_breaks_the_last_contract(layout) -> None:
    # `limits` already imports nothing that imports `span`; `span` importing `limits` and
    # `limits` importing `span` is a circle inside one layer, which no layers contract sees
    for name, other in (("span", "limits"), ("limits", "span")):
        path = layout / "unmask" / "plumbing" / f"{name}.py"
        path.write_text(
            path.read_text("utf-8") + f"\n\nimport unmask.plumbing.{other}  # noqa\n",
            encoding="utf-8",
        )
    done = lint(layout)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    verdicts = dict(re.findall(r"^(.+?) (KEPT|BROKEN)$", out, re.M))
    assert verdicts[contracts()[-1]["name"]] == "BROKEN"
    assert sorted(verdicts.values()).count("BROKEN") == 1, out
