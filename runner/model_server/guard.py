"""What every request to the model server passes before a route sees it: who may ask, and a clean answer when it goes wrong.

The server listens on loopback, but loopback is not private: a web page in the
user's browser can send requests there (its ``Origin`` says so), and a DNS name
rebound to 127.0.0.1 reaches it with a foreign ``Host``. So a request is
answered only when its ``Host`` names loopback (``127.0.0.1``, ``localhost``,
``[::1]``, or a name the user allowed with ``--allow-host``) and it carries no
``Origin`` (agents are programs, not pages); anything else gets a 403. A
request body larger than :data:`MAX_BODY` gets a 413 without being read
whole (a body sent without a length is cut off in the app once over it), and
any fault of the app's gets a JSON 500 with one line on stderr, never a
traceback to the client or the terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from typing import Any

import orjson

__all__ = ["LOOPBACK_NAMES", "MAX_BODY", "Guard", "api_of", "error_body"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Host names a request may carry when the user allowed none other.
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
#: The largest request body read: a long agent conversation with its tools is a few MiB.
MAX_BODY = 32 << 20


def api_of(path: str) -> str:
    """The API family a path belongs to, for the shape of its error replies."""
    if path.startswith("/v1/messages"):
        return "anthropic"
    if path.startswith("/v1beta/"):
        return "gemini"
    return "openai"


def error_body(api: str, status: int, message: str) -> bytes:
    """An error in the family's own shape, so each client reports it as an API error."""
    if api == "anthropic":
        kind = "invalid_request_error" if status < 500 else "api_error"
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    elif api == "gemini":
        state = {403: "PERMISSION_DENIED", 404: "NOT_FOUND", 413: "INVALID_ARGUMENT"}.get(status, "INVALID_ARGUMENT")
        body = {"error": {"code": status, "message": message, "status": state if status < 500 else "INTERNAL"}}
    else:
        body = {"error": {"message": message, "type": "invalid_request_error" if status < 500 else "server_error", "code": None}}
    return orjson.dumps(body)


def _host_name(value: str) -> str:
    """``Host`` without its port, lower-cased (``[::1]:8080`` -> ``[::1]``)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rpartition(":")[0] if ":" in value else value


class Guard:
    """ASGI middleware: the Host/Origin check, the body limit and the last-resort JSON 500 (see the module doc)."""

    def __init__(self, app: App, *, allowed_hosts: Collection[str] = (), log: Callable[[str], None] | None = None) -> None:
        self.app = app
        self.hosts = LOOPBACK_NAMES | {h.lower() for h in allowed_hosts}
        self.log = log or (lambda line: print(f"serve-model: {line}", file=sys.stderr, flush=True))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        api = api_of(str(scope.get("path", "")))
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        refusal = self._refusal(headers)
        if refusal is not None:
            await _respond(send, api, *refusal)
            return
        length = headers.get("content-length", "0").strip()
        if not length.isdigit():
            await _respond(send, api, 400, "Content-Length is not a number")
            return
        if int(length) > MAX_BODY:
            await _respond(send, api, 413, f"the request body is over {MAX_BODY >> 20} MiB")
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:  # the app answered with a JSON 500 already; Starlette re-raises it for the log
            self.log(f"{scope.get('method')} {scope.get('path')}: internal error: {type(exc).__name__}: {exc}"[:500])
            if not started:
                await _respond(send, api, 500, f"internal error ({type(exc).__name__})")

    def _refusal(self, headers: dict[str, str]) -> tuple[int, str] | None:
        if "origin" in headers:
            return 403, "requests from a web page (an Origin header) are refused: the model server is for agents"
        if _host_name(headers.get("host", "")) not in self.hosts:
            allowed = ", ".join(sorted(self.hosts))
            return 403, f"Host {headers.get('host', '')[:100]!r} is not a loopback name ({allowed}; --allow-host adds one)"
        return None


async def _respond(send: Send, api: str, status: int, message: str) -> None:
    body = error_body(api, status, message)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
