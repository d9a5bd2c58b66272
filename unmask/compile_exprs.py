"""Expressions: names resolved, families applied to members, generators expanded, and
each node built with the IR's smart constructors under the expansion budget.

Contract: ``Expressions.expr(e, env)`` returns the ground ``ir.Expr`` of a syntax-tree
expression under the bindings ``env`` of `for` and generator variables, or records the
errors it finds (an unknown name with a did-you-mean, a member outside its domain, a
generator over an unknown domain) and returns a placeholder; a use of a definition becomes
an ``ir.Ref``. Every node spends the budget, so a runaway expansion stops at the limit.
"""

from __future__ import annotations

from unmask import ast, ir
from unmask.compile_base import (
    CompilerBase,
    _Binding,
    _did_you_mean,
    _fold_xor,
)


class Expressions(CompilerBase):
    """Expressions resolved and grounded under the expansion budget."""

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

    def _ident(self, ident: ast.Ident, env) -> str:
        if ident.arg is not None and ident.arg in env:
            b = env[ident.arg]
            return f"{ident.name}({b.member if b.member is not None else ident.arg})"
        return str(ident)
