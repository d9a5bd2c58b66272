"""The compiler's one environment: the names a `.proto` file declares, its diagnostics, and
the expansion budget, shared by every statement kind (``compile_decls``,
``compile_decisions``, ``compile_exprs``; ``compiler`` puts them together).

Contract: ``CompilerBase`` holds what every pass reads and writes (declared atoms, families,
definitions, domains and their resolved members, the diagnostics so far, the node budget) and
reports problems through ``error`` and ``limit``, each reported once however often a
generator body repeats it. The helpers here are the small pure functions the passes share.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from unmask import ir
from unmask.ir import Span
from unmask.language import ast
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic
from unmask.plumbing.frozen import frozen
from unmask.plumbing.limits import Limits

DOMAIN_HELP = "pass `--domain {name}=a,b` to unmaskc, or `domains` in the replay"
# the message of `missing-domain` (compile_decls.py writes it), read back by `missing_domain`
MISSING_DOMAIN_MESSAGE = "no members were given for the free domain `{name}`"


def missing_domain(d: Diagnostic) -> str | None:
    """The domain a ``missing-domain`` diagnostic names, for a caller that knows where the
    members come from and says so in its own help (a replay's `domains`, the builder's
    ``domains=``); None for any other diagnostic."""
    if d.code is not Code.MISSING_DOMAIN:
        return None
    head, _, tail = MISSING_DOMAIN_MESSAGE.partition("{name}")
    if d.message.startswith(head) and d.message.endswith(tail):
        return d.message[len(head) : len(d.message) - len(tail)]
    return None


GROUND_HELP = "the left side of `ground` reads judge atoms, the right side context atoms"


class _TooBig(Exception):
    """Grounding went past ``max_expr_nodes``; raised to stop a runaway expansion."""


@frozen
class _Binding:
    member: str | None  # None while checking the body of a generator over no members
    domain: str


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


class CompilerBase:
    """The environment every pass shares; see the module docstring."""

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

    if TYPE_CHECKING:
        # the passes call one another through ``self``; ``unmask.language.compiler`` puts them
        # together. Declared here for type checkers only: what each pass gives the others.
        def expr(self, root: ast.Expr, env: Mapping[str, _Binding]) -> ir.Expr: ...

        def _use_def(
            self, d: ast.DefineDecl, members: tuple[str, ...], span: Span | None
        ) -> ir.Expr: ...

        def _side_atoms(self, root: ast.Expr) -> Iterator[tuple[ast.Ref, str, str]]: ...

    def error(self, code: Code, message: str, span: Span | None, **kw) -> None:
        self.reported += 1
        key = (code, message, span)
        if key in self._seen:  # a generator body repeats its errors once per member
            return
        self._seen.add(key)
        if span is None and "path" not in kw:
            kw.setdefault("file", self.file)
        self.diags.append(Diagnostic(code, message, span, **kw))

    def limit(self, message: str, field: str, span: Span | None) -> None:
        self.error(Code.LIMIT, message, span, help=f"raise it with `{self.limits.option(field)}`")

    def _spend(self, n: int = 1) -> None:
        self.budget -= n
        if self.budget < 0:
            raise _TooBig

    def _duplicate(self, kind: str, name: str, span, first) -> None:
        self.error(
            Code.DUPLICATE_NAME,
            f"{kind} `{name}` is declared twice",
            span,
            notes=(f"the first declaration is at {first}",) if first else (),
        )

    def _unknown_domain(self, name: str, span) -> None:
        self.error(
            Code.UNKNOWN_DOMAIN,
            f"unknown domain `{name}`",
            span,
            help=_did_you_mean(name, self.domains) or f"declare it with `domain {name}`",
        )

    def _unknown_name(self, name: str, span) -> None:
        what = "atom or definition" if self.defs else "atom"
        hint: str | None
        if name in self.label_names:
            hint = f"`{name}` is a verdict label: labels appear only in `verdict` and `decision`"
        else:
            hint = _did_you_mean(name, list(self.plain) + list(self.families) + list(self.defs))
        self.error(Code.UNKNOWN_NAME, f"unknown {what} `{name}`", span, help=hint)
