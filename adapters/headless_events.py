"""One CLI output line in, trajectory events out, as an adapter schema says.

Every mapping whose conditions hold applies (an assistant line carrying text
*and* tool-use blocks yields a message and tool calls), in schema order; with
``each``, a mapping emits once per selected part. Tool calls are paired by the
id the schema extracts (``toolCallId``); only schemas that extract no id (the
acp-harness ones) fall back to pairing a closing event with the oldest open
call of the same name. Each line's message is a message of its own (lines with
the same ``messageId``, or a ``chunks`` mapping's streamed pieces, are joined).
A line no mapping or result touches is kept as an ``event`` step, never dropped,
even when it carries the session id (Claude Code's ``system/init``, Codex's
``thread.started``).
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Any, get_args

import msgspec
import orjson

from waza.protocol.records import StopReason, Usage
from waza.protocol.trajectory import (
    Event,
    FinalOutput,
    MessageChunk,
    PlanUpdate,
    RawUpdate,
    ThoughtChunk,
    ToolCallPatch,
    UsageUpdate,
)

from .headless_schema import HeadlessSchema, Mapping
from .jsonpath import Selector

STATUSES = ("pending", "in_progress", "completed", "failed")
STOP_REASONS = frozenset(get_args(StopReason))
_INT_USAGE = {
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "totalTokens": "total_tokens",
    "thoughtTokens": "thought_tokens",
    "cachedReadTokens": "cached_read_tokens",
    "cachedWriteTokens": "cached_write_tokens",
}


class LineReading(msgspec.Struct):
    """What one line meant: its events, whether it ended the turn (and how), and the session it named."""

    events: list[Event] = msgspec.field(default_factory=list)
    result: bool = False
    session_id: str | None = None
    #: The result line's stop reason, an ACP one (any other value is kept as a ``stop_reason`` event).
    stop_reason: str | None = None
    #: Set when the result line says the turn failed: why.
    error: str | None = None


def _text(values: list[Any]) -> str:
    """Selected values as text: strings joined exactly, anything else as its JSON."""
    return "".join(v if isinstance(v, str) else orjson.dumps(v).decode() for v in values if v is not None)


def _value(selector: Selector, node: Any) -> Any:
    """A singular path's value; a wildcard path's values as a list (None when nothing is selected)."""
    found = selector.select(node)
    if not found:
        return None
    return found[0] if selector.singular else found


class LineMapper:
    """Applies a schema to one prompt's lines; holds the state pairing id-less tool calls."""

    def __init__(self, schema: HeadlessSchema) -> None:
        self.schema = schema
        self._open: dict[str, deque[str]] = defaultdict(deque)
        self._generated = 0

    def read(self, line: Any) -> LineReading:
        reading = LineReading()
        touched = False
        if self.schema.passthrough is not None:
            event = self._passthrough(line)
            if event is not None:
                reading.events.append(event)
                touched = True
        for mapping in self.schema.mappings:
            if not mapping.matches(line):
                continue
            parts = mapping.parts(line)
            if mapping.part_conditions and not parts:
                continue
            touched = True
            for part in parts:
                event = self._event(mapping, part)
                if event is not None:
                    reading.events.append(event)
        if self.schema.session_id_path is not None:
            sid = self.schema.session_id_path.first(line)
            if isinstance(sid, str) and sid:
                reading.session_id = sid  # the line is still kept below when nothing else maps it
        if self.schema.result.holds(line):
            touched = True
            reading.result = True
            self._result(line, reading)
        if not touched:
            reading.events.append(RawUpdate("unmatched", line))
        return reading

    def _result(self, line: Any, reading: LineReading) -> None:
        schema = self.schema
        if schema.result_content is not None:
            found = schema.result_content.select(line)
            if found:
                reading.events.append(FinalOutput(_text(found)))
        if schema.stop_reason is not None:
            raw = schema.stop_reason.first(line)
            if raw is not None:
                reason = schema.stop_reasons.get(str(raw), str(raw))
                if reason in STOP_REASONS:
                    reading.stop_reason = reason
                else:
                    reading.events.append(RawUpdate("stop_reason", raw))
        if schema.is_error is not None and schema.is_error.holds(line):
            found = schema.error_message.select(line) if schema.error_message is not None else []
            reading.error = _text(found) or f"{schema.is_error.path.text} is {schema.is_error.value!r}"

    def _passthrough(self, line: Any) -> Event | None:
        """passthrough mode: the line's type names the step; content, name/title and status are its own fields."""
        assert self.schema.passthrough is not None
        kind = self.schema.passthrough.step_type(line)
        if kind is None:
            return None
        if kind in ("message", "thought"):
            content = line.get("content")
            if not isinstance(content, str) or not content:
                return None
            return MessageChunk(content, new=True) if kind == "message" else ThoughtChunk(content, new=True)
        if kind == "plan":
            entries = line.get("entries")
            return PlanUpdate(entries) if isinstance(entries, list) else None
        name = line.get("name") if isinstance(line.get("name"), str) else line.get("title")
        name = name if isinstance(name, str) else None
        raw_status = line.get("status") if isinstance(line.get("status"), str) else None
        status = raw_status if raw_status in STATUSES else None
        return ToolCallPatch(
            tool_call_id=self._pair(name or "", status),
            name=name,
            status=status,
            input=line.get("input"),
            output=line.get("output"),
            extra={"rawStatus": raw_status} if raw_status is not None and status is None else None,
        )

    def _event(self, mapping: Mapping, part: Any) -> Event | None:
        ex = mapping.extract
        if mapping.emit_as in ("message", "thought"):
            content = _text(ex["content"].select(part)) if "content" in ex else ""
            if not content:
                return None
            mid = ex["messageId"].first(part) if "messageId" in ex else None
            mid = None if mid is None else str(mid)
            new = not mapping.chunks
            return MessageChunk(content, mid, new=new) if mapping.emit_as == "message" else ThoughtChunk(content, mid, new)
        if mapping.emit_as == "tool_call":
            return self._tool(ex, part)
        if mapping.emit_as == "plan":
            entries = _value(ex["entries"], part) if "entries" in ex else None
            if entries is None:
                return None
            return PlanUpdate(entries if isinstance(entries, list) else [entries])
        return self._usage(ex, part)

    def _tool(self, ex: dict[str, Selector], part: Any) -> ToolCallPatch:
        def text(key: str) -> str | None:
            value = ex[key].first(part) if key in ex else None
            return None if value is None else str(value)

        name, title, status_raw = text("name") or text("toolName"), text("title"), text("status")
        status = status_raw if status_raw in STATUSES else None
        extra: dict[str, Any] | None = {"rawStatus": status_raw} if status_raw is not None and status is None else None
        server = text("mcpServer")
        if server is not None:
            extra = {**(extra or {}), "mcpServer": server}
        call_id = text("toolCallId") or self._pair(name or title or "", status)
        return ToolCallPatch(
            tool_call_id=call_id,
            name=name,
            title=title,
            kind=text("kind"),
            status=status,
            input=_value(ex["input"], part) if "input" in ex else None,
            output=_value(ex["output"], part) if "output" in ex else None,
            extra=extra,
        )

    def _pair(self, name: str, status: str | None) -> str:
        """An id for a schema that extracts none: a closing event closes the oldest open call of its name."""
        open_calls = self._open[name]
        if status in ("completed", "failed") and open_calls:
            return open_calls.popleft()
        if status == "in_progress" and open_calls:
            return open_calls[0]
        self._generated += 1
        call_id = f"{self.schema.name}-{self._generated}"
        if status not in ("completed", "failed"):
            open_calls.append(call_id)
        return call_id

    def _usage(self, ex: dict[str, Selector], part: Any) -> UsageUpdate | None:
        fields: dict[str, Any] = {}
        for key, selector in ex.items():
            value = selector.first(part)
            if key == "currency":
                if isinstance(value, str):
                    fields["currency"] = value
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                if key == "cost":
                    fields["cost"] = float(value)
                else:
                    fields[_INT_USAGE[key]] = int(value)
        if not any(k != "currency" for k in fields):
            return None
        return UsageUpdate(Usage(**fields))
