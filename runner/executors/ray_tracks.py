"""Where a Ray task ran and what it made on its node, found when its worker died under it.

Ray reports a task whose worker process died (killed by its agent or by the kernel's OOM killer, a
crash of the interpreter) as ``WorkerCrashedError`` and nothing else: no node, no worker, no cause
(Ray 2.60 drops the raylet's account of the death when it makes the exception, and its state API,
which could say more, needs the dashboard, which waza leaves off). A worker that dies also never
runs its cleanup: the task's fresh workspace and its private directory stay in the node's
temporary directory.

So each task leaves a track on its own node, where nothing can lose it: its private directory is
named after the run and the task (``waza-task-RUN-KEY-...``, :class:`Mark`), and as its first act
the task writes there, in a small file, its node id, host name and worker pid, then adds the fresh
workspace it is about to hand to the agent (when it is one the task removes itself). A local file
write costs the task next to nothing and is on disk before the agent starts, so a worker that dies
under its agent or graders has always left it. When the driver gets ``WorkerCrashedError`` or Ray's
``OutOfMemoryError`` for a task, it runs a small task on every alive node (``_sweep``, no CPU, pinned
with ``NodeAffinitySchedulingStrategy(soft=False)``) that looks for that task's directory, reads the
track, removes the workspace and the directory, and returns the track: the error record names the
node, host and worker pid. A node that is gone has nothing left to remove (and Ray then reports the
node's death, not the worker's). The cost is on the failure path only: one small task per alive node
for each worker that dies.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterable, Mapping
from importlib import import_module
from pathlib import Path
from typing import Any

import msgspec
import msgspec.structs

from waza.runner.engine.specs import Workspace

__all__ = ["LOOKUP_WAIT", "Mark", "Teller", "Track", "Tracker"]

#: Seconds the driver waits for the nodes to say which of them a task whose worker died ran on.
LOOKUP_WAIT = 10.0
#: The file in a task's private directory that holds its track.
_TRACK = "track.json"


class Track(msgspec.Struct, frozen=True):
    """Where one task ran, and the workspaces it made in its node's temporary directory."""

    node_id: str
    host: str
    pid: int
    made: tuple[str, ...] = ()


class Mark(msgspec.Struct, frozen=True):
    """What a task carries to leave its track: the run's id and the task's key."""

    run: str
    key: int

    @property
    def prefix(self) -> str:
        """The start of the name of the task's private directory."""
        return f"waza-task-{self.run}-{self.key}-"


class Teller:
    """A task's side: writes its track into its private directory."""

    def __init__(self) -> None:
        self.file: Path | None = None
        self.track: Track | None = None

    def started(self, private: Path) -> None:
        """The task's first act: this node, host and worker, in the private directory just made."""
        node_id = str(import_module("ray").get_runtime_context().get_node_id())
        self.file, self.track = private / _TRACK, Track(node_id, socket.gethostname(), os.getpid())
        self.file.write_bytes(msgspec.json.encode(self.track))

    def workspace(self, workspace: Path, spec: Workspace) -> None:
        """The task's workspace, just made: added to the track when it is a fresh one the task removes."""
        if self.file is not None and self.track is not None and spec.fresh and spec.root is None and not spec.keep:
            self.track = msgspec.structs.replace(self.track, made=(*self.track.made, str(workspace)))
            self.file.write_bytes(msgspec.json.encode(self.track))


class Tracker:
    """The driver's side: a mark per task submitted, and the sweep that finds a dead worker's task."""

    def __init__(self, ray: Any, env: Mapping[str, str]) -> None:
        self.ray = ray
        self.affinity = import_module("ray.util.scheduling_strategies").NodeAffinitySchedulingStrategy
        self.run = uuid.uuid4().hex[:12]
        self.keys = itertools.count()
        self.sweep = ray.remote(_sweep)
        self.sweep_options: dict[str, Any] = {"num_cpus": 0, "max_retries": 0}
        if env:  # the tasks' environment, so the same temporary directory as theirs (TMPDIR)
            self.sweep_options["runtime_env"] = {"env_vars": dict(env)}

    def mark(self) -> Mark:
        """A new task's mark, with a key of its own."""
        return Mark(self.run, next(self.keys))

    def died(self, marks: list[Mark], nodes: Iterable[str]) -> dict[int, Track]:
        """The tracks of tasks whose workers died, by key (a task whose track no node has is left
        out), found on the alive ``nodes``, where what those tasks made is removed. Blocks for at most
        ``LOOKUP_WAIT`` seconds; a node that does not answer by then says nothing."""
        keys = [mark.key for mark in marks]
        refs = []
        for node in nodes:
            options = {**self.sweep_options, "scheduling_strategy": self.affinity(node, soft=False)}
            refs.append(self.sweep.options(**options).remote(self.run, keys))
        found: dict[int, Track] = {}
        if not refs:
            return found
        ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=LOOKUP_WAIT)
        for ref in ready:
            with contextlib.suppress(Exception):  # a node that left meanwhile: it has nothing to say
                found.update(self.ray.get(ref))
        return found


def _sweep(run: str, keys: list[int]) -> dict[int, Track]:
    """On one node: the tracks of the tasks ``keys`` of ``run`` that left their directory here, with
    what they made and the directory itself removed, as the tasks would have."""
    tmp = Path(tempfile.gettempdir()).resolve()
    found = {}
    for key in keys:
        for private in tmp.glob(f"{Mark(run, key).prefix}*"):
            with contextlib.suppress(OSError, msgspec.DecodeError):  # a track cut short: the directory goes anyway
                track = msgspec.json.decode((private / _TRACK).read_bytes(), type=Track)
                found[key] = track
                _remove(tmp, track.made)
            if private.is_dir() and not private.is_symlink():
                shutil.rmtree(private, ignore_errors=True)
    return found


def _remove(tmp: Path, made: tuple[str, ...]) -> None:
    """Remove the workspaces a track names: only directories directly in ``tmp`` named as waza names
    them (``waza-...``), so a track, in a directory its agent could write to, can touch nothing else."""
    for path in map(Path, made):
        if path.name.startswith("waza-") and path.parent.resolve() == tmp and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
