"""How a headless CLI is handed MCP servers (a suite's ``mcp_mocks``), as its schema's ``mcpConfig`` says.

The servers come in ACP's stdio form (``{name, command, args, env: [{name, value}]}``)
and go to the CLI in the shape it reads: ``json`` (``{"mcpServers": {...}}``,
Claude Code's ``--mcp-config`` and Gemini CLI's settings files), ``toml`` (one
``mcp_servers.NAME={...}`` inline table per server, Codex's ``-c``) or
``opencode`` (``{"mcp": {...}}``, an OpenCode config file). The value goes on the
command line after ``flag``, or into a file whose path the variable ``env``
carries, for a CLI that reads MCP servers only from a config file. The schema's
``serverFields`` are added to every entry as they are (Codex drops a server
that fails its handshake without a word unless it is ``required``).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
import orjson

__all__ = ["McpHandOver", "toml_value"]

Style = Literal["json", "toml", "opencode"]


def toml_value(value: Any) -> str:
    """``value`` (JSON's types) as a TOML value on one line: strings as basic strings, objects as inline tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):  # JSON's escapes are TOML's; DEL is a control character TOML wants escaped
        return orjson.dumps(value).decode().replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_value(str(k))} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML value for {type(value).__name__}")


class McpHandOver(msgspec.Struct, frozen=True):
    """A schema's ``mcpConfig``, compiled: ``flag`` or ``env``, the ``style``, the ``server_fields``."""

    style: Style
    flag: str | None = None
    env: str | None = None
    server_fields: dict[str, Any] = msgspec.field(default_factory=dict)

    def _entry(self, server: dict[str, Any]) -> dict[str, Any]:
        env = {e["name"]: e["value"] for e in server["env"]}
        if self.style == "opencode":
            entry = {"type": "local", "command": [server["command"], *server["args"]], "environment": env}
        else:
            entry = {"command": server["command"], "args": server["args"], "env": env}
        return {**entry, **self.server_fields}

    def value(self, servers: list[dict[str, Any]]) -> bytes:
        """The one value that hands ``servers`` over (styles json and opencode)."""
        key = "mcp" if self.style == "opencode" else "mcpServers"
        return orjson.dumps({key: {s["name"]: self._entry(s) for s in servers}})

    def args(self, servers: list[dict[str, Any]]) -> list[str]:
        """The command-line arguments that hand ``servers`` over; none with ``env`` (see :meth:`value`)."""
        if not servers or self.flag is None:
            return []
        if self.style == "toml":  # the name as a bare key: Codex takes letters, digits, - and _ in a server's name
            return [a for s in servers for a in (self.flag, f"mcp_servers.{s['name']}={toml_value(self._entry(s))}")]
        return [self.flag, self.value(servers).decode()]
