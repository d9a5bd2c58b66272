"""`unmask annotate --from ANNOTATIONS --reader NAME`: a person's readings written in.

Through the CLI, on the replays of examples/rag/citations.jsonl (a context family named
`backs(p, c)`, which the quickstart's old script, choosing the source by the atom's name,
could not annotate): the quote's source follows the atom's role; a quote in two sources, a
source the role does not allow, an unknown atom, replay or key each get a "did you mean";
an annotated atom is replaced with the old one under `review` as `unmask review` keeps it;
a FALSE by a whole reading; a bad line writes nothing; `--from` alone needs no model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
RAG = ROOT / "examples" / "rag"
ANA = {"kind": "human", "name": "ana", "reviewed": True}


def run(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def cited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cited") / "cited"
    r = run(
        "import",
        "structured",
        RAG / "citations.jsonl",
        "--protocol",
        RAG / "citations.proto",
        "--out",
        out,
    )
    assert r.exit_code == 0, r.output
    return out


def annotate(cited: Path, tmp_path: Path, *lines: dict | str, extra: tuple = ()):
    hand = tmp_path / "hand.jsonl"
    text = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    hand.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    r = run("annotate", cited, "--from", hand, "--reader", "ana", "--out", out, *extra)
    return r, hand, out


def ann(out: Path, replay: str, atom: str) -> dict:
    doc = json.loads((out / f"{replay}.json").read_text(encoding="utf-8"))
    found = [a for a in doc["annotations"] if a["atom"] == atom]
    assert len(found) == 1
    return found[0]


def test_a_context_atom_named_backs_is_quoted_from_the_context(cited, tmp_path) -> None:
    quote = "Sydney is the capital of New South Wales."
    r, _, out = annotate(
        cited,
        tmp_path,
        {"replay": "c2", "atom": "backs(p1, opened)", "value": "TRUE", "quote": "March 1932"},
        {"replay": "c2", "atom": "backs(p3, opened)", "value": "FALSE", "quote": quote},
    )
    assert r.exit_code == 0, r.output
    a = ann(out, "c2", "backs(p1, opened)")
    start = json.loads((out / "c2.json").read_text())["sources"]["context"].index("March 1932")
    assert a == {
        "atom": "backs(p1, opened)",
        "value": "TRUE",
        "evidence": [
            {"source": "context", "start": start, "end": start + 10, "quote": "March 1932"}
        ],
        "by": ANA,
    }
    assert ann(out, "c2", "backs(p3, opened)")["evidence"][0]["source"] == "context"
    # every replay given is written, the one without readings too, and nothing is called
    assert sorted(p.name for p in out.iterdir()) == [".unmask-import", "c1.json", "c2.json"]
    assert "0 calls" in r.output and "2 readings by `ana` written in" in r.output
    # the reading settles the citation's grounding pair: judge-b cites p3 for the opening
    check = run("check", out / "c2.json", "--format", "json")
    report = json.loads(check.output)
    pair = next(g for g in report["grounding"] if g["judge"] == "cites(opened, p3)")
    assert pair["status"] == "REFUTED" and check.exit_code == 1


def test_a_quote_only_a_source_the_role_refuses_holds_is_named_there(cited, tmp_path) -> None:
    line = {"replay": "c1", "atom": "backs(p1, opened)", "value": "TRUE", "quote": "I cite [p1]"}
    r, hand, out = annotate(cited, tmp_path, line)
    assert r.exit_code == 4
    assert (
        f"{hand}:1:1: error: the quote is in `rationale` and `trace`, which a `context` atom's"
        " evidence may not come from" in r.output
    )
    assert "quote what `context` or `response` says" in r.output
    assert "nothing written, no call made" in r.output and not out.exists()


def test_a_quote_in_two_sources_asks_which(cited, tmp_path) -> None:
    # "steel." ends a passage and a claim of the answer: both may back a context atom
    line = {"replay": "c1", "atom": "backs(p2, steel)", "value": "TRUE", "quote": "steel."}
    r, hand, _ = annotate(cited, tmp_path, line)
    assert r.exit_code == 4
    assert f"{hand}:1:1: error: the quote is in `context` and `response`" in r.output
    assert 'did you mean `"source": "context"`?' in r.output
    r, _, out = annotate(cited, tmp_path, {**line, "source": "context"})
    assert r.exit_code == 0, r.output
    assert ann(out, "c1", "backs(p2, steel)")["evidence"][0]["source"] == "context"
    # a procedure atom's quote is in the rationale and in the importer's trace, which only
    # repeats the judge's quotes: it is the rationale's, with nothing to ask
    line = {"replay": "c1", "atom": "outside", "value": "FALSE", "quote": "only the passages"}
    r, _, out = annotate(cited, tmp_path, line)
    assert r.exit_code == 0, r.output
    assert ann(out, "c1", "outside")["evidence"][0]["source"] == "rationale"


def test_a_source_the_role_does_not_allow_gets_the_allowed_ones(cited, tmp_path) -> None:
    line = {"replay": "c1", "atom": "backs(p2, steel)", "value": "TRUE", "quote": "silicon steel"}
    r, hand, _ = annotate(cited, tmp_path, {**line, "source": "rationale"})
    assert r.exit_code == 4
    assert (
        f"{hand}:1:1: error: a `context` atom's evidence may not come from `rationale`: it"
        " comes from `context`, `response` or `reference`" in r.output
    )
    assert 'did you mean `"source": "context"`? the quote is there' in r.output
    r, _, _ = annotate(cited, tmp_path, {**line, "source": "contxt"})
    assert "unknown source `contxt`: a `context` atom's evidence comes from" in r.output
    assert 'did you mean `"source": "context"`?' in r.output
    r, _, _ = annotate(cited, tmp_path, {**line, "source": "reference"})
    assert "replay `c1` has no `reference`" in r.output
    assert "name one it has: `context` or `response`" in r.output


def test_unknown_names_get_a_did_you_mean(cited, tmp_path) -> None:
    r, hand, _ = annotate(
        cited,
        tmp_path,
        {"replay": "c1", "atom": "backs(p1,opened)", "value": "TRUE", "quote": "March 1932"},
        {"replay": "C1", "atom": "outside", "value": "UNKNOWN"},
        {"replay": "c1", "atom": "backed(p1, opened)", "value": "UNKNOWN"},
        {"replay": "c1", "atom": "outside", "value": "UNKNOWN", "qoute": "x"},
        {"replay": "c1", "atom": "outside", "value": "true", "read": "rationale"},
    )
    assert r.exit_code == 4
    want = [
        f"{hand}:1:1: error: no atom `backs(p1,opened)` in replay `c1`",
        "did you mean `backs(p1, opened)`?",
        f"{hand}:2:1: error: no replay `C1` among the replays given",
        "did you mean `c1`? replays are `c1`, `c2`",
        f"{hand}:3:1: error: no atom `backed(p1, opened)` in replay `c1`",
        "did you mean `backs(p1, opened)`?",
        f"{hand}:4:1: error: unknown key `qoute`",
        "did you mean `quote`?",
        f"{hand}:5:1: error: `value` must be `TRUE`, `FALSE` or `UNKNOWN`, found `true`",
        "5 problems in",
    ]
    at = 0
    for w in want:  # in line order
        at = r.output.index(w, at)


def test_an_annotated_atom_is_replaced_and_kept_under_review(cited, tmp_path) -> None:
    before = ann(cited, "c2", "cites(opened, p3)")
    kept = ann(cited, "c2", "outside")
    quote = "For the opening I cite [p3]."
    r, _, out = annotate(
        cited,
        tmp_path,
        {"replay": "c2", "atom": "cites(opened, p3)", "value": "TRUE", "quote": quote},
        {
            "replay": "c2",
            "atom": "outside",
            "value": "UNKNOWN",
            "note": "the rationale cannot tell",
        },
    )
    assert r.exit_code == 0, r.output
    same = ann(out, "c2", "cites(opened, p3)")
    original = {k: before[k] for k in ("value", "by", "evidence", "explanation") if k in before}
    assert same["review"] == {"decision": "accept", "original": original}
    assert same["by"] == ANA and same["value"] == "TRUE"
    assert same["evidence"][0]["quote"] == quote
    changed = ann(out, "c2", "outside")
    assert changed["review"]["decision"] == "reject"
    assert changed["review"]["original"]["value"] == kept["value"] == "FALSE"
    assert changed["review"]["original"]["by"] == kept["by"]
    assert changed["value"] == "UNKNOWN" and changed["evidence"] == []
    assert changed["explanation"] == "the rationale cannot tell"
    # the input is never changed
    assert ann(cited, "c2", "outside") == kept


def test_the_shape_kept_under_review_is_review_apply_s(cited, tmp_path) -> None:
    # the same decision made through `unmask review --apply` keeps the same `review`
    from unmask.review.queue import Decision, _spans, apply_to

    doc = json.loads((cited / "c2.json").read_text(encoding="utf-8"))
    now = next(a for a in doc["annotations"] if a["atom"] == "outside")
    d = Decision(
        "c2", "outside", "FALSE", now["by"], _spans(now["evidence"]), "reject", "TRUE", "ana"
    )
    apply_to(doc, d)
    quote = "I used only the passages."
    line = {"replay": "c2", "atom": "outside", "value": "TRUE", "quote": quote}
    r, _, out = annotate(cited, tmp_path, {**line, "source": "rationale"})
    assert r.exit_code == 0, r.output
    got = ann(out, "c2", "outside")
    assert got["review"] == now["review"] and got["by"] == now["by"]


def test_a_false_by_whole_reading_and_only_a_false(cited, tmp_path) -> None:
    line = {"replay": "c2", "atom": "backs(p3, opened)", "value": "FALSE", "read": "context"}
    r, _, out = annotate(cited, tmp_path, line)
    assert r.exit_code == 0, r.output
    a = ann(out, "c2", "backs(p3, opened)")
    assert a["evidence"] == [{"source": "context", "read": "whole"}] and a["by"] == ANA
    r, hand, _ = annotate(cited, tmp_path, {**line, "value": "TRUE"})
    assert r.exit_code == 4
    assert f"{hand}:1:1: error: a reading of a whole source backs only a FALSE" in r.output
    r, _, _ = annotate(cited, tmp_path, {**line, "read": "rationale"})
    assert "a `context` atom's evidence comes from `context`, `response` or `reference`" in (
        r.output
    )
    assert 'did you mean `"read": "reference"`?' in r.output or '`"read"` with one' in r.output


def test_a_bad_line_writes_nothing(cited, tmp_path) -> None:
    good = {"replay": "c2", "atom": "backs(p1, opened)", "value": "TRUE", "quote": "March 1932"}
    r, hand, out = annotate(
        cited,
        tmp_path,
        good,
        "not json",
        {**good, "atom": "backs(p2, opened)", "quote": "April 1932"},
        good,
        {"replay": "c2", "atom": "backs(p2, steel)", "value": "TRUE"},
    )
    assert r.exit_code == 4
    assert f"{hand}:2:1: error: not JSON" in r.output
    assert f"{hand}:3:1: error: the quote is in none of `context` or `response`" in r.output
    assert f"{hand}:4:1: error: `backs(p1, opened)` of replay `c2` is annotated again" in r.output
    assert "it is on line 1" in r.output
    assert f"{hand}:5:1: error: a `TRUE` needs its evidence" in r.output
    assert "4 problems in" in r.output and not out.exists()


def test_reader_is_required_and_from_alone_needs_no_model(cited, tmp_path) -> None:
    hand = tmp_path / "h.jsonl"
    hand.write_text('{"replay": "c1", "atom": "outside", "value": "UNKNOWN"}\n')
    r = run("annotate", cited, "--from", hand, "--out", tmp_path / "o")
    assert r.exit_code == 2 and "`--from` needs `--reader`" in r.output
    r = run("annotate", cited, "--reader", "ana", "--out", tmp_path / "o")
    assert r.exit_code == 2 and "give `--from FILE`" in r.output
    r = run("annotate", cited, "--from", tmp_path / "missing.jsonl", "--reader", "ana")
    assert r.exit_code == 2


def test_with_a_model_the_person_s_readings_are_not_asked_again(cited, tmp_path) -> None:
    # the dry run counts the atoms a model would read: the person's are no longer open
    model = ("--model", "openai/gpt-4o-mini", "--dry-run")
    without = run("annotate", cited, *model)
    assert without.exit_code == 0, without.output
    lines = [
        {"replay": "c1", "atom": "backs(p1, opened)", "value": "TRUE", "quote": "March 1932"},
        {"replay": "c2", "atom": "backs(p3, opened)", "value": "FALSE", "read": "context"},
    ]
    r, _, out = annotate(cited, tmp_path, *lines, extra=model)
    assert r.exit_code == 0, r.output
    n_without = int(without.output.split(" open atoms")[0].rsplit(" ", 1)[1])
    n_with = int(r.output.split(" open atoms")[0].rsplit(" ", 1)[1])
    assert n_with == n_without - 2
    assert "2 readings by `ana` written in" in r.output and not out.exists()


def test_the_diagnostics_are_data() -> None:
    from unmask.annotate.hand import read_lines

    lines, problems = read_lines("h.jsonl", '{"replay": "r", "atom": "a", "value": "TRUE"}\n\n{')
    assert lines == []
    assert [(d.code, d.span.file, d.span.line) for d in problems] == [
        ("annotation-line", "h.jsonl", 1),
        ("annotation-line", "h.jsonl", 3),
    ]
    assert all(d.help for d in problems)


def test_a_line_naming_an_invalid_replay_shows_why_it_is_not_there(cited, tmp_path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "c1.json").write_bytes((cited / "c1.json").read_bytes())
    (folder / "c2.json").write_text('{"id": "c2", "verdict": 3}', encoding="utf-8")
    line = {"replay": "c2", "atom": "outside", "value": "UNKNOWN"}
    r, hand, out = annotate(folder, tmp_path, line)
    assert r.exit_code == 4
    assert f"{hand}:1:1: error: no replay `c2` among the replays given" in r.output
    assert "the inputs that are not valid replays are shown below" in r.output
    assert str(folder / "c2.json") in r.output  # and why c2 could not be read
    assert "1 problem in" in r.output and not out.exists()
    # without a line naming it, the invalid replay is the run's error record, as ever
    r, _, out = annotate(folder, tmp_path, {**line, "replay": "c1"})
    assert r.exit_code == 4 and (out / "c1.json").exists() and (out / "errors.jsonl").exists()
    # written by the one writer of error records, as audit writes one in a results file:
    # read back and written again, the same bytes (compact, under the output policy)
    from unmask.checking.formats import ErrorLine, encode_line, read_line

    data = (out / "errors.jsonl").read_bytes()
    record = read_line(json.loads(data))
    assert isinstance(record, ErrorLine) and record.location == str(folder / "c2.json")
    assert encode_line(record) == data


def test_replays_on_stdin_are_read_once_and_written(cited, tmp_path) -> None:
    # the lines are checked against every replay before any is written: stdin is held
    records = "".join(
        json.dumps(json.loads((cited / f"{r}.json").read_text())) + "\n" for r in ("c1", "c2")
    )
    hand = tmp_path / "h.jsonl"
    line = {"replay": "c2", "atom": "backs(p3, opened)", "value": "FALSE", "read": "context"}
    hand.write_text(json.dumps(line) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    args = ["annotate", "-", "--from", str(hand), "--reader", "ana", "--out", str(out)]
    r = CliRunner().invoke(main, args, input=records)
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == [".unmask-import", "c1.json", "c2.json"]
    assert ann(out, "c2", "backs(p3, opened)")["by"] == ANA


def test_a_quote_copied_loosely_is_shown_as_the_source_writes_it(cited, tmp_path) -> None:
    # case and spacing differ, as in a copy from a rendered page: the exact text is offered,
    # never taken in its place
    loose = "the sydney harbour bridge opened  in march 1932"
    line = {"replay": "c2", "atom": "backs(p1, opened)", "value": "TRUE", "quote": loose}
    r, hand, out = annotate(cited, tmp_path, line)
    assert r.exit_code == 4 and not out.exists()
    assert f"{hand}:1:1: error: the quote is in none of `context` or `response`" in r.output
    exact = "The Sydney Harbour Bridge opened in March 1932"
    assert f'did you mean `"quote": "{exact}"`? that is the text of `context`' in r.output
    r, _, out = annotate(cited, tmp_path, {**line, "quote": exact})
    assert r.exit_code == 0, r.output


def test_a_quote_the_judge_made_up_is_no_evidence_though_the_trace_repeats_it(tmp_path) -> None:
    # judge-e (r5 of the quickstart) quotes "I relied only on the passages." from a
    # rationale that never says it; the importer's trace holds it, marked a false quote
    replays = tmp_path / "replays"
    r = run(
        "import",
        "structured",
        RAG / "judgments.jsonl",
        "--protocol",
        RAG / "rag.proto",
        "--out",
        replays,
    )
    assert r.exit_code == 0, r.output
    made_up = {
        "replay": "r5",
        "atom": "outside",
        "value": "FALSE",
        "quote": "I relied only on the passages.",
    }
    r, hand, _ = annotate(replays, tmp_path, made_up)
    assert r.exit_code == 4
    assert f"{hand}:1:1: error: the quote is in `trace` only as a quote the judge gave" in r.output
    assert "quote the rationale" in r.output
    # what the trace holds of a true quote is still the rationale's, and accepted
    line = {
        "replay": "r1",
        "atom": "outside",
        "value": "FALSE",
        "quote": "I used only the passages.",
    }
    r, _, out = annotate(replays, tmp_path, line)
    assert r.exit_code == 0, r.output
    assert ann(out, "r1", "outside")["evidence"][0]["source"] == "rationale"


def test_a_renamed_atom_is_matched_by_its_members_and_a_value_by_its_capitals(tmp_path) -> None:
    replays = tmp_path / "replays"
    run(
        "import",
        "structured",
        RAG / "judgments.jsonl",
        "--protocol",
        RAG / "rag.proto",
        "--out",
        replays,
    )
    # `grounded(joined)` is spelt closest to `checked(joined)`, a procedure atom: name the
    # atoms over the same member instead, each with its role
    r, _, _ = annotate(
        replays,
        tmp_path,
        {"replay": "r1", "atom": "grounded(joined)", "value": "True", "quote": "x"},
    )
    assert "write `TRUE` in capitals" in r.output
    r, _, _ = annotate(
        replays,
        tmp_path,
        {"replay": "r1", "atom": "grounded(joined)", "value": "TRUE", "quote": "x"},
    )
    assert "the atoms over the same members are" in r.output
    assert "`backed(joined)` (context)" in r.output and "`checked(joined)` (procedure)" in r.output
    assert "did you mean `checked(joined)`" not in r.output


def test_a_quote_not_in_its_one_source_is_shown_the_closest_text() -> None:
    from unmask.annotate.hand import Line, apply
    from unmask.replay.load import load_replay

    path = Path(__file__).resolve().parents[2] / "examples" / "case_c.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    replay = load_replay(path)
    # a procedure atom is read in the rationale (the replay has no trace): one source
    line = Line(
        "h.jsonl", 1, "case-c", "external", "FALSE", quote="I usd only the supplied context."
    )
    (d,) = apply(doc, replay, [line], "ana")
    assert (d.code, d.message) == ("annotation-line", "the quote is not in `rationale`")
    assert d.help == (
        "the closest text in `rationale` is `I used only the supplied context.`; copy it exactly"
    )


def test_bytes_that_are_not_text_are_a_bad_line_not_a_usage_error(cited, tmp_path) -> None:
    """Found by tests/fuzz/test_readers_fuzz.py: a `--from` file with a byte that is not
    UTF-8, or a NUL, exited 2 (usage) where every other bad line exits 4, as documented."""
    good = json.dumps({"replay": "c1", "atom": "outside", "value": "UNKNOWN"})
    hand = tmp_path / "hand.jsonl"
    out = tmp_path / "out"
    args = ("annotate", cited, "--from", hand, "--reader", "ana", "--out", out)
    hand.write_bytes(good.encode() + b'\n{"replay": "c\xff1"}\n')
    r = run(*args)
    assert r.exit_code == 4, r.output
    assert f"{hand}:2:14: error: `{hand}` is not valid UTF-8 (byte {len(good) + 14}" in r.stderr
    assert "= help: save the file as UTF-8" in r.stderr
    assert "nothing written, no call made" in r.stderr and not out.exists()
    hand.write_bytes(good.encode() + b'\n{"replay": \x00"c1"}\n')
    r = run(*args)
    assert r.exit_code == 4, r.output
    assert f"{hand}:2:12: error: not JSON: " in r.stderr and not out.exists()
    # a file that cannot be read at all is still the command line's: exit 2
    r = run("annotate", cited, "--from", tmp_path / "none.jsonl", "--reader", "ana", "--out", out)
    assert r.exit_code == 2 and not out.exists()
