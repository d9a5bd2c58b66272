"""`unmask import --out DIR` never mixes two imports' replays in one folder: a later
`unmask audit DIR` would audit both. An import into a folder holding another import's
replays is refused (exit 2, nothing written or removed) unless `--replace`; a re-run of the
same import replaces its own; a replay no import wrote, or one changed since (reviewed in
place), is never removed, whatever the options. Which replays are an import's own is what the
folder's manifest (`.unmask-import`) lists with the SHA-256 of their bytes."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.producers.test_importers import RECORDS, mapping
from unmask.cli.main import main
from unmask.importers import Options, import_file
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import UnmaskError
from unmask.replay.outfolder import MANIFEST, survey


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def source(tmp_path: Path, name: str, ids: list[str]) -> Path:
    """A `jsonl` input whose records have these ids."""
    p = tmp_path / name
    p.write_text("".join(json.dumps({**RECORDS[0], "qid": i}) + "\n" for i in ids), "utf-8")
    return p


def imp(tmp_path: Path, src: Path, out: Path, *extra: str):
    return cli(
        "import", "jsonl", str(src), "--out", str(out), "--mapping", str(mapping(tmp_path)), *extra
    )


def replays(out: Path) -> list[str]:
    return sorted(p.name for p in out.glob("*.json"))


def snapshot(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def test_an_import_into_an_empty_folder_lists_each_replay_with_its_digest(tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "README.txt").write_text("not a replay", encoding="utf-8")  # left alone
    res = imp(tmp_path, source(tmp_path, "a.jsonl", ["a1", "a2"]), out)
    assert res.exit_code == 0, res.stderr
    assert replays(out) == ["a1.json", "a2.json"]
    head, *lines = [json.loads(x) for x in (out / MANIFEST).read_text("utf-8").splitlines()]
    where = os.path.realpath(tmp_path / "a.jsonl")
    assert head == {
        "schema": "unmask.import-manifest/1",
        "tool": "jsonl",
        "input": "a.jsonl",  # its name: no folder of the user's is written into the manifest
        "input_sha256": hashlib.sha256(os.fsencode(where)).hexdigest(),
    }
    assert lines == [
        {"file": n, "sha256": hashlib.sha256((out / n).read_bytes()).hexdigest()}
        for n in ("a1.json", "a2.json")
    ]
    # the manifest is no replay: an audit of the folder reads the two replays only
    audit = cli("audit", str(out), "--out", str(tmp_path / "r.jsonl"))
    assert audit.stderr.startswith("audited 2 replays")


def test_another_input_into_the_same_folder_is_refused_and_nothing_changes(tmp_path: Path):
    out = tmp_path / "out"
    assert imp(tmp_path, source(tmp_path, "a.jsonl", ["a1", "a2"]), out).exit_code == 0
    before = snapshot(out)
    res = imp(tmp_path, source(tmp_path, "b.jsonl", ["b1"]), out)
    assert res.exit_code == 2
    lines = res.stderr.splitlines()
    assert lines[0] == (
        f"error: the output folder `{out}` holds 2 replays of an earlier import (`jsonl` of"
        " `a.jsonl`), e.g. `a1.json`: an audit of the folder would mix them with this import's"
    )
    assert lines[1] == "  = help: import into an empty folder, or pass `--replace` to replace them"
    assert snapshot(out) == before  # nothing written, nothing removed
    # the same from Python, as data
    with pytest.raises(UnmaskError) as exc:
        import_file("jsonl", tmp_path / "b.jsonl", out, Options(mapping=tmp_path / "mapping.json"))
    (d,) = exc.value.diagnostics
    assert d.code == Code.OTHER_REPLAYS and "`--replace`" in (d.help or "")


def test_replace_removes_exactly_the_earlier_imports_replays(tmp_path: Path):
    out = tmp_path / "out"
    assert imp(tmp_path, source(tmp_path, "a.jsonl", ["a1", "a2"]), out).exit_code == 0
    res = imp(tmp_path, source(tmp_path, "b.jsonl", ["b1"]), out, "--replace")
    assert res.exit_code == 0, res.stderr
    assert replays(out) == ["b1.json"]
    assert res.stderr.splitlines()[0] == (
        f"{out}: note: replaced 2 replays an earlier import (`jsonl` of `a.jsonl`) wrote here"
    )
    assert "b.jsonl" in (out / MANIFEST).read_text("utf-8")


def test_a_rerun_of_the_same_import_replaces_its_own_and_leaves_none_stale(tmp_path: Path):
    out = tmp_path / "out"
    src = source(tmp_path, "a.jsonl", ["a1", "a2", "a3"])
    assert imp(tmp_path, src, out).exit_code == 0
    source(tmp_path, "a.jsonl", ["a1", "a3"])  # the input changed: a2 is gone from it
    res = imp(tmp_path, src, out)
    assert res.exit_code == 0, res.stderr
    assert replays(out) == ["a1.json", "a3.json"]  # no a2 left over from the first run
    # the same input named by another path is the same import
    rel = os.path.relpath(src)
    again = cli(
        "import", "jsonl", rel, "--out", str(out), "--mapping", str(tmp_path / "mapping.json")
    )
    assert again.exit_code == 0, again.stderr


def test_a_file_no_import_wrote_is_never_removed_and_refuses_even_replace(tmp_path: Path):
    out = tmp_path / "out"
    src = source(tmp_path, "a.jsonl", ["a1"])
    assert imp(tmp_path, src, out).exit_code == 0
    (out / "mine.json").write_text('{"hand": "made"}', encoding="utf-8")
    before = snapshot(out)
    for extra in ((), ("--replace",)):  # a re-run, and a replace
        res = imp(tmp_path, src, out, *extra)
        assert res.exit_code == 2, res.stderr
        assert (
            "holds 1 `*.json` file that no `unmask import` wrote there, e.g. `mine.json`: an"
            " audit of the folder would read it with this import's replays"
        ) in res.stderr
        assert "move them out first" in res.stderr
        assert snapshot(out) == before


def test_a_replay_changed_since_it_was_imported_is_never_removed(tmp_path: Path):
    # a replay reviewed or annotated in place holds work no import can make again
    out = tmp_path / "out"
    src = source(tmp_path, "a.jsonl", ["a1", "a2"])
    assert imp(tmp_path, src, out).exit_code == 0
    edited = (out / "a2.json").read_bytes().replace(b'"reviewed": false', b'"reviewed": true')
    (out / "a2.json").write_bytes(edited + b" ")
    for extra in ((), ("--replace",)):
        res = imp(tmp_path, src, out, *extra)
        assert res.exit_code == 2
        assert (
            "holds 1 `*.json` file changed since an import wrote it, e.g. `a2.json`" in res.stderr
        )
        assert (out / "a2.json").read_bytes() == edited + b" "
    (out / "b.json").write_text("{}", encoding="utf-8")
    res = imp(tmp_path, src, out)
    assert (
        "holds 2 `*.json` files that are no import's own (1 no import wrote there, 1 changed"
        in (res.stderr)
    )


def test_an_input_that_is_not_the_format_removes_nothing_even_with_replace(tmp_path: Path):
    out = tmp_path / "out"
    assert imp(tmp_path, source(tmp_path, "a.jsonl", ["a1"]), out).exit_code == 0
    before = snapshot(out)
    bad = tmp_path / "b.json"
    bad.write_text("[1, 2]", encoding="utf-8")
    res = cli("import", "promptfoo", str(bad), "--out", str(out), "--replace")
    assert res.exit_code == 4, res.stderr
    assert snapshot(out) == before


def test_skipped_records_still_let_the_rest_be_written_and_listed(tmp_path: Path):
    out = tmp_path / "out"
    src = tmp_path / "a.jsonl"
    src.write_text(
        json.dumps({**RECORDS[0], "qid": "a1"})
        + "\nnot json\n"
        + json.dumps({**RECORDS[0], "qid": "a3"})
        + "\n",
        encoding="utf-8",
    )
    res = imp(tmp_path, src, out)
    assert res.exit_code == 1 and "skipped 1" in res.stderr
    assert replays(out) == ["a1.json", "a3.json"]
    listed = [json.loads(x).get("file") for x in (out / MANIFEST).read_text("utf-8").splitlines()]
    assert listed == [None, "a1.json", "a3.json"]
    assert imp(tmp_path, src, out).exit_code == 1  # a re-run: the same, again


def test_imports_side_by_side_in_subfolders_audit_together(tmp_path: Path):
    base = tmp_path / "replays"
    assert imp(tmp_path, source(tmp_path, "a.jsonl", ["a1"]), base / "a").exit_code == 0
    assert imp(tmp_path, source(tmp_path, "b.jsonl", ["b1"]), base / "b").exit_code == 0
    audit = cli("audit", str(base), "--out", str(tmp_path / "r.jsonl"))
    assert audit.stderr.startswith("audited 2 replays")


def test_a_manifest_proves_nothing_through_a_link_or_with_a_wrong_digest(tmp_path: Path):
    out = tmp_path / "out"
    src = source(tmp_path, "a.jsonl", ["a1"])
    assert imp(tmp_path, src, out).exit_code == 0
    manifest = out / MANIFEST
    real = tmp_path / "elsewhere"
    real.write_bytes(manifest.read_bytes())
    manifest.unlink()
    manifest.symlink_to(real)
    plan = survey(out, "jsonl", src)
    assert plan.earlier is None and plan.others == ("a1.json",) and plan.own == ()
    # a forged line for a file with other bytes does not make it the import's
    manifest.unlink()
    head = real.read_text("utf-8").splitlines()[0]
    manifest.write_text(head + "\n" + json.dumps({"file": "a1.json", "sha256": "0" * 64}) + "\n")
    plan = survey(out, "jsonl", src)
    assert plan.own == () and plan.changed == 1
    assert imp(tmp_path, src, out, "--replace").exit_code == 2
    assert (out / "a1.json").is_file()


def test_a_manifest_cut_short_by_a_killed_import_keeps_the_lines_it_has(tmp_path: Path):
    out = tmp_path / "out"
    src = source(tmp_path, "a.jsonl", ["a1", "a2"])
    assert imp(tmp_path, src, out).exit_code == 0
    manifest = out / MANIFEST
    manifest.write_bytes(manifest.read_bytes()[:-20])  # the last line half written
    plan = survey(out, "jsonl", src)
    assert plan.own == ("a1.json",) and plan.others == ("a2.json",)


def test_an_input_of_the_same_name_in_another_folder_is_another_import(tmp_path: Path):
    out = tmp_path / "out"
    assert imp(tmp_path, source(tmp_path, "a.jsonl", ["a1"]), out).exit_code == 0
    (tmp_path / "other").mkdir()
    res = imp(tmp_path, source(tmp_path / "other", "a.jsonl", ["a1"]), out)
    assert res.exit_code == 2 and "of an earlier import (`jsonl` of `a.jsonl`)" in res.stderr
