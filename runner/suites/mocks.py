"""An eval suite's ``mcp_mocks`` and ``command_mocks``, read and checked when the suite loads.

Everything a mock needs at run time is resolved here, so a trial only writes it
out (:mod:`waza.runner.suites.mock_tools`): an MCP mock's ``fixtures`` folder is
read into its tools (each ``.json`` file one tool named by the file, or a
``{"tools": {...}}`` object of several), a command response's ``fixture`` file
(relative to eval.yaml) into its bytes, structured ``stdout`` into its JSON
text. Every regex is compiled and every ``match_schema`` checked as a JSON
Schema, so a bad one is a ``file:line`` error before any agent starts.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import orjson

from waza.graders._paths import PathEscape, check_relative, inside
from waza.protocol.errors import ConfigError
from waza.runner.suites.located import Located, PathKey

__all__ = ["FIXTURE_LIMIT", "command_mocks", "mcp_mocks"]

#: Most bytes of one mock fixture file (a response the mock hands the agent whole).
FIXTURE_LIMIT = 10 * 1024 * 1024


def _read(here: Path, relative: str, what: str) -> bytes:
    try:
        check_relative(relative, what)
        path = inside(here, relative)
    except (PathEscape, ConfigError) as exc:
        raise ConfigError(str(exc.message if isinstance(exc, ConfigError) else exc)) from None
    if not path.is_file():
        raise ConfigError(f"{relative!r} is not a file (looked for {path})")
    with path.open("rb") as fh:
        data = fh.read(FIXTURE_LIMIT + 1)
    if len(data) > FIXTURE_LIMIT:
        raise ConfigError(f"{relative!r} is larger than {FIXTURE_LIMIT:,} bytes")
    return data


def _regex(doc: Located, where: PathKey, pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise doc.error(where, f"not a valid regular expression: {exc}") from None


def _tool(doc: Located, where: PathKey, spec: Any, source: str | None = None) -> dict[str, Any]:
    """One mock tool, checked; ``source`` names the fixture file it came from (its errors point at eval.yaml's entry)."""

    def fail(message: str) -> ConfigError:
        return doc.error(where, f"{source}: {message}" if source else message)

    if not isinstance(spec, dict) or not isinstance(spec.get("responses"), list) or not spec["responses"]:
        raise fail("a mock tool needs a non-empty list 'responses'")
    unknown = sorted(set(spec) - {"description", "input_schema", "responses"})
    if unknown:
        raise fail(f"unknown key {unknown[0]!r} in a mock tool")
    from jsonschema import Draft202012Validator, SchemaError

    for i, response in enumerate(spec["responses"]):
        at: PathKey = (*where, "responses", i) if source is None else where
        if not isinstance(response, dict) or not ({"return", "error"} & set(response)):
            raise fail(f"responses[{i}] needs 'return' or 'error'")
        extra = sorted(set(response) - {"match", "match_regex", "match_schema", "return", "error"})
        if extra:
            raise fail(f"responses[{i}]: unknown key {extra[0]!r}")
        for field, pattern in (response.get("match_regex") or {}).items():
            _regex(doc, (*at, "match_regex", field) if source is None else where, str(pattern))
        if "match_schema" in response:
            try:
                Draft202012Validator.check_schema(response["match_schema"])
            except SchemaError as exc:
                raise doc.error(
                    (*at, "match_schema") if source is None else where, f"not a valid JSON Schema: {exc.message}"
                ) from None
    return {
        "description": spec.get("description", ""),
        "input_schema": spec.get("input_schema") or {"type": "object"},
        "responses": spec["responses"],
    }


def _fixture_tools(doc: Located, where: PathKey, here: Path, folder: str) -> dict[str, dict[str, Any]]:
    try:
        check_relative(folder, "fixtures")
        root = inside(here, folder)
    except (PathEscape, ConfigError) as exc:
        raise doc.error(where, str(exc.message if isinstance(exc, ConfigError) else exc)) from None
    if not root.is_dir():
        raise doc.error(where, f"{folder!r} is not a directory (looked for {root})")
    tools: dict[str, dict[str, Any]] = {}
    for path in sorted(root.glob("*.json")):
        name = f"{folder}/{path.name}"
        try:
            data = orjson.loads(_read(root, path.name, "fixture"))
        except ConfigError as exc:
            raise doc.error(where, f"{name}: {exc.message}") from None
        except orjson.JSONDecodeError as exc:
            raise doc.error(where, f"{name}: invalid JSON ({exc.msg})") from None
        several = data.get("tools") if isinstance(data, dict) and set(data) == {"tools"} else None
        if isinstance(several, dict):
            tools.update({tool: _tool(doc, where, spec, f"{name}: tools.{tool}") for tool, spec in several.items()})
        else:
            tools[path.stem] = _tool(doc, where, data, name)
    return tools


def mcp_mocks(doc: Located, here: Path) -> list[dict[str, Any]]:
    """The suite's MCP mocks as the mock server reads them: ``{"name", "tools"}``, inline tools over fixture files."""
    out: list[dict[str, Any]] = []
    for i, raw in enumerate(doc.value.get("mcp_mocks") or []):
        if any(m["name"] == raw["name"] for m in out):
            raise doc.error(("mcp_mocks", i, "name"), f"an MCP mock named {raw['name']!r} is already declared")
        tools = _fixture_tools(doc, ("mcp_mocks", i, "fixtures"), here, raw["fixtures"]) if "fixtures" in raw else {}
        for tool, spec in (raw.get("tools") or {}).items():
            tools[tool] = _tool(doc, ("mcp_mocks", i, "tools", tool), spec)
        out.append({"name": raw["name"], "tools": tools})
    return out


def command_mocks(doc: Located, where: PathKey, here: Path, raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Command mocks as the shim reads them: each response's output bytes (``stdout_b64``) resolved."""
    out: list[dict[str, Any]] = []
    for i, mock in enumerate(raw):
        if any(m["name"] == mock["name"] for m in out):
            raise doc.error((*where, i, "name"), f"a command mock named {mock['name']!r} is already declared")
        responses = []
        for j, response in enumerate(mock["responses"]):
            at: PathKey = (*where, i, "responses", j)
            for k, pattern in enumerate(response.get("args_regex") or []):
                _regex(doc, (*at, "args_regex", k), pattern)
            if "fixture" in response:
                try:
                    data = _read(here, response["fixture"], "fixture")
                except ConfigError as exc:
                    raise doc.error((*at, "fixture"), exc.message) from None
            else:
                stdout = response.get("stdout", "")
                data = stdout.encode() if isinstance(stdout, str) else orjson.dumps(stdout)
            resolved = {k: v for k, v in response.items() if k not in ("stdout", "fixture")}
            responses.append({**resolved, "stdout_b64": base64.b64encode(data).decode()})
        out.append({"name": mock["name"], "expect_calls": mock.get("expect_calls"), "responses": responses})
    return out
