"""The ReaLMistake study: twelve error detectors, their accuracy beside their adherence.

Contract: ``unmask study realmistake --data DIR --out DIR`` imports DIR's
``judgments/judgments_cot_instruction.jsonl`` (``--prompt prompt1`` for the standard prompt's
file) with the ``realmistake`` importer, reading the items from DIR's password-protected
``data.zip`` (replays hold the items' text, so OUT stays as private as the archive), audits
every replay as ``unmask audit`` does and prints the study's tables as Markdown: per judge, the
verdict's accuracy against the expert label beside the audit's results; right for the wrong
reasons and wrong with a clean procedure; each requirement's violations; the conclusions
the dataset's parser could not read or read against the rationale's own words; and the
quotations. The judge × judge tables on the same items are the audit's summary
(``OUT/summary.txt``). ``--limit N`` takes the first N judgments (the tests use a slice);
every number is computed by ``tables(lines)`` from the result lines alone.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from unmask.checking.record import CHECKED_SCHEMAS, report_json
from unmask.plumbing.codes import Code
from unmask.studies import audit

FILES = {
    "cot": "judgments_cot_instruction.jsonl",
    "prompt1": "judgments_prompt1.jsonl",
}
DIMENSIONS = ("verdict", "procedure", "coverage", "grounding")
OVERALLS = ("SATISFIED", "VIOLATED", "UNKNOWN")
REQUIREMENTS = ("close_fixed", "close_last", "explain_first", "follows_findings")


def run(data: Path, out: Path, prompt: str = "cot", limit: int | None = None, jobs: int = 1):
    """Import and audit; returns the parsed result lines."""

    from unmask.importers import Options, import_file
    from unmask.plumbing.diagnostics import Diagnostic, UnmaskError

    src = data / "judgments" / FILES[prompt]
    for need in (src, data / "data.zip"):
        if not need.is_file():
            raise UnmaskError(
                [
                    Diagnostic(
                        Code.REALMISTAKE,
                        f"`{need}` is not there",
                        help="give the ReaLMistake folder with `--data`",
                    )
                ]
            )
    out.mkdir(parents=True, exist_ok=True)
    if limit is not None:
        lines = src.read_text(encoding="utf-8").splitlines(keepends=True)[:limit]
        src = out / FILES[prompt]
        src.write_text("".join(lines), encoding="utf-8")
    replays = out / "replays"
    # the study's own folder: an earlier run's replays (another `--limit`) are replaced
    summary = import_file(
        "realmistake", src, replays, Options(gold=data / "data.zip"), replace=True
    )
    return audit(replays, out, jobs, summary.skipped)


def _status(r: dict, requirement: str) -> str | None:
    for q in r["requirements"]:
        if q["id"] == requirement:
            return q["result"]
    return None


def _judge_side(r: dict) -> dict[str, str]:
    """The conclusion atoms' values, read from the verdict's explanation."""
    out = {}
    for part in (r["verdict"].get("explanation") or {}).get("parts", ()):
        if part.get("atom"):
            out[part["atom"]] = part["value"]
    return out


def tables(lines: Sequence[dict]) -> dict[str, Any]:
    """Every figure of the study, from result lines alone."""
    reports = [report_json(x) for x in lines if x.get("schema") in CHECKED_SCHEMAS]
    by_judge: dict[str, list[dict]] = defaultdict(list)
    for r in reports:
        by_judge[r.get("judge", "?")].append(r)
    judges = {}
    for judge, rs in sorted(by_judge.items()):
        right = [r for r in rs if r["verdict_matches_gold"]]
        judges[judge] = {
            "judgments": len(rs),
            "accuracy": round(len(right) / len(rs), 3),
            "overall": {o: sum(r["overall"] == o for r in rs) for o in OVERALLS},
            "violated_by_dimension": {
                d: sum(r["dimensions"][d] == "VIOLATED" for r in rs) for d in DIMENSIONS
            },
            "requirement_violated": {
                q: sum(_status(r, q) == "VIOLATED" for r in rs) for q in REQUIREMENTS
            },
            "right_for_wrong_reasons": sum(r["overall"] == "VIOLATED" for r in right),
            "right_and_satisfied": sum(r["overall"] == "SATISFIED" for r in right),
            "wrong_but_procedurally_clean": sum(
                r["verdict_matches_gold"] is False
                and r["overall"] != "VIOLATED"
                and r["dimensions"]["procedure"] == "OK"
                for r in rs
            ),
            "unparsed": sum(r["verdict"]["observed"] == "none" for r in rs),
            "misparsed": sum(r["dimensions"]["verdict"] == "VIOLATED" for r in rs),
        }
    unparsed = [r for r in reports if r["verdict"]["observed"] == "none"]
    misparsed = [r for r in reports if r["dimensions"]["verdict"] == "VIOLATED"]
    return {
        "judgments": len(reports),
        "errors": len(lines) - len(reports),
        "judges": judges,
        "unparsed": {
            "count": len(unparsed),
            "no_conclusion": sum(_status(r, "close_fixed") == "VIOLATED" for r in unparsed),
            "a_conclusion": sum(
                _judge_side(r).get("concludes_error") in ("TRUE", "FALSE") for r in unparsed
            ),
        },
        "misparsed": {
            "count": len(misparsed),
            "parsed": dict(Counter(r["verdict"]["observed"] for r in misparsed)),
            "replays": sorted(r["replay"] for r in misparsed),
        },
        "grounding_violated": sorted(
            r["replay"] for r in reports if r["dimensions"]["grounding"] == "VIOLATED"
        ),
    }


def markdown(t: dict[str, Any]) -> str:
    md = [f"{t['judgments']} judgments audited ({t['errors']} could not be checked).\n"]
    cols = ("judgments", "accuracy", "SATISFIED", "VIOLATED", "UNKNOWN")
    extra = ("right, violated", "right, satisfied", "wrong, clean procedure")
    md.append("| judge | " + " | ".join(cols + extra) + " |")
    md.append("|---|" + "---:|" * (len(cols) + len(extra)))
    for judge, j in t["judges"].items():
        cells = [str(j["judgments"]), f"{j['accuracy']:.3f}"]
        cells += [str(j["overall"][o]) for o in OVERALLS]
        cells += [str(j["right_for_wrong_reasons"]), str(j["right_and_satisfied"])]
        cells += [str(j["wrong_but_procedurally_clean"])]
        md.append(f"| {judge} | " + " | ".join(cells) + " |")
    md.append("")
    md.append(
        "| judge | "
        + " | ".join(f"{d} violated" for d in DIMENSIONS)
        + " | "
        + " | ".join(REQUIREMENTS)
        + " | unparsed | misparsed |"
    )
    md.append("|---|" + "---:|" * (len(DIMENSIONS) + len(REQUIREMENTS) + 2))
    for judge, j in t["judges"].items():
        cells = [str(j["violated_by_dimension"][d]) for d in DIMENSIONS]
        cells += [str(j["requirement_violated"][q]) for q in REQUIREMENTS]
        cells += [str(j["unparsed"]), str(j["misparsed"])]
        md.append(f"| {judge} | " + " | ".join(cells) + " |")
    md.append("")
    u, m = t["unparsed"], t["misparsed"]
    md.append(
        f"Conclusions the dataset's parser could not read (verdict `none`): {u['count']}; "
        f"of these, {u['no_conclusion']} state no conclusion at all (`close_fixed` "
        f"violated) and {u['a_conclusion']} state one the parser missed."
    )
    parsed = ", ".join(f"`{k}` {v}" for k, v in sorted(m["parsed"].items())) or "none"
    md.append(
        f"Verdicts that the rationale's own last conclusion contradicts (misparsed): "
        f"{m['count']} ({parsed}).\n"
    )
    md.append(f"Grounding violations (a misquote of the task): {len(t['grounding_violated'])}.")
    return "\n".join(md) + "\n"


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--data",
    required=True,
    type=click.Path(path_type=Path),
    help="the ReaLMistake folder: data.zip and judgments/",
)
@click.option("--out", required=True, type=click.Path(path_type=Path), help="output folder")
@click.option("--prompt", type=click.Choice(sorted(FILES)), default="cot", help="which prompt")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="first N judgments")
@click.option("--jobs", type=click.IntRange(min=1), default=1, help="processes for the audit")
def main(data: Path, out: Path, prompt: str, limit: int | None, jobs: int) -> None:
    """Audit the ReaLMistake error detectors and set adherence beside accuracy."""
    from unmask.plumbing.diagnostics import UnmaskError, render_all

    try:
        lines = run(data, out, prompt, limit, jobs)
    except UnmaskError as exc:
        click.echo(render_all(exc.diagnostics), err=True)
        sys.exit(4)
    t = tables(lines)
    (out / "study.json").write_text(json.dumps(t, indent=2) + "\n", encoding="utf-8")
    click.echo(markdown(t), nl=False)


if __name__ == "__main__":
    main(prog_name="unmask study realmistake")
