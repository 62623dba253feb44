"""A quick yes/no check of a value against one of waza's own JSON Schemas, without jsonschema.

Importing jsonschema and building a validator costs more than a whole
one-prompt run (about 40 ms: attrs, referencing, the format checkers), and
nearly every check waza makes on a run's hot path (a headless adapter schema, a
built-in grader's config) passes. So a value is first checked here, by a small
interpreter of the keywords the shipped schemas use; only a value found wrong,
or a schema using a keyword this module does not know, goes to jsonschema,
which words the error.

The answer is exact or absent: True or False only when every keyword met is one
implemented here, with jsonschema's meaning (``1`` is not ``true``, ``1.0`` is
``1``, ``integer`` accepts ``2.0``, ``pattern`` is a search); None otherwise.
tests/test_schema_check.py holds it to jsonschema's verdict on every shipped
schema, over valid documents and random mutations of them.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

__all__ = ["conforms"]

#: Keywords that only describe: they never make a value invalid (``$defs`` is read by ``$ref``).
_ANNOTATIONS = frozenset({"$schema", "$comment", "title", "description", "default", "examples", "$defs", "deprecated"})


class _Unknown(Exception):
    """The schema uses something this module does not interpret, or the value is not plain JSON."""


def conforms(schema: dict[str, Any] | bool, value: Any) -> bool | None:
    """Whether ``value`` is valid against ``schema`` (refs resolve within it); None when undecided."""
    try:
        return _valid(schema, value, schema if isinstance(schema, dict) else {})
    except (_Unknown, RecursionError):
        return None


def _valid(schema: Any, value: Any, root: dict[str, Any]) -> bool:
    if schema is True:
        return True
    if schema is False:
        return False
    if not isinstance(schema, dict):
        raise _Unknown
    for key, rule in schema.items():
        check = _CHECKS.get(key)
        if check is None:
            if key in _ANNOTATIONS:
                continue
            raise _Unknown
        if not check(rule, value, root, schema):
            return False
    return True


def _kind(value: Any) -> str:
    # Exact types: a value from a JSON parser is one of these; anything else is not decided here.
    kind = _KINDS.get(type(value))
    if kind is None:
        raise _Unknown
    return kind


_KINDS: dict[type, str] = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
_KINDS[type(None)] = "null"


def _is_type(value: Any, name: str) -> bool:
    kind = _kind(value)
    if name == "integer":
        return kind == "number" and (type(value) is int or (math.isfinite(value) and float(value).is_integer()))
    if name not in ("object", "array", "string", "boolean", "number", "null"):
        raise _Unknown
    return kind == name


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: booleans are not numbers, 1 equals 1.0, containers compare member by member."""
    ka, kb = _kind(a), _kind(b)
    if ka != kb:
        return False
    if ka == "array":
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if ka == "object":
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _type(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    names = rule if isinstance(rule, list) else [rule]
    return any(_is_type(value, name) for name in names)


def _enum(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    return any(_equal(value, option) for option in rule)


def _const(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    return _equal(value, rule)


def _ref(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    if rule == "#":
        return _valid(root, value, root)
    prefix = "#/$defs/"
    if not isinstance(rule, str) or not rule.startswith(prefix) or "/" in rule[len(prefix) :] or "~" in rule:
        raise _Unknown
    target = root.get("$defs", {}).get(rule[len(prefix) :])
    if target is None:
        raise _Unknown
    return _valid(target, value, root)


def _any_of(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    return any(_valid(s, value, root) for s in rule)


def _one_of(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    return sum(_valid(s, value, root) for s in rule) == 1


def _all_of(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    return all(_valid(s, value, root) for s in rule)


def _not(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    return not _valid(rule, value, root)


def _properties(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    if _kind(value) != "object":
        return True
    return all(_valid(rule[k], v, root) for k, v in value.items() if k in rule)


def _additional(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    if _kind(value) != "object":
        return True
    if "patternProperties" in schema:
        raise _Unknown
    named = schema.get("properties", {})
    return all(_valid(rule, v, root) for k, v in value.items() if k not in named)


def _required(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    return _kind(value) != "object" or all(k in value for k in rule)


def _min_properties(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    return _kind(value) != "object" or len(value) >= rule


def _max_properties(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    return _kind(value) != "object" or len(value) <= rule


def _items(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    if "prefixItems" in schema:
        raise _Unknown
    return _kind(value) != "array" or all(_valid(rule, item, root) for item in value)


def _min_items(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    return _kind(value) != "array" or len(value) >= rule


def _max_items(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    return _kind(value) != "array" or len(value) <= rule


def _unique(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    if not rule or _kind(value) != "array":
        return True
    return not any(_equal(value[i], value[j]) for i in range(len(value)) for j in range(i + 1, len(value)))


def _min_length(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    return _kind(value) != "string" or len(value) >= rule


def _max_length(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    return _kind(value) != "string" or len(value) <= rule


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error:
        raise _Unknown from None


def _pattern(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    return _kind(value) != "string" or _compiled(rule).search(value) is not None


def _id(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
    """An ``$id`` below the root would change what its ``$ref``s point at: not interpreted here."""
    if schema is not root:
        raise _Unknown
    return True


def _bound(test: Any) -> Any:
    def check(rule: Any, value: Any, root: dict[str, Any], schema: dict[str, Any]) -> bool:
        return _kind(value) != "number" or bool(test(value, rule))

    return check


#: keyword -> its check (value valid under this keyword?); any keyword not here or in _ANNOTATIONS is undecided.
_CHECKS = {
    "$id": _id,
    "type": _type,
    "enum": _enum,
    "const": _const,
    "$ref": _ref,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "allOf": _all_of,
    "not": _not,
    "properties": _properties,
    "additionalProperties": _additional,
    "required": _required,
    "minProperties": _min_properties,
    "maxProperties": _max_properties,
    "items": _items,
    "minItems": _min_items,
    "maxItems": _max_items,
    "uniqueItems": _unique,
    "minLength": _min_length,
    "maxLength": _max_length,
    "pattern": _pattern,
    "minimum": _bound(lambda v, r: v >= r),
    "maximum": _bound(lambda v, r: v <= r),
    "exclusiveMinimum": _bound(lambda v, r: v > r),
    "exclusiveMaximum": _bound(lambda v, r: v < r),
}
