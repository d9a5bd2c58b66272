"""The one identifier pattern of Unmask: what counts as a name.

Contract: atoms, domains, members, constraint names, requirement ids and variables are
``IDENT_PATTERN`` (ASCII letters, digits and ``_``, not starting with a digit). The
grammar's ``NAME`` terminal is this pattern (a test proves it), and every other place that
checks a name uses ``IDENT_RE``. A family member's ground name is ``applied``'s
(``cites(c1, p2)``: members in the family's order, a comma and one space between), and
``split_applied`` reads one back; every layer that writes or reads such names uses these
two. Reserved words are a property of the language, not of
names: ``unmask.language.parser.reserved_words()`` derives them from the grammar. Names made up
for a domain a protocol leaves free come from ``invent_members``, the one place that does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

IDENT_PATTERN = r"[A-Za-z_][A-Za-z0-9_]*"
IDENT_RE = re.compile(IDENT_PATTERN + r"\Z")
_WORD = re.compile(IDENT_PATTERN)
_APPLIED = re.compile(rf"({IDENT_PATTERN})\(({IDENT_PATTERN}(?:, {IDENT_PATTERN})*)\)\Z")


def applied(name: str, args: tuple[str, ...]) -> str:
    """``name`` or ``name(a, b)``: how a family member is written, and how its ground atom,
    definition, constraint or requirement is named (one argument gives ``name(a)``)."""
    return f"{name}({', '.join(args)})" if args else name


def split_applied(ground: str) -> tuple[str, tuple[str, ...]] | None:
    """The family and members of a ground name written as ``applied`` writes it
    (``cites(c1, p2)`` → ``("cites", ("c1", "p2"))``); None for a plain atom or any other
    spelling (``cites(c1,p2)`` is not a ground name)."""
    m = _APPLIED.match(ground)
    return None if m is None else (m.group(1), tuple(m.group(2).split(", ")))


_ARGS = re.compile(r"\(([^()]*)\)")


def family_of(name: str) -> str:
    """A ground name with each member list starred: ``supported(joined)`` →
    ``supported(*)``, ``cites(c1, p2)`` → ``cites(*,*)``; a plain name stays as it is. How
    an audit groups the checks of one family, in its summary and its index page."""
    if "(" not in name:
        return name
    return _ARGS.sub(lambda m: "(*" + ",*" * m.group(1).count(",") + ")", name)


def pair_family(judge: str, direction: str, context: str) -> str:
    """The family of a grounding pair: ``said(*) ~> backed(*)``."""
    return f"{family_of(judge)} {direction} {family_of(context)}"


def invent_members(
    domains: Iterable[str], n: int, texts: Iterable[str]
) -> dict[str, tuple[str, ...]]:
    """``n`` made-up members for each domain, for checks that need some where a protocol
    names none: ``claim_1``… (``claim__1``… when the texts or an earlier domain use one of
    those names), named after their domain so two domains never look alike in a witness."""
    taken: set[str] = set()
    for text in texts:
        taken.update(_WORD.findall(text))
    out: dict[str, tuple[str, ...]] = {}
    for domain in domains:
        sep = "_"
        while True:
            names = tuple(f"{domain}{sep}{i}" for i in range(1, n + 1))
            if not taken.intersection(names):
                break
            sep += "_"
        out[domain] = names
        taken.update(names)
    return out


def member_help(member: str) -> str:
    """The fix-it for a member that is not a name: a number gets a letter in front."""
    if member[:1].isdigit() and IDENT_RE.match("s" + member):
        return (
            f"members are names, not numbers: write `s{member}` (a family atom is then"
            f" named like `supported(s{member})`)"
        )
    return "names are letters, digits and `_`, not starting with a digit"
