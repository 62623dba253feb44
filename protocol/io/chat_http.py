"""The one OpenAI-compatible HTTP client of waza: LLM judges and the http adapter both call through it.

One retry policy for both: a connection failure, a timeout, or an answer of
408, 409, 429 or 5xx is tried again after ``backoff * 2**n`` seconds (capped at
``max_backoff``), or after the server's ``Retry-After`` when it sends one; any
other 4xx is final. Never past the caller's deadline: a wait that would end
after it stops the retries. Connections are pooled: one ``httpx.AsyncClient``
per event loop, shared by every call made on it (a judge no longer opens a
client per grade).
"""

from __future__ import annotations

import asyncio
import math
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import msgspec

if TYPE_CHECKING:  # httpx is imported by the first call: a run that makes none (most) starts without it
    import httpx

__all__ = [
    "RETRYABLE_STATUS",
    "ChatFailed",
    "RetryPolicy",
    "Transient",
    "check_status",
    "excerpt",
    "pooled_client",
    "with_retries",
]

T = TypeVar("T")
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
#: The limit of one request when the caller has no deadline: a silent server must not hang the run.
DEFAULT_REQUEST_TIMEOUT = 600.0

_clients: weakref.WeakKeyDictionary[Any, httpx.AsyncClient] = weakref.WeakKeyDictionary()


class ChatFailed(Exception):
    """A call that cannot succeed (a final 4xx, or retries exhausted); the message is safe to record."""


class Transient(Exception):
    """A server answer worth another attempt (408, 409, 429, 5xx), with its Retry-After in seconds."""

    def __init__(self, message: str, retry_after: str | None = None) -> None:
        super().__init__(message)
        try:
            self.retry_after: float | None = max(0.0, float(retry_after)) if retry_after is not None else None
        except ValueError:
            self.retry_after = None


class RetryPolicy(msgspec.Struct, frozen=True):
    """How many times a call is tried and how long it waits in between (see the module docstring)."""

    attempts: int = 5
    backoff: float = 0.5
    max_backoff: float = 30.0

    def wait(self, retry: int, retry_after: float | None) -> float:
        """Seconds before retry number ``retry`` (1 for the first)."""
        return min(retry_after if retry_after is not None else self.backoff * 2 ** (retry - 1), self.max_backoff)


def excerpt(response: httpx.Response, limit: int = 300) -> str:
    text = " ".join(response.text.split())
    return text[:limit] + ("..." if len(text) > limit else "")


def check_status(response: httpx.Response) -> None:
    """Raise :class:`Transient` for a retryable status, :class:`ChatFailed` for any other 4xx/5xx."""
    message = f"HTTP {response.status_code} from {response.request.url.path}: {excerpt(response)}"
    if response.status_code in RETRYABLE_STATUS or response.status_code >= 500:
        raise Transient(message, response.headers.get("retry-after"))
    if response.status_code >= 400:
        raise ChatFailed(message)


def pooled_client() -> httpx.AsyncClient:
    """The client shared by every call on the running event loop (closed with the loop's objects)."""
    import httpx

    loop = asyncio.get_running_loop()  # waza runs on anyio's asyncio backend
    client = _clients.get(loop)
    if client is None or client.is_closed:
        client = httpx.AsyncClient(timeout=DEFAULT_REQUEST_TIMEOUT)
        _clients[loop] = client
    return client


async def with_retries(
    attempt: Callable[[float], Awaitable[T]], policy: RetryPolicy, *, deadline: float = math.inf, what: str = "the server"
) -> tuple[T, int]:
    """Run ``attempt(timeout)`` under the policy; (its value, attempts made) or :class:`ChatFailed`."""
    import httpx

    problem, retry_after = "", None
    for number in range(1, policy.attempts + 1):
        if number > 1:
            wait = policy.wait(number - 1, retry_after)
            if time.monotonic() + wait >= deadline:
                raise ChatFailed(f"{problem}; no time left to retry")
            await anyio.sleep(wait)
        left = deadline - time.monotonic()
        timeout = min(left, DEFAULT_REQUEST_TIMEOUT) if left != math.inf else DEFAULT_REQUEST_TIMEOUT
        try:
            return await attempt(max(timeout, 0.001)), number
        except Transient as exc:
            problem, retry_after = str(exc), exc.retry_after
        except httpx.TimeoutException:
            problem, retry_after = f"{what}: the request timed out", None
        except httpx.TransportError as exc:
            problem, retry_after = f"cannot reach {what}: {exc or type(exc).__name__}", None
    suffix = f" (gave up after {policy.attempts} attempts)" if policy.attempts > 1 else ""
    raise ChatFailed(problem + suffix)
