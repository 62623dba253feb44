"""``fs/read_text_file`` and ``fs/write_text_file``, confined to the prompt's workspace.

Every path is opened relative to the workspace with no symlink followed
(:mod:`waza.protocol.io.confined`), so an absolute path elsewhere, a ``..`` walk
and a symlink (even one swapped in a moment before) all get a JSON-RPC error
and nothing outside is read or written. Relative paths, which ACP does not
allow but some agents send, are taken relative to the workspace.

Reads are bounded: only regular files (a FIFO is refused, never waited on), at
most :data:`READ_LIMIT` bytes of content, and a ``line``/``limit`` slice is read
line by line so a huge file never sits in memory. File work runs in a worker
thread under :data:`FS_DEADLINE`, so a slow disk cannot stall the event loop
that watches the agent and the timeout.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import anyio
import anyio.to_thread

from waza.protocol.io.confined import Refused, open_dir, open_regular, relative_parts, replace_file

from .acp_rpc import INVALID_PARAMS, RESOURCE_NOT_FOUND, RpcError

__all__ = ["FS_DEADLINE", "READ_LIMIT", "confine_dir", "read_text", "write_text"]

#: Most bytes of file content one ``fs/read_text_file`` answers with (10 MiB); larger asks are a JSON-RPC error.
READ_LIMIT = 10 * 1024 * 1024
#: Seconds one file operation may take before it is answered with an error.
FS_DEADLINE = 30.0
_CHUNK = 64 * 1024

T = TypeVar("T")


def _parts(workspace: Path, raw: Any, what: str) -> list[str]:
    if not isinstance(raw, str) or not raw or "\0" in raw:
        raise RpcError(INVALID_PARAMS, f"{what} must be a non-empty string")
    try:
        return relative_parts(workspace, raw)
    except Refused as exc:
        raise RpcError(INVALID_PARAMS, f"{what} {exc.strerror}") from None


def _refusal(raw: str, exc: OSError) -> RpcError:
    if isinstance(exc, Refused):
        return RpcError(INVALID_PARAMS, f"refused: {exc.strerror}")
    if exc.errno == errno.ENOENT:
        return RpcError(RESOURCE_NOT_FOUND, f"no such file: {raw}")
    return RpcError(INVALID_PARAMS, f"cannot access {raw!r}: {exc.strerror or exc}")


def confine_dir(workspace: Path, raw: Any, what: str = "cwd") -> Path:
    """``raw`` as a directory inside ``workspace`` reached through no symlink; RpcError otherwise."""
    parts = _parts(workspace, raw, what)
    try:
        os.close(open_dir(workspace, parts))
    except OSError as exc:
        raise RpcError(INVALID_PARAMS, f"{what} {raw!r} refused: {exc.strerror}") from None
    return workspace.resolve().joinpath(*parts)


def _positive(params: dict[str, Any], name: str) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise RpcError(INVALID_PARAMS, f"{name} must be a positive integer")
    return value


async def _off_loop(raw: str, fn: Callable[[float], T]) -> T:
    """Run ``fn(deadline)`` in a worker thread; RpcError if it fails or outlives :data:`FS_DEADLINE`."""
    deadline = time.monotonic() + FS_DEADLINE
    try:
        with anyio.fail_after(FS_DEADLINE + 1):
            return await anyio.to_thread.run_sync(fn, deadline, abandon_on_cancel=True)
    except TimeoutError:
        raise RpcError(INVALID_PARAMS, f"reading or writing {raw!r} took over {FS_DEADLINE:g}s") from None
    except OSError as exc:
        raise _refusal(raw, exc) from None


class _TooLarge(Exception):
    pass


def _slice(f: BinaryIO, line: int, limit: int | None, deadline: float) -> bytes:
    """Lines ``line``.. (at most ``limit``), read in chunks so no line or skipped part is held whole."""
    skipped = 1
    while skipped < line:
        chunk = f.readline(_CHUNK)
        if not chunk:
            return b""
        if chunk.endswith(b"\n"):
            skipped += 1
        if time.monotonic() > deadline:
            raise TimeoutError
    out = bytearray()
    taken = 0
    while limit is None or taken < limit:
        chunk = f.readline(_CHUNK)
        if not chunk:
            break
        out += chunk
        if len(out) > READ_LIMIT:
            raise _TooLarge
        if chunk.endswith(b"\n"):
            taken += 1
        if time.monotonic() > deadline:
            raise TimeoutError
    return bytes(out)


async def read_text(workspace: Path, params: dict[str, Any]) -> dict[str, Any]:
    """Read a regular file (from 1-based ``line``, at most ``limit`` lines), at most READ_LIMIT bytes."""
    parts = _parts(workspace, params.get("path"), "path")
    line, limit = _positive(params, "line"), _positive(params, "limit")
    raw = params["path"]

    def read(deadline: float) -> bytes | None:
        with os.fdopen(open_regular(workspace, parts), "rb", buffering=_CHUNK) as f:
            try:
                if line is None and limit is None:
                    if os.fstat(f.fileno()).st_size > READ_LIMIT:
                        return None
                    data = f.read(READ_LIMIT + 1)
                    return None if len(data) > READ_LIMIT else data
                return _slice(f, line or 1, limit, deadline)
            except _TooLarge:
                return None

    data = await _off_loop(raw, read)
    if data is None:
        raise RpcError(
            INVALID_PARAMS,
            f"{raw!r} is over the {READ_LIMIT // (1024 * 1024)} MiB read limit; ask for a slice with line and limit",
        )
    return {"content": data.decode("utf-8", errors="replace")}


async def write_text(workspace: Path, params: dict[str, Any]) -> dict[str, Any]:
    """Create or replace a file atomically, creating missing parent directories inside the workspace."""
    parts = _parts(workspace, params.get("path"), "path")
    content = params.get("content")
    if not isinstance(content, str):
        raise RpcError(INVALID_PARAMS, "content must be a string")
    data = content.encode("utf-8", errors="surrogatepass")
    await _off_loop(params["path"], lambda _deadline: replace_file(workspace, parts, data))
    return {}
