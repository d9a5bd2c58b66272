"""One replay file's JSON, and what to do instead when the file given is no replay.

Contract: ``read_replay_json(path, limits)`` returns the parsed JSON document of a replay
file (not yet validated: ``unmask.replay.load`` does that), bounded as every input is
(``unmask.plumbing.jsonload``). A file that is not one replay keeps its diagnostic, whose
help then says what to do: a folder or a JSON Lines file is `unmask audit`'s to read, and a
`.proto` file is a protocol, which a replay names by its `path`. ``load_replay`` and the
audit's tasks (``unmask.replay.inputs``) read replay files through it.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.jsonload import read_json_file, show
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits


def read_replay_json(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> Any:
    """A replay file's JSON document, not yet validated. A file that is not one replay says
    what to do instead: a folder or a JSON Lines file is `unmask audit`'s to read, and a
    `.proto` file is a protocol, which a replay names."""
    try:
        return read_json_file(path, limits)
    except UnmaskError as err:
        shown, name = show(str(path), 200), show(Path(path).name)
        if os.path.isdir(path):  # `unmask check replays/`; not "" (the current folder)
            code, hint = Code.IO, f"`unmask audit {shown}` checks every replay in a folder"
        elif Path(path).suffix == ".jsonl":
            code = Code.JSON_SYNTAX
            hint = f"`unmask audit {shown}` checks a JSON Lines file of replays, one a line"
        elif Path(path).suffix == ".proto":
            code = Code.JSON_SYNTAX
            hint = (
                f"`{name}` is a protocol, not a replay: a replay is a JSON file that names it, "
                f'`"protocol": {{"path": "{name}"}}` (docs/replay-format.md); '
                f"`unmask analyze {name}` checks the protocol alone"
            )
        else:
            raise
        diags = [replace(d, help=hint) if d.code is code else d for d in err.diagnostics]
        raise UnmaskError(diags) from None
