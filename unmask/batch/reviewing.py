"""The review engine over replays and audit results: the queue, the sample, the calibration.

Contract: each function takes paths as ``unmask review`` and ``unmask calibrate`` take them
(a replay file, a folder, a JSON Lines file of replays; for the queue and the sample also an
audit's results file, each line's report used as the audit wrote it and its replay re-read
from ``location`` relative to ``root``, ``unmask.batch.results``). A replay that cannot be
read is kept as its ``UnmaskError`` (``errors``; ``calibrate``: its diagnostics, in
``problems``) and the rest are read. Nothing here prints or exits: the command does.
- ``gather`` is (location, report JSON, replay document) of every replay, each file read
  once, each replay checked on ``solver`` (unless its report comes from a results file), and
  each record's digest kept (the export carries it; ``--apply`` refuses a record that
  changed); ``queue`` is those, ranked as ``unmask.review.queue.items`` ranks them;
- ``sample`` draws ``n`` of every unreviewed reading, stratified by reader
  (``unmask.review.sample``), and returns the sampled review lines with the number of
  readings drawn from;
- ``calibrate`` counts every sampled review for its reader into a ``Calibration``
  (``unmask.review.calibration``), with the problems that forbid writing it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from unmask.plumbing.diagnostics import Diagnostic, UnmaskError, internal_error
from unmask.plumbing.frozen import frozen
from unmask.plumbing.limits import Limits
from unmask.review.queue import CONTEXT_CHARS


def _document(task: Any, limits: Limits, digests: dict[str, str]) -> Any:
    """The task's replay document, its record's digest kept in ``digests`` (the export
    carries it, and ``--apply`` refuses a record that no longer has it)."""
    from unmask.plumbing.files import read_bytes
    from unmask.plumbing.jsonload import parse_json_bytes
    from unmask.replay.inputs import task_document
    from unmask.review.queue import record_digest

    if task.problem is None and task.text is None:  # a whole file: its bytes, read once
        data = read_bytes(task.file, limits)
        doc = parse_json_bytes(data, task.file, limits)
    else:
        doc, _ = task_document(task, limits)
        data = task.text
    digests[task.location] = record_digest(data)
    return doc


def _from_results(path: str, locations: Any, limits: Limits, errors: list, digests: dict):
    """(location, report, replay document) of each report line of an audit's results file;
    the report is used as the audit wrote it, once its shape is what review reads."""
    from unmask.batch.results import result_lines

    for line in result_lines(path, limits):
        if line.error is not None:
            errors.append(line.error)
            continue
        if not line.checked:
            continue  # the audit could not check it: nothing rests on anything
        try:
            report = line.report()  # annotations in place, whichever form
            doc = _document(locations.task(line.location), limits, digests)
            yield line.location, report, doc
        except UnmaskError as exc:
            errors.append(exc)


def gather(
    paths: tuple[str, ...], root: str, limits: Limits, solver: Any, errors: list, digests: dict
):
    """(location, report JSON, replay document) of every replay the paths name; each file
    is read once, however many replays it holds."""
    from unmask.backends.base import spec
    from unmask.batch.results import Locations, is_results
    from unmask.checking.outcomes import check_replay
    from unmask.plumbing.interrupt import reraise_interrupt
    from unmask.replay.inputs import iter_tasks, load_task

    out = []
    locations = Locations(root, limits)
    for path in paths:
        if is_results(path, limits):
            out += _from_results(path, locations, limits, errors, digests)
            continue
        for task in iter_tasks([path], limits):
            try:
                replay = load_task(task, limits)
                doc = _document(task, limits, digests)
                report = check_replay(replay, solver, backend_name=spec(solver)).to_json()
            except UnmaskError as exc:
                errors.append(exc)
                continue
            except Exception as exc:  # a bug must still not end in a traceback
                reraise_interrupt(exc)
                errors.append(UnmaskError([internal_error(exc, file=task.location)]))
                continue
            out.append((task.location, report, doc))
    return out


@frozen
class Queue:
    """The review items of ``queue``, and the replays that could not be read."""

    items: list
    errors: list


def queue(
    paths: tuple[str, ...],
    root: str,
    limits: Limits,
    solver: Any,
    chars: int = CONTEXT_CHARS,
    findings_only: bool = False,
) -> Queue:
    """The ranked review items of every replay the paths name (``gather``, then
    ``unmask.review.queue.items``)."""
    from unmask.review.queue import items

    errors: list[UnmaskError] = []
    digests: dict[str, str] = {}
    docs = gather(paths, root, limits, solver, errors, digests)
    return Queue(items(docs, chars, findings_only, digests), errors)


@frozen
class Sample:
    """The sampled review lines, in draw order, of ``size`` readings there were."""

    lines: list
    size: int
    errors: list


def sample(
    paths: tuple[str, ...], n: int, seed: int, blind: bool, root: str, chars: int, limits: Limits
) -> Sample:
    """Draw ``n`` of every unreviewed reading of the paths with ``seed`` (all of them when
    there are fewer); each as its review line, blind or not."""
    from unmask.batch.readings import replays
    from unmask.review.sample import draw, frame, sample_json

    errors: list[UnmaskError] = []
    readings = frame(list(replays(paths, root, limits, errors)), chars)
    drawn = draw(readings, n, seed)
    lines = [r.to_json(sample_json(seed, n, r.reader, blind), blind) for r in drawn]
    return Sample(lines, len(readings), errors)


@frozen
class Calibrated:
    """What ``calibrate`` measured: the calibration, its rows' counts (reviewed, upheld)
    by reader, the replays read, and the problems (when any, nothing may be written)."""

    calibration: Any
    by_reader: dict
    replays: int
    problems: list


def calibrate(paths: tuple[str, ...], data: str | None, limits: Limits) -> Calibrated:
    """Every sampled review of the replays the paths name, counted for its reader;
    ``data`` names what the reviews were drawn from (None: the paths as given)."""
    from unmask.plumbing.interrupt import reraise_interrupt
    from unmask.replay.inputs import iter_tasks, load_task, task_document
    from unmask.review.calibration import counted, digest_text, make, tally

    counts: Counter = Counter()
    problems: list[Diagnostic] = []
    measured: set[tuple[str, str]] = set()
    replays = 0
    for task in iter_tasks(paths, limits):
        try:
            replay = load_task(task, limits)
            doc, _ = task_document(task, limits)
        except UnmaskError as exc:
            problems += exc.diagnostics
            continue
        except Exception as exc:  # a bug must still not end in a traceback
            reraise_interrupt(exc)
            problems.append(internal_error(exc, file=task.location))
            continue
        replays += 1
        if tally(doc, task.location, counts, problems):
            protocol = replay.protocol
            # a protocol without its text (embedded IR) is named without a digest
            measured.add((protocol.name, digest_text(protocol.text) if protocol.text else ""))
    by_reader = counted(counts)
    calibration = make(" ".join(paths) if data is None else data, measured, by_reader)
    return Calibrated(calibration, by_reader, replays, problems)
