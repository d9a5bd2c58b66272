"""Write hand annotations into imported replays.

Usage: `python annotate.py REPLAYS ANNOTATIONS --reader NAME`. Each line of ANNOTATIONS is one
annotation a person made after reading the material:

    {"replay": "r1", "atom": "backed(joined)", "value": "TRUE", "quote": "Alice joined …"}
    {"replay": "r1", "atom": "backed(cto)", "value": "FALSE", "read": "context", "note": "…"}

`quote` is copied exactly from a source (`context` for a context atom, `rationale` otherwise, or
the one `source` names) and must occur there once; `read` instead says the reader read the whole
of that source and nothing in it says the atom holds (a FALSE only: docs/replay-format.md).
Every annotation is `by: {"kind": "human", "name": NAME, "reviewed": true}`. An atom the judge
already annotated is replaced, its old annotation kept under `review` as `unmask review` keeps
it. Each changed replay is validated before it is written. Exit status 0, or 4 with one
`ANNOTATIONS:LINE: message` per problem (nothing is written then).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from unmask.diagnostics import UnmaskError
from unmask.replay import render_error, replay_from_obj

KEYS = ("replay", "atom", "value", "quote", "read", "source", "note")


def _problem(where: str, message: str) -> None:
    print(f"{where}: {message}", file=sys.stderr)


def _annotation(line: dict, replay: dict, reader: str) -> dict:
    """The replay annotation for one line; ValueError with the reason when it cannot be."""
    unknown = [k for k in line if k not in KEYS]
    if unknown:
        raise ValueError(f"unknown key `{unknown[0]}`; keys are " + ", ".join(KEYS))
    atom, value = line.get("atom"), line.get("value")
    if not isinstance(atom, str) or value not in ("TRUE", "FALSE", "UNKNOWN"):
        raise ValueError("needs `atom` and a `value` of `TRUE`, `FALSE` or `UNKNOWN`")
    ann: dict = {"atom": atom, "value": value}
    if "read" in line:
        ann["evidence"] = [{"source": line["read"], "read": "whole"}]
    elif "quote" in line:
        default = "context" if atom.startswith("backed(") else "rationale"
        source = line.get("source", default)
        text = replay["sources"].get(source, "")
        quote = line["quote"]
        start = text.find(quote) if isinstance(quote, str) and quote else -1
        if start < 0:
            raise ValueError(f"the quote is not in `{source}`")
        if text.find(quote, start + 1) >= 0:
            raise ValueError(f"the quote occurs more than once in `{source}`: quote more of it")
        ann["evidence"] = [
            {"source": source, "start": start, "end": start + len(quote), "quote": quote}
        ]
    if "note" in line:
        ann["explanation"] = line["note"]
    ann["by"] = {"kind": "human", "name": reader, "reviewed": True}
    return ann


def _put(replay: dict, ann: dict) -> None:
    """Add ``ann``, or replace the annotation of its atom and keep that one under `review`."""
    anns = replay.setdefault("annotations", [])
    for i, old in enumerate(anns):
        if old.get("atom") == ann["atom"]:
            decision = "accept" if old.get("value") == ann["value"] else "reject"
            original = {k: old[k] for k in ("value", "by", "evidence", "explanation") if k in old}
            anns[i] = {**ann, "review": {"decision": decision, "original": original}}
            return
    anns.append(ann)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("replays", type=Path, help="the folder `unmask import` wrote")
    ap.add_argument("annotations", type=Path, help="hand annotations, one JSON object a line")
    ap.add_argument("--reader", required=True, help="who read the material")
    args = ap.parse_args(argv)
    files = {}
    for path in sorted(args.replays.glob("*.json")):
        obj = json.loads(path.read_text(encoding="utf-8"))
        files[obj["id"]] = (path, obj)
    changed: dict[str, tuple[Path, dict]] = {}
    bad = 0
    lines = args.annotations.read_text(encoding="utf-8").splitlines()
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        where = f"{args.annotations}:{n}"
        try:
            try:
                line = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not JSON ({exc.msg}, column {exc.colno})") from None
            if not isinstance(line, dict):
                raise ValueError("expected a JSON object")
            if line.get("replay") not in files:
                raise ValueError(f"no replay `{line.get('replay')}` in `{args.replays}`")
            path, obj = files[line["replay"]]
            _put(obj, _annotation(line, obj, args.reader))
            changed[line["replay"]] = (path, obj)
        except ValueError as exc:
            _problem(where, str(exc))
            bad += 1
    for path, obj in changed.values():
        try:  # the replay must still be valid: an atom the protocol lacks, a FALSE read …
            replay_from_obj(obj, file=str(path), base_dir=path.parent)
        except UnmaskError as exc:
            text = render_error(exc)
            print(text, file=sys.stderr, end="" if text.endswith("\n") else "\n")
            bad += 1
    if bad:
        _problem(str(args.annotations), f"{bad} problems; nothing written")
        return 4
    for path, obj in changed.values():
        path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    count = sum(1 for x in lines if x.strip())
    print(f"wrote {count} annotations into {len(changed)} replays in `{args.replays}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
