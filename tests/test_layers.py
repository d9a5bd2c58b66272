"""The floors of docs/README.md hold in the code: no upward import, no circle.

The floor of every module is the heading it sits under in the README's module table, and
what a floor may import is the README's "Floors" table: both are read from the page, so the
documentation and the code cannot drift apart. Every ``import`` in ``unmask/`` and
``backends/`` is read with ``ast`` (function-local ones too, which is how the commands and
the registries defer their imports); names loaded through ``importlib.import_module`` (the
registries of formats, importers, proposers, commands and backends) stay inside their own
package and are not followed.

Known breaches are listed below with the issue that removes them. An entry that no longer
matches the code fails the test too, so the list only ever shrinks.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from tests.conftest import found_files

ROOT = Path(__file__).resolve().parent.parent
INDEX = ROOT / "docs" / "README.md"

# none left: the cache's circle (issue 26) was broken by a leaf module for the cache folder
# (cachedir) and compiling beside the compiler (compile_cache)
KNOWN_CYCLES: frozenset[frozenset[str]] = frozenset()
# issue 26 ("the audit is assembled in the CLI"): the batch engine and the benchmark check a
# replay through `unmask.api.check`, on the face above them.
KNOWN_UPWARD: frozenset[tuple[str, str]] = frozenset()

_SECTION = re.compile(r"^\|\s*\*\*([^*|]+)\*\*\s*\|", re.M)
_ROW = re.compile(r"^\|\s*`((?:unmask|backends)/[^`]*\.py)`\s*\|", re.M)


def module_name(path: str) -> str:
    """``unmask/batch/run.py`` → ``unmask.batch.run``; ``backends/`` installs as
    ``unmask.backends``; a package is its ``__init__.py``."""
    parts = path.removesuffix(".py").split("/")
    if parts[0] == "backends":
        parts = ["unmask", *parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def floors_of_modules(text: str) -> dict[str, str]:
    """Each module of the module table, with the heading (floor) it sits under."""
    table = text.split("## Every module", 1)[1]
    out: dict[str, str] = {}
    floor = None
    for line in table.splitlines():
        if m := _SECTION.match(line):
            floor = m.group(1).strip()
        elif (m := _ROW.match(line)) and floor is not None:
            out[module_name(m.group(1))] = floor
    return out


def floor_rules(text: str) -> dict[str, set[str]]:
    """Each floor of the "Floors" table, with the floors it may import besides its own."""
    section = text.split("## Floors", 1)[1].split("\n## ", 1)[0]
    rules: dict[str, set[str]] = {}
    for name, may in re.findall(r"^\|([^|]+)\|([^|]+)\|$", section, re.M):
        name, may = name.strip(), may.strip()
        if name in ("floor", "---"):
            continue
        if may == "nothing of the project":
            rules[name] = set()
        elif may == "every floor":
            rules[name] = {"*"}
        else:
            rules[name] = {f.strip() for f in may.split(",")}
    for name, may in rules.items():
        if "*" in may:
            rules[name] = set(rules) - {name}
    return rules


def _resolve(name: str, modules: Iterable[str]) -> str | None:
    """The project module an import of ``name`` loads (its longest known prefix)."""
    known = set(modules)
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(source: str, module: str, is_package: bool, modules: set[str]) -> set[str]:
    """The project modules ``source`` imports, anywhere in it."""
    package = module if is_package else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(filter(None, (_resolve(a.name, modules) for a in node.names)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                target = full if full in modules else _resolve(base, modules)
                if target:
                    out.add(target)
    out.discard(module)
    return out


def import_graph() -> dict[str, set[str]]:
    paths = {}
    for top in ("unmask", "backends"):
        for path in found_files((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            paths[module_name(rel)] = path
    modules = set(paths)
    return {
        m: imports_of(p.read_text(encoding="utf-8"), m, p.name == "__init__.py", modules)
        for m, p in paths.items()
    }


def upward(
    graph: Mapping[str, set[str]], floor: Mapping[str, str], rules: Mapping[str, set[str]]
) -> set[tuple[str, str]]:
    """Every import whose target sits on a floor its module's floor may not import."""
    return {
        (m, t)
        for m, targets in graph.items()
        for t in targets
        if floor[t] != floor[m] and floor[t] not in rules[floor[m]]
    }


def cycles(graph: Mapping[str, Iterable[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one node (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.add(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.add(frozenset(component))
    return found


@pytest.fixture(scope="module")
def readme() -> str:
    return INDEX.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_every_module_sits_on_a_floor_the_floors_table_names(readme, graph) -> None:
    floor = floors_of_modules(readme)
    rules = floor_rules(readme)
    assert len(floor) > 50 and len(rules) > 5, "the module table or the floors table moved"
    assert sorted(set(graph) - set(floor)) == [], "modules without a floor in docs/README.md"
    assert sorted(set(floor.values()) - set(rules)) == [], "headings missing from Floors"
    assert sorted(set(rules) - set(floor.values())) == [], "floors without a module"


def test_the_floors_themselves_form_no_circle(readme) -> None:
    rules = floor_rules(readme)
    assert cycles(rules) == set()
    assert all(name not in may for name, may in rules.items())


def test_no_import_runs_to_a_floor_it_may_not_use(readme, graph) -> None:
    found = upward(graph, floors_of_modules(readme), floor_rules(readme))
    assert sorted(found - KNOWN_UPWARD) == [], "imports against the floors of docs/README.md"
    assert sorted(KNOWN_UPWARD - found) == [], "gone: delete these from KNOWN_UPWARD"


def test_no_two_modules_import_each_other_around_a_circle(graph) -> None:
    found = cycles(graph)
    new = [sorted(c) for c in found - KNOWN_CYCLES]
    assert new == [], "import circles"
    gone = [sorted(c) for c in KNOWN_CYCLES - found]
    assert gone == [], "gone: delete these from KNOWN_CYCLES"


# --- the checks themselves catch what they are for -------------------------------------


def test_imports_are_read_in_every_form() -> None:
    modules = {"unmask", "unmask.a", "unmask.b", "unmask.c", "unmask.pkg", "unmask.pkg.d"}
    source = (
        "import unmask.a\n"
        "from unmask import b, __version__\n"
        "def f():\n"
        "    from unmask.pkg.d import thing\n"
        "    from . import c\n"
    )
    assert imports_of(source, "unmask.pkg.e", False, modules) == {
        "unmask.a",
        "unmask.b",
        "unmask",
        "unmask.pkg.d",
        "unmask.pkg.c" if "unmask.pkg.c" in modules else "unmask.pkg",
    }


def test_an_upward_import_and_a_circle_are_found() -> None:
    graph = {"low": {"high"}, "high": {"low"}, "mid": {"low"}}
    floor = {"low": "Under all", "high": "Face", "mid": "IR"}
    rules = {"Under all": set(), "IR": {"Under all"}, "Face": {"IR", "Under all"}}
    assert upward(graph, floor, rules) == {("low", "high")}
    assert cycles(graph) == {frozenset({"low", "high"})}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == set()
