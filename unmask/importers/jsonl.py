"""The `jsonl` importer: any JSON Lines file of judgments, read through a mapping file.

Contract: the mapping (JSON, ``--mapping FILE``) names the protocol (a ``.proto`` path,
relative to the mapping file) and, for each replay field, the record field that holds it
(dotted paths reach into objects): ``sources`` (source name -> field), ``verdict`` and
``gold`` (``{"field": F, "map": {raw: label}}``; without ``map`` the raw value must already
be the label), ``id`` and ``item`` (fields), fixed ``domains``, and ``annotations`` (a list of
``{"atom": A, "value": {"field": F, "map": {…}}, "quote": F}``, repeated for each member of
a domain with ``"for": D``, ``{D}`` standing for the member, or for each combination of
members with ``"for": [D, E]``). Verdicts and gold are the
protocol's own labels (``verdict a | b | c``, else PASS and FAIL), through the optional map; a
domain's members are a fixed list or ``{"field": F}``, the record's own list; a source field
holding a list of texts becomes numbered lines ``[1] …`` (a list of ``{"id", "text"}``
passages, lines ``[ID] …``). A mapping that is
malformed is an ``UnmaskError`` naming the mapping file and the key; a record that cannot
be imported (bad JSON, a missing field, a value the map does not know, a quote not in its
source) is skipped with ``FILE:LINE`` and the field. Blank lines are not records.
"""

from __future__ import annotations

import difflib
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from unmask.importers import Imported, Options, Skipped, build, dig, source_text
from unmask.importers.jsonlines import BadLine, jsonl_records
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.jsonload import read_json_file, show
from unmask.replay.builder import ReplayBuilder
from unmask.replay.data import SOURCES

NAME = "jsonl"
PROTOCOL = None  # the mapping names it

MAPPING_KEYS = ("protocol", "id", "item", "sources", "verdict", "gold", "domains", "annotations")


class _Missing(Exception):
    def __init__(self, field: str, reason: str):
        self.field, self.reason = field, reason


def _bad(mapping: str, path: str, message: str, help: str | None = None) -> UnmaskError:
    return UnmaskError([Diagnostic(Code.MAPPING, message, path=path, file=mapping, help=help)])


def _field(m: dict, key: str, mapping: str, required: bool) -> str | None:
    if key not in m:
        if required:
            raise _bad(mapping, "$", f"missing `{key}`", help=f"name the record field for `{key}`")
        return None
    v = m[key]
    if not isinstance(v, str) or not v:
        raise _bad(mapping, key, f"expected a field name, found `{show(v)}`")
    return v


def _labelled(m: dict, key: str, mapping: str, required: bool, at: str = "") -> dict | None:
    path = f"{at}.{key}" if at else key
    if key not in m:
        if required:
            raise _bad(
                mapping, at or "$", f"missing `{key}`", help='write `{"field": "…", "map": {…}}`'
            )
        return None
    spec = m[key]
    if not isinstance(spec, dict) or not isinstance(spec.get("field"), str):
        raise _bad(mapping, path, 'expected `{"field": "…"}` with an optional `"map"`')
    extra = [k for k in spec if k not in ("field", "map")]
    if extra:
        raise _bad(mapping, f"{path}.{extra[0]}", f"unknown key `{show(extra[0])}`")
    vmap = spec.get("map")
    if vmap is not None and (
        not isinstance(vmap, dict) or not all(isinstance(v, str) for v in vmap.values())
    ):
        raise _bad(mapping, f"{path}.map", "expected an object of raw values to labels")
    return spec


def load_mapping(path: Path, options: Options) -> dict[str, Any]:
    """Read and check the mapping file; ``protocol`` comes back as a resolved path."""
    mapping = str(path)
    m = read_json_file(path, options.limits)
    if not isinstance(m, dict):
        raise _bad(mapping, "$", "expected a mapping object")
    for k in m:
        if k not in MAPPING_KEYS:
            close = difflib.get_close_matches(k, MAPPING_KEYS, n=1)
            raise _bad(
                mapping,
                k,
                f"unknown key `{show(k)}`",
                help=f"did you mean `{close[0]}`?"
                if close
                else "keys are " + ", ".join(f"`{n}`" for n in MAPPING_KEYS),
            )
    proto = _field(m, "protocol", mapping, True)
    assert proto is not None  # required: ``_field`` raised when it is missing
    if not proto.endswith(".proto"):  # never read, and so never echo, another kind of file
        raise _bad(mapping, "protocol", f"`{show(proto)}` is not a `.proto` file")
    out: dict[str, Any] = {"protocol": (path.parent / proto), "protocol_name": proto}
    out["id"] = _field(m, "id", mapping, False)
    out["item"] = _field(m, "item", mapping, False)
    src = m.get("sources")
    if not isinstance(src, dict) or not src:
        raise _bad(mapping, "sources", "expected an object of source names to record fields")
    for k, v in src.items():
        if k not in SOURCES:
            raise _bad(
                mapping,
                f"sources.{k}",
                f"unknown source `{show(k)}`",
                help="sources are " + ", ".join(f"`{n}`" for n in SOURCES),
            )
        if not isinstance(v, str) or not v:
            raise _bad(mapping, f"sources.{k}", f"expected a field name, found `{show(v)}`")
    out["sources"] = dict(src)
    out["verdict"] = _labelled(m, "verdict", mapping, True)
    out["gold"] = _labelled(m, "gold", mapping, False)
    doms = m.get("domains", {})
    if not isinstance(doms, dict):
        raise _bad(mapping, "domains", "expected an object of domain names to member lists")
    for k, v in doms.items():
        fixed = isinstance(v, list) and all(isinstance(x, str) for x in v)
        per_record = isinstance(v, dict) and list(v) == ["field"] and isinstance(v["field"], str)
        if not (fixed or per_record):
            raise _bad(
                mapping,
                f"domains.{k}",
                'expected an array of member names, or `{"field": F}` naming the record\'s array',
            )
    out["domains"] = doms
    anns = m.get("annotations", [])
    if not isinstance(anns, list):
        raise _bad(mapping, "annotations", "expected an array")
    for j, a in enumerate(anns):
        p = f"annotations[{j}]"
        if not isinstance(a, dict) or not isinstance(a.get("atom"), str):
            raise _bad(mapping, p, 'expected `{"atom": …, "value": {"field": …}, "quote": …}`')
        _labelled(a, "value", mapping, True, at=p)
        if "quote" in a and not isinstance(a["quote"], str):
            raise _bad(mapping, f"{p}.quote", "expected a field name")
        extra = [k for k in a if k not in ("atom", "value", "quote", "for")]
        if extra:
            raise _bad(mapping, f"{p}.{extra[0]}", f"unknown key `{show(extra[0])}`")
        if "for" in a:
            over = a["for"] if isinstance(a["for"], list) else [a["for"]]
            for k, d in enumerate(over):
                at = f"{p}.for" if not isinstance(a["for"], list) else f"{p}.for[{k}]"
                if not isinstance(d, str) or d not in doms:
                    raise _bad(
                        mapping,
                        at,
                        f"`{show(d)}` is not a domain of the mapping's `domains`",
                        help='`"for": D` repeats the annotation for each member of domain D, '
                        'as `{D}`; `"for": [D, E]` for each pair of members',
                    )
                if d in over[:k]:
                    raise _bad(mapping, at, f"`{d}` is named twice")
            if not over:
                raise _bad(mapping, f"{p}.for", "expected a domain or a non-empty array of them")
    out["annotations"] = anns
    return out


def _get(rec: Any, field: str) -> Any:
    try:
        return dig(rec, field)
    except KeyError as exc:
        raise _Missing(field, f"missing (no `{exc.args[0]}`)") from None


def _label(rec: Any, spec: dict, allowed: tuple[str, ...], what: str) -> str:
    raw = _get(rec, spec["field"])
    key = json.dumps(raw) if not isinstance(raw, str) else raw
    vmap = spec.get("map")
    if vmap is not None:
        if key not in vmap:
            raise _Missing(spec["field"], f"`{show(raw)}` is not in the {what} map")
        value = vmap[key]
    else:
        value = raw
    if value not in allowed:
        raise _Missing(
            spec["field"], f"`{show(value)}` is not one of {', '.join(f'`{a}`' for a in allowed)}"
        )
    return value


def read(path: Path, options: Options) -> Iterator[Imported | Skipped]:
    if options.mapping is None:
        raise UnmaskError(
            [
                Diagnostic(
                    Code.MAPPING,
                    "the `jsonl` importer needs a mapping file",
                    help="pass `--mapping MAPPING.json` (see docs/importers.md)",
                )
            ]
        )
    m = load_mapping(options.mapping, options)
    from unmask.plumbing.files import read_text

    proto = read_text(m["protocol"], options.limits)
    labels = protocol_labels(proto, m["protocol_name"], options)
    file = str(path)
    for n, rec in jsonl_records(path, options.limits, objects=True):
        yield _record(proto, labels, m, file, n, rec, options)


def protocol_labels(proto: str, name: str, options: Options) -> tuple[str, ...]:
    """The verdict labels the protocol declares (``verdict a | b | c``), else PASS and FAIL;
    read from the parsed text, so domains whose members each record gives need not be known."""
    from unmask.replay.builder import declared_labels

    return declared_labels(proto, name, options.limits)


def _members(rec: Any, m: dict) -> dict[str, list[str]]:
    """Each domain's members: the mapping's fixed list, or the record's own list."""
    out = {}
    for name, spec in m["domains"].items():
        if isinstance(spec, list):
            out[name] = list(spec)
            continue
        v = _get(rec, spec["field"])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise _Missing(spec["field"], f"expected an array of member names, found `{show(v)}`")
        out[name] = v
    return out


def _each_member(anns: list[dict], domains: dict[str, list[str]]) -> Iterator[dict]:
    """The annotations, one per member for those with ``"for": D`` (``{D}`` in the atom,
    the value's field and the quote's field becomes the member's name), one per combination
    of members for ``"for": [D, E]``."""
    for a in anns:
        over = a.get("for")
        if over is None:
            yield a
            continue
        over = over if isinstance(over, list) else [over]
        for combo in itertools.product(*(domains[d] for d in over)):
            slots = [("{" + d + "}", m) for d, m in zip(over, combo, strict=True)]
            value = dict(a["value"], field=_fill(a["value"]["field"], slots))
            out = {"atom": _fill(a["atom"], slots), "value": value}
            if "quote" in a:
                out["quote"] = _fill(a["quote"], slots)
            yield out


def _fill(text: str, slots: list[tuple[str, str]]) -> str:
    for slot, member in slots:
        text = text.replace(slot, member)
    return text


def _text(name: str, fld: str, v: Any) -> str:
    """A source's text: a string as it is; a list of strings (passages, retrieved contexts)
    as numbered lines `[1] …`, `[2] …`, so that a quote can name which; a list of
    ``{"id", "text"}`` objects as lines ``[ID] …``."""
    text = source_text(v)
    if text is not None:
        return text
    raise _Missing(
        fld,
        f'expected text, an array of texts or of `{{"id", "text"}}` passages with distinct'
        f" ids for source `{name}`, found `{show(v)}`",
    )


def _record(
    proto: str, labels: tuple[str, ...], m: dict, file: str, n: int, rec: Any, options: Options
):
    where = f"{file}:{n}"
    if isinstance(rec, BadLine):
        return Skipped(where, rec.reason)
    try:
        sources = {name: _text(name, fld, _get(rec, fld)) for name, fld in m["sources"].items()}
        domains = _members(rec, m)
        verdict = _label(rec, m["verdict"], labels, "verdict")
        gold = _label(rec, m["gold"], labels, "gold") if m["gold"] else None
        rid = str(_get(rec, m["id"])) if m["id"] else f"{Path(file).stem}-{n}"
        item = str(_get(rec, m["item"])) if m["item"] else None
        values = []
        for a in _each_member(m["annotations"], domains):
            value = _label(rec, a["value"], ("TRUE", "FALSE", "UNKNOWN"), "value")
            quote = _get(rec, a["quote"]) if "quote" in a else None
            if quote is not None and not isinstance(quote, str):
                raise _Missing(a["quote"], f"expected the quoted text, found `{show(quote)}`")
            values.append((a["atom"], value, quote))
    except _Missing as exc:
        return Skipped(f"{where}: field `{exc.field}`", exc.reason)

    def make() -> ReplayBuilder:
        b = ReplayBuilder(
            proto,
            sources=sources,
            verdict=verdict,
            gold=gold,
            id=rid,
            domains=domains,
            item=item,
            limits=options.limits,
        )
        for atom, value, quote in values:
            b.annotate(atom, value, quote=quote or None)
        return b

    return build(where, rid, make)
