"""Child processes under waza's rules: the one way waza runs an agent, a grader, a worker or a terminal.

Every child starts as the leader of its own process group so that a timeout, a
crash or an interrupt can kill it *and* whatever it spawned; its stderr is
always drained (a chatty child must never fill the pipe and deadlock) and only
a bounded tail is kept; its stdout is read up to a cap, past which the child is
killed rather than buffered without end.

Why a driver of waza's own on ``subprocess`` and not anyio's processes: anyio
can put a child in a process group only by giving it a session of its own, and
on Linux with autogroup scheduling (the default in most distributions) a session
per child is a scheduling group per child, made and torn down each time, which
costs a run of short children a multiple of its time (measured: README, Performance). The
driver is :class:`Child`: Popen, the pipes and a pidfd in one selector that the
event loop watches; no child watcher, nothing set on asyncio's policy.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import os
import selectors
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, TypedDict, Unpack

import anyio
import anyio.abc
import anyio.to_thread
import msgspec

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

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


#: The environment variable that tags every process a turn started (see :func:`new_tag`, :func:`kill_tagged`).
TAG_VAR = "WAZA_PROCESS_TAG"
#: Seconds a child's pipes may stay open after it exited (a daemon it left holds them) before waza stops reading.
EXIT_GRACE = 1.0


class ProcessTag(msgspec.Struct, frozen=True):
    """A fresh value for :data:`TAG_VAR`, and the last process id the kernel had given out when it was made.

    Every descendant of a child started with ``TAG_VAR=value`` inherits it, so a
    descendant that left the child's process group (``setsid cmd &``) is still
    found, unless it clears or rewrites its environment. The kernel gives out
    process ids in increasing order, wrapping at its maximum, so every process
    started after the tag has an id between ``last_pid`` and the last id given
    out when :func:`kill_tagged` looks: it reads the environment of those few
    processes, not of every process on the machine. The limit: a turn that
    starts more processes than the id space holds (it wrapped past
    ``last_pid``) is not swept completely.
    """

    value: str
    #: The last process id given out when the tag was made (None where /proc/loadavg cannot be read).
    last_pid: int | None


def _last_pid() -> int | None:
    """The last process id the kernel gave out in this namespace (the fifth field of /proc/loadavg)."""
    try:
        fd = os.open("/proc/loadavg", os.O_RDONLY | os.O_CLOEXEC)
        try:
            return int(os.read(fd, 256).split()[4])
        finally:
            os.close(fd)
    except (OSError, IndexError, ValueError):
        return None


def _stat(pid: int) -> list[bytes]:
    """The fields of /proc/PID/stat after the command's name (state first); empty when it cannot be read."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        try:
            return os.read(fd, 4096).rpartition(b")")[2].split()
        finally:
            os.close(fd)
    except OSError:
        return []


def started_at(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (the 22nd field of /proc/PID/stat), None
    where that cannot be read. With its id it names one process for good: the kernel gives ids out
    again, but only after going round the whole id space, which takes far longer than a tick."""
    fields = _stat(pid)
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else None


#: This process's id and start time, read once per process (a forked child reads its own).
_me: tuple[int, int] | None = None


def identity() -> tuple[int, int]:
    """This process's id and start time (:func:`started_at`; 0 where /proc cannot say): what names it
    as the maker of a tag (:func:`new_tag`) and of a Ray task's track."""
    global _me
    pid = os.getpid()
    if _me is None or _me[0] != pid:
        _me = (pid, started_at(pid) or 0)
    return _me


def new_tag() -> ProcessTag:
    """A fresh tag for one turn's processes (see :class:`ProcessTag`); its value starts with its maker's
    id and start time (``PID.START-``), which :func:`kill_orphans` looks for."""
    pid, started = identity()
    return ProcessTag(f"{pid}.{started}-{time.monotonic_ns()}-{os.urandom(4).hex()}", _last_pid())


#: Process ids probed one by one after a turn; more than that, and the live ones are listed instead.
_PROBE_LIMIT = 256


def _started_since(last_pid: int | None) -> list[int]:
    """Ids that may belong to processes started after ``last_pid`` was given out (all live ones when unknown)."""
    now = _last_pid()
    if last_pid is not None and now is not None and 0 <= now - last_pid <= _PROBE_LIMIT:
        return list(range(last_pid + 1, now + 1))
    try:
        live = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    if last_pid is None or now is None:
        return live
    if now >= last_pid:
        return [pid for pid in live if last_pid < pid <= now]
    return [pid for pid in live if pid > last_pid or pid <= now]  # the ids wrapped during the turn


#: Bytes of a process's environment read in one go, and in all.
_ENVIRON_CHUNK = 1 << 16
_ENVIRON_LIMIT = 1 << 20


def _carries(pid: int, needle: bytes) -> bool:
    """Whether process ``pid``'s environment holds ``needle`` (False when it is gone or another user's)."""
    try:
        fd = os.open(f"/proc/{pid}/environ", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        # bytes.find, not ``in``: ``in`` first tries the needle as an integer and builds a TypeError to
        # drop, which cost more than the search (every live process started during a turn is read here)
        environ = b"\0"
        while len(environ) <= _ENVIRON_LIMIT:
            chunk = os.read(fd, _ENVIRON_CHUNK)
            if not chunk:
                break
            environ += chunk
            if environ.find(needle) >= 0:
                return True
        return (environ + b"\0").find(needle) >= 0
    except OSError:
        return False
    finally:
        os.close(fd)


def kill_tagged(tag: ProcessTag) -> int:
    """SIGKILL every process of this user that started after ``tag`` was made and carries it; how many.
    Linux (/proc) only."""
    needle = b"\0" + f"{TAG_VAR}={tag.value}".encode() + b"\0"
    me = os.getpid()
    return len(_kill_carrying([pid for pid in _started_since(tag.last_pid) if pid != me and _carries(pid, needle)], needle))


def _kill_carrying(found: list[int], needle: bytes) -> set[int]:
    """SIGKILL those of ``found`` whose environment still holds ``needle``; the ones signalled. Each is
    signalled through a pidfd opened before its environment is read again, so a process that took the
    id of one that ended since is never hit (``os.kill`` by id where pidfds are missing)."""
    killed: set[int] = set()
    for pid in found:
        handle = _pidfd(pid)
        try:
            if not _carries(pid, needle):  # gone since, and its id maybe given to another
                continue
            if handle is None:
                os.kill(pid, signal.SIGKILL)
            else:
                signal.pidfd_send_signal(handle, signal.SIGKILL)
            killed.add(pid)
        except (ProcessLookupError, PermissionError):
            pass
        finally:
            if handle is not None:
                os.close(handle)
    return killed


#: Rounds of :func:`kill_orphans`: a process that started another while a round looked is found by the next.
_ORPHAN_ROUNDS = 3


def kill_orphans(owner: int, started: int, grace: float = 0.0) -> int:
    """SIGKILL every process of this user carrying a tag that process ``owner``, started at ``started``
    (:func:`started_at`), made (:func:`new_tag`: a tag's value starts with ``PID.START-``), now that it is
    dead; how many. For what the turns of a process killed under them (a Ray worker) left running: its
    own :func:`kill_tagged` never ran.

    While that process still lives (a zombie is dead), nothing is killed, after waiting up to ``grace``
    seconds for it to die (one being killed): its turns may be running. A process that was given its id
    since has another start time, so it is not waited for, and the tags of its own turns do not match.
    Every process on the machine is looked at (no bound as in :class:`ProcessTag`: this is a failure
    path). Linux (/proc) only: elsewhere nothing is found.
    """
    needle = b"\0" + f"{TAG_VAR}={owner}.{started}-".encode()
    me = os.getpid()
    killed: set[int] = set()
    deadline = time.monotonic() + grace
    for _ in range(_ORPHAN_ROUNDS):
        try:
            found = [pid for name in os.listdir("/proc") if name.isdigit() and (pid := int(name)) != me]
        except OSError:
            break
        found = [pid for pid in found if _carries(pid, needle)]
        while found and _alive(owner, started) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not found or _alive(owner, started):
            break
        killed |= _kill_carrying(found, needle)
    return len(killed)


def _alive(pid: int, started: int) -> bool:
    """Whether the process with id ``pid`` that started at ``started`` lives (a zombie is dead)."""
    fields = _stat(pid)
    return len(fields) > 19 and fields[0] not in (b"Z", b"X") and fields[19] == str(started).encode()


def exit_parts(returncode: int | None) -> tuple[int | None, int | None]:
    """(code, signal) from a Popen-style return code, where -N means killed by signal N."""
    if returncode is None:
        return None, None
    if returncode < 0:
        return None, -returncode
    return returncode, None


class ProcessOutcome(msgspec.Struct):
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


@functools.cache
def _new_session() -> bool:
    """Whether a :class:`Child` gets a session of its own (and not only a process group of its own).

    A session keeps a child off waza's controlling terminal: it cannot open
    ``/dev/tty`` to read what the user types or write over waza's output. Without
    a controlling terminal (CI, scripts, a service) there is nothing to keep it off,
    and a session per child costs: where the kernel groups tasks by session for
    CPU scheduling (autogroup, on by default in most Linux distributions), every
    child becomes a scheduling group of its own, made and torn down per child
    (README, Performance). Either way the child leads a process group, which is
    what timeouts and interrupts kill.
    """
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return exc.errno not in (errno.ENXIO, errno.ENOENT)  # no controlling terminal, or no such device
    os.close(fd)
    return True


class ChildOptions(TypedDict, total=False):
    """The keyword arguments of :class:`Child` (see its constructor), for :meth:`Child.start`."""

    stdin: bytes | None
    cwd: str | Path | None
    env: Mapping[str, str] | Mapping[bytes, bytes] | None
    stderr: Tail | None
    keep_stdin: bool
    stderr_to: IO[bytes] | int | None


class Child(anyio.abc.ByteReceiveStream):
    """A child leading a process group (a session too, under a terminal), its pipes driven from the event loop
    with no transports and no threads. From async code start it with :meth:`start` (the program is started from a
    worker thread); the constructor starts it in the calling thread.

    One selector per child (epoll on Linux) watches its stdin, stdout and stderr
    and, where the kernel has pidfds, its exit; the event loop waits on that
    selector's own descriptor. So a child costs one wake-up per burst of output,
    not a task per stream and a thread hop per call: a one-shot grader or a
    headless agent costs about half the CPU it did through asyncio's subprocess
    transports or a selector loop in a worker thread (see README, Performance).

    Reading it (``receive``, ``async for``) gives its stdout; meanwhile the
    input given at start is written, stderr is drained into ``stderr`` (a
    :class:`Tail`) and its exit is noted. Once the child has exited and its pipes
    are quiet, its whole process group is killed (grandchildren included, before
    the exit is reaped, so its id cannot have been reused), and a descendant that
    left the group (``setsid cmd &``) and still holds the pipes gets EXIT_GRACE
    of silence before reading stops. ``aclose`` kills the group and reaps it,
    shielded from cancellation, so no zombie or orphan outlives it; cancel a
    read or :meth:`wait` (a timeout) and close it to stop the child.

    With ``keep_stdin`` its stdin stays open for a conversation (a worker
    grader, an ACP agent): :meth:`send` writes more, :meth:`close_stdin` ends
    it; what the pipe does not take at once is written while the child is read.

    One task at a time reads or waits on a child (its events are handled there);
    any task may send to it, kill it or close it: a task still reading when
    another closes the child gets the end of its output.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        cwd: str | Path | None = None,
        env: Mapping[str, str] | Mapping[bytes, bytes] | None = None,
        stderr: Tail | None = None,
        keep_stdin: bool = False,
        stderr_to: IO[bytes] | int | None = None,
    ) -> None:
        """Start ``argv`` (raises ``OSError`` when it cannot start); ``stdin`` is all of its input, None for
        none, unless ``keep_stdin``: then it is the first of it and stdin stays open for :meth:`send`.
        With ``stderr_to`` (a file, or ``subprocess.STDOUT`` for one stream in the order written), the
        child writes its stderr there itself, not drained by waza, and ``stderr`` stays empty."""
        self.stderr = stderr if stderr is not None else Tail()
        self.returncode: int | None = None
        # The pipes are made here and handed to Popen as descriptors: no file objects around
        # them, and Popen's own pipe bookkeeping skipped (a fifth of a spawn's CPU, measured).
        self._fds: list[int] = []  # waza's ends, open until the child is reaped or closed
        theirs: list[int] = []
        try:
            stdin_fd = subprocess.DEVNULL
            if stdin or keep_stdin:
                stdin_fd, ours = os.pipe()
                theirs.append(stdin_fd)
                self._fds.append(ours)
            pipes: list[int | IO[bytes]] = []
            for _ in range(1 if stderr_to is not None else 2):
                ours, out_fd = os.pipe()
                theirs.append(out_fd)
                self._fds.append(ours)
                pipes.append(out_fd)
            if stderr_to is not None:
                pipes.append(stderr_to)
            session = _new_session()
            self._popen = subprocess.Popen(
                list(argv),
                stdin=stdin_fd,
                stdout=pipes[0],
                stderr=pipes[1],
                cwd=str(cwd) if cwd is not None else None,
                env=env,
                start_new_session=session,
                process_group=None if session else 0,  # a session leader already leads its group
            )
        except BaseException:
            self._close_pipes()
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        self.pid = self._popen.pid
        self._pending = memoryview(stdin or b"")
        self._keep_stdin = keep_stdin
        self._stdin: int | None = None  # waza's end of stdin while it is open
        self._exited = False  # the leader has exited (a zombie until reaped, so its id is still ours)
        self._quiet_since: float | None = None
        self._selector = selectors.DefaultSelector()
        self._pidfd: int | None = None
        self._stdout_done = False
        self._pipes = 0  # registered with the selector
        self._waiter: asyncio.Future[None] | None = None  # the task waiting in _readable, if one is
        self._watched = False  # the selector is a reader of the event loop
        self._closing: anyio.Event | None = None  # set when a waiting aclose is done
        self._closed = False
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # another backend (trio): anyio's wait_readable
            self._loop = None
        try:
            names = ("in", "out", "err") if stdin or keep_stdin else ("out", "err")
            for fd, name in zip(list(self._fds), names, strict=False):  # no "err" pipe when stderr_to is given
                os.set_blocking(fd, False)
                if name == "in":
                    self._stdin = fd
                if name == "in" and self._write(fd):  # most input fits the pipe at once: stdin never watched
                    continue
                self._selector.register(fd, selectors.EVENT_WRITE if name == "in" else selectors.EVENT_READ, name)
                self._pipes += 1
            self._pidfd = _pidfd(self.pid)
            if self._pidfd is not None:
                self._selector.register(self._pidfd, selectors.EVENT_READ, "exit")
        except BaseException:
            self._kill()
            self._popen.wait()
            self._close()
            raise

    @classmethod
    async def start(cls, argv: Sequence[str], **options: Unpack[ChildOptions]) -> Child:
        """Start a child as the constructor does, from a start thread, so the event loop runs meanwhile.

        Starting a program blocks the caller until the kernel has loaded it, and on a
        busy machine that wait (for a CPU to run the new process on) is longer than
        the program's own start: the loop would be stalled for every prompt's agent
        and every one-shot grade. The start is shielded: once the thread has started
        the child, the caller gets it (and closes it) even when it was cancelled meanwhile.

        On asyncio the start goes to this process's start threads (:func:`_starter`) and
        comes back as one callback on the loop: anyio's worker threads cost more than twice
        the instructions per start (two loop rounds of checkpoints, a capacity limiter, a
        cancel scope and a chained future around the same hand-over; ``bench/instructions.py``).
        """
        make = functools.partial(cls, argv, **options)
        try:
            started: asyncio.Future[Child] | None = asyncio.get_running_loop().create_future()
        except RuntimeError:  # another backend (trio): anyio's worker threads
            started = None
        with anyio.CancelScope(shield=True):
            if started is None:
                return await anyio.to_thread.run_sync(make)
            _starter().submit(_start_into, started, make)
            child = await started
        return child

    def send(self, data: bytes) -> None:
        """Write ``data`` to stdin (``keep_stdin``) as far as the pipe takes it now, the rest while
        reading; dropped once the child has closed its stdin (its business: its output says what it did)."""
        if self._stdin is None:
            return
        if self._pending:  # still writing earlier input: this goes after it
            self._pending = memoryview(self._pending.tobytes() + data)
            return
        self._pending = memoryview(data)
        if not self._write(self._stdin):
            self._selector.register(self._stdin, selectors.EVENT_WRITE, "in")
            self._pipes += 1

    def close_stdin(self) -> None:
        """Close stdin now (the child reads its end), whatever input is still pending."""
        fd, self._stdin = self._stdin, None
        if fd is None:
            return
        if self._pending:  # registered with the selector: leaves it
            self._selector.unregister(fd)
            self._pipes -= 1
            self._pending = self._pending[:0]
        self._fds.remove(fd)
        os.close(fd)

    def kill(self) -> None:
        """SIGKILL the child's whole process group now (reading goes on to the end of its output)."""
        self._kill()

    async def receive(self, max_bytes: int = 1 << 16) -> bytes:
        """The next chunk of stdout; ``anyio.EndOfStream`` after its last."""
        while not self._stdout_done:
            chunk = await self._step(max_bytes)
            if chunk:
                return chunk
        raise anyio.EndOfStream

    async def wait(self) -> int:
        """Wait for the child to exit and its pipes to end (stdout not yet read is discarded); its return code."""
        while self.returncode is None:
            await self._step(1 << 16)
        return self.returncode

    async def aclose(self) -> None:
        """Kill the group and reap the child, shielded; close every descriptor. A task still reading or
        waiting on the child gets the end of its output; a second ``aclose`` returns once the first is done."""
        if self._closing is not None:
            with anyio.CancelScope(shield=True):
                await self._closing.wait()
            return
        if self.returncode is None:  # (usually reaped already: then nothing to wait for, and no scope to pay for)
            closing = self._closing = anyio.Event()
            try:
                with anyio.CancelScope(shield=True):
                    self._kill()
                    while not self._exited:
                        if self._pidfd is None:
                            self._exited = self._popen.poll() is not None
                            if not self._exited:
                                await anyio.sleep(0.01)
                        else:
                            await anyio.wait_readable(self._pidfd)
                            self._exited = True
                    self._reap()
            finally:
                self._close()
                closing.set()
        else:
            self._close()

    async def _step(self, max_bytes: int) -> bytes:
        """Wait for one round of events on the child and handle them; the stdout bytes read in it."""
        ready = self._selector.select(0)
        if not ready:
            if self._exited or (self._pidfd is None and self._popen.poll() is not None):
                self._exited = True
                if not self._pipes:
                    self._reap()  # exited, every pipe at its end
                    return b""
                self._kill()  # exited, pipes quiet: what it left in its group goes
                now = time.monotonic()
                if self._quiet_since is None:
                    self._quiet_since = now
                elif now - self._quiet_since >= EXIT_GRACE:
                    self._reap()  # a descendant in a session of its own holds the pipes: done with them
                    return b""
                with anyio.move_on_after(self._quiet_since + EXIT_GRACE - now):
                    await self._readable()
            elif self._pidfd is None:
                with anyio.move_on_after(0.1):  # no pidfd: look at the child's state ten times a second
                    await self._readable()
            else:
                await self._readable()
            if self._closed:  # closed by another task meanwhile: no more output
                self._stdout_done = True
                return b""
            ready = self._selector.select(0)
        data = b""
        for key, _ in ready:
            name = key.data
            if name == "exit":
                self._selector.unregister(key.fd)
                self._exited = True
            elif name == "in":
                if self._write(key.fd, watched=True):
                    self._pipes -= 1
            else:
                try:
                    chunk = os.read(key.fd, max_bytes)
                except BlockingIOError:
                    continue
                self._quiet_since = None
                if not chunk:
                    self._selector.unregister(key.fd)
                    self._pipes -= 1
                    if name == "out":
                        self._stdout_done = True
                elif name == "out":
                    data = chunk
                else:
                    self.stderr.add(chunk)
        if self._exited and not self._pipes:
            self._reap()  # exited, every pipe at its end: reaped now, not on one more round
        return data

    def _write(self, fd: int, *, watched: bool = False) -> bool:
        """Write what the pipe takes of the pending input; once it is all written, leave the selector
        (when ``watched``), close stdin unless it is kept open (``keep_stdin``), and say so."""
        keep = self._keep_stdin
        try:
            self._pending = self._pending[os.write(fd, self._pending[: 1 << 16]) :]
        except BlockingIOError:
            return False
        except OSError:  # the child closed stdin without reading it all: its business
            self._pending = self._pending[:0]
            keep = False
        if self._pending:
            return False
        if watched:
            self._selector.unregister(fd)
        if not keep:
            self._stdin = None
            self._fds.remove(fd)
            os.close(fd)
        return True

    async def _readable(self) -> None:
        """Until the child's selector has an event. On asyncio, a reader of the event loop
        itself: anyio's ``wait_readable`` costs twice as much there (measured), once per
        wake-up of every child. The reader stays while waits follow one another (adding and
        removing it cost a third of a wake-up); :meth:`_wake` drops it when an event finds
        no one waiting, so a child left unread never wakes the loop again."""
        if self._loop is None:
            with contextlib.suppress(anyio.ClosedResourceError):  # closed by another task (see _close)
                await anyio.wait_readable(self._selector.fileno())
            return
        waiter = self._waiter = self._loop.create_future()
        if not self._watched:
            self._loop.add_reader(self._selector.fileno(), self._wake)
            self._watched = True
        try:
            await waiter
        finally:
            self._waiter = None

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is None:  # no one waits: stop watching (level-triggered, it would fire every round)
            self._unwatch()
        elif not waiter.done():  # the reader may fire again before the waiting task runs
            waiter.set_result(None)

    def _unwatch(self) -> None:
        if self._watched:
            assert self._loop is not None
            self._loop.remove_reader(self._selector.fileno())
            self._watched = False

    def _kill(self) -> None:
        if self.returncode is None:
            _killpg(self.pid)

    def _reap(self) -> None:
        """Kill what is left of the group, then collect the exited leader's status."""
        self._kill()
        self.returncode = self._popen.wait()
        self._stdout_done = True
        self._close_pipes()

    def _close_pipes(self) -> None:
        """Close waza's ends of the pipes (a closed descriptor leaves the selector by itself)."""
        for fd in self._fds:
            os.close(fd)
        self._fds.clear()
        self._stdin = None

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._close_pipes()
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)  # a task waiting on the child wakes to find it closed
        if self._loop is None:
            anyio.notify_closing(self._selector.fileno())
        self._unwatch()  # before its descriptor closes: the loop must not keep a number that is reused
        self._selector.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


#: This process's start threads and its id (see :func:`_starter`).
_starters: tuple[int, ThreadPoolExecutor] | None = None


def _starter() -> ThreadPoolExecutor:
    """The threads that start children for :meth:`Child.start`, made at the first start; a forked child
    makes its own (its parent's threads are not in it). Up to 32 starts wait on the kernel at once (a
    thread is added only when none is idle); the threads end when the interpreter does."""
    global _starters
    pid = os.getpid()
    if _starters is None or _starters[0] != pid:
        from concurrent.futures import ThreadPoolExecutor  # its module is loaded by the first start only

        _starters = (pid, ThreadPoolExecutor(32, thread_name_prefix="waza-start"))
    return _starters[1]


def _start_into(started: asyncio.Future[Child], make: Callable[[], Child]) -> None:
    """In a start thread: start a child and hand it, or what stopped it, to the loop that waits for it."""
    outcome: Child | BaseException
    try:
        outcome = make()
    except BaseException as exc:  # handed on whole: the waiting task raises it
        outcome = exc
    started.get_loop().call_soon_threadsafe(_settle, started, outcome)


def _settle(started: asyncio.Future[Child], outcome: Child | BaseException) -> None:
    """On the loop: the started child to its task; killed when the task is gone (cancelled by asyncio
    itself, past anyio's shield), since nothing else would ever close it."""
    if isinstance(outcome, Child):
        outcome._loop = started.get_loop()  # made in the start thread, where no loop runs
        if started.cancelled():
            outcome.kill()
            outcome._close()
        else:
            started.set_result(outcome)
    elif not started.cancelled():
        started.set_exception(outcome)


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits; None where there is none (not Linux,
    a kernel before 5.3): then a child's exit is looked for ten times a second."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


async def run_once(
    argv: Sequence[str],
    *,
    stdin: bytes | None = None,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | Mapping[bytes, bytes] | None = None,
    timeout: float | None = None,
    stdout_limit: int = STDOUT_LIMIT,
    stderr_limit: int = STDERR_TAIL,
) -> ProcessOutcome:
    """Run a child to completion with the input on stdin; never raises for what the child does.

    Raises ``OSError`` only when the child cannot be started at all. The child
    is a :class:`Child`: out of time or over ``stdout_limit``, its whole group is
    killed; cancelling the call (an interrupt) kills it too. The run ends when
    the child exits, even when a descendant that left its process group
    (``setsid cmd &``) still holds the pipes: reading stops after EXIT_GRACE of
    silence, and nothing it writes later is read. That descendant is not killed
    here (a caller that tags the child's environment can, see :func:`kill_tagged`).
    """
    clock = time.perf_counter()
    out = bytearray()
    overflow = False
    child = await Child.start(argv, stdin=stdin, cwd=cwd, env=env, stderr=Tail(stderr_limit))
    try:
        with anyio.move_on_after(timeout) as scope:
            async for chunk in child:
                if len(out) + len(chunk) > stdout_limit:
                    overflow = True
                    break
                out += chunk
            else:
                await child.wait()
    finally:
        await child.aclose()
    return ProcessOutcome(
        returncode=child.returncode,
        stdout=bytes(out),
        stderr_tail=child.stderr.text(),
        duration_ms=(time.perf_counter() - clock) * 1000,
        timed_out=scope.cancelled_caught,
        stdout_overflow=overflow,
    )


def _killpg(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


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
