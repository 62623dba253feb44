"""JSONL in and out: one record a line, read lazily, written whole and flushed.

Readers never hold more than one line; errors carry the file, line number and
field so a user can go straight to the problem. Writers emit each record as a
single ``write`` of complete bytes followed by a flush, so a reader (or a
resumed run) only ever sees whole lines, except after a hard kill, which
``repair_torn_tail`` undoes.
"""

from __future__ import annotations

import io
import json
import os
import select
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar, cast

import msgspec
import orjson

from .codec import Record, RecordError
from .errors import ConfigError
from .io import stdout

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


#: Folders a person may give where a JSONL file is wanted, by the file that marks them, and what they are.
_RUN_FOLDERS = (("eval.yaml", "an eval suite"), ("task.toml", "a Harbor task"), ("task.yaml", "a Terminal-Bench 1.x task"))


def _folder_hint(folder: Path) -> str:
    """What a folder given as a JSONL input is, when ``waza run`` runs it (a suite or a benchmark task)."""
    for name, what in _RUN_FOLDERS:
        if (folder / name).exists():
            return f" (it holds {name}: {what}, which `waza run {folder}` runs)"
    return ""


def open_input(path: str | Path, on_wait: Callable[[], None] | None = None) -> IO[bytes]:
    """Open a file or ``-`` (stdin) for binary reading; a clear error when it cannot be read.

    Stdin, a pipe or a FIFO is read from its descriptor by a ``DescriptorReader``
    (see there why), which calls ``on_wait`` before each read that may wait."""
    if str(path) == "-":
        return cast(IO[bytes], DescriptorReader(0, owned=False, on_wait=on_wait))
    p = Path(path)
    if p.is_dir():
        raise JsonlError(str(path), 0, f"is a directory, not a JSONL file{_folder_hint(p)}")
    try:
        if is_regular(p) or not p.exists():
            return p.open("rb", buffering=1 << 16)  # read a line at a time: 8 KiB is a system call every few lines
        return cast(IO[bytes], DescriptorReader(os.open(p, os.O_RDONLY | os.O_CLOEXEC), on_wait=on_wait))
    except OSError as exc:
        raise JsonlError(str(path), 0, f"cannot be read: {exc.strerror or exc}") from None


def is_regular(path: str | Path) -> bool:
    """Whether ``path`` is a regular file (False for ``-``, a pipe, a FIFO, a device, or a missing path)."""
    if str(path) == "-":
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


class DescriptorReader(io.RawIOBase):
    """Stdin, a pipe or a FIFO, read with ``os.read`` on the descriptor itself.

    Not ``sys.stdin.buffer``: a thread blocked in its ``readline`` holds the
    buffer's lock, and the interpreter, closing stdin as it exits on SIGINT or
    SIGTERM, aborts on that lock (``Fatal Python error: _enter_buffered_busy``).
    A read here holds no lock of Python's, so a waiting thread is simply left
    behind. ``on_wait`` is called before a read that may wait for the writer: a
    reader handing lines on in batches hands on what it has, instead of waiting
    for a full batch that may never come.
    """

    CHUNK = 1 << 16

    def __init__(self, fd: int, *, owned: bool = True, on_wait: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.fd = fd
        self.owned = owned
        self.on_wait = on_wait
        self._buffer = bytearray()
        self._eof = False
        self._poll: select.poll | None = None

    def readable(self) -> bool:
        return True

    def readline(self, size: int | None = -1) -> bytes:
        """One line with its newline, or its first ``size`` bytes; ``b""`` at the end."""
        limit = size if size is not None and size >= 0 else None
        start = 0
        while True:
            end = self._buffer.find(b"\n", start)
            if end >= 0:
                return self._take(end + 1 if limit is None else min(end + 1, limit))
            if limit is not None and len(self._buffer) >= limit:
                return self._take(limit)
            if self._eof:
                return self._take(len(self._buffer))
            start = len(self._buffer)
            self._fill()

    def readinto(self, buffer: Any) -> int:
        if not self._buffer and not self._eof:
            self._fill()
        n = min(len(buffer), len(self._buffer))
        buffer[:n] = self._take(n)
        return n

    def _fill(self) -> None:
        if self.on_wait is not None and not self._ready():
            self.on_wait()
        chunk = os.read(self.fd, self.CHUNK)
        if chunk:
            self._buffer += chunk
        else:
            self._eof = True

    def _ready(self) -> bool:
        """Whether a read would return at once (data or the end are there): no need to hand on early."""
        if self._poll is None:
            self._poll = select.poll()
            self._poll.register(self.fd, select.POLLIN)
        return bool(self._poll.poll(0))

    def _take(self, n: int) -> bytes:
        with memoryview(self._buffer) as view:  # one copy, not a slice and then a copy of it
            line = bytes(view[:n])
        del self._buffer[:n]
        return line

    def close(self) -> None:
        if not self.closed and self.owned:
            os.close(self.fd)
        super().close()


#: The longest line an input file may hold by default (``Limits.line_mb`` raises it): an
#: endless line (``/dev/zero``) is an error at this size instead of unbounded memory.
DEFAULT_MAX_LINE_MB = 64
DEFAULT_MAX_LINE = DEFAULT_MAX_LINE_MB << 20


def over_limit(line: bytes, limit: int) -> bool:
    """Whether ``line`` (as read, with its line ending) holds more than ``limit`` bytes: counted, not
    stripped, so a line at the limit is not copied once more just to be measured."""
    size = len(line)
    if line.endswith(b"\n"):
        size -= 2 if line.endswith(b"\r\n") else 1
    return size > limit


def line_too_long(source: str, number: int, limit: int) -> JsonlError:
    """The error for a line longer than ``limit`` bytes."""
    return JsonlError(source, number, f"line longer than {limit >> 20} MB (raise the limit: Limits.line_mb)")


def iter_lines(stream: IO[bytes], source: str = "<input>", max_line: int = DEFAULT_MAX_LINE) -> Iterator[tuple[int, bytes]]:
    """Non-blank lines with their 1-based numbers; a leading BOM and CRLF endings are accepted.

    A line is read with a bound: one longer than ``max_line`` bytes is a JsonlError
    naming ``source`` and the line, never a read without end.
    """
    limit = max_line
    number = 0
    while line := stream.readline(limit + 3):
        number += 1
        if len(line) > limit and over_limit(line, limit):  # (only a line longer than the limit can be over it)
            raise line_too_long(source, number, limit)
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
    the line out at a tenth of the cost (most lines). Two such bytes are often
    digits of different numbers, so each pair found is confirmed on the 29 bytes
    around it that a run through both must lie in, not on the whole line.
    (``find``, not ``in``: ``bytes in bytes`` first tries its operand as an
    integer and pays for a TypeError each time.)"""
    sample = line[::10].translate(_DIGITS_TO_ZERO)
    at = sample.find(b"00")
    while at >= 0:  # digits at 10*at and 10*at + 10: a run through both starts at 10*at - 9 or later
        start = 10 * at
        if line[max(start - 9, 0) : start + 20].translate(_DIGITS_TO_ZERO).find(_LONG_RUN) >= 0:
            return True
        at = sample.find(b"00", at + 1)
    return False


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


def read_records(path: str | Path, cls: type[R], max_line: int = DEFAULT_MAX_LINE) -> Iterator[tuple[int, R]]:
    """Lazily decode a JSONL file (or stdin) into records."""
    source = display_name(path)
    with open_input(path) as stream:
        for number, line in iter_lines(stream, source, max_line):
            yield number, decode_line(source, number, line, cls)


def dumps(value: Record | dict[str, Any]) -> bytes:
    if isinstance(value, Record):
        return value.to_json() + b"\n"
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE)


class OutputFile:
    """A file results are written to, or ``-`` for standard output (claimed while it is open, never closed).

    The file is opened at the first record, not before: a run that fails before
    it has a record (an agent that cannot start) leaves an existing file as it
    was and creates none. ``close(complete=True)`` opens it anyway, so a run
    that finished with no record still says so with an empty file.
    """

    #: ``open``'s buffering for the file (standard output keeps its own).
    buffering = -1

    def __init__(self, path: str | Path, *, append: bool = False) -> None:
        self.path = str(path)
        self.append = append
        self._stdout = self.path == "-"
        self._stream: IO[bytes] | None = stdout.claim() if self._stdout else None

    def _open(self) -> IO[bytes]:
        if self._stream is None:
            mode = "ab" if self.append else "wb"
            self._stream = open(self.path, mode, buffering=self.buffering)  # noqa: SIM115 - closed in close()
        return self._stream

    def close(self, *, complete: bool = False) -> None:
        """Close the file; ``complete``: the run finished, so a file never opened is created (emptied) now."""
        if self._stream is None and complete:
            self._open()
        if self._stdout:
            self._stdout = False
            stdout.release()
            if self._stream is not None:
                self._stream.flush()
        elif self._stream is not None:
            self._stream.close()


class JsonlWriter(OutputFile):
    """Writes one complete line per record and flushes it, so every line on disk is whole."""

    def __init__(self, path: str | Path, *, append: bool = False) -> None:
        super().__init__(path, append=append)
        self.count = 0

    def write(self, value: Record | dict[str, Any]) -> None:
        self.write_bytes(dumps(value))

    def write_bytes(self, line: bytes) -> None:
        stream = self._open()
        stream.write(line)
        stream.flush()
        self.count += 1

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(complete=exc[0] is None)


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


def iter_existing(path: str | Path, max_line: int = DEFAULT_MAX_LINE) -> Iterator[tuple[int, dict[str, Any]]]:
    """Whole, parseable lines of an output file being resumed (a torn tail is repaired first), with their numbers."""
    p = Path(path)
    if not p.exists():
        return
    with p.open("rb") as f:
        for number, line in iter_lines(f, str(path), max_line):
            value = parse_line(str(path), number, line)
            if isinstance(value, dict):
                yield number, value
