"""Where a Ray task ran and what it made on its node, found when its worker died under it.

Ray reports a task whose worker process died (killed by its agent or by the kernel's OOM killer, a
crash of the interpreter) as ``WorkerCrashedError`` and nothing else: no node, no worker, no cause
(Ray 2.60 drops the raylet's account of the death when it makes the exception, and its state API,
which could say more, needs the dashboard, which waza leaves off). A worker that dies also never
runs its cleanup: the task's fresh workspace and its private directory stay in the node's
temporary directory.

So each task leaves a track on its own node, where nothing can lose it: the private directory it
makes first of all in the node's temporary directory is named after the run, the task, the node id
and the worker's pid and start time (``waza-task-RUN-KEY-NODE-PID.START-...``, :class:`Mark`), and
when its workspace is a fresh one the task removes itself, a link to it is put there before the
agent starts. Both are
made before anything can kill the worker, and cost the task nothing it did not do before but one
symlink. When the driver gets ``WorkerCrashedError`` or Ray's ``OutOfMemoryError`` for a task, it
runs a small task on every alive node (``_sweep``, no CPU, pinned with
``NodeAffinitySchedulingStrategy(soft=False)``) that looks for that task's directory, kills what
the dead worker's agents left running (every process whose ``WAZA_PROCESS_TAG`` the worker made:
``kill_orphans``; an agent leads a session of its own, so it outlives its worker), removes the
workspace it links and the directory, and returns the :class:`Track` its name holds: the error
record names the node, host and worker pid. A node that is gone has nothing left to remove (and Ray
then reports the node's death, not the worker's). The cost is on the failure path only: one small
task per alive node for each worker that dies.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterable, Mapping
from importlib import import_module
from pathlib import Path
from typing import Any

import msgspec

from waza.protocol.io.process import kill_orphans
from waza.runner.engine.specs import Workspace

__all__ = ["LOOKUP_WAIT", "Mark", "Teller", "Track", "Tracker", "apply_env"]

#: Seconds the driver waits for the nodes to say which of them a task whose worker died ran on.
LOOKUP_WAIT = 10.0
#: Seconds a sweep waits for a dead task's worker to be gone (one killed by a forced cancel may still be dying).
_DYING = 3.0
#: The link in a task's private directory to its fresh workspace.
_WORKSPACE = "workspace"
#: The rest of a private directory's name after the task's prefix: node id, worker pid and start time, tempfile's suffix.
_NAMED = re.compile(r"([0-9a-f]+)-([0-9]+)\.([0-9]+)-.*")


class Track(msgspec.Struct, frozen=True):
    """Where one task ran: its node, the node's host name and its worker's pid and start time
    (:func:`~waza.protocol.io.process.started_at`)."""

    node_id: str
    host: str
    pid: int
    started: int


class Mark(msgspec.Struct, frozen=True):
    """What a task carries to leave its track: the run's id and the task's key."""

    run: str
    key: int

    @property
    def prefix(self) -> str:
        """The start of the name of every private directory this task may have made."""
        return f"waza-task-{self.run}-{self.key}-"

    def private(self, node_id: str, worker: tuple[int, int]) -> str:
        """The start of the name of the task's private directory, on ``node_id`` in the worker whose id
        and start time are ``worker`` (:func:`~waza.protocol.io.process.identity`)."""
        pid, started = worker
        return f"{self.prefix}{node_id}-{pid}.{started}-"


class Teller:
    """A task's side: links its fresh workspace from its private directory."""

    def __init__(self, spec: Workspace) -> None:
        self.removable = spec.fresh and spec.root is None and not spec.keep
        self.dir: Path | None = None

    def started(self, private: Path) -> None:
        self.dir = private

    def workspace(self, workspace: Path) -> None:
        """The task's workspace, just made: linked when it is a fresh one the task removes."""
        if self.dir is not None and self.removable:
            os.symlink(workspace, self.dir / _WORKSPACE)


class Tracker:
    """The driver's side: a mark per task submitted, and the sweep that finds a dead worker's task."""

    def __init__(self, ray: Any, env: Mapping[str, str]) -> None:
        self.ray = ray
        self.affinity = import_module("ray.util.scheduling_strategies").NodeAffinitySchedulingStrategy
        self.run = uuid.uuid4().hex[:12]
        self.keys = itertools.count()
        self.sweep = ray.remote(_sweep)
        self.sweep_options: dict[str, Any] = {"num_cpus": 0, "max_retries": 0}
        self.env = dict(env)  # the tasks' --ray-env, so the same temporary directory as theirs (TMPDIR)

    def mark(self) -> Mark:
        """A new task's mark, with a key of its own."""
        return Mark(self.run, next(self.keys))

    def track(self, mark: Mark, nodes: Iterable[str]) -> Track | None:
        """The track of one task whose worker died (:meth:`died`), None when no node has it."""
        return self.died([mark], nodes).get(mark.key)

    def died(self, marks: list[Mark], nodes: Iterable[str]) -> dict[int, Track]:
        """The tracks of tasks whose workers died, by key (a task whose track no node has is left
        out), found on the alive ``nodes``, where what those tasks made is removed. Blocks for at most
        ``LOOKUP_WAIT`` seconds; a node that does not answer by then says nothing."""
        keys = [mark.key for mark in marks]
        refs = []
        for node in nodes:
            options = {**self.sweep_options, "scheduling_strategy": self.affinity(node, soft=False)}
            refs.append(self.sweep.options(**options).remote(self.run, keys, self.env))
        found: dict[int, Track] = {}
        if not refs:
            return found
        ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=LOOKUP_WAIT)
        for ref in ready:
            with contextlib.suppress(Exception):  # a node that left meanwhile: it has nothing to say
                found.update(self.ray.get(ref))
        return found


def apply_env(env: Mapping[str, str]) -> None:
    """Set the driver's ``--ray-env`` variables in this worker (and so in what it starts), as a task, a
    slot or a sweep begins: they come as call arguments, never in Ray's ``runtime_env`` (which Ray logs).
    A ``TMPDIR`` among them is where this worker's temporary folders go from now on."""
    if env:
        os.environ.update(env)
        if "TMPDIR" in env:
            tempfile.tempdir = None  # the documented way to have tempfile read TMPDIR again


def _sweep(run: str, keys: list[int], env: Mapping[str, str]) -> dict[int, Track]:
    """On one node: the tracks of the tasks ``keys`` of ``run`` whose private directory is here, with
    what their dead workers' agents left running killed (:func:`kill_orphans`: the processes whose
    ``WAZA_PROCESS_TAG`` the worker made), and the workspace it links and the directory itself removed,
    as the tasks would have (``env``: the tasks' ``--ray-env``, set here as there)."""
    apply_env(env)
    tmp = Path(tempfile.gettempdir()).resolve()
    host = socket.gethostname()
    found = {}
    swept: set[tuple[int, int]] = set()
    for key in keys:
        prefix = Mark(run, key).prefix
        for private in tmp.glob(f"{prefix}*"):
            named = _NAMED.fullmatch(private.name[len(prefix) :])
            if named is None or not private.is_dir() or private.is_symlink():
                continue
            link = private / _WORKSPACE
            made = os.readlink(link) if link.is_symlink() else ""
            found[key] = track = Track(named[1], host, int(named[2]), int(named[3]))
            # First what its worker's agents left running: then nothing writes to the workspace.
            if (worker := (track.pid, track.started)) not in swept:
                swept.add(worker)
                kill_orphans(*worker, grace=_DYING)
            _remove(tmp, made)
            shutil.rmtree(private, ignore_errors=True)
    return found


def _remove(tmp: Path, made: str) -> None:
    """Remove a workspace a track names: only a directory directly in ``tmp`` named as waza names it
    (``waza-...``), so a link in a directory its agent could write to can touch nothing else."""
    path = Path(made)
    if made and path.name.startswith("waza-") and path.parent.resolve() == tmp and path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
