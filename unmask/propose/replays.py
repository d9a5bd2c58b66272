"""Replay files filled by proposers: ``unmask propose replay``'s engine.

Contract: ``proposers_for(names, obj, base, rules_path)`` makes the proposers ``names``
asks for, in order (``judge-rules`` with ``--rules``, else the rule file beside the
replay's protocol path, else the built-in rules; every other a registered replay filler),
or raises ``Unusable``: a usage problem, the same for every replay. ``read_replay(path,
limits)`` reads and validates one replay file: its JSON object, its loaded form and the
folder its protocol path is relative to. ``filled(...)`` fills one such replay
(``unmask.propose.replay.fill``), embeds its protocol when it is written to another folder,
and validates the result as the loader reads it from there (``UnmaskError`` when a proposer
wrote what the loader refuses). ``fill_each(items, ...)`` does the same for loaded replays
(each with ``location``, ``obj``, ``replay``, ``base``, ``errors`` and its output file's
stem ``name``, as ``unmask.annotate.run.names`` gives them) and writes each to
``out/NAME.json`` (through ``write`` when given: the folder's manifest, which lists
each replay before it writes it, ``unmask.replay.outfolder``), yielding a ``Filled`` per
item: what was written and filled, or the diagnostics of why not; only ``Unusable`` is
raised. Nothing here prints.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen
from unmask.plumbing.limits import Limits
from unmask.propose import Proposer


class Unusable(UnmaskError):
    """The proposers asked for cannot fill a replay (a usage problem, not the replay's)."""


def fillers(names: tuple[str, ...], rules_path: str | None) -> dict[str, Proposer]:
    """The proposers asked for that need no replay to be made (all but ``judge-rules``), by
    name; ``Unusable`` (a usage problem) when one is unknown or ``--rules`` is given without
    ``judge-rules``. What can be told before any replay is read, so a run can refuse before
    it touches its output folder."""
    from unmask.propose.replay import replay_filler

    if rules_path and "judge-rules" not in names:
        raise Unusable(
            [Diagnostic(Code.USAGE, "`--rules` is for the `judge-rules` proposer, not asked for")]
        )
    try:
        return {name: replay_filler(name) for name in names if name != "judge-rules"}
    except UnmaskError as exc:
        raise Unusable(exc.diagnostics) from None


def proposers_for(
    names: tuple[str, ...], obj: dict, base: Path, rules_path: str | None
) -> list[Proposer]:
    """The proposers asked for, in order; ``Unusable`` (a usage problem) when one cannot
    fill a replay or ``--rules`` is given without ``judge-rules``."""
    made = fillers(names, rules_path)
    try:
        return [
            judge_rules(obj, base, rules_path) if name == "judge-rules" else made[name]
            for name in names
        ]
    except UnmaskError as exc:
        raise Unusable(exc.diagnostics) from None


def judge_rules(obj: dict, base: Path, rules_path: str | None) -> Proposer:
    """The judge rules: ``--rules``, the rule file beside a protocol path, or the built-in."""
    from unmask.propose.judge import JudgeRules, load_rules, rules_for
    from unmask.replay.confine import Refused, locate_protocol

    if rules_path:
        return JudgeRules(load_rules(rules_path))
    protocol = obj.get("protocol")
    if isinstance(protocol, dict) and isinstance(protocol.get("path"), str):
        try:
            real, _ = locate_protocol(protocol["path"], base)
        except Refused:
            real = None
        # found beside the protocol, not named: never read through a link
        if real is not None and os.path.lexists(rules_for(real)):
            return JudgeRules(load_rules(rules_for(real), beside=True))
    return JudgeRules()


def read_replay(path: str, limits: Limits) -> tuple[dict, Any, Path]:
    """A replay file's JSON object, its loaded form and its folder; ``UnmaskError`` when
    it is not a valid replay."""
    from unmask.plumbing.jsonload import read_json_file
    from unmask.replay.load import replay_from_obj

    obj = read_json_file(path, limits)
    base = Path(path).resolve().parent
    return obj, replay_from_obj(obj, path, base, limits), base


def filled(
    obj: dict,
    loaded: Any,
    base: Path,
    proposers: list[Proposer],
    threshold: float,
    path: str,
    output: str | None,
    limits: Limits,
) -> tuple[dict, Any]:
    """One replay filled: ``(new object, Outcome)``, validated as it reads written to
    ``output`` (None: where it is, ``path``)."""
    from unmask.propose.replay import fill
    from unmask.replay.confine import embed_protocol
    from unmask.replay.load import replay_from_obj

    new, outcome = fill(obj, loaded, proposers, threshold)
    if output is not None:
        embed_protocol(new, base, Path(output).resolve().parent)
    out_base = base if output is None else Path(output).resolve().parent
    replay_from_obj(new, output or path, out_base, limits)
    return new, outcome


@frozen
class Filled:
    """One item of ``fill_each``: written to ``target`` with its ``outcome``, or the
    ``diagnostics`` of why it was not."""

    item: Any
    target: Path | None = None
    outcome: Any = None
    diagnostics: tuple = ()


def fill_each(
    items: Iterable[Any],
    names: tuple[str, ...],
    rules_path: str | None,
    threshold: float,
    out: Path,
    limits: Limits,
    write: Callable[[str, bytes], str | None] | None = None,
) -> Iterator[Filled]:
    """Each loaded replay filled and written to ``out/NAME.json`` (see the contract)."""
    from unmask.plumbing.outputs import write_in_folder
    from unmask.propose.replay import fill
    from unmask.replay.builder import json_bytes
    from unmask.replay.confine import Refused, embed_protocol
    from unmask.replay.load import replay_from_obj

    for item in items:
        if item.errors:
            yield Filled(item, diagnostics=tuple(item.errors))
            continue
        assert item.obj is not None and item.replay is not None and item.base is not None
        proposers = proposers_for(names, item.obj, item.base, rules_path)
        new, outcome = fill(item.obj, item.replay, proposers, threshold)
        target = out / f"{item.name}.json"
        try:
            embed_protocol(new, item.base, out)
            replay_from_obj(new, str(target), out, limits)
        except Refused as exc:
            diag = Diagnostic(exc.code, str(exc), path="protocol.path", help=exc.help)
            yield Filled(item, diagnostics=(diag,))
            continue
        except UnmaskError as exc:
            yield Filled(item, diagnostics=exc.diagnostics)
            continue
        data = json_bytes(new)
        if write is not None:  # the output folder's manifest lists it, then writes it
            taken = write(target.name, data)
        else:
            taken = write_in_folder(out, target.name, data)
        if taken is not None:
            yield Filled(item, diagnostics=(Diagnostic(Code.IO, taken),))
            continue
        yield Filled(item, target, outcome)
