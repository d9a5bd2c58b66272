"""Shared test setup: hypothesis profiles, the matrix of backends, the quick subset, a
cache folder per test process, and a bytecode folder for the child processes where Python
may not write bytecode beside the source.

The suite runs on every core (pytest-xdist, ``-n auto`` in pyproject's addopts): a test
may share nothing writable with another but through ``tmp_path``; module-level state is
per process.

Every test that takes the ``backend_name`` fixture runs once per registered backend (the
lark-style test matrix), so a new backend is tested by everything at once.

``pytest -m quick`` runs the modules of ``QUICK`` (every test in them is marked ``quick``):
one or more per layer, chosen for their speed, under a minute in all (README.md). With
exactly ``-m quick`` the other test modules are not even imported: collecting the whole
suite alone takes seconds.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from unmask.backends import available

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

# the modules of `pytest -m quick`, by file name; tests/project/test_docs.py checks that each exists
QUICK = frozenset(
    {
        # the language, the IR and the backends
        "test_unmaskc",
        "test_ir_labels",
        "test_ir_format",
        "test_lines",
        "test_pysat_backend",
        "test_labels_check",
        # replays, the checker and the reports
        "test_replay",
        "test_replay_provenance",
        "test_builder",
        "test_checker",
        "test_record",
        "test_report",
        "test_report_items",
        "test_report_types",
        "test_golden",
        "test_examples_validate",
        "test_render_html",
        "test_render_junit",
        "test_render_markdown",
        "test_render_labels",
        "test_render_provenance",
        # the commands, the audit, analysis, importers and proposers
        "test_check_cli",
        "test_validate_cli",
        "test_options",
        "test_diagnostics",
        "test_codes",
        "test_audit_api",
        "test_audit_tables",
        "test_audit_labels_summary",
        "test_analyze",
        "test_compare",
        "test_member_names",
        "test_importers",
        "test_structured",
        "test_propose_judge",
        # the docs and the layering
        "test_docs",
        "test_layers",
    }
)


def _only_quick(config: pytest.Config) -> bool:
    return config.getoption("markexpr", "") == "quick"


# --- CPU time per test: what `--durations` measures is wall time, which on a shared machine
# says more about the load than about the test ---------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-durations",
        type=int,
        default=None,
        metavar="N",
        help="list the N tests that took the most CPU time (setup and call, the test's own "
        "process and the child processes it waited for), and the total",
    )


def _cpu_seconds() -> float:
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _timed(item: pytest.Item):  # type: ignore[no-untyped-def]
    if item.config.getoption("cpu_durations", None) is None or os.name != "posix":
        yield
        return
    start = _cpu_seconds()
    yield
    # user properties travel with the report, from an xdist worker to the main process
    item.user_properties.append(("cpu_s", _cpu_seconds() - start))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item):  # type: ignore[no-untyped-def]
    yield from _timed(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):  # type: ignore[no-untyped-def]
    yield from _timed(item)


_CPU: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when in ("setup", "call"):
        spent = sum(v for k, v in report.user_properties if k == "cpu_s")
        if spent:
            _CPU[report.nodeid] = _CPU.get(report.nodeid, 0.0) + spent


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:  # type: ignore[no-untyped-def]
    n = config.getoption("cpu_durations", None)
    if n is None or not _CPU:
        return
    tr = terminalreporter
    tr.write_sep("=", f"the {n} tests that took the most CPU time")
    for nodeid, spent in sorted(_CPU.items(), key=lambda kv: -kv[1])[:n]:
        tr.write_line(f"{spent:8.2f}s  {nodeid}")
    tr.write_line(f"{sum(_CPU.values()):8.2f}s  in all, over {len(_CPU)} tests")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if (
        _only_quick(config)
        and collection_path.suffix == ".py"
        and collection_path.name.startswith("test_")
        and collection_path.stem not in QUICK
    ):
        return True
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.parent.parent == ROOT / "tests" and item.path.stem in QUICK:
            item.add_marker(pytest.mark.quick)


settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "long", max_examples=100_000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(os.environ.get("UNMASK_HYPOTHESIS_PROFILE", "ci"))


def found_files(paths: Iterable[Path], at_least: int = 1) -> list[Path]:
    """What a glob or a walk found, sorted; fails when it found fewer than ``at_least``:
    a loop over nothing passes while checking nothing (the files moved, a pattern broke)."""
    out = sorted(paths)
    assert len(out) >= at_least, (
        f"found {len(out)} files where at least {at_least} were expected: the test would "
        "check nothing"
    )
    return out


@pytest.fixture(autouse=True, scope="session")
def _a_cache_folder_of_its_own(tmp_path_factory: pytest.TempPathFactory):
    """Each test process (each xdist worker) compiles into a cache folder of its own, made
    for the run: never the user's, never one another worker writes at the same moment.
    Tests of the cache set their own folder over this one (``monkeypatch.setenv``), and
    subprocesses inherit it."""
    from unmask.plumbing.cachedir import CACHE_ENV

    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(tmp_path_factory.mktemp("unmask-cache"))
    yield
    if before is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = before


@pytest.fixture(autouse=True, scope="session")
def _bytecode_for_the_child_processes(tmp_path_factory: pytest.TempPathFactory):
    """Where Python may not write bytecode beside the source (``PYTHONDONTWRITEBYTECODE``),
    every child process a test starts (hundreds: `unmask` run as the user runs it) would
    compile each module it imports afresh, a quarter of those tests' time. The children
    write it instead to a folder of this test process's own, made for the run (never the
    tree), and read it back: each module compiled once per process of the suite. Tests of
    what a child does with bytecode pass their own flags (``unmask.bench.processes``); a
    child under a file-size limit writes none (Python does not check a short write: a
    cut-off module would be read back by every later child; tests/language/test_unmaskc.py)."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        yield
        return
    before = os.environ.pop("PYTHONDONTWRITEBYTECODE")
    os.environ["PYTHONPYCACHEPREFIX"] = str(tmp_path_factory.mktemp("bytecode"))
    yield
    os.environ["PYTHONDONTWRITEBYTECODE"] = before
    os.environ.pop("PYTHONPYCACHEPREFIX", None)


@pytest.fixture(params=available())
def backend_name(request: pytest.FixtureRequest) -> str:
    name = request.param
    skip_unwritten_backend(name)
    return name


def skip_unwritten_backend(name: str) -> None:
    """Skip a registered backend whose module does not exist yet (work in progress);
    any other import error is a real failure and is raised."""
    from unmask.backends import create

    try:
        create(name)
    except ModuleNotFoundError as exc:
        if (exc.name or "").startswith("unmask.backends."):
            pytest.skip(f"backend `{name}` is not written yet")
        raise


@pytest.fixture
def examples_dir() -> Path:
    return EXAMPLES
