"""Google's Gemini API (``POST /v1beta/models/MODEL:generateContent``, ``:streamGenerateContent``, ``:countTokens``).

Gemini CLI speaks it (pointed here with ``GOOGLE_GEMINI_BASE_URL``). A streamed
reply (``?alt=sse``) is a series of ``data:`` lines each holding a
GenerateContentResponse; the last carries the finish reason and usage.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from .replies import Reply, Request

__all__ = ["read_request", "render", "render_stream"]

FINISH = {"end_turn": "STOP", "tool_use": "STOP", "max_tokens": "MAX_TOKENS"}


def _parts_text(parts: Any) -> str:
    return "".join(str(p.get("text", "")) for p in parts or [] if isinstance(p, dict) and "text" in p and not p.get("thought"))


def read_request(model: str, body: dict[str, Any], stream: bool) -> Request:
    messages: list[dict[str, Any]] = []
    system = body.get("systemInstruction") or body.get("system_instruction")
    if isinstance(system, dict):
        messages.append({"role": "system", "content": _parts_text(system.get("parts"))})
    for content in body.get("contents") or []:
        parts = content.get("parts") or []
        role = "assistant" if content.get("role") == "model" else "user"
        calls = [p["functionCall"] for p in parts if isinstance(p, dict) and isinstance(p.get("functionCall"), dict)]
        results = [p["functionResponse"] for p in parts if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)]
        for result in results:
            output = result.get("response")
            text = output.get("output", output) if isinstance(output, dict) else output
            messages.append({"role": "tool", "tool_call_id": result.get("id") or result.get("name"), "content": str(text)})
        text = _parts_text(parts)
        if text or calls:
            entry: dict[str, Any] = {"role": role, "content": text}
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": c.get("id") or c.get("name"),
                        "type": "function",
                        "function": {"name": c.get("name"), "arguments": orjson.dumps(c.get("args") or {}).decode()},
                    }
                    for c in calls
                ]
            messages.append(entry)
    tools = [
        {
            "name": d.get("name"),
            "description": d.get("description", ""),
            "parameters": d.get("parametersJsonSchema") or d.get("parameters") or {},
        }
        for t in body.get("tools") or []
        if isinstance(t, dict)
        for d in t.get("functionDeclarations") or []
        if isinstance(d, dict)
    ]
    config = body.get("generationConfig") or {}
    return Request("gemini", model, stream, messages, tools, config.get("maxOutputTokens"))


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "promptTokenCount": reply.input_tokens,
        "candidatesTokenCount": reply.output_tokens,
        "totalTokenCount": reply.input_tokens + reply.output_tokens,
    }


def render(request: Request, reply: Reply) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": reply.text}] if reply.text else []
    parts += [{"functionCall": {"id": c.id, "name": c.name, "args": c.input}} for c in reply.tool_calls]
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": FINISH[reply.stop], "index": 0}
    return {"candidates": [candidate], "usageMetadata": _usage(reply), "modelVersion": request.model}


def render_stream(request: Request, reply: Reply) -> Iterator[bytes]:
    yield b"data: " + orjson.dumps(render(request, reply)) + b"\r\n\r\n"
