"""The report as SARIF 2.1.0, for code-scanning and review tools.

Contract: ``render(report, replay=None) -> str`` (``unmask check --format sarif``) writes one log
with one run. Every check whose outcome is VIOLATED or UNKNOWN is one result; so is every
base that is not consistent, a translation that is not valid, and a replay with no
requirement or no grounding pair. Rule ids: ``unmask/verdict``, ``unmask/requirement``,
``unmask/coverage``, ``unmask/grounding``, ``unmask/base``, ``unmask/translation``,
``unmask/replay``. Levels: ``error`` for VIOLATED; ``warning`` for an undetermined, undecided
or inconsistent check or base; ``note`` for a coverage that is not observable and for the
replay-level rules. The primary location is in the replay file (its path as given, as a
relative URI reference): the first annotation that forces the result, or the ``verdict`` /
``protocol`` member; related locations are each annotation of the explanation and each
quoted span *inside its source string* in the replay JSON, and the requirement or ground
statement in the ``.proto`` file where the protocol came from one. Lines and columns count
code points (``columnKind: unicodeCodePoints``). When the replay file cannot be read again,
locations name the file without a region. The run's properties name the replay, the
protocol, the backend and the outcome, and for a re-check (``--protocol``) carry
``recheck``, the JSON report's field: the protocol checked against, its digest and the
atoms left out. Deterministic: no time, no absolute path that was not given.

Size: the rule table, the results and the location finding (into the replay's JSON text
and the ``.proto`` file) are one mapping of a report onto SARIF's shapes.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache

# the decoder's string scanner (C, or its Python twin): there at run time, though typeshed
# does not declare it
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any
from urllib.parse import quote

from unmask.checking.report import (
    BASE_NAMES,
    INCONSISTENT,
    REFUTED,
    SOLVER_UNKNOWN,
    UNKNOWN,
    VIOLATED,
    Item,
    Report,
)
from unmask.ir.text import expr_text
from unmask.plumbing.safe import finish, visible_values
from unmask.render import view as ev

SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)

# SARIF lists every rule once and results point at it by index
RULE_INDEX = {r.id: i for i, r in enumerate(ev.RULES.values())}
# the pieces of a JSON string's source text, each escape being one code point (a surrogate
# pair written as two escapes is one code point too)
_TOKENS = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\.|[^\\]+"
)


@lru_cache(maxsize=1)
def version() -> str:
    """The installed distribution's version (a bare source checkout has none to give)."""
    from importlib import metadata  # slow to import: only when a SARIF report is written

    try:
        return metadata.version("unmask")
    except metadata.PackageNotFoundError:
        return "0.0.0+unknown"


def rules() -> list[dict[str, Any]]:
    """The driver's rules, in the order ``ruleIndex`` counts."""
    return [
        {
            "id": r.id,
            "name": r.name,
            "shortDescription": {"text": r.description},
            "defaultConfiguration": {"level": r.level},
        }
        for r in ev.RULES.values()
    ]


# --- positions inside the replay JSON --------------------------------------------------------


class _Locator:
    """Where members of the replay file start (code-point offsets), found by re-reading it.

    Only the few paths a result points at are located: the top-level members, each
    annotation, and the source strings (with a map from a code point of the decoded string
    to its place in the file, so a quote's span can be shown where it is written)."""

    def __init__(self, text: str, first_line: int = 1) -> None:
        self.text = text
        self.first_line = first_line  # the line of the input the text starts on
        self.offsets: dict[str, int] = {}
        self._line_starts: list[int] | None = None
        self._maps: dict[str, tuple[int, list[int] | None, int] | None] = {}
        dec = json.JSONDecoder()
        i = self._ws(text, 0)
        if i >= len(text) or text[i] != "{":
            return
        i = self._ws(text, i + 1)
        while i < len(text) and text[i] != "}":
            key, i = dec.raw_decode(text, i)
            i = self._ws(text, i)
            i = self._ws(text, i + 1)  # the colon
            self.offsets[f"$.{key}"] = i
            if key == "annotations" and text[i] == "[":
                i = self._array(dec, i, "$.annotations")
            elif key == "sources" and text[i] == "{":
                i = self._object(dec, i, "$.sources")
            else:
                _, i = dec.raw_decode(text, i)
            i = self._ws(text, i)
            if i < len(text) and text[i] == ",":
                i = self._ws(text, i + 1)

    @staticmethod
    def _ws(text: str, i: int) -> int:
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        return i

    def _array(self, dec: json.JSONDecoder, i: int, path: str) -> int:
        i = self._ws(self.text, i + 1)
        n = 0
        while i < len(self.text) and self.text[i] != "]":
            self.offsets[f"{path}[{n}]"] = i
            _, i = dec.raw_decode(self.text, i)
            n += 1
            i = self._ws(self.text, i)
            if self.text[i] == ",":
                i = self._ws(self.text, i + 1)
        return i + 1

    def _object(self, dec: json.JSONDecoder, i: int, path: str) -> int:
        i = self._ws(self.text, i + 1)
        while i < len(self.text) and self.text[i] != "}":
            key, i = dec.raw_decode(self.text, i)
            i = self._ws(self.text, i)
            i = self._ws(self.text, i + 1)
            self.offsets[f"{path}.{key}"] = i
            _, i = dec.raw_decode(self.text, i)
            i = self._ws(self.text, i)
            if self.text[i] == ",":
                i = self._ws(self.text, i + 1)
        return i + 1

    def string_offset(self, path: str, index: int) -> int | None:
        """The file offset of code point ``index`` of the JSON string at ``path``."""
        if path not in self._maps:
            self._maps[path] = self._string_map(path)
        found = self._maps[path]
        if found is None:
            return None
        base, table, length = found
        if not 0 <= index <= length:
            return None
        return base + index if table is None else table[index]

    def _string_map(self, path: str) -> tuple[int, list[int] | None, int] | None:
        """(offset of the first code point, per-code-point offsets or None when the string
        has no escape, number of code points)."""
        start = self.offsets.get(path)
        if start is None or self.text[start] != '"':
            return None
        value, end = scanstring(self.text, start + 1)
        raw_start, raw_end = start + 1, end - 1
        if "\\" not in self.text[raw_start:raw_end]:
            return raw_start, None, len(value)
        table: list[int] = []
        for m in _TOKENS.finditer(self.text, raw_start, raw_end):
            if m.group().startswith("\\"):
                table.append(m.start())
            else:
                table.extend(range(m.start(), m.end()))
        table.append(raw_end)
        return raw_start, table, len(table) - 1

    def line_col(self, offset: int) -> tuple[int, int]:
        if self._line_starts is None:
            starts = [0]
            pos = self.text.find("\n")
            while pos >= 0:
                starts.append(pos + 1)
                pos = self.text.find("\n", pos + 1)
            self._line_starts = starts
        lo, hi = 0, len(self._line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + self.first_line, offset - self._line_starts[lo] + 1


def _locator(file: str | None, replay: Any = None) -> _Locator | None:
    text = getattr(replay, "json_text", None)
    if text is not None:
        # a JSON Lines record or stdin: the loader kept the text it read
        try:
            return _Locator(text, replay.json_line)
        except (ValueError, IndexError, RecursionError):
            return None
    if not file:
        return None
    try:
        from unmask.plumbing.diagnostics import UnmaskError
        from unmask.plumbing.files import read_text

        # read again as it was read first: a regular file, bounded, never a pipe swapped in
        text = read_text(file)
        return _Locator(text)
    except (OSError, ValueError, IndexError, RecursionError, UnmaskError):
        # the file changed or vanished since it was checked: name it without a region
        return None


def uri(path: str) -> str:
    """A file path as a relative URI reference (SARIF `artifactLocation.uri`)."""
    # a file name that is not UTF-8 arrives with surrogate escapes: keep its bytes
    return quote(path.replace("\\", "/"), safe="/", errors="surrogateescape")


def document(
    rules: list[dict[str, Any]],
    artifacts: list[str],
    results: list[dict[str, Any]],
    properties: dict[str, Any],
) -> dict[str, Any]:
    """A SARIF log of one run by Unmask: its driver, files, results and run properties."""
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "unmask",
                "version": version(),
                "semanticVersion": version(),
                "rules": rules,
            }
        },
        "columnKind": "unicodeCodePoints",
    }
    if artifacts:
        run["artifacts"] = [{"location": {"uri": uri(a)}} for a in artifacts]
    run["results"] = results
    run["properties"] = properties
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


# --- building the log ------------------------------------------------------------------------


class _Log:
    def __init__(self, report: Report, replay: Any, trust: Any = None) -> None:
        self.report = report
        self.replay = replay
        self.file = None if replay is None else replay.file
        if self.file and getattr(replay, "json_text", None) is not None:
            # a JSON Lines record is named FILE:LINE; the artifact is the file, the line is
            # in the region
            self.file = self.file.removesuffix(f":{replay.json_line}")
        self.loc = _locator(self.file, replay)
        self.artifacts: list[str] = []
        self.ann_index = {} if replay is None else {a.atom: a for a in replay.annotations}
        self.look = ev.Lookup(replay, trust)
        proto = None if replay is None else replay.protocol
        self.req_spans = {} if proto is None else {r.id: r.span for r in proto.requirements}
        self.ground_spans = (
            {}
            if proto is None
            else {(expr_text(g.judge), expr_text(g.context)): g.span for g in proto.grounding}
        )

    def artifact(self, path: str) -> int:
        if path not in self.artifacts:
            self.artifacts.append(path)
        return self.artifacts.index(path)

    def physical(self, file: str, line: int | None, col: int | None, end: int | None = None):
        out: dict[str, Any] = {"artifactLocation": {"uri": uri(file), "index": self.artifact(file)}}
        if line is not None:
            region: dict[str, Any] = {"startLine": line, "startColumn": col}
            if end is not None:
                region["endColumn"] = end
            out["region"] = region
        return out

    def replay_location(self, path: str, message: str | None = None) -> dict | None:
        """A location at the JSON value ``path`` of the replay file."""
        if self.file is None:
            return None
        line = col = None
        if self.loc is not None and path in self.loc.offsets:
            line, col = self.loc.line_col(self.loc.offsets[path])
        out: dict[str, Any] = {
            "physicalLocation": self.physical(self.file, line, col),
            "logicalLocations": [{"fullyQualifiedName": path, "kind": "object"}],
        }
        if message:
            out["message"] = {"text": message}
        return out

    def quote_location(self, atom: str, q: Any) -> dict | None:
        """The quoted span where it is written inside its source string."""
        if self.file is None or self.loc is None:
            return None
        path = f"$.sources.{q.source}"
        if q.whole:  # the reader read all of it: the location is the source string itself
            what = ev.whole_reading(q.source)
            return self.replay_location(path, f"evidence for `{atom}`: {what}")
        a = self.loc.string_offset(path, q.start)
        b = self.loc.string_offset(path, q.end)
        if a is None or b is None:
            return None
        line, col = self.loc.line_col(a)
        end_line, end_col = self.loc.line_col(b)
        phys = self.physical(self.file, line, col, end_col if end_line == line else None)
        return {
            "physicalLocation": phys,
            "logicalLocations": [
                {"fullyQualifiedName": f"{path}[{q.start}:{q.end}]", "kind": "value"}
            ],
            "message": {"text": f"evidence for `{atom}`: “{ev.clean(q.quote)}”"},
        }

    def span_location(self, span: Any, what: str) -> dict | None:
        if span is None or not getattr(span, "file", None) or span.file == self.file:
            return None
        return {
            "physicalLocation": self.physical(span.file, span.line, span.column),
            "message": {"text": what},
        }

    def annotation_path(self, atom: str) -> str | None:
        ann = self.ann_index.get(atom)
        return None if ann is None else f"$.annotations[{ann.index}]"

    def item_locations(self, items: tuple[Item, ...]) -> list[dict]:
        out = []
        for it in items:
            if it.kind != "annotation" or it.atom is None:
                continue
            path = self.annotation_path(it.atom)
            if path is not None:
                note = f"annotation `{it.atom}` = {it.value}"
                loc = self.replay_location(path, note)
                if loc is not None:
                    out.append(loc)
            for q in it.evidence:
                loc = self.quote_location(it.atom, q)
                if loc is not None:
                    out.append(loc)
        return out

    def protocol_span(self, check: ev.Check) -> Any:
        if self.replay is None:
            return None
        if check.dimension in ("procedure", "coverage"):
            return self.req_spans.get(check.key.split(":", 1)[1])
        if check.dimension == "grounding":
            judge, context = check.sides
            return self.ground_spans.get((judge, context))
        if check.dimension == "verdict":
            proto = self.replay.protocol
            if proto.decision is not None:
                return proto.decision.span
            # a protocol with declared labels: the decision of the observed label
            observed = [d for d in proto.decisions if d.label == self.report.verdict.observed]
            return observed[0].span if observed else None
        return None

    def result(
        self,
        rule: str,
        level: str,
        text: str,
        key: str,
        primary: list[dict],
        related: list[dict],
        properties: dict[str, Any],
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ruleId": rule,
            "ruleIndex": RULE_INDEX[rule],
            "level": level,
            "message": {"text": text},
        }
        if primary:
            out["locations"] = primary[:1]
        related = primary[1:] + related
        if related:
            for i, loc in enumerate(related):
                loc["id"] = i
            out["relatedLocations"] = related
        digest = hashlib.sha256(f"{self.report.replay}\0{key}".encode("utf-8", "replace"))
        out["partialFingerprints"] = {"unmaskCheck/v1": digest.hexdigest()[:32]}
        out["properties"] = properties
        return out

    def check_result(self, c: ev.Check) -> dict[str, Any]:
        found = ev.standing(c.result)
        trust = ev.trust_of(c.result, self.look)
        # a provisional finding (it rests on an unreviewed or gold-derived annotation) warns;
        # with a calibration, one whose every reading is measured and trusted is an error
        settled = found != "provisional" if trust is None else trust.level != "to_review"
        level = "error" if c.outcome == VIOLATED and settled else "warning"
        if c.dimension == "coverage" and c.status == REFUTED:
            level = "note"
        text = f"{ev.finding(self.report, c, self.replay, self.look)} [{c.title}: {c.status}]"
        if trust is not None:
            text += f" ({trust.words()})"
        expl = c.result.explanation
        items = expl.items if expl is not None else ()
        related = self.item_locations(items)
        primary: list[dict] = []
        first = next((i for i in items if i.kind == "annotation" and i.atom), None)
        if first is not None and (path := self.annotation_path(first.atom or "")) is not None:
            loc = self.replay_location(path)
            if loc is not None:
                primary.append(loc)
                # the primary location is that annotation: do not list it twice
                related = [
                    r for r in related if r["logicalLocations"][0]["fullyQualifiedName"] != path
                ]
        if not primary:
            target = "$.verdict" if c.dimension == "verdict" else "$.protocol"
            loc = self.replay_location(target)
            if loc is not None:
                primary.append(loc)
        span_loc = self.span_location(self.protocol_span(c), f"{c.title} (in the protocol)")
        if span_loc is not None:
            related.append(span_loc)
        for p in primary:
            p["logicalLocations"].append({"fullyQualifiedName": c.path, "kind": "object"})
        props: dict[str, Any] = {
            "replay": ev.clean(self.report.replay),
            "dimension": c.dimension,
            "check": ev.clean(c.key),
            "status": c.status,
            "outcome": c.outcome,
        }
        if found:
            props["standing"] = found
            props["restsOn"] = list(ev.rests_kinds(c.result, self.look))
        if trust is not None:
            props["trust"] = trust.to_json()
        return self.result(c.rule, level, ev.clean(text), c.key, primary, related, props)

    def results(self) -> list[dict[str, Any]]:
        out = []
        report = self.report
        if report.translation != "valid":
            loc = self.replay_location("$.translation")
            out.append(
                self.result(
                    ev.RULES["translation"].id,
                    "warning",
                    f"translation `{ev.clean(report.translation)}`: nothing was checked",
                    "translation",
                    [loc] if loc else [],
                    [],
                    {"replay": ev.clean(report.replay), "translation": report.translation},
                )
            )
        if report.bases is not None:
            for name in BASE_NAMES:
                state = report.bases.state(name)
                if state not in (INCONSISTENT, SOLVER_UNKNOWN):
                    continue
                conflict = report.bases.conflict(name)
                related = self.item_locations(conflict.items) if conflict else []
                loc = self.replay_location("$.annotations")
                word = "inconsistent" if state == INCONSISTENT else "undecided by the solver"
                out.append(
                    self.result(
                        ev.RULES["base"].id,
                        "warning",
                        f"base `{name}` is {word}: the checks against it are unknown",
                        f"base:{name}",
                        [loc] if loc else [],
                        related,
                        {"replay": ev.clean(report.replay), "base": name, "state": state},
                    )
                )
        for c in ev.checks(report):
            if c.outcome in (VIOLATED, UNKNOWN) and c.status is not None:
                out.append(self.check_result(c))
        for r in report.reasons:
            if r.code in ("no-requirements", "no-grounding"):
                loc = self.replay_location("$.protocol")
                out.append(
                    self.result(
                        ev.RULES["replay"].id,
                        "note",
                        ev.clean(r.message),
                        r.code,
                        [loc] if loc else [],
                        [],
                        {"replay": ev.clean(report.replay), "code": r.code},
                    )
                )
        return out

    def log(self) -> dict[str, Any]:
        results = self.results()
        report = self.report
        properties = {
            "replay": ev.clean(report.replay),
            "protocol": ev.clean(report.protocol),
            "backend": report.backend,
            "overall": report.overall,
            "dimensions": report.dimensions.to_json(),
            "verdict": report.verdict.observed,
            "gold": report.gold,
            "verdict_matches_gold": report.verdict_matches_gold,
        }
        if report.recheck is not None:  # `--protocol`: the JSON report's field, as it is
            properties["recheck"] = report.recheck.to_json()
        if self.look.trust is not None:  # `--calibration`: what the findings were weighed by
            _, warning = ev.calibration_note(self.look, report.protocol)
            properties["calibration"] = {**self.look.trust.header_json(), "warning": warning}
        return document(rules(), self.artifacts, results, properties)


def to_json(report: Report, replay: Any = None, trust: Any = None) -> dict[str, Any]:
    return _Log(report, replay, trust).log()


def render(report: Report, replay: Any = None, *, trust: Any = None) -> str:
    """The SARIF log as JSON text; ``trust`` (a calibration): each finding's trust, and
    ``error`` only for a confirmed or trusted one."""
    log = visible_values(to_json(report, replay, trust))  # every string is text a viewer shows
    return finish("sarif", json.dumps(log, ensure_ascii=False, indent=2)) + "\n"
