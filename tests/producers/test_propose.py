"""`unmask propose`: the proposer registry, the lexical claim proposer on made-up claims whose
answer is plain, the `claims` command's input errors and exit statuses, byte-for-byte
determinism, and the WiCE measurement checked against a brute-force recount on a slice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import TEST_DATA
from tests.wice_data import WICE_DIR, needs_wice
from unmask.cli.main import main
from unmask.plumbing.diagnostics import UnmaskError
from unmask.propose import _REGISTRY as REGISTRY
from unmask.propose import CLAIM_SUPPORT, By, Fill, Proposer, available, create, register
from unmask.propose.claims import NOT_SUPPORTED, PARTIAL, SUPPORTED, Params, align, terms
from unmask.propose.measure import (
    LABELS,
    THRESHOLDS,
    all_shown,
    best_match,
    curve,
    load_gold,
    majority_label,
    proposer,
    score,
    split,
)
from unmask.propose.measure import main as measure_main

DATA = TEST_DATA / "propose"
WICE = None if WICE_DIR is None else WICE_DIR / "gold_claim_test.jsonl"


CLI = "import sys; from unmask.cli.main import main; sys.argv[0] = 'unmask'; main()"


def run(*args: str, stdin: str | None = None):
    return CliRunner().invoke(main, ["propose", *args], input=stdin)


def jsonl(tmp_path: Path, *lines: str) -> str:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


# --- the method on claims whose answer is plain ---------------------------------------------


def test_one_sentence_of_three_supports():
    a = align(
        "The Eiffel Tower was completed in 1889 in Paris.",
        [
            "The Louvre is a museum.",
            "Construction of the Eiffel Tower in Paris was completed in 1889.",
            "Paris has many bridges.",
        ],
    )
    assert a.supporting == (1,)
    assert a.label == SUPPORTED


def test_a_claim_of_two_facts_takes_both_sentences():
    a = align(
        "Marie Curie won the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry "
        "in 1911.",
        [
            "Her husband was Pierre.",
            "In 1903 Marie Curie won the Nobel Prize in Physics.",
            "Marie Curie received the Nobel Prize in Chemistry in 1911.",
            "The weather was cold.",
        ],
    )
    assert a.supporting == (1, 2)
    assert a.label == SUPPORTED


def test_half_a_claim_is_partially_supported_by_the_sentence_that_covers_it():
    a = align(
        "Ada Lovelace wrote the first computer program and invented the telephone.",
        ["Ada Lovelace wrote the first computer program.", "The weather was cold."],
    )
    assert a.supporting == (0,)
    assert a.label == PARTIAL


def test_unrelated_evidence_supports_nothing():
    a = align(
        "The Amazon river flows through Brazil.",
        ["Mount Everest is the tallest mountain.", "Tokyo is a large city."],
    )
    assert a.supporting == ()
    assert a.label == NOT_SUPPORTED


def test_dates_match_across_month_abbreviations_and_full_names():
    # `December` once lost its `er` to suffix stripping and no longer met `Dec.`
    assert terms("December 20, 1998") == terms("Dec. 20, 1998") == ["december", "20", "1998"]
    a = align("He died on December 20, 1998.", ["Born: July 11, 1909", "Died: Dec. 20, 1998"])
    assert a.supporting == (1,)
    assert a.label == SUPPORTED


def test_a_number_no_sentence_has_keeps_a_claim_from_supported():
    claim = (
        "The Golden Gate Bridge in San Francisco opened to traffic in 1937 after four years "
        "of construction."
    )
    evidence = [
        "The Golden Gate Bridge in San Francisco opened to traffic after four years of "
        "construction.",
        "Fog is common in the bay.",
    ]
    assert align(claim, evidence).label == PARTIAL
    lenient = Params(material_must_match=False)
    assert align(claim, evidence, params=lenient).label == SUPPORTED
    assert align(claim, [*evidence, "It opened in 1937."]).label == SUPPORTED


def test_numbers_accents_and_thousands_separators_are_made_canonical():
    assert terms("Ryūdai has 1,300 staff") == terms("Ryudai has 1300 staff")
    assert terms("fifty films") == terms("50 films")


def test_every_quote_is_the_exact_slice_of_its_sentence():
    evidence = [
        "Intro.",
        "In 1903 Marie Curie won the Nobel Prize in Physics (with Pierre).",
        "Marie Curie received the Nobel Prize in Chemistry in 1911!",
    ]
    a = align("Marie Curie won Nobel Prizes in Physics (1903) and Chemistry (1911).", evidence)
    assert a.matches
    for m in a.matches:
        assert evidence[m.sentence][m.start : m.end] == m.quote
        assert 0 <= m.start < m.end <= len(evidence[m.sentence])
        assert 0.0 <= m.confidence <= 1.0


def test_below_the_threshold_it_abstains():
    claim = "Ada Lovelace wrote the first computer program and invented the telephone."
    evidence = ["Ada Lovelace wrote the first computer program.", "The weather was cold."]
    full = align(claim, evidence)
    none = align(claim, evidence, threshold=1.0)
    assert full.label is not None and full.supporting
    assert none.label is None and none.supporting == ()
    # a threshold between the label's and the sentence's confidence keeps only the sentence
    middle = align(claim, evidence, threshold=(full.confidence + full.matches[0].confidence) / 2)
    assert full.confidence < full.matches[0].confidence
    assert middle.label is None and middle.supporting == (0,)


@pytest.mark.parametrize(
    ("claim", "evidence"), [("Something happened.", []), ("The, of and.", ["Anything at all."])]
)
def test_nothing_to_align_abstains(claim, evidence):
    a = align(claim, evidence)
    assert a.label is None and a.supporting == ()


def test_ties_go_to_the_earliest_sentence():
    a = align("Cats purr.", ["Cats purr loudly.", "Cats purr softly."])
    assert a.supporting == (0,)


# --- the registry -------------------------------------------------------------------------


def test_the_claim_proposer_is_registered_with_what_it_fills():
    assert "claims-lexical" in available(CLAIM_SUPPORT)
    p = create("claims-lexical", CLAIM_SUPPORT)
    assert p.by == By("rule", "claims-lexical/2", reviewed=False)
    assert p.by.to_json() == {"kind": "rule", "name": "claims-lexical/2", "reviewed": False}


def test_an_unknown_proposer_says_did_you_mean():
    with pytest.raises(UnmaskError) as err:
        create("claim-lexical")
    (d,) = err.value.diagnostics
    assert d.code == "unknown-proposer"
    assert d.message == "unknown proposer `claim-lexical`"
    assert d.help.startswith("did you mean `claims-lexical`? the proposers are ")


class _JudgeRule(Proposer):
    name = "judge-test"
    kind = "rule"
    version = 3
    fills = (Fill("judge", "citations"),)
    summary = "a stand-in for a judge-side rule"


@pytest.fixture
def judge_rule():
    register("judge-test", _JudgeRule)
    yield
    del REGISTRY["judge-test"]


def test_a_proposer_that_does_not_fill_the_task_is_refused(judge_rule):
    assert "judge-test" not in available(CLAIM_SUPPORT)
    assert available(Fill("judge", "citations")) == ("judge-test",)
    with pytest.raises(UnmaskError) as err:
        create("judge-test", CLAIM_SUPPORT)
    assert err.value.diagnostics[0].code == "proposer-cannot-fill"
    assert "`claims-lexical`" in err.value.diagnostics[0].help
    res = run("claims", str(DATA / "claims.jsonl"), "--proposer", "judge-test")
    assert res.exit_code == 2
    assert "does not fill context atoms for `claim-support`" in res.stderr


def test_register_refuses_a_taken_name_unless_told_to_replace(judge_rule):
    with pytest.raises(UnmaskError) as err:
        register("judge-test", _JudgeRule)
    assert err.value.diagnostics[0].code == "duplicate-proposer"
    register("judge-test", _JudgeRule, replace=True)


def test_list_names_every_proposer_and_what_it_fills():
    res = run("list")
    assert res.exit_code == 0
    assert res.stdout.startswith("claims-lexical (rule/2): context claim-support: ")


# --- the `claims` command -----------------------------------------------------------------


def test_claims_output_is_pinned_byte_for_byte():
    res = run("claims", str(DATA / "claims.jsonl"))
    assert res.exit_code == 0, res.stderr
    assert res.stdout == (DATA / "claims.expected.jsonl").read_text(encoding="utf-8")


def test_claims_output_has_the_fixed_fields_and_real_quotes():
    rows = [json.loads(x) for x in (DATA / "claims.jsonl").read_text().splitlines()]
    res = run("claims", str(DATA / "claims.jsonl"), "--threshold", "0")
    out = [json.loads(x) for x in res.stdout.splitlines()]
    assert len(out) == len(rows)
    for row, o in zip(rows, out, strict=True):
        assert o["id"] == row.get("id")
        assert o["supporting"] == sorted(o["supporting"])
        assert o["supporting"] == [e["sentence"] for e in o["evidence"]]
        assert o["label"] in (*LABELS, None)
        assert o["by"] == {"kind": "rule", "name": "claims-lexical/2", "reviewed": False}
        for e in o["evidence"]:
            assert row["evidence"][e["sentence"]][e["start"] : e["end"]] == e["quote"]


def test_same_input_same_bytes_whatever_the_hash_seed(tmp_path):
    inputs = [str(DATA / "claims.jsonl")]
    if WICE is not None:
        lines = WICE.read_text(encoding="utf-8").splitlines()[::25]
        inputs.append(jsonl(tmp_path, *lines))
    for path in inputs:
        outs = set()
        for seed in ("1", "2", "random"):
            env = {**os.environ, "PYTHONHASHSEED": seed}
            proc = subprocess.run(
                [sys.executable, "-c", CLI, "propose", "claims", path],
                capture_output=True,
                env=env,
                check=False,
            )
            assert proc.returncode == 0, proc.stderr
            outs.add(proc.stdout)
        assert len(outs) == 1


def test_bad_lines_are_reported_counted_and_do_not_stop_the_rest(tmp_path):
    path = jsonl(
        tmp_path,
        '{"id": "ok", "claim": "Cats purr.", "evidence": ["Cats purr."]}',
        "",
        "not json",
        '{"id": "a", "evidence": []}',
        '{"id": "b", "claim": "x", "evidence": "one sentence"}',
        '{"id": "c", "claim": "x", "evidence": ["fine", 5]}',
        '{"id": [1], "claim": "x", "evidence": []}',
        "[1, 2]",
        '{"claim": "x", "evidence": [NaN]}',
        '{"id": "last", "claim": "Dogs bark.", "evidence": ["Dogs bark."]}',
    )
    res = run("claims", path)
    assert res.exit_code == 4
    out = [json.loads(x) for x in res.stdout.splitlines()]
    assert [o["id"] for o in out] == ["ok", None, "a", "b", "c", None, None, None, "last"]
    assert out[0]["supporting"] == [0] and out[-1]["supporting"] == [0]
    errors = [o for o in out if "error" in o]
    assert [o["line"] for o in errors] == [3, 4, 5, 6, 7, 8, 9]
    err = res.stderr.splitlines()
    assert err[0] == f"{path}:3:1: error: not valid JSON: expecting value"
    assert err[1] == f"{path}:4:1: error: missing field `claim`"
    assert err[2] == (
        f"{path}:5:1: error: field `evidence` must be an array of sentences, found a string"
    )
    assert err[3] == f"{path}:6:1: error: field `evidence[1]` must be a string, found a number"
    assert err[4] == f"{path}:7:1: error: field `id` must be a string or an integer, found a list"
    assert err[5] == f"{path}:8:1: error: expected a JSON object, found a list"
    assert err[6].startswith(f"{path}:9:1: error: not valid JSON: `NaN`")
    assert err[-1] == "7 of 9 lines invalid; the rest were proposed for"


def test_a_key_given_twice_is_a_bad_line(tmp_path):
    """Found by tests/fuzz/test_readers_fuzz.py: input lines were read by `json.loads`, which
    keeps the last of a key's two values, so the proposal was made for a claim chosen by
    guess. It is a bad line now, and the rest are read."""
    path = jsonl(
        tmp_path,
        '{"id": "a", "claim": "Dogs bark.", "claim": "Cats purr.", "evidence": ["Cats purr."]}',
        '{"id": "c", "claim": "Cats purr.", "evidence": ["Cats purr."]}',
    )
    res = run("claims", path)
    assert res.exit_code == 4
    out = [json.loads(x) for x in res.stdout.splitlines()]
    assert [(o["id"], o.get("line")) for o in out] == [(None, 1), ("c", None)]
    assert res.stderr.splitlines()[0] == (
        f"{path}:1:1: error: not valid JSON: key `claim` occurs more than once in this object"
    )
    assert out[1]["supporting"] == [0]


def test_a_line_that_is_not_utf8_is_one_bad_line(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(
        b'{"claim": "\xff", "evidence": []}\n{"claim": "Cats purr.", "evidence": ["Cats purr."]}\n'
    )
    res = run("claims", str(path))
    assert res.exit_code == 4
    assert res.stderr.splitlines()[0] == f"{path}:1:1: error: not UTF-8 (byte 12)"
    assert json.loads(res.stdout.splitlines()[1])["supporting"] == [0]


def test_an_overlong_line_is_skipped_unread_and_the_next_is_proposed_for(tmp_path, monkeypatch):
    from unmask.propose import lines

    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 64)
    long = json.dumps({"claim": "x" * 300, "evidence": []})
    path = jsonl(tmp_path, long, '{"claim": "Cats purr.", "evidence": ["Cats purr."]}')
    res = run("claims", path)
    assert res.exit_code == 4
    assert res.stderr.splitlines()[0] == f"{path}:1:1: error: line longer than 64 bytes"
    out = [json.loads(x) for x in res.stdout.splitlines()]
    assert out[0]["line"] == 1 and out[1]["supporting"] == [0]


def test_a_byte_order_mark_before_the_first_line_is_ignored(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"claim": "Cats purr.", "evidence": ["Cats purr."]}\n')
    res = run("claims", str(path))
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["supporting"] == [0]


def test_a_lone_surrogate_is_written_escaped():
    line = '{"id": "\\ud800", "claim": "Cats purr.", "evidence": ["Cats \\ud800 purr."]}'
    res = run("claims", "-", stdin=line + "\n")
    assert res.exit_code == 0
    assert '"id": "\\ud800"' in res.stdout


def test_unreadable_input_exits_4_and_usage_errors_exit_2(tmp_path):
    res = run("claims", str(tmp_path / "missing.jsonl"))
    assert res.exit_code == 4
    assert "cannot read" in res.stderr and "no such file or directory" in res.stderr
    res = run("claims", str(DATA / "claims.jsonl"), "--threshold", "1.5")
    assert res.exit_code == 2
    res = run("claims", str(DATA / "claims.jsonl"), "--proposer", "claim-lexical")
    assert res.exit_code == 2
    assert "did you mean `claims-lexical`?" in res.stderr


def test_output_file_option(tmp_path):
    out = tmp_path / "out.jsonl"
    res = run("claims", str(DATA / "claims.jsonl"), "-o", str(out))
    assert res.exit_code == 0 and res.stdout == ""
    assert out.read_text(encoding="utf-8") == (DATA / "claims.expected.jsonl").read_text(
        encoding="utf-8"
    )


# --- the measurement on a WiCE slice, recounted by brute force ------------------------------


@pytest.fixture(scope="module")
def wice_slice():
    assert WICE is not None
    raw = [json.loads(x) for x in WICE.read_text(encoding="utf-8").splitlines()[::10]]
    return raw, load_gold(str(WICE))[::10]


def _brute_gold(r: dict) -> set[int]:
    # gold ids are document sentence ids: position k shows id chunk_idx[k]
    oracle = r["meta"].get("oracle_idx") or []
    return {k for k, sid in enumerate(r["meta"]["chunk_idx"]) if sid in oracle}


@needs_wice
@pytest.mark.parametrize("method", ["proposer", "all shown", "best match"])
def test_figures_agree_with_a_brute_force_recount(wice_slice, method):
    raw, rows = wice_slice
    m = {
        "proposer": proposer(),
        "all shown": all_shown(PARTIAL),
        "best match": best_match(PARTIAL),
    }[method]
    preds = [m(g) for g in rows]
    s = score(rows, preds)
    tp = fp = fn = 0
    per_claim = []
    confusion = {(a, b): 0 for a in LABELS for b in LABELS}
    for r, p in zip(raw, preds, strict=True):
        gold = _brute_gold(r)
        got = set(p.supporting)
        for k in range(len(r["evidence"])):
            tp += k in gold and k in got
            fp += k not in gold and k in got
            fn += k in gold and k not in got
        if gold:
            hit = len(gold & got)
            cp = hit / len(got) if got else 0.0
            cr = hit / len(gold)
            per_claim.append((cp, cr, 2 * cp * cr / (cp + cr) if cp + cr else 0.0))
        if p.label is not None:
            confusion[r["label"], p.label] += 1
    assert s["counts"] == {"true_positive": tp, "proposed": tp + fp, "gold": tp + fn}
    assert s["micro"]["precision"] == pytest.approx(tp / (tp + fp))
    assert s["micro"]["recall"] == pytest.approx(tp / (tp + fn))
    for k, name in enumerate(("precision", "recall", "f1")):
        expect = sum(c[k] for c in per_claim) / len(per_claim)
        assert s["macro"][name] == pytest.approx(expect)
    assert {(a, b): s["confusion"][a][b] for a in LABELS for b in LABELS} == confusion
    right = sum(confusion[a, a] for a in LABELS)
    assert s["label_accuracy"] == pytest.approx(right / sum(confusion.values()))
    if method == "all shown":
        assert s["micro"]["recall"] == 1.0
    if method == "best match":
        assert all(len(p.supporting) <= 1 for p in preds)


@needs_wice
def test_the_curve_abstains_more_as_the_threshold_rises(wice_slice):
    _, rows = wice_slice
    preds = [proposer()(g) for g in rows]
    points = curve(rows, preds, THRESHOLDS)
    assert points[0]["threshold"] == 0.0
    assert points[0]["precision"] == score(rows, preds)["micro"]["precision"]
    proposed = [p["sentences_proposed"] for p in points]
    labelled = [p["label_coverage"] for p in points]
    assert proposed == sorted(proposed, reverse=True) and labelled == sorted(labelled, reverse=True)
    assert points[-1]["sentences_proposed"] < points[0]["sentences_proposed"]


@needs_wice
def test_the_split_is_by_claim_fixed_and_complete():
    rows = load_gold(str(WICE))
    dev, held = split(rows)
    assert {r.group for r in dev}.isdisjoint({r.group for r in held})
    assert len(dev) + len(held) == len(rows)
    assert split(rows) == (dev, held)
    assert majority_label(dev) == PARTIAL


@needs_wice
def test_the_measure_command_writes_the_figures_it_prints(wice_slice, tmp_path):
    lines = WICE.read_text(encoding="utf-8").splitlines()[::10]
    gold = tmp_path / "slice.jsonl"
    gold.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "figures.json"
    result = CliRunner().invoke(measure_main, ["--gold", str(gold), "--json", str(out)])
    assert result.exit_code == 0, result.stderr
    printed = result.stdout
    figures = json.loads(out.read_text(encoding="utf-8"))
    _, rows = wice_slice
    dev, held = split(rows)
    for name, half in (("dev", dev), ("held-out", held)):
        got = figures["halves"][name]["methods"]["proposer"]
        expect = score(half, [proposer()(g) for g in half])
        assert got["counts"] == expect["counts"]
        assert f"{100 * got['micro']['f1']:5.1f}" in printed


def test_the_measure_command_names_an_unreadable_gold_file(tmp_path):
    result = CliRunner().invoke(measure_main, ["--gold", str(tmp_path / "none.jsonl")])
    assert result.exit_code == 4
    assert "none.jsonl" in result.stderr and result.stdout == ""


def test_the_measure_command_without_gold_is_a_usage_error():
    result = CliRunner().invoke(measure_main, [])
    assert result.exit_code == 2 and "--gold" in result.stderr
    result = CliRunner().invoke(measure_main, ["--gold", "g.jsonl", "--seed", "x"])
    assert result.exit_code == 2 and "--seed" in result.stderr
    assert "--tune" in CliRunner().invoke(measure_main, ["--help"]).stdout
