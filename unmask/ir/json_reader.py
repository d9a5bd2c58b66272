"""Reading the ground protocol IR back from JSON: the inverse of ``unmask.ir.json``.

Contract: ``protocol_from_json`` returns an ``ir.Protocol`` only for an ``unmask.protocol/1``
object that passes every rule, and otherwise raises ``UnmaskError`` with the problems found,
each at its JSON path. The shapes are the structs of ``unmask.ir.format``: JSON is converted
to them in one pass, and only when that fails is it converted key by key and item by item,
so that each problem is worded with what was expected and found (one per item: the first).
What a type cannot say is checked here, over the structs: names are names, declared once
and resolved (atoms, definitions, labels), an expression has one form and its operator's
arity, grounding pairs read judge ~ context, and the bounds of ``Limits`` (atoms, nodes and
depth, definitions written out). ``IrReader`` does the same inside a larger document (a
replay), recording into its ``JsonReader``; ``protocol_from_doc`` reads structs already
converted (a compile-cache entry). Expressions are walked with an explicit stack and built
by ``OPERATORS`` through the IR's smart constructors; one too deep for msgspec's converter
is converted node by node (``unmask.ir.json_convert``), never by recursion.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

import msgspec

from unmask import ir
from unmask.ir.format import EXPR_HELP, FAILED, PROTOCOL_KEYS, Expr, ProtocolDoc
from unmask.plumbing.codes import Code
from unmask.plumbing.frozen import frozen
from unmask.plumbing.jsonreader import (
    NAME_HELP,
    JsonReader,
    did_you_mean,
    index_path,
    join_path,
    show,
)
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.plumbing.names import IDENT_PATTERN, IDENT_RE

__all__ = [
    "ATOM_NAME_RE",
    "IDENT_RE",
    "OPERATORS",
    "OPS",
    "PROTOCOL_KEYS",
    "IrReader",
    "protocol_from_doc",
    "protocol_from_json",
    "unknown_atom",
]

# a ground atom is a plain name or a family member such as `supported(c)`
_I = IDENT_PATTERN
ATOM_NAME_RE = re.compile(rf"{_I}(\(\s*{_I}(\s*,\s*{_I})*\s*\))?\Z")


@frozen
class Operator:
    arity: int | None  # None: any number of arguments
    counts: bool  # takes `k` (a cardinality)
    build: Callable[[int, list[ir.Expr]], ir.Expr]  # (k, args) -> expression


OPERATORS: dict[str, Operator] = {
    "not": Operator(1, False, lambda _k, a: ir.mk_not(a[0])),
    "and": Operator(None, False, lambda _k, a: ir.mk_and(a)),
    "or": Operator(None, False, lambda _k, a: ir.mk_or(a)),
    "xor": Operator(None, False, lambda _k, a: ir.mk_xor(a)),
    "implies": Operator(2, False, lambda _k, a: ir.mk_implies(a[0], a[1])),
    "iff": Operator(2, False, lambda _k, a: ir.mk_iff(a[0], a[1])),
    "atleast": Operator(None, True, lambda k, a: ir.mk_card("atleast", k, a)),
    "atmost": Operator(None, True, lambda k, a: ir.mk_card("atmost", k, a)),
    "exactly": Operator(None, True, lambda k, a: ir.mk_card("exactly", k, a)),
}
OPS = tuple(OPERATORS)
_COUNTING = "/".join(f"`{o}`" for o, spec in OPERATORS.items() if spec.counts)
_BUILD = {op: spec.build for op, spec in OPERATORS.items()}
_mk_atom = ir.mk_atom


def unknown_atom(r: JsonReader, path: str, name: str, atoms: Collection[str]) -> None:
    r.err(Code.UNKNOWN_ATOM, path, f"unknown atom `{show(name)}`", help=did_you_mean(name, atoms))


Names = Mapping[str, "str | None"]


def convert_doc(obj: Any) -> ProtocolDoc:
    """The whole document converted in one pass (raises where ``Converter`` then words
    each problem; tests/replay/test_reading_quick.py reads documents both ways)."""
    return msgspec.convert(obj, ProtocolDoc)


class IrReader:
    """Reads protocol IR and expressions into ``r``, counting nodes across the document."""

    def __init__(self, r: JsonReader):
        self.r = r
        self.nodes = 0
        self.nodes_exceeded = False
        # the definitions read so far in the protocol being read: a use must come after
        self.defs: dict[str, ir.Expr] = {}
        self.reading_definition: str | None = None  # whose body `expr` reads now
        # nodes of the protocol's expressions with every use of a definition written out
        self.written = 0
        # ``ir.size`` and ``ir.depth``'s memos over the protocol, as the compiler keeps them:
        # a definition's body is counted at every use without being walked again
        self.sizes: ir.Memo = {}
        self.depths: ir.Memo = {}

    # --- expressions -------------------------------------------------------------------------

    def expr(self, e: Expr, path: str, atoms: Names | None) -> ir.Expr | None:
        """Read one converted expression with an explicit stack; ``None`` after any error.

        ``atoms`` is None when the protocol's atoms could not be read: names are then not
        checked, so one broken declaration does not bury the real errors under echoes.
        """
        if self.nodes_exceeded:
            return None
        r = self.r
        max_depth, max_nodes = r.limits.max_expr_depth, r.limits.max_expr_nodes
        errors_before = len(r.diags)
        out: list[ir.Expr | None] = []
        # (struct, path, depth) to read; or (None, op, k, n) to build from the last n results
        work: list[tuple] = [(e, path, 1)]
        too_deep = False
        while work:
            item = work.pop()
            node = item[0]
            if node is None:
                _, op, k, n = item
                args = out[len(out) - n :]
                del out[len(out) - n :]
                whole = args if None not in args else None
                out.append(None if whole is None else _BUILD[op](k, whole))  # type: ignore[arg-type]
                continue
            _, p, d = item
            self.nodes += 1
            if self.nodes > max_nodes:
                self.nodes_exceeded = True
                r.limit(p, "the number of expression nodes", self.nodes, "max_expr_nodes")
                return None
            if d > max_depth:
                if not too_deep:
                    too_deep = True
                    r.limit(p, "the expression's depth", d, "max_expr_depth")
                out.append(None)
                continue
            name = node.atom
            # a plain atom, the most common node by far: read at once
            if (
                name is not None
                and node.op is None
                and node.args is None
                and node.k is None
                and node.def_ is None
                and node.const is None
            ):
                if atoms is not None and name not in atoms:
                    unknown_atom(r, join_path(p, "atom"), name, atoms)
                    out.append(None)
                else:
                    out.append(_mk_atom(name))
                continue
            read = self._node(node, p, atoms)
            if read is None or read.__class__ is not tuple:
                out.append(read)  # type: ignore[arg-type]
                continue
            op, k, operands = read  # type: ignore[misc]
            work.append((None, op, k, len(operands)))
            for i in range(len(operands) - 1, -1, -1):
                work.append((operands[i], f"{p}.args[{i}]", d + 1))
        if len(r.diags) > errors_before:
            return None
        # without definitions, the nodes read are the nodes written out (counted above)
        if self.defs and out[0] is not None and not self._written_ok(out[0], path):
            return None
        return out[0]

    def _written_ok(self, e: ir.Expr, path: str) -> bool:
        """Counts ``e`` against the limits on the written-out protocol (``ir.size`` and
        ``ir.depth``, as the compiler bounds them); False after reporting one it passes. A
        definition's body is counted at its uses, not where it is defined."""
        if self.reading_definition is not None:
            return True
        r, limits = self.r, self.r.limits
        deepest = ir.depth(e, self.depths)
        if deepest > limits.max_expr_depth:
            r.limit(
                path, "the expression's depth, definitions written out,", deepest, "max_expr_depth"
            )
            return False
        self.written += ir.size(e, self.sizes)
        if self.written > limits.max_expr_nodes:
            self.nodes_exceeded = True
            r.limit(
                path,
                "the number of expression nodes, definitions written out,",
                self.written,
                "max_expr_nodes",
            )
            return False
        return True

    def _node(
        self, node: Expr, p: str, atoms: Names | None
    ) -> ir.Expr | tuple[str, int, list[Expr]] | None:
        """A leaf expression, or (op, k, args) for an operator whose args are still to read."""
        r = self.r
        given = (("atom", node.atom), ("def", node.def_), ("const", node.const), ("op", node.op))
        forms = [key for key, value in given if value is not None]
        if len(forms) != 1:
            r.err(
                Code.EXPR,
                p,
                "an expression has exactly one of `atom`, `def`, `const` and `op`"
                + (f"; this one has {', '.join(f'`{f}`' for f in forms)}" if forms else ""),
                help=EXPR_HELP,
            )
            return None
        form = forms[0]
        if form != "op":
            bad = False
            for key, value in (("k", node.k), ("args", node.args)):
                if value is not None:
                    r.err(Code.EXPR, join_path(p, key), f"unexpected key `{key}` in an expression")
                    bad = True
            if form == "atom":
                assert node.atom is not None
                if atoms is not None and node.atom not in atoms:
                    unknown_atom(r, join_path(p, "atom"), node.atom, atoms)
                    return None
                return None if bad else ir.mk_atom(node.atom)
            if form == "const":
                return None if bad else ir.mk_const(bool(node.const))
            name = node.def_
            assert name is not None
            if name not in self.defs:
                r.err(
                    Code.UNKNOWN_DEFINITION,
                    join_path(p, "def"),
                    f"unknown definition `{show(name)}`",
                    help=did_you_mean(name, self.defs)
                    or "a definition is listed in `definitions` before any use of it",
                )
                return None
            return None if bad else ir.mk_ref(name, self.defs[name])
        return self._operator(node, p)

    def _operator(self, node: Expr, p: str) -> tuple[str, int, list[Expr]] | None:
        r = self.r
        op = node.op
        assert op is not None
        spec = OPERATORS.get(op)
        if spec is None:
            r.err(
                Code.EXPR,
                join_path(p, "op"),
                f"unknown operator `{show(op)}`",
                help=did_you_mean(op, OPS) or f"operators are {', '.join(f'`{o}`' for o in OPS)}",
            )
            return None
        if node.args is None:
            r.err(Code.MISSING, p, f"missing `args` of `{op}`")
            return None
        args = node.args
        bad = False
        if spec.arity is not None and len(args) != spec.arity:
            r.err(
                Code.EXPR,
                join_path(p, "args"),
                f"`{op}` takes {'one argument' if spec.arity == 1 else 'two arguments'}, "
                f"found {len(args)}",
            )
            bad = True
        k = 0
        if spec.counts:
            if node.k is None:
                r.err(Code.MISSING, p, f"missing `k` of `{op}`", help='write `"k": 1` or similar')
                bad = True
            else:
                k = node.k
        elif node.k is not None:
            r.err(Code.EXPR, join_path(p, "k"), f"`k` belongs to {_COUNTING}, not `{op}`")
            bad = True
        return None if bad else (op, k, args)

    # --- protocol IR ---------------------------------------------------------------------------

    def protocol(self, obj: Any, path: str) -> ir.Protocol | None:
        """The protocol of JSON ``obj``, or None after recording why not."""
        if not isinstance(obj, dict):
            self.r.expect(path, "a protocol object", obj)
            return None
        try:
            doc = convert_doc(obj)
        except (msgspec.ValidationError, RecursionError, UnicodeError):
            # converted again piece by piece: every problem with its words and path
            from unmask.ir.json_convert import Converter  # only for JSON that needs it

            return self._read(Converter(self.r, obj, path), path)
        return self._read(doc, path)

    def _read(self, doc: ProtocolDoc | Any, path: str) -> ir.Protocol | None:
        r = self.r
        errors_before = len(r.diags)
        if doc.schema is FAILED:  # a schema other than this reader's: nothing else is read
            return None
        name = self._name(doc.name, join_path(path, "name"), IDENT_RE)
        text = doc.text if isinstance(doc.text, str) else ""
        atoms, names = self._atoms(doc.atoms, join_path(path, "atoms"))
        self.defs, self.written, self.sizes, self.depths = {}, 0, {}, {}
        definitions = self._definitions(doc.definitions, join_path(path, "definitions"), names)
        constraints: list[ir.Constraint] = []
        seen: dict[str, int] = {}
        cp = join_path(path, "constraints")
        for i, c in enumerate(doc.constraints or ()):
            if c is FAILED:
                continue
            p = index_path(cp, i)
            cn = self._name(c.name, join_path(p, "name"), ATOM_NAME_RE)
            self._unique(seen, cn, i, (cp, "name"), "constraint")
            e = self.expr(c.expr, join_path(p, "expr"), names)
            if cn is not None and e is not None:
                constraints.append(ir.Constraint(cn, e))
        decision = None
        labels: tuple[str, ...] = ir.BINARY_LABELS
        decisions: tuple[ir.Decision, ...] = ()
        declared = doc.labels is not msgspec.UNSET
        if declared or doc.decisions is not msgspec.UNSET:
            if doc.decision is not msgspec.UNSET:
                r.err(
                    Code.DECISION,
                    join_path(path, "decision"),
                    "a protocol with `labels` has `decisions`, not `decision`",
                )
            labels, decisions = self._labels(doc, path, names)
            ok = bool(decisions)
        elif doc.decision is msgspec.UNSET:
            r.err(Code.MISSING, path, "missing `decision`", help="every protocol has one decision")
            ok = False
        else:
            if doc.decision is not FAILED:
                decision = self.expr(doc.decision, join_path(path, "decision"), names)
            ok = decision is not None
        first_match = doc.first_match is True
        if first_match and not declared:
            r.err(
                Code.FIRST_MATCH,
                join_path(path, "first_match"),
                "`first_match` orders declared labels, and this protocol has no `labels`",
                help="drop `first_match`, or give `labels` and `decisions`",
            )
            first_match = False
        requirements = self._requirements(doc.requirements, path, names)
        grounding = self._grounding(doc.grounding, join_path(path, "grounding"), names)
        if len(r.diags) > errors_before or name is None or not ok:
            return None
        protocol = ir.Protocol(
            name,
            text,
            tuple(atoms),
            tuple(constraints),
            decision,
            tuple(requirements),
            tuple(grounding),
            labels=labels,
            decisions=decisions,
            definitions=tuple(definitions),
            first_match=first_match,
        )
        # checked before any part is made: n first-match labels' parts hold n^2 / 2 atoms
        held = ir.part_atoms(protocol)
        if held > r.limits.max_part_atoms:
            key = "first_match" if first_match else "decisions" if decisions else "decision"
            where = join_path(path, key)
            r.limit(
                where,
                "the number of atoms the protocol's parts hold in all",
                held,
                "max_part_atoms",
            )
            return None
        return protocol

    def _name(self, value: Any, p: str, pattern: Any) -> str | None:
        """``value`` when it is a name (``pattern``), else None after an error (one already
        recorded by the conversion when it is not even a string)."""
        if not isinstance(value, str):
            return None
        if pattern.match(value) is None:
            self.r.err(Code.NAME, p, f"`{show(value)}` is not a valid name", help=NAME_HELP)
            return None
        return value

    def _atoms(self, raw: Any, ap: str) -> tuple[list[ir.AtomDecl], Names | None]:
        """The valid declarations, and every declared name with its role (None: its role
        is not valid); the names are None when the list itself could not be read, and are
        then not checked at all: that would only echo one error."""
        r = self.r
        if raw is FAILED:
            return [], None
        if len(raw) > r.limits.max_atoms:
            r.limit(ap, "the number of atoms", len(raw), "max_atoms")
            return [], None
        atoms: list[ir.AtomDecl] = []
        roles: dict[str, str | None] = {}
        first: dict[str, int] = {}
        match = ATOM_NAME_RE.match
        for i, a in enumerate(raw):
            if a is FAILED:
                continue
            an = a.name
            if an in first or match(an) is None:
                p = join_path(index_path(ap, i), "name")
                if self._name(an, p, ATOM_NAME_RE) is None:
                    continue
                r.err(
                    Code.DUPLICATE_ATOM,
                    p,
                    f"atom `{show(an)}` is declared twice",
                    notes=(f"the first declaration is `{index_path(ap, first[an])}`",),
                )
                continue
            first[an] = i
            role: str | None = a.role
            if role not in ir.ROLES:
                if role:  # "": declared, with a role already reported
                    r.err(
                        Code.ROLE,
                        join_path(index_path(ap, i), "role"),
                        f"unknown role `{show(role)}`",
                        help="a role is `judge`, `context` or `procedure`",
                    )
                role = None
            roles[an] = role
            if role is not None:
                atoms.append(ir.AtomDecl(an, role, a.description))
        return atoms, roles

    def _definitions(self, raw: Any, dp: str, names: Names | None) -> list[ir.Definition]:
        out = []
        for i, d in enumerate(raw or ()):
            if d is FAILED:
                continue
            p = index_path(dp, i)
            dn = self._name(d.name, join_path(p, "name"), ATOM_NAME_RE)
            if dn is not None and (dn in self.defs or (names is not None and dn in names)):
                self.r.err(
                    Code.DUPLICATE_NAME,
                    join_path(p, "name"),
                    f"`{show(dn)}` is already an atom or a definition",
                )
                continue
            self.reading_definition = dn or ""
            try:
                e = self.expr(d.expr, join_path(p, "expr"), names)
            finally:
                self.reading_definition = None
            if dn is not None and e is not None:
                self.defs[dn] = e
                out.append(ir.Definition(dn, e))
        return out

    def _labels(
        self, doc: ProtocolDoc | Any, path: str, names: Names | None
    ) -> tuple[tuple[str, ...], tuple[ir.Decision, ...]]:
        r = self.r
        lp = join_path(path, "labels")
        labels: list[str] = []
        raw_labels = doc.labels
        if raw_labels is msgspec.UNSET:
            r.err(Code.MISSING, path, "missing `labels`")
        elif raw_labels is not FAILED:
            for i, label in enumerate(raw_labels):
                if not IDENT_RE.match(label):
                    r.expect(index_path(lp, i), "a label name", label)
                elif label in labels:
                    r.err(
                        Code.DUPLICATE_LABEL,
                        index_path(lp, i),
                        f"label `{show(label)}` is listed twice",
                    )
                else:
                    labels.append(label)
            if len(raw_labels) < 2:
                r.err(Code.LABELS, lp, "a protocol has two or more labels")
        raw = doc.decisions
        dp = join_path(path, "decisions")
        decided: dict[str, ir.Decision] = {}
        otherwise = 0
        if raw is msgspec.UNSET:
            r.err(Code.MISSING, path, "missing `decisions`")
        for i, d in enumerate(() if raw is msgspec.UNSET or raw is FAILED else raw):
            if d is FAILED:
                continue
            p = index_path(dp, i)
            label = d.label
            if label not in labels:
                r.err(
                    Code.UNKNOWN_LABEL,
                    join_path(p, "label"),
                    f"`{show(label)}` is not one of the protocol's labels",
                    help=did_you_mean(label, labels),
                )
                continue
            if label in decided:
                r.err(
                    Code.DUPLICATE_DECISION,
                    join_path(p, "label"),
                    f"`{show(label)}` has two decisions",
                )
                continue
            if d.otherwise is True and d.expr is msgspec.UNSET:
                otherwise += 1
                if otherwise > 1:
                    r.err(
                        Code.OTHERWISE,
                        join_path(p, "otherwise"),
                        "only one decision may be `otherwise`",
                    )
                decided[label] = ir.Decision(label, None)
            elif d.expr is not msgspec.UNSET and d.otherwise is msgspec.UNSET:
                e = self.expr(d.expr, join_path(p, "expr"), names)
                if e is not None:
                    decided[label] = ir.Decision(label, e)
            else:
                r.err(Code.DECISION, p, 'a decision has `expr` or `"otherwise": true`, not both')
        missing = [x for x in labels if x not in decided]
        if raw is not msgspec.UNSET and raw is not FAILED and missing:
            r.err(
                Code.MISSING_DECISION, dp, "no decision for " + ", ".join(f"`{x}`" for x in missing)
            )
        return tuple(labels), tuple(decided[x] for x in labels if x in decided)

    def _unique(
        self, seen: dict[str, int], name: str | None, i: int, at: tuple[str, str], what: str
    ) -> None:
        """Record where ``name`` is first declared; ``at`` is (list path, key of the name)."""
        if name is None:
            return
        if name not in seen:
            seen[name] = i
            return
        lp, key = at
        self.r.err(
            Code.DUPLICATE_NAME,
            join_path(index_path(lp, i), key),
            f"{what} `{show(name)}` is declared twice",
            notes=(f"the first is `{index_path(lp, seen[name])}`",),
        )

    def _requirements(self, raw: Any, path: str, names: Names | None) -> list[ir.Requirement]:
        out = []
        seen: dict[str, int] = {}
        rp = join_path(path, "requirements")
        for i, q in enumerate(raw or ()):
            if q is FAILED:
                continue
            p = index_path(rp, i)
            rid = self._name(q.id, join_path(p, "id"), ATOM_NAME_RE)
            self._unique(seen, rid, i, (rp, "id"), "requirement")
            e = self.expr(q.expr, join_path(p, "expr"), names)
            addressed = None
            if q.addressed is not None:
                addressed = self.expr(q.addressed, join_path(p, "addressed"), names)
                if addressed is None:
                    continue
            if rid is not None and e is not None:
                out.append(ir.Requirement(rid, q.description, e, addressed))
        return out

    def _grounding(self, raw: Any, gp: str, names: Names | None) -> list[ir.GroundPair]:
        out = []
        pair, atom, directions = ir.GroundPair, _mk_atom, ir.DIRECTIONS
        for i, g in enumerate(raw or ()):
            if g is FAILED:
                continue
            judge, context, direction = g.judge, g.context, g.direction
            # two atoms by name, each of its side's role: the pair of nearly every protocol
            if (
                names is not None
                and judge.__class__ is str
                and context.__class__ is str
                and names.get(judge) == "judge"
                and names.get(context) == "context"
                and direction in directions
            ):
                out.append(pair(atom(judge), atom(context), direction=direction))
                continue
            p = index_path(gp, i)
            if g.direction not in ir.DIRECTIONS:
                self.r.expect(join_path(p, "direction"), "`~` or `~>`", g.direction)
            judge = self._side(g.judge, "judge", p, names)
            context = self._side(g.context, "context", p, names)
            if judge is not None and context is not None and g.direction in ir.DIRECTIONS:
                out.append(ir.GroundPair(judge, context, direction=g.direction))
        return out

    def _side(self, value: str | Expr, key: str, p: str, names: Names | None) -> ir.Expr | None:
        """One side: an atom name (a string) or an expression over atoms of that role."""
        r = self.r
        kp = join_path(p, key)
        if isinstance(value, str):
            if names is None:
                return ir.mk_atom(value)
            role = names.get(value, False)
            if role is False:
                unknown_atom(r, kp, value, names)
                return None
            if role is None or role == key:
                return ir.mk_atom(value)
            e: ir.Expr | None = ir.mk_atom(value)
        else:
            e = self.expr(value, kp, names)
        if e is None or names is None:
            return e
        for n in ir.iter_atoms(e):
            if names.get(n) is not None and names[n] != key:
                r.err(
                    Code.GROUND_ROLE,
                    kp,
                    f"`{show(n)}` is a `{names[n]}` atom, but the {key} side of a grounding "
                    f"pair reads only `{key}` atoms",
                    help="a grounding pair is written judge ~ context",
                )
                return None
        return e


def protocol_from_doc(
    doc: ProtocolDoc,
    path: str = "protocol",
    file: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> ir.Protocol:
    """The protocol of structs already converted (a compile-cache entry); raises
    ``UnmaskError`` as ``protocol_from_json`` does."""
    r = JsonReader(file, limits)
    p = IrReader(r)._read(doc, path)
    if p is None or r.diags:
        raise r.failure()
    return p


def protocol_from_json(
    obj: Any,
    path: str = "protocol",
    file: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> ir.Protocol:
    """Validate ``unmask.protocol/1`` IR; JSON paths in errors start at ``path``."""
    r = JsonReader(file, limits)
    p = IrReader(r).protocol(obj, path)
    if p is None or r.diags:
        raise r.failure()
    return p
