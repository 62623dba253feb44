"""Where each Ray task runs and what it made on its node, asked for when its worker dies under it.

Ray reports a task whose worker process died (killed by its agent or by the kernel's OOM killer, a
crash of the interpreter) as ``WorkerCrashedError`` and nothing else: no node, no worker, no cause
(Ray 2.60 drops the raylet's account of the death when it makes the exception, and its state API,
which could say more, needs the dashboard, which waza leaves off). A worker that dies also never
runs its cleanup: the task's fresh workspace and its private directory stay in the node's
temporary directory.

So each task tells a small actor of the run (:class:`Tracks`: no CPU, on the driver's node when it
can be) where it runs as its first act (node id, host name, worker pid, its private directory) and,
when its workspace is a fresh one it removes itself, that workspace; before the agent gets its
prompt it waits until both have arrived, so a worker that dies under its agent or graders has
always been heard of. The reports are fire-and-forget calls on an actor handle the task gets with
its arguments. When the driver gets ``WorkerCrashedError`` or Ray's ``OutOfMemoryError`` for a task,
it takes that task's :class:`Track` from the actor (:meth:`Tracker.died`): the error record names
the node, host and worker pid, and a small task pinned to that node (``NodeAffinitySchedulingStrategy``,
``soft=False``) removes what the task made there; a node that is gone has nothing left to remove (Ray
refuses the task, and nothing waits for it). The driver forgets finished tasks' tracks in batches,
so the actor holds at most the tasks in flight and one batch.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import tempfile
from collections.abc import Mapping
from importlib import import_module
from pathlib import Path
from typing import Any

import msgspec
import msgspec.structs

from waza.runner.engine.specs import Workspace

__all__ = ["CLEANUP_WAIT", "Teller", "Track", "Tracker", "Tracks"]

#: Seconds a task waits for its reports to reach the actor before its agent starts (milliseconds, normally).
REPORT_WAIT = 10.0
#: Seconds the driver waits for the actor's answer about a task whose worker died.
LOOKUP_WAIT = 10.0
#: Seconds the driver waits, as the run ends, for the removals it asked for.
CLEANUP_WAIT = 10.0
#: Finished tasks whose tracks the driver forgets in one call to the actor.
FORGET_BATCH = 256


class Track(msgspec.Struct, frozen=True):
    """Where one task runs, and what it made in its node's temporary directory (removed by itself when it ends)."""

    node_id: str
    host: str
    pid: int
    made: tuple[str, ...] = ()


class Tracks:
    """The run's actor: each task's :class:`Track`, by the key the driver gave the task."""

    def __init__(self) -> None:
        self.tracks: dict[int, Track] = {}

    def started(self, key: int, track: Track) -> None:
        self.tracks[key] = track

    def made(self, key: int, path: str) -> None:
        track = self.tracks.get(key)
        if track is not None:
            self.tracks[key] = msgspec.structs.replace(track, made=(*track.made, path))

    def take(self, key: int) -> Track | None:
        return self.tracks.pop(key, None)

    def forget(self, keys: list[int]) -> None:
        for key in keys:
            self.tracks.pop(key, None)


class Teller:
    """What a task reports through: the run's actor and the task's key (travels with the task's arguments)."""

    def __init__(self, tracks: Any, key: int) -> None:
        self.tracks = tracks
        self.key = key
        self.sent: list[Any] = []

    def started(self, private: Path) -> None:
        """The task's first act: this node, host and worker, and the task's private directory."""
        node_id = str(import_module("ray").get_runtime_context().get_node_id())
        self.sent.append(self.tracks.started.remote(self.key, Track(node_id, socket.gethostname(), os.getpid(), (str(private),))))

    def workspace(self, workspace: Path, spec: Workspace) -> None:
        """The task's workspace, just made: reported when it is a fresh one the task removes; then wait
        (bounded) until every report has arrived, since the agent starts next."""
        if spec.fresh and spec.root is None and not spec.keep:
            self.sent.append(self.tracks.made.remote(self.key, str(workspace)))
        self.settle()

    def settle(self) -> None:
        """Wait (at most ``REPORT_WAIT`` seconds) until the reports sent so far have reached the actor."""
        if self.sent:
            with contextlib.suppress(Exception):  # an actor that is gone: the reports are lost, the task goes on
                import_module("ray").wait(self.sent, num_returns=len(self.sent), timeout=REPORT_WAIT, fetch_local=False)
            self.sent = []


class Tracker:
    """The driver's side: the run's actor, a key per task submitted, and the removals asked for."""

    def __init__(self, ray: Any, env: Mapping[str, str]) -> None:
        self.ray = ray
        affinity = import_module("ray.util.scheduling_strategies").NodeAffinitySchedulingStrategy
        self.affinity = affinity
        actor = ray.remote(num_cpus=0, max_restarts=0)(Tracks)
        with contextlib.suppress(Exception):  # a driver not on a node of its own (a Ray client): where Ray chooses
            actor = actor.options(scheduling_strategy=affinity(ray.get_runtime_context().get_node_id(), soft=True))
        self.actor = actor.remote()
        self.remove = ray.remote(_remove)
        self.remove_options: dict[str, Any] = {"num_cpus": 0, "max_retries": 0}
        if env:  # the same TMPDIR, and so the same temporary directory, as the tasks
            self.remove_options["runtime_env"] = {"env_vars": dict(env)}
        self.keys = itertools.count()
        self.finished: list[int] = []
        self.removing: list[Any] = []

    def teller(self) -> Teller:
        """A new task's reporter, with a key of its own."""
        return Teller(self.actor, next(self.keys))

    def done(self, key: int) -> None:
        """The task of ``key`` came back: its track is forgotten (with the batch it ends)."""
        self.finished.append(key)
        if len(self.finished) >= FORGET_BATCH:
            self.actor.forget.remote(self.finished)
            self.finished = []

    def died(self, key: int) -> Track | None:
        """The track of a task whose worker died (None when it never arrived); what the task made is
        removed on its node by a task pinned there. Blocks for the actor's answer: run it off the loop."""
        try:
            track: Track | None = self.ray.get(self.actor.take.remote(key), timeout=LOOKUP_WAIT)
        except Exception:  # the actor is gone or does not answer: the record says what Ray said
            return None
        if track is not None and track.made:
            on_node = self.remove.options(**self.remove_options, scheduling_strategy=self.affinity(track.node_id, soft=False))
            self.removing.append(on_node.remote(track.made))
        if len(self.removing) > 1:
            self.removing = self.ray.wait(self.removing, num_returns=len(self.removing), timeout=0)[1]
        return track

    def close(self, grace: float = CLEANUP_WAIT) -> None:
        """As the run ends: wait (at most ``grace`` seconds) for the removals asked for, then end the actor."""
        with contextlib.suppress(Exception):
            if self.removing:
                self.ray.wait(self.removing, num_returns=len(self.removing), timeout=grace)
        with contextlib.suppress(Exception):
            self.ray.kill(self.actor, no_restart=True)


def _remove(made: tuple[str, ...]) -> None:
    """On the node of a task whose worker died: remove what it made, as the task would have.

    Only directories directly in this node's temporary directory and named as waza names them
    (``waza-...``) are removed: a report is waza's own, but nothing else is ever touched.
    """
    tmp = Path(tempfile.gettempdir()).resolve()
    for path in map(Path, made):
        if path.name.startswith("waza-") and path.parent.resolve() == tmp and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
