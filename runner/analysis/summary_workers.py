"""``waza summarize`` over a regular file in several processes: chunks summarized side by side, written in order.

Summarizing is Python per line (a decode, a summary, an encode), so one process
keeps one core busy; on a large file more cores finish sooner. The file after
its first line (read here: it decides the file's kind) is cut into chunks of
``chunk`` bytes; a chunk holds the lines that *start* in it (the line across its
end is completed from the next one, the line across its start left to the
previous one), so every line belongs to exactly one chunk. This process and
``jobs - 1`` workers (spawned interpreters) each take the next chunk no one has
taken, read it from the file itself and summarize it; a worker sends the
summaries, where the chunk starts and the error that stopped it, if any, through
a pipe, and this process writes the chunks in file order, taking a chunk itself
whenever the next one to write is not finished yet. Taking a chunk needs one of
:data:`_AHEAD` slots per process, given back as each chunk is written, so the
chunks finished ahead of the writer (and the memory they hold) stay bounded
whatever the file's size, and no process waits for another that the machine has
not scheduled (each takes what is left, the command included, from the start,
while the workers are still starting).

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
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Semaphore as SemaphoreType
from typing import cast

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
        taken = context.Value("q", 0)  # the chunks taken by some process so far (the next one to take)
        slots = context.Semaphore(_AHEAD * jobs)  # chunks taken but not yet written, at most
        workers: dict[Connection, BaseProcess] = {}
        done: dict[int, Chunk] = {}  # finished chunks, by number, until their turn to be written
        try:
            for k in range(1, min(jobs, chunks)):
                receive, send = context.Pipe(duplex=False)
                _widen(send)
                args = (path, source, kind, width, markdown, start, size, chunk, taken, slots, send)
                started = context.Process(target=_work, args=args, name=f"waza-summarize-{k}", daemon=True)
                started.start()
                send.close()
                workers[receive] = started
            for i in range(chunks):
                while i not in done:
                    # Take the next chunk when one is left within bounds; take in what the workers finished
                    # (without waiting, unless this process had nothing else to do).
                    mine = _take(taken, slots, chunks)
                    if mine is not None:
                        done[mine] = _summarize_chunk(fd, start, size, chunk, mine, source, kind, width, markdown)
                    if not workers and mine is None:
                        raise WazaError(f"{source}: a summarize worker ended without the chunk it took")
                    for ready in wait(list(workers), timeout=0 if mine is not None else None):
                        receive = cast(Connection, ready)
                        try:
                            number, *finished = receive.recv()
                            done[number] = (*finished, receive.recv_bytes())
                        except EOFError:  # it has sent all it took (then exits 0) or died
                            ended = workers.pop(receive)
                            ended.join()
                            if ended.exitcode:
                                raise WazaError(
                                    f"{source}: a summarize worker ended early (exit code {ended.exitcode})"
                                ) from None
                at, read, error, output = done.pop(i)
                write(output)
                slots.release()
                count += read
                if error is not None:  # numbered within its chunk, which starts at byte ``at``, after the first line
                    number = first[0] + _read(fd, start, at - start).count(b"\n") + error.line
                    raise JsonlError(source, number, error.message, error.field or "")
        finally:
            for receive, worker in workers.items():
                receive.close()
                if worker.is_alive():
                    worker.terminate()
                worker.join()
    return count


#: A summarized chunk: the byte its first line starts at, its non-blank lines read, the JsonlError that
#: stopped it (numbered from its first line) or None, its summaries.
Chunk = tuple[int, int, JsonlError | None, bytes | bytearray]

#: Chunks per process that may be summarized ahead of the one being written.
_AHEAD = 4


def _take(taken: Synchronized[int], slots: SemaphoreType, chunks: int, block: bool = False) -> int | None:
    """The number of the next chunk no process has taken, now this process's; None when every chunk is
    taken, or when ``slots`` has none free (without waiting for one unless ``block``)."""
    if not slots.acquire(block):
        return None
    with taken.get_lock():
        if taken.value < chunks:
            taken.value += 1
            return taken.value - 1
    slots.release()
    return None


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
    source: str,
    kind: RunKind,
    width: int,
    markdown: bool,
    start: int,
    size: int,
    chunk: int,
    taken: Synchronized[int],
    slots: SemaphoreType,
    send: Connection,
) -> None:
    """Take chunks of ``chunk`` bytes of ``path`` (from ``start`` to ``size``) one after the other until none is
    left, and send each: (its number, where it starts, its non-blank lines, the JsonlError that stopped it or
    None), then its summaries as bytes (not pickled: no copy more)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command answers an interrupt, and ends its workers
    chunks = -(-(size - start) // chunk)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        while (i := _take(taken, slots, chunks, block=True)) is not None:
            at, read, error, output = _summarize_chunk(fd, start, size, chunk, i, source, kind, width, markdown)
            try:
                send.send((i, at, read, error))
                send.send_bytes(output)
            except BrokenPipeError:  # the command ended without waiting for this chunk
                return
            if error is not None:
                return
    finally:
        os.close(fd)
        send.close()
