"""The `inspect` importer: model-graded scores of an Inspect log, `.eval` or `.json`.

Contract: for every sample (and epoch) of the log, each score from ``model_graded_fact`` or
``model_graded_qa`` (a second one of a name keyed ``NAME1``, …) becomes a replay of
``protocols/inspect.proto``. The grade is read by the scorer's options the log records
(``eval.scorers``): Inspect's default rule where they show it applies, a scorer's own
``grade_pattern`` applied as Inspect applies it (in a child process with a time limit,
``patterns``), a panel by its recorded votes; a log without them, a pattern that cannot be
applied or another panel reducer leaves the grade atoms UNKNOWN, said once per file. A
custom scorer is skipped and named once per file. The log is Inspect's default `.eval` (a
zip archive: its ``samples/*.json`` members are read through ``archive.Archive``, bounded,
and the last member of a name wins, as Inspect reads them) or its JSON format (the array
``samples``); samples are taken in Inspect's order (epoch, then id), so both formats of one
log give the same replays. The rationale is the grader's own ``explanation``, unchanged;
the response is the sample's output message; the context is the task input, the target and
the grading prompt the score records (``docs/importers.md``). The verdict is the score's
grade, ``C``, ``P`` (partial credit) or ``I``. Derived by rule: ``says_correct`` and
``says_partial`` from the last ``GRADE: X`` the explanation writes (the rule Inspect's
default pattern applies), ``one_grade`` from whether every grade written is the same,
``graded_response`` from whether the score's ``answer`` is the response, and, for each
phrase the explanation puts in quotation marks, ``quotes`` (TRUE, quoting it) and ``said``
(TRUE where it occurs where the explanation places it: in the response when the words
before the quote speak of the submission, else in the response or the context; FALSE only
when the response, the task, the target and all the grader was shown (its recorded prompt,
or Inspect's default template) are there and it is not). An unscored sample or another
scorer is skipped with the reason. A score whose quoted phrases would need more than
``MAX_LOOKUP`` characters searched is skipped with that reason.
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
    build,
    is_number,
    not_the_format,
    rule_by,
)
from unmask.importers.archive import Archive
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.files import read_bytes
from unmask.plumbing.jsonload import json_values, parse_json_bytes, show, too_many_values
from unmask.replay.builder import ReplayBuilder

NAME = "inspect"
PROTOCOL = PROTOCOLS / "inspect.proto"
SCORERS = ("model_graded_fact", "model_graded_qa")
# a second scorer of one name is keyed `NAME1` in a sample's scores, a third `NAME2`
_MODEL_GRADED = re.compile(r"(model_graded_fact|model_graded_qa)\d*")
VERDICTS = ("C", "P", "I")

# Inspect's grade token: `GRADE` as a word, a colon, and the word after it. As Inspect's
# default scorer reads it (0.3.285), the word is a grade when it is one letter C, P or I or
# spelled out (`Correct`, `Partial`, `Incorrect`); any other word (`CI`) is no grade, and the
# last token decides, so a later unreadable token is not passed over for an earlier grade
_SPACING = r"[\s\u200b\u200c\u200d\u200e\u200f\u2060\u2063\ufeff]*"
_GRADE = re.compile(rf"(?i)(?<!\w)GRADE(?!\w){_SPACING}:{_SPACING}(\w*)")
# with custom `instructions` (and no `grade_pattern`) Inspect does not check the word and
# reads its default pattern, `GRADE: ([CPI])`: the last token whose word starts with one
# of those letters, by that letter (`GRADE: Correct` is C, a later `GRADE: none` passed over)
_GRADE_LETTER = re.compile(rf"(?i)(?<!\w)GRADE(?!\w){_SPACING}:{_SPACING}([CPI])")
_GRADE_WORDS = {"c": "C", "correct": "C", "p": "P", "partial": "P", "i": "I", "incorrect": "I"}


def _letter(token: re.Match[str]) -> str | None:
    """The grade a `GRADE: X` token gives, or None when X is no grade Inspect reads."""
    return _GRADE_WORDS.get(token.group(1).lower())


# a phrase in straight or curly double quotes, on one line, 3 to 300 characters
_QUOTED = re.compile(r"\"([^\"\n]{3,300})\"|“([^”\n]{3,300})”")
_TRAIL = ",.;:!?"
# a quote whose sentence, before it, names the submission (and not the expert answer, the
# criterion or the task) is a claim about the submission; at most this far back
_LOOKBACK = 300
_SUBMISSION = re.compile(r"(?i)\b(?:submission|submitted|submits|the answer given)\b")
_REFERENCE = re.compile(r"(?i)\b(?:expert|criterion|criteria|target|reference|question|task)\b")
# looking up every distinct quoted phrase searches the response and the context: a record
# whose lookups would read more characters than this is skipped (docs/security.md)
MAX_LOOKUP = 1_000_000_000


def read(path: Path, options: Options) -> Iterator[Imported | Skipped | Note]:
    proto = PROTOCOL.read_text(encoding="utf-8")
    found, spec = _log(path, options)
    specs = scorer_specs(spec)
    seen = _Seen()
    _apply_patterns(found, specs, seen)
    for where, sample in found:
        if not isinstance(sample, dict) or not isinstance(sample.get("scores"), dict):
            yield Skipped(f"{where}.scores", "no scores")
            continue
        for scorer, score in sample["scores"].items():
            yield _score(
                proto, f"{where}.scores.{scorer}", sample, scorer, score, options, specs, seen
            )
    yield from seen.notes(str(path))


def _apply_patterns(
    found: list[tuple[str, Any]], specs: dict[str, tuple[str, dict]] | None, seen: _Seen
) -> None:
    """Each scorer's own ``grade_pattern`` applied to its explanations, as Inspect applies
    it (group 1 of ``re.search``), all of one pattern at once in a child process with a time
    limit (``patterns.spans``): the spans go to ``seen.spans`` by score, a pattern that
    cannot be applied to ``seen.unread`` with why."""
    from unmask.importers.patterns import spans

    todo: dict[str, list[dict]] = {}
    for _, sample in found:
        scores = sample.get("scores") if isinstance(sample, dict) else None
        for scorer, score in scores.items() if isinstance(scores, dict) else ():
            spec = specs.get(scorer) if specs is not None else None
            pattern = spec[1].get("grade_pattern") if spec is not None else None
            if (
                isinstance(pattern, str)
                and spec is not None
                and spec[0] in SCORERS
                and isinstance(score, dict)
                and isinstance(score.get("explanation"), str)
            ):
                todo.setdefault(pattern, []).append(score)
    for pattern, scores in todo.items():
        got = spans(pattern, [s["explanation"] for s in scores])
        if isinstance(got, str):
            seen.failed[pattern] = got
            continue
        for score, span in zip(scores, got, strict=True):
            seen.spans[id(score)] = span


class _Seen:
    """What the scores of one file showed that the user is told once: scorers read without
    their options, a grade pattern or reducer not applied, custom scorers, panels without a
    majority; and the spans each scorer's own grade pattern found."""

    def __init__(self) -> None:
        self.unrecorded: list[str] = []
        self.unread: dict[str, str] = {}  # scorer -> the setting Unmask does not apply
        self.custom: list[str] = []
        self.ties: list[str] = []
        self.spans: dict[int, tuple[int, int] | None] = {}  # id(score) -> group 1's span
        self.failed: dict[str, str] = {}  # a grade pattern -> why it was not applied

    def add(self, bucket: list[str], name: str) -> None:
        if name not in bucket:
            bucket.append(name)

    def notes(self, file: str) -> Iterator[Note]:
        def names(xs: list[str]) -> str:
            return ", ".join(f"`{show(x)}`" for x in xs)

        if self.unrecorded:
            yield Note(
                file,
                f"{names(self.unrecorded)}: the log does not record the scorer's options"
                " (`eval.scorers`), so its grade pattern is not known: which grade the"
                " explanation gives (`says_correct`, `says_partial`, `one_grade`) is UNKNOWN;"
                " its quotes are still checked",
            )
        for name, setting in self.unread.items():
            yield Note(
                file,
                f"`{show(name)}`: {setting}, so which grade it gives (`says_correct`,"
                " `says_partial`, `one_grade`) is UNKNOWN; its quotes are still checked",
            )
        if self.custom:
            yield Note(
                file,
                f"{names(self.custom)}: a custom scorer grades by its own code, which the log"
                " does not record, so its scores are not checked",
            )
        if self.ties:
            yield Note(
                file,
                f"{names(self.ties)}: no grade has more than half of the panel's votes, so"
                " Inspect would leave the sample unscored and which grade the score gives is"
                " UNKNOWN there",
            )


def scorer_specs(spec: Any) -> dict[str, tuple[str, dict]] | None:
    """Each score key of the log's samples -> (its scorer's name, the options the log
    records for it), from ``eval.scorers``; None when the log records no scorers. Inspect
    keys a second scorer of a name ``NAME1``, a third ``NAME2``; an option left out was not
    passed, so Inspect's default applies."""
    scorers = spec.get("scorers") if isinstance(spec, dict) else None
    if not isinstance(scorers, list):
        return None
    out: dict[str, tuple[str, dict]] = {}
    for s in scorers:
        if not isinstance(s, dict) or not isinstance(s.get("name"), str):
            continue
        base = s["name"].rsplit("/", 1)[-1]  # `inspect_ai/model_graded_qa`
        # as Inspect's `unique_scorer_name`: the first of `NAME`, `NAME1`, `NAME2`, … unused
        key, n = base, 1
        while key in out:
            key, n = f"{base}{n}", n + 1
        opts = s.get("options")
        out[key] = (base, opts if isinstance(opts, dict) else {})
    return out


def _log(path: Path, options: Options) -> tuple[list[tuple[str, Any]], Any]:
    """Each sample and where it is (a JSON path, or an archive member), in Inspect's order,
    and the log's eval spec (its ``eval``: the task, the scorers and their options), read
    from the JSON log or the archive's ``header.json`` (``_journal/start.json`` of a log
    still being written); None where the log has none."""
    file = str(path)
    data = read_bytes(path, options.limits, file)
    spec: Any = None
    if data[:4] not in (b"PK\x03\x04", b"PK\x05\x06"):
        if path.suffix == ".eval":
            raise not_the_format(file, "not an Inspect `.eval` log: not a zip archive")
        doc = parse_json_bytes(data, file, options.limits)
        samples = doc.get("samples") if isinstance(doc, dict) else None
        if not isinstance(samples, list):
            raise not_the_format(
                file, "not an Inspect log with samples: expected an array at `samples`", "samples"
            )
        found = [(f"{file}: samples[{i}]", s) for i, s in enumerate(samples)]
        spec = doc.get("eval")
    else:
        archive = Archive(data, file, options.limits)
        # a sample logged again (a requeued sample) is a second member of the same name:
        # Inspect reads the last one
        members = {m.filename: m for m in archive.members if _is_sample(m.filename)}
        if not members and not any(m.filename == "header.json" for m in archive.members):
            raise not_the_format(
                file, "not an Inspect `.eval` log: no `header.json` and no `samples/` member"
            )
        found = []
        # every sample is kept until all are sorted: their values are bounded together,
        # each member's counted before it is parsed
        budget = options.limits.max_json_values
        for name, info in members.items():
            where = f"{file}: member `{show(name, 200)}`"
            data = archive.read(info)
            budget -= json_values(data)
            if budget < 0:
                raise too_many_values(file, options.limits, "the archive's samples hold")
            found.append((where, parse_json_bytes(data, where, options.limits)))
        heads = {m.filename: m for m in archive.members if m.filename in _HEADERS}
        for name in _HEADERS:
            if name in heads:
                where = f"{file}: member `{name}`"
                try:
                    head = parse_json_bytes(archive.read(heads[name]), where, options.limits)
                except UnmaskError:
                    continue  # a header not readable records nothing: the next, or none
                spec = head.get("eval") if isinstance(head, dict) else None
                break
    # Inspect's order (`sort_samples`): by epoch, then by id (a number as 20 digits); a
    # value of another kind sorts after, by its JSON spelling, so nothing fails to compare
    return sorted(found, key=lambda ws: _order(ws[1])), spec


_HEADERS = ("header.json", "_journal/start.json")  # where a `.eval` log keeps its eval spec


def _is_sample(name: str) -> bool:
    """A sample of a `.eval` log (`samples/{id}_epoch_{epoch}.json`), as Inspect finds them."""
    return name.startswith("samples/") and name.endswith(".json")


def _order(sample: Any) -> tuple:
    if not isinstance(sample, dict):
        return (1, "", 1, "")
    epoch, sid = sample.get("epoch"), sample.get("id")
    e = (0, epoch) if is_number(epoch) else (1, show(epoch, 10**9))
    i = sid if isinstance(sid, str) else str(sid).zfill(20) if is_number(sid) else show(sid)
    return (*e, 0, i)


def _text(v: Any) -> str | None:
    """A message content or input: a string, or the text parts of a content list."""
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        parts = [p.get("text") for p in v if isinstance(p, dict) and p.get("type") == "text"]
        texts = [p for p in parts if isinstance(p, str)]
        if parts and len(texts) == len(parts):
            return "\n".join(texts)
    return None


def _response(sample: dict) -> str | None:
    out = sample.get("output")
    choices = out.get("choices") if isinstance(out, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    msg = choices[0].get("message")
    return _text(msg.get("content")) if isinstance(msg, dict) else None


def _score(
    proto: str,
    where: str,
    sample: dict,
    scorer: str,
    score: Any,
    options: Options,
    specs: dict[str, tuple[str, dict]] | None = None,
    seen: _Seen | None = None,
) -> Imported | Skipped:
    seen = seen or _Seen()
    spec = specs.get(scorer) if specs is not None else None
    named = _MODEL_GRADED.fullmatch(scorer)
    base, opts = spec if spec is not None else (named.group(1) if named else scorer, None)
    if base not in SCORERS:
        seen.add(seen.custom, scorer)
        return Skipped(where, f"scorer `{scorer}` is not a model-graded scorer Unmask reads")
    if not isinstance(score, dict):
        return Skipped(where, f"expected a score object, found `{show(score)}`")
    value = score.get("value")
    if value not in VERDICTS:
        return Skipped(f"{where}.value", f"not scored C, P or I (found `{show(value)}`)")
    md = score.get("metadata")
    if not isinstance(md, dict):
        md = {}
    panel = md.get("panel")
    if not isinstance(panel, dict):
        panel = None
    votes = panel.get("votes") if panel is not None else None
    if panel is not None and not isinstance(votes, list):
        return Skipped(f"{where}.metadata.panel.votes", "a panel score without its votes")
    explanation = score.get("explanation")
    if not isinstance(explanation, str) or not explanation:
        if votes is None:
            return Skipped(f"{where}.explanation", "no explanation to check")
        explanation = ""  # the graders explained differently: Inspect keeps none of them
    # how the grade is read, by what the log records of the scorer's options (an option
    # left out is Inspect's default); never the default rule where they are not recorded
    if opts is None:
        rule = None
        seen.add(seen.unrecorded, scorer)
    elif votes is not None and opts.get("reducer", "majority") != "majority":
        rule = None
        seen.unread.setdefault(
            scorer,
            f"reduces its panel's votes with `{show(opts['reducer'])}`, which Unmask does not"
            " apply",
        )
    elif votes is not None:
        rule = "votes"  # each member applied the grade pattern: its votes are what it read
    elif isinstance(opts.get("grade_pattern"), str):
        why = seen.failed.get(opts["grade_pattern"])
        if id(score) in seen.spans:
            rule = "pattern"
            if seen.spans[id(score)] is None:  # Inspect finds no grade: it would be unscored
                return Skipped(
                    f"{where}.explanation",
                    f"the scorer's grade pattern `{show(opts['grade_pattern'])}` finds no grade",
                )
        else:
            rule = None
            shown = f"`{show(opts['grade_pattern'])}`"
            seen.unread.setdefault(
                scorer, f"grades with its own pattern {shown}, which {why or 'was not applied'}"
            )
    else:
        rule = "last grade"
    pattern = _GRADE_LETTER if opts is not None and opts.get("instructions") else _GRADE
    grades = list(pattern.finditer(explanation)) if votes is None else []
    if rule == "last grade" and not grades:
        return Skipped(f"{where}.explanation", "the explanation writes no `GRADE: X`")
    if votes is not None:
        head = f"panel of {len(votes)} graders: votes " + ", ".join(
            v if isinstance(v, str) else "none" for v in votes
        )
        explanation = f"{head}\n{explanation}" if explanation else head

    response = _response(sample)
    task, target = _text(sample.get("input")), sample.get("target")
    if isinstance(target, list) and all(isinstance(t, str) for t in target):
        target = "\n".join(target)
    grading = md.get("grading")
    prompt = (
        _text(grading[0].get("content"))
        if isinstance(grading, list) and grading and isinstance(grading[0], dict)
        else None
    )
    # the grading prompt the score records is what the grader was shown: a rubric its
    # template adds is quoted from there
    texts = (task, target if isinstance(target, str) else None, prompt)
    context = "\n\n".join(t for t in texts if t)
    # all the grader saw was searched: the prompt itself, or a template Inspect's default
    custom = opts is None or bool(opts.get("template") or opts.get("instructions"))
    saw_all = prompt is not None or not custom
    sources = {"rationale": explanation}
    if response:
        sources["response"] = response
    if context:
        sources["context"] = context
    answer = score.get("answer")
    # the sample carries all three texts a quote may come from (an empty target included)
    searched_all = (
        isinstance(sample.get("target"), (str, list)) and isinstance(target, str) and saw_all
    )

    searched = [(n, t) for n, t in (("response", response), ("context", context)) if t]
    phrases = _phrases(explanation, searched, bool(response))
    if phrases is None:
        return Skipped(
            f"{where}.explanation",
            f"too many quoted phrases to look up: more than {MAX_LOOKUP:,} characters to search"
            " (distinct phrases times the length of the response and context)",
        )
    sid, epoch = sample.get("id"), sample.get("epoch")
    stem = f"{sid}-e{epoch}-{scorer}"

    occurrences = Occurrences(explanation)

    panel_votes = votes if isinstance(votes, list) else []  # a list when rule is "votes"

    def make() -> ReplayBuilder:
        b = ReplayBuilder(
            proto,
            sources=sources,
            verdict=value,
            id=f"{sid}/{epoch}/{scorer}",
            domains={"quoted": [f"q{k}" for k in range(len(phrases))]},
            limits=options.limits,
        )
        by = rule_by(NAME)
        if rule == "votes":
            _panel(b, explanation, panel_votes, scorer, seen)
        if rule == "pattern":
            _by_pattern(b, explanation, seen.spans[id(score)], occurrences)
        final = _letter(grades[-1]) if rule == "last grade" else None
        # a last token that is no grade (`GRADE: CI`) says nothing a rule can read: both
        # atoms stay UNKNOWN, never a value taken from its first letter or an earlier grade
        for atom, letter in (("says_correct", "C"), ("says_partial", "P")):
            if final is None:
                continue
            last = grades[-1]
            b.annotate(
                atom,
                final == letter,
                quote=last.group(0),
                occurrence=occurrences.at(last.group(0), last.start()),
                by=by,
                explanation="the last grade written",
            )
        graded = [g for g in grades if _letter(g) is not None] if rule == "last grade" else []
        letters = {x for g in graded if (x := _letter(g)) is not None}
        if graded:
            last = graded[-1]
            if len(letters) == 1:
                b.annotate(
                    "one_grade",
                    True,
                    quote=last.group(0),
                    occurrence=occurrences.at(last.group(0), last.start()),
                    by=by,
                )
            else:
                first_other = next(g for g in graded if _letter(g) != _letter(last))
                b.annotate(
                    "one_grade",
                    False,
                    quote=[first_other.group(0), last.group(0)],
                    occurrence=[
                        occurrences.at(first_other.group(0), first_other.start()),
                        occurrences.at(last.group(0), last.start()),
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
                f"quotes(q{k})", True, quote=phrase, occurrence=occurrences.at(phrase, at), by=by
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
                    explanation="the phrase occurs in neither the response nor the context"
                    if not _about_submission(explanation, at - 1)
                    else "the explanation attributes the phrase to the submission, which does"
                    " not contain it",
                )
        return b

    return build(where, stem, make)


def _by_pattern(
    b: ReplayBuilder, explanation: str, span: tuple[int, int] | None, occurrences: Occurrences
) -> None:
    """The grade a scorer's own pattern reads: group 1 as written (with an explicit
    pattern Inspect takes it unchanged, so only `C`, `P` or `I` is a grade); anything else
    leaves both atoms UNKNOWN."""
    if span is None:
        return
    text = explanation[span[0] : span[1]]
    if text not in VERDICTS:
        return
    for atom, letter in (("says_correct", "C"), ("says_partial", "P")):
        b.annotate(
            atom,
            text == letter,
            quote=text,
            occurrence=occurrences.at(text, span[0]),
            by=rule_by(NAME),
            explanation="the grade the scorer's own pattern reads",
        )


def _panel(b: ReplayBuilder, head: str, votes: list, scorer: str, seen: _Seen) -> None:
    """A panel's grade, as Inspect's `majority` reducer takes it: the letter more than half
    of the votes give, a member that failed to vote counted in the total; with none, Inspect
    leaves the sample unscored, which no grade atom can say: UNKNOWN (said once per file)."""
    line = head.split("\n", 1)[0]
    counts = {v: sum(1 for x in votes if x == v) for v in VERDICTS}
    leaders = [v for v, n in counts.items() if n * 2 > len(votes)]
    if len(leaders) != 1:
        seen.add(seen.ties, scorer)
        return
    said = f"votes: {', '.join(f'{v} {n}' for v, n in counts.items() if n)}"
    for atom, letter in (("says_correct", "C"), ("says_partial", "P")):
        b.annotate(
            atom,
            leaders[0] == letter,
            quote=line,
            occurrence=0,
            by=rule_by(NAME),
            explanation=f"the panel's majority, {said}",
        )


def _phrases(
    explanation: str, texts: list[tuple[str, str]], has_response: bool
) -> list[tuple[str, int, tuple[str, str] | None]] | None:
    """Each quoted phrase, where it is, and where it was found (source, exact text); None
    when looking them up would search more than ``MAX_LOOKUP`` characters. A phrase the
    explanation attributes to the submission is looked up in the response only: a grader
    that writes `The submission names "Neil Armstrong"` about an answer naming Buzz Aldrin
    must not be backed by the target, which does name him."""
    out = []
    # each distinct (phrase, where it is looked up) is looked up once
    found: dict[tuple[str, bool], tuple[str, str] | None] = {}
    per_phrase = 2 * sum(len(t) for _, t in texts)  # exact, then ignoring case
    lowered: dict[str, str] = {}
    response_only = [(n, t) for n, t in texts if n == "response"]
    for m in _QUOTED.finditer(explanation):
        g = 1 if m.group(1) is not None else 2
        phrase, at = m.group(g), m.start(g)
        if not phrase.strip():
            continue
        key = (phrase, has_response and _about_submission(explanation, m.start()))
        if key not in found:
            if (len(found) + 1) * per_phrase > MAX_LOOKUP:
                return None
            found[key] = _find(phrase, response_only if key[1] else texts, lowered)
        out.append((phrase, at, found[key]))
    return out


def _about_submission(explanation: str, at: int) -> bool:
    """Whether the words before a quote, in its sentence, speak of the submission (and not
    of the expert answer, criterion or task): `The submission states: "…"`."""
    start = max(explanation.rfind(ch, max(0, at - _LOOKBACK), at) for ch in ".!?\n") + 1
    before = explanation[max(start, at - _LOOKBACK) : at]
    return bool(_SUBMISSION.search(before)) and not _REFERENCE.search(before)


def _find(
    phrase: str, texts: list[tuple[str, str]], lowered: dict[str, str]
) -> tuple[str, str] | None:
    """Where ``phrase`` occurs: exactly, without trailing punctuation, or ignoring case."""
    candidates = [phrase, phrase.rstrip(_TRAIL)]
    for cand in candidates:
        if not cand:
            continue
        for name, text in texts:
            if cand in text:
                return name, cand
    cand = phrase.rstrip(_TRAIL)
    for name, text in texts:
        low = lowered.get(name)
        if low is None:
            low = lowered[name] = text.lower()  # once per text, not once per phrase
        if len(low) == len(text) and len(cand.lower()) == len(cand):
            i = low.find(cand.lower())
            if i >= 0:
                exact = text[i : i + len(cand)]
                return name, exact
    return None
