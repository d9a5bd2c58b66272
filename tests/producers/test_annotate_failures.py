"""`unmask annotate` when the model cannot answer: every failure in our words, never the
model library's.

The model is Inspect's mock model whose answer raises errors shaped like the provider
clients' (a ``status_code``, a JSON ``body``, the client's class names), and Inspect's own
errors when the model cannot be made (a key not set, a provider it does not know): no
network. Each failure is a diagnostic whose code, message and help the tests assert; the
provider's own words are at most a quoted, shortened note; no exception class name, no
traceback and no request text reaches stderr; a failure every call would repeat stops the
run once (exit 2), any other is the replay's error record and the run goes on (exit 1).
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.producers.test_annotate import free_replays, honest, needs_inspect
from unmask.cli.main import main
from unmask.plumbing.codes import Code

MODEL = "mockllm/model"
SECRET = "SECRET-SOURCE-TEXT"  # a request's content, which Inspect wraps in its errors
# what a message may never show: a client's class name, a traceback, Inspect's wrapper
LEAKS = re.compile(r"Traceback|[A-Z][A-Za-z]*(Error|Exception)\b|Request:|\[bold\]|" + SECRET)


# errors shaped as the provider clients raise them (the openai and anthropic clients'
# names and attributes), so the classification is tested without either installed
class APIStatusError(Exception):
    status_code = 0

    def __init__(self, message: str) -> None:
        super().__init__(f"Error code: {self.status_code} - {message}")
        self.body = {"message": message, "type": "error"}


def status_error(code: int) -> type[APIStatusError]:
    return type(f"Status{code}Error", (APIStatusError,), {"status_code": code})


class APIConnectionError(Exception):
    pass


class ModelGenerateError(RuntimeError):
    """Inspect's wrapper: its text is the whole request, the sources included."""


def wrapped(inner: BaseException) -> BaseException:
    try:
        raise ModelGenerateError(f'\nRequest:\n{{"content": "{SECRET}"}}\n\n{inner!r}') from inner
    except ModelGenerateError as exc:
        return exc


def malformed() -> BaseException:
    try:
        json.loads("<html>oops</html>")
    except ValueError as exc:
        return exc
    raise AssertionError


def invoke(tmp_path: Path, monkeypatch, raises, replays: int = 1, *args: str):
    """`unmask annotate` on ``replays`` replays, every call raising ``raises()``, or what
    ``raises(call_no)`` returns when it is not an exception (an honest answer)."""
    import inspect_ai.model as im

    from tests.producers.test_annotate import output

    calls: list[int] = []
    real = im.get_model

    async def outputs(messages, tools, tool_choice, config):
        calls.append(1)
        got = raises(len(calls), messages[-1].text)
        if isinstance(got, BaseException):
            raise got
        return output(got)

    def get_model(name, **kw):
        return real(MODEL, custom_outputs=outputs, memoize=False)

    monkeypatch.setattr(im, "get_model", get_model)
    free = free_replays(tmp_path)
    paths = [str(free / f"r{i}.json") for i in range(1, replays + 1)]
    out = tmp_path / "out"
    argv = ["annotate", *paths, "--model", MODEL, "--out", str(out), "--max-retries", "0", *args]
    res = CliRunner().invoke(main, argv, env={"UNMASK_CACHE_DIR": str(tmp_path / "c")})
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    errors = out / "errors.jsonl"
    records = [json.loads(x) for x in errors.read_text().splitlines()] if errors.exists() else []
    return res, out, records, calls


def no_leak(text: str) -> None:
    assert not LEAKS.search(text), LEAKS.search(text)


# (what the call raises, the code, the message after `model `…`: `, words in the help,
# the provider's words in the note or None)
PASSING = [
    (
        lambda: status_error(429)("Rate limit reached for requests"),
        Code.RATE_LIMITED,
        "the provider rate-limited the call (HTTP 429), after every retry",
        "run again later",
        "Rate limit reached for requests",
    ),
    (
        lambda: status_error(500)("the server is down"),
        Code.PROVIDER,
        "the provider failed with HTTP 500",
        "run again later",
        "the server is down",
    ),
    (
        lambda: wrapped(status_error(400)("max_tokens is too large")),
        Code.PROVIDER,
        "the provider refused the call with HTTP 400",
        "in the note, say why",
        "max_tokens is too large",
    ),
    (
        lambda: APIConnectionError("Connection error."),
        Code.UNREACHABLE,
        "the provider cannot be reached",
        "check the network",
        None,
    ),
    (
        malformed,
        Code.MALFORMED_REPLY,
        "the provider's answer is malformed",
        "base URL is the provider's API",
        "Expecting value: line 1 column 1 (char 0)",
    ),
    (
        lambda: asyncio.TimeoutError(),
        Code.TIMEOUT,
        "no answer within 30 s",
        "raise `--timeout`",
        None,
    ),
]


@needs_inspect
@pytest.mark.parametrize(("raise_", "code", "message", "help_", "said"), PASSING)
def test_a_failed_call_is_our_diagnostic_and_the_run_goes_on(
    tmp_path, monkeypatch, raise_, code, message, help_, said
):
    # r4's call fails; r1 to r3 are answered and written, r4 too (its atoms UNKNOWN)
    def answer(n, user):
        return raise_() if "Eiffel" in user else honest(user)

    res, out, records, _ = invoke(tmp_path, monkeypatch, answer, 4, "--timeout", "30")
    assert res.exit_code == 1, res.stderr
    no_leak(res.stderr)
    [record] = records
    assert record["location"].endswith("r4.json")
    [err] = record["errors"]
    assert err["code"] == code
    assert err["message"] == f"model `{MODEL}`: {message}"
    assert help_ in err["help"]
    if said is None:
        assert "notes" not in err
    else:
        assert err["notes"] == [f"the provider said: “{said}”"]
    assert f"error: model `{MODEL}`: {message}" in res.stderr
    no_leak(json.dumps(records))
    written = sorted(p.name for p in out.glob("r*.json"))
    assert len(written) == 4  # nothing lost: every replay written
    failed = json.loads((out / "r4.json").read_text())
    read = [a for a in failed["annotations"] if a.get("by", {}).get("kind") == "model"]
    assert read and all(a["value"] == "UNKNOWN" for a in read)
    assert all(message in a["explanation"] for a in read)
    no_leak(json.dumps(failed["annotations"]))


@needs_inspect
@pytest.mark.parametrize(
    ("raise_", "code", "message", "help_"),
    [
        (
            lambda: status_error(401)("Incorrect API key provided: sk-abc"),
            Code.CREDENTIALS,
            "the provider refused the credentials (HTTP 401)",
            "check `MOCKLLM_API_KEY`, the API key provider `mockllm` reads from the environment",
        ),
        (
            lambda: wrapped(status_error(403)("not allowed")),
            Code.CREDENTIALS,
            "the provider refused the credentials (HTTP 403)",
            "`--from FILE --reader NAME`",
        ),
        (
            lambda: status_error(404)("The model `gpt-5o` does not exist"),
            Code.MODEL,
            "the provider does not know this model (HTTP 404)",
            "check the model's name",
        ),
    ],
)
def test_a_failure_every_call_would_repeat_stops_the_run_once(
    tmp_path, monkeypatch, raise_, code, message, help_
):
    res, out, records, calls = invoke(
        tmp_path, monkeypatch, lambda n, user: raise_(), 5, "--max-connections", "1"
    )
    assert res.exit_code == 2, res.stderr
    no_leak(res.stderr)
    assert res.stderr.count(f"error: model `{MODEL}`: {message}") == 1
    assert "stopped: 5 replays left unwritten" in res.stderr
    assert len(calls) <= 2  # the call that met it (and one in flight), then none
    [record] = records
    [err] = record["errors"]
    assert (err["code"], err["message"]) == (code, f"model `{MODEL}`: {message}")
    assert help_ in err["help"] and err["notes"][0].startswith("the provider said: “")
    assert not list(out.glob("r*.json"))  # nothing written: a rerun reads them all


@needs_inspect
def test_after_the_stop_a_rerun_with_the_failure_fixed_writes_every_replay(tmp_path, monkeypatch):
    res, *_ = invoke(tmp_path, monkeypatch, lambda n, user: status_error(401)("bad key"), 3)
    assert res.exit_code == 2
    monkeypatch.undo()  # the model made anew, now answering
    res, out, records, _ = invoke(tmp_path, monkeypatch, lambda n, user: honest(user), 3)
    assert res.exit_code == 0, res.stderr
    assert len(list(out.glob("r*.json"))) == 3 and not records


@needs_inspect
@pytest.mark.parametrize(
    ("model", "env", "code", "message", "help_"),
    [
        (
            "openai-api/local/m",
            {"LOCAL_BASE_URL": "http://127.0.0.1:9/v1"},
            Code.CREDENTIALS,
            "model `openai-api/local/m` has no credentials:"
            " `LOCAL_API_KEY` is not in the environment",
            "set `LOCAL_API_KEY` in the environment",
        ),
        (
            "nosuch/m",
            {},
            Code.MODEL,
            "unknown provider `nosuch` in model `nosuch/m`",
            "`openai/gpt-4o-mini`",
        ),
    ],
)
def test_a_model_inspect_cannot_make_is_one_message_and_exit_2(
    tmp_path, monkeypatch, model, env, code, message, help_
):
    monkeypatch.delenv("LOCAL_API_KEY", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    from unmask.annotate.provider import Provider
    from unmask.plumbing.diagnostics import UnmaskError

    with pytest.raises(UnmaskError) as got:
        Provider(model, max_connections=1, timeout=1, max_tokens=16, max_retries=0)
    [d] = got.value.diagnostics
    assert (d.code, d.message) == (code, message)
    assert help_ in (d.help or "") and "`--from FILE --reader NAME`" in (d.help or "")
    r1 = free_replays(tmp_path) / "r1.json"
    res = CliRunner().invoke(
        main,
        ["annotate", str(r1), "--model", model, "--out", str(tmp_path / "o")],
        env={"UNMASK_CACHE_DIR": str(tmp_path / "c")},
    )
    assert res.exit_code == 2
    assert res.stderr.count("error: ") == 1 and f"error: {message}" in res.stderr
    no_leak(res.stderr)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("text", "code", "message", "help_"),
    [  # Inspect's own texts, as it raises them when the model cannot be made
        (
            "ERROR: Unable to initialise OpenAI client\n\nNo [bold][blue]OPENAI_API_KEY"
            "[/blue][/bold], [bold][blue]AZUREAI_OPENAI_API_KEY[/blue][/bold], or [bold]"
            "[blue]managed identity (Entra ID)[/blue][/bold] defined in the environment.",
            Code.CREDENTIALS,
            "model `openai/gpt-4o-mini` has no credentials:"
            " `OPENAI_API_KEY` or `AZUREAI_OPENAI_API_KEY` is not in the environment",
            "set `OPENAI_API_KEY` or `AZUREAI_OPENAI_API_KEY` in the environment",
        ),
        (
            "[bold]ERROR[/bold]: Anthropic API requires optional dependencies. Install with:"
            "\n\n[bold]pip install anthropic[/bold]",
            Code.MODEL,
            "provider `openai` of model `openai/gpt-4o-mini` needs a package that is not installed",
            "pip install anthropic",
        ),
        (
            "something [bold]else[/bold] went wrong",
            Code.MODEL,
            "model `openai/gpt-4o-mini` cannot be used",
            "PROVIDER/MODEL",
        ),
    ],
)
def test_why_a_model_cannot_be_made_is_in_our_words(text, code, message, help_):
    from unmask.annotate.provider import unusable

    class PrerequisiteError(RuntimeError):
        pass

    d = unusable("openai/gpt-4o-mini", PrerequisiteError(text))
    assert (d.code, d.message) == (code, message)
    assert help_ in (d.help or "")
    assert not LEAKS.search(d.message) and "[bold]" not in (d.help or "")
    assert d.notes in ((), ("the provider said: “something else went wrong”",))


def test_the_key_named_is_the_one_inspect_reads():
    from unmask.annotate.provider import key_variable

    assert key_variable("openai/gpt-4o-mini") == "OPENAI_API_KEY"
    assert key_variable("openai-api/local-llm/qwen") == "LOCAL_LLM_API_KEY"
    assert key_variable("anthropic/claude-3-5-haiku-latest") == "ANTHROPIC_API_KEY"
    assert key_variable("grok/grok-3") == "XAI_API_KEY"


def test_the_providers_words_are_shortened_and_a_wrapped_request_never_shown():
    from unmask.annotate.provider import DETAIL_CHARS, failure

    f = failure(wrapped(status_error(400)("x" * 5000)), MODEL, 30)
    assert f.code == Code.PROVIDER and SECRET not in f.detail
    assert len(f.detail) == DETAIL_CHARS and f.detail.endswith("…")
    retried = type("RetryError", (Exception,), {})("RetryError[<Future at 0x7f state=finished>]")
    inner = status_error(503)("overloaded")

    class Attempt:
        def exception(self):
            return inner

    retried.last_attempt = Attempt()
    f = failure(retried, MODEL, 30)
    assert (f.code, f.reason, f.detail) == (
        Code.PROVIDER,
        "the provider failed with HTTP 503",
        "overloaded",
    )
