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

from waza.protocol import schemas
from waza.protocol.errors import ConfigError
from waza.protocol.schema_errors import explain
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
    found = [explain(err) for err in schemas.validator(schema).iter_errors(value)]
    if not found:
        return None
    placed = [(place(path), message) for path, message in found]
    path, message = min(placed, key=lambda pm: (doc.line(pm[0]), len(pm[0])))
    return doc.error(path, f"{prefix}: {message}" if prefix else message)
