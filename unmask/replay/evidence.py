"""Reading a replay's annotations and checking their evidence spans.

Contract: ``read_annotations`` returns the annotations that passed every rule (a known atom,
annotated once; a value TRUE/FALSE/UNKNOWN; TRUE and FALSE backed by at least one span) and
records every problem into the document's ``JsonReader``. A span is half-open ``[start,
end)`` in Unicode code points of a source that fits the atom's role, and its ``quote`` equals
that slice exactly; when the offsets select the quote only if counted in UTF-8 bytes or
UTF-16 code units, the error says so, and when the quote occurs elsewhere it says where.
The ``protocol`` text is never evidence, and ``reference`` (a reading made outside the judge)
is evidence for ``context`` atoms only. An annotation's ``by`` is an object with ``kind``
(required), ``name`` and ``reviewed``; unlike elsewhere, an unknown key in it is an error,
since a misspelt ``reviewed`` would silently trust an annotation. An evidence entry
``{"source": S, "read": "whole"}`` is a reading of all of source S that found nothing saying
the atom holds: it backs only a FALSE annotation whose ``by`` names a reviewed reader, so a
FALSE from absence always comes from an explicit, reviewed reading, never from a missing quote.
``readings`` (what several readers read when they did not agree) are each a ``by``, a value
and quoted spans checked as an annotation's are; nothing checked reads them.
"""

from __future__ import annotations

from typing import Any

from unmask import ir
from unmask.ir.json_reader import unknown_atom
from unmask.plumbing.jsonreader import JsonReader, did_you_mean, is_int, join_path, show
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

# `review`: what an annotation was before `unmask review` changed it; kept, never read
ANNOTATION_KEYS = ("atom", "value", "evidence", "explanation", "by", "review", "readings")
# `readings`: what each of several readers read when they did not agree; kept to be shown
READING_KEYS = ("by", "value", "evidence", "explanation")
EVIDENCE_KEYS = ("source", "start", "end", "quote")
WHOLE_KEYS = ("source", "read")
PROVENANCE_KEYS = ("kind", "name", "version", "reviewed")
_KINDS_HELP = "a kind is " + ", ".join(f"`{k}`" for k in PROVENANCE_KINDS)


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


def read_annotations(
    r: JsonReader,
    obj: dict,
    protocol: ir.Protocol | None,
    sources: dict[str, str],
    bad_sources: set[str],
    lacking: list[str] | None = None,
) -> tuple[Annotation, ...]:
    """The valid annotations of replay ``obj``.

    ``protocol`` is None when it could not be read: atom names are then not checked.
    ``lacking`` is given for a replay re-checked against another protocol (``--protocol``):
    an annotation for an atom that protocol lacks is then no error but is left out, its
    atom appended to ``lacking`` with an ``atom-dropped`` warning (its evidence is still
    read, and must still quote its sources).
    ``bad_sources`` were given but rejected: spans quoting them are not also "missing".
    Each annotation is first offered to ``quick_annotation``; only one it does not accept
    goes through the rule-by-rule reading that words every problem.
    """
    raw = r.array(obj, "annotations", "")
    if raw is None:
        return ()
    atoms = {a.name: a for a in protocol.atoms} if protocol is not None else None
    encoded = _Encoded()
    first: dict[str, int] = {}
    out = []
    for i, a in enumerate(raw):
        if atoms is not None:
            quick = quick_annotation(a, i, atoms, first, sources)
            if quick is not None:
                first[quick.atom] = i
                out.append(quick)
                continue
        p = r.object_at(a, "annotations", i, "an annotation", ANNOTATION_KEYS)
        if p is not None:
            got = _annotation(r, a, i, p, atoms, first, sources, bad_sources, encoded, lacking)
            if got is not None and (atoms is None or got.atom in atoms):
                out.append(got)
    return tuple(out)


# an annotation the quick reader takes has these keys at most (`by`, `review` and `readings`
# go the long way)
_QUICK_KEYS = frozenset(ANNOTATION_KEYS) - {"by", "review", "readings"}


def quick_annotation(
    a: Any,
    i: int,
    atoms: dict[str, ir.AtomDecl],
    first: dict[str, int],
    sources: dict[str, str],
) -> Annotation | None:
    """Annotation ``i`` when every rule plainly holds for it, else None (then the full
    reading decides and words the problem). It records nothing: what it accepts, the full
    reading accepts too, with no error and no warning, and builds the same annotation."""
    if a.__class__ is not dict or not a.keys() <= _QUICK_KEYS:
        return None
    name = a.get("atom")
    value = a.get("value")
    explanation = a.get("explanation", "")
    if (
        name.__class__ is not str
        or name in first
        or value.__class__ is not str
        or value not in VALUES
        or explanation.__class__ is not str
    ):
        return None
    decl = atoms.get(name)
    if decl is None:
        return None
    raw = a.get("evidence", [])
    if raw.__class__ is not list:
        return None
    if not raw and value != "UNKNOWN":
        return None
    allowed = EVIDENCE_SOURCES[decl.role]
    evidence = []
    for e in raw:
        if e.__class__ is not dict or len(e) != 4:
            return None
        src = e.get("source")
        start = e.get("start")
        end = e.get("end")
        quote = e.get("quote")
        if (
            src.__class__ is not str
            or quote.__class__ is not str
            or start.__class__ is not int
            or end.__class__ is not int
            or src not in allowed
        ):
            return None
        text = sources.get(src)
        if text is None or not 0 <= start < end <= len(text) or text[start:end] != quote:
            return None
        evidence.append(Evidence(src, start, end, quote))
    return Annotation(name, value, tuple(evidence), explanation, i, None)


def _annotation(
    r: JsonReader,
    a: dict,
    i: int,
    p: str,
    atoms: dict[str, ir.AtomDecl] | None,
    first: dict[str, int],
    sources: dict[str, str],
    bad_sources: set[str],
    encoded: _Encoded,
    lacking: list[str] | None = None,
) -> Annotation | None:
    """Annotation ``i`` (at JSON path ``p``), rule by rule: every problem is recorded."""
    name = r.string(a, "atom", p)
    role = None
    if name is not None:
        if name in first:
            r.err(
                "duplicate-annotation",
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
                        "atom-dropped",
                        join_path(p, "atom"),
                        f"atom `{show(name)}` is not in the protocol this replay is checked "
                        "against: its annotation is left out",
                        help="`unmask compare OLD NEW` shows what changed between the versions",
                    )
            elif decl is None:
                unknown_atom(r, join_path(p, "atom"), name, atoms)
            else:
                role = decl.role
    value = r.string(a, "value", p)
    if value is not None and value not in VALUES:
        hint = "a value is `TRUE`, `FALSE` or `UNKNOWN`"
        if value.upper() in VALUES:
            hint = f"write `{value.upper()}` in capitals"
        r.err("value", join_path(p, "value"), f"unknown value `{show(value)}`", help=hint)
        value = None
    explanation = r.string(a, "explanation", p, required=False) or ""
    by = _provenance(r, a["by"], join_path(p, "by")) if "by" in a else None
    if "review" in a and not isinstance(a["review"], dict):
        r.expect(join_path(p, "review"), "an object", a["review"])
    ev_raw = r.array(a, "evidence", p, required=False)
    evidence = []
    if ev_raw is not None:
        if value in ("TRUE", "FALSE") and not ev_raw:
            r.err(
                "evidence-missing",
                join_path(p, "evidence"),
                f"a {value} annotation needs at least one evidence span",
                help="quote the text that shows it, or make the value `UNKNOWN`",
            )
        for j, e in enumerate(ev_raw):
            ev = _evidence(r, e, f"{p}.evidence[{j}]", role, sources, bad_sources, encoded)
            if ev is not None:
                evidence.append(ev)
        # the reader and the value are the annotation's: said once, at the first reading
        whole = [j for j, e in enumerate(ev_raw) if isinstance(e, dict) and "read" in e]
        if whole:
            _whole_reader(r, a, f"{p}.evidence[{whole[0]}]", p, value, by)
    readings: tuple[Reading, ...] = ()
    if "readings" in a:
        readings = _readings(r, a, p, role, sources, bad_sources, encoded)
    if name is not None and value is not None:
        return Annotation(name, value, tuple(evidence), explanation, i, by, readings)
    return None


def _readings(
    r: JsonReader,
    a: dict,
    p: str,
    role: str | None,
    sources: dict[str, str],
    bad_sources: set[str],
    encoded: _Encoded,
) -> tuple[Reading, ...]:
    """``readings``: each reader's value, quotes and why, as an annotation has them; every
    reading names its reader (``by``), and a TRUE or FALSE one quotes a span (a reading of a
    whole source is a reviewed annotation's, never one of several readers')."""
    raw = r.array(a, "readings", p, required=False)
    out = []
    for k, e in enumerate(raw or ()):
        rp = r.object_at(e, join_path(p, "readings"), k, "a reading", READING_KEYS)
        if rp is None:
            continue
        by = None
        if "by" not in e:
            r.err("missing", rp, "missing `by`", help="a reading says which reader made it")
        else:
            by = _provenance(r, e["by"], join_path(rp, "by"))
        value = r.string(e, "value", rp)
        if value is not None and value not in VALUES:
            r.err(
                "value",
                join_path(rp, "value"),
                f"unknown value `{show(value)}`",
                help="a value is `TRUE`, `FALSE` or `UNKNOWN`",
            )
            value = None
        explanation = r.string(e, "explanation", rp, required=False) or ""
        spans = []
        ev_raw = r.array(e, "evidence", rp, required=False) or []
        if value in ("TRUE", "FALSE") and not ev_raw:
            r.err(
                "evidence-missing",
                join_path(rp, "evidence"),
                f"a {value} reading needs at least one evidence span",
                help="quote the text that shows it, or make the value `UNKNOWN`",
            )
        for j, x in enumerate(ev_raw):
            ep = f"{rp}.evidence[{j}]"
            if isinstance(x, dict) and "read" in x:
                r.err(
                    "evidence-read",
                    join_path(ep, "read"),
                    "a reading in `readings` does not read a whole source",
                    help="quote the text that shows the value",
                )
                continue
            ev = _evidence(r, x, ep, role, sources, bad_sources, encoded)
            if ev is not None:
                spans.append(ev)
        if by is not None and value is not None:
            out.append(Reading(by, value, tuple(spans), explanation))
    return tuple(out)


def _whole_reader(
    r: JsonReader, a: dict, ep: str, p: str, value: str | None, by: Provenance | None
) -> None:
    """A whole reading backs a FALSE only, and only a reviewed reader's: absence read by
    nobody in particular, or by an unchecked rule or model, is no reading."""
    if value is not None and value != "FALSE":
        r.err(
            "evidence-read",
            join_path(ep, "read"),
            f"a reading of a whole source backs only a FALSE annotation, not `{value}`",
            help="quote the text that shows the value",
        )
    if "by" not in a:
        r.err(
            "evidence-read",
            p,
            "an annotation resting on a reading of a whole source must say who read it",
            help='add `"by": {"kind": "human", "name": "…"}`',
        )
    elif by is not None and not by.reviewed:
        r.err(
            "evidence-read",
            join_path(p, "by"),
            "a reading of a whole source must be reviewed",
            help="have a person check the reading, then set `reviewed` to `true`",
        )


def _provenance(r: JsonReader, b: Any, p: str) -> Provenance | None:
    """An annotation's ``by``; None (and an error) unless every part of it is valid."""
    if not isinstance(b, dict):
        r.expect(p, 'an object such as `{"kind": "human"}`', b)
        return None
    ok = True
    for k in b:
        if k not in PROVENANCE_KEYS:
            r.err(
                "provenance",
                join_path(p, k),
                f"unknown key `{show(k)}` in `by`",
                help=did_you_mean(k, PROVENANCE_KEYS)
                or "`by` has `kind`, and optionally `name`, `version` and `reviewed`",
            )
            ok = False
    what = r.string(b, "kind", p)
    if what is not None and what not in PROVENANCE_KINDS:
        hint = _KINDS_HELP
        if what.lower() in PROVENANCE_KINDS:
            hint = f"write `{what.lower()}` in lower case"
        r.err("provenance", join_path(p, "kind"), f"unknown kind `{show(what)}`", help=hint)
        what = None
    name = None
    if "name" in b:
        name = r.string(b, "name", p)
        if name == "":
            r.err("provenance", join_path(p, "name"), "`name` is empty", help="leave `name` out")
        ok = ok and bool(name)
    version = None
    if "version" in b:
        version = r.string(b, "version", p)
        if version == "":
            r.err(
                "provenance",
                join_path(p, "version"),
                "`version` is empty",
                help="leave `version` out",
            )
        ok = ok and bool(version)
    reviewed = None
    if "reviewed" in b:
        reviewed = b["reviewed"]
        if not isinstance(reviewed, bool):
            r.expect(join_path(p, "reviewed"), "`true` or `false`", reviewed)
            ok = False
    if what is None or not ok:
        return None
    return Provenance(what, name or "", reviewed, version or "")


def _evidence(
    r: JsonReader,
    e: Any,
    p: str,
    role: str | None,
    sources: dict[str, str],
    bad_sources: set[str],
    encoded: _Encoded,
) -> Evidence | None:
    if not isinstance(e, dict):
        r.expect(p, "an evidence object", e)
        return None
    if "read" in e:
        return _whole(r, e, p, role, sources, bad_sources)
    r.unknown_keys(e, p, EVIDENCE_KEYS, "evidence")
    src = r.string(e, "source", p)
    quote = r.string(e, "quote", p)
    bounds = []
    for key in ("start", "end"):
        if key not in e:
            r.err("missing", p, f"missing `{key}`")
        elif not is_int(e[key]):
            r.expect(join_path(p, key), "a whole number", e[key])
        else:
            bounds.append(e[key])
    if src is None or not _source_fits(r, src, p, role, sources, bad_sources):
        return None
    if quote is None or len(bounds) != 2:
        return None
    start, end = bounds
    text = sources[src]
    if 0 <= start < end <= len(text) and text[start:end] == quote:
        return Evidence(src, start, end, quote)
    _bad_span(r, p, src, text, start, end, quote, encoded)
    return None


def _source_fits(
    r: JsonReader,
    src: str,
    p: str,
    role: str | None,
    sources: dict[str, str],
    bad_sources: set[str],
) -> bool:
    """Whether evidence may come from ``src``: a known source, never the protocol, one the
    atom's role allows, present in ``sources``; every problem but a rejected source is
    recorded."""
    sp = f"{p}.source"
    if src not in SOURCES:
        r.err(
            "unknown-source", sp, f"unknown source `{show(src)}`", help=did_you_mean(src, SOURCES)
        )
        return False
    if src == "protocol":
        r.err(
            "evidence-role",
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
        r.err("evidence-role", sp, message, help=hint)
        return False
    if src not in sources:
        if src in bad_sources:
            return False
        r.err(
            "source-missing",
            sp,
            f"source `{src}` is not in `sources`",
            help=f"add `sources.{src}`, the text this span quotes",
        )
        return False
    return True


def _whole(
    r: JsonReader,
    e: dict,
    p: str,
    role: str | None,
    sources: dict[str, str],
    bad_sources: set[str],
) -> Evidence | None:
    """``{"source": S, "read": "whole"}``: all of source S, read; no span, no quote."""
    ok = True
    for k in e:
        if k not in WHOLE_KEYS:
            r.err(
                "evidence-read",
                join_path(p, k),
                f"a reading of a whole source has no `{show(k)}`",
                help='write `{"source": "…", "read": "whole"}`, or drop `read` and quote a span',
            )
            ok = False
    read = e["read"]
    if read != WHOLE:
        r.err(
            "evidence-read",
            join_path(p, "read"),
            f"unknown reading `{show(read)}`",
            help='`read` is `"whole"`: the whole source was read',
        )
        ok = False
    src = r.string(e, "source", p)
    if src is None or not _source_fits(r, src, p, role, sources, bad_sources) or not ok:
        return None
    return Evidence(src, 0, len(sources[src]), "", WHOLE)


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
                    "span-units",
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
            "span-range",
            join_path(p, "start"),
            f"`start` {start} is outside `{src}`, which has {n} characters "
            f"(valid starts are 0 to {max(n - 1, 0)})",
            help=where,
        )
    elif not start < end <= n:
        r.err(
            "span-range",
            join_path(p, "end"),
            f"`end` {end} must be greater than `start` {start} and at most {n}, "
            f"the length of `{src}`",
            help=where or "spans are half-open: `end` is one past the last character",
        )
    else:
        hint = where
        if hint is None:
            hint = "copy the quote from the source exactly"
        elif found != start:
            hint = f"{where}; set `start` to {found} and `end` to {found + len(quote)}"
        r.err(
            "span-quote",
            join_path(p, "quote"),
            f"the quote does not match `{src}`[{start}:{end}]",
            help=hint,
            notes=(f"the span selects `{show(text[start:end])}`",),
        )
