"""Start-up and per-process caches: lark's tables come with the package (built only when
they are not the grammar's, and never kept in the cache folder); a protocol is compiled
once per process per input; the command line imports z3 and PySAT only for a backend that
needs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from unmask.language import cache as cache_mod
from unmask.language import compile_cache
from unmask.language import parser as parser_mod
from unmask.language.compile_cache import compile_cached
from unmask.language.compiler import compile_source
from unmask.plumbing.limits import Limits

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PROTO = (EXAMPLES / "factual_claims_family.proto").read_text(encoding="utf-8")


def _fresh_parser(monkeypatch: pytest.MonkeyPatch, folder: Path | str | None):
    if folder is None:
        monkeypatch.setenv(cache_mod.CACHE_ENV, "")
    else:
        monkeypatch.setenv(cache_mod.CACHE_ENV, str(folder))
    parser_mod.lark_parser.cache_clear()
    try:
        return parser_mod.lark_parser()
    finally:
        parser_mod.lark_parser.cache_clear()


def _parses(p) -> None:
    assert p.parse("protocol p\ndecision pass iff a\n").data == "start"


def test_the_parser_comes_from_the_shipped_tables_and_touches_no_cache(monkeypatch, tmp_path):
    built = []
    real = parser_mod._build
    monkeypatch.setattr(parser_mod, "_build", lambda: built.append(1) or real())
    folder = tmp_path / "cache"
    loaded = _fresh_parser(monkeypatch, folder)
    _parses(loaded)
    assert built == [], "built though the shipped tables are the grammar's"
    assert not folder.exists(), "the parser made or wrote the cache folder"
    # the run's tables (built without lark's collision check: tests/language/test_grammar.py
    # proves them the strict build's), loaded with their options
    assert (loaded.options.parser, loaded.options.propagate_positions) == ("lalr", True)


def test_without_usable_shipped_tables_the_parser_is_built(monkeypatch, tmp_path):
    from unmask.language import parser_tables

    built = []
    real = parser_mod._build
    monkeypatch.setattr(parser_mod, "_build", lambda: built.append(1) or real())
    monkeypatch.setattr(parser_tables, "load", lambda _grammar: None)
    _parses(_fresh_parser(monkeypatch, tmp_path / "cache"))
    _parses(_fresh_parser(monkeypatch, tmp_path / "cache"))
    assert built == [1, 1]  # once per process: nothing of it is kept on disk
    assert not (tmp_path / "cache").exists()


def test_the_cache_folder_follows_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.delenv(cache_mod.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_mod.cache_dir() == tmp_path / "unmask"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # not absolute: ignored
    assert cache_mod.cache_dir() == Path.home() / ".cache" / "unmask"


def test_without_a_setting_the_cache_folder_is_the_platforms(monkeypatch):
    from platformdirs import user_cache_path

    monkeypatch.delenv(cache_mod.CACHE_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache_mod.cache_dir() == user_cache_path("unmask", appauthor=False)
    if sys.platform.startswith("linux"):
        assert cache_mod.cache_dir() == Path.home() / ".cache" / "unmask"


def test_a_command_runs_with_a_stale_or_unusable_cache(tmp_path):
    env = {**os.environ, cache_mod.CACHE_ENV: str(tmp_path / "c")}
    code = "from unmask.cli.main import main; main()"
    replay = str(EXAMPLES / "case_a.json")  # names a `.proto`: compiled, then cached
    first = subprocess.run(
        [sys.executable, "-c", code, "check", replay], env=env, capture_output=True, text=True
    )
    assert first.returncode == 0, first.stderr
    files = sorted((tmp_path / "c").iterdir())
    assert len(files) >= 2, files  # the key and the protocol's entry
    for file in files:
        file.write_bytes(b"\x80\x04garbage")
    again = subprocess.run(
        [sys.executable, "-c", code, "check", replay], env=env, capture_output=True, text=True
    )
    assert (again.returncode, again.stdout, again.stderr) == (0, first.stdout, "")
    blocked = {**os.environ, cache_mod.CACHE_ENV: str(files[0] / "below-a-file")}
    third = subprocess.run(
        [sys.executable, "-c", code, "check", replay], env=blocked, capture_output=True, text=True
    )
    assert (third.returncode, third.stdout, third.stderr) == (0, first.stdout, "")


# --- the compile cache ----------------------------------------------------------------------


def test_equal_input_compiles_once_to_the_same_protocol():
    domains = {"claim": ["c1", "c2"]}
    a = compile_cached(PROTO, "f.proto", domains)
    b = compile_cached(PROTO, "f.proto", {"claim": ("c1", "c2")})
    assert a is b
    assert a == compile_source(PROTO, "f.proto", domains)


def test_different_domains_limits_or_files_compile_separately():
    base = compile_cached(PROTO, "f.proto", {"claim": ["c1", "c2"]})
    other_members = compile_cached(PROTO, "f.proto", {"claim": ["c1", "c3"]})
    assert other_members != base
    assert other_members == compile_source(PROTO, "f.proto", {"claim": ["c1", "c3"]})
    limits = Limits(max_atoms=50_000)
    assert compile_cached(PROTO, "f.proto", {"claim": ["c1", "c2"]}, limits) is not base
    elsewhere = compile_cached(PROTO, "g.proto", {"claim": ["c1", "c2"]})
    assert (elsewhere.span.file, base.span.file) == ("g.proto", "f.proto")


def test_a_limit_is_not_escaped_through_the_cache():
    from unmask.plumbing.diagnostics import UnmaskError

    compile_cached(PROTO, "f.proto", {"claim": ["c1", "c2", "c3"]})
    with pytest.raises(UnmaskError) as info:
        compile_cached(PROTO, "f.proto", {"claim": ["c1", "c2", "c3"]}, Limits(max_atoms=2))
    assert {d.code for d in info.value.diagnostics} == {"limit"}


def test_replays_sharing_a_protocol_file_compile_it_once(tmp_path, monkeypatch):
    from unmask.language import compiler
    from unmask.replay.load import load_replay

    shutil.copy(EXAMPLES / "factual_claims.proto", tmp_path)
    calls = []
    real = compiler.compile_source
    monkeypatch.setattr(
        compiler, "compile_source", lambda *a, **k: calls.append(a[1]) or real(*a, **k)
    )
    monkeypatch.setenv(cache_mod.CACHE_ENV, "")  # the process's memo alone, not the disk
    compile_cache._memo.cache_clear()
    replay = json.loads((EXAMPLES / "case_a.json").read_text(encoding="utf-8"))
    for i in range(3):
        (tmp_path / f"r{i}.json").write_text(json.dumps(replay), encoding="utf-8")
        load_replay(tmp_path / f"r{i}.json")
    assert len(calls) == 1


# --- what the command line imports ----------------------------------------------------------


def _run(args: list[str], tmp_path: Path, env: dict[str, str] | None = None) -> dict:
    out = tmp_path / "state.json"
    code = (
        "import atexit, gc, json, sys\n"
        "state = lambda: {'modules': sorted(sys.modules), 'gc': gc.get_threshold()}\n"
        f"atexit.register(lambda: open({str(out)!r}, 'w').write(json.dumps(state())))\n"
        "from unmask.cli.main import main\n"
        f"main({args!r})\n"
    )
    subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env
    )
    return json.loads(out.read_text())


def _imported(args: list[str], tmp_path: Path) -> set[str]:
    return set(_run(args, tmp_path)["modules"])


def _solvers(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules} & {"z3", "pysat"}


def test_help_imports_no_solver(tmp_path):
    assert _solvers(_imported(["--help"], tmp_path)) == set()


@pytest.mark.parametrize("backend", ["sliced", "truthtable", "z3"])
def test_check_imports_no_solver_its_backend_does_not_need(backend, tmp_path):
    # case_a's facts settle every question (unmask.checking.closed): no backend asks a
    # solver, so even the default backend never imports z3 (a quarter of such a check)
    modules = _imported(["check", "--backend", backend, str(EXAMPLES / "case_a.json")], tmp_path)
    assert "unmask.checking.checker" in modules  # it did check
    assert _solvers(modules) == set()


def test_check_with_z3_imports_z3_when_it_asks_and_never_pysat(tmp_path):
    # this replay's verdict needs a solver's answer
    replay = str(EXAMPLES / "claim_parts_entailed.json")
    modules = _imported(["check", "--backend", "z3", replay], tmp_path)
    assert _solvers(modules) == {"z3"}
    assert "unmask.backends.z3_solver" in modules


def test_a_command_runs_with_the_collector_thresholds_raised(tmp_path):
    from unmask.cli.main import GC_THRESHOLDS

    state = _run(["check", "--backend", "truthtable", str(EXAMPLES / "case_a.json")], tmp_path)
    assert tuple(state["gc"]) == GC_THRESHOLDS


# what `unmask check --backend sliced` of a replay naming its `.proto` file, the compile cache
# warm, must not import: the solvers it does not call, the compiler and lark (the cache
# answers), the other commands' engines and formats, and what click keeps for other uses
NOT_FOR_A_WARM_CHECK = (
    "z3",
    "pysat",
    "lark",
    "unmask.language.parser",
    "unmask.language.compiler",
    "unmask.language.ast",
    "unmask.backends.pysat_core",
    "unmask.backends.z3_backend",
    "unmask.replay.recheck",
    "unmask.replay.judgeschema",  # a re-check against another protocol reads it
    "unmask.checking.overlap",  # a binary protocol's decisions cannot overlap
    "unmask.batch",
    "unmask.bench",
    "unmask.importers",
    "unmask.propose",
    "unmask.analysis",
    "unmask.checking.record",
    "unmask.checking.formats",  # the JSON formats: the text report needs none
    # a replay and its protocol that convert at once need neither the slow reader nor the
    # schema builder (compiled from source, about 5 ms)
    "unmask.plumbing.struct_reader",
    "unmask.plumbing.struct_schema",
    "unmask.ir.json_convert",
    "unmask.ir.json",  # the IR's writer: a check only reads
    # msgspec is not listed: a replay and its protocol (from the cache too) are read through
    # their formats' msgspec structs (unmask/replay/format.py, unmask/ir/format.py), so every
    # command that reads one imports it (about 6.5 ms, docs/performance.md)
    "unmask.render.view",  # the text format reads its words alone
    "unmask.render.html",
    "unmask.render.json",
    "unmask.render.sarif",
    "jinja2",
    "platformdirs",  # the cache folder is named by UNMASK_CACHE_DIR
    "signal",  # its enums cost start-up; SIGINT is handled through `_signal`
    # OpenSSL, about 2.5 ms: the cache's seal and keys are CPython's own BLAKE2
    "hashlib",
    "hmac",
    "_hashlib",
    "click.shell_completion",
    "click._termui_impl",
    "click.testing",
)


def test_a_warm_proto_check_imports_only_what_it_uses(tmp_path):
    from unmask.bench.workload import PROTOCOL_SOURCE, proto_replay

    (tmp_path / "factual.proto").write_text(PROTOCOL_SOURCE, encoding="utf-8")
    replay = tmp_path / "replay.json"
    replay.write_text(json.dumps(proto_replay(2)), encoding="utf-8")
    env = {**os.environ, cache_mod.CACHE_ENV: str(tmp_path / "cache")}
    args = ["check", str(replay), "--backend", "sliced"]
    cold = set(_run(args, tmp_path, env)["modules"])
    assert "lark" in cold and "unmask.language.compiler" in cold  # the first run compiled it
    warm = set(_run(args, tmp_path, env)["modules"])
    assert {"unmask.checking.checker", "unmask.backends.sliced", "unmask.render.text"} <= warm
    imported = {
        name
        for name in NOT_FOR_A_WARM_CHECK
        if name in warm or any(m.startswith(name + ".") for m in warm)
    }
    assert imported == set()
