"""Anthropic's Messages API (``POST /v1/messages``, ``/v1/messages/count_tokens``): requests in, replies out.

Claude Code and the Anthropic SDKs speak it. A streamed reply is the documented
event sequence (message_start, a content block's start, deltas and stop for
each text or tool_use block, message_delta with the stop reason and usage,
message_stop).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from .replies import Reply, Request, new_id

__all__ = ["read_request", "render", "render_stream"]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def read_request(body: dict[str, Any]) -> Request:
    messages: list[dict[str, Any]] = []
    system = _text(body.get("system"))
    if system:
        messages.append({"role": "system", "content": system})
    for message in body.get("messages") or []:
        role, content = message.get("role"), message.get("content")
        if isinstance(content, str):
            messages.append({"role": role, "content": content})
            continue
        texts, calls = [], []
        for block in content or []:
            kind = block.get("type")
            if kind == "text":
                texts.append(block.get("text", ""))
            elif kind == "tool_use":
                args = orjson.dumps(block.get("input") or {}).decode()
                calls.append(
                    {"id": block.get("id"), "type": "function", "function": {"name": block.get("name"), "arguments": args}}
                )
            elif kind == "tool_result":
                messages.append(
                    {"role": "tool", "tool_call_id": block.get("tool_use_id"), "content": _text(block.get("content"))}
                )
        if texts or calls:
            entry: dict[str, Any] = {"role": role, "content": "".join(texts)}
            if calls:
                entry["tool_calls"] = calls
            messages.append(entry)
    tools = [
        {"name": t.get("name"), "description": t.get("description", ""), "parameters": t.get("input_schema") or {}}
        for t in body.get("tools") or []
        if isinstance(t, dict) and "name" in t
    ]
    return Request("anthropic", str(body.get("model", "")), bool(body.get("stream")), messages, tools, body.get("max_tokens"))


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.input} for c in reply.tool_calls]
    return blocks


def render(request: Request, reply: Reply) -> dict[str, Any]:
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": request.model,
        "content": _blocks(reply),
        "stop_reason": reply.stop,
        "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
    }


def _event(name: str, data: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps({"type": name, **data}) + b"\n\n"


def render_stream(request: Request, reply: Reply) -> Iterator[bytes]:
    message = render(request, reply)
    start = {**message, "content": [], "stop_reason": None, "usage": {"input_tokens": reply.input_tokens, "output_tokens": 0}}
    yield _event("message_start", {"message": start})
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield _event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
            yield _event("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": block["text"]}})
        else:
            opened = {**block, "input": {}}
            yield _event("content_block_start", {"index": index, "content_block": opened})
            partial = orjson.dumps(block["input"]).decode()
            yield _event("content_block_delta", {"index": index, "delta": {"type": "input_json_delta", "partial_json": partial}})
        yield _event("content_block_stop", {"index": index})
    delta = {"stop_reason": reply.stop, "stop_sequence": None}
    yield _event("message_delta", {"delta": delta, "usage": {"output_tokens": reply.output_tokens}})
    yield _event("message_stop", {})
