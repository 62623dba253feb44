"""Headless adapter schemas: found by name or path, validated, compiled once.

A schema is checked in two passes so that every mistake is reported as
``file: field 'outputEvents.2.extract.entries': message``: the typed decode into
headless_format's classes (the format ``schemas/adapter-headless.json`` publishes)
catches shape errors, then this module compiles every JSONPath and rejects
extract fields that the chosen ``emitAs`` would ignore (an option that does
nothing is an error, not a no-op).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import msgspec
import orjson
from msgspec import UNSET

from waza.protocol.codec import RecordError
from waza.protocol.errors import ConfigError

from . import headless_format as fmt
from .headless_mcp import McpHandOver
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


class Condition(msgspec.Struct, frozen=True):
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


class Mapping(msgspec.Struct, frozen=True):
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


class ItemCondition(msgspec.Struct, frozen=True):
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


class Passthrough(msgspec.Struct, frozen=True):
    """acp-harness's passthrough mode: a line's own type field names its step type."""

    type_field: str = "type"
    type_values: dict[str, str] = msgspec.field(default_factory=dict)

    def step_type(self, line: Any) -> str | None:
        kind = line.get(self.type_field) if isinstance(line, dict) else None
        if not isinstance(kind, str):
            return None
        mapped = self.type_values.get(kind, kind)
        return mapped if mapped in PASSTHROUGH_TYPES else None


PASSTHROUGH_TYPES = ("thought", "tool_call", "message", "plan")


class HeadlessSchema(msgspec.Struct, frozen=True):
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
    stop_reasons: dict[str, str] = msgspec.field(default_factory=dict)
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
    #: How the CLI takes MCP servers (``mcpConfig``), None when it cannot.
    mcp_config: McpHandOver | None = None
    #: What replaces ``auto_approve`` when waza confines the CLI (``confinedAutoApprove``); None: the same.
    confined_auto_approve: tuple[str, ...] | None = None
    #: The variable naming the CLI's config and state folder (``stateDirEnv``), None when it has none.
    state_dir_env: str | None = None


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
    """Decoded and compiled once per contents: a run reads its schema once per ``-j`` worker (a schema is immutable)."""
    try:
        value = fmt.AdapterSchema.from_json(data)
    except RecordError as exc:
        # msgspec's path (``outputEvents[0].match``) in the dotted form of the checks below; a dict's
        # value (``stopReasons[...]``) is named by its dict, the message quotes the value.
        where = _INDEX.sub(r".\1", exc.path).removesuffix("[...]")
        message = exc.message
        if message.endswith(" is not one of the allowed values") and (allowed := fmt.allowed_values(where)):
            message += f" ({', '.join(map(str, allowed))})"
        raise ConfigError(message, source=source, field=where or "(top level)") from None
    except msgspec.DecodeError as exc:
        raise ConfigError(_malformed(data, exc), source=source) from None
    return compile_schema(value, source)


_INDEX = re.compile(r"\[(\d+)\]")

#: compile_schema's JSONPath compiler: (path, field it came from) -> Selector, or ConfigError naming the field.
Compile = Callable[[str, str], Selector]


def _malformed(data: bytes, exc: msgspec.DecodeError) -> str:
    """Malformed JSON, by line and column (orjson's report; msgspec counts bytes)."""
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError as err:
        return f"invalid JSON ({err.msg} at line {err.lineno}, column {err.colno})"
    return f"invalid JSON ({exc})"


def _is_error(raw: fmt.IsError | msgspec.UnsetType, selector: Compile) -> Condition | None:
    """result.isError: a condition on the result line (no value: the path selects ``true``)."""
    if raw is UNSET:
        return None
    return Condition(selector(raw.path, "result.isError.path"), True if raw.value is UNSET else raw.value)


def _or_none(value: str | msgspec.UnsetType) -> str | None:
    return None if value is UNSET else value


def _optional(value: str | msgspec.UnsetType, where: str, selector: Compile) -> Selector | None:
    return None if value is UNSET else selector(value, where)


def compile_schema(value: fmt.AdapterSchema, source: str) -> HeadlessSchema:
    """The HeadlessSchema of a decoded schema file; ConfigError naming ``source`` and the field on what
    the decode cannot check (JSONPaths, and options the other options make meaningless)."""

    def selector(text: str, where: str) -> Selector:
        try:
            return compile_selector(text)
        except ValueError as exc:
            raise ConfigError(str(exc), source=source, field=where) from None

    passthrough = None
    if value.output_mode == "passthrough":
        type_map = value.passthrough_type_map
        if type_map is UNSET:
            raise ConfigError("outputMode 'passthrough' needs passthroughTypeMap", source=source, field="passthroughTypeMap")
        if value.output_events:
            raise ConfigError("outputEvents are not read with outputMode 'passthrough'", source=source, field="outputEvents")
        passthrough = Passthrough(type_map.type_field, dict(type_map.type_values))
    elif value.passthrough_type_map is not UNSET:
        raise ConfigError(
            "passthroughTypeMap is used only with outputMode 'passthrough'", source=source, field="passthroughTypeMap"
        )
    elif not value.output_events:
        raise ConfigError("is required (unless outputMode is 'passthrough')", source=source, field="outputEvents")
    mappings = [_mapping(i, entry, source, selector) for i, entry in enumerate(value.output_events)]

    result, resume, template = value.result, value.resume, value.history_template
    if value.session_mode == "stream" and template is not UNSET:
        raise ConfigError("historyTemplate is used only with sessionMode 'iterative'", source=source, field="historyTemplate")
    system, turn = None, DEFAULT_HISTORY
    if isinstance(template, str):
        turn = template
    elif isinstance(template, fmt.HistoryTemplate):
        system, turn = (None if template.system is UNSET else template.system), template.turn_format
    if result.stop_reasons is not UNSET and result.stop_reason_path is UNSET:
        raise ConfigError("stopReasons is used only with result.stopReasonPath", source=source, field="result.stopReasons")
    if result.error_message_path is not UNSET and result.is_error is UNSET:
        raise ConfigError("errorMessagePath is used only with result.isError", source=source, field="result.errorMessagePath")
    prompt = value.prompt
    if prompt.stdin_format is not UNSET and not prompt.stdin:
        raise ConfigError("stdinFormat is used only with prompt.stdin true", source=source, field="prompt.stdinFormat")
    return HeadlessSchema(
        name=value.name,
        source=source,
        command=tuple(value.command),
        session_mode=value.session_mode,
        prompt_flag=None if prompt.flag is UNSET else prompt.flag,
        prompt_stdin=prompt.stdin,
        output_flag=value.output.flag,
        output_value=value.output.value,
        auto_approve=tuple(value.auto_approve),
        cwd_flag=None if value.cwd_flag is UNSET else value.cwd_flag,
        resume_flag=None if resume is UNSET else resume.flag,
        session_id_path=None if resume is UNSET else selector(resume.session_id_path, "resume.sessionIdPath"),
        mappings=tuple(mappings),
        result=Condition(selector(result.match_path, "result.matchPath"), result.match_value),
        result_content=_optional(result.content_path, "result.contentPath", selector),
        stop_reason=_optional(result.stop_reason_path, "result.stopReasonPath", selector),
        stop_reasons=dict(result.stop_reasons or {}),
        is_error=_is_error(result.is_error, selector),
        error_message=_optional(result.error_message_path, "result.errorMessagePath", selector),
        history_system=system,
        history_turn=turn,
        timeout_ms=None if value.timeout is UNSET else value.timeout,
        passthrough=passthrough,
        tested_with=None if value.tested_with is UNSET else (value.tested_with.package, value.tested_with.version),
        mcp_config=None
        if (mcp := value.mcp_config) is UNSET
        else McpHandOver(mcp.style, _or_none(mcp.flag), _or_none(mcp.env), dict(mcp.server_fields)),
        confined_auto_approve=None if value.confined_auto_approve is UNSET else tuple(value.confined_auto_approve),
        state_dir_env=None if value.state_dir_env is UNSET else value.state_dir_env,
    )


def _mapping(i: int, entry: fmt.OutputEvent, source: str, selector: Compile) -> Mapping:
    """One ``outputEvents`` entry, compiled; ConfigError naming ``outputEvents.I...`` on a mistake."""
    base = f"outputEvents.{i}"
    emit_as = entry.emit_as
    raw_conditions = entry.match if isinstance(entry.match, list) else [entry.match]
    conditions = tuple(
        Condition(selector(c.path, f"{base}.match.path"), None if c.value is UNSET else c.value, any_value=c.value is UNSET)
        for c in raw_conditions
    )
    extract = {}
    for key, text in (entry.extract.paths() if entry.extract is not UNSET else {}).items():
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
    each = _optional(entry.each, f"{base}.each", selector)
    part_conditions: tuple[Any, ...] = ()
    split = split_wildcard(raw_conditions[0].path) if len(raw_conditions) == 1 and each is None else None
    if split is not None and raw_conditions[0].value is not UNSET:
        # A wildcard match path selects items: each matching item is emitted, extract read relative to it.
        items, within = split
        each = selector(items, f"{base}.match.path")
        wanted = raw_conditions[0].value
        part = ItemCondition(wanted) if within == "$" else Condition(selector(within, f"{base}.match.path"), wanted)
        conditions, part_conditions = (), (part,)
    if entry.chunks and emit_as not in ("message", "thought"):
        raise ConfigError(
            f"chunks applies to emitAs 'message' or 'thought', not {emit_as!r}", source=source, field=f"{base}.chunks"
        )
    return Mapping(i, conditions, emit_as, extract, each, part_conditions, entry.chunks)
