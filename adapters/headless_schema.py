"""Headless adapter schemas: found by name or path, validated, compiled once.

A schema is checked in two passes so that every mistake is reported as
``file: field 'outputEvents.2.extract.entries': message``: the published JSON
Schema (``schemas/adapter-headless.json``) catches shape errors, then this
module compiles every JSONPath and rejects extract fields that the chosen
``emitAs`` would ignore (an option that does nothing is an error, not a no-op).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from waza.protocol import schemas
from waza.protocol.errors import ConfigError

from .jsonpath import Selector, compile_selector

SHIPPED_DIR = "headless_schemas"

#: Extract fields each ``emitAs`` uses; anything else in ``extract`` is rejected.
EXTRACT_FIELDS: dict[str, frozenset[str]] = {
    "message": frozenset({"content", "messageId"}),
    "thought": frozenset({"content", "messageId"}),
    "tool_call": frozenset({"toolCallId", "name", "toolName", "title", "kind", "status", "input", "output", "mcpServer"}),
    "plan": frozenset({"entries"}),
    "usage": frozenset(
        {
            "inputTokens",
            "outputTokens",
            "totalTokens",
            "thoughtTokens",
            "cachedReadTokens",
            "cachedWriteTokens",
            "cost",
            "currency",
        }
    ),
}

#: Extract fields that take one value: a path that can select several would silently keep the first.
SCALAR_FIELDS = frozenset({"toolCallId", "name", "toolName", "title", "kind", "status", "messageId", "mcpServer"})

DEFAULT_HISTORY = "User: {{input}}\nAssistant: {{output}}"

#: A match or result value meaning "any value that is not null" (acp-harness's wildcard).
ANY_NON_NULL = "*"


@dataclass(frozen=True, slots=True)
class Condition:
    """Holds when any value the path selects equals ``value``; with ``"*"``, when it selects a non-null
    value; with no value, when it selects anything."""

    path: Selector
    value: Any = None
    any_value: bool = False

    def holds(self, node: Any) -> bool:
        found = self.path.select(node)
        if self.any_value:
            return bool(found)
        if self.value == ANY_NON_NULL:
            return any(v is not None for v in found)
        return any(v == self.value and type(v) is type(self.value) for v in found)


@dataclass(frozen=True, slots=True)
class Mapping:
    """One ``outputEvents`` entry, compiled."""

    index: int
    conditions: tuple[Condition, ...]
    emit_as: Literal["message", "thought", "tool_call", "plan", "usage"]
    extract: dict[str, Selector]
    each: Selector | None = None
    #: Conditions each selected part must meet (from a wildcard match path), relative to the part.
    part_conditions: tuple[Condition, ...] = ()
    #: message/thought: the lines are pieces of one streamed message (joined), not separate messages.
    chunks: bool = False

    def matches(self, line: Any) -> bool:
        return all(c.holds(line) for c in self.conditions)

    def parts(self, line: Any) -> list[Any]:
        """The parts of a matching line this mapping emits for: each selected one that meets its conditions."""
        parts = self.each.select(line) if self.each is not None else [line]
        return [p for p in parts if all(c.holds(p) for c in self.part_conditions)]


@dataclass(frozen=True, slots=True)
class ItemCondition:
    """A match path ending at a wildcard (``$.content[*]``): an item matches when it equals the value,
    or is an object whose ``type`` does (acp-harness's reading)."""

    value: Any

    def holds(self, node: Any) -> bool:
        if self.value == ANY_NON_NULL:
            return node is not None
        if isinstance(node, dict) and "type" in node:
            return bool(node["type"] == self.value)
        return bool(node == self.value and type(node) is type(self.value))


def split_wildcard(path: str) -> tuple[str, str] | None:
    """``$.a.content[*].type`` -> (``$.a.content[*]``, ``$.type``): the items, and the path within each."""
    at = path.rfind("[*]")
    if at < 0:
        return None
    return path[: at + 3], "$" + path[at + 3 :]


@dataclass(frozen=True, slots=True)
class Passthrough:
    """acp-harness's passthrough mode: a line's own type field names its step type."""

    type_field: str = "type"
    type_values: dict[str, str] = field(default_factory=dict)

    def step_type(self, line: Any) -> str | None:
        kind = line.get(self.type_field) if isinstance(line, dict) else None
        if not isinstance(kind, str):
            return None
        mapped = self.type_values.get(kind, kind)
        return mapped if mapped in PASSTHROUGH_TYPES else None


PASSTHROUGH_TYPES = ("thought", "tool_call", "message", "plan")


@dataclass(frozen=True, slots=True)
class HeadlessSchema:
    """A validated adapter schema: how to start the CLI and how to read what it prints."""

    name: str
    source: str
    command: tuple[str, ...]
    session_mode: Literal["stream", "iterative"]
    prompt_flag: str | None
    prompt_stdin: bool
    output_flag: str
    output_value: str
    auto_approve: tuple[str, ...]
    cwd_flag: str | None
    resume_flag: str | None
    session_id_path: Selector | None
    mappings: tuple[Mapping, ...]
    result: Condition
    result_content: Selector | None
    #: The result line's stop reason, and the CLI's values -> ACP stop reasons (a value already one needs none).
    stop_reason: Selector | None = None
    stop_reasons: dict[str, str] = field(default_factory=dict)
    #: When this holds on the result line the turn failed; ``error_message`` says why.
    is_error: Condition | None = None
    error_message: Selector | None = None
    history_system: str | None = None
    history_turn: str = DEFAULT_HISTORY
    timeout_ms: float | None = None
    #: passthrough mode (outputMode "passthrough"): the type field, and the CLI's type values -> step types.
    passthrough: Passthrough | None = None
    #: (package, version) of the CLI release the schema was written against.
    tested_with: tuple[str, str] | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def shipped() -> dict[str, Any]:
    """The schemas waza ships, by name (the file name without ``.json``)."""
    root = Path(__file__).with_name(SHIPPED_DIR)
    return {p.name[: -len(".json")]: p for p in sorted(root.iterdir(), key=lambda p: p.name) if p.name.endswith(".json")}


def read_schema(spec: str | Path) -> tuple[str, bytes]:
    """(display name, contents) of a schema file path or a shipped schema name."""
    path = Path(spec)
    if path.is_file():
        return str(path), _read_bytes(str(path), path)
    known = shipped()
    if str(spec) not in known:
        names = ", ".join(sorted(known))
        raise ConfigError(
            f"no schema file {str(spec)!r} and no shipped schema of that name (shipped: {names})", field="HeadlessAgent.schema"
        )
    return f"{spec} (shipped)", known[str(spec)].read_bytes()


def _read_bytes(source: str, path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot be read: {exc.strerror or exc}", source=source) from None


def load_schema(spec: str | Path) -> HeadlessSchema:
    """Read, validate and compile a schema; ConfigError naming the file and field on any problem."""
    return _parse_and_compile(*read_schema(spec))


@functools.lru_cache(maxsize=16)
def _parse_and_compile(source: str, data: bytes) -> HeadlessSchema:
    """Validated and compiled once per contents: a run reads its schema once per ``-j`` worker,
    and checking it against the JSON Schema each time cost more than a prompt (a schema is immutable)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})", source=source) from None
    return compile_schema(value, source)


def _is_error(raw: dict[str, Any] | None, selector: Any) -> Condition | None:
    """result.isError: a condition on the result line (no value: the path selects ``true``)."""
    if raw is None:
        return None
    return Condition(selector(raw["path"], "result.isError.path"), raw.get("value", True))


def compile_schema(value: Any, source: str) -> HeadlessSchema:
    problems = schemas.errors("adapter-headless", value)
    if problems:
        where, _, message = problems[0].partition(": ")
        raise ConfigError(message, source=source, field=where)

    def selector(text: str, where: str) -> Selector:
        try:
            return compile_selector(text)
        except ValueError as exc:
            raise ConfigError(str(exc), source=source, field=where) from None

    passthrough = None
    if value.get("outputMode") == "passthrough":
        type_map = value.get("passthroughTypeMap")
        if type_map is None:
            raise ConfigError("outputMode 'passthrough' needs passthroughTypeMap", source=source, field="passthroughTypeMap")
        if value.get("outputEvents"):
            raise ConfigError("outputEvents are not read with outputMode 'passthrough'", source=source, field="outputEvents")
        passthrough = Passthrough(type_map.get("typeField", "type"), dict(type_map.get("typeValues") or {}))
    elif "passthroughTypeMap" in value:
        raise ConfigError(
            "passthroughTypeMap is used only with outputMode 'passthrough'", source=source, field="passthroughTypeMap"
        )
    elif not value.get("outputEvents"):
        raise ConfigError("is required (unless outputMode is 'passthrough')", source=source, field="outputEvents")
    mappings = []
    for i, entry in enumerate(value.get("outputEvents") or []):
        base = f"outputEvents.{i}"
        emit_as = entry["emitAs"]
        raw_conditions = entry["match"] if isinstance(entry["match"], list) else [entry["match"]]
        conditions = tuple(
            Condition(
                selector(c["path"], f"{base}.match.path"),
                c.get("value"),
                any_value="value" not in c,
            )
            for c in raw_conditions
        )
        extract = {}
        for key, text in (entry.get("extract") or {}).items():
            if key not in EXTRACT_FIELDS[emit_as]:
                allowed = ", ".join(sorted(EXTRACT_FIELDS[emit_as]))
                raise ConfigError(
                    f"emitAs {emit_as!r} does not use {key!r} (it uses: {allowed})", source=source, field=f"{base}.extract.{key}"
                )
            extract[key] = selector(text, f"{base}.extract.{key}")
            if key in SCALAR_FIELDS and not extract[key].singular:
                raise ConfigError(
                    f"{text!r} can select several values, but {key!r} takes one (select the items with each "
                    "or a wildcard match path, and extract relative to each)",
                    source=source,
                    field=f"{base}.extract.{key}",
                )
        each = selector(entry["each"], f"{base}.each") if "each" in entry else None
        part_conditions: tuple[Any, ...] = ()
        split = split_wildcard(raw_conditions[0]["path"]) if len(raw_conditions) == 1 and each is None else None
        if split is not None and "value" in raw_conditions[0]:
            # A wildcard match path selects items: each matching item is emitted, extract read relative to it.
            items, within = split
            each = selector(items, f"{base}.match.path")
            wanted = raw_conditions[0]["value"]
            part = ItemCondition(wanted) if within == "$" else Condition(selector(within, f"{base}.match.path"), wanted)
            conditions, part_conditions = (), (part,)
        chunks = bool(entry.get("chunks"))
        if chunks and emit_as not in ("message", "thought"):
            raise ConfigError(
                f"chunks applies to emitAs 'message' or 'thought', not {emit_as!r}", source=source, field=f"{base}.chunks"
            )
        mappings.append(Mapping(i, conditions, emit_as, extract, each, part_conditions, chunks))

    result = value["result"]
    resume = value.get("resume")
    template = value.get("historyTemplate")
    if value["sessionMode"] == "stream" and template is not None:
        raise ConfigError("historyTemplate is used only with sessionMode 'iterative'", source=source, field="historyTemplate")
    system, turn = None, DEFAULT_HISTORY
    if isinstance(template, str):
        turn = template
    elif isinstance(template, dict):
        system, turn = template.get("system"), template["turnFormat"]
    if "stopReasons" in result and "stopReasonPath" not in result:
        raise ConfigError("stopReasons is used only with result.stopReasonPath", source=source, field="result.stopReasons")
    if "errorMessagePath" in result and "isError" not in result:
        raise ConfigError("errorMessagePath is used only with result.isError", source=source, field="result.errorMessagePath")
    prompt = value["prompt"]
    if "stdinFormat" in prompt and not prompt.get("stdin"):
        raise ConfigError("stdinFormat is used only with prompt.stdin true", source=source, field="prompt.stdinFormat")
    return HeadlessSchema(
        name=value["name"],
        source=source,
        command=tuple(value["command"]),
        session_mode=value["sessionMode"],
        prompt_flag=prompt.get("flag"),
        prompt_stdin=bool(prompt.get("stdin")),
        output_flag=value["output"]["flag"],
        output_value=value["output"]["value"],
        auto_approve=tuple(value.get("autoApprove") or ()),
        cwd_flag=value.get("cwdFlag"),
        resume_flag=resume["flag"] if resume else None,
        session_id_path=selector(resume["sessionIdPath"], "resume.sessionIdPath") if resume else None,
        mappings=tuple(mappings),
        result=Condition(selector(result["matchPath"], "result.matchPath"), result["matchValue"]),
        result_content=selector(result["contentPath"], "result.contentPath") if "contentPath" in result else None,
        stop_reason=selector(result["stopReasonPath"], "result.stopReasonPath") if "stopReasonPath" in result else None,
        stop_reasons=dict(result.get("stopReasons") or {}),
        is_error=_is_error(result.get("isError"), selector),
        error_message=selector(result["errorMessagePath"], "result.errorMessagePath") if "errorMessagePath" in result else None,
        history_system=system,
        history_turn=turn,
        timeout_ms=value.get("timeout"),
        passthrough=passthrough,
        tested_with=(value["testedWith"]["package"], value["testedWith"]["version"]) if "testedWith" in value else None,
        raw=value,
    )
