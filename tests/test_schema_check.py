"""The quick schema check (protocol/schema_check.py) agrees with jsonschema on every shipped schema.

The quick check decides whether a headless adapter schema or a grader config is
valid without loading jsonschema; a wrong "valid" would let a bad file through.
So it is held to jsonschema's verdict on real documents (the shipped adapter
schemas, the built-in graders' worked examples) and on random mutations of them.
"""

from __future__ import annotations

import functools
import importlib
from copy import deepcopy
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from waza.adapters.headless_schema import shipped
from waza.protocol import schemas
from waza.protocol.schema_check import conforms

from .conftest import run_waza, write_jsonl

#: Leaves chosen where JSON Schema and Python disagree (true is not 1, 1.0 is 1) or the schemas draw lines.
SCALARS = [None, True, False, 0, 1, 2, -1, 1.0, 2.0, 0.5, 1e3, "", "x", "stream", "message", "$.type", "i", "in_order_match"]
TRICKY = [None, True, 0, 1, 1.0, 0.5, "", "x"]
JSON = st.recursive(
    st.sampled_from(SCALARS) | st.integers() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6) | st.sampled_from(["flag", "type"]), inner, max_size=3)
    ),
    max_leaves=6,
)


def seeds() -> list[tuple[str, Any]]:
    """(schema name, a valid document) pairs from waza's own files."""
    found = [("adapter-headless", orjson.loads(p.read_bytes())) for p in shipped().values()]
    for name in schemas.schema_files():
        if name.startswith("grader-"):
            example = getattr(importlib.import_module(f"waza.graders.{name[len('grader-') :]}"), "EXAMPLE", None)
            if example is not None:
                found.append((name, example.config))
    return found


SEEDS = seeds()


@functools.cache
def validator(name: str) -> Any:
    return Draft202012Validator(schemas.load(name))


def jsonschema_says(name: str, value: Any) -> bool:
    return bool(validator(name).is_valid(value))


@pytest.mark.parametrize(("name", "document"), SEEDS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SEEDS)])
def test_a_valid_document_is_decided_valid_without_jsonschema(name: str, document: Any) -> None:
    assert jsonschema_says(name, document)
    assert conforms(schemas.load(name), document) is True


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths(v, (*prefix, i))
    return out


def at(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A copy of ``document`` with the value at ``path`` replaced."""
    copy = deepcopy(document)
    parent = copy
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return copy


@pytest.mark.parametrize(("name", "document"), SEEDS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(SEEDS)])
def test_every_value_swapped_for_a_tricky_scalar_gets_jsonschemas_verdict(name: str, document: Any) -> None:
    """Each place of a valid document in turn becomes null, true, 0, 1, 1.0, 0.5, "" and "x" (where Python and JSON Schema differ)."""
    for path in paths(document)[1:]:
        for scalar in TRICKY:
            changed = at(document, path, scalar)
            assert conforms(schemas.load(name), changed) == jsonschema_says(name, changed), (path, scalar)


def mutate(document: Any, data: st.DataObject) -> Any:
    """A copy with one place changed: replaced by random JSON, removed, given a new key, or its list item doubled."""
    copy = deepcopy(document)
    path = data.draw(st.sampled_from(paths(copy)))
    if not path:
        return data.draw(JSON)
    parent = copy
    for step in path[:-1]:
        parent = parent[step]
    key = path[-1]
    action = data.draw(st.sampled_from(["replace", "remove", "add", "double"]))
    if action == "replace":
        parent[key] = data.draw(JSON)
    elif action == "remove":
        del parent[key]
    elif action == "add" and isinstance(parent, dict):
        parent[data.draw(st.text(max_size=8))] = data.draw(JSON)
    elif isinstance(parent, list):
        parent.append(parent[key])
    return copy


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_mutated_document_gets_jsonschemas_verdict(data: st.DataObject) -> None:
    name, document = data.draw(st.sampled_from(SEEDS))
    for _ in range(data.draw(st.integers(1, 3))):
        document = mutate(document, data)
    verdict = conforms(schemas.load(name), document)
    assert verdict is not None
    assert verdict == jsonschema_says(name, document)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(schemas.schema_files())), value=JSON)
def test_any_value_gets_jsonschemas_verdict_on_every_shipped_schema(name: str, value: Any) -> None:
    verdict = conforms(schemas.load(name), value)
    assert verdict is not None
    assert verdict == jsonschema_says(name, value)


#: (schema, value) at the edge of each keyword, where a near miss would be easy.
EDGES = [
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1),
    ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, 1),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, None),
    ({"allOf": [{"type": "integer"}, {"minimum": 2}]}, 1),
    ({"not": {"const": True}}, 1),
    ({"const": [1, {"a": False}]}, [1.0, {"a": 0}]),
    ({"const": [1, {"a": False}]}, [1.0, {"a": False}]),
    ({"enum": [1, "1"]}, True),
    ({"enum": [0]}, False),
    ({"enum": [2]}, 2.0),
    ({"type": "integer"}, 2.0),
    ({"type": "integer"}, 2.5),
    ({"type": "integer"}, True),
    ({"type": ["string", "null"]}, None),
    ({"exclusiveMinimum": 0}, 0),
    ({"exclusiveMaximum": 1}, 1),
    ({"minimum": 0, "maximum": 1}, 1.0),
    ({"minimum": 0}, "-1"),
    ({"minLength": 2}, "é"),
    ({"maxLength": 1}, "ab"),
    ({"pattern": "b"}, "abc"),
    ({"pattern": "^b"}, "abc"),
    ({"minItems": 1, "maxItems": 1}, []),
    ({"uniqueItems": True}, [1, True]),
    ({"uniqueItems": True}, [1, 1.0]),
    ({"uniqueItems": True}, [{"a": 1}, {"a": 1}]),
    ({"required": ["a"], "minProperties": 2}, {"a": 1}),
    ({"maxProperties": 1}, {"a": 1, "b": 2}),
    ({"properties": {"a": {"type": "string"}}, "additionalProperties": False}, {"a": "x", "b": 1}),
    ({"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}}, {"a": "x", "b": 1}),
    ({"items": {"$ref": "#/$defs/n"}, "$defs": {"n": {"type": "number"}}}, [1, "x"]),
    ({"items": {"$ref": "#"}, "type": "array"}, [[], [[]], [1]]),
    (True, 1),
    ({"not": True}, 1),
]


@pytest.mark.parametrize(("schema", "value"), EDGES)
def test_each_keywords_edge_gets_jsonschemas_verdict(schema: Any, value: Any) -> None:
    assert conforms(schema, value) == Draft202012Validator(schema).is_valid(value)


def test_a_keyword_it_does_not_know_is_left_to_jsonschema() -> None:
    assert conforms({"type": "object", "patternProperties": {"^x": {"type": "string"}}}, {"x": 1}) is None
    assert conforms({"if": {"type": "string"}, "then": {"minLength": 2}}, "a") is None
    assert conforms({"type": "object"}, {"a": (1, 2)}) is True  # not looked into: no keyword reads it
    assert conforms({"type": "array"}, (1, 2)) is None  # not a JSON parser's value


def test_a_bad_headless_schema_is_still_worded_by_jsonschema(tmp_path: Path) -> None:
    """The quick check only says yes or no; the user reads jsonschema's message, naming file and field."""
    schema = orjson.loads(next(iter(shipped().values())).read_bytes())
    bad = tmp_path / "bad.json"
    bad.write_bytes(orjson.dumps({**schema, "sessionMode": "streaming"}))
    prompts = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "input": "hi"}])
    done = run_waza("capture", prompts, "--adapter", "headless", "--schema", bad, "-o", tmp_path / "out.jsonl")
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        f"waza: {bad}: field 'sessionMode': 'streaming' is not one of ['stream', 'iterative']"
    ]
