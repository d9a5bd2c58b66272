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
from unmask.plumbing.budget import tick

# the reified totalizer of this module: one unary counter capped at min(k, n-k+1) serves
# both halves of `v <-> atleast(k)`, so its size is about n * min(k, n-k+1) clauses. A
# `CardEnc` encoding of `atleast(k)` counts the false arguments up to n-k, and its other
# half the true ones up to k-1: n^2 clauses for any k (a cardinality over 20,000
# arguments ran for minutes and took gigabytes). Measured on the 200-claim base before it,
# the k-modulo totalizer was the best of `CardEnc`'s (docs/backends.md); it stays as the
# encoding of a counter past TOTALIZER_BUDGET, with cardinality networks past that.
REIFIED = -1
DEFAULT_CARD_ENCODING = REIFIED
TOTALIZER_BUDGET = 2_000_000  # n * cap past which the counter gives way to a network
CARD_ENCODINGS = {
    "reified": REIFIED,
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

    def copy(self) -> CnfEncoder:
        """An encoder in this one's state (its variables, what it has encoded, the clauses
        not yet taken), which encodes from here exactly as this one would, apart from it;
        only for a pool that names no object (``plain_pool``: this module names none)."""
        pool = self.pool
        other = CnfEncoder.__new__(CnfEncoder)
        other.pool = IDPool(
            start_from=pool.top + 1, occupied=[list(x) for x in getattr(pool, "_occupied", ())]
        )
        other.clauses = list(self.clauses)  # the clauses are never changed, only added
        other.card_encoding = self.card_encoding
        other._atoms = dict(self._atoms)
        other._true = self._true
        other._keys = dict(self._keys)
        other._memo = dict(self._memo)
        return other

    @property
    def plain_pool(self) -> bool:
        """Whether the pool names no object (every variable anonymous): ``copy`` holds."""
        return not self.pool.obj2id and not self.pool.id2obj

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
        if new and self.card_encoding == REIFIED:
            cap = min(k, n - k + 1)
            if n * cap <= TOTALIZER_BUDGET:
                # count the true arguments up to k, or the false ones up to n-k+1
                # (atleast k of them true = not atleast n-k+1 of them false)
                count = args if cap == k else tuple(-x for x in args)
                out = self._totalizer(count, cap)
                self._equal(v, out if cap == k else -out)
                return v
        if new and self.card_encoding == REIFIED:
            # a bound far from both ends: the arguments summed in binary, O(n) clauses
            # (a cardinality network's n log^2 n, built in one C call, was 62 s and 3.7 GB
            # at 20,000 arguments and k = 10,000, and no deadline could cut it)
            self._equal(v, self._sum_atleast(args, k))
            return v
        if new:
            enc = self.card_encoding
            # v -> at least k; -v -> at most k-1 (each encoding with its own aux vars)
            ge = CardEnc.atleast(list(args), bound=k, vpool=self.pool, encoding=enc)
            self.clauses.extend([-v, *c] for c in ge.clauses)
            le = CardEnc.atmost(list(args), bound=k - 1, vpool=self.pool, encoding=enc)
            self.clauses.extend([v, *c] for c in le.clauses)
        return v

    def _sum_atleast(self, lits: tuple[int, ...], k: int) -> int:
        """A literal for "at least ``k`` of ``lits``", exact both ways: the arguments
        added up by a balanced tree of ripple-carry adders (each sum and carry bit defined
        both ways), then the sum compared with ``k`` bit by bit: O(n) clauses."""
        level: list[list[int]] = [[x] for x in lits]
        while len(level) > 1:
            tick(len(level))
            nxt = [self._add(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        total = level[0]  # little-endian bits of the count
        if k >= 1 << len(total):
            return self._const(False)
        # ge: the low i+1 bits of the count are at least those of k
        ge = self._const(True)
        for i, bit in enumerate(total):
            ge = self.and_([bit, ge]) if (k >> i) & 1 else -self.and_([-bit, -ge])
        return ge

    def _add(self, a: list[int], b: list[int]) -> list[int]:
        """The little-endian bits of the sum of two little-endian numbers."""
        out: list[int] = []
        carry: int | None = None
        for i in range(max(len(a), len(b))):
            bits = [
                x
                for x in (a[i] if i < len(a) else None, b[i] if i < len(b) else None, carry)
                if x is not None
            ]
            if len(bits) == 1:
                out.append(bits[0])
                carry = None
                continue
            out.append(self.xor_(bits))
            if len(bits) == 2:
                carry = self.and_(bits)
            else:  # the majority of three
                x, y, z = bits
                carry = -self.and_([-self.and_([x, y]), -self.and_([x, z]), -self.and_([y, z])])
        if carry is not None:
            out.append(carry)
        return out

    def _equal(self, v: int, x: int) -> None:
        self.clauses.extend([[-v, x], [v, -x]])

    def _totalizer(self, lits: tuple[int, ...], cap: int) -> int:
        """A literal for "at least ``cap`` of ``lits``", exact both ways: a balanced tree
        of unary counters (Bailleux and Boufkhad's totalizer), each node's outputs
        ``r[j]`` (at least j below it) kept up to ``cap`` only. Built level by level."""
        level: list[list[int]] = [[x] for x in lits]
        while len(level) > 1:
            nxt = [self._merge(level[i], level[i + 1], cap) for i in range(0, len(level) - 1, 2)]
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        return level[0][cap - 1]

    def _merge(self, a: list[int], b: list[int], cap: int) -> list[int]:
        """Outputs ``r[0..m-1]`` (``r[j]`` iff at least j+1 below) of a node over two
        children's outputs, ``m`` = min(len a + len b, cap)."""
        m = min(len(a) + len(b), cap)
        r = [self.pool.id() for _ in range(m)]
        tick(2 * (len(a) + 1) * (len(b) + 1))  # the clauses below: a deadline cuts them
        add = self.clauses.append
        for i in range(len(a) + 1):
            for j in range(len(b) + 1):
                if i + j == 0:
                    continue
                # i true on the left and j on the right: at least i+j (capped)
                clause = [r[min(i + j, m) - 1]]
                if i:
                    clause.append(-a[i - 1])
                if j:
                    clause.append(-b[j - 1])
                add(clause)
        for i in range(len(a) + 1):
            for j in range(len(b) + 1):
                if i + j + 1 > m:
                    continue
                # fewer than i+1 on the left and j+1 on the right: fewer than i+j+1
                clause = [-r[i + j]]
                if i < len(a):
                    clause.append(a[i])
                if j < len(b):
                    clause.append(b[j])
                add(clause)
        return r

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
