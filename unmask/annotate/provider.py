"""The model behind `unmask annotate`: Inspect AI's model API, an optional extra.

Contract: ``available()`` says whether ``inspect_ai`` can be imported (``pip install
'unmask[models]'``; ``INSTALL`` is the one line to print when not). ``Provider(name, …)``
gets the model through ``inspect_ai.model.get_model`` (any provider Inspect knows: hosted
APIs, ``openai-api/SERVICE/MODEL`` for an OpenAI-compatible server at
``SERVICE_BASE_URL`` with ``SERVICE_API_KEY``, vLLM, Ollama, llama-cpp-python, and
``mockllm/model`` for tests), or takes a model object made by the caller; a model Inspect
cannot make is ``UnmaskError`` with its reason. ``call(ask)`` sends the instructions and the
question as two messages under one ``GenerateConfig`` (Inspect's connection limit, retries,
timeout and token limit) and returns a ``Reply`` (its text, its stop reason, ``refusal`` for
a refused answer, the tokens used) or a ``Failure`` (a timeout or a provider error, with its
reason): it never raises for what the provider does. Inspect's own response cache is not
used: ours (``unmask.annotate.cache``) keeps JSON, never pickles.
"""

from __future__ import annotations

import asyncio
import math
import re
from typing import Any

from unmask.annotate.question import Ask, Reply
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen

INSTALL = (
    "`unmask annotate` asks a model through Inspect AI, which is not installed: "
    "pip install 'unmask[models]'"
)


def available() -> bool:
    """Whether Inspect's model API imports (the import is needed for the run anyway)."""
    try:
        import inspect_ai.model  # noqa: F401
    except ImportError:
        return False
    return True


@frozen
class Failure:
    """No reply: why in our words (``reason``), what kind (``code``: ``timeout``,
    ``provider``, ``credentials``, ``unreachable``, ``rate-limited``, ``malformed-reply``,
    ``model``), what to do (``help``) and, only where the provider's own words say what we
    cannot, those words quoted and shortened (``detail``); never cached."""

    reason: str
    code: Code
    help: str = ""
    detail: str = ""

    @property
    def fatal(self) -> bool:
        """Whether every other call would fail alike (credentials refused, a model the
        provider does not know): the run stops rather than report it once per replay."""
        return self.code in FATAL


FATAL = frozenset({Code.CREDENTIALS, Code.MODEL})
ELSEWHERE = "readings made elsewhere need no model: `--from FILE --reader NAME`"
DETAIL_CHARS = 200  # the provider's own words kept in a note, at most


def _one_line(text: object, n: int = DETAIL_CHARS) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= n else line[: n - 1] + "…"


_MARKUP = re.compile(r"\[/?(?:bold|italic|dim|red|green|blue|yellow|cyan|magenta)\]")


def _reason(exc: BaseException | str) -> str:
    """Inspect's text on one line, without its terminal markup (``[bold]``) or its own
    ``ERROR:``: only ever a quoted detail (``note``), never a message."""
    text = _MARKUP.sub("", _one_line(_MARKUP.sub("", str(exc)), 10_000))
    return _one_line(re.sub(r"^error:\s*", "", text, flags=re.I))


def note(detail: str) -> tuple[str, ...]:
    """The provider's own words as a diagnostic's note: quoted, shortened, one line."""
    return (f"the provider said: “{detail}”",) if detail else ()


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what it wraps: tenacity's ``RetryError`` (whose text is a memory
    address), Inspect's ``ModelGenerateError`` (whose text holds the whole request, the
    sources included), ``__cause__`` and ``__context__``; outermost first."""
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(out) < 10 and cur not in out:
        out.append(cur)
        last = getattr(cur, "last_attempt", None)
        inner = last.exception() if last is not None and hasattr(last, "exception") else None
        cur = inner or cur.__cause__ or cur.__context__
    return out


def _status(chain: list[BaseException]) -> int | None:
    for e in chain:
        for status in (getattr(e, "status_code", None), getattr(e, "status", None)):
            if isinstance(status, int) and not isinstance(status, bool) and 100 <= status < 600:
                return status
    return None


def _said(chain: list[BaseException]) -> str:
    """The provider's own message, from the outermost error that is not a wrapper: the ``message``
    of its JSON body when it sent one, else the error's text without the client's
    ``Error code: 500 -`` prefix; never Inspect's wrapper (the request it made)."""
    for e in chain:
        if type(e).__name__ in ("ModelGenerateError", "RetryError"):
            continue
        body = getattr(e, "body", None)
        if isinstance(body, dict):
            inner = body.get("error", body)
            msg = inner.get("message") if isinstance(inner, dict) else None
            if isinstance(msg, str) and msg.strip():
                return _reason(msg)
        text = re.sub(r"^Error code: \d+\s*-?\s*", "", str(e))
        if text.strip():
            return _reason(text)
    return ""


def _timed_out(chain: list[BaseException]) -> bool:
    return any(
        isinstance(e, (TimeoutError, asyncio.TimeoutError)) or "Timeout" in type(e).__name__
        for e in chain
    )


def _unreachable(chain: list[BaseException]) -> bool:
    """A connection that was never made: refused, no route, a name that does not resolve
    (the clients' ``APIConnectionError``, httpx's ``ConnectError``, ``OSError``)."""
    return any(
        isinstance(e, OSError) or re.search(r"Connect(ion)?Error|NetworkError", type(e).__name__)
        for e in chain
    )


def _malformed(chain: list[BaseException]) -> bool:
    """An answer the client could not read: not JSON, or JSON without the fields of one
    (``JSONDecodeError``, a validation error, ``TypeError`` over a missing field)."""
    return any(
        isinstance(e, (ValueError, TypeError, KeyError, AttributeError))
        or re.search(r"Validation|Decod|Pars", type(e).__name__)
        for e in chain
    )


# providers whose key is not PROVIDER_API_KEY (Inspect's convention for the others)
_KEYS = {"grok": "XAI_API_KEY", "hf": "HF_TOKEN", "azureai": "AZUREAI_API_KEY"}


def key_variable(name: str) -> str:
    """The environment variable holding the key of model ``name``'s provider, as Inspect
    reads it: ``SERVICE_API_KEY`` for ``openai-api/SERVICE/MODEL``, else mostly
    ``PROVIDER_API_KEY``."""
    parts = name.split("/")
    provider = parts[0]
    if provider == "openai-api" and len(parts) > 2:
        provider = parts[1]
    elif provider in _KEYS:
        return _KEYS[provider]
    return re.sub(r"[^A-Z0-9]+", "_", provider.upper()) + "_API_KEY"


def failure(exc: BaseException, name: str, timeout: float) -> Failure:
    """What went wrong in one call, in our words (see ``Failure``): a status the provider
    answered with decides, then a timeout, a connection never made, an unreadable answer."""
    chain = _chain(exc)
    said = _said(chain)
    provider = name.split("/", 1)[0]
    status = _status(chain)
    if status in (401, 403):
        return Failure(
            f"the provider refused the credentials (HTTP {status})",
            Code.CREDENTIALS,
            f"check `{key_variable(name)}`, the API key provider `{provider}` reads from the"
            f" environment; {ELSEWHERE}",
            said,
        )
    if status == 404:
        return Failure(
            "the provider does not know this model (HTTP 404)",
            Code.MODEL,
            "check the model's name, and the provider's base URL when it is set; " + ELSEWHERE,
            said,
        )
    if status == 429:
        return Failure(
            "the provider rate-limited the call (HTTP 429), after every retry",
            Code.RATE_LIMITED,
            "run again later (the replies received are cached), or lower `--max-connections`"
            " or raise `--max-retries`",
            said,
        )
    if status in (408, 504) or (status is None and _timed_out(chain)):
        return Failure(
            f"no answer within {timeout:g} s",
            Code.TIMEOUT,
            "run again (the replies received are cached), or raise `--timeout`",
        )
    if status is not None:
        kind = "failed" if status >= 500 else "refused the call"
        return Failure(
            f"the provider {kind} with HTTP {status}",
            Code.PROVIDER,
            "run again later (the replies received are cached)"
            if status >= 500
            else (
                "its words, in the note, say why" if said else "check the model's name and options"
            ),
            said,
        )
    if _unreachable(chain):
        return Failure(
            "the provider cannot be reached",
            Code.UNREACHABLE,
            "check the network, and the provider's base URL when it is set; run again"
            " (the replies received are cached)",
        )
    if _malformed(chain):
        return Failure(
            "the provider's answer is malformed",
            Code.MALFORMED_REPLY,
            "check that the base URL is the provider's API; run again (the replies received"
            " are cached)",
            said,
        )
    return Failure(
        "the provider failed", Code.PROVIDER, "run again (the replies received are cached)", said
    )


_VARS = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:API_KEY|KEY|TOKEN|BASE_URL|SECRET)\b")


def unusable(name: str, exc: BaseException) -> Diagnostic:
    """Why Inspect cannot make model ``name``, in our words: a key not set (named), the
    provider's package not installed, a provider it does not know, or else its words in a
    note."""
    text = _MARKUP.sub("", str(exc))
    provider = name.split("/", 1)[0]
    if "defined in the environment" in text or "not set" in text.lower():
        names = list(dict.fromkeys(_VARS.findall(text)))
        if names:
            alts = " or ".join(f"`{v}`" for v in names)
            return Diagnostic(
                Code.CREDENTIALS,
                f"model `{name}` has no credentials: {alts} is not in the environment",
                help=f"set {alts} in the environment; {ELSEWHERE}",
            )
    package = re.search(r"pip install ([A-Za-z0-9_.\- \[\]]+)", text)
    if "optional dependencies" in text and package:
        wanted = package.group(1).strip()
        return Diagnostic(
            Code.MODEL,
            f"provider `{provider}` of model `{name}` needs a package that is not installed",
            help=f"pip install {wanted}; {ELSEWHERE}",
        )
    if "not recognized" in text:
        return Diagnostic(
            Code.MODEL,
            f"unknown provider `{provider}` in model `{name}`",
            help=HELP_MODEL,
        )
    return Diagnostic(
        Code.MODEL,
        f"model `{name}` cannot be used",
        help=HELP_MODEL,
        notes=note(_reason(text)),
    )


HELP_MODEL = (
    "a model is PROVIDER/MODEL as Inspect names it, e.g. `openai/gpt-4o-mini` or"
    " `openai-api/SERVICE/MODEL` with SERVICE_BASE_URL and SERVICE_API_KEY set; " + ELSEWHERE
)


class Provider:
    def __init__(
        self,
        name: str,
        *,
        max_connections: int,
        timeout: float,
        max_tokens: int,
        max_retries: int,
        model: Any = None,
    ) -> None:
        from inspect_ai.model import GenerateConfig, get_model

        self.name = name
        # Inspect takes whole seconds (`--timeout 2.5` was refused as it made the config):
        # rounded up, never shorter than asked, and a timeout's message names what applied
        seconds = math.ceil(timeout)
        self.timeout = seconds
        self.config = GenerateConfig(
            max_connections=max_connections,
            # the whole call, retries included, and each attempt: a hung server is a timeout
            timeout=seconds,
            attempt_timeout=seconds,
            max_tokens=max_tokens,
            max_retries=max_retries,
        )
        if model is None:
            try:
                model = get_model(name, memoize=False)
            except Exception as exc:  # Inspect's reasons are many (a missing key, a name)
                raise UnmaskError([unusable(name, exc)]) from None
        self.model = model

    async def call(self, ask: Ask) -> Reply | Failure:
        from inspect_ai.model import ChatMessageSystem, ChatMessageUser

        messages = [ChatMessageSystem(content=ask.system), ChatMessageUser(content=ask.user)]
        try:
            out = await self.model.generate(messages, config=self.config)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the provider's failure is this call's (the run decides)
            return failure(exc, self.name, self.timeout)
        if getattr(out, "error", None):
            return Failure(
                "the provider reported an error",
                Code.PROVIDER,
                "run again (the replies received are cached)",
                _reason(str(out.error)),
            )
        stop = str(getattr(out, "stop_reason", "") or "unknown")
        refused = stop == "content_filter"
        choices = getattr(out, "choices", None) or []
        content = choices[0].message.content if choices else ""
        if isinstance(content, list):
            refused = refused or any(getattr(c, "refusal", None) for c in content)
        usage = getattr(out, "usage", None)
        return Reply(
            out.completion or "",
            "refusal" if refused else stop,
            int(getattr(usage, "input_tokens", 0) or 0),
            int(getattr(usage, "output_tokens", 0) or 0),
        )
