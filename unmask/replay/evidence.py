"""Reading a replay's annotations and checking their evidence spans.

Contract: ``read_annotations`` takes a replay's annotations as read into the format's structs
(``unmask.replay.format``; their keys and types are checked there), returns those that pass
every other rule (a known atom, annotated once; a value TRUE/FALSE/UNKNOWN; TRUE and FALSE
backed by at least one span) and records every problem into the document's ``JsonReader``. A
span is half-open ``[start, end)`` in Unicode code points of a source that fits the atom's
role, and its ``quote`` equals that slice exactly; when the offsets select the quote only if
counted in UTF-8 bytes or UTF-16 code units, the error says so, and when the quote occurs
elsewhere it says where. The ``protocol`` text is never evidence, and ``reference`` (a reading
made outside the judge) is evidence for ``context`` atoms only. An annotation's ``by`` has a
known ``kind`` and a ``name`` and ``version`` that are not empty (an unknown key in it is an
error: the struct's). An evidence entry ``{"source": S, "read": "whole"}`` is a reading of all
of source S that found nothing saying the atom holds: it backs only a FALSE annotation whose
``by`` names a reviewed reader, so a FALSE from absence always comes from an explicit, reviewed
reading, never from a missing quote. ``readings`` (what several readers read when they did not
agree) are each a ``by``, a value and quoted spans checked as an annotation's are; nothing
checked reads them.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import UNSET

from unmask import ir
from unmask.ir.json_reader import unknown_atom
from unmask.plumbing.codes import Code
from unmask.plumbing.jsonreader import JsonReader, did_you_mean, join_path, show
from unmask.replay.data import (
    EVIDENCE_SOURCES,
    PROVENANCE_KINDS,
    SOURCES,
    VALUES,
    WHOLE,
    Annotation,
    Evidence,
    Provenance,
    Reading,
)
from unmask.replay.format import (
    WHOLE_HELP,
    AnnotationJson,
    EvidenceJson,
    ProvenanceJson,
    ReadingJson,
)

_KINDS_HELP = "a kind is " + ", ".join(f"`{k}`" for k in PROVENANCE_KINDS)
_VALUES_HELP = "a value is `TRUE`, `FALSE` or `UNKNOWN`"


def _no_span_help(value: str, role: str | None) -> str:
    """The help of a TRUE or FALSE annotation without evidence; a FALSE no text can show
    ("nothing in the passages says so") may rest on a reviewed reading of a whole source."""
    out = "quote the text that shows it, or make the value `UNKNOWN`"
    if value != "FALSE":
        return out
    src = EVIDENCE_SOURCES[role][0] if role in EVIDENCE_SOURCES else "…"
    return (
        f"{out}; when nothing in the source says so, a reviewed reader may write "
        f'`{{"source": "{src}", "read": "whole"}}`'
    )


# above this many character comparisons, the closest-match hint is skipped (it is a hint)
_SUGGEST_BUDGET = 20_000_000


def closest_match(text: str, quote: str) -> str | None:
    """The slice of ``text`` most like ``quote``: found near their longest common block, from
    the first to the last block of three or more characters the two share there (so a
    quote a letter short at either end is shown whole), widened to whole words and without
    the spaces at its ends; None when nothing is alike enough."""
    if not text or not quote or len(text) * len(quote) > _SUGGEST_BUDGET:
        return None
    import difflib  # only when a quote is wrong: not on every check

    sm = difflib.SequenceMatcher(None, text, quote, autojunk=False)
    m = sm.find_longest_match(0, len(text), 0, len(quote))
    if m.size == 0:
        return None
    # a window around the block, wide enough for the quote with as much again on each side
    lo = max(0, m.a - m.b - len(quote))
    window = text[lo : m.a + (len(quote) - m.b) + len(quote)]
    blocks = [
        b
        for b in difflib.SequenceMatcher(None, window, quote, autojunk=False).get_matching_blocks()
        if b.size >= 3
    ] or [difflib.Match(m.a - lo, m.b, m.size)]
    first, last = blocks[0], blocks[-1]
    start = lo + max(0, first.a - first.b)
    end = min(len(text), lo + last.a + last.size + (len(quote) - last.b - last.size))
    while start > 0 and text[start - 1].isalnum() and text[start].isalnum():
        start -= 1
    while end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
        end += 1
    candidate = text[start:end].strip()
    if difflib.SequenceMatcher(None, candidate, quote, autojunk=False).ratio() < 0.5:
        return None
    return candidate


class _Encoded:
    """Each source's UTF-8 and UTF-16 encodings, made once and only when a span needs them."""

    def __init__(self) -> None:
        self.cache: dict[str, tuple[bytes, bytes]] = {}

    def of(self, src: str, text: str) -> tuple[bytes, bytes]:
        if src not in self.cache:
            self.cache[src] = (
                text.encode("utf-8", "surrogatepass"),
                text.encode("utf-16-le", "surrogatepass"),
            )
        return self.cache[src]


class _Context:
    """What checking one replay's evidence needs: where problems go, the sources, and
    which were given but rejected (spans quoting them are not also "missing")."""

    __slots__ = ("bad_sources", "encoded", "r", "sources")

    def __init__(self, r: JsonReader, sources: dict[str, str], bad_sources: set[str]):
        self.r = r
        self.sources = sources
        self.bad_sources = bad_sources
        self.encoded = _Encoded()


def read_annotations(
    r: JsonReader,
    raw: Sequence[AnnotationJson | None] | None,
    protocol: ir.Protocol | None,
    sources: dict[str, str],
    bad_sources: set[str],
    lacking: list[str] | None = None,
) -> tuple[Annotation, ...]:
    """The valid annotations among ``raw`` (the replay's ``annotations``, read into the
    format's structs; None, or a None item or field, was reported as it was read).

    ``protocol`` is None when it could not be read: atom names are then not checked.
    ``lacking`` is given for a replay re-checked against another protocol (``--protocol``):
    an annotation for an atom that protocol lacks is then no error but is left out, its
    atom appended to ``lacking`` with an ``atom-dropped`` warning (its evidence is still
    read, and must still quote its sources).
    ``bad_sources`` were given but rejected: spans quoting them are not also "missing".
    """
    if raw is None:
        return ()
    atoms = {a.name: a for a in protocol.atoms} if protocol is not None else None
    cx = _Context(r, sources, bad_sources)
    first: dict[str, int] = {}
    out = []
    for i, a in enumerate(raw):
        if a is None:
            continue
        if atoms is not None:
            plain = _plain(a, i, atoms, first, sources)
            if plain is not None:
                first[plain.atom] = i
                out.append(plain)
                continue
        got = _annotation(cx, a, i, f"annotations[{i}]", atoms, first, lacking)
        if got is not None and (atoms is None or got.atom in atoms):
            out.append(got)
    return tuple(out)


def _plain(
    a: AnnotationJson,
    i: int,
    atoms: dict[str, ir.AtomDecl],
    first: dict[str, int],
    sources: dict[str, str],
) -> Annotation | None:
    """Annotation ``i`` when every rule plainly holds for it (most of a replay's: one short
    pass), else None, and ``_annotation`` words what is wrong. It records nothing: what it
    accepts, ``_annotation`` accepts too, and builds the same annotation."""
    name, value, raw = a.atom, a.value, a.evidence
    decl = atoms.get(name)
    if (
        decl is None
        or name in first
        or value not in VALUES
        or a.by is not UNSET
        or a.readings
        or a.review is None  # ill-typed: reported
        or raw is None
        or (not raw and value != "UNKNOWN")
        or a.explanation is None
    ):
        return None
    allowed = EVIDENCE_SOURCES[decl.role]
    evidence = []
    for e in raw:  # `_spans`, inline: this loop is most of reading a large replay
        if e is None or e.read is not UNSET:
            return None
        src, start, end, quote = e.source, e.start, e.end, e.quote
        text = sources.get(src) if src in allowed else None
        if (
            text is None
            or start.__class__ is not int
            or end.__class__ is not int
            or not 0 <= start < end <= len(text)  # type: ignore[operator]
            or text[start:end] != quote  # type: ignore[misc]
        ):
            return None
        evidence.append(Evidence(src, start, end, quote))  # type: ignore[arg-type]
    return Annotation(name, value, tuple(evidence), a.explanation or "", i, None)


def _annotation(
    cx: _Context,
    a: AnnotationJson,
    i: int,
    p: str,
    atoms: dict[str, ir.AtomDecl] | None,
    first: dict[str, int],
    lacking: list[str] | None = None,
) -> Annotation | None:
    """Annotation ``i`` (at JSON path ``p``): every problem is recorded."""
    r = cx.r
    name: str | None = a.atom
    role = None
    if name is not None:
        if name in first:
            r.err(
                Code.DUPLICATE_ANNOTATION,
                join_path(p, "atom"),
                f"atom `{show(name)}` is annotated twice",
                help="keep one annotation per atom; merge their evidence",
                notes=(f"the first annotation is `annotations[{first[name]}]`",),
            )
        else:
            first[name] = i
        if atoms is not None:
            decl = atoms.get(name)
            if decl is None and lacking is not None:
                if name not in lacking:
                    lacking.append(name)
                    r.warn(
                        Code.ATOM_DROPPED,
                        join_path(p, "atom"),
                        f"atom `{show(name)}` is not in the protocol this replay is checked "
                        "against: its annotation is left out",
                        help="`unmask compare OLD NEW` shows what changed between the versions",
                    )
            elif decl is None:
                unknown_atom(r, join_path(p, "atom"), name, atoms)
            else:
                role = decl.role
    value: str | None = a.value
    if value is not None and value not in VALUES:
        hint = _VALUES_HELP
        if value.upper() in VALUES:
            hint = f"write `{value.upper()}` in capitals"
        r.err(Code.VALUE, join_path(p, "value"), f"unknown value `{show(value)}`", help=hint)
        value = None
    by = None if a.by is UNSET or a.by is None else _provenance(cx, a.by, join_path(p, "by"))
    raw = a.evidence
    evidence = _spans(raw, role, cx.sources) if raw and role is not None else None
    if evidence is None and raw is not None:
        evidence = []
        if value in ("TRUE", "FALSE") and not raw:
            r.err(
                Code.EVIDENCE_MISSING,
                join_path(p, "evidence"),
                f"a {value} annotation needs at least one evidence span",
                help=_no_span_help(value, role),
            )
        whole = -1
        for j, e in enumerate(raw):
            if e is None:
                continue
            if e.read is not UNSET and whole < 0:
                whole = j
            ev = _evidence(cx, e, f"{p}.evidence[{j}]", role)
            if ev is not None:
                evidence.append(ev)
        # the reader and the value are the annotation's: said once, at the first reading
        if whole >= 0:
            _whole_reader(r, a, f"{p}.evidence[{whole}]", p, value, by)
    readings: tuple[Reading, ...] = ()
    if a.readings:
        readings = _readings(cx, a.readings, p, role)
    if name is not None and value is not None:
        return Annotation(name, value, tuple(evidence or ()), a.explanation or "", i, by, readings)
    return None


def _spans(raw: Sequence[EvidenceJson | None], role: str, sources: dict[str, str]) -> list | None:
    """The evidence when every entry is a span that plainly holds (most of a replay's:
    checked here in one pass), else None, and ``_evidence`` words what is wrong."""
    allowed = EVIDENCE_SOURCES[role]
    out = []
    for e in raw:
        if e is None or e.read is not UNSET:
            return None
        src, start, end, quote = e.source, e.start, e.end, e.quote
        text = sources.get(src) if src in allowed else None  # type: ignore[arg-type]
        if (
            text is None
            or start.__class__ is not int
            or end.__class__ is not int
            or not 0 <= start < end <= len(text)  # type: ignore[operator]
            or text[start:end] != quote  # type: ignore[misc]
        ):
            return None
        out.append(Evidence(src, start, end, quote))  # type: ignore[arg-type]
    return out


def _readings(
    cx: _Context, raw: Sequence[ReadingJson | None], p: str, role: str | None
) -> tuple[Reading, ...]:
    """``readings``: each reader's value, quotes and why, as an annotation has them; every
    reading names its reader (``by``), and a TRUE or FALSE one quotes a span (a reading of a
    whole source is a reviewed annotation's, never one of several readers')."""
    r = cx.r
    out = []
    for k, e in enumerate(raw):
        if e is None:
            continue
        rp = f"{p}.readings[{k}]"
        by = None if e.by is None else _provenance(cx, e.by, join_path(rp, "by"))
        value: str | None = e.value
        if value is not None and value not in VALUES:
            r.err(
                Code.VALUE,
                join_path(rp, "value"),
                f"unknown value `{show(value)}`",
                help=_VALUES_HELP,
            )
            value = None
        spans = []
        ev_raw = e.evidence or []
        if value in ("TRUE", "FALSE") and not ev_raw:
            r.err(
                Code.EVIDENCE_MISSING,
                join_path(rp, "evidence"),
                f"a {value} reading needs at least one evidence span",
                help="quote the text that shows it, or make the value `UNKNOWN`",
            )
        for j, x in enumerate(ev_raw):
            if x is None:
                continue
            ep = f"{rp}.evidence[{j}]"
            if x.read is not UNSET:
                r.err(
                    Code.EVIDENCE_READ,
                    join_path(ep, "read"),
                    "a reading in `readings` does not read a whole source",
                    help="quote the text that shows the value",
                )
                continue
            ev = _evidence(cx, x, ep, role)
            if ev is not None:
                spans.append(ev)
        if by is not None and value is not None:
            out.append(Reading(by, value, tuple(spans), e.explanation or ""))
    return tuple(out)


def _whole_reader(
    r: JsonReader, a: AnnotationJson, ep: str, p: str, value: str | None, by: Provenance | None
) -> None:
    """A whole reading backs a FALSE only, and only a reviewed reader's: absence read by
    nobody in particular, or by an unchecked rule or model, is no reading."""
    if value is not None and value != "FALSE":
        r.err(
            Code.EVIDENCE_READ,
            join_path(ep, "read"),
            f"a reading of a whole source backs only a FALSE annotation, not `{value}`",
            help="quote the text that shows the value",
        )
    if a.by is UNSET:
        r.err(
            Code.EVIDENCE_READ,
            p,
            "an annotation resting on a reading of a whole source must say who read it",
            help='add `"by": {"kind": "human", "name": "…"}`',
        )
    elif by is not None and not by.reviewed:
        r.err(
            Code.EVIDENCE_READ,
            join_path(p, "by"),
            "a reading of a whole source must be reviewed",
            help="have a person check the reading, then set `reviewed` to `true`",
        )


def _provenance(cx: _Context, b: ProvenanceJson, p: str) -> Provenance | None:
    """An annotation's ``by``; None (and an error) unless every part of it is valid."""
    r = cx.r
    what: str | None = b.kind
    if what is not None and what not in PROVENANCE_KINDS:
        hint = _KINDS_HELP
        if what.lower() in PROVENANCE_KINDS:
            hint = f"write `{what.lower()}` in lower case"
        r.err(Code.PROVENANCE, join_path(p, "kind"), f"unknown kind `{show(what)}`", help=hint)
        what = None
    ok = True
    texts = []
    for key, v in (("name", b.name), ("version", b.version)):
        if v == "":
            r.err(
                Code.PROVENANCE, join_path(p, key), f"`{key}` is empty", help=f"leave `{key}` out"
            )
        ok = ok and (v is UNSET or bool(v))  # None: ill-typed, reported
        texts.append(v if isinstance(v, str) else "")
    reviewed = b.reviewed
    if what is None or not ok or reviewed is None:
        return None
    return Provenance(what, texts[0], None if reviewed is UNSET else reviewed, texts[1])


def _evidence(cx: _Context, e: EvidenceJson, p: str, role: str | None) -> Evidence | None:
    if e.read is not UNSET:
        return _whole(cx, e, p, role)
    r = cx.r
    src, start, end, quote = e.source, e.start, e.end, e.quote
    fits = src is not None and _source_fits(cx, src, p, role)
    unset = [key for key in ("quote", "start", "end") if getattr(e, key) is UNSET]
    if unset:  # one diagnostic for the span, naming every key it lacks
        keys = [f"`{key}`" for key in unset]
        listed = keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + " and " + keys[-1]
        hint = _span_hint(cx, src if fits else None, e, unset)
        r.err(Code.MISSING, p, f"missing {listed}", help=hint)
    if not fits:
        return None
    if quote is None or quote is UNSET or start is None or start is UNSET:
        return None
    if end is None or end is UNSET:
        return None
    text = cx.sources[src]
    if 0 <= start < end <= len(text) and text[start:end] == quote:
        return Evidence(src, start, end, quote)
    _bad_span(r, p, src, text, start, end, quote, cx.encoded)
    return None


def _span_hint(cx: _Context, src: str | None, e: EvidenceJson, unset: list[str]) -> str:
    """What to write for a span that lacks its offsets or its quote: where the quote is,
    or what the offsets select, when that can be found; otherwise what a span is made of."""
    quote, start, end = e.quote, e.start, e.end
    text = cx.sources[src] if src is not None else ""
    if unset == ["quote"] and src is not None:
        if isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text):
            return f"the span selects `{show(text[start:end], 80)}`: write it as `quote`"
    elif isinstance(quote, str) and quote and src is not None:
        found = text.find(quote)
        if found >= 0:
            at = f'`"start": {found}, "end": {found + len(quote)}`'
            again = text.find(quote, found + 1)
            also = f" (it occurs again at {again})" if again >= 0 else ""
            return f"the quote is at [{found}, {found + len(quote)}) of `{src}`{also}: write {at}"
        near = closest_match(text, quote)
        if near is not None:
            return f"the quote is not in `{src}`; the closest text is `{show(near, 80)}`"
    return (
        "a span is `start` and `end`, offsets in Unicode code points of the source, with "
        "`quote` the text between them; `unmask.ReplayBuilder` finds them from the quote"
    )


def _source_fits(cx: _Context, src: str, p: str, role: str | None) -> bool:
    """Whether evidence may come from ``src``: a known source, never the protocol, one the
    atom's role allows, present in ``sources``; every problem but a rejected source is
    recorded."""
    r = cx.r
    sp = f"{p}.source"
    if src not in SOURCES:
        r.err(
            Code.UNKNOWN_SOURCE,
            sp,
            f"unknown source `{show(src)}`",
            help=did_you_mean(src, SOURCES),
        )
        return False
    if src == "protocol":
        r.err(
            Code.EVIDENCE_ROLE,
            sp,
            "the protocol text is never evidence",
            help="quote the judge's rationale or trace, the context or the response",
        )
        return False
    if role is not None and src not in EVIDENCE_SOURCES[role]:
        allowed = " or ".join(f"`{s}`" for s in EVIDENCE_SOURCES[role])
        message = f"evidence for a `{role}` atom comes from {allowed}, not `{src}`"
        hint = None
        if src == "reference":
            hint = (
                "`reference` is a reading made outside the judge: it is evidence for "
                "`context` atoms only"
            )
        r.err(Code.EVIDENCE_ROLE, sp, message, help=hint)
        return False
    if src not in cx.sources:
        if src in cx.bad_sources:
            return False
        r.err(
            Code.SOURCE_MISSING,
            sp,
            f"source `{src}` is not in `sources`",
            help=f"add `sources.{src}`, the text this span quotes",
        )
        return False
    return True


def _whole(cx: _Context, e: EvidenceJson, p: str, role: str | None) -> Evidence | None:
    """``{"source": S, "read": "whole"}``: all of source S, read; no span, no quote."""
    r = cx.r
    ok = True
    for key in ("start", "end", "quote"):
        if getattr(e, key) is not UNSET:
            r.err(
                Code.EVIDENCE_READ,
                join_path(p, key),
                f"a reading of a whole source has no `{key}`",
                help=WHOLE_HELP,
            )
            ok = False
    if e.read != WHOLE:
        r.err(
            Code.EVIDENCE_READ,
            join_path(p, "read"),
            f"unknown reading `{show(e.read)}`",
            help='`read` is `"whole"`: the whole source was read',
        )
        ok = False
    src = e.source
    if src is None or not _source_fits(cx, src, p, role) or not ok:
        return None
    return Evidence(src, 0, len(cx.sources[src]), "", WHOLE)


def _bad_span(
    r: JsonReader,
    p: str,
    src: str,
    text: str,
    start: int,
    end: int,
    quote: str,
    encoded: _Encoded,
) -> None:
    found = text.find(quote) if quote else -1
    where = f"the quote occurs at [{found}, {found + len(quote)})" if found >= 0 else None
    # what to change, when the quote is there: both offsets, or `end` alone
    fix = where
    if found >= 0 and found != start:
        fix = f"{where}; set `start` to {found} and `end` to {found + len(quote)}"
    elif found >= 0 and end != found + len(quote):
        fix = f"{where}; set `end` to {found + len(quote)}"
    if not text.isascii() and quote and 0 <= start < end:
        utf8, utf16 = encoded.of(src, text)
        for unit, data, width, codec in (
            ("UTF-8 bytes", utf8, 1, "utf-8"),
            ("UTF-16 code units", utf16, 2, "utf-16-le"),
        ):
            if end * width <= len(data) and (
                data[start * width : end * width].decode(codec, "replace") == quote
            ):
                r.err(
                    Code.SPAN_UNITS,
                    p,
                    f"span [{start}, {end}) of `{src}` does not select the quote in "
                    "Unicode code points",
                    help=f"these offsets match the quote when counted in {unit}; "
                    "Unmask counts Unicode code points",
                    notes=(where,) if where else (),
                )
                return
    n = len(text)
    if not 0 <= start < n:
        r.err(
            Code.SPAN_RANGE,
            join_path(p, "start"),
            f"`start` {start} is outside `{src}`, which has {n} characters "
            f"(valid starts are 0 to {max(n - 1, 0)})",
            help=fix,
        )
    elif not start < end <= n:
        r.err(
            Code.SPAN_RANGE,
            join_path(p, "end"),
            f"`end` {end} must be greater than `start` {start} and at most {n}, "
            f"the length of `{src}`",
            help=fix or "spans are half-open: `end` is one past the last character",
        )
    else:
        hint = fix
        if hint is None:
            near = closest_match(text, quote) if quote else None
            hint = "copy the quote from the source exactly"
            if near is not None:
                hint = f"{hint}: the closest text is `{show(near, 80)}`"
        r.err(
            Code.SPAN_QUOTE,
            join_path(p, "quote"),
            f"the quote does not match `{src}`[{start}:{end}]",
            help=hint,
            notes=(f"the span selects `{show(text[start:end])}`",),
        )
