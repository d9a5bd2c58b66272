"""Build the labelled example replays with the public builder.

Run from this folder: `python build_labelled_examples.py` (it rewrites the JSON files).
"""

import json
from pathlib import Path

from unmask import ReplayBuilder

RULE = {"kind": "rule", "name": "citation-rules/1", "reviewed": False}


def save(b, name, proto):
    r = b.build()
    r["protocol"] = {"path": proto}
    Path(name).write_text(json.dumps(r, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


DATE_FACT = "Ada Lovelace published her notes on the Analytical Engine in 1843."
MEDAL_FACT = "In 1998 the British Computer Society named a medal after her."
CONTEXT = f"line 1: {DATE_FACT}\nline 2: {MEDAL_FACT}\n"
CLAIM = "Ada Lovelace published notes on the Analytical Engine in 1843 and won a Royal Medal."


def claim_parts(rationale, verdict, id):
    """A judge of ``CLAIM`` against ``CONTEXT``; the gold label is partial support."""
    return ReplayBuilder(
        Path("claim_parts.proto"),
        sources={"rationale": rationale, "response": CLAIM, "context": CONTEXT},
        verdict=verdict,
        gold="partially_supported",
        id=id,
        domains={"part": ["date", "medal"]},
    )


def graded_fact(rationale, context, verdict, gold, id):
    """A C/P/I grader of the Eiffel Tower facts."""
    return ReplayBuilder(
        Path("graded_fact.proto"),
        sources={"rationale": rationale, "context": context},
        verdict=verdict,
        gold=gold,
        id=id,
        domains={"fact": ["place", "year"]},
    )


# ENTAILED: the judge says the date part is supported (line 1) and the medal part is not;
# `partially_supported` follows. The medal part is backed by nothing... except here the
# evidence does name a medal: the one-way grounding of `said(medal)` holds (the judge did
# not claim it), where a two-way `~` would be refuted.
R1 = (
    "Part 1 (publication in 1843): supported, line 1 states it. "
    "Part 2 (Royal Medal): I do not count it as supported. "
    "Answer: partially_supported"
)
b = claim_parts(R1, "partially_supported", "claim-parts-entailed")
b.annotate("said(date)", True, quote="Part 1 (publication in 1843): supported, line 1 states it.")
b.annotate("said(medal)", False, quote="Part 2 (Royal Medal): I do not count it as supported.")
b.annotate("backed(date)", True, quote=DATE_FACT)
b.annotate(
    "backed(medal)",
    True,
    quote=MEDAL_FACT,
    explanation="An annotator read 'a medal' as the medal of the claim (a generous reading).",
)
b.annotate("cited", True, quote="line 1 states it")
save(b, "claim_parts_entailed.json", "claim_parts.proto")

# REFUTED: the rationale says one part is unsupported, yet the answer is `supported`.
R2 = (
    "The publication date is confirmed by line 1. "
    "Nothing in the evidence mentions a Royal Medal, so that part is not supported. "
    "Answer: supported"
)
b = claim_parts(R2, "supported", "claim-parts-refuted")
b.annotate("said(date)", True, quote="The publication date is confirmed by line 1.")
b.annotate(
    "said(medal)",
    False,
    quote="Nothing in the evidence mentions a Royal Medal, so that part is not supported.",
)
b.annotate("backed(date)", True, quote=DATE_FACT)
b.annotate(
    "backed(medal)",
    False,
    quote=MEDAL_FACT,
    explanation="A medal named after her is not a Royal Medal won by her.",
)
b.annotate("cited", True, quote="confirmed by line 1")
save(b, "claim_parts_refuted.json", "claim_parts.proto")

# UNDERDETERMINED: the rationale never says what it made of the medal part; a rule (not a
# person) read the date part, so the result rests on an unreviewed annotation.
R3 = "Line 1 gives the 1843 publication of the notes. Answer: supported"
b = claim_parts(R3, "supported", "claim-parts-underdetermined")
b.annotate("said(date)", True, quote="Line 1 gives the 1843 publication of the notes.", by=RULE)
b.annotate("backed(date)", True, quote=DATE_FACT)
b.annotate("backed(medal)", False, quote=MEDAL_FACT)
b.annotate("cited", True, quote="Line 1 gives", by=RULE)
save(b, "claim_parts_underdetermined.json", "claim_parts.proto")

# C/P/I: the grader finds both facts but grades P.
EXPERT_SUB = (
    "Expert answer: The Eiffel Tower is in Paris and was completed in 1889.\n"
    "Submission: The Eiffel Tower, finished in 1889, stands in Paris."
)
G1 = (
    "The submission says the tower is in Paris, which matches the expert answer. "
    "It also gives 1889 as the completion year, as the expert does. "
    "Nothing in the submission contradicts the expert answer.\nGRADE: P"
)
b = graded_fact(G1, EXPERT_SUB, "P", "C", "graded-fact-refuted")
b.annotate(
    "has(place)",
    True,
    quote="The submission says the tower is in Paris, which matches the expert answer.",
)
b.annotate(
    "has(year)", True, quote="It also gives 1889 as the completion year, as the expert does."
)
b.annotate("contradicts", False, quote="Nothing in the submission contradicts the expert answer.")
b.annotate("in_sub(place)", True, quote="stands in Paris")
b.annotate("in_sub(year)", True, quote="finished in 1889")
b.annotate(
    "conflict", False, quote="Submission: The Eiffel Tower, finished in 1889, stands in Paris."
)
b.annotate("grade_last", True, quote="GRADE: P")
save(b, "graded_fact_refuted.json", "graded_fact.proto")

G2 = (
    "The submission places the tower in Paris, as the expert does. "
    "It says nothing about when the tower was completed.\nGRADE: P"
)
EXPERT_SUB2 = (
    "Expert answer: The Eiffel Tower is in Paris and was completed in 1889.\n"
    "Submission: The Eiffel Tower stands in Paris."
)
b = graded_fact(G2, EXPERT_SUB2, "P", "P", "graded-fact-satisfied")
b.annotate(
    "has(place)", True, quote="The submission places the tower in Paris, as the expert does."
)
b.annotate("has(year)", False, quote="It says nothing about when the tower was completed.")
b.annotate(
    "contradicts",
    False,
    quote="The submission places the tower in Paris, as the expert does.",
    explanation="The grader compares and finds agreement; it reports no contradiction.",
)
b.annotate("in_sub(place)", True, quote="stands in Paris")
b.annotate("in_sub(year)", False, quote="Submission: The Eiffel Tower stands in Paris.")
b.annotate("conflict", False, quote="Submission: The Eiffel Tower stands in Paris.")
b.annotate("grade_last", True, quote="GRADE: P")
save(b, "graded_fact_satisfied.json", "graded_fact.proto")
print("ok")
