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
    """No reply: why, and what kind (``timeout`` or ``provider``), never cached."""

    reason: str
    code: Code


def _one_line(text: object, n: int = 200) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= n else line[: n - 1] + "…"


_MARKUP = re.compile(r"\[/?(?:bold|italic|dim|red|green|blue|yellow|cyan|magenta)\]")


def _reason(exc: BaseException) -> str:
    """Inspect's reason on one line, without its terminal markup (``[bold]``) or its own
    ``ERROR:``, first letter lowered (names such as ``LOCAL_API_KEY`` kept)."""
    text = _MARKUP.sub("", _one_line(exc))
    text = re.sub(r"^error:\s*", "", text, flags=re.I)
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def _cause(exc: BaseException) -> BaseException:
    """The error itself, out of tenacity's ``RetryError`` (whose text is a memory address)."""
    for _ in range(10):
        last = getattr(exc, "last_attempt", None)
        inner = last.exception() if last is not None and hasattr(last, "exception") else None
        if inner is None:
            break
        exc = inner
    return exc


def _failed(exc: BaseException) -> str:
    """Why a call failed, the same words for the same failure: the HTTP status when there
    is one, and the provider's message."""
    exc = _cause(exc)
    text = _reason(exc)
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool):
        return f"HTTP {status}" + (f": {text}" if text else "")
    return text or "an error without a message"


def _timed_out(exc: BaseException | None) -> bool:
    """Whether ``exc``, or what it wraps (tenacity's ``RetryError``), is a timeout."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) or "Timeout" in type(exc).__name__:
            return True
        last = getattr(exc, "last_attempt", None)
        inner = last.exception() if last is not None and hasattr(last, "exception") else None
        exc = inner or exc.__cause__ or exc.__context__
        seen += 1
    return False


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
                raise UnmaskError(
                    [
                        Diagnostic(
                            Code.MODEL,
                            f"cannot use model `{name}`: {_reason(exc)}",
                            help="a model is PROVIDER/MODEL as Inspect names it, e.g."
                            " `openai/gpt-4o-mini` or `openai-api/SERVICE/MODEL` with"
                            " SERVICE_BASE_URL and SERVICE_API_KEY set",
                        )
                    ]
                ) from None
        self.model = model

    async def call(self, ask: Ask) -> Reply | Failure:
        from inspect_ai.model import ChatMessageSystem, ChatMessageUser

        messages = [ChatMessageSystem(content=ask.system), ChatMessageUser(content=ask.user)]
        try:
            out = await self.model.generate(messages, config=self.config)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the provider's failure is this call's, not the run's
            if _timed_out(exc):
                return Failure(f"no answer within {self.timeout:g} s", Code.TIMEOUT)
            return Failure(f"the provider failed: {_failed(exc)}", Code.PROVIDER)
        if getattr(out, "error", None):
            return Failure(f"the provider failed: {_reason(Exception(out.error))}", Code.PROVIDER)
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
