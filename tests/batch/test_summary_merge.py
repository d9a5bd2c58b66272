"""Summaries folded in pieces and merged in order give the figures of one fold of all.

A pool worker or a Dask partition folds its own results and the run merges the pieces, so
every figure of the summary (its JSON, its text, the HTML index's) must come out as if
the parent had folded each result itself, whatever the cut and after a trip through
pickle, which is how a piece travels.
"""

from __future__ import annotations

import pickle
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from unmask.batch import summary
from unmask.batch.summary import Summary
from unmask.checking.record import ResultRecord

_RESULT = st.sampled_from(["OK", "VIOLATED", "UNKNOWN", None])
_STATUS = st.sampled_from(["ENTAILED", "REFUTED", "UNDERDETERMINED", "SOLVER_UNKNOWN", None])
_LABEL = st.sampled_from(["PASS", "FAIL", "supported", "not_supported"])
_NAME = st.sampled_from(["context_only", "cited(c1)", "cited(c2)", "backed(x, y)", "external"])


@st.composite
def _views(draw: st.DrawFn) -> ResultRecord:
    if draw(st.integers(0, 9)) == 0:
        return ResultRecord(
            error=draw(st.sampled_from(["json-syntax", "internal-error", "schema"]))
        )
    return ResultRecord(
        overall=draw(st.sampled_from(["SATISFIED", "VIOLATED", "UNKNOWN"])),
        dimensions=tuple(draw(_RESULT) for _ in summary.DIMENSIONS),
        matches=draw(st.sampled_from([True, False, None])),
        requirements=tuple(
            draw(st.lists(st.tuples(_NAME, _STATUS, _STATUS), max_size=3).map(tuple))
        ),
        grounding=tuple(
            draw(
                st.lists(st.tuples(_NAME, _NAME, _STATUS, st.sampled_from(("~", "~>"))), max_size=3)
            )
        ),
        observed=draw(st.none() | _LABEL),
        gold=draw(st.none() | _LABEL),
        labels=tuple(draw(st.lists(_LABEL, max_size=3, unique=True))),
        protocol=draw(st.sampled_from([None, "factual", "graded"])),
        # few items and judges, so that pairs, repeats and judges first seen in a later
        # piece all happen
        item=draw(st.sampled_from([None, "i1", "i2", "i3"])),
        judge=draw(st.sampled_from([None, "gpt", "claude", "llama"])),
        unreviewed=tuple(draw(st.integers(0, 2)) for _ in summary.DIMENSIONS),
        gold_derived=tuple(draw(st.integers(0, 1)) for _ in summary.DIMENSIONS),
    )


def _figures(s: Summary) -> tuple:
    return s.to_json(), s.render_text(), s.index_summary("sliced")


def _fold(views: list[ResultRecord]) -> Summary:
    s = Summary()
    for v in views:
        s.add(v)
    return s


# hypothesis' default 100 cases (300 took 4 s): up to 40 results cut into up to 7 pieces
@settings(max_examples=100, deadline=None)
@given(st.lists(_views(), max_size=40), st.lists(st.integers(0, 40), max_size=6))
def test_pieces_merged_in_order_give_the_figures_of_one_fold(views, cuts) -> None:
    bounds = [0, *sorted(c % (len(views) + 1) for c in cuts), len(views)]
    merged = Summary()
    for a, b in pairwise(bounds):
        piece = pickle.loads(pickle.dumps(_fold(views[a:b])))
        merged.merge(piece)
    assert _figures(merged) == _figures(_fold(views))


def test_a_merged_summary_goes_on_folding_like_one_that_folded_everything() -> None:
    # its memos are its own after a merge: later results count in its own counters
    views = [
        ResultRecord(
            overall="VIOLATED", dimensions=("OK", "VIOLATED", "OK", "OK"), item="i", judge=j
        )
        for j in ("a", "b", "a")
    ]
    merged = Summary()
    merged.merge(pickle.loads(pickle.dumps(_fold(views[:2]))))
    merged.add(views[2])
    whole = _fold(views)
    assert _figures(merged) == _figures(whole)
    assert merged.repeated == 1 and merged.judges_json()["pairs"][0]["items"] == 1


def test_a_piece_travels_without_its_memos() -> None:
    piece = _fold(
        [
            ResultRecord(
                overall="SATISFIED",
                dimensions=("OK", "OK", "OK", "OK"),
                requirements=(("cited(c1)", "ENTAILED", None),),
            )
        ]
    )
    assert piece._by_requirements  # filled by the fold
    copy = pickle.loads(pickle.dumps(piece))
    assert copy._by_requirements == {} and copy._by_result == {}
    assert copy.to_json() == piece.to_json()
