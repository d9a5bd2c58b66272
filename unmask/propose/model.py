"""A model-backed proposer: one question per atom to an OpenAI-compatible chat endpoint.

Contract: ``ModelChat()`` reads its endpoint from the environment (``UNMASK_MODEL_URL``,
required; ``UNMASK_MODEL_NAME``; ``UNMASK_MODEL_KEY``, sent as a bearer token;
``UNMASK_MODEL_TIMEOUT`` in seconds, default 30) and raises ``UnmaskError`` with one clear
message when the URL is missing or malformed. ``ask(atom, description, sources)`` sends one
chat-completions request (standard library only, one attempt, bounded timeout, a bounded
response size) asking for ``{"value": "TRUE"|"FALSE"|"UNKNOWN", "quote": …, "confidence":
…}`` and returns an ``Answer`` only when the reply parses, the value is TRUE or FALSE and
the quote occurs verbatim in one of the given sources; anything else (UNKNOWN, a quote not in
the sources, malformed JSON, an HTTP error, a timeout) is an abstention with a reason. After
``MAX_FAILURES`` transport failures in a row the proposer stops asking. Nothing is retried.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping

from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen
from unmask.propose import Fill, Proposer

# the task `unmask propose replay` asks a model for: any open atom, one question each
MODEL_ATOMS = (
    Fill("judge", "replay-atom"),
    Fill("context", "replay-atom"),
    Fill("procedure", "replay-atom"),
)
ENV_URL, ENV_NAME, ENV_KEY, ENV_TIMEOUT = (
    "UNMASK_MODEL_URL",
    "UNMASK_MODEL_NAME",
    "UNMASK_MODEL_KEY",
    "UNMASK_MODEL_TIMEOUT",
)
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 600.0
MAX_RESPONSE_BYTES = 1_000_000
MAX_SOURCE_CHARS = 60_000  # a source longer than this is not sent (the atom abstains)
MAX_FAILURES = 3  # transport failures in a row before the proposer stops asking
# a self-reported confidence is optional; without one, the answer sits at this confidence
DEFAULT_CONFIDENCE = 0.5

SYSTEM_PROMPT = (
    "You annotate one statement about a judge's output. Answer with one JSON object and "
    'nothing else: {"value": "TRUE" | "FALSE" | "UNKNOWN", "quote": "an exact, verbatim '
    'excerpt of one of the sources that shows the value", "confidence": a number from 0 to 1}. '
    "Copy the quote character for character from a source; answer UNKNOWN when no excerpt "
    "settles the statement."
)


@frozen
class Answer:
    """A usable answer: the value, where its quote is, and the confidence."""

    value: str
    source: str
    start: int
    end: int
    quote: str
    confidence: float
    reason: str = ""


@frozen
class Abstain:
    """No annotation: why (shown in the run's summary)."""

    reason: str


def _usage(code: Code, message: str, help: str | None = None) -> UnmaskError:
    return UnmaskError([Diagnostic(code, message, help=help)])


def endpoint(url: str) -> str:
    """The chat-completions URL for a base URL (``…/v1`` → ``…/v1/chat/completions``)."""
    url = url.rstrip("/")
    return url if url.endswith("/chat/completions") else url + "/chat/completions"


class ModelChat(Proposer):
    """Ask an OpenAI-compatible chat endpoint about each open atom; verify every quote."""

    name, kind, version = "model-chat", "model", 1
    fills = MODEL_ATOMS
    summary = (
        "one question per open atom to an OpenAI-compatible chat endpoint; quotes verified;"
        f" needs `{ENV_URL}`"
    )

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        url = env.get(ENV_URL, "").strip()
        if not url:
            raise _usage(
                Code.MODEL_NOT_CONFIGURED,
                f"proposer `model-chat` needs an endpoint: `{ENV_URL}` is not set",
                help=f"set `{ENV_URL}` (e.g. `http://127.0.0.1:8000/v1`), and `{ENV_NAME}`"
                f" and `{ENV_KEY}` if the endpoint needs them",
            )
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise _usage(
                Code.MODEL_NOT_CONFIGURED,
                f"`{ENV_URL}` must be an http or https URL, found `{url}`",
            )
        raw_timeout = env.get(ENV_TIMEOUT, "").strip()
        try:
            timeout = float(raw_timeout) if raw_timeout else DEFAULT_TIMEOUT
        except ValueError:
            timeout = -1.0
        if not 0 < timeout <= MAX_TIMEOUT:
            raise _usage(
                Code.MODEL_NOT_CONFIGURED,
                f"`{ENV_TIMEOUT}` must be a number of seconds from 0 to {MAX_TIMEOUT:g},"
                f" found `{raw_timeout}`",
            )
        self.url = endpoint(url)
        self.model = env.get(ENV_NAME, "").strip() or "default"
        self.key = env.get(ENV_KEY, "").strip() or None
        self.timeout = timeout
        self.failures = 0  # transport failures in a row
        self.requests = 0

    # --- one question ----------------------------------------------------------------------

    def messages(self, atom: str, description: str, sources: Mapping[str, str]) -> list[dict]:
        parts = [f"Statement ({atom}): {description or atom}", "", "Sources:"]
        for name, text in sources.items():
            parts.append(f"<{name}>\n{text}\n</{name}>")
        parts.append("")
        parts.append("Is the statement TRUE or FALSE? Quote verbatim from one source above.")
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": "\n".join(parts)},
        ]

    def request(self, messages: list[dict]) -> urllib.request.Request:
        body = {"model": self.model, "messages": messages, "temperature": 0}
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        data = json.dumps(body).encode("utf-8")
        return urllib.request.Request(self.url, data=data, headers=headers, method="POST")

    def ask(self, atom: str, description: str, sources: Mapping[str, str]) -> Answer | Abstain:
        """One request, one answer or an abstention; never raises for what the server does."""
        if not sources:
            return Abstain("no source the atom's role allows")
        if any(len(t) > MAX_SOURCE_CHARS for t in sources.values()):
            return Abstain(f"a source is longer than {MAX_SOURCE_CHARS} characters")
        if self.failures >= MAX_FAILURES:
            return Abstain(f"not asked: {MAX_FAILURES} requests in a row failed")
        self.requests += 1
        try:
            with urllib.request.urlopen(  # the scheme is checked in __init__
                self.request(self.messages(atom, description, sources)), timeout=self.timeout
            ) as resp:
                raw = resp.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            self.failures += 1
            return Abstain(f"the endpoint answered HTTP {exc.code}")
        except TimeoutError:
            self.failures += 1
            return Abstain(f"no answer within {self.timeout:g} s")
        except (urllib.error.URLError, OSError) as exc:
            self.failures += 1
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError):
                return Abstain(f"no answer within {self.timeout:g} s")
            return Abstain(f"the endpoint cannot be reached: {str(reason).lower()}")
        self.failures = 0
        if len(raw) > MAX_RESPONSE_BYTES:
            return Abstain(f"the response is larger than {MAX_RESPONSE_BYTES} bytes")
        return parse_reply(raw, sources)


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)


def parse_reply(raw: bytes, sources: Mapping[str, str]) -> Answer | Abstain:
    """A chat-completions response body to an answer whose quote is really in ``sources``."""
    try:
        envelope = json.loads(raw.decode("utf-8"))
        content = envelope["choices"][0]["message"]["content"]
    except (UnicodeDecodeError, ValueError, RecursionError, LookupError, TypeError):
        return Abstain("the response is not a chat completion")
    if not isinstance(content, str):
        return Abstain("the response has no text content")
    text = content.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        answer = json.loads(text)
    except (ValueError, RecursionError):
        return Abstain("the answer is not JSON")
    if not isinstance(answer, dict):
        return Abstain("the answer is not a JSON object")
    value = answer.get("value")
    if isinstance(value, bool):
        value = "TRUE" if value else "FALSE"
    if not isinstance(value, str) or value.upper() not in ("TRUE", "FALSE", "UNKNOWN"):
        return Abstain("the answer's `value` is not TRUE, FALSE or UNKNOWN")
    value = value.upper()
    if value == "UNKNOWN":
        return Abstain("the model answered UNKNOWN")
    quote = answer.get("quote")
    if not isinstance(quote, str) or not quote.strip():
        return Abstain("the answer has no quote")
    found = [(name, body.find(quote)) for name, body in sources.items() if quote in body]
    if not found:
        return Abstain("the quote does not occur in the sources")
    name, start = found[0]
    confidence = answer.get("confidence", DEFAULT_CONFIDENCE)
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        confidence = DEFAULT_CONFIDENCE
    confidence = min(1.0, max(0.0, float(confidence)))
    reason = answer.get("reason")
    return Answer(
        value,
        name,
        start,
        start + len(quote),
        quote,
        round(confidence, 4),
        reason if isinstance(reason, str) else "",
    )
