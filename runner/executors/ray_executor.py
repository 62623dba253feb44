"""``--executor ray``: every prompt × trial as one Ray task; the driver writes each record as it comes back.

Each task runs ``run_job`` (the API's ``run_one``) on a worker: the agent and
the graders side by side in a workspace created on that node, the finished
record returned. The driver keeps a bounded window of tasks in flight (so a
prompts file of any size keeps its memory flat), waits for whichever finishes
first, and hands its record to the run's sink, the same sink the local engine
uses, so the output file, ``--resume``, the summary and the exit code are the
local ones.

Faults: a task whose worker process (or node) dies is run again by Ray up to
``max_retries`` times; after that the item gets one *error* record. A task
has one return value, so it can never yield two records. On an interrupt the
tasks in flight are cancelled (their agents stopped) and nothing more is written.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from waza.protocol.errors import ConfigError
from waza.protocol.records import CaptureResult
from waza.runner.engine.pipeline import Settings, Sink, WorkItem, failed_result
from waza.runner.engine.specs import GraderSpecT, Timeouts
from waza.runner.executors.jobs import Job, agent_of, graders_of, pack, run_job, workspace_of
from waza.runner.executors.ray_connect import INSTALL_HINT, WORKER_NICENESS, connected, import_ray

#: How often a task is run again after its worker process or node died (Ray's ``max_retries``).
MAX_RETRIES = 3
#: Seconds the cancelled tasks get to stop their agents after an interrupt before they are killed.
CANCEL_GRACE = 5.0
#: How long one wait for a finished task blocks a thread (the loop stays responsive to interrupts).
_POLL = 0.25


@dataclass(frozen=True, slots=True)
class RayOptions:
    """Where and how the tasks run.

    ``address``: an existing cluster (``None``: start an embedded local
    instance with ``cpus`` CPUs, default this machine's). ``task_cpus`` and
    ``resources``: what each task reserves. ``in_flight``: the window of tasks
    submitted at once (default: twice the tasks the cluster can run at once).
    """

    address: str | None = None
    cpus: int | None = None
    task_cpus: float = 1.0
    resources: Mapping[str, float] = field(default_factory=dict)
    in_flight: int | None = None
    max_retries: int = MAX_RETRIES

    def __post_init__(self) -> None:
        if not (self.task_cpus >= 0 and math.isfinite(self.task_cpus)):
            raise ConfigError(f"--ray-num-cpus must be a finite number >= 0, got {self.task_cpus}")
        if self.in_flight is not None and self.in_flight < 1:
            raise ConfigError(f"--ray-in-flight must be at least 1, got {self.in_flight}")
        if self.max_retries < 0:
            raise ConfigError(f"--ray-max-retries must be at least 0, got {self.max_retries}")
        if self.address is not None and self.cpus is not None:
            raise ConfigError("-j sets the CPUs of the embedded Ray instance; with --ray-address the cluster's own CPUs count")


def task_slots(cluster: Mapping[str, float], options: RayOptions) -> int:
    """How many tasks the cluster can run at once; ConfigError when it cannot run even one."""
    wanted = {**options.resources, "CPU": options.task_cpus}
    slots = math.inf
    for name, amount in wanted.items():
        if amount <= 0:
            continue
        have = cluster.get(name, 0.0)
        if have < amount:
            known = ", ".join(f"{k}={v:g}" for k, v in sorted(cluster.items()) if not k.startswith("node:"))
            raise ConfigError(f"each task asks for {name}={amount:g} but the Ray cluster has {name}={have:g} ({known})")
        slots = min(slots, have // amount)
    return 1 if slots == math.inf else max(1, int(slots))


class RayExecutor:
    """An executor (``pipeline.Executor``) that runs each item as a Ray task."""

    def __init__(self, options: RayOptions) -> None:
        import_ray(loopback=options.address is None)  # a missing extra is a usage error before anything is opened
        self.options = options

    async def __call__(self, items: AsyncIterator[WorkItem], settings: Settings, sink: Sink[CaptureResult]) -> None:
        with connected(self.options.address, self.options.cpus) as ray:
            await self._run(ray, items, settings, sink)

    async def _run(self, ray: Any, items: AsyncIterator[WorkItem], settings: Settings, sink: Sink[CaptureResult]) -> None:
        options = self.options
        window = options.in_flight or 2 * task_slots(ray.cluster_resources(), options)
        remote = ray.remote(run_job).options(
            num_cpus=options.task_cpus,
            resources=dict(options.resources) or None,
            max_retries=options.max_retries,
            retry_exceptions=False,
        )
        jobs = _Jobs(ray, settings)
        pending: dict[Any, WorkItem] = {}
        exhausted = False
        try:
            while True:
                while not exhausted and len(pending) < window:
                    try:
                        item = await anext(items)
                    except StopAsyncIteration:
                        exhausted = True
                        break
                    try:
                        job, seed = jobs.of(item)
                    except Exception as exc:  # noqa: BLE001 - a workspace that cannot be made is this item's error
                        await sink(
                            failed_result(item.case, item.trial, settings.adapter.name, f"cannot prepare workspace: {exc}")
                        )
                        continue
                    pending[remote.remote(job, seed)] = item
                if not pending:
                    return
                for ref in await anyio.to_thread.run_sync(_ready, ray, list(pending)):
                    item = pending.pop(ref)
                    result = self._collect(ray, ref, item, settings)
                    if result is not None:
                        await sink(result)
        finally:
            if pending:
                _cancel(ray, list(pending))

    def _collect(self, ray: Any, ref: Any, item: WorkItem, settings: Settings) -> CaptureResult | None:
        """The task's record; an error record when Ray could not run it; None when it was cancelled."""
        exceptions = ray.exceptions
        try:
            result: CaptureResult = ray.get(ref)
            return result
        except (exceptions.TaskCancelledError, KeyboardInterrupt):
            return None  # interrupted: the run is ending and --resume will run it again
        except exceptions.RayTaskError as exc:
            if isinstance(exc.cause, KeyboardInterrupt):
                return None
            message = f"Ray task failed: {type(exc.cause).__name__}: {exc.cause}"
        except exceptions.RayError as exc:
            tries = self.options.max_retries + 1
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            message = f"Ray could not finish this task in {tries} tries (worker or node died): {type(exc).__name__}: {first}"
        return failed_result(item.case, item.trial, settings.adapter.name, message)


class _Jobs:
    """Turns work items into (job, seed) pairs, converting each distinct grader list and packing each
    distinct ``prepare`` hook once (a seed is put in Ray's object store once and shared by its tasks)."""

    def __init__(self, ray: Any, settings: Settings) -> None:
        self.ray = ray
        self.agent = agent_of(settings)
        self.timeouts = Timeouts(prompt=settings.timeout)
        self.workspace = workspace_of(settings)
        self.graders = graders_of(settings.graders)
        # Keyed by identity; the key object is kept in the value so its id stays its own.
        self.own_graders: dict[int, tuple[object, tuple[GraderSpecT, ...]]] = {}
        self.seeds: dict[int, tuple[object, Any]] = {}

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
        return Job(item.case, item.trial, self.agent, graders, self.timeouts, self.workspace), seed


def _ready(ray: Any, refs: list[Any]) -> list[Any]:
    """The finished tasks among ``refs``: blocks until at least one is, or for at most ``_POLL`` seconds."""
    ready, rest = ray.wait(refs, num_returns=1, timeout=_POLL)
    if ready and rest:
        more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
        ready += more
    return list(ready)


def _cancel(ray: Any, refs: list[Any]) -> None:
    """Cancel the tasks in flight: first politely (their agents are stopped), then by force."""
    for ref in refs:
        with contextlib.suppress(Exception):
            ray.cancel(ref, recursive=True)
    with contextlib.suppress(Exception):
        _, rest = ray.wait(refs, num_returns=len(refs), timeout=CANCEL_GRACE)
        for ref in rest:
            ray.cancel(ref, force=True)
    print(f"waza: cancelled {len(refs)} Ray tasks in flight", file=sys.stderr)


__all__ = ["INSTALL_HINT", "MAX_RETRIES", "WORKER_NICENESS", "RayExecutor", "RayOptions", "import_ray", "task_slots"]
