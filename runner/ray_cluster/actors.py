"""``RayOptions.warm_agents``: an actor per slot keeps its agent between items, as the local engine's workers do.

The local engine gives each of its ``-j`` workers one adapter for the whole
run, so an agent that can serve many prompts (an ACP agent opens a session per
prompt on one process) starts once per worker. A Ray task per item cannot keep
anything, so here each slot is a Ray actor (:class:`Slot`) holding that same
adapter, opened by the same ``open_adapter`` on its node and used by the same
``run_item`` for one item after another.

The driver keeps the executor's guarantees: a slot runs one item at a time and
an item is pulled only for a free slot, so the items in flight are at most the
slots (the cluster's healthy room, or ``in_flight``); each item's record comes
back once. A slot whose actor dies takes its item with it: the item goes to
another slot, up to ``max_retries`` times when the node was lost and once when
the slot's own worker died (``ray_faults``), then ends as one error record
naming the node, the worker and its exit. A slot's records count towards its
node's error budget; a node given up keeps no slots. On an interrupt every slot
cancels its item and stops its agent, then the actors are killed.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import sys
import tempfile
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
import msgspec

from waza.protocol.errors import ConfigError, WazaError
from waza.protocol.io.process import identity
from waza.protocol.records import CaptureResult
from waza.runner.engine.pipeline import Settings, Sink, WorkItem, entered, open_adapter, run_item
from waza.runner.engine.run_setup import build_graders, run_settings, workspaces_of
from waza.runner.engine.specs import AgentSpec, GraderSpecT, Timeouts, Workspace
from waza.runner.ray_cluster.collect import Collected, _is_reviewer
from waza.runner.ray_cluster.faults import Attempts, loss_of, one_line
from waza.runner.ray_cluster.jobs import Job, check_node, located, node_failure, seeded, telling
from waza.runner.ray_cluster.nodes import Nodes
from waza.runner.ray_cluster.tracks import Mark, Teller, Tracker, apply_env

if TYPE_CHECKING:
    from waza.adapters.base import Adapter
    from waza.runner.ray_cluster.executor import RayExecutor, _Jobs

__all__ = ["Slot", "run_slots"]

#: The actors' second thread, for ``close`` while an item runs.
_CONTROL = "control"


class Slot:
    """One slot's agent on a Ray worker: opened at its first item, kept until :meth:`close`.

    The adapter and the grader runners live in an event loop of their own (a blocking portal's
    thread), entered and left there as the local engine does; :meth:`run` hands it one item at a
    time. The actor's second thread (concurrency group ``control``) runs :meth:`close`, which
    cancels the item in progress and stops the agent.
    """

    def __init__(self, agent: AgentSpec, timeouts: Timeouts, workspace: Workspace) -> None:
        self.node_id = str(import_module("ray").get_runtime_context().get_node_id())
        self.host = socket.gethostname()
        self.settings = run_settings(agent, [], timeouts, 1, workspaces_of(workspace))
        self.stack = contextlib.ExitStack()
        self.portal = self.stack.enter_context(anyio.from_thread.start_blocking_portal())
        self.graders = contextlib.ExitStack()
        self.stack.callback(self.graders.close)  # the graders stop before the agent and the portal
        self.adapter: Adapter[Any] | None = None
        self.grader_specs: tuple[GraderSpecT, ...] | None = None
        self.runners: list[Any] = []
        self.scope: anyio.CancelScope | None = None
        self.lock = threading.Lock()
        self.closing = False

    def where(self) -> tuple[str, str, int]:
        """(node id, host name, worker pid): what the driver names when this slot dies."""
        return self.node_id, self.host, os.getpid()

    def run(self, job: Job, seed: bytes | None, mark: Mark) -> tuple[CaptureResult, Collected] | None:
        """One item through this slot's agent: its record, in the tasks' shape (nothing collected: see
        ``_refuse_collected``); None once the slot is closing. While it runs, a private directory named
        after ``mark`` is its track, as a task's (``ray_tracks``): what it made is found if the slot dies."""
        apply_env(job.env)
        check_node(job, self.node_id)
        with self.lock:
            if self.closing:
                return None
            try:
                adapter = self._open(job)
            except WazaError as exc:  # the agent or a grader cannot start on this node: this record's error
                return located(node_failure(job, self.host, self.node_id, exc), self.node_id, self.host), Collected()
            with tempfile.TemporaryDirectory(prefix=mark.private(self.node_id, identity())) as private:
                teller = Teller(job.workspace)
                teller.started(Path(private))
                result = self.portal.call(self._item, adapter, job, telling(teller.workspace, seeded(seed)))
            return None if result is None else (result, Collected())

    def close(self) -> None:
        """Cancel the item in progress, then stop the graders and the agent (the actor is killed after)."""
        self.closing = True
        scope = self.scope
        if scope is not None:
            with contextlib.suppress(RuntimeError):  # the portal has stopped already
                self.portal.call(scope.cancel)
        with self.lock:
            self.stack.close()

    def _open(self, job: Job) -> Adapter[Any]:
        """The slot's adapter, opened at its first item; the job's grader runners, started when they change."""
        if job.graders != self.grader_specs:
            self.graders.close()
            self.grader_specs, self.runners = None, build_graders(list(job.graders), job.timeouts)
            self.graders.enter_context(self.portal.wrap_async_context_manager(entered(self.runners)))
            self.grader_specs = job.graders
        if self.adapter is None:
            self.adapter = self.stack.enter_context(self.portal.wrap_async_context_manager(open_adapter(self.settings)))
        return self.adapter

    async def _item(self, adapter: Adapter[Any], job: Job, prepare: Callable[[Path], None]) -> CaptureResult | None:
        with anyio.CancelScope() as self.scope:
            if self.closing:  # close came between run's check and this scope
                self.scope.cancel()
            item = WorkItem(case=job.case, trial=job.trial, prepare=prepare, graders=self.runners)
            try:
                result = await run_item(adapter, item, self.settings)
            except WazaError as exc:
                result = node_failure(job, self.host, self.node_id, exc)
            return located(result, self.node_id, self.host)
        return None  # cancelled by close


#: Slot actors in a row that may die before they start (nodes lost while starting them) before the run stops.
LOST_START_LIMIT = 20


class _Held(msgspec.Struct, eq=False):
    """The driver's handle on one slot actor."""

    actor: Any
    where: Any  # the ref of its ``where()``, asked first so it is there when the slot dies
    placed: str | None  # the node it was pinned to (Nodes.place), None when Ray chose
    node_id: str = ""
    host: str = ""
    pid: int | None = None

    def locate(self, ray: Any) -> None:
        if not self.node_id:
            with contextlib.suppress(Exception):  # a slot that died before it said where it is
                self.node_id, self.host, self.pid = ray.get(self.where, timeout=0)


class _Slots(msgspec.Struct):
    """The slot actors of one run, and the items they run."""

    ray: Any
    nodes: Nodes
    #: The actor class (``ray.remote(Slot)`` with the run's resources) and what each slot is made with.
    kind: Any
    args: tuple[AgentSpec, Timeouts, Workspace]
    held: list[_Held] = msgspec.field(default_factory=list)
    #: Slots whose actor has not said where it is yet: they get no item until it has.
    starting: list[_Held] = msgspec.field(default_factory=list)
    idle: list[_Held] = msgspec.field(default_factory=list)
    closing: list[tuple[Any, Any]] = msgspec.field(default_factory=list)  # (close ref, actor)
    #: Slot actors in a row that died before they said where they are (reset by one that starts).
    lost_starts: int = 0

    def start(self) -> _Held:
        node = self.nodes.place()
        affinity = import_module("ray.util.scheduling_strategies").NodeAffinitySchedulingStrategy
        kind = self.kind if node is None else self.kind.options(scheduling_strategy=affinity(node, soft=False))
        actor = kind.remote(*self.args)
        slot = _Held(actor, actor.where.remote(), node)
        self.held.append(slot)
        self.starting.append(slot)
        return slot

    def started(self, where: Any) -> None:
        """A starting slot's ``where`` came back: the slot is free for items; retired when its node left
        or could not take it; a ConfigError when the actor itself cannot start (it never would)."""
        slot = next(s for s in self.starting if s.where == where)
        self.starting.remove(slot)
        try:
            slot.node_id, slot.host, slot.pid = self.ray.get(where, timeout=0)
        except Exception as exc:
            self.retire(slot)
            exceptions = self.ray.exceptions
            unplaced = tuple(k for k in (getattr(exceptions, "ActorUnschedulableError", None),) if k is not None)
            if not isinstance(exc, unplaced) and loss_of(exc, exceptions) is None:
                raise ConfigError(
                    f"RayOptions.warm_agents: a slot's actor cannot start: {type(exc).__name__}: {one_line(str(exc))}"
                ) from None
            self.lost_starts += not isinstance(exc, unplaced)
            if self.lost_starts >= LOST_START_LIMIT:  # not a node coming and going: the actors die by themselves
                raise ConfigError(
                    f"RayOptions.warm_agents: {self.lost_starts} slot actors in a row died before they started, "
                    f"the last with {type(exc).__name__}: {one_line(str(exc))}"
                ) from None
            return
        self.lost_starts = 0
        self.idle.append(slot)

    def shrink(self, room: int) -> None:
        """Retire slots beyond ``room`` (the cluster lost nodes): those still starting first, then free ones."""
        for slot in [*reversed(self.starting), *self.idle]:
            if len(self.held) <= room:
                return
            self.retire(slot)

    def retire(self, slot: _Held) -> None:
        """Close the slot (its agent stopped where it still runs); its actor is killed once that is done."""
        self.held.remove(slot)
        for group in (self.idle, self.starting):
            if slot in group:
                group.remove(slot)
        self.nodes.returned(slot.placed)
        self.closing.append((slot.actor.close.options(concurrency_group=_CONTROL).remote(), slot.actor))

    def sweep(self) -> None:
        """Retire the idle slots of nodes that left or were given up; kill the actors that have closed."""
        for slot in list(self.idle):
            slot.locate(self.ray)
            if slot.node_id and (slot.node_id in self.nodes.unhealthy or slot.node_id not in self.nodes.slots):
                self.retire(slot)
        if self.closing:
            refs = [ref for ref, _ in self.closing]
            done, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
            self._kill([pair for pair in self.closing if pair[0] in done])

    def close_all(self, grace: float) -> list[Any]:
        """Close every slot; the actors that had not closed within ``grace`` seconds are killed, and returned."""
        for slot in list(self.held):
            self.retire(slot)
        refs = [ref for ref, _ in self.closing]
        closed: list[Any] = []
        with contextlib.suppress(Exception):
            closed = self.ray.wait(refs, num_returns=len(refs), timeout=grace)[0]
        forced = [actor for ref, actor in self.closing if ref not in closed]
        self._kill(list(self.closing))
        return forced

    def _kill(self, pairs: list[tuple[Any, Any]]) -> None:
        for pair in pairs:
            self.closing.remove(pair)
            with contextlib.suppress(Exception):
                self.ray.kill(pair[1], no_restart=True)


async def run_slots(
    executor: RayExecutor,
    ray: Any,
    nodes: Nodes,
    jobs: _Jobs,
    items: AsyncIterator[WorkItem],
    settings: Settings,
    sink: Sink[CaptureResult],
) -> None:
    """The executor's run with a slot actor per slot instead of a task per item (``nodes`` read and
    waited for room, ``jobs`` packing the items, as for tasks).

    An item goes only to a slot whose actor has started (said where it is): an actor that no node
    can take yet holds no item, so no item waits behind it while another slot is free.
    """
    options = executor.options
    _refuse_collected(jobs.agent, jobs.graders)
    actor_options: dict[str, Any] = {
        "num_cpus": options.task_cpus,
        "resources": dict(options.resources) or None,
        "max_restarts": 0,
        "concurrency_groups": {_CONTROL: 1},
    }
    slots = _Slots(ray, nodes, ray.remote(**actor_options)(Slot), (jobs.agent, jobs.timeouts, jobs.workspace))
    tracker = Tracker(ray, options.env)
    pending: dict[Any, tuple[_Held, WorkItem, Job, Any, Attempts, Mark]] = {}
    waiting: deque[tuple[WorkItem, Job, Any, Attempts]] = deque()  # pulled, or to run again, for the next free slot
    exhausted = False

    async def pull() -> None:
        """One more item into ``waiting`` (none once the items are exhausted)."""
        nonlocal exhausted
        found = None if exhausted else await jobs.next(items, sink)
        if found is None:
            exhausted = True
        else:
            _refuse_collected(jobs.agent, found[1].graders)  # a suite task's own graders
            waiting.append((*found, Attempts()))

    try:
        while True:
            nodes.refresh()
            slots.sweep()
            room = nodes.healthy_slots() if options.in_flight is None else min(options.in_flight, nodes.healthy_slots())
            slots.shrink(room)
            while slots.idle:
                if not waiting:
                    await pull()
                if not waiting:
                    break
                item, job, seed, attempts = waiting.popleft()
                slot = slots.idle.pop()
                mark = tracker.mark()
                pending[slot.actor.run.remote(job, seed, mark)] = (slot, item, job, seed, attempts, mark)
            while len(slots.held) < room:  # a new slot for each item no starting slot will take
                if len(waiting) <= len(slots.starting):
                    await pull()
                if len(waiting) <= len(slots.starting):
                    break
                slots.start()
            refs = [*pending, *(slot.where for slot in slots.starting)]
            if not refs:
                if exhausted and not waiting:
                    return
                await executor._wait_for_room(nodes)
                continue
            for ref in await anyio.to_thread.run_sync(executor.ready, ray, refs):
                if ref not in pending:
                    slots.started(ref)
                    continue
                slot, item, job, seed, attempts, mark = pending.pop(ref)
                if isinstance(_failure(ray, ref), ray.exceptions.RayActorError):
                    slots.retire(slot)  # the actor is gone: the slot goes with it
                else:
                    slots.idle.append(slot)
                where = (slot.node_id, nodes.hosts.get(slot.node_id) or slot.host, slot.pid)
                # If the slot's worker died: what its item made on the node is removed.
                died = functools.partial(tracker.track, mark, [slot.node_id] if slot.node_id else nodes.slots)
                outcome = executor._collect(ray, ref, item, settings, attempts, where, died)
                if outcome == "again":
                    waiting.appendleft((item, job, seed, attempts))
                elif outcome is not None:
                    nodes.saw(outcome)
                    await sink(outcome)
    finally:
        if pending:
            print(f"waza: cancelled {len(pending)} Ray tasks in flight", file=sys.stderr)
        forced = slots.close_all(executor.cancel_grace)
        killed = [mark for slot, *_, mark in pending.values() if slot.actor in forced]
        if killed:  # a slot killed after the grace left its item's workspace: removed as for a slot that died
            tracker.died(killed, nodes.slots)


def _failure(ray: Any, ref: Any) -> BaseException | None:
    """What a finished call raised (None: it returned); ``_collect`` reads it again for the record."""
    try:
        ray.get(ref, timeout=0)
    except Exception as exc:
        return exc
    return None


def _refuse_collected(agent: AgentSpec, graders: tuple[GraderSpecT, ...]) -> None:
    """A ConfigError for what a warm slot cannot bring back to the driver yet: the agent's raw log (one
    adapter writes it for all of a slot's items) and a human grader's review queue.

    A Ray task brings both back with its record (``ray_collect``); a slot keeps its agent and graders
    across items, so their files are not one item's. Refused rather than left on the nodes unsaid.
    """
    if getattr(agent, "raw_log", None) is not None or any(_is_reviewer(g) for g in graders):
        raise ConfigError(
            "RayOptions.warm_agents does not bring raw logs or review queues back from the nodes yet: "
            "run without it, or without the agent's raw log and human graders"
        )
