"""The model-backed proposer against recorded responses served from 127.0.0.1 only."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from unmask.cli.main import main
from unmask.plumbing.diagnostics import UnmaskError
from unmask.propose import create
from unmask.propose.model import MAX_FAILURES, Abstain, Answer, ModelChat, endpoint, parse_reply
from unmask.replay.load import load_replay

ROOT = Path(__file__).resolve().parents[2]
RECORDED = Path(__file__).parents[1] / "data" / "propose" / "model"
EXAMPLE = ROOT / "examples" / "claim_parts_underdetermined.json"
RATIONALE = json.loads(EXAMPLE.read_text(encoding="utf-8"))["sources"]["rationale"]
SOURCES = {"rationale": RATIONALE}
DESCRIPTION = "The judge asserts part medal of the claim is supported"


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    # requests go to 127.0.0.1 and nowhere else, whatever proxy the environment names
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)


@contextmanager
def serve(*names: str) -> Iterator[tuple[str, list[dict]]]:
    """A server on 127.0.0.1 (a free port) answering one recorded file per request, in order,
    then no more: it handles at most ``len(names)`` requests and is shut down on exit."""
    replies = [json.loads((RECORDED / n).read_text(encoding="utf-8")) for n in names]
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # the name http.server calls
            length = int(self.headers.get("Content-Length", "0"))
            seen.append(
                {
                    "path": self.path,
                    "headers": dict(self.headers),
                    "body": json.loads(self.rfile.read(length)),
                }
            )
            reply = replies[len(seen) - 1]
            time.sleep(reply.get("delay", 0))
            data = json.dumps(reply["body"]).encode("utf-8")
            try:
                self.send_response(reply["status"])
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the client gave up (the timeout case)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    server.timeout = 5

    def loop() -> None:
        for _ in replies:
            server.handle_request()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        thread.join(timeout=10)
        server.server_close()


def proposer(url: str, **extra: str) -> ModelChat:
    env = {"UNMASK_MODEL_URL": url, "UNMASK_MODEL_NAME": "recorded-model"}
    env.update(extra)
    return ModelChat(env)


def test_a_good_answer_is_used_with_its_exact_span():
    with serve("good.json") as (url, seen):
        p = proposer(url, UNMASK_MODEL_KEY="sk-test")
        answer = p.ask("said(medal)", DESCRIPTION, SOURCES)
    assert isinstance(answer, Answer)
    assert answer.value == "FALSE" and answer.source == "rationale"
    assert RATIONALE[answer.start : answer.end] == answer.quote
    assert answer.quote == "Line 1 gives the 1843 publication of the notes."
    assert answer.confidence == 0.8
    (request,) = seen
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    body = request["body"]
    assert body["model"] == "recorded-model" and body["temperature"] == 0
    user = body["messages"][-1]["content"]
    assert DESCRIPTION in user and RATIONALE in user and "said(medal)" in user


def test_a_fenced_answer_is_read():
    with serve("fenced.json") as (url, _):
        answer = proposer(url).ask("cited", "The judge cites", SOURCES)
    assert isinstance(answer, Answer) and answer.value == "TRUE"
    assert RATIONALE[answer.start : answer.end] == "Answer: supported"


@pytest.mark.parametrize(
    ("recorded", "reason"),
    [
        ("not_in_source.json", "the quote does not occur in the sources"),
        ("malformed.json", "the answer is not JSON"),
        ("unknown.json", "the model answered UNKNOWN"),
        ("http_error.json", "the endpoint answered HTTP 500"),
    ],
)
def test_what_cannot_be_verified_abstains(recorded: str, reason: str):
    with serve(recorded) as (url, seen):
        answer = proposer(url).ask("said(medal)", DESCRIPTION, SOURCES)
    assert answer == Abstain(reason)
    assert len(seen) == 1  # one attempt, no retry


def test_a_timeout_abstains_within_the_bound():
    with serve("timeout.json") as (url, seen):
        p = proposer(url, UNMASK_MODEL_TIMEOUT="0.3")
        began = time.monotonic()
        answer = p.ask("said(medal)", DESCRIPTION, SOURCES)
        took = time.monotonic() - began
    assert answer == Abstain("no answer within 0.3 s")
    assert took < 1.5
    assert len(seen) == 1


def test_after_failures_in_a_row_it_stops_asking():
    with serve(*["http_error.json"] * MAX_FAILURES) as (url, seen):
        p = proposer(url)
        answers = [p.ask(f"a{i}", "", SOURCES) for i in range(MAX_FAILURES + 2)]
    assert len(seen) == MAX_FAILURES
    assert answers[-1] == Abstain(f"not asked: {MAX_FAILURES} requests in a row failed")


def test_it_is_not_usable_without_an_endpoint(monkeypatch):
    monkeypatch.delenv("UNMASK_MODEL_URL", raising=False)
    with pytest.raises(UnmaskError) as err:
        create("model-chat")
    assert err.value.diagnostics[0].code == "model-not-configured"
    assert "`UNMASK_MODEL_URL` is not set" in err.value.diagnostics[0].message
    with pytest.raises(UnmaskError, match="http or https"):
        ModelChat({"UNMASK_MODEL_URL": "file:///etc/passwd"})
    with pytest.raises(UnmaskError, match="UNMASK_MODEL_TIMEOUT"):
        ModelChat({"UNMASK_MODEL_URL": "http://127.0.0.1:9/v1", "UNMASK_MODEL_TIMEOUT": "-1"})


def test_endpoint_and_reply_parsing():
    assert endpoint("http://h/v1/") == "http://h/v1/chat/completions"
    assert endpoint("http://h/v1/chat/completions") == "http://h/v1/chat/completions"
    assert parse_reply(b"not json", SOURCES) == Abstain("the response is not a chat completion")
    assert parse_reply(b'{"choices": []}', SOURCES) == Abstain(
        "the response is not a chat completion"
    )


def test_propose_replay_with_the_model(tmp_path: Path, monkeypatch):
    shutil.copy(EXAMPLE, tmp_path / "ex.json")
    shutil.copy(EXAMPLE.with_name("claim_parts.proto"), tmp_path / "claim_parts.proto")
    out = tmp_path / "out.json"
    with serve("good.json") as (url, seen):
        monkeypatch.setenv("UNMASK_MODEL_URL", url)
        monkeypatch.setenv("UNMASK_MODEL_NAME", "recorded-model")
        args = ["propose", "replay", str(tmp_path / "ex.json"), "-o", str(out)]
        res = CliRunner().invoke(main, [*args, "--proposer", "model-chat"])
    assert res.exit_code == 0, res.output
    assert len(seen) == 1  # one open atom, one question
    assert "filled `said(medal)` by model-chat/1 (confidence 0.8)" in res.output
    assert "1 of 1 open atoms filled, unreviewed" in res.output
    anns = {a["atom"]: a for a in json.loads(out.read_text(encoding="utf-8"))["annotations"]}
    a = anns["said(medal)"]
    assert a["value"] == "FALSE"
    assert a["by"] == {"kind": "model", "name": "model-chat/1", "reviewed": False}
    assert a["explanation"].endswith("confidence 0.8")
    load_replay(out)
    check = CliRunner().invoke(main, ["check", str(out)])
    assert "`said(medal)`=FALSE (model model-chat/1, unreviewed)" in check.output
