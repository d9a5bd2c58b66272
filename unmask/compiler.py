"""Compiling `.proto` text to the ground IR (``unmask.ir.Protocol``).

Contract: ``compile_source(text, filename, domains, limits)`` parses, resolves every name,
expands families and ``for`` statements over their domains' members and returns a ground
``Protocol`` built only with the ``mk_*`` constructors; or it raises ``UnmaskError`` with
every error it found (syntax errors first and alone, since later checks would only echo
them). The atom for member ``m`` of family ``f`` is named ``f(m)``; ``{DOMAIN}`` in a
family's description (and ``{X}`` in a ``for`` statement's description) becomes the
member. Members of a free domain come from ``domains``; members given for a fixed domain
must be among its own. A use of a definition becomes an ``ir.Ref`` named as written
(``ok(cto)`` for a family definition), and the protocol lists the ground definitions it
uses in dependency order. Every check (names, roles in ``ground``, recursion, labels) runs
on the text as written, so its outcome never depends on a replay's members. Every
diagnostic has a stable ``code`` (see docs/language.md). ``unmask.compile_cache.compile_cached`` is
the same, remembered per process and on disk.

Size: over 1,000 lines because each statement kind keeps its grounding and its located
errors side by side, all over one environment of names; split it by statement kind
(declarations, decisions, requirements, grounding) when it next grows.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from unmask import ast, ir
from unmask.diagnostics import Diagnostic, UnmaskError
from unmask.files import read_text
from unmask.ir import Span
from unmask.limits import DEFAULT_LIMITS, Limits
from unmask.names import IDENT_PATTERN, IDENT_RE, member_help
from unmask.parser import parse_source, reserved_words

DOMAIN_HELP = "pass `--domain {name}=a,b` to unmaskc, or `domains` in the replay"


GROUND_HELP = "the left side of `ground` reads judge atoms, the right side context atoms"


class _TooBig(Exception):
    """Grounding went past ``max_expr_nodes``; raised to stop a runaway expansion."""


@dataclass(frozen=True, slots=True)
class _Binding:
    member: str | None  # None while checking the body of a generator over no members
    domain: str


def compile_source(
    text: str,
    filename: str = "<input>",
    domains: Mapping[str, Sequence[str]] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> ir.Protocol:
    """Compile one `.proto` text to a ground protocol, or raise ``UnmaskError``."""
    source = parse_source(text, filename, limits)
    return _Compiler(source, domains or {}, limits).run()


def compile_file(
    path: str | Path,
    domains: Mapping[str, Sequence[str]] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> ir.Protocol:
    return compile_source(read_text(path, limits), str(path), domains, limits)


def _did_you_mean(name: str, candidates) -> str | None:
    close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return f"did you mean `{close[0]}`?" if close else None


def _as_json(value) -> str:
    """A member that is not a string, as the user wrote it in JSON (``null``, ``3``)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _subst(text: str, var: str, member: str | None) -> str:
    return text if member is None else text.replace("{" + var + "}", member)


def _fold_xor(args: list[ir.Expr], span: Span | None) -> ir.Expr:
    """``mk_xor`` applied pairwise left to right (as `a xor b xor c` is written), in linear
    time: while the running value is an n-ary xor its operands grow in place."""
    acc: ir.Expr | None = args[0]
    pending: list[ir.Expr] | None = None
    if isinstance(acc, ir.Nary) and acc.op == "xor":
        pending, acc = list(acc.args), None
    for x in args[1:]:
        if pending is None:
            assert acc is not None
            acc = ir.mk_xor((acc, x), span)
            if isinstance(acc, ir.Nary) and acc.op == "xor":
                pending, acc = list(acc.args), None
        elif isinstance(x, ir.Const):
            if x.value:  # an odd parity wraps the whole group, then a new group starts
                acc, pending = ir.mk_not(ir.mk_xor(pending, span), span), None
        elif isinstance(x, ir.Nary) and x.op == "xor":
            pending.extend(x.args)
        else:
            pending.append(x)
    if pending is not None:
        return ir.mk_xor(pending, span)
    assert acc is not None
    return acc


class _Compiler:
    def __init__(self, source: ast.SourceFile, domains: Mapping, limits: Limits):
        self.src = source
        self.file = source.file
        self.supplied = domains
        self.limits = limits
        self.diags: list[Diagnostic] = []
        self._seen: set[tuple] = set()
        self.domains: dict[str, ast.DomainDecl] = {}
        self.members: dict[str, tuple[str, ...]] = {}  # resolved; absent when unusable
        self.plain: dict[str, ast.AtomDecl] = {}
        self.families: dict[str, ast.AtomDecl] = {}
        self.defs: dict[str, ast.DefineDecl] = {}
        self.label_names: set[str] = set()
        self._tried: set[str | None] = set()  # labels a decision was written for
        self.cyclic: set[str] = set()  # definitions on a cycle (reported; never expanded)
        self.def_bodies: dict[str, ir.Expr] = {}  # ground name -> compiled body
        self._def_roles: dict[str, dict[str, str]] = {}  # definition -> atom -> role
        self.reported = 0  # errors raised so far, counting repeats that were not shown
        self.budget = limits.max_expr_nodes

    # --- diagnostics ---------------------------------------------------------------------

    def error(self, code: str, message: str, span: Span | None, **kw) -> None:
        self.reported += 1
        key = (code, message, span)
        if key in self._seen:  # a generator body repeats its errors once per member
            return
        self._seen.add(key)
        if span is None and "path" not in kw:
            kw.setdefault("file", self.file)
        self.diags.append(Diagnostic(code, message, span, **kw))

    def limit(self, message: str, field: str, span: Span | None) -> None:
        self.error("limit", message, span, help=f"raise it with `{self.limits.option(field)}`")

    # --- the passes ----------------------------------------------------------------------

    def run(self) -> ir.Protocol:
        stmts = self.src.statements
        head = self._protocol_line(stmts)
        self._declare(stmts)
        self._resolve_domains()
        atoms = self._ground_atoms()
        verdict = self._verdict(stmts)
        self.label_names = set(verdict.labels) if verdict is not None else set()
        self._check_definitions()
        constraints: list[ir.Constraint] = []
        requirements: list[ir.Requirement] = []
        grounding: list[ir.GroundPair] = []
        decisions: dict[str | None, tuple[ast.DecisionDecl, ir.Expr | None]] = {}
        aborted = False
        try:
            for s in stmts:
                if isinstance(s, ast.DecisionDecl):
                    self._decision(s, verdict, decisions)
                elif isinstance(s, ast.ForDecl):
                    self._for(s, constraints, requirements, grounding)
                elif isinstance(s, (ast.ConstraintDecl, ast.RequirementDecl, ast.GroundDecl)):
                    self._body(s, {}, None, constraints, requirements, grounding)
        except _TooBig:
            # stop at once: every later statement would only overrun the budget again
            aborted = True
            self.limit(
                f"grounding makes more than {self.limits.max_expr_nodes} expression nodes",
                "max_expr_nodes",
                None,
            )
        except RecursionError:  # pragma: no cover - depth is bounded by the parser
            aborted = True
            self.limit("an expression is nested too deeply to compile", "max_expr_depth", None)
        if not aborted:
            self._check_decisions(head, verdict, decisions)
        self._check_unique(constraints, requirements)
        if not self.diags:
            exprs = [e for _, e in decisions.values() if e is not None]
            for g in grounding:
                exprs += [g.judge, g.context]
            self._check_size(constraints, exprs, requirements)
        if self.diags:
            raise UnmaskError(self.diags)
        assert head is not None
        if verdict is None:
            decision: ir.Expr | None = decisions[None][1]
            labels, ir_decisions = ir.BINARY_LABELS, ()
        else:
            decision, labels = None, verdict.labels
            ir_decisions = tuple(
                ir.Decision(label, decisions[label][1], decisions[label][0].span)
                for label in labels
            )
        definitions = self._definitions_used(
            [c.expr for c in constraints],
            [decision] if decision is not None else [d.expr for d in ir_decisions],
            [r.expr for r in requirements],
            [r.addressed for r in requirements],
            [g.judge for g in grounding],
            [g.context for g in grounding],
        )
        return ir.Protocol(
            head.name,
            head.text,
            tuple(atoms),
            tuple(constraints),
            decision,
            tuple(requirements),
            tuple(grounding),
            head.span,
            labels=labels,
            decisions=ir_decisions,
            definitions=definitions,
        )

    # --- labels and decisions ------------------------------------------------------------

    def _verdict(self, stmts) -> ast.VerdictDecl | None:
        """The one `verdict` statement, checked: two or more labels, none twice."""
        found = [s for s in stmts if isinstance(s, ast.VerdictDecl)]
        if not found:
            return None
        first = found[0]
        for extra in found[1:]:
            self.error(
                "duplicate-verdict",
                "the protocol has a second `verdict` statement",
                extra.span,
                notes=(f"the first is at {first.span}",),
                help="list every label in one statement: `verdict A | B | C`",
            )
        spans = first.label_spans or (first.span,) * len(first.labels)
        seen: dict[str, Span | None] = {}
        for label, span in zip(first.labels, spans, strict=False):
            if label in seen:
                self.error(
                    "labels",
                    f"label `{label}` is declared twice",
                    span,
                    notes=(f"the first is at {seen[label]}",),
                )
            else:
                seen[label] = span
        if len(first.labels) < 2:
            self.error(
                "labels",
                f"the verdict has only one label, `{first.labels[0]}`",
                first.span,
                help="a verdict has two or more labels: `verdict A | B`",
            )
        return first

    def _decision(self, s: ast.DecisionDecl, verdict, decisions) -> None:
        expr = None if s.expr is None else self.expr(s.expr, {})
        key = s.label
        span = s.label_span or s.span
        # a decision refused below still answers for its label: no `missing-decision` too
        self._tried.add(key)
        if verdict is None and key is not None:
            self._tried.add(None)
            self.error(
                "unknown-label",
                f"`{key}` is not a label: the protocol has no `verdict` statement",
                span,
                help=f"declare the labels with `verdict {key} | …`, or write "
                "`decision pass iff EXPR` for a PASS/FAIL verdict",
            )
            return
        if verdict is not None and key is None:
            shown = ", ".join(f"`{x}`" for x in verdict.labels)
            self.error(
                "unknown-label",
                "`decision pass` is for a protocol without a `verdict` statement",
                s.span,
                help=f"write `decision LABEL iff EXPR` for each of the labels {shown}",
            )
            return
        if verdict is not None and key not in verdict.labels:
            shown = ", ".join(f"`{x}`" for x in verdict.labels)
            self.error(
                "unknown-label",
                f"`{key}` is not a declared label",
                span,
                notes=(f"the labels are {shown}",),
                help=_did_you_mean(key, verdict.labels),
            )
            return
        if key in decisions:
            first = decisions[key][0]
            what = (
                "the protocol has a second decision"
                if key is None
                else (f"label `{key}` has a second decision")
            )
            self.error(
                "duplicate-decision",
                what,
                s.span,
                notes=(f"the first decision is at {first.span}",),
                help="a protocol has exactly one decision; join them with `and`"
                if key is None
                else "each label has exactly one decision; join them with `or`",
            )
            return
        if s.expr is None:
            other = next((d for d, e in decisions.values() if d.expr is None), None)
            if other is not None:
                self.error(
                    "otherwise",
                    f"`{key}` is a second `otherwise` decision",
                    s.span,
                    notes=(f"`{other.label}` is already `otherwise` at {other.span}",),
                    help="at most one label holds when no other does; give this one `iff EXPR`",
                )
                return
        decisions[key] = (s, expr)

    def _check_decisions(self, head, verdict, decisions) -> None:
        if verdict is None:
            if None not in decisions and None not in self._tried:
                self.error(
                    "missing-decision",
                    "the protocol has no decision",
                    head.span if head else None,
                    help="add `decision pass iff EXPR`",
                )
            return
        spans = verdict.label_spans or (verdict.span,) * len(verdict.labels)
        done: set[str] = set()
        for label, span in zip(verdict.labels, spans, strict=False):
            if label not in decisions and label not in done and label not in self._tried:
                self.error(
                    "missing-decision",
                    f"label `{label}` has no decision",
                    span,
                    help=f"add `decision {label} iff EXPR` (or `decision {label} otherwise`)",
                )
            done.add(label)

    # --- definitions ---------------------------------------------------------------------

    def _check_definitions(self) -> None:
        """Each definition's parameter, its recursion (on the text, before any expansion),
        and its body, checked once whatever the members."""
        for d in self.defs.values():
            if d.param is not None and d.param not in self.domains:
                self._unknown_domain(d.param, d.param_span)
        edges = {name: self._defs_in(d) for name, d in self.defs.items()}
        for name, d in self.defs.items():
            if name in self.cyclic:
                continue
            path = self._cycle(name, edges)
            if path is not None:
                self.cyclic.update(path)
                chain = " → ".join(f"`{x}`" for x in [*path, name])
                self.error(
                    "recursive-definition",
                    f"definition `{name}` refers to itself: {chain}"
                    if len(path) > 1
                    else f"definition `{name}` refers to itself",
                    d.name_span or d.span,
                    help="a definition is a macro and cannot be recursive; spell out "
                    "what it stands for",
                )
        for d in self.defs.values():
            if d.name in self.cyclic:
                continue
            try:
                if d.param is None:
                    self._use_def(d, None, d.span)
                else:
                    self.expr(d.expr, {d.param: _Binding(None, d.param)})
            except _TooBig:
                return  # reported again, once, when a statement uses it

    def _defs_in(self, d: ast.DefineDecl) -> list[str]:
        """The definitions a definition's body names (variables shadow nothing here:
        a variable named like a definition is itself an error)."""
        out: list[str] = []
        todo: list[ast.Expr] = [d.expr]
        while todo:
            e = todo.pop()
            if isinstance(e, ast.Ref) and e.name in self.defs and e.name not in out:
                out.append(e.name)
            todo.extend(ast.children(e))
        return out

    @staticmethod
    def _cycle(start: str, edges: dict[str, list[str]]) -> list[str] | None:
        """A path ``start → … → start`` (without the last step), or None; breadth-first,
        so the shortest cycle is named."""
        parent: dict[str, str] = {}
        frontier = [start]
        while frontier:
            nxt = []
            for node in frontier:
                for succ in edges.get(node, ()):
                    if succ == start:
                        path = [node]
                        while path[-1] != start:
                            path.append(parent[path[-1]])
                        return path[::-1]
                    if succ not in parent:
                        parent[succ] = node
                        nxt.append(succ)
            frontier = nxt
        return None

    def _use_def(self, d: ast.DefineDecl, member: str | None, span) -> ir.Expr:
        if d.name in self.cyclic:
            return ir.FALSE
        ground = d.name if d.param is None else f"{d.name}({member})"
        body = self.def_bodies.get(ground)
        if body is None:
            env = {} if d.param is None else {d.param: _Binding(member, d.param)}
            body = self.expr(d.expr, env)
            self.def_bodies[ground] = body
        return ir.mk_ref(ground, body, span)

    def _definitions_used(self, *groups) -> tuple[ir.Definition, ...]:
        """Every ground definition the protocol's expressions use: in the order the
        definitions are written (a family's members in their domain's order), except that
        each comes after the definitions it uses."""
        used: dict[str, ir.Ref] = {}
        for group in groups:
            for e in group:
                if e is not None:
                    self._collect_refs(e, used)
        order = {name: i for i, name in enumerate(self.defs)}

        def key(name: str) -> tuple[int, int]:
            base, _, rest = name.partition("(")
            d = self.defs[base]
            members = self.members.get(d.param, ()) if d.param else ()
            member = rest[:-1]
            return order[base], members.index(member) if member in members else 0

        out: list[ir.Definition] = []
        done: set[str] = set()
        for name in sorted(used, key=key):
            # post-order over the definitions this one uses (bounded by their number)
            todo: list[tuple[str, bool]] = [(name, False)]
            while todo:
                n, expanded = todo.pop()
                if n in done:
                    continue
                if expanded:
                    done.add(n)
                    decl = self.defs[n.split("(", 1)[0]]
                    out.append(ir.Definition(n, used[n].body, decl.span))
                    continue
                todo.append((n, True))
                inner: dict[str, ir.Ref] = {}
                self._collect_refs(used[n].body, inner)
                todo.extend((m, False) for m in sorted(inner, key=key, reverse=True))
        return tuple(out)

    @staticmethod
    def _collect_refs(root: ir.Expr, found: dict[str, ir.Ref]) -> None:
        """Every definition use in ``root``, bodies included (each body walked once)."""
        todo = [root]
        while todo:
            e = todo.pop()
            if isinstance(e, ir.Ref):
                if e.name in found:
                    continue
                found[e.name] = e
            todo.extend(ir.children(e))

    # --- roles in `ground` ---------------------------------------------------------------

    def _roles_of_def(self, name: str) -> dict[str, str]:
        """The atoms (family names for families) a definition reads, with their roles,
        through the definitions it uses."""
        if name in self._def_roles:
            return self._def_roles[name]
        self._def_roles[name] = {}  # a cycle is reported elsewhere; stop on it here
        out: dict[str, str] = {}
        for _ref, atom, role in self._side_atoms(self.defs[name].expr):
            out.setdefault(atom, role)
        self._def_roles[name] = out
        return out

    def _side_atoms(self, root: ast.Expr):
        """(reference, atom, role) for each atom an expression reads, a definition's atoms
        reported at the reference to the definition."""
        todo = [root]
        while todo:
            e = todo.pop()
            if isinstance(e, ast.Ref):
                decl = self.plain.get(e.name) if e.arg is None else None
                decl = decl or (self.families.get(e.name) if e.arg is not None else None)
                if decl is not None:
                    yield e, str(e), decl.role
                elif e.name in self.defs and e.name not in self.cyclic:
                    for atom, role in self._roles_of_def(e.name).items():
                        yield e, atom, role
            todo.extend(ast.children(e))

    def _check_side(self, e: ast.Expr, role: str, side: str) -> bool:
        ok = True
        reported: set[int] = set()  # one error per reference, however many atoms it reads
        for ref, atom, actual in self._side_atoms(e):
            if actual == role or id(ref) in reported:
                continue
            reported.add(id(ref))
            ok = False
            if atom == str(ref):
                message = (
                    f"`{ref}` is a {actual} atom, but the {side} side of `ground` may read "
                    f"only {role} atoms"
                )
            else:
                message = (
                    f"`{ref}` reads the {actual} atom `{atom}`, but the {side} side of "
                    f"`ground` may read only {role} atoms"
                )
            self.error("role-mismatch", message, ref.span, help=GROUND_HELP)
        return ok

    def _protocol_line(self, stmts) -> ast.ProtocolDecl | None:
        heads = [s for s in stmts if isinstance(s, ast.ProtocolDecl)]
        if not heads:
            self.error(
                "missing-protocol",
                'expected a `protocol NAME "text"` line at the top of the file',
                Span(self.file, 1, 1, 1, 2, 0, 1),
            )
            return None
        if stmts[0] is not heads[0]:
            self.error(
                "protocol-order",
                "the `protocol` line must come before every other statement",
                heads[0].span,
            )
        for extra in heads[1:]:
            self.error(
                "duplicate-protocol",
                "the file has a second `protocol` line",
                extra.span,
                help="a file holds one protocol",
                notes=(f"the first is at {heads[0].span}",),
            )
        return heads[0]

    def _declare(self, stmts) -> None:
        for s in stmts:
            if isinstance(s, ast.DomainDecl):
                if s.name in self.domains:
                    self._duplicate("domain", s.name, s.name_span, self.domains[s.name].span)
                else:
                    self.domains[s.name] = s
            elif isinstance(s, ast.AtomDecl):
                prev = self.plain.get(s.name) or self.families.get(s.name)
                if prev is not None:
                    self._duplicate("atom", s.name, s.name_span, prev.span)
                elif s.param is None:
                    self.plain[s.name] = s
                else:
                    self.families[s.name] = s
        for s in stmts:
            if not isinstance(s, ast.DefineDecl):
                continue
            atom = self.plain.get(s.name) or self.families.get(s.name)
            if atom is not None:
                self.error(
                    "duplicate-name",
                    f"definition `{s.name}` has the name of an atom",
                    s.name_span or s.span,
                    notes=(f"the atom is declared at {atom.span}",),
                    help="a definition may not shadow an atom; choose another name",
                )
            elif s.name in self.defs:
                self._duplicate("definition", s.name, s.name_span, self.defs[s.name].span)
            else:
                self.defs[s.name] = s

    def _duplicate(self, kind: str, name: str, span, first) -> None:
        self.error(
            "duplicate-name",
            f"{kind} `{name}` is declared twice",
            span,
            notes=(f"the first declaration is at {first}",) if first else (),
        )

    def _resolve_domains(self) -> None:
        supplied = self.supplied
        if not isinstance(supplied, Mapping):
            self.error("bad-domains", "domains must map each domain name to its members", None)
            supplied = {}
        for name in supplied:
            if name not in self.domains:
                hint = _did_you_mean(str(name), self.domains)
                self.error(
                    "unknown-domain",
                    f"members were given for `{name}`, but the protocol declares no such domain",
                    None,
                    path=f"domains.{name}",
                    help=hint,
                )
        for name, decl in self.domains.items():
            fixed = decl.members
            if fixed is not None:
                self._check_fixed(decl)
            given = supplied.get(name)
            if given is None:
                if fixed is None:
                    self.error(
                        "missing-domain",
                        f"no members were given for the free domain `{name}`",
                        decl.span,
                        help=DOMAIN_HELP.format(name=name),
                    )
                    continue
                members = fixed
            else:
                members = self._check_given(name, given, decl)
                if members is None:
                    continue
            if len(members) > self.limits.max_domain_size:
                self.limit(
                    f"domain `{name}` has {len(members)} members, more than the limit of "
                    f"{self.limits.max_domain_size}",
                    "max_domain_size",
                    decl.span,
                )
                continue
            self.members[name] = tuple(members)

    def _check_fixed(self, decl: ast.DomainDecl) -> None:
        seen: set[str] = set()
        spans = decl.member_spans or (None,) * len(decl.members or ())
        for m, sp in zip(decl.members or (), spans, strict=False):
            if m in seen:
                self.error(
                    "duplicate-name",
                    f"member `{m}` appears twice in `{decl.name}`",
                    sp or decl.span,
                )
            seen.add(m)

    def _check_given(self, name: str, given, decl: ast.DomainDecl) -> tuple[str, ...] | None:
        path = f"domains.{name}"
        if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
            self.error(
                "bad-member", f"the members of `{name}` must be an array of names", None, path=path
            )
            return None
        ok = True
        seen: set[str] = set()
        for i, m in enumerate(given):
            if not isinstance(m, str) or not IDENT_RE.match(m) or m in reserved_words():
                shown = m if isinstance(m, str) else _as_json(m)
                self.error(
                    "bad-member",
                    f"member `{shown}` of `{name}` is not a name",
                    None,
                    path=f"{path}[{i}]",
                    help=member_help(m)
                    if isinstance(m, str) and m[:1].isdigit()
                    else f"a member is a name `{IDENT_PATTERN}` that is not a reserved word",
                )
                ok = False
            elif m in seen:
                self.error(
                    "duplicate-name",
                    f"member `{m}` of `{name}` is given twice",
                    None,
                    path=f"{path}[{i}]",
                )
                ok = False
            elif decl.members is not None and m not in decl.members:
                self.error(
                    "member-not-in-domain",
                    f"member `{m}` is not in the fixed domain `{name}`",
                    decl.span,
                    path=f"{path}[{i}]",
                    notes=("its members are " + ", ".join(f"`{x}`" for x in decl.members),)
                    if decl.members
                    else ("it has no members",),
                )
                ok = False
            if isinstance(m, str):
                seen.add(m)
        return tuple(given) if ok else None

    def _ground_atoms(self) -> list[ir.AtomDecl]:
        out: list[ir.AtomDecl] = []
        total = 0
        for d in list(self.plain.values()) + list(self.families.values()):
            if d.param is not None and d.param in self.members:
                total += len(self.members[d.param])
            elif d.param is None:
                total += 1
        if total > self.limits.max_atoms:
            self.limit(
                f"the protocol has {total} ground atoms, more than the limit of "
                f"{self.limits.max_atoms}",
                "max_atoms",
                None,
            )
            return out
        for s in self.src.statements:
            if not isinstance(s, ast.AtomDecl):
                continue
            if self.plain.get(s.name) is not s and self.families.get(s.name) is not s:
                continue  # a duplicate, already reported
            desc = s.description or ""
            if s.param is None:
                out.append(ir.AtomDecl(s.name, s.role, desc, s.span))
                continue
            if s.param not in self.domains:
                self._unknown_domain(s.param, s.param_span)
                continue
            for m in self.members.get(s.param, ()):
                name = f"{s.name}({m})"
                out.append(ir.AtomDecl(name, s.role, _subst(desc, s.param, m), s.span))
        return out

    def _unknown_domain(self, name: str, span) -> None:
        self.error(
            "unknown-domain",
            f"unknown domain `{name}`",
            span,
            help=_did_you_mean(name, self.domains) or f"declare it with `domain {name}`",
        )

    # --- statements ----------------------------------------------------------------------

    def _bind(self, var: str, var_span, domain: str, domain_span, env) -> list | None:
        """The bindings of ``var`` in turn; one checking pass when there are none."""
        if var in self.plain or var in self.families or var in self.defs:
            kind = "a definition" if var in self.defs else "an atom"
            self.error(
                "duplicate-name",
                f"the variable `{var}` has the name of {kind}",
                var_span,
                help="choose another variable name",
            )
        if domain not in self.domains:
            self._unknown_domain(domain, domain_span)
            members: tuple = ()
        else:
            members = self.members.get(domain, ())
        if not members:
            return [{**env, var: _Binding(None, domain)}]
        return [{**env, var: _Binding(m, domain)} for m in members]

    def _for(self, s: ast.ForDecl, constraints, requirements, grounding) -> None:
        for env in self._bind(s.var, s.var_span, s.domain, s.domain_span, {}):
            checking = env[s.var].member is None
            self._body(s.body, env, s.var, constraints, requirements, grounding, checking)

    def _ident(self, ident: ast.Ident, env) -> str:
        if ident.arg is not None and ident.arg in env:
            b = env[ident.arg]
            return f"{ident.name}({b.member if b.member is not None else ident.arg})"
        return str(ident)

    def _body(self, s, env, var, constraints, requirements, grounding, checking=False) -> None:
        member = env[var].member if var is not None else None
        if isinstance(s, ast.ConstraintDecl):
            c = ir.Constraint(self._ident(s.ident, env), self.expr(s.expr, env), s.span)
            if not checking:
                constraints.append(c)
        elif isinstance(s, ast.RequirementDecl):
            desc = s.description or ""
            if var is not None:
                desc = _subst(desc, var, member)
            holds = self.expr(s.holds, env)
            addressed = None if s.addressed is None else self.expr(s.addressed, env)
            r = ir.Requirement(self._ident(s.ident, env), desc, holds, addressed, s.span)
            if not checking:
                requirements.append(r)
        else:
            # roles are read off the declarations the text names, not off ground atoms, so
            # a family over a domain with no members is checked as one with members
            before = self.reported
            j = self.expr(s.judge, env)
            c = self.expr(s.context, env)
            roles_ok = self._check_side(s.judge, "judge", "left")
            roles_ok = self._check_side(s.context, "context", "right") and roles_ok
            if roles_ok and self.reported == before and not checking:
                grounding.append(ir.GroundPair(j, c, s.span, s.direction))

    def _check_unique(self, constraints, requirements) -> None:
        for kind, items, key in (
            ("constraint", constraints, lambda c: c.name),
            ("requirement", requirements, lambda r: r.id),
        ):
            first: dict[str, Span | None] = {}
            for it in items:
                k = key(it)
                if k in first:
                    self.error(
                        "duplicate-name",
                        f"{kind} `{k}` is declared twice",
                        it.span,
                        notes=(f"the first is at {first[k]}",),
                    )
                else:
                    first[k] = it.span

    def _check_size(self, constraints, others, requirements) -> None:
        exprs = [(c.expr, c.span) for c in constraints] + [(e, None) for e in others]
        for r in requirements:
            exprs.append((r.expr, r.span))
            if r.addressed is not None:
                exprs.append((r.addressed, r.span))
        total = 0
        # one memo each over the protocol: a definition's body is counted at every use
        # without being walked again (a chain of doubling definitions stays linear)
        sizes: dict[int, int] = {}
        depths: dict[int, int] = {}
        for e, span in exprs:
            total += ir.size(e, sizes)
            d = ir.depth(e, depths)
            if d > self.limits.max_expr_depth:
                self.limit(
                    f"an expression is {d} levels deep after grounding, more than the limit "
                    f"of {self.limits.max_expr_depth}",
                    "max_expr_depth",
                    span,
                )
        if total > self.limits.max_expr_nodes:
            self.limit(
                f"the protocol has {total} expression nodes, more than the limit of "
                f"{self.limits.max_expr_nodes}",
                "max_expr_nodes",
                None,
            )

    # --- expressions ---------------------------------------------------------------------

    def _spend(self, n: int = 1) -> None:
        self.budget -= n
        if self.budget < 0:
            raise _TooBig

    def ref(self, r: ast.Ref, env) -> ir.Expr:
        name = r.name
        if r.arg is None:
            if name in env:
                b = env[name]
                fams = [f for f, d in self.families.items() if d.param == b.domain]
                example = f"`{fams[0]}({name})`" if fams else "a family member"
                self.error(
                    "not-an-atom",
                    f"`{name}` is a variable over `{b.domain}`, not an atom",
                    r.span,
                    help=f"name an atom of the member, such as {example}",
                )
                return ir.FALSE
            if name in self.plain:
                return ir.mk_atom(name, r.span)
            if name in self.defs and self.defs[name].param is None:
                return self._use_def(self.defs[name], None, r.span)
            if name in self.defs:
                d = self.defs[name]
                self.error(
                    "missing-member",
                    f"`{name}` is a family of definitions over `{d.param}`, not one expression",
                    r.span,
                    help=f"write `{name}(c)` with a member or a variable of `{d.param}`",
                )
                return ir.FALSE
            if name in self.families:
                fam = self.families[name]
                self.error(
                    "missing-member",
                    f"`{name}` is a family of atoms over `{fam.param}`, not one atom",
                    r.span,
                    help=f"write `{name}(c)` with a member or a variable of `{fam.param}`",
                )
                return ir.FALSE
            self._unknown_name(name, r.span)
            return ir.FALSE
        if name in self.defs:
            d = self.defs[name]
            if d.param is None:
                self.error(
                    "not-a-family",
                    f"`{name}` is a single definition, not a family",
                    r.span,
                    help=f"a single definition takes no member: write `{name}`",
                )
                return ir.FALSE
            member = self._member(r, d.param, env, "a family of definitions")
            return ir.FALSE if member is None else self._use_def(d, member, r.span)
        if name not in self.families:
            if name in self.plain:
                self.error(
                    "not-a-family",
                    f"`{name}` is a single atom, not a family",
                    r.span,
                    help=f"a single atom takes no member: write `{name}`",
                )
            else:
                self._unknown_name(name, r.span)
            return ir.FALSE
        member = self._member(r, self.families[name].param, env, "a family")
        return ir.FALSE if member is None else ir.mk_atom(f"{name}({member})", r.span)

    def _member(self, r: ast.Ref, domain: str, env, kind: str) -> str | None:
        """The member ``r``'s argument names (a bound variable's or a member of
        ``domain``), or None: an error, or a checking pass over no members."""
        arg = r.arg
        assert arg is not None
        if arg in env:
            b = env[arg]
            if b.domain != domain:
                self.error(
                    "domain-mismatch",
                    f"`{arg}` ranges over `{b.domain}`, but `{r.name}` is {kind} over `{domain}`",
                    r.arg_span or r.span,
                )
                return None
            return b.member  # None while checking a body over no members: nothing to name
        known = self.members.get(domain)
        if known is None:
            # the domain itself is in error (reported already) or has no members yet
            return None
        if arg not in known:
            self.error(
                "unknown-member",
                f"`{arg}` is neither a variable nor a member of `{domain}`",
                r.arg_span or r.span,
                help=_did_you_mean(arg, list(known) + list(env)),
            )
            return None
        return arg

    def _unknown_name(self, name: str, span) -> None:
        what = "atom or definition" if self.defs else "atom"
        if name in self.label_names:
            hint = f"`{name}` is a verdict label: labels appear only in `verdict` and `decision`"
        else:
            hint = _did_you_mean(name, list(self.plain) + list(self.families) + list(self.defs))
        self.error("unknown-name", f"unknown {what} `{name}`", span, help=hint)

    def _leaf(self, e: ast.Expr, env) -> ir.Expr:
        if isinstance(e, ast.Lit):
            return ir.mk_const(e.value, e.span)
        if isinstance(e, ast.Ref):
            return self.ref(e, env)
        assert isinstance(e, ast.Verdict)
        self.error(
            "verdict-misuse",
            "the verdict `pass` may appear only on the left of `decision pass iff`",
            e.span,
            help="describe what the judge asserts with an atom instead",
        )
        return ir.FALSE

    def expr(self, root: ast.Expr, env) -> ir.Expr:
        """Ground one expression. Iterative (an explicit stack, post-order), so that even a
        very long `a and b and …` chain cannot exhaust Python's stack."""
        values: list[ir.Expr] = []
        # (node, env, None) asks for a visit; (node, env, n) combines n computed children
        # (for a generator, n also counts the checking pass whose value is dropped)
        todo: list[tuple[ast.Expr, dict, int | None]] = [(root, env, None)]
        while todo:
            node, env, n = todo.pop()
            if n is None:
                self._spend()
                if isinstance(node, (ast.Lit, ast.Ref, ast.Verdict)):
                    values.append(self._leaf(node, env))
                    continue
                if isinstance(node, ast.Call) and node.gen is not None:
                    g = node.gen
                    envs = self._bind(g.var, g.var_span, g.domain, g.domain_span, env)
                    todo.append((node, env, len(envs)))
                    todo.extend((g.body, e2, None) for e2 in reversed(envs))
                    continue
                if isinstance(node, ast.BinE) and node.op in ast.CHAIN_OPS:
                    kids = tuple(ast.chain_operands(node))
                else:
                    kids = ast.children(node)
                todo.append((node, env, len(kids)))
                todo.extend((k, env, None) for k in reversed(kids))
                continue
            args = values[len(values) - n :] if n else []
            del values[len(values) - n :]
            values.append(self._combine(node, env, args))
        (result,) = values
        return result

    def _combine(self, e: ast.Expr, env, args: list[ir.Expr]) -> ir.Expr:
        if isinstance(e, ast.NotE):
            return ir.mk_not(args[0], e.span)
        if isinstance(e, ast.BinE):
            # a whole chain at once; the result is the tree that combining the pairs as
            # written gives, without the quadratic cost of re-flattening at every step
            if e.op == "implies":
                return ir.mk_implies(args[0], args[1], e.span)
            if e.op == "iff":
                acc = args[0]
                for x in args[1:]:
                    acc = ir.mk_iff(acc, x, e.span)
                return acc
            if e.op == "xor":
                return _fold_xor(args, e.span)
            return ir.mk_nary(e.op, args, e.span)
        assert isinstance(e, ast.Call)
        if e.gen is not None and self._checking_only(e.gen, env):
            args = []
        return self._call(e, args)

    def _checking_only(self, g: ast.Generator, env) -> bool:
        """True when a generator ranges over no members (its one pass only checked names)."""
        if g.domain not in self.domains:
            return True
        return not self.members.get(g.domain)

    def _call(self, e: ast.Call, args: list[ir.Expr]) -> ir.Expr:
        if e.k is None:
            return ir.mk_and(args, e.span) if e.op == "all" else ir.mk_or(args, e.span)
        text = e.k
        span = e.k_span or e.span
        if text.startswith("-"):
            self.error(
                "cardinality",
                f"the bound of `{e.op}` must be 0 or more, not `{text}`",
                span,
            )
            return ir.FALSE
        digits = text.lstrip("0") or "0"
        if len(digits) > 15:
            self.error("cardinality", f"the bound `{text}` of `{e.op}` is too large", span)
            return ir.FALSE
        k = int(digits)
        if e.gen is None and k > len(args):
            # with a literal list the bound can be checked as written; a generator's
            # length depends on the replay's members, so there it folds instead
            self.error(
                "cardinality",
                f"`{e.op}` asks for {k} of its arguments, but it has only {len(args)}",
                span,
                help="a bound above the number of arguments is allowed only with a generator",
            )
            return ir.FALSE
        return ir.mk_card(e.op, k, args, e.span)
