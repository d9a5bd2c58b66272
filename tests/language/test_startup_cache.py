"""The compiled-protocol cache on disk: a hit gives the very protocol the compiler gives,
spans included, without importing lark or the compiler; a damaged, foreign or stale entry
is ignored and rebuilt; an edited `.proto` is compiled again; errors are never cached."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from unmask.ir.json import protocol_to_json
from unmask.language import cache, cache_writer, compile_cache
from unmask.language.compiler import compile_source
from unmask.plumbing import cachedir
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PROTOS = sorted(p for p in ROOT.rglob("*.proto") if ".venv" not in p.parts)
MAIN = "from unmask.cli.main import main; main()"


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """An empty cache folder, and a process memo that remembers nothing yet."""
    where = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(where))
    monkeypatch.setattr(cache_writer, "_writes", 0)
    compile_cache._memo.cache_clear()
    yield where
    compile_cache._memo.cache_clear()


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"{cache.ENTRY_PREFIX}*.json"))


def _payload(entry: Path) -> dict:
    """The JSON inside a sealed entry."""
    data = cachedir.read_sealed(entry, cache.MAX_ENTRY_BYTES)
    assert data is not None, "not a sealed entry"
    return json.loads(data)


def _domains(text: str) -> dict[str, list[str]]:
    """Two members for every free domain of a protocol."""
    return {d: [f"{d}1", f"{d}2"] for d in re.findall(r"^domain (\w+)\s*$", text, re.MULTILINE)}


def _same(a, b) -> None:
    """Equal protocols with equal spans at every node."""
    assert protocol_to_json(a) == protocol_to_json(b)
    assert list(cache_writer.spans(a)) == list(cache_writer.spans(b))
    assert any(s is not None for s in cache_writer.spans(b))


def _from_disk(text: str, name: str, domains, limits=DEFAULT_LIMITS):
    """The protocol read back from the entry the first call wrote."""
    compile_cache._memo.cache_clear()
    return compile_cache.compile_cached(text, name, domains, limits)


@pytest.mark.parametrize("proto", PROTOS, ids=lambda p: p.name)
def test_a_hit_is_the_compiled_protocol_spans_included(proto, folder, monkeypatch):
    text = proto.read_text(encoding="utf-8")
    domains = _domains(text)
    compiled = compile_source(text, proto.name, domains)
    _same(compile_cache.compile_cached(text, proto.name, domains), compiled)
    assert len(_entries(folder)) == 1, "the protocol was not written"
    from unmask.language import compiler

    monkeypatch.setattr(compiler, "compile_source", None)  # a hit must not compile
    _same(_from_disk(text, proto.name, domains), compiled)


def _check(args: list[str], env: dict[str, str]) -> tuple[int, str, str, list[str]]:
    """Exit status, stdout, stderr and the modules loaded, of one `unmask` run."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + ' '.join(sys.modules)))\n" + MAIN
    )
    run = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True
    )
    err, _, modules = run.stderr.rpartition("\nMODULES ")
    return run.returncode, run.stdout, err, modules.split()


@pytest.mark.parametrize("fmt", ["text", "sarif"])
def test_a_warm_cache_checks_a_proto_replay_without_lark_or_the_compiler(tmp_path, fmt):
    for name in ("case_c_family.json", "factual_claims_family.proto"):
        shutil.copy(EXAMPLES / name, tmp_path)
    env = {**os.environ, cache.CACHE_ENV: str(tmp_path / "cache")}
    args = ["check", str(tmp_path / "case_c_family.json"), "--backend", "sliced", "--format", fmt]
    cold = _check(args, env)
    assert {"lark", "unmask.language.compiler"} <= set(cold[3])
    assert len(_entries(tmp_path / "cache")) == 1
    warm = _check(args, env)
    assert "lark" not in warm[3] and "unmask.language.compiler" not in warm[3]
    assert "unmask.language.parser" not in warm[3]
    off = _check(args, {**env, cache.CACHE_ENV: ""})
    assert warm[:3] == cold[:3] == off[:3]  # the same report, messages and status


def test_a_damaged_entry_is_ignored_and_rebuilt(folder):
    text = (EXAMPLES / "claim_parts.proto").read_text(encoding="utf-8")
    domains = {"part": ["a", "b"]}
    compiled = compile_cache.compile_cached(text, "claim_parts.proto", domains)
    (entry,) = _entries(folder)
    sealed = entry.read_bytes()
    obj = _payload(entry)
    good = json.dumps(obj)
    wrong_key = {**obj, "key": "0" * 64}
    short = {**obj, "spans": obj["spans"][:-1]}
    long = {**obj, "spans": [*obj["spans"], None]}
    bad_span = {**obj, "spans": [[1, 2, 3], *obj["spans"][1:]]}
    invalid_ir = {**obj, "protocol": {**obj["protocol"], "atoms": "none"}}
    other_schema = {**obj, "schema": "unmask.compiled/0"}
    # each damage sealed with the folder's key: the checks behind the seal hold too
    for damaged in [
        good[: len(good) // 2],
        "",
        "[]",
        "\udcff not json",
        *(json.dumps(o) for o in (wrong_key, short, long, bad_span, invalid_ir, other_schema)),
    ]:
        assert cachedir.write_sealed(entry, damaged.encode("utf-8", "surrogateescape"))
        _same(_from_disk(text, "claim_parts.proto", domains), compiled)
        assert _payload(entry) == obj, "not rebuilt"
    # and damage that breaks the seal: a cut, a flipped byte, the bare payload
    for damaged_bytes in [sealed[: len(sealed) // 2], sealed[:-1] + b"}", good.encode()]:
        entry.write_bytes(damaged_bytes)
        _same(_from_disk(text, "claim_parts.proto", domains), compiled)
        assert entry.read_bytes() == sealed, "not rebuilt"
    entry.unlink()
    entry.mkdir()  # the entry's name taken by a folder: compiled, nothing else
    _same(_from_disk(text, "claim_parts.proto", domains), compiled)


def test_a_stale_entry_of_another_compiler_is_never_read(folder, monkeypatch):
    text = (EXAMPLES / "factual_claims.proto").read_text(encoding="utf-8")
    compile_cache.compile_cached(text, "f.proto", {})
    (first,) = _entries(folder)
    # the compiler's modules, the grammar or lark changing make another fingerprint
    monkeypatch.setattr(cache, "_fingerprint", lambda: "another compiler")
    _from_disk(text, "f.proto", {})
    assert len(_entries(folder)) == 2 and first in _entries(folder)


def test_the_fingerprint_covers_the_compiler_and_its_modules(tmp_path, monkeypatch):
    root = Path(cache.__file__).parents[1]
    for m in cache._MODULES:
        (tmp_path / m).parent.mkdir(exist_ok=True)
        shutil.copy(root / f"{m}.py", tmp_path / f"{m}.py")
    monkeypatch.setattr(cache, "__file__", str(tmp_path / "language" / "cache.py"))
    cache._fingerprint.cache_clear()
    try:
        before = cache._fingerprint()
        assert before is not None
        compiler = tmp_path / "language" / "compile_exprs.py"
        compiler.write_text(compiler.read_text(encoding="utf-8") + "\n", encoding="utf-8")
        cache._fingerprint.cache_clear()
        assert cache._fingerprint() not in (None, before)
        # an edit of the same size (time of change moved on), and a file replaced by a
        # copy of the same size and time (another file in its place)
        seen = {before, cache._fingerprint()}
        text = compiler.read_text(encoding="utf-8")
        st = compiler.stat()
        compiler.write_text(text[:-1] + "#", encoding="utf-8")
        os.utime(compiler, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        cache._fingerprint.cache_clear()
        assert cache._fingerprint() not in (None, *seen)
        seen.add(cache._fingerprint())
        st = compiler.stat()
        replaced = tmp_path / "replaced.py"
        shutil.copy2(compiler, replaced)
        os.replace(replaced, compiler)
        os.utime(compiler, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert compiler.stat().st_size == st.st_size
        cache._fingerprint.cache_clear()
        assert cache._fingerprint() not in (None, *seen)
        compiler.unlink()  # a file that cannot be read: no cache at all
        cache._fingerprint.cache_clear()
        assert cache._fingerprint() is None
    finally:
        cache._fingerprint.cache_clear()


def test_the_fingerprint_names_every_module_of_the_language_and_the_ir():
    # the list once named compiler.py but not the passes split out of it, so an edited pass
    # was served the entries compiled before the edit
    root = Path(cache.__file__).parents[1]
    on_disk = {
        f"{package}/{p.stem}"
        for package in ("language", "ir")
        for p in (root / package).glob("*.py")
    }
    assert on_disk and on_disk <= set(cache._MODULES)


def test_an_edited_proto_is_compiled_again(tmp_path, folder):
    shutil.copy(EXAMPLES / "case_a.json", tmp_path)
    proto = tmp_path / "factual_claims.proto"
    shutil.copy(EXAMPLES / "factual_claims.proto", proto)
    from unmask.replay.load import load_replay

    first = load_replay(tmp_path / "case_a.json").protocol
    edited = proto.read_text(encoding="utf-8").replace(
        "Use only supplied context", "Use only the supplied context"
    )
    assert edited != proto.read_text(encoding="utf-8")
    proto.write_text(edited, encoding="utf-8")
    compile_cache._memo.cache_clear()
    second = load_replay(tmp_path / "case_a.json").protocol
    assert second != first
    assert "Use only the supplied context" in {r.description for r in second.requirements}
    assert len(_entries(folder)) == 2


def test_the_key_holds_every_input_of_compiling_but_the_file_name(folder):
    text = (EXAMPLES / "factual_claims_family.proto").read_text(encoding="utf-8")
    doms = (("claim", ("a", "b")),)
    base = cache.entry(text, doms, Limits())
    others = [
        cache.entry(text + "\n", doms, Limits()),
        cache.entry(text, (("claim", ("b", "a")),), Limits()),
        cache.entry(text, doms, Limits(max_atoms=3)),
    ]
    assert base is not None and all(o is not None for o in others)
    assert len({base.path, *(o.path for o in others)}) == 4


def test_one_entry_serves_every_file_name_with_its_own_spans(folder, monkeypatch):
    text = (EXAMPLES / "claim_parts.proto").read_text(encoding="utf-8")
    domains = {"part": ["a", "b"]}
    compile_cache.compile_cached(text, "here/claim_parts.proto", domains)
    from unmask.language import compiler

    monkeypatch.setattr(compiler, "compile_source", None)  # a hit must not compile
    moved = _from_disk(text, "elsewhere/claim_parts.proto", domains)
    _same(moved, compile_source(text, "elsewhere/claim_parts.proto", domains))
    assert {s.file for s in cache_writer.spans(moved) if s} == {"elsewhere/claim_parts.proto"}
    assert len(_entries(folder)) == 1


def test_compile_errors_are_reported_the_same_and_never_cached(tmp_path):
    bad = tmp_path / "bad.proto"
    bad.write_text("protocol p\natom a : judge\ndecision pass iff a and b\n", encoding="utf-8")
    replay = json.loads((EXAMPLES / "case_a.json").read_text(encoding="utf-8"))
    replay["protocol"] = {"path": "bad.proto"}
    (tmp_path / "r.json").write_text(json.dumps(replay), encoding="utf-8")
    env = {**os.environ, cache.CACHE_ENV: str(tmp_path / "cache")}
    runs = [_check(["check", str(tmp_path / "r.json")], env)[:3] for _ in range(2)]
    off = _check(["check", str(tmp_path / "r.json")], {**env, cache.CACHE_ENV: ""})[:3]
    assert runs[0] == runs[1] == off[:3]
    assert runs[0][0] == 4 and "bad.proto:3:" in runs[0][2]
    assert not _entries(tmp_path / "cache")


def test_a_limit_is_not_escaped_through_the_disk(folder):
    text = (EXAMPLES / "factual_claims_family.proto").read_text(encoding="utf-8")
    compile_cache.compile_cached(text, "f.proto", {"claim": ["c1", "c2", "c3"]})
    compile_cache._memo.cache_clear()
    with pytest.raises(UnmaskError) as info:
        compile_cache.compile_cached(
            text, "f.proto", {"claim": ["c1", "c2", "c3"]}, Limits(max_atoms=2)
        )
    assert {d.code for d in info.value.diagnostics} == {"limit"}


def test_an_empty_setting_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    compile_cache._memo.cache_clear()
    text = (EXAMPLES / "factual_claims.proto").read_text(encoding="utf-8")
    assert compile_cache.compile_cached(text, "f.proto") == compile_source(text, "f.proto")
    assert not any(tmp_path.iterdir())
    compile_cache._memo.cache_clear()


def test_an_unusable_folder_only_costs_a_compile(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    monkeypatch.setenv(cache.CACHE_ENV, str(blocker / "below"))
    compile_cache._memo.cache_clear()
    text = (EXAMPLES / "factual_claims.proto").read_text(encoding="utf-8")
    assert compile_cache.compile_cached(text, "f.proto") == compile_source(text, "f.proto")
    compile_cache._memo.cache_clear()


def test_writes_per_process_and_entries_per_folder_are_bounded(folder, monkeypatch):
    monkeypatch.setattr(cache_writer, "MAX_ENTRIES", 3)
    monkeypatch.setattr(cache_writer, "WRITES_PER_PROCESS", 5)
    text = (EXAMPLES / "factual_claims_family.proto").read_text(encoding="utf-8")
    for i in range(8):
        compile_cache.compile_cached(text, "f.proto", {"claim": [f"c{i}"]})
        assert len(_entries(folder)) <= 3
    assert cache_writer._writes == 5
    assert len(_entries(folder)) == 3


def test_a_large_protocol_is_not_written(folder, monkeypatch):
    monkeypatch.setattr(cache_writer, "MAX_ATOMS", 4)
    text = (EXAMPLES / "factual_claims_family.proto").read_text(encoding="utf-8")
    compile_cache.compile_cached(text, "f.proto", {"claim": ["c1", "c2"]})  # 5 atoms
    assert not _entries(folder)
    compile_cache.compile_cached(text, "f.proto", {"claim": ["c1"]})  # 3 atoms
    assert len(_entries(folder)) == 1


def test_a_link_in_the_place_of_an_entry_is_replaced_not_followed(folder, tmp_path):
    text = (EXAMPLES / "factual_claims.proto").read_text(encoding="utf-8")
    compiled = compile_cache.compile_cached(text, "f.proto")
    (entry,) = _entries(folder)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me", encoding="utf-8")
    entry.unlink()
    entry.symlink_to(victim)
    _same(_from_disk(text, "f.proto", None), compiled)
    assert victim.read_text(encoding="utf-8") == "keep me"
    assert not entry.is_symlink() and _payload(entry)["key"]
    assert not list(folder.glob("*.tmp"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_pipe_in_the_place_of_an_entry_is_not_read(folder):
    text = (EXAMPLES / "factual_claims.proto").read_text(encoding="utf-8")
    compiled = compile_cache.compile_cached(text, "f.proto")
    (entry,) = _entries(folder)
    entry.unlink()
    os.mkfifo(entry)  # opening it to read would wait for a writer for ever
    _same(_from_disk(text, "f.proto", None), compiled)
    assert entry.is_file()
