"""Compiling a `.proto` text once: remembered in the process and kept in the cache folder.

Contract: ``compile_cached(text, filename, domains, limits)`` returns what
``unmask.language.compiler.compile_source`` returns for the same arguments, spans included, or
raises the same ``UnmaskError``. It remembers the last ``COMPILE_CACHE_SIZE`` protocols per
process, and keeps each compiled protocol in the user's cache folder: a hit is read back
by ``unmask.language.cache`` (without lark or the compiler), a miss is compiled and written by
``unmask.language.cache_writer``; compile errors are never written. It sits beside the compiler and
above both halves of the cache, so none of them imports another in a circle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

from unmask import ir
from unmask.language import cache
from unmask.plumbing.limits import DEFAULT_LIMITS, Limits

COMPILE_CACHE_SIZE = 32  # distinct (text, file, domains, limits) kept per process


def compile_cached(
    text: str,
    filename: str = "<input>",
    domains: Mapping[str, Sequence[str]] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> ir.Protocol:
    """``compile_source``, remembered in this process and on disk: replays that share a
    protocol (an audit, a worker's partition, one command run after another) compile it
    once. The protocol is immutable, so it is shared; a compile error is raised again
    each time, never remembered."""
    key = tuple((name, tuple(members)) for name, members in (domains or {}).items())
    return _memo(text, filename, key, limits)


@lru_cache(maxsize=COMPILE_CACHE_SIZE)
def _memo(
    text: str, filename: str, domains: tuple[tuple[str, tuple[str, ...]], ...], limits: Limits
) -> ir.Protocol:
    entry = cache.entry(text, domains, limits)
    if entry is not None:
        found = cache.load(entry, filename, limits)
        if found is not None:
            return found
    from unmask.language import (
        compiler,  # only on a miss: a hit imports neither lark nor the compiler
    )

    protocol = compiler.compile_source(text, filename, dict(domains), limits)
    if entry is not None:
        from unmask.language.cache_writer import store

        store(entry, protocol, filename, limits)
    return protocol
