"""Writing the ground IR as JSON.

Contract: ``protocol_to_json`` gives the ``unmask.protocol/1`` form with keys in a fixed
order (schema, name, text, atoms, constraints, decision, requirements, grounding). A protocol
that uses nothing but the binary form is written exactly as before labels existed; a
protocol that declares labels writes ``labels`` and ``decisions`` where a binary one writes
``decision``; definitions are listed in ``definitions`` (after ``atoms``) and referred to as
``{"def": NAME}``; a grounding side that is not a single atom is an expression object, and
a one-way pair adds ``"direction": "~>"``. ``expr_to_json`` gives the expression form, and
``dumps`` prints either as indented JSON text, both without recursion (expressions may be
deep). The format is ``unmask.ir.format``'s structs: what is written converts to them, key
for key in their order (tests/ir/test_ir_format.py); it is built here as plain values, without
recursion, since msgspec's encoder recurses per level. Reading JSON back, with validation
and JSON paths in every error, is ``unmask.ir.json_reader``.
"""

from __future__ import annotations

import json
from typing import Any

from unmask.ir import Atom, Binary, Card, Expr, GroundPair, Nary, Protocol, Table
from unmask.ir.format import PROTOCOL_SCHEMA

_JSON: Table[dict[str, Any]] = Table(
    "JSON",
    {
        "atom": lambda _, e, v: {"atom": e.name},
        "const": lambda _, e, v: {"const": e.value},
        # a definition is written once, in `definitions`; a use names it
        "ref": lambda _, e, v: {"def": e.name},
        "not": lambda _, e, v: {"op": "not", "args": v},
        Nary: lambda _, e, v: {"op": e.op, "args": v},
        Binary: lambda _, e, v: {"op": e.op, "args": v},
        Card: lambda _, e, v: {"op": e.op, "k": e.k, "args": v},
    },
)


def expr_to_json(e: Expr) -> dict[str, Any]:
    return _JSON(e)


def dumps(value: Any, indent: int = 2) -> str:
    """``json.dumps(value, indent=indent, ensure_ascii=False)`` without recursion, so the
    JSON of a deep expression can be printed (the standard encoder recurses per level)."""
    out: list[str] = []
    # (a value to write, its nesting level, True) or (text to copy as it is, _, False)
    stack: list[tuple[Any, int, bool]] = [(value, 0, True)]
    while stack:
        item, level, is_value = stack.pop()
        if not is_value:
            out.append(item)
            continue
        if isinstance(item, dict) and item:
            inner = "\n" + " " * (indent * (level + 1))
            out.append("{")
            stack.append(("\n" + " " * (indent * level) + "}", level, False))
            entries = list(item.items())
            for k, (key, v) in reversed(list(enumerate(entries))):
                stack.append((v, level + 1, True))
                sep = "," if k else ""
                stack.append(
                    (f"{sep}{inner}{json.dumps(str(key), ensure_ascii=False)}: ", 0, False)
                )
        elif isinstance(item, list) and item:
            inner = "\n" + " " * (indent * (level + 1))
            out.append("[")
            stack.append(("\n" + " " * (indent * level) + "]", level, False))
            for k in reversed(range(len(item))):
                stack.append((item[k], level + 1, True))
                stack.append((("," if k else "") + inner, 0, False))
        else:
            out.append(json.dumps(item, ensure_ascii=False))
    return "".join(out)


def _side(e: Expr) -> str | dict[str, Any]:
    return e.name if isinstance(e, Atom) else expr_to_json(e)


def _ground_to_json(g: GroundPair) -> dict[str, Any]:
    out: dict[str, Any] = {"judge": _side(g.judge), "context": _side(g.context)}
    if g.direction != "~":
        out["direction"] = g.direction
    return out


def protocol_to_json(p: Protocol) -> dict[str, Any]:
    out: dict[str, Any] = {
        "schema": PROTOCOL_SCHEMA,
        "name": p.name,
        "text": p.text,
        "atoms": [{"name": a.name, "role": a.role, "description": a.description} for a in p.atoms],
    }
    if p.definitions:
        out["definitions"] = [{"name": d.name, "expr": expr_to_json(d.expr)} for d in p.definitions]
    out["constraints"] = [{"name": c.name, "expr": expr_to_json(c.expr)} for c in p.constraints]
    if p.declared_labels:
        out["labels"] = list(p.labels)
        if p.first_match:
            out["first_match"] = True
        out["decisions"] = [
            {"label": d.label, "otherwise": True}
            if d.expr is None
            else {"label": d.label, "expr": expr_to_json(d.expr)}
            for d in p.decisions
        ]
    else:
        assert p.decision is not None
        out["decision"] = expr_to_json(p.decision)
    out["requirements"] = [
        {
            "id": r.id,
            "description": r.description,
            "expr": expr_to_json(r.expr),
            "addressed": None if r.addressed is None else expr_to_json(r.addressed),
        }
        for r in p.requirements
    ]
    out["grounding"] = [_ground_to_json(g) for g in p.grounding]
    return out
