"""ACP ``--raw-log`` lines -> trajectory events, for the replay adapter.

A raw log (see ``acp_rawlog``) holds every JSON-RPC message of a run with its
direction and prompt id. Replaying one prompt's lines rebuilds what the live
adapter built, through the same update mapping:

| raw log line | trajectory |
|---|---|
| out ``session/prompt`` | a user turn (its text blocks joined) |
| in ``session/update`` | ``acp_updates.update_events`` (messages, thoughts, tool calls, plans, usage, raw kinds) |
| in ``session/request_permission`` + our answer | a permission step |
| in result with ``stopReason`` | ``exit.stopReason``; its ``usage`` added up |
| anything else (initialize, fs/*, terminal/*, lines that were not JSON) | not replayed |
"""

from __future__ import annotations

from typing import Any

from waza.protocol.trajectory import Event, MessageChunk, PermissionStep

from .acp_updates import prompt_usage, update_events


def is_raw_log_line(value: Any) -> bool:
    return isinstance(value, dict) and value.get("dir") in ("in", "out") and ("message" in value or "line" in value)


class RawLogMapper:
    """Stateful across one prompt's lines: permission requests wait for our answer."""

    def __init__(self) -> None:
        self.stop_reason: str | None = None
        self._asked: dict[Any, dict[str, Any]] = {}

    def events(self, value: dict[str, Any]) -> list[Event]:
        message = value.get("message")
        if not isinstance(message, dict):
            return []
        method = message.get("method")
        params = found if isinstance(found := message.get("params"), dict) else {}
        incoming = value["dir"] == "in"
        if not incoming and method == "session/prompt":
            blocks = found if isinstance(found := params.get("prompt"), list) else []
            text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
            return [MessageChunk(text, role="user")]
        if incoming and method == "session/update":
            return update_events(params.get("update"))
        if incoming and method == "session/request_permission":
            self._asked[message.get("id")] = params
            return []
        if not incoming and "result" in message and message.get("id") in self._asked:
            request = self._asked.pop(message["id"])
            tool = found if isinstance(found := request.get("toolCall"), dict) else {}
            tool_id = tool.get("toolCallId") if isinstance(tool.get("toolCallId"), str) else None
            return [PermissionStep(request, _decision(request, message["result"]), tool_id)]
        result = message.get("result")
        if incoming and isinstance(result, dict) and isinstance(result.get("stopReason"), str):
            self.stop_reason = result["stopReason"]
            usage = prompt_usage(result.get("usage"))
            return [usage] if usage is not None else []
        return []


def _decision(request: dict[str, Any], result: Any) -> dict[str, Any]:
    """What our answer said, in the live adapter's terms (which rule chose it is not on the wire)."""
    outcome = result.get("outcome") if isinstance(result, dict) else None
    if not isinstance(outcome, dict):
        return {}
    decision: dict[str, Any] = {"outcome": outcome.get("outcome")}
    option_id = outcome.get("optionId")
    if option_id is not None:
        decision["optionId"] = option_id
        options = found if isinstance(found := request.get("options"), list) else []
        kinds = [o.get("kind") for o in options if isinstance(o, dict) and o.get("optionId") == option_id]
        if kinds:
            decision["kind"] = kinds[0]
    return decision
