"""The FactCC study: does Unmask flag the explanations that humans graded wrong?

Contract: ``unmask study factcc --data DIR --out DIR`` imports DIR's
``factcc_explanation_annotation.json`` with the ``factcc-explanations`` importer, audits
every replay as ``unmask audit`` does (results and summary in OUT) and prints the study's
tables as Markdown: Unmask's result per explanation against the human grade of that
explanation (flagged = the replay is VIOLATED), overall, per judge model and per prompt; the
precision of "flagged" against "graded not correct"; the checks behind the flags; the
quotations read; and every flagged explanation that humans graded correct, quoted. The
grade and the prompt come from the input file, never from a replay: no grade reaches a
base. ``--limit N`` takes the first N items (the tests use a slice). Every number is
computed by ``tables(lines, grades)`` from the results and the grades alone, so a test can
recount it.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from unmask.checking.record import CHECKED_SCHEMAS, report_json
from unmask.studies import audit

FILE = "factcc_explanation_annotation.json"
GRADES = ("correct", "partially_correct", "unrelated", "incorrect", "no_explanation")
DIMENSIONS = ("verdict", "procedure", "coverage", "grounding")
OVERALLS = ("SATISFIED", "VIOLATED", "UNKNOWN")


def grades(data: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """Replay id → the human grade, the model and the prompt of that judgment."""
    out = {}
    for item in data:
        if not isinstance(item, Mapping) or not isinstance(item.get("samples"), list):
            continue
        for s in item["samples"]:
            if not isinstance(s, Mapping) or s.get("annotation") not in GRADES:
                continue  # no grade: the study leaves the judgment out of every table
            rid = f"{s.get('model')}/{item.get('id')}-{s.get('reason_idx', '?')}"
            out[rid] = {
                "grade": s["annotation"],
                "model": str(s.get("model")),
                "prompt": str(s.get("prompt")),
            }
    return out


def run(data_dir: Path, out: Path, limit: int | None = None, jobs: int = 1):
    """Import and audit; returns the parsed result lines and the grades."""
    from unmask.importers import Options, import_file
    from unmask.plumbing.jsonload import read_json_file

    out.mkdir(parents=True, exist_ok=True)
    src = data_dir / FILE
    data = read_json_file(src)
    if limit is not None:
        data = data[:limit]
        src = out / FILE
        src.write_text(json.dumps(data), encoding="utf-8")
        prompts = data_dir / "prompts"
        if prompts.is_dir():
            # copied, not linked: the importer reads no prompt through a link
            (out / "prompts").mkdir(exist_ok=True)
            for f in prompts.glob("*.txt"):
                (out / "prompts" / f.name).write_bytes(f.read_bytes())
    replays = out / "replays"
    # the study's own folder: an earlier run's replays (another `--limit`) are replaced
    summary = import_file("factcc-explanations", src, replays, Options(), replace=True)
    lines = audit(replays, out, jobs, summary.skipped)
    return lines, grades(data)


def _flag_row() -> dict[str, Counter]:
    return {g: Counter() for g in GRADES}


def _quotations(location: str) -> Counter:
    """What the replay's quotation annotations say: read, attributed, in the document."""
    c: Counter = Counter()
    try:
        replay = json.loads(Path(location).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return c
    values = {a["atom"]: a["value"] for a in replay.get("annotations", ())}
    for m in replay.get("domains", {}).get("quote", ()):
        c["read"] += 1
        c["attributed"] += values.get(f"quotes_doc({m})") == "TRUE"
        c["in_document"] += values.get(f"in_doc({m})") == "TRUE"
        c["not_in_document"] += values.get(f"in_doc({m})") == "FALSE"
    return c


def tables(lines: Sequence[dict], graded: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    """Every figure of the study, from result lines and the human grades alone."""
    reports = [
        report_json(x)
        for x in lines
        if x.get("schema") in CHECKED_SCHEMAS and x.get("replay") in graded
    ]
    overall: dict[str, Counter[str]] = {g: Counter() for g in GRADES}
    by_model: dict[str, dict[str, Counter]] = defaultdict(_flag_row)
    by_prompt: dict[str, dict[str, Counter]] = defaultdict(_flag_row)
    by_dimension: dict[str, Counter[str]] = {d: Counter() for d in DIMENSIONS}
    quotes: Counter = Counter()
    flagged_correct = []
    for r in reports:
        g = graded[r["replay"]]
        grade = g["grade"]
        flag = "flagged" if r["overall"] == "VIOLATED" else "not_flagged"
        overall[grade][r["overall"]] += 1
        by_model[g["model"]][grade][flag] += 1
        by_prompt[g["prompt"]][grade][flag] += 1
        for d in DIMENSIONS:
            if r["dimensions"][d] == "VIOLATED":
                by_dimension[d][grade] += 1
        if flag == "flagged" and grade == "correct":
            flagged_correct.append(r["replay"])
        quotes.update(_quotations(r.get("location", "")))
    flagged = sum(overall[g]["VIOLATED"] for g in GRADES)
    flagged_not_correct = flagged - overall["correct"]["VIOLATED"]
    not_correct = sum(sum(overall[g].values()) for g in GRADES if g != "correct")

    def rows(t: Mapping[str, Mapping[str, Counter]]) -> dict:
        return {
            k: {g: {f: c[f] for f in ("flagged", "not_flagged")} for g, c in v.items()}
            for k, v in sorted(t.items())
        }

    return {
        "judgments": len(reports),
        "errors": len(lines) - len(reports),
        "grades": {g: sum(overall[g].values()) for g in GRADES},
        "overall_by_grade": {g: {o: overall[g][o] for o in OVERALLS} for g in GRADES},
        "flagged": flagged,
        "flagged_not_correct": flagged_not_correct,
        "not_correct": not_correct,
        "precision": round(flagged_not_correct / flagged, 3) if flagged else None,
        "recall": round(flagged_not_correct / not_correct, 3) if not_correct else None,
        "violated_by_dimension": {d: dict(c) for d, c in by_dimension.items()},
        "by_model": rows(by_model),
        "by_prompt": rows(by_prompt),
        "quotations": {k: quotes[k] for k in ("read", "attributed", "in_document")}
        | {"not_in_document": quotes["not_in_document"]},
        "flagged_graded_correct": flagged_correct,
    }


def _reason(r: dict) -> str:
    for x in r.get("reasons", ()):
        if x["code"] == "violated":
            return x["message"]
    return "every check holds"


def _explanation(location: str, limit: int = 500) -> str:
    try:
        text = json.loads(Path(location).read_text(encoding="utf-8"))["sources"]["rationale"]
    except (OSError, KeyError, ValueError):
        return ""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def markdown(t: Mapping[str, Any], lines: Sequence[dict]) -> str:
    by_id = {r["replay"]: report_json(r) for r in lines if r.get("schema") in CHECKED_SCHEMAS}
    md = [f"{t['judgments']} judgments audited ({t['errors']} could not be checked).\n"]
    md.append("| human grade | judgments | " + " | ".join(OVERALLS) + " |")
    md.append("|---|---:|" + "---:|" * len(OVERALLS))
    for g in GRADES:
        row = t["overall_by_grade"][g]
        md.append(f"| {g} | {t['grades'][g]} | " + " | ".join(str(row[o]) for o in OVERALLS) + " |")
    md.append("")
    p = "n/a" if t["precision"] is None else f"{t['precision']:.3f}"
    rc = "n/a" if t["recall"] is None else f"{t['recall']:.3f}"
    md.append(
        f"Flagged (VIOLATED): {t['flagged']}; of these, graded not correct: "
        f"{t['flagged_not_correct']} (precision {p}); explanations graded not correct: "
        f"{t['not_correct']}, flagged {t['flagged_not_correct']} (recall {rc}).\n"
    )
    md.append("| dimension violated | " + " | ".join(GRADES) + " |")
    md.append("|---|" + "---:|" * len(GRADES))
    for d in DIMENSIONS:
        c = t["violated_by_dimension"][d]
        md.append(f"| {d} | " + " | ".join(str(c.get(g, 0)) for g in GRADES) + " |")
    md.append("")
    for key, title in (("by_model", "judge model"), ("by_prompt", "prompt")):
        md.append(f"| {title} | " + " | ".join(GRADES) + " |")
        md.append("|---|" + "---:|" * len(GRADES))
        for name, row in t[key].items():
            cells = [
                f"{row[g]['flagged']} / {row[g]['flagged'] + row[g]['not_flagged']}" for g in GRADES
            ]
            md.append(f"| {name} | " + " | ".join(cells) + " |")
        md.append("")
    q = t["quotations"]
    md.append(
        f"Quotations read: {q['read']}; attributed to the document: {q['attributed']}; "
        f"the document's words: {q['in_document']}; a misquote (a number, a negation or "
        f"words the document does not have): {q['not_in_document']}.\n"
    )
    md.append(f"**Flagged, yet graded correct: {len(t['flagged_graded_correct'])}.**")
    for rid in t["flagged_graded_correct"]:
        r = by_id[rid]
        md.append(f"- `{rid}`: {_reason(r)}")
        quoted = _explanation(r.get("location", ""))
        if quoted:
            md.append(f"  > {quoted}")
    return "\n".join(md) + "\n"


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--data",
    "data_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="folder with factcc_explanation_annotation.json (and prompts/)",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(path_type=Path),
    help="folder for replays, results and study.json",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="first N items")
@click.option("--jobs", type=click.IntRange(min=1), default=1, help="processes for the audit")
def main(data_dir: Path, out: Path, limit: int | None, jobs: int) -> None:
    """Audit the FactCC judges' explanations and set them beside the human grades."""
    from unmask.plumbing.diagnostics import UnmaskError, render_all

    try:
        lines, graded = run(data_dir, out, limit, jobs)
    except UnmaskError as exc:
        # a missing or unreadable data file: one message, the invalid-input status
        click.echo(render_all(exc.diagnostics), err=True)
        sys.exit(4)
    t = tables(lines, graded)
    (out / "study.json").write_text(json.dumps(t, indent=2) + "\n", encoding="utf-8")
    click.echo(markdown(t, lines), nl=False)


if __name__ == "__main__":
    main(prog_name="unmask study factcc")
