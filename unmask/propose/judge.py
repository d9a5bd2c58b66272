"""Judge-side rules: what a rationale asserts and cites, read by patterns from a small file.

Contract: a *rule file* (JSON, ``{"schema": "unmask.judge-rules/1", "source": "rationale",
"rules": [...]}``) lists named regular expressions, each with one capture group (or one per
place of a family over several domains), the atom (or atom family) each fills, how the
captured values become member names (``s{}``; ``["{1}", "p{2}"]`` gives ``cites(date, p2)``,
named by ``unmask.plumbing.names.applied`` as the compiler names it), the value it proposes and its
confidence. ``JudgeRules(rules).propose(text, threshold)`` is a pure function
of its arguments: one ``Proposal`` per atom, in order of first appearance, each with the exact
spans it rests on (half-open code-point offsets into ``text``, ``quote == text[start:end]``),
its confidence, and ``by`` (kind ``rule``, the rule file's ``NAME/VERSION``, unreviewed).
Below ``threshold`` it abstains and the atom stays UNKNOWN; two rules proposing opposite
values for one atom also abstain. A rule file that is not of this shape raises
``UnmaskError`` naming the rule and field; its patterns are compiled with Python's ``re`` and
nothing in it runs as code.
``rules_for(protocol_path)`` finds the file kept next to a protocol (``NAME.judge.json``).
``WICE_RULES`` is the built-in file for WiCE-style judges (``Sentence 5 and 7 confirm …``,
``<answer>…</answer>``); ``docs/proposers.md`` measures each rule against hand labels.
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen
from unmask.plumbing.limits import Limits
from unmask.plumbing.names import IDENT_RE, applied
from unmask.propose import By, Fill, Proposer

SCHEMA = "unmask.judge-rules/1"
# the task `unmask propose judge` asks for: judge atoms read from the rationale
JUDGE_RATIONALE = Fill("judge", "rationale")
VALUES_MODES = ("text", "numbers")
MAX_RANGE = 1000  # a range "3-5" expands to at most this many members; wider is skipped
MAX_RULES = 200
# per rationale: its length (a pattern is tried from every citation, up to `_REACH` on),
# matches of all rules together, and characters read around them by `unless_before` and
# `doubt`; past any of them the rationale is refused, not read for minutes (docs/security.md)
MAX_CHARS = 100_000
MAX_HITS = 100_000
MAX_SCAN = 10_000_000
MAX_PATTERN = 4000
_MEMBER = IDENT_RE
MAX_GROUPS = 4  # capture groups of one rule: the places of the family it fills
_PLACEHOLDER = re.compile(r"\{([1-9]?)\}")
_RULESET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL}
# a rationale sentence ends at . ! ? followed by a space, at a line break, or at a tag (but a
# citation written as a tag, `<sentence_5>`, is part of its sentence)
_BOUNDARY = re.compile(r"(?<=[.!?])\s+|\n|<(?!/?(?:sentence|line)_?\d)[^<>\n]{1,80}>")
_NUMBER_ITEM = re.compile(r"(\d+)(?:\s*(?:-|–|to)\s*(\d+))?")

# a list of sentence numbers: "5", "5 and 7", "10, 11, and 21", "3-5", "3 to 5"
_NUMS = (
    r"\d+(?:\s*(?:-|–|to)\s*\d+)?"
    r"(?:\s*(?:,\s*(?:and\s+)?|and\s+|&\s*)\d+(?:\s*(?:-|–|to)\s*\d+)?)*"
)
_CITE = r"\b(?:sentences?|lines?)[\s_]*"
# how far (characters, within one sentence) a citation and its verb may be apart: unbounded,
# a long sentence naming many lines was read again from every one of them (quadratic)
_REACH = 200
_NEG = r"(?!\bnot\b|n't\b|\bno\b|\bnor\b|\bneither\b|\bnever\b|\bnothing\b)"
_NEAR = rf"(?:{_NEG}[^.;:!?]){{0,{_REACH}}}?"  # then, within reach, with no negation
_NEAR_ANY = rf"(?:[^.;:!?]){{0,{_REACH}}}?"
_SUPPORT_VERB = (
    r"\b(?:confirm|support|show|state|indicate|mention|list|say|note|describe|explain"
    r"|demonstrate|establish|verif|corroborat|reveal|report|provide|prove|specif)\w*"
)
_BEFORE_NEGATED = r"\b(?:no|not|nothing|none|neither|nor|never|without)\b|n't\b"
_DOUBT = (
    r"cannot be confirmed|can't be confirmed|cannot confirm|unclear|not clear"
    r"|not necessarily|ambiguous|may refer to|might refer to|same event|same person"
)

WICE_RULES: dict[str, Any] = {
    "schema": SCHEMA,
    "name": "wice-citations",
    "version": 1,
    "source": "rationale",
    "rules": [
        {
            "name": "cited",
            "summary": "a sentence the rationale names by number, whatever it says of it",
            "pattern": rf"(?<![\w<])<?{_CITE}({_NUMS})\b",
            "flags": "i",
            "atom": "cited",
            "member": "s{}",
            "values": "numbers",
            "value": "TRUE",
            "confidence": 0.95,
        },
        {
            "name": "said",
            "summary": "a numbered sentence followed, in the same sentence of the rationale and"
            " with no negation between, by a verb of support (confirms, states, shows …)",
            "pattern": rf"(?<![\w<])<?{_CITE}({_NUMS})\b{_NEAR}{_SUPPORT_VERB}",
            "flags": "i",
            "atom": "said",
            "member": "s{}",
            "values": "numbers",
            "value": "TRUE",
            "confidence": 0.85,
            "unless_before": _BEFORE_NEGATED,
            "doubt": {"pattern": _DOUBT, "confidence": 0.3},
        },
        {
            "name": "said-after",
            "summary": "a numbered sentence in parentheses after a statement of support:"
            " `The evidence confirms that … (sentence 15)`",
            "pattern": rf"{_SUPPORT_VERB}\b{_NEAR}\(\s*{_CITE}({_NUMS})\s*\)",
            "flags": "i",
            "atom": "said",
            "member": "s{}",
            "values": "numbers",
            "value": "TRUE",
            "confidence": 0.75,
            "unless_before": _BEFORE_NEGATED,
            "doubt": {"pattern": _DOUBT, "confidence": 0.3},
        },
        {
            "name": "contradicted",
            "summary": "a numbered sentence the rationale says contradicts the claim",
            "pattern": rf"(?<![\w<])<?{_CITE}({_NUMS})\b{_NEAR_ANY}"
            r"\b(?:contradict|refute|conflict|disprove|is inconsistent|are inconsistent)\w*",
            "flags": "i",
            "atom": "contradicted",
            "member": "s{}",
            "values": "numbers",
            "value": "TRUE",
            "confidence": 0.8,
        },
        {
            "name": "answer",
            "summary": "the label in the final answer tag",
            "pattern": r"<answer>\s*([A-Za-z_]+)\s*</answer>",
            "atom": "answered",
            "member": "{}",
            "values": "text",
            "case": "lower",
            "map": {
                "supported": "supported",
                "partially_supported": "partially_supported",
                "not_supported": "not_supported",
            },
            "value": "TRUE",
            "confidence": 0.99,
        },
        {
            "name": "quoted",
            "summary": "a phrase the rationale puts in double quotes",
            "pattern": r"[\"“]([^\"“”\n]{1,300})[\"”]",
            "atom": "quotes",
            "values": "text",
            "value": "TRUE",
            "confidence": 0.9,
        },
        {
            "name": "quoted-single",
            "summary": "a phrase in single quotes that are not apostrophes (`Haskins' scandals`)",
            "pattern": r"(?<![\w'’])['‘]([^'‘’\n]{1,300}?)['’](?![\w'’])",
            "atom": "quotes",
            "values": "text",
            "value": "TRUE",
            "confidence": 0.7,
        },
    ],
}


@frozen
class Quoted:
    start: int
    end: int
    quote: str

    def to_json(self, source: str) -> dict:
        return {"source": source, "start": self.start, "end": self.end, "quote": self.quote}


@frozen
class Proposal:
    """One proposed annotation: ``atom`` (``said(s5)``), ``value``, spans, confidence, rules."""

    atom: str
    value: str
    confidence: float
    spans: tuple[Quoted, ...]
    rules: tuple[str, ...]


@frozen
class Rule:
    """One rule. Per capture group (``values``, ``case``, ``mapping``: one entry each) a
    captured value becomes member names; ``member`` holds one template per place of the
    family (``("{1}", "p{2}")`` fills ``cites(date, p2)``), or is None for a plain atom."""

    name: str
    pattern: re.Pattern[str]
    atom: str
    member: tuple[str, ...] | None
    values: tuple[str, ...]
    value: str
    confidence: float
    case: tuple[str | None, ...] = (None,)
    mapping: tuple[dict[str, str] | None, ...] = (None,)
    unless_before: re.Pattern[str] | None = None
    doubt: re.Pattern[str] | None = None
    doubt_confidence: float = 0.0
    summary: str = ""

    def _names(self, k: int, captured: str) -> list[str]:
        """What the ``k``-th captured value stands for, in order (a number list expanded,
        case and map applied; a value the map does not name dropped)."""
        raw = _expand_numbers(captured) if self.values[k] == "numbers" else [captured]
        out = []
        for v in raw:
            if self.case[k] == "lower":
                v = v.lower()
            elif self.case[k] == "upper":
                v = v.upper()
            mapping = self.mapping[k]
            if mapping is not None:
                if v not in mapping:
                    continue  # a value the file does not map is not proposed
                v = mapping[v]
            out.append(v)
        return out

    def members(self, *captured: str) -> list[str]:
        """The ground atoms (or one plain atom) the captured values stand for, in order,
        named as the compiler names them (``said(s5)``, ``cites(date, p2)``); a
        combination that is not a name is dropped, and past ``MAX_RANGE`` combinations of
        several groups none is proposed."""
        per_group = [self._names(k, c) for k, c in enumerate(captured)]
        if self.member is None:
            return [self.atom] if per_group[0] else []
        if len(per_group) > 1 and math.prod(len(g) for g in per_group) > MAX_RANGE:
            return []  # (one group is bounded by its ranges, as it always was)
        out = []
        for combo in itertools.product(*per_group):
            names = tuple(_fill_template(t, combo) for t in self.member)
            if all(_MEMBER.fullmatch(n) for n in names):
                out.append(applied(self.atom, names))
        return list(dict.fromkeys(out))


def _fill_template(template: str, combo: tuple[str, ...]) -> str:
    """``s{}`` with the first value, ``p{2}`` with the second: one place's member name."""
    return _PLACEHOLDER.sub(lambda m: combo[int(m.group(1) or 1) - 1], template)


def _expand_numbers(captured: str) -> list[str]:
    out: list[str] = []
    for m in _NUMBER_ITEM.finditer(captured):
        lo = int(m.group(1))
        if m.group(2) is None:
            out.append(str(lo))
            continue
        hi = int(m.group(2))
        if lo <= hi and hi - lo < MAX_RANGE:
            out.extend(str(n) for n in range(lo, hi + 1))
    return list(dict.fromkeys(out))


def _sentences(text: str) -> list[tuple[int, int]]:
    """Half-open spans of the rationale's sentences, whitespace trimmed, empty ones dropped."""
    spans, start = [], 0
    for m in _BOUNDARY.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    out = []
    for a, b in spans:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            out.append((a, b))
    return out


MAX_RULES_BYTES = 1_000_000  # a rule file is a few dozen patterns


def _bad(message: str) -> UnmaskError:
    return UnmaskError([Diagnostic(Code.BAD_RULES, message)])


def _compile(where: str, pattern: Any, flags: Any) -> re.Pattern[str]:
    if not isinstance(pattern, str) or not pattern or len(pattern) > MAX_PATTERN:
        raise _bad(
            f"{where}: `pattern` must be a regular expression of 1 to {MAX_PATTERN} characters"
        )
    if flags is None:
        flags = ""
    if not isinstance(flags, str) or any(f not in _FLAGS for f in flags):
        raise _bad(f"{where}: `flags` must be a string of `i`, `m` and `s`")
    bits = 0
    for f in flags:
        bits |= _FLAGS[f]
    try:
        return re.compile(pattern, bits)
    except (re.error, RecursionError, OverflowError) as exc:
        raise _bad(f"{where}: `pattern` is not a valid regular expression: {exc}") from None


def _rule(i: int, obj: Any) -> Rule:
    where = f"rule {i + 1}"
    if not isinstance(obj, dict):
        raise _bad(f"{where} must be an object")
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        raise _bad(f"{where}: `name` must be a non-empty string")
    where = f"rule `{name}`"
    pattern = _compile(where, obj.get("pattern"), obj.get("flags"))
    n = pattern.groups
    if not 1 <= n <= MAX_GROUPS:
        raise _bad(
            f"{where}: `pattern` must have one capture group, or one per value it reads"
            f" (at most {MAX_GROUPS})"
        )
    atom = obj.get("atom")
    if not isinstance(atom, str) or not _MEMBER.fullmatch(atom):
        raise _bad(f"{where}: `atom` must be an atom or family name")
    member = _member(where, obj.get("member"), n)
    values = _per_group(where, "values", obj.get("values", "text"), n)
    if any(v not in VALUES_MODES for v in values):
        raise _bad(f"{where}: `values` must be `text` or `numbers`")
    value = obj.get("value", "TRUE")
    if value not in ("TRUE", "FALSE"):
        raise _bad(f"{where}: `value` must be `TRUE` or `FALSE`")
    confidence = obj.get("confidence")
    if not _unit(confidence):
        raise _bad(f"{where}: `confidence` must be a number from 0 to 1")
    case = _per_group(where, "case", obj.get("case"), n)
    if any(c not in (None, "lower", "upper") for c in case):
        raise _bad(f"{where}: `case` must be `lower` or `upper`")
    mapping = _per_group(where, "map", obj.get("map"), n)
    if not all(
        m is None or (isinstance(m, dict) and all(isinstance(v, str) for v in m.values()))
        for m in mapping
    ):
        raise _bad(f"{where}: `map` must map captured values to member names")
    unless = obj.get("unless_before")
    unless_re = None if unless is None else _compile(f"{where} `unless_before`", unless, "i")
    doubt = obj.get("doubt")
    doubt_re, doubt_conf = None, 0.0
    if doubt is not None:
        if not isinstance(doubt, dict) or not _unit(doubt.get("confidence")):
            raise _bad(f'{where}: `doubt` must be {{"pattern": …, "confidence": 0 to 1}}')
        doubt_re = _compile(f"{where} `doubt`", doubt.get("pattern"), "i")
        doubt_conf = float(doubt["confidence"])
    summary = obj.get("summary", "")
    return Rule(
        name=name,
        pattern=pattern,
        atom=atom,
        member=member,
        values=values,
        value=value,
        confidence=float(confidence),
        case=case,
        mapping=mapping,
        unless_before=unless_re,
        doubt=doubt_re,
        doubt_confidence=doubt_conf,
        summary=summary if isinstance(summary, str) else "",
    )


def _member(where: str, member: Any, groups: int) -> tuple[str, ...] | None:
    """The member templates, one per place: ``"s{}"`` for a family over one domain, or a
    list such as ``["{1}", "p{2}"]`` over several, where ``{N}`` is the N-th captured
    value; every group must be used (a rule with one group may leave it out: a plain atom)."""
    if member is None:
        if groups > 1:
            raise _bad(
                f"{where}: `pattern` has {groups} capture groups, so `member` must place each,"
                ' as in `["{1}", "p{2}"]`'
            )
        return None
    templates = [member] if isinstance(member, str) else member
    if (
        not isinstance(templates, list)
        or not templates
        or not all(isinstance(t, str) and _PLACEHOLDER.search(t) for t in templates)
    ):
        raise _bad(
            f"{where}: `member` must be a string containing `{{}}`, or a list of such"
            " strings, one per place of the family"
        )
    used = {int(m.group(1) or 1) for t in templates for m in _PLACEHOLDER.finditer(t)}
    if used != set(range(1, groups + 1)):
        wanted = ", ".join(f"`{{{k}}}`" for k in range(1, groups + 1))
        raise _bad(f"{where}: `member` must use each capture group once at least: {wanted}")
    if groups > 1 and any("{}" in t for t in templates):
        raise _bad(f"{where}: with several capture groups `member` names each as `{{1}}`, …")
    return tuple(templates)


def _per_group(where: str, key: str, value: Any, groups: int) -> tuple[Any, ...]:
    """An option given once for every capture group, or as a list with one per group."""
    if isinstance(value, list):
        if len(value) != groups:
            raise _bad(f"{where}: `{key}` as a list must have one entry per capture group")
        return tuple(value)
    return (value,) * groups


def _unit(x: Any) -> TypeGuard[float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and 0.0 <= x <= 1.0


@dataclass(frozen=True)
class RuleSet:
    source: str
    rules: tuple[Rule, ...] = field(default_factory=tuple)
    name: str = "judge-rules"  # with the version, what `by.name` says made a proposal
    version: int = 1


def parse_rules(obj: Any) -> RuleSet:
    """A validated rule set from a rule file's JSON (raises ``UnmaskError``)."""
    if not isinstance(obj, dict):
        raise _bad("a rule file must be a JSON object")
    if obj.get("schema") != SCHEMA:
        raise _bad(f'a rule file must have `"schema": "{SCHEMA}"`')
    source = obj.get("source", "rationale")
    if source not in ("rationale", "trace"):
        raise _bad("`source` must be `rationale` or `trace`")
    name = obj.get("name", "judge-rules")
    if not isinstance(name, str) or not _RULESET_NAME.fullmatch(name):
        raise _bad("`name` must be a short name of letters, digits, `.`, `_` and `-`")
    version = obj.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise _bad("`version` must be a whole number from 1")
    rules = obj.get("rules")
    if not isinstance(rules, list) or not rules or len(rules) > MAX_RULES:
        raise _bad(f"`rules` must be a list of 1 to {MAX_RULES} rules")
    parsed = tuple(_rule(i, r) for i, r in enumerate(rules))
    names = [r.name for r in parsed]
    for n in names:
        if names.count(n) > 1:
            raise _bad(f"two rules are named `{n}`")
    return RuleSet(source, parsed, name, version)


def load_rules(path: str | Path, *, beside: bool = False) -> RuleSet:
    """Read and validate a rule file (raises ``UnmaskError`` with one clear message).

    ``beside``: the file was found beside a replay's protocol, not named by the user, so it
    is read as a side file (``unmask.plumbing.files``): never through a link, from its own folder.
    """
    from unmask.plumbing.files import read_text

    p = Path(path)
    bound = Limits(max_file_bytes=MAX_RULES_BYTES)
    try:
        text = read_text(p, bound, follow=not beside, inside=p.parent if beside else None)
    except UnmaskError as exc:
        d = exc.diagnostics[0]
        if d.code == Code.LIMIT:
            raise _bad(f"rule file `{p}` is larger than 1 MB") from None
        if d.code == Code.ENCODING:
            raise _bad(f"rule file `{p}` is not UTF-8 text") from None
        reason = d.message.split(": ", 1)[1] if d.message.startswith("cannot read") else None
        if reason is not None:
            raise _bad(f"cannot read rule file `{p}`: {reason}") from None
        raise _bad(f"rule file: {d.message}") from None
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _bad(f"rule file `{p}` is not valid JSON: {exc}") from None
    return parse_rules(obj)


def rules_for(protocol_path: str | Path) -> Path:
    """Where the rule file of a protocol lives: ``wice.proto`` → ``wice.judge.json``."""
    p = Path(protocol_path)
    return p.with_name(p.stem + ".judge.json")


class TooLarge(ValueError):
    """A rationale the rules would take too long to read (``MAX_HITS``, ``MAX_SCAN``)."""


def _too_large(what: str) -> str:
    return f"the rationale is too large to propose for: {what}"


@frozen
class Hit:
    """One thing a rule found: the atom, the captured values (joined by `, `), its confidence
    and its span."""

    rule: Rule
    atom: str
    captured: str
    confidence: float
    span: Quoted


class JudgeRules(Proposer):
    """Propose judge atoms from a rationale with the rules of one rule file."""

    name, kind, version = "judge-rules", "rule", 1
    fills = (JUDGE_RATIONALE,)
    summary = "what the rationale cites and asserts, by the patterns of a rule file; no model"

    def __init__(self, rules: RuleSet | None = None, max_chars: int = MAX_CHARS) -> None:
        self.ruleset = rules if rules is not None else parse_rules(WICE_RULES)
        self.max_chars = max_chars

    @property
    def source(self) -> str:
        return self.ruleset.source

    @property
    def by(self) -> By:
        """The rule file's name and version: proposals say which file made them."""
        return By(self.kind, f"{self.ruleset.name}/{self.ruleset.version}")

    def matches(self, text: str) -> list[Hit]:
        """Everything the rules find, rule by rule in file order, before any threshold.

        Linear in the matches: sentences are found by bisection and each span's quote is
        made once. Raises ``TooLarge`` for a text longer than ``max_chars``, past
        ``MAX_HITS`` matches or past ``MAX_SCAN`` characters read around them
        (``unless_before`` and ``doubt``), rather than run for minutes.
        """
        if len(text) > self.max_chars:
            raise TooLarge(_too_large(f"more than {self.max_chars:,} characters"))
        sentences = _sentences(text)
        starts = [a for a, _ in sentences]
        spans: dict[tuple[int, int], Quoted] = {}  # one quote per span, however many hits
        found: list[Hit] = []
        scanned = 0
        for rule in self.ruleset.rules:
            for m in rule.pattern.finditer(text):
                groups, group = m.groups(), 1
                if None in groups or m.end() == m.start():
                    continue  # a group that took no part reads nothing
                k = bisect.bisect_right(starts, m.start(group)) - 1
                if k >= 0 and m.start(group) < sentences[k][1]:
                    s_start, s_end = sentences[k]
                else:
                    s_start, s_end = m.start(), m.end()
                if rule.unless_before is not None:
                    scanned += m.start() - s_start
                    if scanned > MAX_SCAN:
                        raise TooLarge(_too_large(f"more than {MAX_SCAN:,} characters to read"))
                    if rule.unless_before.search(text[s_start : m.start()]):
                        continue
                confidence = rule.confidence
                if rule.doubt is not None:
                    # the hedge may follow in the next sentence ("… However, it cannot be
                    # confirmed that …"), so look one sentence further
                    j = bisect.bisect_left(starts, s_end)
                    window_end = sentences[j][1] if j < len(sentences) else s_end
                    scanned += window_end - s_start
                    if scanned > MAX_SCAN:
                        raise TooLarge(_too_large(f"more than {MAX_SCAN:,} characters to read"))
                    if rule.doubt.search(text[s_start:window_end]):
                        confidence = min(confidence, rule.doubt_confidence)
                # the quote: the rationale sentence holding the match (what the reviewer
                # reads), or the match itself where it crosses sentences
                a, b = (s_start, s_end) if s_start <= m.start() and m.end() <= s_end else m.span()
                span = spans.get((a, b))
                if span is None:
                    span = spans[a, b] = Quoted(a, b, text[a:b])
                captured = ", ".join(groups)
                for atom in rule.members(*groups):
                    found.append(Hit(rule, atom, captured, confidence, span))
                if len(found) > MAX_HITS:
                    raise TooLarge(_too_large(f"more than {MAX_HITS:,} rule matches"))
        return found

    def propose(self, text: str, threshold: float = 0.5) -> list[Proposal]:
        """One proposal per atom at or above ``threshold``, in order of first appearance."""
        by_atom: dict[str, list[tuple[Rule, float, Quoted]]] = {}
        for h in self.matches(text):
            by_atom.setdefault(h.atom, []).append((h.rule, h.confidence, h.span))
        out = []
        for atom, hits in by_atom.items():
            kept = [(r, c, s) for r, c, s in hits if c >= threshold]
            if not kept:
                continue
            values = {r.value for r, _, _ in kept}
            if len(values) > 1:
                continue  # rules disagree on this atom: abstain
            spans = tuple(sorted({s.start: s for _, _, s in kept}.values(), key=lambda s: s.start))
            out.append(
                Proposal(
                    atom=atom,
                    value=values.pop(),
                    confidence=round(max(c for _, c, _ in kept), 4),
                    spans=spans,
                    rules=tuple(dict.fromkeys(r.name for r, _, _ in kept)),
                )
            )
        return out

    def annotations(self, text: str, threshold: float = 0.5) -> list[dict]:
        """The proposals as replay annotations (with ``by`` and ``confidence``)."""
        by = self.by.to_json()
        return [
            {
                "atom": p.atom,
                "value": p.value,
                "evidence": [s.to_json(self.source) for s in p.spans],
                "explanation": "proposed by rule " + ", ".join(f"`{r}`" for r in p.rules),
                "confidence": p.confidence,
                "by": by,
            }
            for p in self.propose(text, threshold)
        ]
