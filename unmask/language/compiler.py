"""Compiling `.proto` text to the ground IR (``unmask.ir.Protocol``).

Contract: ``compile_source(text, filename, domains, limits)`` parses, resolves every name,
expands families and ``for`` statements over their domains' members and returns a ground
``Protocol`` built only with the ``mk_*`` constructors; or it raises ``UnmaskError`` with
every error it found (syntax errors first and alone, since later checks would only echo
them). The atom for member ``m`` of family ``f`` is named ``f(m)``, for members ``a``, ``b``
of a family over two domains ``f(a, b)``; ``{DOMAIN}`` in a family's description (and
``{X}`` in a ``for`` statement's description) becomes the member. Members of a free
domain come from ``domains``; members given for a fixed domain must be among its own. A
use of a definition becomes an ``ir.Ref`` named as written (``ok(cto)`` for a family
definition), and the protocol lists the ground definitions it uses in dependency order.
Every check (names, roles in ``ground``, recursion, labels) runs on the text as written, so
its outcome never depends on a replay's members. Every diagnostic has a stable ``code``
(see docs/language.md). ``compile_tree(tree, domains, limits)`` is the same for a text
already parsed. ``unmask.language.compile_cache.compile_cached`` is the same, remembered per process
and on disk.

The passes are split by statement kind over one environment (``compile_base``):
declarations and domains (``compile_decls``), verdicts, decisions and definitions
(``compile_decisions``), expressions (``compile_exprs``); this module runs them in order and
keeps the statements that hold requirements, constraints and grounding (`for` included).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from unmask import ir
from unmask.ir import Span
from unmask.language import ast
from unmask.language.compile_base import GROUND_HELP, _subst, _TooBig
from unmask.language.compile_decisions import Decisions
from unmask.language.compile_decls import Declarations
from unmask.language.compile_exprs import Expressions
from unmask.language.parser import parse_source
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.files import read_text
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits


def compile_source(
    text: str,
    filename: str = "<input>",
    domains: Mapping[str, Sequence[str]] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> ir.Protocol:
    """Compile one `.proto` text to a ground protocol, or raise ``UnmaskError``."""
    return compile_tree(parse_source(text, filename, limits), domains, limits)


def compile_tree(
    source: ast.SourceFile,
    domains: Mapping[str, Sequence[str]] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> ir.Protocol:
    """``compile_source`` of a text already parsed (``unmask.language.parser.parse_source``), for
    callers that compile one text with several sets of members or read its tree too: the
    compiler never changes the tree, so it is parsed once."""
    return _Compiler(source, domains or {}, limits).run()


def compile_file(
    path: str | Path,
    domains: Mapping[str, Sequence[str]] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> ir.Protocol:
    return compile_source(read_text(path, limits), str(path), domains, limits)


class _Compiler(Declarations, Decisions, Expressions):
    """A whole `.proto` file compiled: the statement kinds put together over one environment."""

    # --- diagnostics ---------------------------------------------------------------------

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
        labels: tuple[str, ...]
        ir_decisions: tuple[ir.Decision, ...]
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
        protocol = ir.Protocol(
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
            first_match=verdict is not None and verdict.first_match,
        )
        at = head.span
        if verdict is not None and verdict.span is not None:
            v = verdict.span  # its keyword: the line of 20,000 labels is 170 KB
            at = Span(v.file, v.line, v.column, v.line, v.column + 7, v.start_pos, v.start_pos + 7)
        self._check_part_atoms(protocol, at)
        return protocol

    # --- labels and decisions ------------------------------------------------------------

    # --- definitions ---------------------------------------------------------------------

    # --- roles in `ground` ---------------------------------------------------------------

    def _side_atoms(self, root: ast.Expr) -> Iterator[tuple[ast.Ref, str, str]]:
        """(reference, atom, role) for each atom an expression reads, a definition's atoms
        reported at the reference to the definition."""
        todo = [root]
        while todo:
            e = todo.pop()
            if isinstance(e, ast.Ref):
                decl = self.families.get(e.name) if e.args else self.plain.get(e.name)
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
            self.error(Code.ROLE_MISMATCH, message, ref.span, help=GROUND_HELP)
        return ok

    # --- statements ----------------------------------------------------------------------

    def _for(self, s: ast.ForDecl, constraints, requirements, grounding) -> None:
        names = tuple(b.var for b in s.binds)
        for env in self._bind(s.binds, {}):
            checking = any(env[v].member is None for v in names)
            self._body(s.body, env, names, constraints, requirements, grounding, checking)

    def _body(self, s, env, names, constraints, requirements, grounding, checking=False) -> None:
        if isinstance(s, ast.ConstraintDecl):
            c = ir.Constraint(self._ident(s.ident, env), self.expr(s.expr, env), s.span)
            if not checking:
                constraints.append(c)
        elif isinstance(s, ast.RequirementDecl):
            desc = s.description or ""
            for var in names or ():
                desc = _subst(desc, var, env[var].member)
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
            k = self.expr(s.context, env)
            roles_ok = self._check_side(s.judge, "judge", "left")
            roles_ok = self._check_side(s.context, "context", "right") and roles_ok
            if roles_ok and self.reported == before and not checking:
                grounding.append(ir.GroundPair(j, k, s.span, s.direction))

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
                        Code.DUPLICATE_NAME,
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
        sizes: ir.Memo = {}
        depths: ir.Memo = {}
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

    def _check_part_atoms(self, protocol: ir.Protocol, span: Span | None) -> None:
        """The atoms a check's parts would hold together (``ir.part_atoms``), against
        ``max_part_atoms``, before any part is made: under first-match n labels hold
        n^2 / 2 names (20,000 labels: 1.6 GB)."""
        bound = self.limits.max_part_atoms
        held = ir.part_atoms(protocol)
        if held > bound:
            why = " (under first-match, each label's holds every earlier label's atoms)"
            self.limit(
                f"the protocol's parts would hold {held} atoms in all"
                f"{why if protocol.first_match else ''}, more than the limit of {bound}",
                "max_part_atoms",
                span,
            )
            raise UnmaskError(self.diags)

    # --- expressions ---------------------------------------------------------------------
