"""What a judge states about itself: the structured-output shape of a protocol.

Contract: ``judge_view`` reads a `.proto` text (compiled in full, with no members for a free
domain that ``domains`` does not name, so a protocol that compiles for some members is
accepted without any) and returns the verdict labels and every ``judge`` and ``procedure``
atom, a family once with its domain; ``view_of_tree`` reads the same off a text its caller
has parsed and compiled so (``unmaskc``). ``emit_judge_schema`` writes the JSON Schema (draft
2020-12) of a judge's output under it: ``rationale`` (text), ``verdict`` (a label) and
``atoms``, one statement ``{"value": TRUE|FALSE|UNKNOWN, "quotes": [...]}`` per atom, a
family as an object keyed by member (over several domains, nested: keyed by the first
domain's member, then the second's, …), so one schema serves any members; every atom may be
left out (it is then UNKNOWN), and a family's object may hold ``*``, a quoted FALSE for every
member it does not state, at any depth below (the judge says its list is whole: FALSE by
its words, never by absence). ``emit_judge_prompt`` writes the instructions for filling it.
``read_output`` checks one output against the same shape by hand, first problem first, with
the JSON path, so the importer needs no schema library. Both outputs are byte-stable.
The same statement, asked of another reader about any open atom of a replay (`unmask
annotate`): ``reading_schema`` (each quote names its source, among those the atom's role
allows), ``emit_reading_prompt`` (the sources, then the statements) under the fixed
``READING_INSTRUCTIONS``, and ``read_reading``, the answer checked by hand as an output is.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from unmask.plumbing.frozen import frozen
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.plumbing.names import IDENT_PATTERN, IDENT_RE

if TYPE_CHECKING:
    from unmask.language import ast

VALUES = ("TRUE", "FALSE", "UNKNOWN")
# the procedure atom `unmask import structured` annotates itself: never the judge's to state
VERBATIM_ATOM = "quotes_verbatim"
VERBATIM_REQUIREMENT = "verbatim_quotes"
VERBATIM_RULE = "structured/1"  # the importer's `by.name` on its `quotes_verbatim`
# the lines the importer appends to a protocol that does not declare the atom (only the
# requirement to one that declares it and reads it nowhere); a re-check (`--protocol`) of
# its replays appends them again, so the check travels with its annotation
_VERBATIM_NOTE = (
    "# added by `unmask import structured`: every quote the judge gave is in its rationale"
)
_VERBATIM_DECL = (
    f"atom {VERBATIM_ATOM} : procedure"
    ' "Every quote the judge gave occurs verbatim in its rationale"'
)
_VERBATIM_REQ = f'requirement {VERBATIM_REQUIREMENT} "Quote the rationale exactly": {VERBATIM_ATOM}'
VERBATIM_LINES = f"\n{_VERBATIM_NOTE}\n{_VERBATIM_DECL}\n{_VERBATIM_REQ}\n"
VERBATIM_REQUIREMENT_LINES = f"\n{_VERBATIM_NOTE}\n{_VERBATIM_REQ}\n"


def verbatim_lines(view: JudgeView) -> str:
    """What the importer appends to the protocol of ``view``: every line when it does not
    declare `quotes_verbatim`; the requirement alone when it declares the atom and nothing
    reads it (a check the importer's finding would otherwise never reach); else nothing."""
    if view.verbatim is None:
        return VERBATIM_LINES
    return "" if view.verbatim_read else VERBATIM_REQUIREMENT_LINES


def with_verbatim(text: str, lines: str = VERBATIM_LINES) -> str:
    """``text`` with ``lines`` (``verbatim_lines``) appended, as the importer embeds it."""
    if not lines:
        return text
    return text + ("" if text.endswith("\n") else "\n") + lines


DRAFT = "https://json-schema.org/draft/2020-12/schema"


@frozen
class Stated:
    """One atom, or one family, that the judge states."""

    name: str
    role: str  # judge | procedure
    description: str
    domains: tuple[str, ...] = ()  # a family's domains, one per position
    # per position, the domain's members when known (fixed or given), else None
    members: tuple[tuple[str, ...] | None, ...] = ()


@frozen
class JudgeView:
    protocol: str
    labels: tuple[str, ...]
    atoms: tuple[Stated, ...]
    free_domains: tuple[str, ...]
    verbatim: Stated | None = None  # the protocol's own `quotes_verbatim`, if it declares one
    verbatim_read: bool = False  # some statement but its declaration names it

    def get(self, name: str) -> Stated | None:
        return next((a for a in self.atoms if a.name == name), None)


def judge_view(
    text: str,
    filename: str = "<input>",
    domains: Mapping[str, Sequence[str]] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> JudgeView:
    """The view of a protocol text; ``UnmaskError`` with every compile error."""
    from unmask.language.compiler import compile_tree
    from unmask.language.parser import parse_source

    given = {k: list(v) for k, v in (domains or {}).items()}
    tree = parse_source(text, filename, limits)
    free = _free(tree)
    # every check that does not need members runs on the text as written (language.md)
    compile_tree(tree, {**{d: [] for d in free}, **given}, limits)
    return view_of_tree(tree, domains)


def _free(tree: ast.SourceFile) -> tuple[str, ...]:
    from unmask.language import ast

    return tuple(
        st.name for st in tree.statements if isinstance(st, ast.DomainDecl) and st.members is None
    )


def view_of_tree(
    tree: ast.SourceFile, domains: Mapping[str, Sequence[str]] | None = None
) -> JudgeView:
    """``judge_view`` of a text already parsed and compiled as ``judge_view`` compiles it
    (``unmaskc`` has, to check it): read off the tree, which is not compiled again."""
    from unmask.ir import BINARY_LABELS
    from unmask.language import ast

    members: dict[str, tuple[str, ...] | None] = {
        st.name: st.members for st in tree.statements if isinstance(st, ast.DomainDecl)
    }
    members.update({k: tuple(v) for k, v in (domains or {}).items()})
    labels: tuple[str, ...] = BINARY_LABELS
    atoms = []
    verbatim = None
    for st in tree.statements:
        if isinstance(st, ast.AtomDecl) and st.name == VERBATIM_ATOM:
            verbatim = Stated(st.name, st.role, st.description or "", st.params)
        if isinstance(st, ast.VerdictDecl):
            labels = tuple(st.labels)
        elif (
            isinstance(st, ast.AtomDecl)
            and st.role in ("judge", "procedure")
            and st.name != VERBATIM_ATOM
        ):
            atoms.append(
                Stated(
                    st.name,
                    st.role,
                    st.description or "",
                    st.params,
                    tuple(members.get(p) for p in st.params),
                )
            )
    name = next(st.name for st in tree.statements if isinstance(st, ast.ProtocolDecl))
    read = verbatim is not None and _names(tree, VERBATIM_ATOM)
    return JudgeView(name, labels, tuple(atoms), _free(tree), verbatim, read)


def _names(tree: ast.SourceFile, atom: str) -> bool:
    """Whether a statement other than a declaration names ``atom`` (a definition, a
    constraint, a decision, a requirement or a grounding, inside a ``for`` too)."""
    from unmask.language import ast

    exprs: list[Any] = []
    for st in tree.statements:
        body = st.body if isinstance(st, ast.ForDecl) else st
        if isinstance(body, (ast.ConstraintDecl, ast.DefineDecl, ast.DecisionDecl)):
            exprs.append(body.expr)  # None for `decision L otherwise`: passed over below
        elif isinstance(body, ast.RequirementDecl):
            exprs += [body.holds, body.addressed]
        elif isinstance(body, ast.GroundDecl):
            exprs += [body.judge, body.context]
    while exprs:
        e = exprs.pop()
        if isinstance(e, ast.Ref) and e.name == atom:
            return True
        if e is not None:
            exprs.extend(ast.children(e))
    return False


# --- the schema ----------------------------------------------------------------------------

_STATEMENT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "value": {"enum": list(VALUES)},
        "quotes": {"type": "array", "items": {"type": "string", "minLength": 1}},
    },
    "required": ["value", "quotes"],
    "additionalProperties": False,
    # TRUE and FALSE are shown by a quote; UNKNOWN ("not addressed") quotes nothing
    "if": {"properties": {"value": {"const": "UNKNOWN"}}},
    "then": {"properties": {"quotes": {"maxItems": 0}}},
    "else": {"properties": {"quotes": {"minItems": 1}}},
}


# a family's object may say that the members it lists are all there are: `"*"` states, with
# the judge's own words quoted, that every member left out is FALSE (never read from absence)
REST = "*"
_REST = {
    "type": "object",
    "description": "every member not listed beside this key is FALSE: quote where the "
    "rationale says the members listed are all there are",
    "properties": {
        "value": {"const": "FALSE"},
        "quotes": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
    },
    "required": ["value", "quotes"],
    "additionalProperties": False,
}


def _atom_schema(a: Stated) -> dict[str, Any]:
    desc = f"({a.role}) {a.description}".rstrip()
    if not a.domains:
        return {"$ref": "#/$defs/statement", "description": desc}
    inner: dict[str, Any] = {"$ref": "#/$defs/statement"}
    # built from the last position outwards: the outermost object is keyed by the first
    for i in reversed(range(len(a.domains))):
        known = a.members[i] if i < len(a.members) else None
        keys: dict[str, Any] = (
            {"enum": [*known, REST]}
            if known is not None
            else {"pattern": f"^({IDENT_PATTERN}|\\*)$"}
        )
        inner = {
            "type": "object",
            "propertyNames": keys,
            "properties": {REST: {"$ref": "#/$defs/rest"}},
            "additionalProperties": inner,
        }
    if len(a.domains) == 1:
        head = f"one statement per member of `{a.domains[0]}`, keyed by the member"
    else:
        over = ", then ".join(f"`{d}`" for d in a.domains)
        head = f"one statement per combination of members, keyed by the member of {over}"
    return {**{"type": "object", "description": f"{head}: {desc}"}, **inner}


def judge_schema(view: JudgeView) -> dict[str, Any]:
    return {
        "$schema": DRAFT,
        "title": f"judge output for protocol {view.protocol}",
        "type": "object",
        "properties": {
            "rationale": {
                "type": "string",
                "minLength": 1,
                "description": "the judge's reasoning; every quote is copied from it exactly",
            },
            "verdict": {"enum": list(view.labels)},
            "atoms": {
                "type": "object",
                "description": "what the rationale states; an atom left out is UNKNOWN",
                "properties": {a.name: _atom_schema(a) for a in view.atoms},
                "additionalProperties": False,
            },
        },
        "required": ["rationale", "verdict", "atoms"],
        "additionalProperties": False,
        "$defs": {"statement": _STATEMENT, "rest": _REST},
    }


def emit_judge_schema(view: JudgeView) -> str:
    # ASCII only: every character that could act on a terminal is a \\u escape
    return json.dumps(judge_schema(view), indent=2, ensure_ascii=True) + "\n"


def emit_judge_prompt(view: JudgeView) -> str:
    from unmask.plumbing.safe import UNSAFE

    def one_line(text: str) -> str:
        text = " ".join(text.split())
        return UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)

    labels = ", ".join(f'"{x}"' for x in view.labels)
    out = [
        f"Answer with one JSON object (protocol {one_line(view.protocol)}) with three keys:",
        "",
        '- "rationale": your reasoning, as plain text, written before anything else.',
        f'- "verdict": exactly one of {labels}.',
        '- "atoms": for each statement listed below, an object {"value": ..., "quotes": [...]}:',
        '  - "value" is "TRUE" or "FALSE" when your rationale says whether the statement',
        '    holds, and "quotes" then lists the sentence or sentences of your rationale that',
        "    say so, each copied from the rationale exactly: the same characters, case and",
        "    punctuation, no ellipsis, no paraphrase. A quote that is not in the rationale",
        "    word for word is reported as a false quote.",
        '  - "value" is "UNKNOWN", with "quotes": [], when your rationale does not address the',
        "    statement; you may also leave the statement out. Never answer FALSE for something",
        "    you did not address.",
    ]
    if any(a.domains for a in view.atoms):
        out += [
            "  - A statement written NAME[DOMAIN] is an object keyed by the members of DOMAIN (the",
            '    names you are given for them), one {"value", "quotes"} per member;',
            "    {DOMAIN} in its description stands for the member.",
        ]
    if any(a.domains for a in view.atoms):
        out += [
            '  - Such an object may also hold "*": {"value": "FALSE", "quotes": [...]} when your',
            "    rationale says that the members you listed are all there are (for example",
            '    "these are the only passages I cite for this claim"): every member you did not',
            '    list is then FALSE, and "quotes" copies where you said so. Leave "*" out when',
            "    you did not say so.",
        ]
    if any(len(a.domains) > 1 for a in view.atoms):
        out += [
            "  - A statement written NAME[D1][D2] is an object keyed by the members of D1, each",
            "    holding an object keyed by the members of D2; {1}, {2} in its description",
            "    stand for the members by position.",
        ]
    for role, head in (
        ("judge", "Statements about the material you judged:"),
        ("procedure", "Statements about how you judged:"),
    ):
        atoms = [a for a in view.atoms if a.role == role]
        if not atoms:
            continue
        out += ["", head]
        for a in atoms:
            name = a.name + "".join(f"[{d}]" for d in a.domains)
            desc = one_line(a.description) or "(no description)"
            out.append(f"- {name}: {desc}")
    return "\n".join(out) + "\n"


# --- reading an output by hand ---------------------------------------------------------------


class ShapeError(Exception):
    """An output that does not follow the schema: where (a JSON path), why, and a hint."""

    def __init__(self, path: str, reason: str, help: str | None = None):
        super().__init__(path, reason)
        self.path, self.reason, self.help = path, reason, help


_LIST_MAX = 12  # names listed in a hint; past that, how many more


@frozen
class Statement:
    atom: str  # the ground name: `said(cto)` for a family member
    value: str
    quotes: tuple[str, ...]
    path: str  # where in the output


@frozen
class Output:
    rationale: str
    verdict: str
    statements: tuple[Statement, ...]


def _show(v: Any) -> str:
    from unmask.plumbing.jsonload import show

    return show(v)


def key_path(at: str, key: str) -> str:
    """``at.key``, or ``at["…"]`` (JSON-escaped, so one line) for a key that is not a name."""
    return f"{at}.{key}" if IDENT_RE.match(key) else f"{at}[{json.dumps(key)}]"


def _statement(obj: Any, atom: str, path: str) -> Statement:
    if not isinstance(obj, dict):
        raise ShapeError(path, f'expected `{{"value": …, "quotes": […]}}`, found `{_show(obj)}`')
    for key in obj:
        if key not in ("value", "quotes"):
            raise ShapeError(
                key_path(path, key),
                f"unknown key `{_show(key)}`",
                _names_hint(key, ["value", "quotes"], "the keys"),
            )
    for key in ("value", "quotes"):
        if key not in obj:
            raise ShapeError(path, f"missing `{key}`")
    value, quotes = obj["value"], obj["quotes"]
    if value not in VALUES:
        raise ShapeError(
            f"{path}.value", f"expected `TRUE`, `FALSE` or `UNKNOWN`, found `{_show(value)}`"
        )
    if not isinstance(quotes, list):
        raise ShapeError(f"{path}.quotes", f"expected an array of quotes, found `{_show(quotes)}`")
    for j, q in enumerate(quotes):
        if not isinstance(q, str) or not q:
            raise ShapeError(f"{path}.quotes[{j}]", f"expected a quote, found `{_show(q)}`")
    if value == "UNKNOWN" and quotes:
        raise ShapeError(f"{path}.quotes", "an `UNKNOWN` statement quotes nothing")
    if value != "UNKNOWN" and not quotes:
        raise ShapeError(f"{path}.quotes", f"a `{value}` statement needs a quote")
    return Statement(atom, value, tuple(quotes), path)


def read_output(
    obj: Any, view: JudgeView, members: Mapping[str, Sequence[str]], at: str = "output"
) -> Output:
    """The statements of one output, or ``ShapeError`` at the first problem. A family's
    keys must be among ``members`` (the record's, or the domain's own)."""
    if not isinstance(obj, dict):
        raise ShapeError(at, f"expected the judge's output object, found `{_show(obj)}`")
    for key in obj:
        if key not in ("rationale", "verdict", "atoms"):
            raise ShapeError(
                key_path(at, key),
                f"unknown key `{_show(key)}`",
                _names_hint(key, ["rationale", "verdict", "atoms"], "the keys"),
            )
    for key in ("rationale", "verdict", "atoms"):
        if key not in obj:
            raise ShapeError(at, f"missing `{key}`")
    rationale, verdict, atoms = obj["rationale"], obj["verdict"], obj["atoms"]
    if not isinstance(rationale, str) or not rationale:
        raise ShapeError(
            f"{at}.rationale", f"expected the rationale text, found `{_show(rationale)}`"
        )
    if verdict not in view.labels:
        labels = ", ".join(f"`{x}`" for x in view.labels)
        raise ShapeError(f"{at}.verdict", f"expected one of {labels}, found `{_show(verdict)}`")
    if not isinstance(atoms, dict):
        raise ShapeError(f"{at}.atoms", f"expected an object of statements, found `{_show(atoms)}`")
    out: list[Statement] = []
    for name, stmt in atoms.items():
        path = key_path(f"{at}.atoms", name)
        a = view.get(name)
        if a is None:
            raise ShapeError(
                path,
                f"`{_show(name)}` is not a judge or procedure atom",
                _names_hint(name, [x.name for x in view.atoms], "the atoms a judge states"),
            )
        _family(stmt, a, members, (), path, out)
    return Output(rationale, verdict, tuple(out))


def _family(
    obj: Any,
    a: Stated,
    members,
    given: tuple[str, ...],
    path: str,
    out: list[Statement],
    rest: Statement | None = None,
) -> None:
    """The statements of a family's object, one nesting level per domain. ``rest`` is the
    nearest enclosing ``*``: whatever this object does not state, at any depth below, is
    FALSE by its quotes (a ``*`` here, nearer, takes its place)."""
    if len(given) == len(a.domains):
        name = f"{a.name}({', '.join(given)})" if given else a.name
        out.append(_statement(obj, name, path))
        return
    if not isinstance(obj, dict):
        raise ShapeError(path, f"expected an object keyed by member, found `{_show(obj)}`")
    domain = a.domains[len(given)]
    known = members.get(domain, ())
    if REST in obj:
        rest = _rest(obj[REST], a, key_path(path, REST))
    for m, s in obj.items():
        if m == REST:
            continue
        if not IDENT_RE.match(m) or m not in known:
            raise ShapeError(
                key_path(path, m),
                f"`{_show(m)}` is not a member of domain `{domain}`",
                _names_hint(m, known, f"the members of `{domain}`"),
            )
        _family(s, a, members, (*given, m), key_path(path, m), out, rest)
    if rest is not None:
        for ground in _left_out(a, members, given, [m for m in obj if m != REST]):
            out.append(Statement(ground, "FALSE", rest.quotes, rest.path))


def _rest(obj: Any, a: Stated, path: str) -> Statement:
    rest = _statement(obj, a.name, path)
    if rest.value != "FALSE":
        raise ShapeError(
            f"{path}.value",
            f"`{REST}` states that the members left out are FALSE: its value is `FALSE`",
            'write `"value": "FALSE"`, or leave `*` out',
        )
    return rest


def _left_out(a: Stated, members, given: tuple[str, ...], listed: list[str]) -> Iterator[str]:
    """The ground atoms of ``a`` under ``given`` whose next member is not ``listed``."""
    import itertools

    domain = a.domains[len(given)]
    rest = [m for m in members.get(domain, ()) if m not in listed]
    later = [members.get(d, ()) for d in a.domains[len(given) + 1 :]]
    for m in rest:
        for tail in itertools.product(*later):
            yield f"{a.name}({', '.join((*given, m, *tail))})"


def _names_hint(name: Any, names: Sequence[str], what: str) -> str:
    from unmask.plumbing.jsonreader import did_you_mean

    listed = ", ".join(f"`{x}`" for x in names[:_LIST_MAX])
    more = f" and {len(names) - _LIST_MAX} more" if len(names) > _LIST_MAX else ""
    every = f"{what} are {listed}{more}" if names else f"there are no {what}"
    guess = did_you_mean(name, names)
    return f"{guess} {every}" if guess else every


# --- a reader's answer about a replay's open atoms (`unmask annotate`) -----------------------
#
# The same statement as a judge's (a value, and quotes for TRUE and FALSE), asked of another
# reader about any atom of a replay: so each quote also names the source it is copied from,
# one of those the atom's role allows (docs/replay-format.md), and the reader is told the
# sources' texts rather than writing a rationale of its own.


@frozen
class Question:
    """One open atom put to a reader: its ground name, role, description, and the sources
    of the replay its quotes may come from."""

    atom: str
    role: str  # judge | context | procedure
    description: str
    sources: tuple[str, ...]


READING_INSTRUCTIONS = (
    "You read the texts below (the sources) and say, for each statement listed, whether the "
    "sources show it TRUE or FALSE. Answer with one JSON object and nothing else, following "
    'the JSON Schema given: {"atoms": {STATEMENT: {"value": ..., "quotes": [...]}}}.\n'
    '- "value" is "TRUE" or "FALSE" only when a passage of a source shows it; "quotes" then '
    'lists that passage as {"source": NAME, "text": ...}, the text copied from the source '
    "named exactly: the same characters, case and punctuation, no ellipsis, no paraphrase. "
    "A statement may only quote the sources listed with it. A quote that is not in its "
    "source word for word makes the statement unread.\n"
    '- "value" is "UNKNOWN", with "quotes": [], when no passage settles the statement; you '
    "may also leave the statement out. Never answer FALSE because the sources do not mention "
    "something: that is UNKNOWN.\n"
)


def _reading_statement(q: Question) -> dict[str, Any]:
    quote = {
        "type": "object",
        "properties": {
            "source": {"enum": list(q.sources)},
            "text": {"type": "string", "minLength": 1},
        },
        "required": ["source", "text"],
        "additionalProperties": False,
    }
    props = {**_STATEMENT["properties"], "quotes": {"type": "array", "items": quote}}
    desc = f"({q.role}) {q.description}".rstrip()
    return {**_STATEMENT, "properties": props, "description": desc}


def reading_schema(questions: Sequence[Question]) -> dict[str, Any]:
    """The JSON Schema of a reader's answer about ``questions``: a judge's statement per atom
    (``_STATEMENT``), each quote naming its source among those the atom may quote."""
    return {
        "$schema": DRAFT,
        "title": "readings of a replay's open atoms",
        "type": "object",
        "properties": {
            "atoms": {
                "type": "object",
                "description": "one statement per atom; an atom left out is UNKNOWN",
                "properties": {q.atom: _reading_statement(q) for q in questions},
                "additionalProperties": False,
            }
        },
        "required": ["atoms"],
        "additionalProperties": False,
    }


def reading_shape() -> str:
    """What every reading question shares, whatever its atoms and sources: the
    instructions and the statement's shape. A reader's version is a digest of it."""
    return READING_INSTRUCTIONS + json.dumps(
        _reading_statement(Question("atom", "role", "", ("source",))), sort_keys=True
    )


def emit_reading_prompt(questions: Sequence[Question], sources: Mapping[str, str]) -> str:
    """The question for one replay: its sources, each between tags, then the statements,
    each with the sources it may quote. Source texts are sent as they are (a reader must
    quote them exactly); statements are one line each, as in ``emit_judge_prompt``."""
    from unmask.plumbing.safe import UNSAFE

    def one_line(text: str) -> str:
        return UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", " ".join(text.split()))

    used = [s for s in dict.fromkeys(s for q in questions for s in q.sources)]
    out = ["Sources:"]
    for name in used:
        out += [f"<{name}>", sources[name], f"</{name}>"]
    out += ["", "Statements:"]
    for q in questions:
        desc = one_line(q.description) or "(no description)"
        quote = ", ".join(q.sources)
        out.append(f"- {q.atom} ({q.role}; quote from: {quote}): {desc}")
    return "\n".join(out) + "\n"


@frozen
class Read:
    """A reader's statement about one atom, as it answered (quotes not yet located)."""

    atom: str
    value: str
    quotes: tuple[tuple[str, str], ...]  # (source, text)


def read_reading(obj: Any, questions: Sequence[Question], at: str = "answer") -> tuple[Read, ...]:
    """The statements of one answer, or ``ShapeError`` at the first place it breaks the
    schema of ``reading_schema(questions)``; an atom it leaves out is not in the result."""
    if not isinstance(obj, dict):
        raise ShapeError(at, f"expected an object with `atoms`, found `{_show(obj)}`")
    for key in obj:
        if key != "atoms":
            raise ShapeError(key_path(at, key), f"unknown key `{_show(key)}`")
    if "atoms" not in obj:
        raise ShapeError(at, "missing `atoms`")
    atoms = obj["atoms"]
    if not isinstance(atoms, dict):
        raise ShapeError(f"{at}.atoms", f"expected an object of statements, found `{_show(atoms)}`")
    asked = {q.atom: q for q in questions}
    out: list[Read] = []
    for name, stmt in atoms.items():
        path = key_path(f"{at}.atoms", name)
        q = asked.get(name)
        if q is None:
            raise ShapeError(path, f"`{_show(name)}` is not a statement asked about")
        if isinstance(stmt, dict) and isinstance(stmt.get("quotes"), list):
            quotes, plain = [], []
            for j, x in enumerate(stmt["quotes"]):
                qp = f"{path}.quotes[{j}]"
                if not isinstance(x, dict) or set(x) != {"source", "text"}:
                    raise ShapeError(
                        qp, f'expected `{{"source": …, "text": …}}`, found `{_show(x)}`'
                    )
                if x["source"] not in q.sources:
                    allowed = ", ".join(f"`{s}`" for s in q.sources)
                    raise ShapeError(
                        f"{qp}.source", f"expected one of {allowed}, found `{_show(x['source'])}`"
                    )
                quotes.append((x["source"], x["text"]))
                plain.append(x["text"])
            # the value and the quotes' count are checked as a judge's statement is
            s = _statement({**stmt, "quotes": plain}, name, path)
            out.append(Read(name, s.value, tuple(quotes)))
        else:
            s = _statement(stmt, name, path)  # words the problem as for a judge
            out.append(Read(name, s.value, ()))
    return tuple(out)
