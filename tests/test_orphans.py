"""``kill_orphans``: what a dead process's turns left running dies, nothing else (real processes, Linux).

A turn's processes carry ``WAZA_PROCESS_TAG``, whose value starts with the id and start time of the
process that made it (``PID.START-``); when that process was killed under its turns (a Ray worker),
nothing of its own cleans up, and ``kill_orphans`` finds them by that prefix. Here the "owner" is a dead
process (an id no process holds, or a zombie not yet reaped), a live one, or a live one that only holds
a dead owner's id, and the tagged processes are real sleepers in sessions of their own.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from waza.protocol.io.process import TAG_VAR, identity, kill_orphans, new_tag, started_at

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kill_orphans reads /proc (Linux)")


@contextlib.contextmanager
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    try:
        yield started
    finally:
        for proc in started:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait()


def tagged(started: list[subprocess.Popen[bytes]], tag: str) -> subprocess.Popen[bytes]:
    """A sleeper in a session of its own (as an agent's ``setsid cmd &``), its environment carrying ``tag``."""
    proc = subprocess.Popen(["sleep", "300"], env={**os.environ, TAG_VAR: tag}, start_new_session=True)
    started.append(proc)
    return proc


def dead_pid() -> int:
    """The id of an owner that is dead and whose id no process can hold: above the kernel's largest
    (``PID_MAX_LIMIT``, 2**22)."""
    return (1 << 22) + next(_UNUSED)


def start(proc: subprocess.Popen[bytes]) -> int:
    started = started_at(proc.pid)
    assert started is not None
    return started


_UNUSED = itertools.count(random.randrange(1 << 30))


def killed(proc: subprocess.Popen[bytes]) -> bool:
    return proc.wait(timeout=30) == -signal.SIGKILL


def test_what_a_dead_owner_left_is_killed_and_nothing_else() -> None:
    owner, other = dead_pid(), dead_pid()
    with sleepers() as started:
        mine = [tagged(started, f"{owner}.77-123-abcd"), tagged(started, f"{owner}.77-456-ef01")]
        theirs = tagged(started, f"{other}.77-123-abcd")  # another owner's
        longer = tagged(started, f"{owner}7.77-123-abcd")  # an id that starts with the owner's is another owner
        longer_start = tagged(started, f"{owner}.770-123-abcd")  # so is one whose start time starts with the owner's
        untagged = subprocess.Popen(["sleep", "300"], start_new_session=True)
        started.append(untagged)
        assert kill_orphans(owner, 77) == 2
        assert all(killed(proc) for proc in mine)
        assert all(proc.poll() is None for proc in (theirs, longer, longer_start, untagged))


def test_a_zombie_owner_is_dead() -> None:
    # A worker killed and not yet reaped by its parent: its id is still its own, so its tags are its.
    with sleepers() as started:
        owner = subprocess.Popen(["sleep", "300"])
        started.append(owner)
        orphan = tagged(started, f"{owner.pid}.{start(owner)}-1-aa")
        owner.kill()
        assert ends(owner.pid) and state(owner.pid) == b"Z"  # killed, not reaped
        assert kill_orphans(owner.pid, start(owner)) == 1
        assert killed(orphan)


def test_nothing_is_killed_while_the_owner_lives() -> None:
    # Its turns may still be running (a worker being killed that takes longer than the grace).
    with sleepers() as started:
        owner = subprocess.Popen(["sleep", "300"])
        started.append(owner)
        same = tagged(started, f"{owner.pid}.{start(owner)}-1-aa")
        assert kill_orphans(owner.pid, start(owner), grace=0.2) == 0
        assert same.poll() is None and owner.poll() is None


def test_a_process_given_a_dead_owner_s_id_shields_nothing_and_loses_nothing() -> None:
    # The kernel gives ids out again: the process holding the id now started later, so it is not the
    # owner (nothing waits for it), and the tags of its own turns are not the dead owner's.
    with sleepers() as started:
        holder = subprocess.Popen(["sleep", "300"])
        started.append(holder)
        orphan = tagged(started, f"{holder.pid}.{start(holder) - 1}-1-aa")  # the dead owner's, same id
        own = tagged(started, f"{holder.pid}.{start(holder)}-1-aa")  # the holder's own turn
        assert kill_orphans(holder.pid, start(holder) - 1, grace=60) == 1
        assert killed(orphan)
        assert own.poll() is None and holder.poll() is None


def test_an_orphan_s_own_child_in_another_session_is_killed_too() -> None:
    # What the orphan started inherits its environment, the tag with it, wherever it went.
    owner = dead_pid()
    with sleepers() as started:
        script = "import subprocess; p = subprocess.Popen(['sleep', '300'], start_new_session=True); print(p.pid, flush=True)"
        proc = subprocess.Popen(
            [sys.executable, "-c", script + "; import time; time.sleep(300)"],
            env={**os.environ, TAG_VAR: f"{owner}.5-9-bb"},
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        started.append(proc)
        assert proc.stdout is not None
        grandchild = int(proc.stdout.readline())
        assert kill_orphans(owner, 5) == 2, f"child {state(proc.pid)!r}, grandchild {state(grandchild)!r}"
        assert killed(proc)
        assert ends(grandchild)  # init's (or a subreaper's) to reap


def state(pid: int, started: int | None = None) -> bytes:
    """A process's state letter in /proc/PID/stat; b"X" (dead) when it is gone, or when ``started`` is
    given and the id now names a process that started at another time (the kernel gave the id out again)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
    except OSError:
        return b"X"
    return b"X" if started is not None and int(fields[19]) != started else fields[0]


def ends(pid: int, limit: float = 30, started: int | None = None) -> bool:
    """Whether ``pid`` (the process that started at ``started``, when given) is dead (gone, or a zombie)
    within ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while state(pid, started) not in (b"Z", b"X"):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_an_owner_about_to_die_is_waited_for() -> None:
    # A worker being killed (Ray's forced cancel) may still live when its orphans are looked for.
    with sleepers() as started:
        owner = subprocess.Popen(["sleep", "1"])
        started.append(owner)
        orphan = tagged(started, f"{owner.pid}.{start(owner)}-1-aa")
        assert kill_orphans(owner.pid, start(owner), grace=60) == 1
        assert killed(orphan)


def test_a_tag_names_its_maker_by_id_and_start_time() -> None:
    pid, started = identity()
    assert (pid, started) == (os.getpid(), started_at(os.getpid()))
    assert new_tag().value.startswith(f"{pid}.{started}-")
