"""`unmask validate`: exit statuses 0 (valid), 4 (invalid input), 2 (usage), the summary
line, diagnostics on stderr, and the shared ``--max-*`` options."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tests.conftest import found_files
from unmask.cli.main import main
from unmask.commands._options import click_options
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def copy_case(tmp_path: Path, name: str) -> dict:
    """Load an example and put its .proto beside the copy that the test will write."""
    for proto in found_files(EXAMPLES.glob("*.proto")):
        (tmp_path / proto.name).write_text(proto.read_text(encoding="utf-8"), encoding="utf-8")
    return json.loads((EXAMPLES / name).read_text(encoding="utf-8"))


def run(*args: str):
    return CliRunner().invoke(main, ["validate", *args])


def test_valid_replay_exits_0_with_a_summary():
    res = run(str(EXAMPLES / "case_b.json"))
    assert res.exit_code == 0
    assert res.stdout == "case-b: valid (5 atoms, 5 annotations, 0 unannotated)\n"
    assert res.stderr == ""


def test_one_annotation_is_one_annotation(tmp_path):
    case = json.loads((EXAMPLES / "case_b.json").read_text(encoding="utf-8"))
    case["annotations"] = case["annotations"][:1]
    (tmp_path / "one.json").write_text(json.dumps(case), encoding="utf-8")
    shutil.copy(EXAMPLES / "factual_claims.proto", tmp_path)
    res = run(str(tmp_path / "one.json"))
    assert res.stdout == "case-b: valid (5 atoms, 1 annotation, 4 unannotated)\n"


def test_the_replay_written_by_hand_in_the_docs_is_told_its_offsets(tmp_path, monkeypatch):
    # docs/replay-format.md, "Writing one by hand": the replay, the command, its output
    doc = (EXAMPLES.parent / "docs" / "replay-format.md").read_text(encoding="utf-8")
    section = doc.split("## Writing one by hand", 1)[1].split("\n## ", 1)[0]
    replay = re.search(r"```json\n(.*?)```", section, re.S).group(1)
    shown = re.search(r"```\n\$ (.*?)\n(.*?)```", section, re.S)
    command, output = shown.group(1), shown.group(2)
    assert command == "unmask validate mine.json"
    (tmp_path / "mine.json").write_text(replay, encoding="utf-8")
    shutil.copy(EXAMPLES / "factual_claims.proto", tmp_path)
    monkeypatch.chdir(tmp_path)
    res = run("mine.json")
    assert res.exit_code == 4 and res.stderr == output
    # written as the help says, it is valid, with the line the text gives
    hint = re.search(r"write `(.*)`$", output.strip()).group(1)
    fixed = replay.replace('"quote": "It also', hint + ', "quote": "It also')
    (tmp_path / "mine.json").write_text(fixed, encoding="utf-8")
    res = run("mine.json")
    assert res.exit_code == 0
    said = re.search(r"prints `(mine-1: valid \(.*?\))`", section, re.S).group(1)
    assert res.stdout == " ".join(said.split()) + "\n"


def test_unannotated_atoms_are_counted():
    res = run(str(EXAMPLES / "case_unknown.json"))
    assert res.exit_code == 0
    assert "1 unannotated" in res.stdout


def test_invalid_replay_exits_4_with_every_diagnostic_on_stderr(tmp_path):
    r = copy_case(tmp_path, "case_b.json")
    r["verdict"] = "pass"
    r["annotations"][3]["evidence"][0]["end"] = 10_000
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(r))
    res = run(str(f))
    assert res.exit_code == 4
    assert res.stdout == ""
    lines = [ln for ln in res.stderr.splitlines() if ": error: " in ln]
    assert len(lines) == 2
    assert lines[0].startswith(f"{f}: verdict: error: ")
    assert lines[1].startswith(f"{f}: annotations[3].evidence[0].end: error: ")
    assert "  = help: write `PASS` in capitals" in res.stderr


def test_missing_file_is_invalid_input(tmp_path):
    res = run(str(tmp_path / "nope.json"))
    assert res.exit_code == 4
    assert "cannot read" in res.stderr


def test_no_argument_is_a_usage_error():
    assert run().exit_code == 2


def test_bad_limit_value_is_a_usage_error():
    assert run(str(EXAMPLES / "case_a.json"), "--max-atoms", "0").exit_code == 2
    assert run(str(EXAMPLES / "case_a.json"), "--max-atoms", "many").exit_code == 2


def test_limit_options_reach_the_validator():
    res = run(str(EXAMPLES / "case_a.json"), "--max-atoms", "4")
    assert res.exit_code == 4
    assert "protocol" in res.stderr and "`--max-atoms`" in res.stderr
    assert run(str(EXAMPLES / "case_a.json"), "--max-atoms", "5").exit_code == 0


def test_deep_and_broken_json_exit_4(tmp_path):
    cases = {
        "deep.json": b"[" * 200_000,
        "empty.json": b"",
        "latin1.json": b'{"id": "caf\xe9"}',
        "array.json": b"[]",
        "nan.json": b'{"a": NaN}',
    }
    for name, data in cases.items():
        f = tmp_path / name
        f.write_bytes(data)
        res = run(str(f))
        assert res.exit_code == 4, name
        assert "Traceback" not in res.stderr and res.stderr.count("error:") == 1, name


def test_warnings_go_to_stderr_and_do_not_fail(tmp_path):
    r = copy_case(tmp_path, "case_a.json")
    r["judge_model"] = "m"
    f = tmp_path / "r.json"
    f.write_text(json.dumps(r))
    res = run(str(f))
    assert res.exit_code == 0
    assert "warning: unknown key `judge_model`" in res.stderr


def test_compile_errors_in_a_proto_render_with_file_line_and_column(tmp_path):
    proto = (EXAMPLES / "factual_claims.proto").read_text()
    (tmp_path / "factual_claims.proto").write_text(proto.replace("ground j_cto ~ c_cto", "grond"))
    r = json.loads((EXAMPLES / "case_a.json").read_text())
    f = tmp_path / "r.json"
    f.write_text(json.dumps(r))
    res = run(str(f))
    assert res.exit_code == 4
    line = next(i for i, t in enumerate(proto.splitlines(), 1) if t.startswith("ground j_cto"))
    assert res.stderr.startswith(f"{tmp_path / 'factual_claims.proto'}:{line}:1: error:")


def test_click_options_build_one_limits_value():
    @click.command()
    @click_options
    def cmd(limits: Limits) -> None:
        click.echo(repr(limits))

    res = CliRunner().invoke(cmd, ["--max-expr-depth", "7", "--max-file-bytes", "99"])
    assert res.exit_code == 0
    assert res.stdout.strip() == repr(Limits(max_expr_depth=7, max_file_bytes=99))
    assert CliRunner().invoke(cmd, []).stdout.strip() == repr(DEFAULT_LIMITS)


@pytest.mark.parametrize("field", [f for f in Limits.__slots__])
def test_every_limit_has_an_option(field):
    res = CliRunner().invoke(main, ["validate", "--help"])
    assert DEFAULT_LIMITS.option(field) in res.stdout


def test_lone_surrogate_in_the_id_is_printed_safely(tmp_path):
    r = copy_case(tmp_path, "case_a.json")
    f = tmp_path / "r.json"
    f.write_text(json.dumps(r).replace('"case-a"', '"case-\\ud800"'))
    res = run(str(f))
    assert res.exit_code == 0
    assert res.stdout.startswith("case-\\ud800: valid")


def test_an_empty_directory_is_invalid_input_not_usage(tmp_path):
    res = run(str(tmp_path))
    assert res.exit_code == 4
    assert "no replay found in" in res.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_file_is_invalid_input(tmp_path):
    f = tmp_path / "r.json"
    f.write_text("{}")
    f.chmod(0)
    res = run(str(f))
    assert res.exit_code == 4
    assert "cannot read" in res.stderr


def test_protocol_path_option_and_environment_variable_reach_the_limits(tmp_path, monkeypatch):
    @click.command()
    @click_options
    def cmd(limits: Limits) -> None:
        click.echo("\n".join(limits.protocol_path))

    a, b, c = (tmp_path / n for n in "abc")
    for d in (a, b, c):
        d.mkdir()
    monkeypatch.setenv("UNMASK_PROTOCOL_PATH", os.pathsep.join([str(c), "", str(a)]))
    res = CliRunner().invoke(cmd, ["--protocol-path", str(a), "--protocol-path", str(b)])
    assert res.exit_code == 0
    assert res.stdout.split() == [str(a.resolve()), str(b.resolve()), str(c.resolve())]
    assert CliRunner().invoke(cmd, ["--protocol-path", str(tmp_path / "nope")]).exit_code == 2


def test_many_paths_folders_and_json_lines_are_validated_with_a_summary(tmp_path, examples_dir):
    good = json.loads((examples_dir / "case_a.json").read_text(encoding="utf-8"))
    bad = dict(good, verdict="MAYBE")
    lines = tmp_path / "batch.jsonl"
    # a record's protocol path resolves beside the JSON Lines file
    (tmp_path / "factual_claims.proto").write_text(
        (examples_dir / "factual_claims.proto").read_text(encoding="utf-8"), encoding="utf-8"
    )
    lines.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    res = run(str(examples_dir / "case_b.json"), str(examples_dir), str(lines))
    assert res.exit_code == 4
    out = res.stdout.splitlines()
    n = 1 + len(list(examples_dir.glob("*.json"))) + 2  # a file, the folder, two lines
    assert out[-1] == f"validated {n} replays: {n - 1} valid, 1 invalid"
    assert any(x.startswith(f"{lines}:1: case-a: valid") for x in out)
    assert f"{lines}:2: invalid" in res.stderr
    assert "`MAYBE`" in res.stderr


def test_many_valid_paths_exit_0(examples_dir):
    res = run(str(examples_dir / "case_a.json"), str(examples_dir / "case_c.json"))
    assert res.exit_code == 0, res.stderr
    assert res.stdout.splitlines()[-1] == "validated 2 replays: 2 valid, 0 invalid"
