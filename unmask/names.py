"""The one identifier pattern of Unmask: what counts as a name.

Contract: atoms, domains, members, constraint names, requirement ids and variables are
``IDENT_PATTERN`` (ASCII letters, digits and ``_``, not starting with a digit). The
grammar's ``NAME`` terminal is this pattern (a test proves it), and every other place that
checks a name uses ``IDENT_RE``. Reserved words are a property of the language, not of
names: ``unmask.parser.reserved_words()`` derives them from the grammar.
"""

from __future__ import annotations

import re

IDENT_PATTERN = r"[A-Za-z_][A-Za-z0-9_]*"
IDENT_RE = re.compile(IDENT_PATTERN + r"\Z")


def member_help(member: str) -> str:
    """The fix-it for a member that is not a name: a number gets a letter in front."""
    if member[:1].isdigit() and IDENT_RE.match("s" + member):
        return (
            f"members are names, not numbers: write `s{member}` (a family atom is then"
            f" named like `supported(s{member})`)"
        )
    return "names are letters, digits and `_`, not starting with a digit"
