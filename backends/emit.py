"""The lowering of a protocol for other tools: SMT-LIB 2 and DIMACS (``unmaskc --emit``).

Contract: both formats state B_proto and nothing else that constrains (no annotation is
known at compile time). For a protocol without declared labels that is K ∧ (V ⇔ D): the
constraints K, and the verdict V equivalent to the decision D. For one with labels
L1…Ln it is K ∧ exactly-one(V_L1 … V_Ln) ∧ ⋀ (V_L ⇔ D_L), an ``otherwise`` decision
expanded to the negation of the others.
- ``emit_smt2``: a self-contained SMT-LIB 2.6 script: one ``declare-const`` per atom in
  declaration order, then the verdict ``pass`` (or one ``verdict_LABEL`` per label, in
  declaration order); each definition the protocol uses as a ``define-fun`` (named as
  written, in dependency order; uses of it call it); one named assertion per constraint
  (``constraint_NAME``), then ``labels`` (exactly one label) and one ``decision_LABEL`` per
  label, or the one ``decision``; requirements, coverage and grounding as ``define-fun``s
  (named, unasserted, for ``check-sat-assuming``; a one-way grounding is ``=>``, a two-way
  one ``=``); ``(check-sat)``. Cardinalities are sums of ``ite`` terms (logic ``QF_LIA``;
  ``QF_UF`` when there are none). Printed independently of any solver, so the output is
  byte-stable.
- ``emit_dimacs``: the Tseitin CNF (``unmask.backends.cnf``) with ``c`` comment lines mapping
  variables 1..n to the atoms, the next ones to the verdict (``c var N verdict pass``, or one
  ``c var N verdict LABEL`` per label), and naming the literal of each constraint, of the
  exactly-one over the labels (``c labels literal``) and of each decision (``c decision
  literal`` or ``c decision LABEL literal``); each of those literals is asserted by a unit
  clause.
"""

from __future__ import annotations

import re

from unmask.ir import (
    CARD_OPS,
    KINDS,
    VERDICT_ATOM,
    Card,
    Expr,
    Nary,
    Protocol,
    Table,
    mk_and,
    mk_atom,
    mk_iff,
    mk_not,
    mk_or,
)
from unmask.ir import LABEL_PREFIX as LABEL_ATOM_PREFIX
from unmask.ir.text import expr_text
from unmask.plumbing.safe import UNSAFE

VERDICT = "pass"  # the verdict variable V in both formats; `pass` is never an atom name
LABEL_PREFIX = "verdict_"  # the SMT-LIB symbol of label L's verdict variable V_L


def label_key(label: str) -> str:
    """The name of V_L among the atoms, as in the checker (never an atom's name)."""
    return f"{LABEL_ATOM_PREFIX}{label}"


def verdict_keys(protocol: Protocol) -> list[str]:
    """The verdict variables, in order: ``$pass``, or one per declared label."""
    if not protocol.declared_labels:
        return [VERDICT_ATOM]
    return [label_key(x) for x in protocol.labels]


def exactly_one(vars_: list[Expr]) -> Expr:
    """At least one, and no two (pairwise, so no arithmetic is needed)."""
    pairs = [mk_not(mk_and((a, b))) for i, a in enumerate(vars_) for b in vars_[i + 1 :]]
    return mk_and([mk_or(vars_), *pairs])


_SIMPLE = re.compile(r"[A-Za-z~!@$%^&*_\-+=<>.?/][A-Za-z0-9~!@$%^&*_\-+=<>.?/]*\Z")
# SMT-LIB reserved words and the symbols of the Core and Ints theories: quoting does not
# make a symbol different (|ite| is ite), so atoms spelled like these are renamed
_RESERVED = frozenset(
    """! _ as BINARY DECIMAL exists HEXADECIMAL forall let match NUMERAL par STRING
    assert check-sat check-sat-assuming declare-const declare-datatype declare-datatypes
    declare-fun declare-sort define-fun define-fun-rec define-funs-rec define-sort echo exit
    get-assertions get-assignment get-info get-model get-option get-proof get-unsat-assumptions
    get-unsat-core get-value pop push reset reset-assertions set-info set-logic set-option
    true false not => and or xor = distinct ite Bool Int + - * div mod abs <= < >= >""".split()  # noqa: SIM905 - a word list reads better than 66 quoted strings
)


def _one_line(text: str) -> str:
    """Text for a comment: one line, and no control character (a NUL would end the script
    for a reader written in C, such as z3's) or bidirectional override (the output policy,
    ``unmask.plumbing.safe``: a reader would see the rest of the line reversed)."""
    text = " ".join(text.split())
    return UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class _Symbols:
    """Distinct SMT-LIB symbols for atom and assertion names, quoted where needed."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def take(self, name: str) -> str:
        # a quoted symbol cannot hold `|` or `\`; no valid name has them, but stay well-formed
        sym = name.replace("|", "_").replace("\\", "_")
        sym = sym if sym not in _RESERVED else f"{sym}_"
        while sym in self.used or sym in _RESERVED:
            sym += "_"
        self.used.add(sym)
        return sym if _SIMPLE.match(sym) else f"|{sym}|"


def smt2_symbols(protocol: Protocol) -> dict[str, str]:
    """Atom name (and ``VERDICT``'s key ``$pass``) -> the symbol ``emit_smt2`` declares."""
    syms = _Symbols()
    # names SMT-LIB accepts keep their spelling; only reserved ones move aside
    out = {a.name: syms.take(a.name) for a in protocol.atoms if a.name not in _RESERVED}
    out.update({a.name: syms.take(a.name) for a in protocol.atoms if a.name in _RESERVED})
    if protocol.declared_labels:
        for label in protocol.labels:
            out[label_key(label)] = syms.take(LABEL_PREFIX + label)
    else:
        out[VERDICT_ATOM] = syms.take(VERDICT)
    return out


def _smt_nary(_: dict[str, str], e: Nary, v: list[str]) -> str:
    if len(v) <= 1:  # raw IR may hold and() or or(x); SMT-LIB needs two arguments
        return v[0] if v else ("true" if e.op == "and" else "false")
    return f"({e.op} {' '.join(v)})"


def _smt_card(_: dict[str, str], e: Card, v: list[str]) -> str:
    terms = [f"(ite {a} 1 0)" for a in v]
    total = "0" if not terms else terms[0] if len(terms) == 1 else f"(+ {' '.join(terms)})"
    return f"({_SMT_CARD[e.op]} {total} {e.k})"


_SMT_CARD = {"atleast": ">=", "atmost": "<=", "exactly": "="}
_SMT: Table[str] = Table(
    "SMT-LIB",
    {
        "const": lambda names, e, v: "true" if e.value else "false",
        "atom": lambda names, e, v: names[e.name],
        # a definition with a `define-fun` is called by name; otherwise it is its body
        "ref": lambda names, e, v: names.get(_def_key(e.name), v[0]),
        "not": lambda names, e, v: f"(not {v[0]})",
        Nary: _smt_nary,
        "implies": lambda names, e, v: f"(=> {v[0]} {v[1]})",
        "iff": lambda names, e, v: f"(= {v[0]} {v[1]})",
        Card: _smt_card,
    },
)
# does a formula count (so it needs integer arithmetic)?
_HAS_CARD: Table[bool] = Table(
    "cardinality detection",
    {kind: (lambda _, e, v: e.kind in CARD_OPS or any(v)) for kind in KINDS},
)


def _def_key(name: str) -> str:
    return f"$def:{name}"


def _smt_expr(e: Expr, names: dict[str, str]) -> str:
    return _SMT(e, names)


def _has_card(e: Expr) -> bool:
    return _HAS_CARD(e)


def emit_smt2(protocol: Protocol) -> str:
    """SMT-LIB 2 script of B_proto (see the module docstring)."""
    names = smt2_symbols(protocol)
    syms = _Symbols()
    syms.used |= {s.strip("|") for s in names.values()}
    logic = "QF_LIA" if any(_has_card(e) for e in protocol.exprs()) else "QF_UF"
    labelled = protocol.declared_labels
    if labelled:
        head = [
            "; unmask: B_proto = K and exactly-one(V_L) and (V_L <=> D_L) for each label of "
            f"protocol {_one_line(protocol.name)}",
            f"; `{LABEL_PREFIX}L` is the verdict variable V_L (true means the verdict is L)",
        ]
    else:
        head = [
            f"; unmask: B_proto = K and ({VERDICT} <=> D) of protocol {_one_line(protocol.name)}",
            f"; `{VERDICT}` is the verdict variable V (true means PASS)",
        ]
    out = [
        *head,
        "(set-info :smt-lib-version 2.6)",
        "(set-option :produce-unsat-cores true)",
        f"(set-logic {logic})",
    ]
    for a in protocol.atoms:
        note = f"{a.role} {_one_line(a.description)}".rstrip()
        if names[a.name].strip("|") != a.name:
            note += f" (atom `{a.name}`)"
        out.append(f"(declare-const {names[a.name]} Bool) ; {note}")
    for key in verdict_keys(protocol):
        note = "verdict" if not labelled else f"verdict `{key.removeprefix(LABEL_ATOM_PREFIX)}`"
        out.append(f"(declare-const {names[key]} Bool) ; {note}")
    names = dict(names)
    for d in protocol.definitions:
        # the body is printed before the name is known, so it never calls itself
        body = _smt_expr(d.expr, names)
        sym = syms.take(d.name)
        out.append(f"(define-fun {sym} () Bool {body}) ; definition")
        names[_def_key(d.name)] = sym
    for c in protocol.constraints:
        label = syms.take(f"constraint_{c.name}")
        out.append(f"(assert (! {_smt_expr(c.expr, names)} :named {label}))")
    if labelled:
        vars_ = " ".join(names[label_key(x)] for x in protocol.labels)
        # exactly one: at least one, and no two (pairwise: SMT-LIB's core has no counting)
        nots = [
            f"(not (and {names[label_key(a)]} {names[label_key(b)]}))"
            for i, a in enumerate(protocol.labels)
            for b in protocol.labels[i + 1 :]
        ]
        out.append(f"(assert (! (and (or {vars_}) {' '.join(nots)}) :named {syms.take('labels')}))")
        for label in protocol.labels:
            decision = _smt_expr(protocol.decision_for(label), names)
            name = syms.take(f"decision_{label}")
            out.append(f"(assert (! (= {names[label_key(label)]} {decision}) :named {name}))")
    else:
        v = names[VERDICT_ATOM]
        assert protocol.decision is not None  # a binary protocol has its D (``ir.Protocol``)
        decision = _smt_expr(protocol.decision, names)
        out.append(f"(assert (! (= {v} {decision}) :named {syms.take('decision')}))")
    for r in protocol.requirements:
        holds = syms.take(f"requirement_{r.id}")
        out.append(f"(define-fun {holds} () Bool {_smt_expr(r.expr, names)})")
        if r.addressed is not None:
            addressed = syms.take(f"addressed_{r.id}")
            out.append(f"(define-fun {addressed} () Bool {_smt_expr(r.addressed, names)})")
    for g in protocol.grounding:
        label = syms.take(f"ground_{expr_text(g.judge)}_{expr_text(g.context)}")
        op = "=>" if g.direction == "~>" else "="
        sides = f"{_smt_expr(g.judge, names)} {_smt_expr(g.context, names)}"
        out.append(f"(define-fun {label} () Bool ({op} {sides}))")
    out.append("(check-sat)")
    return "\n".join(out) + "\n"


def emit_dimacs(protocol: Protocol) -> str:
    """DIMACS CNF of B_proto with a comment table (see the module docstring)."""
    from unmask.backends.cnf import CnfEncoder

    keys = verdict_keys(protocol)
    enc = CnfEncoder([*protocol.atom_names, *keys])
    name = _one_line(protocol.name)
    if protocol.declared_labels:
        notes = [
            "c unmask: CNF of B_proto = K and exactly-one(V_L) and (V_L <=> D_L) for each "
            f"label of protocol {name}"
        ]
    else:
        notes = [f"c unmask: CNF of B_proto = K and ({VERDICT} <=> D) of protocol {name}"]
    notes.append("c full-equivalence Tseitin; variables after the verdict are auxiliary")
    for a in protocol.atoms:
        notes.append(f"c var {enc.atom_var(a.name)} atom {a.name} {a.role}")
    if not protocol.declared_labels:
        notes.append(f"c var {enc.atom_var(VERDICT_ATOM)} verdict {VERDICT}")
    else:
        for label in protocol.labels:
            notes.append(f"c var {enc.atom_var(label_key(label))} verdict {label}")
    for c in protocol.constraints:
        notes.append(f"c constraint {c.name} literal {enc.assert_(c.expr)}")
    if not protocol.declared_labels:
        assert protocol.decision is not None  # a binary protocol has its D (``ir.Protocol``)
        decision = mk_iff(mk_atom(VERDICT_ATOM), protocol.decision)
        notes.append(f"c decision literal {enc.assert_(decision)}")
    else:
        one = exactly_one([mk_atom(k) for k in keys])
        notes.append(f"c labels literal {enc.assert_(one)}")
        for label in protocol.labels:
            decision = mk_iff(mk_atom(label_key(label)), protocol.decision_for(label))
            notes.append(f"c decision {label} literal {enc.assert_(decision)}")
    lines = [*notes, f"p cnf {enc.top} {len(enc.clauses)}"]
    lines.extend(" ".join(map(str, c)) + " 0" for c in enc.clauses)
    return "\n".join(lines) + "\n"
