"""``fs/read_text_file`` and ``fs/write_text_file``, confined to the prompt's workspace.

A path is resolved the way the kernel would (symlinks followed, ``..``
collapsed) before it is compared with the workspace, so an absolute path
elsewhere, a ``..`` walk and a symlink that points out all get the same
JSON-RPC error. Relative paths, which ACP does not allow but some agents send,
are taken relative to the workspace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .acp_rpc import INVALID_PARAMS, RESOURCE_NOT_FOUND, RpcError


def confine(workspace: Path, raw: Any, what: str = "path") -> Path:
    """The real path of ``raw`` if it lies inside ``workspace``; RpcError otherwise."""
    if not isinstance(raw, str) or not raw:
        raise RpcError(INVALID_PARAMS, f"{what} must be a non-empty string")
    root = workspace.resolve()
    path = (root / raw).resolve()
    if not path.is_relative_to(root):
        raise RpcError(INVALID_PARAMS, f"{what} {raw!r} is outside the workspace {root}")
    return path


def _positive(params: dict[str, Any], name: str) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise RpcError(INVALID_PARAMS, f"{name} must be a positive integer")
    return value


def read_text(workspace: Path, params: dict[str, Any]) -> dict[str, Any]:
    """Read a file (from 1-based ``line``, at most ``limit`` lines)."""
    path = confine(workspace, params.get("path"))
    line, limit = _positive(params, "line"), _positive(params, "limit")
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise RpcError(RESOURCE_NOT_FOUND, f"no such file: {params['path']}") from None
    except OSError as exc:
        raise RpcError(INVALID_PARAMS, f"cannot read {params['path']}: {exc.strerror or exc}") from None
    if line is not None or limit is not None:
        lines = text.splitlines(keepends=True)
        start = (line or 1) - 1
        text = "".join(lines[start : None if limit is None else start + limit])
    return {"content": text}


def write_text(workspace: Path, params: dict[str, Any]) -> dict[str, Any]:
    """Create or replace a file, creating missing parent directories inside the workspace."""
    path = confine(workspace, params.get("path"))
    content = params.get("content")
    if not isinstance(content, str):
        raise RpcError(INVALID_PARAMS, "content must be a string")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise RpcError(INVALID_PARAMS, f"cannot write {params['path']}: {exc.strerror or exc}") from None
    return {}
