"""Hostile input to `unmask import` and `unmask propose` (issue 28): inputs that were quadratic
end quickly with the right output, a malformed WiCE gold row is one line and exit 4, a line too
large to propose for is that line's error with the others written, and no message carries an
input's escape sequence, bell or bidirectional override to the terminal.

The large inputs are the sizes the issue measured (minutes before the fixes); each test asserts
on the output, and an alarm turns a hang into a failure instead of a stuck run.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import TEST_DATA
from unmask.cli.main import main

INSPECT_TASK = TEST_DATA / "importers" / "inspect-input-task.json"
# raw ESC (a CSI and an OSC that retitles the window), a bell and a right-to-left override
HOSTILE = "\x1b[2J\x1b]0;pwned\x07\u202eevil"
RAW = ("\x1b", "\x07", "\u202e")


@pytest.fixture(autouse=True)
def _no_hang():
    """Fail a test that runs for minutes instead of waiting for it (the bugs took minutes)."""

    def stop(signum, frame):  # type: ignore[no-untyped-def]
        raise TimeoutError("still running after 120 s: quadratic again?")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(120)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def no_raw(text: str) -> None:
    for ch in RAW:
        assert ch not in text, f"raw {ch!r} reached the terminal: {text!r}"


# --- inspect: thousands of quoted phrases ------------------------------------------------------


def _inspect(tmp_path: Path, change) -> Path:
    data = json.loads(INSPECT_TASK.read_text(encoding="utf-8"))
    data["samples"] = data["samples"][:1]
    change(data["samples"][0])
    p = tmp_path / "log.json"
    p.write_text(json.dumps(data), encoding="utf-8")
    return p


def test_inspect_8000_quoted_phrases_import_with_every_quote(tmp_path: Path) -> None:
    # 8,000 phrases, each written thousands of times: 84 s before the occurrences were indexed
    explanation = " ".join(f'"abc{i % 3}"' for i in range(8000)) + " GRADE: C"

    def change(s):
        s["scores"]["model_graded_fact"]["explanation"] = explanation

    out = tmp_path / "out"
    res = cli("import", "inspect", str(_inspect(tmp_path, change)), "--out", str(out))
    assert res.exit_code == 0, res.stderr
    (path,) = out.glob("*.json")
    r = json.loads(path.read_text(encoding="utf-8"))
    quotes = [a for a in r["annotations"] if a["atom"].startswith("quotes(")]
    assert len(quotes) == 8000
    last = quotes[-1]["evidence"][0]
    assert explanation[last["start"] : last["end"]] == "abc1"
    assert last["start"] == explanation.rindex('"abc1"') + 1
    assert cli("validate", str(path)).exit_code == 0


def test_inspect_quoted_phrases_past_the_lookup_bound_are_one_skip(tmp_path: Path, monkeypatch):
    from unmask.importers import inspect

    monkeypatch.setattr(inspect, "MAX_LOOKUP", 1000)
    explanation = " ".join(f'"phrase {i}"' for i in range(50)) + " GRADE: C"

    def change(s):
        s["scores"]["model_graded_fact"]["explanation"] = explanation

    out = tmp_path / "out"
    res = cli("import", "inspect", str(_inspect(tmp_path, change)), "--out", str(out))
    assert res.exit_code == 1
    skips = [line for line in res.stderr.splitlines() if ": skipped: " in line]
    assert len(skips) == 1
    assert "model_graded_fact.explanation: skipped: too many quoted phrases" in skips[0]


def test_inspect_a_target_list_of_other_values_is_not_a_traceback(tmp_path: Path) -> None:
    def change(s):
        s["target"] = [1, {"a": 2}]

    res = cli("import", "inspect", str(_inspect(tmp_path, change)), "--out", str(tmp_path / "o"))
    assert res.exit_code == 0, res.stderr
    assert res.exception is None or isinstance(res.exception, SystemExit)


# --- wice: unclosed tags, malformed gold rows ------------------------------------------------

GOLD_ROW = {
    "claim": "c",
    "meta": {"id": "t1", "chunk_idx": [1], "oracle_idx": [1]},
    "label": "supported",
}
PROMPT = "<input><claim>c</claim><sentence_1>a</sentence_1></input>"
GOOD = {
    "prompt": PROMPT,
    "response": "<explanation>Sentence 1 confirms it.</explanation><answer>supported</answer>",
}


def _wice(tmp_path: Path, rows: list, gold: list | None = None) -> tuple[Path, Path]:
    src = tmp_path / "judge_claim_test_outputs.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    g = tmp_path / "gold.jsonl"
    lines = gold if gold is not None else [json.dumps(GOLD_ROW)]
    g.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return src, g


def test_wice_lines_of_unclosed_tags_are_read_in_linear_time(tmp_path: Path) -> None:
    n = 20_000  # lines of 280 KB to 600 KB; each ran for minutes with the lazy patterns
    rows = [
        {"prompt": "<sentence_7>x" * n + PROMPT, "response": GOOD["response"]},
        {"prompt": "<input>" + "<claim>" * n, "response": "x"},
        {
            "prompt": PROMPT,
            "response": "<explanation>" + "Sentence 1 and " * n + "</explanation>"
            "<answer>supported</answer>",
        },
        {"prompt": PROMPT, "response": "<answer>" * n + "<explanation>" * n},
        {
            "prompt": PROMPT + "".join(f"<sentence_{i}>" for i in range(n)),
            "response": "<explanation>" + "Sentence 1 does not. " * n + "</explanation>"
            "<answer>supported</answer>",
        },
        GOOD,
    ]
    src, gold = _wice(tmp_path, rows)
    out = tmp_path / "out"
    res = cli("import", "wice", str(src), "--gold", str(gold), "--out", str(out))
    assert res.exit_code == 1
    assert f"{src}:2: skipped: `prompt`: no <claim> in the last <input>" in res.stderr
    assert f"{src}:4: skipped: `response`: no `<answer>…</answer>`" in res.stderr
    assert "imported 4 replays" in res.stderr and "skipped 2" in res.stderr
    assert cli("validate", str(out)).exit_code == 0
    r = json.loads((out / "judge-t1-0.json").read_text(encoding="utf-8"))
    cites = next(a for a in r["annotations"] if a["atom"] == "cites(s1)")
    assert cites["value"] == "TRUE" and cites["evidence"][0]["quote"] == "Sentence 1"
    denied = json.loads((out / "judge-t1-0-3.json").read_text(encoding="utf-8"))
    # every citation of line 1 sits next to a denial: whether it supports stays open
    assert "cites(s1)" not in {a["atom"] for a in denied["annotations"]}


def test_wice_tags_are_paired_as_the_patterns_paired_them() -> None:
    from unmask.importers.wice import _sentences, _tag

    text = "<sentence_1>a<sentence_2>b</sentence_1><sentence_2>c</sentence_2><sentence_3>d"
    assert _sentences(text) == [(1, "a<sentence_2>b"), (2, "c")]
    found = _tag("x<answer>y<answer>z</answer></answer>", "answer")
    assert found is not None and found.group(1) == "y<answer>z" and found.start() == 1
    assert _tag("<answer>never closed", "answer") is None


@pytest.mark.parametrize(
    ("change", "path", "expected"),
    [
        (lambda r: r.update(claim={"a": 1}), "claim", "a string, found an object"),
        (lambda r: r.update(claim=["c"]), "claim", "a string, found an array"),
        (lambda r: r["meta"].update(chunk_idx=[1e400]), "meta.chunk_idx[0]", "a line number"),
        (lambda r: r["meta"].update(chunk_idx=[1.5]), "meta.chunk_idx[0]", "a line number"),
        (lambda r: r["meta"].update(chunk_idx="12"), "meta.chunk_idx", "an array"),
        (lambda r: r["meta"].update(oracle_idx=[{"x": 1}]), "meta.oracle_idx[0]", "a line"),
        (lambda r: r.update(meta=[1]), "meta", "an object, found an array"),
        (lambda r: r["meta"].update(id=None), "meta.id", "a string or a whole number"),
        (lambda r: r.update(label={"x": 1}), "label", "a string, found an object"),
        (lambda r: r.pop("claim"), "claim", "present"),
    ],
)
def test_a_malformed_gold_row_is_one_line_exit_4_nothing_written(
    tmp_path: Path, change, path: str, expected: str
) -> None:
    row = json.loads(json.dumps(GOLD_ROW))
    change(row)
    text = json.dumps(row).replace("Infinity", "1e400")  # json writes 1e400 as Infinity
    src, gold = _wice(tmp_path, [GOOD], [json.dumps(GOLD_ROW), text])
    out = tmp_path / "out"
    res = cli("import", "wice", str(src), "--gold", str(gold), "--out", str(out))
    assert res.exit_code == 4
    head = res.stderr.splitlines()[0]
    assert head.startswith(f"error: {gold}:2: not a WiCE gold row: `{path}` must be")
    assert expected in head
    assert "Traceback" not in res.stderr
    assert not out.exists()


def test_a_gold_label_with_escapes_is_shown_escaped(tmp_path: Path) -> None:
    row = dict(GOLD_ROW, label=HOSTILE)
    src, gold = _wice(tmp_path, [GOOD], [json.dumps(row)])
    res = cli("import", "wice", str(src), "--gold", str(gold), "--out", str(tmp_path / "o"))
    assert res.exit_code == 4
    no_raw(res.stderr)
    assert "\\x1b]0;pwned\\x07\\u202eevil" in res.stderr


# --- terminal escapes in import messages -----------------------------------------------------


def test_an_inspect_scorer_key_with_escapes_is_shown_escaped(tmp_path: Path) -> None:
    def change(s):
        s["scores"][HOSTILE] = {"value": "C"}

    res = cli("import", "inspect", str(_inspect(tmp_path, change)), "--out", str(tmp_path / "o"))
    assert res.exit_code == 1
    no_raw(res.stderr)
    assert "scorer `\\x1b[2J\\x1b]0;pwned\\x07\\u202eevil` is not a model-graded" in res.stderr


@pytest.mark.parametrize("tool", ["promptfoo", "deepeval", "inspect", "jsonl"])
def test_an_input_file_name_with_escapes_is_shown_escaped(tmp_path: Path, tool: str) -> None:
    src = tmp_path / f"in{HOSTILE}.json"
    src.write_text("[", encoding="utf-8")
    res = cli("import", tool, str(src), "--out", str(tmp_path / "o"))
    assert res.exit_code in (2, 4)
    no_raw(res.stderr)


def test_a_promptfoo_skip_reason_with_escapes_is_shown_escaped(tmp_path: Path) -> None:
    data = {"results": {"results": [{"id": HOSTILE, "gradingResult": HOSTILE}]}}
    src = tmp_path / "r.json"
    src.write_text(json.dumps(data), encoding="utf-8")
    res = cli("import", "promptfoo", str(src), "--out", str(tmp_path / "o"))
    no_raw(res.stderr)
    assert "Traceback" not in res.stderr


# --- propose judge: large rationales ---------------------------------------------------------


def _lines(tmp_path: Path, rows: list[dict]) -> Path:
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return p


def test_propose_judge_40000_quoted_phrases_is_one_line_error_and_the_rest_proposed(
    tmp_path: Path,
) -> None:
    many = " ".join(f'"p{i}".' for i in range(40_000))  # 320 KB; a MemoryError before
    rows = [
        {"id": "ok", "rationale": 'Sentence 5 confirms "the date".'},
        {"id": "big", "rationale": many},
        {"id": "after", "rationale": "<answer>supported</answer>"},
    ]
    out = tmp_path / "out.jsonl"
    res = cli("propose", "judge", str(_lines(tmp_path, rows)), "-o", str(out))
    assert res.exit_code == 4
    got = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [g["id"] for g in got] == ["ok", "big", "after"]
    assert {a["atom"] for a in got[0]["annotations"]} == {"cited(s5)", "said(s5)", "quotes"}
    assert got[1] == {
        "id": "big",
        "line": 2,
        "error": "the rationale is too large to propose for: more than 100,000 characters",
    }
    assert got[2]["annotations"][0]["atom"] == "answered(supported)"
    assert "1 of 3 lines invalid" in res.stderr


def test_propose_judge_reads_40000_quoted_phrases_in_linear_time_when_allowed(
    tmp_path: Path,
) -> None:
    many = " ".join(f'"p{i}".' for i in range(40_000))
    out = tmp_path / "out.jsonl"
    src = _lines(tmp_path, [{"id": 1, "rationale": many}])
    res = cli("propose", "judge", str(src), "--max-chars", "1000000", "-o", str(out))
    assert res.exit_code == 0, res.stderr
    (ann,) = json.loads(out.read_text(encoding="utf-8"))["annotations"]
    assert ann["atom"] == "quotes" and len(ann["evidence"]) == 40_000
    assert ann["evidence"][-1]["quote"] == '"p39999".'


def test_propose_judge_past_the_match_bound_is_that_line_error(tmp_path, monkeypatch) -> None:
    from unmask.propose import judge

    monkeypatch.setattr(judge, "MAX_HITS", 10)
    rows = [{"rationale": " ".join(f'"p{i}"' for i in range(11))}, {"rationale": '"one"'}]
    out = tmp_path / "out.jsonl"
    res = cli("propose", "judge", str(_lines(tmp_path, rows)), "-o", str(out))
    assert res.exit_code == 4
    first, second = (json.loads(x) for x in out.read_text(encoding="utf-8").splitlines())
    assert first["error"] == "the rationale is too large to propose for: more than 10 rule matches"
    assert second["annotations"][0]["evidence"][0]["quote"] == '"one"'


def test_propose_judge_out_of_memory_on_one_line_keeps_the_others(tmp_path, monkeypatch) -> None:
    from unmask.propose.judge import JudgeRules

    real = JudgeRules.annotations

    def annotations(self, text, threshold=0.5):  # type: ignore[no-untyped-def]
        if text == "boom":
            raise MemoryError
        return real(self, text, threshold)

    monkeypatch.setattr(JudgeRules, "annotations", annotations)
    rows = [{"rationale": '"a b c"'}, {"rationale": "boom"}, {"rationale": '"d e f"'}]
    out = tmp_path / "out.jsonl"
    res = cli("propose", "judge", str(_lines(tmp_path, rows)), "-o", str(out))
    assert res.exit_code == 4
    got = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert got[1] == {"id": None, "line": 2, "error": "too large to propose for: out of memory"}
    assert got[0]["annotations"] and got[2]["annotations"]
    assert "Traceback" not in res.stderr


def test_the_built_in_rules_reach_is_bounded_but_covers_the_real_rationales() -> None:
    from unmask.propose.judge import JudgeRules

    near = "Sentence 3 " + "x" * 150 + " confirms it."
    far = "Sentence 3 " + "x" * 250 + " confirms it."
    atoms = {p.atom for p in JudgeRules().propose(near)}
    assert "said(s3)" in atoms
    assert "said(s3)" not in {p.atom for p in JudgeRules().propose(far)}


# --- terminal escapes in propose messages ----------------------------------------------------


def test_propose_judge_field_and_rule_names_with_escapes_are_shown_escaped(tmp_path) -> None:
    src = _lines(tmp_path, [{"rationale": "x"}])
    res = cli("propose", "judge", str(src), "--field", HOSTILE)
    assert res.exit_code == 4
    no_raw(res.stderr)
    assert "missing field `\\x1b[2J" in res.stderr
    rules = tmp_path / "r.json"
    rule = {"name": HOSTILE, "pattern": "(a)", "atom": "a", "confidence": 1}
    rules.write_text(
        json.dumps({"schema": "unmask.judge-rules/1", "rules": [rule, rule]}), encoding="utf-8"
    )
    res = cli("propose", "judge", str(src), "--rules", str(rules))
    assert res.exit_code == 2
    no_raw(res.stderr)
    assert "two rules are named `\\x1b[2J" in res.stderr


def test_propose_claims_bad_lines_with_escapes_are_shown_escaped(tmp_path: Path) -> None:
    src = tmp_path / f"in{HOSTILE}.jsonl"
    src.write_text('{"claim": 1, "evidence": []}\n', encoding="utf-8")
    res = cli("propose", "claims", str(src))
    assert res.exit_code == 4
    no_raw(res.stderr)


# --- structured: a quote repeated, a quote overlapping itself (issue 33) -----------------------

RAG = TEST_DATA / "structured" / "rag.proto"


def _structured(tmp_path: Path, rationale: str, quotes: list[str]):
    rec = {
        "judge": "j",
        "domains": {"claim": ["c"]},
        "output": {
            "rationale": rationale,
            "verdict": "SUPPORTED",
            "atoms": {"says": {"c": {"value": "TRUE", "quotes": quotes}}},
        },
    }
    src = tmp_path / "outputs.jsonl"
    src.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    return cli("import", "structured", str(src), "--protocol", str(RAG), "--out", str(out)), out


def test_structured_searches_each_distinct_quote_once(tmp_path: Path) -> None:
    import time

    # a 1.1 MB line: 40,000 repeats of a quote found at the end of a 200,000-character
    # rationale and 40,000 of one that is not in it; every repeat searched the rationale
    # again (45 s in the probe)
    rationale = "ab" * 100_000 + "the quote here"
    missing = "ab" * 5 + "c"
    start = time.process_time()
    res, out = _structured(tmp_path, rationale, [missing, "the quote here"] * 40_000)
    spent = time.process_time() - start
    assert res.exit_code == 0, res.stderr
    (path,) = out.glob("*.json")
    r = json.loads(path.read_text(encoding="utf-8"))
    verbatim = next(a for a in r["annotations"] if a["atom"] == "quotes_verbatim")
    assert verbatim["value"] == "FALSE" and len(verbatim["evidence"]) == 40_000
    says = next(a for a in r["annotations"] if a["atom"] == "says(c)")
    assert {e["start"] for e in says["evidence"]} == {len(rationale) - len("the quote here")}
    assert spent < 20, f"{spent:.1f} s of CPU: every repeat searched again?"


def test_a_quote_overlapping_itself_too_often_is_one_skip_not_minutes(tmp_path: Path) -> None:
    # 150,000 `a`s in 300,000: each of the 150,001 overlapping occurrences cost 150,000
    # comparisons to confirm (hours); the search now stops at its bound
    res, out = _structured(tmp_path, "a" * 300_000, ["a" * 150_000])
    assert not list(out.glob("*.json"))
    assert res.exit_code == 1, res.stderr
    assert "skipped: a quote occurs more than" in res.stderr
    assert "too often to locate" in res.stderr


def test_the_builder_refuses_a_quote_too_costly_to_locate() -> None:
    from unmask.plumbing.diagnostics import UnmaskError
    from unmask.replay.builder import MAX_OCCURRENCE_WORK, ReplayBuilder

    b = ReplayBuilder(
        RAG.read_text(encoding="utf-8"),
        sources={"rationale": "a" * 300_000},
        verdict="SUPPORTED",
        domains={"claim": ["c"]},
    )
    with pytest.raises(UnmaskError) as info:
        b.annotate("says(c)", "TRUE", quote="a" * 150_000, occurrence=0)
    [d] = info.value.diagnostics
    assert d.code == "limit" and "too often to locate" in d.message
    assert str(MAX_OCCURRENCE_WORK // 150_000) in d.message
