"""`unmaskc` on a protocol with a free domain and no `--domain`: every check that needs no
members is made, overlaps are looked for at 0 to 3 invented members named after their
domain, nothing is written (stdout or `-o`), exit 0 with a note saying so."""

from __future__ import annotations

from click.testing import CliRunner

from unmask.analysis.compiled import compile_checked
from unmask.backends import create
from unmask.cli.unmaskc import cli
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.limits import DEFAULT_LIMITS
from unmask.plumbing.names import invent_members

FAMILY = """protocol fc "claims"

domain claim
domain passage = {p1, p2}

atom supported(claim) : judge
atom backed(claim)    : context
atom read(passage)    : procedure

verdict yes | partly | no
decision yes iff all(supported(c) for c in claim)
decision partly iff any(supported(c) for c in claim) and not all(supported(c) for c in claim)
decision no otherwise

for c in claim: ground supported(c) ~ backed(c)
requirement read_all: all(read(p) for p in passage)
"""


def run(tmp_path, text: str, *args: str):
    f = tmp_path / "fc.proto"
    f.write_text(text, encoding="utf-8")
    return CliRunner().invoke(cli, [str(f), *args]), f


def test_a_free_domain_compiles_checked_and_writes_nothing(tmp_path):
    r, f = run(tmp_path, FAMILY)
    assert r.exit_code == 0 and r.stdout == ""
    err = r.stderr
    assert f"{f}: note: the protocol compiles, but its free domain `claim` has no members" in err
    assert "nothing was written to standard output" in err
    assert "0, 1, 2, 3 members" in err and "--domain claim=a,b" in err
    out = tmp_path / "out.json"
    r, _ = run(tmp_path, FAMILY, "-o", str(out))
    assert r.exit_code == 0 and not out.exists()
    assert f"nothing was written to `{out}`" in r.stderr
    # with members, the ground form is written as before
    r, _ = run(tmp_path, FAMILY, "--domain", "claim=a,b")
    assert r.exit_code == 0 and '"supported(b)"' in r.stdout


def test_without_members_every_other_check_still_runs(tmp_path):
    bad = FAMILY.replace("ground supported(c) ~ backed(c)", "ground backed(c) ~ supported(c)")
    r, _ = run(tmp_path, bad)
    assert r.exit_code == 1 and r.stdout == ""
    assert "`backed(c)` is a context atom, but the left side of `ground`" in r.stderr
    r, _ = run(tmp_path, FAMILY.replace("all(read(p)", "all(raed(p)"))
    assert r.exit_code == 1 and "unknown" in r.stderr and "raed" in r.stderr
    r, _ = run(
        tmp_path, FAMILY.replace("supported(c) for c in claim)\n", "supported for c in claim)\n")
    )
    assert r.exit_code == 1


def test_an_overlap_that_needs_members_is_found_with_invented_ones():
    written = FAMILY.splitlines()[11]
    assert written.startswith("decision partly iff")
    text = FAMILY.replace(written, "decision partly iff atleast(2, supported(c) for c in claim)")
    try:
        compile_checked(text, "fc.proto", None, DEFAULT_LIMITS, create("sliced"))
    except UnmaskError as e:
        (d,) = e.diagnostics
    else:
        raise AssertionError("no overlap found")
    assert d.code == "overlapping-decisions"
    assert d.notes[0] == "both hold when `supported(claim_1)` = TRUE, `supported(claim_2)` = TRUE"
    assert d.notes[-1] == (
        "with members invented for the free domains: `claim` = {claim_1, claim_2}"
    )
    # one given member: no overlap at that size, so it compiles
    one = compile_checked(text, "fc.proto", {"claim": ["a"]}, DEFAULT_LIMITS, create("sliced"))
    assert one.protocol is not None


def test_an_overlap_with_no_member_at_all_is_found():
    text = FAMILY.replace(
        "decision partly iff", "decision partly iff not any(supported(c) for c in claim) or"
    )
    try:
        compile_checked(text, "fc.proto", None, DEFAULT_LIMITS, create("sliced"))
    except UnmaskError as e:
        (d,) = e.diagnostics
    else:
        raise AssertionError("no overlap found")
    assert d.notes[0] == "both hold whatever the atoms are"
    assert d.notes[-1] == "with no member in the free domains"


def test_a_clean_free_protocol_reports_the_sizes_checked():
    c = compile_checked(FAMILY, "fc.proto", None, DEFAULT_LIMITS, create("sliced"))
    assert (c.protocol, c.free, c.checked_members) == (None, ("claim",), (0, 1, 2, 3))


def test_invented_members_are_named_after_their_domain_and_never_clash():
    assert invent_members(["claim"], 2, [""]) == {"claim": ("claim_1", "claim_2")}
    assert invent_members(["claim"], 2, ["claim_2"]) == {"claim": ("claim__1", "claim__2")}


def test_an_error_only_members_show_is_not_taken_for_a_limit(tmp_path):
    # one constraint name for every member: fine with none or one, an error with two, which
    # every replay naming two members would meet
    text = (
        'protocol t "x"\ndomain D\natom a(D) : judge "a {D}"\n'
        "for x in D: constraint c: a(x)\ndecision pass iff true\n"
    )
    res, _ = run(tmp_path, text)
    assert res.exit_code == 1, res.output
    assert "constraint `c` is declared twice" in res.stderr


def test_one_run_parses_the_text_once(tmp_path, monkeypatch):
    # the free-domain probe, the compiles at 0 to 3 invented members and the judge's view
    # all read one tree; only the compiles are repeated
    import pytest

    from unmask.language import parser

    real = parser.check_source_size  # the first step of every parse
    for args in (
        ("--emit", "judge-schema"),
        ("--emit", "judge-prompt"),
        (),
        ("--domain", "claim=a,b", "--emit", "judge-schema"),
    ):
        parses: list[str] = []

        def spy(text, filename, limits, parses=parses):  # type: ignore[no-untyped-def]
            parses.append(filename)
            return real(text, filename, limits)

        with pytest.MonkeyPatch.context() as m:
            m.setattr(parser, "check_source_size", spy)
            r, f = run(tmp_path, FAMILY, *args)
        assert r.exit_code == 0, r.output
        assert parses == [str(f)], args
    assert "judge output for protocol fc" in r.stdout  # the last wrote its schema
