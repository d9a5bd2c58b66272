"""The replays ``unmask bench`` measures: generated, deterministic, valid.

Contract: ``factual_replay(n, seed, i, workload)`` is a factual-claims replay with ``n``
claims (ground protocol IR embedded); same arguments, same replay. ``WORKLOADS``:
``mixed`` (the default: about 20% of the atoms UNKNOWN, half of those annotated UNKNOWN
and half left unannotated; about 10% of the rest FALSE) and ``supported`` (the ordinary
good case: every claim said, backed and grounded, no outside knowledge, verdict PASS).
``replay_line`` is the same replay as one JSON Lines record; ``proto_replay`` the same
replay naming its protocol by a ``.proto`` path (``PROTOCOL_SOURCE``) with the claims as
a domain.
"""

from __future__ import annotations

import json
import random
from functools import lru_cache
from typing import Any

PROTOCOL_TEXT = (
    "Identify every factual claim. Check each one against only the supplied context. "
    "Do not use outside knowledge. PASS if and only if every claim is supported."
)
UNKNOWN_SHARE = 0.2
WORKLOADS = ("mixed", "supported")


def _atom(name: str) -> dict[str, str]:
    return {"atom": name}


def factual_protocol(claims: list[str]) -> dict[str, Any]:
    """The ground factual-claims protocol IR for these claim names."""
    atoms: list[dict[str, str]] = []
    for c in claims:
        atoms.append(
            {
                "name": f"supported({c})",
                "role": "judge",
                "description": f"The judge asserts the context supports claim {c}",
            }
        )
    for c in claims:
        atoms.append(
            {
                "name": f"backed({c})",
                "role": "context",
                "description": f"The context supports claim {c}",
            }
        )
    atoms.append(
        {"name": "external", "role": "procedure", "description": "The judge used outside knowledge"}
    )
    return {
        "schema": "unmask.protocol/1",
        "name": "factual_claims",
        "text": PROTOCOL_TEXT,
        "atoms": atoms,
        "constraints": [],
        "decision": {"op": "and", "args": [_atom(f"supported({c})") for c in claims]},
        "requirements": [
            {
                "id": "context_only",
                "description": "Use only supplied context",
                "expr": {"op": "not", "args": [_atom("external")]},
                "addressed": {"const": True},
            }
        ],
        "grounding": [{"judge": f"supported({c})", "context": f"backed({c})"} for c in claims],
    }


class _Text:
    """Builds a source text and hands out exact spans of the sentences added to it."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0

    def add(self, sentence: str) -> tuple[int, int, str]:
        if self.parts:
            self.parts.append(" ")
            self.length += 1
        start = self.length
        self.parts.append(sentence)
        self.length += len(sentence)
        return start, self.length, sentence

    def text(self) -> str:
        return "".join(self.parts)


def _value(rng: random.Random, p_true: float) -> str:
    if rng.random() < UNKNOWN_SHARE:
        return "UNKNOWN"
    return "TRUE" if rng.random() < p_true else "FALSE"


def factual_replay(
    n: int, seed: int = 0, index: int = 0, workload: str = "mixed"
) -> dict[str, Any]:
    """A deterministic factual-claims replay with ``n`` claims (see the module contract)."""
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload `{workload}`")
    rng = random.Random(f"unmask-bench:{seed}:{n}:{index}")
    good = workload == "supported"
    claims = [f"c{i}" for i in range(n)]
    rationale, context, response = _Text(), _Text(), _Text()
    annotations: list[dict[str, Any]] = []

    def annotate(atom: str, value: str, source: str, span: tuple[int, int, str]) -> None:
        if value == "UNKNOWN":
            if rng.random() < 0.5:
                return  # left unannotated: UNKNOWN as well
            annotations.append({"atom": atom, "value": "UNKNOWN"})
            return
        start, end, quote = span
        annotations.append(
            {
                "atom": atom,
                "value": value,
                "evidence": [{"source": source, "start": start, "end": end, "quote": quote}],
                "explanation": "generated for the benchmark",
            }
        )

    judged: dict[str, str] = {}
    for c in claims:
        response.add(f"Claim {c} is stated here.")
        value = "TRUE" if good else _value(rng, 0.9)
        judged[c] = value
        said = "supports" if value != "FALSE" else "does not support"
        annotate(f"supported({c})", value, "rationale", rationale.add(f"The context {said} {c}."))
    for c in claims:
        value = "TRUE" if good else _value(rng, 0.85)
        said = "states" if value != "FALSE" else "is silent on"
        annotate(f"backed({c})", value, "context", context.add(f"The record {said} {c}."))
    ext = "FALSE" if good else _value(rng, 0.1)
    annotate("external", ext, "rationale", rationale.add("I relied only on the context."))
    rest = "PASS" if all(v != "FALSE" for v in judged.values()) else "FAIL"
    verdict = rest if rng.random() < 0.9 else ("FAIL" if rest == "PASS" else "PASS")
    gold = rng.choice(["PASS", "FAIL", rest, rest, None])
    if good:
        verdict = gold = "PASS"
    return {
        "schema": "unmask.replay/1",
        "id": f"bench-{n}-{seed}-{index}" if not good else f"bench-{workload}-{n}-{seed}-{index}",
        "protocol": factual_protocol(claims),
        "sources": {
            "protocol": PROTOCOL_TEXT,
            "response": response.text(),
            "context": context.text(),
            "rationale": rationale.text(),
        },
        "verdict": verdict,
        "gold": gold,
        "annotations": annotations,
    }


def replay_line(n: int, seed: int = 0, index: int = 0, workload: str = "mixed") -> str:
    """One replay as a JSON Lines record (no newline)."""
    obj = factual_replay(n, seed, index, workload)
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


# the same protocol as `.proto` text, over a domain of claims (names from ``factual_replay``)
PROTOCOL_SOURCE = f"""protocol factual_claims "{PROTOCOL_TEXT}"

domain claim

atom supported(claim) : judge     "The judge asserts the context supports claim {{claim}}"
atom backed(claim)    : context   "The context supports claim {{claim}}"
atom external         : procedure "The judge used outside knowledge"

decision pass iff all(supported(c) for c in claim)

for c in claim: ground supported(c) ~ backed(c)

requirement context_only "Use only supplied context" {{
  holds: not external
  addressed: true
}}
"""


def proto_replay(n: int, seed: int = 0, index: int = 0, path: str = "factual.proto") -> dict:
    """``factual_replay`` with its protocol read from ``path`` (``PROTOCOL_SOURCE``) and
    the claims given as the domain ``claim``, the form a hand-written replay takes."""
    obj = factual_replay(n, seed, index)
    obj["protocol"] = {"path": path}
    obj["domains"] = {"claim": [f"c{i}" for i in range(n)]}
    return obj


# a three-label protocol over parts (examples/claim_parts.proto): every label's decision
# spans every part, the labelled case the floor ratio is read on at 20 parts
LABELLED_SOURCE = """protocol claim_parts "Split the claim into parts and check each part against \
the evidence only. Answer supported if every part is supported, partially_supported if some \
part is, not_supported otherwise."

domain part

atom said(part)   : judge     "The judge asserts part {part} of the claim is supported"
atom backed(part) : context   "The evidence supports part {part} of the claim"
atom cited        : procedure "The judge cites an evidence line for each part it calls supported"

define all_said  = all(said(p) for p in part)
define some_said = any(said(p) for p in part)

verdict supported | partially_supported | not_supported
decision supported iff all_said
decision partially_supported iff some_said and not all_said
decision not_supported otherwise

# the requirement applies only where some part is called supported, so that condition is
# part of `holds`; it has no `addressed:`, since whether the judge cited is always observable
requirement cite_support "Cite evidence for every part called supported": some_said implies cited

for p in part: ground said(p) ~> backed(p)
ground some_said ~ any(backed(p) for p in part)
"""
LABELS = ("supported", "partially_supported", "not_supported")
_LABELLED_TEXT = LABELLED_SOURCE.split('"')[1]


@lru_cache(maxsize=8)
def _labelled_protocol(n: int) -> str:
    from unmask.ir.json import protocol_to_json
    from unmask.language.compiler import compile_source

    protocol = compile_source(LABELLED_SOURCE, "claim_parts.proto", {"part": _parts(n)})
    return json.dumps(protocol_to_json(protocol), ensure_ascii=False, separators=(",", ":"))


def _parts(n: int) -> list[str]:
    return [f"p{i}" for i in range(n)]


def labelled_replay(n: int, seed: int = 0, index: int = 0) -> dict[str, Any]:
    """A deterministic replay of the three-label protocol ``LABELLED_SOURCE`` over ``n``
    parts (ground IR embedded): atoms TRUE, FALSE or UNKNOWN as in ``mixed``, the verdict
    the one the judge's own statements decide nine times in ten."""
    rng = random.Random(f"unmask-bench-labelled:{seed}:{n}:{index}")
    rationale, context = _Text(), _Text()
    annotations: list[dict[str, Any]] = []
    said: list[str] = []

    def annotate(atom: str, value: str, source: str, span: tuple[int, int, str]) -> None:
        if value == "UNKNOWN":
            if rng.random() < 0.5:
                annotations.append({"atom": atom, "value": "UNKNOWN"})
            return
        start, end, quote = span
        evidence = [{"source": source, "start": start, "end": end, "quote": quote}]
        annotations.append({"atom": atom, "value": value, "evidence": evidence})

    for p in _parts(n):
        value = _value(rng, 0.7)
        said.append(value)
        word = "is" if value != "FALSE" else "is not"
        annotate(f"said({p})", value, "rationale", rationale.add(f"Part {p} {word} supported."))
    for p in _parts(n):
        value = _value(rng, 0.8)
        word = "supports" if value != "FALSE" else "says nothing of"
        annotate(f"backed({p})", value, "context", context.add(f"Line {p} {word} part {p}."))
    annotate("cited", _value(rng, 0.9), "rationale", rationale.add("Each line is cited."))
    if all(v == "TRUE" for v in said):
        decided = "supported"
    elif any(v == "TRUE" for v in said):
        decided = "partially_supported"
    else:
        decided = "not_supported"
    verdict = decided if rng.random() < 0.9 else rng.choice(LABELS)
    return {
        "schema": "unmask.replay/1",
        "id": f"bench-labelled-{n}-{seed}-{index}",
        "protocol": json.loads(_labelled_protocol(n)),
        "sources": {
            "protocol": _LABELLED_TEXT,
            "context": context.text(),
            "rationale": rationale.text(),
        },
        "verdict": verdict,
        "gold": rng.choice([*LABELS, None]),
        "annotations": annotations,
    }


def labelled_line(n: int, seed: int = 0, index: int = 0) -> str:
    """``labelled_replay`` as one JSON Lines record (no newline)."""
    return json.dumps(labelled_replay(n, seed, index), ensure_ascii=False, separators=(",", ":"))
