"""Bounds on what Unmask accepts, so that no input, however large or deep, ends in a
traceback or a hang.

Contract: one ``Limits`` value travels from the command line (``--max-*`` options) to the
parser, the compiler and the replay validator; exceeding a bound is a diagnostic with code
``limit`` naming the bound, the value seen and the option that raises it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    max_atoms: int = 100_000  # ground atoms in one protocol
    max_expr_depth: int = 200  # nesting of one expression
    max_expr_nodes: int = 1_000_000  # nodes in the whole ground protocol
    max_source_chars: int = 10_000_000  # one source text (rationale, context, …) or .proto file
    max_domain_size: int = 100_000  # members of one domain
    max_json_depth: int = 500  # nesting of a replay's JSON document
    max_file_bytes: int = 64 * 1024 * 1024  # one replay or .proto file

    def option(self, field_name: str) -> str:
        return "--" + field_name.replace("_", "-")


DEFAULT_LIMITS = Limits()
