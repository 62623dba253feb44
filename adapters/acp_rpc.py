"""JSON-RPC 2.0 over an agent's stdio, one message per line (the ACP transport).

Our own small connection rather than the SDK's: it runs on anyio in the
adapter's task group, sees every message as bytes (for ``--raw-log`` and exact
arrival timestamps), never validates payloads against a schema (an update kind
this version does not know must reach the trajectory raw, not be rejected), and
turns a malformed line into a connection fault the adapter can recover from.

A request is sent with :meth:`RpcConnection.call`, which returns a
:class:`Pending` the caller waits on; waiting can be cancelled (a prompt's
timeout) and resumed (to collect ``stopReason: cancelled``) without losing the
response.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
import msgspec
import orjson

from waza.protocol.io.process import LineReader, LineTooLong

# Standard JSON-RPC error codes, plus ACP's.
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002

#: Called with ("out" | "in", the message's bytes, whether they are valid JSON).
Tap = Callable[[str, bytes, bool], None]
#: Handles a request from the agent; returns the result or raises RpcError.
RequestHandler = Callable[[str, Any], Awaitable[Any]]
#: Handles a notification from the agent, synchronously and in arrival order.
NotificationHandler = Callable[[str, Any], None]
#: Runs a coroutine function in the owner's task group.
Spawn = Callable[..., object]


class RpcError(Exception):
    """An error response, received from the agent or about to be sent to it."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        self.code = code
        self.message = message
        self.data = data
        super().__init__(f"{message} (JSON-RPC error {code})" + _data_note(data))

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


#: How much of an error's ``data`` is kept in the recorded message (an agent controls its size).
_DATA_LIMIT = 2000


def _data_note(data: Any) -> str:
    """An error's ``data`` as compact JSON, so the agent's own details reach ``errors`` (bounded)."""
    if data is None:
        return ""
    try:
        text = orjson.dumps(data).decode()
    except TypeError:
        text = repr(data)
    if len(text) > _DATA_LIMIT:
        text = text[:_DATA_LIMIT] + "…"
    return f"; data: {text}"


class ConnectionLost(Exception):
    """The agent's stdout ended or broke the protocol; no response will come."""


class Pending(msgspec.Struct):
    """A request in flight; ``wait`` may be cancelled and called again."""

    method: str
    done: anyio.Event = msgspec.field(default_factory=anyio.Event)
    result: Any = None
    error: Exception | None = None

    async def wait(self) -> Any:
        await self.done.wait()
        if self.error is not None:
            raise self.error
        return self.result

    def settle(self, result: Any = None, error: Exception | None = None) -> None:
        if not self.done.is_set():
            self.result, self.error = result, error
            self.done.set()


def _is_error(error: Any) -> bool:
    """Whether a response's ``error`` is a JSON-RPC error object (anything else is a protocol fault)."""
    if not isinstance(error, dict):
        return False
    code = error.get("code")
    return isinstance(code, int) and not isinstance(code, bool) and isinstance(error.get("message"), str)


class RpcConnection:
    """One JSON-RPC peer: requests out, responses matched by id, requests and notifications in."""

    def __init__(
        self,
        stdin: anyio.abc.ByteSendStream,
        *,
        on_request: RequestHandler,
        on_notification: NotificationHandler,
        spawn: Spawn,
        tap: Tap | None = None,
    ) -> None:
        self._stdin = stdin
        self._on_request = on_request
        self._on_notification = on_notification
        self._spawn = spawn
        self._tap = tap
        self._lock = anyio.Lock()
        self._next_id = 0
        self._pending: dict[int, Pending] = {}
        #: Why the connection ended (None while it is up).
        self.lost: str | None = None
        #: True when it ended because the agent broke the protocol, not because it exited.
        self.faulted = False

    async def call(self, method: str, params: Any) -> Pending:
        """Send a request; the returned Pending resolves with its response."""
        if self.lost is not None:
            raise ConnectionLost(self.lost)
        self._next_id += 1
        rid = self._next_id
        pending = Pending(method)
        self._pending[rid] = pending
        try:
            await self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        except BaseException:
            self._pending.pop(rid, None)
            raise
        return pending

    async def request(self, method: str, params: Any) -> Any:
        return await (await self.call(method, params)).wait()

    async def notify(self, method: str, params: Any) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _send(self, message: dict[str, Any]) -> None:
        data = orjson.dumps(message)
        async with self._lock:
            if self.lost is not None:
                raise ConnectionLost(self.lost)
            if self._tap:
                self._tap("out", data, True)
            try:
                await self._stdin.send(data + b"\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                self._close(f"cannot write to the agent: {exc or type(exc).__name__}")
                raise ConnectionLost(self.lost) from None

    async def serve(self, stdout: anyio.abc.ByteReceiveStream) -> None:
        """Read the agent's messages until its stdout ends or it breaks the protocol; never raises."""
        reader = LineReader(stdout)
        reason = "the agent closed its stdout"
        try:
            while True:
                try:
                    line = await reader.readline()
                except LineTooLong as exc:
                    reason, self.faulted = f"malformed JSON-RPC from the agent: {exc}", True
                    break
                if line is None:
                    break
                if not line.strip():
                    continue
                problem = self._receive(line)
                if problem is not None:
                    reason, self.faulted = f"malformed JSON-RPC from the agent: {problem}", True
                    break
        finally:
            self._close(reason)

    def _receive(self, line: bytes) -> str | None:
        """Dispatch one line; a description of what is wrong with it, or None."""
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            if self._tap:
                self._tap("in", line, False)
            return f"not JSON ({exc.msg}): {line[:200].decode('utf-8', 'replace')!r}"
        if self._tap:
            self._tap("in", line, True)
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return f"not a JSON-RPC 2.0 message: {line[:200].decode('utf-8', 'replace')!r}"
        method = message.get("method")
        if method is not None:
            if not isinstance(method, str):
                return "'method' is not a string"
            if "id" in message:
                self._spawn(self._answer, message["id"], method, message.get("params"))
            else:
                self._on_notification(method, message.get("params"))
            return None
        if "id" not in message or ("result" in message) == ("error" in message):
            return "a response needs an 'id' and exactly one of 'result' or 'error'"
        error = message.get("error")
        if "error" in message and not _is_error(error):
            return f"'error' is not an object with an integer 'code' and a string 'message': {error!r:.200}"
        pending = self._pending.pop(message["id"], None) if isinstance(message["id"], int) else None
        if pending is None:
            return None  # a late answer to a request we gave up on
        if "result" in message:
            pending.settle(message["result"])
        else:
            fault = message["error"]  # an error object (checked above)
            pending.settle(error=RpcError(fault["code"], fault["message"], fault.get("data")))
        return None

    async def _answer(self, rid: Any, method: str, params: Any) -> None:
        try:
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "result": await self._on_request(method, params)}
        except RpcError as exc:
            reply = {"jsonrpc": "2.0", "id": rid, "error": exc.to_json()}
        except Exception as exc:  # a handler bug is this request's error, not the run's end
            reply = {"jsonrpc": "2.0", "id": rid, "error": {"code": INTERNAL_ERROR, "message": f"{type(exc).__name__}: {exc}"}}
        with contextlib.suppress(ConnectionLost):  # the agent is gone; nobody is waiting for this answer
            await self._send(reply)

    def _close(self, reason: str) -> None:
        if self.lost is None:
            self.lost = reason
        for pending in self._pending.values():
            pending.settle(error=ConnectionLost(self.lost))
        self._pending.clear()
