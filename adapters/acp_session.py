"""The client side of one ACP session: what waza does when the agent calls it.

One ``ClientSession`` per prompt holds the workspace, the trajectory recorder,
the permission policy and the prompt's terminals. Every call the agent makes is
recorded in the trajectory: a permission as a ``permission`` step (request and
decision), the others as ``event`` steps named by method with what was asked
and what came of it, refusals (a path outside the workspace) included.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio

from waza.protocol.trajectory import Event, PermissionStep, RawUpdate, TrajectoryBuilder

from . import acp_fs
from .acp_permissions import PermissionPolicy
from .acp_rpc import INVALID_PARAMS, Pending, RpcError, Spawn
from .acp_terminals import Prepare, Terminals

#: The client methods waza serves; any other request is answered "method not found" (-32601)
#: whatever its params, recorded, and the prompt goes on: the agent decides what to do without it.
CLIENT_METHODS = frozenset(
    {
        "session/request_permission",
        "fs/read_text_file",
        "fs/write_text_file",
        "terminal/create",
        "terminal/output",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/release",
    }
)

# What of a call's params and result goes into the trajectory (file contents and full output stay out).
_PARAMS_KEPT = ("path", "line", "limit", "command", "args", "cwd", "outputByteLimit", "terminalId")


def _summary(params: dict[str, Any]) -> dict[str, Any]:
    kept = {k: params[k] for k in _PARAMS_KEPT if k in params}
    if isinstance(params.get("content"), str):
        kept["bytes"] = len(params["content"].encode())
    return kept


class ClientSession:
    """Created before ``session/new`` is sent, because the agent may speak before its answer is read."""

    def __init__(
        self,
        session_id: str | None,
        workspace: Path,
        recorder: TrajectoryBuilder,
        policy: PermissionPolicy,
        spawn: Spawn,
        prepare: Prepare | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.session_id = session_id
        #: Set once ``session/new`` was answered (or failed): requests wait for it.
        self.ready = anyio.Event()
        #: The ``session/prompt`` in flight, kept so a timed-out prompt can still collect its answer.
        self.turn: Pending | None = None
        self._early: list[tuple[str | None, list[Event], int]] = []
        self.workspace = workspace
        self.recorder = recorder
        self.policy = policy
        self.terminals = Terminals(workspace, spawn, prepare, env)
        #: Set once ``session/cancel`` was sent: permission requests are then answered ``cancelled``.
        self.cancelling = False
        self._methods: dict[str, Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]] = {
            "fs/read_text_file": lambda p: acp_fs.read_text(self.workspace, p),
            "fs/write_text_file": lambda p: acp_fs.write_text(self.workspace, p),
            "terminal/create": self.terminals.create,
            "terminal/output": self._sync(self.terminals.output),
            "terminal/wait_for_exit": self.terminals.wait_for_exit,
            "terminal/kill": self._sync(self.terminals.kill),
            "terminal/release": self.terminals.release,
        }

    def start(self, session_id: str | None) -> None:
        """``session/new`` answered: updates that raced ahead of the answer are recorded now, in order."""
        self.session_id = session_id
        self.ready.set()
        early, self._early = self._early, []
        for sid, events, at in early:
            if sid == session_id:
                for event in events:
                    self.recorder.emit(event, at_ms=at)

    def deliver(self, session_id: str | None, events: list[Event]) -> None:
        """Record a notification's events if it is about this session (held back until its id is known)."""
        if not self.ready.is_set():
            self._early.append((session_id, events, self.recorder.now_ms()))
        elif session_id == self.session_id:
            for event in events:
                self.recorder.emit(event)

    @staticmethod
    def _sync(fn: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
        async def call(params: dict[str, Any]) -> dict[str, Any]:
            return fn(params)

        return call

    async def handle(self, method: str, params: dict[str, Any]) -> Any:
        """Serve one request from the agent; RpcError for a refusal (recorded all the same)."""
        if method == "session/request_permission":
            return self._permission(params)
        handler = self._methods[method]
        try:
            result = await handler(params)
        except RpcError as exc:
            self.recorder.emit(RawUpdate(method, {**_summary(params), "error": exc.message}))
            raise
        record = {**_summary(params), **{k: v for k, v in result.items() if k != "output"}}
        if method == "fs/read_text_file":
            record = {**_summary(params), "bytes": len(result["content"].encode())}
        if method != "terminal/output":  # polled often; its errors are still recorded above
            self.recorder.emit(RawUpdate(method, record))
        return result

    def record_unknown(self, method: str, params: Any) -> None:
        """A call to a method waza does not serve, kept in the trajectory (its answer is "method not found")."""
        self.recorder.emit(RawUpdate(method, {"params": params, "error": "method not supported by waza"}))

    def _permission(self, params: dict[str, Any]) -> dict[str, Any]:
        response, decision = self.policy.answer(params, cancelling=self.cancelling)
        tool_call = found if isinstance(found := params.get("toolCall"), dict) else {}
        tool_id = tool_call.get("toolCallId")
        self.recorder.emit(
            PermissionStep(
                request={k: v for k, v in params.items() if k != "sessionId"},
                decision=decision,
                tool_call_id=tool_id if isinstance(tool_id, str) else None,
            )
        )
        return response

    async def close(self) -> None:
        await self.terminals.close()


def check_params(params: Any) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "params must be an object")
    return params
