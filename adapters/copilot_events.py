"""GitHub Copilot session events -> trajectory events, for the replay adapter.

A Copilot recording is a sequence of ``{"type", "data", "id", "parentId",
"timestamp"}`` objects. The mapping, event by event:

| Copilot event | trajectory |
|---|---|
| ``user.message`` | a user turn (``data.content``) |
| ``assistant.message_delta`` | agent message chunk (``deltaContent``), keyed by ``messageId`` |
| ``assistant.message`` | ``reasoningText`` -> thought; ``content`` -> agent message (unless deltas of that ``messageId`` already carried it); each ``toolRequests[]`` -> a pending tool call (``toolCallId``, ``name``, ``arguments`` as input) |
| ``tool.execution_start`` | tool call in_progress (``toolName``, ``arguments``) |
| ``tool.execution_complete`` | tool call completed (``success``) or failed; ``result.content`` -> output; ``result.detailedContent`` and ``toolTelemetry`` -> ``extra`` |
| ``report_intent`` tool requests and executions | one ``event`` step named ``report_intent`` (its arguments), not a tool call: the original waza's collector drops these, so tool-call graders see the same calls on the same recording |
| ``skill.invoked`` | an ``event`` step named ``skill.invoked`` with the skill ``name`` and ``path`` (the invocation itself is also the ``skill`` tool call, input ``{"skill": NAME}``) |
| ``session.usage_info`` | usage ``contextUsed``/``contextSize`` (``currentTokens``/``tokenLimit``), and an ``event`` step |
| ``assistant.usage`` | usage tokens and cost (added up), and an ``event`` step |
| anything else | an ``event`` step named after its type, data kept |

An agent message that arrived as deltas is one message step; how many deltas
there were is kept in its ``extra.deltas`` (and ``extra.final: false`` when no
whole ``assistant.message`` followed them), so the original waza's transcript,
which has one event per delta, can be rebuilt from the steps (``graders._context``).
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from waza.protocol.records import TrajectoryStep, Usage
from waza.protocol.trajectory import Event, MessageChunk, RawUpdate, ThoughtChunk, ToolCallPatch, UsageUpdate

#: Copilot's "what I am about to do" pseudo-tool: an event here, not a tool call (as in the original waza).
INTENT_TOOL = "report_intent"


def is_copilot_event(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("type"), str)
        and "." in value["type"]
        and isinstance(value.get("data"), dict)
    )


def epoch_ms(value: Any) -> int | None:
    """An ISO-8601 timestamp (``...Z``) as epoch ms; None when absent or unreadable."""
    if not isinstance(value, str):
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class CopilotMapper:
    """Maps one recording's events in order; remembers which messages arrived as deltas."""

    def __init__(self) -> None:
        self._streamed: Counter[str] = Counter()  # deltas by messageId
        self._whole: set[str] = set()  # messageIds an assistant.message carried
        self._intents: set[str] = set()

    def events(self, value: dict[str, Any]) -> list[Event]:
        kind, data = value["type"], value["data"]
        if kind == "user.message":
            return [MessageChunk(str(data.get("content", "")), role="user")]
        if kind == "assistant.message_delta":
            mid = data.get("messageId")
            if isinstance(mid, str):
                self._streamed[mid] += 1
            return [MessageChunk(str(data.get("deltaContent", "")), mid if isinstance(mid, str) else None)]
        if kind == "assistant.message":
            return self._assistant(data)
        if kind in ("tool.execution_start", "tool.execution_complete") and self._intent(data, data.get("toolName")):
            return []
        if kind == "tool.execution_start":
            return [
                ToolCallPatch(
                    tool_call_id=str(data.get("toolCallId")),
                    name=data.get("toolName"),
                    status="in_progress",
                    input=data.get("arguments"),
                )
            ]
        if kind == "tool.execution_complete":
            result = data.get("result") if isinstance(data.get("result"), dict) else {}
            extra = {
                k: v
                for k, v in (("detailedContent", result.get("detailedContent")), ("toolTelemetry", data.get("toolTelemetry")))
                if v is not None
            }
            return [
                ToolCallPatch(
                    tool_call_id=str(data.get("toolCallId")),
                    status="completed" if data.get("success") else "failed",
                    output=result.get("content", data.get("error")),
                    extra=extra or None,
                )
            ]
        if kind == "session.usage_info":
            usage = Usage(context_used=_int(data.get("currentTokens")), context_size=_int(data.get("tokenLimit")))
            return [UsageUpdate(usage, mode="set"), RawUpdate(kind, data)]
        if kind == "assistant.usage":
            cost = data.get("cost")
            usage = Usage(
                input_tokens=_int(data.get("inputTokens")),
                output_tokens=_int(data.get("outputTokens")),
                cached_read_tokens=_int(data.get("cacheReadTokens")),
                cached_write_tokens=_int(data.get("cacheWriteTokens")),
                cost=float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
            )
            return [UsageUpdate(usage), RawUpdate(kind, data)]
        return [RawUpdate(kind, data)]

    def note_deltas(self, steps: list[TrajectoryStep]) -> None:
        """Write on each agent message step that arrived as deltas how many there were (see the module doc)."""
        for step in steps:
            mid = step.message_id
            if step.type != "message" or step.role == "user" or mid is None or mid not in self._streamed:
                continue
            counted: dict[str, Any] = {"deltas": self._streamed[mid]}
            if mid not in self._whole:
                counted["final"] = False
            step.extra = {**(step.extra or {}), **counted}

    def _intent(self, data: dict[str, Any], name: Any) -> bool:
        """Whether this request/execution belongs to a report_intent call (remembered by its toolCallId)."""
        call_id = data.get("toolCallId")
        if name == INTENT_TOOL:
            if isinstance(call_id, str):
                self._intents.add(call_id)
            return True
        return isinstance(call_id, str) and call_id in self._intents

    def _assistant(self, data: dict[str, Any]) -> list[Event]:
        mid = data.get("messageId") if isinstance(data.get("messageId"), str) else None
        if mid is not None:
            self._whole.add(mid)
        out: list[Event] = []
        if isinstance(data.get("reasoningText"), str) and data["reasoningText"]:
            out.append(ThoughtChunk(data["reasoningText"], mid))
        content = data.get("content")
        if isinstance(content, str) and content and mid not in self._streamed:
            out.append(MessageChunk(content, mid))
        for request in data.get("toolRequests") or []:
            if isinstance(request, dict) and self._intent(request, request.get("name")):
                out.append(RawUpdate(INTENT_TOOL, {"arguments": request.get("arguments")}))
            elif isinstance(request, dict) and request.get("toolCallId"):
                out.append(
                    ToolCallPatch(
                        tool_call_id=str(request["toolCallId"]),
                        name=request.get("name"),
                        status="pending",
                        input=request.get("arguments"),
                    )
                )
        return out
