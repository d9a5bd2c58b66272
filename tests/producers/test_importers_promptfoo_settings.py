"""promptfoo 0.123.1's own output (tests/data/importers/promptfoo-0.123.1-settings/, made by
its regenerate.sh) for the settings a results file records that change how a row reads: each
is read as the file says, or left UNKNOWN with one note per file, never promptfoo's default
taken as a fact; and its other exports are refused by name.

The rows, by test (`testIdx`): 0 `weight: 0` on a failing `contains`; 1 and 2 a templated
`{{expected}}`, rendered Paris (in the response) and Lyon (not); 3 an assertion with its own
`transform`; 4 a test-level `options.transform` (the file keeps the transformed output); 5 a
custom `assertScoringFunction` that passes a test with one assertion failed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import TEST_DATA
from unmask.cli.main import main

DATA = TEST_DATA / "importers" / "promptfoo-0.123.1-settings"


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module", params=["results.json", "results.jsonl"])
def imported(request, tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("pf") / "out"
    res = cli("import", "promptfoo", str(DATA / request.param), "--out", str(out))
    assert res.exit_code == 0, res.output
    return out, res.stderr


def report(out: Path, test: int) -> dict:
    res = cli("check", str(out / f"t{test}-p0.json"), "--format", "json")
    return json.loads(res.stdout)


def annotated(out: Path, test: int) -> dict[str, str]:
    replay = json.loads((out / f"t{test}-p0.json").read_text(encoding="utf-8"))
    return {a["atom"]: a["value"] for a in replay["annotations"]}


def test_the_fixtures_are_promptfoos_own_output():
    data = json.loads((DATA / "results.json").read_text(encoding="utf-8"))
    assert data["metadata"]["promptfooVersion"] == "0.123.1"
    assert (DATA / "VERSION").read_text(encoding="utf-8").strip() == "promptfoo 0.123.1"
    weights = [
        c["assertion"].get("weight")
        for c in data["results"]["results"][0]["gradingResult"]["componentResults"]
    ]
    assert weights == [None, 0]


def test_an_assertion_of_weight_0_is_left_out_not_read_as_a_contradiction(imported):
    out, stderr = imported
    # promptfoo passes it whatever it finds: read as found, it broke the row's grounding
    assert report(out, 0)["overall"] == "SATISFIED"
    assert "passed(a1)" not in annotated(out, 0)
    assert "1 assertion(s) with `weight: 0` left out" in stderr


def test_a_templated_value_is_checked_as_rendered(imported):
    out, _ = imported
    assert annotated(out, 1)["has_property(a0)"] == "TRUE"  # Paris, not `{{expected}}`
    assert report(out, 1)["overall"] == "SATISFIED"
    assert annotated(out, 2)["has_property(a0)"] == "FALSE"  # Lyon
    assert report(out, 2)["overall"] == "SATISFIED"  # a right FAIL


def test_an_assertions_own_transform_leaves_its_property_unknown(imported):
    out, stderr = imported
    # `contains PARIS` on the upper-cased output: the file keeps the output before it
    assert "has_property(a0)" not in annotated(out, 3)
    assert report(out, 3)["overall"] == "UNKNOWN"
    assert "1 assertion(s) ran on a `transform` of the output" in stderr


def test_a_test_level_transform_is_already_in_the_output_the_file_keeps(imported):
    out, _ = imported
    assert annotated(out, 4)["has_property(a0)"] == "TRUE"
    assert report(out, 4)["overall"] == "SATISFIED"


def test_a_custom_scoring_function_leaves_the_threshold_unknown(imported):
    out, stderr = imported
    got = annotated(out, 5)
    assert "thresholded" not in got and got["passed(a1)"] == "FALSE"
    # promptfoo's default rule would refute the PASS; the file's own rule is not known
    assert report(out, 5)["overall"] == "UNKNOWN"
    json_note = "1 row(s) passed or failed by a custom `assertScoringFunction`"
    lines_note = "1 row(s) give a grading reason that is not promptfoo's own"
    assert (json_note in stderr) != (lines_note in stderr)


@pytest.mark.parametrize("suffix", [".csv", ".html", ".yaml", ".xml"])
def test_the_other_exports_are_refused_by_name_with_what_to_export(tmp_path, suffix):
    src = tmp_path / f"results{suffix}"
    csv = (DATA / "results.csv").read_text(encoding="utf-8")
    src.write_text(csv if suffix == ".csv" else "<whatever promptfoo wrote>", encoding="utf-8")
    res = cli("import", "promptfoo", str(src), "--out", str(tmp_path / "out"))
    assert res.exit_code == 4
    assert "not read: a promptfoo" in res.stderr and "invalid json" not in res.stderr.lower()
    assert "`promptfoo eval -o results.json`" in res.stderr


def test_a_mistyped_export_name_is_said_missing_not_refused_as_an_export(tmp_path):
    from unmask.importers import Options
    from unmask.importers.promptfoo import read
    from unmask.plumbing.diagnostics import UnmaskError

    with pytest.raises(UnmaskError) as exc:
        list(read(tmp_path / "results.yaml", Options()))
    (d,) = exc.value.diagnostics
    assert d.code == "io" and d.message.startswith("cannot read `")
    assert d.message.endswith("results.yaml`: no such file or directory")
    res = cli("import", "promptfoo", str(tmp_path / "results.yaml"), "--out", str(tmp_path / "o"))
    assert res.exit_code == 4 and "not read: a promptfoo" not in res.stderr
