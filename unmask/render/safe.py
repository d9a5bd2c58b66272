"""What user text may carry on its way out, one policy for every format.

Contract:
- ``clean(text)``: a lone surrogate (JSON allows ``"\\ud800"``) becomes U+FFFD, one code
  point for one, so offsets stay valid and every output can be encoded as UTF-8; every
  format's output passes through it last (``unmask.render.render`` does it for all);
- ``printable(text)``: for a terminal, control and other invisible characters (escape
  sequences, bidirectional overrides, lone surrogates) written out as ``\\x1b``-style
  escapes, exactly as diagnostics show user input (``unmask.jsonload.show``), so a replay
  cannot clear the screen, retitle the window or hide a line of the text report.
"""

from __future__ import annotations

from unmask.jsonload import show


def clean(text: str) -> str:
    """User text that can always be encoded: lone surrogates become U+FFFD."""
    if text.isascii():
        return text
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on or hide escaped."""
    if text.isprintable():
        return text  # printable excludes surrogates and controls: nothing to do
    return show(text, limit=len(text))
