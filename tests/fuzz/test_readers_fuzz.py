"""A hostile-input sweep of the readers, each fed mutations of a real shipped input.

The seeds are made once, by the commands themselves, from the shipped RAG quickstart
(``examples/rag/``), the article's protocol and two importers' fixtures: structured
judgments imported, a person's annotations written in, an audit's result lines, a sampled
review applied and calibrated, ``unmaskc``'s IR, a WiCE and a promptfoo input. Each reader
gets cases drawn from its own seeded ``random.Random`` (``tests/fuzz/mutate.py``: a wrong
type at a JSON path, a key deleted or given twice, huge and non-finite numbers, deep
nesting, long strings, lone surrogates, NUL and terminal or bidirectional controls, a byte
order mark, CRLF, invalid UTF-8, the file cut short); the small files (IR, ``.proto``) are
also cut after every byte, and a protocol is nested 10^5 deep. Each case runs in its own
folder (the seeds it reads linked in, those it writes copied), in-process through click's
runner under a per-case alarm. The oracle: it ends; its exit status is one its command
documents; no traceback, no escaped exception, no internal error (whose status, 3, is also
a documented one); nothing raw on stdout or stderr that the output policy
(``unmask/plumbing/safe.py``) keeps out; a key given twice, NaN or Infinity refused with
its message, never read as a value; every JSON file written strict JSON; and a batch that
goes on past one damaged line keeps every other (``import structured``, ``review --apply``).

Cases per reader: ``Reader.cases`` (``UNMASK_READERS_FUZZ_SCALE`` multiplies them), 2,050
in all, plus 2,388 cuts and 3 deep protocols, about 30 s on one core; the seed is
``UNMASK_READERS_FUZZ_SEED``.
"""

from __future__ import annotations

import collections
import json
import os
import random
import re
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.fuzz.mutate import DEPTH, cut, deep_proto, mutate_json, mutate_lines, mutate_proto
from tests.fuzz.oracle import ACTING
from tests.helpers import ROOT, TEST_DATA
from unmask.cli.main import main
from unmask.cli.unmaskc import cli as unmaskc

SEED = os.environ.get("UNMASK_READERS_FUZZ_SEED", "20261206")
SCALE = float(os.environ.get("UNMASK_READERS_FUZZ_SCALE", "1"))
TIMEOUT_S = 20.0
EXAMPLES = ROOT / "examples"
DATA = TEST_DATA / "importers"


class _Hang(BaseException):
    """Raised by the alarm; a BaseException so click's runner does not swallow it."""


def _alarm(signum, frame):  # type: ignore[no-untyped-def]
    raise _Hang


@dataclass
class Ran:
    code: int | None
    stdout: str
    stderr: str
    crash: str = ""


def _invoke(prog, args: list[str]) -> Ran:  # type: ignore[no-untyped-def]
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, TIMEOUT_S)
    try:
        res = CliRunner().invoke(prog, args)
    except _Hang:
        return Ran(None, "", "")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    crash = ""
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        crash = f"{type(res.exception).__name__}: {res.exception}"[:400]
    return Ran(res.exit_code, res.stdout, res.stderr, crash)


def _must(args: list[str], prog=main) -> Ran:  # type: ignore[no-untyped-def]
    ran = _invoke(prog, args)
    assert ran.code == 0 and not ran.crash, (args, ran)
    return ran


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_seeds(tmp_path_factory.mktemp("seeds"))


OUT = ["--out", "replays"]


def make_seeds(root: Path) -> Path:
    """Every seed input, made by the commands that make them, in the folder ``root``."""
    for p in (EXAMPLES / "rag").iterdir():
        shutil.copy(p, root / p.name)
    shutil.copy(EXAMPLES / "factual_claims.proto", root / "factual_claims.proto")
    shutil.copy(EXAMPLES / "case_a.json", root / "case_a.json")
    shutil.copy(EXAMPLES / "case_unknown.json", root / "case_unknown.json")
    shutil.copy(DATA / "wice-sample_claim_test_outputs.jsonl", root / "wice.jsonl")
    shutil.copy(DATA / "promptfoo-sample-export.json", root / "promptfoo.json")
    old = Path.cwd()
    os.chdir(root)
    try:
        _must(["import", "structured", "judgments.jsonl", "--protocol", "rag.proto", *OUT])
        _must(["annotate", "replays", "--from", "annotations.jsonl", "--reader", "ana",
               "--out", "annotated"])  # fmt: skip
        _must(["audit", "annotated", "--out", "results.jsonl"])
        Path("fc.ir.json").write_text(
            _must(["factual_claims.proto"], unmaskc).stdout, encoding="utf-8"
        )
        shutil.copytree("annotated", "sampled")
        _must(["review", "sampled", "--sample", "6", "--seed", "3", "--export", "sample.jsonl"])
        decided = []
        for i, line in enumerate(Path("sample.jsonl").read_text("utf-8").splitlines()):
            record = json.loads(line)
            record["decision"] = ["accept", "reject"][i % 2]
            if i % 2:  # a reject carries the value the reviewer read
                record["value"] = "FALSE" if record["current"] == "TRUE" else "TRUE"
            record["reviewer"] = "fuzz"
            decided.append(json.dumps(record))
        Path("sample.jsonl").write_text("\n".join(decided) + "\n", encoding="utf-8")
        shutil.copytree("sampled", "sampled-fresh")  # `--apply` below writes into `sampled`
        _must(["review", "--apply", "sample.jsonl"])
        _must(["calibrate", "sampled", "--out", "calibration.json"])
        # the importers' inputs, a few records each: every case writes each record's replay
        lines = Path("judgments.jsonl").read_text("utf-8").splitlines(keepends=True)
        Path("judgments-4.jsonl").write_text("".join(lines[:4]), encoding="utf-8")
    finally:
        os.chdir(old)
    return root


# --- the readers --------------------------------------------------------------------------


@dataclass
class Reader:
    name: str
    seed: str  # the file mutated, relative to the seeds' folder ("@sampled": see below)
    kind: str  # "json", "lines" or "proto"
    commands: list[tuple[str, list[str], set[int]]]  # (name, args, {X} the file; exits)
    cases: int
    needs: tuple[str, ...] = ()  # seeds the commands read, linked into the case's folder
    copies: tuple[tuple[str, str], ...] = ()  # seeds the commands write into: (seed, as)


def _sampled_replay(seeds: Path) -> str:
    """The first sampled replay whose annotations hold a review, relative to the seeds."""
    for p in sorted((seeds / "sampled").glob("*.json")):
        if '"sample"' in p.read_text(encoding="utf-8"):
            return f"sampled/{p.name}"
    raise AssertionError("no sampled review was applied")


CHECKED = {0, 1, 3, 4}  # check, next, analyze, compare: 3 is also INTERNAL, told apart below
WRITTEN = {0, 1, 4}  # import, annotate, review --apply: all, some, none
READERS = [
    Reader(
        "ir",
        "fc.ir.json",
        "json",
        [
            ("analyze", ["analyze", "{X}"], CHECKED),
            ("compare", ["compare", "fc.ir.json", "{X}"], CHECKED),
            ("check", ["check", "case_a.json", "--protocol", "{X}"], CHECKED),
            ("validate", ["validate", "case_a.json", "--protocol", "{X}"], {0, 4}),
        ],
        300,
        ("fc.ir.json", "case_a.json", "factual_claims.proto"),
    ),
    Reader(
        "results",
        "results.jsonl",
        "lines",
        [
            ("next", ["next", "{X}"], CHECKED),
            ("review", ["review", "{X}"], {0, 4}),
            ("resume", ["audit", "annotated", "--out", "{X}", "--resume"], {0, 2}),
        ],
        200,
        ("annotated",),
    ),
    Reader(
        "calibration",
        "calibration.json",
        "json",
        [
            ("check", ["check", "annotated/r4.json", "--calibration", "{X}"], CHECKED),
            ("review", ["review", "annotated", "--calibration", "{X}"], {0, 4}),
        ],
        200,
        ("annotated",),
    ),
    Reader(
        "sampled",
        "@sampled",  # a replay holding sampled reviews, its `review` objects mutated
        "json",
        [("calibrate", ["calibrate", "sampled", "--out", "cal.json"], {0, 4})],
        200,
        ("sampled",),
    ),
    Reader(
        "review-apply",
        "sample.jsonl",
        "lines",
        [("apply", ["review", "--apply", "{X}"], WRITTEN)],
        150,
        copies=(("sampled-fresh", "sampled"),),
    ),
    Reader(
        "annotate-from",
        "annotations.jsonl",
        "lines",
        [
            (
                "annotate",
                ["annotate", "replays", "--from", "{X}", "--reader", "ana", "--out", "out"],
                WRITTEN,
            )
        ],
        150,
        ("replays",),
    ),
    Reader(
        "structured",
        "judgments-4.jsonl",
        "lines",
        [
            (
                "import",
                ["import", "structured", "{X}", "--protocol", "rag.proto", "--out", "out"],
                WRITTEN,
            )
        ],
        150,
        ("rag.proto",),
    ),
    Reader(
        "wice",
        "wice.jsonl",
        "lines",
        [("import", ["import", "wice", "{X}", "--out", "out"], WRITTEN)],
        150,
    ),
    Reader(
        "promptfoo",
        "promptfoo.json",
        "json",
        [("import", ["import", "promptfoo", "{X}", "--out", "out"], WRITTEN)],
        150,
    ),
    Reader(
        "replay",
        "case_unknown.json",
        "json",
        [
            ("check", ["check", "{X}", "--format", "json"], CHECKED),
            ("validate", ["validate", "{X}"], {0, 4}),
        ],
        150,
        ("factual_claims.proto",),
    ),
    Reader(
        "proto",
        "factual_claims.proto",
        "proto",
        [
            ("unmaskc", ["compile", "{X}"], {0, 1}),
            ("fmt", ["fmt", "{X}"], {0, 1}),
            ("check", ["check", "case_a.json", "--protocol", "{X}"], CHECKED),
        ],
        250,
        ("case_a.json",),
    ),
]
BY_NAME = {r.name: r for r in READERS}
# the small files cut after every byte, each through its reader's first command
SWEEPS = ["ir", "proto"]


def _review_path(path: tuple) -> bool:
    return "review" in path


def _hostile(rng: random.Random, reader: Reader, text: str) -> tuple[bytes, str]:
    if reader.kind == "lines":
        return mutate_lines(rng, text)
    if reader.kind == "proto":
        return mutate_proto(rng, text)
    return mutate_json(rng, text, _review_path if reader.name == "sampled" else None)


def _seed_path(seeds: Path, reader: Reader) -> str:
    return _sampled_replay(seeds) if reader.seed == "@sampled" else reader.seed


# --- the oracle ---------------------------------------------------------------------------


def _problems(ran: Ran, exits: set[int]) -> list[str]:
    """What is wrong with how a command ended (see the module)."""
    if ran.code is None:
        return [f"no exit within {TIMEOUT_S} s"]
    found = []
    if ran.crash:
        found.append(f"exception escaped: {ran.crash}")
    if ran.code not in exits:
        found.append(f"exit {ran.code} is not one of {sorted(exits)}")
    both = ran.stdout + ran.stderr
    if "Traceback" in both:
        found.append("a traceback in the output")
    if "internal error" in both:  # exit 3 is also INTERNAL: the message tells them apart
        found.append("an internal error")
    for name, text in (("stderr", ran.stderr), ("stdout", ran.stdout)):
        raw = ACTING.search(text)
        if raw:
            found.append(f"raw {raw.group()!r} on {name}, past the output policy")
    return found


def _refusals(note: str, ran: Ran) -> list[str]:
    """A JSON value no reader may take (a key given twice, NaN or Infinity) is refused with
    its own message, never read as one of its values (``unmask.plumbing.jsonload``)."""
    if ";" in note or "cut" in note:  # damaged beyond it: another error may come first
        return []
    if "dupkey" in note and "more than once" not in ran.stderr:
        return ["a key given twice was read without a word"]
    if any(f"raw-number {w}" in note for w in ("NaN", "Infinity", "-Infinity")) and (
        "not a json number" not in ran.stderr
    ):
        return ["a NaN or Infinity was read without a word"]
    return []


def _kept(reader: Reader, note: str, ran: Ran, folder: Path, lines: int) -> list[str]:
    """A batch goes on past a bad item and loses nothing: with one line of the input
    damaged, every other line is still imported or applied."""
    if not note.startswith("line ") or ";" in note or "twice" in note or ran.code not in (0, 1):
        return []
    if reader.name == "structured":
        written = len(list((folder / "out").glob("*.json"))) if (folder / "out").is_dir() else 0
        if written < lines - 1:
            return [f"{written} replays written from {lines} lines, one of them damaged"]
    if reader.name == "review-apply":
        said = re.search(r"applied (\d+) decisions?, refused (\d+) lines?", ran.stdout)
        done = int(said.group(1)) + int(said.group(2)) if said else 0
        if done < lines - 1:
            return [f"{done} lines applied or refused of {lines}: {ran.stdout[-200:]!r}"]
    return []


def _strict(value: str) -> None:
    raise ValueError(f"`{value}` written")


def _written(folder: Path, mutated: Path) -> list[str]:
    """Every JSON file the command wrote is strict JSON (no NaN, no Infinity) under the
    output policy (no raw control). A seed linked in and left alone has a second link."""
    found = []
    for p in sorted(folder.rglob("*.json*")):
        if p == mutated or p.suffix not in (".json", ".jsonl") or not p.is_file():
            continue
        if p.stat().st_nlink > 1:
            continue
        text = p.read_text(encoding="utf-8", errors="replace")
        raw = ACTING.search(text)
        if raw:
            found.append(f"raw {raw.group()!r} in {p.relative_to(folder)}, past the output policy")
        for doc in text.splitlines() if p.suffix == ".jsonl" else [text]:
            try:
                if doc.strip():
                    json.loads(doc, parse_constant=_strict)
            except ValueError as exc:
                found.append(f"{p.relative_to(folder)} is not strict JSON: {str(exc)[:80]}")
                break
    return found


def _run_case(
    seeds: Path, folder: Path, reader: Reader, data: bytes, command: tuple, note: str = ""
) -> tuple[Ran, list[str]]:
    folder.mkdir(parents=True)
    for name in reader.needs:  # read only: hard links, not copies
        if (seeds / name).is_dir():
            shutil.copytree(seeds / name, folder / name, copy_function=os.link)
        else:
            os.link(seeds / name, folder / name)
    for src, dst in reader.copies:
        shutil.copytree(seeds / src, folder / dst)
    target = _seed_path(seeds, reader)
    name = target if reader.seed == "@sampled" else f"x-{Path(target).name}"
    (folder / name).unlink(missing_ok=True)  # a link to the seed: never written through
    (folder / name).write_bytes(data)
    _, args, exits = command
    prog = unmaskc if reader.kind == "proto" and command[0] in ("unmaskc", "fmt") else main
    old = Path.cwd()
    os.chdir(folder)
    try:
        ran = _invoke(prog, [a.replace("{X}", name) for a in args])
    finally:
        os.chdir(old)
    lines = sum(1 for x in data.split(b"\n") if x.strip()) if reader.kind == "lines" else 0
    found = _problems(ran, exits) + _refusals(note, ran) + _kept(reader, note, ran, folder, lines)
    if ran.code is not None:
        found += _written(folder, folder / name)
    return ran, found


def _fuzz(seeds: Path, tmp: Path, reader: Reader, cases: list[tuple[bytes, str, tuple]]) -> None:
    failures = []
    codes: collections.Counter = collections.Counter()
    for i, (data, note, command) in enumerate(cases):
        ran, found = _run_case(seeds, tmp / f"{i:05d}", reader, data, command, note)
        codes[(command[0], ran.code)] += 1
        if found:
            failures.append((i, note, command[0], found, ran.stderr[-600:]))
        else:
            shutil.rmtree(tmp / f"{i:05d}", ignore_errors=True)
    assert sum(codes.values()) == len(cases) > 0
    lines = [f"{len(failures)} failing of {len(cases)} ({reader.name}, seed {SEED}); {dict(codes)}"]
    for i, note, cmd, found, err in failures[:12]:
        lines.append(f"#{i} {cmd} [{note[:160]}]: {'; '.join(found)}\n    {err!r}")
    assert not failures, "\n".join(lines)


@pytest.mark.parametrize("name", [r.name for r in READERS])
def test_reader_mutations(seeds: Path, tmp_path: Path, name: str) -> None:
    reader = BY_NAME[name]
    rng = random.Random(f"{SEED}:{name}")
    text = (seeds / _seed_path(seeds, reader)).read_text(encoding="utf-8")
    cases = []
    for _ in range(max(1, round(reader.cases * SCALE))):
        data, note = _hostile(rng, reader, text)
        cases.append((data, note, rng.choice(reader.commands)))
    _fuzz(seeds, tmp_path, reader, cases)


@pytest.mark.parametrize("name", SWEEPS)
def test_reader_cut_everywhere(seeds: Path, tmp_path: Path, name: str) -> None:
    """The file cut after every byte, each run through the reader's first command."""
    reader = BY_NAME[name]
    data = (seeds / _seed_path(seeds, reader)).read_bytes()
    first = reader.commands[0]
    _fuzz(seeds, tmp_path, reader, [(cut(data, i), f"cut at {i}", first) for i in range(len(data))])


@pytest.mark.parametrize("form", ["parens", "not", "open"])
def test_a_protocol_nested_100000_deep(seeds: Path, tmp_path: Path, form: str) -> None:
    """10^5 brackets (or `not`s, or unclosed brackets) in a decision, compiled: each ends
    within the alarm, at the nesting limit or compiled, never a recursion error."""
    reader = BY_NAME["proto"]
    text = (seeds / reader.seed).read_text(encoding="utf-8")
    data = deep_proto(text, form, DEPTH).encode()
    _fuzz(seeds, tmp_path, reader, [(data, f"deep {form}", reader.commands[0])])
