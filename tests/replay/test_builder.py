"""`unmask.ReplayBuilder`: quotes become code-point spans, every built replay validates, and
every mistake is one diagnostic with a JSON path (never a traceback)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import unmask
from unmask.plumbing.diagnostics import UnmaskError
from unmask.replay.builder import ReplayBuilder, closest_match
from unmask.replay.load import load_replay, replay_from_obj

ROOT = Path(__file__).resolve().parents[2]
PROTO = ROOT / "examples" / "factual_claims.proto"
FAMILY = ROOT / "examples" / "factual_claims_family.proto"
RATIONALE = "Alice joined ACME in 2024: supported. Alice is the CTO: supported."
CONTEXT = "Alice joined ACME in 2024 as a senior engineer."


def builder(**kw) -> ReplayBuilder:
    sources = kw.pop("sources", {"rationale": RATIONALE, "context": CONTEXT})
    return ReplayBuilder(PROTO, sources=sources, verdict=kw.pop("verdict", "PASS"), **kw)


def codes(exc: pytest.ExceptionInfo) -> list[tuple[str, str | None]]:
    return [(d.code, d.path) for d in exc.value.diagnostics]


def test_the_package_exports_the_builder_lazily():
    assert unmask.ReplayBuilder is ReplayBuilder


def test_a_built_replay_validates_and_quotes_what_was_asked():
    b = builder(id="case-x", gold="FAIL")
    b.annotate("j_joined", True, quote="Alice joined ACME in 2024: supported")
    b.annotate("c_joined", "TRUE", quote="joined ACME in 2024", source="context")
    b.annotate("c_cto", False, quote="senior engineer", explanation="not the CTO")
    b.annotate("external", "UNKNOWN")
    out = b.build()
    r = replay_from_obj(out)
    assert r.id == "case-x" and r.gold == "FAIL" and r.verdict == "PASS"
    assert out["protocol"] == {"source": PROTO.read_text(encoding="utf-8")}
    ev = out["annotations"][1]["evidence"][0]
    assert ev == {"source": "context", "start": 6, "end": 25, "quote": "joined ACME in 2024"}
    assert CONTEXT[ev["start"] : ev["end"]] == ev["quote"]
    assert out["annotations"][2]["explanation"] == "not the CTO"
    assert out["annotations"][3] == {"atom": "external", "value": "UNKNOWN", "evidence": []}
    assert "gold" in out and "item" not in out and "judge" not in out and "domains" not in out


def test_optional_fields_appear_only_when_given():
    b = builder(item="q1", judge="gpt")
    b.annotate("j_cto", True, quote="Alice is the CTO", by={"kind": "rule", "name": "r/1"})
    out = b.to_dict()
    assert out["item"] == "q1" and out["judge"] == "gpt"
    assert out["annotations"][0]["by"] == {"kind": "rule", "name": "r/1"}
    assert "gold" not in out and "explanation" not in out["annotations"][0]


def test_offsets_are_code_points_for_emoji_combining_marks_and_cjk():
    rationale = "🎉👩‍👩‍👧 e\u0301 漢字: Alice is the CTO"
    b = builder(sources={"rationale": rationale, "context": CONTEXT})
    b.annotate("j_cto", True, quote="Alice is the CTO")
    ev = b.build()["annotations"][0]["evidence"][0]
    # 🎉 is 1 code point (2 UTF-16 units), the family 5, e + U+0301 two: 6+1+2+1+2+2
    assert (ev["start"], ev["end"]) == (14, 30)
    assert rationale[14:30] == "Alice is the CTO"


def test_protocol_as_text_and_as_ir_dict():
    text = PROTO.read_text(encoding="utf-8")
    b = ReplayBuilder(text, sources={"rationale": RATIONALE}, verdict="FAIL")
    assert b.build()["protocol"] == {"source": text}
    from unmask.ir.json import protocol_to_json
    from unmask.language.compiler import compile_source

    ir_dict = protocol_to_json(compile_source(text))
    b = ReplayBuilder(ir_dict, sources={"rationale": RATIONALE}, verdict="FAIL", id="ir")
    b.annotate("j_joined", False, quote="supported", occurrence=1)
    out = b.build()
    assert out["protocol"] == ir_dict
    assert out["annotations"][0]["evidence"][0]["start"] == RATIONALE.rindex("supported")


def test_families_need_domains_and_keep_them():
    b = ReplayBuilder(
        FAMILY,
        sources={"rationale": RATIONALE, "context": CONTEXT},
        verdict="PASS",
        domains={"claim": ["joined", "cto"]},
    )
    b.annotate("supported(joined)", True, quote="Alice joined ACME in 2024: supported")
    out = b.build()
    assert out["domains"] == {"claim": ["joined", "cto"]}
    assert replay_from_obj(out).annotation("supported(joined)").value == "TRUE"


def test_write_is_atomic_and_loads_back(tmp_path):
    b = builder(id="w")
    b.annotate("j_joined", True, quote="Alice joined ACME in 2024: supported")
    target = tmp_path / "w.json"
    target.write_text("old", encoding="utf-8")
    b.write(target)
    assert load_replay(target).id == "w"
    assert [p.name for p in tmp_path.iterdir()] == ["w.json"]  # no temporary file left


# --- every error path -------------------------------------------------------------------


def test_an_absent_quote_names_the_closest_match():
    b = builder()
    with pytest.raises(UnmaskError) as exc:
        b.annotate("c_joined", True, quote="Alice joined ACME in 2025")
    d = exc.value.diagnostics[0]
    assert (d.code, d.path) == ("quote-not-found", "annotations[0].evidence[0].quote")
    assert d.help == "the closest text in `context` is `Alice joined ACME in 2024`"


def test_an_absent_quote_with_nothing_close_has_no_hint():
    with pytest.raises(UnmaskError) as exc:
        builder().annotate("c_joined", True, quote="zzzzzzzzzzzz")
    assert exc.value.diagnostics[0].help is None


def test_an_ambiguous_quote_asks_for_an_occurrence():
    b = builder()
    with pytest.raises(UnmaskError) as exc:
        b.annotate("j_cto", True, quote="supported")
    d = exc.value.diagnostics[0]
    assert d.code == "quote-ambiguous"
    assert "occurs 2 times in `rationale` (`rationale` at 27, `rationale` at 56)" in d.message
    b.annotate("j_cto", True, quote="supported", occurrence=1)
    assert b.build()["annotations"][0]["evidence"][0]["start"] == 56


def test_without_a_source_the_quote_must_be_unique_across_the_allowed_sources():
    b = builder(sources={"context": "Alice", "response": "Alice"})
    with pytest.raises(UnmaskError) as exc:
        b.annotate("c_cto", True, quote="Alice")
    assert "in `context` or `response`" in exc.value.diagnostics[0].message
    b.annotate("c_cto", True, quote="Alice", source="response")
    assert b.build()["annotations"][0]["evidence"][0]["source"] == "response"


@pytest.mark.parametrize(
    ("kwargs", "code", "path"),
    [
        ({"atom": "j_jioned", "value": True, "quote": "Alice"}, "unknown-atom", ".atom"),
        ({"atom": "j_cto", "value": "yes", "quote": "Alice"}, "value", ".value"),
        ({"atom": "j_cto", "value": True}, "no-evidence", ".evidence"),
        ({"atom": "j_cto", "value": True, "quote": ""}, "quote", ".evidence[0].quote"),
        (
            {"atom": "j_cto", "value": True, "quote": "Alice", "source": "context"},
            "evidence-source",
            ".evidence[0].source",
        ),
        (
            {"atom": "external", "value": True, "quote": "Alice", "source": "trace"},
            "evidence-source",
            ".evidence[0].source",
        ),
        (
            {"atom": "j_cto", "value": True, "quote": "Alice", "occurrence": 2},
            "occurrence",
            ".evidence[0].quote",
        ),
        (
            {"atom": "j_cto", "value": True, "quote": ["Alice"], "occurrence": [0, 1]},
            "occurrence",
            ".evidence",
        ),
    ],
)
def test_each_mistake_is_one_diagnostic_with_a_path(kwargs, code, path):
    atom = kwargs.pop("atom")
    value = kwargs.pop("value")
    with pytest.raises(UnmaskError) as exc:
        builder().annotate(atom, value, **kwargs)
    assert codes(exc) == [(code, "annotations[0]" + path)]


def test_unknown_atom_suggests_the_nearest_name():
    with pytest.raises(UnmaskError) as exc:
        builder().annotate("j_jioned", True, quote="Alice")
    assert exc.value.diagnostics[0].help == "did you mean `j_joined`?"


def test_an_atom_is_annotated_once():
    b = builder()
    b.annotate("j_cto", "UNKNOWN")
    with pytest.raises(UnmaskError) as exc:
        b.annotate("j_cto", "UNKNOWN")
    assert codes(exc) == [("duplicate-annotation", "annotations[1].atom")]


def test_no_allowed_source_at_all():
    with pytest.raises(UnmaskError) as exc:
        builder(sources={"rationale": RATIONALE}).annotate("c_cto", True, quote="Alice")
    assert codes(exc) == [("evidence-source", "annotations[0].evidence[0]")]


def test_bad_protocol_and_sources_and_verdict():
    with pytest.raises(UnmaskError) as exc:
        ReplayBuilder(42, sources={}, verdict="PASS")  # type: ignore[arg-type]
    assert codes(exc) == [("protocol-form", "protocol")]
    with pytest.raises(UnmaskError) as exc:
        ReplayBuilder(PROTO, sources={"rationale": 3}, verdict="PASS")  # type: ignore[dict-item]
    assert codes(exc) == [("type", "sources")]
    with pytest.raises(UnmaskError):
        ReplayBuilder("protocol x", sources={}, verdict="PASS")  # compile error
    with pytest.raises(UnmaskError):
        ReplayBuilder(Path("no/such.proto"), sources={}, verdict="PASS")
    with pytest.raises(UnmaskError) as exc:
        builder(verdict="pass").build()
    assert exc.value.diagnostics[0].code == "verdict"
    with pytest.raises(UnmaskError) as exc:
        builder(sources={"rationale": RATIONALE, "notes": "x"}).build()
    assert exc.value.diagnostics[0].code == "unknown-source"


def test_a_file_name_given_as_text_is_told_to_pass_a_path():
    # the docs' `Path("examples/factual_claims.proto")`, written as a plain string
    with pytest.raises(UnmaskError) as exc:
        ReplayBuilder("examples/factual_claims.proto", sources={}, verdict="PASS")
    (d,) = exc.value.diagnostics
    assert d.code == "syntax"
    assert d.help == (
        "a `str` is read as `.proto` text; to read the file, pass "
        "`Path('examples/factual_claims.proto')`"
    )
    # real `.proto` text with a mistake keeps the compiler's own help
    with pytest.raises(UnmaskError) as exc:
        ReplayBuilder("protocol x\natom a : jduge", sources={}, verdict="PASS")
    assert "Path(" not in (exc.value.diagnostics[0].help or "")


def test_a_family_without_domains_is_told_the_builder_argument():
    with pytest.raises(UnmaskError) as exc:
        ReplayBuilder(FAMILY, sources={"rationale": RATIONALE}, verdict="PASS")
    (d,) = exc.value.diagnostics
    assert d.code == "missing-domain"
    assert d.help == 'pass its members to the builder: `domains={"claim": ["a", "b"]}`'


def test_the_closest_match_is_whole_words():
    # aligned on ` million inhabitants`, the slice alone would start inside `about`
    text = "Paris has about 2.1 million inhabitants."
    assert closest_match(text, "about 2 million inhabitants") == "about 2.1 million inhabitants"
    assert closest_match(CONTEXT, "Alice joined ACME in 2025") == "Alice joined ACME in 2024"


def test_a_false_without_a_quote_is_told_of_read_whole():
    with pytest.raises(UnmaskError) as exc:
        builder().annotate("c_cto", False)
    (d,) = exc.value.diagnostics
    assert d.code == "no-evidence"
    assert d.help == (
        "pass `quote=` with the text that shows the value; when nothing says so, "
        '`read_whole="context"` with a reviewed `by`'
    )
    with pytest.raises(UnmaskError) as exc:
        builder().annotate("c_cto", True)
    assert exc.value.diagnostics[0].help == "pass `quote=` with the text that shows the value"


@given(st.text(max_size=60), st.text(min_size=1, max_size=30))
def test_the_closest_match_is_always_text_of_the_source(text, quote):
    near = closest_match(text, quote)
    assert near is None or (near and near in text and near == near.strip())


def test_the_closest_match_keeps_a_quote_short_at_its_start_whole():
    text = "The claims are supported. I used only the supplied context. PASS."
    assert closest_match(text, "I usd only the supplied context.") == (
        "I used only the supplied context."
    )


def test_closest_match_is_skipped_past_its_budget():
    assert closest_match("a" * 10_000, "b" * 10_000) is None


# --- property: every built replay validates and quotes what was asked ---------------------

# pieces of one or more code points: a ZWJ family is 5, e + a combining acute is 2
PIECES = ["a", "b", " ", ".", "\n", "\u00e9", "e\u0301", "🎉", "👩\u200d👩\u200d👧", "漢", "字"]
TEXT = st.lists(st.sampled_from(PIECES), min_size=1, max_size=20).map("".join)


@given(
    rationale=TEXT,
    context=TEXT,
    picks=st.lists(st.tuples(st.integers(0, 39), st.integers(1, 8)), min_size=1, max_size=5),
)
def test_property_built_replays_validate_and_spans_quote_what_was_asked(rationale, context, picks):
    b = ReplayBuilder(PROTO, sources={"rationale": rationale, "context": context}, verdict="FAIL")
    atoms = [("j_joined", "rationale"), ("c_joined", "context"), ("c_cto", "context")]
    asked = {}
    for (start, length), (atom, src) in zip(picks, atoms, strict=False):
        text = rationale if src == "rationale" else context
        start = start % len(text)
        quote = text[start : start + length]
        hits = []
        i = text.find(quote)
        while i != -1:
            hits.append(i)
            i = text.find(quote, i + 1)
        b.annotate(atom, True, quote=quote, source=src, occurrence=hits.index(start))
        asked[atom] = (src, start, quote)
    out = b.build()
    r = replay_from_obj(json.loads(json.dumps(out, ensure_ascii=False)))
    for a in r.annotations:
        src, start, quote = asked[a.atom]
        (ev,) = a.evidence
        assert (ev.source, ev.start, ev.quote) == (src, start, quote)
        assert r.sources[src][ev.start : ev.end] == quote


def test_write_keeps_a_lone_surrogate_as_an_escape(tmp_path):
    # JSON allows "\ud800"; UTF-8 cannot hold it, so the file keeps it escaped
    b = builder(sources={"rationale": "a \ud800 b: Alice is the CTO"})
    b.annotate("j_cto", True, quote="Alice is the CTO")
    b.write(tmp_path / "s.json")
    assert "\\ud800" in (tmp_path / "s.json").read_text(encoding="utf-8")
    r = load_replay(tmp_path / "s.json")
    assert r.sources["rationale"] == "a \ud800 b: Alice is the CTO"
    assert r.annotations[0].evidence[0].start == 7  # the surrogate is one code point


def test_a_replay_is_written_under_the_output_policy() -> None:
    """Found by tests/fuzz/test_readers_fuzz.py: replays were written by `json.dumps`, which
    escapes C0 controls but not DEL, a C1 control (U+009B, a one-byte CSI) or a
    bidirectional override, so an importer wrote those raw into every replay holding them.
    Now each is a `\\u` escape: no raw control in the file, the same values read back."""
    from unmask.replay.builder import json_bytes

    value = {"response": "a\u2066b\u2069\x9b31m\x7f\x1b[2J\u202e", "id": "x"}
    data = json_bytes(value)
    text = data.decode("utf-8")
    assert "\\u2066" in text and "\\u009b" in text and "\\u007f" in text
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", text)
    assert json.loads(text) == value
    odd = {"id": "x\ud800\u202e"}  # a lone surrogate: all escaped, still the same value
    assert json.loads(json_bytes(odd)) == odd
