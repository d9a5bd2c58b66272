"""`unmask annotate` through Inspect's OpenAI-compatible provider and a real HTTP server.

The server binds 127.0.0.1 only and answers chat completions from a script: what a model
would say, a quote it made up, a broken answer, a refusal, a cut-off answer, or silence
(a timeout). The command runs as a separate process where a run is killed half-way, and
in this process otherwise (a new process starts Python and Inspect again: 2.5 s of CPU).
Skipped without the `models` extra (`pip install 'unmask[models]'`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import NamedTuple

import pytest
from click.testing import CliRunner

from tests.conftest import found_files
from tests.helpers import default_sigint
from tests.producers.test_annotate import HAVE_INSPECT, free_replays, honest, prompt_parts
from unmask.cli.main import main

pytestmark = pytest.mark.skipif(
    not HAVE_INSPECT, reason="needs Inspect AI: pip install 'unmask[models]'"
)

MODEL = "openai-api/local/scripted"


class Server:
    """A chat-completions server on the loopback address; ``script(user)`` returns the
    reply's content, or ``(content, finish_reason)``, ``("refusal", text)`` or
    ``("sleep", seconds)`` or ``("status", HTTP_STATUS)``."""

    def __init__(self, script: Callable[[str], object], delay: float = 0.0) -> None:
        self.script = script
        self.delay = delay
        self.count = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.count += 1
                user = body["messages"][-1]["content"]
                if isinstance(user, list):
                    user = "".join(p.get("text", "") for p in user)
                got = outer.script(user)
                if outer.delay:
                    time.sleep(outer.delay)
                content, finish, refusal = got, "stop", None
                if isinstance(got, tuple) and got[0] == "status":
                    data = b'{"error": {"message": "the server is down", "type": "server_error"}}'
                    self.send_response(got[1])
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if isinstance(got, tuple):
                    if got[0] == "sleep":
                        time.sleep(got[1])
                        content = honest(user)
                    elif got[0] == "refusal":
                        content, refusal = None, got[1]
                    else:
                        content, finish = got
                reply = {
                    "id": "scripted",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {
                                "role": "assistant",
                                "content": content,
                                "refusal": refusal,
                            },
                            "finish_reason": finish,
                        }
                    ],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
                }
                data = json.dumps(reply).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (a timeout, a killed run)
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def server_factory():
    made: list[Server] = []

    def make(script: Callable[[str], object] = honest, delay: float = 0.0) -> Server:
        s = Server(script, delay)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def command(server: Server, cache: Path, *args: str) -> tuple[list[str], dict]:
    env = {
        **os.environ,
        "LOCAL_BASE_URL": server.url,
        "LOCAL_API_KEY": "test-key",
        "UNMASK_CACHE_DIR": str(cache),
        "NO_PROXY": "127.0.0.1",
    }
    argv = [sys.executable, "-c", "from unmask.cli.main import main; main()", "annotate", *args]
    return argv, env


def run(
    server: Server, cache: Path, *args: str, timeout: float = 240
) -> subprocess.CompletedProcess:
    argv, env = command(server, cache, *args)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)


class Done(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def run_here(server: Server, cache: Path, *args: str) -> Done:
    """``run``, in this process (click's runner), with the same environment."""
    _, env = command(server, cache, *args)
    extra = {k: v for k, v in env.items() if os.environ.get(k) != v}
    res = CliRunner().invoke(main, ["annotate", *args], env=extra)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return Done(res.exit_code, res.stdout, res.stderr)


def hundred(tmp_path: Path) -> Path:
    """100 replays: the ten rag judgments, ten times each under new ids."""
    free = free_replays(tmp_path)
    many = tmp_path / "many"
    many.mkdir()
    for f in found_files(free.glob("*.json")):
        obj = json.loads(f.read_text())
        rationale = obj["sources"]["rationale"]
        for k in range(10):
            obj["id"] = f"{f.stem}-{k}"
            # a question of its own: the same question for two replays is one call
            obj["sources"]["rationale"] = f"{rationale} (copy {k})"
            (many / f"{f.stem}-{k}.json").write_text(json.dumps(obj))
    return many


def test_made_up_quote_schema_break_refusal_and_timeout_through_the_server(
    tmp_path, server_factory
):
    free = free_replays(tmp_path)
    replies = {
        # r1: a quote the context does not hold
        "Alice joined ACME in 2024 as its CTO.": json.dumps(
            {
                "atoms": {
                    "backed(cto)": {
                        "value": "TRUE",
                        "quotes": [{"source": "context", "text": "Alice is the CTO of ACME."}],
                    }
                }
            }
        ),
        # r2: an answer that breaks the schema
        "The bridge opened in 1932.": '{"atoms": {"cited": {"value": "TRUE"}}}',
    }

    def script(user: str) -> object:
        _, sources = prompt_parts(user)
        response = sources.get("response", "")
        if response in replies:
            return replies[response]
        if "Eiffel" in response:
            return ("refusal", "I can't help with that.")
        if "Python" in response:
            return ("sleep", 12)
        return honest(user)

    server = server_factory(script)
    out = tmp_path / "out"
    res = run_here(
        server,
        tmp_path / "cache",
        str(free),
        "--model",
        MODEL,
        "--out",
        str(out),
        # long enough that no prompt answered at once times out on a loaded machine (at 1 s
        # one did, under a full suite beside other work), short of the 12 s sleep
        "--timeout",
        "6",
        "--max-retries",
        "0",
    )
    assert res.returncode == 1, res.stderr  # timeouts are error records: run again later

    def ann(name: str, atom: str) -> dict:
        obj = json.loads((out / f"{name}.json").read_text())
        return next(a for a in obj["annotations"] if a["atom"] == atom)

    made_up = ann("r1", "backed(cto)")
    assert made_up["value"] == "UNKNOWN"
    assert "its quote `Alice is the CTO of ACME.` is not in `context`" in made_up["explanation"]
    broken = ann("r2", "cited")
    assert broken["value"] == "UNKNOWN"
    assert "breaks the schema at answer.atoms.cited: missing `quotes`" in broken["explanation"]
    responses = {
        f.stem: json.loads(f.read_text())["sources"]["response"] for f in free.glob("*.json")
    }
    refused = next(k for k, v in responses.items() if "Eiffel" in v)
    assert "the model refused to answer" in ann(refused, "cited")["explanation"]
    slow = [k for k, v in responses.items() if "Python" in v]
    assert slow
    for k in slow:
        assert "no answer within 6 s" in ann(k, "cited")["explanation"]
    errors = [json.loads(x) for x in (out / "errors.jsonl").read_text().splitlines()]
    assert {e["errors"][0]["code"] for e in errors} == {"timeout"}
    assert len(errors) == len(slow)
    assert "failures" in res.stderr and "every one unreviewed" in res.stderr


def test_a_second_run_over_100_replays_makes_no_call(tmp_path, server_factory):
    many = hundred(tmp_path)
    server = server_factory()
    cache = tmp_path / "cache"
    first = run_here(server, cache, str(many), "--model", MODEL, "--out", str(tmp_path / "a"))
    assert first.returncode == 0, first.stderr
    assert server.count == 100
    second = run_here(server, cache, str(many), "--model", MODEL, "--out", str(tmp_path / "b"))
    assert second.returncode == 0, second.stderr
    assert server.count == 100  # no call
    assert "100/100 replays, 0 calls (100 cached)" in second.stderr
    for f in found_files((tmp_path / "a").glob("*.json"), at_least=100):
        assert (tmp_path / "b" / f.name).read_bytes() == f.read_bytes()
    # and the dry run says so, before any call
    dry = run(server, cache, str(many), "--model", MODEL, "--dry-run")
    assert "0 calls to" in dry.stdout and "100 more cached" in dry.stdout
    assert server.count == 100


def test_a_run_killed_half_way_resumes_with_only_the_missing_calls(tmp_path, server_factory):
    many = hundred(tmp_path)
    server = server_factory(delay=0.05)
    cache = tmp_path / "cache"
    out = tmp_path / "out"
    args = (str(many), "--model", MODEL, "--out", str(out), "--max-connections", "1")
    argv, env = command(server, cache, *args)
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while server.count < 50 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert 50 <= server.count < 100
    kept = len(list((cache / "annotate").glob("*.json")))
    assert 40 <= kept <= server.count
    before = server.count
    again = run_here(server, cache, *args)
    assert again.returncode == 0, again.stderr
    assert server.count - before == 100 - kept  # only the missing calls
    # the same replays, byte for byte, as a run never interrupted
    clean = server_factory()
    whole = run_here(
        clean, tmp_path / "cache2", str(many), "--model", MODEL, "--out", str(tmp_path / "whole")
    )
    assert whole.returncode == 0, whole.stderr
    assert clean.count == 100
    names = sorted(p.name for p in (tmp_path / "whole").glob("*.json"))
    assert len(names) == 100
    # the replays (beside them the folder's manifest, `.unmask-import`, and nothing else)
    assert sorted(p.name for p in out.iterdir()) == [".unmask-import", *names]
    for name in names:
        assert (out / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name


def test_dry_run_on_the_rag_example_makes_no_call(tmp_path, server_factory):
    free = free_replays(tmp_path)
    server = server_factory()
    res = run(server, tmp_path / "cache", str(free), "--model", MODEL, "--dry-run")
    assert res.returncode == 0, res.stderr
    assert "10 calls to `openai-api/local/scripted`" in res.stdout
    assert "tokens sent (characters / 4)" in res.stdout
    assert server.count == 0


def test_two_samples_that_disagree_through_the_server_are_shown_in_every_report(
    tmp_path, server_factory
):
    from tests.producers.test_annotate import disagreeing

    free = free_replays(tmp_path)
    calls = []

    def script(user: str) -> object:
        calls.append(user)
        return disagreeing(user, len(calls))  # TRUE, then FALSE, for the same question

    server = server_factory(script)
    out = tmp_path / "out"
    res = run_here(
        server,
        tmp_path / "cache",
        str(free / "r1.json"),
        "--model",
        MODEL,
        "--out",
        str(out),
        "--samples",
        "2",
        "--max-connections",
        "1",
    )
    assert res.returncode == 0, res.stderr
    assert server.count == 2 and calls[0] == calls[1]  # one question, asked twice
    obj = json.loads((out / "r1.json").read_text())
    ann = next(a for a in obj["annotations"] if a["atom"] == "outside")
    assert ann["value"] == "UNKNOWN" and [r["value"] for r in ann["readings"]] == ["TRUE", "FALSE"]
    check = ["check", str(out / "r1.json")]
    text = CliRunner().invoke(main, check).stdout
    assert "readers disagree on `outside`, so it is UNKNOWN:" in text
    assert f"- TRUE by model {MODEL}, unreviewed: `{MODEL}` sample 1" in text
    assert f"- FALSE by model {MODEL}, unreviewed: `{MODEL}` sample 2" in text
    html = CliRunner().invoke(main, [*check, "--format", "html"]).stdout
    assert "readers disagree, so the atom is UNKNOWN" in html
    assert "“Passage [1] says”" in html and "“I used only the passages.”" in html
    report = json.loads(CliRunner().invoke(main, [*check, "--format", "json"]).stdout)
    [d] = report["disagreements"]
    assert [(r["value"], r["evidence"][0]["quote"]) for r in d["readings"]] == [
        ("TRUE", "Passage [1] says"),
        ("FALSE", "I used only the passages."),
    ]


def test_ctrl_c_exits_130_and_keeps_the_replies_received(tmp_path, server_factory):
    many = hundred(tmp_path)
    server = server_factory(delay=0.05)
    cache = tmp_path / "cache"
    argv, env = command(
        server,
        cache,
        str(many),
        "--model",
        MODEL,
        "--out",
        str(tmp_path / "out"),
        "--max-connections",
        "1",
    )
    proc = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    deadline = time.monotonic() + 120
    while server.count < 10 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted: the replies received so far are cached" in err
    assert "Traceback" not in err
    assert len(list((cache / "annotate").glob("*.json"))) >= 9


def test_a_provider_error_is_the_replays_error_record_and_the_run_goes_on(tmp_path, server_factory):
    free = free_replays(tmp_path)

    def script(user: str) -> object:
        _, sources = prompt_parts(user)
        return ("status", 500) if "Eiffel" in sources.get("response", "") else honest(user)

    server = server_factory(script)
    out = tmp_path / "out"
    res = run_here(
        server,
        tmp_path / "cache",
        str(free),
        "--model",
        MODEL,
        "--out",
        str(out),
        "--max-retries",
        "0",
        "--timeout",
        "20",
    )
    assert res.returncode == 1, res.stderr
    assert len(list(out.glob("r*.json"))) == 10  # the run went on
    [err] = [json.loads(x) for x in (out / "errors.jsonl").read_text().splitlines()]
    assert err["location"].endswith("r4.json") and err["errors"][0]["code"] == "provider"
    r4 = json.loads((out / "r4.json").read_text())
    said = next(a for a in r4["annotations"] if a["atom"] == "cited")
    assert said["value"] == "UNKNOWN"
    assert "the provider failed with HTTP 500" in said["explanation"]
    assert " at 0x" not in said["explanation"] and "Error" not in said["explanation"]
    assert err["errors"][0]["notes"] == ["the provider said: “the server is down”"]
    assert "InternalServerError" not in res.stderr and "Error code" not in res.stderr
    r1 = json.loads((out / "r1.json").read_text())
    assert any(a["value"] == "TRUE" for a in r1["annotations"] if a["by"]["kind"] == "model")


@pytest.mark.parametrize("status", [401, 403])
def test_credentials_refused_stop_the_run_once_without_the_request(
    tmp_path, server_factory, status
):
    """Inspect wraps a 403 in an error whose text is the whole request (the sources): none
    of it, nor the client's class names, reaches the user; the run stops once, exit 2."""
    free = free_replays(tmp_path)
    server = server_factory(lambda user: ("status", status))
    out = tmp_path / "out"
    res = run_here(
        server,
        tmp_path / "cache",
        str(free),
        "--model",
        MODEL,
        "--out",
        str(out),
        "--max-retries",
        "0",
        "--max-connections",
        "1",
    )
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("error: ") == 1
    assert f"the provider refused the credentials (HTTP {status})" in res.stderr
    assert "stopped: 10 replays left unwritten" in res.stderr
    for leak in ("Request:", "Eiffel", "Error", "Traceback", '"messages"'):
        assert leak not in res.stderr
    [err] = [json.loads(x) for x in (out / "errors.jsonl").read_text().splitlines()]
    assert err["errors"][0]["code"] == "credentials"
    assert not list(out.glob("r*.json")) and server.count <= 2


def test_a_provider_that_cannot_be_reached_is_said_so(tmp_path, server_factory):
    free = free_replays(tmp_path)
    server = server_factory()
    server.close()  # nothing listens there now: the connection is refused
    out = tmp_path / "out"
    res = run_here(
        server,
        tmp_path / "cache",
        str(free / "r1.json"),
        "--model",
        MODEL,
        "--out",
        str(out),
        "--max-retries",
        "0",
    )
    assert res.returncode == 1, res.stderr
    assert f"error: model `{MODEL}`: the provider cannot be reached" in res.stderr
    assert "APIConnectionError" not in res.stderr and "Connection error." not in res.stderr
    [err] = [json.loads(x) for x in (out / "errors.jsonl").read_text().splitlines()]
    assert (
        err["errors"][0]["code"] == "unreachable"
        and "check the network" in err["errors"][0]["help"]
    )
