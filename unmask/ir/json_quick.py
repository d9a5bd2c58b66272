"""The quick path of the protocol IR reader: shapes every rule plainly accepts, read at once.

Contract: each ``quick_*`` function returns the IR of a JSON value whose shape plainly keeps every
rule of ``unmask.ir.json_reader`` (plain ``{"atom": NAME}`` arguments, an atom declaration with a
valid name and a known role, a grounding pair of a judge and a context atom), else None; the reader
then reads that value field by field, which words every problem. A quick answer is always the one
the slow path would give (tests/replay/test_reading_quick.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from unmask import ir
from unmask.plumbing.names import IDENT_PATTERN

_IDENT = IDENT_PATTERN
ATOM_NAME_RE = re.compile(rf"{_IDENT}(\(\s*{_IDENT}(\s*,\s*{_IDENT})*\s*\))?\Z")


def quick_atoms(args: list, atoms: Mapping[str, Any] | None) -> list[ir.Expr] | None:
    """The atoms of an operator's arguments when every one is a plain ``{"atom": NAME}``
    naming a declared atom (any name when ``atoms`` is None), else None: the arguments are
    then read one by one, which words every problem."""
    out: list[ir.Expr] = []
    for a in args:
        if a.__class__ is not dict or len(a) != 1:
            return None
        name = a.get("atom")
        if name.__class__ is not str or (atoms is not None and name not in atoms):
            return None
        out.append(ir.mk_atom(name))
    return out


_ATOM_KEYS = ("name", "role", "description")
_QUICK_ATOM_KEYS = frozenset(_ATOM_KEYS)


def quick_atom_decl(a: Any) -> ir.AtomDecl | None:
    """An atom declaration when every rule plainly holds for it (a valid name, a known
    role, a string description if any), else None; whether its name is new is the
    caller's to check."""
    if a.__class__ is not dict or not a.keys() <= _QUICK_ATOM_KEYS:
        return None
    name = a.get("name")
    role = a.get("role")
    desc = a.get("description", "")
    if (
        name.__class__ is not str
        or role.__class__ is not str
        or desc.__class__ is not str
        or role not in ir.ROLES
        or not ATOM_NAME_RE.match(name)
    ):
        return None
    return ir.AtomDecl(name, role, desc)


_PAIR_KEYS = ("judge", "context", "direction")
_QUICK_PAIR_KEYS = frozenset(_PAIR_KEYS)


def quick_pair(g: Any, names: Mapping[str, str | None]) -> ir.GroundPair | None:
    """A grounding pair of two atom names, a judge atom and a context atom, with a known
    direction; else None."""
    if g.__class__ is not dict or not g.keys() <= _QUICK_PAIR_KEYS:
        return None
    judge = g.get("judge")
    context = g.get("context")
    direction = g.get("direction", "~")
    if (
        judge.__class__ is not str
        or context.__class__ is not str
        or direction.__class__ is not str
        or direction not in ir.DIRECTIONS
        or names.get(judge) != "judge"
        or names.get(context) != "context"
    ):
        return None
    return ir.GroundPair(ir.mk_atom(judge), ir.mk_atom(context), direction=direction)
