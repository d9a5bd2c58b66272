"""Parsing `.proto` text into the surface tree (``unmask.language.ast``), with friendly errors.

Contract: ``parse_source(text, filename, limits)`` returns a ``SourceFile`` or raises
``UnmaskError`` whose diagnostics (code ``syntax``, ``limit`` or ``bad-escape``) each carry
a span. After a syntax error the parser resumes at the next line that starts with a
statement keyword, so one run reports several independent mistakes. Nothing here
recurses on the input's nesting: lark's LALR parser and the non-recursive transformer are
iterative, and expressions deeper than ``limits.max_expr_depth`` are refused here, before
any recursive pass (compiler, formatter) sees them; a string literal longer than
``limits.max_string_chars`` is refused before the lexer reads it. The vocabulary (reserved
words, the words that start a statement or an expression, the roles) is read off the
loaded grammar, never copied. The parser's tables ship with the package as JSON
(``unmask.language.parser_tables``), used only when they are the grammar's and lark's; nothing of
the parser is read from the user's cache folder.

Size: the syntax-error examples for ``match_examples`` and the vocabulary read off the
grammar are one job (text to tree with friendly errors) and change together when the
grammar does; the transformer from lark's tree to ``unmask.language.ast`` is
``unmask.language.syntaxtree``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.lexer import PatternStr

from unmask.ir import Span
from unmask.language import ast, parser_tables
from unmask.language.syntaxtree import ToAst, span_of
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen
from unmask.plumbing.jsonreader import did_you_mean
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits
from unmask.plumbing.names import IDENT_RE

MAX_SYNTAX_ERRORS = 20


def _build(strict: bool = False) -> Lark:
    """The parser of the shipped grammar, its tables built now
    (``unmask.language.parser_tables``)."""
    return parser_tables.build(strict)


@lru_cache(maxsize=1)
def lark_parser() -> Lark:
    """The LALR parser, made once per process on first use: from the tables shipped with
    the package (``grammar/unmask.tables.json``), or, when they are not this grammar's and
    this lark's, built from the grammar (some 100 ms of CPU)."""
    grammar = parser_tables.grammar_text()
    return parser_tables.load(grammar) or _build()


# --- the vocabulary, read off the grammar ---------------------------------------------------


@lru_cache(maxsize=1)
def reserved_words() -> frozenset[str]:
    """Every keyword of the language: the grammar's word literals (``"and"``, ``"judge"``…),
    none of which can be a name."""
    return frozenset(
        t.pattern.value
        for t in lark_parser().terminals
        if isinstance(t.pattern, PatternStr) and IDENT_RE.match(t.pattern.value)
    )


def _accepts(prefix: str) -> frozenset[str]:
    """The terminals the grammar accepts after ``prefix``."""
    state = lark_parser().parse_interactive(prefix)
    state.exhaust_lexer()
    return frozenset(state.accepts())


@frozen
class _Vocabulary:
    """Sets of terminal names that syntax errors are phrased with."""

    statements: frozenset[str]  # the keywords that start a statement
    expr_start: frozenset[str]  # what may begin an expression
    operators: frozenset[str]  # the binary operators
    roles: frozenset[str]
    resume: re.Pattern[str]  # a line that starts a statement


@lru_cache(maxsize=1)
def _vocabulary() -> _Vocabulary:
    statements = _accepts("") - {"$END"}
    expr_start = _accepts("decision pass iff")
    # after an operand: an operator, a member's `(`, a new statement or the end
    operators = _accepts("decision pass iff a") - statements - {"$END", "LPAR"}
    words = sorted(_terminal_text()[t] for t in statements)
    resume = re.compile(r"^[ \t]*(?:" + "|".join(words) + r")\b", re.MULTILINE)
    return _Vocabulary(statements, expr_start, operators, _accepts("atom a :"), resume)


# --- syntax errors -------------------------------------------------------------------------

_EXAMPLES: dict[str, list[str]] = {
    "missing-iff": ["decision pass a", "decision pass", "decision pass and a"],
    "missing-label": ["decision iff a", "decision", "decision otherwise"],
    "label-iff": ["decision a", "decision a b", "decision a and b", "decision a ~ b"],
    "constraint-colon": ["constraint c a", "constraint c(x) a", "constraint c"],
    "atom-colon": ['atom a judge "x"', "atom a judge", 'atom a "x"', "atom a(d) judge"],
    "role": ['atom a : "x"', "atom a : x", "atom a : ", "atom a(d) : x"],
    "ground-tilde": ["ground a b", "ground a = b", "ground a", "ground a(x) b"],
    "define-equals": ["define a b", "define a", "define a(d) b", "define a : b"],
    "holds": ["requirement r { a }", 'requirement r "d" { addressed: a }', "requirement r {"],
}

_CUSTOM = {
    "missing-iff": ("expected `iff` after `decision pass`", "write `decision pass iff EXPR`"),
    "missing-label": (
        "expected a label after `decision`",
        "write `decision LABEL iff EXPR` or `decision LABEL otherwise`; a protocol without "
        "`verdict` writes `decision pass iff EXPR`",
    ),
    "label-iff": (
        "expected `iff` or `otherwise` after the decision's label",
        "write `decision LABEL iff EXPR` or `decision LABEL otherwise`",
    ),
    "constraint-colon": (
        "expected `:` after the constraint's name",
        "write `constraint NAME: EXPR`",
    ),
    "atom-colon": (
        "expected `:` between the atom's name and its role",
        'write `atom NAME : ROLE "description"`',
    ),
    "role": (
        "expected a role: `judge`, `context` or `procedure`",
        'write `atom NAME : ROLE "description"`',
    ),
    "ground-tilde": (
        "expected `~` or `~>` between the two sides of `ground`",
        "write `ground JUDGE ~ CONTEXT` (both ways) or `ground JUDGE ~> CONTEXT` (one way)",
    ),
    "define-equals": (
        "expected `=` after the definition's name",
        "write `define NAME = EXPR` or `define NAME(DOMAIN) = EXPR`",
    ),
    "holds": (
        "a requirement block starts with `holds: EXPR`",
        "write `requirement ID { holds: EXPR  addressed: EXPR }`",
    ),
}


# lark compares parser states by their top state and stack depth, and the depth differs
# between the first statement of a file and every later one: try each example both ways
_EXAMPLES = {k: [*v, *("protocol p\n" + x for x in v)] for k, v in _EXAMPLES.items()}


def _parse_for_examples(text: str):
    return lark_parser().parse(text)


@lru_cache(maxsize=1)
def _terminal_text() -> dict[str, str]:
    out = {}
    for t in lark_parser().terminals:
        if isinstance(t.pattern, PatternStr):
            out[t.name] = t.pattern.value
    return out


def describe_expected(name: str) -> str:
    if name == "NAME":
        return "a name"
    if name == "STRING":
        return "a string"
    if name == "INT":
        return "a number"
    if name == "$END":
        return "the end of the file"
    text = _terminal_text().get(name)
    return f"`{text}`" if text is not None else name.lower()


def describe_found(tok: Token) -> str:
    if tok.type == "$END":
        return "the end of the file"
    if tok.type == "NAME":
        return f"the name `{tok}`"
    if tok.type == "STRING":
        return "a string"
    if tok.type == "INT":
        return f"the number `{tok}`"
    return f"`{tok}`"


def _join_or(items: list[str]) -> str:
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " or " + items[-1]


def _expected_phrase(expected: set[str]) -> str:
    v = _vocabulary()
    parts: list[str] = []
    rest = set(expected)
    if rest >= v.expr_start:
        parts.append("an expression")
        rest -= v.expr_start
    if rest >= v.operators:
        parts.append("an operator such as `and`")
        rest -= v.operators
        rest.discard("LPAR")  # only a family member could continue; not worth listing
    if rest >= v.statements:
        parts.append("a new statement")
        rest -= v.statements
        rest.discard("$END")
    if rest >= v.roles:
        parts.append("a role (`judge`, `context` or `procedure`)")
        rest -= v.roles
    order = sorted(rest, key=lambda n: (n == "$END", describe_expected(n)))
    parts.extend(describe_expected(n) for n in order)
    return _join_or(parts) if parts else "something else"


def _prev_token(text: str, pos: int) -> Token | None:
    prev = None
    try:
        for tok in lark_parser().lex(text[:pos]):
            prev = tok
    except UnexpectedInput:
        return None
    return prev


def _end_span(file: str, text: str) -> Span:
    stripped = len(text.rstrip())
    # report at the end of the last line with text, where the user's eye is
    line = text.count("\n", 0, stripped) + 1
    col = stripped - (text.rfind("\n", 0, stripped) + 1) + 1
    return Span(file, line, col, line, col + 1, stripped, stripped)


def _syntax_diagnostic(e: UnexpectedInput, text: str, file: str) -> Diagnostic:
    if isinstance(e, UnexpectedCharacters):
        # lark declares the attribute None on its base class; this subclass sets it to the
        # lexer's position
        pos: int = e.pos_in_stream  # type: ignore[assignment]
        ch = text[pos]
        span = Span(file, e.line, e.column, e.line, e.column + 1, pos, pos + 1)
        if ch == '"':
            return Diagnostic(
                Code.SYNTAX,
                "unterminated string",
                span,
                help="a string ends on the line where it starts; write a line break as `\\n`",
            )
        shown = ch if ch.isprintable() and not ch.isspace() else f"U+{ord(ch):04X}"
        return Diagnostic(Code.SYNTAX, f"unexpected character `{shown}`", span)
    assert isinstance(e, UnexpectedToken)
    tok = e.token
    if tok.type == "$END":
        span = _end_span(file, text)
        pos = len(text)
    else:
        pos = tok.start_pos
        span = Span(file, tok.line, tok.column, tok.end_line, tok.end_column, pos, tok.end_pos)
    expected = set(e.accepts or e.expected)
    found = describe_found(tok)
    expr_start = _vocabulary().expr_start
    if tok.type.lower() in reserved_words() and "NAME" in expected and not expected >= expr_start:
        return Diagnostic(
            Code.SYNTAX,
            f"`{tok}` is a reserved word and cannot be used as a name",
            span,
            help=f"choose another name, such as `{tok}_`",
        )
    prev = _prev_token(text, pos)
    if expected >= expr_start and prev is not None:
        return Diagnostic(
            Code.SYNTAX, f"expected an expression after `{prev}`, found {found}", span
        )
    label = e.match_examples(_parse_for_examples, _EXAMPLES, use_accepts=False)
    if label is not None:
        message, hint = _CUSTOM[label]
        return Diagnostic(
            Code.SYNTAX,
            f"{message}, found {found}",
            span,
            help=_keyword_hint(tok, expected) or hint,
        )
    return Diagnostic(
        Code.SYNTAX,
        f"expected {_expected_phrase(expected)}, found {found}",
        span,
        help=_keyword_hint(tok, expected),
    )


def _keyword_hint(tok: Token, expected: set[str]) -> str | None:
    """A misspelt keyword (`requirment`) lexes as a name where a statement or a role was
    expected: name the keyword it is closest to."""
    if tok.type != "NAME":
        return None
    v = _vocabulary()
    words = _terminal_text()
    for kinds in (v.statements, v.roles):
        if expected >= kinds:
            hint = did_you_mean(str(tok), sorted(words[k] for k in kinds if k in words))
            if hint:
                return hint
    return None


def _resume_point(text: str, e: UnexpectedInput) -> int | None:
    """Where to parse again after an error: the statement keyword that broke an unfinished
    statement, or the next line that starts with a statement keyword."""
    pos = _error_pos(e, text)
    if isinstance(e, UnexpectedToken) and e.token.type in _vocabulary().statements - {"FOR"}:
        return pos
    line_end = text.find("\n", pos)
    if line_end < 0:
        return None
    m = _vocabulary().resume.search(text, line_end + 1)
    return m.start() if m else None


def _blank(text: str, upto: int) -> str:
    head = re.sub(r"[^\n]", " ", text[:upto])
    return head + text[upto:]


def _error_pos(e: UnexpectedInput, text: str) -> int:
    if isinstance(e, UnexpectedToken) and e.token.type == "$END":
        return len(text)
    return e.pos_in_stream if e.pos_in_stream is not None else len(text)


# --- entry points --------------------------------------------------------------------------


def check_source_size(text: str, filename: str, limits: Limits) -> None:
    if len(text) > limits.max_source_chars:
        raise UnmaskError(
            [
                Diagnostic(
                    Code.LIMIT,
                    f"the file has {len(text)} characters, more than the limit of "
                    f"{limits.max_source_chars}",
                    file=filename,
                    help=f"raise it with `{limits.option('max_source_chars')}`",
                )
            ]
        )


def _string_starts(text: str, begin: int, end: int):
    """Each string literal in ``text[begin:end]`` (one line) as (start, length written)."""
    quote = text.find('"', begin, end)
    while quote >= 0:
        hash_ = text.find("#", begin, quote)
        if hash_ >= 0:
            return  # the rest of the line is a comment
        i = quote + 1
        close = text.find('"', i, end)
        while close >= 0:  # skip escapes; each character is read a bounded number of times
            escape = text.find("\\", i, close)
            if escape < 0:
                break
            i = escape + 2
            if i > close:  # the quote was escaped
                close = text.find('"', i, end)
        if close < 0:
            return  # unterminated: a syntax error, reported by the parser
        yield quote, close - quote - 1
        begin = close + 1
        quote = text.find('"', begin, end)


def _check_string_sizes(text: str, filename: str, limits: Limits) -> None:
    """Refuse a string literal longer than ``max_string_chars`` before the lexer sees it.

    A literal lies on one line, so only lines longer than the limit are looked into; they
    are found by a regex anchored at line starts, which reads each character once.
    """
    limit = limits.max_string_chars
    long_line = re.compile(rf"^[^\n]{{{limit + 1}}}", re.MULTILINE)
    diags = []
    for m in long_line.finditer(text):
        line_end = text.find("\n", m.start())
        for start, length in _string_starts(
            text, m.start(), len(text) if line_end < 0 else line_end
        ):
            if length <= limit:
                continue
            line = text.count("\n", 0, start) + 1
            col = start - m.start() + 1
            diags.append(
                Diagnostic(
                    Code.LIMIT,
                    f"this string has {length} characters, more than the limit of {limit}",
                    Span(filename, line, col, line, col + 1, start, start + 1),
                    help=f"raise it with `{limits.option('max_string_chars')}`",
                )
            )
    if diags:
        raise UnmaskError(diags)


def parse_source(
    text: str, filename: str = "<input>", limits: Limits = DEFAULT_LIMITS
) -> ast.SourceFile:
    """Parse one `.proto` text; every syntax error found is reported, up to a cap."""
    check_source_size(text, filename, limits)
    _check_string_sizes(text, filename, limits)
    parser = lark_parser()
    errors: list[Diagnostic] = []
    attempt = text
    tree = None
    last = -1
    while True:
        try:
            tree = parser.parse(attempt)
            break
        except UnexpectedInput as e:
            errors.append(_syntax_diagnostic(e, attempt, filename))
            resume = _resume_point(attempt, e)
            if resume is None or resume <= last or len(errors) >= MAX_SYNTAX_ERRORS:
                break
            last = resume
            attempt = _blank(text, resume)
    if errors:
        raise UnmaskError(_json_hint(errors, text))
    assert tree is not None
    builder = ToAst(filename)
    statements = builder.transform(tree)
    diags = list(builder.diagnostics)
    diags.extend(_depth_diagnostics(statements, limits))
    if diags:
        raise UnmaskError(diags)
    comments = tuple(
        ast.Comment(str(t).rstrip(), span_of(filename, t))
        for t in parser.lex(text, dont_ignore=True)
        if t.type == "COMMENT"
    )
    return ast.SourceFile(statements, comments, filename)


# the help of a file that is JSON (a replay, compiled IR) read as `.proto` text
JSON_HELP = (
    "this is JSON, not `.proto` text: a `.proto` file starts with `protocol NAME`; "
    "check a replay with `unmask check FILE.json`"
)


def _json_hint(errors: list[Diagnostic], text: str) -> list[Diagnostic]:
    """A text whose first character is `{` or `[` is JSON given where `.proto` text was
    expected (`unmaskc replay.json`): its first error says so, in place of its own help."""
    first = len(text) - len(text.lstrip())
    span = errors[0].span
    if text[first : first + 1] not in ("{", "[") or span is None or span.start_pos != first:
        return errors
    return [replace(errors[0], help=JSON_HELP), *errors[1:]]


def _depth_diagnostics(statements, limits: Limits) -> list[Diagnostic]:
    out = []
    for s in statements:
        for e in ast.statement_exprs(s):
            d = ast.depth(e)
            if d > limits.max_expr_depth:
                out.append(
                    Diagnostic(
                        Code.LIMIT,
                        f"this expression is nested {d} levels deep, more than the limit "
                        f"of {limits.max_expr_depth}",
                        e.span or getattr(s, "span", None),
                        help=f"raise it with `{limits.option('max_expr_depth')}`, or split "
                        "the expression into constraints",
                    )
                )
    return out
