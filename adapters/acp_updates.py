"""ACP ``session/update`` notifications (and prompt-response usage) as trajectory events.

The mapping is total: every update becomes at least one event, and whatever has
no event type of its own (commands, modes, config options, session info, an
update kind newer than this code, a non-text chunk) is kept whole as a
``RawUpdate``, so a trajectory never silently loses what the agent said.
"""

from __future__ import annotations

from typing import Any

from waza.protocol.records import Usage
from waza.protocol.trajectory import (
    Event,
    MessageChunk,
    PlanUpdate,
    RawUpdate,
    ThoughtChunk,
    ToolCallPatch,
    UsageUpdate,
)

TOOL_STATUSES = ("pending", "in_progress", "completed", "failed")

# ACP tool call fields that have a place of their own in a tool_call step.
_TOOL_FIELDS = {"sessionUpdate", "toolCallId", "title", "kind", "status", "rawInput", "rawOutput", "content", "locations"}


def update_events(update: Any) -> list[Event]:
    """The events for one ``session/update`` ``update`` object."""
    if not isinstance(update, dict) or not isinstance(update.get("sessionUpdate"), str):
        return [RawUpdate("malformed_update", update)]
    kind = update["sessionUpdate"]
    if kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
        return [_chunk(kind, update)]
    if kind in ("tool_call", "tool_call_update"):
        return [_tool(kind, update)]
    if kind == "plan" and isinstance(update.get("entries"), list):
        return [PlanUpdate(update["entries"])]
    if kind == "usage_update":
        return [_context_usage(update)]
    return [RawUpdate(kind, update)]


def _chunk(kind: str, update: dict[str, Any]) -> Event:
    content = update.get("content")
    mid = update.get("messageId")
    mid = mid if isinstance(mid, str) else None
    if not (isinstance(content, dict) and content.get("type") == "text" and isinstance(content.get("text"), str)):
        return RawUpdate(kind, update)  # images, audio, resources: kept whole
    text = content["text"]
    if kind == "agent_thought_chunk":
        return ThoughtChunk(text, mid)
    return MessageChunk(text, mid, role="user" if kind == "user_message_chunk" else "agent")


def _tool(kind: str, update: dict[str, Any]) -> Event:
    tool_id = update.get("toolCallId")
    if not isinstance(tool_id, str) or not tool_id:
        return RawUpdate(kind, update)
    status = update.get("status")
    extra = {k: v for k, v in update.items() if k not in _TOOL_FIELDS}
    if status is not None and status not in TOOL_STATUSES:
        extra["status"] = status  # not a status we know: kept, but not trusted
        status = None
    if kind == "tool_call" and status is None:
        status = "pending"
    title = update.get("title")
    content = update.get("content")
    locations = update.get("locations")
    return ToolCallPatch(
        tool_call_id=tool_id,
        title=title if isinstance(title, str) else None,
        kind=update["kind"] if isinstance(update.get("kind"), str) else None,
        status=status,
        input=update.get("rawInput"),
        output=update.get("rawOutput"),
        content=content if isinstance(content, list) else None,
        locations=locations if isinstance(locations, list) else None,
        extra=extra or None,
        announces=kind == "tool_call",
    )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _context_usage(update: dict[str, Any]) -> Event:
    """``usage_update`` carries the session's context window and cumulative cost: figures that replace."""
    cost = found if isinstance(found := update.get("cost"), dict) else {}
    amount = cost.get("amount")
    usage = Usage(
        context_used=_count(update.get("used")),
        context_size=_count(update.get("size")),
        cost=float(amount) if isinstance(amount, (int, float)) and not isinstance(amount, bool) else None,
        currency=cost.get("currency") if isinstance(cost.get("currency"), str) else None,
    )
    return UsageUpdate(usage, mode="set")


def prompt_usage(value: Any) -> UsageUpdate | None:
    """A ``session/prompt`` response's ``usage`` (this turn's tokens): counts that add up over turns."""
    if not isinstance(value, dict):
        return None
    usage = Usage(
        input_tokens=_count(value.get("inputTokens")),
        output_tokens=_count(value.get("outputTokens")),
        total_tokens=_count(value.get("totalTokens")),
        thought_tokens=_count(value.get("thoughtTokens")),
        cached_read_tokens=_count(value.get("cachedReadTokens")),
        cached_write_tokens=_count(value.get("cachedWriteTokens")),
    )
    return None if usage == Usage() else UsageUpdate(usage, mode="add")
