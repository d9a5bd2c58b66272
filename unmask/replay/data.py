"""The validated replay as frozen data.

Contract: ``unmask.replay.load`` builds these only from input that passed every validation rule,
so the rest of the program may rely on them: every annotation names a declared atom at most
once, every span is in range and its quote matches, values are TRUE/FALSE/UNKNOWN, and
``verdict`` and ``gold`` are labels the protocol declares. ``gold`` lives here and nowhere
the solver looks (the checker's input type has no field for it). An annotation's ``by``
says who made it; absent, it is a reviewed human annotation. ``readings`` keeps what each of
several readers read when they did not agree, for reports to show; no check reads it. A
replay re-checked against a protocol given apart from it (``unmask.replay.recheck``) carries a
``Recheck``: which protocol, and the annotated atoms that protocol lacks (left out of
``annotations``, never silently).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from types import MappingProxyType

from unmask.ir import Protocol
from unmask.plumbing.diagnostics import Diagnostic
from unmask.plumbing.frozen import frozen

VALUES = ("TRUE", "FALSE", "UNKNOWN")
VERDICTS = ("PASS", "FAIL")  # the labels of a protocol without a `verdict` statement
# `reference`: an independent reading of the material made outside the judge
SOURCES = ("protocol", "response", "context", "rationale", "trace", "reference")
# which sources may serve as evidence for an atom of each role; the protocol never does
EVIDENCE_SOURCES = {
    "judge": ("rationale",),
    "context": ("context", "response", "reference"),
    "procedure": ("rationale", "trace"),
}


# an evidence entry's `read`: the reader read the whole source and found nothing that says
# the atom holds; no quote, since what is shown is absence (docs/replay-format.md)
WHOLE = "whole"


@frozen
class Evidence:
    """A quoted span ``[start, end)`` of a source; or, with ``read`` ``whole``, a reviewed
    reading of the whole source (``start`` 0, ``end`` its length, ``quote`` empty)."""

    source: str
    start: int
    end: int
    quote: str
    read: str | None = None

    @property
    def whole(self) -> bool:
        return self.read == WHOLE


PROVENANCE_KINDS = ("human", "rule", "model", "gold")


@frozen
class Provenance:
    """Who made an annotation (``by``); an annotation without one is a reviewed human one."""

    kind: str  # human | rule | model | gold
    name: str = ""
    reviewed_flag: bool | None = None  # as given; None when the replay does not say
    # which version of the reader (a rule set's revision, a digest of a model's prompt and
    # schema): readings are calibrated per kind, name and version
    version: str = ""

    @property
    def reviewed(self) -> bool:
        # a person's annotation (or a value read off the gold label) is taken as reviewed
        # unless it says otherwise; a rule's or a model's is not, unless it says so
        if self.reviewed_flag is not None:
            return self.reviewed_flag
        return self.kind in ("human", "gold")

    @property
    def gold_derived(self) -> bool:
        return self.kind == "gold"

    def to_json(self) -> dict:
        out: dict = {"kind": self.kind}
        if self.name:
            out["name"] = self.name
        if self.version:
            out["version"] = self.version
        if self.reviewed_flag is not None:
            out["reviewed"] = self.reviewed_flag
        return out


@frozen
class Reading:
    """One reader's reading of an atom that readers disagreed on (``readings``): who read it,
    the value it gave, its quotes and why. Kept to be shown; nothing checked reads it."""

    by: Provenance
    value: str  # TRUE | FALSE | UNKNOWN
    evidence: tuple[Evidence, ...] = ()
    explanation: str = ""


@frozen
class Annotation:
    atom: str
    value: str  # TRUE | FALSE | UNKNOWN
    evidence: tuple[Evidence, ...] = ()
    explanation: str = ""
    index: int = 0  # position in the replay's `annotations` list, for JSON paths
    by: Provenance | None = None  # None: a reviewed human annotation
    # the readings of several readers that did not agree (the annotation is then UNKNOWN)
    readings: tuple[Reading, ...] = ()

    @property
    def unreviewed(self) -> bool:
        return self.by is not None and not self.by.reviewed

    @property
    def gold_derived(self) -> bool:
        return self.by is not None and self.by.gold_derived


@frozen
class Recheck:
    """The protocol a replay was re-checked against instead of its own (``--protocol``):
    its name and ``digest`` (``sha256:`` of its text), so that two runs can be told
    apart, and the atoms the replay annotates that it lacks, in annotation order."""

    protocol: str
    digest: str
    dropped: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"protocol": self.protocol, "digest": self.digest, "dropped": list(self.dropped)}


@frozen
class Replay:
    id: str
    protocol: Protocol
    verdict: str  # one of protocol.labels (PASS | FAIL without a `verdict` statement)
    annotations: tuple[Annotation, ...]
    sources: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    translation: str = "valid"
    gold: str | None = None
    domains: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    file: str | None = None  # where it was read from, for messages only
    item: str | None = None  # what was judged, so an audit can compare judges on it
    judge: str | None = None  # which judge (or run) judged it
    # non-fatal findings of validation (unknown keys, ignored `domains`); not part of equality
    warnings: tuple[Diagnostic, ...] = field(default=(), compare=False)
    # the JSON text the replay was read from when it came without a file of its own (a JSON
    # Lines record, stdin), and the line it starts on: reports locate spans in it instead of
    # reading the input again
    json_text: str | None = field(default=None, compare=False, repr=False)
    json_line: int = field(default=1, compare=False)
    recheck: Recheck | None = None  # checked against `--protocol`, not its own protocol

    def annotation(self, atom: str) -> Annotation | None:
        for a in self.annotations:
            if a.atom == atom:
                return a
        return None

    @property
    def unannotated(self) -> tuple[str, ...]:
        seen = {a.atom for a in self.annotations}
        return tuple(n for n in self.protocol.atom_names if n not in seen)
