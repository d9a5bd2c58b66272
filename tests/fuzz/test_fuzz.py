"""The fuzz suite: hostile replays, protocols and paths through every command and format.

A fixed seed draws the cases (``tests/fuzz/gen.py``); ``tests/fuzz/oracle.py`` judges each.
Most run in-process (click's runner, a wall-clock alarm); a sample, and every output format
of every command, run as real processes with stdin closed and a timeout. Environment:
``UNMASK_FUZZ_CASES`` (in-process cases, default 2500), ``UNMASK_FUZZ_PROCESSES`` (the
real-process sample, default 16), ``UNMASK_FUZZ_SEED``. A failure lists each bad case with
its arguments and what was mutated, and leaves its files in pytest's temporary folder.
"""

from __future__ import annotations

import collections
import json
import os
import random
import shutil
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.fuzz.gen import CANARY, EXAMPLES, FORMATS, Case, make_case, plant_canaries
from tests.fuzz.oracle import problems, run_inprocess, run_process

SEED = int(os.environ.get("UNMASK_FUZZ_SEED", "20261130"))
CASES = int(os.environ.get("UNMASK_FUZZ_CASES", "2500"))
PROCESSES = int(os.environ.get("UNMASK_FUZZ_PROCESSES", "16"))


def _remove(folder: Path) -> None:
    for p in folder.rglob("*"):
        if not p.is_symlink():
            p.chmod(0o700)
    shutil.rmtree(folder, ignore_errors=True)


def _report(
    failures: list[tuple[int, Case, list[str]]], counts: collections.Counter, part: int = 0
) -> str:
    seed = f"seed {SEED}, part {part}"
    lines = [f"{len(failures)} failing cases ({seed}); cases per family: {dict(counts)}"]
    for i, case, found in failures[:15]:
        lines.append(f"#{i} {case.family} [{case.note}] {case.prog} {' '.join(case.args)}")
        lines.extend(f"    {f}" for f in found)
    return "\n".join(lines)


# the in-process cases in parts of their own, each drawn from its own seed, so that the
# workers of a parallel run share them (one part of 2,500 cases was the suite's longest test)
PARTS = 5


@pytest.mark.parametrize("part", range(PARTS))
def test_fuzz_in_process(tmp_path: Path, part: int) -> None:
    rng = random.Random(f"{SEED}:{part}")
    root = tmp_path / "c"
    outside = root / "outside"
    plant_canaries(outside)
    failures, counts = [], collections.Counter()
    first = part * CASES // PARTS
    for i in range(first, (part + 1) * CASES // PARTS):
        folder = root / f"{i:06d}"
        case = make_case(rng, folder, outside)
        counts[case.family] += 1
        found = problems(case, run_inprocess(case))
        if found:
            failures.append((i, case, found))
        else:
            _remove(folder)
    assert counts, "no case drawn"
    assert not failures, _report(failures, counts, part)


def _process_cases(root: Path, outside: Path) -> list[Case]:
    """Every format of `check`, each other command once, then a random sample."""
    cases = []
    good = str(EXAMPLES / "case_b.json")  # a VIOLATED replay: reports with findings
    for fmt in FORMATS:
        cases.append(Case("formats", "unmask", ["check", good, "--format", fmt], "check", fmt))
    invalid = root / "invalid.json"
    invalid.write_text('{"schema": "unmask.replay/1", "protocol": {"path": "/etc/passwd"}}')
    for fmt in ("sarif", "junit"):
        args = ["check", str(invalid), "--format", fmt]
        cases.append(Case("formats", "unmask", args, "check", fmt))
    cases.append(Case("formats", "unmask", ["validate", good], "validate"))
    cases.append(Case("formats", "unmask", ["crosscheck", good], "crosscheck"))
    proto = str(EXAMPLES / "factual_claims.proto")
    for emit in ("ir", "smt2", "dimacs"):
        cases.append(Case("formats", "unmaskc", [proto, "--emit", emit], "unmaskc", emit))
    cases.append(Case("formats", "unmaskc", ["fmt", proto], "unmaskc", "fmt"))
    rng = random.Random(SEED + 1)
    for i in range(PROCESSES):
        cases.append(make_case(rng, root / f"p{i:05d}", outside))
    return cases


def test_fuzz_real_processes(tmp_path: Path) -> None:
    root = tmp_path / "c"
    outside = root / "outside"
    plant_canaries(outside)
    cases = _process_cases(root, outside)
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(run_process, cases))
    pairs = enumerate(zip(cases, outcomes, strict=True))
    failures = [(i, c, found) for i, (c, o) in pairs if (found := problems(c, o))]
    counts = collections.Counter(c.family for c in cases)
    assert not failures, _report(failures, counts)


def test_fuzz_audit_of_the_sample(tmp_path: Path) -> None:
    """`unmask audit` over the folders of a sample: FIFOs, links out, broken replays."""
    root = tmp_path / "c"
    outside = tmp_path / "outside"
    plant_canaries(outside)
    rng = random.Random(SEED + 2)
    folders = [root / f"a{i:04d}" for i in range(max(PROCESSES * 2, 8))]
    for folder in folders:
        make_case(rng, folder, outside)
    (root / "a0000" / "linkdir").symlink_to(outside)  # a directory link out of the tree
    out, junit, html = tmp_path / "out.jsonl", tmp_path / "junit.xml", tmp_path / "html"
    args = ["audit", str(root), "--out", str(out), "--junit", str(junit), "--html", str(html)]
    case = Case("audit", "unmask", [*args, "--jobs", "2", "--fail-on", "unknown"], "audit")
    outcome = run_process(case, timeout_s=300)
    assert problems(case, outcome) == [], outcome.stderr[-2000:]
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines and all(isinstance(json.loads(line), dict) for line in lines)
    ET.fromstring(junit.read_text(encoding="utf-8"))
    written = [out, junit, *html.rglob("*")]
    leaked = [p.name for p in written if p.is_file() and CANARY in p.read_text(encoding="utf-8")]
    assert leaked == [], "a file outside the audited tree reached the audit's output"


@pytest.mark.parametrize("seed", range(3))
def test_the_same_seed_draws_the_same_cases(tmp_path: Path, seed: int) -> None:
    def draw(where: Path) -> list[str]:
        rng = random.Random(seed)
        plant_canaries(where / "outside")
        out = []
        for i in range(30):
            folder = where / f"{i}"
            case = make_case(rng, folder, where / "outside")
            files = sorted(
                (p.name, p.read_bytes() if p.is_file() and not p.is_symlink() else b"")
                for p in folder.iterdir()
                if not p.is_fifo() and os.access(p, os.R_OK)
            )
            text = repr((case.family, case.note, case.args, files))
            out.append(text.replace(str(where), ""))
        return out

    assert draw(tmp_path / "a") == draw(tmp_path / "b")
