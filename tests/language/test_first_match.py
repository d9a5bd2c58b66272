"""`verdict … first-match` and overlapping decisions: the syntax round-trips (format, IR
JSON, the compile cache's reading back), its meaning is the ordered one on every backend
(checked against a table computed here), `--emit smt2` spells it out, and without it two
decisions that can both hold are a compile error of `unmaskc` with a witness, listed by
`unmask analyze` before the unreachable label they cause."""

from __future__ import annotations

import itertools

import pytest
from click.testing import CliRunner

from tests.checking.test_checker import make_replay
from unmask.analysis.analyze import analyze
from unmask.analysis.compiled import compile_checked
from unmask.analysis.ground import Scope
from unmask.api import check
from unmask.backends import create, emit
from unmask.cli.unmaskc import cli
from unmask.ir.json import protocol_to_json
from unmask.ir.json_reader import protocol_from_json
from unmask.language.compiler import compile_source
from unmask.language.formatter import format_source
from unmask.language.parser import parse_source
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.limits import DEFAULT_LIMITS

RUBRIC = """protocol rubric "Read top to bottom."

atom bad    : judge
atom some   : judge
atom c_bad  : context
atom c_some : context

verdict fail | partial | good{order}
decision fail iff bad
decision partial iff some
decision good otherwise

ground bad ~ c_bad
ground some ~ c_some
"""
ORDERED = RUBRIC.format(order=" first-match")
OVERLAPPING = RUBRIC.format(order="")


def _verdict(text: str):
    from unmask.language import ast

    (v,) = [s for s in parse_source(text, "r.proto").statements if isinstance(s, ast.VerdictDecl)]
    return v


def test_the_syntax_round_trips_through_the_formatter_and_ir_json():
    assert _verdict(ORDERED).first_match is True
    assert _verdict(OVERLAPPING).first_match is False
    assert format_source(ORDERED, "r.proto") == ORDERED
    assert format_source("protocol p\nverdict a|b   first-match\n", "p") == (
        "protocol p\n\nverdict a | b first-match\n"
    )
    p = compile_source(ORDERED, "r.proto")
    assert p.first_match is True
    doc = protocol_to_json(p)
    assert doc["first_match"] is True
    back = protocol_from_json(doc)
    assert back == p and back.first_match is True
    # without it the IR is as before: no key
    assert "first_match" not in protocol_to_json(compile_source(OVERLAPPING, "r.proto"))


def test_the_compile_cache_reads_it_back(tmp_path, monkeypatch):
    from unmask.language import cache, cache_writer
    from unmask.language.cache_writer import store

    monkeypatch.delenv("UNMASK_CACHE_DIR", raising=False)  # the test process's own folder
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    # a process writes a bounded number of entries: a test process that compiled many
    # protocols before this test has spent them (the test then depended on its order)
    monkeypatch.setattr(cache_writer, "_writes", 0)
    entry = cache.entry(ORDERED, (), DEFAULT_LIMITS)
    if entry is None:
        pytest.skip("no private cache folder on this machine")
    p = compile_source(ORDERED, "r.proto")
    store(entry, p, "r.proto", DEFAULT_LIMITS)
    back = cache.load(entry, "r.proto", DEFAULT_LIMITS)
    assert back == p and back.first_match is True


def test_first_match_and_names_first_and_match_stay_names():
    text = "protocol p\natom first : judge\natom match : judge\nverdict a | b first-match\n"
    text += "decision a iff first\ndecision b iff match\n"
    p = compile_source(text, "p.proto")
    assert p.atom_names == ("first", "match") and p.first_match


def test_ir_json_refuses_a_bad_first_match():
    doc = protocol_to_json(compile_source(ORDERED, "r.proto"))
    doc["first_match"] = "yes"
    with pytest.raises(UnmaskError) as e:
        protocol_from_json(doc)
    assert e.value.diagnostics[0].path == "protocol.first_match"
    binary = protocol_to_json(compile_source("protocol p\natom a : judge\ndecision pass iff a\n"))
    binary["first_match"] = True
    with pytest.raises(UnmaskError) as e:
        protocol_from_json(binary)
    assert e.value.diagnostics[0].code == "first-match"


def _expected(bad: bool, some: bool) -> str:
    return "fail" if bad else "partial" if some else "good"


def test_the_first_label_whose_decision_holds_is_the_verdict_on_every_backend(backend_name):
    p = compile_source(ORDERED, "r.proto")
    for bad, some in itertools.product((False, True), repeat=2):
        values = {"bad": str(bad).upper(), "some": str(some).upper()}
        r = check(make_replay(p, _expected(bad, some), values), backend_name)
        assert r.bases.all == "CONSISTENT", (bad, some)
        assert (r.verdict.result.status, r.verdict.allowed) == (
            "ENTAILED",
            (_expected(bad, some),),
        ), (bad, some)


def test_without_first_match_a_replay_is_refused_and_the_overlap_world_is_inconsistent():
    # a replay's check refuses the protocol with unmaskc's diagnostic; what it would mean
    # to the checker is still exactly-one
    from unmask.checking.checker import Case, check_case

    p = compile_source(OVERLAPPING, "r.proto")
    replay = make_replay(p, "fail", {"bad": "TRUE", "some": "TRUE"})
    with pytest.raises(UnmaskError) as e:
        check(replay, "sliced")
    with pytest.raises(UnmaskError) as compiled:
        compile_checked(OVERLAPPING, "r.proto", None, DEFAULT_LIMITS, create("sliced"))
    assert e.value.diagnostics == compiled.value.diagnostics
    r = check_case(Case.from_replay(replay), create("sliced"), backend_name="sliced")
    assert r.bases.all == "INCONSISTENT"


def test_smt2_spells_the_order_out():
    out = emit.emit_smt2(compile_source(ORDERED, "r.proto"))
    assert "(assert (! (= verdict_partial (and some (not bad))) :named decision_partial))" in out


def test_overlapping_decisions_are_a_compile_error_with_a_witness():
    with pytest.raises(UnmaskError) as e:
        compile_checked(OVERLAPPING, "r.proto", None, DEFAULT_LIMITS, create("sliced"))
    (d,) = e.value.diagnostics
    assert d.code == "overlapping-decisions" and d.severity == "error"
    assert d.message == "the decisions of `fail` and `partial` can both hold"
    assert (d.span.file, d.span.line) == ("r.proto", 10)
    assert d.notes[0] == "both hold when `bad` = TRUE, `some` = TRUE"
    assert d.notes[1] == "the decision of `fail` is at r.proto:9:1"
    assert "first-match" in d.help
    ok = compile_checked(ORDERED, "r.proto", None, DEFAULT_LIMITS, create("sliced"))
    assert ok.protocol is not None and ok.warnings == ()


def test_constraints_can_make_decisions_exclusive():
    text = OVERLAPPING + "constraint one: not (bad and some)\n"
    ok = compile_checked(text, "r.proto", None, DEFAULT_LIMITS, create("sliced"))
    assert ok.protocol is not None


def test_unmaskc_exits_1_on_an_overlap_and_0_with_first_match(tmp_path):
    runner = CliRunner()
    f = tmp_path / "r.proto"
    f.write_text(OVERLAPPING, encoding="utf-8")
    r = runner.invoke(cli, [str(f)])
    assert r.exit_code == 1 and r.stdout == ""
    assert "error: the decisions of `fail` and `partial` can both hold" in r.stderr
    for emitted in ("smt2", "dimacs", "judge-schema"):
        assert runner.invoke(cli, [str(f), "--emit", emitted]).exit_code == 1
    f.write_text(ORDERED, encoding="utf-8")
    r = runner.invoke(cli, [str(f)])
    assert r.exit_code == 0 and '"first_match": true' in r.stdout


def test_analyze_reports_the_overlap_before_the_unreachable_label():
    text = OVERLAPPING.replace("decision partial iff some", "decision partial iff some or bad")
    found = analyze(compile_source(text, "r.proto"), create("sliced"), Scope()).findings
    codes = [f.code for f in found]
    assert codes.index("overlapping-decisions") < codes.index("unreachable-label")
    # ordered, there is no overlap; a label wholly behind an earlier one is unreachable
    ordered = ORDERED.replace("decision fail iff bad", "decision fail iff bad or some")
    found = analyze(compile_source(ordered, "r.proto"), create("sliced"), Scope()).findings
    assert [(f.code, f.subject) for f in found] == [("unreachable-label", "label:partial")]
    clean = analyze(compile_source(ORDERED, "r.proto"), create("sliced"), Scope()).findings
    assert clean == ()


def test_reports_show_each_decision_as_written_with_the_labels_before_it():
    from unmask.render.view import decision_rules

    rules = decision_rules(compile_source(ORDERED, "r.proto"))
    assert rules == {
        "fail": "fail iff bad",
        "partial": "partial iff some (first match: after fail)",
        "good": "good otherwise",
    }
    assert decision_rules(compile_source(OVERLAPPING, "r.proto"))["partial"] == "partial iff some"
