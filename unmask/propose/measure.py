"""Measure the claim proposer against WiCE's human labels, on a dev half and a held-out half.

Contract: ``python -m unmask.propose.measure --gold gold_claim_test.jsonl`` prints, for each
half, sentence precision / recall / F1 (micro over sentences, macro over claims), label
accuracy with a confusion matrix, and the precision / coverage curve over the confidence
threshold, for the proposer and two baselines (every shown sentence; the single best lexical
match). ``--json FILE`` writes the same figures. The split is by claim (all chunks of one
claim fall in the same half), drawn with a fixed seed, so the figures are reproducible.
``--tune`` prints the grid search over the method's constants on the dev half only.

Gold: ``meta.oracle_idx`` holds sentence ids of the source document, not positions in
``evidence``; ``meta.chunk_idx[k]`` is the id of ``evidence[k]``, so a gold id ``g`` is the
position ``chunk_idx.index(g)``. Gold ids not among the shown sentences cannot be proposed and
are left out (counted in the output). A ``not_supported`` claim has no gold sentences.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
import sys
from collections import Counter
from collections.abc import Callable, Iterable

import click

from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.files import read_text
from unmask.plumbing.frozen import frozen
from unmask.propose.claims import (
    DEFAULT_PARAMS,
    DEFAULT_THRESHOLD,
    LABELS,
    Alignment,
    Match,
    Params,
    align,
    decide,
    idf_weights,
    search,
    terms,
)

SEED = 13
THRESHOLDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


@frozen
class Gold:
    claim: str
    evidence: list[str]
    label: str
    supporting: frozenset[int]
    group: str  # the claim's id: its chunks share it
    unshown: int  # gold ids that are not among the shown sentences


Prediction = Alignment  # what a method proposes for one row, before any threshold


def load_gold(path: str) -> list[Gold]:
    rows = []
    # a regular file only, bounded (a named pipe is an error, not a wait)
    for line in read_text(path).splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        meta = r["meta"]
        position = {sid: k for k, sid in enumerate(meta["chunk_idx"])}
        oracle = meta.get("oracle_idx") or []
        rows.append(
            Gold(
                claim=r["claim"],
                evidence=list(r["evidence"]),
                label=r["label"],
                supporting=frozenset(position[g] for g in oracle if g in position),
                group=meta["id"],
                unshown=sum(g not in position for g in oracle),
            )
        )
    return rows


def split(rows: list[Gold], seed: int = SEED) -> tuple[list[Gold], list[Gold]]:
    """Dev and held-out halves, by claim id, so no claim's chunks land in both."""
    groups = sorted({r.group for r in rows})
    random.Random(seed).shuffle(groups)
    dev = set(groups[: len(groups) // 2])
    return [r for r in rows if r.group in dev], [r for r in rows if r.group not in dev]


# --- methods -------------------------------------------------------------------------------

Method = Callable[[Gold], Prediction]


def proposer(params: Params = DEFAULT_PARAMS, label_confidence=None) -> Method:
    def run(g: Gold) -> Prediction:
        return align(g.claim, g.evidence, params=params, label_confidence=label_confidence)

    return run


def _baseline(g: Gold, picked: Iterable[int], label: str) -> Prediction:
    matches = tuple(Match(i, 0, len(g.evidence[i]), g.evidence[i], 1.0) for i in picked)
    return Alignment(matches, label, 1.0, 1.0)


def all_shown(label: str) -> Method:
    """Baseline: every shown sentence supports; the label is the dev half's commonest."""
    return lambda g: _baseline(g, range(len(g.evidence)), label)


def bm25_scores(claim: str, evidence: list[str], k1: float = 1.2, b: float = 0.75) -> list[float]:
    query = terms(claim)
    docs = [terms(s) for s in evidence]
    idf = idf_weights(query, [set(d) for d in docs])
    avg = sum(len(d) for d in docs) / max(len(docs), 1) or 1.0
    scores = []
    for d in docs:
        tf = Counter(d)
        norm = k1 * (1 - b + b * len(d) / avg)
        scores.append(sum(idf[t] * tf[t] * (k1 + 1) / (tf[t] + norm) for t in idf if t in tf))
    return scores


def best_match(label: str) -> Method:
    """Baseline: the one sentence with the highest BM25 score (the first on ties)."""

    def run(g: Gold) -> Prediction:
        scores = bm25_scores(g.claim, g.evidence)
        top = max(range(len(scores)), key=lambda i: (scores[i], -i)) if scores else None
        return _baseline(g, [] if top is None or scores[top] <= 0 else [top], label)

    return run


# --- figures -------------------------------------------------------------------------------


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


def score(rows: list[Gold], preds: list[Prediction]) -> dict:
    """Sentence figures over every row, label figures over the rows given a label.

    Micro: true positives, proposed and gold sentences summed over rows. Macro: the mean over
    rows that have gold sentences of each row's precision, recall and F1 (a row with nothing
    proposed scores 0 on all three). Label accuracy counts only rows that did not abstain;
    ``coverage`` is their share.
    """
    tp = n_pred = n_gold = 0
    macro = [0.0, 0.0, 0.0]
    n_macro = 0
    confusion = {g: {p: 0 for p in LABELS} for g in LABELS}
    answered = 0
    for g, p in zip(rows, preds, strict=True):
        proposed = set(p.supporting)
        hit = len(g.supporting & proposed)
        tp, n_pred, n_gold = tp + hit, n_pred + len(proposed), n_gold + len(g.supporting)
        if g.supporting:
            cp, cr = _ratio(hit, len(proposed)), _ratio(hit, len(g.supporting))
            macro = [macro[0] + cp, macro[1] + cr, macro[2] + _f1(cp, cr)]
            n_macro += 1
        if p.label is not None:
            answered += 1
            confusion[g.label][p.label] += 1
    precision, recall = _ratio(tp, n_pred), _ratio(tp, n_gold)
    correct = sum(confusion[k][k] for k in LABELS)
    return {
        "rows": len(rows),
        "micro": {"precision": precision, "recall": recall, "f1": _f1(precision, recall)},
        "macro": {
            "precision": _ratio(macro[0], n_macro),
            "recall": _ratio(macro[1], n_macro),
            "f1": _ratio(macro[2], n_macro),
        },
        "counts": {"true_positive": tp, "proposed": n_pred, "gold": n_gold},
        "labelled": answered,
        "coverage": _ratio(answered, len(rows)),
        "label_accuracy": _ratio(correct, answered),
        "confusion": confusion,
    }


def curve(rows: list[Gold], preds: list[Prediction], thresholds: Iterable[float]) -> list[dict]:
    """The figures when every proposal whose confidence is below ``t`` abstains."""
    out = []
    for t in thresholds:
        s = score(rows, [p.at(t) for p in preds])
        out.append(
            {
                "threshold": t,
                "sentences_proposed": s["counts"]["proposed"],
                "precision": s["micro"]["precision"],
                "recall": s["micro"]["recall"],
                "label_coverage": s["coverage"],
                "label_accuracy": s["label_accuracy"],
            }
        )
    return out


def evaluate(rows: list[Gold], methods: dict[str, Method]) -> dict:
    out = {}
    for name, method in methods.items():
        preds = [method(g) for g in rows]
        out[name] = {**score(rows, preds), "curve": curve(rows, preds, THRESHOLDS)}
    return out


def majority_label(rows: list[Gold]) -> str:
    counts = Counter(r.label for r in rows)
    return max(LABELS, key=lambda k: (counts[k], -LABELS.index(k)))


def measure(rows: list[Gold], params: Params = DEFAULT_PARAMS, seed: int = SEED) -> dict:
    dev, held = split(rows, seed)
    label = majority_label(dev)
    at_default = proposer(params)
    methods = {
        "proposer": proposer(params),
        f"proposer, threshold {DEFAULT_THRESHOLD}": lambda g: at_default(g).at(DEFAULT_THRESHOLD),
        "all shown": all_shown(label),
        "best match": best_match(label),
    }
    return {
        "seed": seed,
        "params": dataclasses.asdict(params),
        "majority_label_dev": label,
        "halves": {
            name: {
                "claims": len(half),
                "distinct_claims": len({r.group for r in half}),
                "gold_sentences_not_shown": sum(r.unshown for r in half),
                "methods": evaluate(half, methods),
            }
            for name, half in (("dev", dev), ("held-out", held))
        },
    }


def tune(rows: list[Gold]) -> tuple[list[tuple[float, float, Params]], dict]:
    """Grid search on the dev half, then the label confidence table for the best constants.

    The objective is sentence micro F1 plus label accuracy. Returns the grid, best first, and
    the table: for each label and tenth of coverage, how often that label was right on these
    rows, Laplace-smoothed ((right + 1) / (proposed + 2)).
    """
    grid = []
    base = DEFAULT_PARAMS
    for cover_gain in (0.01, 0.02, 0.05):
        found = [search(g.claim, g.evidence, cover_gain, base.max_sentences) for g in rows]
        for support_gain in (0.0, 0.02, 0.03, 0.05, 0.1):
            for supported_at in (0.65, 0.7, 0.75, 0.8, 0.85):
                for part, numbers in itertools.product((0.0, 0.5), (False, True)):
                    for ns in (0.05, 0.1, 0.15, 0.2):
                        p = dataclasses.replace(
                            base,
                            material_must_match=numbers,
                            cover_gain=cover_gain,
                            support_gain=support_gain,
                            supported_at=supported_at,
                            part_supported_at=part,
                            not_supported_below=ns,
                        )
                        preds = [decide(f, g.evidence, p) for f, g in zip(found, rows, strict=True)]
                        s = score(rows, preds)
                        grid.append((s["micro"]["f1"], s["label_accuracy"], p))
    grid.sort(key=lambda x: (-(x[0] + x[1]), dataclasses.astuple(x[2])))
    best = grid[0][2]
    right = {k: [0] * 10 for k in LABELS}
    seen = {k: [0] * 10 for k in LABELS}
    for g in rows:
        one = search(g.claim, g.evidence, best.cover_gain, best.max_sentences)
        a = decide(one, g.evidence, best)
        if a.label is None:
            continue
        d = min(int(one.coverage * 10), 9)
        seen[a.label][d] += 1
        right[a.label][d] += a.label == g.label
    table = {
        k: tuple(round((right[k][d] + 1) / (seen[k][d] + 2), 2) for d in range(10)) for k in LABELS
    }
    return grid, table


# --- text ----------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{100 * x:5.1f}"


def render(figures: dict) -> str:
    lines = [
        f"split: by claim, seed {figures['seed']}; baseline label: "
        f"`{figures['majority_label_dev']}` (commonest on dev)",
    ]
    for half, h in figures["halves"].items():
        lines += [
            "",
            f"## {half}: {h['claims']} rows, {h['distinct_claims']} claims, "
            f"{h['gold_sentences_not_shown']} gold sentence(s) not shown",
            "",
            "| method | micro P | micro R | micro F1 | macro P | macro R | macro F1 | label acc |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for name, m in h["methods"].items():
            mi, ma = m["micro"], m["macro"]
            lines.append(
                f"| {name} | {_pct(mi['precision'])} | {_pct(mi['recall'])} | {_pct(mi['f1'])} "
                f"| {_pct(ma['precision'])} | {_pct(ma['recall'])} | {_pct(ma['f1'])} "
                f"| {_pct(m['label_accuracy'])} |"
            )
        m = h["methods"]["proposer"]
        lines += ["", "confusion (rows gold, columns proposed):", ""]
        lines.append("| gold \\ proposed | " + " | ".join(LABELS) + " |")
        lines.append("|---" + "|---:" * len(LABELS) + "|")
        for g in LABELS:
            lines.append(f"| {g} | " + " | ".join(str(m["confusion"][g][p]) for p in LABELS) + " |")
        lines += [
            "",
            "| threshold | sentences proposed | precision | recall | labelled | label acc |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        for c in m["curve"]:
            lines.append(
                f"| {c['threshold']:.1f} | {c['sentences_proposed']} | {_pct(c['precision'])} "
                f"| {_pct(c['recall'])} | {_pct(c['label_coverage'])} "
                f"| {_pct(c['label_accuracy'])} |"
            )
    return "\n".join(lines)


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]},
    help=__doc__.split("\n\n", 1)[0].strip() if __doc__ else None,
)
@click.option("--gold", required=True, help="WiCE gold_claim_test.jsonl")
@click.option("--seed", type=int, default=SEED, show_default=True, help="split seed")
@click.option("--json", "json_out", help="also write the figures to this file")
@click.option("--tune", "tune_only", is_flag=True, help="grid search on the dev half only")
def main(gold: str, seed: int, json_out: str | None, tune_only: bool) -> None:
    """Measure the claim proposer: 0, or 4 when the gold file cannot be read (2, click's,
    for a usage error)."""
    try:
        rows = load_gold(gold)
    except UnmaskError as exc:
        click.echo(f"error: {exc.diagnostics[0].message}", err=True)
        sys.exit(4)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        click.echo(f"error: cannot read gold file `{gold}`: {exc}", err=True)
        sys.exit(4)
    if tune_only:
        dev, _ = split(rows, seed)
        grid, table = tune(dev)
        for f1, acc, p in grid[:15]:
            click.echo(f"f1 {f1:.4f}  acc {acc:.4f}  {p}")
        click.echo("LABEL_CONFIDENCE = {")
        for k, row in table.items():
            click.echo(f"    {k!r}: {row},")
        click.echo("}")
        return
    figures = measure(rows, seed=seed)
    click.echo(render(figures))
    if json_out:
        with open(json_out, "w", encoding="utf-8") as fh:
            json.dump(figures, fh, indent=2, sort_keys=True)
            fh.write("\n")


if __name__ == "__main__":
    main(prog_name="python -m unmask.propose.measure")
