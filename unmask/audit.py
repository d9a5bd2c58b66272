"""Auditing many replays in one streaming run, and summarising the run.

Contract:
- ``iter_tasks(paths)`` yields one ``Task`` per replay, lazily and in a deterministic order:
  a replay file; a directory (every ``*.json`` below it, names sorted at each level); a
  JSON Lines file (``*.jsonl``, one replay per non-blank line); ``-`` for JSON Lines on
  stdin. Each task has a ``location``: the file, or ``file:line`` for a JSON Lines record;
- ``audit_task`` checks one task and returns one result line (UTF-8 bytes ending in a
  newline), its ``view`` for the summary and its extras (HTML index row, JUnit testcase,
  when asked for): the line is the report as compact JSON with ``location`` after
  ``schema``, or an error record ``{"schema": "unmask.error/1", "location": ...,
  "errors": [diagnostic fields ...]}``; a bad replay never raises;
- ``run_audit`` streams the tasks through one process or a pool of ``jobs`` processes with
  a bounded window of chunks in flight, and hands every result to ``emit`` in input order
  as soon as it and all earlier results are done (the reorder buffer is the window), so
  memory does not grow with the number of replays; a worker that dies costs only the
  replay that killed it (an ``internal-error`` record), and workers never outlive a
  killed parent;
- ``read_done`` reads an existing output for ``--resume``: complete lines are kept, a
  truncated last line (no newline: the run was killed mid-write) is cut off, and the
  locations already done are returned as a multiset;
- ``Summary`` folds result views one at a time in O(distinct requirement ids and grounding
  groups) memory; ``to_json`` and ``render_text`` give the same figures.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unmask.diagnostics import Diagnostic, UnmaskError
from unmask.limits import DEFAULT_LIMITS, Limits

ERROR_SCHEMA = "unmask.error/1"
SUMMARY_SCHEMA = "unmask.summary/1"
STDIN = "-"
STDIN_LABEL = "<stdin>"

# how many tasks one pool job carries, and how many jobs per process may be in flight
CHUNK_TASKS = 16
CHUNK_BYTES = 1 << 20
WINDOW_PER_JOB = 4


# --- inputs ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Task:
    """One replay to audit: a whole file (``text`` None: read it) or one JSON Lines record."""

    location: str
    file: str
    line: int | None = None
    text: bytes | None = None
    problem: tuple[str, str, str | None] | None = None  # (code, message, help): not readable


def _walk(root: Path) -> Iterator[Path]:
    """Every ``*.json`` file below ``root``, entry names sorted at each level; a directory
    that is its own ancestor (a symlink loop) is not entered again. No recursion: a deep
    tree cannot exhaust the stack."""

    def level(path: Path, above: frozenset) -> tuple[Iterator[os.DirEntry], frozenset] | None:
        try:
            st = os.stat(path)
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError:
            return None
        key = (st.st_dev, st.st_ino)
        if key in above:
            return None
        return iter(entries), above | {key}

    first = level(root, frozenset())
    stack = [first] if first is not None else []
    while stack:
        entries, here = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        try:
            is_dir = entry.is_dir()
            is_json = not is_dir and entry.name.endswith(".json") and entry.is_file()
        except OSError:
            continue
        if is_dir:
            sub = level(Path(entry.path), here)
            if sub is not None:
                stack.append(sub)
        elif is_json:
            yield Path(entry.path)


def _lines(stream: Any, file: str, max_bytes: int) -> Iterator[Task]:
    """The records of a JSON Lines stream; a line longer than ``max_bytes`` is never held
    in memory whole: it is skipped and becomes a ``limit`` error record."""
    number = 0
    while True:
        raw = stream.readline(max_bytes + 2)
        if not raw:
            return
        number += 1
        if len(raw) > max_bytes + 1 or (len(raw) == max_bytes + 2 and not raw.endswith(b"\n")):
            while raw and not raw.endswith(b"\n"):
                raw = stream.readline(1 << 20)
            problem = (
                "limit",
                f"the record is larger than {max_bytes} bytes",
                "raise the bound with `--max-file-bytes`",
            )
            yield Task(f"{file}:{number}", file, number, None, problem)
            continue
        if not raw.strip():
            continue
        yield Task(f"{file}:{number}", file, number, raw.rstrip(b"\r\n"))


def is_jsonl(path: str) -> bool:
    return path == STDIN or path.endswith(".jsonl")


def iter_tasks(paths: Iterable[str], limits: Limits = DEFAULT_LIMITS) -> Iterator[Task]:
    for p in paths:
        if p == STDIN:
            yield from _lines(sys.stdin.buffer, STDIN_LABEL, limits.max_file_bytes)
        elif os.path.isdir(p):
            for f in _walk(Path(p)):
                yield Task(str(f), str(f))
        elif is_jsonl(p):
            try:
                fh = open(p, "rb")  # noqa: SIM115 - closed below, lazily read
            except OSError as exc:
                reason = (exc.strerror or "cannot read").lower()
                yield Task(p, p, problem=("io", f"cannot read `{p}`: {reason}", None))
                continue
            with fh:
                yield from _lines(fh, p, limits.max_file_bytes)
        else:
            yield Task(p, p)


def count_tasks(paths: Iterable[str], limits: Limits = DEFAULT_LIMITS) -> int | None:
    """How many tasks ``iter_tasks`` will yield (None when reading stdin)."""
    total = 0
    for p in paths:
        if p == STDIN:
            return None
        if os.path.isdir(p):
            total += sum(1 for _ in _walk(Path(p)))
        elif is_jsonl(p):
            try:
                with open(p, "rb") as fh:
                    total += sum(1 for _ in _lines(fh, p, limits.max_file_bytes))
            except OSError:
                total += 1
        else:
            total += 1
    return total


# --- one task -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Settings:
    backend: str
    timeout_ms: int
    limits: Limits = DEFAULT_LIMITS
    html_dir: str | None = None  # write each replay's HTML page here
    junit: bool = False  # return each replay's JUnit testcase


_STATE: dict[str, Any] = {}


def _backend(settings: Settings) -> Any:
    made = _STATE.get("backend")
    if made is None or _STATE.get("settings") != settings:
        from unmask.backends import create

        made = create(settings.backend, timeout_ms=settings.timeout_ms)
        _STATE["backend"] = made
        _STATE["settings"] = settings
    return made


def diagnostic_json(d: Diagnostic) -> dict[str, Any]:
    out: dict[str, Any] = {"code": d.code, "message": d.message, "severity": d.severity}
    if d.file is not None:
        out["file"] = d.file
    if d.path is not None:
        out["path"] = d.path
    if d.span is not None:
        s = d.span
        out["span"] = {
            "file": s.file,
            "line": s.line,
            "column": s.column,
            "end_line": s.end_line,
            "end_column": s.end_column,
        }
    if d.help is not None:
        out["help"] = d.help
    if d.notes:
        out["notes"] = list(d.notes)
    return out


def error_record(location: str, diags: Iterable[Diagnostic]) -> dict[str, Any]:
    return {
        "schema": ERROR_SCHEMA,
        "location": location,
        "errors": [diagnostic_json(d) for d in diags],
    }


def encode_line(obj: dict[str, Any]) -> bytes:
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # a lone surrogate from the input: escape, stay valid UTF-8
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"


def load_task(task: Task, limits: Limits) -> Any:
    """The validated ``Replay`` of a task (raises ``UnmaskError`` when it is not one)."""
    from unmask.jsonload import parse_json_bytes, read_json_file
    from unmask.replay import replay_from_obj

    if task.problem is not None:
        code, message, hint = task.problem
        raise UnmaskError([Diagnostic(code, message, file=task.location, help=hint)])
    if task.text is None:
        obj = read_json_file(task.file, limits)
        return replay_from_obj(obj, task.file, Path(task.file).parent, limits)
    base_dir = Path.cwd() if task.file == STDIN_LABEL else Path(task.file).parent
    obj = parse_json_bytes(task.text, task.file, limits, first_line=task.line or 1)
    return replay_from_obj(obj, task.file, base_dir, limits, line=task.line)


def audit_task(task: Task, settings: Settings) -> tuple[bytes, dict[str, Any], dict[str, Any]]:
    """Check one task: (result line, its summary view, extras).

    Extras, when asked for in ``settings``: ``row`` (the HTML index row; the page itself
    is written here, so pool workers render in parallel) and ``junit`` (one testcase).
    """
    from unmask.api import check

    replay = None
    try:
        replay = load_task(task, settings.limits)
        report = check(replay, _backend(settings))
    except UnmaskError as exc:
        return _failed(task, settings, exc.diagnostics, getattr(exc, "sources", None))
    except RecursionError:
        d = Diagnostic("limit", "the replay is nested too deeply to check", file=task.location)
        return _failed(task, settings, [d])
    except Exception as exc:  # one broken replay must not stop the batch
        d = Diagnostic(
            "internal-error",
            f"checking this replay failed unexpectedly: {type(exc).__name__}: {exc}",
            file=task.location,
            help="please report this with the replay",
        )
        return _failed(task, settings, [d])
    body = report.to_json()
    obj = {"schema": body.pop("schema"), "location": task.location, **body}
    extra: dict[str, Any] = {}
    if settings.html_dir is not None:
        from unmask.render import html

        row = index_row(obj)
        page = html.render(report, replay)
        with open(os.path.join(settings.html_dir, row["href"]), "w", encoding="utf-8") as fh:
            fh.write(page)
        extra["row"] = row
    if settings.junit:
        from unmask.render import junit

        extra["junit"] = testcase_xml(junit.render_batch([(report, replay)]))
    return encode_line(obj), view(obj), extra


def _failed(
    task: Task, settings: Settings, diags: Iterable[Diagnostic], sources: Any = None
) -> tuple[bytes, dict[str, Any], dict[str, Any]]:
    diags = list(diags)
    obj = error_record(task.location, diags)
    extra: dict[str, Any] = {}
    if settings.html_dir is not None:
        extra["row"] = index_row(obj)
    if settings.junit:
        from unmask.diagnostics import render_all
        from unmask.render import junit

        item = junit.Invalid(task.location, render_all(diags, sources))
        extra["junit"] = testcase_xml(junit.render_batch([item]))
    return encode_line(obj), view(obj), extra


def _run_chunk(tasks: list[Task], settings: Settings) -> list[tuple[bytes, dict, dict]]:
    return [audit_task(t, settings) for t in tasks]


# --- HTML and JUnit pieces --------------------------------------------------------------------

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def page_name(location: str, replay_id: str) -> str:
    """The file name of a replay's HTML page: readable, and unique per input location."""
    import hashlib

    digest = hashlib.sha256(location.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    stem = _UNSAFE.sub("-", replay_id).strip("-.")[:60] or "replay"
    return f"{stem}-{digest}.html"


def index_row(obj: dict[str, Any]) -> dict[str, Any]:
    """One row of the batch index (``unmask.render.html.render_index``) from a result line."""
    loc = str(obj.get("location", ""))
    if obj.get("schema") == ERROR_SCHEMA:
        return {"id": loc, "overall": "INVALID", "dimensions": {}, "href": ""}
    rid = str(obj.get("replay", ""))
    verdict = obj.get("verdict") or {}
    return {
        "id": rid,
        "overall": obj.get("overall"),
        "dimensions": obj.get("dimensions") or {},
        "verdict": verdict.get("observed") if isinstance(verdict, dict) else None,
        "gold": obj.get("gold"),
        "verdict_matches_gold": obj.get("verdict_matches_gold"),
        "href": page_name(loc, rid),
    }


def testcase_xml(batch_xml: str) -> str:
    """The one ``<testcase>`` of a JUnit document, indented for its place in a suite."""
    import xml.etree.ElementTree as ET

    case = ET.fromstring(batch_xml).find(".//testcase")
    assert case is not None
    ET.indent(case, space="  ", level=2)
    return "    " + ET.tostring(case, "unicode").rstrip() + "\n"


def resumed_testcase(obj: dict[str, Any]) -> str:
    """A testcase for a line carried over by ``--resume`` (its report is not re-rendered)."""
    import xml.etree.ElementTree as ET

    from unmask.render.junit import xml_safe

    if obj.get("schema") == ERROR_SCHEMA:
        case = ET.Element(
            "testcase", {"name": xml_safe(str(obj.get("location"))), "classname": "unmask"}
        )
        el = ET.SubElement(
            case, "error", {"type": "invalid", "message": "the replay could not be checked"}
        )
        el.text = xml_safe("; ".join(str(e.get("message")) for e in obj.get("errors") or ()))
    else:
        case = ET.Element(
            "testcase",
            {
                "name": xml_safe(str(obj.get("replay"))),
                "classname": xml_safe(f"unmask.{obj.get('protocol')}"),
            },
        )
        overall = obj.get("overall")
        reasons = "; ".join(str(r.get("message")) for r in obj.get("reasons") or ())
        message = xml_safe(f"{overall}: {reasons}" if reasons else str(overall))
        if overall == "VIOLATED":
            ET.SubElement(case, "failure", {"type": "VIOLATED", "message": message})
        elif overall != "SATISFIED":
            ET.SubElement(case, "skipped", {"type": str(overall), "message": message})
    ET.indent(case, space="  ", level=2)
    return "    " + ET.tostring(case, "unicode").rstrip() + "\n"


class JUnitWriter:
    """Streams testcases to ``PATH.part`` and writes the suite around them at the end."""

    def __init__(self, path: str, name: str = "unmask audit") -> None:
        self.path = path
        self.name = name
        self.part = open(path + ".part", "w", encoding="utf-8")  # noqa: SIM115
        self.counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}

    def add(self, case: str) -> None:
        self.counts["tests"] += 1
        # user text inside a testcase is escaped, so a raw `<failure ` can only be the tag
        for tag, key in (
            ("<failure ", "failures"),
            ("<error ", "errors"),
            ("<skipped ", "skipped"),
        ):
            if tag in case:
                self.counts[key] += 1
                break
        self.part.write(case)

    def finish(self) -> None:
        from xml.sax.saxutils import quoteattr

        from unmask.render.junit import xml_safe

        self.part.close()
        c = self.counts
        common = (
            f'name={quoteattr(xml_safe(self.name))} tests="{c["tests"]}" '
            f'failures="{c["failures"]}" errors="{c["errors"]}"'
        )
        with (
            open(self.path, "w", encoding="utf-8") as out,
            open(self.path + ".part", encoding="utf-8") as part,
        ):
            out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
            out.write(f"<testsuites {common}>\n")
            out.write(f'  <testsuite {common} skipped="{c["skipped"]}">\n')
            for chunk in iter(lambda: part.read(1 << 16), ""):
                out.write(chunk)
            out.write("  </testsuite>\n</testsuites>\n")
        os.unlink(self.path + ".part")


def _worker_init() -> None:
    # Ctrl-C goes to the whole process group: the parent decides, workers stay quiet
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's clean-stop handler
    _die_with_parent()


def _die_with_parent() -> None:
    """A worker whose parent was killed (SIGKILL: no clean-up ran) must not live on."""
    import threading

    parent = os.getppid()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):  # best effort; the watchdog below also works
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
            if os.getppid() != parent:  # the parent died before prctl took effect
                os._exit(1)

    def watch() -> None:
        import time

        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="unmask-parent-watch", daemon=True).start()


def _chunks(tasks: Iterator[Task]) -> Iterator[list[Task]]:
    chunk: list[Task] = []
    size = 0
    for t in tasks:
        chunk.append(t)
        size += len(t.text or b"")
        if len(chunk) >= CHUNK_TASKS or size >= CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


Emit = Callable[[Task, bytes, dict[str, Any], dict[str, Any]], None]


def run_audit(tasks: Iterator[Task], settings: Settings, emit: Emit, jobs: int = 1) -> None:
    """Audit every task and ``emit(task, line, view, extra)`` each, in input order."""
    if jobs <= 1:
        for t in tasks:
            emit(t, *audit_task(t, settings))
        return
    _Pool(settings, jobs).run(tasks, emit)


class _Pool:
    """``jobs`` worker processes with a bounded window of chunks in flight.

    A worker that dies (a crash inside a solver) breaks the whole executor: the pool is
    restarted, the chunk in front is re-run one replay per fresh process so that only the
    replay that kills its process becomes an error record, and the rest is resubmitted.
    """

    def __init__(self, settings: Settings, jobs: int) -> None:
        import multiprocessing

        _backend(settings)  # fail here, not in every worker; forked workers inherit it
        self.settings = settings
        self.jobs = jobs
        fork = sys.platform.startswith("linux")
        self.ctx = multiprocessing.get_context("fork" if fork else "spawn")
        self.window = jobs * WINDOW_PER_JOB
        self.pending: deque[tuple[list[Task], Any]] = deque()
        self.pool = self._new(jobs)

    def _new(self, workers: int) -> Any:
        from concurrent.futures import ProcessPoolExecutor

        return ProcessPoolExecutor(
            max_workers=workers, mp_context=self.ctx, initializer=_worker_init
        )

    def run(self, tasks: Iterator[Task], emit: Emit) -> None:
        try:
            for chunk in _chunks(tasks):
                self.pending.append((chunk, self.pool.submit(_run_chunk, chunk, self.settings)))
                while len(self.pending) >= self.window or (
                    self.pending and self.pending[0][1].done()
                ):
                    self._drain_one(emit)
            while self.pending:
                self._drain_one(emit)
        except BaseException:
            _kill(self.pool)
            raise
        self.pool.shutdown(wait=True)

    def _drain_one(self, emit: Emit) -> None:
        from concurrent.futures.process import BrokenProcessPool

        chunk, fut = self.pending.popleft()
        try:
            results = fut.result()
        except BrokenProcessPool:
            _kill(self.pool)
            results = [self._alone(t) for t in chunk]
            self.pool = self._new(self.jobs)
            self.pending = deque(
                (c, self.pool.submit(_run_chunk, c, self.settings)) for c, _ in self.pending
            )
        for t, done in zip(chunk, results, strict=True):
            emit(t, *done)

    def _alone(self, task: Task) -> tuple[bytes, dict[str, Any], dict[str, Any]]:
        from concurrent.futures.process import BrokenProcessPool

        single = self._new(1)
        try:
            return single.submit(_run_chunk, [task], self.settings).result()[0]
        except BrokenProcessPool:
            d = Diagnostic(
                "internal-error",
                "the process checking this replay died (a crash in the solver?)",
                file=task.location,
                help="check it alone with `unmask check`, and please report it",
            )
            return _failed(task, self.settings, [d])
        finally:
            _kill(single)


def _kill(pool: Any) -> None:
    """Stop a pool now: queued work is dropped and running workers are terminated."""
    procs = list(getattr(pool, "_processes", {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        with contextlib.suppress(Exception):  # already gone
            p.terminate()
    for p in procs:
        p.join(timeout=5)


# --- resume ---------------------------------------------------------------------------------


class ResumeError(Exception):
    """The existing output is not an audit result file (line number, what is wrong)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def read_done(path: str, fold: Callable[[dict[str, Any]], None] | None = None) -> Counter:
    """Locations already in ``path`` (a multiset); cuts off a truncated last line.

    ``fold`` receives every complete line, parsed (to carry the summary over).
    """
    done: Counter = Counter()
    if not os.path.exists(path):
        return done
    good_end = 0
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n"):
                break  # killed mid-write: the partial line is dropped below
            try:
                obj = json.loads(raw)
            except ValueError:
                raise ResumeError(number, "is not a json object") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("location"), str):
                raise ResumeError(number, "has no `location`")
            done[obj["location"]] += 1
            if fold is not None:
                fold(obj)
            good_end += len(raw)
    if os.path.getsize(path) != good_end:
        with open(path, "r+b") as fh:
            fh.truncate(good_end)
    return done


def skip_done(tasks: Iterable[Task], done: Counter) -> Iterator[Task]:
    """Tasks whose location is not (or not as often) in ``done``; consumes ``done``."""
    for t in tasks:
        if done[t.location] > 0:
            done[t.location] -= 1
            continue
        yield t


# --- the summary ----------------------------------------------------------------------------

OVERALLS = ("SATISFIED", "VIOLATED", "UNKNOWN", "INVALID")
DIMENSIONS = ("verdict", "requirement", "coverage", "grounding")
# the report's name of each dimension
_REPORT_DIMENSION = {
    "verdict": "verdict",
    "requirement": "procedure",
    "coverage": "coverage",
    "grounding": "grounding",
}
_OUTCOME_KEY = {"OK": "satisfied", "VIOLATED": "violated", "UNKNOWN": "unknown"}
_FAMILY = re.compile(r"\(([^()]*)\)")

CELLS = {
    ("match", "SATISFIED"): "right_for_right_reasons",
    ("match", "VIOLATED"): "right_for_wrong_reasons",
    ("mismatch", "SATISFIED"): "wrong_but_procedurally_clean",
    ("mismatch", "VIOLATED"): "wrong_and_violated",
}
CELL_TEXT = {
    "right_for_right_reasons": "right for the right reasons",
    "right_for_wrong_reasons": "right for the wrong reasons",
    "wrong_but_procedurally_clean": "wrong but procedurally clean",
    "wrong_and_violated": "wrong and violated",
    "unknown_or_no_gold": "unknown or no gold",
}


def family_key(name: str) -> str:
    """``supported(joined)`` -> ``supported(*)``; a plain name stays as it is."""
    return _FAMILY.sub(lambda m: "(" + ",".join("*" for _ in m.group(1).split(",")) + ")", name)


def _status_outcome(status: str | None, coverage: bool = False) -> str:
    if status == "ENTAILED":
        return "satisfied"
    if status == "REFUTED" and not coverage:
        return "violated"
    if status == "REFUTED":
        return "not_observable"
    if status == "NOT_SPECIFIED":
        return "not_specified"
    return "unknown"


def view(obj: dict[str, Any]) -> dict[str, Any]:
    """What the summary needs of one result line (a report or an error record)."""
    if obj.get("schema") == ERROR_SCHEMA:
        codes = [e.get("code", "error") for e in obj.get("errors", ()) if isinstance(e, dict)]
        return {"error": codes[0] if codes else "error"}
    dims = obj.get("dimensions") or {}
    return {
        "overall": obj.get("overall"),
        "dimensions": {d: dims.get(_REPORT_DIMENSION[d]) for d in DIMENSIONS},
        "matches": obj.get("verdict_matches_gold"),
        "requirements": [
            (r.get("id"), r.get("status"), r.get("coverage")) for r in obj.get("requirements") or ()
        ],
        "grounding": [
            (g.get("judge"), g.get("context"), g.get("status")) for g in obj.get("grounding") or ()
        ],
    }


def _bump(table: dict[str, Counter], key: str, what: str) -> None:
    counter = table.get(key)
    if counter is None:
        counter = table[key] = Counter()
    counter[what] += 1


class Summary:
    """Counts over a run, folded one result at a time."""

    def __init__(self) -> None:
        self.total = 0
        self.overall: Counter = Counter()
        self.errors: Counter = Counter()
        self.dimensions: dict[str, Counter] = {d: Counter() for d in DIMENSIONS}
        self.failed: Counter = Counter()  # replays in which each dimension fails
        self.requirements: dict[str, Counter] = {}
        self.coverage: dict[str, Counter] = {}
        self.grounding: dict[str, Counter] = {}
        self.cross: Counter = Counter()

    def add(self, v: dict[str, Any]) -> None:
        self.total += 1
        if "error" in v:
            self.overall["INVALID"] += 1
            self.errors[v["error"]] += 1
            return
        overall = v["overall"]
        self.overall[overall] += 1
        for d in DIMENSIONS:
            state = v["dimensions"].get(d)
            self.dimensions[d][_OUTCOME_KEY.get(state, "not_checked")] += 1
        not_observable = False
        for rid, status, coverage in v["requirements"]:
            key = family_key(str(rid))
            _bump(self.requirements, key, _status_outcome(status))
            cov = _status_outcome(coverage, coverage=True)
            _bump(self.coverage, key, cov)
            not_observable = not_observable or cov == "not_observable"
        if not_observable:
            self.dimensions["coverage"]["not_observable"] += 1
        for judge, context, status in v["grounding"]:
            _bump(
                self.grounding,
                f"{family_key(str(judge))} ~ {family_key(str(context))}",
                _status_outcome(status),
            )
        for d in ("verdict", "requirement", "grounding"):
            if v["dimensions"].get(d) == "VIOLATED":
                self.failed[d] += 1
        if not_observable:
            self.failed["coverage"] += 1
        gold = {True: "match", False: "mismatch", None: "no_gold"}[v["matches"]]
        self.cross[(gold, overall)] += 1

    # -- derived figures --

    @property
    def valid(self) -> int:
        return self.total - self.overall["INVALID"]

    def cells(self) -> dict[str, int]:
        out = dict.fromkeys(CELL_TEXT, 0)
        for (gold, overall), n in self.cross.items():
            out[CELLS.get((gold, overall), "unknown_or_no_gold")] += n
        return out

    def most_failing(self) -> dict[str, Any]:
        ranking = sorted(DIMENSIONS, key=lambda d: (-self.failed[d], DIMENSIONS.index(d)))
        top = self.failed[ranking[0]]
        leaders = [d for d in ranking if self.failed[d] == top] if top else []
        return {
            "dimensions": leaders,
            "replays": top,
            "tie": len(leaders) > 1,
            "ranking": [{"dimension": d, "replays": self.failed[d]} for d in ranking],
        }

    def to_json(self) -> dict[str, Any]:
        def table(t: dict[str, Counter]) -> dict[str, dict[str, int]]:
            return {k: dict(sorted(c.items())) for k, c in sorted(t.items())}

        return {
            "schema": SUMMARY_SCHEMA,
            "replays": self.total,
            "valid": self.valid,
            "invalid": self.overall["INVALID"],
            "overall": {
                k: self.overall[k] for k in ("SATISFIED", "VIOLATED", "UNKNOWN", "INVALID")
            },
            "errors": dict(sorted(self.errors.items())),
            "dimensions": {d: dict(sorted(self.dimensions[d].items())) for d in DIMENSIONS},
            "requirements": table(self.requirements),
            "coverage": table(self.coverage),
            "grounding": table(self.grounding),
            "gold": {
                "cells": self.cells(),
                "table": {
                    g: {o: self.cross[(g, o)] for o in ("SATISFIED", "VIOLATED", "UNKNOWN")}
                    for g in ("match", "mismatch", "no_gold")
                },
            },
            "most_failing": self.most_failing(),
        }

    def render_text(self) -> str:
        j = self.to_json()
        o = j["overall"]
        lines = [
            f"audited {j['replays']} replay{'' if j['replays'] == 1 else 's'}: "
            f"{o['SATISFIED']} satisfied, {o['VIOLATED']} violated, "
            f"{o['UNKNOWN']} unknown, {o['INVALID']} invalid",
        ]
        if j["errors"]:
            lines.append(
                "  invalid inputs by first error: "
                + ", ".join(f"{k} {n}" for k, n in j["errors"].items())
            )
        lines.append("dimensions (replays): violated / unknown / satisfied / not checked")
        for d in DIMENSIONS:
            c = j["dimensions"][d]
            extra = (
                f"  ({c.get('not_observable', 0)} with a requirement not observable)"
                if d == "coverage"
                else ""
            )
            lines.append(
                f"  {d:<12} {c.get('violated', 0):>7} {c.get('unknown', 0):>9} "
                f"{c.get('satisfied', 0):>11} {c.get('not_checked', 0):>13}{extra}"
            )
        for title, key in (
            ("requirements (checks)", "requirements"),
            ("coverage (checks)", "coverage"),
            ("grounding (checks)", "grounding"),
        ):
            if j[key]:
                lines.append(f"{title}:")
                for name, c in j[key].items():
                    lines.append(
                        f"  {name}: "
                        + ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in c.items())
                    )
        cells = j["gold"]["cells"]
        lines.append("gold agreement x adherence:")
        for k, text in CELL_TEXT.items():
            lines.append(f"  {text:<30} {cells[k]:>7}")
        mf = j["most_failing"]
        if not mf["dimensions"]:
            lines.append("fails most often: no dimension failed in this run")
        else:
            names = " and ".join(mf["dimensions"])
            tie = " (a tie)" if mf["tie"] else ""
            rank = ", ".join(f"{r['dimension']} {r['replays']}" for r in mf["ranking"])
            lines.append(f"fails most often: {names}{tie}, in {mf['replays']} replays ({rank})")
        return "\n".join(lines)
