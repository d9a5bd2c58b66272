"""A protocol whose check's parts would hold too many atoms is refused before any is made.

Under first-match label L's part holds the atoms of every earlier label (its decision
excludes theirs), so n labels hold n^2 / 2 names: 20,000 labels, a 2 MB protocol, held 200
million (1.6 GB) before the check began. ``ir.part_atoms`` counts them from the written
decisions (linear), and the compiler and the IR reader refuse a protocol past
``--max-part-atoms`` with one ``limit`` diagnostic, exit 4 from the command line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask import ir
from unmask.checking.bases import proto_parts
from unmask.cli.main import main
from unmask.ir.json import protocol_to_json
from unmask.ir.json_reader import protocol_from_json
from unmask.language.compiler import compile_source
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.exitcodes import INVALID
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits


def labels_source(n: int, first_match: bool, otherwise: bool = True) -> str:
    """n labels, each `a_i or a_(i+1)`, and maybe `rest otherwise`; one constraint."""
    lines = ['protocol fm "many labels"']
    lines += [f'atom a{i} : judge "part {i}"' for i in range(n + 1)]
    names = [f"l{i}" for i in range(n)] + (["rest"] if otherwise else [])
    lines.append("verdict " + " | ".join(names) + (" first-match" if first_match else ""))
    lines.append("constraint c: not (a0 and a1)")
    lines += [f"decision l{i} iff a{i} or a{i + 1}" for i in range(n)]
    if otherwise:
        lines.append("decision rest otherwise")
    return "\n".join(lines) + "\n"


BINARY = """protocol b "binary"
atom a : judge "a"
atom b : judge "b"
constraint c: a implies b
decision pass iff a and (b or a)
"""


@pytest.mark.parametrize(
    "source",
    [
        labels_source(40, first_match=True),
        labels_source(40, first_match=False),
        labels_source(7, first_match=True, otherwise=False),
        BINARY,
    ],
)
def test_the_count_is_the_atoms_the_parts_hold(source: str) -> None:
    p = compile_source(source, "p.proto")
    assert ir.part_atoms(p) == sum(len(part.atoms) for part in proto_parts(p))


def test_first_match_parts_hold_the_earlier_labels_atoms() -> None:
    n = 300
    p = compile_source(labels_source(n, first_match=True), "p.proto")
    plain = compile_source(labels_source(n, first_match=False), "p.proto")
    # label i holds a_0 .. a_(i+1) and its variable; `rest` every a and its variable
    held = 2 + (n + 1) + sum(1 + (i + 2) for i in range(n)) + (1 + n + 1)
    assert ir.part_atoms(p) == held
    # without first-match each part holds its own: linear
    assert ir.part_atoms(plain) == 2 + (n + 1) + 3 * n + (1 + n + 1)


def _refusal(err: pytest.ExceptionInfo[UnmaskError]):  # type: ignore[no-untyped-def]
    (d,) = err.value.diagnostics
    assert d.code == Code.LIMIT
    return d


def test_the_compiler_refuses_past_the_limit_naming_the_verdict_line() -> None:
    source = labels_source(300, first_match=True)
    held = ir.part_atoms(compile_source(source, "p.proto"))
    assert held > 40_000
    compile_source(source, "p.proto", limits=Limits(max_part_atoms=held))  # at it: fine
    with pytest.raises(UnmaskError) as err:
        compile_source(source, "p.proto", limits=Limits(max_part_atoms=held - 1))
    d = _refusal(err)
    assert f"would hold {held} atoms in all" in d.message
    assert "first-match" in d.message and f"the limit of {held - 1}" in d.message
    assert d.help == "raise it with `--max-part-atoms`"
    assert d.span is not None and d.span.line == 303  # the `verdict` keyword, not its line
    assert (d.span.column, d.span.end_line, d.span.end_column) == (1, 303, 8)
    # the same protocol without first-match holds few: the default never binds it
    compile_source(
        labels_source(300, first_match=False), "p.proto", limits=Limits(max_part_atoms=2_000)
    )


def test_the_ir_reader_refuses_past_the_limit_at_first_match() -> None:
    p = compile_source(labels_source(100, first_match=True), "p.proto")
    doc = protocol_to_json(p)
    assert protocol_from_json(doc) == p
    with pytest.raises(UnmaskError) as err:
        protocol_from_json(doc, limits=Limits(max_part_atoms=1_000))
    d = _refusal(err)
    assert d.path == "protocol.first_match"
    assert f"is {ir.part_atoms(p)}, more than the limit of 1000" in d.message
    assert "--max-part-atoms" in (d.help or "")


def test_the_default_keeps_2000_labels() -> None:
    assert DEFAULT_LIMITS.max_part_atoms == 10_000_000
    # counted, never made: 2,000 labels hold 2 million names, 20,000 hold 200 million
    small = compile_source(labels_source(2_000, first_match=True, otherwise=False), "p.proto")
    assert 2_000_000 < ir.part_atoms(small) < DEFAULT_LIMITS.max_part_atoms


def test_check_refuses_the_replay_with_exit_4(tmp_path: Path) -> None:
    replay = {
        "schema": "unmask.replay/1",
        "id": "fm",
        "protocol": {"source": labels_source(200, first_match=True)},
        "sources": {"rationale": "r", "context": "c", "response": "s"},
        "verdict": "l0",
        "annotations": [],
    }
    path = tmp_path / "fm.json"
    path.write_text(json.dumps(replay), encoding="utf-8")
    ok = CliRunner().invoke(main, ["check", str(path), "--format", "json"])
    assert ok.exit_code != INVALID, ok.output
    got = CliRunner().invoke(
        main, ["check", str(path), "--max-part-atoms", "5000", "--format", "json"]
    )
    assert got.exit_code == INVALID, got.output
    assert "more than the limit of 5000" in got.output
    assert "--max-part-atoms" in got.output
