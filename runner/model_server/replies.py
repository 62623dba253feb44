"""What a model request asks and what the model answers, independent of the API family it came in.

Each API module (``anthropic``, ``openai``, ``gemini``) reads its requests into
a ``Request`` and writes a ``Reply`` back in its own shapes, so the backends
(a scripted reply file, the embedded local model) answer every family alike.

A scripted reply file is a JSONL file or a YAML list; each entry is one model
reply::

    - match: "README"            # optional: a regex searched in the last user message
      text: "I'll read it."
      tool_calls:
        - {name: Read, input: {file_path: README.md}}
    - text: "Done."

An entry with ``match`` answers every request whose last user message (its
text, or the output of the tool results it carries) the pattern is found in;
the first such entry wins and it can answer again. Any other request takes the
next entry without ``match``, in file order, each once. A request nothing
answers gets an HTTP 400 saying so, so a script that runs out fails the agent's
turn visibly instead of inventing an answer.

The file is read as untrusted input: opened without following a symlink,
a regular file only (not a FIFO or ``/dev/zero``), at most
:data:`MAX_SCRIPT_BYTES`; YAML aliases and nesting are bounded as in suite
files (:func:`waza.runner.suites.located.parse_yaml`). A ``match`` pattern is
at most :data:`MAX_PATTERN` characters and each search gets
:data:`MATCH_SECONDS` (the ``regex`` module's timeout), so a pattern that
backtracks catastrophically fails that request, not the server.
"""

from __future__ import annotations

import os
import secrets
import threading
from pathlib import Path
from typing import Any, Literal

import msgspec
import orjson

from waza.protocol.errors import ConfigError
from waza.protocol.io.confined import open_regular
from waza.runner.suites.located import parse_yaml

__all__ = ["Reply", "Request", "Script", "ToolCall", "estimate_tokens", "load_script"]

Stop = Literal["end_turn", "tool_use", "max_tokens"]
#: Requests for this model (OpenCode's session titles: its small_model, as serve-model's environment sets it)
#: are answered with TITLE by the server, not from the backend, so they use up no scripted reply.
TITLE_MODEL = "waza-title"
TITLE = "waza run"
ENTRY_KEYS = frozenset({"match", "text", "tool_calls", "stop", "usage"})
TOOL_KEYS = frozenset({"name", "input", "id"})
USAGE_KEYS = frozenset({"input_tokens", "output_tokens"})
#: The largest reply script read.
MAX_SCRIPT_BYTES = 16 << 20
#: The longest ``match`` pattern, in characters.
MAX_PATTERN = 1000
#: Seconds one ``match`` search may take before the request fails.
MATCH_SECONDS = 0.5


def estimate_tokens(chars: int) -> int:
    """A token count for usage when the reply sets none: about four characters a token."""
    return max(1, (chars + 3) // 4)


def new_id(prefix: str) -> str:
    return f"{prefix}{secrets.token_hex(12)}"


class ToolCall(msgspec.Struct):
    name: str
    input: dict[str, Any]
    id: str = msgspec.field(default_factory=lambda: new_id("call_"))


class Request(msgspec.Struct):
    """One model request, read from any API family.

    ``messages`` are OpenAI chat messages (role, content text, tool_calls,
    tool_call_id), the form the local model is asked in; ``tools`` are
    ``{"name", "description", "parameters"}``. ``namespaced`` maps a tool offered inside a namespace (the
    Responses API's ``namespace`` tools: Codex's MCP servers, ``mcp__SERVER``) by its flat name
    ``NAMESPACE__TOOL``, the name it is listed and called by here, to (namespace, tool).
    """

    api: str
    model: str
    stream: bool
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = msgspec.field(default_factory=list)
    max_tokens: int | None = None
    namespaced: dict[str, tuple[str, str]] = msgspec.field(default_factory=dict)

    @property
    def last_user(self) -> str:
        """The text of the last user message, or of the tool results sent back after it."""
        for message in reversed(self.messages):
            if message["role"] in ("user", "tool"):
                return str(message.get("content") or "")
        return ""

    @property
    def chars(self) -> int:
        return len(orjson.dumps(self.messages)) + len(orjson.dumps(self.tools))


class Reply(msgspec.Struct):
    text: str = ""
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    stop: Stop = "end_turn"
    input_tokens: int = 0
    output_tokens: int = 0


class Entry(msgspec.Struct):
    pattern: Any  # a compiled regex.Pattern (the regex module is untyped), or None
    text: str
    tool_calls: list[dict[str, Any]]
    stop: Stop | None
    usage: dict[str, int]

    def reply(self, request: Request) -> Reply:
        calls = [ToolCall(c["name"], dict(c.get("input") or {}), str(c.get("id") or new_id("call_"))) for c in self.tool_calls]
        stop: Stop = self.stop or ("tool_use" if calls else "end_turn")
        out_chars = len(self.text) + sum(len(orjson.dumps(c.input)) for c in calls)
        return Reply(
            self.text,
            calls,
            stop,
            self.usage.get("input_tokens", estimate_tokens(request.chars)),
            self.usage.get("output_tokens", estimate_tokens(out_chars)),
        )


class Script:
    """The scripted backend: answers requests from the entries of a reply file."""

    def __init__(self, entries: list[Entry], source: str) -> None:
        self.entries = entries
        self.source = source
        self._next = 0
        self._lock = threading.Lock()

    def answer(self, request: Request) -> Reply:
        text = request.last_user
        for number, entry in enumerate(self.entries, 1):
            if entry.pattern is None:
                continue
            try:
                found = entry.pattern.search(text, timeout=MATCH_SECONDS)
            except TimeoutError:
                raise LookupError(f"{self.source}: reply {number}'s match pattern ran over {MATCH_SECONDS:g}s") from None
            if found:
                return entry.reply(request)
        with self._lock:
            while self._next < len(self.entries) and self.entries[self._next].pattern is not None:
                self._next += 1
            if self._next >= len(self.entries):
                raise LookupError(f"{self.source}: no scripted reply left for this request (last user message: {text[:200]!r})")
            entry = self.entries[self._next]
            self._next += 1
        return entry.reply(request)


def load_script(path: Path) -> Script:
    """Read and check a reply file; ConfigError naming the file, line and field on any mistake."""
    source = str(path)
    data = _read_bounded(path, source)
    raw: list[tuple[int, Any]]
    if path.suffix in (".yaml", ".yml"):
        try:
            text = data.decode()
        except UnicodeDecodeError as exc:
            raise ConfigError(f"not UTF-8 (byte {exc.start})", source=source) from None
        doc = parse_yaml(text, source)
        if not isinstance(doc.value, list):
            raise ConfigError("must be a list of replies", source=source, line=doc.line(()))
        raw = [(doc.line((index,)), item) for index, item in enumerate(doc.value)]
    else:
        raw = []
        for number, line in enumerate(data.splitlines(), 1):
            if not line.strip():
                continue
            try:
                raw.append((number, orjson.loads(line)))
            except orjson.JSONDecodeError as exc:
                raise ConfigError(f"invalid JSON ({exc.msg})", source=source, line=number) from None
    if not raw:
        raise ConfigError("has no replies", source=source)
    return Script([_entry(item, source, number) for number, item in raw], source)


def _read_bounded(path: Path, source: str) -> bytes:
    """The file's bytes: a regular file reached without a symlink at its last step, at most MAX_SCRIPT_BYTES."""
    try:
        fd = open_regular(path.parent, [path.name])
    except OSError as exc:
        raise ConfigError(f"cannot be read: {exc.strerror or exc}", source=source) from None
    with os.fdopen(fd, "rb") as file:
        data = file.read(MAX_SCRIPT_BYTES + 1)
    if len(data) > MAX_SCRIPT_BYTES:
        raise ConfigError(f"is larger than {MAX_SCRIPT_BYTES >> 20} MiB; a reply script is read whole", source=source)
    return data


def _entry(item: Any, source: str, line: int) -> Entry:
    def fail(message: str, key: str | None = None) -> ConfigError:
        return ConfigError(message, source=source, line=line, field=key)

    if not isinstance(item, dict):
        raise fail("a reply must be a mapping")
    unknown = sorted(set(item) - ENTRY_KEYS)
    if unknown:
        raise fail(f"unknown key (allowed: {', '.join(sorted(ENTRY_KEYS))})", unknown[0])
    pattern = None
    if "match" in item:
        if not isinstance(item["match"], str):
            raise fail("must be a string (a regular expression)", "match")
        if len(item["match"]) > MAX_PATTERN:
            raise fail(f"is longer than {MAX_PATTERN} characters", "match")
        import regex  # the serve extra's, checked before a script is loaded (serve.check_source)

        try:
            pattern = regex.compile(item["match"])
        except regex.error as exc:
            raise fail(f"invalid regular expression: {exc}", "match") from None
    text = item.get("text", "")
    if not isinstance(text, str):
        raise fail("must be a string", "text")
    calls = item.get("tool_calls") or []
    if not isinstance(calls, list):
        raise fail("must be a list", "tool_calls")
    for i, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise fail("each tool call needs a name", f"tool_calls.{i}")
        if set(call) - TOOL_KEYS:
            raise fail(
                f"unknown key (allowed: {', '.join(sorted(TOOL_KEYS))})", f"tool_calls.{i}.{sorted(set(call) - TOOL_KEYS)[0]}"
            )
        if not isinstance(call.get("input", {}), dict):
            raise fail("must be a mapping (the tool's arguments)", f"tool_calls.{i}.input")
    if not text and not calls:
        raise fail("a reply needs text or tool_calls")
    stop = item.get("stop")
    if stop is not None and stop not in ("end_turn", "tool_use", "max_tokens"):
        raise fail("must be end_turn, tool_use or max_tokens", "stop")
    usage = item.get("usage") or {}
    if not isinstance(usage, dict) or set(usage) - USAGE_KEYS or not all(isinstance(v, int) for v in usage.values()):
        raise fail("must map input_tokens / output_tokens to integers", "usage")
    return Entry(pattern, text, calls, stop, usage)
