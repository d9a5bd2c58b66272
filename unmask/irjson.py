"""Writing the ground IR as JSON.

Contract: ``protocol_to_json`` gives the fixed ``unmask.protocol/1`` form with keys in a
fixed order (schema, name, text, atoms, constraints, decision, requirements, grounding);
``expr_to_json`` the expression form, and ``dumps`` prints either as indented JSON text,
both without recursion (expressions may be deep). Reading
JSON back, with validation and JSON paths in every error, lives in ``unmask.replay``.
"""

from __future__ import annotations

import json
from typing import Any

from unmask.ir import Binary, Card, Expr, Nary, Protocol, Table

PROTOCOL_SCHEMA = "unmask.protocol/1"

_JSON: Table[dict[str, Any]] = Table(
    "JSON",
    {
        "atom": lambda _, e, v: {"atom": e.name},
        "const": lambda _, e, v: {"const": e.value},
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


def protocol_to_json(p: Protocol) -> dict[str, Any]:
    return {
        "schema": PROTOCOL_SCHEMA,
        "name": p.name,
        "text": p.text,
        "atoms": [{"name": a.name, "role": a.role, "description": a.description} for a in p.atoms],
        "constraints": [{"name": c.name, "expr": expr_to_json(c.expr)} for c in p.constraints],
        "decision": expr_to_json(p.decision),
        "requirements": [
            {
                "id": r.id,
                "description": r.description,
                "expr": expr_to_json(r.expr),
                "addressed": None if r.addressed is None else expr_to_json(r.addressed),
            }
            for r in p.requirements
        ],
        "grounding": [{"judge": g.judge, "context": g.context} for g in p.grounding],
    }
