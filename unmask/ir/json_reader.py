"""Reading the ground protocol IR back from JSON: the inverse of ``unmask.ir.json``.

Contract: ``protocol_from_json`` returns an ``ir.Protocol`` only for an ``unmask.protocol/1``
object that passes every rule (names, roles, unique declarations, resolvable atoms, judge ~
context grounding pairs, expression shapes), and otherwise raises ``UnmaskError`` with every
problem found, each at its JSON path. ``IrReader`` does the same inside a larger document
(a replay) and records into that document's ``JsonReader``. Expressions are read with an
explicit stack, never recursion, and built by the ``OPERATORS`` table through the IR's
smart constructors; the number of nodes and the depth are bounded by ``Limits``.

Size: one rule per checked property of the IR JSON, each with its JSON path and message;
the reader is long because the format has many ways to be wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from unmask import ir
from unmask.ir.json import PROTOCOL_SCHEMA
from unmask.ir.json_quick import (
    _ATOM_KEYS,
    _PAIR_KEYS,
    ATOM_NAME_RE,
    quick_atom_decl,
    quick_atoms,
    quick_pair,
)
from unmask.plumbing.frozen import frozen
from unmask.plumbing.jsonreader import (
    JsonReader,
    did_you_mean,
    index_path,
    is_int,
    join_path,
    kind,
    show,
)
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.plumbing.names import IDENT_RE

# a ground atom is a plain name or a family member such as `supported(c)`

PROTOCOL_KEYS = (
    "schema",
    "name",
    "text",
    "atoms",
    "definitions",
    "constraints",
    "labels",
    "first_match",
    "decision",
    "decisions",
    "requirements",
    "grounding",
)
# the keys an expression object may have, by its form
_FORM_KEYS = {"atom": ("atom",), "def": ("def",), "const": ("const",), "op": ("op", "args", "k")}
_EXPR_HELP = (
    'write `{"atom": NAME}`, `{"def": NAME}`, `{"const": true}` or `{"op": OP, "args": [...]}`'
)


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


def unknown_atom(r: JsonReader, path: str, name: str, atoms: Collection[str]) -> None:
    r.err("unknown-atom", path, f"unknown atom `{show(name)}`", help=did_you_mean(name, atoms))


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

    def expr(self, obj: Any, path: str, atoms: Mapping[str, Any] | None) -> ir.Expr | None:
        """Read one expression with an explicit stack; ``None`` after any error in it.

        ``atoms`` is None when the protocol's atoms could not be read: names are then not
        checked, so one broken declaration does not bury the real errors under echoes.
        """
        if self.nodes_exceeded:
            return None
        r = self.r
        limits = r.limits
        errors_before = len(r.diags)
        out: list[ir.Expr | None] = []
        # (json, path, depth) to read; or (None, op, k, n) to build from the last n results
        work: list[tuple] = [(obj, path, 1)]
        too_deep = False
        while work:
            item = work.pop()
            if len(item) == 4:
                _, op, k, n = item
                args = out[len(out) - n :] if n else []
                del out[len(out) - n :]
                whole = [a for a in args if a is not None]
                built = OPERATORS[op].build(k, whole) if len(whole) == len(args) else None
                out.append(built)
                continue
            node, p, d = item
            self.nodes += 1
            if self.nodes > r.limits.max_expr_nodes:
                self.nodes_exceeded = True
                r.limit(p, "the number of expression nodes", self.nodes, "max_expr_nodes")
                return None
            if d > r.limits.max_expr_depth:
                if not too_deep:
                    too_deep = True
                    r.limit(p, "the expression's depth", d, "max_expr_depth")
                out.append(None)
                continue
            read = self._node(node, p, atoms)
            if read is None:
                out.append(None)
            elif isinstance(read, tuple):
                op, k, args = read
                work.append((None, op, k, len(args)))
                leaves = None
                if d < limits.max_expr_depth and self.nodes + len(args) <= limits.max_expr_nodes:
                    leaves = quick_atoms(args, atoms)
                if leaves is not None:
                    # what reading each argument in turn would do: count it, build it
                    self.nodes += len(leaves)
                    out.extend(leaves)
                    continue
                for i in range(len(args) - 1, -1, -1):
                    work.append((args[i], f"{p}.args[{i}]", d + 1))
            else:
                out.append(read)
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
                path,
                "the expression's depth, definitions written out,",
                deepest,
                "max_expr_depth",
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
        self, node: Any, p: str, atoms: Mapping[str, Any] | None
    ) -> ir.Expr | tuple[str, int, list] | None:
        """A leaf expression, or (op, k, args) for an operator whose args are still JSON."""
        r = self.r
        if not isinstance(node, dict):
            r.err("expr", p, f"expected an expression object, found {kind(node)}", _EXPR_HELP)
            return None
        forms = [k for k in ("atom", "def", "const", "op") if k in node]
        if len(forms) != 1:
            r.err(
                "expr",
                p,
                "an expression has exactly one of `atom`, `def`, `const` and `op`"
                + (f"; this one has {', '.join(f'`{f}`' for f in forms)}" if forms else ""),
                help=_EXPR_HELP,
            )
            return None
        form = forms[0]
        allowed = _FORM_KEYS[form]
        bad = False
        for key in node:
            if key not in allowed:
                r.err("expr", join_path(p, key), f"unexpected key `{show(key)}` in an expression")
                bad = True
        if form == "atom":
            name = node["atom"]
            if not isinstance(name, str):
                r.expect(join_path(p, "atom"), "an atom name (a string)", name)
                return None
            if atoms is not None and name not in atoms:
                unknown_atom(r, join_path(p, "atom"), name, atoms)
                return None
            return None if bad else ir.mk_atom(name)
        if form == "def":
            name = node["def"]
            if not isinstance(name, str):
                r.expect(join_path(p, "def"), "a definition name (a string)", name)
                return None
            if name not in self.defs:
                r.err(
                    "unknown-definition",
                    join_path(p, "def"),
                    f"unknown definition `{show(name)}`",
                    help=did_you_mean(name, self.defs)
                    or "a definition is listed in `definitions` before any use of it",
                )
                return None
            return None if bad else ir.mk_ref(name, self.defs[name])
        if form == "const":
            v = node["const"]
            if not isinstance(v, bool):
                r.expect(join_path(p, "const"), "`true` or `false`", v)
                return None
            return None if bad else ir.mk_const(v)
        return self._operator(node, p, bad)

    def _operator(self, node: dict, p: str, bad: bool) -> tuple[str, int, list] | None:
        r = self.r
        op = node["op"]
        spec = OPERATORS.get(op) if isinstance(op, str) else None
        if spec is None:
            r.err(
                "expr",
                join_path(p, "op"),
                f"unknown operator `{show(op)}`",
                help=did_you_mean(op, OPS) or f"operators are {', '.join(f'`{o}`' for o in OPS)}",
            )
            return None
        if "args" not in node:
            r.err("missing", p, f"missing `args` of `{op}`")
            return None
        args = node["args"]
        if not isinstance(args, list):
            r.expect(join_path(p, "args"), "an array of expressions", args)
            return None
        if spec.arity is not None and len(args) != spec.arity:
            r.err(
                "expr",
                join_path(p, "args"),
                f"`{op}` takes {'one argument' if spec.arity == 1 else 'two arguments'}, "
                f"found {len(args)}",
            )
            bad = True
        k = 0
        if spec.counts:
            if "k" not in node:
                r.err("missing", p, f"missing `k` of `{op}`", help='write `"k": 1` or similar')
                bad = True
            elif not is_int(node["k"]):
                r.expect(join_path(p, "k"), "a whole number", node["k"])
                bad = True
            elif node["k"] < 0:
                r.err("expr", join_path(p, "k"), f"`k` must be 0 or more, found {node['k']}")
                bad = True
            else:
                k = node["k"]
        elif "k" in node:
            r.err("expr", join_path(p, "k"), f"`k` belongs to {_COUNTING}, not `{op}`")
            bad = True
        return None if bad else (op, k, args)

    # --- protocol IR ---------------------------------------------------------------------------

    def protocol(self, obj: Any, path: str) -> ir.Protocol | None:
        r = self.r
        errors_before = len(r.diags)
        if not isinstance(obj, dict):
            r.expect(path, "a protocol object", obj)
            return None
        schema = obj.get("schema")
        if "schema" not in obj:
            r.err("schema", path, f"missing `schema`, expected `{PROTOCOL_SCHEMA}`")
        elif schema != PROTOCOL_SCHEMA:
            r.err(
                "schema",
                join_path(path, "schema"),
                f"unsupported protocol schema `{show(schema)}`, expected `{PROTOCOL_SCHEMA}`",
            )
            return None
        r.unknown_keys(obj, path, PROTOCOL_KEYS, "a protocol")
        name = r.name(obj, "name", path, IDENT_RE)
        text = r.string(obj, "text", path, required=False) or ""
        atoms, roles, raw_atoms = self._atoms(obj, path)
        # without a readable atom list, names are not checked: that would only echo one error
        names: Mapping[str, str | None] | None = roles if raw_atoms is not None else None
        self.defs, self.written, self.sizes, self.depths = {}, 0, {}, {}
        definitions = self._definitions(obj, path, names)
        constraints = self._constraints(obj, path, names)
        decision = None
        labels: tuple[str, ...] = ir.BINARY_LABELS
        decisions: tuple[ir.Decision, ...] = ()
        if "labels" in obj or "decisions" in obj:
            if "decision" in obj:
                r.err(
                    "decision",
                    join_path(path, "decision"),
                    "a protocol with `labels` has `decisions`, not `decision`",
                )
            labels, decisions = self._labels(obj, path, names)
            ok = bool(decisions)
        elif "decision" not in obj:
            r.err("missing", path, "missing `decision`", help="every protocol has one decision")
            ok = False
        else:
            decision = self.expr(obj["decision"], join_path(path, "decision"), names)
            ok = decision is not None
        first_match = False
        if "first_match" in obj:
            v = obj["first_match"]
            if not isinstance(v, bool):
                r.expect(join_path(path, "first_match"), "`true` or `false`", v)
            elif v and "labels" not in obj:
                r.err(
                    "first-match",
                    join_path(path, "first_match"),
                    "`first_match` orders declared labels, and this protocol has no `labels`",
                    help="drop `first_match`, or give `labels` and `decisions`",
                )
            else:
                first_match = v
        requirements = self._requirements(obj, path, names)
        grounding = self._grounding(obj, path, names)
        if len(r.diags) > errors_before or name is None or not ok:
            return None
        return ir.Protocol(
            name,
            text,
            tuple(atoms.values()),
            tuple(constraints),
            decision,
            tuple(requirements),
            tuple(grounding),
            labels=labels,
            decisions=decisions,
            definitions=tuple(definitions),
            first_match=first_match,
        )

    def _definitions(
        self, obj: dict, path: str, names: Mapping[str, str | None] | None
    ) -> list[ir.Definition]:
        r = self.r
        out = []
        raw = r.array(obj, "definitions", path, required=False)
        dp = join_path(path, "definitions")
        for _, p, d in r.objects(raw, dp, "a definition", ("name", "expr")):
            dn = r.name(d, "name", p, ATOM_NAME_RE)
            if dn is not None and (dn in self.defs or (names is not None and dn in names)):
                r.err(
                    "duplicate-name",
                    join_path(p, "name"),
                    f"`{show(dn)}` is already an atom or a definition",
                )
                continue
            if "expr" not in d:
                r.err("missing", p, "missing `expr`")
                continue
            self.reading_definition = dn or ""
            try:
                e = self.expr(d["expr"], join_path(p, "expr"), names)
            finally:
                self.reading_definition = None
            if dn is not None and e is not None:
                self.defs[dn] = e
                out.append(ir.Definition(dn, e))
        return out

    def _labels(
        self, obj: dict, path: str, names: Mapping[str, str | None] | None
    ) -> tuple[tuple[str, ...], tuple[ir.Decision, ...]]:
        r = self.r
        raw_labels = r.array(obj, "labels", path)
        lp = join_path(path, "labels")
        labels: list[str] = []
        for i, label in enumerate(raw_labels or ()):
            if not isinstance(label, str) or not IDENT_RE.match(label):
                r.expect(index_path(lp, i), "a label name", label)
            elif label in labels:
                r.err(
                    "duplicate-label", index_path(lp, i), f"label `{show(label)}` is listed twice"
                )
            else:
                labels.append(label)
        if raw_labels is not None and len(raw_labels) < 2:
            r.err("labels", lp, "a protocol has two or more labels")
        raw = r.array(obj, "decisions", path)
        dp = join_path(path, "decisions")
        decided: dict[str, ir.Decision] = {}
        otherwise = 0
        for _, p, d in r.objects(raw, dp, "a decision", ("label", "expr", "otherwise")):
            label = r.string(d, "label", p)
            if label is None:
                continue
            if label not in labels:
                r.err(
                    "unknown-label",
                    join_path(p, "label"),
                    f"`{show(label)}` is not one of the protocol's labels",
                    help=did_you_mean(label, labels),
                )
                continue
            if label in decided:
                r.err(
                    "duplicate-decision",
                    join_path(p, "label"),
                    f"`{show(label)}` has two decisions",
                )
                continue
            if d.get("otherwise") is True and "expr" not in d:
                otherwise += 1
                if otherwise > 1:
                    r.err(
                        "otherwise",
                        join_path(p, "otherwise"),
                        "only one decision may be `otherwise`",
                    )
                decided[label] = ir.Decision(label, None)
            elif "expr" in d and "otherwise" not in d:
                e = self.expr(d["expr"], join_path(p, "expr"), names)
                if e is not None:
                    decided[label] = ir.Decision(label, e)
            else:
                r.err("decision", p, 'a decision has `expr` or `"otherwise": true`, not both')
        missing = [x for x in labels if x not in decided]
        if raw is not None and missing:
            r.err(
                "missing-decision",
                dp,
                "no decision for " + ", ".join(f"`{x}`" for x in missing),
            )
        return tuple(labels), tuple(decided[x] for x in labels if x in decided)

    def _atoms(
        self, obj: dict, path: str
    ) -> tuple[dict[str, ir.AtomDecl], dict[str, str | None], list | None]:
        """Valid declarations, every declared name with its role if valid, the raw list."""
        r = self.r
        atoms: dict[str, ir.AtomDecl] = {}
        roles: dict[str, str | None] = {}
        raw_atoms = r.array(obj, "atoms", path)
        ap = join_path(path, "atoms")
        if raw_atoms is not None and len(raw_atoms) > r.limits.max_atoms:
            r.limit(ap, "the number of atoms", len(raw_atoms), "max_atoms")
            raw_atoms = None
        first: dict[str, int] = {}
        for i, a in enumerate(raw_atoms or ()):
            quick = quick_atom_decl(a)
            if quick is not None and quick.name not in first:
                first[quick.name] = i
                roles[quick.name] = quick.role
                atoms[quick.name] = quick
                continue
            p = r.object_at(a, ap, i, "an atom", _ATOM_KEYS)
            if p is None:
                continue
            an = r.name(a, "name", p, ATOM_NAME_RE)
            role = r.string(a, "role", p)
            desc = r.string(a, "description", p, required=False) or ""
            if role is not None and role not in ir.ROLES:
                r.err(
                    "role",
                    join_path(p, "role"),
                    f"unknown role `{show(role)}`",
                    help="a role is `judge`, `context` or `procedure`",
                )
                role = None
            if an is None:
                continue
            if an in first:
                r.err(
                    "duplicate-atom",
                    join_path(p, "name"),
                    f"atom `{show(an)}` is declared twice",
                    notes=(f"the first declaration is `{index_path(ap, first[an])}`",),
                )
                continue
            first[an] = i
            roles[an] = role
            if role is not None:
                atoms[an] = ir.AtomDecl(an, role, desc)
        return atoms, roles, raw_atoms

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
            "duplicate-name",
            join_path(index_path(lp, i), key),
            f"{what} `{show(name)}` is declared twice",
            notes=(f"the first is `{index_path(lp, seen[name])}`",),
        )

    def _constraints(
        self, obj: dict, path: str, names: Mapping[str, str | None] | None
    ) -> list[ir.Constraint]:
        r = self.r
        out = []
        seen: dict[str, int] = {}
        raw = r.array(obj, "constraints", path, required=False)
        cp = join_path(path, "constraints")
        for i, p, c in r.objects(raw, cp, "a constraint", ("name", "expr")):
            cn = r.name(c, "name", p, ATOM_NAME_RE)
            self._unique(seen, cn, i, (cp, "name"), "constraint")
            if "expr" not in c:
                r.err("missing", p, "missing `expr`")
                continue
            e = self.expr(c["expr"], join_path(p, "expr"), names)
            if cn is not None and e is not None:
                out.append(ir.Constraint(cn, e))
        return out

    def _requirements(
        self, obj: dict, path: str, names: Mapping[str, str | None] | None
    ) -> list[ir.Requirement]:
        r = self.r
        out = []
        seen: dict[str, int] = {}
        raw = r.array(obj, "requirements", path, required=False)
        rp = join_path(path, "requirements")
        known = ("id", "description", "expr", "addressed")
        for i, p, q in r.objects(raw, rp, "a requirement", known):
            rid = r.name(q, "id", p, ATOM_NAME_RE)
            self._unique(seen, rid, i, (rp, "id"), "requirement")
            desc = r.string(q, "description", p, required=False) or ""
            if "expr" not in q:
                r.err("missing", p, "missing `expr`")
                continue
            e = self.expr(q["expr"], join_path(p, "expr"), names)
            addressed = None
            if q.get("addressed") is not None:
                addressed = self.expr(q["addressed"], join_path(p, "addressed"), names)
                if addressed is None:
                    continue
            if rid is not None and e is not None:
                out.append(ir.Requirement(rid, desc, e, addressed))
        return out

    def _grounding(
        self, obj: dict, path: str, names: Mapping[str, str | None] | None
    ) -> list[ir.GroundPair]:
        r = self.r
        out = []
        raw = r.array(obj, "grounding", path, required=False)
        gp = join_path(path, "grounding")
        for i, g in enumerate(raw or ()):
            if names is not None:
                quick = quick_pair(g, names)
                if quick is not None:
                    out.append(quick)
                    continue
            p = r.object_at(g, gp, i, "a grounding pair", _PAIR_KEYS)
            if p is None:
                continue
            direction = g.get("direction", "~")
            if direction not in ir.DIRECTIONS:
                r.expect(join_path(p, "direction"), "`~` or `~>`", direction)
            sides = [self._side(g, key, p, names) for key in ("judge", "context")]
            if sides[0] is not None and sides[1] is not None and direction in ir.DIRECTIONS:
                out.append(ir.GroundPair(sides[0], sides[1], direction=direction))
        return out

    def _side(
        self, g: dict, key: str, p: str, names: Mapping[str, str | None] | None
    ) -> ir.Expr | None:
        """One side: an atom name (a string) or an expression over atoms of that role."""
        r = self.r
        if key not in g:
            r.err("missing", p, f"missing `{key}`")
            return None
        value = g[key]
        kp = join_path(p, key)
        if isinstance(value, str):
            if names is not None and value not in names:
                unknown_atom(r, kp, value, names)
                return None
            e: ir.Expr | None = ir.mk_atom(value)
        elif isinstance(value, dict):
            e = self.expr(value, kp, names)
        else:
            r.expect(kp, "an atom name or an expression", value)
            return None
        if e is None or names is None:
            return e
        for n in ir.iter_atoms(e):
            if names.get(n) is not None and names[n] != key:
                r.err(
                    "ground-role",
                    kp,
                    f"`{show(n)}` is a `{names[n]}` atom, but the {key} side of a grounding "
                    f"pair reads only `{key}` atoms",
                    help="a grounding pair is written judge ~ context",
                )
                return None
        return e


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
