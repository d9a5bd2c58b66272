"""Builders and assertions that several test files share, so each is written once.

- ``wide_replay``: a valid replay file whose decision joins many unknown atoms, over the
  truth-table backend's limit;
- ``assert_a_directory_or_an_unreadable_file_is_exit_4``: what every command that reads a
  replay does with a path that is not a readable regular file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from unmask.ir import Atom, AtomDecl, GroundPair, Nary, Protocol, Requirement
from unmask.irjson import protocol_to_json


def wide_replay(folder: Path, n: int = 25, name: str = "wide") -> Path:
    """Write ``NAME.json``: a replay with id ``name`` whose decision joins ``n`` unknown atoms
    (one component of ``n`` atoms)."""
    names = [f"x{i}" for i in range(n)]
    protocol = Protocol(
        name=name,
        text="a decision over many unknown atoms",
        atoms=(*(AtomDecl(x, "judge") for x in names), AtomDecl("c", "context")),
        constraints=(),
        decision=Nary("and", tuple(map(Atom, names))),
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
