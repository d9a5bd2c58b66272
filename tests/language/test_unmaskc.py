"""`unmaskc`: compiling to JSON (stdout and -o), --domain, --emit, fmt with --check and
--write, exit statuses and diagnostics on stderr, and outputs that cannot be written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.unmaskc import cli, parse_domains
from unmask.plumbing.diagnostics import UnmaskError

FAMILY = (
    'protocol fc "claims"\n'
    "domain claim\n"
    'atom supported(claim) : judge "supports {claim}"\n'
    'atom backed(claim) : context "backed {claim}"\n'
    "decision pass iff all(supported(c) for c in claim)\n"
    "for c in claim: ground supported(c) ~ backed(c)\n"
)
PLAIN = 'protocol p "t"\natom a : judge\natom b : context\ndecision pass iff a\nground a ~ b\n'


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def write(tmp_path, name: str, text: str):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_compile_writes_ir_json_on_stdout(runner, tmp_path):
    f = write(tmp_path, "p.proto", PLAIN)
    r = runner.invoke(cli, [str(f)])
    assert r.exit_code == 0, r.output
    assert r.stdout.endswith("}\n")
    doc = json.loads(r.stdout)
    assert doc["schema"] == "unmask.protocol/1"
    assert doc["decision"] == {"atom": "a"}
    assert doc["grounding"] == [{"judge": "a", "context": "b"}]
    assert r.stdout == json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def test_compile_is_also_spelled_explicitly(runner, tmp_path):
    f = write(tmp_path, "p.proto", PLAIN)
    assert runner.invoke(cli, ["compile", str(f)]).stdout == runner.invoke(cli, [str(f)]).stdout


def test_domains_ground_families(runner, tmp_path):
    f = write(tmp_path, "fc.proto", FAMILY)
    r = runner.invoke(cli, [str(f), "--domain", "claim=joined, cto"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [a["name"] for a in doc["atoms"]] == [
        "supported(joined)",
        "supported(cto)",
        "backed(joined)",
        "backed(cto)",
    ]
    assert doc["atoms"][1]["description"] == "supports cto"
    # options may come first, and an empty domain is `claim=`
    r = runner.invoke(cli, ["--domain", "claim=", str(f)])
    assert r.exit_code == 0
    assert json.loads(r.stdout)["decision"] == {"const": True}


def test_output_file(runner, tmp_path):
    f = write(tmp_path, "p.proto", PLAIN)
    out = tmp_path / "p.json"
    r = runner.invoke(cli, [str(f), "-o", str(out)])
    assert r.exit_code == 0 and r.stdout == ""
    assert json.loads(out.read_text(encoding="utf-8"))["name"] == "p"


def test_compile_errors_exit_1_with_located_diagnostics(runner, tmp_path):
    f = write(tmp_path, "bad.proto", PLAIN.replace("iff a", "iff a and zz"))
    r = runner.invoke(cli, [str(f)])
    assert r.exit_code == 1
    assert r.stdout == ""
    assert f"{f}:4:25: error: unknown atom `zz`" in r.stderr
    assert "^^" in r.stderr


def test_json_given_to_unmaskc_is_told_it_is_json(runner, tmp_path):
    # a replay, or compiled IR, where `.proto` text was expected
    from unmask.language.parser import JSON_HELP, parse_source

    for text in ('{"schema": "unmask.replay/1"}\n', "\n  [1, 2]\n"):
        with pytest.raises(UnmaskError) as exc:
            parse_source(text, "r.json")
        d = exc.value.diagnostics[0]
        assert (d.code, d.help) == ("syntax", JSON_HELP)
        assert d.span is not None and d.span.start_pos == text.index(text.strip()[0])
    assert "unmask check FILE.json" in JSON_HELP
    # a `.proto` whose mistake is elsewhere keeps its own help
    with pytest.raises(UnmaskError) as exc:
        parse_source('protocol p "t"\n{', "p.proto")
    assert exc.value.diagnostics[0].help != JSON_HELP
    r = runner.invoke(cli, [str(write(tmp_path, "r.json", '{"id": "r1"}\n'))])
    assert r.exit_code == 1 and "this is JSON, not `.proto` text" in r.stderr


def test_free_domain_without_members_is_checked_and_writes_nothing(runner, tmp_path):
    # more in tests/test_unmaskc_checks.py
    f = write(tmp_path, "fc.proto", FAMILY)
    r = runner.invoke(cli, [str(f)])
    assert r.exit_code == 0
    assert r.stdout == ""
    assert "--domain claim=a,b" in r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--domain", "claim"],
        ["--domain", "=a"],
        ["--domain", "claim=a", "--domain", "claim=b"],
        ["--emit", "pdf"],
        ["--max-atoms", "0"],
        ["--no-such-option"],
    ],
)
def test_usage_errors_exit_2(runner, tmp_path, args):
    f = write(tmp_path, "fc.proto", FAMILY)
    r = runner.invoke(cli, [str(f), *args])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output


def test_missing_file_exits_2_and_undecodable_file_exits_1(runner, tmp_path):
    r = runner.invoke(cli, [str(tmp_path / "nope.proto")])
    assert r.exit_code == 2
    assert "no such file" in r.stderr
    bad = tmp_path / "bad.proto"
    bad.write_bytes(b"protocol p \xff")
    r = runner.invoke(cli, [str(bad)])
    assert r.exit_code == 1
    assert "not valid UTF-8" in r.stderr


def test_limits_are_options(runner, tmp_path):
    f = write(tmp_path, "fc.proto", FAMILY)
    r = runner.invoke(cli, [str(f), "--domain", "claim=a,b", "--max-atoms", "3"])
    assert r.exit_code == 1
    assert "--max-atoms" in r.stderr


def test_emit_dimacs_writes_the_cnf(runner, tmp_path):
    f = write(tmp_path, "p.proto", PLAIN)
    r = runner.invoke(cli, [str(f), "--emit", "dimacs"])
    # the lowering ships with the package: there is no build without it to fall back on
    assert r.exit_code == 0, r.output
    assert r.stdout.endswith("\n")
    (header,) = [line for line in r.stdout.splitlines() if line.startswith("p cnf ")]
    variables, clauses = map(int, header.split()[2:])
    body = [line for line in r.stdout.splitlines() if line and line[0] not in "cp"]
    assert variables >= 3 and len(body) == clauses > 0
    assert all(line.endswith(" 0") for line in body)


# --- fmt ---------------------------------------------------------------------------------


def test_fmt_prints_canonical_text(runner, tmp_path):
    f = write(tmp_path, "p.proto", "protocol p atom a:judge decision pass iff (a)")
    r = runner.invoke(cli, ["fmt", str(f)])
    assert r.exit_code == 0
    assert r.stdout == "protocol p\n\natom a : judge\ndecision pass iff a\n"


def test_fmt_check_and_write(runner, tmp_path):
    messy = write(tmp_path, "m.proto", "protocol p atom a:judge decision pass iff (a)")
    clean = write(tmp_path, "c.proto", "protocol p\n\natom a : judge\ndecision pass iff a\n")
    r = runner.invoke(cli, ["fmt", "--check", str(messy), str(clean)])
    assert r.exit_code == 1
    assert f"would reformat {messy}" in r.stderr and str(clean) not in r.stderr
    assert runner.invoke(cli, ["fmt", "--check", str(clean)]).exit_code == 0
    r = runner.invoke(cli, ["fmt", "--write", str(messy)])
    assert r.exit_code == 0
    assert messy.read_text(encoding="utf-8") == clean.read_text(encoding="utf-8")
    assert runner.invoke(cli, ["fmt", "--check", str(messy)]).exit_code == 0


def test_fmt_syntax_error_exits_1(runner, tmp_path):
    f = write(tmp_path, "bad.proto", "protocol p\ndecision pass a\n")
    r = runner.invoke(cli, ["fmt", str(f)])
    assert r.exit_code == 1
    assert f"{f}:2:15: error:" in r.stderr


def test_fmt_usage_errors(runner, tmp_path):
    f = write(tmp_path, "p.proto", PLAIN)
    assert runner.invoke(cli, ["fmt"]).exit_code == 2
    assert runner.invoke(cli, ["fmt", "--check", "--write", str(f)]).exit_code == 2


def test_parse_domains():
    assert parse_domains(("a=x,y", "b=", "c= z ")) == {"a": ["x", "y"], "b": [], "c": ["z"]}


def test_console_script_runs(tmp_path):
    f = write(tmp_path, "p.proto", PLAIN)
    r = subprocess.run(
        [sys.executable, "-c", "from unmask.cli.unmaskc import main; main()", str(f)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["name"] == "p"


def test_member_errors_name_the_option(runner, tmp_path):
    f = write(tmp_path, "fc.proto", FAMILY)
    r = runner.invoke(cli, [str(f), "--domain", "claim=ok,not-ok", "--domain", "clam=x"])
    assert r.exit_code == 1
    assert "--domain claim[1]: error: member `not-ok` of `claim` is not a name" in r.stderr
    assert "--domain clam: error:" in r.stderr


# --- files that cannot be written -------------------------------------------------------


def _run(args, stdout=subprocess.PIPE, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from unmask.cli.unmaskc import main; main()", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        check=False,
        **kw,
    )


def _one_output_error(r: subprocess.CompletedProcess, name: str) -> None:
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr.count("error:") == 1
    assert r.stderr.startswith(f"error: cannot write `{name}`: "), r.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_output_to_a_full_device_is_one_diagnostic(tmp_path):
    f = write(tmp_path, "p.proto", PLAIN)
    _one_output_error(_run([str(f), "-o", "/dev/full"]), "/dev/full")
    with open("/dev/full", "w") as full:
        r = _run([str(f)], stdout=full)
    assert (r.returncode, r.stderr.count("error:")) == (1, 1), r.stderr
    assert "cannot write to standard output: no space left on device" in r.stderr


def test_output_into_a_missing_folder_is_one_diagnostic(tmp_path):
    f = write(tmp_path, "p.proto", PLAIN)
    out = tmp_path / "no" / "such" / "folder.json"
    _one_output_error(_run([str(f), "-o", str(out)]), str(out))
    assert not out.parent.exists()


def test_a_missing_output_folder_is_named_in_the_help(tmp_path):
    from unmask.plumbing.outputs import cannot_write

    d = cannot_write("results/run1.jsonl", FileNotFoundError(2, "No such file or directory"))
    assert (d.code, d.message) == (
        "output",
        "cannot write `results/run1.jsonl`: no such file or directory",
    )
    assert d.help == "the folder `results` does not exist: make it first, or write elsewhere"
    # a folder that is there: no such help (the reason is something else)
    there = cannot_write(str(tmp_path / "x"), PermissionError(13, "Permission denied"))
    assert there.help is None


def test_output_replaces_a_file_whole_and_keeps_its_mode(runner, tmp_path):
    f = write(tmp_path, "p.proto", PLAIN)
    out = write(tmp_path, "out.json", "old")
    out.chmod(0o640)
    assert runner.invoke(cli, [str(f), "-o", str(out)]).exit_code == 0
    assert json.loads(out.read_text(encoding="utf-8"))["name"] == "p"
    assert out.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "p.proto"]


def _limit_file_size(limit: int):
    def apply() -> None:
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.skipif(sys.platform == "win32", reason="needs RLIMIT_FSIZE")
def test_fmt_write_that_fails_leaves_the_file_as_it_was(tmp_path):
    # the formatted text is larger than the process may write: the write fails half way
    atoms = "".join(f'atom   a{i}:judge   "atom number {i}"\n' for i in range(200))
    messy = "protocol p\n" + atoms + "decision pass iff a0\n"
    f = write(tmp_path, "big.proto", messy)
    # and writes no bytecode: Python does not check a short write, and a module's bytecode cut
    # at 2,048 bytes would be read back by every later process (`marshal data too short`)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    r = _run(["fmt", "--write", str(f)], preexec_fn=_limit_file_size(2048), env=env)
    _one_output_error(r, str(f))
    assert "file too large" in r.stderr
    assert f.read_text(encoding="utf-8") == messy
    assert [p.name for p in tmp_path.iterdir()] == ["big.proto"]


@pytest.mark.skipif(
    sys.platform == "win32" or os.geteuid() == 0, reason="root may write a read-only file"
)
def test_fmt_write_on_a_read_only_file_is_one_diagnostic(tmp_path):
    f = write(tmp_path, "ro.proto", "protocol p atom a:judge decision pass iff a")
    f.chmod(0o444)
    r = _run(["fmt", "--write", str(f)])
    _one_output_error(r, str(f))
    assert "permission denied" in r.stderr
    assert f.read_text(encoding="utf-8") == "protocol p atom a:judge decision pass iff a"


def test_fmt_write_refuses_a_file_it_may_not_write(runner, tmp_path, monkeypatch):
    # the same refusal when running as root, where a mode of 0o444 does not stop a write
    f = write(tmp_path, "ro.proto", "protocol p atom a:judge decision pass iff a")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, m: False if m == os.W_OK else real_access(p, m))
    r = runner.invoke(cli, ["fmt", "--write", str(f)])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit)
    assert r.stderr == f"error: cannot write `{f}`: permission denied\n"
    assert f.read_text(encoding="utf-8") == "protocol p atom a:judge decision pass iff a"


# --- labels, definitions, one-way grounding -------------------------------------------------

LABELLED = (
    'protocol g "grade"\n'
    "atom correct : judge\natom partial : judge\natom ref_ok : context\n"
    "define any_credit = correct or partial\n"
    "verdict C | P | I\n"
    "decision C iff correct\ndecision P iff partial and not correct\ndecision I otherwise\n"
    "ground any_credit ~> ref_ok\n"
)


def test_labelled_protocol_compiles_to_labels_decisions_and_definitions(runner, tmp_path):
    f = write(tmp_path, "g.proto", LABELLED)
    r = runner.invoke(cli, [str(f)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["labels"] == ["C", "P", "I"]
    assert doc["decisions"][2] == {"label": "I", "otherwise": True}
    assert [d["name"] for d in doc["definitions"]] == ["any_credit"]
    assert doc["grounding"][0]["direction"] == "~>"
    assert "decision" not in doc


@pytest.mark.parametrize("emit", ["smt2", "dimacs"])
def test_labelled_protocol_emits(runner, tmp_path, emit):
    f = write(tmp_path, "g.proto", LABELLED)
    r = runner.invoke(cli, [str(f), "--emit", emit])
    assert r.exit_code == 0, r.output
    if emit == "smt2":
        assert "(declare-const verdict_P Bool) ; verdict `P`" in r.stdout
        assert "(define-fun any_credit () Bool (or correct partial)) ; definition" in r.stdout
    else:
        assert "c var 5 verdict P" in r.stdout.splitlines()


def test_label_errors_exit_1_located(runner, tmp_path):
    f = write(tmp_path, "g.proto", LABELLED.replace("decision I otherwise\n", ""))
    r = runner.invoke(cli, [str(f)])
    assert r.exit_code == 1 and r.stdout == ""
    assert f"{f}:6:17: error: label `I` has no decision" in r.stderr


def test_fmt_check_accepts_canonical_labelled_text(runner, tmp_path):
    f = write(tmp_path, "g.proto", LABELLED)
    r = runner.invoke(cli, ["fmt", str(f)])
    assert r.exit_code == 0
    g = write(tmp_path, "h.proto", r.stdout)
    assert runner.invoke(cli, ["fmt", "--check", str(g)]).exit_code == 0
    assert "verdict C | P | I" in r.stdout and "ground any_credit ~> ref_ok" in r.stdout
