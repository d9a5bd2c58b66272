"""The replay format, ``unmask.replay/1``, defined once as typed structures.

Contract: the structs below are the format: ``unmask.replay.load`` reads a replay into them
(``msgspec.convert`` for input that fits exactly, ``unmask.plumbing.structs.StructReader`` for
any other, with every problem worded) and then checks what a schema cannot say; the builder
writes them; ``replay_schema()`` is the JSON Schema published as ``docs/schemas/replay-1.json``
(``tests/project/test_schemas.py`` keeps the two equal). The schema allows unknown keys, which
Unmask reads with a warning, except in ``by`` and ``sources``, where one is an error. Values
a schema can name (``TRUE``/``FALSE``/``UNKNOWN``, a translation status, a provenance kind)
are ``Literal``s here, read as strings and checked by the reader with its own message;
which verdict labels, atoms and quotes are valid depends on the protocol and the sources,
and is the reader's.
"""

# no `from __future__ import annotations`: msgspec then reads the types as they are built,
# rather than evaluating their text at the first read (a millisecond of every start-up)
from typing import Annotated, Any, ClassVar, Literal

from msgspec import UNSET, Meta, UnsetType, field

from unmask.ir.format import PROTOCOL_SCHEMA
from unmask.plumbing.codes import Code
from unmask.plumbing.jsonreader import JsonReader, did_you_mean, join_path, show
from unmask.plumbing.structs import Format
from unmask.replay.data import SOURCES

__all__ = [
    "REPLAY_SCHEMA",
    "UNSET",
    "AnnotationJson",
    "EvidenceJson",
    "ProtocolPath",
    "ProtocolSource",
    "ProvenanceJson",
    "ReadingJson",
    "ReplayJson",
    "SourcesJson",
    "TranslationJson",
    "replay_schema",
]

REPLAY_SCHEMA = "unmask.replay/1"
TRANSLATION_STATUSES = ("valid", "partial", "invalid")

Value = Annotated[
    Literal["TRUE", "FALSE", "UNKNOWN"],
    Meta(
        description="the atom's value, in capitals",
        # a JSON `true` is the likeliest mistake: say the value is one of three strings
        extra={"expect": '`"TRUE"`, `"FALSE"` or `"UNKNOWN"` (a string)'},
    ),
]
NonEmpty = Annotated[str, Meta(min_length=1)]


class ProvenanceJson(Format):
    """Who made an annotation or a reading (`by`)."""

    KEYS_IN: ClassVar[str] = "`by`"
    EXPECT: ClassVar[str] = 'an object such as `{"kind": "human"}`'
    CLOSED: ClassVar[bool] = True

    kind: Annotated[
        Literal["human", "rule", "model", "gold"],
        Meta(description="a person, a rule or script, another model, or the gold label"),
    ]
    name: NonEmpty | UnsetType = UNSET
    version: NonEmpty | UnsetType = UNSET
    reviewed: (
        Annotated[
            bool, Meta(description="default true for human and gold, false for rule and model")
        ]
        | UnsetType
    ) = UNSET

    @classmethod
    def unknown_key(cls, r: JsonReader, raw: dict, key: str, path: str) -> None:
        # a misspelt `reviewed` would silently trust an annotation: an error, not a warning
        r.err(
            Code.PROVENANCE,
            join_path(path, key),
            f"unknown key `{show(key)}` in `by`",
            help=did_you_mean(key, ("kind", "name", "version", "reviewed"))
            or "`by` has `kind`, and optionally `name`, `version` and `reviewed`",
        )


class EvidenceJson(Format):
    """A quoted span `[start, end)` of a source, in Unicode code points; or, with
    `"read": "whole"` and nothing else but `source`, a reading of the whole source."""

    KEYS_IN: ClassVar[str] = "evidence"
    ITEM: ClassVar[str] = "an evidence"

    source: Literal["protocol", "response", "context", "rationale", "trace", "reference"]
    start: Annotated[int, Meta(ge=0)] | UnsetType = UNSET
    end: Annotated[int, Meta(ge=1)] | UnsetType = UNSET
    quote: str | UnsetType = UNSET
    # any value is passed on: one that is not `whole` is the reader's `evidence-read`
    read: Annotated[Literal["whole"], Meta(extra={"own": True})] | UnsetType = UNSET

    @classmethod
    def unknown_key(cls, r: JsonReader, raw: dict, key: str, path: str) -> None:
        if "read" not in raw:
            super().unknown_key(r, raw, key, path)
            return
        # a whole reading is `source` and `read`, nothing else: no metadata rides on it
        r.err(
            Code.EVIDENCE_READ,
            join_path(path, key),
            f"a reading of a whole source has no `{show(key)}`",
            help=WHOLE_HELP,
        )


WHOLE_HELP = 'write `{"source": "…", "read": "whole"}`, or drop `read` and quote a span'
_SPAN_OR_WHOLE = {
    "oneOf": [
        {"required": ["source", "start", "end", "quote"], "not": {"required": ["read"]}},
        {
            "required": ["source", "read"],
            "not": {"anyOf": [{"required": [k]} for k in ("start", "end", "quote")]},
        },
    ]
}
Evidence = Annotated[EvidenceJson, Meta(extra_json_schema=_SPAN_OR_WHOLE)]


class ReadingJson(Format):
    """One reader's reading of an atom that several readers did not agree on."""

    KEYS_IN: ClassVar[str] = "a reading"
    ITEM: ClassVar[str] = "a reading"

    by: Annotated[
        ProvenanceJson, Meta(extra={"missing_help": "a reading says which reader made it"})
    ]
    value: Value
    evidence: list[Evidence] = field(default_factory=list)
    explanation: str = ""


class AnnotationJson(Format):
    """An atom pinned to a value, backed by evidence."""

    KEYS_IN: ClassVar[str] = "an annotation"
    ITEM: ClassVar[str] = "an annotation"

    atom: Annotated[str, Meta(description="a ground atom of the protocol")]
    value: Value
    evidence: Annotated[
        list[Evidence], Meta(description="at least one entry for TRUE and FALSE")
    ] = field(default_factory=list)
    # UNSET rather than "" or []: what is not given is not written (the builder's annotations)
    explanation: str | UnsetType = UNSET
    by: ProvenanceJson | UnsetType = UNSET
    review: (
        Annotated[
            dict[str, Any], Meta(description="what `unmask review` replaced; kept, never read")
        ]
        | UnsetType
    ) = UNSET
    readings: list[ReadingJson] | UnsetType = UNSET


_SOURCE_TEXT = Meta(extra={"expect": "the source text (a string)"})


class SourcesJson(Format):
    """The texts evidence quotes, by name."""

    KEYS_IN: ClassVar[str] = "`sources`"
    EXPECT: ClassVar[str] = "an object of source texts"
    CLOSED: ClassVar[bool] = True

    protocol: Annotated[str, _SOURCE_TEXT] | UnsetType = UNSET
    response: Annotated[str, _SOURCE_TEXT] | UnsetType = UNSET
    context: Annotated[str, _SOURCE_TEXT] | UnsetType = UNSET
    rationale: Annotated[str, _SOURCE_TEXT] | UnsetType = UNSET
    trace: Annotated[str, _SOURCE_TEXT] | UnsetType = UNSET
    reference: (
        Annotated[str, _SOURCE_TEXT, Meta(description="a reading made outside the judge")]
        | UnsetType
    ) = UNSET

    @classmethod
    def unknown_key(cls, r: JsonReader, raw: dict, key: str, path: str) -> None:
        # evidence could never refer to it: an error
        r.err(
            Code.UNKNOWN_SOURCE,
            join_path(path, key),
            f"unknown source `{show(key)}`",
            help=did_you_mean(key, SOURCES)
            or f"sources are {', '.join(f'`{n}`' for n in SOURCES)}",
        )


class TranslationJson(Format):
    """Whether the protocol's translation into logic is faithful."""

    KEYS_IN: ClassVar[str] = "`translation`"
    EXPECT: ClassVar[str] = 'an object such as `{"status": "valid"}`'

    status: Literal["valid", "partial", "invalid"] | UnsetType = UNSET


class ProtocolPath(Format):
    """A `.proto` file, relative to the replay's folder."""

    KEYS_IN: ClassVar[str] = "`protocol`"

    path: Annotated[str, Meta(pattern=r"\.proto$")]


class ProtocolSource(Format):
    """`.proto` text inline."""

    KEYS_IN: ClassVar[str] = "`protocol`"

    source: str


# the protocol is read by the replay's reader (its three forms have their own messages)
_PROTOCOL = Meta(
    extra={"own": True},
    description="embedded protocol IR, a `.proto` file or `.proto` text",
    extra_json_schema={
        "anyOf": [
            {
                "type": "object",
                "required": ["schema"],
                "properties": {"schema": {"const": PROTOCOL_SCHEMA}},
            },
            {"$ref": "#/$defs/ProtocolPath"},
            {"$ref": "#/$defs/ProtocolSource"},
        ]
    },
)
# read by the replay's reader, which checks each member as it goes (a name, once, within
# the limit), so that its problems come in the order of the members
_DOMAINS = Meta(extra={"own": True}, description="the members of each domain of a family protocol")
Members = Annotated[list[str], Meta(description="member names: identifiers, each once")]


class ReplayJson(Format, kw_only=True):
    """One judge evaluation: the protocol, the texts, the verdict and the annotations."""

    KEYS_IN: ClassVar[str] = "a replay"

    schema: Annotated[Literal["unmask.replay/1"], Meta(extra={"own": True})]
    id: str
    item: NonEmpty | UnsetType = UNSET
    judge: NonEmpty | UnsetType = UNSET
    protocol: Annotated[dict[str, Any], _PROTOCOL]
    domains: Annotated[dict[str, Members], _DOMAINS] | None = None
    translation: TranslationJson | UnsetType = UNSET
    sources: Annotated[
        SourcesJson, Meta(extra={"missing_help": "`sources` holds the texts that evidence quotes"})
    ]
    verdict: Annotated[str, Meta(extra={"own": True}, description="a label the protocol declares")]
    gold: Annotated[
        str | None, Meta(extra={"own": True}, description="a label the protocol declares")
    ] = None
    annotations: Annotated[
        list[AnnotationJson],
        Meta(extra={"missing_help": 'write `"annotations": []` when nothing is annotated yet'}),
    ]


def replay_schema() -> dict[str, Any]:
    """The JSON Schema of ``unmask.replay/1``, as published in ``docs/schemas/replay-1.json``."""
    from unmask.plumbing.struct_schema import json_schema  # docs only, not at start-up

    # the two protocol forms are named by the `protocol` field's `anyOf`, not by a type
    return json_schema(REPLAY_SCHEMA, ReplayJson, ProtocolPath, ProtocolSource)
