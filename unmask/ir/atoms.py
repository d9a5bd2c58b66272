"""A node's atoms over a memo that many expressions share.

Contract: ``atom_order(e, memo)`` is ``tuple(iter_atoms(e))``: e's atom names in
first-occurrence order, each once. With one ``memo`` for many expressions each distinct
node is stepped once however many of them share it (a node's atoms are its children's, in
order, each once), so the parts of a protocol whose decisions share a chain (first-match:
D_L holds every earlier decision) cost one visit per node, not one walk per part. The
merge of the atoms is counted for a caller's deadline (``unmask.plumbing.budget``).

``part_atoms(p)`` is how many atom names a check's parts of ``p`` hold together (each part's
atoms once per part, ``unmask.checking.bases.proto_parts``), never less, found without making
them: linear in the written decisions, where the parts of n first-match labels hold n^2 / 2.
"""

from __future__ import annotations

import itertools

from unmask.ir.nodes import Atom, Expr, Memo, Protocol, children, fold, iter_atoms, small_shape
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


def part_atoms(p: Protocol) -> int:
    """How many atom names B_proto's parts hold together, counted once per part: a bound
    from above (smart constructors only ever drop atoms; it is exact when no decision folds
    to a constant), found from the written expressions, so a limit is checked before any
    part is made. Under first-match label L's part holds L's verdict variable, L's atoms
    and every earlier label's (its decision excludes theirs), so n labels hold about
    n^2 / 2: 20,000 of them, 200 million names, 1.6 GB."""
    total = sum(len(set(iter_atoms(c.expr))) for c in p.constraints)
    if not p.declared_labels:
        assert p.decision is not None
        return total + 1 + len(set(iter_atoms(p.decision)))
    total += len(p.labels)  # the part "exactly one verdict variable holds"
    written = [d for d in p.decisions if d.expr is not None]
    seen: set[str] = set()  # every written decision's atoms, so far
    for d in written:
        own = set(iter_atoms(d.expr))  # type: ignore[arg-type]
        if p.first_match:
            own -= seen
            total += 1 + len(seen) + len(own)  # L's own, and the earlier labels'
        else:
            total += 1 + len(own)
        seen |= own
    otherwise = len(p.decisions) - len(written)  # each is "no written decision holds"
    return total + otherwise * (1 + len(seen))
