#!/usr/bin/env python3
"""An ACP agent built on the official ACP Python SDK (``agent-client-protocol``), in the style of its examples.

It proves waza interoperates with an ACP implementation nobody here wrote. Per
prompt it thinks, reads ``notes.txt`` from the workspace through the client,
asks permission to write ``summary.md`` and writes it when allowed, counts the
notes' bytes in a client terminal, and answers in two messages (with ids),
reporting token usage. A prompt containing ``slow`` waits until cancelled; one containing
``explode`` is answered with a JSON-RPC internal error that carries ``data``.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    start_edit_tool_call,
    text_block,
    update_agent_message,
    update_agent_thought_text,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    PermissionOption,
    ToolCallUpdate,
    Usage,
)


class NotesAgent(Agent):
    _conn: Client

    def __init__(self) -> None:
        self._cwd: dict[str, str] = {}
        self._cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="sdk-notes-agent", title="SDK notes agent", version="0.1.0"),
        )

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any) -> NewSessionResponse:
        session_id = os.urandom(8).hex()
        self._cwd[session_id] = cwd
        self._cancelled[session_id] = asyncio.Event()
        return NewSessionResponse(session_id=session_id)

    async def _say(self, session_id: str, text: str, message_id: str) -> None:
        chunk = update_agent_message(text_block(text))
        chunk.message_id = message_id
        await self._conn.session_update(session_id=session_id, update=chunk)

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        cwd = self._cwd[session_id]
        await self._conn.session_update(session_id=session_id, update=update_agent_thought_text(f"Task: {text}"))
        if "explode" in text:
            raise RequestError.internal_error({"reason": "disk full", "path": "summary.md"})
        if "slow" in text:
            await self._cancelled[session_id].wait()
            return PromptResponse(stop_reason="cancelled")

        notes = await self._conn.read_text_file(session_id=session_id, path=os.path.join(cwd, "notes.txt"))
        summary_path = os.path.join(cwd, "summary.md")
        summary = f"# Summary\n\n{notes.content.splitlines()[0]}\n"
        await self._conn.session_update(
            session_id=session_id, update=start_edit_tool_call("write-1", "Write summary.md", summary_path, summary)
        )
        decision = await self._conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id="write-1", title="Write summary.md", kind="edit"),
            options=[
                PermissionOption(option_id="ok", name="Allow", kind="allow_once"),
                PermissionOption(option_id="nope", name="Reject", kind="reject_once"),
            ],
        )
        allowed = decision.outcome.outcome == "selected" and decision.outcome.option_id == "ok"
        if allowed:
            await self._conn.write_text_file(session_id=session_id, path=summary_path, content=summary)
        await self._conn.session_update(
            session_id=session_id,
            update=update_tool_call("write-1", status="completed" if allowed else "failed", raw_output={"written": allowed}),
        )

        terminal = await self._conn.create_terminal(session_id=session_id, command="wc", args=["-c", "notes.txt"], cwd=cwd)
        status = await self._conn.wait_for_terminal_exit(session_id=session_id, terminal_id=terminal.terminal_id)
        output = await self._conn.terminal_output(session_id=session_id, terminal_id=terminal.terminal_id)
        await self._conn.release_terminal(session_id=session_id, terminal_id=terminal.terminal_id)

        await self._say(session_id, f"wc exited {status.exit_code}: {output.output.split()[0]} bytes.", "m1")
        verdict = "I wrote summary.md" if allowed else "I was not allowed to write summary.md"
        await self._say(session_id, verdict, "m2")
        await self._say(session_id, f"; the notes begin: {notes.content.splitlines()[0]}", "m2")
        usage = Usage(input_tokens=len(text.split()), output_tokens=12, total_tokens=len(text.split()) + 12)
        return PromptResponse(stop_reason="end_turn", usage=usage)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self._cancelled[session_id].set()


async def main() -> None:
    await run_agent(NotesAgent())


if __name__ == "__main__":
    asyncio.run(main())
