"""The report as Markdown, for pull-request comments and notebooks.

Contract: ``render(report, replay=None) -> str`` (``unmask check --format markdown``) shows the
content of the HTML report: the overall result and the four dimensions as a table, what went
wrong with its quotes as blockquotes, witnesses with completed values marked *possible*,
every check, the sources with evidence spans in bold followed by a tag naming the atom and
its value, and the annotations. The template escapes by default, like HTML autoescape: every
value printed from the report or the replay goes through ``escape`` (Markdown punctuation
backslash-escaped, ``<``, ``>`` and ``&`` as entities, so user text never becomes markup or
raw HTML) unless a filter here has already made it safe. Deterministic.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import jinja2
from markupsafe import Markup

from unmask.checking.report import Report
from unmask.plumbing.safe import finish
from unmask.render import html
from unmask.render import view as ev

_PUNCT = re.compile(r"([\\`*_\[\]|~])")
# at the start of a line these would open a heading, list, rule or setext heading
_LINE_START = re.compile(r"^(\s*)([#+=-]|\d+(?=[.)]))", re.MULTILINE)
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def escape(value: Any) -> str:
    """Text that Markdown shows literally (GitHub-flavoured Markdown, CommonMark)."""
    if isinstance(value, Markup):
        return str(value)
    if value is None:
        return ""
    text = ev.clean(str(value))
    text = "".join(_ENTITIES.get(c, c) for c in text)
    text = _PUNCT.sub(r"\\\1", text)
    text = _LINE_START.sub(_escape_line_start, text)
    # control characters other than tab and newline would be invisible or break the table
    return "".join(c if c in "\t\n" or ord(c) >= 0x20 else f"\\x{ord(c):02x}" for c in text)


def _escape_line_start(m: re.Match[str]) -> str:
    lead, mark = m.group(1), m.group(2)
    if mark.isdigit():
        return lead + mark + "\\"  # `1.` -> `1\.` once the `.` follows
    return lead + "\\" + mark


def _inline(value: Any) -> Markup:
    """One line: whitespace runs (newlines too) become one space."""
    return Markup(" ".join(escape(value).split()))


def _cell(value: Any) -> Markup:
    """Inside a table cell a line break would end the row."""
    return Markup("<br>".join(" ".join(line.split()) for line in escape(value).split("\n")))


def _quote(value: Any) -> Markup:
    lines = escape(value).split("\n")
    return Markup("\n".join(f"> {line}" if line.strip() else ">" for line in lines))


def _code(value: Any) -> Markup:
    """An inline code span; its fence is longer than any backtick run inside."""
    text = " ".join(ev.clean(str(value)).split())
    longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return Markup(f"{fence}{pad}{text}{pad}{fence}")


def _finalize(value: Any) -> Any:
    return value if isinstance(value, Markup) else escape(value)


def _source_line(segments: Any) -> Markup:
    """A source text with evidence segments in bold and a tag after each span."""
    out = []
    for seg in segments:
        text = escape(seg.text)
        if seg.marks:
            # emphasis must not start or end with a space; keep the spaces outside it
            core = text.strip()
            if core:
                lead = text[: len(text) - len(text.lstrip())]
                trail = text[len(text.rstrip()) :]
                text = f"{lead}**{core}**{trail}"
        out.append(text)
        for mk in seg.ends:
            icon = {"TRUE": "✓", "FALSE": "✗"}.get(mk.value, "?")
            out.append(f" \\[{_code(mk.atom)} {icon} {mk.value}\\]")
    return _quote(Markup("".join(out)))


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(html.TEMPLATES)),
        autoescape=False,  # the HTML escape is wrong for Markdown; _finalize escapes instead
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["label"] = lambda r: Markup(ev.label(r))
    env.filters["inline"] = _inline
    env.filters["cell"] = _cell
    env.filters["quote"] = _quote
    env.filters["code"] = _code
    env.filters["ticks"] = _ticks
    env.filters["whole"] = ev.whole_reading
    return env


def _ticks(text: str) -> Markup:
    """A message with `backticked` names: escape the prose, keep the names as code."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:
        return _inline(text)
    prose = [re.sub(r"\s+", " ", escape(p)) for p in parts[::2]]
    names = [_code(p) for p in parts[1::2]]
    out = [prose[0]]
    for name, rest in zip(names, prose[1:], strict=True):
        out += [name, rest]
    return Markup("".join(out))


def render(report: Report, replay: Any = None, *, trust: Any = None) -> str:
    ctx = html.context(report, replay, trust)
    for s in ctx["sources"]:
        s["markdown"] = _source_line(s["segments"])
    text = environment().get_template("report.md.j2").render(**ctx)
    # no run of blank lines longer than one, and exactly one newline at the end
    return finish("markdown", re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n")
