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
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from unmask.builder import ReplayBuilder
from unmask.importers import (
    PROTOCOLS,
    Imported,
    Note,
    Occurrences,
    Options,
    Skipped,
    build,
    is_number,
    num,
    read_array,
    rule_by,
    tf,
)
from unmask.importers.jsonlines import BadLine, jsonl_records
from unmask.jsonload import show

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


def read(path: Path, options: Options) -> Iterator[Imported | Skipped | Note]:
    file = str(path)
    proto = PROTOCOL.read_text(encoding="utf-8")
    unread: set[str] = set()
    if path.suffix == ".jsonl":  # `promptfoo eval -o results.jsonl`: one row a line
        # a first line that is not JSON: not a promptfoo JSON Lines file
        lines = jsonl_records(path, options.limits, bad="first")
        for i, (n, row) in enumerate(lines):
            yield _row(proto, file, f"{file}:{n}", i, row, options, unread, False)
    else:
        doc, rows = read_array(
            path,
            options,
            "results.results",
            "a promptfoo results file",
            help="write one with `promptfoo eval -o results.json` (or `-o results.jsonl`)",
        )
        suite = _suite_threshold(doc)
        for i, row in enumerate(rows):
            where = f"{file}: results.results[{i}]"
            yield _row(proto, file, where, i, row, options, unread, suite)
    if unread:
        names = ", ".join(f"`{show(k)}`" for k in sorted(unread))
        yield Note(
            file,
            f"assertion type{'s' if len(unread) > 1 else ''} {names}: how the score and"
            " threshold say pass is not known to Unmask, so those scores were not checked",
        )


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
    unread: set[str],
    suite_threshold: bool,
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
        kind = assertion.get("type") if isinstance(assertion.get("type"), str) else "unknown"
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
            unread.add(kind)
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
        value = _assertion(c).get("value")
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
        if says_threshold:
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
        if threshold is not None and score is not None:
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
            prop = _has_property(kind, _assertion(c).get("value"), output)
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
