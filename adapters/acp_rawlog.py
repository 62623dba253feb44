"""``--raw-log FILE``: every JSON-RPC message in both directions, as JSONL, for replay and debugging.

One line per message: ``{"ts": epoch ms, "dir": "out"|"in", "promptId", "agentPid",
"message": {...}}``, or ``"line": "..."`` instead of ``message`` for what the agent
sent that was not JSON. Secret values from the environment are masked, however
the agent escaped them, and so is a secret an agent streams across message
chunks (a byte a chunk, even): the text of each stream of chunks (a session's
message or thought) goes through a :class:`~waza.protocol.io.secrets.StreamMasker`,
which holds a chunk back while the stream's end could still be the start of a
secret; lines after a held one wait with it, so the log keeps its order. What is
held is written when the prompt ends or the log closes. The file is emptied once
when the run starts; every worker then appends whole lines with one ``write``
each (O_APPEND), so concurrent agents never tear each other's lines.
"""

from __future__ import annotations

import os
import time
from collections import deque
from pathlib import Path
from typing import Any

import orjson

from waza.protocol.errors import ConfigError
from waza.protocol.io.secrets import Redactor, StreamMasker


def reset(path: Path) -> None:
    """Empty (or create) the log before the run; ConfigError when it cannot be written."""
    try:
        path.write_bytes(b"")
    except OSError as exc:
        raise ConfigError(f"cannot be written: {exc.strerror or exc}", field="AcpAgent.raw_log", source=str(path)) from None


class _Line:
    """A line of the log; a streamed chunk's waits (``data`` None) until its text is masked."""

    __slots__ = ("data", "head", "message", "update")

    def __init__(self, head: bytes, data: bytes | None, message: Any = None, update: Any = None) -> None:
        self.head, self.data, self.message, self.update = head, data, message, update


class RawLog:
    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._redact = Redactor()
        self._prompt_id: str | None = None
        self._queue: deque[_Line] = deque()  # lines not written yet, in order
        self._streams: dict[tuple[str, str], tuple[StreamMasker, deque[_Line]]] = {}

    @property
    def prompt_id(self) -> str | None:
        return self._prompt_id

    @prompt_id.setter
    def prompt_id(self, value: str | None) -> None:
        self._drain()  # a new prompt: the last one's streams have ended
        self._prompt_id = value

    def write(self, direction: str, data: bytes, is_json: bool, pid: int | None) -> None:
        head = orjson.dumps({"ts": round(time.time() * 1000, 3), "dir": direction, "promptId": self._prompt_id, "agentPid": pid})
        chunk = self._chunk(data) if is_json and self._redact.longest else None
        if chunk is None:
            body = b',"message":' + data.strip() if is_json else b',"line":' + orjson.dumps(data.decode("utf-8", "replace"))
            self._queue.append(_Line(head, self._redact(head[:-1] + body + b"}\n", decode=is_json)))
        else:
            key, message, update = chunk
            line = _Line(head, None, message, update)
            self._queue.append(line)
            masker, waiting = self._streams.setdefault(key, (StreamMasker(self._redact), deque()))
            waiting.append(line)
            self._fill(waiting, masker.push(update["content"]["text"]))
        self._flush()

    def _chunk(self, data: bytes) -> tuple[tuple[str, str], Any, Any] | None:
        """A streamed text chunk's stream key, message and update; None for any other message."""
        try:
            message = orjson.loads(data)
            update = message["params"]["update"]
            text = update["content"]["text"]
            key = (str(message["params"].get("sessionId")), str(update["sessionUpdate"]))
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
            return None
        return (key, message, update) if isinstance(text, str) else None

    def _fill(self, waiting: deque[_Line], texts: list[str]) -> None:
        for text in texts:
            line = waiting.popleft()
            line.update["content"]["text"] = text
            body = b',"message":' + orjson.dumps(line.message)
            line.data = self._redact(line.head[:-1] + body + b"}\n", decode=True)

    def _flush(self) -> None:
        while self._queue and (data := self._queue[0].data) is not None:
            self._queue.popleft()
            os.write(self._fd, data)

    def _drain(self) -> None:
        for masker, waiting in self._streams.values():
            self._fill(waiting, masker.drain())
        self._streams.clear()
        self._flush()

    def close(self) -> None:
        self._drain()
        os.close(self._fd)
