"""Checking suite files against JSON Schemas, with the error at file:line.

The schemas (``schemas/eval-suite.json``, ``eval-task.json``,
``trigger-tests.json``, and each grader's ``grader-NAME.json``) are the
contract editors and other tools can use; this module makes their verdict
readable: the first problem in file order, the line of the offending key (an
unknown key points at itself, not its parent), and, for a value that fits none
of several shapes, the reason of the closest one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jsonschema.exceptions import ValidationError, best_match

from waza.protocol import schemas
from waza.protocol.errors import ConfigError
from waza.runner.suites.located import Located, PathKey


def check(doc: Located, schema: str) -> None:
    """Raise a ConfigError for the first violation of ``schema`` in the whole document."""
    problem = first_problem(doc, schema, doc.value, lambda path: path)
    if problem is not None:
        raise problem


def first_problem(
    doc: Located, schema: str, value: Any, place: Callable[[PathKey], PathKey], prefix: str = ""
) -> ConfigError | None:
    """The earliest violation of ``schema`` by ``value`` (a part of ``doc``; ``place`` maps its paths into ``doc``)."""
    found = [describe(err) for err in schemas.validator(schema).iter_errors(value)]
    if not found:
        return None
    placed = [(place(path), message) for path, message in found]
    path, message = min(placed, key=lambda pm: (doc.line(pm[0]), len(pm[0])))
    return doc.error(path, f"{prefix}: {message}" if prefix else message)


def describe(err: ValidationError) -> tuple[PathKey, str]:
    """Where (relative to the validated value) and what, in words a suite author can act on."""
    if err.context:  # oneOf / anyOf: explain with the branch that came closest
        return describe(best_match(err.context))
    path: PathKey = tuple(err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        known = err.schema.get("properties", {}) if isinstance(err.schema, dict) else {}
        extra = [k for k in err.instance if k not in known]
        if extra:
            allowed = ", ".join(sorted(known)) or "none"
            return (*path, extra[0]), f"unknown key {extra[0]!r} (allowed here: {allowed})"
    if err.validator == "type":
        wanted = err.validator_value if isinstance(err.validator_value, str) else " or ".join(err.validator_value)
        return path, f"must be {_article(wanted)}, got {_kind(err.instance)}"
    if err.validator == "enum":
        allowed = ", ".join(map(repr, err.validator_value))
        return path, f"must be one of {allowed}, got {err.instance!r}"
    return path, err.message


def _article(kind: str) -> str:
    return {"object": "a mapping", "array": "a list"}.get(kind, f"a {kind}" if kind[0] not in "aeiou" else f"an {kind}")


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (an empty value)"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"
