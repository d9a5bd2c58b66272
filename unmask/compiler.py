"""Compiling `.proto` text to the ground IR (``unmask.ir.Protocol``).

Contract: ``compile_source(text, filename, domains, limits)`` parses, resolves every name,
expands families and ``for`` statements over their domains' members and returns a ground
``Protocol`` built only with the ``mk_*`` constructors; or it raises ``UnmaskError`` with
every error it found (syntax errors first and alone, since later checks would only echo
them). The atom for member ``m`` of family ``f`` is named ``f(m)``; ``{DOMAIN}`` in a
family's description (and ``{X}`` in a ``for`` statement's description) becomes the
member. Members of a free domain come from ``domains``; members given for a fixed domain
must be among its own. Every diagnostic has a stable ``code`` (see docs/language.md).
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
from unmask.names import IDENT_PATTERN, IDENT_RE
from unmask.parser import parse_source, reserved_words

DOMAIN_HELP = "pass `--domain {name}=a,b` to unmaskc, or `domains` in the replay"


# stands in for the decision when compiling stopped early, so no `missing-decision` follows
_ABORTED = ast.DecisionDecl(ast.Lit(True))


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
        constraints: list[ir.Constraint] = []
        requirements: list[ir.Requirement] = []
        grounding: list[ir.GroundPair] = []
        decision: ir.Expr | None = None
        first_decision: ast.DecisionDecl | None = None
        try:
            for s in stmts:
                if isinstance(s, ast.DecisionDecl):
                    expr = self.expr(s.expr, {})
                    if first_decision is None:
                        first_decision, decision = s, expr
                    else:
                        self.error(
                            "duplicate-decision",
                            "the protocol has a second decision",
                            s.span,
                            notes=(f"the first decision is at {first_decision.span}",),
                            help="a protocol has exactly one decision; join them with `and`",
                        )
                elif isinstance(s, ast.ForDecl):
                    self._for(s, constraints, requirements, grounding)
                elif isinstance(s, (ast.ConstraintDecl, ast.RequirementDecl, ast.GroundDecl)):
                    self._body(s, {}, None, constraints, requirements, grounding)
        except _TooBig:
            # stop at once: every later statement would only overrun the budget again
            first_decision = first_decision or _ABORTED
            self.limit(
                f"grounding makes more than {self.limits.max_expr_nodes} expression nodes",
                "max_expr_nodes",
                None,
            )
        except RecursionError:  # pragma: no cover - depth is bounded by the parser
            first_decision = first_decision or _ABORTED
            self.limit("an expression is nested too deeply to compile", "max_expr_depth", None)
        if first_decision is None:
            self.error(
                "missing-decision",
                "the protocol has no decision",
                head.span if head else None,
                help="add `decision pass iff EXPR`",
            )
        self._check_unique(constraints, requirements)
        if not self.diags:
            self._check_size(constraints, decision, requirements)
        if self.diags:
            raise UnmaskError(self.diags)
        assert head is not None and decision is not None
        return ir.Protocol(
            head.name,
            head.text,
            tuple(atoms),
            tuple(constraints),
            decision,
            tuple(requirements),
            tuple(grounding),
            head.span,
        )

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
                "bad-member", f"the members of `{name}` must be a list of names", None, path=path
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
                    help=f"a member is a name `{IDENT_PATTERN}` that is not a reserved word",
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
        if var in self.plain or var in self.families:
            self.error(
                "duplicate-name",
                f"the variable `{var}` has the name of an atom",
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
            j = self._ground_ref(s.judge, env, "judge", "left")
            c = self._ground_ref(s.context, env, "context", "right")
            if j is not None and c is not None and not checking:
                grounding.append(ir.GroundPair(j, c, s.span))

    def _ground_ref(self, ref: ast.Ref, env, role: str, side: str) -> str | None:
        # the role is read off the declaration the reference names, not off a ground atom,
        # so a family over a domain with no members is checked as one with members
        before = self.reported
        e = self.ref(ref, env)
        if self.reported > before:
            return None
        decl = self.plain.get(ref.name) if ref.arg is None else self.families.get(ref.name)
        actual = decl.role if decl is not None else None
        if actual is not None and actual != role:
            self.error(
                "role-mismatch",
                f"`{ref}` is a {actual} atom, but the {side} side of `ground` must be a "
                f"{role} atom",
                ref.span,
                help="write `ground JUDGE_ATOM ~ CONTEXT_ATOM`",
            )
            return None
        return e.name if isinstance(e, ir.Atom) else None

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

    def _check_size(self, constraints, decision, requirements) -> None:
        exprs = [(c.expr, c.span) for c in constraints] + [(decision, None)]
        for r in requirements:
            exprs.append((r.expr, r.span))
            if r.addressed is not None:
                exprs.append((r.addressed, r.span))
        total = 0
        for e, span in exprs:
            total += ir.size(e)
            d = ir.depth(e)
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
        arg = r.arg
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
        fam = self.families[name]
        if arg in env:
            b = env[arg]
            if b.domain != fam.param:
                self.error(
                    "domain-mismatch",
                    f"`{arg}` ranges over `{b.domain}`, but `{name}` is a family over "
                    f"`{fam.param}`",
                    r.arg_span or r.span,
                )
                return ir.FALSE
            if b.member is None:
                return ir.FALSE  # checking a body over no members: nothing to name
            return ir.mk_atom(f"{name}({b.member})", r.span)
        known = self.members.get(fam.param)
        if known is None:
            # the domain itself is in error (reported already) or has no members yet
            return ir.FALSE
        if arg not in known:
            self.error(
                "unknown-member",
                f"`{arg}` is neither a variable nor a member of `{fam.param}`",
                r.arg_span or r.span,
                help=_did_you_mean(arg, list(known) + list(env)),
            )
            return ir.FALSE
        return ir.mk_atom(f"{name}({arg})", r.span)

    def _unknown_name(self, name: str, span) -> None:
        self.error(
            "unknown-name",
            f"unknown atom `{name}`",
            span,
            help=_did_you_mean(name, list(self.plain) + list(self.families)),
        )

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
