"""The `addressed:` trap: `addressed` says whether compliance could be observed, not when a
requirement applies, so `holds` is checked where it is not addressed. `unmask analyze`
warns on an `addressed` that reads judge or context atoms, and the shipped example, which
used to be written that way, now states its condition in `holds`: a correct UNSUPPORTED
judgment that cites nothing is not VIOLATED."""

from __future__ import annotations

from pathlib import Path

from unmask import api
from unmask.analysis.analyze import analyze
from unmask.analysis.ground import Scope, load
from unmask.backends import create
from unmask.language.compiler import compile_source
from unmask.replay.builder import ReplayBuilder
from unmask.replay.load import replay_from_obj

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "claim_parts.proto"

HEAD = """protocol p "p"
atom j : judge "j"
atom c : context "c"
atom x : procedure "x"
atom seen : procedure "the rationale was recorded"
define said = j
decision pass iff j
ground j ~ c
"""


def trap(text: str):
    p = compile_source(text, "t.proto")
    found = analyze(p, create("sliced"), Scope(), "t.proto").findings
    return [f for f in found if f.code == "addressed-as-condition"]


def req(addressed: str, holds: str = "x") -> str:
    return f'requirement r "r" {{\n  holds: {holds}\n  addressed: {addressed}\n}}\n'


def test_the_warning_fires_on_a_judge_or_context_atom():
    (f,) = trap(HEAD + req("j"))
    assert f.severity == "warning" and f.subject == "requirement:r"
    assert f.message == (
        "`addressed` of requirement `r` reads the judge atom `j`, "
        "but `holds` is checked whether or not it is addressed"
    )
    assert f.span is not None and f.span.line == 9
    d = f.diagnostic("t.proto")
    assert d.code == "addressed-as-condition"
    # the help gives the conditional form of this very requirement
    assert "`holds: j implies x`" in d.help
    (f,) = trap(HEAD + req("c and seen"))
    assert "the context atom `c`" in f.message


def test_the_warning_reads_through_definitions_and_parenthesises_the_recipe():
    (f,) = trap(HEAD + req("said or seen", holds="x iff seen"))
    assert "the judge atom `j`" in f.message
    assert "`holds: said or seen implies (x iff seen)`" in f.help
    (f,) = trap(HEAD + req("seen implies said"))
    assert "`holds: (seen implies said) implies x`" in f.help


def test_the_warning_does_not_fire_on_procedure_atoms_or_constants():
    assert trap(HEAD + req("seen")) == []
    assert trap(HEAD + req("true")) == []
    assert trap(HEAD + 'requirement r "r": j implies x\n') == []


def test_a_for_requirement_is_warned_once_not_per_member():
    text = """protocol p "p"
domain d = {a, b, c}
atom s(d) : judge "s"
atom k(d) : context "k"
atom x(d) : procedure "x"
decision pass iff all(s(m) for m in d)
for m in d: ground s(m) ~ k(m)
for m in d: requirement r(m) "r" {
  holds: x(m)
  addressed: s(m)
}
"""
    (f,) = trap(text)
    assert f.subject == "requirement:r(a)"


def test_the_shipped_example_is_clean():
    (loaded,) = load([str(EXAMPLE)])
    found = analyze(loaded.protocol, create("sliced"), loaded.scope).findings
    assert [f.code for f in found] == []


SHIPPED = sorted(
    [*ROOT.glob("examples/**/*.proto"), *ROOT.glob("unmask/importers/protocols/*.proto")]
)


def test_no_shipped_protocol_puts_a_condition_in_addressed():
    # the WiCE importer's protocol did (`addressed: some_cited`) until the warning fired on it
    assert any(p.name == "wice.proto" for p in SHIPPED)
    for path in SHIPPED:
        (loaded,) = load([str(path)])
        found = analyze(loaded.protocol, create("sliced"), loaded.scope).findings
        assert "addressed-as-condition" not in [f.code for f in found], path


CONTEXT = "line 1: The tower is in Paris.\n"
UNSUPPORTED = "Nothing in the evidence says the tower is in Rome. Answer: not_supported"


def _unsupported(proto_text: str) -> dict:
    """A correct UNSUPPORTED judgment: no part called supported, and (rightly) no citation."""
    b = ReplayBuilder(
        proto_text,
        sources={"rationale": UNSUPPORTED, "context": CONTEXT},
        verdict="not_supported",
        domains={"part": ["rome"]},
    )
    quote = "Nothing in the evidence says the tower is in Rome."
    b.annotate("said(rome)", False, quote=quote)
    b.annotate("backed(rome)", False, quote="The tower is in Paris.")
    b.annotate("cited", False, quote=quote, explanation="no evidence line is cited")
    return b.build()


def _requirement(proto_text: str):
    replay = replay_from_obj(_unsupported(proto_text), None, None)
    report = api.check(replay, "sliced")
    (req,) = report.requirements
    return req.holds.status, report.overall


def test_the_fixed_example_does_not_fault_a_correct_unsupported_judgment():
    text = EXAMPLE.read_text(encoding="utf-8")
    assert _requirement(text) == ("ENTAILED", "SATISFIED")
    # the form the example used to have, which a user copied: VIOLATED for a correct answer
    old = text.replace(
        'requirement cite_support "Cite evidence for every part called supported": '
        "some_said implies cited",
        'requirement cite_support "Cite evidence" {\n  holds: cited\n  addressed: some_said\n}',
    )
    assert old != text
    assert _requirement(old) == ("REFUTED", "VIOLATED")
