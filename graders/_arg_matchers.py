"""Matchers on one tool call's arguments, in the original waza's ``args`` form (tool_calls, tool_constraint).

``args`` maps an argument name to exactly one matcher: ``equals`` (the JSON
values are equal), ``regex`` (searched in the value's text: a string as it is,
anything else as compact JSON), ``contains`` (a substring of that text),
``range`` (a number within ``gte``/``lte``/``gt``/``lt``) or ``json_schema``
(the value validates). Every matcher of an ``args`` map must hold on the
*same* call, and an argument the call does not have fails its matcher, as in
the original. Regexes here are case-sensitive (the original's matchers are);
only tool names are matched case-insensitively.
"""

from __future__ import annotations

import operator
import re
from typing import Any

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from waza.protocol.errors import ConfigError

from ._patterns import compile_one

__all__ = ["check_args", "failures"]

KINDS = ("equals", "regex", "contains", "range", "json_schema")
BOUNDS = ("gte", "lte", "gt", "lt")


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def check_args(args: dict[str, Any], where: str) -> None:
    """ConfigError unless every matcher of ``args`` has exactly one known kind and a usable value."""
    for name, matcher in args.items():
        here = f"{where}.{name}"
        if not isinstance(matcher, dict) or len(matcher) != 1 or next(iter(matcher)) not in KINDS:
            raise ConfigError(f"{here}: give exactly one of {', '.join(KINDS)}")
        kind, value = next(iter(matcher.items()))
        if kind == "regex":
            compile_one(value, f"{here}.regex")
        elif kind == "range" and (not isinstance(value, dict) or not any(b in value for b in BOUNDS)):
            raise ConfigError(f"{here}.range: give at least one of {', '.join(BOUNDS)}")
        elif kind == "json_schema":
            try:
                Draft202012Validator.check_schema(value)
            except SchemaError as exc:
                raise ConfigError(f"{here}.json_schema: not a valid JSON Schema: {exc.message}") from None


def _one(kind: str, expected: Any, value: Any) -> str | None:
    """None when ``value`` satisfies the matcher, else why not."""
    if kind == "equals":
        return None if _equal(expected, value) else f"expected {_text(expected)!r}, got {_text(value)!r}"
    if kind == "regex":
        return None if re.search(expected, _text(value)) else f"regex {expected!r} did not match {_text(value)!r}"
    if kind == "contains":
        return None if expected in _text(value) else f"expected substring {expected!r}, got {_text(value)!r}"
    if kind == "range":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"range: value {_text(value)!r} is not numeric"
        for bound, holds in (("gte", operator.ge), ("gt", operator.gt), ("lte", operator.le), ("lt", operator.lt)):
            if bound in expected and not holds(value, expected[bound]):
                return f"range: {value} is outside {bound} {expected[bound]}"
        return None
    error = next(iter(Draft202012Validator(expected).iter_errors(value)), None)
    return None if error is None else f"json_schema: {error.message}"


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 and 1.0 are the same number, but true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def failures(args: dict[str, Any], call_input: Any) -> list[str]:
    """Why each matcher of ``args`` fails on a call whose input is ``call_input`` (empty: all hold)."""
    given = call_input if isinstance(call_input, dict) else {}
    out = []
    for name in sorted(args):
        if name not in given:
            out.append(f"argument {name!r}: not present on the call")
            continue
        kind, expected = next(iter(args[name].items()))
        why = _one(kind, expected, given[name])
        if why is not None:
            out.append(f"argument {name!r}: {why}")
    return out
