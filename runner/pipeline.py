"""The async core: prompts in, agents run, graders applied, results out.

A producer feeds work items into a bounded stream; ``concurrency`` workers each
own one adapter (one agent process, for adapters that keep one), run an item,
grade it while its workspace still exists, and hand the result to the single
writer, which writes and flushes one line per result as it finishes. The
bounded streams keep memory flat whatever the input size, and every task lives
in one task group, so an interrupt or an error cancels them all and no process
outlives the run.
"""

from __future__ import annotations

import contextlib
import math
import re
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import structlog

from waza.adapters.base import Adapter, AdapterOptions, AgentRun, AgentTask
from waza.protocol.errors import ConfigError
from waza.protocol.grading import request_for, settle
from waza.protocol.records import CaptureResult, Exit, Grade, PromptCase, Timing
from waza.protocol.trajectory import TrajectoryBuilder

from .fanout import fan_out
from .grader_runners import GraderRunner

log = structlog.get_logger("waza")

#: Extra seconds an adapter gets past the prompt timeout to stop its agent before the runner gives up on it.
ADAPTER_GRACE = 15.0
WORKSPACE_MARK = ".waza-workspace"


@dataclass(slots=True)
class WorkItem:
    """One run of one prompt: the case, its trial number, and how to fill its workspace."""

    case: PromptCase
    trial: int | None = None
    prepare: Callable[[Path], None] | None = None
    hint_override: str | None = None
    #: This item's own graders (a suite task's); None means ``settings.graders``.
    graders: list[GraderRunner] | None = None


@dataclass(slots=True)
class Workspaces:
    """Where each item runs.

    With ``root``: a fresh ``root/<id>[-tN]`` per item. With ``fresh`` and no
    root: a fresh temporary directory per item, removed after grading unless
    ``keep``. Otherwise every item shares ``cwd``.
    """

    cwd: Path = field(default_factory=Path.cwd)
    root: Path | None = None
    fresh: bool = False
    keep: bool = False

    def create(self, item: WorkItem) -> tuple[Path, bool]:
        """(directory, whether to remove it after grading)."""
        if self.root is not None:
            name = _safe_name(item.case.id) + (f"-t{item.trial}" if item.trial is not None else "")
            path = (self.root / name).resolve()
            if path.exists():
                if not (path / WORKSPACE_MARK).exists():
                    raise FileExistsError(f"workspace {path} exists and was not made by waza; refusing to reuse it")
                shutil.rmtree(path)
            path.mkdir(parents=True)
            (path / WORKSPACE_MARK).write_text("made by waza; removed and recreated on the next run\n")
            return path, False
        if self.fresh:
            path = Path(tempfile.mkdtemp(prefix=f"waza-{_safe_name(item.case.id)[:40]}-")).resolve()
            return path, not self.keep
        return self.cwd.resolve(), False


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "prompt"


@dataclass
class Settings:
    adapter: type[Adapter]
    command: list[str]
    opts: AdapterOptions
    graders: list[GraderRunner]
    concurrency: int = 1
    timeout: float | None = None
    workspaces: Workspaces = field(default_factory=Workspaces)


Sink = Callable[[CaptureResult], Awaitable[None]]


async def grade_result(result: CaptureResult, graders: list[GraderRunner]) -> CaptureResult:
    """Run every grader on one result (concurrently) and settle its verdict."""
    if not graders:
        return settle(result, [])
    if len(graders) == 1:
        # Built with the grader's own config, so the runner need not copy it (the hot path of `grade`).
        return settle(result, [await graders[0].grade(request_for(result, graders[0].spec.config))])
    base = request_for(result, {})
    grades: list[Grade | None] = [None] * len(graders)

    async def one(i: int, g: GraderRunner) -> None:
        grades[i] = await g.grade(base)

    async with anyio.create_task_group() as tg:
        for i, g in enumerate(graders):
            tg.start_soon(one, i, g)
    return settle(result, [g for g in grades if g is not None])


async def capture_one(adapter: Adapter, item: WorkItem, workspace: Path, settings: Settings) -> CaptureResult:
    """Run one item through the adapter and build its (ungraded) result; never raises for agent faults."""
    case = item.case
    timeout = case.timeout if case.timeout is not None else settings.timeout
    recorder = TrajectoryBuilder()
    start_epoch = time.time()
    task = AgentTask(case=case, workspace=workspace, recorder=recorder, timeout=timeout, trial=item.trial)
    limit = math.inf if timeout is None else timeout + ADAPTER_GRACE
    run: AgentRun | None = None
    crash: str | None = None
    with anyio.move_on_after(limit) as scope:
        try:
            run = await adapter.run(task)
        except ConfigError:
            raise  # the agent cannot work at all (e.g. not an ACP agent): the run stops and says why
        except Exception as exc:  # noqa: BLE001 - an adapter bug must not end the run
            log.exception("adapter failed", id=case.id)
            crash = f"adapter {adapter.name} failed: {type(exc).__name__}: {exc}"
    if run is None:
        run = AgentRun(exit=Exit(timed_out=scope.cancelled_caught))
        run.errors.append(crash or f"adapter {adapter.name} did not stop within {ADAPTER_GRACE:g}s of the timeout")
    end_epoch = time.time()
    reduced = recorder.finish()
    usage = reduced.usage
    return CaptureResult(
        id=case.id,
        input=case.input,
        output=reduced.output,
        hint=item.hint_override if item.hint_override is not None else case.hint,
        reference=case.reference,
        trajectory=reduced.steps,
        metadata=case.metadata,
        timing=Timing(
            start=int(start_epoch * 1000),
            end=int(end_epoch * 1000),
            total=int((end_epoch - start_epoch) * 1000),
            first_response=reduced.first_response,
            session_creation=run.session_creation_ms,
            input_tokens=usage.input_tokens if usage else None,
            output_tokens=usage.output_tokens if usage else None,
        ),
        usage=usage,
        exit=run.exit,
        tool_errors=reduced.tool_errors,
        errors=run.errors,
        trial=item.trial,
        adapter=adapter.name,
        cwd=str(workspace),
        stderr=run.stderr,
        unknown=dict(case.unknown),
    )


async def run_items(items: AsyncIterator[WorkItem], settings: Settings, sink: Sink) -> None:
    """Capture and grade every item with ``settings.concurrency`` workers, each owning one adapter
    (one agent); results go to ``sink`` in the order they finish."""

    @contextlib.asynccontextmanager
    async def worker() -> AsyncIterator[Callable[[WorkItem], Awaitable[CaptureResult]]]:
        async with settings.adapter(settings.command, settings.opts) as adapter:
            yield lambda item: _run_item(adapter, item, settings)

    await fan_out(items, worker, settings.concurrency, sink)


async def _run_item(adapter: Adapter, item: WorkItem, settings: Settings) -> CaptureResult:
    try:
        workspace, remove = settings.workspaces.create(item)
        if item.prepare is not None:
            item.prepare(workspace)
    except Exception as exc:  # noqa: BLE001 - a workspace problem is this item's error, not the run's end
        result = CaptureResult(
            id=item.case.id,
            input=item.case.input,
            output="",
            hint=item.case.hint,
            reference=item.case.reference,
            metadata=item.case.metadata,
            errors=[f"cannot prepare workspace: {exc}"],
            trial=item.trial,
            adapter=adapter.name,
        )
        return settle(result, [])
    try:
        result = await capture_one(adapter, item, workspace, settings)
        return await grade_result(result, settings.graders if item.graders is None else item.graders)
    finally:
        if remove:
            shutil.rmtree(workspace, ignore_errors=True)
