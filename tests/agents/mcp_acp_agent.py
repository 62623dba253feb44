#!/usr/bin/env python3
"""An ACP agent (official ACP Python SDK) that is an MCP client (official ``mcp`` SDK) of the servers it is handed.

For each prompt it connects over stdio to every MCP server ``session/new``
gave it, lists their tools and makes the calls the prompt asks for: the prompt
is JSON, ``{"calls": [{"server", "tool", "arguments"}]}``. Each call is reported
as an ACP tool call (input, then output and completed or failed); the answer
lists every tool with its description and each call's text result, one line each.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    run_agent,
    start_tool_call,
    text_block,
    update_agent_message,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import AgentCapabilities, Implementation, McpServerStdio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


class McpClientAgent(Agent):
    _conn: Client

    def __init__(self) -> None:
        self._servers: dict[str, list[McpServerStdio]] = {}

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="mcp-client-agent", title="MCP client agent", version="0.1.0"),
        )

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any) -> NewSessionResponse:
        session_id = os.urandom(8).hex()
        self._servers[session_id] = [s for s in mcp_servers or [] if isinstance(s, McpServerStdio)]
        return NewSessionResponse(session_id=session_id)

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        request = json.loads("".join(getattr(block, "text", "") for block in prompt))
        lines: list[str] = []
        for server in self._servers[session_id]:
            params = StdioServerParameters(
                command=server.command, args=list(server.args), env={e.name: e.value for e in server.env}
            )
            async with stdio_client(params) as (read, write), ClientSession(read, write) as mcp:
                await mcp.initialize()
                for tool in (await mcp.list_tools()).tools:
                    lines.append(f"tool {server.name}.{tool.name}: {tool.description}")
                for n, call in enumerate(c for c in request["calls"] if c["server"] == server.name):
                    call_id = f"{server.name}-{n}"
                    await self._conn.session_update(
                        session_id=session_id,
                        update=start_tool_call(
                            call_id, f"{server.name}.{call['tool']}", kind="fetch", raw_input=call["arguments"]
                        ),
                    )
                    result = await mcp.call_tool(call["tool"], call["arguments"])
                    text = "".join(getattr(c, "text", "") for c in result.content)
                    await self._conn.session_update(
                        session_id=session_id,
                        update=update_tool_call(call_id, status="failed" if result.is_error else "completed", raw_output=text),
                    )
                    lines.append(f"call {server.name}.{call['tool']}: {'ERROR ' if result.is_error else ''}{text}")
        await self._conn.session_update(session_id=session_id, update=update_agent_message(text_block("\n".join(lines))))
        return PromptResponse(stop_reason="end_turn")


async def main() -> None:
    await run_agent(McpClientAgent())


if __name__ == "__main__":
    asyncio.run(main())
