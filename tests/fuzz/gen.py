"""Hostile inputs for the fuzz suite, drawn from one seeded ``random.Random``.

Contract: ``make_case(rng, folder, outside)`` writes one case's files into ``folder`` (a
fresh directory) and returns a ``Case``: the program (``unmask`` or ``unmaskc``), its
arguments, the output format asked for and the exit statuses the command documents for
it. The same seed gives the same cases. ``outside`` is a folder beside the cases holding
canary files (``plant_canaries``) whose content must never appear in any output: every
hostile path points at them. Families: structure-aware JSON mutations of the shipped
example replays, byte flips of replay and ``.proto`` files, token soup from the grammar's
vocabulary, hostile paths and file kinds, and every output format.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzz.mutate import json_get, json_paths
from tests.proto_strategies import SOUP_TOKENS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
REPLAYS = sorted(p for p in EXAMPLES.glob("case_*.json"))
PROTOS = sorted(EXAMPLES.glob("*.proto"))
# the fuzz builds its cases from these: without them it would build nothing
assert len(REPLAYS) >= 5 and PROTOS, "the examples moved"
FORMATS = ("text", "json", "html", "markdown", "sarif", "junit")
BACKENDS = ("z3", "pysat", "truthtable", "sliced")
CANARY = "CANARY-7f3a9c-never-print-me"

# documented exit statuses (docs/reports.md, docs/backends.md, docs/language.md); 2 is a
# usage error, and no case here has a wrong command line
EXITS = {
    "check": {0, 1, 3, 4},
    "validate": {0, 4},
    "crosscheck": {0, 3, 4},  # 1 would be two backends disagreeing: a finding
    "unmaskc": {0, 1},
    "unmaskc-path": {0, 1, 2},  # a file that cannot be read is usage for unmaskc
    "audit": {0, 1, 3, 4},  # with `--fail-on unknown`
}


@dataclass
class Case:
    family: str
    prog: str  # "unmask" or "unmaskc"
    args: list[str]
    command: str  # key of EXITS
    fmt: str = ""  # check's --format, or unmaskc's --emit
    note: str = ""  # what was mutated, for the failure message
    files: dict[str, bytes] = field(default_factory=dict)


def plant_canaries(outside: Path) -> None:
    """Files outside every case folder that a replay must never get printed."""
    outside.mkdir(parents=True, exist_ok=True)
    good = (EXAMPLES / "factual_claims.proto").read_text(encoding="utf-8")
    # a valid protocol that would print the canary in any report that read it
    (outside / "secret.proto").write_text(
        good.replace('"Use only supplied context"', f'"{CANARY}"'), encoding="utf-8"
    )
    # an invalid one whose parse error would show the offending line
    (outside / "broken.proto").write_text(f"protocol p\n{CANARY} {CANARY} ((\n", encoding="utf-8")
    (outside / "secret.txt").write_text(f"TOKEN={CANARY}\n", encoding="utf-8")
    # a valid replay: an audit that wandered out of its tree would report its id
    replay = json.loads((EXAMPLES / "case_unknown.json").read_text(encoding="utf-8"))
    replay["id"] = CANARY
    (outside / "secret.json").write_text(json.dumps(replay), encoding="utf-8")


# --- JSON mutations --------------------------------------------------------------------------

ODD_STRINGS = [
    "",
    "\x1b[2J\x1b]0;owned\x07",
    "\r\x1b[32mSATISFIED\x1b[0m",
    "\u202e",
    "\x00",
    "</script><img src=x onerror=alert(1)>",
    "]]></failure><x>",
    "x" * 5000,
    "FALSE",
    "TRUE",
    "UNKNOWN",
    "rationale",
    "context",
    "response",
    "pass",
]
ODD_NUMBERS = [-1, 0, 1, 2**31, 2**63, 10**30, -(10**30), 1.5, 1e308]


def _odd_value(rng: random.Random, old: Any) -> Any:
    choice = rng.randrange(9)
    if choice == 0:
        return rng.choice(ODD_STRINGS)
    if choice == 1:
        return rng.choice(ODD_NUMBERS)
    if choice == 2:
        return rng.choice([None, True, False])
    if choice == 3:
        return [] if rng.random() < 0.5 else {}
    if choice == 4:
        return [old]
    if choice == 5:
        return {"value": old}
    if choice == 6:
        return str(old)
    if isinstance(old, int) and not isinstance(old, bool):
        return old + rng.choice([-1, 1, 1000, -1000, 10**6])
    if isinstance(old, str) and old:
        i = rng.randrange(len(old))
        return old[:i] + rng.choice(["\ud800", "\udfff", "\x1b", "\n", "\u0301", "😀"]) + old[i:]
    return rng.choice(ODD_STRINGS)


def mutate_obj(rng: random.Random, obj: Any) -> tuple[Any, str]:
    """One structural mutation of a parsed replay: drop, duplicate, retype or swap."""
    paths = json_paths(obj)
    path = rng.choice(paths)
    parent, key = json_get(obj, path[:-1]), path[-1]
    op = rng.choice(["drop", "retype", "retype", "swap", "dup", "offset", "offset"])
    if op == "offset":
        # offsets are where evidence meets sources: push them out of range
        spans = [p for p in paths if p[-1] in ("start", "end")]
        if spans:
            path = rng.choice(spans)
            parent, key = json_get(obj, path[:-1]), path[-1]
            old = parent[key] if type(parent[key]) is int else 0
            parent[key] = rng.choice([-1, 10**9, 2**64, old + 1, old - 1, 0, "3", 1.0])
            return obj, f"offset {path}"
        op = "retype"
    if op == "drop":
        del parent[key]
    elif op == "retype":
        parent[key] = _odd_value(rng, parent[key])
    elif op == "swap":
        other = rng.choice(paths)
        try:
            a, b = parent[key], json_get(obj, other)
            parent[key], json_get(obj, other[:-1])[other[-1]] = copy.deepcopy(b), copy.deepcopy(a)
        except (KeyError, IndexError, TypeError):
            pass  # the other path vanished under this one: keep what we have
    elif op == "dup":
        if isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        else:
            parent[f"{key}"] = copy.deepcopy(parent[key])
            parent[f"{key}_"] = copy.deepcopy(parent[key])
    return obj, f"{op} {path}"


def _raw_mutation(rng: random.Random, text: str) -> tuple[str, str]:
    """Mutations only the JSON text can carry: duplicate keys, huge numbers, NaN, nesting."""
    op = rng.choice(["dupkey", "huge", "nan", "deep", "surrogate", "bom", "trailing"])
    if op == "dupkey":
        i = text.find('"annotations"')
        if i < 0:
            i = text.find('"id"')
        return text[:i] + '"id": "dup", "verdict": "FAIL", ' + text[i:], op
    if op in ("huge", "nan"):
        if op == "huge":
            number = "1" + "0" * rng.choice([20, 400, 5000]) + rng.choice(["", ".5", "e999"])
        else:
            number = rng.choice(["NaN", "Infinity", "-Infinity", "-0", "1e-999"])
        return re.sub(r'"(start|end)": -?\d+', f'"\\1": {number}', text, count=1), op
    if op == "deep":
        depth = rng.choice([100, 1000, 100_000])
        return text.replace('"gold"', '"deep": ' + "[" * depth + "]" * depth + ', "gold"', 1), op
    if op == "surrogate":
        return text.replace('"id": "', '"id": "\\ud800\\udbff', 1), op
    if op == "bom":
        return "\ufeff" + text, op
    return text + rng.choice(["\n{}", "x", "\x00", "]"]), op


def _protocol_files(folder: Path) -> None:
    for p in PROTOS:
        (folder / p.name).write_bytes(p.read_bytes())


def flip_bytes(rng: random.Random, data: bytes, n: int) -> bytes:
    out = bytearray(data)
    for _ in range(n):
        if not out:
            break
        i = rng.randrange(len(out))
        op = rng.randrange(4)
        if op == 0:
            out[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            out[i] = rng.choice(b'\x00\xff\xc3\x80"\\{}[]:,\n\x1b')
        elif op == 2:
            del out[i]
        else:
            out[i:i] = out[i : i + rng.randrange(1, 40)]
    return bytes(out)


def token_soup(rng: random.Random) -> str:
    return " ".join(rng.choice(SOUP_TOKENS) for _ in range(rng.randrange(1, 60)))


# --- the command around a replay -------------------------------------------------------------


def _replay_command(rng: random.Random, path: Path, family: str, note: str) -> Case:
    r = rng.random()
    if r < 0.62:
        fmt = rng.choice(FORMATS)
        args = ["check", str(path), "--format", fmt, "--backend", rng.choice(BACKENDS)]
        return Case(family, "unmask", args, "check", fmt, note)
    if r < 0.9:
        return Case(family, "unmask", ["validate", str(path)], "validate", "", note)
    args = ["crosscheck", str(path), "--timeout-ms", "60000"]
    return Case(family, "unmask", args, "crosscheck", "", note)


def _unmaskc_command(rng: random.Random, path: Path, family: str, note: str) -> Case:
    r = rng.random()
    if r < 0.5:
        emit = rng.choice(["ir", "ir", "smt2", "dimacs"])
        args = ["compile", str(path), "--emit", emit]
        if "family" in path.name or rng.random() < 0.2:
            args += ["--domain", rng.choice(["claim=a,b", "claim=", "d=x"])]
        return Case(family, "unmaskc", args, "unmaskc", emit, note)
    if r < 0.8:
        return Case(family, "unmaskc", ["fmt", str(path)], "unmaskc", "fmt", note)
    return Case(family, "unmaskc", ["fmt", "--check", str(path)], "unmaskc", "fmt", note)


def json_mutation(rng: random.Random, folder: Path, outside: Path) -> Case:
    src = rng.choice(REPLAYS)
    _protocol_files(folder)
    obj = json.loads(src.read_text(encoding="utf-8"))
    notes = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        obj, note = mutate_obj(rng, obj)
        notes.append(note)
    text = json.dumps(obj, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 2]))
    if rng.random() < 0.25:
        text, note = _raw_mutation(rng, text)
        notes.append(note)
    path = folder / "r.json"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    return _replay_command(rng, path, "json", f"{src.name}: {'; '.join(notes)}")


def replay_flip(rng: random.Random, folder: Path, outside: Path) -> Case:
    src = rng.choice(REPLAYS)
    _protocol_files(folder)
    path = folder / "r.json"
    path.write_bytes(flip_bytes(rng, src.read_bytes(), rng.choice([1, 2, 5, 20])))
    return _replay_command(rng, path, "replay-bytes", src.name)


def proto_flip(rng: random.Random, folder: Path, outside: Path) -> Case:
    """A damaged `.proto`, compiled by `unmaskc` or read through a replay."""
    _protocol_files(folder)
    target = rng.choice(PROTOS)
    data = target.read_bytes()
    if rng.random() < 0.3:
        data = token_soup(rng).encode()
        note = "soup"
    else:
        data = flip_bytes(rng, data, rng.choice([1, 2, 5, 20]))
        note = "bytes"
    (folder / target.name).write_bytes(data)
    family = "proto-soup" if note == "soup" else "proto-bytes"
    if rng.random() < 0.5:
        return _unmaskc_command(rng, folder / target.name, family, f"{target.name}: {note}")
    users = [
        p for p in REPLAYS if f'"path": "{target.name}"' in p.read_text(encoding="utf-8")
    ] or REPLAYS
    replay = rng.choice(users)
    (folder / replay.name).write_bytes(replay.read_bytes())
    return _replay_command(rng, folder / replay.name, family, f"{target.name}: {note}")


def _special(kind: str, at: Path, outside: Path) -> None:
    """Make `at` a file of a hostile kind."""
    if kind == "fifo":
        os.mkfifo(at)
    elif kind == "dir":
        at.mkdir()
    elif kind == "link-out":
        at.symlink_to(outside / "secret.proto")
    elif kind == "link-broken-out":
        at.symlink_to(outside / "broken.proto")
    elif kind == "link-txt":
        at.symlink_to(outside / "secret.txt")
    elif kind == "link-zero":
        at.symlink_to("/dev/zero")
    elif kind == "link-environ":
        at.symlink_to("/proc/self/environ")
    elif kind == "link-loop":
        at.symlink_to(at.name)
    elif kind == "unreadable":
        at.write_text("protocol p\n", encoding="utf-8")
        at.chmod(0)


SPECIAL_KINDS = [
    "fifo",
    "dir",
    "link-out",
    "link-broken-out",
    "link-txt",
    "link-zero",
    "link-environ",
    "link-loop",
    "unreadable",
]


def hostile_path(rng: random.Random, folder: Path, outside: Path) -> Case:
    """A protocol path, a replay or a `.proto` that is not what it seems."""
    _protocol_files(folder)
    where = rng.choice(["protocol", "protocol", "replay", "proto"])
    if where == "protocol":
        obj = json.loads((EXAMPLES / "case_a.json").read_text(encoding="utf-8"))
        name = rng.choice(
            [
                "/proc/self/environ",
                "/etc/passwd",
                "/dev/zero",
                str(outside / "secret.proto"),
                str(outside / "broken.proto"),
                "../outside/secret.proto",
                "../outside/secret.txt",
                "linkdir/secret.proto",
                "linkdir/broken.proto",
                "special.proto",
                "sub/../special.proto",
                "special.txt",
                "",
                ".",
                "C:\\x.proto",
                "\x00.proto",
            ]
        )
        if name.startswith("linkdir/"):
            (folder / "linkdir").symlink_to(outside)
        if name.startswith(("special", "sub/")):
            (folder / "sub").mkdir()
            _special(rng.choice(SPECIAL_KINDS), folder / name.replace("sub/../", ""), outside)
        obj["protocol"] = {"path": name}
        path = folder / "r.json"
        path.write_text(json.dumps(obj), encoding="utf-8")
        return _replay_command(rng, path, "hostile-path", f"protocol path {name!r}")
    kind = rng.choice([*SPECIAL_KINDS, "proc", "devzero"])
    suffix = ".json" if where == "replay" else ".proto"
    if kind == "proc":
        target = Path("/proc/self/environ")
    elif kind == "devzero":
        target = Path("/dev/zero")
    else:
        target = folder / f"x{suffix}"
        _special(kind, target, outside)
    note = f"{where} is {kind}"
    if where == "replay":
        case = _replay_command(rng, target, "hostile-file", note)
    else:
        case = _unmaskc_command(rng, target, "hostile-file", note)
        case.command = "unmaskc-path"
    return case


def wide(rng: random.Random, folder: Path, outside: Path) -> Case:
    """A decision over many unknown atoms: near and over the truth-table backend's limit."""
    n = rng.randrange(15, 27)
    op = rng.choice(["and", "or", "xor"])
    atoms = [{"name": f"x{i}", "role": "judge"} for i in range(n)]
    obj = json.loads((EXAMPLES / "case_unknown.json").read_text(encoding="utf-8"))
    ir = obj["protocol"]
    ir["atoms"] = [*ir["atoms"], *atoms]
    ir["decision"] = {"op": op, "args": [{"atom": a["name"]} for a in atoms]}
    path = folder / "r.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    return _replay_command(rng, path, "wide", f"{op} over {n} atoms")


FAMILIES = [
    (json_mutation, 50),
    (replay_flip, 15),
    (proto_flip, 20),
    (hostile_path, 15),
    (wide, 2),
]


def make_case(rng: random.Random, folder: Path, outside: Path) -> Case:
    fns, weights = zip(*FAMILIES, strict=True)
    fn = rng.choices(fns, weights)[0]
    with contextlib.suppress(FileExistsError):
        folder.mkdir(parents=True)
    return fn(rng, folder, outside)
