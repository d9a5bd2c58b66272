"""The `deepeval` importer: a DeepEval test run (JSON with ``testCases``), one replay per case.

Contract: each entry of ``testCases`` (or ``testRunData.testCases``, as
``.deepeval/.latest_test_run.json`` wraps it) becomes a replay of ``protocols/deepeval.proto``
whose domain ``metric`` holds the case's ``metricsData`` (``m0``, ``m1``, … in file order).
The rationale is a fixed rendering of the metrics (documented in ``docs/importers.md``).
Derived by rule: ``succeeded`` from ``success``; ``score_says`` from ``score`` and
``threshold`` in the metric's direction (at least it for DeepEval's built-in metrics and
for G-Eval; for Bias, Hallucination, Misuse and Toxicity, whose direction changed in 4.x,
the direction every such result in the file agrees with, else unannotated with one note per
file; a metric name Unmask does not know leaves it unannotated, since a custom metric
decides success its own way); ``states_score`` and ``reason_score`` from a reason of the form
DeepEval's templates ask for, "The score is X because …", for the metrics whose template
asks it (``ASKS_SCORE``: they, with a reason, are the domain ``score_reason``); G-Eval's
template says not to quote the score and a custom metric's is not known, so for them no
requirement asks it, and one note per file says so. Conversational test cases are read
too (their turns as the input, the last assistant turn as the response), and so is the
``EvaluationResult`` that ``evaluate()`` returns, saved as JSON (``test_results``, snake
case). A DAG metric's score is not checked, said once per file. Metrics attached to trace
spans are not imported: each is counted as skipped, with why. DeepEval's cache
(``.deepeval-cache.json``) is refused in one message naming it.
"""

from __future__ import annotations

import re
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
    array_at,
    build,
    is_number,
    not_the_format,
    num,
    rule_by,
    tf,
)
from unmask.plumbing.jsonload import show
from unmask.replay.builder import ReplayBuilder

NAME = "deepeval"
PROTOCOL = PROTOCOLS / "deepeval.proto"

# These four succeeded when score <= threshold up to DeepEval 3.x; 4.x scores the share of
# passing verdicts and succeeds when score >= threshold. A run file carries no DeepEval
# version, so their direction is read from the file itself (``file_directions``).
EITHER_WAY = frozenset({"Bias", "Hallucination", "Misuse", "Toxicity"})
# DeepEval's other built-in metrics keep the base rule, score >= threshold
HIGHER_IS_BETTER = frozenset(
    {
        "Answer Relevancy",
        "Argument Correctness",
        "Contextual Precision",
        "Contextual Recall",
        "Contextual Relevancy",
        "Conversation Completeness",
        "Exact Match",
        "Faithfulness",
        "Json Correctness",
        "Knowledge Retention",
        "PII Leakage",
        "Pattern Match",
        "Prompt Alignment",
        "Role Adherence",
        "Summarization",
        "Task Completion",
        "Tool Correctness",
    }
)
# DeepEval 4.3.1's metrics whose reason template asks for "The score is <score> because …"
# (`generate_reason`); the conversational ones are listed though their cases are skipped
ASKS_SCORE = frozenset(
    {
        "Answer Relevancy",
        "Argument Correctness",
        "Audio Glitch",
        "Bias",
        "Contextual Precision",
        "Contextual Recall",
        "Contextual Relevancy",
        "Conversation Completeness",
        "Faithfulness",
        "Hallucination",
        "Knowledge Retention",
        "MCP Task Completion",
        "Misuse",
        "Non-Advice",
        "PII Leakage",
        "Prompt Alignment",
        "Role Adherence",
        "Role Violation",
        "Summarization",
        "Tool Use",
        "Topic Adherence",
        "Toxicity",
        "Transcription Accuracy",
        "Turn Contextual Precision",
        "Turn Contextual Recall",
        "Turn Contextual Relevancy",
        "Turn Faithfulness",
        "Turn Relevancy",
    }
)
ASKS_SCORE_SUFFIXES = (" [DAG]", " [ConversationalDAG]")  # a DAG's verdict node asks it too
DAG_SUFFIXES = ASKS_SCORE_SUFFIXES
_STATED = re.compile(r"\bThe score is (\d+(?:\.\d+)?)\b")


def asks_score(md: dict) -> bool:
    """Whether a metric result's reason can address the score: DeepEval's template for the
    metric asks it to state the score, and there is a reason."""
    name, reason = md.get("name"), md.get("reason")
    if not isinstance(name, str) or not isinstance(reason, str) or not reason:
        return False
    return name in ASKS_SCORE or name.endswith(ASKS_SCORE_SUFFIXES)


def _direction(name: str, directions: dict[str, str | None]) -> str | None:
    if name in EITHER_WAY:
        return directions.get(name)
    # G-Eval and Conversational G-Eval keep DeepEval's base rule (`is_successful`)
    if name in HIGHER_IS_BETTER or name.endswith((" [GEval]", " [Conversational GEval]")):
        return ">="
    return None


def file_directions(cases: list) -> dict[str, str | None]:
    """For each metric whose direction changed between DeepEval versions, the one direction
    that every result of it in the file agrees with (its ``success`` against its score and
    threshold), or None when the file shows none or both: then it is not checked."""
    possible: dict[str, set[str]] = {}
    for case in cases:
        metrics = case.get("metricsData") if isinstance(case, dict) else None
        for md in metrics if isinstance(metrics, list) else ():
            if not isinstance(md, dict) or md.get("name") not in EITHER_WAY:
                continue
            left = possible.setdefault(md["name"], {"<=", ">="})
            score, thr, ok = md.get("score"), md.get("threshold"), md.get("success")
            if is_number(score) and is_number(thr) and isinstance(ok, bool) and score != thr:
                left.discard("<=" if (score <= thr) != ok else "")
                left.discard(">=" if (score >= thr) != ok else "")
    return {name: next(iter(d)) if len(d) == 1 else None for name, d in possible.items()}


# `EvaluationResult.model_dump_json()`: a test result's and a metric's fields in snake case
_CAMEL = {
    "metrics_data": "metricsData",
    "actual_output": "actualOutput",
    "retrieval_context": "retrievalContext",
    "strict_mode": "strictMode",
}


def _camel(result: Any) -> Any:
    """A test result of ``EvaluationResult`` with the run file's field names; its ``index``
    is the run's ``order``."""
    if not isinstance(result, dict):
        return result
    out = {_CAMEL.get(k, k): v for k, v in result.items()}
    if isinstance(out.get("metricsData"), list):
        out["metricsData"] = [
            {_CAMEL.get(k, k): v for k, v in md.items()} if isinstance(md, dict) else md
            for md in out["metricsData"]
        ]
    if "order" not in out and isinstance(out.get("index"), int):
        out["order"] = out["index"]
    return out


def read(path: Path, options: Options) -> Iterator[Imported | Skipped | Note]:
    file = str(path)
    from unmask.plumbing.jsonload import read_json_file

    wrapped = read_json_file(path, options.limits)
    if isinstance(wrapped, dict) and "test_cases_lookup_map" in wrapped:
        raise not_the_format(
            file,
            "a DeepEval cache (`.deepeval-cache.json`) is not imported: it keeps metric"
            " results for reuse across runs, and records neither which run they belong to"
            " nor whether a test case passed",
            help="import the run DeepEval writes beside it, `.deepeval/.latest_test_run.json`",
        )
    proto = PROTOCOL.read_text(encoding="utf-8")
    if isinstance(wrapped, dict) and "test_results" in wrapped:
        # what `evaluate()` returns, saved with `model_dump_json()`: one list, in which a
        # conversational test case is marked `conversational`
        results = array_at(wrapped, path, "test_results", "a DeepEval evaluation result")
        cases = [_camel(r) for r in results]
        directions = file_directions(cases)
        for i, case in enumerate(cases):
            talk = isinstance(case, dict) and case.get("conversational") is True
            yield _case(proto, file, i, case, options, directions, "", "test_results", talk)
        yield from _notes(file, cases)
        return
    # `.deepeval/.latest_test_run.json` wraps the run in `testRunData`
    at = "testRunData.testCases" if isinstance(wrapped, dict) and "testRunData" in wrapped else None
    cases = array_at(wrapped, path, at or "testCases", "a DeepEval test run")
    data = wrapped["testRunData"] if at else wrapped
    prefix = "testRunData." if at else ""
    convo = data.get("conversationalTestCases")
    convo = convo if isinstance(convo, list) else []
    directions = file_directions([*cases, *convo])
    for i, case in enumerate(cases):
        yield _case(proto, file, i, case, options, directions, prefix)
        spans = _span_metrics(case.get("trace")) if isinstance(case, dict) else 0
        if spans:
            yield Skipped(
                f"{file}: {prefix}testCases[{i}].trace",
                f"{spans} metric result{'s' if spans != 1 else ''} on trace spans "
                "(only test-case metrics are imported)",
                count=spans,
            )
    for i, case in enumerate(convo):
        yield _case(
            proto, file, i, case, options, directions, prefix, "conversationalTestCases", True
        )
    yield from _notes(file, [*cases, *convo])


def _metrics_where(cases: list, keep: Any) -> list[str]:
    """The names, sorted, of the file's metric results for which ``keep(result)`` holds."""
    return sorted(
        {
            md["name"]
            for case in cases
            if isinstance(case, dict) and isinstance(case.get("metricsData"), list)
            for md in case["metricsData"]
            if isinstance(md, dict) and isinstance(md.get("name"), str) and keep(md)
        }
    )


def _notes(file: str, cases: list) -> Iterator[Note]:
    """What the file's metrics leave unchecked, said once per file."""
    directions = file_directions(cases)
    dags = _metrics_where(cases, lambda md: md["name"].endswith(DAG_SUFFIXES))
    if dags:
        yield Note(
            file,
            f"{', '.join(f'`{show(n)}`' for n in dags)}: a DAG metric's score is what the"
            " judgements along its graph lead to, and the file keeps them only as a log, so"
            " neither the score nor whether its success agrees with it was checked",
        )
    unknown = _metrics_where(
        cases,
        lambda md: (
            md["name"] not in EITHER_WAY
            and not md["name"].endswith(DAG_SUFFIXES)
            and _direction(md["name"], {}) is None
        ),
    )
    if unknown:
        yield Note(
            file,
            f"{', '.join(f'`{show(n)}`' for n in unknown)}: not a DeepEval metric whose rule"
            " Unmask knows (a custom metric decides success its own way), so whether its"
            " success agrees with its score and threshold was not checked",
        )
    silent = _metrics_where(
        cases, lambda md: not (isinstance(md.get("reason"), str) and md["reason"])
    )
    if silent:
        yield Note(
            file,
            f"{', '.join(f'`{show(n)}`' for n in silent)}: no reason recorded (a metric run"
            " with `include_reason=False`, or one that failed), so whether its reason agrees"
            " with its score was not checked there",
        )
    unasked = _metrics_where(
        cases, lambda md: isinstance(md.get("reason"), str) and md["reason"] and not asks_score(md)
    )
    if unasked:
        names = ", ".join(f"`{show(n)}`" for n in unasked)
        whose = "this metric's reason" if len(unasked) == 1 else "these metrics' reasons"
        yield Note(
            file,
            f"{names}: DeepEval does not ask {whose} to state the score (G-Eval's template"
            " says not to; a custom metric's is not known), so whether a reason states the"
            " reported score was not checked there",
        )
    unread = sorted(name for name, d in directions.items() if d is None)
    if unread:
        names = ", ".join(f"`{show(n)}`" for n in unread)
        yield Note(
            file,
            f"{names}: whether a higher or a lower score succeeds changed between DeepEval"
            " versions and this file does not show which, so those scores were not checked",
        )


def _span_metrics(trace: Any) -> int:
    """How many metric results hang on the spans of a trace (the spans' lists only)."""
    if not isinstance(trace, dict):
        return 0
    n = 0
    for key, spans in trace.items():
        if key.endswith("Spans") and isinstance(spans, list):
            for s in spans:
                md = s.get("metricsData") if isinstance(s, dict) else None
                n += len(md) if isinstance(md, list) else 0
    return n


def _case(
    proto: str,
    file: str,
    i: int,
    case: Any,
    options: Options,
    directions: dict[str, str | None],
    prefix: str = "",
    key: str = "testCases",
    conversational: bool = False,
) -> Imported | Skipped:
    where = f"{file}: {prefix}{key}[{i}]"
    if not isinstance(case, dict):
        return Skipped(where, f"expected a test case object, found `{show(case)}`")
    success = case.get("success")
    if not isinstance(success, bool):
        return Skipped(f"{where}.success", f"expected true or false, found `{show(success)}`")
    metrics = case.get("metricsData")
    if not isinstance(metrics, list) or not metrics:
        return Skipped(f"{where}.metricsData", "no metric results to check")
    for j, md in enumerate(metrics):
        mw = f"{where}.metricsData[{j}]"
        if not isinstance(md, dict):
            return Skipped(mw, f"expected a metric result, found `{show(md)}`")
        if not isinstance(md.get("success"), bool):
            return Skipped(
                f"{mw}.success", f"expected true or false, found `{show(md.get('success'))}`"
            )
        if not isinstance(md.get("name"), str):
            return Skipped(f"{mw}.name", f"expected a metric name, found `{show(md.get('name'))}`")

    head = f"test case: success={tf(success)}"
    blocks = [head]
    offset = len(head) + 1
    headers: list[tuple[str, int, int, dict]] = []  # header, its offset, reason offset, data
    for j, md in enumerate(metrics):
        score, thr = md.get("score"), md.get("threshold")
        h = (
            f"[m{j}] {md['name']}: success={tf(md['success'])}"
            f" score={num(score) if is_number(score) else 'none'}"
            f" threshold={num(thr) if is_number(thr) else 'none'}"
            f" strict={tf(md.get('strictMode') is True)}"
        )
        if isinstance(md.get("error"), str):
            h += f" error={md['error']}"
        reason = md.get("reason") if isinstance(md.get("reason"), str) else ""
        block = f"{h}\n    reason: {reason}"
        headers.append((h, offset, offset + len(h) + len("\n    reason: "), md))
        blocks.append(block)
        offset += len(block) + 1
    rationale = "\n".join(blocks)

    sources = {"rationale": rationale}
    if isinstance(case.get("actualOutput"), str) and case["actualOutput"]:
        sources["response"] = case["actualOutput"]
    ctx = [
        c
        for key in ("context", "retrievalContext")
        if isinstance(case.get(key), list)
        for c in case[key]
        if isinstance(c, str)
    ]
    if ctx:
        sources["context"] = "\n\n".join(ctx)
    if isinstance(case.get("input"), str) and case["input"]:
        sources["protocol"] = case["input"]
    if conversational:
        sources.update(_turns(case.get("turns")))
    name = case.get("name") if isinstance(case.get("name"), str) else None
    order = case.get("order") if isinstance(case.get("order"), int) else i
    stem = f"{order:04d}-{name}" if name else f"{order:04d}"
    if conversational:  # named apart from the run's single-turn cases of the same order
        stem = f"conversation-{stem}"

    occurrences = Occurrences(rationale)

    def make() -> ReplayBuilder:
        b = ReplayBuilder(
            proto,
            sources=sources,
            verdict="PASS" if success else "FAIL",
            id=name or f"{file}#{i}",
            domains={
                "metric": [f"m{j}" for j in range(len(metrics))],
                "score_reason": [f"m{j}" for j, md in enumerate(metrics) if asks_score(md)],
            },
            limits=options.limits,
        )
        by = rule_by(NAME)
        for j, (h, at, reason_at, md) in enumerate(headers):
            m = f"m{j}"
            occ = occurrences.at(h, at)
            b.annotate(f"succeeded({m})", md["success"], quote=h, occurrence=occ, by=by)
            score, thr, direction = (
                md.get("score"),
                md.get("threshold"),
                _direction(md["name"], directions),
            )
            if is_number(score) and is_number(thr) and direction is not None:
                ok = score <= thr if direction == "<=" else score >= thr
                b.annotate(
                    f"score_says({m})",
                    ok,
                    quote=h,
                    occurrence=occ,
                    by=by,
                    explanation=f"`{md['name']}` succeeds when score {direction} threshold: "
                    f"{num(score)} {direction if ok else _negate(direction)} {num(thr)}",
                )
            if not asks_score(md):
                continue  # no requirement asks this reason for the score (module doc)
            reason = md["reason"]
            stated = _STATED.search(reason)
            if stated is None:
                b.annotate(
                    f"states_score({m})",
                    False,
                    quote=reason,
                    occurrence=occurrences.at(reason, reason_at),
                    by=by,
                    explanation="the reason does not say `The score is …`",
                )
                continue
            q = stated.group(0)
            qocc = occurrences.at(q, reason_at + stated.start())
            b.annotate(f"states_score({m})", True, quote=q, occurrence=qocc, by=by)
            if is_number(score):
                text = stated.group(1)
                digits = len(text.split(".")[1]) if "." in text else 0
                same = round(score, digits) == float(text)
                b.annotate(
                    f"reason_score({m})",
                    same,
                    quote=q,
                    occurrence=qocc,
                    by=by,
                    explanation=f"the reason says {text}, the reported score is {num(score)}",
                )
        return b

    return build(where, stem, make)


def _negate(direction: str) -> str:
    return ">" if direction == "<=" else "<"


def _turns(turns: Any) -> dict[str, str]:
    """A conversational test case's turns: the conversation, one ``[role] content`` line a
    turn, as the ``protocol`` source; the last assistant turn as the ``response``."""
    if not isinstance(turns, list):
        return {}
    lines, last = [], None
    for t in turns:
        if isinstance(t, dict) and isinstance(t.get("content"), str):
            role = t.get("role") if isinstance(t.get("role"), str) else "turn"
            lines.append(f"[{role}] {t['content']}")
            if role == "assistant" and t["content"]:
                last = t["content"]
    out = {"protocol": "\n".join(lines)} if lines else {}
    if last is not None:
        out["response"] = last
    return out
