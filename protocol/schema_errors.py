"""A JSON Schema violation in words a person can act on: ``unknown key 'x' (allowed here: a, b)``.

jsonschema's own messages ("Additional properties are not allowed ('x' was
unexpected)") name neither what is allowed nor, for a value that fits none of
several shapes, which shape came closest. Suite files and graders' configs are
checked with these words.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from .schemas import validator

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

__all__ = ["explain", "first_problem"]

#: How alike an unknown key and a known one must be to be offered as "did you mean" (difflib's ratio).
SIMILAR = 0.75

#: Where in a value: object keys and list indexes from its top.
KeyPath = tuple[str | int, ...]


def first_problem(schema: str, value: Any) -> str | None:
    """The first violation of ``schema`` by ``value`` as ``path: words`` (``path`` left out at the top), or None."""
    found = sorted((explain(err) for err in validator(schema).iter_errors(value)), key=lambda pm: [str(k) for k in pm[0]])
    if not found:
        return None
    path, message = found[0]
    if message.startswith("unknown key "):
        path = path[:-1]  # the message names the key; say where it is
    where = "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in path).lstrip(".")
    return f"{where}: {message}" if where else message


def explain(err: ValidationError) -> tuple[KeyPath, str]:
    """Where (relative to the validated value) and what, in words a suite author can act on."""
    from jsonschema.exceptions import best_match

    if err.context:  # oneOf / anyOf: explain with the branch that came closest
        return explain(best_match(err.context))
    path: KeyPath = tuple(err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        known = err.schema.get("properties", {}) if isinstance(err.schema, dict) else {}
        extra = [k for k in err.instance if k not in known]
        if extra:
            allowed = ", ".join(sorted(known)) or "none"
            return (*path, extra[0]), f"unknown key {extra[0]!r}{_did_you_mean(extra[0], known)} (allowed here: {allowed})"
    if err.validator == "required" and isinstance(err.instance, dict):
        missing = next((k for k in err.validator_value if k not in err.instance), None)
        if isinstance(missing, str):
            # A missing key next to a misspelling of it (``taks:``) is said as that unknown key, where it is.
            known = err.schema.get("properties", {}) if isinstance(err.schema, dict) else {}
            strays = [k for k in err.instance if isinstance(k, str) and k not in known]
            close = difflib.get_close_matches(missing, strays, n=1, cutoff=SIMILAR)
            if close:
                allowed = ", ".join(sorted(known)) or "none"
                return (*path, close[0]), f"unknown key {close[0]!r}; did you mean {missing!r}? (allowed here: {allowed})"
    if err.validator == "type":
        wanted = err.validator_value if isinstance(err.validator_value, str) else " or ".join(err.validator_value)
        return path, f"must be {_article(wanted)}, got {_kind(err.instance)}"
    if err.validator == "enum":
        allowed = ", ".join(map(repr, err.validator_value))
        return path, f"must be one of {allowed}, got {err.instance!r}"
    return path, err.message


def _did_you_mean(key: object, known: Any) -> str:
    close = (
        difflib.get_close_matches(key, [k for k in known if isinstance(k, str)], n=1, cutoff=SIMILAR)
        if isinstance(key, str)
        else []
    )
    return f"; did you mean {close[0]!r}?" if close else ""


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
