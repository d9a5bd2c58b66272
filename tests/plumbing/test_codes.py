"""Diagnostic codes are one registry of typed values (``unmask/plumbing/codes.py``).

Each code is registered once, with the page of ``docs/`` that explains it; every registered
code is used by the package and appears on its page; ``docs/codes.md`` lists the registry;
no code is typed as a string where a ``Code`` is taken (mypy rejects it too); a code with a
fixed severity is reported with that severity; and a member is its string wherever it is
written (the documents that carry codes are pinned by ``tests/plumbing/test_codes_wire.py``).

``python tests/plumbing/test_codes.py`` rewrites ``docs/codes.md`` from the registry.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run as a script, `tests.` imports still resolve

from unmask.analysis.findings import CODES, ORDER  # noqa: E402
from unmask.checking.formats import encode_line, error_line  # noqa: E402
from unmask.checking.record import ResultRecord  # noqa: E402
from unmask.plumbing.codes import ERROR, NOTE, WARNING, Code, read_back  # noqa: E402
from unmask.plumbing.diagnostics import Diagnostic  # noqa: E402

DOCS = ROOT / "docs"
TABLE = DOCS / "codes.md"
PINS = ROOT / "tests" / "data" / "codes"
REGISTRY = ROOT / "unmask" / "plumbing" / "codes.py"


def _sources() -> list[Path]:
    return sorted(p for d in ("unmask", "backends") for p in (ROOT / d).rglob("*.py"))


@functools.cache
def _trees() -> list[tuple[Path, ast.Module]]:
    """Every module of the package, parsed once per test process (read-only)."""
    return [(p, ast.parse(p.read_text("utf-8"))) for p in _sources()]


def _members_named(tree: ast.AST) -> list[ast.Attribute]:
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "Code"
    ]


# --- the registry --------------------------------------------------------------------------


def test_each_code_is_registered_once_as_a_kebab_case_word() -> None:
    # an enum member whose value repeats another's is an alias, not a second code: none
    assert len(Code.__members__) == len(list(Code)) > 100
    for code in Code:
        assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", code.value), code
        assert code.name == code.value.upper().replace("-", "_"), code
        assert code.severity in (ERROR, WARNING, NOTE), code


def test_every_registered_code_is_used_in_the_package() -> None:
    used = {n.attr for p, t in _trees() if p != REGISTRY for n in _members_named(t)}
    unused = sorted(c.value for c in Code if c.name not in used)
    assert not unused, f"registered but never reported (remove them, or report them): {unused}"


def test_every_code_named_in_the_package_is_registered() -> None:
    bad = [
        f"{p.relative_to(ROOT)}:{n.lineno}: Code.{n.attr}"
        for p, t in _trees()
        for n in _members_named(t)
        if n.attr not in Code.__members__ and not n.attr.startswith("_") and n.attr != "of"
    ]
    assert not bad, bad


def _code_params(fn: ast.FunctionDef | ast.AsyncFunctionDef, skip_self: bool) -> list[int]:
    args = fn.args.args[1:] if skip_self else fn.args.args
    return [
        i
        for i, a in enumerate(args)
        if a.arg == "code" and a.annotation is not None and "Code" in ast.unparse(a.annotation)
    ]


def _module(path: Path) -> str:
    if not path.is_relative_to(ROOT):  # a planted file
        return path.stem
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "backends":  # installed inside the package
        parts.insert(0, "unmask")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _takers(
    trees: list[tuple[Path, ast.Module]],
) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """Where a ``Code`` is taken (a parameter, or a dataclass field, named ``code`` and typed
    ``Code``): per module, each function's and class's name -> the code's position; and each
    method's name -> its position."""
    by_module: dict[str, dict[str, int]] = {}
    methods: dict[str, int] = {}
    for path, tree in trees:
        found = by_module.setdefault(_module(path), {})
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for i in _code_params(node, skip_self=False):
                    found[node.name] = i
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            fields = [
                s.target.id
                for s in node.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            ]
            for s in node.body:
                if (
                    isinstance(s, ast.AnnAssign)
                    and isinstance(s.target, ast.Name)
                    and s.target.id == "code"
                    and "Code" in ast.unparse(s.annotation)
                ):
                    found[node.name] = fields.index("code")
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    for i in _code_params(s, skip_self=True):
                        if s.name == "__init__":
                            found[node.name] = i
                        else:
                            methods[s.name] = i
    return by_module, methods


_WORD = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")


def _literals(node: ast.AST) -> list[ast.Constant]:
    """The string literals ``node`` is (a literal, or a conditional expression of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, ast.IfExp):
        return _literals(node.body) + _literals(node.orelse)
    return []


def code_arguments(
    trees: list[tuple[Path, ast.Module]],
) -> list[tuple[Path, ast.Call, str, bool, ast.expr]]:
    """Each expression given where a ``Code`` is taken: to a function of the module or one it
    imports by name, to a class so taking it, or (any receiver: the test cannot tell types)
    to a method of a taker's name: (path, the call, the callee's name, whether a method, the
    expression)."""
    by_module, methods = _takers(_trees())
    out: list[tuple[Path, ast.Call, str, bool, ast.expr]] = []
    for path, tree in trees:
        names = dict(by_module.get(_module(path), {}))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    if a.name in by_module.get(node.module, {}):
                        names[a.asname or a.name] = by_module[node.module][a.name]
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f, pos, method, name = node.func, None, False, ""
            if isinstance(f, ast.Name):
                pos, name = names.get(f.id), f.id
            elif isinstance(f, ast.Attribute):
                pos, method, name = methods.get(f.attr), True, f.attr
            if pos is None:
                continue
            given = [k.value for k in node.keywords if k.arg == "code"]
            if pos < len(node.args):
                given.append(node.args[pos])
            out += [(path, node, name, method, g) for g in given]
    return out


def string_codes(trees: list[tuple[Path, ast.Module]]) -> list[tuple[Path, int, str]]:
    """Every string literal given where a ``Code`` is taken (to a method, only one that looks
    like a code: a method of that name may be another class's)."""
    out: list[tuple[Path, int, str]] = []
    for path, _, _, method, given in code_arguments(trees):
        for lit in _literals(given):
            if not method or _WORD.fullmatch(lit.value):
                out.append((path, lit.lineno, lit.value))
    return out


def test_no_code_is_typed_as_a_string_where_a_code_is_taken() -> None:
    # mypy says so too, but not inside a function without annotations, nor through a
    # receiver it cannot type (`r.err(...)` with `r` untyped): this finds every literal
    by_module, methods = _takers(_trees())
    assert {"err", "warn", "error", "add"} <= set(methods)
    assert {"Diagnostic", "Finding"} <= {n for m in by_module.values() for n in m}
    bad = []
    for path, line, text in string_codes(_trees()):
        member = Code.of(text)
        fix = f"write `Code.{member.name}`" if member else "register it, then use its member"
        bad.append(f"{path.relative_to(ROOT)}:{line}: `{text}`: {fix}")
    assert not bad, "codes typed as strings:\n" + "\n".join(bad)


def test_the_search_for_string_codes_finds_them(tmp_path: Path) -> None:
    # the test above is only as good as its search: planted string codes are all found
    planted = tmp_path / "unmask" / "planted.py"
    planted.parent.mkdir()
    planted.write_text(
        "from unmask.plumbing.diagnostics import Diagnostic\n"
        "def f(r, ok):\n"
        "    r.err('span-quote', '$', 'm')\n"
        "    Diagnostic(code='nope', message='m')\n"
        "    Diagnostic('io' if ok else 'limit', 'm')\n"
        "    r.add('Not a code.', 1)\n"
    )
    found = string_codes([(planted, ast.parse(planted.read_text()))])
    assert [(line, text) for _, line, text in found] == [
        (3, "span-quote"),
        (4, "nope"),
        (5, "io"),
        (5, "limit"),
    ]


def test_a_string_where_a_code_is_taken_is_a_type_error(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "from unmask.plumbing.codes import Code\n"
        "from unmask.plumbing.diagnostics import Diagnostic\n"
        "Diagnostic(Code.BAD_ESCAPE, 'fine')\n"
        "Diagnostic('bad-escape', 'a string, though one registered')\n"
        "Diagnostic(Code.BAD_ESCAPES, 'a member that does not exist')\n"
    )
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--follow-imports=silent",
            "--python-version=3.10",
            "--no-error-summary",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(snippet),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = sorted(line.split(": error: ")[0] for line in done.stdout.splitlines())
    assert lines == ["snippet.py:4", "snippet.py:5"], done.stdout + done.stderr
    assert 'incompatible type "str"; expected "Code"' in done.stdout


def _members(node: ast.AST) -> list[Code]:
    """The registry members ``node`` is (``Code.X``, or a conditional expression of them)."""
    if isinstance(node, ast.IfExp):
        return _members(node.body) + _members(node.orelse)
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "Code"
        and node.attr in Code.__members__
    ):
        return [Code[node.attr]]
    return []


def severities(trees: list[tuple[Path, ast.Module]]) -> tuple[list[str], set[Code]]:
    """Where a code is made with another severity than its registered one, and the codes
    seen. Made into a Diagnostic, a code has the severity it gives (an error when it gives
    none); through a reader's `warn`, a warning; through any other helper, an error. A
    finding's severity is the registry's own: `Finding` and the analysis's `add` are skipped."""
    seen: set[Code] = set()
    bad = []
    for path, call, name, _, given in code_arguments(trees):
        if name in ("Finding", "add"):
            continue
        severity = WARNING if name == "warn" else ERROR
        if name == "Diagnostic":
            kw = [k.value for k in call.keywords if k.arg == "severity"]
            if kw and not isinstance(kw[0], ast.Constant):
                continue  # made from data (a record read back, a finding)
            severity = str(kw[0].value) if kw else ERROR  # type: ignore[attr-defined]
        for code in _members(given):
            seen.add(code)
            if code.severity != severity:
                bad.append(
                    f"{path.name}:{call.lineno}: `{code}` is {code.severity}, made {severity}"
                )
    return bad, seen


def test_each_code_is_reported_with_its_severity() -> None:
    bad, seen = severities(_trees())
    assert not bad, bad
    unchecked = [c for c in Code if c.severity != ERROR and c not in seen and c not in CODES]
    assert not unchecked, f"never made where its severity shows: {unchecked}"
    assert len(seen) > 100
    for code in ORDER:
        assert CODES[code] == (code.severity, code.what) and code.what


def test_a_code_made_with_another_severity_is_found(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        "from unmask.plumbing.diagnostics import Diagnostic\n"
        "def f(r):\n"
        "    Diagnostic(Code.CACHE, 'm')\n"
        "    Diagnostic(Code.IO, 'm', severity='warning')\n"
        "    r.warn(Code.LIMIT, '$', 'm')\n"
        "    Diagnostic(Code.CACHE, 'm', severity='warning')\n"
    )
    bad, _ = severities([(planted, ast.parse(planted.read_text()))])
    assert bad == [
        "planted.py:3: `cache` is warning, made error",
        "planted.py:4: `io` is error, made warning",
        "planted.py:5: `limit` is error, made warning",
    ]


def test_the_findings_are_the_registered_analysis_codes() -> None:
    assert set(ORDER) == {c for c in Code if c.page == "analysis.md"}
    assert len(set(ORDER)) == len(ORDER)


# --- the docs --------------------------------------------------------------------------------


def test_every_code_is_explained_on_its_page() -> None:
    missing = []
    for code in Code:
        page = DOCS / code.page
        assert page.is_file(), f"`{code}` names {code.page}, not a page of docs/"
        if f"`{code.value}`" not in page.read_text("utf-8"):
            missing.append(f"{code.page}: `{code.value}`")
    assert not missing, "codes their page does not mention:\n" + "\n".join(missing)


# the pages whose tables list diagnostic codes in a column headed `code` (annotate.md's such
# column holds the kinds of an UNKNOWN reading, backends.md's and performance.md's others)
CODE_TABLES = ("language.md", "replay-format.md", "analysis.md", "codes.md")


def listed_codes(text: str) -> list[str]:
    """Each code in backticks in a column headed `code` of a Markdown table of ``text``."""
    out: list[str] = []
    column = None
    for line in text.splitlines():
        if not line.startswith("|"):
            column = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if column is None:
            column = cells.index("code") if "code" in cells else -1
        elif column >= 0 and not set(line) <= set("|-: ") and column < len(cells):
            out += [w for w in re.findall(r"`([^`]+)`", cells[column]) if "…" not in w]
    return out


def test_every_code_a_page_lists_is_registered() -> None:
    # a code renamed or gone must not live on in a page's table
    for name in CODE_TABLES:
        listed = listed_codes((DOCS / name).read_text("utf-8"))
        assert len(listed) >= 10, name
        stale = sorted({c for c in listed if Code.of(c) is None})
        assert not stale, f"{name} lists codes that are not registered: {stale}"
    assert listed_codes("| a | code |\n|---|---|\n| x | `io`, `nope` |\n") == ["io", "nope"]


def codes_table() -> str:
    """docs/codes.md, from the registry."""
    head = (TABLE.read_text("utf-8").split("| code |")[0]) if TABLE.is_file() else ""
    rows = ["| code | severity | explained in |", "|---|---|---|"]
    for code in Code:
        rows.append(f"| `{code.value}` | {code.severity} | [{code.page}]({code.page}) |")
    return head + "\n".join(rows) + "\n"


def test_the_codes_page_lists_the_registry() -> None:
    assert TABLE.read_text("utf-8") == codes_table(), (
        "docs/codes.md is not the registry's table: run `python tests/plumbing/test_codes.py`"
    )


# --- the wire --------------------------------------------------------------------------------


def test_a_code_is_its_string_wherever_it_is_written() -> None:
    for code in Code:
        text = code.value
        assert code == text and hash(code) == hash(text) and {text: 1}[code] == 1
        assert str(code) == f"{code}" == f"{code}" == format(code, "") == text
        assert json.dumps({code: code}) == json.dumps({text: text})
        assert pickle.loads(pickle.dumps(code)) is code
        assert Code.of(text) is code and Code(text) is code
    assert Code.of("nope") is None and Code.of(3) is None


def test_msgspec_writes_a_code_as_its_string() -> None:
    msgspec = pytest.importorskip("msgspec")
    assert msgspec.json.encode({Code.BAD_ESCAPE: [Code.IO]}) == b'{"bad-escape":["io"]}'


def test_an_error_record_reads_back_and_writes_unchanged() -> None:
    line = encode_line(error_line("a.json", [Diagnostic(Code.SPAN_QUOTE, "m", path="$")]))
    obj = json.loads(line)
    # a code this version does not register (a newer one's) is kept, not refused or changed
    obj["errors"].append({"code": "from-the-future", "message": "n", "severity": "error"})
    record = ResultRecord.from_line(obj)
    first, newer = (d.code for d in record.errors)
    assert first is Code.SPAN_QUOTE and Code.of(newer) is None and newer == "from-the-future"
    again = encode_line(error_line("a.json", record.errors))
    assert again == json.dumps(obj, separators=(",", ":")).encode() + b"\n"
    assert read_back("io") is Code.IO


def test_the_pins_carry_registered_codes() -> None:
    # the wire pins (tests/plumbing/test_codes_wire.py) are worth keeping only if codes are on them
    lines = (PINS / "audit.jsonl.golden").read_text("utf-8").splitlines()
    codes = {e["code"] for line in lines for e in json.loads(line).get("errors", ())}
    assert len(codes) >= 8 and codes <= {c.value for c in Code}
    sarif = json.loads((PINS / "analyze.sarif.golden").read_text("utf-8"))
    rules = [r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]]
    assert rules == [c.value for c in ORDER]


if __name__ == "__main__":
    TABLE.write_text(codes_table(), "utf-8")
    print(f"wrote {TABLE.relative_to(ROOT)}")
