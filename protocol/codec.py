"""The base of every record: a msgspec ``Struct`` with waza's JSON conventions.

msgspec does the work (validating decode and encode in C, the JSON Schema the
published ``schemas/`` files are generated from); this module only adds what
waza's files need beyond it:

- JSON names are camelCase (``rename="camel"``); a field may name its own
  (``field(name="pass")``). An unknown key is an error, naming its path.
- ``unknown``: a record that must not drop what a user or another tool wrote
  (PromptCase, CaptureResult, GraderRequest) declares a field of that name; the
  keys it does not know at its top level are collected there on decode and
  written back beside its own on encode. ``aliases`` maps older key names to
  the fields that replaced them (PromptCase ``expected`` -> ``hint``).
- A record that leaves unknown figures out of its JSON (``omit_defaults=True``)
  omits a field whose value is its default; a default that must still be written
  (``status``, ``errors``) comes from :func:`always`.
- :class:`RecordError` names the field path (``trajectory[3].status``), so a bad
  line of a JSONL file is reported by file, line and field.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar, Self, TypeVar, cast

import msgspec

__all__ = ["Record", "RecordError", "always"]

T = TypeVar("T")


class RecordError(ValueError):
    """A JSON value does not fit a record; ``path`` names the field (``trajectory[3].status``)."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"field {path!r}: {message}" if path else message)


def always(value: T) -> T:
    """A default that ``omit_defaults`` still writes (``status: ResultStatus = always("ungraded")``).

    msgspec omits a value that *is* the field's default, or an empty collection
    from a ``list``/``dict``/``set`` factory; a value made by any other factory is
    always written. tests/test_records.py holds msgspec to that.
    """
    if isinstance(value, (list, dict)):
        # A bound method of C (no Python frame per decoded record that lacks the field), and not
        # ``list`` or ``dict`` themselves, whose empty values msgspec would omit.
        return msgspec.field(default_factory=cast("Callable[[], T]", value.copy))
    return msgspec.field(default_factory=lambda: value)


def _decode(data: bytes | str) -> Any:
    """Any JSON value; msgspec reports a string that is not UTF-8 as UnicodeDecodeError, made a DecodeError here."""
    try:
        return msgspec.json.decode(data)
    except UnicodeDecodeError as exc:
        raise _not_utf8(exc) from None


def _not_utf8(exc: UnicodeDecodeError) -> msgspec.DecodeError:
    return msgspec.DecodeError(f"invalid UTF-8 at byte {exc.start + 1} of a string")


class Record(msgspec.Struct, rename="camel", kw_only=True, forbid_unknown_fields=True):
    """Base of every record: ``from_json``/``from_dict`` validate, ``to_json``/``to_dict`` encode.

    Subclasses repeat ``kw_only=True`` (msgspec does not inherit it): fields keep
    the order of the JSON they describe, required or not.
    """

    #: Older JSON key -> the field's JSON name, accepted on input (never written).
    aliases: ClassVar[dict[str, str]] = {}

    @classmethod
    def from_json(cls, data: bytes | str) -> Self:
        """The record encoded in ``data`` (one JSON object); RecordError names a bad field.

        Malformed JSON, invalid UTF-8 included, raises ``msgspec.DecodeError``.
        """
        try:
            obj = msgspec.json.decode(data, type=cls)
        except msgspec.ValidationError as exc:
            if not _loose(cls):
                raise _record_error(exc) from None
            return cls.from_dict(_decode(data))
        except UnicodeDecodeError as exc:
            raise _not_utf8(exc) from None
        if _loose(cls) and getattr(obj, "unknown", None):  # the input had a key named "unknown": not ours
            return cls.from_dict(_decode(data))
        return obj

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """The record a JSON-shaped Python value describes (``dict`` keys are the JSON names)."""
        if _loose(cls) and isinstance(data, dict):
            known, extra = _split(cls, data)
            try:
                obj = msgspec.convert(known, cls)
            except msgspec.ValidationError as exc:
                raise _record_error(exc) from None
            if extra:
                obj.unknown = extra  # type: ignore[attr-defined]  # the records that keep unknown keys
            return obj
        try:
            return msgspec.convert(data, cls)
        except msgspec.ValidationError as exc:
            raise _record_error(exc) from None

    def to_dict(self) -> dict[str, Any]:
        """The record's JSON object as new Python dicts and lists (nothing shared with the record)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        extra = out.pop("unknown", None)
        if extra:
            for key, value in extra.items():
                out.setdefault(key, value)
        return out

    def to_json(self) -> bytes:
        """The record as one line of JSON, without the newline."""
        # Unknown keys go beside the record's own; or an empty ``unknown`` would be written.
        keeps_unknown = "unknown" in self.__struct_fields__
        if keeps_unknown and (self.unknown or not self.__struct_config__.omit_defaults):  # type: ignore[attr-defined]
            return _encode(self.to_dict())
        return _encode(self)


_encode: Callable[[Any], bytes] = msgspec.json.Encoder().encode


def _loose(cls: type[Record]) -> bool:
    """Whether a record keeps unknown keys or reads older names (then unknown keys are not errors)."""
    return "unknown" in cls.__struct_fields__ or bool(cls.aliases)


def _split(cls: type[Record], data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``data`` as the keys the record knows (older names renamed) and the ones it does not."""
    names = set(cls.__struct_encode_fields__) - {"unknown"}
    known = {k: v for k, v in data.items() if k in names}
    for old, new in cls.aliases.items():
        if old in data and new not in data:
            known[new] = data[old]
    return known, {k: v for k, v in data.items() if k not in names and k not in cls.aliases}


def _record_error(exc: msgspec.ValidationError) -> RecordError:
    """msgspec's ``Expected `str`, got `int` - at `$.trajectory[0].type``` as a path and a message in JSON's words."""
    message, _, where = str(exc).partition(" - at `")
    path = where.rstrip("`").removeprefix("$").removeprefix(".")
    for prefix, wording in (
        ("Object missing required field `", "is required"),
        ("Object contains unknown field `", "is not a known field"),
    ):
        if message.startswith(prefix):
            name = message[len(prefix) :].rstrip("`")
            return RecordError(f"{path}.{name}" if path else name, wording)
    if found := _EXPECTED.fullmatch(message):
        kinds = " or ".join(_JSON_NAMES.get(k, k) for k in found["kinds"].split(" | "))
        if found["got"]:
            kinds = {"object": "an object", "array": "an array"}.get(kinds, kinds)
            return RecordError(path, f"must be {kinds}, got {_JSON_NAMES.get(found['got'], found['got'])}")
        bound = found["bound"].removesuffix(".0")
        article = "an" if kinds[0] in "aeiou" else "a"
        return RecordError(path, f"must be {article} {kinds}{found['length'] or ''} {_BOUNDS[found['op']]} {bound}")
    if message.startswith("Invalid enum value "):
        return RecordError(path, f"{message.removeprefix('Invalid enum value ')} is not one of the allowed values")
    return RecordError(path, message[:1].lower() + message[1:])


#: msgspec's type errors and bounds: ``Expected `float | null`, got `str```, ``Expected `str` of length >= 1``.
_EXPECTED = re.compile(
    r"Expected `(?P<kinds>[^`]+)`(?:, got `(?P<got>[^`]+)`|(?P<length> of length)? (?P<op>[<>]=?) (?P<bound>\S+))"
)
_JSON_NAMES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
_BOUNDS = {">": "greater than", ">=": "at least", "<": "less than", "<=": "at most"}
