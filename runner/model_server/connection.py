"""The model server's connections: uvicorn's h11 protocol with a deadline on each request's arrival.

uvicorn bounds what it can with its options (:func:`config_options`: the
number of connections, the keep-alive idle time, the size of a request's
head), but it starts no clock until a first response is sent, so a client
that connects and sends nothing, or a request head or body a byte a second,
holds a connection for ever; enough of them and real requests get 503s. Here
a connection must deliver each whole request within :data:`REQUEST_TIMEOUT`
of its start (of the connection, or of the previous response's end), or it
is closed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["MAX_CONNECTIONS", "REQUEST_TIMEOUT", "DeadlineProtocol", "config_options"]

#: Seconds a connection has to send a whole request (head and body).
REQUEST_TIMEOUT = 30.0
#: Seconds an idle keep-alive connection is kept between requests.
KEEP_ALIVE = 5
#: Connections served at once; more get an HTTP 503 (uvicorn's ``limit_concurrency``).
MAX_CONNECTIONS = 64
#: The largest request head (request line and headers) h11 buffers.
MAX_HEAD = 64 << 10


class DeadlineProtocol(H11Protocol):
    """H11Protocol that closes a connection whose request does not arrive in time (see the module doc)."""

    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR):
            self._disarm()  # the request is in: the reply may take as long as the backend needs

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(REQUEST_TIMEOUT, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.conn.their_state not in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED) and not self.transport.is_closing():
            self.transport.close()


def config_options() -> dict[str, Any]:
    """uvicorn.Config's bounds for the model server."""
    return {
        "http": DeadlineProtocol,
        "limit_concurrency": MAX_CONNECTIONS,
        "timeout_keep_alive": KEEP_ALIVE,
        "h11_max_incomplete_event_size": MAX_HEAD,
        "server_header": False,
        "log_level": "warning",
        "access_log": False,
    }
