"""A mock MCP server answering from an eval suite's ``mcp_mocks`` entry, over stdio.

Run as ``python mcp_server.py CONFIG.json LOG.jsonl``. CONFIG is one mock,
already resolved by waza (``{"name", "tools": {NAME: {"description",
"input_schema", "responses": [...]}}}``, fixtures folders read in). Every tool is
listed with its description and input schema; a call is answered by the first
response whose matchers all hold (``match``: the arguments equal it exactly;
``match_regex``: each named argument, a string or else its JSON text, contains a
match of its regex; ``match_schema``: the arguments satisfy that JSON Schema),
with its ``return`` (text content: a string as it is, anything else as JSON;
an object is also the structured content) or its ``error`` (a tool error). An
unknown tool or a call no response matches is a tool error naming what to add.
Each call is appended to LOG as one JSON line for waza to read back.

The server is built on the official ``mcp`` SDK and imports nothing of waza,
so it runs wherever the agent starts it, inside a sandbox too.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import Any

import anyio
import jsonschema
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

__all__ = ["answer", "main"]


def _matches(response: dict[str, Any], arguments: dict[str, Any]) -> bool:
    if "match" in response and response["match"] != arguments:
        return False
    for field, pattern in (response.get("match_regex") or {}).items():
        if field not in arguments:
            return False
        value = arguments[field]
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        if re.search(pattern, text) is None:
            return False
    if "match_schema" in response:
        try:
            jsonschema.validate(arguments, response["match_schema"])
        except jsonschema.ValidationError:
            return False
    return True


def answer(mock: dict[str, Any], tool: str, arguments: dict[str, Any]) -> tuple[int | None, types.CallToolResult]:
    """The index of the response that answers a call (None: no fixture) and the MCP result."""
    name = mock["name"]
    spec = mock["tools"].get(tool)
    if spec is None:
        known = ", ".join(sorted(mock["tools"])) or "none"
        why = f"mcp mock {name!r} has no tool {tool!r} (it has: {known}); add mcp_mocks[{name}].tools.{tool} or a fixture {tool}.json"
        return None, _error(why)
    for index, response in enumerate(spec["responses"]):
        if _matches(response, arguments):
            if "error" in response:
                return index, _error(str(response["error"]))
            value = response["return"]
            text = value if isinstance(value, str) else json.dumps(value)
            structured = value if isinstance(value, dict) else None
            return index, types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured)
    why = (
        f"mcp mock {name!r}: no response of tool {tool!r} matches the arguments {json.dumps(arguments, sort_keys=True)}; "
        f"add a fixture for them (a response with match, match_regex or match_schema under mcp_mocks[{name}].tools.{tool})"
    )
    return None, _error(why)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _log(path: str, entry: dict[str, Any]) -> None:
    """One JSON line per call, appended in one write (O_APPEND), so concurrent writers never interleave."""
    line = (json.dumps(entry, sort_keys=True) + "\n").encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:  # the call is still answered; waza will not see it
        sys.stderr.write(f"waza mcp mock: cannot record this call in {path}: {exc}\n")
        return
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def server(mock: dict[str, Any], log: str) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool,
                    description=spec.get("description"),
                    input_schema=spec.get("input_schema") or {"type": "object"},
                )
                for tool, spec in mock["tools"].items()
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        index, result = answer(mock, params.name, arguments)
        _log(
            log,
            {
                "kind": "mcp",
                "time": time.time(),
                "mock": mock["name"],
                "tool": params.name,
                "arguments": arguments,
                "response": index,
                "error": bool(result.is_error),
                "output": result.content[0].text if isinstance(result.content[0], types.TextContent) else "",
            },
        )
        return result

    return Server(mock["name"], version="1", on_list_tools=list_tools, on_call_tool=call_tool)


async def _serve(mock: dict[str, Any], log: str) -> None:
    app = server(mock, log)
    async with stdio_server() as (read, write):
        await app.run(read, write, app.create_initialization_options())


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: mcp_server.py CONFIG.json LOG.jsonl", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        mock = json.load(f)
    anyio.run(_serve, mock, argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
