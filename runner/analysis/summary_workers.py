"""``waza summarize`` over a regular file in several processes: chunks summarized side by side, written in order.

Summarizing is Python per line (a decode, a summary, an encode), so one process
keeps one core busy; on a large file more cores finish sooner. The file after
its first line (read here: it decides the file's kind) is cut into chunks of
``chunk`` bytes; a chunk holds the lines that *start* in it (the line across its
end is completed from the next one, the line across its start left to the
previous one), so every line belongs to exactly one chunk. Chunks are given
out in order: each of ``jobs - 1`` workers (spawned interpreters) always has the
numbers of a few waiting (sent through a pipe), and this process takes the next
one itself whenever no worker needs one and not too many are finished ahead of
the one being written (:data:`_AHEAD` per process). A worker reads its chunks
from the file itself and sends each one's summaries, where it starts and the
error that stopped it, if any, through another pipe; this process writes the
chunks in file order. So memory stays at a few chunks whatever the file's size,
no process waits long on one the machine has not scheduled (a worker holds a few
chunks, not a turn), this process works from the start while the workers are
still starting, and a worker that dies holds nothing but its chunks: its pipe
ends, and the run ends with an error naming its exit.

The output is the same as one process's, byte for byte: every line is summarized
by :func:`.summary_lines.write_summaries` as there, and a chunk is read by
:func:`.jsonl.iter_lines` as a file is (line length bound, blank lines, CRLF); a
chunk that starts with a byte-order mark is read behind a newline of its own, as
a mark is only taken off a file's first line. A bad line ends the output after
the summaries of the lines before it, and its error names its line in the whole
file (the newlines before its chunk, counted then, plus its place in the chunk).
What is read is the file as long as it was when the command started: lines
appended since are not read.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import cast

import msgspec

from waza.protocol.analysis_records import RunKind
from waza.protocol.errors import WazaError
from waza.protocol.jsonl import BOM, DEFAULT_MAX_LINE, JsonlError, display_name, iter_lines, open_input
from waza.runner.analysis.summary_lines import write_summaries

__all__ = ["CHUNK", "summarize_with_workers"]

#: Bytes of the file per chunk: what a worker holds at once (with its summaries).
CHUNK = 1 << 20


def summarize_with_workers(
    path: str,
    jobs: int,
    width: int,
    markdown: bool,
    write: Callable[[bytes | bytearray], object],
    chunk: int = CHUNK,
) -> int:
    """Summarize the regular file ``path`` in ``jobs`` processes (this one and ``jobs - 1`` workers) by chunks
    of ``chunk`` bytes, handing the summaries to ``write`` in file order; the number of non-blank lines read
    (0: the file holds none). A bad line is a JsonlError raised once the summaries of every line before it
    are written."""
    source = display_name(path)
    pending = bytearray()
    with open_input(path) as stream:
        first = next(iter_lines(stream, source), None)
        if first is None:
            return 0
        kind, count = write_summaries([first], source, None, width, markdown, pending)
        write(pending)
        assert kind is not None  # (for the type checker) write_summaries read a line, so it knows the kind
        fd, start = stream.fileno(), stream.tell()  # the chunks are read with pread: no buffer, no seek
        size = os.fstat(fd).st_size
        chunks = -(-(size - start) // chunk)
        context = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing of this process is shared
        workers: dict[Connection, _Worker] = {}  # by the pipe its summaries come through
        done: dict[int, Chunk] = {}  # finished chunks, by number, until their turn to be written
        given = 0  # chunks given out so far (to a worker or this process), in order
        try:
            for k in range(1, min(jobs, chunks)):
                receive, send = context.Pipe(duplex=False)
                orders, order = context.Pipe(duplex=False)
                _widen(send)
                args = (path, _identity(os.fstat(fd)), source, kind, width, markdown, start, size, chunk, orders, send)
                process = context.Process(target=_work, args=args, name=f"waza-summarize-{k}", daemon=True)
                process.start()
                send.close()
                orders.close()
                workers[receive] = _Worker(process, order)
            for i in range(chunks):
                while i not in done:
                    for worker in workers.values():  # keep every worker supplied
                        while worker.waiting < _QUEUED and given < chunks:
                            try:
                                worker.order.send(given)
                            except BrokenPipeError:
                                raise _ended(source, worker.process) from None
                            worker.waiting += 1
                            given += 1
                    # The next chunk, unless every worker is supplied and enough are finished ahead.
                    mine = given < chunks and len(done) < _AHEAD * jobs
                    if mine:
                        done[given] = _summarize_chunk(fd, start, size, chunk, given, source, kind, width, markdown)
                        given += 1
                    for ready in wait(list(workers), timeout=0 if mine else None):
                        receive = cast(Connection, ready)
                        try:
                            number, *finished = receive.recv()
                            done[number] = (*finished, receive.recv_bytes())
                        except EOFError:  # a worker ends only when told to, or dies
                            raise _ended(source, workers[receive].process) from None
                        workers[receive].waiting -= 1
                at, read, error, output = done.pop(i)
                write(output)
                count += read
                if error is not None:  # numbered within its chunk, which starts at byte ``at``, after the first line
                    number = first[0] + _newlines(fd, start, at) + error.line
                    raise JsonlError(source, number, error.message, error.field or "")
        finally:
            for receive, worker in workers.items():
                with contextlib.suppress(OSError):
                    worker.order.send(None)  # done: end
                worker.order.close()
                receive.close()
                worker.process.join(_END)
                if worker.process.is_alive():
                    worker.process.terminate()
                    worker.process.join()
    return count


#: A summarized chunk: the byte its first line starts at, its non-blank lines read, the JsonlError that
#: stopped it (numbered from its first line) or None, its summaries.
Chunk = tuple[int, int, JsonlError | None, bytes | bytearray]


def _ended(source: str, process: BaseProcess) -> WazaError:
    """The error for a worker that ended before it was told to (killed, out of memory, or it found another file)."""
    process.join()
    if process.exitcode == _CHANGED:
        return WazaError(f"{source}: the file was replaced while it was read (a summarize worker found another file)")
    return WazaError(f"{source}: a summarize worker ended early (exit code {process.exitcode})")


#: A worker's exit code when ``path`` no longer names the file this process opened.
_CHANGED = 3


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


class _Worker(msgspec.Struct):
    """A worker process, the pipe its orders (chunk numbers) go through, and how many it has not answered."""

    process: BaseProcess
    order: Connection
    waiting: int = 0


#: Chunks per process that may be finished ahead of the one being written.
_AHEAD = 4

#: Chunks given to a worker at a time: the next is there when it finishes one, and no more wait on a
#: worker that the machine does not schedule.
_QUEUED = 3

#: Seconds a worker is given to end by itself once told to.
_END = 5


def _summarize_chunk(
    fd: int, start: int, size: int, chunk: int, i: int, source: str, kind: RunKind, width: int, markdown: bool
) -> Chunk:
    """Chunk ``i`` of the file ``fd`` (``chunk`` bytes each from ``start`` to ``size``): (the byte its first line starts
    at, the non-blank lines read, the JsonlError that stopped it, numbered from its first line, or None, the
    summaries). Its lines are counted only for an error: a bad line is rare, and counting 1 MiB of lines took
    a tenth of summarizing them."""
    begin = start + i * chunk
    end = min(begin + chunk, size)
    at = _line_start(fd, begin)
    if at >= end:
        return at, 0, None, b""
    block = _read(fd, at, min(_line_start(fd, end), end + DEFAULT_MAX_LINE + 3) - at)  # the last line whole, or still too long
    behind = block.startswith(BOM)  # a mark is only taken off a file's line 1: then read it behind a newline
    pending = bytearray()
    try:
        _, read = write_summaries(
            iter_lines(io.BytesIO(b"\n" + block if behind else block), source), source, kind, width, markdown, pending
        )
    except JsonlError as exc:
        return at, 0, JsonlError(source, (exc.line or 0) - behind, exc.message, exc.field or ""), pending
    return at, read, None, pending


def _line_start(fd: int, at: int) -> int:
    """Where the first line of the file ``fd`` that starts at ``at`` or later starts (``at`` > 0)."""
    at -= 1  # a line starts at ``at`` when the byte before it ends one
    while piece := os.pread(fd, _PIECE, at):
        if (newline := piece.find(b"\n")) >= 0:
            return at + newline + 1
        at += len(piece)
    return at


def _read(fd: int, at: int, size: int) -> bytes:
    """``size`` bytes of the file ``fd`` from ``at`` (fewer at its end)."""
    pieces = []
    while size > 0 and (piece := os.pread(fd, size, at)):
        pieces.append(piece)
        at += len(piece)
        size -= len(piece)
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _newlines(fd: int, begin: int, end: int) -> int:
    """The newlines of the file ``fd`` from ``begin`` to ``end``, read a chunk at a time."""
    count = 0
    while begin < end and (piece := os.pread(fd, min(CHUNK, end - begin), begin)):
        count += piece.count(b"\n")
        begin += len(piece)
    return count


#: Bytes read at a time to find where a line ends.
_PIECE = 1 << 12


def _widen(pipe: Connection) -> None:
    """Let ``pipe`` hold a few chunks' summaries (on Linux: 1 MiB, not 64 KiB), so that a worker goes on with
    its next chunk while the command is busy with one of its own."""
    if sys.platform == "linux":
        import fcntl  # (not on every system)

        with contextlib.suppress(OSError):  # over the system's limit for a user: the pipe stays as it is
            fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)


def _work(
    path: str,
    identity: tuple[int, int],
    source: str,
    kind: RunKind,
    width: int,
    markdown: bool,
    start: int,
    size: int,
    chunk: int,
    orders: Connection,
    send: Connection,
) -> None:
    """Summarize the chunks of ``chunk`` bytes of ``path`` (from ``start`` to ``size``) whose numbers come
    through ``orders`` until None comes, and send each: (its number, where it starts, its non-blank lines,
    the JsonlError that stopped it or None), then its summaries as bytes (not pickled: no copy more).
    ``path`` is opened again here: a file that is not the command's (``identity``: device and inode) ends
    the worker with :data:`_CHANGED` before anything of it is read."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    if _identity(os.fstat(fd)) != identity:
        os.close(fd)
        sys.exit(_CHANGED)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command answers an interrupt, and ends its workers
    try:
        while (i := orders.recv()) is not None:
            at, read, error, output = _summarize_chunk(fd, start, size, chunk, i, source, kind, width, markdown)
            send.send((i, at, read, error))
            send.send_bytes(output)
    except (EOFError, BrokenPipeError):  # the command ended without waiting for it
        pass
    finally:
        os.close(fd)
        send.close()
        orders.close()
