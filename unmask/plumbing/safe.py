"""What user text may carry on its way out, one policy for every output.

Contract: a replay, a ``.proto`` file or a file name can hold anything; what Unmask writes
never holds a character that acts instead of showing (``UNSAFE``): a C0 control other than
tab and line feed (ESC starts terminal sequences, OSC retitles a window, BEL rings), DEL, a
C1 control (U+009B is a one-byte CSI), or a bidirectional embedding, override, isolate or
mark (U+202E shows a line reversed, so a reviewer reads what is not there); nor a lone
surrogate, which no UTF-8 output can hold. Each
output decides how such a character is shown (docs/security.md, "What Unmask never echoes"):

- ``printable(text)``: for a terminal and every message (``unmask.plumbing.diagnostics.render``):
  every character that is not printable, those above and any other invisible one, written
  out as a ``\\x1b``/``\\u202e`` escape, as ``unmask.plumbing.jsonload.show`` shows user input;
  ``lines(text)`` does it line by line, for a command's text output;
- ``visible(text)``: for a document a person reads (HTML, Markdown, JUnit XML): only the
  characters above become such escapes; line breaks, tabs, joiners inside emoji and every
  other character stay, so the same replay gives the same page as before;
- ``json_text(text)``: for JSON text (the JSON report, audit results, the summary, SARIF):
  the characters above are written as JSON ``\\u`` escapes, so the file has none raw and
  every value reads back unchanged; ``json_bytes(data)`` the same on UTF-8 JSON bytes
  (every JSON Lines record, ``unmask.plumbing.structs.encode_line``);
- ``visible_values(value)``: a JSON value with ``visible`` applied to every string, for
  SARIF, whose messages a viewer shows as text;
- ``shorten(text, limit)``: user text bounded for a message, its middle elided (``…``) so
  a long path keeps its start and its file name; a path in a message goes through it
  (``unmask.plumbing.files``, the location of every diagnostic), then through ``printable``;
- ``clean(text)``: a lone surrogate (JSON allows ``"\\ud800"``) becomes U+FFFD, one code
  point for one, so offsets stay valid and every output can be encoded as UTF-8;
  ``clean_values(value)`` the same on every string of a JSON value;
- ``finish(fmt, text)``: the policy of a whole document in format ``fmt``, applied last to
  every report, page and JUnit or SARIF file (``unmask.render.render`` and the writers of
  the audit's files call it): ``visible`` for HTML, Markdown and JUnit, ``json_text`` for
  JSON and SARIF, nothing more for text, whose renderer escapes user text with
  ``printable`` before it adds colour; then ``clean``.

A leaf: it imports nothing of Unmask, so every layer, diagnostics included, may use it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# what may never reach an output raw: C0 but tab and line feed, DEL, C1 and the
# bidirectional formatting characters (marks, embeddings, overrides, isolates); lone
# surrogates are ``clean``'s, which every format's output passes through last
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


# what ASCII text may hold: deleting these bytes leaves only the acting ones, in C speed
# (the regex above costs about 10 ns a character, which a result line of every replay of an
# audit would pay)
_ASCII_SHOWN = bytes(range(0x20, 0x7F)) + b"\t\n"


def _nothing_acts(text: str) -> bool:
    """True when ``text`` is ASCII without an acting character: the common case, quickly."""
    return text.isascii() and not text.encode("ascii").translate(None, _ASCII_SHOWN)


def escape_char(ch: str) -> str:
    """One character as a visible escape: ``\\x1b``, ``\\u202e``, ``\\ud800``, ``\\r``."""
    # Python's own escapes, as ``unmask.plumbing.jsonload.show`` writes them: ``\\t``, ``\\x1b``
    return ch.encode("unicode_escape", "backslashreplace").decode("ascii")


def clean(text: str) -> str:
    """User text that can always be encoded: lone surrogates become U+FFFD."""
    if text.isascii():
        return text
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def shorten(text: str, limit: int = 300) -> str:
    """``text`` at most ``limit`` characters long: a longer one keeps its first and last
    characters around ``…`` (a path's start and its file name both stay readable)."""
    if len(text) <= limit:
        return text
    tail = (limit - 1) // 3
    return text[: limit - 1 - tail] + "…" + text[len(text) - tail :]


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on or hide escaped."""
    if text.isprintable():
        return text  # printable excludes surrogates and controls: nothing to do
    return "".join(c if c.isprintable() else escape_char(c) for c in text)


def lines(text: str) -> str:
    """Lines for a terminal: each ``printable``, the line breaks kept."""
    return "\n".join(printable(line) for line in text.split("\n"))


def visible(text: str) -> str:
    """``text`` with every acting character (``UNSAFE``) shown as an escape, nothing else."""
    if _nothing_acts(text):
        return text
    return UNSAFE.sub(lambda m: escape_char(m.group()), text)


def json_text(text: str) -> str:
    """JSON text with every acting character as a ``\\u`` escape (the values are the same).

    Only valid on JSON text: there such a character can only stand inside a string, where
    its escape means the same character.
    """
    if _nothing_acts(text):
        return text
    return UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def json_bytes(data: bytes) -> bytes:
    """UTF-8 JSON bytes under ``json_text``: the common case (ASCII, nothing acting)
    untouched, without decoding it."""
    if data.isascii() and not data.translate(None, _ASCII_SHOWN):
        return data
    return json_text(data.decode("utf-8")).encode("utf-8")


def visible_values(value: Any) -> Any:
    """A JSON value with ``visible`` applied to every string, keys included."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {visible(k): visible_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [visible_values(v) for v in value]
    return value


def clean_values(value: Any) -> Any:
    """A JSON value with ``clean`` applied to every string, keys included."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(k): clean_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_values(v) for v in value]
    return value


def _as_is(text: str) -> str:
    return text


# a format's whole text on its way out; the text report escapes user text itself, since
# its colour codes are escape sequences
POLICY: dict[str, Callable[[str], str]] = {
    "text": _as_is,
    "json": json_text,
    "sarif": json_text,
    "html": visible,
    "markdown": visible,
    "junit": visible,
}


def finish(fmt: str, text: str) -> str:
    """The document ``text`` in format ``fmt`` as it may be written."""
    return clean(POLICY[fmt](text))
