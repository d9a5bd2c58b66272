"""The installed layout: grammar and backends live inside the package, never at the top."""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
import shutil
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


PIP = [sys.executable, "-m", "pip"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("building a wheel needs setuptools")
    out = tmp_path_factory.mktemp("wheel")
    # built from a copy: setuptools writes `build/` and `*.egg-info` beside the sources it
    # builds, and two test workers building in the work tree at once would race there
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    junk = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("unmask", "backends", "grammar"):
        shutil.copytree(ROOT / name, source / name, ignore=junk)
    subprocess.run(
        [*PIP, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        check=True,
    )
    (built,) = out.glob("unmask-*.whl")
    return built


def test_wheel_puts_nothing_named_backends_at_the_top(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert "backends" not in tops and "grammar" not in tops
    assert "unmask/backends/base.py" in names
    assert "unmask/grammar/unmask.lark" in names
    # the parser's tables, else every process of an installed Unmask builds them again
    assert "unmask/grammar/unmask.tables.json" in names
    assert any(n.startswith("unmask/render/templates/") for n in names)


def test_wheel_holds_every_module_of_the_tree(wheel: Path) -> None:
    # a package missing from pyproject's list works in a checkout and vanishes when installed
    names = set(zipfile.ZipFile(wheel).namelist())
    tree = {
        "unmask/" + p.relative_to(ROOT / "unmask").as_posix()
        for p in (ROOT / "unmask").rglob("*.py")
    } | {"unmask/backends/" + p.name for p in (ROOT / "backends").glob("*.py")}
    assert len(tree) > 50 and sorted(tree - names) == []
    assert "unmask/importers/protocols/wice.proto" in names


def test_installed_wheel_runs_the_readme_example(wheel: Path, tmp_path: Path) -> None:
    """The README's first command, on the wheel alone: no editable finder, no checkout on
    sys.path (``-S`` skips site, so no ``.pth`` hook imports anything for us)."""
    target = tmp_path / "site"
    subprocess.run(
        [*PIP, "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
    )
    deps = [p for p in sys.path if p.endswith("site-packages")]
    env = {"PYTHONPATH": os.pathsep.join([str(target), *deps]), "PATH": os.environ["PATH"]}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        code = (
            f"import sys; sys.argv = {list(argv)!r}; from unmask.cli.{argv[0]} import main; main()"
        )
        return subprocess.run(
            [sys.executable, "-S", "-c", code.replace("unmask.cli.unmask ", "unmask.cli.main ")],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )

    case_c = str(ROOT / "examples" / "case_c.json")
    out = run("unmask", "check", case_c)
    assert out.returncode == 1, out.stderr
    assert out.stdout.startswith("case-c: VIOLATED")
    where = run("unmask", "check", case_c, "--format", "html")
    assert where.returncode == 1 and "<mark" in where.stdout
    compiled = run("unmaskc", str(ROOT / "examples" / "factual_claims.proto"))
    assert compiled.returncode == 0, compiled.stderr
    assert '"schema": "unmask.protocol/1"' in compiled.stdout
    # the code that ran is the wheel's, not the checkout's
    probe = subprocess.run(
        [sys.executable, "-S", "-c", "import unmask; print(unmask.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.startswith(str(target))
    # and it parses with the tables it ships, not with tables built on the spot
    code = (
        "from unmask.language import parser_tables as t; "
        "print(t.load(t.grammar_text()) is not None)"
    )
    shipped = subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert shipped.stdout.strip() == "True", shipped.stderr
