"""`unmask annotate`: a model's readings, quotes checked, readers that must agree, calls cached.

The model is Inspect's mock model (`mockllm/model`, scripted per question) in process, and
Inspect's OpenAI-compatible provider against a real HTTP server on 127.0.0.1 that answers
from scripted completions (`tests/annotate_server.py`). Both need the `models` extra: without
it these tests skip, except the one that checks the command says what to install.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main
from unmask.plumbing.limits import DEFAULT_LIMITS

ROOT = Path(__file__).resolve().parents[2]
RAG = ROOT / "examples" / "rag"

HAVE_INSPECT = importlib.util.find_spec("inspect_ai") is not None
needs_inspect = pytest.mark.skipif(
    not HAVE_INSPECT, reason="needs Inspect AI: pip install 'unmask[models]'"
)


def free_replays(folder: Path) -> Path:
    """The ten rag judgments as replays with free-text rationales only (nothing annotated
    but the importer's own `quotes_verbatim`)."""
    out = folder / "free"
    res = CliRunner().invoke(
        main,
        [
            "import",
            "structured",
            str(RAG / "rationales.jsonl"),
            "--protocol",
            str(RAG / "rag.proto"),
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    return out


def prompt_parts(user: str) -> tuple[dict, dict[str, str]]:
    """The schema's statements and the sources, read back out of a question."""
    schema = json.loads(user.split("JSON Schema of the answer:\n", 1)[1])
    props = schema["properties"]["atoms"]["properties"]
    sources = {}
    for name in ("rationale", "trace", "context", "response", "reference"):
        head = f"<{name}>\n"
        if head in user:
            sources[name] = user.split(head, 1)[1].split(f"\n</{name}>", 1)[0]
    return props, sources


def first_words(text: str) -> str:
    return text[:24]


def honest(user: str) -> str:
    """A scripted reader: TRUE for every statement that may quote the rationale, quoting its
    first words; UNKNOWN for the rest."""
    props, sources = prompt_parts(user)
    atoms = {}
    for atom, st in props.items():
        allowed = st["properties"]["quotes"]["items"]["properties"]["source"]["enum"]
        if "rationale" in allowed:
            atoms[atom] = {
                "value": "TRUE",
                "quotes": [{"source": "rationale", "text": first_words(sources["rationale"])}],
            }
        else:
            atoms[atom] = {"value": "UNKNOWN", "quotes": []}
    return json.dumps({"atoms": atoms})


def output(text: str, stop: str = "stop"):
    from inspect_ai.model import ModelOutput, ModelUsage

    o = ModelOutput.from_content("mockllm/model", text, stop_reason=stop)
    o.usage = ModelUsage(input_tokens=100, output_tokens=20, total_tokens=120)
    return o


def run_mock(tmp_path: Path, inputs: list[Path], script, **kw):
    """Run the engine with the mock model; ``script(user_prompt, call_no)`` gives the
    completion (text, or (text, stop)), or is a coroutine function (to be slow)."""
    from inspect_ai.model import get_model

    from unmask.annotate.cache import Replies
    from unmask.annotate.provider import Provider
    from unmask.annotate.run import Run, Settings, items, names

    calls = []

    async def outputs(messages, tools, tool_choice, config):
        calls.append(messages[-1].text)
        got = script(messages[-1].text, len(calls))
        if asyncio.iscoroutine(got):
            got = await got
        text, stop = got if isinstance(got, tuple) else (got, "stop")
        return output(text, stop)

    model = get_model("mockllm/model", custom_outputs=outputs, memoize=False)
    provider = Provider(
        "mockllm/model",
        max_connections=2,
        timeout=kw.pop("timeout", 30),
        max_tokens=512,
        max_retries=0,
        model=model,
    )
    settings = Settings(model="mockllm/model", max_tokens=512, **kw)
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    run = Run(settings, out, provider, Replies(tmp_path / "cache"))
    given = names(items(tuple(str(p) for p in inputs), DEFAULT_LIMITS))
    summary = asyncio.run(run.run(given))
    return summary, out, calls


def annotation(path: Path, atom: str) -> dict:
    obj = json.loads(path.read_text())
    return next(a for a in obj["annotations"] if a["atom"] == atom)


@pytest.fixture()
def r1(tmp_path: Path) -> Path:
    return free_replays(tmp_path) / "r1.json"


@needs_inspect
def test_an_honest_answer_is_written_with_exact_spans_and_the_model_as_reader(tmp_path, r1):
    summary, out, calls = run_mock(tmp_path, [r1], lambda user, n: honest(user))
    assert len(calls) == 1 and summary.calls == 1 and summary.written == 1
    said = annotation(out / "r1.json", "said(joined)")
    rationale = json.loads(r1.read_text())["sources"]["rationale"]
    assert said["value"] == "TRUE"
    assert said["evidence"] == [
        {"source": "rationale", "start": 0, "end": 24, "quote": rationale[:24]}
    ]
    by = said["by"]
    assert by["kind"] == "model" and by["name"] == "mockllm/model" and by["reviewed"] is False
    assert by["version"].startswith("sha256:") and len(by["version"]) == len("sha256:") + 16
    # a context atom the model answered UNKNOWN: UNKNOWN with the reason, never FALSE
    backed = annotation(out / "r1.json", "backed(cto)")
    assert backed["value"] == "UNKNOWN" and "answered UNKNOWN" in backed["explanation"]
    # the output is a valid replay (validated before it was written, and again here)
    res = CliRunner().invoke(main, ["validate", str(out / "r1.json")])
    assert res.exit_code == 0, res.output


@needs_inspect
def test_a_made_up_quote_gives_unknown_with_its_reason(tmp_path, r1):
    def script(user, n):
        props, _ = prompt_parts(user)
        atoms = {a: {"value": "UNKNOWN", "quotes": []} for a in props}
        atoms["backed(cto)"] = {
            "value": "TRUE",
            "quotes": [{"source": "context", "text": "Alice is ACME's CTO."}],
        }
        atoms["outside"] = {
            "value": "FALSE",
            "quotes": [{"source": "rationale", "text": "I used only the passages."}],
        }
        return json.dumps({"atoms": atoms})

    summary, out, _ = run_mock(tmp_path, [r1], script)
    backed = annotation(out / "r1.json", "backed(cto)")
    assert backed["value"] == "UNKNOWN" and backed["evidence"] == []
    assert "its quote `Alice is ACME's CTO.` is not in `context`" in backed["explanation"]
    assert summary.reasons["quote"] == 1
    # a quote that is there gives the value, FALSE included
    assert annotation(out / "r1.json", "outside")["value"] == "FALSE"


@needs_inspect
@pytest.mark.parametrize(
    ("reply", "reason", "code"),
    [
        (
            '{"atoms": {"said(joined)": {"value": "YES", "quotes": []}}}',
            "breaks the schema at answer.atoms",
            "schema",
        ),
        (
            '{"atoms": {"nope": {"value": "TRUE", "quotes": []}}}',
            "is not a statement asked about",
            "schema",
        ),
        ("Sure! Here is my reading: TRUE.", "the answer is not JSON", "schema"),
        (("I can't help with that.", "content_filter"), "the model refused", "refused"),
        (
            ('{"atoms": {"said(joined)": {"value": "TRUE", "quo', "max_tokens"),
            "cut off",
            "truncated",
        ),
    ],
)
def test_a_broken_refused_or_truncated_answer_gives_unknown(tmp_path, r1, reply, reason, code):
    summary, out, _ = run_mock(tmp_path, [r1], lambda user, n: reply)
    obj = json.loads((out / "r1.json").read_text())
    read = [a for a in obj["annotations"] if a.get("by", {}).get("kind") == "model"]
    assert read and all(a["value"] == "UNKNOWN" for a in read)
    assert all(reason in a["explanation"] for a in read)
    assert summary.reasons[code] == len(read)
    assert summary.values["TRUE"] == summary.values["FALSE"] == 0


@needs_inspect
def test_a_timeout_gives_unknown_is_an_error_record_and_is_not_cached(tmp_path, r1):
    async def slow(user, n):
        await asyncio.sleep(5)
        return honest(user)

    summary, out, _calls = run_mock(tmp_path, [r1], lambda u, n: slow(u, n), timeout=1)
    said = annotation(out / "r1.json", "said(joined)")
    assert said["value"] == "UNKNOWN" and "no answer within 1 s" in said["explanation"]
    assert summary.failures == 1 and summary.reasons["timeout"] > 0
    [(_, location, diags)] = summary.errors
    assert location.endswith("r1.json") and diags[0].code == "timeout"
    # not cached: the next run asks again, and now gets the answer
    summary, out, _ = run_mock(tmp_path, [r1], lambda user, n: honest(user))
    assert summary.calls == 1 and annotation(out / "r1.json", "said(joined)")["value"] == "TRUE"


def disagreeing(user, n):
    """Sample answers that differ on `outside`: TRUE on odd calls, FALSE on even ones."""
    props, _ = prompt_parts(user)
    atoms = {a: {"value": "UNKNOWN", "quotes": []} for a in props}
    if n % 2:
        atoms["outside"] = {
            "value": "TRUE",
            "quotes": [{"source": "rationale", "text": "Passage [1] says"}],
        }
    else:
        atoms["outside"] = {
            "value": "FALSE",
            "quotes": [{"source": "rationale", "text": "I used only the passages."}],
        }
    return json.dumps({"atoms": atoms})


@needs_inspect
def test_two_samples_that_disagree_give_unknown_with_both_readings(tmp_path, r1):
    two_samples(tmp_path, r1)


def two_samples(tmp_path: Path, r1: Path) -> Path:
    summary, out, calls = run_mock(tmp_path, [r1], disagreeing, samples=2)
    assert len(calls) == 2
    ann = annotation(out / "r1.json", "outside")
    assert ann["value"] == "UNKNOWN" and ann["evidence"] == []
    assert ann["explanation"].startswith("readers disagree:")
    assert [r["value"] for r in ann["readings"]] == ["TRUE", "FALSE"]
    assert [r["evidence"][0]["quote"] for r in ann["readings"]] == [
        "Passage [1] says",
        "I used only the passages.",
    ]
    assert all(r["by"]["kind"] == "model" for r in ann["readings"])
    assert summary.reasons["disagree"] == 1
    # both samples UNKNOWN elsewhere: agreement on UNKNOWN, no readings kept
    assert "readings" not in annotation(out / "r1.json", "cited")
    return out


@needs_inspect
def test_disagreeing_readers_are_shown_in_text_html_and_json(tmp_path, r1):
    out = two_samples(tmp_path, r1)
    replay = str(out / "r1.json")
    text = CliRunner().invoke(main, ["check", replay]).output
    assert "readers disagree on `outside`, so it is UNKNOWN:" in text
    assert "- TRUE by model mockllm/model, unreviewed" in text
    assert '"I used only the passages." (rationale [' in text
    report = json.loads(CliRunner().invoke(main, ["check", replay, "--format", "json"]).output)
    [d] = report["disagreements"]
    assert d["atom"] == "outside" and [r["value"] for r in d["readings"]] == ["TRUE", "FALSE"]
    assert d["readings"][1]["evidence"][0]["quote"] == "I used only the passages."
    html = CliRunner().invoke(main, ["check", replay, "--format", "html"]).output
    assert "readers disagree, so the atom is UNKNOWN" in html
    assert "“I used only the passages.”" in html and "“Passage [1] says”" in html


@needs_inspect
def test_a_rule_reader_and_the_model_must_agree(tmp_path, r1):
    # claims-lexical reads context atoms only, and says TRUE or nothing: where the model
    # says FALSE it abstains, so the two do not agree and the atom stays UNKNOWN
    def script(user, n):
        props, _ = prompt_parts(user)
        atoms = {a: {"value": "UNKNOWN", "quotes": []} for a in props}
        atoms["backed(joined)"] = {
            "value": "FALSE",
            "quotes": [{"source": "context", "text": "Bob has been ACME's CTO"}],
        }
        return json.dumps({"atoms": atoms})

    _, out, _ = run_mock(tmp_path, [r1], script, readers=("model", "claims-lexical"))
    ann = annotation(out / "r1.json", "backed(joined)")
    assert ann["value"] == "UNKNOWN"
    assert {r["by"]["name"] for r in ann["readings"]} == {"mockllm/model", "claims-lexical/2"}
    assert ann["by"]["name"] == "mockllm/model + claims-lexical/2"
    # a judge atom: claims-lexical does not read it, so the model alone decides
    assert "readings" not in annotation(out / "r1.json", "said(joined)")


@needs_inspect
def test_a_second_run_makes_no_call_and_writes_the_same_bytes(tmp_path, r1):
    summary, out, calls = run_mock(tmp_path, [r1], lambda user, n: honest(user))
    first = (out / "r1.json").read_bytes()
    summary, out, calls = run_mock(tmp_path, [r1], lambda user, n: honest(user))
    assert calls == [] and summary.calls == 0 and summary.cached == 1
    assert (out / "r1.json").read_bytes() == first


@needs_inspect
def test_max_calls_stops_cleanly_and_a_rerun_goes_on(tmp_path):
    folder = free_replays(tmp_path)
    summary, _out, calls = run_mock(tmp_path, [folder], lambda u, n: honest(u), max_calls=4)
    assert len(calls) == 4 and summary.written == 4 and summary.stopped == 6
    summary, _, calls = run_mock(tmp_path, [folder], lambda u, n: honest(u))
    assert len(calls) == 6 and summary.cached == 4 and summary.written == 10


def test_dry_run_on_the_rag_example_counts_calls_and_tokens_and_makes_none(tmp_path):
    folder = free_replays(tmp_path)
    env = {"UNMASK_CACHE_DIR": str(tmp_path / "cache")}
    res = CliRunner().invoke(
        main,
        ["annotate", str(folder), "--model", "openai-api/nowhere/m", "--dry-run"],
        env=env,
    )
    assert res.exit_code == 0, res.output
    assert "10 calls to `openai-api/nowhere/m`" in res.output
    tokens = int(res.output.split("about ", 1)[1].split(" tokens", 1)[0].replace(",", ""))
    from unmask.annotate.question import CHARS_PER_TOKEN, ask, questions
    from unmask.annotate.run import items

    expected = 0
    for item in items((str(folder),), DEFAULT_LIMITS):
        a = ask(
            "openai-api/nowhere/m",
            questions(item.replay),
            item.replay.sources,
            0,
            {"max_tokens": 2048},
        )
        expected += -(-(len(a.system) + len(a.user)) // CHARS_PER_TOKEN)
    assert tokens == expected > 0
    assert not (tmp_path / "cache" / "annotate").exists() or not list(
        (tmp_path / "cache" / "annotate").glob("*.json")
    )


def test_without_the_extra_one_line_says_what_to_install_exit_2(tmp_path, r1, monkeypatch):
    for name in [m for m in sys.modules if m == "inspect_ai" or m.startswith("inspect_ai.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # `import inspect_ai` now fails
    res = CliRunner().invoke(
        main,
        ["annotate", str(r1), "--model", "openai/gpt-4o-mini", "--out", str(tmp_path / "o")],
        env={"UNMASK_CACHE_DIR": ""},  # no cache: the warning would come after
    )
    assert res.exit_code == 2
    assert not (tmp_path / "o").exists()
    assert res.output.splitlines() == [
        "`unmask annotate` asks a model through Inspect AI, which is not installed: "
        "pip install 'unmask[models]'"
    ]


# --- the question: prompt and schema from the protocol, read back by hand ---------------------


def rag_questions(tmp_path: Path):
    from unmask.annotate.question import questions
    from unmask.replay.load import load_replay

    replay = load_replay(str(free_replays(tmp_path) / "r1.json"))
    return replay, questions(replay)


def test_the_question_names_each_open_atom_its_role_description_and_sources(tmp_path):
    from unmask.replay.judgeschema import emit_reading_prompt

    replay, qs = rag_questions(tmp_path)
    # quotes_verbatim is annotated by the importer: not open, not asked
    assert [q.atom for q in qs] == [
        "said(joined)",
        "said(cto)",
        "checked(joined)",
        "checked(cto)",
        "cited",
        "outside",
        "backed(joined)",
        "backed(cto)",
    ]
    by_atom = {q.atom: q for q in qs}
    assert by_atom["said(joined)"].sources == ("rationale",)
    assert by_atom["cited"].sources == ("rationale", "trace")
    assert by_atom["backed(cto)"].sources == ("context", "response")
    prompt = emit_reading_prompt(qs, replay.sources)
    assert (
        "- backed(cto) (context; quote from: context, response): "
        "The passages support claim cto of the answer"
    ) in prompt
    assert f"<context>\n{replay.sources['context']}\n</context>" in prompt


@pytest.mark.parametrize(
    "answer",
    [
        {"atoms": {}},
        {"atoms": {"cited": {"value": "UNKNOWN", "quotes": []}}},
        {"atoms": {"cited": {"value": "TRUE", "quotes": [{"source": "trace", "text": "q"}]}}},
        {"atoms": {"cited": {"value": "TRUE", "quotes": []}}},
        {"atoms": {"cited": {"value": "UNKNOWN", "quotes": [{"source": "trace", "text": "q"}]}}},
        {"atoms": {"cited": {"value": "TRUE", "quotes": [{"source": "context", "text": "q"}]}}},
        {"atoms": {"cited": {"value": "TRUE", "quotes": [{"source": "trace", "text": ""}]}}},
        {"atoms": {"cited": {"value": "TRUE", "quotes": ["q"]}}},
        {"atoms": {"cited": {"value": "true", "quotes": []}}},
        {"atoms": {"nope": {"value": "UNKNOWN", "quotes": []}}},
        {"atoms": {"cited": {"value": "UNKNOWN"}}},
        {"atoms": {"cited": {"value": "UNKNOWN", "quotes": [], "why": "x"}}},
        {"atoms": [], "extra": 1},
        {},
        [],
    ],
)
def test_the_schema_and_the_hand_reader_agree(tmp_path, answer):
    import jsonschema

    from unmask.replay.judgeschema import ShapeError, read_reading, reading_schema

    _, qs = rag_questions(tmp_path)
    schema = reading_schema(qs)
    jsonschema.Draft202012Validator.check_schema(schema)
    by_schema = jsonschema.Draft202012Validator(schema).is_valid(answer)
    try:
        read_reading(answer, qs)
        by_hand = True
    except ShapeError:
        by_hand = False
    assert by_schema == by_hand


def test_a_model_readers_version_is_the_same_for_every_replay_and_protocol():
    from unmask.annotate.run import Settings

    a = Settings(model="m/x").model_by()["version"]
    assert a == Settings(model="other/y").model_by()["version"]
    assert a != Settings(model="m/x", max_tokens=100).model_by()["version"]


def test_every_option_is_documented():
    from unmask.commands.annotate import command

    page = (ROOT / "docs" / "annotate.md").read_text()
    for p in command.params:
        for opt in getattr(p, "opts", []):
            if (opt.startswith("--") and not opt.startswith("--max-")) or opt in (
                "--max-calls",
                "--max-tokens",
                "--max-connections",
                "--max-retries",
            ):
                assert f"`{opt}" in page, opt


def test_readers_that_are_all_proposers_need_no_model_and_make_no_call(tmp_path, r1):
    out = tmp_path / "o"
    res = CliRunner().invoke(
        main,
        ["annotate", str(r1), "--readers", "claims-lexical", "--out", str(out)],
        env={"UNMASK_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert res.exit_code == 0, res.output
    obj = json.loads((out / "r1.json").read_text())
    backed = {a["atom"]: a for a in obj["annotations"] if a["atom"].startswith("backed(")}
    # the claim proposer reads context atoms only; `backed(claim)` names claims, not
    # passages, so it abstains, with its reason: UNKNOWN, never FALSE
    assert [a["value"] for a in backed.values()] == ["UNKNOWN", "UNKNOWN"]
    assert backed["backed(joined)"]["by"]["name"] == "claims-lexical/2"
    assert (
        "abstained: the members of `backed` do not each name a passage"
        in (backed["backed(joined)"]["explanation"])
    )
    assert not any(a["atom"].startswith("said(") for a in obj["annotations"])
    assert "0 calls (0 cached)" in res.output and "2 UNKNOWN (2 abstained)" in res.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--out", "o"], "`--model` is missing"),
        (["--model", "gpt-4o", "--out", "o"], "`--model` is PROVIDER/MODEL, found `gpt-4o`"),
        (["--model", "a/b"], "`--out` is missing"),
        (["--model", "a/b", "--out", "o", "--readers", "model,nope"], "unknown proposer `nope`"),
        (["--model", "a/b", "--out", "o", "--readers", "model,model"], "names a reader twice"),
    ],
)
def test_usage_errors_are_one_message_and_exit_2(tmp_path, r1, args, message):
    res = CliRunner().invoke(main, ["annotate", str(r1), *args], env={"UNMASK_CACHE_DIR": ""})
    assert res.exit_code == 2
    assert message in res.output
    assert "Traceback" not in res.output


def test_a_missing_model_points_to_a_persons_readings_too(tmp_path, r1, monkeypatch):
    from unmask.commands import annotate

    said = []
    monkeypatch.setattr(annotate, "render", lambda d: said.append(d) or "")
    res = CliRunner().invoke(
        main, ["annotate", str(r1), "--out", "o"], env={"UNMASK_CACHE_DIR": ""}
    )
    assert res.exit_code == 2
    (d,) = said
    assert (d.code, d.message) == ("usage", "`--model` is missing")
    assert d.help.endswith(
        "a person's readings need none: `--from ANNOTATIONS.jsonl --reader NAME`"
    )


def test_a_protocol_named_by_path_is_embedded_in_the_replay_written(tmp_path, r1):
    protos = tmp_path / "protos"
    protos.mkdir()
    obj = json.loads(r1.read_text())
    text = obj["protocol"]["source"]  # the importer's: rag.proto and `quotes_verbatim`
    (protos / "rag.proto").write_text(text)
    replays = tmp_path / "replays"
    replays.mkdir()
    obj["protocol"] = {"path": "../protos/rag.proto"}
    (replays / "r1.json").write_text(json.dumps(obj))
    out = tmp_path / "o"
    res = CliRunner().invoke(
        main,
        [
            "annotate",
            str(replays),
            "--readers",
            "claims-lexical",
            "--out",
            str(out),
            "--protocol-path",
            str(protos),
        ],
        env={"UNMASK_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert res.exit_code == 0, res.output
    written = json.loads((out / "r1.json").read_text())
    assert written["protocol"] == {"source": text}


@needs_inspect
def test_a_question_over_the_size_bound_is_not_asked(tmp_path, r1):
    summary, out, calls = run_mock(
        tmp_path, [r1], lambda user, n: honest(user), max_question_chars=1000
    )
    assert calls == [] and summary.calls == 0 and summary.errors == []
    said = annotation(out / "r1.json", "said(joined)")
    assert said["value"] == "UNKNOWN" and "not asked: the question is" in said["explanation"]
    assert "over 1,000" in said["explanation"]
    assert summary.reasons["too-long"] == 8
    res = CliRunner().invoke(
        main,
        ["annotate", str(r1), "--model", "a/b", "--dry-run", "--max-question-chars", "1000"],
        env={"UNMASK_CACHE_DIR": str(tmp_path / "c2")},
    )
    assert "0 calls to `a/b`" in res.output
    assert "1 replays not asked (question over `--max-question-chars`)" in res.output


@needs_inspect
def test_a_fractional_timeout_reaches_inspect_in_whole_seconds_rounded_up():
    """Inspect's timeouts are whole seconds: `--timeout 2.5` was refused as the provider
    was made (a validation error), though the option takes any number from 0.1."""
    from inspect_ai.model import get_model

    from unmask.annotate.provider import Provider

    model = get_model("mockllm/model", memoize=False)
    kw = {"max_connections": 1, "max_tokens": 16, "max_retries": 0, "model": model}
    got = Provider("mockllm/model", timeout=2.5, **kw)
    assert (got.config.timeout, got.config.attempt_timeout, got.timeout) == (3, 3, 3)
    whole = Provider("mockllm/model", timeout=120.0, **kw)
    assert (whole.config.timeout, whole.config.attempt_timeout) == (120, 120)
