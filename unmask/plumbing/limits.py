"""Bounds on what Unmask accepts, so that no input, however large or deep, ends in a
traceback or a hang, and no replay reads a file it was not allowed to.

Contract: one ``Limits`` value travels from the command line (``--max-*`` options and
``--protocol-path``) to the parser, the compiler and the replay validator; exceeding a bound
is a diagnostic with code ``limit`` naming the bound, the value seen and the option that
raises it. ``protocol_path`` holds the folders, besides a replay's own, where its protocol
``path`` may lead (see ``unmask.replay.confine``). The options themselves are the commands'
(``unmask.commands._options.click_options``): this module imports nothing of the project.
"""

from __future__ import annotations

from unmask.plumbing.frozen import frozen

# The garbage collector's thresholds for a checking run, the command line's and the batch
# engine's (Python's are 700, 10, 10). A check allocates many small objects that die young
# and makes few cycles; collecting less often saved 12-16% of CPU auditing 2000-claim
# replays and was within the noise on small ones (docs/performance.md).
GC_THRESHOLDS = (50_000, 20, 20)


@frozen
class Limits:
    max_atoms: int = 100_000  # ground atoms in one protocol
    max_expr_depth: int = 200  # nesting of one expression
    max_expr_nodes: int = 1_000_000  # nodes in the whole ground protocol
    # atom names a check's protocol parts hold together, each part's once (80 MB at the
    # default): under first-match a label's part holds every earlier label's atoms, so
    # 20,000 labels (a 2 MB protocol) held 200 million, 1.6 GB; others stay far below
    max_part_atoms: int = 10_000_000
    max_source_chars: int = 10_000_000  # one source text (rationale, context, …) or .proto file
    max_string_chars: int = 1_000_000  # one string literal in a .proto file, as written
    max_domain_size: int = 100_000  # members of one domain
    max_json_depth: int = 500  # nesting of a replay's JSON document
    # values of one JSON document (or of the documents an input keeps together), counted
    # before parsing: a value costs up to about 100 bytes parsed, whatever its text's size
    max_json_values: int = 5_000_000
    max_file_bytes: int = 64 * 1024 * 1024  # one replay or .proto file
    # folders (symbolic links resolved) a protocol `path` may lead into, besides the replay's
    protocol_path: tuple[str, ...] = ()

    def option(self, field_name: str) -> str:
        return "--" + field_name.replace("_", "-")


DEFAULT_LIMITS = Limits()
