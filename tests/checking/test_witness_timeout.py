"""A witness whose completion met a solver timeout says so in the report, instead of
passing a non-canonical completion off as the canonical one."""

from __future__ import annotations

from tests.checking.test_checker import _BruteSession
from unmask.backends import Backend, Unknown
from unmask.checking.checker import Case, check_case
from unmask.checking.report import dumps
from unmask.ir import AtomDecl, GroundPair, Protocol, Requirement, mk_and, mk_atom, mk_not
from unmask.replay.data import Annotation, Evidence, Replay


class _TimesOutWhenCompleting(_BruteSession):
    """Answers every check that pins an atom (witness completion) with Unknown."""

    def check(self, query=None, *, enabled=None, assume=None, want=()):  # type: ignore[no-untyped-def]
        if assume:
            self.calls += 1
            return Unknown("timeout after 1 ms")
        return super().check(query, enabled=enabled, assume=assume, want=want)


class _Backend(Backend):
    name = "brute"

    def __init__(self, slow: bool) -> None:
        super().__init__()
        self.slow = slow

    def open(self, parts, atoms):  # type: ignore[no-untyped-def]
        return (_TimesOutWhenCompleting if self.slow else _BruteSession)(parts)


def _replay() -> Replay:
    a, b = mk_atom("a"), mk_atom("b")
    protocol = Protocol(
        name="p",
        text="",
        atoms=(AtomDecl("a", "judge"), AtomDecl("b", "context"), AtomDecl("x", "procedure")),
        constraints=(),
        decision=mk_and([a, b]),
        requirements=(Requirement("r", "", mk_not(mk_atom("x"))),),
        grounding=(GroundPair("a", "b"),),
    )
    rationale = "the claim holds"
    ann = Annotation("a", "TRUE", (Evidence("rationale", 0, 15, rationale),))
    return Replay("w", protocol, "PASS", (ann,), {"rationale": rationale})


def test_timed_out_completion_is_marked_not_canonical() -> None:
    replay = _replay()
    fast = check_case(Case.from_replay(replay), _Backend(slow=False), closed_form=False).to_json()
    slow = check_case(Case.from_replay(replay), _Backend(slow=True), closed_form=False).to_json()
    req_fast, req_slow = fast["requirements"][0], slow["requirements"][0]
    assert req_fast["status"] == req_slow["status"] == "UNDERDETERMINED"
    assert req_fast["witnesses"]["holds"]["canonical"] is True
    assert req_fast["witnesses"]["fails"]["canonical"] is True
    # `x` completed to TRUE on the holds side would break `not x`; the first model the
    # brute session finds already has x FALSE there, so only the fails side needs a call
    sides = req_slow["witnesses"]
    assert [sides["holds"]["canonical"], sides["fails"]["canonical"]].count(False) >= 1
    for side, want in (("holds", False), ("fails", True)):
        (x,) = [w for w in sides[side]["atoms"] if w["atom"] == "x"]
        assert x["origin"] == "completed"
        assert (x["value"] == "TRUE") is want  # still a real assignment of that side
    assert (
        dumps(check_case(Case.from_replay(replay), _Backend(slow=False), closed_form=False)).count(
            '"canonical": true'
        )
        >= 2
    )
