"""A regular expression that an input file supplies (an Inspect scorer's `grade_pattern`),
applied to many texts in a child Python with a time limit, never in this process: such a
pattern can take time exponential in a text's length.

Contract: ``spans(pattern, texts)`` gives, for each text, the span of group 1 of
``re.search(pattern, text)`` (None where the pattern finds nothing or group 1 takes no
part), or a reason (a string) when the pattern cannot be applied: not a pattern Python
reads, without a group 1, or slower than ``SECONDS`` for all the texts together.
"""

from __future__ import annotations

import json
import subprocess
import sys

SECONDS = 10.0
# run by `python -I -c`: the pattern and the texts come in on stdin as JSON, never as code
_CHILD = """
import json, re, sys
d = json.load(sys.stdin)
try:
    p = re.compile(d["p"])
except (re.error, RecursionError, OverflowError):
    print(json.dumps("is not a pattern Python reads")); sys.exit(0)
if p.groups < 1:
    print(json.dumps("has no group 1 to read the grade from")); sys.exit(0)
out = []
for t in d["t"]:
    m = p.search(t)
    out.append(None if m is None or m.start(1) < 0 else [m.start(1), m.end(1)])
print(json.dumps(out))
"""


def spans(pattern: str, texts: list[str]) -> list[tuple[int, int] | None] | str:
    """Group 1's span in each text, or why the pattern could not be applied."""
    feed = json.dumps({"p": pattern, "t": texts})
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", _CHILD],
            input=feed,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"took more than {SECONDS:g} s over this file's explanations"
    except OSError:
        return "could not be run here (no Python to run it in)"
    try:
        out = json.loads(done.stdout) if done.returncode == 0 else None
    except ValueError:
        out = None
    if isinstance(out, str):
        return out
    if not isinstance(out, list) or len(out) != len(texts):
        return "could not be applied"
    return [None if s is None else (int(s[0]), int(s[1])) for s in out]
