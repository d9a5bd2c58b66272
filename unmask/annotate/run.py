"""A whole `unmask annotate` run: readers over replays, calls cached, replays written.

Contract: ``items(paths, limits)`` is one ``Item`` per replay the paths name, as ``unmask
audit`` takes them (``unmask.replay.inputs``): loaded, or with why it is not valid; ``names``
gives each its output file's stem. ``plan(items, settings, replies)`` counts, before any
call, the calls a run would make (those not already cached) and the tokens it would send
(``Ask.tokens``).
``Run(settings, out, provider, replies, progress).run(items)`` reads each valid replay's
open atoms (``question.questions``) with every reader of ``settings.readers``: ``model``
(``settings.samples`` calls, one per sample, each its own reader) and registered proposers
that fill replay atoms (``unmask propose list``), a proposer reading the atoms of the roles
it fills. Readers must agree: an atom gets a value only when every reader that reads it
gives that value; when they give different values it is UNKNOWN, its ``readings`` keep each
reader's value, quotes and reason, and its ``explanation`` says they disagree. One reader
alone writes its own reading (UNKNOWN with the reason when it has no value). Every
annotation written is unreviewed, with ``by`` the reader's (the model's: ``{kind: model,
name: MODEL, version: DIGEST}``, the digest of the instructions, the answer's shape and the
token limit) or, for several readers, their names joined with `` + `` and a digest of their
versions. Each replay is written to ``out/NAME.json`` (``NAME`` its id made safe, made
unique in input order, so a rerun writes the same names) only after the replay loader
accepts it, with a protocol named by path embedded (through ``write`` when given: the
output folder's manifest, which lists each replay before it writes it,
``unmask.replay.outfolder``). Every
call is looked up in ``replies`` first and every reply stored there, so a second run makes
no call and an interrupted one makes only those it did not finish; the same question asked
for two replays is one call; a replay whose question is longer than
``settings.max_question_chars`` is not asked (its atoms UNKNOWN, ``too-long``);
``settings.max_calls`` stops asking: a replay that still needs a call is left unwritten
(``Summary.stopped``). A failed call (``unmask.annotate.provider.Failure``: a timeout, a
rate limit, an unreachable or failing provider, a malformed answer) leaves that reader's
atoms UNKNOWN with the reason and is the replay's error record (``Summary.errors``); the
run goes on. A failure that every call would repeat (``Failure.fatal``: credentials
refused, a model the provider does not know) stops the run instead: it is one error record
(``Summary.fatal``, on the replay whose call met it), no call is made after it, and that
replay and every one still to read are left unwritten (``Summary.halted``) for a rerun.
Same replies, same bytes.
"""

from __future__ import annotations

import asyncio
import copy
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from unmask.annotate.cache import Replies
from unmask.annotate.provider import Failure, note
from unmask.annotate.question import (
    Ask,
    Got,
    Reply,
    ask,
    digest,
    questions,
    readings,
    unknown_all,
)
from unmask.plumbing.codes import Code
from unmask.plumbing.diagnostics import Diagnostic, UnmaskError
from unmask.plumbing.frozen import frozen
from unmask.plumbing.limits import Limits
from unmask.replay.data import Replay
from unmask.replay.judgeschema import Question, reading_shape

MODEL = "model"  # the reader `--readers` names for `--model`
MAX_SPANS = 8  # evidence spans kept per atom when several readers quote it


@frozen
class Settings:
    model: str | None  # PROVIDER/MODEL, when a reader is `model`
    readers: tuple[str, ...] = (MODEL,)
    samples: int = 1
    max_tokens: int = 2048
    max_calls: int | None = None
    threshold: float = 0.5  # a proposer's, as `unmask propose replay` takes it
    concurrency: int = 8  # replays in flight; calls are limited by the provider's connections
    # the longest question sent, in characters: a replay whose question is longer is not
    # asked (its atoms UNKNOWN, `too-long`), so one huge source cannot cost a fortune
    max_question_chars: int = 400_000
    # folders besides a replay's own where its protocol `path` may lead (`--protocol-path`)
    protocol_roots: tuple[str, ...] = ()

    def generation(self) -> dict:
        """What, beside the messages, decides a reply: part of every call's cache key."""
        return {"max_tokens": self.max_tokens}

    def model_by(self) -> dict:
        version = digest({"shape": reading_shape(), **self.generation()})[:16]
        return {
            "kind": "model",
            "name": self.model,
            "version": f"sha256:{version}",
            "reviewed": False,
        }


@dataclass
class Item:
    """One input replay: where it is, and its JSON and loaded form, or why it is not valid."""

    location: str
    obj: dict | None = None
    replay: Replay | None = None
    base: Path | None = None
    errors: tuple[Diagnostic, ...] = ()
    name: str = ""  # the output file's stem, given in input order
    index: int = 0  # its place in the input, so error records keep input order


@dataclass
class Summary:
    total: int = 0  # replays seen
    done: int = 0  # replays finished (written, refused or stopped)
    written: int = 0
    stopped: int = 0  # left unwritten by --max-calls
    calls: int = 0  # calls made
    cached: int = 0  # calls answered from the cache
    input_tokens: int = 0
    output_tokens: int = 0
    failures: int = 0  # calls that timed out or failed
    halted: int = 0  # left unwritten: a failure every call would repeat stopped the run
    fatal: Diagnostic | None = None  # that failure, once
    values: Counter = field(default_factory=Counter)  # annotations written, by value
    reasons: Counter = field(default_factory=Counter)  # UNKNOWN annotations, by code
    # (input index, location, diagnostics): sorted by index when shown
    errors: list[tuple[int, str, tuple[Diagnostic, ...]]] = field(default_factory=list)


@frozen
class Reader:
    """One reader of a replay: who it is (``by``), a label for explanations, and the roles
    it reads (None: every atom asked)."""

    by: dict
    label: str
    roles: frozenset[str] | None = None


def proposers(settings: Settings) -> list[Any]:
    """The proposers `--readers` names, each one that fills replay atoms; a usage error for
    a name that is not one (``UnmaskError``)."""
    from unmask.propose.replay import replay_filler

    out = []
    for name in settings.readers:
        if name == MODEL:
            continue
        if name == "model-chat":
            raise UnmaskError(
                [
                    Diagnostic(
                        Code.USAGE,
                        "reader `model-chat` is for `unmask propose`",
                        help="name the model reader `model`, with `--model`",
                    )
                ]
            )
        out.append(replay_filler(name, "reader"))
    return out


def _asks(settings: Settings, replay: Replay, qs: list[Question]) -> list[Ask]:
    if MODEL not in settings.readers or not qs:
        return []
    model = settings.model or ""
    return [
        ask(model, qs, replay.sources, i, settings.generation()) for i in range(settings.samples)
    ]


def plan(items: Iterable[Item], settings: Settings, replies: Replies) -> dict[str, int]:
    """What a run would send: calls (not cached), cached ones, estimated tokens sent."""
    out = {"replays": 0, "invalid": 0, "calls": 0, "cached": 0, "tokens": 0, "atoms": 0}
    out["too_long"] = 0
    seen: set[str] = set()  # a question asked twice is one call
    for item in items:
        if item.replay is None:
            out["invalid"] += 1
            continue
        out["replays"] += 1
        qs = questions(item.replay)
        out["atoms"] += len(qs)
        asks = _asks(settings, item.replay, qs)
        if asks and asks[0].chars > settings.max_question_chars:
            out["too_long"] += 1
            continue
        for a in asks:
            if a.key in seen or replies.get(a.key) is not None:
                out["cached"] += 1
            else:
                seen.add(a.key)
                out["calls"] += 1
                out["tokens"] += a.tokens
    return out


class _Stopped(Exception):
    """``--max-calls`` reached before a call this replay needs."""


class _Halted(Exception):
    """A failure every call would repeat stopped the run before a call this replay needs."""


def said(model: str | None, failure: Failure) -> Diagnostic:
    """A failed call as a diagnostic: the model, why in our words, the hint, and the
    provider's own words only as a quoted, shortened note."""
    return Diagnostic(
        failure.code,
        f"model `{model}`: {failure.reason}",
        help=failure.help or None,
        notes=note(failure.detail),
    )


class Run:
    def __init__(
        self,
        settings: Settings,
        out: Path,
        provider: Any,
        replies: Replies,
        progress: Callable[[Summary], None] | None = None,
        write: Callable[[str, bytes], str | None] | None = None,
    ) -> None:
        self.settings = settings
        self.out = out
        self.write = write  # the output folder's manifest: lists each replay, then writes it
        self.provider = provider
        self.replies = replies
        self.progress = progress or (lambda s: None)
        self.summary = Summary()
        self.rules = proposers(settings)
        self.started = 0  # calls started, held to --max-calls
        # calls in flight by key: a replay asking the same question waits for that reply
        self.inflight: dict[str, asyncio.Future] = {}

    async def _reply(self, a: Ask) -> Reply | Any:
        got = self.replies.get(a.key)
        if got is not None:
            self.summary.cached += 1
            return got
        shared = self.inflight.get(a.key)
        if shared is not None:  # the same question, already asked for another replay
            self.summary.cached += 1
            return await asyncio.shield(shared)
        if self.summary.fatal is not None:
            raise _Halted
        limit = self.settings.max_calls
        if limit is not None and self.started >= limit:
            raise _Stopped
        self.started += 1
        future = self.inflight[a.key] = asyncio.get_running_loop().create_future()
        try:
            reply = await self.provider.call(a)
        except BaseException as exc:  # cancelled (Ctrl-C), or a bug: waiters learn it too
            if isinstance(exc, Exception):
                future.set_exception(exc)
                future.exception()  # retrieved: no "never retrieved" noise when nobody waits
            else:
                future.cancel()
            raise
        finally:
            del self.inflight[a.key]
        self.summary.calls += 1
        if isinstance(reply, Reply):
            self.summary.input_tokens += reply.input_tokens
            self.summary.output_tokens += reply.output_tokens
            self.replies.put(a.key, reply)
        else:
            self.summary.failures += 1
            if isinstance(reply, Failure) and reply.fatal and self.summary.fatal is None:
                self.summary.fatal = said(self.settings.model, reply)
        future.set_result(reply)
        return reply

    def _readers(self) -> list[Reader]:
        out = []
        if MODEL in self.settings.readers:
            k = self.settings.samples
            by = self.settings.model_by()
            name = self.settings.model
            for i in range(k):
                out.append(Reader(by, f"`{name}`" + (f" sample {i + 1}" if k > 1 else "")))
        for p in self.rules:
            roles = frozenset(f.role for f in p.fills)
            out.append(Reader(p.by.to_json(), f"`{p.by.name}`", roles))
        return out

    async def one(self, item: Item) -> None:
        s = self.summary
        try:
            if item.replay is None or item.obj is None:
                s.errors.append((item.index, item.location, item.errors))
                return
            replay = item.replay
            qs = questions(replay)
            model_gots: list[dict[str, Got]] = []
            problems: list[Diagnostic] = []
            asks = _asks(self.settings, replay, qs)
            limit = self.settings.max_question_chars
            if asks and asks[0].chars > limit:  # not asked at all: no cost, no error
                why = f"not asked: the question is {asks[0].chars:,} characters, over {limit:,}"
                model_gots = [unknown_all(qs, why, "too-long") for _ in asks]
                asks = []
            try:
                replies = [await self._reply(a) for a in asks]
            except _Stopped:
                s.stopped += 1
                return
            except _Halted:
                s.halted += 1
                return
            fatal = [r for r in replies if isinstance(r, Failure) and r.fatal]
            if fatal:  # left for a rerun, the failure recorded once (``Summary.fatal``)
                s.halted += 1
                if s.fatal is not None and not any(d is s.fatal for *_, ds in s.errors for d in ds):
                    s.errors.append((item.index, item.location, (s.fatal,)))
                return
            for r in replies:
                if isinstance(r, Reply):
                    model_gots.append(readings(r, qs, replay.sources))
                else:
                    model_gots.append(unknown_all(qs, r.reason, r.code))
                    problems.append(said(self.settings.model, r))
            rule_gots = [self._rule(p, item, qs) for p in self.rules]
            new = self._annotated(item, qs, model_gots + rule_gots)
            self._write(item, new)
            if problems:
                s.errors.append((item.index, item.location, tuple(problems)))
        finally:
            s.done += 1
            self.progress(s)

    def _rule(self, proposer: Any, item: Item, qs: list[Question]) -> dict[str, Got]:
        from unmask.propose.replay import fill

        assert item.obj is not None and item.replay is not None
        new, outcome = fill(item.obj, item.replay, [proposer], self.settings.threshold)
        filled = {
            a["atom"]: a
            for a in new.get("annotations", [])
            if isinstance(a, dict) and a.get("by") == proposer.by.to_json()
        }
        why = "; ".join(r for _, r in outcome.abstained) or "no proposal at or above the threshold"
        out = {}
        for q in qs:
            a = filled.get(q.atom)
            if a is None:
                out[q.atom] = Got("UNKNOWN", (), f"abstained: {why}", "abstained")
                continue
            from unmask.replay.data import Evidence

            spans = tuple(
                Evidence(e["source"], e["start"], e["end"], e["quote"]) for e in a["evidence"]
            )
            out[q.atom] = Got(a["value"], spans, a.get("explanation", ""))
        return out

    def _annotated(self, item: Item, qs: list[Question], gots: list[dict[str, Got]]) -> dict:
        readers = self._readers()
        if not readers:  # a person's readings alone (`--from`): the replay as they left it
            return copy.deepcopy(item.obj)  # type: ignore[arg-type]
        several = len(readers) > 1
        by = readers[0].by if not several else _joined(readers)
        new = copy.deepcopy(item.obj)
        assert new is not None
        anns = list(new.get("annotations") or [])
        at = {a.get("atom"): i for i, a in enumerate(anns) if isinstance(a, dict)}
        for q in qs:
            read = [
                (r, g[q.atom])
                for r, g in zip(readers, gots, strict=True)
                if r.roles is None or q.role in r.roles
            ]
            if not read:
                continue
            ann = _combine(q.atom, read, by, several)
            self.summary.values[ann["value"]] += 1
            if ann["value"] == "UNKNOWN":
                codes = [g.code for _, g in read if g.value == "UNKNOWN"]
                code = "disagree" if "readings" in ann else (codes[0] if codes else "unknown")
                self.summary.reasons[code] += 1
            if q.atom in at:
                anns[at[q.atom]] = ann  # an unreviewed UNKNOWN, replaced where it was
            else:
                anns.append(ann)
        new["annotations"] = anns
        return new

    def _write(self, item: Item, new: dict) -> None:
        from unmask.plumbing.outputs import write_in_folder
        from unmask.replay.builder import json_bytes
        from unmask.replay.load import replay_from_obj

        assert item.base is not None
        from unmask.replay.confine import Refused, embed_protocol

        try:
            embed_protocol(new, item.base, self.out, self.settings.protocol_roots)
            replay_from_obj(new, str(self.out / f"{item.name}.json"), self.out)
        except Refused as exc:  # the protocol moved or changed since the replay was read
            d = Diagnostic(exc.code, str(exc), path="protocol.path", help=exc.help)
            self.summary.errors.append((item.index, item.location, (d,)))
            return
        except UnmaskError as exc:  # a reader wrote what the loader refuses: say so
            self.summary.errors.append((item.index, item.location, tuple(exc.diagnostics)))
            return
        data = json_bytes(new)
        name = f"{item.name}.json"
        if self.write is not None:
            taken = self.write(name, data)
        else:
            taken = write_in_folder(self.out, name, data)
        if taken is not None:
            self.summary.errors.append((item.index, item.location, (Diagnostic(Code.IO, taken),)))
            return
        self.summary.written += 1

    async def run(self, items: Iterable[Item]) -> Summary:
        gate = asyncio.Semaphore(max(1, self.settings.concurrency))
        pending: set[asyncio.Task] = set()

        async def guarded(item: Item) -> None:
            try:
                await self.one(item)
            finally:
                gate.release()

        for item in items:
            self.summary.total += 1
            await gate.acquire()
            t = asyncio.create_task(guarded(item))
            pending.add(t)
            t.add_done_callback(pending.discard)
        if pending:
            await asyncio.gather(*pending)
        return self.summary


def _joined(readers: list[Reader]) -> dict:
    names = list(dict.fromkeys(str(r.by.get("name", r.by["kind"])) for r in readers))
    kind = "model" if any(r.by["kind"] == "model" for r in readers) else "rule"
    version = digest([[r.by.get("kind"), r.by.get("name"), r.by.get("version")] for r in readers])
    return {
        "kind": kind,
        "name": " + ".join(names),
        "version": f"sha256:{version[:16]}",
        "reviewed": False,
    }


def _spans(evidence: Iterable[Any]) -> list[dict]:
    return [
        {"source": e.source, "start": e.start, "end": e.end, "quote": e.quote} for e in evidence
    ]


def _combine(atom: str, read: list[tuple[Reader, Got]], by: dict, several: bool) -> dict:
    """One annotation from every reading of ``atom`` (see the module's contract)."""
    values = [g.value for _, g in read]
    ann: dict[str, Any] = {"atom": atom}
    if len(set(values)) > 1:
        told = ", ".join(f"{r.label} {g.value}" for r, g in read)
        ann["value"] = "UNKNOWN"
        ann["evidence"] = []
        ann["explanation"] = f"readers disagree: {told}"
        ann["by"] = dict(by)
        ann["readings"] = [_reading(r, g) for r, g in read]
        return ann
    value = values[0]
    ann["value"] = value
    spans = list(dict.fromkeys(e for _, g in read for e in g.evidence))[:MAX_SPANS]
    ann["evidence"] = _spans(spans)
    if value == "UNKNOWN":
        ann["explanation"] = "; ".join(f"{r.label}: {g.reason}" for r, g in read)
    elif several:
        ann["explanation"] = "read alike by " + ", ".join(r.label for r, _ in read)
    else:
        r, g = read[0]
        ann["explanation"] = f"read by {r.label}" + (f" ({g.reason})" if g.reason else "")
    ann["by"] = dict(by)
    return ann


def _reading(r: Reader, g: Got) -> dict:
    out: dict[str, Any] = {"by": dict(r.by), "value": g.value, "evidence": _spans(g.evidence)}
    out["explanation"] = f"{r.label}: {g.reason}" if g.reason else r.label
    return out


def items(paths: tuple[str, ...], limits: Limits) -> Iterator[Item]:
    """One ``Item`` per replay the paths name (as ``unmask audit`` takes them), loaded, or
    with why it is not valid."""
    from unmask.replay.inputs import STDIN_LABEL, iter_tasks, task_document
    from unmask.replay.load import replay_from_obj

    for task in iter_tasks(paths, limits):
        base = Path.cwd() if task.file == STDIN_LABEL else Path(task.file).resolve().parent
        try:
            obj, text = task_document(task, limits)
            replay = replay_from_obj(obj, task.file, base, limits, line=task.line, text=text)
        except UnmaskError as exc:
            yield Item(task.location, errors=tuple(exc.diagnostics))
            continue
        yield Item(task.location, obj, replay, base)


def names(items: Iterable[Item], used: set[str] | None = None) -> Iterable[Item]:
    """Each item given its output file's stem: its id made safe, unique in input order."""
    from unmask.importers import safe_name

    used = set() if used is None else used
    for i, item in enumerate(items):
        item.index = i
        rid = item.replay.id if item.replay is not None else item.location
        stem = name = safe_name(rid)
        k = 2
        while name.lower() in used:  # case-insensitive file systems too
            name, k = f"{stem}-{k}", k + 1
        used.add(name.lower())
        item.name = name
        yield item
