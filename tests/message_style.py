"""Every diagnostic message the code can produce, collected from the sources, and the rules
of docs/style.md that a message must keep (not a test module).

``collect(roots)`` reads every module with ``ast`` and returns each message template that
reaches a ``Diagnostic`` (and click's ``UsageError``/``BadParameter``, which print as
diagnostics): a string or f-string given as the message directly, given to a helper that
passes its parameter on as the message (found to a fixed point, so helpers of helpers
count), or assigned to the local variable that is passed. An f-string becomes a
``Template``: its literal text and, for each ``{...}``, what the placeholder is.

``problems(template)`` lists the rules a message breaks:

- it starts lowercase (a leading backticked name or placeholder is exempt: it is user
  input, written as the user wrote it) and does not end with a period;
- it is one sentence: no `;` starting a second clause;
- it names no implementation type (``str``, ``dict``, ``NoneType``, ``KeyError``,
  ``ImportError``, a ``Traceback``, ...);
- it does not show an exception's raw text or type (``{exc}``, ``{type(exc).__name__}``):
  say what failed in words, and put what failed inside in a note;
- user input shown with ``show(...)`` stands in backticks.

The same rules, first letter and final period, hold for a literal ``help``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

TYPE_NAMES = re.compile(
    r"\b(NoneType|str|dict|list|tuple|int|float|bool|set|Token|Tree|Traceback"
    r"|[A-Z][A-Za-z]*(Error|Exception)|KeyboardInterrupt|StopIteration)\b"
)
EXCEPTION_NAMES = frozenset({"exc", "e", "err", "error", "ex"})
# calls that are the message's sink: (callee name, index of the message, its keyword)
SINKS: dict[str, tuple[int, str]] = {
    "Diagnostic": (1, "message"),
    "UsageError": (0, "message"),
    "BadParameter": (0, "message"),
    # exceptions whose message a command prints as a diagnostic's
    "Unavailable": (0, "message"),
    "ClusterError": (0, "message"),
    "ResumeError": (1, "message"),
    "Refused": (1, "message"),
    "_BadLine": (0, "message"),
    "internal_error": (99, "what"),  # keyword only: `internal error: WHAT`
}


@dataclass(frozen=True, slots=True)
class Placeholder:
    kind: str  # "exception", "exception-type", "shown" (user input via show) or "value"
    source: str


@dataclass(frozen=True, slots=True)
class Template:
    """A message: literal text with ``\\x00`` where each placeholder stands."""

    text: str
    holes: tuple[Placeholder, ...]
    where: str  # file:line
    help: str | None = None

    def shown(self) -> str:
        out, parts = [], self.text.split("\x00")
        for part, hole in zip(parts, (*self.holes, None), strict=True):
            out.append(part)
            if hole is not None:
                out.append("{" + hole.source + "}")
        return "".join(out)


def _placeholder(node: ast.expr) -> Placeholder:
    src = ast.unparse(node)
    if isinstance(node, ast.Name) and node.id in EXCEPTION_NAMES:
        return Placeholder("exception", src)
    if (
        isinstance(node, ast.Attribute)
        and node.attr == "__name__"
        and isinstance(node.value, ast.Call)
        and getattr(node.value.func, "id", "") == "type"
    ):
        return Placeholder("exception-type", src)
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("show", "printable"):
        return Placeholder("shown", src)
    if (
        isinstance(node, ast.Call)
        and getattr(node.func, "id", "") == "str"
        and node.args
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id in EXCEPTION_NAMES
    ):
        return Placeholder("exception", src)
    return Placeholder("value", src)


def template(node: ast.expr, where: str) -> Template | None:
    """The message a node builds, if it is a string, an f-string or a join of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return Template(node.value, (), where)
    if isinstance(node, ast.JoinedStr):
        text, holes = [], []
        for part in node.values:
            if isinstance(part, ast.Constant):
                text.append(str(part.value))
            elif isinstance(part, ast.FormattedValue):
                text.append("\x00")
                holes.append(_placeholder(part.value))
        return Template("".join(text), tuple(holes), where)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = template(node.left, where), template(node.right, where)
        if left is not None and right is not None:
            return Template(left.text + right.text, left.holes + right.holes, where)
    return None


def _templates(node: ast.expr, where: str, local: dict[str, list[ast.expr]]) -> list[Template]:
    """Every message ``node`` can be: a literal, both arms of ``a if c else b``, or each
    value assigned to the local name it is."""
    if isinstance(node, ast.IfExp):
        return _templates(node.body, where, local) + _templates(node.orelse, where, local)
    if isinstance(node, ast.Name) and node.id in local:
        return [t for value in local[node.id] for t in _templates(value, where, local)]
    t = template(node, where)
    return [] if t is None else [t]


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _argument(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    for k in call.keywords:
        if k.arg == keyword:
            return k.value
    if index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args):
        return call.args[index]
    return None


def _locals(func: ast.AST) -> dict[str, list[ast.expr]]:
    out: dict[str, list[ast.expr]] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                out.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            out.setdefault(node.target.id, []).append(node.value)
    return out


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _params(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = func.args
    names = [p.arg for p in (*a.posonlyargs, *a.args)]
    return names[1:] if names[:1] in (["self"], ["cls"]) else names


def _find_helpers(trees: dict[Path, ast.AST]) -> dict[str, tuple[int, str]]:
    """Functions that pass one of their parameters on to a sink as the message, to a fixed
    point: their name, the parameter's index and name."""
    # each function's calls found once, not on every round (each walked the whole package)
    functions = [
        (func.name, _params(func), [n for n in ast.walk(func) if isinstance(n, ast.Call)])
        for tree in trees.values()
        for func in _functions(tree)
    ]
    sinks = dict(SINKS)
    while True:
        found = dict(sinks)
        for name, params, calls in functions:
            for call in calls:
                spec = sinks.get(_callee(call))
                if spec is None:
                    continue
                arg = _argument(call, *spec)
                if isinstance(arg, ast.Name) and arg.id in params and name not in found:
                    found[name] = (params.index(arg.id), arg.id)
        if found == sinks:
            return sinks
        sinks = found


def collect(roots: Iterable[Path]) -> list[Template]:
    """Every message template that reaches a diagnostic, from the modules under ``roots``."""
    files = sorted(p for root in roots for p in Path(root).rglob("*.py"))
    assert files, f"no module under {list(roots)}: nothing to collect"
    trees = {p: ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in files}
    sinks = _find_helpers(trees)
    out: list[Template] = []
    for path, tree in trees.items():
        scopes: list[ast.AST] = [*_functions(tree), tree]
        seen: set[int] = set()
        for scope in scopes:
            local = _locals(scope) if not isinstance(scope, ast.Module) else {}
            for call in (n for n in ast.walk(scope) if isinstance(n, ast.Call)):
                if id(call) in seen:
                    continue
                spec = sinks.get(_callee(call))
                if spec is None:
                    continue
                seen.add(id(call))
                where = f"{path.name}:{call.lineno}"
                arg = _argument(call, *spec)
                if arg is None:
                    continue
                help_node = _argument(call, 99, "help")
                help_t = template(help_node, where) if help_node is not None else None
                for t in _templates(arg, where, local):
                    help_text = help_t.text if help_t is not None and not help_t.holes else None
                    out.append(Template(t.text, t.holes, where, help_text))
    return out


def problems(t: Template) -> list[str]:
    """The rules of docs/style.md the message ``t`` breaks."""
    found = []
    text = t.text
    # a message may start with a backticked name: user input, as the user wrote it
    if text[:1] not in ("`", "\x00") and text[:1] != text[:1].lower():
        found.append("starts with a capital letter")
    if text.rstrip().endswith("."):
        found.append("ends with a period")
    for part in text.split("`")[::2]:  # outside backticks: the message's own words
        if re.search(r";\s", part):
            found.append("has a second clause after `;` (it belongs in help)")
        m = TYPE_NAMES.search(part.replace("\x00", " "))
        if m:
            found.append(f"names an implementation type `{m.group()}`")
    parts = text.split("\x00")
    for i, hole in enumerate(t.holes):
        if hole.kind in ("exception", "exception-type"):
            found.append(f"shows an exception's raw text or type `{{{hole.source}}}`")
        if hole.kind == "shown":
            before, after = parts[i], parts[i + 1]
            if not (before.endswith("`") and after.startswith("`")):
                found.append(f"shows user input `{{{hole.source}}}` without backticks")
    if t.help is not None:
        h = t.help
        if h[:1] != "`" and h[:1] != h[:1].lower():
            found.append("help starts with a capital letter")
        if t.help.rstrip().endswith("."):
            found.append("help ends with a period")
    return found


def message_problems(message: str, help: str | None = None) -> list[str]:
    """The rules a message as printed breaks (user input in it is already shown)."""
    return problems(Template(message, (), "", help))
