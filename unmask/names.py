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
