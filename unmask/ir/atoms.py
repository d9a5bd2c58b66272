"""A node's atoms over a memo that many expressions share.

Contract: ``atom_order(e, memo)`` is ``tuple(iter_atoms(e))``: e's atom names in
first-occurrence order, each once. With one ``memo`` for many expressions each distinct
node is stepped once however many of them share it (a node's atoms are its children's, in
order, each once), so the parts of a protocol whose decisions share a chain (first-match:
D_L holds every earlier decision) cost one visit per node, not one walk per part. The
merge of the atoms is counted for a caller's deadline (``unmask.plumbing.budget``).
"""

from __future__ import annotations

import itertools

from unmask.ir.nodes import Atom, Expr, Memo, children, fold, small_shape
from unmask.plumbing.budget import tick


def atom_order(
    e: Expr, memo: Memo | None = None, uses: dict[int, int] | None = None
) -> tuple[str, ...]:
    """``tuple(iter_atoms(e))``, found by a fold: with ``memo`` kept between calls, each
    distinct node of all the expressions asked is visited once (a node's atoms are its
    children's, in order, each once). n first-match decisions over one chain: n visits
    in all, where a walk per decision made n^2 / 2 (2,000 labels: 3 s before any clock).
    ``uses`` (by id, how often a node's atoms are still to be read: once per parent, once
    per expression to be asked) lets the memo drop them at their last reading."""
    shape = small_shape(e)
    if shape is not None:
        return (shape[1],) if shape[1] == shape[2] else (shape[1], shape[2])
    if memo is None or uses is None:
        return fold(e, _atoms_step, memo)
    kept, counts = memo, uses

    def step(node: Expr, values: list[tuple[str, ...]]) -> tuple[str, ...]:
        for c in children(node):  # read (``values``): the last reader lets them go
            _read(c, kept, counts)
        return _atoms_step(node, values)

    got = fold(e, step, memo)
    _read(e, memo, uses)
    return got


def _read(node: Expr, memo: Memo, uses: dict[int, int]) -> None:
    left = uses[id(node)] = uses[id(node)] - 1
    if left == 0:  # the chain's inner lists were two thirds of the memory
        memo[id(node)] = (node, ())


def _atoms_step(node: Expr, values: list[tuple[str, ...]]) -> tuple[str, ...]:
    if node.__class__ is Atom:
        return (node.name,)  # type: ignore[union-attr]
    filled = [v for v in values if v]
    if len(filled) <= 1:
        return filled[0] if filled else ()
    # the merge is C's work on the atoms themselves, never a walk of the nodes again; it
    # is counted for a caller's deadline, since a fold over a shared memo meets few nodes
    merged = tuple(dict.fromkeys(itertools.chain.from_iterable(filled)))
    tick(len(merged))
    return merged
