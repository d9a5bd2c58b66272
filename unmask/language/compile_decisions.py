"""Decisions and definitions: the verdict labels, each label's decision, and the
definitions they use, checked for cycles and grounded in dependency order.

Contract: ``Decisions`` checks the `verdict` statement and every `decision` against it
(a label without a decision, a decision for no label, a second `otherwise`), refuses a
definition that uses itself around any circle, and lists the ground definitions an
expression uses, each once, dependencies first.
"""

from __future__ import annotations

from unmask import ir
from unmask.ir import Span
from unmask.language import ast
from unmask.language.compile_base import (
    CompilerBase,
    _Binding,
    _did_you_mean,
    _TooBig,
)
from unmask.plumbing.codes import Code


class Decisions(CompilerBase):
    """Verdict labels, decisions and definitions, checked and grounded."""

    def _verdict(self, stmts) -> ast.VerdictDecl | None:
        """The one `verdict` statement, checked: two or more labels, none twice."""
        found = [s for s in stmts if isinstance(s, ast.VerdictDecl)]
        if not found:
            return None
        first = found[0]
        for extra in found[1:]:
            self.error(
                Code.DUPLICATE_VERDICT,
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
                    Code.LABELS,
                    f"label `{label}` is declared twice",
                    span,
                    notes=(f"the first is at {seen[label]}",),
                )
            else:
                seen[label] = span
        if len(first.labels) < 2:
            self.error(
                Code.LABELS,
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
                Code.UNKNOWN_LABEL,
                f"`{key}` is not a label: the protocol has no `verdict` statement",
                span,
                help=f"declare the labels with `verdict {key} | …`, or write "
                "`decision pass iff EXPR` for a PASS/FAIL verdict",
            )
            return
        if verdict is not None and key is None:
            shown = ", ".join(f"`{x}`" for x in verdict.labels)
            self.error(
                Code.UNKNOWN_LABEL,
                "`decision pass` is for a protocol without a `verdict` statement",
                s.span,
                help=f"write `decision LABEL iff EXPR` for each of the labels {shown}",
            )
            return
        if verdict is not None and key is not None and key not in verdict.labels:
            shown = ", ".join(f"`{x}`" for x in verdict.labels)
            self.error(
                Code.UNKNOWN_LABEL,
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
                Code.DUPLICATE_DECISION,
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
                    Code.OTHERWISE,
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
                    Code.MISSING_DECISION,
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
                    Code.MISSING_DECISION,
                    f"label `{label}` has no decision",
                    span,
                    help=f"add `decision {label} iff EXPR` (or `decision {label} otherwise`)",
                )
            done.add(label)

    def _check_definitions(self) -> None:
        """Each definition's parameter, its recursion (on the text, before any expansion),
        and its body, checked once whatever the members."""
        for d in self.defs.values():
            spans = d.param_spans or (None,) * len(d.params)
            for i, (p, sp) in enumerate(zip(d.params, spans, strict=True)):
                if p not in self.domains:
                    self._unknown_domain(p, sp)
                elif p in d.params[:i]:
                    self.error(
                        Code.DUPLICATE_NAME,
                        f"definition `{d.name}` names the domain `{p}` twice",
                        sp or d.span,
                        help="in a definition's body a domain's name stands for its member, "
                        "so each domain is named once; over two members of one domain, "
                        "write the expression in a `for` or a generator with two variables",
                    )
        edges = {name: self._defs_in(d) for name, d in self.defs.items()}
        for name, d in self.defs.items():
            if name in self.cyclic:
                continue
            path = self._cycle(name, edges)
            if path is not None:
                self.cyclic.update(path)
                chain = " → ".join(f"`{x}`" for x in [*path, name])
                self.error(
                    Code.RECURSIVE_DEFINITION,
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
                if not d.params:
                    self._use_def(d, (), d.span)
                else:
                    self.expr(d.expr, {p: _Binding(None, p) for p in d.params})
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

    def _use_def(self, d: ast.DefineDecl, members: tuple[str, ...], span) -> ir.Expr:
        if d.name in self.cyclic or len(set(d.params)) < len(d.params):
            return ir.FALSE  # reported at the definition
        ground = ast.applied(d.name, members)
        body = self.def_bodies.get(ground)
        if body is None:
            env = {p: _Binding(m, p) for p, m in zip(d.params, members, strict=True)}
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

        def key(name: str) -> tuple[int, tuple[int, ...]]:
            base, _, rest = name.partition("(")
            d = self.defs[base]
            at = []
            for p, m in zip(d.params, rest[:-1].split(", ") if rest else (), strict=False):
                members = self.members.get(p, ())
                at.append(members.index(m) if m in members else 0)
            return order[base], tuple(at)

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
