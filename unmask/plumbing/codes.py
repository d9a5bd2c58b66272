"""Every diagnostic code, once: a registry of typed values.

Contract: ``Code`` is the only type a ``Diagnostic`` (and an analysis ``Finding``) takes
as its code. Each member is the code's wire string itself (``Code.BAD_ESCAPE == "bad-escape"``,
its hash, JSON, f-string and pickle are the string's), so reports, result lines, SARIF rule
ids and error records write exactly what a free string wrote. Each member names the page of
``docs/`` that explains it (``page``) and the severity it is always reported with (an error
unless said: the warnings and notes, and each analysis finding's; a finding that could not
be decided is a note); ``what`` is a one-line description where one is shown to users
(SARIF rules). A code typed at a call site as a string is a type error (mypy runs in the
suite); the suite also checks that every member is used in the package, is reported with
its severity and appears on its page, and ``docs/codes.md`` lists them all. Reading a code
back from data (an error record) goes through ``read_back``.

Why checked when types are checked, not on every ``Diagnostic``: mypy (in the suite) rejects
a string where a ``Code`` is taken, and tests/plumbing/test_codes.py finds a string literal
there even where mypy does not look (an unannotated function, an untyped receiver). The only
strings that reach a diagnostic at run time are codes read back from a file an earlier run
wrote, which must be kept as they are (``read_back``), and a plugin's, which should still be
reported rather than become an internal error. Why an enum, not a plain ``str`` subclass:
msgspec and mypy know enums (msgspec encodes a member as its value; it refuses other
``str`` subclasses); the price is making the class at import, about 1.7 ms.
"""

from __future__ import annotations

from enum import Enum
from typing import cast

ERROR = "error"
WARNING = "warning"
NOTE = "note"


class Code(str, Enum):
    """A diagnostic code: ``Code.X.value`` is what is written, ``page`` where it is explained."""

    page: str
    severity: str
    what: str

    def __new__(cls, value: str, page: str, severity: str = ERROR, what: str = "") -> Code:
        member = str.__new__(cls, value)
        member._value_ = value
        member.page = page
        member.severity = severity
        member.what = what
        return member

    # a code is its string wherever it is written: a str-mixin enum's own str() gives
    # `Code.SYNTAX`, and so does its format() from Python 3.11 on
    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(self, spec)

    @classmethod
    def of(cls, text: object) -> Code | None:
        """The registered code spelt ``text``, or None."""
        return cls._value2member_map_.get(text) if isinstance(text, str) else None  # type: ignore[return-value]

    # --- the .proto language and unmaskc (language.md) ---------------------------------
    SYNTAX = "syntax", "language.md"
    BAD_ESCAPE = "bad-escape", "language.md"
    MISSING_PROTOCOL = "missing-protocol", "language.md"
    DUPLICATE_PROTOCOL = "duplicate-protocol", "language.md"
    PROTOCOL_ORDER = "protocol-order", "language.md"
    MISSING_DECISION = "missing-decision", "language.md"
    DUPLICATE_DECISION = "duplicate-decision", "language.md"
    UNKNOWN_LABEL = "unknown-label", "language.md"
    OTHERWISE = "otherwise", "language.md"
    OVERLAP_UNDECIDED = "overlap-undecided", "language.md", WARNING
    LABELS = "labels", "language.md"
    DUPLICATE_VERDICT = "duplicate-verdict", "language.md"
    RECURSIVE_DEFINITION = "recursive-definition", "language.md"
    UNKNOWN_NAME = "unknown-name", "language.md"
    DUPLICATE_NAME = "duplicate-name", "language.md"
    ROLE_MISMATCH = "role-mismatch", "language.md"
    UNKNOWN_DOMAIN = "unknown-domain", "language.md"
    BAD_DOMAINS = "bad-domains", "language.md"
    MISSING_DOMAIN = "missing-domain", "language.md"
    MEMBER_NOT_IN_DOMAIN = "member-not-in-domain", "language.md"
    BAD_MEMBER = "bad-member", "language.md"
    UNKNOWN_MEMBER = "unknown-member", "language.md"
    MISSING_MEMBER = "missing-member", "language.md"
    WRONG_ARITY = "wrong-arity", "language.md"
    NOT_A_FAMILY = "not-a-family", "language.md"
    NOT_AN_ATOM = "not-an-atom", "language.md"
    DOMAIN_MISMATCH = "domain-mismatch", "language.md"
    VERDICT_MISUSE = "verdict-misuse", "language.md"
    CARDINALITY = "cardinality", "language.md"
    FREE_DOMAIN = "free-domain", "language.md", NOTE
    # --- any input and output (language.md lists them for unmaskc; style.md for all) ---
    LIMIT = "limit", "language.md"
    IO = "io", "language.md"
    ENCODING = "encoding", "language.md"
    OUTPUT = "output", "style.md"
    USAGE = "usage", "style.md"
    INTERNAL_ERROR = "internal-error", "style.md"
    CACHE = "cache", "security.md", WARNING
    # --- the replay and the protocol IR as JSON (replay-format.md) ---------------------
    JSON_SYNTAX = "json-syntax", "replay-format.md"
    JSON_EMPTY = "json-empty", "replay-format.md"
    JSON_DUPLICATE_KEY = "json-duplicate-key", "replay-format.md"
    JSON_NUMBER = "json-number", "replay-format.md"
    SCHEMA = "schema", "replay-format.md"
    TYPE = "type", "replay-format.md"
    MISSING = "missing", "replay-format.md"
    UNKNOWN_KEY = "unknown-key", "replay-format.md", WARNING
    ITEM = "item", "replay-format.md"
    JUDGE = "judge", "replay-format.md"
    VERDICT = "verdict", "replay-format.md"
    GOLD = "gold", "replay-format.md"
    NAME = "name", "replay-format.md"
    DOMAIN = "domain", "replay-format.md"
    DOMAINS_IGNORED = "domains-ignored", "replay-format.md", WARNING
    TRANSLATION = "translation", "replay-format.md"
    UNKNOWN_SOURCE = "unknown-source", "replay-format.md"
    VALUE = "value", "replay-format.md"
    PROVENANCE = "provenance", "replay-format.md"
    INVALID = "invalid", "replay-format.md"
    PROTOCOL = "protocol", "replay-format.md"
    PROTOCOL_FORM = "protocol-form", "replay-format.md"
    PROTOCOL_FILE = "protocol-file", "replay-format.md"
    PROTOCOL_PATH = "protocol-path", "replay-format.md"
    UNKNOWN_ATOM = "unknown-atom", "replay-format.md"
    ATOM_DROPPED = "atom-dropped", "replay-format.md", WARNING
    DUPLICATE_ANNOTATION = "duplicate-annotation", "replay-format.md"
    EVIDENCE_MISSING = "evidence-missing", "replay-format.md"
    EVIDENCE_READ = "evidence-read", "replay-format.md"
    EVIDENCE_ROLE = "evidence-role", "replay-format.md"
    SOURCE_MISSING = "source-missing", "replay-format.md"
    SPAN_UNITS = "span-units", "replay-format.md"
    SPAN_RANGE = "span-range", "replay-format.md"
    SPAN_QUOTE = "span-quote", "replay-format.md"
    EXPR = "expr", "replay-format.md"
    DECISION = "decision", "replay-format.md"
    FIRST_MATCH = "first-match", "replay-format.md"
    DUPLICATE_ATOM = "duplicate-atom", "replay-format.md"
    DUPLICATE_LABEL = "duplicate-label", "replay-format.md"
    UNKNOWN_DEFINITION = "unknown-definition", "replay-format.md"
    ROLE = "role", "replay-format.md"
    GROUND_ROLE = "ground-role", "replay-format.md"
    # --- building a replay from Python (api.md) ----------------------------------------
    QUOTE = "quote", "api.md"
    QUOTE_NOT_FOUND = "quote-not-found", "api.md"
    QUOTE_AMBIGUOUS = "quote-ambiguous", "api.md"
    OCCURRENCE = "occurrence", "api.md"
    NO_EVIDENCE = "no-evidence", "api.md"
    EVIDENCE_SOURCE = "evidence-source", "api.md"
    # --- backends (backends.md) --------------------------------------------------------
    UNKNOWN_BACKEND = "unknown-backend", "backends.md"
    BACKEND_UNAVAILABLE = "backend-unavailable", "backends.md"
    UNKNOWN_SOLVER = "unknown-solver", "backends.md"
    TRUTHTABLE_LIMIT = "truthtable-limit", "backends.md"
    # --- audits and their results (audit.md, scale.md) ---------------------------------
    BAD_RESULTS = "bad-results", "audit.md"
    LOCATION = "location", "audit.md"
    OUTSIDE_TREE = "outside-tree", "audit.md"
    CLUSTER = "cluster", "scale.md"
    BENCH_FAILED = "bench-failed", "performance.md"
    # --- importers (importers.md) ------------------------------------------------------
    UNKNOWN_IMPORTER = "unknown-importer", "importers.md"
    NOT_THE_FORMAT = "not-the-format", "importers.md"
    OTHER_REPLAYS = "other-replays", "importers.md"
    MAPPING = "mapping", "importers.md"
    REALMISTAKE = "realmistake", "importers.md"
    WICE = "wice", "importers.md"
    # --- proposers and annotate (proposers.md, annotate.md) ----------------------------
    UNKNOWN_PROPOSER = "unknown-proposer", "proposers.md"
    DUPLICATE_PROPOSER = "duplicate-proposer", "proposers.md"
    PROPOSER_CANNOT_FILL = "proposer-cannot-fill", "proposers.md"
    BAD_RULES = "bad-rules", "proposers.md"
    BAD_INPUT = "bad-input", "proposers.md"
    UNREADABLE_INPUT = "unreadable-input", "proposers.md"
    MODEL_NOT_CONFIGURED = "model-not-configured", "proposers.md"
    MODEL = "model", "annotate.md"
    ANNOTATION_LINE = "annotation-line", "annotate.md"
    TIMEOUT = "timeout", "annotate.md"
    PROVIDER = "provider", "annotate.md"
    CREDENTIALS = "credentials", "annotate.md"
    UNREACHABLE = "unreachable", "annotate.md"
    RATE_LIMITED = "rate-limited", "annotate.md"
    MALFORMED_REPLY = "malformed-reply", "annotate.md"
    # --- review and calibration (review.md, calibration.md) ----------------------------
    REVIEW_LINE = "review-line", "review.md"
    REVIEW_STALE = "review-stale", "review.md"
    SAMPLE_SIZE = "sample-size", "review.md", WARNING
    CALIBRATION = "calibration", "calibration.md"
    CALIBRATION_INPUT = "calibration-input", "calibration.md"
    # --- findings of `unmask analyze` (analysis.md), in the order they are reported ----
    CONTRADICTORY_PROTOCOL = (
        "contradictory-protocol",
        "analysis.md",
        ERROR,
        "no assignment satisfies the constraints and one label",
    )
    OVERLAPPING_DECISIONS = (
        "overlapping-decisions",
        "analysis.md",
        ERROR,
        "an assignment satisfies the decisions of two labels",
    )
    UNREACHABLE_LABEL = (
        "unreachable-label",
        "analysis.md",
        ERROR,
        "a label is never the verdict under the constraints",
    )
    UNCOVERED_ASSIGNMENT = (
        "uncovered-assignment",
        "analysis.md",
        ERROR,
        "an assignment satisfies no decision",
    )
    CONSTANT_DECISION = (
        "constant-decision",
        "analysis.md",
        WARNING,
        "a decision does not depend on any atom",
    )
    VACUOUS_REQUIREMENT = (
        "vacuous-requirement",
        "analysis.md",
        WARNING,
        "a requirement holds under every assignment",
    )
    IMPOSSIBLE_REQUIREMENT = (
        "impossible-requirement",
        "analysis.md",
        ERROR,
        "a requirement holds under no assignment",
    )
    NEVER_ADDRESSED = (
        "never-addressed",
        "analysis.md",
        WARNING,
        "a requirement is addressed under no assignment",
    )
    ADDRESSED_AS_CONDITION = (
        "addressed-as-condition",
        "analysis.md",
        WARNING,
        "a requirement's `addressed` reads judge or context atoms, as if it said when it applies",
    )
    REDUNDANT_REQUIREMENT = (
        "redundant-requirement",
        "analysis.md",
        NOTE,
        "one requirement's `holds` implies another's",
    )
    UNGROUNDED_DECISION_ATOM = (
        "ungrounded-decision-atom",
        "analysis.md",
        WARNING,
        "a judge atom a decision reads is never grounded",
    )
    UNUSED_ATOM = "unused-atom", "analysis.md", NOTE, "an atom nothing reads"


def read_back(text: str) -> Code:
    """The code of a diagnostic read back from data a run wrote (an error record of a
    results file): its member, or, for a code this version does not register (one a newer
    version wrote, or an edited file), the text itself, so that the record is read and
    written back unchanged rather than refused. The one place a string stands for a code."""
    return Code.of(text) or cast(Code, text)
