"""The `inspect` importer: model-graded scores of an Inspect log in JSON (`.json`).

Contract: for every sample (and epoch) of the log, each score from ``model_graded_fact``
or ``model_graded_qa`` becomes a replay of ``protocols/inspect.proto``. The rationale is
the grader's own ``explanation``, unchanged; the response is the sample's output message;
the context is the task input and the target (documented in ``docs/importers.md``).
Derived by rule: ``says_correct`` from the last ``GRADE: X`` the explanation writes (the
rule Inspect's default pattern applies), ``one_grade`` from whether every grade written is
the same, ``graded_response`` from whether the score's ``answer`` is the response, and,
for each phrase the explanation puts in quotation marks, ``quotes`` (TRUE, quoting it) and
``said`` (TRUE where it occurs in the response or the context; FALSE only when the
response, the task and the target are all present and it occurs in none of them).
Verdicts are binary until multi-label protocols exist: C is PASS, I is FAIL; a P (partial
credit), an unscored sample, or another scorer is skipped with the reason. `.eval` logs are
refused with a hint to convert them (`inspect log convert --to json`).
"""

from __future__ import annotations

import re
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
    not_the_format,
    read_array,
    rule_by,
)
from unmask.jsonload import show

NAME = "inspect"
PROTOCOL = PROTOCOLS / "inspect.proto"
SCORERS = ("model_graded_fact", "model_graded_qa")
VERDICT = {"C": "PASS", "I": "FAIL"}

# Inspect's grade token: `GRADE` as a word, a colon, one of C, P, I (case-insensitive)
_SPACING = r"[\s\u200b\u200c\u200d\u200e\u200f\u2060\u2063\ufeff]*"
_GRADE = re.compile(rf"(?i)(?<!\w)GRADE(?!\w){_SPACING}:{_SPACING}([CPI])")
# a phrase in straight or curly double quotes, on one line, 3 to 300 characters
_QUOTED = re.compile(r"\"([^\"\n]{3,300})\"|“([^”\n]{3,300})”")
_TRAIL = ",.;:!?"


def read(path: Path, options: Options) -> Iterator[Imported | Skipped]:
    file = str(path)
    if path.suffix == ".eval":
        raise not_the_format(
            file,
            "`.eval` logs are not read yet",
            help="convert it with `inspect log convert --to json`",
        )
    _, samples = read_array(path, options, "samples", "an Inspect log with samples")
    proto = PROTOCOL.read_text(encoding="utf-8")
    for i, sample in enumerate(samples):
        where = f"{file}: samples[{i}]"
        if not isinstance(sample, dict) or not isinstance(sample.get("scores"), dict):
            yield Skipped(f"{where}.scores", "no scores")
            continue
        for scorer, score in sample["scores"].items():
            yield _score(proto, f"{where}.scores.{scorer}", sample, scorer, score, options)


def _text(v: Any) -> str | None:
    """A message content or input: a string, or the text parts of a content list."""
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        parts = [p.get("text") for p in v if isinstance(p, dict) and p.get("type") == "text"]
        if parts and all(isinstance(p, str) for p in parts):
            return "\n".join(parts)
    return None


def _response(sample: dict) -> str | None:
    out = sample.get("output")
    choices = out.get("choices") if isinstance(out, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    msg = choices[0].get("message")
    return _text(msg.get("content")) if isinstance(msg, dict) else None


def _score(
    proto: str, where: str, sample: dict, scorer: str, score: Any, options: Options
) -> Imported | Skipped:
    if scorer not in SCORERS:
        return Skipped(where, f"scorer `{scorer}` is not a model-graded scorer Unmask reads")
    if not isinstance(score, dict):
        return Skipped(where, f"expected a score object, found `{show(score)}`")
    value = score.get("value")
    if value == "P":
        return Skipped(f"{where}.value", "partial credit (`P`) needs a three-label verdict")
    if value not in VERDICT:
        return Skipped(f"{where}.value", f"not scored C or I (found `{show(value)}`)")
    explanation = score.get("explanation")
    if not isinstance(explanation, str) or not explanation:
        return Skipped(f"{where}.explanation", "no explanation to check")
    grades = list(_GRADE.finditer(explanation))
    if not grades:
        return Skipped(f"{where}.explanation", "the explanation writes no `GRADE: X`")

    response = _response(sample)
    task, target = _text(sample.get("input")), sample.get("target")
    target = "\n".join(target) if isinstance(target, list) else target
    context = "\n\n".join(t for t in (task, target if isinstance(target, str) else None) if t)
    sources = {"rationale": explanation}
    if response:
        sources["response"] = response
    if context:
        sources["context"] = context
    answer = score.get("answer")
    # the sample carries all three texts a quote may come from (an empty target included)
    searched_all = isinstance(sample.get("target"), (str, list)) and isinstance(target, str)

    phrases = _phrases(explanation, [s for s in (response, context) if s])
    sid, epoch = sample.get("id"), sample.get("epoch")
    stem = f"{sid}-e{epoch}-{scorer}"

    def make() -> ReplayBuilder:
        b = ReplayBuilder(
            proto,
            sources=sources,
            verdict=VERDICT[value],
            id=f"{sid}/{epoch}/{scorer}",
            domains={"quoted": [f"q{k}" for k in range(len(phrases))]},
            limits=options.limits,
        )
        by = rule_by(NAME)
        last = grades[-1]
        b.annotate(
            "says_correct",
            last.group(1).upper() == "C",
            quote=last.group(0),
            occurrence=_nth(explanation, last.group(0), last.start()),
            by=by,
            explanation="the last grade written",
        )
        letters = {g.group(1).upper() for g in grades}
        if len(letters) == 1:
            b.annotate(
                "one_grade",
                True,
                quote=last.group(0),
                occurrence=_nth(explanation, last.group(0), last.start()),
                by=by,
            )
        else:
            first_other = next(g for g in grades if g.group(1).upper() != last.group(1).upper())
            b.annotate(
                "one_grade",
                False,
                quote=[first_other.group(0), last.group(0)],
                occurrence=[
                    _nth(explanation, first_other.group(0), first_other.start()),
                    _nth(explanation, last.group(0), last.start()),
                ],
                by=by,
                explanation=f"grades written: {', '.join(sorted(letters))}",
            )
        if response and isinstance(answer, str):
            b.annotate(
                "graded_response",
                answer == response,
                quote=response,
                source="response",
                occurrence=0,
                by=by,
                explanation="the score's answer is the response"
                if answer == response
                else "the score's answer differs from the response",
            )
        for k, (phrase, at, found) in enumerate(phrases):
            b.annotate(
                f"quotes(q{k})", True, quote=phrase, occurrence=_nth(explanation, phrase, at), by=by
            )
            if found is not None:
                src, quote = found
                b.annotate(f"said(q{k})", True, quote=quote, source=src, occurrence=0, by=by)
            elif response and task is not None and searched_all:
                # searched the response, the task and the target, all present: the phrase
                # is in none of them (with one missing, not finding it proves nothing)
                b.annotate(
                    f"said(q{k})",
                    False,
                    quote=response,
                    source="response",
                    occurrence=0,
                    by=by,
                    explanation="the phrase occurs in neither the response nor the context",
                )
        return b

    return build(where, stem, make)


def _nth(text: str, quote: str, start: int) -> int:
    from unmask.importers import occurrence_at

    return occurrence_at(text, quote, start)


def _phrases(explanation: str, texts: list[str]) -> list[tuple[str, int, tuple[str, str] | None]]:
    """Each quoted phrase, where it is, and where it was found (source, exact text)."""
    out = []
    names = ["response", "context"][: len(texts)]
    for m in _QUOTED.finditer(explanation):
        g = 1 if m.group(1) is not None else 2
        phrase, at = m.group(g), m.start(g)
        if not phrase.strip():
            continue
        out.append((phrase, at, _find(phrase, names, texts)))
    return out


def _find(phrase: str, names: list[str], texts: list[str]) -> tuple[str, str] | None:
    """Where ``phrase`` occurs: exactly, without trailing punctuation, or ignoring case."""
    candidates = [phrase, phrase.rstrip(_TRAIL)]
    for cand in candidates:
        if not cand:
            continue
        for name, text in zip(names, texts, strict=True):
            if cand in text:
                return name, cand
    cand = phrase.rstrip(_TRAIL)
    for name, text in zip(names, texts, strict=True):
        low = text.lower()
        if len(low) == len(text) and len(cand.lower()) == len(cand):
            i = low.find(cand.lower())
            if i >= 0:
                exact = text[i : i + len(cand)]
                return name, exact
    return None
