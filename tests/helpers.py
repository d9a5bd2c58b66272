"""Builders, assertions and paths that several test files share, so each is written once.

- ``ROOT``, ``TEST_DATA``: the project folder and the tests' data folder;
- ``wide_replay``: a valid replay file whose decision joins many unknown atoms, over the
  truth-table backend's limit;
- ``assert_a_directory_or_an_unreadable_file_is_exit_4``: what every command that reads a
  replay does with a path that is not a readable regular file;
- ``assert_same_audit_outputs``: two runs of ``unmask audit`` wrote the same results, HTML
  pages, JUnit file, summary JSON and summary text, byte for byte;
- ``check_any``: ``unmask.api.check`` without the refusal of overlapping decisions, the
  checker's meaning of any protocol (exactly-one), for tests that compare it on random
  protocols;
- ``smt2_models``, ``dimacs_vars`` and ``dimacs_models``: emitted SMT-LIB read back by z3 and
  emitted DIMACS by a SAT solver, every model enumerated, so a test can compare the two
  against the IR's own evaluator;
- ``LostTimer`` and ``Rescue``: a z3 backend whose solvers have lost their own timer (the
  state z3's race between its timer and its resource limit leaves a check in), and a thread
  that stops such a check for good if nothing else does, so a test of the limit fails
  rather than hangs.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import z3
from pysat.formula import CNF
from pysat.solvers import Solver

from unmask.backends.z3_backend import Z3Backend
from unmask.ir import Atom, AtomDecl, GroundPair, Nary, Protocol, Requirement
from unmask.ir.json import protocol_to_json

ROOT = Path(__file__).resolve().parent.parent
TEST_DATA = ROOT / "tests" / "data"


def check_any(  # type: ignore[no-untyped-def]
    replay, backend: str = "z3", *, closed_form: bool = True, deadline_ms: int | None = None
):
    """What ``unmask.api.check`` reports of ``replay``, even when two of its protocol's
    decisions can both hold (``check`` refuses those, as ``unmaskc`` does): the checker's
    report of its ``Case``, with the replay's own fields, as ``check_replay`` adds them."""
    from dataclasses import replace

    from unmask.backends import create
    from unmask.checking.checker import Case
    from unmask.checking.explain import Deadline
    from unmask.checking.outcomes import check_case

    report = check_case(
        Case.from_replay(replay),
        create(backend),
        backend_name=backend,
        closed_form=closed_form,
        deadline=None if deadline_ms is None else Deadline(deadline_ms),
    )
    return replace(
        report, gold=replay.gold, item=replay.item, judge=replay.judge, recheck=replay.recheck
    )


def wide_replay(folder: Path, n: int = 25, name: str = "wide") -> Path:
    """Write ``NAME.json``: a replay with id ``name`` whose decision joins ``n`` unknown atoms
    (one component of ``n`` atoms) in a shape the closed form does not decide (an ``all``
    of plain atoms it does, without a backend: ``unmask.checking.closed.open_decision``), so a
    backend that cannot take ``n`` atoms at once must refuse it."""
    names = [f"x{i}" for i in range(n)]
    protocol = Protocol(
        name=name,
        text="a decision over many unknown atoms",
        atoms=(*(AtomDecl(x, "judge") for x in names), AtomDecl("c", "context")),
        constraints=(),
        decision=Nary("and", (Nary("or", (Atom(names[0]), Atom(names[1]))), *map(Atom, names[2:]))),
        requirements=(Requirement("r", "", Atom("x0")),),
        grounding=(GroundPair("x0", "c"),),
    )
    obj = {
        "schema": "unmask.replay/1",
        "id": name,
        "protocol": protocol_to_json(protocol),
        "sources": {"rationale": "r", "context": "c"},
        "verdict": "PASS",
        "annotations": [],
    }
    path = folder / f"{name}.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def assert_a_directory_or_an_unreadable_file_is_exit_4(run: Callable, tmp_path: Path) -> None:
    """``run(path)`` (a command's runner) refuses a directory and, unless run by root, which
    reads every file, a file it may not read: exit 4, invalid input."""
    result = run(str(tmp_path))
    assert result.exit_code == 4
    assert "is a directory, not a regular file" in result.stderr
    if os.geteuid() != 0:
        f = tmp_path / "r.json"
        f.write_text("{}")
        f.chmod(0)
        assert run(str(f)).exit_code == 4


def assert_same_audit_outputs(
    a: Path, text_a: str, b: Path, text_b: str, replays: int
) -> list[str]:
    """Folders ``a`` and ``b`` each hold an audit's ``r.jsonl`` (of ``replays`` lines),
    ``html/``, ``junit.xml`` and ``s.json``; ``text_a``/``text_b`` are the summaries it
    printed. Returns the names of the HTML files."""
    assert len((a / "r.jsonl").read_bytes().splitlines()) == replays
    for name in ("r.jsonl", "junit.xml", "s.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    pages = sorted(p.name for p in (a / "html").iterdir())
    assert pages, "no HTML page written: nothing to compare"
    assert pages == sorted(p.name for p in (b / "html").iterdir())
    for page in pages:
        assert (a / "html" / page).read_bytes() == (b / "html" / page).read_bytes(), page
    assert text_a == text_b
    return pages


def smt2_models(text: str, symbols: Sequence[str]) -> set[tuple[bool, ...]]:
    """Every model of the SMT-LIB ``text`` as read by z3, projected on ``symbols`` in order."""
    consts = [z3.Bool(sym.strip("|")) for sym in symbols]
    solver = z3.Solver()
    solver.from_string(text)
    found = set()
    while solver.check() == z3.sat:
        m = solver.model()
        values = tuple(z3.is_true(m.eval(c, model_completion=True)) for c in consts)
        found.add(values)
        solver.add(z3.Or([c != z3.BoolVal(v) for c, v in zip(consts, values, strict=True)]))
    return found


def dimacs_vars(text: str, verdict_key: Callable[[str], str]) -> dict[str, int]:
    """The variable of each name in the DIMACS ``text``'s ``c var`` comments: atoms by their
    name (every word between `atom` and the role: `cites(c1, p2)` holds a space), the
    verdict's variables by ``verdict_key`` of theirs."""
    table = {}
    for line in text.splitlines():
        parts = line.split()
        if parts[:2] == ["c", "var"]:
            name = " ".join(parts[4:-1]) if parts[3] == "atom" else verdict_key(parts[4])
            table[name] = int(parts[2])
    return table


def dimacs_models(text: str, table: dict[str, int], names: Sequence[str]) -> set[tuple[bool, ...]]:
    """Every model of the DIMACS ``text`` as a SAT solver finds them, projected on ``names``."""
    found = set()
    with Solver(name="glucose4", bootstrap_with=CNF(from_string=text).clauses) as s:
        while s.solve():
            model = set(s.get_model())
            values = tuple(table[n] in model for n in names)
            found.add(values)
            s.add_clause([-table[n] if table[n] in model else table[n] for n in names])
    return found


# a result line's fields with neutral values: ``full_line`` fills in what a test's line
# leaves out, so a test writes only the fields it is about and the line is still one the
# audit reads back (the structs of ``unmask.checking.formats``)
_CHECK = {"result": None, "explanation": None, "witnesses": None}
_LINE_FIELDS: dict[str, object] = {
    "location": "x",
    "replay": "r",
    "backend": "sliced",
    "overall": "SATISFIED",
    "bases": None,
    "requirements": [],
    "grounding": [],
    "unannotated": [],
    "gold": None,
    "verdict_matches_gold": None,
    "protocol": "p",
    "translation": "valid",
    "reasons": [],
    "conflicts": None,
    "unknown": [],
}
_VERDICT = {"observed": "PASS", "status": None, "allowed": None, **_CHECK}
_REQUIREMENT = {"id": "r", "status": None, "coverage": None, "description": "", **_CHECK}
_REQUIREMENT.update({f"coverage_{k}": v for k, v in _CHECK.items()})
_GROUNDING = {"judge": "j", "context": "c", "status": None, "direction": "~", **_CHECK}
_DIMENSIONS = dict.fromkeys(("verdict", "procedure", "coverage", "grounding"), "OK")
_REASON = {"code": "violated", "subject": "replay", "message": ""}
_ERROR = {"code": "error", "message": "", "severity": "error"}


def full_line(line: dict) -> dict:
    """``line`` (a result line or an error record) with every field it leaves out filled
    in; a field of the wrong type is left as it is, for the reader to refuse."""

    def filled(value: object, fields: dict) -> object:
        return {**fields, **value} if isinstance(value, dict) else value

    def each(value: object, fields: dict) -> object:
        return [filled(v, fields) for v in value] if isinstance(value, list) else value

    out = dict(line)
    if out.get("schema") == "unmask.error/1":
        out.setdefault("location", "x")
        out["errors"] = each(out.get("errors", []), _ERROR)
        return out
    out = {"schema": out.get("schema", "unmask.report/1"), **_LINE_FIELDS, **out}
    out["verdict"] = filled(out.get("verdict", {}), _VERDICT)
    out["dimensions"] = filled(out.get("dimensions", {}), _DIMENSIONS)
    out["requirements"] = each(out["requirements"], _REQUIREMENT)
    out["grounding"] = each(out["grounding"], _GROUNDING)
    out["reasons"] = each(out["reasons"], _REASON)
    if out["schema"] == "unmask.result/2":
        out.setdefault("annotations", [])
    return out


NO_LIMIT = 2**32 - 1  # a z3 solver told this timeout arms no timer


class LostTimer(Z3Backend):
    """The z3 backend with each session's solver told no limit, the session's own limit
    unchanged: the state z3 leaves a check in when its timer fires before the check
    installs its resource limit, which clears the cancel flag (the calling thread
    descheduled in between), so the check runs unbounded."""

    def open(self, parts, atoms):  # type: ignore[no-untyped-def]
        session = super().open(parts, atoms)
        session._solver.set("timeout", NO_LIMIT)  # type: ignore[attr-defined]
        return session


class Rescue:
    """Calls ``interrupt`` every second once ``after`` seconds have passed, until stopped:
    a check z3 no longer limits would otherwise run for minutes (13 for pigeonhole(12))."""

    def __init__(self, interrupt: Callable[[], object], after: float = 10) -> None:
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, args=(interrupt, after), daemon=True)
        self.thread.start()

    def run(self, interrupt: Callable[[], object], after: float) -> None:
        if self.done.wait(after):
            return
        while True:
            interrupt()
            if self.done.wait(1):
                return

    def stop(self) -> None:
        self.done.set()
        self.thread.join()


def default_sigint() -> None:
    """A child's ``preexec_fn``: SIGINT's default disposition before it runs Python, so
    Python installs its handler. A shell starts a background job with SIGINT ignored, and
    Python leaves an inherited SIG_IGN alone: a test that interrupts its child must not
    depend on how pytest itself was started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
