"""The `promptfoo` importer: `promptfoo eval -o results.json` (or `-o results.jsonl`) output,
one replay per row.

Contract: reads ``results.results`` (one row per test case × prompt × provider), or one row
a line from a ``.jsonl`` file (the same replays); each row with a grading result becomes a
replay of ``protocols/promptfoo.proto`` whose domain ``assertion`` holds the row's top-level
component results (``a0``, ``a1``, … in file order; a metric-only assertion, which promptfoo
leaves out of pass and score, is left out too, and so are an assert-set's children, which
0.121.x lists flat beside the set). The rationale is a fixed rendering of the grading result
(documented in ``docs/importers.md``) so that every annotation quotes it. Values are derived
by rule and only where the row says them: ``thresholded`` from the test case's
``threshold``, which promptfoo writes there as the test ran (its own, else ``defaultTest``'s;
FALSE only where a test case is there without one and the file's ``config.defaultTest`` sets
none; UNKNOWN without a test case), ``passed`` from each component's ``pass``,
``score_says`` from its score read by its assertion type's rule (``BINARY``: the score is
pass ? 1 : 0 and a threshold limits a measured value; ``AT_LEAST``: pass needs score ≥
threshold), never for a type whose rule is not known (one ``Note`` per file says so),
``has_property`` for `contains` and `icontains` by searching the response and for `cost`
and `latency` from the row's own measurements (rendered as the ``context`` source);
everything else stays unannotated. Rows without a grading result, with a malformed field, or
using guardrails (whose pass rule this protocol does not state) are skipped with the reason.
Settings the file records are read as it records them (an assertion's ``weight: 0`` leaves it
out; a rendered template value is the value; an assertion's own ``transform`` or a custom
``assertScoringFunction`` leaves what it decides UNKNOWN), each said once per file; the other
exports (CSV, HTML, YAML, XML) are refused by name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from unmask.importers import (
    PROTOCOLS,
    Imported,
    Note,
    Occurrences,
    Options,
    Skipped,
    build,
    is_number,
    not_the_format,
    num,
    read_array,
    rule_by,
    tf,
)
from unmask.importers.jsonlines import BadLine, jsonl_records
from unmask.plumbing.jsonload import show
from unmask.replay.builder import ReplayBuilder

NAME = "promptfoo"
PROTOCOL = PROTOCOLS / "promptfoo.proto"
# promptfoo's own rules for these differ from "all components pass"; not stated here yet
UNSUPPORTED = ("guardrails",)
# How each assertion type's handler (promptfoo 0.121.20, `src/assertions/*`) sets score and
# pass, so that a score is read by its type's rule and no other:
# - BINARY: the score is `pass ? 1 : 0`; a threshold there limits a measured value (latency,
#   cost, Levenshtein distance, perplexity), never the score. `not-X` inverts pass and score
#   alike, so it reads the same.
# - AT_LEAST: the assertion cannot pass with a score below its threshold (the handler's
#   default when the assertion sets none, where it has one); `llm-rubric` with a threshold
#   passes when the grader says pass *and* the score reaches it (promptfoo issue 2998).
# A type in neither is not checked, and the import says so once per file.
BINARY = frozenset(
    {
        "contains", "contains-all", "contains-any", "contains-html", "contains-json",
        "contains-sql", "cost", "equals", "finish-reason", "icontains", "icontains-all",
        "icontains-any", "is-html", "is-json", "is-sql", "is-xml", "latency", "levenshtein",
        "perplexity", "regex", "starts-with", "word-count",
    }
)  # fmt: skip
AT_LEAST: dict[str, float | None] = {
    "assert-set": None,  # a set passes when its weighted score reaches its threshold
    "llm-rubric": None,
    "javascript": None,
    "python": None,
    "similar": 0.75,
    "bleu": 0.5,
    "gleu": 0.5,
    "rouge-n": 0.75,
}
_EPSILON = 2.220446049250313e-16  # promptfoo compares `score >= threshold - Number.EPSILON`


def _assertion(c: dict) -> dict:
    """The component's assertion, or an empty one when it is missing or not an object."""
    a = c.get("assertion")
    return a if isinstance(a, dict) else {}


# the other files `promptfoo eval -o` writes: none keeps what the JSON keeps of each assertion
# (CSV and HTML keep a row's pass and reason; YAML and XML the same tree, unread here)
OTHER_OUTPUTS = {
    ".csv": "a promptfoo CSV export, which keeps each test's pass and reason but no assertion"
    " results",
    ".html": "a promptfoo HTML report",
    ".htm": "a promptfoo HTML report",
    ".yaml": "a promptfoo YAML export",
    ".yml": "a promptfoo YAML export",
    ".xml": "a promptfoo XML export",
}
EXPORT_HELP = "write one with `promptfoo eval -o results.json` (or `-o results.jsonl`)"


def read(path: Path, options: Options) -> Iterator[Imported | Skipped | Note]:
    file = str(path)
    what = OTHER_OUTPUTS.get(path.suffix.lower())
    if what is not None and path.exists():  # a name mistyped is read, and said missing
        raise not_the_format(file, f"not read: {what}", help=f"import its JSON: {EXPORT_HELP}")
    proto = PROTOCOL.read_text(encoding="utf-8")
    seen = _Seen()
    if path.suffix == ".jsonl":  # `promptfoo eval -o results.jsonl`: one row a line
        # a first line that is not JSON: not a promptfoo JSON Lines file
        lines = jsonl_records(path, options.limits, bad="first")
        for i, (n, row) in enumerate(lines):
            yield _row(proto, file, f"{file}:{n}", i, row, options, seen, False, None)
    else:
        doc, rows = read_array(
            path, options, "results.results", "a promptfoo results file", help=EXPORT_HELP
        )
        suite = _suite_threshold(doc)
        scoring = _scoring_functions(doc)
        for i, row in enumerate(rows):
            where = f"{file}: results.results[{i}]"
            yield _row(proto, file, where, i, row, options, seen, suite, scoring)
    yield from seen.notes(file)


class _Seen:
    """What a file's rows showed that the import must say once per file."""

    def __init__(self) -> None:
        self.unread: set[str] = set()  # assertion types whose score rule is not known
        self.weightless = 0  # `weight: 0` assertions left out
        self.unrendered = 0  # templated values the file does not give rendered
        self.transformed = 0  # assertions checked against a transform of the output
        self.custom = 0  # rows whose pass a custom scoring function decided
        self.unsure = 0  # rows where nobody can say whether one did

    def notes(self, file: str) -> Iterator[Note]:
        if self.unread:
            names = ", ".join(f"`{show(k)}`" for k in sorted(self.unread))
            yield Note(
                file,
                f"assertion type{'s' if len(self.unread) > 1 else ''} {names}: how the score and"
                " threshold say pass is not known to Unmask, so those scores were not checked",
            )
        for count, message in (
            (
                self.weightless,
                "assertion(s) with `weight: 0` left out: promptfoo counts them as passed"
                " whatever they find, and out of the test's score",
            ),
            (
                self.unrendered,
                "assertion value(s) hold a `{{…}}` template the file does not give rendered:"
                " what the response must contain was not checked",
            ),
            (
                self.transformed,
                "assertion(s) ran on a `transform` of the output, which the file does not"
                " keep: whether the response has their property was not checked",
            ),
            (
                self.custom,
                "row(s) passed or failed by a custom `assertScoringFunction` (the file's"
                " config names it): whether a threshold decided them is left unknown",
            ),
            (
                self.unsure,
                "row(s) give a grading reason that is not promptfoo's own, and the file keeps"
                " no config to say whether a custom `assertScoringFunction` decided them:"
                " whether a threshold decided them is left unknown",
            ),
        ):
            if count:
                yield Note(file, f"{count} {message}")


def _scoring_functions(doc: Any) -> tuple[bool, list[bool] | None]:
    """Whether the file's config sets a custom ``assertScoringFunction`` for every test
    (``defaultTest``), and for each test of ``config.tests`` by index (None when the tests
    are not in the file, read from elsewhere)."""
    config = doc.get("config") if isinstance(doc, dict) else None
    if not isinstance(config, dict):
        return False, None
    default = config.get("defaultTest")
    every = isinstance(default, dict) and default.get("assertScoringFunction") is not None
    tests = config.get("tests")
    if not isinstance(tests, list):
        return every, None
    return every, [
        isinstance(t, dict) and t.get("assertScoringFunction") is not None for t in tests
    ]


def _own_reason(gr: dict, comps: list) -> bool:
    """Whether a grading result's reason is one promptfoo's own aggregation writes: all
    passed, an aggregate score against a threshold, or a failed assertion's reason."""
    reason = gr.get("reason")
    if not isinstance(reason, str):
        return False
    if reason in ("All assertions passed", "No assertions") or reason.startswith(
        "Aggregate score "
    ):
        return True
    return any(isinstance(c, dict) and c.get("reason") == reason for c in comps)


def _custom_scoring(row: dict, scoring: tuple[bool, list[bool] | None] | None) -> bool | None:
    """True when the config names a custom scoring function for this row's test, False
    when it shows there is none, None when the file cannot say."""
    if scoring is None:
        return None
    every, per_test = scoring
    if every:
        return True
    idx = row.get("testIdx")
    if per_test is None or not isinstance(idx, int) or not 0 <= idx < len(per_test):
        return None
    return per_test[idx]


def _suite_threshold(doc: Any) -> bool:
    """Whether the file's own ``config.defaultTest`` sets a threshold (of any value)."""
    config = doc.get("config") if isinstance(doc, dict) else None
    default = config.get("defaultTest") if isinstance(config, dict) else None
    return isinstance(default, dict) and default.get("threshold") is not None


def _row(
    proto: str,
    file: str,
    where: str,
    i: int,
    row: Any,
    options: Options,
    seen: _Seen,
    suite_threshold: bool,
    scoring: tuple[bool, list[bool] | None] | None,
) -> Imported | Skipped:
    if isinstance(row, BadLine):
        return Skipped(where, row.reason)
    if not isinstance(row, dict):
        return Skipped(where, f"expected a result object, found `{show(row)}`")
    gr = row.get("gradingResult")
    if not isinstance(gr, dict):
        return Skipped(f"{where}.gradingResult", "no grading result: the row was not graded")
    success = row.get("success")
    if not isinstance(success, bool):
        return Skipped(f"{where}.success", f"expected true or false, found `{show(success)}`")
    comps = gr.get("componentResults")
    if not isinstance(comps, list) or not comps:
        return Skipped(f"{where}.gradingResult.componentResults", "no assertion results to check")
    members: list[tuple[str, dict, str]] = []  # (member, component, assertion type)
    children: set[int] = set()  # an assert-set's children, listed flat beside it
    for j, c in enumerate(comps):
        cw = f"{where}.gradingResult.componentResults[{j}]"
        if j in children:
            continue
        if not isinstance(c, dict):
            return Skipped(cw, f"expected an assertion result, found `{show(c)}`")
        assertion = _assertion(c)
        kind = assertion.get("type")
        kind = kind if isinstance(kind, str) else "unknown"
        meta = c.get("metadata")
        the_set = meta.get("assertionSet") if isinstance(meta, dict) else None
        if isinstance(the_set, dict) or kind == "assert-set":
            kind = "assert-set"
            flat = _set_children(c, comps, j)
            if flat is None:
                return Skipped(cw, "an assert-set whose children are not listed beside it")
            children.update(flat)
        if kind in UNSUPPORTED:
            return Skipped(f"{cw}.assertion.type", f"`{kind}` assertions are not imported yet")
        if assertion.get("metricOnly") is True:
            continue
        if is_number(assertion.get("weight")) and assertion["weight"] == 0:
            seen.weightless += 1  # passed whatever it finds (promptfoo's runAssertion)
            continue
        if not isinstance(c.get("pass"), bool):
            return Skipped(f"{cw}.pass", f"expected true or false, found `{show(c.get('pass'))}`")
        members.append((f"a{j}", c, kind))
    if not members:
        return Skipped(f"{where}.gradingResult.componentResults", "only metric-only assertions")

    test = row.get("testCase") if isinstance(row.get("testCase"), dict) else None
    threshold = test.get("threshold") if test and is_number(test.get("threshold")) else None
    # promptfoo writes the test case as it ran it, its threshold `testCase.threshold ??
    # defaultTest.threshold` (0.121.20 seen writing it so, in tests/data/importers/
    # promptfoo-0.121.20-threshold/; the same merge in every older evaluator source read),
    # and runs one without a threshold unthresholded: a test case there without `threshold`
    # is FALSE. Without a test case, with a threshold that is not a number, or where the file's
    # own `config.defaultTest` sets one the test case lacks (not as promptfoo writes it),
    # nobody can say, and it stays UNKNOWN.
    says_threshold = test is not None and (
        threshold is not None or ("threshold" not in test and not suite_threshold)
    )
    score = gr.get("score") if is_number(gr.get("score")) else None
    # who decided pass: promptfoo's own rule (all pass, or the threshold), or a custom
    # `assertScoringFunction` the config names; where the file keeps no config (JSON Lines,
    # tests read from another file), a grading reason of promptfoo's own says it was its rule
    custom = _custom_scoring(row, scoring)
    rule_known = custom is False or (custom is None and _own_reason(gr, comps))
    if custom:
        seen.custom += 1
    elif not rule_known:
        seen.unsure += 1

    # the rationale: one line for the test case, then one header and reason per assertion
    head = (
        f"test case: success={tf(success)} score={num(score) if score is not None else 'none'}"
        f" threshold={num(threshold) if threshold is not None else 'none'}"
    )
    lines = [head]
    headers: dict[str, tuple[str, int]] = {}
    offset = len(head) + 1
    for m, c, kind in members:
        cs = c.get("score")
        ct = _threshold(c)
        if is_number(cs) and _reading(kind) is None:
            seen.unread.add(kind)
        h = (
            f"[{m}] {kind}: pass={tf(c['pass'])}"
            f" score={num(cs) if is_number(cs) else 'none'}"
            f" threshold={num(ct) if is_number(ct) else 'none'}"
        )
        headers[m] = (h, offset)
        reason = c.get("reason") if isinstance(c.get("reason"), str) else ""
        block = f"{h}\n    reason: {reason}"
        lines.append(block)
        offset += len(block) + 1
    rationale = "\n".join(lines)

    output = (
        (row.get("response") or {}).get("output") if isinstance(row.get("response"), dict) else None
    )
    sources = {"rationale": rationale}
    if isinstance(output, str) and output:
        sources["response"] = output
    asked = []
    for m, c, kind in members:
        value = _value(c)
        asked.append(f"[{m}] {kind}" + (f": {value}" if isinstance(value, str) else ""))
    sources["protocol"] = "\n".join(asked)
    # what promptfoo measured itself, for the cost and latency assertions' grounding
    measured = {k: row[k] for k in ("cost", "latencyMs") if is_number(row.get(k))}
    if measured:
        sources["context"] = "\n".join(f"{k}={num(v)}" for k, v in measured.items())

    stem = (
        f"t{row['testIdx']}-p{row['promptIdx']}"
        if isinstance(row.get("testIdx"), int) and isinstance(row.get("promptIdx"), int)
        else f"r{i}"
    )
    rid = row["id"] if isinstance(row.get("id"), str) and row["id"] else f"{file}#{i}"

    occurrences = Occurrences(rationale)
    checkable = {m: _checkable(c, kind, seen) for m, c, kind in members}

    def make() -> ReplayBuilder:
        b = ReplayBuilder(
            proto,
            sources=sources,
            verdict="PASS" if success else "FAIL",
            id=rid,
            domains={"assertion": [m for m, _, _ in members]},
            limits=options.limits,
        )
        by = rule_by(NAME)
        if says_threshold and rule_known:
            b.annotate(
                "thresholded",
                threshold is not None,
                quote=head,
                by=by,
                explanation="the test case sets a threshold"
                if threshold is not None
                else "the test case ran without a threshold (promptfoo writes `defaultTest`'s"
                " into it; its default: none)",
            )
        if threshold is not None and score is not None and rule_known:
            b.annotate(
                "reaches_threshold",
                score >= threshold,
                quote=head,
                by=by,
                explanation=f"score {num(score)} {'≥' if score >= threshold else '<'} "
                f"threshold {num(threshold)}",
            )
        for m, c, kind in members:
            h, at = headers[m]
            occ = occurrences.at(h, at)
            b.annotate(f"passed({m})", c["pass"], quote=h, occurrence=occ, by=by)
            says = _score_says(c, kind)
            if says is not None:
                b.annotate(
                    f"score_says({m})",
                    says[0],
                    quote=h,
                    occurrence=occ,
                    by=by,
                    explanation=says[1],
                )
            prop = _has_property(kind, _value(c), output) if checkable[m] else None
            if prop is None:
                prop = _measured(kind, _assertion(c).get("threshold"), measured)
            if prop is not None:
                value, quote, why = prop
                where_from = "response" if kind in ("contains", "icontains") else "context"
                b.annotate(
                    f"has_property({m})",
                    value,
                    quote=quote,
                    source=where_from,
                    occurrence=0,
                    by=by,
                    explanation=why,
                )
        return b

    return build(where, stem, make)


def _value(c: dict) -> Any:
    """The assertion's value as it ran: the rendered one promptfoo records when rendering
    changed it (``metadata.renderedAssertionValue``), else the value as written."""
    meta = c.get("metadata")
    rendered = meta.get("renderedAssertionValue") if isinstance(meta, dict) else None
    return rendered if isinstance(rendered, str) else _assertion(c).get("value")


def _checkable(c: dict, kind: str, seen: _Seen) -> bool:
    """Whether the response the file keeps is what a `contains` assertion looked at, and
    its value what it looked for: not after a `transform` of its own (the file keeps the
    output before it), nor a template left unrendered. Counted for the file's notes."""
    if kind not in ("contains", "icontains"):
        return True
    if _assertion(c).get("transform") is not None:
        seen.transformed += 1
        return False
    value = _value(c)
    if isinstance(value, str) and "{{" in value and "}}" in value:
        seen.unrendered += 1
        return False
    return True


def _threshold(c: dict) -> Any:
    """The threshold the assertion (or, for an assert-set, the set) was given."""
    t = _assertion(c).get("threshold")
    meta = c.get("metadata")
    the_set = meta.get("assertionSet") if isinstance(meta, dict) else None
    if t is None and isinstance(the_set, dict):
        t = the_set.get("threshold")
    return t


def _set_children(c: dict, comps: list, j: int) -> list[int] | None:
    """Where an assert-set's children are listed flat after it: the entries right after it
    that equal its own ``componentResults`` (0.121.x); [] when it lists none; None when the
    children it lists are not there (the row is then not read)."""
    own = c.get("componentResults")
    if own is None:
        return []
    if not isinstance(own, list):
        return None
    after = comps[j + 1 : j + 1 + len(own)]
    if after != own:
        return [] if not own else None
    return list(range(j + 1, j + 1 + len(own)))


def _reading(kind: str) -> tuple[str, float | None] | None:
    """How ``kind``'s score says pass: ("binary", None), ("at-least", default), or None."""
    if kind in BINARY or (kind.startswith("not-") and kind[4:] in BINARY):
        return "binary", None
    if kind in AT_LEAST:
        return "at-least", AT_LEAST[kind]
    return None


def _score_says(c: dict, kind: str) -> tuple[bool, str] | None:
    s = c.get("score")
    if not is_number(s):
        return None
    reading = _reading(kind)
    if reading is None:
        return None  # a type whose rule is not known: not checked (one note per file)
    t = _threshold(c)
    if reading[0] == "at-least":
        if not is_number(t):
            t = reading[1]
        if t is not None:
            ok = s >= t - _EPSILON
            return ok, f"`{kind}` passes only at score ≥ threshold: {num(s)} " + (
                f"≥ {num(t)}" if ok else f"< {num(t)}"
            )
    if s == 1:
        return True, f"`{kind}` scores 1 for a pass"
    if s == 0:
        return False, f"`{kind}` scores 0 for a fail"
    return None


def _has_property(kind: str, value: Any, output: Any) -> tuple[bool, str, str] | None:
    if kind not in ("contains", "icontains") or not isinstance(value, str) or not value:
        return None
    if not isinstance(output, str) or not output:
        return None
    if kind == "contains":
        i = output.find(value)
    else:
        low, v = output.lower(), value.lower()
        if len(low) != len(output) or len(v) != len(value):
            return None  # lower-casing changed lengths: offsets would not line up
        i = low.find(v)
    if i >= 0:
        quote = output[i : i + len(value)]
        # the first occurrence of that exact slice is at i or earlier: either shows it
        return True, quote, f"the response contains `{value}`"
    return False, output, f"the response does not contain `{value}`"


def _measured(kind: str, threshold: Any, measured: dict) -> tuple[bool, str, str] | None:
    """`cost` and `latency` pass when the measured value is at most the threshold."""
    key = {"cost": "cost", "latency": "latencyMs"}.get(kind)
    if key is None or key not in measured or not is_number(threshold):
        return None
    v = measured[key]
    ok = v <= threshold
    return ok, f"{key}={num(v)}", f"{key} {num(v)} {'≤' if ok else '>'} threshold {num(threshold)}"
