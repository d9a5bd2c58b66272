"""The cache folder is trusted only when it is the user's own: another user's folder, a
folder others can write, an entry others can write or that is not a regular file, an
entry whose seal does not hold, are never read (one warning for the folder, a miss for an
entry), never a hang, never a different protocol; nothing in the folder is ever unpickled
(the parser's tables ship with the package); concurrent writers leave valid entries.
Issue 28."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unmask.ir.json import protocol_to_json
from unmask.language import cache, cache_writer, compile_cache, compiler
from unmask.language import parser as parser_mod
from unmask.language.compiler import compile_source
from unmask.plumbing import cachedir

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TEXT = (EXAMPLES / "factual_claims.proto").read_text(encoding="utf-8")
MAIN = "from unmask.cli.main import main; main()"
OTHER_UID = 12345
root_only = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can give a file away"
)
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")


def _fresh() -> None:
    compile_cache._memo.cache_clear()
    cachedir._warned = False
    cache_writer._writes = 0


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Iterator[Path]:
    where = tmp_path / "cache"
    monkeypatch.setenv(cachedir.CACHE_ENV, str(where))
    _fresh()
    yield where
    _fresh()


@contextmanager
def _alarm(seconds: int) -> Iterator[None]:
    """Fail instead of hanging: a blocking open of a pipe would wait for ever."""

    def ring(*_):
        raise TimeoutError("hung")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _compiles(monkeypatch) -> list[str]:
    """Every call of the compiler from now on."""
    calls: list[str] = []
    real = compiler.compile_source
    monkeypatch.setattr(
        compiler, "compile_source", lambda *a, **k: calls.append(a[1]) or real(*a, **k)
    )
    return calls


def _entry(folder: Path) -> Path:
    (entry,) = folder.glob(f"{cache.ENTRY_PREFIX}*.json")
    return entry


# --- the folder -------------------------------------------------------------------------------


def _untrusted_folder_is_not_used(folder: Path, capsys, monkeypatch) -> None:
    before = sorted(p.name for p in folder.iterdir())
    calls = _compiles(monkeypatch)
    for _ in range(2):
        compile_cache._memo.cache_clear()
        assert compile_cache.compile_cached(TEXT, "f.proto") == compile_source(TEXT, "f.proto")
    assert calls == ["f.proto", "f.proto"], "an entry of an untrusted folder was read"
    assert sorted(p.name for p in folder.iterdir()) == before, "written into it"
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1, err  # one warning, however often the cache is asked for
    assert err[0].startswith("warning: the cache folder `") and str(folder) in err[0]


def _fill(folder: Path) -> None:
    """A cache folder holding the key and one protocol entry."""
    compile_cache.compile_cached(TEXT, "f.proto")
    _fresh()
    assert {p.name.split("-")[0] for p in folder.iterdir()} == {"key", "protocol"}


def test_a_folder_others_can_write_is_not_used(folder, capsys, monkeypatch):
    _fill(folder)
    folder.chmod(0o777)
    _untrusted_folder_is_not_used(folder, capsys, monkeypatch)
    folder.chmod(0o770)  # the group is others too
    _fresh()
    _untrusted_folder_is_not_used(folder, capsys, monkeypatch)


def test_an_existing_world_writable_folder_is_not_made_private_and_used(folder, capsys):
    folder.mkdir(mode=0o700)
    folder.chmod(0o1777)  # as /tmp is: sticky does not stop a stranger's new file
    assert cachedir.trusted_dir() is None
    assert "writable by other users" in capsys.readouterr().err
    assert not any(folder.iterdir())


@root_only
def test_a_folder_of_another_user_is_not_used(folder, capsys, monkeypatch):
    _fill(folder)
    os.chown(folder, OTHER_UID, OTHER_UID)
    _untrusted_folder_is_not_used(folder, capsys, monkeypatch)


def test_a_link_in_place_of_the_folder_is_not_used(folder, tmp_path, capsys, monkeypatch):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    folder.symlink_to(real)
    _untrusted_folder_is_not_used(folder, capsys, monkeypatch)
    assert not any(real.iterdir())


def test_the_warning_is_one_line_and_the_command_still_works(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    env = {**os.environ, cachedir.CACHE_ENV: str(shared)}
    args = [sys.executable, "-c", MAIN, "check", str(EXAMPLES / "case_a.json")]
    run = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    off = subprocess.run(
        args, env={**env, cachedir.CACHE_ENV: ""}, capture_output=True, text=True, timeout=120
    )
    assert (run.returncode, run.stdout) == (off.returncode, off.stdout)
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("warning: the cache folder `")
    assert "Traceback" not in run.stderr and not any(shared.iterdir())


def test_an_audit_with_workers_warns_once(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    cases = tmp_path / "cases"
    cases.mkdir()
    for name in ("case_a.json", "case_b.json", "factual_claims.proto"):
        (cases / name).write_bytes((EXAMPLES / name).read_bytes())
    env = {**os.environ, cachedir.CACHE_ENV: str(shared)}
    args = [sys.executable, "-c", MAIN, "audit", str(cases), "--jobs", "2", "--quiet"]
    args += ["--out", str(tmp_path / "r.jsonl")]
    run = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode in (0, 1), run.stderr
    assert run.stderr.count("warning: the cache folder") == 1, run.stderr
    assert not any(shared.iterdir())


# --- entries ----------------------------------------------------------------------------------


def test_an_entry_others_can_write_is_a_miss(folder, monkeypatch):
    _fill(folder)
    entry = _entry(folder)
    entry.chmod(0o666)
    calls = _compiles(monkeypatch)
    assert compile_cache.compile_cached(TEXT, "f.proto") == compile_source(TEXT, "f.proto")
    assert calls == ["f.proto"], "an entry others can write was read"
    assert entry.stat().st_mode & 0o777 == 0o600  # replaced by a private one


@root_only
def test_an_entry_of_another_user_is_a_miss(folder, monkeypatch):
    _fill(folder)
    os.chown(_entry(folder), OTHER_UID, OTHER_UID)
    calls = _compiles(monkeypatch)
    compile_cache.compile_cached(TEXT, "f.proto")
    assert calls == ["f.proto"]
    assert _entry(folder).stat().st_uid == os.geteuid()


def _evil_pickle(marker: Path) -> bytes:
    class Evil:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    return pickle.dumps(Evil())


def test_no_pickle_in_the_cache_folder_is_ever_loaded(folder, tmp_path):
    # the parser's tables were a pickle here, loaded when their seal held; now nothing
    # here is unpickled, even a pickle sealed under the folder's own key (a stolen key, a
    # file of an older Unmask), under the old tables' name or an entry's
    _fill(folder)
    marker = tmp_path / "code-ran"
    evil = _evil_pickle(marker)
    names = ["parser-0123456789abcdef01234567.lark", _entry(folder).name]
    for name in names:
        assert cachedir.write_sealed(folder / name, evil)
    parser_mod.lark_parser.cache_clear()
    try:
        assert parser_mod.lark_parser().parse("protocol p\ndecision pass iff a\n")
    finally:
        parser_mod.lark_parser.cache_clear()
    assert compile_cache.compile_cached(TEXT, "f.proto") == compile_source(TEXT, "f.proto")
    args = [sys.executable, "-c", MAIN, "check", str(EXAMPLES / "case_a.json")]
    env = {**os.environ, cachedir.CACHE_ENV: str(folder)}
    run = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert not marker.exists(), "a pickle from the cache folder ran code"


def test_a_key_others_can_read_or_a_damaged_key_is_replaced(folder, monkeypatch):
    _fill(folder)
    key = folder / cachedir.KEY_NAME
    calls = _compiles(monkeypatch)
    for damage in ("readable", "short"):
        old = key.read_bytes()
        if damage == "readable":
            key.chmod(0o644)  # whoever read it could forge entries: no longer a secret
        else:
            key.write_bytes(b"short")
        compile_cache._memo.cache_clear()
        compile_cache.compile_cached(TEXT, "f.proto")
        assert key.stat().st_mode & 0o777 == 0o600
        assert len(key.read_bytes()) == cachedir.KEY_BYTES and key.read_bytes() != old
    assert calls == ["f.proto", "f.proto"]  # each entry of the old key was a miss
    compile_cache._memo.cache_clear()
    compile_cache.compile_cached(TEXT, "f.proto")
    assert calls == ["f.proto", "f.proto"]  # and the new key's entry a hit


def test_an_edited_entry_with_its_key_kept_is_a_miss(folder, monkeypatch):
    text = (EXAMPLES / "factual_claims.proto").read_text(encoding="utf-8")
    compiled = compile_cache.compile_cached(text, "f.proto")
    entry = _entry(folder)
    obj = json.loads(cachedir.read_sealed(entry, cache.MAX_ENTRY_BYTES) or b"")
    # a stranger's edit: `pass iff a and b` becomes `pass iff a or b`, the key kept, the
    # spans still fitting (so before seals this entry was read as the protocol)
    edited = json.loads(json.dumps(obj))
    assert edited["protocol"]["decision"]["op"] == "and"
    edited["protocol"]["decision"]["op"] = "or"
    sealed = entry.read_bytes()
    payload_at = sealed.index(b"\n") + 1
    calls = _compiles(monkeypatch)
    for data in [
        json.dumps(edited).encode(),  # the bare JSON, as the entry was before seals
        sealed[:payload_at] + json.dumps(edited).encode(),  # the old seal kept
    ]:
        entry.write_bytes(data)
        compile_cache._memo.cache_clear()
        assert protocol_to_json(compile_cache.compile_cached(text, "f.proto")) == (
            protocol_to_json(compiled)
        )
    assert calls == ["f.proto", "f.proto"]
    # sealed by the key itself (a copy of another folder's entry) but for another source
    other_source = {**obj, "source": "0" * 64}
    assert cachedir.write_sealed(entry, json.dumps(other_source).encode())
    compile_cache._memo.cache_clear()
    compile_cache.compile_cached(text, "f.proto")
    assert calls == ["f.proto"] * 3


def test_the_seal_is_keyed_blake2b_and_an_older_seal_is_a_miss(folder, monkeypatch):
    import hashlib
    import hmac

    compiled = compile_cache.compile_cached(TEXT, "f.proto")
    entry = _entry(folder)
    key = (folder / cachedir.KEY_NAME).read_bytes()
    sealed = entry.read_bytes()
    head, payload = sealed.split(b"\n", 1)
    # the MAC, made here with hashlib: BLAKE2b keyed by the folder's key over name NUL payload
    mac = hashlib.blake2b(
        entry.name.encode() + b"\0" + payload, key=key, digest_size=32, person=b"unmask-seal"
    )
    assert head == cachedir.MAGIC + mac.hexdigest().encode()
    # an entry an earlier Unmask sealed (HMAC-SHA256) is compiled again, and replaced
    old = hmac.new(key, entry.name.encode() + b"\0" + payload, hashlib.sha256).hexdigest()
    entry.write_bytes(b"unmask-sealed/1 " + old.encode() + b"\n" + payload)
    calls = _compiles(monkeypatch)
    compile_cache._memo.cache_clear()
    again = compile_cache.compile_cached(TEXT, "f.proto")
    assert calls == ["f.proto"]
    assert protocol_to_json(again) == protocol_to_json(compiled)
    assert entry.read_bytes() == sealed


def test_an_entry_records_the_digest_of_its_source(folder):
    import hashlib

    compile_cache.compile_cached(TEXT, "f.proto")
    obj = json.loads(cachedir.read_sealed(_entry(folder), cache.MAX_ENTRY_BYTES) or b"")
    assert obj["source"] == hashlib.blake2b(TEXT.encode(), digest_size=32).hexdigest()


@needs_fifo
def test_a_pipe_in_place_of_an_entry_is_a_miss_not_a_hang_for_a_command(tmp_path):
    folder = tmp_path / "c"
    env = {**os.environ, cachedir.CACHE_ENV: str(folder)}
    args = [sys.executable, "-c", MAIN, "check", str(EXAMPLES / "case_a.json")]
    first = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    entry = _entry(folder)
    for swap in ("fifo", "tty"):
        entry.unlink()
        if swap == "fifo":
            os.mkfifo(entry)  # a blocking open waits for a writer for ever
        else:
            entry.symlink_to("/dev/tty")
        run = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)
        assert (run.returncode, run.stdout, run.stderr) == (0, first.stdout, "")
        assert entry.is_file() and not entry.is_symlink()  # replaced by the entry


@needs_fifo
def test_a_pipe_in_place_of_an_entry_or_the_key_is_a_miss_not_a_hang(folder, monkeypatch):
    _fill(folder)
    for victim in (_entry(folder), folder / cachedir.KEY_NAME):
        victim.unlink()
        os.mkfifo(victim)
        _fresh()
        with _alarm(30):
            assert compile_cache.compile_cached(TEXT, "f.proto") == compile_source(TEXT, "f.proto")


# --- concurrent writers -----------------------------------------------------------------------

_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from unmask.language.compile_cache import compile_cached
    text = Path(sys.argv[1]).read_text(encoding="utf-8")
    for i in range(6):
        compile_cached(text, "f.proto", {"claim": [f"c{i}", f"d{i}"]})
    """
)


def test_concurrent_writers_leave_valid_entries(tmp_path, monkeypatch):
    folder = tmp_path / "c"
    env = {**os.environ, cachedir.CACHE_ENV: str(folder)}
    proto = EXAMPLES / "factual_claims_family.proto"
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(proto)], env=env) for _ in range(4)
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    names = sorted(p.name for p in folder.iterdir())
    assert not [n for n in names if n.endswith(".tmp")], names
    assert len([n for n in names if n.startswith("protocol-")]) == 6
    # every entry is sealed under the one key and is read back without compiling
    monkeypatch.setenv(cachedir.CACHE_ENV, str(folder))
    _fresh()
    calls = _compiles(monkeypatch)
    text = proto.read_text(encoding="utf-8")
    for i in range(6):
        doms = {"claim": [f"c{i}", f"d{i}"]}
        got = compile_cache.compile_cached(text, "f.proto", doms)
        assert protocol_to_json(got) == protocol_to_json(compile_source(text, "f.proto", doms))
    assert calls == []
    _fresh()


# --- the fuzz: owner, mode and kind of the folder and of an entry ------------------------------

FUZZ_CASES = 60  # in CI; each builds a folder and compiles once or twice

_KINDS = ("file", "link", "fifo", "dir", "garbage")


@settings(
    max_examples=FUZZ_CASES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    folder_kind=st.sampled_from(("dir", "link", "file")),
    folder_mode=st.integers(0o500, 0o777),
    folder_other=st.booleans(),
    entry_kind=st.sampled_from(_KINDS),
    entry_mode=st.integers(0o400, 0o777),
    entry_other=st.booleans(),
)
def test_fuzz_the_cache_folder(
    tmp_path_factory,
    monkeypatch,
    folder_kind,
    folder_mode,
    folder_other,
    entry_kind,
    entry_mode,
    entry_other,
):
    root = os.geteuid() == 0
    base = tmp_path_factory.mktemp("fuzz")
    folder = base / "c"
    monkeypatch.setenv(cachedir.CACHE_ENV, str(folder))
    _fresh()
    compile_cache.compile_cached(TEXT, "f.proto")  # a good entry, then the case made of it
    entry = _entry(folder)
    good = entry.read_bytes()
    entry.unlink()
    if entry_kind == "file":
        entry.write_bytes(good)
    elif entry_kind == "garbage":
        entry.write_bytes(good[:-3] + b"!!}")
    elif entry_kind == "link":
        (base / "elsewhere").write_bytes(good)
        entry.symlink_to(base / "elsewhere")
    elif entry_kind == "fifo":
        os.mkfifo(entry)
    else:
        entry.mkdir()
    if entry_kind in ("file", "garbage"):
        entry.chmod(entry_mode)
        if entry_other and root:
            os.chown(entry, OTHER_UID, OTHER_UID)
    entry_ok = entry_kind == "file" and not entry_mode & 0o022 and not (entry_other and root)
    if folder_kind == "link":
        folder.rename(base / "real")
        folder.symlink_to(base / "real")
    elif folder_kind == "file":
        folder.rename(base / "real")
        folder.write_bytes(b"")
    if folder_kind == "dir":
        folder.chmod(folder_mode)
        if folder_other and root:
            os.chown(folder, OTHER_UID, OTHER_UID)
    trusted = folder_kind == "dir" and not folder_mode & 0o022 and not (folder_other and root)
    _fresh()
    calls = _compiles(monkeypatch)
    try:
        with _alarm(30):
            got = compile_cache.compile_cached(TEXT, "f.proto")
    finally:
        monkeypatch.undo()
    assert got == compile_source(TEXT, "f.proto")
    hit = calls == []
    assert hit == (trusted and entry_ok), (trusted, entry_ok, calls)
    if folder_kind == "dir":
        folder.chmod(0o700)


# --- shape: no circle, one table --------------------------------------------------------------


def _imports(module: str) -> set[str]:
    """The `unmask` modules ``module`` imports anywhere in its source (lazily too)."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    found: set[str] = set()
    for node in ast.walk(ast.parse(Path(spec.origin).read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("unmask"):
            for a in node.names:
                full = f"{node.module}.{a.name}"
                found.add(
                    full
                    if importlib.util.find_spec(node.module) and _is_module(full)
                    else node.module
                )
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("unmask"))
    return found


def _is_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def test_the_cache_modules_import_no_circle():
    """`cache -> compiler -> parser -> cache` and `cache <-> cache_writer` are gone: the
    folder is a leaf both use, `compile_cached` sits above both halves of the cache."""
    start = [
        "unmask.plumbing.cachedir",
        "unmask.language.cache",
        "unmask.language.cache_writer",
        "unmask.language.compile_cache",
    ]
    graph: dict[str, set[str]] = {}
    todo = [*start, "unmask.language.parser", "unmask.language.compiler"]
    while todo:
        m = todo.pop()
        if m not in graph:
            graph[m] = _imports(m)
            todo.extend(graph[m])

    def reaches(a: str, b: str) -> bool:
        seen, stack = set(), [a]
        while stack:
            m = stack.pop()
            for n in graph.get(m, ()):
                if n == b:
                    return True
                if n not in seen:
                    seen.add(n)
                    stack.append(n)
        return False

    for m in [*start, "unmask.language.parser", "unmask.language.compiler"]:
        assert not reaches(m, m), f"{m} imports itself through a circle"
    assert graph["unmask.plumbing.cachedir"] <= {
        "unmask.plumbing.outputs",
        "unmask.plumbing.diagnostics",
        "unmask.plumbing.codes",  # a leaf: it imports nothing of the package
    }
    assert graph["unmask.plumbing.codes"] == set()
    assert "unmask.language.compiler" not in graph["unmask.language.cache"]


def test_the_span_rebuild_is_a_table_over_every_kind():
    from unmask import ir

    assert isinstance(cache._WITH_SPANS, ir.Table)
    assert set(cache._WITH_SPANS.by_kind) == set(ir.KINDS)
