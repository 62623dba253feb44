"""json_schema: the output must be JSON that validates against a JSON Schema.

The schema is given inline (``schema``) or as a file (``schema_file``,
relative to ``base_dir`` when set, else to the directory waza runs in); an
invalid schema or a missing file is a config error. ``extract`` says where the
JSON is: ``output`` (default) the whole output, stripped; ``code_block`` the
first fenced code block (```json or bare ```); ``auto`` the whole output when
it parses, else the first fenced block that does. Pass = parses and validates
(score 1), otherwise fail (score 0) with the parse error or the first
validation errors (path: message) in the reasoning and details.
"""

from __future__ import annotations

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
