"""The `promptfoo` importer: `promptfoo eval -o results.json` output, one replay per row.

Contract: reads ``results.results`` (one row per test case × prompt × provider); each row
with a grading result becomes a replay of ``protocols/promptfoo.proto`` whose domain
``assertion`` holds the row's component results (``a0``, ``a1``, … in file order; a
metric-only assertion, which promptfoo leaves out of pass and score, is left out too). The
rationale is a fixed rendering of the grading result (documented in ``docs/importers.md``)
so that every annotation quotes it. Values are derived by rule and only where the row says
them: ``thresholded`` from the test case's ``threshold`` (FALSE only where a test case is
there without one, promptfoo's default; UNKNOWN without a test case), ``passed`` from each
component's ``pass``, ``score_says`` from its score and threshold
(without a threshold only the scores 1 and 0 say anything), ``has_property`` for `contains`
and `icontains` by searching the response and for `cost` and `latency` from the row's own
measurements (rendered as the ``context`` source); everything else stays unannotated. Rows without a
grading result, with a malformed field, or using assertion sets or guardrails (whose
pass/fail rules this protocol does not state) are skipped with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from unmask.builder import ReplayBuilder
from unmask.importers import (
    PROTOCOLS,
    Imported,
    Options,
    Skipped,
    build,
    is_number,
    num,
    occurrence_at,
    read_array,
    rule_by,
    tf,
)
from unmask.jsonload import show

NAME = "promptfoo"
PROTOCOL = PROTOCOLS / "promptfoo.proto"
# promptfoo's own rules for these differ from "all components pass"; not stated here yet
UNSUPPORTED = ("assert-set", "guardrails")


def _assertion(c: dict) -> dict:
    """The component's assertion, or an empty one when it is missing or not an object."""
    a = c.get("assertion")
    return a if isinstance(a, dict) else {}


def read(path: Path, options: Options) -> Iterator[Imported | Skipped]:
    file = str(path)
    _, rows = read_array(
        path,
        options,
        "results.results",
        "a promptfoo results file",
        help="write one with `promptfoo eval -o results.json`",
    )
    proto = PROTOCOL.read_text(encoding="utf-8")
    for i, row in enumerate(rows):
        yield _row(proto, file, i, row, options)


def _row(proto: str, file: str, i: int, row: Any, options: Options) -> Imported | Skipped:
    where = f"{file}: results.results[{i}]"
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
    for j, c in enumerate(comps):
        cw = f"{where}.gradingResult.componentResults[{j}]"
        if not isinstance(c, dict):
            return Skipped(cw, f"expected an assertion result, found `{show(c)}`")
        assertion = _assertion(c)
        kind = assertion.get("type") if isinstance(assertion.get("type"), str) else "unknown"
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
    # `thresholded` is FALSE only where the row's test case is there and sets no threshold
    # (promptfoo's own default); without a test case, or with a threshold that is not a
    # number, nobody can say, and it stays UNKNOWN
    says_threshold = test is not None and (threshold is not None or "threshold" not in test)
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
        ct = _assertion(c).get("threshold")
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
                else "the test case sets no threshold (promptfoo's default: none)",
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
            occ = occurrence_at(rationale, h, at)
            b.annotate(f"passed({m})", c["pass"], quote=h, occurrence=occ, by=by)
            says = _score_says(c)
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


def _score_says(c: dict) -> tuple[bool, str] | None:
    s = c.get("score")
    t = _assertion(c).get("threshold")
    if not is_number(s):
        return None
    if is_number(t):
        ok = s >= t
        return ok, f"score {num(s)} {'≥' if ok else '<'} threshold {num(t)}"
    if s == 1:
        return True, "score 1 with no threshold"
    if s == 0:
        return False, "score 0 with no threshold"
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
