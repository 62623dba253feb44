"""``--executor ray``: every prompt × trial as one Ray task; the driver writes each record as it comes back.

Each task runs ``run_job`` (the API's ``run_one``) on a worker: the agent and
the graders side by side in a workspace created on that node, the finished
record returned. The driver keeps a bounded window of tasks in flight (so a
prompts file of any size keeps its memory flat), waits for whichever finishes
first, and hands its record to the run's sink, the same sink the local engine
uses, so the output file, ``--resume``, the summary and the exit code are the
local ones.

The window follows the cluster: its resources are read again every few
seconds, so a node that joins mid-run gets tasks and one that leaves stops
counting; a cluster with no room at all for one task is waited for, up to
``capacity_timeout`` seconds (an autoscaler adding nodes), before the run is refused.

Faults: a task whose node is lost is run again up to ``max_retries`` times,
one whose own worker process dies under it once more (``ray_faults``); after
that the item gets one *error* record naming the node and the worker's exit as
Ray reports it. A task has one return value, so it can never yield two records. A node whose tasks
end as errors ``node_error_limit`` times in a row (a missing binary, a full
disk: fast failures that would otherwise pull most of the prompts to it) gets
no more tasks: from then on each task is pinned to a healthy node. On an
interrupt the tasks in flight are cancelled (their agents stopped) and nothing
more is written. With ``warm_agents`` each slot is an actor that keeps its
agent between items (``ray_actors``), under the same window, retries and budget.
"""

from __future__ import annotations

import contextlib
import functools
import math
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from importlib import import_module
from typing import Any, Literal

import anyio
import msgspec

from waza import __version__
from waza.protocol.errors import ConfigError
from waza.protocol.io.process import identity
from waza.protocol.io.secrets import marked_names
from waza.protocol.records import CaptureResult
from waza.runner.engine.pipeline import Settings, Sink, WorkItem, failed_result
from waza.runner.engine.specs import AgentSpec, GraderSpecT, Timeouts
from waza.runner.ray_cluster.collect import Collected, deliver, run_collecting
from waza.runner.ray_cluster.connect import INSTALL_HINT, WORKER_NICENESS, connected, import_ray, reach
from waza.runner.ray_cluster.faults import Attempts, Loss, loss_of, one_line
from waza.runner.ray_cluster.jobs import Job, NodeMismatch, agent_of, graders_of, pack, run_job, workspace_of
from waza.runner.ray_cluster.nodes import Nodes
from waza.runner.ray_cluster.tracks import Mark, Teller, Track, Tracker, apply_env
from waza.runner.wording import count

#: How often an item is run again after its node was lost (its own worker dying: once, ``ray_faults``).
MAX_RETRIES = 3
#: Seconds the cancelled tasks get to stop their agents after an interrupt before they are killed.
CANCEL_GRACE = 5.0
#: Errors in a row from one node after which it gets no more tasks.
NODE_ERROR_LIMIT = 5
#: Seconds to wait for a cluster with no room for one task: none, it is refused at once.
CAPACITY_TIMEOUT = 0.0
#: How long one wait for a finished task blocks a thread (the loop stays responsive to interrupts).
_POLL = 0.25
#: Seconds between two readings of the cluster's resources and nodes.
_REFRESH = 2.0


class RayOptions(msgspec.Struct, frozen=True):
    """Where and how the tasks run.

    ``address``: an existing cluster (``None``: start an embedded local
    instance with ``cpus`` CPUs, default this machine's). ``task_cpus`` and
    ``resources``: what each task reserves. ``in_flight``: the window of tasks
    submitted at once (default: twice the tasks the cluster can run at once).
    ``node_error_limit``: errors in a row after which a node gets no more
    tasks. ``env``: variables set for every task (Ray's runtime environment).
    ``capacity_timeout``: seconds to wait for a cluster with no room for one task.
    ``warm_agents``: an actor per slot keeps its agent process between items (an ACP agent
    starts once per slot, as on the local executor) instead of a task per item.
    ``verbose``: Ray's own log lines (its logging from INFO, what it writes while joining) on stderr.
    """

    address: str | None = None
    cpus: int | None = None
    task_cpus: float = 1.0
    resources: Mapping[str, float] = msgspec.field(default_factory=dict)
    in_flight: int | None = None
    max_retries: int = MAX_RETRIES
    node_error_limit: int = NODE_ERROR_LIMIT
    env: Mapping[str, str] = msgspec.field(default_factory=dict)
    capacity_timeout: float = CAPACITY_TIMEOUT
    warm_agents: bool = False
    verbose: bool = False

    def __post_init__(self) -> None:
        if not (self.task_cpus >= 0 and math.isfinite(self.task_cpus)):
            raise ConfigError(f"RayOptions.task_cpus must be a finite number >= 0, got {self.task_cpus}")
        if self.in_flight is not None and self.in_flight < 1:
            raise ConfigError(f"RayOptions.in_flight must be at least 1, got {self.in_flight}")
        if self.max_retries < 0:
            raise ConfigError(f"RayOptions.max_retries must be at least 0, got {self.max_retries}")
        if self.node_error_limit < 1:
            raise ConfigError(f"RayOptions.node_error_limit must be at least 1, got {self.node_error_limit}")
        if not (self.capacity_timeout >= 0 and math.isfinite(self.capacity_timeout)):
            raise ConfigError(f"RayOptions.capacity_timeout must be a finite number of seconds >= 0, got {self.capacity_timeout}")
        if self.address is not None and self.cpus is not None:
            raise ConfigError(
                "RayOptions.cpus sets the CPUs of the embedded Ray instance; with RayOptions.address the cluster's own CPUs count"
            )


def _short(cluster: Mapping[str, float], options: RayOptions) -> str:
    """What the cluster as a whole lacks for one task ("" when nothing)."""
    for name, amount in {**options.resources, "CPU": options.task_cpus}.items():
        have = cluster.get(name, 0.0)
        if amount > 0 and have < amount:
            known = ", ".join(f"{k}={v:g}" for k, v in sorted(cluster.items()) if not k.startswith("node:"))
            return f"each task asks for {name}={amount:g} but the Ray cluster has {name}={have:g} ({known})"
    return ""


class RayExecutor:
    """An executor (``pipeline.Executor``) that runs each item as a Ray task (or on a warm slot, ``ray_actors``)."""

    #: Seconds cancelled work gets to stop its agents before it is killed.
    cancel_grace: float = CANCEL_GRACE

    def __init__(self, options: RayOptions) -> None:
        import_ray(loopback=options.address is None)  # a missing extra is a usage error before anything is opened
        if options.address is not None:
            reach(options.address)  # so is an address where nothing listens
        self.options = options

    async def __call__(self, items: AsyncIterator[WorkItem], settings: Settings, sink: Sink[CaptureResult]) -> None:
        with connected(self.options.address, self.options.cpus, verbose=self.options.verbose) as ray:
            await self._run(ray, items, settings, sink)

    async def _run(self, ray: Any, items: AsyncIterator[WorkItem], settings: Settings, sink: Sink[CaptureResult]) -> None:
        options = self.options
        nodes = Nodes(ray, {**options.resources, "CPU": options.task_cpus}, options.node_error_limit, _REFRESH)
        await self._wait_for_room(nodes)
        jobs = _Jobs(ray, settings, options.env)
        if options.warm_agents:
            from waza.runner.ray_cluster.actors import run_slots

            await run_slots(self, ray, nodes, jobs, items, settings, sink)
            return
        on_node = ray.remote(_on_node)
        task_options: dict[str, Any] = {
            "num_cpus": options.task_cpus,
            "resources": dict(options.resources) or None,
            "max_retries": 0,  # the driver reruns what was lost, telling a lost node from a dying worker
            "retry_exceptions": False,
        }
        task = on_node.options(**task_options)
        affinity = import_module("ray.util.scheduling_strategies").NodeAffinitySchedulingStrategy
        tracker = Tracker(ray, options.env)
        pending: dict[Any, tuple[WorkItem, str | None, Job, Any, Attempts, Mark]] = {}

        def submit(item: WorkItem, node: str | None, job: Job, seed: Any, attempts: Attempts) -> None:
            remote = task if node is None else on_node.options(**task_options, scheduling_strategy=affinity(node, soft=False))
            mark = tracker.mark()
            pending[remote.remote(job, seed, mark)] = (item, node, job, seed, attempts, mark)

        exhausted = False
        try:
            while True:
                nodes.refresh()
                window = options.in_flight or 2 * nodes.healthy_slots()
                while not exhausted and len(pending) < window:
                    found = await jobs.next(items, sink)
                    if found is None:
                        exhausted = True
                        break
                    item, job, seed = found
                    submit(item, nodes.place(), job, seed, Attempts())
                if not pending:
                    if exhausted:
                        return
                    await self._wait_for_room(nodes)
                    continue
                for ref in await anyio.to_thread.run_sync(_ready, ray, list(pending)):
                    item, node, job, seed, attempts, mark = pending.pop(ref)
                    nodes.returned(node)
                    if node is not None and _unschedulable(ray, ref):  # its node left: Ray chooses another
                        submit(item, None, job, seed, attempts)
                        continue
                    where = (node or "", nodes.hosts.get(node or "", ""), None)
                    # If its worker died: where it ran, from its own track, and what it left there removed.
                    died = functools.partial(tracker.track, mark, [node] if node else nodes.slots)
                    result = self._collect(ray, ref, item, settings, attempts, where, died)
                    if result == "again":
                        submit(item, None, job, seed, attempts)
                    elif result is not None:
                        nodes.saw(result)
                        await sink(result)
        finally:
            if pending:
                forced = _cancel(ray, list(pending))
                if forced:  # killed with their workers: what they made is removed as for a worker that died
                    tracker.died([pending[ref][5] for ref in forced], nodes.slots)

    @staticmethod
    def ready(ray: Any, refs: list[Any]) -> list[Any]:
        """The finished calls among ``refs``: ``_ready``, for the warm slots' loop too."""
        return _ready(ray, refs)

    async def _wait_for_room(self, nodes: Nodes) -> None:
        """Until the healthy nodes have room for one task: ``capacity_timeout`` seconds at most, then a ConfigError."""
        deadline = time.monotonic() + self.options.capacity_timeout
        said = False
        while True:
            nodes.refresh(force=True)
            if nodes.healthy_slots() > 0:
                return
            short = _short(nodes.resources, self.options)
            if nodes.unhealthy and not short:
                short = f"every node with room for a task ended {count(self.options.node_error_limit, 'task')} in a row as errors"
            elif not short:
                wanted = ", ".join(f"{k}={v:g}" for k, v in {**self.options.resources, "CPU": self.options.task_cpus}.items())
                short = f"no single node has room for one task ({wanted})"
            if time.monotonic() >= deadline:
                hint = f" after waiting {self.options.capacity_timeout:g} s" if self.options.capacity_timeout else ""
                raise ConfigError(f"{short}{hint} (RayOptions.capacity_timeout waits for an autoscaler to add nodes)")
            if not said:
                print(
                    f"waza: waiting up to {self.options.capacity_timeout:g} s for room on the Ray cluster: {short}",
                    file=sys.stderr,
                )
                said = True
            await anyio.sleep(min(_REFRESH, max(0.0, deadline - time.monotonic())))

    def _collect(
        self,
        ray: Any,
        ref: Any,
        item: WorkItem,
        settings: Settings,
        attempts: Attempts,
        where: tuple[str, str, int | None] = ("", "", None),
        died: Callable[[], Track | None] | None = None,
    ) -> CaptureResult | Literal["again"] | None:
        """The task's record; "again" when its worker or node went away and the item is to run again
        (``attempts`` counts it; ``where``: node id, host and worker pid as far as the driver knows,
        ``died``: where the task itself said it ran, asked when its worker died); an error record
        when Ray could not run it; None when it was cancelled."""
        exceptions = ray.exceptions
        try:
            got = ray.get(ref)
            if got is None:  # a warm slot closing (ray_actors)
                return None
            result, collected = got
            deliver(collected, _label(result))
            return result  # type: ignore[no-any-return]
        except (exceptions.TaskCancelledError, KeyboardInterrupt):
            return None  # interrupted: the run is ending and --resume will run it again
        except exceptions.RayTaskError as exc:
            if isinstance(exc.cause, KeyboardInterrupt):
                return None
            if isinstance(exc.cause, NodeMismatch):
                raise ConfigError(f"{exc.cause}: install the driver's waza on every node") from None
            message = f"Ray task failed: {type(exc.cause).__name__}: {exc.cause}"
        except exceptions.RayError as exc:
            loss = loss_of(exc, exceptions, *where)
            if loss is not None:
                track = None if loss.node_lost or died is None else died()
                if track is not None:
                    loss = msgspec.structs.replace(loss, node_id=track.node_id, host=track.host, pid=track.pid)
                return "again" if attempts.again(loss, self.options.max_retries) else self.lost(item, settings, attempts, loss)
            message = f"Ray could not finish this task: {type(exc).__name__}: {one_line(str(exc))}"
        return failed_result(item.case, item.trial, settings.adapter.name, message)

    @staticmethod
    def lost(item: WorkItem, settings: Settings, attempts: Attempts, loss: Loss) -> CaptureResult:
        """The error record of an item given up after ``attempts``; it names its last node, which
        then counts it towards that node's error budget."""
        result = failed_result(item.case, item.trial, settings.adapter.name, attempts.message(loss))
        if loss.node_id:
            result.metadata = {**result.metadata, "ray": {"node_id": loss.node_id, "host": loss.host}}
        return result


def _unschedulable(ray: Any, ref: Any) -> bool:
    """Whether a task pinned to a node failed because that node is gone (not because of what it ran)."""
    unschedulable = getattr(ray.exceptions, "TaskUnschedulableError", None)
    try:
        ray.get(ref, timeout=0)
    except Exception as exc:  # only the kind matters here; _collect reads it again
        return unschedulable is not None and isinstance(exc, unschedulable)
    return False


def _on_node(job: Job, seed: bytes | None, mark: Mark) -> tuple[CaptureResult, Collected]:
    """What each task runs: the job, told which Ray node it is on, and the files it wrote for the driver;
    its private directory's name, after ``mark``, is its track while it runs (``ray_tracks``)."""
    apply_env(job.env)  # first: a TMPDIR among them is where the task's private folder goes
    node_id = import_module("ray").get_runtime_context().get_node_id()
    teller = Teller(job.workspace)

    def run(agent: AgentSpec, graders: tuple[GraderSpecT, ...]) -> CaptureResult:
        return run_job(msgspec.structs.replace(job, agent=agent, graders=graders), seed, node_id=node_id, made=teller.workspace)

    return run_collecting(run, job.agent, job.graders, prefix=mark.private(node_id, identity()), made=teller.started)


def _label(result: CaptureResult) -> str:
    return result.id if result.trial is None else f"{result.id} (trial {result.trial})"


class _Jobs:
    """Turns work items into (job, seed) pairs, converting each distinct grader list and packing each
    distinct ``prepare`` hook once (a seed is put in Ray's object store once and shared by its tasks)."""

    def __init__(self, ray: Any, settings: Settings, env: Mapping[str, str]) -> None:
        self.ray = ray
        self.env = dict(env)  # --ray-env: in each job, in memory, never in runtime_env
        self.adapter = settings.adapter.name
        self.agent = agent_of(settings)
        self.timeouts = Timeouts(prompt=settings.timeout)
        self.workspace = workspace_of(settings)
        self.graders = graders_of(settings.graders)
        # Keyed by identity; the key object is kept in the value so its id stays its own.
        self.own_graders: dict[int, tuple[object, tuple[GraderSpecT, ...]]] = {}
        self.seeds: dict[int, tuple[object, Any]] = {}

    async def next(self, items: AsyncIterator[WorkItem], sink: Sink[CaptureResult]) -> tuple[WorkItem, Job, Any] | None:
        """The next item with its job and seed (None once ``items`` are exhausted); an item whose
        workspace cannot be made gets its error record instead."""
        async for item in items:
            try:
                return (item, *self.of(item))
            except Exception as exc:  # a workspace that cannot be made is this item's error
                await sink(failed_result(item.case, item.trial, self.adapter, f"cannot prepare workspace: {exc}"))
        return None

    def of(self, item: WorkItem) -> tuple[Job, Any]:
        graders = self.graders
        if item.graders is not None:
            if id(item.graders) not in self.own_graders:
                self.own_graders[id(item.graders)] = (item.graders, graders_of(item.graders))
            graders = self.own_graders[id(item.graders)][1]
        seed = None
        if item.prepare is not None:
            if id(item.prepare) not in self.seeds:
                self.seeds[id(item.prepare)] = (item.prepare, self.ray.put(pack(item.prepare)))
            seed = self.seeds[id(item.prepare)][1]
        job = Job(
            item.case, item.trial, self.agent, graders, self.timeouts, self.workspace, __version__, marked_names(), self.env
        )
        return job, seed


def _ready(ray: Any, refs: list[Any]) -> list[Any]:
    """The finished tasks among ``refs``: blocks until at least one is, or for at most ``_POLL`` seconds."""
    ready, rest = ray.wait(refs, num_returns=1, timeout=_POLL)
    if ready and rest:
        more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
        ready += more
    return list(ready)


def _cancel(ray: Any, refs: list[Any]) -> list[Any]:
    """Cancel the tasks in flight: first politely (their agents are stopped), then by force (their
    workers killed): the tasks cancelled by force."""
    for ref in refs:
        with contextlib.suppress(Exception):
            ray.cancel(ref, recursive=True)
    rest: list[Any] = []
    with contextlib.suppress(Exception):
        _, rest = ray.wait(refs, num_returns=len(refs), timeout=CANCEL_GRACE)
        for ref in rest:
            ray.cancel(ref, force=True)
    print(f"waza: cancelled {len(refs)} Ray tasks in flight", file=sys.stderr)
    return list(rest)


__all__ = [
    "INSTALL_HINT",
    "MAX_RETRIES",
    "NODE_ERROR_LIMIT",
    "WORKER_NICENESS",
    "RayExecutor",
    "RayOptions",
    "import_ray",
]
