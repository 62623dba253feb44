"""The headless adapter schema format: the typed decode and the published JSON Schema agree, and a bad
schema file is one error naming the file and the field."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator

from waza.adapters import headless_format
from waza.adapters.headless_schema import load_schema, shipped
from waza.protocol.codec import RecordError
from waza.protocol.errors import ConfigError

from .conftest import COMPAT, ROOT, run_waza

#: Values put in place of each key's value: wrong types, empty strings and collections, values no enum holds.
REPLACEMENTS: list[Any] = [None, True, 0, -1, 1.5, "", "x", [], [{}], {}, {"unknownKey": 1}]


#: Two schemas using every key the format has between them (the shipped ones leave some out).
EVERY_KEY: list[dict[str, Any]] = [
    {
        "$schema": "https://waza.dev/schemas/adapter-headless.json",
        "version": 1,
        "name": "every-key",
        "description": "d",
        "testedWith": {"package": "p", "version": "1"},
        "command": ["x"],
        "sessionMode": "iterative",
        "timeout": 5,
        "prompt": {"flag": "", "stdin": True, "stdinFormat": "json"},
        "output": {"flag": "--json", "value": ""},
        "autoApprove": ["-y"],
        "cwdFlag": "-C",
        "outputEvents": [
            {"match": [{"path": "$.a"}, {"path": "$.b", "value": 1.5}], "each": "$.c[*]", "emitAs": "message", "chunks": True},
            {"match": {"path": "$.u", "value": None}, "emitAs": "usage", "extract": {"inputTokens": "$.i", "cost": "$.c"}},
        ],
        "result": {
            "matchPath": "$.t",
            "matchValue": "done",
            "contentPath": "$.r",
            "stopReasonPath": "$.s",
            "stopReasons": {"stop_sequence": "end_turn"},
            "isError": {"path": "$.e", "value": True},
            "errorMessagePath": "$.m",
        },
        "historyTemplate": {"system": "s", "turnFormat": "{{input}} {{output}}"},
    },
    {
        "version": 2,
        "name": "passthrough",
        "command": ["x"],
        "sessionMode": "stream",
        "resume": {"flag": "--resume", "sessionIdPath": "$.id"},
        "prompt": {"flag": "-p"},
        "output": {"flag": "", "value": ""},
        "outputMode": "passthrough",
        "passthroughTypeMap": {"typeField": "kind", "typeValues": {"reasoning": "thought"}},
        "result": {"matchPath": "$.t", "matchValue": 0},
    },
]


def _bases() -> list[tuple[str, Any]]:
    """Every shipped schema, acp-harness's own (when the reference data is present) and EVERY_KEY, parsed."""
    files = [*shipped().values(), *sorted((COMPAT / "acp-harness-schemas").glob("*.json"))]
    return [(Path(f).name, orjson.loads(Path(f).read_bytes())) for f in files] + [(s["name"], s) for s in EVERY_KEY]


def _altered(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """``value`` with one change at a time: an unknown key added, a key removed, a value replaced, a list emptied."""
    if isinstance(value, dict):
        yield (*path, "+unknownKey"), {**value, "unknownKey": 1}
        for key in value:
            yield (*path, f"-{key}"), {k: v for k, v in value.items() if k != key}
            for bad in REPLACEMENTS:
                yield (*path, key, repr(bad)), {**value, key: bad}
            for where, inner in _altered(value[key], (*path, key)):
                yield where, {**value, key: inner}
    elif isinstance(value, list):
        yield (*path, "[]"), []
        for i, item in enumerate(value):
            for bad in REPLACEMENTS:
                yield (*path, i, repr(bad)), [*value[:i], bad, *value[i + 1 :]]
            for where, inner in _altered(item, (*path, i)):
                yield where, [*value[:i], inner, *value[i + 1 :]]


def _decodes(value: Any) -> bool:
    try:
        headless_format.AdapterSchema.from_json(orjson.dumps(value))
    except RecordError:
        return False
    return True


def test_the_published_schema_is_generated_from_the_format_classes() -> None:
    """No drift: schemas/adapter-headless.json is exactly what the classes generate, and a valid schema."""
    shipped_file = (ROOT / "schemas" / "adapter-headless.json").read_bytes()
    assert shipped_file == headless_format.render(), (
        "run: python -m waza.adapters.headless_format > schemas/adapter-headless.json"
    )
    Draft202012Validator.check_schema(orjson.loads(shipped_file))


@pytest.mark.slow
def test_the_published_schema_and_the_typed_decode_give_the_same_verdicts() -> None:
    """Other tools reading schemas/adapter-headless.json accept exactly the files waza's decode accepts:
    every shipped schema, and each of them altered in every place (thousands of documents: missing and
    unknown keys, wrong types, empty strings and lists, values outside an enum, a flag beside stdin)."""
    validator = Draft202012Validator(orjson.loads((ROOT / "schemas" / "adapter-headless.json").read_bytes()))
    checked, rejected = 0, 0
    for name, base in _bases():
        assert validator.is_valid(base) and _decodes(base), name
        for where, value in _altered(base):
            verdict = validator.is_valid(value)
            assert _decodes(value) == verdict, (name, where, verdict)
            checked += 1
            rejected += not verdict
    assert checked > 2_000 and 0 < rejected < checked


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda d: d.pop("name"), "name", "is required"),
        (lambda d: d["result"].pop("matchValue"), "result.matchValue", "is required"),
        (
            lambda d: d.update(sessionMode="streaming"),
            "sessionMode",
            "'streaming' is not one of the allowed values (iterative, stream)",
        ),
        (
            lambda d: d["outputEvents"][1].update(emitAs="msg"),
            "outputEvents.1.emitAs",
            "(message, plan, thought, tool_call, usage)",
        ),
        (lambda d: d["outputEvents"][1]["extract"].update(bogus="$.x"), "outputEvents.1.extract.bogus", "is not a known field"),
        (lambda d: d.update(name=""), "name", "must be a string of length at least 1"),
        (lambda d: d.update(command="claude"), "command", "must be an array, got string"),
        (lambda d: d["outputEvents"][0].update(match=[]), "outputEvents.0.match", "must be an array of length at least 1"),
        (lambda d: d.update(timeout=0), "timeout", "must be a number greater than 0"),
        (lambda d: d.update(prompt={"flag": "-p", "stdin": True}), "prompt", "the prompt goes after the flag or to stdin"),
        (lambda d: d["mcpConfig"].update(env="X"), "mcpConfig", "mcpConfig takes flag or env, one of the two"),
        (lambda d: d.update(mcpConfig={"style": "json"}), "mcpConfig", "mcpConfig takes flag or env, one of the two"),
        (lambda d: d.update(mcpConfig={"env": "X", "style": "toml"}), "mcpConfig", "style toml is one value per server"),
        (lambda d: d["mcpConfig"].update(style="yaml"), "mcpConfig.style", "(json, opencode, toml)"),
        (
            lambda d: d["result"].update(stopReasonPath="$.s", stopReasons={"stop_sequence": "done"}),
            "result.stopReasons",
            "'done' is not one of the allowed values (cancelled, end_turn,",
        ),
    ],
)
def test_a_bad_schema_file_is_one_error_naming_the_file_and_the_field(
    tmp_path: Path, change: Any, field: str, message: str
) -> None:
    schema = orjson.loads(shipped()["claude-code"].read_bytes())
    change(schema)
    path = tmp_path / "my-cli.json"
    path.write_bytes(orjson.dumps(schema))
    with pytest.raises(ConfigError) as caught:
        load_schema(path)
    assert (caught.value.source, caught.value.field) == (str(path), field)
    assert message in caught.value.message


def test_adapters_check_reports_malformed_json_and_shape_errors_by_file_line_and_field(tmp_path: Path) -> None:
    torn = tmp_path / "torn.json"
    torn.write_bytes(b'{"version": 1,\n "name": }')
    done = run_waza("adapters", "check", torn)
    assert done.returncode == 2
    # One line naming the file, the line and the column; the words between are orjson's, which vary by version.
    [line] = done.stderr.decode().splitlines()
    assert line.startswith(f"waza: {torn}: invalid JSON (unexpected character") and line.endswith(" at line 2, column 10)")
    listed = tmp_path / "list.json"
    listed.write_bytes(b"[]")
    done = run_waza("adapters", "check", listed)
    assert done.returncode == 2 and done.stderr.decode() == f"waza: {listed}: field '(top level)': must be an object, got array\n"
    version = orjson.loads(shipped()["codex"].read_bytes())
    version["version"] = 3
    (tmp_path / "v3.json").write_bytes(orjson.dumps(version))
    done = run_waza("adapters", "check", tmp_path / "v3.json")
    assert done.returncode == 2
    assert done.stderr.decode().endswith("v3.json: field 'version': 3 is not one of the allowed values (1, 2)\n")
