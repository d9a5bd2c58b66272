"""The `ragas` importer: RAGAS's ``EvaluationResult.to_pandas()`` as CSV, JSON or JSON Lines.

Contract: each row becomes a replay of ``protocols/ragas.proto``: its domain ``metric``
holds the file's score columns (every column that is not a field of RAGAS's samples nor
pandas' row index: ``m0``, ``m1``, … in column order), its domain ``ranged`` those whose
range the metric's code fixes. ``.csv`` is read as ``to_csv`` writes it, with or without
the index (a list cell is Python's spelling of a list of strings, read as literals, never
run), ``.jsonl`` as ``to_json(orient="records", lines=True)``, anything else as ``to_json``
with ``orient="records"``, ``"columns"`` (pandas' default), ``"index"``, ``"split"`` or
``"table"``; all give the same replays, since every score is read at
the 10 decimal places pandas writes to JSON by default (``pandas_json``). Derived by rule:
``scored(m)`` TRUE where the row has a score for ``m`` (an empty score is UNKNOWN, never
FALSE); ``possible(r)`` for the score of a ``ranged`` metric. RAGAS writes no reason and no
threshold: one note per file says what therefore cannot be checked, another which metrics'
ranges are not known. A multi-turn sample is read (the conversation as the input, its last
AI message as the response; in a CSV its messages are Python's spelling, parsed, never
run). An
``@experiment`` result (columns the user's function chose) is refused in one message. A
row that cannot be read is skipped with its line or JSON path and field; the others are
imported.
"""

from __future__ import annotations

import ast
import csv
import io
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from unmask.importers import (
    PROTOCOLS,
    Imported,
    Note,
    Occurrences,
    Options,
    Skipped,
    build,
    is_number,
    not_the_format,
    num,
    rule_by,
)
from unmask.plumbing.jsonload import show
from unmask.replay.builder import ReplayBuilder

NAME = "ragas"
PROTOCOL = PROTOCOLS / "ragas.proto"

# the fields of RAGAS 0.4.3's `SingleTurnSample`, which `to_pandas()` writes before the scores
SAMPLE_FIELDS = (
    "user_input",
    "retrieved_contexts",
    "reference_contexts",
    "retrieved_context_ids",
    "reference_context_ids",
    "response",
    "multi_responses",
    "reference",
    "rubrics",
    "persona_name",
    "query_style",
    "query_length",
    # `MultiTurnSample`'s own: `user_input` is then a list of messages
    "reference_tool_calls",
    "reference_topics",
)
# sample field -> the replay source that holds it
SOURCE_OF = {
    "user_input": "protocol",
    "response": "response",
    "retrieved_contexts": "context",
    "reference": "reference",
}
# RAGAS 0.4.3 metrics whose score is a share or an average of 0/1 verdicts or matches,
# so from 0 to 1 by construction (their `_compute_score`s); a `ModeMetric` column is
# `name(mode=…)`
SHARE = frozenset(
    {
        "faithfulness",
        "context_precision",
        "context_utilization",
        "llm_context_precision_with_reference",
        "llm_context_precision_without_reference",
        "non_llm_context_precision_with_reference",
        "id_based_context_precision",
        "context_recall",
        "non_llm_context_recall",
        "id_based_context_recall",
        "context_entity_recall",
        "noise_sensitivity",
        "factual_correctness",
        # multi-turn: an argument-match average times a 0/1 order check; an F1; an F1,
        # precision or recall of 0/1 topic verdicts
        "tool_call_accuracy",
        "tool_call_f1",
        "topic_adherence",
    }
)
BINARY = frozenset({"exact_match", "string_present"})  # `float(reference == response)`, `in`
RANGED = ("share", "binary")  # the kinds whose scores are checked: members of `ranged`
# RAGAS's own metrics whose score rests on a cosine similarity, which can be below 0
COSINE = frozenset(
    {"answer_relevancy", "semantic_similarity", "answer_similarity", "answer_correctness"}
)
# one string literal as Python's `repr` writes it: quoted, escapes backslashed, one line
_STR = r"""(?:'[^'\\\n]*(?:\\.[^'\\\n]*)*'|"[^"\\\n]*(?:\\.[^"\\\n]*)*")"""
_PY_STR = re.compile(_STR)
_EMPTY_LIST, _OPEN = re.compile(r"\[\s*\]"), re.compile(r"\[\s*")
_COMMA, _CLOSE = re.compile(r"\s*,\s*"), re.compile(r"\s*,?\s*\]")
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)")
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "r": "\r", "t": "\t"}
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_SPLIT = frozenset(
    {"columns", "data"}
)  # `to_json(orient="split")`: `index` too, unless index=False
_EMPTY = frozenset({"", "nan", "NaN"})  # pandas writes a missing score as nothing
# pandas' row index, which `to_csv()` writes by default as a first column with an empty
# name (`Unnamed: 0` once read back by `read_csv` and written again): not a score
_INDEX = re.compile(r"(?:Unnamed: \d+)?")


def is_index(column: str) -> bool:
    """Whether ``column`` is pandas' row index as a file holds it, never a metric."""
    return _INDEX.fullmatch(column) is not None


def score_columns(columns: list[str]) -> list[str]:
    """The columns that hold metrics' scores: not a sample's field, not the row index."""
    return [c for c in columns if c not in SAMPLE_FIELDS and not is_index(c)]


class _Bad(Exception):
    def __init__(self, column: str, reason: str):
        super().__init__(column, reason)
        self.column, self.reason = column, reason


def pandas_json(x: float) -> float:
    """``x`` as pandas' ``to_json`` writes it by default (10 decimal places, by its own
    rounding: half up when the digit before is odd or 0), so that a CSV's full-precision
    score and a JSON's rounded one read alike; re-reading a rounded score leaves it as is."""
    if not math.isfinite(x) or x == 0 or not 1e-15 <= abs(x) < 1e16:
        return x  # pandas writes these in full (or not at all)
    v = abs(x)
    whole = int(v)
    tmp = (v - whole) * 1e10
    frac = int(tmp)
    diff = tmp - frac
    if diff > 0.5 or (diff == 0.5 and (frac == 0 or frac & 1)):
        frac += 1
        if frac >= 10**10:
            frac, whole = 0, whole + 1
    r = float(f"{whole}.{frac:010d}")
    return -r if x < 0 else r


def kind_of(metric: str) -> str | None:
    """``share``, ``binary``, ``cosine``, or None for a name Unmask does not know."""
    base = metric.split("(mode=", 1)[0] if metric.endswith(")") else metric
    if base in SHARE:
        return "share"
    if base in BINARY:
        return "binary"
    if base in COSINE:
        return "cosine"
    return None


# --- reading the three formats into rows: (where, {column: value}) or a skip --------------


def _rows(path: Path, options: Options) -> tuple[list[str], list[tuple[str, Any]]]:
    """The file's columns and its rows; a row is ``(where, dict)`` with ``where`` the row's
    place (``FILE:LINE`` or ``FILE: JSON path``), or ``(where, _Bad)`` for one not readable."""
    file = str(path)
    if path.suffix.lower() == ".csv":
        from unmask.plumbing.files import decode_utf8, read_bytes

        text = decode_utf8(read_bytes(path, options.limits, file), file, file)
        return _csv_rows(file, text, options)
    if path.suffix.lower() == ".jsonl":
        return _jsonl_rows(path, options)
    return _json_rows(file, path, options)


def _columns(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(k for r in rows for k in r))


def _check_columns(file: str, columns: list[str]) -> None:
    if "user_input" not in columns:
        if any(c.endswith("_reason") for c in columns):
            # RAGAS 0.4's `@experiment` writes whatever the experiment function returns: a
            # metric's value and reason are columns the user named, its allowed values or
            # range are not written, so nothing in the file says which columns are scores
            raise not_the_format(
                file,
                "a RAGAS `@experiment` result is not imported: its columns are what the"
                " experiment function returns, and the file records neither which are"
                " metrics' values nor the values each metric allows",
                help="save it with the `local/jsonl` backend and import it with"
                " `unmask import jsonl` and a mapping that names the value and reason"
                " columns, or import `evaluate()`'s `result.to_pandas()`",
            )
        raise not_the_format(
            file,
            "not a RAGAS result: expected a `user_input` column",
            help="write one with `result.to_pandas().to_csv(…)` (or `.to_json(…)`); an"
            " `@experiment` result is read by `unmask import jsonl` with a mapping",
        )
    if not score_columns(columns):
        raise not_the_format(
            file,
            "not a RAGAS result: no score columns beside the sample's fields",
            help="the columns after the sample's are the metrics' scores",
        )


def _csv_rows(file: str, text: str, options: Options) -> tuple[list[str], list]:
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, options.limits.max_source_chars))
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        try:
            header = next(reader, None)
            if not header:
                raise not_the_format(file, "not a RAGAS result: expected a header row")
            _check_columns(file, header)
            rows: list[tuple[str, Any]] = []
            start = reader.line_num + 1
            for cells in reader:
                where, start = f"{file}:{start}", reader.line_num + 1
                if not cells:
                    continue  # a blank line is not a row
                if len(cells) != len(header):
                    rows.append(
                        (where, _Bad("", f"expected {len(header)} cells, found {len(cells)}"))
                    )
                    continue
                try:
                    row = dict(zip(header, cells, strict=True))
                    rows.append((where, _csv_row(row, options.limits.max_source_chars)))
                except _Bad as bad:
                    rows.append((where, bad))
        except csv.Error as exc:
            if "field larger" in str(exc):
                lim = options.limits
                raise not_the_format(
                    file,
                    f"a cell at line {reader.line_num} is longer than the limit of"
                    f" {lim.max_source_chars} characters",
                    help=f"raise it with `{lim.option('max_source_chars')}`",
                ) from None
            raise not_the_format(
                file,
                f"not readable as CSV at line {reader.line_num}",
                help="write it with `result.to_pandas().to_csv(…)`",
            ) from None
    finally:
        csv.field_size_limit(limit)
    return header, rows


def _csv_row(cells: dict[str, str], limit: int) -> dict[str, Any]:
    """A CSV row's cells as the JSON formats hold them: an empty cell is missing, a list
    cell a list, a score cell a number."""
    row: dict[str, Any] = {}
    for col, cell in cells.items():
        if col == "user_input" and cell.startswith("[{"):
            # a multi-turn sample's messages, written as Python's list of dicts
            row[col] = _python_value(col, cell, limit)
            continue
        if is_index(col):
            continue  # the row index names the row; rows are named by their place
        if col == "retrieved_contexts":  # the one list a replay holds (as `context`)
            row[col] = None if cell == "" else _python_list(col, cell, limit)
        elif col in SAMPLE_FIELDS:
            row[col] = None if cell == "" else cell
        elif cell.strip() in _EMPTY:
            row[col] = None
        elif _NUMBER.fullmatch(cell.strip()):
            row[col] = float(cell)
        else:
            raise _Bad(col, f"expected a score (a number) or nothing, found `{show(cell)}`")
    return row


def _python_list(col: str, cell: str, limit: int) -> list:
    """A list of texts as pandas writes it to CSV (Python's spelling, `['a', "b's"]`): the
    text between its string literals is checked, then each literal is unquoted, its
    escapes (those ``repr`` writes) undone by a table; only another escape sends that one
    literal to ``ast.literal_eval``, never ``eval``. A whole cell handed to
    ``ast.literal_eval`` took 30 s and 1.7 GB for 10 MB."""
    s = cell.strip()
    # between the literals: `[`, then `,` each time, then `]` (a trailing `,` allowed)
    between = _PY_STR.split(s) if len(s) <= limit else ["", ""]
    first, last = between[0], between[-1]
    if len(between) == 1:
        ok = _EMPTY_LIST.fullmatch(s) is not None
    else:
        ok = (
            _OPEN.fullmatch(first) is not None
            and _CLOSE.fullmatch(last) is not None
            and all(_COMMA.fullmatch(sep) for sep in set(between[1:-1]))
        )
    if not ok:
        raise _Bad(col, f"expected a list of texts (`['…', '…']`), found `{show(cell)}`")
    out = []
    for tok in _PY_STR.findall(s):
        body = tok[1:-1]
        if "\\" in body:
            try:
                body = _ESCAPE.sub(_unescape, body)
            except ValueError:  # an escape `repr` does not write: Python reads the literal
                body = _literal(col, cell, tok)
        out.append(body)
    return out


_TOKEN = re.compile(
    rf"\s*(?:({_STR})|(-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)|(True|False|None)|([\[\]{{}},:]))"
)
_CONSTANTS = {"True": True, "False": False, "None": None}
_MAX_DEPTH = 64


def _python_value(col: str, cell: str, limit: int) -> Any:
    """A cell holding Python's spelling of lists, dicts, texts, numbers, ``True``,
    ``False`` and ``None`` (how pandas writes a multi-turn sample's messages to CSV), read
    by a tokenizer and a parser of just that, in linear time: never ``eval``, and no
    ``ast.literal_eval`` of a whole cell (too slow for a large one, ``_python_list``)."""
    bad = _Bad(col, f"expected Python's spelling of a list of messages, found `{show(cell)}`")
    if len(cell) > limit:
        raise bad
    toks: list[tuple[str, Any]] = []
    at, end = 0, len(cell.rstrip())
    while at < end:
        m = _TOKEN.match(cell, at)
        if m is None:
            raise bad
        at = m.end()
        if m.group(1) is not None:
            body = m.group(1)[1:-1]
            if "\\" in body:
                try:
                    body = _ESCAPE.sub(_unescape, body)
                except ValueError:
                    body = _literal(col, cell, m.group(1))
            toks.append(("v", body))
        elif m.group(2) is not None:
            toks.append(
                ("v", float(m.group(2)) if any(c in m.group(2) for c in ".eE") else int(m.group(2)))
            )
        elif m.group(3) is not None:
            toks.append(("v", _CONSTANTS[m.group(3)]))
        else:
            toks.append((m.group(4), None))
    pos = 0

    def value(depth: int) -> Any:
        nonlocal pos
        if pos >= len(toks) or depth > _MAX_DEPTH:
            raise bad
        kind, v = toks[pos]
        pos += 1
        if kind == "v":
            return v
        if kind not in "[{":
            raise bad
        close = "]" if kind == "[" else "}"
        items: list = []
        out: dict = {}
        while pos < len(toks) and toks[pos][0] != close:
            if kind == "[":
                items.append(value(depth + 1))
            else:
                key = value(depth + 1)
                if not isinstance(key, str) or pos >= len(toks) or toks[pos][0] != ":":
                    raise bad
                pos += 1
                out[key] = value(depth + 1)
            if pos < len(toks) and toks[pos][0] == ",":
                pos += 1
            elif pos >= len(toks) or toks[pos][0] != close:
                raise bad
        if pos >= len(toks):
            raise bad
        pos += 1
        return items if kind == "[" else out

    result = value(0)
    if pos != len(toks) or not isinstance(result, list):
        raise bad
    return result


def _literal(col: str, cell: str, tok: str) -> str:
    """One string literal the pattern matched, read by ``ast.literal_eval`` (its warnings
    about odd escapes kept off stderr)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = ast.literal_eval(tok)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            value = None
    if not isinstance(value, str):
        raise _Bad(col, f"expected a list of texts (`['…', '…']`), found `{show(cell)}`")
    return value


def _unescape(m: re.Match) -> str:
    e = m.group(1)
    if e in _ESCAPES:
        return _ESCAPES[e]
    if e[0] in "xuU" and len(e) > 1:
        return chr(int(e[1:], 16))
    raise ValueError(e)


def _jsonl_rows(path: Path, options: Options) -> tuple[list[str], list]:
    from unmask.importers.jsonlines import BadLine, jsonl_records

    # a first line that is not JSON: not a JSON Lines file at all
    file, rows = str(path), []
    for n, rec in jsonl_records(path, options.limits, bad="first", objects=True):
        rows.append((f"{file}:{n}", _Bad("", rec.reason) if isinstance(rec, BadLine) else rec))
    columns = _columns([r for _, r in rows if isinstance(r, dict)])
    _check_columns(file, columns)
    return columns, rows


def _json_rows(file: str, path: Path, options: Options) -> tuple[list[str], list]:
    from unmask.plumbing.jsonload import read_json_file

    data = read_json_file(path, options.limits)
    rows: list[tuple[str, Any]] = []
    if isinstance(data, list):  # orient="records"
        for i, rec in enumerate(data):
            ok = isinstance(rec, dict)
            rows.append(
                (
                    f"{file}: [{i}]",
                    rec if ok else _Bad("", f"expected an object, found `{show(rec)}`"),
                )
            )
        columns = _columns([r for _, r in rows if isinstance(r, dict)])
    elif _SPLIT.issubset(data if isinstance(data, dict) else ()) and "user_input" not in data:
        columns, rows = _split_rows(file, data)
    elif isinstance(data, dict) and isinstance(data.get("schema"), dict) and "data" in data:
        columns, rows = _table_rows(file, data)
    elif isinstance(data, dict) and all(isinstance(v, dict) for v in data.values()):
        # a row of these is named by its index key: `FILE: row `3`: field `F``
        if "user_input" in data:  # orient="columns", pandas' default: column -> index -> value
            columns = list(data)
            index = list(dict.fromkeys(k for col in data.values() for k in col))
            for k in index:
                row = {c: data[c][k] for c in columns if k in data[c]}
                rows.append((f"{file}: row `{show(k)}`", row))
        else:  # orient="index": index -> column -> value
            for k, rec in data.items():
                rows.append((f"{file}: row `{show(k)}`", rec))
            columns = _columns([r for _, r in rows])
    else:
        raise not_the_format(
            file,
            "not a RAGAS result: expected an array of rows or an object of columns",
            help="write one with `result.to_pandas().to_json(…)`; for one row a line, name the"
            " file `.jsonl`",
        )
    _check_columns(file, columns)
    return columns, rows


def _split_rows(file: str, data: dict) -> tuple[list[str], list]:
    """``to_json(orient="split")``: ``columns``, ``data`` (one array a row, in the columns'
    order) and ``index`` (absent with ``index=False``), which names no score."""
    columns, cells = data["columns"], data["data"]
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise not_the_format(file, "expected an array of column names", "columns")
    if not isinstance(cells, list):
        raise not_the_format(file, "expected an array of rows", "data")
    rows: list[tuple[str, Any]] = []
    for i, cell in enumerate(cells):
        where = f"{file}: data[{i}]"
        if not isinstance(cell, list) or len(cell) != len(columns):
            reason = f"expected an array of {len(columns)} cells, found `{show(cell)}`"
            rows.append((where, _Bad("", reason)))
        else:
            rows.append((where, dict(zip(columns, cell, strict=True))))
    return columns, rows


def _table_rows(file: str, data: dict) -> tuple[list[str], list]:
    """``to_json(orient="table")``: a Table Schema (``schema.fields``, ``primaryKey`` the
    index's columns, ``index`` unless it was named) and ``data``, an array of records; the
    index's columns are dropped, since they name rows, not scores."""
    schema, records = data["schema"], data["data"]
    key = schema.get("primaryKey", [])
    key = [key] if isinstance(key, str) else key
    if not isinstance(records, list) or not isinstance(key, list):
        raise not_the_format(file, "expected an array of rows", "data")
    rows: list[tuple[str, Any]] = []
    for i, rec in enumerate(records):
        where = f"{file}: data[{i}]"
        if isinstance(rec, dict):
            rows.append((where, {k: v for k, v in rec.items() if k not in key}))
        else:
            rows.append((where, _Bad("", f"expected an object, found `{show(rec)}`")))
    return _columns([r for _, r in rows if isinstance(r, dict)]), rows


# --- one row, one replay ------------------------------------------------------------------


def read(path: Path, options: Options) -> Iterator[Imported | Skipped | Note]:
    file = str(path)
    columns, rows = _rows(path, options)
    metrics = score_columns(columns)
    proto = PROTOCOL.read_text(encoding="utf-8")
    for i, (where, row) in enumerate(rows):
        if isinstance(row, _Bad):
            yield Skipped(f"{where}: field `{row.column}`" if row.column else where, row.reason)
            continue
        yield _row(proto, where, i, row, metrics, options)
    names = ", ".join(f"`{show(m)}`" for m in metrics)
    yield Note(
        file,
        f"a RAGAS result holds no reason and no threshold, so for {names} neither whether a score"
        " passes nor whether it agrees with what the metric's model found (its statements,"
        " verdicts or questions) can be checked: only that a score is one its metric can give",
    )
    cosine = [m for m in metrics if kind_of(m) == "cosine"]
    unknown = [m for m in metrics if kind_of(m) is None]
    if cosine:
        yield Note(
            file,
            f"{', '.join(f'`{show(m)}`' for m in cosine)}: a score that rests on a cosine"
            " similarity can fall below 0, so whether it is one the metric can give was not"
            " checked",
        )
    if unknown:
        yield Note(
            file,
            f"{', '.join(f'`{show(m)}`' for m in unknown)}: not a RAGAS metric whose range"
            " Unmask knows, so whether a score is one it can give was not checked",
        )


def _text(col: str, v: Any) -> str | None:
    if v is None or v == "" or v == []:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, list) and col == "retrieved_contexts":
        if not all(isinstance(x, str) for x in v):
            raise _Bad(col, f"expected a list of texts, found `{show(v)}`")
        return "\n".join(f"[{k}] {x}" for k, x in enumerate(v, start=1))
    raise _Bad(col, f"expected a text, found `{show(v)}`")


def _conversation(turns: list) -> dict[str, str]:
    """A multi-turn sample's messages (``{"content", "type", "tool_calls"?}``, as RAGAS's
    ``MultiTurnSample`` writes them): the conversation, one ``[type] content`` line per
    message with the tools it calls, as the ``protocol`` source; the last AI message's
    content as the ``response``."""
    lines, last_ai = [], None
    for k, m in enumerate(turns):
        if not isinstance(m, dict) or not isinstance(m.get("content"), str):
            raise _Bad("user_input", f"message {k}: expected `content` text, found `{show(m)}`")
        kind = m.get("type") if isinstance(m.get("type"), str) else "message"
        line = f"[{kind}] {m['content']}"
        calls = m.get("tool_calls")
        if isinstance(calls, list) and calls:
            line += " (tool calls: " + ", ".join(_call(c) for c in calls) + ")"
        lines.append(line)
        if kind == "ai" and m["content"]:
            last_ai = m["content"]
    out = {"protocol": "\n".join(lines)} if lines else {}
    if last_ai is not None:
        out["response"] = last_ai
    return out


def _call(c: Any) -> str:
    import json

    if isinstance(c, dict) and isinstance(c.get("name"), str):
        return f"{c['name']}({json.dumps(c.get('args'), ensure_ascii=False, sort_keys=True)})"
    return show(c)


def _score(col: str, v: Any) -> float | None:
    if v is None:
        return None
    if not is_number(v):
        raise _Bad(col, f"expected a score (a number) or nothing, found `{show(v)}`")
    return pandas_json(float(v))


def _row(
    proto: str, where: str, i: int, row: dict, metrics: list[str], options: Options
) -> Imported | Skipped:
    try:
        sources = {}
        turns = row.get("user_input")
        if isinstance(turns, list):  # a multi-turn sample: the conversation is the input
            sources.update(_conversation(turns))
        for col, source in SOURCE_OF.items():
            t = (
                None
                if isinstance(turns, list) and col == "user_input"
                else _text(col, row.get(col))
            )
            if t is not None:
                sources[source] = t
        scores = [_score(m, row.get(m)) for m in metrics]
    except _Bad as bad:
        return Skipped(f"{where}: field `{bad.column}`", bad.reason)

    lines = [f"row {i}: RAGAS scores, no reasons"]
    for j, (m, s) in enumerate(zip(metrics, scores, strict=True)):
        lines.append(f"[m{j}] {m}: score={'none' if s is None else num(s)}")
    rationale = "\n".join(lines)
    sources["rationale"] = rationale
    occurrences = Occurrences(rationale)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)

    def make() -> ReplayBuilder:
        b = ReplayBuilder(
            proto,
            sources=sources,
            verdict="scored" if all(s is not None for s in scores) else "incomplete",
            id=f"r{i}",
            domains={
                "metric": [f"m{j}" for j in range(len(metrics))],
                "ranged": [f"m{j}" for j, m in enumerate(metrics) if kind_of(m) in RANGED],
            },
            limits=options.limits,
        )
        by = rule_by(NAME)
        for j, (m, s) in enumerate(zip(metrics, scores, strict=True)):
            if s is None:  # RAGAS left it empty: not scored, as far as the file shows
                continue
            h = lines[j + 1]
            occ = occurrences.at(h, starts[j + 1])
            b.annotate(f"scored(m{j})", True, quote=h, occurrence=occ, by=by)
            kind = kind_of(m)
            if kind == "share":
                ok = 0 <= s <= 1
                said = f"`{m}` scores from 0 to 1: {num(s)} is {'in' if ok else 'out of'} range"
            elif kind == "binary":
                ok = s in (0, 1)
                said = f"`{m}` scores 0 or 1: {num(s)} is {'one of them' if ok else 'neither'}"
            else:
                continue
            b.annotate(
                f"possible(m{j})",
                ok,
                quote=h,
                occurrence=occ,
                by=by,
                explanation=said,
            )
        return b

    return build(where, f"r{i}", make)
