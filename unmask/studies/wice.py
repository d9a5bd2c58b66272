"""The WiCE study: audit two real judges' claim-verification judgments, reproducibly.

Contract: ``unmask study wice --data DIR --out DIR`` imports both WiCE judge output files of
DIR (``gpt-4-0613_…`` and ``gpt-3.5-turbo-0613_…``, joined to ``gold_claim_test.jsonl``)
with the ``wice`` importer, audits every replay as ``unmask audit`` does
(``unmask.studies.audit``: results, HTML report and summary in OUT), and prints the study's
tables as Markdown: per judge the overall results, which dimension fails first, the gold ×
observed confusion with adherence, "right for the wrong reasons" and "wrong but procedurally
clean" with two quoted examples each, where the two judges differ on the same item, and how
many checks rest on unreviewed rule annotations. ``--limit N`` takes the first N judgments
of each judge (the tests use a slice). Every number is computed from the results file alone,
so ``tables(lines)`` can be checked against a recount.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import click

# the gold × adherence cells, cut and named by the audit summary itself: one vocabulary
from unmask.batch.summary import CELL_TEXT, CELLS
from unmask.checking.record import CHECKED_SCHEMAS, ResultRecord, report_json
from unmask.studies import audit

JUDGES = ("gpt-4-0613", "gpt-3.5-turbo-0613")
LABELS = ("supported", "partially_supported", "not_supported")
DIMENSIONS = ("verdict", "procedure", "coverage", "grounding")
OVERALLS = ("SATISFIED", "VIOLATED", "UNKNOWN")
# the explanation rules, measured on hand-labelled held-out explanations
RULES = {
    "cites": "a line cited as support (`cites(l)`)",
    "support_said": "support stated in words (`support_said`)",
    "gap": "a part stated unsupported (`gap`)",
    "dismissed": "the cited lines set aside as a whole (their `cites` left UNKNOWN)",
}
LABELS_FILE = Path(__file__).resolve().parents[2] / "tests" / "data" / "wice_rules_heldout.jsonl"


def _slice(src: Path, dst: Path, limit: int | None) -> Path:
    if limit is None:
        return src
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)[:limit]
    dst.write_text("".join(lines), encoding="utf-8")
    return dst


def run(data: Path, out: Path, limit: int | None = None, jobs: int = 1) -> list[dict]:
    """Import and audit; returns the parsed result lines (reports and error records)."""
    from unmask.importers import Options, import_file

    out.mkdir(parents=True, exist_ok=True)
    replays = out / "replays"
    gold = data / "gold_claim_test.jsonl"
    skipped: list[Any] = []
    for judge in JUDGES:
        src = data / f"{judge}_claim_test_outputs.jsonl"
        sliced = _slice(src, out / src.name, limit)
        # the study's own folder: an earlier run's replays (another `--limit`) are replaced
        summary = import_file("wice", sliced, replays / judge, Options(gold=gold), replace=True)
        skipped.extend(summary.skipped)
    return audit(replays, out, jobs, skipped, html=out / "report")


def _reports(lines: Iterable[dict]) -> list[dict]:
    return [report_json(x) for x in lines if x.get("schema") in CHECKED_SCHEMAS]


def _cell(r: dict) -> str:
    """The gold × adherence cell of a report, by the audit summary's own table."""
    by_match: dict[object, str] = {True: "match", False: "mismatch"}
    gold = by_match.get(r.get("verdict_matches_gold"), "no_gold")
    return CELLS.get((gold, r["overall"]), "unknown_or_no_gold")


def _most_failing(rs: list[dict]) -> dict[str, Any]:
    """Replays in which each dimension is VIOLATED, and apart, in which it is UNKNOWN."""
    return {
        "violated": {d: sum(r["dimensions"][d] == "VIOLATED" for r in rs) for d in DIMENSIONS},
        "unknown": {d: sum(r["dimensions"][d] == "UNKNOWN" for r in rs) for d in DIMENSIONS},
    }


def _unreviewed_behind_findings(rs: list[dict]) -> set[tuple[str, str]]:
    """(replay, atom) of every unreviewed annotation in a VIOLATED check's explanation."""
    out = set()
    for r in rs:
        for entry in [r["verdict"], *r["requirements"], *r["grounding"]]:
            if entry.get("result") != "VIOLATED" or not entry.get("explanation"):
                continue
            for part in entry["explanation"].get("parts", ()):
                by = part.get("by") or {}
                if part.get("kind") == "annotation" and by and not by.get("reviewed", False):
                    out.add((r["replay"], part["atom"]))
    return out


def _rests_on_unreviewed(r: dict) -> bool:
    entries = [r["verdict"], *r["requirements"], *r["grounding"]]
    return any(e.get("unreviewed") or e.get("coverage_unreviewed") for e in entries)


def tables(lines: Sequence[dict]) -> dict[str, Any]:
    """Every figure of the study, from result lines alone."""
    reports = _reports(lines)
    by_judge: dict[str, list[dict]] = defaultdict(list)
    for r in reports:
        by_judge[r.get("judge", "?")].append(r)
    out: dict[str, Any] = {"errors": len(lines) - len(reports), "judges": {}}
    for judge, rs in sorted(by_judge.items()):
        confusion: dict[str, dict[str, Counter[str]]] = {
            g: {o: Counter() for o in LABELS} for g in LABELS
        }
        for r in rs:
            confusion[r["gold"]][r["verdict"]["observed"]][r["overall"]] += 1
        cells: dict[str, list[str]] = {key: [] for key in CELL_TEXT}
        for r in rs:
            cells[_cell(r)].append(r["replay"])
        out["judges"][judge] = {
            "replays": len(rs),
            "overall": {o: sum(r["overall"] == o for r in rs) for o in OVERALLS},
            "violated_by_dimension": {
                d: sum(r["dimensions"][d] == "VIOLATED" for r in rs) for d in DIMENSIONS
            },
            "accuracy": sum(bool(r["verdict_matches_gold"]) for r in rs),
            "confusion": {g: {o: dict(c) for o, c in row.items()} for g, row in confusion.items()},
            # gold agreement × adherence, cut and named as `unmask audit` cuts and names it
            "cells": {key: len(ids) for key, ids in cells.items()},
            "right_for_wrong_reasons": cells["right_for_wrong_reasons"],
            "wrong_but_procedurally_clean": cells["wrong_but_procedurally_clean"],
            "fails_most_often": _most_failing(rs),
            # VIOLATED replays by standing, as the audit summary decides it, and how many
            # distinct unreviewed annotations a reviewer must read to confirm or dismiss them
            "violated_confirmed": sum(
                any(c is True for c in ResultRecord.from_line(r).confirmed)
                for r in rs
                if r["overall"] == "VIOLATED"
            ),
            "violated_provisional": sum(
                not any(c is True for c in ResultRecord.from_line(r).confirmed)
                for r in rs
                if r["overall"] == "VIOLATED"
            ),
            "reviews_needed": len(_unreviewed_behind_findings(rs)),
            "rests_on_unreviewed": sum(_rests_on_unreviewed(r) for r in rs),
        }
    items: dict[str, dict[str, dict]] = defaultdict(dict)
    for r in reports:
        if r.get("item") and r.get("judge"):
            items[r["item"]][r["judge"]] = r
    both = [v for v in items.values() if all(j in v for j in JUDGES)]
    out["pair"] = {
        "items": len(both),
        "verdict_differs": sum(
            v[JUDGES[0]]["verdict"]["observed"] != v[JUDGES[1]]["verdict"]["observed"] for v in both
        ),
        "dimension_differs": {
            d: sum(v[JUDGES[0]]["dimensions"][d] != v[JUDGES[1]]["dimensions"][d] for v in both)
            for d in DIMENSIONS
        },
    }
    return out


def read_explanation(response: str, claim: str | None = None) -> dict[str, Any]:
    """What the importer's rules read off one response: the lines cited as support and
    whether support is said in words, a gap stated, the cited lines dismissed; given the
    claim, as the importer reads them (a line cited for another fact is not support)."""
    import re

    from unmask.importers import wice_rules as rules

    m = re.search(r"<explanation>(.*?)</explanation>", response, re.S)
    text = m.group(1) if m else ""
    dismissed = rules.dismissal(text) is not None
    cites = (
        sorted({n for n, _, _, denied in rules.citations(text, claim) if not denied})
        if not dismissed
        else []
    )
    return {
        "cites": cites,
        "support_said": not dismissed and rules.support_said(text, claim) is not None,
        "gap": rules.gap(text) is not None,
        "dismissed": dismissed,
    }


def rule_precision(labelled: Iterable[dict]) -> dict[str, dict[str, int]]:
    """Per rule, on hand-labelled explanations: how many readings it proposed, how many of
    them the labels bear out, and how many the labels hold (for recall)."""
    out = {k: {"proposed": 0, "correct": 0, "labelled": 0} for k in RULES}
    for rec in labelled:
        got = read_explanation(rec["response"], rec.get("claim"))
        cited, want = set(got["cites"]), set(rec["cites"])
        out["cites"]["proposed"] += len(cited)
        out["cites"]["correct"] += len(cited & want)
        out["cites"]["labelled"] += len(want)
        for k in ("support_said", "gap", "dismissed"):
            out[k]["proposed"] += got[k]
            out[k]["correct"] += got[k] and rec[k]
            out[k]["labelled"] += rec[k]
    return out


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f}%" if b else "–"


def precision_markdown(figures: dict[str, dict[str, int]], n: int) -> str:
    md = [
        "| rule | reads | proposed | correct | precision | labelled | recall |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for k, what in RULES.items():
        f = figures[k]
        md.append(
            f"| `{k}` | {what} | {f['proposed']} | {f['correct']} | "
            f"{_pct(f['correct'], f['proposed'])} | {f['labelled']} | "
            f"{_pct(f['correct'], f['labelled'])} |"
        )
    return f"{n} held-out explanations, labelled by hand\n\n" + "\n".join(md) + "\n"


def _first_reason(r: dict) -> str:
    for x in r.get("reasons", ()):
        if x["code"] == "violated":
            return x["message"]
    return r["reasons"][0]["message"] if r.get("reasons") else "every check holds"


def _explanation(r: dict, limit: int = 400) -> str:
    """The judge's explanation, quoted from the replay the result line names."""
    try:
        replay = json.loads(Path(r["location"]).read_text(encoding="utf-8"))
        text = replay["sources"]["rationale"]
    except (OSError, KeyError, ValueError):
        return ""
    start, end = text.find("<explanation>"), text.find("</explanation>")
    if start >= 0 and end > start:
        text = text[start + len("<explanation>") : end]
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def markdown(t: dict[str, Any], lines: Sequence[dict], examples: int = 2) -> str:
    by_id = {r["replay"]: r for r in _reports(lines)}
    md: list[str] = []
    for judge, j in t["judges"].items():
        n = j["replays"]
        md.append(f"### {judge} ({n} judgments, {j['accuracy']} labels equal to gold)\n")
        md.append("| overall | " + " | ".join(OVERALLS) + " |")
        md.append("|---|" + "---:|" * len(OVERALLS))
        md.append("| replays | " + " | ".join(str(j["overall"][o]) for o in OVERALLS) + " |\n")
        md.append("| dimension | " + " | ".join(DIMENSIONS) + " |")
        md.append("|---|" + "---:|" * len(DIMENSIONS))
        viol = j["violated_by_dimension"]
        md.append("| violated | " + " | ".join(str(viol[d]) for d in DIMENSIONS) + " |\n")
        md.append("gold ↓ / observed → (satisfied / violated / unknown in each cell)\n")
        md.append("| gold | " + " | ".join(LABELS) + " |")
        md.append("|---|" + "---|" * len(LABELS))
        for g in LABELS:
            cells = []
            for o in LABELS:
                c = j["confusion"][g][o]
                cells.append("/".join(str(c.get(x, 0)) for x in OVERALLS))
            md.append(f"| {g} | " + " | ".join(cells) + " |")
        md.append("")
        md.append("| gold agreement × adherence | replays |")
        md.append("|---|---:|")
        for key, text in CELL_TEXT.items():
            md.append(f"| {text} | {j['cells'][key]} |")
        md.append("")
        mf = j["fails_most_often"]
        ranked = sorted(DIMENSIONS, key=lambda d: -mf["violated"][d])
        top = mf["violated"][ranked[0]]
        leaders = [d for d in ranked if mf["violated"][d] == top] if top else []
        md.append(
            f"Violated: {j['overall']['VIOLATED']} replays, {j['violated_confirmed']} confirmed"
            f" (resting only on reviewed annotations) and {j['violated_provisional']}"
            f" provisional; their minimal explanations rest on {j['reviews_needed']}"
            f" unreviewed annotations, which a reviewer accepts (the finding is confirmed) or"
            f" rejects (the next audit says what is left).\n"
        )
        md.append(
            "Fails most often (VIOLATED): "
            + (" and ".join(leaders) + f", in {top} replays" if leaders else "no dimension")
            + "; left undecided (UNKNOWN, not failed): "
            + ", ".join(f"{d} {mf['unknown'][d]}" for d in DIMENSIONS)
            + ".\n"
        )
        for key in ("right_for_wrong_reasons", "wrong_but_procedurally_clean"):
            ids = j[key]
            md.append(f"**{CELL_TEXT[key].capitalize()}: {len(ids)}.**")
            for rid in ids[:examples]:
                r = by_id[rid]
                md.append(
                    f"- `{rid}`: gold `{r['gold']}`, answered `{r['verdict']['observed']}`; "
                    f"{_first_reason(r)}"
                )
                quoted = _explanation(r)
                if quoted:
                    md.append(f"  > {quoted}")
            md.append("")
        md.append(
            f"Replays with a check resting on unreviewed rule annotations: "
            f"{j['rests_on_unreviewed']} of {n}.\n"
        )
    p = t["pair"]
    md.append(f"### The two judges on the same items ({p['items']} items)\n")
    md.append(f"- verdicts differ on {p['verdict_differs']} items")
    for d in DIMENSIONS:
        md.append(f"- the {d} dimension differs on {p['dimension_differs'][d]} items")
    return "\n".join(md) + "\n"


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]},
    help=__doc__.split("\n\n", 1)[0].strip() if __doc__ else None,
)
@click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="folder with the WiCE files",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="folder for replays and reports",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="first N judgments of each judge"
)
@click.option("--jobs", type=int, default=1, show_default=True)
def main(data: Path, out: Path, limit: int | None, jobs: int) -> None:
    """The study from the command line: 0 when written, 4 when a WiCE file cannot be read
    (2, click's, for a usage error)."""
    from unmask.plumbing.diagnostics import UnmaskError, render_all

    try:
        lines = run(data, out, limit, jobs)
    except UnmaskError as exc:
        # a missing or unreadable WiCE file: one message, the invalid-input status
        click.echo(render_all(exc.diagnostics), err=True)
        sys.exit(4)
    t = tables(lines)
    (out / "study.json").write_text(json.dumps(t, indent=2) + "\n", encoding="utf-8")
    click.echo(markdown(t, lines), nl=False)
    if LABELS_FILE.is_file():
        labelled = [json.loads(x) for x in LABELS_FILE.read_text(encoding="utf-8").splitlines()]
        click.echo("\n### The explanation rules, measured\n")
        click.echo(precision_markdown(rule_precision(labelled), len(labelled)), nl=False)


if __name__ == "__main__":
    main(prog_name="unmask study wice")
