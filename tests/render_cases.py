"""Replays and reports shared by the report-format tests (not a test module).

``hostile_replay`` writes case C with text that tries to escape every format: a script tag in
the rationale, markup in an explanation, Markdown punctuation, ``]]>``, a control character
and a non-BMP character before the spans (so code-point offsets differ from UTF-16 ones).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import found_files
from unmask.api import check, load
from unmask.checking.report import Report
from unmask.replay.data import Replay

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

SCRIPT = "<script>alert(1)</script>"
PREFIX = f"🙂 {SCRIPT} ]]> \x01 **bold** [x](javascript:alert(1)) | # "
EXPLANATION = '"><img src=x onerror=alert(1)> & `tick` _under_ | pipe\n- not a list'
HOSTILE_ID = 'case <b>c</b> & "x" `y` ]]>'


def example(name: str) -> tuple[Report, Replay]:
    replay = load(EXAMPLES / name)
    return check(replay, "z3"), replay


def hostile_replay(tmp_path: Path) -> Path:
    """Case C with hostile text; every rationale span is shifted past the prefix."""
    for proto in found_files(EXAMPLES.glob("*.proto")):
        shutil.copy(proto, tmp_path / proto.name)
    obj = json.loads((EXAMPLES / "case_c.json").read_text(encoding="utf-8"))
    obj["id"] = HOSTILE_ID
    obj["sources"]["rationale"] = PREFIX + obj["sources"]["rationale"]
    for ann in obj["annotations"]:
        for ev in ann["evidence"]:
            if ev["source"] == "rationale":
                ev["start"] += len(PREFIX)
                ev["end"] += len(PREFIX)
        ann["explanation"] = EXPLANATION
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def overlapping_replay(tmp_path: Path) -> Path:
    """Case C where two judge spans overlap in the rationale (one inside the other's tail)."""
    for proto in found_files(EXAMPLES.glob("*.proto")):
        shutil.copy(proto, tmp_path / proto.name)
    obj = json.loads((EXAMPLES / "case_c.json").read_text(encoding="utf-8"))
    text = "Intro 🙂 naïve. Alice joined ACME in 2024 and she is ACME's CTO. Done."
    obj["sources"]["rationale"] = text
    joined = (text.index("Alice"), text.index(" and"))
    cto = (text.index("2024"), text.index(" Done"))
    ext = (0, 5)
    spans = {"j_joined": joined, "j_cto": cto, "external": ext}
    for ann in obj["annotations"]:
        if ann["atom"] in spans:
            a, b = spans[ann["atom"]]
            ann["evidence"] = [{"source": "rationale", "start": a, "end": b, "quote": text[a:b]}]
    path = tmp_path / "overlap.json"
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def surrogate_replay(tmp_path: Path) -> Path:
    """Case C with lone surrogates (valid JSON escapes) in the rationale and a note."""
    for proto in found_files(EXAMPLES.glob("*.proto")):
        shutil.copy(proto, tmp_path / proto.name)
    obj = json.loads((EXAMPLES / "case_c.json").read_text(encoding="utf-8"))
    obj["sources"]["rationale"] = "\udc00" + obj["sources"]["rationale"]
    for ann in obj["annotations"]:
        ann["explanation"] = "note \ud800 here"
        for ev in ann["evidence"]:
            if ev["source"] == "rationale":
                ev["start"] += 1
                ev["end"] += 1
    path = tmp_path / "surrogate.json"
    path.write_text(json.dumps(obj, ensure_ascii=True), encoding="utf-8")
    return path
