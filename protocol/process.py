"""Child processes under the protocol's rules.

Every child (an agent, a grader, a terminal an agent asked for) starts in its
own process group so that a timeout, a crash or an interrupt can kill it *and*
whatever it spawned; its stderr is always drained (a chatty child must never
fill the pipe and deadlock) and only a bounded tail is kept; its stdout is read
up to a cap, past which the child is killed rather than buffered without end.
"""

from __future__ import annotations

import asyncio
import functools
import os
import selectors
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc

STDOUT_LIMIT = 10 * 1024 * 1024
STDERR_TAIL = 8 * 1024
LINE_LIMIT = 64 * 1024 * 1024


class Tail:
    """The last ``limit`` bytes of a stream, as text for a record or an error message."""

    def __init__(self, limit: int = STDERR_TAIL) -> None:
        self.limit = limit
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        self._chunks.append(data)
        self._size += len(data)
        while self._size - len(self._chunks[0]) >= self.limit:
            self._size -= len(self._chunks.popleft())

    def text(self) -> str:
        data = b"".join(self._chunks)[-self.limit :]
        return data.decode("utf-8", "replace")


async def drain(stream: anyio.abc.ByteReceiveStream | None, tail: Tail) -> None:
    if stream is None:
        return
    try:
        async for chunk in stream:
            tail.add(chunk)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass


class _PidfdWatcher(asyncio.AbstractChildWatcher):
    """Child exits through a pidfd in the poll of whichever asyncio loop started the child.

    Python 3.11's own PidfdChildWatcher is bound to one loop: once waza's loop ends,
    every other loop in the process (a notebook's, a library's in another thread)
    would find the process-wide watcher "not activated" and could start no subprocess.
    This one binds each child to the loop running when it is started, so it is
    active for every loop, in every thread."""

    def __init__(self) -> None:
        self._children: dict[int, tuple[asyncio.AbstractEventLoop, int]] = {}

    def add_child_handler(self, pid: int, callback: Callable[..., object], *args: object) -> None:
        loop = asyncio.get_running_loop()
        pidfd = os.pidfd_open(pid)
        self._children[pid] = (loop, pidfd)

        def exited() -> None:
            if self._children.pop(pid, None) is None:
                return
            loop.remove_reader(pidfd)
            try:
                _, status = os.waitpid(pid, 0)
                code = os.waitstatus_to_exitcode(status)
            except ChildProcessError:  # reaped elsewhere: asyncio's own convention for "unknown"
                code = 255
            finally:
                os.close(pidfd)
            callback(pid, code, *args)

        loop.add_reader(pidfd, exited)

    def remove_child_handler(self, pid: int) -> bool:
        entry = self._children.pop(pid, None)
        if entry is None:
            return False
        loop, pidfd = entry
        loop.remove_reader(pidfd)
        os.close(pidfd)
        return True

    def attach_loop(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Nothing to attach: each child is bound to its own loop."""

    def close(self) -> None:
        for pid in list(self._children):
            self.remove_child_handler(pid)

    def is_active(self) -> bool:
        return True

    def __enter__(self) -> _PidfdWatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _watch_children_with_pidfds() -> None:
    """Before Python 3.12, asyncio waits for every child in a thread of its own, and the
    exit reaches the event loop one thread hop later; a pidfd in the loop's own poll
    costs neither. Installed once per process (3.12 does this by itself); it serves
    every asyncio loop, not only waza's."""
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # not on asyncio (trio has no child watchers)
        return
    policy = asyncio.get_event_loop_policy()
    if not isinstance(policy.get_child_watcher(), _PidfdWatcher):
        policy.set_child_watcher(_PidfdWatcher())


async def spawn(
    argv: Sequence[str],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bool = True,
) -> anyio.abc.Process:
    """Start ``argv`` in a new session (its own process group), pipes on all three streams."""
    _watch_children_with_pidfds()
    return await anyio.open_process(
        list(argv),
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=str(cwd) if cwd is not None else None,
        env=env,
        start_new_session=True,
    )


async def send_and_close(stream: anyio.abc.ByteSendStream | None, data: bytes) -> None:
    """Write ``data`` to a child's stdin and close it; a child that closed its stdin early is its business."""
    if stream is None:
        return
    try:
        await stream.send(data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    finally:
        try:
            await stream.aclose()
        except (anyio.BrokenResourceError, OSError):
            pass


def kill_group(process: anyio.abc.Process, sig: int = signal.SIGKILL) -> None:
    """Signal the child's whole process group (grandchildren included); quiet if already gone."""
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


#: The environment variable that tags every process a turn started (see :func:`new_tag`, :func:`kill_tagged`).
TAG_VAR = "WAZA_PROCESS_TAG"
#: Seconds a child's pipes may stay open after it exited (a daemon it left holds them) before waza stops reading.
EXIT_GRACE = 1.0


def new_tag() -> str:
    """A fresh value for :data:`TAG_VAR`: every descendant of a child started with it inherits it.

    A process group does not hold a child that calls ``setsid``; the tag does,
    unless the process clears or rewrites its environment (a documented limit).
    """
    return f"{os.getpid()}-{time.monotonic_ns()}-{os.urandom(4).hex()}"


def kill_tagged(tag: str) -> int:
    """SIGKILL every process of this user whose environment carries ``tag``; how many. Linux (/proc) only."""
    needle = b"\0" + f"{TAG_VAR}={tag}".encode() + b"\0"
    killed = 0
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return 0
    for pid in pids:
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = b"\0" + f.read(1 << 20) + b"\0"
        except OSError:  # gone, or another user's
            continue
        if needle in environ:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
    return killed


async def reap(process: anyio.abc.Process) -> None:
    """Kill the group and wait, shielded so that cancellation never leaves a zombie or an orphan."""
    with anyio.CancelScope(shield=True):
        kill_group(process)
        await process.wait()
        await process.aclose()  # close the pipes too, or their transports outlive the loop


def exit_parts(returncode: int | None) -> tuple[int | None, int | None]:
    """(code, signal) from a Popen-style return code, where -N means killed by signal N."""
    if returncode is None:
        return None, None
    if returncode < 0:
        return None, -returncode
    return returncode, None


@dataclass(slots=True)
class ProcessOutcome:
    """What a one-shot child did: exit, output, and whether waza had to stop it."""

    returncode: int | None
    stdout: bytes
    stderr_tail: str
    duration_ms: float
    timed_out: bool = False
    stdout_overflow: bool = False

    @property
    def code(self) -> int | None:
        return exit_parts(self.returncode)[0]

    @property
    def signal(self) -> int | None:
        return exit_parts(self.returncode)[1]


async def run_once(
    argv: Sequence[str],
    *,
    stdin: bytes | None = None,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    stdout_limit: int = STDOUT_LIMIT,
    stderr_limit: int = STDERR_TAIL,
) -> ProcessOutcome:
    """Run a child to completion with the input on stdin; never raises for what the child does.

    Raises ``OSError`` only when the child cannot be started at all. The child is
    driven by a selector loop in an anyio worker thread: for a one-shot child
    that costs half the CPU of asyncio's subprocess transports (measured: 0.5 ms
    against 1.0 ms a spawn), which is the whole budget of a grader called per
    result. Cancelling the call (an interrupt) kills the child's group at once,
    which ends the thread. The run ends when the child exits, even when a
    descendant that left its process group (``setsid cmd &``) still holds the
    pipes: reading stops after EXIT_GRACE of silence, and nothing it writes
    later is read. That descendant is not killed here (a caller that tags the
    child's environment can, see :func:`kill_tagged`).
    """
    started: list[subprocess.Popen[bytes]] = []
    job = functools.partial(_run_blocking, list(argv), stdin, cwd, env, timeout, stdout_limit, stderr_limit, started)
    try:
        return await anyio.to_thread.run_sync(job, abandon_on_cancel=True)
    finally:
        if started and started[0].returncode is None:
            _killpg(started[0].pid)


def _killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _run_blocking(
    argv: list[str],
    stdin: bytes | None,
    cwd: str | Path | None,
    env: Mapping[str, str] | None,
    timeout: float | None,
    stdout_limit: int,
    stderr_limit: int,
    started: list[subprocess.Popen[bytes]],
) -> ProcessOutcome:
    clock = time.perf_counter()
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=str(cwd) if cwd is not None else None,
        env=env,
        start_new_session=True,
    )
    started.append(process)
    assert process.stdout is not None and process.stderr is not None
    out = bytearray()
    err = Tail(stderr_limit)
    timed_out = overflow = False
    deadline = None if timeout is None else time.monotonic() + timeout
    pending = memoryview(stdin or b"")
    exited_at: float | None = None
    with selectors.DefaultSelector() as selector:
        if process.stdin is not None:
            if pending:
                os.set_blocking(process.stdin.fileno(), False)
                selector.register(process.stdin, selectors.EVENT_WRITE)
            else:
                process.stdin.close()
        selector.register(process.stdout, selectors.EVENT_READ)
        selector.register(process.stderr, selectors.EVENT_READ)
        while selector.get_map():
            wait = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            if wait <= 0:
                timed_out = True
                break
            ready = selector.select(wait)
            if process.poll() is not None:
                if exited_at is None:
                    exited_at = time.monotonic()
                elif not ready:
                    # The child has exited but something (a grandchild) holds our pipes: end its group.
                    _killpg(process.pid)
                if not ready and time.monotonic() - exited_at > EXIT_GRACE:
                    break  # a silent daemon in a session of its own holds the pipes: the child is done
            for key, _ in ready:
                stream = key.fileobj
                if stream is process.stdin:
                    try:
                        pending = pending[os.write(key.fd, pending[: 1 << 16]) :]
                    except (BrokenPipeError, OSError):
                        pending = pending[:0]  # the child closed stdin without reading: its business
                    if not pending:
                        selector.unregister(stream)
                        stream.close()
                    continue
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(stream)
                elif stream is process.stdout:
                    if len(out) + len(chunk) > stdout_limit:
                        overflow = True
                        break
                    out.extend(chunk)
                else:
                    err.add(chunk)
            if overflow:
                break
    if not (timed_out or overflow) and process.poll() is None:
        # Its pipes are closed but the child runs on: it still gets the rest of its time.
        try:
            process.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    # Done, out of time or over the limit: the whole group goes, grandchildren included.
    _killpg(process.pid)
    process.wait()
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None and not pipe.closed:
            pipe.close()
    return ProcessOutcome(
        returncode=process.returncode,
        stdout=bytes(out),
        stderr_tail=err.text(),
        duration_ms=(time.perf_counter() - clock) * 1000,
        timed_out=timed_out,
        stdout_overflow=overflow,
    )


class LineTooLong(Exception):
    """A peer sent a line longer than the reader's limit (a protocol fault, not a crash of ours)."""


class LineReader:
    """Newline-delimited reads over a byte stream, with a cap on one line's length."""

    def __init__(self, stream: anyio.abc.ByteReceiveStream, limit: int = LINE_LIMIT) -> None:
        self._stream = stream
        self._buf = bytearray()
        self._pos = 0
        self._eof = False
        self.limit = limit

    async def readline(self) -> bytes | None:
        """The next line without its newline; None at end of stream."""
        scan = self._pos
        while True:
            idx = self._buf.find(b"\n", scan)
            if idx >= 0:
                line = bytes(self._buf[self._pos : idx])
                self._pos = idx + 1
                if self._pos > 1 << 20:
                    del self._buf[: self._pos]
                    self._pos = 0
                return line
            if self._eof:
                if self._pos < len(self._buf):
                    line = bytes(self._buf[self._pos :])
                    self._buf.clear()
                    self._pos = 0
                    return line
                return None
            if len(self._buf) - self._pos > self.limit:
                raise LineTooLong(f"line longer than {self.limit} bytes")
            scan = len(self._buf)
            try:
                chunk = await self._stream.receive(1 << 16)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._eof = True
                continue
            self._buf.extend(chunk)
