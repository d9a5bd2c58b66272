"""Measure the judge-side rules against hand labels of WiCE explanations.

Contract: ``python -m unmask.propose.measure_judge --labels judge_citations_50.jsonl`` prints,
for each rule of the rule file (the built-in WiCE rules unless ``--rules FILE``), how many items
it proposes at ``--threshold``, how many of those the labels hold (precision) and how many of
the labelled items it finds (recall), and the same per atom family (the union of the rules that
fill it). An item is a (row, member) pair: a sentence number for the citation rules, the
label for the answer rule, the phrase for the quote rules. Each label row carries the judge's
response (copied from WiCE, MIT), its judge and row index; ``--wice DIR`` re-reads every
response from the source files and refuses to measure when one differs. ``--json FILE``
writes the figures. ``--labels`` may be repeated: one table per set, in order. The figures
are a function of the labels and the rules alone.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path

import click

from unmask.plumbing.files import read_text
from unmask.propose.judge import JudgeRules, load_rules

# which labelled set each built-in rule's proposals are measured against
TARGETS = {
    "cited": "cited",
    "said": "support",
    "contradicted": "contradict",
    "answered": "answer",
    "quotes": "quotes",
}


def load_labels(path: str | Path) -> list[dict]:
    # a regular file only, bounded: a named pipe is an error, not a wait
    return [json.loads(line) for line in read_text(path).splitlines() if line.strip()]


def check_sources(labels: Iterable[dict], wice: str | Path) -> list[str]:
    """Rows whose response differs from the WiCE file it names (empty when all match)."""
    cache: dict[str, list[str]] = {}
    bad = []
    for r in labels:
        if r["file"] not in cache:
            text = read_text(Path(wice) / r["file"])
            cache[r["file"]] = [json.loads(x)["response"] for x in text.splitlines() if x.strip()]
        rows = cache[r["file"]]
        if not 0 <= r["row"] < len(rows) or rows[r["row"]] != r["response"]:
            bad.append(f"{r['file']} row {r['row']}")
    return bad


def _gold(row: dict, target: str) -> set[str]:
    value = row.get(target)
    if value is None:
        return set()
    if isinstance(value, str):
        return {value}
    return {str(v) for v in value}


def _item(captured: str, atom: str, family: str) -> str:
    """What a proposal names, comparable with the labels: the member without its prefix."""
    if atom == family:
        return captured  # a plain atom (the quote rules): the phrase itself
    member = atom[len(family) + 1 : -1]
    return member[1:] if member.startswith("s") and member[1:].isdigit() else member


def measure(labels: list[dict], proposer: JudgeRules, threshold: float) -> dict:
    """Precision and recall per rule and per atom family, with the counts behind them."""
    groups: dict[str, tuple[str, list[str]]] = {}
    for rule in proposer.ruleset.rules:
        groups.setdefault(rule.atom, (TARGETS.get(rule.atom, rule.atom), []))[1].append(rule.name)
    per_rule: dict[str, dict] = {}
    per_family: dict[str, dict] = {}
    per_judge: dict[str, dict[str, dict]] = {}
    counts: dict[str, list[int]] = {}
    mentions_taken = 0
    mentions = 0
    for row in labels:
        hits = [h for h in proposer.matches(row["response"]) if h.confidence >= threshold]
        for family, (target, names) in groups.items():
            gold = _gold(row, target)
            union: set[str] = set()
            for name in names:
                got = {_item(h.captured, h.atom, family) for h in hits if h.rule.name == name}
                union |= got
                c = counts.setdefault(f"rule:{name}", [0, 0, 0])
                c[0] += len(got & gold)
                c[1] += len(got)
                c[2] += len(gold)
            for key in (f"family:{family}", f"judge:{row['judge']}\t{family}"):
                c = counts.setdefault(key, [0, 0, 0])
                c[0] += len(union & gold)
                c[1] += len(union)
                c[2] += len(gold)
            if family == "said":
                m = _gold(row, "mention")
                mentions += len(m)
                mentions_taken += len(union & m)
    for key, (tp, proposed, labelled) in counts.items():
        kind, name = key.split(":", 1)
        entry = {
            "true_positives": tp,
            "proposed": proposed,
            "labelled": labelled,
            "precision": round(100 * tp / proposed, 1) if proposed else None,
            "recall": round(100 * tp / labelled, 1) if labelled else None,
        }
        if kind == "judge":
            judge, family = name.split("\t")
            per_judge.setdefault(judge, {})[family] = entry
        else:
            (per_rule if kind == "rule" else per_family)[name] = entry
    for rule in proposer.ruleset.rules:
        per_rule[rule.name]["atom"] = rule.atom
        per_rule[rule.name]["measured_against"] = groups[rule.atom][0]
    return {
        "rows": len(labels),
        "judges": sorted({r["judge"] for r in labels}),
        "threshold": threshold,
        "rules": per_rule,
        "families": per_family,
        "by_judge": {j: per_judge[j] for j in sorted(per_judge)},
        "mentions_called_support": {
            "labelled_mentions": mentions,
            "proposed_as_said": mentions_taken,
        },
    }


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:5.1f}"


_COUNTED = ("proposed", "correct", "labelled", "precision", "recall")


def _table(leading: tuple[str, ...], rows: Iterable[tuple[tuple[str, ...], dict]]) -> list[str]:
    """A Markdown table after a blank line: the ``leading`` columns, then the figures every
    table ends with, right-aligned."""
    out = [
        "",
        "| " + " | ".join(leading + _COUNTED) + " |",
        "|" + "---|" * len(leading) + "---:|" * len(_COUNTED),
    ]
    for cells, f in rows:
        counts = (f["proposed"], f["true_positives"], f["labelled"])
        pcts = (_pct(f["precision"]), _pct(f["recall"]))
        out.append("| " + " | ".join(cells + tuple(map(str, counts)) + pcts) + " |")
    return out


def render(figures: dict) -> str:
    lines = [
        f"{figures['rows']} hand-labelled explanations ({', '.join(figures['judges'])}), "
        f"threshold {figures['threshold']}",
    ]
    lines += _table(
        ("rule", "atom", "against"),
        (
            ((f"`{name}`", f"`{f['atom']}`", str(f["measured_against"])), f)
            for name, f in figures["rules"].items()
        ),
    )
    lines += _table(
        ("atom family (rules together)",),
        (((f"`{name}`",), f) for name, f in figures["families"].items()),
    )
    lines += _table(
        ("judge", "atom family"),
        (
            ((judge, f"`{name}`"), f)
            for judge, families in figures["by_judge"].items()
            for name, f in families.items()
            if f["proposed"] or f["labelled"]
        ),
    )
    m = figures["mentions_called_support"]
    lines += [
        "",
        f"citations labelled as mere mentions: {m['labelled_mentions']}, "
        f"of which proposed as support: {m['proposed_as_said']}",
    ]
    return "\n".join(lines) + "\n"


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--labels",
    required=True,
    multiple=True,
    help="the hand labels (JSON Lines); repeat to measure several sets, one table each",
)
@click.option("--rules", help="a rule file (default: the built-in WiCE rules)")
@click.option("--threshold", type=float, default=0.5, show_default=True)
@click.option("--wice", help="folder of the WiCE judge outputs: re-read every response")
@click.option("--json", "json_out", help="also write the figures here")
def main(
    labels: tuple[str, ...], rules: str | None, threshold: float, wice: str | None, json_out: str
) -> None:
    """Measure the judge-side rules against hand labels: 0, or 1 when the labels do not
    match the responses they were made on (2, click's, for a usage error)."""
    sets = [load_labels(path) for path in labels]
    if wice:
        bad = [b for got in sets for b in check_sources(got, wice)]
        if bad:
            click.echo("labels do not match the source at: " + ", ".join(bad), err=True)
            sys.exit(1)
    proposer = JudgeRules(load_rules(rules) if rules else None)
    figures = {
        path: measure(got, proposer, threshold) for path, got in zip(labels, sets, strict=True)
    }
    click.echo("\n".join(f"{path}:\n\n{render(f)}" for path, f in figures.items()), nl=False)
    if json_out:
        Path(json_out).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(prog_name="python -m unmask.propose.measure_judge")
