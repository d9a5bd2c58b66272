"""A FALSE resting on a reviewed reading of a whole source: `{"source": S, "read": "whole"}`.

"No passage says this" is read from all of a source, not shown by a quote; the format says so
(docs/replay-format.md, "A reading of a whole source"). It backs a FALSE only, made by a named,
reviewed reader, and every report format shows it as such.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main
from unmask.plumbing.diagnostics import UnmaskError
from unmask.replay.load import replay_from_obj

PROTO = """protocol facts "PASS iff the claim is supported."
atom says : judge "The judge says the claim is supported"
atom backed : context "The context supports the claim"
decision pass iff says
ground says ~ backed
"""
CONTEXT = "[1] The bridge opened in 1932.\n[2] It is a steel arch bridge."
RATIONALE = "The passages say the bridge is made of wood."
WHOLE = {"source": "context", "read": "whole"}
REPLAY = {
    "schema": "unmask.replay/1",
    "id": "w1",
    "protocol": {"source": PROTO},
    "sources": {"context": CONTEXT, "rationale": RATIONALE},
    "verdict": "PASS",
    "annotations": [
        {
            "atom": "says",
            "value": "TRUE",
            "evidence": [{"source": "rationale", "start": 0, "end": 44, "quote": RATIONALE}],
        },
        {
            "atom": "backed",
            "value": "FALSE",
            "evidence": [dict(WHOLE)],
            "by": {"kind": "human", "name": "ana"},
        },
    ],
}


def _with(**changes) -> dict:
    obj = copy.deepcopy(REPLAY)
    obj["annotations"][1].update(changes)
    return obj


def _errors(obj: dict) -> list[tuple[str, str, str]]:
    with pytest.raises(UnmaskError) as err:
        replay_from_obj(obj)
    return [(d.code, d.path, d.message) for d in err.value.diagnostics]


def test_a_whole_reading_backs_a_reviewed_false_and_is_kept_as_such() -> None:
    replay = replay_from_obj(copy.deepcopy(REPLAY))
    (ev,) = replay.annotations[1].evidence
    assert ev.whole and ev.source == "context" and ev.quote == ""
    assert (ev.start, ev.end) == (0, len(CONTEXT))


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"value": "TRUE"},
            (
                "evidence-read",
                "annotations[1].evidence[0].read",
                "a reading of a whole source backs only a FALSE annotation, not `TRUE`",
            ),
        ),
        (
            {"by": {"kind": "model", "name": "m"}},
            ("evidence-read", "annotations[1].by", "a reading of a whole source must be reviewed"),
        ),
        (
            {"by": {"kind": "human", "reviewed": False}},
            ("evidence-read", "annotations[1].by", "a reading of a whole source must be reviewed"),
        ),
        (
            {"evidence": [{"source": "context", "read": "partly"}]},
            ("evidence-read", "annotations[1].evidence[0].read", "unknown reading `partly`"),
        ),
        (
            {"evidence": [{**WHOLE, "quote": "opened"}]},
            (
                "evidence-read",
                "annotations[1].evidence[0].quote",
                "a reading of a whole source has no `quote`",
            ),
        ),
        (
            {"evidence": [{"source": "rationale", "read": "whole"}]},
            (
                "evidence-role",
                "annotations[1].evidence[0].source",
                "evidence for a `context` atom comes from `context` or `response` or "
                "`reference`, not `rationale`",
            ),
        ),
        (
            {"evidence": [{"source": "response", "read": "whole"}]},
            (
                "source-missing",
                "annotations[1].evidence[0].source",
                "source `response` is not in `sources`",
            ),
        ),
    ],
)
def test_a_whole_reading_that_is_not_a_reviewed_false_is_refused(changes, expected) -> None:
    assert expected in _errors(_with(**changes))


def test_a_whole_reading_by_nobody_in_particular_is_refused() -> None:
    obj = _with()
    del obj["annotations"][1]["by"]  # absent `by` reads as a reviewed human: still, say who
    ((code, path, message),) = _errors(obj)
    assert (code, path) == ("evidence-read", "annotations[1]")
    assert message == "an annotation resting on a reading of a whole source must say who read it"


def _check(tmp_path: Path, fmt: str, backend: str = "z3") -> str:
    path = tmp_path / "w1.json"
    path.write_text(json.dumps(REPLAY), encoding="utf-8")
    res = CliRunner().invoke(main, ["check", str(path), "--format", fmt, "--backend", backend])
    assert res.exit_code == 1, res.output  # the judge's claim is refuted by the reading
    return res.stdout


WORDING = "the whole `context`, read: nothing in it says so"


def test_every_format_shows_the_reading_not_a_quote(tmp_path: Path) -> None:
    report = json.loads(_check(tmp_path, "json"))
    (pair,) = report["grounding"]
    assert pair["status"] == "REFUTED"
    backed = next(p for p in pair["explanation"]["parts"] if p["atom"] == "backed")
    assert backed["evidence"] == [{"source": "context", "read": "whole"}]
    assert WORDING in _check(tmp_path, "text")
    md = _check(tmp_path, "markdown")
    assert WORDING in md and "context (read whole)" in md
    html = _check(tmp_path, "html")
    assert "the whole <code>context</code>, read: nothing in it says so" in html
    # the reading marks no span: the context is shown as plain text, not all in bold
    assert '<mark class="ev depth1" tabindex="0" data-ann="ann-1"' not in html
    sarif = json.loads(_check(tmp_path, "sarif"))
    texts = [
        loc.get("message", {}).get("text", "")
        for run in sarif["runs"]
        for result in run["results"]
        for loc in result.get("relatedLocations", [])
    ]
    assert f"evidence for `backed`: {WORDING}" in texts


def test_the_report_is_the_same_on_every_backend(tmp_path: Path) -> None:
    reports = {}
    for b in ("z3", "pysat", "truthtable", "sliced"):
        report = json.loads(_check(tmp_path, "json", b))
        assert report.pop("backend").startswith(b.split(":")[0])
        reports[b] = report
    assert all(r == reports["z3"] for r in reports.values())


def test_the_builder_writes_a_whole_reading_and_the_validator_holds_it() -> None:
    from unmask.replay.builder import ReplayBuilder

    def builder() -> ReplayBuilder:
        b = ReplayBuilder(
            PROTO, sources={"context": CONTEXT, "rationale": RATIONALE}, verdict="PASS", id="w"
        )
        return b.annotate("says", True, quote=RATIONALE)

    built = (
        builder()
        .annotate("backed", False, read_whole="context", by={"kind": "human", "name": "ana"})
        .build()
    )
    assert built["annotations"][1]["evidence"] == [WHOLE]
    with pytest.raises(UnmaskError) as err:  # a model's unchecked reading is no reading
        builder().annotate("backed", False, read_whole="context", by={"kind": "model"}).build()
    assert [d.code for d in err.value.diagnostics] == ["evidence-read"]
    with pytest.raises(UnmaskError) as err:
        builder().annotate("backed", False, read_whole="rationale", by={"kind": "human"})
    (d,) = err.value.diagnostics
    assert d.path == "annotations[1].evidence[0].source"
    assert d.message == "`rationale` is no source of this replay that backs a `context` atom"


def test_two_sources_read_whole_are_two_entries_and_one_problem_is_said_once() -> None:
    obj = _with(evidence=[dict(WHOLE), {"source": "response", "read": "whole"}])
    obj["sources"]["response"] = "The bridge is made of wood."
    replay = replay_from_obj(copy.deepcopy(obj))
    assert [e.source for e in replay.annotations[1].evidence] == ["context", "response"]
    obj["annotations"][1]["value"] = "TRUE"
    assert [c for c, _, _ in _errors(obj)] == ["evidence-read"]
