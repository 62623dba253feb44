"""Standard output as bytes, whatever ``sys.stdout`` is at the moment.

A terminal or a pipe gives its binary ``buffer``; a Jupyter kernel's
``OutStream`` and ``contextlib.redirect_stdout(io.StringIO())`` are text
streams with no buffer under them, and get the bytes decoded (waza writes
UTF-8 only). Looked up when a writer starts, never cached at import, so a
caller's redirection is honoured and nothing of the caller's is replaced.

A writer of results to standard output *claims* it (``claim``/``release``):
while any claim is held, waza's in-process graders have their ``print()``
sent to stderr so it cannot land among the JSONL lines; with none held
(results go to a file, as in a notebook) ``sys.stdout`` is left alone.
"""

from __future__ import annotations

import codecs
import io
import sys
from typing import IO, TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

__all__ = ["claim", "claimed", "release", "stdout_bytes"]


class _TextRaw(io.RawIOBase):
    """A text stream with no byte buffer under it, taking bytes: decoded (UTF-8, a character split between
    writes is kept for the next) and handed on at once. ``close`` only flushes: the stream is the caller's."""

    def __init__(self, text: TextIO) -> None:
        self.text = text
        self.decoder = codecs.getincrementaldecoder("utf-8")()

    def writable(self) -> bool:
        return True

    def write(self, data: ReadableBuffer, /) -> int:
        chunk = bytes(data)
        self.text.write(self.decoder.decode(chunk))
        self.text.flush()
        return len(chunk)

    def close(self) -> None:
        if not self.closed:
            self.text.flush()
        super().close()


def stdout_bytes() -> IO[bytes]:
    """``sys.stdout`` as it is now, as bytes: its buffer where it has one, else written through its text."""
    buffer: IO[bytes] | None = getattr(sys.stdout, "buffer", None)
    return buffer if buffer is not None else io.BufferedWriter(_TextRaw(sys.stdout))


_claims = 0


def claim() -> IO[bytes]:
    """Standard output for a writer of results (``stdout_bytes``), noted until ``release``."""
    global _claims
    _claims += 1
    return stdout_bytes()


def release() -> None:
    """A writer's claim ends (once per ``claim``)."""
    global _claims
    _claims = max(0, _claims - 1)


def claimed() -> bool:
    """Some run is writing its results to standard output now."""
    return _claims > 0
