"""One output policy (``unmask.plumbing.safe``), per format and per command: a replay or a
``.proto`` that carries ESC, OSC, BEL, a C1 CSI and U+202E in every string a user controls
(the id, item and judge, the protocol's text, atom and requirement descriptions, sources,
quotes, explanations, who annotated, the file name) never gets one of them into what a
command writes raw: not on stdout, not on stderr, not in a file it writes. JSON keeps the
values (as ``\\u`` escapes); SARIF messages, HTML, Markdown and JUnit show them as visible
escapes."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.render_cases import EXAMPLES
from unmask.plumbing import safe
from unmask.render import FORMATS

# ESC (a CSI that clears the screen, an OSC that retitles the window ended by BEL), a C1
# CSI, a right-to-left override, a carriage return
EVIL = "\x1b[2J\x1b]0;pwned\x07\x9b31m\u202eevil\r"
# what no output may hold raw: written out here, independent of the module under test
ACTING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
NAME = "case\x1b]0;t\x07\u202e.json"


def _protocol_ir() -> dict:
    code = "from unmask.cli.unmaskc import main; main()"
    proto = str(EXAMPLES / "factual_claims.proto")
    res = subprocess.run([sys.executable, "-c", code, proto], capture_output=True, check=True)
    return json.loads(res.stdout)


def _hostile(obj: dict) -> dict:
    """Case C with EVIL in every user-controlled string, quotes and offsets kept right."""
    obj["protocol"] = _protocol_ir()
    obj["id"] = "case-c" + EVIL
    obj["item"] = "item" + EVIL
    obj["judge"] = "judge" + EVIL
    obj["protocol"]["text"] += EVIL
    for atom in obj["protocol"]["atoms"]:
        atom["description"] += EVIL
    for req in obj["protocol"]["requirements"]:
        req["description"] += EVIL
    # EVIL at the start of every source and inside every quote: insert it after each
    # quote's first character, moving every span behind it
    for name in list(obj["sources"]):
        text = obj["sources"][name]
        spans = [ev for a in obj["annotations"] for ev in a["evidence"] if ev["source"] == name]
        inserts = sorted({ev["start"] + 1 for ev in spans} | {0})
        for at in reversed(inserts):
            text = text[:at] + EVIL + text[at:]
        for ev in spans:
            before_start = sum(1 for at in inserts if at <= ev["start"])
            before_end = sum(1 for at in inserts if at < ev["end"])
            ev["start"] += before_start * len(EVIL)
            ev["end"] += before_end * len(EVIL)
            ev["quote"] = text[ev["start"] : ev["end"]]
        obj["sources"][name] = text
    for ann in obj["annotations"]:
        ann["explanation"] = "note" + EVIL
        ann["by"] = {"kind": "model", "name": "model" + EVIL}
    return obj


def hostile_replay(folder: Path, name: str = NAME) -> Path:
    obj = _hostile(json.loads((EXAMPLES / "case_c.json").read_text(encoding="utf-8")))
    path = folder / name
    path.write_text(json.dumps(obj, ensure_ascii=True), encoding="utf-8")
    return path


def unmask(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    code = "from unmask.cli.main import main; main()"
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, env=env, timeout=180, cwd=cwd
    )


def assert_clean(data: bytes | str, where: str) -> None:
    """Nothing acting raw, nor as an HTML/XML character reference that means one."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    for shown in (text, html.unescape(text)):
        m = ACTING.search(shown)
        assert m is None, (
            f"{where}: raw {m.group()!r} at {m.start()}: {shown[m.start() - 40 : m.start() + 20]!r}"
        )


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


# --- the policy's functions ----------------------------------------------------------------


def test_visible_escapes_only_what_acts() -> None:
    assert (
        safe.visible("a\x1b[2Jb\u202ec\x9b\x07\td\ne\r") == "a\\x1b[2Jb\\u202ec\\x9b\\x07\td\ne\\r"
    )
    assert safe.visible("👩‍💼 naïve\u00a0x") == "👩‍💼 naïve\u00a0x"  # joiners, spaces stay
    assert safe.printable("\u202e\t") == "\\u202e\\t"


def test_json_text_keeps_every_value() -> None:
    value = {"k\u202e": "a\x1b\x9b\u2066\x7f b"}
    text = safe.json_text(json.dumps(value, ensure_ascii=False))
    assert ACTING.search(text) is None
    assert json.loads(text) == value
    # the same on bytes, as every JSON Lines record is written; plain ASCII left as it is
    data = json.dumps(value, ensure_ascii=False).encode("utf-8")
    assert safe.json_bytes(data) == text.encode("utf-8")
    plain = b'{"a":"b\\u001b"}'
    assert safe.json_bytes(plain) is plain
    assert safe.json_bytes(b'{"a":"\x7f"}') == b'{"a":"\\u007f"}'


def test_every_message_is_printed_through_the_policy() -> None:
    from unmask.ir import Span
    from unmask.plumbing.diagnostics import Diagnostic, render

    d = Diagnostic(
        "x", "bad `a\x1bb`", Span("f\u202e.proto", 1, 6, 1, 9), help="h\x07", notes=("n\x9b",)
    )
    out = render(d, {"f\u202e.proto": 'atom "\x1b]0;x\x07" z'})
    assert ACTING.search(out) is None
    lines = out.split("\n")
    assert lines[0] == "f\\u202e.proto:1:6: error: bad `a\\x1bb`"
    # the caret stays under the same characters once the line is escaped
    assert lines[2] == '1 | atom "\\x1b]0;x\\x07" z'
    assert lines[3].index("^") == lines[2].index('"')


# --- per format ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_check_writes_no_acting_character_in_any_format(tmp_path: Path, fmt: str) -> None:
    path = hostile_replay(tmp_path)
    res = unmask("check", str(path), "--format", fmt, "--backend", "z3")
    assert res.returncode == 1, res.stderr.decode(errors="replace")
    assert_clean(res.stdout, f"check --format {fmt}")
    assert_clean(res.stderr, f"check --format {fmt} (stderr)")
    out = res.stdout.decode("utf-8")
    if fmt == "json":  # data: the value is the replay's, written with JSON escapes
        assert json.loads(out)["replay"] == "case-c" + EVIL
    if fmt == "sarif":  # a message is shown by a viewer: its text is neutralised too
        for s in _strings(json.loads(out)):
            assert ACTING.search(s) is None, s
    if fmt == "junit":
        root = ET.fromstring(out)
        for el in root.iter():
            for s in [el.text or "", el.tail or "", *el.attrib.values()]:
                assert ACTING.search(s) is None, s
    if fmt in ("text", "html", "markdown", "junit"):  # shown, as a visible escape
        assert "\\x07\\x9b31m\\u202eevil" in out


@pytest.mark.parametrize("fmt", ["sarif", "junit", "text"])
def test_an_invalid_hostile_replay_is_reported_cleanly(tmp_path: Path, fmt: str) -> None:
    obj = _hostile(json.loads((EXAMPLES / "case_c.json").read_text(encoding="utf-8")))
    obj["verdict"] = "MAYBE" + EVIL
    obj["annotations"][0]["evidence"][0]["quote"] = "not there" + EVIL
    obj["annotations"][1]["atom"] = "nope" + EVIL
    path = tmp_path / NAME
    path.write_text(json.dumps(obj), encoding="utf-8")
    res = unmask("check", str(path), "--format", fmt)
    assert res.returncode == 4
    assert_clean(res.stdout, "stdout")
    assert_clean(res.stderr, "stderr")
    assert b"Traceback" not in res.stderr


# --- per command -------------------------------------------------------------------------


def test_validate_and_crosscheck_write_no_acting_character(tmp_path: Path) -> None:
    path = hostile_replay(tmp_path)
    for args in (("validate", str(path)), ("crosscheck", str(path), "--backends", "z3,sliced")):
        res = unmask(*args)
        assert res.returncode == 0, res.stderr.decode(errors="replace")
        assert_clean(res.stdout, f"{args[0]} stdout")
        assert_clean(res.stderr, f"{args[0]} stderr")


def test_audit_writes_no_acting_character_in_any_output(tmp_path: Path) -> None:
    cases = tmp_path / ("cases" + EVIL)
    cases.mkdir()
    hostile_replay(cases)
    (cases / ("broken\x1b[2J.json")).write_text("{", encoding="utf-8")
    out = tmp_path / "out"
    res = unmask(
        "audit",
        str(cases),
        "--out",
        str(tmp_path / "results.jsonl"),
        "--html",
        str(out),
        "--junit",
        str(tmp_path / "junit.xml"),
        "--summary-json",
        str(tmp_path / "summary.json"),
        "--backend",
        "z3",
    )
    assert res.returncode == 0, res.stderr.decode(errors="replace")  # no --fail-on
    assert_clean(res.stdout, "audit stdout")
    assert_clean(res.stderr, "audit stderr")
    written = [p for p in tmp_path.rglob("*") if p.is_file() and cases not in p.parents]
    assert len(written) >= 5, written  # results, summary, JUnit, index, a page
    for p in written:
        assert_clean(p.read_bytes(), str(p.relative_to(tmp_path)))
        assert_clean(p.name, "the name of a written file")
    # the results and the summary keep the values, as JSON escapes
    lines = (tmp_path / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert any(json.loads(line).get("replay") == "case-c" + EVIL for line in lines)


def test_next_writes_no_acting_character(tmp_path: Path) -> None:
    path = hostile_replay(tmp_path)
    for fmt in ("text", "json"):
        res = unmask("next", str(path), "--format", fmt)
        assert res.returncode in (0, 1, 3), res.stderr.decode(errors="replace")
        assert_clean(res.stdout, f"next --format {fmt}")
        assert_clean(res.stderr, f"next --format {fmt} (stderr)")


def _hostile_proto(tmp_path: Path) -> Path:
    proto = tmp_path / ("p" + EVIL + ".proto")
    proto.write_text(
        f'protocol p "text{EVIL}"\n'
        f'atom a : judge "a{EVIL}"\n'
        f'atom b : judge "b{EVIL}"\n'
        "decision pass iff a and not a\n"
        f'requirement r "r{EVIL}" {{ holds: b and not b  addressed: true }}\n',
        encoding="utf-8",
    )
    return proto


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_analyze_writes_no_acting_character(tmp_path: Path, fmt: str) -> None:
    res = unmask("analyze", str(_hostile_proto(tmp_path)), "--format", fmt)
    assert res.returncode in (0, 1), res.stderr.decode(errors="replace")
    assert_clean(res.stdout, f"analyze --format {fmt}")
    assert_clean(res.stderr, f"analyze --format {fmt} (stderr)")
    if fmt == "sarif":
        for s in _strings(json.loads(res.stdout)):
            assert ACTING.search(s) is None, s


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_compare_writes_no_acting_character(tmp_path: Path, fmt: str) -> None:
    old = _hostile_proto(tmp_path)
    new = tmp_path / "new.proto"
    new.write_bytes(old.read_bytes().replace(b"a and not a", b"a"))
    res = unmask("compare", str(old), str(new), "--format", fmt)
    assert res.returncode in (0, 1), res.stderr.decode(errors="replace")
    assert_clean(res.stdout, f"compare --format {fmt}")
    assert_clean(res.stderr, f"compare --format {fmt} (stderr)")


def test_a_compile_error_in_a_hostile_proto_is_printed_cleanly(tmp_path: Path) -> None:
    proto = tmp_path / ("bad" + EVIL + ".proto")
    proto.write_text(
        f'protocol p "x{EVIL}"\natom a : judge "{EVIL}"\ndecision pass iff a and zz\n', "utf-8"
    )
    res = unmask("analyze", str(proto))
    assert res.returncode == 4 or res.returncode == 2, res.stderr.decode(errors="replace")
    assert b"unknown" in res.stderr
    assert_clean(res.stdout, "stdout")
    assert_clean(res.stderr, "stderr")


@pytest.mark.parametrize(
    "args", [[], ["compile", "--emit", "smt2"], ["compile", "--emit", "dimacs"], ["fmt"]]
)
def test_unmaskc_writes_no_acting_character(tmp_path: Path, args: list[str]) -> None:
    proto = _hostile_proto(tmp_path)
    code = "from unmask.cli.unmaskc import main; main()"
    res = subprocess.run(
        [sys.executable, "-c", code, *args, str(proto)], capture_output=True, timeout=120
    )
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    assert_clean(res.stdout, f"unmaskc {' '.join(args)}")
    assert_clean(res.stderr, f"unmaskc {' '.join(args)} (stderr)")
    if args == ["fmt"]:  # the canonical text still means the same protocol
        again = tmp_path / "again.proto"
        again.write_bytes(res.stdout)
        ir = [sys.executable, "-c", code]
        a = subprocess.run([*ir, str(proto)], capture_output=True, check=True).stdout
        b = subprocess.run([*ir, str(again)], capture_output=True, check=True).stdout
        assert json.loads(a) | {"name": None} == json.loads(b) | {"name": None}
