"""Stops what is left of an embedded Ray instance once its driver is gone, however the driver ended.

Ray ties the GCS and the raylet it starts to the driver, but the raylet's helpers (its dashboard
agent and runtime-env agent) outlive a SIGKILLed driver by about a minute: each waits that long
to report the raylet's death to a GCS that is already gone. Nothing runs in a SIGKILLed process, so
the driver starts this watchdog right after ``ray.init``: a small separate process (in a session of
its own, so a Ctrl-C to the terminal's process group does not reach it) that reads its stdin, a pipe
whose write end only the driver holds, until end of file: when the driver closes it after
``ray.shutdown``, or when the kernel does because the driver died. It then kills every process of
this user that holds a file of the instance's session directory open, the driver excepted. Files,
not command lines: Ray's processes rename themselves (``ray::IDLE``, ``ray::DashboardAgent``), but
each keeps its log files in the session directory open.

Linux only (it reads /proc); elsewhere no watchdog is started. The module is run as a script by
path with the standard library alone, so it starts in milliseconds and imports nothing of waza.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

__all__ = ["start_watchdog", "stop_watchdog"]

#: Seconds the driver waits for the watchdog's last sweep after a normal end.
STOP_WAIT = 10.0
#: Sweeps after end of file: a process Ray started while the previous one ran is found by the next.
_SWEEPS = 3
#: Seconds the found processes get to end on SIGTERM before they (and what they started) are killed.
_GRACE = 3.0
_PAUSE = 0.1


def start_watchdog(session_dir: str) -> subprocess.Popen[bytes] | None:
    """The watchdog of the instance whose session directory is ``session_dir`` (None where there is no /proc)."""
    if not os.path.isdir("/proc/self/fd"):
        return None
    return subprocess.Popen(
        [sys.executable, "-I", "-S", os.path.abspath(__file__), os.path.realpath(session_dir), str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def stop_watchdog(watchdog: subprocess.Popen[bytes] | None) -> None:
    """After ``ray.shutdown``: let the watchdog sweep what is left, and reap it."""
    if watchdog is None:
        return
    with contextlib.suppress(OSError):
        watchdog.stdin.close()  # type: ignore[union-attr]
    try:
        watchdog.wait(timeout=STOP_WAIT)
    except subprocess.TimeoutExpired:
        watchdog.kill()
        watchdog.wait()


def _holders(session_dir: str, spared: set[int]) -> list[int]:
    """The processes (of this user: others' descriptors cannot be read) with a file under ``session_dir`` open."""
    prefix = session_dir.rstrip("/") + "/"
    found = []
    for pid in _pids():
        if pid in spared:
            continue
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(prefix):
                        found.append(pid)
                        break
    return found


def _with_descendants(pids: list[int]) -> set[int]:
    """``pids`` and every process below them (a task's agent, which leads a session of its own)."""
    children: dict[int, list[int]] = {}
    for pid in _pids():
        with contextlib.suppress(OSError, IndexError, ValueError), open(f"/proc/{pid}/stat") as f:
            children.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(pid)
    found, todo = set(pids), list(pids)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _signal(pids: set[int], number: int) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, number)


def _main(session_dir: str, driver: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while sys.stdin.buffer.read(4096):  # the driver never writes: this returns at end of file
        pass
    spared = {os.getpid(), driver}
    for _ in range(_SWEEPS):
        found = _holders(session_dir, spared)
        if not found:
            return
        # SIGTERM first: a raylet stops its workers, a worker stops its task's agent; then SIGKILL
        # for whatever of them, and of what they started, is still there.
        family = _with_descendants(found) - spared
        _signal(set(found), signal.SIGTERM)
        deadline = time.monotonic() + _GRACE
        while any(_alive(pid) for pid in family) and time.monotonic() < deadline:
            time.sleep(_PAUSE)
        _signal({pid for pid in family if _alive(pid)}, signal.SIGKILL)


if __name__ == "__main__":
    _main(sys.argv[1], int(sys.argv[2]))
