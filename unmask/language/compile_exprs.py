"""Expressions: names resolved, families applied to members, generators expanded, and
each node built with the IR's smart constructors under the expansion budget.

Contract: ``Expressions.expr(e, env)`` returns the ground ``ir.Expr`` of a syntax-tree
expression under the bindings ``env`` of `for` and generator variables, or records the
errors it finds (an unknown name with a did-you-mean, a member outside its domain, a wrong
number of arguments, a generator over an unknown domain) and returns a placeholder; a use
of a definition becomes an ``ir.Ref``. Every node spends the budget, so a runaway expansion
stops at the limit; a generator over several domains checks the product of their sizes
against what is left before it builds a binding.
"""

from __future__ import annotations

import itertools
import math

from unmask import ir
from unmask.language import ast
from unmask.language.compile_base import (
    CompilerBase,
    _Binding,
    _did_you_mean,
    _fold_xor,
    _TooBig,
)
from unmask.plumbing.codes import Code


class Expressions(CompilerBase):
    """Expressions resolved and grounded under the expansion budget."""

    def ref(self, r: ast.Ref, env) -> ir.Expr:
        name = r.name
        if not r.args:
            if name in env:
                b = env[name]
                fams = [f for f, d in self.families.items() if d.params == (b.domain,)]
                example = f"`{fams[0]}({name})`" if fams else "a family member"
                self.error(
                    Code.NOT_AN_ATOM,
                    f"`{name}` is a variable over `{b.domain}`, not an atom",
                    r.span,
                    help=f"name an atom of the member, such as {example}",
                )
                return ir.FALSE
            if name in self.plain:
                return ir.mk_atom(name, r.span)
            if name in self.defs and not self.defs[name].params:
                return self._use_def(self.defs[name], (), r.span)
            if name in self.defs:
                d = self.defs[name]
                self.error(
                    Code.MISSING_MEMBER,
                    f"`{name}` is a family of definitions over {_over(d.params)}, "
                    "not one expression",
                    r.span,
                    help=_write_members(name, d.params),
                )
                return ir.FALSE
            if name in self.families:
                fam = self.families[name]
                self.error(
                    Code.MISSING_MEMBER,
                    f"`{name}` is a family of atoms over {_over(fam.params)}, not one atom",
                    r.span,
                    help=_write_members(name, fam.params),
                )
                return ir.FALSE
            self._unknown_name(name, r.span)
            return ir.FALSE
        if name in self.defs:
            d = self.defs[name]
            if not d.params:
                self.error(
                    Code.NOT_A_FAMILY,
                    f"`{name}` is a single definition, not a family",
                    r.span,
                    help=f"a single definition takes no member: write `{name}`",
                )
                return ir.FALSE
            members = self._members(r, d.params, env, "a family of definitions")
            return ir.FALSE if members is None else self._use_def(d, members, r.span)
        if name not in self.families:
            if name in self.plain:
                self.error(
                    Code.NOT_A_FAMILY,
                    f"`{name}` is a single atom, not a family",
                    r.span,
                    help=f"a single atom takes no member: write `{name}`",
                )
            else:
                self._unknown_name(name, r.span)
            return ir.FALSE
        params = self.families[name].params
        if len(params) == 1 == len(r.args):  # the hot path of every generator body
            span = r.arg_spans[0] if r.arg_spans else None
            m = self._member(r, 0, r.args[0], params[0], span, env, "a family")
            return ir.FALSE if m is None else ir.mk_atom(f"{name}({m})", r.span)
        members = self._members(r, params, env, "a family")
        return ir.FALSE if members is None else ir.mk_atom(ast.applied(name, members), r.span)

    def _members(self, r: ast.Ref, domains, env, kind: str) -> tuple[str, ...] | None:
        """The members ``r``'s arguments name, one per domain of the family, or None: an
        error, or a checking pass over no members."""
        if len(r.args) != len(domains):
            given = len(r.args)
            self.error(
                Code.WRONG_ARITY,
                f"`{r.name}` takes {_count(len(domains))} (of {_over(domains)}), "
                f"but {given} {'is' if given == 1 else 'are'} given",
                r.span,
                help=_write_members(r.name, domains),
            )
            return None
        spans = r.arg_spans or (None,) * len(r.args)
        if len(domains) == 1:  # the common case, kept as quick as it was
            m = self._member(r, 0, r.args[0], domains[0], spans[0], env, kind)
            return None if m is None else (m,)
        out = [
            self._member(r, i, arg, domain, span, env, kind)
            for i, (arg, domain, span) in enumerate(zip(r.args, domains, spans, strict=True))
        ]
        return None if None in out else tuple(out)  # type: ignore[return-value]

    def _member(self, r: ast.Ref, i: int, arg: str, domain: str, span, env, kind: str):
        """The member one argument names (a bound variable's or a member of ``domain``)."""
        if arg in env:
            b = env[arg]
            if b.domain != domain:
                if b.domain not in self.domains or domain not in self.domains:
                    return None  # an unknown domain, reported where it is named
                decl = self.families.get(r.name) or self.defs.get(r.name)
                params = decl.params if decl is not None else (domain,)
                if len(params) == 1:
                    message = (
                        f"`{arg}` ranges over `{b.domain}`, but `{r.name}` is {kind} "
                        f"over `{domain}`"
                    )
                    hint = None
                else:
                    message = (
                        f"`{arg}` ranges over `{b.domain}`, but argument {i + 1} of "
                        f"`{r.name}` is a member of `{domain}`"
                    )
                    hint = f"the arguments of `{r.name}` are members of {_over(params)}, in order"
                self.error(Code.DOMAIN_MISMATCH, message, span or r.span, help=hint)
                return None
            return b.member  # None while checking a body over no members: nothing to name
        known = self.members.get(domain)
        if known is None:
            # the domain itself is in error (reported already) or has no members yet
            return None
        if arg not in known:
            self.error(
                Code.UNKNOWN_MEMBER,
                f"`{arg}` is neither a variable nor a member of `{domain}`",
                span or r.span,
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
            Code.VERDICT_MISUSE,
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
                    envs = self._bind(node.gen.binds, env)
                    todo.append((node, env, len(envs)))
                    todo.extend((node.gen.body, e2, None) for e2 in reversed(envs))
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
        return any(not self.members.get(b.domain) for b in g.binds)

    def _call(self, e: ast.Call, args: list[ir.Expr]) -> ir.Expr:
        if e.k is None:
            return ir.mk_and(args, e.span) if e.op == "all" else ir.mk_or(args, e.span)
        text = e.k
        span = e.k_span or e.span
        if text.startswith("-"):
            self.error(
                Code.CARDINALITY,
                f"the bound of `{e.op}` must be 0 or more, not `{text}`",
                span,
            )
            return ir.FALSE
        digits = text.lstrip("0") or "0"
        if len(digits) > 15:
            self.error(Code.CARDINALITY, f"the bound `{text}` of `{e.op}` is too large", span)
            return ir.FALSE
        k = int(digits)
        if e.gen is None and k > len(args):
            # with a literal list the bound can be checked as written; a generator's
            # length depends on the replay's members, so there it folds instead
            self.error(
                Code.CARDINALITY,
                f"`{e.op}` asks for {k} of its arguments, but it has only {len(args)}",
                span,
                help="a bound above the number of arguments is allowed only with a generator",
            )
            return ir.FALSE
        return ir.mk_card(e.op, k, args, e.span)

    def _bind(self, binds: tuple[ast.Binder, ...], env) -> list:
        """The environments of ``binds`` in turn, the first binder varying slowest; one
        checking pass (every variable bound to no member) when a domain has no members."""
        seen: set[str] = set()
        kept: list[ast.Binder] = []
        lists: list[tuple[str, ...]] = []
        for b in binds:
            if b.var in self.plain or b.var in self.families or b.var in self.defs:
                kind = "a definition" if b.var in self.defs else "an atom"
                self.error(
                    Code.DUPLICATE_NAME,
                    f"the variable `{b.var}` has the name of {kind}",
                    b.var_span,
                    help="choose another variable name",
                )
            elif b.var in seen:
                self.error(
                    Code.DUPLICATE_NAME,
                    f"the variable `{b.var}` is bound twice",
                    b.var_span,
                    help=f"name each variable once: `for x in {b.domain}, y in {b.domain}`",
                )
                continue  # the first binding stands, so its uses are not reported again
            seen.add(b.var)
            kept.append(b)
            if b.domain not in self.domains:
                self._unknown_domain(b.domain, b.domain_span)
                lists.append(())
            else:
                lists.append(self.members.get(b.domain, ()))
        binds = tuple(kept)
        if not all(lists):
            return [{**env, **{b.var: _Binding(None, b.domain) for b in binds}}]
        if math.prod(len(x) for x in lists) > self.budget:
            raise _TooBig  # each combination costs a node at least: refuse before building
        if len(binds) == 1:  # the common case, kept as quick as it was
            (b,) = binds
            return [{**env, b.var: _Binding(m, b.domain)} for m in lists[0]]
        return [
            {**env, **{b.var: _Binding(m, b.domain) for b, m in zip(binds, combo, strict=True)}}
            for combo in itertools.product(*lists)
        ]

    def _ident(self, ident: ast.Ident, env) -> str:
        args = []
        for a in ident.args:
            b = env.get(a)
            args.append(b.member if b is not None and b.member is not None else a)
        return ast.applied(ident.name, tuple(args))


def _over(domains) -> str:
    """``claim`` or ``claim`, `passage`` in backticks, as a message names a family's domains."""
    return ", ".join(f"`{d}`" for d in domains)


def _count(n: int) -> str:
    return "1 member" if n == 1 else f"{n} members"


def _write_members(name: str, domains) -> str:
    if len(domains) == 1:
        return f"write `{name}(c)` with a member or a variable of `{domains[0]}`"
    return f"write `{name}(…)` with a member or a variable of each of {_over(domains)}, in order"
