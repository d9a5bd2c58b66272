"""One replay's question to a model, and its answer read into per-atom readings.

Contract: ``open_atoms(replay)`` are the atoms a reader may fill: those with no annotation,
and those annotated UNKNOWN by a reader nobody reviewed (a rule's or a model's abstention);
a TRUE or FALSE annotation, and a reviewed UNKNOWN (a person's decision not to say), are
never touched. ``questions(replay)`` puts each open atom that has a source its role allows
(``EVIDENCE_SOURCES``, present in the replay) to the reader, in declaration order; the
others are not asked. ``Ask`` holds the messages and the schema, made by
``unmask.replay.judgeschema`` (``READING_INSTRUCTIONS``, ``emit_reading_prompt``,
``reading_schema``) and its cache key. ``readings(reply, ask, sources)`` reads a reply into
one ``Got`` per question: a value only when the answer parsed, followed the schema, was
neither refused nor cut off, and every quote of a TRUE or FALSE occurs in the source it
names; anything else is UNKNOWN with its reason (``Got.reason``, and ``Got.code`` to count
it). An atom the answer leaves out is UNKNOWN: never a FALSE from absence.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from unmask.plumbing.frozen import frozen
from unmask.replay.data import EVIDENCE_SOURCES, Evidence, Replay
from unmask.replay.judgeschema import (
    READING_INSTRUCTIONS,
    Question,
    ShapeError,
    emit_reading_prompt,
    read_reading,
    reading_schema,
)

CHARS_PER_TOKEN = 4  # the estimate `--dry-run` gives: about four characters a token


def open_atoms(replay: Replay) -> list[str]:
    """Declared atoms with no annotation, or an unreviewed UNKNOWN one, in declaration order."""
    kept = {
        a.atom for a in replay.annotations if a.value != "UNKNOWN" or a.by is None or a.by.reviewed
    }
    return [n for n in replay.protocol.atom_names if n not in kept]


def questions(replay: Replay) -> list[Question]:
    """The open atoms a reader can be asked about: each with the sources it may quote."""
    decls = {a.name: a for a in replay.protocol.atoms}
    out = []
    for name in open_atoms(replay):
        d = decls[name]
        allowed = tuple(s for s in EVIDENCE_SOURCES[d.role] if s in replay.sources)
        if allowed:
            out.append(Question(name, d.role, d.description or "", allowed))
    return out


def digest(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


@frozen
class Ask:
    """One call's content: the instructions, the question, the schema, and its cache key."""

    system: str
    user: str
    schema: dict
    key: str

    @property
    def chars(self) -> int:
        return len(self.system) + len(self.user)

    @property
    def tokens(self) -> int:
        """The estimate of tokens sent: characters over ``CHARS_PER_TOKEN``, rounded up."""
        return -(-self.chars // CHARS_PER_TOKEN)


def ask(
    model: str, qs: Sequence[Question], sources: Mapping[str, str], sample: int, settings: dict
) -> Ask:
    """The call for sample ``sample`` of ``qs``: keyed by the model, the messages, the schema,
    the sample and the generation settings, so any change to one of them is a new call."""
    schema = reading_schema(qs)
    schema_text = json.dumps(schema, indent=1, ensure_ascii=False)
    user = emit_reading_prompt(qs, sources) + "\nJSON Schema of the answer:\n" + schema_text + "\n"
    key = digest(
        {
            "model": model,
            "system": READING_INSTRUCTIONS,
            "user": user,
            "schema": schema,
            "sample": sample,
            "settings": settings,
        }
    )
    return Ask(READING_INSTRUCTIONS, user, schema, key)


@frozen
class Reply:
    """What a call returned, as the cache keeps it: the text, why it stopped (``stop``,
    ``max_tokens``, ``refusal``, …) and the tokens used."""

    text: str
    stop: str
    input_tokens: int = 0
    output_tokens: int = 0

    def to_json(self) -> dict:
        return {
            "text": self.text,
            "stop": self.stop,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }

    @classmethod
    def from_json(cls, obj: Any) -> Reply | None:
        if not isinstance(obj, dict):
            return None
        text, stop = obj.get("text"), obj.get("stop")
        i, o = obj.get("input_tokens", 0), obj.get("output_tokens", 0)
        if not isinstance(text, str) or not isinstance(stop, str):
            return None
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (i, o)):
            return None
        return cls(text, stop, i, o)


@frozen
class Got:
    """One reader's reading of one atom: a value with its spans, or UNKNOWN and why."""

    value: str
    evidence: tuple[Evidence, ...] = ()
    reason: str = ""
    code: str = ""  # what kind of UNKNOWN, counted by the run: `quote`, `schema`, …


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)
TRUNCATED = ("max_tokens", "model_length")


def _short(text: str, n: int = 60) -> str:
    from unmask.plumbing.jsonload import show

    return show(text, n)


def unknown_all(qs: Sequence[Question], reason: str, code: str) -> dict[str, Got]:
    return {q.atom: Got("UNKNOWN", (), reason, code) for q in qs}


def readings(reply: Reply, qs: Sequence[Question], sources: Mapping[str, str]) -> dict[str, Got]:
    """Each question's reading from ``reply`` (see the module's contract)."""
    if reply.stop == "refusal":
        return unknown_all(qs, "the model refused to answer", "refused")
    if reply.stop in TRUNCATED:
        return unknown_all(qs, "the answer was cut off at the token limit", "truncated")
    text = reply.text.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return unknown_all(qs, "the answer is not JSON", "schema")
    try:
        read = read_reading(obj, qs)
    except ShapeError as exc:
        return unknown_all(
            qs, f"the answer breaks the schema at {exc.path}: {exc.reason}", "schema"
        )
    out = unknown_all(qs, "the model did not answer for it", "left-out")
    for r in read:
        if r.value == "UNKNOWN":
            out[r.atom] = Got("UNKNOWN", (), "the model answered UNKNOWN", "unknown")
            continue
        spans = []
        for source, quote in r.quotes:
            start = sources[source].find(quote)
            if start < 0:
                out[r.atom] = Got(
                    "UNKNOWN",
                    (),
                    f"the model answered {r.value}, but its quote `{_short(quote)}` is not in"
                    f" `{source}`",
                    "quote",
                )
                break
            spans.append(Evidence(source, start, start + len(quote), quote))
        else:
            out[r.atom] = Got(r.value, tuple(dict.fromkeys(spans)))
    return out
