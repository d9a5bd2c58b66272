"""The protocol IR JSON defined once: the structs of ``unmask.ir.format`` are the format.

The published JSON Schema is what they generate; what the writer writes converts to them,
key for key in their order, and the schema accepts it; what the schema refuses, the reader
refuses; and the reader's long way (JSON that does not convert at once) words each problem
as every reader does, including an expression too deep for msgspec's converter and a key
msgspec cannot compare.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest

from tests.strategies import random_protocol
from unmask import ir
from unmask.bench.workload import _labelled_protocol, factual_protocol
from unmask.ir import format as fmt
from unmask.ir.json import protocol_to_json
from unmask.ir.json_reader import protocol_from_json
from unmask.plumbing.diagnostics import UnmaskError
from unmask.plumbing.limits import Limits
from unmask.replay.load import load_replay

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "docs" / "schemas" / "protocol-1.json"
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
DEFAULT = Limits()


def _written() -> list[tuple[str, dict[str, Any]]]:
    docs: list[tuple[str, dict[str, Any]]] = []
    for path in EXAMPLES:  # the shipped replays' protocols, embedded or compiled
        try:
            protocol = load_replay(str(path)).protocol
        except UnmaskError:  # an example of a replay that does not validate
            continue
        docs.append((path.name, protocol_to_json(protocol)))
    docs.append(("factual", factual_protocol([f"c{i}" for i in range(5)])))
    docs.append(("labelled", json.loads(_labelled_protocol(4))))
    rng = random.Random(34)
    for i in range(40):
        p = random_protocol(rng, rng.randint(2, 7), extended=True)
        docs.append((f"random-{i}", protocol_to_json(p)))
    return docs


WRITTEN = _written()


def test_the_published_schema_is_what_the_structs_generate() -> None:
    published = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert published == fmt.json_schema(), (
        "docs/schemas/protocol-1.json is stale: write json_schema() there again"
    )
    jsonschema.Draft202012Validator.check_schema(published)


def test_the_examples_and_generated_protocols_are_there() -> None:
    assert sum(1 for name, _ in WRITTEN if name.endswith(".json")) >= 5
    kinds = {"labels" in d for _, d in WRITTEN} | {"definitions" in d for _, d in WRITTEN}
    assert kinds == {True, False}


def _objects(doc: dict[str, Any]) -> list[tuple[type[msgspec.Struct], dict[str, Any]]]:
    """Every object of a written protocol with the struct it is meant as."""
    out: list[tuple[type[msgspec.Struct], dict[str, Any]]] = [(fmt.ProtocolDoc, doc)]
    items = {
        "atoms": fmt.AtomDecl,
        "definitions": fmt.Definition,
        "constraints": fmt.Constraint,
        "decisions": fmt.Decision,
        "requirements": fmt.Requirement,
        "grounding": fmt.GroundPair,
    }
    exprs: list[Any] = [doc.get("decision")]
    for key, cls in items.items():
        for item in doc.get(key, ()):
            out.append((cls, item))
            exprs += [item.get(k) for k in ("expr", "addressed", "judge", "context")]
    while exprs:
        e = exprs.pop()
        if isinstance(e, dict):
            out.append((fmt.Expr, e))
            exprs += e.get("args", ())
    return out


@pytest.mark.parametrize(("name", "doc"), WRITTEN, ids=[n for n, _ in WRITTEN])
def test_what_is_written_is_the_structs_key_for_key(name: str, doc: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(fmt.json_schema())
    assert not list(validator.iter_errors(doc)), name
    msgspec.convert(doc, fmt.ProtocolDoc)  # raises if a key or a type is not the format's
    for cls, obj in _objects(doc):
        order = list(cls.__struct_encode_fields__)
        keys = list(obj)
        assert keys == sorted(keys, key=order.index), (cls.__name__, keys)


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda d: d["atoms"][0].update(role="step"), "role"),
        (lambda d: d["atoms"][1].update(name=3), "type"),
        (lambda d: d.pop("atoms"), "missing"),
        (lambda d: d.update(schema="unmask.protocol/2"), "schema"),
        (lambda d: d.update(decision={"op": "nand", "args": []}), "expr"),
        (lambda d: d.update(decision={"op": "atleast", "k": -1, "args": []}), "expr"),
        (lambda d: d.update(decision={"atom": "j", "sign": "-"}), "expr"),
        (
            lambda d: d["grounding"].append({"judge": "j", "context": "c", "direction": "<~"}),
            "type",
        ),
        (lambda d: d.update(first_match="yes"), "type"),
    ],
)
def test_what_the_schema_refuses_the_reader_refuses(change: Any, code: str) -> None:
    doc = {
        "schema": fmt.PROTOCOL_SCHEMA,
        "name": "p",
        "atoms": [{"name": "j", "role": "judge"}, {"name": "c", "role": "context"}],
        "decision": {"atom": "j"},
        "grounding": [],
    }
    protocol_from_json(doc)
    assert not list(jsonschema.Draft202012Validator(fmt.json_schema()).iter_errors(doc))
    change(doc)
    assert list(jsonschema.Draft202012Validator(fmt.json_schema()).iter_errors(doc))
    with pytest.raises(UnmaskError) as info:
        protocol_from_json(doc)
    assert [d.code for d in info.value.diagnostics] == [code]


def _doc(decision: Any) -> dict[str, Any]:
    return {
        "schema": fmt.PROTOCOL_SCHEMA,
        "name": "p",
        "atoms": [{"name": "j", "role": "judge"}],
        "decision": decision,
    }


def _errors(doc: Any, limits: Limits = DEFAULT) -> list[tuple[str, str | None, str]]:
    with pytest.raises(UnmaskError) as info:
        protocol_from_json(doc, limits=limits)
    return [(d.code, d.path, d.message) for d in info.value.diagnostics]


def _deep(n: int, leaf: Any) -> Any:
    e = leaf
    for _ in range(n):
        e = {"op": "not", "args": [e]}
    return e


def test_an_expression_too_deep_for_msgspec_is_read_node_by_node() -> None:
    deep = Limits(max_expr_depth=100_000)
    assert protocol_from_json(_doc(_deep(5000, {"atom": "j"})), limits=deep).decision == (
        ir.Atom("j")
    )
    # a problem at the bottom keeps its path and words
    path = "protocol.decision" + ".args[0]" * 5000
    assert _errors(_doc(_deep(5000, {"atom": 3})), deep) == [
        ("type", f"{path}.atom", "expected an atom name (a string), found a number")
    ]
    assert _errors(_doc(_deep(5000, {"atom": "j", "sign": 1})), deep) == [
        ("expr", f"{path}.sign", "unexpected key `sign` in an expression")
    ]
    # under the default bound: one diagnostic, at the first node past it
    (got,) = _errors(_doc(_deep(5000, {"atom": "j"})))
    assert got[0] == "limit" and got[1].count("args[0]") == Limits().max_expr_depth


def test_a_key_msgspec_cannot_compare_is_still_an_unexpected_key() -> None:
    bad = "sign\udc80"
    got = _errors(_doc({"op": "not", "args": [{"atom": "j", bad: 1}]}))
    assert got == [
        (
            "expr",
            f'protocol.decision.args[0]["{bad}"]',
            "unexpected key `sign\\udc80` in an expression",
        )
    ]


def test_a_lone_surrogate_in_a_value_is_reported_in_the_usual_words() -> None:
    doc = _doc({"atom": "j"})
    doc["atoms"][0]["role"] = "judge\udc80"
    assert _errors(doc) == [
        ("role", "protocol.atoms[0].role", "unknown role `judge\\udc80`"),
    ]


def test_an_atom_with_a_wrong_role_or_description_still_declares_its_name() -> None:
    doc = _doc({"op": "and", "args": [{"atom": "j"}, {"atom": "k"}]})
    doc["atoms"].append({"name": "k", "role": "procedure", "description": 7})
    # `k` is used by the decision, but only its description is reported
    assert _errors(doc) == [
        ("type", "protocol.atoms[1].description", "expected a string, found a number")
    ]


def test_each_item_reports_its_first_problem_and_every_item_is_read() -> None:
    doc = _doc({"atom": "j"})
    doc["constraints"] = [
        {"name": "a", "expr": {"const": "yes"}},
        "not a constraint",
        {"name": "c", "expr": {"op": "or", "args": {"atom": "j"}}},
        {"name": "d"},
    ]
    assert _errors(doc) == [
        (
            "type",
            "protocol.constraints[0].expr.const",
            "expected `true` or `false`, found a string",
        ),
        ("type", "protocol.constraints[1]", "expected a constraint object, found a string"),
        (
            "type",
            "protocol.constraints[2].expr.args",
            "expected an array of expressions, found an object",
        ),
        ("missing", "protocol.constraints[3]", "missing `expr`"),
    ]


def test_unknown_keys_outside_an_expression_are_warnings_and_the_protocol_reads() -> None:
    from unmask.ir.json_reader import IrReader
    from unmask.plumbing.jsonreader import JsonReader

    doc = _doc({"atom": "j"})
    doc["colour"] = "blue"
    doc["atoms"][0]["colour"] = "red"
    r = JsonReader(None, Limits())
    p = IrReader(r).protocol(doc, "protocol")
    assert p is not None and not r.diags
    assert [(w.code, w.path) for w in r.warnings] == [
        ("unknown-key", "protocol.colour"),
        ("unknown-key", "protocol.atoms[0].colour"),
    ]
