"""Conversion between record dataclasses and JSON-shaped values.

Records are plain stdlib dataclasses so they read like documentation. This
module compiles, once per class, a decoder that validates a JSON value and names
the offending field on error, an encoder that only walks fields that hold nested
records, and the JSON Schema the published ``schemas/`` files are generated from
(so the files and the classes cannot drift apart).
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from collections.abc import Callable
from typing import Any, ClassVar, Literal, Union, get_args, get_origin

from .code_cache import compiled

Decoder = Callable[[Any, str], Any]
Encoder = Callable[[Any], Any]


class RecordError(ValueError):
    """A JSON value does not fit a record; ``path`` names the field (``trajectory[3].status``)."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"field {path!r}: {message}" if path else message)


def camel(name: str) -> str:
    """JSON names are camelCase (as in the acp-harness records); Python names stay snake_case."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def json_name(f: dataclasses.Field[Any]) -> str:
    return f.metadata.get("json") or camel(f.name)


def doc(text: str, *, json: str | None = None, **schema: Any) -> dict[str, Any]:
    """Field metadata: a description for the schema, an optional JSON name, extra schema keywords."""
    meta: dict[str, Any] = {"doc": text, "schema": schema}
    if json:
        meta["json"] = json
    return meta


class Record:
    """Base of every record: ``to_dict``/``from_dict`` compiled from the dataclass fields.

    ``_passthrough`` names a field that collects unknown top-level keys on decode
    and splices them back on encode, for records that must not drop what a user
    or another tool wrote. Without it, an unknown key is an error.
    """

    __slots__ = ()
    _passthrough: ClassVar[str | None] = None
    _omit_none: ClassVar[bool] = False
    _aliases: ClassVar[dict[str, str]] = {}
    _codec: ClassVar[_Codec]

    def to_dict(self) -> dict[str, Any]:
        return _codec_for(type(self)).encode(self)

    @classmethod
    def from_dict(cls, data: Any, path: str = "") -> typing.Self:
        return _codec_for(cls).decode(data, path)  # type: ignore[return-value]  # a cast() call per record, saved


def _codec_for(cls: type[Record]) -> _Codec:
    codec = cls.__dict__.get("_codec")
    if codec is None:
        codec = _Codec(cls)
        cls._codec = codec
    return codec


#: (module, annotation text) -> the type it names; records share most annotations (``str | None``).
_annotations: dict[tuple[str, str], Any] = {}


def _field_types(cls: type[Record]) -> dict[str, Any]:
    """Each dataclass field's type, its annotation text evaluated in the module that wrote it.

    What ``typing.get_type_hints`` gives for these fields, without its ForwardRef (and
    compile) per annotation of the class and every base: the same text is evaluated once
    per module. Records annotate with plain names from their module's globals.
    """
    types_: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        tp = f.type
        if isinstance(tp, str):
            owner = next(k for k in cls.__mro__ if f.name in k.__dict__.get("__annotations__", ()))
            key = (owner.__module__, tp)
            if key not in _annotations:
                _annotations[key] = eval(tp, vars(sys.modules[owner.__module__]))  # noqa: S307 - our own annotation text
            tp = _annotations[key]
        types_[f.name] = tp
    return types_


def _type_name(tp: Any) -> str:
    if tp is type(None):
        return "null"
    if isinstance(tp, type):
        return {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}.get(
            tp, tp.__name__
        )
    origin = get_origin(tp)
    if origin is Literal:
        return " or ".join(repr(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in get_args(tp))
    if origin is list:
        return "array"
    if origin is dict:
        return "object"
    return "any value"


def _pathjoin(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _decoder(tp: Any) -> Decoder:
    if tp is Any:
        return lambda v, p: v
    if isinstance(tp, type) and issubclass(tp, Record):
        return lambda v, p: _codec_for(tp).decode(v, p)
    origin = get_origin(tp)
    if origin is Literal:
        allowed = get_args(tp)

        def lit(v: Any, p: str) -> Any:
            if v not in allowed or isinstance(v, bool):
                raise RecordError(p, f"must be one of {', '.join(map(repr, allowed))}, got {v!r}")
            return v

        return lit
    if origin in (Union, types.UnionType):
        members = [_decoder(a) for a in get_args(tp)]
        expected = _type_name(tp)
        # The common ``X | None``: no other member turns a null into anything but null,
        # so a null needs no trial decoding and the others need not try the null type.
        nullable = type(None) in get_args(tp)
        if nullable:
            members = [m for a, m in zip(get_args(tp), members, strict=True) if a is not type(None)]

        def union(v: Any, p: str) -> Any:
            if v is None and nullable:
                return None
            for member in members:
                try:
                    return member(v, p)
                except RecordError:
                    continue
            raise RecordError(p, f"must be {expected}, got {_describe(v)}")

        return union
    if origin is list:
        (item_tp,) = get_args(tp) or (Any,)
        item = _decoder(item_tp)
        passthrough_items = item_tp is Any

        def lst(v: Any, p: str) -> Any:
            if not isinstance(v, list):
                raise RecordError(p, f"must be an array, got {_describe(v)}")
            if passthrough_items:
                return v
            out = []
            for i, x in enumerate(v):
                try:
                    out.append(item(x, ""))
                except RecordError as exc:
                    raise _within(exc, p, i) from None
            return out

        return lst
    if origin is dict:
        _, val_tp = get_args(tp) or (str, Any)
        val = _decoder(val_tp)
        passthrough_vals = val_tp is Any

        def dct(v: Any, p: str) -> Any:
            if not isinstance(v, dict):
                raise RecordError(p, f"must be an object, got {_describe(v)}")
            if passthrough_vals:
                return v
            out = {}
            for k, x in v.items():
                try:
                    out[k] = val(x, "")
                except RecordError as exc:
                    raise _within(exc, p, k) from None
            return out

        return dct
    if tp is type(None):

        def none(v: Any, p: str) -> Any:
            if v is not None:
                raise RecordError(p, f"must be null, got {_describe(v)}")
            return None

        return none
    if tp is float:

        def num(v: Any, p: str) -> Any:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise RecordError(p, f"must be a number, got {_describe(v)}")
            return v

        return num
    if tp is int:

        def integer(v: Any, p: str) -> Any:
            if isinstance(v, bool) or not isinstance(v, int):
                raise RecordError(p, f"must be an integer, got {_describe(v)}")
            return v

        return integer
    if tp in (str, bool):

        def simple(v: Any, p: str) -> Any:
            if type(v) is not tp:
                raise RecordError(p, f"must be {_type_name(tp)}, got {_describe(v)}")
            return v

        return simple
    raise TypeError(f"codec cannot handle type {tp!r}")


def _describe(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return f"boolean {str(v).lower()}"
    if isinstance(v, (int, float)):
        return f"number {v!r}"
    if isinstance(v, str):
        shown = v if len(v) <= 40 else v[:37] + "..."
        return f"string {shown!r}"
    return _type_name(type(v))


def _holds_record(tp: Any) -> bool:
    if isinstance(tp, type) and issubclass(tp, Record):
        return True
    return any(_holds_record(a) for a in get_args(tp))


def _encoder(tp: Any) -> Encoder | None:
    """None means the value is already JSON-shaped and needs no walk (the fast, common case)."""
    if not _holds_record(tp):
        return None

    def enc(v: Any) -> Any:
        if isinstance(v, Record):
            return v.to_dict()
        if isinstance(v, list):
            return [enc(x) for x in v]
        if isinstance(v, dict):
            return {k: enc(x) for k, x in v.items()}
        return v

    args = get_args(tp)
    if get_origin(tp) is list and len(args) == 1 and isinstance(args[0], type) and issubclass(args[0], Record):
        # list[SomeRecord], the common nested shape: one call per item instead of a walk
        return lambda v: [x.to_dict() if isinstance(x, Record) else enc(x) for x in v]
    return enc


class _Codec:
    """One record class's decoder and encoder, generated as straight-line Python once per class.

    Decoding and encoding run once or more per record on the hot path (every
    result read, graded and written), so instead of looping over field
    descriptors per call, each class gets a function with one statement per
    field, the way ``dataclasses`` builds ``__init__``. Paths for error
    messages are only built when there is an error.
    """

    decode: Callable[[Any, str], Record]
    encode: Callable[[Record], dict[str, Any]]

    def __init__(self, cls: type[Record]) -> None:
        self.cls = cls
        self._build(cls)

    def _build(self, cls: type[Record]) -> None:
        hints = _field_types(cls)
        self.fields: list[tuple[str, str, Any, bool, Decoder, Encoder | None]] = []
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name == cls._passthrough:
                continue
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            tp = hints[f.name]
            self.fields.append((f.name, json_name(f), tp, required, _decoder(tp), _encoder(tp)))
        self.known = {j for _, j, *_ in self.fields} | set(cls._aliases)
        if hasattr(cls, "__post_init__"):
            raise TypeError(f"{cls.__name__}: records are built without __init__, so __post_init__ would not run")

    def __getattr__(self, name: str) -> Any:
        """``decode`` and ``encode`` are each compiled on first use: most classes a run
        touches go one way only (prompts are read, results written), and compiling the
        other direction's code was a tenth of a one-prompt capture's start-up."""
        if name == "decode":
            _building.add(self.cls)
            try:
                self.decode = self._compile_decoder()
            finally:
                _building.discard(self.cls)
            return self.decode
        if name == "encode":
            self.encode = self._compile_encoder()
            self.cls.to_dict = self.encode  # type: ignore[method-assign,assignment]  # later calls skip the lookup
            return self.encode
        raise AttributeError(name)

    def _compile_decoder(self) -> Callable[[Any, str], Record]:
        cls = self.cls
        env: dict[str, Any] = {
            "cls": cls,
            "new": object.__new__,
            "RecordError": RecordError,
            "_describe": _describe,
            "_pathjoin": _pathjoin,
            "_within": _within,
            "known": self.known,
            "aliases": cls._aliases,
        }
        body = [
            "def decode(data, path):",
            "    if type(data) is not dict and not isinstance(data, dict):",
            "        raise RecordError(path, f'must be an object, got {_describe(data)}')",
        ]
        if cls._aliases:
            body += [
                "    for old, new_name in aliases.items():",
                "        if old in data and new_name not in data:",
                "            data = {**data, new_name: data[old]}",
            ]
        # The object is filled slot by slot (what the dataclass __init__ would do, without
        # building keyword arguments): a fifth of the cost of reading a result.
        body += ["    obj = new(cls)", "    seen = 0"]
        defaults = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        for i, (name, jname, tp, required, _dec, _) in enumerate(self.fields):
            env[f"dec{i}"] = _dec
            # ``in`` then a subscript: two inline dict lookups cost less than one ``get`` call.
            body += [f"    if {jname!r} not in data:"]
            if required:
                body.append(f"        raise RecordError(_pathjoin(path, {jname!r}), 'is required')")
            else:
                body.append(f"        obj.{name} = {_default_expr(defaults[name], i, env)}")
            body += ["    else:", "        seen += 1", f"        v = data[{jname!r}]"]
            fast = _fast_check(tp, i, env)
            full = [
                "            try:",
                f"                v = dec{i}(v, '')",
                "            except RecordError as exc:",
                f"                raise _within(exc, path, {jname!r}) from None",
            ]
            shape = _record_shape(tp)
            if shape is not None:
                # A nested record is decoded by a direct call; on any error the full decoder
                # runs again to word the message exactly as it always has.
                env[f"rec{i}"] = _nested_decoder(shape[1])
                call = f"rec{i}(v, '')" if shape[0] == "one" else f"[rec{i}(x, '') for x in v]"
                body += [
                    f"        if type(v) is {'dict' if shape[0] == 'one' else 'list'}:",
                    "            try:",
                    f"                v = {call}",
                    "            except RecordError:",
                    *["    " + line for line in full],
                    f"        elif not ({fast}):" if fast else "        else:",
                    *full,
                ]
            elif tp is Any:
                pass
            elif fast:  # plain JSON values pass an inline check; anything else meets the full decoder
                body += [f"        if not ({fast}):", *full]
            else:
                body += [line[4:] for line in full]
            body.append(f"        obj.{name} = v")
        passthrough = cls._passthrough
        body += [
            "    if seen != len(data):",
            "        unknown = [k for k in data if k not in known]",
            "        if unknown:",
        ]
        if passthrough is None:
            body.append("            raise RecordError(_pathjoin(path, unknown[0]), 'is not a known field')")
        else:
            body += [
                f"            obj.{passthrough} = {{k: data[k] for k in unknown}}",
                "            return obj",
            ]
            body.append(f"    obj.{passthrough} = {_default_expr(defaults[passthrough], -1, env)}")
        body.append("    return obj")
        exec(compiled("\n".join(body)), env)  # noqa: S102 - generated from the class's own field names
        return env["decode"]  # type: ignore[no-any-return]

    def _compile_encoder(self) -> Callable[[Record], dict[str, Any]]:
        cls = self.cls
        env: dict[str, Any] = {"cls": cls, "_codec_for": _codec_for}
        body = [
            "def encode(obj):",
            "    if type(obj) is not cls:",  # a subclass inherits this method, not these fields
            "        return _codec_for(type(obj)).encode(obj)",
        ]
        if cls._omit_none:
            body.append("    out = {}")
        entries = []  # without omitted fields, one dict display: built at its final size
        for i, (name, jname, tp, _, _, enc) in enumerate(self.fields):
            value = f"obj.{name}"
            if enc is not None:
                env[f"enc{i}"] = enc
                shape = _record_shape(tp)
                if shape is not None:
                    # A nested record (the usual value) is encoded by a direct call; anything else is walked.
                    env[f"rec{i}"], env[f"item{i}"] = shape[1], _encoder(shape[1])
                    direct = (
                        f"v.to_dict() if type(v) is rec{i} else enc{i}(v)"
                        if shape[0] == "one"
                        else f"[x.to_dict() if type(x) is rec{i} else item{i}(x) for x in v]"
                    )
                else:
                    direct = f"enc{i}(v)"
                body += [f"    v = {value}", f"    v{i} = None if v is None else {direct}"]
                value = f"v{i}"
            if cls._omit_none:
                body += [f"    v = {value}", "    if v is not None:", f"        out[{jname!r}] = v"]
            else:
                entries.append(f"{jname!r}: {value}")
        if not cls._omit_none:
            body.append(f"    out = {{{', '.join(entries)}}}")
        if cls._passthrough:
            body += [f"    for k, v in obj.{cls._passthrough}.items():", "        out.setdefault(k, v)"]
        body.append("    return out")
        exec(compiled("\n".join(body)), env)  # noqa: S102 - generated from the class's own field names
        return env["encode"]  # type: ignore[no-any-return]


_FAST = {str: "type(v) is str", bool: "type(v) is bool", int: "type(v) is int", float: "type(v) is float or type(v) is int"}


def _fast_check(tp: Any, i: int, env: dict[str, Any]) -> str | None:
    """An inline expression that is true only for values the type's decoder returns unchanged
    (names it needs go into ``env``, suffixed with the field's index ``i``)."""
    if tp in _FAST:
        return _FAST[tp]
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal and all(type(a) is str for a in args):
        env[f"allowed{i}"] = frozenset(args)
        return f"type(v) is str and v in allowed{i}"
    if origin is dict and args[1:] in ((), (Any,)):
        return "type(v) is dict"
    if origin is list and args in ((), (Any,)):
        return "type(v) is list"
    if origin is list and args == (str,):
        return "type(v) is list and all(type(x) is str for x in v)"
    if origin in (Union, types.UnionType):
        # A scalar passes an earlier member unchanged or not at all (records take objects,
        # lists of records take arrays), so each scalar member's check stands on its own.
        rest = [a for a in args if a is not type(None)]
        scalars = rest if len(rest) == 1 else [a for a in rest if a in _FAST or get_origin(a) is Literal]
        checks = [c for a in scalars if (c := _fast_check(a, i, env))]
        if len(rest) < len(args):
            checks.insert(0, "v is None")
        if checks:
            return " or ".join(f"({c})" for c in checks)
    return None


#: Record classes whose decoder is being compiled (a record that holds itself gets a late-bound call).
_building: set[type[Record]] = set()


def _nested_decoder(tp: type[Record]) -> Decoder:
    if tp in _building:
        return lambda v, p: _codec_for(tp).decode(v, p)
    return _codec_for(tp).decode


def _record_shape(tp: Any) -> tuple[str, type[Record]] | None:
    """("one", R) for ``R`` or ``R | None``, ("list", R) for ``list[R]``: fields decoded by a direct call."""
    if get_origin(tp) in (Union, types.UnionType):
        rest = [a for a in get_args(tp) if a is not type(None)]
        tp = rest[0] if len(rest) == 1 else None
    if isinstance(tp, type) and issubclass(tp, Record):
        return "one", tp
    if get_origin(tp) is list and len(args := get_args(tp)) == 1 and isinstance(args[0], type) and issubclass(args[0], Record):
        return "list", args[0]
    return None


def _default_expr(f: dataclasses.Field[Any], i: int, env: dict[str, Any]) -> str:
    """Python source for a field's default (a factory is called, as the dataclass ``__init__`` would)."""
    if f.default_factory is not dataclasses.MISSING:
        if f.default_factory in (list, dict):
            return "[]" if f.default_factory is list else "{}"
        env[f"factory{i}"] = f.default_factory
        return f"factory{i}()"
    env[f"default{i}"] = f.default
    return f"default{i}"


_UNSET: Any = object()
R = typing.TypeVar("R", bound=Record)


def builder(cls: type[R]) -> Callable[..., R]:
    """``cls(**fields)`` as a plain function that makes the object and fills its slots.

    Calling a class runs ``__init__`` through the type's call slot, which packs
    the keyword arguments into a dict first: on a hot path (grades, verdicts,
    requests, one or more per result) that doubled the cost of making a record.
    Takes the same keyword arguments, with the same defaults and factories."""
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: a builder does not run __post_init__")
    env: dict[str, Any] = {"new": object.__new__, "cls": cls, "UNSET": _UNSET}
    params, body = [], ["    obj = new(cls)"]
    for i, f in enumerate(dataclasses.fields(cls)):  # type: ignore[arg-type]
        if f.default_factory is not dataclasses.MISSING:
            env[f"factory{i}"] = f.default_factory
            params.append(f"{f.name}=UNSET")
            body.append(f"    obj.{f.name} = factory{i}() if {f.name} is UNSET else {f.name}")
            continue
        if f.default is not dataclasses.MISSING:
            env[f"default{i}"] = f.default
            params.append(f"{f.name}=default{i}")
        else:
            params.append(f.name)
        body.append(f"    obj.{f.name} = {f.name}")
    source = f"def build(*, {', '.join(params)}):\n" + "\n".join(body) + "\n    return obj"
    exec(compiled(source), env)  # noqa: S102 - generated from the class's own field names
    return env["build"]  # type: ignore[no-any-return]


def _within(exc: RecordError, path: str, key: str | int) -> RecordError:
    """An error found inside ``key`` (its path relative to it), re-rooted at ``path``."""
    where = _pathjoin(path, key)
    if exc.path:
        where += exc.path if exc.path.startswith("[") else f".{exc.path}"
    return RecordError(where, exc.message)


# ---------------------------------------------------------------- JSON Schema


def schema_for(cls: type[Record], *, title: str | None = None) -> dict[str, Any]:
    """The draft 2020-12 schema of a record class, nested records under ``$defs``."""
    defs: dict[str, Any] = {}
    body = _object_schema(cls, defs)
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://waza.dev/schemas/{cls.__name__}.json",
        "title": title or cls.__name__,
        "description": _class_doc(cls),
        **body,
    }
    defs.pop(cls.__name__, None)
    if defs:
        schema["$defs"] = dict(sorted(defs.items()))
    return schema


def _class_doc(cls: type) -> str:
    return " ".join((cls.__doc__ or "").split())


def _object_schema(cls: type[Record], defs: dict[str, Any]) -> dict[str, Any]:
    hints = _field_types(cls)
    props: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name == cls._passthrough:
            continue
        s = _type_schema(hints[f.name], defs)
        meta_doc = f.metadata.get("doc")
        if meta_doc:
            s = {"description": meta_doc, **s}
        s.update(f.metadata.get("schema", {}))
        props[json_name(f)] = s
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(json_name(f))
    for old, new in cls._aliases.items():
        props[old] = {"description": f"Older name of {new!r}, accepted on input.", **props[new]}
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    out["additionalProperties"] = cls._passthrough is not None
    return out


def _type_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if tp is Any:
        return {}
    if isinstance(tp, type) and issubclass(tp, Record):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}
            defs[name] = {"description": _class_doc(tp), **_object_schema(tp, defs)}
        return {"$ref": f"#/$defs/{name}"}
    origin = get_origin(tp)
    if origin is Literal:
        return {"enum": list(get_args(tp))}
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(tp)]
        simple = [a for a in members if a in (str, int, float, bool, type(None))]
        if len(simple) == len(members):
            names = [_type_name(a) for a in members]
            return {"type": names}
        return {"anyOf": [_type_schema(a, defs) for a in members]}
    if origin is list:
        (item_tp,) = get_args(tp) or (Any,)
        inner = _type_schema(item_tp, defs)
        return {"type": "array", "items": inner} if inner else {"type": "array"}
    if origin is dict:
        _, val_tp = get_args(tp) or (str, Any)
        inner = _type_schema(val_tp, defs)
        return {"type": "object", "additionalProperties": inner} if inner else {"type": "object"}
    if tp is type(None):
        return {"type": "null"}
    return {"type": _type_name(tp)}
