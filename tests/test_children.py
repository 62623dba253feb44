"""Children driven from the event loop (``protocol.process.Child``, ``run_once``): real processes, both anyio backends.

On asyncio a child is waited for through a reader of the event loop itself; on
any other backend (trio) through anyio's ``wait_readable``: each test runs on
both, so neither path is untested. Each of waza's rules is tested here: groups
killed with their grandchildren, the stdout cap, the stderr tail, timeouts, a
detached descendant that cannot hang a read, no zombie left behind; and the
module imports with deprecation warnings as errors on the newest interpreter at
hand, so what the next Python removes fails here first.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio
import pytest

from waza.protocol.io.process import TAG_VAR, Child, LineReader, Tail, kill_tagged, new_tag, run_once

T = TypeVar("T")
HAS_TRIO = importlib.util.find_spec("trio") is not None
BACKENDS = ["asyncio", pytest.param("trio", marks=pytest.mark.skipif(not HAS_TRIO, reason="trio is not installed (test extra)"))]


def on(backend: str, fn: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(fn, backend=backend)


def gone(pid: int) -> bool:
    """Whether ``pid`` has died (a SIGKILL takes effect when the process next runs: wait up to 10 s for that)."""
    for _ in range(1000):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.01)
    return False


@pytest.mark.parametrize("backend", BACKENDS)
def test_input_larger_than_a_pipe_comes_back_whole_while_output_is_read(backend: str) -> None:
    data = os.urandom(1 << 20).hex().encode()  # 2 MB: the child writes back while waza still writes to it
    out = on(backend, lambda: run_once(["cat"], stdin=data, timeout=60))
    assert (out.code, out.timed_out, out.stdout_overflow) == (0, False, False)
    assert out.stdout == data


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_headless_style_reader_gets_every_line_and_the_stderr_tail(backend: str) -> None:
    script = "for i in 1 2 3; do echo line $i; echo err $i >&2; done; head -c 100000 /dev/zero | tr '\\0' x >&2; exit 3"

    async def main() -> tuple[list[bytes], int, str]:
        child = Child(["sh", "-c", script], stderr=Tail(1000))
        try:
            reader = LineReader(child)
            lines = [line async for line in _lines(reader)]
            code = await child.wait()
        finally:
            await child.aclose()
        return lines, code, child.stderr.text()

    lines, code, tail = on(backend, main)
    assert lines == [b"line 1", b"line 2", b"line 3"]
    assert code == 3
    assert tail == "x" * 1000  # the bounded tail of 100 KB, not all of it


async def _lines(reader: LineReader):  # type: ignore[no-untyped-def]
    while (line := await reader.readline()) is not None:
        yield line


@pytest.mark.parametrize("backend", BACKENDS)
def test_out_of_time_the_whole_group_is_killed(backend: str, tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    out = on(backend, lambda: run_once(["sh", "-c", f"sleep 1000 & echo $! > {pidfile}; echo started; sleep 1000"], timeout=0.5))
    assert out.timed_out and out.signal == signal.SIGKILL
    assert out.stdout == b"started\n"
    assert gone(int(pidfile.read_text()))


@pytest.mark.parametrize("backend", BACKENDS)
def test_output_over_the_cap_stops_the_child(backend: str) -> None:
    out = on(backend, lambda: run_once(["sh", "-c", "yes"], timeout=60, stdout_limit=100_000))
    assert out.stdout_overflow and not out.timed_out
    assert len(out.stdout) <= 100_000
    assert out.signal == signal.SIGKILL


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_grandchild_left_in_the_group_is_killed_when_the_child_exits(backend: str, tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    out = on(backend, lambda: run_once(["sh", "-c", f"sleep 1000 >/dev/null 2>&1 & echo $! > {pidfile}; echo done"], timeout=60))
    assert (out.code, out.stdout, out.timed_out) == (0, b"done\n", False)
    assert gone(int(pidfile.read_text()))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_detached_descendant_holding_stdout_does_not_keep_the_run_going(backend: str, tmp_path: Path) -> None:
    pidfile = tmp_path / "daemon.pid"
    try:
        out = on(backend, lambda: run_once(["sh", "-c", f"setsid sleep 1000 & echo $! > {pidfile}; echo answer"], timeout=60))
        assert (out.code, out.stdout, out.timed_out) == (0, b"answer\n", False)  # over after EXIT_GRACE, not the timeout
    finally:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_child_that_closes_its_pipes_still_gets_its_time(backend: str) -> None:
    out = on(backend, lambda: run_once(["sh", "-c", "exec >&- 2>&-; sleep 0.3; exit 4"], timeout=60))
    assert (out.code, out.timed_out) == (4, False)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cancelling_a_read_kills_and_reaps_the_child(backend: str, tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"

    async def main() -> int:
        child = Child(["sh", "-c", f"echo $$ > {pidfile}; sleep 1000 & echo ready; wait"])
        try:
            with anyio.move_on_after(0.5):
                async for chunk in child:
                    assert chunk == b"ready\n"
        finally:
            await child.aclose()
        assert child.returncode is not None  # reaped: no zombie left behind
        return child.pid

    pid = on(backend, main)
    assert int(pidfile.read_text()) == pid
    assert gone(pid)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_command_that_cannot_start_raises_oserror(backend: str, tmp_path: Path) -> None:
    with pytest.raises(OSError):
        on(backend, lambda: run_once([str(tmp_path / "missing")], timeout=60))


@pytest.mark.parametrize("backend", BACKENDS)
def test_closing_a_child_another_task_reads_ends_that_read_and_every_close_returns(backend: str) -> None:
    """How an ACP terminal is released or an agent stopped: one task reads, others close."""

    async def main() -> tuple[bytes, int | None, int]:
        child = Child(["sh", "-c", "sleep 1000 & echo ready; sleep 1000"])
        seen = bytearray()
        ready = anyio.Event()

        async def read() -> None:
            async for chunk in child:
                seen.extend(chunk)
                ready.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            with anyio.fail_after(60):
                await ready.wait()
            tg.start_soon(child.aclose)
            await child.aclose()
        return bytes(seen), child.returncode, child.pid

    seen, returncode, pid = on(backend, main)
    assert seen == b"ready\n"
    assert returncode == -signal.SIGKILL
    assert gone(pid)


@pytest.mark.parametrize("backend", BACKENDS)
def test_stderr_can_share_stdout_s_pipe_in_the_order_written(backend: str) -> None:
    """An ACP terminal's output: both streams as the command wrote them."""

    async def main() -> tuple[bytes, str]:
        child = Child(["sh", "-c", "echo 1; echo 2 >&2; echo 3; echo 4 >&2"], stderr_to=subprocess.STDOUT)
        try:
            out = b"".join([chunk async for chunk in child])
            await child.wait()
        finally:
            await child.aclose()
        return out, child.stderr.text()

    assert on(backend, main) == (b"1\n2\n3\n4\n", "")


NO_PIDFD = """
import json, os, sys
del os.pidfd_open  # as on a system without pidfds (macOS, a kernel before 5.3)
import anyio
from waza.protocol.io.process import run_once

async def main():
    done = await run_once(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=60)
    late = await run_once(["sh", "-c", "exec >&- 2>&-; sleep 0.3; exit 4"], timeout=60)
    slow = await run_once(["sh", "-c", "sleep 1000 & echo $! > " + sys.argv[2] + "; sleep 1000"], timeout=0.5)
    return [[o.code, o.signal, o.stdout.decode(), o.stderr_tail, o.timed_out] for o in (done, late, slow)]

print(json.dumps(anyio.run(main, backend=sys.argv[1])))
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_without_pidfds_exits_are_still_seen_and_timeouts_kill_the_group(backend: str, tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    proc = subprocess.run([sys.executable, "-c", NO_PIDFD, backend, str(pidfile)], capture_output=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    done, late, slow = json.loads(proc.stdout)
    assert done == [3, None, "out\n", "err\n", False]
    assert late == [4, None, "", "", False]
    assert slow[1] == signal.SIGKILL and slow[4] is True
    assert gone(int(pidfile.read_text()))


NO_ZOMBIES = """
import json, os, sys
import anyio
from waza.protocol.io.process import Child, run_once

async def main():
    outcomes = [
        await run_once(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=60),
        await run_once(["sh", "-c", "sleep 1000 & sleep 1000"], timeout=0.3),
        await run_once(["sh", "-c", "yes"], timeout=60, stdout_limit=1000),
        await run_once(["sh", "-c", "setsid sleep 1000 & echo $! > " + sys.argv[2] + "; echo done"], timeout=60),
    ]
    child = Child(["sh", "-c", "sleep 1000 & wait"], keep_stdin=True)
    try:
        with anyio.move_on_after(0.3):  # cancelled mid-wait, as an interrupt does
            await child.wait()
    finally:
        await child.aclose()
    os.kill(int(open(sys.argv[2]).read()), 9)  # the daemon in a session of its own is not ours to reap
    try:
        left = os.waitpid(-1, os.WNOHANG)  # (0, 0): a child still running; (pid, status): a zombie
    except ChildProcessError:
        left = None  # no child of ours at all
    return [[o.code, o.signal, o.timed_out, o.stdout_overflow] for o in outcomes], left

print(json.dumps(anyio.run(main, backend=sys.argv[1])))
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_zombie_and_no_child_is_left_after_exits_timeouts_caps_and_cancels(backend: str, tmp_path: Path) -> None:
    pidfile = tmp_path / "daemon.pid"
    proc = subprocess.run(
        [sys.executable, "-c", NO_ZOMBIES, backend, str(pidfile)], capture_output=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    outcomes, left = json.loads(proc.stdout)
    assert outcomes == [
        [3, None, False, False],
        [None, signal.SIGKILL, True, False],
        [None, signal.SIGKILL, False, True],
        [0, None, False, False],
    ]
    assert left is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_start_cancelled_under_anyio_still_hands_over_the_child_to_close(backend: str, tmp_path: Path) -> None:
    """An interrupt while a child is being started: the start is finished and the caller closes the child."""
    pidfile = tmp_path / "child.pid"

    async def main() -> int:
        with anyio.CancelScope() as scope:
            scope.cancel()
            child = await Child.start(["sh", "-c", f"echo $$ > {pidfile}; exec sleep 1000"])
        try:
            assert scope.cancel_called
        finally:
            await child.aclose()
        assert child.returncode is not None
        return child.pid

    assert gone(on(backend, main))


def test_a_start_whose_task_asyncio_cancels_leaves_no_child_behind() -> None:
    """asyncio's own cancel (a task cancelled by code that is not anyio's) gets past the start's shield: the
    child started meanwhile is killed when its start comes back, since no one is left to close it."""
    tag = new_tag()

    async def main() -> None:
        started = asyncio.ensure_future(Child.start(["sleep", "1000"], env={**os.environ, TAG_VAR: tag.value}))
        await asyncio.sleep(0)  # the start is in a start thread now
        started.cancel()
        with pytest.raises(asyncio.CancelledError):
            await started
        await asyncio.sleep(2)  # generous: the thread's start comes back, and a killed process dies

    asyncio.run(main())
    assert kill_tagged(tag) == 0  # nothing carrying the tag was left running


PROBE = """
import json, os
try:
    os.close(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY))
    tty = True
except OSError:
    tty = False
print(json.dumps({"tty": tty, "session": os.getsid(0) == os.getpid(), "group": os.getpgid(0) == os.getpid()}))
"""
DRIVER = f"""
import anyio, sys
from waza.protocol.io.process import run_once
out = anyio.run(run_once, [sys.executable, "-c", {PROBE!r}])
sys.stdout.buffer.write(out.stdout)
"""


def _take_terminal() -> None:
    import fcntl
    import termios

    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@pytest.mark.parametrize("terminal", [True, False])
def test_a_child_leads_its_group_and_never_reaches_waza_s_terminal(terminal: bool) -> None:
    """Under a controlling terminal a child gets a session of its own (so ``/dev/tty`` is out of its reach);
    without one it stays in waza's session, where there is no terminal to reach, leading its own process group."""
    master, slave = os.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-c", DRIVER],
            stdin=slave if terminal else subprocess.DEVNULL,
            capture_output=True,
            start_new_session=True,  # a session of the test's own: a terminal only when given one
            preexec_fn=_take_terminal if terminal else None,
            timeout=60,
            check=False,
        )
    finally:
        os.close(master)
        os.close(slave)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen == {"tty": False, "session": terminal, "group": True}
