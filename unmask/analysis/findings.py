"""The findings of protocol analysis: a table of codes, and a finding as data.

Contract: ``ORDER`` lists the finding codes in the order analysis reports them; ``CODES``
maps each to its severity and one-line description, both fixed in the registry of codes
(``unmask.plumbing.codes``; the table `docs/analysis.md` documents). A ``Finding``
carries its code, severity, message (lowercase, user input in backticks), the ``span`` in
the `.proto` file it points at (None for IR input without positions), a witness
assignment (atom, value) in declaration order where one shows the finding, and
``decided`` False when a solver call could not decide it (the finding is then reported
as undecided, never guessed either way).
"""

from __future__ import annotations

from typing import Any

from unmask.checking.explain import DEADLINE
from unmask.checking.overlap import FIRST_MATCH_HELP
from unmask.ir import Span
from unmask.plumbing.codes import ERROR, NOTE, Code
from unmask.plumbing.diagnostics import Diagnostic
from unmask.plumbing.frozen import frozen

# the findings in the order analysis reports them (SARIF numbers its rules in this order);
# each one's severity and one-line meaning are the registry's (``unmask.plumbing.codes``)
ORDER: tuple[Code, ...] = (
    Code.CONTRADICTORY_PROTOCOL,
    Code.OVERLAPPING_DECISIONS,
    Code.UNREACHABLE_LABEL,
    Code.UNCOVERED_ASSIGNMENT,
    Code.CONSTANT_DECISION,
    Code.VACUOUS_REQUIREMENT,
    Code.IMPOSSIBLE_REQUIREMENT,
    Code.NEVER_ADDRESSED,
    Code.ADDRESSED_AS_CONDITION,
    Code.REDUNDANT_REQUIREMENT,
    Code.UNGROUNDED_DECISION_ATOM,
    Code.UNUSED_ATOM,
)


# code -> (severity, what it means)
CODES: dict[Code, tuple[str, str]] = {c: (c.severity, c.what) for c in ORDER}


@frozen
class Finding:
    code: Code
    message: str
    span: Span | None = None
    witness: tuple[tuple[str, bool], ...] | None = None
    decided: bool = True
    detail: str = ""  # why a finding is undecided (the solver's reason)
    subject: str = ""  # what it is about: `label:L`, `requirement:ID`, `atom:NAME`…
    help: str = ""  # a help written for this finding; else the code's own (``HELP``)

    @property
    def severity(self) -> str:
        return CODES[self.code][0] if self.decided else NOTE

    @property
    def is_error(self) -> bool:
        return self.decided and self.severity == ERROR

    def witness_text(self) -> str:
        if not self.witness:
            return ""
        return ", ".join(f"{a} = {'TRUE' if v else 'FALSE'}" for a, v in self.witness)

    def diagnostic(self, file: str | None = None) -> Diagnostic:
        notes: list[str] = []
        if self.witness:
            notes.append(f"witness: {self.witness_text()}")
        message = self.message
        if not self.decided:
            message = f"could not decide `{self.code}`: {self.message}"
            if self.detail == DEADLINE:
                notes.append("the analysis ran past its deadline (`--deadline-ms`) first")
            elif self.detail:
                notes.append(f"the solver said: {self.detail}")
        return Diagnostic(
            self.code,
            message,
            self.span,
            file=None if self.span is not None else file,
            # shown as `warning[unused-atom]:`, so the code is on the line, as rustc does
            severity=f"{self.severity}[{self.code}]",
            notes=tuple(notes),
            help=None if not self.decided else (self.help or HELP.get(self.code)),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity,
            "decided": self.decided,
            "subject": self.subject,
            "message": self.message,
        }
        if self.span is not None:
            out["location"] = {
                "file": self.span.file,
                "line": self.span.line,
                "column": self.span.column,
                "end_line": self.span.end_line,
                "end_column": self.span.end_column,
            }
        if self.witness is not None:
            out["witness"] = {a: v for a, v in self.witness}
        if self.detail:
            out["detail"] = self.detail
        return out


HELP: dict[Code, str] = {
    Code.CONTRADICTORY_PROTOCOL: "the constraints (or the decisions) rule out every world; "
    "drop or weaken one",
    Code.UNREACHABLE_LABEL: "make the label's decision satisfiable alone, or remove the label",
    Code.OVERLAPPING_DECISIONS: FIRST_MATCH_HELP,
    Code.UNCOVERED_ASSIGNMENT: "add `decision L otherwise`, or widen a decision to cover it",
    Code.CONSTANT_DECISION: "the decision reads atoms the constraints fix; check the constraints",
    Code.VACUOUS_REQUIREMENT: "a requirement that always holds checks nothing; tighten `holds`",
    Code.IMPOSSIBLE_REQUIREMENT: "every replay violates it; fix `holds` or the constraints",
    Code.NEVER_ADDRESSED: "`addressed` can never be true, so coverage is never observable",
    Code.ADDRESSED_AS_CONDITION: "`addressed` says whether compliance could be observed, not "
    "when the requirement applies: `holds` is checked either way; put the condition in `holds` "
    "(`holds: COND implies X`) and keep in `addressed` only procedure atoms that say whether "
    "compliance was observable",
    Code.REDUNDANT_REQUIREMENT: "merge the two requirements, or keep both on purpose",
    Code.UNGROUNDED_DECISION_ATOM: "add `ground ATOM ~ CONTEXT` (or `~>`) for the atom",
    Code.UNUSED_ATOM: "remove the atom, or use it where it was meant to be used",
}
