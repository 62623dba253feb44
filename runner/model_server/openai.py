"""OpenAI's Chat Completions (``POST /v1/chat/completions``) and Responses (``POST /v1/responses``) APIs.

OpenCode and most OpenAI-compatible clients speak Chat Completions; Codex CLI
speaks Responses. Streamed replies follow the documented chunk and event
sequences (chat: role, content and tool-call deltas, the finish reason, usage,
``[DONE]``; responses: response.created, each output item added, its deltas
and done, response.completed with the usage).

The Responses API can offer tools inside a ``namespace`` (Codex lists each MCP
server's tools under ``mcp__SERVER``). They are listed here by the flat name
``NAMESPACE__TOOL`` (as Claude Code names MCP tools), so a reply script or the
local model calls ``mcp__tracker__list_issues`` for either agent; the call goes
back as that namespace's tool.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import orjson

from .replies import Reply, Request, new_id

__all__ = ["read_chat", "read_responses", "render_chat", "render_chat_stream", "render_responses", "render_responses_stream"]

FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") in ("text", "input_text", "output_text")
        )
    return ""


def read_chat(body: dict[str, Any]) -> Request:
    messages = []
    for message in body.get("messages") or []:
        role = "system" if message.get("role") == "developer" else message.get("role")
        entry: dict[str, Any] = {"role": role, "content": _text(message.get("content"))}
        if message.get("tool_calls"):
            entry["tool_calls"] = message["tool_calls"]
        if message.get("tool_call_id"):
            entry["tool_call_id"] = message["tool_call_id"]
        messages.append(entry)
    tools = [
        {"name": f.get("name"), "description": f.get("description", ""), "parameters": f.get("parameters") or {}}
        for t in body.get("tools") or []
        if isinstance(t, dict) and isinstance(f := t.get("function"), dict)
    ]
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    return Request("openai-chat", str(body.get("model", "")), bool(body.get("stream")), messages, tools, limit)


def read_responses(body: dict[str, Any]) -> Request:
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": str(body["instructions"])})
    items = body.get("input")
    for item in [{"role": "user", "content": items}] if isinstance(items, str) else items or []:
        kind = item.get("type", "message")
        if kind == "message":
            role = "system" if item.get("role") == "developer" else item.get("role")
            messages.append({"role": role, "content": _text(item.get("content"))})
        elif kind == "function_call":
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": _flat(item), "arguments": item.get("arguments", "")},
            }
            messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": item.get("call_id"),
                    "content": output if isinstance(output, str) else _text(output),
                }
            )
    tools: list[dict[str, Any]] = []
    namespaced: dict[str, tuple[str, str]] = {}
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "function":
            tools.append(_function(tool, str(tool.get("name"))))
        elif tool.get("type") == "namespace":  # listed flat, as NAMESPACE__TOOL (Claude Code's MCP tool names)
            space = str(tool.get("name"))
            for inner in tool.get("tools") or []:
                if isinstance(inner, dict) and inner.get("type") == "function":
                    flat = f"{space}__{inner.get('name')}"
                    namespaced[flat] = (space, str(inner.get("name")))
                    tools.append(_function(inner, flat))
    model, stream = str(body.get("model", "")), bool(body.get("stream"))
    return Request("openai-responses", model, stream, messages, tools, body.get("max_output_tokens"), namespaced)


def _flat(item: dict[str, Any]) -> Any:
    """A called tool's name as listed here: NAMESPACE__TOOL for a namespace's tool."""
    return f"{item['namespace']}__{item.get('name')}" if item.get("namespace") else item.get("name")


def _function(tool: dict[str, Any], name: str) -> dict[str, Any]:
    return {"name": name, "description": tool.get("description", ""), "parameters": tool.get("parameters") or {}}


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }


def _calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": orjson.dumps(c.input).decode()}}
        for c in reply.tool_calls
    ]


def render_chat(request: Request, reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = _calls(reply)
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": [{"index": 0, "message": message, "finish_reason": FINISH[reply.stop]}],
        "usage": _usage(reply),
    }


def render_chat_stream(request: Request, reply: Reply) -> Iterator[bytes]:
    base = {"id": new_id("chatcmpl-"), "object": "chat.completion.chunk", "created": int(time.time()), "model": request.model}

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        body = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
        return b"data: " + orjson.dumps(body) + b"\n\n"

    yield chunk({"role": "assistant", "content": ""})
    if reply.text:
        yield chunk({"content": reply.text})
    for index, call in enumerate(_calls(reply)):
        yield chunk({"tool_calls": [{"index": index, **call}]})
    yield chunk({}, FINISH[reply.stop])
    yield b"data: " + orjson.dumps({**base, "choices": [], "usage": _usage(reply)}) + b"\n\n"
    yield b"data: [DONE]\n\n"


def _items(request: Request, reply: Reply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.text:
        content = [{"type": "output_text", "text": reply.text, "annotations": []}]
        items.append({"type": "message", "id": new_id("msg_"), "status": "completed", "role": "assistant", "content": content})
    for call in reply.tool_calls:
        item = {"type": "function_call", "id": new_id("fc_"), "call_id": call.id, "name": call.name}
        if call.name in request.namespaced:  # a namespace's tool: called by its own name within the namespace
            item["namespace"], item["name"] = request.namespaced[call.name]
        items.append({**item, "arguments": orjson.dumps(call.input).decode(), "status": "completed"})
    return items


def render_responses(request: Request, reply: Reply) -> dict[str, Any]:
    incomplete = reply.stop == "max_tokens"
    return {
        "id": new_id("resp_"),
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "error": None,
        "model": request.model,
        "output": _items(request, reply),
        "usage": {
            "input_tokens": reply.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": reply.input_tokens + reply.output_tokens,
        },
    }


def render_responses_stream(request: Request, reply: Reply) -> Iterator[bytes]:
    response = render_responses(request, reply)
    sequence = 0

    def event(name: str, **data: Any) -> bytes:
        nonlocal sequence
        sequence += 1
        return (
            b"event: " + name.encode() + b"\ndata: " + orjson.dumps({"type": name, "sequence_number": sequence, **data}) + b"\n\n"
        )

    opening = {**response, "status": "in_progress", "output": [], "usage": None}
    yield event("response.created", response=opening)
    yield event("response.in_progress", response=opening)
    for index, item in enumerate(response["output"]):
        if item["type"] == "message":
            yield event("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "content": []})
            part = {"type": "output_text", "text": "", "annotations": []}
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            yield event("response.content_part.added", **where, part=part)
            yield event("response.output_text.delta", **where, delta=reply.text)
            yield event("response.output_text.done", **where, text=reply.text)
            yield event("response.content_part.done", **where, part=item["content"][0])
        else:
            yield event("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "arguments": ""})
            where = {"item_id": item["id"], "output_index": index}
            yield event("response.function_call_arguments.delta", **where, delta=item["arguments"])
            yield event("response.function_call_arguments.done", **where, arguments=item["arguments"])
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.incomplete" if response["status"] == "incomplete" else "response.completed", response=response)
