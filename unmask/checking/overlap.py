"""Overlapping decisions: two labels whose decisions can hold at once, found by a solver.

Contract: ``overlaps(protocol, space)`` asks, for each pair of written decisions D_L, D_M
(L before M in label order) of a protocol that declares its labels without
``first-match``, whether K ∧ D_L ∧ D_M is satisfiable (K: the constraints), and returns one
``Overlap`` per pair that is or may be (UNKNOWN stays undecided, never read either way),
each with the space's canonical witness. A binary protocol (PASS is D, FAIL is `not D`)
and a ``first-match`` one (each decision excludes the earlier ones) never overlap.
``overlap_diagnostics(protocol, backend, note)`` is the same as compile diagnostics: an
error per proved overlap, with its witness in a note, a warning per undecided pair, each
at the later decision's span (IR, which has none: its JSON path ``decisions[i]``).
``refused(protocol, backend)`` is its errors, remembered per protocol: the check of a
replay (``unmask.checking.outcomes.check_replay``) refuses such a protocol as ``unmaskc`` does. It
sits beside the semantics and uses the backends through their interface, as
``unmask analyze`` does; the compiler, which knows no solver, does not call it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from unmask import ir
from unmask.backends.base import Backend, Part
from unmask.checking.explain import Deadline
from unmask.checking.solve import SAT, UNKNOWN, UNSAT, Answer, Space
from unmask.ir import mk_and
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen

FIRST_MATCH_HELP = (
    "make the two decisions exclusive (add `and not …` of the other to one of them), or write "
    "`first-match` after the labels (`verdict A | B | C first-match`) so that the first label "
    "whose decision holds is the verdict"
)


@frozen
class Overlap:
    first: ir.Decision
    second: ir.Decision
    answer: Answer  # SAT with its witness, or UNKNOWN with the solver's reason

    @property
    def decided(self) -> bool:
        return self.answer.state == SAT


def can_overlap(p: ir.Protocol) -> bool:
    """Whether two decisions of ``p`` could hold at once at all (else nothing is asked)."""
    return p.declared_labels and not p.first_match


def overlaps(p: ir.Protocol, space: Space) -> Iterator[Overlap]:
    if not can_overlap(p):
        return
    written = [d for d in p.decisions if d.expr is not None]
    for i, first in enumerate(written):
        for second in written[i + 1 :]:
            assert first.expr is not None and second.expr is not None
            a = space.sat(mk_and([first.expr, second.expr]), want_witness=True)
            if a.state in (SAT, UNKNOWN):
                yield Overlap(first, second, a)


def both_hold(witness: tuple[tuple[str, bool], ...] | None) -> str:
    """The witness as a note: the least assignment under which both decisions hold."""
    if not witness:
        return "both hold whatever the atoms are"
    shown = ", ".join(f"`{a}` = {'TRUE' if v else 'FALSE'}" for a, v in witness)
    return f"both hold when {shown}"


def overlap_diagnostics(
    p: ir.Protocol, backend: Backend, note: str = "", deadline: Deadline | None = None
) -> tuple[Diagnostic, ...]:
    """Each overlap of ``p`` as a diagnostic; ``note`` (such as the members the protocol was
    grounded at) is added to each. ``deadline`` bounds the questions (n labels ask n^2/2):
    a pair it leaves undecided is an ``overlap-undecided`` warning."""
    if not can_overlap(p):
        return ()
    parts = [Part(f"constraint:{c.name}", c.expr) for c in p.constraints]
    space = Space(backend, parts, p.atom_names, deadline)
    index = {id(d): i for i, d in enumerate(p.decisions)}
    out: list[Diagnostic] = []
    try:
        base = space.sat(None, want_witness=False)
        if base.state == UNSAT:
            return ()  # no world at all: `unmask analyze` names the contradiction
        for o in overlaps(p, space):
            extra = (note,) if note else ()
            where = o.first.span
            at = (f"the decision of `{o.first.label}` is at {where}",) if where else ()
            # IR has no spans: its JSON path, in the protocol object, locates the decision
            path = None if o.second.span is not None else f"decisions[{index[id(o.second)]}]"
            if o.decided:
                out.append(
                    Diagnostic(
                        Code.OVERLAPPING_DECISIONS,
                        f"the decisions of `{o.first.label}` and `{o.second.label}` can both hold",
                        o.second.span,
                        path,
                        notes=(both_hold(o.answer.witness), *at, *extra),
                        help=FIRST_MATCH_HELP,
                    )
                )
            else:
                out.append(
                    Diagnostic(
                        Code.OVERLAP_UNDECIDED,
                        f"could not decide whether the decisions of `{o.first.label}` and "
                        f"`{o.second.label}` can both hold",
                        o.second.span,
                        path,
                        severity="warning",
                        notes=(f"the solver said: {o.answer.reason}", *at, *extra),
                        help="`unmask analyze` asks the same question and takes `--timeout-ms`",
                    )
                )
    finally:
        space.close()
    return tuple(out)


# what ``refused`` found, for the last ``REMEMBERED`` protocols, keyed by ``id``: the entry
# holds the protocol, so its id is not reused while it is remembered
REMEMBERED = 32
_MEMO: dict[int, tuple[ir.Protocol, tuple[Diagnostic, ...]]] = {}
_LOCK = threading.Lock()


def refused(
    p: ir.Protocol, backend: Backend, deadline: Deadline | None = None
) -> tuple[Diagnostic, ...]:
    """The errors that refuse ``p`` to every replay checked against it: each proved overlap
    of two decisions, as ``unmaskc`` reports it (``overlap_diagnostics``: at the later
    decision, with the witness). An undecided pair refuses nothing: exactly-one rules its
    worlds out, as it always has; so does a backend that cannot answer (the truth table over
    its atom limit). Remembered per protocol once every pair was decided, so
    replays that share a protocol (the compile cache shares it) ask once."""
    if not can_overlap(p):
        return ()
    got = _MEMO.get(id(p))
    if got is not None:
        return got[1]
    try:
        found = overlap_diagnostics(p, backend, deadline=deadline)
    except UnmaskError:
        # a backend that cannot decide the question (the truth table over its limit) is
        # an undecided pair: the check says what it can decide, as it always has
        return ()
    errors = tuple(d for d in found if d.severity == "error")
    if len(errors) == len(found):
        with _LOCK:
            while len(_MEMO) >= REMEMBERED:
                del _MEMO[next(iter(_MEMO))]  # the oldest
            _MEMO[id(p)] = (p, errors)
    return errors
