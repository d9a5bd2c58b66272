"""The documentation stays true to the tree and stands on its own.

- ``docs/README.md`` has a row for every Python module under ``unmask/`` and ``backends/``,
  and every path it names exists; the README's "Where things are" names every top-level
  module and package;
- ``unmask check --help`` names every registered backend;
- every page in ``docs/`` is linked from ``docs/README.md``, and every relative link in the
  README and ``docs/`` leads to a file (and a heading) that exists;
- the Python examples of ``docs/api.md`` run and show the values they claim;
- every ``--flag`` a command line of the docs writes after ``unmask …`` or ``unmaskc …``
  (in a code block or an inline code span) is an option of that command;
- no text points at a document the user cannot see (a contract file or a repository that
  is not part of the project): such a pointer is spelled out in ``_HIDDEN`` below;
- every ```` ```proto ```` block of the docs and the README compiles (free domains given
  invented members), every untagged block that is a whole protocol is tagged so, and every
  untagged fragment of statements parses under a `protocol` line;
- the key order of a result line that docs/audit.md gives is the order the writer uses.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import found_files

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
INDEX = DOCS / "README.md"
# a path cell of the module table: `unmask/...`, `backends/...` or `grammar/...`
_ROW = re.compile(r"^\|\s*`((?:unmask|backends|grammar)/[^`]*)`\s*\|", re.M)
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
_ANCHORED = re.compile(r"\]\(([^)#\s]*)#([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """The heading anchors a Markdown renderer gives ``page`` (lowercase; punctuation but
    ``-`` and ``_`` dropped; spaces become ``-``)."""
    out = set()
    for heading in re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M):
        out.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return out


def _table_paths() -> list[str]:
    return _ROW.findall(INDEX.read_text(encoding="utf-8"))


def _modules() -> set[str]:
    found = set()
    for top in ("unmask", "backends"):
        for path in found_files((ROOT / top).rglob("*.py")):
            found.add(path.relative_to(ROOT).as_posix())
    return found


def test_every_module_has_a_row() -> None:
    missing = sorted(_modules() - set(_table_paths()))
    assert not missing, f"docs/README.md has no row for {missing}"


def test_every_row_names_a_path_that_exists() -> None:
    paths = _table_paths()
    assert paths, "no module table found in docs/README.md"
    gone = [p for p in paths if not (ROOT / p).exists()]
    assert not gone, f"docs/README.md names paths that do not exist: {gone}"
    twice = sorted({p for p in paths if paths.count(p) > 1})
    assert not twice, f"docs/README.md lists these twice: {twice}"


def _readme_paths() -> set[str]:
    """Every path in the first column of the README's "Where things are" table; a bare
    name (`parser.py` after `unmask/language/ast.py`) is in the folder of the cell's first path."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Where things are", 1)[1].split("\n## ", 1)[0]
    paths = set()
    for cell in re.findall(r"^\|([^|]*)\|", section, re.M):
        names = re.findall(r"`([^`]+)`", cell)
        folder = names[0].rsplit("/", 1)[0] + "/" if names and "/" in names[0] else ""
        for name in names:
            paths.add(name if "/" in name else folder + name)
    return paths


def test_readme_names_every_top_level_module_and_package() -> None:
    named = _readme_paths()
    top = {p.relative_to(ROOT).as_posix() for p in (ROOT / "unmask").glob("*.py")}
    top |= {
        p.relative_to(ROOT).as_posix() + "/"
        for p in (ROOT / "unmask").iterdir()
        if (p / "__init__.py").exists()
    }
    top |= {"backends/", "grammar/unmask.lark"}
    missing = sorted(top - named)
    assert not missing, f"README.md's table of where things are does not name {missing}"
    gone = sorted(p for p in named if not (ROOT / p).exists())
    assert not gone, f"README.md names paths that do not exist: {gone}"


def test_check_help_names_every_backend() -> None:
    from click.testing import CliRunner

    from unmask.backends import available
    from unmask.cli.main import main

    result = CliRunner().invoke(main, ["check", "--help"], terminal_width=200)
    assert result.exit_code == 0
    line = " ".join(result.output.split())
    missing = [name for name in available() if name not in line.split("--backend", 1)[1]]
    assert not missing, f"`unmask check --help` does not name {missing}"


def test_check_and_audit_help_say_their_exit_statuses_as_the_readme_does() -> None:
    from click.testing import CliRunner

    from unmask.cli.main import main
    from unmask.plumbing import exitcodes as ex

    def helped(command: str) -> str:
        result = CliRunner().invoke(main, [command, "--help"], terminal_width=200)
        assert result.exit_code == 0
        return " ".join(result.output.split())

    said = (
        f"{ex.OK} SATISFIED, {ex.VIOLATED} VIOLATED, {ex.UNKNOWN} UNKNOWN, "
        f"{ex.INVALID} an invalid replay, {ex.USAGE} usage"
    )
    assert f"Exit status: {said}." in helped("check")
    row = next(
        x
        for x in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
        if "`unmask check " in x
    )
    assert "0 satisfied, 1 violated, 3 unknown, 4 invalid, 2 usage" in row
    # an audit that finds violations still exits 0 unless asked to fail: said where it is run
    assert "exit 0 whatever the results unless --fail-on" in helped("audit")
    row = next(
        x
        for x in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
        if "`unmask audit PATH" in x
    )
    assert "0 whatever the results unless `--fail-on" in row


def test_every_page_is_linked_from_the_index() -> None:
    linked = set(_LINK.findall(INDEX.read_text(encoding="utf-8")))
    pages = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    unlinked = sorted(pages - linked)
    assert not unlinked, f"docs/README.md does not link {unlinked}"


@pytest.mark.parametrize(
    "page",
    [ROOT / "README.md", *sorted(DOCS.glob("*.md"))],
    ids=lambda p: p.relative_to(ROOT).as_posix(),
)
def test_relative_links_resolve(page: Path) -> None:
    bad = []
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target):  # a web address
            continue
        if not (page.parent / target).exists():
            bad.append(target)
    assert not bad, f"{page.name} links to missing files: {bad}"
    for target, anchor in _ANCHORED.findall(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target):
            continue
        if anchor not in _anchors(page.parent / target if target else page):
            bad.append(f"{target}#{anchor}")
    assert not bad, f"{page.name} links to missing headings: {bad}"


# A pointer to a document outside the project: the contract file by its name, a section of
# it, or the repository it lived in. Words that merely contain the letters (NOT_SPECIFIED,
# INSPECT) are not pointers. The words are assembled here, so this guard does not match
# itself in a plain search of the tree.
_CONTRACT = "SP" + "EC"
_REPO_WORD = "stee" + "ring"
_HIDDEN = re.compile(rf"(?<![A-Za-z_]){_CONTRACT}(?![A-Za-z_])|(?i:{_REPO_WORD})")
_TEXT_SUFFIXES = {".py", ".md", ".lark", ".j2", ".toml", ".proto", ".txt", ".cfg"}
_SKIP_DIRS = {".venv", ".git", "__pycache__", "node_modules", "build", "dist"}


def _project_text_files() -> list[Path]:
    out = []
    for folder, dirs, files in os.walk(ROOT):
        here = Path(folder)
        # pruned in place, so os.walk never descends into them; tests/data holds
        # third-party fixtures, kept as found
        dirs[:] = [
            d
            for d in dirs
            if d not in _SKIP_DIRS
            and not d.endswith(".egg-info")
            and (here / d) != ROOT / "tests" / "data"
        ]
        out.extend(here / f for f in files if Path(f).suffix in _TEXT_SUFFIXES)
    assert len(out) > 20, "the walk found almost nothing: the test would check nothing"
    return out


def test_no_text_points_at_a_document_the_user_cannot_see() -> None:
    me = Path(__file__).resolve()
    hits = []
    for path in _project_text_files():
        if path.resolve() == me:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _HIDDEN.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not hits, "say the rule itself instead:\n" + "\n".join(hits)


def test_the_hidden_document_pattern_catches_what_it_should() -> None:
    pointers = [f"see {_CONTRACT} section 4", f"{_CONTRACT}'s table", f"{_CONTRACT}.md"]
    pointers += [f"{_CONTRACT} §5", f"the {_REPO_WORD} repo"]
    for text in pointers:
        assert _HIDDEN.search(text), text
    for text in ("NOT_SPECIFIED", "INSPECT_TASK", "specification", "spec"):
        assert not _HIDDEN.search(text), text


def _python_examples(page: Path) -> list[str]:
    """The runnable Python blocks of a page: those that start with an import (the others
    show signatures)."""
    blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.M | re.S)
    return [b for b in blocks if b.startswith(("import ", "from "))]


def test_the_api_examples_run_and_say_what_they_show(tmp_path, monkeypatch, capsys) -> None:
    """Every example of docs/api.md runs, in order, in one namespace (as a reader would
    paste them), from a folder holding the shipped examples; a comment `# "X"` after an
    expression is the value it shows."""
    from unmask import backends

    # the examples register backends: keep that to this test
    monkeypatch.setattr(backends, "_REGISTRY", dict(backends._REGISTRY))
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    blocks = _python_examples(DOCS / "api.md")
    assert len(blocks) >= 4
    namespace: dict = {}
    checked = 0
    for block in blocks:
        exec(compile(block, "docs/api.md", "exec"), namespace)
        for line in block.splitlines():
            shown = re.match(r"^(\S.*?)\s{2,}# (\"[A-Z_]+\"|\d+|True|False)(?!\w)", line)
            if shown and " = " not in shown.group(1):
                expr, value = shown.groups()
                assert eval(expr, namespace) == eval(value), line
                checked += 1
    assert checked >= 8, f"only {checked} shown values were checked"
    written = {p.name for p in tmp_path.iterdir()}
    assert "case-x.json" in written
    # the whole audit run from Python wrote every output it was given
    assert {"results.jsonl", "summary.json", "junit.xml", "pages"} <= written
    assert (tmp_path / "pages" / "index.html").is_file()


# words the docs use in place of a name: `unmask.render.FMT`, the JUnit classname
_PLACEHOLDERS = {"FMT", "FORMAT", "NAME", "PROTOCOL"}


def _named_in_prose(page: Path) -> tuple[set[str], set[str]]:
    """The file paths (with an extension, or a folder ending in ``/``) and the dotted
    ``unmask.…`` names a page mentions. Schema names (``unmask.protocol/1``), file names
    (``unmask.lark``) and placeholders (``unmask.render.FMT``) are not modules."""
    text = page.read_text(encoding="utf-8")
    paths = set(re.findall(r"`((?:unmask|backends|grammar|tests|examples)/[\w./-]*\.\w+)`", text))
    paths |= set(re.findall(r"`((?:unmask|backends|grammar|tests|examples)/[\w/]*/)`", text))
    names = {
        m
        for m in re.findall(r"(?<![\w/])unmask(?:\.\w+)+(?![\w/-])", text)
        if not m.endswith(".lark") and m.rsplit(".", 1)[1] not in _PLACEHOLDERS
    }
    return paths, names


def _resolves(dotted: str) -> bool:
    import importlib

    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


@pytest.mark.parametrize(
    "page",
    [ROOT / "README.md", *sorted(DOCS.glob("*.md"))],
    ids=lambda p: p.relative_to(ROOT).as_posix(),
)
def test_every_module_path_and_name_in_the_docs_exists(page: Path) -> None:
    paths, names = _named_in_prose(page)
    gone = sorted(p for p in paths if not (ROOT / p).exists())
    unknown = sorted(n for n in names if not _resolves(n))
    assert not gone and not unknown, f"{page.name}: no such path {gone}, no such name {unknown}"


# --- every flag a command line in the docs writes exists -------------------------------------

_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
_SPAN = re.compile(r"`([^`\n]+)`")
_STOP = {"|", "||", "&&", ";", ">", "<", "2>", "#", "2>&1"}
_FLAG = re.compile(r"--[a-z][a-z0-9-]*")


def _command_lines(text: str) -> list[str]:
    """The code of a page: each fenced block's lines (a trailing `\\` joins the next line),
    then each inline code span outside the blocks."""
    out = []
    for block in _FENCE.findall(text):
        out += block.replace("\\\n", " ").splitlines()
    out += _SPAN.findall(_FENCE.sub("", text))
    return out


def _commands(tokens: list[str], group) -> list:
    """The commands ``tokens`` (after `unmask`) name: subcommands are followed into groups;
    `check|audit` names both."""
    import click

    cmds = [group]
    for tok in tokens:
        if not all(isinstance(c, click.Group) for c in cmds):
            break
        if tok.startswith("-"):
            break
        found = [c.get_command(click.Context(c), n) for c in cmds for n in tok.split("|")]
        if not all(found):
            break
        cmds = found
    return cmds


def _flags_used(line: str) -> list[tuple[str, list[str]]]:
    """For each `unmask …`/`unmaskc …` in ``line``: its words, and the flags it writes
    (up to a pipe, a `;`, a redirection or a comment)."""
    words = line.replace("[", " ").replace("]", " ").split()
    out = []
    for i, w in enumerate(words):
        if w not in ("unmask", "unmaskc"):
            continue
        rest = []
        for tok in words[i + 1 :]:
            if tok in _STOP or tok.startswith("#") or tok in ("unmask", "unmaskc"):
                break
            rest.append(tok)
        out.append((w, rest))
    return out


def _doc_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def _unknown_flags() -> list[str]:
    import click

    from unmask.cli.main import main
    from unmask.cli.unmaskc import cli

    bad = []
    for page in _doc_pages():
        for line in _command_lines(page.read_text(encoding="utf-8")):
            for prog, rest in _flags_used(line):
                group = main if prog == "unmask" else cli
                cmds = _commands(rest, group)
                if prog == "unmaskc" and cmds == [cli]:
                    cmds = [cli.commands["compile"]]  # `unmaskc FILE.proto` compiles
                for tok in rest:
                    m = _FLAG.match(tok)
                    if m is None:
                        continue
                    flag = m.group(0)
                    for cmd in cmds:
                        ctx = click.Context(cmd)
                        known = {
                            o for p in cmd.get_params(ctx) for o in (*p.opts, *p.secondary_opts)
                        }
                        # `--max-…` stands for the family of `--max-` options
                        prefix = flag.endswith("-") and any(k.startswith(flag) for k in known)
                        if flag not in known and not prefix:
                            bad.append(f"{page.name}: `{prog} {' '.join(rest)}`: {flag}")
    return bad


def test_every_flag_the_docs_write_on_a_command_line_exists() -> None:
    assert _unknown_flags() == []


def test_the_flag_check_finds_a_flag_that_does_not_exist() -> None:
    from unmask.cli.main import main

    ((prog, rest),) = _flags_used("$ unmask compare a b --fail-if looser --fial-if x | head")
    assert prog == "unmask" and rest[-1] == "x"
    assert [c.name for c in _commands(rest, main)] == ["compare"]
    ((_, rest),) = _flags_used("unmask propose judge in.jsonl --field result.reason")
    assert [c.name for c in _commands(rest, main)] == ["judge"]
    ((_, rest),) = _flags_used("unmask check|audit --protocol NEW.proto")
    assert [c.name for c in _commands(rest, main)] == ["check", "audit"]


def test_the_flag_check_reports_an_unknown_flag(tmp_path, monkeypatch) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "Run `unmask audit cases/ --html out --htlm x`, or:\n\n```\n"
        "$ unmask compare a.proto b.proto \\\n    --fail-if looser --lable L\n"
        "$ unmaskc p.proto --emit ir --max-atoms 3 --max-… N\n```\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(sys.modules[__name__], "_doc_pages", lambda: [page])
    assert [b.rsplit(": ", 1)[1] for b in _unknown_flags()] == ["--lable", "--htlm"]


def test_the_quick_subset_names_test_modules_that_exist() -> None:
    from tests.conftest import QUICK

    assert QUICK and all(len(list((ROOT / "tests").glob(f"*/{m}.py"))) == 1 for m in QUICK)


# --- the protocols the docs show compile ----------------------------------------------------

_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
_STATEMENT = re.compile(
    r"^(protocol|atom|domain|define|verdict|decision|requirement|ground|constraint|for)\b"
)


def _code_blocks() -> list[tuple[str, int, str, str]]:
    """(page, line, tag, body) of every fenced block in docs/ and the README."""
    out = []
    for page in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for m in _BLOCK.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            out.append((page.relative_to(ROOT).as_posix(), line, m.group(1), m.group(2)))
    return out


def test_every_code_fence_opens_or_closes_a_block_alone() -> None:
    # a closing fence with text after it ("``` All") is no closing fence: the rest of the
    # page renders as code
    bad = [
        f"{page.relative_to(ROOT).as_posix()}:{n}: {line}"
        for page in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if line.startswith("```") and not re.fullmatch(r"```[\w-]*", line.rstrip())
    ]
    assert not bad, bad


def _statements(body: str) -> list[str]:
    return [x for x in body.splitlines() if x.strip() and not x.lstrip().startswith("#")]


def _compile_example(text: str, name: str):  # type: ignore[no-untyped-def]
    from unmask.language import ast
    from unmask.language.compiler import compile_tree
    from unmask.language.parser import parse_source
    from unmask.plumbing.names import invent_members

    tree = parse_source(text, name)
    free = [d.name for d in tree.statements if isinstance(d, ast.DomainDecl) and d.members is None]
    members = {d: list(m) for d, m in invent_members(free, 2, [text]).items()}
    return compile_tree(tree, members)


def test_every_proto_block_in_the_docs_compiles() -> None:
    from unmask.plumbing.diagnostics import UnmaskError

    blocks = [b for b in _code_blocks() if b[2] == "proto"]
    assert len(blocks) >= 4  # the README's; language.md's first, labelled and first-match
    for page, line, _, body in blocks:
        try:
            protocol = _compile_example(body, f"{page}:{line}")
        except UnmaskError as err:
            raise AssertionError(f"{page}:{line}: {err.diagnostics}") from None
        assert protocol.name


def test_the_first_match_example_compiles_with_its_labels_in_order() -> None:
    (body,) = [b[3] for b in _code_blocks() if b[2] == "proto" and "first-match" in b[3]]
    protocol = _compile_example(body, "first-match")
    assert protocol.labels == ("fail", "partial", "full")
    assert protocol.first_match


def test_every_whole_protocol_in_the_docs_is_a_proto_block_and_fragments_parse() -> None:
    from unmask.language.parser import parse_source
    from unmask.plumbing.diagnostics import UnmaskError

    fragments = 0
    for page, line, tag, body in _code_blocks():
        lines = _statements(body)
        if tag or not lines or not _STATEMENT.match(lines[0]):
            continue
        if not all(_STATEMENT.match(x) or x[:1].isspace() or x == "}" for x in lines):
            continue
        assert not lines[0].startswith("protocol "), (
            f"{page}:{line}: a whole protocol: tag its block ```proto so it is compiled"
        )
        fragments += 1
        try:
            parse_source('protocol fragment ""\n' + body, f"{page}:{line}")
        except UnmaskError as err:
            raise AssertionError(f"{page}:{line}: {err.diagnostics}") from None
    assert fragments >= 3


def test_the_proto_block_checks_catch_a_label_named_pass() -> None:
    from unmask.language.parser import parse_source
    from unmask.plumbing.diagnostics import UnmaskError

    bad = "verdict fail | pass first-match\ndecision fail iff a\ndecision pass otherwise\n"
    with pytest.raises(UnmaskError) as err:
        parse_source('protocol fragment ""\n' + bad, "x")
    assert "`pass` is a reserved word" in err.value.diagnostics[0].message


# --- what docs/audit.md says of result lines and summary keys is what the code does ---------


def _audit_page() -> str:
    return (DOCS / "audit.md").read_text(encoding="utf-8")


def test_the_result_line_key_order_in_audit_md_is_the_writers(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from unmask.cli.main import main

    text = _audit_page().split("key order:", 1)[1].split(";", 1)[0]
    documented = re.findall(r"`([a-z_]+)`", text)
    assert documented[:2] == ["schema", "location"] and documented[-1] == "annotations"
    # `disagreements` only when readers disagreed (tests/replay/test_replay_provenance.py)
    written = [k for k in documented if k != "disagreements"]
    proto = (ROOT / "examples" / "factual_claims.proto").read_text(encoding="utf-8")
    case = json.loads((ROOT / "examples" / "case_b.json").read_text(encoding="utf-8"))
    case.update(item="q1", judge="judge-a", protocol={"source": proto})
    (tmp_path / "r.json").write_text(json.dumps(case), encoding="utf-8")
    (tmp_path / "v.proto").write_text(proto, encoding="utf-8")
    out = tmp_path / "out.jsonl"
    args = ["audit", str(tmp_path / "r.json"), "--out", str(out), "--quiet", "--protocol"]
    for extra in ((), ("--jobs", "2")):  # the quick writer, and the workers' lines
        result = CliRunner().invoke(main, [*args, str(tmp_path / "v.proto"), *extra])
        assert result.exit_code == 0, result.output
        assert list(json.loads(out.read_text(encoding="utf-8"))) == written
    from unmask.api import check
    from unmask.checking.formats import ResultLine, encode_line, result_line
    from unmask.replay.load import load_replay
    from unmask.replay.recheck import load_protocol_file

    given = load_protocol_file(str(tmp_path / "v.proto"))
    report = check(load_replay(tmp_path / "r.json", protocol=given), "sliced")
    assert list(json.loads(encode_line(result_line(report, "r.json")))) == written
    assert ["schema", *ResultLine.__struct_fields__] == documented  # the struct's order


def test_the_family_groups_audit_md_gives_are_the_summary_keys() -> None:
    from unmask.batch.summary import family_key

    text = " ".join(_audit_page().split())
    pairs = re.findall(r"`([^`]+\([^`]*\)[^`]*)` counts under `([^`]+)`", text)
    pairs += re.findall(r"and `([^`]+)` both count under `([^`]+)`", text)
    assert len(pairs) >= 3, pairs
    assert any("*,*" in group for _, group in pairs)  # a family over two domains
    for member, group in pairs:
        assert family_key(member) == group, (member, group)
