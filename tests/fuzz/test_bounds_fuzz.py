"""Fuzz of the bounds of issue 28: `analyze`/`compare` options, chains of definitions and
wide cardinalities, drawn by hypothesis (derandomized, so CI runs the same cases).

Each case runs in-process through click's runner and must end with no traceback, an exit
status the command documents, and within a bounded time. Cases: 40 option sets each for
`analyze` and `compare`, 40 definition chains, 25 cardinalities: 145 per run.
"""

from __future__ import annotations

import time
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.face.test_bounds import card_replay, write
from unmask.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
PROTO = str(ROOT / "examples" / "claim_parts.proto")
OTHER = str(ROOT / "examples" / "graded_fact.proto")
BOUND_S = 20.0  # generous for a shared CI machine; the unbounded cases took minutes


def cases(n: int) -> settings:
    return settings(
        max_examples=n,
        derandomize=True,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


# what the commands document (docs/analysis.md, docs/replay-format.md)
ANALYZE_EXITS = {0, 1, 2, 3, 4}
CHECK_EXITS = {0, 1, 3, 4}


def _run(args: list[str]):  # type: ignore[no-untyped-def]
    start = time.monotonic()
    result = CliRunner().invoke(main, args)
    took = time.monotonic() - start
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args,
        result.exception,
    )
    assert "Traceback" not in result.output, (args, result.output[-2000:])
    assert took < BOUND_S, (args, took)
    return result


_members = st.one_of(
    st.integers(0, 6), st.integers(100_001, 10**30), st.sampled_from(["-1", "x", "", "²", "1e9"])
)
_text = st.text(alphabet=st.sampled_from(list("abmp_=,;:1 ²\x1b\u202e\ud800")), max_size=12).filter(
    lambda s: "\x00" not in s
)
_options = st.fixed_dictionaries(
    {
        "--members": _members,
        "--domain": st.lists(
            st.one_of(st.sampled_from(["part=a,b", "part=", "nope=a", "part=a,a"]), _text),
            max_size=2,
        ),
        "--backend": st.sampled_from(["sliced", "z3", "pysat", "truthtable", "pysat:nope", "x"]),
        "--format": st.sampled_from(["text", "json", "sarif", "html", ""]),
        "--max-domain-size": st.one_of(st.none(), st.integers(-1, 50)),
        "--timeout-ms": st.one_of(st.none(), st.integers(-1, 5000)),
    }
)


def _argv(opts: dict) -> list[str]:
    out: list[str] = []
    for key, value in opts.items():
        if value is None:
            continue
        for v in value if isinstance(value, list) else [value]:
            out += [key, str(v)]
    return out


@cases(40)
@given(opts=_options)
def test_analyze_options(opts) -> None:
    result = _run(["analyze", *_argv(opts), PROTO])
    assert result.exit_code in ANALYZE_EXITS, (opts, result.output[-2000:])


@cases(40)
@given(opts=_options, fail_if=st.sampled_from([None, "looser", "stricter", "odd"]))
def test_compare_options(opts, fail_if) -> None:
    opts = {k: v for k, v in opts.items() if not (k == "--format" and v == "sarif")}
    extra = [] if fail_if is None else ["--fail-if", fail_if]
    result = _run(["compare", *_argv(opts), *extra, PROTO, OTHER])
    assert result.exit_code in ANALYZE_EXITS, (opts, result.output[-2000:])


_ops = st.sampled_from(["and", "or", "xor", "iff", "implies"])


@cases(40)
@given(
    steps=st.lists(st.tuples(_ops, st.integers(2, 3)), min_size=1, max_size=40),
    form=st.sampled_from(["check", "validate", "analyze"]),
    nodes=st.sampled_from([None, "50", "999999999999"]),
)
def test_definition_chains(tmp_path_factory, steps, form, nodes) -> None:
    lines = ['protocol p "x"', 'atom a0 : judge "a"', 'atom c : context "c"']
    for i, (op, uses) in enumerate(steps, 1):
        body = f" {op} ".join([f"a{i - 1}"] * (2 if op in ("iff", "implies") else uses))
        lines.append(f"define a{i} = {body}")
    top = f"a{len(steps)}"
    lines += [f"decision pass iff {top}", f"ground {top} ~ c"]
    folder = tmp_path_factory.mktemp("chain")
    proto = "\n".join(lines) + "\n"
    limit = [] if nodes is None else ["--max-expr-nodes", nodes]
    if form == "analyze":
        result = _run(["analyze", *limit, write(folder, "c.proto", proto)])
        assert result.exit_code in ANALYZE_EXITS - {2}, result.output[-2000:]
        return
    replay = card_replay(1, "atleast", 1)
    replay["protocol"] = {"source": proto}
    replay.pop("domains")
    replay["annotations"][0]["atom"] = "a0"
    result = _run([form, *limit, write(folder, "r.json", replay)])
    assert result.exit_code in CHECK_EXITS, result.output[-2000:]


@cases(25)
@given(
    n=st.integers(1, 2500),
    op=st.sampled_from(["atleast", "atmost", "exactly"]),
    k_at=st.floats(0, 1.05),
    backend=st.sampled_from(["sliced", "pysat", "truthtable"]),
)
def test_wide_cardinalities(tmp_path_factory, n, op, k_at, backend) -> None:
    k = int(n * k_at)
    path = write(tmp_path_factory.mktemp("card"), "card.json", card_replay(n, op, k))
    result = _run(["check", "--backend", backend, path])
    assert result.exit_code in CHECK_EXITS, result.output[-2000:]
