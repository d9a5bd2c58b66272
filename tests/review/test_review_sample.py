"""`unmask review` beyond the findings: the readings passing checks rest on, ranked with the
findings' (a wrong TRUE can hide a break), and a random sample of readings, stratified by
reader and blind or not, exported and applied back with its draw kept for calibration."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
RAG = ROOT / "examples" / "rag"
ALIGNER = {"kind": "model", "name": "claims-lexical", "version": "2", "reviewed": False}
# r8's judge calls the commander claim supported (the rubric says no passage backs it) and a
# proposer reads "Its crew were Neil Armstrong" as backing it: the wrong TRUE hides the break
CREW = "Its crew were Neil Armstrong, Buzz Aldrin and Michael Collins."
PLANTED = "backed(commander)"


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def lines_of(path: str | Path) -> list[dict]:
    return [json.loads(x) for x in Path(path).read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def rag_built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quickstart's replays (import, then the person's readings), r8 broken as above."""
    work = tmp_path_factory.mktemp("rag") / "rag"
    shutil.copytree(RAG, work)
    rows = [json.loads(x) for x in (work / "judgments.jsonl").read_text().splitlines()]
    r8 = next(r for r in rows if r["id"] == "r8")
    r8["output"]["verdict"] = "SUPPORTED"
    r8["output"]["atoms"]["said"]["commander"] = {
        "value": "TRUE",
        "quotes": ["Passage [2] lists Neil Armstrong in the crew"],
    }
    (work / "judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["import", "structured", str(work / "judgments.jsonl")]
    r = run(*args, "--protocol", str(work / "rag.proto"), "--out", str(work / "replays"))
    assert r.exit_code == 0, r.output
    hand = ["--from", str(work / "annotations.jsonl"), "--reader", "ana"]
    # annotated into another folder (never the one read), then put in the replays' place
    done = run("annotate", str(work / "replays"), *hand, "--out", str(work / "annotated"))
    assert done.exit_code == 0, done.output
    shutil.rmtree(work / "replays")
    (work / "annotated").rename(work / "replays")
    doc = json.loads((work / "replays" / "r8.json").read_text())
    start = doc["sources"]["context"].index(CREW)
    quote = "Its crew were Neil Armstrong"
    ev = {"source": "context", "start": start, "end": start + len(quote), "quote": quote}
    doc["annotations"].append({"atom": PLANTED, "value": "TRUE", "evidence": [ev], "by": ALIGNER})
    (work / "replays" / "r8.json").write_text(json.dumps(doc, indent=2))
    return work


@pytest.fixture
def rag(rag_built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "rag"
    shutil.copytree(rag_built, work)
    monkeypatch.chdir(work)
    return work


def unreviewed_by_reader() -> Counter:
    """Unreviewed TRUE/FALSE readings per (kind, name, version), read off the replays."""
    out: Counter = Counter()
    for f in sorted(Path("replays").glob("*.json")):
        for a in json.loads(f.read_text())["annotations"]:
            by = a.get("by") or {}
            made = by.get("kind") in ("rule", "model") and not by.get("reviewed", False)
            if made and a["value"] in ("TRUE", "FALSE"):
                out[(by["kind"], by.get("name", ""), by.get("version", ""))] += 1
    return out


# --- what passing checks rest on ---------------------------------------------------------------


def test_a_wrong_true_behind_a_satisfied_check_is_listed(rag: Path) -> None:
    r = run("audit", "replays", "--out", "results.jsonl", "--quiet")
    assert r.exit_code == 0, r.output
    r8 = next(x for x in lines_of("results.jsonl") if x["replay"] == "r8")
    assert r8["overall"] == "SATISFIED"  # the break is hidden by the wrong TRUE
    r = run("review", "results.jsonl", "--export", "review.jsonl")
    assert r.exit_code == 0, r.output
    rows = lines_of("review.jsonl")
    planted = [x for x in rows if x["replay"] == "r8" and x["atom"] == PLANTED]
    assert len(planted) == 1
    assert planted[0]["findings"] == 0 and planted[0]["checks"] == []
    assert planted[0]["passing"] == [  # the explanations (minimal, canonical) name it
        "grounding said(commander) ~> backed(commander)",
        "grounding some_said ~ backed(landed) or backed(commander)",
    ]
    assert planted[0]["current"] == "TRUE" and planted[0]["by"] == ALIGNER
    listed = run("review", "results.jsonl", "--list")
    assert f"{PLANTED} = TRUE, by model claims-lexical" in listed.output
    assert "2 passing checks rest on it: grounding said(commander) ~> backed(commander)" in (
        listed.output
    )
    # the findings' queue alone does not show it: it is what the old listing missed
    r = run("review", "results.jsonl", "--export", "findings.jsonl", "--findings-only")
    assert r.exit_code == 0, r.output
    only = lines_of("findings.jsonl")
    assert only and all(x["findings"] >= 1 and x["passing"] == [] for x in only)
    assert not [x for x in only if x["atom"] == PLANTED]
    assert PLANTED not in run("review", "results.jsonl", "--list", "--findings-only").output
    # rejecting it brings the break back
    planted[0].update(decision="reject", value="FALSE", reviewer="ana")
    Path("one.jsonl").write_text(json.dumps(planted[0]) + "\n")
    assert run("review", "--apply", "one.jsonl").exit_code == 0
    r = run("check", "replays/r8.json", "--format", "json")
    assert json.loads(r.output)["overall"] == "VIOLATED"


def test_the_listing_ranks_findings_and_passing_checks_together(rag: Path) -> None:
    r = run("review", "replays", "--export", "review.jsonl")
    assert r.exit_code == 0, r.output
    rows = lines_of("review.jsonl")

    def rank(x: dict) -> tuple:
        settled = x["findings"] + len(x["passing"])
        return (-settled, -x["findings"], x["location"], x["atom"])

    assert [rank(x) for x in rows] == sorted(rank(x) for x in rows)
    assert all(x["findings"] == len(x["checks"]) for x in rows)
    assert any(x["passing"] for x in rows) and any(x["checks"] for x in rows)
    # the queue holds the findings' readings, and the passing checks' ones besides
    only = {(x["location"], x["atom"]) for x in lines_of_export(["--findings-only"])}
    assert only == {(x["location"], x["atom"]) for x in rows if x["checks"]}
    assert rows[0]["findings"] + len(rows[0]["passing"]) >= 2
    # and the text listing's last line counts both
    out = run("review", "replays", "--list").output.splitlines()[-1]
    assert out == (
        f"{len(only)} unreviewed annotations behind provisional findings, "
        f"{len(rows) - len(only)} more behind passing checks only"
    )


def lines_of_export(extra: list[str]) -> list[dict]:
    r = run("review", "replays", "--export", "extra.jsonl", *extra)
    assert r.exit_code == 0, r.output
    return lines_of("extra.jsonl")


# --- the audit summary --------------------------------------------------------------------------


def test_the_summary_counts_satisfied_replays_resting_on_unreviewed_annotations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    examples = ROOT / "examples"
    shutil.copy(examples / "factual_claims.proto", tmp_path)
    rule = {"kind": "rule", "name": "r/1", "reviewed": False}
    for name, source, by_rule in (
        ("a1", "case_a", ()),  # satisfied on reviewed readings only
        ("a2", "case_a", "all"),  # satisfied, every reading a rule's
        ("b1", "case_b", ("external",)),  # violated, provisional
    ):
        doc = json.loads((examples / f"{source}.json").read_text())
        doc["id"] = name
        for a in doc["annotations"]:
            if by_rule == "all" or a["atom"] in by_rule:
                a["by"] = rule
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    monkeypatch.chdir(tmp_path)
    r = run(
        "audit",
        "a1.json",
        "a2.json",
        "b1.json",
        "--out",
        "o.jsonl",
        "--summary-json",
        "s.json",
        "--html",
        "pages",
    )
    s = json.loads(Path("s.json").read_text())
    assert s["overall"]["SATISFIED"] == 2 and s["overall"]["VIOLATED"] == 1
    assert s["satisfied"] == {"replays": 2, "unreviewed": 1}
    assert s["findings"]["replays"] == {"confirmed": 0, "provisional": 1}
    text = r.output.splitlines()
    k = text.index(
        "violated replays: 0 confirmed (resting only on reviewed annotations), 1 provisional"
    )
    assert text[k + 1] == "satisfied replays: 2, 1 of them resting on unreviewed annotations"
    page = Path("pages", "index.html").read_text(encoding="utf-8")
    assert "satisfied, on unreviewed annotations: <strong>1</strong>" in page


# --- the sample ---------------------------------------------------------------------------------


def sample(*extra: str, out: str = "s.jsonl") -> list[dict]:
    r = run("review", "replays", "--export", out, *extra)
    assert r.exit_code == 0, r.output
    return lines_of(out)


def test_the_same_seed_draws_the_same_bytes_and_another_seed_another_draw(rag: Path) -> None:
    sample("--sample", "9", "--seed", "7", out="a.jsonl")
    sample("--sample", "9", "--seed", "7", out="b.jsonl")
    sample("--sample", "9", "--seed", "8", out="c.jsonl")
    assert Path("a.jsonl").read_bytes() == Path("b.jsonl").read_bytes()
    drawn = [{(x["location"], x["atom"]) for x in lines_of(f)} for f in ("a.jsonl", "c.jsonl")]
    assert len(drawn[0]) == 9 and drawn[0] != drawn[1]
    # as a listing too, and from the audit's results file the same readings
    assert run("audit", "replays", "--out", "results.jsonl", "--quiet").exit_code == 0
    r = run("review", "results.jsonl", "--sample", "9", "--seed", "7", "--export", "d.jsonl")
    assert r.exit_code == 0, r.output
    assert Path("d.jsonl").read_bytes() == Path("a.jsonl").read_bytes()


def test_the_sample_is_stratified_by_reader_with_equal_allocation(rag: Path) -> None:
    sizes = unreviewed_by_reader()
    assert len(sizes) == 7 and min(sizes.values()) == 1  # the planted reader has one reading
    total = sum(sizes.values())
    for n in (7, 14, 30, total):
        rows = sample("--sample", str(n), "--seed", "3")
        got = Counter(tuple(x["sample"]["stratum"].values()) for x in rows)
        assert sum(got.values()) == n and set(got) <= set(sizes)
        for reader, k in sizes.items():
            assert got[reader] <= k
            if got[reader] < k:  # not exhausted: no reader got more than one more than it
                assert max(got.values()) <= got[reader] + 1, (n, got)
        assert all(x["sample"]["size"] == n and x["sample"]["seed"] == 3 for x in rows)
        for x in rows:
            by = x["by"]
            assert x["sample"]["stratum"] == {
                "kind": by["kind"],
                "name": by.get("name", ""),
                "version": by.get("version", ""),
            }
    assert Counter(
        tuple(x["sample"]["stratum"].values()) for x in sample("--sample", "7", "--seed", "3")
    ) == Counter(dict.fromkeys(sizes, 1))
    # only readings: no reviewed annotation, no UNKNOWN, whatever checks rest on them
    assert all(
        x["current"] in ("TRUE", "FALSE") for x in sample("--sample", str(total), "--seed", "1")
    )


def test_within_a_reader_every_reading_is_as_likely() -> None:
    from unmask.review.sample import Reading, draw

    def reading(i: int, who: str) -> Reading:
        by = {"kind": "rule", "name": who}
        return Reading(f"r{i}.json", f"r{i}", "x", "", "TRUE", by, [], "", {})

    pool = [reading(i, "a") for i in range(10)] + [reading(i, "b") for i in range(3)]
    seen: Counter = Counter()
    seeds = 3000
    for seed in range(seeds):
        got = draw(pool, 5, seed)
        assert Counter(r.by["name"] for r in got) in (Counter(a=3, b=2), Counter(a=2, b=3))
        seen.update(r.location for r in got if r.by["name"] == "a")
    a_drawn = sum(seen.values())
    for i in range(10):  # each of `a`'s ten as often as the others, within sampling error
        assert abs(seen[f"r{i}.json"] / a_drawn - 0.1) < 0.015, seen


def test_a_blind_line_shows_no_value_and_its_answer_is_applied(rag: Path) -> None:
    rows = sample("--sample", "7", "--seed", "5", "--blind")
    for x in rows:
        assert "current" not in x and "explanation" not in x
        assert x["sample"]["blind"] is True
        assert x["description"] and x["sources"] and x["evidence"]
        assert x["decision"] == x["value"] == x["reviewer"] == ""
    listed = run("review", "replays", "--sample", "7", "--seed", "5", "--blind", "--list")
    for x in rows:
        assert f"): {x['atom']}, by " in listed.output  # no ` = VALUE` after the atom
    truth = {}
    for x in rows:
        doc = json.loads(Path(x["location"]).read_text())
        truth[x["location"], x["atom"]] = next(
            a["value"] for a in doc["annotations"] if a["atom"] == x["atom"]
        )
    flip = {"TRUE": "FALSE", "FALSE": "TRUE"}
    rows[0].update(decision="answer", value=truth[rows[0]["location"], rows[0]["atom"]].lower())
    rows[1].update(decision="answer", value=flip[truth[rows[1]["location"], rows[1]["atom"]]])
    rows[2].update(decision="answer", value="UNKNOWN")
    rows[3].update(decision="skip")
    Path("s.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows))
    r = run("review", "--apply", "s.jsonl", "--reviewer", "ana")
    assert r.exit_code == 0, r.output
    assert "applied 3 decisions, refused 0 lines" in r.output
    for i, want in ((0, None), (1, "flip"), (2, "UNKNOWN")):
        x = rows[i]
        doc = json.loads(Path(x["location"]).read_text())
        a = next(a for a in doc["annotations"] if a["atom"] == x["atom"])
        old = truth[x["location"], x["atom"]]
        assert a["review"]["decision"] == "answer"
        assert a["review"]["sample"] == x["sample"]
        assert a["review"]["original"]["value"] == old
        assert a["review"]["original"]["by"] == x["by"]
        assert a["by"] == {"kind": "human", "name": "ana", "reviewed": True}
        assert a["value"] == {None: old, "flip": flip[old], "UNKNOWN": "UNKNOWN"}[want]
        assert (a["evidence"] == []) == (want == "UNKNOWN")
    skipped = json.loads(Path(rows[3]["location"]).read_text())
    assert "review" not in next(a for a in skipped["annotations"] if a["atom"] == rows[3]["atom"])
    r = run("validate", "replays")
    assert r.exit_code == 0, r.output


def test_a_shown_sample_is_accepted_or_rejected_and_keeps_its_draw(rag: Path) -> None:
    rows = sample("--sample", "3", "--seed", "2")
    assert all(x["sample"]["blind"] is False and x["current"] for x in rows)
    rows[0].update(decision="accept", reviewer="ben")
    rows[1].update(decision="reject", value="UNKNOWN", reviewer="ben")
    Path("s.jsonl").write_text("".join(json.dumps(x) + "\n" for x in rows[:2]))
    r = run("review", "--apply", "s.jsonl")
    assert r.exit_code == 0, r.output
    for x, decision in zip(rows, ("accept", "reject"), strict=False):
        doc = json.loads(Path(x["location"]).read_text())
        a = next(a for a in doc["annotations"] if a["atom"] == x["atom"])
        assert a["review"]["decision"] == decision and a["review"]["sample"] == x["sample"]
    # a line of the ranked queue keeps no draw: calibration leaves it out
    queue = lines_of_export([])
    queue[0].update(decision="accept", reviewer="ben")
    Path("q.jsonl").write_text(json.dumps(queue[0]) + "\n")
    assert run("review", "--apply", "q.jsonl").exit_code == 0
    doc = json.loads(Path(queue[0]["location"]).read_text())
    a = next(a for a in doc["annotations"] if a["atom"] == queue[0]["atom"])
    assert a["review"]["decision"] == "accept" and "sample" not in a["review"]


@pytest.mark.parametrize(
    ("blind", "edit", "path", "message"),
    [
        (True, {"decision": "accept"}, "decision", "unknown decision `accept` for a blind line"),
        (True, {"decision": "answer"}, "value", "an answer needs the value the sources give"),
        (
            True,
            {"decision": "answer", "value": "yes"},
            "value",
            "an answer needs the value the sources give, found `yes`",
        ),
        (True, {"current": "TRUE", "decision": "skip"}, "current", "a blind line shows no value"),
        (
            False,
            {"decision": "answer", "value": "TRUE"},
            "decision",
            "`answer` is for a blind line",
        ),
        (False, {"sample": {"seed": 1}}, "sample", "expected `sample` as exported"),
        (
            False,
            {"sample.stratum": {"kind": "rule", "name": "other", "version": ""}},
            "sample.stratum",
            "the stratum is not the reader in `by`",
        ),
    ],
)
def test_a_bad_sampled_line_is_refused_and_the_rest_applied(
    rag: Path, blind: bool, edit: dict, path: str, message: str
) -> None:
    rows = sample("--sample", "2", "--seed", "4", *(["--blind"] if blind else []))
    good = rows[1]
    good.update(decision="answer" if blind else "skip", value="TRUE", reviewer="ana")
    bad = rows[0]
    bad.update(reviewer="ana")
    for key, value in edit.items():
        if key == "sample.stratum":
            bad["sample"]["stratum"] = value
            bad["decision"] = "accept"
        else:
            bad[key] = value
    Path("s.jsonl").write_text(json.dumps(bad) + "\n" + json.dumps(good) + "\n")
    r = run("review", "--apply", "s.jsonl")
    assert r.exit_code == 1, r.output
    assert f"s.jsonl:1:1: error: {path}: {message}" in r.output
    assert f"applied {1 if blind else 0} decision{'' if blind else 's'}, refused 1 line" in r.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sample", "0", "--seed", "1"], "`--sample` takes a number of readings, found `0`"),
        (["--sample", "-3", "--seed", "1"], "`--sample` takes a number of readings, found `-3`"),
        (["--sample", "3"], "a sample needs `--seed S`"),
        (["--seed", "3"], "`--seed` and `--blind` go with `--sample N`"),
        (["--blind"], "`--seed` and `--blind` go with `--sample N`"),
        (
            ["--sample", "3", "--seed", "1", "--findings-only"],
            "a sample draws from every unreviewed reading, not from the findings' only",
        ),
        (["--sample", "3", "--seed", "1", "--interactive"], "a sample is reviewed from its export"),
        (["--sample", "3", "--seed", "1", "--apply", "x.jsonl"], "give `--sample` to draw, or"),
    ],
)
def test_bad_sample_options_are_one_message_and_the_usage_status(
    rag: Path, args: list[str], message: str
) -> None:
    r = run("review", "replays", *args)
    assert r.exit_code == 2, r.output
    assert f"error: {message}" in r.output
    assert r.output.count("error:") == 1 and "Traceback" not in r.output


def test_more_than_there_are_draws_them_all_and_says_so(rag: Path) -> None:
    total = sum(unreviewed_by_reader().values())
    r = run("review", "replays", "--sample", "100000", "--seed", "1", "--export", "s.jsonl")
    assert r.exit_code == 0, r.output
    assert (
        f"warning: `--sample 100000` asks for more than the {total} unreviewed readings there "
        "are: all of them are drawn"
    ) in r.output
    assert len(lines_of("s.jsonl")) == total
    assert f"{total} of {total} unreviewed readings drawn to `s.jsonl`" in r.output


def test_nothing_to_draw_from_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(ROOT / "examples" / "factual_claims.proto", tmp_path)
    shutil.copy(ROOT / "examples" / "case_a.json", tmp_path)  # every annotation a person's
    monkeypatch.chdir(tmp_path)
    r = run("review", "case_a.json", "--sample", "5", "--seed", "1", "--export", "s.jsonl")
    assert r.exit_code == 0, r.output
    assert "warning: no unreviewed reading to draw from" in r.output
    assert Path("s.jsonl").read_text() == ""


def test_a_sample_of_json_lines_replays_is_applied_in_its_line(rag: Path) -> None:
    docs = [json.loads(f.read_text()) for f in sorted(Path("replays").glob("*.json"))]
    docs[0]["id"] = "r\x1b[2J"  # a control character in an id is shown escaped
    Path("all.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    listed = run("review", "all.jsonl", "--sample", "1000", "--seed", "9", "--list")
    assert listed.exit_code == 0, listed.output
    assert "\x1b" not in listed.output and "\\x1b" in listed.output
    r = run("review", "all.jsonl", "--sample", "3", "--seed", "9", "--blind", "--export", "s.jsonl")
    assert r.exit_code == 0, r.output
    rows = lines_of("s.jsonl")
    assert all(x["location"].startswith("all.jsonl:") for x in rows)
    rows[0].update(decision="answer", value="UNKNOWN", reviewer="cy")
    Path("s.jsonl").write_text(json.dumps(rows[0]) + "\n")
    before = Path("all.jsonl").read_text().splitlines()
    assert run("review", "--apply", "s.jsonl").exit_code == 0
    after = Path("all.jsonl").read_text().splitlines()
    n = int(rows[0]["location"].rsplit(":", 1)[1])
    assert [i for i, (a, b) in enumerate(zip(before, after, strict=True), 1) if a != b] == [n]
    a = next(a for a in json.loads(after[n - 1])["annotations"] if a["atom"] == rows[0]["atom"])
    assert a["value"] == "UNKNOWN" and a["review"]["sample"]["blind"] is True


def test_an_invalid_replay_is_named_and_the_rest_drawn_from(rag: Path) -> None:
    total = sum(unreviewed_by_reader().values())
    Path("replays", "broken.json").write_text("{oops")
    r = run("review", "replays", "--sample", "1000", "--seed", "1", "--export", "s.jsonl")
    assert r.exit_code == 4, r.output
    assert "broken.json" in r.output and "Traceback" not in r.output
    assert len(lines_of("s.jsonl")) == total
