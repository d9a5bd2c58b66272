"""Writing the ground IR as JSON (SPEC section 3).

Contract: ``protocol_to_json`` gives the fixed ``unmask.protocol/1`` form with keys in the
order SPEC shows; ``expr_to_json`` the expression form. Reading JSON back, with validation
and JSON paths in every error, lives in ``unmask.replay``.
"""

from __future__ import annotations

from typing import Any

from unmask.ir import Atom, Binary, Card, Const, Expr, Nary, Not, Protocol

PROTOCOL_SCHEMA = "unmask.protocol/1"


def expr_to_json(e: Expr) -> dict[str, Any]:
    if isinstance(e, Atom):
        return {"atom": e.name}
    if isinstance(e, Const):
        return {"const": e.value}
    if isinstance(e, Not):
        return {"op": "not", "args": [expr_to_json(e.arg)]}
    if isinstance(e, Nary):
        return {"op": e.op, "args": [expr_to_json(a) for a in e.args]}
    if isinstance(e, Binary):
        return {"op": e.op, "args": [expr_to_json(e.left), expr_to_json(e.right)]}
    if isinstance(e, Card):
        return {"op": e.op, "k": e.k, "args": [expr_to_json(a) for a in e.args]}
    raise TypeError(f"not an expression: {e!r}")


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
