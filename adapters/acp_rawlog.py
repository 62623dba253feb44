"""``--raw-log FILE``: every JSON-RPC message in both directions, as JSONL, for replay and debugging.

One line per message: ``{"ts": epoch ms, "dir": "out"|"in", "promptId", "agentPid",
"message": {...}}``, or ``"line": "..."`` instead of ``message`` for what the agent
sent that was not JSON. Secret values from the environment are masked. The file
is emptied once when the run starts; every worker then appends whole lines with
one ``write`` each (O_APPEND), so concurrent agents never tear each other's lines.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import orjson

from waza.protocol.errors import ConfigError
from waza.protocol.secrets import Redactor


def reset(path: Path) -> None:
    """Empty (or create) the log before the run; ConfigError when it cannot be written."""
    try:
        path.write_bytes(b"")
    except OSError as exc:
        raise ConfigError(f"cannot be written: {exc.strerror or exc}", field="--raw-log", source=str(path)) from None


class RawLog:
    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._redact = Redactor()
        self.prompt_id: str | None = None

    def write(self, direction: str, data: bytes, is_json: bool, pid: int | None) -> None:
        head = orjson.dumps({"ts": round(time.time() * 1000, 3), "dir": direction, "promptId": self.prompt_id, "agentPid": pid})
        body = b',"message":' + data.strip() if is_json else b',"line":' + orjson.dumps(data.decode("utf-8", "replace"))
        os.write(self._fd, self._redact(head[:-1] + body + b"}\n"))

    def close(self) -> None:
        os.close(self._fd)
