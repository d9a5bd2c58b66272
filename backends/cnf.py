"""Tseitin lowering of the ground IR to CNF.

Contract:
- ``CnfEncoder.lit(expr)`` returns a literal equivalent to ``expr`` and appends the clauses
  that define it to ``clauses`` (full-equivalence Tseitin: every auxiliary variable is
  defined both ways, so assuming a query's literal true *or* false is sound);
- one variable per distinct subformula: nodes are shared by a structural key built from
  their children's literals (spans ignored; ``and``/``or``/``xor``/``iff`` and cardinality
  arguments are order-insensitive), so repeated subterms cost nothing twice;
- atoms get variables 1..n in the order given to the constructor; auxiliary variables come
  from the same ``IDPool`` after them and never name an atom; atoms first seen inside an
  expression get the next free variable when they appear;
- cardinality constraints use ``pysat.card.CardEnc`` (default encoding chosen by
  measurement, see docs/backends.md), reified as ``v -> atleast(k)`` and
  ``-v -> atmost(k-1)``: both halves guarded, so the reified literal is exact on the atoms;
- the traversal is iterative, so depth is bounded by memory, not by Python's stack.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pysat.card import CardEnc, EncType
from pysat.formula import IDPool

from unmask.ir import Card, Expr, Table

# measured on the 200-claim base with three large cardinalities (docs/backends.md): the
# k-modulo totalizer builds fastest, is smallest and solves fastest
DEFAULT_CARD_ENCODING = EncType.kmtotalizer
CARD_ENCODINGS = {
    "seqcounter": EncType.seqcounter,
    "sortnetwrk": EncType.sortnetwrk,
    "cardnetwrk": EncType.cardnetwrk,
    "totalizer": EncType.totalizer,
    "mtotalizer": EncType.mtotalizer,
    "kmtotalizer": EncType.kmtotalizer,
}


class CnfEncoder:
    """Incremental Tseitin encoder; read ``clauses`` (append-only) after each ``lit``."""

    def __init__(self, atoms: Iterable[str] = (), *, card_encoding: int | None = None) -> None:
        self.pool = IDPool()
        self.clauses: list[list[int]] = []
        self.card_encoding = DEFAULT_CARD_ENCODING if card_encoding is None else card_encoding
        self._atoms: dict[str, int] = {}
        self._true: int | None = None
        self._keys: dict[tuple[Any, ...], int] = {}
        self._memo: dict[int, tuple[Expr, int]] = {}
        for name in atoms:
            self.atom_var(name)

    # --- variables -----------------------------------------------------------------------

    @property
    def top(self) -> int:
        """The largest variable number in use."""
        return self.pool.top

    @property
    def atom_vars(self) -> Mapping[str, int]:
        return self._atoms

    def atom_var(self, name: str) -> int:
        var = self._atoms.get(name)
        if var is None:
            var = self._atoms[name] = self.pool.id()
        return var

    def true_lit(self) -> int:
        """A variable fixed true by a unit clause (allocated on first use)."""
        if self._true is None:
            self._true = self.pool.id()
            self.clauses.append([self._true])
        return self._true

    def _const(self, value: bool) -> int:
        t = self.true_lit()
        return t if value else -t

    def _is_const(self, lit: int) -> bool | None:
        if self._true is not None and abs(lit) == self._true:
            return lit > 0
        return None

    # --- encoding ------------------------------------------------------------------------

    def lit(self, expr: Expr) -> int:
        """A literal equivalent to ``expr`` (its defining clauses are now in ``clauses``)."""
        return _TSEITIN(expr, self, self._memo)

    def _fresh(self, key: tuple[Any, ...]) -> tuple[int, bool]:
        var = self._keys.get(key)
        if var is not None:
            return var, False
        var = self._keys[key] = self.pool.id()
        return var, True

    def and_(self, lits: Iterable[int]) -> int:
        """A literal for the conjunction of ``lits``."""
        keep: set[int] = set()
        for x in lits:
            c = self._is_const(x)
            if c is True:
                continue
            if c is False or -x in keep:
                return self._const(False)
            keep.add(x)
        if not keep:
            return self._const(True)
        if len(keep) == 1:
            return next(iter(keep))
        args = tuple(sorted(keep))
        v, new = self._fresh(("and", args))
        if new:
            self.clauses.extend([-v, x] for x in args)
            self.clauses.append([v, *(-x for x in args)])
        return v

    def xor_(self, lits: Iterable[int]) -> int:
        """A literal for the parity of ``lits`` (a chain of two-input xors)."""
        parity = False
        odd: set[int] = set()
        for x in lits:
            c = self._is_const(x)
            if c is not None:
                parity ^= c
                continue
            if x < 0:
                parity = not parity
            odd ^= {abs(x)}
        vs = sorted(odd)
        if not vs:
            return self._const(parity)
        acc = vs[0]
        for i in range(1, len(vs)):
            b = vs[i]
            v, new = self._fresh(("xor", tuple(vs[: i + 1])))
            if new:
                self.clauses.extend([[-v, acc, b], [-v, -acc, -b], [v, -acc, b], [v, acc, -b]])
            acc = v
        return -acc if parity else acc

    def card_(self, op: str, k: int, lits: Iterable[int]) -> int:
        """A literal for ``atleast``/``atmost``/``exactly`` k of ``lits``."""
        rest: list[int] = []
        for x in lits:
            c = self._is_const(x)
            if c is None:
                rest.append(x)
            elif c:
                k -= 1
        if op == "atleast":
            return self._atleast(k, rest)
        if op == "atmost":
            return -self._atleast(k + 1, rest)
        if op == "exactly":
            return self.and_([self._atleast(k, rest), -self._atleast(k + 1, rest)])
        raise TypeError(f"not a cardinality operator: {op}")

    def _atleast(self, k: int, lits: list[int]) -> int:
        n = len(lits)
        if k <= 0:
            return self._const(True)
        if k > n:
            return self._const(False)
        if k == 1:
            return -self.and_([-x for x in lits])
        if k == n:
            return self.and_(lits)
        args = tuple(sorted(lits))
        v, new = self._fresh(("atleast", k, args))
        if new:
            enc = self.card_encoding
            # v -> at least k; -v -> at most k-1 (each encoding with its own aux vars)
            ge = CardEnc.atleast(list(args), bound=k, vpool=self.pool, encoding=enc)
            self.clauses.extend([-v, *c] for c in ge.clauses)
            le = CardEnc.atmost(list(args), bound=k - 1, vpool=self.pool, encoding=enc)
            self.clauses.extend([v, *c] for c in le.clauses)
        return v

    def assert_(self, expr: Expr) -> int:
        """Add ``expr`` as a hard fact (a unit clause on its literal); returns the literal."""
        x = self.lit(expr)
        self.clauses.append([x])
        return x


_TSEITIN: Table[int] = Table(
    "CNF",
    {
        "const": lambda enc, e, v: enc._const(e.value),
        "atom": lambda enc, e, v: enc.atom_var(e.name),
        "not": lambda enc, e, v: -v[0],
        "and": lambda enc, e, v: enc.and_(v),
        "or": lambda enc, e, v: -enc.and_([-x for x in v]),
        "xor": lambda enc, e, v: enc.xor_(v),
        "implies": lambda enc, e, v: -enc.and_([v[0], -v[1]]),
        "iff": lambda enc, e, v: -enc.xor_(v),
        Card: lambda enc, e, v: enc.card_(e.op, e.k, v),
    },
)
