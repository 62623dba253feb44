"""JSONL in and out: one record a line, read lazily, written whole and flushed.

Readers never hold more than one line; errors carry the file, line number and
field so a user can go straight to the problem. Writers emit each record as a
single ``write`` of complete bytes followed by a flush, so a reader (or a
resumed run) only ever sees whole lines, except after a hard kill, which
``repair_torn_tail`` undoes.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

import msgspec
import orjson

from .codec import Record, RecordError
from .errors import ConfigError

R = TypeVar("R", bound=Record)

BOM = b"\xef\xbb\xbf"


class JsonlError(ConfigError):
    """A bad line in an input file: printed as ``file:line: field 'x': message`` (line 0: the whole file)."""

    source: str
    line: int
    field: str

    def __init__(self, source: str, line: int, message: str, field: str = "") -> None:
        super().__init__(message, source=source, line=line, field=field)


def display_name(path: str | Path) -> str:
    return "<stdin>" if str(path) == "-" else str(path)


def open_input(path: str | Path) -> IO[bytes]:
    """Open a file or ``-`` (stdin) for binary reading; a clear error when it cannot be read."""
    if str(path) == "-":
        return sys.stdin.buffer
    p = Path(path)
    if p.is_dir():
        raise JsonlError(str(path), 0, "is a directory, not a JSONL file")
    try:
        return p.open("rb")
    except OSError as exc:
        raise JsonlError(str(path), 0, f"cannot be read: {exc.strerror or exc}") from None


#: The longest line any JSONL input may hold (``--max-line-mb`` raises it): an endless
#: line (``/dev/zero``) is an error at this size instead of unbounded memory.
DEFAULT_MAX_LINE_MB = 64
_max_line_bytes = DEFAULT_MAX_LINE_MB << 20


def set_max_line_mb(megabytes: int) -> None:
    """Raise (or lower) the line limit for every reader in this process."""
    global _max_line_bytes
    _max_line_bytes = megabytes << 20


def iter_lines(stream: IO[bytes], source: str = "<input>") -> Iterator[tuple[int, bytes]]:
    """Non-blank lines with their 1-based numbers; a leading BOM and CRLF endings are accepted.

    A line is read with a bound: one longer than the limit is a JsonlError naming
    ``source`` and the line, never a read without end.
    """
    limit = _max_line_bytes
    number = 0
    while line := stream.readline(limit + 3):
        number += 1
        if len(line.rstrip(b"\r\n")) > limit:
            raise JsonlError(source, number, f"line longer than {limit >> 20} MB (raise the limit with --max-line-mb)")
        if number == 1 and line.startswith(BOM):
            line = line[len(BOM) :]
        line = line.strip()
        if line:
            yield number, line


#: A run of 20 or more digits: the only way a JSON integer can exceed 64 bits.
#: Found by mapping every digit to ``0`` and looking for twenty of them: a regex search
#: (``\d{20}``) cost 30 µs on a 2 KB line, twenty times orjson's parse of it.
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 20


def has_long_digits(line: bytes) -> bool:
    """Whether ``line`` holds a run of 20 or more ASCII digits.

    Twenty digits in a row always cover two neighbouring bytes of every tenth
    one, so a sample of every tenth byte without two digits side by side rules
    the line out at a tenth of the cost (most lines: a 2 KB line's full check
    was 7 % of grading it); a line with such a pair gets the full check. (``find``, not
    ``in``: ``bytes in bytes`` first tries its operand as an integer and pays for a
    TypeError each time, which was 2 % of a capture's instructions.)"""
    if line[::10].translate(_DIGITS_TO_ZERO).find(b"00") < 0:
        return False
    return line.translate(_DIGITS_TO_ZERO).find(_LONG_RUN) >= 0


def _check_int(text: str) -> int:
    value = int(text)
    if not -(1 << 63) <= value < (1 << 64):
        raise ValueError(f"integer {text[:30]}{'...' if len(text) > 30 else ''} does not fit in 64 bits")
    return value


def parse_line(source: str, number: int, line: bytes) -> Any:
    """One JSON value; an integer beyond 64 bits is refused rather than silently made a float."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise JsonlError(source, number, f"invalid JSON ({exc.msg} at column {exc.colno})") from None
    if has_long_digits(line):  # rare: confirm with a parser that sees integers as written
        try:
            json.loads(line, parse_int=_check_int)
        except ValueError as exc:
            raise JsonlError(source, number, f"{exc} (write it as a string to keep it exact)") from None
    return value


def decode_line(source: str, number: int, line: bytes, cls: type[R]) -> R:
    """One record, decoded and validated straight from the line's bytes (``parse_line`` words a JSON error)."""
    if has_long_digits(line):
        parse_line(source, number, line)
    try:
        record: R = cls.from_json(line)
    except RecordError as exc:
        raise JsonlError(source, number, exc.message, exc.path) from None
    except msgspec.DecodeError:  # not JSON at all
        parse_line(source, number, line)
        raise JsonlError(source, number, "invalid JSON") from None
    return record


def read_records(path: str | Path, cls: type[R]) -> Iterator[tuple[int, R]]:
    """Lazily decode a JSONL file (or stdin) into records."""
    source = display_name(path)
    stream = open_input(path)
    try:
        for number, line in iter_lines(stream, source):
            yield number, decode_line(source, number, line, cls)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def dumps(value: Record | dict[str, Any]) -> bytes:
    if isinstance(value, Record):
        return value.to_json() + b"\n"
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE)


class JsonlWriter:
    """Writes one complete line per record and flushes it, so every line on disk is whole."""

    def __init__(self, path: str | Path, *, append: bool = False) -> None:
        self.path = str(path)
        if self.path == "-":
            self._stream: IO[bytes] = sys.stdout.buffer
            self._owned = False
        else:
            self._stream = open(self.path, "ab" if append else "wb")  # noqa: SIM115 - closed in close()
            self._owned = True
        self.count = 0

    def write(self, value: Record | dict[str, Any]) -> None:
        self.write_bytes(dumps(value))

    def write_bytes(self, line: bytes) -> None:
        self._stream.write(line)
        self._stream.flush()
        self.count += 1

    def close(self) -> None:
        if self._owned:
            self._stream.close()
        else:
            self._stream.flush()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def repair_torn_tail(path: str | Path) -> int:
    """Cut a partial last line (left by a killed writer); returns how many bytes were removed."""
    p = Path(path)
    if not p.exists():
        return 0
    size = p.stat().st_size
    if size == 0:
        return 0
    with p.open("rb+") as f:
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return 0
        block = 1 << 16
        pos = size
        while pos > 0:
            start = max(0, pos - block)
            f.seek(start)
            chunk = f.read(pos - start)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                keep = start + nl + 1
                f.truncate(keep)
                f.flush()
                os.fsync(f.fileno())
                return size - keep
            pos = start
        f.truncate(0)
        return size


def iter_existing(path: str | Path) -> Iterator[dict[str, Any]]:
    """Whole, parseable lines of an output file being resumed (a torn tail is repaired first)."""
    p = Path(path)
    if not p.exists():
        return
    with p.open("rb") as f:
        for number, line in iter_lines(f, str(path)):
            value = parse_line(str(path), number, line)
            if isinstance(value, dict):
                yield value
