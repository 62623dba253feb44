"""``--raw-log FILE``: every JSON-RPC message in both directions, as JSONL, for replay and debugging.

One line per message: ``{"ts": epoch ms, "dir": "out"|"in", "promptId", "agentPid",
"message": {...}}``, or ``"line": "..."`` instead of ``message`` for what the agent
sent that was not JSON. Secret values from the environment are masked, however
the agent escaped them, and so is the end of a secret that a message chunk
completes after the previous chunk began it. The file
is emptied once when the run starts; every worker then appends whole lines with
one ``write`` each (O_APPEND), so concurrent agents never tear each other's lines.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import orjson

from waza.protocol.errors import ConfigError
from waza.protocol.io.secrets import Redactor


def reset(path: Path) -> None:
    """Empty (or create) the log before the run; ConfigError when it cannot be written."""
    try:
        path.write_bytes(b"")
    except OSError as exc:
        raise ConfigError(f"cannot be written: {exc.strerror or exc}", field="AcpAgent.raw_log", source=str(path)) from None


class RawLog:
    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._redact = Redactor()
        self.prompt_id: str | None = None
        self._tails: dict[tuple[object, ...], str] = {}  # unmasked end of the last chunk, per session and kind

    def write(self, direction: str, data: bytes, is_json: bool, pid: int | None) -> None:
        head = orjson.dumps({"ts": round(time.time() * 1000, 3), "dir": direction, "promptId": self.prompt_id, "agentPid": pid})
        if is_json and self._redact.longest:
            data = self._split_secrets(data.strip())
        body = b',"message":' + data.strip() if is_json else b',"line":' + orjson.dumps(data.decode("utf-8", "replace"))
        os.write(self._fd, self._redact(head[:-1] + body + b"}\n", decode=is_json))

    def _split_secrets(self, data: bytes) -> bytes:
        """Mask the part of a chunk's text that completes a secret the previous chunk began."""
        try:
            message = orjson.loads(data)
            update = message["params"]["update"]
            text = update["content"]["text"]
            key = (self.prompt_id, str(message["params"].get("sessionId")), str(update["sessionUpdate"]))
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
            return data
        if not isinstance(text, str):
            return data
        before = self._tails.get(key, "")
        self._tails[key] = (before + text)[-self._redact.longest :]
        masked = self._redact.continuing(before, text)
        if masked == text:
            return data
        update["content"]["text"] = masked
        return orjson.dumps(message)

    def close(self) -> None:
        os.close(self._fd)
