"""The protocol IR JSON, ``unmask.protocol/1``, defined once as typed structures.

Contract: these msgspec structs are the format: the keys, their types, which are required,
the roles, directions and operators, and nothing else (every struct refuses unknown keys;
the reader turns those of everything but an expression into warnings). Reading converts
JSON to them (``unmask.ir.json_reader``, which adds what a type cannot say: names resolve
and are unique, one form per expression, arities, the bounds of ``Limits``);
``json_schema()`` derives the published JSON Schema (docs/schemas/protocol-1.json, kept equal
by a test); the writer (``unmask.ir.json``) writes what converts back to them, key for key in
their order (tests/ir/test_ir_format.py). An expression is one struct with one of ``atom``,
``def``, ``const`` or ``op`` set: the format is older than tagged unions, and no key tags it.
"""

# no `from __future__ import annotations`: msgspec reads these types on the first
# conversion, a third of a millisecond when they are objects and three times that as text
# (a warm start reads one protocol)
from typing import Annotated, Any, ClassVar, Literal

from msgspec import UNSET, Meta, Struct, UnsetType, field

from unmask.plumbing.names import IDENT_PATTERN

PROTOCOL_SCHEMA = "unmask.protocol/1"

# what a name looks like, for the schema only: the reader checks names itself with the
# exact patterns (a JSON Schema `$` also matches before a final newline in Python)
_NAME = f"^{IDENT_PATTERN}$"
_GROUND = rf"^{IDENT_PATTERN}(\(\s*{IDENT_PATTERN}(\s*,\s*{IDENT_PATTERN})*\s*\))?$"
Name = Annotated[str, Meta(extra_json_schema={"pattern": _NAME})]
GroundName = Annotated[
    str,
    Meta(
        extra_json_schema={
            "pattern": _GROUND,
            "description": "a ground name: a name, or a family member such as `supported(c1)`",
        }
    ),
]
# roles, directions and operators are strings that the reader checks against their lists
# (its messages name the one meant); the schema lists them
Role = Annotated[str, Meta(extra_json_schema={"enum": ["judge", "context", "procedure"]})]
Direction = Annotated[str, Meta(extra_json_schema={"enum": ["~", "~>"]})]
OPS = ("not", "and", "or", "xor", "implies", "iff", "atleast", "atmost", "exactly")
Op = Annotated[str, Meta(extra_json_schema={"enum": list(OPS)})]


class Expr(Struct, forbid_unknown_fields=True, omit_defaults=True):
    """An expression: exactly one of `atom`, `def`, `const` and `op`; an operator has
    `args` (`not` one, `implies` and `iff` two), and `k` (0 or more) when it counts
    (`atleast`, `atmost`, `exactly`)."""

    atom: GroundName | None = None
    def_: GroundName | None = field(default=None, name="def")
    const: bool | None = None
    op: Op | None = None
    k: Annotated[int, Meta(ge=0)] | None = None
    args: "list[Expr] | None" = None


class AtomDecl(Struct, forbid_unknown_fields=True, kw_only=True):
    """A ground atom: its name, its role, what it means."""

    what: ClassVar[str] = "an atom"
    name: GroundName
    role: Role
    description: str = ""


class Definition(Struct, forbid_unknown_fields=True):
    """A named expression, listed before any `{"def": NAME}` that uses it."""

    what: ClassVar[str] = "a definition"
    name: GroundName
    expr: Expr


class Constraint(Struct, forbid_unknown_fields=True):
    """A constraint every reading must keep."""

    what: ClassVar[str] = "a constraint"
    name: GroundName
    expr: Expr


class Decision(Struct, forbid_unknown_fields=True, kw_only=True):
    """One label's decision: `expr`, or `"otherwise": true` (at most one), never both."""

    what: ClassVar[str] = "a decision"
    label: Name
    expr: Expr | UnsetType = UNSET
    otherwise: bool | UnsetType = UNSET


class Requirement(Struct, forbid_unknown_fields=True, kw_only=True):
    """A requirement on the judge; `addressed` (or null) says when it applies."""

    what: ClassVar[str] = "a requirement"
    id: GroundName
    description: str = ""
    expr: Expr
    addressed: Expr | None = None


class GroundPair(Struct, forbid_unknown_fields=True, kw_only=True):
    """judge ~ context (or ~>, one way): each side an atom of its role, by name, or an
    expression over atoms of that role."""

    what: ClassVar[str] = "a grounding pair"
    judge: GroundName | Expr
    context: GroundName | Expr
    direction: Direction = "~"


class ProtocolDoc(Struct, forbid_unknown_fields=True, kw_only=True):
    """A ground protocol. A binary protocol has `decision`; one that declares two or more
    `labels` has `decisions` (one per label) and may set `first_match`."""

    what: ClassVar[str] = "a protocol"
    schema: Literal["unmask.protocol/1"]
    name: Name
    text: str = ""
    atoms: list[AtomDecl]
    definitions: list[Definition] = field(default_factory=list)
    constraints: list[Constraint] = field(default_factory=list)
    labels: list[Name] | UnsetType = UNSET
    first_match: bool = False
    decision: Expr | UnsetType = UNSET
    decisions: list[Decision] | UnsetType = UNSET
    requirements: list[Requirement] = field(default_factory=list)
    grounding: list[GroundPair] = field(default_factory=list)


EXPR_HELP = (
    'write `{"atom": NAME}`, `{"def": NAME}`, `{"const": true}` or `{"op": OP, "args": [...]}`'
)


class _Failed:
    def __repr__(self) -> str:
        return "FAILED"

    def __bool__(self) -> bool:  # a list that failed reads as none: `doc.atoms or ()`
        return False


FAILED: Any = _Failed()  # a piece that did not convert; its diagnostic is recorded


# the keys of each object of the format, in the order they are written
PROTOCOL_KEYS: tuple[str, ...] = ProtocolDoc.__struct_encode_fields__


def json_schema() -> dict[str, Any]:
    """The JSON Schema of ``unmask.protocol/1``, as published in docs/schemas/: every
    struct's unknown keys refused as the struct declares (the reader warns of most), the
    definitions in the order they are met."""
    from unmask.plumbing.struct_schema import json_schema as build  # not at start-up: docs only

    return build(PROTOCOL_SCHEMA, ProtocolDoc, open_keys=False, sort=False)
