"""What a replay may read: protocol paths confined to the replay's folder and the allowed
folders, regular files only, bounded reads, and no file content echoed in an error.

The commands run in a separate process where a hang or a leak would matter: a FIFO must
fail fast (a timeout fails the test instead of blocking the suite), and
``/proc/self/environ`` is the environment of the process that reads it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from unmask.ir.json import protocol_to_json
from unmask.ir.json_reader import OPERATORS, protocol_from_json
from unmask.language.compiler import compile_file
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.files import read_bytes, read_text
from unmask.plumbing.jsonload import read_json_file
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.replay.load import load_replay, load_replay_text, render_error

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PROTO = (EXAMPLES / "factual_claims.proto").read_text(encoding="utf-8")
CANARY = "canary-5e1f0a9d-do-not-print"
SECRET = "API_KEY=sk-test-0000-never-shown"
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX paths")


def cli(*args: str, cwd: Path | None = None, env: dict | None = None, program: str = "unmask"):
    """Run a command in its own process, with a canary in its environment."""
    main = "unmask.cli.main" if program == "unmask" else "unmask.cli.unmaskc"
    code = f"from {main} import main; main()"
    full_env = {**os.environ, "UNMASK_CANARY": CANARY, **(env or {})}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=full_env,
    )


def replay_with(path: str) -> dict:
    r = json.loads((EXAMPLES / "case_a.json").read_text(encoding="utf-8"))
    r["protocol"] = {"path": path}
    return r


def write_replay(folder: Path, path: str, name: str = "r.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / name
    f.write_text(json.dumps(replay_with(path)), encoding="utf-8")
    return f


def diagnostics_of(f: Path, limits: Limits = DEFAULT_LIMITS) -> list:
    with pytest.raises(UnmaskError) as exc:
        load_replay(f, limits)
    return list(exc.value.diagnostics)


def only(f: Path, limits: Limits = DEFAULT_LIMITS):
    ds = diagnostics_of(f, limits)
    assert len(ds) == 1, [(d.code, d.message) for d in ds]
    return ds[0]


# --- the environment, /etc/passwd, ../secrets ----------------------------------------------


@posix_only
@pytest.mark.parametrize("command", ["validate", "check"])
def test_proc_self_environ_is_refused_and_nothing_of_the_environment_is_printed(tmp_path, command):
    f = write_replay(tmp_path, "/proc/self/environ")
    res = cli(command, str(f))
    assert res.returncode == 4
    out = res.stdout + res.stderr
    assert CANARY not in out
    assert os.environ.get("PATH", "/usr/bin") not in out
    assert "is absolute, not relative to the replay's folder" in res.stderr
    assert "--protocol-path" in res.stderr


@posix_only
def test_a_relative_path_into_proc_is_refused_too(tmp_path):
    up = "../" * (len(tmp_path.parts) + 1)
    for path in (up + "proc/self/environ", up + "proc/self/environ.proto"):
        d = only(write_replay(tmp_path, path))
        assert d.code == "protocol-path" and d.path == "protocol.path"
        assert CANARY not in render_error(UnmaskError([d]))


@posix_only
def test_etc_passwd_is_refused_without_its_content(tmp_path):
    f = write_replay(tmp_path, "/etc/passwd")
    d = only(f)
    assert (d.code, d.path) == ("protocol-path", "protocol.path")
    assert "root:" not in d.message and "absolute" in d.message


def test_an_escape_from_the_replay_folder_is_refused(tmp_path):
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / ".env").write_text(SECRET + "\n")
    (tmp_path / "secrets" / "p.proto").write_text(PROTO)
    for path in ("../secrets/.env", "../secrets/p.proto", "sub/../../secrets/p.proto"):
        d = only(write_replay(tmp_path / "case", path))
        assert d.code == "protocol-path", path
        text = render_error(UnmaskError([d]))
        assert SECRET not in text and "protocol iff" not in text
    d = only(write_replay(tmp_path / "case", "../secrets/.env"))
    assert "does not name a `.proto` file" in d.message
    d = only(write_replay(tmp_path / "case", "../secrets/p.proto"))
    assert "leads outside the replay's folder" in d.message
    assert "--protocol-path" in d.help and "UNMASK_PROTOCOL_PATH" in d.help


def test_a_file_that_is_not_a_proto_is_refused_and_not_quoted(tmp_path):
    (tmp_path / "notes.txt").write_text(SECRET)
    res = cli("validate", str(write_replay(tmp_path, "notes.txt")))
    assert res.returncode == 4
    assert SECRET not in res.stderr + res.stdout
    assert "does not name a `.proto` file" in res.stderr


# --- symbolic links -------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
def test_a_symlink_inside_the_folder_pointing_outside_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "p.proto").write_text(PROTO)
    case = tmp_path / "case"
    case.mkdir()
    (case / "link.proto").symlink_to(outside / "p.proto")
    (case / "dir").symlink_to(outside, target_is_directory=True)
    for path in ("link.proto", "dir/p.proto"):
        d = only(write_replay(case, path))
        assert d.code == "protocol-path" and "leads outside" in d.message
    # allowing the folder the links lead to makes them fine
    allowed = Limits(protocol_path=(str(outside),))
    assert load_replay(write_replay(case, "link.proto"), allowed).id == "case-a"


@posix_only
def test_a_proto_named_symlink_to_a_secret_is_refused_without_its_content(tmp_path):
    (tmp_path / "secret.txt").write_text(SECRET)
    (tmp_path / "p.proto").symlink_to(tmp_path / "secret.txt")
    d = only(write_replay(tmp_path, "p.proto"))
    assert d.code == "protocol-path" and "is a link to a file that is not" in d.message
    assert SECRET not in render_error(UnmaskError([d]))
    (tmp_path / "env.proto").symlink_to("/proc/self/environ")
    d = only(write_replay(tmp_path, "env.proto"))
    assert d.code == "protocol-path"


@posix_only
def test_a_link_swapped_in_after_the_check_is_refused_not_followed(tmp_path, monkeypatch):
    # the path the rules checked has every link resolved; a link found there at the read
    # was put there since (issue 33): refused, its target never read
    import unmask.replay.load as replay_module

    (tmp_path / "secret.txt").write_text(SECRET)
    (tmp_path / "p.proto").write_text(PROTO)
    swapped = tmp_path / "swapped.proto"
    swapped.symlink_to(tmp_path / "secret.txt")
    monkeypatch.setattr(
        replay_module, "locate_protocol", lambda *a: (str(swapped), str(tmp_path / "p.proto"))
    )
    d = only(write_replay(tmp_path, "p.proto"))
    assert d.code == "protocol-file"
    assert "is a symbolic link, which is not followed here" in d.message
    assert SECRET not in render_error(UnmaskError([d]))


# --- allowing folders ---------------------------------------------------------------------


def test_protocol_path_option_allows_a_sibling_folder(tmp_path):
    shared = tmp_path / "protocols"
    shared.mkdir()
    (shared / "factual_claims.proto").write_text(PROTO)
    f = write_replay(tmp_path / "cases", "../protocols/factual_claims.proto")
    refused = cli("validate", str(f))
    assert refused.returncode == 4 and "leads outside" in refused.stderr
    res = cli("validate", str(f), "--protocol-path", str(shared))
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("case-a: valid")
    res = cli("check", str(f), "--protocol-path", str(shared), "--format", "json")
    assert res.returncode == 0, res.stderr


def test_the_environment_variable_allows_a_folder(tmp_path):
    shared = tmp_path / "protocols"
    shared.mkdir()
    (shared / "factual_claims.proto").write_text(PROTO)
    f = write_replay(tmp_path / "cases", "../protocols/factual_claims.proto")
    env = {"UNMASK_PROTOCOL_PATH": os.pathsep.join([str(tmp_path / "nowhere"), str(shared)])}
    res = cli("validate", str(f), env=env)
    assert res.returncode == 0, res.stderr


def test_an_absolute_path_stays_refused_inside_an_allowed_folder(tmp_path):
    (tmp_path / "p.proto").write_text(PROTO)
    f = write_replay(tmp_path / "cases", str(tmp_path / "p.proto"))
    d = only(f, Limits(protocol_path=(str(tmp_path),)))
    assert d.code == "protocol-path" and "absolute" in d.message


def test_subfolders_of_the_replay_folder_are_allowed(tmp_path):
    (tmp_path / "protocols").mkdir()
    (tmp_path / "protocols" / "fc.proto").write_text(PROTO)
    assert load_replay(write_replay(tmp_path, "protocols/fc.proto")).id == "case-a"


@pytest.mark.parametrize("command", ["check", "validate", "crosscheck", "audit"])
def test_every_command_that_reads_replays_has_the_option(command):
    from click.testing import CliRunner

    from unmask.cli.main import main

    assert "--protocol-path" in CliRunner().invoke(main, [command, "--help"]).stdout


def test_a_replay_without_a_file_uses_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "fc.proto").write_text(PROTO)
    monkeypatch.chdir(tmp_path)
    text = json.dumps(replay_with("fc.proto"))
    assert load_replay_text(text, "<stdin>").id == "case-a"
    (tmp_path / "inner").mkdir()
    monkeypatch.chdir(tmp_path / "inner")
    with pytest.raises(UnmaskError) as exc:
        load_replay_text(json.dumps(replay_with("../fc.proto")), "<stdin>")
    assert exc.value.diagnostics[0].code == "protocol-path"


def test_audit_of_a_hostile_replay_leaks_nothing_into_its_outputs(tmp_path):
    f = write_replay(tmp_path / "in", "/proc/self/environ")
    junit = tmp_path / "junit.xml"
    res = cli("audit", str(f), "--junit", str(junit))
    assert res.returncode != 0
    everything = res.stdout + res.stderr + junit.read_text(encoding="utf-8")
    assert CANARY not in everything and "protocol-path" in res.stdout


# --- file kinds: FIFOs, devices, directories, /proc -----------------------------------------


@needs_fifo
@pytest.mark.parametrize("command", ["validate", "check", "crosscheck"])
def test_a_fifo_as_protocol_fails_fast(tmp_path, command):
    os.mkfifo(tmp_path / "p.proto")
    res = cli(command, str(write_replay(tmp_path, "p.proto")))
    assert res.returncode == 4
    assert "is a named pipe, not a regular file" in res.stderr


@needs_fifo
@pytest.mark.parametrize("command", ["validate", "check", "crosscheck"])
def test_a_fifo_as_the_replay_fails_fast(tmp_path, command):
    os.mkfifo(tmp_path / "r.json")
    res = cli(command, str(tmp_path / "r.json"))
    assert res.returncode == 4
    assert "is a named pipe, not a regular file" in res.stderr


@needs_fifo
def test_unmaskc_refuses_a_fifo(tmp_path):
    os.mkfifo(tmp_path / "p.proto")
    res = cli(str(tmp_path / "p.proto"), program="unmaskc")
    assert res.returncode == 2 and "named pipe" in res.stderr


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_unmaskc_dev_zero_is_refused_without_reading(tmp_path):
    import resource

    def small() -> None:  # the old reader grew without bound here
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    res = subprocess.run(
        [sys.executable, "-c", "from unmask.cli.unmaskc import main; main()", "/dev/zero"],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=small,
    )
    assert res.returncode == 2
    assert "`/dev/zero` is a device, not a regular file" in res.stderr


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: None, "no such file"),
    ],
)
def test_read_text_refuses_what_is_not_a_regular_file(tmp_path, make, says):
    p = tmp_path / "x.proto"
    make(p)
    with pytest.raises(UnmaskError) as exc:
        read_text(p)
    (d,) = exc.value.diagnostics
    assert d.code == "io" and says in d.message


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="no /proc here")
def test_read_text_never_reads_under_proc():
    for path in ("/proc/self/status", "/proc/self/environ"):
        with pytest.raises(UnmaskError) as exc:
            read_bytes(path)
        (d,) = exc.value.diagnostics
        assert d.code == "io" and "under `/proc`" in d.message


def test_the_read_is_bounded_even_when_the_size_lies(tmp_path, monkeypatch):
    f = tmp_path / "big.json"
    f.write_bytes(b" " * 5000)
    real_stat = os.stat

    def lying_stat(path, *args, **kw):
        st = real_stat(path, *args, **kw)
        return os.stat_result((*tuple(st)[:6], 0, *tuple(st)[7:]))  # st_size 0, as in /proc

    monkeypatch.setattr("unmask.plumbing.files.os.stat", lying_stat)
    with pytest.raises(UnmaskError) as exc:
        read_bytes(f, Limits(max_file_bytes=100))
    assert exc.value.diagnostics[0].code == "limit"


# --- one reader, one wording ----------------------------------------------------------------


def test_the_three_readers_word_the_size_limit_the_same(tmp_path):
    proto = tmp_path / "p.proto"
    proto.write_text(PROTO + "#" * 10_000 + "\n")
    r = write_replay(tmp_path, "p.proto")
    size = len(r.read_bytes())  # the replay fits, its protocol does not
    with pytest.raises(UnmaskError) as a:
        compile_file(proto, limits=Limits(max_file_bytes=size))
    with pytest.raises(UnmaskError) as b:
        read_json_file(r, Limits(max_file_bytes=100))
    c = only(r, Limits(max_file_bytes=size))
    assert a.value.diagnostics[0].message == f"`{proto}` is larger than the limit of {size} bytes"
    assert b.value.diagnostics[0].message == f"`{r}` is larger than the limit of 100 bytes"
    assert c.message == a.value.diagnostics[0].message
    assert (c.code, c.path) == ("limit", "protocol.path")
    assert a.value.diagnostics[0].code == b.value.diagnostics[0].code == "limit"


def test_a_proto_that_is_not_text_is_not_quoted(tmp_path):
    (tmp_path / "nul.proto").write_bytes(b'protocol p "x"\n' + SECRET.encode() + b"\x00\n")
    (tmp_path / "bin.proto").write_bytes(SECRET.encode() + b"\n\xff\xfe")
    for name, code in (("nul.proto", "encoding"), ("bin.proto", "encoding")):
        f = write_replay(tmp_path, name)
        with pytest.raises(UnmaskError) as exc:
            load_replay(f)
        assert [d.code for d in exc.value.diagnostics] == [code]
        assert SECRET not in render_error(exc.value)


def test_a_real_proto_parse_error_may_show_its_line(tmp_path):
    (tmp_path / "p.proto").write_text(PROTO.replace("decision pass iff", "decision pass if"))
    with pytest.raises(UnmaskError) as exc:
        load_replay(write_replay(tmp_path, "p.proto"))
    assert "decision pass if" in render_error(exc.value)


# --- the split: the IR reader's table, and what loading a replay imports ---------------------


def test_every_operator_of_the_table_reads_back_what_the_writer_wrote():
    from unmask import ir

    a, b, c = ir.Atom("a"), ir.Atom("b"), ir.Atom("c")
    exprs = {
        "not": ir.Not(a),
        "and": ir.Nary("and", (a, b)),
        "or": ir.Nary("or", (a, b)),
        "xor": ir.Nary("xor", (a, b)),
        "implies": ir.Binary("implies", a, b),
        "iff": ir.Binary("iff", a, b),
        "atleast": ir.Card("atleast", 2, (a, b, c)),
        "atmost": ir.Card("atmost", 1, (a, b, c)),
        "exactly": ir.Card("exactly", 2, (a, b, c)),
    }
    assert set(exprs) == set(OPERATORS)
    for op, e in exprs.items():
        p = ir.Protocol(
            "p",
            "",
            tuple(ir.AtomDecl(n, "judge") for n in "abc"),
            (ir.Constraint("k", e),),
            a,
            (),
            (),
        )
        assert protocol_from_json(protocol_to_json(p)).constraints[0].expr == e, op


def test_loading_a_replay_never_imports_the_checker_or_a_backend():
    code = (
        "import sys; from unmask.replay.load import load_replay; "
        f"load_replay({str(EXAMPLES / 'case_b.json')!r}); "
        "bad = [m for m in sys.modules "
        "if m == 'unmask.checking.checker' or m.startswith('unmask.backends')]; "
        "print(bad)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.stdout.strip() == "[]", res.stderr


def test_audit_stdin_records_resolve_protocol_paths_from_the_working_directory(tmp_path):
    (tmp_path / "fc.proto").write_text(PROTO)
    (tmp_path / "inner").mkdir()
    lines = [json.dumps(replay_with("fc.proto")), json.dumps(replay_with("../fc.proto"))]
    code = "from unmask.cli.main import main; main()"
    res = subprocess.run(
        [sys.executable, "-c", code, "audit", "-"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    records = [json.loads(x) for x in res.stdout.splitlines()]
    assert records[0]["overall"] == "SATISFIED"
    assert records[1]["errors"][0]["code"] == "protocol-path"
    # from a subfolder, the parent is outside the replay's folder unless it is allowed
    res = subprocess.run(
        [sys.executable, "-c", code, "audit", "-", "--protocol-path", ".."],
        input=lines[1] + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path / "inner",
    )
    assert json.loads(res.stdout)["overall"] == "SATISFIED", res.stdout
