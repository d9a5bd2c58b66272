"""Build a replay from Python: quotes in, code-point offsets and a validated replay out.

Contract: ``ReplayBuilder`` collects a protocol, the source texts, the verdict and one
annotation per atom; ``annotate`` locates each quote in a source and records the half-open
``[start, end)`` offsets in Unicode code points (Python ``str`` indices are code points, so
emoji, combining marks and CJK need no special care; offsets are never UTF-16 units or
bytes). A quote that is absent, ambiguous, or allowed in no source raises ``UnmaskError``
at once, naming the closest match where there is one. ``build`` returns the replay as a
JSON-ready dict only after the replay validator accepted it; ``write`` saves it atomically.
Optional fields (``gold``, ``domains``, ``item``, ``judge``, an annotation's ``by`` and
``explanation``) appear in the replay only when given. ``read_whole=SOURCE`` records a reading
of all of a source instead of a quote (a reviewed reader's FALSE: ``docs/replay-format.md``).
An annotation and its evidence are written through the format's structs
(``unmask.replay.format``); ``by``, ``sources`` and the protocol keep the caller's key order.
Imports nothing above the replay layer.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgspec

from unmask import ir
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.jsonload import show
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.plumbing.outputs import write_bytes
from unmask.replay.data import EVIDENCE_SOURCES, VALUES, WHOLE
from unmask.replay.evidence import closest_match
from unmask.replay.format import UNSET, AnnotationJson, EvidenceJson

__all__ = ["ReplayBuilder"]

REPLAY_SCHEMA = "unmask.replay/1"


def _error(code: Code, message: str, path: str | None = None, help: str | None = None):
    return UnmaskError([Diagnostic(code, message, path=path, help=help)])


# characters compared to find one quote's overlapping occurrences: each one found costs
# about the quote's length to confirm, so a quote of 150,000 `a`s in 300,000 of them took
# over two minutes; past this bound the quote is refused as occurring too often
MAX_OCCURRENCE_WORK = 100_000_000


class TooOften(Exception):
    """A quote whose occurrences cost more than ``MAX_OCCURRENCE_WORK`` to find."""

    def __init__(self, found: int):
        super().__init__(found)
        self.found = found


def occurrences(text: str, quote: str) -> list[int]:
    """Every start of ``quote`` in ``text``, overlapping ones included; ``TooOften`` when
    finding them would compare more than ``MAX_OCCURRENCE_WORK`` characters."""
    out: list[int] = []
    most = MAX_OCCURRENCE_WORK // max(len(quote), 1)
    i = text.find(quote)
    while i != -1:
        if len(out) >= most:
            raise TooOften(len(out))
        out.append(i)
        i = text.find(quote, i + 1)
    return out


def _value(value: Any, path: str) -> str:
    if value is True:
        return "TRUE"
    if value is False:
        return "FALSE"
    if isinstance(value, str) and value in VALUES:
        return value
    raise _error(
        Code.VALUE,
        f"the value must be `TRUE`, `FALSE` or `UNKNOWN`, found `{show(value)}`",
        path,
        help="a Python bool is accepted too",
    )


@contextlib.contextmanager
def _builder_hints(text: str | None) -> Iterator[None]:
    """The compiler's diagnostics, their help said for the builder: the members of a free
    domain come from ``domains=``, not from `unmaskc`'s ``--domain``; a ``str`` that is a
    file's name (``"claims.proto"``) is read as `.proto` text, so say how to read the file."""
    try:
        yield
    except UnmaskError as err:
        from unmask.language.compile_base import missing_domain

        name = text.strip() if text is not None else ""
        named = _FILE_NAME.fullmatch(name) is not None
        diags = []
        for d in err.diagnostics:
            domain = missing_domain(d)
            if domain is not None:
                members = f'{{"{domain}": ["a", "b"]}}'
                d = replace(d, help=f"pass its members to the builder: `domains={members}`")
            elif named and d.code is Code.SYNTAX:
                d = replace(
                    d,
                    help=f"a `str` is read as `.proto` text; to read the file, pass "
                    f"`Path({name!r})`",
                )
            diags.append(d)
        out = UnmaskError(diags)
        out.sources = getattr(err, "sources", {})  # type: ignore[attr-defined]
        raise out from None


# a `str` protocol that is a file's name rather than `.proto` text
_FILE_NAME = re.compile(r"\S+\.(proto|json)")


class ReplayBuilder:
    """Assemble one replay; see ``docs/api.md``.

    ``protocol`` is a ``pathlib.Path`` to a ``.proto`` file, ``.proto`` text, or protocol IR
    as a dict (``"schema": "unmask.protocol/1"``). A ``.proto`` is compiled now (with
    ``domains`` for its families) and embedded in the replay as ``{"source": …}``, so the
    written replay stands alone wherever it is moved.
    """

    def __init__(
        self,
        protocol: Path | str | Mapping[str, Any],
        *,
        sources: Mapping[str, str],
        verdict: str,
        gold: str | None = None,
        id: str | None = None,
        domains: Mapping[str, Sequence[str]] | None = None,
        item: str | None = None,
        judge: str | None = None,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        from unmask.language.compiler import compile_source
        from unmask.plumbing.files import read_text
        from unmask.replay.load import protocol_from_json

        self.limits = limits
        self.domains = {k: list(v) for k, v in (domains or {}).items()}
        if isinstance(protocol, Path):
            text = read_text(protocol, limits)
            self._protocol_json: dict[str, Any] = {"source": text}
            with _builder_hints(None):
                self.protocol: ir.Protocol = compile_source(
                    text, str(protocol), self.domains, limits
                )
        elif isinstance(protocol, str):
            self._protocol_json = {"source": protocol}
            with _builder_hints(protocol):
                self.protocol = compile_source(protocol, "<protocol>", self.domains, limits)
        elif isinstance(protocol, Mapping):
            self._protocol_json = copy.deepcopy(dict(protocol))
            self.protocol = protocol_from_json(self._protocol_json, "protocol", None, limits)
        else:
            raise _error(
                Code.PROTOCOL_FORM,
                "expected a `.proto` path, `.proto` text or protocol IR",
                "protocol",
            )
        if not isinstance(sources, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in sources.items()
        ):
            raise _error(Code.TYPE, "`sources` maps source names to texts (strings)", "sources")
        self.sources = dict(sources)
        self.verdict = verdict
        self.gold = gold
        self.id = id if id is not None else self.protocol.name
        self.item = item
        self.judge = judge
        self._annotations: list[dict[str, Any]] = []
        self._annotated: set[str] = set()
        # (source, quote) -> its starts: an importer quotes one phrase thousands of times,
        # and finding every occurrence again for each was quadratic
        self._starts: dict[tuple[str, str], list[int]] = {}

    # --- annotations -----------------------------------------------------------------------

    def annotate(
        self,
        atom: str,
        value: str | bool,
        *,
        quote: str | Sequence[str] | None = None,
        source: str | None = None,
        occurrence: int | Sequence[int | None] | None = None,
        by: Mapping[str, Any] | None = None,
        explanation: str | None = None,
        read_whole: str | Sequence[str] | None = None,
    ) -> ReplayBuilder:
        """Annotate ``atom``; each quote becomes one evidence span. Returns the builder.

        ``occurrence`` (0-based) picks one match when a quote occurs more than once; with
        several quotes it is a sequence, one entry (or None) per quote. Without ``source``
        the quote is looked up in every source the atom's role allows, and must be found in
        exactly one place. ``read_whole`` names the source(s) a reader read in full and found
        nothing in that says the atom holds: the evidence of a FALSE that no quote can show,
        valid only with a ``by`` of a reviewed reader (checked when the replay is built).
        """
        path = f"annotations[{len(self._annotations)}]"
        decl = self.protocol.atom(atom) if isinstance(atom, str) else None
        if decl is None:
            close = (
                difflib.get_close_matches(atom, self.protocol.atom_names, n=1)
                if isinstance(atom, str)
                else []
            )
            raise _error(
                Code.UNKNOWN_ATOM,
                f"unknown atom `{show(atom)}`",
                f"{path}.atom",
                help=f"did you mean `{close[0]}`?" if close else None,
            )
        if atom in self._annotated:
            raise _error(
                Code.DUPLICATE_ANNOTATION,
                f"atom `{atom}` is already annotated",
                f"{path}.atom",
                help="a replay holds one annotation per atom; give several quotes instead",
            )
        val = _value(value, f"{path}.value")
        quotes: list[str] = (
            [] if quote is None else [quote] if isinstance(quote, str) else list(quote)
        )
        if isinstance(occurrence, Sequence):
            picks = list(occurrence)
            if len(picks) != len(quotes):
                raise _error(
                    Code.OCCURRENCE,
                    f"{len(picks)} occurrences for {len(quotes)} quotes",
                    f"{path}.evidence",
                    help="give one occurrence (or None) per quote",
                )
        else:
            picks = [occurrence] * len(quotes)
        wholes: list[Any] = (
            []
            if read_whole is None
            else [read_whole]
            if isinstance(read_whole, str)
            else list(read_whole)
        )
        if val != "UNKNOWN" and not quotes and not wholes:
            raise _error(
                Code.NO_EVIDENCE,
                f"a `{val}` annotation of `{atom}` needs a quote",
                f"{path}.evidence",
                help="pass `quote=` with the text that shows the value"
                + (
                    f'; when nothing says so, `read_whole="{EVIDENCE_SOURCES[decl.role][0]}"` '
                    "with a reviewed `by`"
                    if val == "FALSE"
                    else ""
                ),
            )
        allowed = EVIDENCE_SOURCES[decl.role]
        evidence = [
            self._locate(q, source, pick, decl.role, allowed, f"{path}.evidence[{j}]")
            for j, (q, pick) in enumerate(zip(quotes, picks, strict=True))
        ]
        for j, s in enumerate(wholes, start=len(evidence)):
            if s not in allowed or s not in self.sources:
                raise _error(
                    Code.EVIDENCE_SOURCE,
                    f"`{show(s)}` is no source of this replay that backs a `{decl.role}` atom",
                    f"{path}.evidence[{j}].source",
                    help="read one of " + ", ".join(f"`{x}`" for x in allowed if x in self.sources),
                )
            evidence.append(EvidenceJson(source=s, read=WHOLE))  # type: ignore[arg-type]
        # the format's shape and key order; `by` as the caller gives it (checked at build)
        ann: dict[str, Any] = msgspec.to_builtins(
            AnnotationJson(
                atom=atom,
                value=val,  # type: ignore[arg-type]  # `_value` gives TRUE, FALSE or UNKNOWN
                evidence=evidence,
                explanation=UNSET if explanation is None else explanation,
            )
        )
        if by is not None:
            ann["by"] = dict(by)
        self._annotations.append(ann)
        self._annotated.add(atom)
        return self

    def _locate(
        self,
        quote: Any,
        source: str | None,
        occurrence: int | None,
        role: str,
        allowed: tuple[str, ...],
        path: str,
    ) -> EvidenceJson:
        if not isinstance(quote, str) or not quote:
            raise _error(Code.QUOTE, "a quote is a non-empty string", f"{path}.quote")
        if source is not None:
            if source not in allowed:
                raise _error(
                    Code.EVIDENCE_SOURCE,
                    f"source `{show(source)}` cannot back a `{role}` atom",
                    f"{path}.source",
                    help="a `"
                    + role
                    + "` atom's evidence comes from "
                    + " or ".join(f"`{s}`" for s in allowed),
                )
            if source not in self.sources:
                raise _error(
                    Code.EVIDENCE_SOURCE,
                    f"the replay has no source `{source}`",
                    f"{path}.source",
                )
            candidates = [source]
        else:
            candidates = [s for s in allowed if s in self.sources]
            if not candidates:
                raise _error(
                    Code.EVIDENCE_SOURCE,
                    f"no source that can back a `{role}` atom: give "
                    + " or ".join(f"`{s}`" for s in allowed),
                    path,
                )
        found = [(s, self._occurrences(s, quote)) for s in candidates]
        total = sum(len(starts) for _, starts in found)
        where = " or ".join(f"`{s}`" for s in candidates)
        if not total:
            found_near = [(s, closest_match(self.sources[s], quote)) for s in candidates]
            near = [(s, c) for s, c in found_near if c is not None]
            best = max(
                near,
                key=lambda sc: difflib.SequenceMatcher(None, sc[1], quote).ratio(),
                default=None,
            )
            raise _error(
                Code.QUOTE_NOT_FOUND,
                f"`{show(quote, 80)}` does not occur in {where}",
                f"{path}.quote",
                help=f"the closest text in `{best[0]}` is `{show(best[1], 80)}`" if best else None,
            )
        if occurrence is not None:
            if not isinstance(occurrence, int) or not 0 <= occurrence < total:
                raise _error(
                    Code.OCCURRENCE,
                    f"occurrence `{show(occurrence)}` of `{show(quote, 80)}` does not exist: "
                    f"it occurs {total} time{'s' if total != 1 else ''} in {where}",
                    f"{path}.quote",
                    help=f"pick 0 to {total - 1}",
                )
            k = occurrence
            for s, starts in found:  # noqa: B007 -- counted source after source; `s` is kept
                if k < len(starts):
                    break
                k -= len(starts)
            start = starts[k]
        elif total > 1:
            first = [(s, i) for s, starts in found for i in starts[:5]][:5]
            at = ", ".join(f"`{s}` at {i}" for s, i in first)
            raise _error(
                Code.QUOTE_AMBIGUOUS,
                f"`{show(quote, 80)}` occurs {total} times in {where} ({at}"
                f"{', …' if total > 5 else ''})",
                f"{path}.quote",
                help="pass `occurrence=` (0-based) or a longer quote"
                + ("" if source is not None else ", or name the `source`"),
            )
        else:
            s, start = next((s, starts[0]) for s, starts in found if starts)
        # `s` is a source the role allows, checked above: a name the format's `Literal` has
        return EvidenceJson(source=s, start=start, end=start + len(quote), quote=quote)  # type: ignore[arg-type]

    def _occurrences(self, source: str, quote: str) -> list[int]:
        key = (source, quote)
        starts = self._starts.get(key)
        if starts is None:
            try:
                starts = occurrences(self.sources[source], quote)
            except TooOften as exc:
                raise _error(
                    Code.LIMIT,
                    f"`{show(quote, 80)}` occurs more than {exc.found} times in `{source}`,"
                    " too often to locate",
                    help="quote a longer passage that occurs once",
                ) from None
            self._starts[key] = starts
        return starts

    # --- output ----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The replay as a dict, not yet validated."""
        out: dict[str, Any] = {"schema": REPLAY_SCHEMA, "id": self.id}
        if self.item is not None:
            out["item"] = self.item
        if self.judge is not None:
            out["judge"] = self.judge
        out["protocol"] = copy.deepcopy(self._protocol_json)
        if self.domains and "source" in self._protocol_json:
            out["domains"] = copy.deepcopy(self.domains)
        out["sources"] = dict(self.sources)
        out["verdict"] = self.verdict
        if self.gold is not None:
            out["gold"] = self.gold
        out["annotations"] = copy.deepcopy(self._annotations)
        return out

    def build(self) -> dict[str, Any]:
        """The validated replay as a JSON-ready dict, or ``UnmaskError`` with every problem."""
        from unmask.replay.load import replay_from_obj

        obj = self.to_dict()
        replay_from_obj(obj, None, None, self.limits)
        return obj

    def write(self, path: str | Path) -> dict[str, Any]:
        """Validate and save the replay to ``path`` (a temporary file, then a rename)."""
        return write_json(path, self.build())


def declared_labels(source: str, name: str, limits: Limits = DEFAULT_LIMITS) -> tuple[str, ...]:
    """The verdict labels a ``.proto`` text declares (``verdict a | b | c``), else PASS and
    FAIL; read from the parsed text alone, so a protocol whose domains each record gives
    need not be compiled first."""
    from unmask.language import ast
    from unmask.language.parser import parse_source

    for st in parse_source(source, name, limits).statements:
        if isinstance(st, ast.VerdictDecl):
            return tuple(st.labels)
    return ir.BINARY_LABELS


def json_bytes(obj: Any) -> bytes:
    """``obj`` as indented UTF-8 JSON, the bytes ``write_json`` writes, under the output
    policy: a character that acts (``json.dumps`` escapes C0 controls, but not DEL, a C1
    control or a bidirectional override) is a ``\\u`` escape, the value unchanged."""
    from unmask.plumbing.safe import json_text

    try:
        return (json_text(json.dumps(obj, ensure_ascii=False, indent=2)) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: keep it as a JSON escape
        return (json.dumps(obj, ensure_ascii=True, indent=2) + "\n").encode("ascii")


def write_json(path: str | Path, obj: Any) -> Any:
    """Write ``obj`` as indented UTF-8 JSON, atomically: readers see the old or new file."""
    write_bytes(str(path), json_bytes(obj))
    return obj
