"""Analysis results as text, JSON and SARIF 2.1.0.

Contract: ``render(fmt, analysis, sources)`` for ``fmt`` in ``FORMATS``. Text renders each
finding as a diagnostic (``FILE:LINE:COL: severity: message``, the source line with a
caret, the witness as a note) after a head naming the protocol, the backend and the scope.
SARIF writes one run whose rules are the finding codes; each result's ``ruleId`` is its
code and its location is the region of the `.proto` file it points at, so code-scanning
tools show it inline; ``invalid_sarif`` writes the same shape for a protocol that does not
compile, each compile error a result. Every format goes through the output policy
(``unmask.plumbing.safe``):
a file name or a string of the protocol never reaches the terminal or a file with a
control character or a bidirectional override in it. Deterministic: no time, no absolute
path that was not given.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from unmask.analysis.analyze import Analysis
from unmask.analysis.findings import CODES
from unmask.plumbing.diagnostics import Diagnostic, counted, render_all
from unmask.plumbing.safe import finish, printable, visible_values

FORMATS = ("text", "json", "sarif")
_RULE_INDEX = {code: i for i, code in enumerate(CODES)}


def render(fmt: str, analysis: Analysis, sources: dict[str, str] | None = None) -> str:
    if fmt == "json":
        return finish(fmt, json.dumps(analysis.to_json(), ensure_ascii=False, indent=2)) + "\n"
    if fmt == "sarif":
        log = visible_values(to_sarif(analysis))
        return finish(fmt, json.dumps(log, ensure_ascii=False, indent=2)) + "\n"
    return text(analysis, sources)


def text(analysis: Analysis, sources: dict[str, str] | None = None) -> str:
    head = (
        f"analysis of protocol `{analysis.protocol}` ({analysis.file}), backend {analysis.backend}"
    )
    lines = [printable(head), printable(analysis.scope.text())]
    lines += [printable(f"labels: {', '.join(analysis.labels)}"), ""]
    if analysis.findings:
        diags = [f.diagnostic(analysis.file) for f in analysis.findings]
        lines.append(render_all(diags, sources))
        lines.append("")
    counts = [
        counted(analysis.count("error"), "error"),
        counted(analysis.count("warning"), "warning"),
        counted(analysis.count("note"), "note"),
    ]
    if analysis.undecided:
        counts.append(f"{analysis.undecided} undecided")
    verdict = "no findings" if not analysis.findings else ", ".join(counts)
    lines.append(f"{verdict} ({analysis.calls} solver calls)")
    return "\n".join(lines) + "\n"


def _rules() -> list[dict[str, Any]]:
    return [
        {
            "id": code,
            "name": "".join(w.capitalize() for w in code.split("-")),
            "shortDescription": {"text": meaning},
            "defaultConfiguration": {"level": severity},
        }
        for code, (severity, meaning) in CODES.items()
    ]


def to_sarif(analysis: Analysis) -> dict[str, Any]:
    from unmask.render.sarif import document, uri

    artifacts: list[str] = []

    def artifact(path: str) -> int:
        if path not in artifacts:
            artifacts.append(path)
        return artifacts.index(path)

    results = []
    for f in analysis.findings:
        file = f.span.file if f.span is not None else analysis.file
        phys: dict[str, Any] = {"artifactLocation": {"uri": uri(file), "index": artifact(file)}}
        if f.span is not None:
            region = {"startLine": f.span.line, "startColumn": f.span.column}
            if f.span.end_line >= f.span.line and f.span.end_column >= 1:
                region["endLine"] = f.span.end_line
                region["endColumn"] = f.span.end_column
            phys["region"] = region
        message = f.message if f.decided else f"could not decide `{f.code}`: {f.message}"
        if f.witness:
            message += f" (witness: {f.witness_text()})"
        props: dict[str, Any] = {"decided": f.decided, "subject": f.subject}
        if f.witness is not None:
            props["witness"] = {a: v for a, v in f.witness}
        key = f"{analysis.protocol}\0{f.code}\0{f.subject}"
        results.append(
            {
                "ruleId": f.code,
                "ruleIndex": _RULE_INDEX[f.code],
                "level": f.severity,
                "message": {"text": message},
                "locations": [{"physicalLocation": phys}],
                "partialFingerprints": {
                    "unmaskFinding/v1": hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()[
                        :32
                    ]
                },
                "properties": props,
            }
        )
    properties = {
        "protocol": analysis.protocol,
        "backend": analysis.backend,
        "scope": analysis.scope.to_json(),
    }
    return document(_rules(), artifacts, results, properties)


def invalid_sarif(diags: list[Diagnostic], file: str) -> str:
    """A SARIF log for a protocol that does not compile: each problem a result at its
    place, ruled by its code, so code scanning gets a file even when the input is broken."""
    from unmask.render.sarif import document, uri

    codes = list(dict.fromkeys(d.code for d in diags))
    rules = [
        {
            "id": code,
            "name": "".join(w.capitalize() for w in code.split("-")),
            "shortDescription": {"text": f"the protocol does not compile: `{code}`"},
            "defaultConfiguration": {"level": "error"},
        }
        for code in codes
    ]
    artifacts: list[str] = []
    results = []
    for d in diags:
        where = d.span.file if d.span is not None and d.span.file else (d.file or file)
        if where not in artifacts:
            artifacts.append(where)
        phys: dict[str, Any] = {
            "artifactLocation": {"uri": uri(where), "index": artifacts.index(where)}
        }
        if d.span is not None:
            phys["region"] = {
                "startLine": d.span.line,
                "startColumn": d.span.column,
                "endLine": max(d.span.end_line, d.span.line),
                "endColumn": max(d.span.end_column, 1),
            }
        message = d.message + (f" (help: {d.help})" if d.help else "")
        results.append(
            {
                "ruleId": d.code,
                "ruleIndex": codes.index(d.code),
                "level": d.severity if d.severity in ("error", "warning", "note") else "error",
                "message": {"text": message},
                "locations": [{"physicalLocation": phys}],
            }
        )
    log = visible_values(document(rules, artifacts, results, {"compiled": False}))
    return finish("sarif", json.dumps(log, ensure_ascii=False, indent=2)) + "\n"
