"""`unmask review` against hostile files: the state and the replays written never through a
link nor into a pipe, `--apply` one locked transaction per file that checks the record it
writes into and keeps every byte it was not asked to change, a results file of odd shapes,
escapes kept escaped, findings counted per check."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RULE = {"kind": "rule", "name": "outside-knowledge/1", "reviewed": False}


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input)


def case(name: str) -> dict:
    doc = json.loads((EXAMPLES / "case_b.json").read_text())
    doc["id"] = name
    for a in doc["annotations"]:
        if a["atom"] == "external":
            a["by"] = RULE
    return doc


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(EXAMPLES / "factual_claims.proto", tmp_path)
    for name in ("b1", "b2"):
        (tmp_path / f"{name}.json").write_text(json.dumps(case(name), indent=2))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def export(*paths: str, out: str = "review.jsonl") -> list[dict]:
    r = run("review", *paths, "--export", out)
    assert r.exit_code == 0, r.output
    return [json.loads(x) for x in Path(out).read_text().splitlines()]


def decide(lines: list[dict], out: str = "review.jsonl", **fields: str) -> None:
    for x in lines:
        x.update({"decision": "accept", "reviewer": "ana"} | fields)
    Path(out).write_text("".join(json.dumps(x) + "\n" for x in lines))


def external(doc: dict) -> dict:
    return next(a for a in doc["annotations"] if a["atom"] == "external")


# --- the state file and the files review writes -----------------------------------------------


@pytest.mark.parametrize("state", [None, "mine.jsonl"])
def test_a_link_at_the_state_file_is_refused_and_its_target_untouched(folder: Path, state):
    secret = folder / "secret.txt"
    secret.write_text("do not touch\n")
    name = state or "unmask-review.jsonl"
    os.symlink(secret, name)
    args = ("--state", state) if state else ()
    r = run("review", "b1.json", "--interactive", "--reviewer", "ana", *args, input="a\n")
    assert r.exit_code == 2, r.output
    assert f"`{name}` is a symbolic link, which is not followed here" in r.output
    assert secret.read_text() == "do not touch\n"  # neither emptied nor written into
    assert external(json.loads(Path("b1.json").read_text()))["by"] == RULE  # nothing applied
    # a dangling link (made to be followed on creation) is refused the same way
    os.unlink(name)
    os.symlink(folder / "new.txt", name)
    r = run("review", "b1.json", "--interactive", "--reviewer", "ana", *args, input="a\n")
    assert r.exit_code == 2 and not (folder / "new.txt").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_at_the_state_or_the_review_file_is_one_line(folder: Path) -> None:
    os.mkfifo("unmask-review.jsonl")
    r = run("review", "b1.json", "--interactive", "--reviewer", "ana", input="a\n")
    assert r.exit_code == 2
    assert "error: `unmask-review.jsonl` is a named pipe, not a regular file" in r.output
    assert r.output.count("error:") == 1 and "accept, reject" not in r.output
    os.mkfifo("decisions.jsonl")
    r = run("review", "--apply", "decisions.jsonl")
    assert r.exit_code == 2 and r.output.count("error:") == 1
    assert "`decisions.jsonl` is a named pipe, not a regular file" in r.output
    r = run("review", "--apply", "/dev/zero")
    assert r.exit_code == 2 and "is a device, not a regular file" in r.output


def test_the_state_is_appended_never_emptied_first(folder: Path, monkeypatch) -> None:
    import unmask.plumbing.outputs

    r = run("review", "b1.json", "b2.json", "--interactive", "--reviewer", "ana", input="s\nq\n")
    assert r.exit_code == 0, r.output
    before = Path("unmask-review.jsonl").read_bytes()
    opened = []
    real = os.open

    def watch(path, flags, *a):  # type: ignore[no-untyped-def]
        if str(path).endswith("unmask-review.jsonl") and flags & (os.O_WRONLY | os.O_RDWR):
            opened.append(flags)
        return real(path, flags, *a)

    monkeypatch.setattr(unmask.plumbing.outputs.os, "open", watch)
    r = run("review", "b1.json", "b2.json", "--interactive", "--reviewer", "ana", input="a\n")
    assert r.exit_code == 0, r.output
    assert opened and all(f & os.O_APPEND and f & os.O_NOFOLLOW for f in opened)
    assert not any(f & os.O_TRUNC for f in opened)
    assert Path("unmask-review.jsonl").read_bytes().startswith(before)


def test_a_replay_behind_a_link_or_outside_the_root_is_not_written(folder: Path) -> None:
    outside = folder.parent / f"{folder.name}-elsewhere"
    outside.mkdir()
    shutil.copy(folder / "factual_claims.proto", outside)
    shutil.copy("b1.json", outside / "b1.json")
    os.unlink("b1.json")
    os.symlink(outside / "b1.json", "b1.json")
    lines = export("b1.json")
    decide(lines)
    kept = (outside / "b1.json").read_bytes()
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 1 and "`b1.json` is a symbolic link, which is not followed" in r.output
    assert (outside / "b1.json").read_bytes() == kept and os.path.islink("b1.json")
    # a location that climbs out of --root
    lines[0]["location"] = f"../{outside.name}/b1.json"
    decide(lines)
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 1 and "is outside the folder `.`" in r.output
    assert (outside / "b1.json").read_bytes() == kept
    # given as --root, it is the folder asked for
    r = run("review", "--apply", "review.jsonl", "--root", str(outside / ".."))
    assert r.exit_code == 1  # still refused: the location names it from `.`
    lines[0]["location"] = "b1.json"
    decide(lines)
    r = run("review", "--apply", "review.jsonl", "--root", str(outside))
    assert r.exit_code == 0, r.output
    assert external(json.loads((outside / "b1.json").read_text()))["by"]["name"] == "ana"


def test_a_link_at_the_export_is_replaced_not_followed(folder: Path) -> None:
    secret = folder / "secret.txt"
    secret.write_text("do not touch\n")
    os.symlink(secret, "review.jsonl")
    export("b1.json")
    assert secret.read_text() == "do not touch\n"
    assert (
        not os.path.islink("review.jsonl") and "unmask.review/1" in Path("review.jsonl").read_text()
    )


# --- the transaction ---------------------------------------------------------------------------


def jsonl(docs: list[dict], name: str = "batch.jsonl", sep: str = "\n") -> bytes:
    data = "".join(json.dumps(d) + sep for d in docs).encode()
    Path(name).write_bytes(data)
    return data


def test_a_record_changed_or_inserted_since_the_export_is_refused(folder: Path) -> None:
    jsonl([case("b1"), case("b2")])
    lines = export("batch.jsonl")
    decide(lines)
    # another record inserted at the top: line 1 now holds `new`, line 2 `b1`
    moved = jsonl([case("new"), case("b1"), case("b2")])
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 1
    assert "review.jsonl:1:1: error: the replay at `batch.jsonl:1` changed since the export" in (
        r.output
    )
    assert Path("batch.jsonl").read_bytes() == moved  # nothing written at all
    # an export without digests still checks the replay's id
    for x in lines:
        del x["digest"]
    decide(lines)
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 1
    assert "`batch.jsonl:1` holds replay `new`, not the exported `b1`" in r.output
    assert "`batch.jsonl:2` holds replay `b1`, not the exported `b2`" in r.output
    assert Path("batch.jsonl").read_bytes() == moved


def test_a_record_starting_with_a_lone_cr_keeps_the_audits_numbering(folder: Path) -> None:
    # the audit numbers records at `\n`; a lone CR is whitespace inside the second record
    data = (json.dumps(case("b1")) + "\n\r" + json.dumps(case("b2")) + "\n").encode()
    Path("batch.jsonl").write_bytes(data)
    lines = export("batch.jsonl")
    assert [(x["location"], x["replay"]) for x in lines] == [
        ("batch.jsonl:1", "b1"),
        ("batch.jsonl:2", "b2"),
    ]
    decide(lines[1:])
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 0, r.output
    first, second, end = Path("batch.jsonl").read_bytes().split(b"\n")
    assert first + b"\n" == data[: len(first) + 1] and end == b""  # b1 untouched
    assert second.startswith(b"\r{") and external(json.loads(second))["by"]["name"] == "ana"


def test_only_the_decided_annotations_change(folder: Path) -> None:
    docs = [case("b1"), case("b2")]
    text = [json.dumps(d) for d in docs]
    anns = [json.dumps(external(d)) for d in docs]
    # a valid 1e400 in an ignored field, an escaped U+202E and a spacing of one's own
    text[0] = text[0][:-1] + ', "meta": {"score": 1e400, "note": "\\u202e\\u0085"}  }'
    odd = anns[1].replace('"atom": "external"', '"atom" :"external" , "extra":  1e400')
    text[1], anns[1] = text[1].replace(anns[1], odd), odd
    data = ("\n".join(text) + "\r\n").encode()
    Path("batch.jsonl").write_bytes(data)
    lines = export("batch.jsonl")
    decide(lines[:1])
    decide(lines[1:], out="second.jsonl", decision="reject", value="FALSE")
    assert run("review", "--apply", "review.jsonl").exit_code == 0
    assert run("review", "--apply", "second.jsonl").exit_code == 0
    new = Path("batch.jsonl").read_bytes()
    assert b"Infinity" not in new and new.count(b"1e400") == 2
    assert "\u202e".encode() not in new and "\x85".encode() not in new
    out = new.split(b"\n")
    assert out[0].endswith(b'"note": "\\u202e\\u0085"}  }') and out[1].endswith(b"\r")
    assert b'"extra": 1e400' in out[1]  # the changed annotation's own member, as written
    assert run("validate", "batch.jsonl").exit_code == 0
    # every byte but those of the decided annotation objects is as it was
    for old, now, ann in zip(data.split(b"\n"), out, anns, strict=False):
        start = old.index(ann.encode())
        assert now.startswith(old[:start]) and now.endswith(old[start + len(ann) :])
        changed = json.loads(now[start : len(now) - (len(old) - start - len(ann))])
        assert changed["by"]["kind"] == "human" and changed["review"]["original"]["by"] == RULE
    ext = json.loads(out[1])["annotations"][4]
    assert ext["value"] == "FALSE" and ext["review"]["original"]["value"] == "TRUE"


def test_each_file_is_written_once_per_run(folder: Path, monkeypatch) -> None:
    import unmask.review.apply

    jsonl([case(f"r{i}") for i in range(6)])
    lines = export("batch.jsonl")
    decide(lines)
    writes = []
    real = unmask.review.apply.write_bytes
    monkeypatch.setattr(
        unmask.review.apply,
        "write_bytes",
        lambda path, data, **kw: writes.append(path) or real(path, data, **kw),
    )
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 0 and "applied 6 decisions" in r.output
    assert len(writes) == 1


def test_two_applies_at_once_lose_no_decision(folder: Path) -> None:
    n = 100
    jsonl([case(f"r{i}") for i in range(2 * n)])
    lines = export("batch.jsonl")
    assert len(lines) == 2 * n
    decide(lines[:n], out="first.jsonl")
    decide(lines[n:], out="second.jsonl", reviewer="ben")
    code = "import sys; from unmask.cli.main import main; main(sys.argv[1:])"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, "review", "--apply", f],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
        )
        for f in ("first.jsonl", "second.jsonl")
    ]
    outs = [p.communicate(timeout=300)[0].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert all(f"applied {n} decisions, refused 0 lines" in o for o in outs), outs  # n > 1
    docs = [json.loads(x) for x in Path("batch.jsonl").read_text().splitlines()]
    names = {d["id"]: external(d)["by"].get("name") for d in docs}
    assert names == {x["replay"]: "ana" for x in lines[:n]} | {
        x["replay"]: "ben" for x in lines[n:]
    }


@pytest.mark.skipif(sys.platform == "win32", reason="flock is POSIX")
def test_a_file_another_apply_holds_is_awaited_then_refused(folder: Path, monkeypatch) -> None:
    import fcntl

    import unmask.review.apply

    lines = export("b1.json")
    decide(lines)
    monkeypatch.setattr(unmask.review.apply, "LOCK_WAIT_S", 0.2)
    kept = Path("b1.json").read_bytes()
    with open("b1.json", "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another apply is writing it
        r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 1 and "`b1.json` is being changed by another review" in r.output
    assert Path("b1.json").read_bytes() == kept
    assert run("review", "--apply", "review.jsonl").exit_code == 0  # once it is released


def test_decisions_on_one_replay_in_one_run_all_land(folder: Path) -> None:
    doc = case("b1")
    doc["verdict"] = "PASS"  # a second finding, the verdict, resting on `j_cto`
    for a in doc["annotations"]:
        a["by"] = RULE  # every annotation a rule's: several decisions for one record
    Path("b1.json").write_text(json.dumps(doc, indent=2))
    lines = export("b1.json")
    assert len(lines) >= 2 and len({x["location"] for x in lines}) == 1
    decide(lines)
    r = run("review", "--apply", "review.jsonl")
    assert r.exit_code == 0 and f"applied {len(lines)} decisions" in r.output, r.output
    after = json.loads(Path("b1.json").read_text())
    atoms = {x["atom"] for x in lines}
    assert all(a["by"]["kind"] == "human" for a in after["annotations"] if a["atom"] in atoms)
    # and the interactive session, one transaction a decision, follows its own writes
    Path("b1.json").write_text(json.dumps(doc, indent=2))
    answers = "a\n" * len(lines)
    r = run("review", "b1.json", "--interactive", "--reviewer", "ana", "--state", "s.jsonl",
            input=answers)  # fmt: skip
    assert r.exit_code == 0 and "changed since" not in r.output, r.output
    after = json.loads(Path("b1.json").read_text())
    assert all(a["by"]["kind"] == "human" for a in after["annotations"] if a["atom"] in atoms)


# --- what review reads and writes -------------------------------------------------------------


def test_a_results_file_of_odd_shapes_is_one_message_a_line(folder: Path) -> None:
    r = run("audit", "b1.json", "b2.json", "--out", "results.jsonl", "--quiet")
    assert r.exit_code in (0, 1, 3), r.output
    rows = [json.loads(x) for x in Path("results.jsonl").read_text().splitlines()]
    odd = json.loads(json.dumps(rows[0]))
    odd["requirements"] = 5
    kind = json.loads(json.dumps(rows[0]))
    at = next(i for i, a in enumerate(kind["annotations"]) if "by" in a)
    kind["annotations"][at]["by"]["kind"] = 7
    lines = [odd, kind, rows[1]]
    Path("results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    for args in (("--list",), ("--export", "review.jsonl")):
        r = run("review", "results.jsonl", *args)
        assert r.exit_code == 4, r.output
        assert "internal error" not in r.output and "Traceback" not in r.output
        assert "results.jsonl:1:1: error: requirements: expected an array, found a number" in (
            r.output
        )
        assert f"results.jsonl:2:1: error: annotations[{at}].by.kind: expected a string" in (
            r.output
        )
    exported = Path("review.jsonl").read_text().splitlines()
    assert [json.loads(x)["location"] for x in exported] == ["b2.json"]
    r = run("next", "results.jsonl", "--format", "json")  # `next` reads it as before
    assert "internal error" not in r.output


def test_escapes_stay_escapes_in_the_export_the_state_and_the_replay(folder: Path) -> None:
    raw = Path("b1.json").read_text()
    hidden = "\\u202e\\u0085\\u009b"  # U+202E, C1 NEL and CSI, as escapes
    raw = raw.replace('"Rationale explicitly', f'"{hidden} Rationale explicitly')
    Path("b1.json").write_text(raw)
    acting = ["\u202e", "\x85", "\x9b"]
    lines = export("b1.json")
    text = Path("review.jsonl").read_text()
    assert lines[0]["explanation"].startswith("\u202e\x85\x9b") and "\\u202e" in text
    assert not any(c in text for c in acting)
    decide(lines)
    assert run("review", "--apply", "review.jsonl").exit_code == 0
    out = Path("b1.json").read_text()
    assert not any(c in out for c in acting) and out.count("\\u202e") == 2
    assert external(json.loads(out))["review"]["original"]["explanation"].startswith("\u202e")
    Path("b1.json").write_text(raw)
    r = run("review", "b1.json", "--interactive", "--reviewer", "ana", input="s\n")
    assert r.exit_code == 0, r.output
    state = Path("unmask-review.jsonl").read_text()
    assert "\\u202e" in state and not any(c in state for c in acting)


def test_findings_are_counted_per_check_not_per_name() -> None:
    from unmask.review.queue import items

    ev = [{"source": "rationale", "start": 0, "end": 2, "quote": "ab"}]
    part = {"kind": "annotation", "atom": "x", "value": "TRUE", "evidence": ev, "by": RULE}
    pair = {
        "judge": "j",
        "context": "c",
        "result": "VIOLATED",
        "explanation": {"parts": [part, part]},  # one atom twice in one check: once
    }
    report = {"replay": "a", "grounding": [pair, dict(pair)]}  # two identical pairs: two
    got = items([("a.json", report, {"sources": {"rationale": "abc"}})])
    assert [(i.atom, len(i.checks)) for i in got] == [("x", 2)]
    assert got[0].to_json()["findings"] == 2


def test_a_blind_sample_line_is_checked_against_its_replay_too(folder: Path) -> None:
    jsonl([case("b1"), case("b2")])
    r = run(
        "review", "batch.jsonl", "--sample", "10", "--seed", "1", "--blind", "--export", "s.jsonl"
    )
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in Path("s.jsonl").read_text().splitlines()]
    assert lines and all(x["location"].startswith("batch.jsonl:") for x in lines)
    for x in lines:
        x.update(decision="answer", value="TRUE", reviewer="ana")
    Path("s.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    moved = jsonl([case("new"), case("b1"), case("b2")])  # a record inserted on top
    r = run("review", "--apply", "s.jsonl")
    assert r.exit_code == 1 and "holds replay `new`, not the exported `b1`" in r.output
    # every line names a record that moved: nothing is written into another replay
    assert f"applied 0 decisions, refused {len(lines)} lines" in r.output
    assert Path("batch.jsonl").read_bytes() == moved
