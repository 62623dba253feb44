"""The result context that assertion and script graders see, in the original waza's names and shapes.

As in the original: ``tool_calls`` is a list of ``{name, arguments, result,
success}`` (``arguments`` with the original's ``path``, ``file_text``,
``command``, ``description``, ``skill``; ``result`` ``{"content"}``),
``transcript`` a list of the original's session events (``{type, content,
message, tool_call_id, tool_name, arguments, success, tool_result}``, only the
keys that apply), ``errors`` the transcript events whose type or content
mentions "error", ``duration_ms`` the result's ``timing.total`` (None without
timing), ``outcome`` the request's outcome (``{}`` otherwise).

waza's own shapes stay available under other names: ``trajectory`` (the
steps), ``tool_steps`` (the tool_call steps) and ``agent_errors`` (the
result's ``errors``); the rest are the request's own fields.
"""

from __future__ import annotations

from typing import Any

from waza.protocol.records import GraderRequest

from ._trajectory import COMMAND_KEYS, PATH_KEYS, SKILL_KEYS, tool_calls

#: Copilot's report_intent pseudo-tool, an event step in waza's trajectory; the original's collector drops it.
INTENT_EVENT = "report_intent"
#: The original's tool-call argument fields, and the input keys (across agents) each is read from.
ARGUMENT_KEYS: dict[str, tuple[str, ...]] = {
    "path": PATH_KEYS,
    "file_text": ("file_text", "content", "new_str"),
    "command": COMMAND_KEYS,
    "description": ("description",),
    "skill": SKILL_KEYS,
}


def _arguments(step: dict[str, Any]) -> dict[str, str]:
    call = tool_calls([step])[0]
    return {name: " ".join(call.input_field(keys)) for name, keys in ARGUMENT_KEYS.items()}


def _result(step: dict[str, Any]) -> dict[str, Any] | None:
    output = step.get("output")
    return None if output is None else {"content": output if isinstance(output, str) else str(output)}


def original_tool_calls(steps: list[Any]) -> list[dict[str, Any]]:
    return [
        {"name": call.name, "arguments": _arguments(step), "result": _result(step), "success": step.get("status") == "completed"}
        for step in steps
        if isinstance(step, dict) and step.get("type") == "tool_call"
        for call in tool_calls([step])
    ]


def original_transcript(steps: list[Any]) -> list[dict[str, Any]]:
    """The trajectory as the original's session events, as its collector keeps them and its transcript
    marshals them (``{type, content, message, tool_call_id, tool_name, arguments, success, tool_result}``,
    only the keys that apply), so ``len(transcript)`` counts what the original counts on the same session:

    * a user message is a ``user.message``;
    * an agent's message and its thought sharing a message id are one ``assistant.message`` (the original
      carries the reasoning inside it; a thought alone is one with empty content), preceded by one
      ``assistant.message_delta`` per delta it arrived as (``extra.deltas``, from Copilot recordings);
      a thought with no message id is an ``assistant.reasoning``;
    * a tool call is a ``tool.execution_start`` and, once finished, a ``tool.execution_complete``;
    * an event step is its own event (``content`` and ``message`` from its data), except ``report_intent``,
      which the original's collector drops.
    """
    out: list[dict[str, Any]] = []
    messages: dict[tuple[Any, Any], dict[str, Any]] = {}  # an agent message's event, by (turn, message id)
    for step in steps:
        if not isinstance(step, dict):
            continue
        kind = step.get("type")
        extra: dict[str, Any] = step["extra"] if isinstance(step.get("extra"), dict) else {}
        if kind == "message" and step.get("role") == "user":
            out.append({"type": "user.message", "content": step.get("content", "")})
        elif kind in ("message", "thought"):
            mid = step.get("messageId")
            if mid is None and kind == "thought":
                out.append({"type": "assistant.reasoning", "content": step.get("content", "")})
                continue
            key = (step.get("turn"), mid)
            event = messages.get(key) if mid is not None else None
            if event is None:
                event = {"type": "assistant.message", "content": ""}
                if mid is not None:
                    messages[key] = event
                deltas = extra.get("deltas")
                out.extend({"type": "assistant.message_delta"} for _ in range(deltas if isinstance(deltas, int) else 0))
                if extra.get("final") is not False:
                    out.append(event)
            if kind == "message":
                event["content"] = step.get("content", "")
        elif kind == "tool_call":
            call_id, name = step.get("toolCallId") or step.get("stepId"), tool_calls([step])[0].name
            out.append(
                {"type": "tool.execution_start", "tool_call_id": call_id, "tool_name": name, "arguments": step.get("input")}
            )
            if step.get("status") in ("completed", "failed"):
                done: dict[str, Any] = {
                    "type": "tool.execution_complete",
                    "tool_call_id": call_id,
                    "success": step["status"] == "completed",
                }
                if _result(step) is not None:
                    done["tool_result"] = _result(step)
                out.append(done)
        elif kind == "event" and step.get("name") != INTENT_EVENT:
            data: dict[str, Any] = extra["data"] if isinstance(extra.get("data"), dict) else {}
            out.append(
                {"type": str(step.get("name", "event"))}
                | {k: data[k] for k in ("content", "message") if isinstance(data.get(k), str)}
            )
    return out


def context(request: GraderRequest) -> dict[str, Any]:
    steps = list(request.trajectory)
    transcript = original_transcript(steps)
    return {
        "id": request.id,
        "input": request.input,
        "output": request.output,
        "hint": request.hint if request.hint is not None else request.expected,
        "reference": request.reference,
        "outcome": request.unknown.get("outcome") or {},
        "transcript": transcript,
        "trajectory": steps,
        "tool_calls": original_tool_calls(steps),
        "tool_steps": [s for s in steps if isinstance(s, dict) and s.get("type") == "tool_call"],
        "errors": [t for t in transcript if "error" in t["type"] or "error" in str(t.get("content", ""))],
        "agent_errors": list(request.errors),
        "tool_errors": request.tool_errors,
        "duration_ms": (request.timing or {}).get("total"),
        "usage": request.usage or {},
        "metadata": request.metadata,
    }
