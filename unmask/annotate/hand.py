"""A person's readings written into replays: `unmask annotate --from ANNOTATIONS --reader NAME`.

Contract: ``read_lines(file, text)`` reads ANNOTATIONS (JSON Lines; a line is ``replay``,
``atom``, ``value`` and ``quote`` (exact text, optionally with ``source``) or ``read`` (a
source read whole), optionally ``note``) into ``Line``s, with a ``Diagnostic`` at
``FILE:LINE`` for each line that is not one. ``apply(doc, replay, lines, reader)`` writes
one replay's lines into its JSON document in place and returns their problems (nothing is
written for a line with one). The source of a quote is chosen by the atom's *role*
(``EVIDENCE_SOURCES``, never by its name): it is looked up in every source the role allows
and must be in exactly one, once (the rationale, where a quote is also in the trace that
repeats it); a ``source`` given must be one the role allows. ``read``
is a FALSE only (docs/replay-format.md: a whole reading by a reviewed reader). Each
annotation is ``by: {kind: human, name: READER, reviewed: true}``; an atom already annotated
is replaced through ``unmask.review.queue.apply_to``, the old annotation kept under ``review`` as
`unmask review` keeps it. ``applied(item, lines, reader, limits)`` is a loaded replay with
its lines in, validated again by the replay loader; ``check(items, by_id, reader, limits)``
checks every line against every replay (a line whose replay is not among them too) and
writes nothing. Every problem names what to write instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen
from unmask.plumbing.jsonload import show
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.plumbing.span import Span
from unmask.replay.data import EVIDENCE_SOURCES, SOURCES, VALUES, WHOLE, Replay

KEYS = ("replay", "atom", "value", "quote", "read", "source", "note")
CODE = Code.ANNOTATION_LINE


@frozen
class Line:
    """One reading of ANNOTATIONS, as its person wrote it."""

    file: str
    number: int
    replay: str
    atom: str
    value: str
    quote: str | None = None
    read: str | None = None
    source: str | None = None
    note: str | None = None


def _problem(file: str, number: int, message: str, help: str | None, column: int = 1) -> Diagnostic:
    return Diagnostic(CODE, message, span=Span(file, number, column, number, column), help=help)


def _close(name: str, names: list[str]) -> str | None:
    """The candidate ``name`` was most likely meant as: the same but for spaces and case,
    else the closest spelling."""
    import difflib  # only when a name is wrong

    def key(n: str) -> str:
        return n.replace(" ", "").lower()

    squeezed = [n for n in names if key(n) == key(name)]
    if squeezed:
        return squeezed[0]
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return close[0] if close else None


def _atom_hint(near: str | None, same: list[str], decls: dict) -> str:
    """A guess at the atom meant, and the atoms to choose from: those over the same members
    when there are any (each with its role), else a few of the protocol's."""
    # where several atoms share the members, the closest spelling is no evidence of which
    # was meant (a renamed family is spelt like none of them): list them, guess none
    guess = same[0] if len(same) == 1 else near if not same else None
    out = f"did you mean `{guess}`? " if guess else ""
    if len(same) > 1:
        listed = ", ".join(f"`{n}` ({decls[n].role})" for n in same[:8])
        return out + f"the atoms over the same members are {listed}"
    if same:
        return out.rstrip()
    return out + "atoms are named as the protocol grounds them, e.g. " + _names(list(decls), 4)


def _same_members(atom: str, names: list[str]) -> list[str]:
    """The atoms written over exactly the members ``atom`` names."""
    from unmask.plumbing.names import split_applied

    parts = split_applied(atom)
    if parts is None:
        return []
    return [n for n in names if (p := split_applied(n)) is not None and p[1] == parts[1]]


def _names(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(f"`{n}`" for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def read_lines(
    file: str, text: str, limits: Limits = DEFAULT_LIMITS
) -> tuple[list[Line], list[Diagnostic]]:
    """Every line of ANNOTATIONS read, and the problems of those that could not be; read as
    every JSON Lines input is (``unmask.importers.jsonlines``: lines end at ``\\n`` alone,
    each parsed under the limits)."""
    from unmask.importers.jsonlines import BadLine, jsonl_text

    lines: list[Line] = []
    problems: list[Diagnostic] = []
    for number, obj in jsonl_text(text, file, limits):
        if isinstance(obj, BadLine):
            d = obj.error.diagnostics[0] if obj.error is not None else None
            problems.append(
                _problem(
                    file,
                    number,
                    f"not JSON: {d.message if d is not None else obj.reason}",
                    "write one JSON object a line, e.g. "
                    '`{"replay": "r1", "atom": "a", "value": "TRUE", "quote": "…"}`',
                    d.span.column if d is not None and d.span is not None else 1,
                )
            )
            continue
        got = _line(file, number, obj)
        (lines if isinstance(got, Line) else problems).append(got)  # type: ignore[arg-type]
    return lines, problems


def _line(file: str, number: int, obj: Any) -> Line | Diagnostic:
    def bad(message: str, help: str | None) -> Diagnostic:
        return _problem(file, number, message, help)

    if not isinstance(obj, dict):
        return bad("expected a JSON object", "keys are " + _names(list(KEYS)))
    for key in obj:
        if key not in KEYS:
            near = _close(key, list(KEYS))
            return bad(
                f"unknown key `{show(key)}`",
                (f"did you mean `{near}`? " if near else "") + "keys are " + _names(list(KEYS)),
            )
    for key in ("replay", "atom"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            return bad(f"`{key}` is missing or not a string", f"write the {key}'s name")
    value = obj.get("value")
    if value not in VALUES:
        found = f", found `{show(value)}`" if value is not None else ""
        upper = value.upper() if isinstance(value, str) else None
        hint = f"write `{upper}` in capitals" if upper in VALUES else None
        return bad(f"`value` must be `TRUE`, `FALSE` or `UNKNOWN`{found}", hint)
    for key in ("quote", "read", "source", "note"):
        if key in obj and (not isinstance(obj[key], str) or (key != "note" and not obj[key])):
            return bad(f"`{key}` must be a non-empty string", None)
    if "quote" in obj and "read" in obj:
        return bad(
            "a line has a `quote` or a `read`, not both",
            "keep the quote, or `read` alone for a FALSE from a whole reading",
        )
    if "read" in obj and "source" in obj:
        return bad("`read` names the source itself; drop `source`", None)
    if "source" in obj and "quote" not in obj:
        return bad("`source` says where a `quote` is, and the line has none", None)
    if value != "UNKNOWN" and "quote" not in obj and "read" not in obj:
        return bad(
            f"a `{value}` needs its evidence: a `quote` copied from a source",
            "copy the text that says it into `quote`"
            + (
                '; or, when nothing says it, `"read"` with the source read whole'
                if value == "FALSE"
                else ""
            ),
        )
    return Line(
        file,
        number,
        obj["replay"],
        obj["atom"],
        value,
        obj.get("quote"),
        obj.get("read"),
        obj.get("source"),
        obj.get("note"),
    )


def unknown_replay(line: Line, ids: list[str], invalid: bool = False) -> Diagnostic:
    """A line naming no replay read; ``invalid``: some input was not a valid replay."""
    near = _close(line.replay, ids)
    hint = f"did you mean `{near}`? " if near else ""
    hint += "replays are " + _names(sorted(ids)) if ids else "no valid replay was read"
    if invalid:
        hint += "; the inputs that are not valid replays are shown below"
    return _problem(
        line.file, line.number, f"no replay `{show(line.replay)}` among the replays given", hint
    )


def _where(quote: str, text: str) -> list[int]:
    """Where ``quote`` starts in ``text``: every occurrence, overlapping ones too."""
    out, at = [], text.find(quote)
    while at >= 0:
        out.append(at)
        at = text.find(quote, at + 1)
    return out


def _or(names: list[str] | tuple[str, ...], word: str = "or") -> str:
    shown = [f"`{n}`" for n in names]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" {word} " + shown[-1]


def _near(quote: str, replay: Replay, names: list[str]) -> str | None:
    """A did-you-mean for a quote that differs from a source's words only in case,
    punctuation, spacing or mojibake (a copy from a rendered page): the exact text."""
    from unmask.importers.quoting import locate

    for name in names:
        text = replay.sources.get(name)
        if not isinstance(text, str):
            continue
        at = locate(text, quote)
        if at is not None and at[1] - at[0] <= 2 * len(quote) + 20:
            exact = json.dumps(text[at[0] : at[1]], ensure_ascii=False)
            return f'did you mean `"quote": {exact}`? that is the text of `{name}`'
    return None


def _closest(quote: str, replay: Replay, names: list[str]) -> str | None:
    """The text of a source most like a quote that is not in it, to copy instead."""
    from unmask.replay.evidence import closest_match

    for name in names:
        text = replay.sources.get(name)
        near = closest_match(text, quote) if isinstance(text, str) else None
        if near is not None:
            return f"the closest text in `{name}` is `{show(near, 80)}`; copy it exactly"
    return None


def _evidence(line: Line, role: str, replay: Replay) -> list[dict] | Diagnostic:
    """The evidence of a line: its quote located by the atom's role, or its whole reading."""

    def bad(message: str, help: str | None) -> Diagnostic:
        return _problem(line.file, line.number, message, help)

    allowed = EVIDENCE_SOURCES[role]
    present = [s for s in allowed if s in replay.sources]
    if line.read is not None:
        if line.read not in allowed:
            near = _close(line.read, list(allowed))
            return bad(
                f"a `{role}` atom's evidence comes from {_or(allowed)}, not `{show(line.read)}`",
                (f'did you mean `"read": "{near}"`? ' if near else "")
                + f'write `"read"` with one of {_or(present or allowed)}',
            )
        if line.read not in replay.sources:
            return bad(
                f"replay `{show(replay.id)}` has no `{line.read}` to read",
                f"read one it has: {_or(present)}" if present else None,
            )
        if line.value != "FALSE":
            return bad(
                f"a reading of a whole source backs only a FALSE, not `{line.value}`",
                "quote the text that says it",
            )
        return [{"source": line.read, "read": WHOLE}]
    if line.quote is None:
        return []  # an UNKNOWN: the person read and cannot tell
    quote = line.quote
    found = {s: _where(quote, t) for s, t in replay.sources.items() if s != "protocol"}
    found = {s: at for s, at in found.items() if at}
    if line.source is not None:
        if line.source not in SOURCES or line.source not in allowed:
            fits = [s for s in allowed if s in found]
            near = fits[0] if len(fits) == 1 else _close(line.source, list(allowed))
            message = (
                f"unknown source `{show(line.source)}`: a `{role}` atom's evidence comes from"
                if line.source not in SOURCES
                else f"a `{role}` atom's evidence may not come from `{line.source}`: it comes from"
            )
            return bad(
                f"{message} {_or(allowed)}",
                (f'did you mean `"source": "{near}"`? ' if near else "")
                + ("the quote is there" if near in found else f"name one of {_or(allowed)}"),
            )
        if line.source not in replay.sources:
            return bad(
                f"replay `{show(replay.id)}` has no `{line.source}`",
                f"name one it has: {_or(present)}" if present else None,
            )
        chosen = [line.source] if line.source in found else []
        if not chosen:
            elsewhere = [s for s in found if s in allowed]
            return bad(
                f"the quote is not in `{line.source}`"
                + (f"; it is in {_or(elsewhere, 'and')}" if elsewhere else ""),
                (f'did you mean `"source": "{elsewhere[0]}"`?' if len(elsewhere) == 1 else None)
                or _near(quote, replay, [line.source])
                or "copy the quote exactly: spaces, case and punctuation count",
            )
    else:
        chosen = [s for s in allowed if s in found]
        if "rationale" in chosen and "trace" in chosen:
            # `import structured` writes a trace that repeats every quote the judge gave from
            # its rationale: a quote in both is the rationale's, read where it was written
            chosen.remove("trace")
        if not chosen:
            if found:  # in a source the role may not quote: say where, and what would do
                where = sorted(found, key=SOURCES.index)
                return bad(
                    f"the quote is in {_or(where, 'and')}, which a `{role}` atom's evidence may not"
                    f" come from",
                    f"quote what {_or(present or allowed)} says"
                    + (
                        '; if nothing there says it, `"read": "'
                        + (present or allowed)[0]
                        + '"` with `FALSE`'
                        if line.value == "FALSE"
                        else ""
                    ),
                )
            near = _near(quote, replay, present) or _closest(quote, replay, present)
            looked = present or allowed
            absent = f"not in {_or(looked)}" if len(looked) == 1 else f"in none of {_or(looked)}"
            return bad(
                f"the quote is {absent}",
                near or "copy it exactly from one of them: spaces, case and punctuation count",
            )
        if len(chosen) > 1:
            return bad(
                f"the quote is in {_or(chosen, 'and')}",
                f'did you mean `"source": "{chosen[0]}"`? name the one you read: '
                + " or ".join(f'`"source": "{s}"`' for s in chosen),
            )
    source = chosen[0]
    starts = found[source]
    if len(starts) > 1:
        return bad(
            f"the quote occurs {len(starts)} times in `{source}`",
            "quote more of it, so that it occurs once",
        )
    start = starts[0]
    if source == "trace" and _misquoted(replay, start, start + len(quote)):
        return bad(
            "the quote is in `trace` only as a quote the judge gave and its rationale does not"
            " hold (`quotes_verbatim` is FALSE on it): it shows what the judge claimed, not"
            " what it wrote",
            "quote the rationale, or leave the atom open if nothing there says it",
        )
    return [{"source": source, "start": start, "end": start + len(quote), "quote": quote}]


def _misquoted(replay: Replay, start: int, end: int) -> bool:
    """Whether ``trace[start:end]`` lies in a quote `import structured` found missing from
    the rationale: the evidence of its FALSE ``quotes_verbatim``."""
    from unmask.replay.judgeschema import VERBATIM_ATOM

    a = replay.annotation(VERBATIM_ATOM)
    if a is None or a.value != "FALSE":
        return False
    return any(
        e.source == "trace" and not e.whole and e.start <= start and end <= e.end
        for e in a.evidence
    )


def apply(doc: dict, replay: Replay, lines: list[Line], reader: str) -> list[Diagnostic]:
    """Write ``lines`` (all of replay ``doc``'s) into ``doc``; the problems of those that
    could not be written. ``doc`` is changed only when there is none."""
    from unmask.review.queue import Decision, _spans, apply_to

    decls = {a.name: a for a in replay.protocol.atoms}
    problems: list[Diagnostic] = []
    made: list[tuple[Line, dict]] = []
    seen: dict[str, int] = {}
    for line in lines:
        decl = decls.get(line.atom)
        if decl is None:
            near = _close(line.atom, list(decls))
            # a family renamed (`backed(c)` now `grounded(c)`) is spelt far from its new
            # name: the atoms over the same members are the ones to choose from
            same = _same_members(line.atom, list(decls))
            problems.append(
                _problem(
                    line.file,
                    line.number,
                    f"no atom `{show(line.atom)}` in replay `{show(replay.id)}`",
                    _atom_hint(near, same, decls),
                )
            )
            continue
        if line.atom in seen:
            problems.append(
                _problem(
                    line.file,
                    line.number,
                    f"`{show(line.atom)}` of replay `{show(replay.id)}` is annotated again",
                    f"it is on line {seen[line.atom]}: keep one reading of an atom",
                )
            )
            continue
        seen[line.atom] = line.number
        evidence = _evidence(line, decl.role, replay)
        if isinstance(evidence, Diagnostic):
            problems.append(evidence)
            continue
        made.append((line, {"atom": line.atom, "value": line.value, "evidence": evidence}))
    if problems:
        return problems
    by = {"kind": "human", "name": reader, "reviewed": True}
    anns = doc.setdefault("annotations", [])
    for line, new in made:
        old = next((a for a in anns if isinstance(a, dict) and a.get("atom") == line.atom), None)
        if old is None:
            anns.append({**new, **({"explanation": line.note} if line.note else {}), "by": by})
            continue
        # replaced as `unmask review` replaces an annotation: the old one under `review`
        decision = "accept" if old.get("value") == line.value else "reject"
        spans = _spans(old.get("evidence", []))
        apply_to(
            doc,
            Decision(
                str(replay.id),
                line.atom,
                str(old.get("value")),
                old.get("by"),  # type: ignore[arg-type]
                spans,  # type: ignore[arg-type]
                decision,
                line.value,
                reader,
            ),
        )
        old["evidence"] = new["evidence"]
        old.pop("explanation", None)  # the old one is in `review.original`
        if line.note:
            old["explanation"] = line.note
    return []


def applied(item: Any, lines: list[Line], reader: str, limits: Any) -> tuple[Any, list[Diagnostic]]:
    """``item`` (``unmask.annotate.run.Item``) with ``lines`` written in and the replay
    validated again, or the unchanged item and the problems."""
    import copy
    from dataclasses import replace

    from unmask.annotate.run import Item
    from unmask.replay.load import replay_from_obj

    if item.replay is None or item.obj is None or not lines:
        return item, []
    new = copy.deepcopy(item.obj)
    problems = apply(new, item.replay, lines, reader)
    if problems:
        return item, problems
    try:
        replay = replay_from_obj(new, item.location, item.base, limits)
    except UnmaskError as exc:  # the loader refuses what the lines made: say which lines
        at = ", ".join(str(x.number) for x in lines)
        note = f"after the readings of `{lines[0].file}` lines {at}"
        return item, [replace(d, notes=(*d.notes, note)) for d in exc.diagnostics]
    return Item(item.location, new, replay, item.base), []


def by_replay(lines: list[Line]) -> dict[str, list[Line]]:
    """The lines of each replay id, in file order."""
    out: dict[str, list[Line]] = {}
    for line in lines:
        out.setdefault(line.replay, []).append(line)
    return out


def check(
    items: Iterable[Any], by_id: dict[str, list[Line]], reader: str, limits: Any
) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """Every line applied to a copy of its replay and checked, nothing written: the lines'
    problems (a line naming no replay read among them), in line order, and the errors of
    the inputs that are not valid replays (a line may name one: they explain it)."""
    from dataclasses import replace

    problems: list[Diagnostic] = []
    invalid: list[Diagnostic] = []
    ids: list[str] = []
    for item in items:
        if item.replay is None:
            invalid += [
                d if d.file or d.span else replace(d, file=item.location) for d in item.errors
            ]
            continue
        ids.append(item.replay.id)
        problems += applied(item, by_id.get(item.replay.id, []), reader, limits)[1]
    known = set(ids)
    for rid, lines in by_id.items():
        if rid not in known:
            problems += [unknown_replay(line, ids, bool(invalid)) for line in lines]
    problems.sort(key=lambda d: d.span.line if d.span else 0)
    return problems, invalid
