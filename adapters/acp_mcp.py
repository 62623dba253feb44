"""The MCP servers handed to every ``session/new``, from ``--mcp-server`` and ``--mcp-config``.

``--mcp-server JSON`` takes one server in ACP's own shape:
``{"name", "command", "args", "env": [{"name", "value"}]}`` for stdio, or
``{"type": "http"|"sse", "name", "url", "headers": [{"name", "value"}]}``.
``--mcp-config FILE`` takes a JSON file holding either a list of such servers or
the common ``{"mcpServers": {NAME: {...}}}`` map (``env`` and ``headers`` as
objects), which is converted. Everything is checked before the first prompt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from waza.protocol.errors import ConfigError


def _pairs(value: Any, where: str, source: str) -> list[dict[str, str]]:
    """``[{name, value}]`` from that list or from a plain object."""
    if value is None:
        return []
    if isinstance(value, dict):
        value = [{"name": k, "value": v} for k, v in value.items()]
    if not isinstance(value, list) or not all(
        isinstance(p, dict) and set(p) == {"name", "value"} and all(isinstance(x, str) for x in p.values()) for p in value
    ):
        raise ConfigError("must be a list of {name, value} strings or an object of strings", source=source, field=where)
    return value


def _server(value: Any, where: str, source: str, name: str | None = None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError("an MCP server must be a JSON object", source=source, field=where)
    name = value.get("name", name)
    if not isinstance(name, str) or not name:
        raise ConfigError("needs a non-empty string 'name'", source=source, field=where)
    kind = value.get("type", "stdio")
    if kind == "stdio":
        known = {"type", "name", "command", "args", "env"}
        if not isinstance(value.get("command"), str) or not value["command"]:
            raise ConfigError("a stdio MCP server needs a string 'command'", source=source, field=f"{where}.command")
        args = value.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ConfigError("must be a list of strings", source=source, field=f"{where}.args")
        server = {
            "name": name,
            "command": value["command"],
            "args": args,
            "env": _pairs(value.get("env"), f"{where}.env", source),
        }
    elif kind in ("http", "sse"):
        known = {"type", "name", "url", "headers"}
        if not isinstance(value.get("url"), str) or not value["url"]:
            raise ConfigError(f"an {kind} MCP server needs a string 'url'", source=source, field=f"{where}.url")
        server = {
            "type": kind,
            "name": name,
            "url": value["url"],
            "headers": _pairs(value.get("headers"), f"{where}.headers", source),
        }
    else:
        raise ConfigError(f"type must be stdio, http or sse, not {kind!r}", source=source, field=f"{where}.type")
    unknown = sorted(set(value) - known)
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r}", source=source, field=where)
    return server


def mcp_servers(given: Sequence[Mapping[str, Any]], config: Path | None) -> list[dict[str, Any]]:
    """Every configured server in ACP form; ConfigError naming the option or file and the field."""
    servers = [_server(dict(v) if isinstance(v, Mapping) else v, f"[{i}]", "AcpAgent.mcp_servers") for i, v in enumerate(given)]
    if config is None:
        return servers
    source = str(config)
    try:
        data = orjson.loads(config.read_bytes())
    except OSError as exc:
        raise ConfigError(f"cannot be read: {exc.strerror or exc}", source=source) from None
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON ({exc.msg})", source=source, line=exc.lineno) from None
    if isinstance(data, dict) and isinstance(data.get("mcpServers"), dict):
        servers += [_server(v, f"mcpServers.{k}", source, name=k) for k, v in data["mcpServers"].items()]
    elif isinstance(data, list):
        servers += [_server(v, f"[{i}]", source) for i, v in enumerate(data)]
    else:
        raise ConfigError("must be a list of MCP servers or an object with 'mcpServers'", source=source)
    return servers
