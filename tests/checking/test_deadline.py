"""`--deadline-ms`: one bound on the whole check of a replay.

Past the deadline the report is UNKNOWN with a `deadline` reason, checks not decided by then
are SOLVER_UNKNOWN ("deadline"), minimisation and witness completion stop (not minimal, not
canonical), and an audit moves on to the next replay. A report that finished within its
deadline is byte-identical to one without. Solver calls are counted, never timed.
The checker's tests send every check to the backend (``closed_form=False``): a check decided
in closed form makes no call, so no deadline cuts it (``tests/checking/test_closed_form.py``).
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import pytest
from click.testing import CliRunner
from hypothesis import given, settings

from tests.checking.test_checker import CASES as CHECKER_CASES
from tests.checking.test_checker import _BruteSession, case_replay, factual_protocol
from tests.helpers import check_any
from tests.strategies import random_protocol, random_replay, replays
from unmask.api import check
from unmask.backends import Backend, Session, create
from unmask.checking.checker import Case, check_case
from unmask.checking.explain import BaseSession, Deadline, minimise, witness
from unmask.checking.record import report_json
from unmask.checking.report import dumps
from unmask.cli.main import main
from unmask.ir import AtomDecl, Requirement, evaluate, mk_and, mk_atom, mk_card, mk_not
from unmask.ir.json import protocol_to_json

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CASES = ["case_a", "case_b", "case_c", "case_d", "case_unknown", "case_unicode"]
WIDE = 60  # atoms in the wide cardinality: witness completion makes many calls over them


class Ticks:
    """A clock that moves one millisecond per solver call, and not otherwise."""

    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> float:
        return self.ms / 1000


class _Counting(Session):
    """A real backend's session that counts its calls and may advance a clock or sleep."""

    def __init__(self, inner: Session, owner: Counting) -> None:
        self.inner = inner
        self.owner = owner

    def check(self, query=None, *, enabled=None, assume=None, want=(), timeout_ms=None):  # type: ignore[no-untyped-def]
        owner = self.owner
        owner.calls += 1
        if owner.deadline is not None and owner.deadline.left_ms() <= 0:
            owner.after += 1  # a call made once the deadline had passed
        if owner.ticks is not None:
            owner.ticks.ms += 1
        if len(self.inner_atoms) > owner.sleep_over:
            owner.wide_calls += 1
            if owner.sleep_ms:
                time.sleep(owner.sleep_ms / 1000)
        kw = {} if timeout_ms is None else {"timeout_ms": timeout_ms}
        return self.inner.check(query, enabled=enabled, assume=assume, want=want, **kw)

    def close(self) -> None:
        self.inner.close()


class Counting(Backend):
    """``sliced`` underneath; counts every call (``calls``), and those after ``deadline``."""

    name = "counting"
    takes_option = True  # `counting:again`: a second name for crosscheck to compare
    instances: ClassVar[list[Counting]] = []
    sleep_ms = 0  # set by the CLI tests: each call on a wide base sleeps this long
    sleep_over = 40  # atoms: a base with more than this many counts as wide

    def __init__(self, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(**kw)
        self.inner = create("sliced", timeout_ms=self.timeout_ms)
        self.calls = 0
        self.wide_calls = 0  # calls on a base of more than `sleep_over` atoms
        self.after = 0
        self.ticks: Ticks | None = None
        self.deadline: Deadline | None = None
        Counting.instances.append(self)

    def open(self, parts, atoms):  # type: ignore[no-untyped-def]
        session = _Counting(self.inner.open(parts, atoms), self)
        session.inner_atoms = list(atoms)
        return session


@pytest.fixture
def counting():  # type: ignore[no-untyped-def]
    from unmask.backends import _REGISTRY, register

    before = dict(_REGISTRY)
    register("counting", Counting)
    Counting.instances = []
    yield Counting
    Counting.sleep_ms = 0
    _REGISTRY.clear()
    _REGISTRY.update(before)


def wide_protocol(n: int = WIDE):  # type: ignore[no-untyped-def]
    """The factual protocol and a requirement over a wide cardinality: it is
    underdetermined, so both witnesses are completed, one call per atom."""
    extra = tuple(AtomDecl(f"x{i}", "procedure") for i in range(n))
    wide = mk_card("atleast", n - 2, [mk_atom(a.name) for a in extra])
    p = factual_protocol()
    return replace(
        p,
        atoms=p.atoms + extra,
        requirements=(*p.requirements, Requirement("wide", "most of many", wide)),
    )


def wide_replay():  # type: ignore[no-untyped-def]
    return case_replay("case-b", wide_protocol())


def run_with(replay, backend: Counting, deadline: Deadline | None) -> dict:  # type: ignore[no-untyped-def]
    backend.deadline = deadline
    return check_case(
        Case.from_replay(replay), backend, deadline=deadline, closed_form=False
    ).to_json()


# --- the checker ----------------------------------------------------------------------------


def test_the_wide_replay_needs_many_calls_without_a_deadline(counting) -> None:  # type: ignore[no-untyped-def]
    backend = counting()
    report = run_with(wide_replay(), backend, None)
    # so a deadline of a few calls really cuts it short (witness completion goes in
    # galloping runs now, not a call per atom: 39 calls here, 60 and more before)
    assert backend.calls > WIDE // 2
    assert report["requirements"][1]["status"] == "UNDERDETERMINED"
    assert not any(r["code"] == "deadline" for r in report["reasons"])


def test_past_the_deadline_no_call_is_made_and_the_report_is_unknown(counting) -> None:  # type: ignore[no-untyped-def]
    plain = counting()
    full = run_with(wide_replay(), plain, None)
    full_statuses = [full["verdict"]["status"], *(r["status"] for r in full["requirements"])]
    for budget in [*range(1, plain.calls, 3), plain.calls - 1]:
        backend = counting()
        ticks = Ticks()
        backend.ticks = ticks
        report = run_with(wide_replay(), backend, Deadline(budget, clock=ticks))
        assert backend.calls <= budget  # the clock moves only with calls
        assert backend.after == 0  # no call once the deadline has passed
        assert report["overall"] == "UNKNOWN"
        assert (report["reasons"][0]["code"], report["reasons"][0]["subject"]) == (
            "deadline",
            "replay",
        )
        assert f"deadline of {budget} ms" in report["reasons"][0]["message"]
        # nothing is guessed: a status is the proven one, or SOLVER_UNKNOWN
        statuses = [report["verdict"]["status"], *(r["status"] for r in report["requirements"])]
        for got, want in zip(statuses, full_statuses, strict=True):
            assert got in (want, "SOLVER_UNKNOWN")


def test_a_deadline_met_exactly_changes_no_byte(counting) -> None:  # type: ignore[no-untyped-def]
    plain = counting()
    full = dumps(check_case(Case.from_replay(wide_replay()), plain, closed_form=False))
    backend = counting()
    backend.ticks = Ticks()
    deadline = Deadline(plain.calls, clock=backend.ticks)  # time for every call, no more
    assert (
        dumps(
            check_case(
                Case.from_replay(wide_replay()), backend, deadline=deadline, closed_form=False
            )
        )
        == full
    )
    assert deadline.hit is False


def test_unclassified_checks_say_deadline(counting) -> None:  # type: ignore[no-untyped-def]
    backend = counting()
    ticks = Ticks()
    backend.ticks = ticks
    deadline = Deadline(1, clock=ticks)
    backend.deadline = deadline
    found = check_case(
        Case.from_replay(wide_replay()), backend, deadline=deadline, closed_form=False
    )
    assert found.verdict.result.detail == "deadline"  # in words in the reasons below
    assert all(r.holds.detail == "deadline" for r in found.requirements)
    report = found.to_json()
    assert report["bases"]["all"] == "SOLVER_UNKNOWN"
    assert report["verdict"]["status"] == "SOLVER_UNKNOWN"
    messages = [r["message"] for r in report["reasons"]]
    assert any("was not decided before the deadline" in m for m in messages)
    assert any("consistent before the deadline" in m for m in messages)


def test_a_witness_cut_short_is_not_canonical_but_a_real_assignment(counting) -> None:  # type: ignore[no-untyped-def]
    full = run_with(wide_replay(), counting(), None)
    assert full["requirements"][1]["witnesses"]["holds"]["canonical"] is True
    seen_cut = False
    protocol = wide_protocol()
    wide = protocol.requirements[1].expr
    for budget in range(20, 200, 7):
        backend = counting()
        backend.ticks = Ticks()
        report = run_with(wide_replay(), backend, Deadline(budget, clock=backend.ticks))
        req = report["requirements"][1]
        if req["status"] != "UNDERDETERMINED":
            continue
        for side, want in (("holds", True), ("fails", False)):
            w = req["witnesses"][side]
            values = {a["atom"]: a["value"] == "TRUE" for a in w["atoms"]}
            assert evaluate(wide, values) is want  # still a model of its side
            if not w["canonical"]:
                seen_cut = True
    assert seen_cut


def test_minimise_stops_at_the_deadline_and_says_not_minimal() -> None:
    from unmask.backends import Part

    a, b = mk_atom("a"), mk_atom("b")
    parts = [Part("fact:a", a), Part("fact:b", b), Part("c", mk_not(mk_and([a, b])))]
    ticks = Ticks()
    deadline = Deadline(1, clock=ticks)
    session = BaseSession("all", parts, _BruteSession(parts), deadline, 60_000)
    ticks.ms = 5  # already past
    found = minimise(session, None, [p.label for p in parts])
    assert found.minimal is False
    assert found.labels == ("fact:a", "fact:b", "c")  # still unsat: nothing dropped unproven
    assert deadline.hit
    fresh = BaseSession("all", parts, _BruteSession(parts))
    assert minimise(fresh, None, [p.label for p in parts]).minimal is True


def test_witness_stops_at_the_deadline_with_the_last_model() -> None:
    from unmask.backends import Part

    atoms = ["a", "b", "c"]
    parts = [Part("any", mk_card("atleast", 1, [mk_atom(x) for x in atoms]))]
    ticks = Ticks()
    deadline = Deadline(1, clock=ticks)
    session = BaseSession("evid", parts, _BruteSession(parts), deadline, 60_000)
    ticks.ms = 5
    start = {"a": True, "b": True, "c": False}
    done = witness(session, mk_atom("a"), start, atoms, {})
    assert done.canonical is False
    assert dict(done.values) == start
    undeadlined = BaseSession("evid", parts, _BruteSession(parts))
    assert witness(undeadlined, mk_atom("a"), start, atoms, {}).canonical is True


def test_each_call_gets_at_most_the_time_left() -> None:
    seen: list[int | None] = []

    class Recording(_BruteSession):
        def check(self, query=None, *, enabled=None, assume=None, want=(), timeout_ms=None):  # type: ignore[no-untyped-def]
            seen.append(timeout_ms)
            return super().check(query, enabled=enabled, assume=assume, want=want)

    from unmask.backends import Part

    parts = [Part("fact:a", mk_atom("a"))]
    ticks = Ticks()
    session = BaseSession("evid", parts, Recording(parts), Deadline(100, clock=ticks), 30)
    session.check()
    ticks.ms = 80
    session.check()
    assert seen == [30, 20]  # the backend's timeout, then the 20 ms left


# --- a deadline that is not reached changes no byte -----------------------------------------


@pytest.mark.parametrize("name", CASES)
def test_a_generous_deadline_changes_no_byte_of_the_examples(name: str, backend_name: str) -> None:
    path = EXAMPLES / f"{name}.json"
    plain = dumps(check(path, backend_name))
    assert dumps(check(path, backend_name, deadline_ms=3_600_000)) == plain


def test_a_generous_deadline_changes_no_byte_of_random_replays(backend_name: str) -> None:
    rng = random.Random(15)
    for _ in range(25):
        protocol = random_protocol(rng, rng.randint(2, 8), extended=True)
        replay = random_replay(rng, protocol, extended=True)
        # random decisions may overlap, which `check` refuses: the checker is compared
        plain = dumps(check_any(replay, backend_name))
        assert dumps(check_any(replay, backend_name, deadline_ms=3_600_000)) == plain


@settings(max_examples=40, deadline=None)
@given(replays(max_atoms=8))
def test_a_deadline_never_reached_changes_nothing(replay) -> None:  # type: ignore[no-untyped-def]
    # the clock never moves: the same calls, the same answers, the same bytes
    frozen = Deadline(1, clock=lambda: 0.0)
    solver = create("sliced")
    plain = dumps(check_case(Case.from_replay(replay), solver))
    assert dumps(check_case(Case.from_replay(replay), solver, deadline=frozen)) == plain
    assert frozen.hit is False


def test_the_library_refuses_a_deadline_that_is_not_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        check(EXAMPLES / "case_a.json", "sliced", deadline_ms=0)


# --- the command line -----------------------------------------------------------------------


def _wide_file(tmp_path: Path) -> Path:
    replay = wide_replay()
    obj = {
        "schema": "unmask.replay/1",
        "id": "wide",
        "protocol": protocol_to_json(replay.protocol),
        "sources": {"rationale": "r", "context": "c", "response": "s"},
        "verdict": replay.verdict,
        "annotations": [],
    }
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(obj))
    return path


def cli(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("command", ["check", "crosscheck", "audit"])
@pytest.mark.parametrize("value", ["0", "-5"])
def test_a_deadline_that_is_not_positive_is_a_usage_error(command: str, value: str) -> None:
    result = cli(command, str(EXAMPLES / "case_a.json"), f"--deadline-ms={value}")
    assert result.exit_code == 2
    assert "--deadline-ms" in result.output
    assert "Traceback" not in result.output


def test_audit_and_check_have_a_default_deadline_and_crosscheck_has_none() -> None:
    # check has one since issue 28: no replay may hang a CI job that runs it
    assert "default: 60000" in cli("audit", "--help").output
    assert "default: 60000" in cli("check", "--help").output
    assert "[default: none]" in cli("crosscheck", "--help").output


def test_audit_cuts_the_slow_replay_and_moves_on(counting, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    wide = _wide_file(tmp_path)
    lines = tmp_path / "in.jsonl"
    small = json.loads((EXAMPLES / "case_b.json").read_text())
    small["protocol"] = {"source": (EXAMPLES / "factual_claims.proto").read_text()}
    lines.write_text(json.dumps(json.loads(wide.read_text())) + "\n" + json.dumps(small) + "\n")
    out = tmp_path / "out.jsonl"
    counting.sleep_ms = 20  # every call on the wide replay takes at least 20 ms
    result = cli(
        "audit", str(lines), "--out", str(out), "--backend", "counting", "--deadline-ms", "100"
    )
    assert result.exit_code == 0, result.output
    # each annotation back in the parts it is in, to compare with `check`'s report
    first, second = (report_json(json.loads(x)) for x in out.read_text().splitlines())
    backend = counting.instances[-1]
    # call i starts at least 20 (i - 1) ms after the deadline started, and none starts
    # after it: at most 100 / 20 calls on the wide replay
    assert 1 <= backend.wide_calls <= 100 // 20
    assert first["overall"] == "UNKNOWN"
    assert first["reasons"][0]["code"] == "deadline"
    assert second["overall"] == "VIOLATED"  # the next line is checked in full
    assert not any(r["code"] == "deadline" for r in second["reasons"])
    plain = json.loads(cli("check", str(EXAMPLES / "case_b.json"), "--format", "json").output)
    for key in ("verdict", "requirements", "grounding", "reasons", "overall"):
        assert second[key] == plain[key]


def test_check_with_a_deadline_is_unknown_with_the_reason_in_words(counting, tmp_path) -> None:  # type: ignore[no-untyped-def]
    wide = _wide_file(tmp_path)
    # 20 ms a call on the wide base, a deadline of 5: after the first call every call is
    # refused, and the wide requirement needs calls (too wide for the closed form)
    counting.sleep_ms = 20
    result = cli("check", str(wide), "--backend", "counting", "--deadline-ms", "5")
    assert result.exit_code == 3
    assert "the check ran past its deadline of 5 ms" in result.stdout
    assert "before the deadline" in result.stdout
    assert counting.instances[-1].wide_calls <= 1
    page = cli(
        "check", str(wide), "--backend", "counting", "--deadline-ms", "5", "--format", "html"
    )
    assert page.exit_code == 3
    assert "the check ran past its deadline of 5 ms" in page.stdout


def test_crosscheck_with_a_deadline(tmp_path: Path) -> None:
    generous = cli(
        "crosscheck", str(EXAMPLES / "case_b.json"), "--backends", "sliced,z3",
        "--deadline-ms", "3600000",
    )  # fmt: skip
    assert generous.exit_code == 0, generous.output
    assert "agree (overall VIOLATED)" in generous.output


def test_crosscheck_cut_by_the_deadline_is_unknown_on_both(counting, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # both backends are cut before their first call: the same UNKNOWN report
    wide = _wide_file(tmp_path)
    counting.sleep_ms = 20
    result = cli(
        "crosscheck", str(wide), "--backends", "counting,counting:again", "--deadline-ms", "1"
    )
    assert result.exit_code in (0, 1), result.output
    assert "Traceback" not in result.output
    if result.exit_code == 0:
        assert "overall UNKNOWN" in result.output


@pytest.mark.parametrize("name", sorted(CHECKER_CASES))
def test_a_deadline_passed_before_the_first_call_solves_nothing(name: str) -> None:
    ticks = Ticks()
    deadline = Deadline(5, clock=ticks)
    ticks.ms = 5
    backend = create("sliced")
    report = check_case(
        Case.from_replay(case_replay(name)), backend, deadline=deadline, closed_form=False
    )
    assert report.overall == "UNKNOWN"
    assert report.reasons[0].code == "deadline"
    assert report.bases is not None
    assert {report.bases.proto, report.bases.evid, report.bases.all} == {"SOLVER_UNKNOWN"}


@pytest.mark.parametrize("name", ["z3", "pysat", "sliced"])
def test_a_backend_takes_a_lower_timeout_for_one_call(name: str) -> None:
    from tests.checking.test_checker import pigeonhole
    from unmask.backends import Part, Unknown

    atoms, constraints = pigeonhole(12)
    parts = [Part(f"constraint:{c.name}", c.expr) for c in constraints]
    session = create(name, timeout_ms=600_000).open(parts, [a.name for a in atoms])
    try:
        found = session.check(timeout_ms=1)
        assert isinstance(found, Unknown)  # 12 pigeons in 11 holes: not in 1 ms
        easy = session.check(enabled=[parts[0].label], timeout_ms=60_000)
        assert not isinstance(easy, Unknown)  # the lower limit was for that call only
    finally:
        session.close()


def test_next_with_a_deadline(counting, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    wide = _wide_file(tmp_path)
    args = ("next", str(wide), "--backend", "counting", "--format", "json")
    plain = cli(*args)
    assert cli(*args, "--deadline-ms", "3600000").stdout == plain.stdout
    counting.sleep_ms = 20
    cut = cli(*args, "--deadline-ms", "60")
    assert cut.exit_code == 3, cut.output  # nothing open: what is left is undecided
    report = json.loads(cut.stdout)
    assert report["open"] == [] and report["todo"] == []
    assert report["undecided"]
    assert any(u["detail"] == "the deadline passed" for u in report["undecided"])
    assert counting.instances[-1].wide_calls <= 60 // 20
    assert cli("next", str(wide), "--deadline-ms", "0").exit_code == 2


def test_next_never_shows_a_check_half_tried(counting) -> None:  # type: ignore[no-untyped-def]
    from unmask.checking.next import next_steps

    plain = counting()
    full = next_steps(Case.from_replay(wide_replay()), plain)
    assert full.open  # the wide requirement is open, with an effect per atom
    for budget in range(1, plain.calls, 9):
        backend = counting()
        backend.ticks = Ticks()
        deadline = Deadline(budget, clock=backend.ticks)
        found = next_steps(Case.from_replay(wide_replay()), backend, deadline=deadline)
        assert backend.calls <= budget
        for got in found.open:  # an open check is shown only with every effect tried
            (same,) = [c for c in full.open if c.subject == got.subject]
            assert got == same
        assert found.undecided


# --- the deadline cuts the encoding, not only solver calls (issue 33) ----------------------


def _card_replay(n: int, op: str = "atleast") -> dict:
    """A replay whose decision is a cardinality over a family of ``n`` members."""
    source = (
        'protocol big "p"\n'
        "domain claim\n"
        'atom supported(claim) : judge "the judge supports {claim}"\n'
        f"decision pass iff {op}({n // 2}, supported(c) for c in claim)\n"
    )
    return {
        "schema": "unmask.replay/1",
        "id": "big",
        "protocol": {"source": source},
        "domains": {"claim": [f"c{i}" for i in range(n)]},
        "sources": {"rationale": "r", "context": "c", "response": "s"},
        "verdict": "PASS",
        "annotations": [],
    }


class _Passing:
    """A clock at 0 until a test moves it far past any deadline."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("name", ["z3", "pysat", "sliced", "truthtable"])
def test_a_deadline_that_passes_while_a_base_is_encoded_cuts_the_encoding(
    name: str, tmp_path: Path
) -> None:
    from unmask.plumbing.budget import OutOfTime
    from unmask.replay.load import load_replay

    path = tmp_path / "big.json"
    path.write_text(json.dumps(_card_replay(6000 if name != "truthtable" else 10)))
    replay = load_replay(path)
    inner = create(name)
    clock = _Passing()
    opened: list[str] = []
    checks: list[int] = []

    class Slow(Backend):
        """The real backend, but the deadline passes as soon as a base starts encoding."""

        def open(self, parts, atoms):  # type: ignore[no-untyped-def]
            clock.now = 1e9
            try:
                session = inner.open(parts, atoms)
            except OutOfTime:
                opened.append("cut")
                raise
            opened.append("done")
            real = session.check

            def check(*a, **kw):  # type: ignore[no-untyped-def]
                checks.append(1)
                return real(*a, **kw)

            session.check = check  # type: ignore[method-assign]
            return session

    deadline = Deadline(60_000, clock=clock)
    report = check_case(Case.from_replay(replay), Slow(), deadline=deadline, closed_form=False)
    assert report.overall == "UNKNOWN"
    assert report.reasons[0].code == "deadline"
    assert report.verdict.result.status == "SOLVER_UNKNOWN"
    assert report.verdict.result.detail == "deadline"
    if name != "truthtable":  # ten atoms encode in less than one look at the clock
        assert "cut" in opened  # the encoding of the wide base stopped part way
    assert checks == []  # and nothing was asked of a half-built base


def test_a_deadline_that_passes_while_a_check_encodes_its_query_is_unknown() -> None:
    # pysat encodes a query's clauses inside the check: cut there, the check is UNKNOWN
    from unmask.backends import Part, Unknown

    atoms = [f"a{i}" for i in range(20_000)]
    wide = mk_card("atleast", 10_000, [mk_atom(a) for a in atoms])
    parts = [Part("fact:a0", mk_atom("a0"))]
    reads = iter([0.0, 0.0])  # the deadline's start, then the check's look at the time left

    def clock() -> float:
        return next(reads, 1e9)  # and past it from then on: while the query is encoded

    deadline = Deadline(5, clock=clock)
    session = create("pysat").open(parts, atoms)
    calls_before = session.calls
    try:
        found = BaseSession("evid", parts, session, deadline, 60_000).check(wide)
    finally:
        session.close()
    assert found == Unknown("deadline")
    assert deadline.hit
    assert session.calls == calls_before  # cut while encoding: the solver was never called


@pytest.mark.parametrize("backend_name", ["z3", "pysat", "sliced"])
def test_a_cardinality_over_20000_arguments_ends_at_its_deadline_in_bounded_memory(
    backend_name: str, tmp_path: Path
) -> None:
    # it ran for minutes and grew past 2 GB on z3 (its preprocessing ignores the timeout)
    # and 3.7 GB on pysat (a network built in one call); now it is reported at the deadline
    import resource
    import subprocess
    import sys

    path = tmp_path / "big.json"
    path.write_text(json.dumps(_card_replay(20_000)))

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    code = "from unmask.cli.main import main; main()"
    args = [sys.executable, "-c", code, "check", str(path), "--backend", backend_name]
    started = time.monotonic()
    done = subprocess.run(
        [*args, "--format", "json", "--deadline-ms", "2000"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=cap,
    )
    assert time.monotonic() - started < 60
    assert done.returncode == 3, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["overall"] == "UNKNOWN"
    assert report["reasons"][0]["code"] == "deadline"
    assert report["verdict"]["status"] in ("SOLVER_UNKNOWN", "UNDERDETERMINED")


def test_z3_decides_a_base_with_a_wide_cardinality_at_once() -> None:
    # z3's SAT core preprocessed a 5,000-argument pseudo-Boolean constraint for minutes,
    # past its own timeout; such a base now goes to its SMT core (WIDE_CARD)
    from unmask.backends import Part, Sat, Unsat

    atoms = [f"a{i}" for i in range(5_000)]
    wide = mk_card("atleast", 2_500, [mk_atom(a) for a in atoms])
    session = create("z3", timeout_ms=20_000).open([Part("decision", wide)], atoms)
    try:
        assert isinstance(session.check(want=atoms[:3]), Sat)
        assert isinstance(session.check(mk_not(wide)), Unsat)
    finally:
        session.close()


def test_check_asks_the_overlap_questions_and_checks_under_one_deadline(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`unmask check --deadline-ms N` bounds the overlap questions and the check together:
    with a deadline of its own for each, a protocol of many labels ran up to twice N."""
    from unmask.checking import outcomes

    seen: list[Deadline | None] = []
    real = outcomes.refuse_overlaps

    def recording(replay, backend, deadline=None):  # type: ignore[no-untyped-def]
        seen.append(deadline)
        return real(replay, backend, deadline)

    monkeypatch.setattr(outcomes, "refuse_overlaps", recording)
    replay = str(Path(__file__).resolve().parents[2] / "examples" / "case_b.json")
    res = CliRunner().invoke(main, ["check", replay, "--deadline-ms", "60000"])
    assert res.exit_code == 1, res.output
    # the command's own question (the protocol refused before anything is shown), then the
    # check's: one deadline, started once
    assert len(seen) == 2 and seen[0] is seen[1] and isinstance(seen[0], Deadline)
    assert seen[0].ms == 60000
