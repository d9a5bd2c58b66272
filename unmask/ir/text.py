"""Expressions as ``.proto`` text: the one printer of the IR.

Contract: ``expr_text(e)`` writes ``e`` in the language's syntax with the fewest
parentheses the precedence allows; a definition is shown by its name, as written
(``expand=True`` shows what it stands for instead). It walks with the IR's one fold (no
recursion) and refuses to print past a depth a reader could follow, or an expansion past
``MAX_EXPANDED_NODES`` (definitions that use each other twice double at each step).
Reports, renders and analysis findings all show expressions through it, so one protocol
reads the same everywhere.
"""

from __future__ import annotations

from unmask.ir import PRECEDENCE, Atom, Binary, Card, Expr, Nary, Table, depth, size

_MAX_SHOWN_DEPTH = 60
# the most nodes an expansion prints: a chain of 30 doubling definitions stands for a
# billion nodes, which no reader follows and no report should spend gigabytes writing
MAX_EXPANDED_NODES = 20_000


def expr_text(e: Expr, parent: int = 0, *, expand: bool = False) -> str:
    """The expression in ``.proto`` syntax (for showing the decision or a constraint)."""
    if e.__class__ is Atom:  # most grounding sides: an atom prints as its name
        return e.name
    if parent == 0 and depth(e) > _MAX_SHOWN_DEPTH:
        return f"(an expression nested {depth(e)} deep, not shown)"
    if expand and parent == 0 and size(e) > MAX_EXPANDED_NODES:
        return f"(an expression of {size(e)} nodes written out, not shown)"
    return _wrap((_EXPANDED if expand else _TEXT)(e), parent)


# a printed subexpression and how tightly it binds (atoms, constants and calls never need
# parentheses)
_Text = tuple[str, int]
_ATOMIC = max(PRECEDENCE.values()) + 1


def _wrap(sub: _Text, parent: int) -> str:
    text, prec = sub
    return f"({text})" if prec < parent else text


def _nary_text(_: None, e: Nary, v: list[_Text]) -> _Text:
    prec = PRECEDENCE[e.op]
    return f" {e.op} ".join(_wrap(a, prec + 1) for a in v), prec


def _binary_text(_: None, e: Binary, v: list[_Text]) -> _Text:
    prec = PRECEDENCE[e.op]
    # implies groups to the right, so its right side needs no parentheses at its own level
    right = _wrap(v[1], prec if e.op == "implies" else prec + 1)
    return f"{_wrap(v[0], prec + 1)} {e.op} {right}", prec


_ENTRIES: dict = {
    "const": lambda _, e, v: ("true" if e.value else "false", _ATOMIC),
    "atom": lambda _, e, v: (e.name, _ATOMIC),
    "not": lambda _, e, v: ("not " + _wrap(v[0], PRECEDENCE["not"]), PRECEDENCE["not"]),
    Nary: _nary_text,
    Binary: _binary_text,
    Card: lambda _, e, v: (f"{e.op}({e.k}, {', '.join(t for t, _ in v)})", _ATOMIC),
}
# as written: a definition by its name
_TEXT: Table[_Text] = Table("text", {**_ENTRIES, "ref": lambda _, e, v: (e.name, _ATOMIC)})
# expanded: a definition by what it stands for
_EXPANDED: Table[_Text] = Table("expanded text", {**_ENTRIES, "ref": lambda _, e, v: v[0]})
