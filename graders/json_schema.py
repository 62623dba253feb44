"""json_schema: the output must be JSON that validates against a JSON Schema.

The schema is given inline (``schema``) or as a file (``schema_file``,
relative to ``base_dir`` when set, else to the directory waza runs in); an
invalid schema or a missing file is a config error. ``extract`` says where the
JSON is: ``output`` (default) the whole output, stripped; ``code_block`` the
first fenced code block (```json or bare ```); ``auto`` the whole output when
it parses, else the first fenced block that does. Pass = parses and validates
(score 1), otherwise fail (score 0) with the parse error or the first
validation errors (path: message) in the reasoning and details.

``extract_json: true`` (the original's key, instead of ``extract``) finds
exactly one JSON object or array in the output: the output itself, the fenced
code blocks that hold one, else the objects and arrays written in the prose;
none, or more than one, fails the grade.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from waza.protocol.errors import ConfigError
from waza.protocol.records import GraderRequest, GraderResult

from ._example import Example
from ._paths import config_file

SUMMARY = "Output must be JSON valid against a JSON Schema (inline or file; optionally from a fenced code block)."

EXAMPLE = Example(
    config={
        "schema": {"type": "object", "required": ["name", "stars"], "properties": {"stars": {"type": "integer"}}},
        "extract": "auto",
    },
    request={"output": 'Here you go:\n```json\n{"name": "waza", "stars": 5}\n```'},
    result={"pass": True, "score": 1.0},
)

FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)```", re.DOTALL)
SHOWN_ERRORS = 5


def _schema(config: dict[str, Any]) -> dict[str, Any] | bool:
    """The config's schema, checked: an object, or true/false (a boolean schema accepts all or nothing)."""
    if ("schema" in config) == ("schema_file" in config):
        raise ConfigError("grader 'json_schema' config: give exactly one of schema, schema_file")
    if "schema" in config:
        schema, where = config["schema"], "schema"
    else:
        path = config_file(config, "base_dir", config["schema_file"], "schema_file", contained=False)
        try:
            schema = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as exc:
            raise ConfigError(f"schema_file {str(path)!r} is not valid JSON: {exc}") from None
        where = str(path)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ConfigError(f"{where}: not a valid JSON Schema: {exc.message}") from None
    checked: dict[str, Any] | bool = schema
    return checked


def check_config(config: dict[str, Any]) -> None:
    _schema(config)
    if config.get("extract_json") and "extract" in config:
        raise ConfigError("grader 'json_schema' config: give extract or extract_json, not both")


def _values_in(text: str) -> list[Any]:
    """The JSON objects and arrays written one after another in ``text`` (a value inside another is not counted)."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    at = 0
    while True:
        starts = [i for i in (text.find("{", at), text.find("[", at)) if i >= 0]
        if not starts:
            return found
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            at = start + 1
            continue
        found.append(value)
        at = end


def extract_one(output: str) -> tuple[Any, str]:
    """The one JSON object or array of ``output`` and "" , or None and why there is not exactly one."""
    whole = _values_in(output.strip())
    if len(whole) == 1 and output.strip().startswith(("{", "[")) and output.strip().endswith(("}", "]")):
        return whole[0], ""
    blocks = [v for m in FENCE.finditer(output) for v in _values_in(m.group(2))]
    found = blocks or whole
    if len(found) == 1:
        return found[0], ""
    return (
        None,
        "the output holds no JSON object or array" if not found else f"the output holds {len(found)} JSON values, not one",
    )


def candidates(output: str, extract: str) -> list[str]:
    """The texts to try parsing, in order, for an ``extract`` mode."""
    blocks = [m.group(2) for m in FENCE.finditer(output)]
    if extract == "output":
        return [output.strip()]
    if extract == "code_block":
        return blocks[:1]
    return [output.strip(), *blocks]


def grade(request: GraderRequest) -> GraderResult:
    schema = _schema(request.config)
    if request.config.get("extract_json"):
        extracted, why = extract_one(request.output)
        if why:
            return GraderResult(passed=False, score=0.0, reasoning=why)
        return _validated(schema, extracted)
    extract = request.config.get("extract", "output")
    texts = candidates(request.output, extract)
    if not texts:
        return GraderResult(passed=False, score=0.0, reasoning="the output has no fenced code block")
    value: Any = None
    problem = ""
    for text in texts:
        try:
            value = orjson.loads(text)
            problem = ""
            break
        except orjson.JSONDecodeError as exc:
            problem = problem or f"not valid JSON: {exc}"
    if problem:
        return GraderResult(passed=False, score=0.0, reasoning=f"output is {problem}")
    return _validated(schema, value)


def _validated(schema: dict[str, Any] | bool, value: Any) -> GraderResult:
    errors = sorted(Draft202012Validator(schema).iter_errors(value), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{'.'.join(map(str, e.absolute_path)) or '(top level)'}: {e.message}" for e in errors]
        return GraderResult(
            passed=False,
            score=0.0,
            reasoning=f"JSON does not match the schema: {'; '.join(lines[:SHOWN_ERRORS])}",
            details={"errors": lines},
        )
    return GraderResult(passed=True, score=1.0, reasoning="output is JSON valid against the schema")


def main() -> None:
    from ._standalone import main as run

    run(sys.modules[__name__], "json_schema")


if __name__ == "__main__":
    main()
